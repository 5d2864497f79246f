//! Incus 6.0.4's own key lists, as data for the trials, and the allowlist that `SECURITY.md`
//! documents: the trials' oracle, kept apart from the core's implementation of it.
//!
//! - instance config keys: the fixed keys of `internal/instance/config.go` and one example of each
//!   of its free-form families (`environment.*`, `user.*`, `image.*`, `limits.kernel.*`,
//!   `linux.sysctl.*`, `smbios11.*`, `volatile.<device>.*`);
//! - nic keys: the validators of `internal/server/device/nic.go` and the optional fields of every
//!   `nic_*.go` `validateConfig`, with `nictype`;
//! - disk keys: the rules of `internal/server/device/disk.go`'s `validateConfig`.

/// Every instance config key Incus 6.0.4 knows, plus keys it does not (`unknown.key`, a key in
/// another casing).
pub(crate) const CONFIG_KEYS: &[&str] = &[
    "agent.nic_config",
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
    "limits.memory",
    "limits.memory.enforce",
    "limits.memory.hugepages",
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
    "raw.qemu",
    "raw.qemu.conf",
    "raw.qemu.qmp.early",
    "raw.qemu.qmp.post-start",
    "raw.qemu.qmp.pre-start",
    "raw.qemu.scriptlet",
    "raw.seccomp",
    "security.agent.metrics",
    "security.csm",
    "security.guestapi",
    "security.guestapi.images",
    "security.idmap.base",
    "security.idmap.isolated",
    "security.idmap.size",
    "security.iommu",
    "security.nesting",
    "security.privileged",
    "security.protection.delete",
    "security.protection.shift",
    "security.secureboot",
    "security.sev",
    "security.sev.policy.es",
    "security.sev.session.data",
    "security.sev.session.dh",
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
    "volatile.eth0.hwaddr",
    "volatile.idmap.next",
    "volatile.uuid",
    "environment.HTTP_PROXY",
    "image.os",
    "limits.kernel.nofile",
    "linux.sysctl.net.core.somaxconn",
    "smbios11.io.systemd.credential:ssh.authorized_keys.root",
    "user.meta-data",
    "user.network-config",
    "user.note",
    "user.user-data",
    "user.vendor-data",
    "unknown.key",
    "Limits.cpu",
    "RAW.lxc",
];

/// The config keys that pass without the host (exact), per `SECURITY.md`.
const PLAIN_CONFIG: &[&str] = &[
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

/// Free-form families that pass without the host.
const PLAIN_FAMILIES: &[&str] = &["image.", "limits.kernel.", "linux.sysctl.", "user."];

/// Guest-code keys: they pass without the host, but need `incus.exec`.
pub(crate) const GUEST_CODE: &[&str] = &[
    "cloud-init.network-config",
    "cloud-init.user-data",
    "cloud-init.vendor-data",
    "user.meta-data",
    "user.network-config",
    "user.user-data",
    "user.vendor-data",
];

/// What `SECURITY.md` says of a config key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expected {
    Plain,
    GuestCode,
    Restricted,
}

/// The config keys of a later line (Incus 7.0's configuration metadata, `SECURITY.md`'s keys
/// marked ⁷), each with its class and the API extension that brought it; a name ending in `.`
/// is a family. Where the server lacks the extension, Incus does not know the key: restricted.
/// A secret is guest code here (it needs what guest code needs); a host-impact key is plain,
/// its bound checked on the value. The restricted ones (`security.bpffs.*`,
/// `security.selinux.*`, `security.tags`) are restricted on any line, so they are not listed.
const CONFIG_SINCE: &[(&str, Expected, &str)] = &[
    (
        "security.protection.start",
        Expected::Plain,
        "instance_protection_start",
    ),
    (
        "limits.memory.oom_priority",
        Expected::Plain,
        "instance_limits_oom",
    ),
    (
        "limits.memory.hotplug",
        Expected::Plain,
        "limits_memory_hotplug",
    ),
    (
        "snapshots.expiry.manual",
        Expected::Plain,
        "snapshot_manual_expiry",
    ),
    ("oci.dns.domain", Expected::Plain, "oci_network_config"),
    ("oci.dns.nameservers", Expected::Plain, "oci_network_config"),
    ("oci.dns.search", Expected::Plain, "oci_network_config"),
    (
        "oci.entrypoint",
        Expected::GuestCode,
        "instance_oci_entrypoint",
    ),
    ("oci.cwd", Expected::GuestCode, "instance_oci_entrypoint"),
    ("oci.uid", Expected::GuestCode, "instance_oci_entrypoint"),
    ("oci.gid", Expected::GuestCode, "instance_oci_entrypoint"),
    (
        "initial.secureboot.",
        Expected::GuestCode,
        "instance_nvram_config",
    ),
    (
        "initial.nvram.",
        Expected::GuestCode,
        "instance_nvram_config",
    ),
    (
        "initial.nvram-binary.",
        Expected::GuestCode,
        "instance_nvram_config",
    ),
    (
        "systemd.credential.",
        Expected::GuestCode,
        "instance_systemd_credentials",
    ),
    (
        "systemd.credential-binary.",
        Expected::GuestCode,
        "instance_systemd_credentials",
    ),
];

/// The device fields of a later line that `SECURITY.md` calls plain, with the API extension
/// that brought each: a nic's, then a disk's.
const NIC_SINCE: &[(&str, &str)] = &[
    ("attached", "nic_attached_connected"),
    ("connected", "nic_attached_connected"),
];
const DISK_SINCE: &[(&str, &str)] = &[
    ("attached", "disk_attached"),
    ("limits.read.burst", "device_burst_limits"),
    ("limits.write.burst", "device_burst_limits"),
    ("limits.max.burst", "device_burst_limits"),
    ("limits.read.burst.length", "device_burst_limits"),
    ("limits.write.burst.length", "device_burst_limits"),
    ("limits.max.burst.length", "device_burst_limits"),
];

