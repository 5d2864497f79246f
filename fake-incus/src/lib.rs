//! A scriptable Incus simulator: a fake Incus daemon over a Unix socket and mutual HTTPS that
//! answers like Incus 6.0.4, runs exec over websockets with a built-in interpreter, applies
//! scripted faults and journals every request.
//!
//! ```no_run
//! # async fn demo() -> Result<(), fake_incus::Error> {
//! use fake_incus::{Fault, FakeIncus, Rule};
//!
//! let fake = FakeIncus::builder().https(true).start().await?;
//! println!("unix socket: {}", fake.unix_socket().display());
//! println!("https: {:?}", fake.https_url());
//!
//! // The second instance creation closes the connection after it was applied.
//! let _guard = fake.add_rule(Rule::new("POST", "/1.0/instances").nth(2).fault(Fault::CloseAfterApply));
//!
//! // ... drive a client against the fake, then check what it sent:
//! let creates = fake.journal().iter().filter(|e| e.method == "POST").count();
//! # let _ = creates;
//! # Ok(()) }
//! ```
//!
//! Defaults: the Unix socket lives in a temporary directory of its own; HTTPS is off unless
//! [`FakeIncusBuilder::https`] is set (then `127.0.0.1:0`); the state is the default state
//! (project, profile and pool `default`, network `lo`, image alias `busybox`). Dropping the
//! handle stops every listener and removes the socket.

mod api;
mod app;
mod control;
mod envelope;
mod exec;
mod faults;
mod journal;
mod server;
mod state;

pub use faults::{Fault, Rule, RuleGuard, Which};
pub use journal::{Answer, JournalEntry, Listener};

use app::{App, Settings};
use server::tls;
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
    /// A fault rule is not valid.
    #[error("rule: {0}")]
    Rule(String),
}

impl Error {
    fn io(context: impl Into<String>) -> impl FnOnce(std::io::Error) -> Self {
        let context = context.into();
        move |source| Self::Io { context, source }
    }
}

impl From<tls::TlsError> for Error {
    fn from(err: tls::TlsError) -> Self {
        Self::Tls(err.to_string())
    }
}

/// Configures and starts a [`FakeIncus`].
#[derive(Debug, Default)]
pub struct FakeIncusBuilder {
    https: Option<SocketAddr>,
    unix_socket: Option<PathBuf>,
    tls_dir: Option<PathBuf>,
    state: Option<serde_json::Value>,
    rules: Vec<Rule>,
    trusted: Vec<String>,
    retention: Option<Duration>,
    exec_connect_timeout: Option<Duration>,
    header_read_timeout: Option<Duration>,
    idle_timeout: Option<Duration>,
}

impl FakeIncusBuilder {
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

