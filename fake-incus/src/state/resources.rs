//! Projects, profiles, networks, storage pools and custom storage volumes. Each renders itself
//! as the daemon's object and computes the daemon's ETag; [`State`] answers which objects use a
//! project or a volume (what the daemon refuses to delete while in use).

use super::{etag, url, Devices, State, StringMap};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// An Incus project.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Project {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: String,
    #[serde(default)]
    pub(crate) config: StringMap,
}

impl Project {
    pub(crate) fn to_json(&self, state: &State) -> Value {
        json!({
            "config": self.config, "description": self.description, "name": self.name,
            "used_by": project_used_by(state, &self.name),
        })
    }
}

fn project_used_by(state: &State, project: &str) -> Vec<String> {
    let instances = state
        .instances
        .iter()
        .filter(|i| i.project == project)
        .map(|i| url(&format!("/1.0/instances/{}", i.name), project));
    let images = state
        .images
        .iter()
        .filter(|i| i.project == project)
        .map(|i| url(&format!("/1.0/images/{}", i.fingerprint), project));
    let profiles = state
        .profiles
        .iter()
        .filter(|p| p.project == project)
        .map(|p| url(&format!("/1.0/profiles/{}", p.name), project));
    let volumes = state
        .storage_volumes
        .iter()
        .filter(|v| v.project == project)
        .map(Volume::url);
    instances
        .chain(images)
        .chain(profiles)
        .chain(volumes)
        .collect()
}

/// The project features, in the daemon's order (`cluster.ProjectFeatures`).
pub(crate) const PROJECT_FEATURES: &[&str] = &[
    "features.images",
    "features.profiles",
    "features.storage.volumes",
    "features.storage.buckets",
    "features.networks",
    "features.networks.zones",
];

/// The features a new project gets when its request does not set them (Incus 6.0.4).
pub(crate) const NEW_PROJECT_FEATURES: &[&str] = &[
    "features.images",
    "features.profiles",
    "features.storage.buckets",
    "features.storage.volumes",
];

/// A profile.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Profile {
    #[serde(default = "default_project")]
    pub(crate) project: String,
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: String,
    #[serde(default)]
    pub(crate) config: StringMap,
    #[serde(default)]
    pub(crate) devices: Devices,
}

impl Profile {
    pub(crate) fn to_json(&self, state: &State) -> Value {
        let used_by: Vec<String> = state
            .instances
            .iter()
            .filter(|i| {
                state.profile_project(&i.project) == self.project && i.profiles.contains(&self.name)
            })
            .map(|i| url(&format!("/1.0/instances/{}", i.name), &i.project))
            .collect();
        json!({
            "config": self.config, "description": self.description, "devices": self.devices,
            "name": self.name, "used_by": used_by, "project": self.project,
        })
    }
    /// The object as embedded in an instance ETag (`used_by` is null there).
    pub(crate) fn etag_object(&self) -> Value {
        json!({
            "config": self.config, "description": self.description, "devices": self.devices,
            "name": self.name, "used_by": null, "project": self.project,
        })
    }
    /// The `default` profile the daemon creates with a project that has `features.profiles`.
    pub(crate) fn project_default(project: &str) -> Self {
        Self {
            project: project.into(),
            name: "default".into(),
            description: format!("Default Incus profile for project {project}"),
            config: StringMap::new(),
            devices: Devices::new(),
        }
    }
}

/// A network (managed or a host interface).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Network {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: String,
    #[serde(rename = "type")]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) managed: bool,
    #[serde(default)]
    pub(crate) config: StringMap,
    /// The project that owns it (`default` unless its project has `features.networks`).
    #[serde(default = "default_project")]
    pub(crate) project: String,
}

impl Network {
    pub(crate) fn to_json(&self) -> Value {
        let (status, locations) = if self.managed {
            ("Created", json!(["none"]))
        } else {
            ("", Value::Null)
        };
        json!({
            "config": self.config, "description": self.description, "name": self.name,
            "type": self.kind, "used_by": [], "managed": self.managed, "status": status,
            "locations": locations, "project": self.project,
        })
    }
    pub(crate) fn etag(&self) -> String {
        etag::hash(&json!([
            self.name,
            self.managed,
            self.kind,
            self.description,
            self.config
        ]))
    }
}

