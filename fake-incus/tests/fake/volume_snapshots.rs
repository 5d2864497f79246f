//! Custom volume snapshots, restore, state and copy as the daemon answers them (issue 23).
//! Expected answers were taken from a real Incus 6.0.4.

use crate::common::{call, completed, wait};
use fake_incus::{assert_native_error, FakeIncus};
use serde_json::json;

const VOLUMES: &str = "/1.0/storage-pools/default/volumes/custom";

async fn fake_with_volume() -> FakeIncus {
    let fake = crate::common::builder().start().await.expect("fake starts");
    let created = call(
        &fake,
        "POST",
        VOLUMES,
        Some(json!({"name": "v1", "config": {"user.k": "first"}})),
    )
    .await;
    assert_eq!(created.status(), 200, "{}", created.json());
    fake
}

async fn snapshot(fake: &FakeIncus, name: Option<&str>) -> fake_incus::Reply {
    let body = name.map_or_else(|| json!({}), |n| json!({ "name": n }));
    call(fake, "POST", &format!("{VOLUMES}/v1/snapshots"), Some(body)).await
}

#[tokio::test]
async fn volume_snapshots_are_created_listed_got_updated_renamed_and_deleted() {
    let fake = fake_with_volume().await;
    let created = snapshot(&fake, Some("s1")).await;
    assert_eq!(
        created.metadata()["description"],
        "Creating storage volume snapshot"
    );
    assert_eq!(
        created.metadata()["resources"],
        json!({"storage_volume_snapshots": [format!("{VOLUMES}/v1/snapshots/s1")],
            "storage_volumes": [format!("{VOLUMES}/v1")]})
    );
    completed(&fake, &created).await;
    wait(&fake, &snapshot(&fake, None).await).await;
    let list = call(&fake, "GET", &format!("{VOLUMES}/v1/snapshots"), None).await;
    assert_eq!(
        list.metadata(),
        &json!([
            format!("{VOLUMES}/v1/snapshots/s1"),
            format!("{VOLUMES}/v1/snapshots/snap0")
        ])
    );
    let full = call(
        &fake,
        "GET",
        &format!("{VOLUMES}/v1/snapshots?recursion=1"),
        None,
    )
    .await;
    let first = &full.metadata()[0];
    assert_eq!(
        (
            &first["name"],
            &first["expires_at"],
            &first["content_type"],
            &first["config"]
        ),
        (
            &json!("v1/s1"),
            &json!(null),
            &json!(""),
            &json!({"user.k": "first"})
        )
    );
    assert_native_error(
        &snapshot(&fake, Some("s1")).await,
        409,
        "Snapshot \"s1\" already in use",
    );
    assert_native_error(
        &snapshot(&fake, Some("a/b")).await,
        400,
        "Storage name cannot contain \"/\"",
    );
    assert_native_error(
        &call(
            &fake,
            "POST",
            &format!("{VOLUMES}/nope/snapshots"),
            Some(json!({"name": "x"})),
        )
        .await,
        404,
        "Storage pool volume not found",
    );

    let path = format!("{VOLUMES}/v1/snapshots/s1");
    let put = call(
        &fake,
        "PUT",
        &path,
        Some(json!({"description": "d", "expires_at": "2030-01-01T00:00:00Z"})),
    )
    .await;
    assert_eq!(put.status(), 200);
    let patch = call(&fake, "PATCH", &path, Some(json!({"description": "e"}))).await;
    assert_eq!(patch.status(), 200);
    let got = call(&fake, "GET", &path, None).await;
    assert_eq!(
        got.metadata(),
        &json!({"description": "e", "expires_at": "2030-01-01T00:00:00Z", "name": "s1",
            "config": {"user.k": "first"}, "content_type": "filesystem",
            "created_at": got.metadata()["created_at"]})
    );
    assert!(got.header("etag").is_some());

    let renamed = call(&fake, "POST", &path, Some(json!({"name": "r1"}))).await;
    assert_eq!(
        renamed.metadata()["description"],
        "Renaming storage volume snapshot"
    );
    completed(&fake, &renamed).await;
    let deleted = call(&fake, "DELETE", &format!("{VOLUMES}/v1/snapshots/r1"), None).await;
    completed(&fake, &deleted).await;
    assert_native_error(
        &call(&fake, "GET", &format!("{VOLUMES}/v1/snapshots/r1"), None).await,
        404,
        "Storage pool volume not found",
    );
}

