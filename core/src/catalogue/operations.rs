//! Incus operation (background task) operations: list, get, wait and cancel.

use serde_json::json;

use super::schema::{self, Object};
use super::{Native, Scope, Spec};

pub(super) fn specs() -> Vec<Spec> {
    vec![list(), get(), wait(), cancel()]
}

fn list() -> Spec {
    Spec {
        name: "incus_operation_list",
        title: "List Incus operations",
        description: concat!(
            "Lists the background operations of a project, running and recently finished (Incus keeps finished ones for about 5 seconds), flattened from the native status groups in native order (native operation objects: id, class, description, status, resources, metadata, may_cancel, err).",
            list_returns!(),
            " Only the project's operations are listed (as Incus lists them for project; its server-wide tasks, which belong to no project, included).",
            operation_secrets_note!(),
            project_note!()
        ),
        example: json!({"limit": 25}),
        resource: "operation",
        scope: Scope::Read,
        native: Native::OperationList,
        confirmation: None,
        requires: &["GetOperations"],
        input: Object::new().optional("limit", schema::limit()),
        success: schema::list_success(),
    }
}

fn get() -> Spec {
    Spec {
        name: "incus_operation_get",
        title: "Get an Incus operation",
        description: concat!(
            "Reads one background operation by ID (status, status_code, err, metadata such as an exec's return code). Finished operations disappear after about 5 seconds (native error, http_status 404).",
            item_returns!(),
            own_operation_note!(),
            operation_secrets_note!()
        ),
        example: json!({"operation_id": "f4031b3c-f39e-4a3a-aba8-81ec55003bd1"}),
        resource: "operation",
        scope: Scope::Read,
        native: Native::OperationGet,
        confirmation: None,
        requires: &["GetOperation"],
        input: Object::new().required("operation_id", schema::operation_id()),
        success: schema::item_success(),
    }
}

fn wait() -> Spec {
    Spec {
        name: "incus_operation_wait",
        title: "Wait for an Incus operation to finish",
        description: concat!(
            "Waits for an existing background operation, for example one a mutation reported as running.",
            mutation_returns!(),
            own_operation_note!(),
            operation_secrets_note!()
        ),
        example: json!({"operation_id": "f4031b3c-f39e-4a3a-aba8-81ec55003bd1", "wait_seconds": 60}),
        resource: "operation",
        scope: Scope::Read,
        native: Native::OperationWait,
        confirmation: None,
        requires: &["GetOperationWait"],
        input: Object::new()
            .required("operation_id", schema::operation_id())
            .optional("wait_seconds", schema::wait_seconds()),
        success: schema::mutation_success(),
    }
}

fn cancel() -> Spec {
    Spec {
        name: "incus_operation_cancel",
        title: "Request cancellation of an Incus operation",
        description: concat!(
            "Reads the operation first, then sends at most one native cancel request. Returns {\"status\", \"operation_id\", \"operation\"} with operation = the object read first: already_final (it had finished; nothing sent), unsupported (may_cancel is false; nothing sent), requested (one cancel was accepted) or uncertain (the cancel may have been accepted but no response was decoded; \"reason\" then says why). The operation's own completion stays authoritative: check it with incus_operation_get.",
            " Most Incus operations (create, delete, state changes, snapshots, exec) are not cancellable.",
            own_operation_note!(),
            operation_secrets_note!()
        ),
        example: json!({"operation_id": "f4031b3c-f39e-4a3a-aba8-81ec55003bd1"}),
        resource: "operation",
        scope: Scope::Write,
        native: Native::OperationCancel,
        confirmation: None,
        requires: &["GetOperation", "DeleteOperation"],
        input: Object::new().required("operation_id", schema::operation_id()),
        success: schema::cancel_success(),
    }
}
