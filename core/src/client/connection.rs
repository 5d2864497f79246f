//! The connection configuration a host hands to the core: where Incus listens, which
//! credentials to present, and the bounds every request and exec stream obey.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use rustls_pki_types::ServerName;

use super::error::ConnectionError;
use super::tls;

/// Default bound on every native request: 30 seconds.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
/// Default bound on an exec session, kill grace included: 65 seconds (so exec runs at most 60 s).
pub const DEFAULT_STREAM_TIMEOUT: Duration = Duration::from_secs(65);
/// Default bound on streamed bytes: 128 MiB (so the exec stream total is 64 MiB).
pub const DEFAULT_MAX_STREAM_BYTES: u64 = 128 * 1024 * 1024;

/// The smallest accepted `stream_timeout`: the 5 s kill grace plus one second of exec.
const MIN_STREAM_TIMEOUT: Duration = Duration::from_secs(6);
/// The smallest accepted `max_stream_bytes`.
const MIN_MAX_STREAM_BYTES: u64 = 64 * 1024;
/// The port Incus listens on for HTTPS when the URL names none.
const DEFAULT_HTTPS_PORT: u16 = 8443;

/// Where Incus listens and, for HTTPS, the credentials of both sides.
#[derive(Clone)]
#[non_exhaustive]
pub enum Endpoint {
    /// The local Unix socket (every peer on it is trusted by Incus).
    Unix {
        /// Path of the socket, for example `/var/lib/incus/unix.socket`.
        path: PathBuf,
    },
    /// The HTTPS listener, with mutual TLS.
    Https {
        /// `https://host[:port]` (port 8443 when omitted).
        url: String,
        /// The certificate this client presents (PEM).
        client_cert_pem: String,
        /// The private key of that certificate (PEM: PKCS#8, PKCS#1 or SEC1).
        client_key_pem: String,
        /// The server certificate, pinned: the handshake succeeds only if the server presents
        /// exactly this certificate (PEM; the first certificate in it is used).
        server_cert_pem: String,
    },
}

impl Endpoint {
    /// The Unix socket at `path`.
    pub fn unix(path: impl Into<PathBuf>) -> Self {
        Self::Unix { path: path.into() }
    }

    /// The HTTPS listener at `url`, presenting `client_cert_pem`/`client_key_pem` and pinning
    /// `server_cert_pem`.
    pub fn https(
        url: impl Into<String>,
        client_cert_pem: impl Into<String>,
        client_key_pem: impl Into<String>,
        server_cert_pem: impl Into<String>,
    ) -> Self {
        Self::Https {
            url: url.into(),
            client_cert_pem: client_cert_pem.into(),
            client_key_pem: client_key_pem.into(),
            server_cert_pem: server_cert_pem.into(),
        }
    }
}

impl fmt::Debug for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Unix { path } => f.debug_struct("Unix").field("path", path).finish(),
            Self::Https { url, .. } => f
                .debug_struct("Https")
                .field("url", url)
                .field("client_key_pem", &"<redacted>")
                .finish_non_exhaustive(),
        }
    }
}

/// How to reach one Incus server, and the bounds of every exchange with it.
///
/// Build it with [`Connection::builder`] (or [`Connection::unix`] for the defaults over a
/// Unix socket). Credentials are parsed when the connection is built, so a bad PEM is reported
/// before any request.
///
/// | setting | default | meaning |
/// |---|---|---|
/// | `timeout` | 30 s | bound on every native request, connecting included; the server-side operation wait is at most `floor(timeout) - 1` seconds, so configure at least 61 s to allow the full 60 s wait |
/// | `stream_timeout` | 65 s | bound on an exec session: the command runs at most `stream_timeout - 5 s`, then gets `SIGKILL` and 5 s to exit (at least 6 s) |
/// | `max_stream_bytes` | 128 MiB | the exec stream total is `min(64 MiB, max_stream_bytes / 2)`; also the bound on one response body (at least 64 KiB) |
///
/// ```
/// use std::time::Duration;
/// use incus_operations::{Connection, Endpoint};
///
/// let connection = Connection::builder(Endpoint::unix("/var/lib/incus/unix.socket"))
///     .timeout(Duration::from_secs(61))
///     .build()
///     .expect("valid bounds");
/// assert_eq!(connection.timeout(), Duration::from_secs(61));
/// ```
#[derive(Clone)]
pub struct Connection {
    endpoint: Endpoint,
    target: Target,
    timeout: Duration,
    stream_timeout: Duration,
    max_stream_bytes: u64,
}

