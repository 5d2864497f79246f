//! The Unix socket listener: every peer is trusted, as on a real host.

use super::serve_connection;
use crate::api::Peer;
use crate::app::App;
use crate::journal::Listener;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use tokio::net::UnixListener;

/// Binds the socket (replacing a stale socket file).
pub(crate) fn bind(path: &Path) -> std::io::Result<UnixListener> {
    if path.exists() {
        std::fs::remove_file(path)?;
    }
    UnixListener::bind(path)
}

/// Accepts connections until shutdown.
pub(crate) async fn run(app: Arc<App>, listener: UnixListener) {
    let mut backoff = super::AcceptBackoff::default();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = app.shutdown.cancelled() => return,
        };
        match accepted {
            Ok((stream, _)) => {
                backoff.accepted();
                let peer = Peer {
                    listener: Listener::Unix,
                    fingerprint: None,
                };
                let app = Arc::clone(&app);
                tokio::spawn(serve_connection(
                    app,
                    stream,
                    peer,
                    Arc::new(AtomicBool::new(false)),
                ));
            }
            Err(err) => backoff.pause("unix", &err, &app).await,
        }
    }
}
