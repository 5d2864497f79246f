//! `incus_instance_exec`: one noninteractive command through the client's bounded exec, mapped
//! to the exec result.
//!
//! The client captures the first 64 KiB per stream, sends `SIGKILL` once at the duration bound
//! or past the stream total, and reports `completed`, `timed_out`, `output_limited`, `running` or
//! `uncertain`. A rejection before acceptance is a `native` error; a request that may have started
//! the command but got no decodable answer is `uncertain`; one surely not sent is `transport`.
//! The result fits the 256 KiB output bound whatever bytes the command wrote: the stream data is
//! cut to the room the rest of the result leaves, never the status, exit code or counts
//! (`ExecOutcome::to_json_within`).
//!
//! The client observes ([`ExecOutcome`], [`StreamCapture`]); this module alone shapes what it
//! observed, and its uncertain twin, into the agent's result.
use tokio::time::Instant;

use base64::Engine as _;
use serde_json::{json, Value};

use super::call::Call;
use super::input;
use super::output::{json_len, Success, OUTPUT_BYTES};
use super::results::{uncertain_or_error, RunError, Status, Uncertain};
use crate::client::{exec_duration_cap, ExecOutcome, ExecRequest, StreamCapture, StreamEnd};

/// Runs the command and reports what was observed.
pub(crate) async fn exec(call: &Call<'_>, input: input::Exec) -> Result<Success, RunError> {
    let name = input.name.clone();
    let request = request(input);
    let started = Instant::now();
    let cap = exec_duration_cap(
        request.timeout_seconds,
        call.client.connection().stream_timeout(),
    );
    call.progress
        .record_timed(uncertain(started, cap, String::new()), "reason", started);
    match call
        .client
        .exec_instance(&call.project, &name, &request)
        .await
    {
        Ok(outcome) => Ok(Success::Object(outcome.to_json_within(OUTPUT_BYTES))),
        Err(error) => {
            let Uncertain { reason } = uncertain_or_error(error)?;
            Ok(Success::Object(uncertain(started, cap, reason)))
        }
    }
}

/// The validated input as the client's request.
fn request(input: input::Exec) -> ExecRequest {
    ExecRequest {
        command: input.command,
        environment: input.environment.unwrap_or_default(),
        cwd: input.cwd,
        user: input.user,
        group: input.group,
        stdin: input.stdin.map(String::into_bytes).unwrap_or_default(),
        timeout_seconds: input.timeout_seconds,
    }
}

/// The exec may have been accepted (and the command started), but no answer was decoded. No
/// stream was read, so neither is known to be whole: `truncated` is `true`.
fn uncertain(started: Instant, timeout_seconds: u64, reason: String) -> Value {
    let unread = json!({"data": "", "encoding": "utf-8", "bytes": 0, "captured_bytes": 0, "truncated": true});
    json!({
        "status": Status::Uncertain,
        "exit_code": null,
        "stdout": unread,
        "stderr": unread,
        "duration_ms": u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        "timeout_seconds": timeout_seconds,
        "operation_id": null,
        "operation": null,
        "reason": reason,
    })
}

/// How a stream's `data` is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Utf8,
    Base64,
}

impl Encoding {
    fn as_str(self) -> &'static str {
        match self {
            Self::Utf8 => "utf-8",
            Self::Base64 => "base64",
        }
    }
}

impl StreamCapture {
    /// The bytes `data` can carry and their encoding: UTF-8 text when the captured bytes are
    /// UTF-8 (a character cut by the capture bound, or by the stream's end before its
    /// end-of-stream frame, is dropped), base64 otherwise.
    fn returnable(&self) -> (&[u8], Encoding) {
        match std::str::from_utf8(&self.captured) {
            Ok(_) => (&self.captured, Encoding::Utf8),
            Err(e) if self.is_incomplete() && e.error_len().is_none() => {
                (&self.captured[..e.valid_up_to()], Encoding::Utf8)
            }
            Err(_) => (&self.captured, Encoding::Base64),
        }
    }

    /// The length of the whole of `data` as JSON string content (without its quotes).
    fn data_len(&self) -> usize {
        match self.returnable() {
            (bytes, Encoding::Utf8) => bytes.iter().map(|&b| escaped_len(b)).sum(),
            (bytes, Encoding::Base64) => bytes.len().div_ceil(3) * 4,
        }
    }

