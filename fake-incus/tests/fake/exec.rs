//! Exec over the websockets, as the real protocol (reference §11): fds and secrets, keepalive
//! pings, binary data, empty text frames as EOF, control messages, exit codes and the connect
//! deadline.

use crate::common;

use common::{call, completed, drain, launch, unix, wait, ws_unix};
use fake_incus::{assert_native_error, FakeIncus, Fault, Rule};
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

async fn running() -> FakeIncus {
    let fake = crate::common::builder().start().await.unwrap();
    launch(&fake, "c1", true).await;
    fake
}

struct Exec {
    id: String,
    fds: Value,
    reply: common::Reply,
}

async fn exec(fake: &FakeIncus, command: &[&str], interactive: bool) -> Exec {
    let body = json!({"command": command, "wait-for-websocket": true, "interactive": interactive,
        "environment": {"TERM": "xterm"}, "width": 0, "height": 0, "record-output": false,
        "user": 0, "group": 0, "cwd": ""});
    let reply = call(fake, "POST", "/1.0/instances/c1/exec", Some(body)).await;
    assert_eq!(reply.status(), 202, "{}", reply.json());
    Exec {
        id: reply.metadata()["id"].as_str().unwrap().into(),
        fds: reply.metadata()["metadata"]["fds"].clone(),
        reply,
    }
}

impl Exec {
    fn secret(&self, fd: &str) -> String {
        self.fds[fd].as_str().unwrap().to_string()
    }
}

async fn final_op(fake: &FakeIncus, exec: &Exec) -> common::Reply {
    wait(fake, &exec.reply).await
}

