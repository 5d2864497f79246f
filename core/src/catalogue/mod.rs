//! The operation catalogue: exactly the 32 descriptors of the spec's table, built once.
//!
//! Each resource module returns its descriptors; this module gathers them, sorts them by name and
//! answers the public questions (`all`, `fetch`, `describe`, `not_exported`) through the evidence gate.

/// Shared description sentences (macros so that descriptions stay `&'static str` literals).
macro_rules! list_returns {
    () => {
        " Returns {\"items\": [...], \"count\": <native total>, \"truncated\": <bool>}: native objects in native order, unchanged, at most limit items (default 100, at most 500) and at most 256 KiB of JSON; items beyond either bound are dropped from the end and truncated is true."
    };
}
macro_rules! item_returns {
    () => {
        " Returns {\"item\": <native object>} unchanged (unknown fields pass through). A missing resource is a native error with http_status 404. Results are at most 256 KiB of JSON (output_limit otherwise)."
    };
}
macro_rules! mutation_returns {
    () => {
        " Waits up to wait_seconds (default 10, at most 60, also capped by the host connection's timeout) for the native operation and returns {\"status\", \"operation_id\", \"operation\", \"waited_seconds\", \"wait_error\"}: completed or failed when the native outcome was observed, running when it was not observed within the wait (nothing is cancelled), uncertain when the request may have been accepted but no response was decoded. Nothing is resent: after running or uncertain, check with incus_operation_get or incus_operation_wait instead of calling again. A native rejection before acceptance is an error of kind native with http_status, error_code and the native message."
    };
}
macro_rules! project_note {
    () => {
        " project selects the Incus project (the host's default when absent)."
    };
}
/// Operation objects in a result: their secrets are redacted (core/src/run/redact.rs, by incus-credentials' definition).
macro_rules! operation_secrets_note {
    () => {
        " Secrets in an operation's metadata (secret of trust, cluster-join and image tokens; fds of exec and console websockets; control, fs and criu of migrations; the values of an exec session's environment) are replaced by \"[redacted]\", and so is each argument of an exec session's command unless the caller holds incus.exec."
    };
}
/// Instance, snapshot and profile reads: the guest's data is redacted (run/redact.rs).
macro_rules! guest_data_note {
    () => {
        " The values of environment.*, of cloud-init data keys (cloud-init.user-data, cloud-init.vendor-data, cloud-init.network-config, user.user-data, user.vendor-data, user.network-config, user.meta-data) and of the guest's credentials (smbios11.*, systemd.credential.*, systemd.credential-binary.*) in config and expanded_config are replaced by \"[redacted]\" unless the caller holds incus.exec (which can read them in the guest)."
    };
}
/// Reads whose objects carry used_by: entries of other projects only if the host allows.
macro_rules! used_by_note {
    () => {
        " used_by keeps the entries of the call's project, and those of another project only when the host lets the caller see that project."
    };
}
/// Operation get, wait and cancel: only operations of the call's project (run/own_operation.rs).
macro_rules! own_operation_note {
    () => {
        " Acts only on an operation that Incus lists for the project (one read of GET /1.0/operations?project=P first); any other ID, an operation of another project included, gets exactly the answer of an unknown operation (native error, http_status 404, \"Operation not found\") and nothing else is sent."
    };
}

mod images;
mod instances;
mod native;
mod networks;
mod operations;
mod profiles;
mod projects;
mod schema;
mod server;
mod snapshots;
mod storage;

use std::fmt;
use std::sync::{LazyLock, OnceLock};

use serde::Serialize;
use serde_json::{json, Value};

use crate::evidence::{self, MissingRequirement};

pub(crate) use native::Native;

/// The scope (host-verified grant) an operation needs. Never taken from tool input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum Scope {
    /// Inspection of every resource, and operation get/wait.
    #[serde(rename = "incus.read")]
    Read,
    /// Instance create/update/state, snapshot create, operation cancel.
    #[serde(rename = "incus.write")]
    Write,
    /// Bounded guest exec.
    #[serde(rename = "incus.exec")]
    Exec,
    /// Instance, snapshot and image deletion; snapshot restore.
    #[serde(rename = "incus.delete")]
    Delete,
}

