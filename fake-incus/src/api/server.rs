//! `GET /1.0`: the server object, trusted and untrusted forms.

use super::Ctx;
use crate::envelope::{self, ApiError, ApiResult};
use crate::journal::Listener;
use crate::state::etag;
use crate::state::snapshot::{Derived, Prebuilt};
use bytes::Bytes;
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// The API extensions of the Incus line the fake answers as, in the daemon's order.
fn api_extensions(ctx: &Ctx) -> &'static [&'static str] {
    ctx.app.settings.line.api_extensions()
}

/// The trusted server object, in the daemon's key order. Discovery asks for it before every
/// operation, so it is serialized straight to bytes rather than built as a `Value`.
#[derive(Serialize)]
struct TrustedServer<'a> {
    config: &'a BTreeMap<String, String>,
    api_extensions: &'static [&'static str],
    api_status: &'static str,
    api_version: &'static str,
    auth: &'static str,
    public: bool,
    auth_methods: [&'static str; 1],
    auth_user_name: String,
    auth_user_method: &'static str,
    environment: Value,
}

/// Indexes of [`crate::state::snapshot::Derived::parts`]: the untrusted answer whole, then the
/// trusted answer cut around its three per-request values (user name, user method, project).
const UNTRUSTED: usize = 0;
const BEFORE_USER: usize = 1;
const BEFORE_METHOD: usize = 2;
const BEFORE_PROJECT: usize = 3;
const AFTER_PROJECT: usize = 4;

pub(super) fn get(ctx: &Ctx) -> ApiResult {
    if let Some(cluster) = ctx.app.cluster().filter(|_| ctx.trusted) {
        let member = match ctx.param("target").filter(|t| !t.is_empty()) {
            Some(target) => cluster
                .member(target)
                .ok_or_else(|| ApiError::new(404, "Cluster member not found"))?,
            None => super::cluster::this_member(ctx, cluster),
        };
        return super::cluster::server_view(ctx, member, trusted_object(ctx));
    }
    if ctx.param("target").is_some_and(|t| !t.is_empty()) {
        return Err(ApiError::new(404, "Cluster member not found"));
    }
    let snapshot = ctx.app.snapshot();
    let parts = || snapshot.derived(|state| rendered_parts(ctx, &state.server_config));
    // Discovery asks for this object before every operation: the whole answer is kept per
    // snapshot and per caller (user, method, project), so a request costs a lookup.
    let answer = if ctx.trusted {
        let (user, method_name) = user(ctx);
        let project = ctx.project_name();
        snapshot.answer(&[user, method_name, project], || {
            trusted_answer(parts(), user, method_name, project)
        })
    } else {
        snapshot.answer(&[UNTRUSTED_KEY], || Prebuilt {
            body: envelope::sync_body(&[parts().parts[UNTRUSTED].as_ref()]),
            etag: None,
        })
    };
    Ok(envelope::sync_prebuilt(answer.body, answer.etag))
}

/// The cache key of the untrusted answer (trusted keys have three parts).
const UNTRUSTED_KEY: &str = "untrusted";

/// The trusted answer: the cached pieces around the three per-request values.
fn trusted_answer(parts: &Derived, user: &str, method_name: &str, project: &str) -> Prebuilt {
    let user = serde_json::to_vec(user).unwrap_or_default();
    let method_name = serde_json::to_vec(method_name).unwrap_or_default();
    let project = serde_json::to_vec(project).unwrap_or_default();
    Prebuilt {
        body: envelope::sync_body(&[
            parts.parts[BEFORE_USER].as_ref(),
            &user,
            parts.parts[BEFORE_METHOD].as_ref(),
            &method_name,
            parts.parts[BEFORE_PROJECT].as_ref(),
            &project,
            parts.parts[AFTER_PROJECT].as_ref(),
        ]),
        etag: envelope::etag_header(&parts.etag),
    }
}

