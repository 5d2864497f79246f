//! Exec sessions: the websocket plumbing between a client and the built-in interpreter.
//!
//! Protocol (reference §11): `POST …/exec` creates a websocket operation whose metadata holds one
//! secret per fd (`0`, `1`, `2`, `control`; interactive: `0`, `control`). Each fd connects to
//! `GET /1.0/operations/{id}/websocket?secret=…`. Once the required fds are connected (within the
//! connect timeout) the command runs. Data are binary frames, end of stream is an empty text
//! frame, the server pings `keepalive` at connect and every 10 s, and at the end the server
//! closes the TCP connections without a close frame (a lingering close, see `sockets`). The
//! exit status goes to `metadata.return`.

/// The interpreter: the `fake-shell` crate.
pub(crate) use fake_shell as interpreter;
mod console;
mod runner;
mod sockets;
mod task;

use crate::envelope::ApiError;
use crate::faults::exec::ExecFaults;
use crate::faults::operation::OperationFault;
use crate::journal::Journal;
use crate::operations::Operations;
use bytes::Bytes;
use hyper::upgrade::{OnUpgrade, Upgraded};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;

pub(crate) use console::ConsoleProgram;
pub(crate) use interpreter::ExecRequest;
use runner::Runner;
pub(crate) use task::Recording;

type Ws = WebSocketStream<crate::cluster::Severable<TokioIo<Upgraded>>>;
/// A connected socket: its fd, the websocket, the journal sequence of its upgrade request.
type Socket = (String, Ws, u64);
const SIGKILL: i32 = 9;

/// Waits until every change made so far is durable (`--state-dir`), given by the app once it
/// keeps the state on disk; an error says why it could not be.
pub(crate) type Durable = Arc<
    dyn Fn() -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<(), String>> + Send>>
        + Send
        + Sync,
>;

/// Recorded exec output files per instance: (project, instance) -> file name -> bytes.
pub(crate) type ExecLogs = BTreeMap<(String, String), BTreeMap<String, Bytes>>;

/// The exec subsystem: the websocket sessions by operation id and the recorded output.
pub(crate) struct Exec {
    sessions: Mutex<HashMap<String, Arc<Session>>>,
    logs: Mutex<ExecLogs>,
    operations: Arc<Operations>,
    journal: Journal,
    /// How long a websocket session waits for its fds.
    connect_timeout: Duration,
    /// How long a websocket session waits, once its fds are attached, before the command starts.
    start_delay: Duration,
    /// What a command's end waits for before it is reported: its file writes on disk.
    durable: std::sync::OnceLock<Durable>,
}

impl Exec {
    pub(crate) fn new(
        operations: Arc<Operations>,
        journal: Journal,
        connect_timeout: Duration,
        start_delay: Duration,
    ) -> Arc<Self> {
        Arc::new(Self {
            sessions: Mutex::new(HashMap::new()),
            logs: Mutex::new(ExecLogs::new()),
            operations,
            journal,
            connect_timeout,
            start_delay,
            durable: std::sync::OnceLock::new(),
        })
    }

    /// From now on, a command's end is reported (its streams' end, its operation) only once what
    /// it wrote is durable.
    pub(crate) fn report_when_durable(&self, durable: Durable) {
        let _ = self.durable.set(durable);
    }

    /// Waits until what the command wrote is durable; a failure is logged (the operation then
    /// reports as usual: the API's answers wait for durability themselves and fail there).
    pub(crate) async fn durable(&self) {
        if let Some(durable) = self.durable.get() {
            if let Err(error) = durable().await {
                tracing::error!(%error, "exec: the command's writes are not durable");
            }
        }
    }

    /// The recorded exec output, locked. Never hold it across an `.await`.
    pub(crate) fn logs(&self) -> MutexGuard<'_, ExecLogs> {
        self.logs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn sessions(&self) -> MutexGuard<'_, HashMap<String, Arc<Session>>> {
        self.sessions
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Forgets every websocket session (reset).
    pub(crate) fn clear_sessions(&self) {
        self.sessions().clear();
    }

    /// The websocket session of operation `op_id`.
    pub(crate) fn session(&self, op_id: &str) -> Option<Arc<Session>> {
        self.sessions().get(op_id).cloned()
    }

    /// Registers a websocket session for operation `op_id` and starts its runner; returns the
    /// fds and their secrets.
    pub(crate) fn start_websocket_session(
        self: &Arc<Self>,
        op_id: &str,
        req: ExecRequest,
        interactive: bool,
        faults: ExecFaults,
        op_fault: Option<OperationFault>,
    ) -> Value {
        let fds: &[&str] = if interactive {
            &["0", "control"]
        } else {
            &["0", "1", "2", "control"]
        };
        let (fds, rx) = self.register(op_id, fds);
        let (runner, ends) = Runner::new(
            Arc::clone(self),
            op_id.to_string(),
            interactive,
            faults,
            op_fault,
        );
        let exec = Arc::clone(self);
        let id = op_id.to_string();
        tokio::spawn(async move {
            runner.run(rx, ends, req).await;
            exec.sessions().remove(&id);
        });
        fds
    }

