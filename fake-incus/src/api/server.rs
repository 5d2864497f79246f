//! `GET /1.0`: the server object, trusted and untrusted forms.

use super::{only, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::journal::Listener;
use crate::state::etag;
use http::Method;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::sync::OnceLock;

/// The API extensions of Incus 6.0.4, in the daemon's order.
fn api_extensions() -> &'static [String] {
    static EXTENSIONS: OnceLock<Vec<String>> = OnceLock::new();
    EXTENSIONS.get_or_init(|| {
        serde_json::from_str(include_str!("../../data/api-extensions.json")).unwrap_or_default()
    })
}

/// The trusted server object, in the daemon's key order. Discovery asks for it before every
/// operation, so it is serialized straight to bytes rather than built as a `Value`.
#[derive(Serialize)]
struct TrustedServer<'a> {
    config: &'a BTreeMap<String, String>,
    api_extensions: &'static [String],
    api_status: &'static str,
    api_version: &'static str,
    auth: &'static str,
    public: bool,
    auth_methods: [&'static str; 1],
    auth_user_name: String,
    auth_user_method: &'static str,
    environment: Value,
}

pub(super) fn route(ctx: &Ctx, method: &Method) -> ApiResult {
    only(method, Method::GET)?;
    if ctx.param("target").is_some_and(|t| !t.is_empty()) {
        return Err(ApiError::new(404, "Cluster member not found"));
    }
    let config = ctx.app.state().server_config.clone();
    if !ctx.trusted {
        let ui: serde_json::Map<String, Value> = config
            .iter()
            .filter(|(k, _)| k.starts_with("user.ui."))
            .map(|(k, v)| (k.clone(), json!(v)))
            .collect();
        return Ok(envelope::sync(json!({
            "config": ui, "api_extensions": api_extensions(), "api_status": "stable",
            "api_version": "1.0", "auth": "untrusted", "public": false, "auth_methods": ["tls"],
        })));
    }
    let (user, method_name) = match (&ctx.peer.listener, &ctx.peer.fingerprint) {
        (Listener::Https, Some(fp)) => (fp.clone(), "tls"),
        _ => ("root".to_string(), "unix"),
    };
    let identity = &ctx.app.identity;
    let metadata = TrustedServer {
        config: &config,
        api_extensions: api_extensions(),
        api_status: "stable",
        api_version: "1.0",
        auth: "trusted",
        public: false,
        auth_methods: ["tls"],
        auth_user_name: user,
        auth_user_method: method_name,
        environment: environment(ctx, &identity.server_cert_pem, &identity.server_fingerprint),
    };
    Ok(envelope::sync_serialized_etag(
        &metadata,
        &etag::hash(&config),
    ))
}

fn environment(ctx: &Ctx, cert: &str, fingerprint: &str) -> Value {
    let addresses: Vec<String> = ctx.app.settings.https_address.iter().cloned().collect();
    json!({
        "addresses": addresses, "architectures": ["x86_64", "i686"], "certificate": cert,
        "certificate_fingerprint": fingerprint, "driver": "lxc", "driver_version": "5.0.2",
        "firewall": "nftables", "kernel": "Linux", "kernel_architecture": "x86_64",
        "kernel_features": {"idmapped_mounts": "true", "netnsid_getifaddrs": "false",
            "seccomp_listener": "true", "seccomp_listener_continue": "true",
            "uevent_injection": "true", "unpriv_binfmt": "true", "unpriv_fscaps": "true"},
        "kernel_version": "6.1.0", "lxc_features": {"cgroup2": "true", "devpts_fd": "true", "pidfd": "true"},
        "os_name": "Debian GNU/Linux", "os_version": "12", "project": ctx.project(),
        "server": "incus", "server_clustered": false, "server_event_mode": "full-mesh",
        "server_name": "fake-incus", "server_pid": std::process::id(), "server_version": "6.0.4",
        "storage": "dir", "storage_version": "1",
        "storage_supported_drivers": [{"Name": "dir", "Version": "1", "Remote": false}],
    })
}
