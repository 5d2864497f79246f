//! Issue 23's everyday commands with the official client: filtered lists, snapshot rename, moves
//! between projects, publish, image edit and export, instance export and import, logs, metadata,
//! rebuild, and custom volume snapshots and copies.

use crate::cli::{csv_rows, setup, NO_CLIENT};
use crate::ignorable::trial;
use libtest_mimic::{Completion, Trial};

pub(crate) fn trials() -> Vec<Trial> {
    vec![
        trial(
            "official_client_filters_lists_renames_snapshots_and_moves_between_projects",
            official_client_filters_lists_renames_snapshots_and_moves_between_projects,
        ),
        trial(
            "official_client_publishes_exports_imports_and_rebuilds_with_the_files",
            official_client_publishes_exports_imports_and_rebuilds_with_the_files,
        ),
        trial(
            "official_client_snapshots_restores_and_copies_custom_volumes",
            official_client_snapshots_restores_and_copies_custom_volumes,
        ),
    ]
}

async fn official_client_filters_lists_renames_snapshots_and_moves_between_projects() -> Completion
{
    let fake = crate::cli::fake_builder().start().await.unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    cli.ok(&["launch", "busybox", "c1"]).await;
    cli.ok(&["init", "busybox", "c2"]).await;
    let running = cli
        .ok(&["list", "status=running", "-f", "csv", "-c", "n"])
        .await;
    assert_eq!(csv_rows(&running), [["c1"]]);
    let stopped = cli
        .ok(&["list", "status=STOPPED", "-f", "csv", "-c", "n"])
        .await;
    assert_eq!(csv_rows(&stopped), [["c2"]]);

    cli.ok(&["snapshot", "create", "c2", "s1"]).await;
    cli.ok(&["snapshot", "rename", "c2", "s1", "s2"]).await;
    let snaps = cli
        .ok(&["snapshot", "list", "c2", "-f", "csv", "-c", "n"])
        .await;
    assert_eq!(csv_rows(&snaps), [["s2"]]);
    cli.ok(&["copy", "c2/s2", "c3"]).await;

    cli.ok(&["project", "create", "p2", "-c", "features.profiles=false"])
        .await;
    cli.ok(&["move", "c2", "--target-project", "p2"]).await;
    let there = cli
        .ok(&["list", "--project", "p2", "-f", "csv", "-c", "n"])
        .await;
    assert_eq!(csv_rows(&there), [["c2"]]);
    let here = cli.ok(&["list", "-f", "csv", "-c", "n"]).await;
    assert_eq!(csv_rows(&here), [["c1"], ["c3"]]);
    Completion::Completed
}

async fn official_client_publishes_exports_imports_and_rebuilds_with_the_files() -> Completion {
    let fake = crate::cli::fake_builder().start().await.unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("note");
    std::fs::write(&source, b"published\n").unwrap();
    cli.ok(&["init", "busybox", "c1"]).await;
    cli.ok(&["file", "push", &source.to_string_lossy(), "c1/root/note"])
        .await;

    cli.ok(&["publish", "c1", "--alias", "pub"]).await;
    cli.ok(&["image", "set-property", "pub", "os", "published"])
        .await;
    let shown = cli.ok(&["image", "show", "pub"]).await;
    assert!(shown.contains("os: published"), "{shown}");
    let exported = dir.path().join("image");
    cli.ok(&["image", "export", "pub", &exported.to_string_lossy()])
        .await;
    let written: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("image"))
        .collect();
    assert_eq!(written.len(), 1, "{written:?}");

    let backup = dir.path().join("c1.tar.gz");
    cli.ok(&["export", "c1", &backup.to_string_lossy()]).await;
    cli.ok(&["import", &backup.to_string_lossy(), "c2"]).await;
    let pulled = cli.ok(&["file", "pull", "c2/root/note", "-"]).await;
    assert_eq!(pulled, "published\n");

    cli.ok(&["launch", "pub", "c3"]).await;
    let out = cli.ok(&["exec", "c3", "--", "cat", "/root/note"]).await;
    assert_eq!(out, "published\n");

    cli.ok(&["info", "c3", "--show-log"]).await;
    cli.ok(&["console", "c3", "--show-log"]).await;
    let metadata = cli.ok(&["config", "metadata", "show", "c1"]).await;
    assert!(metadata.contains("architecture: x86_64"), "{metadata}");

    cli.ok(&["rebuild", "busybox", "c1"]).await;
    let gone = cli.run(&["file", "pull", "c1/root/note", "-"]).await;
    assert!(
        !gone.status.success(),
        "a rebuild starts from the image's files"
    );
    Completion::Completed
}

async fn official_client_snapshots_restores_and_copies_custom_volumes() -> Completion {
    let fake = crate::cli::fake_builder().start().await.unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    cli.ok(&[
        "storage",
        "volume",
        "create",
        "default",
        "v1",
        "user.k=first",
    ])
    .await;
    cli.ok(&[
        "storage", "volume", "snapshot", "create", "default", "v1", "s1",
    ])
    .await;
    cli.ok(&["storage", "volume", "set", "default", "v1", "user.k=second"])
        .await;
    let listed = cli
        .ok(&[
            "storage", "volume", "snapshot", "list", "default", "v1", "-f", "csv",
        ])
        .await;
    assert!(listed.starts_with("s1,"), "{listed}");
    let missing = cli
        .run(&[
            "storage", "volume", "snapshot", "restore", "default", "v1", "nope",
        ])
        .await;
    assert!(!missing.status.success());
    cli.ok(&[
        "storage", "volume", "snapshot", "restore", "default", "v1", "s1",
    ])
    .await;
    let value = cli
        .ok(&["storage", "volume", "get", "default", "v1", "user.k"])
        .await;
    assert_eq!(value.trim(), "first");
    cli.ok(&["storage", "volume", "copy", "default/v1", "default/v2"])
        .await;
    let copied = cli
        .ok(&[
            "storage", "volume", "snapshot", "list", "default", "v2", "-f", "csv",
        ])
        .await;
    assert!(copied.starts_with("s1,"), "{copied}");
    cli.ok(&[
        "storage", "volume", "snapshot", "rename", "default", "v1", "s1", "s2",
    ])
    .await;
    cli.ok(&[
        "storage", "volume", "snapshot", "delete", "default", "v1", "s2",
    ])
    .await;
    Completion::Completed
}
