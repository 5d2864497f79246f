//! What create, update and restore may write into an instance without the host's say: every
//! config key judged by its class and its value ([`keys`], [`values`]), every device by its name,
//! its type and each field's value. What fails is refused or handed to the host:
//!
//! - in the caller's input ([`Origin::Input`]), a value outside its rule (a malformed or hostile
//!   value, a device name 7.0 refuses) is `invalid_input`, with a pointer to it;
//! - in what the call applies ([`Origin::Applied`]: the profiles, a snapshot being restored), the
//!   same value is a restricted item with the reason, since the caller did not write it;
//! - a restricted key (`raw.*`, `volatile.*`, `security.privileged`, unknown keys, ...), a
//!   host-impact value past its bound, a device of another type than a pool disk or a nic on a
//!   network, a device field outside its type's list, a disk's host path or Ceph source: a
//!   restricted item, for the host's `allow_restricted`, which sees its value;
//! - guest-code and secret keys need the caller's `incus.exec` as well.
//!
//! Besides, a scan collects what only Incus can tell ([`Findings::gated`]: keys and fields that
//! need an API extension the server may not report; [`Findings::nics`]: the networks plain nics
//! attach to), which the check after discovery reads.
//!
//! Profiles are checked as Incus expands them: merged in the listed order, a later profile's key or
//! device replacing an earlier one's, and the call's own keys and devices replacing both.
use std::collections::HashMap;

use serde_json::{Map, Value};

use super::input::InstanceWrites;
use super::keys::{self, Class};
use super::values::{self, Frequency, Reach};
use crate::host::RestrictedItem;

/// The longest expiry (seconds) a schedule that fires more than once an hour may keep its
/// snapshots: one day.
pub(crate) const FREQUENT_EXPIRY_MAX: u64 = 86_400;

/// Who wrote the config and devices being judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Origin {
    /// The caller's input: a value outside its rule is `invalid_input`.
    Input,
    /// What the call applies (profiles, a snapshot): a value outside its rule is restricted.
    Applied,
}

/// A restricted item and, when its kind alone does not say it, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Restricted {
    pub(crate) item: RestrictedItem,
    pub(crate) why: Option<String>,
}

/// A value of the input outside its rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Invalid {
    pub(crate) pointer: String,
    pub(crate) message: String,
}

/// An item that is plain only where the server reports an API extension.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Gated {
    pub(crate) item: RestrictedItem,
    pub(crate) extension: &'static str,
}

/// A plain nic, whose network must be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Nic {
    pub(crate) name: String,
    pub(crate) network: String,
    pub(crate) device: Value,
}

/// What one scan of config and devices found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Findings {
    /// Restricted items, config keys first, each in order.
    pub(crate) restricted: Vec<Restricted>,
    /// Guest-code and secret config keys, in order.
    pub(crate) guest_code: Vec<String>,
    /// Values of the input outside their rules.
    pub(crate) invalid: Vec<Invalid>,
    /// Items that need an API extension.
    pub(crate) gated: Vec<Gated>,
    /// Plain nics and the networks they name.
    pub(crate) nics: Vec<Nic>,
}

/// A JSON pointer token (RFC 6901).
fn token(text: &str) -> String {
    text.replace('~', "~0").replace('/', "~1")
}

impl Findings {
    /// Scans a config map and a device map written by `origin`.
    pub(crate) fn scan(
        config: Option<&Map<String, Value>>,
        devices: Option<&Map<String, Value>>,
        origin: Origin,
    ) -> Self {
        let mut found = Findings::default();
        for (key, value) in config.into_iter().flatten() {
            found.config_key(key, value, origin);
        }
        for (name, device) in devices.into_iter().flatten() {
            found.device(name, device, origin);
        }
        found
    }

    /// Scans what a create or update writes.
    pub(crate) fn of_writes(writes: InstanceWrites<'_>) -> Self {
        let mut found = Findings::scan(writes.config, writes.devices, Origin::Input);
        if let Some(config) = writes.config {
            if let Some((key, why)) = schedule_reach(config, true) {
                found.restrict_key(&key, config.get(&key), Some(why));
            }
        }
        found
    }

