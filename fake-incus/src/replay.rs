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
//! websocket) overlap in the replay too. The client's side of a websocket ends as it did in the
//! recording, but never before the server has sent, on it and on the other websockets of its
//! operation, what it had sent by then; a close the client only sent in answer to the server's
//! end is left to the server's end.

use crate::client::{self, Request};
use crate::differ::{compare, Observed};
use crate::transcript::{Body, Exchange, FrameKind, Side};
use futures_util::{SinkExt, StreamExt};
use http::{HeaderMap, HeaderName, HeaderValue};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};
use tokio::sync::watch;
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

/// How closely a replay keeps the recorded pace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum Pace {
    /// Each request starts when it started in the recording (after its predecessors).
    #[default]
    Recorded,
    /// As recorded, but a pause between two requests lasts at most this long (a client's
    /// think time, or a daemon slower than the fake, is cut short).
    AtMost(Duration),
}

/// Replays `exchanges` (ordered by `seq`, as [`crate::transcript::parse`] gives them) against the
/// Incus on `socket`, at their recorded pace.
pub async fn replay(exchanges: &[Exchange], socket: &Path) -> Result<Report, ReplayError> {
    replay_with(exchanges, socket, Pace::Recorded).await
}

/// [`replay`] at the given pace.
pub async fn replay_with(
    exchanges: &[Exchange],
    socket: &Path,
    pace: Pace,
) -> Result<Report, ReplayError> {
    client::send(socket, Request::get("/1.0"))
        .await
        .map_err(|e| ReplayError::Unreachable {
            socket: socket.to_path_buf(),
            message: e.to_string(),
        })?;
    let mut ended = operations_ended(exchanges);
    let mut start = Instant::now();
    let mut ids = Ids::default();
    let mut differences = Vec::new();
    let mut in_flight: Vec<(u64, usize, JoinHandle<Outcome>)> = Vec::new();
    let mut frame_tasks: Vec<(u64, usize, JoinHandle<Vec<String>>)> = Vec::new();
    let mut replayed = 0;
    let siblings = Siblings::default();
    for (index, exchange) in exchanges.iter().enumerate() {
        // Everything answered before this request started in the recording first.
        let mut waiting = Vec::new();
        for (end, i, task) in in_flight.drain(..) {
            if end <= exchange.started_us {
                let outcome = task
                    .await
                    .unwrap_or_else(|e| Outcome::Failed(e.to_string()));
                settle(
                    &exchanges[i],
                    outcome,
                    &mut ids,
                    &mut differences,
                    &mut frame_tasks,
                    i,
                );
            } else {
                waiting.push((end, i, task));
            }
        }
        in_flight = waiting;
        // And every upgraded connection that had ended by then (a file push before its pull).
        let mut open = Vec::new();
        for (end, i, task) in frame_tasks.drain(..) {
            if end <= exchange.started_us {
                for what in task.await.unwrap_or_else(|e| vec![e.to_string()]) {
                    differences.push(difference(&exchanges[i], what));
                }
            } else {
                open.push((end, i, task));
            }
        }
        frame_tasks = open;
        // And every operation whose end the client had heard of (an event) by then: it may
        // have acted on it (`delete --force` deletes once the stop ended).
        let heard: Vec<String> = ended
            .iter()
            .filter(|(_, at)| *at <= exchange.started_us)
            .map(|(id, _)| id.clone())
            .collect();
        ended.retain(|(_, at)| *at > exchange.started_us);
        for id in heard {
            let replayed_id = ids.apply(&id);
            if replayed_id != id {
                let wait = Request::get(&format!("/1.0/operations/{replayed_id}/wait?timeout=60"));
                let _ = tokio::time::timeout(REQUEST_TIMEOUT, client::send(socket, wait)).await;
            }
        }
        let mut due = start + Duration::from_micros(exchange.started_us);
        if let Pace::AtMost(gap) = pace {
            let now = Instant::now();
            if due > now + gap {
                // Later requests move up by as much as this pause is cut.
                let cut = due - (now + gap);
                start -= cut;
                due -= cut;
            }
        }
        tokio::time::sleep_until(due.into()).await;
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
        let end = answered_at(exchange);
        let upgrade = request.upgrade();
        let task = if upgrade.as_deref() == Some("websocket") {
            let frames = exchange.websocket.clone();
            let ids_now = ids.pairs.clone();
            let member = siblings.join(exchange);
            tokio::spawn(
                async move { open_websocket(&socket, &path, frames, ids_now, member).await },
            )
        } else if let Some(protocol) = upgrade {
            let frames = exchange.websocket.clone();
            let method = request.method.clone();
            tokio::spawn(async move {
                open_raw(&socket, &method, &path, &protocol, &headers, frames).await
            })
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
                match tokio::time::timeout(REQUEST_TIMEOUT, client::send(&socket, outgoing)).await {
                    Ok(Ok(reply)) => Outcome::Answer(reply),
                    Ok(Err(err)) => Outcome::Failed(err.to_string()),
                    Err(_) => Outcome::Failed(format!("no answer within {REQUEST_TIMEOUT:?}")),
                }
            })
        };
        in_flight.push((end, index, task));
    }
    for (_, i, task) in in_flight {
        let outcome = task
            .await
            .unwrap_or_else(|e| Outcome::Failed(e.to_string()));
        settle(
            &exchanges[i],
            outcome,
            &mut ids,
            &mut differences,
            &mut frame_tasks,
            i,
        );
    }
    for (_, i, task) in frame_tasks {
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

/// The operations whose end the client heard of on an events websocket, and when (in
/// microseconds since the recording began), in that order.
fn operations_ended(exchanges: &[Exchange]) -> Vec<(String, u64)> {
    let mut ended = Vec::new();
    for exchange in exchanges {
        let Some(ws) = &exchange.websocket else {
            continue;
        };
        if !exchange.request.path.starts_with("/1.0/events") {
            continue;
        }
        let upgraded = answered_at(exchange);
        for frame in ws.frames.iter().filter(|f| f.from == Side::Server) {
            let Some(text) = &frame.data.text else {
                continue;
            };
            let Ok(event) = serde_json::from_str::<Value>(text) else {
                continue;
            };
            let operation = &event["metadata"];
            let done = matches!(
                operation["status"].as_str(),
                Some("Success" | "Failure" | "Cancelled")
            );
            if event["type"] == "operation" && done {
                if let Some(id) = operation["id"].as_str() {
                    ended.push((id.to_string(), upgraded + frame.at_us));
                }
            }
        }
    }
    ended.sort_by_key(|(_, at)| *at);
    ended.dedup_by(|a, b| a.0 == b.0);
    ended
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
    frame_tasks: &mut Vec<(u64, usize, JoinHandle<Vec<String>>)>,
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
                let closed = exchange.websocket.as_ref().map_or(0, |ws| ws.closed_us);
                let end = answered_at(exchange) + closed;
                frame_tasks.push((end, index, task));
            }
        }
        Outcome::Answer(reply) => {
            let recorded_bytes = recorded.body.bytes().unwrap_or_default();
            let mut real = Observed::new(
                recorded.status,
                &header_map(&recorded.headers),
                &recorded_bytes,
            );
            let mut fake = Observed::new(reply.status(), reply.headers(), reply.bytes());
            let learned = (real.body.clone(), fake.body.clone());
            mask_running(&mut real, &mut fake);
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
            ids.learn(&learned.0, &learned.1);
            if let (Some(r), Some(f)) = (&real.etag, &fake.etag) {
                ids.learn_whole(r, f);
            }
        }
    }
    differences.extend(found.into_iter().map(|what| difference(exchange, what)));
}

