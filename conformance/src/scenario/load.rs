//! Loading and validating scenario files.

use std::path::{Path, PathBuf};

use super::format::Scenario;
use crate::clauses;
use crate::runner::check::is_snake_segment;

/// Why a scenario file cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum LoadError {
    /// The file or directory could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// The file is not a scenario (bad JSON, unknown or missing keys, wrong types).
    #[error("{path} is not a valid scenario: {reason}")]
    Parse { path: PathBuf, reason: String },
    /// The file parses but breaks a rule of the format.
    #[error("{path}: {reason}")]
    Invalid { path: PathBuf, reason: String },
}

/// The `*.json` files of `dir`, sorted by name.
pub(crate) fn files(dir: &Path) -> Result<Vec<PathBuf>, LoadError> {
    let read = |source| LoadError::Read {
        path: dir.to_owned(),
        source,
    };
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(read)? {
        let path = entry.map_err(read)?.path();
        if path.extension().is_some_and(|e| e == "json") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// The file stem, used as the scenario name.
pub(crate) fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Reads, parses and validates one scenario file.
pub(crate) fn load(path: &Path) -> Result<Scenario, LoadError> {
    let text = std::fs::read_to_string(path).map_err(|source| LoadError::Read {
        path: path.to_owned(),
        source,
    })?;
    let scenario = parse(&text).map_err(|reason| LoadError::Parse {
        path: path.to_owned(),
        reason,
    })?;
    validate(&scenario, &stem(path)).map_err(|reason| LoadError::Invalid {
        path: path.to_owned(),
        reason,
    })?;
    Ok(scenario)
}

/// Parses scenario text.
pub(crate) fn parse(text: &str) -> Result<Scenario, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// The rules of the format that serde cannot express.
pub(crate) fn validate(scenario: &Scenario, stem: &str) -> Result<(), String> {
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
        let pointers = step
            .expect
            .equals
            .keys()
            .chain(step.expect.lengths.keys())
            .chain(step.expect.at_most.keys())
            .chain(&step.expect.present)
            .chain(&step.expect.absent)
            .chain(step.save.values());
        if let Some(bad) = pointers
            .into_iter()
            .find(|p| !p.is_empty() && !p.starts_with('/'))
        {
            return Err(format!("step {}: {bad:?} is not a JSON pointer", index + 1));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
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
    fn every_scenario_file_of_the_repository_loads() {
        let dir = super::super::default_dir();
        let files = files(&dir).unwrap();
        assert!(files.len() >= 40, "only {} scenario files", files.len());
        for file in files {
            load(&file).unwrap();
        }
    }
}
