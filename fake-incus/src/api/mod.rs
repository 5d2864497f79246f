//! The Incus API as a function from request to response.
//!
//! [`serve`] is the whole application: it journals the request, applies the fault rules, checks
//! trust, routes to the resource modules and journals the answer. Listeners only move bytes.

mod events;
mod exec;
mod filter;
mod images;
mod instances;
mod logs;
mod networks;
mod operations;
mod profiles;
mod projects;
mod server;
mod snapshots;
mod state;
mod storage;
mod validation;

use crate::app::App;
use crate::envelope::{self, ApiError, ApiResult, Body};
use crate::faults::Fault;
use crate::journal::{Answer, JournalEntry, Listener};
use bytes::Bytes;
use futures_util::StreamExt;
use http::{header, Method, Request, Response};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde::de::DeserializeOwned;
use std::sync::Arc;
use std::time::Duration;

/// Who is calling, as the listener saw it.
#[derive(Debug, Clone)]
pub(crate) struct Peer {
    pub(crate) listener: Listener,
    /// SHA-256 of the client certificate (HTTPS only).
    pub(crate) fingerprint: Option<String>,
}

/// What the listener must do with the connection.
pub(crate) enum Outcome {
    /// Send this response.
    Respond(Response<Body>),
    /// Close the connection without answering.
    Close,
    /// Reset the connection (RST where the transport has one).
    Reset,
}

/// The context of one request.
pub(crate) struct Ctx {
    pub(crate) app: Arc<App>,
    pub(crate) peer: Peer,
    pub(crate) trusted: bool,
    pub(crate) seq: u64,
    /// An operation or exec fault selected for this request.
    pub(crate) fault: Option<Fault>,
    query: Vec<(String, String)>,
}