#[tokio::test]
async fn exec_operation_lists_fds_with_64_hex_secrets() {
    let fake = running().await;
    let e = exec(&fake, &["echo", "hi"], false).await;
    let op = e.reply.metadata();
    assert_eq!(op["class"], "websocket");
    assert_eq!(op["description"], "Executing command");
    assert_eq!(op["resources"], json!({"instances": ["/1.0/instances/c1"]}));
    assert_eq!(op["may_cancel"], false);
    let meta = &op["metadata"];
    let keys: Vec<&String> = meta.as_object().unwrap().keys().collect();
    assert_eq!(keys, ["command", "environment", "fds", "interactive"]);
    assert_eq!(meta["environment"]["HOME"], "/root");
    assert_eq!(meta["environment"]["LANG"], "C.UTF-8");
    assert_eq!(meta["environment"]["TERM"], "xterm");
    let fds: Vec<&String> = meta["fds"].as_object().unwrap().keys().collect();
    assert_eq!(fds, ["0", "1", "2", "control"]);
    for secret in meta["fds"].as_object().unwrap().values() {
        let s = secret.as_str().unwrap();
        assert!(
            s.len() == 64
                && s.chars()
                    .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
    }
    assert_eq!(op["created_at"], op["updated_at"]);
}

#[tokio::test]
async fn exec_streams_stdout_then_empty_text_eof_and_reports_return() {
    let fake = running().await;
    let e = exec(&fake, &["echo", "hello"], false).await;
    let mut control = ws_unix(&fake, &e.id, &e.secret("control")).await;
    let mut stdin = ws_unix(&fake, &e.id, &e.secret("0")).await;
    let mut stdout = ws_unix(&fake, &e.id, &e.secret("1")).await;
    let mut stderr = ws_unix(&fake, &e.id, &e.secret("2")).await;
    let first = stdout.next().await.unwrap().unwrap();
    assert_eq!(
        first,
        Message::Ping(bytes::Bytes::from_static(b"keepalive")),
        "a keepalive ping comes first"
    );
    let ((out, texts, _), (err, err_texts, pings)) =
        tokio::join!(drain(&mut stdout), drain(&mut stderr));
    assert_eq!(out, b"hello\n");
    assert_eq!(texts, [""], "end of stream is one empty text frame");
    assert!(err.is_empty());
    assert_eq!((err_texts.len(), pings), (1, 1));
    let done = final_op(&fake, &e).await;
    assert_eq!(done.metadata()["status"], "Success");
    assert_eq!(done.metadata()["metadata"]["return"], 0);
    assert_eq!(
        done.metadata()["metadata"]["fds"],
        e.fds,
        "the other keys stay"
    );
    drain(&mut stdin).await;
    drain(&mut control).await;
}

#[tokio::test]
async fn exec_stdin_eof_is_an_empty_text_frame_and_non_zero_exit_is_success() {
    let fake = running().await;
    let e = exec(&fake, &["cat"], false).await;
    let mut stdin = ws_unix(&fake, &e.id, &e.secret("0")).await;
    let mut stdout = ws_unix(&fake, &e.id, &e.secret("1")).await;
    let _stderr = ws_unix(&fake, &e.id, &e.secret("2")).await;
    stdin
        .send(Message::Binary(bytes::Bytes::from_static(b"abc\n")))
        .await
        .unwrap();
    stdin
        .send(Message::Text(String::new().into()))
        .await
        .unwrap();
    let (out, texts, _) = drain(&mut stdout).await;
    assert_eq!((out.as_slice(), texts.len()), (&b"abc\n"[..], 1));
    assert_eq!(
        final_op(&fake, &e).await.metadata()["metadata"]["return"],
        0
    );

    let e = exec(&fake, &["sh", "-c", "exit 3"], false).await;
    let _sockets = [
        ws_unix(&fake, &e.id, &e.secret("0")).await,
        ws_unix(&fake, &e.id, &e.secret("1")).await,
        ws_unix(&fake, &e.id, &e.secret("2")).await,
    ];
    let done = final_op(&fake, &e).await;
    assert_eq!(
        (
            done.metadata()["status"].as_str(),
            done.metadata()["err"].as_str()
        ),
        (Some("Success"), Some(""))
    );
    assert_eq!(done.metadata()["metadata"]["return"], 3);
}

#[tokio::test]
async fn exec_control_signal_ends_with_128_plus_n_and_control_close_kills() {
    let fake = running().await;
    let e = exec(&fake, &["sleep", "30"], false).await;
    let mut control = ws_unix(&fake, &e.id, &e.secret("control")).await;
    let _io = [
        ws_unix(&fake, &e.id, &e.secret("0")).await,
        ws_unix(&fake, &e.id, &e.secret("1")).await,
        ws_unix(&fake, &e.id, &e.secret("2")).await,
    ];
    let resize = json!({"command": "window-resize", "args": {"width": "100", "height": "30"}});
    control
        .send(Message::Text(resize.to_string().into()))
        .await
        .unwrap();
    control
        .send(Message::Text("not json".into()))
        .await
        .unwrap();
    let signal = json!({"command": "signal", "args": null, "signal": 15});
    control
        .send(Message::Text(signal.to_string().into()))
        .await
        .unwrap();
    assert_eq!(
        final_op(&fake, &e).await.metadata()["metadata"]["return"],
        143
    );

    let e = exec(&fake, &["sleep", "30"], false).await;
    let mut control = ws_unix(&fake, &e.id, &e.secret("control")).await;
    let _io = [
        ws_unix(&fake, &e.id, &e.secret("0")).await,
        ws_unix(&fake, &e.id, &e.secret("1")).await,
        ws_unix(&fake, &e.id, &e.secret("2")).await,
    ];
    control.close(None).await.unwrap();
    assert_eq!(
        final_op(&fake, &e).await.metadata()["metadata"]["return"],
        137
    );
}

#[tokio::test]
async fn exec_sending_on_stdout_without_control_kills_the_command() {
    let fake = running().await;
    let e = exec(&fake, &["sleep", "30"], false).await;
    let _stdin = ws_unix(&fake, &e.id, &e.secret("0")).await;
    let mut stdout = ws_unix(&fake, &e.id, &e.secret("1")).await;
    let _stderr = ws_unix(&fake, &e.id, &e.secret("2")).await;
    stdout
        .send(Message::Binary(bytes::Bytes::from_static(b"x")))
        .await
        .unwrap();
    assert_eq!(
        final_op(&fake, &e).await.metadata()["metadata"]["return"],
        137
    );
}

#[tokio::test]
async fn exec_websockets_never_connected_fail_the_operation() {
    let fake = crate::common::builder()
        .exec_connect_timeout(Duration::from_millis(200))
        .start()
        .await
        .unwrap();
    launch(&fake, "c1", true).await;
    let e = exec(&fake, &["echo", "x"], false).await;
    let _stdout = ws_unix(&fake, &e.id, &e.secret("1")).await;
    let done = final_op(&fake, &e).await;
    assert_native_error(&done, 500, "Timed out waiting for websockets to connect");
    let op = call(&fake, "GET", &format!("/1.0/operations/{}", e.id), None).await;
    assert_eq!(op.metadata()["status"], "Failure");
    assert!(
        op.metadata()["metadata"].get("return").is_none(),
        "no return when nothing ran"
    );
}

#[tokio::test]
async fn exec_websocket_connection_errors_match_the_daemon() {
    let fake = running().await;
    let e = exec(&fake, &["sleep", "30"], false).await;
    let base = format!("/1.0/operations/{}/websocket", e.id);
    let bad = call(&fake, "GET", &format!("{base}?secret=00"), None).await;
    assert_native_error(&bad, 403, "Forbidden");
    let missing = call(&fake, "GET", &base, None).await;
    assert_native_error(&missing, 500, "missing secret");
    let unknown = "/1.0/operations/00000000-0000-4000-8000-000000000000/websocket";
    let r = call(&fake, "GET", unknown, None).await;
    assert_native_error(&r, 400, "Missing websocket secret");
    let r = call(&fake, "GET", &format!("{unknown}?secret=ab"), None).await;
    assert_native_error(&r, 404, "Operation not found");
    let plain = call(
        &fake,
        "GET",
        &format!("{base}?secret={}", e.secret("0")),
        None,
    )
    .await;
    assert_eq!(plain.status(), 400);
    assert!(plain.bytes().starts_with(b"Bad Request"));
    let mut first = ws_unix(&fake, &e.id, &e.secret("control")).await;
    let mut dup = ws_unix(&fake, &e.id, &e.secret("control")).await;
    let (data, texts, pings) = drain(&mut dup).await;
    assert!(
        data.is_empty() && texts.is_empty() && pings == 0,
        "a duplicate is dropped without any frame"
    );
    first.close(None).await.ok();
    let sig = call(&fake, "DELETE", &format!("/1.0/operations/{}", e.id), None).await;
    assert_eq!(sig.status(), 400);
}

#[tokio::test]
async fn exec_after_finish_refuses_connections_and_not_found_is_a_failure() {
    let fake = running().await;
    let e = exec(&fake, &["nope-command"], false).await;
    let _io = [
        ws_unix(&fake, &e.id, &e.secret("0")).await,
        ws_unix(&fake, &e.id, &e.secret("1")).await,
        ws_unix(&fake, &e.id, &e.secret("2")).await,
    ];
    let done = final_op(&fake, &e).await;
    assert_native_error(&done, 400, "Command not found");
    let op = call(&fake, "GET", &format!("/1.0/operations/{}", e.id), None).await;
    assert_eq!(
        (
            op.metadata()["status"].as_str(),
            op.metadata()["metadata"]["return"].as_i64()
        ),
        (Some("Failure"), Some(127))
    );
    let late = call(
        &fake,
        "GET",
        &format!(
            "/1.0/operations/{}/websocket?secret={}",
            e.id,
            e.secret("control")
        ),
        None,
    )
    .await;
    assert_native_error(&late, 500, "Only running operations can be connected");
}

#[tokio::test]
async fn exec_rejects_stopped_instances_and_bad_combinations() {
    let fake = crate::common::builder().start().await.unwrap();
    launch(&fake, "c1", false).await;
    let r = call(
        &fake,
        "POST",
        "/1.0/instances/c1/exec",
        Some(json!({"command": ["true"], "wait-for-websocket": true})),
    )
    .await;
    assert_native_error(&r, 400, "Instance is not running");
    let r = call(
        &fake,
        "POST",
        "/1.0/instances/nope/exec",
        Some(json!({"command": ["true"]})),
    )
    .await;
    assert_eq!(r.status(), 404);
    launch(&fake, "c2", true).await;
    let r = call(
        &fake,
        "POST",
        "/1.0/instances/c2/exec",
        Some(json!({"command": ["true"], "wait-for-websocket": true, "record-output": true})),
    )
    .await;
    assert_native_error(
        &r,
        400,
        "Cannot use \"record-output\" in combination with \"wait-for-websocket\"",
    );
}

#[tokio::test]
async fn exec_interactive_uses_one_pty_socket_and_waits_for_client_eof() {
    let fake = running().await;
    let e = exec(&fake, &["echo", "hi"], true).await;
    let fds: Vec<&String> = e.fds.as_object().unwrap().keys().collect();
    assert_eq!(fds, ["0", "control"]);
    let mut control = ws_unix(&fake, &e.id, &e.secret("control")).await;
    let mut pty = ws_unix(&fake, &e.id, &e.secret("0")).await;
    let mut out = Vec::new();
    loop {
        match pty.next().await.unwrap().unwrap() {
            Message::Binary(b) => out.extend_from_slice(&b),
            Message::Text(t) if t.is_empty() => break,
            _ => {}
        }
    }
    assert_eq!(out, b"hi\r\n", "PTY output uses CRLF");
    let still = call(
        &fake,
        "GET",
        &format!("/1.0/operations/{}/wait?timeout=0", e.id),
        None,
    )
    .await;
    assert_eq!(
        still.json()["error"],
        "context deadline exceeded",
        "running until the client ends fd 0"
    );
    pty.send(Message::Text(String::new().into())).await.unwrap();
    let done = final_op(&fake, &e).await;
    assert_eq!(done.metadata()["metadata"]["return"], 0);
    drain(&mut control).await;
}

#[tokio::test]
async fn exec_without_websockets_is_a_task_with_null_metadata() {
    let fake = running().await;
    let body = json!({"command": ["sh", "-c", "exit 7"], "wait-for-websocket": false});
    let reply = call(&fake, "POST", "/1.0/instances/c1/exec", Some(body)).await;
    let op = reply.metadata();
    assert_eq!(
        (op["class"].as_str(), &op["metadata"]),
        (Some("task"), &Value::Null)
    );
    assert_eq!(
        op["resources"],
        json!({"containers": ["/1.0/instances/c1"], "instances": ["/1.0/instances/c1"]})
    );
    let done = wait(&fake, &reply).await;
    assert_eq!(done.metadata()["metadata"], json!({"return": 7}));
}

/// Runs `sleep 30` with every websocket connected, sends SIGKILL over control and checks that the
/// command is still running a second later (the fault rule in place ignores it).
async fn sigkill_survived(fake: &FakeIncus) -> (Exec, common::UnixWs, [common::UnixWs; 3]) {
    let e = exec(fake, &["sleep", "30"], false).await;
    let mut control = ws_unix(fake, &e.id, &e.secret("control")).await;
    let io = [
        ws_unix(fake, &e.id, &e.secret("0")).await,
        ws_unix(fake, &e.id, &e.secret("1")).await,
        ws_unix(fake, &e.id, &e.secret("2")).await,
    ];
    let sigkill = json!({"command": "signal", "signal": 9}).to_string();
    control.send(Message::Text(sigkill.into())).await.unwrap();
    let wait = format!("/1.0/operations/{}/wait?timeout=1", e.id);
    let still = call(fake, "GET", &wait, None).await;
    assert_eq!(still.json()["error"], "context deadline exceeded");
    (e, control, io)
}

#[tokio::test]
async fn exec_fault_ignore_sigkill_keeps_the_command_running() {
    let fake = running().await;
    let _rule =
        fake.add_rule(Rule::new("POST", "/1.0/instances/*/exec").fault(Fault::ExecIgnoreSigkill));
    let (e, mut control, _io) = sigkill_survived(&fake).await;
    control
        .send(Message::Text(
            json!({"command": "signal", "signal": 15})
                .to_string()
                .into(),
        ))
        .await
        .unwrap();
    assert_eq!(
        final_op(&fake, &e).await.metadata()["metadata"]["return"],
        143
    );
}

#[tokio::test]
async fn exec_fault_ignore_first_sigkill_obeys_the_second() {
    let fake = running().await;
    let _rule = fake
        .add_rule(Rule::new("POST", "/1.0/instances/*/exec").fault(Fault::ExecIgnoreFirstSigkill));
    let (e, mut control, _io) = sigkill_survived(&fake).await;
    let sigkill = json!({"command": "signal", "signal": 9}).to_string();
    control.send(Message::Text(sigkill.into())).await.unwrap();
    assert_eq!(
        final_op(&fake, &e).await.metadata()["metadata"]["return"],
        137
    );
}

#[tokio::test]
async fn exec_fault_exit_after_delays_the_end() {
    let fake = running().await;
    let _rule = fake.add_rule(
        Rule::new("POST", "/1.0/instances/*/exec").fault(Fault::ExecExitAfter { ms: 400 }),
    );
    let e = exec(&fake, &["true"], false).await;
    let started = std::time::Instant::now();
    let _io = [
        ws_unix(&fake, &e.id, &e.secret("0")).await,
        ws_unix(&fake, &e.id, &e.secret("1")).await,
        ws_unix(&fake, &e.id, &e.secret("2")).await,
    ];
    assert_eq!(
        final_op(&fake, &e).await.metadata()["metadata"]["return"],
        0
    );
    assert!(started.elapsed() >= Duration::from_millis(400));
}

#[tokio::test]
async fn exec_fault_drop_websocket_closes_that_fd_at_once() {
    let fake = running().await;
    let _rule = fake.add_rule(
        Rule::new("POST", "/1.0/instances/*/exec")
            .fault(Fault::ExecDropWebsocket { fd: "1".into() }),
    );
    let e = exec(&fake, &["echo", "lost"], false).await;
    let _stdin = ws_unix(&fake, &e.id, &e.secret("0")).await;
    let mut stdout = ws_unix(&fake, &e.id, &e.secret("1")).await;
    let _stderr = ws_unix(&fake, &e.id, &e.secret("2")).await;
    let (data, texts, pings) = drain(&mut stdout).await;
    assert!(
        data.is_empty() && texts.is_empty() && pings == 0,
        "nothing arrives on the dropped socket"
    );
    assert_eq!(
        final_op(&fake, &e).await.metadata()["metadata"]["return"],
        0
    );
    let ws = fake.journal().iter().filter(|j| j.websocket).count();
    assert_eq!(ws, 3, "websocket connections are journaled");
}

#[tokio::test]
async fn exec_record_output_keeps_stdout_and_stderr_as_log_files() {
    let fake = running().await;
    let body = json!({"command": ["sh", "-c", "echo recorded-out; echo recorded-err >&2"], "wait-for-websocket": false, "record-output": true});
    let reply = call(&fake, "POST", "/1.0/instances/c1/exec", Some(body)).await;
    let id = reply.metadata()["id"].as_str().unwrap().to_string();
    let done = wait(&fake, &reply).await;
    let base = format!("/1.0/instances/c1/logs/exec-output/exec_{id}");
    assert_eq!(
        done.metadata()["metadata"],
        json!({"output": {"1": format!("{base}.stdout"), "2": format!("{base}.stderr")}, "return": 0})
    );
    let list = call(&fake, "GET", "/1.0/instances/c1/logs/exec-output", None).await;
    assert_eq!(
        list.metadata(),
        &json!([format!("{base}.stderr"), format!("{base}.stdout")])
    );
    let stdout = call(&fake, "GET", &format!("{base}.stdout"), None).await;
    assert_eq!(
        (stdout.status(), stdout.bytes().as_ref()),
        (200, &b"recorded-out\n"[..])
    );
    assert_eq!(
        stdout.header("content-type"),
        Some("application/octet-stream")
    );
    assert_eq!(
        call(&fake, "DELETE", &format!("{base}.stdout"), None)
            .await
            .metadata(),
        &json!({})
    );
    assert_eq!(
        call(&fake, "GET", &format!("{base}.stdout"), None)
            .await
            .status(),
        404
    );
}

#[tokio::test]
async fn the_journal_records_each_control_message_and_whether_its_signal_reached_the_command() {
    let fake = running().await;
    let _rule = fake
        .add_rule(Rule::new("POST", "/1.0/instances/*/exec").fault(Fault::ExecIgnoreFirstSigkill));
    let (e, mut control, _io) = sigkill_survived(&fake).await;
    let sigkill = json!({"command": "signal", "signal": 9}).to_string();
    control.send(Message::Text(sigkill.into())).await.unwrap();
    final_op(&fake, &e).await;
    let control_entry = fake
        .requests("GET", "/1.0/operations/*/websocket")
        .into_iter()
        .find(|entry| !entry.control.is_empty())
        .expect("the control websocket's entry holds its messages");
    let signals: Vec<_> = control_entry
        .control
        .iter()
        .map(|m| (m.signal, m.delivered))
        .collect();
    assert_eq!(signals, [(Some(9), false), (Some(9), true)]);
    assert_eq!(
        control_entry.signals_delivered(9),
        1,
        "one SIGKILL reached the command"
    );
}

#[tokio::test]
async fn operation_faults_apply_to_exec_operations() {
    let fake = running().await;
    let failing = fake.add_rule(Rule::new("POST", "/1.0/instances/*/exec").fault(
        Fault::OperationFail {
            message: "exec refused".into(),
        },
    ));
    let body = json!({"command": ["echo", "hi"], "wait-for-websocket": false});
    let accepted = call(&fake, "POST", "/1.0/instances/c1/exec", Some(body.clone())).await;
    let done = wait(&fake, &accepted).await;
    assert_eq!(done.json()["error"], "exec refused", "{}", done.json());
    drop(failing);
    let _never = fake
        .add_rule(Rule::new("POST", "/1.0/instances/*/exec").fault(Fault::OperationCancellable));
    let accepted = call(&fake, "POST", "/1.0/instances/c1/exec", Some(body)).await;
    assert_eq!(accepted.metadata()["may_cancel"], true);
    let id = accepted.metadata()["id"].as_str().unwrap().to_string();
    let still = call(
        &fake,
        "GET",
        &format!("/1.0/operations/{id}/wait?timeout=0"),
        None,
    )
    .await;
    assert_eq!(still.json()["error"], "context deadline exceeded");
    let cancel = call(&fake, "DELETE", &format!("/1.0/operations/{id}"), None).await;
    assert_eq!(cancel.status(), 200, "{}", cancel.json());
    let op = call(&fake, "GET", &format!("/1.0/operations/{id}"), None).await;
    assert_eq!(op.metadata()["status"], "Cancelled");
}

#[tokio::test]
async fn operation_fail_on_a_websocket_exec_fails_once_the_sockets_connect_and_runs_nothing() {
    let fake = running().await;
    let _rule = fake.add_rule(Rule::new("POST", "/1.0/instances/*/exec").fault(
        Fault::OperationFail {
            message: "no exec".into(),
        },
    ));
    let e = exec(&fake, &["echo", "hi"], false).await;
    let _io = [
        ws_unix(&fake, &e.id, &e.secret("0")).await,
        ws_unix(&fake, &e.id, &e.secret("1")).await,
        ws_unix(&fake, &e.id, &e.secret("2")).await,
    ];
    let done = final_op(&fake, &e).await;
    assert_eq!(done.json()["error"], "no exec", "{}", done.json());
}

/// Starts `yes` as a task-mode exec that records its output; returns the 202 reply.
async fn endless_task(fake: &FakeIncus) -> common::Reply {
    let body = json!({"command": ["yes"], "wait-for-websocket": false, "record-output": true});
    let reply = call(fake, "POST", "/1.0/instances/c1/exec", Some(body)).await;
    assert_eq!(reply.status(), 202, "{}", reply.json());
    reply
}

/// CPU time (user + system, clock ticks) this test process has used so far.
fn own_cpu_ticks() -> u64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Fails if the process keeps burning CPU (an endless command still running) for a second.
async fn assert_nothing_runs(what: &str) {
    let before = own_cpu_ticks();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let used = own_cpu_ticks() - before;
    assert!(used < 30, "{what}: {used} ticks of CPU in one second");
}

#[tokio::test]
async fn task_exec_of_an_endless_command_is_killed_by_a_forced_stop_with_137() {
    let fake = running().await;
    let reply = endless_task(&fake).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let stop = call(
        &fake,
        "PUT",
        "/1.0/instances/c1/state",
        Some(json!({"action": "stop", "force": true})),
    )
    .await;
    completed(&fake, &stop).await;
    let done = wait(&fake, &reply).await;
    assert_eq!(
        (
            done.metadata()["status"].as_str(),
            &done.metadata()["metadata"]["return"]
        ),
        (Some("Success"), &json!(137)),
        "{}",
        done.json()
    );
    let stdout = done.metadata()["metadata"]["output"]["1"].as_str().unwrap();
    let recorded = call(&fake, "GET", stdout, None).await;
    assert!(
        recorded.bytes().starts_with(b"y\ny\n"),
        "the output so far is kept"
    );
    assert_nothing_runs("after the forced stop").await;
}

#[tokio::test]
async fn task_exec_of_an_endless_command_is_stopped_by_a_reset() {
    let fake = running().await;
    endless_task(&fake).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    fake.reset();
    assert_nothing_runs("after the reset").await;
}

#[tokio::test]
async fn recorded_exec_output_survives_neither_a_reset_nor_deletion_and_recreation() {
    let fake = running().await;
    let list = "/1.0/instances/c1/logs/exec-output";
    let record =
        json!({"command": ["echo", "kept"], "wait-for-websocket": false, "record-output": true});
    let reply = call(
        &fake,
        "POST",
        "/1.0/instances/c1/exec",
        Some(record.clone()),
    )
    .await;
    wait(&fake, &reply).await;
    assert_eq!(
        call(&fake, "GET", list, None)
            .await
            .metadata()
            .as_array()
            .unwrap()
            .len(),
        2
    );
    fake.reset();
    launch(&fake, "c1", true).await;
    assert_eq!(
        call(&fake, "GET", list, None).await.metadata(),
        &json!([]),
        "after a reset"
    );
    let reply = call(&fake, "POST", "/1.0/instances/c1/exec", Some(record)).await;
    wait(&fake, &reply).await;
    let stop = call(
        &fake,
        "PUT",
        "/1.0/instances/c1/state",
        Some(json!({"action": "stop", "force": true})),
    )
    .await;
    wait(&fake, &stop).await;
    let delete = call(&fake, "DELETE", "/1.0/instances/c1", None).await;
    wait(&fake, &delete).await;
    launch(&fake, "c1", true).await;
    assert_eq!(
        call(&fake, "GET", list, None).await.metadata(),
        &json!([]),
        "after deletion and re-creation"
    );
}

/// A task-mode exec of `command` in c1, waited for; the operation as `GET` shows it.
async fn task(fake: &FakeIncus, body: Value) -> (String, Value) {
    let reply = call(fake, "POST", "/1.0/instances/c1/exec", Some(body)).await;
    assert_eq!(reply.status(), 202, "{}", reply.json());
    let id = reply.metadata()["id"].as_str().unwrap().to_string();
    wait(fake, &reply).await;
    let op = call(fake, "GET", &format!("/1.0/operations/{id}"), None).await;
    (id, op.metadata().clone())
}

#[tokio::test]
async fn exec_of_a_command_the_image_lacks_fails_with_command_not_found_and_127() {
    let fake = running().await;
    for command in [
        json!(["pwd"]),
        json!(["hostname"]),
        json!(["sh", "-c", "exit 127"]),
    ] {
        let (_, op) = task(
            &fake,
            json!({"command": command, "wait-for-websocket": false}),
        )
        .await;
        assert_eq!(
            (&op["status"], &op["err"], &op["metadata"]),
            (
                &json!("Failure"),
                &json!("Command not found"),
                &json!({"return": 127})
            ),
            "{command}"
        );
    }
    let (_, op) = task(
        &fake,
        json!({"command": ["sh", "-c", "exit 126"], "wait-for-websocket": false}),
    )
    .await;
    assert_eq!(
        (&op["err"], &op["metadata"]["return"]),
        (&json!("Command not executable"), &json!(126))
    );
}

#[tokio::test]
async fn record_output_of_a_command_not_found_keeps_both_empty_log_files() {
    let fake = running().await;
    let (id, op) = task(
        &fake,
        json!({"command": ["pwd"], "wait-for-websocket": false, "record-output": true}),
    )
    .await;
    let base = format!("/1.0/instances/c1/logs/exec-output/exec_{id}");
    assert_eq!(op["status"], "Failure");
    assert_eq!(op["err"], "Command not found");
    assert_eq!(
        op["metadata"],
        json!({"output": {"1": format!("{base}.stdout"), "2": format!("{base}.stderr")}, "return": 127})
    );
    for stream in ["stdout", "stderr"] {
        let file = call(&fake, "GET", &format!("{base}.{stream}"), None).await;
        assert_eq!((file.status(), file.bytes().len()), (200, 0), "{stream}");
    }
}

#[tokio::test]
async fn exec_with_a_cwd_that_does_not_exist_starts_in_the_root() {
    let fake = running().await;
    let (id, op) = task(
        &fake,
        json!({"command": ["sh", "-c", "pwd"], "wait-for-websocket": false,
            "record-output": true, "cwd": "/nonexistent"}),
    )
    .await;
    assert_eq!(op["metadata"]["return"], 0);
    let out = format!("/1.0/instances/c1/logs/exec-output/exec_{id}.stdout");
    assert_eq!(
        call(&fake, "GET", &out, None).await.bytes().as_ref(),
        b"/\n"
    );
}

#[tokio::test]
async fn an_instance_runs_the_executables_its_seeded_image_declares() {
    let mut state = crate::common::builder().start().await.unwrap().dump_state();
    let image = &mut state["images"][0];
    image["executables"] = json!(["/bin/sh", "/usr/bin/pwd"]);
    let fake = crate::common::builder().state(state).start().await.unwrap();
    launch(&fake, "c1", true).await;
    let run = |command: Value| {
        let fake = &fake;
        async move {
            let (id, op) = task(
                fake,
                json!({"command": command, "wait-for-websocket": false, "record-output": true}),
            )
            .await;
            let out = format!("/1.0/instances/c1/logs/exec-output/exec_{id}.stdout");
            let stdout = call(fake, "GET", &out, None).await.bytes().clone();
            (op["metadata"]["return"].clone(), stdout)
        }
    };
    assert_eq!(
        run(json!(["pwd"])).await,
        (json!(0), "/\n".into()),
        "no /root"
    );
    assert_eq!(run(json!(["ls"])).await.0, json!(127));
    assert_eq!(
        run(json!(["sh", "-c", "ls"])).await.0,
        json!(127),
        "not busybox"
    );
}

/// Connects the three standard fds; also returns the time just before the last one connected.
async fn attach_all(fake: &FakeIncus, e: &Exec) -> ([common::UnixWs; 3], std::time::Instant) {
    let stdin = ws_unix(fake, &e.id, &e.secret("0")).await;
    let stdout = ws_unix(fake, &e.id, &e.secret("1")).await;
    let before_last = std::time::Instant::now();
    let stderr = ws_unix(fake, &e.id, &e.secret("2")).await;
    ([stdin, stdout, stderr], before_last)
}

/// An exec websocket upgraded by hand and never written to afterwards (no pong, no close), so
/// that what the server does to the connection shows as is.
async fn raw_ws(fake: &FakeIncus, op_id: &str, secret: &str) -> (tokio::net::UnixStream, Vec<u8>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::UnixStream::connect(fake.unix_socket())
        .await
        .unwrap();
    let request = format!(
        "GET /1.0/operations/{op_id}/websocket?secret={secret} HTTP/1.1\r\nHost: unix.socket\r\n\
         Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\
         Sec-WebSocket-Version: 13\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut head = Vec::new();
    let mut buf = [0u8; 4096];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "closed during the upgrade");
        head.extend_from_slice(&buf[..n]);
    }
    let at = head.windows(4).position(|w| w == b"\r\n\r\n").unwrap() + 4;
    assert!(
        head.starts_with(b"HTTP/1.1 101"),
        "{:?}",
        String::from_utf8_lossy(&head)
    );
    let rest = head.split_off(at);
    (stream, rest)
}

