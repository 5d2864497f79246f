//! Schema rules: valid JSON Schema 2020-12, no `$id`, a known `$schema`, `$ref`/`$dynamicRef`
//! only into `#/components/schemas/` and resolvable, and 256 KiB per request or response schema
//! together with the components it references.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use jsonschema::meta::MetaValidator;
use jsonschema::{ErrorIterator, Validator};
use serde_json::{json, Value};

use super::document::is_known_dialect;
use super::refs::{resolve, RefError, ARRAYS, MAPS, SINGLE};
use super::size::{serialized_len, MAX_SCHEMA_BYTES};
use super::{SchemaAt, Sink};
use crate::tama::pointer::Pointer;

/// What is known about one component once checked.
struct ComponentFacts<'a> {
    serialized_len: usize,
    references: Vec<&'a str>,
}

/// Checks schemas, remembering each component's size and references so that every schema is
/// serialized and meta-validated once.
pub(crate) struct SchemaChecker<'a> {
    document: &'a Value,
    meta: MetaValidator<'static>,
    components: HashMap<&'a str, ComponentFacts<'a>>,
}

impl<'a> SchemaChecker<'a> {
    pub(crate) fn new(document: &'a Value) -> Self {
        Self {
            document,
            meta: jsonschema::draft202012::meta::validator(),
            components: HashMap::new(),
        }
    }

    pub(crate) fn document(&self) -> &'a Value {
        self.document
    }

    /// Checks every schema under `components.schemas`.
    pub(crate) fn check_components(&mut self, sink: &mut Sink) {
        let Some(schemas) = self
            .document
            .get("components")
            .and_then(|c| c.get("schemas"))
            .and_then(Value::as_object)
        else {
            return;
        };
        let at = Pointer::root().key("components").key("schemas");
        for (name, schema) in schemas {
            let references = self.check_one(&at.key(name), schema, sink);
            let facts = ComponentFacts {
                serialized_len: serialized_len(schema),
                references,
            };
            self.components.insert(name.as_str(), facts);
        }
    }

    /// Checks a request or response schema, including its size with what it references.
    pub(crate) fn check_operation_schema(&mut self, schema: &SchemaAt<'a>, sink: &mut Sink) {
        let references = self.check_one(&schema.at, schema.value, sink);
        let len = serialized_len(schema.value) + self.referenced_len(references);
        if len > MAX_SCHEMA_BYTES {
            sink.report(
                &schema.at,
                "schema.size",
                format!(
                    "the schema with the components it references is {len} bytes serialized; \
                     at most {MAX_SCHEMA_BYTES} are allowed"
                ),
            );
        }
    }

    /// Total serialized length of the components reachable from `references`, each counted once.
    fn referenced_len(&self, references: Vec<&'a str>) -> usize {
        let mut seen: HashSet<&str> = HashSet::new();
        let mut pending = references;
        let mut total = 0usize;
        while let Some(name) = pending.pop() {
            if !seen.insert(name) {
                continue;
            }
            if let Some(facts) = self.components.get(name) {
                total = total.saturating_add(facts.serialized_len);
                pending.extend(facts.references.iter().copied());
            }
        }
        total
    }

    /// Meta-validates one schema and walks it; returns the components it references directly.
    fn check_one(&self, at: &Pointer, schema: &'a Value, sink: &mut Sink) -> Vec<&'a str> {
        let errors: ErrorIterator<'_> = match format_asserting_meta_validator() {
            Some(meta) => meta.iter_errors(schema),
            None => self.meta.iter_errors(schema),
        };
        for error in errors {
            sink.report(
                &at.join_escaped(error.instance_path().as_str()),
                "schema.meta",
                format!("not valid JSON Schema 2020-12: {}", error.masked()),
            );
        }
        let mut references = Vec::new();
        self.walk(schema, at, &mut references, sink);
        references
    }

    /// Visits every subschema (only keywords that hold subschemas, never data such as `const`).
    fn walk(
        &self,
        schema: &'a Value,
        at: &Pointer,
        references: &mut Vec<&'a str>,
        sink: &mut Sink,
    ) {
        let Some(object) = schema.as_object() else {
            return;
        };
        for (key, child) in object {
            let key = key.as_str();
            match key {
                "$id" => sink.report(
                    &at.key(key),
                    "schema.id",
                    "schemas must not declare $id: it would change what references resolve against",
                ),
                "$ref" | "$dynamicRef" => self.check_reference(key, child, at, references, sink),
                "$schema" => check_dialect(child, &at.key(key), sink),
                _ => {}
            }
            if SINGLE.contains(&key) && (child.is_object() || child.is_boolean()) {
                self.walk(child, &at.key(key), references, sink);
            }
            if ARRAYS.contains(&key) {
                for (index, item) in child.as_array().into_iter().flatten().enumerate() {
                    self.walk(item, &at.key(key).index(index), references, sink);
                }
            }
            if MAPS.contains(&key) {
                for (name, item) in child.as_object().into_iter().flatten() {
                    self.walk(item, &at.key(key).key(name), references, sink);
                }
            }
        }
    }

    fn check_reference(
        &self,
        key: &str,
        value: &Value,
        at: &Pointer,
        references: &mut Vec<&'a str>,
        sink: &mut Sink,
    ) {
        // A non-string reference is a meta-schema violation, reported there.
        let Some(reference) = value.as_str() else {
            return;
        };
        match resolve(self.document, reference) {
            Ok(resolved) => references.push(resolved.component),
            Err(RefError::External) => sink.report(
                &at.key(key),
                "schema.ref.external",
                format!("{key} {reference:?} must be a JSON pointer into #/components/schemas/ of this document"),
            ),
            Err(RefError::Unresolved) => sink.report(
                &at.key(key),
                "schema.ref.unresolved",
                format!("{key} {reference:?} does not resolve to a schema in this document"),
            ),
        }
    }
}

/// The Draft 2020-12 meta-schema with formats asserted, so that a `pattern` or
/// `patternProperties` name that is not a valid regular expression is a meta-schema violation
/// (and the schema would compile), without compiling the schema itself. Built once.
fn format_asserting_meta_validator() -> Option<&'static Validator> {
    static META: OnceLock<Option<Validator>> = OnceLock::new();
    META.get_or_init(|| {
        let meta = json!({"$ref": "https://json-schema.org/draft/2020-12/schema"});
        jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&meta)
            .map_err(
                |error| tracing::warn!(%error, "falling back to the meta-schema without formats"),
            )
            .ok()
    })
    .as_ref()
}

fn check_dialect(value: &Value, at: &Pointer, sink: &mut Sink) {
    if !value.as_str().is_some_and(is_known_dialect) {
        sink.report(
            at,
            "schema.dialect",
            "$schema may only name JSON Schema 2020-12 or the OpenAPI 3.1 base dialect",
        );
    }
}
