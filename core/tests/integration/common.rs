//! Helpers shared by the catalogue tests.

use incus_operations::Descriptor;
use serde_json::Value;

/// Every catalogued descriptor, exported or not, sorted by name.
pub(crate) fn every_descriptor() -> Vec<&'static Descriptor> {
    let mut every: Vec<&'static Descriptor> = incus_operations::all();
    every.extend(
        incus_operations::unavailable()
            .iter()
            .filter_map(|entry| entry.descriptor()),
    );
    every.sort_by_key(|descriptor| descriptor.name());
    every
}

/// Visits every schema object inside `schema` (itself included) with its JSON pointer. Conditions
/// (`if`, `not`) only test a value and declare no shape, so they are not visited.
pub(crate) fn walk_schemas<'a>(
    schema: &'a Value,
    pointer: String,
    visit: &mut dyn FnMut(&str, &'a Value),
) {
    let Some(object) = schema.as_object() else {
        return;
    };
    visit(&pointer, schema);
    for (keyword, value) in object {
        let here = format!("{pointer}/{keyword}");
        match keyword.as_str() {
            "properties" | "$defs" | "patternProperties" => {
                for (name, sub) in value.as_object().into_iter().flatten() {
                    walk_schemas(sub, format!("{here}/{name}"), visit);
                }
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                for (index, sub) in value.as_array().into_iter().flatten().enumerate() {
                    walk_schemas(sub, format!("{here}/{index}"), visit);
                }
            }
            "items"
            | "additionalProperties"
            | "then"
            | "else"
            | "contains"
            | "propertyNames"
            | "unevaluatedProperties"
            | "unevaluatedItems" => {
                walk_schemas(value, here, visit);
            }
            _ => {}
        }
    }
}

/// The example input documented at the end of a description (`Example input: {...}`).
pub(crate) fn documented_example(description: &str) -> Value {
    let (_, example) = description
        .rsplit_once("Example input: ")
        .expect("every description documents an example input");
    serde_json::from_str(example).expect("the example is JSON")
}
