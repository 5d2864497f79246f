//! Loading and validating scenario files.

use std::path::{Path, PathBuf};

use std::collections::BTreeSet;

use serde_json::Value;

use super::format::{Action, Expect, Scenario, Step, CLUSTER_VARIABLES, RUNNER_VARIABLES};
use crate::clauses;
use crate::embedded;
use crate::runner::check::is_snake_segment;

/// Environment variable that points the run at another scenario directory.
pub const DIR_VARIABLE: &str = "INCUS_CONFORMANCE_SCENARIOS";

/// Why a scenario file cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// The file or directory could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file or directory.
        path: PathBuf,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not a scenario (bad JSON, unknown or missing keys, wrong types).
    #[error("{origin} is not a valid scenario: {reason}")]
    Parse {
        /// Where the file came from.
        origin: String,
        /// What is wrong.
        reason: String,
    },
    /// The file parses but breaks a rule of the format.
    #[error("{origin}: {reason}")]
    Invalid {
        /// Where the file came from.
        origin: String,
        /// The rule it breaks.
        reason: String,
    },
}

/// One scenario file: its name, where it came from, and its scenario or why it cannot be used.
#[derive(Debug)]
pub struct ScenarioFile {
    /// The file stem: the scenario's name, and the trial's `scenario::<stem>`.
    pub stem: String,
    /// A path, or `scenarios/<file>` (embedded) for the built-in ones.
    pub origin: String,
    /// The scenario, loaded and validated.
    pub scenario: Result<Scenario, LoadError>,
}

/// The repository's scenario files (`scenarios/*.json`), embedded when the harness was built,
/// sorted by name.
pub fn builtin() -> Vec<ScenarioFile> {
    builtin_in("scenarios")
}

/// The repository's cluster scenarios (`scenarios/cluster/*.json`: a member goes down and comes
/// back), embedded likewise.
pub fn builtin_cluster() -> Vec<ScenarioFile> {
    builtin_in("scenarios/cluster")
}

/// The embedded `*.json` files directly in `dir`.
fn builtin_in(dir: &str) -> Vec<ScenarioFile> {
    embedded::under(dir)
        .filter_map(|(path, text)| {
            let name = path.strip_prefix(dir)?.strip_prefix('/')?;
            let stem = name.strip_suffix(".json").filter(|s| !s.contains('/'))?;
            Some(file(stem, format!("{path} (embedded)"), text))
        })
        .collect()
}

/// The scenario files of `$INCUS_CONFORMANCE_SCENARIOS` when it is set, else the built-in ones.
pub fn from_environment() -> Result<Vec<ScenarioFile>, LoadError> {
    match std::env::var_os(DIR_VARIABLE) {
        Some(dir) => directory(Path::new(&dir)),
        None => Ok(builtin()),
    }
}

/// The `*.json` files of `dir`, sorted by name, each loaded.
pub fn directory(dir: &Path) -> Result<Vec<ScenarioFile>, LoadError> {
    let read = |source| LoadError::Read {
        path: dir.to_owned(),
        source,
    };
    let mut paths = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let path = entry.map_err(read)?.path();
        if path.extension().is_some_and(|e| e == "json") {
            paths.push(path);
        }
    }
    paths.sort();
    Ok(paths
        .iter()
        .map(|path| ScenarioFile {
            stem: stem(path),
            origin: path.display().to_string(),
            scenario: load(path),
        })
        .collect())
}

/// The file stem, used as the scenario name.
pub fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Reads, parses and validates one scenario file.
pub fn load(path: &Path) -> Result<Scenario, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        path: path.to_owned(),
        source,
    })?;
    file(&stem(path), path.display().to_string(), &text).scenario
}

fn file(stem: &str, origin: String, text: &str) -> ScenarioFile {
    let scenario = parse(text)
        .map_err(|reason| LoadError::Parse {
            origin: origin.clone(),
            reason,
        })
        .and_then(|scenario| {
            validate(&scenario, stem).map_err(|reason| LoadError::Invalid {
                origin: origin.clone(),
                reason,
            })?;
            Ok(scenario)
        });
    ScenarioFile {
        stem: stem.to_owned(),
        origin,
        scenario,
    }
}

