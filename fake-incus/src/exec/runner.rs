//! The runner of a websocket exec session: waits for the required sockets, runs the command,
//! pumps its output, settles the operation and closes the sockets.

use super::sockets::{pump, writer, Out, Reader, Signals};
use super::{exit_error, interpreter, start_failure, Exec, ExecRequest, Ws, SIGKILL};
use crate::envelope::ApiError;
use crate::faults::exec::ExecFaults;
use crate::faults::operation::OperationFault;
use crate::operations::Gate;
use bytes::Bytes;
use futures_util::StreamExt;
use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, oneshot, Notify};
use tokio_util::sync::CancellationToken;

/// How long the end of an operation waits for its sockets to write what the command sent.
const FLUSH_BOUND: Duration = Duration::from_secs(5);
/// How long a failed command's operation waits for the client to close its sockets.
const CLOSE_GRACE: Duration = Duration::from_millis(100);

/// Drives one exec session from connection to the operation's end.
pub(super) struct Runner {
    exec: Arc<Exec>,
    op_id: String,
    interactive: bool,
    faults: ExecFaults,
    op_fault: Option<OperationFault>,
    /// Closes every socket of the session.
    done: CancellationToken,
    /// Per-fd close, child tokens of `done`.
    closers: HashMap<String, CancellationToken>,
    writers: HashMap<String, mpsc::Sender<Out>>,
    /// The writer tasks, which end once their socket is closed by both sides (or lingered out).
    writer_tasks: Vec<tokio::task::JoinHandle<()>>,
    stdin_tx: Option<mpsc::Sender<Bytes>>,
    signals: Signals,
    control_connected: Arc<AtomicBool>,
    exited: Arc<AtomicBool>,
    client_eof: Arc<Notify>,
    attached: BTreeSet<String>,
}

/// The command's ends of the stdin and signal channels.
pub(super) struct CommandEnds {
    stdin: mpsc::Receiver<Bytes>,
    signals: mpsc::UnboundedReceiver<i32>,
}

