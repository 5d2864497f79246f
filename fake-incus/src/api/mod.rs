//! The Incus API as a function from request to response.
//!
//! [`serve`] is the whole application: it journals the request, applies the fault rules, checks
//! trust, routes to the resource modules and journals the answer. Listeners only move bytes.

mod body;
mod certificates;
mod cluster;
mod context;
mod events;
mod exec;
mod files;
mod filter;
mod image_upload;
mod images;
mod instances;
mod journaling;
mod logs;
mod networks;
mod operations;
mod profiles;
mod projects;
mod server;
mod sftp;
mod snapshots;
mod state;
mod storage;
mod validation;
mod volumes;

pub(crate) use crate::faults::transport::Outcome;
pub(crate) use body::{null_default, parse_body};
pub(crate) use context::{Ctx, Peer};
pub(crate) use journaling::is_upgrade;

use crate::app::App;
use crate::envelope::{self, ApiError, ApiResult};
use crate::journal::Listener;
use bytes::Bytes;
use http::{Method, Request, Response};
use journaling::journal_entry;
use std::sync::Arc;

/// Serves one request end to end.
pub(crate) async fn serve(app: &Arc<App>, req: Request<Bytes>, peer: Peer) -> Outcome {
    let trusted = match (&peer.listener, &peer.fingerprint) {
        (Listener::Https, Some(fp)) => app.identity.is_trusted(fp),
        (Listener::Https, None) => false,
        _ => true,
    };
    let seq = app.journal.record(journal_entry(&req, &peer, trusted));
    let path = req.uri().path().to_string();
    let plan = app
        .faults
        .verdict(req.method().as_str(), &path)
        .unwrap_or_default();
    if !plan.kinds.is_empty() {
        tracing::debug!(seq, %path, faults = ?plan.kinds, "faults selected");
        app.journal.set_faults(seq, &plan.kinds);
    }
    if let Some(outcome) = plan
        .transport
        .before(&app.journal, seq, &app.shutdown)
        .await
    {
        return outcome;
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
    let mut ctx = Ctx {
        app: Arc::clone(app),
        peer,
        trusted,
        seq,
        operation_fault: plan.operation,
        exec_faults: plan.exec,
        query,
        scope: crate::cluster::Scope::default(),
    };
    let response = match app.cluster() {
        Some(cluster) => cluster::serve(&mut ctx, cluster, req).await,
        None => route(&ctx, req).await,
    }
    .unwrap_or_else(Response::from);
    // With --state-dir, nothing is answered before what it reports is on disk.
    let response = match app.durable().await {
        Ok(()) => response,
        Err(message) => Response::from(ApiError::internal(message)),
    };
    plan.transport.after(&app.journal, seq, response).await
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
            Some(&"files") if segs.len() == 4 => {
                files::route(ctx, &method, segs[2], req.headers(), req.body())
            }
            Some(&"sftp") if segs.len() == 4 => sftp::route(ctx, segs[2], req),
            _ => Err(ApiError::not_found()),
        },
        "images" => images::route(ctx, &method, &segs[2..], req.headers(), req.body()).await,
        "networks" => networks::route(ctx, &method, &segs[2..]),
        "profiles" => profiles::route(ctx, &method, &segs[2..], req.headers(), req.body()),
        "projects" => projects::route(ctx, &method, &segs[2..], req.headers(), req.body()),
        "storage-pools" => storage::route(ctx, &method, &segs[2..], req.headers(), req.body()),
        "cluster" => cluster::route(ctx, &method, &segs[2..], req.body()),
        "certificates" => certificates::route(ctx, &method, &segs[2..], req.body()),
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
    use http_body_util::BodyExt;

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
            member: None,
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
