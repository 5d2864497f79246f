//! ExecInstance (contract stream:S01): websockets, stdin EOF, capture bounds, SIGKILL at the
//! bounds, and `running` when the exit is never observed.

use fake_incus::{Fault, Rule};

use super::*;
use crate::client::exec::{ExecStatus, CAPTURE_BYTES};
use crate::client::{ClientError, ExecRequest};

fn shell(line: &str, timeout_seconds: u64) -> ExecRequest {
    ExecRequest {
        command: vec!["sh".into(), "-c".into(), line.into()],
        timeout_seconds,
        ..ExecRequest::default()
    }
}

/// A client whose exec runs at most one second (stream_timeout 6 s minus the 5 s grace).
async fn short_exec_client(fake: &FakeIncus, max_stream_bytes: u64) -> Client {
    let connection = Connection::builder(Endpoint::unix(fake.unix_socket()))
        .stream_timeout(Duration::from_secs(6))
        .max_stream_bytes(max_stream_bytes)
        .build()
        .unwrap();
    Client::connect(connection).await.unwrap()
}

/// ExecInstance sends stdin then EOF and returns both streams and the exit code of the
/// operation. (The short sleep before exiting keeps clear of a fake-incus race that can drop
/// the last frames queued when a command exits at once.)
#[tokio::test(start_paused = true)]
async fn exec_instance_feeds_stdin_and_reports_output_and_exit_code() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let mut request = shell("cat; echo err >&2; sleep 0.2; exit 3", 10);
    request.stdin = b"hello\n".to_vec();
    let outcome = client.exec_instance(PROJECT, "c1", &request).await.unwrap();
    assert_eq!(outcome.status, ExecStatus::Completed);
    assert_eq!(outcome.exit_code, Some(3));
    let result = outcome.to_json();
    assert_eq!(result["stdout"]["data"], "hello\n");
    assert_eq!(result["stderr"]["data"], "err\n");
    assert_eq!(result["stdout"]["encoding"], "utf-8");
    assert_eq!(result["timeout_seconds"], 10);
    assert_eq!(result["operation"]["status"], "Success");
    assert!(!outcome.killed);

    let posts = fake.requests("POST", "/1.0/instances/c1/exec");
    let post = posts.first().expect("the exec request");
    let body: serde_json::Value = serde_json::from_str(&post.body).unwrap();
    assert_eq!(body["wait-for-websocket"], true);
    assert_eq!(body["interactive"], false);
    assert_eq!(body["record-output"], false);
    let sockets = fake.journal().iter().filter(|e| e.websocket).count();
    assert_eq!(sockets, 4, "control, 0, 1 and 2");
}

/// The first 64 KiB of each stream is kept; every byte is counted.
#[tokio::test(start_paused = true)]
async fn exec_capture_keeps_64_kib_per_stream_and_counts_the_rest() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let request = shell(
        "fake-flood stdout 100000; fake-flood stderr 70000 y; sleep 0.2",
        10,
    );
    let outcome = client.exec_instance(PROJECT, "c1", &request).await.unwrap();
    assert_eq!(outcome.status, ExecStatus::Completed);
    let result = outcome.to_json();
    assert_eq!(result["stdout"]["bytes"], 100_000);
    assert_eq!(result["stdout"]["captured_bytes"], CAPTURE_BYTES);
    assert_eq!(result["stdout"]["truncated"], true);
    assert_eq!(result["stderr"]["bytes"], 70_000);
    assert_eq!(result["stderr"]["captured_bytes"], CAPTURE_BYTES);
    assert_eq!(
        result["stderr"]["data"].as_str().unwrap(),
        "y".repeat(CAPTURE_BYTES)
    );
}

