//! Exec output of any size and any bytes: UTF-8 or base64, the first 64 KiB captured per
//! stream, the rest counted, and a truncated flag.

use std::sync::Arc;

use base64::Engine;
use proptest::collection::vec;
use proptest::prelude::*;
use serde_json::{json, Value};

use super::property;
use super::session::{Called, Session};
use crate::runner::Check;
use crate::scenario::format::FakeSetup;
use crate::scenario::target::TargetFactory;

/// The capture bound per stream.
const CAPTURE: usize = 64 * 1024;

/// `fake-bytes` takes one argument per byte; with the command and the stream name that keeps
/// argv within its 64 arguments (and 15 characters are at most 60 bytes).
const MAX_BYTES_ARGS: usize = 62;

/// What one command writes to one stream.
#[derive(Debug, Clone)]
enum Output {
    /// Exactly these bytes (`fake-bytes`).
    Bytes(Vec<u8>),
    /// `count` copies of `byte` (`fake-flood`).
    Flood { count: usize, byte: u8 },
}

impl Output {
    fn expected(&self) -> Vec<u8> {
        match self {
            Output::Bytes(bytes) => bytes.clone(),
            Output::Flood { count, byte } => vec![*byte; *count],
        }
    }

    fn command(&self, stream: &str) -> Vec<String> {
        match self {
            Output::Bytes(bytes) if bytes.is_empty() => vec!["true".into()],
            Output::Bytes(bytes) => ["fake-bytes".to_owned(), stream.to_owned()]
                .into_iter()
                .chain(bytes.iter().map(|b| format!("{b:02x}")))
                .collect(),
            Output::Flood { count, byte } => vec![
                "fake-flood".into(),
                stream.into(),
                count.to_string(),
                format!("0x{byte:02x}"),
            ],
        }
    }
}

fn output() -> impl Strategy<Value = Output> {
    let sizes = prop::sample::select(vec![
        0,
        1,
        CAPTURE - 1,
        CAPTURE,
        CAPTURE + 1,
        3 * CAPTURE + 7,
        1 << 20,
    ]);
    prop_oneof![
        2 => vec(any::<u8>(), 0..=MAX_BYTES_ARGS).prop_map(Output::Bytes),
        1 => "\\PC{0,15}".prop_map(|s| Output::Bytes(s.into_bytes())),
        2 => (sizes, prop::sample::select(vec![b'x', 0xff, b'\n'])).prop_map(|(count, byte)| Output::Flood { count, byte }),
    ]
}

/// One property trial per stream.
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    let mut checks: Vec<Check> = ["stdout", "stderr"]
        .into_iter()
        .map(|stream| {
            let trial = format!("exec::capture::{stream}_of_any_size_and_bytes");
            let name = trial.clone();
            let factory = Arc::clone(factory);
            Check::new(trial, move || {
                let session = Session::start(&factory, &FakeSetup::default())?;
                start_instance(&session)?;
                property::check(&name, output(), |out| {
                    let input = json!({"name": "web", "command": out.command(stream)});
                    let called =
                        session.call("incus_instance_exec", &["incus.exec".to_owned()], input);
                    check_stream(&called, stream, &out.expected())?;
                    called.schema_valid()
                })
            })
        })
        .collect();
    checks.push(stdin_bytes(factory));
    checks.push(escaped_output(factory));
    checks.push(cut_stream(factory));
    checks
}

/// A stdout websocket dropped by the server before its end-of-stream frame: the output was
/// lost, so the stream must not look like "no output" (`truncated` is true), while stderr,
/// which ended normally, is whole.
fn cut_stream(factory: &Arc<dyn TargetFactory>) -> Check {
    let factory = Arc::clone(factory);
    Check::new(
        "exec::encoding::a_stream_cut_before_its_end_is_truncated",
        move || {
            let drop_stdout = json!({"method": "POST", "path": "/1.0/instances/*/exec", "fault": {"kind": "exec_drop_websocket", "fd": "1"}});
            let setup = FakeSetup {
                seed: None,
                faults: vec![drop_stdout],
            };
            let session = Session::start(&factory, &setup)?;
            start_instance(&session)?;
            let line = "echo lost; echo kept >&2; sleep 0.2";
            let input = json!({"name": "web", "command": ["sh", "-c", line]});
            let called = session.call("incus_instance_exec", &["incus.exec".to_owned()], input);
            let result = &called.result;
            if result.get("status") != Some(&json!("completed")) {
                return Err(called.failure("expected status completed"));
            }
            if result.pointer("/stdout/truncated") != Some(&json!(true)) {
                return Err(
                    called.failure("stdout was cut before its end but truncated is not true")
                );
            }
            if result.pointer("/stderr/data") != Some(&json!("kept\n"))
                || result.pointer("/stderr/truncated") != Some(&json!(false))
            {
                return Err(called.failure("stderr ended normally and must be whole"));
            }
            called.schema_valid()
        },
    )
}

/// The tool output bound in bytes of JSON.
const OUTPUT_BOUND: usize = 256 * 1024;

