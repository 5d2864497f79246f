//! `safety::adversary`: attacks generated rather than listed. Every instance key of Incus
//! 6.0.4's and 7.0.2's configuration metadata (`conformance/data/incus-*-config-keys.json`, as the
//! daemons serve it at `GET /1.0/metadata/configuration`) and every device type and field, crossed
//! with hostile values (templates, traversal, control characters, percent-encoding, unicode
//! look-alikes, huge and negative numbers) and device names, run through the core against the
//! fake. The oracle ([`oracle`]) is written apart from the core, from the rules `SECURITY.md`
//! states: the core refuses, or every create and update body that reaches the fake's journal
//! satisfies them. A counterexample is one line: the call and what broke.
//!
//! The main job runs a sweep (each key and each device field once, with a hostile value picked
//! by the seed) and a few dozen random cases; `ADVERSARY_LONG=1` crosses every key and field with
//! every listed hostile value and runs thousands of random cases.

use std::sync::Arc;

use proptest::prelude::*;
use proptest::test_runner::{RngAlgorithm, TestRng};
use serde_json::{json, Map, Value};

use super::grants::{scopes, EXEC, WRITE};
use crate::runner::Check;
use crate::scenario::format::FakeSetup;
use crate::scenario::target::TargetFactory;
use crate::suites::property;
use crate::suites::session::Session;

/// Environment variable that selects the long run.
pub(crate) const LONG_VARIABLE: &str = "ADVERSARY_LONG";

const KEYS_6_0: &str = include_str!("../../../data/incus-6.0.4-config-keys.json");
const KEYS_7_0: &str = include_str!("../../../data/incus-7.0.2-config-keys.json");

/// Values an attacker tries: the hostile and, among them, valid-looking ones (so that the pass
/// path is exercised too).
const HOSTILE: &[&str] = &[
    "..",
    ".",
    "../../../etc/shadow",
    "/etc/shadow",
    "x/../../..",
    "%2e%2e",
    "%2F..%2F",
    "a%00b",
    "{{ instance.name }}",
    "{% ssi \"/etc/passwd\" %}",
    "{% include \"/etc/passwd\" %}",
    "{{ creation_date|date:\"-0700\" }}",
    "{{ creation_date|date:\"Z07:00 MST\" }}",
    "snap%d%d",
    "\n",
    "a\nb",
    "1\nlxc.apparmor.profile=unconfined",
    "\r\n",
    "\u{0}",
    "\u{7}",
    "\u{1b}[2J",
    "é",
    "\u{435}th0",
    "\u{ff45}\u{ff54}\u{ff48}\u{ff10}",
    "\u{202e}x",
    "a\u{200b}",
    "-1",
    "0",
    "99",
    "2147483647",
    "9223372036854775807",
    "18446744073709551616",
    "-9223372036854775808",
    "1e309",
    "NaN",
    "unlimited",
    "1048576:1048576",
    "true",
    "",
    " ",
    "* * * * *",
    "*/1 * * * * *",
    "@every 1s",
    "100y",
    "() { id; }",
    "$(id)",
    "`id`",
    "'\"",
    "0.0.0.0/0",
    "ceph:pool/vol",
    "cephfs:fs",
    "1024:4096",
    "@hourly",
    "1d",
    "snap%d",
    "auto-{{ creation_date|date:\"20060102\" }}-%d",
    "10.0.0.5",
    "eth1",
    "/data",
    "vol1",
    "default",
    "uplink",
    "300",
];

/// Device names an attacker tries.
const HOSTILE_NAMES: &[&str] = &[
    "/mnt/v3",
    "x/../../../../var/log/auth",
    "a\nb",
    "..",
    "-x",
    "a b",
    "a%2Fb",
    "a+b",
    "\u{435}th0",
    "a\u{0}",
    "dev0",
    "data-1",
];

/// The Incus device type of a metadata device group (`nic_bridged` is a `nic`).
fn device_type(group: &str) -> &str {
    match group {
        g if g.starts_with("nic_") => "nic",
        g if g.starts_with("gpu_") => "gpu",
        "unix-char-block" => "unix-char",
        other => other,
    }
}