/// Output that is not UTF-8 is returned as base64.
#[tokio::test(start_paused = true)]
async fn exec_output_that_is_not_utf8_is_base64() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let request = shell("fake-bytes stdout ff fe 0a; sleep 0.2", 10);
    let outcome = client.exec_instance(PROJECT, "c1", &request).await.unwrap();
    let result = outcome.to_json();
    assert_eq!(result["stdout"]["encoding"], "base64");
    assert_eq!(result["stdout"]["data"], "//4K");
    assert_eq!(result["stdout"]["bytes"], 3);
}

/// At the duration bound SIGKILL is sent and the exit (137) observed: `timed_out`.
#[tokio::test(start_paused = true)]
async fn exec_at_the_duration_sends_sigkill_and_times_out() {
    let fake = fake().await;
    let client = short_exec_client(&fake, crate::client::DEFAULT_MAX_STREAM_BYTES).await;
    running_instance(&client, "c1").await;
    let request = ExecRequest {
        command: vec!["fake-hang".into()],
        timeout_seconds: 30,
        ..ExecRequest::default()
    };
    let outcome = client.exec_instance(PROJECT, "c1", &request).await.unwrap();
    assert_eq!(outcome.status, ExecStatus::TimedOut);
    assert_eq!(outcome.timeout_seconds, 1, "capped at stream_timeout - 5 s");
    assert_eq!(outcome.exit_code, Some(137));
    assert!(outcome.killed);
    assert!(outcome.duration >= Duration::from_secs(1));
    assert!(outcome.duration < Duration::from_secs(6));
}

/// The duration bound starts when the command starts, not before the websocket set-up: with
/// 1 s of set-up per socket (4 s in all), `sleep 0.5` under a 3 s bound completes.
#[tokio::test(start_paused = true)]
async fn exec_duration_bound_starts_when_the_command_starts_not_before_websocket_set_up() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let _slow = fake
        .add_rule(Rule::new("GET", "/1.0/operations/*/websocket").fault(Fault::Delay { ms: 1000 }));
    let began = tokio::time::Instant::now();
    let outcome = client
        .exec_instance(PROJECT, "c1", &shell("sleep 0.5", 3))
        .await
        .unwrap();
    let elapsed = began.elapsed();
    assert_eq!(outcome.status, ExecStatus::Completed, "{outcome:?}");
    assert_eq!(outcome.exit_code, Some(0));
    assert_eq!(outcome.timeout_seconds, 3);
    assert!(!outcome.killed);
    assert!(
        elapsed >= Duration::from_secs(4),
        "the set-up was slow: {elapsed:?}"
    );
    assert!(
        outcome.duration >= Duration::from_millis(500) && outcome.duration < Duration::from_secs(3),
        "duration_ms counts from the command's start: {:?}",
        outcome.duration
    );
    let sockets = fake.journal().iter().filter(|e| e.websocket).count();
    assert_eq!(sockets, 4, "control, 0, 1 and 2");
}

/// Past the stream total (here half of max_stream_bytes = 32 KiB) SIGKILL is sent:
/// `output_limited`.
#[tokio::test(start_paused = true)]
async fn exec_past_the_stream_total_is_output_limited() {
    let fake = fake().await;
    let client = short_exec_client(&fake, 64 * 1024).await;
    running_instance(&client, "c1").await;
    let request = shell("fake-flood stdout forever", 1);
    let outcome = client.exec_instance(PROJECT, "c1", &request).await.unwrap();
    assert_eq!(outcome.status, ExecStatus::OutputLimited);
    assert_eq!(outcome.exit_code, Some(137));
    assert!(outcome.stdout.bytes() > 32 * 1024);
}

