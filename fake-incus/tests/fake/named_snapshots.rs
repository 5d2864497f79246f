//! Named snapshots of the whole state: saved and restored from Rust and through the control
//! socket, files included, cheaply whatever the state holds.

use crate::common::{call, unix_at};
use fake_incus::{assert_native_error, FakeIncus, Request};
use serde_json::json;
use std::time::Instant;

#[tokio::test]
async fn a_restored_snapshot_brings_back_resources_and_files_and_costs_microseconds() {
    let instances: Vec<_> = (0..1000)
        .map(|i| json!({"name": format!("c{i}"), "status": "Running"}))
        .collect();
    let fake = FakeIncus::builder()
        .state(json!({"instances": instances}))
        .start()
        .await
        .unwrap();
    let write = |body: &'static [u8]| {
        Request::post("/1.0/instances/c1/files?path=/root/note")
            .header("X-Incus-type", "file")
            .body(body)
    };
    assert_eq!(fake.call(write(b"set up")).await.status(), 200);
    let saved = Instant::now();
    fake.save_snapshot("set-up").unwrap();
    let save_took = saved.elapsed();

    assert_eq!(fake.call(write(b"changed by a test")).await.status(), 200);
    let made = call(
        &fake,
        "POST",
        "/1.0/profiles",
        Some(json!({"name": "extra"})),
    )
    .await;
    assert_eq!(made.status(), 201);
    let restored = Instant::now();
    fake.restore_snapshot("set-up").unwrap();
    let restore_took = restored.elapsed();
    assert!(
        fake.journal().is_empty(),
        "a restore clears the journal, as a reset"
    );
    println!("1,000 instances: save {save_took:?}, restore {restore_took:?}");

    let note = fake
        .call(Request::get("/1.0/instances/c1/files?path=/root/note"))
        .await;
    assert_eq!(note.bytes().as_ref(), b"set up");
    assert_native_error(
        &call(&fake, "GET", "/1.0/profiles/extra", None).await,
        404,
        "Fetch profile: Profile not found",
    );
    assert_eq!(
        fake.dump_state()["instances"].as_array().unwrap().len(),
        1000
    );
    assert_eq!(fake.snapshots(), ["set-up"]);
    fake.delete_snapshot("set-up").unwrap();
    assert!(matches!(
        fake.restore_snapshot("set-up"),
        Err(fake_incus::Error::Snapshot(
            fake_incus::SnapshotError::NotFound(_)
        ))
    ));
    assert!(matches!(
        fake.save_snapshot("a/b"),
        Err(fake_incus::Error::Snapshot(
            fake_incus::SnapshotError::BadName(_)
        ))
    ));
}

#[tokio::test]
async fn the_control_socket_saves_lists_restores_and_deletes_named_snapshots() {
    let fake = FakeIncus::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let control = dir.path().join("control.socket");
    fake.serve_control(&control).unwrap();
    let saved = unix_at(&control, "POST", "/snapshots/empty", None, &[]).await;
    assert_eq!(
        (saved.status(), saved.json()),
        (200, &json!({"name": "empty", "instances": 0}))
    );
    let made = call(
        &fake,
        "POST",
        "/1.0/instances",
        Some(json!({"name": "c1", "source": {"type": "none"}})),
    )
    .await;
    let done = fake
        .call(Request::get(&format!("{}/wait", made.operation().unwrap())))
        .await;
    assert_eq!(done.metadata()["status"], "Success");
    let saved = unix_at(&control, "POST", "/snapshots/one", None, &[]).await;
    assert_eq!(saved.json()["instances"], 1);
    let listed = unix_at(&control, "GET", "/snapshots", None, &[]).await;
    assert_eq!(
        listed.json(),
        &json!({"snapshots": [{"name": "empty", "instances": 0}, {"name": "one", "instances": 1}]})
    );
    let back = unix_at(&control, "POST", "/snapshots/empty/restore", None, &[]).await;
    assert_eq!((back.status(), back.json()), (200, &json!({})));
    assert_eq!(
        call(&fake, "GET", "/1.0/instances/c1", None).await.status(),
        404
    );
    unix_at(&control, "POST", "/snapshots/one/restore", None, &[]).await;
    assert_eq!(
        call(&fake, "GET", "/1.0/instances/c1", None).await.status(),
        200
    );
    let deleted = unix_at(&control, "DELETE", "/snapshots/one", None, &[]).await;
    assert_eq!(deleted.status(), 200);
    for (method, path, status, says) in [
        (
            "POST",
            "/snapshots/one/restore",
            404,
            "no snapshot named \"one\"",
        ),
        ("DELETE", "/snapshots/one", 404, "no snapshot named \"one\""),
        ("POST", "/snapshots/a%20b", 400, "invalid snapshot name"),
        ("PUT", "/snapshots/one", 405, "not supported"),
    ] {
        let reply = unix_at(&control, method, path, None, &[]).await;
        assert_eq!(reply.status(), status, "{method} {path}");
        let error = reply.json()["error"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(error.contains(says), "{method} {path}: {error}");
    }
}
