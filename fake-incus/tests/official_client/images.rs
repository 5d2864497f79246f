//! Image import and aliases, instance files (over SFTP, as `incus file` does), rename and copy,
//! with the official client's own commands.

use crate::cli::{csv_rows, setup, NO_CLIENT};
use crate::ignorable::trial;
use crate::tarball::tarball;
use fake_incus::FakeIncus;
use libtest_mimic::{Completion, Trial};
use sha2::{Digest, Sha256};
use std::path::Path;

pub(crate) fn trials() -> Vec<Trial> {
    vec![
        trial(
            "official_client_imports_split_and_unified_images_and_launches_from_them",
            official_client_imports_split_and_unified_images_and_launches_from_them,
        ),
        trial(
            "official_client_pushes_pulls_and_deletes_files_also_recursively",
            official_client_pushes_pulls_and_deletes_files_also_recursively,
        ),
        trial(
            "official_client_renames_moves_and_copies_instances_with_their_snapshots",
            official_client_renames_moves_and_copies_instances_with_their_snapshots,
        ),
    ]
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.to_string_lossy().into_owned()
}

async fn official_client_imports_split_and_unified_images_and_launches_from_them() -> Completion {
    let fake = crate::cli::fake_builder().start().await.unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    let dir = tempfile::tempdir().unwrap();
    let meta = tarball(&[(
        "metadata.yaml",
        b"architecture: x86_64\ncreation_date: 1700000000\nproperties:\n  os: splitos\n  description: split image\n",
    )]);
    let rootfs = tarball(&[("bin/", b""), ("bin/sh", b"x"), ("bin/ls", b"x")]);
    let unified = tarball(&[
        (
            "metadata.yaml",
            b"architecture: x86_64\ncreation_date: 1700000000\nproperties:\n  os: unios\n",
        ),
        ("rootfs/", b""),
        ("rootfs/bin/", b""),
        ("rootfs/bin/sh", b"y"),
    ]);
    let meta_path = write(dir.path(), "meta.tar.gz", &meta);
    let rootfs_path = write(dir.path(), "rootfs.tar.gz", &rootfs);
    let unified_path = write(dir.path(), "unified.tar.gz", &unified);
    let mut hasher = Sha256::new();
    hasher.update(&meta);
    hasher.update(&rootfs);
    let split_fp = hex::encode(hasher.finalize());
    let unified_fp = hex::encode(Sha256::digest(&unified));

    let out = cli
        .ok(&[
            "image",
            "import",
            &meta_path,
            &rootfs_path,
            "--alias",
            "split1",
        ])
        .await;
    assert!(out.contains(&split_fp), "{out}");
    let out = cli.ok(&["image", "import", &unified_path]).await;
    assert!(out.contains(&unified_fp), "{out}");
    let again = cli.run(&["image", "import", &unified_path]).await;
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr)
            .contains("Image with same fingerprint already exists"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );

    cli.ok(&["image", "alias", "create", "uni1", &unified_fp[..12]])
        .await;
    let list = cli.ok(&["image", "list", "-f", "csv", "-c", "lfd"]).await;
    let rows = csv_rows(&list);
    assert!(
        rows.contains(&vec![
            "split1".into(),
            split_fp[..12].into(),
            "split image".into()
        ]),
        "{list}"
    );
    assert!(
        rows.iter()
            .any(|r| r[0] == "uni1" && r[1] == unified_fp[..12]),
        "{list}"
    );
    let aliases = cli.ok(&["image", "alias", "list", "-f", "csv"]).await;
    assert!(aliases.contains("uni1"), "{aliases}");
    cli.ok(&["image", "alias", "delete", "uni1"]).await;
    let aliases = cli.ok(&["image", "alias", "list", "-f", "csv"]).await;
    assert!(!aliases.contains("uni1"), "{aliases}");

    cli.ok(&["launch", "split1", "c1"]).await;
    let os = cli.ok(&["config", "get", "c1", "image.os"]).await;
    assert_eq!(os.trim(), "splitos");
    let list = cli.ok(&["list", "-f", "csv", "-c", "ns"]).await;
    assert_eq!(csv_rows(&list), [["c1", "RUNNING"]]);
    cli.ok(&["image", "delete", &unified_fp]).await;
    let list = cli.ok(&["image", "list", "-f", "csv", "-c", "f"]).await;
    assert!(!list.contains(&unified_fp[..12]), "{list}");
    Completion::Completed
}