impl Ctx {
    /// Marks the request as applied in the journal.
    pub(crate) fn applied(&self) {
        self.app.journal.set_applied(self.seq);
    }
    pub(crate) fn param(&self, key: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
    /// `project`, default `default`.
    pub(crate) fn project(&self) -> String {
        self.param("project")
            .filter(|p| !p.is_empty())
            .unwrap_or("default")
            .to_string()
    }
    /// `recursion`; anything that is not an integer counts as 0.
    pub(crate) fn recursion(&self) -> u8 {
        self.param("recursion")
            .and_then(|r| r.parse().ok())
            .unwrap_or(0)
    }
    pub(crate) fn all_projects(&self) -> bool {
        self.param("all-projects") == Some("true")
    }
    /// 404 with the endpoint's own message when `project` names no project (unless
    /// `all-projects=true`).
    pub(crate) fn require_project(
        &self,
        message: impl FnOnce(&str) -> String,
    ) -> Result<(), ApiError> {
        let project = self.project();
        if self.all_projects() || self.app.state().project(&project).is_some() {
            Ok(())
        } else {
            Err(ApiError::new(404, message(&project)))
        }
    }

    /// The projects a collection request covers.
    pub(crate) fn projects(&self) -> Vec<String> {
        if self.all_projects() {
            self.app
                .state()
                .projects
                .iter()
                .map(|p| p.name.clone())
                .collect()
        } else {
            vec![self.project()]
        }
    }
}

/// Serves one request end to end.
pub(crate) async fn serve(app: &Arc<App>, req: Request<Bytes>, peer: Peer) -> Outcome {
    let trusted = match (&peer.listener, &peer.fingerprint) {
        (Listener::Https, Some(fp)) => app.identity.is_trusted(fp),
        (Listener::Https, None) => false,
        _ => true,
    };
    let seq = app.journal.record(journal_entry(&req, &peer, trusted));
    let path = req.uri().path().to_string();
    let verdict = app.faults.verdict(req.method().as_str(), &path);
    if let Some(fault) = &verdict {
        tracing::debug!(seq, %path, fault = %fault.name(), "fault selected");
        if let Some(outcome) = before_apply(app, fault, seq).await {
            return outcome;
        }
    }
    let query = req
        .uri()
        .query()
        .map(|q| {
            url::form_urlencoded::parse(q.as_bytes())
                .into_owned()
                .collect()
        })
        .unwrap_or_default();
    let fault = verdict.clone().filter(|f| !f.is_transport());
    let ctx = Ctx {
        app: Arc::clone(app),
        peer,
        trusted,
        seq,
        fault,
        query,
    };
    let response = route(&ctx, req).await.unwrap_or_else(Response::from);
    let code = response.status().as_u16();
    match verdict.filter(Fault::is_transport) {
        Some(fault) => after_apply(app, &fault, seq, response).await,
        None => {
            app.journal.set_answer(seq, Answer::Status { code });
            Outcome::Respond(response)
        }
    }
}

fn journal_entry(req: &Request<Bytes>, peer: &Peer, trusted: bool) -> JournalEntry {
    let header = |name: header::HeaderName| {
        req.headers()
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    JournalEntry {
        seq: 0,
        listener: peer.listener,
        cert_fingerprint: peer.fingerprint.clone(),
        trusted,
        method: req.method().to_string(),
        path: req.uri().path().to_string(),
        query: req.uri().query().map(String::from),
        if_match: header(header::IF_MATCH),
        content_type: header(header::CONTENT_TYPE),
        body: String::from_utf8_lossy(req.body()).into_owned(),
        websocket: is_upgrade(req),
        applied: false,
        answer: Answer::Pending,
    }
}

pub(crate) fn is_upgrade<B>(req: &Request<B>) -> bool {
    req.headers()
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// Faults that act before the request is handled. `None` = go on handling it.
async fn before_apply(app: &App, fault: &Fault, seq: u64) -> Option<Outcome> {
    let mark = |code: Option<u16>| {
        app.journal.set_answer(
            seq,
            Answer::Fault {
                fault: fault.name(),
                code,
            },
        );
    };
    match fault {
        Fault::Delay { ms } => {
            tokio::time::sleep(Duration::from_millis(*ms)).await;
            None
        }
        Fault::Error { status, message } => {
            mark(Some(*status));
            Some(Outcome::Respond(
                ApiError::new(*status, message.clone()).into(),
            ))
        }
        Fault::CloseBeforeApply => {
            mark(None);
            Some(Outcome::Close)
        }
        Fault::Reset => {
            mark(None);
            Some(Outcome::Reset)
        }
        Fault::Stall => {
            mark(None);
            app.shutdown.cancelled().await;
            Some(Outcome::Close)
        }
        _ => None,
    }
}

/// Faults that act once the request was handled (and applied).
async fn after_apply(app: &App, fault: &Fault, seq: u64, response: Response<Body>) -> Outcome {
    let code = response.status().as_u16();
    let mark = |code: Option<u16>| {
        app.journal.set_answer(
            seq,
            Answer::Fault {
                fault: fault.name(),
                code,
            },
        );
    };
    match fault {
        Fault::CloseAfterApply => {
            mark(None);
            Outcome::Close
        }
        Fault::GarbageBody => {
            mark(Some(200));
            let mut resp = Response::new(envelope::full(&b"\x00garbage{{not json"[..]));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                "application/json".parse().expect("static"),
            );
            Outcome::Respond(resp)
        }
        Fault::TruncatedBody => {
            mark(Some(code));
            Outcome::Respond(truncate(response).await)
        }
        Fault::Dribble {
            chunk_bytes,
            interval_ms,
        } => {
            mark(Some(code));
            Outcome::Respond(dribble(response, *chunk_bytes, *interval_ms).await)
        }
        _ => {
            app.journal.set_answer(seq, Answer::Status { code });
            Outcome::Respond(response)
        }
    }
}

async fn collect(response: Response<Body>) -> (http::response::Parts, Bytes) {
    let (parts, body) = response.into_parts();
    let bytes = body
        .collect()
        .await
        .map(|c| c.to_bytes())
        .unwrap_or_default();
    (parts, bytes)
}

/// Announces the full length, sends half, then fails the body so the connection is cut.
async fn truncate(response: Response<Body>) -> Response<Body> {
    let (mut parts, bytes) = collect(response).await;
    parts
        .headers
        .insert(header::CONTENT_LENGTH, bytes.len().into());
    let half = bytes.slice(..bytes.len() / 2);
    let frames = futures_util::stream::iter([
        Ok(Frame::data(half)),
        Err(std::io::Error::new(
            std::io::ErrorKind::ConnectionAborted,
            "truncated by fault",
        )),
    ]);
    Response::from_parts(parts, BodyExt::boxed_unsync(StreamBody::new(frames)))
}

/// Sends the body in small chunks with pauses.
async fn dribble(response: Response<Body>, chunk: usize, interval_ms: u64) -> Response<Body> {
    let (mut parts, bytes) = collect(response).await;
    parts
        .headers
        .insert(header::CONTENT_LENGTH, bytes.len().into());
    let chunks: Vec<Bytes> = bytes
        .chunks(chunk.max(1))
        .map(Bytes::copy_from_slice)
        .collect();
    let frames =
        futures_util::stream::iter(chunks.into_iter().enumerate()).then(move |(i, c)| async move {
            if i > 0 {
                tokio::time::sleep(Duration::from_millis(interval_ms)).await;
            }
            Ok::<_, std::io::Error>(Frame::data(c))
        });
    Response::from_parts(parts, BodyExt::boxed_unsync(StreamBody::new(frames)))
}

/// Routes a request to its resource module.
async fn route(ctx: &Ctx, req: Request<Bytes>) -> ApiResult {
    let path = req.uri().path().to_string();
    let segments: Vec<String> = path
        .trim_end_matches('/')
        .split('/')
        .skip(1)
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8_lossy()
                .into_owned()
        })
        .collect();
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    let method = req.method().clone();
    if path == "/" {
        return only(&method, Method::GET).map(|()| envelope::sync(serde_json::json!(["/1.0"])));
    }
    if segs.first() != Some(&"1.0") {
        return Err(ApiError::not_found());
    }
    if segs.len() == 1 {
        return server::route(ctx, &method);
    }
    if !ctx.trusted {
        return Err(ApiError::forbidden());
    }
    let per_instance = segs[1] == "instances" && segs.len() >= 3;
    if per_instance {
        ctx.require_project(|_| "Project not found".into())?;
        if segs[2].contains('/') {
            return Err(ApiError::bad_request("Invalid instance name"));
        }
    }
    match segs[1] {
        "instances" => match segs.get(3) {
            None => instances::route(ctx, &method, &segs[2..], req.headers(), req.body()),
            Some(&"state") => state::route(ctx, &method, &segs[2..], req.body()),
            Some(&"snapshots") => snapshots::route(ctx, &method, &segs[2..], req.body()),
            Some(&"exec") if segs.len() == 4 => exec::route(ctx, &method, segs[2], req.body()),
            Some(&"logs") => logs::route(ctx, &method, &segs[2..]),
            _ => Err(ApiError::not_found()),
        },
        "images" => images::route(ctx, &method, &segs[2..]),
        "networks" => networks::route(ctx, &method, &segs[2..]),
        "profiles" => profiles::route(ctx, &method, &segs[2..]),
        "projects" => projects::route(ctx, &method, &segs[2..]),
        "storage-pools" => storage::route(ctx, &method, &segs[2..]),
        "operations" => operations::route(ctx, req, &segments[2..]).await,
        "events" if segs.len() == 2 => events::route(ctx, req),
        _ => Err(ApiError::not_found()),
    }
}

