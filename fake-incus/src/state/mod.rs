//! The fake daemon's state: every resource of every project.
//!
//! The state is plain data behind one `std::sync::Mutex` ([`store::StateStore`]), which writers
//! hold briefly (never across an `.await`). Every change publishes an immutable [`Snapshot`] that
//! readers take without waiting for writers and render outside any lock, reusing each instance's
//! JSON until that instance changes. The JSON format of the whole state (these resources, the
//! files and the operations, with its version) is [`stored`]'s.

pub(crate) mod archive;
pub(crate) mod clock;
pub(crate) mod defaults;
pub(crate) mod etag;
pub(crate) mod expiry;
pub(crate) mod files;
pub(crate) mod images;
pub(crate) mod instances;
pub(crate) mod member_records;
pub(crate) mod resources;
pub(crate) mod snapshot;
pub(crate) mod snapshot_names;
pub(crate) mod store;
pub(crate) mod stored;
pub(crate) mod volume_backups;
pub(crate) mod volume_snapshots;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

pub(crate) use images::Image;
pub(crate) use instances::{Instance, PowerState};
pub(crate) use resources::{Network, Pool, Profile, Project, Volume};
pub(crate) use snapshot::Snapshot;

/// A string map as the daemon sends it (sorted keys, like Go maps).
pub(crate) type StringMap = BTreeMap<String, String>;
/// Devices: name -> device config.
pub(crate) type Devices = BTreeMap<String, StringMap>;

/// All resources. Operations live beside it (`crate::operations`), files in [`files::Files`];
/// the state format ([`stored`]) holds all three. Every field is stored through the serde derives.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct State {
    pub(crate) server_config: StringMap,
    pub(crate) projects: Vec<Project>,
    pub(crate) profiles: Vec<Profile>,
    pub(crate) networks: Vec<Network>,
    pub(crate) storage_pools: Vec<Pool>,
    pub(crate) storage_volumes: Vec<Volume>,
    pub(crate) images: Vec<Image>,
    /// Shared with the published snapshots: a change goes through [`Arc::make_mut`] (see
    /// [`State::instance_mut`]), so an instance a snapshot still holds is copied, never changed,
    /// and an unchanged one keeps its address, which is how a snapshot knows its JSON is current.
    pub(crate) instances: Vec<Arc<Instance>>,
    /// Snapshots of custom storage volumes.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) volume_snapshots: Vec<volume_snapshots::VolumeSnapshot>,
    /// Backups of custom storage volumes (their tarballs are kept with the files).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(crate) volume_backups: Vec<volume_backups::VolumeBackup>,
    /// The objects of the declared resources that have no typed list above (network ACLs,
    /// zones, forwards, certificates, warnings, ...), by kind.
    pub(crate) objects: BTreeMap<String, Vec<Object>>,
    /// A cluster's records of its members and groups (none on a standalone daemon).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cluster: Option<member_records::Records>,
}

/// An object of the generic store: where it lives and its JSON as stored.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct Object {
    /// The owning project (`""` for the server's objects).
    #[serde(default)]
    pub(crate) project: String,
    /// The parent's key (`""` for a top-level resource).
    #[serde(default)]
    pub(crate) parent: String,
    pub(crate) value: Value,
}

/// A seed file could not be used.
#[derive(Debug, thiserror::Error)]
#[error("invalid state: {0}")]
pub(crate) struct SeedError(String);

impl State {
    /// The state a fresh daemon has (see STATE.md: project, profile, pool, `lo`, `busybox`).
    pub(crate) fn default_state() -> Self {
        defaults::state()
    }

    /// Parses a seed in the dump format. Missing top-level keys take their default values.
    pub(crate) fn seed(value: Value) -> Result<Self, SeedError> {
        let Value::Object(object) = value else {
            return Err(SeedError("the state must be a JSON object".into()));
        };
        let defaults =
            serde_json::to_value(Self::default_state()).map_err(|e| SeedError(e.to_string()))?;
        let Value::Object(mut merged) = defaults else {
            return Err(SeedError("the default state is not an object".into()));
        };
        // The seed's values are moved, not copied: a seed of 10,000 instances is megabytes.
        for (key, item) in object {
            merged.insert(key, item);
        }
        let state: State =
            serde_json::from_value(Value::Object(merged)).map_err(|e| SeedError(e.to_string()))?;
        state.check()?;
        Ok(state)
    }

    fn check(&self) -> Result<(), SeedError> {
        if !self.projects.iter().any(|p| p.name == "default") {
            return Err(SeedError("project \"default\" is required".into()));
        }
        for instance in &self.instances {
            if self.project(&instance.project).is_none() {
                return Err(SeedError(format!(
                    "instance {:?} names unknown project {:?}",
                    instance.name, instance.project
                )));
            }
        }
        Ok(())
    }

    /// The cluster's records (a fresh cluster's when the state has none).
    pub(crate) fn records(&self) -> std::borrow::Cow<'_, member_records::Records> {
        self.cluster
            .as_ref()
            .map_or_else(Default::default, std::borrow::Cow::Borrowed)
    }

    /// The cluster's records, for a change.
    pub(crate) fn records_mut(&mut self) -> &mut member_records::Records {
        self.cluster.get_or_insert_with(Default::default)
    }

    pub(crate) fn project(&self, name: &str) -> Option<&Project> {
        self.projects.iter().find(|p| p.name == name)
    }

    pub(crate) fn instance(&self, project: &str, name: &str) -> Option<&Instance> {
        self.instances
            .iter()
            .find(|i| i.project == project && i.name == name)
            .map(Arc::as_ref)
    }

    /// The instance, for a change: copied first when a snapshot still shares it.
    pub(crate) fn instance_mut(&mut self, project: &str, name: &str) -> Option<&mut Instance> {
        self.instances
            .iter_mut()
            .find(|i| i.project == project && i.name == name)
            .map(Arc::make_mut)
    }

    /// The project whose profiles `project` uses (`features.profiles=false` -> `default`).
    pub(crate) fn profile_project(&self, project: &str) -> String {
        self.feature_project(project, "features.profiles")
    }

    /// The project whose images `project` uses (`features.images=false` -> `default`).
    pub(crate) fn image_project(&self, project: &str) -> String {
        self.feature_project(project, "features.images")
    }

    /// The project whose objects of a feature `project` uses (`default` unless the feature is on).
    pub(crate) fn feature_project(&self, project: &str, feature: &str) -> String {
        match self.project(project) {
            Some(p) if p.config.get(feature).map(String::as_str) != Some("true") => {
                "default".into()
            }
            _ => project.to_string(),
        }
    }

    pub(crate) fn profile(&self, project: &str, name: &str) -> Option<&Profile> {
        let owner = self.profile_project(project);
        self.profiles
            .iter()
            .find(|p| p.project == owner && p.name == name)
    }

    /// The profiles of an instance, in its order (unknown names skipped).
    pub(crate) fn profiles_of(&self, instance: &Instance) -> Vec<&Profile> {
        instance
            .profiles
            .iter()
            .filter_map(|name| self.profile(&instance.project, name))
            .collect()
    }
}

/// The URL of an object, with `?project=` for non-default projects.
pub(crate) fn url(path: &str, project: &str) -> String {
    if project == "default" {
        path.to_string()
    } else {
        format!("{path}?project={project}")
    }
}
