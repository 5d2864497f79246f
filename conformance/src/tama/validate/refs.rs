//! `$ref` resolution into `#/components/schemas/`, and reading a schema through a `$ref`.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;
use serde_json::{Map, Value};

/// The only place a reference may point into.
pub(crate) const COMPONENTS_PREFIX: &str = "#/components/schemas/";

/// Keywords that may stand beside a `$ref` without stopping the read-through: annotations.
const ANNOTATIONS: &[&str] = &[
    "title",
    "description",
    "$comment",
    "default",
    "examples",
    "example",
    "deprecated",
    "readOnly",
    "writeOnly",
    "externalDocs",
];

/// Why a reference is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RefError {
    /// Not a JSON pointer into `#/components/schemas/` of this document.
    External,
    /// Points there, but nothing (or no schema) is at that location.
    Unresolved,
}

/// A resolved reference: the component it lands in and the schema it names.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Resolved<'a> {
    pub(crate) component: &'a str,
    pub(crate) target: &'a Value,
}

/// Resolves `reference` (a `$ref` or `$dynamicRef` value) within `document`.
pub(crate) fn resolve<'a>(document: &'a Value, reference: &str) -> Result<Resolved<'a>, RefError> {
    if !reference.starts_with(COMPONENTS_PREFIX) {
        return Err(RefError::External);
    }
    let fragment = &reference[1..];
    let pointer: Cow<'_, str> = percent_decode_str(fragment)
        .decode_utf8()
        .map_err(|_| RefError::Unresolved)?;
    let target = document.pointer(&pointer).ok_or(RefError::Unresolved)?;
    if !(target.is_object() || target.is_boolean()) {
        return Err(RefError::Unresolved);
    }
    let component_key = pointer["/components/schemas/".len()..]
        .split('/')
        .next()
        .unwrap_or_default();
    let component = document
        .get("components")
        .and_then(|c| c.get("schemas"))
        .and_then(Value::as_object)
        .and_then(|schemas| schemas.get_key_value(&unescape(component_key)))
        .map(|(name, _)| name.as_str())
        .ok_or(RefError::Unresolved)?;
    Ok(Resolved { component, target })
}

fn unescape(segment: &str) -> String {
    segment.replace("~1", "/").replace("~0", "~")
}

/// A schema's own keywords, read through `$ref`-only schemas.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Own<'a> {
    /// The keywords of the schema reached.
    Keywords(&'a Map<String, Value>),
    /// A boolean schema or a cycle of `$ref`-only schemas: no keywords at all.
    Nothing,
    /// A `$ref` on the way does not resolve. That is reported once, at the `$ref`, by the
    /// reference rules; the rules that read through it have nothing to judge.
    Unresolved,
}

impl<'a> Own<'a> {
    /// The keyword `key`, or `None` when absent or when there are no keywords.
    pub(crate) fn get(self, key: &str) -> Option<&'a Value> {
        match self {
            Own::Keywords(own) => own.get(key),
            Own::Nothing | Own::Unresolved => None,
        }
    }
}

/// The object whose own keywords count as the schema's top-level `type`, `properties` and
/// `required`: the schema itself, or, when it is only a `$ref` (with annotations), the schema
/// it points at, read through again if that is itself only a `$ref`. [`Own::Nothing`] for a
/// boolean schema or a reference cycle, [`Own::Unresolved`] for an unresolvable reference.
pub(crate) fn own_keywords<'a>(document: &'a Value, schema: &'a Value) -> Own<'a> {
    let Some(mut current) = schema.as_object() else {
        return Own::Nothing;
    };
    let mut seen: Vec<*const Map<String, Value>> = Vec::new();
    while let Some(reference) = ref_only(current) {
        if seen.contains(&std::ptr::from_ref(current)) {
            return Own::Nothing;
        }
        seen.push(std::ptr::from_ref(current));
        let Ok(resolved) = resolve(document, reference) else {
            return Own::Unresolved;
        };
        let Some(target) = resolved.target.as_object() else {
            return Own::Nothing;
        };
        current = target;
    }
    Own::Keywords(current)
}

/// The `$ref` of a schema that holds nothing else but annotations.
fn ref_only(schema: &Map<String, Value>) -> Option<&str> {
    let reference = schema.get("$ref")?.as_str()?;
    let only_annotations = schema
        .keys()
        .all(|key| key == "$ref" || ANNOTATIONS.contains(&key.as_str()) || key.starts_with("x-"));
    only_annotations.then_some(reference)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn document() -> Value {
        json!({"components": {"schemas": {
            "A": {"$ref": "#/components/schemas/B", "title": "A"},
            "B": {"type": "object", "properties": {"x": {"type": "string"}}},
            "Loop": {"$ref": "#/components/schemas/Loop"},
            "a/b": {"type": "string"}
        }}})
    }

    #[test]
    fn references_outside_components_schemas_are_external() {
        let doc = document();
        for reference in [
            "https://example.com/s",
            "other.json#/x",
            "#/$defs/x",
            "#anchor",
            "#",
        ] {
            assert_eq!(
                resolve(&doc, reference).unwrap_err(),
                RefError::External,
                "{reference}"
            );
        }
    }

    #[test]
    fn references_must_resolve_to_a_schema() {
        let doc = document();
        assert_eq!(
            resolve(&doc, "#/components/schemas/Nope").unwrap_err(),
            RefError::Unresolved
        );
        assert_eq!(
            resolve(&doc, "#/components/schemas/B/properties/x/type").unwrap_err(),
            RefError::Unresolved
        );
        let resolved = resolve(&doc, "#/components/schemas/B/properties/x").unwrap();
        assert_eq!(resolved.component, "B");
        assert_eq!(
            resolve(&doc, "#/components/schemas/a~1b")
                .unwrap()
                .component,
            "a/b"
        );
    }

    #[test]
    fn read_through_follows_ref_only_schemas_transitively_and_stops_at_cycles() {
        let doc = document();
        let schema = json!({"$ref": "#/components/schemas/A", "description": "input"});
        let own = own_keywords(&doc, &schema);
        assert_eq!(own.get("type"), Some(&json!("object")));
        let looping = json!({"$ref": "#/components/schemas/Loop"});
        assert!(matches!(own_keywords(&doc, &looping), Own::Nothing));
        let with_type = json!({"$ref": "#/components/schemas/B", "type": "object"});
        let own = own_keywords(&doc, &with_type);
        assert!(matches!(own, Own::Keywords(_)));
        assert!(own.get("properties").is_none());
        let missing = json!({"$ref": "#/components/schemas/Nope", "title": "t"});
        assert!(matches!(own_keywords(&doc, &missing), Own::Unresolved));
    }
}
