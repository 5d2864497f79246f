//! Incus's instance config keys and plain device fields, for both supported lines (6.0 LTS and
//! 7.0 LTS), each judged into a value class with its value rule, and keyed on the API extension
//! that introduced it (none: the key is in 6.0.4).
//!
//! Sources: Incus 6.0.4 and 7.0 `internal/instance/config.go` (`InstanceConfigKeys*` and
//! `ConfigKeyChecker`), `internal/server/metadata/configuration.json` (the same lists as the daemons
//! serve them at `GET /1.0/metadata/configuration`), `doc/api-extensions.md` (which extension
//! brought which key), and the `validateConfig` of `internal/server/device/{nic*,disk}.go`.
//!
//! The classes ([`Class`]):
//! - plain: stays inside the instance; `incus.write` and a value that passes its rule;
//! - host-impact: plain while the value stays within a bound ([`Bound`]), a restricted item past it;
//! - guest code: code or trust the guest's root takes from the value; needs `incus.exec` too;
//! - secret: a credential handed to the guest (systemd credentials); needs `incus.exec` too, like
//!   guest code, and is a credential to whoever reads it;
//! - restricted: reaches past the instance (or is unknown); needs the host's `allow_restricted`.
//!
//! A key whose extension the server does not report is unknown to that server, and so a
//! restricted item there (the check after discovery reads the server's `api_extensions`).
use super::values::{Bound, Rule};

/// What a key is, and the rule for its value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Class {
    /// Stays inside the instance.
    Plain(Rule),
    /// Plain within the bound, restricted past it.
    HostImpact(Rule, Bound),
    /// The guest runs or trusts it as root: needs `incus.exec`.
    GuestCode(Rule),
    /// A credential handed to the guest: needs `incus.exec`.
    Secret(Rule),
    /// Needs the host's yes.
    Restricted,
}

#[cfg(test)]
impl Class {
    /// The class's name, as `SECURITY.md` writes it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Class::Plain(_) => "plain",
            Class::HostImpact(..) => "host-impact",
            Class::GuestCode(_) => "guest-code",
            Class::Secret(_) => "secret",
            Class::Restricted => "restricted",
        }
    }
}

/// One instance config key (exact), or a family of keys (a prefix ending in `.`, matched by keys
/// longer than it).
#[derive(Debug, Clone, Copy)]
pub(crate) struct KeySpec {
    pub(crate) key: &'static str,
    pub(crate) class: Class,
    /// The API extension that introduced the key; `None`: in Incus 6.0.4.
    pub(crate) since: Option<&'static str>,
}

const fn key(key: &'static str, class: Class) -> KeySpec {
    KeySpec {
        key,
        class,
        since: None,
    }
}

const fn since(key: &'static str, class: Class, extension: &'static str) -> KeySpec {
    KeySpec {
        key,
        class,
        since: Some(extension),
    }
}

use Class::{GuestCode, HostImpact, Plain, Restricted, Secret};

const U32: Rule = Rule::Int {
    min: 0,
    max: u32::MAX as i64,
};
const I64: Rule = Rule::Int {
    min: i64::MIN,
    max: i64::MAX,
};
const PRIORITY: Rule = Rule::Int { min: 0, max: 10 };

/// The longest `boot.host_shutdown_timeout` (seconds) the core lets through: Incus waits this long
/// for the instance when the host shuts down (a negative value waits forever).
pub(crate) const HOST_SHUTDOWN_TIMEOUT_MAX: i64 = 300;

/// The longest `boot.autostart.delay` (seconds): Incus waits this long after starting the
/// instance before it starts the host's next one.
pub(crate) const AUTOSTART_DELAY_MAX: i64 = 300;

/// Kernel resource limits (`limits.kernel.*`, set on the container's init by the host) that reach
/// past the instance, with the highest value that does not raise them above a stock Linux host's
/// default: real-time priority and nice (0: no raise), locked memory (8 MiB), open files (the
/// systemd default hard limit, 524288), pending signals and POSIX message queue bytes (per-user
/// kernel memory).
pub(crate) const RLIMIT_BOUNDS: &[(&str, u64)] = &[
    ("memlock", 8 * 1024 * 1024),
    ("msgqueue", 819_200),
    ("nice", 0),
    ("nofile", 524_288),
    ("rtprio", 0),
    ("sigpending", 65_536),
];

