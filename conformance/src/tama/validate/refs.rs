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

/// Resolves `reference` (a `$ref` or `$dynamicRef` value) within `document`: a JSON pointer
/// (percent-decoded first) from a component down through keywords that hold subschemas, to a
/// schema. A pointer that lands on data (`const`, `default`, `examples`, an unknown keyword) or
/// on a keyword's map or array rather than a schema in it does not resolve to a schema.
pub(crate) fn resolve<'a>(document: &'a Value, reference: &str) -> Result<Resolved<'a>, RefError> {
    let Some(path) = reference.strip_prefix(COMPONENTS_PREFIX) else {
        return Err(RefError::External);
    };
    let path: Cow<'_, str> = percent_decode_str(path)
        .decode_utf8()
        .map_err(|_| RefError::Unresolved)?;
    let mut tokens = path.split('/').map(unescape);
    let name = tokens.next().flatten().ok_or(RefError::Unresolved)?;
    let (component, mut target) = document
        .get("components")
        .and_then(|c| c.get("schemas"))
        .and_then(Value::as_object)
        .and_then(|schemas| schemas.get_key_value(name.as_ref()))
        .ok_or(RefError::Unresolved)?;
    let mut position = Position::Schema;
    for token in tokens {
        let token = token.ok_or(RefError::Unresolved)?;
        (target, position) = step(target, position, &token).ok_or(RefError::Unresolved)?;
    }
    if position != Position::Schema || !(target.is_object() || target.is_boolean()) {
        return Err(RefError::Unresolved);
    }
    Ok(Resolved {
        component: component.as_str(),
        target,
    })
}

/// What a location inside a schema holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Position {
    /// A schema.
    Schema,
    /// The array of an [`ARRAYS`] keyword: each element is a schema.
    Array,
    /// The object of a [`MAPS`] keyword: each member is a schema.
    Map,
}

/// One pointer step from `value` at `position`; `None` when it leaves the schema structure.
fn step<'a>(value: &'a Value, position: Position, token: &str) -> Option<(&'a Value, Position)> {
    match position {
        Position::Schema => {
            let child = value.as_object()?.get(token)?;
            if SINGLE.contains(&token) && (child.is_object() || child.is_boolean()) {
                Some((child, Position::Schema))
            } else if ARRAYS.contains(&token) && child.is_array() {
                Some((child, Position::Array))
            } else if MAPS.contains(&token) && child.is_object() {
                Some((child, Position::Map))
            } else {
                None
            }
        }
        Position::Array => {
            let canonical = token == "0" || !token.starts_with('0');
            let index = token
                .parse::<usize>()
                .ok()
                .filter(|_| canonical && token.bytes().all(|b| b.is_ascii_digit()))?;
            Some((value.as_array()?.get(index)?, Position::Schema))
        }
        Position::Map => Some((value.as_object()?.get(token)?, Position::Schema)),
    }
}

/// Keywords whose value is one subschema (or, for `items`, also an array of them).
pub(crate) const SINGLE: &[&str] = &[
    "additionalProperties",
    "propertyNames",
    "items",
    "contains",
    "unevaluatedItems",
    "unevaluatedProperties",
    "additionalItems",
    "not",
    "if",
    "then",
    "else",
    "contentSchema",
];
/// Keywords whose value is an array of subschemas.
pub(crate) const ARRAYS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems", "items"];
/// Keywords whose value maps names to subschemas.
pub(crate) const MAPS: &[&str] = &[
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
    "dependencies",
];

/// An RFC 6901 reference token unescaped; `None` when `~` is not followed by `0` or `1`.
fn unescape(token: &str) -> Option<Cow<'_, str>> {
    if !token.contains('~') {
        return Some(Cow::Borrowed(token));
    }
    let mut text = String::with_capacity(token.len());
    let mut chars = token.chars();
    while let Some(c) = chars.next() {
        if c != '~' {
            text.push(c);
            continue;
        }
        match chars.next()? {
            '0' => text.push('~'),
            '1' => text.push('/'),
            _ => return None,
        }
    }
    Some(Cow::Owned(text))
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
    //! What goes here: tests of this module on its own (`$ref` resolution into
    //! `#/components/schemas/`, and reading a schema through a `$ref`); a promise of the harness
    //! seen from outside (its command line, certification, the wire) goes in `tests/harness`.

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
    fn references_must_land_on_a_schema_not_on_data_inside_one() {
        let doc = json!({"components": {"schemas": {"A": {
            "const": {"type": 5},
            "default": {"type": "string"},
            "x-data": {"type": "string"},
            "properties": {"p": {"type": "string"}, "~/": true},
            "allOf": [{"type": "string"}, {"minLength": 1}],
            "items": {"type": "string"}
        }}}});
        for reference in [
            "#/components/schemas/A/const",
            "#/components/schemas/A/default",
            "#/components/schemas/A/x-data",
            "#/components/schemas/A/properties",
            "#/components/schemas/A/allOf",
            "#/components/schemas/A/allOf/01",
            "#/components/schemas/A/allOf/2",
            "#/components/schemas/A/items/0",
            "#/components/schemas/A/properties/~2",
        ] {
            assert_eq!(
                resolve(&doc, reference).unwrap_err(),
                RefError::Unresolved,
                "{reference}"
            );
        }
        for reference in [
            "#/components/schemas/A",
            "#/components/schemas/A/properties/p",
            "#/components/schemas/A/properties/~0~1",
            "#/components/schemas/A/properties/%7E0%7E1",
            "#/components/schemas/A/allOf/1",
            "#/components/schemas/A/items",
        ] {
            assert_eq!(
                resolve(&doc, reference).unwrap().component,
                "A",
                "{reference}"
            );
        }
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