/// The parsed form of the endpoint, ready to dial.
#[derive(Clone)]
pub(crate) enum Target {
    Unix(PathBuf),
    Https(HttpsTarget),
}

#[derive(Clone)]
pub(crate) struct HttpsTarget {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) server_name: ServerName<'static>,
    pub(crate) tls: Arc<rustls::ClientConfig>,
}

impl Connection {
    /// A builder for `endpoint` with the documented defaults.
    pub fn builder(endpoint: Endpoint) -> ConnectionBuilder {
        ConnectionBuilder {
            endpoint,
            timeout: DEFAULT_TIMEOUT,
            stream_timeout: DEFAULT_STREAM_TIMEOUT,
            max_stream_bytes: DEFAULT_MAX_STREAM_BYTES,
        }
    }

    /// The Unix socket at `path` with the documented defaults.
    ///
    /// ```
    /// let connection = incus_operations::Connection::unix("/var/lib/incus/unix.socket");
    /// assert_eq!(connection.timeout().as_secs(), 30);
    /// ```
    pub fn unix(path: impl AsRef<Path>) -> Self {
        Self {
            endpoint: Endpoint::unix(path.as_ref()),
            target: Target::Unix(path.as_ref().to_path_buf()),
            timeout: DEFAULT_TIMEOUT,
            stream_timeout: DEFAULT_STREAM_TIMEOUT,
            max_stream_bytes: DEFAULT_MAX_STREAM_BYTES,
        }
    }

    /// Where Incus listens.
    pub fn endpoint(&self) -> &Endpoint {
        &self.endpoint
    }

    /// The bound on every native request.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// The bound on an exec session, kill grace included.
    pub fn stream_timeout(&self) -> Duration {
        self.stream_timeout
    }

    /// The bound on streamed bytes (see the table above).
    pub fn max_stream_bytes(&self) -> u64 {
        self.max_stream_bytes
    }

    pub(crate) fn target(&self) -> &Target {
        &self.target
    }

    /// The `Host` header and websocket authority for this endpoint.
    pub(crate) fn authority(&self) -> String {
        match &self.target {
            Target::Unix(_) => "unix.socket".to_owned(),
            Target::Https(https) if https.host.contains(':') => {
                format!("[{}]:{}", https.host, https.port)
            }
            Target::Https(https) => format!("{}:{}", https.host, https.port),
        }
    }
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("endpoint", &self.endpoint)
            .field("timeout", &self.timeout)
            .field("stream_timeout", &self.stream_timeout)
            .field("max_stream_bytes", &self.max_stream_bytes)
            .finish()
    }
}

/// Builds a [`Connection`]; see its documentation for the defaults.
#[derive(Debug, Clone)]
pub struct ConnectionBuilder {
    endpoint: Endpoint,
    timeout: Duration,
    stream_timeout: Duration,
    max_stream_bytes: u64,
}

impl ConnectionBuilder {
    /// The bound on every native request (more than zero).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    /// The bound on an exec session, kill grace included (at least 6 s).
    pub fn stream_timeout(mut self, stream_timeout: Duration) -> Self {
        self.stream_timeout = stream_timeout;
        self
    }

    /// The bound on streamed bytes (at least 64 KiB).
    pub fn max_stream_bytes(mut self, max_stream_bytes: u64) -> Self {
        self.max_stream_bytes = max_stream_bytes;
        self
    }

    /// Checks the bounds, parses the credentials and builds the connection.
    pub fn build(self) -> Result<Connection, ConnectionError> {
        self.check_bounds()?;
        let target = match &self.endpoint {
            Endpoint::Unix { path } => Target::Unix(path.clone()),
            Endpoint::Https {
                url,
                client_cert_pem,
                client_key_pem,
                server_cert_pem,
            } => {
                let (host, port) = parse_https_url(url)?;
                let server_name = server_name(url, &host)?;
                let tls = tls::client_config(client_cert_pem, client_key_pem, server_cert_pem)?;
                Target::Https(HttpsTarget {
                    host,
                    port,
                    server_name,
                    tls,
                })
            }
        };
        Ok(Connection {
            endpoint: self.endpoint,
            target,
            timeout: self.timeout,
            stream_timeout: self.stream_timeout,
            max_stream_bytes: self.max_stream_bytes,
        })
    }

