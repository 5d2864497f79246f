//! The request journal: the requests in arrival order, with what was answered, bounded.
//!
//! Every request gets a sequence number. The journal keeps the last [`DEFAULT_LIMIT`] entries
//! (or the configured limit; 0 keeps none) and counts the ones it let go. Bodies are kept up to
//! [`BODY_KEPT`] bytes; each entry always has the full body's size and SHA-256, so that "sent
//! exactly once, with this body" stays provable after the cut. Expectations count matching
//! requests as they arrive, whether or not their entries are kept.

use crate::pattern::glob_match;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// How many entries the journal keeps by default (the oldest go first).
pub const DEFAULT_LIMIT: usize = 10_000;
/// How many bytes of a request body an entry keeps (`body`); `body_size` and `body_sha256`
/// describe the whole body.
pub const BODY_KEPT: usize = 4096;
/// How many control messages an exec control websocket's entry keeps.
pub const CONTROL_MESSAGES_KEPT: usize = 256;
/// How many bytes of one control message are kept.
const CONTROL_MESSAGE_BYTES: usize = 1024;

/// The listener a request came in on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Listener {
    /// The Unix socket (always trusted).
    Unix,
    /// The HTTPS listener.
    Https,
    /// A call through `FakeIncus::call`, without a socket (trusted, as the Unix socket).
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

/// A message a client sent on an exec `control` websocket.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ControlMessage {
    /// The text frame as sent (cut to 1 KiB).
    pub message: String,
    /// The signal number of a `{"command": "signal"}` message.
    pub signal: Option<i32>,
    /// Whether the signal reached the command (false when a fault ignored it, or after the
    /// command ended).
    pub delivered: bool,
}

impl ControlMessage {
    pub(crate) fn new(text: &str, signal: Option<i32>, delivered: bool) -> Self {
        Self {
            message: cut(text.as_bytes(), CONTROL_MESSAGE_BYTES),
            signal,
            delivered,
        }
    }
}

/// One request as received.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
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
    /// Request body (lossy UTF-8), at most [`BODY_KEPT`] bytes of it.
    pub body: String,
    /// The whole body's length in bytes.
    #[serde(default)]
    pub body_size: u64,
    /// SHA-256 (hex) of the whole body.
    #[serde(default)]
    pub body_sha256: String,
    /// Whether `body` holds less than the whole body.
    #[serde(default)]
    pub body_truncated: bool,
    /// Whether this was a websocket upgrade request.
    pub websocket: bool,
    /// Whether the request was accepted: a change was made or an operation was created.
    pub applied: bool,
    /// The kinds of the faults a rule selected for this request (empty: none).
    #[serde(default)]
    pub faults: Vec<String>,
    /// For an exec `control` websocket: the messages the client sent on it, in order (the
    /// first [`CONTROL_MESSAGES_KEPT`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub control: Vec<ControlMessage>,
    /// What was answered.
    pub answer: Answer,
    /// The cluster member whose listener took the request (`None`: not clustered).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub member: Option<String>,
}

impl JournalEntry {
    /// A fresh entry for a request from a trusted client without a certificate, no headers
    /// and not a websocket (`seq` is set when it is recorded); the caller fills in the rest.
    pub(crate) fn received(listener: Listener, method: String, path: String, body: &[u8]) -> Self {
        use sha2::Digest;
        Self {
            seq: 0,
            listener,
            cert_fingerprint: None,
            trusted: true,
            method,
            path,
            query: None,
            if_match: None,
            content_type: None,
            body: cut(body, BODY_KEPT),
            body_size: body.len() as u64,
            body_sha256: if body.is_empty() {
                EMPTY_SHA256.to_string()
            } else {
                hex::encode(sha2::Sha256::digest(body))
            },
            body_truncated: body.len() > BODY_KEPT,
            websocket: false,
            applied: false,
            faults: Vec::new(),
            control: Vec::new(),
            answer: Answer::Pending,
            member: None,
        }
    }

    /// Whether the entry is for `method` (`"*"`: any) and a path the pattern matches (`*`
    /// within one segment, `**` across segments).
    pub fn is(&self, method: &str, pattern: &str) -> bool {
        (method == "*" || method.eq_ignore_ascii_case(&self.method))
            && glob_match(pattern.as_bytes(), self.path.as_bytes())
    }

    /// The control messages that carried `signal` and reached the command.
    pub fn signals_delivered(&self, signal: i32) -> usize {
        self.control
            .iter()
            .filter(|m| m.signal == Some(signal) && m.delivered)
            .count()
    }
}

/// The SHA-256 of an empty body (most requests have one), so that it is not hashed each time.
const EMPTY_SHA256: &str = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