    /// Whether nothing was found that needs a decision (gated items and nics are for later).
    pub(crate) fn is_empty(&self) -> bool {
        self.restricted.is_empty() && self.guest_code.is_empty() && self.invalid.is_empty()
    }

    /// Adds another scan's findings.
    pub(crate) fn extend(&mut self, other: Findings) {
        self.restricted.extend(other.restricted);
        self.guest_code.extend(other.guest_code);
        self.invalid.extend(other.invalid);
        self.gated.extend(other.gated);
        self.nics.extend(other.nics);
    }

    fn restrict_key(&mut self, key: &str, value: Option<&Value>, why: Option<String>) {
        let value = value.cloned().unwrap_or(Value::Null);
        self.restricted.push(Restricted {
            item: RestrictedItem::config_key(key, value),
            why,
        });
    }

    fn restrict_device(&mut self, name: &str, device: &Value, why: Option<String>) {
        self.restricted.push(Restricted {
            item: RestrictedItem::device(name, device.clone()),
            why,
        });
    }

    /// A value outside its rule: invalid input, or restricted when applied.
    fn outside(
        &mut self,
        origin: Origin,
        pointer: String,
        message: String,
        restrict: impl FnOnce(&mut Self, String),
    ) {
        match origin {
            Origin::Input => self.invalid.push(Invalid { pointer, message }),
            Origin::Applied => restrict(self, message),
        }
    }

    fn config_key(&mut self, key: &str, value: &Value, origin: Origin) {
        let pointer = format!("/config/{}", token(key));
        if let Err(why) = values::key_name(key) {
            let restrict = |found: &mut Self, why| found.restrict_key(key, Some(value), Some(why));
            return self.outside(origin, pointer, why, restrict);
        }
        let Some(spec) = keys::lookup(key) else {
            return self.restrict_key(key, Some(value), None);
        };
        let (rule, bound) = match spec.class {
            Class::Restricted => return self.restrict_key(key, Some(value), None),
            Class::Plain(rule) => (rule, None),
            Class::HostImpact(rule, bound) => (rule, Some(bound)),
            Class::GuestCode(rule) | Class::Secret(rule) => {
                self.guest_code.push(key.to_owned());
                (rule, None)
            }
        };
        let Some(text) = value.as_str() else {
            let why = format!("config key {key:?} has a value that is not a string");
            let restrict = |found: &mut Self, why| found.restrict_key(key, Some(value), Some(why));
            return self.outside(origin, pointer, why, restrict);
        };
        // An empty value unsets the key (every rule is optional in Incus).
        if !text.is_empty() {
            if let Err(expected) = rule.check(text) {
                let why = format!("config key {key:?}: {text:?} is not {expected}");
                let restrict =
                    |found: &mut Self, why| found.restrict_key(key, Some(value), Some(why));
                return self.outside(origin, pointer, why, restrict);
            }
            if let Some(Reach::Beyond(why)) = bound.map(|bound| bound.reach(key, text)) {
                return self.restrict_key(key, Some(value), Some(why));
            }
        }
        if let Some(extension) = spec.since {
            self.gated.push(Gated {
                item: RestrictedItem::config_key(key, value.clone()),
                extension,
            });
        }
    }

