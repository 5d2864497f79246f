//! Matching a result against a step's expectations; every mismatch is reported, not only the first.

use serde_json::Value;

use super::format::Expect;

/// The error shape every result may take (contract A); used when an operation has no output
/// schema (an unknown operation name).
fn error_schema() -> Value {
    serde_json::json!({
        "type": "object",
        "required": ["error"],
        "additionalProperties": false,
        "properties": {"error": {
            "type": "object",
            "required": ["kind", "message"],
            "additionalProperties": false,
            "properties": {
                "kind": {"type": "string"},
                "message": {"type": "string"},
                "http_status": {"type": "integer"},
                "error_code": {"type": "integer"},
                "pointer": {"type": "string"},
                "limit": {"type": "integer"},
                "operation_id": {"type": "string"}
            }
        }}
    })
}

/// Checks `result` against `expect`; `schema` is the operation's output schema, if known.
/// Returns one line per mismatch.
pub fn mismatches(expect: &Expect, result: &Value, schema: Option<&Value>) -> Vec<String> {
    let mut out = own_mismatches(expect, result);
    if expect.schema_valid {
        out.extend(schema_errors(result, schema));
    }
    out
}

/// The name of the first alternative of `expect.any_of` (in name order) that `result` meets; `None`
/// when it meets none of them, or when there are none. An alternative's `schema_valid` is not
/// used: the step's own says whether the result is checked against the schema.
pub fn matching_alternative<'e>(expect: &'e Expect, result: &Value) -> Option<&'e str> {
    expect
        .any_of
        .iter()
        .find(|(_, alternative)| own_mismatches(alternative, result).is_empty())
        .map(|(name, _)| name.as_str())
}

/// The mismatches of the expectations themselves, without the schema (alternatives nest).
fn own_mismatches(expect: &Expect, result: &Value) -> Vec<String> {
    let mut out = Vec::new();
    if !result.is_object() {
        out.push(format!("the result is not a JSON object: {result}"));
    }
    if let Some(status) = &expect.status {
        equal(&mut out, result, "/status", &Value::String(status.clone()));
    }
    match &expect.error_kind {
        Some(Some(kind)) => equal(
            &mut out,
            result,
            "/error/kind",
            &Value::String(kind.clone()),
        ),
        Some(None) if result.pointer("/error").is_some() => {
            out.push(format!("expected no error, got {}", result["error"]));
        }
        _ => {}
    }
    for (pointer, expected) in &expect.equals {
        equal(&mut out, result, pointer, expected);
    }
    for pointer in &expect.present {
        if result.pointer(pointer).is_none() {
            out.push(format!("{pointer} is absent"));
        }
    }
    for pointer in &expect.absent {
        if let Some(found) = result.pointer(pointer) {
            out.push(format!(
                "{pointer} should be absent, found {}",
                short(found)
            ));
        }
    }
    for (pointer, expected) in &expect.lengths {
        length(&mut out, result, pointer, *expected);
    }
    for (pointer, bound) in &expect.at_least {
        match result.pointer(pointer).and_then(Value::as_f64) {
            Some(found) if found >= *bound => {}
            Some(found) => out.push(format!("{pointer} is {found}, less than {bound}")),
            None => out.push(format!("{pointer} is not a number")),
        }
    }
    for (pointer, bound) in &expect.at_most {
        match result.pointer(pointer).and_then(Value::as_f64) {
            Some(found) if found <= *bound => {}
            Some(found) => out.push(format!("{pointer} is {found}, more than {bound}")),
            None => out.push(format!("{pointer} is not a number")),
        }
    }
    for (pointer, item) in &expect.contains {
        for item in items(item) {
            contains(&mut out, result, pointer, item);
        }
    }
    for (pointer, item) in &expect.lacks {
        for item in items(item) {
            lacks(&mut out, result, pointer, item);
        }
    }
    for (pointer, pattern) in &expect.matches {
        matches(&mut out, result, pointer, pattern);
    }
    if !expect.any_of.is_empty() && matching_alternative(expect, result).is_none() {
        let each = expect.any_of.iter().map(|(name, alternative)| {
            format!("{name}: {}", own_mismatches(alternative, result).join(", "))
        });
        out.push(format!(
            "meets none of the alternatives ({})",
            each.collect::<Vec<_>>().join("; ")
        ));
    }
    out
}

