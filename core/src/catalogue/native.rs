//! The native behaviour of each operation, as a closed enum held by its descriptor.
//!
//! Every catalogue entry names exactly one [`Native`] call. `run/native.rs` names the typed input
//! of each and dispatches on it in exhaustive matches, so adding an operation is a catalogue entry
//! (with its `Native` variant), a client method and its lines in `run/native.rs`, and the compiler
//! refuses a variant without them.

use super::OperationKind;

/// The native call of one operation (crate-internal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Native {
    /// `GET /1.0` (the discovered server object).
    ServerGet,
    /// `GET /1.0/instances?recursion=1`.
    InstanceList,
    /// `GET /1.0/instances/{name}`, with its ETag.
    InstanceGet,
    /// `POST /1.0/instances`, then a bounded wait.
    InstanceCreate,
    /// One conditional `PATCH /1.0/instances/{name}`.
    InstanceUpdate,
    /// `DELETE /1.0/instances/{name}`, then a bounded wait.
    InstanceDelete,
    /// `GET /1.0/instances/{name}/state`.
    InstanceStateGet,
    /// `PUT /1.0/instances/{name}/state`, then a bounded wait.
    InstanceStateUpdate,
    /// `POST /1.0/instances/{name}/exec` and its websockets.
    InstanceExec,
    /// `GET /1.0/instances/{instance}/snapshots?recursion=1`.
    InstanceSnapshotList,
    /// `GET /1.0/instances/{instance}/snapshots/{snapshot}`.
    InstanceSnapshotGet,
    /// `POST /1.0/instances/{instance}/snapshots`, then a bounded wait.
    InstanceSnapshotCreate,
    /// `DELETE /1.0/instances/{instance}/snapshots/{snapshot}`, then a bounded wait.
    InstanceSnapshotDelete,
    /// `PUT /1.0/instances/{instance}` with `restore`, then a bounded wait.
    InstanceSnapshotRestore,
    /// `GET /1.0/images?recursion=1`.
    ImageList,
    /// `GET /1.0/images/{fingerprint}`.
    ImageGet,
    /// `GET /1.0/images/aliases?recursion=1`.
    ImageAliasList,
    /// `DELETE /1.0/images/{fingerprint}`, then a bounded wait.
    ImageDelete,
    /// `GET /1.0/networks?recursion=1`.
    NetworkList,
    /// `GET /1.0/networks/{name}`.
    NetworkGet,
    /// `GET /1.0/profiles?recursion=1`.
    ProfileList,
    /// `GET /1.0/profiles/{name}`.
    ProfileGet,
    /// `GET /1.0/projects?recursion=1`.
    ProjectList,
    /// `GET /1.0/projects/{name}`.
    ProjectGet,
    /// `GET /1.0/storage-pools?recursion=1`.
    StoragePoolList,
    /// `GET /1.0/storage-pools/{pool}`.
    StoragePoolGet,
    /// `GET /1.0/storage-pools/{pool}/volumes?recursion=1`.
    StorageVolumeList,
    /// `GET /1.0/storage-pools/{pool}/volumes/{type}/{name}`.
    StorageVolumeGet,
    /// `GET /1.0/operations?recursion=1`, flattened.
    OperationList,
    /// `GET /1.0/operations/{id}`.
    OperationGet,
    /// `GET /1.0/operations/{id}/wait`, bounded.
    OperationWait,
    /// `GET /1.0/operations/{id}`, then at most one `DELETE`.
    OperationCancel,
}

impl Native {
    /// How the run pipeline shapes this call's result (and so which bounds apply).
    pub(crate) const fn kind(self) -> OperationKind {
        match self {
            Native::InstanceList
            | Native::InstanceSnapshotList
            | Native::ImageList
            | Native::ImageAliasList
            | Native::NetworkList
            | Native::ProfileList
            | Native::ProjectList
            | Native::StoragePoolList
            | Native::StorageVolumeList
            | Native::OperationList => OperationKind::List,
            Native::ServerGet
            | Native::InstanceGet
            | Native::InstanceStateGet
            | Native::InstanceSnapshotGet
            | Native::ImageGet
            | Native::NetworkGet
            | Native::ProfileGet
            | Native::ProjectGet
            | Native::StoragePoolGet
            | Native::StorageVolumeGet
            | Native::OperationGet => OperationKind::Item,
            Native::InstanceCreate
            | Native::InstanceDelete
            | Native::InstanceStateUpdate
            | Native::InstanceSnapshotCreate
            | Native::InstanceSnapshotDelete
            | Native::InstanceSnapshotRestore
            | Native::ImageDelete => OperationKind::Mutation,
            Native::InstanceUpdate => OperationKind::Update,
            Native::InstanceExec => OperationKind::Exec,
            Native::OperationWait => OperationKind::Wait,
            Native::OperationCancel => OperationKind::Cancel,
        }
    }
}