/// The trusted server object as a value (a cluster member patches its own view into it).
fn trusted_object(ctx: &Ctx) -> Value {
    let config = ctx.app.snapshot().state.server_config.clone();
    let (user, method) = user(ctx);
    let object = TrustedServer {
        config: &config,
        api_extensions: api_extensions(ctx),
        api_status: "stable",
        api_version: "1.0",
        auth: "trusted",
        public: false,
        auth_methods: ["tls"],
        auth_user_name: user.to_string(),
        auth_user_method: method,
        environment: environment(ctx, &ctx.project()),
    };
    serde_json::to_value(&object).unwrap_or_default()
}

/// The user name and authentication method of the caller.
fn user(ctx: &Ctx) -> (&str, &'static str) {
    match (&ctx.peer.listener, &ctx.peer.fingerprint) {
        (Listener::Https, Some(fp)) => (fp.as_str(), "tls"),
        _ => ("root", "unix"),
    }
}

/// The untrusted object, and the trusted one as the JSON text between its per-request values.
/// Each piece is cut from the object's own serialization, so the assembled answer is exactly
/// what serializing the object for that request writes.
fn rendered_parts(ctx: &Ctx, config: &BTreeMap<String, String>) -> Derived {
    let ui: serde_json::Map<String, Value> = config
        .iter()
        .filter(|(k, _)| k.starts_with("user.ui."))
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    let untrusted = json!({
        "config": ui, "api_extensions": api_extensions(ctx), "api_status": "stable",
        "api_version": "1.0", "auth": "untrusted", "public": false, "auth_methods": ["tls"],
    });
    // `auth_user_name` and `auth_user_method` are the last fields before `environment`, and
    // `project` splits the environment: serialize the fields around them and join.
    let mut environment = environment(ctx, "");
    let map = environment
        .as_object_mut()
        .map(std::mem::take)
        .unwrap_or_default();
    let mut before = serde_json::Map::new();
    let mut after = serde_json::Map::new();
    let mut seen_project = false;
    for (key, value) in map {
        if key == "project" {
            seen_project = true;
        } else if seen_project {
            after.insert(key, value);
        } else {
            before.insert(key, value);
        }
    }
    let head = TrustedServer {
        config,
        api_extensions: api_extensions(ctx),
        api_status: "stable",
        api_version: "1.0",
        auth: "trusted",
        public: false,
        auth_methods: ["tls"],
        auth_user_name: String::new(),
        auth_user_method: "",
        environment: Value::Null,
    };
    let head = serde_json::to_string(&head).unwrap_or_default();
    let marker = r#""auth_user_name":"","auth_user_method":"","environment":null}"#;
    let head = head.strip_suffix(marker).unwrap_or(&head);
    let before = serde_json::to_string(&before).unwrap_or_default();
    let before = before.strip_suffix('}').unwrap_or(&before);
    let before_project = if before.len() > 1 {
        format!("{before},\"project\":")
    } else {
        "{\"project\":".to_string()
    };
    let after = serde_json::to_string(&after).unwrap_or_default();
    let after = after.strip_prefix('{').unwrap_or(&after);
    let after_project = if after == "}" {
        "}}".to_string()
    } else {
        format!(",{after}}}")
    };
    Derived {
        parts: vec![
            Bytes::from(serde_json::to_vec(&untrusted).unwrap_or_default()),
            Bytes::from(format!("{head}\"auth_user_name\":")),
            Bytes::from_static(b",\"auth_user_method\":"),
            Bytes::from(format!(",\"environment\":{before_project}")),
            Bytes::from(after_project),
        ],
        etag: etag::hash(config),
    }
}

