//! rustls client configuration: present the client certificate, accept exactly the pinned server
//! certificate (no CA chain, no host name check: the pin is the trust).
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::CryptoProvider;
use rustls::{DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};

use crate::endpoint::TlsIdentity;

/// Builds the client configuration; errors are human-readable.
pub(crate) fn client_config(identity: &TlsIdentity) -> Result<rustls::ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let pinned = first_cert(&identity.server_cert_pem, "--server-cert")?;
    let chain = certs(&identity.client_cert_pem, "--client-cert")?;
    let key = private_key(&identity.client_key_pem)?;
    let verifier = Arc::new(PinnedServer {
        pinned,
        provider: provider.clone(),
    });
    rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_client_auth_cert(chain, key)
        .map_err(|e| format!("client certificate and key do not fit together: {e}"))
}

fn certs(pem: &str, flag: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let list: Vec<_> = rustls_pemfile::certs(&mut pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{flag}: not PEM: {e}"))?;
    if list.is_empty() {
        return Err(format!("{flag}: no certificate in the file"));
    }
    Ok(list)
}

fn first_cert(pem: &str, flag: &str) -> Result<CertificateDer<'static>, String> {
    Ok(certs(pem, flag)?.remove(0))
}

fn private_key(pem: &str) -> Result<PrivateKeyDer<'static>, String> {
    rustls_pemfile::private_key(&mut pem.as_bytes())
        .map_err(|e| format!("--client-key: not PEM: {e}"))?
        .ok_or_else(|| "--client-key: no private key in the file".to_owned())
}

#[derive(Debug)]
struct PinnedServer {
    pinned: CertificateDer<'static>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PinnedServer {
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
            Err(rustls::Error::General(
                "the server certificate is not the pinned one (--server-cert)".into(),
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}