/// Reads until the server closes; returns how long after the empty text frame (end of stream)
/// arrived the connection closed.
async fn close_after_eof(mut stream: tokio::net::UnixStream, mut seen: Vec<u8>) -> Duration {
    use tokio::io::AsyncReadExt;
    let eof_frame = |bytes: &[u8]| bytes.windows(2).any(|w| w == [0x81, 0x00]);
    let mut eof_at = eof_frame(&seen).then(std::time::Instant::now);
    let mut buf = [0u8; 4096];
    let read = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    seen.extend_from_slice(&buf[..n]);
                    if eof_at.is_none() && eof_frame(&seen) {
                        eof_at = Some(std::time::Instant::now());
                    }
                }
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), read)
        .await
        .expect("the server closes the socket");
    eof_at.expect("an end-of-stream frame came").elapsed()
}

#[tokio::test]
async fn a_websocket_exec_starts_its_command_after_the_configured_delay() {
    let fake = crate::common::builder()
        .exec_start_delay(Duration::from_millis(150))
        .start()
        .await
        .unwrap();
    launch(&fake, "c1", true).await;
    let e = exec(&fake, &["echo", "late"], false).await;
    let ([_stdin, mut stdout, _stderr], before_last) = attach_all(&fake, &e).await;
    let first_data = loop {
        match stdout.next().await {
            Some(Ok(Message::Binary(data))) => break data,
            Some(Ok(_)) => continue,
            other => panic!("no output: {other:?}"),
        }
    };
    assert_eq!(first_data.as_ref(), b"late\n");
    assert!(
        before_last.elapsed() >= Duration::from_millis(150),
        "output came {:?} after the last websocket connected",
        before_last.elapsed()
    );
    assert_eq!(
        fake_incus::DEFAULT_EXEC_START_DELAY,
        Duration::from_millis(25)
    );
}

