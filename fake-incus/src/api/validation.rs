//! Validation of what clients send about instances, profiles, projects and custom volumes:
//! names, config keys and values, devices and the volumes they attach. Messages are the
//! daemon's; callers add the context (`Invalid config: …`, status codes).

use crate::envelope::ApiError;
use crate::line::IncusLine;
use crate::state::{Devices, State, StringMap};

/// The daemon's instance name rules.
pub(super) fn check_name(name: &str) -> Result<(), ApiError> {
    // Incus `instance.ValidName` then `validate.IsHostname`, in their order.
    if name.contains('/') {
        return Err(ApiError::bad_request(
            "The character \"/\" is reserved for snapshots",
        ));
    }
    let invalid = |why: &str| ApiError::bad_request(format!("Invalid instance name: {why}"));
    if name.is_empty() || name.len() > 63 {
        return Err(invalid("Name must be 1-63 characters long"));
    }
    if name.starts_with('-') {
        return Err(invalid("Name must not start with \"-\" character"));
    }
    if name.ends_with('-') {
        return Err(invalid("Name must not end with \"-\" character"));
    }
    if name.parse::<u64>().is_ok() {
        return Err(invalid("Name cannot be a number"));
    }
    if !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(invalid(
            "Name can only contain alphanumeric and hyphen characters",
        ));
    }
    Ok(())
}

/// Validates config keys (those of `line`) and the values of common keys: `Invalid config:
/// <why>`.
pub(super) fn validate_config(config: &StringMap, line: IncusLine) -> Result<(), String> {
    match config_problem(config, line) {
        Some(why) => Err(format!("Invalid config: {why}")),
        None => Ok(()),
    }
}

/// What is wrong with a config on `line`, in the daemon's words.
pub(super) fn config_problem(config: &StringMap, line: IncusLine) -> Option<String> {
    config.iter().find_map(|(key, value)| {
        check_key(key, line)
            .and_then(|()| check_value(key, value, line))
            .err()
    })
}

/// What is wrong with one device.
enum DeviceProblem {
    /// `type` is no device type at all.
    UnknownType(String),
    /// The device fails its type's validation (the daemon's text, without context).
    Invalid(String),
}

fn device_problem(name: &str, device: &StringMap) -> Option<DeviceProblem> {
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
    let kind = device.get("type").map(String::as_str).unwrap_or_default();
    if !TYPES.contains(&kind) {
        return Some(DeviceProblem::UnknownType(kind.to_string()));
    }
    let failed = |why: &str| {
        Some(DeviceProblem::Invalid(format!(
            "Device validation failed for \"{name}\": {why}"
        )))
    };
    if kind == "nic"
        && !device.contains_key("network")
        && !device
            .get("nictype")
            .is_some_and(|t| NIC_TYPES.contains(&t.as_str()))
    {
        return failed(&format!(
            "Failed loading device \"{name}\": Unsupported device type"
        ));
    }
    if kind == "disk" {
        if let Some(why) = disk_problem(device) {
            return failed(why);
        }
    }
    // A `none` device takes no field (`config.Validate` with no rules): only `type`, `user.*`
    // and `initial.*` pass.
    if kind == "none" {
        let other = device
            .keys()
            .find(|k| *k != "type" && !k.starts_with("user.") && !k.starts_with("initial."));
        if let Some(key) = other {
            return failed(&format!("Invalid device option {key:?}"));
        }
    }
    None
}

/// The daemon's disk checks that need no host (Incus 6.0.4 `disk.validateConfig`), in its order.
fn disk_problem(device: &StringMap) -> Option<&'static str> {
    let get = |key: &str| device.get(key).map(String::as_str).unwrap_or_default();
    let (source, path, pool) = (get("source"), get("path"), get("pool"));
    if source.is_empty() && path != "/" {
        return Some("Disk entry is missing the required \"source\" or \"path\" property");
    }
    if path == "/" && !source.is_empty() {
        return Some("Root disk entry may not have a \"source\" property set");
    }
    if path == "/" && pool.is_empty() {
        return Some("Root disk entry must have a \"pool\" property set");
    }
    if !get("size").is_empty() && path != "/" {
        return Some("Only the root disk may have a size quota");
    }
    let local = !source.is_empty()
        && !["cloud-init:config", "agent:config"].contains(&source)
        && !source.starts_with("ceph:")
        && !source.starts_with("cephfs:");
    if pool.is_empty() && local && !source.starts_with('/') {
        // `../../etc`, `etc`: the daemon never resolves a relative host path.
        return Some("Source path must be absolute for local sources");
    }
    if !pool.is_empty() && source.starts_with('/') {
        return Some("Storage volumes cannot be specified as absolute paths");
    }
    None
}

