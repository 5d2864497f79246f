//! A scriptable Incus simulator: a fake Incus daemon over a Unix socket and mutual HTTPS that
//! answers like Incus 7.0.2 (or 6.0.4: [`IncusLine`]), runs exec over websockets with a built-in
//! interpreter, applies scripted faults and journals every request.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use fake_incus::{assert_native_error, Fault, FakeIncus, Request, Rule};
//!
//! let fake = FakeIncus::builder().https(true).start().await?;
//! println!("unix socket: {}, https: {:?}", fake.unix_socket().display(), fake.https_url());
//!
//! // The second instance creation closes the connection after it was applied.
//! let _guard = fake.add_rule(Rule::new("POST", "/1.0/instances").nth(2).fault(Fault::CloseAfterApply))?;
//! // Exactly one GET /1.0 from here on, checked when `once` drops.
//! let once = fake.expect("GET", "/1.0", 1);
//!
//! // Ask it in process (any client can use its sockets the same way):
//! assert_eq!(fake.call(Request::get("/1.0")).await.status(), 200);
//! let missing = fake.call(Request::get("/1.0/profiles/nope")).await;
//! assert_native_error(&missing, 404, "Fetch profile: Profile not found");
//!
//! // ... then check what it was sent:
//! assert_eq!(fake.requests("GET", "/1.0").len(), 1);
//! drop(once);
//! # Ok(()) }
//! ```
//!
//! Defaults: the Unix socket lives in a temporary directory of its own; HTTPS is off unless
//! [`FakeIncusBuilder::https`] is set (then `127.0.0.1:0`); the state is the default state
//! (project, profile and pool `default`, network `lo`, image alias `busybox`). Dropping the
//! handle stops every listener and removes the socket.
//!
//! # How the code is laid out
//!
//! The modules form floors, read top-down: a module uses only modules below it (on a lower
//! floor, or later on its own floor), never one above, never in a circle:
//!
//! | floor | modules | what they do |
//! |---|---|---|
//! | 1 | `lib` (this handle), `control`, `members`, `capture`, `record`, `replay` | start and script the fake: the builder, the control socket, the cluster members' listeners and their down/up life; capture an Incus into a seed; record an Incus's traffic through a proxy, replay a transcript against an Incus |
//! | 2 | `server` | the listeners: one task per connection, HTTP over a Unix socket or mutual TLS, into `api` |
//! | 3 | `api` | the Incus API as a function from request to response: journal, faults, trust, the route table (`api/routes.rs`, one row per endpoint, as Incus's `api10`), one module per resource; on a cluster it decides where the request belongs and hands that (a `cluster::Scope`) down explicitly, never through a task-local |
//! | 4 | `app` | everything a handler reaches: state behind its lock and snapshots, operations' work, identity, settings |
//! | 5 | `exec`, `operations` | exec sessions over websockets and the built-in interpreter; operations in one home: the operation and its registry, the driver (registration, events, a task's work, waits and expiry) and the gate every operation's work passes first (`exec` settles through `operations`) |
//! | 6 | `faults`, `verify`, `journal`, `persist` | the fault rules and their verdicts; verification of the journal (`POST /verify`); the request journal and its queries; the state directory (`--state-dir`) and its group committer |
//! | 7 | `client`, `cluster`, `state`, `envelope`, `pattern`, `tls`, `differ`, `transcript`, `line`, `go` | plain data and rules: how to ask the fake (`Request`, `Reply`, a socket client) and how to reach any Incus (`Source`: its socket, or HTTPS with the client certificate presented and the server's pinned), how two answers are compared (`differ`), the record/replay transcript format, the cluster's model (members, lives, placement), the resources, the response envelopes, path patterns, certificates (made, or loaded from a `--tls-dir`), the Incus line the fake imitates (server version and API extensions; handlers ask `has_extension`), and the Go behaviour the daemon shows through (`go`: one file per Go package it imitates: `encoding/json`, `net/http`, `time`...) |
//!
//! Where to add things: an endpoint is a function in its resource's module under `api/` and a
//! row of the route table (`api/routes.rs`, with the API extension that introduced it; state
//! it changes in `state/`); a fault is a variant in `faults/`; a test of API semantics asks the
//! fake with [`FakeIncus::call`] and checks errors with [`assert_native_error`]; a test of the
//! transport (framing, TLS, websockets, a socket going away) uses a socket ([`client`]).

/// The README's examples, compiled and run as doctests.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

/// CLUSTER.md's examples, compiled and run as doctests.
#[doc = include_str!("../CLUSTER.md")]
#[cfg(doctest)]
pub struct ClusterDoctests;

mod api;
mod app;
mod capture;
pub mod client;
mod cluster;
mod control;
pub mod differ;
mod envelope;
mod exec;
mod faults;
mod go;
mod journal;
mod line;
mod members;
mod operations;
mod pattern;
mod persist;
pub mod record;
pub mod replay;
mod server;
mod state;
mod tls;
pub mod transcript;
mod verify;

