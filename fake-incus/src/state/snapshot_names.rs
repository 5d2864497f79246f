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
        .filter_map(|name| crate::go::fmt::sscanf_index(name, before, after))
        .filter(|&num| num >= 0)
        .map(|num| num.saturating_add(1))
        .max()
        .unwrap_or(0)
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
        out.push_str(&crate::go::time::format(now, layout));
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

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    const NOW: OffsetDateTime = datetime!(2026-12-06 05:41:03.120 UTC);

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
}