#[tokio::test]
async fn a_websocket_exec_closes_its_sockets_right_after_the_end_of_stream_frames() {
    let fake = running().await;
    let e = exec(&fake, &["sh", "-c", "echo out; echo err >&2"], false).await;
    let _stdin = ws_unix(&fake, &e.id, &e.secret("0")).await;
    let (stdout, out_seen) = raw_ws(&fake, &e.id, &e.secret("1")).await;
    let (stderr, err_seen) = raw_ws(&fake, &e.id, &e.secret("2")).await;
    let (out, err) = tokio::join!(
        close_after_eof(stdout, out_seen),
        close_after_eof(stderr, err_seen)
    );
    for (fd, after) in [("stdout", out), ("stderr", err)] {
        assert!(
            after < Duration::from_millis(250),
            "{fd} closed {after:?} after its end-of-stream frame (the daemon: at once)"
        );
    }
}

/// Runs a recorded task exec on `instance`; its return and its stdout.
async fn recorded(fake: &FakeIncus, instance: &str, body: Value) -> (Value, Vec<u8>) {
    let mut body = body;
    body["wait-for-websocket"] = json!(false);
    body["record-output"] = json!(true);
    let path = format!("/1.0/instances/{instance}/exec");
    let reply = unix(fake, "POST", &path, Some(body)).await;
    assert_eq!(reply.status(), 202, "{}", reply.json());
    let id = reply.metadata()["id"].as_str().unwrap().to_string();
    wait(fake, &reply).await;
    let op = unix(fake, "GET", &format!("/1.0/operations/{id}"), None).await;
    let out = format!("/1.0/instances/{instance}/logs/exec-output/exec_{id}.stdout");
    let stdout = unix(fake, "GET", &out, None).await.bytes().to_vec();
    (op.metadata()["metadata"]["return"].clone(), stdout)
}