pub use api::routes::Endpoint;
pub use capture::{capture, capture_from, CaptureError, CaptureOptions};
pub use client::Source as CaptureSource;
pub use client::{assert_native_error, Reply, Request};
pub use cluster::{ClusterTimings, DownTimeline, Member, Span};
pub use faults::{Fault, Rule, RuleBuilder, RuleError, RuleGuard, Which};
pub use journal::{
    Answer, ControlMessage, Expectation, ExpectationError, JournalEntry, JournalPage, Listener,
    BODY_KEPT, CONTROL_MESSAGES_KEPT, DEFAULT_LIMIT as DEFAULT_JOURNAL_LIMIT,
};
pub use line::{IncusLine, UnknownLine, WAIT_ANSWERS_THE_OPERATION};

use app::{App, Settings};

pub use app::{SnapshotError, DEFAULT_EXEC_START_DELAY};
pub use pattern::path_matches;

/// The resources the fake declares (networks, profiles, projects, storage, certificates, ...)
/// as Markdown: for each, its endpoints, what the fake answers and what it does not do. The
/// fake's `API.md` is this and the measured coverage of the Incus API.
pub fn declared_resources_markdown() -> String {
    api::declared_markdown()
}

/// The fake's route table, one [`Endpoint`] per row and method, in the order a request walks
/// it: every endpoint it serves, with the API extension that introduced it (a line without
/// the extension does not route it). `API.md` and the coverage tests read it.
///
/// ```
/// let table = fake_incus::route_table();
/// let state = table
///     .iter()
///     .find(|e| e.method == "PUT" && e.matches("/1.0/instances/c1/state"))
///     .expect("a row");
/// assert_eq!(state.path, "/1.0/instances/{name}/state");
/// let nbd = table.iter().find(|e| e.matches("/1.0/instances/c1/nbd")).expect("a row");
/// assert_eq!(nbd.extension, Some("instance_nbd"));
/// assert!(!fake_incus::IncusLine::V6_0.has_extension("instance_nbd"));
/// ```
pub fn route_table() -> Vec<Endpoint> {
    api::endpoints()
}

/// The futures of [`FakeIncusBuilder::start`] and [`FakeIncus::call`]: boxed, so that their
/// code is compiled once, in this crate.
pub type BoxedFuture<'a, T> = std::pin::Pin<Box<dyn std::future::Future<Output = T> + Send + 'a>>;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Why the fake could not start or could not take an input.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A socket, file or directory could not be used.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A certificate could not be made or read.
    #[error("TLS: {0}")]
    Tls(String),
    /// The seed state is not valid.
    #[error("state: {0}")]
    State(String),
    /// A fault rule could never match or fire.
    #[error("rule: {0}")]
    Rule(#[from] RuleError),
    /// The cluster's members are not valid, or a member named is not one of them.
    #[error("cluster: {0}")]
    Cluster(String),
    /// The state directory could not be used, or its state file is not one this fake reads
    /// (another format version, say).
    #[error("state directory: {0}")]
    StateDir(String),
    /// A named snapshot could not be used.
    #[error("snapshot: {0}")]
    Snapshot(#[from] SnapshotError),
}

impl Error {
    fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let context = context.into();
        move |source| Self::Io { context, source }
    }
}

impl From<tls::TlsError> for Error {
    fn from(err: tls::TlsError) -> Self {
        match err {
            tls::TlsError::Io { context, source } => Self::Io { context, source },
            other => Self::Tls(other.to_string()),
        }
    }
}

/// Configures and starts a [`FakeIncus`].
#[derive(Debug, Default)]
pub struct FakeIncusBuilder {
    https: Option<SocketAddr>,
    unix_socket: Option<PathBuf>,
    tls_dir: Option<PathBuf>,
    state: Option<serde_json::Value>,
    state_dir: Option<PathBuf>,
    rules: Vec<Rule>,
    trusted: Vec<String>,
    retention: Option<Duration>,
    exec_connect_timeout: Option<Duration>,
    exec_start_delay: Option<Duration>,
    journal_limit: Option<usize>,
    header_read_timeout: Option<Duration>,
    idle_timeout: Option<Duration>,
    cluster: Vec<String>,
    cluster_timings: Option<ClusterTimings>,
    line: Option<IncusLine>,
}

impl FakeIncusBuilder {
    /// Simulate a cluster of these members (in order; the first is the one
    /// [`FakeIncus::unix_socket`] and [`FakeIncus::https_url`] reach). Each member gets its own
    /// Unix socket (`<dir>/<member>/unix.socket` next to the first member's socket, which is
    /// the configured one) and, with HTTPS, its own address on the same IP (the first on the
    /// configured address, the others on free ports), all serving the one cluster
    /// certificate. An empty list: a standalone daemon (the default).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fake = fake_incus::FakeIncus::builder().cluster(["m1", "m2", "m3"]).start().await?;
    /// let names: Vec<String> = fake.members().into_iter().map(|m| m.name).collect();
    /// assert_eq!(names, ["m1", "m2", "m3"]);
    /// assert_eq!(fake.member("m1").unwrap().unix_socket, fake.unix_socket());
    /// # Ok(()) }
    /// ```
    pub fn cluster<I, S>(mut self, members: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.cluster = members.into_iter().map(Into::into).collect();
        self
    }

