//! Removing what acceptance runs created. The planner is pure (tested without a daemon); the executor
//! lists a project's contents through the admin client, runs the plan, and checks that nothing is left.
use serde::{Deserialize, Serialize};

use crate::admin::{enc, Admin, AdminError};

/// The prefix of every project an acceptance run creates.
pub const PROJECT_PREFIX: &str = "ioacc-";

/// True for names this runner creates: the prefix followed by 8 to 32 lowercase letters or digits.
/// Projects that merely start with the prefix but do not fit the pattern are never touched.
pub fn is_acceptance_project(name: &str) -> bool {
    name.strip_prefix(PROJECT_PREFIX).is_some_and(|rest| {
        (8..=32).contains(&rest.len())
            && rest
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    })
}

/// What a project still holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectContents {
    /// The project.
    pub project: String,
    /// Instances and whether each is running (or frozen: anything but stopped).
    pub instances: Vec<(String, bool)>,
    /// Image fingerprints.
    pub images: Vec<String>,
    /// Profiles other than `default`.
    pub profiles: Vec<String>,
    /// Custom storage volumes.
    #[serde(default)]
    pub volumes: Vec<CustomVolume>,
}

/// A custom storage volume of a project.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CustomVolume {
    /// The storage pool.
    pub pool: String,
    /// The volume.
    pub name: String,
    /// On a cluster, the member that holds it (its `location`); empty otherwise.
    #[serde(default)]
    pub member: String,
}

/// One cleanup action, in the order it must run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum CleanupStep {
    /// Stop an instance at once.
    StopInstance {
        /// Project.
        project: String,
        /// Instance.
        name: String,
    },
    /// Delete an instance (its snapshots go with it).
    DeleteInstance {
        /// Project.
        project: String,
        /// Instance.
        name: String,
    },
    /// Delete a custom storage volume (after the instances it may be attached to).
    DeleteVolume {
        /// Project.
        project: String,
        /// The volume.
        volume: CustomVolume,
    },
    /// Delete an image.
    DeleteImage {
        /// Project.
        project: String,
        /// Fingerprint.
        fingerprint: String,
    },
    /// Delete a profile.
    DeleteProfile {
        /// Project.
        project: String,
        /// Profile.
        name: String,
    },
    /// Delete the (then empty) project.
    DeleteProject {
        /// Project.
        project: String,
    },
}

impl std::fmt::Display for CleanupStep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CleanupStep::StopInstance { project, name } => {
                write!(f, "stop instance {project}/{name}")
            }
            CleanupStep::DeleteInstance { project, name } => {
                write!(f, "delete instance {project}/{name}")
            }
            CleanupStep::DeleteVolume { project, volume } => {
                write!(
                    f,
                    "delete storage volume {project}/{}/{}",
                    volume.pool, volume.name
                )
            }
            CleanupStep::DeleteImage {
                project,
                fingerprint,
            } => write!(f, "delete image {project}/{fingerprint}"),
            CleanupStep::DeleteProfile { project, name } => {
                write!(f, "delete profile {project}/{name}")
            }
            CleanupStep::DeleteProject { project } => write!(f, "delete project {project}"),
        }
    }
}

/// Plans the removal of the given projects' contents and then the projects. Projects whose names were
/// not made by this runner are left out: the plan never touches anything else.
pub fn plan_cleanup(projects: &[ProjectContents]) -> Vec<CleanupStep> {
    let mut steps = Vec::new();
    for contents in projects
        .iter()
        .filter(|c| is_acceptance_project(&c.project))
    {
        let project = contents.project.clone();
        steps.extend(plan_instances(&project, contents));
        for volume in &contents.volumes {
            steps.push(CleanupStep::DeleteVolume {
                project: project.clone(),
                volume: volume.clone(),
            });
        }
        for fingerprint in &contents.images {
            steps.push(CleanupStep::DeleteImage {
                project: project.clone(),
                fingerprint: fingerprint.clone(),
            });
        }
        for name in contents.profiles.iter().filter(|p| p.as_str() != "default") {
            steps.push(CleanupStep::DeleteProfile {
                project: project.clone(),
                name: name.clone(),
            });
        }
        steps.push(CleanupStep::DeleteProject { project });
    }
    steps
}

fn plan_instances(project: &str, contents: &ProjectContents) -> Vec<CleanupStep> {
    let mut steps = Vec::new();
    for (name, running) in &contents.instances {
        if *running {
            steps.push(CleanupStep::StopInstance {
                project: project.to_owned(),
                name: name.clone(),
            });
        }
        steps.push(CleanupStep::DeleteInstance {
            project: project.to_owned(),
            name: name.clone(),
        });
    }
    steps
}

/// What a cleanup did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CleanupOutcome {
    /// Steps that succeeded (or found the thing already gone).
    pub done: Vec<String>,
    /// Steps that failed, with the reason.
    pub failed: Vec<String>,
    /// Acceptance projects that still exist afterwards (with what they hold).
    pub leftovers: Vec<String>,
}

impl CleanupOutcome {
    /// True when nothing failed and nothing is left.
    pub fn clean(&self) -> bool {
        self.failed.is_empty() && self.leftovers.is_empty()
    }
}

/// How many list-plan-execute passes a cleanup makes before it reports what is left.
const PASSES: usize = 3;

