//! Portable scenarios (`scenarios/*.json`, format in `scenarios/README.md`) run against a real Incus.
//! A scenario is portable when it has no `fake` section and no step has `journal` expectations; the
//! others need the fake and are counted as skipped.
//!
//! Until the harness exposes its loader publicly, this module reads the documented format itself:
//! the steps (operation, scopes, input with `${var}` substitution, save) and the expectations
//! (`status`, `error_kind`, `equals`, `present`, `absent`, `lengths`, `at_most`, `schema_valid`).
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;

use crate::operations::Operations;

/// One scenario file.
#[derive(Debug, Clone, Deserialize)]
pub(crate) struct Scenario {
    pub(crate) name: String,
    #[serde(default)]
    fake: Option<Value>,
    steps: Vec<Step>,
}

#[derive(Debug, Clone, Deserialize)]
struct Step {
    #[serde(default)]
    label: Option<String>,
    operation: String,
    scopes: Vec<String>,
    input: Value,
    #[serde(default)]
    expect: Option<Expect>,
    #[serde(default)]
    journal: Option<Value>,
    #[serde(default)]
    save: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
struct Expect {
    #[serde(default)]
    status: Option<String>,
    #[serde(default, deserialize_with = "present_or_null")]
    error_kind: Option<Option<String>>,
    #[serde(default)]
    equals: BTreeMap<String, Value>,
    #[serde(default)]
    present: Vec<String>,
    #[serde(default)]
    absent: Vec<String>,
    #[serde(default)]
    lengths: BTreeMap<String, usize>,
    #[serde(default)]
    at_most: BTreeMap<String, f64>,
    #[serde(default = "yes")]
    schema_valid: bool,
}

fn yes() -> bool {
    true
}

/// `"error_kind": null` (no error expected) differs from a missing key (no expectation).
fn present_or_null<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Option<String>>, D::Error> {
    Option::<String>::deserialize(d).map(Some)
}

impl Scenario {
    /// Runs everywhere: no fake-only seed or faults, no journal expectations.
    pub(crate) fn portable(&self) -> bool {
        self.fake.is_none() && self.steps.iter().all(|s| s.journal.is_none())
    }
}

/// Where the scenarios are: `--scenarios`, else `./scenarios`, else the repository's `scenarios/`.
pub(crate) fn default_dir() -> PathBuf {
    let here = PathBuf::from("scenarios");
    if here.is_dir() {
        return here;
    }
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("scenarios")
}

/// Loads every `*.json` of `dir`, sorted by file name.
pub(crate) fn load(dir: &Path) -> Result<Vec<Scenario>, String> {
    let entries =
        std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?;
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| {
            let text =
                std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
        })
        .collect()
}

/// What one scenario did: each step's label and result, and the first failure.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    pub(crate) steps: Vec<(String, Value)>,
    pub(crate) failure: Option<String>,
}

/// Runs a scenario's steps in order; the first failing step stops it. `project`, when given,
/// replaces the scenario's project `default` (and is the binding's default project anyway).
pub(crate) async fn run(
    ops: &dyn Operations,
    schemas: &HashMap<String, Value>,
    scenario: &Scenario,
    project: Option<&str>,
) -> Outcome {
    let mut saved: BTreeMap<String, Value> = BTreeMap::new();
    let mut steps = Vec::new();
    for (index, step) in scenario.steps.iter().enumerate() {
        let label = step
            .label
            .clone()
            .unwrap_or_else(|| format!("step {} ({})", index + 1, step.operation));
        let mut input = substitute(&step.input, &saved);
        if let (Some(project), Some(given)) = (project, input.get_mut("project")) {
            if given == "default" {
                *given = Value::String(project.to_owned());
            }
        }
        let scopes: Vec<&str> = step.scopes.iter().map(String::as_str).collect();
        let result = ops.run(&step.operation, input.clone(), &scopes).await;
        steps.push((label.clone(), result.clone()));
        let expect = step.expect.clone().unwrap_or_default();
        let expect = Expect {
            equals: expect
                .equals
                .iter()
                .map(|(pointer, value)| (pointer.clone(), substitute(value, &saved)))
                .collect(),
            ..expect
        };
        let mut problems = mismatches(&expect, &result, schemas.get(&step.operation));
        for (name, pointer) in &step.save {
            match result.pointer(pointer) {
                Some(value) => {
                    saved.insert(name.clone(), value.clone());
                }
                None => problems.push(format!("cannot save {name}: {pointer} is absent")),
            }
        }
        if !problems.is_empty() {
            let failure = format!(
                "{label}: {} (input {input}, result {result})",
                problems.join("; ")
            );
            return Outcome {
                steps,
                failure: Some(failure),
            };
        }
    }
    Outcome {
        steps,
        failure: None,
    }
}

