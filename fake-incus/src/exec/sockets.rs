//! One exec websocket: a writer (keepalive pings, data, EOF) and a reader (stdin, control
//! messages, disconnects), both ended by the session's close token.
//!
//! Closing is a lingering close: the write side is shut down (the client reads everything that
//! was sent, then the end of the connection, as after the daemon's close) while what the client
//! still sends is read and discarded for a bounded time. A client that reads late (a loaded one)
//! answers the keepalive ping sent at connect only when it reads it, after the command ended: a
//! full close would make that pong (or a late end of stdin) fail with a broken pipe, and a client
//! library that reports it loses the output still unread, where the daemon's slower start makes
//! such a client read the ping before the end.

use super::{Ws, SIGKILL};
use crate::faults::exec::KillFilter;
use crate::journal::{ControlMessage, Journal};
use bytes::Bytes;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio_tungstenite::tungstenite::Message;
use tokio_util::sync::CancellationToken;

const KEEPALIVE: Duration = Duration::from_secs(10);
/// How long a closed socket keeps reading (and discarding) what its client still sends.
const LINGER: Duration = Duration::from_secs(5);

/// The signal path to the command, through the session's SIGKILL filter (exec faults).
#[derive(Clone)]
pub(super) struct Signals {
    tx: mpsc::UnboundedSender<i32>,
    filter: Arc<KillFilter>,
}

impl Signals {
    pub(super) fn new(tx: mpsc::UnboundedSender<i32>, filter: Arc<KillFilter>) -> Self {
        Self { tx, filter }
    }

    /// Sends `signal` to the command; `false` when a fault ignored it or the command is gone.
    pub(super) fn send(&self, signal: i32) -> bool {
        self.filter.lets_through(signal) && self.tx.send(signal).is_ok()
    }
}

/// What a socket writer sends.
pub(super) enum Out {
    Data(Bytes),
    Eof,
    /// Answered once everything queued before it is written to the socket.
    Flushed(oneshot::Sender<()>),
}

/// Forwards command output to a socket writer (or discards it when there is none).
pub(super) async fn pump(
    mut rx: mpsc::Receiver<Bytes>,
    writer: Option<mpsc::Sender<Out>>,
    pty: bool,
) {
    while let Some(chunk) = rx.recv().await {
        let Some(writer) = &writer else { continue };
        let chunk = if pty { to_crlf(&chunk) } else { chunk };
        let _ = writer.send(Out::Data(chunk)).await;
    }
}

fn to_crlf(chunk: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(chunk.len() + 8);
    for (i, &b) in chunk.iter().enumerate() {
        if b == b'\n' && (i == 0 || chunk[i - 1] != b'\r') {
            out.push(b'\r');
        }
        out.push(b);
    }
    Bytes::from(out)
}

/// Sends pings and queued frames until the session closes this socket; then ends it without a
/// close frame (the peer reads the end of the connection, as after the daemon's close), once
/// the reader gave its half back ([`linger`]).
pub(super) async fn writer(
    mut sink: SplitSink<Ws, Message>,
    out: mpsc::Receiver<Out>,
    closer: CancellationToken,
    stream: oneshot::Receiver<SplitStream<Ws>>,
    shutdown: CancellationToken,
) {
    send_until_closed(&mut sink, out, &closer).await;
    closer.cancelled().await;
    if let Ok(stream) = stream.await {
        if let Ok(ws) = sink.reunite(stream) {
            linger(ws.into_inner(), &shutdown).await;
        }
    }
}

/// Ends a connection: shuts its write side down, then reads and discards what the peer still
/// sends until it closes, for at most [`LINGER`] or until the fake shuts down.
pub(super) async fn linger<IO>(mut io: IO, shutdown: &CancellationToken)
where
    IO: AsyncRead + AsyncWrite + Unpin,
{
    let drain = async {
        if io.shutdown().await.is_err() {
            return;
        }
        let mut buf = [0u8; 4096];
        while matches!(io.read(&mut buf).await, Ok(n) if n > 0) {}
    };
    tokio::select! {
        _ = tokio::time::timeout(LINGER, drain) => {}
        () = shutdown.cancelled() => {}
    }
}