/// Removes the given projects (only acceptance projects) with everything in them, then checks.
pub(crate) async fn remove_projects(admin: &Admin, projects: &[String]) -> CleanupOutcome {
    let mut outcome = CleanupOutcome::default();
    let wanted: Vec<&String> = projects
        .iter()
        .filter(|p| is_acceptance_project(p))
        .collect();
    for pass in 0..PASSES {
        let existing = match admin.project_names().await {
            Ok(names) => names,
            Err(e) => {
                outcome.failed.push(format!("list projects: {e}"));
                return outcome;
            }
        };
        let present: Vec<&String> = wanted
            .iter()
            .copied()
            .filter(|p| existing.contains(p))
            .collect();
        if present.is_empty() {
            break;
        }
        let mut contents = Vec::new();
        for project in present {
            settle_operations(admin, project).await;
            match project_contents(admin, project).await {
                Ok(c) => contents.push(c),
                Err(e) => outcome
                    .failed
                    .push(format!("list contents of {project}: {e}")),
            }
        }
        let last_pass = pass + 1 == PASSES;
        for step in plan_cleanup(&contents) {
            match execute(admin, &step).await {
                Ok(()) => outcome.done.push(step.to_string()),
                Err(e) if last_pass => outcome.failed.push(format!("{step}: {e}")),
                Err(e) => tracing::debug!("{step}: {e} (will retry)"),
            }
        }
    }
    outcome.leftovers = leftovers(admin, &wanted).await;
    outcome
}

/// Stops and deletes every instance of a project (between portable scenarios).
pub(crate) async fn clear_instances(admin: &Admin, project: &str) -> Result<(), String> {
    settle_operations(admin, project).await;
    let only_instances = ProjectContents {
        instances: instances(admin, project).await.map_err(|e| e.to_string())?,
        ..ProjectContents::default()
    };
    for step in plan_instances(project, &only_instances) {
        execute(admin, &step)
            .await
            .map_err(|e| format!("{step}: {e}"))?;
    }
    Ok(())
}

/// Finds every acceptance project on the daemon (for `--cleanup-only` and the final leftovers check).
pub(crate) async fn acceptance_projects(admin: &Admin) -> Result<Vec<String>, AdminError> {
    Ok(admin
        .project_names()
        .await?
        .into_iter()
        .filter(|p| is_acceptance_project(p))
        .collect())
}

async fn leftovers(admin: &Admin, wanted: &[&String]) -> Vec<String> {
    let existing = match admin.project_names().await {
        Ok(names) => names,
        Err(e) => return vec![format!("cannot list projects to check: {e}")],
    };
    let mut left = Vec::new();
    for project in wanted.iter().filter(|p| existing.contains(p)) {
        let what = match project_contents(admin, project).await {
            Ok(c) => format!(
                "project {project} (instances {:?}, images {:?}, profiles {:?}, volumes {:?})",
                c.instances.iter().map(|(n, _)| n).collect::<Vec<_>>(),
                c.images,
                c.profiles,
                c.volumes
                    .iter()
                    .map(|v| format!("{}/{}", v.pool, v.name))
                    .collect::<Vec<_>>()
            ),
            Err(e) => format!("project {project} (contents unreadable: {e})"),
        };
        left.push(what);
    }
    left
}

/// Waits (bounded) for operations still running in the project, e.g. a create cut short by Ctrl-C.
async fn settle_operations(admin: &Admin, project: &str) {
    if let Ok(ids) = admin.running_operations(project).await {
        for id in ids {
            admin.wait_quietly(&id, 30).await;
        }
    }
}

/// The instances of a project and whether each is running (anything but stopped).
async fn instances(admin: &Admin, project: &str) -> Result<Vec<(String, bool)>, AdminError> {
    Ok(admin
        .list_objects(project, "/1.0/instances")
        .await?
        .into_iter()
        .filter_map(|i| {
            let name = i["name"].as_str()?.to_owned();
            let stopped = i["status"].as_str() == Some("Stopped");
            Some((name, !stopped))
        })
        .collect())
}

async fn project_contents(admin: &Admin, project: &str) -> Result<ProjectContents, AdminError> {
    Ok(ProjectContents {
        project: project.to_owned(),
        instances: instances(admin, project).await?,
        images: admin.list(project, "/1.0/images").await?,
        profiles: admin.list(project, "/1.0/profiles").await?,
        volumes: admin
            .custom_volumes(project)
            .await?
            .into_iter()
            .map(|(pool, name, member)| CustomVolume { pool, name, member })
            .collect(),
    })
}

async fn execute(admin: &Admin, step: &CleanupStep) -> Result<(), AdminError> {
    let result = match step {
        CleanupStep::StopInstance { project, name } => admin.force_stop(project, name).await,
        CleanupStep::DeleteInstance { project, name } => {
            admin
                .delete(&format!("/1.0/instances/{}", enc(name)), project)
                .await
        }
        CleanupStep::DeleteVolume { project, volume } => {
            admin
                .delete_volume(project, &volume.pool, &volume.name, Some(&volume.member))
                .await
        }
        CleanupStep::DeleteImage {
            project,
            fingerprint,
        } => {
            admin
                .delete(&format!("/1.0/images/{}", enc(fingerprint)), project)
                .await
        }
        CleanupStep::DeleteProfile { project, name } => {
            admin
                .delete(&format!("/1.0/profiles/{}", enc(name)), project)
                .await
        }
        CleanupStep::DeleteProject { project } => admin.delete_project(project).await,
    };
    match result {
        Err(e) if e.native_status() == Some(404) => Ok(()),
        other => other,
    }
}