impl Scope {
    /// The scope token, for example `incus.read`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::Read => "incus.read",
            Scope::Write => "incus.write",
            Scope::Exec => "incus.exec",
            Scope::Delete => "incus.delete",
        }
    }

    /// Parses a scope token; `None` for anything that is not one of the four scopes.
    pub fn parse(token: &str) -> Option<Scope> {
        [Scope::Read, Scope::Write, Scope::Exec, Scope::Delete]
            .into_iter()
            .find(|scope| scope.as_str() == token)
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What `confirm` must repeat, exactly, for a destructive operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Confirmation {
    /// The instance name (`input.name`), for example `web`.
    InstanceName,
    /// `<instance>/<snapshot>` (`input.instance` + `/` + `input.snapshot`), for example `web/snap0`.
    InstanceSnapshot,
    /// The full 64-character image fingerprint (`input.fingerprint`).
    Fingerprint,
}

impl Confirmation {
    /// The input field that carries the confirmation.
    pub const FIELD: &'static str = "confirm";

    /// The confirm string this input must carry, computed from the input's own resource fields;
    /// `None` when those fields are missing or not strings.
    ///
    /// ```
    /// use incus_operations::Confirmation;
    /// use serde_json::json;
    /// let input = json!({"instance": "web", "snapshot": "snap0", "confirm": "yes"});
    /// assert_eq!(Confirmation::InstanceSnapshot.expected(&input).as_deref(), Some("web/snap0"));
    /// ```
    pub fn expected(self, input: &Value) -> Option<String> {
        let field = |key: &str| input.get(key).and_then(Value::as_str);
        match self {
            Confirmation::InstanceName => field("name").map(str::to_owned),
            Confirmation::InstanceSnapshot => {
                Some(format!("{}/{}", field("instance")?, field("snapshot")?))
            }
            Confirmation::Fingerprint => field("fingerprint").map(str::to_owned),
        }
    }

    /// Whether `input.confirm` repeats the affected resource exactly. Inferred consent such as
    /// `"yes"` never matches.
    pub fn is_confirmed(self, input: &Value) -> bool {
        match (
            self.expected(input),
            input.get(Self::FIELD).and_then(Value::as_str),
        ) {
            (Some(expected), Some(given)) => !expected.is_empty() && expected == given,
            _ => false,
        }
    }

    /// What the caller must repeat, in words (published as `x-tama-confirmation.description`).
    pub const fn description(self) -> &'static str {
        match self {
            Confirmation::InstanceName => "the instance name, for example web",
            Confirmation::InstanceSnapshot => "<instance>/<snapshot>, for example web/snap0",
            Confirmation::Fingerprint => "the full 64-character image fingerprint",
        }
    }
}

/// The bounds of one operation. Absent bounds do not apply to it.
///
/// Serialized as an object of non-negative integers (the `x-tama-bounds` of the profile).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Default)]
#[non_exhaustive]
pub struct Bounds {
    /// Serialized input size: 16 KiB reads, 64 KiB mutations, 1 MiB exec.
    pub max_input_bytes: u64,
    /// Serialized result size: 256 KiB of JSON.
    pub max_output_bytes: u64,
    /// List items returned when `limit` is absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_items: Option<u64>,
    /// Largest `limit`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_items: Option<u64>,
    /// `wait_seconds` when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_wait_seconds: Option<u64>,
    /// Largest `wait_seconds`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_wait_seconds: Option<u64>,
    /// Exec `timeout_seconds` when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default_timeout_seconds: Option<u64>,
    /// Largest exec `timeout_seconds`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_timeout_seconds: Option<u64>,
    /// Most exec arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_arguments: Option<u64>,
    /// Longest exec argument, in characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_argument_chars: Option<u64>,
    /// Most exec environment variables.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_environment_variables: Option<u64>,
    /// Largest exec stdin, in bytes of UTF-8.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_stdin_bytes: Option<u64>,
    /// Bytes captured per exec output stream; the rest is counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_capture_bytes: Option<u64>,
    /// Total exec stream bytes before the command is killed (also capped at half the connection's
    /// `max_stream_bytes`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_stream_bytes: Option<u64>,
}

