//! Custom volume backups as the daemon answers them. Expected answers were taken from a real
//! Incus 6.0.4 (a `dir` pool).

use crate::common::{call, completed, wait};
use crate::instances::failure;
use fake_incus::{assert_native_error, FakeIncus, Request};
use serde_json::{json, Value};

const VOLUMES: &str = "/1.0/storage-pools/default/volumes/custom";

async fn fake_with_volume() -> FakeIncus {
    let fake = crate::common::builder().start().await.expect("fake starts");
    let created = call(&fake, "POST", VOLUMES, Some(json!({"name": "v1"}))).await;
    assert_eq!(created.status(), 200, "{}", created.json());
    fake
}

async fn backup(fake: &FakeIncus, body: Value) -> fake_incus::Reply {
    call(fake, "POST", &format!("{VOLUMES}/v1/backups"), Some(body)).await
}

/// The entries of a gzip tarball, in order, with their modes.
fn entries(bytes: &[u8]) -> Vec<(String, u32)> {
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    archive
        .entries()
        .expect("a tarball")
        .filter_map(|e| {
            let e = e.ok()?;
            let mode = e.header().mode().ok()?;
            Some((e.path().ok()?.to_string_lossy().into_owned(), mode))
        })
        .collect()
}

fn index_of(bytes: &[u8]) -> Value {
    use std::io::Read;
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    let mut entry = archive
        .entries()
        .expect("a tarball")
        .filter_map(Result::ok)
        .find(|e| {
            e.path()
                .is_ok_and(|p| p.to_string_lossy() == "backup/index.yaml")
        })
        .expect("backup/index.yaml");
    let mut text = String::new();
    entry.read_to_string(&mut text).expect("index.yaml reads");
    serde_yaml_ng::from_str(&text).expect("index.yaml parses")
}

#[tokio::test]
async fn volume_backups_are_created_listed_got_renamed_and_deleted_as_operations() {
    let fake = fake_with_volume().await;
    let created = backup(&fake, json!({"name": "b1"})).await;
    assert_eq!(
        created.metadata()["description"],
        "Creating custom volume backup"
    );
    assert_eq!(
        created.metadata()["resources"],
        json!({"backups": [format!("{VOLUMES}/v1/backups/b1")],
            "storage_volumes": [format!("{VOLUMES}/v1")]})
    );
    completed(&fake, &created).await;
    wait(&fake, &backup(&fake, json!({})).await).await;
    let list = call(&fake, "GET", &format!("{VOLUMES}/v1/backups"), None).await;
    assert_eq!(
        list.metadata(),
        &json!([
            format!("{VOLUMES}/v1/backups/b1"),
            format!("{VOLUMES}/v1/backups/backup0")
        ])
    );
    let full = call(
        &fake,
        "GET",
        &format!("{VOLUMES}/v1/backups?recursion=1"),
        None,
    )
    .await;
    let keys: Vec<&String> = full.metadata()[0]
        .as_object()
        .expect("object")
        .keys()
        .collect();
    assert_eq!(
        keys,
        [
            "name",
            "created_at",
            "expires_at",
            "volume_only",
            "optimized_storage"
        ]
    );
    let b1 = call(&fake, "GET", &format!("{VOLUMES}/v1/backups/b1"), None).await;
    assert_eq!(b1.metadata(), &full.metadata()[0]);
    assert_eq!(b1.metadata()["expires_at"], "0001-01-01T00:00:00Z");

    let again = backup(&fake, json!({"name": "b1"})).await;
    assert_eq!(
        failure(&wait(&fake, &again).await),
        (
            "Failure",
            "Create volume backup: Backup \"v1/b1\" already exists"
        )
    );
    let export = call(
        &fake,
        "GET",
        &format!("{VOLUMES}/v1/backups/b1/export"),
        None,
    )
    .await;

    let renamed = call(
        &fake,
        "POST",
        &format!("{VOLUMES}/v1/backups/b1"),
        Some(json!({"name": "b3"})),
    )
    .await;
    assert_eq!(
        renamed.metadata()["description"],
        "Renaming custom volume backup"
    );
    // The daemon names the renamed backup by its full name there.
    assert_eq!(
        renamed.metadata()["resources"]["backups"],
        json!([format!("{VOLUMES}/v1/backups/v1%2Fb1")])
    );
    completed(&fake, &renamed).await;
    let moved = call(
        &fake,
        "GET",
        &format!("{VOLUMES}/v1/backups/b3/export"),
        None,
    )
    .await;
    assert_eq!(moved.bytes(), export.bytes());

    let deleted = call(&fake, "DELETE", &format!("{VOLUMES}/v1/backups/b3"), None).await;
    assert_eq!(
        deleted.metadata()["description"],
        "Deleting custom volume backup"
    );
    assert_eq!(
        deleted.metadata()["resources"],
        json!({"backups": [format!("{VOLUMES}/v1/backups/b3")],
            "storage_volumes": [format!("{VOLUMES}/v1")]})
    );
    wait(&fake, &deleted).await;
    let list = call(&fake, "GET", &format!("{VOLUMES}/v1/backups"), None).await;
    assert_eq!(
        list.metadata(),
        &json!([format!("{VOLUMES}/v1/backups/backup0")])
    );
}

