//! A process's file descriptors: inputs (the program's stdin, a pipe, a file or here-document read
//! whole) and outputs (the program's stdout/stderr channels, a pipe, a file, a command substitution's
//! capture, `/dev/null`). Channels are bounded and sent in chunks of at most [`CHUNK`], so memory
//! stays bounded whatever a command prints; a dropped receiver is a broken pipe.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use tokio::sync::mpsc::{Receiver, Sender};

use crate::fs::{Fs, FsError, Owner};

/// The largest chunk sent at once; the real daemon's stdout frames were seen up to this size.
pub(crate) const CHUNK: usize = 32 * 1024;
/// Most bytes a command substitution keeps.
const CAPTURE_LIMIT: usize = 16 << 20;
/// A file written through a redirection is flushed to the file system past this many buffered bytes.
const FILE_BUFFER: usize = 256 * 1024;

/// Bytes read from somewhere, with what a command read but did not use kept for the next one.
#[derive(Debug)]
pub(crate) struct Reader {
    chunks: Option<Receiver<Bytes>>,
    unread: Bytes,
}

impl Reader {
    /// A reader of a channel (the program's stdin, a pipe).
    pub(crate) fn channel(chunks: Receiver<Bytes>) -> Self {
        Self {
            chunks: Some(chunks),
            unread: Bytes::new(),
        }
    }

    /// A reader of bytes known in advance (a file, a here-document).
    pub(crate) fn bytes(content: Bytes) -> Self {
        Self {
            chunks: None,
            unread: content,
        }
    }

    /// The next non-empty chunk, or `None` at end of input.
    pub(crate) async fn next_chunk(&mut self) -> Option<Bytes> {
        if !self.unread.is_empty() {
            return Some(std::mem::take(&mut self.unread));
        }
        let chunks = self.chunks.as_mut()?;
        loop {
            let chunk = chunks.recv().await?;
            if !chunk.is_empty() {
                return Some(chunk);
            }
        }
    }

    /// Gives back the unused end of the last chunk; the next read returns it first.
    pub(crate) fn unread(&mut self, rest: Bytes) {
        self.unread = rest;
    }
}

/// A shared input descriptor.
pub(crate) type Input = Arc<tokio::sync::Mutex<Reader>>;

/// An input of known bytes.
pub(crate) fn input_of(content: Bytes) -> Input {
    Arc::new(tokio::sync::Mutex::new(Reader::bytes(content)))
}

/// A file opened for writing by a redirection: writes are buffered and appended to the file system,
/// the rest when the last descriptor to it closes.
#[derive(Debug)]
pub(crate) struct FileOut {
    fs: Fs,
    path: String,
    owner: Owner,
    state: Mutex<FileState>,
}

#[derive(Debug, Default)]
struct FileState {
    buffer: Vec<u8>,
    error: Option<FsError>,
}

impl FileOut {
    /// Opens (creating with `mode`, truncating unless `append`) the file at `path`.
    pub(crate) fn open(
        fs: &Fs,
        path: &str,
        append: bool,
        mode: u32,
        owner: Owner,
    ) -> Result<Arc<Self>, FsError> {
        fs.write(path, Bytes::new(), append, mode, owner)?;
        let real = fs.resolve(path, true)?;
        Ok(Arc::new(Self {
            fs: fs.clone(),
            path: real,
            owner,
            state: Mutex::new(FileState::default()),
        }))
    }

    fn write(&self, bytes: &[u8]) {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if state.error.is_some() {
            return;
        }
        state.buffer.extend_from_slice(bytes);
        if state.buffer.len() >= FILE_BUFFER {
            Self::flush(&self.fs, &self.path, self.owner, &mut state);
        }
    }

    fn flush(fs: &Fs, path: &str, owner: Owner, state: &mut FileState) {
        if state.buffer.is_empty() || state.error.is_some() {
            return;
        }
        let data = Bytes::from(std::mem::take(&mut state.buffer));
        if let Err(error) = fs.0.write(path, data, true, 0o644, owner) {
            state.error = Some(error);
        }
    }