/// When the exit is never observed (the command ignores SIGKILL) the result is `running`
/// with the operation identity.
#[tokio::test(start_paused = true)]
async fn exec_whose_exit_is_never_observed_is_running() {
    let fake = fake().await;
    let client = short_exec_client(&fake, crate::client::DEFAULT_MAX_STREAM_BYTES).await;
    running_instance(&client, "c1").await;
    let _rule =
        fake.add_rule(Rule::new("POST", "/1.0/instances/*/exec").fault(Fault::ExecIgnoreSigkill));
    let request = ExecRequest {
        command: vec!["fake-hang".into()],
        timeout_seconds: 1,
        ..ExecRequest::default()
    };
    let outcome = client.exec_instance(PROJECT, "c1", &request).await.unwrap();
    assert_eq!(outcome.status, ExecStatus::Running);
    assert_eq!(outcome.exit_code, None);
    assert!(outcome.killed);
    let id = outcome
        .operation_id
        .clone()
        .expect("the operation identity");
    assert_eq!(outcome.to_json()["operation_id"], id.as_str());
    assert!(outcome.duration < Duration::from_secs(8), "1 s + 5 s grace");
}

/// A stdout websocket dropped before its end-of-stream frame does not look like no output:
/// the stream says it was cut (`truncated`), while stderr, which ended normally, does not.
#[tokio::test(start_paused = true)]
async fn exec_stdout_dropped_before_eof_is_truncated_not_empty() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let _drop = fake.add_rule(
        Rule::new("POST", "/1.0/instances/*/exec")
            .fault(Fault::ExecDropWebsocket { fd: "1".into() }),
    );
    let request = shell("echo lost; echo kept >&2; sleep 0.2", 10);
    let outcome = client.exec_instance(PROJECT, "c1", &request).await.unwrap();
    assert_eq!(outcome.status, ExecStatus::Completed, "{outcome:?}");
    assert_eq!(outcome.exit_code, Some(0));
    let result = outcome.to_json();
    assert_eq!(result["stdout"]["bytes"], 0);
    assert_eq!(result["stdout"]["truncated"], true, "{}", result["stdout"]);
    assert_eq!(result["stderr"]["data"], "kept\n");
    assert_eq!(result["stderr"]["truncated"], false);
}

/// Exec on a stopped instance is a native rejection before any operation.
#[tokio::test(start_paused = true)]
async fn exec_on_a_stopped_instance_is_a_native_error() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    let body = json!({"name": "c1", "source": {"type": "image", "alias": "busybox"}});
    let accepted = client.create_instance(PROJECT, &body).await.unwrap();
    finish(&client, &accepted.id).await;
    let result = client.exec_instance(PROJECT, "c1", &shell("true", 5)).await;
    assert!(
        matches!(
            result,
            Err(ClientError::Native {
                http_status: 400,
                ..
            })
        ),
        "{result:?}"
    );
}

/// Exec works the same over mutual HTTPS (websockets over TLS with the pinned certificate).
#[tokio::test(start_paused = true)]
async fn exec_over_https_uses_the_pinned_tls_websockets() {
    let fake = fake().await;
    let client = Client::connect(https_connection(&fake)).await.unwrap();
    running_instance(&client, "c1").await;
    let outcome = client
        .exec_instance(PROJECT, "c1", &shell("echo over-tls; sleep 0.2", 5))
        .await
        .unwrap();
    assert_eq!(outcome.status, ExecStatus::Completed);
    assert_eq!(outcome.to_json()["stdout"]["data"], "over-tls\n");
    assert!(fake
        .journal()
        .iter()
        .filter(|e| e.websocket)
        .all(|e| e.listener == fake_incus::Listener::Https));
}

/// Safety, results say what was observed: an exec whose operation fails without an exit code
/// (here `disk full`; on a real Incus, for example, websockets that never connected) ended, and
/// its exit was never observed. It is `failed` with Incus's error as the reason, no exit code and
/// the final operation, never `completed`. The exec request is sent once.
#[tokio::test(start_paused = true)]
async fn exec_whose_operation_fails_without_an_exit_code_is_failed_with_the_reason() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let _fail = fake.add_rule(Rule::new("POST", "/1.0/instances/*/exec").fault(
        Fault::OperationFail {
            message: "disk full".into(),
        },
    ));
    let outcome = client
        .exec_instance(PROJECT, "c1", &shell("echo hi", 10))
        .await
        .unwrap();
    assert_eq!(outcome.status, ExecStatus::Failed, "{outcome:?}");
    assert_eq!(outcome.exit_code, None);
    assert_eq!(outcome.reason.as_deref(), Some("disk full"));
    let result = outcome.to_json();
    assert_eq!(result["status"], "failed");
    assert_eq!(result["reason"], "disk full");
    assert_eq!(result["operation"]["status"], "Failure", "{result}");
    assert!(!outcome.killed, "nothing to kill: the end was observed");
    assert_eq!(fake.requests("POST", "/1.0/instances/c1/exec").len(), 1);
}