/// What is wrong with the local devices of an instance being created, in the daemon's words
/// (the text after `Failed creating instance record: `).
pub(super) fn devices_problem(devices: &Devices) -> Option<String> {
    devices
        .iter()
        .find_map(|(name, device)| device_problem(name, device))
        .map(|problem| match problem {
            DeviceProblem::UnknownType(kind) => format!("Invalid device type \"{kind}\""),
            DeviceProblem::Invalid(why) => {
                format!("Failed initializing instance: Invalid devices: {why}")
            }
        })
}

/// Incus's `validate.IsAPIName` (7.0's check of device names, among others): why `value` is
/// not a valid API object name, in the daemon's words.
pub(super) fn api_name_problem(value: &str, allow_slashes: bool) -> Option<String> {
    if value.len() > 64 {
        return Some("Maximum name length is 64 characters".into());
    }
    if value.chars().any(char::is_whitespace) {
        return Some("Name cannot contain white space".into());
    }
    let mut reserved = vec!['$', '?', '&', '+', '"', '\'', '`', '*'];
    if !allow_slashes {
        reserved.push('/');
    }
    if let Some(c) = reserved.into_iter().find(|c| value.contains(*c)) {
        return Some(format!(
            "Name contains invalid character {:?}",
            c.to_string()
        ));
    }
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !alnum(value.chars().next()) || !alnum(value.chars().last()) {
        return Some("Names must start and end with an alphanumeric character".into());
    }
    None
}

/// Where `checked` (a line with [`crate::line::OBJECT_NAMES_ARE_API_NAMES`]), a new `noun` name
/// as the daemon checks it (`validate.IsAPIName`): `Invalid {noun} name: why` (400).
pub(super) fn checked_api_name(checked: bool, noun: &str, name: &str) -> Result<(), ApiError> {
    match api_name_problem(name, false).filter(|_| checked) {
        Some(why) => Err(ApiError::bad_request(format!("Invalid {noun} name: {why}"))),
        None => Ok(()),
    }
}

/// The first device whose name is not an API name (7.0), as `Invalid device name "NAME": why`.
pub(super) fn device_names_problem(devices: &Devices) -> Option<String> {
    devices.keys().find_map(|name| {
        api_name_problem(name, false).map(|why| format!("Invalid device name {name:?}: {why}"))
    })
}

/// Validates the local devices of an update: `Invalid devices: <why>`.
pub(super) fn validate_devices(devices: &Devices) -> Result<(), String> {
    let problem = devices
        .iter()
        .find_map(|(name, device)| device_problem(name, device).map(|p| (name, p)));
    match problem {
        None => Ok(()),
        Some((name, DeviceProblem::UnknownType(_))) => Err(format!(
            "Invalid devices: Device validation failed for \"{name}\": Failed loading device \"{name}\": Unsupported device type"
        )),
        Some((_, DeviceProblem::Invalid(why))) => Err(format!("Invalid devices: {why}")),
    }
}

/// What is wrong with the devices of a profile, in the daemon's words (no prefix).
pub(super) fn profile_devices_problem(devices: &Devices) -> Option<String> {
    devices
        .iter()
        .find_map(|(name, device)| device_problem(name, device).map(|p| (name, p)))
        .map(|(name, problem)| match problem {
            DeviceProblem::UnknownType(_) => format!(
                "Device validation failed for \"{name}\": Failed loading device \"{name}\": Unsupported device type"
            ),
            DeviceProblem::Invalid(why) => why,
        })
}

