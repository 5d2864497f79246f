//! Bounded, non-interactive exec over the operation's websockets (Go: `ExecInstance`,
//! contract `stream:S01`).
//!
//! `POST /1.0/instances/{name}/exec` with `wait-for-websocket: true`, then one websocket per
//! fd (`control` first, then `0`, `1`, `2`, as the official client does). Stdin is sent as
//! binary frames followed by an empty text frame (EOF). Stdout and stderr are read as binary
//! frames until their empty text frame; the first 64 KiB of each is kept and the rest only
//! counted, so memory follows the bound, not the data. A stream whose connection ends (closed,
//! reset, a read error) before that frame, or that is still open when collection stops, was
//! cut: its output may be incomplete, and the result says so with `truncated`. At the duration
//! bound, or once the stream total is passed, `SIGKILL` is sent once over the control channel
//! and collection has 5 s to observe the exit, whose code is the final operation's
//! `metadata.return`. During those 5 s the output and the exit are collected together: the
//! operation's end is what is awaited, whether or not the streams have ended.
//!
//! The status says what ended the command, as far as it was observed ([`ExecStatus`]): its own
//! exit (`completed`, also when the `SIGKILL` sent at the duration found it already exiting: the
//! exit code is then not the kill's 137), the kill at the duration (`timed_out`), output past the
//! stream total (`output_limited`, whatever ended the command then), or an operation
//! that ended in failure without an exit code (`failed`, with Incus's error as the reason).
//!
//! The duration bound (and `duration_ms`) starts when the command starts: Incus starts it once
//! its streams are connected, so slow websocket set-up (each connection has the connection's own
//! request timeout) does not eat the command's time.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use base64::Engine as _;
use futures_util::{SinkExt, StreamExt};
use http::Method;
use serde_json::{json, Map, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::sync::{oneshot, Notify};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

use super::connection::Target;
use super::error::ClientError;
use super::operations::{is_final, WaitOutcome};
use super::query::target;
use super::transport::{self, AbortOnDrop, Stream};
use super::{effective_wait, exec_duration_cap, exec_stream_total, json_len, Client, KILL_GRACE};

/// Bytes kept per output stream; the rest is counted.
pub(crate) const CAPTURE_BYTES: usize = 64 * 1024;
/// Largest websocket frame or message accepted (Incus sends at most 32 KiB).
const MAX_FRAME_BYTES: usize = 4 * 1024 * 1024;
/// The control message that sends `SIGKILL`, encoded as the Go client encodes it.
const SIGKILL_MESSAGE: &str = r#"{"command":"signal","args":null,"signal":9}"#;
/// Shortest pause between two operation polls when the server-side wait cannot be used.
const MIN_POLL_INTERVAL: Duration = Duration::from_millis(100);
/// The exit code of a process ended by `SIGKILL`, as Incus reports it (128 + 9).
const KILLED_BY_SIGKILL: i64 = 128 + 9;

type Socket = WebSocketStream<Stream>;

/// One command to run, already validated by the caller.
#[derive(Debug, Clone, Default)]
pub(crate) struct ExecRequest {
    pub(crate) command: Vec<String>,
    pub(crate) environment: Map<String, Value>,
    pub(crate) cwd: Option<String>,
    pub(crate) user: Option<u32>,
    pub(crate) group: Option<u32>,
    pub(crate) stdin: Vec<u8>,
    /// The requested duration bound; capped at `stream_timeout - 5 s`.
    pub(crate) timeout_seconds: u64,
}

/// How an exec ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExecStatus {
    /// The command exited on its own and the exit was observed. The `SIGKILL` sent at the
    /// duration may have found it already exiting: its exit code is then not the kill's.
    Completed,
    /// The duration bound passed; `SIGKILL` was sent and the exit it caused observed.
    TimedOut,
    /// The stream total was passed; `SIGKILL` was sent and the exit observed (the output was
    /// limited, whatever ended the command).
    OutputLimited,
    /// The operation ended in failure without an exit code (for example Incus timed out
    /// waiting for the websockets, so the command never started): the end was observed, an
    /// exit was not. The reason is Incus's error.
    Failed,
    /// The exit was not observed in time; the operation identity is reported.
    Running,
    /// Incus accepted the exec but its streams could not be attached, so whether the
    /// command runs is unknown.
    Uncertain,
}

