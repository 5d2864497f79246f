//! The spec's catalogue table, written down independently of the core's catalogue: the
//! conformance suites check the implementation against the specification, not against itself.

use serde_json::{json, Value};

/// Which input byte bound applies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum InputClass {
    /// 16 KiB.
    Read,
    /// 64 KiB.
    Mutation,
    /// 1 MiB.
    Exec,
}

impl InputClass {
    /// The bound in bytes of serialized input.
    pub(crate) fn bound(self) -> usize {
        match self {
            InputClass::Read => 16 * 1024,
            InputClass::Mutation => 64 * 1024,
            InputClass::Exec => 1024 * 1024,
        }
    }
}

/// What `confirm` must repeat.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Confirm {
    /// Not destructive.
    None,
    /// The instance name.
    Name,
    /// `<instance>/<snapshot>`.
    InstanceSnapshot,
    /// The full 64-character fingerprint.
    Fingerprint,
}

/// One row of the spec's catalogue table.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SpecOperation {
    pub(crate) name: &'static str,
    pub(crate) scope: &'static str,
    pub(crate) confirm: Confirm,
    pub(crate) class: InputClass,
    /// The table's client evidence column: native methods, `helper:...`, `stream:...`.
    pub(crate) evidence: &'static [&'static str],
}

impl SpecOperation {
    /// The operation name without the `incus_` prefix, for test names.
    pub(crate) fn short(&self) -> &'static str {
        self.name.strip_prefix("incus_").unwrap_or(self.name)
    }

    /// The scope's last segment (`read`, `write`, `exec`, `delete`).
    pub(crate) fn scope_word(&self) -> &'static str {
        self.scope.strip_prefix("incus.").unwrap_or(self.scope)
    }

    /// A small input that passes the input schema (without `confirm`).
    pub(crate) fn minimal_input(&self) -> Value {
        minimal_input(self.name)
    }

    /// The exact resource `confirm` must repeat for [`Self::minimal_input`].
    pub(crate) fn exact_confirm(&self) -> Option<String> {
        match self.confirm {
            Confirm::None => None,
            Confirm::Name => Some("web".into()),
            Confirm::InstanceSnapshot => Some("web/snap0".into()),
            Confirm::Fingerprint => Some(FINGERPRINT.into()),
        }
    }

    /// [`Self::minimal_input`] with the exact `confirm`, for destructive operations.
    pub(crate) fn confirmed_input(&self) -> Value {
        let mut input = self.minimal_input();
        if let (Some(confirm), Some(map)) = (self.exact_confirm(), input.as_object_mut()) {
            map.insert("confirm".into(), Value::String(confirm));
        }
        input
    }
}

/// A well-formed fingerprint (64 lowercase hex characters) that names no image by default.
pub(crate) const FINGERPRINT: &str =
    "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

const fn op(
    name: &'static str,
    scope: &'static str,
    confirm: Confirm,
    class: InputClass,
    evidence: &'static [&'static str],
) -> SpecOperation {
    SpecOperation {
        name,
        scope,
        confirm,
        class,
        evidence,
    }
}

use Confirm as C;
use InputClass as I;

