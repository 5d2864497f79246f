//! `POST /1.0/instances/{name}/rebuild` (`incus rebuild`): a stopped instance gets a new root file
//! system, from an image (its files, `image.*` keys and `volatile.base_image`) or empty (`source.type
//! none`, without them), keeping its other config, devices, profiles and snapshots, with
//! `volatile.apply_template: create` as on the daemon.

use super::{parse_body, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::operations::OpSpec;
use crate::state::{PowerState, State};
use serde::Deserialize;
use std::sync::Arc;

#[derive(Deserialize, Default)]
#[serde(default)]
struct RebuildBody {
    source: Source,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Source {
    #[serde(rename = "type", deserialize_with = "super::null_default")]
    kind: String,
    #[serde(deserialize_with = "super::null_default")]
    alias: String,
    #[serde(deserialize_with = "super::null_default")]
    fingerprint: String,
}

pub(super) fn post(ctx: &Ctx, name: &str, body: &[u8]) -> ApiResult {
    let project = ctx.project();
    let instance_url = {
        let state = ctx.app.state();
        let instance = state
            .instance(&project, name)
            .ok_or_else(|| ApiError::new(404, "Failed loading instance: Instance not found"))?;
        if instance.status != PowerState::Stopped {
            return Err(ApiError::bad_request(
                "Instance must be stopped to be rebuilt",
            ));
        }
        instance.url()
    };
    let req: RebuildBody = parse_body(body)?;
    let empty = req.source.kind == "none";
    if !empty && req.source.alias.is_empty() && req.source.fingerprint.is_empty() {
        return Err(ApiError::internal(
            "Must specify one of alias, fingerprint or properties for init from image",
        ));
    }
    let spec = OpSpec::task(&project, "Rebuilding instance", instance_url);
    let name = name.to_string();
    let app = Arc::clone(&ctx.app);
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            let image =
                if empty {
                    None
                } else {
                    let found = super::instances::find_image(
                        state,
                        &project,
                        &req.source.alias,
                        &req.source.fingerprint,
                    );
                    Some(found.ok_or_else(|| {
                        ApiError::internal("Image not provided for instance rebuild")
                    })?)
                };
            let instance = super::found_instance_mut(state, &project, &name)?;
            instance
                .config
                .retain(|k, _| !k.starts_with("image.") && k != "volatile.base_image");
            instance
                .config
                .insert("volatile.apply_template".into(), "create".into());
            instance.metadata = image.as_ref().map(crate::state::Image::metadata_json);
            instance.templates.clear();
            if let Some(image) = &image {
                for (key, value) in &image.properties {
                    instance
                        .config
                        .insert(format!("image.{key}"), value.clone());
                }
                instance
                    .config
                    .insert("volatile.base_image".into(), image.fingerprint.clone());
            }
            // Only the instance's own tree changes: its snapshots keep theirs.
            let mut files = app.files();
            let rootfs = match &image {
                Some(image) => files.rootfs(Some(&image.fingerprint), image.executables.as_deref()),
                None => Some(crate::state::files::Tree::empty()),
            };
            files.set_tree(&project, &name, None, rootfs);
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}
