//! Mutual TLS with a pinned server certificate: the configuration is `incus-credentials`'
//! (shared with the fake's capture and recorder), its errors are the core's [`ConnectionError`].

use std::sync::Arc;

use super::error::ConnectionError;

/// The rustls client configuration the core uses for an HTTPS endpoint: it presents the client
/// certificate and accepts exactly the pinned server certificate (no CA chain, no host name check;
/// handshake signatures are still verified). Tools that talk to the same Incus over their own
/// connections (an admin client, a test runner) can use it so that trust is decided in one place;
/// it is [`incus_credentials::tls::client_config`] with the core's error type.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let pair = |name: &str| {
/// #     let made = rcgen::generate_simple_self_signed(vec![name.to_owned()]).expect("generated");
/// #     (made.cert.pem(), made.signing_key.serialize_pem())
/// # };
/// // The client's certificate and key, and the server certificate to pin (files, in practice).
/// let (client_cert, client_key) = pair("agent");
/// let (server_cert, _) = pair("incus");
/// let config = incus_operations::tls_client_config(&client_cert, &client_key, &server_cert)?;
/// let connector = tokio_rustls::TlsConnector::from(config);
/// # let _ = connector;
/// assert!(matches!(
///     incus_operations::tls_client_config("", &client_key, &server_cert),
///     Err(incus_operations::ConnectionError::InvalidPem { what: "client certificate", .. })
/// ));
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`ConnectionError::InvalidPem`] when a PEM input holds no usable certificate or key,
/// [`ConnectionError::Tls`] when rustls refuses the pair.
pub fn client_config(
    client_cert_pem: &str,
    client_key_pem: &str,
    server_cert_pem: &str,
) -> Result<Arc<rustls::ClientConfig>, ConnectionError> {
    Ok(incus_credentials::tls::client_config(
        client_cert_pem,
        client_key_pem,
        server_cert_pem,
    )?)
}

impl From<incus_credentials::tls::Error> for ConnectionError {
    fn from(error: incus_credentials::tls::Error) -> Self {
        match error {
            incus_credentials::tls::Error::InvalidPem { what, reason } => {
                Self::InvalidPem { what, reason }
            }
            incus_credentials::tls::Error::Tls { reason } => Self::Tls { reason },
            // The enum is non-exhaustive: a kind added later is a TLS refusal all the same.
            other => Self::Tls {
                reason: other.to_string(),
            },
        }
    }
}
