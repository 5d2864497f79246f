//! The Incus API as a function from request to response.
//!
//! [`serve`] is the whole application: it journals the request, applies the fault rules, checks
//! trust, routes by the route table ([`routes`], read by [`router`]) to the resource modules and
//! journals the answer. Listeners only move bytes.

mod backups;
mod bitmaps;
mod body;
mod buckets;
mod certificates;
mod cluster;
mod cluster_enable;
mod cluster_groups;
mod console;
mod context;
mod debug_repair;
mod evacuation;
mod events;
mod exec;
mod files;
mod filter;
mod host;
mod image_archive;
mod image_upload;
mod images;
mod instance_move;
mod instances;
mod journaling;
mod logs;
mod metadata;
mod migration;
mod nbd;
mod network_address_sets;
mod network_objects;
mod networks;
mod operations;
mod power;
mod profiles;
mod projects;
mod rebuild;
mod refusals;
pub(crate) mod resource;
mod resources;
mod router;
pub(crate) mod routes;
mod server;
mod sftp;
mod snapshots;
mod storage;
mod validation;
mod volume_backups;
mod volume_files;
mod volume_rebuild;
mod volume_snapshots;
mod volumes;
mod warnings;

pub(crate) use crate::faults::transport::Outcome;
pub(crate) use body::{null_default, parse_body, RenameBody};
pub(crate) use context::{Ctx, Peer};
pub(crate) use journaling::is_upgrade;

use crate::app::App;
use crate::envelope::{ApiError, ApiResult};
use crate::journal::Listener;
use bytes::Bytes;
use http::{Method, Request};
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
    let path = req.uri().path();
    let plan = app
        .faults
        .verdict(req.method().as_str(), path)
        .unwrap_or_default();
    if !plan.kinds.is_empty() {
        tracing::debug!(seq, %path, faults = ?plan.kinds, "faults selected");
        app.journal.set_faults(seq, &plan.kinds);
    }
    if let Some(outcome) = plan
        .transport
        .before(&app.journal, seq, &app.shutdown, app.settings.line)
        .await
    {
        return outcome;
    }
    let query = context::Query::parse(req.uri().query());
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
    .unwrap_or_else(|err| err.into_response(app.settings.line));
    // With --state-dir, nothing is answered before what it reports is on disk.
    let response = match app.durable().await {
        Ok(()) => response,
        Err(message) => ApiError::internal(message).into_response(app.settings.line),
    };
    plan.transport.after(&app.journal, seq, response).await
}

/// Routes a request by the route table ([`routes`]), after what is checked of every request
/// to the API: trust (an untrusted client may only redeem a trust token, `POST
/// /1.0/certificates`) and a restricted certificate's projects.
async fn route(ctx: &Ctx, req: Request<Bytes>) -> ApiResult {
    let call = router::Call::new(req);
    if call.first() == Some("1.0") {
        let method = call.method();
        let redeeming =
            call.len() == 2 && call.segment(1) == "certificates" && method == Method::POST;
        if !ctx.trusted && call.len() > 1 && !redeeming {
            return Err(ApiError::forbidden());
        }
        certificates::check_restrictions(ctx, method, || call.below_1_0())?;
    }
    router::dispatch(ctx, routes::table(), call).await
}

pub(crate) use routes::endpoints;

/// The declared resources as Markdown (API.md's part on them).
pub(crate) fn declared_markdown() -> String {
    let mut out = format!("### `/1.0` (the server)\n\n{}\n\n", host::SERVER_DOES);
    out.push_str(&resource::doc::markdown());
    out
}

/// Every declared resource (see [`resource`]).
fn declared() -> &'static [&'static dyn resource::Resource] {
    static DECLARED: &[&dyn resource::Resource] = &[
        &projects::Projects,
        &profiles::Profiles,
        &networks::Networks,
        &storage::Pools,
        &volumes::VOLUMES,
        &buckets::BUCKETS,
        &buckets::BUCKET_KEYS,
        &network_objects::ACLS,
        &network_objects::FORWARDS,
        &network_objects::BALANCERS,
        &network_objects::PEERS,
        &network_objects::ZONES,
        &network_objects::RECORDS,
        &network_objects::INTEGRATIONS,
        &network_address_sets::ADDRESS_SETS,
        &certificates::Certificates,
        &warnings::WARNINGS,
    ];
    DECLARED
}

/// The 404 of a missing instance snapshot (or of its instance, on snapshot endpoints).
pub(crate) fn snapshot_not_found(instance: &str, snap: &str, project: &str) -> ApiError {
    ApiError::new(
        404,
        format!("Failed to fetch snapshot \"{snap}\" of instance \"{instance}\" in project \"{project}\": Instance_snapshot not found"),
    )
}

/// The 404 of a storage pool that does not exist (the pool's own endpoints give it too).
pub(crate) fn pool_not_found() -> ApiError {
    ApiError::new(404, "Storage pool not found")
}

/// The 404 every per-instance endpoint gives.
pub(crate) fn instance_not_found(name: &str, project: &str) -> ApiError {
    ApiError::new(
        404,
        format!("Failed to fetch instance \"{name}\" in project \"{project}\": Instance not found"),
    )
}

/// The instance, or [`instance_not_found`].
pub(crate) fn found_instance<'s>(
    state: &'s crate::state::State,
    project: &str,
    name: &str,
) -> Result<&'s crate::state::Instance, ApiError> {
    state
        .instance(project, name)
        .ok_or_else(|| instance_not_found(name, project))
}

/// The instance to change, or [`instance_not_found`].
pub(crate) fn found_instance_mut<'s>(
    state: &'s mut crate::state::State,
    project: &str,
    name: &str,
) -> Result<&'s mut crate::state::Instance, ApiError> {
    state
        .instance_mut(project, name)
        .ok_or_else(|| instance_not_found(name, project))
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