/// A storage pool.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Pool {
    pub(crate) name: String,
    #[serde(default = "dir_driver")]
    pub(crate) driver: String,
    #[serde(default)]
    pub(crate) description: String,
    #[serde(default)]
    pub(crate) config: StringMap,
}

impl Pool {
    pub(crate) fn to_json(&self, state: &State) -> Value {
        let mut used_by: Vec<String> = state
            .instances
            .iter()
            .filter(|i| i.pool(state).as_deref() == Some(self.name.as_str()))
            .map(|i| url(&format!("/1.0/instances/{}", i.name), &i.project))
            .collect();
        used_by.extend(
            state
                .profiles
                .iter()
                .filter(|p| {
                    p.devices
                        .values()
                        .any(|d| d.get("pool") == Some(&self.name))
                })
                .map(|p| url(&format!("/1.0/profiles/{}", p.name), &p.project)),
        );
        used_by.extend(
            state
                .storage_volumes
                .iter()
                .filter(|v| v.pool == self.name)
                .map(Volume::url),
        );
        json!({
            "config": self.config, "description": self.description, "name": self.name,
            "driver": self.driver, "used_by": used_by, "status": "Created", "locations": ["none"],
        })
    }
    pub(crate) fn etag(&self) -> String {
        etag::hash(&json!([
            self.name,
            self.driver,
            self.description,
            self.config
        ]))
    }
}

/// A custom storage volume (instance volumes are derived from the instances).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Volume {
    #[serde(default = "default_pool")]
    pub(crate) pool: String,
    #[serde(default = "default_project")]
    pub(crate) project: String,
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: String,
    #[serde(default)]
    pub(crate) config: StringMap,
    #[serde(default = "super::clock::now")]
    pub(crate) created_at: String,
    /// `filesystem` (the default) or `block` (`--type block`: the volume is one raw disk).
    #[serde(default = "filesystem")]
    pub(crate) content_type: String,
}

fn filesystem() -> String {
    "filesystem".to_owned()
}

impl Volume {
    /// The volume's URL (`?project=` outside `default`).
    pub(crate) fn url(&self) -> String {
        url(
            &format!(
                "/1.0/storage-pools/{}/volumes/custom/{}",
                self.pool, self.name
            ),
            &self.project,
        )
    }
    /// Whether a device attaches this volume (`type=disk pool=POOL source=NAME`).
    fn attached_by(&self, device: &StringMap) -> bool {
        device.get("type").map(String::as_str) == Some("disk")
            && device.get("pool") == Some(&self.pool)
            && device.get("source") == Some(&self.name)
    }
}

/// A storage volume as listed: custom volumes, instance volumes and their snapshots.
#[derive(Debug, Clone)]
pub(crate) struct VolumeView {
    pub(crate) project: String,
    pub(crate) kind: String,
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) config: StringMap,
    pub(crate) used_by: Vec<String>,
    pub(crate) created_at: String,
    pub(crate) content_type: String,
}

impl VolumeView {
    /// Whether this is a snapshot (`NAME/SNAPSHOT`).
    pub(crate) fn is_snapshot(&self) -> bool {
        self.name.contains('/')
    }
    pub(crate) fn url(&self, pool: &str) -> String {
        let path = match self.name.split_once('/') {
            Some((parent, snap)) => {
                format!(
                    "/1.0/storage-pools/{pool}/volumes/{}/{parent}/snapshots/{snap}",
                    self.kind
                )
            }
            None => format!(
                "/1.0/storage-pools/{pool}/volumes/{}/{}",
                self.kind, self.name
            ),
        };
        url(&path, &self.project)
    }
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "config": self.config, "description": self.description, "name": self.name,
            "type": self.kind, "used_by": self.used_by, "location": "none",
            "content_type": self.content_type, "project": self.project, "created_at": self.created_at,
        })
    }
    pub(crate) fn etag(&self) -> String {
        etag::hash(&json!([self.name, self.kind, self.config]))
    }
}

