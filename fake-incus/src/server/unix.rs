//! The Unix socket listener: every peer is trusted, as on a real host.

use super::serve_connection_until;
use crate::api::Peer;
use crate::app::App;
use crate::journal::Listener;
use futures_util::FutureExt;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use tokio::net::UnixListener;
use tokio_util::sync::CancellationToken;

/// Binds the socket (replacing a stale socket file).
pub(crate) fn bind(path: &Path) -> std::io::Result<UnixListener> {
    if path.exists() {
        std::fs::remove_file(path)?;
    }
    UnixListener::bind(path)
}

/// Accepts connections until shutdown.
pub(crate) async fn run(app: Arc<App>, listener: UnixListener) {
    let until = app.shutdown.clone();
    run_as(app, listener, None, until).await;
}

/// Accepts connections for a cluster `member` (`None`: not clustered) until `until` is
/// cancelled; the connections end then too.
pub(crate) async fn run_as(
    app: Arc<App>,
    listener: UnixListener,
    member: Option<Arc<str>>,
    until: CancellationToken,
) {
    let mut backoff = super::AcceptBackoff::default();
    // One connection at a time is served by this loop's own task, the others by tasks of their
    // own. A fresh connection the loop serves itself wakes no other worker: spawning one makes
    // tokio wake its idle second worker (a futex and an eventfd write a connection, measured),
    // which at one client cost more than the request. Under load the spawned connections keep
    // every worker busy. A panic there is caught, as a task's would be, and ends that connection
    // only.
    let mut own: Option<Connection> = None;
    loop {
        let accepted = tokio::select! {
            biased;
            () = until.cancelled() => return,
            _ = async { own.as_mut().expect("guarded").await }, if own.is_some() => {
                own = None;
                continue;
            }
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => {
                backoff.accepted();
                let peer = Peer {
                    listener: Listener::Unix,
                    fingerprint: None,
                    member: member.clone(),
                };
                let app = Arc::clone(&app);
                // Boxed: the connection's future is a few kilobytes, and the task would
                // otherwise copy it whole when it is spawned and at each change of its stage
                // (callgrind: a tenth of a fresh connection's instructions).
                let connection: Connection = Box::pin(
                    AssertUnwindSafe(serve_connection_until(
                        app,
                        stream,
                        peer,
                        Arc::new(AtomicBool::new(false)),
                        until.clone(),
                    ))
                    .catch_unwind(),
                );
                if own.is_none() {
                    own = Some(connection);
                } else {
                    tokio::spawn(connection);
                }
            }
            Err(err) => backoff.pause("unix", &err, &app).await,
        }
    }
}

/// A connection being served; `Err` when it panicked.
type Connection = Pin<Box<dyn Future<Output = std::thread::Result<()>> + Send>>;
