//! `fake-incus replay`: sends the requests of a transcript ([`crate::transcript`]), in order, to
//! an Incus on a Unix socket (a fresh fake, usually) and reports every difference between the
//! recorded answers and the new ones, as [`crate::differ::compare`] sees them (status, envelope,
//! keys, types, error text with ids masked), plus the bodies that are not JSON (files) by digest
//! and the data an exec websocket sent by size and digest.
//!
//! Ids the server made up (operation ids, websocket secrets, fingerprints, dates, ETags) differ
//! from one server to another: each answer is walked next to the recorded one, and every such
//! value that differs is mapped, so that a later request that carries the recorded value (an
//! operation the client waited on, a websocket it opened, an `If-Match`) carries the replayed
//! one instead.
//!
//! Requests keep their recorded order and pace. A request starts only after every request that
//! was answered before it started in the recording was answered in the replay (it may depend
//! on those answers); requests that overlapped in the recording (a long-poll wait, a
//! websocket) overlap in the replay too.

use crate::client::{self, Request};
use crate::differ::{compare, Observed};
use crate::transcript::{Body, Exchange, FrameKind, Side};
use futures_util::{SinkExt, StreamExt};
use http::{HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tokio_tungstenite::tungstenite::Message;

/// How long one replayed request may take before it counts as a difference.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(120);
/// How long a replayed websocket may stay open after it closed in the recording.
const WEBSOCKET_GRACE: Duration = Duration::from_secs(5);

/// One difference between a recorded answer and the replayed one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Difference {
    /// The exchange's number in the transcript.
    pub seq: u64,
    /// The request's method.
    pub method: String,
    /// The request's path and query, as recorded.
    pub path: String,
    /// What differs (`real` is the recorded answer, `fake` the replayed one).
    pub what: String,
}

/// What a replay found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// How many exchanges the transcript holds.
    pub exchanges: usize,
    /// How many were sent.
    pub replayed: usize,
    /// Every difference, in the transcript's order.
    pub differences: Vec<Difference>,
}

impl Report {
    /// The report as text: a summary line, then one line per difference.
    pub fn text(&self) -> String {
        let mut out = format!(
            "replay: {} exchanges, {} replayed, {} differences\n",
            self.exchanges,
            self.replayed,
            self.differences.len()
        );
        for d in &self.differences {
            out.push_str(&format!("#{} {} {}: {}\n", d.seq, d.method, d.path, d.what));
        }
        out
    }
}

/// Values a server makes up, mapped from the recorded ones to the replayed ones.
#[derive(Debug, Default)]
struct Ids {
    pairs: Vec<(String, String)>,
}

/// Uuids (operation ids), 64-hex values (websocket secrets, fingerprints) and RFC 3339 dates.
fn id_pattern() -> &'static regex::Regex {
    static PATTERN: OnceLock<regex::Regex> = OnceLock::new();
    PATTERN.get_or_init(|| {
        regex::Regex::new(
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{64}|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)",
        )
        .expect("valid regex")
    })
}

impl Ids {
    /// Notes the made-up values of `replayed` that differ from `recorded`'s at the same place.
    fn learn(&mut self, recorded: &Value, replayed: &Value) {
        match (recorded, replayed) {
            (Value::Object(r), Value::Object(f)) => {
                for (key, value) in r {
                    if let Some(other) = f.get(key) {
                        self.learn(value, other);
                    }
                }
            }
            (Value::Array(r), Value::Array(f)) => {
                for (a, b) in r.iter().zip(f) {
                    self.learn(a, b);
                }
            }
            (Value::String(r), Value::String(f)) => self.learn_text(r, f),
            _ => {}
        }
    }