    /// Writes what is buffered; the first error any write met.
    pub(crate) fn finish(&self) -> Result<(), FsError> {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        Self::flush(&self.fs, &self.path, self.owner, &mut state);
        state.error.map_or(Ok(()), Err)
    }
}

impl Drop for FileOut {
    fn drop(&mut self) {
        let state = self.state.get_mut().unwrap_or_else(PoisonError::into_inner);
        Self::flush(&self.fs, &self.path, self.owner, state);
    }
}

/// Where an output descriptor goes.
#[derive(Debug, Clone)]
pub(crate) enum Sink {
    /// The program's stdout or stderr, or a pipe.
    Chan(Sender<Bytes>),
    /// `/dev/null`.
    Null,
    /// `/dev/full`.
    Full,
    /// A file.
    File(Arc<FileOut>),
    /// A command substitution's output.
    Capture(Arc<Mutex<Vec<u8>>>),
}

/// Why a write failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteError {
    /// The reader went away.
    BrokenPipe,
    /// `/dev/full` or a full tree.
    NoSpace,
}

impl Sink {
    /// Writes all of `bytes`, waiting while a channel is full.
    pub(crate) async fn write(&self, bytes: Bytes) -> Result<(), WriteError> {
        match self {
            Sink::Chan(sender) => {
                let mut offset = 0;
                while offset < bytes.len() {
                    let end = bytes.len().min(offset + CHUNK);
                    sender
                        .send(bytes.slice(offset..end))
                        .await
                        .map_err(|_| WriteError::BrokenPipe)?;
                    offset = end;
                }
                Ok(())
            }
            Sink::Null => {
                // Writes to /dev/null never wait: give the runtime (and the signal watcher) a turn.
                tokio::task::consume_budget().await;
                Ok(())
            }
            Sink::Full => Err(WriteError::NoSpace),
            Sink::File(file) => {
                tokio::task::consume_budget().await;
                file.write(&bytes);
                Ok(())
            }
            Sink::Capture(buffer) => {
                tokio::task::consume_budget().await;
                let mut buffer = buffer.lock().unwrap_or_else(PoisonError::into_inner);
                let room = CAPTURE_LIMIT.saturating_sub(buffer.len());
                buffer.extend_from_slice(&bytes[..bytes.len().min(room)]);
                Ok(())
            }
        }
    }
}

/// One descriptor.
#[derive(Debug, Clone)]
pub(crate) enum Fd {
    In(Input),
    Out(Sink),
}

/// A process's descriptors.
#[derive(Debug, Clone, Default)]
pub(crate) struct Fds {
    table: BTreeMap<u32, Fd>,
}

impl Fds {
    /// Standard input, output and error.
    pub(crate) fn standard(input: Input, out: Sink, err: Sink) -> Self {
        let mut table = BTreeMap::new();
        table.insert(0, Fd::In(input));
        table.insert(1, Fd::Out(out));
        table.insert(2, Fd::Out(err));
        Self { table }
    }

    pub(crate) fn get(&self, fd: u32) -> Option<&Fd> {
        self.table.get(&fd)
    }

    pub(crate) fn set(&mut self, fd: u32, to: Fd) {
        self.table.insert(fd, to);
    }

    pub(crate) fn close(&mut self, fd: u32) {
        self.table.remove(&fd);
    }

    /// Where descriptor `fd` writes (a closed or input descriptor swallows, as `EBADF` would fail).
    pub(crate) fn sink(&self, fd: u32) -> Sink {
        match self.table.get(&fd) {
            Some(Fd::Out(sink)) => sink.clone(),
            _ => Sink::Null,
        }
    }

    /// Standard input (an empty one when closed).
    pub(crate) fn input(&self) -> Input {
        match self.table.get(&0) {
            Some(Fd::In(input)) => input.clone(),
            _ => input_of(Bytes::new()),
        }
    }
}