    /// How the cluster's answers change with time when a member goes down or comes back
    /// (default: the real daemon's, [`ClusterTimings::default`]).
    pub fn cluster_timings(mut self, timings: ClusterTimings) -> Self {
        self.cluster_timings = Some(timings);
        self
    }

    /// Answer as this Incus line: its `GET /1.0` (server version, API extensions) and its
    /// behaviour wherever the lines differ. Default: the line of the seed's `incus_version` (a
    /// capture records the version it read), else [`IncusLine::DEFAULT`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use fake_incus::{FakeIncus, IncusLine, Request};
    /// let fake = FakeIncus::builder().incus_version(IncusLine::V7_0).start().await?;
    /// let reply = fake.call(Request::get("/1.0")).await;
    /// assert_eq!(reply.metadata()["environment"]["server_version"], "7.0.2");
    /// assert_eq!(reply.metadata()["api_extensions"].as_array().unwrap().len(), 562);
    /// # Ok(()) }
    /// ```
    pub fn incus_version(mut self, line: IncusLine) -> Self {
        self.line = Some(line);
        self
    }

    /// Also listen on HTTPS with mutual TLS, on `127.0.0.1:0` (a free port). Default: off.
    pub fn https(mut self, enabled: bool) -> Self {
        self.https = enabled.then(|| SocketAddr::from(([127, 0, 0, 1], 0)));
        self
    }

    /// Listen on HTTPS at this address (port 0 picks a free port).
    pub fn https_address(mut self, address: SocketAddr) -> Self {
        self.https = Some(address);
        self
    }

    /// Put the Unix socket here instead of in a temporary directory.
    pub fn unix_socket(mut self, path: impl Into<PathBuf>) -> Self {
        self.unix_socket = Some(path.into());
        self
    }