/// An operation the recording caught running may have ended in the replay (a fake is faster
/// than the daemon it was recorded from): its status, and the metadata it has only once it
/// ended, are compared only when it had ended in the recording too. An operation without
/// metadata yet shows `null` on 6.0 and `{}` on 7.0 (`OPERATION_METADATA_ALWAYS_AN_OBJECT`):
/// either is "none yet"; one that had some keeps it compared, less the keys the replayed one
/// gained by ending (an exec's `return`). Whether it may be cancelled is compared only while
/// the replayed one runs too (a 7.0 exec may be cancelled while it runs, not once it ended).
fn mask_running(real: &mut Observed, fake: &mut Observed) {
    let recorded = &real.body["metadata"];
    if recorded["status"] != "Running" || recorded["class"].is_null() {
        return;
    }
    let no_metadata = match &recorded["metadata"] {
        Value::Null => true,
        Value::Object(map) => map.is_empty(),
        _ => false,
    };
    let running_keys: Vec<String> = recorded["metadata"]
        .as_object()
        .map(|map| map.keys().cloned().collect())
        .unwrap_or_default();
    let replayed = &mut fake.body["metadata"];
    let ended = replayed["status"] != "Running";
    if ended {
        if let Some(gained) = replayed["metadata"].as_object_mut() {
            gained.retain(|key, _| running_keys.contains(key));
        }
    }
    for side in [real, fake] {
        if let Some(operation) = side.body["metadata"].as_object_mut() {
            operation.insert("status".into(), Value::from("-"));
            operation.insert("status_code".into(), Value::from(0));
            if ended {
                // A running exec may be cancelled on 7.0, an ended one no more.
                operation.insert("may_cancel".into(), Value::Bool(false));
            }
            if no_metadata {
                operation.insert("metadata".into(), Value::Null);
            }
        }
    }
}

