//! The name of a snapshot taken without one, from `snapshots.pattern`, as the daemon computes it
//! (`internal/server/instance/instance_utils.go` `NextSnapshotName`, the volume snapshot handler
//! of `cmd/incusd/storage_volumes_snapshot.go`, and their `GetNext*SnapshotIndex` queries).
//!
//! The pattern is a pongo2 template rendered with `creation_date` (the daemon's `time.Now()`,
//! UTC here), then a `%d` in it becomes the next free index: one more than the largest number
//! that Go's `fmt.Sscanf` reads from an existing snapshot's name with the pattern as its format.
//! The fake renders a faithful subset of the template language: literal text and
//! `{{ creation_date|date:"<Go layout>" }}`. Anything else is refused with an error that says
//! the fake cannot render it, never a silently different name.

use std::fmt;
use time::OffsetDateTime;

/// The pattern of a snapshot taken without a name when `snapshots.pattern` is unset or empty.
pub(crate) const DEFAULT_PATTERN: &str = "snap%d";

/// Why no name came out of a pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum PatternError {
    /// The daemon's own refusal (`Snapshot pattern may contain '%d' only once`).
    Daemon(String),
    /// A template the fake does not render (the daemon might).
    Unsupported(String),
}

impl PatternError {
    /// The HTTP status the fake answers: the daemon's 500 (`SmartError` of a plain error, or
    /// `InternalError`), 501 for what the fake does not imitate.
    pub(crate) fn status(&self) -> u16 {
        match self {
            PatternError::Daemon(_) => 500,
            PatternError::Unsupported(_) => 501,
        }
    }
}

impl fmt::Display for PatternError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PatternError::Daemon(text) => f.write_str(text),
            PatternError::Unsupported(pattern) => write!(
                f,
                "fake-incus cannot render the snapshots.pattern {pattern:?}: it renders literal \
                 text, %d and {{{{ creation_date|date:\"<Go layout>\" }}}} only"
            ),
        }
    }
}

/// `snapshots.pattern` as the daemon reads it: unset or empty is [`DEFAULT_PATTERN`].
pub(crate) fn pattern_or_default(config: Option<&str>) -> &str {
    config.filter(|p| !p.is_empty()).unwrap_or(DEFAULT_PATTERN)
}

/// An instance snapshot's name (`NextSnapshotName`, the same on 6.0 and 7.0): the rendered
/// pattern; its one `%d` replaced by the next index; without `%d`, a name already taken gets
/// `-%d` appended and indexed (`keep`, `keep-0`, `keep-1`).
pub(crate) fn next_instance_snapshot_name<'a>(
    pattern: &str,
    now: OffsetDateTime,
    existing: impl Iterator<Item = &'a str> + Clone,
) -> Result<String, PatternError> {
    let rendered = render(pattern, now)?;
    match rendered.matches("%d").count() {
        0 if !existing.clone().any(|name| name == rendered) => Ok(rendered),
        0 => {
            let pattern = format!("{rendered}-%d");
            Ok(pattern.replacen("%d", &next_index(&pattern, existing).to_string(), 1))
        }
        1 => Ok(rendered.replacen("%d", &next_index(&rendered, existing).to_string(), 1)),
        _ => Err(PatternError::Daemon(
            "Snapshot pattern may contain '%d' only once".into(),
        )),
    }
}

/// `GetNextInstanceSnapshotIndex`/`GetNextStorageVolumeSnapshotIndex`: one more than the largest
/// number `fmt.Sscanf(name, pattern, &num)` reads from an existing name, or 0. `pattern` holds
/// a `%d`; the caller makes sure of it (the daemon's query indexes the part after it).
pub(crate) fn next_index<'a>(pattern: &str, existing: impl Iterator<Item = &'a str>) -> i64 {
    let (before, after) = pattern.split_once("%d").unwrap_or((pattern, ""));
    existing
        .filter_map(|name| scan_index(name, before, after))
        .filter(|&num| num >= 0)
        .map(|num| num.saturating_add(1))
        .max()
        .unwrap_or(0)
}

/// What `fmt.Sscanf(name, before + "%d" + after, &num)` stores when it reads one value without
/// error: the literal parts match exactly (`%%` matches `%`; any other verb in them has no
/// operand, an error), the number may have leading spaces and a sign, text after the format is
/// ignored.
fn scan_index(name: &str, before: &str, after: &str) -> Option<i64> {
    let rest = scan_literal(name, before)?;
    let trimmed = rest.trim_start_matches([' ', '\t', '\r']);
    let sign = usize::from(trimmed.starts_with(['+', '-']));
    let digits = trimmed[sign..]
        .bytes()
        .take_while(u8::is_ascii_digit)
        .count();
    if digits == 0 {
        return None;
    }
    let (number, rest) = trimmed.split_at(sign + digits);
    let num = number.parse::<i64>().ok()?;
    scan_literal(rest, after).map(|_| num)
}

