//! Verification of the journal from any language (control `POST /verify`): how many requests
//! match a method, a path pattern (the fake's one dialect, [`crate::path_matches`]), query
//! parameters and body fields, or whether an ordered sequence of such requests arrived; and when
//! not, the nearest misses with what differs.

use crate::journal::JournalEntry;
use crate::pattern::path_matches;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use std::collections::BTreeMap;

/// How many nearest misses an answer lists.
pub(crate) const NEAREST_KEPT: usize = 3;

/// What a request must be to match. Every field given must hold.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Matcher {
    /// The method (`*` or absent: any; case is ignored).
    #[serde(default)]
    pub(crate) method: Option<String>,
    /// The path pattern (`*` within a segment, `**` across; absent: any).
    #[serde(default)]
    pub(crate) path: Option<String>,
    /// Query parameters that must be present with these values.
    #[serde(default)]
    pub(crate) query: BTreeMap<String, String>,
    /// A JSON value the body must contain: an object's keys must be present with matching
    /// values (recursively); anything else must be equal.
    #[serde(default)]
    pub(crate) body: Option<Value>,
}

/// Why a `POST /verify` body was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid verification: {0}")]
pub(crate) struct VerifyError(String);

/// A parsed `POST /verify` body.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Verify {
    /// A count of matching requests within bounds.
    Count {
        matcher: Matcher,
        at_least: u64,
        at_most: Option<u64>,
        since: u64,
    },
    /// Requests matching each matcher, in this order (others may come between).
    Sequence { steps: Vec<Matcher>, since: u64 },
}

impl Verify {
    /// Reads `{matcher fields, "count" | "at_least" / "at_most", "since"}` or
    /// `{"sequence": [matcher, ...], "since"}`.
    pub(crate) fn parse(value: Value) -> Result<Self, VerifyError> {
        let Value::Object(mut object) = value else {
            return Err(VerifyError("the body must be a JSON object".into()));
        };
        let number =
            |object: &mut Map<String, Value>, key: &str| -> Result<Option<u64>, VerifyError> {
                match object.remove(key) {
                    None => Ok(None),
                    Some(v) => v.as_u64().map(Some).ok_or_else(|| {
                        VerifyError(format!("{key} must be a whole number, not {v}"))
                    }),
                }
            };
        let since = number(&mut object, "since")?.unwrap_or(0);
        if let Some(steps) = object.remove("sequence") {
            if let Some(key) = object.keys().next() {
                return Err(VerifyError(format!(
                    "{key:?} does not go with \"sequence\" (give it on each step)"
                )));
            }
            let steps: Vec<Matcher> =
                serde_json::from_value(steps).map_err(|e| VerifyError(format!("sequence: {e}")))?;
            if steps.is_empty() {
                return Err(VerifyError("sequence must have at least one step".into()));
            }
            return Ok(Self::Sequence { steps, since });
        }
        let count = number(&mut object, "count")?;
        let at_least = number(&mut object, "at_least")?;
        let at_most = number(&mut object, "at_most")?;
        let (at_least, at_most) = match (count, at_least, at_most) {
            (Some(n), None, None) => (n, Some(n)),
            (Some(_), _, _) => {
                return Err(VerifyError(
                    "give count, or at_least and/or at_most, not both".into(),
                ))
            }
            (None, least, most) => (least.unwrap_or(1), most),
        };
        if at_most.is_some_and(|most| most < at_least) {
            return Err(VerifyError(format!(
                "at_most ({}) is below at_least ({at_least})",
                at_most.unwrap_or_default()
            )));
        }
        let matcher: Matcher = serde_json::from_value(Value::Object(object))
            .map_err(|e| VerifyError(e.to_string()))?;
        Ok(Self::Count {
            matcher,
            at_least,
            at_most,
            since,
        })
    }

