//! The `tama-operations/1` profile document: the catalogue published as an OpenAPI 3.1 document.
//!
//! One path item `/operations/<name>` with one `post` per operation; the input schema is the request
//! body, the success shape the `200` response and the shared error shape (in `components.schemas`)
//! the `default` response.

use serde_json::{json, Map, Value};

use crate::catalogue::{self, schema_dialect, Confirmation, Descriptor};

/// The profile version this document follows.
const PROFILE: &str = "tama-operations/1";
/// The stable source ID executors are registered under.
const SOURCE: &str = "opsmaru_incus";
/// The shared error schema's name in `components.schemas`.
const ERROR_SCHEMA: &str = "OperationError";

/// The `tama-operations/1` document for the exported operations ([`all`](crate::all)).
///
/// ```
/// let document = incus_operations::tama_document();
/// assert_eq!(document["x-tama-profile"], "tama-operations/1");
/// assert_eq!(document["paths"].as_object().unwrap().len(), incus_operations::all().len());
/// ```
pub fn tama_document() -> Value {
    document(&catalogue::all())
}

/// The `tama-operations/1` document for every catalogued operation, exported or not
/// (`tama export --all`): for review before the evidence is complete, not for publishing.
pub fn tama_document_all() -> Value {
    let every: Vec<&Descriptor> = catalogue::catalogue().iter().collect();
    document(&every)
}

fn document(descriptors: &[&Descriptor]) -> Value {
    let mut paths = Map::new();
    for descriptor in descriptors {
        paths.insert(
            format!("/operations/{}", descriptor.name()),
            json!({"post": operation(descriptor)}),
        );
    }
    json!({
        "openapi": "3.1.1",
        "jsonSchemaDialect": schema_dialect(),
        "info": {
            "title": "opsmaru_incus operations",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Agent-facing Incus operations (package incus-operations).",
        },
        "x-tama-profile": PROFILE,
        "x-tama-source": SOURCE,
        "paths": paths,
        "components": {"schemas": {ERROR_SCHEMA: catalogue::error_schema()}},
    })
}

fn operation(descriptor: &Descriptor) -> Value {
    let mut operation = json!({
        "operationId": descriptor.name(),
        "summary": descriptor.title(),
        "description": descriptor.description(),
        "tags": [descriptor.resource()],
        "x-tama-scopes": [descriptor.scope()],
        "x-tama-destructive": descriptor.destructive(),
        "x-tama-bounds": descriptor.bounds(),
        "x-opsmaru-requires": descriptor.requires(),
        "requestBody": {
            "required": true,
            "description": "The operation's input.",
            "content": {"application/json": {"schema": without_dialect(descriptor.input_schema())}},
        },
        "responses": {
            "200": {
                "description": "The operation's result.",
                "content": {"application/json": {"schema": descriptor.success_schema()}},
            },
            "default": {
                "description": "The error result: {\"error\": {\"kind\", \"message\", ...}}.",
                "content": {"application/json": {
                    "schema": {"$ref": format!("#/components/schemas/{ERROR_SCHEMA}")},
                }},
            },
        },
    });
    if let Some(rule) = descriptor.confirmation() {
        operation["x-tama-confirmation"] = json!({
            "field": Confirmation::FIELD,
            "description": rule.description(),
        });
    }
    let identity: Vec<&str> = ["operation_id", "status"]
        .into_iter()
        .filter(|key| descriptor.success_schema()["properties"].get(key).is_some())
        .collect();
    if identity.contains(&"operation_id") {
        operation["x-tama-identity"] = json!(identity);
    }
    operation
}

/// The schema without its `$schema` keyword (the document's `jsonSchemaDialect` says it).
fn without_dialect(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
    }
    schema
}
