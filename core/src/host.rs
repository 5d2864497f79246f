//! The host binding: the trait a host implements and what its callbacks return.
use std::future::Future;

use futures_util::future::BoxFuture;
use serde_json::Value;

use crate::client::{Client, Connection};

/// The trusted backend a host returns for a caller.
#[derive(Debug)]
#[non_exhaustive]
pub enum Binding {
    /// A client that has already discovered its server (`GET /1.0` answered `auth: "trusted"`).
    /// Operations run in the input's `project`, or in project `default`.
    Client(Client),
    /// A connection that the operation discovers after authorization, and the context it runs in.
    Connection {
        /// Where and how to reach Incus.
        connection: Connection,
        /// Defaults for this caller, such as the project.
        context: BindingContext,
    },
}

impl Binding {
    /// A binding to an already discovered client.
    pub fn client(client: Client) -> Self {
        Binding::Client(client)
    }

    /// A binding to a connection, discovered after authorization, with its context.
    pub fn connection(connection: Connection, context: BindingContext) -> Self {
        Binding::Connection {
            connection,
            context,
        }
    }
}

/// Defaults that apply to a caller's operations on a [`Binding::Connection`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BindingContext {
    /// The native project used when the input names none (`default` when unset).
    pub default_project: Option<String>,
}

impl BindingContext {
    /// Sets the native project used when the input names none.
    pub fn default_project(mut self, project: impl Into<String>) -> Self {
        self.default_project = Some(project.into());
        self
    }
}

/// A host-approved image server, named in input only by its remote name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageRemote {
    /// The server URL, for example `https://images.linuxcontainers.org`.
    pub server: String,
    /// The protocol: `simplestreams` or `incus`.
    pub protocol: String,
}

impl ImageRemote {
    /// An image server and its protocol.
    pub fn new(server: impl Into<String>, protocol: impl Into<String>) -> Self {
        ImageRemote {
            server: server.into(),
            protocol: protocol.into(),
        }
    }
}

/// What a host callback returns when it does not allow something.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum HostError {
    /// The host refuses; the text says why (it is shown to the caller).
    #[error("denied: {0}")]
    Denied(String),
    /// The host does not approve this image remote.
    #[error("unknown image remote {0:?}")]
    UnknownRemote(String),
    /// The host could not decide (for example its policy store failed).
    #[error("host failure: {0}")]
    Failed(String),
}

/// A restricted item found in create or update input, or in the profiles the call applies, passed
/// to [`Host::allow_restricted`] with the value the instance would get, so that a host can allow one
/// exact value (one host path, one key's setting) without allowing every item of its kind.
///
/// The variants and their fields are `#[non_exhaustive]`: match them with `..`, and build them with
/// [`RestrictedItem::config_key`] and [`RestrictedItem::device`].
///
/// ```
/// use incus_operations::RestrictedItem;
/// use serde_json::json;
///
/// /// Allows only a read-only bind mount of `/srv/data`.
/// fn allowed(item: &RestrictedItem) -> bool {
///     match item {
///         RestrictedItem::Device { config, .. } => {
///             let expected = json!({"type": "disk", "source": "/srv/data", "path": "/data", "readonly": "true"});
///             serde_json::Value::Object(config.clone()) == expected
///         }
///         _ => false,
///     }
/// }
///
/// let item = RestrictedItem::device(
///     "data",
///     json!({"type": "disk", "source": "/srv/data", "path": "/data", "readonly": "true"}),
/// );
/// assert!(allowed(&item));
/// assert!(!allowed(&RestrictedItem::config_key("raw.lxc", json!("lxc.mount.auto = sys:rw"))));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RestrictedItem {
    /// A config key outside the allowlist (`raw.*`, `volatile.*`, `security.privileged`,
    /// `security.idmap.*`, `security.syscalls.*`, `linux.kernel_modules`, `security.nesting`,
    /// `nvidia.*`, unknown keys, ...; see `SECURITY.md`), with its value as given.
    #[non_exhaustive]
    ConfigKey {
        /// The key, as given.
        key: String,
        /// Its value, as given (Incus config values are strings).
        value: Value,
    },
    /// A device that is not a plain pool disk or managed-network nic (see `SECURITY.md` for the
    /// keys each may carry), with its whole config.
    #[non_exhaustive]
    Device {
        /// The device name.
        name: String,
        /// The device's whole config as given (`type` included); a device given as something
        /// other than an object is an empty map here.
        config: serde_json::Map<String, Value>,
    },
}

impl RestrictedItem {
    /// A restricted config key and its value.
    pub fn config_key(key: impl Into<String>, value: Value) -> Self {
        RestrictedItem::ConfigKey {
            key: key.into(),
            value,
        }
    }

    /// A restricted device and its whole config (anything but an object counts as empty).
    pub fn device(name: impl Into<String>, config: Value) -> Self {
        RestrictedItem::Device {
            name: name.into(),
            config: match config {
                Value::Object(config) => config,
                _ => serde_json::Map::new(),
            },
        }
    }

