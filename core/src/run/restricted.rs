//! What create and update may write into an instance without the host's say: an allowlist of
//! config keys and, per device type, of device keys, derived from Incus 6.0.4's own key lists
//! (`internal/instance/config.go` for instance config, the `validateConfig` of
//! `internal/server/device/{disk,nic,nic_bridged,...}.go` for devices). Anything else is a
//! restricted item, denied unless the host's `allow_restricted` callback says yes; a few keys are
//! guest code, which needs the caller's `incus.exec` scope as well.
//!
//! Config keys (exact names, case-sensitive as Incus compares them):
//! - plain: `boot.*`, `cluster.evacuate`, `agent.nic_config`, the `limits.*` of the instance's own
//!   CPU, memory, disk priority, processes and kernel rlimits, `migration.*`, `snapshots.*`, the
//!   VM firmware and protection keys (`security.csm`, `security.secureboot`, `security.iommu`,
//!   `security.sev*`, `security.agent.metrics`, `security.guestapi`,
//!   `security.protection.delete`, `security.protection.shift`), and the free-form families
//!   `environment.*`, `image.*`, `linux.sysctl.*` (namespaced inside the container) and `user.*`;
//! - guest code (plain, but needs `incus.exec`): `cloud-init.user-data`, `cloud-init.vendor-data`,
//!   `cloud-init.network-config`, `user.user-data`, `user.vendor-data`, `user.network-config`,
//!   `user.meta-data` (cloud-init runs them as root in the guest; meta-data carries `public-keys`)
//!   and `smbios11.*` (systemd credentials of a VM guest);
//! - restricted: everything else, among them the spec's `raw.*`, `volatile.*`,
//!   `security.privileged`, `security.idmap.*`, `security.syscalls.*`, `linux.kernel_modules`,
//!   and beyond it `security.nesting`, `security.guestapi.images`, `nvidia.*` (host driver files)
//!   and any key Incus does not know (a different casing included).
//!
//! Devices: a `nic` with a non-empty `network` and no keys but [`NIC_KEYS`], and a `disk` with a
//! non-empty `pool`, a `source` (when given) that names a volume (no host path: no leading `/`, no
//! `ceph:`/`cephfs:` scheme) and no keys but [`DISK_KEYS`], are plain. Every other device is
//! restricted: other types (`none` too, which hides a profile's device), a nic's
//! `nictype`/`parent`, `ipv4.routes*`, `ipv6.routes*`, `host_name`, `hwaddr`, `vlan*`,
//! `security.*`, `limits.*`, a disk's host path, `propagation`, `raw.mount.options`, `shift`,
//! `recursive`, `ceph.*`, and any key not listed.
//!
//! The same rule covers the profiles that create or update applies: their effective config and
//! devices (merged in the listed order, a later profile's key or device replacing an earlier one's,
//! and the input's own keys and devices replacing both, as Incus expands them) must pass it too.
use std::collections::HashMap;

use serde_json::{Map, Value};

use super::input::InstanceWrites;
use crate::host::RestrictedItem;

/// The keys a plain nic may carry (it attaches to a managed network of the project; Incus checks
/// `ipv4.address`/`ipv6.address` against that network's subnet).
pub(crate) const NIC_KEYS: &[&str] = &[
    "type",
    "network",
    "name",
    "ipv4.address",
    "ipv6.address",
    "mtu",
    "boot.priority",
    "queue.tx.length",
    "io.bus",
];

/// The keys a plain disk may carry (a volume of a storage pool, mounted at `path`).
pub(crate) const DISK_KEYS: &[&str] = &[
    "type",
    "pool",
    "source",
    "path",
    "readonly",
    "required",
    "optional",
    "size",
    "size.state",
    "boot.priority",
    "io.bus",
    "io.cache",
    "limits.read",
    "limits.write",
    "limits.max",
];

