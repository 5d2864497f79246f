//! The HTTPS listener: mutual TLS where the client certificate decides trust per request, as
//! Incus does (reference §1.2), over HTTP/1.1 and h2, websockets included.

use crate::common;

use common::{ClientCert, Https};
use fake_incus::{FakeIncus, Listener};
use futures_util::StreamExt;
use serde_json::json;
use tokio_tungstenite::tungstenite::Message;

async fn fake() -> FakeIncus {
    FakeIncus::builder()
        .https(true)
        .start()
        .await
        .expect("fake starts")
}

#[tokio::test]
async fn https_url_is_loopback_with_a_free_port() {
    let fake = fake().await;
    let url = fake.https_url().unwrap();
    assert!(
        url.starts_with("https://127.0.0.1:") && !url.ends_with(":0"),
        "{url}"
    );
    assert!(
        FakeIncus::builder()
            .start()
            .await
            .unwrap()
            .https_url()
            .is_none(),
        "HTTPS is off by default"
    );
}

#[tokio::test]
async fn trusted_client_certificate_is_trusted_with_tls_identity() {
    let fake = fake().await;
    let client = Https::new(&fake, ClientCert::Trusted, false);
    let reply = client.request("GET", "/1.0", None).await;
    assert_eq!(reply.status(), 200);
    common::assert_envelope(reply.json());
    let m = reply.metadata();
    assert_eq!(
        (m["auth"].as_str(), m["auth_user_method"].as_str()),
        (Some("trusted"), Some("tls"))
    );
    let name = m["auth_user_name"].as_str().unwrap();
    assert_eq!(name.len(), 64);
    assert!(reply.header("etag").is_some());
    assert_eq!(m["environment"]["certificate"], fake.server_cert_pem());
    assert_eq!(
        m["environment"]["addresses"],
        json!([fake.https_address().unwrap().to_string()])
    );
    let list = client.request("GET", "/1.0/instances", None).await;
    assert_eq!((list.status(), list.metadata()), (200, &json!([])));
    let entry = fake.journal().into_iter().last().unwrap();
    assert_eq!(entry.listener, Listener::Https);
    assert_eq!(entry.cert_fingerprint.as_deref(), Some(name));
    assert!(entry.trusted);
}

#[tokio::test]
async fn h2_is_offered_through_alpn() {
    let fake = fake().await;
    let client = Https::new(&fake, ClientCert::Trusted, true);
    let reply = client.request("GET", "/1.0/instances", None).await;
    assert_eq!(reply.status(), 200);
    assert_eq!(reply.header("x-test-version"), Some("HTTP/2.0"));
}

#[tokio::test]
async fn untrusted_and_absent_certificates_get_the_untrusted_server_and_403() {
    let fake = fake().await;
    for cert in [ClientCert::Unknown, ClientCert::None] {
        let client = Https::new(&fake, cert, false);
        let root = client.request("GET", "/", None).await;
        assert_eq!(root.status(), 200);
        let server = client.request("GET", "/1.0", None).await;
        assert_eq!(server.status(), 200);
        let keys: Vec<&String> = server.metadata().as_object().unwrap().keys().collect();
        assert_eq!(
            keys,
            [
                "config",
                "api_extensions",
                "api_status",
                "api_version",
                "auth",
                "public",
                "auth_methods"
            ]
        );
        assert_eq!(server.metadata()["auth"], "untrusted");
        assert!(
            server.header("etag").is_none(),
            "no ETag for the untrusted form"
        );
        for path in [
            "/1.0/instances",
            "/1.0/operations",
            "/1.0/events",
            "/1.0/operations/x/wait",
        ] {
            let reply = client.request("GET", path, None).await;
            assert_eq!(
                (reply.status(), reply.json()["error"].as_str()),
                (403, Some("not authorized")),
                "{path}"
            );
            common::assert_envelope(reply.json());
        }
        let create = client
            .request("POST", "/1.0/instances", Some(json!({"name": "x"})))
            .await;
        assert_eq!(create.status(), 403);
    }
    assert!(fake.journal().iter().all(|e| !e.applied));
    assert!(fake
        .requests("*", "/1.0/instances")
        .iter()
        .all(|e| !e.trusted));
}

