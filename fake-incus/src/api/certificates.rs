//! `/1.0/certificates`, declared: the trust store's list, get, add, update and delete, and
//! `POST /1.0/certificates` with `token: true` (a pending trust token), whose token operations
//! it shares with cluster-join tokens (`POST /1.0/cluster/members`, in [`super::cluster`]).
//!
//! A certificate added here is trusted by the HTTPS listener from then on; a deleted one no
//! longer is (for new requests). Tokens are as Incus 6.0.4 makes them
//! (`cmd/incusd/certificates.go`, `cmd/incusd/api_cluster.go`): an operation of class `token` in
//! project `default` (whatever `project` the request names), described `Executing operation`,
//! running until it is used or cancelled (`may_cancel: true`; `DELETE /1.0/operations/{id}` is
//! `incus config trust revoke-token`), whose metadata holds the token's `secret` (64 hex
//! characters), the server certificate's `fingerprint` and the `addresses` a client joins
//! through.

use super::resource::{At, Decl, Objects, Resource};
use super::{parse_body, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::operations::OpSpec;
use crate::state::State;
use base64::Engine;
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
    #[serde(deserialize_with = "super::null_default")]
    certificate: String,
    #[serde(deserialize_with = "super::null_default")]
    description: String,
    #[serde(deserialize_with = "super::null_default")]
    name: String,
    #[serde(deserialize_with = "super::null_default")]
    projects: Vec<String>,
    #[serde(deserialize_with = "super::null_default")]
    restricted: bool,
    #[serde(deserialize_with = "super::null_default")]
    token: bool,
    #[serde(deserialize_with = "super::null_default")]
    trust_token: String,
    #[serde(rename = "type", deserialize_with = "super::null_default")]
    kind: String,
}

pub(super) struct Certificates;

static DECL: Decl = Decl {
    collection: "/1.0/certificates",
    key: "fingerprint",
    writable: &["name", "type", "restricted", "projects", "description"],
    not_found: "Certificate not found",
    exists: (409, "Certificate already in trust store"),
    limits: "A restricted certificate reaches only its projects (and reads server-level objects and `default`'s inherited ones), as the daemon's TLS authorizer decides, and lists only its projects in `/1.0/projects` (all-projects lists are refused for it). Certificates the fake was started with are trusted but not listed.",
    store: &Objects {
        kind: "certificate",
        key: "fingerprint",
    },
    ..Decl::DEFAULTS
};

/// The certificate of a request: base64 DER, as the daemon takes it.
fn decode(certificate: &str) -> Result<(String, String), ApiError> {
    let der = base64::engine::general_purpose::STANDARD
        .decode(certificate)
        .map_err(|e| ApiError::bad_request(crate::go::encoding_base64::corrupt_input_error(&e)))?;
    x509_parser::parse_x509_certificate(&der)
        .map_err(|e| ApiError::bad_request(format!("Invalid certificate material: {e}")))?;
    Ok((crate::tls::fingerprint_der(&der), pem(&der)))
}

/// A DER certificate as PEM.
fn pem(der: &[u8]) -> String {
    let base64 = base64::engine::general_purpose::STANDARD.encode(der);
    let lines: Vec<&str> = base64
        .as_bytes()
        .chunks(64)
        .filter_map(|c| std::str::from_utf8(c).ok())
        .collect();
    format!(
        "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
        lines.join("\n")
    )
}

impl Resource for Certificates {
    fn decl(&self) -> &Decl {
        &DECL
    }
    fn template(&self) -> Value {
        json!({"name": "", "type": "client", "restricted": false, "projects": [],
            "certificate": "", "fingerprint": "", "description": ""})
    }
    /// `token: true` makes a trust token instead; no certificate at all is the caller's own,
    /// already trusted on the Unix socket.
    fn intercept_create(&self, ctx: &Ctx, _: &At, body: &[u8]) -> Option<ApiResult> {
        let req: CertificatesPost = match parse_body(body) {
            Ok(req) => req,
            Err(e) => return Some(Err(e)),
        };
        if !ctx.trusted {
            return Some(redeem(ctx, &req));
        }
        if req.token {
            return Some(trust_token(ctx, req));
        }
        if req.certificate.is_empty() {
            return Some(Err(ApiError::bad_request("Client is already trusted")));
        }
        None
    }
    fn prepare(&self, _: &State, _: &At, object: &mut Value) -> Result<(), ApiError> {
        if !["client", "metrics"].contains(&object["type"].as_str().unwrap_or_default()) {
            return Err(ApiError::bad_request(format!(
                "Unknown certificate type {}",
                object["type"]
            )));
        }
        let (fingerprint, pem) = decode(object["certificate"].as_str().unwrap_or_default())?;
        object["fingerprint"] = json!(fingerprint);
        object["certificate"] = json!(pem);
        Ok(())
    }
    fn check_key(&self, _: &str, _: &At) -> Result<(), ApiError> {
        Ok(())
    }
    fn by_prefix(&self) -> bool {
        true
    }
    fn created(&self, ctx: &Ctx, _: &mut State, _: &At, object: &Value) {
        if let Some(fingerprint) = object["fingerprint"].as_str() {
            ctx.app
                .identity
                .trusted
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(fingerprint.to_owned());
        }
    }
    fn deleted(&self, ctx: &Ctx, _: &mut State, _: &At, key: &str) {
        ctx.app
            .identity
            .trusted
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(key);
    }
}