/// 501 unless the method is the one the route handles.
pub(crate) fn only(method: &Method, allowed: Method) -> Result<(), ApiError> {
    if *method == allowed {
        Ok(())
    } else {
        Err(ApiError::not_implemented())
    }
}

/// Parses a JSON body the way the daemon does, with Go's streaming `json.Decoder`: only the
/// first value is read (trailing bytes are ignored), an empty body is `EOF`, a truncated one
/// `unexpected EOF`, and syntax errors are worded like Go's. Like Go, a duplicate key keeps
/// its last value, invalid UTF-8 and lone UTF-16 surrogates in strings become U+FFFD, `null`
/// leaves every field at its zero value, and a top-level value that is not an object is
/// refused for the daemon's request structs. Every error is a 400.
pub(crate) fn parse_body<T: DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    /// The Go type the daemon decodes each request body into.
    fn go_type<T>() -> Option<&'static str> {
        let name = std::any::type_name::<T>();
        let table = [
            ("::instances::CreateBody", "api.InstancesPost"),
            ("::instances::PutBody", "api.InstancePut"),
            ("::instances::PatchBody", "api.InstancePut"),
            ("::instances::RenameBody", "api.InstancePost"),
            ("::snapshots::CreateBody", "api.InstanceSnapshotsPost"),
            ("::state::StateBody", "api.InstanceStatePut"),
            ("::exec::ExecBody", "api.InstanceExecPost"),
        ];
        table
            .iter()
            .find(|(suffix, _)| name.ends_with(suffix))
            .map(|(_, go)| *go)
    }
    let cleaned = validation::go_json_text(body);
    let body = cleaned.as_slice();
    let first = serde_json::Deserializer::from_slice(body)
        .into_iter::<serde_json::Value>()
        .next();
    let value = match first {
        Some(Ok(value)) => value,
        // Deeper than serde_json's value limit: decode straight into the target instead.
        Some(Err(e)) if e.to_string().starts_with("recursion limit exceeded") => {
            return match serde_json::Deserializer::from_slice(body)
                .into_iter::<T>()
                .next()
            {
                Some(Ok(value)) => Ok(value),
                Some(Err(e)) => Err(ApiError::bad_request(go_decode_error(body, &e))),
                None => Err(ApiError::bad_request("EOF")),
            };
        }
        Some(Err(e)) => return Err(ApiError::bad_request(go_decode_error(body, &e))),
        None => return Err(ApiError::bad_request("EOF")),
    };
    if let Some(go) = go_type::<T>() {
        let kind = match &value {
            serde_json::Value::Array(_) => Some("array"),
            serde_json::Value::String(_) => Some("string"),
            serde_json::Value::Number(_) => Some("number"),
            serde_json::Value::Bool(_) => Some("bool"),
            _ => None,
        };
        if let Some(kind) = kind {
            return Err(ApiError::bad_request(format!(
                "json: cannot unmarshal {kind} into Go value of type {go}"
            )));
        }
    }
    if value.is_null() {
        if let Ok(parsed) = T::deserialize(serde_json::Value::Null) {
            return Ok(parsed);
        }
        return T::deserialize(serde_json::json!({}))
            .map_err(|e| ApiError::bad_request(e.to_string()));
    }
    T::deserialize(value).map_err(|e| ApiError::bad_request(e.to_string()))
}

