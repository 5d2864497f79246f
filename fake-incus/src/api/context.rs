//! What a handler knows about its request: who called (the listener's [`Peer`]) and the
//! request context ([`Ctx`]: app, trust, journal sequence, query parameters).

use crate::app::App;
use crate::cluster::Scope;
use crate::envelope::ApiError;
use crate::faults::exec::ExecFaults;
use crate::faults::operation::OperationFault;
use crate::journal::Listener;
use crate::operations::OpSpec;
use crate::operations::Work;
use serde_json::Value;
use std::sync::Arc;

/// Who is calling, as the listener saw it.
#[derive(Debug, Clone)]
pub(crate) struct Peer {
    pub(crate) listener: Listener,
    /// SHA-256 of the client certificate (HTTPS only).
    pub(crate) fingerprint: Option<String>,
    /// The cluster member whose listener took the request (`None`: not clustered).
    pub(crate) member: Option<std::sync::Arc<str>>,
}

/// The context of one request.
pub(crate) struct Ctx {
    pub(crate) app: Arc<App>,
    pub(crate) peer: Peer,
    pub(crate) trusted: bool,
    pub(crate) seq: u64,
    /// The fault on the operation this request creates, if a rule selected one.
    pub(super) operation_fault: Option<OperationFault>,
    /// The exec faults of the session this request creates.
    pub(super) exec_faults: ExecFaults,
    pub(super) query: Vec<(String, String)>,
    /// What the request belongs to on a cluster (default: nothing, standalone).
    pub(crate) scope: Scope,
}

impl Ctx {
    /// Starts a task operation for this request, shaped by its operation fault.
    pub(crate) fn start_task(&self, spec: OpSpec, work: Work) -> Value {
        self.app
            .operations
            .start_task(spec, self.operation_fault.clone(), self.location(), work)
    }
    /// Registers a running operation for this request (its work driven by the caller),
    /// shaped by its operation fault; returns its id and JSON.
    pub(crate) fn create_operation(&self, spec: OpSpec) -> (String, Value) {
        self.app
            .operations
            .create_operation(spec, self.operation_fault.as_ref(), self.location())
    }
    /// The cluster member what this request creates belongs to (`None`: not clustered).
    pub(crate) fn location(&self) -> Option<String> {
        self.scope.location.clone()
    }
    /// The operation fault of this request (exec operations take it).
    pub(crate) fn operation_fault(&self) -> Option<OperationFault> {
        self.operation_fault.clone()
    }
    /// The exec faults of this request.
    pub(crate) fn exec_faults(&self) -> ExecFaults {
        self.exec_faults.clone()
    }
    /// Marks the request as applied in the journal.
    pub(crate) fn applied(&self) {
        self.app.journal.set_applied(self.seq);
    }
    pub(crate) fn param(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
    /// `project`, default `default`.
    pub(crate) fn project(&self) -> String {
        self.project_name().to_string()
    }
    /// `project`, default `default`, borrowed.
    pub(crate) fn project_name(&self) -> &str {
        self.param("project")
            .filter(|p| !p.is_empty())
            .unwrap_or("default")
    }
    /// `recursion`; anything that is not an integer counts as 0.
    pub(crate) fn recursion(&self) -> u8 {
        self.param("recursion")
            .and_then(|r| r.parse().ok())
            .unwrap_or(0)
    }
    pub(crate) fn all_projects(&self) -> bool {
        self.param("all-projects") == Some("true")
    }
    /// 404 with the endpoint's own message when `project` names no project (unless
    /// `all-projects=true`).
    pub(crate) fn require_project(
        &self,
        message: impl FnOnce(&str) -> String,
    ) -> Result<(), ApiError> {
        let project = self.project();
        if self.all_projects() || self.app.snapshot().state.project(&project).is_some() {
            Ok(())
        } else {
            Err(ApiError::new(404, message(&project)))
        }
    }

    /// The projects a collection request covers.
    pub(crate) fn projects(&self) -> Vec<String> {
        if self.all_projects() {
            self.app
                .snapshot()
                .state
                .projects
                .iter()
                .map(|p| p.name.clone())
                .collect()
        } else {
            vec![self.project()]
        }
    }
}
