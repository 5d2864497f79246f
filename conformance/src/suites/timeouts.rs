//! Timeouts: every native request is bounded by the connection's timeout, the effective wait is
//! min(wait_seconds, floor(timeout / 1000) - 1), the exec duration is capped at stream_timeout
//! minus the 5 s kill grace and starts when the command starts (not before the websocket
//! set-up), and the exec stream total is half of max_stream_bytes when smaller than 64 MiB.
//! These checks use the reference host on a connection with short bounds.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::exec_output::start_instance;
use super::host_target::scripted;
use super::session::Session;
use crate::runner::Check;
use crate::scenario::format::FakeSetup;
use crate::scenario::host::{ConnectionLimits, HostBehaviour};
use crate::scenario::target::TargetFactory;

/// The short connection: 3 s per request, 6 s streams (1 s exec cap), 1 MiB stream budget.
const TIMEOUT: Duration = Duration::from_secs(3);
const STREAM_TIMEOUT: Duration = Duration::from_secs(6);
const MAX_STREAM_BYTES: u64 = 1024 * 1024;

/// A stream timeout that leaves a 3 s exec duration (8 s minus the 5 s kill grace).
const THREE_SECOND_EXEC_STREAM_TIMEOUT: Duration = Duration::from_secs(8);

/// The reference host on the short connection (with `stream_timeout`).
fn short_connection(
    main: &Arc<dyn TargetFactory>,
    stream_timeout: Duration,
) -> Arc<dyn TargetFactory> {
    let millis = |d: Duration| u64::try_from(d.as_millis()).ok();
    let limits = ConnectionLimits {
        timeout_ms: millis(TIMEOUT),
        stream_timeout_ms: millis(stream_timeout),
        max_stream_bytes: Some(MAX_STREAM_BYTES),
    };
    scripted(main, HostBehaviour::default(), limits).0
}

fn check(
    main: &Arc<dyn TargetFactory>,
    name: &str,
    faults: Vec<Value>,
    body: impl FnOnce(&Session) -> Result<(), String> + Send + 'static,
) -> Check {
    check_with(main, name, STREAM_TIMEOUT, faults, body)
}

/// A check on the short connection with another stream timeout.
fn check_with(
    main: &Arc<dyn TargetFactory>,
    name: &str,
    stream_timeout: Duration,
    faults: Vec<Value>,
    body: impl FnOnce(&Session) -> Result<(), String> + Send + 'static,
) -> Check {
    let main = Arc::clone(main);
    Check::new(name, move || {
        let connection = short_connection(&main, stream_timeout);
        let session = Session::start(&connection, &FakeSetup { seed: None, faults })?;
        body(&session)
    })
}

fn expect(called: &super::session::Called, pointer: &str, value: Value) -> Result<(), String> {
    if called.result.pointer(pointer) == Some(&value) {
        called.schema_valid()
    } else {
        Err(called.failure(&format!("expected {pointer} = {value}")))
    }
}

