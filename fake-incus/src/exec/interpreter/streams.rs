//! The three standard streams of an exec'd program: stdin with push-back, and stdout/stderr as bounded
//! channels that can be redirected per command (`>&2`, `2>&1`, `>/dev/null`).

use bytes::Bytes;
use tokio::sync::mpsc::{Receiver, Sender};

/// The largest chunk sent at once; the real daemon's stdout frames were seen up to this size.
pub(super) const CHUNK: usize = 32 * 1024;

/// The receiving side of stdout or stderr was dropped: the program ends as if killed by SIGPIPE.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct BrokenPipe;

/// What a command run to its end returns: its exit status, or a broken pipe that ends the whole program.
pub(super) type Status = Result<i32, BrokenPipe>;

/// Standard input shared by every command of a program, with bytes that a command read but did not use
/// (e.g. `head -n 1`) kept for the next one.
pub(super) struct Stdin {
    chunks: Receiver<Bytes>,
    unread: Bytes,
}

impl Stdin {
    pub(super) fn new(chunks: Receiver<Bytes>) -> Self {
        Self {
            chunks,
            unread: Bytes::new(),
        }
    }

    /// The next non-empty chunk, or `None` at end of input (the sender was dropped).
    pub(super) async fn next_chunk(&mut self) -> Option<Bytes> {
        if !self.unread.is_empty() {
            return Some(std::mem::take(&mut self.unread));
        }
        loop {
            let chunk = self.chunks.recv().await?;
            if !chunk.is_empty() {
                return Some(chunk);
            }
        }
    }

    /// Gives back the unused end of the last chunk; the next read returns it first.
    pub(super) fn unread(&mut self, rest: Bytes) {
        self.unread = rest;
    }
}

/// Where a command's file descriptor 1 or 2 currently goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Sink {
    Stdout,
    Stderr,
    Null,
}

/// A command's output descriptors after its redirections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Fds {
    pub(super) out: Sink,
    pub(super) err: Sink,
}

impl Fds {
    pub(super) const STANDARD: Fds = Fds {
        out: Sink::Stdout,
        err: Sink::Stderr,
    };
}

/// The program's two output channels.
pub(super) struct Streams {
    pub(super) stdout: Sender<Bytes>,
    pub(super) stderr: Sender<Bytes>,
}

/// The output of one command: the program's channels seen through the command's redirections.
#[derive(Clone, Copy)]
pub(super) struct Output<'a> {
    pub(super) streams: &'a Streams,
    pub(super) fds: Fds,
}

impl Output<'_> {
    /// Writes to the command's fd 1.
    pub(super) async fn out(&self, bytes: impl Into<Bytes>) -> Result<(), BrokenPipe> {
        self.write(self.fds.out, bytes.into()).await
    }

    /// Writes to the command's fd 2.
    pub(super) async fn err(&self, bytes: impl Into<Bytes>) -> Result<(), BrokenPipe> {
        self.write(self.fds.err, bytes.into()).await
    }

    /// Writes a line (a newline is added) to fd 2.
    pub(super) async fn err_line(&self, line: &str) -> Result<(), BrokenPipe> {
        self.err(format!("{line}\n")).await
    }

    /// Sends in chunks of at most [`CHUNK`] bytes, waiting while the channel is full.
    async fn write(&self, sink: Sink, bytes: Bytes) -> Result<(), BrokenPipe> {
        let sender = match sink {
            Sink::Stdout => &self.streams.stdout,
            Sink::Stderr => &self.streams.stderr,
            Sink::Null => return Ok(()),
        };
        let mut offset = 0;
        while offset < bytes.len() {
            let end = bytes.len().min(offset + CHUNK);
            sender
                .send(bytes.slice(offset..end))
                .await
                .map_err(|_| BrokenPipe)?;
            offset = end;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::mpsc;

    #[tokio::test]
    async fn stdin_returns_unread_bytes_before_new_chunks() {
        let (tx, rx) = mpsc::channel(4);
        let mut stdin = Stdin::new(rx);
        tx.send(Bytes::from_static(b"ab")).await.unwrap();
        tx.send(Bytes::new()).await.unwrap();
        tx.send(Bytes::from_static(b"cd")).await.unwrap();
        drop(tx);
        assert_eq!(stdin.next_chunk().await.unwrap(), "ab");
        stdin.unread(Bytes::from_static(b"b"));
        assert_eq!(stdin.next_chunk().await.unwrap(), "b");
        assert_eq!(stdin.next_chunk().await.unwrap(), "cd");
        assert_eq!(stdin.next_chunk().await, None);
    }

    #[tokio::test]
    async fn large_writes_are_split_into_chunks_of_at_most_32_kib() {
        let (stdout, mut rx) = mpsc::channel(8);
        let (stderr, _keep) = mpsc::channel(1);
        let streams = Streams { stdout, stderr };
        let output = Output {
            streams: &streams,
            fds: Fds::STANDARD,
        };
        let writer = output.out(vec![7u8; CHUNK * 2 + 5]);
        let (written, sizes) = tokio::join!(writer, async {
            let mut sizes = Vec::new();
            for _ in 0..3 {
                sizes.push(rx.recv().await.unwrap().len());
            }
            sizes
        });
        assert_eq!(written, Ok(()));
        assert_eq!(sizes, vec![CHUNK, CHUNK, 5]);
    }

    #[tokio::test]
    async fn a_dropped_receiver_is_a_broken_pipe_and_null_swallows_output() {
        let (stdout, rx) = mpsc::channel(1);
        let (stderr, _keep) = mpsc::channel(1);
        drop(rx);
        let streams = Streams { stdout, stderr };
        let mut output = Output {
            streams: &streams,
            fds: Fds::STANDARD,
        };
        assert_eq!(output.out("x").await, Err(BrokenPipe));
        output.fds.out = Sink::Null;
        assert_eq!(output.out("x").await, Ok(()));
    }
}
