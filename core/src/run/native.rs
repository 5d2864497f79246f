//! The one dispatch from an operation's [`Native`] call to its client request and result.
//!
//! The `match` is exhaustive: a new [`Native`] variant does not compile until it has its arm here,
//! and each arm parses the validated input into the typed input of its call.
use super::call::Call;
use super::input::{self, parse};
use super::output::Success;
use super::results::RunError;
use super::{cancel, exec, inspect, mutate, own_operation, update};
use crate::catalogue::Native;
use serde_json::json;

/// Sends the operation's native requests and shapes their result.
pub(crate) async fn execute(call: &Call<'_>) -> Result<Success, RunError> {
    let client = call.client;
    let project = call.project.as_str();
    let given = &call.input;
    match call.descriptor.native() {
        Native::ServerGet => {
            parse::<input::Empty>(given)?;
            Ok(Success::Object(json!({"item": client.server()})))
        }
        Native::InstanceList => {
            let input: input::List = parse(given)?;
            inspect::list(client.get_instances(project).await, input.limit)
        }
        Native::InstanceGet => {
            let input: input::Named = parse(given)?;
            inspect::item_with_etag(client.get_instance(project, &input.name).await)
        }
        Native::InstanceCreate => {
            let input: input::Create = parse(given)?;
            let body = input.body(call.remote.as_ref());
            let send = client.create_instance(project, &body);
            mutate::mutation(call, input.wait_seconds, send).await
        }
        Native::InstanceUpdate => {
            let input: input::Update = parse(given)?;
            update::update(call, &input).await
        }
        Native::InstanceDelete => {
            let input: input::Delete = parse(given)?;
            let send = client.delete_instance(project, &input.name);
            mutate::mutation(call, input.wait_seconds, send).await
        }
        Native::InstanceStateGet => {
            let input: input::Named = parse(given)?;
            inspect::item(client.get_instance_state(project, &input.name).await)
        }
        Native::InstanceStateUpdate => {
            let input: input::StateUpdate = parse(given)?;
            let body = input.body();
            let send = client.update_instance_state(project, &input.name, &body);
            mutate::mutation(call, input.wait_seconds, send).await
        }
        Native::InstanceExec => exec::exec(call, parse(given)?).await,
        Native::InstanceSnapshotList => {
            let input: input::SnapshotList = parse(given)?;
            let items = client
                .get_instance_snapshots(project, &input.instance)
                .await;
            inspect::list(items, input.limit)
        }
        Native::InstanceSnapshotGet => {
            let input: input::Snapshot = parse(given)?;
            let single = client
                .get_instance_snapshot(project, &input.instance, &input.snapshot)
                .await;
            inspect::item(single)
        }
        Native::InstanceSnapshotCreate => {
            let input: input::SnapshotCreate = parse(given)?;
            let body = input.body();
            let send = client.create_instance_snapshot(project, &input.instance, &body);
            mutate::mutation(call, input.wait_seconds, send).await
        }
        Native::InstanceSnapshotDelete => {
            let input: input::SnapshotDelete = parse(given)?;
            let send = client.delete_instance_snapshot(project, &input.instance, &input.snapshot);
            mutate::mutation(call, input.wait_seconds, send).await
        }
        Native::InstanceSnapshotRestore => {
            let input: input::SnapshotRestore = parse(given)?;
            let body = input.body();
            let send = client.update_instance(project, &input.instance, &body, None);
            mutate::mutation(call, input.wait_seconds, send).await
        }
        Native::ImageList => {
            let input: input::List = parse(given)?;
            inspect::list(client.get_images(project).await, input.limit)
        }
        Native::ImageGet => {
            let input: input::Image = parse(given)?;
            inspect::item(client.get_image(project, &input.fingerprint).await)
        }
        Native::ImageAliasList => {
            let input: input::List = parse(given)?;
            inspect::list(client.get_image_aliases(project).await, input.limit)
        }
        Native::ImageDelete => {
            let input: input::ImageDelete = parse(given)?;
            let send = client.delete_image(project, &input.fingerprint);
            mutate::mutation(call, input.wait_seconds, send).await
        }
        Native::NetworkList => {
            let input: input::List = parse(given)?;
            inspect::list(client.get_networks(project).await, input.limit)
        }
        Native::NetworkGet => {
            let input: input::Named = parse(given)?;
            inspect::item(client.get_network(project, &input.name).await)
        }
        Native::ProfileList => {
            let input: input::List = parse(given)?;
            inspect::list(client.get_profiles(project).await, input.limit)
        }
        Native::ProfileGet => {
            let input: input::Named = parse(given)?;
            inspect::item(client.get_profile(project, &input.name).await)
        }
        Native::ProjectList => {
            let input: input::List = parse(given)?;
            inspect::list(client.get_projects(project).await, input.limit)
        }
        Native::ProjectGet => {
            let input: input::Named = parse(given)?;
            inspect::item(client.get_project(project, &input.name).await)
        }
        Native::StoragePoolList => {
            let input: input::List = parse(given)?;
            inspect::list(client.get_storage_pools(project).await, input.limit)
        }
        Native::StoragePoolGet => {
            let input: input::Pool = parse(given)?;
            inspect::item(client.get_storage_pool(project, &input.pool).await)
        }
        Native::StorageVolumeList => {
            let input: input::VolumeList = parse(given)?;
            let items = client.get_storage_pool_volumes(project, &input.pool).await;
            inspect::list(items, input.limit)
        }
        Native::StorageVolumeGet => {
            let input: input::Volume = parse(given)?;
            let single = client
                .get_storage_pool_volume(project, &input.pool, &input.volume_type, &input.name)
                .await;
            inspect::item(single)
        }
        Native::OperationList => {
            let input: input::List = parse(given)?;
            inspect::list(client.get_operations(project).await, input.limit)
        }
        Native::OperationGet => {
            let input: input::Operation = parse(given)?;
            own_operation::require(call, &input.operation_id).await?;
            inspect::item(client.get_operation(project, &input.operation_id).await)
        }
        Native::OperationWait => {
            let input: input::OperationWait = parse(given)?;
            own_operation::require(call, &input.operation_id).await?;
            mutate::wait(call, input).await
        }
        Native::OperationCancel => {
            let input: input::Operation = parse(given)?;
            own_operation::require(call, &input.operation_id).await?;
            cancel::cancel(call, input).await
        }
    }
}
