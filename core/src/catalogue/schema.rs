//! Building blocks of the input and output schemas (JSON Schema 2020-12).
//!
//! Inputs are closed objects built with [`Object`]; outputs follow the shared result shapes (success
//! shape `oneOf` the error shape).

use serde_json::{json, Map, Value};

use crate::error::ErrorKind;

/// The dialect every schema is written in.
pub(crate) const DIALECT: &str = "https://json-schema.org/draft/2020-12/schema";

pub(super) const DEFAULT_LIMIT: u64 = 100;
pub(super) const MAX_LIMIT: u64 = 500;
pub(super) const DEFAULT_WAIT_SECONDS: u64 = 10;
pub(super) const MAX_WAIT_SECONDS: u64 = 60;
pub(super) const DEFAULT_TIMEOUT_SECONDS: u64 = 30;
pub(super) const MAX_TIMEOUT_SECONDS: u64 = 300;
pub(super) const MAX_ARGUMENTS: u64 = 64;
pub(super) const MAX_ARGUMENT_CHARS: u64 = 4096;
pub(super) const MAX_ENVIRONMENT_VARIABLES: u64 = 64;
pub(super) const MAX_STDIN_BYTES: u64 = 64 * 1024;
pub(super) const MAX_CAPTURE_BYTES: u64 = 64 * 1024;

/// A closed object schema under construction.
#[derive(Default)]
pub(super) struct Object {
    properties: Map<String, Value>,
    required: Vec<String>,
    keywords: Map<String, Value>,
}

impl Object {
    pub(super) fn new() -> Object {
        Object::default()
    }

    /// Adds a property the input must carry.
    pub(super) fn required(mut self, name: &str, schema: Value) -> Object {
        self.properties.insert(name.to_owned(), schema);
        self.required.push(name.to_owned());
        self
    }

    /// Adds a property the input may carry.
    pub(super) fn optional(mut self, name: &str, schema: Value) -> Object {
        self.properties.insert(name.to_owned(), schema);
        self
    }

    /// Adds another keyword (for example `anyOf` over the required fields).
    pub(super) fn keyword(mut self, keyword: &str, value: Value) -> Object {
        self.keywords.insert(keyword.to_owned(), value);
        self
    }

    /// The closed object schema.
    pub(super) fn build(self) -> Value {
        let mut schema = Map::new();
        schema.insert("type".into(), "object".into());
        schema.insert("properties".into(), Value::Object(self.properties));
        if !self.required.is_empty() {
            schema.insert("required".into(), json!(self.required));
        }
        schema.insert("additionalProperties".into(), false.into());
        schema.extend(self.keywords);
        Value::Object(schema)
    }

    /// The closed object schema as a schema document (with `$schema`).
    pub(super) fn into_root(self) -> Value {
        let mut schema = Map::new();
        schema.insert("$schema".into(), DIALECT.into());
        if let Value::Object(body) = self.build() {
            schema.extend(body);
        }
        Value::Object(schema)
    }
}

fn text(description: &str, pattern: &str, max_length: u64) -> Value {
    json!({
        "type": "string",
        "description": description,
        "minLength": 1,
        "maxLength": max_length,
        "pattern": pattern,
    })
}

/// The native Incus project; the host's default project when absent.
pub(super) fn project() -> Value {
    text(
        "Incus project to act in (Incus's own project name). Absent: the host's default project.",
        "^[A-Za-z0-9][A-Za-z0-9_.-]*$",
        63,
    )
}

/// An instance name as Incus accepts it (alphanumerics and hyphens, starting with a letter).
pub(super) fn instance_name(description: &str) -> Value {
    text(description, "^[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?$", 63)
}

/// A snapshot's short name: no `/`, and no `%` or `+`, because Incus decodes a snapshot's path
/// segment twice (`url.PathUnescape`, then `url.QueryUnescape`, in `cmd/incusd/instance_snapshot.go`
/// of 6.0.4 and 7.0), so a name holding either would name another snapshot in the request
/// (`s%31` is `s1` there, `a+b` is `a b`). Without them, the name means itself whether the daemon
/// decodes once or twice.
pub(super) fn snapshot_name(description: &str) -> Value {
    let mut schema = text(description, "^[^/\\s%+]+$", 255);
    schema["not"] = json!({"enum": [".", ".."]});
    schema
}

/// The name of a network, profile, storage pool or storage volume (no `/`).
pub(super) fn object_name(description: &str) -> Value {
    let mut schema = text(description, "^[^/\\s]+$", 255);
    schema["not"] = json!({"enum": [".", ".."]});
    schema
}

/// An image fingerprint or a unique prefix of it (lowercase hex).
pub(super) fn fingerprint_prefix() -> Value {
    text(
        "Image fingerprint, or a unique prefix of it (lowercase hex).",
        "^[0-9a-f]+$",
        64,
    )
}

/// The full 64-character image fingerprint (lowercase hex).
pub(super) fn full_fingerprint() -> Value {
    json!({
        "type": "string",
        "description": "The full 64-character image fingerprint (lowercase hex); prefixes are refused.",
        "minLength": 64,
        "maxLength": 64,
        "pattern": "^[0-9a-f]{64}$",
    })
}

