//! Documents built in code for the tama tests and benchmark: too large for the corpus, or
//! sized exactly at a limit.
#![allow(dead_code, unreachable_pub)]

use std::path::PathBuf;

use serde_json::{json, Map, Value};

/// The corpus directory.
pub fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests")
        .join("tama")
}

/// The profile's own example document.
pub fn spec_example() -> Value {
    let bytes =
        std::fs::read(corpus().join("valid").join("spec-example.json")).expect("corpus example");
    serde_json::from_slice(&bytes).expect("example is JSON")
}

/// The example's only operation, renamed to `operation_id`.
pub fn operation_named(operation_id: &str) -> Value {
    let example = spec_example();
    let mut item = example["paths"]["/operations/incus_image_delete"].clone();
    item["post"]["operationId"] = json!(operation_id);
    item
}

/// A valid document holding `count` operations.
pub fn with_operations(count: usize) -> Value {
    let mut document = spec_example();
    let paths: Map<String, Value> = (0..count)
        .map(|i| {
            let id = format!("operation_{i:04}");
            (format!("/operations/{id}"), operation_named(&id))
        })
        .collect();
    document["paths"] = Value::Object(paths);
    document
}

/// `document` with a document-level `x-padding` string making its compact serialization
/// exactly `len` bytes (ASCII padding: one byte per character).
pub fn padded_to(mut document: Value, len: usize) -> Value {
    document["x-padding"] = json!("");
    let base = serde_json::to_vec(&document).expect("serializes").len();
    assert!(base <= len, "document is already {base} bytes");
    document["x-padding"] = json!("p".repeat(len - base));
    document
}

/// A large, realistic document: 1024 operations whose schemas share components, padded to
/// exactly `len` bytes with descriptions.
pub fn large_document(len: usize) -> Value {
    let mut document = with_operations(1024);
    let mut schemas = Map::new();
    for i in 0..64 {
        schemas.insert(
            format!("Shared{i}"),
            json!({"type": "object", "properties": {
                "name": {"type": "string", "maxLength": 63, "pattern": "^[a-z][a-z0-9-]*$"},
                "config": {"type": "object", "additionalProperties": {"type": "string"}},
                "next": {"$ref": format!("#/components/schemas/Shared{}", (i + 1) % 64)}
            }}),
        );
    }
    document["components"] = json!({"schemas": schemas});
    let paths = document["paths"].as_object_mut().expect("paths");
    for (i, item) in paths.values_mut().enumerate() {
        let post = &mut item["post"];
        post["description"] = json!(format!(
            "Operation {i}: {}",
            "lorem ipsum dolor sit amet ".repeat(100)
        ));
        let input = &mut post["requestBody"]["content"]["application/json"]["schema"];
        input["properties"]["shared"] =
            json!({"$ref": format!("#/components/schemas/Shared{}", i % 64)});
        input["properties"]["limit"] = json!({"type": "integer", "minimum": 0, "maximum": 1000});
    }
    padded_to(document, len)
}
