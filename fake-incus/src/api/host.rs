//! The server's own endpoints beside `GET /1.0` ([`super::server`]): its configuration
//! (`PUT`/`PATCH /1.0`, checked against the daemon's key list), `/1.0/resources`,
//! `/1.0/metrics` (Prometheus text counting what the fake holds), `/1.0/metadata/configuration`
//! and `/1.0/network-allocations`.

use super::Ctx;
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::{url, StringMap};
use http::{Method, Response, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// The daemon's configuration metadata (`GET /1.0/metadata/configuration` of Incus 6.0.4).
fn metadata() -> &'static Value {
    static METADATA: OnceLock<Value> = OnceLock::new();
    METADATA.get_or_init(|| {
        serde_json::from_str(include_str!("../../data/metadata-configuration.json"))
            .unwrap_or_default()
    })
}

/// The server config keys of the daemon, with their types.
fn server_keys() -> &'static Vec<(String, String)> {
    static KEYS: OnceLock<Vec<(String, String)>> = OnceLock::new();
    KEYS.get_or_init(|| {
        let mut keys = Vec::new();
        for section in metadata()["configs"]["server"]
            .as_object()
            .into_iter()
            .flatten()
        {
            for entry in section.1["keys"].as_array().into_iter().flatten() {
                for (key, about) in entry.as_object().into_iter().flatten() {
                    let kind = about["type"].as_str().unwrap_or("string").to_owned();
                    keys.push((key.clone(), kind));
                }
            }
        }
        keys
    })
}

/// Whether a server config key may be set to this value (the daemon's texts).
fn check_server_key(key: &str, value: &str) -> Result<(), ApiError> {
    let refuse = |why: &str| {
        Err(ApiError::bad_request(format!(
            "cannot set '{key}' to '{value}': {why}"
        )))
    };
    if key.starts_with("user.") {
        return Ok(());
    }
    let Some((_, kind)) = server_keys().iter().find(|(k, _)| k == key) else {
        return refuse("unknown key");
    };
    match kind.as_str() {
        "bool"
            if !value.is_empty()
                && !["true", "false", "1", "0", "yes", "no", "on", "off"]
                    .contains(&value.to_lowercase().as_str()) =>
        {
            refuse(&format!("Invalid value for a boolean {value:?}"))
        }
        "integer" if !value.is_empty() && value.parse::<i64>().is_err() => {
            refuse(&format!("Invalid value for an integer {value:?}"))
        }
        _ => Ok(()),
    }
}

/// `PUT`/`PATCH /1.0` (Go `api.ServerPut`).
#[derive(Deserialize, Default)]
#[serde(default)]
struct ServerPut {
    #[serde(deserialize_with = "super::null_default")]
    config: StringMap,
}

/// `PUT /1.0` replaces the config (absent keys are unset), `PATCH` merges it; a key set to
/// `""` is unset. Synchronous, `{}`.
pub(super) fn update(ctx: &Ctx, body: &[u8], patch: bool) -> ApiResult {
    let req: ServerPut = parse(body)?;
    let mut state = ctx.app.state();
    let mut config = if patch {
        state.server_config.clone()
    } else {
        StringMap::new()
    };
    for (key, value) in req.config {
        check_server_key(&key, &value)?;
        config.insert(key, value);
    }
    config.retain(|_, v| !v.is_empty());
    state.server_config = config;
    drop(state);
    ctx.applied();
    Ok(envelope::empty())
}

fn parse<T: serde::de::DeserializeOwned + Default>(body: &[u8]) -> Result<T, ApiError> {
    super::parse_body(body)
}

/// The server endpoints served here (`rest` after `/1.0/`).
pub(super) fn route(ctx: &Ctx, method: &Method, rest: &[&str]) -> Option<ApiResult> {
    let answer = match rest {
        ["resources"] => resources(ctx),
        ["metrics"] => return Some(super::only(method, Method::GET).map(|()| metrics(ctx))),
        ["metadata", "configuration"] => Ok(envelope::sync(metadata().clone())),
        ["network-allocations"] => allocations(ctx),
        _ => return None,
    };
    Some(super::only(method, Method::GET).and(answer))
}

/// `GET /1.0/resources` (Go `api.Resources`): the host a real cluster member described. A
/// standalone server knows no `?target=` member; on a cluster the member was picked before.
fn resources(ctx: &Ctx) -> ApiResult {
    if ctx.app.cluster().is_none() && ctx.param("target").is_some_and(|t| !t.is_empty()) {
        return Err(ApiError::new(404, "Cluster member not found"));
    }
    Ok(envelope::sync(super::resources::host()))
}

/// `GET /1.0/metrics`: Prometheus text of what the fake holds: one `incus_procs_total` and
/// `incus_cpu_seconds_total` series per running instance, and the server's operation and
/// warning counts.
fn metrics(ctx: &Ctx) -> Response<envelope::Body> {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let project = ctx.param("project").filter(|p| !p.is_empty());
    let running = state.instances.iter().filter(|i| {
        i.status != crate::state::PowerState::Stopped && project.is_none_or(|p| p == i.project)
    });
    let mut text = String::new();
    let mut cpu = String::from(
        "# HELP incus_cpu_seconds_total The total number of CPU time used in seconds.\n# TYPE incus_cpu_seconds_total counter\n",
    );
    let mut procs = String::from(
        "# HELP incus_procs_total The number of running processes.\n# TYPE incus_procs_total gauge\n",
    );
    for instance in running {
        let labels = format!(
            "name=\"{}\",project=\"{}\",type=\"{}\"",
            instance.name, instance.project, instance.kind
        );
        cpu.push_str(&format!(
            "incus_cpu_seconds_total{{cpu=\"0\",mode=\"user\",{labels}}} 0\n"
        ));
        procs.push_str(&format!("incus_procs_total{{{labels}}} 1\n"));
    }
    text.push_str(&cpu);
    text.push_str(&procs);
    let warnings = state.objects.get("warning").map_or(0, Vec::len);
    text.push_str(&format!(
        "# HELP incus_warnings_total The number of active warnings.\n# TYPE incus_warnings_total counter\nincus_warnings_total {warnings}\n"
    ));
    let mut resp = Response::new(envelope::full(text));
    *resp.status_mut() = StatusCode::OK;
    if let Ok(value) = http::HeaderValue::from_str("text/plain; version=0.0.4") {
        resp.headers_mut().insert(http::header::CONTENT_TYPE, value);
    }
    resp
}

/// `GET /1.0/network-allocations` (Go `api.NetworkAllocations`): the addresses of the managed
/// networks of the project (or of all projects).
fn allocations(ctx: &Ctx) -> ApiResult {
    ctx.require_project(|p| format!("Failed to load project \"{p}\": Project not found"))?;
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let owners: BTreeSet<String> = ctx
        .projects()
        .iter()
        .map(|p| state.feature_project(p, "features.networks"))
        .collect();
    let mut items = Vec::new();
    for network in state
        .networks
        .iter()
        .filter(|n| n.managed && owners.contains(&n.project))
    {
        for key in ["ipv4.address", "ipv6.address"] {
            let Some(address) = network.config.get(key).filter(|a| a.contains('/')) else {
                continue;
            };
            let nat = network
                .config
                .get(&key.replace("address", "nat"))
                .map(String::as_str);
            items.push(json!({
                "addresses": address,
                "used_by": url(&format!("/1.0/networks/{}", network.name), &network.project),
                "type": "network",
                "nat": nat == Some("true"),
                "hwaddr": "",
                "network": network.name,
            }));
        }
    }
    Ok(envelope::sync(Value::Array(items)))
}