/// An Incus operation ID (a UUID).
pub(super) fn operation_id() -> Value {
    json!({
        "type": "string",
        "description": "Incus operation ID (UUID), as returned in operation_id.",
        "minLength": 36,
        "maxLength": 36,
        "pattern": "^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$",
    })
}

/// The list bound.
pub(super) fn limit() -> Value {
    json!({
        "type": "integer",
        "description": "Most items to return (native order is kept; the rest are dropped and truncated is true).",
        "minimum": 1,
        "maximum": MAX_LIMIT,
        "default": DEFAULT_LIMIT,
    })
}

/// The mutation and operation wait bound.
pub(super) fn wait_seconds() -> Value {
    json!({
        "type": "integer",
        "description": "Seconds to wait for the native operation to finish (0 returns at once). A wait that ends first reports status running; it never cancels anything.",
        "minimum": 0,
        "maximum": MAX_WAIT_SECONDS,
        "default": DEFAULT_WAIT_SECONDS,
    })
}

/// The destructive confirmation field.
pub(super) fn confirm() -> Value {
    json!({
        "type": "string",
        "description": "Must repeat the affected resource exactly; inferred consent such as \"yes\" is refused.",
        "minLength": 1,
        "maxLength": 320,
    })
}

/// Native `config`: an object of string values. Restricted keys are checked by the run pipeline.
pub(super) fn config() -> Value {
    json!({
        "type": "object",
        "description": "Incus config keys and string values. Restricted keys (raw.*, volatile.*, security.privileged, security.idmap.*, security.syscalls.*, linux.kernel_modules) are refused unless the host allows them.",
        "propertyNames": {"minLength": 1, "maxLength": 255},
        "additionalProperties": {"type": "string"},
    })
}

/// Native `devices`: an object of device objects of string values.
pub(super) fn devices() -> Value {
    json!({
        "type": "object",
        "description": "Incus devices by name, each an object of string values. Only a disk with a pool and no host-path source, or a nic with a network and no nictype or parent, is allowed unless the host allows more.",
        "propertyNames": {"minLength": 1, "maxLength": 255},
        "additionalProperties": {
            "type": "object",
            "propertyNames": {"minLength": 1, "maxLength": 255},
            "additionalProperties": {"type": "string"},
        },
    })
}

/// Native `profiles`: profile names, applied in order.
pub(super) fn profiles() -> Value {
    json!({
        "type": "array",
        "description": "Profile names, applied in order.",
        "maxItems": 64,
        "items": object_name("Profile name."),
    })
}

/// Native `description`.
pub(super) fn description() -> Value {
    json!({"type": "string", "description": "Free-form description.", "maxLength": 4096})
}

/// Native `ephemeral`.
pub(super) fn ephemeral() -> Value {
    json!({"type": "boolean", "description": "Whether Incus deletes the instance when it stops."})
}

/// An ETag as returned by `incus_instance_get` (visible ASCII, so it can be sent as `If-Match`).
pub(super) fn etag() -> Value {
    text(
        "ETag from incus_instance_get; the update is refused with a native 412 when the instance changed since.",
        "^[!-~]+$",
        130,
    )
}

// ---- outputs ---------------------------------------------------------------------------------

fn native_object(description: &str) -> Value {
    json!({"type": "object", "description": description})
}

fn nullable_native_object(description: &str) -> Value {
    json!({"type": ["object", "null"], "description": description})
}

fn count() -> Value {
    json!({"type": "integer", "minimum": 0})
}

fn closed(properties: Value) -> Value {
    let required: Vec<&String> = properties
        .as_object()
        .expect("properties are an object")
        .keys()
        .collect();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false,
    })
}

/// Adds `reason` to a closed result whose `status` may be `uncertain`: a string that says why the
/// outcome is unknown (the error after the request may have been sent), allowed only when the
/// status is `uncertain`. Mutations carry the same text in `wait_error` instead.
fn with_uncertain_reason(mut result: Value, required_when_uncertain: bool) -> Value {
    result["properties"]["reason"] = json!({
        "type": "string",
        "description": "Only when status is uncertain: why the outcome is unknown (the error after the request may have been sent). Nothing was resent.",
    });
    result["if"] = json!({"properties": {"status": {"const": "uncertain"}}});
    if required_when_uncertain {
        result["then"] = json!({"required": ["reason"]});
    }
    result["else"] = json!({"not": {"required": ["reason"]}});
    result
}

/// `{"items", "count", "truncated"}`.
pub(super) fn list_success() -> Value {
    closed(json!({
        "items": {
            "type": "array",
            "description": "Native objects in native order, unchanged.",
            "items": {"type": "object"},
        },
        "count": {"type": "integer", "minimum": 0, "description": "The native total, before truncation."},
        "truncated": {"type": "boolean", "description": "Whether items were dropped from the end (limit or output bound)."},
    }))
}

/// `{"item"}`.
pub(super) fn item_success() -> Value {
    closed(json!({"item": native_object("The native object, unchanged.")}))
}

