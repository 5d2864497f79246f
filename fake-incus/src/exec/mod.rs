//! Exec sessions: the websocket plumbing between a client and the built-in interpreter.
//!
//! Protocol (reference §11): `POST …/exec` creates a websocket operation whose metadata holds one
//! secret per fd (`0`, `1`, `2`, `control`; interactive: `0`, `control`). Each fd connects to
//! `GET /1.0/operations/{id}/websocket?secret=…`. Once the required fds are connected (within the
//! connect timeout) the command runs. Data are binary frames, end of stream is an empty text
//! frame, the server pings `keepalive` at connect and every 10 s, and at the end the server
//! closes the TCP connections without a close frame. The exit status goes to `metadata.return`.

pub(crate) mod interpreter;

use crate::api::{is_upgrade, Ctx};
use crate::app::{op_not_found, App};
use crate::envelope::{self, ApiError, ApiResult};
use crate::faults::Fault;
use bytes::Bytes;
use futures_util::stream::{SplitSink, SplitStream};
use futures_util::{SinkExt, StreamExt};
use http::{header, HeaderValue, Request, Response, StatusCode};
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{mpsc, Notify};
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;

pub(crate) use interpreter::{incus_environment, ExecRequest};

type Ws = WebSocketStream<TokioIo<Upgraded>>;
const KEEPALIVE: Duration = Duration::from_secs(10);
const SIGKILL: i32 = 9;

/// One exec operation's websockets.
pub(crate) struct Session {
    secrets: BTreeMap<String, String>,
    connected: Mutex<BTreeSet<String>>,
    sockets: mpsc::UnboundedSender<(String, Ws)>,
}

/// A fresh 64-hex secret.
fn secret() -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(uuid::Uuid::new_v4().as_bytes()))
}

impl Session {
    /// The fds and their secrets, for the operation's metadata.
    pub(crate) fn fds(&self) -> Value {
        serde_json::to_value(&self.secrets).unwrap_or(Value::Null)
    }
}

/// Registers a websocket session for operation `op_id` and starts its runner.
pub(crate) fn start_websocket_session(
    app: &Arc<App>,
    op_id: &str,
    req: ExecRequest,
    interactive: bool,
    fault: Option<Fault>,
) -> Value {
    let fds: &[&str] = if interactive {
        &["0", "control"]
    } else {
        &["0", "1", "2", "control"]
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let session = Arc::new(Session {
        secrets: fds.iter().map(|fd| (fd.to_string(), secret())).collect(),
        connected: Mutex::new(BTreeSet::new()),
        sockets: tx,
    });
    let fds = session.fds();
    app.exec
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(op_id.into(), session.clone());
    let (runner, ends) = Runner::new(Arc::clone(app), op_id.to_string(), interactive, fault);
    tokio::spawn(runner.run(rx, ends, req));
    fds
}

/// Runs a task-mode exec (`wait-for-websocket: false`): no I/O, output discarded.
pub(crate) fn start_task_session(
    app: &Arc<App>,
    op_id: &str,
    req: ExecRequest,
    fault: Option<Fault>,
) {
    let app = Arc::clone(app);
    let id = op_id.to_string();
    tokio::spawn(async move {
        if let Some(failure) = interpreter::start_failure(&req.command) {
            app.set_operation_metadata(&id, serde_json::json!({"return": failure.exit_status()}));
            app.finish_operation(&id, Err(start_failure_error(failure)));
            return;
        }
        let (_stdin_tx, stdin) = mpsc::channel(1);
        let (stdout, out_rx) = mpsc::channel(16);
        let (stderr, err_rx) = mpsc::channel(16);
        let (sig_tx, signals) = mpsc::unbounded_channel();
        tokio::spawn(discard(out_rx));
        tokio::spawn(discard(err_rx));
        let io = interpreter::ExecIo {
            stdin,
            stdout,
            stderr,
            signals,
        };
        let code = tokio::select! {
            code = interpreter::run(req, io) => code,
            () = app.shutdown.cancelled() => return,
        };
        drop(sig_tx);
        if let Some(Fault::ExecExitAfter { ms }) = fault {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        app.finish_operation(&id, Ok(Some(serde_json::json!({"return": code}))));
    });
}

async fn discard(mut rx: mpsc::Receiver<Bytes>) {
    while rx.recv().await.is_some() {}
}

fn start_failure_error(failure: interpreter::StartFailure) -> ApiError {
    match failure {
        interpreter::StartFailure::CommandNotFound => ApiError::bad_request(failure.message()),
        interpreter::StartFailure::EmptyCommand => ApiError::internal(failure.message()),
    }
}

/// `GET /1.0/operations/{id}/websocket?secret=…`.
pub(crate) fn connect(ctx: &Ctx, mut req: Request<Bytes>, op_id: &str) -> ApiResult {
    let secret = ctx.param("secret").map(String::from);
    let final_status = ctx.app.ops().get(op_id).map(|op| op.status.is_final());
    let secret = match (final_status, secret) {
        (None, None) => return Err(ApiError::bad_request("Missing websocket secret")),
        (None, Some(_)) => return Err(op_not_found()),
        (Some(_), None) => return Err(ApiError::internal("missing secret")),
        (Some(true), Some(_)) => {
            return Err(ApiError::internal(
                "Only running operations can be connected",
            ))
        }
        (Some(false), Some(secret)) => secret,
    };
    let session = ctx
        .app
        .exec
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(op_id)
        .cloned();
    let fd = session
        .as_ref()
        .and_then(|s| {
            s.secrets
                .iter()
                .find(|(_, s)| **s == secret)
                .map(|(fd, _)| fd.clone())
        })
        .ok_or_else(|| ApiError::new(403, "Forbidden"))?;
    let session = session.ok_or_else(|| ApiError::new(403, "Forbidden"))?;
    let key = req.headers().get("sec-websocket-key").cloned();
    let Some(key) = key.filter(|_| is_upgrade(&req)) else {
        return Ok(bad_upgrade());
    };
    let duplicate = !session
        .connected
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(fd.clone());
    let on_upgrade = hyper::upgrade::on(&mut req);
    let tx = session.sockets.clone();
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        if duplicate {
            return; // the daemon drops a second connection for the same fd at once
        }
        let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        let _ = tx.send((fd, ws));
    });
    let mut resp = Response::new(envelope::full(Bytes::new()));
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = resp.headers_mut();
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    if let Ok(accept) = HeaderValue::from_str(&derive_accept_key(key.as_bytes())) {
        headers.insert("sec-websocket-accept", accept);
    }
    Ok(resp)
}