impl ExecStatus {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::TimedOut => "timed_out",
            Self::OutputLimited => "output_limited",
            Self::Failed => "failed",
            Self::Running => "running",
            Self::Uncertain => "uncertain",
        }
    }
}

/// The first [`CAPTURE_BYTES`] of one output stream, the count of all its bytes and how it
/// ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct StreamCapture {
    captured: Vec<u8>,
    total: u64,
    end: StreamEnd,
}

/// How one output stream ended.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) enum StreamEnd {
    /// Not seen: the stream was still open when collection stopped, or never attached.
    #[default]
    Unseen,
    /// Incus's end-of-stream frame (a text frame, empty): every byte of the stream was seen.
    Eof,
    /// The connection ended (a close frame, a reset, a read error) before the end-of-stream
    /// frame: output may have been lost.
    Cut,
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
    fn push(&mut self, data: &[u8]) {
        let room = CAPTURE_BYTES.saturating_sub(self.captured.len());
        self.captured
            .extend_from_slice(&data[..data.len().min(room)]);
        self.total += data.len() as u64;
    }

    /// Every byte seen on the stream.
    #[cfg(test)]
    pub(crate) fn bytes(&self) -> u64 {
        self.total
    }

    /// How the stream ended.
    #[cfg(test)]
    pub(crate) fn end(&self) -> StreamEnd {
        self.end
    }

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
    fn to_json_within(&self, room: usize) -> Value {
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
    fn to_json(&self) -> Value {
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

/// Everything observed about one exec.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ExecOutcome {
    pub(crate) status: ExecStatus,
    pub(crate) exit_code: Option<i64>,
    pub(crate) stdout: StreamCapture,
    pub(crate) stderr: StreamCapture,
    /// From the command's start (its streams attached) to the end of collection; from the
    /// request when the streams could not be attached.
    pub(crate) duration: Duration,
    /// The effective duration bound in seconds.
    pub(crate) timeout_seconds: u64,
    pub(crate) operation_id: Option<String>,
    /// The last native operation object seen (the final one when the exit was observed).
    pub(crate) operation: Option<Value>,
    /// Whether `SIGKILL` was sent.
    pub(crate) killed: bool,
    /// Why the operation failed (Incus's error), for [`ExecStatus::Failed`].
    pub(crate) reason: Option<String>,
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

/// Why `SIGKILL` was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KillCause {
    Duration,
    StreamTotal,
}

impl Client {
    /// Runs one non-interactive command in `name` within the connection's exec bounds.
    ///
    /// A failure before Incus accepted the exec is an error (a native rejection, or a
    /// transport failure whose [`ClientError::may_have_been_sent`] tells whether the command
    /// may have started). Once accepted, the result is always an [`ExecOutcome`].
    pub(crate) async fn exec_instance(
        &self,
        project: &str,
        name: &str,
        request: &ExecRequest,
    ) -> Result<ExecOutcome, ClientError> {
        let requested = Instant::now();
        let timeout_seconds =
            exec_duration_cap(request.timeout_seconds, self.connection.stream_timeout());
        let target = target(&["1.0", "instances", name, "exec"], &[("project", project)]);
        let accepted = self
            .query_operation(Method::POST, target, Some(&exec_body(request)), None)
            .await?;
        let session = Session {
            client: self,
            project,
            started: requested,
            timeout_seconds,
            operation_id: accepted.id.clone(),
            operation: accepted.operation,
        };
        let sockets = match session.attach().await {
            Ok(sockets) => sockets,
            Err(error) => {
                tracing::warn!(%error, operation = %session.operation_id, "exec streams could not be attached");
                return Ok(session.outcome(
                    ExecStatus::Uncertain,
                    StreamCapture::default(),
                    StreamCapture::default(),
                    false,
                ));
            }
        };
        Ok(session.run(sockets, request.stdin.clone()).await)
    }
}

/// The native exec body, with every key the official client sends.
fn exec_body(request: &ExecRequest) -> Value {
    json!({
        "command": request.command,
        "environment": request.environment,
        "wait-for-websocket": true,
        "interactive": false,
        "record-output": false,
        "width": 0,
        "height": 0,
        "user": request.user.unwrap_or(0),
        "group": request.group.unwrap_or(0),
        "cwd": request.cwd.clone().unwrap_or_default(),
    })
}

/// The four websockets of a non-interactive exec.
struct Sockets {
    control: Socket,
    stdin: Socket,
    stdout: Socket,
    stderr: Socket,
}

/// One accepted exec being collected.
struct Session<'a> {
    client: &'a Client,
    project: &'a str,
    /// When the exec was requested, then, once the streams are attached, when the command
    /// started: what `duration_ms` counts from.
    started: Instant,
    timeout_seconds: u64,
    operation_id: String,
    operation: Value,
}

