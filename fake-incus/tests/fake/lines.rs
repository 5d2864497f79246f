//! The Incus line the fake answers as (`--incus-version 6.0|7.0`, the builder's
//! `incus_version`): its `/1.0`, and its behaviour where the lines differ, each keyed on the API
//! extension that introduced it.

use crate::common::{self, call, launch, wait};
use fake_incus::{assert_native_error, FakeIncus, IncusLine};
use serde_json::{json, Value};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

const BIN: &str = env!("CARGO_BIN_EXE_fake-incus");

pub(crate) async fn fake_as(line: IncusLine) -> FakeIncus {
    FakeIncus::builder()
        .incus_version(line)
        .start()
        .await
        .expect("fake starts")
}

/// The `/1.0` answer's metadata.
async fn server(fake: &FakeIncus) -> Value {
    call(fake, "GET", "/1.0", None).await.metadata().clone()
}

#[tokio::test]
async fn each_line_answers_its_server_version_and_api_extensions() {
    for (line, version, count, os) in [
        (IncusLine::V6_0, "6.0.4", 450, "12"),
        (IncusLine::V7_0, "7.0.2", 562, "13"),
    ] {
        let server = server(&fake_as(line).await).await;
        assert_eq!(server["environment"]["server_version"], version);
        assert_eq!(server["environment"]["os_version"], os);
        let extensions = server["api_extensions"].as_array().unwrap();
        assert_eq!(extensions.len(), count, "{version}");
        assert_eq!(
            extensions
                .iter()
                .map(|e| e.as_str().unwrap())
                .collect::<Vec<_>>(),
            line.api_extensions(),
        );
    }
}

#[tokio::test]
async fn the_default_line_is_the_one_the_readme_names() {
    let fake = common::default_fake().await;
    assert_eq!(
        server(&fake).await["environment"]["server_version"],
        IncusLine::DEFAULT.server_version()
    );
    let readme = include_str!("../../README.md");
    let named = format!(
        "default line is Incus {} ({})",
        IncusLine::DEFAULT.name(),
        IncusLine::DEFAULT.server_version()
    );
    assert!(readme.contains(&named), "README does not say {named:?}");
    let help = std::process::Command::new(BIN)
        .args(["serve", "--help"])
        .output()
        .expect("fake-incus runs");
    let help = String::from_utf8_lossy(&help.stdout);
    let words: Vec<&str> = help.split_whitespace().collect();
    let said = format!("else {}", IncusLine::DEFAULT.name());
    assert!(
        words.join(" ").contains(&said),
        "`serve --help` does not say {said:?}:\n{help}"
    );
}

#[tokio::test]
async fn an_untrusted_caller_sees_the_lines_extensions_too() {
    let fake = FakeIncus::builder()
        .incus_version(IncusLine::V7_0)
        .https(true)
        .start()
        .await
        .unwrap();
    let client = common::Https::new(&fake, common::ClientCert::None, false);
    let reply = client.request("GET", "/1.0", None).await;
    assert_eq!(reply.metadata()["auth"], "untrusted");
    assert_eq!(
        reply.metadata()["api_extensions"].as_array().unwrap().len(),
        562
    );
}

#[tokio::test]
async fn a_seed_read_from_a_7_0_daemon_serves_as_7_0_and_a_dump_records_its_line() {
    let seed = json!({"incus_version": "7.0.2", "instances": [{"name": "c1"}]});
    let fake = FakeIncus::builder()
        .state(seed.clone())
        .start()
        .await
        .unwrap();
    assert_eq!(
        server(&fake).await["environment"]["server_version"],
        "7.0.2"
    );
    assert_eq!(fake.dump_state()["incus_version"], "7.0.2");
    // Told another line, the fake answers as that one.
    let told = FakeIncus::builder()
        .state(seed)
        .incus_version(IncusLine::V6_0)
        .start()
        .await
        .unwrap();
    assert_eq!(
        server(&told).await["environment"]["server_version"],
        "6.0.4"
    );
    assert_eq!(told.dump_state()["incus_version"], "6.0.4");
}

#[tokio::test]
async fn a_seed_read_from_a_line_the_fake_does_not_imitate_is_refused_with_the_lines_it_does() {
    let err = FakeIncus::builder()
        .state(json!({"incus_version": "7.3.0"}))
        .start()
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("Incus 7.3.0"), "{err}");
    assert!(err.contains("6.0 (6.0.4), 7.0 (7.0.2)"), "{err}");
    let err = FakeIncus::builder()
        .state(json!({"incus_version": 7}))
        .start()
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("incus_version"), "{err}");
}

#[tokio::test]
async fn serve_incus_version_refuses_a_line_it_does_not_imitate_naming_those_it_does() {
    let dir = tempfile::tempdir().unwrap();
    let out = tokio::process::Command::new(BIN)
        .arg("serve")
        .arg("--unix")
        .arg(dir.path().join("s"))
        .args(["--incus-version", "6.1"])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(
            "the fake does not imitate Incus \"6.1\"; it imitates 6.0 (6.0.4), 7.0 (7.0.2)"
        ),
        "{stderr}"
    );
    assert!(!dir.path().join("s").exists(), "nothing was served");
}

#[tokio::test]
async fn serve_incus_version_7_0_answers_as_7_0_2() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("incus.socket");
    let mut child = tokio::process::Command::new(BIN)
        .arg("serve")
        .arg("--unix")
        .arg(&socket)
        .args(["--incus-version", "7.0"])
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("ready in time")
        .unwrap()
        .expect("a ready line");
    let reply = common::unix_at(&socket, "GET", "/1.0", None, &[]).await;
    assert_eq!(reply.metadata()["environment"]["server_version"], "7.0.2");
    child.kill().await.unwrap();
}

#[tokio::test]
async fn a_create_of_a_taken_name_is_refused_before_the_operation_on_7_0() {
    let fake = fake_as(IncusLine::V7_0).await;
    launch(&fake, "c1", false).await;
    for source in [
        json!({"type": "image", "alias": "busybox"}),
        json!({"type": "none"}),
        json!({"type": "copy", "source": "c1"}),
    ] {
        let reply = call(
            &fake,
            "POST",
            "/1.0/instances",
            Some(json!({"name": "c1", "source": source})),
        )
        .await;
        assert_native_error(&reply, 500, "Instance \"c1\" already exists");
    }
}

#[tokio::test]
async fn a_create_of_a_taken_name_fails_in_the_operation_on_6_0() {
    let fake = fake_as(IncusLine::V6_0).await;
    launch(&fake, "c1", false).await;
    let body = json!({"name": "c1", "source": {"type": "image", "alias": "busybox"}});
    let accepted = call(&fake, "POST", "/1.0/instances", Some(body)).await;
    let done = wait(&fake, &accepted).await;
    assert!(
        done.json()["error"]
            .as_str()
            .unwrap()
            .contains("UNIQUE constraint failed"),
        "{}",
        done.json()
    );
}