/// The same failure when the operation cannot be read back after the wait reported it: a
/// standalone server's wait answered the operation's own failure, so the exec is still
/// `failed` with that reason; `operation` is absent rather than the object that said `Running`.
#[tokio::test(start_paused = true)]
async fn exec_whose_failure_the_wait_reports_is_failed_when_the_read_back_stalls() {
    let fake = fake().await;
    let connection = Connection::builder(Endpoint::unix(fake.unix_socket()))
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap();
    let client = Client::connect(connection).await.unwrap();
    running_instance(&client, "c1").await;
    let _fail = fake.add_rule(Rule::new("POST", "/1.0/instances/*/exec").fault(
        Fault::OperationFail {
            message: "disk full".into(),
        },
    ));
    let _stall = fake.add_rule(Rule::new("GET", "/1.0/operations/*").fault(Fault::Stall));
    let outcome = client
        .exec_instance(PROJECT, "c1", &shell("echo hi", 10))
        .await
        .unwrap();
    assert_eq!(outcome.status, ExecStatus::Failed, "{outcome:?}");
    assert_eq!(outcome.exit_code, None);
    assert_eq!(outcome.reason.as_deref(), Some("disk full"));
    assert_eq!(outcome.operation, None);
    assert!(outcome.operation_id.is_some());
    assert!(!outcome.killed);
}

/// An operation that outlasts its command (it ends 2.5 s after the command exited with 3, past
/// the 1 s duration): `SIGKILL` is sent at the duration, but the exit observed is the command's
/// own 3, not the kill's 137. SIGKILL cannot be caught, so the command ended on its own: the
/// exec is `completed` with exit code 3, not `timed_out`.
#[tokio::test(start_paused = true)]
async fn exec_whose_operation_outlasts_the_command_is_completed_with_its_own_exit_code() {
    let fake = fake().await;
    let client = short_exec_client(&fake, crate::client::DEFAULT_MAX_STREAM_BYTES).await;
    running_instance(&client, "c1").await;
    let _late = fake.add_rule(
        Rule::new("POST", "/1.0/instances/*/exec").fault(Fault::ExecExitAfter { ms: 2500 }),
    );
    let outcome = client
        .exec_instance(PROJECT, "c1", &shell("echo hi; exit 3", 30))
        .await
        .unwrap();
    assert_eq!(outcome.status, ExecStatus::Completed, "{outcome:?}");
    assert_eq!(outcome.exit_code, Some(3));
    assert!(
        outcome.killed,
        "the duration passed before the end was seen"
    );
    assert_eq!(outcome.to_json()["stdout"]["data"], "hi\n");
}

/// An operation that finishes only while a wait on it is in flight: the exec waits on its
/// operation from the start, beside the output, so the end is observed and the command's own
/// exit reported; it is never `running`.
#[tokio::test(start_paused = true)]
async fn exec_whose_operation_finishes_during_the_wait_is_observed_not_running() {
    let fake = fake().await;
    let client = short_exec_client(&fake, crate::client::DEFAULT_MAX_STREAM_BYTES).await;
    running_instance(&client, "c1").await;
    let _during = fake.add_rule(
        Rule::new("POST", "/1.0/instances/*/exec").fault(Fault::OperationFinishDuringWait),
    );
    let outcome = client
        .exec_instance(PROJECT, "c1", &shell("echo hi; exit 4", 30))
        .await
        .unwrap();
    assert_eq!(outcome.status, ExecStatus::Completed, "{outcome:?}");
    assert_eq!(outcome.exit_code, Some(4));
    assert!(!outcome.killed);
    assert_eq!(outcome.to_json()["stdout"]["data"], "hi\n");
}