/// The input after `format`'s literal text, or `None` where Go's `Sscanf` stops with an error.
fn scan_literal<'a>(input: &'a str, format: &str) -> Option<&'a str> {
    let mut input = input;
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        let expected = match c {
            '%' if chars.next() == Some('%') => '%',
            '%' => return None,
            c => c,
        };
        input = input.strip_prefix(expected)?;
    }
    Some(input)
}

/// Go's `fmt.Sprintf(format, index)`, as 6.0's volume snapshot handler names a snapshot: the
/// first `%d` is the index, a second one `%!d(MISSING)`, no `%d` at all appends
/// `%!(EXTRA int=N)`.
pub(crate) fn go_sprintf_index(format: &str, index: i64) -> Result<String, PatternError> {
    let mut out = String::with_capacity(format.len() + 8);
    let mut used = false;
    let mut chars = format.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('%') => out.push('%'),
            Some('d') if !used => {
                used = true;
                out.push_str(&index.to_string());
            }
            Some('d') => out.push_str("%!d(MISSING)"),
            _ => return Err(PatternError::Unsupported(format.to_string())),
        }
    }
    if !used {
        out.push_str(&format!("%!(EXTRA int={index})"));
    }
    Ok(out)
}

/// Renders the pattern as pongo2 would: literal text and `{{ creation_date|date:"LAYOUT" }}`.
pub(crate) fn render(pattern: &str, now: OffsetDateTime) -> Result<String, PatternError> {
    let unsupported = || PatternError::Unsupported(pattern.to_string());
    let mut out = String::with_capacity(pattern.len());
    let mut rest = pattern;
    while let Some(start) = rest.find('{') {
        let (text, tail) = rest.split_at(start);
        out.push_str(text);
        if tail.starts_with("{%") || tail.starts_with("{#") {
            return Err(unsupported());
        }
        if !tail.starts_with("{{") {
            out.push('{');
            rest = &tail[1..];
            continue;
        }
        let end = tail.find("}}").ok_or_else(unsupported)?;
        let layout = date_tag_layout(&tail[2..end]).ok_or_else(unsupported)?;
        out.push_str(&go_format(now, layout));
        rest = &tail[end + 2..];
    }
    out.push_str(rest);
    // pongo2 renders again what still looks like a template; the subset never does.
    if out.contains("{{") || out.contains("{%") {
        return Err(unsupported());
    }
    Ok(out)
}

/// The layout of `creation_date|date:"LAYOUT"` (either quote, spaces around the parts).
fn date_tag_layout(tag: &str) -> Option<&str> {
    let (variable, filter) = tag.trim().split_once('|')?;
    if variable.trim_end() != "creation_date" {
        return None;
    }
    let (name, argument) = filter.trim_start().split_once(':')?;
    if name.trim_end() != "date" {
        return None;
    }
    let argument = argument.trim();
    let quote = argument
        .chars()
        .next()
        .filter(|q| matches!(q, '"' | '\''))?;
    let layout = argument.strip_prefix(quote)?.strip_suffix(quote)?;
    (!layout.contains(quote) && !layout.contains('\\')).then_some(layout)
}

