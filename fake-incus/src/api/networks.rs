//! `/1.0/networks`: list, get, create, update, rename and delete of managed networks, with their
//! `state` and `leases`. Host interfaces (`lo`) are listed but, as on the daemon, not managed:
//! their writes answer the 404 of a network the database does not know. A project with
//! `features.networks` has its own networks, and only OVN ones, which need an OVN the fake
//! does not have (the daemon's answer without a free uplink subnet).

use super::resource::{Answer, At, Decl, First, Resource, Scope, Sub, Typed, Verb};
use super::Ctx;
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::{url, Devices, Network, State};
use serde_json::{json, Value};

pub(super) struct Networks;

static DECL: Decl = Decl {
    collection: "/1.0/networks",
    scope: Scope::Project(Some("features.networks")),
    rename: Answer::Location,
    first: First::Object,
    not_found: "Network not found",
    exists: (409, "Network \"{name}\" already exists"),
    project_not_found: ["Failed to load project \"{}\": Project not found"; 2],
    store: &STORE,
    subs: &[
        Sub {
            method: "GET",
            path: &["state"],
            serve: state,
            does: "The interface's state from its config (no counters move).",
        },
        Sub {
            method: "GET",
            path: &["leases"],
            serve: leases,
            does: "Empty: the fake runs no DHCP server. A host interface's are the daemon's 404.",
        },
    ],
    limits: "No host interface is made: a bridge's addresses are its config; OVN, macvlan, sriov and physical networks are refused as on a daemon without them; no cluster-member specific config.",
    ..Decl::DEFAULTS
};

static STORE: Typed<Network> = Typed::rows(|s| &s.networks, |s| &mut s.networks).per_project();

/// Config key prefixes a bridge accepts (`internal/server/network/driver_bridge.go`).
const BRIDGE_KEYS: &[&str] = &[
    "bgp.",
    "bridge.",
    "dns.",
    "fan.",
    "ipv4.",
    "ipv6.",
    "maas.",
    "raw.dnsmasq",
    "security.acls",
    "tunnel.",
    "user.",
    "volatile.",
];

/// What uses a network: instances and profiles with a `nic` whose `network` is it.
fn used_by(state: &State, network: &Network) -> Vec<String> {
    let uses = |devices: &Devices| {
        devices.values().any(|d| {
            d.get("type").map(String::as_str) == Some("nic")
                && d.get("network") == Some(&network.name)
        })
    };
    let instances = state
        .instances
        .iter()
        .filter(|i| state.feature_project(&i.project, "features.networks") == network.project)
        .filter(|i| uses(&i.devices))
        .map(|i| url(&format!("/1.0/instances/{}", i.name), &i.project));
    let profiles = state
        .profiles
        .iter()
        .filter(|p| state.feature_project(&p.project, "features.networks") == network.project)
        .filter(|p| uses(&p.devices))
        .map(|p| url(&format!("/1.0/profiles/{}", p.name), &p.project));
    instances.chain(profiles).collect()
}

fn network(object: Value) -> Result<Network, ApiError> {
    serde_json::from_value(object).map_err(|e| ApiError::internal(e.to_string()))
}

const UNMANAGED: &str = "Failed loading network: Network not found";