#[tokio::test]
async fn a_restore_brings_the_snapshots_config_back_and_a_missing_snapshot_changes_nothing() {
    let fake = fake_with_volume().await;
    wait(&fake, &snapshot(&fake, Some("s1")).await).await;
    let patch = call(
        &fake,
        "PATCH",
        &format!("{VOLUMES}/v1"),
        Some(json!({"config": {"user.k": "second"}})),
    )
    .await;
    assert_eq!(patch.status(), 200);
    assert_native_error(
        &call(
            &fake,
            "PUT",
            &format!("{VOLUMES}/v1"),
            Some(json!({"restore": "nope"})),
        )
        .await,
        500,
        "Snapshot not found",
    );
    let volume = call(&fake, "GET", &format!("{VOLUMES}/v1"), None).await;
    assert_eq!(volume.metadata()["config"], json!({"user.k": "second"}));
    let restored = call(
        &fake,
        "PUT",
        &format!("{VOLUMES}/v1"),
        Some(json!({"restore": "s1"})),
    )
    .await;
    assert_eq!((restored.status(), restored.metadata()), (200, &json!({})));
    let volume = call(&fake, "GET", &format!("{VOLUMES}/v1"), None).await;
    assert_eq!(volume.metadata()["config"], json!({"user.k": "first"}));
    let state = call(&fake, "GET", &format!("{VOLUMES}/v1/state"), None).await;
    assert_eq!(state.metadata(), &json!({"usage": null}));
}

#[tokio::test]
async fn a_volume_copy_is_an_operation_with_the_snapshots_unless_volume_only() {
    let fake = fake_with_volume().await;
    wait(&fake, &snapshot(&fake, Some("s1")).await).await;
    let copy = |name: &str, source: serde_json::Value| json!({"name": name, "type": "custom", "source": source});
    let copied = call(
        &fake,
        "POST",
        VOLUMES,
        Some(copy(
            "v2",
            json!({"type": "copy", "name": "v1", "pool": "default"}),
        )),
    )
    .await;
    assert_eq!(copied.status(), 202, "{}", copied.json());
    assert_eq!(copied.metadata()["description"], "Copying storage volume");
    assert_eq!(copied.metadata()["resources"], json!({}));
    completed(&fake, &copied).await;
    let v2 = call(&fake, "GET", &format!("{VOLUMES}/v2"), None).await;
    assert_eq!(v2.metadata()["config"], json!({"user.k": "first"}));
    let snaps = call(&fake, "GET", &format!("{VOLUMES}/v2/snapshots"), None).await;
    assert_eq!(
        snaps.metadata(),
        &json!([format!("{VOLUMES}/v2/snapshots/s1")])
    );

    let only = call(
        &fake,
        "POST",
        VOLUMES,
        Some(copy(
            "v3",
            json!({"type": "copy", "name": "v1", "pool": "default", "volume_only": true}),
        )),
    )
    .await;
    wait(&fake, &only).await;
    let snaps = call(&fake, "GET", &format!("{VOLUMES}/v3/snapshots"), None).await;
    assert_eq!(snaps.metadata(), &json!([]));
    assert_native_error(
        &call(
            &fake,
            "POST",
            VOLUMES,
            Some(copy("v2", json!({"type": "copy", "name": "v1"}))),
        )
        .await,
        409,
        "Volume by that name already exists",
    );
    let from_snapshot = call(
        &fake,
        "POST",
        VOLUMES,
        Some(copy("v4", json!({"type": "copy", "name": "v1/s1"}))),
    )
    .await;
    completed(&fake, &from_snapshot).await;

    // Deleting a volume takes its snapshots; a new namesake starts without them.
    let deleted = call(&fake, "DELETE", &format!("{VOLUMES}/v2"), None).await;
    assert_eq!(deleted.status(), 200);
    let again = call(&fake, "POST", VOLUMES, Some(json!({"name": "v2"}))).await;
    assert_eq!(again.status(), 200);
    let snaps = call(&fake, "GET", &format!("{VOLUMES}/v2/snapshots"), None).await;
    assert_eq!(snaps.metadata(), &json!([]));
}