fn substitute(input: &Value, saved: &BTreeMap<String, Value>) -> Value {
    match input {
        Value::String(text) => {
            if let Some(value) = text
                .strip_prefix("${")
                .and_then(|t| t.strip_suffix('}'))
                .and_then(|name| saved.get(name))
            {
                return value.clone();
            }
            let mut out = text.clone();
            for (name, value) in saved {
                let text = value
                    .as_str()
                    .map_or_else(|| value.to_string(), str::to_owned);
                out = out.replace(&format!("${{{name}}}"), &text);
            }
            Value::String(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, saved)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute(v, saved)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn mismatches(expect: &Expect, result: &Value, schema: Option<&Value>) -> Vec<String> {
    let mut out = Vec::new();
    let mut equal = |pointer: &str, wanted: &Value| match result.pointer(pointer) {
        Some(found) if found == wanted => {}
        found => out.push(format!(
            "{pointer}: expected {wanted}, got {}",
            found.unwrap_or(&Value::Null)
        )),
    };
    if let Some(status) = &expect.status {
        equal("/status", &Value::String(status.clone()));
    }
    match &expect.error_kind {
        Some(Some(kind)) => equal("/error/kind", &Value::String(kind.clone())),
        Some(None) if result.get("error").is_some() => {
            out.push(format!("expected no error, got {}", result["error"]))
        }
        _ => {}
    }
    for (pointer, wanted) in &expect.equals {
        match result.pointer(pointer) {
            Some(found) if found == wanted => {}
            found => out.push(format!(
                "{pointer}: expected {wanted}, got {}",
                found.unwrap_or(&Value::Null)
            )),
        }
    }
    out.extend(
        expect
            .present
            .iter()
            .filter(|p| result.pointer(p).is_none())
            .map(|p| format!("{p} is absent")),
    );
    out.extend(
        expect
            .absent
            .iter()
            .filter(|p| result.pointer(p).is_some())
            .map(|p| format!("{p} should be absent")),
    );
    for (pointer, wanted) in &expect.lengths {
        let length = match result.pointer(pointer) {
            Some(Value::Array(a)) => Some(a.len()),
            Some(Value::Object(o)) => Some(o.len()),
            Some(Value::String(s)) => Some(s.len()),
            _ => None,
        };
        if length != Some(*wanted) {
            out.push(format!(
                "{pointer}: expected length {wanted}, got {length:?}"
            ));
        }
    }
    for (pointer, bound) in &expect.at_most {
        match result.pointer(pointer).and_then(Value::as_f64) {
            Some(found) if found <= *bound => {}
            found => out.push(format!(
                "{pointer}: expected at most {bound}, got {found:?}"
            )),
        }
    }
    if expect.schema_valid {
        if let Some(schema) = schema {
            match jsonschema::validator_for(schema) {
                Ok(validator) => out.extend(
                    validator
                        .iter_errors(result)
                        .take(3)
                        .map(|e| format!("schema: {e}")),
                ),
                Err(e) => out.push(format!("the output schema does not compile: {e}")),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_repository_scenarios_load_and_portability_is_derived_from_content() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scenarios");
        let all = load(&dir).expect("the scenario files parse");
        assert!(all.iter().any(Scenario::portable), "no portable scenario");
        assert!(all.iter().any(|s| !s.portable()), "no fake-only scenario");
        let with_fake = all
            .iter()
            .filter(|s| s.fake.is_some())
            .all(|s| !s.portable());
        assert!(with_fake);
    }

    #[test]
    fn expectations_report_every_mismatch() {
        let expect: Expect = serde_json::from_value(json!({
            "status": "completed",
            "error_kind": null,
            "equals": {"/exit_code": 0},
            "present": ["/stdout"],
            "absent": ["/operation"],
            "lengths": {"/stdout/data": 6},
            "at_most": {"/duration_ms": 10}
        }))
        .expect("expect");
        let good = json!({"status": "completed", "exit_code": 0, "stdout": {"data": "hello\n"}, "duration_ms": 3});
        assert!(mismatches(&expect, &good, None).is_empty());
        let bad = json!({"status": "failed", "exit_code": 1, "operation": {}, "duration_ms": 30, "error": {}});
        assert_eq!(
            mismatches(&expect, &bad, None).len(),
            7,
            "{:?}",
            mismatches(&expect, &bad, None)
        );
    }

    #[test]
    fn saved_values_are_substituted_whole_and_inside_strings() {
        let saved = BTreeMap::from([("op".to_owned(), json!("abc")), ("n".to_owned(), json!(3))]);
        let input = json!({"operation_id": "${op}", "name": "web-${n}", "count": "${n}"});
        assert_eq!(
            substitute(&input, &saved),
            json!({"operation_id": "abc", "name": "web-3", "count": 3})
        );
    }
}
