//! The request journal: every request in arrival order, with what was answered.

use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex};

/// The listener a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Listener {
    /// The Unix socket (always trusted).
    Unix,
    /// The HTTPS listener.
    Https,
    /// A direct call of the app, without a socket (unit tests of the fake itself).
    Direct,
}

/// What the fake answered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Answer {
    /// Not answered yet (in flight, stalled or dropped with the connection).
    Pending,
    /// An HTTP status was sent (101 for a websocket upgrade).
    Status {
        /// The HTTP status code.
        code: u16,
    },
    /// A fault was applied instead of (or on top of) a normal answer.
    Fault {
        /// The fault's kind (as in the rule format).
        fault: String,
        /// The HTTP status sent with it, if any.
        code: Option<u16>,
    },
}

/// One request as received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalEntry {
    /// Arrival number, from 1.
    pub seq: u64,
    /// Where it came in.
    pub listener: Listener,
    /// SHA-256 fingerprint (hex) of the client certificate, if one was presented.
    pub cert_fingerprint: Option<String>,
    /// Whether the client was trusted.
    pub trusted: bool,
    /// HTTP method.
    pub method: String,
    /// Path, without the query.
    pub path: String,
    /// Raw query string, if any.
    pub query: Option<String>,
    /// `If-Match` header, if sent.
    pub if_match: Option<String>,
    /// `Content-Type` header, if sent.
    pub content_type: Option<String>,
    /// Request body (lossy UTF-8).
    pub body: String,
    /// Whether this was a websocket upgrade request.
    pub websocket: bool,
    /// Whether the request was accepted: a change was made or an operation was created.
    pub applied: bool,
    /// The kinds of the faults a rule selected for this request (empty: none).
    #[serde(default)]
    pub faults: Vec<String>,
    /// What was answered.
    pub answer: Answer,
}

/// The shared journal. Sequence numbers keep counting after a clear.
#[derive(Debug, Default, Clone)]
pub(crate) struct Journal {
    inner: Arc<Mutex<Inner>>,
}

#[derive(Debug, Default)]
struct Inner {
    cleared: u64,
    entries: Vec<JournalEntry>,
}

impl Journal {
    /// Records an arrival; returns its sequence number.
    pub(crate) fn record(&self, mut entry: JournalEntry) -> u64 {
        let mut inner = self.lock();
        entry.seq = inner.cleared + inner.entries.len() as u64 + 1;
        let seq = entry.seq;
        inner.entries.push(entry);
        seq
    }

    pub(crate) fn set_applied(&self, seq: u64) {
        self.update(seq, |e| e.applied = true);
    }

    pub(crate) fn set_faults(&self, seq: u64, kinds: &[&str]) {
        self.update(seq, |e| {
            e.faults = kinds.iter().map(|k| k.to_string()).collect()
        });
    }

    pub(crate) fn set_answer(&self, seq: u64, answer: Answer) {
        self.update(seq, |e| e.answer = answer);
    }

    fn update(&self, seq: u64, change: impl FnOnce(&mut JournalEntry)) {
        let mut inner = self.lock();
        let index = seq.checked_sub(inner.cleared + 1);
        if let Some(entry) = index.and_then(|i| inner.entries.get_mut(i as usize)) {
            change(entry);
        }
    }

    pub(crate) fn entries(&self) -> Vec<JournalEntry> {
        self.lock().entries.clone()
    }

    pub(crate) fn clear(&self) {
        let mut inner = self.lock();
        inner.cleared += inner.entries.len() as u64;
        inner.entries.clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
