//! Listeners: each accepted connection is served HTTP (with upgrades) through
//! [`crate::api::serve`] until it ends or the fake shuts down, in a task of its own; on the Unix
//! socket, one connection at a time is served by the accept loop's own task instead (`unix.rs`
//! says why), and a panic there ends that connection only, as a task's would.
//!
//! Request bodies: an untrusted HTTPS client's body is never read (its request can only be
//! refused, as the daemon refuses it before any handler reads), except a trust token's
//! redemption (`POST /1.0/certificates`, at most [`REDEEM_LIMIT`] bytes); a trusted body is read up to
//! [`BODY_LIMIT`] bytes. A longer one (announced by `Content-Length` or found while reading a
//! chunked body) is answered 413 and the connection is closed, so no client can make the fake
//! hold more than that per request. The real daemon has no such bound: its JSON decoder keeps
//! reading while one JSON value lasts, which is what lets a client grow its memory at will.
//!
//! Connection time limits: a connection with no request in flight is closed once it has sent
//! nothing for the idle timeout (30 s by default, the daemon's `IdleTimeout`; unlike the daemon,
//! also before the first request), or once a request head it started has not been completed
//! within the header read timeout (10 s by default; the daemon has none). A request in flight
//! (its body being read, or its answer being streamed, like an operation wait or the events
//! stream) is never cut, and an upgraded websocket leaves these limits behind.
//!
//! Accept errors (file descriptors exhausted, most often) make the accept loops back off, from
//! 5 ms doubling up to 1 s, as Go's `http.Server` does, instead of spinning.

pub(crate) mod https;
pub(crate) mod unix;

use crate::api::{self, Outcome, Peer};
use crate::app::App;
use crate::client::Reply;
use crate::envelope::{ApiError, Body};
use crate::journal::Listener;
use crate::line::IncusLine;
use bytes::Bytes;
use futures_util::future::Either;
use futures_util::TryFutureExt;
use http::{header, HeaderValue, Response, Version};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

/// The connection was dropped on purpose (a fault).
#[derive(Debug, thiserror::Error)]
#[error("connection dropped by a fault rule")]
struct Dropped;

/// Most bytes of one request body the fake reads (16 MiB); a longer body gets a 413.
pub(crate) const BODY_LIMIT: usize = 16 << 20;

/// Most bytes of an untrusted client's trust-token redemption (a token is a few hundred).
pub(crate) const REDEEM_LIMIT: usize = 64 << 10;

/// How much of the body a request's handler may read (`None`: none): every Unix peer's and
/// trusted HTTPS peers' up to [`BODY_LIMIT`] (the same decision [`api::serve`] makes per
/// request), and an untrusted HTTPS peer's `POST /1.0/certificates` (a trust token) up to
/// [`REDEEM_LIMIT`].
fn body_limit(app: &App, peer: &Peer, parts: &http::request::Parts) -> Option<usize> {
    let trusted = match (&peer.listener, &peer.fingerprint) {
        (Listener::Https, Some(fp)) => app.identity.is_trusted(fp),
        (Listener::Https, None) => false,
        _ => true,
    };
    let redeeming = parts.method == http::Method::POST
        && parts.uri.path().trim_end_matches('/') == "/1.0/certificates";
    match (trusted, redeeming) {
        (true, _) => Some(BODY_LIMIT),
        (false, true) => Some(REDEEM_LIMIT),
        (false, false) => None,
    }
}