/// At most `limit` bytes of `bytes` as lossy UTF-8 (never splitting the text mid-character
/// in a way that adds more than a replacement character).
fn cut(bytes: &[u8], limit: usize) -> String {
    lossy(&bytes[..bytes.len().min(limit)])
}

/// `bytes` as lossy UTF-8: `String::from_utf8_lossy`, with the check for valid UTF-8 (nearly
/// every header and body) first, which is several times cheaper than its chunk by chunk walk.
pub(crate) fn lossy(bytes: &[u8]) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_owned(),
        Err(_) => String::from_utf8_lossy(bytes).into_owned(),
    }
}

/// A page of the journal: the kept entries after a sequence number, and what was let go.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct JournalPage {
    /// The kept entries with `seq` above the page's `since`, in order.
    pub entries: Vec<JournalEntry>,
    /// Entries dropped so far because the journal was full (or off), since the last clear.
    pub dropped: u64,
    /// The journal's entry limit (0: off).
    pub limit: usize,
    /// The sequence number of the last request received (0: none yet); ask for
    /// `since = last_seq` next to get only newer entries.
    pub last_seq: u64,
}

/// The shared journal. Sequence numbers keep counting after a clear.
#[derive(Debug, Clone)]
pub(crate) struct Journal {
    inner: Arc<Mutex<Inner>>,
    /// Woken at every arrival (for [`Journal::wait_for`]).
    arrived: Arc<tokio::sync::Notify>,
}

impl Default for Journal {
    fn default() -> Self {
        Self::new(DEFAULT_LIMIT)
    }
}

#[derive(Debug)]
struct Inner {
    last_seq: u64,
    dropped: u64,
    limit: usize,
    entries: VecDeque<JournalEntry>,
    expectations: Vec<Weak<Counter>>,
}

impl Journal {
    /// A journal keeping at most `limit` entries (0: none).
    pub(crate) fn new(limit: usize) -> Self {
        Self {
            inner: Arc::new(Mutex::new(Inner {
                last_seq: 0,
                dropped: 0,
                limit,
                entries: VecDeque::new(),
                expectations: Vec::new(),
            })),
            arrived: Arc::new(tokio::sync::Notify::new()),
        }
    }

    /// Records an arrival; returns its sequence number. The entry is built by the caller,
    /// outside the lock; under it the entry is only numbered, counted by the expectations (if
    /// any) and moved in. The entry it pushes out is freed after the lock is released.
    pub(crate) fn record(&self, mut entry: JournalEntry) -> u64 {
        let mut inner = self.lock();
        inner.last_seq += 1;
        let seq = inner.last_seq;
        entry.seq = seq;
        if !inner.expectations.is_empty() {
            inner
                .expectations
                .retain(|counter| match counter.upgrade() {
                    Some(counter) => {
                        if entry.is(&counter.method, &counter.pattern) {
                            counter.seen.fetch_add(1, Ordering::SeqCst);
                        }
                        true
                    }
                    None => false,
                });
        }
        let evicted = if inner.limit == 0 {
            inner.dropped += 1;
            Some(entry)
        } else {
            inner.entries.push_back(entry);
            if inner.entries.len() > inner.limit {
                inner.dropped += 1;
                inner.entries.pop_front()
            } else {
                None
            }
        };
        drop(inner);
        drop(evicted);
        self.arrived.notify_waiters();
        seq
    }