fn environment(ctx: &Ctx, project: &str) -> Value {
    let identity = &ctx.app.identity;
    let (cert, fingerprint) = (&identity.server_cert_pem, &identity.server_fingerprint);
    let addresses: Vec<String> = ctx.app.settings.https_address.iter().cloned().collect();
    let line = ctx.app.settings.line;
    let features = |pairs: &[(&str, &str)]| -> serde_json::Map<String, Value> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), json!(v)))
            .collect()
    };
    json!({
        "addresses": addresses, "architectures": ["x86_64", "i686"], "certificate": cert,
        "certificate_fingerprint": fingerprint, "driver": "lxc",
        "driver_version": line.driver_version(), "firewall": "nftables", "kernel": "Linux",
        "kernel_architecture": "x86_64", "kernel_features": features(line.kernel_features()),
        "kernel_version": "6.1.0", "lxc_features": features(line.lxc_features()),
        "os_name": "Debian GNU/Linux", "os_version": line.os_version(), "project": project,
        "server": "incus", "server_clustered": false, "server_event_mode": "full-mesh",
        "server_name": "fake-incus", "server_pid": std::process::id(),
        "server_version": line.server_version(),
        "storage": "dir", "storage_version": "1",
        "storage_supported_drivers": [{"Name": "dir", "Version": "1", "Remote": false}],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Peer;
    use crate::app::{App, Identity, Settings};
    use crate::faults::exec::ExecFaults;
    use crate::line::IncusLine;
    use crate::state::State;
    use http_body_util::BodyExt;
    use std::sync::Arc;

    fn ctx(app: &Arc<App>, peer: Peer, trusted: bool, project: &str) -> Ctx {
        Ctx {
            app: Arc::clone(app),
            peer,
            trusted,
            seq: 0,
            operation_fault: None,
            exec_faults: ExecFaults::default(),
            query: crate::api::context::Query::parse(Some(&format!("project={project}"))),
            scope: crate::cluster::Scope::default(),
        }
    }

    /// The answer as it was built before the cached pieces: the whole object, per request (as a
    /// cluster member builds it).
    fn reference(ctx: &Ctx) -> (Value, Vec<u8>) {
        let config = ctx.app.snapshot().state.server_config.clone();
        let metadata = trusted_object(ctx);
        let envelope = json!({
            "type": "sync", "status": "Success", "status_code": 200, "operation": "",
            "error_code": 0, "error": "", "metadata": metadata,
        });
        let mut bytes = serde_json::to_vec(&envelope).unwrap();
        bytes.push(b'\n');
        (json!(etag::hash(&config)), bytes)
    }

    async fn answer(ctx: &Ctx) -> (Value, Vec<u8>) {
        let resp = get(ctx).unwrap();
        let etag = resp
            .headers()
            .get(http::header::ETAG)
            .map(|v| json!(v.to_str().unwrap().trim_matches('"')))
            .unwrap_or(Value::Null);
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        (etag, bytes.to_vec())
    }

    fn default_app() -> Arc<App> {
        App::new(
            State::default_state(),
            Identity::default(),
            Settings::default(),
        )
    }

    fn app_as(line: IncusLine) -> Arc<App> {
        let settings = Settings {
            line,
            ..Settings::default()
        };
        App::new(State::default_state(), Identity::default(), settings)
    }

    fn unix_peer() -> Peer {
        Peer {
            listener: Listener::Unix,
            fingerprint: None,
            member: None,
        }
    }

    #[tokio::test]
    async fn the_server_object_from_cached_pieces_is_byte_for_byte_the_serialized_object() {
        let mut state = State::default_state();
        state
            .server_config
            .insert("user.ui.<&>".into(), "\u{2028}\"x\"".into());
        state
            .server_config
            .insert("core.https_address".into(), "[::]:8443".into());
        let settings = Settings {
            https_address: Some("127.0.0.1:8443".into()),
            ..Settings::default()
        };
        let identity = Identity {
            server_cert_pem: "-----BEGIN CERTIFICATE-----\nAAA\n-----END CERTIFICATE-----\n".into(),
            server_fingerprint: "ab".repeat(32),
            ..Identity::default()
        };
        let app = App::new(state, identity, settings);
        let unix = unix_peer();
        let https = Peer {
            listener: Listener::Https,
            fingerprint: Some("cd".repeat(32)),
            member: None,
        };
        for (peer, project) in [
            (unix.clone(), "default"),
            (unix, "p \"q\" <r>"),
            (https.clone(), ""),
            (https, "other"),
        ] {
            let ctx = ctx(&app, peer, true, project);
            assert_eq!(answer(&ctx).await, reference(&ctx), "project {project:?}");
            // The second answer comes from the snapshot's kept answers.
            assert_eq!(
                answer(&ctx).await,
                reference(&ctx),
                "project {project:?}, kept"
            );
        }
        let untrusted = ctx(
            &app,
            Peer {
                listener: Listener::Https,
                fingerprint: None,
                member: None,
            },
            false,
            "default",
        );
        let (etag, bytes) = answer(&untrusted).await;
        assert_eq!(answer(&untrusted).await, (etag.clone(), bytes.clone()));
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(etag, Value::Null);
        assert_eq!(body["metadata"]["auth"], "untrusted");
        assert_eq!(
            body["metadata"]["config"],
            json!({"user.ui.<&>": "\u{2028}\"x\""})
        );
        assert_eq!(
            body["metadata"]
                .as_object()
                .unwrap()
                .keys()
                .collect::<Vec<_>>(),
            [
                "config",
                "api_extensions",
                "api_status",
                "api_version",
                "auth",
                "public",
                "auth_methods"
            ]
        );
    }

    /// `environment.lxc_features` lists the 14 features of the real 6.0.4 daemon, all available.
    #[tokio::test]
    async fn lxc_features_are_the_fourteen_keys_of_the_real_daemon() {
        let app = app_as(IncusLine::V6_0);
        let unix = unix_peer();
        let (_, bytes) = answer(&ctx(&app, unix, true, "default")).await;
        let body: Value = serde_json::from_slice(&bytes).unwrap();
        let features = body["metadata"]["environment"]["lxc_features"]
            .as_object()
            .expect("lxc_features is an object")
            .clone();
        let keys: Vec<&str> = features.keys().map(String::as_str).collect();
        assert_eq!(
            keys,
            [
                "cgroup2",
                "core_scheduling",
                "devpts_fd",
                "idmapped_mounts_v2",
                "mount_injection_file",
                "network_gateway_device_route",
                "network_ipvlan",
                "network_l2proxy",
                "network_phys_macvlan_mtu",
                "network_veth_router",
                "pidfd",
                "seccomp_allow_deny_syntax",
                "seccomp_notify",
                "seccomp_proxy_send_notify_fd",
            ]
        );
        assert!(features.values().all(|v| v == "true"), "{features:?}");
    }

    #[tokio::test]
    async fn callers_past_the_kept_answers_get_the_same_bytes_and_memory_stays_bounded() {
        let app = default_app();
        let unix = unix_peer();
        let count = crate::state::snapshot::ANSWERS_KEPT + 8;
        for round in 0..2 {
            for i in 0..count {
                let ctx = ctx(&app, unix.clone(), true, &format!("p{i}"));
                assert_eq!(answer(&ctx).await, reference(&ctx), "p{i}, round {round}");
            }
        }
        assert_eq!(
            app.snapshot().answers_kept(),
            crate::state::snapshot::ANSWERS_KEPT
        );
        // A change publishes a new snapshot, whose answers start empty and show the change.
        app.state()
            .server_config
            .insert("user.ui.x".into(), "y".into());
        assert_eq!(app.snapshot().answers_kept(), 0);
        let ctx = ctx(&app, unix, true, "p0");
        let (_, bytes) = answer(&ctx).await;
        assert!(String::from_utf8_lossy(&bytes).contains("user.ui.x"));
        assert_eq!(answer(&ctx).await, reference(&ctx));
    }
}
