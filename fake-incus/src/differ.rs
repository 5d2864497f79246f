//! How two answers to the same request are compared: the HTTP status, the envelope's fields, the
//! keys and JSON types of the metadata, and the presence of the `ETag` and `Location` headers.
//! One definition, used by the raw differential probe (real daemon against the fake, request by
//! request) and by `fake-incus replay` (a recorded transcript against a fresh fake).
//!
//! Values that legitimately differ (ids, timestamps, fingerprints, ETag values, host names,
//! `used_by` contents, API extensions...) are not compared. Compared values: the envelope's
//! `type`, `status`, `status_code`, `error_code`, its `error` text (ids masked), the
//! `Content-Type` header, the newlines that end the body, and the `status`, `status_code`,
//! `class`, `may_cancel`, `return` and `type` of every metadata object outside lists.

use http::HeaderMap;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::sync::OnceLock;

/// Object keys whose values are data maps whose keys legitimately differ: only the types of
/// their values are compared.
const MAP_KEYS: &[&str] = &["environment", "disk", "auth_methods"];
/// Keys whose contents are not compared at all (only that the key is there with the same type).
const OPAQUE_KEYS: &[&str] = &["used_by", "api_extensions", "environment", "update_source"];
/// Keys whose scalar values must be equal wherever they appear in one object (not in lists,
/// whose items are merged).
const VALUE_KEYS: &[&str] = &[
    "status",
    "status_code",
    "class",
    "may_cancel",
    "return",
    "type",
];
/// How deep metadata shapes are compared.
const MAX_DEPTH: usize = 6;

/// One side's answer, as far as it is compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Observed {
    /// The HTTP status.
    pub status: u16,
    /// The `ETag` header's value.
    pub etag: Option<String>,
    /// Whether there is a `Location` header.
    pub location: bool,
    /// The `Content-Type` header (`-` when there is none).
    pub content_type: String,
    /// How many newlines end the body (the daemon ends an error envelope with two, a sync one
    /// with one).
    pub trailing_newlines: usize,
    /// The body as JSON; a body that is not JSON is a JSON string of its text.
    pub body: Value,
}

impl Observed {
    /// The answer made of a status, its headers and its body.
    pub fn new(status: u16, headers: &HeaderMap, bytes: &[u8]) -> Self {
        let text = |name: &str| {
            headers
                .get(name)
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        };
        Self {
            status,
            etag: text("etag"),
            location: headers.contains_key("location"),
            content_type: text("content-type").unwrap_or_else(|| "-".into()),
            trailing_newlines: bytes.iter().rev().take_while(|&&b| b == b'\n').count(),
            body: serde_json::from_slice(bytes)
                .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned())),
        }
    }

    /// Whether the HTTP status is a success (2xx).
    pub fn is_success(&self) -> bool {
        (200..300).contains(&self.status)
    }

    /// The envelope's metadata.
    pub fn metadata(&self) -> &Value {
        &self.body["metadata"]
    }

    /// The operation id of an async answer.
    pub fn operation_id(&self) -> Option<String> {
        let url = self.body["operation"].as_str()?;
        let id = url.strip_prefix("/1.0/operations/")?;
        Some(id.split('?').next().unwrap_or(id).to_string())
    }
}

/// Everything that differs between the expected (`real`) and the `fake` answer, one line each.
///
/// ```
/// use fake_incus::differ::{compare, Observed};
/// let headers = http::HeaderMap::new();
/// let real = Observed::new(404, &headers, br#"{"type":"error","error":"Instance not found","error_code":404}"#);
/// let fake = Observed::new(404, &headers, br#"{"type":"error","error":"Not found","error_code":404}"#);
/// assert_eq!(compare(&real, &fake), ["error: real \"Instance not found\" vs fake \"Not found\""]);
/// ```
pub fn compare(real: &Observed, fake: &Observed) -> Vec<String> {
    let mut diffs = Vec::new();
    let mut differ = |what: &str, r: String, f: String| {
        if r != f {
            diffs.push(format!("{what}: real {r} vs fake {f}"));
        }
    };
    differ(
        "HTTP status",
        real.status.to_string(),
        fake.status.to_string(),
    );
    differ(
        "ETag header",
        real.etag.is_some().to_string(),
        fake.etag.is_some().to_string(),
    );
    differ(
        "Location header",
        real.location.to_string(),
        fake.location.to_string(),
    );
    differ(
        "Content-Type",
        real.content_type.clone(),
        fake.content_type.clone(),
    );
    differ(
        "newlines ending the body",
        real.trailing_newlines.to_string(),
        fake.trailing_newlines.to_string(),
    );
    let (rb, fb) = (&real.body, &fake.body);
    match (rb.as_object(), fb.as_object()) {
        (Some(ro), Some(fo)) => {
            differ("envelope keys", keys(ro), keys(fo));
            differ(
                "error",
                normalised(ro.get("error")),
                normalised(fo.get("error")),
            );
            for key in ["type", "status", "status_code", "error_code"] {
                differ(key, ro.get(key).map_or("-".into(), Value::to_string), {
                    fo.get(key).map_or("-".into(), Value::to_string)
                });
            }
            let empty = |o: &Map<String, Value>| {
                o.get("operation")
                    .and_then(Value::as_str)
                    .map(str::is_empty)
            };
            differ(
                "operation empty",
                format!("{:?}", empty(ro)),
                format!("{:?}", empty(fo)),
            );
            let mut shape = Vec::new();
            let (rm, fm) = (settled(rb), settled(fb));
            shape_diff("metadata", &rm, &fm, 0, &mut shape);
            diffs.extend(shape);
        }
        _ => differ("body", kind(rb).into(), kind(fb).into()),
    }
    diffs
}