/// What a restricted certificate may not do (`internal/server/auth/driver_tls.go`): an HTTPS
/// peer whose certificate is in the trust store with `restricted: true` may only read
/// server-level objects, may not use `all-projects`, may not change projects, and reaches
/// project-level objects only in its `projects` (and read `default`'s inherited images,
/// profiles, volumes, buckets, networks and zones). Everyone else passes.
/// The projects a restricted certificate may use, when the caller presents one over HTTPS
/// (`None`: not restricted).
pub(super) fn restricted_to(ctx: &Ctx) -> Option<Vec<String>> {
    let fingerprint = ctx.peer.fingerprint.as_deref().filter(|_| ctx.trusted)?;
    let snapshot = ctx.app.snapshot();
    let at = At {
        project: String::new(),
        parent: String::new(),
        line: ctx.app.settings.line,
    };
    let certificate = DECL
        .store
        .list(&snapshot.state, &at)
        .into_iter()
        .find(|c| c["fingerprint"].as_str() == Some(fingerprint))?;
    if certificate["restricted"] != json!(true) {
        return None;
    }
    let projects = certificate["projects"].as_array().into_iter().flatten();
    Some(
        projects
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
    )
}

pub(super) fn check_restrictions<'a>(
    ctx: &Ctx,
    method: &http::Method,
    segs: impl FnOnce() -> Vec<&'a str>,
) -> Result<(), ApiError> {
    let Some(projects) = restricted_to(ctx) else {
        return Ok(());
    };
    let segs = &segs()[..];
    let restricted = || Err(ApiError::new(403, "Certificate is restricted"));
    if ctx.all_projects() {
        return restricted();
    }
    let reading = *method == http::Method::GET;
    let server_level = match segs {
        []
        | ["cluster", ..]
        | ["warnings", ..]
        | ["resources"]
        | ["metrics"]
        | ["metadata", ..]
        | ["certificates", ..]
        | ["network-integrations", ..] => true,
        ["storage-pools"] | ["storage-pools", _] | ["storage-pools", _, "resources"] => true,
        ["projects"] => !reading,
        ["projects", ..] if !reading => true,
        _ => false,
    };
    if server_level {
        return if reading { Ok(()) } else { restricted() };
    }
    let project = match segs {
        ["projects", name, ..] => (*name).to_owned(),
        ["projects"] => return Ok(()),
        _ => ctx.project(),
    };
    let allowed = projects.contains(&project);
    let inherited = matches!(
        segs.first(),
        Some(&("images" | "profiles" | "storage-pools" | "networks" | "network-zones"))
    );
    if allowed || (project == "default" && reading && inherited) {
        return Ok(());
    }
    Err(ApiError::new(
        403,
        format!("User does not have permission for project {project:?}"),
    ))
}

/// `api.CertificateAddToken` and `api.ClusterMemberJoinToken`: what a token encodes (base64
/// JSON) besides what its operation holds.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Token {
    client_name: String,
    server_name: String,
    secret: String,
}

/// An untrusted client redeems a trust token (`incus remote add NAME TOKEN`): the running
/// token operation whose secret it carries is used up (cancelled), and the client's certificate
/// is trusted, named and restricted as the token's request said.
fn redeem(ctx: &Ctx, req: &CertificatesPost) -> ApiResult {
    let Some(fingerprint) = ctx.peer.fingerprint.clone() else {
        return Err(ApiError::forbidden());
    };
    if req.token || req.trust_token.is_empty() {
        return Err(ApiError::forbidden());
    }
    let token: Token = base64::engine::general_purpose::STANDARD
        .decode(req.trust_token.trim())
        .ok()
        .and_then(|json| serde_json::from_slice(&json).ok())
        .unwrap_or_default();
    if !token.server_name.is_empty() {
        return Err(ApiError::new(
            403,
            "No matching cluster join operation found",
        ));
    }
    let found = ctx.app.operations.ops().list.iter().find_map(|op| {
        let running = !op.status.is_final() && op.spec.class == "token";
        let matches = !token.secret.is_empty() && op.metadata["secret"] == json!(token.secret);
        (running && matches && op.metadata.get("request").is_some())
            .then(|| (op.id.clone(), op.metadata["request"].clone()))
    });
    let Some((id, request)) = found else {
        return Err(ApiError::new(
            403,
            "No matching certificate add operation found",
        ));
    };
    let name = request["name"]
        .as_str()
        .filter(|n| !n.is_empty())
        .unwrap_or(&token.client_name);
    let certificate = ctx
        .app
        .identity
        .presented_certificate(&fingerprint)
        .map(|der| pem(&der))
        .unwrap_or_default();
    let object = json!({
        "name": name, "type": request["type"], "restricted": request["restricted"],
        "projects": request["projects"], "certificate": certificate, "fingerprint": fingerprint,
        "description": request["description"],
    });
    let at = At {
        project: String::new(),
        parent: String::new(),
        line: ctx.app.settings.line,
    };
    let mut state = ctx.app.state();
    if DECL
        .store
        .list(&state, &at)
        .iter()
        .any(|c| c["fingerprint"] == json!(fingerprint))
    {
        return Err(ApiError::new(409, "Certificate already in trust store"));
    }
    DECL.store.insert(&mut state, &at, object.clone())?;
    Certificates.created(ctx, &mut state, &at, &object);
    drop(state);
    // The token is used up; the daemon cancels its operation.
    let _ = ctx.app.operations.cancel_operation(&id);
    ctx.applied();
    super::resource::created(&format!("/1.0/certificates/{fingerprint}"))
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
    let (_, operation) = ctx
        .app
        .operations
        .create_operation(spec, None, ctx.location());
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
