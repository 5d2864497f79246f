//! The console (`POST /1.0/instances/{name}/console`, type `console`), as the daemon's for a
//! container: the operation and its two websockets, what is typed and what comes back, the
//! control socket, detach, a forced take-over and the daemon's refusals.

use crate::common;

use common::{call, change_state, launch, wait, ws_unix, UnixWs};
use fake_incus::{assert_native_error, FakeIncus, Request};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

/// A fake with a running busybox container `c1`.
async fn running() -> FakeIncus {
    let fake = FakeIncus::builder().start().await.expect("fake starts");
    launch(&fake, "c1", true).await;
    fake
}

/// Replaces the instance's `/etc/inittab` (what its init runs on the console).
async fn inittab(fake: &FakeIncus, content: &str) {
    let reply = fake
        .call(
            Request::post("/1.0/instances/c1/files?path=/etc/inittab")
                .header("content-type", "application/octet-stream")
                .body(content.as_bytes().to_vec()),
        )
        .await;
    assert_eq!(reply.status(), 200, "{}", reply.json());
}

/// An attached console: the operation's answer and its two sockets.
struct Console {
    accepted: common::Reply,
    terminal: UnixWs,
    control: UnixWs,
}

async fn attach(fake: &FakeIncus, body: Value) -> Console {
    let accepted = call(fake, "POST", "/1.0/instances/c1/console", Some(body)).await;
    assert_eq!(accepted.status(), 202, "{}", accepted.json());
    let op = accepted.metadata();
    let id = op["id"].as_str().expect("id").to_owned();
    let secret = |fd: &str| {
        op["metadata"]["fds"][fd]
            .as_str()
            .expect("secret")
            .to_owned()
    };
    // As `incus console` does: control first, then the terminal.
    let control = ws_unix(fake, &id, &secret("control")).await;
    let terminal = ws_unix(fake, &id, &secret("0")).await;
    Console {
        accepted,
        terminal,
        control,
    }
}

impl Console {
    async fn typed(&mut self, text: &str) {
        self.terminal
            .send(Message::Binary(bytes::Bytes::copy_from_slice(
                text.as_bytes(),
            )))
            .await
            .expect("the console reads");
    }

    /// What the terminal shows until `wanted` appears (pings skipped); panics after 10 s.
    async fn shown_until(&mut self, wanted: &str) -> String {
        let mut shown = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while !String::from_utf8_lossy(&shown).contains(wanted) {
            let next = tokio::time::timeout_at(deadline, self.terminal.next()).await;
            match next {
                Ok(Some(Ok(Message::Binary(data)))) => shown.extend_from_slice(&data),
                Ok(Some(Ok(_))) => {}
                other => panic!(
                    "{wanted:?} never shown ({other:?}); shown: {:?}",
                    String::from_utf8_lossy(&shown)
                ),
            }
        }
        String::from_utf8_lossy(&shown).into_owned()
    }

    /// Detaches as `incus console` does (ctrl+a q): a close frame on control, then its close.
    async fn detach(mut self, fake: &FakeIncus) -> common::Reply {
        let _ = self.control.close(None).await;
        let done = wait(fake, &self.accepted).await;
        drop(self.terminal);
        done
    }
}

#[tokio::test]
async fn console_post_creates_a_websocket_operation_with_a_terminal_and_a_control_fd() {
    let fake = running().await;
    let accepted = call(
        &fake,
        "POST",
        "/1.0/instances/c1/console",
        Some(json!({"width": 80, "height": 24, "type": "console"})),
    )
    .await;
    assert_eq!(accepted.status(), 202, "{}", accepted.json());
    let op = accepted.metadata();
    assert_eq!(
        (
            &op["class"],
            &op["description"],
            &op["status"],
            &op["may_cancel"]
        ),
        (
            &json!("websocket"),
            &json!("Showing console"),
            &json!("Running"),
            &json!(true)
        )
    );
    assert_eq!(op["resources"], json!({"instances": ["/1.0/instances/c1"]}));
    let meta_keys: Vec<&String> = op["metadata"]
        .as_object()
        .expect("metadata")
        .keys()
        .collect();
    assert_eq!(meta_keys, ["fds"]);
    let fds: Vec<&String> = op["metadata"]["fds"]
        .as_object()
        .expect("fds")
        .keys()
        .collect();
    assert_eq!(fds, ["0", "control"]);
}

#[tokio::test]
async fn what_is_typed_on_the_busybox_images_console_is_echoed_and_nothing_answers() {
    let fake = running().await;
    let mut console = attach(&fake, json!({"type": "console"})).await;
    console.typed("\r").await;
    console.typed("echo hi\r").await;
    let shown = console.shown_until("echo hi\r\r\r\n").await;
    assert_eq!(
        shown, "\r\r\r\necho hi\r\r\r\n",
        "as on the daemon: the image's init runs only `sleep` on the console"
    );
    let done = console.detach(&fake).await;
    assert_eq!(done.metadata()["status"], "Success", "{}", done.json());
    assert_eq!(done.metadata()["may_cancel"], false);
}

