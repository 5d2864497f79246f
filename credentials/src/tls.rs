//! Mutual TLS with a pinned server certificate: the client side of how an Incus client trusts
//! its server.
//!
//! The client presents its own certificate. The server is accepted only if its end-entity
//! certificate is byte-for-byte the pinned one; no CA chain or host name is consulted. The
//! handshake signatures are still verified (with the ring provider), so a server that merely
//! replays the pinned certificate without its key cannot complete the handshake. A mismatch
//! fails the handshake, so no HTTP request is ever written.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::{CertificateError, DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

/// Why [`client_config`] could not build a configuration.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A PEM input holds no usable certificate or key.
    #[error("invalid {what}: {reason}")]
    InvalidPem {
        /// Which input (`client certificate`, `client key`, `server certificate`).
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// rustls refused the credentials (for example a key that does not match the certificate).
    #[error("invalid TLS configuration: {reason}")]
    Tls {
        /// What rustls reported.
        reason: String,
    },
}

/// The rustls client configuration for an Incus HTTPS endpoint: it presents the client
/// certificate and accepts exactly the pinned server certificate (no CA chain, no host name check;
/// handshake signatures are still verified, with the ring provider). Every tool that talks to the
/// same Incus over its own connections (the core's client, an admin client, the fake's capture and
/// recorder, a test runner) uses it, so that trust is decided in one place.
///
/// ```
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // The client's own key pair, and the server certificate to pin (read from files in practice).
/// let client = rcgen::generate_simple_self_signed(vec!["agent".to_owned()])?;
/// let server = rcgen::generate_simple_self_signed(vec!["incus".to_owned()])?;
/// let config = incus_credentials::tls::client_config(
///     &client.cert.pem(),
///     &client.signing_key.serialize_pem(),
///     &server.cert.pem(),
/// )?;
/// let connector = tokio_rustls::TlsConnector::from(config);
/// # let _ = connector;
///
/// // Unusable input is refused before any connection exists.
/// let refused = incus_credentials::tls::client_config("not a certificate", "", &server.cert.pem());
/// assert!(matches!(refused, Err(incus_credentials::tls::Error::InvalidPem { what: "client certificate", .. })));
/// # Ok(()) }
/// ```
///
/// # Errors
/// [`Error::InvalidPem`] when a PEM input holds no usable certificate or key, [`Error::Tls`] when
/// rustls refuses the pair.
pub fn client_config(
    client_cert_pem: &str,
    client_key_pem: &str,
    server_cert_pem: &str,
) -> Result<Arc<rustls::ClientConfig>, Error> {
    let chain = certificates(client_cert_pem, "client certificate")?;
    let key = private_key(client_key_pem)?;
    let pinned = certificates(server_cert_pem, "server certificate")?
        .into_iter()
        .next()
        .ok_or_else(|| no_certificate("server certificate"))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let verifier = PinnedServerCert {
        pinned,
        algorithms: provider.signature_verification_algorithms,
    };
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(tls_error)?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(verifier))
        .with_client_auth_cert(chain, key)
        .map_err(tls_error)?;
    Ok(Arc::new(config))
}

fn certificates(pem: &str, what: &'static str) -> Result<Vec<CertificateDer<'static>>, Error> {
    let certs = rustls_pemfile::certs(&mut pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::InvalidPem {
            what,
            reason: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(no_certificate(what));
    }
    Ok(certs)
}

fn private_key(pem: &str) -> Result<PrivateKeyDer<'static>, Error> {
    let invalid = |reason: String| Error::InvalidPem {
        what: "client key",
        reason,
    };
    rustls_pemfile::private_key(&mut pem.as_bytes())
        .map_err(|e| invalid(e.to_string()))?
        .ok_or_else(|| invalid("no private key found".to_owned()))
}

fn no_certificate(what: &'static str) -> Error {
    Error::InvalidPem {
        what,
        reason: "no certificate found".to_owned(),
    }
}

fn tls_error(error: rustls::Error) -> Error {
    Error::Tls {
        reason: error.to_string(),
    }
}

/// Accepts exactly one server certificate.
#[derive(Debug)]
struct PinnedServerCert {
    pinned: CertificateDer<'static>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for PinnedServerCert {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == self.pinned.as_ref() {
            Ok(ServerCertVerified::assertion())
        } else {
            tracing::warn!("Incus presented a certificate that is not the pinned one");
            Err(rustls::Error::InvalidCertificate(
                CertificateError::ApplicationVerificationFailure,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
