//! The server's own endpoints beside `GET /1.0` ([`super::server`]): its configuration
//! (`PUT`/`PATCH /1.0`, checked against the daemon's key list), `/1.0/resources`,
//! `/1.0/metrics` (Prometheus text counting what the fake holds), `/1.0/metadata/configuration`
//! and `/1.0/network-allocations`.

use super::Ctx;
use crate::envelope::{self, ApiError, ApiResult};
use crate::line::IncusLine;
use crate::state::{etag, url, State, StringMap};
use http::{HeaderMap, Response, StatusCode};
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// What `PUT`/`PATCH /1.0` do on the fake (API.md).
pub(crate) const SERVER_DOES: &str = "`PUT` replaces the server config, `PATCH` merges it (`\"\"` unsets); `If-Match` is checked (412 on a stale ETag) after the body is read. Every key must be one of the daemon's (or `user.*`), of its type (`invalid boolean`, `invalid integer`), and pass the daemon's rule for it where it has one: listen addresses, the BGP router id and ASN range, the cluster voter/stand-by/threshold/replica limits, one-of lists (architectures, NIC host names, ACME challenge, Loki types), compression algorithms, expiry expressions, Loki log levels, and `storage.backups_volume`/`storage.images_volume` as an existing custom volume of `default`. Not done: listen addresses are not resolved (only IP addresses and `localhost`), the placement and authorization scriptlets are not parsed, OVN connections are not tried, and setting an address opens no listener.";

/// The server config keys of the daemon of `line`, with their types (from its configuration
/// metadata; a `NAME` segment stands for any name: `logging.NAME.target.type`).
fn server_keys(line: IncusLine) -> &'static [(String, String)] {
    static KEYS: OnceLock<Vec<Vec<(String, String)>>> = OnceLock::new();
    let all = KEYS.get_or_init(|| {
        IncusLine::all()
            .map(|line| {
                let mut keys = Vec::new();
                for section in line.configuration()["configs"]["server"]
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
            .collect()
    });
    let index = IncusLine::all().position(|l| l == line).unwrap_or(0);
    &all[index]
}

/// Whether a key of the metadata (`logging.NAME.types`) names this key (`logging.a.types`).
fn key_matches(pattern: &str, key: &str) -> bool {
    let (pattern, key): (Vec<&str>, Vec<&str>) =
        (pattern.split('.').collect(), key.split('.').collect());
    pattern.len() == key.len()
        && pattern
            .iter()
            .zip(&key)
            .all(|(p, k)| p == k || (*p == "NAME" && !k.is_empty()))
}

/// The deprecated server keys of 7.0 ([`crate::line::LOKI_DEPRECATED`]): their default and what
/// replaces them.
const DEPRECATED: &[(&str, &str, &str)] = &[
    (
        "loki.auth.username",
        "",
        "Use 'logging.*.target.username' instead",
    ),
    (
        "loki.auth.password",
        "",
        "Use 'logging.*.target.password' instead",
    ),
    (
        "loki.api.ca_cert",
        "",
        "Use 'logging.*.target.ca_cert' instead",
    ),
    ("loki.api.url", "", "Use 'logging.*.target.address' instead"),
    (
        "loki.instance",
        "",
        "Use 'logging.*.target.instance' instead",
    ),
    ("loki.labels", "", "Use 'logging.*.target.labels' instead"),
    (
        "loki.loglevel",
        "info",
        "Use 'logging.*.logging.level' instead",
    ),
    (
        "loki.types",
        "lifecycle,logging",
        "Use 'logging.*.types' instead",
    ),
];

/// A server config value rule of the daemon beyond its key's type (`internal/server/cluster/config`
/// and `internal/server/node/config` of Incus 6.0.4), with its texts as measured on a real daemon.
enum Rule {
    /// One of these values.
    OneOf(&'static [&'static str]),
    /// A comma-separated list of these values.
    ListOf(&'static [&'static str]),
    /// An integer the predicate accepts (else the text); not an integer: `invalid integer`.
    Int(fn(i64) -> bool, &'static str),
    /// A listen address: an IP address or `localhost`, with or without a port, or `:PORT`.
    Address,
    /// An IPv4 address.
    Ipv4,
    /// A compression algorithm (`none` or a compressor's command).
    Compression,
    /// An expiry expression (`1d 3H`).
    Expiry,
    /// A log level.
    LogLevel,
    /// `POOL/VOLUME`, a custom volume of the `default` project.
    Volume,
}

