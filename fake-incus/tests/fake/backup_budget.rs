//! The bound on the memory backups take: each instance's backup tarballs together stay within
//! `BACKUP_BUDGET` (64 MiB, four full trees); a backup that would pass it fails, stores nothing,
//! and says why.

use crate::common::{call, completed, launch, wait};
use crate::instances::failure;
use fake_incus::{FakeIncus, Request};
use serde_json::json;

/// `len` bytes that gzip cannot shrink (a xorshift stream, the same on every run).
fn incompressible(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[tokio::test]
async fn a_backup_past_the_instances_budget_fails_with_a_clear_error_and_stores_nothing() {
    let fake = FakeIncus::builder().start().await.expect("fake starts");
    launch(&fake, "c1", false).await;
    // A 15 MiB file (under the request and tree limits) kept by three snapshots: a backup of
    // about 60 MiB fits once, not twice.
    let reply = fake
        .call(
            Request::post("/1.0/instances/c1/files?path=/root/a")
                .header("content-type", "application/octet-stream")
                .body(incompressible(15 << 20, 7)),
        )
        .await;
    assert_eq!(reply.status(), 200, "{}", reply.json());
    for snap in ["s1", "s2", "s3"] {
        let taken = call(
            &fake,
            "POST",
            "/1.0/instances/c1/snapshots",
            Some(json!({ "name": snap })),
        )
        .await;
        completed(&fake, &taken).await;
    }
    let first = call(
        &fake,
        "POST",
        "/1.0/instances/c1/backups",
        Some(json!({"name": "b1"})),
    )
    .await;
    completed(&fake, &first).await;
    let second = call(
        &fake,
        "POST",
        "/1.0/instances/c1/backups",
        Some(json!({"name": "b2"})),
    )
    .await;
    let done = wait(&fake, &second).await;
    let (status, err) = failure(&done);
    assert_eq!(status, "Failure");
    assert!(
        err.starts_with("Create backup: Failed to write backup file: no space left on device")
            && err.contains("at most 64 MiB of backups per instance"),
        "{err}"
    );
    let list = call(&fake, "GET", "/1.0/instances/c1/backups", None).await;
    assert_eq!(list.metadata(), &json!(["/1.0/instances/c1/backups/b1"]));
    // Deleting the first frees its share of the budget.
    wait(
        &fake,
        &call(&fake, "DELETE", "/1.0/instances/c1/backups/b1", None).await,
    )
    .await;
    let third = call(
        &fake,
        "POST",
        "/1.0/instances/c1/backups",
        Some(json!({"name": "b3"})),
    )
    .await;
    completed(&fake, &third).await;
}