#[tokio::test]
async fn a_shell_on_the_console_runs_what_is_typed_on_the_instances_files() {
    let fake = running().await;
    inittab(&fake, "::sysinit:/bin/true\n::respawn:-/bin/sh\n").await;
    let mut console = attach(&fake, json!({})).await;
    console.typed("\r").await;
    console
        .typed("echo hi-$((1+2)) > /tmp/out; cat /tmp/out\r")
        .await;
    let shown = console.shown_until("hi-3\r\r\r\n/ # \x1b[6n").await;
    assert!(
        shown.starts_with("\r\r\r\n/ # \x1b[6necho hi-$((1+2)) > /tmp/out; cat /tmp/out\r\r\r\n"),
        "the prompt after Enter, the echo of the line, then its output: {shown:?}"
    );
    console.typed("cd /tmp\r").await;
    console.shown_until("/tmp # ").await;
    console.detach(&fake).await;
    let pulled = call(&fake, "GET", "/1.0/instances/c1/files?path=/tmp/out", None).await;
    assert_eq!(
        &pulled.bytes()[..],
        b"hi-3\n",
        "the console's shell wrote the instance's file"
    );
}

#[tokio::test]
async fn the_control_socket_takes_window_resizes_and_the_journal_keeps_them() {
    let fake = running().await;
    let mut console = attach(&fake, json!({"width": 80, "height": 24})).await;
    let resize = json!({"command": "window-resize", "args": {"width": "100", "height": "30"}});
    console
        .control
        .send(Message::Text(resize.to_string().into()))
        .await
        .expect("control accepts");
    // The console still works after it.
    console.typed("x\r").await;
    console.shown_until("x\r\r\r\n").await;
    console.detach(&fake).await;
    let entry = fake
        .requests("GET", "/1.0/operations/*/websocket")
        .into_iter()
        .find(|entry| !entry.control.is_empty())
        .expect("the control socket's entry holds its messages");
    assert_eq!(entry.control[0].message, resize.to_string());
}

#[tokio::test]
async fn closing_the_terminal_socket_ends_the_console_successfully() {
    let fake = running().await;
    let mut console = attach(&fake, json!({})).await;
    console
        .terminal
        .close(None)
        .await
        .expect("close frame sent");
    let done = wait(&fake, &console.accepted).await;
    assert_eq!(done.metadata()["status"], "Success", "{}", done.json());
}

#[tokio::test]
async fn a_second_console_is_refused_unless_forced_which_cancels_the_first() {
    let fake = running().await;
    let first = call(&fake, "POST", "/1.0/instances/c1/console", Some(json!({}))).await;
    assert_eq!(first.status(), 202);
    let second = call(&fake, "POST", "/1.0/instances/c1/console", Some(json!({}))).await;
    assert_native_error(
        &second,
        500,
        "This console is already connected. Force is required to take it over.",
    );
    let forced = call(
        &fake,
        "POST",
        "/1.0/instances/c1/console",
        Some(json!({"force": true})),
    )
    .await;
    assert_eq!(forced.status(), 202, "{}", forced.json());
    let was = call(&fake, "GET", first.operation().expect("url"), None).await;
    assert_eq!(was.metadata()["status"], "Cancelled");
    assert_eq!(was.metadata()["may_cancel"], false);
}

#[tokio::test]
async fn the_daemons_refusals_come_in_its_order_with_its_texts() {
    let fake = running().await;
    launch(&fake, "off", false).await;
    let post = |name: &'static str, body: &'static str| {
        let fake = &fake;
        async move {
            fake.call(
                Request::post(&format!("/1.0/instances/{name}/console"))
                    .header("content-type", "application/json")
                    .body(body.as_bytes().to_vec()),
            )
            .await
        }
    };
    let cases = [
        ("c1", "", 400, "unexpected end of JSON input"),
        ("c1", "[1]", 400, "json: cannot unmarshal array into Go value of type api.InstanceConsolePost"),
        ("c1", r#"{"width":"x"}"#, 400, "json: cannot unmarshal string into Go struct field InstanceConsolePost.width of type int"),
        ("nope", r#"{"type":"bogus"}"#, 400, "Unknown console type \"bogus\""),
        ("nope", "{}", 404, "Failed to fetch instance \"nope\" in project \"default\": Instance not found"),
        ("c1", r#"{"type":"vga"}"#, 400, "VGA console is only supported by virtual machines"),
        ("off", "{}", 400, "Instance is not running"),
    ];
    for (name, body, status, text) in cases {
        assert_native_error(&post(name, body).await, status, text);
    }
    let frozen = change_state(&fake, "c1", json!({"action": "freeze"})).await;
    wait(&fake, &frozen).await;
    assert_native_error(&post("c1", "{}").await, 400, "Instance is frozen");
}
