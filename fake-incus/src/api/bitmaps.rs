//! Dirty bitmaps (Incus 7.0, API extension `storage_volume_nbd`): a block volume's
//! (`…/volumes/{type}/{name}/bitmaps[/{bitmap}]`: list, create, get, delete) and a virtual
//! machine's (`POST /1.0/instances/{name}/bitmaps`). They live in QEMU, on a running virtual
//! machine's disks: the fake's custom volumes are all filesystems and it runs no QEMU, so every
//! request ends at the daemon's refusal for what it names (the checks and texts of
//! `cmd/incusd/storage_volumes_bitmap.go` and `instance_bitmap.go`, measured on 7.0.2), and a
//! running virtual machine's bitmaps answer 501 with the reason.

use super::volume_files::volume;
use super::{found_instance, Ctx};
use crate::envelope::{ApiError, ApiResult};
use crate::state::PowerState;
use http::Method;

pub(super) const EXTENSION: &str = "storage_volume_nbd";

fn no_qemu() -> ApiError {
    ApiError::new(501, "fake-incus: no dirty bitmaps (the fake runs no QEMU)")
}

/// `…/volumes/{type}/{name}/bitmaps[/{bitmap}]`.
pub(super) fn volume_bitmaps(
    ctx: &Ctx,
    method: &Method,
    (pool, kind, name): (&str, &str, &str),
    bitmap: Option<&str>,
) -> ApiResult {
    // What the refusal of a stopped instance says, by request.
    let doing = match (bitmap, method.as_str()) {
        (None, "POST") => "Creating bitmaps",
        (None, _) => "Listing bitmaps",
        (Some(_), "DELETE") => "Deleting bitmaps",
        (Some(_), _) => "Listing bitmap",
    };
    let found = volume(
        ctx,
        pool,
        kind,
        name,
        &["custom", "virtual-machine"],
        |kind| format!("Unsupported storage volume type {kind:?}"),
    )?;
    if found.kind == "custom" {
        return Err(ApiError::bad_request("Only block volumes are supported"));
    }
    let snapshot = ctx.app.snapshot();
    let vm = found_instance(&snapshot.state, &found.project, &found.name)?;
    if vm.status == PowerState::Stopped {
        return Err(ApiError::bad_request(format!(
            "{doing} requires the instance to be running"
        )));
    }
    Err(no_qemu())
}

/// `POST /1.0/instances/{name}/bitmaps`: bitmaps across a running virtual machine's disks.
pub(super) fn instance_bitmaps(ctx: &Ctx, name: &str) -> ApiResult {
    let project = ctx.project();
    let snapshot = ctx.app.snapshot();
    let instance = found_instance(&snapshot.state, &project, name)?;
    if instance.status == PowerState::Stopped {
        return Err(ApiError::bad_request(
            "Creating bitmaps requires the instance to be running",
        ));
    }
    if instance.kind != "virtual-machine" {
        return Err(ApiError::bad_request("Only VMs are supported."));
    }
    Err(no_qemu())
}
