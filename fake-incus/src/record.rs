//! `fake-incus record`: a transparent proxy in front of an Incus (a real daemon, or a fake) that
//! forwards every request on its own Unix socket to the upstream (its Unix socket, or its HTTPS
//! listener with mutual TLS and the server certificate pinned, reached as
//! `capture` reaches it, through the same `client::Dialer`) and writes a transcript
//! ([`crate::transcript`]): each request and answer, their timing, and the frames of every
//! websocket (exec, events, console) with their sizes.
//!
//! What the client sees is the upstream's answer, byte for byte in its body and with its status
//! and headers (`Content-Length` and `Transfer-Encoding` are the proxy's own: an answer is read
//! whole before it is passed on). An upgraded connection is relayed frame by frame. The
//! transcript is written by a thread of its own, and the digests and copies of the bodies are
//! made there, so a request waits only for the upstream and the relaying itself
//! ([`Timing::recorder_us`](crate::transcript::Timing) says how long that took).
//!
//! Clients may reach the recorder over HTTPS too ([`Recorder::listen_https`]), with mutual TLS
//! and the fake's own server TLS code: the recorder has a server certificate and a client
//! certificate of its own (loaded from, or made into, a directory as `serve --tls-dir` does),
//! and forwards only for a client that presents that client certificate; any other gets
//! `403` and nothing reaches the upstream (the upstream trusts the recorder's credentials, not
//! the client's).
//!
//! Every upstream request goes on a fresh connection, written at once: Incus peeks at the first
//! byte of every Unix connection in its accept loop, and one silent connection would stop it
//! from accepting others.

use crate::client::{Dialer, Source};

use crate::transcript::{
    Body, Exchange, Frame, FrameKind, Header, RecordedRequest, RecordedResponse, Side, Timing,
    Websocket, TRANSCRIPT_VERSION,
};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::{HeaderMap, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, UnixListener};
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;
use tokio_util::sync::CancellationToken;

/// Request headers not kept in a transcript: the connection's own.
const CONNECTION_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "keep-alive",
    "sec-websocket-key",
    "sec-websocket-accept",
    "sec-websocket-version",
    "sec-websocket-extensions",
    "date",
];

/// Why a recording could not start or finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The listening socket or the transcript file could not be made or written.
    #[error("{context}: {source}")]
    Io {
        /// What was being done.
        context: String,
        /// The underlying error.
        source: std::io::Error,
    },
    /// The upstream's HTTPS credentials (client certificate, key, pinned server certificate)
    /// are not usable.
    #[error("the upstream's TLS credentials: {0}")]
    Tls(String),
    /// The upstream does not answer (or, over HTTPS, is not the server pinned).
    #[error("the upstream {upstream} does not answer: {message}")]
    Upstream {
        /// The upstream.
        upstream: String,
        /// What went wrong.
        message: String,
    },
}

/// What the writer thread gets: the raw pieces of an exchange, turned into its transcript line
/// there (digests and copies off the request's path).
struct Pending {
    seq: u64,
    started_us: u64,
    method: String,
    path_and_query: String,
    request_headers: HeaderMap,
    request_body: Bytes,
    status: u16,
    response_headers: HeaderMap,
    response_body: Bytes,
    timing: Timing,
    websocket: Option<RawWebsocket>,
}

/// The frames of a relayed websocket, raw.
struct RawWebsocket {
    frames: Vec<(Side, FrameKind, u64, Bytes)>,
    closed_us: u64,
    ended_by: Option<Side>,
}

/// What every connection task shares.
struct Shared {
    upstream: Dialer,
    epoch: Instant,
    seq: AtomicU64,
    out: Mutex<mpsc::Sender<Pending>>,
    shutdown: CancellationToken,
}

