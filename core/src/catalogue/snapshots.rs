//! Instance snapshot operations: list, get, create, delete and restore.

use serde_json::{json, Value};

use super::schema::{self, Object};
use super::{Confirmation, Native, Scope, Spec};

pub(super) fn specs() -> Vec<Spec> {
    vec![list(), get(), create(), delete(), restore()]
}

fn instance() -> Value {
    schema::instance_name("Name of the instance the snapshot belongs to.")
}

fn snapshot() -> Value {
    schema::snapshot_name("Snapshot short name (for example snap0), without the instance part; no /, % or + (Incus decodes a snapshot name in a URL twice, so % and + would name another snapshot).")
}

fn list() -> Spec {
    Spec {
        name: "incus_instance_snapshot_list",
        title: "List an instance's snapshots",
        description: concat!(
            "Lists the snapshots of one instance (native snapshot objects: short name, created_at, expires_at, stateful, config, devices, size). An unknown instance gives an empty list, as in Incus.",
            list_returns!(),
            guest_data_note!(),
            project_note!()
        ),
        example: json!({"instance": "web"}),
        resource: "snapshot",
        scope: Scope::Read,
        native: Native::InstanceSnapshotList,
        confirmation: None,
        requires: &["GetInstanceSnapshots"],
        input: Object::new()
            .required("instance", instance())
            .optional("limit", schema::limit()),
        success: schema::list_success(),
    }
}

fn get() -> Spec {
    Spec {
        name: "incus_instance_snapshot_get",
        title: "Get an instance snapshot",
        description: concat!(
            "Reads one snapshot of an instance by its short name.",
            item_returns!(),
            guest_data_note!(),
            project_note!()
        ),
        example: json!({"instance": "web", "snapshot": "snap0"}),
        resource: "snapshot",
        scope: Scope::Read,
        native: Native::InstanceSnapshotGet,
        confirmation: None,
        requires: &["GetInstanceSnapshot"],
        input: Object::new()
            .required("instance", instance())
            .required("snapshot", snapshot()),
        success: schema::item_success(),
    }
}

fn create() -> Spec {
    Spec {
        name: "incus_instance_snapshot_create",
        title: "Snapshot an instance",
        description: concat!(
            "Takes a snapshot of an instance (running or stopped). A new snapshot's name follows Incus 7.0's rule (1 to 64 bytes, starting and ending with an ASCII letter or digit, none of $ ? & + \" ' ` * / %, no white space or control character; invalid_input otherwise, on every line). Without snapshot, Incus names it by the instance's snapshots.pattern (by default snapN, N one more than the largest number of an existing snapN); the instance is read first, and a pattern outside the safe grammar of SECURITY.md is refused with restricted_input. stateful also saves the runtime state where supported. A duplicate name fails inside the operation (status failed).",
            mutation_returns!(),
            project_note!()
        ),
        example: json!({"instance": "web", "snapshot": "before-upgrade"}),
        resource: "snapshot",
        scope: Scope::Write,
        native: Native::InstanceSnapshotCreate,
        confirmation: None,
        requires: &["CreateInstanceSnapshot", "GetOperationWait"],
        input: Object::new()
            .required("instance", instance())
            .optional("snapshot", snapshot())
            .optional(
                "stateful",
                json!({"type": "boolean", "description": "Also save the runtime state."}),
            )
            .optional("wait_seconds", schema::wait_seconds()),
        success: schema::mutation_success(),
    }
}

fn delete() -> Spec {
    Spec {
        name: "incus_instance_snapshot_delete",
        title: "Delete an instance snapshot",
        description: concat!(
            "Deletes one snapshot of an instance. Destructive: confirm must repeat <instance>/<snapshot> exactly (for instance web and snapshot snap0, confirm web/snap0); anything else, such as \"yes\", is refused before any request.",
            mutation_returns!(),
            project_note!()
        ),
        example: json!({"instance": "web", "snapshot": "snap0", "confirm": "web/snap0"}),
        resource: "snapshot",
        scope: Scope::Delete,
        native: Native::InstanceSnapshotDelete,
        confirmation: Some(Confirmation::InstanceSnapshot),
        requires: &["DeleteInstanceSnapshot", "GetOperationWait"],
        input: Object::new()
            .required("instance", instance())
            .required("snapshot", snapshot())
            .optional("wait_seconds", schema::wait_seconds()),
        success: schema::mutation_success(),
    }
}

fn restore() -> Spec {
    Spec {
        name: "incus_instance_snapshot_restore",
        title: "Restore an instance from a snapshot",
        description: concat!(
            "Restores an instance's filesystem, config, devices and profiles from one of its snapshots, replacing the current ones (a running container keeps running). Destructive: confirm must repeat <instance>/<snapshot> exactly (for instance web and snapshot snap0, confirm web/snap0); anything else, such as \"yes\", is refused before any request. A missing snapshot fails inside the operation (status failed). Safety (SECURITY.md): the snapshot is read first and the config, devices and profiles it brings back are judged like incus_instance_create's (restricted_input unless the host allows them; guest-code keys also need incus.exec, scope_missing).",
            mutation_returns!(),
            project_note!()
        ),
        example: json!({"instance": "web", "snapshot": "snap0", "confirm": "web/snap0", "wait_seconds": 60}),
        resource: "snapshot",
        scope: Scope::Delete,
        native: Native::InstanceSnapshotRestore,
        confirmation: Some(Confirmation::InstanceSnapshot),
        requires: &["UpdateInstance", "GetOperationWait"],
        input: Object::new()
            .required("instance", instance())
            .required("snapshot", snapshot())
            .optional(
                "stateful",
                json!({"type": "boolean", "description": "Also restore the saved runtime state."}),
            )
            .optional("wait_seconds", schema::wait_seconds()),
        success: schema::mutation_success(),
    }
}
