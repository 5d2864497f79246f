//! Comparing two results by shape, for the differential mode: success or error, error kind and HTTP
//! status, mutation status, and the keys and JSON types of the result and of the native objects in
//! it. Values (names, times, fingerprints, output) are not compared.
use serde_json::{Map, Value};

/// Keys whose values are part of the shape (closed vocabularies of the result contract).
const SHAPE_VALUES: &[&str] = &["status", "etag_source", "encoding", "truncated"];
/// Keys whose nested objects are compared key by key.
const NESTED: &[&str] = &["item", "operation", "stdout", "stderr", "error"];

/// The ways `fake` differs from `real` in shape; empty when they agree.
pub fn shape_differences(real: &Value, fake: &Value) -> Vec<String> {
    let mut out = Vec::new();
    match (real.get("error"), fake.get("error")) {
        (Some(r), Some(f)) => {
            for key in ["kind", "http_status"] {
                if r.get(key) != f.get(key) {
                    out.push(format!(
                        "error.{key}: real {} vs fake {}",
                        show(r.get(key)),
                        show(f.get(key))
                    ));
                }
            }
        }
        (Some(r), None) => out.push(format!(
            "real gave error {}, fake succeeded",
            show(r.get("kind"))
        )),
        (None, Some(f)) => out.push(format!(
            "real succeeded, fake gave error {}",
            show(f.get("kind"))
        )),
        (None, None) => compare_objects("", real, fake, 0, &mut out),
    }
    out
}

fn compare_objects(path: &str, real: &Value, fake: &Value, depth: usize, out: &mut Vec<String>) {
    let (Some(r), Some(f)) = (real.as_object(), fake.as_object()) else {
        if type_name(real) != type_name(fake) {
            out.push(format!(
                "{}: real {} vs fake {}",
                display(path),
                type_name(real),
                type_name(fake)
            ));
        }
        return;
    };
    key_differences(path, r, f, out);
    for (key, rv) in r {
        let Some(fv) = f.get(key) else { continue };
        let here = format!("{path}/{key}");
        if type_name(rv) != type_name(fv) && !rv.is_null() && !fv.is_null() {
            out.push(format!(
                "{here}: real {} vs fake {}",
                type_name(rv),
                type_name(fv)
            ));
            continue;
        }
        if depth == 0 && SHAPE_VALUES.contains(&key.as_str()) && rv != fv {
            out.push(format!("{here}: real {rv} vs fake {fv}"));
        }
        let nested = depth == 0 && NESTED.contains(&key.as_str());
        if nested && rv.is_object() && fv.is_object() {
            compare_objects(&here, rv, fv, depth + 1, out);
        }
        if depth == 0 && key == "items" {
            if let (Some(ri), Some(fi)) = (rv.get(0), fv.get(0)) {
                compare_objects(&format!("{here}/0"), ri, fi, depth + 1, out);
            }
        }
    }
}

fn key_differences(
    path: &str,
    real: &Map<String, Value>,
    fake: &Map<String, Value>,
    out: &mut Vec<String>,
) {
    let missing: Vec<&str> = real
        .keys()
        .filter(|k| !fake.contains_key(*k))
        .map(String::as_str)
        .collect();
    let extra: Vec<&str> = fake
        .keys()
        .filter(|k| !real.contains_key(*k))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        out.push(format!(
            "{}: keys only on the real daemon: {}",
            display(path),
            missing.join(", ")
        ));
    }
    if !extra.is_empty() {
        out.push(format!(
            "{}: keys only on the fake: {}",
            display(path),
            extra.join(", ")
        ));
    }
}

fn display(path: &str) -> &str {
    if path.is_empty() {
        "/"
    } else {
        path
    }
}

fn show(value: Option<&Value>) -> String {
    value.map_or_else(|| "(none)".to_owned(), Value::to_string)
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}