fn equal(out: &mut Vec<String>, result: &Value, pointer: &str, expected: &Value) {
    match result.pointer(pointer) {
        Some(found) if found == expected => {}
        Some(found) => out.push(format!(
            "{pointer} is {}, expected {expected}",
            short(found)
        )),
        None => out.push(format!("{pointer} is absent, expected {expected}")),
    }
}

fn length(out: &mut Vec<String>, result: &Value, pointer: &str, expected: usize) {
    let found = match result.pointer(pointer) {
        Some(Value::Array(items)) => items.len(),
        Some(Value::Object(map)) => map.len(),
        Some(Value::String(text)) => text.len(),
        Some(other) => {
            out.push(format!("{pointer} has no length: {}", short(other)));
            return;
        }
        None => {
            out.push(format!("{pointer} is absent, expected length {expected}"));
            return;
        }
    };
    if found != expected {
        out.push(format!("{pointer} has length {found}, expected {expected}"));
    }
}

fn contains(out: &mut Vec<String>, result: &Value, pointer: &str, item: &Value) {
    match result.pointer(pointer) {
        Some(Value::Array(items)) if items.iter().any(|found| holds(found, item)) => {}
        Some(Value::Array(items)) => out.push(format!(
            "{pointer} holds no item like {item} among {} items",
            items.len()
        )),
        Some(other) => out.push(format!("{pointer} is not an array: {}", short(other))),
        None => out.push(format!("{pointer} is absent, expected an item like {item}")),
    }
}

/// The items of a `contains` or `lacks` value: the elements of an array, else the value itself.
fn items(value: &Value) -> &[Value] {
    match value {
        Value::Array(items) => items,
        item => std::slice::from_ref(item),
    }
}

fn lacks(out: &mut Vec<String>, result: &Value, pointer: &str, item: &Value) {
    match result.pointer(pointer) {
        Some(Value::Array(items)) => {
            if let Some(found) = items.iter().find(|found| holds(found, item)) {
                out.push(format!(
                    "{pointer} holds {}, expected no item like {item}",
                    short(found)
                ));
            }
        }
        Some(other) => out.push(format!("{pointer} is not an array: {}", short(other))),
        None => out.push(format!("{pointer} is absent, expected an array")),
    }
}

fn matches(out: &mut Vec<String>, result: &Value, pointer: &str, pattern: &str) {
    let regex = match regex::Regex::new(pattern) {
        Ok(regex) => regex,
        Err(e) => {
            return out.push(format!(
                "{pointer}: {pattern:?} is not a regular expression: {e}"
            ))
        }
    };
    match result.pointer(pointer) {
        Some(Value::String(text)) if regex.is_match(text) => {}
        Some(found) => out.push(format!(
            "{pointer} is {}, which does not match {pattern:?}",
            short(found)
        )),
        None => out.push(format!(
            "{pointer} is absent, expected a match of {pattern:?}"
        )),
    }
}

/// `found` equals `item`, or both are objects and `found` has every field of `item`, equal.
fn holds(found: &Value, item: &Value) -> bool {
    match (found, item) {
        (Value::Object(found), Value::Object(item)) => item
            .iter()
            .all(|(key, value)| found.get(key) == Some(value)),
        _ => found == item,
    }
}