/// The first disk device that attaches a custom volume missing from its pool (or a filesystem
/// volume without a path), in the daemon's
/// words: `Failed add validation for device "v": Failed loading custom volume: ...`.
pub(super) fn missing_volume(state: &State, project: &str, devices: &Devices) -> Option<String> {
    devices.iter().find_map(|(name, device)| {
        let get = |key: &str| device.get(key).map(String::as_str).unwrap_or_default();
        let (pool, source) = (get("pool"), get("source"));
        let attaches = get("type") == "disk"
            && !pool.is_empty()
            && !source.is_empty()
            && !source.starts_with('/');
        if !attaches {
            return None;
        }
        let why = if state.custom_volume(pool, project, source).is_none() {
            "Failed loading custom volume: Storage volume not found"
        } else if get("path").is_empty() {
            // The fake's custom volumes are all filesystem volumes.
            "Custom filesystem volumes require a path to be defined"
        } else {
            return None;
        };
        Some(format!(
            "Failed add validation for device \"{name}\": {why}"
        ))
    })
}

/// The name rules the daemon applies to profiles and projects (`kind`: `Profile`, `Project`).
/// Incus's project name rule (`projectValidateName`, 6.0.4's; 7.0 checks the name as an API
/// name first, which leaves only the underscore of these to refuse).
pub(super) fn project_name_problem(name: &str) -> Option<String> {
    let why = if name.is_empty() {
        "No name provided"
    } else if name.contains('/') {
        "Project names may not contain slashes"
    } else if name.contains(' ') {
        "Project names may not contain spaces"
    } else if name.contains('_') {
        "Project names may not contain underscores"
    } else if name.contains(['\'', '"']) {
        "Project names may not contain quotes"
    } else if name == "*" {
        "Reserved project name"
    } else if name == "." || name == ".." {
        return Some(format!("Invalid project name {name:?}"));
    } else {
        return None;
    };
    Some(why.to_owned())
}

pub(super) fn check_entity_name(kind: &str, name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("No name provided".into());
    }
    if name.contains('/') {
        return Err(format!("{kind} names may not contain slashes"));
    }
    if name == "." || name == ".." {
        return Err(format!("Invalid {} name {name:?}", kind.to_lowercase()));
    }
    Ok(())
}

/// The daemon's project config keys and the checks of their values (Incus 6.0.4
/// `projectValidateConfig`): `Invalid project configuration key "KEY"[ value: WHY]`.
pub(super) fn project_config_problem(config: &StringMap) -> Option<String> {
    const BOOLEANS: &[&str] = &[
        "features.images",
        "features.profiles",
        "features.storage.volumes",
        "features.storage.buckets",
        "features.networks",
        "features.networks.zones",
        "images.auto_update_cached",
        "restricted.backups",
        "restricted.cluster.target",
        "restricted.snapshots",
        "restricted.containers.lowlevel",
        "restricted.virtual-machines.lowlevel",
        "restricted.containers.nesting",
        "restricted.containers.privilege",
        "restricted.containers.interception",
        "restricted.devices.disk",
    ];
    const UINT32S: &[&str] = &[
        "limits.instances",
        "limits.containers",
        "limits.virtual-machines",
        "limits.processes",
        "limits.cpu",
        "limits.networks",
    ];
    const INTEGERS: &[&str] = &["images.auto_update_interval", "images.remote_cache_expiry"];
    const OTHERS: &[&str] = &[
        "limits.memory",
        "limits.disk",
        "restricted",
        "images.compression_algorithm",
        "images.default_architecture",
        "backups.compression_algorithm",
    ];
    config.iter().find_map(|(key, value)| {
        let free = key.starts_with("user.")
            || key.starts_with("restricted.")
            || key.starts_with("limits.disk.pool.");
        let invalid = |why: String| {
            Some(format!(
                "Invalid project configuration key {key:?} value: {why}"
            ))
        };
        if BOOLEANS.contains(&key.as_str()) {
            return check_boolean(value).err().and_then(invalid);
        }
        if UINT32S.contains(&key.as_str()) {
            return (!value.is_empty())
                .then(|| check_uint32(value).err())
                .flatten()
                .and_then(invalid);
        }
        if INTEGERS.contains(&key.as_str()) {
            return (!value.is_empty() && value.parse::<i64>().is_err())
                .then(|| format!("Invalid value for an integer {value:?}"))
                .and_then(invalid);
        }
        if OTHERS.contains(&key.as_str()) || free {
            return None;
        }
        Some(format!("Invalid project configuration key {key:?}"))
    })
}