/// The timeout checks: the reference host on a connection with short bounds (over the wire, the
/// bounds travel in the request's backend).
pub(crate) fn checks(main: &Arc<dyn TargetFactory>) -> Vec<Check> {
    let never_finish = json!({"method": "POST", "path": "/1.0/instances", "which": {"nth": 1}, "fault": {"kind": "operation_never_finish"}});
    let create =
        json!({"name": "web", "source": {"type": "image", "alias": "busybox"}, "wait_seconds": 60});
    let write = vec!["incus.write".to_owned()];
    let read = vec!["incus.read".to_owned()];
    let exec = vec!["incus.exec".to_owned()];
    vec![
        check(
            main,
            "timeouts::effective_wait::wait_is_capped_by_the_connection_timeout",
            vec![never_finish],
            {
                let (create, write) = (create.clone(), write.clone());
                move |session| {
                    let started = session.now();
                    let called = session.call("incus_instance_create", &write, create);
                    let took = session.now() - started;
                    expect(&called, "/status", json!("running"))?;
                    expect(&called, "/waited_seconds", json!(2))?;
                    // The 2 s wait, and at most one request bound for the create and the wait's
                    // own requests: a call that answers later waited past its effective wait.
                    if took > Duration::from_secs(2) + TIMEOUT {
                        return Err(called.failure(&format!(
                            "the call returned after {took:?}, past the 2 s effective wait and the 3 s request bound"
                        )));
                    }
                    Ok(())
                }
            },
        ),
        check(
            main,
            "timeouts::request_bound::stalled_read_is_a_timeout",
            vec![json!({"method": "GET", "path": "/1.0/instances", "fault": {"kind": "stall"}})],
            {
                let read = read.clone();
                move |session| {
                    session
                        .call("incus_instance_list", &read, json!({}))
                        .error_is("timeout")
                }
            },
        ),
        check(
            main,
            "mutation::statuses::stalled_mutation_is_uncertain",
            vec![json!({"method": "POST", "path": "/1.0/instances", "fault": {"kind": "stall"}})],
            {
                let (create, write) = (create.clone(), write.clone());
                move |session| {
                    expect(
                        &session.call("incus_instance_create", &write, create),
                        "/status",
                        json!("uncertain"),
                    )
                }
            },
        ),
        check(
            main,
            "timeouts::exec_duration_cap::exec_duration_is_capped_by_the_stream_timeout",
            vec![],
            {
                let exec = exec.clone();
                move |session| {
                    start_instance(session)?;
                    let called = session.call(
                        "incus_instance_exec",
                        &exec,
                        json!({"name": "web", "command": ["fake-hang"], "timeout_seconds": 300}),
                    );
                    expect(&called, "/timeout_seconds", json!(1))?;
                    expect(&called, "/status", json!("timed_out"))
                }
            },
        ),
        check(
            main,
            "exec::stream_total::exactly_the_total_is_not_output_limited",
            vec![],
            {
                let exec = exec.clone();
                move |session| stream_total_case(session, &exec, MAX_STREAM_BYTES / 2, "timed_out")
            },
        ),
        check(
            main,
            "exec::stream_total::one_byte_past_the_total_is_output_limited",
            vec![],
            {
                let exec = exec.clone();
                move |session| {
                    stream_total_case(session, &exec, MAX_STREAM_BYTES / 2 + 1, "output_limited")
                }
            },
        ),
        check(
            main,
            "exec::stream_total::passing_the_total_then_exiting_at_once_is_output_limited",
            vec![],
            {
                let exec = exec.clone();
                move |session| {
                    let total = MAX_STREAM_BYTES / 2 + 1;
                    let line = format!("fake-flood stdout {total}");
                    flood_case(session, &exec, &line, total, "output_limited")
                }
            },
        ),
        check(
            main,
            "exec::kill::sigkill_is_sent_at_the_duration",
            vec![],
            {
                let exec = exec.clone();
                move |session| {
                    let called = killed_at_one_second(session, &exec)?;
                    expect(&called, "/status", json!("timed_out"))?;
                    match called.result.get("duration_ms").and_then(Value::as_u64) {
                    Some(ms) if (1_000..2_000).contains(&ms) => Ok(()),
                    other => Err(called.failure(&format!(
                        "duration_ms is {other:?}: SIGKILL is due at the 1 s duration, so the exit is seen within the next second"
                    ))),
                }
                }
            },
        ),
        check(
            main,
            "exec::kill::sigkill_is_sent_once",
            vec![
                json!({"method": "POST", "path": "/1.0/instances/*/exec", "fault": {"kind": "exec_ignore_first_sigkill"}}),
            ],
            {
                let exec = exec.clone();
                move |session| {
                    let called = killed_at_one_second(session, &exec)?;
                    // The command ignores the first SIGKILL only: a second one would end it.
                    expect(&called, "/status", json!("running"))?;
                    expect(&called, "/exit_code", Value::Null)
                }
            },
        ),
        check_with(
            main,
            "exec::duration_bounds::the_duration_starts_when_the_command_starts",
            THREE_SECOND_EXEC_STREAM_TIMEOUT,
            vec![
                json!({"method": "GET", "path": "/1.0/operations/*/websocket", "fault": {"kind": "delay", "ms": 1000}}),
            ],
            {
                let exec = exec.clone();
                move |session| {
                    // 1 s of set-up for each of the 4 websockets, then a 0.5 s command under a
                    // 3 s bound: the set-up must not count against the command's time.
                    start_instance(session)?;
                    let input =
                        json!({"name": "web", "command": ["sleep", "0.5"], "timeout_seconds": 3});
                    let called = session.call("incus_instance_exec", &exec, input);
                    expect(&called, "/timeout_seconds", json!(3))?;
                    expect(&called, "/exit_code", json!(0))?;
                    expect(&called, "/status", json!("completed"))
                }
            },
        ),
        grace_check(
            main,
            "exec::kill::collection_has_5_s_to_observe_the_exit",
            4_000,
            "timed_out",
        ),
        grace_check(
            main,
            "exec::unobserved_exit::an_exit_after_the_5_s_grace_is_running",
            6_000,
            "running",
        ),
        check(
            main,
            "exec::stream_total::half_of_max_stream_bytes_bounds_the_streams",
            vec![],
            move |session| {
                start_instance(session)?;
                let called = session.call(
                    "incus_instance_exec",
                    &exec,
                    json!({"name": "web", "command": ["fake-flood", "stdout", "forever"]}),
                );
                expect(&called, "/status", json!("output_limited"))?;
                match called
                    .result
                    .pointer("/stdout/bytes")
                    .and_then(Value::as_u64)
                {
                    Some(bytes) if bytes >= MAX_STREAM_BYTES / 2 => Ok(()),
                    other => Err(called.failure(&format!(
                        "stdout.bytes is {other:?}, expected at least {}",
                        MAX_STREAM_BYTES / 2
                    ))),
                }
            },
        ),
    ]
}