/// Parses scenario text.
pub fn parse(text: &str) -> Result<Scenario, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// The rules of the format that serde cannot express.
pub fn validate(scenario: &Scenario, stem: &str) -> Result<(), String> {
    if scenario.name != stem {
        return Err(format!(
            "name {:?} differs from the file stem {stem:?}",
            scenario.name
        ));
    }
    if !is_snake_segment(stem) {
        return Err(format!("name {stem:?} is not lower snake case"));
    }
    if scenario.description.trim().is_empty() {
        return Err("the description is empty".into());
    }
    if scenario.clauses.is_empty() {
        return Err("no clause listed".into());
    }
    if let Some(unknown) = scenario.clauses.iter().find(|c| clauses::find(c).is_none()) {
        return Err(format!("unknown clause {unknown}"));
    }
    if scenario.steps.is_empty() {
        return Err("no step".into());
    }
    for (index, step) in scenario.steps.iter().enumerate() {
        let pointers = step.expect.pointers().into_iter().chain(step.save.values());
        if let Some(bad) = pointers
            .into_iter()
            .find(|p| !p.is_empty() && !p.starts_with('/'))
        {
            return Err(format!("step {}: {bad:?} is not a JSON pointer", index + 1));
        }
        step_keys(step).map_err(|e| format!("step {} ({}): {e}", index + 1, step.describe()))?;
    }
    known_variables(scenario)
}

/// The keys a step has fit what it does: a call has an operation and its scopes; a member change
/// names one member and, without `once`, makes no call; an operator's request is all the step
/// does.
fn step_keys(step: &Step) -> Result<(), String> {
    let calls = !step.operation.is_empty() || !step.scopes.is_empty() || !step.input.is_null();
    let judged = step.expect != Expect::default() || step.journal.is_some();
    match step.action() {
        Action::Call(during) => {
            if step.operation.is_empty() {
                return Err("no operation: a step calls an operation, changes a member or sends an operator's request".into());
            }
            match during {
                Some(change) if change.down.is_none() || change.up.is_some() => Err(
                    "a member change during a call takes one member down (`down` with `once`)"
                        .into(),
                ),
                _ => Ok(()),
            }
        }
        Action::Member(change) => {
            if change.down.is_some() == change.up.is_some() {
                Err("a member change names one member, in `down` or in `up`".into())
            } else if calls || judged || !step.save.is_empty() {
                Err("a member change alone makes no call (a call with it needs `once`)".into())
            } else {
                Ok(())
            }
        }
        Action::Operator(_) => {
            if calls || judged || step.member.is_some() {
                Err("an operator's request is all its step does (no call, expectations or member change)".into())
            } else {
                Ok(())
            }
        }
    }
}

/// Every `${name}` a step names (in its input, `equals`, `contains` and `lacks`, its member
/// change and operator's request: the values the runner substitutes) is a runner variable (a
/// cluster scenario's included) or one an earlier step saves.
fn known_variables(scenario: &Scenario) -> Result<(), String> {
    let mut runner = RUNNER_VARIABLES.to_vec();
    if scenario.clustered() {
        runner.extend(CLUSTER_VARIABLES);
    }
    let mut known: BTreeSet<&str> = runner.iter().copied().collect();
    for (index, step) in scenario.steps.iter().enumerate() {
        let mut strings: Vec<Value> = Vec::new();
        if let Some(change) = &step.member {
            strings.extend(
                change
                    .down
                    .iter()
                    .chain(&change.up)
                    .cloned()
                    .map(Value::from),
            );
        }
        if let Some(request) = &step.operator {
            strings.push(Value::from(request.path.clone()));
            strings.extend(request.body.clone());
        }
        let values = std::iter::once(&step.input)
            .chain(step.expect.values())
            .chain(&strings);
        let mut named = Vec::new();
        for value in values {
            variables_in(value, &mut named);
        }
        if let Some(unknown) = named.iter().find(|name| !known.contains(name.as_str())) {
            let label = step.describe();
            let runner = runner.join(", ");
            return Err(format!(
                "scenario {} step {} ({label}): unknown variable ${{{unknown}}}: neither a runner \
                 variable ({runner}) nor saved by an earlier step",
                scenario.name,
                index + 1
            ));
        }
        known.extend(step.save.keys().map(String::as_str));
    }
    Ok(())
}