/// The 32 exported operations, in the spec's order.
pub(crate) const OPERATIONS: &[SpecOperation] = &[
    op(
        "incus_image_alias_list",
        "incus.read",
        C::None,
        I::Read,
        &["GetImageAliases"],
    ),
    op(
        "incus_image_delete",
        "incus.delete",
        C::Fingerprint,
        I::Mutation,
        &["DeleteImage", "GetOperationWait"],
    ),
    op(
        "incus_image_get",
        "incus.read",
        C::None,
        I::Read,
        &["GetImage"],
    ),
    op(
        "incus_image_list",
        "incus.read",
        C::None,
        I::Read,
        &["GetImages"],
    ),
    op(
        "incus_instance_create",
        "incus.write",
        C::None,
        I::Mutation,
        &["CreateInstance", "GetOperationWait"],
    ),
    op(
        "incus_instance_delete",
        "incus.delete",
        C::Name,
        I::Mutation,
        &["DeleteInstance", "GetOperationWait"],
    ),
    op(
        "incus_instance_exec",
        "incus.exec",
        C::None,
        I::Exec,
        &["ExecInstance", "stream:S01"],
    ),
    op(
        "incus_instance_get",
        "incus.read",
        C::None,
        I::Read,
        &["GetInstance"],
    ),
    op(
        "incus_instance_list",
        "incus.read",
        C::None,
        I::Read,
        &["GetInstances"],
    ),
    op(
        "incus_instance_snapshot_create",
        "incus.write",
        C::None,
        I::Mutation,
        &["CreateInstanceSnapshot", "GetOperationWait"],
    ),
    op(
        "incus_instance_snapshot_delete",
        "incus.delete",
        C::InstanceSnapshot,
        I::Mutation,
        &["DeleteInstanceSnapshot", "GetOperationWait"],
    ),
    op(
        "incus_instance_snapshot_get",
        "incus.read",
        C::None,
        I::Read,
        &["GetInstanceSnapshot"],
    ),
    op(
        "incus_instance_snapshot_list",
        "incus.read",
        C::None,
        I::Read,
        &["GetInstanceSnapshots"],
    ),
    op(
        "incus_instance_snapshot_restore",
        "incus.delete",
        C::InstanceSnapshot,
        I::Mutation,
        &["UpdateInstance", "GetOperationWait"],
    ),
    op(
        "incus_instance_state_get",
        "incus.read",
        C::None,
        I::Read,
        &["GetInstanceState"],
    ),
    op(
        "incus_instance_state_update",
        "incus.write",
        C::None,
        I::Mutation,
        &["UpdateInstanceState", "GetOperationWait"],
    ),
    op(
        "incus_instance_update",
        "incus.write",
        C::None,
        I::Mutation,
        &["PatchInstance", "GetInstance"],
    ),
    op(
        "incus_network_get",
        "incus.read",
        C::None,
        I::Read,
        &["GetNetwork"],
    ),
    op(
        "incus_network_list",
        "incus.read",
        C::None,
        I::Read,
        &["GetNetworks"],
    ),
    op(
        "incus_operation_cancel",
        "incus.write",
        C::None,
        I::Mutation,
        &["GetOperation", "DeleteOperation"],
    ),
    op(
        "incus_operation_get",
        "incus.read",
        C::None,
        I::Read,
        &["GetOperation"],
    ),
    op(
        "incus_operation_list",
        "incus.read",
        C::None,
        I::Read,
        &["GetOperations"],
    ),
    op(
        "incus_operation_wait",
        "incus.read",
        C::None,
        I::Read,
        &["GetOperationWait"],
    ),
    op(
        "incus_profile_get",
        "incus.read",
        C::None,
        I::Read,
        &["GetProfile"],
    ),
    op(
        "incus_profile_list",
        "incus.read",
        C::None,
        I::Read,
        &["GetProfiles"],
    ),
    op(
        "incus_project_get",
        "incus.read",
        C::None,
        I::Read,
        &["GetProject"],
    ),
    op(
        "incus_project_list",
        "incus.read",
        C::None,
        I::Read,
        &["GetProjects"],
    ),
    op(
        "incus_server_get",
        "incus.read",
        C::None,
        I::Read,
        &["helper:connect"],
    ),
    op(
        "incus_storage_pool_get",
        "incus.read",
        C::None,
        I::Read,
        &["GetStoragePool"],
    ),
    op(
        "incus_storage_pool_list",
        "incus.read",
        C::None,
        I::Read,
        &["GetStoragePools"],
    ),
    op(
        "incus_storage_volume_get",
        "incus.read",
        C::None,
        I::Read,
        &["GetStoragePoolVolume"],
    ),
    op(
        "incus_storage_volume_list",
        "incus.read",
        C::None,
        I::Read,
        &["GetStoragePoolVolumes"],
    ),
];

