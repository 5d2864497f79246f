//! The application: state, operations, journal, rules and identity, shared by every listener.
//! It also drives operation lifecycles (start, finish, cancel, wait, expiry).

use crate::envelope::ApiError;
use crate::faults::{Fault, Faults};
use crate::journal::Journal;
use crate::state::operations::{OpSpec, OpStatus, Operation};
use crate::state::{Operations, State};
use serde_json::Value;
use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Background work of a task operation, run under the state lock when the operation finishes.
/// It returns the operation's final metadata (or keeps it when `None`).
pub(crate) type Work = Box<dyn FnOnce(&mut State) -> Result<Option<Value>, ApiError> + Send>;

/// Recorded exec output files per instance.
pub(crate) type ExecLogs =
    std::collections::BTreeMap<(String, String), std::collections::BTreeMap<String, bytes::Bytes>>;

/// Tunables fixed at start.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// How long a final operation stays visible.
    pub(crate) retention: Duration,
    /// How long exec waits for its websockets.
    pub(crate) exec_connect_timeout: Duration,
    /// `host:port` of the HTTPS listener, if any (for `GET /1.0`).
    pub(crate) https_address: Option<String>,
    /// How long a connection may take to send a request head once its first byte arrived.
    pub(crate) header_read_timeout: Duration,
    /// How long a connection may stay open with no request in flight and nothing sent.
    pub(crate) idle_timeout: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            retention: Duration::from_secs(5),
            exec_connect_timeout: Duration::from_secs(5),
            https_address: None,
            header_read_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(30),
        }
    }
}

/// The server's identity and the trusted client certificates.
#[derive(Debug, Default)]
pub(crate) struct Identity {
    pub(crate) server_cert_pem: String,
    pub(crate) server_fingerprint: String,
    pub(crate) trusted: Mutex<BTreeSet<String>>,
    /// The validity period of each trusted certificate that has one on record.
    pub(crate) validity: Mutex<std::collections::BTreeMap<String, crate::server::tls::Validity>>,
}

impl Identity {
    /// Whether the certificate with this fingerprint is trusted now: in the trust store and
    /// inside its validity period.
    pub(crate) fn is_trusted(&self, fingerprint: &str) -> bool {
        let known = self
            .trusted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .contains(fingerprint);
        known
            && self
                .validity
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .get(fingerprint)
                .is_none_or(crate::server::tls::Validity::contains_now)
    }

    /// Trusts a certificate (PEM) and records its validity period; returns its fingerprint.
    pub(crate) fn trust_pem(&self, pem: &str) -> Result<String, crate::server::tls::TlsError> {
        let fingerprint = crate::server::tls::fingerprint_pem(pem)?;
        let validity = crate::server::tls::validity_pem(pem)?;
        self.validity
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(fingerprint.clone(), validity);
        self.trusted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(fingerprint.clone());
        Ok(fingerprint)
    }
}

/// Everything a request handler can reach.
pub(crate) struct App {
    state: Mutex<State>,
    initial: State,
    ops: Mutex<Operations>,
    pub(crate) exec: Mutex<HashMap<String, Arc<crate::exec::Session>>>,
    /// Recorded exec output: (project, instance) -> file name -> bytes.
    exec_logs: Mutex<ExecLogs>,
    pub(crate) journal: Journal,
    pub(crate) faults: Faults,
    pub(crate) identity: Identity,
    pub(crate) settings: Settings,
    pub(crate) shutdown: CancellationToken,
    /// Operation events for `/1.0/events` listeners: (project, event).
    pub(crate) events: tokio::sync::broadcast::Sender<(String, Value)>,
}

impl App {
    pub(crate) fn new(state: State, identity: Identity, settings: Settings) -> Arc<Self> {
        Arc::new(Self {
            initial: state.clone(),
            state: Mutex::new(state),
            ops: Mutex::new(Operations::default()),
            exec: Mutex::new(HashMap::new()),
            exec_logs: Mutex::new(ExecLogs::new()),
            journal: Journal::default(),
            faults: Faults::default(),
            identity,
            settings,
            shutdown: CancellationToken::new(),
            events: tokio::sync::broadcast::channel(1024).0,
        })
    }