/// Kernel resource limits of the instance's own processes (LXC `lxc.prlimit.*`): plain with a
/// valid value.
pub(crate) const RLIMITS_PLAIN: &[&str] = &[
    "as", "core", "cpu", "data", "fsize", "locks", "nproc", "rss", "rttime", "stack",
];

/// Every instance config key of both lines with its class, and the families.
pub(crate) const KEYS: &[KeySpec] = &[
    // boot
    key("boot.autorestart", Plain(Rule::Bool)),
    key("boot.autostart", Plain(Rule::BoolOr(&["last-state"]))),
    key(
        "boot.autostart.delay",
        HostImpact(
            I64,
            Bound::Range {
                min: 0,
                max: AUTOSTART_DELAY_MAX,
            },
        ),
    ),
    key("boot.autostart.priority", Plain(I64)),
    key(
        "boot.host_shutdown_action",
        Plain(Rule::OneOf(&["stop", "force-stop", "stateful-stop"])),
    ),
    key(
        "boot.host_shutdown_timeout",
        HostImpact(
            I64,
            Bound::Range {
                min: 0,
                max: HOST_SHUTDOWN_TIMEOUT_MAX,
            },
        ),
    ),
    key("boot.stop.priority", Plain(I64)),
    // cloud-init: the guest's cloud-init runs them as root
    key("cloud-init.network-config", GuestCode(Rule::Any)),
    key("cloud-init.user-data", GuestCode(Rule::Any)),
    key("cloud-init.vendor-data", GuestCode(Rule::Any)),
    key("user.meta-data", GuestCode(Rule::Any)),
    key("user.network-config", GuestCode(Rule::Any)),
    key("user.user-data", GuestCode(Rule::Any)),
    key("user.vendor-data", GuestCode(Rule::Any)),
    // miscellaneous
    key("agent.nic_config", Plain(Rule::Bool)),
    key(
        "cluster.evacuate",
        Plain(Rule::OneOf(&[
            "auto",
            "migrate",
            "live-migrate",
            "refresh-migrate",
            "stop",
            "stateful-stop",
            "force-stop",
        ])),
    ),
    key("linux.kernel_modules", Restricted),
    // limits: the instance's own resources
    key("limits.cpu", Plain(Rule::Cpus)),
    key("limits.cpu.allowance", Plain(Rule::Allowance)),
    key("limits.cpu.nodes", Plain(Rule::CpuNodes)),
    key("limits.cpu.priority", Plain(PRIORITY)),
    key("limits.disk.priority", Plain(PRIORITY)),
    // Huge pages are reserved host memory, outside the instance's memory limit.
    key("limits.hugepages.1GB", Restricted),
    key("limits.hugepages.1MB", Restricted),
    key("limits.hugepages.2MB", Restricted),
    key("limits.hugepages.64KB", Restricted),
    key("limits.memory", Plain(Rule::Memory)),
    key(
        "limits.memory.enforce",
        Plain(Rule::OneOf(&["soft", "hard"])),
    ),
    since(
        "limits.memory.hotplug",
        Plain(Rule::BoolOrSize),
        "limits_memory_hotplug",
    ),
    key("limits.memory.hugepages", Plain(Rule::Bool)),
    // A negative OOM adjustment makes the host's own processes die first.
    since(
        "limits.memory.oom_priority",
        HostImpact(
            Rule::Int {
                min: -1000,
                max: 1000,
            },
            Bound::Range { min: 0, max: 1000 },
        ),
        "instance_limits_oom",
    ),
    key("limits.memory.swap", Plain(Rule::BoolOrSize)),
    key("limits.memory.swap.priority", Plain(PRIORITY)),
    key(
        "limits.processes",
        Plain(Rule::Int {
            min: 0,
            max: i64::MAX,
        }),
    ),
    // migration
    key("migration.incremental.memory", Plain(Rule::Bool)),
    key("migration.incremental.memory.goal", Plain(U32)),
    key("migration.incremental.memory.iterations", Plain(U32)),
    key("migration.stateful", Plain(Rule::Bool)),
    // nvidia: host driver files in the guest
    key("nvidia.driver.capabilities", Restricted),
    key("nvidia.require.cuda", Restricted),
    key("nvidia.require.driver", Restricted),
    key("nvidia.runtime", Restricted),
    // oci (7.0): what an OCI container's init runs, and as whom
    since(
        "oci.cwd",
        GuestCode(Rule::GuestPath),
        "instance_oci_entrypoint",
    ),
    since(
        "oci.entrypoint",
        GuestCode(Rule::Any),
        "instance_oci_entrypoint",
    ),
    since("oci.gid", GuestCode(U32), "instance_oci_entrypoint"),
    since("oci.uid", GuestCode(U32), "instance_oci_entrypoint"),
    since("oci.dns.domain", Plain(Rule::Line), "oci_network_config"),
    since(
        "oci.dns.nameservers",
        Plain(Rule::AddressList),
        "oci_network_config",
    ),
    since("oci.dns.search", Plain(Rule::Line), "oci_network_config"),
    // raw: written into LXC's or QEMU's configuration, or the host's AppArmor and seccomp
    key("raw.apparmor", Restricted),
    key("raw.idmap", Restricted),
    key("raw.lxc", Restricted),
    key("raw.qemu", Restricted),
    key("raw.qemu.conf", Restricted),
    key("raw.qemu.qmp.early", Restricted),
    key("raw.qemu.qmp.post-start", Restricted),
    key("raw.qemu.qmp.pre-start", Restricted),
    key("raw.qemu.scriptlet", Restricted),
    key("raw.seccomp", Restricted),
    // security
    key("security.agent.metrics", Plain(Rule::Bool)),
    since(
        "security.bpffs.delegate_attachs",
        Restricted,
        "bpf_token_delegation",
    ),
    since(
        "security.bpffs.delegate_cmds",
        Restricted,
        "bpf_token_delegation",
    ),
    since(
        "security.bpffs.delegate_maps",
        Restricted,
        "bpf_token_delegation",
    ),
    since(
        "security.bpffs.delegate_progs",
        Restricted,
        "bpf_token_delegation",
    ),
    since("security.bpffs.path", Restricted, "bpf_token_delegation"),
    key("security.csm", Plain(Rule::Bool)),
    key("security.guestapi", Plain(Rule::Bool)),
    key("security.guestapi.images", Restricted),
    key("security.idmap.base", Restricted),
    key("security.idmap.isolated", Restricted),
    key("security.idmap.size", Restricted),
    key("security.iommu", Plain(Rule::Bool)),
    key("security.nesting", Restricted),
    key("security.privileged", Restricted),
    key("security.protection.delete", Plain(Rule::Bool)),
    key("security.protection.shift", Plain(Rule::Bool)),
    since(
        "security.protection.start",
        Plain(Rule::Bool),
        "instance_protection_start",
    ),
    key("security.secureboot", Plain(Rule::Bool)),
    since("security.selinux.domain", Restricted, "instance_selinux"),
    since(
        "security.selinux.label_rootfs",
        Restricted,
        "instance_selinux",
    ),
    since("security.selinux.level", Restricted, "instance_selinux"),
    since("security.selinux.type", Restricted, "instance_selinux"),
    key("security.sev", Plain(Rule::Bool)),
    key("security.sev.policy.es", Plain(Rule::Bool)),
    key("security.sev.session.data", Plain(Rule::Line)),
    key("security.sev.session.dh", Plain(Rule::Line)),
    // Tags are inputs of the host's authorization backend.
    since("security.tags", Restricted, "instance_security_tags"),
    // UEFI Secure Boot keys and NVRAM variables: what the VM's firmware trusts and boots.
    since(
        "initial.secureboot.db",
        GuestCode(Rule::Any),
        "instance_nvram_config",
    ),
    since(
        "initial.secureboot.dbt",
        GuestCode(Rule::Any),
        "instance_nvram_config",
    ),
    since(
        "initial.secureboot.dbx",
        GuestCode(Rule::Any),
        "instance_nvram_config",
    ),
    since(
        "initial.secureboot.kek",
        GuestCode(Rule::Any),
        "instance_nvram_config",
    ),
    since(
        "initial.secureboot.mok",
        GuestCode(Rule::Any),
        "instance_nvram_config",
    ),
    since(
        "initial.secureboot.pk",
        GuestCode(Rule::Any),
        "instance_nvram_config",
    ),
    since(
        "initial.nvram.",
        GuestCode(Rule::Any),
        "instance_nvram_config",
    ),
    since(
        "initial.nvram-binary.",
        GuestCode(Rule::Any),
        "instance_nvram_config",
    ),
    // snapshots (a frequent schedule needs an expiry: see `restricted`)
    key("snapshots.expiry", Plain(Rule::Expiry)),
    since(
        "snapshots.expiry.manual",
        Plain(Rule::Expiry),
        "snapshot_manual_expiry",
    ),
    key("snapshots.pattern", Plain(Rule::Pattern)),
    key("snapshots.schedule", Plain(Rule::Schedule)),
    key("snapshots.schedule.stopped", Plain(Rule::Bool)),
    // families
    key("environment.", GuestCode(Rule::NoLineBreak)),
    key("image.", Plain(Rule::Any)),
    key("limits.kernel.", Restricted),
    key("linux.sysctl.", Plain(Rule::Line)),
    key("smbios11.", Secret(Rule::Any)),
    since(
        "systemd.credential.",
        Secret(Rule::Any),
        "instance_systemd_credentials",
    ),
    since(
        "systemd.credential-binary.",
        Secret(Rule::Base64),
        "instance_systemd_credentials",
    ),
    key("user.", Plain(Rule::Any)),
    key("volatile.", Restricted),
];

