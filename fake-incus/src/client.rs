//! How to ask the fake (or any Incus): a [`Request`], its [`Reply`], and a plain HTTP/1.1
//! client over a socket for the tests that need one ([`send`], [`Connection`]).
//!
//! [`crate::FakeIncus::call`] answers a [`Request`] in process, with no socket; the same
//! [`Reply`] comes back from a real socket through [`send`] (the fake's, a cluster member's or
//! a real daemon's Unix socket) or a [`Connection`] over any stream (TLS included), so that a
//! test's assertions ([`assert_native_error`]) read the same either way.

use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One request: method, path (with its query), headers and body.
///
/// ```
/// use fake_incus::Request;
/// let create = Request::post("/1.0/instances?project=p1")
///     .json(&serde_json::json!({"name": "c1", "source": {"type": "none"}}));
/// assert_eq!((create.method(), create.path()), ("POST", "/1.0/instances?project=p1"));
/// ```
#[derive(Debug, Clone)]
pub struct Request {
    method: String,
    path: String,
    headers: Vec<(String, String)>,
    body: Bytes,
    member: Option<String>,
}

impl Request {
    /// A request with any method (`GET`, `PATCH`, `PROPFIND`, ...) for `path` (a path with its
    /// query, from `/`).
    pub fn new(method: &str, path: &str) -> Self {
        Self {
            method: method.to_string(),
            path: path.to_string(),
            headers: Vec::new(),
            body: Bytes::new(),
            member: None,
        }
    }
    /// `GET path`.
    pub fn get(path: &str) -> Self {
        Self::new("GET", path)
    }
    /// `POST path`.
    pub fn post(path: &str) -> Self {
        Self::new("POST", path)
    }
    /// `PUT path`.
    pub fn put(path: &str) -> Self {
        Self::new("PUT", path)
    }
    /// `PATCH path`.
    pub fn patch(path: &str) -> Self {
        Self::new("PATCH", path)
    }
    /// `DELETE path`.
    pub fn delete(path: &str) -> Self {
        Self::new("DELETE", path)
    }
    /// The body: `value` as JSON, with `Content-Type: application/json`.
    #[must_use]
    pub fn json(self, value: &Value) -> Self {
        self.header("content-type", "application/json")
            .body(value.to_string())
    }
    /// The body, as bytes.
    #[must_use]
    pub fn body(mut self, body: impl Into<Bytes>) -> Self {
        self.body = body.into();
        self
    }
    /// One more header.
    #[must_use]
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }
    /// On a fake cluster, the member whose listener takes the request (by default the first);
    /// ignored by [`send`] and [`Connection`], whose socket names the member.
    #[must_use]
    pub fn through(mut self, member: &str) -> Self {
        self.member = Some(member.to_string());
        self
    }
    /// The method.
    pub fn method(&self) -> &str {
        &self.method
    }
    /// The path, with its query.
    pub fn path(&self) -> &str {
        &self.path
    }
    /// The member given by [`Request::through`].
    pub(crate) fn member(&self) -> Option<&str> {
        self.member.as_deref()
    }

    /// The HTTP/1.1 request, with a `Host` header unless one was given; `Err` names what does
    /// not make a valid request (method, path or a header).
    pub(crate) fn to_http<B>(
        &self,
        body: impl FnOnce(Bytes) -> B,
    ) -> Result<http::Request<B>, ClientError> {
        let method = Method::from_bytes(self.method.as_bytes())
            .map_err(|_| ClientError::Invalid(format!("method {:?}", self.method)))?;
        let uri: http::Uri = self
            .path
            .parse()
            .map_err(|_| ClientError::Invalid(format!("path {:?}", self.path)))?;
        let mut headers = HeaderMap::new();
        for (name, value) in &self.headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|_| ClientError::Invalid(format!("header name {name:?}")))?;
            let value = HeaderValue::from_str(value)
                .map_err(|_| ClientError::Invalid(format!("header value {value:?}")))?;
            headers.append(name, value);
        }
        if !headers.contains_key(http::header::HOST) {
            headers.insert(http::header::HOST, HeaderValue::from_static("incus"));
        }
        let mut request = http::Request::new(body(self.body.clone()));
        *request.method_mut() = method;
        *request.uri_mut() = uri;
        *request.headers_mut() = headers;
        Ok(request)
    }
}

impl<B: Into<Bytes>> From<http::Request<B>> for Request {
    fn from(request: http::Request<B>) -> Self {
        let (parts, body) = request.into_parts();
        Self {
            method: parts.method.to_string(),
            path: parts
                .uri
                .path_and_query()
                .map_or_else(|| parts.uri.path().to_string(), ToString::to_string),
            headers: parts
                .headers
                .iter()
                .map(|(k, v)| (k.to_string(), String::from_utf8_lossy(v.as_bytes()).into()))
                .collect(),
            body: body.into(),
            member: None,
        }
    }
}

