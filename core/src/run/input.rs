//! Validated input as typed values, one type per native call.
//!
//! Input reaches these types once, right after the byte bound and the schema have passed, with
//! whole numbers written as floats rewritten as integers and schema defaults filled in (the table
//! of `run/native.rs` names which type each operation parses into). Each type names every field
//! its operation's schema declares (`project` and `confirm`, which the checks consume, excepted),
//! required fields are not `Option`, and unknown fields are refused: a field the schema declares
//! but the native call forgets, or a missing value, is a loud `invalid_input`, never a silent `""`
//! or `0`.
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::results::RunError;
use crate::catalogue::Confirmation;
use crate::host::ImageRemote;

/// Parses validated, normalized input into the typed input of its native call.
pub(crate) fn parse<T: DeserializeOwned>(input: &Value) -> Result<T, RunError> {
    let mut fields = input.as_object().cloned().unwrap_or_default();
    fields.remove("project");
    fields.remove(Confirmation::FIELD);
    T::deserialize(Value::Object(fields)).map_err(|error| RunError::InvalidInput {
        message: format!("the validated input does not fit its native call: {error}"),
        pointer: String::new(),
    })
}

/// Nothing but the project (`incus_server_get`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Empty {}

/// A project-wide list.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct List {
    /// Most items to return (the schema's default filled in).
    pub(crate) limit: u64,
}

/// The snapshots of one instance.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SnapshotList {
    pub(crate) instance: String,
    pub(crate) limit: u64,
}

/// The volumes of one storage pool.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct VolumeList {
    pub(crate) pool: String,
    pub(crate) limit: u64,
}

/// One object by `name` (instance, instance state, network, profile, project).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Named {
    pub(crate) name: String,
}

/// One snapshot of one instance.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Snapshot {
    pub(crate) instance: String,
    pub(crate) snapshot: String,
}

/// One image by fingerprint (or, for reads, a unique prefix).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Image {
    pub(crate) fingerprint: String,
}

/// One storage pool.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Pool {
    pub(crate) pool: String,
}

/// One storage volume.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Volume {
    pub(crate) pool: String,
    #[serde(rename = "type")]
    pub(crate) volume_type: String,
    pub(crate) name: String,
}

/// One Incus operation.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Operation {
    pub(crate) operation_id: String,
}

/// A bounded wait on one Incus operation.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct OperationWait {
    pub(crate) operation_id: String,
    pub(crate) wait_seconds: u64,
}

/// `incus_instance_create`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Create {
    pub(crate) name: String,
    pub(crate) source: Source,
    #[serde(rename = "type")]
    pub(crate) instance_type_name: Option<String>,
    pub(crate) config: Option<Map<String, Value>>,
    pub(crate) devices: Option<Map<String, Value>>,
    pub(crate) profiles: Option<Vec<String>>,
    pub(crate) description: Option<String>,
    pub(crate) ephemeral: Option<bool>,
    pub(crate) instance_type: Option<String>,
    pub(crate) start: Option<bool>,
    pub(crate) wait_seconds: u64,
    /// The image server that `source.remote` resolved to, set by the image-remote check (never
    /// read from input).
    #[serde(skip)]
    pub(crate) resolved_remote: Option<ImageRemote>,
}

/// The create input's `source`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Source {
    #[serde(rename = "type")]
    pub(crate) source_type: String,
    pub(crate) alias: Option<String>,
    pub(crate) fingerprint: Option<String>,
    pub(crate) remote: Option<String>,
}

/// The native create body: the input's native fields, with `source.remote` replaced by the
/// host-approved server and protocol.
#[derive(Serialize)]
struct CreateBody<'a> {
    name: &'a str,
    source: SourceBody<'a>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    instance_type_name: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    config: Option<&'a Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    devices: Option<&'a Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    profiles: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ephemeral: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    instance_type: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    start: Option<bool>,
}

#[derive(Serialize)]
struct SourceBody<'a> {
    #[serde(rename = "type")]
    source_type: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    alias: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fingerprint: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    server: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    protocol: Option<&'a str>,
}

