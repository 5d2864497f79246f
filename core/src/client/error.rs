//! What can go wrong when talking to Incus, and whether the request may have reached it; and
//! why a connection could not be built.

use std::time::Duration;

/// Why a call to Incus failed.
///
/// Every kind says whether the request may have reached Incus
/// ([`ClientError::may_have_been_sent`]). The rule is conservative: once a connection is
/// established and writing the request has begun, a failure means it may have been sent (and,
/// for a mutation, applied). Nothing is ever resent by this client.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The connection could not be established (socket missing, connection refused, ...).
    /// Nothing was sent.
    #[error("could not connect to Incus: {message}")]
    Connect {
        /// What the operating system or the connector reported.
        message: String,
    },
    /// The TLS handshake failed, for example because the server certificate is not the pinned
    /// one. Nothing was sent.
    #[error("TLS handshake with Incus failed: {message}")]
    Tls {
        /// What rustls reported.
        message: String,
    },
    /// Incus did not answer within the connection's timeout.
    #[error("Incus did not answer within {} ms", timeout.as_millis())]
    Timeout {
        /// The bound that elapsed.
        timeout: Duration,
        /// Whether the request may have reached Incus.
        may_have_been_sent: bool,
    },
    /// The connection failed while the request was being written or the answer read.
    #[error("transport error while talking to Incus: {message}")]
    Transport {
        /// What went wrong.
        message: String,
        /// Whether the request may have reached Incus.
        may_have_been_sent: bool,
    },
    /// Incus answered with an error envelope.
    #[error("Incus refused the request (HTTP {http_status}, error code {error_code}): {message}")]
    Native {
        /// The HTTP status of the answer.
        http_status: u16,
        /// The envelope's `error_code`.
        error_code: i64,
        /// The envelope's `error` text, unchanged.
        message: String,
    },
    /// Incus answered something that is not a valid Incus response.
    #[error("Incus sent an invalid response: {message}")]
    InvalidResponse {
        /// What was wrong with it.
        message: String,
    },
    /// The answer was larger than the connection's `max_stream_bytes`.
    #[error("the response from Incus exceeds {limit} bytes")]
    ResponseTooLarge {
        /// The bound in bytes.
        limit: u64,
    },
    /// Discovery succeeded but the server does not trust this client (`auth` is not `trusted`).
    #[error("Incus does not trust this client (auth is {auth:?})")]
    Untrusted {
        /// The `auth` value the server reported.
        auth: String,
    },
    /// The request could not be built (for example a name that cannot be put in a URL).
    /// Nothing was sent.
    #[error("invalid request: {message}")]
    InvalidRequest {
        /// What was wrong.
        message: String,
    },
}

impl ClientError {
    /// Whether the request may have reached Incus (and, for a mutation, been applied).
    ///
    /// `false` only when it is certain that nothing was sent: connection or TLS failures,
    /// requests that could not be built, and timeouts or transport failures before writing
    /// began. A native error or an invalid answer proves the request arrived.
    pub fn may_have_been_sent(&self) -> bool {
        match self {
            Self::Connect { .. } | Self::Tls { .. } | Self::InvalidRequest { .. } => false,
            Self::Timeout {
                may_have_been_sent, ..
            }
            | Self::Transport {
                may_have_been_sent, ..
            } => *may_have_been_sent,
            Self::Native { .. }
            | Self::InvalidResponse { .. }
            | Self::ResponseTooLarge { .. }
            | Self::Untrusted { .. } => true,
        }
    }

    pub(crate) fn invalid_response(message: impl Into<String>) -> Self {
        Self::InvalidResponse {
            message: message.into(),
        }
    }

    pub(crate) fn transport_after_send(message: impl std::fmt::Display) -> Self {
        Self::Transport {
            message: message.to_string(),
            may_have_been_sent: true,
        }
    }
}

/// Why a [`Connection`](super::Connection) could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConnectionError {
    /// The HTTPS URL is not `https://host[:port]`.
    #[error("invalid Incus URL {url:?}: {reason}")]
    InvalidUrl {
        /// The URL given.
        url: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A PEM input holds no usable certificate or key.
    #[error("invalid {what}: {reason}")]
    InvalidPem {
        /// Which input (`client certificate`, `client key`, `server certificate`).
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// A bound is out of its accepted range.
    #[error("invalid {what}: {reason}")]
    InvalidBound {
        /// Which bound.
        what: &'static str,
        /// The accepted range.
        reason: String,
    },
    /// rustls refused the credentials.
    #[error("invalid TLS configuration: {reason}")]
    Tls {
        /// What rustls reported.
        reason: String,
    },
}