#[tokio::test]
async fn certificates_can_be_trusted_at_runtime() {
    let fake = fake().await;
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let cert = rcgen::CertificateParams::new(Vec::<String>::new())
        .unwrap()
        .self_signed(&key)
        .unwrap();
    fake.trust_certificate(&cert.pem()).unwrap();
    assert!(fake.trust_certificate("not a pem").is_err());
}

#[tokio::test]
async fn exec_works_over_wss_with_the_client_certificate() {
    let fake = fake().await;
    common::launch(&fake, "c1", true).await;
    let client = Https::new(&fake, ClientCert::Trusted, false);
    let body =
        json!({"command": ["echo", "tls"], "wait-for-websocket": true, "interactive": false});
    let reply = client
        .request("POST", "/1.0/instances/c1/exec", Some(body))
        .await;
    assert_eq!(reply.status(), 202);
    let id = reply.metadata()["id"].as_str().unwrap().to_string();
    let fds = reply.metadata()["metadata"]["fds"].clone();
    let mut sockets = Vec::new();
    for fd in ["0", "1", "2"] {
        let tls = client.connect().await;
        let url = format!(
            "wss://127.0.0.1/1.0/operations/{id}/websocket?secret={}",
            fds[fd].as_str().unwrap()
        );
        let (ws, _) = tokio_tungstenite::client_async(url, tls)
            .await
            .expect("wss upgrade");
        sockets.push(ws);
    }
    let mut stdout = sockets.remove(1);
    let mut out = Vec::new();
    while let Some(Ok(msg)) = stdout.next().await {
        match msg {
            Message::Binary(b) => out.extend_from_slice(&b),
            Message::Text(_) => break,
            _ => {}
        }
    }
    assert_eq!(out, b"tls\n");
    let done = client
        .request(
            "GET",
            &format!("/1.0/operations/{id}/wait?timeout=10"),
            None,
        )
        .await;
    assert_eq!(done.metadata()["metadata"]["return"], 0);
}

#[tokio::test]
async fn https_answers_like_the_unix_socket() {
    let fake = fake().await;
    for alpn_h2 in [false, true] {
        let client = Https::new(&fake, ClientCert::Trusted, alpn_h2);
        let name = if alpn_h2 { "h2" } else { "h1" };
        let body = json!({"name": name, "source": {"type": "image", "alias": "busybox"}});
        let created = client.request("POST", "/1.0/instances", Some(body)).await;
        assert_eq!(created.status(), 202);
        common::assert_envelope(created.json());
        assert_eq!(
            created.header("location"),
            created.json()["operation"].as_str()
        );
        let op = created.json()["operation"].as_str().unwrap();
        let done = client
            .request("GET", &format!("{op}/wait?timeout=10"), None)
            .await;
        assert_eq!(
            (done.status(), done.metadata()["status"].as_str()),
            (200, Some("Success"))
        );
        let got = client
            .request("GET", &format!("/1.0/instances/{name}"), None)
            .await;
        let unix = common::unix(&fake, "GET", &format!("/1.0/instances/{name}"), None).await;
        assert_eq!(
            got.header("etag"),
            unix.header("etag"),
            "same ETag on both listeners"
        );
        assert_eq!(got.metadata(), unix.metadata());
        let missing = client.request("GET", "/1.0/instances/nope", None).await;
        assert_eq!(missing.status(), 404);
        common::assert_envelope(missing.json());
        assert_eq!(missing.header("x-content-type-options"), Some("nosniff"));
    }
}

#[tokio::test]
async fn untrusted_client_is_refused_before_its_body_is_read() {
    use tokio::io::AsyncWriteExt;
    let fake = fake().await;
    let client = Https::new(&fake, ClientCert::Unknown, false);
    let mut tls = client.connect().await;
    // 200 MB announced, a few bytes sent: the answer must not wait for the rest.
    let head = "POST /1.0/instances HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 200000000\r\n\r\n{\"name\":";
    tls.write_all(head.as_bytes()).await.unwrap();
    let answer = common::read_until_close(&mut tls, std::time::Duration::from_secs(5))
        .await
        .expect("answered and closed without the body");
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(answer.contains("not authorized"), "{answer}");
    let entry = fake.journal().into_iter().last().unwrap();
    assert!(!entry.trusted && !entry.applied);
    assert_eq!(
        entry.body, "",
        "an untrusted body is not read into the journal"
    );
}

