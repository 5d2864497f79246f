//! The rules for values: what a config key's value, a device's name and a device field's value
//! may be, so that what passes means what it says on every Incus line the core supports.
//!
//! Each rule is the strictest of Incus 6.0.4 and 7.0 (where 7.0 validates and 6.0.4 does not, the
//! core applies 7.0's rule to both), and the core's own where both daemons are unsafe; `SECURITY.md`
//! lists each rule with its source. The rules are pure: a value and, for the host-impact bounds, a
//! verdict on how far it reaches ([`Reach`]).
//!
//! - [`device_name`]: 7.0's `validate.IsAPIName` (1 to 64 bytes, starts and ends with an ASCII
//!   letter or digit, no white space, none of `$ ? & + " ' ` * /`), plus the core's own: printable
//!   ASCII only and no `%` (6.0.4 joins a VM disk's name into host file paths and QEMU's
//!   configuration, and accepts any name of up to 64 characters).
//! - [`snapshot_pattern`]: a small grammar whose every rendering is a valid 7.0 snapshot name:
//!   literal ASCII letters, digits, `-`, `_` and `.`, the tag `{{ creation_date|date:"L" }}` with a
//!   layout `L` of Go's numeric date tokens (`2006`, `01`, `02`, `15`, `04`, `05`) and separators,
//!   and `%d` at most once; it starts and ends with a letter, a digit, a tag or `%d`, and renders to
//!   at most 64 bytes. (6.0.4 names an unnamed snapshot `..` for the pattern `..`; deleting that
//!   instance then deleted every container snapshot of the pool.)
//! - [`schedule`]: 6.0.4's cron grammar (`validate.IsCron`: aliases, or five fields), and how often
//!   it fires: a schedule that can fire more than once an hour needs an expiry.
//! - [`Rule`]: the per-key and per-field value rules.
use std::net::{Ipv4Addr, Ipv6Addr};

/// The longest name Incus 7.0 accepts for a device or snapshot (`validate.IsAPIName`).
pub(crate) const NAME_MAX: usize = 64;

/// Characters 7.0's `validate.IsAPIName` refuses in a name (`/` included: no slashes allowed).
const API_NAME_RESERVED: &[char] = &['$', '?', '&', '+', '"', '\'', '`', '*', '/'];

/// A name of a device, a network, a storage pool or a volume, by 7.0's `validate.IsAPIName` and
/// the core's own rule (printable ASCII, no `%`, which a path segment would decode).
pub(crate) fn api_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > NAME_MAX {
        return Err(format!("must be 1 to {NAME_MAX} bytes long"));
    }
    if let Some(bad) = name.chars().find(|c| !c.is_ascii_graphic()) {
        return Err(format!(
            "must be printable ASCII without white space (found {:?})",
            bad
        ));
    }
    if let Some(bad) = name
        .chars()
        .find(|c| API_NAME_RESERVED.contains(c) || *c == '%')
    {
        return Err(format!("must not contain {bad:?}"));
    }
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    if !alnum(name.chars().next()) || !alnum(name.chars().last()) {
        return Err("must start and end with an ASCII letter or digit".into());
    }
    Ok(())
}

/// The name of a new snapshot, by 7.0's `validate.IsAPIName` (`cmd/incusd/instance_snapshot.go`
/// validates it on create and rename; 6.0.4 refuses only `/`): 1 to 64 bytes, no white space,
/// none of `$ ? & + " ' ` * /`, starting and ending with an ASCII letter or digit; and the core's
/// own: no control character (a name reaches host paths and logs) and no `%` (decoded twice).
/// Letters of any script pass, as in 7.0: a confirm repeats a name byte for byte.
pub(crate) fn snapshot_name(name: &str) -> Result<(), String> {
    let why = if name.is_empty() || name.len() > NAME_MAX {
        Some(format!("must be 1 to {NAME_MAX} bytes long"))
    } else if let Some(bad) = name.chars().find(|c| c.is_whitespace() || c.is_control()) {
        Some(format!(
            "must not contain white space or control characters (found {bad:?})"
        ))
    } else if let Some(bad) = name
        .chars()
        .find(|c| API_NAME_RESERVED.contains(c) || *c == '%')
    {
        Some(format!("must not contain {bad:?}"))
    } else {
        let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
        (!alnum(name.chars().next()) || !alnum(name.chars().last()))
            .then(|| "must start and end with an ASCII letter or digit".to_owned())
    };
    match why {
        Some(why) => Err(format!(
            "snapshot name {name:?} {why} (Incus 7.0's rule for a new snapshot)"
        )),
        None => Ok(()),
    }
}

