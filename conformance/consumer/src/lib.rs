//! An example host: every caller's operations go to one Incus, and a caller may run an operation
//! only when it was granted the operation's scope and every project its input names (the native
//! `project`, and the project that `incus_project_get` reads). A caller limited to some projects
//! lists projects only through [`TeamHost::run`], which keeps the granted ones, and sees in a
//! result's `used_by` only the resources of its granted projects ([`Host::may_see_project`]).
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

/// The workspace README's Rust examples, compiled as doctests here: they use this example host.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct WorkspaceReadmeDoctests;

/// `conformance/README.md`'s Rust examples, compiled and run as doctests here: they use this
/// example host, which the conformance crate cannot depend on.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ConformanceReadmeDoctests;

use incus_operations::{Binding, BindingContext, Connection, Host, HostError, RunOptions, Scope};
use serde_json::Value;

/// What a verified caller was granted: scopes, and the projects it may touch (`None`: any).
#[derive(Debug, Clone)]
pub struct Grants {
    name: String,
    scopes: Vec<Scope>,
    projects: Option<BTreeSet<String>>,
    /// Set only by [`TeamHost::run`] for the project list it filters to the grant.
    filtered_listing: bool,
}

impl Grants {
    /// A caller with these scopes, allowed in no project yet.
    pub fn new(name: impl Into<String>, scopes: impl IntoIterator<Item = Scope>) -> Self {
        Grants {
            name: name.into(),
            scopes: scopes.into_iter().collect(),
            projects: Some(BTreeSet::new()),
            filtered_listing: false,
        }
    }

    /// Allows one more project; the first in name order is the caller's default project.
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

/// The operation whose result names projects the caller may not be granted.
const PROJECT_LIST: &str = "incus_project_list";

impl TeamHost {
    /// A host for the Incus behind `connection`.
    pub fn new(connection: Connection) -> Self {
        TeamHost { connection }
    }