/// The spec of a config key: the exact entry, else the longest family it belongs to, else
/// `None` (unknown: restricted). `limits.kernel.<resource>` is judged per resource.
pub(crate) fn lookup(name: &str) -> Option<KeySpec> {
    if let Some(resource) = name.strip_prefix("limits.kernel.") {
        return rlimit(resource);
    }
    if let Some(exact) = KEYS.iter().find(|spec| spec.key == name) {
        return (!exact.key.ends_with('.')).then_some(*exact);
    }
    let family = KEYS
        .iter()
        .filter(|spec| {
            spec.key.ends_with('.') && name.len() > spec.key.len() && name.starts_with(spec.key)
        })
        .max_by_key(|spec| spec.key.len())
        .copied()?;
    if family.key == "linux.sysctl." && !sysctl_name(&name[family.key.len()..]) {
        return None;
    }
    Some(family)
}

/// A sysctl name: dot-separated segments of `[A-Za-z0-9_-]` (LXC turns the dots into the path
/// under `/proc/sys`, so no segment may be empty or a traversal).
fn sysctl_name(name: &str) -> bool {
    name.split('.').all(|segment| {
        !segment.is_empty()
            && segment
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-'))
    })
}

/// `limits.kernel.<resource>`: a known resource with its bound, or unknown (restricted).
fn rlimit(resource: &str) -> Option<KeySpec> {
    const FAMILY: &str = "limits.kernel.";
    if let Some((_, max)) = RLIMIT_BOUNDS.iter().find(|(name, _)| *name == resource) {
        return Some(key(
            FAMILY,
            HostImpact(Rule::Rlimit, Bound::Rlimit { max: *max }),
        ));
    }
    RLIMITS_PLAIN
        .contains(&resource)
        .then(|| key(FAMILY, Plain(Rule::Rlimit)))
}

