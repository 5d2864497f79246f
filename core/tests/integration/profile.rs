//! The exported `tama-operations/1` document against the profile's rules that can be checked
//! locally. (The full validator lives in `incus-conformance`.)

use crate::common;

use std::collections::BTreeSet;

use regex::Regex;
use serde_json::{json, Value};

const OPERATION_FIELDS: [&str; 7] = [
    "operationId",
    "summary",
    "description",
    "tags",
    "deprecated",
    "requestBody",
    "responses",
];
const TAMA_OPERATION_KEYS: [&str; 5] = [
    "x-tama-scopes",
    "x-tama-destructive",
    "x-tama-confirmation",
    "x-tama-bounds",
    "x-tama-identity",
];

/// Collects every violation of the profile as `pointer: message`.
struct Check {
    problems: Vec<String>,
}

impl Check {
    fn fail(&mut self, pointer: &str, message: impl std::fmt::Display) {
        self.problems.push(format!("{pointer}: {message}"));
    }

    fn expect(&mut self, ok: bool, pointer: &str, message: &str) {
        if !ok {
            self.fail(pointer, message);
        }
    }
}

fn pattern(re: &str) -> Regex {
    Regex::new(re).unwrap()
}

/// Resolves a schema that is only a `$ref` (with annotations) to its target.
fn read_through<'a>(document: &'a Value, schema: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(reference) => reference
            .strip_prefix("#/components/schemas/")
            .and_then(|name| document["components"]["schemas"].get(name))
            .unwrap_or(&Value::Null),
        None => schema,
    }
}

/// Every `$ref`/`$dynamicRef` target name inside a schema, and whether any `$id` is declared.
fn references(value: &Value, refs: &mut Vec<String>, ids: &mut usize) {
    match value {
        Value::Object(object) => {
            for (key, inner) in object {
                if key == "$id" {
                    *ids += 1;
                }
                if key == "$ref" || key == "$dynamicRef" {
                    refs.push(inner.as_str().unwrap_or("<not a string>").to_owned());
                }
                references(inner, refs, ids);
            }
        }
        Value::Array(items) => items.iter().for_each(|item| references(item, refs, ids)),
        _ => {}
    }
}

fn check_schema(check: &mut Check, document: &Value, pointer: &str, schema: &Value) {
    let mut refs = Vec::new();
    let mut ids = 0;
    references(schema, &mut refs, &mut ids);
    check.expect(ids == 0, pointer, "declares $id");
    let mut size = serde_json::to_vec(schema).unwrap().len();
    for reference in refs {
        match reference.strip_prefix("#/components/schemas/") {
            Some(name) if document["components"]["schemas"].get(name).is_some() => {
                size += serde_json::to_vec(&document["components"]["schemas"][name])
                    .unwrap()
                    .len();
            }
            _ => check.fail(
                pointer,
                format!("$ref {reference} does not resolve into components"),
            ),
        }
    }
    check.expect(size <= 256 * 1024, pointer, "schema over 256 KiB");
    if let Err(error) = jsonschema::draft202012::meta::validate(schema) {
        check.fail(pointer, format!("not JSON Schema 2020-12: {error}"));
    }
}

fn check_document(document: &Value) -> Vec<String> {
    let mut check = Check {
        problems: Vec::new(),
    };
    let check = &mut check;
    let openapi = document["openapi"].as_str().unwrap_or("");
    check.expect(
        pattern(r"^3\.1\.\d+$").is_match(openapi),
        "/openapi",
        "not 3.1.x",
    );
    check.expect(
        [
            "https://spec.openapis.org/oas/3.1/dialect/base",
            "https://json-schema.org/draft/2020-12/schema",
        ]
        .contains(&document["jsonSchemaDialect"].as_str().unwrap_or("")),
        "/jsonSchemaDialect",
        "unknown dialect",
    );
    check.expect(
        document["info"]["title"].is_string(),
        "/info/title",
        "missing",
    );
    check.expect(
        document["info"]["version"] == env!("CARGO_PKG_VERSION"),
        "/info/version",
        "not the crate version",
    );
    check.expect(
        document["x-tama-profile"] == "tama-operations/1",
        "/x-tama-profile",
        "wrong profile",
    );
    check.expect(
        pattern("^[a-z][a-z0-9_]{0,63}$")
            .is_match(document["x-tama-source"].as_str().unwrap_or("")),
        "/x-tama-source",
        "bad source ID",
    );
    check.expect(document.get("webhooks").is_none(), "/webhooks", "present");
    for key in document.as_object().unwrap().keys() {
        check.expect(
            !key.starts_with("x-tama-")
                || ["x-tama-profile", "x-tama-source"].contains(&key.as_str()),
            &format!("/{key}"),
            "unknown x-tama key",
        );
    }
    let document_bytes = serde_json::to_vec(document).unwrap().len();
    check.expect(document_bytes <= 4 * 1024 * 1024, "", "document over 4 MiB");
    let component_name = pattern("^[a-zA-Z0-9._-]+$");
    for (name, schema) in document["components"]["schemas"]
        .as_object()
        .into_iter()
        .flatten()
    {
        let pointer = format!("/components/schemas/{name}");
        check.expect(
            component_name.is_match(name),
            &pointer,
            "bad component name",
        );
        check_schema(check, document, &pointer, schema);
    }
    let paths = document["paths"].as_object().expect("paths is an object");
    check.expect(paths.len() <= 1024, "/paths", "over 1024 operations");
    let mut ids = BTreeSet::new();
    for (path, item) in paths {
        let pointer = format!("/paths/{}", path.replace('~', "~0").replace('/', "~1"));
        let keys: Vec<&String> = item.as_object().unwrap().keys().collect();
        check.expect(
            keys == ["post"],
            &pointer,
            "path item holds something other than post",
        );
        check_operation(
            check,
            document,
            &format!("{pointer}/post"),
            path,
            &item["post"],
        );
        check.expect(
            ids.insert(item["post"]["operationId"].to_string()),
            &pointer,
            "duplicate ID",
        );
    }
    std::mem::take(&mut check.problems)
}