/// What a plain GET on the websocket endpoint gets.
fn bad_upgrade() -> Response<envelope::Body> {
    let mut body = b"Bad Request\n".to_vec();
    let envelope = ApiError::internal("websocket: the client is not using the websocket protocol: 'upgrade' token not found in 'Connection' header").envelope();
    body.extend(serde_json::to_vec(&envelope).unwrap_or_default());
    body.push(b'\n');
    let mut resp = Response::new(envelope::full(body));
    *resp.status_mut() = StatusCode::BAD_REQUEST;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

/// What a socket writer sends.
enum Out {
    Data(Bytes),
    Eof,
}

/// Drives one exec session from connection to the operation's end.
struct Runner {
    app: Arc<App>,
    op_id: String,
    interactive: bool,
    fault: Option<Fault>,
    /// Closes every socket of the session.
    done: CancellationToken,
    /// Per-fd close, child tokens of `done`.
    closers: HashMap<String, CancellationToken>,
    writers: HashMap<String, mpsc::Sender<Out>>,
    stdin_tx: Option<mpsc::Sender<Bytes>>,
    signals: Signals,
    control_connected: Arc<AtomicBool>,
    exited: Arc<AtomicBool>,
    client_eof: Arc<Notify>,
    attached: BTreeSet<String>,
}

/// The signal path to the command, honouring the "ignore SIGKILL" fault.
#[derive(Clone)]
struct Signals {
    tx: mpsc::UnboundedSender<i32>,
    ignore_kill: bool,
}

impl Signals {
    fn send(&self, signal: i32) {
        if signal == SIGKILL && self.ignore_kill {
            tracing::debug!("exec: SIGKILL ignored by fault");
            return;
        }
        let _ = self.tx.send(signal);
    }
}

/// The command's ends of the stdin and signal channels.
struct CommandEnds {
    stdin: mpsc::Receiver<Bytes>,
    signals: mpsc::UnboundedReceiver<i32>,
}

impl Runner {
    fn new(
        app: Arc<App>,
        op_id: String,
        interactive: bool,
        fault: Option<Fault>,
    ) -> (Self, CommandEnds) {
        let (stdin_tx, stdin) = mpsc::channel(16);
        let (sig_tx, signals) = mpsc::unbounded_channel();
        let done = app.shutdown.child_token();
        let ignore_kill = matches!(fault, Some(Fault::ExecIgnoreSigkill));
        let runner = Self {
            app,
            op_id,
            interactive,
            fault,
            done,
            closers: HashMap::new(),
            writers: HashMap::new(),
            stdin_tx: Some(stdin_tx),
            signals: Signals {
                tx: sig_tx,
                ignore_kill,
            },
            control_connected: Arc::new(AtomicBool::new(false)),
            exited: Arc::new(AtomicBool::new(false)),
            client_eof: Arc::new(Notify::new()),
            attached: BTreeSet::new(),
        };
        (runner, CommandEnds { stdin, signals })
    }

    fn required(&self) -> &'static [&'static str] {
        if self.interactive {
            &["0", "control"]
        } else {
            &["0", "1", "2"]
        }
    }

    async fn run(
        mut self,
        mut sockets: mpsc::UnboundedReceiver<(String, Ws)>,
        ends: CommandEnds,
        req: ExecRequest,
    ) {
        let deadline = tokio::time::sleep(self.app.settings.exec_connect_timeout);
        tokio::pin!(deadline);
        while !self.required().iter().all(|fd| self.attached.contains(*fd)) {
            tokio::select! {
                Some((fd, ws)) = sockets.recv() => self.attach(fd, ws),
                () = &mut deadline => {
                    self.app.finish_operation(&self.op_id, Err(ApiError::internal("Timed out waiting for websockets to connect")));
                    self.done.cancel();
                    return;
                }
                () = self.done.cancelled() => return,
            }
        }
        if let Some(failure) = interpreter::start_failure(&req.command) {
            self.finish(failure.exit_status(), Some(start_failure_error(failure)));
            return;
        }
        let command = run_command(self.plan(), ends, req);
        tokio::pin!(command);
        let code = loop {
            tokio::select! {
                code = &mut command => break code,
                Some((fd, ws)) = sockets.recv() => self.attach(fd, ws),
                () = self.done.cancelled() => return,
            }
        };
        self.exited.store(true, Ordering::SeqCst);
        if self.interactive {
            let client_eof = self.client_eof.clone();
            tokio::select! {
                () = client_eof.notified() => {}
                () = self.done.cancelled() => return,
            }
        }
        self.finish(code, None);
    }

    /// What the command needs from the session, taken when it starts.
    fn plan(&self) -> CommandPlan {
        let (out_fd, err_fd) = if self.interactive {
            ("0", "0")
        } else {
            ("1", "2")
        };
        let eof_fds: &[&str] = if self.interactive {
            &["0"]
        } else {
            &["1", "2"]
        };
        CommandPlan {
            out: self.writers.get(out_fd).cloned(),
            err: self.writers.get(err_fd).cloned(),
            eof: eof_fds
                .iter()
                .filter_map(|fd| self.writers.get(*fd).cloned())
                .collect(),
            close_control: self
                .interactive
                .then(|| self.closers.get("control").cloned())
                .flatten(),
            pty: self.interactive,
            exit_after: match &self.fault {
                Some(Fault::ExecExitAfter { ms }) => Some(Duration::from_millis(*ms)),
                _ => None,
            },
        }
    }

    /// Puts `return` in the metadata, settles the operation and closes every socket.
    fn finish(&self, code: i32, error: Option<ApiError>) {
        let mut metadata = self.app.operation_metadata(&self.op_id);
        if let Some(object) = metadata.as_object_mut() {
            object.insert("return".into(), code.into());
        }
        match error {
            Some(err) => {
                self.app.set_operation_metadata(&self.op_id, metadata);
                self.app.finish_operation(&self.op_id, Err(err));
            }
            None => self.app.finish_operation(&self.op_id, Ok(Some(metadata))),
        }
        self.done.cancel();
    }

    /// Starts the reader and writer of a newly connected socket.
    fn attach(&mut self, fd: String, ws: Ws) {
        self.attached.insert(fd.clone());
        if let Some(Fault::ExecDropWebsocket { fd: dropped }) = &self.fault {
            if *dropped == fd {
                tracing::debug!(%fd, "exec: websocket dropped by fault");
                drop(ws);
                self.on_gone(&fd);
                return;
            }
        }
        let closer = self.done.child_token();
        let (sink, stream) = ws.split();
        let (out_tx, out_rx) = mpsc::channel(16);
        tokio::spawn(writer(sink, out_rx, closer.clone()));
        self.writers.insert(fd.clone(), out_tx);
        let reader = Reader {
            fd: fd.clone(),
            closer: closer.clone(),
            stdin: if fd == "0" {
                self.stdin_tx.take()
            } else {
                None
            },
            signals: self.signals.clone(),
            control_connected: self.control_connected.clone(),
            exited: self.exited.clone(),
            client_eof: self.client_eof.clone(),
        };
        if fd == "control" {
            self.control_connected.store(true, Ordering::SeqCst);
        }
        tokio::spawn(reader.run(stream));
        self.closers.insert(fd, closer);
    }

    /// A socket that is gone at once counts like a client disconnect.
    fn on_gone(&mut self, fd: &str) {
        match fd {
            "0" => {
                self.stdin_tx = None;
                self.client_eof.notify_one();
            }
            "control" => self.signals.send(SIGKILL),
            _ => {}
        }
    }
}