/// One field of a plain device type, with its value rule.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FieldSpec {
    pub(crate) field: &'static str,
    pub(crate) rule: Rule,
    /// The API extension that introduced the field; `None`: in Incus 6.0.4.
    pub(crate) since: Option<&'static str>,
}

const fn field(field: &'static str, rule: Rule) -> FieldSpec {
    FieldSpec {
        field,
        rule,
        since: None,
    }
}

const fn field_since(field: &'static str, rule: Rule, extension: &'static str) -> FieldSpec {
    FieldSpec {
        field,
        rule,
        since: Some(extension),
    }
}

/// The fields a plain nic may carry: it attaches to a managed bridge or OVN network of the
/// project (read and checked after discovery); Incus checks `ipv4.address`/`ipv6.address` against
/// that network's subnet.
pub(crate) const NIC_FIELDS: &[FieldSpec] = &[
    field("type", Rule::OneOf(&["nic"])),
    field("network", Rule::ApiName),
    field("name", Rule::InterfaceName),
    field("ipv4.address", Rule::Ipv4),
    field("ipv6.address", Rule::Ipv6),
    field(
        "mtu",
        Rule::Int {
            min: 1280,
            max: 16384,
        },
    ),
    field("boot.priority", U32),
    field("queue.tx.length", U32),
    field("io.bus", Rule::OneOf(&["virtio", "usb"])),
    field_since("attached", Rule::Bool, "nic_attached_connected"),
    field_since("connected", Rule::Bool, "nic_attached_connected"),
];

