//! Running a scenario against a target.

use std::collections::BTreeMap;

use serde_json::Value;

use super::format::{Scenario, Step};
use super::target::Target;
use super::{journal, matcher};

/// Runs every step in order; the error lists every mismatch of the first failing step, with
/// the call and the result, so that the failure reads as a reproducer.
pub(crate) async fn run(scenario: &Scenario, target: &dyn Target) -> Result<(), String> {
    let mut saved = BTreeMap::new();
    for (index, step) in scenario.steps.iter().enumerate() {
        let input = substitute(&step.input, &saved);
        let mut expect = step.expect.clone();
        for value in expect.equals.values_mut() {
            *value = substitute(value, &saved);
        }
        let before = target.journal().map(|j| j.len());
        let result = target
            .call(&step.operation, &step.scopes, input.clone())
            .await;
        let mut problems = matcher::mismatches(
            &expect,
            &result,
            target.output_schema(&step.operation).as_ref(),
        );
        if let Some(expect) = &step.journal {
            match (target.journal(), before) {
                (Some(all), Some(before)) => {
                    problems.extend(journal::mismatches(
                        expect,
                        all.get(before..).unwrap_or(&[]),
                    ));
                }
                _ => problems.push("journal expectations need a fake backend".into()),
            }
        }
        if !problems.is_empty() {
            return Err(report(scenario, index, step, &input, &result, &problems));
        }
        save(&mut saved, step, &result)?;
    }
    Ok(())
}

fn report(
    scenario: &Scenario,
    index: usize,
    step: &Step,
    input: &Value,
    result: &Value,
    problems: &[String],
) -> String {
    let label = step.label.as_deref().unwrap_or(&step.operation);
    let mut text = format!(
        "scenario {} step {} ({label}) failed:\n",
        scenario.name,
        index + 1
    );
    for problem in problems {
        text.push_str(&format!("  - {problem}\n"));
    }
    text.push_str(&format!(
        "  call: {} scopes={:?} input={}\n  result: {}",
        step.operation,
        step.scopes,
        matcher::short(input),
        matcher::short(result)
    ));
    text
}

fn save(saved: &mut BTreeMap<String, Value>, step: &Step, result: &Value) -> Result<(), String> {
    for (name, pointer) in &step.save {
        let value = result
            .pointer(pointer)
            .ok_or_else(|| format!("cannot save {name}: {pointer} is absent from {result}"))?;
        saved.insert(name.clone(), value.clone());
    }
    Ok(())
}

/// Replaces `"${name}"` strings by saved values, and `${name}` inside longer strings by the
/// saved value's text.
pub(crate) fn substitute(input: &Value, saved: &BTreeMap<String, Value>) -> Value {
    match input {
        Value::String(text) => substitute_text(text, saved),
        Value::Array(items) => Value::Array(items.iter().map(|v| substitute(v, saved)).collect()),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| (k.clone(), substitute(v, saved)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn substitute_text(text: &str, saved: &BTreeMap<String, Value>) -> Value {
    if let Some(name) = text.strip_prefix("${").and_then(|t| t.strip_suffix('}')) {
        if let Some(value) = saved.get(name) {
            return value.clone();
        }
    }
    let mut out = text.to_owned();
    for (name, value) in saved {
        let text = match value {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out = out.replace(&format!("${{{name}}}"), &text);
    }
    Value::String(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn saved_values_replace_whole_strings_and_parts() {
        let saved = BTreeMap::from([("op".to_owned(), json!("abc")), ("n".to_owned(), json!(3))]);
        let input = json!({"operation_id": "${op}", "path": "/x/${op}", "count": "${n}", "k": 1});
        assert_eq!(
            substitute(&input, &saved),
            json!({"operation_id": "abc", "path": "/x/abc", "count": 3, "k": 1})
        );
    }
}
