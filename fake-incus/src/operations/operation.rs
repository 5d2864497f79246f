//! An operation ([`Operation`]: what it is, [`OpSpec`], and where it stands, [`OpStatus`]) and
//! the registry of every operation ([`Registry`]), as the daemon shows them. The driver above
//! ([`super::Operations`]) registers, settles and expires them.

use crate::line::{self, IncusLine};
use crate::state::clock;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{watch, Notify};

/// Operation status with the daemon's names and codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum OpStatus {
    Running,
    Success,
    Failure,
    Cancelled,
}

impl OpStatus {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Running => "Running",
            Self::Success => "Success",
            Self::Failure => "Failure",
            Self::Cancelled => "Cancelled",
        }
    }
    pub(crate) fn code(self) -> u16 {
        match self {
            Self::Running => 103,
            Self::Success => 200,
            Self::Failure => 400,
            Self::Cancelled => 401,
        }
    }
    pub(crate) fn is_final(self) -> bool {
        self.code() >= 200
    }
}

/// What an operation is, fixed at creation.
#[derive(Debug, Clone)]
pub(crate) struct OpSpec {
    pub(crate) project: String,
    pub(crate) class: &'static str,
    pub(crate) description: &'static str,
    pub(crate) resources: BTreeMap<String, Vec<String>>,
    pub(crate) metadata: Value,
    pub(crate) may_cancel: bool,
    /// How long the work takes before the operation ends when no fault shapes it (zero: at once).
    pub(crate) duration: Duration,
}

impl OpSpec {
    /// A task operation on one instance.
    pub(crate) fn task(project: &str, description: &'static str, instance_url: String) -> Self {
        Self {
            project: project.into(),
            class: "task",
            description,
            resources: BTreeMap::from([("instances".to_string(), vec![instance_url])]),
            metadata: Value::Null,
            may_cancel: false,
            duration: Duration::ZERO,
        }
    }

    /// The same operation, taking `duration` before its work runs.
    pub(crate) fn lasting(self, duration: Duration) -> Self {
        Self { duration, ..self }
    }
}

/// One operation.
#[derive(Debug)]
pub(crate) struct Operation {
    pub(crate) id: String,
    pub(crate) spec: OpSpec,
    pub(crate) created_at: String,
    pub(crate) updated_at: String,
    pub(crate) status: OpStatus,
    pub(crate) metadata: Value,
    pub(crate) err: String,
    /// The status attached to the failure (the wait endpoint's `error_code`).
    pub(crate) err_code: u16,
    pub(crate) watch: watch::Sender<OpStatus>,
    /// Notified when a wait request starts (for the "finish during wait" fault).
    pub(crate) wait_started: Arc<Notify>,
    /// Notified when the operation is cancelled.
    pub(crate) cancelled: Arc<Notify>,
    /// The cluster member it runs on (`None`: not clustered, `"none"` in the API).
    pub(crate) location: Option<String>,
    /// The Incus line whose daemon shows it.
    pub(crate) line: IncusLine,
}

impl Operation {
    /// A running operation on cluster member `location` (`None`: not clustered), as the daemon
    /// of `line` shows it.
    pub(crate) fn new(spec: OpSpec, location: Option<String>, line: IncusLine) -> Self {
        let now = clock::now();
        let (watch, _) = watch::channel(OpStatus::Running);
        Self {
            id: uuid::Uuid::new_v4().to_string(),
            metadata: spec.metadata.clone(),
            spec,
            created_at: now.clone(),
            updated_at: now,
            status: OpStatus::Running,
            err: String::new(),
            err_code: 0,
            watch,
            wait_started: Arc::new(Notify::new()),
            cancelled: Arc::new(Notify::new()),
            location,
            line,
        }
    }

    /// The operation as the answer that created it, and its events, show it.
    pub(crate) fn to_json(&self) -> Value {
        let metadata = match &self.metadata {
            Value::Null
                if self
                    .line
                    .has_extension(line::OPERATION_METADATA_ALWAYS_AN_OBJECT) =>
            {
                json!({})
            }
            metadata => metadata.clone(),
        };
        json!({
            "id": self.id, "class": self.spec.class, "description": self.spec.description,
            "created_at": self.created_at, "updated_at": self.updated_at,
            "status": self.status.name(), "status_code": self.status.code(),
            "resources": self.spec.resources, "metadata": metadata,
            "may_cancel": self.may_cancel(), "err": self.err,
            "location": self.location.as_deref().unwrap_or("none"),
        })
    }

    /// The operation as a read of it (`GET`, a list, a wait) shows it: on a line that hides
    /// them there, without its websocket secrets.
    pub(crate) fn to_json_read(&self) -> Value {
        let mut json = self.to_json();
        if self.line.has_extension(line::OPERATION_READS_HIDE_SECRETS) {
            if let Some(metadata) = json["metadata"].as_object_mut() {
                metadata.remove("fds");
            }
        }
        json
    }

    /// Whether it can be cancelled now: a finished operation no longer can (the daemon drops its
    /// cancel handler when it is done), except a token, which is cancelled to revoke it.
    fn may_cancel(&self) -> bool {
        self.spec.may_cancel && (self.spec.class == "token" || !self.status.is_final())
    }

    /// Replaces the metadata (and bumps `updated_at` when it changed).
    pub(crate) fn set_metadata(&mut self, metadata: Value) {
        if metadata != self.metadata {
            self.metadata = metadata;
            self.updated_at = clock::now();
        }
    }

    /// A cancelled operation whose work ended after the cancel: the daemon's operation takes the
    /// outcome of its run function even then (an exec's, which cannot record its exit status in
    /// a final operation, fails with that error).
    pub(crate) fn fail_after_cancel(&mut self, code: u16, message: String) -> bool {
        if self.status != OpStatus::Cancelled {
            return false;
        }
        self.status = OpStatus::Failure;
        self.err_code = code;
        self.err = message;
        self.watch.send_replace(OpStatus::Failure);
        true
    }

    /// Moves to a final status and wakes every waiter. A final operation stays final.
    pub(crate) fn settle(&mut self, status: OpStatus, err: Option<(u16, String)>) -> bool {
        if self.status.is_final() {
            return false;
        }
        self.status = status;
        if let Some((code, message)) = err {
            self.err_code = code;
            self.err = message;
        }
        self.watch.send_replace(status);
        true
    }
}

/// Every operation, in creation order.
#[derive(Debug, Default)]
pub(crate) struct Registry {
    pub(crate) list: Vec<Operation>,
}

impl Registry {
    pub(crate) fn get(&self, id: &str) -> Option<&Operation> {
        self.list.iter().find(|o| o.id == id)
    }
    pub(crate) fn get_mut(&mut self, id: &str) -> Option<&mut Operation> {
        self.list.iter_mut().find(|o| o.id == id)
    }
    pub(crate) fn remove(&mut self, id: &str) {
        self.list.retain(|o| o.id != id);
    }
}