async fn official_client_pushes_pulls_and_deletes_files_also_recursively() -> Completion {
    let fake = crate::cli::fake_builder().start().await.unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    cli.ok(&["launch", "busybox", "c1"]).await;
    let dir = tempfile::tempdir().unwrap();
    let local = write(dir.path(), "hello.txt", b"hello\n");
    cli.ok(&[
        "file",
        "push",
        &local,
        "c1/root/hello.txt",
        "--mode",
        "0600",
    ])
    .await;
    let pulled = dir.path().join("pulled.txt");
    cli.ok(&[
        "file",
        "pull",
        "c1/root/hello.txt",
        &pulled.to_string_lossy(),
    ])
    .await;
    assert_eq!(std::fs::read(&pulled).unwrap(), b"hello\n");
    let reply = get_file(&fake, "c1", "/root/hello.txt").await;
    assert_eq!(reply, Some(("0600".to_string(), b"hello\n".to_vec())));

    // A tree with a subdirectory and a symlink, there and back.
    let tree = dir.path().join("tree");
    std::fs::create_dir_all(tree.join("sub")).unwrap();
    std::fs::write(tree.join("a.txt"), b"a\n").unwrap();
    std::fs::write(tree.join("sub/b.txt"), b"b\n").unwrap();
    std::os::unix::fs::symlink("a.txt", tree.join("link")).unwrap();
    cli.ok(&["file", "push", "-r", &tree.to_string_lossy(), "c1/root/"])
        .await;
    let back = dir.path().join("back");
    std::fs::create_dir_all(&back).unwrap();
    cli.ok(&[
        "file",
        "pull",
        "-r",
        "c1/root/tree",
        &back.to_string_lossy(),
    ])
    .await;
    assert_eq!(std::fs::read(back.join("tree/a.txt")).unwrap(), b"a\n");
    assert_eq!(std::fs::read(back.join("tree/sub/b.txt")).unwrap(), b"b\n");
    assert_eq!(
        std::fs::read_link(back.join("tree/link")).unwrap(),
        Path::new("a.txt")
    );

    cli.ok(&["file", "delete", "c1/root/hello.txt"]).await;
    let gone = cli
        .run(&[
            "file",
            "pull",
            "c1/root/hello.txt",
            &pulled.to_string_lossy(),
        ])
        .await;
    assert!(!gone.status.success());
    let out = cli
        .run_with(
            &["file", "push", "-", "c1/root/stdin.txt"],
            Some(b"piped\n"),
        )
        .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        get_file(&fake, "c1", "/root/stdin.txt")
            .await
            .map(|(_, c)| c),
        Some(b"piped\n".to_vec())
    );
    Completion::Completed
}

async fn official_client_renames_moves_and_copies_instances_with_their_snapshots() -> Completion {
    let fake = crate::cli::fake_builder().start().await.unwrap();
    let Some(cli) = setup(&fake).await else {
        return Completion::ignored_with(NO_CLIENT);
    };
    cli.ok(&["init", "busybox", "c1"]).await;
    cli.ok(&["config", "set", "c1", "user.k=v"]).await;
    cli.ok(&["snapshot", "create", "c1", "s1"]).await;
    cli.ok(&["rename", "c1", "c2"]).await;
    cli.ok(&["move", "c2", "c3"]).await;
    let list = cli.ok(&["list", "-f", "csv", "-c", "nS"]).await;
    assert_eq!(csv_rows(&list), [["c3", "1"]]);

    cli.ok(&["copy", "c3", "c4"]).await;
    cli.ok(&["copy", "c3", "c5", "--instance-only"]).await;
    let list = cli.ok(&["list", "-f", "csv", "-c", "nsS"]).await;
    assert_eq!(
        csv_rows(&list),
        [
            ["c3", "STOPPED", "1"],
            ["c4", "STOPPED", "1"],
            ["c5", "STOPPED", "0"]
        ]
    );
    assert_eq!(cli.ok(&["config", "get", "c4", "user.k"]).await.trim(), "v");
    let taken = cli.run(&["copy", "c3", "c4"]).await;
    assert!(!taken.status.success());
    cli.ok(&["start", "c4"]).await;
    let running = cli.run(&["rename", "c4", "c6"]).await;
    assert!(
        !running.status.success(),
        "a running instance is not renamed"
    );
    Completion::Completed
}

/// The mode and content of a file in the fake, through the file API.
async fn get_file(fake: &FakeIncus, instance: &str, path: &str) -> Option<(String, Vec<u8>)> {
    use http_body_util::BodyExt;
    use hyperlocal::UnixClientExt;
    let client: hyper_util::client::legacy::Client<
        hyperlocal::UnixConnector,
        http_body_util::Full<bytes::Bytes>,
    > = hyper_util::client::legacy::Client::unix();
    let uri: http::Uri = hyperlocal::Uri::new(
        fake.unix_socket(),
        &format!("/1.0/instances/{instance}/files?path={path}"),
    )
    .into();
    let resp = client.get(uri).await.ok()?;
    if resp.status() != 200 {
        return None;
    }
    let mode = resp
        .headers()
        .get("x-incus-mode")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let body = resp.into_body().collect().await.ok()?.to_bytes();
    Some((mode, body.to_vec()))
}