/// The documented class of a config key on a server with the API extensions `has` reports.
pub(crate) fn expected_config_on(key: &str, has: &dyn Fn(&str) -> bool) -> Expected {
    let since = CONFIG_SINCE.iter().find(|(name, _, _)| {
        if name.ends_with('.') {
            key.len() > name.len() && key.starts_with(name)
        } else {
            key == *name
        }
    });
    match since {
        Some((_, class, extension)) if has(extension) => *class,
        Some(_) => Expected::Restricted,
        None => expected_config(key),
    }
}

/// Whether `SECURITY.md` calls a field of a device of `device_type` (`nic`, `disk`) plain, on a
/// server with the API extensions `has` reports.
pub(crate) fn plain_device_field(
    device_type: &str,
    field: &str,
    has: &dyn Fn(&str) -> bool,
) -> bool {
    let (plain, since) = match device_type {
        "nic" => (PLAIN_NIC, NIC_SINCE),
        "disk" => (PLAIN_DISK, DISK_SINCE),
        _ => return false,
    };
    plain.contains(&field)
        || since
            .iter()
            .any(|(name, extension)| *name == field && has(extension))
}

/// The documented class of a config key (Incus 6.0.4's keys; a key of a later line is
/// restricted here, as on a server without its extension: see [`expected_config_on`]).
pub(crate) fn expected_config(key: &str) -> Expected {
    let in_family = |families: &[&str]| {
        families
            .iter()
            .any(|family| key.len() > family.len() && key.starts_with(family))
    };
    if GUEST_CODE.contains(&key) || in_family(&["smbios11.", "environment."]) {
        Expected::GuestCode
    } else if PLAIN_CONFIG.contains(&key) || in_family(PLAIN_FAMILIES) {
        Expected::Plain
    } else {
        Expected::Restricted
    }
}

/// Every nic key of Incus 6.0.4 (all nic types), and `nictype`.
pub(crate) const NIC_KEYS: &[&str] = &[
    "acceleration",
    "boot.priority",
    "gvrp",
    "host_name",
    "hwaddr",
    "io.bus",
    "ipv4.address",
    "ipv4.gateway",
    "ipv4.host_address",
    "ipv4.host_table",
    "ipv4.routes",
    "ipv4.routes.external",
    "ipv6.address",
    "ipv6.gateway",
    "ipv6.host_address",
    "ipv6.host_table",
    "ipv6.routes",
    "ipv6.routes.external",
    "limits.egress",
    "limits.ingress",
    "limits.max",
    "limits.priority",
    "mode",
    "mtu",
    "name",
    "nested",
    "network",
    "nictype",
    "parent",
    "queue.tx.length",
    "security.acls",
    "security.acls.default.egress.action",
    "security.acls.default.egress.logged",
    "security.acls.default.ingress.action",
    "security.acls.default.ingress.logged",
    "security.ipv4_filtering",
    "security.ipv6_filtering",
    "security.mac_filtering",
    "security.port_isolation",
    "security.promiscuous",
    "vlan",
    "vrf",
];

/// The nic keys a plain nic may carry, per `SECURITY.md` (with `type` and a `network`).
pub(crate) const PLAIN_NIC: &[&str] = &[
    "boot.priority",
    "io.bus",
    "ipv4.address",
    "ipv6.address",
    "mtu",
    "name",
    "network",
    "queue.tx.length",
];

/// Every disk key of Incus 6.0.4.
pub(crate) const DISK_KEYS: &[&str] = &[
    "boot.priority",
    "ceph.cluster_name",
    "ceph.user_name",
    "io.bus",
    "io.cache",
    "limits.max",
    "limits.read",
    "limits.write",
    "optional",
    "path",
    "pool",
    "propagation",
    "raw.mount.options",
    "readonly",
    "recursive",
    "required",
    "shift",
    "size",
    "size.state",
    "source",
];

/// The disk keys a plain disk may carry, per `SECURITY.md` (with `type`, a `pool`, and a
/// `source` that names a volume).
pub(crate) const PLAIN_DISK: &[&str] = &[
    "boot.priority",
    "io.bus",
    "io.cache",
    "limits.max",
    "limits.read",
    "limits.write",
    "optional",
    "path",
    "pool",
    "readonly",
    "required",
    "size",
    "size.state",
    "source",
];

/// A value for a device or config key in a trial (a volume name for a disk's `source`).
pub(crate) fn value_for(key: &str) -> &'static str {
    match key {
        "source" => "vol1",
        "network" => "incusbr0",
        "pool" => "default",
        "path" => "/data",
        "ipv4.routes" | "ipv4.routes.external" => "0.0.0.0/1,128.0.0.0/1",
        "ipv6.routes" | "ipv6.routes.external" => "::/1,8000::/1",
        // Values valid by each key's rule, so that a verdict is about the key.
        "limits.cpu.allowance" => "50%",
        "boot.host_shutdown_action" => "stop",
        "cluster.evacuate" => "auto",
        "limits.memory.enforce" => "soft",
        "snapshots.expiry" => "1d",
        "snapshots.schedule" => "@daily",
        "name" => "eth1",
        "mtu" => "1500",
        "ipv4.address" => "10.0.0.5",
        "ipv6.address" => "fd00::5",
        "io.bus" => "usb",
        "io.cache" => "none",
        "limits.read" | "limits.write" | "limits.max" => "10MB",
        "size" | "size.state" => "10GiB",
        _ => "1",
    }
}
