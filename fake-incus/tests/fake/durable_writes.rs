//! Under `--state-dir`, what SFTP and exec write into an instance is on disk before the client
//! learns it was done: the SFTP status of the change, the end of an exec's output streams. The
//! fake is killed (SIGKILL) right after that answer and restarted: the change is there.

use crate::persistence::{send, start};
use fake_incus::Request;
use futures_util::StreamExt;
use serde_json::json;
use std::path::Path;
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::UnixStream;
use tokio_tungstenite::tungstenite::Message;

/// Creates the (stopped) busybox instance `c1`.
async fn instance(socket: &Path) {
    let body = json!({"name": "c1", "source": {"type": "image", "alias": "busybox"}});
    let created = send(socket, Request::post("/1.0/instances").json(&body))
        .await
        .expect("answered");
    let operation = created.operation().expect("an operation").to_owned();
    let done = send(socket, Request::get(&format!("{operation}/wait")))
        .await
        .expect("answered");
    assert_eq!(done.metadata()["status"], "Success", "{}", done.json());
}

/// The content of `path` in `c1` after a restart (`None`: not there).
async fn file_after_restart(dir: &Path, path: &str) -> Option<(String, Vec<u8>)> {
    let mut child = start(dir, &[]).await.expect("restarts");
    let socket = dir.join("incus.socket");
    let file = send(
        &socket,
        Request::get(&format!("/1.0/instances/c1/files?path={path}")),
    )
    .await
    .expect("answered");
    child.kill().await.expect("killed");
    (file.status() == 200).then(|| {
        let kind = file.header("x-incus-type").unwrap_or_default().to_owned();
        (kind, file.bytes().to_vec())
    })
}

/// An SFTP session on `c1` over the Unix socket (`GET …/sftp` with `Upgrade: sftp`).
async fn sftp(socket: &Path) -> russh_sftp::client::SftpSession {
    let stream = crate::common::sftp_upgrade(socket, "/1.0/instances/c1/sftp").await;
    russh_sftp::client::SftpSession::new(stream)
        .await
        .expect("an SFTP session")
}

#[tokio::test]
async fn an_sftp_write_and_mkdir_are_on_disk_before_their_status() {
    let dir = tempfile::tempdir().expect("temp dir");
    let socket = dir.path().join("incus.socket");
    let mut child = start(dir.path(), &[]).await.expect("starts");
    instance(&socket).await;
    let session = sftp(&socket).await;
    let mut file = session.create("/root/durable").await.expect("created");
    file.write_all(b"kept\n").await.expect("written");
    file.shutdown()
        .await
        .expect("closed: the write is answered");
    session.create_dir("/root/made").await.expect("made");
    child.kill().await.expect("killed right after the answers");
    assert_eq!(
        file_after_restart(dir.path(), "/root/durable").await,
        Some(("file".to_owned(), b"kept\n".to_vec()))
    );
    let made = file_after_restart(dir.path(), "/root/made").await;
    assert_eq!(made.map(|(kind, _)| kind), Some("directory".to_owned()));
}

#[tokio::test]
async fn what_an_exec_wrote_is_on_disk_before_its_output_ends() {
    let dir = tempfile::tempdir().expect("temp dir");
    let socket = dir.path().join("incus.socket");
    let mut child = start(dir.path(), &[]).await.expect("starts");
    instance(&socket).await;
    let state = json!({"action": "start"});
    let started = send(
        &socket,
        Request::put("/1.0/instances/c1/state").json(&state),
    )
    .await
    .expect("answered");
    let operation = started.operation().expect("an operation").to_owned();
    send(&socket, Request::get(&format!("{operation}/wait")))
        .await
        .expect("started");
    let body = json!({"command": ["/bin/sh", "-c", "echo e > /root/e; echo done"],
        "wait-for-websocket": true, "interactive": false});
    let accepted = send(&socket, Request::post("/1.0/instances/c1/exec").json(&body))
        .await
        .expect("answered");
    assert_eq!(accepted.status(), 202, "{}", accepted.json());
    let id = accepted.metadata()["id"].as_str().expect("id").to_owned();
    let fds = accepted.metadata()["metadata"]["fds"].clone();
    let mut sockets = Vec::new();
    for fd in ["0", "1", "2"] {
        let stream = UnixStream::connect(&socket).await.expect("connects");
        let secret = fds[fd].as_str().expect("secret");
        let url = format!("ws://unix.socket/1.0/operations/{id}/websocket?secret={secret}");
        let (ws, _) = tokio_tungstenite::client_async(url, stream)
            .await
            .expect("websocket");
        sockets.push(ws);
    }
    let stdout = &mut sockets[1];
    let mut out = Vec::new();
    loop {
        let next = tokio::time::timeout(Duration::from_secs(10), stdout.next()).await;
        match next.expect("output in time") {
            Some(Ok(Message::Binary(data))) => out.extend_from_slice(&data),
            Some(Ok(Message::Text(_))) | None => break,
            Some(Ok(_)) => {}
            Some(Err(e)) => panic!("stdout: {e}"),
        }
    }
    assert_eq!(out, b"done\n");
    child
        .kill()
        .await
        .expect("killed right after the end of the output");
    assert_eq!(
        file_after_restart(dir.path(), "/root/e").await,
        Some(("file".to_owned(), b"e\n".to_vec()))
    );
}