    /// Keep the server and client certificates in this directory (`server.crt`, `server.key`,
    /// `client.crt`, `client.key`); existing files are reused, missing ones are generated.
    pub fn tls_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.tls_dir = Some(dir.into());
        self
    }

    /// Seed state, in the format of [`FakeIncus::dump_state`]; missing top-level keys keep
    /// their defaults.
    pub fn state(mut self, state: serde_json::Value) -> Self {
        self.state = Some(state);
        self
    }

    /// Keep the whole state (resources, files) in this directory, across restarts: a fake
    /// started on a directory that holds a state continues from it (the seed given with
    /// [`FakeIncusBuilder::state`] is then only what a reset returns to), and no answer is
    /// sent before the change it reports is on disk. The directory's `state.json` is replaced
    /// atomically, so a fake killed at any moment leaves a state that loads. Operations do not
    /// survive a restart, as on Incus. A state file of another format version is refused.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use fake_incus::{FakeIncus, Request};
    /// let dir = tempfile::tempdir()?;
    /// let fake = FakeIncus::builder().state_dir(dir.path()).start().await?;
    /// let made = fake.call(Request::post("/1.0/profiles").json(&serde_json::json!({"name": "kept"}))).await;
    /// assert_eq!(made.status(), 201);
    /// drop(fake);
    /// let again = FakeIncus::builder().state_dir(dir.path()).start().await?;
    /// assert_eq!(again.call(Request::get("/1.0/profiles/kept")).await.status(), 200);
    /// # Ok(()) }
    /// ```
    pub fn state_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.state_dir = Some(dir.into());
        self
    }

    /// A fault rule, installed for the fake's lifetime, in call order.
    pub fn rule(mut self, rule: Rule) -> Self {
        self.rules.push(rule);
        self
    }

    /// Trust this client certificate (PEM) on HTTPS, besides the generated client certificate.
    pub fn trust_certificate(mut self, pem: impl Into<String>) -> Self {
        self.trusted.push(pem.into());
        self
    }

    /// How long finished operations stay visible (default 5 s, as Incus).
    pub fn operation_retention(mut self, retention: Duration) -> Self {
        self.retention = Some(retention);
        self
    }

    /// How long exec waits for its websockets (default: as the Incus line does, 5 s on 6.0,
    /// 10 s on 7.0).
    pub fn exec_connect_timeout(mut self, timeout: Duration) -> Self {
        self.exec_connect_timeout = Some(timeout);
        self
    }

    /// How long an exec over websockets waits, once its websockets are attached, before the command
    /// starts (default [`DEFAULT_EXEC_START_DELAY`]; the real daemon takes 25-50 ms). Clients that read
    /// the upgrade answer and the first frames apart depend on some delay.
    pub fn exec_start_delay(mut self, delay: Duration) -> Self {
        self.exec_start_delay = Some(delay);
        self
    }

    /// How many journal entries to keep (default [`DEFAULT_JOURNAL_LIMIT`]; the oldest go
    /// first and are counted as dropped; 0 keeps none). Expectations count either way.
    pub fn journal_limit(mut self, limit: usize) -> Self {
        self.journal_limit = Some(limit);
        self
    }

    /// How long a connection may take to send a request head once its first byte arrived
    /// (default 10 s); then it is closed. Bounds clients that send partial headers.
    pub fn header_read_timeout(mut self, timeout: Duration) -> Self {
        self.header_read_timeout = Some(timeout);
        self
    }

    /// How long a connection may stay open with no request in flight and nothing received
    /// (default 30 s, the daemon's idle timeout); then it is closed.
    pub fn idle_timeout(mut self, timeout: Duration) -> Self {
        self.idle_timeout = Some(timeout);
        self
    }

    /// Generates the certificates, binds the listeners and starts serving.
    ///
    /// The future is boxed here, so that the whole server it starts is compiled once, in this
    /// crate: an `async fn` is compiled in every crate that awaits it, with everything it spawns.
    pub fn start(self) -> BoxedFuture<'static, Result<FakeIncus, Error>> {
        Box::pin(self.start_serving())
    }

    async fn start_serving(self) -> Result<FakeIncus, Error> {
        let mut stored = self.seed()?;
        for rule in &self.rules {
            rule.check()?;
        }
        let (server_id, client_id) = tls::identities(self.tls_dir.as_deref())?;
        let identity = app::Identity {
            server_fingerprint: server_id.fingerprint()?,
            server_cert_pem: server_id.cert_pem.clone(),
            ..app::Identity::default()
        };
        identity.trust_pem(&client_id.cert_pem)?;
        for pem in &self.trusted {
            identity.trust_pem(pem)?;
        }
        let (temp_dir, socket) = self.socket_path()?;
        let unix = server::unix::bind(&socket)
            .map_err(Error::io(format!("binding {}", socket.display())))?;
        let https = match self.https {
            Some(addr) => Some(
                tokio::net::TcpListener::bind(addr)
                    .await
                    .map_err(Error::io(format!("binding {addr}")))?,
            ),
            None => None,
        };
        let https_addr = https
            .as_ref()
            .map(tokio::net::TcpListener::local_addr)
            .transpose()
            .map_err(Error::io("reading the HTTPS address"))?;
        let settings = self.settings(self.line_of(&stored)?, https_addr);
        let names = cluster_names(&self.cluster)?;
        let others = members::listeners::bind_others(&socket, &names, https_addr)
            .map_err(|(name, e)| Error::io(format!("binding member {name}"))(e))?;
        if !names.is_empty() {
            cluster::place_seeded(&mut stored.state, &names);
        }
        let app = App::start(stored, identity, settings);
        if let Some(dir) = &self.state_dir {
            app.persist_in(dir)
                .map_err(|e| Error::StateDir(e.to_string()))?;
        }
        for rule in self.rules {
            app.faults.install(rule)?.forget();
        }
        let tls = https_addr
            .map(|_| tls::server_config(&server_id))
            .transpose()?;
        if names.is_empty() {
            tokio::spawn(server::unix::run(Arc::clone(&app), unix));
            if let (Some(listener), Some(config)) = (https, tls) {
                tokio::spawn(server::https::run(Arc::clone(&app), listener, config));
            }
        } else {
            let first = members::listeners::Bound { unix, tcp: https };
            let timings = self.cluster_timings.unwrap_or_default();
            members::listeners::bring_up(
                &app,
                &names,
                (socket.clone(), first),
                others,
                tls,
                timings,
            )
            .map_err(Error::io("reading an HTTPS address"))?;
        }
        tracing::info!(socket = %socket.display(), https = ?https_addr, "fake-incus ready");
        Ok(FakeIncus {
            app,
            socket,
            _temp_dir: temp_dir,
            https_addr,
            server_id,
            client_id,
        })
    }

    /// The state to start from: the seed given, else the default state.
    fn seed(&self) -> Result<state::stored::Stored, Error> {
        match &self.state {
            Some(seed) => {
                state::stored::Stored::from_json(seed.clone(), state::stored::Versioned::Optional)
                    .map_err(|e| Error::State(e.to_string()))
            }
            None => Ok(state::stored::Stored {
                state: state::State::default_state(),
                ..Default::default()
            }),
        }
    }

    /// Where the Unix socket goes: the path given, else a temporary directory of its own (kept
    /// as long as the fake).
    fn socket_path(&self) -> Result<(Option<tempfile::TempDir>, PathBuf), Error> {
        if let Some(path) = &self.unix_socket {
            return Ok((None, path.clone()));
        }
        let dir = tempfile::Builder::new()
            .prefix("fake-incus-")
            .tempdir()
            .map_err(Error::io("creating the socket directory"))?;
        let path = dir.path().join("unix.socket");
        Ok((Some(dir), path))
    }

    /// The line to answer as: the one asked for, else the seed's `incus_version`, else the
    /// default line.
    fn line_of(&self, stored: &state::stored::Stored) -> Result<IncusLine, Error> {
        match (self.line, &stored.incus_version) {
            (Some(line), _) => Ok(line),
            (None, Some(version)) => IncusLine::of_server_version(version).map_err(|e| {
                Error::State(format!(
                    "the seed was read from Incus {version}: {e}; choose a line to serve it as"
                ))
            }),
            (None, None) => Ok(IncusLine::DEFAULT),
        }
    }

    /// The settings: what was asked for, else the line's defaults.
    fn settings(&self, line: IncusLine, https: Option<SocketAddr>) -> Settings {
        let defaults = Settings::default();
        Settings {
            line,
            retention: self.retention.unwrap_or(defaults.retention),
            exec_connect_timeout: self.exec_connect_timeout.unwrap_or(
                if line.has_extension(crate::line::EXEC_CONNECT_TIMEOUT_10S) {
                    Duration::from_secs(10)
                } else {
                    defaults.exec_connect_timeout
                },
            ),
            exec_start_delay: self.exec_start_delay.unwrap_or(defaults.exec_start_delay),
            https_address: https.map(|a| a.to_string()),
            journal_limit: self.journal_limit.unwrap_or(defaults.journal_limit),
            header_read_timeout: self
                .header_read_timeout
                .unwrap_or(defaults.header_read_timeout),
            idle_timeout: self.idle_timeout.unwrap_or(defaults.idle_timeout),
        }
    }
}