#[tokio::test]
async fn announced_body_over_the_bound_is_413_without_reading_it() {
    use tokio::io::AsyncWriteExt;
    let fake = fake().await;
    let client = Https::new(&fake, ClientCert::Trusted, false);
    let mut tls = client.connect().await;
    let head = format!(
        "POST /1.0/instances HTTP/1.1\r\nHost: x\r\nContent-Length: {}\r\n\r\n",
        200_000_000
    );
    tls.write_all(head.as_bytes()).await.unwrap();
    let answer = common::read_until_close(&mut tls, std::time::Duration::from_secs(5))
        .await
        .expect("answered and closed");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(
        answer.contains("\"error\":\"http: request body too large\""),
        "{answer}"
    );
    assert!(answer.to_ascii_lowercase().contains("connection: close"));
}

#[tokio::test]
async fn endless_chunked_body_is_cut_at_the_bound() {
    use tokio::io::AsyncWriteExt;
    let fake = fake().await;
    let client = Https::new(&fake, ClientCert::Trusted, false);
    let tls = client.connect().await;
    let (mut reader, mut writer) = tokio::io::split(tls);
    // Chunks of 64 KiB, never a last chunk; the writer stops at 4 times the bound at most.
    let sender = tokio::spawn(async move {
        let head = "POST /1.0/instances HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
        writer.write_all(head.as_bytes()).await?;
        let chunk = format!("10000\r\n{}\r\n", " ".repeat(0x10000));
        let mut sent = 0usize;
        while sent < 4 * (16 << 20) {
            writer.write_all(chunk.as_bytes()).await?;
            sent += 0x10000;
        }
        Ok::<usize, std::io::Error>(sent)
    });
    let answer = common::read_until_close(&mut reader, std::time::Duration::from_secs(20))
        .await
        .expect("answered and closed while the body went on");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    let sent = sender.await.unwrap();
    assert!(
        sent.is_err(),
        "the server closed the connection before the client sent 64 MiB: {sent:?}"
    );
}

/// An X.509 version 1 certificate and its key, as `openssl x509 -req -signkey` makes them
/// (no extensions; valid from 2026-12-01 for 100 years).
const V1_CERT: &str = "-----BEGIN CERTIFICATE-----
MIIBNTCB2wIUL21wotUsDnVMVLhTB/vsyRJpsR4wCgYIKoZIzj0EAwIwHDEaMBgG
A1UEAwwRb3BlbnNzbCB2MSBjbGllbnQwIBcNMjYxMjAxMTExOTEzWhgPMjEyNjEx
MDcxMTE5MTNaMBwxGjAYBgNVBAMMEW9wZW5zc2wgdjEgY2xpZW50MFkwEwYHKoZI
zj0CAQYIKoZIzj0DAQcDQgAEGbKBq1go/c2Kpf+DngqsKqnL1IDJMWGURIQmoiZC
vUXV6soifxM5bvIXtDqW3RjXopzfLzMqlT5oRT1A0xNCADAKBggqhkjOPQQDAgNJ
ADBGAiEAzyXxKJP2baKfyNIFJZLqg4ZzxxfiRpPbueUv87Pe5eMCIQD/dhjReZRq
ZYIQOmaJDX0/o4cFn2yqxvhSUErykdwCMg==
-----END CERTIFICATE-----
";
const V1_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgV7aqn6leu9wG8TIV
PSr1ma5fftXjTAvNGgXdhbiiQ5ChRANCAAQZsoGrWCj9zYql/4OeCqwqqcvUgMkx
YZREhCaiJkK9RdXqyiJ/Ezlu8he0OpbdGNeinN8vMyqVPmhFPUDTE0IA
-----END PRIVATE KEY-----
";

/// Presents one certificate whatever the server asks. rustls' own `with_client_auth_cert`
/// cannot be used: it checks the key against the certificate with webpki, which refuses
/// version 1 certificates.
#[derive(Debug)]
struct FixedClientCert(std::sync::Arc<rustls::sign::CertifiedKey>);