#[tokio::test]
async fn volume_backup_errors_are_the_daemons() {
    let fake = fake_with_volume().await;
    wait(&fake, &backup(&fake, json!({"name": "b1"})).await).await;
    for (method, path) in [
        ("GET", "backups/nope"),
        ("POST", "backups/nope"),
        ("DELETE", "backups/nope"),
        ("GET", "backups/nope/export"),
    ] {
        let body = (method == "POST").then(|| json!({"name": "x"}));
        assert_native_error(
            &call(&fake, method, &format!("{VOLUMES}/v1/{path}"), body).await,
            404,
            "Storage volume backup not found",
        );
    }
    assert_native_error(
        &call(&fake, "GET", &format!("{VOLUMES}/nov/backups"), None).await,
        404,
        "Storage pool volume not found",
    );
    for path in ["backups", "backups/b1"] {
        assert_native_error(
            &call(
                &fake,
                "POST",
                &format!("{VOLUMES}/v1/{path}"),
                Some(json!({"name": "a/b"})),
            )
            .await,
            400,
            "Backup names may not contain slashes",
        );
    }
    assert_native_error(
        &call(
            &fake,
            "PUT",
            &format!("{VOLUMES}/v1/backups/b1"),
            Some(json!({})),
        )
        .await,
        501,
        "not implemented",
    );
}

#[tokio::test]
async fn a_volume_backup_export_is_the_daemons_dir_pool_tarball() {
    let fake = fake_with_volume().await;
    let snap = call(
        &fake,
        "POST",
        &format!("{VOLUMES}/v1/snapshots"),
        Some(json!({"name": "s0"})),
    )
    .await;
    wait(&fake, &snap).await;
    wait(&fake, &backup(&fake, json!({"name": "b1"})).await).await;
    wait(
        &fake,
        &backup(&fake, json!({"name": "only", "volume_only": true})).await,
    )
    .await;
    let export = call(
        &fake,
        "GET",
        &format!("{VOLUMES}/v1/backups/b1/export"),
        None,
    )
    .await;
    assert_eq!(
        (
            export.status(),
            export.header("content-type"),
            export.header("content-disposition")
        ),
        (
            200,
            Some("application/octet-stream"),
            Some("inline;filename=")
        )
    );
    assert_eq!(
        entries(export.bytes()),
        [
            ("backup/index.yaml".to_string(), 0o644),
            ("backup/volume-snapshots/s0".to_string(), 0o711),
            ("backup/volume".to_string(), 0o711),
        ]
    );
    let index = index_of(export.bytes());
    assert_eq!(
        (
            &index["name"],
            &index["backend"],
            &index["pool"],
            &index["type"],
            &index["snapshots"]
        ),
        (
            &json!("v1"),
            &json!("dir"),
            &json!("default"),
            &json!("custom"),
            &json!(["s0"])
        )
    );
    assert_eq!(index["config"]["volume"]["name"], "v1");
    assert_eq!(index["config"]["volume_snapshots"][0]["name"], "s0");

    let only = call(
        &fake,
        "GET",
        &format!("{VOLUMES}/v1/backups/only/export"),
        None,
    )
    .await;
    assert_eq!(
        entries(only.bytes()),
        [
            ("backup/index.yaml".to_string(), 0o644),
            ("backup/volume".to_string(), 0o711),
        ]
    );
    assert_eq!(index_of(only.bytes())["snapshots"], Value::Null);
}

#[tokio::test]
async fn a_volume_backup_follows_its_volume_renamed_and_goes_with_it_deleted() {
    let fake = fake_with_volume().await;
    wait(&fake, &backup(&fake, json!({"name": "b1"})).await).await;
    let before = call(
        &fake,
        "GET",
        &format!("{VOLUMES}/v1/backups/b1/export"),
        None,
    )
    .await;
    let renamed = call(
        &fake,
        "POST",
        &format!("{VOLUMES}/v1"),
        Some(json!({"name": "v2"})),
    )
    .await;
    assert!(renamed.status() < 300, "{}", renamed.json());
    if renamed.status() == 202 {
        wait(&fake, &renamed).await;
    }
    let after = call(
        &fake,
        "GET",
        &format!("{VOLUMES}/v2/backups/b1/export"),
        None,
    )
    .await;
    assert_eq!(after.bytes(), before.bytes());
    let deleted = call(&fake, "DELETE", &format!("{VOLUMES}/v2"), None).await;
    assert!(deleted.status() < 300, "{}", deleted.json());
    let again = call(&fake, "POST", VOLUMES, Some(json!({"name": "v2"}))).await;
    assert_eq!(again.status(), 200, "{}", again.json());
    let list = call(&fake, "GET", &format!("{VOLUMES}/v2/backups"), None).await;
    assert_eq!(list.metadata(), &json!([]));
}

