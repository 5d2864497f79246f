//! Transport faults: what happens to the connection and the answer of a selected request.

use super::{millis, Fault, RuleError};
use crate::envelope::{self, ApiError, Body};
use crate::journal::{Answer, Journal};
use bytes::Bytes;
use futures_util::StreamExt;
use http::{header, HeaderMap, HeaderName, HeaderValue, Response, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What the listener must do with the connection.
pub(crate) enum Outcome {
    /// Send this response.
    Respond(Response<Body>),
    /// Close the connection without answering.
    Close,
    /// Reset the connection (RST where the transport has one).
    Reset,
}

/// The transport faults of one request: a delay before it is handled, and at most one fault
/// that shapes the answer.
#[derive(Debug, Clone, Default)]
pub(crate) struct TransportFaults {
    /// How long to wait before handling the request.
    pub(crate) delay: Option<Duration>,
    answer: Option<AnswerFault>,
}

/// A fault that replaces or disturbs the answer.
#[derive(Debug, Clone)]
enum AnswerFault {
    Error {
        status: u16,
        message: String,
    },
    Respond {
        status: StatusCode,
        headers: HeaderMap,
        body: Bytes,
        apply: bool,
    },
    CloseBeforeApply,
    Reset,
    Stall,
    CloseAfterApply,
    GarbageBody,
    TruncatedBody,
    Dribble {
        chunk_bytes: usize,
        interval: Duration,
    },
}

impl TransportFaults {
    /// Adds a delay or answer fault, checking its fields.
    pub(super) fn add(&mut self, fault: &Fault) -> Result<(), RuleError> {
        let bad = |problem: String| RuleError::BadField {
            kind: fault.kind(),
            problem,
        };
        let answer = match fault {
            Fault::Delay { ms } => {
                self.delay = Some(millis(*ms));
                return Ok(());
            }
            Fault::Error { status, message } => {
                if !(400..=599).contains(status) {
                    return Err(bad(format!("status {status} is not 4xx/5xx")));
                }
                AnswerFault::Error {
                    status: *status,
                    message: message.clone(),
                }
            }
            Fault::Respond {
                status,
                headers,
                body,
                apply,
            } => {
                let status = StatusCode::from_u16(*status)
                    .ok()
                    .filter(|s| (200..=599).contains(&s.as_u16()))
                    .ok_or_else(|| bad(format!("status {status} is not 200-599")))?;
                let mut map = HeaderMap::new();
                for (name, value) in headers {
                    let name = HeaderName::from_bytes(name.as_bytes())
                        .map_err(|_| bad(format!("{name:?} is not a header name")))?;
                    let value = HeaderValue::from_str(value)
                        .map_err(|_| bad(format!("{value:?} is not a header value")))?;
                    map.append(name, value);
                }
                AnswerFault::Respond {
                    status,
                    headers: map,
                    body: Bytes::from(body.clone()),
                    apply: *apply,
                }
            }
            Fault::CloseBeforeApply => AnswerFault::CloseBeforeApply,
            Fault::Reset => AnswerFault::Reset,
            Fault::Stall => AnswerFault::Stall,
            Fault::CloseAfterApply => AnswerFault::CloseAfterApply,
            Fault::GarbageBody => AnswerFault::GarbageBody,
            Fault::TruncatedBody => AnswerFault::TruncatedBody,
            Fault::Dribble {
                chunk_bytes,
                interval_ms,
            } => {
                if *chunk_bytes == 0 {
                    return Err(bad("chunk_bytes must be at least 1".into()));
                }
                AnswerFault::Dribble {
                    chunk_bytes: *chunk_bytes,
                    interval: millis(*interval_ms),
                }
            }
            _ => return Ok(()),
        };
        self.answer = Some(answer);
        Ok(())
    }

    /// The kind of the answer fault that keeps the request from being applied, if any.
    pub(super) fn applies_nothing(&self) -> Option<&'static str> {
        match self.answer.as_ref()? {
            AnswerFault::Error { .. } => Some("error"),
            AnswerFault::Respond { apply: false, .. } => Some("respond"),
            AnswerFault::CloseBeforeApply => Some("close_before_apply"),
            AnswerFault::Reset => Some("reset"),
            AnswerFault::Stall => Some("stall"),
            _ => None,
        }
    }

    fn kind(answer: &AnswerFault) -> &'static str {
        match answer {
            AnswerFault::Error { .. } => "error",
            AnswerFault::Respond { .. } => "respond",
            AnswerFault::CloseBeforeApply => "close_before_apply",
            AnswerFault::Reset => "reset",
            AnswerFault::Stall => "stall",
            AnswerFault::CloseAfterApply => "close_after_apply",
            AnswerFault::GarbageBody => "garbage_body",
            AnswerFault::TruncatedBody => "truncated_body",
            AnswerFault::Dribble { .. } => "dribble",
        }
    }

    /// Acts before the request is handled: waits out the delay, then answers (or drops the
    /// connection) for the faults that apply nothing. `None` = go on handling it.
    pub(crate) async fn before(
        &self,
        journal: &Journal,
        seq: u64,
        shutdown: &CancellationToken,
        line: crate::line::IncusLine,
    ) -> Option<Outcome> {
        if let Some(delay) = self.delay {
            tokio::time::sleep(delay).await;
        }
        let answer = self.answer.as_ref()?;
        let mark = |code: Option<u16>| {
            journal.set_answer(
                seq,
                Answer::Fault {
                    fault: Self::kind(answer).into(),
                    code,
                },
            );
        };
        match answer {
            AnswerFault::Error { status, message } => {
                mark(Some(*status));
                Some(Outcome::Respond(
                    ApiError::new(*status, message.clone()).into_response(line),
                ))
            }
            AnswerFault::Respond {
                status,
                headers,
                body,
                apply: false,
            } => {
                mark(Some(status.as_u16()));
                Some(Outcome::Respond(respond(*status, headers, body)))
            }
            AnswerFault::CloseBeforeApply => {
                mark(None);
                Some(Outcome::Close)
            }
            AnswerFault::Reset => {
                mark(None);
                Some(Outcome::Reset)
            }
            AnswerFault::Stall => {
                mark(None);
                shutdown.cancelled().await;
                Some(Outcome::Close)
            }
            _ => None,
        }
    }

    /// Acts once the request was handled (and applied): answers `response` or disturbs it.
    pub(crate) async fn after(
        &self,
        journal: &Journal,
        seq: u64,
        response: Response<Body>,
    ) -> Outcome {
        let code = response.status().as_u16();
        let Some(answer) = &self.answer else {
            journal.set_answer(seq, Answer::Status { code });
            return Outcome::Respond(response);
        };
        let mark = |code: Option<u16>| {
            journal.set_answer(
                seq,
                Answer::Fault {
                    fault: Self::kind(answer).into(),
                    code,
                },
            );
        };
        match answer {
            AnswerFault::CloseAfterApply => {
                mark(None);
                Outcome::Close
            }
            AnswerFault::GarbageBody => {
                mark(Some(200));
                let mut resp = Response::new(envelope::full(&b"\x00garbage{{not json"[..]));
                resp.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("application/json"),
                );
                Outcome::Respond(resp)
            }
            AnswerFault::TruncatedBody => {
                mark(Some(code));
                Outcome::Respond(truncate(response).await)
            }
            AnswerFault::Dribble {
                chunk_bytes,
                interval,
            } => {
                mark(Some(code));
                Outcome::Respond(dribble(response, *chunk_bytes, *interval).await)
            }
            AnswerFault::Respond {
                status,
                headers,
                body,
                apply: true,
            } => {
                mark(Some(status.as_u16()));
                Outcome::Respond(respond(*status, headers, body))
            }
            _ => {
                journal.set_answer(seq, Answer::Status { code });
                Outcome::Respond(response)
            }
        }
    }
}

/// The chosen answer of a `respond` fault.
fn respond(status: StatusCode, headers: &HeaderMap, body: &Bytes) -> Response<Body> {
    let mut resp = Response::new(envelope::full(body.clone()));
    *resp.status_mut() = status;
    resp.headers_mut().extend(headers.clone());
    resp
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
async fn dribble(response: Response<Body>, chunk: usize, interval: Duration) -> Response<Body> {
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
                tokio::time::sleep(interval).await;
            }
            Ok::<_, std::io::Error>(Frame::data(c))
        });
    Response::from_parts(parts, BodyExt::boxed_unsync(StreamBody::new(frames)))
}
