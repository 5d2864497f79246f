//! The three Incus response envelopes (sync, async, error) and the one conversion from
//! [`ApiError`] to the error envelope. Every body carries all seven keys and ends with a newline.

use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};

use crate::line::IncusLine;

/// The response body type of every handler.
pub(crate) type Body = http_body_util::combinators::UnsyncBoxBody<Bytes, std::io::Error>;

/// A handler's answer before it is turned into bytes.
pub(crate) type ApiResult = Result<Response<Body>, ApiError>;

/// An Incus error as the daemon reports it: HTTP status = `error_code`, message in `error`.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{status}: {message}")]
pub(crate) struct ApiError {
    pub(crate) status: u16,
    pub(crate) message: String,
}

impl ApiError {
    pub(crate) fn new(status: u16, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }
    pub(crate) fn not_found() -> Self {
        Self::new(404, "not found")
    }
    pub(crate) fn not_implemented() -> Self {
        Self::new(501, "not implemented")
    }
    pub(crate) fn forbidden() -> Self {
        Self::new(403, "not authorized")
    }
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, message)
    }
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(500, message)
    }
    /// The JSON error envelope as a value (also used inside the wait endpoint's HTTP 200).
    pub(crate) fn envelope(&self) -> Value {
        error_envelope(self.status, &self.message)
    }

    /// The error envelope as the daemon of `line` writes it: the JSON and its newline, and on
    /// 6.0 a second one (its error response printed the encoder's newline-terminated output with
    /// `fmt.Fprintln`; [`crate::line::ERROR_BODY_ONE_NEWLINE`]), where a sync answer has one.
    pub(crate) fn body_bytes(&self, line: IncusLine) -> Vec<u8> {
        let mut bytes = serde_json::to_vec(&self.envelope()).unwrap_or_default();
        bytes.push(b'\n');
        if !line.has_extension(crate::line::ERROR_BODY_ONE_NEWLINE) {
            bytes.push(b'\n');
        }
        bytes
    }

    /// The error response as the daemon of `line` sends it.
    pub(crate) fn into_response(self, line: IncusLine) -> Response<Body> {
        let status = StatusCode::from_u16(self.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = bytes_response(status, self.body_bytes(line));
        resp.headers_mut().insert(
            "x-content-type-options",
            HeaderValue::from_static("nosniff"),
        );
        resp
    }
}

/// An HTTP date: `Tue, 01 Dec 2026 14:00:19 GMT`.
pub(crate) fn http_date(at: time::OffsetDateTime) -> String {
    let format = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    at.format(&format).unwrap_or_default()
}

/// The error envelope value.
pub(crate) fn error_envelope(code: u16, message: &str) -> Value {
    json!({
        "type": "error", "status": "", "status_code": 0, "operation": "",
        "error_code": code, "error": message, "metadata": null,
    })
}

/// The sync envelope value.
pub(crate) fn sync_envelope(metadata: Value) -> Value {
    json!({
        "type": "sync", "status": "Success", "status_code": 200, "operation": "",
        "error_code": 0, "error": "", "metadata": metadata,
    })
}

/// 200 sync response.
pub(crate) fn sync(metadata: Value) -> Response<Body> {
    json_response(StatusCode::OK, &sync_envelope(metadata))
}

/// 200 sync response with `{}` metadata.
pub(crate) fn empty() -> Response<Body> {
    sync(json!({}))
}

/// 200 sync response with a quoted ETag header.
pub(crate) fn sync_etag(metadata: Value, etag: &str) -> Response<Body> {
    with_etag(sync(metadata), etag)
}

fn with_etag(mut resp: Response<Body>, etag: &str) -> Response<Body> {
    if let Some(value) = etag_header(etag) {
        resp.headers_mut().insert(header::ETAG, value);
    }
    resp
}

/// The `ETag` header value for this ETag (quoted, as the daemon sends it).
pub(crate) fn etag_header(etag: &str) -> Option<HeaderValue> {
    HeaderValue::from_str(&format!("\"{etag}\"")).ok()
}

/// The sync envelope's bytes before the metadata (as [`sync`] writes them).
const SYNC_PREFIX: &[u8] = br#"{"type":"sync","status":"Success","status_code":200,"operation":"","error_code":0,"error":"","metadata":"#;
/// The sync envelope's bytes after the metadata, with the final newline.
const SYNC_SUFFIX: &[u8] = b"}\n";

/// The body of a 200 sync response around metadata that is already JSON: the same bytes as
/// [`sync`] writes for its value. The pieces are written in order, into one allocation of
/// the exact size.
pub(crate) fn sync_body(pieces: &[&[u8]]) -> Bytes {
    let size =
        SYNC_PREFIX.len() + SYNC_SUFFIX.len() + pieces.iter().map(|p| p.len()).sum::<usize>();
    let mut bytes = Vec::with_capacity(size);
    bytes.extend_from_slice(SYNC_PREFIX);
    for piece in pieces {
        bytes.extend_from_slice(piece);
    }
    bytes.extend_from_slice(SYNC_SUFFIX);
    Bytes::from(bytes)
}

