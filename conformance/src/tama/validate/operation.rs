//! Operation rules: allowed fields, texts, tags, `requestBody`, `responses`, media types and
//! every `x-tama-*` extension.

use std::collections::HashSet;

use serde_json::{Map, Value};

use super::document::FoundOperation;
use super::patterns::{char_len, is_lower_identifier, is_operation_id, is_scope_token};
use super::refs::{own_keywords, Own};
use super::schema::SchemaChecker;
use super::size::{serialized_len, MAX_EXTENSION_BYTES};
use super::{SchemaAt, Sink};
use crate::tama::pointer::Pointer;

const FIELDS: &[&str] = &[
    "operationId",
    "summary",
    "description",
    "tags",
    "deprecated",
    "requestBody",
    "responses",
];
const EXTENSIONS: &[&str] = &[
    "x-tama-scopes",
    "x-tama-destructive",
    "x-tama-confirmation",
    "x-tama-bounds",
    "x-tama-identity",
];
const JSON: &str = "application/json";
const MAX_SUMMARY: usize = 120;
const MAX_DESCRIPTION: usize = 4096;
const MAX_TAGS: usize = 16;
const MAX_TAG: usize = 64;
const MAX_CONFIRMATION_DESCRIPTION: usize = 256;
const MAX_IDENTITY: usize = 8;

/// An operation that could be read, with the schemas it declares.
pub(crate) struct OperationSchemas<'a> {
    pub(crate) id: Option<&'a str>,
    pub(crate) id_at: Pointer,
    pub(crate) input: Option<SchemaAt<'a>>,
    pub(crate) ok: Option<SchemaAt<'a>>,
    pub(crate) error: Option<SchemaAt<'a>>,
}

/// Checks one operation; `None` when it is not even an object.
pub(crate) fn check<'a>(
    found: &FoundOperation<'a>,
    schemas: &mut SchemaChecker<'a>,
    sink: &mut Sink,
) -> Option<OperationSchemas<'a>> {
    let at = &found.at;
    let Some(operation) = found.value.as_object() else {
        sink.report(at, "operation.type", "an operation must be an object");
        return None;
    };
    check_field_names(operation, at, sink);
    let id = check_operation_id(operation, found.path_suffix, at, sink);
    check_text(operation, at, "summary", MAX_SUMMARY, sink);
    check_text(operation, at, "description", MAX_DESCRIPTION, sink);
    check_tags(operation, at, sink);
    if operation.get("deprecated").is_some_and(|d| !d.is_boolean()) {
        sink.report(
            &at.key("deprecated"),
            "operation.deprecated",
            "deprecated must be a boolean",
        );
    }
    let input = check_request_body(operation, at, schemas.document(), sink);
    let Results {
        ok,
        error,
        all_readable,
    } = check_responses(operation, at, sink);
    check_scopes(operation, at, sink);
    if !operation
        .get("x-tama-destructive")
        .is_some_and(Value::is_boolean)
    {
        sink.report(
            &at.key("x-tama-destructive"),
            "operation.x-tama-destructive",
            "x-tama-destructive must be present and be a boolean",
        );
    }
    check_confirmation(operation, at, input.as_ref(), schemas.document(), sink);
    check_bounds(operation, at, sink);
    let results = ResultSchemas {
        schemas: [&ok, &error],
        all_readable,
    };
    check_identity(operation, at, &results, schemas.document(), sink);
    for schema in [&input, &ok, &error].into_iter().flatten() {
        schemas.check_operation_schema(schema, sink);
    }
    Some(OperationSchemas {
        id,
        id_at: at.key("operationId"),
        input,
        ok,
        error,
    })
}