/// The value rules of the server config keys that have one.
const RULES: &[(&str, Rule)] = &[
    ("acme.challenge", Rule::OneOf(&["DNS-01", "HTTP-01"])),
    ("acme.http.port", Rule::Address),
    ("backups.compression_algorithm", Rule::Compression),
    ("cluster.https_address", Rule::Address),
    (
        "cluster.images_minimal_replica",
        Rule::Int(|n| n >= -1, "Invalid value for image replica count"),
    ),
    ("cluster.join_token_expiry", Rule::Expiry),
    (
        "cluster.max_standby",
        Rule::Int(|n| (0..=5).contains(&n), "Value must be between 0 and 5"),
    ),
    (
        "cluster.max_voters",
        Rule::Int(
            |n| n >= 3 && n % 2 == 1,
            "Value must be an odd number equal to or higher than 3",
        ),
    ),
    (
        "cluster.offline_threshold",
        Rule::Int(|n| n > 10, "Value must be greater than '10'"),
    ),
    ("core.bgp_address", Rule::Address),
    (
        "core.bgp_asn",
        Rule::Int(
            |n| (0..=4_294_967_294).contains(&n),
            "Value isn't within valid range. Must be between 0 and 4294967294",
        ),
    ),
    ("core.bgp_routerid", Rule::Ipv4),
    ("core.debug_address", Rule::Address),
    ("core.dns_address", Rule::Address),
    ("core.https_address", Rule::Address),
    ("core.metrics_address", Rule::Address),
    ("core.remote_token_expiry", Rule::Expiry),
    ("core.storage_buckets_address", Rule::Address),
    ("images.compression_algorithm", Rule::Compression),
    (
        "images.default_architecture",
        Rule::OneOf(&[
            "armv7l",
            "aarch64",
            "ppc64",
            "mips",
            "riscv32",
            "armv6l",
            "s390x",
            "x86_64",
            "ppc64le",
            "loongarch64",
            "i686",
            "armv8l",
            "ppc",
            "mips64",
            "riscv64",
        ]),
    ),
    ("instances.nic.host_name", Rule::OneOf(&["random", "mac"])),
    ("loki.loglevel", Rule::LogLevel),
    (
        "loki.types",
        Rule::ListOf(&["lifecycle", "logging", "network-acl"]),
    ),
    ("storage.backups_volume", Rule::Volume),
    ("storage.images_volume", Rule::Volume),
];

fn one_of(value: &str, allowed: &[&str]) -> Result<(), String> {
    if allowed.contains(&value) {
        return Ok(());
    }
    Err(format!(
        "Invalid value {value:?} (not one of [{}])",
        allowed.join(" ")
    ))
}

/// Whether a listen address parses without a name lookup (the fake resolves no host names but
/// `localhost`).
fn listen_address(value: &str) -> bool {
    use std::net::{IpAddr, SocketAddr};
    let port = |p: &str| p.parse::<u16>().is_ok();
    if value.parse::<IpAddr>().is_ok() || value.parse::<SocketAddr>().is_ok() {
        return true;
    }
    let host = value.trim_start_matches('[').trim_end_matches(']');
    if host.parse::<IpAddr>().is_ok() || value == "localhost" {
        return true;
    }
    match value.rsplit_once(':') {
        Some((host, p)) => (host.is_empty() || host == "localhost") && port(p),
        None => false,
    }
}

/// An expiry expression: space-separated amounts with a unit (`M`inutes, `H`ours, `d`ays,
/// `w`eeks, `m`onths, `y`ears).
fn expiry(value: &str) -> bool {
    value.split_whitespace().all(|part| {
        let digits = part.trim_end_matches(['M', 'H', 'd', 'w', 'm', 'y']);
        part.len() == digits.len() + 1 && digits.parse::<u64>().is_ok()
    })
}

impl Rule {
    /// The daemon's refusal of a value: its status and text (`None`: allowed).
    fn refusal(&self, state: &State, key: &str, value: &str) -> Option<(u16, String)> {
        let plain = |why: String| Some((400, format!("cannot set '{key}' to '{value}': {why}")));
        let checked = match self {
            Rule::OneOf(allowed) => one_of(value, allowed),
            Rule::ListOf(allowed) => value.split(',').try_for_each(|item| {
                one_of(item, allowed).map_err(|e| format!("Item {item:?}: {e}"))
            }),
            Rule::Int(accept, text) => match value.parse::<i64>() {
                Ok(n) if accept(n) => Ok(()),
                Ok(_) => Err((*text).to_owned()),
                Err(_) => Err("invalid integer".to_owned()),
            },
            Rule::Address if listen_address(value) => Ok(()),
            Rule::Address => Err(format!("Couldn't resolve {value:?}")),
            Rule::Ipv4 if value.parse::<std::net::Ipv4Addr>().is_ok() => Ok(()),
            Rule::Ipv4 => Err(format!("Not an IPv4 address {value:?}")),
            Rule::Compression => {
                let command = value.split_whitespace().next().unwrap_or_default();
                let known = ["none", "bzip2", "gzip", "lzma", "xz", "zstd", "squashfs"];
                if known.contains(&command) {
                    Ok(())
                } else {
                    Err(format!(
                        "Compression algorithm {value:?} isn't currently supported"
                    ))
                }
            }
            Rule::Expiry if expiry(value) => Ok(()),
            Rule::Expiry => Err("Invalid expiry expression".to_owned()),
            Rule::LogLevel => {
                let levels = [
                    "panic", "fatal", "error", "warn", "warning", "info", "debug", "trace",
                ];
                if levels.contains(&value.to_lowercase().as_str()) {
                    Ok(())
                } else {
                    Err(format!("not a valid logrus Level: {value:?}"))
                }
            }
            Rule::Volume => return volume_refusal(state, key, value),
        };
        checked.err().and_then(plain)
    }
}