    /// A device's `type` (empty when missing or not a string); `None` for a config key.
    pub fn device_type(&self) -> Option<&str> {
        match self {
            RestrictedItem::Device { config, .. } => Some(
                config
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or_default(),
            ),
            RestrictedItem::ConfigKey { .. } => None,
        }
    }
}

/// The host binding: how a host tells [`run`](crate::run) which Incus to use for a caller and
/// whether the caller may run an operation.
///
/// A host implements [`Host`] with plain `async fn`s. [`run`](crate::run) takes the host as a
/// `&dyn` [`DynHost`], which every [`Host`] is through a blanket implementation, so hosts can also
/// be stored as trait objects.
///
/// Every callback is bounded: a callback that returns an error, panics, does not finish within
/// [`RunOptions::callback_timeout`](crate::RunOptions) (5 s by default) or returns something
/// malformed denies the call before any backend request is made.
///
/// ```
/// use incus_operations::{Binding, BindingContext, Connection, Host, HostError, ImageRemote};
/// use serde_json::Value;
///
/// struct MyHost {
///     connection: Connection,
/// }
///
/// impl Host for MyHost {
///     type Caller = String;
///
///     async fn binding(&self, caller: &String, _operation: &str) -> Result<Binding, HostError> {
///         let context = BindingContext::default().default_project(format!("team-{caller}"));
///         Ok(Binding::connection(self.connection.clone(), context))
///     }
///
///     async fn authorize(&self, _caller: &String, operation: &str, _input: &Value) -> Result<(), HostError> {
///         let descriptor = incus_operations::fetch(operation);
///         if descriptor.is_some_and(|d| d.resource() == "image" && d.destructive()) {
///             return Err(HostError::Denied("images are managed centrally".into()));
///         }
///         Ok(())
///     }
///
///     async fn image_remote(&self, _caller: &String, name: &str) -> Result<ImageRemote, HostError> {
///         match name {
///             "images" => Ok(ImageRemote::new("https://images.linuxcontainers.org", "simplestreams")),
///             _ => Err(HostError::UnknownRemote(name.to_owned())),
///         }
///     }
/// }
/// ```
pub trait Host: Send + Sync {
    /// The host's own verified caller identity.
    type Caller: Send + Sync;

    /// The trusted backend for this caller and operation.
    fn binding(
        &self,
        caller: &Self::Caller,
        operation: &str,
    ) -> impl Future<Output = Result<Binding, HostError>> + Send;

    /// Whether the caller may run the operation with this input. The input is validated and
    /// normalized: defaults are filled in and `project` is the native project it will run in.
    fn authorize(
        &self,
        caller: &Self::Caller,
        operation: &str,
        input: &Value,
    ) -> impl Future<Output = Result<(), HostError>> + Send;

    /// The image server for a remote name. By default no remote is known.
    fn image_remote(
        &self,
        _caller: &Self::Caller,
        name: &str,
    ) -> impl Future<Output = Result<ImageRemote, HostError>> + Send {
        let name = name.to_owned();
        async move { Err(HostError::UnknownRemote(name)) }
    }

    /// Whether restricted config keys or devices are allowed. By default they are not. Each item
    /// carries its value (a key's value, a device's whole config), so a host can allow one exact
    /// value; it is asked once per check with every restricted item of that check.
    fn allow_restricted(
        &self,
        _caller: &Self::Caller,
        _operation: &str,
        _items: &[RestrictedItem],
    ) -> impl Future<Output = bool> + Send {
        async { false }
    }

    /// Whether the caller may see which resources of `project` exist. A result's `used_by` lists
    /// name resources of every project that uses the object (a network or a shared profile is used
    /// from other projects); an entry of a project other than the call's own is kept only when this
    /// answers `true`. It is asked at most once per project and call, under the callback bound; no
    /// answer hides the entries. By default no other project is visible.
    ///
    /// ```
    /// use incus_operations::{Binding, Connection, Host, HostError, BindingContext};
    /// use serde_json::Value;
    ///
    /// /// A caller sees the projects of its team.
    /// struct Teams { connection: Connection }
    ///
    /// impl Host for Teams {
    ///     type Caller = Vec<String>;
    ///     async fn binding(&self, _: &Vec<String>, _: &str) -> Result<Binding, HostError> {
    ///         Ok(Binding::connection(self.connection.clone(), BindingContext::default()))
    ///     }
    ///     async fn authorize(&self, _: &Vec<String>, _: &str, _: &Value) -> Result<(), HostError> {
    ///         Ok(())
    ///     }
    ///     async fn may_see_project(&self, projects: &Vec<String>, project: &str) -> bool {
    ///         projects.iter().any(|granted| granted == project)
    ///     }
    /// }
    /// ```
    fn may_see_project(
        &self,
        _caller: &Self::Caller,
        _project: &str,
    ) -> impl Future<Output = bool> + Send {
        async { false }
    }
}