fn check_operation(check: &mut Check, document: &Value, pointer: &str, path: &str, op: &Value) {
    for key in op.as_object().unwrap().keys() {
        let allowed = OPERATION_FIELDS.contains(&key.as_str())
            || TAMA_OPERATION_KEYS.contains(&key.as_str())
            || (key.starts_with("x-") && !key.starts_with("x-tama-"));
        check.expect(allowed, &format!("{pointer}/{key}"), "field not allowed");
    }
    let id = op["operationId"].as_str().unwrap_or("");
    check.expect(
        pattern("^[a-z][a-z0-9_]{0,127}$").is_match(id),
        pointer,
        "bad operationId",
    );
    check.expect(
        path == format!("/operations/{id}"),
        pointer,
        "path suffix is not the ID",
    );
    let summary = op["summary"].as_str().unwrap_or("");
    check.expect(
        !summary.is_empty() && summary.chars().count() <= 120,
        pointer,
        "summary",
    );
    let description = op["description"].as_str().unwrap_or("");
    check.expect(
        !description.is_empty() && description.chars().count() <= 4096,
        pointer,
        "description",
    );
    let tags = op["tags"].as_array().cloned().unwrap_or_default();
    let unique: BTreeSet<String> = tags.iter().map(Value::to_string).collect();
    check.expect(
        tags.len() <= 16
            && unique.len() == tags.len()
            && tags
                .iter()
                .all(|t| t.as_str().is_some_and(|t| t.chars().count() <= 64)),
        pointer,
        "tags",
    );
    // requestBody
    let body = &op["requestBody"];
    check.expect(
        body["required"] == true,
        pointer,
        "requestBody is not required",
    );
    let content = body["content"].as_object().cloned().unwrap_or_default();
    check.expect(
        content.len() == 1 && content.contains_key("application/json"),
        pointer,
        "requestBody has not exactly application/json",
    );
    let media = &body["content"]["application/json"];
    check.expect(
        media.as_object().is_some_and(|m| m.len() == 1),
        pointer,
        "media type holds more than schema",
    );
    let input = read_through(document, &media["schema"]);
    check.expect(
        input["type"] == "object",
        pointer,
        "input schema is not an object schema",
    );
    check_schema(
        check,
        document,
        &format!("{pointer}/requestBody"),
        &media["schema"],
    );
    // responses
    let responses = op["responses"].as_object().cloned().unwrap_or_default();
    check.expect(responses.contains_key("200"), pointer, "no 200 response");
    for (code, response) in &responses {
        let here = format!("{pointer}/responses/{code}");
        check.expect(
            ["200", "default"].contains(&code.as_str()),
            &here,
            "response key",
        );
        check.expect(response["description"].is_string(), &here, "no description");
        let media = &response["content"]["application/json"];
        check.expect(
            media.as_object().is_some_and(|m| m.len() == 1),
            &here,
            "media type",
        );
        check_schema(check, document, &here, &media["schema"]);
    }
    // x-tama-*
    let scopes = op["x-tama-scopes"].as_array().cloned().unwrap_or_default();
    let scope_token = pattern("^[A-Za-z0-9._:-]{1,128}$");
    check.expect(
        !scopes.is_empty()
            && scopes
                .iter()
                .all(|s| s.as_str().is_some_and(|s| scope_token.is_match(s)))
            && scopes
                .iter()
                .map(Value::to_string)
                .collect::<BTreeSet<_>>()
                .len()
                == scopes.len(),
        pointer,
        "x-tama-scopes",
    );
    check.expect(
        op["x-tama-destructive"].is_boolean(),
        pointer,
        "x-tama-destructive",
    );
    if let Some(confirmation) = op.get("x-tama-confirmation") {
        let keys: BTreeSet<&str> = confirmation
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        check.expect(
            keys == BTreeSet::from(["field", "description"]),
            pointer,
            "confirmation keys",
        );
        let field = confirmation["field"].as_str().unwrap_or("");
        let required = input["required"].as_array().cloned().unwrap_or_default();
        check.expect(
            required.contains(&json!(field)) && input["properties"][field]["type"] == "string",
            pointer,
            "confirmation field is not a required top-level string",
        );
        check.expect(
            confirmation["description"]
                .as_str()
                .is_some_and(|d| d.chars().count() <= 256),
            pointer,
            "confirmation description",
        );
    }
    if let Some(bounds) = op.get("x-tama-bounds") {
        let key = pattern("^[a-z][a-z0-9_]{0,63}$");
        for (name, value) in bounds.as_object().expect("bounds is an object") {
            check.expect(
                key.is_match(name) && value.is_u64(),
                pointer,
                "x-tama-bounds entry",
            );
        }
    }
    if let Some(identity) = op.get("x-tama-identity") {
        let names = identity.as_array().cloned().unwrap_or_default();
        let success = read_through(
            document,
            &op["responses"]["200"]["content"]["application/json"]["schema"],
        );
        let error = read_through(
            document,
            &op["responses"]["default"]["content"]["application/json"]["schema"],
        );
        check.expect(names.len() <= 8, pointer, "x-tama-identity over 8");
        for name in names {
            let name = name.as_str().unwrap_or("");
            check.expect(
                success["properties"].get(name).is_some()
                    || error["properties"].get(name).is_some(),
                pointer,
                "identity property not declared at the top level",
            );
        }
    }
    let opaque: usize = op
        .as_object()
        .unwrap()
        .iter()
        .filter(|(key, _)| key.starts_with("x-") && !key.starts_with("x-tama-"))
        .map(|(_, value)| serde_json::to_vec(value).unwrap().len())
        .sum();
    check.expect(opaque <= 16 * 1024, pointer, "opaque metadata over 16 KiB");
}