/// The fields a plain disk may carry: a volume of a storage pool, mounted at `path`.
pub(crate) const DISK_FIELDS: &[FieldSpec] = &[
    field("type", Rule::OneOf(&["disk"])),
    field("pool", Rule::ApiName),
    field("source", Rule::ApiName),
    field("path", Rule::GuestPath),
    field("readonly", Rule::Bool),
    field("required", Rule::Bool),
    field("optional", Rule::Bool),
    field("size", Rule::Size),
    field("size.state", Rule::Size),
    field("boot.priority", U32),
    field(
        "io.bus",
        Rule::OneOf(&[
            "nvme",
            "virtio-blk",
            "virtio-scsi",
            "auto",
            "9p",
            "virtiofs",
            "usb",
        ]),
    ),
    field(
        "io.cache",
        Rule::OneOf(&["none", "metadata", "writeback", "unsafe"]),
    ),
    field("limits.read", Rule::IoLimit),
    field("limits.write", Rule::IoLimit),
    field("limits.max", Rule::IoLimit),
    field_since("attached", Rule::Bool, "disk_attached"),
    field_since("limits.read.burst", Rule::IoLimit, "device_burst_limits"),
    field_since("limits.write.burst", Rule::IoLimit, "device_burst_limits"),
    field_since("limits.max.burst", Rule::IoLimit, "device_burst_limits"),
    field_since(
        "limits.read.burst.length",
        Rule::Duration,
        "device_burst_limits",
    ),
    field_since(
        "limits.write.burst.length",
        Rule::Duration,
        "device_burst_limits",
    ),
    field_since(
        "limits.max.burst.length",
        Rule::Duration,
        "device_burst_limits",
    ),
];

/// The fields of a plain device type (`nic`, `disk`), `None` for every other type.
pub(crate) fn device_fields(device_type: &str) -> Option<&'static [FieldSpec]> {
    match device_type {
        "nic" => Some(NIC_FIELDS),
        "disk" => Some(DISK_FIELDS),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(name: &str) -> &'static str {
        lookup(name).map_or("restricted", |spec| spec.class.name())
    }

    #[test]
    fn keys_are_judged_by_exact_name_then_family() {
        assert_eq!(class("user.user-data"), "guest-code");
        assert_eq!(class("user.note"), "plain");
        assert_eq!(class("user."), "restricted");
        assert_eq!(class("environment.BASH_ENV"), "guest-code");
        assert_eq!(class("limits.kernel.rtprio"), "host-impact");
        assert_eq!(class("limits.kernel.stack"), "plain");
        assert_eq!(class("limits.kernel.foo"), "restricted");
        assert_eq!(class("linux.sysctl.net.ipv4.ip_forward"), "plain");
        assert_eq!(class("linux.sysctl.net..x"), "restricted");
        assert_eq!(class("linux.sysctl.a/b"), "restricted");
        assert_eq!(class("systemd.credential.x"), "secret");
        assert_eq!(class("volatile.uuid"), "restricted");
        assert_eq!(class("Limits.cpu"), "restricted");
        assert_eq!(
            lookup("security.protection.start").and_then(|s| s.since),
            Some("instance_protection_start")
        );
    }

    #[test]
    fn every_exact_key_is_listed_once() {
        let mut names: Vec<&str> = KEYS.iter().map(|spec| spec.key).collect();
        names.sort_unstable();
        let count = names.len();
        names.dedup();
        assert_eq!(names.len(), count);
    }
}