/// Instance config keys that stay inside the instance's sandbox (exact names).
const PLAIN_KEYS: &[&str] = &[
    "agent.nic_config",
    "boot.autorestart",
    "boot.autostart",
    "boot.autostart.delay",
    "boot.autostart.priority",
    "boot.host_shutdown_action",
    "boot.host_shutdown_timeout",
    "boot.stop.priority",
    "cluster.evacuate",
    "limits.cpu",
    "limits.cpu.allowance",
    "limits.cpu.nodes",
    "limits.cpu.priority",
    "limits.disk.priority",
    "limits.memory",
    "limits.memory.enforce",
    "limits.memory.hugepages",
    "limits.memory.swap",
    "limits.memory.swap.priority",
    "limits.processes",
    "migration.incremental.memory",
    "migration.incremental.memory.goal",
    "migration.incremental.memory.iterations",
    "migration.stateful",
    "security.agent.metrics",
    "security.csm",
    "security.guestapi",
    "security.iommu",
    "security.protection.delete",
    "security.protection.shift",
    "security.secureboot",
    "security.sev",
    "security.sev.policy.es",
    "security.sev.session.data",
    "security.sev.session.dh",
    "snapshots.expiry",
    "snapshots.pattern",
    "snapshots.schedule",
    "snapshots.schedule.stopped",
];

/// Free-form key families that stay inside the sandbox (a key must be longer than the prefix).
const PLAIN_PREFIXES: &[&str] = &[
    "environment.",
    "image.",
    "limits.kernel.",
    "linux.sysctl.",
    "user.",
];

/// Keys whose value the guest runs or trusts as root: they need `incus.exec` as well.
const GUEST_CODE_KEYS: &[&str] = &[
    "cloud-init.network-config",
    "cloud-init.user-data",
    "cloud-init.vendor-data",
    "user.meta-data",
    "user.network-config",
    "user.user-data",
    "user.vendor-data",
];

/// Key families whose value the guest runs or trusts (`smbios11.*`: systemd credentials of a VM).
const GUEST_CODE_PREFIXES: &[&str] = &["smbios11."];

/// What the rule makes of one config key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KeyClass {
    /// Inside the sandbox.
    Plain,
    /// Runs in the guest: needs `incus.exec`.
    GuestCode,
    /// Reaches past the sandbox, or unknown: needs the host's yes.
    Restricted,
}

/// The class of a config key.
pub(crate) fn key_class(key: &str) -> KeyClass {
    let family = |prefixes: &[&str]| {
        prefixes
            .iter()
            .any(|prefix| key.len() > prefix.len() && key.starts_with(prefix))
    };
    if GUEST_CODE_KEYS.contains(&key) || family(GUEST_CODE_PREFIXES) {
        KeyClass::GuestCode
    } else if PLAIN_KEYS.contains(&key) || family(PLAIN_PREFIXES) {
        KeyClass::Plain
    } else {
        KeyClass::Restricted
    }
}

/// What one scan of config and devices found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Findings {
    /// Restricted items, config keys first, each in input order.
    pub(crate) restricted: Vec<RestrictedItem>,
    /// Guest-code config keys, in input order.
    pub(crate) guest_code: Vec<String>,
}

impl Findings {
    /// Scans a config map and a device map.
    pub(crate) fn of(
        config: Option<&Map<String, Value>>,
        devices: Option<&Map<String, Value>>,
    ) -> Self {
        let mut found = Findings::default();
        for (key, value) in config.into_iter().flatten() {
            match key_class(key) {
                KeyClass::Plain => {}
                KeyClass::GuestCode => found.guest_code.push(key.clone()),
                KeyClass::Restricted => found
                    .restricted
                    .push(RestrictedItem::config_key(key.clone(), value.clone())),
            }
        }
        for (name, device) in devices.into_iter().flatten() {
            if !device.as_object().is_some_and(is_plain_device) {
                found
                    .restricted
                    .push(RestrictedItem::device(name.clone(), device.clone()));
            }
        }
        found
    }

    /// Scans what a create or update writes.
    pub(crate) fn of_writes(writes: InstanceWrites<'_>) -> Self {
        Findings::of(writes.config, writes.devices)
    }

    /// Whether nothing was found.
    pub(crate) fn is_empty(&self) -> bool {
        self.restricted.is_empty() && self.guest_code.is_empty()
    }
}

/// The restricted items of create or update input, in input order.
#[cfg(test)]
pub(crate) fn restricted_items(input: &Value) -> Vec<RestrictedItem> {
    let map = |field: &str| input.get(field).and_then(Value::as_object);
    Findings::of(map("config"), map("devices")).restricted
}

