//! The objects that hang off networks, declared: network ACLs (with `log`), zones and their
//! records, integrations, and a network's forwards, load balancers (with `state`) and peers.
//! Each is a [`Plain`] resource: what is its own is its fields, its key's rule, the config keys
//! it takes and its parent. Load balancers and peers exist only on OVN networks, which the fake
//! does not have: their endpoints answer as the daemon does for a bridge.

use super::resource::plain::any_name;
use super::resource::{Answer, At, Decl, First, Objects, Plain, Scope, Sub};
use super::Ctx;
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::{url, Devices, State};
use serde_json::{json, Value};

const NETWORK_PROJECT: [&str; 2] = ["Failed to load project \"{}\": Project not found"; 2];
const NETWORK_NOT_FOUND: &str = "Failed loading network: Network not found";

/// An ACL's name: letters, digits and hyphens (`internal/server/network/acl`).
fn acl_name(key: &str, at: &At) -> Result<(), ApiError> {
    // 7.0's `ValidName` starts with the API name check, its text alone (a 500).
    if super::resource::names_are_api_names(at) {
        if let Some(why) = super::validation::api_name_problem(key, false) {
            return Err(ApiError::internal(why));
        }
    }
    any_name(key, at)?;
    if key.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        Ok(())
    } else {
        Err(ApiError::internal(
            "Name can only contain alphanumeric and hyphen characters",
        ))
    }
}

/// A zone record's name: 7.0 checks it as an API name first (`@`, the zone's root, allowed),
/// its text alone (a 500, `AddRecord`'s error).
fn record_name(key: &str, at: &At) -> Result<(), ApiError> {
    if key != "@" && super::resource::names_are_api_names(at) {
        if let Some(why) = super::validation::api_name_problem(key, false) {
            return Err(ApiError::internal(why));
        }
    }
    any_name(key, at)
}

/// An ACL's `used_by`, in the daemon's order (`network/acl.UsedBy`): the networks of its project
/// whose `security.acls` name it, the profiles and then the instances (their expanded devices)
/// with a NIC on a managed network that names it, and between them the other ACLs whose rules
/// name it as a subject (ingress `source`, egress `destination`).
fn acl_used_by(state: &State, at: &At, mut acl: Value) -> Value {
    let name = acl["name"].as_str().unwrap_or_default().to_owned();
    let names_it =
        |list: Option<&String>| list.is_some_and(|l| l.split(',').any(|n| n.trim() == name));
    let nic_names_it = |devices: &Devices| {
        devices.values().any(|d| {
            d.get("type").is_some_and(|t| t == "nic")
                && d.get("network").is_some_and(|n| !n.is_empty())
                && names_it(d.get("security.acls"))
        })
    };
    let in_acl_project =
        |project: &str| state.feature_project(project, "features.networks") == at.project;
    let mut used = Vec::new();
    for network in state.networks.iter().filter(|n| n.project == at.project) {
        if names_it(network.config.get("security.acls")) {
            used.push(url(
                &format!("/1.0/networks/{}", network.name),
                &network.project,
            ));
        }
    }
    for profile in &state.profiles {
        if in_acl_project(&profile.project) && nic_names_it(&profile.devices) {
            used.push(url(
                &format!("/1.0/profiles/{}", profile.name),
                &profile.project,
            ));
        }
    }
    for other in ACLS.decl.store.list(state, at) {
        let other_name = other["name"].as_str().unwrap_or_default();
        let subjects = |rules: &str, field: &str| {
            other[rules].as_array().into_iter().flatten().any(|rule| {
                rule[field]
                    .as_str()
                    .is_some_and(|s| s.split(',').any(|s| s.trim() == name))
            })
        };
        if other_name != name
            && (subjects("ingress", "source") || subjects("egress", "destination"))
        {
            used.push(url(&format!("/1.0/network-acls/{other_name}"), &at.project));
        }
    }
    for instance in &state.instances {
        if in_acl_project(&instance.project) && nic_names_it(&instance.expanded_devices(state)) {
            used.push(instance.url());
        }
    }
    acl["used_by"] = json!(used);
    acl
}

/// A forward's or load balancer's listen address: an IP address.
fn listen_address(key: &str, _: &At) -> Result<(), ApiError> {
    match key.parse::<std::net::IpAddr>() {
        Ok(ip) if ip.is_unspecified() => Err(ApiError::internal(format!(
            "Failed creating forward: Cannot use unspecified address: \"{key}\""
        ))),
        Ok(_) => Ok(()),
        Err(_) => Err(ApiError::bad_request("Invalid listen address")),
    }
}

/// The managed network a forward lives on (unmanaged and unknown ones are not found).
fn network(state: &State, at: &At) -> Result<&'static str, ApiError> {
    match state
        .networks
        .iter()
        .find(|n| n.project == at.project && n.name == at.parent)
    {
        Some(n) if n.managed && n.kind == "bridge" => Ok("bridge"),
        Some(n) if n.managed => Ok("other"),
        _ => Err(ApiError::new(404, NETWORK_NOT_FOUND)),
    }
}

