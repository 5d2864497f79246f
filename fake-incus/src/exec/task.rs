//! Task-mode exec (`wait-for-websocket: false`): no websockets; output discarded or recorded.
//!
//! A task-mode command runs until it exits or is stopped:
//! - a stop or restart of its instance (forced or not) kills it with SIGKILL, so the operation
//!   succeeds with `return` 137 and whatever was recorded, as on the daemon;
//! - a cancel (only possible when a fault made the operation cancellable; the daemon's exec
//!   operations cannot be cancelled) ends it at once, the operation staying `Cancelled`;
//! - a reset of the fake, or the operation's removal, ends it at once without a trace.

use super::{exit_error, interpreter, start_failure, Exec, ExecRequest, SIGKILL};
use crate::faults::exec::ExecFaults;
use crate::faults::operation::OperationFault;
use crate::operations::{Gate, OpStatus};
use bytes::Bytes;
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, watch};

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
    // Subscribed before the command starts, so no stop of the instance can be missed.
    let events = exec.operations.events.subscribe();
    let (status, instance_url) = {
        let ops = exec.operations.ops();
        match ops.get(op_id) {
            Some(op) => (
                op.watch.subscribe(),
                op.spec
                    .resources
                    .get("instances")
                    .and_then(|urls| urls.first())
                    .cloned()
                    .unwrap_or_default(),
            ),
            None => return,
        }
    };
    let exec = Arc::clone(exec);
    let id = op_id.to_string();
    tokio::spawn(async move {
        let operations = &exec.operations;
        let gate = operations.gate(&id, op_fault.as_ref(), Duration::ZERO, &operations.shutdown);
        if gate.await != Gate::Open {
            return;
        }
        if let Some((status, error)) = start_failure(&req.command) {
            exec.operations
                .set_operation_metadata(&id, serde_json::json!({"return": status}));
            exec.operations.finish_operation(&id, Err(error));
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
        let command = futures_util::future::join(interpreter::run(req, io), outputs);
        let kill_on_stop = async {
            instance_stopped(events, &instance_url).await;
            let _ = sig_tx.send(SIGKILL);
            std::future::pending::<()>().await
        };
        let (code, (out, err)) = tokio::select! {
            done = command => done,
            () = kill_on_stop => return,
            () = operation_ended(status) => return,
            () = exec.operations.shutdown.cancelled() => return,
        };
        faults.after_exit().await;
        exec.durable().await;
        if exec
            .operations
            .ops()
            .get(&id)
            .is_none_or(|op| op.status.is_final())
        {
            return; // reset or cancelled meanwhile: nothing to record
        }
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
        match exit_error(code) {
            // Not found (127) or not executable (126): the operation fails, its metadata kept.
            Some(err) => {
                exec.operations.set_operation_metadata(&id, metadata);
                exec.operations.finish_operation(&id, Err(err));
            }
            None => exec.operations.finish_operation(&id, Ok(Some(metadata))),
        }
    });
}

/// Resolves once the operation is final (cancelled) or gone (reset, expiry).
async fn operation_ended(mut status: watch::Receiver<OpStatus>) {
    let _ = status.wait_for(|s| *s != OpStatus::Running).await;
}

/// Resolves when an operation that stops or restarts the instance at `instance_url` succeeds.
async fn instance_stopped(mut events: broadcast::Receiver<(String, Value)>, instance_url: &str) {
    loop {
        let event = match events.recv().await {
            Ok((_, event)) => event,
            // Missed events cannot be replayed: stopping the command is the safe side.
            Err(broadcast::error::RecvError::Lagged(_)) => return,
            Err(broadcast::error::RecvError::Closed) => return std::future::pending().await,
        };
        let op = &event["metadata"];
        let stops = matches!(
            op["description"].as_str(),
            Some("Stopping instance" | "Restarting instance")
        );
        let ours = op["resources"]["instances"]
            .as_array()
            .is_some_and(|urls| urls.iter().any(|u| u.as_str() == Some(instance_url)));
        if stops && ours && op["status"] == "Success" {
            return;
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Journal;
    use crate::operations::OpSpec;
    use crate::operations::Operations;
    use tokio_util::sync::CancellationToken;

    /// Exec operations cannot be cancelled on the daemon; when a fault makes one cancellable,
    /// the cancel must end its command.
    #[tokio::test]
    async fn cancel_of_a_cancellable_task_exec_stops_its_endless_command() {
        let store = Arc::new(crate::state::store::StateStore::new(
            crate::state::State::default_state(),
            crate::line::IncusLine::V6_0,
        ));
        let operations = Operations::new(
            store,
            Duration::from_secs(5),
            CancellationToken::new(),
            crate::line::IncusLine::V6_0,
        );
        let exec = Exec::new(
            Arc::clone(&operations),
            Journal::new(16),
            Duration::from_secs(5),
            Duration::ZERO,
        );
        let mut spec = OpSpec::task("default", "Executing command", "/1.0/instances/c1".into());
        spec.may_cancel = true;
        let (id, _) = operations.create_operation(spec, None, None);
        let req = ExecRequest {
            command: vec!["yes".into()],
            environment: Default::default(),
            user: 0,
            group: 0,
            cwd: String::new(),
            fs: fake_shell::MemoryFs::busybox(),
            hostname: "c1".into(),
        };
        start_task_session(&exec, &id, req, ExecFaults::default(), None, None);
        // The running task holds the only other reference to the exec sessions.
        assert_eq!(Arc::strong_count(&exec), 2, "the task runs");
        tokio::task::yield_now().await;
        operations.cancel_operation(&id).unwrap();
        let mut ended = false;
        for _ in 0..500 {
            if Arc::strong_count(&exec) == 1 {
                ended = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert!(ended, "the endless command still runs 5 s after the cancel");
        assert_eq!(
            operations.ops().get(&id).map(|op| op.status),
            Some(OpStatus::Cancelled)
        );
    }
}
