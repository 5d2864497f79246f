//! Custom volumes moved and copied between pools, as the daemon's `storagePoolVolumePost` and
//! copy do (Incus 6.0.4 source; the development machine's daemon has one pool, and a second
//! one is server-wide, outside a throw-away project): a `Moving storage volume` operation that
//! takes the volume's config, description and snapshots to the other pool and points its users'
//! disk devices there; the daemon's refusals in its order; a copy from another pool with its
//! snapshots.

use crate::common::{call, launch, wait};
use fake_incus::{assert_native_error, FakeIncus};
use serde_json::json;

/// A fake with a second pool `p2` and a volume `default/v1` (with `user.k` and snapshot `s1`)
/// that the stopped instance `c1` attaches.
async fn two_pools() -> FakeIncus {
    let fake = crate::common::builder().start().await.expect("fake starts");
    let pool = json!({"name": "p2", "driver": "dir", "config": {}});
    let made = call(&fake, "POST", "/1.0/storage-pools", Some(pool)).await;
    assert!(made.status() < 300, "{}", made.json());
    let volume = json!({"name": "v1", "description": "moved", "config": {"user.k": "v"}});
    let made = call(
        &fake,
        "POST",
        "/1.0/storage-pools/default/volumes/custom",
        Some(volume),
    )
    .await;
    assert!(made.status() < 300, "{}", made.json());
    let snap = call(
        &fake,
        "POST",
        "/1.0/storage-pools/default/volumes/custom/v1/snapshots",
        Some(json!({"name": "s1"})),
    )
    .await;
    wait(&fake, &snap).await;
    launch(&fake, "c1", false).await;
    let device = json!({"devices": {"data": {"type": "disk", "pool": "default", "source": "v1", "path": "/mnt"}}});
    let attached = call(&fake, "PATCH", "/1.0/instances/c1", Some(device)).await;
    assert_eq!(attached.status(), 200, "{}", attached.json());
    fake
}

#[tokio::test]
async fn a_volume_moved_to_another_pool_takes_its_config_snapshots_and_users_along() {
    let fake = two_pools().await;
    let moved = call(
        &fake,
        "POST",
        "/1.0/storage-pools/default/volumes/custom/v1",
        Some(json!({"name": "v2", "pool": "p2"})),
    )
    .await;
    assert_eq!(moved.status(), 202, "{}", moved.json());
    assert_eq!(moved.metadata()["description"], "Moving storage volume");
    let done = wait(&fake, &moved).await;
    assert_eq!(done.metadata()["status"], "Success", "{}", done.json());
    let there = call(
        &fake,
        "GET",
        "/1.0/storage-pools/p2/volumes/custom/v2",
        None,
    )
    .await;
    assert_eq!(
        (
            &there.metadata()["config"]["user.k"],
            &there.metadata()["description"]
        ),
        (&json!("v"), &json!("moved"))
    );
    let snapshots = call(
        &fake,
        "GET",
        "/1.0/storage-pools/p2/volumes/custom/v2/snapshots",
        None,
    )
    .await;
    assert_eq!(
        snapshots.metadata(),
        &json!(["/1.0/storage-pools/p2/volumes/custom/v2/snapshots/s1"])
    );
    let gone = call(
        &fake,
        "GET",
        "/1.0/storage-pools/default/volumes/custom/v1",
        None,
    )
    .await;
    assert_eq!(gone.status(), 404);
    let instance = call(&fake, "GET", "/1.0/instances/c1", None).await;
    assert_eq!(
        instance.metadata()["devices"]["data"],
        json!({"type": "disk", "pool": "p2", "source": "v2", "path": "/mnt"}),
        "the instance's device follows the volume"
    );
}

#[tokio::test]
async fn a_move_is_refused_with_the_daemons_texts_in_its_order() {
    let fake = two_pools().await;
    let taken = json!({"name": "v2", "config": {}});
    call(
        &fake,
        "POST",
        "/1.0/storage-pools/p2/volumes/custom",
        Some(taken),
    )
    .await;
    let post = |body: serde_json::Value| {
        call(
            &fake,
            "POST",
            "/1.0/storage-pools/default/volumes/custom/v1",
            Some(body),
        )
    };
    assert_native_error(&post(json!({"pool": "p2"})).await, 400, "No name provided");
    assert_native_error(
        &post(json!({"name": "a/b", "pool": "p2"})).await,
        400,
        "Storage volume names may not contain slashes",
    );
    assert_native_error(
        &post(json!({"name": "v2", "pool": "nope"})).await,
        404,
        "Storage pool not found",
    );
    assert_native_error(
        &post(json!({"name": "v2", "pool": "p2"})).await,
        409,
        "Volume by that name already exists",
    );
    let start = call(
        &fake,
        "PUT",
        "/1.0/instances/c1/state",
        Some(json!({"action": "start"})),
    )
    .await;
    wait(&fake, &start).await;
    assert_native_error(
        &post(json!({"name": "v3", "pool": "p2"})).await,
        500,
        "Volume is still in use by running instances",
    );
    assert_native_error(
        &post(json!({"name": "v3"})).await,
        500,
        "Volume is still in use by running instances",
    );
    let still = call(
        &fake,
        "GET",
        "/1.0/storage-pools/default/volumes/custom/v1",
        None,
    )
    .await;
    assert_eq!(still.status(), 200, "nothing moved");
}

#[tokio::test]
async fn a_copy_from_another_pool_is_an_operation_that_brings_the_snapshots() {
    let fake = two_pools().await;
    let body = json!({"name": "c", "source": {"type": "copy", "pool": "default", "name": "v1"}});
    let copied = call(
        &fake,
        "POST",
        "/1.0/storage-pools/p2/volumes/custom",
        Some(body),
    )
    .await;
    assert_eq!(copied.metadata()["description"], "Copying storage volume");
    let done = wait(&fake, &copied).await;
    assert_eq!(done.metadata()["status"], "Success", "{}", done.json());
    let there = call(&fake, "GET", "/1.0/storage-pools/p2/volumes/custom/c", None).await;
    assert_eq!(there.metadata()["config"]["user.k"], "v");
    let snapshots = call(
        &fake,
        "GET",
        "/1.0/storage-pools/p2/volumes/custom/c/snapshots",
        None,
    )
    .await;
    assert_eq!(
        snapshots.metadata(),
        &json!(["/1.0/storage-pools/p2/volumes/custom/c/snapshots/s1"])
    );
    let source = call(
        &fake,
        "GET",
        "/1.0/storage-pools/default/volumes/custom/v1",
        None,
    )
    .await;
    assert_eq!(source.status(), 200, "a copy keeps the source");
}