/// The names of the `${name}` references in the strings of `value`.
fn variables_in(value: &Value, names: &mut Vec<String>) {
    match value {
        Value::String(text) => {
            let mut rest = text.as_str();
            while let Some(start) = rest.find("${") {
                let after = &rest[start + 2..];
                let Some(end) = after.find('}') else { break };
                names.push(after[..end].to_owned());
                rest = &after[end + 1..];
            }
        }
        Value::Array(items) => items.iter().for_each(|item| variables_in(item, names)),
        Value::Object(fields) => fields.values().for_each(|field| variables_in(field, names)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (loading and validating scenario files); a
    //! promise of the harness seen from outside (its command line, certification, the wire) goes in
    //! `tests/harness`.

    use super::*;
    use serde_json::json;

    fn scenario(value: serde_json::Value) -> Result<Scenario, String> {
        parse(&value.to_string())
    }

    fn minimal() -> serde_json::Value {
        json!({
            "name": "list_instances",
            "description": "Lists instances.",
            "clauses": ["inspection::shapes"],
            "steps": [{"operation": "incus_instance_list", "scopes": ["incus.read"], "input": {}}]
        })
    }

    #[test]
    fn minimal_scenario_is_portable_and_valid() {
        let s = scenario(minimal()).unwrap();
        assert!(s.portable());
        assert!(s.steps[0].expect.schema_valid);
        validate(&s, "list_instances").unwrap();
    }

    #[test]
    fn fake_setup_or_journal_makes_a_scenario_fake_only() {
        let mut with_fake = minimal();
        with_fake["fake"] = json!({"faults": [{"any": "rule"}]});
        assert!(!scenario(with_fake).unwrap().portable());
        let mut with_journal = minimal();
        with_journal["steps"][0]["journal"] = json!({"no_backend_request": true});
        assert!(!scenario(with_journal).unwrap().portable());
    }

    #[test]
    fn unknown_keys_are_refused() {
        let mut bad = minimal();
        bad["steps"][0]["expect"] = json!({"stauts": "completed"});
        assert!(scenario(bad).unwrap_err().contains("stauts"));
    }

    #[test]
    fn validation_catches_name_clause_and_pointer_mistakes() {
        let s = scenario(minimal()).unwrap();
        assert!(validate(&s, "other").unwrap_err().contains("file stem"));
        let mut unknown = minimal();
        unknown["clauses"] = json!(["nowhere::clause"]);
        let s = scenario(unknown).unwrap();
        assert!(validate(&s, "list_instances")
            .unwrap_err()
            .contains("unknown clause"));
        let mut pointer = minimal();
        pointer["steps"][0]["expect"] = json!({"present": ["items"]});
        let s = scenario(pointer).unwrap();
        assert!(validate(&s, "list_instances")
            .unwrap_err()
            .contains("JSON pointer"));
    }

    #[test]
    fn an_unknown_variable_is_a_load_error_naming_the_scenario_and_step() {
        let mut uses = minimal();
        uses["steps"] = json!([
            {"operation": "incus_instance_list", "scopes": ["incus.read"],
             "input": {"project": "${project}"}, "save": {"first": "/items/0/name"}},
            {"label": "get the first", "operation": "incus_instance_get", "scopes": ["incus.read"],
             "input": {"name": "${first}", "project": "${project}"},
             "expect": {"equals": {"/item/name": "${first}"}}}
        ]);
        validate(&scenario(uses.clone()).unwrap(), "list_instances").unwrap();
        uses["steps"][1]["expect"]["contains"] = json!({"/item/profiles": "p-${profile}"});
        let error = validate(&scenario(uses.clone()).unwrap(), "list_instances").unwrap_err();
        assert!(
            error.contains(
                "scenario list_instances step 2 (get the first): unknown variable ${profile}"
            ),
            "{error}"
        );
        // The alternatives of `any_of` are checked too, pointers included.
        uses["steps"][1]["expect"]["contains"] = json!({});
        uses["steps"][1]["expect"]["any_of"] = json!({"a": {"equals": {"/item/name": "${nope}"}}});
        let error = validate(&scenario(uses.clone()).unwrap(), "list_instances").unwrap_err();
        assert!(error.contains("unknown variable ${nope}"), "{error}");
        uses["steps"][1]["expect"]["any_of"] = json!({"a": {"present": ["item"]}});
        let error = validate(&scenario(uses.clone()).unwrap(), "list_instances").unwrap_err();
        assert!(error.contains("\"item\" is not a JSON pointer"), "{error}");
        uses["steps"][1]["expect"]
            .as_object_mut()
            .unwrap()
            .remove("any_of");
        // A value saved by a later step is not known yet.
        uses["steps"][0]["input"]["name"] = json!("${first}");
        let error = validate(&scenario(uses).unwrap(), "list_instances").unwrap_err();
        assert!(
            error.contains("step 1 (incus_instance_list): unknown variable ${first}"),
            "{error}"
        );
    }

    #[test]
    fn every_scenario_file_of_the_repository_loads() {
        let files = builtin();
        assert!(files.len() >= 40, "only {} scenario files", files.len());
        for file in files {
            let scenario = file.scenario.unwrap();
            assert_eq!(scenario.name, file.stem);
            assert!(!scenario.clustered(), "{} takes a member down", file.origin);
        }
        let cluster = builtin_cluster();
        assert!(
            cluster.len() >= 6,
            "only {} cluster scenarios",
            cluster.len()
        );
        for file in cluster {
            let scenario = file.scenario.unwrap();
            assert!(scenario.clustered(), "{} takes no member down", file.origin);
        }
    }

    #[test]
    fn a_step_calls_changes_a_member_or_sends_an_operators_request() {
        let mut steps = minimal();
        steps["steps"] = json!([
            {"operator": {"method": "POST", "path": "/1.0/instances?target=${down}",
                          "body": {"name": "c1"}}},
            {"member": {"down": "${down}"}},
            {"operation": "incus_instance_list", "scopes": ["incus.read"], "input": {},
             "member": {"down": "${live}", "once": "waiting"}},
            {"member": {"up": "${down}"}}
        ]);
        let valid = scenario(steps.clone()).unwrap();
        assert!(valid.clustered());
        validate(&valid, "list_instances").unwrap();
        let refused = |step: serde_json::Value| {
            let mut bad = steps.clone();
            bad["steps"][1] = step;
            validate(&scenario(bad).unwrap(), "list_instances").unwrap_err()
        };
        let error = refused(json!({"member": {"down": "${down}", "up": "${down}"}}));
        assert!(
            error.contains("step 2 (") && error.contains("names one member"),
            "{error}"
        );
        let error = refused(json!({"member": {"down": "${down}"}, "scopes": ["incus.read"]}));
        assert!(error.contains("makes no call"), "{error}");
        let error = refused(json!({"operator": {"method": "GET", "path": "/1.0"},
                                   "expect": {"status": "completed"}}));
        assert!(error.contains("all its step does"), "{error}");
        let error = refused(json!({"label": "nothing"}));
        assert!(error.contains("step 2 (nothing): no operation"), "{error}");
        let error = refused(json!({"member": {"down": "${nobody}"}}));
        assert!(error.contains("unknown variable ${nobody}"), "{error}");
        // The cluster's variables are known only where a member goes down.
        let mut standalone = minimal();
        standalone["steps"][0]["input"] = json!({"name": "${down}"});
        let error = validate(&scenario(standalone).unwrap(), "list_instances").unwrap_err();
        assert!(error.contains("unknown variable ${down}"), "{error}");
    }

    #[test]
    fn a_directory_loads_like_the_embedded_files_and_reports_broken_ones() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("list_instances.json"),
            minimal().to_string(),
        )
        .unwrap();
        std::fs::write(dir.path().join("broken.json"), "{").unwrap();
        std::fs::write(dir.path().join("notes.txt"), "not a scenario").unwrap();
        let files = directory(dir.path()).unwrap();
        assert_eq!(files.len(), 2);
        assert_eq!(files[0].stem, "broken");
        let error = files[0].scenario.as_ref().unwrap_err().to_string();
        assert!(error.contains("is not a valid scenario"), "{error}");
        assert!(files[1].scenario.is_ok());
        assert!(matches!(
            directory(&dir.path().join("missing")),
            Err(LoadError::Read { .. })
        ));
    }
}