/// The keys and device fields of both lines, placeholders made concrete.
struct Lines {
    keys: Vec<String>,
    devices: Vec<(String, String)>,
}

fn lines() -> Lines {
    let mut keys = Vec::new();
    let mut devices = Vec::new();
    for text in [KEYS_6_0, KEYS_7_0] {
        let doc: Value = serde_json::from_str(text).unwrap_or_default();
        let names = |field: &str| -> Vec<String> {
            doc[field]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(concrete)
                .collect()
        };
        keys.extend(names("instance"));
        keys.extend(names("kernel"));
        for (group, fields) in doc["devices"].as_object().into_iter().flatten() {
            for field in fields
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                devices.push((device_type(group).to_owned(), concrete(field)));
            }
        }
    }
    // Keys of the source that the metadata does not list, and keys no Incus knows.
    for extra in [
        "user.meta-data",
        "environment.BASH_ENV",
        "environment.BASH_FUNC_x%%",
        "limits.kernel.msgqueue",
        "limits.kernel.stack",
        "limits.kernel.no_such_limit",
        "linux.sysctl.kernel.core_pattern",
        "linux.sysctl.net..x",
        "unknown.key",
        "Limits.cpu",
    ] {
        keys.push(extra.to_owned());
    }
    keys.sort();
    keys.dedup();
    devices.sort();
    devices.dedup();
    Lines { keys, devices }
}

/// A metadata name with its placeholders filled in.
fn concrete(name: &str) -> String {
    name.replace("<name>", "eth0")
        .replace("<GUID>", "8be4df61-93ca-11d2-aa0d-00e098032b8c")
        .replace("[limit_name]", "nofile")
        .replace('*', "x")
}

/// One attack: an operation, the caller's grant, and one hostile entry.
#[derive(Debug, Clone)]
struct Attack {
    create: bool,
    exec: bool,
    entry: Entry,
}

#[derive(Debug, Clone)]
enum Entry {
    Config {
        key: String,
        value: String,
    },
    Device {
        name: String,
        kind: String,
        field: String,
        value: String,
    },
}

impl Attack {
    fn input(&self) -> Value {
        let (config, devices) = match &self.entry {
            Entry::Config { key, value } => (json!({ key: value }), None),
            Entry::Device {
                name,
                kind,
                field,
                value,
            } => {
                let mut device = Map::new();
                device.insert("type".into(), json!(kind));
                match kind.as_str() {
                    "nic" => {
                        device.insert("network".into(), json!("incusbr0"));
                    }
                    "disk" => {
                        device.insert("pool".into(), json!("default"));
                        device.insert("source".into(), json!("vol1"));
                        device.insert("path".into(), json!("/data"));
                    }
                    _ => {}
                }
                device.insert(field.clone(), json!(value));
                (Value::Null, Some(json!({ name: device })))
            }
        };
        let mut input = if self.create {
            json!({"name": "w1", "source": {"type": "none"}})
        } else {
            json!({"name": "c1"})
        };
        if !config.is_null() {
            input["config"] = config;
        }
        if let Some(devices) = devices {
            input["devices"] = devices;
        }
        input
    }

    fn grant(&self) -> Vec<String> {
        if self.exec {
            scopes(&[WRITE, EXEC])
        } else {
            scopes(&[WRITE])
        }
    }

    /// The attack as one line.
    fn line(&self) -> String {
        let operation = if self.create {
            "incus_instance_create"
        } else {
            "incus_instance_update"
        };
        let grant = if self.exec { "write+exec" } else { "write" };
        format!("{operation} [{grant}] {}", self.input())
    }
}

/// The fake: `c1` to update, a managed bridge and a managed physical network.
fn setup() -> FakeSetup {
    let network =
        |name: &str, kind: &str| json!({"name": name, "type": kind, "managed": true, "config": {}});
    FakeSetup {
        seed: Some(json!({
            "instances": [{"name": "c1"}],
            "networks": [network("incusbr0", "bridge"), network("uplink", "physical")]
        })),
        faults: Vec::new(),
    }
}