/// The custom volume config keys of a `dir` pool and their checks (Incus 6.0.4): the text of
/// `Invalid option for volume "NAME" option "KEY"` or `Invalid value for volume ...`.
pub(super) fn volume_config_problem(volume: &str, config: &StringMap) -> Option<String> {
    config.iter().find_map(|(key, value)| {
        let why = match key.as_str() {
            "size" if !value.is_empty() && !is_size(value) => {
                Some(format!("Invalid value: {value}"))
            }
            "security.shifted" | "security.unmapped" => check_boolean(value).err(),
            "snapshots.expiry" if !value.is_empty() && !is_expiry(value) => {
                Some("Invalid expiry expression".into())
            }
            "size" | "snapshots.expiry" | "snapshots.pattern" | "snapshots.schedule" => None,
            k if k.starts_with("user.") => None,
            _ => {
                return Some(format!(
                    "Invalid option for volume {volume:?} option {key:?}"
                ))
            }
        };
        why.map(|why| format!("Invalid value for volume {volume:?} option {key:?}: {why}"))
    })
}

/// Go's `validate.IsUint32`: `strconv.ParseUint(value, 10, 32)` and its error.
fn check_uint32(value: &str) -> Result<(), String> {
    let why = if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        if value.parse::<u32>().is_ok() {
            return Ok(());
        }
        "value out of range"
    } else {
        "invalid syntax"
    };
    Err(format!(
        "Invalid value for uint32 {value:?}: strconv.ParseUint: parsing {value:?}: {why}"
    ))
}

fn check_boolean(value: &str) -> Result<(), String> {
    let ok = value.is_empty()
        || ["true", "false", "1", "0", "yes", "no", "on", "off"]
            .contains(&value.to_lowercase().as_str());
    if ok {
        Ok(())
    } else {
        Err(format!("Invalid value for a boolean {value:?}"))
    }
}

fn is_size(value: &str) -> bool {
    !value.ends_with('%') && is_size_or_percent(value)
}

/// The container config keys of later lines, each with the API extension that brought it (Incus
/// 7.0.2's configuration metadata, less the keys of virtual machines only and of volatile
/// state), and the free families (`prefix` ending in `.`) among them.
const KEYS_SINCE: &[(&str, &str)] = &[
    ("limits.memory.oom_priority", "instance_limits_oom"),
    ("oci.cwd", "instance_oci_entrypoint"),
    ("oci.entrypoint", "instance_oci_entrypoint"),
    ("oci.gid", "instance_oci_entrypoint"),
    ("oci.uid", "instance_oci_entrypoint"),
    ("oci.dns.domain", "oci_network_config"),
    ("oci.dns.nameservers", "oci_network_config"),
    ("oci.dns.search", "oci_network_config"),
    ("security.bpffs.delegate_attachs", "bpf_token_delegation"),
    ("security.bpffs.delegate_cmds", "bpf_token_delegation"),
    ("security.bpffs.delegate_maps", "bpf_token_delegation"),
    ("security.bpffs.delegate_progs", "bpf_token_delegation"),
    ("security.bpffs.path", "bpf_token_delegation"),
    ("security.protection.start", "instance_protection_start"),
    ("security.selinux.domain", "instance_selinux"),
    ("security.selinux.label_rootfs", "instance_selinux"),
    ("security.selinux.level", "instance_selinux"),
    ("security.selinux.type", "instance_selinux"),
    ("security.tags", "instance_security_tags"),
    ("snapshots.expiry.manual", "snapshot_manual_expiry"),
    ("systemd.credential.", "instance_systemd_credentials"),
    ("systemd.credential-binary.", "instance_systemd_credentials"),
];

