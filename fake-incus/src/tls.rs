//! Certificates and the rustls server configuration.
//!
//! rcgen makes a self-signed ECDSA P-256 server certificate (SANs `127.0.0.1`, `::1`,
//! `localhost`) and a client certificate the fake trusts. The TLS layer accepts any client
//! certificate, or none, as Incus does; whether the client is trusted is decided per request
//! from the certificate's SHA-256 fingerprint and its validity period (a trusted certificate
//! that has expired or is not valid yet is untrusted, as the daemon's `CheckTrustState` has it).
//!
//! The handshake signature is checked against the certificate's public key as x509-parser reads
//! it, not through webpki, which refuses X.509 version 1 certificates (what `openssl x509 -req`
//! makes without extensions): the daemon's Go TLS stack accepts them, and so does the fake.

use rcgen::{CertificateParams, DistinguishedName, DnType, KeyPair, PKCS_ECDSA_P256_SHA256};
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::{verify_tls13_signature_with_raw_key, CryptoProvider};
use rustls::pki_types::{CertificateDer, SubjectPublicKeyInfoDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, DistinguishedName as TlsName, SignatureScheme};
use sha2::{Digest, Sha256};
use std::path::Path;
use std::sync::Arc;

/// A certificate and its private key, both PEM.
#[derive(Debug, Clone)]
pub(crate) struct Identity {
    pub(crate) cert_pem: String,
    pub(crate) key_pem: String,
}

/// Errors making or loading certificates.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsError {
    #[error("generating a certificate: {0}")]
    Generate(#[from] rcgen::Error),
    #[error("reading PEM: {0}")]
    Pem(String),
    #[error("TLS configuration: {0}")]
    Config(#[from] rustls::Error),
    #[error("{context}: {source}")]
    Io {
        context: String,
        source: std::io::Error,
    },
}

impl TlsError {
    /// A mapper of an I/O error, with what was being done.
    fn io(context: String) -> impl FnOnce(std::io::Error) -> Self {
        move |source| Self::Io { context, source }
    }
}

impl Identity {
    /// A fresh self-signed certificate for `common_name` with the given SANs.
    pub(crate) fn generate(common_name: &str, sans: &[&str]) -> Result<Self, TlsError> {
        let key = KeyPair::generate_for(&PKCS_ECDSA_P256_SHA256)?;
        let mut params =
            CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())?;
        let mut name = DistinguishedName::new();
        name.push(DnType::OrganizationName, "fake-incus");
        name.push(DnType::CommonName, common_name);
        params.distinguished_name = name;
        let cert = params.self_signed(&key)?;
        Ok(Self {
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        })
    }

    /// The server identity.
    pub(crate) fn server() -> Result<Self, TlsError> {
        Self::generate("fake-incus server", &["localhost", "127.0.0.1", "::1"])
    }

    /// A client identity.
    pub(crate) fn client() -> Result<Self, TlsError> {
        Self::generate("fake-incus client", &[])
    }

    /// SHA-256 of the (first) certificate's DER, lowercase hex.
    pub(crate) fn fingerprint(&self) -> Result<String, TlsError> {
        fingerprint_pem(&self.cert_pem)
    }
}

/// SHA-256 fingerprint of the first certificate in a PEM text.
pub(crate) fn fingerprint_pem(pem: &str) -> Result<String, TlsError> {
    let der = certs(pem)?
        .into_iter()
        .next()
        .ok_or_else(|| TlsError::Pem("no certificate found".into()))?;
    Ok(fingerprint_der(&der))
}

/// When a certificate is valid, in Unix seconds, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Validity {
    pub(crate) not_before: i64,
    pub(crate) not_after: i64,
}

impl Validity {
    /// Whether `now` (Unix seconds) is inside the period.
    pub(crate) fn contains(&self, now: i64) -> bool {
        self.not_before <= now && now <= self.not_after
    }

    /// Whether the period includes the present moment.
    pub(crate) fn contains_now(&self) -> bool {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX));
        self.contains(now)
    }
}

/// The validity period of the first certificate in a PEM text.
pub(crate) fn validity_pem(pem: &str) -> Result<Validity, TlsError> {
    let der = certs(pem)?
        .into_iter()
        .next()
        .ok_or_else(|| TlsError::Pem("no certificate found".into()))?;
    let (_, cert) = x509_parser::parse_x509_certificate(&der)
        .map_err(|e| TlsError::Pem(format!("parsing the certificate: {e}")))?;
    let validity = cert.validity();
    Ok(Validity {
        not_before: validity.not_before.timestamp(),
        not_after: validity.not_after.timestamp(),
    })
}

