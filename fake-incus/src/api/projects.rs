//! `/1.0/projects[/{name}]`: list and get.

use super::Ctx;
use crate::envelope::{self, ApiError, ApiResult};
use http::Method;
use serde_json::{json, Value};

pub(super) fn route(ctx: &Ctx, method: &Method, rest: &[&str]) -> ApiResult {
    match (rest, method.as_str()) {
        ([], "GET") => list(ctx),
        ([name], "GET") => get(ctx, name),
        ([] | [_], _) => Err(ApiError::not_implemented()),
        _ => Err(ApiError::not_found()),
    }
}

fn list(ctx: &Ctx) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let items: Vec<Value> = state
        .projects
        .iter()
        .map(|p| {
            if ctx.recursion() == 0 {
                json!(format!("/1.0/projects/{}", p.name))
            } else {
                p.to_json(state)
            }
        })
        .collect();
    Ok(envelope::sync(Value::Array(items)))
}

fn get(ctx: &Ctx, name: &str) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let project = state
        .project(name)
        .ok_or_else(|| ApiError::new(404, "Project not found"))?;
    Ok(envelope::sync_etag(project.to_json(state), &project.etag()))
}
