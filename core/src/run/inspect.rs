//! Inspection: native lists and single objects, passed through unchanged.
//!
//! Lists keep native order, report the native total as `count`, and keep the first `limit` items
//! (100 by default, at most 500); the output bound may drop more from the end.
//! `incus_operation_list` is the native status-keyed map flattened in native order (by the client).
use serde_json::json;

use super::output::{Listing, Success};
use super::pipeline::Call;
use super::results::{read_error, RunError};

/// A list operation: `{"items", "count", "truncated"}`.
pub(crate) async fn list(call: &Call<'_>) -> Result<Success, RunError> {
    let client = call.client;
    let project = call.project.as_str();
    let items = match call.descriptor.name() {
        "incus_instance_list" => client.get_instances(project).await,
        "incus_instance_snapshot_list" => {
            client
                .get_instance_snapshots(project, call.text("instance"))
                .await
        }
        "incus_image_list" => client.get_images(project).await,
        "incus_image_alias_list" => client.get_image_aliases(project).await,
        "incus_network_list" => client.get_networks(project).await,
        "incus_profile_list" => client.get_profiles(project).await,
        "incus_project_list" => client.get_projects(project).await,
        "incus_storage_pool_list" => client.get_storage_pools(project).await,
        "incus_storage_volume_list" => {
            client
                .get_storage_pool_volumes(project, call.text("pool"))
                .await
        }
        "incus_operation_list" => client.get_operations(project).await,
        other => return Err(unknown_executor(other)),
    }
    .map_err(read_error)?;
    let limit = usize::try_from(call.integer("limit")).unwrap_or(usize::MAX);
    let measured = items
        .into_iter()
        .map(|item| (item.value, item.json_len))
        .collect();
    Ok(Success::List(Listing::first(measured, limit)))
}

/// A single-object operation: `{"item"}`, plus `etag` for `incus_instance_get`.
pub(crate) async fn item(call: &Call<'_>) -> Result<Success, RunError> {
    let client = call.client;
    let project = call.project.as_str();
    let single = match call.descriptor.name() {
        "incus_server_get" => return Ok(Success::Object(json!({"item": client.server()}))),
        "incus_instance_get" => {
            let single = client
                .get_instance(project, call.text("name"))
                .await
                .map_err(read_error)?;
            return Ok(Success::Object(
                json!({"item": single.value, "etag": single.etag}),
            ));
        }
        "incus_instance_state_get" => client.get_instance_state(project, call.text("name")).await,
        "incus_instance_snapshot_get" => {
            client
                .get_instance_snapshot(project, call.text("instance"), call.text("snapshot"))
                .await
        }
        "incus_image_get" => client.get_image(project, call.text("fingerprint")).await,
        "incus_network_get" => client.get_network(project, call.text("name")).await,
        "incus_profile_get" => client.get_profile(project, call.text("name")).await,
        "incus_project_get" => client.get_project(project, call.text("name")).await,
        "incus_storage_pool_get" => client.get_storage_pool(project, call.text("pool")).await,
        "incus_storage_volume_get" => {
            client
                .get_storage_pool_volume(
                    project,
                    call.text("pool"),
                    call.text("type"),
                    call.text("name"),
                )
                .await
        }
        "incus_operation_get" => {
            client
                .get_operation(project, call.text("operation_id"))
                .await
        }
        other => return Err(unknown_executor(other)),
    }
    .map_err(read_error)?;
    Ok(Success::Object(json!({ "item": single.value })))
}

/// An operation of a kind whose executor does not know it (a catalogue/run mismatch).
pub(crate) fn unknown_executor(name: &str) -> RunError {
    RunError::UnknownOperation(format!("{name} has no executor"))
}
