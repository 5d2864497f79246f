//! `/1.0/profiles[/{name}]`: list and get (projects without `features.profiles` see `default`'s).

use super::Ctx;
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::url;
use http::Method;
use serde_json::{json, Value};

pub(super) fn route(ctx: &Ctx, method: &Method, rest: &[&str]) -> ApiResult {
    ctx.require_project(|p| format!("Failed loading project \"{p}\": Project not found"))?;
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
    let mut items = Vec::new();
    for project in ctx.projects() {
        let owner = state.profile_project(&project);
        for profile in state.profiles.iter().filter(|p| p.project == owner) {
            items.push(if ctx.recursion() == 0 {
                json!(url(&format!("/1.0/profiles/{}", profile.name), &project))
            } else {
                profile.to_json(state)
            });
        }
    }
    Ok(envelope::sync(Value::Array(items)))
}

fn get(ctx: &Ctx, name: &str) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let profile = state
        .profile(&ctx.project(), name)
        .ok_or_else(|| ApiError::new(404, "Fetch profile: Profile not found"))?;
    Ok(envelope::sync_etag(profile.to_json(state), &profile.etag()))
}