async fn push(fake: &FakeIncus, instance: &str, path: &str, content: &[u8], mode: &str) {
    let uri = format!("/1.0/instances/{instance}/files?path={path}");
    let headers = [
        ("content-type", "application/octet-stream"),
        ("x-incus-mode", mode),
    ];
    let reply = common::unix_bytes(fake, "POST", &uri, content.to_vec(), &headers).await;
    assert_eq!(reply.status(), 200, "{}", reply.json());
}

#[tokio::test]
async fn exec_runs_a_script_pushed_through_the_file_api() {
    let fake = running().await;
    push(
        &fake,
        "c1",
        "/root/hello.sh",
        b"#!/bin/sh\necho hello \"$1\"\nexit 3\n",
        "0755",
    )
    .await;
    let ran = recorded(&fake, "c1", json!({"command": ["/root/hello.sh", "you"]})).await;
    assert_eq!(ran, (json!(3), b"hello you\n".to_vec()));
    let relative = recorded(
        &fake,
        "c1",
        json!({"command": ["sh", "-c", "./hello.sh me"]}),
    )
    .await;
    assert_eq!(relative, (json!(3), b"hello me\n".to_vec()));
}

#[tokio::test]
async fn a_file_exec_writes_is_read_back_through_the_file_api() {
    let fake = running().await;
    let ran = recorded(
        &fake,
        "c1",
        json!({"command": ["sh", "-c", "echo x > /tmp/out; echo y >> /tmp/out"]}),
    )
    .await;
    assert_eq!(ran.0, json!(0));
    let file = unix(&fake, "GET", "/1.0/instances/c1/files?path=/tmp/out", None).await;
    assert_eq!(
        (file.status(), file.bytes().as_ref()),
        (200, b"x\ny\n".as_ref())
    );
}