/// Until when the server's side of a replayed connection is read: until the server ends it, at
/// most [`WEBSOCKET_GRACE`] after the connection ended in the recording. (When the client ended
/// it in the recording, the replay ends it at the same moment, and the server follows.)
fn read_until(opened: Instant, recorded: &crate::transcript::Websocket) -> Instant {
    opened + Duration::from_micros(recorded.closed_us) + WEBSOCKET_GRACE
}

/// When the replay ends its side of a connection the client ended in the recording.
fn client_ends(opened: Instant, recorded: &crate::transcript::Websocket) -> Option<Instant> {
    (recorded.ended_by == Some(Side::Client))
        .then(|| opened + Duration::from_micros(recorded.closed_us))
}

/// The data one side sent, its kept bytes run together, and whether every byte was kept.
fn data_of<'a>(frames: impl Iterator<Item = &'a Body>) -> (usize, Vec<u8>, bool) {
    let mut size = 0;
    let mut bytes = Vec::new();
    let mut whole = true;
    for body in frames {
        size += body.size;
        whole &= !body.truncated;
        bytes.extend(body.bytes().unwrap_or_default());
    }
    (size, bytes, whole)
}

/// What the server sent on an upgraded connection, against what it sent in the recording: the
/// whole size, and the bytes when the recording kept every one (the first that differs).
fn server_data_difference(
    recorded: &crate::transcript::Websocket,
    got: &[Body],
    protocol: &str,
) -> Vec<String> {
    let (real_size, real, whole) = data_of(
        recorded
            .frames
            .iter()
            .filter(|f| f.from == Side::Server)
            .filter(|f| matches!(f.kind, FrameKind::Text | FrameKind::Binary | FrameKind::Raw))
            .map(|f| &f.data),
    );
    let (fake_size, fake, _) = data_of(got.iter());
    if protocol == "sftp" && whole {
        return sftp::difference(&real, &fake);
    }
    let first = real.iter().zip(&fake).position(|(a, b)| a != b);
    if real_size == fake_size && (!whole || first.is_none()) {
        return Vec::new();
    }
    let at = match first {
        Some(offset) if whole => format!(", first other byte at offset {offset}"),
        _ => String::new(),
    };
    vec![format!(
        "upgraded connection, data from the server: real {real_size} bytes vs fake {fake_size} bytes{at}"
    )]
}