/// A device name (see [`api_name`]).
pub(crate) fn device_name(name: &str) -> Result<(), String> {
    api_name(name).map_err(|why| format!("device name {name:?} {why}"))
}

/// A config key's name: printable ASCII without white space (the core's own rule; Incus's
/// free-form families accept any suffix).
pub(crate) fn key_name(key: &str) -> Result<(), String> {
    if key.chars().all(|c| c.is_ascii_graphic()) {
        Ok(())
    } else {
        Err(format!(
            "config key {key:?} must be printable ASCII without white space"
        ))
    }
}

/// The Go layout tokens a snapshot pattern's date may use: each renders as digits.
const DATE_TOKENS: &[&str] = &["2006", "01", "02", "15", "04", "05"];

/// Digits `%d` may render to (Incus counts snapshots with a Go `int`).
const COUNTER_DIGITS: usize = 19;

/// A `snapshots.pattern` value: empty (Incus's default `snap%d`) or the safe grammar.
pub(crate) fn snapshot_pattern(pattern: &str) -> Result<(), String> {
    if pattern.is_empty() {
        return Ok(());
    }
    let outside = |why: &str| {
        Err(format!(
            "snapshots.pattern {pattern:?} is outside the safe grammar (literal letters, digits, '-', '_', '.', \
             {{{{ creation_date|date:\"2006-01-02\" }}}} with the numeric tokens 2006 01 02 15 04 05, and %d once; \
             starting and ending with a letter, digit, date or %d; at most {NAME_MAX} bytes rendered): {why}"
        ))
    };
    let mut rest = pattern;
    let mut rendered = 0usize;
    let mut counters = 0;
    // Whether the first and the latest part render to an alphanumeric edge.
    let mut first_edge: Option<bool> = None;
    let mut last_edge = false;
    while !rest.is_empty() {
        let (edge_start, edge_end, length, consumed) = if let Some(after) = rest.strip_prefix("%d")
        {
            counters += 1;
            (true, true, COUNTER_DIGITS, rest.len() - after.len())
        } else if rest.starts_with("{{") {
            let Some(end) = rest.find("}}") else {
                return outside("an unclosed {{");
            };
            let Some(length) = date_tag(&rest[2..end]) else {
                return outside("a tag other than creation_date|date with a numeric layout");
            };
            (true, true, length, end + 2)
        } else {
            let c = rest.chars().next().unwrap_or_default();
            if !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')) {
                return outside(&format!("the character {c:?}"));
            }
            let alnum = c.is_ascii_alphanumeric();
            (alnum, alnum, 1, c.len_utf8())
        };
        first_edge.get_or_insert(edge_start);
        last_edge = edge_end;
        rendered += length;
        rest = &rest[consumed..];
    }
    if counters > 1 {
        return outside("%d more than once");
    }
    if first_edge != Some(true) || !last_edge {
        return outside("it must start and end with a letter, a digit, a date or %d");
    }
    if rendered > NAME_MAX {
        return outside(&format!("it can render to {rendered} bytes"));
    }
    Ok(())
}

/// The inside of a `{{ ... }}` tag, when it is `creation_date|date:"L"` with a safe layout: the
/// length the date renders to.
fn date_tag(inside: &str) -> Option<usize> {
    let layout = inside
        .trim_matches(' ')
        .strip_prefix("creation_date|date:\"")?
        .strip_suffix('"')?;
    let mut rest = layout;
    let mut length = 0;
    let mut last_token = false;
    let mut first_token = None;
    while !rest.is_empty() {
        if let Some(token) = DATE_TOKENS.iter().find(|t| rest.starts_with(**t)) {
            length += token.len();
            rest = &rest[token.len()..];
            last_token = true;
        } else if rest.starts_with(['-', '_', '.']) {
            length += 1;
            rest = &rest[1..];
            last_token = false;
        } else {
            return None;
        }
        first_token.get_or_insert(last_token);
    }
    (first_token == Some(true) && last_token).then_some(length)
}