    /// The verdict over the journal's kept entries: `{"pass": true, ...}` or `{"pass": false,
    /// ..., "nearest": [...]}`.
    pub(crate) fn check(&self, entries: &[JournalEntry]) -> Value {
        match self {
            Self::Count {
                matcher,
                at_least,
                at_most,
                since,
            } => {
                let considered: Vec<&JournalEntry> =
                    entries.iter().filter(|e| e.seq > *since).collect();
                let matched: Vec<u64> = considered
                    .iter()
                    .filter(|e| matcher.misses(e).is_empty())
                    .map(|e| e.seq)
                    .collect();
                let count = matched.len() as u64;
                let pass = count >= *at_least && at_most.is_none_or(|most| count <= most);
                let expected = match at_most {
                    Some(most) if most == at_least => format!("exactly {at_least}"),
                    Some(most) => format!("{at_least} to {most}"),
                    None => format!("at least {at_least}"),
                };
                let mut answer = json!({
                    "pass": pass, "matched": count, "expected": expected, "matches": matched,
                });
                if !pass && count < *at_least {
                    answer["nearest"] = nearest(matcher, considered.into_iter());
                }
                answer
            }
            Self::Sequence { steps, since } => {
                let mut after = *since;
                let mut found = Vec::new();
                for (index, step) in steps.iter().enumerate() {
                    let hit = entries
                        .iter()
                        .find(|e| e.seq > after && step.misses(e).is_empty());
                    match hit {
                        Some(entry) => {
                            after = entry.seq;
                            found.push(entry.seq);
                        }
                        None => {
                            return json!({
                                "pass": false, "matches": found, "failed_step": index,
                                "nearest": nearest(step, entries.iter().filter(|e| e.seq > after)),
                            })
                        }
                    }
                }
                json!({"pass": true, "matches": found})
            }
        }
    }
}

/// The entries that miss `matcher` by the fewest things, with what they miss.
fn nearest<'a>(matcher: &Matcher, entries: impl Iterator<Item = &'a JournalEntry>) -> Value {
    let mut misses: Vec<(usize, &JournalEntry, Vec<String>)> = entries
        .map(|e| {
            let why = matcher.misses(e);
            (why.len(), e, why)
        })
        .filter(|(n, _, _)| *n > 0)
        .collect();
    misses.sort_by_key(|(n, e, _)| (*n, e.seq));
    misses
        .into_iter()
        .take(NEAREST_KEPT)
        .map(|(_, e, why)| {
            json!({"seq": e.seq, "method": e.method, "path": e.path, "query": e.query, "misses": why})
        })
        .collect()
}

impl Matcher {
    /// A matcher of a method and a path pattern only.
    pub(crate) fn of(method: &str, path: &str) -> Self {
        Self {
            method: Some(method.to_string()),
            path: Some(path.to_string()),
            ..Self::default()
        }
    }

    /// What `entry` misses (empty: it matches).
    pub(crate) fn misses(&self, entry: &JournalEntry) -> Vec<String> {
        let mut why = Vec::new();
        if let Some(method) = self.method.as_deref().filter(|m| *m != "*") {
            if !method.eq_ignore_ascii_case(&entry.method) {
                why.push(format!("method is {}, not {method}", entry.method));
            }
        }
        if let Some(pattern) = &self.path {
            if !path_matches(pattern, &entry.path) {
                why.push(format!("path {} does not match {pattern}", entry.path));
            }
        }
        if !self.query.is_empty() {
            let query: BTreeMap<String, String> =
                url::form_urlencoded::parse(entry.query.as_deref().unwrap_or_default().as_bytes())
                    .into_owned()
                    .collect();
            for (key, want) in &self.query {
                match query.get(key) {
                    Some(got) if got == want => {}
                    Some(got) => why.push(format!("query {key} is {got:?}, not {want:?}")),
                    None => why.push(format!("query has no {key}")),
                }
            }
        }
        if let Some(want) = &self.body {
            match serde_json::from_str::<Value>(&entry.body) {
                Ok(got) => contains("body", &got, want, &mut why),
                Err(_) if entry.body_truncated => why.push(format!(
                    "body is cut at {} bytes in the journal, so its fields cannot be read",
                    crate::journal::BODY_KEPT
                )),
                Err(_) if entry.body.is_empty() => why.push("body is empty".into()),
                Err(_) => why.push("body is not JSON".into()),
            }
        }
        why
    }
}