/// The daemon's instance config keys (Incus 6.0.4 `internal/instance/config.go`: the keys of
/// every instance type and of containers, besides the free namespaces below), and those of
/// [`KEYS_SINCE`] whose extension `line` has.
fn check_key(key: &str, line: IncusLine) -> Result<(), String> {
    const KEYS: &[&str] = &[
        "boot.autorestart",
        "boot.autostart",
        "boot.autostart.delay",
        "boot.autostart.priority",
        "boot.host_shutdown_action",
        "boot.host_shutdown_timeout",
        "boot.stop.priority",
        "cloud-init.network-config",
        "cloud-init.user-data",
        "cloud-init.vendor-data",
        "cluster.evacuate",
        "limits.cpu",
        "limits.cpu.allowance",
        "limits.cpu.nodes",
        "limits.cpu.priority",
        "limits.disk.priority",
        "limits.hugepages.1GB",
        "limits.hugepages.1MB",
        "limits.hugepages.2MB",
        "limits.hugepages.64KB",
        "limits.memory",
        "limits.memory.enforce",
        "limits.memory.swap",
        "limits.memory.swap.priority",
        "limits.processes",
        "linux.kernel_modules",
        "migration.incremental.memory",
        "migration.incremental.memory.goal",
        "migration.incremental.memory.iterations",
        "migration.stateful",
        "nvidia.driver.capabilities",
        "nvidia.require.cuda",
        "nvidia.require.driver",
        "nvidia.runtime",
        "raw.apparmor",
        "raw.idmap",
        "raw.lxc",
        "raw.seccomp",
        "security.guestapi",
        "security.guestapi.images",
        "security.idmap.base",
        "security.idmap.isolated",
        "security.idmap.size",
        "security.nesting",
        "security.privileged",
        "security.protection.delete",
        "security.protection.shift",
        "security.syscalls.allow",
        "security.syscalls.blacklist",
        "security.syscalls.blacklist_compat",
        "security.syscalls.blacklist_default",
        "security.syscalls.deny",
        "security.syscalls.deny_compat",
        "security.syscalls.deny_default",
        "security.syscalls.intercept.bpf",
        "security.syscalls.intercept.bpf.devices",
        "security.syscalls.intercept.mknod",
        "security.syscalls.intercept.mount",
        "security.syscalls.intercept.mount.allowed",
        "security.syscalls.intercept.mount.fuse",
        "security.syscalls.intercept.mount.shift",
        "security.syscalls.intercept.sched_setscheduler",
        "security.syscalls.intercept.setxattr",
        "security.syscalls.intercept.sysinfo",
        "security.syscalls.whitelist",
        "snapshots.expiry",
        "snapshots.pattern",
        "snapshots.schedule",
        "snapshots.schedule.stopped",
        "volatile.apply_template",
        "volatile.base_image",
        "volatile.cloud-init.instance-id",
        "volatile.cluster.group",
        "volatile.cpu.nodes",
        "volatile.evacuate.origin",
        "volatile.idmap.base",
        "volatile.idmap.current",
        "volatile.idmap.next",
        "volatile.last_state.idmap",
        "volatile.last_state.power",
        "volatile.last_state.ready",
        "volatile.rebalance.last_move",
        "volatile.uuid",
        "volatile.uuid.generation",
    ];
    /// Suffixes of per-device volatile keys (`volatile.<device>.<suffix>`).
    const VOLATILE_DEVICE_SUFFIXES: &[&str] = &[
        ".apply_quota",
        ".ceph_rbd",
        ".host_name",
        ".hwaddr",
        ".mig.uuid",
        ".name",
        ".vgpu.uuid",
        ".last_state.created",
        ".last_state.hwaddr",
        ".last_state.ip_addresses",
        ".last_state.mtu",
        ".last_state.pci.driver",
        ".last_state.pci.parent",
        ".last_state.pci.slot.name",
        ".last_state.usb.bus",
        ".last_state.usb.device",
        ".last_state.vdpa.name",
        ".last_state.vf.hwaddr",
        ".last_state.vf.id",
        ".last_state.vf.parent",
        ".last_state.vf.spoofcheck",
        ".last_state.vf.vlan",
    ];
    // Exact keys only: a key inside a known namespace that the daemon does not know
    // (`security.nonsense`, `security.privileged ` with a trailing space) is unknown there too.
    let since = KEYS_SINCE.iter().any(|(known, extension)| {
        let matches = if known.ends_with('.') {
            key.len() > known.len() && key.starts_with(known)
        } else {
            key == *known
        };
        matches && line.has_extension(extension)
    });
    let known = KEYS.contains(&key)
        || since
        || (key.starts_with("volatile.")
            && VOLATILE_DEVICE_SUFFIXES.iter().any(|s| key.ends_with(s)))
        || ["environment.", "user.", "image.", "linux.sysctl."]
            .iter()
            .any(|p| key.starts_with(p))
        || key.len() > "limits.kernel.".len() && key.starts_with("limits.kernel.");
    if known {
        Ok(())
    } else {
        Err(format!("Unknown configuration key: {key}"))
    }
}