/// The member names, checked: unique, non-empty, usable in a path and a URL.
fn cluster_names(names: &[String]) -> Result<Vec<String>, Error> {
    let mut seen = std::collections::BTreeSet::new();
    for name in names {
        let usable = !name.is_empty()
            && name != "."
            && name != ".."
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
        if !usable {
            return Err(Error::Cluster(format!("invalid member name {name:?}")));
        }
        if !seen.insert(name.as_str()) {
            return Err(Error::Cluster(format!("member {name:?} given twice")));
        }
    }
    Ok(names.to_vec())
}

/// A running fake Incus. Dropping it stops the listeners and removes the Unix socket.
pub struct FakeIncus {
    app: Arc<App>,
    socket: PathBuf,
    _temp_dir: Option<tempfile::TempDir>,
    https_addr: Option<SocketAddr>,
    server_id: tls::Identity,
    client_id: tls::Identity,
}

impl std::fmt::Debug for FakeIncus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeIncus")
            .field("unix_socket", &self.socket)
            .field("https", &self.https_addr)
            .finish()
    }
}

impl FakeIncus {
    /// A builder with the documented defaults.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use fake_incus::Request;
    /// let fake = fake_incus::FakeIncus::builder().start().await?;
    /// assert_eq!(fake.call(Request::get("/1.0")).await.status(), 200);
    /// # Ok(()) }
    /// ```
    pub fn builder() -> FakeIncusBuilder {
        FakeIncusBuilder::default()
    }