/// 200 sync response around metadata that is already JSON: the same bytes as [`sync`] (and,
/// with an ETag, [`sync_etag`]) would write for its value. The pieces are written in order.
pub(crate) fn sync_raw<const N: usize>(pieces: [&[u8]; N], etag: Option<&str>) -> Response<Body> {
    let resp = bytes_response(StatusCode::OK, sync_body(&pieces));
    match etag {
        Some(etag) => with_etag(resp, etag),
        None => resp,
    }
}

/// 200 sync response whose whole body (envelope included) was built before, by
/// [`sync_body`] or [`sync_list_body`]; `etag` is the header value as [`etag_header`] makes it.
pub(crate) fn sync_prebuilt(body: Bytes, etag: Option<HeaderValue>) -> Response<Body> {
    let mut resp = bytes_response(StatusCode::OK, body);
    if let Some(etag) = etag {
        resp.headers_mut().insert(header::ETAG, etag);
    }
    resp
}

/// The body of a 200 sync response whose metadata is the JSON array of these
/// already-serialized items: the items are copied once, into one allocation of the exact size.
pub(crate) fn sync_list_body(items: &[&[u8]]) -> Bytes {
    let commas = items.len().saturating_sub(1);
    let size = SYNC_PREFIX.len()
        + SYNC_SUFFIX.len()
        + 2
        + commas
        + items.iter().map(|item| item.len()).sum::<usize>();
    let mut bytes = Vec::with_capacity(size);
    bytes.extend_from_slice(SYNC_PREFIX);
    bytes.push(b'[');
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            bytes.push(b',');
        }
        bytes.extend_from_slice(item);
    }
    bytes.push(b']');
    bytes.extend_from_slice(SYNC_SUFFIX);
    debug_assert_eq!(bytes.len(), size);
    Bytes::from(bytes)
}

/// 200 sync response whose metadata is the JSON array of these already-serialized items.
pub(crate) fn sync_list(items: &[&[u8]]) -> Response<Body> {
    bytes_response(StatusCode::OK, sync_list_body(items))
}

/// 202 async response for an operation object.
pub(crate) fn operation_created(op: Value) -> Response<Body> {
    let url = format!("/1.0/operations/{}", op["id"].as_str().unwrap_or_default());
    let body = json!({
        "type": "async", "status": "Operation created", "status_code": 100, "operation": url,
        "error_code": 0, "error": "", "metadata": op,
    });
    let mut resp = json_response(StatusCode::ACCEPTED, &body);
    if let Ok(value) = HeaderValue::from_str(&url) {
        resp.headers_mut().insert(header::LOCATION, value);
    }
    resp
}

/// A response with a JSON body followed by a newline.
pub(crate) fn json_response(status: StatusCode, value: &impl serde::Serialize) -> Response<Body> {
    let mut bytes = serde_json::to_vec(value).unwrap_or_default();
    bytes.push(b'\n');
    bytes_response(status, bytes)
}

/// A response with these JSON bytes (newline included) as its body.
fn bytes_response(status: StatusCode, bytes: impl Into<Bytes>) -> Response<Body> {
    let mut resp = Response::new(full(bytes));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// A complete body from bytes.
pub(crate) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// 101 Switching Protocols for a websocket upgrade with this `Sec-WebSocket-Key`.
pub(crate) fn switching_protocols(key: &HeaderValue) -> Response<Body> {
    let mut resp = Response::new(full(Bytes::new()));
    *resp.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    let headers = resp.headers_mut();
    headers.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
    headers.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    let accept = tokio_tungstenite::tungstenite::handshake::derive_accept_key(key.as_bytes());
    if let Ok(accept) = HeaderValue::from_str(&accept) {
        headers.insert("sec-websocket-accept", accept);
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body(resp: Response<Body>) -> (http::HeaderMap, Bytes) {
        let (parts, body) = resp.into_parts();
        (
            parts.headers,
            body.collect().await.expect("body").to_bytes(),
        )
    }

    #[tokio::test]
    async fn raw_sync_bodies_are_the_bytes_of_the_value_envelope() {
        let items = [json!({"name": "a", "x": [1, 2]}), json!("/1.0/instances/b")];
        let encoded: Vec<Vec<u8>> = items
            .iter()
            .map(|v| serde_json::to_vec(v).unwrap())
            .collect();
        let expected = body(sync(Value::Array(items.to_vec()))).await;
        let encoded: Vec<&[u8]> = encoded.iter().map(Vec::as_slice).collect();
        let raw = body(sync_list(&encoded)).await;
        assert_eq!(raw, expected);
        assert_eq!(body(sync_list(&[])).await, body(sync(json!([]))).await);
        assert_eq!(
            body(sync_list(&encoded[..1])).await,
            body(sync(json!([items[0]]))).await
        );
        let expected = body(sync_etag(items[0].clone(), "abc")).await;
        assert_eq!(body(sync_raw([encoded[0]], Some("abc"))).await, expected);
        let prebuilt = sync_prebuilt(sync_body(&[encoded[0]]), etag_header("abc"));
        assert_eq!(body(prebuilt).await, expected);
    }
}