/// The sockets a running command writes to.
struct CommandPlan {
    out: Option<mpsc::Sender<Out>>,
    err: Option<mpsc::Sender<Out>>,
    eof: Vec<mpsc::Sender<Out>>,
    close_control: Option<CancellationToken>,
    pty: bool,
    exit_after: Option<Duration>,
}

/// Runs the interpreter with output pumped to the sockets; sends the EOF frames after it.
async fn run_command(plan: CommandPlan, ends: CommandEnds, req: ExecRequest) -> i32 {
    let (stdout, out_rx) = mpsc::channel(16);
    let (stderr, err_rx) = mpsc::channel(16);
    let pumps = futures_util::future::join(
        pump(out_rx, plan.out, plan.pty),
        pump(err_rx, plan.err, plan.pty),
    );
    let io = interpreter::ExecIo {
        stdin: ends.stdin,
        stdout,
        stderr,
        signals: ends.signals,
    };
    let (code, _) = futures_util::future::join(interpreter::run(req, io), pumps).await;
    if let Some(delay) = plan.exit_after {
        tokio::time::sleep(delay).await;
    }
    for writer in &plan.eof {
        let _ = writer.send(Out::Eof).await;
    }
    if let Some(closer) = plan.close_control {
        closer.cancel();
    }
    code
}

