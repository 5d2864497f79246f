//! Endpoints the fake answers only as the daemon does when it cannot or will not do the work,
//! each checked on a real Incus 6.0.4 (standalone, `dir` pool, Unix socket):
//!
//! - `GET /1.0/instances/{name}/access`: who may reach the instance. A standalone daemon with no
//!   external authorizer answers `null` (sync), whatever the name.
//! - `GET /1.0/instances/{name}/debug/memory`: the instance's 404, then `400 Memory dumps are
//!   only supported for virtual machines` for a container and `400 Instance must be running to
//!   dump memory` for a stopped VM. A running VM's dump (QEMU's guest memory) is not done: the
//!   fake has none to give (`501`).
//! - `POST /1.0/images/{fingerprint}/export` (push to another server): the image's 404, then the
//!   daemon's error for the target it could not reach. The fake makes no connection: every
//!   target answers as one that refuses it (`Get "{target}/1.0": Unable to connect to: ...
//!   connection refused`), a missing or relative target gets the Go client's URL errors.
//! - `PUT /1.0/cluster/certificate` on a standalone fake: the certificate and key must be PEM
//!   (`400`), then the daemon finds no cluster certificate to replace (`404`).

use super::{instance_not_found, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::instances::PowerState;
use serde::Deserialize;
use serde_json::Value;

/// `GET /1.0/instances/{name}/access`.
pub(super) fn access() -> ApiResult {
    Ok(envelope::sync(Value::Null))
}

/// `GET /1.0/instances/{name}/debug/memory`.
pub(super) fn debug_memory(ctx: &Ctx, name: &str) -> ApiResult {
    let project = ctx.project();
    let (kind, status) = {
        let state = ctx.app.state();
        let instance = state
            .instance(&project, name)
            .ok_or_else(|| instance_not_found(name, &project))?;
        (instance.kind.clone(), instance.status)
    };
    if kind != "virtual-machine" {
        return Err(ApiError::bad_request(
            "Memory dumps are only supported for virtual machines",
        ));
    }
    if status == PowerState::Stopped {
        return Err(ApiError::bad_request(
            "Instance must be running to dump memory",
        ));
    }
    Err(ApiError::not_implemented())
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PushBody {
    target: String,
}

/// `POST /1.0/images/{fingerprint}/export`: a push the fake never makes (see the module doc).
/// Like the daemon, a body that is not JSON is taken as one with no target.
pub(super) fn image_push(ctx: &Ctx, fingerprint: &str, body: &[u8]) -> ApiResult {
    super::images::found(&ctx.app.state(), &ctx.project(), fingerprint)?;
    let target = serde_json::from_slice::<PushBody>(body)
        .unwrap_or_default()
        .target;
    Err(ApiError::internal(unreachable_target(&target)))
}

/// The Go client's error for `GET {target}/1.0` when nothing answers there.
fn unreachable_target(target: &str) -> String {
    let Some((scheme, rest)) = target.split_once("://") else {
        let first = target.split('/').next().unwrap_or_default();
        if first.contains(':') {
            return format!("parse \"{target}\": first path segment in URL cannot contain colon");
        }
        return format!("Get \"{target}/1.0\": unsupported protocol scheme \"\"");
    };
    let default_port = match scheme {
        "https" => "443",
        "http" => "80",
        _ => return format!("Get \"{target}/1.0\": unsupported protocol scheme \"{scheme}\""),
    };
    let authority = rest.split('/').next().unwrap_or_default();
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let has_port = match host.rfind(']') {
        Some(end) => host[end..].contains(':'),
        None => host.contains(':'),
    };
    let address = if has_port {
        host.to_string()
    } else {
        format!("{host}:{default_port}")
    };
    format!(
        "Get \"{target}/1.0\": Unable to connect to: {address} ([dial tcp {address}: connect: connection refused])"
    )
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CertificateBody {
    cluster_certificate: String,
    cluster_certificate_key: String,
}

/// Whether the text holds a PEM block (`-----BEGIN x-----`, base64, `-----END x-----`), which
/// is all the daemon checks before it looks for the certificate to replace.
fn is_pem(text: &str) -> bool {
    use base64::Engine;
    let Some(start) = text.find("-----BEGIN ") else {
        return false;
    };
    let after = &text[start..];
    let Some(header_end) = after.find('\n') else {
        return false;
    };
    let Some(end) = after.find("-----END ") else {
        return false;
    };
    if end < header_end || !after[..header_end].trim_end().ends_with("-----") {
        return false;
    }
    let body: String = after[header_end..end]
        .lines()
        .filter(|l| !l.contains(':'))
        .collect::<String>()
        .split_whitespace()
        .collect();
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .is_ok()
}

/// `PUT /1.0/cluster/certificate` on a standalone fake.
pub(super) fn cluster_certificate(body: &[u8]) -> ApiResult {
    let req: CertificateBody = super::parse_body(body)?;
    if !is_pem(&req.cluster_certificate) {
        return Err(ApiError::bad_request(
            "Certificate must be base64 encoded PEM certificate: %!w(<nil>)",
        ));
    }
    if !is_pem(&req.cluster_certificate_key) {
        return Err(ApiError::bad_request(
            "Private key must be base64 encoded PEM key: %!w(<nil>)",
        ));
    }
    Err(ApiError::new(
        404,
        "open /var/lib/incus/cluster.crt: no such file or directory",
    ))
}
