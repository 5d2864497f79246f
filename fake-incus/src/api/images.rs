//! `/1.0/images` and `/1.0/images/aliases`: list, get (by fingerprint prefix) and delete.

use super::filter::Filter;
use super::Ctx;
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::operations::OpSpec;
use crate::state::{url, Image, State};
use http::Method;
use serde_json::{json, Value};
use std::collections::BTreeMap;

pub(super) fn route(ctx: &Ctx, method: &Method, rest: &[&str]) -> ApiResult {
    if !matches!(rest, [fp] if *fp != "aliases") {
        ctx.require_project(|_| {
            "Check if project has images: fetch project: Project not found".into()
        })?;
    }
    match (rest, method.as_str()) {
        ([], "GET") => list(ctx),
        (["aliases"], "GET") => list_aliases(ctx),
        (["aliases", alias], "GET") => get_alias(ctx, alias),
        ([fingerprint], "GET") => get(ctx, fingerprint),
        ([fingerprint], "DELETE") => delete(ctx, fingerprint),
        ([] | ["aliases"] | ["aliases", _] | [_], _) => Err(ApiError::not_implemented()),
        _ => Err(ApiError::not_found()),
    }
}

/// The images visible from a project (shared with `default` when `features.images=false`).
fn images<'a>(state: &'a State, project: &str) -> impl Iterator<Item = &'a Image> {
    let owner = state.image_project(project);
    state.images.iter().filter(move |i| i.project == owner)
}

fn list(ctx: &Ctx) -> ApiResult {
    let filter = ctx
        .param("filter")
        .filter(|f| !f.is_empty())
        .map(Filter::parse)
        .transpose()?;
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let mut out = Vec::new();
    for project in ctx.projects() {
        for image in images(state, &project) {
            let object = image.to_json();
            if filter.as_ref().is_some_and(|f| !f.matches(&object)) {
                continue;
            }
            out.push(if ctx.recursion() == 0 {
                json!(url(&format!("/1.0/images/{}", image.fingerprint), &project))
            } else {
                object
            });
        }
    }
    Ok(envelope::sync(Value::Array(out)))
}

/// A unique image by fingerprint prefix.
fn find<'a>(state: &'a State, project: &str, prefix: &str) -> Option<&'a Image> {
    if prefix.is_empty() {
        return None;
    }
    let mut matches = images(state, project).filter(|i| i.fingerprint.starts_with(prefix));
    let first = matches.next()?;
    matches.next().is_none().then_some(first)
}

fn get(ctx: &Ctx, fingerprint: &str) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let image = find(state, &ctx.project(), fingerprint)
        .ok_or_else(|| ApiError::new(404, format!("Image \"{fingerprint}\" not found")))?;
    Ok(envelope::sync_etag(image.to_json(), &image.etag()))
}

fn delete(ctx: &Ctx, fingerprint: &str) -> ApiResult {
    let project = ctx.project();
    let (owner, full) = {
        let state = ctx.app.state();
        let image = find(&state, &project, fingerprint)
            .ok_or_else(|| ApiError::new(404, "Image not found"))?;
        (image.project.clone(), image.fingerprint.clone())
    };
    let spec = OpSpec {
        project: project.clone(),
        class: "task",
        description: "Deleting image",
        resources: BTreeMap::from([(
            "images".to_string(),
            vec![url(&format!("/1.0/images/{full}"), &project)],
        )]),
        metadata: Value::Null,
        may_cancel: false,
        duration: std::time::Duration::ZERO,
    };
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            state
                .images
                .retain(|i| !(i.project == owner && i.fingerprint == full));
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

fn list_aliases(ctx: &Ctx) -> ApiResult {
    let project = ctx.project();
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let mut out = Vec::new();
    for image in images(state, &project) {
        for alias in &image.aliases {
            out.push(if ctx.recursion() == 0 {
                json!(url(
                    &format!("/1.0/images/aliases/{}", alias.name),
                    &project
                ))
            } else {
                image.alias_json(alias)
            });
        }
    }
    Ok(envelope::sync(Value::Array(out)))
}

fn get_alias(ctx: &Ctx, name: &str) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let project = ctx.project();
    let (image, alias) = images(state, &project)
        .find_map(|i| i.aliases.iter().find(|a| a.name == name).map(|a| (i, a)))
        .ok_or_else(|| ApiError::new(404, "Image alias not found"))?;
    let object = image.alias_json(alias);
    let etag = crate::state::etag::hash(&object);
    Ok(envelope::sync_etag(object, &etag))
}