#[tokio::test]
async fn exec_starts_in_the_users_home_and_honours_cwd_as_the_daemon_does() {
    let fake = running().await;
    let home = recorded(
        &fake,
        "c1",
        json!({"command": ["sh", "-c", "pwd; echo $HOME"]}),
    )
    .await;
    assert_eq!(home, (json!(0), b"/root\n/root\n".to_vec()));
    let tmp = recorded(
        &fake,
        "c1",
        json!({"command": ["sh", "-c", "pwd"], "cwd": "/tmp"}),
    )
    .await;
    assert_eq!(tmp, (json!(0), b"/tmp\n".to_vec()));
    let listing = recorded(&fake, "c1", json!({"command": ["ls", "/"]})).await;
    assert_eq!(
        listing,
        (
            json!(0),
            b"bin\ndev\netc\nproc\nroot\nsbin\nsys\ntmp\n".to_vec()
        )
    );
}

#[tokio::test]
async fn executing_a_directory_is_command_not_executable_126() {
    let fake = running().await;
    let (_, op) = task(
        &fake,
        json!({"command": ["/tmp"], "wait-for-websocket": false}),
    )
    .await;
    assert_eq!(
        (op["err"].as_str(), &op["metadata"]["return"]),
        (Some("Command not executable"), &json!(126))
    );
}

