//! Task-mode exec (`wait-for-websocket: false`): no websockets; output discarded or recorded.

use super::{interpreter, start_failure_error, Exec, ExecRequest};
use crate::faults::exec::ExecFaults;
use crate::faults::operation::{self, OperationFault};
use bytes::Bytes;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// Where a task-mode exec records its output (`record-output: true`).
pub(crate) struct Recording {
    pub(crate) project: String,
    pub(crate) instance: String,
}

/// Most bytes kept per recorded stream.
const RECORD_LIMIT: usize = 8 << 20;

/// Runs a task-mode exec (`wait-for-websocket: false`): stdin is empty; output is discarded or,
/// with `record`, kept as the instance's `exec-output` log files.
pub(super) fn start_task_session(
    exec: &Arc<Exec>,
    op_id: &str,
    req: ExecRequest,
    faults: ExecFaults,
    op_fault: Option<OperationFault>,
    record: Option<Recording>,
) {
    let exec = Arc::clone(exec);
    let id = op_id.to_string();
    tokio::spawn(async move {
        let Some((wait_started, cancelled)) = exec
            .lifecycle
            .ops()
            .get(&id)
            .map(|op| (op.wait_started.clone(), op.cancelled.clone()))
        else {
            return;
        };
        tokio::select! {
            () = operation::pace(op_fault.as_ref(), Duration::ZERO, &wait_started) => {}
            () = cancelled.notified() => return,
            () = exec.lifecycle.shutdown.cancelled() => return,
        }
        if let Some(err) = op_fault.as_ref().and_then(OperationFault::failure) {
            exec.lifecycle.finish_operation(&id, Err(err));
            return;
        }
        if let Some(failure) = interpreter::start_failure(&req.command) {
            exec.lifecycle
                .set_operation_metadata(&id, serde_json::json!({"return": failure.exit_status()}));
            exec.lifecycle
                .finish_operation(&id, Err(start_failure_error(failure)));
            return;
        }
        let (_, stdin) = mpsc::channel(1);
        let (stdout, out_rx) = mpsc::channel(16);
        let (stderr, err_rx) = mpsc::channel(16);
        let (sig_tx, signals) = mpsc::unbounded_channel();
        let outputs = futures_util::future::join(collect(out_rx), collect(err_rx));
        let io = interpreter::ExecIo {
            stdin,
            stdout,
            stderr,
            signals,
        };
        let ((code, (out, err)), ()) = tokio::select! {
            done = futures_util::future::join(interpreter::run(req, io), outputs) => (done, ()),
            () = exec.lifecycle.shutdown.cancelled() => return,
        };
        drop(sig_tx);
        faults.after_exit().await;
        let metadata = match record {
            Some(rec) => {
                let base = format!("/1.0/instances/{}/logs/exec-output/exec_{id}", rec.instance);
                let mut logs = exec.logs();
                let files = logs.entry((rec.project, rec.instance)).or_default();
                files.insert(format!("exec_{id}.stdout"), Bytes::from(out));
                files.insert(format!("exec_{id}.stderr"), Bytes::from(err));
                serde_json::json!({"output": {"1": format!("{base}.stdout"), "2": format!("{base}.stderr")}, "return": code})
            }
            None => serde_json::json!({"return": code}),
        };
        exec.lifecycle.finish_operation(&id, Ok(Some(metadata)));
    });
}

/// Reads a stream to its end, keeping at most [`RECORD_LIMIT`] bytes.
async fn collect(mut rx: mpsc::Receiver<Bytes>) -> Vec<u8> {
    let mut kept = Vec::new();
    while let Some(chunk) = rx.recv().await {
        let room = RECORD_LIMIT.saturating_sub(kept.len());
        kept.extend_from_slice(&chunk[..chunk.len().min(room)]);
    }
    kept
}