    fn device(&mut self, name: &str, device: &Value, origin: Origin) {
        let pointer = format!("/devices/{}", token(name));
        if let Err(why) = values::device_name(name) {
            let restrict = |found: &mut Self, why| found.restrict_device(name, device, Some(why));
            return self.outside(origin, pointer, why, restrict);
        }
        let Some(config) = device.as_object() else {
            return self.restrict_device(name, device, None);
        };
        let text = |key: &str| config.get(key).and_then(Value::as_str);
        let device_type = text("type").unwrap_or_default();
        let Some(fields) = keys::device_fields(device_type) else {
            return self.restrict_device(name, device, None);
        };
        let spec_of = |key: &str| fields.iter().find(|spec| spec.field == key);
        let required = if device_type == "nic" {
            "network"
        } else {
            "pool"
        };
        let host_source = device_type == "disk"
            && text("source").is_some_and(|source| source.starts_with('/') || source.contains(':'));
        let plain_shape = config.keys().all(|key| spec_of(key).is_some())
            && text(required).is_some_and(|value| !value.is_empty())
            && !host_source;
        if !plain_shape {
            return self.restrict_device(name, device, None);
        }
        let mut extensions = Vec::new();
        for (key, value) in config {
            let Some(spec) = spec_of(key) else { continue };
            let checked = match value.as_str() {
                Some("") => Ok(()),
                Some(text) => spec.rule.check(text),
                None => Err("a string".into()),
            };
            if let Err(expected) = checked {
                let why = format!("device {name:?} field {key:?}: {value} is not {expected}");
                let restrict =
                    |found: &mut Self, why| found.restrict_device(name, device, Some(why));
                return self.outside(origin, format!("{pointer}/{}", token(key)), why, restrict);
            }
            if let Some(extension) = spec.since {
                if !extensions.contains(&extension) {
                    extensions.push(extension);
                }
            }
        }
        for extension in extensions {
            self.gated.push(Gated {
                item: RestrictedItem::device(name, device.clone()),
                extension,
            });
        }
        if device_type == "nic" {
            self.nics.push(Nic {
                name: name.to_owned(),
                network: text("network").unwrap_or_default().to_owned(),
                device: device.clone(),
            });
        }
    }
}

/// Whether a config's snapshot schedule reaches past the instance: one that fires more than once
/// an hour with no expiry, or an expiry longer than [`FREQUENT_EXPIRY_MAX`] (a snapshot every
/// minute, kept forever, fills the host's pool). With `stated`, the config is one write's: an
/// expiry removed (`""`) or raised past [`FREQUENT_EXPIRY_MAX`] without the schedule stated in the
/// same write counts too, since the instance's schedule is not known. The key to restrict and why.
pub(crate) fn schedule_reach(
    config: &Map<String, Value>,
    stated: bool,
) -> Option<(String, String)> {
    let text = |key: &str| config.get(key).and_then(Value::as_str);
    let expiry = text("snapshots.expiry");
    match text("snapshots.schedule") {
        Some(schedule) => {
            if values::schedule(schedule) != Ok(Frequency::Frequent) {
                return None;
            }
            let kept = expiry.map(values::expiry);
            match kept {
                Some(Ok(Some(seconds))) if seconds > 0 && seconds <= FREQUENT_EXPIRY_MAX => None,
                // A malformed expiry is judged by its own rule.
                Some(Err(_)) => None,
                _ => Some((
                    "snapshots.schedule".into(),
                    format!(
                        "snapshots.schedule {schedule:?} can fire more than once an hour: it needs snapshots.expiry of at most 1d in the same write"
                    ),
                )),
            }
        }
        None if stated && expiry == Some("") => Some((
            "snapshots.expiry".into(),
            "removing snapshots.expiry needs snapshots.schedule, empty or at most hourly, in the same write".into(),
        )),
        // Raised past the bound behind a schedule this write does not state (the instance's own
        // or a profile's may fire every minute): the same state as removing it.
        None if stated
            && expiry
                .map(values::expiry)
                .is_some_and(|kept| matches!(kept, Ok(Some(seconds)) if seconds > FREQUENT_EXPIRY_MAX)) =>
        {
            Some((
                "snapshots.expiry".into(),
                format!(
                    "snapshots.expiry {:?} past 1d needs snapshots.schedule, empty or at most hourly, in the same write",
                    expiry.unwrap_or_default()
                ),
            ))
        }
        None => None,
    }
}