/// How the run pipeline executes an operation (crate-internal).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum OperationKind {
    /// A native collection: `{"items", "count", "truncated"}`.
    List,
    /// A single native object: `{"item"}` (plus `etag` for `incus_instance_get`).
    Item,
    /// An asynchronous native mutation followed by a bounded wait.
    Mutation,
    /// A conditional PATCH of an instance.
    Update,
    /// Read an operation, then at most one native DELETE.
    Cancel,
    /// Bounded noninteractive exec over the operation's websockets.
    Exec,
    /// A bounded wait on an existing operation.
    Wait,
}

/// One operation of the catalogue. Built only by the catalogue; read through its accessors.
#[derive(Debug)]
pub struct Descriptor {
    name: &'static str,
    title: &'static str,
    description: String,
    resource: &'static str,
    scope: Scope,
    native: Native,
    confirmation: Option<Confirmation>,
    requires: &'static [&'static str],
    bounds: Bounds,
    input_schema: Value,
    success_schema: Value,
    output_schema: Value,
    input_validator: OnceLock<jsonschema::Validator>,
}

/// The parts a resource module writes for one operation; the rest is derived.
struct Spec {
    name: &'static str,
    title: &'static str,
    /// What the operation does and returns, for an agent choosing a tool.
    description: &'static str,
    /// One valid input, appended to the description as its documented example.
    example: Value,
    resource: &'static str,
    scope: Scope,
    /// What the operation does natively (and so how its result is shaped).
    native: Native,
    confirmation: Option<Confirmation>,
    requires: &'static [&'static str],
    /// The operation-specific input properties (`project`, and `confirm` where needed, are added).
    input: schema::Object,
    /// The success shape; the error shape is added.
    success: Value,
}

const KIB: u64 = 1024;
/// Largest serialized result.
pub(crate) const MAX_OUTPUT_BYTES: u64 = 256 * KIB;

impl Descriptor {
    fn from_spec(spec: Spec) -> Descriptor {
        let bounds = bounds_for(spec.scope, spec.native.kind());
        let mut input = spec.input;
        if spec.confirmation.is_some() {
            input = input.required(Confirmation::FIELD, schema::confirm());
        }
        let input_schema = input.optional("project", schema::project()).into_root();
        let output_schema = schema::output(&spec.success);
        let description = format!(
            "{}\n\nExample input: {}",
            spec.description.trim(),
            serde_json::to_string(&spec.example).expect("an example serializes")
        );
        Descriptor {
            name: spec.name,
            title: spec.title,
            description,
            resource: spec.resource,
            scope: spec.scope,
            native: spec.native,
            confirmation: spec.confirmation,
            requires: spec.requires,
            bounds,
            input_schema,
            success_schema: spec.success,
            output_schema,
            input_validator: OnceLock::new(),
        }
    }