    /// Pairs the ids of two texts, in order, when they hold as many.
    fn learn_text(&mut self, recorded: &str, replayed: &str) {
        if recorded == replayed {
            return;
        }
        let ids = |text| id_pattern().find_iter(text).map(|m| m.as_str());
        if ids(recorded).count() != ids(replayed).count() {
            return;
        }
        for (r, f) in ids(recorded).zip(ids(replayed)) {
            if r != f && !self.pairs.iter().any(|(known, _)| known == r) {
                self.pairs.push((r.to_string(), f.to_string()));
            }
        }
    }

    /// Notes a header's value (an ETag) whole.
    fn learn_whole(&mut self, recorded: &str, replayed: &str) {
        let (r, f) = (recorded.trim_matches('"'), replayed.trim_matches('"'));
        if !r.is_empty() && r != f && !self.pairs.iter().any(|(known, _)| known == r) {
            self.pairs.push((r.to_string(), f.to_string()));
        }
    }

    /// `text` with every recorded value replaced by its replayed one.
    fn apply(&self, text: &str) -> String {
        self.pairs
            .iter()
            .fold(text.to_string(), |acc, (r, f)| acc.replace(r, f))
    }
}

fn header_map(headers: &[(String, String)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            map.append(name, value);
        }
    }
    map
}

/// What a replayed exchange came back with.
enum Outcome {
    /// An answer to a plain request.
    Answer(client::Reply),
    /// A websocket handshake's status, and the task relaying its frames (its differences).
    Websocket(u16, Option<JoinHandle<Vec<String>>>),
    /// The request could not be sent or was not answered.
    Failed(String),
}

