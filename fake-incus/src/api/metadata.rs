//! `/1.0/instances/{name}/metadata` (the instance's `metadata.yaml`: get, replace, merge) and
//! `/1.0/instances/{name}/metadata/templates` (list, get, upload and delete a template file), as
//! `incus config metadata` and `incus config template` use them.

use super::Ctx;
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::Instance;
use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Response};
use serde_json::{json, Map, Value};

/// The instance's metadata and templates, as they are now (the instance's 404 otherwise).
fn current(ctx: &Ctx, name: &str) -> Result<(Value, crate::state::StringMap), ApiError> {
    let project = ctx.project();
    let state = ctx.app.state();
    let instance = super::found_instance(&state, &project, name)?;
    Ok((metadata_of(instance), instance.templates.clone()))
}

/// `GET /1.0/instances/{name}/metadata`.
pub(super) fn get(ctx: &Ctx, name: &str) -> ApiResult {
    let (metadata, _) = current(ctx, name)?;
    let etag = crate::state::etag::hash(&metadata);
    Ok(envelope::sync_etag(metadata, &etag))
}

/// `PUT` (`patch`: `PATCH`) `/1.0/instances/{name}/metadata`.
pub(super) fn put(
    ctx: &Ctx,
    name: &str,
    headers: &HeaderMap,
    body: &Bytes,
    patch: bool,
) -> ApiResult {
    let (metadata, _) = current(ctx, name)?;
    super::resource::check_etag(headers, &crate::state::etag::hash(&metadata))?;
    let sent: Map<String, Value> = super::parse_body(body)?;
    let merged = if patch {
        let mut merged = metadata.as_object().cloned().unwrap_or_default();
        merged.extend(sent);
        merged
    } else {
        sent
    };
    let metadata = normalized(&merged);
    update(ctx, name, |instance| instance.metadata = Some(metadata))
}

/// The metadata as the daemon renders it (the empty form when the instance has none).
fn metadata_of(instance: &Instance) -> Value {
    instance.metadata.clone().unwrap_or_else(|| {
        json!({"architecture": "", "creation_date": 0, "expiry_date": 0, "properties": null,
            "templates": null})
    })
}

/// A written `metadata.yaml` read back as Go's `api.ImageMetadata`: every field present, the
/// templates with `create_only` and `properties`.
fn normalized(sent: &Map<String, Value>) -> Value {
    let text = |key: &str| sent.get(key).and_then(Value::as_str).unwrap_or_default();
    let number = |key: &str| sent.get(key).and_then(Value::as_i64).unwrap_or_default();
    let map = |key: &str| match sent.get(key) {
        Some(Value::Object(map)) => Value::Object(map.clone()),
        _ => json!({}),
    };
    let templates: Map<String, Value> = sent
        .get("templates")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(path, t)| {
            let field = |key: &str, default: Value| t.get(key).cloned().unwrap_or(default);
            (
                path.clone(),
                json!({"when": field("when", Value::Null),
                    "create_only": field("create_only", json!(false)),
                    "template": field("template", json!("")),
                    "properties": field("properties", json!({}))}),
            )
        })
        .collect();
    json!({"architecture": text("architecture"), "creation_date": number("creation_date"),
        "expiry_date": number("expiry_date"), "properties": map("properties"),
        "templates": templates})
}

fn update(ctx: &Ctx, name: &str, change: impl FnOnce(&mut Instance)) -> ApiResult {
    let project = ctx.project();
    let mut state = ctx.app.state();
    let instance = super::found_instance_mut(&mut state, &project, name)?;
    change(instance);
    ctx.applied();
    Ok(envelope::empty())
}

/// `/1.0/instances/{name}/metadata/templates[?path=]`, every method.
pub(super) fn templates(ctx: &Ctx, name: &str, method: &str, body: &Bytes) -> ApiResult {
    let (_, current) = current(ctx, name)?;
    let current = &current;
    let path = ctx.param("path").unwrap_or_default().to_string();
    let not_found = |path: &str| ApiError::new(404, format!("Template {path:?} not found"));
    if method == "GET" && path.is_empty() {
        let names: Vec<Value> = current.keys().map(|k| json!(k)).collect();
        return Ok(envelope::sync(Value::Array(names)));
    }
    if path.is_empty() {
        return Err(ApiError::bad_request("missing path argument"));
    }
    match method {
        "GET" => {
            let content = current.get(&path).ok_or_else(|| not_found(&path))?;
            let mut response = Response::new(envelope::full(content.clone().into_bytes()));
            let out = response.headers_mut();
            out.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/octet-stream"),
            );
            if let Ok(value) = HeaderValue::from_str(&format!("inline;filename={path}")) {
                out.insert(header::CONTENT_DISPOSITION, value);
            }
            Ok(response)
        }
        "POST" | "PUT" => {
            let content = String::from_utf8_lossy(body).into_owned();
            update(ctx, name, |instance| {
                instance.templates.insert(path, content);
            })
        }
        "DELETE" => {
            if !current.contains_key(&path) {
                return Err(not_found(&path));
            }
            update(ctx, name, |instance| {
                instance.templates.remove(&path);
            })
        }
        _ => Err(ApiError::not_implemented()),
    }
}