/// Go's `encoding/json` wording for syntax errors; other errors keep serde's text.
fn go_decode_error(body: &[u8], err: &serde_json::Error) -> String {
    if err.is_eof() {
        return "unexpected EOF".into();
    }
    if !err.is_syntax() {
        return err.to_string();
    }
    let line_start: usize = body
        .split(|&b| b == b'\n')
        .take(err.line().saturating_sub(1))
        .map(|l| l.len() + 1)
        .sum();
    let offset = line_start + err.column().saturating_sub(1);
    let Some(&found) = body.get(offset) else {
        return "unexpected EOF".into();
    };
    let text = err.to_string();
    if text.starts_with("control character") {
        return format!("invalid character {} in string literal", go_quote(found));
    }
    if text.starts_with("invalid escape") {
        return format!(
            "invalid character {} in string escape code",
            go_quote(found)
        );
    }
    let before = body[..offset]
        .iter()
        .rev()
        .find(|b| !b.is_ascii_whitespace());
    let expecting = match before {
        Some(b'{') | Some(b',') => "looking for beginning of object key string",
        Some(b'"') | Some(b'}') | Some(b']') => "after object key:value pair",
        _ => "looking for beginning of value",
    };
    format!("invalid character {} {expecting}", go_quote(found))
}

/// Go's `quoteChar`: the byte as the rune of the same value, quoted the way `strconv.Quote`
/// quotes it, between single quotes.
fn go_quote(byte: u8) -> String {
    let inner = match byte {
        b'\'' => "\\'".to_string(),
        b'"' => "\"".to_string(),
        b'\\' => "\\\\".to_string(),
        0x07 => "\\a".to_string(),
        0x08 => "\\b".to_string(),
        0x0c => "\\f".to_string(),
        b'\n' => "\\n".to_string(),
        b'\r' => "\\r".to_string(),
        b'\t' => "\\t".to_string(),
        0x0b => "\\v".to_string(),
        b if b < 0x20 || b == 0x7f => format!("\\x{b:02x}"),
        b if (0x80..=0xa0).contains(&b) || b == 0xad => format!("\\u{b:04x}"),
        b => char::from(b).to_string(),
    };
    format!("'{inner}'")
}

