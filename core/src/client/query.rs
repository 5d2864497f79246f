//! The three helpers every native call goes through, as in the Incus Go client:
//! [`Client::query`] (any envelope plus the ETag), [`Client::query_value`] /
//! [`Client::query_list`] (a sync payload decoded) and [`Client::query_operation`] (the
//! operation object of a 202).
//!
//! Responses are classified by the envelope's `type`, never by the HTTP status alone
//! (the operation wait endpoint answers HTTP 200 with error envelopes).

use http::Method;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::Value;
use tokio::time::Instant;

use super::error::ClientError;
use super::transport::{self, NativeRequest, RawResponse};
use super::Client;

/// Characters left as they are in a path segment or query value: RFC 3986 unreserved.
const UNRESERVED: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A decoded Incus envelope.
#[derive(Debug, Clone)]
pub(crate) enum Envelope {
    /// `type: "sync"`: the payload.
    Sync(Value),
    /// `type: "async"`: the operation object.
    Async(Value),
    /// `type: "error"`.
    Error { error_code: i64, message: String },
}

/// An envelope with the HTTP status and ETag it came with.
#[derive(Debug, Clone)]
pub(crate) struct Reply {
    pub(crate) http_status: u16,
    pub(crate) etag: Option<String>,
    pub(crate) envelope: Envelope,
}

/// One native object and its ETag header (exactly as sent, quotes included), if any.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Single {
    pub(crate) value: Value,
    pub(crate) etag: Option<String>,
}

/// One item of a native list, unchanged, with the length of its compact JSON encoding
/// (as `serde_json` writes it) so callers can bound their output in one pass.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ListItem {
    pub(crate) value: Value,
    pub(crate) json_len: usize,
}

impl ListItem {
    pub(crate) fn new(value: Value) -> Self {
        let json_len = json_len(&value);
        Self { value, json_len }
    }
}

/// The operation Incus created for an async request (HTTP 202).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Accepted {
    pub(crate) id: String,
    pub(crate) operation: Value,
}

/// Builds an origin-form request target from raw path segments and query pairs.
pub(crate) fn target(segments: &[&str], query: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for segment in segments {
        out.push('/');
        out.extend(utf8_percent_encode(segment, UNRESERVED));
    }
    for (i, (key, value)) in query.iter().enumerate() {
        out.push(if i == 0 { '?' } else { '&' });
        out.push_str(key);
        out.push('=');
        out.extend(utf8_percent_encode(value, UNRESERVED));
    }
    out
}

impl Client {
    /// Sends one request and decodes the envelope, whatever its type.
    pub(crate) async fn exchange_envelope(
        &self,
        method: Method,
        target: String,
        body: Option<&Value>,
        if_match: Option<&str>,
        deadline: Instant,
    ) -> Result<Reply, ClientError> {
        let body =
            body.map(serde_json::to_vec)
                .transpose()
                .map_err(|e| ClientError::InvalidRequest {
                    message: e.to_string(),
                })?;
        tracing::debug!(%method, %target, "native request");
        let request = NativeRequest {
            method,
            target,
            body,
            if_match,
        };
        let raw = transport::exchange(&self.connection, request, deadline).await?;
        decode(raw)
    }

    /// Sends one request bounded by the connection's timeout; an error envelope becomes
    /// [`ClientError::Native`].
    pub(crate) async fn query(
        &self,
        method: Method,
        target: String,
        body: Option<&Value>,
        if_match: Option<&str>,
    ) -> Result<Reply, ClientError> {
        let deadline = Instant::now() + self.connection.timeout();
        let reply = self
            .exchange_envelope(method, target, body, if_match, deadline)
            .await?;
        match reply.envelope {
            Envelope::Error {
                error_code,
                message,
            } => Err(ClientError::Native {
                http_status: reply.http_status,
                error_code,
                message,
            }),
            _ => Ok(reply),
        }
    }

    /// `GET target`, expecting a sync payload.
    pub(crate) async fn query_value(&self, target: String) -> Result<Single, ClientError> {
        let reply = self.query(Method::GET, target, None, None).await?;
        match reply.envelope {
            Envelope::Sync(value) => Ok(Single {
                value,
                etag: reply.etag,
            }),
            _ => Err(ClientError::invalid_response(
                "expected a sync response to a GET",
            )),
        }
    }

    /// `GET target`, expecting a sync payload that is a JSON array.
    pub(crate) async fn query_list(&self, target: String) -> Result<Vec<ListItem>, ClientError> {
        match self.query_value(target).await?.value {
            Value::Array(items) => Ok(items.into_iter().map(ListItem::new).collect()),
            _ => Err(ClientError::invalid_response(
                "expected a list in the response metadata",
            )),
        }
    }

    /// Sends a request that Incus runs as an operation, expecting a 202 with the operation.
    pub(crate) async fn query_operation(
        &self,
        method: Method,
        target: String,
        body: Option<&Value>,
        if_match: Option<&str>,
    ) -> Result<Accepted, ClientError> {
        let reply = self.query(method, target, body, if_match).await?;
        match reply.envelope {
            Envelope::Async(operation) => accepted(operation),
            _ => Err(ClientError::invalid_response(
                "expected an async response (an operation)",
            )),
        }
    }

