//! Test helpers: requests in process ([`call`]) for the API's semantics; over the Unix socket
//! ([`unix`], through the fake's shared client) and over HTTPS (rustls with a pinned server
//! certificate and an optional client certificate) for the transport; websocket connections
//! for exec.

use bytes::Bytes;
use fake_incus::{client, FakeIncus, FakeIncusBuilder, IncusLine, Request};
use http::Method;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpStream, UnixStream};
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

pub(crate) use fake_incus::Reply;

/// The request the helpers send: `body` as JSON, with extra headers.
fn request(method: &str, path: &str, body: Option<&Value>, headers: &[(&str, &str)]) -> Request {
    let request = headers
        .iter()
        .fold(Request::new(method, path), |r, (k, v)| r.header(k, v));
    match body {
        Some(body) => request.json(body),
        None => request,
    }
}

/// A request in process ([`FakeIncus::call`]): what tests of the API's semantics use.
pub(crate) async fn call(fake: &FakeIncus, method: &str, path: &str, body: Option<Value>) -> Reply {
    fake.call(request(method, path, body.as_ref(), &[])).await
}

/// [`call`] with extra headers.
pub(crate) async fn call_with(
    fake: &FakeIncus,
    method: &str,
    path: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> Reply {
    fake.call(request(method, path, body.as_ref(), headers))
        .await
}

/// A request over the Unix socket (tests of the transport).
pub(crate) async fn unix(fake: &FakeIncus, method: &str, path: &str, body: Option<Value>) -> Reply {
    unix_with(fake, method, path, body, &[]).await
}

/// A request over the Unix socket with extra headers.
pub(crate) async fn unix_with(
    fake: &FakeIncus,
    method: &str,
    path: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> Reply {
    unix_at(fake.unix_socket(), method, path, body, headers).await
}

/// A request over any Unix socket (the fake's, a member's or its control socket).
pub(crate) async fn unix_at(
    socket: &std::path::Path,
    method: &str,
    path: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> Reply {
    sent(socket, request(method, path, body.as_ref(), headers)).await
}

/// A request with a raw (non-JSON) body and headers over the fake's Unix socket.
pub(crate) async fn unix_bytes(
    fake: &FakeIncus,
    method: &str,
    path: &str,
    body: Vec<u8>,
    headers: &[(&str, &str)],
) -> Reply {
    let request = headers
        .iter()
        .fold(Request::new(method, path).body(body), |r, (k, v)| {
            r.header(k, v)
        });
    sent(fake.unix_socket(), request).await
}

/// One request on a fresh connection, answered within 20 s.
async fn sent(socket: &std::path::Path, request: Request) -> Reply {
    tokio::time::timeout(Duration::from_secs(20), client::send(socket, request))
        .await
        .expect("answer within 20 s")
        .expect("request")
}

/// A request over a fresh Unix connection; `Err` when the connection fails.
pub(crate) async fn unix_raw(
    fake: &FakeIncus,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Result<Reply, String> {
    client::send(
        fake.unix_socket(),
        request(method, path, body.as_ref(), &[]),
    )
    .await
    .map_err(|e| e.to_string())
}

/// The Incus line most of these tests' expectations were measured on: the real 6.0.4 daemon (and
/// its cluster). A test about the default line, about 7.0 or about both starts its fake itself.
pub(crate) const MEASURED: IncusLine = IncusLine::V6_0;

/// A builder of a fake that imitates the line these tests measured ([`MEASURED`]).
pub(crate) fn builder() -> FakeIncusBuilder {
    FakeIncus::builder().incus_version(MEASURED)
}

/// A fake that imitates the line these tests measured ([`MEASURED`]), else the builder's defaults.
pub(crate) async fn fake() -> FakeIncus {
    builder().start().await.expect("fake starts")
}

/// A fake with the builder's defaults, the default line included.
pub(crate) async fn default_fake() -> FakeIncus {
    FakeIncus::builder().start().await.expect("fake starts")
}

/// `PUT /1.0/instances/{name}/state` with this body: the answer, not waited for.
pub(crate) async fn change_state(fake: &FakeIncus, name: &str, body: Value) -> Reply {
    call(
        fake,
        "PUT",
        &format!("/1.0/instances/{name}/state"),
        Some(body),
    )
    .await
}

/// Waits for an operation (from a 202) and returns the wait answer.
pub(crate) async fn wait(fake: &FakeIncus, accepted: &Reply) -> Reply {
    assert_eq!(
        accepted.status(),
        202,
        "expected an operation: {}",
        accepted.json()
    );
    let op = accepted.operation().expect("operation url");
    call(fake, "GET", &format!("{op}/wait?timeout=10"), None).await
}

/// Waits for an operation (from a 202) and asserts that it succeeded: the wait answer.
pub(crate) async fn completed(fake: &FakeIncus, accepted: &Reply) -> Reply {
    let done = wait(fake, accepted).await;
    // 7.0's wait answers a failed operation in a sync answer too: its status tells.
    assert!(
        done.json()["type"] == "sync" && done.metadata()["status"] == "Success",
        "the operation failed: {}",
        done.json()
    );
    done
}

/// Creates (and optionally starts) an instance from the busybox alias.
pub(crate) async fn launch(fake: &FakeIncus, name: &str, start: bool) {
    let body = serde_json::json!({"name": name, "source": {"type": "image", "alias": "busybox"}, "start": start});
    completed(
        fake,
        &call(fake, "POST", "/1.0/instances", Some(body)).await,
    )
    .await;
}

/// The seven envelope keys with their types.
pub(crate) fn assert_envelope(body: &Value) {
    let object = body.as_object().expect("envelope object");
    let keys: Vec<&str> = object.keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "type",
            "status",
            "status_code",
            "operation",
            "error_code",
            "error",
            "metadata"
        ],
        "{body}"
    );
    assert!(
        body["type"].is_string() && body["status"].is_string() && body["operation"].is_string()
    );
    assert!(
        body["status_code"].is_u64() && body["error_code"].is_u64() && body["error"].is_string()
    );
}

/// Which client certificate an HTTPS client presents.
pub(crate) enum ClientCert {
    /// The fake's trusted client certificate.
    Trusted,
    /// A certificate the fake does not know.
    Unknown,
    /// No certificate.
    None,
    /// This certificate and key (PEM).
    Own { cert: String, key: String },
}

/// An HTTPS client for the fake.
#[derive(Clone)]
pub(crate) struct Https {
    connector: TlsConnector,
    addr: std::net::SocketAddr,
}

fn pem_certs(pem: &str) -> Vec<CertificateDer<'static>> {
    rustls_pemfile::certs(&mut pem.as_bytes())
        .collect::<Result<_, _>>()
        .unwrap()
}

fn pem_key(pem: &str) -> PrivateKeyDer<'static> {
    rustls_pemfile::private_key(&mut pem.as_bytes())
        .unwrap()
        .unwrap()
}