    /// The canonical `incus_<resource>_<verb>` name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// A short title (at most 120 characters).
    pub fn title(&self) -> &'static str {
        self.title
    }

    /// What the operation does, what it returns, its bounds and what `confirm` must repeat, written
    /// for an agent choosing a tool (at most 4096 characters). Ends with one example input.
    pub fn description(&self) -> &str {
        &self.description
    }

    /// The resource the operation acts on (`instance`, `snapshot`, `image`, ...).
    pub fn resource(&self) -> &'static str {
        self.resource
    }

    /// The scope the caller's verified grants must hold.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// Whether the operation destroys or replaces data (and so requires `confirm`).
    pub fn destructive(&self) -> bool {
        self.confirmation.is_some()
    }

    /// What `confirm` must repeat, for destructive operations.
    pub fn confirmation(&self) -> Option<Confirmation> {
        self.confirmation
    }

    /// The client requirements (native methods, `helper:...`, `stream:...`) the operation uses.
    pub fn requires(&self) -> &'static [&'static str] {
        self.requires
    }

    /// The operation's bounds.
    pub fn bounds(&self) -> &Bounds {
        &self.bounds
    }

    /// The input schema (JSON Schema 2020-12, closed objects).
    pub fn input_schema(&self) -> &Value {
        &self.input_schema
    }

    /// The output schema: `oneOf` the success shape and the error shape.
    pub fn output_schema(&self) -> &Value {
        &self.output_schema
    }

    /// The full description: the data that `describe` returns and the pinned fixture holds.
    pub fn describe(&self) -> Value {
        json!({
            "name": self.name,
            "title": self.title,
            "description": self.description,
            "resource": self.resource,
            "scope": self.scope,
            "destructive": self.destructive(),
            "confirmation": self.confirmation.map(|rule| json!({
                "rule": rule,
                "field": Confirmation::FIELD,
                "description": rule.description(),
            })),
            "requires": self.requires,
            "bounds": self.bounds,
            "input_schema": self.input_schema,
            "output_schema": self.output_schema,
        })
    }

    /// What the operation does natively: the run pipeline's one dispatch.
    pub(crate) fn native(&self) -> Native {
        self.native
    }

    /// How the run pipeline shapes this operation's result.
    #[cfg(test)]
    pub(crate) fn kind(&self) -> OperationKind {
        self.native.kind()
    }

    /// The serialized input bound in bytes (16 KiB reads, 64 KiB mutations, 1 MiB exec).
    pub(crate) fn max_input_bytes(&self) -> u64 {
        self.bounds.max_input_bytes
    }

    /// The success shape alone (the profile's `200` response).
    pub(crate) fn success_schema(&self) -> &Value {
        &self.success_schema
    }

    /// The compiled input schema, built on first use.
    pub(crate) fn input_validator(&self) -> &jsonschema::Validator {
        self.input_validator.get_or_init(|| {
            jsonschema::draft202012::new(&self.input_schema)
                .expect("catalogue input schemas compile (tested)")
        })
    }
}

fn bounds_for(scope: Scope, kind: OperationKind) -> Bounds {
    let mut bounds = Bounds {
        max_input_bytes: match scope {
            Scope::Read => 16 * KIB,
            Scope::Write | Scope::Delete => 64 * KIB,
            Scope::Exec => KIB * KIB,
        },
        max_output_bytes: MAX_OUTPUT_BYTES,
        ..Bounds::default()
    };
    match kind {
        OperationKind::List => {
            bounds.default_items = Some(schema::DEFAULT_LIMIT);
            bounds.max_items = Some(schema::MAX_LIMIT);
        }
        OperationKind::Mutation | OperationKind::Wait => {
            bounds.default_wait_seconds = Some(schema::DEFAULT_WAIT_SECONDS);
            bounds.max_wait_seconds = Some(schema::MAX_WAIT_SECONDS);
        }
        OperationKind::Exec => {
            bounds.default_timeout_seconds = Some(schema::DEFAULT_TIMEOUT_SECONDS);
            bounds.max_timeout_seconds = Some(schema::MAX_TIMEOUT_SECONDS);
            bounds.max_arguments = Some(schema::MAX_ARGUMENTS);
            bounds.max_argument_chars = Some(schema::MAX_ARGUMENT_CHARS);
            bounds.max_environment_variables = Some(schema::MAX_ENVIRONMENT_VARIABLES);
            bounds.max_stdin_bytes = Some(schema::MAX_STDIN_BYTES);
            bounds.max_capture_bytes = Some(schema::MAX_CAPTURE_BYTES);
            bounds.max_stream_bytes = Some(64 * KIB * KIB);
        }
        OperationKind::Item | OperationKind::Update | OperationKind::Cancel => {}
    }
    bounds
}

static CATALOGUE: LazyLock<Vec<Descriptor>> = LazyLock::new(|| {
    let mut descriptors: Vec<Descriptor> = [
        images::specs(),
        instances::specs(),
        networks::specs(),
        operations::specs(),
        profiles::specs(),
        projects::specs(),
        server::specs(),
        snapshots::specs(),
        storage::specs(),
    ]
    .into_iter()
    .flatten()
    .map(Descriptor::from_spec)
    .collect();
    descriptors.sort_by_key(|descriptor| descriptor.name);
    descriptors
});