impl Resource for Networks {
    fn decl(&self) -> &Decl {
        &DECL
    }
    fn template(&self) -> Value {
        json!({"description": "", "config": {}, "type": "", "managed": true, "project": ""})
    }
    fn check_key(&self, key: &str, at: &At) -> Result<(), ApiError> {
        if key.is_empty() {
            return Err(ApiError::bad_request("No name provided"));
        }
        if key == "none" && super::resource::names_are_api_names(at) {
            return Err(ApiError::bad_request(
                "Invalid network name: 'none' is a reserved name",
            ));
        }
        if key == "none" {
            return Err(ApiError::bad_request("Network name 'none' is not valid"));
        }
        super::resource::api_name(at, "network", key)?;
        if key.len() > 15 || key.contains(['/', ':', ' ']) {
            return Err(ApiError::bad_request(format!(
                "Network interface is too long (maximum 15 characters): {key}"
            )));
        }
        Ok(())
    }
    fn validate(
        &self,
        _: &State,
        at: &At,
        object: &Value,
        current: Option<&Value>,
    ) -> Result<(), ApiError> {
        if current.is_some_and(|c| c["managed"] != json!(true)) {
            return Err(ApiError::new(404, UNMANAGED));
        }
        let kind = object["type"].as_str().unwrap_or_default();
        let kind = match kind {
            "" if at.project == "default" => "bridge",
            "" => "ovn",
            other => other,
        };
        if !["bridge", "macvlan", "sriov", "ovn", "physical"].contains(&kind) {
            return Err(ApiError::bad_request(format!(
                "Unknown network type {kind:?}"
            )));
        }
        if at.project != "default" && kind != "ovn" {
            return Err(ApiError::bad_request(
                "Network type does not support non-default projects",
            ));
        }
        if kind != "bridge" {
            return Err(ApiError::internal(
                "Failed generating auto config: Failed to automatically find an unused IPv4 subnet, manual configuration required",
            ));
        }
        let name = object["name"].as_str().unwrap_or_default();
        for key in object["config"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
        {
            if !BRIDGE_KEYS.iter().any(|p| key.starts_with(p)) {
                return Err(ApiError::bad_request(format!(
                    "Invalid option for network {name:?} option {key:?}"
                )));
            }
        }
        Ok(())
    }
    fn render(&self, state: &State, _: &At, object: Value) -> Value {
        match network(object) {
            Ok(network) => {
                let mut value = network.to_json();
                value["used_by"] = json!(used_by(state, &network));
                value
            }
            Err(e) => json!({"error": e.message}),
        }
    }
    fn etag(&self, object: &Value) -> String {
        network(object.clone())
            .map(|n| n.etag())
            .unwrap_or_default()
    }
    fn not_found(&self, verb: Verb, _key: &str) -> ApiError {
        match verb {
            Verb::Get => ApiError::new(404, DECL.not_found),
            _ => ApiError::new(404, UNMANAGED),
        }
    }
    fn refuse(&self, state: &State, at: &At, key: &str, verb: Verb) -> Result<(), ApiError> {
        let Some(network) = state
            .networks
            .iter()
            .find(|n| n.project == at.project && n.name == key)
        else {
            return Ok(());
        };
        if !network.managed {
            return Err(ApiError::new(404, UNMANAGED));
        }
        if !used_by(state, network).is_empty() {
            return Err(ApiError::bad_request(match verb {
                Verb::Rename => "Network is currently in use",
                _ => "The network is currently in use",
            }));
        }
        Ok(())
    }
    fn renamed(&self, _: &mut State, _: &At, _: &str, _: &str) {}
}

fn found<T>(ctx: &Ctx, at: &At, key: &str, then: impl FnOnce(&Network) -> T) -> Option<T> {
    let snapshot = ctx.app.snapshot();
    let network = snapshot
        .state
        .networks
        .iter()
        .find(|n| n.project == at.project && n.name == key);
    network.map(then)
}

fn state(ctx: &Ctx, at: &At, key: &str, _: &[&str]) -> ApiResult {
    found(ctx, at, key, |n| envelope::sync(state_of(n)))
        .ok_or_else(|| ApiError::new(404, format!("Network interface {key:?} not found")))
}

/// The leases of a managed network; the daemon loads the network from its database first, so a
/// host interface (`lo`) is as unknown as a missing network.
fn leases(ctx: &Ctx, at: &At, key: &str, _: &[&str]) -> ApiResult {
    found(ctx, at, key, |n| {
        n.managed.then(|| envelope::sync(json!([])))
    })
    .flatten()
    .ok_or_else(|| ApiError::new(404, UNMANAGED))
}

/// `GET /1.0/networks/{name}/state` (Go `api.NetworkState`), from the network's config.
fn state_of(network: &Network) -> Value {
    let loopback = network.kind == "loopback";
    let mut addresses = Vec::new();
    for (family, key) in [("inet", "ipv4.address"), ("inet6", "ipv6.address")] {
        let configured = network.config.get(key).map(String::as_str);
        let address = match (loopback, configured) {
            (true, _) if family == "inet" => Some("127.0.0.1/8"),
            (true, _) => Some("::1/128"),
            (false, Some(a)) if a.contains('/') => Some(a),
            _ => None,
        };
        if let Some((address, netmask)) = address.and_then(|a| a.split_once('/')) {
            addresses.push(
                json!({"family": family, "address": address, "netmask": netmask,
                "scope": if loopback { "local" } else { "global" }}),
            );
        }
    }
    json!({
        "addresses": addresses,
        "counters": {"bytes_received": 0, "bytes_sent": 0, "packets_received": 0, "packets_sent": 0},
        "hwaddr": if loopback { "" } else { "00:16:3e:00:00:01" },
        "mtu": if loopback { 65536 } else { 1500 },
        "state": "up",
        "type": if loopback { "loopback" } else { "broadcast" },
        "bond": null, "bridge": null, "vlan": null, "ovn": null,
    })
}
