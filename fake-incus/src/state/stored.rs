//! The state format, versioned here and nowhere else: what `GET /state` and `dump_state` give,
//! what `--state FILE`, `PUT /state` and the builder's `state` take, and what `--state-dir`
//! keeps on disk.
//!
//! One JSON object: the [`State`]'s own keys (through its serde derives, so a field added to
//! `State` is stored with no code here), plus
//!
//! * `format_version`: [`FORMAT_VERSION`]. A file of another version is refused with a message
//!   that says which versions differ, never read as this one. A seed written by hand may leave
//!   it out (it is then read as this version); the `--state-dir` file must have it.
//! * `incus_version`: the server version of the Incus the state was read from (a capture) or
//!   the fake served it as (a dump); a fake started on the seed answers as that version's line
//!   unless it is told another. Optional.
//! * `files`: the instances' file trees and the images' rootfs trees ([`StoredFiles`]).
//! * `operations`: the operations as `GET /1.0/operations/{id}` shows them. They are written
//!   for the record and never loaded: a restarted Incus has no operations (at start it deletes
//!   every operation of its member from the database, `internal/server/db/db.go`), so a
//!   restarted fake has none either and asking for one is `404 Operation not found`.

use super::files::stored::StoredFiles;
use super::files::Files;
use super::{SeedError, State};
use serde::Serialize;
use serde_json::Value;

/// The version of the state format (2: a cluster's member records and groups, `cluster`).
pub(crate) const FORMAT_VERSION: u64 = 2;
/// The key that holds it.
const VERSION_KEY: &str = "format_version";
/// The key of the Incus server version the state comes from.
pub(crate) const INCUS_VERSION_KEY: &str = "incus_version";
/// The keys of the format that are not [`State`]'s.
#[cfg(test)]
const OWN_KEYS: [&str; 4] = [VERSION_KEY, INCUS_VERSION_KEY, "files", "operations"];

/// The whole state of a fake: resources, files and operations.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stored {
    pub(crate) state: State,
    pub(crate) files: Files,
    /// The operations' JSON (never loaded; see the module's documentation).
    pub(crate) operations: Vec<Value>,
    /// The server version of the Incus the state comes from, when known.
    pub(crate) incus_version: Option<String>,
}

/// What is written, borrowing the state.
#[derive(Serialize)]
struct Written<'a> {
    format_version: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    incus_version: Option<&'a str>,
    #[serde(flatten)]
    state: &'a State,
    files: StoredFiles,
    operations: &'a [Value],
}

/// Whether a `format_version` must be present.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Versioned {
    /// A file this fake wrote (`--state-dir`): the version is required.
    Required,
    /// A seed, possibly written by hand: no version means this one.
    Optional,
}

impl Stored {
    fn written(&self) -> Written<'_> {
        Written {
            format_version: FORMAT_VERSION,
            incus_version: self.incus_version.as_deref(),
            state: &self.state,
            files: StoredFiles::of(&self.files),
            operations: &self.operations,
        }
    }

    /// The state format as bytes (compact JSON).
    pub(crate) fn to_vec(&self) -> Vec<u8> {
        serde_json::to_vec(&self.written()).unwrap_or_default()
    }

    /// The state format as a JSON value.
    pub(crate) fn to_json(&self) -> Value {
        serde_json::to_value(self.written()).unwrap_or(Value::Null)
    }

    /// Reads the state format from bytes.
    pub(crate) fn from_slice(bytes: &[u8], versioned: Versioned) -> Result<Self, SeedError> {
        let value: Value =
            serde_json::from_slice(bytes).map_err(|e| SeedError(format!("not JSON: {e}")))?;
        Self::from_json(value, versioned)
    }

    /// Reads the state format. Missing resource keys take their default values (see
    /// [`State::seed`]); operations are not loaded.
    pub(crate) fn from_json(value: Value, versioned: Versioned) -> Result<Self, SeedError> {
        let Value::Object(mut object) = value else {
            return Err(SeedError("the state must be a JSON object".into()));
        };
        check_version(object.remove(VERSION_KEY), versioned)?;
        let incus_version = match object.remove(INCUS_VERSION_KEY) {
            None | Some(Value::Null) => None,
            Some(Value::String(version)) => Some(version),
            Some(other) => {
                return Err(SeedError(format!(
                "{INCUS_VERSION_KEY}: expected a server version such as \"7.0.2\", found {other}"
            )))
            }
        };
        let files = match object.remove("files") {
            None | Some(Value::Null) => Files::default(),
            Some(files) => serde_json::from_value::<StoredFiles>(files)
                .map_err(|e| SeedError(format!("files: {e}")))?
                .into_files()
                .map_err(|e| SeedError(e.to_string()))?,
        };
        object.remove("operations");
        let state = State::seed(Value::Object(object))?;
        Ok(Self {
            state,
            files,
            operations: Vec::new(),
            incus_version,
        })
    }
}