/// Runs one attack: `Err` with one line when the oracle finds a body that breaks a rule, or the
/// result is not schema-valid.
fn attack(session: &Session, extensions: &[String], attack: &Attack) -> Result<(), String> {
    let called = session.call(
        if attack.create {
            "incus_instance_create"
        } else {
            "incus_instance_update"
        },
        &attack.grant(),
        attack.input(),
    );
    if called.schema_valid().is_err() {
        return Err(format!(
            "{} -> a result outside the output schema",
            attack.line()
        ));
    }
    for request in called.requests.iter().flatten() {
        let write = (request.method == "POST" && request.path == "/1.0/instances")
            || (request.method == "PATCH" && request.path == "/1.0/instances/c1");
        if !write {
            continue;
        }
        let body: Value = serde_json::from_str(&request.body).unwrap_or_default();
        let has = |extension: &str| extensions.iter().any(|e| e == extension);
        if let Some(broken) = oracle::violation(&body, attack.exec, &has) {
            return Err(format!("{} -> reached Incus: {broken}", attack.line()));
        }
    }
    Ok(())
}

/// The sweep: every key and every device field once (long: with every hostile value), the value
/// picked by the seed; names of devices likewise.
fn sweep(session: &Session, long: bool) -> Result<(), String> {
    let extensions = session.server_extensions()?;
    let lines = lines();
    let mut rng = TestRng::from_seed(
        RngAlgorithm::ChaCha,
        &property::trial_seed(property::base_seed(), "safety::adversary::sweep"),
    );
    let mut pick = |list: &[&'static str]| list[(rng.next_u32() as usize) % list.len()];
    let values = |pick: &mut dyn FnMut(&[&'static str]) -> &'static str| -> Vec<&'static str> {
        if long {
            HOSTILE.to_vec()
        } else {
            vec![pick(HOSTILE)]
        }
    };
    for (i, key) in lines.keys.iter().enumerate() {
        for value in values(&mut pick) {
            let entry = Entry::Config {
                key: key.clone(),
                value: value.to_owned(),
            };
            let one = Attack {
                create: i % 5 == 0,
                exec: i % 3 == 0,
                entry,
            };
            attack(session, &extensions, &one)?;
        }
    }
    for (i, (kind, field)) in lines.devices.iter().enumerate() {
        for value in values(&mut pick) {
            let name = if long { "dev0" } else { pick(HOSTILE_NAMES) };
            let entry = Entry::Device {
                name: name.to_owned(),
                kind: kind.clone(),
                field: field.clone(),
                value: value.to_owned(),
            };
            let one = Attack {
                create: i % 5 == 0,
                exec: false,
                entry,
            };
            attack(session, &extensions, &one)?;
        }
    }
    if long {
        for name in HOSTILE_NAMES {
            for (kind, field) in &lines.devices {
                let entry = Entry::Device {
                    name: (*name).to_owned(),
                    kind: kind.clone(),
                    field: field.clone(),
                    value: "1".into(),
                };
                attack(
                    session,
                    &extensions,
                    &Attack {
                        create: false,
                        exec: false,
                        entry,
                    },
                )?;
            }
        }
    }
    Ok(())
}

/// A hostile value: a listed one, a listed one with a tail, or printable or arbitrary text.
fn hostile_value() -> impl Strategy<Value = String> {
    let listed = proptest::sample::select(HOSTILE).prop_map(str::to_owned);
    prop_oneof![
        4 => listed.clone(),
        2 => (listed, proptest::sample::select(HOSTILE)).prop_map(|(a, b)| format!("{a}{b}")),
        2 => "[ -~]{0,16}",
        1 => any::<String>().prop_map(|s| s.chars().take(24).collect()),
    ]
}

fn attacks() -> impl Strategy<Value = Attack> {
    let lines = lines();
    let config = (proptest::sample::select(lines.keys), hostile_value())
        .prop_map(|(key, value)| Entry::Config { key, value });
    let name = prop_oneof![
        3 => proptest::sample::select(HOSTILE_NAMES).prop_map(str::to_owned),
        1 => "[ -~]{1,8}",
    ];
    let device = (
        name,
        proptest::sample::select(lines.devices),
        hostile_value(),
    )
        .prop_map(|(name, (kind, field), value)| Entry::Device {
            name,
            kind,
            field,
            value,
        });
    (any::<bool>(), any::<bool>(), prop_oneof![config, device]).prop_map(|(create, exec, entry)| {
        Attack {
            create,
            exec,
            entry,
        }
    })
}

/// The trials: the sweep and the random cases.
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    let long = std::env::var_os(LONG_VARIABLE).is_some();
    let sweep_factory = Arc::clone(factory);
    let random_factory = Arc::clone(factory);
    vec![
        Check::new(
            "safety::adversary::every_key_and_device_field_with_a_hostile_value",
            move || {
                let session = Session::start(&sweep_factory, &setup())?;
                sweep(&session, long)
            },
        ),
        Check::new(
            "safety::adversary::generated_attacks_never_reach_incus_outside_the_rules",
            move || {
                let session = Session::start(&random_factory, &setup())?;
                let cases = if long { 5_000 } else { 48 };
                let trial =
                    "safety::adversary::generated_attacks_never_reach_incus_outside_the_rules";
                let extensions = session.server_extensions()?;
                property::check_cases(trial, cases, attacks(), |one| {
                    attack(&session, &extensions, &one)
                })
            },
        ),
    ]
}

/// The oracle: the rules of `SECURITY.md`, written from its text and from Incus's source, apart
/// from the core. It judges a create or update body that reached Incus 6.0.4 (the fake) for a
/// caller without the host's `allow_restricted`.
pub(crate) mod oracle {
    use serde_json::Value;

    use super::super::grants::incus_keys::{self, Expected};

    /// Incus's booleans.
    const BOOLS: &[&str] = &["true", "false", "yes", "no", "1", "0", "on", "off"];

    /// Keys whose value is a boolean in Incus 6.0.4 (`internal/instance/config.go`).
    const BOOL_KEYS: &[&str] = &[
        "boot.autorestart",
        "migration.stateful",
        "security.guestapi",
        "security.protection.delete",
        "snapshots.schedule.stopped",
        "limits.memory.hugepages",
        "migration.incremental.memory",
        "security.protection.shift",
        "security.agent.metrics",
        "security.csm",
        "security.iommu",
        "security.secureboot",
        "security.sev",
        "security.sev.policy.es",
        "agent.nic_config",
    ];

    /// Kernel limits and the highest value that does not raise a host limit (`None`: any).
    const RLIMITS: &[(&str, Option<u64>)] = &[
        ("as", None),
        ("core", None),
        ("cpu", None),
        ("data", None),
        ("fsize", None),
        ("locks", None),
        ("nproc", None),
        ("rss", None),
        ("rttime", None),
        ("stack", None),
        ("memlock", Some(8 * 1024 * 1024)),
        ("msgqueue", Some(819_200)),
        ("nice", Some(0)),
        ("nofile", Some(524_288)),
        ("rtprio", Some(0)),
        ("sigpending", Some(65_536)),
    ];

    /// Incus 7.0's `validate.IsAPIName`, and printable ASCII without `%`.
    pub(crate) fn api_name(name: &str) -> bool {
        let bytes = name.as_bytes();
        !bytes.is_empty()
            && bytes.len() <= 64
            && bytes.iter().all(|b| b.is_ascii_graphic())
            && !name.contains(['$', '?', '&', '+', '"', '\'', '`', '*', '/', '%'])
            && bytes[0].is_ascii_alphanumeric()
            && bytes[bytes.len() - 1].is_ascii_alphanumeric()
    }

    /// Go's date layout rendered for 2026-12-06 15:04:05 in a zone `IST` at +05:30 (a zone
    /// whose name and offset are not digits), longest token first.
    fn go_date(layout: &str) -> String {
        const TOKENS: &[(&str, &str)] = &[
            ("January", "December"),
            ("Monday", "Sunday"),
            ("Z07:00", "+05:30"),
            ("-07:00", "+05:30"),
            ("Z0700", "+0530"),
            ("-0700", "+0530"),
            ("2006", "2026"),
            ("Jan", "Dec"),
            ("Mon", "Sun"),
            ("MST", "IST"),
            ("-07", "+05"),
            ("002", "340"),
            ("_2", " 6"),
            ("06", "26"),
            ("01", "12"),
            ("02", "06"),
            ("15", "15"),
            ("03", "03"),
            ("04", "04"),
            ("05", "05"),
            ("PM", "PM"),
            ("pm", "pm"),
            ("1", "12"),
            ("2", "6"),
            ("3", "3"),
            ("4", "4"),
            ("5", "5"),
        ];
        let mut out = String::new();
        let mut rest = layout;
        while let Some(c) = rest.chars().next() {
            if let Some((token, text)) = TOKENS.iter().find(|(t, _)| rest.starts_with(t)) {
                out.push_str(text);
                rest = &rest[token.len()..];
            } else {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
        out
    }

    /// What Incus renders a `snapshots.pattern` to with `counter`, when the pattern is one the
    /// oracle can render (plain text and `creation_date|date` tags); `None` otherwise.
    fn render(pattern: &str, counter: &str) -> Option<String> {
        let mut out = String::new();
        let mut rest = pattern;
        while !rest.is_empty() {
            if let Some(after) = rest.strip_prefix("{{") {
                let end = after.find("}}")?;
                let tag = after[..end].trim();
                let layout = tag
                    .strip_prefix("creation_date|date:\"")?
                    .strip_suffix('"')?;
                out.push_str(&go_date(layout));
                rest = &after[end + 2..];
            } else if rest.starts_with("{%") || rest.starts_with("{#") {
                return None;
            } else {
                let c = rest.chars().next()?;
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
        if out.matches("%d").count() > 1 {
            return None;
        }
        Some(out.replacen("%d", counter, 1))
    }

    fn controls(value: &str) -> bool {
        value.chars().any(char::is_control)
    }

    fn integer_within(value: &str, low: i64, high: i64) -> bool {
        value.is_empty()
            || value
                .parse::<i64>()
                .is_ok_and(|n| (low..=high).contains(&n))
    }

    /// Whether a schedule may fire more than once an hour.
    fn frequent(schedule: &str) -> bool {
        // Incus fires every trigger: the schedule is as frequent as the minutes they cover
        // together (the aliases share the instance's one minute); `@startup` fires at every start.
        let mut minutes = std::collections::BTreeSet::new();
        let mut aliases = false;
        for trigger in schedule.split(", ").filter(|t| !t.is_empty()) {
            let trigger = trigger.to_ascii_lowercase();
            match trigger.as_str() {
                "@never" => continue,
                "@startup" => return true,
                alias if alias.starts_with('@') => aliases = true,
                cron => match cron.split(' ').next() {
                    Some(minute)
                        if !minute.is_empty() && minute.bytes().all(|b| b.is_ascii_digit()) =>
                    {
                        minutes.insert(minute.parse::<u64>().unwrap_or(u64::MAX));
                    }
                    _ => return true,
                },
            }
        }
        minutes.len() + usize::from(aliases) > 1
    }

    /// An expiry of at most one day.
    fn short_expiry(expiry: &str) -> bool {
        let seconds = |field: &str| -> Option<u64> {
            let unit = field.chars().last()?;
            let number: u64 = field[..field.len() - unit.len_utf8()].parse().ok()?;
            let each = match unit {
                'S' => 1,
                'M' => 60,
                'H' => 3600,
                'd' => 86_400,
                _ => return None,
            };
            number.checked_mul(each)
        };
        let total: Option<u64> = expiry.split(' ').map(seconds).sum();
        total.is_some_and(|t| t > 0 && t <= 86_400)
    }

    fn config_violation(
        key: &str,
        value: &str,
        config: &serde_json::Map<String, Value>,
        exec: bool,
        has: &dyn Fn(&str) -> bool,
    ) -> Option<String> {
        if !key.chars().all(|c| c.is_ascii_graphic()) {
            return Some(format!("config key {key:?} is not printable ASCII"));
        }
        let class = incus_keys::expected_config_on(key, has);
        match class {
            Expected::Restricted => return Some(format!("restricted config key {key:?}")),
            Expected::GuestCode if !exec => {
                return Some(format!("guest-code key {key:?} without incus.exec"))
            }
            _ => {}
        }
        if key.starts_with("user.") || key.starts_with("image.") {
            return None;
        }
        if class == Expected::GuestCode {
            return (key.starts_with("environment.") && value.contains('\n'))
                .then(|| format!("{key} with a line break"));
        }
        // Only snapshots.pattern is rendered as a template (below).
        if controls(value) {
            return Some(format!("{key}={value:?} carries control characters"));
        }
        if BOOL_KEYS.contains(&key)
            && !value.is_empty()
            && !BOOLS.contains(&value.to_lowercase().as_str())
        {
            return Some(format!("{key}={value:?} is not a boolean"));
        }
        match key {
            "snapshots.pattern" if !value.is_empty() => {
                let biggest = "9".repeat(19);
                let safe = ["0", biggest.as_str()]
                    .iter()
                    .all(|counter| render(value, counter).is_some_and(|name| api_name(&name)));
                (!safe).then(|| {
                    format!("snapshots.pattern {value:?} can render an invalid snapshot name")
                })
            }
            // Host impact (Incus 7.0): a negative OOM adjustment makes the host's processes die
            // first.
            "limits.memory.oom_priority" => (!integer_within(value, 0, 1000))
                .then(|| format!("{key}={value:?} outside 0..=1000")),
            "boot.host_shutdown_timeout" | "boot.autostart.delay" => {
                (!integer_within(value, 0, 300)).then(|| format!("{key}={value:?} outside 0..=300"))
            }
            "snapshots.schedule" if frequent(value) => {
                let expiry = config.get("snapshots.expiry").and_then(Value::as_str);
                (!expiry.is_some_and(short_expiry))
                    .then(|| format!("snapshots.schedule {value:?} more often than hourly without a short expiry"))
            }
            _ => {
                if let Some(resource) = key
                    .strip_prefix("limits.kernel.")
                    .filter(|_| !value.is_empty())
                {
                    let Some((_, bound)) = RLIMITS.iter().find(|(name, _)| *name == resource)
                    else {
                        return Some(format!("unknown kernel limit {key}"));
                    };
                    let parts: Vec<&str> = value.split(':').collect();
                    let shaped = !value.is_empty()
                        && parts.len() <= 2
                        && parts
                            .iter()
                            .all(|p| *p == "unlimited" || p.parse::<u64>().is_ok());
                    let within = bound.is_none_or(|max| {
                        parts
                            .iter()
                            .all(|p| p.parse::<u64>().is_ok_and(|n| n <= max))
                    });
                    return (!(shaped && within)).then(|| format!("{key}={value:?}"));
                }
                if let Some(name) = key.strip_prefix("linux.sysctl.") {
                    let segments = name.split('.').all(|s| {
                        !s.is_empty()
                            && s.bytes()
                                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
                    });
                    return (!segments).then(|| format!("sysctl name {name:?}"));
                }
                None
            }
        }
    }

    fn device_violation(name: &str, device: &Value, has: &dyn Fn(&str) -> bool) -> Option<String> {
        if !api_name(name) {
            return Some(format!("device name {name:?}"));
        }
        let Some(fields) = device.as_object() else {
            return Some(format!("device {name:?} is not an object"));
        };
        let text = |key: &str| fields.get(key).and_then(Value::as_str).unwrap_or_default();
        let kind = text("type");
        if !matches!(kind, "nic" | "disk") {
            return Some(format!("device {name:?} of type {kind:?}"));
        }
        for (key, value) in fields {
            if key != "type" && !incus_keys::plain_device_field(kind, key, has) {
                return Some(format!("device {name:?} field {key:?}"));
            }
            let value = value.as_str().unwrap_or("\u{0}");
            if controls(value) {
                return Some(format!("device {name:?} {key}={value:?}"));
            }
        }
        if text("type") == "nic" {
            // The fake's only managed bridge; `uplink` is a managed physical network.
            if text("network") != "incusbr0" {
                return Some(format!("nic {name:?} on network {:?}", text("network")));
            }
            let interface = text("name");
            let interface_ok = interface.is_empty()
                || (2..=15).contains(&interface.len())
                    && interface
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
            if !interface_ok {
                return Some(format!("nic {name:?} interface name {interface:?}"));
            }
        } else {
            let source = text("source");
            if text("pool").is_empty() || (!source.is_empty() && !api_name(source)) {
                return Some(format!(
                    "disk {name:?} source {source:?} on pool {:?}",
                    text("pool")
                ));
            }
            let path = text("path");
            let relative = !path.is_empty() && !path.starts_with('/');
            if relative || path.split('/').any(|p| p == ".." || p == ".") {
                return Some(format!("disk {name:?} path {path:?}"));
            }
        }
        None
    }

    /// What in a create or update body breaks the rules, if anything, on a server with the API
    /// extensions `has` reports (a key or field of a later line is plain only with its own).
    pub(crate) fn violation(
        body: &Value,
        exec: bool,
        has: &dyn Fn(&str) -> bool,
    ) -> Option<String> {
        if body.get("ephemeral") == Some(&Value::Bool(true)) {
            return Some("ephemeral without incus.delete".into());
        }
        let empty = serde_json::Map::new();
        let config = body
            .get("config")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        for (key, value) in config {
            let text = value.as_str().unwrap_or("\u{0}");
            if let Some(broken) = config_violation(key, text, config, exec, has) {
                return Some(broken);
            }
        }
        let devices = body
            .get("devices")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        devices
            .iter()
            .find_map(|(name, device)| device_violation(name, device, has))
    }

    #[cfg(test)]
    mod tests {
        use super::*;
        use serde_json::json;

        #[test]
        fn the_oracle_catches_the_findings_of_the_issue() {
            let bad = [
                json!({"config": {"snapshots.pattern": ".."}}),
                json!({"config": {"snapshots.pattern": "{{ creation_date|date:\"-0700\" }}"}}),
                json!({"config": {"environment.BASH_ENV": "/tmp/x"}}),
                json!({"config": {"limits.kernel.rtprio": "99"}}),
                json!({"config": {"boot.host_shutdown_timeout": "2147483647"}}),
                json!({"config": {"snapshots.schedule": "* * * * *"}}),
                json!({"devices": {"/mnt/v3": {"type": "disk", "pool": "default", "source": "v", "path": "/m"}}}),
                json!({"devices": {"eth1": {"type": "nic", "network": "uplink"}}}),
                json!({"ephemeral": true}),
            ];
            let none = |_: &str| false;
            for body in bad {
                assert!(violation(&body, false, &none).is_some(), "{body}");
            }
            let good = [
                json!({"config": {"snapshots.pattern": "auto-{{ creation_date|date:\"20060102\" }}-%d"}}),
                json!({"config": {"limits.kernel.nofile": "1024:4096", "user.x": "\n"}}),
                json!({"config": {"snapshots.schedule": "*/5 * * * *", "snapshots.expiry": "1H"}}),
                json!({"devices": {"eth1": {"type": "nic", "network": "incusbr0", "name": "eth1"}}}),
            ];
            for body in good {
                assert_eq!(violation(&body, false, &none), None, "{body}");
            }
        }

        #[test]
        fn a_key_of_a_later_line_is_judged_by_the_servers_extensions() {
            let seven = |extension: &str| extension != "instance_limits_oom";
            let none = |_: &str| false;
            let protection = json!({"config": {"security.protection.start": "true"}});
            assert!(violation(&protection, false, &none).is_some());
            assert_eq!(violation(&protection, false, &seven), None);
            let secureboot = json!({"config": {"initial.secureboot.db": "x"}});
            assert!(violation(&secureboot, false, &seven).is_some());
            assert_eq!(violation(&secureboot, true, &seven), None);
            let oom = json!({"config": {"limits.memory.oom_priority": "10"}});
            assert!(violation(&oom, false, &seven).is_some());
            let all = |_: &str| true;
            assert_eq!(violation(&oom, false, &all), None);
            let negative = json!({"config": {"limits.memory.oom_priority": "-1"}});
            assert!(violation(&negative, false, &all).is_some());
            let attached =
                json!({"devices": {"d": {"type": "disk", "pool": "default", "attached": "true"}}});
            assert!(violation(&attached, false, &none).is_some());
            assert_eq!(violation(&attached, false, &all), None);
            let tags = json!({"config": {"security.tags": "x"}});
            assert!(violation(&tags, true, &all).is_some());
        }
    }
}