/// Output-schema violations of `result` (the generic error shape when `schema` is `None`).
pub fn schema_errors(result: &Value, schema: Option<&Value>) -> Vec<String> {
    let fallback;
    let schema = match schema {
        Some(schema) => schema,
        None => {
            fallback = error_schema();
            &fallback
        }
    };
    match jsonschema::validator_for(schema) {
        Ok(validator) => validator
            .iter_errors(result)
            .map(|e| format!("output schema: {} at {}", e, e.instance_path()))
            .collect(),
        Err(e) => vec![format!("the output schema does not compile: {e}")],
    }
}

/// A value cut to a readable length for messages.
pub fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.len() <= 200 {
        return text;
    }
    let cut = (0..=200)
        .rev()
        .find(|i| text.is_char_boundary(*i))
        .unwrap_or(0);
    format!("{}... ({} bytes)", &text[..cut], text.len())
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (matching a result against a step's
    //! expectations); a promise of the harness seen from outside (its command line, certification,
    //! the wire) goes in `tests/harness`.

    use super::*;
    use serde_json::json;

    fn expect(value: Value) -> Expect {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn matching_result_has_no_mismatch() {
        let e = expect(json!({
            "status": "completed",
            "equals": {"/operation/status": "Success"},
            "present": ["/operation_id"],
            "absent": ["/error"],
            "lengths": {"/operation/resources": 1},
            "at_most": {"/waited_seconds": 10},
            "error_kind": null,
            "schema_valid": false
        }));
        let result = json!({"status": "completed", "operation_id": "x", "waited_seconds": 3,
            "operation": {"status": "Success", "resources": {"instances": []}}});
        assert_eq!(mismatches(&e, &result, None), Vec::<String>::new());
    }

    #[test]
    fn every_mismatch_is_reported() {
        let e = expect(json!({
            "status": "completed",
            "equals": {"/count": 2},
            "present": ["/items"],
            "lengths": {"/items": 1},
            "schema_valid": false
        }));
        let found = mismatches(&e, &json!({"status": "running", "count": 3}), None);
        assert_eq!(found.len(), 4, "{found:?}");
        assert!(found[0].contains("/status is \"running\""), "{found:?}");
    }

    #[test]
    fn error_kind_null_means_no_error() {
        let e = expect(json!({"error_kind": null, "schema_valid": false}));
        let found = mismatches(
            &e,
            &json!({"error": {"kind": "native", "message": "m"}}),
            None,
        );
        assert_eq!(found.len(), 1);
    }

    #[test]
    fn results_are_checked_against_the_output_schema() {
        let schema = json!({"type": "object", "required": ["item"]});
        let e = Expect::default();
        assert!(mismatches(&e, &json!({"item": {}}), Some(&schema)).is_empty());
        assert_eq!(
            mismatches(&e, &json!({"items": []}), Some(&schema)).len(),
            1
        );
    }

    #[test]
    fn without_a_schema_only_the_error_shape_is_valid() {
        let e = Expect::default();
        let error = json!({"error": {"kind": "unknown_operation", "message": "no such operation"}});
        assert!(mismatches(&e, &error, None).is_empty());
        let extra = json!({"error": {"kind": "x", "message": "m", "secret": 1}});
        assert!(!mismatches(&e, &extra, None).is_empty());
    }

    #[test]
    fn contains_finds_an_item_by_some_of_its_fields_and_at_least_bounds_below() {
        let result = json!({"items": [{"name": "a", "status": "Running"}, {"name": "b"}], "n": 5});
        let found = expect(json!({
            "contains": {"/items": {"name": "a", "status": "Running"}},
            "at_least": {"/n": 5},
            "schema_valid": false
        }));
        assert_eq!(mismatches(&found, &result, None), Vec::<String>::new());
        let missing = expect(json!({
            "contains": {"/items": {"name": "a", "status": "Stopped"}, "/n": 5, "/none": "x"},
            "at_least": {"/n": 6},
            "schema_valid": false
        }));
        let problems = mismatches(&missing, &result, None);
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(problems[0].contains("less than 6"), "{problems:?}");
        assert!(problems[1].contains("holds no item"), "{problems:?}");
        assert!(problems[2].contains("not an array"), "{problems:?}");
        assert!(problems[3].contains("is absent"), "{problems:?}");
    }

    #[test]
    fn contains_takes_several_items_lacks_refuses_them_and_matches_reads_text() {
        let result = json!({"items": [{"name": "a", "status": "Error"}, {"name": "b"}],
            "error": {"message": "Server isn't ready yet"}});
        let holds = expect(json!({
            "contains": {"/items": [{"name": "a", "status": "Error"}, {"name": "b"}]},
            "lacks": {"/items": [{"name": "b", "status": "Error"}, {"name": "c"}]},
            "matches": {"/error/message": "^Server isn't ready yet$|Unable to connect to"},
            "schema_valid": false
        }));
        assert_eq!(mismatches(&holds, &result, None), Vec::<String>::new());
        let fails = expect(json!({
            "contains": {"/items": [{"name": "a"}, {"name": "c"}]},
            "lacks": {"/items": {"status": "Error"}, "/error": {"x": 1}},
            "matches": {"/error/message": "^Unable", "/nothing": "x", "/items": "("},
            "schema_valid": false
        }));
        let problems = mismatches(&fails, &result, None);
        assert_eq!(problems.len(), 6, "{problems:?}");
        assert!(
            problems[0].contains("holds no item like {\"name\":\"c\"}"),
            "{problems:?}"
        );
        assert!(
            problems[1].contains("/error is not an array"),
            "{problems:?}"
        );
        assert!(
            problems[2].contains("expected no item like"),
            "{problems:?}"
        );
        assert!(
            problems[3].contains("does not match \"^Unable\""),
            "{problems:?}"
        );
        assert!(
            problems[4].contains("not a regular expression"),
            "{problems:?}"
        );
        assert!(problems[5].contains("/nothing is absent"), "{problems:?}");
    }

    /// An answer that differs between Incus lines: one of the alternatives must hold, and a
    /// result that meets none of them names each alternative with what it missed.
    #[test]
    fn any_of_holds_when_one_alternative_holds() {
        let e = expect(json!({
            "schema_valid": false,
            "any_of": {
                "accepted, then failed": {"status": "failed", "present": ["/operation_id"]},
                "refused before acceptance": {"error_kind": "native", "equals": {"/error/http_status": 500}}
            }
        }));
        let failed = json!({"status": "failed", "operation_id": "x"});
        let refused = json!({"error": {"kind": "native", "message": "m", "http_status": 500}});
        assert!(mismatches(&e, &failed, None).is_empty());
        assert!(mismatches(&e, &refused, None).is_empty());
        assert_eq!(
            matching_alternative(&e, &failed),
            Some("accepted, then failed")
        );
        assert_eq!(
            matching_alternative(&e, &refused),
            Some("refused before acceptance")
        );
        let completed = json!({"status": "completed", "operation_id": "x"});
        let problems = mismatches(&e, &completed, None);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0]
                .starts_with("meets none of the alternatives (accepted, then failed: /status"),
            "{problems:?}"
        );
        assert!(
            problems[0].contains("refused before acceptance: /error/kind is absent"),
            "{problems:?}"
        );
        assert_eq!(matching_alternative(&e, &completed), None);
    }

    /// The alternatives come on top of the step's own expectations, which hold whichever matches.
    #[test]
    fn any_of_adds_to_the_own_expectations() {
        let e = expect(json!({
            "absent": ["/item"],
            "schema_valid": false,
            "any_of": {"a": {"status": "failed"}, "b": {"status": "completed"}}
        }));
        let problems = mismatches(&e, &json!({"status": "failed", "item": 1}), None);
        assert_eq!(problems, ["/item should be absent, found 1"]);
    }

    #[test]
    fn long_values_are_shortened_in_messages() {
        let long = Value::String("é".repeat(500));
        assert!(short(&long).ends_with("bytes)"));
    }
}