    /// Sends a request that Incus answers synchronously with an empty success (`{}`).
    pub(crate) async fn query_empty(
        &self,
        method: Method,
        target: String,
        body: Option<&Value>,
        if_match: Option<&str>,
    ) -> Result<(), ClientError> {
        let reply = self.query(method, target, body, if_match).await?;
        match reply.envelope {
            Envelope::Sync(_) => Ok(()),
            _ => Err(ClientError::invalid_response("expected a sync response")),
        }
    }
}

/// Reads the operation identity from the operation object of a 202.
pub(crate) fn accepted(operation: Value) -> Result<Accepted, ClientError> {
    let id = operation
        .get("id")
        .and_then(Value::as_str)
        .filter(|id| !id.is_empty())
        .ok_or_else(|| ClientError::invalid_response("the operation has no id"))?
        .to_owned();
    Ok(Accepted { id, operation })
}

/// Classifies a raw answer by its envelope `type`.
pub(crate) fn decode(raw: RawResponse) -> Result<Reply, ClientError> {
    let http_status = raw.status.as_u16();
    let body: Value = serde_json::from_slice(&raw.body).map_err(|e| {
        ClientError::invalid_response(format!(
            "HTTP {http_status} with a body that is not JSON: {e}"
        ))
    })?;
    let Value::Object(mut object) = body else {
        return Err(ClientError::invalid_response(format!(
            "HTTP {http_status} with a body that is not a JSON object"
        )));
    };
    let metadata = object.remove("metadata").unwrap_or(Value::Null);
    let envelope = match object.get("type").and_then(Value::as_str) {
        Some("sync") => Envelope::Sync(metadata),
        Some("async") => Envelope::Async(metadata),
        Some("error") => Envelope::Error {
            error_code: object
                .get("error_code")
                .and_then(Value::as_i64)
                .unwrap_or(i64::from(http_status)),
            message: object
                .get("error")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned(),
        },
        _ => {
            return Err(ClientError::invalid_response(format!(
                "HTTP {http_status} with an envelope whose type is not sync, async or error"
            )))
        }
    };
    Ok(Reply {
        http_status,
        etag: raw.etag,
        envelope,
    })
}

/// The length of `value` encoded as compact JSON, computed without allocating it.
pub(crate) fn json_len(value: &Value) -> usize {
    struct Counter(usize);
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 += buf.len();
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter(0);
    // Writing a `Value` to an infallible writer cannot fail.
    let _ = serde_json::to_writer(&mut counter, value);
    counter.0
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the three helpers every native call goes
    //! through, as in the Incus Go client); a promise of the whole `run()` or of the client against
    //! a fake Incus, seen through the public API, goes in `tests/integration`.

    use super::*;
    use bytes::Bytes;
    use http::StatusCode;
    use serde_json::json;

    fn raw(status: u16, body: &str) -> RawResponse {
        RawResponse {
            status: StatusCode::from_u16(status).unwrap(),
            etag: None,
            body: Bytes::from(body.to_owned()),
        }
    }

    #[test]
    fn target_encodes_segments_and_query_values() {
        assert_eq!(
            target(&["1.0", "instances", "a b/c"], &[("project", "p&q")]),
            "/1.0/instances/a%20b%2Fc?project=p%26q"
        );
        assert_eq!(target(&["1.0"], &[]), "/1.0");
    }

    #[test]
    fn envelopes_are_classified_by_type_not_status() {
        let wait_error = raw(
            200,
            r#"{"type":"error","status":"","status_code":0,"operation":"","error_code":500,"error":"context deadline exceeded","metadata":null}"#,
        );
        match decode(wait_error).unwrap().envelope {
            Envelope::Error {
                error_code,
                message,
            } => {
                assert_eq!(error_code, 500);
                assert_eq!(message, "context deadline exceeded");
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn garbage_is_an_invalid_response() {
        assert!(matches!(
            decode(raw(200, "not json")),
            Err(ClientError::InvalidResponse { .. })
        ));
        assert!(matches!(
            decode(raw(200, r#"{"type":"weird"}"#)),
            Err(ClientError::InvalidResponse { .. })
        ));
        assert!(matches!(
            decode(raw(200, "[1]")),
            Err(ClientError::InvalidResponse { .. })
        ));
    }

    #[test]
    fn json_len_matches_serialization() {
        let value = json!({"name": "c1", "config": {"a": "é<>"}, "n": [1, 2.5, null]});
        assert_eq!(json_len(&value), serde_json::to_vec(&value).unwrap().len());
    }

    #[test]
    fn accepted_requires_an_operation_id() {
        assert!(accepted(json!({"status": "Running"})).is_err());
        assert_eq!(accepted(json!({"id": "abc"})).unwrap().id, "abc");
    }
}