    /// Registers the websocket session of operation `op_id` with these fds; returns their secrets
    /// (the operation's `fds`) and the receiver of the sockets that connect.
    fn register(&self, op_id: &str, fds: &[&str]) -> (Value, mpsc::UnboundedReceiver<Socket>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let session = Arc::new(Session {
            secrets: fds.iter().map(|fd| (fd.to_string(), secret())).collect(),
            connected: Mutex::new(BTreeSet::new()),
            sockets: tx,
            shutdown: self.operations.shutdown.clone(),
        });
        let fds = session.fds();
        self.sessions().insert(op_id.into(), session);
        (fds, rx)
    }

    /// Runs a task-mode exec (see [`task`]).
    pub(crate) fn start_task_session(
        self: &Arc<Self>,
        op_id: &str,
        req: ExecRequest,
        faults: ExecFaults,
        op_fault: Option<OperationFault>,
        record: Option<Recording>,
    ) {
        task::start_task_session(self, op_id, req, faults, op_fault, record);
    }
}

/// One exec operation's websockets.
pub(crate) struct Session {
    secrets: BTreeMap<String, String>,
    connected: Mutex<BTreeSet<String>>,
    /// Connected sockets for the runner: fd, socket, journal sequence of the upgrade.
    sockets: mpsc::UnboundedSender<Socket>,
    /// The fake's shutdown, which ends the close of a socket that came too late.
    shutdown: CancellationToken,
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

    /// The fd a secret belongs to.
    pub(crate) fn fd_for(&self, secret: &str) -> Option<String> {
        self.secrets
            .iter()
            .find(|(_, s)| *s == secret)
            .map(|(fd, _)| fd.clone())
    }

    /// Hands the connection of `fd` to the runner once upgraded (request `seq` in the
    /// journal). A second connection for the same fd is dropped at once, as the daemon does.
    /// One whose upgrade completes after the session ended is closed as every exec socket is
    /// ([`sockets::linger`]): the client reads the end, and what it still sends is no broken pipe.
    /// On a cluster, `life` is that of the instance's member: the stream ends when it dies.
    pub(crate) fn accept(
        &self,
        fd: String,
        on_upgrade: OnUpgrade,
        seq: u64,
        life: Option<CancellationToken>,
    ) {
        let duplicate = !self
            .connected
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(fd.clone());
        let tx = self.sockets.clone();
        let shutdown = self.shutdown.clone();
        tokio::spawn(async move {
            let Ok(upgraded) = on_upgrade.await else {
                return;
            };
            if duplicate {
                return;
            }
            let io = crate::cluster::Severable::new(TokioIo::new(upgraded), life);
            let ws = WebSocketStream::from_raw_socket(io, Role::Server, None).await;
            if let Err(mpsc::error::SendError((_, late, _))) = tx.send((fd, ws, seq)) {
                sockets::linger(late.into_inner(), &shutdown).await;
            }
        });
    }
}

/// Why Incus would not start a command at all, as it reports it: an empty command fails the
/// operation with "Failed to retrieve PID of executing child process", its return -1.
pub(super) fn start_failure(command: &[String]) -> Option<(i32, ApiError)> {
    command.is_empty().then(|| {
        let message = "Failed to retrieve PID of executing child process";
        (
            interpreter::EMPTY_COMMAND_STATUS,
            ApiError::internal(message),
        )
    })
}

/// The operation's error for a command that ended with `status`, as the daemon reports them:
/// "Command not found" for 127 and "Command not executable" for 126, whatever the command was
/// (`sh -c 'exit 127'` too).
pub(super) fn exit_error(status: i32) -> Option<ApiError> {
    match status {
        interpreter::NOT_FOUND_STATUS => Some(ApiError::bad_request("Command not found")),
        interpreter::NOT_EXECUTABLE_STATUS => Some(ApiError::bad_request("Command not executable")),
        _ => None,
    }
}

/// The environment Incus gives an exec'd command (as shown in the operation's metadata): the
/// request's variables over the defaults `PATH`, `LANG=C.UTF-8`, and `HOME=/root` with
/// `USER=root` for uid 0.
pub(crate) fn incus_environment(
    requested: &BTreeMap<String, String>,
    user: u32,
) -> BTreeMap<String, String> {
    let mut env = requested.clone();
    let mut default = |key: &str, value: &str| {
        env.entry(key.to_owned())
            .or_insert_with(|| value.to_owned());
    };
    default("PATH", interpreter::DEFAULT_PATH);
    default("LANG", "C.UTF-8");
    if user == 0 {
        default("HOME", "/root");
        default("USER", "root");
    }
    env
}