impl Session<'_> {
    /// Connects `control`, `0`, `1` and `2` with the secrets of the operation's metadata.
    async fn attach(&self) -> Result<Sockets, ClientError> {
        let fds = &self.operation["metadata"]["fds"];
        let secret = |fd: &str| {
            fds.get(fd).and_then(Value::as_str).ok_or_else(|| {
                ClientError::invalid_response(format!(
                    "the exec operation has no secret for fd {fd}"
                ))
            })
        };
        let control = self.connect(secret("control")?).await?;
        let stdin = self.connect(secret("0")?).await?;
        let stdout = self.connect(secret("1")?).await?;
        let stderr = self.connect(secret("2")?).await?;
        Ok(Sockets {
            control,
            stdin,
            stdout,
            stderr,
        })
    }

    /// Opens one operation websocket on a fresh connection, bounded by the timeout.
    async fn connect(&self, secret: &str) -> Result<Socket, ClientError> {
        let connection = &self.client.connection;
        let scheme = match connection.target() {
            Target::Unix(_) => "ws",
            Target::Https(_) => "wss",
        };
        let path = target(
            &["1.0", "operations", &self.operation_id, "websocket"],
            &[("secret", secret)],
        );
        let url = format!("{scheme}://{}{path}", connection.authority());
        let config = WebSocketConfig::default()
            .max_message_size(Some(MAX_FRAME_BYTES))
            .max_frame_size(Some(MAX_FRAME_BYTES));
        let deadline = Instant::now() + connection.timeout();
        let timeout = |may_have_been_sent| ClientError::Timeout {
            timeout: connection.timeout(),
            may_have_been_sent,
        };
        let stream = tokio::time::timeout_at(deadline, transport::open(connection))
            .await
            .map_err(|_| timeout(false))??;
        let handshake = tokio_tungstenite::client_async_with_config(url, stream, Some(config));
        let (socket, _) = tokio::time::timeout_at(deadline, handshake)
            .await
            .map_err(|_| timeout(true))?
            .map_err(ClientError::transport_after_send)?;
        Ok(socket)
    }

    /// Feeds stdin, collects the output, enforces the bounds and observes the exit. The
    /// streams are attached, so the command starts now: so does its duration bound.
    async fn run(mut self, sockets: Sockets, stdin: Vec<u8>) -> ExecOutcome {
        self.started = Instant::now();
        let deadline = self.started + Duration::from_secs(self.timeout_seconds);
        let Sockets {
            control,
            stdin: stdin_socket,
            mut stdout,
            mut stderr,
        } = sockets;
        let _stdin_task = AbortOnDrop(tokio::spawn(feed_stdin(stdin_socket, stdin)));
        let (kill_tx, kill_rx) = oneshot::channel();
        let _control_task = AbortOnDrop(tokio::spawn(hold_control(control, kill_rx)));
        let mut kill_tx = Some(kill_tx);

        let limit = exec_stream_total(self.client.connection.max_stream_bytes());
        let total = AtomicU64::new(0);
        let limit_hit = Notify::new();
        let mut out = StreamCapture::default();
        let mut err = StreamCapture::default();
        let mut cause = None;
        let mut ended = None;
        {
            let readers = async {
                tokio::join!(
                    read_output(&mut stdout, &mut out, &total, limit, &limit_hit),
                    read_output(&mut stderr, &mut err, &total, limit, &limit_hit),
                )
            };
            tokio::pin!(readers);
            let mut readers_done = false;
            // The operation's end is awaited from the start, beside the output: it is what shows
            // the exit, whether or not the streams have ended (a stream may stay open, or end
            // long before the operation does).
            let exit = self.observe_exit(deadline);
            tokio::pin!(exit);
            let mut exit_seen = false;
            while cause.is_none() && !exit_seen {
                tokio::select! {
                    _ = &mut readers, if !readers_done => readers_done = true,
                    seen = &mut exit => {
                        exit_seen = true;
                        ended = seen;
                        if ended.is_none() {
                            cause = Some(KillCause::Duration);
                        }
                    }
                    () = tokio::time::sleep_until(deadline) => cause = Some(KillCause::Duration),
                    () = limit_hit.notified() => cause = Some(KillCause::StreamTotal),
                }
                // A command that passes the total and exits at once ends the readers too;
                // whichever branch the select took, passing the total is what happened.
                if cause.is_none() && total.load(Ordering::Relaxed) > limit {
                    cause = Some(KillCause::StreamTotal);
                }
            }
            if cause.is_none() && !readers_done {
                // The operation ended; Incus closes its sockets right after. The output that
                // is still in flight gets the kill grace to arrive.
                let _ = tokio::time::timeout(KILL_GRACE, &mut readers).await;
                // A command that passes the total and exits at once: that output arrived after
                // the end was seen, and passing the total is still what happened.
                if total.load(Ordering::Relaxed) > limit {
                    cause = Some(KillCause::StreamTotal);
                }
            }
            if let Some(cause) = cause {
                tracing::info!(?cause, operation = %self.operation_id, "sending SIGKILL to the exec");
                if let Some(kill) = kill_tx.take() {
                    let _ = kill.send(());
                }
                // The output and the exit together: the operation may end while a stream is
                // still open, and its end is what decides.
                if ended.is_none() {
                    let grace = Instant::now() + KILL_GRACE;
                    let drained = async {
                        if !readers_done {
                            let _ = tokio::time::timeout_at(grace, &mut readers).await;
                        }
                    };
                    ended = tokio::join!(drained, self.observe_exit(grace)).1;
                }
            }
        }
        let status = status(ended.as_ref(), cause);
        match ended {
            Some(Ended::Final(operation)) => self.operation = operation,
            Some(Ended::Reported(reason)) => {
                return ExecOutcome {
                    reason: Some(reason),
                    operation: None,
                    ..self.outcome(status, out, err, cause.is_some())
                }
            }
            None => {}
        }
        let mut outcome = self.outcome(status, out, err, cause.is_some());
        if status == ExecStatus::Failed {
            outcome.reason = Some(operation_error(&self.operation));
        }
        outcome
    }

    /// Waits for the operation to end until `until`: its final object, or its failure as a
    /// standalone server's wait reported it when the object cannot be read. `None`: the end was
    /// not seen by `until`. Waits are asked one after another, at least
    /// [`MIN_POLL_INTERVAL`] apart, each bounded by the connection's timeout.
    async fn observe_exit(&self, until: Instant) -> Option<Ended> {
        let client = self.client;
        let cap = effective_wait(u64::MAX, client.connection.timeout());
        while Instant::now() < until {
            let asked = Instant::now();
            let remaining = until.saturating_duration_since(asked);
            let seconds = remaining.as_secs().max(1).min(cap);
            let waited = client
                .get_operation_wait_until(self.project, &self.operation_id, seconds, until)
                .await;
            match waited {
                Ok(WaitOutcome::Final(operation)) => return Some(Ended::Final(operation)),
                Ok(WaitOutcome::Failed { message, .. }) => {
                    if let Some(ended) = self.read_failed_operation(until, message).await {
                        return Some(ended);
                    }
                }
                Ok(WaitOutcome::NotFinished) | Err(ClientError::Timeout { .. }) => {}
                // A wait that breaks observed nothing: the next one may (a wait is a read, so
                // asking again resends nothing), until the bound. Giving up here would end the
                // command's collection early, or kill it before its duration has passed.
                Err(error) => tracing::warn!(%error, "an exec wait broke; asking again"),
            }
            let next = (asked + MIN_POLL_INTERVAL).min(until);
            tokio::time::sleep_until(next).await;
        }
        None
    }

    /// The wait reported a failure: the operation read back (a failed exec operation, for
    /// example `Command not found`, still carries `return`), or, when it cannot be read, the
    /// report itself where it is the operation's outcome
    /// ([`Client::wait_failure_is_outcome`]). An object still running means the wait broke.
    async fn read_failed_operation(&self, until: Instant, message: String) -> Option<Ended> {
        let read = self.client.get_operation(self.project, &self.operation_id);
        match tokio::time::timeout_at(until, read).await {
            Ok(Ok(single)) if is_final(&single.value) => Some(Ended::Final(single.value)),
            Ok(Ok(_)) => None,
            _ => self
                .client
                .wait_failure_is_outcome()
                .then_some(Ended::Reported(message)),
        }
    }

    fn outcome(
        &self,
        status: ExecStatus,
        stdout: StreamCapture,
        stderr: StreamCapture,
        killed: bool,
    ) -> ExecOutcome {
        let exit_code = match status {
            ExecStatus::Running | ExecStatus::Uncertain => None,
            _ => self.operation["metadata"]["return"].as_i64(),
        };
        ExecOutcome {
            status,
            exit_code,
            stdout,
            stderr,
            duration: self.started.elapsed(),
            timeout_seconds: self.timeout_seconds,
            operation_id: Some(self.operation_id.clone()),
            operation: Some(self.operation.clone()),
            killed,
            reason: None,
        }
    }
}