/// Whether `got` holds `want` (objects: every key of `want`, recursively; else equal).
fn contains(at: &str, got: &Value, want: &Value, why: &mut Vec<String>) {
    match (got, want) {
        (Value::Object(got), Value::Object(want)) => {
            for (key, want) in want {
                let here = format!("{at}.{key}");
                match got.get(key) {
                    Some(got) => contains(&here, got, want, why),
                    None => why.push(format!("{here} is missing")),
                }
            }
        }
        _ if got == want => {}
        _ => why.push(format!("{at} is {got}, not {want}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Listener;

    fn entry(seq: u64, method: &str, path: &str, query: Option<&str>, body: &str) -> JournalEntry {
        let mut entry = JournalEntry::received(
            Listener::Direct,
            method.into(),
            path.into(),
            body.as_bytes(),
        );
        entry.seq = seq;
        entry.query = query.map(str::to_string);
        entry
    }

    fn journal() -> Vec<JournalEntry> {
        vec![
            entry(1, "GET", "/1.0", None, ""),
            entry(
                2,
                "POST",
                "/1.0/instances",
                Some("project=p"),
                r#"{"name":"c1","source":{"type":"none"}}"#,
            ),
            entry(
                3,
                "PUT",
                "/1.0/instances/c1/state",
                Some("project=p"),
                r#"{"action":"start"}"#,
            ),
            entry(
                4,
                "POST",
                "/1.0/instances",
                None,
                r#"{"name":"c2","source":{"type":"image"}}"#,
            ),
        ]
    }

    fn verify(body: Value) -> Value {
        Verify::parse(body).unwrap().check(&journal())
    }

    #[test]
    fn a_count_matches_method_path_query_and_body_fields() {
        let hit = verify(
            json!({"method": "post", "path": "/1.0/*", "query": {"project": "p"},
                                "body": {"source": {"type": "none"}}, "count": 1}),
        );
        assert_eq!(
            (hit["pass"].clone(), hit["matches"].clone()),
            (json!(true), json!([2]))
        );
        let two = verify(json!({"method": "POST", "path": "/1.0/instances", "at_least": 2}));
        assert_eq!(two["pass"], true);
        let too_many = verify(json!({"path": "/**", "at_most": 2}));
        assert_eq!(
            (too_many["pass"].clone(), too_many["matched"].clone()),
            (json!(false), json!(4))
        );
    }

    #[test]
    fn a_failed_count_lists_the_nearest_misses_with_what_differs() {
        let miss = verify(json!({"method": "POST", "path": "/1.0/instances",
                                 "body": {"name": "c3", "source": {"type": "image"}}}));
        assert_eq!(miss["pass"], false);
        assert_eq!(miss["expected"], "at least 1");
        let nearest = miss["nearest"].as_array().unwrap();
        assert_eq!(nearest[0]["seq"], 4, "one miss: the name");
        assert_eq!(
            nearest[0]["misses"],
            json!(["body.name is \"c2\", not \"c3\""])
        );
        assert_eq!(nearest[1]["seq"], 2, "two misses");
        assert!(nearest.len() <= NEAREST_KEPT);
    }

    #[test]
    fn a_sequence_passes_in_order_and_names_the_step_that_failed() {
        let ordered = verify(json!({"sequence": [
            {"method": "POST", "path": "/1.0/instances"},
            {"method": "PUT", "path": "/1.0/instances/*/state", "body": {"action": "start"}},
        ]}));
        assert_eq!(
            (ordered["pass"].clone(), ordered["matches"].clone()),
            (json!(true), json!([2, 3]))
        );
        let reversed = verify(json!({"sequence": [
            {"method": "PUT", "path": "/1.0/instances/*/state"},
            {"method": "POST", "path": "/1.0/instances", "body": {"name": "c1"}},
        ]}));
        assert_eq!(reversed["pass"], false);
        assert_eq!(reversed["failed_step"], 1);
        assert_eq!(reversed["nearest"][0]["seq"], 4);
    }

    #[test]
    fn bad_verifications_are_refused_with_the_reason() {
        for (body, says) in [
            (json!([]), "must be a JSON object"),
            (json!({"path": "/x", "count": 1, "at_least": 1}), "not both"),
            (
                json!({"path": "/x", "at_least": 3, "at_most": 1}),
                "below at_least",
            ),
            (json!({"path": "/x", "count": -1}), "whole number"),
            (json!({"sequence": []}), "at least one step"),
            (
                json!({"sequence": [{"path": "/x"}], "method": "GET"}),
                "does not go with",
            ),
            (json!({"pth": "/x"}), "unknown field"),
        ] {
            let err = Verify::parse(body.clone()).unwrap_err().to_string();
            assert!(err.contains(says), "{body}: {err}");
        }
    }
}
