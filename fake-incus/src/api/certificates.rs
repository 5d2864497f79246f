//! `POST /1.0/certificates` with `token: true` (a pending trust token) and the token operations
//! it shares with cluster-join tokens (`POST /1.0/cluster/members`, in [`super::cluster`]).
//!
//! As Incus 6.0.4 makes them (`cmd/incusd/certificates.go`, `cmd/incusd/api_cluster.go`): an
//! operation of class `token` in project `default` (whatever `project` the request names),
//! described `Executing operation`, running until it is used or cancelled (`may_cancel: true`;
//! `DELETE /1.0/operations/{id}` is `incus config trust revoke-token`), whose metadata holds the
//! token's `secret` (64 hex characters), the server certificate's `fingerprint` and the
//! `addresses` a client joins through. Only issuing tokens is served here; adding a certificate
//! directly is not (501).

use super::{only, parse_body, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::operations::OpSpec;
use http::Method;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::time::Duration;

/// The project every token operation belongs to.
const TOKEN_PROJECT: &str = "default";

/// `api.CertificatesPost`, echoed as the trust token's `metadata.request`.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(default)]
struct CertificatesPost {
    certificate: String,
    description: String,
    name: String,
    projects: Vec<String>,
    restricted: bool,
    token: bool,
    trust_token: String,
    #[serde(rename = "type")]
    kind: String,
}

/// `/1.0/certificates`.
pub(super) fn route(ctx: &Ctx, method: &Method, rest: &[&str], body: &[u8]) -> ApiResult {
    match rest {
        [] => {
            only(method, Method::POST)?;
            let req: CertificatesPost = parse_body(body)?;
            if !req.token {
                return Err(ApiError::not_implemented());
            }
            trust_token(ctx, req)
        }
        _ => Err(ApiError::not_implemented()),
    }
}

/// A pending trust token for a client certificate.
fn trust_token(ctx: &Ctx, mut req: CertificatesPost) -> ApiResult {
    if !req.certificate.is_empty() {
        return Err(ApiError::bad_request(
            "Can't use certificate if token is requested",
        ));
    }
    if req.kind != "client" {
        return Err(ApiError::bad_request(
            "Tokens can only be issued for client certificates",
        ));
    }
    let Some(address) = listen_address(ctx) else {
        return Err(ApiError::bad_request(
            "Can't issue token when server isn't listening on network",
        ));
    };
    req.token = true;
    let metadata = json!({
        "secret": secret(),
        "fingerprint": ctx.app.identity.server_fingerprint,
        "addresses": [address],
        "request": req,
    });
    Ok(token_operation(ctx, BTreeMap::new(), metadata))
}

/// Where the server listens on the network: its HTTPS listener, else the `core.https_address` of
/// its configuration.
fn listen_address(ctx: &Ctx) -> Option<String> {
    ctx.app.settings.https_address.clone().or_else(|| {
        ctx.app
            .snapshot()
            .state
            .server_config
            .get("core.https_address")
            .filter(|address| !address.is_empty())
            .cloned()
    })
}

/// A cluster-join token for a member to be (`POST /1.0/cluster/members`): `addresses` are the
/// online members' addresses; it expires after `cluster.join_token_expiry` (3 hours).
pub(super) fn join_token(ctx: &Ctx, server_name: &str, addresses: Vec<String>) -> ApiResult {
    let expires_at = time::OffsetDateTime::now_utc() + Duration::from_secs(3 * 3600);
    let expires_at = expires_at
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default();
    let metadata = json!({
        "serverName": server_name,
        "secret": secret(),
        "fingerprint": ctx.app.identity.server_fingerprint,
        "addresses": addresses,
        "expiresAt": expires_at,
    });
    let resources = BTreeMap::from([("cluster".to_owned(), Vec::new())]);
    Ok(token_operation(ctx, resources, metadata))
}

/// Registers a running token operation and answers 202 with it.
fn token_operation(
    ctx: &Ctx,
    resources: BTreeMap<String, Vec<String>>,
    metadata: Value,
) -> http::Response<envelope::Body> {
    let spec = OpSpec {
        project: TOKEN_PROJECT.into(),
        class: "token",
        description: "Executing operation",
        resources,
        metadata,
        may_cancel: true,
        duration: Duration::ZERO,
    };
    let (_, operation) = ctx.app.create_operation(spec, None, ctx.location());
    ctx.applied();
    envelope::operation_created(operation)
}

/// 32 random bytes as 64 lowercase hex characters, as `internalUtil.RandomHexString(32)`.
pub(super) fn secret() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}
