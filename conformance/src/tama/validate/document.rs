//! Document-level rules and the walk from `paths` to the operations.

use serde_json::{Map, Value};

use super::patterns::{is_component_name, is_openapi_31, is_source_id};
use super::Sink;
use crate::tama::pointer::Pointer;

/// The only profile this validator knows.
pub(crate) const PROFILE: &str = "tama-operations/1";
/// At most this many operations per document.
pub(crate) const MAX_OPERATIONS: usize = 1024;
/// Operation paths are `/operations/{operationId}`.
pub(crate) const OPERATION_PREFIX: &str = "/operations/";

const DIALECTS: &[&str] = &[
    "https://spec.openapis.org/oas/3.1/dialect/base",
    "https://json-schema.org/draft/2020-12/schema",
];
const DOCUMENT_EXTENSIONS: &[&str] = &["x-tama-profile", "x-tama-source"];

/// The dialect URIs a document (or a schema's `$schema`) may name.
pub(crate) fn is_known_dialect(uri: &str) -> bool {
    DIALECTS.contains(&uri)
}

/// An operation found under `paths`, before its own checks.
pub(crate) struct FoundOperation<'a> {
    /// The path suffix, when the path has the `/operations/` prefix.
    pub(crate) path_suffix: Option<&'a str>,
    pub(crate) at: Pointer,
    pub(crate) value: &'a Value,
}

/// Checks every top-level field except `paths` items and schemas.
pub(crate) fn check_fields(root: &Map<String, Value>, sink: &mut Sink) {
    let here = Pointer::root();
    check_openapi(root, sink);
    check_dialect(root, sink);
    check_info(root, sink);
    check_profile(root, sink);
    check_source(root, sink);
    check_components(root, sink);
    if root.contains_key("webhooks") {
        sink.report(
            &here.key("webhooks"),
            "document.webhooks",
            "webhooks must be absent",
        );
    }
    for key in root.keys() {
        if key.starts_with("x-tama-") && !DOCUMENT_EXTENSIONS.contains(&key.as_str()) {
            sink.report(
                &here.key(key),
                "document.x-tama-unknown",
                format!("unknown profile extension {key:?} at the document level"),
            );
        }
    }
}

fn check_openapi(root: &Map<String, Value>, sink: &mut Sink) {
    if !root
        .get("openapi")
        .and_then(Value::as_str)
        .is_some_and(is_openapi_31)
    {
        sink.report(
            &Pointer::root().key("openapi"),
            "document.openapi",
            "openapi must be a string matching 3.1.x",
        );
    }
}

fn check_dialect(root: &Map<String, Value>, sink: &mut Sink) {
    let Some(dialect) = root.get("jsonSchemaDialect") else {
        return;
    };
    if !dialect.as_str().is_some_and(is_known_dialect) {
        sink.report(
            &Pointer::root().key("jsonSchemaDialect"),
            "document.jsonSchemaDialect",
            format!("jsonSchemaDialect must be absent or one of {DIALECTS:?}"),
        );
    }
}

fn check_info(root: &Map<String, Value>, sink: &mut Sink) {
    let at = Pointer::root().key("info");
    let Some(info) = root.get("info").and_then(Value::as_object) else {
        sink.report(
            &at,
            "document.info",
            "info must be present and be an object",
        );
        return;
    };
    for (field, rule) in [
        ("title", "document.info.title"),
        ("version", "document.info.version"),
    ] {
        if info
            .get(field)
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            sink.report(
                &at.key(field),
                rule,
                format!("info.{field} must be present and be a non-empty string"),
            );
        }
    }
}

fn check_profile(root: &Map<String, Value>, sink: &mut Sink) {
    if root.get("x-tama-profile").and_then(Value::as_str) != Some(PROFILE) {
        sink.report(
            &Pointer::root().key("x-tama-profile"),
            "document.x-tama-profile",
            format!(
                "x-tama-profile must be exactly {PROFILE:?}; other profile versions are unknown"
            ),
        );
    }
}

fn check_source(root: &Map<String, Value>, sink: &mut Sink) {
    if !root
        .get("x-tama-source")
        .and_then(Value::as_str)
        .is_some_and(is_source_id)
    {
        sink.report(
            &Pointer::root().key("x-tama-source"),
            "document.x-tama-source",
            "x-tama-source must be a string matching ^[a-z][a-z0-9_]{0,63}$",
        );
    }
}

fn check_components(root: &Map<String, Value>, sink: &mut Sink) {
    let at = Pointer::root().key("components");
    let Some(components) = root.get("components") else {
        return;
    };
    let Some(components) = components.as_object() else {
        sink.report(&at, "document.components", "components must be an object");
        return;
    };
    let at = at.key("schemas");
    let Some(schemas) = components.get("schemas") else {
        return;
    };
    let Some(schemas) = schemas.as_object() else {
        sink.report(
            &at,
            "document.components.schemas",
            "components.schemas must be an object",
        );
        return;
    };
    for name in schemas.keys().filter(|name| !is_component_name(name)) {
        sink.report(
            &at.key(name),
            "document.components.name",
            format!("component name {name:?} must match ^[a-zA-Z0-9._-]+$"),
        );
    }
}

/// Checks `paths` and the path items, and returns the operations they hold.
pub(crate) fn operations<'a>(
    root: &'a Map<String, Value>,
    sink: &mut Sink,
) -> Vec<FoundOperation<'a>> {
    let at = Pointer::root().key("paths");
    let Some(paths) = root.get("paths").and_then(Value::as_object) else {
        sink.report(
            &at,
            "document.paths",
            "paths must be present and be an object",
        );
        return Vec::new();
    };
    if paths.len() > MAX_OPERATIONS {
        sink.report(
            &at,
            "document.operations.count",
            format!(
                "the document holds {} operations; at most {MAX_OPERATIONS} are allowed",
                paths.len()
            ),
        );
    }
    paths
        .iter()
        .filter_map(|(path, item)| path_item(path, item, &at.key(path), sink))
        .collect()
}

fn path_item<'a>(
    path: &'a str,
    item: &'a Value,
    at: &Pointer,
    sink: &mut Sink,
) -> Option<FoundOperation<'a>> {
    let path_suffix = path
        .strip_prefix(OPERATION_PREFIX)
        .filter(|suffix| !suffix.is_empty() && !suffix.contains('/'));
    if path_suffix.is_none() {
        sink.report(
            at,
            "path.key",
            format!("path {path:?} is not an operation path /operations/{{operationId}}"),
        );
    }
    let Some(item) = item.as_object() else {
        sink.report(at, "path.item", "a path item must be an object");
        return None;
    };
    for key in item.keys().filter(|key| *key != "post") {
        sink.report(
            &at.key(key),
            "path.item.field",
            format!("a path item holds exactly one post operation and nothing else, not {key:?}"),
        );
    }
    let Some(post) = item.get("post") else {
        sink.report(
            &at.key("post"),
            "path.item.post",
            "the path item has no post operation",
        );
        return None;
    };
    Some(FoundOperation {
        path_suffix,
        at: at.key("post"),
        value: post,
    })
}
