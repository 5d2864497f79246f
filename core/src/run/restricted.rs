//! Restricted create and update input: config keys and devices that reach past the instance's
//! own sandbox. They are denied unless the host's `allow_restricted` callback says yes.
//!
//! Restricted config keys: `raw.*`, `volatile.*`, `security.privileged`, `security.idmap.*`,
//! `security.syscalls.*` and `linux.kernel_modules` (compared case-insensitively, so a key
//! Incus would reject anyway is not let through on a technicality).
//! Every device is restricted except a `disk` with a `pool` and no host-path `source`, and a `nic`
//! with a `network` and neither `nictype` nor `parent`.
//!
//! The same rule covers the profiles that create or update input names: their effective config and
//! devices (merged in the listed order, a later profile's key or device replacing an earlier one's,
//! and the input's own keys and devices replacing both, as Incus expands them) must pass it too.
use std::collections::HashMap;

use serde_json::{json, Map, Value};

use super::input::InstanceWrites;
use crate::host::RestrictedItem;

/// The restricted items of create or update input, in input order.
pub(crate) fn restricted_items(input: &Value) -> Vec<RestrictedItem> {
    let mut items = Vec::new();
    if let Some(config) = input.get("config").and_then(Value::as_object) {
        items.extend(
            config
                .keys()
                .filter(|key| is_restricted_key(key))
                .map(|key| RestrictedItem::ConfigKey(key.clone())),
        );
    }
    if let Some(devices) = input.get("devices").and_then(Value::as_object) {
        items.extend(devices.iter().filter_map(|(name, device)| {
            let device = device.as_object();
            if device.is_some_and(is_plain_device) {
                return None;
            }
            let device_type = device
                .and_then(|d| d.get("type"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            Some(RestrictedItem::Device {
                name: name.clone(),
                device_type: device_type.to_owned(),
            })
        }));
    }
    items
}

/// The restricted items that the named profiles bring into the instance, each with the profile it
/// comes from: the profiles' effective config and devices, without the keys and devices that the
/// input sets itself (the input check saw those, and they replace the profiles' ones).
pub(crate) fn profile_items(
    profiles: &[(String, Value)],
    input: &InstanceWrites,
) -> Vec<(String, RestrictedItem)> {
    // Each key and device with its value and the profile it came from; a later profile replaces.
    let mut config: Map<String, Value> = Map::new();
    let mut devices: Map<String, Value> = Map::new();
    let mut config_from: HashMap<&str, &str> = HashMap::new();
    let mut device_from: HashMap<&str, &str> = HashMap::new();
    for (profile, object) in profiles {
        let fields = |key: &str| {
            object
                .get(key)
                .and_then(Value::as_object)
                .into_iter()
                .flatten()
        };
        for (key, value) in fields("config") {
            config.insert(key.clone(), value.clone());
            config_from.insert(key, profile);
        }
        for (name, device) in fields("devices") {
            devices.insert(name.clone(), device.clone());
            device_from.insert(name, profile);
        }
    }
    for key in input.config.iter().flat_map(Map::keys) {
        config.remove(key);
    }
    for name in input.devices.iter().flat_map(Map::keys) {
        devices.remove(name);
    }
    let effective = json!({"config": config, "devices": devices});
    restricted_items(&effective)
        .into_iter()
        .map(|item| {
            let profile = match &item {
                RestrictedItem::ConfigKey(key) => config_from.get(key.as_str()),
                RestrictedItem::Device { name, .. } => device_from.get(name.as_str()),
            };
            (profile.copied().unwrap_or_default().to_owned(), item)
        })
        .collect()
}

/// Whether a config key is restricted.
pub(crate) fn is_restricted_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    const PREFIXES: [&str; 5] = [
        "raw.",
        "volatile.",
        "security.idmap.",
        "security.syscalls.",
        "linux.kernel_modules.",
    ];
    const EXACT: [&str; 2] = ["security.privileged", "linux.kernel_modules"];
    EXACT.contains(&key.as_str()) || PREFIXES.iter().any(|prefix| key.starts_with(prefix))
}

/// A disk on a pool without a host-path source, or a nic on a managed network without
/// `nictype` or `parent`.
fn is_plain_device(device: &Map<String, Value>) -> bool {
    let text = |key: &str| device.get(key).and_then(Value::as_str);
    let present = |key: &str| device.get(key).is_some_and(|v| !v.is_null());
    let non_empty = |key: &str| text(key).is_some_and(|v| !v.is_empty());
    match text("type") {
        Some("disk") => {
            let volume_source = match device.get("source") {
                None | Some(Value::Null) => true,
                Some(Value::String(source)) => !source.starts_with('/'),
                Some(_) => false,
            };
            non_empty("pool") && volume_source
        }
        Some("nic") => non_empty("network") && !present("nictype") && !present("parent"),
        _ => false,
    }
}

/// A short description of restricted items for an error message.
pub(crate) fn describe(items: &[RestrictedItem]) -> String {
    items
        .iter()
        .map(|item| match item {
            RestrictedItem::ConfigKey(key) => format!("config key {key:?}"),
            RestrictedItem::Device { name, device_type } => {
                format!("device {name:?} of type {device_type:?}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn writes(input: Value) -> InstanceWrites {
        serde_json::from_value(input).unwrap()
    }

    #[test]
    fn profiles_are_checked_as_incus_expands_them() {
        let profiles = vec![
            (
                "base".to_owned(),
                json!({"config": {"raw.lxc": "x", "limits.cpu": "1"},
                       "devices": {"data": {"type": "disk", "source": "/srv", "path": "/srv"},
                                   "eth0": {"type": "nic", "nictype": "bridged", "parent": "br0"}}}),
            ),
            (
                "later".to_owned(),
                json!({"config": {"security.privileged": "true"},
                       "devices": {"eth0": {"type": "nic", "network": "incusbr0"}}}),
            ),
        ];
        let found = profile_items(&profiles, &writes(json!({})));
        assert_eq!(
            found,
            [
                (
                    "base".to_owned(),
                    RestrictedItem::ConfigKey("raw.lxc".into())
                ),
                (
                    "later".to_owned(),
                    RestrictedItem::ConfigKey("security.privileged".into())
                ),
                (
                    "base".to_owned(),
                    RestrictedItem::Device {
                        name: "data".into(),
                        device_type: "disk".into()
                    }
                ),
            ]
        );
        // The input's own device replaces the profile's host-path disk.
        let own = writes(
            json!({"devices": {"data": {"type": "disk", "pool": "default", "path": "/srv"}}}),
        );
        let found = profile_items(&profiles, &own);
        assert_eq!(found.len(), 2, "{found:?}");
    }

    #[test]
    fn restricted_config_keys_are_found() {
        for key in [
            "raw.lxc",
            "volatile.base_image",
            "security.privileged",
            "security.idmap.isolated",
            "security.syscalls.intercept.mount",
            "linux.kernel_modules",
            "RAW.lxc",
        ] {
            assert!(is_restricted_key(key), "{key}");
        }
        for key in [
            "limits.cpu",
            "security.nesting",
            "user.foo",
            "rawx",
            "linux.sysctl.x",
        ] {
            assert!(!is_restricted_key(key), "{key}");
        }
    }

    #[test]
    fn only_pool_disks_and_network_nics_are_plain() {
        let input = json!({"devices": {
            "root": {"type": "disk", "pool": "default", "path": "/"},
            "data": {"type": "disk", "pool": "default", "source": "vol1", "path": "/data"},
            "host": {"type": "disk", "pool": "default", "source": "/etc", "path": "/mnt"},
            "nopool": {"type": "disk", "source": "/srv", "path": "/srv"},
            "eth0": {"type": "nic", "network": "incusbr0"},
            "macvlan": {"type": "nic", "network": "incusbr0", "nictype": "macvlan"},
            "bridged": {"type": "nic", "nictype": "bridged", "parent": "br0"},
            "parent": {"type": "nic", "network": "incusbr0", "parent": "eth0"},
            "gpu": {"type": "gpu"},
            "untyped": {}
        }});
        let names: Vec<String> = restricted_items(&input)
            .into_iter()
            .map(|item| match item {
                RestrictedItem::Device { name, .. } => name,
                RestrictedItem::ConfigKey(key) => key,
            })
            .collect();
        assert_eq!(
            names,
            ["host", "nopool", "macvlan", "bridged", "parent", "gpu", "untyped"]
        );
    }
}