impl Create {
    /// The native body, with the server that `source.remote` resolved to (the checks resolve it
    /// whenever `source.remote` is given, and refuse the call otherwise).
    pub(crate) fn body(&self) -> Value {
        let remote = self
            .source
            .remote
            .as_ref()
            .and(self.resolved_remote.as_ref());
        let body = CreateBody {
            name: &self.name,
            source: SourceBody {
                source_type: &self.source.source_type,
                alias: self.source.alias.as_deref(),
                fingerprint: self.source.fingerprint.as_deref(),
                server: remote.map(|remote| remote.server.as_str()),
                protocol: remote.map(|remote| remote.protocol.as_str()),
            },
            instance_type_name: self.instance_type_name.as_deref(),
            config: self.config.as_ref(),
            devices: self.devices.as_ref(),
            profiles: self.profiles.as_deref(),
            description: self.description.as_deref(),
            ephemeral: self.ephemeral,
            instance_type: self.instance_type.as_deref(),
            start: self.start,
        };
        serde_json::to_value(body).unwrap_or_default()
    }

    /// What the create writes into the new instance.
    pub(crate) fn writes(&self) -> InstanceWrites<'_> {
        InstanceWrites {
            config: self.config.as_ref(),
            devices: self.devices.as_ref(),
            profiles: self.profiles.as_deref(),
        }
    }
}

/// `incus_instance_delete`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Delete {
    pub(crate) name: String,
    pub(crate) wait_seconds: u64,
}

/// The run-state actions of `incus_instance_state_update`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Action {
    Start,
    Stop,
    Restart,
    Freeze,
    Unfreeze,
}

/// `incus_instance_state_update`; the native body is the fields other than `name` and
/// `wait_seconds`.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct StateUpdate {
    #[serde(skip_serializing)]
    pub(crate) name: String,
    action: Action,
    #[serde(skip_serializing_if = "Option::is_none")]
    timeout: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    force: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stateful: Option<bool>,
    #[serde(skip_serializing)]
    pub(crate) wait_seconds: u64,
}

impl StateUpdate {
    /// The run-state action.
    pub(crate) fn action(&self) -> Action {
        self.action
    }

    /// The native body: `action`, and `timeout`, `force`, `stateful` when given.
    pub(crate) fn body(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }
}

/// `incus_instance_snapshot_create`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SnapshotCreate {
    pub(crate) instance: String,
    pub(crate) snapshot: Option<String>,
    pub(crate) stateful: Option<bool>,
    pub(crate) wait_seconds: u64,
}

#[derive(Serialize)]
struct SnapshotCreateBody<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    stateful: Option<bool>,
    name: &'a str,
}

impl SnapshotCreate {
    /// The native body. Without a snapshot name the native name is empty, and Incus picks the
    /// name from the instance's `snapshots.pattern` (`snapN` by default, N one more than the
    /// largest of an existing `snapN`).
    pub(crate) fn body(&self) -> Value {
        let body = SnapshotCreateBody {
            stateful: self.stateful,
            name: self.snapshot.as_deref().unwrap_or(""),
        };
        serde_json::to_value(body).unwrap_or_default()
    }
}

/// `incus_instance_snapshot_delete`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SnapshotDelete {
    pub(crate) instance: String,
    pub(crate) snapshot: String,
    pub(crate) wait_seconds: u64,
}

/// `incus_instance_snapshot_restore`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SnapshotRestore {
    pub(crate) instance: String,
    pub(crate) snapshot: String,
    pub(crate) stateful: Option<bool>,
    pub(crate) wait_seconds: u64,
}

#[derive(Serialize)]
struct RestoreBody<'a> {
    restore: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    stateful: Option<bool>,
}

impl SnapshotRestore {
    /// The native `PUT` body: `restore`, and `stateful` when given.
    pub(crate) fn body(&self) -> Value {
        let body = RestoreBody {
            restore: &self.snapshot,
            stateful: self.stateful,
        };
        serde_json::to_value(body).unwrap_or_default()
    }
}

