//! The cleanup planner: what is removed, in which order, and what is never touched.
use real_incus::cleanup::{
    is_acceptance_project, plan_cleanup, CleanupStep, CustomVolume, ProjectContents,
};

fn contents(project: &str) -> ProjectContents {
    ProjectContents {
        project: project.to_owned(),
        instances: vec![("c1".into(), true), ("c2".into(), false)],
        images: vec!["ab".repeat(32)],
        profiles: vec!["default".into(), "extra".into()],
        volumes: vec![volume()],
    }
}

fn volume() -> CustomVolume {
    CustomVolume {
        pool: "default".into(),
        name: "vol1".into(),
        member: String::new(),
    }
}

#[test]
fn cleanup_stops_running_instances_before_deleting_and_deletes_the_project_last() {
    // Volumes go after the instances they may be attached to.
    let project = "ioacc-0123456789";
    let steps = plan_cleanup(&[contents(project)]);
    let p = project.to_owned();
    assert_eq!(
        steps,
        vec![
            CleanupStep::StopInstance {
                project: p.clone(),
                name: "c1".into()
            },
            CleanupStep::DeleteInstance {
                project: p.clone(),
                name: "c1".into()
            },
            CleanupStep::DeleteInstance {
                project: p.clone(),
                name: "c2".into()
            },
            CleanupStep::DeleteVolume {
                project: p.clone(),
                volume: volume()
            },
            CleanupStep::DeleteImage {
                project: p.clone(),
                fingerprint: "ab".repeat(32)
            },
            CleanupStep::DeleteProfile {
                project: p.clone(),
                name: "extra".into()
            },
            CleanupStep::DeleteProject { project: p },
        ]
    );
}

#[test]
fn cleanup_never_touches_projects_it_did_not_create() {
    for other in [
        "default",
        "ioacc-",
        "ioacc-short",
        "ioacc-UPPERCASE12",
        "ioacc-has-dash12",
        "prod-ioacc-0123456789",
    ] {
        assert!(!is_acceptance_project(other), "{other}");
        assert!(plan_cleanup(&[contents(other)]).is_empty(), "{other}");
    }
}

#[test]
fn cleanup_keeps_the_default_profile_which_goes_with_the_project() {
    let steps = plan_cleanup(&[contents("ioacc-abcdefghij")]);
    assert!(!steps
        .iter()
        .any(|s| matches!(s, CleanupStep::DeleteProfile { name, .. } if name == "default")));
}

#[test]
fn cleanup_of_several_leftover_projects_handles_each() {
    let steps = plan_cleanup(&[
        contents("ioacc-aaaaaaaaaa"),
        ProjectContents {
            project: "ioacc-bbbbbbbbbb".into(),
            ..Default::default()
        },
    ]);
    let deleted: Vec<_> = steps
        .iter()
        .filter_map(|s| match s {
            CleanupStep::DeleteProject { project } => Some(project.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(deleted, ["ioacc-aaaaaaaaaa", "ioacc-bbbbbbbbbb"]);
}