/// Why a body was not read.
enum BodyError {
    /// Longer than [`BODY_LIMIT`].
    TooLarge,
    /// The chunked framing was broken after these bytes, with the daemon's words for it.
    BadChunk(Bytes, &'static str),
    /// The connection failed.
    Broken,
}

/// Reads a body of at most `limit` bytes; a `Content-Length` above it is refused
/// without reading a byte.
async fn read_body(
    parts: &http::request::Parts,
    body: Incoming,
    limit: usize,
) -> Result<Bytes, BodyError> {
    let announced = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if announced.is_some_and(|len| len > limit as u64) {
        return Err(BodyError::TooLarge);
    }
    let mut body = body;
    let mut bytes = bytes::BytesMut::new();
    while let Some(frame) = body.frame().await {
        match frame {
            Ok(frame) => {
                if let Some(data) = frame.data_ref() {
                    if bytes.len() + data.len() > limit {
                        return Err(BodyError::TooLarge);
                    }
                    bytes.extend_from_slice(data);
                }
            }
            Err(err) => {
                let text = format!("{err:?}").to_ascii_lowercase();
                if !text.contains("chunk") {
                    return Err(BodyError::Broken);
                }
                // Go's chunked reader: a size over 64 bits is "too large", any other bad
                // size line "invalid byte".
                let words = if text.contains("overflow") || text.contains("too large") {
                    "http chunk length too large"
                } else {
                    "invalid byte in chunk length"
                };
                return Err(BodyError::BadChunk(bytes.freeze(), words));
            }
        }
    }
    Ok(bytes.freeze())
}

/// Whether `bytes` starts with one complete JSON value (what the daemon's decoder needs
/// before a broken body can no longer matter).
fn holds_a_json_value(bytes: &[u8]) -> bool {
    matches!(
        serde_json::Deserializer::from_slice(bytes)
            .into_iter::<serde::de::IgnoredAny>()
            .next(),
        Some(Ok(_))
    )
}

/// A refusal as Go's `net/http` writes it itself (plain text, connection closed).
fn refused(status: http::StatusCode, why: Option<&str>) -> Response<Body> {
    let refusal = crate::go::net_http::Refusal { status, why };
    let mut response = Response::new(crate::envelope::full(refusal.body()));
    *response.status_mut() = status;
    if let Ok(phrase) = hyper::ext::ReasonPhrase::try_from(refusal.reason().into_bytes()) {
        response.extensions_mut().insert(phrase);
    }
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

/// What Go's server or the daemon's top level answers before any route: `OPTIONS` (200,
/// empty), HTTP/1.1 without exactly one `Host`, transfer codings other than `chunked` (501),
/// and an `Expect` other than `100-continue` (417).
fn before_routing(parts: &http::request::Parts) -> Option<Response<Body>> {
    if parts.method == http::Method::OPTIONS {
        return Some(Response::new(crate::envelope::full(Bytes::new())));
    }
    if parts.version >= Version::HTTP_2 {
        return None;
    }
    let hosts = parts.headers.get_all(header::HOST).iter().count();
    if parts.version == Version::HTTP_11 && hosts == 0 {
        return Some(refused(
            http::StatusCode::BAD_REQUEST,
            Some("missing required Host header"),
        ));
    }
    if hosts > 1 {
        return Some(refused(http::StatusCode::BAD_REQUEST, None));
    }
    let codings: Vec<&[u8]> = parts
        .headers
        .get_all(header::TRANSFER_ENCODING)
        .iter()
        .map(HeaderValue::as_bytes)
        .collect();
    if !codings.is_empty()
        && (codings.len() > 1 || !codings[0].trim_ascii().eq_ignore_ascii_case(b"chunked"))
    {
        return Some(refused(
            http::StatusCode::NOT_IMPLEMENTED,
            Some("Unsupported transfer encoding"),
        ));
    }
    let expect = parts.headers.get(header::EXPECT).map(HeaderValue::as_bytes);
    if expect.is_some_and(|e| !e.eq_ignore_ascii_case(b"100-continue")) {
        let mut response = Response::new(crate::envelope::full(Bytes::new()));
        *response.status_mut() = http::StatusCode::EXPECTATION_FAILED;
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return Some(response);
    }
    None
}

/// The daemon's answers where the fake's router has none: `/` answers every method, and a
/// method that is none of the daemon's (`FOO`, `get`) is `Method "FOO" not found` (404)
/// rather than 501.
fn after_routing(
    line: IncusLine,
    method: &http::Method,
    root: bool,
    response: Response<Body>,
) -> Response<Body> {
    if response.status() != http::StatusCode::NOT_IMPLEMENTED {
        return response;
    }
    const KNOWN: &[&str] = &["GET", "HEAD", "PUT", "POST", "DELETE", "PATCH"];
    if root {
        return crate::envelope::sync(serde_json::json!(["/1.0"]));
    }
    if KNOWN.contains(&method.as_str()) {
        return response;
    }
    ApiError::new(404, format!("Method {:?} not found", method.as_str())).into_response(line)
}

/// The 413 for a body over [`BODY_LIMIT`], in the error envelope; HTTP/1 connections are
/// closed after it, so the rest of the body is never read.
fn too_large(line: IncusLine, version: Version) -> Response<Body> {
    let mut response = ApiError::new(413, "http: request body too large").into_response(line);
    if version < Version::HTTP_2 {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// What a connection did, for its time limits. Times are milliseconds since `start`.
struct Activity {
    start: Instant,
    /// Requests whose answer is not yet fully sent.
    in_flight: AtomicUsize,
    /// When the last request in flight ended (or the connection opened).
    idle_since: AtomicU64,
    /// When the first byte after `idle_since` arrived; `u64::MAX`: none yet.
    first_byte: AtomicU64,
    /// HTTP/2: no request heads to time, only idleness.
    h2: AtomicBool,
    /// A request reached the service (after that, every answer is the fake's own).
    served: AtomicBool,
}

impl Activity {
    fn new() -> Self {
        Self {
            start: Instant::now(),
            in_flight: AtomicUsize::new(0),
            idle_since: AtomicU64::new(0),
            first_byte: AtomicU64::new(u64::MAX),
            h2: AtomicBool::new(false),
            served: AtomicBool::new(false),
        }
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn received(&self, bytes: &[u8], first_read: bool) {
        if first_read && bytes.starts_with(b"PRI * HTTP/2.0") {
            self.h2.store(true, Ordering::SeqCst);
        }
        if self.in_flight.load(Ordering::SeqCst) == 0 {
            let now = self.now_ms();
            let _ =
                self.first_byte
                    .compare_exchange(u64::MAX, now, Ordering::SeqCst, Ordering::SeqCst);
        }
    }

    fn request_started(self: &Arc<Self>) -> InFlight {
        self.served.store(true, Ordering::SeqCst);
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(Arc::clone(self))
    }

    /// When the connection must be closed, if nothing happens before; `None` while busy.
    fn deadline(&self, limits: &Limits) -> Option<Instant> {
        if self.in_flight.load(Ordering::SeqCst) > 0 {
            return None;
        }
        let first_byte = self.first_byte.load(Ordering::SeqCst);
        let (from, limit) = if first_byte != u64::MAX && !self.h2.load(Ordering::SeqCst) {
            (first_byte, limits.header)
        } else {
            (self.idle_since.load(Ordering::SeqCst), limits.idle)
        };
        Some(self.start + Duration::from_millis(from) + limit)
    }
}

/// A request in flight; dropped when its answer has been sent (or abandoned).
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle_since.store(self.0.now_ms(), Ordering::SeqCst);
            self.0.first_byte.store(u64::MAX, Ordering::SeqCst);
        }
    }
}

/// The connection time limits.
struct Limits {
    header: Duration,
    idle: Duration,
}

/// Resolves when the connection has been idle, or slow with a request head, for too long.
async fn watchdog(activity: Arc<Activity>, limits: Limits) {
    let step = limits
        .header
        .min(limits.idle)
        .max(Duration::from_millis(10));
    loop {
        let now = Instant::now();
        match activity.deadline(&limits) {
            Some(deadline) if deadline <= now => return,
            Some(deadline) => tokio::time::sleep_until(deadline.min(now + step)).await,
            None => tokio::time::sleep(step).await,
        }
    }
}

/// A connection's stream, noting what arrives in its [`Activity`]. It also gives hyper's own
/// answers to unparsable first requests (an empty 400 or 431) the form Go's `net/http` writes:
/// plain text, `Connection: close`, and Go's status for what was wrong (505 for a version that
/// is not 1.x, 501 for a transfer coding other than chunked, the reason for a bad header name).
struct Watched<IO> {
    inner: IO,
    activity: Arc<Activity>,
    /// HTTP/1 only (the Unix socket): an HTTP/2 preface gets the daemon's answer to it.
    h1_only: bool,
    /// The Incus line whose answer that is.
    line: IncusLine,
    /// The preface's answer is queued: reads end (after it is written), so hyper closes.
    preface_answered: bool,
    first_read: bool,
    /// The first bytes received, while no request has been served (at most [`HEAD_KEPT`]).
    head: Vec<u8>,
    /// Go's form of hyper's error answer, still to be written from this offset.
    pending: Option<(Vec<u8>, usize)>,
}

/// How much of a first request is kept to word a parse error.
const HEAD_KEPT: usize = 8192;

impl<IO> Watched<IO> {
    fn new(inner: IO, activity: Arc<Activity>, h1_only: bool, line: IncusLine) -> Self {
        Self {
            inner,
            activity,
            h1_only,
            line,
            preface_answered: false,
            first_read: true,
            head: Vec::new(),
            pending: None,
        }
    }

    /// Go's answer in place of hyper's parse-error answer `hyper_answer`, if it is one.
    fn parse_error_replacement(&self, hyper_answer: &[u8]) -> Option<Vec<u8>> {
        if self.activity.served.load(Ordering::SeqCst)
            || self.activity.h2.load(Ordering::SeqCst)
            || !hyper_answer.starts_with(b"HTTP/1.1 4") && !hyper_answer.starts_with(b"HTTP/1.1 5")
        {
            return None;
        }
        let refusal = if &hyper_answer[9..12] == b"431" {
            crate::go::net_http::Refusal {
                status: http::StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
                why: None,
            }
        } else {
            crate::go::net_http::unparsed_head(&self.head)
        };
        Some(refusal.http1())
    }
}

/// What the daemon answers on its Unix socket to an HTTP/2 connection preface: Go's server
/// reads `PRI * HTTP/2.0` as a request for `*`, which no route has, and closes the connection
/// after the top-level 404 (it speaks HTTP/2 only over TLS, where ALPN offers it).
fn h2_preface_answer(line: IncusLine) -> Vec<u8> {
    let body = ApiError::not_found().body_bytes(line);
    let head = format!(
        "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nX-Content-Type-Options: nosniff\r\nDate: {}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        crate::envelope::http_date(time::OffsetDateTime::now_utc()),
        body.len()
    );
    [head.into_bytes(), body].concat()
}

impl<IO: AsyncWrite + Unpin> Watched<IO> {
    /// Writes what is left of a replaced answer; `Ready(Ok)` once nothing is left.
    fn poll_pending(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        while let Some((bytes, at)) = &mut self.pending {
            let n = std::task::ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*at..]))?;
            if n == 0 {
                return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
            }
            *at += n;
            if *at == bytes.len() {
                self.pending = None;
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncRead for Watched<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.preface_answered {
            // The preface's answer is written before anything else, then input ends, so hyper
            // closes the connection.
            std::task::ready!(self.poll_pending(cx))?;
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = &polled {
            let new = &buf.filled()[before..];
            if self.first_read && self.h1_only && new.starts_with(b"PRI * HTTP/2.0\r\n") {
                buf.set_filled(before);
                self.first_read = false;
                self.preface_answered = true;
                self.pending = Some((h2_preface_answer(self.line), 0));
                std::task::ready!(self.poll_pending(cx))?;
                return Poll::Ready(Ok(()));
            }
            if !new.is_empty() {
                self.activity.received(new, self.first_read);
                self.first_read = false;
                if !self.activity.served.load(Ordering::SeqCst) && self.head.len() < HEAD_KEPT {
                    let room = HEAD_KEPT - self.head.len();
                    self.head.extend_from_slice(&new[..new.len().min(room)]);
                }
            }
        }
        polled
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Watched<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        std::task::ready!(self.poll_pending(cx))?;
        if let Some(replacement) = self.parse_error_replacement(buf) {
            self.pending = Some((replacement, 0));
            let _ = self.poll_pending(cx)?;
            return Poll::Ready(Ok(buf.len()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        std::task::ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        std::task::ready!(self.poll_pending(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        std::task::ready!(self.poll_pending(cx))?;
        if !self.activity.served.load(Ordering::SeqCst) {
            let joined: Vec<u8> = bufs.iter().flat_map(|b| b.iter().copied()).collect();
            if let Some(replacement) = self.parse_error_replacement(&joined) {
                self.pending = Some((replacement, 0));
                let _ = self.poll_pending(cx)?;
                return Poll::Ready(Ok(joined.len()));
            }
        }
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// Backs off after failed accepts: 5 ms, doubling up to 1 s, reset by a successful accept.
#[derive(Default)]
pub(crate) struct AcceptBackoff {
    delay: Option<Duration>,
}

impl AcceptBackoff {
    const FIRST: Duration = Duration::from_millis(5);
    const MAX: Duration = Duration::from_secs(1);

    /// A connection was accepted.
    pub(crate) fn accepted(&mut self) {
        self.delay = None;
    }

    /// The next pause after a failed accept.
    pub(crate) fn failed(&mut self) -> Duration {
        let delay = self.delay.map_or(Self::FIRST, |d| (d * 2).min(Self::MAX));
        self.delay = Some(delay);
        delay
    }

    /// Logs a failed accept and waits (or returns early on shutdown).
    pub(crate) async fn pause(&mut self, listener: &str, err: &std::io::Error, app: &App) {
        let delay = self.failed();
        tracing::warn!(error = %err, ?delay, "{listener} accept failed; backing off");
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            () = app.shutdown.cancelled() => {}
        }
    }
}

/// Serves one connection until it ends or the app shuts down. `reset` is set when a fault asks
/// for a reset, so the transport can end the connection abortively.
/// `shutdown` is the app's (or a cluster member's life, which ends with its death).
pub(crate) async fn serve_connection_until<IO>(
    app: Arc<App>,
    io: IO,
    peer: Peer,
    reset: Arc<AtomicBool>,
    shutdown: tokio_util::sync::CancellationToken,
) where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let limits = Limits {
        header: app.settings.header_read_timeout,
        idle: app.settings.idle_timeout,
    };
    let activity = Arc::new(Activity::new());
    // The daemon speaks HTTP/2 only over TLS (ALPN); on its Unix socket, HTTP/1.1 alone.
    let h1_only = peer.listener == Listener::Unix;
    let io = Watched::new(io, Arc::clone(&activity), h1_only, app.settings.line);
    let service_activity = Arc::clone(&activity);
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let app = Arc::clone(&app);
        let peer = peer.clone();
        let reset = Arc::clone(&reset);
        let in_flight = service_activity.request_started();
        async move {
            answer(app, peer, reset, req)
                .await
                .map(|response| response.map(|body| hold_until_sent(body, in_flight)))
        }
    });
    let builder = auto::Builder::new(TokioExecutor::new());
    let io = TokioIo::new(io);
    let connection = if h1_only {
        // hyper's HTTP/1 connection itself: hyper-util's `auto` builder first reads up to 24
        // bytes on its own to tell HTTP/2's preface from HTTP/1 (even when told HTTP/1 only), one
        // more system call and copy per connection (the preface is answered by `Watched`).
        Either::Left(
            hyper::server::conn::http1::Builder::new()
                .serve_connection(io, service)
                .with_upgrades()
                .map_err(Box::<dyn std::error::Error + Send + Sync>::from),
        )
    } else {
        Either::Right(builder.serve_connection_with_upgrades(io, service))
    };
    tokio::select! {
        result = connection => {
            if let Err(err) = result {
                tracing::debug!(error = %err, "connection ended with an error");
            }
        }
        () = watchdog(activity, limits) => {
            tracing::debug!("connection closed: idle or slow request head");
        }
        () = shutdown.cancelled() => {}
    }
}

/// The body, keeping the request counted in flight until hyper has sent (or dropped) it.
fn hold_until_sent(body: Body, in_flight: InFlight) -> Body {
    Held {
        inner: body,
        _in_flight: in_flight,
    }
    .boxed_unsync()
}

/// A response body and the request it answers, counted in flight while the body lives.
/// Size hints pass through, so a complete body keeps its `Content-Length`.
struct Held {
    inner: Body,
    _in_flight: InFlight,
}

impl hyper::body::Body for Held {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, std::io::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }
    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// Answers a request whose body was read already, with no transport: the checks of the request
/// head, the body limit, the API and the daemon's answer to unknown methods, the whole answer
/// read ([`crate::FakeIncus::call`]).
pub(crate) async fn answer_read(app: &Arc<App>, req: Request<Bytes>, peer: Peer) -> Reply {
    let (parts, bytes) = req.into_parts();
    let response = if let Some(response) = before_routing(&parts) {
        response
    } else if bytes.len() > BODY_LIMIT {
        too_large(app.settings.line, parts.version)
    } else {
        match route(app, parts, bytes, peer).await {
            Outcome::Respond(response) => response,
            Outcome::Close | Outcome::Reset => {
                return Reply::new(0, http::HeaderMap::new(), Bytes::new())
            }
        }
    };
    let (parts, body) = response.into_parts();
    match body.collect().await {
        Ok(collected) => Reply::new(parts.status.as_u16(), parts.headers, collected.to_bytes()),
        Err(_) => Reply::new(0, http::HeaderMap::new(), Bytes::new()),
    }
}

/// The API's answer to a request whose body was read, with the daemon's answer to unknown
/// methods.
async fn route(app: &Arc<App>, parts: http::request::Parts, bytes: Bytes, peer: Peer) -> Outcome {
    let (method, root) = (parts.method.clone(), parts.uri.path() == "/");
    match api::serve(app, Request::from_parts(parts, bytes), peer).await {
        Outcome::Respond(response) => {
            Outcome::Respond(after_routing(app.settings.line, &method, root, response))
        }
        other => other,
    }
}

/// Reads the body (when the peer may send one) and answers the request.
async fn answer(
    app: Arc<App>,
    peer: Peer,
    reset: Arc<AtomicBool>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Dropped> {
    let (parts, body) = req.into_parts();
    if let Some(response) = before_routing(&parts) {
        return Ok(response);
    }
    let bytes = if let Some(limit) = body_limit(&app, &peer, &parts) {
        match read_body(&parts, body, limit).await {
            Ok(bytes) => bytes,
            Err(BodyError::TooLarge) => return Ok(too_large(app.settings.line, parts.version)),
            // The daemon's decoder stops at the end of the first value: a framing error after
            // it goes unnoticed; before it, it is the decode error.
            Err(BodyError::BadChunk(bytes, _)) if holds_a_json_value(&bytes) => bytes,
            Err(BodyError::BadChunk(_, words)) => {
                let mut response = ApiError::bad_request(words).into_response(app.settings.line);
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                return Ok(response);
            }
            Err(BodyError::Broken) => return Err(Dropped),
        }
    } else {
        // Never read: dropping it makes hyper close the connection after the answer
        // unless the (short) body already arrived.
        drop(body);
        Bytes::new()
    };
    match route(&app, parts, bytes, peer).await {
        Outcome::Respond(response) => Ok(response),
        Outcome::Close => Err(Dropped),
        Outcome::Reset => {
            reset.store(true, Ordering::SeqCst);
            Err(Dropped)
        }
    }
}