/// Every descriptor with what its evidence lacks (empty when exported), in name order.
static GATED: LazyLock<Vec<(&'static Descriptor, Vec<MissingRequirement>)>> = LazyLock::new(|| {
    CATALOGUE
        .iter()
        .map(|descriptor| (descriptor, evidence::missing(descriptor.requires())))
        .collect()
});

/// The JSON Schema dialect every catalogue schema is written in.
pub(crate) fn schema_dialect() -> &'static str {
    schema::DIALECT
}

/// The error shape shared by every operation's output.
pub(crate) fn error_schema() -> Value {
    schema::error_shape()
}

/// Any catalogued descriptor, exported or not (for the run pipeline, which checks exportedness itself).
pub(crate) fn lookup(name: &str) -> Option<&'static Descriptor> {
    CATALOGUE
        .binary_search_by(|descriptor| descriptor.name.cmp(name))
        .ok()
        .map(|index| &CATALOGUE[index])
}

/// The one descriptor whose native call is `native` (for tests that name an operation by its
/// behaviour rather than by a string).
#[cfg(test)]
pub(crate) fn by_native(native: Native) -> &'static Descriptor {
    CATALOGUE
        .iter()
        .find(|descriptor| descriptor.native == native)
        .expect("every native call has its descriptor (tested)")
}

/// Every catalogued descriptor, exported or not, sorted by name.
pub(crate) fn catalogue() -> &'static [Descriptor] {
    &CATALOGUE
}

/// The exported descriptors (all of their client requirements have evidence), sorted by name.
pub fn all() -> Vec<&'static Descriptor> {
    GATED
        .iter()
        .filter(|(_, missing)| missing.is_empty())
        .map(|(descriptor, _)| *descriptor)
        .collect()
}

/// An exported descriptor by name; `None` for unknown or unavailable operations.
pub fn fetch(name: &str) -> Option<&'static Descriptor> {
    GATED
        .iter()
        .find(|(descriptor, missing)| descriptor.name == name && missing.is_empty())
        .map(|(descriptor, _)| *descriptor)
}

/// The description of an exported operation: name, title, description, resource, scope,
/// destructive, confirmation, requires, bounds, input_schema and output_schema.
pub fn describe(name: &str) -> Option<Value> {
    fetch(name).map(Descriptor::describe)
}

/// The operations that are not exported, and why: copy, rename and move (deferred by scope), then
/// every descriptor whose client evidence is missing, with the missing requirements.
pub fn not_exported() -> Vec<NotExported> {
    let deferred = DEFERRED_BY_SCOPE.iter().map(|name| NotExported {
        name,
        reason: NotExportedReason::DeferredByScope {
            decision: SCOPE_DECISION,
        },
        descriptor: None,
    });
    let missing =
        GATED
            .iter()
            .filter(|(_, missing)| !missing.is_empty())
            .map(|(descriptor, missing)| NotExported {
                name: descriptor.name,
                reason: NotExportedReason::MissingEvidence {
                    missing: missing.clone(),
                },
                descriptor: Some(*descriptor),
            });
    deferred.chain(missing).collect()
}

/// Operations left out of the catalogue by scope, not for missing evidence.
const DEFERRED_BY_SCOPE: [&str; 3] = [
    "incus_instance_copy",
    "incus_instance_move",
    "incus_instance_rename",
];
const SCOPE_DECISION: &str = "user decision 2026-11-04";

/// An operation that is not exported, with the reason.
#[derive(Debug, Clone, Serialize)]
pub struct NotExported {
    name: &'static str,
    reason: NotExportedReason,
    #[serde(skip)]
    descriptor: Option<&'static Descriptor>,
}

impl NotExported {
    /// The operation name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Why it is not exported.
    pub fn reason(&self) -> &NotExportedReason {
        &self.reason
    }

    /// Its descriptor, when the catalogue has one (operations deferred by scope have none).
    pub fn descriptor(&self) -> Option<&'static Descriptor> {
        self.descriptor
    }
}

