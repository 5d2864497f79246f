//! Transport faults: what happens to the connection and the answer of a selected request.

use crate::app::App;
use crate::envelope::{self, ApiError, Body};
use crate::faults::Fault;
use crate::journal::Answer;
use bytes::Bytes;
use futures_util::StreamExt;
use http::{header, Response};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use std::time::Duration;

/// What the listener must do with the connection.
pub(crate) enum Outcome {
    /// Send this response.
    Respond(Response<Body>),
    /// Close the connection without answering.
    Close,
    /// Reset the connection (RST where the transport has one).
    Reset,
}

/// Faults that act before the request is handled. `None` = go on handling it.
pub(crate) async fn before_apply(app: &App, fault: &Fault, seq: u64) -> Option<Outcome> {
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
pub(crate) async fn after_apply(
    app: &App,
    fault: &Fault,
    seq: u64,
    response: Response<Body>,
) -> Outcome {
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