/// Reports an operation ID used by more than one operation (at each later use).
pub(crate) fn check_unique_ids(operations: &[OperationSchemas<'_>], sink: &mut Sink) {
    let mut seen = HashSet::new();
    for operation in operations {
        if let Some(id) = operation.id {
            if !seen.insert(id) {
                sink.report(
                    &operation.id_at,
                    "operation.operationId.unique",
                    format!("operationId {id:?} is used by more than one operation"),
                );
            }
        }
    }
}

fn check_field_names(operation: &Map<String, Value>, at: &Pointer, sink: &mut Sink) {
    let mut extension_len = 0usize;
    for (key, value) in operation {
        let key_str = key.as_str();
        if FIELDS.contains(&key_str) || EXTENSIONS.contains(&key_str) {
            continue;
        }
        if key.starts_with("x-tama-") {
            sink.report(
                &at.key(key),
                "operation.x-tama-unknown",
                format!("unknown profile extension {key:?} at the operation level"),
            );
        } else if key.starts_with("x-") {
            // As a member of a compact object: "key":value plus a separating comma.
            extension_len += serialized_len(key) + 1 + serialized_len(value) + 1;
        } else {
            sink.report(
                &at.key(key),
                "operation.field",
                format!("field {key:?} is not allowed in an operation"),
            );
        }
    }
    // The object's braces, less the comma after the last member.
    let extension_len = if extension_len == 0 {
        0
    } else {
        extension_len + 1
    };
    if extension_len > MAX_EXTENSION_BYTES {
        sink.report(
            at,
            "operation.extensions.size",
            format!(
                "the operation's other x- extensions are {extension_len} bytes serialized; \
                 at most {MAX_EXTENSION_BYTES} are allowed"
            ),
        );
    }
}

fn check_operation_id<'a>(
    operation: &'a Map<String, Value>,
    path_suffix: Option<&str>,
    at: &Pointer,
    sink: &mut Sink,
) -> Option<&'a str> {
    let at = at.key("operationId");
    let Some(id) = operation.get("operationId").and_then(Value::as_str) else {
        sink.report(
            &at,
            "operation.operationId",
            "operationId must be present and be a string",
        );
        return None;
    };
    if !is_operation_id(id) {
        sink.report(
            &at,
            "operation.operationId",
            format!("operationId {id:?} must match ^[a-z][a-z0-9_]{{0,127}}$"),
        );
    }
    if path_suffix.is_some_and(|suffix| suffix != id) {
        sink.report(
            &at,
            "operation.operationId.path",
            format!(
                "operationId {id:?} must equal the path suffix {:?}",
                path_suffix.unwrap_or_default()
            ),
        );
    }
    Some(id)
}

fn check_text(
    operation: &Map<String, Value>,
    at: &Pointer,
    field: &'static str,
    max: usize,
    sink: &mut Sink,
) {
    let (rule, length_rule) = match field {
        "summary" => ("operation.summary", "operation.summary.length"),
        _ => ("operation.description", "operation.description.length"),
    };
    let at = at.key(field);
    match operation.get(field).and_then(Value::as_str) {
        None => sink.report(
            &at,
            rule,
            format!("{field} must be present and be a string"),
        ),
        Some(text) if char_len(text) > max => sink.report(
            &at,
            length_rule,
            format!(
                "{field} is {} characters; at most {max} are allowed",
                char_len(text)
            ),
        ),
        Some(_) => {}
    }
}

fn check_tags(operation: &Map<String, Value>, at: &Pointer, sink: &mut Sink) {
    let Some(tags) = operation.get("tags") else {
        return;
    };
    let at = at.key("tags");
    let Some(tags) = tags.as_array() else {
        sink.report(&at, "operation.tags", "tags must be an array");
        return;
    };
    if tags.len() > MAX_TAGS {
        sink.report(
            &at,
            "operation.tags.count",
            format!("{} tags; at most {MAX_TAGS} are allowed", tags.len()),
        );
    }
    let mut seen = HashSet::new();
    for (index, tag) in tags.iter().enumerate() {
        let Some(text) = tag.as_str() else {
            sink.report(
                &at.index(index),
                "operation.tags.item",
                "a tag must be a string",
            );
            continue;
        };
        if char_len(text) > MAX_TAG {
            sink.report(
                &at.index(index),
                "operation.tags.length",
                format!(
                    "tag is {} characters; at most {MAX_TAG} are allowed",
                    char_len(text)
                ),
            );
        }
        if !seen.insert(text) {
            sink.report(
                &at.index(index),
                "operation.tags.unique",
                format!("tag {text:?} is listed twice"),
            );
        }
    }
}

