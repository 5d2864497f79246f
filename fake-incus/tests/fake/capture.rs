//! `capture`: it reads with GETs only (the fake's journal proves it), and a capture of a fake
//! served again captures the same.

use fake_incus::{capture, CaptureOptions, FakeIncus};
use serde_json::json;

fn seed() -> serde_json::Value {
    json!({
        "projects": [
            {"name": "default", "config": {"features.images": "true", "features.profiles": "true"}},
            {"name": "team", "description": "a team's",
             "config": {"features.profiles": "true", "features.storage.volumes": "true"}}
        ],
        "profiles": [
            {"project": "default", "name": "default", "devices": {"root": {"type": "disk", "path": "/", "pool": "default"}}},
            {"project": "team", "name": "default", "devices": {"root": {"type": "disk", "path": "/", "pool": "default"}}},
            {"project": "team", "name": "web", "config": {"user.role": "web"}}
        ],
        "storage_volumes": [{"pool": "default", "project": "team", "name": "data", "config": {"size": "1GiB"}}],
        "instances": [
            {"name": "web1", "project": "team", "status": "Running", "profiles": ["default", "web"],
             "config": {"user.x": "1"}, "snapshots": [{"name": "s0"}]},
            {"name": "db1", "project": "team", "status": "Stopped"},
            {"name": "other", "status": "Stopped"}
        ]
    })
}

#[tokio::test]
async fn a_capture_sends_only_gets_and_a_served_capture_captures_the_same() {
    let fake = FakeIncus::builder().state(seed()).start().await.unwrap();
    let options = CaptureOptions::new().project("team").instances("web*");
    let first = capture(fake.unix_socket(), &options).await.unwrap();
    let methods: std::collections::BTreeSet<String> =
        fake.journal().into_iter().map(|e| e.method).collect();
    assert_eq!(methods, ["GET".to_string()].into(), "a capture only reads");
    let names: Vec<&str> = first["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["web1"], "--project and --instances narrow it");
    assert_eq!(first["instances"][0]["snapshots"][0]["name"], "s0");
    assert_eq!(first["storage_volumes"][0]["name"], "data");
    assert_eq!(first["format_version"], 2);

    let served = FakeIncus::builder()
        .state(first.clone())
        .start()
        .await
        .unwrap();
    let second = capture(served.unix_socket(), &options).await.unwrap();
    assert_eq!(first, second);
}

#[tokio::test]
async fn a_capture_of_an_unreachable_socket_says_where_it_failed() {
    let dir = tempfile::tempdir().unwrap();
    let err = capture(&dir.path().join("none.socket"), &CaptureOptions::new())
        .await
        .unwrap_err()
        .to_string();
    assert!(err.starts_with("GET /1.0:"), "{err}");
}
