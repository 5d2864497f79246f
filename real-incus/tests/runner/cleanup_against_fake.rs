//! `--cleanup-only` against the fake Incus, over the Unix socket and over mutual HTTPS with a pinned
//! server certificate. A leftover project is removed (the fake's projects are writable); when its
//! removal fails, the runner must report it as left over and fail.
use std::path::Path;
use std::process::Output;

use fake_incus::{FakeIncus, Fault, Rule};
use serde_json::json;

const LEFTOVER: &str = "ioacc-leftover0001";

async fn runner(args: Vec<String>) -> Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_real-incus-acceptance"))
        .env_remove("INCUS_ACCEPTANCE")
        .env_remove("INCUS_SOCKET")
        .arg("--yes-create-resources")
        .args(args)
        .output()
        .await
        .expect("the runner starts")
}

fn unix_args(fake: &FakeIncus) -> Vec<String> {
    vec![
        "--cleanup-only".into(),
        "--unix".into(),
        fake.unix_socket().display().to_string(),
    ]
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.display().to_string()
}

fn https_args(fake: &FakeIncus, dir: &Path, server_cert_pem: &str) -> Vec<String> {
    vec![
        "--cleanup-only".into(),
        "--url".into(),
        fake.https_url().expect("https is on"),
        "--client-cert".into(),
        write(dir, "client.crt", &fake.client_cert_pem()),
        "--client-key".into(),
        write(dir, "client.key", &fake.client_key_pem()),
        "--server-cert".into(),
        write(dir, "server.crt", server_cert_pem),
    ]
}

fn deletes(fake: &FakeIncus) -> Vec<String> {
    fake.journal()
        .into_iter()
        .filter(|e| e.method == "DELETE")
        .map(|e| e.path)
        .collect()
}

#[tokio::test]
async fn cleanup_only_with_nothing_left_deletes_nothing_and_succeeds() {
    let fake = FakeIncus::builder().start().await.expect("fake");
    let output = runner(unix_args(&fake)).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("0 leftover acceptance project(s)"),
        "{stderr}"
    );
    assert!(deletes(&fake).is_empty(), "{:?}", deletes(&fake));
    assert!(!fake.journal().is_empty(), "the runner did ask the daemon");
}

/// A fake holding one leftover acceptance project and one project that only looks like one.
async fn fake_with_a_leftover() -> FakeIncus {
    let seed = FakeIncus::builder().start().await.expect("fake");
    let mut state = seed.dump_state();
    let projects = state["projects"]
        .as_array_mut()
        .expect("projects in the dump");
    projects
        .push(json!({"name": LEFTOVER, "description": "", "config": {"features.images": "true"}}));
    projects.push(json!({"name": "ioacc-", "description": "not ours: too short", "config": {}}));
    drop(seed);
    FakeIncus::builder()
        .state(state)
        .start()
        .await
        .expect("seeded fake")
}

fn assert_only_the_leftover_was_deleted(fake: &FakeIncus) {
    let deleted = deletes(fake);
    assert!(
        deleted
            .iter()
            .any(|p| p == &format!("/1.0/projects/{LEFTOVER}")),
        "{deleted:?}"
    );
    assert!(
        deleted.iter().all(|p| p.contains(LEFTOVER)),
        "only the leftover is touched: {deleted:?}"
    );
}

#[tokio::test]
async fn cleanup_only_deletes_leftover_projects_and_succeeds() {
    let fake = fake_with_a_leftover().await;
    let output = runner(unix_args(&fake)).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!("done: delete project {LEFTOVER}")),
        "{stderr}"
    );
    assert_only_the_leftover_was_deleted(&fake);
    let left: Vec<String> = fake.dump_state()["projects"]
        .as_array()
        .expect("projects")
        .iter()
        .filter_map(|p| p["name"].as_str().map(String::from))
        .collect();
    assert!(!left.iter().any(|n| n == LEFTOVER), "{left:?}");
    assert!(left.iter().any(|n| n == "ioacc-"), "{left:?}");
}

#[tokio::test]
async fn cleanup_only_tries_leftover_projects_and_reports_what_stays() {
    let fake = fake_with_a_leftover().await;
    let _refused = fake
        .add_rule(
            Rule::new("DELETE", &format!("/1.0/projects/{LEFTOVER}")).fault(Fault::Error {
                status: 500,
                message: "Only empty projects can be removed.".into(),
            }),
        )
        .expect("rule");
    let output = runner(unix_args(&fake)).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("LEFT OVER: project {LEFTOVER}")),
        "{stderr}"
    );
    assert_only_the_leftover_was_deleted(&fake);
}

#[tokio::test]
async fn cleanup_only_over_https_pins_the_server_certificate() {
    let fake = FakeIncus::builder()
        .https(true)
        .start()
        .await
        .expect("fake");
    let dir = tempfile::tempdir().expect("tempdir");
    let output = runner(https_args(&fake, dir.path(), &fake.server_cert_pem())).await;
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        fake.journal().iter().all(|e| e.trusted),
        "every request presented the trusted client certificate"
    );

    let other = FakeIncus::builder()
        .https(true)
        .start()
        .await
        .expect("second fake");
    let wrong_pin = other.server_cert_pem();
    let before = fake.journal().len();
    let output = runner(https_args(&fake, dir.path(), &wrong_pin)).await;
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("pinned"), "{stderr}");
    assert_eq!(
        fake.journal().len(),
        before,
        "no request got through with a wrong pin"
    );
}