/// What the profiles a call applies bring into the instance: their effective config and devices,
/// without the keys and devices that `own` sets itself (judged on their own, and they replace the
/// profiles' ones; a key `own` sets to `""` is unset, so the profile's value applies and is
/// judged), with a map from each config key and device name to the profile it comes from. Also
/// the merged config of the profiles and `own`, as Incus expands it.
pub(crate) fn profile_findings(
    profiles: &[(String, Value)],
    own: InstanceWrites<'_>,
) -> (Findings, HashMap<String, String>, Map<String, Value>) {
    let mut config: Map<String, Value> = Map::new();
    let mut devices: Map<String, Value> = Map::new();
    let mut from: HashMap<String, String> = HashMap::new();
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
            from.insert(key.clone(), profile.clone());
        }
        for (name, device) in fields("devices") {
            devices.insert(name.clone(), device.clone());
            from.insert(name.clone(), profile.clone());
        }
    }
    let mut merged = config.clone();
    for (key, value) in own.config.into_iter().flatten() {
        // An empty value unsets the instance's own key: Incus stores no empty value
        // (`CreateConfig`: "An empty value means we are unsetting this key"), so the profile's
        // value is the one that applies, and stays judged.
        if value.as_str() == Some("") {
            continue;
        }
        config.remove(key);
        from.remove(key);
        merged.insert(key.clone(), value.clone());
    }
    for name in own.devices.into_iter().flat_map(Map::keys) {
        devices.remove(name);
    }
    let found = Findings::scan(Some(&config), Some(&devices), Origin::Applied);
    (found, from, merged)
}

/// The restricted items of create or update input, in input order.
#[cfg(test)]
pub(crate) fn restricted_items(input: &Value) -> Vec<RestrictedItem> {
    let map = |field: &str| input.get(field).and_then(Value::as_object);
    Findings::scan(map("config"), map("devices"), Origin::Input)
        .restricted
        .into_iter()
        .map(|found| found.item)
        .collect()
}

/// A short description of one restricted item for an error message (values are not repeated,
/// except in `why`, which names the value that reaches too far).
pub(crate) fn describe(found: &Restricted) -> String {
    let kind = match &found.item {
        RestrictedItem::ConfigKey { key, .. } => format!("config key {key:?}"),
        item @ RestrictedItem::Device { name, .. } => {
            let device_type = item.device_type().unwrap_or_default();
            format!("device {name:?} of type {device_type:?}")
        }
    };
    match &found.why {
        Some(why) => format!("{kind} ({why})"),
        None => kind,
    }
}