/// Opens an upgraded connection that is not a websocket (sftp), then sends the recorded client
/// bytes at their pace in a task of its own, which compares what the server sent with the
/// recording.
async fn open_raw(
    socket: &Path,
    method: &str,
    path: &str,
    protocol: &str,
    headers: &[(String, String)],
    recorded: Option<crate::transcript::Websocket>,
) -> Outcome {
    use http_body_util::Full;
    use hyper_util::rt::TokioIo;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let stream = match tokio::net::UnixStream::connect(socket).await {
        Ok(stream) => stream,
        Err(err) => return Outcome::Failed(err.to_string()),
    };
    let (mut sender, connection) =
        match hyper::client::conn::http1::handshake(TokioIo::new(stream)).await {
            Ok(pair) => pair,
            Err(err) => return Outcome::Failed(err.to_string()),
        };
    tokio::spawn(connection.with_upgrades());
    let mut request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "incus")
        .header("connection", "upgrade")
        .header("upgrade", protocol);
    for (name, value) in headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let request = match request.body(Full::new(bytes::Bytes::new())) {
        Ok(request) => request,
        Err(err) => return Outcome::Failed(err.to_string()),
    };
    let response = match sender.send_request(request).await {
        Ok(response) => response,
        Err(err) => return Outcome::Failed(err.to_string()),
    };
    let status = response.status().as_u16();
    if status != 101 {
        return Outcome::Websocket(status, None);
    }
    let Some(recorded) = recorded else {
        return Outcome::Websocket(status, None);
    };
    let protocol = protocol.to_string();
    let task = tokio::spawn(async move {
        let Ok(upgraded) = hyper::upgrade::on(response).await else {
            return vec!["the upgrade did not complete".to_string()];
        };
        let (mut read, mut write) = tokio::io::split(TokioIo::new(upgraded));
        let opened = Instant::now();
        let deadline = read_until(opened, &recorded);
        let ends = client_ends(opened, &recorded);
        let chunks: Vec<_> = recorded
            .frames
            .iter()
            .filter(|f| f.from == Side::Client && f.kind == FrameKind::Raw)
            .cloned()
            .collect();
        let send = async move {
            for chunk in chunks {
                tokio::time::sleep_until((opened + Duration::from_micros(chunk.at_us)).into())
                    .await;
                let data = chunk.data.bytes().unwrap_or_default();
                if write.write_all(&data).await.is_err() {
                    break;
                }
            }
            if let Some(at) = ends {
                tokio::time::sleep_until(at.into()).await;
                let _ = write.shutdown().await;
            }
            std::future::pending::<()>().await;
        };
        let receive = async {
            let mut got = Vec::new();
            let mut buffer = vec![0u8; 64 * 1024];
            while let Ok(Ok(n)) =
                tokio::time::timeout_at(deadline.into(), read.read(&mut buffer)).await
            {
                if n == 0 {
                    break;
                }
                got.push(Body::new(&buffer[..n], usize::MAX));
            }
            got
        };
        let got = tokio::select! {
            got = receive => got,
            () = send => Vec::new(),
        };
        server_data_difference(&recorded, &got, &protocol)
    });
    Outcome::Websocket(status, Some(task))
}

/// Opens the websocket, then relays the recorded client frames at their pace in a task of its
/// own, which compares what the server sent with the recording. `member` is its place among
/// the websockets of its operation ([`Siblings`]).
async fn open_websocket(
    socket: &Path,
    path: &str,
    recorded: Option<crate::transcript::Websocket>,
    ids: Vec<(String, String)>,
    member: Option<Member>,
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
        let deadline = read_until(opened, &recorded);
        let ends = client_ends(opened, &recorded);
        // A close frame the recorded client sent once the server had ended the connection
        // (the recorder relays the end of a server's stream as a close frame, which clients
        // answer) is not sent: it answered that end, and the replayed server ends the
        // connection itself. Sent at its recorded moment, it would reach a server slower than
        // the recorded one before that end: on an exec's `control`, before the command ran,
        // which the daemon and the fake then kill (its output replayed empty).
        let server_ended_first = recorded.ended_by == Some(Side::Server)
            || recorded
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
                FrameKind::Close => !server_ended_first,
                FrameKind::Ping | FrameKind::Pong | FrameKind::Raw => false,
            })
            .cloned()
            .collect();
        let closed_us = recorded.closed_us;
        let member = member.as_ref();
        // The replay ends its side (a close frame, or going away) only once the server has
        // sent, on this websocket and on the others of its operation, what the recorded client
        // had from it by then (or at the deadline): the client may have ended it because of
        // that (the official client goes away from `control` once stdout and stderr ended and
        // the operation did), and a server slower than the recorded one is not cut off.
        let caught_up = move |at_us: u64| async move {
            if let Some(member) = member {
                member.caught_up(at_us, deadline).await;
            }
        };
        let send = async move {
            for frame in client_frames {
                tokio::time::sleep_until((opened + Duration::from_micros(frame.at_us)).into())
                    .await;
                let data = frame.data.bytes().unwrap_or_default();
                let message = match frame.kind {
                    FrameKind::Text => Message::text(ids.apply(&String::from_utf8_lossy(&data))),
                    FrameKind::Binary => Message::binary(data),
                    _ => {
                        caught_up(frame.at_us).await;
                        let _ = sink.close().await;
                        break;
                    }
                };
                if sink.send(message).await.is_err() {
                    break;
                }
            }
            if let Some(at) = ends {
                // Ended without a close frame of its own in the recording (the client went
                // away): the replay closes at the same moment, once caught up.
                tokio::time::sleep_until(at.into()).await;
                caught_up(closed_us).await;
                let _ = sink.close().await;
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
                if let Some(member) = member {
                    member.received(got.len());
                }
            }
            got
        };
        let got = tokio::select! {
            got = receive => got,
            () = send => Vec::new(),
        };
        if let Some(member) = member {
            member.ended();
        }
        if events {
            // The events' contents (ids, times, the other clients' doings) are not compared.
            return Vec::new();
        }
        server_data_difference(&recorded, &got, "websocket")
    });
    Outcome::Websocket(101, Some(task))
}