/// The aliases `snapshots.schedule` accepts (6.0.4 and 7.0 `internal/instance/config.go`), none
/// more often than hourly.
const SCHEDULE_ALIASES: &[&str] = &[
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

/// How often a valid schedule can fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Frequency {
    /// Never, or at most once an hour.
    Hourly,
    /// Possibly more than once an hour.
    Frequent,
}

/// A `snapshots.schedule` value: empty, or triggers separated by `", "`, each an alias or a cron
/// expression of five fields of digits, letters and `* , - /`.
///
/// The frequency is that of all the triggers together: Incus takes a snapshot in every minute
/// that any trigger matches (`snapshotIsScheduledNow`, 6.0.4 and 7.0
/// `cmd/incusd/snapshot_common.go`), so `0 * * * *, 30 * * * *` fires twice an hour. A schedule is
/// at most hourly when the minutes it can fire in are at most one: a cron trigger counts its
/// minute when that field is one number (any other minute field can fire more often), and the
/// aliases count one minute between them (Incus fires `@hourly`, `@daily`, ... at the same minute
/// of the instance). `@startup` fires at every start, as often as the instance starts:
/// `boot.autorestart` restarts a guest that exits up to 10 times a minute, so it is frequent.
pub(crate) fn schedule(value: &str) -> Result<Frequency, String> {
    if value.is_empty() {
        return Ok(Frequency::Hourly);
    }
    let mut frequent = false;
    let mut aliases = false;
    let mut minutes: Vec<u8> = Vec::new();
    for trigger in value.to_ascii_lowercase().split(", ") {
        match trigger {
            "@never" => continue,
            "@startup" => {
                frequent = true;
                continue;
            }
            alias if SCHEDULE_ALIASES.contains(&alias) => {
                aliases = true;
                continue;
            }
            _ => {}
        }
        let fields: Vec<&str> = trigger.split(' ').collect();
        let field_ok = |field: &&str| {
            !field.is_empty()
                && field
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '*' | ',' | '-' | '/'))
        };
        if fields.len() != 5 || !fields.iter().all(field_ok) {
            return Err(format!(
                "snapshots.schedule {value:?} is not a cron expression of five fields or a list of aliases ({})",
                SCHEDULE_ALIASES.join(", ")
            ));
        }
        let minute = (fields[0].len() <= 2)
            .then(|| fields[0].parse::<u8>().ok())
            .flatten()
            .filter(|minute| *minute < 60);
        match minute {
            Some(minute) if !minutes.contains(&minute) => minutes.push(minute),
            Some(_) => {}
            None => frequent = true,
        }
    }
    if frequent || minutes.len() + usize::from(aliases) > 1 {
        Ok(Frequency::Frequent)
    } else {
        Ok(Frequency::Hourly)
    }
}

/// An expiry (`snapshots.expiry`, `snapshots.expiry.manual`): Incus's `GetExpiry` grammar,
/// `<integer><S|M|H|d|w|m|y>` fields separated by one space, each unit once; the length in
/// seconds (`None`: empty, no expiry).
pub(crate) fn expiry(value: &str) -> Result<Option<u64>, String> {
    if value.is_empty() {
        return Ok(None);
    }
    let invalid = || {
        Err(format!(
            "expiry {value:?} is not like \"1d 3H\" (units S M H d w m y, each once)"
        ))
    };
    let mut seen = String::new();
    let mut total: u64 = 0;
    for field in value.split(' ') {
        let Some(unit) = field.chars().last() else {
            return invalid();
        };
        let number = &field[..field.len() - unit.len_utf8()];
        if number.is_empty() || number.len() > 9 || !number.bytes().all(|b| b.is_ascii_digit()) {
            return invalid();
        }
        let seconds: u64 = match unit {
            'S' => 1,
            'M' => 60,
            'H' => 3_600,
            'd' => 86_400,
            'w' => 604_800,
            'm' => 2_678_400,
            'y' => 31_622_400,
            _ => return invalid(),
        };
        if seen.contains(unit) {
            return invalid();
        }
        seen.push(unit);
        let number: u64 = number.parse().unwrap_or(u64::MAX);
        total = total.saturating_add(number.saturating_mul(seconds));
    }
    Ok(Some(total))
}

/// How far a host-impact value reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Reach {
    /// Within the bound: plain.
    Within,
    /// Past the bound: a restricted item, for this reason.
    Beyond(String),
}