impl Shared {
    /// A sender to the transcript writer.
    fn sender(&self) -> mpsc::Sender<Pending> {
        self.out.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Hands an exchange to the writer. The writer ends only after every sender is gone, so
    /// this fails only when its file failed, which `finish` reports.
    fn write(&self, pending: Pending) {
        let _ = self.sender().send(pending);
    }
}

/// A running recorder: a Unix socket whose every request goes to the upstream and into the
/// transcript. [`Recorder::finish`] stops it and completes the transcript.
/// Dropped without [`Recorder::finish`], it stops too (and removes its socket), but the
/// transcript may then lack the exchanges still in flight.
pub struct Recorder {
    socket: PathBuf,
    shared: Arc<Shared>,
    accept: Vec<tokio::task::JoinHandle<()>>,
    writer: Option<std::thread::JoinHandle<Result<u64, RecordError>>>,
}

impl Drop for Recorder {
    fn drop(&mut self) {
        self.shared.shutdown.cancel();
        let _ = std::fs::remove_file(&self.socket);
    }
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("socket", &self.socket)
            .field("upstream", &self.shared.upstream.name())
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// Listens on `socket` (a stale socket file is replaced), forwards to the Incus on
    /// `upstream` and writes the transcript to `transcript` (created or truncated), keeping at
    /// most `body_limit` bytes of each body or frame. The upstream must answer `GET /1.0`
    /// first (that request is not recorded).
    pub async fn start(
        upstream: &Path,
        socket: &Path,
        transcript: &Path,
        body_limit: usize,
    ) -> Result<Self, RecordError> {
        Self::start_from(
            &Source::Unix(upstream.to_path_buf()),
            socket,
            transcript,
            body_limit,
        )
        .await
    }

    /// [`Recorder::start`] with any upstream: a Unix socket, or an HTTPS listener (the client
    /// certificate presented, the server certificate pinned: another one is refused).
    pub async fn start_from(
        upstream: &Source,
        socket: &Path,
        transcript: &Path,
        body_limit: usize,
    ) -> Result<Self, RecordError> {
        let dialer = Dialer::new(upstream).map_err(RecordError::Tls)?;
        let refused = |message: String| RecordError::Upstream {
            upstream: dialer.name(),
            message,
        };
        let stream = dialer.open().await.map_err(refused)?;
        let mut connection = crate::client::Connection::over(stream)
            .await
            .map_err(|e| refused(e.to_string()))?;
        connection
            .send(crate::client::Request::get("/1.0"))
            .await
            .map_err(|e| refused(e.to_string()))?;
        drop(connection);
        let io = |context: String| move |source| RecordError::Io { context, source };
        let file = std::fs::File::create(transcript)
            .map_err(io(format!("creating {}", transcript.display())))?;
        if socket.exists() {
            std::fs::remove_file(socket).map_err(io(format!("removing {}", socket.display())))?;
        }
        let listener =
            UnixListener::bind(socket).map_err(io(format!("binding {}", socket.display())))?;
        let header = Header {
            transcript_version: TRANSCRIPT_VERSION,
            upstream: dialer.name(),
            started: now_rfc3339(),
            body_limit,
        };
        let (sender, receiver) = mpsc::channel();
        let path = transcript.to_path_buf();
        let writer = std::thread::Builder::new()
            .name("transcript".into())
            .spawn(move || write_transcript(file, &path, &header, &receiver))
            .map_err(io("starting the transcript writer".into()))?;
        let shared = Arc::new(Shared {
            upstream: dialer,
            epoch: Instant::now(),
            seq: AtomicU64::new(0),
            out: Mutex::new(sender),
            shutdown: CancellationToken::new(),
        });
        let accept = tokio::spawn(accept_loop(Arc::clone(&shared), listener));
        Ok(Self {
            socket: socket.to_path_buf(),
            shared,
            accept: vec![accept],
            writer: Some(writer),
        })
    }

    /// The socket the recorder listens on (for `INCUS_SOCKET`).
    pub fn unix_socket(&self) -> &Path {
        &self.socket
    }

    /// Listens on `address` (port 0: any free one) for HTTPS too, with mutual TLS: the
    /// recorder's server certificate and the client certificate it trusts are
    /// `tls_dir/server.{crt,key}` and `tls_dir/client.{crt,key}`, loaded or made there. Only a
    /// client presenting that client certificate is forwarded; any other gets `403`. Returns
    /// the address bound.
    pub async fn listen_https(
        &mut self,
        address: std::net::SocketAddr,
        tls_dir: &Path,
    ) -> Result<std::net::SocketAddr, RecordError> {
        let (server, client) =
            crate::tls::identities(Some(tls_dir)).map_err(|e| RecordError::Tls(e.to_string()))?;
        let trusted = crate::tls::fingerprint_pem(&client.cert_pem)
            .map_err(|e| RecordError::Tls(e.to_string()))?;
        let mut config = (*crate::tls::server_config(&server)
            .map_err(|e| RecordError::Tls(e.to_string()))?)
        .clone();
        // The relay speaks HTTP/1.1 (upgrades included) only.
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        let listener = TcpListener::bind(address)
            .await
            .map_err(|source| RecordError::Io {
                context: format!("binding {address}"),
                source,
            })?;
        let bound = listener.local_addr().map_err(|source| RecordError::Io {
            context: format!("binding {address}"),
            source,
        })?;
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        self.accept.push(tokio::spawn(https_accept_loop(
            Arc::clone(&self.shared),
            listener,
            acceptor,
            trusted,
        )));
        Ok(bound)
    }

