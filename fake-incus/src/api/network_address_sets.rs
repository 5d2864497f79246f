//! `/1.0/network-address-sets`, declared (API extension `network_address_set`, Incus 7.0): named
//! lists of addresses that network ACL rules name as `$NAME`. List, get (ETag over the name,
//! description, addresses and config, as the daemon hashes them), create, `PUT`, `PATCH` (the
//! daemon's: only `config` is merged, the addresses and description are the request's), rename
//! and delete, refused while an ACL of the project names the set. Texts, statuses and their
//! order are the real 7.0.2 daemon's (`cmd/incusd/network_address_sets.go`,
//! `internal/server/network/address-set/`).
//!
//! Addresses are IP addresses, CIDR subnets and ranges (`10.0.0.120-10.0.0.130`, at most 256
//! addresses: `network_address_set_ip_ranges`, which every line with address sets has).

use super::resource::{self, Answer, At, Decl, First, Objects, Plain, Resource, Verb};
use crate::envelope::ApiError;
use crate::state::{url, State};
use serde_json::{json, Map, Value};
use std::net::IpAddr;

/// The extension that brought the endpoints: without it they are not routed.
pub(super) const EXTENSION: &str = "network_address_set";

pub(super) struct AddressSets;

pub(super) static ADDRESS_SETS: AddressSets = AddressSets;

static PLAIN: Plain = Plain {
    decl: Decl {
        collection: "/1.0/network-address-sets",
        scope: resource::Scope::Project(Some("features.networks")),
        writable: &["description", "addresses", "config"],
        rename: Answer::Location,
        first: First::Object,
        not_found: "Network_address_set not found",
        exists: (400, "The network address set already exists"),
        project_not_found: ["Failed to load project \"{}\": Project not found"; 2],
        limits: "Stored, not applied: no firewall or OVN address set is made. A `PATCH` without \
                 `config` keeps the config (the daemon's handler drops the connection).",
        store: &Objects {
            kind: "network-address-set",
            key: "name",
        },
        extension: Some(EXTENSION),
        ..Decl::DEFAULTS
    },
    fields: r#"{"addresses":[],"config":{},"description":"","name":"","used_by":[],"project":""}"#,
    config_keys: &["user."],
    invalid_key: (
        500,
        "Invalid network integration configuration key \"{key}\"",
    ),
    key_rule: |name, _| valid_name(name),
    computed: used_by,
    in_use: Some((500, "Cannot {verb} address set that is in use")),
    ..Plain::DEFAULTS
};