    /// The result shape `{"data", "encoding", "bytes", "captured_bytes", "truncated"}`, with
    /// `data` holding the longest prefix of the returnable bytes whose JSON string content is at
    /// most `room` bytes. `captured_bytes` says how many bytes `data` holds, and `truncated`
    /// whether that is less than the whole stream: fewer than every byte seen, or the stream
    /// was cut (or still open) before its end-of-stream frame.
    pub(crate) fn to_json_within(&self, room: usize) -> Value {
        let (bytes, encoding) = self.returnable();
        let (data, captured_bytes) = match encoding {
            Encoding::Utf8 => {
                let kept = utf8_prefix_within(bytes, room);
                (String::from_utf8_lossy(&bytes[..kept]).into_owned(), kept)
            }
            Encoding::Base64 => {
                let kept = bytes.len().min(room / 4 * 3);
                let data = base64::engine::general_purpose::STANDARD.encode(&bytes[..kept]);
                (data, kept)
            }
        };
        self.shape(data, encoding, captured_bytes)
    }

    /// The whole returnable capture, whatever its size.
    #[cfg(test)]
    pub(crate) fn to_json(&self) -> Value {
        self.to_json_within(usize::MAX)
    }

    /// The shape with an empty `data`: an upper bound on the size of any cut of this stream
    /// but for its data (cutting only lowers `captured_bytes` and can only turn `truncated`
    /// from `false` to the shorter `true`).
    fn skeleton(&self) -> Value {
        let (bytes, encoding) = self.returnable();
        self.shape(String::new(), encoding, bytes.len())
    }

    fn shape(&self, data: String, encoding: Encoding, captured_bytes: usize) -> Value {
        json!({
            "data": data,
            "encoding": encoding.as_str(),
            "bytes": self.total,
            "captured_bytes": captured_bytes,
            "truncated": self.total > captured_bytes as u64 || self.end != StreamEnd::Eof,
        })
    }

    /// Whether the captured bytes are less than the whole stream: bytes were only counted, or
    /// the stream's end was not seen.
    fn is_incomplete(&self) -> bool {
        self.total > self.captured.len() as u64 || self.end != StreamEnd::Eof
    }
}

/// The bytes of JSON string content that one byte of UTF-8 text takes in compact
/// `serde_json` output: `\"`, `\\` and the short control escapes take 2, the other control
/// characters 6 (`\u0000`), everything else (non-ASCII included) is written as it is.
fn escaped_len(byte: u8) -> usize {
    match byte {
        b'"' | b'\\' | 0x08 | 0x09 | 0x0a | 0x0c | 0x0d => 2,
        0x00..=0x1f => 6,
        _ => 1,
    }
}

/// The longest prefix of the UTF-8 text `bytes`, ending on a character boundary, whose JSON
/// string content is at most `room` bytes; one pass that stops at the cut.
fn utf8_prefix_within(bytes: &[u8], room: usize) -> usize {
    let mut used = 0usize;
    let mut end = bytes.len();
    for (at, &byte) in bytes.iter().enumerate() {
        used = used.saturating_add(escaped_len(byte));
        if used > room {
            end = at;
            break;
        }
    }
    // Continuation bytes (0b10xx_xxxx) never start a character: back off to a boundary.
    while end > 0 && end < bytes.len() && bytes[end] & 0xc0 == 0x80 {
        end -= 1;
    }
    end
}

/// Splits `room` bytes of data between stdout and stderr: both whole when they fit; otherwise a
/// stream that needs at most half keeps all it needs and the other gets the rest; otherwise
/// half each.
fn share(room: usize, needs: [usize; 2]) -> [usize; 2] {
    let [out, err] = needs;
    let half = room / 2;
    if out.saturating_add(err) <= room {
        needs
    } else if out <= half {
        [out, room - out]
    } else if err <= half {
        [room - err, err]
    } else {
        [room - half, half]
    }
}

impl ExecOutcome {
    /// The `incus_instance_exec` success shape of the result contract, with the whole capture
    /// of both streams.
    #[cfg(test)]
    pub(crate) fn to_json(&self) -> Value {
        self.shape(
            self.operation.as_ref(),
            [self.stdout.to_json(), self.stderr.to_json()],
        )
    }