    fn check_bounds(&self) -> Result<(), ConnectionError> {
        if self.timeout.is_zero() {
            return Err(ConnectionError::InvalidBound {
                what: "timeout",
                reason: "must be more than zero".to_owned(),
            });
        }
        if self.stream_timeout < MIN_STREAM_TIMEOUT {
            return Err(ConnectionError::InvalidBound {
                what: "stream_timeout",
                reason: "must be at least 6 seconds (5 s kill grace + 1 s of exec)".to_owned(),
            });
        }
        if self.max_stream_bytes < MIN_MAX_STREAM_BYTES {
            return Err(ConnectionError::InvalidBound {
                what: "max_stream_bytes",
                reason: format!("must be at least {MIN_MAX_STREAM_BYTES}"),
            });
        }
        Ok(())
    }
}

/// Splits `https://host[:port][/]` into host and port.
fn parse_https_url(url: &str) -> Result<(String, u16), ConnectionError> {
    let invalid = |reason: &str| ConnectionError::InvalidUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    let uri: http::Uri = url.parse().map_err(|_| invalid("not a URL"))?;
    if uri.scheme_str() != Some("https") {
        return Err(invalid("the scheme must be https"));
    }
    let host = uri.host().ok_or_else(|| invalid("no host"))?;
    if uri
        .authority()
        .is_some_and(|authority| authority.as_str().contains('@'))
    {
        // Incus authenticates clients by certificate only: credentials in the URL would be
        // dropped without a word, so they are refused instead.
        return Err(invalid(
            "user information (user:password@) is not accepted: Incus clients authenticate with their certificate",
        ));
    }
    if !matches!(uri.path(), "" | "/") || uri.query().is_some() {
        return Err(invalid("only https://host[:port] is accepted"));
    }
    let host = host.trim_start_matches('[').trim_end_matches(']');
    Ok((
        host.to_owned(),
        uri.port_u16().unwrap_or(DEFAULT_HTTPS_PORT),
    ))
}

fn server_name(url: &str, host: &str) -> Result<ServerName<'static>, ConnectionError> {
    ServerName::try_from(host.to_owned()).map_err(|e| ConnectionError::InvalidUrl {
        url: url.to_owned(),
        reason: format!("host is neither a DNS name nor an IP address: {e}"),
    })
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the connection configuration a host hands
    //! to the core); a promise of the whole `run()` or of the client against a fake Incus, seen
    //! through the public API, goes in `tests/integration`.

    use super::*;

    #[test]
    fn an_https_url_with_user_information_is_refused_not_stripped() {
        for url in [
            "https://admin:secret@incus.example:8443",
            "https://admin@incus.example",
            "https://:secret@[::1]:9443/",
        ] {
            let error = parse_https_url(url).unwrap_err();
            assert!(
                matches!(&error, ConnectionError::InvalidUrl { reason, .. } if reason.contains("user information")),
                "{url}: {error}"
            );
        }
    }

    #[test]
    fn https_url_defaults_to_port_8443() {
        assert_eq!(
            parse_https_url("https://incus.example").unwrap(),
            ("incus.example".to_owned(), 8443)
        );
        assert_eq!(
            parse_https_url("https://[::1]:9443/").unwrap(),
            ("::1".to_owned(), 9443)
        );
    }

    #[test]
    fn https_url_rejects_other_schemes_and_paths() {
        assert!(parse_https_url("http://incus.example").is_err());
        assert!(parse_https_url("https://incus.example/1.0").is_err());
        assert!(parse_https_url("not a url").is_err());
    }

    #[test]
    fn bounds_are_checked_when_building() {
        let zero = Connection::builder(Endpoint::unix("/nowhere"))
            .timeout(Duration::ZERO)
            .build();
        assert!(matches!(
            zero,
            Err(ConnectionError::InvalidBound {
                what: "timeout",
                ..
            })
        ));
        let short = Connection::builder(Endpoint::unix("/nowhere"))
            .stream_timeout(Duration::from_secs(5))
            .build();
        assert!(matches!(
            short,
            Err(ConnectionError::InvalidBound {
                what: "stream_timeout",
                ..
            })
        ));
        let tiny = Connection::builder(Endpoint::unix("/nowhere"))
            .max_stream_bytes(10)
            .build();
        assert!(tiny.is_err());
    }

    #[test]
    fn debug_output_never_shows_the_key() {
        let endpoint = Endpoint::https("https://h", "cert", "SECRET-KEY", "server");
        assert!(!format!("{endpoint:?}").contains("SECRET-KEY"));
    }
}