/// The bound of a host-impact key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bound {
    /// An integer in `min..=max` (seconds, a priority adjustment).
    Range { min: i64, max: i64 },
    /// A kernel resource limit (`soft[:hard]`, `unlimited`) whose soft and hard values stay at or
    /// under `max`.
    Rlimit { max: u64 },
}

impl Bound {
    /// How far a value that passed its rule reaches.
    pub(crate) fn reach(self, key: &str, value: &str) -> Reach {
        match self {
            Bound::Range { min, max } => match value.parse::<i64>() {
                Ok(number) if (min..=max).contains(&number) => Reach::Within,
                _ => Reach::Beyond(format!(
                    "{key} {value:?} is outside {min}..={max}, which reaches past the instance"
                )),
            },
            Bound::Rlimit { max } => {
                let within = value
                    .split(':')
                    .all(|part| part.parse::<u64>().is_ok_and(|n| n <= max));
                if within {
                    Reach::Within
                } else {
                    Reach::Beyond(format!(
                        "{key} {value:?} raises a kernel limit of the host past {max}"
                    ))
                }
            }
        }
    }
}

/// A value rule: what a config value or device field may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// Any string (free text the daemon stores: `user.*`, `image.*`, guest code).
    Any,
    /// No line break (7.0's rule for `environment.*`).
    NoLineBreak,
    /// No control character (a line of text).
    Line,
    /// Incus's booleans (`true false yes no 1 0 on off`, any case).
    Bool,
    /// A boolean or one of these exact values.
    BoolOr(&'static [&'static str]),
    /// An integer in a range, written as plain decimal digits with an optional `-`.
    Int { min: i64, max: i64 },
    /// One of these exact values.
    OneOf(&'static [&'static str]),
    /// A byte size (`units.ParseByteSizeString`: digits and an optional unit).
    Size,
    /// A boolean or a byte size.
    BoolOrSize,
    /// A memory limit: a non-zero size or percentage.
    Memory,
    /// A CPU count, a CPU set (`0-3,6`) or, from 7.0, a topology (`sockets=1,cores=2`).
    Cpus,
    /// A CPU set, `0` or `balanced` (`limits.cpu.nodes`).
    CpuNodes,
    /// A CPU allowance (`50%` or `25ms/100ms`).
    Allowance,
    /// An I/O limit (`10MB`, `100iops`).
    IoLimit,
    /// An expiry (see [`expiry`]).
    Expiry,
    /// A snapshot schedule (see [`schedule`]).
    Schedule,
    /// A snapshot pattern (see [`snapshot_pattern`]).
    Pattern,
    /// A kernel resource limit: `N`, `unlimited`, or `soft:hard`.
    Rlimit,
    /// An API name (see [`api_name`]): a network, pool or volume.
    ApiName,
    /// A network interface name (`validate.IsInterfaceName`).
    InterfaceName,
    /// An IPv4 address, or `none` (7.0).
    Ipv4,
    /// An IPv6 address, or `none` (7.0).
    Ipv6,
    /// An absolute path inside the guest: no `.` or `..` component, no control character.
    GuestPath,
    /// Comma-separated IP addresses.
    AddressList,
    /// Base64.
    Base64,
    /// A Go duration of whole numbers (`1s`, `1m30s`).
    Duration,
}

/// Incus's accepted spellings of a boolean (`validate.IsBool`).
const BOOLS: &[&str] = &["true", "false", "yes", "no", "1", "0", "on", "off"];

/// The byte-size units of `units.ParseByteSizeString`.
const SIZE_UNITS: &[&str] = &[
    "", "B", "kB", "MB", "GB", "TB", "PB", "EB", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB",
];

fn digits(text: &str, most: usize) -> bool {
    !text.is_empty() && text.len() <= most && text.bytes().all(|b| b.is_ascii_digit())
}

/// Digits followed by one of `units`, the number non-empty and at most 19 digits.
fn number_with_unit(text: &str, units: &[&str]) -> bool {
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    digits(&text[..split], 19) && units.contains(&&text[split..])
}

/// A Go duration of whole numbers and the units `h`, `m`, `s`, `ms`, `us`, `ns`.
fn duration(text: &str) -> bool {
    let mut rest = text;
    while !rest.is_empty() {
        let split = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if !digits(&rest[..split], 9) {
            return false;
        }
        rest = &rest[split..];
        let Some(unit) = ["ns", "us", "ms", "h", "m", "s"]
            .into_iter()
            .find(|unit| rest.starts_with(unit))
        else {
            return false;
        };
        rest = &rest[unit.len()..];
    }
    !text.is_empty()
}