fn check_request_body<'a>(
    operation: &'a Map<String, Value>,
    at: &Pointer,
    document: &'a Value,
    sink: &mut Sink,
) -> Option<SchemaAt<'a>> {
    let at = at.key("requestBody");
    let Some(body) = operation.get("requestBody").and_then(Value::as_object) else {
        sink.report(
            &at,
            "operation.requestBody",
            "requestBody must be present and be an object",
        );
        return None;
    };
    for key in body
        .keys()
        .filter(|k| !["required", "content", "description"].contains(&k.as_str()))
    {
        sink.report(
            &at.key(key),
            "operation.requestBody.field",
            format!("field {key:?} is not allowed in requestBody"),
        );
    }
    if body.get("required") != Some(&Value::Bool(true)) {
        sink.report(
            &at.key("required"),
            "operation.requestBody.required",
            "requestBody must be required: true",
        );
    }
    if body.get("description").is_some_and(|d| !d.is_string()) {
        sink.report(
            &at.key("description"),
            "operation.requestBody.description",
            "requestBody.description must be a string",
        );
    }
    let schema = json_content(body, &at, "operation.requestBody.content", sink)?;
    let own = own_keywords(document, schema.value);
    let is_object_schema = own.get("type").and_then(Value::as_str) == Some("object");
    // An unresolvable `$ref` is reported at the `$ref`; its type is unknown, not wrong.
    if !is_object_schema && !matches!(own, Own::Unresolved) {
        sink.report(
            &schema.at,
            "operation.requestBody.schema.type",
            "the input schema must be an object schema (\"type\": \"object\")",
        );
    }
    Some(schema)
}

/// The schema of the only media type, `application/json`, of `holder.content`.
fn json_content<'a>(
    holder: &'a Map<String, Value>,
    at: &Pointer,
    rule: &'static str,
    sink: &mut Sink,
) -> Option<SchemaAt<'a>> {
    let at = at.key("content");
    let content = holder.get("content").and_then(Value::as_object);
    let media = content.and_then(|c| c.get(JSON));
    if media.is_none() || content.is_some_and(|c| c.len() != 1) {
        sink.report(
            &at,
            rule,
            "content must hold exactly one media type, application/json",
        );
    }
    // Other media types beside `application/json` are reported above; its schema is still
    // the one the profile reads, so it is checked (and read by the rules that name it).
    let media = media?;
    let at = at.key(JSON);
    let Some(media) = media.as_object() else {
        sink.report(
            &at,
            "operation.media.schema",
            "a media type object must be an object holding a schema",
        );
        return None;
    };
    for key in media.keys().filter(|k| *k != "schema") {
        sink.report(
            &at.key(key),
            "operation.media.field",
            format!("a media type object holds only its schema, not {key:?}"),
        );
    }
    let at = at.key("schema");
    match media.get("schema") {
        Some(value) if value.is_object() || value.is_boolean() => Some(SchemaAt { at, value }),
        _ => {
            sink.report(
                &at,
                "operation.media.schema",
                "the media type object must hold a schema",
            );
            None
        }
    }
}

/// The `"200"` and `"default"` schemas of an operation, as far as they could be read.
struct Results<'a> {
    ok: Option<SchemaAt<'a>>,
    error: Option<SchemaAt<'a>>,
    /// `false` when `responses`, its `"200"`, or a declared `"default"` is missing or broken
    /// (each already reported), so a rule that reads them cannot tell what they declare.
    all_readable: bool,
}