/// Writes `total` bytes, split over stdout and stderr, then sleeps: only the stream total,
/// counted over both streams, can end the command before the duration.
fn stream_total_case(
    session: &Session,
    exec: &[String],
    total: u64,
    status: &str,
) -> Result<(), String> {
    let stdout = total / 2;
    let line = format!(
        "fake-flood stdout {stdout}; fake-flood stderr {}; sleep 600",
        total - stdout
    );
    flood_case(session, exec, &line, total, status)
}

/// Runs `line` under `sh -c`; expects `status` and exactly `total` bytes over both streams.
fn flood_case(
    session: &Session,
    exec: &[String],
    line: &str,
    total: u64,
    status: &str,
) -> Result<(), String> {
    start_instance(session)?;
    let input = json!({"name": "web", "command": ["sh", "-c", line]});
    let called = session.call("incus_instance_exec", exec, input);
    expect(&called, "/status", json!(status))?;
    let seen: u64 = ["/stdout/bytes", "/stderr/bytes"]
        .iter()
        .filter_map(|pointer| called.result.pointer(pointer).and_then(Value::as_u64))
        .sum();
    if seen == total {
        Ok(())
    } else {
        Err(called.failure(&format!(
            "the streams carried {seen} bytes, expected {total}"
        )))
    }
}

/// A command killed at the 1 s duration whose operation ends `exit_after_ms` after the exit:
/// within the 5 s kill grace it is `timed_out`, after it `running` with the operation identity.
fn grace_check(
    main: &Arc<dyn TargetFactory>,
    name: &str,
    exit_after_ms: u64,
    status: &'static str,
) -> Check {
    let rule = json!({"method": "POST", "path": "/1.0/instances/*/exec", "fault": {"kind": "exec_exit_after", "ms": exit_after_ms}});
    check(main, name, vec![rule], move |session| {
        let called = killed_at_one_second(session, &["incus.exec".to_owned()])?;
        expect(&called, "/status", json!(status))?;
        if called
            .result
            .get("operation_id")
            .is_some_and(Value::is_string)
        {
            Ok(())
        } else {
            Err(called.failure("the operation identity is missing"))
        }
    })
}

/// `sleep 600` with a 1 s duration, on a started instance: SIGKILL is due after one second.
fn killed_at_one_second(
    session: &Session,
    exec: &[String],
) -> Result<super::session::Called, String> {
    start_instance(session)?;
    let input = json!({"name": "web", "command": ["sleep", "600"], "timeout_seconds": 1});
    Ok(session.call("incus_instance_exec", exec, input))
}
