//! The `fake-incus serve` binary: ready line, seed state, rule script, control socket, and a
//! clean exit on SIGTERM that removes its sockets.

use crate::common;

use common::unix_at;
use fake_incus::assert_native_error;
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, BufReader};

const BIN: &str = env!("CARGO_BIN_EXE_fake-incus");

#[tokio::test]
async fn serve_help_describes_every_option() {
    let out = tokio::process::Command::new(BIN)
        .args(["serve", "--help"])
        .output()
        .await
        .unwrap();
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    for flag in [
        "--unix",
        "--https",
        "--tls-dir",
        "--trust",
        "--state",
        "--script",
        "--control",
        "--exec-start-delay-ms",
    ] {
        assert!(help.contains(flag), "missing {flag} in:\n{help}");
    }
}

#[tokio::test]
async fn serve_prints_a_ready_line_serves_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().unwrap();
    let path = |name: &str| -> PathBuf { dir.path().join(name) };
    std::fs::write(
        path("state.json"),
        json!({"instances": [{"name": "seeded", "status": "Running"}]}).to_string(),
    )
    .unwrap();
    let rules = json!([{"method": "GET", "path": "/1.0/networks", "fault": {"kind": "error", "status": 503, "message": "scripted"}}]);
    std::fs::write(path("rules.json"), rules.to_string()).unwrap();
    let mut child = tokio::process::Command::new(BIN)
        .arg("serve")
        .arg("--unix")
        .arg(path("incus.socket"))
        .args(["--https", "127.0.0.1:0"])
        .arg("--tls-dir")
        .arg(path("tls"))
        .arg("--control")
        .arg(path("control.socket"))
        .arg("--state")
        .arg(path("state.json"))
        .arg("--script")
        .arg(path("rules.json"))
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("ready in time")
        .unwrap()
        .unwrap();
    let ready: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(ready["unix_socket"], path("incus.socket").to_str().unwrap());
    assert!(
        !ready["https_address"].as_str().unwrap().ends_with(":0"),
        "the real port is reported"
    );
    for key in ["server_cert", "client_cert", "client_key"] {
        assert!(
            PathBuf::from(ready[key].as_str().unwrap()).is_file(),
            "{key}"
        );
    }
    let socket = path("incus.socket");
    let control = path("control.socket");

    let seeded = unix_at(&socket, "GET", "/1.0/instances", None, &[]).await;
    assert_eq!(seeded.json()["metadata"], json!(["/1.0/instances/seeded"]));
    let scripted = unix_at(&socket, "GET", "/1.0/networks", None, &[]).await;
    assert_native_error(&scripted, 503, "scripted");

    let rule = json!({"path": "/1.0/profiles", "fault": {"kind": "error", "status": 500, "message": "via control"}});
    let added = unix_at(&control, "POST", "/rules", Some(rule), &[]).await;
    assert_eq!(
        (added.status(), added.json()),
        (200, &json!({"installed": 1}))
    );
    assert_eq!(
        unix_at(&socket, "GET", "/1.0/profiles", None, &[])
            .await
            .status(),
        500
    );
    let listed = unix_at(&control, "GET", "/rules", None, &[]).await;
    assert_eq!(listed.json().as_array().unwrap().len(), 2);
    let invalid = unix_at(
        &control,
        "POST",
        "/rules",
        Some(json!({"path": "/x", "which": {"nth": 0}, "fault": {"kind": "stall"}})),
        &[],
    )
    .await;
    assert_eq!(invalid.status(), 400);
    assert!(invalid.json()["error"].as_str().unwrap().contains("nth"));
    assert_eq!(
        unix_at(&control, "DELETE", "/rules", None, &[])
            .await
            .status(),
        200
    );
    assert_eq!(
        unix_at(&socket, "GET", "/1.0/profiles", None, &[])
            .await
            .status(),
        200
    );

    let journal = unix_at(&control, "GET", "/journal", None, &[]).await;
    let paths: Vec<&str> = journal.json()["entries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["path"].as_str().unwrap())
        .collect();
    assert_eq!(
        paths,
        [
            "/1.0/instances",
            "/1.0/networks",
            "/1.0/profiles",
            "/1.0/profiles"
        ]
    );
    assert_eq!(journal.json()["dropped"], 0);
    let last = journal.json()["last_seq"].as_u64().unwrap();
    let newer = unix_at(
        &control,
        "GET",
        &format!("/journal?since={}", last - 1),
        None,
        &[],
    )
    .await;
    assert_eq!(
        newer.json()["entries"].as_array().map(Vec::len),
        Some(1),
        "paging: only the entries after since"
    );
    assert_eq!(newer.json()["entries"][0]["seq"].as_u64(), Some(last));
    let state = unix_at(&control, "GET", "/state", None, &[]).await;
    assert_eq!(state.json()["instances"][0]["name"], "seeded");
    let mut replaced = state.json().clone();
    replaced["instances"] = json!([]);
    assert_eq!(
        unix_at(&control, "PUT", "/state", Some(replaced), &[])
            .await
            .status(),
        200
    );
    assert_eq!(
        unix_at(&socket, "GET", "/1.0/instances", None, &[])
            .await
            .json()["metadata"],
        json!([])
    );
    assert_eq!(
        unix_at(&control, "POST", "/reset", None, &[])
            .await
            .status(),
        200
    );
    assert_eq!(
        unix_at(&socket, "GET", "/1.0/instances", None, &[])
            .await
            .json()["metadata"],
        json!(["/1.0/instances/seeded"])
    );
    assert_eq!(
        unix_at(&control, "GET", "/nope", None, &[]).await.status(),
        404
    );

    let pid = child.id().unwrap().to_string();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
        .await
        .expect("exits")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(!socket.exists() && !control.exists(), "sockets are removed");
}