fn forward_network(state: &State, at: &At) -> Result<(), ApiError> {
    network(state, at).map(drop)
}

/// Load balancers are OVN's: on the fake's networks, the daemon's answer for a bridge.
fn balancer_network(state: &State, at: &At) -> Result<(), ApiError> {
    network(state, at)?;
    Err(ApiError::bad_request(
        "Network driver \"bridge\" does not support load balancers",
    ))
}

/// Peers are OVN's: on the fake's networks, the daemon's answer for a bridge.
fn peer_network(state: &State, at: &At) -> Result<(), ApiError> {
    network(state, at)?;
    Err(ApiError::bad_request(
        "Network driver \"bridge\" does not support peering",
    ))
}

fn zone(state: &State, at: &At) -> Result<(), ApiError> {
    let found = state
        .objects
        .get("network-zone")
        .into_iter()
        .flatten()
        .any(|o| o.project == at.project && o.value["name"] == json!(at.parent));
    if found {
        Ok(())
    } else {
        Err(ApiError::new(404, "Network zone not found"))
    }
}

fn integration_type(object: &Value) -> Result<(), ApiError> {
    match object["type"].as_str().unwrap_or_default() {
        "ovn" => Ok(()),
        other => Err(ApiError::bad_request(format!(
            "Unsupported integration type {other:?}"
        ))),
    }
}

fn acl_log(ctx: &Ctx, at: &At, key: &str, _: &[&str]) -> ApiResult {
    if super::resource::find_object(&ACLS, &ctx.app.snapshot().state, at, key).is_none() {
        return Err(ApiError::new(404, "Network ACL not found"));
    }
    Err(ApiError::internal(
        "Only OVN log entries may be retrieved at this time",
    ))
}

fn balancer_state(_: &Ctx, _: &At, _: &str, _: &[&str]) -> ApiResult {
    Ok(envelope::sync(json!({"backend_health": {}})))
}

/// On a line with address sets ([`crate::line::ACL_NAMES_ADDRESS_SETS`]), every `$NAME`
/// subject of a rule (source or destination) names a set of the ACL's project, in the daemon's
/// words (`Invalid ingress rule 0: Invalid Source: Failed getting network address set "NAME"
/// for subject validation: Network_address_set not found`). The rules' other fields are not
/// checked.
fn acl_address_sets(ctx: &Ctx, state: &State, at: &At, object: &Value) -> Result<(), ApiError> {
    if !ctx.app.has_extension(crate::line::ACL_NAMES_ADDRESS_SETS) {
        return Ok(());
    }
    let sets: Vec<&str> = state
        .objects
        .get("network-address-set")
        .into_iter()
        .flatten()
        .filter(|o| o.project == at.project)
        .filter_map(|o| o.value["name"].as_str())
        .collect();
    for direction in ["ingress", "egress"] {
        let rules = object[direction].as_array().into_iter().flatten();
        for (i, rule) in rules.enumerate() {
            for (field, label) in [("source", "Source"), ("destination", "Destination")] {
                let subjects = rule[field].as_str().unwrap_or_default().split(',');
                let missing = subjects
                    .map(str::trim)
                    .filter_map(|s| s.strip_prefix('$'))
                    .find(|name| !sets.contains(name));
                if let Some(name) = missing {
                    return Err(ApiError::new(404, format!(
                        "Invalid {direction} rule {i}: Invalid {label}: Failed getting network address set {name:?} for subject validation: Network_address_set not found"
                    )));
                }
            }
        }
    }
    Ok(())
}

pub(super) static ACLS: Plain = Plain {
    decl: Decl {
        collection: "/1.0/network-acls",
        scope: Scope::Project(Some("features.networks")),
        writable: &["description", "ingress", "egress", "config"],
        rename: Answer::Location,
        first: First::Object,
        not_found: "Network ACL not found",
        exists: (400, "The network ACL already exists"),
        project_not_found: NETWORK_PROJECT,
        limits: "Rules are stored, not enforced (no firewall to apply them to).",
        store: &Objects {
            kind: "network-acl",
            key: "name",
        },
        subs: &[Sub {
            method: "GET",
            path: &["log"],
            serve: acl_log,
            does: "The daemon's answer without OVN (500).",
        }],
        ..Decl::DEFAULTS
    },
    fields: r#"{"name":"","description":"","egress":[],"ingress":[],"config":{},"used_by":[],"project":""}"#,
    invalid_key: (500, "Invalid config option \"{key}\""),
    key_rule: acl_name,
    computed: acl_used_by,
    line_check: acl_address_sets,
    in_use: Some((500, "Cannot {verb} an ACL that is in use")),
    ..Plain::DEFAULTS
};