    /// The state, locked. Never hold it across an `.await`.
    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The operations, locked. Never hold it across an `.await`.
    pub(crate) fn ops(&self) -> MutexGuard<'_, Operations> {
        self.ops
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The recorded exec output, locked. Never hold it across an `.await`.
    pub(crate) fn exec_logs(&self) -> MutexGuard<'_, ExecLogs> {
        self.exec_logs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Back to the state the fake started with; operations (and the task-mode commands they
    /// run), recorded exec output and journal are cleared.
    pub(crate) fn reset(&self) {
        *self.state() = self.initial.clone();
        self.ops().list.clear();
        self.exec_logs().clear();
        self.exec
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clear();
        self.journal.clear();
    }

    /// Replaces the state (control socket `PUT /state`).
    pub(crate) fn replace_state(&self, state: State) {
        *self.state() = state;
    }

    /// Sends an operation event to `/1.0/events` listeners.
    fn emit(&self, op: &Operation) {
        let event = serde_json::json!({
            "type": "operation", "timestamp": crate::state::clock::now(), "metadata": op.to_json(),
            "location": "none", "project": op.spec.project,
        });
        let _ = self.events.send((op.spec.project.clone(), event));
    }

    /// Registers a running operation and returns its id and JSON.
    pub(crate) fn create_operation(
        &self,
        mut spec: OpSpec,
        fault: Option<&Fault>,
    ) -> (String, Value) {
        if matches!(fault, Some(Fault::OperationCancellable)) {
            spec.may_cancel = true;
        }
        let op = Operation::new(spec);
        let out = (op.id.clone(), op.to_json());
        self.emit(&op);
        self.ops().list.push(op);
        out
    }

    /// Starts a task operation whose `work` runs in the background, shaped by an operation fault.
    pub(crate) fn start_task(
        self: &Arc<Self>,
        spec: OpSpec,
        fault: Option<Fault>,
        work: Work,
    ) -> Value {
        let (id, json) = self.create_operation(spec, fault.as_ref());
        let app = Arc::clone(self);
        tokio::spawn(async move { app.drive_task(id, fault, work).await });
        json
    }

    async fn drive_task(self: Arc<Self>, id: String, fault: Option<Fault>, work: Work) {
        let (wait_started, cancelled, duration) = match self.ops().get(&id) {
            Some(op) => (
                op.wait_started.clone(),
                op.cancelled.clone(),
                op.spec.duration,
            ),
            None => return,
        };
        let gate = async {
            match &fault {
                Some(Fault::OperationDuration { ms }) => {
                    tokio::time::sleep(Duration::from_millis(*ms)).await
                }
                Some(Fault::OperationNeverFinish | Fault::OperationCancellable) => {
                    std::future::pending().await
                }
                Some(Fault::OperationFinishDuringWait) => {
                    wait_started.notified().await;
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                _ if duration.is_zero() => tokio::task::yield_now().await,
                _ => tokio::time::sleep(duration).await,
            }
        };
        tokio::select! {
            () = gate => {}
            () = cancelled.notified() => return,
            () = self.shutdown.cancelled() => return,
        }
        let outcome = match fault {
            Some(Fault::OperationFail { message }) => Err(ApiError::internal(message)),
            _ => {
                let mut state = self.state();
                if self.ops().get(&id).is_some_and(|op| op.status.is_final()) {
                    return;
                }
                work(&mut state)
            }
        };
        self.finish_operation(&id, outcome);
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
    /// `Ok(json)` = final operation; `Err` = the wait's error envelope content.
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
        if !finished || !op.status.is_final() {
            return Err(ApiError::internal("context deadline exceeded"));
        }
        match op.status {
            OpStatus::Failure => Err(ApiError::new(op.err_code, op.err.clone())),
            _ => Ok(op.to_json()),
        }
    }

    fn expire_later(self: &Arc<Self>, id: &str) {
        let app = Arc::downgrade(self);
        let id = id.to_string();
        let retention = self.settings.retention;
        tokio::spawn(async move {
            tokio::time::sleep(retention).await;
            if let Some(app) = app.upgrade() {
                app.ops().remove(&id);
                app.exec
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .remove(&id);
            }
        });
    }
}

/// The daemon's answer for unknown operations.
pub(crate) fn op_not_found() -> ApiError {
    ApiError::new(404, "Operation not found")
}