impl rustls::client::ResolvesClientCert for FixedClientCert {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        _sigschemes: &[rustls::SignatureScheme],
    ) -> Option<std::sync::Arc<rustls::sign::CertifiedKey>> {
        Some(std::sync::Arc::clone(&self.0))
    }
    fn has_certs(&self) -> bool {
        true
    }
}

/// `GET path` over a fresh TLS connection presenting `cert_pem`, with only `version` offered;
/// `Err` when the handshake fails.
async fn get_with_cert(
    fake: &FakeIncus,
    cert_pem: &str,
    key_pem: &str,
    version: &'static rustls::SupportedProtocolVersion,
    path: &str,
) -> Result<String, String> {
    use rustls::pki_types::ServerName;
    use std::sync::Arc;
    use tokio::io::AsyncWriteExt;
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut fake.server_cert_pem().as_bytes()) {
        roots.add(cert.unwrap()).unwrap();
    }
    let certs: Vec<_> = rustls_pemfile::certs(&mut cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap();
    let key = rustls_pemfile::private_key(&mut key_pem.as_bytes())
        .unwrap()
        .unwrap();
    let provider = rustls::crypto::ring::default_provider();
    let signing_key = provider.key_provider.load_private_key(key).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_protocol_versions(&[version])
    .unwrap()
    .with_root_certificates(roots)
    .with_client_cert_resolver(Arc::new(FixedClientCert(Arc::new(
        rustls::sign::CertifiedKey::new(certs, signing_key),
    ))));
    let tcp = tokio::net::TcpStream::connect(fake.https_address().unwrap())
        .await
        .unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1").unwrap(), tcp)
        .await
        .map_err(|e| e.to_string())?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    tls.write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    common::read_until_close(&mut tls, std::time::Duration::from_secs(10))
        .await
        .ok_or_else(|| "no answer".to_string())
}

#[tokio::test]
async fn version_1_certificate_completes_the_handshake_and_is_trusted_when_trusted() {
    let fake = fake().await;
    for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let untrusted = get_with_cert(&fake, V1_CERT, V1_KEY, version, "/1.0/instances")
            .await
            .expect("the handshake succeeds with a version 1 certificate");
        assert!(untrusted.starts_with("HTTP/1.1 403"), "{untrusted}");
    }
    fake.trust_certificate(V1_CERT).unwrap();
    for version in [&rustls::version::TLS13, &rustls::version::TLS12] {
        let trusted = get_with_cert(&fake, V1_CERT, V1_KEY, version, "/1.0/instances")
            .await
            .unwrap();
        assert!(trusted.starts_with("HTTP/1.1 200"), "{trusted}");
    }
}

#[tokio::test]
async fn trusted_certificate_outside_its_validity_period_is_untrusted() {
    let fake = fake().await;
    let now = time::OffsetDateTime::now_utc();
    let periods = [
        (
            "expired",
            now - time::Duration::days(30),
            now - time::Duration::days(1),
        ),
        (
            "not yet valid",
            now + time::Duration::days(1),
            now + time::Duration::days(30),
        ),
        (
            "valid",
            now - time::Duration::days(1),
            now + time::Duration::days(30),
        ),
    ];
    for (label, not_before, not_after) in periods {
        let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.not_before = not_before;
        params.not_after = not_after;
        let cert = params.self_signed(&key).unwrap();
        fake.trust_certificate(&cert.pem()).unwrap();
        let key_pem = key.serialize_pem();
        let tls13 = &rustls::version::TLS13;
        let list = get_with_cert(&fake, &cert.pem(), &key_pem, tls13, "/1.0/instances")
            .await
            .expect("the handshake succeeds: validity decides trust, not the TLS layer");
        let server = get_with_cert(&fake, &cert.pem(), &key_pem, tls13, "/1.0")
            .await
            .unwrap();
        if label == "valid" {
            assert!(list.starts_with("HTTP/1.1 200"), "{label}: {list}");
            assert!(server.contains("\"auth\":\"trusted\""), "{label}");
        } else {
            assert!(list.starts_with("HTTP/1.1 403"), "{label}: {list}");
            assert!(list.contains("not authorized"), "{label}: {list}");
            assert!(server.contains("\"auth\":\"untrusted\""), "{label}");
        }
    }
}
