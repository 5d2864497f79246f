//! `POST …/volumes/{type}/{name}/rebuild` (Incus 7.0, API extension `storage_volumes_rebuild`):
//! a custom volume made anew, empty, with the same config. The daemon's checks in its order
//! (`cmd/incusd/storage_volumes_rebuild.go`): the type name, custom only, the body, the pool, the
//! volume; then a `Rebuilding storage volume` operation that fails while the volume has
//! snapshots or a running instance attaches it, and otherwise empties its files.

use super::volume_files::volume;
use super::Ctx;
use crate::envelope::{self, ApiError, ApiResult};
use crate::operations::OpSpec;
use crate::state::{url, PowerState, State};
use std::collections::BTreeMap;
use std::sync::Arc;

pub(super) const EXTENSION: &str = "storage_volumes_rebuild";

pub(super) fn rebuild(ctx: &Ctx, (pool, kind, name): (&str, &str, &str), body: &[u8]) -> ApiResult {
    if !["container", "virtual-machine", "image", "custom"].contains(&kind) {
        return Err(ApiError::bad_request("Invalid storage volume type name"));
    }
    if kind != "custom" {
        return Err(ApiError::bad_request(format!(
            "Storage volumes of type {kind:?} cannot be rebuilt"
        )));
    }
    // `api.StorageVolumeRebuildPost`; an empty body is no request to read.
    if !body.iter().all(u8::is_ascii_whitespace) {
        let sent: serde_json::Value = super::parse_body(body)?;
        if !sent.is_object() && !sent.is_null() {
            return Err(ApiError::bad_request(
                "json: cannot unmarshal array into Go value of type api.StorageVolumeRebuildPost",
            ));
        }
    }
    let found = volume(ctx, pool, kind, name, &["custom"], |_| String::new())?;
    let path = format!("/1.0/storage-pools/{pool}/volumes/custom/{name}");
    let spec = OpSpec {
        resources: BTreeMap::from([(
            "storage_volumes".to_string(),
            vec![url(&path, &ctx.project())],
        )]),
        ..OpSpec::task(&ctx.project(), "Rebuilding storage volume", String::new())
    };
    let app = Arc::clone(&ctx.app);
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            let volume = state
                .custom_volume(&found.pool, &found.project, &found.name)
                .cloned()
                .ok_or_else(|| ApiError::new(404, "Storage pool volume not found"))?;
            if super::volume_snapshots::snapshots_of(state, &volume)
                .next()
                .is_some()
            {
                return Err(ApiError::internal(
                    "Cannot rebuild custom volume with snapshots",
                ));
            }
            let running = state
                .volume_instances(&volume)
                .any(|i| i.status != PowerState::Stopped);
            if running {
                return Err(ApiError::internal(
                    "Cannot rebuild custom volume used by running instances",
                ));
            }
            app.files()
                .remove_volume(&volume.project, &volume.pool, &volume.name);
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}
