//! Storage buckets and their keys, declared: `/1.0/storage-pools/{pool}/buckets[/{name}]` and
//! `.../buckets/{name}/keys[/{key}]`, with the buckets' backups. A bucket on a `dir` pool needs
//! the MinIO client tool, which the fake (like a daemon without it) does not have: a create
//! answers the daemon's error, so buckets (and keys) exist only when a seeded state holds them.

use super::resource::plain::any_name;
use super::resource::{At, Decl, Objects, Plain, Scope, Sub};
use super::Ctx;
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::State;
use serde_json::json;

const PROJECT: [&str; 2] = ["Failed to load project \"{}\": Project not found"; 2];

/// A bucket's name (`internal/server/storage/drivers`), then the missing MinIO tool.
/// (7.0) The API name check, after the pool was found; then 6.0's driver rule.
fn bucket_name(key: &str, at: &At) -> Result<(), ApiError> {
    super::resource::api_name(at, "storage bucket", key)?;
    let valid = (3..=63).contains(&key.len())
        && key
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.' || c == '-')
        && key.starts_with(|c: char| c.is_ascii_alphanumeric());
    if !valid {
        return Err(ApiError::internal(
            "Failed creating storage bucket: Bucket name must be between 3 and 63 lowercase letters, numbers, periods or hyphens and must start with a letter or number",
        ));
    }
    Err(ApiError::internal(
        "Failed creating storage bucket: Failed connecting to bucket: Couldn't find the MinIO client tool",
    ))
}

fn key_name(key: &str, at: &At) -> Result<(), ApiError> {
    any_name(key, at)
}

fn pool(state: &State, at: &At) -> Result<(), ApiError> {
    let pool = at.parent.split('/').next().unwrap_or_default();
    if state.storage_pools.iter().any(|p| p.name == pool) {
        Ok(())
    } else {
        Err(ApiError::new(
            404,
            "Failed loading storage pool: Storage pool not found",
        ))
    }
}

fn bucket_exists(state: &State, project: &str, parent: &str) -> bool {
    let Some((pool, bucket)) = parent.split_once('/') else {
        return false;
    };
    state
        .objects
        .get("storage-bucket")
        .into_iter()
        .flatten()
        .any(|o| o.project == project && o.parent == pool && o.value["name"] == json!(bucket))
}

fn bucket(state: &State, at: &At) -> Result<(), ApiError> {
    pool(state, at)?;
    if bucket_exists(state, &at.project, &at.parent) {
        Ok(())
    } else {
        Err(ApiError::new(
            404,
            "Failed loading storage bucket: Storage bucket not found",
        ))
    }
}

/// A bucket's backups: the bucket must exist; the fake keeps none.
fn backups(ctx: &Ctx, at: &At, key: &str, _: &[&str]) -> ApiResult {
    let parent = format!("{}/{key}", at.parent);
    if !bucket_exists(&ctx.app.snapshot().state, &at.project, &parent) {
        return Err(ApiError::new(404, "Storage bucket not found"));
    }
    Ok(envelope::sync(json!([])))
}

/// A bucket's backup list on a line that lists them ([`crate::line::BUCKET_BACKUPS_LISTED`]):
/// the pool is looked up (`Storage pool not found`), the bucket is not (the fake keeps no
/// backups, so the list is empty).
pub(super) fn listed_backups(ctx: &Ctx, pool: &str) -> ApiResult {
    ctx.require_project(|p| PROJECT[1].replace("{}", p))?;
    if !ctx
        .app
        .snapshot()
        .state
        .storage_pools
        .iter()
        .any(|p| p.name == pool)
    {
        return Err(ApiError::new(404, "Storage pool not found"));
    }
    Ok(envelope::sync(json!([])))
}

fn backup(ctx: &Ctx, at: &At, key: &str, rest: &[&str]) -> ApiResult {
    backups(ctx, at, key, rest)?;
    Err(ApiError::new(404, "Storage bucket backup not found"))
}

pub(super) static BUCKETS: Plain = Plain {
    decl: Decl {
        collection: "/1.0/storage-pools/{}/buckets",
        scope: Scope::Project(Some("features.storage.buckets")),
        not_found: "Storage bucket not found",
        exists: (409, "Storage bucket already exists"),
        project_not_found: PROJECT,
        limits: "No S3 endpoint (no MinIO): a create answers the daemon's error without MinIO; backups are never made.",
        store: &Objects {
            kind: "storage-bucket",
            key: "name",
        },
        subs: &[
            Sub {
                method: "GET",
                path: &["backups"],
                serve: backups,
                does: "Empty for a bucket that exists.",
            },
            Sub {
                method: "POST",
                path: &["backups"],
                serve: backup,
                does: "The bucket's 404 (no bucket can be made).",
            },
            Sub {
                method: "GET",
                path: &["backups", "{}"],
                serve: backup,
                does: "404.",
            },
            Sub {
                method: "POST",
                path: &["backups", "{}"],
                serve: backup,
                does: "404.",
            },
            Sub {
                method: "DELETE",
                path: &["backups", "{}"],
                serve: backup,
                does: "404.",
            },
            Sub {
                method: "GET",
                path: &["backups", "{}", "export"],
                serve: backup,
                does: "404.",
            },
        ],
        ..Decl::DEFAULTS
    },
    fields: r#"{"name":"","description":"","config":{},"s3_url":"","location":"none","project":""}"#,
    config_keys: &["size", "user."],
    key_rule: bucket_name,
    parent: pool,
    ..Plain::DEFAULTS
};

pub(super) static BUCKET_KEYS: Plain = Plain {
    decl: Decl {
        collection: "/1.0/storage-pools/{}/buckets/{}/keys",
        scope: Scope::Project(Some("features.storage.buckets")),
        writable: &["description", "role", "access-key", "secret-key"],
        not_found: "Storage bucket key not found",
        exists: (409, "Storage bucket key already exists"),
        project_not_found: PROJECT,
        limits: "Keys of seeded buckets only (no bucket can be made).",
        store: &Objects {
            kind: "storage-bucket-key",
            key: "name",
        },
        ..Decl::DEFAULTS
    },
    fields: r#"{"name":"","description":"","role":"read-only","access-key":"","secret-key":""}"#,
    config_keys: &[],
    invalid_key: (400, ""),
    key_rule: key_name,
    parent: bucket,
    ..Plain::DEFAULTS
};
