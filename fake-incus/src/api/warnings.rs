//! `/1.0/warnings`, declared: list (of one project with `project=`), get, acknowledge
//! (`PUT`/`PATCH` of `status`) and delete.
//! A fresh fake has none (an empty list is `null`, as the daemon's); a seeded state may hold
//! some (kind `warning` of its `objects`).

use super::resource::{Answer, At, Decl, Objects, Plain};
use super::Ctx;
use crate::envelope::ApiError;
use serde_json::Value;

/// Only `new` and `acknowledged` may be set (`cmd/incusd/warnings.go`), checked on the request
/// before the warning is looked up, as the daemon does.
fn status(object: &Value) -> Result<(), ApiError> {
    match object["status"].as_str().unwrap_or_default() {
        "new" | "acknowledged" => Ok(()),
        "resolved" => Err(ApiError::new(
            403,
            "Status may only be set to \"acknowledge\" or \"new\"",
        )),
        other => Err(ApiError::bad_request(format!(
            "Invalid warning type {other:?}"
        ))),
    }
}

/// `project=` lists only that project's warnings (none for an unknown project); without it, all.
fn of_the_project(ctx: &Ctx, warning: &Value) -> bool {
    match ctx.param("project").filter(|p| !p.is_empty()) {
        Some(project) => warning["project"].as_str() == Some(project),
        None => true,
    }
}

fn never(_: &str, _: &At) -> Result<(), ApiError> {
    Err(ApiError::not_implemented())
}

pub(super) static WARNINGS: Plain = Plain {
    decl: Decl {
        collection: "/1.0/warnings",
        key: "uuid",
        writable: &["status"],
        create: Answer::No,
        not_found: "Warning not found",
        exists: (409, ""),
        null_when_empty: true,
        limits: "The fake raises no warnings of its own.",
        store: &Objects {
            kind: "warning",
            key: "uuid",
        },
        ..Decl::DEFAULTS
    },
    fields: r#"{"uuid":"","status":"new","location":"none","project":"","type":"","count":1,"first_seen_at":"","last_seen_at":"","last_message":"","severity":"low","entity_url":""}"#,
    config_keys: &[],
    invalid_key: (400, ""),
    key_rule: never,
    request: Some(status),
    shown: of_the_project,
    ..Plain::DEFAULTS
};