    /// Waits until at least `count` kept entries after `since` satisfy `matches`, or `timeout`
    /// passes. Returns whether they did, and the matching entries.
    pub(crate) async fn wait_for(
        &self,
        matches: impl Fn(&JournalEntry) -> bool,
        count: usize,
        since: u64,
        timeout: std::time::Duration,
    ) -> (bool, Vec<JournalEntry>) {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            // Registered before the entries are read, so that no arrival in between is missed.
            let arrival = self.arrived.notified();
            tokio::pin!(arrival);
            arrival.as_mut().enable();
            let found: Vec<JournalEntry> = self
                .lock()
                .entries
                .iter()
                .filter(|e| e.seq > since && matches(e))
                .cloned()
                .collect();
            if found.len() >= count {
                return (true, found);
            }
            if tokio::time::timeout_at(deadline, arrival).await.is_err() {
                return (false, found);
            }
        }
    }

    pub(crate) fn set_applied(&self, seq: u64) {
        self.update(seq, |e| e.applied = true);
    }

    pub(crate) fn set_faults(&self, seq: u64, kinds: &[&str]) {
        self.update(seq, |e| {
            e.faults = kinds.iter().map(|k| k.to_string()).collect();
        });
    }

    pub(crate) fn set_answer(&self, seq: u64, answer: Answer) {
        self.update(seq, |e| e.answer = answer);
    }

    pub(crate) fn add_control_message(&self, seq: u64, message: ControlMessage) {
        self.update(seq, |e| {
            if e.control.len() < CONTROL_MESSAGES_KEPT {
                e.control.push(message);
            }
        });
    }

    fn update(&self, seq: u64, change: impl FnOnce(&mut JournalEntry)) {
        let mut inner = self.lock();
        let Some(first) = inner.entries.front().map(|e| e.seq) else {
            return;
        };
        let index = seq.checked_sub(first).and_then(|i| usize::try_from(i).ok());
        if let Some(entry) = index.and_then(|i| inner.entries.get_mut(i)) {
            change(entry);
        }
    }

    pub(crate) fn entries(&self) -> Vec<JournalEntry> {
        self.lock().entries.iter().cloned().collect()
    }

    /// The kept entries after `since`, with the counts.
    pub(crate) fn page(&self, since: u64) -> JournalPage {
        let inner = self.lock();
        JournalPage {
            entries: inner
                .entries
                .iter()
                .filter(|e| e.seq > since)
                .cloned()
                .collect(),
            dropped: inner.dropped,
            limit: inner.limit,
            last_seq: inner.last_seq,
        }
    }

    /// Forgets the entries and the dropped count (sequence numbers keep counting;
    /// expectations keep their counts).
    pub(crate) fn clear(&self) {
        let mut inner = self.lock();
        inner.entries.clear();
        inner.dropped = 0;
    }

    /// Starts counting the requests for `method` and `pattern` that arrive from now on.
    pub(crate) fn expect(&self, method: &str, pattern: &str, times: u64) -> Expectation {
        let counter = Arc::new(Counter {
            method: method.to_string(),
            pattern: pattern.to_string(),
            seen: AtomicU64::new(0),
        });
        let since = {
            let mut inner = self.lock();
            inner.expectations.push(Arc::downgrade(&counter));
            inner.last_seq
        };
        Expectation {
            counter,
            times,
            checked: false,
            journal: self.clone(),
            since,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

#[derive(Debug)]
struct Counter {
    method: String,
    pattern: String,
    seen: AtomicU64,
}

/// "This request exactly n times": counts the matching requests that arrive while it lives,
/// and panics when dropped with another count (unless the thread is already panicking).
/// Made by [`crate::FakeIncus::expect`].
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use fake_incus::FakeIncus;
/// let fake = FakeIncus::builder().start().await?;
/// let once = fake.expect("GET", "/1.0", 1);
/// assert_eq!(once.received(), 0);
/// assert!(once.verify().is_err());
/// # drop(once.forget());
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "the expectation is checked when it is dropped"]
pub struct Expectation {
    counter: Arc<Counter>,
    times: u64,
    checked: bool,
    /// The journal, and its last sequence number when the expectation was made: what was
    /// received since is listed when the count is off.
    journal: Journal,
    since: u64,
}

/// How many received requests a failed expectation lists at most.
const LISTED_REQUESTS: usize = 50;

/// An expectation that was not met: the count, and every request received meanwhile (as
/// wiremock lists them), so that a wrong path or method shows at once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "expected {expected} request(s) {method} {pattern}, received {received}; requests received \
     meanwhile: {}",
    listed(requests)
)]
#[non_exhaustive]
pub struct ExpectationError {
    /// The method expected (`*`: any).
    pub method: String,
    /// The path pattern.
    pub pattern: String,
    /// How many were expected.
    pub expected: u64,
    /// How many arrived.
    pub received: u64,
    /// Every request the journal kept since the expectation was made (`METHOD /path?query`),
    /// the first 50 of them.
    pub requests: Vec<String>,
}

fn listed(requests: &[String]) -> String {
    if requests.is_empty() {
        return "none".to_owned();
    }
    let mut text = requests.join(", ");
    if requests.len() == LISTED_REQUESTS {
        text.push_str(", ...");
    }
    text
}

impl Expectation {
    /// How many matching requests arrived so far.
    pub fn received(&self) -> u64 {
        self.counter.seen.load(Ordering::SeqCst)
    }

    /// Checks the count now.
    pub fn verify(&self) -> Result<(), ExpectationError> {
        let received = self.received();
        if received == self.times {
            return Ok(());
        }
        let requests = self
            .journal
            .page(self.since)
            .entries
            .iter()
            .take(LISTED_REQUESTS)
            .map(|e| match &e.query {
                Some(query) => format!("{} {}?{query}", e.method, e.path),
                None => format!("{} {}", e.method, e.path),
            })
            .collect();
        Err(ExpectationError {
            method: self.counter.method.clone(),
            pattern: self.counter.pattern.clone(),
            expected: self.times,
            received,
            requests,
        })
    }