/// What the profiles a call applies bring into the instance: their effective config and devices,
/// without the keys and devices that the input sets itself (the input check saw those, and they
/// replace the profiles' ones), with a map from each config key and device name to the profile it
/// comes from.
pub(crate) fn profile_findings(
    profiles: &[(String, Value)],
    input: InstanceWrites<'_>,
) -> (Findings, HashMap<String, String>) {
    // Each key and device with its value and the profile it came from; a later profile replaces.
    let mut config: Map<String, Value> = Map::new();
    let mut devices: Map<String, Value> = Map::new();
    let mut config_from: HashMap<String, String> = HashMap::new();
    let mut device_from: HashMap<String, String> = HashMap::new();
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
            config_from.insert(key.clone(), profile.clone());
        }
        for (name, device) in fields("devices") {
            devices.insert(name.clone(), device.clone());
            device_from.insert(name.clone(), profile.clone());
        }
    }
    for key in input.config.into_iter().flat_map(Map::keys) {
        config.remove(key);
    }
    for name in input.devices.into_iter().flat_map(Map::keys) {
        devices.remove(name);
    }
    let found = Findings::of(Some(&config), Some(&devices));
    let mut from = HashMap::new();
    for item in &found.restricted {
        let (key, origin) = match item {
            RestrictedItem::ConfigKey { key, .. } => (key, config_from.get(key)),
            RestrictedItem::Device { name, .. } => (name, device_from.get(name)),
        };
        from.insert(key.clone(), origin.cloned().unwrap_or_default());
    }
    for key in &found.guest_code {
        from.insert(
            key.clone(),
            config_from.get(key).cloned().unwrap_or_default(),
        );
    }
    (found, from)
}

/// A disk on a pool whose source names a volume, or a nic on a managed network, with no keys
/// beyond its type's allowlist.
fn is_plain_device(device: &Map<String, Value>) -> bool {
    let text = |key: &str| device.get(key).and_then(Value::as_str);
    let non_empty = |key: &str| text(key).is_some_and(|v| !v.is_empty());
    let only = |allowed: &[&str]| device.keys().all(|key| allowed.contains(&key.as_str()));
    match text("type") {
        Some("disk") => {
            let volume_source = match device.get("source") {
                None | Some(Value::Null) => true,
                Some(Value::String(source)) => is_volume_name(source),
                Some(_) => false,
            };
            non_empty("pool") && volume_source && only(DISK_KEYS)
        }
        Some("nic") => non_empty("network") && only(NIC_KEYS),
        _ => false,
    }
}

/// A disk `source` that names a volume of the disk's pool: not a host path, not a Ceph URI.
fn is_volume_name(source: &str) -> bool {
    !source.starts_with('/') && !source.contains(':')
}