/// `incus_image_delete`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ImageDelete {
    pub(crate) fingerprint: String,
    pub(crate) wait_seconds: u64,
}

/// `incus_instance_update`: the writable fields are the native PATCH body, as given.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Update {
    #[serde(skip_serializing)]
    pub(crate) name: String,
    #[serde(skip_serializing)]
    pub(crate) etag: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) config: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) devices: Option<Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) profiles: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) ephemeral: Option<bool>,
}

impl Update {
    /// The native PATCH body: only the given writable fields.
    pub(crate) fn body(&self) -> Value {
        serde_json::to_value(self).unwrap_or_default()
    }

    /// What the update writes into the instance.
    pub(crate) fn writes(&self) -> InstanceWrites<'_> {
        InstanceWrites {
            config: self.config.as_ref(),
            devices: self.devices.as_ref(),
            profiles: self.profiles.as_deref(),
        }
    }
}

/// What create and update write into an instance: the restricted-input rules read these (a view
/// of [`Create`] or [`Update`], so they ignore their other fields).
#[derive(Debug, Clone, Copy)]
pub(crate) struct InstanceWrites<'a> {
    pub(crate) config: Option<&'a Map<String, Value>>,
    pub(crate) devices: Option<&'a Map<String, Value>>,
    pub(crate) profiles: Option<&'a [String]>,
}

/// `incus_instance_exec`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Exec {
    pub(crate) name: String,
    pub(crate) command: Vec<String>,
    pub(crate) environment: Option<Map<String, Value>>,
    pub(crate) cwd: Option<String>,
    pub(crate) user: Option<u32>,
    pub(crate) group: Option<u32>,
    pub(crate) stdin: Option<String>,
    pub(crate) timeout_seconds: u64,
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (validated input as typed values, one type
    //! per native call); a promise of the whole `run()` or of the client against a fake Incus, seen
    //! through the public API, goes in `tests/integration`.

    use serde_json::json;

    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn a_missing_required_value_is_invalid_input_not_a_default() {
        let error = parse::<List>(&json!({"project": "default"})).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
        assert!(error.to_string().contains("limit"), "{error}");
        let error = parse::<Named>(&json!({"name": 7})).unwrap_err();
        assert_eq!(error.kind(), ErrorKind::InvalidInput);
    }

    #[test]
    fn a_field_the_native_call_does_not_read_is_refused() {
        let error =
            parse::<Delete>(&json!({"name": "web", "wait_seconds": 1, "force": true})).unwrap_err();
        assert!(error.to_string().contains("force"), "{error}");
    }

    #[test]
    fn project_and_confirm_are_left_to_the_checks() {
        let delete: Delete =
            parse(&json!({"name": "web", "confirm": "web", "project": "p", "wait_seconds": 3}))
                .unwrap();
        assert_eq!((delete.name.as_str(), delete.wait_seconds), ("web", 3));
    }

    #[test]
    fn native_bodies_carry_only_given_fields() {
        let state: StateUpdate =
            parse(&json!({"name": "web", "action": "stop", "force": true, "wait_seconds": 1}))
                .unwrap();
        assert_eq!(state.body(), json!({"action": "stop", "force": true}));
        let snapshot: SnapshotCreate =
            parse(&json!({"instance": "web", "wait_seconds": 1})).unwrap();
        assert_eq!(snapshot.body(), json!({"name": ""}));
        let update: Update =
            parse(&json!({"name": "web", "etag": "e", "description": ""})).unwrap();
        assert_eq!(update.body(), json!({"description": ""}));
        let mut create: Create = parse(&json!({"name": "web", "source": {"type": "image", "alias": "a", "remote": "images"}, "wait_seconds": 1})).unwrap();
        create.resolved_remote = Some(ImageRemote::new(
            "https://images.example.org",
            "simplestreams",
        ));
        assert_eq!(
            create.body(),
            json!({"name": "web", "source": {"type": "image", "alias": "a", "server": "https://images.example.org", "protocol": "simplestreams"}})
        );
    }
}