    /// Checks the count now and consumes the expectation (no check on drop).
    pub fn finish(mut self) -> Result<(), ExpectationError> {
        self.checked = true;
        self.verify()
    }

    /// Drops the expectation without checking it.
    pub fn forget(mut self) {
        self.checked = true;
    }
}

impl Drop for Expectation {
    fn drop(&mut self) {
        if self.checked || std::thread::panicking() {
            return;
        }
        if let Err(err) = self.verify() {
            panic!("{err}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(method: &str, path: &str, body: &[u8]) -> JournalEntry {
        JournalEntry::received(Listener::Direct, method.into(), path.into(), body)
    }

    #[test]
    fn the_journal_keeps_the_last_entries_and_counts_the_dropped() {
        let journal = Journal::new(2);
        for _ in 0..5 {
            journal.record(entry("GET", "/1.0", b""));
        }
        let page = journal.page(0);
        assert_eq!(
            page.entries.iter().map(|e| e.seq).collect::<Vec<_>>(),
            [4, 5]
        );
        assert_eq!((page.dropped, page.limit, page.last_seq), (3, 2, 5));
        assert_eq!(journal.page(4).entries.len(), 1);
        journal.set_applied(5);
        journal.set_applied(1);
        assert!(journal.entries()[1].applied);
    }

    #[test]
    fn a_limit_of_zero_keeps_nothing_but_counts_and_expectations_go_on() {
        let journal = Journal::new(0);
        let seen = journal.expect("POST", "/1.0/instances", 1);
        journal.record(entry("POST", "/1.0/instances", b"{}"));
        assert!(journal.entries().is_empty());
        assert_eq!(journal.page(0).dropped, 1);
        assert_eq!(seen.finish(), Ok(()));
    }

    #[test]
    fn large_bodies_are_cut_but_their_size_and_digest_stay() {
        let journal = Journal::default();
        let body = vec![b'x'; BODY_KEPT + 10];
        journal.record(entry("POST", "/1.0/instances", &body));
        let kept = &journal.entries()[0];
        assert_eq!(kept.body.len(), BODY_KEPT);
        assert!(kept.body_truncated);
        assert_eq!(kept.body_size, body.len() as u64);
        use sha2::Digest;
        assert_eq!(kept.body_sha256, hex::encode(sha2::Sha256::digest(&body)));
    }

    #[test]
    fn an_empty_body_has_the_sha256_of_nothing() {
        use sha2::Digest;
        let empty = entry("GET", "/1.0", b"");
        assert_eq!(empty.body_sha256, hex::encode(sha2::Sha256::digest(b"")));
        assert_eq!((empty.body_size, empty.body_truncated), (0, false));
    }

    #[test]
    fn an_expectation_counts_only_matching_requests_after_it_was_made() {
        let journal = Journal::default();
        journal.record(entry("DELETE", "/1.0/instances/a", b""));
        let delete = journal.expect("DELETE", "/1.0/instances/*", 2);
        journal.record(entry("DELETE", "/1.0/instances/b", b""));
        journal.record(entry("GET", "/1.0/instances/b", b""));
        assert_eq!(delete.received(), 1);
        let err = delete.verify().unwrap_err();
        assert_eq!((err.expected, err.received), (2, 1));
        journal.record(entry("delete", "/1.0/instances/c", b""));
        assert_eq!(delete.finish(), Ok(()));
    }

    #[test]
    fn a_failed_expectation_lists_the_requests_received_meanwhile() {
        let journal = Journal::default();
        journal.record(entry("GET", "/1.0", b""));
        let delete = journal.expect("DELETE", "/1.0/instances/web", 1);
        let mut with_query = entry("DELETE", "/1.0/instances/web2", b"");
        with_query.query = Some("project=p".into());
        journal.record(with_query);
        journal.record(entry("GET", "/1.0/operations/x/wait", b""));
        let err = delete.verify().unwrap_err();
        assert_eq!(
            err.requests,
            [
                "DELETE /1.0/instances/web2?project=p",
                "GET /1.0/operations/x/wait"
            ]
        );
        assert_eq!(
            err.to_string(),
            "expected 1 request(s) DELETE /1.0/instances/web, received 0; requests received \
             meanwhile: DELETE /1.0/instances/web2?project=p, GET /1.0/operations/x/wait"
        );
        delete.forget();
        let none = journal.expect("GET", "/1.0", 1).finish().unwrap_err();
        assert!(none.to_string().ends_with("meanwhile: none"), "{none}");
    }

    #[test]
    #[should_panic(expected = "expected 1 request(s) GET /1.0, received 0")]
    fn an_unmet_expectation_panics_when_dropped() {
        let journal = Journal::default();
        let _once = journal.expect("GET", "/1.0", 1);
    }
}