/// A short description of one restricted item for an error message (values are not repeated).
pub(crate) fn describe_item(item: &RestrictedItem) -> String {
    match item {
        RestrictedItem::ConfigKey { key, .. } => format!("config key {key:?}"),
        RestrictedItem::Device { name, .. } => {
            let device_type = item.device_type().unwrap_or_default();
            format!("device {name:?} of type {device_type:?}")
        }
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (what create and update may write into an
    //! instance without the host's say); a promise of the whole `run()` or of the client against a
    //! fake Incus, seen through the public API, goes in `tests/integration`.

    use serde_json::json;

    use super::super::input::Update;
    use super::*;

    fn update(input: Value) -> Update {
        serde_json::from_value(input).unwrap()
    }

    fn names(items: &[RestrictedItem]) -> Vec<String> {
        items
            .iter()
            .map(|item| match item {
                RestrictedItem::Device { name, .. } => name.clone(),
                RestrictedItem::ConfigKey { key, .. } => key.clone(),
            })
            .collect()
    }

    #[test]
    fn profiles_are_checked_as_incus_expands_them() {
        let profiles = vec![
            (
                "base".to_owned(),
                json!({"config": {"raw.lxc": "x", "limits.cpu": "1", "cloud-init.user-data": "#!/bin/sh"},
                       "devices": {"data": {"type": "disk", "source": "/srv", "path": "/srv"},
                                   "eth0": {"type": "nic", "nictype": "bridged", "parent": "br0"}}}),
            ),
            (
                "later".to_owned(),
                json!({"config": {"security.privileged": "true"},
                       "devices": {"eth0": {"type": "nic", "network": "incusbr0"}}}),
            ),
        ];
        let (found, from) = profile_findings(&profiles, update(json!({"name": "web"})).writes());
        assert_eq!(
            found.restricted,
            [
                RestrictedItem::config_key("raw.lxc", json!("x")),
                RestrictedItem::config_key("security.privileged", json!("true")),
                RestrictedItem::device(
                    "data",
                    json!({"type": "disk", "source": "/srv", "path": "/srv"})
                ),
            ]
        );
        assert_eq!(found.guest_code, ["cloud-init.user-data"]);
        assert_eq!(from["raw.lxc"], "base");
        assert_eq!(from["security.privileged"], "later");
        assert_eq!(from["data"], "base");
        // The input's own device and key replace the profile's.
        let own = update(json!({
            "name": "web",
            "config": {"cloud-init.user-data": "#cloud-config"},
            "devices": {"data": {"type": "disk", "pool": "default", "path": "/srv"}}
        }));
        let (found, _) = profile_findings(&profiles, own.writes());
        assert_eq!(found.restricted.len(), 2, "{found:?}");
        assert!(found.guest_code.is_empty());
    }

    #[test]
    fn config_keys_are_classified_by_incus_key_lists() {
        for key in [
            "raw.lxc",
            "volatile.base_image",
            "security.privileged",
            "security.idmap.isolated",
            "security.syscalls.intercept.mount",
            "linux.kernel_modules",
            "security.nesting",
            "security.guestapi.images",
            "nvidia.runtime",
            "RAW.lxc",
            "Limits.cpu",
            "no.such.key",
            "user.",
            "",
        ] {
            assert_eq!(key_class(key), KeyClass::Restricted, "{key}");
        }
        for key in [
            "limits.cpu",
            "limits.kernel.nofile",
            "user.foo",
            "linux.sysctl.net.ipv4.ip_forward",
            "environment.HOME",
            "snapshots.schedule",
            "boot.autostart",
        ] {
            assert_eq!(key_class(key), KeyClass::Plain, "{key}");
        }
        for key in [
            "cloud-init.user-data",
            "cloud-init.vendor-data",
            "cloud-init.network-config",
            "user.user-data",
            "user.vendor-data",
            "user.meta-data",
            "user.network-config",
            "smbios11.io.systemd.credential:ssh.authorized_keys.root",
        ] {
            assert_eq!(key_class(key), KeyClass::GuestCode, "{key}");
        }
    }

    #[test]
    fn devices_are_checked_key_by_key() {
        let input = json!({"devices": {
            "root": {"type": "disk", "pool": "default", "path": "/", "size": "10GiB"},
            "data": {"type": "disk", "pool": "default", "source": "vol1", "path": "/data", "readonly": "true"},
            "host": {"type": "disk", "pool": "default", "source": "/etc", "path": "/mnt"},
            "ceph": {"type": "disk", "pool": "default", "source": "ceph:pool/vol", "path": "/mnt"},
            "prop": {"type": "disk", "pool": "default", "source": "vol1", "path": "/p", "propagation": "shared"},
            "nopool": {"type": "disk", "source": "/srv", "path": "/srv"},
            "eth0": {"type": "nic", "network": "incusbr0", "name": "eth0", "ipv4.address": "10.0.0.5"},
            "routes": {"type": "nic", "network": "incusbr0", "ipv4.routes": "0.0.0.0/1"},
            "external": {"type": "nic", "network": "incusbr0", "ipv6.routes.external": "::/1"},
            "hostname": {"type": "nic", "network": "incusbr0", "host_name": "eth0"},
            "mac": {"type": "nic", "network": "incusbr0", "hwaddr": "00:16:3e:00:00:01"},
            "vlan": {"type": "nic", "network": "incusbr0", "vlan": "10"},
            "filter": {"type": "nic", "network": "incusbr0", "security.ipv4_filtering": "false"},
            "limits": {"type": "nic", "network": "incusbr0", "limits.max": "1Gbit"},
            "macvlan": {"type": "nic", "network": "incusbr0", "nictype": "macvlan"},
            "bridged": {"type": "nic", "nictype": "bridged", "parent": "br0"},
            "none": {"type": "none"},
            "gpu": {"type": "gpu"},
            "untyped": {},
            "string": "disk"
        }});
        let items = restricted_items(&input);
        assert_eq!(
            names(&items),
            [
                "host", "ceph", "prop", "nopool", "routes", "external", "hostname", "mac", "vlan",
                "filter", "limits", "macvlan", "bridged", "none", "gpu", "untyped", "string"
            ]
        );
        // Each device carries its whole config, so a host can allow one exact value.
        assert_eq!(
            items[0],
            RestrictedItem::device(
                "host",
                json!({"type": "disk", "pool": "default", "source": "/etc", "path": "/mnt"})
            )
        );
        assert_eq!(items[16].device_type(), Some(""));
    }
}