impl Https {
    pub(crate) fn new(fake: &FakeIncus, cert: ClientCert, alpn_h2: bool) -> Self {
        let mut roots = rustls::RootCertStore::empty();
        for cert in pem_certs(&fake.server_cert_pem()) {
            roots.add(cert).unwrap();
        }
        let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
        let mut config = match cert {
            ClientCert::Trusted => builder
                .with_client_auth_cert(
                    pem_certs(&fake.client_cert_pem()),
                    pem_key(&fake.client_key_pem()),
                )
                .unwrap(),
            ClientCert::Unknown => {
                let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
                let cert = rcgen::CertificateParams::new(Vec::<String>::new())
                    .unwrap()
                    .self_signed(&key)
                    .unwrap();
                builder
                    .with_client_auth_cert(pem_certs(&cert.pem()), pem_key(&key.serialize_pem()))
                    .unwrap()
            }
            ClientCert::None => builder.with_no_client_auth(),
            ClientCert::Own { cert, key } => builder
                .with_client_auth_cert(pem_certs(&cert), pem_key(&key))
                .unwrap(),
        };
        config.alpn_protocols = if alpn_h2 {
            vec![b"h2".to_vec()]
        } else {
            vec![b"http/1.1".to_vec()]
        };
        Self {
            connector: TlsConnector::from(Arc::new(config)),
            addr: fake.https_address().expect("https on"),
        }
    }

    /// The same client for another address (a cluster member's).
    pub(crate) fn at(self, addr: std::net::SocketAddr) -> Self {
        Self { addr, ..self }
    }

    pub(crate) async fn connect(&self) -> TlsStream<TcpStream> {
        let tcp = TcpStream::connect(self.addr).await.unwrap();
        let name = ServerName::try_from("127.0.0.1").unwrap();
        self.connector
            .connect(name, tcp)
            .await
            .expect("TLS handshake")
    }