/// How collection saw the operation end.
#[derive(Debug)]
enum Ended {
    /// The final operation object.
    Final(Value),
    /// A standalone server's wait reported the operation's failure (this error), and the
    /// object could not be read back.
    Reported(String),
}

/// What ended the command, from how the operation was seen to end and whether (and why)
/// `SIGKILL` was sent:
/// - not seen: `running` (the spec's "an exit not observed");
/// - ended without an exit code (a failure reported without the object, or a final object
///   with no `return`): `failed`, since the end was observed and an exit was not;
/// - an exit code after no kill: `completed`;
/// - any exit code after the kill past the stream total: `output_limited`, since the output was
///   limited whatever ended the command;
/// - the kill's exit code (137) after the kill at the duration: `timed_out`;
/// - any other exit code after the kill at the duration: `completed`, since `SIGKILL` cannot be
///   caught, so the command ended on its own before the signal reached it.
fn status(ended: Option<&Ended>, cause: Option<KillCause>) -> ExecStatus {
    let exit_code = match ended {
        None => return ExecStatus::Running,
        Some(Ended::Reported(_)) => return ExecStatus::Failed,
        Some(Ended::Final(operation)) => operation["metadata"]["return"].as_i64(),
    };
    match (exit_code, cause) {
        (None, _) => ExecStatus::Failed,
        (Some(_), Some(KillCause::StreamTotal)) => ExecStatus::OutputLimited,
        (Some(KILLED_BY_SIGKILL), Some(KillCause::Duration)) => ExecStatus::TimedOut,
        (Some(_), _) => ExecStatus::Completed,
    }
}