#[tokio::test]
async fn serve_refuses_a_bad_rule_file_with_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rules.json"),
        "[{\"path\": \"/x\", \"fault\": {\"kind\": \"explode\"}}]",
    )
    .unwrap();
    let out = tokio::process::Command::new(BIN)
        .arg("serve")
        .arg("--unix")
        .arg(dir.path().join("s.sock"))
        .arg("--script")
        .arg(dir.path().join("rules.json"))
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("rules.json") && err.contains("explode"),
        "{err}"
    );
}

/// `--exec-start-delay-ms` holds a websocket exec's command back that long after its websockets
/// attached.
#[tokio::test]
async fn serve_exec_start_delay_flag_delays_the_command() {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state.json");
    std::fs::write(
        &state,
        json!({"instances": [{"name": "c1", "status": "Running"}]}).to_string(),
    )
    .unwrap();
    let socket = dir.path().join("incus.socket");
    let mut child = tokio::process::Command::new(BIN)
        .arg("serve")
        .arg("--unix")
        .arg(&socket)
        .arg("--state")
        .arg(&state)
        .args(["--exec-start-delay-ms", "300"])
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
    let body = json!({"command": ["echo", "hi"], "wait-for-websocket": true});
    let reply = unix_at(&socket, "POST", "/1.0/instances/c1/exec", Some(body), &[]).await;
    assert_eq!(reply.status(), 202, "{}", reply.json());
    let id = reply.json()["metadata"]["id"].as_str().unwrap().to_string();
    let fds = reply.json()["metadata"]["metadata"]["fds"].clone();
    let mut sockets = Vec::new();
    let mut before_last = std::time::Instant::now();
    for fd in ["0", "1", "2"] {
        before_last = std::time::Instant::now();
        let stream = tokio::net::UnixStream::connect(&socket).await.unwrap();
        let url = format!(
            "ws://unix.socket/1.0/operations/{id}/websocket?secret={}",
            fds[fd].as_str().unwrap()
        );
        let (ws, _) = tokio_tungstenite::client_async(url, stream).await.unwrap();
        sockets.push(ws);
    }
    let stdout = &mut sockets[1];
    let data = loop {
        match tokio::time::timeout(Duration::from_secs(10), stdout.next()).await {
            Ok(Some(Ok(Message::Binary(data)))) => break data,
            Ok(Some(Ok(_))) => continue,
            other => panic!("no output: {other:?}"),
        }
    };
    assert_eq!(data.as_ref(), b"hi\n");
    assert!(
        before_last.elapsed() >= Duration::from_millis(300),
        "output {:?} after the last websocket connected",
        before_last.elapsed()
    );
    child.kill().await.unwrap();
}