impl Runner {
    pub(super) fn new(
        exec: Arc<Exec>,
        op_id: String,
        interactive: bool,
        faults: ExecFaults,
        op_fault: Option<OperationFault>,
    ) -> (Self, CommandEnds) {
        let (stdin_tx, stdin) = mpsc::channel(16);
        let (sig_tx, signals) = mpsc::unbounded_channel();
        let done = exec.operations.shutdown.child_token();
        let filter = Arc::new(faults.kill_filter());
        let runner = Self {
            exec,
            op_id,
            interactive,
            faults,
            op_fault,
            done,
            closers: HashMap::new(),
            writers: HashMap::new(),
            writer_tasks: Vec::new(),
            stdin_tx: Some(stdin_tx),
            signals: Signals::new(sig_tx, filter),
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

    pub(super) async fn run(
        mut self,
        mut sockets: mpsc::UnboundedReceiver<(String, Ws, u64)>,
        ends: CommandEnds,
        req: ExecRequest,
    ) {
        let deadline = tokio::time::sleep(self.exec.connect_timeout);
        tokio::pin!(deadline);
        while !self.required().iter().all(|fd| self.attached.contains(*fd)) {
            tokio::select! {
                Some((fd, ws, seq)) = sockets.recv() => self.attach(fd, ws, seq),
                () = &mut deadline => {
                    self.fail(ApiError::internal("Timed out waiting for websockets to connect"));
                    self.done.cancel();
                    return;
                }
                () = self.done.cancelled() => return,
            }
        }
        if !self.paced(&mut sockets).await {
            return;
        }
        if !self.start_delay(&mut sockets).await {
            return;
        }
        if let Some((status, error)) = start_failure(&req.command) {
            if !self.flushed().await {
                return;
            }
            self.finish(status, Some(error));
            return;
        }
        let command = run_command(self.plan(), ends, req, Arc::clone(&self.exec));
        tokio::pin!(command);
        // Fused: once the cancel is handled, the loop goes on waiting for the command.
        let cancelled = futures_util::FutureExt::fuse(self.cancel_signal());
        tokio::pin!(cancelled);
        let code = loop {
            tokio::select! {
                code = &mut command => break code,
                Some((fd, ws, seq)) = sockets.recv() => self.attach(fd, ws, seq),
                () = &mut cancelled => self.on_cancel(),
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
        if !self.flushed().await {
            return;
        }
        let error = exit_error(code);
        if error.is_some() {
            self.closed_by_the_client().await;
        }
        self.finish(code, error);
    }

    /// Closes the sockets and waits (at most [`CLOSE_GRACE`]) until the client closed them too.
    /// The official client stops at a failed operation (126, 127) without waiting for its output
    /// streams, and closes them only when it exits; the daemon's operation ends late enough that
    /// the client has written the command's stderr by then. The grace stands for that lateness.
    async fn closed_by_the_client(&mut self) {
        self.close();
        let writers = futures_util::future::join_all(std::mem::take(&mut self.writer_tasks));
        let _ = tokio::time::timeout(CLOSE_GRACE, writers).await;
    }

    /// Waits until every socket has written what the command sent it, as the daemon ends the
    /// operation only once its output mirrors are done: a client that stops at a failed operation
    /// (the official client at 126 and 127) has read the command's stderr by then. Bounded by
    /// [`FLUSH_BOUND`], so a client that stopped reading cannot hold the operation; `false` when
    /// the session ended meanwhile.
    async fn flushed(&self) -> bool {
        let flushes = self.writers.values().map(|tx| async move {
            let (ack, acked) = oneshot::channel();
            if tx.send(Out::Flushed(ack)).await.is_ok() {
                let _ = acked.await;
            }
        });
        tokio::select! {
            _ = tokio::time::timeout(FLUSH_BOUND, futures_util::future::join_all(flushes)) => true,
            () = self.done.cancelled() => false,
        }
    }

    /// Waits as long as the daemon takes to start a command once its websockets are attached (a
    /// client may attach `control` meanwhile). `false` when the session ended meanwhile.
    async fn start_delay(
        &mut self,
        sockets: &mut mpsc::UnboundedReceiver<(String, Ws, u64)>,
    ) -> bool {
        let delay = tokio::time::sleep(self.exec.start_delay);
        tokio::pin!(delay);
        loop {
            tokio::select! {
                () = &mut delay => return true,
                Some((fd, ws, seq)) = sockets.recv() => self.attach(fd, ws, seq),
                () = self.done.cancelled() => return false,
            }
        }
    }

    /// Holds the command back as the operation fault says; settles a failing operation.
    /// `false` when the command must not run.
    async fn paced(&mut self, sockets: &mut mpsc::UnboundedReceiver<(String, Ws, u64)>) -> bool {
        let Some(fault) = self.op_fault.clone() else {
            return true;
        };
        let (operations, id, done) = (
            Arc::clone(&self.exec.operations),
            self.op_id.clone(),
            self.done.clone(),
        );
        let gate = operations.gate(&id, Some(&fault), Duration::ZERO, &done);
        tokio::pin!(gate);
        let gate = loop {
            tokio::select! {
                gate = &mut gate => break gate,
                Some((fd, ws, seq)) = sockets.recv() => self.attach(fd, ws, seq),
            }
        };
        match gate {
            Gate::Open => true,
            Gate::Failed | Gate::Cancelled => {
                self.close();
                false
            }
            Gate::Gone | Gate::Stopped => false,
        }
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
            faults: self.faults.clone(),
        }
    }

    /// Resolves when the operation is cancelled, on a line whose exec operations can be
    /// cancelled ([`crate::line::EXEC_CANCELLABLE`]); never otherwise.
    fn cancel_signal(&self) -> impl std::future::Future<Output = ()> + 'static {
        let cancelled = self
            .exec
            .operations
            .has_extension(crate::line::EXEC_CANCELLABLE)
            .then(|| {
                let ops = self.exec.operations.ops();
                ops.get(&self.op_id).map(|op| op.cancelled.clone())
            })
            .flatten();
        async move {
            match cancelled {
                Some(cancelled) => cancelled.notified().await,
                None => std::future::pending().await,
            }
        }
    }

    /// The daemon's cancel of a running exec: it closes the control websocket, if one is
    /// connected, and the control handler kills the command; without one the command runs on.
    fn on_cancel(&mut self) {
        if self.control_connected.load(Ordering::SeqCst) {
            self.signals.send(SIGKILL);
            if let Some(closer) = self.closers.get("control") {
                closer.cancel();
            }
        }
    }

    /// Fails the operation; one a cancel made final fails all the same (its run function's
    /// error is the operation's outcome).
    fn fail(&self, err: ApiError) {
        if self.exec.operations.is_cancelled(&self.op_id) {
            self.exec.operations.fail_after_cancel(&self.op_id, err);
        } else {
            self.exec.operations.finish_operation(&self.op_id, Err(err));
        }
    }

    /// Puts `return` in the metadata, settles the operation and closes every socket. A cancelled
    /// operation cannot take the metadata: it fails with the daemon's error for that.
    fn finish(&self, code: i32, error: Option<ApiError>) {
        if self.exec.operations.is_cancelled(&self.op_id) {
            self.fail(ApiError::internal(
                "Only pending or running operations can be updated",
            ));
            self.close();
            return;
        }
        let mut metadata = self.exec.operations.operation_metadata(&self.op_id);
        if let Some(object) = metadata.as_object_mut() {
            object.insert("return".into(), code.into());
        }
        match error {
            Some(err) => {
                self.exec
                    .operations
                    .set_operation_metadata(&self.op_id, metadata);
                self.exec.operations.finish_operation(&self.op_id, Err(err));
            }
            None => self
                .exec
                .operations
                .finish_operation(&self.op_id, Ok(Some(metadata))),
        }
        self.close();
    }

    /// Closes every socket, as the daemon does right after the end-of-stream frames: each writer
    /// sends what it has queued (the end-of-stream frames are queued before the operation ends),
    /// then drops its connection.
    fn close(&self) {
        self.done.cancel();
    }

    /// Starts the reader and writer of a newly connected socket.
    fn attach(&mut self, fd: String, ws: Ws, seq: u64) {
        self.attached.insert(fd.clone());
        if self.faults.drops(&fd) {
            tracing::debug!(%fd, "exec: websocket dropped by fault");
            drop(ws);
            self.on_gone(&fd);
            return;
        }
        let closer = self.done.child_token();
        let (sink, stream) = ws.split();
        let (out_tx, out_rx) = mpsc::channel(16);
        let (stream_back, stream_given) = oneshot::channel();
        self.writer_tasks.push(tokio::spawn(writer(
            sink,
            out_rx,
            closer.clone(),
            stream_given,
            self.exec.operations.shutdown.clone(),
        )));
        self.writers.insert(fd.clone(), out_tx);
        let reader = Reader {
            fd: fd.clone(),
            journal: self.exec.journal.clone(),
            seq,
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
        tokio::spawn(async move {
            let _ = stream_back.send(reader.run(stream).await);
        });
        self.closers.insert(fd, closer);
    }

    /// A socket that is gone at once counts like a client disconnect.
    fn on_gone(&mut self, fd: &str) {
        match fd {
            "0" => {
                self.stdin_tx = None;
                self.client_eof.notify_one();
            }
            "control" => {
                self.signals.send(SIGKILL);
            }
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
    faults: ExecFaults,
}

/// Runs the interpreter with output pumped to the sockets; sends the EOF frames after it, once
/// what the command wrote is durable.
async fn run_command(
    plan: CommandPlan,
    ends: CommandEnds,
    req: ExecRequest,
    exec: Arc<Exec>,
) -> i32 {
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
    plan.faults.after_exit().await;
    exec.durable().await;
    for writer in &plan.eof {
        let _ = writer.send(Out::Eof).await;
    }
    if let Some(closer) = plan.close_control {
        closer.cancel();
    }
    code
}
