//! A connection that a member's death cuts: once the member's life token is cancelled, the
//! write side is shut down (the peer reads EOF, with no websocket close frame before it), reads
//! end and writes fail. Without a token it passes everything through.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

/// An I/O stream cut when a member dies.
pub(crate) struct Severable<IO> {
    inner: IO,
    death: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    /// The member died: the write side was (or is being) shut down.
    cut: bool,
    shut: bool,
}

impl<IO> Severable<IO> {
    pub(crate) fn new(inner: IO, life: Option<CancellationToken>) -> Self {
        Self {
            inner,
            death: life.map(|t| Box::pin(t.cancelled_owned())),
            cut: false,
            shut: false,
        }
    }
}

impl<IO: AsyncWrite + Unpin> Severable<IO> {
    /// Notes the death (registering for it otherwise) and shuts the write side once.
    fn check(&mut self, cx: &mut Context<'_>) -> bool {
        if !self.cut {
            if let Some(death) = self.death.as_mut() {
                if death.as_mut().poll(cx).is_ready() {
                    self.cut = true;
                }
            }
        }
        if self.cut && !self.shut && Pin::new(&mut self.inner).poll_shutdown(cx).is_ready() {
            self.shut = true;
        }
        self.cut
    }
}

fn broken() -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::BrokenPipe, "the cluster member died")
}

impl<IO: AsyncRead + AsyncWrite + Unpin> AsyncRead for Severable<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.check(cx) {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Severable<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        if self.check(cx) {
            return Poll::Ready(Err(broken()));
        }
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }
    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.check(cx) {
            return Poll::Ready(Err(broken()));
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }
    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        if self.check(cx) {
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