/// Forwards command output to a socket writer (or discards it when there is none).
async fn pump(mut rx: mpsc::Receiver<Bytes>, writer: Option<mpsc::Sender<Out>>, pty: bool) {
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

/// Sends pings and queued frames until the session closes this socket; then drops it without a
/// close frame (bare TCP close, as the daemon does).
async fn writer(
    mut sink: SplitSink<Ws, Message>,
    mut out: mpsc::Receiver<Out>,
    closer: CancellationToken,
) {
    let mut ticker = tokio::time::interval(KEEPALIVE);
    let mut open = true;
    loop {
        tokio::select! {
            biased;
            msg = out.recv(), if open => {
                let frame = match msg {
                    Some(Out::Data(bytes)) => Message::Binary(bytes),
                    Some(Out::Eof) => Message::Text(String::new().into()),
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
    drop(out);
    closer.cancelled().await;
}

/// Reads what the client sends on one socket.
struct Reader {
    fd: String,
    closer: CancellationToken,
    stdin: Option<mpsc::Sender<Bytes>>,
    signals: Signals,
    control_connected: Arc<AtomicBool>,
    exited: Arc<AtomicBool>,
    client_eof: Arc<Notify>,
}

impl Reader {
    async fn run(mut self, mut stream: SplitStream<Ws>) {
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
                break;
            }
        }
        self.closer.cancelled().await;
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
    fn on_control(&self, text: &str) {
        let Ok(msg) = serde_json::from_str::<Value>(text) else {
            return;
        };
        if msg.get("command").and_then(Value::as_str) == Some("signal") {
            if let Some(signal) = msg.get("signal").and_then(Value::as_i64) {
                self.signals.send(signal as i32);
            }
        }
    }
}
