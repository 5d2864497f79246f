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
use super::{effective_wait, exec_duration_cap, exec_stream_total, Client, KILL_GRACE};

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
    /// The first [`CAPTURE_BYTES`] bytes.
    pub(crate) captured: Vec<u8>,
    /// Every byte seen.
    pub(crate) total: u64,
    pub(crate) end: StreamEnd,
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

impl StreamCapture {
    pub(crate) fn push(&mut self, data: &[u8]) {
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
    //! What goes here: tests of this module on its own (bounded, non-interactive exec over the
    //! operation's websockets (Go); a promise of the whole `run()` or of the client against a fake
    //! Incus, seen through the public API, goes in `tests/integration`.

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
