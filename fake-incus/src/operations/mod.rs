//! Operations, in one home: what an operation is and the registry of them ([`operation`]), and
//! the driver ([`Operations`]): registering, settling, cancelling, waiting for and expiring
//! them, their events, the work of a task operation ([`Operations::start_task`]) and the gate
//! every operation's work passes first ([`Operations::gate`]: paced as its fault says, then
//! failed when the fault says so). Exec sessions (the module above) drive their own work and
//! settle through here.

pub(crate) mod operation;

pub(crate) use operation::{OpSpec, OpStatus, Operation, Registry};

use crate::envelope::ApiError;
use crate::faults::operation::{self as fault, OperationFault};
use crate::line::{self, IncusLine};
use crate::state::store::StateStore;
use crate::state::State;
use serde_json::Value;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Background work of a task operation, run under the state lock when the operation finishes.
/// It returns the operation's final metadata (or keeps it when `None`).
pub(crate) type Work = Box<dyn FnOnce(&mut State) -> Result<Option<Value>, ApiError> + Send>;

/// What the gate let through (see [`Operations::gate`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Gate {
    /// The work may run.
    Open,
    /// The operation failed at the gate, as its fault says (it is settled).
    Failed,
    /// The operation was cancelled while it waited.
    Cancelled,
    /// The operation is gone (a reset).
    Gone,
    /// The session or the fake stopped meanwhile.
    Stopped,
}

/// The operations and their events.
pub(crate) struct Operations {
    ops: Mutex<Registry>,
    /// The state a task operation's work changes.
    store: Arc<StateStore>,
    /// Operation events for `/1.0/events` listeners: (project, event).
    pub(crate) events: tokio::sync::broadcast::Sender<(String, Value)>,
    /// How long a final operation stays visible.
    retention: Duration,
    /// Cancelled when the fake stops.
    pub(crate) shutdown: CancellationToken,
    /// The Incus line whose operations these are.
    line: IncusLine,
}

impl Operations {
    pub(crate) fn new(
        store: Arc<StateStore>,
        retention: Duration,
        shutdown: CancellationToken,
        line: IncusLine,
    ) -> Arc<Self> {
        Arc::new(Self {
            ops: Mutex::new(Registry::default()),
            store,
            events: tokio::sync::broadcast::channel(1024).0,
            retention,
            shutdown,
            line,
        })
    }

    /// Whether the Incus line of these operations has this API extension.
    pub(crate) fn has_extension(&self, name: &str) -> bool {
        self.line.has_extension(name)
    }

    /// The operations, locked. Never hold it across an `.await`.
    pub(crate) fn ops(&self) -> MutexGuard<'_, Registry> {
        self.ops
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sends an operation event to `/1.0/events` listeners.
    fn emit(&self, op: &Operation) {
        let event = serde_json::json!({
            "type": "operation", "timestamp": crate::state::clock::now(), "metadata": op.to_json(),
            "location": op.location.as_deref().unwrap_or("none"), "project": op.spec.project,
        });
        let _ = self.events.send((op.spec.project.clone(), event));
    }

    /// Registers a running operation on cluster member `location` (`None`: not clustered) and
    /// returns its id and JSON.
    pub(crate) fn create_operation(
        &self,
        mut spec: OpSpec,
        fault: Option<&OperationFault>,
        location: Option<String>,
    ) -> (String, Value) {
        if fault.is_some_and(OperationFault::may_cancel) {
            spec.may_cancel = true;
        }
        let op = Operation::new(spec, location, self.line);
        let out = (op.id.clone(), op.to_json());
        self.emit(&op);
        self.ops().list.push(op);
        out
    }

    /// Settles an operation: Success with the new metadata, or Failure with the error.
    pub(crate) fn finish_operation(
        self: &Arc<Self>,
        id: &str,
        outcome: Result<Option<Value>, ApiError>,
    ) {
        let settled = {
            let mut ops = self.ops();
            let Some(op) = ops.get_mut(id) else { return };
            match outcome {
                Ok(metadata) => {
                    if let Some(metadata) = metadata {
                        op.set_metadata(metadata);
                    }
                    op.settle(OpStatus::Success, None)
                }
                Err(err) => op.settle(OpStatus::Failure, Some((err.status, err.message))),
            }
            .then(|| self.emit(op))
            .is_some()
        };
        if settled {
            self.expire_later(id);
        }
    }

    /// Fails an operation a cancel made final, once its work ended (see
    /// [`Operation::fail_after_cancel`]).
    pub(crate) fn fail_after_cancel(self: &Arc<Self>, id: &str, err: ApiError) {
        let mut ops = self.ops();
        if let Some(op) = ops.get_mut(id) {
            if op.fail_after_cancel(err.status, err.message) {
                self.emit(op);
            }
        }
    }

    /// Whether an operation was cancelled (and its work has not ended since).
    pub(crate) fn is_cancelled(&self, id: &str) -> bool {
        self.ops()
            .get(id)
            .is_some_and(|op| op.status == OpStatus::Cancelled)
    }

    /// Replaces an operation's metadata (exec adds `return` before it settles).
    pub(crate) fn set_operation_metadata(&self, id: &str, metadata: Value) {
        if let Some(op) = self.ops().get_mut(id) {
            op.set_metadata(metadata);
            self.emit(op);
        }
    }

    /// Sets the metadata an operation starts with (`updated_at` unchanged).
    pub(crate) fn init_operation_metadata(&self, id: &str, metadata: Value) {
        if let Some(op) = self.ops().get_mut(id) {
            op.metadata = metadata;
        }
    }