/// `{"item", "etag"}` for `incus_instance_get`.
pub(super) fn item_with_etag_success() -> Value {
    closed(json!({
        "item": native_object("The native instance, unchanged."),
        "etag": {"type": ["string", "null"], "description": "The native ETag, for a conditional incus_instance_update."},
    }))
}

/// The mutation (and operation wait) result.
pub(super) fn mutation_success() -> Value {
    closed(json!({
        "status": {
            "enum": ["completed", "failed", "running", "uncertain"],
            "description": "completed/failed: the native outcome was observed; running: not observed within the wait; uncertain: the request may have been accepted but no response was decoded. Nothing is resent.",
        },
        "operation_id": {"type": ["string", "null"], "description": "The native operation ID, when known."},
        "operation": nullable_native_object("The last native operation object seen, when any; null when failed was reported by the wait without the object and it could not be read back (operation_id names it)."),
        "waited_seconds": {"type": "integer", "minimum": 0, "description": "The effective server-side wait."},
        "wait_error": {"type": ["string", "null"], "description": "The native wait error text, when the wait ended in one; for uncertain, why no response was decoded."},
    }))
}

/// The `incus_instance_update` result.
pub(super) fn update_success() -> Value {
    let result = closed(json!({
        "status": {"enum": ["completed", "uncertain"]},
        "etag_source": {"enum": ["input", "read"], "description": "Whether the ETag came from the input or was read first."},
        "etag": {"type": "string", "description": "The ETag the conditional PATCH was sent with."},
    }));
    with_uncertain_reason(result, true)
}

/// The `incus_operation_cancel` result.
pub(super) fn cancel_success() -> Value {
    let result = closed(json!({
        "status": {
            "enum": ["already_final", "unsupported", "requested", "uncertain"],
            "description": "already_final: nothing to cancel; unsupported: may_cancel is false; requested: one native DELETE was accepted; uncertain: the DELETE may have been accepted.",
        },
        "operation_id": {"type": "string"},
        "operation": nullable_native_object("The native operation object read first."),
    }));
    with_uncertain_reason(result, true)
}

fn exec_stream() -> Value {
    closed(json!({
        "data": {"type": "string", "description": "The captured bytes, as UTF-8 or base64."},
        "encoding": {"enum": ["utf-8", "base64"]},
        "bytes": count(),
        "captured_bytes": {"type": "integer", "minimum": 0, "maximum": MAX_CAPTURE_BYTES},
        "truncated": {"type": "boolean"},
    }))
}

/// The `incus_instance_exec` result.
pub(super) fn exec_success() -> Value {
    let result = closed(json!({
        "status": {
            "enum": ["completed", "timed_out", "output_limited", "failed", "running", "uncertain"],
        },
        "exit_code": {"type": ["integer", "null"]},
        "stdout": exec_stream(),
        "stderr": exec_stream(),
        "duration_ms": count(),
        "timeout_seconds": {"type": "integer", "minimum": 0, "description": "The effective duration bound."},
        "operation_id": {"type": ["string", "null"]},
        "operation": nullable_native_object("The last native operation object seen, when any."),
    }));
    // An exec whose streams could not be attached is uncertain in the client's own outcome,
    // which does not carry the attach error yet: there `reason` may be absent.
    let mut result = with_uncertain_reason(result, false);
    // A failed exec (its operation ended in failure without an exit code) always says why.
    result["properties"]["reason"]["description"] = json!("When status is uncertain: why the outcome is unknown (the error after the request may have been sent; nothing was resent). When status is failed: Incus's error for the operation that ended without an exit code. Absent otherwise.");
    result["else"] = json!({
        "if": {"properties": {"status": {"const": "failed"}}},
        "then": {"required": ["reason"]},
        "else": {"not": {"required": ["reason"]}},
    });
    result
}

/// The error shape shared by every operation.
pub(crate) fn error_shape() -> Value {
    let kinds: Vec<&str> = ErrorKind::ALL.iter().map(|kind| kind.as_str()).collect();
    let meanings: Vec<String> = ErrorKind::ALL
        .iter()
        .map(|kind| format!("{}: {}", kind.as_str(), kind.meaning()))
        .collect();
    json!({
        "type": "object",
        "properties": {
            "error": {
                "type": "object",
                "properties": {
                    "kind": {"enum": kinds, "description": meanings.join("\n")},
                    "message": {"type": "string"},
                    "http_status": {"type": "integer"},
                    "error_code": {"type": "integer"},
                    "pointer": {"type": "string", "description": "JSON pointer into the input (invalid_input)."},
                    "limit": {"type": "integer", "minimum": 0, "description": "The bound that was exceeded, in bytes or items."},
                    "operation_id": {"type": "string"},
                },
                "required": ["kind", "message"],
                "additionalProperties": false,
            },
        },
        "required": ["error"],
        "additionalProperties": false,
    })
}

/// The output schema document: the success shape or the error shape.
pub(super) fn output(success: &Value) -> Value {
    json!({
        "$schema": DIALECT,
        "oneOf": [success, error_shape()],
    })
}