/// The error of a final operation (`err`), or its status when it has none.
fn operation_error(operation: &Value) -> String {
    operation
        .get("err")
        .and_then(Value::as_str)
        .filter(|err| !err.is_empty())
        .or_else(|| operation.get("status").and_then(Value::as_str))
        .unwrap_or("the operation ended without an exit code")
        .to_owned()
}

/// Reads one output stream to its end, keeping the first bytes and counting the rest, and
/// records how it ended: only Incus's end-of-stream frame (a text frame) shows that every byte
/// was seen; the connection ending first cuts the stream.
async fn read_output<S>(
    socket: &mut WebSocketStream<S>,
    capture: &mut StreamCapture,
    total: &AtomicU64,
    limit: u64,
    limit_hit: &Notify,
) where
    S: AsyncRead + AsyncWrite + Unpin,
{
    loop {
        match socket.next().await {
            Some(Ok(Message::Binary(data))) => {
                capture.push(&data);
                let seen =
                    total.fetch_add(data.len() as u64, Ordering::Relaxed) + data.len() as u64;
                if seen > limit {
                    limit_hit.notify_one();
                }
            }
            Some(Ok(Message::Text(_))) => {
                capture.end = StreamEnd::Eof;
                return;
            }
            Some(Ok(Message::Close(_)) | Err(_)) | None => {
                capture.end = StreamEnd::Cut;
                return;
            }
            Some(Ok(_)) => {}
        }
    }
}