impl State {
    /// Every volume of a pool in a project: instance volumes (and snapshots), then custom ones
    /// (and theirs), as `storage_volumes_all` holds them.
    pub(crate) fn volumes(&self, pool: &str, project: &str) -> Vec<VolumeView> {
        let mut out = Vec::new();
        for instance in self.instances.iter().filter(|i| i.project == project) {
            if instance.pool(self).as_deref() != Some(pool) {
                continue;
            }
            out.push(VolumeView {
                project: project.into(),
                kind: instance.kind.clone(),
                name: instance.name.clone(),
                description: String::new(),
                config: StringMap::new(),
                used_by: vec![url(&format!("/1.0/instances/{}", instance.name), project)],
                created_at: instance.created_at.clone(),
                content_type: filesystem(),
            });
            for snapshot in &instance.snapshots {
                out.push(VolumeView {
                    project: project.into(),
                    kind: instance.kind.clone(),
                    name: format!("{}/{}", instance.name, snapshot.name),
                    description: String::new(),
                    config: StringMap::new(),
                    used_by: vec![],
                    created_at: snapshot.created_at.clone(),
                    content_type: filesystem(),
                });
            }
        }
        let custom_project = self.volume_project(project);
        for v in self
            .storage_volumes
            .iter()
            .filter(|v| v.pool == pool && v.project == custom_project)
        {
            out.push(VolumeView {
                project: v.project.clone(),
                kind: "custom".into(),
                name: v.name.clone(),
                description: v.description.clone(),
                config: v.config.clone(),
                used_by: self.volume_used_by(v),
                created_at: v.created_at.clone(),
                content_type: v.content_type.clone(),
            });
            // A snapshot read as a volume: no config of its own, used by nothing.
            let snapshots = self
                .volume_snapshots
                .iter()
                .filter(|s| s.pool == pool && s.project == v.project && s.volume == v.name);
            out.extend(snapshots.map(|s| VolumeView {
                project: v.project.clone(),
                kind: "custom".into(),
                name: format!("{}/{}", v.name, s.name),
                description: s.description.clone(),
                config: StringMap::new(),
                used_by: vec![],
                created_at: s.created_at.clone(),
                content_type: v.content_type.clone(),
            }));
        }
        out
    }

    /// The project whose custom volumes `project` uses (`features.storage.volumes=false` ->
    /// `default`).
    pub(crate) fn volume_project(&self, project: &str) -> String {
        self.feature_project(project, "features.storage.volumes")
    }

    /// A custom volume of a pool as seen from `project`.
    pub(crate) fn custom_volume(&self, pool: &str, project: &str, name: &str) -> Option<&Volume> {
        let owner = self.volume_project(project);
        self.storage_volumes
            .iter()
            .find(|v| v.pool == pool && v.project == owner && v.name == name)
    }

    /// The instances (their own devices or their profiles' ones) and the profiles that attach
    /// a custom volume, as URLs: instances first, as the daemon lists them.
    pub(crate) fn volume_used_by(&self, volume: &Volume) -> Vec<String> {
        let instances = self
            .volume_instances(volume)
            .map(|i| url(&format!("/1.0/instances/{}", i.name), &i.project));
        let profiles = self
            .profiles
            .iter()
            .filter(|p| self.volume_project(&p.project) == volume.project)
            .filter(|p| p.devices.values().any(|d| volume.attached_by(d)))
            .map(|p| url(&format!("/1.0/profiles/{}", p.name), &p.project));
        instances.chain(profiles).collect()
    }

    /// The instances that attach a custom volume, by their own devices or their profiles'.
    pub(crate) fn volume_instances<'a>(
        &'a self,
        volume: &'a Volume,
    ) -> impl Iterator<Item = &'a super::Instance> + 'a {
        self.instances
            .iter()
            .filter(|i| self.volume_project(&i.project) == volume.project)
            .filter(|i| {
                i.devices.values().any(|d| volume.attached_by(d))
                    || self
                        .profiles_of(i)
                        .iter()
                        .any(|p| p.devices.values().any(|d| volume.attached_by(d)))
            })
            .map(|i| &**i)
    }

    /// Whether a project holds nothing but its own `default` profile (the daemon's
    /// `projectIsEmpty`: only such a project may be renamed, deleted or lose a feature).
    pub(crate) fn project_is_empty(&self, project: &str) -> bool {
        let used_by = project_used_by(self, project);
        let default_profile = url("/1.0/profiles/default", project);
        used_by.iter().all(|u| *u == default_profile)
    }
}

fn default_project() -> String {
    "default".into()
}
fn default_pool() -> String {
    "default".into()
}
fn dir_driver() -> String {
    "dir".into()
}