fn cpu_set(text: &str) -> bool {
    text.split(',').all(|range| {
        let mut bounds = range.splitn(2, '-');
        let low = bounds.next().unwrap_or_default();
        let high = bounds.next();
        digits(low, 4) && high.is_none_or(|high| digits(high, 4))
    })
}

impl Rule {
    /// Whether `value` satisfies the rule; the reason when it does not.
    pub(crate) fn check(self, value: &str) -> Result<(), String> {
        let ok = match self {
            Rule::Any => true,
            Rule::NoLineBreak => !value.contains(['\n', '\r']),
            Rule::Line => !value.chars().any(char::is_control),
            Rule::Bool => BOOLS.contains(&value.to_ascii_lowercase().as_str()),
            Rule::BoolOr(values) => values.contains(&value) || Rule::Bool.check(value).is_ok(),
            Rule::Int { min, max } => {
                let body = value.strip_prefix('-').unwrap_or(value);
                digits(body, 19) && value.parse::<i64>().is_ok_and(|n| (min..=max).contains(&n))
            }
            Rule::OneOf(values) => values.contains(&value),
            Rule::Size => number_with_unit(value, SIZE_UNITS),
            Rule::BoolOrSize => Rule::Bool.check(value).is_ok() || Rule::Size.check(value).is_ok(),
            Rule::Memory => match value.strip_suffix('%') {
                Some(percent) => digits(percent, 3) && percent.parse::<u32>().is_ok_and(|p| p > 0),
                None => {
                    number_with_unit(value, SIZE_UNITS)
                        && value
                            .trim_start_matches('0')
                            .starts_with(|c: char| c.is_ascii_digit())
                }
            },
            Rule::Cpus => {
                cpu_set(value)
                    || (value.contains('=')
                        && value.split(',').all(|pair| {
                            pair.split_once('=').is_some_and(|(name, count)| {
                                !name.is_empty()
                                    && name.bytes().all(|b| b.is_ascii_lowercase())
                                    && digits(count, 4)
                            })
                        }))
            }
            Rule::CpuNodes => value == "balanced" || cpu_set(value),
            Rule::Allowance => match value.strip_suffix('%') {
                Some(percent) => digits(percent, 3),
                None => value.split_once('/').is_some_and(|(used, period)| {
                    used.strip_suffix("ms").is_some_and(|n| digits(n, 9))
                        && period.strip_suffix("ms").is_some_and(|n| digits(n, 9))
                }),
            },
            Rule::IoLimit => {
                number_with_unit(value, SIZE_UNITS) || number_with_unit(value, &["iops"])
            }
            Rule::Expiry => return expiry(value).map(|_| ()),
            Rule::Schedule => return schedule(value).map(|_| ()),
            Rule::Pattern => return snapshot_pattern(value),
            Rule::Rlimit => {
                let part = |p: &str| p == "unlimited" || digits(p, 19) && p.parse::<u64>().is_ok();
                let mut parts = value.splitn(2, ':');
                parts.next().is_some_and(part) && parts.next().is_none_or(part)
            }
            Rule::ApiName => return api_name(value),
            Rule::InterfaceName => {
                (2..=15).contains(&value.len())
                    && value
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
            }
            Rule::Ipv4 => value == "none" || value.parse::<Ipv4Addr>().is_ok(),
            Rule::Ipv6 => value == "none" || value.parse::<Ipv6Addr>().is_ok(),
            Rule::GuestPath => {
                value.starts_with('/')
                    && value.len() <= 4096
                    && !value.chars().any(char::is_control)
                    && !value.split('/').any(|part| part == "." || part == "..")
            }
            Rule::AddressList => value.split(',').all(|address| {
                let address = address.trim_matches(' ');
                address.parse::<Ipv4Addr>().is_ok() || address.parse::<Ipv6Addr>().is_ok()
            }),
            Rule::Duration => duration(value),
            Rule::Base64 => {
                use base64::Engine as _;
                base64::engine::general_purpose::STANDARD
                    .decode(value)
                    .is_ok()
            }
        };
        if ok {
            Ok(())
        } else {
            Err(self.expected())
        }
    }

