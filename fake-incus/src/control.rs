//! The control socket: HTTP/1.1 with JSON over a Unix socket, for scripting a running fake from
//! any language.
//!
//! | method and path | body | answer |
//! |---|---|---|
//! | `GET /rules` | | the installed rules |
//! | `POST /rules` | a rule or a list of rules | `{"installed": N}` (400 if one is invalid; none installed then) |
//! | `DELETE /rules` | | `{}` |
//! | `GET /journal[?since=SEQ]` | | `{"entries": [...], "dropped": N, "limit": N, "last_seq": N}`: the kept entries after SEQ |
//! | `GET /journal/wait?method=&path=&count=&since=&timeout_ms=` | | waits until `count` kept entries after `since` match: 200 `{"matched", "entries"}`, or 408 `{"error", "matched", "entries"}` after `timeout_ms` |
//! | `POST /verify` | a count or a sequence of request matchers | `{"pass": true, ...}` or `{"pass": false, ..., "nearest": [...]}` (see `verify`) |
//! | `DELETE /journal` | | `{}` |
//! | `GET /state` | | the state dump |
//! | `PUT /state` | a state in the dump format | `{}` (400 if invalid) |
//! | `POST /reset` | | `{}`: state, operations, exec sessions and journal entries cleared; rules kept |
//! | `POST /trust` | a PEM certificate | `{"fingerprint": "…"}` |
//! | `GET /snapshots` | | `{"snapshots": [{"name", "instances"}]}`: the named snapshots, by name |
//! | `POST /snapshots/{name}` | | `{"name", "instances"}`: the whole state saved under the name (replacing one) |
//! | `POST /snapshots/{name}/restore` | | `{}`: back to it, as a reset goes back to the start state (404 if unknown) |
//! | `DELETE /snapshots/{name}` | | `{}` (404 if unknown) |
//! | `GET /cluster/members` | | the cluster's members (`[]` when not clustered) |
//! | `POST /cluster/members/{name}/down` | | `{}`: the member's daemon dies (see `FakeIncus::member_down`) |
//! | `POST /cluster/members/{name}/up` | | `{}`: it comes back (see `FakeIncus::member_up`) |
//!
//! Errors are `{"error": "…"}` with a 4xx status.

use crate::app::{App, SnapshotError};
use crate::faults::Rule;
use crate::state::stored::{Stored, Versioned};
use crate::verify::{Matcher, Verify};
use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use std::path::Path;
use std::sync::Arc;