impl Resource for AddressSets {
    fn decl(&self) -> &Decl {
        &PLAIN.decl
    }
    fn template(&self) -> Value {
        PLAIN.template()
    }
    fn check_key(&self, key: &str, _: &At) -> Result<(), ApiError> {
        valid_name(key)
    }
    /// The addresses first, then the config keys, as the daemon checks them.
    fn validate(
        &self,
        state: &State,
        at: &At,
        object: &Value,
        current: Option<&Value>,
    ) -> Result<(), ApiError> {
        let addresses: Vec<&str> = object["addresses"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        valid_addresses(&addresses)
            .map_err(|why| ApiError::internal(format!("Invalid addresses: {why}")))?;
        PLAIN.validate(state, at, object, current)
    }
    fn render(&self, state: &State, at: &At, object: Value) -> Value {
        PLAIN.render(state, at, object)
    }
    /// The daemon hashes the name with the writable fields.
    fn etag(&self, object: &Value) -> String {
        crate::state::etag::hash(&[
            &object["name"],
            &object["description"],
            &object["addresses"],
            &object["config"],
        ])
    }
    /// `PUT` replaces every field; `PATCH` merges the config only (the daemon fills the
    /// request's config with the current keys it lacks) and takes the rest from the request.
    fn merge(&self, current: &Value, body: &Map<String, Value>, patch: bool) -> Value {
        let mut next =
            resource::merge(self.decl().writable, &self.template(), current, body, false);
        if patch {
            let mut config = current["config"].as_object().cloned().unwrap_or_default();
            if let Some(sent) = body.get("config").and_then(Value::as_object) {
                config.extend(sent.clone());
            }
            next["config"] = resource::without_empty(Value::Object(config));
        }
        next
    }
    fn not_found(&self, verb: Verb, key: &str) -> ApiError {
        PLAIN.not_found(verb, key)
    }
    fn exists(&self, verb: Verb, key: &str) -> ApiError {
        match verb {
            Verb::Rename => {
                ApiError::internal(format!("Address set by that name: {key} exists already"))
            }
            _ => PLAIN.exists(verb, key),
        }
    }
    fn refuse(&self, state: &State, at: &At, key: &str, verb: Verb) -> Result<(), ApiError> {
        PLAIN.refuse(state, at, key, verb)
    }
}

/// `addressset.ValidName`: an API name (`validate.IsAPIName`), not starting with `@` or `$`,
/// and a host name (`validate.IsHostname`). Errors are 500s, as the daemon's are.
fn valid_name(name: &str) -> Result<(), ApiError> {
    let refuse = |why: String| Err(ApiError::internal(why));
    if name.len() > 64 {
        return refuse("Maximum name length is 64 characters".into());
    }
    if name.chars().any(char::is_whitespace) {
        return refuse("Name cannot contain white space".into());
    }
    for reserved in ["$", "?", "&", "+", "\"", "'", "`", "*", "/"] {
        if name.contains(reserved) {
            return refuse(format!("Name contains invalid character {reserved:?}"));
        }
    }
    let alphanumeric_ends = name
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphanumeric())
        && name
            .chars()
            .last()
            .is_some_and(|c| c.is_ascii_alphanumeric());
    if !alphanumeric_ends {
        return refuse("Names must start and end with an alphanumeric character".into());
    }
    if let Some(first @ ('@' | '$')) = name.chars().next() {
        return refuse(format!(
            "Name cannot start with reserved character {first:?}"
        ));
    }
    if name.len() > 63 {
        return refuse("Name must be 1-63 characters long".into());
    }
    if name.parse::<u64>().is_ok() {
        return refuse("Name cannot be a number".into());
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return refuse("Name can only contain alphanumeric and hyphen characters".into());
    }
    Ok(())
}

/// The daemon's `validateAddresses`: each an IP address, a CIDR subnet or a range, none twice.
fn valid_addresses(addresses: &[&str]) -> Result<(), String> {
    for (index, address) in addresses.iter().enumerate() {
        if addresses[..index].contains(address) {
            return Err(format!(
                "Duplicate address {address:?} found at index {index}"
            ));
        }
        if address.parse::<IpAddr>().is_ok() || is_cidr(address) {
            continue;
        }
        if address.contains('-') {
            range_size(address).map_err(|why| {
                format!("Unsupported address format {address:?} at index {index}: {why}")
            })?;
            continue;
        }
        if is_mac(address) {
            return Err(format!(
                "Unsupported MAC address format {address:?} at index {index}"
            ));
        }
        return Err(format!(
            "Unsupported address format {address:?} at index {index}"
        ));
    }
    Ok(())
}

/// Go's `net.ParseCIDR`: an address, `/`, a prefix length that fits its family.
fn is_cidr(text: &str) -> bool {
    let Some((address, prefix)) = text.split_once('/') else {
        return false;
    };
    let Ok(address) = address.parse::<IpAddr>() else {
        return false;
    };
    let most = if address.is_ipv4() { 32 } else { 128 };
    !prefix.is_empty()
        && prefix.len() <= 3
        && prefix.bytes().all(|b| b.is_ascii_digit())
        && prefix.parse::<u32>().is_ok_and(|p| p <= most)
}

/// Go's `net.ParseMAC` for the 6-byte forms (`00:11:22:33:44:55`, `00-11-…`, `0011.2233.4455`).
fn is_mac(text: &str) -> bool {
    let hex = |group: &str, len: usize| {
        group.len() == len && group.bytes().all(|b| b.is_ascii_hexdigit())
    };
    let colon = text.split(':').collect::<Vec<_>>();
    let dash = text.split('-').collect::<Vec<_>>();
    let dot = text.split('.').collect::<Vec<_>>();
    (colon.len() == 6 && colon.iter().all(|g| hex(g, 2)))
        || (dash.len() == 6 && dash.iter().all(|g| hex(g, 2)))
        || (dot.len() == 3 && dot.iter().all(|g| hex(g, 4)))
}