/// The name a restricted item is known by (a config key or a device name).
pub(crate) fn item_name(item: &RestrictedItem) -> &str {
    match item {
        RestrictedItem::ConfigKey { key, .. } => key,
        RestrictedItem::Device { name, .. } => name,
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
        let (found, from, _) = profile_findings(&profiles, update(json!({"name": "web"})).writes());
        let items: Vec<RestrictedItem> = found.restricted.iter().map(|r| r.item.clone()).collect();
        assert_eq!(
            items,
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
        let (found, _, merged) = profile_findings(&profiles, own.writes());
        assert_eq!(merged["cloud-init.user-data"], "#cloud-config");
        assert_eq!(found.restricted.len(), 2, "{found:?}");
        assert!(found.guest_code.is_empty());
        // An empty value unsets the call's own key: the profile's value applies, and is judged.
        let unset = update(json!({"name": "web", "config": {"security.privileged": ""}}));
        let (found, _, merged) = profile_findings(&profiles, unset.writes());
        assert_eq!(merged["security.privileged"], "true");
        assert!(found
            .restricted
            .iter()
            .any(|r| r.item == RestrictedItem::config_key("security.privileged", json!("true"))));
    }

    fn class(key: &str, value: &str) -> &'static str {
        let config = json!({ key: value });
        let found = Findings::of_writes(InstanceWrites {
            config: config.as_object(),
            devices: None,
            profiles: None,
        });
        if !found.invalid.is_empty() {
            "invalid"
        } else if !found.restricted.is_empty() {
            "restricted"
        } else if !found.guest_code.is_empty() {
            "guest-code"
        } else {
            "plain"
        }
    }

    #[test]
    fn config_keys_are_classified_by_name_and_value() {
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
            "limits.kernel.no_such_limit",
        ] {
            assert_eq!(class(key, "1"), "restricted", "{key}");
        }
        for (key, value) in [
            ("limits.cpu", "1"),
            ("limits.kernel.nofile", "1024:4096"),
            ("limits.kernel.stack", "unlimited"),
            ("user.foo", "anything\n at all"),
            ("linux.sysctl.net.ipv4.ip_forward", "1"),
            ("snapshots.schedule", "@daily"),
            ("snapshots.schedule", "*/5 * * * *"),
            ("boot.autostart", "true"),
            ("boot.host_shutdown_timeout", "300"),
        ] {
            let expected = if key == "snapshots.schedule" && value.contains('*') {
                "restricted"
            } else {
                "plain"
            };
            assert_eq!(class(key, value), expected, "{key}={value}");
        }
        for (key, value) in [
            ("limits.kernel.rtprio", "99"),
            ("limits.kernel.memlock", "unlimited"),
            ("boot.host_shutdown_timeout", "2147483647"),
            ("boot.host_shutdown_timeout", "-1"),
        ] {
            assert_eq!(class(key, value), "restricted", "{key}={value}");
        }
        for (key, value) in [
            ("limits.cpu", "all"),
            ("boot.autostart", "maybe"),
            ("snapshots.pattern", ".."),
            (
                "limits.kernel.nofile",
                "1024\nlxc.apparmor.profile=unconfined",
            ),
            ("user.\nkey", "x"),
            ("environment.X", "a\nb"),
        ] {
            assert_eq!(class(key, value), "invalid", "{key:?}={value:?}");
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
            "environment.BASH_ENV",
        ] {
            assert_eq!(class(key, "#cloud-config"), "guest-code", "{key}");
        }
    }

    #[test]
    fn a_frequent_schedule_needs_a_short_expiry_in_the_same_write() {
        let reach = |config: Value| schedule_reach(config.as_object().unwrap(), true);
        assert!(reach(json!({"snapshots.schedule": "* * * * *"})).is_some());
        assert!(
            reach(json!({"snapshots.schedule": "* * * * *", "snapshots.expiry": "100y"})).is_some()
        );
        assert!(
            reach(json!({"snapshots.schedule": "* * * * *", "snapshots.expiry": "1H"})).is_none()
        );
        assert!(reach(json!({"snapshots.schedule": "0 * * * *"})).is_none());
        assert!(reach(json!({"snapshots.expiry": ""})).is_some());
        // Raised past a day without the schedule: the instance's may fire every minute.
        assert!(reach(json!({"snapshots.expiry": "100y"})).is_some());
        assert!(reach(json!({"snapshots.expiry": "1d 1H"})).is_some());
        assert!(reach(json!({"snapshots.expiry": "1d"})).is_none());
        assert!(
            reach(json!({"snapshots.expiry": "100y", "snapshots.schedule": "@daily"})).is_none()
        );
        assert!(reach(json!({"snapshots.expiry": "", "snapshots.schedule": ""})).is_none());
    }

    #[test]
    fn device_values_are_checked_field_by_field() {
        let scan = |devices: Value| Findings::scan(None, devices.as_object(), Origin::Input);
        let found = scan(
            json!({"/mnt/v3": {"type": "disk", "pool": "default", "source": "v3", "path": "/mnt/v3"}}),
        );
        assert_eq!(found.invalid[0].pointer, "/devices/~1mnt~1v3");
        let found = scan(
            json!({"data": {"type": "disk", "pool": "default", "source": "../x", "path": "/d"}}),
        );
        assert_eq!(found.invalid[0].pointer, "/devices/data/source");
        let found = scan(
            json!({"data": {"type": "disk", "pool": "default", "source": "v", "path": "/d/../../etc"}}),
        );
        assert_eq!(found.invalid[0].pointer, "/devices/data/path");
        let found = scan(json!({"eth0": {"type": "nic", "network": "br0", "name": "eth0\n"}}));
        assert_eq!(found.invalid[0].pointer, "/devices/eth0/name");
        let found = scan(json!({"eth0": {"type": "nic", "network": "br0", "attached": "true"}}));
        assert!(found.is_empty());
        assert_eq!(found.gated[0].extension, "nic_attached_connected");
        assert_eq!(found.nics[0].network, "br0");
        // In what the call applies, the same values are restricted items with the reason.
        let applied = Findings::scan(
            None,
            json!({"x/../y": {"type": "disk", "pool": "p", "path": "/x"}}).as_object(),
            Origin::Applied,
        );
        assert!(applied.invalid.is_empty());
        assert!(applied.restricted[0]
            .why
            .as_deref()
            .unwrap_or_default()
            .contains("device name"));
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