    /// The success shape within `bound` bytes of compact JSON, whatever bytes the command
    /// wrote: status, exit code, counts and the operation identity are always kept, and the
    /// stream data is cut to what fits.
    ///
    /// Linear in the captured bytes, with no serialize-and-retry loop: one pass measures each
    /// stream's JSON size, the room left by the rest of the result (measured once) is shared
    /// between the two streams ([`share`]), and a stream that does not fit whole is cut, by a
    /// pass that stops at the cut, at the last character (UTF-8) or 3-byte group (base64)
    /// within its share. The encoding stays the one the bytes call for (UTF-8 when they are
    /// UTF-8); `captured_bytes` says how many bytes `data` holds and `truncated` is `true`
    /// whenever that is fewer than `bytes` (or the stream was cut before its end). If even the
    /// result without any stream data does not fit (a native operation that echoes a huge
    /// command), `operation` is `null` and `operation_id` still names it.
    pub(crate) fn to_json_within(&self, bound: usize) -> Value {
        let skeletons = [self.stdout.skeleton(), self.stderr.skeleton()];
        let mut operation = self.operation.as_ref();
        let mut skeleton = json_len(&self.shape(operation, skeletons.clone()));
        if skeleton > bound && operation.is_some() {
            operation = None;
            skeleton = json_len(&self.shape(operation, skeletons));
        }
        let room = bound.saturating_sub(skeleton);
        let [out, err] = share(room, [self.stdout.data_len(), self.stderr.data_len()]);
        self.shape(
            operation,
            [
                self.stdout.to_json_within(out),
                self.stderr.to_json_within(err),
            ],
        )
    }

