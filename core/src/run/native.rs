//! The one place that knows each operation's native call: the typed input it parses into
//! ([`Input`], parsed once by the checks right after the schema) and the dispatch from that input
//! to its client request and result ([`execute`]).
//!
//! Both are exhaustive: a new [`Native`] variant does not compile until it has its line in
//! `typed_inputs!` and its arm in [`execute`].
use serde_json::{json, Value};

use super::call::Call;
use super::input::{self, parse};
use super::output::Success;
use super::results::RunError;
use super::{cancel, exec, inspect, mutate, own_operation, update};
use crate::catalogue::Native;

/// Declares [`Input`], one variant per [`Native`] call holding the typed input it parses into,
/// and [`Input::parse`], which picks the type from the descriptor's [`Native`] call.
macro_rules! typed_inputs {
    ($($native:ident($typed:ty),)*) => {
        /// An operation's validated input in the typed form of its native call.
        #[derive(Debug)]
        pub(crate) enum Input {
            $(
                #[doc = concat!("The input of [`Native::", stringify!($native), "`].")]
                $native($typed),
            )*
        }

        impl Input {
            /// Parses validated input (defaults filled in) into the typed input of `native`.
            pub(crate) fn parse(native: Native, given: &Value) -> Result<Self, RunError> {
                match native {
                    $(Native::$native => parse(given).map(Input::$native),)*
                }
            }
        }
    };
}

typed_inputs! {
    ServerGet(input::Empty),
    InstanceList(input::List),
    InstanceGet(input::Named),
    InstanceCreate(Box<input::Create>),
    InstanceUpdate(Box<input::Update>),
    InstanceDelete(input::Delete),
    InstanceStateGet(input::Named),
    InstanceStateUpdate(input::StateUpdate),
    InstanceExec(Box<input::Exec>),
    InstanceSnapshotList(input::SnapshotList),
    InstanceSnapshotGet(input::Snapshot),
    InstanceSnapshotCreate(input::SnapshotCreate),
    InstanceSnapshotDelete(input::SnapshotDelete),
    InstanceSnapshotRestore(input::SnapshotRestore),
    ImageList(input::List),
    ImageGet(input::Image),
    ImageAliasList(input::List),
    ImageDelete(input::ImageDelete),
    NetworkList(input::List),
    NetworkGet(input::Named),
    ProfileList(input::List),
    ProfileGet(input::Named),
    ProjectList(input::List),
    ProjectGet(input::Named),
    StoragePoolList(input::List),
    StoragePoolGet(input::Pool),
    StorageVolumeList(input::VolumeList),
    StorageVolumeGet(input::Volume),
    OperationList(input::List),
    OperationGet(input::Operation),
    OperationWait(input::OperationWait),
    OperationCancel(input::Operation),
}

/// Sends the operation's native requests and shapes their result.
pub(crate) async fn execute(call: &Call<'_>, input: Input) -> Result<Success, RunError> {
    let client = call.client;
    let project = call.project.as_str();
    match input {
        Input::ServerGet(input::Empty {}) => Ok(Success::Object(json!({"item": client.server()}))),
        Input::InstanceList(input) => {
            inspect::list(client.get_instances(project).await, input.limit)
        }
        Input::InstanceGet(input) => {
            inspect::item_with_etag(client.get_instance(project, &input.name).await)
        }
        Input::InstanceCreate(input) => {
            let body = input.body();
            let send = client.create_instance(project, &body);
            mutate::mutation(call, input.wait_seconds, send).await
        }
        Input::InstanceUpdate(input) => update::update(call, &input).await,
        Input::InstanceDelete(input) => {
            let send = client.delete_instance(project, &input.name);
            mutate::mutation(call, input.wait_seconds, send).await
        }
        Input::InstanceStateGet(input) => {
            inspect::item(client.get_instance_state(project, &input.name).await)
        }
        Input::InstanceStateUpdate(input) => {
            let body = input.body();
            let send = client.update_instance_state(project, &input.name, &body);
            mutate::mutation(call, input.wait_seconds, send).await
        }
        Input::InstanceExec(input) => exec::exec(call, *input).await,
        Input::InstanceSnapshotList(input) => {
            let items = client
                .get_instance_snapshots(project, &input.instance)
                .await;
            inspect::list(items, input.limit)
        }
        Input::InstanceSnapshotGet(input) => {
            let single = client
                .get_instance_snapshot(project, &input.instance, &input.snapshot)
                .await;
            inspect::item(single)
        }
        Input::InstanceSnapshotCreate(input) => {
            let body = input.body();
            let send = client.create_instance_snapshot(project, &input.instance, &body);
            mutate::mutation(call, input.wait_seconds, send).await
        }
        Input::InstanceSnapshotDelete(input) => {
            let send = client.delete_instance_snapshot(project, &input.instance, &input.snapshot);
            mutate::mutation(call, input.wait_seconds, send).await
        }
        Input::InstanceSnapshotRestore(input) => {
            let body = input.body();
            let send = client.update_instance(project, &input.instance, &body, None);
            mutate::mutation(call, input.wait_seconds, send).await
        }
        Input::ImageList(input) => inspect::list(client.get_images(project).await, input.limit),
        Input::ImageGet(input) => {
            inspect::item(client.get_image(project, &input.fingerprint).await)
        }
        Input::ImageAliasList(input) => {
            inspect::list(client.get_image_aliases(project).await, input.limit)
        }
        Input::ImageDelete(input) => {
            let send = client.delete_image(project, &input.fingerprint);
            mutate::mutation(call, input.wait_seconds, send).await
        }
        Input::NetworkList(input) => inspect::list(client.get_networks(project).await, input.limit),
        Input::NetworkGet(input) => inspect::item(client.get_network(project, &input.name).await),
        Input::ProfileList(input) => inspect::list(client.get_profiles(project).await, input.limit),
        Input::ProfileGet(input) => inspect::item(client.get_profile(project, &input.name).await),
        Input::ProjectList(input) => inspect::list(client.get_projects(project).await, input.limit),
        Input::ProjectGet(input) => inspect::item(client.get_project(project, &input.name).await),
        Input::StoragePoolList(input) => {
            inspect::list(client.get_storage_pools(project).await, input.limit)
        }
        Input::StoragePoolGet(input) => {
            inspect::item(client.get_storage_pool(project, &input.pool).await)
        }
        Input::StorageVolumeList(input) => {
            let items = client.get_storage_pool_volumes(project, &input.pool).await;
            inspect::list(items, input.limit)
        }
        Input::StorageVolumeGet(input) => {
            let single = client
                .get_storage_pool_volume(project, &input.pool, &input.volume_type, &input.name)
                .await;
            inspect::item(single)
        }
        Input::OperationList(input) => {
            inspect::list(client.get_operations(project).await, input.limit)
        }
        Input::OperationGet(input) => {
            own_operation::require(call, &input.operation_id).await?;
            inspect::item(client.get_operation(project, &input.operation_id).await)
        }
        Input::OperationWait(input) => {
            own_operation::require(call, &input.operation_id).await?;
            mutate::wait(call, input).await
        }
        Input::OperationCancel(input) => {
            own_operation::require(call, &input.operation_id).await?;
            cancel::cancel(call, input).await
        }
    }
}