#[test]
fn exported_document_obeys_the_profile_rules() {
    let problems = check_document(&incus_operations::tama_document());
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn full_document_obeys_the_profile_rules() {
    let document = incus_operations::tama_document_all();
    assert_eq!(document["paths"].as_object().unwrap().len(), 32);
    let problems = check_document(&document);
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn exported_document_publishes_exactly_the_exported_operations() {
    let document = incus_operations::tama_document();
    let published: Vec<&String> = document["paths"].as_object().unwrap().keys().collect();
    let exported: Vec<String> = incus_operations::all()
        .iter()
        .map(|descriptor| format!("/operations/{}", descriptor.name()))
        .collect();
    assert_eq!(published, exported.iter().collect::<Vec<_>>());
}

#[test]
fn profile_operations_carry_the_catalogue_data() {
    let document = incus_operations::tama_document_all();
    assert_eq!(document["x-tama-source"], "opsmaru_incus");
    assert_eq!(
        document["jsonSchemaDialect"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    for descriptor in common::every_descriptor() {
        let op = &document["paths"][format!("/operations/{}", descriptor.name())]["post"];
        assert_eq!(op["summary"], descriptor.title());
        assert_eq!(op["description"], descriptor.description());
        assert_eq!(op["tags"], json!([descriptor.resource()]));
        assert_eq!(op["x-tama-scopes"], json!([descriptor.scope()]));
        assert_eq!(op["x-tama-destructive"], descriptor.destructive());
        assert_eq!(
            op["x-tama-bounds"],
            serde_json::to_value(descriptor.bounds()).unwrap()
        );
        assert_eq!(op["x-opsmaru-requires"], json!(descriptor.requires()));
        assert_eq!(
            op["x-tama-confirmation"].is_object(),
            descriptor.destructive()
        );
        let input = &op["requestBody"]["content"]["application/json"]["schema"];
        assert!(input.get("$schema").is_none());
        assert_eq!(input["properties"], descriptor.input_schema()["properties"]);
        let success = &op["responses"]["200"]["content"]["application/json"]["schema"];
        assert_eq!(success, &descriptor.output_schema()["oneOf"][0]);
        let carries_operation = success["properties"].get("operation_id").is_some();
        assert_eq!(
            op.get("x-tama-identity").cloned(),
            carries_operation.then(|| json!(["operation_id", "status"])),
            "{}",
            descriptor.name()
        );
    }
}

#[test]
fn profile_checker_reports_broken_documents() {
    let mut document = incus_operations::tama_document_all();
    let op = &mut document["paths"]["/operations/incus_image_delete"]["post"];
    op["summary"] = json!("x".repeat(121));
    op["x-tama-confirmation"]["field"] = json!("fingerprint_typo");
    op["x-tama-unknown"] = json!(1);
    op["parameters"] = json!([]);
    op["requestBody"]["content"]["application/json"]["schema"]["$id"] = json!("urn:x");
    op["responses"]["default"]["content"]["application/json"]["schema"]["$ref"] =
        json!("https://example.com/schema");
    document["webhooks"] = json!({});
    let problems = check_document(&document);
    for expected in [
        "summary",
        "confirmation field",
        "/x-tama-unknown: field not allowed",
        "/parameters: field not allowed",
        "declares $id",
        "does not resolve",
        "/webhooks",
    ] {
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "{expected} not reported in {problems:#?}"
        );
    }
}