/// The replayed websockets of each operation (an exec's `control`, `0`, `1` and `2`), by the
/// recorded path they share, with what the server has sent on each: a client ends one of them
/// when what came on the others tells it to, so the replay ends one only once each has had what
/// it had in the recording by then ([`Member::caught_up`]).
#[derive(Clone, Default)]
struct Siblings(Arc<Mutex<HashMap<String, Vec<Sibling>>>>);

/// One replayed websocket, as its siblings see it.
struct Sibling {
    /// When the recorded server sent each of its data frames, in microseconds since the
    /// recording began.
    sent_us: Vec<u64>,
    /// How many data frames the replayed server has sent; `usize::MAX` once it sends no more.
    received: watch::Receiver<usize>,
}

/// A replayed websocket's place among its siblings.
struct Member {
    siblings: Siblings,
    path: String,
    /// When it was upgraded in the recording, in microseconds since the recording began.
    upgraded_us: u64,
    received: watch::Sender<usize>,
}

impl Siblings {
    /// Registers the websocket of `exchange` among the others of its path; `None` for the
    /// events stream (its frames are not compared and differ in number) and for an exchange
    /// without recorded frames.
    fn join(&self, exchange: &Exchange) -> Option<Member> {
        let ws = exchange.websocket.as_ref()?;
        let path = &exchange.request.path;
        if path.starts_with("/1.0/events") {
            return None;
        }
        let upgraded_us = answered_at(exchange);
        let sent_us = ws
            .frames
            .iter()
            .filter(|f| f.from == Side::Server)
            .filter(|f| matches!(f.kind, FrameKind::Text | FrameKind::Binary))
            .map(|f| upgraded_us + f.at_us)
            .collect();
        let (tx, rx) = watch::channel(0);
        self.lock().entry(path.clone()).or_default().push(Sibling {
            sent_us,
            received: rx,
        });
        Some(Member {
            siblings: self.clone(),
            path: path.clone(),
            upgraded_us,
            received: tx,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Vec<Sibling>>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

impl Member {
    /// Notes that the server has sent `frames` data frames.
    fn received(&self, frames: usize) {
        self.received.send_replace(frames);
    }

    /// Notes that the server sends no more.
    fn ended(&self) {
        self.received.send_replace(usize::MAX);
    }

    /// Waits until every websocket of this one's path (itself included) has had from the
    /// server as many data frames as it had `at_us` after this one's upgrade in the recording,
    /// or sends no more; at most until `deadline`.
    async fn caught_up(&self, at_us: u64, deadline: Instant) {
        let at = self.upgraded_us + at_us;
        let waits: Vec<(usize, watch::Receiver<usize>)> = self
            .siblings
            .lock()
            .get(&self.path)
            .into_iter()
            .flatten()
            .map(|s| {
                let due = s.sent_us.iter().filter(|t| **t <= at).count();
                (due, s.received.clone())
            })
            .collect();
        let all = futures_util::future::join_all(waits.into_iter().map(
            |(due, mut received)| async move {
                // A sibling gone (its sender dropped) sends no more either.
                let _ = received.wait_for(|n| *n >= due).await;
            },
        ));
        let _ = tokio::time::timeout_at(deadline.into(), all).await;
    }
}

/// When an exchange was answered in the recording, in microseconds since it began: for an
/// upgrade, about when its connection was upgraded (the relay starts once the answer is back).
fn answered_at(exchange: &Exchange) -> u64 {
    exchange.started_us + exchange.timing.upstream_us + exchange.timing.recorder_us
}

/// SFTP streams compared packet by packet, with what legitimately differs masked: the times in
/// file attributes and the `ls -l` lines of a listing (which hold them too), and the order of
/// the extensions a server announces.
mod sftp {
    const VERSION: u8 = 2;
    const NAME: u8 = 104;
    const ATTRS: u8 = 105;

    /// The packets of a stream (each without its length), and what is left when it was cut.
    fn packets(mut bytes: &[u8]) -> Vec<&[u8]> {
        let mut out = Vec::new();
        while bytes.len() >= 4 {
            let len = u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as usize;
            let end = (4 + len).min(bytes.len());
            out.push(&bytes[4..end]);
            bytes = &bytes[end..];
        }
        out
    }

    /// A reader of SFTP fields that gives up (`None`) at the end of the packet.
    struct Fields<'a>(&'a [u8]);

    impl<'a> Fields<'a> {
        fn take(&mut self, n: usize) -> Option<&'a [u8]> {
            if self.0.len() < n {
                return None;
            }
            let (head, rest) = self.0.split_at(n);
            self.0 = rest;
            Some(head)
        }
        fn u32(&mut self) -> Option<u32> {
            self.take(4)
                .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        }
        fn string(&mut self) -> Option<&'a [u8]> {
            let len = self.u32()? as usize;
            self.take(len)
        }
    }

    /// File attributes with their times zeroed, appended to `out`.
    fn attributes(fields: &mut Fields<'_>, out: &mut Vec<u8>) -> Option<()> {
        let flags = fields.u32()?;
        out.extend(flags.to_be_bytes());
        for (bit, len) in [(0x1, 8), (0x2, 8), (0x4, 4)] {
            if flags & bit != 0 {
                out.extend(fields.take(len)?);
            }
        }
        if flags & 0x8 != 0 {
            fields.take(8)?;
            out.extend([0; 8]);
        }
        if flags & 0x8000_0000 != 0 {
            let count = fields.u32()?;
            out.extend(count.to_be_bytes());
            for _ in 0..count * 2 {
                out.extend(fields.string()?);
            }
        }
        Some(())
    }

    /// A packet with its times (and a listing's `ls -l` lines) masked.
    fn masked(packet: &[u8]) -> Vec<u8> {
        let mut out = packet.iter().take(5).copied().collect::<Vec<u8>>();
        let mut fields = Fields(packet.get(5..).unwrap_or_default());
        let done = match packet.first() {
            Some(&ATTRS) => attributes(&mut fields, &mut out),
            Some(&NAME) => (|| {
                let count = fields.u32()?;
                out.extend(count.to_be_bytes());
                for _ in 0..count {
                    out.extend(fields.string()?);
                    fields.string()?;
                    attributes(&mut fields, &mut out)?;
                }
                Some(())
            })(),
            _ => return packet.to_vec(),
        };
        match done {
            Some(()) => {
                out.extend(fields.0);
                out
            }
            None => packet.to_vec(),
        }
    }

    /// A `VERSION` packet's version and its extensions (`name=data`), sorted.
    fn version(packet: &[u8]) -> Option<(u32, Vec<String>)> {
        let mut fields = Fields(packet.get(1..)?);
        let version = fields.u32()?;
        let mut extensions = Vec::new();
        while !fields.0.is_empty() {
            let name = String::from_utf8_lossy(fields.string()?).into_owned();
            let data = String::from_utf8_lossy(fields.string()?).into_owned();
            extensions.push(format!("{name}={data}"));
        }
        extensions.sort();
        Some((version, extensions))
    }

    /// Every packet that differs, one line each.
    pub(super) fn difference(real: &[u8], fake: &[u8]) -> Vec<String> {
        let (real, fake) = (packets(real), packets(fake));
        let mut out = Vec::new();
        if real.len() != fake.len() {
            out.push(format!(
                "sftp: real {} packets vs fake {} packets",
                real.len(),
                fake.len()
            ));
        }
        for (n, (r, f)) in real.iter().zip(&fake).enumerate() {
            if r.first() == Some(&VERSION) && f.first() == Some(&VERSION) {
                let (rv, fv) = (version(r), version(f));
                if let (Some((rv, re)), Some((fv, fe))) = (&rv, &fv) {
                    if rv != fv {
                        out.push(format!("sftp VERSION: real {rv} vs fake {fv}"));
                    }
                    if re != fe {
                        out.push(format!(
                            "sftp VERSION extensions: real {re:?} vs fake {fe:?}"
                        ));
                    }
                    continue;
                }
            }
            let (r, f) = (masked(r), masked(f));
            if r != f {
                let at = r
                    .iter()
                    .zip(&f)
                    .position(|(a, b)| a != b)
                    .unwrap_or(r.len().min(f.len()));
                out.push(format!(
                    "sftp packet {n} (type {}): real {} bytes vs fake {} bytes, first other byte at offset {at}",
                    r.first().copied().unwrap_or_default(),
                    r.len(),
                    f.len()
                ));
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An operation read as the daemon answers it, with this status and metadata.
    fn read_of(status: &str, metadata: Value) -> Observed {
        let body = json!({"type": "sync", "status": "Success", "status_code": 200, "metadata": {
            "id": "x", "class": "task", "description": "Creating instance",
            "status": status, "status_code": if status == "Running" { 103 } else { 200 },
            "metadata": metadata, "may_cancel": false, "err": "",
        }});
        Observed::new(200, &HeaderMap::new(), body.to_string().as_bytes())
    }

    #[test]
    fn an_operation_caught_running_before_it_had_metadata_is_not_held_to_the_fakes_finished_one() {
        let finished = json!({
            "create_instance_from_image_unpack_progress": "Unpacking image: 100% (1.00GB/s)",
            "progress": {"percent": "100", "speed": "1000000000", "stage": "create_instance_from_image_unpack"},
        });
        // 6.0 shows an operation without metadata as `null`, 7.0 as `{}`.
        for none_yet in [Value::Null, json!({})] {
            let mut real = read_of("Running", none_yet.clone());
            let mut fake = read_of("Success", finished.clone());
            mask_running(&mut real, &mut fake);
            assert_eq!(compare(&real, &fake), Vec::<String>::new(), "{none_yet}");
        }
    }

    #[test]
    fn an_exec_caught_running_is_not_held_to_what_its_replay_gained_or_lost_by_ending() {
        let fds = json!({"fds": {"0": "a", "control": "b"}, "command": ["echo", "hello"]});
        let mut ended = fds.clone();
        ended["return"] = json!(0);
        let mut real = read_of("Running", fds.clone());
        let mut fake = read_of("Success", ended);
        mask_running(&mut real, &mut fake);
        assert_eq!(compare(&real, &fake), Vec::<String>::new());
        // A 7.0 exec may be cancelled while it runs, not once it ended.
        let body = |status: &str, may_cancel: bool| {
            let mut read = read_of(status, json!({"fds": {}}));
            read.body["metadata"]["may_cancel"] = json!(may_cancel);
            read
        };
        let (mut real, mut fake) = (body("Running", true), body("Success", false));
        mask_running(&mut real, &mut fake);
        assert_eq!(compare(&real, &fake), Vec::<String>::new());
        let (mut real, mut fake) = (body("Running", true), body("Running", false));
        mask_running(&mut real, &mut fake);
        assert!(!compare(&real, &fake).is_empty());
        // Still running in the replay too: every key compared.
        let mut extra = fds.clone();
        extra["other"] = json!(1);
        let mut real = read_of("Running", fds);
        let mut fake = read_of("Running", extra);
        mask_running(&mut real, &mut fake);
        assert!(!compare(&real, &fake).is_empty());
    }

    #[test]
    fn an_operation_caught_running_with_metadata_keeps_it_compared() {
        let mut real = read_of("Running", json!({"progress": {"percent": "40"}}));
        let mut fake = read_of("Success", json!({"other": "x"}));
        mask_running(&mut real, &mut fake);
        assert!(!compare(&real, &fake).is_empty());
    }
}