/// The number of addresses of a range (`validate.IsNetworkRange`, then at most 256).
fn range_size(range: &str) -> Result<u128, String> {
    let Some((start, end)) = range.split_once('-') else {
        return Err("IP range must contain start and end IP addresses".into());
    };
    let start_ip: IpAddr = start
        .parse()
        .map_err(|_| format!("Start not an IP address {start:?}"))?;
    let end_ip: IpAddr = end
        .parse()
        .map_err(|_| format!("End not an IP address {end:?}"))?;
    let as_number = |ip: IpAddr| match ip {
        IpAddr::V4(v4) => u128::from(u32::from(v4)),
        IpAddr::V6(v6) => u128::from(v6),
    };
    if start_ip.is_ipv4() != end_ip.is_ipv4() {
        return Err("Start and end IP addresses are not in same family".into());
    }
    let (first, last) = (as_number(start_ip), as_number(end_ip));
    if first > last {
        return Err("Start IP address must be before or equal to end IP address".into());
    }
    let count = last - first + 1;
    if count > 256 {
        return Err(format!(
            "IP range {range:?} contains more than 256 addresses, use CIDR notation instead"
        ));
    }
    Ok(count)
}

/// The ACLs of the set's project whose rules name it (`$NAME` as a source or destination), in
/// the project's order of ACLs.
fn used_by(state: &State, at: &At, mut set: Value) -> Value {
    let needle = format!("${}", set["name"].as_str().unwrap_or_default());
    let names_it = |subjects: &Value| {
        subjects
            .as_str()
            .is_some_and(|s| s.split(',').any(|s| s.trim() == needle))
    };
    let mut used = Vec::new();
    for acl in super::network_objects::ACLS.decl.store.list(state, at) {
        let rules = ["ingress", "egress"]
            .iter()
            .flat_map(|side| acl[*side].as_array().cloned().unwrap_or_default());
        let referenced = rules
            .into_iter()
            .any(|rule| names_it(&rule["source"]) || names_it(&rule["destination"]));
        if referenced {
            let name = acl["name"].as_str().unwrap_or_default();
            used.push(url(&format!("/1.0/network-acls/{name}"), &at.project));
        }
    }
    set["used_by"] = json!(used);
    set
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_daemons_rules_in_its_order() {
        for (name, why) in [
            (
                "",
                "Names must start and end with an alphanumeric character",
            ),
            ("a b", "Name cannot contain white space"),
            ("$x", "Name contains invalid character \"$\""),
            (
                "-x",
                "Names must start and end with an alphanumeric character",
            ),
            ("123", "Name cannot be a number"),
            (
                "a_b",
                "Name can only contain alphanumeric and hyphen characters",
            ),
        ] {
            assert_eq!(
                valid_name(name).map_err(|e| e.message),
                Err(why.to_string())
            );
        }
        assert!(valid_name("set-1").is_ok());
    }

    #[test]
    fn addresses_are_ips_subnets_and_short_ranges() {
        assert!(
            valid_addresses(&["10.0.0.1", "10.0.1.0/24", "fd00::1", "10.0.0.1-10.0.0.255"]).is_ok()
        );
        for (address, why) in [
            ("bogus", "Unsupported address format \"bogus\" at index 0"),
            ("10.0.0.1/33", "Unsupported address format \"10.0.0.1/33\" at index 0"),
            ("00:11:22:33:44:55", "Unsupported MAC address format \"00:11:22:33:44:55\" at index 0"),
            ("10.0.0.9-", "Unsupported address format \"10.0.0.9-\" at index 0: End not an IP address \"\""),
            (
                "10.0.0.1-10.0.2.1",
                "Unsupported address format \"10.0.0.1-10.0.2.1\" at index 0: IP range \"10.0.0.1-10.0.2.1\" contains more than 256 addresses, use CIDR notation instead",
            ),
            (
                "10.0.0.9-fd00::1",
                "Unsupported address format \"10.0.0.9-fd00::1\" at index 0: Start and end IP addresses are not in same family",
            ),
        ] {
            assert_eq!(valid_addresses(&[address]), Err(why.to_string()));
        }
        assert_eq!(
            valid_addresses(&["10.0.0.1", "10.0.0.1"]),
            Err("Duplicate address \"10.0.0.1\" found at index 1".to_string())
        );
    }
}
