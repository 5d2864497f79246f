//! Listeners: each accepted connection gets one task that serves HTTP (with upgrades) through
//! [`crate::api::serve`] until the connection ends or the fake shuts down.

pub(crate) mod https;
pub(crate) mod tls;
pub(crate) mod unix;

use crate::api::{self, Outcome, Peer};
use crate::app::App;
use bytes::Bytes;
use http_body_util::BodyExt;
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
            let bytes: Bytes = match body.collect().await {
                Ok(collected) => collected.to_bytes(),
                Err(_) => return Err(Dropped),
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
