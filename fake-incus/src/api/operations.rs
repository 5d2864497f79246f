//! `/1.0/operations`: list, get, cancel (DELETE), wait (HTTP 200 at once, body when done) and
//! the websocket endpoint of exec operations.

use super::{is_upgrade, Ctx};
use crate::envelope::{self, ApiError, ApiResult, Body};
use crate::operations::op_not_found;
use bytes::Bytes;
use futures_util::FutureExt;
use http::{header, HeaderValue, Request, Response, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

pub(super) fn list(ctx: &Ctx) -> ApiResult {
    if ctx.all_projects() && ctx.param("project").is_some() {
        return Err(ApiError::bad_request(
            "Cannot specify a project when requesting all projects",
        ));
    }
    let projects = ctx.projects();
    let ops = ctx.app.operations.ops();
    // Go encodes the map with sorted keys: failure, running, success...
    let mut groups: BTreeMap<String, Value> = BTreeMap::new();
    for op in ops
        .list
        .iter()
        .filter(|o| projects.contains(&o.spec.project))
    {
        let item = if ctx.recursion() == 0 {
            Value::String(format!("/1.0/operations/{}", op.id))
        } else {
            op.to_json_read()
        };
        let group = groups
            .entry(op.status.name().to_lowercase())
            .or_insert_with(|| Value::Array(vec![]));
        if let Value::Array(items) = group {
            items.push(item);
        }
    }
    Ok(envelope::sync(
        serde_json::to_value(groups).unwrap_or_default(),
    ))
}

pub(super) fn get(ctx: &Ctx, id: &str) -> ApiResult {
    let ops = ctx.app.operations.ops();
    let op = ops.get(id).ok_or_else(op_not_found)?;
    Ok(envelope::sync(op.to_json_read()))
}

pub(super) fn cancel(ctx: &Ctx, id: &str) -> ApiResult {
    ctx.app.operations.cancel_operation(id)?;
    ctx.applied();
    Ok(envelope::empty())
}

/// Answers 200 at once; the body (sync or error envelope) follows when the wait ends.
pub(super) fn wait(ctx: &Ctx, id: &str) -> ApiResult {
    let timeout = match ctx.param("timeout") {
        None | Some("-1") => None,
        Some(text) => {
            let secs: i64 = text.parse().map_err(|_| {
                ApiError::internal(format!("strconv.Atoi: parsing {text:?}: invalid syntax"))
            })?;
            if secs < 0 {
                None
            } else {
                Some(Duration::from_secs(secs as u64))
            }
        }
    };
    if ctx.app.operations.ops().get(id).is_none() {
        return Err(op_not_found());
    }
    let app = ctx.app.clone();
    let id = id.to_string();
    let body = async move {
        let bytes = match app.operations.wait_operation(&id, timeout).await {
            Ok(op) => {
                let mut bytes =
                    serde_json::to_vec(&envelope::sync_envelope(op)).unwrap_or_default();
                bytes.push(b'\n');
                bytes
            }
            Err(err) => err.body_bytes(app.settings.line),
        };
        Ok::<_, std::io::Error>(Frame::data(Bytes::from(bytes)))
    };
    let stream = futures_util::stream::once(body.boxed());
    let mut resp: Response<Body> = Response::new(BodyExt::boxed_unsync(StreamBody::new(stream)));
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CONNECTION, HeaderValue::from_static("keep-alive"));
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    Ok(resp)
}

/// `GET /1.0/operations/{id}/websocket?secret=…`.
pub(super) fn connect(ctx: &Ctx, mut req: Request<Bytes>, op_id: &str) -> ApiResult {
    let secret = ctx.param("secret").map(String::from);
    let final_status = ctx
        .app
        .operations
        .ops()
        .get(op_id)
        .map(|op| op.status.is_final());
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
    let session = ctx.app.exec.session(op_id);
    let fd = session
        .as_ref()
        .and_then(|s| s.fd_for(&secret))
        .ok_or_else(|| ApiError::new(403, "Forbidden"))?;
    let session = session.ok_or_else(|| ApiError::new(403, "Forbidden"))?;
    let key = req.headers().get("sec-websocket-key").cloned();
    let Some(key) = key.filter(|_| is_upgrade(&req)) else {
        return Ok(bad_upgrade(ctx.app.settings.line));
    };
    session.accept(
        fd,
        hyper::upgrade::on(&mut req),
        ctx.seq,
        ctx.scope.life.clone(),
    );
    Ok(envelope::switching_protocols(&key))
}

/// What a plain GET on the websocket endpoint gets.
fn bad_upgrade(line: crate::line::IncusLine) -> Response<envelope::Body> {
    let mut body = b"Bad Request\n".to_vec();
    body.extend(ApiError::internal("websocket: the client is not using the websocket protocol: 'upgrade' token not found in 'Connection' header").body_bytes(line));
    let mut resp = Response::new(envelope::full(body));
    *resp.status_mut() = StatusCode::BAD_REQUEST;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}