    /// Runs an operation for `caller` with its granted scopes, as the host's tool would. For a
    /// caller limited to some projects, `incus_project_list` keeps only the granted projects:
    /// `items` are filtered and `count` is the number kept (`truncated` still says whether the
    /// native list was cut by `limit`).
    pub async fn run(&self, caller: &Grants, operation: &str, input: Value) -> Value {
        let scopes = caller.scopes.clone();
        let (Some(allowed), PROJECT_LIST) = (&caller.projects, operation) else {
            return incus_operations::run(operation, input, RunOptions::new(self, caller, scopes))
                .await;
        };
        let listing = Grants {
            filtered_listing: true,
            ..caller.clone()
        };
        let mut result =
            incus_operations::run(operation, input, RunOptions::new(self, &listing, scopes)).await;
        if let Some(items) = result.get_mut("items").and_then(Value::as_array_mut) {
            items.retain(|item| {
                item.get("name")
                    .and_then(Value::as_str)
                    .is_some_and(|name| allowed.contains(name))
            });
            let kept = items.len();
            result["count"] = Value::from(kept);
        }
        result
    }
}

/// Every project an input names: the native `project` (normalized, so always there) and, for the
/// project operations, the project they read by `name`.
fn named_projects<'a>(operation: &str, input: &'a Value) -> Vec<&'a str> {
    let text = |field: &str| input.get(field).and_then(Value::as_str);
    let mut named = vec![text("project").unwrap_or("default")];
    let reads_a_project =
        incus_operations::fetch(operation).is_some_and(|d| d.resource() == "project");
    if let Some(name) = text("name").filter(|_| reads_a_project) {
        named.push(name);
    }
    named
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
        let Some(allowed) = &caller.projects else {
            return Ok(());
        };
        if operation == PROJECT_LIST && !caller.filtered_listing {
            return Err(HostError::Denied(format!(
                "{} may list projects only through TeamHost::run, which keeps the granted ones",
                caller.name
            )));
        }
        // The input is normalized: `project` is the native project the operation will run in.
        match named_projects(operation, input)
            .into_iter()
            .find(|project| !allowed.contains(*project))
        {
            Some(project) => Err(HostError::Denied(format!(
                "{} may not use project {project}",
                caller.name
            ))),
            None => Ok(()),
        }
    }

    /// A result's `used_by` names resources of other projects only when the caller was granted
    /// them (an administrator sees every project).
    async fn may_see_project(&self, caller: &Grants, project: &str) -> bool {
        caller
            .projects
            .as_ref()
            .is_none_or(|allowed| allowed.contains(project))
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (an example host); its certification, every
    //! suite through it, is `tests/certify.rs`.

    use incus_operations::{run, RunOptions};
    use serde_json::json;

    use super::*;

    /// Runs `operation` for `caller` with every scope verified, against a socket nobody listens
    /// on: an authorized call gets as far as discovery, a refused one stops at `unauthorized`.
    async fn kind_of(caller: &Grants, operation: &str, input: Value) -> String {
        let host = TeamHost::new(Connection::unix("/nonexistent/incus.socket"));
        let scopes = [Scope::Read, Scope::Write, Scope::Exec, Scope::Delete];
        let result = run(operation, input, RunOptions::new(&host, caller, scopes)).await;
        result["error"]["kind"]
            .as_str()
            .unwrap_or("success")
            .to_owned()
    }

    #[tokio::test]
    async fn authorize_refuses_a_project_not_granted() {
        let caller = Grants::new("agent", [Scope::Read]).project("team-a");
        let kind = kind_of(&caller, "incus_instance_list", json!({"project": "team-b"})).await;
        assert_eq!(kind, "unauthorized");
    }

    #[tokio::test]
    async fn authorize_refuses_a_scope_not_granted() {
        let caller = Grants::new("agent", [Scope::Read]).project("team-a");
        let input = json!({"name": "web", "confirm": "web"});
        assert_eq!(
            kind_of(&caller, "incus_instance_delete", input).await,
            "unauthorized"
        );
    }

    #[tokio::test]
    async fn binding_runs_in_the_first_granted_project() {
        let caller = Grants::new("agent", [Scope::Read]).project("team-a");
        // No project in the input: the binding's default (team-a) is authorized, so the call
        // reaches discovery, which fails on the missing socket.
        let kind = kind_of(&caller, "incus_instance_list", json!({})).await;
        assert_eq!(kind, "discovery_failed");
    }

    #[tokio::test]
    async fn authorize_refuses_a_project_read_by_name_that_is_not_granted() {
        let caller = Grants::new("agent", [Scope::Read]).project("team-a");
        let kind = kind_of(&caller, "incus_project_get", json!({"name": "other"})).await;
        assert_eq!(kind, "unauthorized");
        let kind = kind_of(&caller, "incus_project_get", json!({"name": "team-a"})).await;
        assert_eq!(kind, "discovery_failed");
        // `name` names a project only for the project operations.
        let kind = kind_of(&caller, "incus_instance_get", json!({"name": "other"})).await;
        assert_eq!(kind, "discovery_failed");
    }

    #[tokio::test]
    async fn the_project_list_goes_only_through_the_filtering_run() {
        let caller = Grants::new("agent", [Scope::Read]).project("team-a");
        assert_eq!(
            kind_of(&caller, PROJECT_LIST, json!({})).await,
            "unauthorized"
        );
        let host = TeamHost::new(Connection::unix("/nonexistent/incus.socket"));
        let result = host.run(&caller, PROJECT_LIST, json!({})).await;
        assert_eq!(result["error"]["kind"], "discovery_failed", "{result}");
        let admin = Grants::new("admin", [Scope::Read]).any_project();
        assert_eq!(
            kind_of(&admin, PROJECT_LIST, json!({})).await,
            "discovery_failed"
        );
    }

    #[tokio::test]
    async fn used_by_shows_the_granted_projects_only() {
        let host = TeamHost::new(Connection::unix("/nonexistent/incus.socket"));
        let caller = Grants::new("agent", [Scope::Read]).project("team-a");
        assert!(host.may_see_project(&caller, "team-a").await);
        assert!(!host.may_see_project(&caller, "team-b").await);
        let admin = Grants::new("admin", [Scope::Read]).any_project();
        assert!(host.may_see_project(&admin, "team-b").await);
    }

    #[tokio::test]
    async fn any_project_allows_every_project() {
        let caller = Grants::new("admin", [Scope::Read]).any_project();
        let kind = kind_of(&caller, "incus_instance_list", json!({"project": "team-b"})).await;
        assert_eq!(kind, "discovery_failed");
    }
}