/// One answer: status, headers and body, with the body parsed as JSON when it is JSON.
#[derive(Debug, Clone)]
pub struct Reply {
    status: u16,
    headers: HeaderMap,
    bytes: Bytes,
    json: Value,
}

impl Reply {
    /// An answer read from anywhere (its JSON parsed from `bytes`; `Null` when not JSON).
    pub fn new(status: u16, headers: HeaderMap, bytes: Bytes) -> Self {
        let json = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        Self {
            status,
            headers,
            bytes,
            json,
        }
    }
    /// The HTTP status (0 when the connection was closed or reset without an answer, as a
    /// fault may do).
    pub fn status(&self) -> u16 {
        self.status
    }
    /// Whether the connection ended without an answer.
    pub fn dropped(&self) -> bool {
        self.status == 0
    }
    /// The body as JSON (`Null` when it is not JSON).
    pub fn json(&self) -> &Value {
        &self.json
    }
    /// The envelope's `metadata`.
    pub fn metadata(&self) -> &Value {
        &self.json["metadata"]
    }
    /// The body's bytes.
    pub fn bytes(&self) -> &Bytes {
        &self.bytes
    }
    /// The headers.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }
    /// A header's value, when it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }
    /// The operation URL of an async answer.
    pub fn operation(&self) -> Option<&str> {
        self.json["operation"].as_str().filter(|u| !u.is_empty())
    }
    /// `(error_code, error)` of an Incus error envelope (also the one a wait on a failed
    /// operation answers inside its HTTP 200); `None` for any other answer.
    pub fn native_error(&self) -> Option<(u16, &str)> {
        if self.json["type"] != "error" {
            return None;
        }
        let code = u16::try_from(self.json["error_code"].as_u64()?).ok()?;
        Some((code, self.json["error"].as_str()?))
    }
}

/// Asserts that `reply` is the Incus error envelope with `error_code` `status` and `error`
/// `text`; the panic shows the whole answer.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use fake_incus::{assert_native_error, FakeIncus, Request};
/// let fake = FakeIncus::builder().start().await?;
/// let reply = fake.call(Request::get("/1.0/instances/nope")).await;
/// assert_native_error(&reply, 404, "Failed to fetch instance \"nope\" in project \"default\": Instance not found");
/// # Ok(()) }
/// ```
#[track_caller]
pub fn assert_native_error(reply: &Reply, status: u16, text: &str) {
    assert_eq!(
        reply.native_error(),
        Some((status, text)),
        "expected the Incus error {status} {text:?}; the answer was {} {}",
        reply.status,
        String::from_utf8_lossy(&reply.bytes)
    );
}

/// What keeps a request sent over a socket from being answered.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The request cannot be written: an invalid method, path or header.
    #[error("invalid request: {0}")]
    Invalid(String),
    /// The socket could not be reached.
    #[error("connecting to {socket}: {source}")]
    Connect {
        /// The socket's path.
        socket: String,
        /// Why.
        source: std::io::Error,
    },
    /// The HTTP exchange failed (handshake, send, or reading the answer).
    #[error("HTTP: {0}")]
    Http(String),
}

/// One HTTP/1.1 connection over any stream (a Unix socket, TCP, TLS), for several requests in
/// turn (keep-alive).
pub struct Connection {
    sender: hyper::client::conn::http1::SendRequest<Full<Bytes>>,
    driver: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection").finish_non_exhaustive()
    }
}

impl Connection {
    /// Connects to a Unix socket.
    pub async fn unix(socket: &Path) -> Result<Self, ClientError> {
        let stream = tokio::net::UnixStream::connect(socket)
            .await
            .map_err(|source| ClientError::Connect {
                socket: socket.display().to_string(),
                source,
            })?;
        Self::over(stream).await
    }

    /// Speaks HTTP/1.1 over `stream` (already connected; a TLS stream after its handshake).
    pub async fn over<S>(stream: S) -> Result<Self, ClientError>
    where
        S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| ClientError::Http(e.to_string()))?;
        let driver = tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(Self { sender, driver })
    }

    /// Sends one request and reads the whole answer.
    pub async fn send(&mut self, request: impl Into<Request>) -> Result<Reply, ClientError> {
        let request = request.into().to_http(Full::new)?;
        self.sender
            .ready()
            .await
            .map_err(|e| ClientError::Http(e.to_string()))?;
        let response = self
            .sender
            .send_request(request)
            .await
            .map_err(|e| ClientError::Http(e.to_string()))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| ClientError::Http(e.to_string()))?
            .to_bytes();
        Ok(Reply::new(status, headers, bytes))
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