    /// Stops listening, ends the connections still open (their websockets are written as they
    /// stand), writes the rest of the transcript and removes the socket. Returns how many
    /// exchanges the transcript holds.
    pub async fn finish(mut self) -> Result<u64, RecordError> {
        self.shared.shutdown.cancel();
        for accept in std::mem::take(&mut self.accept) {
            let _ = accept.await;
        }
        {
            // Replace the shared sender with one whose receiver is gone: the writer then ends
            // once the websockets still being relayed (each holds a sender of its own, and
            // ends on the cancellation) have written theirs.
            let (dead, _) = mpsc::channel();
            *self.shared.out.lock().unwrap_or_else(|e| e.into_inner()) = dead;
        }
        let _ = std::fs::remove_file(&self.socket);
        let Some(writer) = self.writer.take() else {
            return Ok(0);
        };
        tokio::task::spawn_blocking(move || writer.join())
            .await
            .map_err(|e| RecordError::Io {
                context: "waiting for the transcript writer".into(),
                source: std::io::Error::other(e.to_string()),
            })?
            .map_err(|_| RecordError::Io {
                context: "the transcript writer".into(),
                source: std::io::Error::other("panicked"),
            })?
    }
}

fn now_rfc3339() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// Writes the header, then each exchange as it comes, flushing whenever no other is waiting.
fn write_transcript(
    file: std::fs::File,
    path: &Path,
    header: &Header,
    receiver: &mpsc::Receiver<Pending>,
) -> Result<u64, RecordError> {
    let io = |source| RecordError::Io {
        context: format!("writing {}", path.display()),
        source,
    };
    let mut out = std::io::BufWriter::new(file);
    let line = serde_json::to_string(header).map_err(|e| io(e.into()))?;
    writeln!(out, "{line}").map_err(io)?;
    out.flush().map_err(io)?;
    let limit = header.body_limit;
    let mut written = 0;
    loop {
        let pending = match receiver.try_recv() {
            Ok(pending) => pending,
            Err(mpsc::TryRecvError::Empty) => {
                out.flush().map_err(io)?;
                match receiver.recv() {
                    Ok(pending) => pending,
                    Err(_) => break,
                }
            }
            Err(mpsc::TryRecvError::Disconnected) => break,
        };
        let line = serde_json::to_string(&exchange(pending, limit)).map_err(|e| io(e.into()))?;
        writeln!(out, "{line}").map_err(io)?;
        written += 1;
    }
    out.flush().map_err(io)?;
    out.get_ref().sync_all().map_err(io)?;
    Ok(written)
}

/// The headers that matter, lower-case, in order.
fn kept_headers(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .filter(|(name, _)| !CONNECTION_HEADERS.contains(&name.as_str()))
        .map(|(name, value)| {
            (
                name.as_str().to_string(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}

fn exchange(p: Pending, limit: usize) -> Exchange {
    let (path, query) = match p.path_and_query.split_once('?') {
        Some((path, query)) => (path.to_string(), query.to_string()),
        None => (p.path_and_query.clone(), String::new()),
    };
    Exchange {
        seq: p.seq,
        started_us: p.started_us,
        request: RecordedRequest {
            method: p.method,
            path,
            query,
            headers: kept_headers(&p.request_headers),
            body: Body::new(&p.request_body, limit),
        },
        response: RecordedResponse {
            status: p.status,
            headers: kept_headers(&p.response_headers),
            body: Body::new(&p.response_body, limit),
        },
        timing: p.timing,
        websocket: p.websocket.map(|ws| Websocket {
            frames: ws
                .frames
                .into_iter()
                .map(|(from, kind, at_us, data)| Frame {
                    from,
                    kind,
                    at_us,
                    data: Body::new(&data, limit),
                })
                .collect(),
            closed_us: ws.closed_us,
            ended_by: ws.ended_by,
        }),
    }
}

/// The next connection a listener accepts, or `None` once the recorder stops; an accept error
/// is logged and the listener asked again.
async fn next_connection<S, A, F>(shared: &Shared, mut accept: impl FnMut() -> F) -> Option<S>
where
    F: std::future::Future<Output = std::io::Result<(S, A)>>,
{
    loop {
        let accepted = tokio::select! {
            biased;
            () = shared.shutdown.cancelled() => return None,
            accepted = accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => return Some(stream),
            Err(err) => {
                tracing::warn!("record: accept: {err}");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }
}

async fn accept_loop(shared: Arc<Shared>, listener: UnixListener) {
    while let Some(stream) = next_connection(&shared, || listener.accept()).await {
        tokio::spawn(serve(Arc::clone(&shared), stream, true));
    }
}

/// How long a TLS handshake may take.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Accepts HTTPS connections until the recorder stops; a connection is relayed only when its
/// client certificate is the `trusted` one (SHA-256 fingerprint).
async fn https_accept_loop(
    shared: Arc<Shared>,
    listener: TcpListener,
    acceptor: tokio_rustls::TlsAcceptor,
    trusted: String,
) {
    while let Some(stream) = next_connection(&shared, || listener.accept()).await {
        let (shared, acceptor, trusted) = (Arc::clone(&shared), acceptor.clone(), trusted.clone());
        tokio::spawn(async move {
            let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
                Ok(Ok(tls)) => tls,
                Ok(Err(err)) => return tracing::debug!("record: TLS handshake: {err}"),
                Err(_) => return,
            };
            let presented = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|certs| certs.first())
                .map(|cert| crate::tls::fingerprint_der(cert));
            let allowed = presented.as_deref() == Some(trusted.as_str());
            serve(shared, tls, allowed).await;
        });
    }
}

/// Serves one client connection until it ends or the recorder stops: each request relayed
/// when the client is `allowed`, refused with `403` (not forwarded, not recorded) otherwise.
async fn serve<S>(shared: Arc<Shared>, stream: S, allowed: bool)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let service = hyper::service::service_fn({
        let shared = Arc::clone(&shared);
        move |request| {
            let shared = Arc::clone(&shared);
            async move {
                if allowed {
                    relay(shared, request).await
                } else {
                    Ok(refusal(
                        StatusCode::FORBIDDEN,
                        "the client certificate is not the recorder's trusted one",
                    ))
                }
            }
        }
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades();
    tokio::select! {
        result = connection => if let Err(err) = result {
            tracing::debug!("record: connection: {err}");
        },
        () = shared.shutdown.cancelled() => {}
    }
}

/// An Incus error envelope, for a request the recorder did not forward (not recorded).
fn refusal(status: StatusCode, message: &str) -> Response<Full<Bytes>> {
    let body = serde_json::json!({
        "type": "error", "status": "", "status_code": 0, "operation": "",
        "error_code": status.as_u16(), "error": format!("recorder: {message}"), "metadata": null,
    });
    let mut response = Response::new(Full::new(Bytes::from(body.to_string())));
    *response.status_mut() = status;
    response
}

/// [`refusal`] for a request the recorder could not forward.
fn bad_gateway(message: &str) -> Response<Full<Bytes>> {
    refusal(StatusCode::BAD_GATEWAY, message)
}

fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// Forwards one request upstream and its answer back, and hands the exchange to the writer
/// (a websocket's once it closed).
async fn relay(
    shared: Arc<Shared>,
    mut request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, std::convert::Infallible> {
    let arrived = Instant::now();
    let seq = shared.seq.fetch_add(1, Ordering::Relaxed) + 1;
    let started_us = micros(arrived.duration_since(shared.epoch));
    let upgrade = request.headers().get("upgrade").cloned();
    let websocket = upgrade
        .as_ref()
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"websocket"));
    let client_upgrade = upgrade.is_some().then(|| hyper::upgrade::on(&mut request));
    let (parts, body) = request.into_parts();
    let request_body = match body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) => return Ok(bad_gateway(&format!("reading the request: {err}"))),
    };
    let path_and_query = parts
        .uri
        .path_and_query()
        .map_or_else(|| parts.uri.path().to_string(), ToString::to_string);
    let mut upstream_request = Request::builder()
        .method(parts.method.clone())
        .uri(path_and_query.as_str());
    for (name, value) in &parts.headers {
        if name != "content-length" && name != "transfer-encoding" {
            upstream_request = upstream_request.header(name, value);
        }
    }
    let upstream_request = match upstream_request.body(Full::new(request_body.clone())) {
        Ok(built) => built,
        Err(err) => return Ok(bad_gateway(&err.to_string())),
    };
    let sent = Instant::now();
    let mut response = match forward(&shared.upstream, upstream_request).await {
        Ok(response) => response,
        Err(message) => {
            tracing::warn!("record: {} {path_and_query}: {message}", parts.method);
            return Ok(bad_gateway(&message));
        }
    };
    let upstream_upgrade = (response.status() == StatusCode::SWITCHING_PROTOCOLS)
        .then(|| hyper::upgrade::on(&mut response));
    let (response_parts, response_body) = response.into_parts();
    let response_body = match response_body.collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) => return Ok(bad_gateway(&format!("reading the answer: {err}"))),
    };
    let upstream_us = micros(sent.elapsed());
    let mut back = Response::new(Full::new(response_body.clone()));
    *back.status_mut() = response_parts.status;
    for (name, value) in &response_parts.headers {
        if name != "content-length" && name != "transfer-encoding" {
            back.headers_mut().append(name, value.clone());
        }
    }
    let pending = Pending {
        seq,
        started_us,
        method: parts.method.to_string(),
        path_and_query,
        request_headers: parts.headers,
        request_body,
        status: response_parts.status.as_u16(),
        response_headers: response_parts.headers,
        response_body,
        timing: Timing {
            upstream_us,
            recorder_us: micros(arrived.elapsed()).saturating_sub(upstream_us),
        },
        websocket: None,
    };
    match (client_upgrade, upstream_upgrade) {
        (Some(client), Some(upstream)) => {
            let out = shared.sender();
            let shutdown = shared.shutdown.clone();
            if websocket {
                tokio::spawn(relay_websocket(out, shutdown, pending, client, upstream));
            } else {
                tokio::spawn(relay_raw(out, shutdown, pending, client, upstream));
            }
        }
        _ => shared.write(pending),
    }
    Ok(back)
}

/// Sends one request on a fresh connection to the upstream.
async fn forward(
    upstream: &Dialer,
    request: Request<Full<Bytes>>,
) -> Result<Response<Incoming>, String> {
    let stream = upstream.open().await?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(async move {
        if let Err(err) = connection.with_upgrades().await {
            tracing::debug!("record: upstream connection: {err}");
        }
    });
    sender
        .send_request(request)
        .await
        .map_err(|e| format!("upstream: {e}"))
}

/// The frames of one upgraded connection as they are relayed, and who ended it first.
#[derive(Default)]
struct Relayed {
    frames: Vec<(Side, FrameKind, u64, Bytes)>,
    ended_by: Option<Side>,
}

type Frames = Arc<Mutex<Relayed>>;

/// Notes a frame.
fn note(frames: &Frames, side: Side, kind: FrameKind, upgraded: Instant, data: Bytes) {
    let at = micros(upgraded.elapsed());
    let mut relayed = frames.lock().unwrap_or_else(|e| e.into_inner());
    relayed.frames.push((side, kind, at, data));
    if kind == FrameKind::Close {
        relayed.ended_by.get_or_insert(side);
    }
}

/// Notes that `side` ended its direction (if nobody had before).
fn ended(frames: &Frames, side: Side) {
    let mut relayed = frames.lock().unwrap_or_else(|e| e.into_inner());
    relayed.ended_by.get_or_insert(side);
}

/// The exchange of a relayed connection, with its frames.
fn finished(mut pending: Pending, frames: &Frames, upgraded: Instant) -> Pending {
    let relayed = std::mem::take(&mut *frames.lock().unwrap_or_else(|e| e.into_inner()));
    pending.websocket = Some(RawWebsocket {
        frames: relayed.frames,
        closed_us: micros(upgraded.elapsed()),
        ended_by: relayed.ended_by,
    });
    pending
}

/// Relays an upgraded connection frame by frame until both directions ended (or the recorder
/// stops), then writes the exchange with its frames.
async fn relay_websocket(
    out: mpsc::Sender<Pending>,
    shutdown: CancellationToken,
    pending: Pending,
    client: OnUpgrade,
    upstream: OnUpgrade,
) {
    let upgraded = Instant::now();
    let frames: Frames = Arc::default();
    if let (Ok(client), Ok(upstream)) = tokio::join!(client, upstream) {
        let client = WebSocketStream::from_raw_socket(TokioIo::new(client), Role::Server, None);
        let upstream = WebSocketStream::from_raw_socket(TokioIo::new(upstream), Role::Client, None);
        let (client, upstream) = tokio::join!(client, upstream);
        let (client_sink, client_stream) = client.split();
        let (upstream_sink, upstream_stream) = upstream.split();
        let to_upstream = pump(
            Side::Client,
            client_stream,
            upstream_sink,
            upgraded,
            &frames,
        );
        let to_client = pump(
            Side::Server,
            upstream_stream,
            client_sink,
            upgraded,
            &frames,
        );
        tokio::select! {
            _ = async { tokio::join!(to_upstream, to_client) } => {}
            () = shutdown.cancelled() => {}
        }
    }
    let _ = out.send(finished(pending, &frames, upgraded));
}

/// Relays an upgraded connection that is not a websocket (sftp) byte for byte until both
/// directions ended (or the recorder stops), then writes the exchange with the chunks read.
async fn relay_raw(
    out: mpsc::Sender<Pending>,
    shutdown: CancellationToken,
    pending: Pending,
    client: OnUpgrade,
    upstream: OnUpgrade,
) {
    let upgraded = Instant::now();
    let frames: Frames = Arc::default();
    if let (Ok(client), Ok(upstream)) = tokio::join!(client, upstream) {
        let (client_read, client_write) = tokio::io::split(TokioIo::new(client));
        let (upstream_read, upstream_write) = tokio::io::split(TokioIo::new(upstream));
        let to_upstream = copy(Side::Client, client_read, upstream_write, upgraded, &frames);
        let to_client = copy(Side::Server, upstream_read, client_write, upgraded, &frames);
        tokio::select! {
            _ = async { tokio::join!(to_upstream, to_client) } => {}
            () = shutdown.cancelled() => {}
        }
    }
    let _ = out.send(finished(pending, &frames, upgraded));
}

/// Copies one direction of a raw upgraded connection, noting each chunk read, until its side
/// ends; then shuts the other side's writing down.
async fn copy<R, W>(side: Side, mut from: R, mut to: W, upgraded: Instant, frames: &Frames)
where
    R: tokio::io::AsyncRead + Unpin,
    W: tokio::io::AsyncWrite + Unpin,
{
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut buffer = vec![0u8; 64 * 1024];
    while let Ok(n) = from.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        let chunk = Bytes::copy_from_slice(&buffer[..n]);
        note(frames, side, FrameKind::Raw, upgraded, chunk);
        if to.write_all(&buffer[..n]).await.is_err() || to.flush().await.is_err() {
            break;
        }
    }
    ended(frames, side);
    let _ = to.shutdown().await;
}