/// The example host: every call is bound to one backend and authorized, so a caller runs
/// whatever its verified scopes allow; no image remote is known, no restricted config or device
/// is allowed and no other project is visible (the trait's defaults). Tests, benches and a first
/// try of the operations use it; a real host decides per caller (see [`Host`]).
///
/// ```
/// use incus_operations::{run, AllowAll, Connection, RunOptions, Scope};
/// use serde_json::json;
///
/// # tokio::runtime::Runtime::new().unwrap().block_on(async {
/// let host = AllowAll::new(Connection::unix("/nonexistent/incus.socket")).default_project("dev");
/// // The caller's scopes still decide: a destructive operation needs more than `incus.read`,
/// // and is refused before any request.
/// let delete = incus_operations::all().into_iter().find(|d| d.destructive()).unwrap();
/// let options = RunOptions::new(&host, &(), [Scope::Read]);
/// let refused = run(delete.name(), json!({}), options).await;
/// assert_eq!(refused["error"]["kind"], "scope_missing");
/// # });
/// ```
#[derive(Debug, Clone)]
pub struct AllowAll {
    backend: Backend,
}

/// What [`AllowAll`] binds every call to.
#[derive(Debug, Clone)]
enum Backend {
    Client(Client),
    Connection(Connection, BindingContext),
}

impl AllowAll {
    /// Binds every call to `connection`, discovered by each operation, in project `default`.
    pub fn new(connection: Connection) -> Self {
        AllowAll {
            backend: Backend::Connection(connection, BindingContext::default()),
        }
    }

    /// Binds every call to an already discovered client.
    pub fn client(client: Client) -> Self {
        AllowAll {
            backend: Backend::Client(client),
        }
    }

    /// Runs operations whose input names no project in `project` (on a connection; a client
    /// binding runs them in `default`).
    pub fn default_project(mut self, project: impl Into<String>) -> Self {
        if let Backend::Connection(_, context) = &mut self.backend {
            *context = std::mem::take(context).default_project(project);
        }
        self
    }
}

impl Host for AllowAll {
    type Caller = ();

    async fn binding(&self, _caller: &(), _operation: &str) -> Result<Binding, HostError> {
        Ok(match &self.backend {
            Backend::Client(client) => Binding::client(client.clone()),
            Backend::Connection(connection, context) => {
                Binding::connection(connection.clone(), context.clone())
            }
        })
    }

    async fn authorize(&self, _: &(), _: &str, _: &Value) -> Result<(), HostError> {
        Ok(())
    }
}

/// The dyn-compatible form of [`Host`] that [`run`](crate::run) takes. Every [`Host`] is a
/// `DynHost`; implement [`Host`] rather than this trait.
pub trait DynHost: Send + Sync {
    /// The host's own verified caller identity.
    type Caller: Send + Sync;

    /// See [`Host::binding`].
    fn binding<'a>(
        &'a self,
        caller: &'a Self::Caller,
        operation: &'a str,
    ) -> BoxFuture<'a, Result<Binding, HostError>>;

    /// See [`Host::authorize`].
    fn authorize<'a>(
        &'a self,
        caller: &'a Self::Caller,
        operation: &'a str,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<(), HostError>>;

    /// See [`Host::image_remote`].
    fn image_remote<'a>(
        &'a self,
        caller: &'a Self::Caller,
        name: &'a str,
    ) -> BoxFuture<'a, Result<ImageRemote, HostError>>;

    /// See [`Host::allow_restricted`].
    fn allow_restricted<'a>(
        &'a self,
        caller: &'a Self::Caller,
        operation: &'a str,
        items: &'a [RestrictedItem],
    ) -> BoxFuture<'a, bool>;

    /// See [`Host::may_see_project`].
    fn may_see_project<'a>(
        &'a self,
        caller: &'a Self::Caller,
        project: &'a str,
    ) -> BoxFuture<'a, bool>;
}

impl<H: Host> DynHost for H {
    type Caller = H::Caller;

    fn binding<'a>(
        &'a self,
        caller: &'a Self::Caller,
        operation: &'a str,
    ) -> BoxFuture<'a, Result<Binding, HostError>> {
        Box::pin(Host::binding(self, caller, operation))
    }

    fn authorize<'a>(
        &'a self,
        caller: &'a Self::Caller,
        operation: &'a str,
        input: &'a Value,
    ) -> BoxFuture<'a, Result<(), HostError>> {
        Box::pin(Host::authorize(self, caller, operation, input))
    }

    fn image_remote<'a>(
        &'a self,
        caller: &'a Self::Caller,
        name: &'a str,
    ) -> BoxFuture<'a, Result<ImageRemote, HostError>> {
        Box::pin(Host::image_remote(self, caller, name))
    }

    fn allow_restricted<'a>(
        &'a self,
        caller: &'a Self::Caller,
        operation: &'a str,
        items: &'a [RestrictedItem],
    ) -> BoxFuture<'a, bool> {
        Box::pin(Host::allow_restricted(self, caller, operation, items))
    }

    fn may_see_project<'a>(
        &'a self,
        caller: &'a Self::Caller,
        project: &'a str,
    ) -> BoxFuture<'a, bool> {
        Box::pin(Host::may_see_project(self, caller, project))
    }
}