/// Sends one request on a fresh connection to a Unix socket and reads the whole answer.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use fake_incus::{client, FakeIncus, Request};
/// let fake = FakeIncus::builder().start().await?;
/// let reply = client::send(fake.unix_socket(), Request::get("/1.0")).await?;
/// assert_eq!(reply.status(), 200);
/// assert_eq!(fake.requests("GET", "/1.0")[0].listener, fake_incus::Listener::Unix);
/// # Ok(()) }
/// ```
pub async fn send(socket: &Path, request: impl Into<Request>) -> Result<Reply, ClientError> {
    Connection::unix(socket).await?.send(request).await
}

/// An Incus to reach (to capture it, or to record its traffic).
#[derive(Clone)]
#[non_exhaustive]
pub enum Source {
    /// Its Unix socket.
    Unix(PathBuf),
    /// Its HTTPS listener, with mutual TLS.
    Https {
        /// `https://host[:port]` (port 8443 when omitted).
        url: String,
        /// The certificate presented (PEM), trusted by the server.
        client_cert_pem: String,
        /// Its private key (PEM).
        client_key_pem: String,
        /// The server's certificate, pinned (PEM).
        server_cert_pem: String,
    },
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Unix(path) => f.debug_tuple("Unix").field(path).finish(),
            Self::Https { url, .. } => f
                .debug_struct("Https")
                .field("url", url)
                .finish_non_exhaustive(),
        }
    }
}

/// A stream to an Incus: its Unix socket, or its HTTPS listener after the TLS handshake.
pub(crate) trait Stream:
    tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send
{
}

impl<T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send> Stream for T {}

/// Opens connections to a [`Source`]: its TLS client configuration (the client certificate
/// presented, the server certificate pinned) is built once. Capture reads its source and the
/// recorder reaches its upstream with this.
#[derive(Clone)]
pub(crate) struct Dialer {
    source: Source,
    tls: Option<Arc<rustls::ClientConfig>>,
}

impl Dialer {
    /// Checks the source's credentials; an unusable certificate or key is refused here.
    pub(crate) fn new(source: &Source) -> Result<Self, String> {
        let tls = match source {
            Source::Unix(_) => None,
            Source::Https {
                client_cert_pem,
                client_key_pem,
                server_cert_pem,
                ..
            } => Some(
                incus_credentials::tls::client_config(
                    client_cert_pem,
                    client_key_pem,
                    server_cert_pem,
                )
                .map_err(|e| e.to_string())?,
            ),
        };
        Ok(Self {
            source: source.clone(),
            tls,
        })
    }

    /// The source, as a transcript or a message names it: the socket's path or the URL.
    pub(crate) fn name(&self) -> String {
        match &self.source {
            Source::Unix(socket) => socket.display().to_string(),
            Source::Https { url, .. } => url.clone(),
        }
    }

    /// A fresh connection (after the TLS handshake, for HTTPS).
    pub(crate) async fn open(&self) -> Result<Box<dyn Stream>, String> {
        match (&self.source, &self.tls) {
            (Source::Https { url, .. }, Some(tls)) => {
                let authority = url
                    .strip_prefix("https://")
                    .ok_or_else(|| format!("{url}: not an https:// URL"))?
                    .trim_end_matches('/');
                let (host, port) = match authority.rsplit_once(':') {
                    Some((host, port)) if !host.ends_with(']') || authority.starts_with('[') => (
                        host,
                        port.parse::<u16>().map_err(|e| format!("{url}: {e}"))?,
                    ),
                    _ => (authority, 8443),
                };
                let host = host.trim_start_matches('[').trim_end_matches(']');
                let tcp = tokio::net::TcpStream::connect((host, port))
                    .await
                    .map_err(|e| format!("{url}: {e}"))?;
                // The server certificate is pinned: the name only fills the handshake.
                let name = rustls_pki_types::ServerName::try_from(host.to_owned())
                    .map_err(|e| format!("{url}: {e}"))?;
                let stream = tokio_rustls::TlsConnector::from(tls.clone())
                    .connect(name, tcp)
                    .await
                    .map_err(|e| {
                        let invalid = e.get_ref().and_then(|inner| inner.downcast_ref());
                        match invalid {
                            Some(rustls::Error::InvalidCertificate(_)) => format!(
                                "{url}: the server's certificate is not the pinned one ({e})"
                            ),
                            _ => format!("{url}: {e}"),
                        }
                    })?;
                Ok(Box::new(stream))
            }
            (Source::Unix(socket), _) => tokio::net::UnixStream::connect(socket)
                .await
                .map(|stream| Box::new(stream) as Box<dyn Stream>)
                .map_err(|e| format!("connecting to {}: {e}", socket.display())),
            (Source::Https { url, .. }, None) => Err(format!("{url}: no TLS configuration")),
        }
    }
}
