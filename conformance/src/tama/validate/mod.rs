//! The profile's rules, applied in one pass over a parsed document.
//!
//! `document` checks the top level and finds the operations, `operation` checks each operation's
//! fields and extensions, `schema` checks every schema (meta-schema, `$id`, `$ref`), `refs`
//! resolves references and reads schemas through them, `size` measures serialized sizes,
//! `duplicates` finds repeated member names in raw bytes. `compile` builds validators for a
//! clean document; only the dispatcher does that (validation itself compiles no schema).

mod compile;
mod depth;
mod document;
mod duplicates;
mod operation;
mod patterns;
mod refs;
mod schema;
mod size;

use std::collections::HashMap;

use serde_json::Value;

use super::pointer::Pointer;
use super::report::{Report, Violation};

pub(crate) use compile::OperationValidators;

/// Collects violations as the checks run.
#[derive(Debug, Default)]
pub(crate) struct Sink {
    violations: Vec<Violation>,
}

impl Sink {
    pub(crate) fn report(&mut self, at: &Pointer, rule: &'static str, message: impl Into<String>) {
        self.violations.push(Violation {
            pointer: at.as_str().to_owned(),
            rule,
            message: message.into(),
        });
    }

    fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }

    /// The violations, each pointer moved up to the nearest location that exists in
    /// `document`: a member that is missing is reported at the object that should hold it
    /// (as a JSON Schema `required` error is), so every pointer resolves.
    fn into_resolvable(self, document: &Value) -> Vec<Violation> {
        let mut violations = self.violations;
        for violation in &mut violations {
            while document.pointer(&violation.pointer).is_none() {
                let Some(parent) = violation.pointer.rfind('/') else {
                    violation.pointer.clear();
                    break;
                };
                violation.pointer.truncate(parent);
            }
        }
        violations
    }
}

/// A schema and where it stands in the document.
#[derive(Debug, Clone)]
pub(crate) struct SchemaAt<'a> {
    pub(crate) at: Pointer,
    pub(crate) value: &'a Value,
}

/// The outcome of checking one document: its violations.
pub(crate) struct Checked {
    violations: Vec<Violation>,
}

impl Checked {
    pub(crate) fn report(self) -> Report {
        Report::from_violations(self.violations)
    }
}

/// Applies every rule to `document`; `raw` is the bytes it was parsed from, if any.
pub(crate) fn check_value(document: &Value, raw: Option<&[u8]>) -> Checked {
    let mut sink = Sink::default();
    if !depth::check(document, &mut sink) {
        return Checked {
            violations: sink.violations,
        };
    }
    if let Some(bytes) = raw {
        duplicates::check(bytes, &mut sink);
    }
    if let Some(root) = document.as_object() {
        check_object(document, root, raw.map(<[u8]>::len), &mut sink);
    } else {
        sink.report(
            &Pointer::root(),
            "document.type",
            "the document must be a JSON object",
        );
    }
    Checked {
        violations: sink.into_resolvable(document),
    }
}

/// Checks `document` and, when it is valid, compiles every operation's schemas.
pub(crate) fn check_and_compile(
    document: &Value,
) -> Result<HashMap<String, OperationValidators>, Vec<Violation>> {
    let mut sink = Sink::default();
    let Some(root) = document
        .as_object()
        .filter(|_| depth::check(document, &mut sink))
    else {
        return Err(check_value(document, None).violations);
    };
    let operations = check_object(document, root, None, &mut sink);
    if !sink.is_clean() {
        return Err(Checked {
            violations: sink.into_resolvable(document),
        }
        .report()
        .into_violations());
    }
    let validators = compile::compile_all(document, &operations, &mut sink);
    if sink.is_clean() {
        Ok(validators)
    } else {
        Err(sink.violations)
    }
}

fn check_object<'a>(
    document: &'a Value,
    root: &'a serde_json::Map<String, Value>,
    raw_len: Option<usize>,
    sink: &mut Sink,
) -> Vec<operation::OperationSchemas<'a>> {
    document::check_fields(root, sink);
    let mut schemas = schema::SchemaChecker::new(document);
    schemas.check_components(sink);
    let mut operations = Vec::new();
    for found in document::operations(root, sink) {
        if let Some(checked) = operation::check(&found, &mut schemas, sink) {
            operations.push(checked);
        }
    }
    operation::check_unique_ids(&operations, sink);
    size::check_document(document, raw_len, sink);
    operations
}