    /// One request on a fresh connection (HTTP/1.1 or h2 per the ALPN offered); the answer's
    /// HTTP version in the header `x-test-version`.
    pub(crate) async fn request(&self, method: &str, path: &str, body: Option<Value>) -> Reply {
        let tls = self.connect().await;
        let h2 = tls.get_ref().1.alpn_protocol() == Some(b"h2");
        if !h2 {
            // HTTP/1.1 needs a Host header (the daemon's Go server refuses a request without
            // one): the shared client gives one.
            let mut connection = client::Connection::over(tls).await.unwrap();
            let reply = connection
                .send(request(
                    method,
                    path,
                    body.as_ref(),
                    &[("host", "127.0.0.1")],
                ))
                .await
                .unwrap();
            let mut headers = reply.headers().clone();
            headers.insert("x-test-version", "HTTP/1.1".parse().unwrap());
            return Reply::new(reply.status(), headers, reply.bytes().clone());
        }
        // h2 carries the authority instead of a Host header.
        let uri: http::Uri = format!("https://127.0.0.1{path}").parse().unwrap();
        let mut builder = http::Request::builder()
            .method(Method::from_bytes(method.as_bytes()).unwrap())
            .uri(uri);
        if body.is_some() {
            builder = builder.header("content-type", "application/json");
        }
        let bytes = body
            .map(|b| Bytes::from(serde_json::to_vec(&b).unwrap()))
            .unwrap_or_default();
        let req = builder.body(Full::new(bytes)).unwrap();
        let (mut sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls))
                .await
                .unwrap();
        tokio::spawn(conn);
        let resp = sender.send_request(req).await.unwrap();
        let version = resp.version();
        let status = resp.status().as_u16();
        let mut headers = resp.headers().clone();
        let raw = resp.into_body().collect().await.expect("body").to_bytes();
        headers.insert("x-test-version", format!("{version:?}").parse().unwrap());
        Reply::new(status, headers, raw)
    }
}

/// An exec websocket over the Unix socket.
pub(crate) type UnixWs = tokio_tungstenite::WebSocketStream<UnixStream>;

/// Connects one exec fd's websocket over the Unix socket.
pub(crate) async fn ws_unix(fake: &FakeIncus, op_id: &str, secret: &str) -> UnixWs {
    let stream = UnixStream::connect(fake.unix_socket()).await.unwrap();
    let url = format!("ws://unix.socket/1.0/operations/{op_id}/websocket?secret={secret}");
    let (ws, resp) = tokio_tungstenite::client_async(url, stream)
        .await
        .expect("websocket upgrade");
    assert_eq!(resp.status(), 101);
    ws
}

/// Everything a socket receives until the server ends it: (data bytes, text frames, pings).
pub(crate) async fn drain<S>(
    ws: &mut tokio_tungstenite::WebSocketStream<S>,
) -> (Vec<u8>, Vec<String>, usize)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    let (mut data, mut texts, mut pings) = (Vec::new(), Vec::new(), 0);
    while let Ok(Some(msg)) = tokio::time::timeout(Duration::from_secs(10), ws.next()).await {
        match msg {
            Ok(Message::Binary(b)) => data.extend_from_slice(&b),
            Ok(Message::Text(t)) => texts.push(t.to_string()),
            Ok(Message::Ping(_)) => pings += 1,
            Ok(other) => eprintln!("drain: other frame {other:?}"),
            Err(e) => {
                eprintln!("drain: error {e}");
                break;
            }
        }
    }
    (data, texts, pings)
}

/// Reads until the peer closes the connection (or a read fails); `None` if it is still open
/// after `limit`.
pub(crate) async fn read_to_close<S: tokio::io::AsyncRead + Unpin>(
    stream: &mut S,
    limit: std::time::Duration,
) -> Option<Vec<u8>> {
    use tokio::io::AsyncReadExt;
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let read = async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => out.extend_from_slice(&buf[..n]),
            }
        }
    };
    tokio::time::timeout(limit, read).await.ok()?;
    Some(out)
}

/// [`read_to_close`] as (lossy) text.
pub(crate) async fn read_until_close<S: tokio::io::AsyncRead + Unpin>(
    stream: &mut S,
    limit: std::time::Duration,
) -> Option<String> {
    let out = read_to_close(stream, limit).await?;
    Some(String::from_utf8_lossy(&out).into_owned())
}

/// A Unix connection to `socket` upgraded to SFTP by `GET path` with `Upgrade: sftp` (an
/// instance's or a custom volume's `…/sftp`), ready for an SFTP client.
pub(crate) async fn sftp_upgrade(socket: &std::path::Path, path: &str) -> UnixStream {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = UnixStream::connect(socket).await.expect("connects");
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: unix.socket\r\nUpgrade: sftp\r\nConnection: Upgrade\r\n\r\n"
    );
    stream
        .write_all(request.as_bytes())
        .await
        .expect("request sent");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut byte)).await;
        assert!(matches!(read, Ok(Ok(1))), "the upgrade answer: {head:?}");
        head.push(byte[0]);
    }
    assert!(
        head.starts_with(b"HTTP/1.1 101"),
        "{}",
        String::from_utf8_lossy(&head)
    );
    stream
}