    /// The metadata of an operation (`Null` when unknown).
    pub(crate) fn operation_metadata(&self, id: &str) -> Value {
        self.ops()
            .get(id)
            .map(|op| op.metadata.clone())
            .unwrap_or(Value::Null)
    }

    /// Cancels a running cancellable operation (`DELETE /1.0/operations/{id}`).
    pub(crate) fn cancel_operation(self: &Arc<Self>, id: &str) -> Result<(), ApiError> {
        {
            let mut ops = self.ops();
            let op = ops.get_mut(id).ok_or_else(op_not_found)?;
            if op.status.is_final() {
                return Err(ApiError::bad_request(
                    "Only running operations can be cancelled",
                ));
            }
            if !op.spec.may_cancel {
                return Err(ApiError::bad_request("This operation can't be cancelled"));
            }
            op.settle(OpStatus::Cancelled, None);
            op.cancelled.notify_one();
            self.emit(op);
        }
        self.expire_later(id);
        Ok(())
    }

    /// Waits until the operation is final or `timeout` passes (`None`: no limit).
    /// `Ok(json)` = the operation as the wait shows it; `Err` = the wait's error envelope
    /// content (a failure or the timeout, on a line whose wait did not show the operation
    /// then: [`line::WAIT_ANSWERS_THE_OPERATION`]).
    pub(crate) async fn wait_operation(
        &self,
        id: &str,
        timeout: Option<Duration>,
    ) -> Result<Value, ApiError> {
        let mut rx = {
            let ops = self.ops();
            let op = ops.get(id).ok_or_else(op_not_found)?;
            op.wait_started.notify_one();
            op.watch.subscribe()
        };
        let done = async { rx.wait_for(|s| s.is_final()).await.map(|_| ()) };
        let finished = match timeout {
            None => tokio::select! {
                r = done => r.is_ok(),
                () = self.shutdown.cancelled() => false,
            },
            Some(limit) => matches!(tokio::time::timeout(limit, done).await, Ok(Ok(()))),
        };
        let ops = self.ops();
        let op = ops.get(id).ok_or_else(op_not_found)?;
        if self.has_extension(line::WAIT_ANSWERS_THE_OPERATION) {
            return Ok(op.to_json_read());
        }
        if !finished || !op.status.is_final() {
            return Err(ApiError::internal("context deadline exceeded"));
        }
        match op.status {
            OpStatus::Failure => Err(ApiError::new(op.err_code, op.err.clone())),
            _ => Ok(op.to_json_read()),
        }
    }

    /// Starts a task operation on cluster member `location` whose `work` runs in the background,
    /// shaped by an operation fault.
    pub(crate) fn start_task(
        self: &Arc<Self>,
        spec: OpSpec,
        fault: Option<OperationFault>,
        location: Option<String>,
        work: Work,
    ) -> Value {
        let (id, json) = self.create_operation(spec, fault.as_ref(), location);
        let operations = Arc::clone(self);
        tokio::spawn(async move { operations.drive_task(id, fault, work).await });
        json
    }

    /// Runs a task operation's work once its gate opens (after its spec's duration when no fault
    /// shapes it), under the state lock, and settles the operation with the outcome.
    async fn drive_task(self: Arc<Self>, id: String, fault: Option<OperationFault>, work: Work) {
        let Some(duration) = self.ops().get(&id).map(|op| op.spec.duration) else {
            return;
        };
        if self
            .gate(&id, fault.as_ref(), duration, &self.shutdown)
            .await
            != Gate::Open
        {
            return;
        }
        let outcome = {
            let mut state = self.store.lock();
            if self.ops().get(&id).is_some_and(|op| op.status.is_final()) {
                return;
            }
            work(&mut state)
        };
        self.finish_operation(&id, outcome);
    }

    /// The gate an operation's work passes first, written once for task operations and exec
    /// sessions: it holds the work back as the operation's fault says (its length, forever,
    /// until a wait is in flight; `default` when no fault shapes it), then fails the operation
    /// when the fault says so. A cancel of the operation, or `stop`, ends the wait.
    pub(crate) async fn gate(
        self: &Arc<Self>,
        id: &str,
        fault: Option<&OperationFault>,
        default: Duration,
        stop: &CancellationToken,
    ) -> Gate {
        let Some((wait_started, cancelled)) = self
            .ops()
            .get(id)
            .map(|op| (op.wait_started.clone(), op.cancelled.clone()))
        else {
            return Gate::Gone;
        };
        tokio::select! {
            () = fault::pace(fault, default, &wait_started) => {}
            () = cancelled.notified() => return Gate::Cancelled,
            () = stop.cancelled() => return Gate::Stopped,
        }
        match fault.and_then(OperationFault::failure) {
            Some(err) => {
                self.finish_operation(id, Err(err));
                Gate::Failed
            }
            None => Gate::Open,
        }
    }

    fn expire_later(self: &Arc<Self>, id: &str) {
        let operations = Arc::downgrade(self);
        let id = id.to_string();
        let retention = self.retention;
        tokio::spawn(async move {
            tokio::time::sleep(retention).await;
            if let Some(operations) = operations.upgrade() {
                operations.ops().remove(&id);
            }
        });
    }
}

/// The daemon's answer for unknown operations.
pub(crate) fn op_not_found() -> ApiError {
    ApiError::new(404, "Operation not found")
}
