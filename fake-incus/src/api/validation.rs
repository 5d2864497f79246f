//! Validation of what clients send about instances: names, config keys and values, devices.
//! Messages are the daemon's; callers add the context (`Invalid config: …`, status codes).

use crate::envelope::ApiError;
use crate::state::{Devices, StringMap};

/// The daemon's instance name rules.
pub(super) fn check_name(name: &str) -> Result<(), ApiError> {
    let invalid = |why: &str| ApiError::bad_request(format!("Invalid instance name: {why}"));
    if name.len() > 63 {
        return Err(invalid("Name must be 1-63 characters long"));
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(invalid(
            "Name can only contain alphanumeric and hyphen characters",
        ));
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err(invalid("Name must not start or end with a hyphen"));
    }
    if name.chars().next().is_some_and(|c| c.is_ascii_digit()) {
        return Err(invalid("Name must not start with a digit"));
    }
    Ok(())
}

/// Validates config keys and the values of common keys: `Invalid config: <why>`.
pub(super) fn validate_config(config: &StringMap) -> Result<(), String> {
    match config_problem(config) {
        Some(why) => Err(format!("Invalid config: {why}")),
        None => Ok(()),
    }
}

/// What is wrong with a config, in the daemon's words.
pub(super) fn config_problem(config: &StringMap) -> Option<String> {
    config
        .iter()
        .find_map(|(key, value)| check_key(key).and_then(|()| check_value(key, value)).err())
}

/// What is wrong with local devices, in the daemon's words.
pub(super) fn devices_problem(devices: &Devices) -> Option<String> {
    const TYPES: &[&str] = &[
        "disk",
        "nic",
        "none",
        "unix-char",
        "unix-block",
        "unix-hotplug",
        "usb",
        "gpu",
        "infiniband",
        "proxy",
        "tpm",
        "pci",
    ];
    const NIC_TYPES: &[&str] = &[
        "bridged", "macvlan", "p2p", "physical", "sriov", "ipvlan", "routed", "ovn",
    ];
    devices.iter().find_map(|(name, device)| {
        let kind = device.get("type").map(String::as_str).unwrap_or_default();
        let supported = TYPES.contains(&kind)
            && (kind != "nic"
                || device.contains_key("network")
                || device.get("nictype").is_some_and(|t| NIC_TYPES.contains(&t.as_str())));
        (!supported).then(|| {
            format!("Device validation failed for \"{name}\": Failed loading device \"{name}\": Unsupported device type")
        })
    })
}

/// Validates local devices: `Invalid devices: <why>`.
pub(super) fn validate_devices(devices: &Devices) -> Result<(), String> {
    match devices_problem(devices) {
        Some(why) => Err(format!("Invalid devices: {why}")),
        None => Ok(()),
    }
}

fn check_key(key: &str) -> Result<(), String> {
    const PREFIXES: &[&str] = &[
        "user.",
        "environment.",
        "image.",
        "limits.",
        "security.",
        "boot.",
        "raw.",
        "linux.",
        "snapshots.",
        "cloud-init.",
        "migration.",
        "nvidia.",
        "cluster.",
        "agent.",
    ];
    const VOLATILE: &[&str] = &[
        "volatile.apply_template",
        "volatile.base_image",
        "volatile.cloud-init.instance-id",
        "volatile.idmap.base",
        "volatile.idmap.current",
        "volatile.idmap.next",
        "volatile.last_state.idmap",
        "volatile.last_state.power",
        "volatile.last_state.ready",
        "volatile.uuid",
        "volatile.uuid.generation",
    ];
    let known = PREFIXES.iter().any(|p| key.starts_with(p))
        || VOLATILE.contains(&key)
        // Device keys such as volatile.eth0.hwaddr.
        || (key.starts_with("volatile.") && key.split('.').count() >= 3);
    if known {
        Ok(())
    } else {
        Err(format!("Unknown configuration key: {key}"))
    }
}

fn check_value(key: &str, value: &str) -> Result<(), String> {
    const BOOLEANS: &[&str] = &[
        "boot.autostart",
        "security.privileged",
        "security.nesting",
        "security.protection.delete",
        "security.protection.shift",
        "security.idmap.isolated",
        "migration.stateful",
        "limits.memory.swap",
    ];
    const INTEGERS: &[&str] = &[
        "limits.processes",
        "boot.autostart.priority",
        "boot.autostart.delay",
        "boot.stop.priority",
        "boot.host_shutdown_timeout",
    ];
    if value.is_empty() {
        return Ok(());
    }
    if BOOLEANS.contains(&key) {
        let ok = ["true", "false", "1", "0", "yes", "no", "on", "off"]
            .contains(&value.to_lowercase().as_str());
        return if ok {
            Ok(())
        } else {
            Err(format!("Invalid value for a boolean {value:?}"))
        };
    }
    if INTEGERS.contains(&key) {
        return value
            .parse::<i64>()
            .map(|_| ())
            .map_err(|_| format!("Invalid value for an integer {value:?}"));
    }
    match key {
        "limits.memory" if !is_size_or_percent(value) => Err(format!("Invalid value: {value}")),
        "limits.cpu" if !is_cpu_limit(value) => Err("Invalid CPU limit syntax".into()),
        "snapshots.expiry" if !is_expiry(value) => Err("Invalid expiry expression".into()),
        _ => Ok(()),
    }
}

fn is_size_or_percent(value: &str) -> bool {
    if let Some(percent) = value.strip_suffix('%') {
        return percent.parse::<f64>().is_ok();
    }
    let digits = value.trim_end_matches(|c: char| c.is_ascii_alphabetic());
    let unit = &value[digits.len()..];
    const UNITS: &[&str] = &[
        "", "B", "kB", "KB", "MB", "GB", "TB", "PB", "EB", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB",
    ];
    digits.parse::<f64>().is_ok() && UNITS.contains(&unit)
}

fn is_cpu_limit(value: &str) -> bool {
    value.parse::<u32>().is_ok()
        || value.split(',').all(|part| {
            let mut ends = part.splitn(2, '-');
            ends.all(|n| n.parse::<u32>().is_ok())
        }) && value.contains([',', '-'])
}

fn is_expiry(value: &str) -> bool {
    value.split_whitespace().all(|part| {
        let digits = part.trim_end_matches(['M', 'H', 'd', 'w', 'm', 'y']);
        digits.len() + 1 == part.len() && digits.parse::<u64>().is_ok()
    })
}