/// Sends stdin and then EOF (an empty text frame), then keeps answering pings.
async fn feed_stdin<S>(mut socket: WebSocketStream<S>, stdin: Vec<u8>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    if !stdin.is_empty() && socket.send(Message::binary(stdin)).await.is_err() {
        return;
    }
    if socket.send(Message::text("")).await.is_err() {
        return;
    }
    while let Some(Ok(_)) = socket.next().await {}
}

/// Holds the control channel open (closing it would kill the command) and sends `SIGKILL`
/// once when asked.
async fn hold_control<S>(mut socket: WebSocketStream<S>, kill: oneshot::Receiver<()>)
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut kill = Some(kill);
    loop {
        tokio::select! {
            asked = async { kill.as_mut().expect("guarded by the branch condition").await }, if kill.is_some() => {
                kill = None;
                if asked.is_ok() && socket.send(Message::text(SIGKILL_MESSAGE)).await.is_err() {
                    return;
                }
            }
            message = socket.next() => {
                if !matches!(message, Some(Ok(_))) {
                    return;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A websocket pair in memory: (client side, server side).
    async fn socket_pair() -> (
        WebSocketStream<tokio::io::DuplexStream>,
        WebSocketStream<tokio::io::DuplexStream>,
    ) {
        let (client_io, server_io) = tokio::io::duplex(64 * 1024);
        let server = tokio_tungstenite::accept_async(server_io);
        let client = tokio_tungstenite::client_async("ws://unix.socket/ws", client_io);
        let (server, client) = tokio::join!(server, client);
        (client.unwrap().0, server.unwrap())
    }

    #[tokio::test]
    async fn stdin_is_sent_as_binary_then_an_empty_text_frame() {
        let (client, mut server) = socket_pair().await;
        let feeder = tokio::spawn(feed_stdin(client, b"hello\n".to_vec()));
        let first = server.next().await.unwrap().unwrap();
        assert_eq!(first, Message::binary(b"hello\n".to_vec()));
        let eof = server.next().await.unwrap().unwrap();
        assert_eq!(eof, Message::text(""));
        drop(server);
        feeder.await.unwrap();
    }

    #[tokio::test]
    async fn sigkill_is_sent_once_over_the_control_channel() {
        let (client, mut server) = socket_pair().await;
        let (kill_tx, kill_rx) = oneshot::channel();
        let control = tokio::spawn(hold_control(client, kill_rx));
        kill_tx.send(()).unwrap();
        let message = server.next().await.unwrap().unwrap();
        let sent: Value = serde_json::from_str(message.to_text().unwrap()).unwrap();
        assert_eq!(
            sent,
            json!({"command": "signal", "args": null, "signal": 9})
        );
        // Nothing else follows: the next thing the server sees is the client going away.
        control.abort();
        assert!(!matches!(server.next().await, Some(Ok(Message::Text(_)))));
    }

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

    /// Reads one output stream whose server side sends `frames` and then goes away.
    async fn read_frames(frames: Vec<Message>) -> StreamCapture {
        let (mut client, mut server) = socket_pair().await;
        let server = tokio::spawn(async move {
            for frame in frames {
                server.send(frame).await.unwrap();
            }
            // Gone without a close frame, as Incus ends its exec sockets.
            drop(server);
        });
        let mut capture = StreamCapture::default();
        let limit_hit = Notify::new();
        read_output(
            &mut client,
            &mut capture,
            &AtomicU64::new(0),
            u64::MAX,
            &limit_hit,
        )
        .await;
        server.await.unwrap();
        capture
    }

    /// Only the end-of-stream frame shows that the whole stream was seen.
    #[tokio::test]
    async fn exec_stream_ended_by_its_end_of_stream_frame_is_whole() {
        let capture = read_frames(vec![Message::binary(b"abc".to_vec()), Message::text("")]).await;
        assert_eq!(capture.end(), StreamEnd::Eof);
        let stream = capture.to_json();
        assert_eq!(stream["data"], "abc");
        assert_eq!(stream["truncated"], false);
    }

    /// A stream whose connection ends before the end-of-stream frame was cut: its data is what
    /// arrived, and truncated says that it may not be all.
    #[tokio::test]
    async fn exec_stream_cut_before_its_end_of_stream_frame_is_truncated() {
        let capture = read_frames(vec![Message::binary(b"abc".to_vec())]).await;
        assert_eq!(capture.end(), StreamEnd::Cut);
        let stream = capture.to_json();
        assert_eq!(stream["data"], "abc");
        assert_eq!(stream["bytes"], 3);
        assert_eq!(stream["captured_bytes"], 3);
        assert_eq!(stream["truncated"], true);

        let nothing = read_frames(Vec::new()).await;
        assert_eq!(nothing.end(), StreamEnd::Cut);
        assert_eq!(
            nothing.to_json()["truncated"],
            true,
            "lost output is not no output"
        );

        let closed = read_frames(vec![Message::Close(None)]).await;
        assert_eq!(closed.end(), StreamEnd::Cut);
    }

    /// A stream cut in the middle of a character keeps the text before it, as UTF-8.
    #[tokio::test]
    async fn exec_stream_cut_inside_a_character_keeps_the_text_before_it() {
        let capture = read_frames(vec![Message::binary(b"ab\xc3".to_vec())]).await;
        let stream = capture.to_json();
        assert_eq!(stream["encoding"], "utf-8");
        assert_eq!(stream["data"], "ab");
        assert_eq!(stream["captured_bytes"], 2);
        assert_eq!(stream["bytes"], 3);
        assert_eq!(stream["truncated"], true);
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

    #[test]
    fn exec_body_is_non_interactive_without_recording() {
        let body = exec_body(&ExecRequest {
            command: vec!["echo".into(), "hi".into()],
            ..ExecRequest::default()
        });
        assert_eq!(body["wait-for-websocket"], true);
        assert_eq!(body["interactive"], false);
        assert_eq!(body["record-output"], false);
        assert_eq!(body["command"], json!(["echo", "hi"]));
    }
}