/// A wait that breaks (reset) while the command runs observed nothing: the exec asks again
/// rather than killing the command before its duration, and reports the exit it then sees.
#[tokio::test(start_paused = true)]
async fn exec_whose_first_wait_breaks_is_not_killed_and_completes() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let _broken = fake.add_rule(
        Rule::new("GET", "/1.0/operations/*/wait")
            .nth(1)
            .fault(Fault::Reset),
    );
    let outcome = client
        .exec_instance(PROJECT, "c1", &shell("sleep 0.3; echo done", 10))
        .await
        .unwrap();
    assert_eq!(outcome.status, ExecStatus::Completed, "{outcome:?}");
    assert_eq!(outcome.exit_code, Some(0));
    assert!(
        !outcome.killed,
        "a broken read is no reason to kill the command"
    );
    assert_eq!(outcome.to_json()["stdout"]["data"], "done\n");
}

/// Incus 7.0 made exec operations cancellable: the running exec's operation says
/// `may_cancel: true`, and a cancel (`DELETE /1.0/operations/{id}`, from anyone allowed to) closes
/// the command's control channel, which kills it; Incus then records no exit code. The exec whose
/// operation is cancelled that way is `failed`, its reason the operation's `Cancelled` and no exit
/// code: the end was observed, an exit was not. It is reported when the cancel lands, not at the
/// duration bound, and the exec sends nothing of its own (no `SIGKILL`, one exec request). Here the
/// fake's operation fault makes the exec operation cancellable, as 7.0's are.
#[tokio::test]
async fn exec_whose_operation_is_cancelled_is_failed_without_an_exit_code() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let _cancellable = fake
        .add_rule(Rule::new("POST", "/1.0/instances/*/exec").fault(Fault::OperationCancellable));
    let request = shell("sleep 30", 30);
    let exec = client.exec_instance(PROJECT, "c1", &request);
    let cancel = async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        loop {
            let operations = client.get_operations(PROJECT).await.unwrap();
            let running = operations.iter().find(|op| {
                op.value["description"] == "Executing command" && op.value["status"] == "Running"
            });
            // Once the exec's four websockets are attached: the command runs.
            let attached = fake.journal().iter().filter(|e| e.websocket).count() == 4;
            if let Some(op) = running.filter(|_| attached) {
                assert_eq!(op.value["may_cancel"], true, "{}", op.value);
                let id = op.value["id"].as_str().unwrap().to_owned();
                client.delete_operation(PROJECT, &id).await.unwrap();
                return id;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "no running exec operation with its streams attached within 5 s"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    };
    let (outcome, cancelled) = tokio::join!(exec, cancel);
    let outcome = outcome.unwrap();
    assert_eq!(outcome.status, ExecStatus::Failed, "{outcome:?}");
    assert_eq!(outcome.exit_code, None);
    assert_eq!(outcome.reason.as_deref(), Some("Cancelled"));
    assert_eq!(outcome.operation_id.as_deref(), Some(cancelled.as_str()));
    assert!(
        !outcome.killed,
        "the command was ended by the cancel, not by the exec"
    );
    assert!(
        outcome.duration < Duration::from_secs(10),
        "reported when the cancel landed, not at the 30 s bound: {:?}",
        outcome.duration
    );
    let result = outcome.to_json();
    assert_eq!(result["status"], "failed");
    assert_eq!(result["exit_code"], serde_json::Value::Null);
    assert_eq!(result["operation"]["status"], "Cancelled", "{result}");
    assert_eq!(fake.requests("POST", "/1.0/instances/c1/exec").len(), 1);
}