    /// How long exec waits for its websockets (default 5 s, as Incus).
    pub fn exec_connect_timeout(mut self, timeout: Duration) -> Self {
        self.exec_connect_timeout = Some(timeout);
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
    pub async fn start(self) -> Result<FakeIncus, Error> {
        let state = match self.state {
            Some(seed) => state::State::seed(seed).map_err(|e| Error::State(e.to_string()))?,
            None => state::State::default_state(),
        };
        for rule in &self.rules {
            rule.validate().map_err(Error::Rule)?;
        }
        let (server_id, client_id) = identities(self.tls_dir.as_deref())?;
        let identity = app::Identity {
            server_fingerprint: server_id.fingerprint()?,
            server_cert_pem: server_id.cert_pem.clone(),
            ..app::Identity::default()
        };
        identity.trust_pem(&client_id.cert_pem)?;
        for pem in &self.trusted {
            identity.trust_pem(pem)?;
        }
        let (temp_dir, socket) = match self.unix_socket {
            Some(path) => (None, path),
            None => {
                let dir = tempfile::Builder::new()
                    .prefix("fake-incus-")
                    .tempdir()
                    .map_err(Error::io("creating the socket directory"))?;
                let path = dir.path().join("unix.socket");
                (Some(dir), path)
            }
        };
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
        let https_addr = match &https {
            Some(listener) => Some(
                listener
                    .local_addr()
                    .map_err(Error::io("reading the HTTPS address"))?,
            ),
            None => None,
        };
        let defaults = Settings::default();
        let settings = Settings {
            retention: self.retention.unwrap_or(defaults.retention),
            exec_connect_timeout: self
                .exec_connect_timeout
                .unwrap_or(defaults.exec_connect_timeout),
            https_address: https_addr.map(|a| a.to_string()),
            header_read_timeout: self
                .header_read_timeout
                .unwrap_or(defaults.header_read_timeout),
            idle_timeout: self.idle_timeout.unwrap_or(defaults.idle_timeout),
        };
        let app = App::new(state, identity, settings);
        for rule in self.rules {
            app.faults.install(rule).forget();
        }
        tokio::spawn(server::unix::run(Arc::clone(&app), unix));
        if let Some(listener) = https {
            let config = tls::server_config(&server_id)?;
            tokio::spawn(server::https::run(Arc::clone(&app), listener, config));
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
}

/// Loads or generates the server and client identities.
fn identities(dir: Option<&Path>) -> Result<(tls::Identity, tls::Identity), Error> {
    let Some(dir) = dir else {
        return Ok((tls::Identity::server()?, tls::Identity::client()?));
    };
    std::fs::create_dir_all(dir).map_err(Error::io(format!("creating {}", dir.display())))?;
    let server = load_or_make(dir, "server", tls::Identity::server)?;
    let client = load_or_make(dir, "client", tls::Identity::client)?;
    Ok((server, client))
}

fn load_or_make(
    dir: &Path,
    name: &str,
    make: fn() -> Result<tls::Identity, tls::TlsError>,
) -> Result<tls::Identity, Error> {
    let cert = dir.join(format!("{name}.crt"));
    let key = dir.join(format!("{name}.key"));
    if cert.exists() && key.exists() {
        let read = |p: &Path| {
            std::fs::read_to_string(p).map_err(Error::io(format!("reading {}", p.display())))
        };
        return Ok(tls::Identity {
            cert_pem: read(&cert)?,
            key_pem: read(&key)?,
        });
    }
    let identity = make()?;
    std::fs::write(&cert, &identity.cert_pem)
        .map_err(Error::io(format!("writing {}", cert.display())))?;
    write_private(&key, &identity.key_pem)?;
    Ok(identity)
}

fn write_private(path: &Path, text: &str) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(Error::io(format!("writing {}", path.display())))?;
    file.write_all(text.as_bytes())
        .map_err(Error::io(format!("writing {}", path.display())))
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
    pub fn builder() -> FakeIncusBuilder {
        FakeIncusBuilder::default()
    }

    /// The Unix socket path (for `INCUS_SOCKET` or a hyperlocal client).
    pub fn unix_socket(&self) -> &Path {
        &self.socket
    }

    /// `https://127.0.0.1:PORT` when HTTPS is on.
    pub fn https_url(&self) -> Option<String> {
        self.https_addr.map(|addr| format!("https://{addr}"))
    }

    /// The HTTPS listener's address when HTTPS is on.
    pub fn https_address(&self) -> Option<SocketAddr> {
        self.https_addr
    }

    /// The server certificate (PEM), for pinning.
    pub fn server_cert_pem(&self) -> String {
        self.server_id.cert_pem.clone()
    }

    /// A client certificate (PEM) the fake trusts.
    pub fn client_cert_pem(&self) -> String {
        self.client_id.cert_pem.clone()
    }

    /// The private key (PEM) of [`FakeIncus::client_cert_pem`].
    pub fn client_key_pem(&self) -> String {
        self.client_id.key_pem.clone()
    }

    /// Trusts one more client certificate (PEM). Outside its validity period it stays
    /// untrusted on HTTPS, as on the daemon.
    pub fn trust_certificate(&self, pem: &str) -> Result<(), Error> {
        self.app.identity.trust_pem(pem)?;
        Ok(())
    }

    /// Every request so far, in arrival order (websocket connections included).
    pub fn journal(&self) -> Vec<JournalEntry> {
        self.app.journal.entries()
    }

    /// Forgets the journal (sequence numbers keep counting).
    pub fn clear_journal(&self) {
        self.app.journal.clear();
    }

    /// Installs a fault rule after the existing ones; it is removed when the guard drops.
    /// A rule that fails [`Rule`] validation (e.g. `nth(0)`) never selects a request.
    pub fn add_rule(&self, rule: Rule) -> RuleGuard {
        self.app.faults.install(rule)
    }

    /// Removes every fault rule.
    pub fn clear_rules(&self) {
        self.app.faults.clear();
    }

    /// The current state in the seed format.
    pub fn dump_state(&self) -> serde_json::Value {
        self.app.state().dump()
    }

    /// Back to the start state; operations and journal are cleared (rules are kept).
    pub fn reset(&self) {
        self.app.reset();
    }

    /// A control server for this fake on a Unix socket (what `fake-incus serve --control` runs).
    pub fn serve_control(&self, path: &Path) -> Result<(), Error> {
        control::serve(Arc::clone(&self.app), path)
    }
}

impl Drop for FakeIncus {
    fn drop(&mut self) {
        self.app.shutdown.cancel();
        let _ = std::fs::remove_file(&self.socket);
    }
}
