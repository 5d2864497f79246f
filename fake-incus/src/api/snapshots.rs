//! `/1.0/instances/{name}/snapshots[/{snap}]`: list, get, create, rename, update (`PUT` and
//! `PATCH`, which the daemon treats alike) and delete.

use super::{instance_not_found, parse_body, snapshot_not_found, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::operations::OpSpec;
use crate::state::State;
use http::HeaderMap;
use serde::Deserialize;
use serde_json::{json, Value};

pub(super) fn list(ctx: &Ctx, name: &str) -> ApiResult {
    let project = ctx.project();
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let Some(instance) = state.instance(&project, name) else {
        return Ok(envelope::sync(json!([])));
    };
    let items: Vec<Value> = instance
        .snapshots
        .iter()
        .map(|s| {
            if ctx.recursion() == 0 {
                json!(s.url(instance))
            } else {
                s.to_json(instance, state, ctx.app.settings.line)
            }
        })
        .collect();
    Ok(envelope::sync(Value::Array(items)))
}

pub(super) fn get(ctx: &Ctx, name: &str, snap: &str) -> ApiResult {
    let project = ctx.project();
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let instance = state
        .instance(&project, name)
        .ok_or_else(|| instance_not_found(&format!("{name}/{snap}"), &project))?;
    let snapshot = instance
        .snapshot(snap)
        .ok_or_else(|| snapshot_not_found(name, snap, &project))?;
    Ok(envelope::sync_etag(
        snapshot.to_json(instance, state, ctx.app.settings.line),
        &snapshot.etag(),
    ))
}

/// The extension since which a snapshot's new name is checked as an API name.
const OBJECT_NAMES: &str = crate::line::OBJECT_NAMES_ARE_API_NAMES;

/// On a line that checks it ([`OBJECT_NAMES`]), a new snapshot name as an API name.
fn check_api_name(api_names: bool, name: &str) -> Result<(), ApiError> {
    super::validation::checked_api_name(api_names, "snapshot", name)
}

/// 6.0's `validate.IsURLSegmentSafe`: `Invalid snapshot name: Cannot contain "/"` (then `?`,
/// `&`, `+`).
fn url_segment_safe(name: &str) -> Result<(), ApiError> {
    match ["/", "?", "&", "+"].into_iter().find(|c| name.contains(c)) {
        Some(c) => Err(ApiError::bad_request(format!(
            "Invalid snapshot name: Cannot contain {c:?}"
        ))),
        None => Ok(()),
    }
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct CreateBody {
    #[serde(deserialize_with = "super::null_default")]
    name: String,
    #[serde(deserialize_with = "super::null_default")]
    stateful: bool,
    expires_at: Option<String>,
}

pub(super) fn create(ctx: &Ctx, name: &str, body: &[u8]) -> ApiResult {
    let project = ctx.project();
    let (instance_url, snap_name, snap_url) = {
        let state = ctx.app.state();
        let instance = super::found_instance(&state, &project, name)?;
        let req: CreateBody = parse_body(body)?;
        let api_names = ctx.app.has_extension(OBJECT_NAMES);
        let snap = if req.name.is_empty() {
            instance
                .next_snapshot_name(&state)
                .map_err(|e| ApiError::new(e.status(), e.to_string()))?
        } else {
            req.name.clone()
        };
        // The daemon checks the name it will use, a generated one too: 7.0 as an API name
        // (`..` refused), 6.0 only as a URL segment (`validate.IsURLSegmentSafe`).
        if !api_names {
            url_segment_safe(&snap)?;
        }
        check_api_name(api_names, &snap)?;
        let snap_url =
            crate::state::url(&format!("/1.0/instances/{name}/snapshots/{snap}"), &project);
        // Without an expiry in the request, the instance's `snapshots.expiry` from now.
        let expires = match req.expires_at.clone().filter(|e| !e.is_empty()) {
            Some(at) => Some(at),
            None => {
                let config = instance.expanded_config(&state);
                let expression = config.get("snapshots.expiry").map_or("", String::as_str);
                crate::state::expiry::expiry(&crate::state::clock::now(), expression)
                    .map_err(ApiError::bad_request)?
            }
        };
        (instance.url(), (snap, req, expires), snap_url)
    };
    let (snap, req, expires) = snap_name;
    let records_description = ctx.app.has_extension(crate::line::SNAPSHOT_DESCRIPTION);
    let conflicts_mapped = ctx
        .app
        .has_extension(crate::line::GENERATED_CONFLICTS_ARE_409);
    let spec = snapshot_spec(&project, "Snapshotting instance", instance_url, snap_url);
    let name = name.to_string();
    let app = std::sync::Arc::clone(&ctx.app);
    let op = ctx.start_task(spec, Box::new(move |state: &mut State| {
            // Measured on Incus 6.0.4: checked before whether the instance runs.
            let stateful_allowed = state.instance(&project, &name).is_some_and(|instance| {
                instance
                    .expanded_config(state)
                    .get("migration.stateful")
                    .is_some_and(|v| v == "true")
            });
            let instance = state.instance_mut(&project, &name).ok_or_else(|| instance_not_found(&name, &project))?;
            if instance.snapshot(&snap).is_some() && conflicts_mapped {
                return Err(ApiError::new(409, format!(
                    "Failed creating instance snapshot record \"{snap}\": Add snapshot info to the database: This \"Instance_snapshot\" entry already exists"
                )));
            }
            if instance.snapshot(&snap).is_some() {
                return Err(ApiError::internal(format!(
                    "Failed creating instance snapshot record \"{snap}\": Add snapshot info to the database: Failed to create \"instances_snapshots\" entry: UNIQUE constraint failed: instances_snapshots.instance_id, instances_snapshots.name"
                )));
            }
            if req.stateful && !stateful_allowed {
                return Err(ApiError::bad_request(
                    "Stateful snapshots require that the instance has migration.stateful be set to true",
                ));
            }
            let mut snapshot = instance.take_snapshot(&snap, req.stateful, expires);
            if records_description {
                snapshot.description = instance.description.clone();
            }
            instance.snapshots.push(snapshot);
            // The snapshot keeps the instance's files, as the daemon snapshots its rootfs.
            app.files().take_snapshot(&project, &name, &snap);
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

pub(super) fn delete(ctx: &Ctx, name: &str, snap: &str) -> ApiResult {
    let project = ctx.project();
    let (instance_url, snap_url) = snapshot_urls(ctx, name, snap)?;
    let spec = snapshot_spec(&project, "Deleting snapshot", instance_url, snap_url);
    let (name, snap) = (name.to_string(), snap.to_string());
    let app = std::sync::Arc::clone(&ctx.app);
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            if let Some(instance) = state.instance_mut(&project, &name) {
                instance.snapshots.retain(|s| s.name != snap);
            }
            app.files().remove_snapshot(&project, &name, &snap);
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

/// The instance's and the snapshot's URLs, or the daemon's 404 for either.
fn snapshot_urls(ctx: &Ctx, name: &str, snap: &str) -> Result<(String, String), ApiError> {
    let project = ctx.project();
    let state = ctx.app.state();
    let instance = state
        .instance(&project, name)
        .ok_or_else(|| instance_not_found(&format!("{name}/{snap}"), &project))?;
    let snapshot = instance
        .snapshot(snap)
        .ok_or_else(|| snapshot_not_found(name, snap, &project))?;
    Ok((instance.url(), snapshot.url(instance)))
}

/// The operation's spec with the daemon's `instances` and `instances_snapshots` resources.
fn snapshot_spec(
    project: &str,
    description: &'static str,
    instance_url: String,
    snap_url: String,
) -> OpSpec {
    let mut spec = OpSpec::task(project, description, instance_url);
    spec.resources
        .insert("instances_snapshots".into(), vec![snap_url]);
    spec
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RenameBody {
    #[serde(deserialize_with = "super::null_default")]
    name: String,
    #[serde(deserialize_with = "super::null_default")]
    migration: bool,
}

/// `POST /1.0/instances/{name}/snapshots/{snap}` with a new name (migration is not simulated).
pub(super) fn rename(ctx: &Ctx, name: &str, snap: &str, body: &[u8]) -> ApiResult {
    let project = ctx.project();
    let (instance_url, snap_url) = snapshot_urls(ctx, name, snap)?;
    let req: RenameBody = parse_body(body)?;
    if req.migration {
        return Err(ApiError::not_implemented());
    }
    if req.name.is_empty() {
        return Err(ApiError::bad_request(
            "A new name for the instance must be provided",
        ));
    }
    let api_names = ctx.app.has_extension(OBJECT_NAMES);
    if !api_names && req.name.contains('/') {
        return Err(ApiError::bad_request(
            "Invalid snapshot name: Cannot contain \"/\"",
        ));
    }
    check_api_name(api_names, &req.name)?;
    fn taken(state: &State, project: &str, name: &str, new: &str) -> bool {
        state
            .instance(project, name)
            .is_some_and(|i| i.snapshot(new).is_some())
    }
    if taken(&ctx.app.state(), &project, name, &req.name) {
        return Err(ApiError::new(
            409,
            format!("Name '{name}/{}' already in use", req.name),
        ));
    }
    let spec = snapshot_spec(&project, "Renaming snapshot", instance_url, snap_url);
    let (name, old, new) = (name.to_string(), snap.to_string(), req.name);
    let app = std::sync::Arc::clone(&ctx.app);
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            if taken(state, &project, &name, &new) {
                return Err(ApiError::new(
                    409,
                    format!("Name '{name}/{new}' already in use"),
                ));
            }
            let snapshot = state
                .instance_mut(&project, &name)
                .and_then(|i| i.snapshots.iter_mut().find(|s| s.name == old))
                .ok_or_else(|| snapshot_not_found(&name, &old, &project))?;
            snapshot.name.clone_from(&new);
            app.files().rename_snapshot(&project, &name, &old, &new);
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

/// `PUT` and `PATCH`: only `expires_at` is writable; a body without it as a string changes
/// nothing (still an operation), one with it sets it (RFC 3339, the daemon's 400 otherwise).
pub(super) fn update(
    ctx: &Ctx,
    name: &str,
    snap: &str,
    headers: &HeaderMap,
    body: &[u8],
) -> ApiResult {
    let project = ctx.project();
    let (instance_url, snap_url) = snapshot_urls(ctx, name, snap)?;
    {
        let state = ctx.app.state();
        if let Some(current) = state
            .instance(&project, name)
            .and_then(|i| i.snapshot(snap))
        {
            super::resource::check_etag(headers, &current.etag())?;
        }
    }
    let fields: serde_json::Map<String, Value> =
        serde_json::from_slice(body).map_err(|e| ApiError::internal(e.to_string()))?;
    let expires = match fields.get("expires_at") {
        Some(Value::String(text)) => Some(parse_time(text)?),
        _ => None,
    };
    let spec = snapshot_spec(&project, "Updating snapshot", instance_url, snap_url);
    let (name, snap) = (name.to_string(), snap.to_string());
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            let Some(expires) = expires else {
                return Ok(None);
            };
            let snapshot = state
                .instance_mut(&project, &name)
                .and_then(|i| i.snapshots.iter_mut().find(|s| s.name == snap))
                .ok_or_else(|| snapshot_not_found(&name, &snap, &project))?;
            snapshot.expires_at = expires;
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

/// An RFC 3339 time as Go's `time.Time` decodes it, or the daemon's 400 with Go's text.
pub(super) fn parse_time(text: &str) -> Result<String, ApiError> {
    use time::format_description::well_known::Rfc3339;
    match time::OffsetDateTime::parse(text, &Rfc3339) {
        Ok(_) => Ok(text.to_string()),
        Err(_) => Err(ApiError::bad_request(format!(
            "parsing time {text:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse {text:?} as \"2006\""
        ))),
    }
}

/// Incus decodes a snapshot's path segment a second time, as a query value: `url.PathUnescape`,
/// then `url.QueryUnescape` (`instanceSnapshotHandler`, `cmd/incusd/instance_snapshot.go` of 6.0.4
/// and 7.0), so `s%2531` names `s1` and `a+b` names `a b` (both checked on the real daemons). A
/// malformed escape is Go's error, answered as an internal error.
pub(super) fn decoded(segment: &str) -> Result<String, ApiError> {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes.get(i + 1..i + 3).and_then(|pair| {
                    std::str::from_utf8(pair)
                        .ok()
                        .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                        .filter(|_| pair.iter().all(u8::is_ascii_hexdigit))
                });
                let Some(byte) = hex else {
                    let end = (i + 3).min(bytes.len());
                    let escape = String::from_utf8_lossy(&bytes[i..end]);
                    return Err(ApiError::internal(format!("invalid URL escape {escape:?}")));
                };
                out.push(byte);
                i += 2;
            }
            other => out.push(other),
        }
        i += 1;
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

#[cfg(test)]
mod decoding_tests {
    use super::decoded as query_unescape;

    #[test]
    fn a_snapshot_segment_is_decoded_as_a_query_value() {
        assert_eq!(query_unescape("s%31").unwrap(), "s1");
        assert_eq!(query_unescape("a+b").unwrap(), "a b");
        assert_eq!(query_unescape("snap0").unwrap(), "snap0");
        let error = query_unescape("s%zz").unwrap_err();
        assert!(
            format!("{error:?}").contains(r#"invalid URL escape \"%zz\""#),
            "{error:?}"
        );
        assert!(query_unescape("s%3").is_err());
    }
}
