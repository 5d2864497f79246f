//! Where the Incus daemon is and how to authenticate to it, resolved from the command line.
use std::path::{Path, PathBuf};

/// The default Unix socket of a system Incus.
pub const DEFAULT_SOCKET: &str = "/var/lib/incus/unix.socket";

/// A client identity for HTTPS: PEM texts, and the server certificate that is pinned.
#[derive(Clone, Debug)]
pub(crate) struct TlsIdentity {
    pub(crate) client_cert_pem: String,
    pub(crate) client_key_pem: String,
    pub(crate) server_cert_pem: String,
}

/// The daemon to run against.
#[derive(Clone, Debug)]
pub(crate) enum Endpoint {
    /// A Unix socket (every peer is trusted).
    Unix(PathBuf),
    /// HTTPS with mutual TLS and a pinned server certificate.
    Https {
        /// The URL as given.
        url: String,
        /// `host:port` to connect to.
        authority: String,
        /// The host part, for SNI.
        host: String,
        identity: TlsIdentity,
    },
}

/// Why the endpoint flags do not describe a usable endpoint.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// `--url` was given without all three certificate files.
    #[error("--url needs --client-cert, --client-key and --server-cert")]
    MissingTlsFiles,
    /// Certificate flags without `--url`.
    #[error("--client-cert, --client-key and --server-cert only apply with --url")]
    TlsFilesWithoutUrl,
    /// The URL is not `https://host[:port]`.
    #[error("--url must look like https://HOST[:PORT], not {0:?}")]
    BadUrl(String),
    /// A file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
}

impl Endpoint {
    /// A short human description (no secrets).
    pub(crate) fn describe(&self) -> String {
        match self {
            Endpoint::Unix(path) => format!("unix:{}", path.display()),
            Endpoint::Https { url, .. } => url.clone(),
        }
    }

    /// Builds an HTTPS endpoint from a URL and three PEM files.
    pub(crate) fn https(
        url: &str,
        client_cert: &Path,
        client_key: &Path,
        server_cert: &Path,
    ) -> Result<Endpoint, EndpointError> {
        let rest = url
            .strip_prefix("https://")
            .ok_or_else(|| EndpointError::BadUrl(url.to_owned()))?;
        let authority = rest.trim_end_matches('/');
        if authority.is_empty() || authority.contains('/') || authority.contains('@') {
            return Err(EndpointError::BadUrl(url.to_owned()));
        }
        let (host, authority) =
            split_authority(authority).ok_or_else(|| EndpointError::BadUrl(url.to_owned()))?;
        Ok(Endpoint::Https {
            url: url.to_owned(),
            authority,
            host,
            identity: TlsIdentity {
                client_cert_pem: read(client_cert)?,
                client_key_pem: read(client_key)?,
                server_cert_pem: read(server_cert)?,
            },
        })
    }
}

/// Splits `host[:port]` (IPv6 in brackets) and adds the default port 8443.
fn split_authority(authority: &str) -> Option<(String, String)> {
    if let Some(rest) = authority.strip_prefix('[') {
        let (host, after) = rest.split_once(']')?;
        let port = match after {
            "" => "8443",
            p => p.strip_prefix(':')?,
        };
        port.parse::<u16>().ok()?;
        return Some((host.to_owned(), format!("[{host}]:{port}")));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => {
            port.parse::<u16>().ok()?;
            (!host.is_empty()).then(|| (host.to_owned(), authority.to_owned()))
        }
        None => Some((authority.to_owned(), format!("{authority}:8443"))),
    }
}

fn read(path: &Path) -> Result<String, EndpointError> {
    std::fs::read_to_string(path).map_err(|source| EndpointError::Read {
        path: path.to_owned(),
        source,
    })
}