pub(super) static ZONES: Plain = Plain {
    decl: Decl {
        collection: "/1.0/network-zones",
        scope: Scope::Project(Some("features.networks.zones")),
        not_found: "Network zone not found",
        exists: (400, "The network zone already exists"),
        project_not_found: NETWORK_PROJECT,
        limits: "No DNS server answers for the zone.",
        store: &Objects {
            kind: "network-zone",
            key: "name",
        },
        ..Decl::DEFAULTS
    },
    fields: r#"{"name":"","description":"","config":{},"used_by":[],"project":""}"#,
    config_keys: &["dns.nameservers", "network.nat", "peers.", "user."],
    ..Plain::DEFAULTS
};

pub(super) static RECORDS: Plain = Plain {
    decl: Decl {
        collection: "/1.0/network-zones/{}/records",
        scope: Scope::Project(Some("features.networks.zones")),
        writable: &["description", "entries", "config"],
        not_found: "Network zone record not found",
        exists: (
            500,
            "UNIQUE constraint failed: networks_zones_records.network_zone_id, networks_zones_records.name",
        ),
        project_not_found: NETWORK_PROJECT,
        limits: "No DNS server serves the records.",
        store: &Objects {
            kind: "network-zone-record",
            key: "name",
        },
        ..Decl::DEFAULTS
    },
    fields: r#"{"name":"","description":"","entries":[],"config":{}}"#,
    key_rule: record_name,
    parent: zone,
    ..Plain::DEFAULTS
};

pub(super) static INTEGRATIONS: Plain = Plain {
    decl: Decl {
        collection: "/1.0/network-integrations",
        rename: Answer::Location,
        first: First::Object,
        not_found: "Network_integration not found",
        api_name: "network integration",
        delete_lookup: "Failed to get network integration ID",
        exists: (
            500,
            "Failed to create \"networks_integrations\" entry: UNIQUE constraint failed: networks_integrations.name",
        ),
        limits: "No OVN interconnection is made.",
        store: &Objects {
            kind: "network-integration",
            key: "name",
        },
        ..Decl::DEFAULTS
    },
    fields: r#"{"name":"","description":"","config":{},"type":"","used_by":[]}"#,
    config_keys: &["ovn.", "user."],
    check: integration_type,
    // The daemon renames the database row without loading it first.
    renaming_unknown: Some((500, "Query affected 0 rows instead of 1")),
    ..Plain::DEFAULTS
};

pub(super) static FORWARDS: Plain = Plain {
    decl: Decl {
        collection: "/1.0/networks/{}/forwards",
        key: "listen_address",
        scope: Scope::Project(Some("features.networks")),
        writable: &["description", "config", "ports"],
        not_found: "Network forward not found",
        exists: (
            409,
            "Failed creating forward: A forward for that listen address already exists",
        ),
        project_not_found: NETWORK_PROJECT,
        limits: "Stored, not applied: no packet is forwarded.",
        store: &Objects {
            kind: "network-forward",
            key: "listen_address",
        },
        ..Decl::DEFAULTS
    },
    fields: r#"{"listen_address":"","description":"","config":{},"ports":[],"location":""}"#,
    config_keys: &["target_address", "user."],
    invalid_key: (500, "Failed creating forward: Invalid option \"{key}\""),
    key_rule: listen_address,
    parent: forward_network,
    ..Plain::DEFAULTS
};

pub(super) static BALANCERS: Plain = Plain {
    decl: Decl {
        collection: "/1.0/networks/{}/load-balancers",
        key: "listen_address",
        scope: Scope::Project(Some("features.networks")),
        writable: &["description", "config", "backends", "ports"],
        not_found: "Network load balancer not found",
        exists: (
            409,
            "A load balancer for that listen address already exists",
        ),
        project_not_found: NETWORK_PROJECT,
        limits: "OVN only: every network of the fake answers as a bridge does (400).",
        store: &Objects {
            kind: "network-load-balancer",
            key: "listen_address",
        },
        subs: &[Sub {
            method: "GET",
            path: &["state"],
            serve: balancer_state,
            does: "Not reached: the network's 400 comes first.",
        }],
        ..Decl::DEFAULTS
    },
    fields: r#"{"listen_address":"","description":"","config":{},"backends":[],"ports":[],"location":""}"#,
    key_rule: listen_address,
    parent: balancer_network,
    ..Plain::DEFAULTS
};

pub(super) static PEERS: Plain = Plain {
    decl: Decl {
        collection: "/1.0/networks/{}/peers",
        scope: Scope::Project(Some("features.networks")),
        not_found: "Network peer not found",
        api_name: "network peer",
        exists: (409, "A peer for that name already exists"),
        project_not_found: NETWORK_PROJECT,
        limits: "OVN only: every network of the fake answers as a bridge does (400).",
        store: &Objects {
            kind: "network-peer",
            key: "name",
        },
        ..Decl::DEFAULTS
    },
    fields: r#"{"name":"","description":"","config":{},"target_project":"","target_network":"","status":"","used_by":[]}"#,
    parent: peer_network,
    ..Plain::DEFAULTS
};