/// `storage.backups_volume` and `storage.images_volume`: the daemon's texts (without the
/// "cannot set" prefix of the others).
fn volume_refusal(state: &State, key: &str, value: &str) -> Option<(u16, String)> {
    let failed =
        |status: u16, why: String| Some((status, format!("Failed validation of {key:?}: {why}")));
    let (pool, volume) = match value.split('/').collect::<Vec<_>>()[..] {
        [pool, volume] if !pool.is_empty() && !volume.is_empty() => (pool, volume),
        _ => {
            return failed(
                500,
                "Invalid syntax for volume, must be <pool>/<volume>".into(),
            )
        }
    };
    if !state.storage_pools.iter().any(|p| p.name == pool) {
        return failed(
            404,
            format!("Unable to load storage pool {pool:?}: Storage pool not found"),
        );
    }
    if state.custom_volume(pool, "default", volume).is_none() {
        return failed(
            404,
            format!("Failed loading storage volume \"{pool}/{volume}\" in \"default\" project: Storage volume not found"),
        );
    }
    None
}

/// Whether a server config key may be set to this value: a known key (or `user.*`), a value of
/// its type, and of its rule where it has one (the daemon's texts).
fn check_server_key(
    line: IncusLine,
    state: &State,
    key: &str,
    value: &str,
) -> Result<(), ApiError> {
    let refuse = |why: &str| {
        Err(ApiError::bad_request(format!(
            "cannot set '{key}' to '{value}': {why}"
        )))
    };
    if key.starts_with("user.") {
        return Ok(());
    }
    let Some((_, kind)) = server_keys(line).iter().find(|(k, _)| key_matches(k, key)) else {
        return refuse("unknown key");
    };
    if value.is_empty() {
        return Ok(());
    }
    match kind.as_str() {
        "bool"
            if !["true", "false", "1", "0", "yes", "no", "on", "off"]
                .contains(&value.to_lowercase().as_str()) =>
        {
            return refuse("invalid boolean");
        }
        "integer" if value.parse::<i64>().is_err() => return refuse("invalid integer"),
        _ => {}
    }
    if line.has_extension(crate::line::LOKI_DEPRECATED) {
        if let Some((_, default, instead)) = DEPRECATED.iter().find(|(k, _, _)| *k == key) {
            if value != *default {
                return refuse(&format!("deprecated: {instead}"));
            }
        }
    }
    match RULES.iter().find(|(k, _)| *k == key) {
        Some((_, rule)) => match rule.refusal(state, key, value) {
            Some((status, text)) => Err(ApiError::new(status, text)),
            None => Ok(()),
        },
        None => Ok(()),
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
/// A stale `If-Match` is refused (412) after the body is read, as the daemon does.
pub(super) fn update(ctx: &Ctx, headers: &HeaderMap, body: &[u8], patch: bool) -> ApiResult {
    let req: ServerPut = parse(body)?;
    let mut state = ctx.app.state();
    super::resource::check_etag(headers, &etag::hash(&state.server_config))?;
    let mut config = if patch {
        state.server_config.clone()
    } else {
        StringMap::new()
    };
    for (key, value) in req.config {
        check_server_key(ctx.app.settings.line, &state, &key, &value)?;
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

/// `GET /1.0/resources` (Go `api.Resources`): the host a real cluster member described. A
/// standalone server knows no `?target=` member; on a cluster the member was picked before.
pub(super) fn resources(ctx: &Ctx) -> ApiResult {
    if ctx.app.cluster().is_none() && ctx.param("target").is_some_and(|t| !t.is_empty()) {
        return Err(ApiError::new(404, "Cluster member not found"));
    }
    Ok(envelope::sync(super::resources::host(
        ctx.app.settings.line,
    )))
}

/// `GET /1.0/metrics`: Prometheus text of what the fake holds: one `incus_procs_total` and
/// `incus_cpu_seconds_total` series per running instance, and the server's operation and
/// warning counts.
pub(super) fn metrics(ctx: &Ctx) -> Response<envelope::Body> {
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
    // Both lines answer plain `text/plain` (measured on 6.0.4 and 7.0.2).
    if let Ok(value) = http::HeaderValue::from_str("text/plain") {
        resp.headers_mut().insert(http::header::CONTENT_TYPE, value);
    }
    resp
}

/// `GET /1.0/network-allocations` (Go `api.NetworkAllocations`): the addresses of the managed
/// networks of the project (or of all projects).
pub(super) fn allocations(ctx: &Ctx) -> ApiResult {
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