fn check_version(found: Option<Value>, versioned: Versioned) -> Result<(), SeedError> {
    let version = match (found, versioned) {
        (None, Versioned::Optional) => return Ok(()),
        (None, Versioned::Required) => {
            return Err(SeedError(format!(
                "no {VERSION_KEY}: this is not a state file written by fake-incus (which writes version {FORMAT_VERSION})"
            )))
        }
        (Some(value), _) => value,
    };
    match version.as_u64() {
        Some(FORMAT_VERSION) => Ok(()),
        Some(newer) if newer > FORMAT_VERSION => Err(SeedError(format!(
            "state format version {newer} is newer than this fake-incus reads (version {FORMAT_VERSION}); use the fake-incus that wrote it, or a newer one"
        ))),
        Some(older) => Err(SeedError(format!(
            "state format version {older} is older than this fake-incus reads (version {FORMAT_VERSION}) and cannot be converted; write the state again with this fake-incus"
        ))),
        None => Err(SeedError(format!(
            "{VERSION_KEY} must be a whole number, not {version}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Instance;
    use serde_json::json;
    use std::sync::Arc;

    /// A state with something in every part the format holds.
    fn populated() -> Stored {
        let mut state = State::default_state();
        let mut instance = Instance::from_image("c1", "default", None);
        instance.power_on();
        instance
            .snapshots
            .push(instance.take_snapshot("s0", false, None));
        state.instances.push(Arc::new(instance));
        state.server_config.insert("user.x".into(), "1".into());
        let mut files = Files::default();
        files
            .tree_mut("default", "c1")
            .write(
                "/etc/hostname",
                bytes::Bytes::from_static(b"c1\n"),
                crate::state::files::Attrs::default(),
                false,
            )
            .unwrap();
        files.take_snapshot("default", "c1", "s0");
        Stored {
            state,
            files,
            operations: vec![json!({"id": "x", "status": "Running"})],
            incus_version: Some("7.0.2".into()),
        }
    }

    #[test]
    fn a_dump_loaded_and_dumped_again_is_the_same_dump() {
        let stored = populated();
        let first = stored.to_json();
        for key in OWN_KEYS {
            assert!(
                serde_json::to_value(&stored.state)
                    .unwrap()
                    .get(key)
                    .is_none(),
                "State has a field named {key:?}, which the format uses for itself"
            );
        }
        let loaded = Stored::from_slice(&stored.to_vec(), Versioned::Required).unwrap();
        let mut second = loaded.to_json();
        assert_eq!(second["operations"], json!([]), "operations are not loaded");
        second["operations"] = first["operations"].clone();
        assert_eq!(first, second);
    }

    #[test]
    fn another_format_version_is_refused_with_a_clear_message() {
        let mut dump = populated().to_json();
        for (version, says) in [
            (
                json!(FORMAT_VERSION + 1),
                "is newer than this fake-incus reads",
            ),
            (json!(0), "is older than this fake-incus reads"),
            (json!("1"), "must be a whole number"),
        ] {
            dump[VERSION_KEY] = version;
            for versioned in [Versioned::Required, Versioned::Optional] {
                let err = Stored::from_json(dump.clone(), versioned)
                    .unwrap_err()
                    .to_string();
                assert!(err.contains(says), "{err}");
            }
        }
        let mut object = dump.as_object().unwrap().clone();
        object.remove(VERSION_KEY);
        let err = Stored::from_json(Value::Object(object.clone()), Versioned::Required)
            .unwrap_err()
            .to_string();
        assert!(err.contains("no format_version"), "{err}");
        assert!(Stored::from_json(Value::Object(object), Versioned::Optional).is_ok());
    }
}