/// Why a replay could not run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReplayError {
    /// The socket does not answer.
    #[error("{socket} does not answer: {message}")]
    Unreachable {
        /// The socket.
        socket: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// Replays `exchanges` (ordered by `seq`, as [`crate::transcript::parse`] gives them) against the
/// Incus on `socket`, at their recorded pace.
pub async fn replay(exchanges: &[Exchange], socket: &Path) -> Result<Report, ReplayError> {
    client::send(socket, Request::get("/1.0"))
        .await
        .map_err(|e| ReplayError::Unreachable {
            socket: socket.to_path_buf(),
            message: e.to_string(),
        })?;
    let start = Instant::now();
    let mut ids = Ids::default();
    let mut differences = Vec::new();
    let mut in_flight: Vec<(u64, usize, JoinHandle<Outcome>)> = Vec::new();
    let mut frame_tasks: Vec<(usize, JoinHandle<Vec<String>>)> = Vec::new();
    let mut replayed = 0;
    for (index, exchange) in exchanges.iter().enumerate() {
        // Everything answered before this request started in the recording first.
        let mut waiting = Vec::new();
        for (end, i, task) in in_flight.drain(..) {
            if end <= exchange.started_us {
                let outcome = task.await.unwrap_or_else(|e| Outcome::Failed(e.to_string()));
                settle(&exchanges[i], outcome, &mut ids, &mut differences, &mut frame_tasks, i);
            } else {
                waiting.push((end, i, task));
            }
        }
        in_flight = waiting;
        tokio::time::sleep_until((start + Duration::from_micros(exchange.started_us)).into()).await;
        let request = &exchange.request;
        if request.body.truncated {
            differences.push(difference(
                exchange,
                format!(
                    "not replayed: the transcript kept {} of the {} bytes of the request body",
                    request.body.bytes().map_or(0, |b| b.len()),
                    request.body.size
                ),
            ));
            continue;
        }
        replayed += 1;
        let path = ids.apply(&request.path_and_query());
        let headers: Vec<(String, String)> = request
            .headers
            .iter()
            .filter(|(name, _)| name != "upgrade")
            .map(|(name, value)| (name.clone(), ids.apply(value)))
            .collect();
        let socket = socket.to_path_buf();
        let end = exchange.started_us + exchange.timing.upstream_us + exchange.timing.recorder_us;
        let task = if request.is_websocket() {
            let frames = exchange.websocket.clone();
            let ids_now = ids.pairs.clone();
            tokio::spawn(async move { open_websocket(&socket, &path, frames, ids_now).await })
        } else {
            let body = match (&request.body.text, request.body.bytes()) {
                (Some(text), _) => ids.apply(text).into_bytes(),
                (None, bytes) => bytes.unwrap_or_default(),
            };
            let mut outgoing = Request::new(&request.method, &path).body(body);
            for (name, value) in &headers {
                outgoing = outgoing.header(name, value);
            }
            tokio::spawn(async move {
                match tokio::time::timeout(REQUEST_TIMEOUT, client::send(&socket, outgoing)).await
                {
                    Ok(Ok(reply)) => Outcome::Answer(reply),
                    Ok(Err(err)) => Outcome::Failed(err.to_string()),
                    Err(_) => Outcome::Failed(format!("no answer within {REQUEST_TIMEOUT:?}")),
                }
            })
        };
        in_flight.push((end, index, task));
    }
    for (_, i, task) in in_flight {
        let outcome = task.await.unwrap_or_else(|e| Outcome::Failed(e.to_string()));
        settle(&exchanges[i], outcome, &mut ids, &mut differences, &mut frame_tasks, i);
    }
    for (i, task) in frame_tasks {
        for what in task.await.unwrap_or_else(|e| vec![e.to_string()]) {
            differences.push(difference(&exchanges[i], what));
        }
    }
    differences.sort_by_key(|d| d.seq);
    Ok(Report {
        exchanges: exchanges.len(),
        replayed,
        differences,
    })
}

fn difference(exchange: &Exchange, what: String) -> Difference {
    Difference {
        seq: exchange.seq,
        method: exchange.request.method.clone(),
        path: exchange.request.path_and_query(),
        what,
    }
}

/// Compares a replayed answer with the recorded one and learns its made-up values.
fn settle(
    exchange: &Exchange,
    outcome: Outcome,
    ids: &mut Ids,
    differences: &mut Vec<Difference>,
    frame_tasks: &mut Vec<(usize, JoinHandle<Vec<String>>)>,
    index: usize,
) {
    let recorded = &exchange.response;
    let mut found = Vec::new();
    match outcome {
        Outcome::Failed(message) => found.push(format!("no answer: {message}")),
        Outcome::Websocket(status, frames) => {
            if status != recorded.status {
                found.push(format!(
                    "websocket handshake: real {} vs fake {status}",
                    recorded.status
                ));
            }
            if let Some(task) = frames {
                frame_tasks.push((index, task));
            }
        }
        Outcome::Answer(reply) => {
            let recorded_bytes = recorded.body.bytes().unwrap_or_default();
            let real = Observed::new(
                recorded.status,
                &header_map(&recorded.headers),
                &recorded_bytes,
            );
            let fake = Observed::new(reply.status(), reply.headers(), reply.bytes());
            if recorded.body.truncated {
                found.extend(
                    compare(
                        &Observed {
                            body: Value::Null,
                            ..real.clone()
                        },
                        &Observed {
                            body: Value::Null,
                            ..fake.clone()
                        },
                    )
                    .into_iter()
                    .filter(|d| !d.starts_with("newlines")),
                );
            } else {
                found.extend(compare(&real, &fake));
            }
            if !real.body.is_object() && !fake.body.is_object() {
                let digest = hex::encode(Sha256::digest(reply.bytes()));
                if digest != recorded.body.sha256 {
                    found.push(format!(
                        "body content: real {} bytes vs fake {} bytes",
                        recorded.body.size,
                        reply.bytes().len()
                    ));
                }
            }
            ids.learn(&real.body, &fake.body);
            if let (Some(r), Some(f)) = (&real.etag, &fake.etag) {
                ids.learn_whole(r, f);
            }
        }
    }
    differences.extend(found.into_iter().map(|what| difference(exchange, what)));
}

/// The data frames one side sent: their count, whole size and the digest of their kept bytes
/// (`None` when some were cut).
fn data_summary<'a>(frames: impl Iterator<Item = &'a Body>) -> (usize, Option<String>) {
    let mut hasher = Sha256::new();
    let mut size = 0;
    let mut whole = true;
    for body in frames {
        size += body.size;
        whole &= !body.truncated;
        hasher.update(body.bytes().unwrap_or_default());
    }
    (size, whole.then(|| hex::encode(hasher.finalize())))
}

