//! `/1.0/networks[/{name}]`: list and get.

use super::Ctx;
use crate::envelope::{self, ApiError, ApiResult};
use http::Method;
use serde_json::{json, Value};

pub(super) fn route(ctx: &Ctx, method: &Method, rest: &[&str]) -> ApiResult {
    ctx.require_project(|p| format!("Failed to load project \"{p}\": Project not found"))?;
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
        .networks
        .iter()
        .map(|n| {
            if ctx.recursion() == 0 {
                json!(format!("/1.0/networks/{}", n.name))
            } else {
                n.to_json()
            }
        })
        .collect();
    Ok(envelope::sync(Value::Array(items)))
}

fn get(ctx: &Ctx, name: &str) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let network = state
        .networks
        .iter()
        .find(|n| n.name == name)
        .ok_or_else(|| ApiError::new(404, "Network not found"))?;
    Ok(envelope::sync_etag(network.to_json(), &network.etag()))
}