    fn shape(&self, operation: Option<&Value>, [stdout, stderr]: [Value; 2]) -> Value {
        let mut shape = json!({
            "status": self.status.as_str(),
            "exit_code": self.exit_code,
            "stdout": stdout,
            "stderr": stderr,
            "duration_ms": u64::try_from(self.duration.as_millis()).unwrap_or(u64::MAX),
            "timeout_seconds": self.timeout_seconds,
            "operation_id": self.operation_id,
            "operation": operation,
        });
        if let Some(reason) = &self.reason {
            shape["reason"] = json!(reason);
        }
        shape
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (`incus_instance_exec`); a promise of the
    //! whole `run()` or of the client against a fake Incus, seen through the public API, goes in
    //! `tests/integration`.

    use std::time::Duration;

    use super::*;
    use crate::client::{ExecStatus, CAPTURE_BYTES};

    #[test]
    fn capture_keeps_the_first_64_kib_and_counts_the_rest() {
        let mut capture = StreamCapture::default();
        capture.push(&vec![b'a'; 40_000]);
        capture.push(&vec![b'b'; 40_000]);
        assert_eq!(capture.bytes(), 80_000);
        let stream = capture.to_json();
        assert_eq!(stream["captured_bytes"], 65_536);
        assert_eq!(stream["bytes"], 80_000);
        assert_eq!(stream["truncated"], true);
        assert_eq!(stream["encoding"], "utf-8");
    }

    #[test]
    fn non_utf8_output_is_base64() {
        let mut capture = StreamCapture::default();
        capture.push(&[0xff, 0xfe, b'a']);
        let stream = capture.to_json();
        assert_eq!(stream["data"], "//5h");
        assert_eq!(stream["encoding"], "base64");
        assert_eq!(stream["captured_bytes"], 3);
    }

    #[test]
    fn a_character_cut_by_the_capture_bound_is_dropped() {
        let mut capture = StreamCapture::default();
        capture.push(&vec![b'a'; CAPTURE_BYTES - 1]);
        capture.push("é".as_bytes());
        let stream = capture.to_json();
        assert_eq!(stream["encoding"], "utf-8");
        assert_eq!(stream["captured_bytes"], CAPTURE_BYTES - 1);
        assert_eq!(stream["bytes"], CAPTURE_BYTES + 1);
        assert_eq!(stream["truncated"], true);
    }

    #[test]
    fn an_incomplete_character_at_the_true_end_is_base64() {
        let mut capture = StreamCapture::default();
        capture.push(&"é".as_bytes()[..1]);
        capture.end = StreamEnd::Eof;
        assert_eq!(capture.to_json()["encoding"], "base64");
    }

    /// A stream that ended with its end-of-stream frame after `len` bytes of the pattern.
    fn captured(byte_pattern: &[u8], len: usize) -> StreamCapture {
        let mut capture = StreamCapture::default();
        let bytes: Vec<u8> = byte_pattern.iter().copied().cycle().take(len).collect();
        capture.push(&bytes);
        capture.end = StreamEnd::Eof;
        capture
    }

    /// A stream never read (the exec's streams could not be attached) is not "no output".
    #[test]
    fn exec_stream_never_read_is_truncated() {
        let stream = StreamCapture::default().to_json();
        assert_eq!(stream["bytes"], 0);
        assert_eq!(stream["truncated"], true);
    }

    fn outcome(stdout: StreamCapture, stderr: StreamCapture, operation: Value) -> ExecOutcome {
        ExecOutcome {
            status: ExecStatus::Completed,
            exit_code: Some(0),
            stdout,
            stderr,
            duration: Duration::from_millis(1234),
            timeout_seconds: 30,
            operation_id: Some("6f1c1a0e-1111-4222-8333-944455556666".into()),
            operation: Some(operation),
            killed: false,
            reason: None,
        }
    }

    /// The bytes `data` holds, decoded as its encoding says.
    fn decoded(stream: &Value) -> Vec<u8> {
        let data = stream["data"].as_str().expect("data is a string");
        match stream["encoding"].as_str() {
            Some("utf-8") => data.as_bytes().to_vec(),
            Some("base64") => base64::engine::general_purpose::STANDARD
                .decode(data)
                .expect("valid base64"),
            other => panic!("unknown encoding {other:?}"),
        }
    }

    const OUTPUT_BOUND: usize = 256 * 1024;

    /// 64 KiB of NUL bytes is valid UTF-8 but 384 KiB of JSON escapes: with both streams full
    /// of them the result still fits 256 KiB and keeps status, exit code and counts; the
    /// data is cut, and captured_bytes and truncated say so.
    #[test]
    fn output_bound_escaped_output_on_both_streams_fits_with_status_exit_code_and_counts() {
        let out = captured(&[0], 200 * 1024);
        let err = captured(&[0], 70_000);
        let result = outcome(
            out,
            err,
            json!({"status": "Success", "metadata": {"return": 0}}),
        )
        .to_json_within(OUTPUT_BOUND);
        let len = json_len(&result);
        assert!(len <= OUTPUT_BOUND, "{len} bytes");
        assert!(len > OUTPUT_BOUND - 64, "the room is used: {len} bytes");
        assert_eq!(result["status"], "completed");
        assert_eq!(result["exit_code"], 0);
        assert_eq!(result["operation"]["metadata"]["return"], 0);
        for (stream, bytes) in [("stdout", 200 * 1024), ("stderr", 70_000)] {
            let s = &result[stream];
            assert_eq!(s["bytes"], bytes, "{stream}: the count is kept");
            assert_eq!(s["encoding"], "utf-8", "{stream}: NUL bytes are UTF-8");
            assert_eq!(s["truncated"], true, "{stream}");
            let kept = decoded(s);
            assert_eq!(s["captured_bytes"], kept.len(), "{stream}");
            assert!(
                kept.len() < CAPTURE_BYTES && kept.len() > 20_000,
                "{stream}: {}",
                kept.len()
            );
            assert!(
                kept.iter().all(|&b| b == 0),
                "{stream}: a prefix of what was written"
            );
        }
    }

    /// Every kind of byte, in several sizes, on both streams, under several bounds: the result
    /// fits, `data` decodes to a prefix of what was written whose length is `captured_bytes`,
    /// and `truncated` is whether that is less than `bytes`.
    #[test]
    fn output_bound_every_result_fits_and_its_data_is_a_counted_prefix() {
        let patterns: [&[u8]; 8] = [
            b"x",
            &[0],
            b"\"",
            b"\\",
            b"\n",
            "é€😀".as_bytes(),
            &[0xff, 0x00],
            b"a\x01\"\\\t\xc3\xa9z",
        ];
        let sizes = [
            0,
            1,
            7,
            CAPTURE_BYTES - 1,
            CAPTURE_BYTES,
            3 * CAPTURE_BYTES + 7,
        ];
        let operation = json!({"metadata": {"command": ["sh", "-c", "x".repeat(10_000)]}});
        for bound in [OUTPUT_BOUND, 40_000, 12_345] {
            for out_pattern in patterns {
                for err_pattern in [patterns[1], patterns[5]] {
                    for size in sizes {
                        let out = captured(out_pattern, size);
                        let err = captured(err_pattern, size / 2);
                        let written = [
                            out_pattern
                                .iter()
                                .copied()
                                .cycle()
                                .take(size)
                                .collect::<Vec<u8>>(),
                            err_pattern.iter().copied().cycle().take(size / 2).collect(),
                        ];
                        let result = outcome(out, err, operation.clone()).to_json_within(bound);
                        let case =
                            format!("bound {bound}, {out_pattern:?}/{err_pattern:?} x {size}");
                        assert!(json_len(&result) <= bound, "{case}: {}", json_len(&result));
                        for (stream, written) in ["stdout", "stderr"].iter().zip(&written) {
                            let s = &result[*stream];
                            let kept = decoded(s);
                            assert_eq!(s["captured_bytes"], kept.len(), "{case} {stream}");
                            assert_eq!(s["bytes"], written.len(), "{case} {stream}");
                            assert!(written.starts_with(&kept), "{case} {stream}");
                            assert_eq!(
                                s["truncated"],
                                kept.len() < written.len(),
                                "{case} {stream}"
                            );
                        }
                    }
                }
            }
        }
    }

    /// A result within the bound is exactly the unbounded one.
    #[test]
    fn output_bound_a_result_that_fits_is_unchanged() {
        let out = captured(b"\n", CAPTURE_BYTES);
        let err = captured("é".as_bytes(), 30_000);
        let whole = outcome(out, err, json!({"id": "x"}));
        assert!(json_len(&whole.to_json()) <= OUTPUT_BOUND);
        assert_eq!(whole.to_json_within(OUTPUT_BOUND), whole.to_json());
    }

    /// A stream that needs at most half of the room keeps all of it; the other gets the rest.
    #[test]
    fn output_bound_a_small_stream_is_kept_whole_and_the_large_one_cut() {
        let out = captured(&[0], CAPTURE_BYTES);
        let err = captured(b"err\n", 4_000);
        let result = outcome(out, err, json!({})).to_json_within(OUTPUT_BOUND);
        assert_eq!(result["stderr"]["captured_bytes"], 4_000);
        assert_eq!(result["stderr"]["truncated"], false);
        assert_eq!(result["stdout"]["truncated"], true);
        let kept = result["stdout"]["captured_bytes"].as_u64().unwrap();
        // All the room but stderr's share: about (256 KiB - 4 KB) / 6 bytes per NUL.
        assert!(kept > 42_000, "{kept}");
    }

    /// A UTF-8 cut never splits a character, and a base64 cut keeps whole 3-byte groups.
    #[test]
    fn output_bound_cuts_fall_on_character_and_base64_group_boundaries() {
        let text = captured("é".as_bytes(), 1_000);
        let stream = text.to_json_within(101);
        assert_eq!(stream["captured_bytes"], 100);
        assert_eq!(stream["data"], "é".repeat(50));
        let binary = captured(&[0xff], 1_000);
        let stream = binary.to_json_within(10);
        assert_eq!(stream["captured_bytes"], 6);
        assert_eq!(stream["data"], "////////");
    }

    /// When the operation object alone (it echoes the command) leaves no room, it is dropped
    /// rather than the whole result: status, exit code, counts and operation_id stay.
    #[test]
    fn output_bound_an_operation_too_large_for_the_bound_is_null_but_its_id_is_kept() {
        let huge = json!({"metadata": {"command": ["x".repeat(OUTPUT_BOUND)]}});
        let result = outcome(captured(b"hi\n", 3), StreamCapture::default(), huge)
            .to_json_within(OUTPUT_BOUND);
        assert!(json_len(&result) <= OUTPUT_BOUND);
        assert_eq!(result["operation"], Value::Null);
        assert_eq!(
            result["operation_id"],
            "6f1c1a0e-1111-4222-8333-944455556666"
        );
        assert_eq!(result["exit_code"], 0);
        assert_eq!(result["stdout"]["data"], "hi\n");
    }
}