fn check_responses<'a>(
    operation: &'a Map<String, Value>,
    at: &Pointer,
    sink: &mut Sink,
) -> Results<'a> {
    let at = at.key("responses");
    let Some(responses) = operation.get("responses").and_then(Value::as_object) else {
        sink.report(
            &at,
            "operation.responses",
            "responses must be present and be an object",
        );
        return Results {
            ok: None,
            error: None,
            all_readable: false,
        };
    };
    for key in responses.keys().filter(|k| *k != "200" && *k != "default") {
        sink.report(
            &at.key(key),
            "operation.responses.key",
            format!("response key {key:?} is not allowed; only \"200\" and \"default\""),
        );
    }
    if !responses.contains_key("200") {
        sink.report(
            &at.key("200"),
            "operation.responses.200",
            "responses must contain \"200\"",
        );
    }
    let ok = responses
        .get("200")
        .and_then(|r| check_response(r, &at.key("200"), sink));
    let error = responses
        .get("default")
        .and_then(|r| check_response(r, &at.key("default"), sink));
    let all_readable = ok.is_some() && (error.is_some() || !responses.contains_key("default"));
    Results {
        ok,
        error,
        all_readable,
    }
}

fn check_response<'a>(response: &'a Value, at: &Pointer, sink: &mut Sink) -> Option<SchemaAt<'a>> {
    let Some(response) = response.as_object() else {
        sink.report(at, "operation.response", "a response must be an object");
        return None;
    };
    for key in response
        .keys()
        .filter(|k| *k != "description" && *k != "content")
    {
        sink.report(
            &at.key(key),
            "operation.response.field",
            format!("field {key:?} is not allowed in a response; only description and content"),
        );
    }
    if !response.get("description").is_some_and(Value::is_string) {
        sink.report(
            &at.key("description"),
            "operation.response.description",
            "a response must have a description string",
        );
    }
    json_content(response, at, "operation.response.content", sink)
}

fn check_scopes(operation: &Map<String, Value>, at: &Pointer, sink: &mut Sink) {
    let at = at.key("x-tama-scopes");
    let Some(scopes) = operation
        .get("x-tama-scopes")
        .and_then(Value::as_array)
        .filter(|s| !s.is_empty())
    else {
        sink.report(
            &at,
            "operation.x-tama-scopes",
            "x-tama-scopes must be a non-empty array",
        );
        return;
    };
    let mut seen = HashSet::new();
    for (index, scope) in scopes.iter().enumerate() {
        match scope.as_str() {
            Some(token) if is_scope_token(token) => {
                if !seen.insert(token) {
                    sink.report(
                        &at.index(index),
                        "operation.x-tama-scopes.unique",
                        format!("scope {token:?} is listed twice"),
                    );
                }
            }
            _ => sink.report(
                &at.index(index),
                "operation.x-tama-scopes.item",
                "a scope must be a string matching ^[A-Za-z0-9._:-]{1,128}$",
            ),
        }
    }
}

fn check_confirmation(
    operation: &Map<String, Value>,
    at: &Pointer,
    input: Option<&SchemaAt<'_>>,
    document: &Value,
    sink: &mut Sink,
) {
    let Some(confirmation) = operation.get("x-tama-confirmation") else {
        return;
    };
    let at = at.key("x-tama-confirmation");
    let Some(confirmation) = confirmation.as_object() else {
        sink.report(
            &at,
            "operation.x-tama-confirmation",
            "x-tama-confirmation must be an object",
        );
        return;
    };
    for key in confirmation
        .keys()
        .filter(|k| *k != "field" && *k != "description")
    {
        sink.report(
            &at.key(key),
            "operation.x-tama-confirmation",
            format!("x-tama-confirmation holds only field and description, not {key:?}"),
        );
    }
    match confirmation.get("description").and_then(Value::as_str) {
        Some(text) if char_len(text) <= MAX_CONFIRMATION_DESCRIPTION => {}
        _ => sink.report(
            &at.key("description"),
            "operation.x-tama-confirmation.description",
            format!(
                "description must be a string of at most {MAX_CONFIRMATION_DESCRIPTION} characters"
            ),
        ),
    }
    // Without a readable input schema (its absence or broken `$ref` is reported where it is),
    // only the field's own form can be judged.
    let names_a_string = match confirmation.get("field").and_then(Value::as_str) {
        None => Some(false),
        Some(field) => {
            input.and_then(|input| is_required_string_property(document, input.value, field))
        }
    };
    if names_a_string == Some(false) {
        sink.report(
            &at.key("field"),
            "operation.x-tama-confirmation.field",
            "field must name a required top-level string property of the input schema",
        );
    }
}

