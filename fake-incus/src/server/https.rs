//! The HTTPS listener with mutual TLS: client certificates are optional at the TLS level and
//! decide trust per request by fingerprint. Faults that reset the connection send a TCP RST.

use super::serve_connection_until;
use crate::api::Peer;
use crate::app::App;
use crate::journal::Listener;
use crate::tls::fingerprint_der;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Accepts connections until shutdown.
pub(crate) async fn run(app: Arc<App>, listener: TcpListener, config: Arc<rustls::ServerConfig>) {
    let until = app.shutdown.clone();
    run_as(app, listener, config, None, until).await;
}

/// Accepts connections for a cluster `member` (`None`: not clustered) until `until` is
/// cancelled; the connections end then too.
pub(crate) async fn run_as(
    app: Arc<App>,
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
    member: Option<Arc<str>>,
    until: CancellationToken,
) {
    let acceptor = TlsAcceptor::from(config);
    let mut backoff = super::AcceptBackoff::default();
    loop {
        let accepted = tokio::select! {
            biased;
            () = until.cancelled() => return,
            accepted = listener.accept() => accepted,
        };
        match accepted {
            Ok((stream, _)) => {
                backoff.accepted();
                let (member, until) = (member.clone(), until.clone());
                tokio::spawn(handle(
                    Arc::clone(&app),
                    acceptor.clone(),
                    stream,
                    member,
                    until,
                ));
            }
            Err(err) => backoff.pause("https", &err, &app).await,
        }
    }
}

async fn handle(
    app: Arc<App>,
    acceptor: TlsAcceptor,
    stream: TcpStream,
    member: Option<Arc<str>>,
    until: CancellationToken,
) {
    let _ = stream.set_nodelay(true);
    let reset = Arc::new(AtomicBool::new(false));
    let stream = Resettable {
        inner: stream,
        reset: Arc::clone(&reset),
    };
    let tls = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(stream)).await {
        Ok(Ok(tls)) => tls,
        Ok(Err(err)) => {
            tracing::debug!(error = %err, "TLS handshake failed");
            return;
        }
        Err(_) => return,
    };
    let certificate = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|certs| certs.first());
    let fingerprint = certificate.map(|cert| {
        let fingerprint = fingerprint_der(cert);
        app.identity.presented(&fingerprint, cert);
        fingerprint
    });
    let peer = Peer {
        listener: Listener::Https,
        fingerprint,
        member,
    };
    serve_connection_until(app, tls, peer, reset, until).await;
}

/// A TCP stream that closes with RST (linger 0) when a fault asked for a reset.
struct Resettable {
    inner: TcpStream,
    reset: Arc<AtomicBool>,
}

impl Drop for Resettable {
    fn drop(&mut self) {
        if self.reset.load(Ordering::SeqCst) {
            let _ = socket2::SockRef::from(&self.inner).set_linger(Some(Duration::ZERO));
        }
    }
}

impl AsyncRead for Resettable {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl AsyncWrite for Resettable {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.reset.load(Ordering::SeqCst) {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }
    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