/// Binds the control socket and serves it until the app shuts down.
pub(crate) fn serve(app: Arc<App>, path: &Path) -> std::io::Result<()> {
    let listener = crate::server::unix::bind(path)?;
    tokio::spawn(async move {
        loop {
            let accepted = tokio::select! {
                accepted = listener.accept() => accepted,
                () = app.shutdown.cancelled() => return,
            };
            let Ok((stream, _)) = accepted else { continue };
            let app = Arc::clone(&app);
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req| {
                    let app = Arc::clone(&app);
                    async move { Ok::<_, std::convert::Infallible>(handle(&app, req).await) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(())
}

async fn handle(app: &Arc<App>, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let method = req.method().clone();
    let path = req.uri().path().to_string();
    let query = req.uri().query().unwrap_or_default().to_string();
    let body = match req.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(err) => return answer(StatusCode::BAD_REQUEST, json!({"error": err.to_string()})),
    };
    if path == "/journal/wait" {
        return match (method.as_str(), wait_query(&query)) {
            ("GET", Ok(wait)) => journal_wait(app, wait).await,
            ("GET", Err((status, message))) => answer(status, json!({"error": message})),
            _ => answer(
                StatusCode::METHOD_NOT_ALLOWED,
                json!({"error": format!("{method} is not supported on {path}")}),
            ),
        };
    }
    let reply = if let Some(rest) = path.strip_prefix("/snapshots/") {
        snapshot(app, &method, rest)
    } else if path.starts_with("/cluster/") {
        crate::members::control(app, method.as_str(), &path).map_err(|(status, message)| {
            (
                StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_REQUEST),
                message,
            )
        })
    } else {
        route(app, &method, &path, &query, &body)
    };
    // With --state-dir, a change made here is on disk before it is answered.
    let reply = match app.durable().await {
        Ok(()) => reply,
        Err(message) => Err((StatusCode::INTERNAL_SERVER_ERROR, message)),
    };
    match reply {
        Ok(value) => answer(StatusCode::OK, value),
        Err((status, message)) => answer(status, json!({"error": message})),
    }
}

type Reply = Result<Value, (StatusCode, String)>;

fn route(app: &App, method: &Method, path: &str, query: &str, body: &[u8]) -> Reply {
    match (method.as_str(), path) {
        ("GET", "/rules") => Ok(json!(app.faults.rules())),
        ("POST", "/rules") => add_rules(app, body),
        ("DELETE", "/rules") => {
            app.faults.clear();
            Ok(json!({}))
        }
        ("GET", "/journal") => Ok(json!(app.journal.page(since(query)?))),
        ("POST", "/verify") => {
            let verify = Verify::parse(parse(body)?)
                .map_err(|e| (StatusCode::BAD_REQUEST, e.to_string()))?;
            Ok(verify.check(&app.journal.entries()))
        }
        ("DELETE", "/journal") => {
            app.journal.clear();
            Ok(json!({}))
        }
        ("GET", "/state") => Ok(app.dump()),
        ("PUT", "/state") => {
            let value: Value = parse(body)?;
            let mut stored = Stored::from_json(value, Versioned::Optional)
                .map_err(|e| (StatusCode::BAD_REQUEST, e.to_string()))?;
            crate::members::place_seeded_on(app, &mut stored.state);
            app.load(stored);
            Ok(json!({}))
        }
        ("POST", "/reset") => {
            app.reset();
            Ok(json!({}))
        }
        ("GET", "/snapshots") => {
            let list: Vec<Value> = app
                .snapshots()
                .into_iter()
                .map(|(name, instances)| json!({"name": name, "instances": instances}))
                .collect();
            Ok(json!({"snapshots": list}))
        }
        ("POST", "/trust") => {
            let pem = String::from_utf8_lossy(body);
            let fingerprint = app
                .identity
                .trust_pem(&pem)
                .map_err(|e| (StatusCode::BAD_REQUEST, e.to_string()))?;
            Ok(json!({"fingerprint": fingerprint}))
        }
        (_, "/rules" | "/journal" | "/state" | "/reset" | "/trust" | "/snapshots" | "/verify") => {
            Err((
                StatusCode::METHOD_NOT_ALLOWED,
                format!("{method} is not supported on {path}"),
            ))
        }
        _ => Err((
            StatusCode::NOT_FOUND,
            format!("no such control endpoint: {path}"),
        )),
    }
}

/// The longest `GET /journal/wait` may wait.
const WAIT_LIMIT_MS: u64 = 60_000;
/// How long it waits when `timeout_ms` is not given.
const WAIT_DEFAULT_MS: u64 = 5_000;

/// The query of `GET /journal/wait`.
struct Wait {
    matcher: Matcher,
    count: usize,
    since: u64,
    timeout_ms: u64,
}

fn wait_query(query: &str) -> Result<Wait, (StatusCode, String)> {
    let bad = |message: String| (StatusCode::BAD_REQUEST, message);
    let number = |key: &str, value: &str| {
        value
            .parse::<u64>()
            .map_err(|_| bad(format!("{key} must be a whole number, not {value:?}")))
    };
    let mut wait = Wait {
        matcher: Matcher::of("*", "/**"),
        count: 1,
        since: 0,
        timeout_ms: WAIT_DEFAULT_MS,
    };
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "method" => wait.matcher.method = Some(value.into_owned()),
            "path" => wait.matcher.path = Some(value.into_owned()),
            "count" => {
                wait.count = usize::try_from(number("count", &value)?)
                    .map_err(|_| bad(format!("count {value} is too large")))?;
            }
            "since" => wait.since = number("since", &value)?,
            "timeout_ms" => wait.timeout_ms = number("timeout_ms", &value)?,
            other => {
                return Err(bad(format!(
                    "unknown query parameter {other:?} (method, path, count, since, timeout_ms)"
                )))
            }
        }
    }
    if wait.timeout_ms > WAIT_LIMIT_MS {
        return Err(bad(format!(
            "timeout_ms {} is over the limit of {WAIT_LIMIT_MS}",
            wait.timeout_ms
        )));
    }
    Ok(wait)
}

async fn journal_wait(app: &App, wait: Wait) -> Response<Full<Bytes>> {
    let Wait {
        matcher,
        count,
        since,
        timeout_ms,
    } = wait;
    let waited = app.journal.wait_for(
        |e| matcher.misses(e).is_empty(),
        count,
        since,
        std::time::Duration::from_millis(timeout_ms),
    );
    let (arrived, entries) = tokio::select! {
        result = waited => result,
        () = app.shutdown.cancelled() => (false, Vec::new()),
    };
    let matched = entries.len();
    if arrived {
        answer(
            StatusCode::OK,
            json!({"matched": matched, "entries": entries}),
        )
    } else {
        answer(
            StatusCode::REQUEST_TIMEOUT,
            json!({
                "error": format!("{matched} of {count} matching requests arrived within {timeout_ms} ms"),
                "matched": matched,
                "entries": entries,
            }),
        )
    }
}

/// `/snapshots/{name}` and `/snapshots/{name}/restore`.
fn snapshot(app: &App, method: &Method, rest: &str) -> Reply {
    let failed = |e: SnapshotError| match e {
        SnapshotError::NotFound(_) => (StatusCode::NOT_FOUND, e.to_string()),
        _ => (StatusCode::BAD_REQUEST, e.to_string()),
    };
    let (name, restore) = match rest.strip_suffix("/restore") {
        Some(name) => (name, true),
        None => (rest, false),
    };
    let name = percent_encoding::percent_decode_str(name).decode_utf8_lossy();
    match (method.as_str(), restore) {
        ("POST", false) => {
            app.save_snapshot(&name).map_err(failed)?;
            let instances = app
                .snapshots()
                .into_iter()
                .find(|(n, _)| *n == name)
                .map_or(0, |(_, count)| count);
            Ok(json!({"name": name, "instances": instances}))
        }
        ("POST", true) => app
            .restore_snapshot(&name)
            .map(|()| json!({}))
            .map_err(failed),
        ("DELETE", false) => app
            .delete_snapshot(&name)
            .map(|()| json!({}))
            .map_err(failed),
        _ => Err((
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{method} is not supported on /snapshots/{rest}"),
        )),
    }
}

/// `since=SEQ` (default 0) of `GET /journal`.
fn since(query: &str) -> Result<u64, (StatusCode, String)> {
    let mut since = 0;
    for (key, value) in url::form_urlencoded::parse(query.as_bytes()) {
        match key.as_ref() {
            "since" => {
                since = value.parse().map_err(|_| {
                    (
                        StatusCode::BAD_REQUEST,
                        format!("since must be a sequence number, not {value:?}"),
                    )
                })?;
            }
            other => {
                return Err((
                    StatusCode::BAD_REQUEST,
                    format!("unknown query parameter {other:?} (only since)"),
                ))
            }
        }
    }
    Ok(since)
}

fn add_rules(app: &App, body: &[u8]) -> Reply {
    let value: Value = parse(body)?;
    let rules: Vec<Rule> = match value {
        Value::Array(_) => serde_json::from_value(value),
        other => serde_json::from_value(other).map(|rule| vec![rule]),
    }
    .map_err(|e| (StatusCode::BAD_REQUEST, format!("invalid rule: {e}")))?;
    let count = rules.len();
    for rule in rules {
        app.faults
            .install(rule)
            .map_err(|e| (StatusCode::BAD_REQUEST, format!("invalid rule: {e}")))?
            .forget();
    }
    Ok(json!({"installed": count}))
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, (StatusCode, String)> {
    serde_json::from_slice(body)
        .map_err(|e| (StatusCode::BAD_REQUEST, format!("invalid JSON: {e}")))
}

fn answer(status: StatusCode, value: Value) -> Response<Full<Bytes>> {
    let mut bytes = serde_json::to_vec(&value).unwrap_or_default();
    bytes.push(b'\n');
    let mut resp = Response::new(Full::new(Bytes::from(bytes)));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp
}