/// Whether `field` is a top-level property of `schema` with its own `"type": "string"` that
/// the schema's top-level `required` lists (both read through a `$ref`-only schema); `None`
/// when an unresolvable `$ref` (reported at the `$ref`) hides the answer.
fn is_required_string_property(document: &Value, schema: &Value, field: &str) -> Option<bool> {
    let own = own_keywords(document, schema);
    if matches!(own, Own::Unresolved) {
        return None;
    }
    let required = own
        .get("required")
        .and_then(Value::as_array)
        .is_some_and(|names| names.iter().any(|name| name.as_str() == Some(field)));
    let Some(property) = own.get("properties").and_then(|p| p.get(field)) else {
        return Some(false);
    };
    if !required {
        return Some(false);
    }
    match own_keywords(document, property) {
        Own::Unresolved => None,
        property => Some(property.get("type").and_then(Value::as_str) == Some("string")),
    }
}

fn check_bounds(operation: &Map<String, Value>, at: &Pointer, sink: &mut Sink) {
    let Some(bounds) = operation.get("x-tama-bounds") else {
        return;
    };
    let at = at.key("x-tama-bounds");
    let Some(bounds) = bounds.as_object() else {
        sink.report(
            &at,
            "operation.x-tama-bounds",
            "x-tama-bounds must be an object",
        );
        return;
    };
    for (key, value) in bounds {
        if !is_lower_identifier(key, 64) {
            sink.report(
                &at.key(key),
                "operation.x-tama-bounds.key",
                format!("bound name {key:?} must match ^[a-z][a-z0-9_]{{0,63}}$"),
            );
        }
        if !value.is_u64() {
            sink.report(
                &at.key(key),
                "operation.x-tama-bounds.value",
                "a bound must be a non-negative integer",
            );
        }
    }
}

/// The result schemas an identity name may be declared by.
struct ResultSchemas<'r, 'a> {
    schemas: [&'r Option<SchemaAt<'a>>; 2],
    /// See [`Results::all_readable`].
    all_readable: bool,
}

fn check_identity(
    operation: &Map<String, Value>,
    at: &Pointer,
    results: &ResultSchemas<'_, '_>,
    document: &Value,
    sink: &mut Sink,
) {
    let Some(identity) = operation.get("x-tama-identity") else {
        return;
    };
    let at = at.key("x-tama-identity");
    let Some(names) = identity.as_array() else {
        sink.report(
            &at,
            "operation.x-tama-identity",
            "x-tama-identity must be an array",
        );
        return;
    };
    if names.len() > MAX_IDENTITY {
        sink.report(
            &at,
            "operation.x-tama-identity.count",
            format!(
                "{} identity names; at most {MAX_IDENTITY} are allowed",
                names.len()
            ),
        );
    }
    let mut seen = HashSet::new();
    for (index, name) in names.iter().enumerate() {
        let Some(name) = name.as_str() else {
            sink.report(
                &at.index(index),
                "operation.x-tama-identity.item",
                "an identity name must be a string",
            );
            continue;
        };
        if !seen.insert(name) {
            sink.report(
                &at.index(index),
                "operation.x-tama-identity.unique",
                format!("identity name {name:?} is listed twice"),
            );
        }
        let mut readable = results.all_readable;
        let declared = results
            .schemas
            .iter()
            .filter_map(|r| r.as_ref())
            .any(|result| {
                let own = own_keywords(document, result.value);
                readable &= !matches!(own, Own::Unresolved);
                own.get("properties")
                    .and_then(Value::as_object)
                    .is_some_and(|properties| properties.contains_key(name))
            });
        // A name no readable schema declares is reported only when every result schema could
        // be read; otherwise the missing or broken schema is the violation (reported there).
        if !declared && readable {
            sink.report(
                &at.index(index),
                "operation.x-tama-identity.declared",
                format!("{name:?} is not a top-level property declared by the \"200\" or \"default\" schema"),
            );
        }
    }
}
