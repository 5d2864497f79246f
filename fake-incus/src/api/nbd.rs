//! NBD exports (Incus 7.0): `GET …/volumes/{type}/{name}/nbd` (API extension
//! `storage_volume_nbd`) and `GET /1.0/instances/{name}/nbd` (`instance_nbd`), both with
//! `Upgrade: nbd`, checked first. What the daemon refuses, the fake refuses with its text; what
//! the daemon would export, the fake answers as the real 7.0.2 daemon of Debian's package does on
//! a host without QEMU's tools (its `qemu-nbd` needs `qemu-img`): the fake has no block device
//! to export.

use super::volume_files::volume;
use super::{found_instance, Ctx};
use crate::envelope::{ApiError, ApiResult};
use bytes::Bytes;
use http::{header, Request};

pub(super) const VOLUME_EXTENSION: &str = "storage_volume_nbd";
pub(super) const INSTANCE_EXTENSION: &str = "instance_nbd";

/// The daemon compares the first `Upgrade` value with `nbd` exactly.
fn wants_nbd(req: &Request<Bytes>) -> Result<(), ApiError> {
    match req.headers().get(header::UPGRADE) {
        Some(value) if value.as_bytes() == b"nbd" => Ok(()),
        _ => Err(ApiError::bad_request("Missing or invalid upgrade header")),
    }
}

/// `GET …/volumes/{type}/{name}/nbd`: a custom or virtual-machine volume.
pub(super) fn volume_nbd(
    ctx: &Ctx,
    (pool, kind, name): (&str, &str, &str),
    req: &Request<Bytes>,
) -> ApiResult {
    wants_nbd(req)?;
    let found = volume(
        ctx,
        pool,
        kind,
        name,
        &["custom", "virtual-machine"],
        |kind| format!("Unsupported storage volume type {kind:?}"),
    )?;
    // The volume's disk image where the daemon keeps it (`project_name`, also in `default`, for
    // a custom volume; an instance's own name in `default`).
    let (dir, volume) = if found.kind == "custom" {
        ("custom", format!("{}_{}", found.project, found.name))
    } else if found.project == "default" {
        ("virtual-machines", found.name.clone())
    } else {
        (
            "virtual-machines",
            format!("{}_{}", found.project, found.name),
        )
    };
    Err(ApiError::internal(format!(
        "qemu-nbd failed: Failed when running qemu-nbd: Failed to run: qemu-img info -U --output=json /var/lib/incus/storage-pools/{}/{dir}/{volume}/root.img: exec: \"qemu-img\": executable file not found in $PATH",
        found.pool
    )))
}

/// `GET /1.0/instances/{name}/nbd`: every disk of a virtual machine.
pub(super) fn instance_nbd(ctx: &Ctx, name: &str, req: &Request<Bytes>) -> ApiResult {
    wants_nbd(req)?;
    let project = ctx.project();
    let snapshot = ctx.app.snapshot();
    let instance = found_instance(&snapshot.state, &project, name)?;
    if instance.kind != "virtual-machine" {
        return Err(ApiError::bad_request(
            "NBD export of all disks is only supported on virtual machines",
        ));
    }
    Err(ApiError::new(
        501,
        "fake-incus: a virtual machine's disks have no NBD export (the fake runs no QEMU)",
    ))
}