fn check_value(key: &str, value: &str, line: IncusLine) -> Result<(), String> {
    const BOOLEANS: &[&str] = &[
        "boot.autostart",
        "security.privileged",
        "security.nesting",
        "security.protection.delete",
        "security.protection.shift",
        "security.idmap.isolated",
        "migration.stateful",
        "limits.memory.swap",
        "security.protection.start",
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
    if key == "boot.autostart" && line.has_extension(crate::line::BOOT_AUTOSTART_LAST_STATE) {
        let ok = value == "last-state" || check_boolean(value).is_ok();
        return if ok {
            Ok(())
        } else {
            Err(format!("{value:?} isn't a valid value"))
        };
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
        "snapshots.expiry" | "snapshots.expiry.manual" if !is_expiry(value) => {
            Err("Invalid expiry expression".into())
        }
        "limits.memory.oom_priority" => match value.parse::<i64>() {
            Err(_) => Err(format!("Invalid value for an integer {value:?}")),
            Ok(n) if !(-1000..=1000).contains(&n) => Err(format!(
                "Invalid value for a limit {value:?}. Must be between -1000 and 1000"
            )),
            Ok(_) => Ok(()),
        },
        "snapshots.schedule" => check_schedule(value),
        _ => Ok(()),
    }
}

/// Go's `validate.IsCron` with the snapshot aliases: `", "`-separated triggers, each an alias or
/// five space-separated cron fields that `cron.ParseStandard` accepts.
fn check_schedule(value: &str) -> Result<(), String> {
    const ALIASES: &[&str] = &[
        "@hourly",
        "@daily",
        "@midnight",
        "@weekly",
        "@monthly",
        "@annually",
        "@yearly",
        "@startup",
        "@never",
    ];
    const MONTHS: &[&str] = &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ];
    const DAYS: &[&str] = &["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
    let value = value.to_lowercase();
    for trigger in value.split(", ") {
        if ALIASES.contains(&trigger) {
            continue;
        }
        let fields: Vec<&str> = trigger.split(' ').collect();
        if fields.len() != 5 {
            return Err(
                "Schedule must be of the form: <minute> <hour> <day-of-month> <month> <day-of-week>"
                    .into(),
            );
        }
        let bounds: [(u32, u32, &[&str], u32); 5] = [
            (0, 59, &[], 0),
            (0, 23, &[], 0),
            (1, 31, &[], 0),
            (1, 12, MONTHS, 1),
            (0, 6, DAYS, 0),
        ];
        for (field, (min, max, names, first)) in fields.iter().zip(bounds) {
            for range in field.split(',') {
                cron_range(range, min, max, names, first)
                    .map_err(|why| format!("Error parsing schedule: {why}"))?;
            }
        }
    }
    Ok(())
}

/// One comma-separated part of a cron field, checked as robfig/cron's `getRange`.
fn cron_range(expr: &str, min: u32, max: u32, names: &[&str], first: u32) -> Result<(), String> {
    let int = |text: &str| -> Result<u32, String> {
        match text.parse::<i64>() {
            Ok(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {text}")),
            Ok(n) => u32::try_from(n).map_err(|_| format!("failed to parse int from {text}")),
            Err(_) => Err(format!(
                "failed to parse int from {text}: strconv.Atoi: parsing {text:?}: invalid syntax"
            )),
        }
    };
    let int_or_name = |text: &str| match names.iter().position(|n| *n == text) {
        Some(i) => Ok(first + i as u32),
        None => int(text),
    };
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let (start, mut end) = if matches!(low_and_high[0], "*" | "?") {
        (min, max)
    } else {
        let start = int_or_name(low_and_high[0])?;
        match low_and_high.len() {
            1 => (start, start),
            2 => (start, int_or_name(low_and_high[1])?),
            _ => return Err(format!("too many hyphens: {expr}")),
        }
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            if low_and_high.len() == 1 {
                end = max;
            }
            int(range_and_step[1])?
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({min}): {expr}"
        ));
    }
    if end > max {
        return Err(format!(
            "end of range ({end}) above maximum ({max}): {expr}"
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

/// The daemon's instance profile list check: `Duplicate profile found in request`.
pub(super) fn duplicate_profile(profiles: &[String]) -> Option<String> {
    profiles
        .iter()
        .enumerate()
        .any(|(i, p)| profiles[..i].contains(p))
        .then(|| "Duplicate profile found in request".to_string())
}

/// Whether expanded devices have the root disk (a `disk` at path `/`) every instance needs.
pub(super) fn has_root_disk(devices: &Devices) -> bool {
    devices.values().any(is_root_disk)
}

/// Whether the device is a root disk (`type: disk`, `path: /`, no `source`).
pub(super) fn is_root_disk(device: &crate::state::StringMap) -> bool {
    device.get("type").map(String::as_str) == Some("disk")
        && device.get("path").map(String::as_str) == Some("/")
        && !device.contains_key("source")
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

#[cfg(test)]
mod tests {
    use super::super::parse_body;
    use serde_json::{json, Value};

    fn error(text: &[u8]) -> String {
        parse_body::<Value>(text).unwrap_err().message
    }

    #[test]
    fn a_key_of_a_later_line_is_known_only_where_the_line_has_its_extension() {
        use super::{check_key, config_problem, IncusLine, KEYS_SINCE};
        for (key, extension) in KEYS_SINCE {
            assert!(IncusLine::V7_0.has_extension(extension), "{extension}");
            let key = format!("{key}{}", if key.ends_with('.') { "x" } else { "" });
            assert_eq!(check_key(&key, IncusLine::V7_0), Ok(()), "{key}");
            assert_eq!(
                check_key(&key, IncusLine::V6_0),
                Err(format!("Unknown configuration key: {key}"))
            );
        }
        // Measured on 7.0.2: a key of virtual machines only is unknown on a container.
        assert!(check_key("initial.secureboot.db", IncusLine::V7_0).is_err());
        let config = |key: &str, value: &str| [(key.to_owned(), value.to_owned())].into();
        let problem = |key, value| config_problem(&config(key, value), IncusLine::V7_0);
        assert_eq!(
            problem("limits.memory.oom_priority", "-1001").as_deref(),
            Some("Invalid value for a limit \"-1001\". Must be between -1000 and 1000")
        );
        assert_eq!(
            problem("security.protection.start", "maybe").as_deref(),
            Some("Invalid value for a boolean \"maybe\"")
        );
        assert_eq!(problem("snapshots.expiry.manual", "1d"), None);
    }

    #[test]
    fn strings_are_read_as_gos_decoder_reads_them() {
        let value = |text: &[u8]| parse_body::<Value>(text).unwrap();
        assert_eq!(value(br#"{"a":"x\ud800y"}"#), json!({"a": "x\u{fffd}y"}));
        assert_eq!(value(br#"{"a":"\udc00"}"#), json!({"a": "\u{fffd}"}));
        assert_eq!(value(br#"{"a":"\ud83d\ude00"}"#), json!({"a": "\u{1f600}"}));
        assert_eq!(value(b"{\"a\":\"x\xffy\"}"), json!({"a": "x\u{fffd}y"}));
        assert_eq!(value("{\"a\":\"é\"}".as_bytes()), json!({"a": "é"}));
        assert_eq!(
            value(br#"{"a":1,"a":2}"#),
            json!({"a": 2}),
            "the last duplicate wins"
        );
    }

    #[test]
    fn string_and_byte_errors_are_worded_like_go() {
        assert_eq!(
            error(b"{\"name\":\"a\x01b\"}"),
            "invalid character '\\x01' in string literal"
        );
        assert_eq!(
            error(br#"{"name":"a\qb"}"#),
            "invalid character 'q' in string escape code"
        );
        assert_eq!(
            error(b"\xef\xbb\xbf{}"),
            "invalid character '\u{ef}' looking for beginning of value"
        );
        assert_eq!(
            error(b"{\\}"),
            "invalid character '\\\\' looking for beginning of object key string"
        );
        assert_eq!(
            error(b"\n\n\x7f"),
            "invalid character '\\x7f' looking for beginning of value"
        );
    }
}