/// Deserializes `null` as the default value, as Go's decoder does for maps, slices and strings.
pub(crate) fn null_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Default + serde::Deserialize<'de>,
{
    use serde::Deserialize;
    Option::<T>::deserialize(deserializer).map(Option::unwrap_or_default)
}

/// The 404 every per-instance endpoint gives.
pub(crate) fn instance_not_found(name: &str, project: &str) -> ApiError {
    ApiError::new(
        404,
        format!("Failed to fetch instance \"{name}\" in project \"{project}\": Instance not found"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::{Identity, Settings};
    use crate::state::State;

    fn app() -> Arc<App> {
        App::new(
            State::default_state(),
            Identity::default(),
            Settings::default(),
        )
    }

    async fn call(
        app: &Arc<App>,
        method: &str,
        path: &str,
        body: &str,
    ) -> (u16, serde_json::Value) {
        let req = Request::builder()
            .method(method)
            .uri(path)
            .body(Bytes::from(body.to_string()))
            .unwrap();
        let peer = Peer {
            listener: Listener::Direct,
            fingerprint: None,
        };
        let Outcome::Respond(resp) = serve(app, req, peer).await else {
            panic!("no response")
        };
        let status = resp.status().as_u16();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        (status, serde_json::from_slice(&bytes).unwrap())
    }

    #[tokio::test]
    async fn app_answers_without_a_socket() {
        let app = app();
        let (status, body) = call(&app, "GET", "/1.0/profiles/default", "").await;
        assert_eq!(
            (status, body["metadata"]["name"].as_str()),
            (200, Some("default"))
        );
        let (status, body) = call(
            &app,
            "POST",
            "/1.0/instances",
            r#"{"name":"c1","source":{"type":"none"}}"#,
        )
        .await;
        assert_eq!((status, body["type"].as_str()), (202, Some("async")));
        let entries = app.journal.entries();
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[1].listener, Listener::Direct);
        assert!(entries[1].applied);
    }

    #[test]
    fn json_errors_are_worded_like_go() {
        let err = |text: &str| {
            parse_body::<serde_json::Value>(text.as_bytes())
                .unwrap_err()
                .message
        };
        assert_eq!(
            err("{bad"),
            "invalid character 'b' looking for beginning of object key string"
        );
        assert_eq!(
            err("{\"a\": }"),
            "invalid character '}' looking for beginning of value"
        );
        assert_eq!(err(""), "EOF");
        assert_eq!(err("  \n"), "EOF");
        assert_eq!(err("{"), "unexpected EOF");
        assert_eq!(err("{\"a\": 1"), "unexpected EOF");
        assert_eq!(err("[1"), "unexpected EOF");
    }

    #[test]
    fn only_the_first_json_value_is_read_as_by_gos_decoder() {
        let first = parse_body::<serde_json::Value>(b"{\"a\": 1}} junk").unwrap();
        assert_eq!(first, serde_json::json!({"a": 1}));
    }

    #[tokio::test]
    async fn every_error_path_uses_the_one_envelope_conversion() {
        let app = app();
        for (method, path) in [
            ("GET", "/nope"),
            ("PUT", "/1.0/profiles"),
            ("GET", "/1.0/instances/x"),
        ] {
            let (status, body) = call(&app, method, path, "").await;
            assert_eq!(body["error_code"].as_u64(), Some(u64::from(status)));
            assert_eq!(body["type"], "error");
            assert_eq!(body["metadata"], serde_json::Value::Null);
        }
    }
}