/// Go's `time.Time.Format(layout)` in UTC, for the reference-time elements of Go's `nextStdChunk`.
pub(crate) fn go_format(t: OffsetDateTime, layout: &str) -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    const DAYS: [&str; 7] = [
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
    ];
    let month = MONTHS[usize::from(u8::from(t.month())) - 1];
    let weekday = DAYS[usize::from(t.weekday().number_days_from_monday())];
    let hour12 = match t.hour() % 12 {
        0 => 12,
        h => h,
    };
    let mut out = String::with_capacity(layout.len() + 8);
    let mut rest = layout;
    while !rest.is_empty() {
        // The longest element first where one is a prefix of another, as Go checks them.
        let chunk: Option<(usize, String)> = [
            ("January", month.to_string()),
            ("Jan", month[..3].to_string()),
            ("Monday", weekday.to_string()),
            ("Mon", weekday[..3].to_string()),
            ("MST", "UTC".to_string()),
            ("2006", format!("{:04}", t.year())),
            ("002", format!("{:03}", t.ordinal())),
            ("__2", format!("{:>3}", t.ordinal())),
            ("01", format!("{:02}", u8::from(t.month()))),
            ("02", format!("{:02}", t.day())),
            ("03", format!("{hour12:02}")),
            ("04", format!("{:02}", t.minute())),
            ("05", format!("{:02}", t.second())),
            ("06", format!("{:02}", t.year().rem_euclid(100))),
            ("15", format!("{:02}", t.hour())),
            // Go reads `_2006` as a literal `_` and the year.
            ("_2006", format!("_{:04}", t.year())),
            ("_2", format!("{:>2}", t.day())),
            ("1", u8::from(t.month()).to_string()),
            ("2", t.day().to_string()),
            ("3", hour12.to_string()),
            ("4", t.minute().to_string()),
            ("5", t.second().to_string()),
            ("PM", if t.hour() < 12 { "AM" } else { "PM" }.to_string()),
            ("pm", if t.hour() < 12 { "am" } else { "pm" }.to_string()),
            ("-07:00:00", "+00:00:00".to_string()),
            ("-070000", "+000000".to_string()),
            ("-07:00", "+00:00".to_string()),
            ("-0700", "+0000".to_string()),
            ("-07", "+00".to_string()),
            ("Z07:00:00", "Z".to_string()),
            ("Z070000", "Z".to_string()),
            ("Z07:00", "Z".to_string()),
            ("Z0700", "Z".to_string()),
            ("Z07", "Z".to_string()),
        ]
        .into_iter()
        .find(|(element, _)| rest.starts_with(element))
        .map(|(element, value)| (element.len(), value))
        .or_else(|| fraction(t, rest));
        match chunk {
            Some((len, value)) => {
                out.push_str(&value);
                rest = &rest[len..];
            }
            None => {
                let c = rest.chars().next().unwrap_or_default();
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

/// `.000` (fixed digits) or `.999` (trailing zeros dropped, the dot too if nothing is left):
/// Go's fractional seconds, a run of one digit after `.` or `,` not followed by another digit.
fn fraction(t: OffsetDateTime, rest: &str) -> Option<(usize, String)> {
    let bytes = rest.as_bytes();
    let (&separator, tail) = bytes.split_first()?;
    let digit = *tail.first()?;
    if !matches!(separator, b'.' | b',') || !matches!(digit, b'0' | b'9') {
        return None;
    }
    let run = tail.iter().take_while(|&&b| b == digit).count();
    if tail.get(run).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let nanos = format!("{:09}", t.nanosecond());
    let digits = &nanos[..run.min(9)];
    let value = if digit == b'0' {
        format!("{}{digits}", char::from(separator))
    } else {
        let trimmed = digits.trim_end_matches('0');
        if trimmed.is_empty() {
            String::new()
        } else {
            format!("{}{trimmed}", char::from(separator))
        }
    };
    Some((1 + run, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-12-06 05:41:03.120 UTC);

    #[test]
    fn the_date_filter_formats_go_reference_layouts() {
        assert_eq!(go_format(NOW, "2006-01-02"), "2026-12-06");
        assert_eq!(go_format(NOW, "20060102-150405"), "20261206-054103");
        assert_eq!(
            go_format(NOW, "Jan_2-3PM-Monday_2006"),
            "Dec 6-5AM-Sunday_2026"
        );
        assert_eq!(go_format(NOW, "05.000-05.999"), "03.120-03.12");
        assert_eq!(go_format(NOW, "x002y"), "x340y");
    }

    #[test]
    fn a_pattern_renders_literals_and_creation_date_only() {
        let date = "d{{ creation_date|date:\"2006-01-02\" }}-%d";
        assert_eq!(render(date, NOW).unwrap(), "d2026-12-06-%d");
        assert_eq!(render("{{creation_date|date:'06'}}", NOW).unwrap(), "26");
        for other in [
            "{{ creation_date }}",
            "{% if 1 %}a{% endif %}",
            "{{ x|date:\"2006\" }}",
        ] {
            assert!(matches!(
                render(other, NOW),
                Err(PatternError::Unsupported(_))
            ));
        }
    }

    #[test]
    fn the_index_is_one_more_than_the_largest_sscanf_reads() {
        let names = ["snap0", "snap7", "snapx", "snap3-old", "snap-9", "other2"];
        assert_eq!(next_index("snap%d", names.into_iter()), 8);
        assert_eq!(next_index("a%db", ["a4b", "a5", "a6c"].into_iter()), 5);
        assert_eq!(next_index("x%dy%d", ["x0y%!d(MISSING)"].into_iter()), 0);
    }

    #[test]
    fn a_taken_literal_gets_a_dash_index() {
        let names = ["keep", "keep-0"];
        let next = next_instance_snapshot_name("keep", NOW, names.into_iter());
        assert_eq!(next.unwrap(), "keep-1");
        let twice = next_instance_snapshot_name("a%db%d", NOW, names.into_iter());
        assert!(matches!(twice, Err(PatternError::Daemon(_))));
    }

    #[test]
    fn six_zero_volume_names_are_go_sprintf_of_the_index() {
        assert_eq!(go_sprintf_index("snap%d", 2).unwrap(), "snap2");
        assert_eq!(go_sprintf_index("x%dy%d", 0).unwrap(), "x0y%!d(MISSING)");
        assert_eq!(go_sprintf_index("keep", 0).unwrap(), "keep%!(EXTRA int=0)");
    }
}
