//! The reference host: binds every call to one connection and allows whatever the caller's
//! verified scopes allow. The harness, the acceptance runner and `incus-conformance call` use it.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # let fake = fake_incus::FakeIncus::builder().start().await?;
//! # let connection = incus_operations::Connection::unix(fake.unix_socket());
//! use incus_conformance::ReferenceHost;
//! use incus_operations::{run, RunOptions, Scope};
//! use serde_json::json;
//!
//! let host = ReferenceHost::new(connection).default_project("default");
//! let result = run(
//!     "incus_instance_list",
//!     json!({}),
//!     RunOptions::new(&host, &(), [Scope::Read]),
//! )
//! .await;
//! println!("{result}");
//! # assert!(result.get("error").is_none(), "{result}");
//! # Ok(())
//! # }
//! ```
use std::collections::BTreeMap;

use incus_operations::{
    Binding, BindingContext, Connection, Host, HostError, ImageRemote, RestrictedItem,
};
use serde_json::Value;

/// A host with one connection, an optional default project, a fixed set of image remotes and a
/// fixed answer on restricted input.
#[derive(Debug, Clone)]
pub struct ReferenceHost {
    connection: Connection,
    context: BindingContext,
    remotes: BTreeMap<String, ImageRemote>,
    allow_restricted: bool,
}

impl ReferenceHost {
    /// A host for this connection: project `default`, no image remotes, restricted input denied.
    pub fn new(connection: Connection) -> Self {
        ReferenceHost {
            connection,
            context: BindingContext::default(),
            remotes: BTreeMap::new(),
            allow_restricted: false,
        }
    }

    /// Runs operations whose input names no project in this project.
    pub fn default_project(mut self, project: impl Into<String>) -> Self {
        self.context = self.context.default_project(project);
        self
    }

    /// Approves an image remote by name.
    pub fn image_remote(mut self, name: impl Into<String>, remote: ImageRemote) -> Self {
        self.remotes.insert(name.into(), remote);
        self
    }

    /// Allows (or denies, the default) restricted config keys and devices.
    pub fn allow_restricted(mut self, allow: bool) -> Self {
        self.allow_restricted = allow;
        self
    }
}

impl Host for ReferenceHost {
    type Caller = ();

    async fn binding(&self, _caller: &(), _operation: &str) -> Result<Binding, HostError> {
        Ok(Binding::connection(
            self.connection.clone(),
            self.context.clone(),
        ))
    }

    async fn authorize(
        &self,
        _caller: &(),
        _operation: &str,
        _input: &Value,
    ) -> Result<(), HostError> {
        Ok(())
    }

    async fn image_remote(&self, _caller: &(), name: &str) -> Result<ImageRemote, HostError> {
        self.remotes
            .get(name)
            .cloned()
            .ok_or_else(|| HostError::UnknownRemote(name.to_owned()))
    }

    async fn allow_restricted(
        &self,
        _caller: &(),
        _operation: &str,
        _items: &[RestrictedItem],
    ) -> bool {
        self.allow_restricted
    }
}
