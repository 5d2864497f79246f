//! Listeners: each accepted connection gets one task that serves HTTP (with upgrades) through
//! [`crate::api::serve`] until the connection ends or the fake shuts down.
//!
//! Request bodies: an untrusted HTTPS client's body is never read (its request can only be
//! refused, as the daemon refuses it before any handler reads); a trusted body is read up to
//! [`BODY_LIMIT`] bytes. A longer one (announced by `Content-Length` or found while reading a
//! chunked body) is answered 413 and the connection is closed, so no client can make the fake
//! hold more than that per request. The real daemon has no such bound: its JSON decoder keeps
//! reading while one JSON value lasts, which is what lets a client grow its memory at will.

pub(crate) mod https;
pub(crate) mod tls;
pub(crate) mod unix;

use crate::api::{self, Outcome, Peer};
use crate::app::App;
use crate::envelope::{ApiError, Body};
use crate::journal::Listener;
use bytes::Bytes;
use http::{header, HeaderValue, Response, Version};
use http_body_util::{BodyExt, Limited};
use hyper::body::Incoming;
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The connection was dropped on purpose (a fault).
#[derive(Debug, thiserror::Error)]
#[error("connection dropped by a fault rule")]
struct Dropped;

/// Most bytes of one request body the fake reads (16 MiB); a longer body gets a 413.
pub(crate) const BODY_LIMIT: usize = 16 << 20;

/// Whether the request may reach a handler that reads its body: every Unix peer, and HTTPS
/// peers whose certificate is trusted. The same decision [`api::serve`] makes per request.
fn may_read_body(app: &App, peer: &Peer) -> bool {
    match (&peer.listener, &peer.fingerprint) {
        (Listener::Https, Some(fp)) => app.identity.is_trusted(fp),
        (Listener::Https, None) => false,
        _ => true,
    }
}

/// Why a body was not read.
enum BodyError {
    /// Longer than [`BODY_LIMIT`].
    TooLarge,
    /// The connection failed or the framing was broken.
    Broken,
}

/// Reads a body of at most [`BODY_LIMIT`] bytes; a `Content-Length` above it is refused
/// without reading a byte.
async fn read_body(parts: &http::request::Parts, body: Incoming) -> Result<Bytes, BodyError> {
    let announced = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if announced.is_some_and(|len| len > BODY_LIMIT as u64) {
        return Err(BodyError::TooLarge);
    }
    match Limited::new(body, BODY_LIMIT).collect().await {
        Ok(collected) => Ok(collected.to_bytes()),
        Err(err) if err.is::<http_body_util::LengthLimitError>() => Err(BodyError::TooLarge),
        Err(_) => Err(BodyError::Broken),
    }
}

/// The 413 for a body over [`BODY_LIMIT`], in the error envelope; HTTP/1 connections are
/// closed after it, so the rest of the body is never read.
fn too_large(version: Version) -> Response<Body> {
    let mut response: Response<Body> = ApiError::new(413, "http: request body too large").into();
    if version < Version::HTTP_2 {
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
    }
    response
}

/// Serves one connection until it ends or the app shuts down. `reset` is set when a fault asks
/// for a reset, so the transport can end the connection abortively.
pub(crate) async fn serve_connection<IO>(app: Arc<App>, io: IO, peer: Peer, reset: Arc<AtomicBool>)
where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let shutdown = app.shutdown.clone();
    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
        let app = Arc::clone(&app);
        let peer = peer.clone();
        let reset = Arc::clone(&reset);
        async move {
            let (parts, body) = req.into_parts();
            let bytes = if may_read_body(&app, &peer) {
                match read_body(&parts, body).await {
                    Ok(bytes) => bytes,
                    Err(BodyError::TooLarge) => return Ok(too_large(parts.version)),
                    Err(BodyError::Broken) => return Err(Dropped),
                }
            } else {
                // Never read: dropping it makes hyper close the connection after the answer
                // unless the (short) body already arrived.
                drop(body);
                Bytes::new()
            };
            match api::serve(&app, Request::from_parts(parts, bytes), peer).await {
                Outcome::Respond(response) => Ok(response),
                Outcome::Close => Err(Dropped),
                Outcome::Reset => {
                    reset.store(true, Ordering::SeqCst);
                    Err(Dropped)
                }
            }
        }
    });
    let builder = auto::Builder::new(TokioExecutor::new());
    let connection = builder.serve_connection_with_upgrades(TokioIo::new(io), service);
    tokio::select! {
        result = connection => {
            if let Err(err) = result {
                tracing::debug!(error = %err, "connection ended with an error");
            }
        }
        () = shutdown.cancelled() => {}
    }
}