    /// Answers `request` in process, with no socket, through the fake's whole request path as a
    /// listener takes it (the checks of the request head, the journal, the fault rules, trust
    /// as on the Unix socket, routing, and on a cluster the routing through the member that
    /// [`Request::through`] names, the first by default). The journal shows it with listener
    /// [`Listener::Direct`]. A fault that closes or resets the connection gives a
    /// [`Reply::dropped`] answer; a request that is not valid HTTP (method, path or header) a
    /// 400 with the reason as its body. Websockets and the events stream need a socket (see
    /// [`client`]).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use fake_incus::{assert_native_error, FakeIncus, Request};
    /// let fake = FakeIncus::builder().start().await?;
    /// let created = fake
    ///     .call(Request::post("/1.0/instances").json(&serde_json::json!({"name": "c1", "source": {"type": "none"}})))
    ///     .await;
    /// assert_eq!((created.status(), created.json()["type"].as_str()), (202, Some("async")));
    /// let done = fake.call(Request::get(&format!("{}/wait", created.operation().unwrap()))).await;
    /// assert_eq!(done.metadata()["status"], "Success");
    /// let stale = fake.call(Request::put("/1.0/instances/c1").header("If-Match", "\"stale\"")).await;
    /// assert_eq!(stale.native_error().map(|(code, _)| code), Some(412));
    /// assert_native_error(&fake.call(Request::get("/1.0/nope")).await, 404, "not found");
    /// assert_eq!(fake.requests("*", "/1.0/**")[0].listener, fake_incus::Listener::Direct);
    /// # Ok(()) }
    /// ```
    pub fn call(&self, request: impl Into<Request>) -> BoxedFuture<'_, Reply> {
        // Boxed, like `start`: the whole API is compiled here once, not in every caller.
        Box::pin(self.call_request(request.into()))
    }

    async fn call_request(&self, request: Request) -> Reply {
        let member = request.member().map(Arc::from);
        let http = match request.to_http(|body| body) {
            Ok(http) => http,
            Err(err) => {
                return Reply::new(400, http::HeaderMap::new(), err.to_string().into());
            }
        };
        let peer = api::Peer {
            listener: Listener::Direct,
            fingerprint: None,
            member,
        };
        server::answer_read(&self.app, http, peer).await
    }

    /// The Unix socket path (for `INCUS_SOCKET` or a hyperlocal client).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fake = fake_incus::FakeIncus::builder().start().await?;
    /// assert!(fake.unix_socket().exists());
    /// # Ok(()) }
    /// ```
    pub fn unix_socket(&self) -> &Path {
        &self.socket
    }

    /// `https://127.0.0.1:PORT` when HTTPS is on.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fake = fake_incus::FakeIncus::builder().https(true).start().await?;
    /// assert!(fake.https_url().unwrap().starts_with("https://127.0.0.1:"));
    /// let plain = fake_incus::FakeIncus::builder().start().await?;
    /// assert_eq!(plain.https_url(), None);
    /// # Ok(()) }
    /// ```
    pub fn https_url(&self) -> Option<String> {
        self.https_addr.map(|addr| format!("https://{addr}"))
    }

    /// The HTTPS listener's address when HTTPS is on.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fake = fake_incus::FakeIncus::builder().https(true).start().await?;
    /// assert_ne!(fake.https_address().unwrap().port(), 0);
    /// # Ok(()) }
    /// ```
    pub fn https_address(&self) -> Option<SocketAddr> {
        self.https_addr
    }

    /// The cluster's members, in the order given to [`FakeIncusBuilder::cluster`]; empty when
    /// the fake is a standalone daemon.
    pub fn members(&self) -> Vec<Member> {
        self.app.cluster().map(|c| c.public()).unwrap_or_default()
    }

    /// The member called `name`, if the fake is a cluster with that member.
    pub fn member(&self, name: &str) -> Option<Member> {
        self.app
            .cluster()
            .and_then(|c| c.member(name))
            .map(cluster::MemberInfo::public)
    }

    /// Kills the member's daemon: its sockets refuse connections, its open connections and
    /// the exec streams of its instances end (EOF, no close frame), waits on its operations
    /// through other members end with "unexpected EOF", and the cluster answers for what
    /// lives on it as a real cluster does (see [`ClusterTimings`]). Killing a member that is
    /// down again changes nothing.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fake = fake_incus::FakeIncus::builder().cluster(["m1", "m2"]).start().await?;
    /// fake.member_down("m2")?;
    /// let refused = tokio::net::UnixStream::connect(&fake.member("m2").unwrap().unix_socket).await;
    /// assert!(refused.is_err());
    /// assert!(fake.member_down("nope").is_err());
    /// # Ok(()) }
    /// ```
    pub fn member_down(&self, name: &str) -> Result<(), Error> {
        members::member_down(&self.app, name).map_err(Error::Cluster)
    }

    /// Starts the member's daemon again: its sockets accept connections at once; through the
    /// other members it serves again (and shows `Online`) after
    /// [`ClusterTimings::back_online`] (drawn per return). Its operations from before are gone (404); its
    /// instances are kept, as a real member's containers outlive its daemon. Must be called
    /// inside the fake's Tokio runtime.
    pub fn member_up(&self, name: &str) -> Result<(), Error> {
        members::member_up(&self.app, name).map_err(Error::Cluster)
    }

    /// The server certificate (PEM), for pinning.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fake = fake_incus::FakeIncus::builder().start().await?;
    /// assert!(fake.server_cert_pem().starts_with("-----BEGIN CERTIFICATE-----"));
    /// # Ok(()) }
    /// ```
    pub fn server_cert_pem(&self) -> String {
        self.server_id.cert_pem.clone()
    }

    /// A client certificate (PEM) the fake trusts.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fake = fake_incus::FakeIncus::builder().start().await?;
    /// assert!(fake.client_cert_pem().contains("CERTIFICATE"));
    /// assert_ne!(fake.client_cert_pem(), fake.server_cert_pem());
    /// # Ok(()) }
    /// ```
    pub fn client_cert_pem(&self) -> String {
        self.client_id.cert_pem.clone()
    }

    /// The private key (PEM) of [`FakeIncus::client_cert_pem`].
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fake = fake_incus::FakeIncus::builder().start().await?;
    /// assert!(fake.client_key_pem().contains("PRIVATE KEY"));
    /// # Ok(()) }
    /// ```
    pub fn client_key_pem(&self) -> String {
        self.client_id.key_pem.clone()
    }

    /// Trusts one more client certificate (PEM). Outside its validity period it stays
    /// untrusted on HTTPS, as on the daemon.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fake = fake_incus::FakeIncus::builder().start().await?;
    /// let other = fake_incus::FakeIncus::builder().start().await?;
    /// fake.trust_certificate(&other.client_cert_pem())?;
    /// assert!(fake.trust_certificate("not a certificate").is_err());
    /// # Ok(()) }
    /// ```
    pub fn trust_certificate(&self, pem: &str) -> Result<(), Error> {
        self.app.identity.trust_pem(pem)?;
        Ok(())
    }

    /// The kept requests, in arrival order (websocket connections included): the last
    /// [`DEFAULT_JOURNAL_LIMIT`] unless [`FakeIncusBuilder::journal_limit`] says otherwise.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use fake_incus::Request;
    /// let fake = fake_incus::FakeIncus::builder().start().await?;
    /// fake.call(Request::get("/1.0")).await;
    /// let journal = fake.journal();
    /// assert_eq!((journal[0].method.as_str(), journal[0].path.as_str()), ("GET", "/1.0"));
    /// # Ok(()) }
    /// ```
    pub fn journal(&self) -> Vec<JournalEntry> {
        self.app.journal.entries()
    }

    /// The kept requests for `method` (`"*"`: any) whose path matches `pattern` (`*` within
    /// one segment, `**` across segments), in arrival order.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use fake_incus::Request;
    /// let fake = fake_incus::FakeIncus::builder().start().await?;
    /// fake.call(Request::get("/1.0/profiles/default")).await;
    /// fake.call(Request::get("/1.0")).await;
    /// assert_eq!(fake.requests("GET", "/1.0/profiles/*").len(), 1);
    /// assert_eq!(fake.requests("*", "/**").len(), 2);
    /// # Ok(()) }
    /// ```
    pub fn requests(&self, method: &str, pattern: &str) -> Vec<JournalEntry> {
        self.app
            .journal
            .entries()
            .into_iter()
            .filter(|e| e.is(method, pattern))
            .collect()
    }

    /// Expects exactly `times` requests for `method` (`"*"`: any) and `pattern` from now on;
    /// the returned guard panics when dropped with another count. It counts as requests
    /// arrive, so entries the bounded journal let go still count.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use fake_incus::Request;
    /// let fake = fake_incus::FakeIncus::builder().start().await?;
    /// let _once = fake.expect("DELETE", "/1.0/instances/*", 0);
    /// let twice = fake.expect("GET", "/1.0", 2);
    /// fake.call(Request::get("/1.0")).await;
    /// fake.call(Request::get("/1.0")).await;
    /// assert_eq!(twice.received(), 2);
    /// // both are checked when they drop here
    /// # Ok(()) }
    /// ```
    pub fn expect(&self, method: &str, pattern: &str, times: u64) -> Expectation {
        self.app.journal.expect(method, pattern, times)
    }

    /// The kept entries with a sequence number above `since` (0: all), with the number of
    /// entries dropped and the last sequence number (what control `GET /journal?since=` answers).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use fake_incus::Request;
    /// let fake = fake_incus::FakeIncus::builder().journal_limit(1).start().await?;
    /// fake.call(Request::get("/1.0")).await;
    /// fake.call(Request::get("/")).await;
    /// let page = fake.journal_page(0);
    /// assert_eq!((page.entries.len(), page.dropped, page.last_seq), (1, 1, 2));
    /// assert!(fake.journal_page(page.last_seq).entries.is_empty());
    /// # Ok(()) }
    /// ```
    pub fn journal_page(&self, since: u64) -> JournalPage {
        self.app.journal.page(since)
    }

    /// Forgets the journal's entries and dropped count (sequence numbers keep counting).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use fake_incus::Request;
    /// let fake = fake_incus::FakeIncus::builder().start().await?;
    /// fake.call(Request::get("/1.0")).await;
    /// fake.clear_journal();
    /// assert!(fake.journal().is_empty());
    /// fake.call(Request::get("/1.0")).await;
    /// assert_eq!(fake.journal()[0].seq, 2, "sequence numbers keep counting");
    /// # Ok(()) }
    /// ```
    pub fn clear_journal(&self) {
        self.app.journal.clear();
    }

    /// Installs a fault rule after the existing ones; it is removed when the guard drops.
    /// A rule that could never match or fire (see [`Rule::check`]) is refused.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use fake_incus::{Fault, Request, Rule};
    /// let fake = fake_incus::FakeIncus::builder().start().await?;
    /// let guard = fake.add_rule(Rule::new("GET", "/1.0").fault(Fault::Error { status: 503, message: "busy".into() }))?;
    /// assert_eq!(fake.call(Request::get("/1.0")).await.status(), 503);
    /// drop(guard);
    /// assert_eq!(fake.call(Request::get("/1.0")).await.status(), 200);
    /// assert!(fake.add_rule(Rule::new("GET", "/1.0").nth(0).fault(Fault::Stall)).is_err());
    /// # Ok(()) }
    /// ```
    pub fn add_rule(&self, rule: Rule) -> Result<RuleGuard, RuleError> {
        self.app.faults.install(rule)
    }

    /// The installed rules, in install order.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use fake_incus::{Fault, Rule};
    /// let fake = fake_incus::FakeIncus::builder().start().await?;
    /// fake.add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::CloseAfterApply))?.forget();
    /// assert_eq!(fake.rules()[0].path(), "/1.0/instances");
    /// # Ok(()) }
    /// ```
    pub fn rules(&self) -> Vec<Rule> {
        self.app.faults.rules()
    }

    /// Removes every fault rule.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use fake_incus::{Fault, Rule};
    /// let fake = fake_incus::FakeIncus::builder().start().await?;
    /// fake.add_rule(Rule::new("GET", "/1.0").fault(Fault::Stall))?.forget();
    /// fake.clear_rules();
    /// assert!(fake.rules().is_empty());
    /// # Ok(()) }
    /// ```
    pub fn clear_rules(&self) {
        self.app.faults.clear();
    }

    /// The current state in the state format (the seed format): the resources, the instances'
    /// files (`files`), the operations (`operations`, for the record: a seed's are not loaded)
    /// and the format's version (`format_version`).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fake = fake_incus::FakeIncus::builder()
    ///     .state(serde_json::json!({"instances": [{"name": "c1", "status": "Running"}]}))
    ///     .start()
    ///     .await?;
    /// assert_eq!(fake.dump_state()["instances"][0]["name"], "c1");
    /// # Ok(()) }
    /// ```
    pub fn dump_state(&self) -> serde_json::Value {
        self.app.dump()
    }

    /// Back to the start state: state, operations, exec sessions and the journal's entries
    /// are cleared. Fault rules are kept, with their match counts (remove them with
    /// [`FakeIncus::clear_rules`] or by dropping their guards); expectations keep counting.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use fake_incus::{Fault, Request, Rule};
    /// let fake = fake_incus::FakeIncus::builder().start().await?;
    /// fake.add_rule(Rule::new("GET", "/1.0/networks").fault(Fault::Stall))?.forget();
    /// fake.call(Request::get("/1.0")).await;
    /// fake.reset();
    /// assert!(fake.journal().is_empty());
    /// assert_eq!(fake.rules().len(), 1, "rules are kept");
    /// # Ok(()) }
    /// ```
    pub fn reset(&self) {
        self.app.reset();
    }

    /// Saves the whole state (resources and files) as the named snapshot `name`, replacing one
    /// of that name. It is cheap: the state's instances and file trees are shared
    /// copy-on-write, so a snapshot costs a few pointer copies per instance, whatever the
    /// instances hold. Names: 1-64 letters, digits, `-`, `_`, `.`. Snapshots live in memory
    /// (not in `--state-dir`).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use fake_incus::{FakeIncus, Request};
    /// let fake = FakeIncus::builder().start().await?;
    /// fake.call(Request::post("/1.0/profiles").json(&serde_json::json!({"name": "web"}))).await;
    /// fake.save_snapshot("set-up")?;           // the expensive state, once
    /// fake.call(Request::delete("/1.0/profiles/web")).await;
    /// fake.restore_snapshot("set-up")?;        // back, between tests
    /// assert_eq!(fake.call(Request::get("/1.0/profiles/web")).await.status(), 200);
    /// assert_eq!(fake.snapshots(), ["set-up"]);
    /// fake.delete_snapshot("set-up")?;
    /// assert!(fake.restore_snapshot("set-up").is_err());
    /// # Ok(()) }
    /// ```
    pub fn save_snapshot(&self, name: &str) -> Result<(), Error> {
        Ok(self.app.save_snapshot(name)?)
    }

    /// Returns to the named snapshot as [`FakeIncus::reset`] returns to the start state:
    /// the snapshot's resources and files come back; operations, exec sessions and the
    /// journal's entries are cleared; fault rules are kept.
    pub fn restore_snapshot(&self, name: &str) -> Result<(), Error> {
        Ok(self.app.restore_snapshot(name)?)
    }

    /// Forgets the named snapshot.
    pub fn delete_snapshot(&self, name: &str) -> Result<(), Error> {
        Ok(self.app.delete_snapshot(name)?)
    }

    /// The names of the named snapshots, in name order.
    pub fn snapshots(&self) -> Vec<String> {
        self.app
            .snapshots()
            .into_iter()
            .map(|(name, _)| name)
            .collect()
    }

    /// A control server for this fake on a Unix socket (what `fake-incus serve --control` runs).
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let fake = fake_incus::FakeIncus::builder().start().await?;
    /// let dir = tempfile::tempdir()?;
    /// let control = dir.path().join("control.socket");
    /// fake.serve_control(&control)?;
    /// assert!(control.exists());
    /// # Ok(()) }
    /// ```
    pub fn serve_control(&self, path: &Path) -> Result<(), Error> {
        control::serve(Arc::clone(&self.app), path)
            .map_err(Error::io(format!("binding {}", path.display())))
    }
}

impl Drop for FakeIncus {
    fn drop(&mut self) {
        self.app.shutdown.cancel();
        self.app.persist_final();
        let _ = std::fs::remove_file(&self.socket);
        for member in self.members().iter().skip(1) {
            let _ = std::fs::remove_file(&member.unix_socket);
            if let Some(dir) = member.unix_socket.parent() {
                let _ = std::fs::remove_dir(dir);
            }
        }
    }
}