/// Forwards the messages of one direction, noting each, until its side ends. Pongs are noted
/// but not forwarded: each end's websocket answers the pings it gets itself.
async fn pump<S, K>(side: Side, mut from: S, mut to: K, upgraded: Instant, frames: &Frames)
where
    S: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
    K: futures_util::Sink<Message> + Unpin,
{
    while let Some(Ok(message)) = from.next().await {
        let (kind, data) = match &message {
            Message::Text(text) => (FrameKind::Text, Bytes::copy_from_slice(text.as_bytes())),
            Message::Binary(data) => (FrameKind::Binary, data.clone()),
            Message::Ping(data) => (FrameKind::Ping, data.clone()),
            Message::Pong(data) => (FrameKind::Pong, data.clone()),
            Message::Close(frame) => (
                FrameKind::Close,
                frame.as_ref().map_or_else(Bytes::new, |f| {
                    let mut bytes = u16::from(f.code).to_be_bytes().to_vec();
                    bytes.extend_from_slice(f.reason.as_bytes());
                    Bytes::from(bytes)
                }),
            ),
            Message::Frame(_) => continue,
        };
        note(frames, side, kind, upgraded, data);
        match kind {
            FrameKind::Pong => {}
            FrameKind::Close => {
                let _ = to.send(message).await;
                break;
            }
            _ => {
                if to.send(message).await.is_err() {
                    break;
                }
            }
        }
    }
    ended(frames, side);
    let _ = to.close().await;
}