/// Why an operation is not exported.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum NotExportedReason {
    /// Deliberately left out of scope; not a matter of evidence.
    DeferredByScope {
        /// The decision that deferred it.
        decision: &'static str,
    },
    /// Some client requirements lack evidence.
    MissingEvidence {
        /// Each requirement without evidence, with what is missing.
        missing: Vec<MissingRequirement>,
    },
}

impl fmt::Display for NotExportedReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NotExportedReason::DeferredByScope { decision } => {
                write!(f, "deferred by scope ({decision})")
            }
            NotExportedReason::MissingEvidence { missing } => {
                let names: Vec<&str> = missing.iter().map(|m| m.requirement()).collect();
                write!(f, "missing evidence for {}", names.join(", "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the operation catalogue); a promise of the
    //! whole `run()` or of the client against a fake Incus, seen through the public API, goes in
    //! `tests/integration`.

    use super::*;

    #[test]
    fn evidence_inventory_maps_every_catalogue_requirement() {
        let required: std::collections::BTreeSet<&str> = catalogue()
            .iter()
            .flat_map(|descriptor| descriptor.requires().iter().copied())
            .collect();
        let mapped: std::collections::BTreeSet<&str> = crate::evidence::ENDPOINT_ROWS
            .iter()
            .map(|row| row.requirement)
            .collect();
        assert_eq!(
            required, mapped,
            "inventory rows and descriptor requirements differ"
        );
        for entry in crate::evidence::COVERAGE {
            assert!(
                required.contains(entry.method),
                "stale coverage entry {}",
                entry.method
            );
        }
    }

    #[test]
    fn lookup_finds_every_descriptor_exported_or_not() {
        assert_eq!(catalogue().len(), 32);
        for descriptor in catalogue() {
            let found = lookup(descriptor.name()).expect("catalogued");
            assert!(std::ptr::eq(found, descriptor));
            // The compiled validator agrees with the documented example.
            let (_, example) = descriptor
                .description()
                .rsplit_once("Example input: ")
                .unwrap();
            let example: Value = serde_json::from_str(example).unwrap();
            assert!(
                descriptor.input_validator().is_valid(&example),
                "{}",
                descriptor.name()
            );
        }
        assert!(lookup("incus_instance_copy").is_none());
        assert!(lookup("").is_none());
    }

    #[test]
    fn each_native_call_belongs_to_exactly_one_operation() {
        let mut natives: Vec<Native> = catalogue().iter().map(Descriptor::native).collect();
        let total = natives.len();
        natives.sort_by_key(|native| format!("{native:?}"));
        natives.dedup();
        assert_eq!(natives.len(), total, "two operations share a native call");
        for descriptor in catalogue() {
            assert!(std::ptr::eq(by_native(descriptor.native()), descriptor));
            // The variant is the operation's name in CamelCase, so a catalogue entry cannot
            // name another operation's behaviour by mistake.
            let camel: String = descriptor.name()["incus_".len()..]
                .split('_')
                .map(|word| word[..1].to_uppercase() + &word[1..])
                .collect();
            assert_eq!(format!("{:?}", descriptor.native()), camel);
        }
    }

    #[test]
    fn operation_kinds_follow_the_result_shapes() {
        for descriptor in catalogue() {
            let name = descriptor.name();
            let expected = match name {
                "incus_instance_update" => OperationKind::Update,
                "incus_operation_cancel" => OperationKind::Cancel,
                "incus_instance_exec" => OperationKind::Exec,
                "incus_operation_wait" => OperationKind::Wait,
                _ if name.ends_with("_list") => OperationKind::List,
                _ if name.ends_with("_get") => OperationKind::Item,
                _ => OperationKind::Mutation,
            };
            assert_eq!(descriptor.kind(), expected, "{name}");
            let has_wait = descriptor.input_schema()["properties"]
                .get("wait_seconds")
                .is_some();
            assert_eq!(
                has_wait,
                matches!(expected, OperationKind::Mutation | OperationKind::Wait),
                "{name}"
            );
        }
    }
}
