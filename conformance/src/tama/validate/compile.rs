//! Compiles every operation schema of a clean document once, against the document itself, so
//! that `#/components/schemas/...` references resolve exactly as the profile says.
//!
//! The document is registered once as a resource; each schema is compiled through a one-line
//! wrapper `{"$ref": "<document>#<pointer to the schema>"}`.

use std::collections::HashMap;
use std::sync::Arc;

use jsonschema::{Draft, Registry, Validator};
use serde_json::{json, Value};

use super::operation::OperationSchemas;
use super::{SchemaAt, Sink};

/// The URI the document is registered under while compiling.
const DOCUMENT_URI: &str = "urn:tama-operations:document";

/// Compiled validators of one operation.
#[derive(Clone)]
pub(crate) struct OperationValidators {
    pub(crate) input: Arc<Validator>,
    pub(crate) ok: Arc<Validator>,
    pub(crate) error: Option<Arc<Validator>>,
}

/// Compiles the schemas of `operations`; reports `schema.compile` for any that fails.
pub(crate) fn compile_all(
    document: &Value,
    operations: &[OperationSchemas<'_>],
    sink: &mut Sink,
) -> HashMap<String, OperationValidators> {
    let registry = match Registry::new()
        .draft(Draft::Draft202012)
        .add(DOCUMENT_URI, document)
        .and_then(|builder| builder.prepare())
    {
        Ok(registry) => registry,
        Err(error) => {
            let at = super::Pointer::root();
            sink.report(
                &at,
                "schema.compile",
                format!("the document's schemas cannot be loaded: {error}"),
            );
            return HashMap::new();
        }
    };
    let mut compiled = HashMap::new();
    for operation in operations {
        let (Some(id), Some(input), Some(ok)) = (operation.id, &operation.input, &operation.ok)
        else {
            continue;
        };
        let input = compile_one(&registry, input, sink);
        let ok = compile_one(&registry, ok, sink);
        // Outer `None`: the declared error schema failed to compile; inner: none is declared.
        let error = match &operation.error {
            None => Some(None),
            Some(error) => compile_one(&registry, error, sink).map(Some),
        };
        if let (Some(input), Some(ok), Some(error)) = (input, ok, error) {
            compiled.insert(id.to_owned(), OperationValidators { input, ok, error });
        }
    }
    compiled
}

fn compile_one(
    registry: &Registry<'_>,
    schema: &SchemaAt<'_>,
    sink: &mut Sink,
) -> Option<Arc<Validator>> {
    let wrapper = json!({"$ref": format!("{DOCUMENT_URI}#{}", schema.at.as_str())});
    match jsonschema::draft202012::options()
        .with_registry(registry)
        .build(&wrapper)
    {
        Ok(validator) => Some(Arc::new(validator)),
        Err(error) => {
            sink.report(
                &schema.at,
                "schema.compile",
                format!("the schema does not compile: {error}"),
            );
            None
        }
    }
}