/// The metadata to compare. An async answer's operation may already have finished when the
/// real daemon renders it (a fast failure shows `Failure`), so its status values are masked.
fn settled(body: &Value) -> Value {
    let mut metadata = body["metadata"].clone();
    if body["type"] == "async" {
        if let Some(object) = metadata.as_object_mut() {
            object.insert("status".into(), json!("-"));
            object.insert("status_code".into(), json!(0));
        }
    }
    metadata
}

/// An error text with its ids (hex hashes, uuids) replaced by a placeholder, and the daemon's
/// log directory too: it is where the daemon was installed (`$INCUS_DIR/logs` when the daemon
/// was started with `INCUS_DIR`, `/var/log/incus` as a packaged service), not a property of the
/// API. Quoted, `"-"` when there is no error text.
///
/// ```
/// let error = serde_json::json!("Operation \"0b5e1d0c-58a4-4d47-8ae3-66f5d0c0f7a1\" not found");
/// assert_eq!(fake_incus::differ::normalised(Some(&error)), r#""Operation \"<id>\" not found""#);
/// ```
pub fn normalised(error: Option<&Value>) -> String {
    static PATTERNS: OnceLock<(regex::Regex, regex::Regex)> = OnceLock::new();
    let (ids, logs) = PATTERNS.get_or_init(|| {
        (
            regex::Regex::new(r"[0-9a-f]{8}-[0-9a-f-]{27}|[0-9a-f]{64}").expect("valid regex"),
            regex::Regex::new(r"/var/log/incus/|/\S*/logs/").expect("valid regex"),
        )
    });
    let text = error.and_then(Value::as_str).unwrap_or("-");
    let text = ids.replace_all(text, "<id>");
    format!("{:?}", logs.replace_all(&text, "<log dir>/"))
}

fn keys(object: &Map<String, Value>) -> String {
    let set: BTreeSet<&str> = object.keys().map(String::as_str).collect();
    format!("{set:?}")
}

/// The JSON type of a value, by name.
pub fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Compares the shape (keys and types) of two values down to [`MAX_DEPTH`].
fn shape_diff(path: &str, real: &Value, fake: &Value, depth: usize, out: &mut Vec<String>) {
    if kind(real) != kind(fake) {
        out.push(format!(
            "{path}: type real {} vs fake {}",
            kind(real),
            kind(fake)
        ));
        return;
    }
    if depth >= MAX_DEPTH {
        return;
    }
    let leaf = path.rsplit('.').next().unwrap_or(path);
    let leaf = leaf.trim_end_matches("[]");
    if OPAQUE_KEYS.contains(&leaf) {
        return;
    }
    match (real, fake) {
        (Value::Object(r), Value::Object(f)) => {
            if MAP_KEYS.contains(&leaf) {
                let r = merged(r.values());
                let f = merged(f.values());
                if let (Some(r), Some(f)) = (r, f) {
                    shape_diff(&format!("{path}.*"), &r, &f, depth + 1, out);
                }
                return;
            }
            let rk: BTreeSet<&String> = r.keys().collect();
            let fk: BTreeSet<&String> = f.keys().collect();
            let missing: Vec<_> = rk.difference(&fk).collect();
            let extra: Vec<_> = fk.difference(&rk).collect();
            if !missing.is_empty() {
                out.push(format!("{path}: keys missing in fake {missing:?}"));
            }
            if !extra.is_empty() {
                out.push(format!("{path}: keys only in fake {extra:?}"));
            }
            for key in rk.intersection(&fk) {
                let (rv, fv) = (&r[*key], &f[*key]);
                if !path.contains("[]")
                    && VALUE_KEYS.contains(&key.as_str())
                    && rv.is_string() | rv.is_number() | rv.is_boolean()
                    && rv != fv
                {
                    out.push(format!("{path}.{key}: value real {rv} vs fake {fv}"));
                }
                shape_diff(&format!("{path}.{key}"), &r[*key], &f[*key], depth + 1, out);
            }
        }
        (Value::Array(r), Value::Array(f)) => {
            if let (Some(r), Some(f)) = (merged(r.iter()), merged(f.iter())) {
                shape_diff(&format!("{path}[]"), &r, &f, depth + 1, out);
            }
        }
        _ => {}
    }
}

/// One representative of a list of values: objects are merged key by key, recursively, so a
/// list is compared by the union of its items' keys (independently of the items' order).
fn merged<'a>(values: impl Iterator<Item = &'a Value>) -> Option<Value> {
    values.fold(None, |acc, value| match acc {
        None => Some(value.clone()),
        Some(acc) => Some(merge(acc, value)),
    })
}

fn merge(acc: Value, value: &Value) -> Value {
    match (acc, value) {
        (Value::Object(mut acc), Value::Object(o)) => {
            for (k, v) in o {
                let next = match acc.remove(k) {
                    Some(old) => merge(old, v),
                    None => v.clone(),
                };
                acc.insert(k.clone(), next);
            }
            Value::Object(acc)
        }
        (Value::Array(mut acc), Value::Array(a)) => {
            acc.extend(a.iter().cloned());
            Value::Array(acc)
        }
        (Value::Null, v) => v.clone(),
        (acc, _) => acc,
    }
}
