//! Exec sessions: the websocket plumbing between a client and the built-in interpreter.
//!
//! Protocol (reference §11): `POST …/exec` creates a websocket operation whose metadata holds one
//! secret per fd (`0`, `1`, `2`, `control`; interactive: `0`, `control`). Each fd connects to
//! `GET /1.0/operations/{id}/websocket?secret=…`. Once the required fds are connected (within the
//! connect timeout) the command runs. Data are binary frames, end of stream is an empty text
//! frame, the server pings `keepalive` at connect and every 10 s, and at the end the server
//! closes the TCP connections without a close frame. The exit status goes to `metadata.return`.

pub(crate) mod interpreter;
mod runner;
mod sockets;
mod task;

use crate::api::{is_upgrade, Ctx};
use crate::app::{op_not_found, App};
use crate::envelope::{self, ApiError, ApiResult};
use crate::faults::exec::ExecFaults;
use crate::faults::operation::OperationFault;
use bytes::Bytes;
use http::{header, HeaderValue, Request, Response, StatusCode};
use hyper::upgrade::Upgraded;
use hyper_util::rt::TokioIo;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use tokio::sync::mpsc;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::WebSocketStream;

pub(crate) use interpreter::{incus_environment, ExecRequest};
use runner::Runner;
pub(crate) use task::{start_task_session, Recording};

type Ws = WebSocketStream<TokioIo<Upgraded>>;
const SIGKILL: i32 = 9;

/// One exec operation's websockets.
pub(crate) struct Session {
    secrets: BTreeMap<String, String>,
    connected: Mutex<BTreeSet<String>>,
    sockets: mpsc::UnboundedSender<(String, Ws)>,
}

/// A fresh 64-hex secret.
fn secret() -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(uuid::Uuid::new_v4().as_bytes()))
}

impl Session {
    /// The fds and their secrets, for the operation's metadata.
    pub(crate) fn fds(&self) -> Value {
        serde_json::to_value(&self.secrets).unwrap_or(Value::Null)
    }
}

/// Registers a websocket session for operation `op_id` and starts its runner.
pub(crate) fn start_websocket_session(
    app: &Arc<App>,
    op_id: &str,
    req: ExecRequest,
    interactive: bool,
    faults: ExecFaults,
    op_fault: Option<OperationFault>,
) -> Value {
    let fds: &[&str] = if interactive {
        &["0", "control"]
    } else {
        &["0", "1", "2", "control"]
    };
    let (tx, rx) = mpsc::unbounded_channel();
    let session = Arc::new(Session {
        secrets: fds.iter().map(|fd| (fd.to_string(), secret())).collect(),
        connected: Mutex::new(BTreeSet::new()),
        sockets: tx,
    });
    let fds = session.fds();
    app.exec
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(op_id.into(), session.clone());
    let (runner, ends) = Runner::new(
        Arc::clone(app),
        op_id.to_string(),
        interactive,
        faults,
        op_fault,
    );
    tokio::spawn(runner.run(rx, ends, req));
    fds
}

pub(super) fn start_failure_error(failure: interpreter::StartFailure) -> ApiError {
    match failure {
        interpreter::StartFailure::CommandNotFound => ApiError::bad_request(failure.message()),
        interpreter::StartFailure::EmptyCommand => ApiError::internal(failure.message()),
    }
}

/// `GET /1.0/operations/{id}/websocket?secret=…`.
pub(crate) fn connect(ctx: &Ctx, mut req: Request<Bytes>, op_id: &str) -> ApiResult {
    let secret = ctx.param("secret").map(String::from);
    let final_status = ctx.app.ops().get(op_id).map(|op| op.status.is_final());
    let secret = match (final_status, secret) {
        (None, None) => return Err(ApiError::bad_request("Missing websocket secret")),
        (None, Some(_)) => return Err(op_not_found()),
        (Some(_), None) => return Err(ApiError::internal("missing secret")),
        (Some(true), Some(_)) => {
            return Err(ApiError::internal(
                "Only running operations can be connected",
            ))
        }
        (Some(false), Some(secret)) => secret,
    };
    let session = ctx
        .app
        .exec
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(op_id)
        .cloned();
    let fd = session
        .as_ref()
        .and_then(|s| {
            s.secrets
                .iter()
                .find(|(_, s)| **s == secret)
                .map(|(fd, _)| fd.clone())
        })
        .ok_or_else(|| ApiError::new(403, "Forbidden"))?;
    let session = session.ok_or_else(|| ApiError::new(403, "Forbidden"))?;
    let key = req.headers().get("sec-websocket-key").cloned();
    let Some(key) = key.filter(|_| is_upgrade(&req)) else {
        return Ok(bad_upgrade());
    };
    let duplicate = !session
        .connected
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(fd.clone());
    let on_upgrade = hyper::upgrade::on(&mut req);
    let tx = session.sockets.clone();
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        if duplicate {
            return; // the daemon drops a second connection for the same fd at once
        }
        let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        let _ = tx.send((fd, ws));
    });
    Ok(envelope::switching_protocols(&key))
}

/// What a plain GET on the websocket endpoint gets.
fn bad_upgrade() -> Response<envelope::Body> {
    let mut body = b"Bad Request\n".to_vec();
    let envelope = ApiError::internal("websocket: the client is not using the websocket protocol: 'upgrade' token not found in 'Connection' header").envelope();
    body.extend(serde_json::to_vec(&envelope).unwrap_or_default());
    body.push(b'\n');
    let mut resp = Response::new(envelope::full(body));
    *resp.status_mut() = StatusCode::BAD_REQUEST;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}
