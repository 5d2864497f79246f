//! `GET /1.0/events`: a websocket of operation events (text frames of JSON), filtered by
//! `type` and by `project` / `all-projects`. Only operation events are produced; the official
//! client needs them to follow operations.

use super::{is_upgrade, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use bytes::Bytes;
use futures_util::{SinkExt, StreamExt};
use http::Request;
use hyper_util::rt::TokioIo;
use tokio_tungstenite::tungstenite::protocol::Role;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::WebSocketStream;

pub(super) fn serve(ctx: &Ctx, req: &mut Request<Bytes>) -> ApiResult {
    let key = req.headers().get("sec-websocket-key").cloned();
    let Some(key) = key.filter(|_| is_upgrade(req)) else {
        return Err(ApiError::bad_request(
            "websocket: the client is not using the websocket protocol",
        ));
    };
    let wants_operations = ctx
        .param("type")
        .is_none_or(|types| types.is_empty() || types.split(',').any(|t| t == "operation"));
    let project = (!ctx.all_projects()).then(|| ctx.project());
    let mut events = ctx.app.operations.events.subscribe();
    let shutdown = ctx.app.shutdown.clone();
    let app = std::sync::Arc::clone(&ctx.app);
    let on_upgrade = hyper::upgrade::on(req);
    tokio::spawn(async move {
        let Ok(upgraded) = on_upgrade.await else {
            return;
        };
        let ws = WebSocketStream::from_raw_socket(TokioIo::new(upgraded), Role::Server, None).await;
        let (mut sink, mut stream) = ws.split();
        loop {
            tokio::select! {
                event = events.recv() => match event {
                    Ok((event_project, event)) => {
                        // An event of no project reaches every listener (`events.go`).
                        let elsewhere = !event_project.is_empty()
                            && project.as_ref().is_some_and(|p| *p != event_project);
                        if !wants_operations || elsewhere {
                            continue;
                        }
                        // With --state-dir, an event (an operation's success, say) is sent
                        // only once what it reports is on disk, as an HTTP answer is.
                        if app.durable().await.is_err()
                            || sink.send(Message::Text(event.to_string().into())).await.is_err()
                        {
                            break;
                        }
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(_) => break,
                },
                msg = stream.next() => if !matches!(msg, Some(Ok(_))) { break },
                () = shutdown.cancelled() => break,
            }
        }
    });
    Ok(envelope::switching_protocols(&key))
}
