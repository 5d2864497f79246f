//! Mutual TLS with a pinned server certificate.
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

use super::error::ConnectionError;

/// The rustls client configuration the core uses for an HTTPS endpoint: it presents the client
/// certificate and accepts exactly the pinned server certificate (no CA chain, no host name check;
/// handshake signatures are still verified). Tools that talk to the same Incus over their own
/// connections (an admin client, a test runner) can use it so that trust is decided in one place.
///
/// ```no_run
/// let config = incus_operations::tls_client_config(
///     &std::fs::read_to_string("client.crt")?,
///     &std::fs::read_to_string("client.key")?,
///     &std::fs::read_to_string("server.crt")?,
/// )?;
/// let connector = tokio_rustls::TlsConnector::from(config);
/// # let _ = connector;
/// # Ok::<(), Box<dyn std::error::Error>>(())
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

fn certificates(
    pem: &str,
    what: &'static str,
) -> Result<Vec<CertificateDer<'static>>, ConnectionError> {
    let certs = rustls_pemfile::certs(&mut pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| ConnectionError::InvalidPem {
            what,
            reason: e.to_string(),
        })?;
    if certs.is_empty() {
        return Err(no_certificate(what));
    }
    Ok(certs)
}

fn private_key(pem: &str) -> Result<PrivateKeyDer<'static>, ConnectionError> {
    let invalid = |reason: String| ConnectionError::InvalidPem {
        what: "client key",
        reason,
    };
    rustls_pemfile::private_key(&mut pem.as_bytes())
        .map_err(|e| invalid(e.to_string()))?
        .ok_or_else(|| invalid("no private key found".to_owned()))
}

fn no_certificate(what: &'static str) -> ConnectionError {
    ConnectionError::InvalidPem {
        what,
        reason: "no certificate found".to_owned(),
    }
}

fn tls_error(error: rustls::Error) -> ConnectionError {
    ConnectionError::Tls {
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
