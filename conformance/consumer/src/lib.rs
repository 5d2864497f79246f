//! An example host: every caller's operations go to one Incus, and a caller may run an operation
//! only when it was granted the operation's scope and the input's project.
//!
//! `tests/certify.rs` certifies it with `incus_conformance::certify`.
//!
//! ```
//! use host_certification_example::{Grants, TeamHost};
//! use incus_operations::{Connection, Scope};
//!
//! let host = TeamHost::new(Connection::unix("/var/lib/incus/unix.socket"));
//! let caller = Grants::new("agent-7", [Scope::Read]).project("team-a");
//! # let _ = (host, caller);
//! ```
use std::collections::BTreeSet;

use incus_operations::{Binding, BindingContext, Connection, Host, HostError, Scope};
use serde_json::Value;

/// What a verified caller was granted: scopes, and the projects it may touch (`None`: any).
#[derive(Debug, Clone)]
pub struct Grants {
    name: String,
    scopes: Vec<Scope>,
    projects: Option<BTreeSet<String>>,
}

impl Grants {
    /// A caller with these scopes, allowed in no project yet.
    pub fn new(name: impl Into<String>, scopes: impl IntoIterator<Item = Scope>) -> Self {
        Grants {
            name: name.into(),
            scopes: scopes.into_iter().collect(),
            projects: Some(BTreeSet::new()),
        }
    }

    /// Allows one more project; the first one allowed is the caller's default project.
    pub fn project(mut self, project: impl Into<String>) -> Self {
        if let Some(projects) = &mut self.projects {
            projects.insert(project.into());
        }
        self
    }

    /// Allows every project (an administrator).
    pub fn any_project(mut self) -> Self {
        self.projects = None;
        self
    }
}

/// A host that binds every caller to one connection and authorizes by scope and project.
#[derive(Debug, Clone)]
pub struct TeamHost {
    connection: Connection,
}

impl TeamHost {
    /// A host for the Incus behind `connection`.
    pub fn new(connection: Connection) -> Self {
        TeamHost { connection }
    }
}

impl Host for TeamHost {
    type Caller = Grants;

    async fn binding(&self, caller: &Grants, _operation: &str) -> Result<Binding, HostError> {
        let default = caller
            .projects
            .as_ref()
            .and_then(|set| set.first().cloned());
        let context = match default {
            Some(project) => BindingContext::default().default_project(project),
            None => BindingContext::default(),
        };
        Ok(Binding::connection(self.connection.clone(), context))
    }

    async fn authorize(
        &self,
        caller: &Grants,
        operation: &str,
        input: &Value,
    ) -> Result<(), HostError> {
        let descriptor = incus_operations::fetch(operation)
            .ok_or_else(|| HostError::Denied(format!("{operation} is not offered")))?;
        if !caller.scopes.contains(&descriptor.scope()) {
            let scope = descriptor.scope().as_str();
            return Err(HostError::Denied(format!("{} lacks {scope}", caller.name)));
        }
        // The input is normalized: `project` is the native project the operation will run in.
        let project = input
            .get("project")
            .and_then(Value::as_str)
            .unwrap_or("default");
        match &caller.projects {
            Some(allowed) if !allowed.contains(project) => Err(HostError::Denied(format!(
                "{} may not use project {project}",
                caller.name
            ))),
            _ => Ok(()),
        }
    }
}
