//! A custom volume's files (Incus 7.0): `…/volumes/{type}/{name}/files?path=` (`GET`, `HEAD`,
//! `POST`, `DELETE`: API extension `file_storage_volume`) and `…/sftp` (`custom_volume_sftp`),
//! on the volume's own tree ([`crate::state::files::Owner::Volume`]; a new volume is an empty
//! directory, root's, mode 0711), served as an instance's files are. The checks and their order
//! are the real 7.0.2 daemon's (`cmd/incusd/storage_volumes_file.go`, `…_sftp.go`): the type
//! name, the pool, a volume of that type, then only a custom volume has files.
//!
//! The volume lookup ([`volume`]) is shared by the other endpoints below a volume that 7.0 adds
//! (`nbd`, `bitmaps`, `rebuild`).

use super::{pool_not_found, Ctx};
use crate::envelope::{ApiError, ApiResult};
use crate::state::files::Owner;
use bytes::Bytes;
use http::{HeaderMap, Method, Request};

pub(super) const FILES_EXTENSION: &str = "file_storage_volume";
pub(super) const SFTP_EXTENSION: &str = "custom_volume_sftp";

/// The volume types of the API (`storagePools.VolumeTypeNameToDBType`).
const VOLUME_TYPES: &[&str] = &["container", "virtual-machine", "image", "custom"];

/// A volume of a pool, as the request's project sees it.
pub(super) struct Found {
    /// The project that owns it (a custom volume's follows `features.storage.volumes`).
    pub(super) project: String,
    pub(super) pool: String,
    pub(super) kind: String,
    pub(super) name: String,
}

/// The daemon's checks before a volume endpoint acts, in its order: the type name (400
/// `Invalid storage volume type name`), the type the endpoint takes (`allowed`, else
/// `refused`'s 400), the pool (404 `Storage pool not found`), a volume of that type and name
/// (404 `Storage pool volume not found`).
pub(super) fn volume(
    ctx: &Ctx,
    pool: &str,
    kind: &str,
    name: &str,
    allowed: &[&str],
    refused: fn(&str) -> String,
) -> Result<Found, ApiError> {
    if !VOLUME_TYPES.contains(&kind) {
        return Err(ApiError::bad_request("Invalid storage volume type name"));
    }
    if !allowed.contains(&kind) {
        return Err(ApiError::bad_request(refused(kind)));
    }
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    if !state.storage_pools.iter().any(|p| p.name == pool) {
        return Err(pool_not_found());
    }
    let found = state
        .volumes(pool, &ctx.project())
        .into_iter()
        .find(|v| v.kind == kind && v.name == name)
        .ok_or_else(|| ApiError::new(404, "Storage pool volume not found"))?;
    Ok(Found {
        project: found.project,
        pool: pool.to_string(),
        kind: kind.to_string(),
        name: name.to_string(),
    })
}

/// Only a custom volume has files: another type's volume is not found as a custom one.
fn custom(ctx: &Ctx, found: Found) -> Result<Owner, ApiError> {
    if found.kind != "custom" {
        let project = ctx.app.snapshot().state.volume_project(&ctx.project());
        return Err(ApiError::new(
            404,
            format!(
                "Storage volume {:?} in project {project:?} of type \"custom\" does not exist on pool {:?}: Storage volume not found",
                found.name, found.pool
            ),
        ));
    }
    Ok(Owner::Volume {
        project: found.project,
        pool: found.pool,
        volume: found.name,
    })
}

fn invalid_type(kind: &str) -> String {
    format!("Invalid storage volume type {kind:?}")
}

/// `…/volumes/{type}/{name}/files?path=`.
pub(super) fn files(
    ctx: &Ctx,
    method: &Method,
    (pool, kind, name): (&str, &str, &str),
    headers: &HeaderMap,
    body: &Bytes,
) -> ApiResult {
    let found = volume(ctx, pool, kind, name, VOLUME_TYPES, invalid_type)?;
    let owner = custom(ctx, found)?;
    super::files::serve(ctx, method, &owner, headers, body)
}

/// `GET …/volumes/{type}/{name}/sftp` with `Upgrade: sftp`: the upgrade is checked first.
pub(super) fn sftp(
    ctx: &Ctx,
    (pool, kind, name): (&str, &str, &str),
    req: Request<Bytes>,
) -> ApiResult {
    if !super::sftp::wants_upgrade(&req) {
        return Err(ApiError::bad_request("Missing or invalid upgrade header"));
    }
    let found = volume(ctx, pool, kind, name, VOLUME_TYPES, invalid_type)?;
    let owner = custom(ctx, found)?;
    Ok(super::sftp::upgrade(ctx, owner, req))
}