/// The keepalive ping at connect, then queued frames and pings until `closer` is cancelled or
/// the connection fails.
async fn send_until_closed(
    sink: &mut SplitSink<Ws, Message>,
    mut out: mpsc::Receiver<Out>,
    closer: &CancellationToken,
) {
    if sink
        .send(Message::Ping(Bytes::from_static(b"keepalive")))
        .await
        .is_err()
    {
        return;
    }
    let mut ticker = tokio::time::interval_at(tokio::time::Instant::now() + KEEPALIVE, KEEPALIVE);
    let mut open = true;
    loop {
        tokio::select! {
            biased;
            msg = out.recv(), if open => {
                let frame = match msg {
                    Some(Out::Data(bytes)) => Message::Binary(bytes),
                    Some(Out::Eof) => Message::Text(String::new().into()),
                    Some(Out::Flushed(ack)) => { let _ = ack.send(()); continue; }
                    None => { open = false; continue; }
                };
                if sink.send(frame).await.is_err() {
                    break;
                }
            }
            () = closer.cancelled() => break,
            _ = ticker.tick() => {
                if sink.send(Message::Ping(Bytes::from_static(b"keepalive"))).await.is_err() {
                    break;
                }
            }
        }
    }
}

/// Reads what the client sends on one socket.
pub(super) struct Reader {
    pub(super) fd: String,
    /// Where control messages are recorded, on the entry of this socket's upgrade request.
    pub(super) journal: Journal,
    pub(super) seq: u64,
    pub(super) closer: CancellationToken,
    pub(super) stdin: Option<mpsc::Sender<Bytes>>,
    pub(super) signals: Signals,
    pub(super) control_connected: Arc<AtomicBool>,
    pub(super) exited: Arc<AtomicBool>,
    pub(super) client_eof: Arc<Notify>,
}

impl Reader {
    /// Reads until the socket is closed; gives the stream half back for the close.
    pub(super) async fn run(mut self, mut stream: SplitStream<Ws>) -> SplitStream<Ws> {
        loop {
            let msg = tokio::select! {
                msg = stream.next() => msg,
                () = self.closer.cancelled() => break,
            };
            let ended = !matches!(msg, Some(Ok(_)));
            match msg {
                Some(Ok(Message::Binary(data))) => self.on_data(data).await,
                Some(Ok(Message::Text(text))) => self.on_text(text.as_str()),
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => self.on_end(),
                Some(Ok(_)) => {}
            }
            if ended {
                self.closer.cancel();
                break;
            }
        }
        stream
    }

    async fn on_data(&mut self, data: Bytes) {
        match self.fd.as_str() {
            "0" => {
                if let Some(stdin) = &self.stdin {
                    let _ = stdin.send(data).await;
                }
            }
            "1" | "2" => self.kill_if_uncontrolled(),
            _ => {}
        }
    }

    fn on_text(&mut self, text: &str) {
        match self.fd.as_str() {
            "0" => self.eof(),
            "1" | "2" => self.kill_if_uncontrolled(),
            _ => self.on_control(text),
        }
    }

    fn on_end(&mut self) {
        match self.fd.as_str() {
            "0" => self.eof(),
            "1" | "2" => self.kill_if_uncontrolled(),
            _ => {
                if !self.exited.load(Ordering::SeqCst) {
                    self.signals.send(SIGKILL);
                }
            }
        }
    }

    fn eof(&mut self) {
        self.stdin = None;
        self.client_eof.notify_one();
    }

    /// Anything the client sends on stdout/stderr while control is absent kills the command.
    fn kill_if_uncontrolled(&self) {
        if !self.control_connected.load(Ordering::SeqCst) && !self.exited.load(Ordering::SeqCst) {
            self.signals.send(SIGKILL);
        }
    }

    /// `{"command": "signal", "signal": N}`; `window-resize` is accepted; the rest is ignored.
    /// Every message is recorded in the journal, with whether its signal reached the command.
    fn on_control(&self, text: &str) {
        let msg = serde_json::from_str::<Value>(text).ok();
        let signal = msg
            .as_ref()
            .filter(|m| m.get("command").and_then(Value::as_str) == Some("signal"))
            .and_then(|m| m.get("signal").and_then(Value::as_i64))
            .and_then(|s| i32::try_from(s).ok());
        let delivered = signal.is_some_and(|signal| self.signals.send(signal));
        self.journal
            .add_control_message(self.seq, ControlMessage::new(text, signal, delivered));
    }
}