#[tokio::test]
async fn the_guiding_session_of_tools_makes_the_directory_with_the_umask() {
    let fake = running().await;
    let line = "umask 77 && mkdir -p \"$(echo ~/.tmp)\" && echo ok=$(pwd)";
    let ran = recorded(&fake, "c1", json!({"command": ["sh", "-c", line]})).await;
    assert_eq!(ran, (json!(0), b"ok=/root\n".to_vec()));
    let dir = unix(
        &fake,
        "GET",
        "/1.0/instances/c1/files?path=/root/.tmp",
        None,
    )
    .await;
    assert_eq!(
        (dir.status(), dir.header("x-incus-mode")),
        (200, Some("0700"))
    );
}

#[tokio::test]
async fn the_busybox_images_own_files_are_in_its_instances() {
    let fake = running().await;
    let ran = recorded(&fake, "c1", json!({"command": ["cat", "/etc/inittab"]})).await;
    assert_eq!(
        ran,
        (
            json!(0),
            b"::sysinit:/bin/true\n::respawn:/bin/sleep 100000\n".to_vec()
        )
    );
}

#[tokio::test]
async fn an_imported_images_rootfs_becomes_its_instances_files() {
    let fake = running().await;
    let body = crate::tarball::tarball(&[
        (
            "metadata.yaml",
            b"architecture: x86_64\ncreation_date: 1700000000\nproperties:\n  os: probe\n",
        ),
        ("rootfs/", b""),
        ("rootfs/bin/", b""),
        ("rootfs/bin/busybox", b"\x7fELF"),
        ("rootfs/root/", b""),
        ("rootfs/etc/", b""),
        ("rootfs/etc/motd", b"welcome\n"),
    ]);
    let headers = [("content-type", "application/octet-stream")];
    let accepted = common::unix_bytes(&fake, "POST", "/1.0/images", body, &headers).await;
    let done = wait(&fake, &accepted).await;
    let fingerprint = done.metadata()["metadata"]["fingerprint"]
        .as_str()
        .unwrap()
        .to_string();
    let create = json!({"name": "c2", "source": {"type": "image", "fingerprint": fingerprint}, "start": true});
    let created = unix(&fake, "POST", "/1.0/instances", Some(create)).await;
    completed(&fake, &created).await;
    let ran = recorded(
        &fake,
        "c2",
        json!({"command": ["/bin/busybox", "cat", "/etc/motd"]}),
    )
    .await;
    assert_eq!(ran, (json!(0), b"welcome\n".to_vec()));
    let file = unix(&fake, "GET", "/1.0/instances/c2/files?path=/etc/motd", None).await;
    assert_eq!(file.bytes().as_ref(), b"welcome\n");
    // The other instance keeps the busybox test image's files.
    let other = unix(&fake, "GET", "/1.0/instances/c1/files?path=/etc/motd", None).await;
    assert_eq!(other.status(), 404);
}

