//! Byte streams to Incus and one bounded HTTP/1.1 exchange over them.
//!
//! Every request gets a fresh connection (a Unix socket through hyperlocal's connector, or TCP
//! plus rustls with the pinned server certificate) and exactly one connection attempt: there is
//! no pool, so nothing can be retried or resent behind the caller's back. The connect phase
//! (including the TLS handshake) sends no request bytes; once the request is handed to hyper, a
//! failure means the request may have been sent.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http::{header, Method, Request, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::time::Instant;
use tokio_rustls::client::TlsStream;
use tower_service::Service;

use super::connection::{Connection, HttpsTarget, Target};
use super::error::ClientError;

/// A connected byte stream to Incus: the Unix socket or TLS over TCP.
pub(crate) enum Stream {
    Unix(hyperlocal::UnixStream),
    Tls(Box<TlsStream<TcpStream>>),
}

/// Opens one connection; nothing is sent but the TLS handshake.
pub(crate) async fn open(connection: &Connection) -> Result<Stream, ClientError> {
    match connection.target() {
        Target::Unix(path) => {
            let uri: hyper::Uri = hyperlocal::Uri::new(path, "/").into();
            let stream =
                hyperlocal::UnixConnector
                    .call(uri)
                    .await
                    .map_err(|e| ClientError::Connect {
                        message: format!("{}: {e}", path.display()),
                    })?;
            Ok(Stream::Unix(stream))
        }
        Target::Https(https) => open_tls(https).await,
    }
}

async fn open_tls(https: &HttpsTarget) -> Result<Stream, ClientError> {
    let tcp = TcpStream::connect((https.host.as_str(), https.port))
        .await
        .map_err(|e| ClientError::Connect {
            message: format!("{}:{}: {e}", https.host, https.port),
        })?;
    let _ = tcp.set_nodelay(true);
    let tls = tokio_rustls::TlsConnector::from(https.tls.clone())
        .connect(https.server_name.clone(), tcp)
        .await
        .map_err(|e| ClientError::Tls {
            message: e.to_string(),
        })?;
    Ok(Stream::Tls(Box::new(tls)))
}

/// One native request, fully described.
pub(crate) struct NativeRequest<'a> {
    pub(crate) method: Method,
    /// Origin-form target: path and query, already encoded.
    pub(crate) target: String,
    pub(crate) body: Option<Vec<u8>>,
    pub(crate) if_match: Option<&'a str>,
}

/// The raw answer: status, ETag header and the whole body.
pub(crate) struct RawResponse {
    pub(crate) status: StatusCode,
    pub(crate) etag: Option<String>,
    pub(crate) body: Bytes,
}

/// Sends `request` on a fresh connection and reads the whole answer, all before `deadline`.
pub(crate) async fn exchange(
    connection: &Connection,
    request: NativeRequest<'_>,
    deadline: Instant,
) -> Result<RawResponse, ClientError> {
    let timeout = connection.timeout();
    let elapsed = |may_have_been_sent| ClientError::Timeout {
        timeout,
        may_have_been_sent,
    };
    let http_request = build(connection, request)?;
    let stream = tokio::time::timeout_at(deadline, open(connection))
        .await
        .map_err(|_| elapsed(false))??;
    tokio::time::timeout_at(deadline, send(connection, stream, http_request))
        .await
        .map_err(|_| elapsed(true))?
}

fn build(
    connection: &Connection,
    request: NativeRequest<'_>,
) -> Result<Request<Full<Bytes>>, ClientError> {
    let mut builder = Request::builder()
        .method(request.method)
        .uri(&request.target)
        .header(header::HOST, connection.authority())
        .header(header::USER_AGENT, "incus-operations");
    if let Some(etag) = request.if_match {
        builder = builder.header(header::IF_MATCH, etag);
    }
    let body = match request.body {
        Some(body) => {
            builder = builder.header(header::CONTENT_TYPE, "application/json");
            Full::new(Bytes::from(body))
        }
        None => Full::new(Bytes::new()),
    };
    builder.body(body).map_err(|e| ClientError::InvalidRequest {
        message: e.to_string(),
    })
}

/// Writes the request and reads the answer; every failure here may follow a sent request.
async fn send(
    connection: &Connection,
    stream: Stream,
    request: Request<Full<Bytes>>,
) -> Result<RawResponse, ClientError> {
    let (mut sender, driver) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(ClientError::transport_after_send)?;
    let _driver = AbortOnDrop(tokio::spawn(driver));
    let response = sender
        .send_request(request)
        .await
        .map_err(ClientError::transport_after_send)?;
    let status = response.status();
    let etag = response
        .headers()
        .get(header::ETAG)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let limit = connection.max_stream_bytes();
    let body = Limited::new(
        response.into_body(),
        usize::try_from(limit).unwrap_or(usize::MAX),
    )
    .collect()
    .await
    .map_err(|e| {
        if e.is::<http_body_util::LengthLimitError>() {
            ClientError::ResponseTooLarge { limit }
        } else {
            ClientError::transport_after_send(e)
        }
    })?
    .to_bytes();
    Ok(RawResponse { status, etag, body })
}

/// Aborts a spawned task when dropped, so no connection outlives its request.
pub(crate) struct AbortOnDrop<T>(pub(crate) tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Unix(s) => Pin::new(s).poll_read(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Self::Unix(s) => Pin::new(s).poll_write(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Unix(s) => Pin::new(s).poll_flush(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Self::Unix(s) => Pin::new(s).poll_shutdown(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}