/// Opens the websocket, then relays the recorded client frames at their pace in a task of its
/// own, which compares what the server sent with the recording.
async fn open_websocket(
    socket: &Path,
    path: &str,
    recorded: Option<crate::transcript::Websocket>,
    ids: Vec<(String, String)>,
) -> Outcome {
    let stream = match tokio::net::UnixStream::connect(socket).await {
        Ok(stream) => stream,
        Err(err) => return Outcome::Failed(err.to_string()),
    };
    let url = format!("ws://incus{path}");
    let ws = match tokio_tungstenite::client_async(url.as_str(), stream).await {
        Ok((ws, _)) => ws,
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            return Outcome::Websocket(response.status().as_u16(), None)
        }
        Err(err) => return Outcome::Failed(err.to_string()),
    };
    let Some(recorded) = recorded else {
        return Outcome::Websocket(101, None);
    };
    let events = path.starts_with("/1.0/events");
    let task = tokio::spawn(async move {
        let ids = Ids { pairs: ids };
        let opened = Instant::now();
        let (mut sink, mut stream) = ws.split();
        let deadline = opened + Duration::from_micros(recorded.closed_us) + WEBSOCKET_GRACE;
        let server_closed_first = recorded
            .frames
            .iter()
            .find(|f| f.kind == FrameKind::Close)
            .is_some_and(|f| f.from == Side::Server);
        let client_frames: Vec<_> = recorded
            .frames
            .iter()
            .filter(|f| f.from == Side::Client)
            .filter(|f| match f.kind {
                FrameKind::Text | FrameKind::Binary => true,
                FrameKind::Close => !server_closed_first,
                FrameKind::Ping | FrameKind::Pong => false,
            })
            .cloned()
            .collect();
        let send = async move {
            for frame in client_frames {
                tokio::time::sleep_until((opened + Duration::from_micros(frame.at_us)).into())
                    .await;
                let data = frame.data.bytes().unwrap_or_default();
                let message = match frame.kind {
                    FrameKind::Text => Message::text(ids.apply(&String::from_utf8_lossy(&data))),
                    FrameKind::Binary => Message::binary(data),
                    _ => {
                        let _ = sink.close().await;
                        break;
                    }
                };
                if sink.send(message).await.is_err() {
                    break;
                }
            }
            // The reader decides when the exchange is over.
            std::future::pending::<()>().await;
        };
        let receive = async {
            let mut got = Vec::new();
            while let Ok(Some(Ok(message))) =
                tokio::time::timeout_at(deadline.into(), stream.next()).await
            {
                match message {
                    Message::Text(text) => got.push(Body::new(text.as_bytes(), usize::MAX)),
                    Message::Binary(data) => got.push(Body::new(&data, usize::MAX)),
                    Message::Close(_) => break,
                    _ => {}
                }
            }
            got
        };
        let got = tokio::select! {
            got = receive => got,
            () = send => Vec::new(),
        };
        if events {
            // The events' contents (ids, times, the other clients' doings) are not compared.
            return Vec::new();
        }
        let real = data_summary(
            recorded
                .frames
                .iter()
                .filter(|f| f.from == Side::Server)
                .filter(|f| matches!(f.kind, FrameKind::Text | FrameKind::Binary))
                .map(|f| &f.data),
        );
        let fake = data_summary(got.iter());
        let same = real.0 == fake.0 && (real.1.is_none() || real.1 == fake.1);
        if same {
            Vec::new()
        } else {
            vec![format!(
                "websocket data from the server: real {} bytes vs fake {} bytes",
                real.0, fake.0
            )]
        }
    });
    Outcome::Websocket(101, Some(task))
}
