//! The expected-failures baseline: tests known to fail, listed so that a run stays green
//! until they are fixed, and turns red as soon as one of them passes (a stale entry).
//!
//! Two file formats are accepted:
//! - text: one test name per line; blank lines and lines starting with `#` are ignored;
//! - JSON: an array of test names, or an object `{"expected_failures": [names...]}`.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Why a baseline file could not be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BaselineError {
    /// The file could not be read.
    #[error("cannot read expected-failures file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file looks like JSON but is not a list of names.
    #[error("expected-failures file {path} is not a JSON list of test names: {reason}")]
    Json { path: PathBuf, reason: String },
}

/// The set of test names expected to fail.
#[derive(Debug, Default, Clone)]
pub(crate) struct Baseline {
    names: BTreeSet<String>,
}

impl Baseline {
    /// Reads a baseline file (text or JSON, see the module documentation).
    pub(crate) fn load(path: &Path) -> Result<Self, BaselineError> {
        let text = std::fs::read_to_string(path).map_err(|source| BaselineError::Read {
            path: path.to_owned(),
            source,
        })?;
        Self::parse(&text).map_err(|reason| BaselineError::Json {
            path: path.to_owned(),
            reason,
        })
    }

    /// Parses baseline text; an error is returned only for malformed JSON content.
    pub(crate) fn parse(text: &str) -> Result<Self, String> {
        let trimmed = text.trim_start();
        let names = if trimmed.starts_with('[') || trimmed.starts_with('{') {
            parse_json(trimmed)?
        } else {
            parse_lines(text)
        };
        Ok(Self { names })
    }

    /// Whether `name` is listed.
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.names.contains(name)
    }

    /// Listed names that are not among `known` test names (stale: the test no longer exists).
    pub(crate) fn unknown<'a>(&'a self, known: &BTreeSet<&str>) -> Vec<&'a str> {
        self.names
            .iter()
            .map(String::as_str)
            .filter(|name| !known.contains(name))
            .collect()
    }
}

fn parse_lines(text: &str) -> BTreeSet<String> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

fn parse_json(text: &str) -> Result<BTreeSet<String>, String> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let list = match &value {
        serde_json::Value::Array(list) => list,
        serde_json::Value::Object(map) => map
            .get("expected_failures")
            .and_then(serde_json::Value::as_array)
            .ok_or("an object must hold an array under \"expected_failures\"")?,
        _ => return Err("expected an array of strings".into()),
    };
    list.iter()
        .map(|item| {
            item.as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("{item} is not a string"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the expected-failures baseline); a promise
    //! of the harness seen from outside (its command line, certification, the wire) goes in
    //! `tests/harness`.

    use super::*;

    #[test]
    fn text_baseline_skips_comments_and_blank_lines() {
        let baseline = Baseline::parse("# known\n\na::b::c\n  d::e::f  \n").unwrap();
        assert!(baseline.contains("a::b::c"));
        assert!(baseline.contains("d::e::f"));
        assert!(!baseline.contains("# known"));
    }

    #[test]
    fn json_baseline_accepts_a_list_or_an_object() {
        assert!(Baseline::parse(r#"["a::b::c"]"#)
            .unwrap()
            .contains("a::b::c"));
        assert!(Baseline::parse(r#"{"expected_failures": ["x::y::z"]}"#)
            .unwrap()
            .contains("x::y::z"));
    }

    #[test]
    fn json_baseline_rejects_non_strings() {
        assert!(Baseline::parse("[1]").is_err());
        assert!(Baseline::parse(r#"{"other": []}"#).is_err());
    }

    #[test]
    fn unknown_entries_are_reported() {
        let baseline = Baseline::parse("a::b::c\ngone::x::y\n").unwrap();
        let known = BTreeSet::from(["a::b::c"]);
        assert_eq!(baseline.unknown(&known), vec!["gone::x::y"]);
    }
}