/// The load test's size: `EXEC_LOAD_SESSIONS` sessions in all (32 by default), at most
/// `EXEC_LOAD_CONCURRENCY` at once (16, the reported load), small enough for `cargo test` on
/// two cores.
fn load_size() -> (usize, usize) {
    let var = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(default)
    };
    (
        var("EXEC_LOAD_SESSIONS", 32),
        var("EXEC_LOAD_CONCURRENCY", 16).max(1),
    )
}

/// Connects one exec fd's websocket; what went wrong otherwise.
async fn try_ws(fake: &FakeIncus, e: &Exec, fd: &str) -> Result<common::UnixWs, String> {
    let stream = tokio::net::UnixStream::connect(fake.unix_socket())
        .await
        .map_err(|err| format!("fd {fd}: connect: {err}"))?;
    let url = format!(
        "ws://unix.socket/1.0/operations/{}/websocket?secret={}",
        e.id,
        e.secret(fd)
    );
    tokio_tungstenite::client_async(url, stream)
        .await
        .map(|(ws, _)| ws)
        .map_err(|err| format!("fd {fd}: upgrade: {err}"))
}

/// What one output stream delivered to a client: its bytes, or how it broke.
async fn read_to_eof(fd: &str, ws: &mut common::UnixWs) -> Result<Vec<u8>, String> {
    let mut data = Vec::new();
    loop {
        match tokio::time::timeout(Duration::from_secs(10), ws.next()).await {
            Err(_) => return Err(format!("fd {fd}: no end of stream within 10 s")),
            Ok(Some(Ok(Message::Binary(bytes)))) => data.extend_from_slice(&bytes),
            Ok(Some(Ok(Message::Text(text)))) if text.is_empty() => return Ok(data),
            Ok(Some(Ok(Message::Ping(_) | Message::Pong(_)))) => {}
            Ok(Some(Ok(other))) => return Err(format!("fd {fd}: unexpected {other:?}")),
            Ok(Some(Err(err))) => return Err(format!("fd {fd}: {err} after {} bytes", data.len())),
            Ok(None) => return Err(format!("fd {fd}: closed before its end of stream")),
        }
    }
}

/// One session of a client that is slow, as a loaded client is: it connects `control`, `0`,
/// `1`, `2` (the official client's order), sees the operation end, and only then reads its
/// output and sends its stdin's end, as a client that reads late does. Returns what broke.
async fn late_reading_session(fake: &FakeIncus, n: usize) -> Result<(), String> {
    let payload = format!("session-{n}-").repeat(64);
    let script = format!("echo {payload}; echo err-{n} >&2; exit {}", n % 7);
    let e = exec(fake, &["sh", "-c", &script], false).await;
    let _control = try_ws(fake, &e, "control").await?;
    let mut stdin = try_ws(fake, &e, "0").await?;
    let mut stdout = try_ws(fake, &e, "1").await?;
    let mut stderr = try_ws(fake, &e, "2").await?;
    let done = final_op(fake, &e).await;
    let op = done.metadata();
    if op["status"] != "Success" || op["metadata"]["return"] != json!(n % 7) {
        return Err(format!("operation ended as {op}"));
    }
    let out = read_to_eof("1", &mut stdout).await?;
    let err = read_to_eof("2", &mut stderr).await?;
    if out != format!("{payload}\n").as_bytes() || err != format!("err-{n}\n").as_bytes() {
        return Err(format!(
            "output differs: stdout {} bytes, stderr {:?}",
            out.len(),
            String::from_utf8_lossy(&err)
        ));
    }
    stdin
        .send(Message::text(""))
        .await
        .map_err(|err| format!("fd 0: the end of stdin could not be sent: {err}"))
}

/// Exec under load: a loaded client reads its websockets late, after the command has ended and
/// the fake has sent everything. Every session the fake accepted still delivers its whole output
/// and exit code, with no broken pipe (the daemon keeps every session it accepted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_accepted_exec_session_delivers_its_whole_output_to_a_client_that_reads_late() {
    let fake = running().await;
    let (sessions, concurrency) = load_size();
    let started = std::time::Instant::now();
    let results: Vec<Result<(), String>> = futures_util::stream::iter(0..sessions)
        .map(|n| late_reading_session(&fake, n))
        .buffer_unordered(concurrency)
        .collect()
        .await;
    let failures: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    eprintln!(
        "{sessions} late-reading exec sessions, {concurrency} at once, in {:?}: {} failed",
        started.elapsed(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {sessions} sessions broke: {failures:#?}",
        failures.len()
    );
}
