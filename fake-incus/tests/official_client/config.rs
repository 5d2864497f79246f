//! Writable configuration through the official client: profiles, projects and custom storage
//! volumes, and their effect on instances (`incus config show --expanded`).

use crate::cli::{csv_rows, setup, NO_CLIENT};
use crate::ignorable::trial;
use libtest_mimic::{Completion, Trial};

pub(crate) fn trials() -> Vec<Trial> {
    vec![
        trial(
            "official_client_creates_edits_renames_and_deletes_profiles",
            official_client_creates_edits_renames_and_deletes_profiles,
        ),
        trial(
            "official_client_creates_switches_and_deletes_projects",
            official_client_creates_switches_and_deletes_projects,
        ),
        trial(
            "official_client_creates_attaches_and_deletes_custom_volumes",
            official_client_creates_attaches_and_deletes_custom_volumes,
        ),
    ]
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

async fn official_client_creates_edits_renames_and_deletes_profiles() -> Completion {
    let fake = crate::cli::fake_builder().start().await.unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    cli.ok(&["profile", "create", "p1"]).await;
    cli.ok(&["profile", "set", "p1", "limits.cpu=2"]).await;
    assert_eq!(
        cli.ok(&["profile", "get", "p1", "limits.cpu"]).await.trim(),
        "2"
    );
    let yaml = b"config:\n  limits.memory: 1GB\ndescription: edited\ndevices:\n  eth0:\n    nictype: p2p\n    type: nic\n";
    let out = cli.run_with(&["profile", "edit", "p1"], Some(yaml)).await;
    assert!(out.status.success(), "{}", stderr(&out));
    let shown = cli.ok(&["profile", "show", "p1"]).await;
    assert!(
        shown.contains("limits.memory: 1GB") && !shown.contains("limits.cpu"),
        "{shown}"
    );
    assert!(shown.contains("description: edited"), "{shown}");

    cli.ok(&["init", "busybox", "c1"]).await;
    cli.ok(&["profile", "add", "c1", "p1"]).await;
    let expanded = cli.ok(&["config", "show", "c1", "--expanded"]).await;
    assert!(expanded.contains("limits.memory: 1GB"), "{expanded}");
    assert!(expanded.contains("nictype: p2p"), "{expanded}");
    cli.ok(&["profile", "set", "p1", "user.greeting=hello"])
        .await;
    let expanded = cli.ok(&["config", "show", "c1", "--expanded"]).await;
    assert!(
        expanded.contains("user.greeting: hello"),
        "the change shows at once: {expanded}"
    );

    let refused = cli.run(&["profile", "delete", "p1"]).await;
    assert!(!refused.status.success());
    assert!(
        stderr(&refused).contains("Profile is currently in use"),
        "{}",
        stderr(&refused)
    );
    cli.ok(&["profile", "rename", "p1", "p2"]).await;
    let shown = cli.ok(&["config", "show", "c1"]).await;
    assert!(
        shown.contains("- p2"),
        "the instance follows the rename: {shown}"
    );
    cli.ok(&["profile", "remove", "c1", "p2"]).await;
    let expanded = cli.ok(&["config", "show", "c1", "--expanded"]).await;
    assert!(!expanded.contains("user.greeting"), "{expanded}");
    cli.ok(&["profile", "delete", "p2"]).await;
    let refused = cli.run(&["profile", "delete", "default"]).await;
    assert!(
        stderr(&refused).contains("The \"default\" profile cannot be deleted"),
        "{}",
        stderr(&refused)
    );
    let refused = cli.run(&["profile", "set", "default", "nope=1"]).await;
    assert!(
        stderr(&refused).contains("Unknown configuration key: nope"),
        "{}",
        stderr(&refused)
    );
    assert_eq!(
        csv_rows(&cli.ok(&["profile", "list", "-f", "csv", "-c", "n"]).await),
        [["default"]]
    );
    Completion::Completed
}

async fn official_client_creates_switches_and_deletes_projects() -> Completion {
    let fake = crate::cli::fake_builder().start().await.unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    cli.ok(&["project", "create", "pr1"]).await;
    cli.ok(&["project", "set", "pr1", "user.owner=tests"]).await;
    assert_eq!(
        cli.ok(&["project", "get", "pr1", "user.owner"])
            .await
            .trim(),
        "tests"
    );
    let shown = cli.ok(&["project", "show", "pr1"]).await;
    assert!(shown.contains("features.profiles: \"true\""), "{shown}");
    assert!(!shown.contains("features.networks"), "{shown}");
    cli.ok(&["project", "switch", "pr1"]).await;
    let profiles = cli.ok(&["profile", "list", "-f", "csv", "-c", "nd"]).await;
    assert_eq!(
        csv_rows(&profiles),
        [["default", "Default Incus profile for project pr1"]]
    );
    cli.ok(&["profile", "create", "inside"]).await;
    cli.ok(&["project", "switch", "default"]).await;
    let refused = cli.run(&["project", "delete", "pr1"]).await;
    assert!(
        stderr(&refused).contains("Only empty projects can be removed."),
        "{}",
        stderr(&refused)
    );
    cli.ok(&["profile", "delete", "inside", "--project", "pr1"])
        .await;
    cli.ok(&["project", "delete", "pr1"]).await;
    let refused = cli.run(&["project", "delete", "default"]).await;
    assert!(
        stderr(&refused).contains("The 'default' project cannot be deleted"),
        "{}",
        stderr(&refused)
    );

    cli.ok(&["project", "create", "pr2", "-c", "features.profiles=false"])
        .await;
    let profiles = cli
        .ok(&[
            "profile",
            "list",
            "--project",
            "pr2",
            "-f",
            "csv",
            "-c",
            "nd",
        ])
        .await;
    assert_eq!(
        csv_rows(&profiles),
        [["default", "Default Incus profile"]],
        "a project without features.profiles sees default's"
    );
    cli.ok(&["project", "delete", "pr2"]).await;
    assert_eq!(
        csv_rows(&cli.ok(&["project", "list", "-f", "csv", "-c", "n"]).await),
        [["default (current)"]]
    );
    Completion::Completed
}

async fn official_client_creates_attaches_and_deletes_custom_volumes() -> Completion {
    let fake = crate::cli::fake_builder().start().await.unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    cli.ok(&["storage", "volume", "create", "default", "vol"])
        .await;
    cli.ok(&["storage", "volume", "set", "default", "vol", "size=20MiB"])
        .await;
    let shown = cli
        .ok(&["storage", "volume", "show", "default", "vol"])
        .await;
    assert!(shown.contains("size: 20MiB"), "{shown}");
    let refused = cli
        .run(&["storage", "volume", "set", "default", "vol", "nope=1"])
        .await;
    assert!(
        stderr(&refused).contains("Invalid option for volume \"default_vol\" option \"nope\""),
        "{}",
        stderr(&refused)
    );

    cli.ok(&["init", "busybox", "c1"]).await;
    cli.ok(&[
        "storage", "volume", "attach", "default", "vol", "c1", "/mnt",
    ])
    .await;
    let shown = cli.ok(&["config", "show", "c1"]).await;
    assert!(
        shown.contains("source: vol") && shown.contains("path: /mnt"),
        "{shown}"
    );
    let shown = cli
        .ok(&["storage", "volume", "show", "default", "vol"])
        .await;
    assert!(shown.contains("- /1.0/instances/c1"), "{shown}");
    let refused = cli
        .run(&["storage", "volume", "delete", "default", "vol"])
        .await;
    assert!(
        stderr(&refused).contains("The storage volume is still in use"),
        "{}",
        stderr(&refused)
    );
    let missing = cli
        .run(&[
            "config",
            "device",
            "add",
            "c1",
            "w",
            "disk",
            "pool=default",
            "source=nosuchvol",
            "path=/srv",
        ])
        .await;
    assert!(
        stderr(&missing).contains(
            "Failed add validation for device \"w\": Failed loading custom volume: Storage volume not found"
        ),
        "{}",
        stderr(&missing)
    );
    cli.ok(&["storage", "volume", "create", "default", "vol2"])
        .await;
    cli.ok(&[
        "config",
        "device",
        "add",
        "c1",
        "v2",
        "disk",
        "pool=default",
        "source=vol2",
        "path=/srv",
    ])
    .await;
    let volumes = cli
        .ok(&[
            "storage", "volume", "list", "default", "-f", "csv", "-c", "tnu",
        ])
        .await;
    assert!(
        volumes.contains("custom,vol,1") && volumes.contains("custom,vol2,1"),
        "{volumes}"
    );
    cli.ok(&["storage", "volume", "detach", "default", "vol", "c1"])
        .await;
    cli.ok(&["config", "device", "remove", "c1", "v2"]).await;
    cli.ok(&["storage", "volume", "delete", "default", "vol"])
        .await;
    cli.ok(&["storage", "volume", "delete", "default", "vol2"])
        .await;
    let volumes = cli
        .ok(&[
            "storage", "volume", "list", "default", "-f", "csv", "-c", "tn",
        ])
        .await;
    assert!(!volumes.contains("custom"), "{volumes}");
    Completion::Completed
}