/// 200 000 NUL bytes on each stream: the captured 64 KiB of each is valid UTF-8 but 384 KiB
/// of JSON escapes. The result still fits the output bound and keeps the status, the exit code
/// and both counts; the data is cut, and `captured_bytes` and `truncated` say so.
fn escaped_output(factory: &Arc<dyn TargetFactory>) -> Check {
    let factory = Arc::clone(factory);
    Check::new(
        "inspection::output_bound::exec_output_needing_heavy_escaping_fits_with_its_status_and_counts",
        move || {
            let session = Session::start(&factory, &FakeSetup::default())?;
            start_instance(&session)?;
            let line = "fake-flood stdout 200000 0x00; fake-flood stderr 200000 0x00; exit 3";
            let input = json!({"name": "web", "command": ["sh", "-c", line]});
            let called = session.call("incus_instance_exec", &["incus.exec".to_owned()], input);
            let result = &called.result;
            let size = serde_json::to_vec(result).map(|json| json.len()).unwrap_or(usize::MAX);
            if size > OUTPUT_BOUND {
                return Err(called.failure(&format!("the result is {size} bytes of JSON")));
            }
            if result.get("status") != Some(&json!("completed"))
                || result.get("exit_code") != Some(&json!(3))
            {
                return Err(called.failure("expected status completed with exit code 3"));
            }
            for stream in ["stdout", "stderr"] {
                let s = &result[stream];
                let kept = s.get("data").and_then(Value::as_str).unwrap_or_default();
                let cut = s.get("bytes") == Some(&json!(200_000))
                    && s.get("encoding") == Some(&json!("utf-8"))
                    && s.get("truncated") == Some(&json!(true))
                    && s.get("captured_bytes") == Some(&json!(kept.len()))
                    && kept.len() < CAPTURE
                    && kept.bytes().all(|b| b == 0);
                if !cut {
                    return Err(called.failure(&format!(
                        "{stream} must count all 200000 bytes and hold fewer than 64 KiB of them as UTF-8, with captured_bytes and truncated saying so"
                    )));
                }
            }
            called.schema_valid()
        },
    )
}

/// Stdin is bounded in bytes of UTF-8, not in characters: 64 KiB of two-byte characters runs,
/// one byte more is refused before any backend request.
fn stdin_bytes(factory: &Arc<dyn TargetFactory>) -> Check {
    let factory = Arc::clone(factory);
    Check::new(
        "exec::stdin_bound::stdin_is_bounded_in_bytes_of_utf8",
        move || {
            let session = Session::start(&factory, &FakeSetup::default())?;
            start_instance(&session)?;
            let exec = ["incus.exec".to_owned()];
            let at = "é".repeat(CAPTURE / 2);
            let input = json!({"name": "web", "command": ["cat"], "stdin": at});
            let called = session.call("incus_instance_exec", &exec, input);
            if called.result.get("status") != Some(&json!("completed"))
                || called.result.pointer("/stdout/bytes") != Some(&json!(CAPTURE))
            {
                return Err(called.failure("64 KiB of UTF-8 stdin must run and be echoed whole"));
            }
            let over = format!("{at}x");
            let input = json!({"name": "web", "command": ["cat"], "stdin": over});
            session
                .call("incus_instance_exec", &exec, input)
                .refused_before_backend("invalid_input")
        },
    )
}

/// Creates and starts instance `web`.
pub(crate) fn start_instance(session: &Session) -> Result<(), String> {
    let write = ["incus.write".to_owned()];
    for (operation, input) in [
        (
            "incus_instance_create",
            json!({"name": "web", "source": {"type": "image", "alias": "busybox"}}),
        ),
        (
            "incus_instance_state_update",
            json!({"name": "web", "action": "start"}),
        ),
    ] {
        let called = session.call(operation, &write, input);
        if called.result.get("status") != Some(&json!("completed")) {
            return Err(called.failure("preparing a running instance failed"));
        }
    }
    Ok(())
}

fn check_stream(called: &Called, stream: &str, expected: &[u8]) -> Result<(), String> {
    let result = &called.result;
    let fail = |problem: String| Err(called.failure(&problem));
    if result.get("status") != Some(&json!("completed"))
        || result.get("exit_code") != Some(&json!(0))
    {
        return fail("expected status completed with exit code 0".into());
    }
    let s = &result[stream];
    let captured = &expected[..expected.len().min(CAPTURE)];
    let (encoding, data) = match std::str::from_utf8(captured) {
        Ok(text) => ("utf-8", text.to_owned()),
        Err(_) => (
            "base64",
            base64::engine::general_purpose::STANDARD.encode(captured),
        ),
    };
    let want = json!({
        "encoding": encoding,
        "bytes": expected.len(),
        "captured_bytes": captured.len(),
        "truncated": expected.len() > CAPTURE,
    });
    for key in ["encoding", "bytes", "captured_bytes", "truncated"] {
        if s.get(key) != Some(&want[key]) {
            return fail(format!(
                "{stream}.{key} is {}, expected {}",
                s.get(key).unwrap_or(&Value::Null),
                want[key]
            ));
        }
    }
    if s.get("data").and_then(Value::as_str) != Some(data.as_str()) {
        return fail(format!(
            "{stream}.data is not the first {} bytes written",
            captured.len()
        ));
    }
    Ok(())
}
