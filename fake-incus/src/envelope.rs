//! The three Incus response envelopes (sync, async, error) and the one conversion from
//! [`ApiError`] to the error envelope. Every body carries all seven keys and ends with a newline.

use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};

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
}

impl From<ApiError> for Response<Body> {
    fn from(err: ApiError) -> Self {
        let status = StatusCode::from_u16(err.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = json_response(status, &err.envelope());
        resp.headers_mut().insert(
            "x-content-type-options",
            HeaderValue::from_static("nosniff"),
        );
        resp
    }
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
    if let Ok(value) = HeaderValue::from_str(&format!("\"{etag}\"")) {
        resp.headers_mut().insert(header::ETAG, value);
    }
    resp
}

/// The sync envelope's bytes before the metadata (as [`sync`] writes them).
const SYNC_PREFIX: &[u8] = br#"{"type":"sync","status":"Success","status_code":200,"operation":"","error_code":0,"error":"","metadata":"#;
/// The sync envelope's bytes after the metadata, with the final newline.
const SYNC_SUFFIX: &[u8] = b"}\n";

/// 200 sync response around metadata that is already JSON: the same bytes as [`sync`] (and,
/// with an ETag, [`sync_etag`]) would write for its value. The pieces are written in order.
pub(crate) fn sync_raw<'a>(
    pieces: impl IntoIterator<Item = &'a [u8]>,
    etag: Option<&str>,
) -> Response<Body> {
    let pieces: Vec<&[u8]> = pieces.into_iter().collect();
    let size =
        SYNC_PREFIX.len() + SYNC_SUFFIX.len() + pieces.iter().map(|p| p.len()).sum::<usize>();
    let mut bytes = Vec::with_capacity(size);
    bytes.extend_from_slice(SYNC_PREFIX);
    for piece in pieces {
        bytes.extend_from_slice(piece);
    }
    bytes.extend_from_slice(SYNC_SUFFIX);
    let resp = bytes_response(StatusCode::OK, bytes);
    match etag {
        Some(etag) => with_etag(resp, etag),
        None => resp,
    }
}

/// 200 sync response whose metadata is the JSON array of these already-serialized items.
pub(crate) fn sync_list<'a>(items: impl IntoIterator<Item = &'a [u8]>) -> Response<Body> {
    let mut pieces: Vec<&[u8]> = vec![b"["];
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            pieces.push(b",");
        }
        pieces.push(item);
    }
    pieces.push(b"]");
    sync_raw(pieces, None)
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
        let raw = body(sync_list(encoded.iter().map(Vec::as_slice))).await;
        assert_eq!(raw, expected);
        assert_eq!(
            body(sync_list(std::iter::empty())).await,
            body(sync(json!([]))).await
        );
        let expected = body(sync_etag(items[0].clone(), "abc")).await;
        assert_eq!(
            body(sync_raw([encoded[0].as_slice()], Some("abc"))).await,
            expected
        );
    }
}