/// The closed set of error kinds (contract A), in the spec's order. The other suites read the
/// core's `ErrorKind::ALL`, which one catalogue trial pins to this list.
pub(crate) const ERROR_KINDS: &[&str] = &[
    "unknown_operation",
    "scope_missing",
    "invalid_input",
    "input_too_large",
    "confirmation_required",
    "confirmation_mismatch",
    "restricted_input",
    "binding_denied",
    "unauthorized",
    "unknown_remote",
    "discovery_failed",
    "native",
    "transport",
    "timeout",
    "output_limit",
    "invalid_response",
];

/// Names an input may never carry at any depth: the daemon's socket or URL, credentials, the
/// owner, a host path. The host binds those; the agent cannot.
pub(crate) const FORBIDDEN_INPUT_NAMES: &[&str] = &[
    "socket",
    "url",
    "endpoint",
    "server",
    "certificate",
    "cert",
    "key",
    "password",
    "token",
    "secret",
    "credential",
    "owner",
    "host",
    "host_path",
    "path",
    "connection",
    "protocol",
];

/// The four scopes.
pub(crate) const SCOPES: &[&str] = &["incus.read", "incus.write", "incus.exec", "incus.delete"];

/// Every scope except `scope`.
pub(crate) fn scopes_without(scope: &str) -> Vec<String> {
    SCOPES
        .iter()
        .filter(|s| **s != scope)
        .map(|s| (*s).to_owned())
        .collect()
}

fn minimal_input(name: &str) -> Value {
    const OPERATION_ID: &str = "00000000-0000-4000-8000-000000000000";
    match name {
        "incus_image_delete" | "incus_image_get" => json!({"fingerprint": FINGERPRINT}),
        "incus_instance_create" => {
            json!({"name": "web", "source": {"type": "image", "alias": "busybox"}})
        }
        "incus_instance_exec" => json!({"name": "web", "command": ["true"]}),
        "incus_instance_delete" | "incus_instance_get" | "incus_instance_state_get" => {
            json!({"name": "web"})
        }
        "incus_instance_state_update" => json!({"name": "web", "action": "start"}),
        "incus_instance_update" => json!({"name": "web", "description": "d"}),
        "incus_instance_snapshot_create"
        | "incus_instance_snapshot_delete"
        | "incus_instance_snapshot_get"
        | "incus_instance_snapshot_restore" => json!({"instance": "web", "snapshot": "snap0"}),
        "incus_instance_snapshot_list" => json!({"instance": "web"}),
        "incus_network_get" => json!({"name": "incusbr0"}),
        "incus_operation_cancel" | "incus_operation_get" | "incus_operation_wait" => {
            json!({"operation_id": OPERATION_ID})
        }
        "incus_storage_pool_get" => json!({"pool": "default"}),
        "incus_profile_get" | "incus_project_get" => {
            json!({"name": "default"})
        }
        "incus_storage_volume_get" => json!({"pool": "default", "type": "custom", "name": "vol"}),
        "incus_storage_volume_list" => json!({"pool": "default"}),
        _ => json!({}),
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the spec's catalogue table, written down
    //! independently of the core's catalogue); a promise of the harness seen from outside (its
    //! command line, certification, the wire) goes in `tests/harness`.

    use super::*;

    #[test]
    fn the_table_has_the_32_operations_of_the_spec_once_each() {
        let mut names: Vec<&str> = OPERATIONS.iter().map(|o| o.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), 32);
    }

    #[test]
    fn the_kinds_refused_before_the_backend_are_the_early_checks() {
        let early = crate::suites::arbitrary_input::REFUSED_BEFORE_BACKEND;
        assert_eq!(early.len(), 6);
        assert_eq!(early.first(), Some(&"scope_missing"));
        assert_eq!(early.last(), Some(&"restricted_input"));
    }

    #[test]
    fn exactly_the_delete_scope_operations_are_destructive() {
        for op in OPERATIONS {
            assert_eq!(
                op.scope == "incus.delete",
                op.confirm != Confirm::None,
                "{}",
                op.name
            );
        }
    }
}