/// The SubjectPublicKeyInfo (DER) and the public key bits of a DER certificate, any version.
fn public_key(cert: &CertificateDer<'_>) -> Result<(Vec<u8>, Vec<u8>), rustls::Error> {
    let (_, parsed) = x509_parser::parse_x509_certificate(cert.as_ref())
        .map_err(|_| rustls::Error::InvalidCertificate(rustls::CertificateError::BadEncoding))?;
    let spki = parsed.public_key();
    Ok((spki.raw.to_vec(), spki.subject_public_key.data.to_vec()))
}

/// SHA-256 fingerprint of a DER certificate.
pub(crate) fn fingerprint_der(der: &[u8]) -> String {
    hex::encode(Sha256::digest(der))
}

fn certs(pem: &str) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    rustls_pemfile::certs(&mut pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| TlsError::Pem(e.to_string()))
}

/// The rustls server configuration: the server identity, any client certificate accepted, ALPN
/// `h2` and `http/1.1`.
pub(crate) fn server_config(identity: &Identity) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let key = rustls_pemfile::private_key(&mut identity.key_pem.as_bytes())
        .map_err(|e| TlsError::Pem(e.to_string()))?
        .ok_or_else(|| TlsError::Pem("no private key found".into()))?;
    let mut config = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?
        .with_client_cert_verifier(Arc::new(AnyClientCert { provider }))
        .with_single_cert(certs(&identity.cert_pem)?, key)?;
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Accepts every client certificate (and none): trust is decided by fingerprint later.
#[derive(Debug)]
struct AnyClientCert {
    provider: Arc<CryptoProvider>,
}

impl ClientCertVerifier for AnyClientCert {
    fn root_hint_subjects(&self) -> &[TlsName] {
        &[]
    }
    fn client_auth_mandatory(&self) -> bool {
        false
    }
    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let (_, key) = public_key(cert)?;
        let algorithms = &self.provider.signature_verification_algorithms;
        let candidates = algorithms
            .mapping
            .iter()
            .find(|(scheme, _)| *scheme == dss.scheme)
            .map(|(_, algs)| *algs)
            .ok_or(rustls::Error::PeerMisbehaved(
                rustls::PeerMisbehaved::SignedHandshakeWithUnadvertisedSigScheme,
            ))?;
        // The scheme names the algorithm; a key of another kind or curve fails to verify.
        candidates
            .iter()
            .any(|alg| alg.verify_signature(&key, message, dss.signature()).is_ok())
            .then(HandshakeSignatureValid::assertion)
            .ok_or(rustls::Error::InvalidCertificate(
                rustls::CertificateError::BadSignature,
            ))
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let (spki, _) = public_key(cert)?;
        verify_tls13_signature_with_raw_key(
            message,
            &SubjectPublicKeyInfoDer::from(spki.as_slice()),
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

/// Loads or generates the server and client identities (`DIR/{server,client}.{crt,key}`);
/// the recorder's HTTPS listener has its own, the same way.
pub(crate) fn identities(dir: Option<&Path>) -> Result<(Identity, Identity), TlsError> {
    let Some(dir) = dir else {
        return Ok((Identity::server()?, Identity::client()?));
    };
    std::fs::create_dir_all(dir).map_err(TlsError::io(format!("creating {}", dir.display())))?;
    let server = load_or_make(dir, "server", Identity::server)?;
    let client = load_or_make(dir, "client", Identity::client)?;
    Ok((server, client))
}

fn load_or_make(
    dir: &Path,
    name: &str,
    make: fn() -> Result<Identity, TlsError>,
) -> Result<Identity, TlsError> {
    let cert = dir.join(format!("{name}.crt"));
    let key = dir.join(format!("{name}.key"));
    if cert.exists() && key.exists() {
        let read = |p: &Path| {
            std::fs::read_to_string(p).map_err(TlsError::io(format!("reading {}", p.display())))
        };
        return Ok(Identity {
            cert_pem: read(&cert)?,
            key_pem: read(&key)?,
        });
    }
    let identity = make()?;
    std::fs::write(&cert, &identity.cert_pem)
        .map_err(TlsError::io(format!("writing {}", cert.display())))?;
    write_private(&key, &identity.key_pem)?;
    Ok(identity)
}

fn write_private(path: &Path, text: &str) -> Result<(), TlsError> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)
        .map_err(TlsError::io(format!("writing {}", path.display())))?;
    file.write_all(text.as_bytes())
        .map_err(TlsError::io(format!("writing {}", path.display())))
}