    /// What the rule expects, for an error message.
    fn expected(self) -> String {
        match self {
            Rule::Any => "any text".into(),
            Rule::NoLineBreak => "text without a line break".into(),
            Rule::Line => "text without control characters".into(),
            Rule::Bool => format!("a boolean ({})", BOOLS.join(", ")),
            Rule::BoolOr(values) => format!("a boolean or one of {}", values.join(", ")),
            Rule::Int { min, max } => format!("an integer in {min}..={max}"),
            Rule::OneOf(values) => format!("one of {}", values.join(", ")),
            Rule::Size => "a byte size such as 10GiB".into(),
            Rule::BoolOrSize => "a boolean or a byte size".into(),
            Rule::Memory => "a non-zero byte size or percentage".into(),
            Rule::Cpus => "a CPU count, a CPU set such as 0-3,6, or a topology".into(),
            Rule::CpuNodes => "a NUMA node set or balanced".into(),
            Rule::Allowance => "a percentage or a time slice such as 25ms/100ms".into(),
            Rule::IoLimit => "a byte rate such as 10MB or an IOPS rate such as 100iops".into(),
            Rule::Expiry => "an expiry such as 1d 3H".into(),
            Rule::Schedule => "a cron expression or schedule aliases".into(),
            Rule::Pattern => "a snapshot pattern of the safe grammar".into(),
            Rule::Rlimit => "a limit N, unlimited, or soft:hard".into(),
            Rule::ApiName => "a name of 1 to 64 printable ASCII characters".into(),
            Rule::InterfaceName => "an interface name of 2 to 15 characters [A-Za-z0-9._-]".into(),
            Rule::Ipv4 => "an IPv4 address".into(),
            Rule::Ipv6 => "an IPv6 address".into(),
            Rule::GuestPath => "an absolute path without . or .. components".into(),
            Rule::AddressList => "comma-separated IP addresses".into(),
            Rule::Base64 => "Base64".into(),
            Rule::Duration => "a duration such as 1s or 1m30s".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_follow_incus_7_and_the_core() {
        for good in [
            "eth0",
            "root",
            "data-1",
            "gpu.0",
            "my_disk",
            "a",
            "x".repeat(64).as_str(),
        ] {
            assert!(device_name(good).is_ok(), "{good}");
        }
        for bad in [
            "/mnt/v3",
            "x/../../var/log/auth",
            "a\nb",
            "a b",
            "",
            "-a",
            "a-",
            "..",
            "a%2Fb",
            "a+b",
            "a*b",
            "еth0",
            "a\u{1}b",
            &"x".repeat(65),
        ] {
            assert!(device_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn new_snapshot_names_follow_incus_7() {
        for good in [
            "s1",
            "before-upgrade",
            "a.b_c",
            "s-ѕnap-1",
            "x".repeat(64).as_str(),
        ] {
            assert!(snapshot_name(good).is_ok(), "{good}");
        }
        for bad in [
            "-rf",
            ".x",
            "x.",
            "..",
            "ѕnap",
            "a$b",
            "a*b",
            "a'b",
            "a`id`",
            "a\u{1}b",
            "..\u{0}",
            "a b",
            "a%31",
            "a+b",
            "a/b",
            "",
            &"x".repeat(65),
        ] {
            assert!(snapshot_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn snapshot_patterns_render_only_valid_names() {
        for good in [
            "",
            "snap%d",
            "backup-%d",
            "{{ creation_date|date:\"2006-01-02_15-04-05\" }}",
            "auto-{{creation_date|date:\"20060102\"}}-%d",
            "s1",
            "a..b",
        ] {
            assert!(snapshot_pattern(good).is_ok(), "{good}");
        }
        for bad in [
            "..",
            ".",
            "%d%d",
            "a/b",
            "-%d",
            "%d-",
            "{% ssi \"/etc/passwd\" %}",
            "{{ instance.name }}",
            "{{ creation_date|date:\"Jan\" }}",
            "{{ creation_date|date:\"-0700\" }}",
            "{{ creation_date|date:\"2006 01\" }}",
            "{{ creation_date|date:\"-2006\" }}",
            "snap%s",
            "a b",
            "x%2e",
            "ü%d",
            &format!("{}%d", "x".repeat(50)),
        ] {
            assert!(snapshot_pattern(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn schedules_are_parsed_with_their_frequency() {
        assert_eq!(schedule(""), Ok(Frequency::Hourly));
        assert_eq!(schedule("@hourly, @daily"), Ok(Frequency::Hourly));
        assert_eq!(schedule("0 */6 * * *"), Ok(Frequency::Hourly));
        assert_eq!(schedule("* * * * *"), Ok(Frequency::Frequent));
        assert_eq!(schedule("*/5 * * * *"), Ok(Frequency::Frequent));
        assert_eq!(schedule("0,30 * * * *"), Ok(Frequency::Frequent));
        assert_eq!(schedule("@daily, * * * * *"), Ok(Frequency::Frequent));
        // Triggers fire together: two minutes an hour, or an alias beside a minute, is frequent.
        assert_eq!(schedule("0 * * * *, 30 * * * *"), Ok(Frequency::Frequent));
        assert_eq!(schedule("@daily, 7 * * * *"), Ok(Frequency::Frequent));
        assert_eq!(schedule("5 * * * *, 05 1 * * *"), Ok(Frequency::Hourly));
        assert_eq!(schedule("@never, 0 * * * *"), Ok(Frequency::Hourly));
        // At every start, which boot.autorestart repeats.
        assert_eq!(schedule("@startup"), Ok(Frequency::Frequent));
        assert_eq!(schedule("@STARTUP, @daily"), Ok(Frequency::Frequent));
        assert!(schedule("* * * * * *").is_err());
        assert!(schedule("@every 1s").is_err());
        assert!(schedule("0 0 * * *\n").is_err());
    }

    #[test]
    fn expiries_follow_incus_grammar() {
        assert_eq!(expiry(""), Ok(None));
        assert_eq!(expiry("1d 3H"), Ok(Some(86_400 + 3 * 3_600)));
        assert!(expiry("1d 1d").is_err());
        assert!(expiry(" 1d").is_err());
        assert!(expiry("1x").is_err());
        assert!(expiry("-1d").is_err());
    }

    #[test]
    fn rules_refuse_hostile_values() {
        assert!(Rule::Bool.check("TRUE").is_ok());
        assert!(Rule::Bool.check("true\n").is_err());
        let seconds = Rule::Int {
            min: i64::MIN,
            max: i64::MAX,
        };
        assert!(seconds.check("-5").is_ok());
        assert!(seconds.check("+5").is_err());
        assert!(seconds.check("99999999999999999999").is_err());
        assert!(Rule::Memory.check("512MiB").is_ok());
        assert!(Rule::Memory.check("0").is_err());
        assert!(Rule::Memory.check("50%").is_ok());
        assert!(Rule::Rlimit.check("1024:4096").is_ok());
        assert!(Rule::Rlimit.check("unlimited").is_ok());
        assert!(Rule::Rlimit
            .check("1024\nlxc.apparmor.profile=unconfined")
            .is_err());
        assert!(Rule::GuestPath.check("/data").is_ok());
        assert!(Rule::GuestPath.check("/data/../../etc").is_err());
        assert!(Rule::GuestPath.check("data").is_err());
        assert!(Rule::Ipv4.check("10.0.0.5").is_ok());
        assert!(Rule::Ipv4.check("010.0.0.5").is_err());
        assert!(Rule::Cpus.check("0-3,6").is_ok());
        assert!(Rule::Cpus.check("2").is_ok());
        assert!(Rule::Cpus.check("-1").is_err());
        assert!(Rule::IoLimit.check("100iops").is_ok());
        assert!(Rule::IoLimit.check("10MB").is_ok());
        assert!(Rule::IoLimit.check("10 MB").is_err());
        assert!(Rule::NoLineBreak.check("a\nb").is_err());
    }

    #[test]
    fn bounds_say_how_far_a_value_reaches() {
        let timeout = Bound::Range { min: 0, max: 300 };
        assert_eq!(timeout.reach("k", "30"), Reach::Within);
        assert!(matches!(timeout.reach("k", "2147483647"), Reach::Beyond(_)));
        assert!(matches!(timeout.reach("k", "-1"), Reach::Beyond(_)));
        let memlock = Bound::Rlimit { max: 8 << 20 };
        assert_eq!(memlock.reach("k", "65536:65536"), Reach::Within);
        assert!(matches!(memlock.reach("k", "unlimited"), Reach::Beyond(_)));
    }
}