async fn import(fake: &FakeIncus, name: Option<&str>, tarball: &[u8]) -> fake_incus::Reply {
    let mut request = Request::post(VOLUMES)
        .header("content-type", "application/octet-stream")
        .body(tarball.to_vec());
    if let Some(name) = name {
        request = request.header("x-incus-name", name);
    }
    fake.call(request).await
}

#[tokio::test]
async fn a_volume_backup_imported_back_restores_the_volume_and_its_snapshots() {
    let fake = fake_with_volume().await;
    let described = call(
        &fake,
        "PATCH",
        &format!("{VOLUMES}/v1"),
        Some(json!({"description": "kept", "config": {"user.k": "v"}})),
    )
    .await;
    assert_eq!(described.status(), 200, "{}", described.json());
    let snap = call(
        &fake,
        "POST",
        &format!("{VOLUMES}/v1/snapshots"),
        Some(json!({"name": "s0"})),
    )
    .await;
    wait(&fake, &snap).await;
    wait(&fake, &backup(&fake, json!({"name": "b1"})).await).await;
    let export = call(
        &fake,
        "GET",
        &format!("{VOLUMES}/v1/backups/b1/export"),
        None,
    )
    .await;

    let restored = import(&fake, Some("v9"), export.bytes()).await;
    assert_eq!(
        restored.metadata()["description"],
        "Restoring custom volume backup"
    );
    assert_eq!(
        restored.metadata()["resources"],
        json!({"storage_volumes": [format!("{VOLUMES}/v9")]})
    );
    completed(&fake, &restored).await;
    let v9 = call(&fake, "GET", &format!("{VOLUMES}/v9"), None).await;
    assert_eq!(
        (
            &v9.metadata()["description"],
            &v9.metadata()["config"]["user.k"]
        ),
        (&json!("kept"), &json!("v"))
    );
    let snaps = call(&fake, "GET", &format!("{VOLUMES}/v9/snapshots"), None).await;
    assert_eq!(
        snaps.metadata(),
        &json!([format!("{VOLUMES}/v9/snapshots/s0")])
    );

    let again = import(&fake, Some("v9"), export.bytes()).await;
    assert_eq!(
        failure(&wait(&fake, &again).await),
        (
            "Failure",
            "Create custom volume from backup: Volume \"v9\" already exists in pool \"default\""
        )
    );
    // Without a name, the backup's own: v1, which exists.
    let unnamed = import(&fake, None, export.bytes()).await;
    assert_eq!(
        failure(&wait(&fake, &unnamed).await).1,
        "Create custom volume from backup: Volume \"v1\" already exists in pool \"default\""
    );
    assert_native_error(
        &import(&fake, Some("v8"), b"garbage").await,
        500,
        "Unsupported compression",
    );
}

#[tokio::test]
async fn a_volume_backup_and_its_tarball_survive_a_restart() {
    use crate::persistence::{send, start};
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("incus.socket");
    let mut child = start(dir.path(), &[]).await.unwrap();
    let created = send(&socket, Request::post(VOLUMES).json(&json!({"name": "v1"})))
        .await
        .unwrap();
    assert_eq!(created.status(), 200, "{}", created.json());
    let made = send(
        &socket,
        Request::post(&format!("{VOLUMES}/v1/backups")).json(&json!({"name": "b1"})),
    )
    .await
    .unwrap();
    let operation = made.operation().unwrap().to_string();
    let done = send(&socket, Request::get(&format!("{operation}/wait")))
        .await
        .unwrap();
    assert_eq!(done.metadata()["status"], "Success");
    let export = format!("{VOLUMES}/v1/backups/b1/export");
    let before = send(&socket, Request::get(&export)).await.unwrap();
    assert_eq!(before.status(), 200);
    child.kill().await.unwrap();

    let mut child = start(dir.path(), &[]).await.unwrap();
    let after = send(&socket, Request::get(&export)).await.unwrap();
    assert_eq!((after.status(), after.bytes()), (200, before.bytes()));
    let listed = send(&socket, Request::get(&format!("{VOLUMES}/v1/backups")))
        .await
        .unwrap();
    assert_eq!(
        listed.metadata(),
        &json!([format!("{VOLUMES}/v1/backups/b1")])
    );
    child.kill().await.unwrap();
}
