//! Instances and their snapshots: the objects, their ETag, their state and power transitions.

use super::{clock, etag, url, Devices, Image, State, StringMap};
use crate::line::{self, IncusLine};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::cmp::Reverse;

const IDMAP: &str = "[{\"Isuid\":true,\"Isgid\":false,\"Hostid\":1000000,\"Nsid\":0,\"Maprange\":1000000000},{\"Isuid\":false,\"Isgid\":true,\"Hostid\":1000000,\"Nsid\":0,\"Maprange\":1000000000}]";

/// Power state of an instance.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
pub(crate) enum PowerState {
    #[default]
    Stopped,
    Running,
    Frozen,
}

impl PowerState {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Stopped => "Stopped",
            Self::Running => "Running",
            Self::Frozen => "Frozen",
        }
    }
    pub(crate) fn code(self) -> u16 {
        match self {
            Self::Stopped => 102,
            Self::Running => 103,
            Self::Frozen => 110,
        }
    }
}

/// An instance (container or virtual machine).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Instance {
    pub(crate) name: String,
    #[serde(default = "default_project")]
    pub(crate) project: String,
    #[serde(default = "x86_64")]
    pub(crate) architecture: String,
    #[serde(default)]
    pub(crate) config: StringMap,
    #[serde(default)]
    pub(crate) devices: Devices,
    #[serde(default)]
    pub(crate) ephemeral: bool,
    #[serde(default = "default_profiles")]
    pub(crate) profiles: Vec<String>,
    #[serde(default)]
    pub(crate) stateful: bool,
    #[serde(default)]
    pub(crate) description: String,
    #[serde(default = "clock::now")]
    pub(crate) created_at: String,
    #[serde(default = "epoch")]
    pub(crate) last_used_at: String,
    #[serde(default)]
    pub(crate) status: PowerState,
    #[serde(default = "container", rename = "type")]
    pub(crate) kind: String,
    #[serde(default)]
    pub(crate) started_at: Option<String>,
    #[serde(default)]
    pub(crate) snapshots: Vec<InstanceSnapshot>,
    /// The cluster member it lives on (`None`: not clustered, `"none"` in the API).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) location: Option<String>,
    /// Its `metadata.yaml` as `/metadata` shows it (`None`: none, as after `--empty`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) metadata: Option<Value>,
    /// Its template files (`/metadata/templates`), by name.
    #[serde(default, skip_serializing_if = "StringMap::is_empty")]
    pub(crate) templates: StringMap,
    /// Its backups (their tarballs are kept with its files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) backups: Vec<Backup>,
}

/// An instance backup as `GET /1.0/instances/{name}/backups/{backup}` shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Backup {
    pub(crate) name: String,
    #[serde(default = "clock::now")]
    pub(crate) created_at: String,
    #[serde(default = "zero")]
    pub(crate) expires_at: String,
    #[serde(default)]
    pub(crate) instance_only: bool,
    #[serde(default)]
    pub(crate) optimized_storage: bool,
}

/// A snapshot: a frozen copy of the instance's writable fields.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct InstanceSnapshot {
    pub(crate) name: String,
    #[serde(default = "clock::now")]
    pub(crate) created_at: String,
    #[serde(default = "zero")]
    pub(crate) expires_at: String,
    #[serde(default)]
    pub(crate) stateful: bool,
    #[serde(default)]
    pub(crate) config: StringMap,
    #[serde(default)]
    pub(crate) devices: Devices,
    #[serde(default = "default_profiles")]
    pub(crate) profiles: Vec<String>,
    #[serde(default)]
    pub(crate) ephemeral: bool,
    #[serde(default = "x86_64")]
    pub(crate) architecture: String,
    /// The snapshot's own description: empty on 6.0, whose daemon neither records nor shows it;
    /// on a line with [`line::SNAPSHOT_DESCRIPTION`], the instance's when it was taken, shown by
    /// the API. A restore gives it to the instance.
    #[serde(default)]
    pub(crate) description: String,
}

impl Instance {
    /// A new stopped instance created from an image, with the keys the daemon writes itself.
    pub(crate) fn from_image(name: &str, project: &str, image: Option<&Image>) -> Self {
        let mut config = StringMap::new();
        if let Some(image) = image {
            for (key, value) in &image.properties {
                config.insert(format!("image.{key}"), value.clone());
            }
            config.insert("volatile.base_image".into(), image.fingerprint.clone());
        }
        let uuid = uuid::Uuid::new_v4().to_string();
        config.insert("volatile.apply_template".into(), "create".into());
        config.insert(
            "volatile.cloud-init.instance-id".into(),
            uuid::Uuid::new_v4().to_string(),
        );
        config.insert("volatile.idmap.base".into(), "0".into());
        config.insert("volatile.idmap.next".into(), IDMAP.into());
        config.insert("volatile.last_state.idmap".into(), "[]".into());
        config.insert("volatile.uuid".into(), uuid.clone());
        config.insert("volatile.uuid.generation".into(), uuid);
        Self {
            name: name.into(),
            project: project.into(),
            architecture: x86_64(),
            config,
            devices: Devices::new(),
            ephemeral: false,
            // Without profiles in the create, the daemon applies the source image's.
            profiles: image.map_or_else(default_profiles, |image| image.profiles.clone()),
            stateful: false,
            description: String::new(),
            created_at: clock::now(),
            last_used_at: epoch(),
            status: PowerState::Stopped,
            kind: image.map(|i| i.kind.clone()).unwrap_or_else(container),
            started_at: None,
            snapshots: Vec::new(),
            location: None,
            metadata: image.map(Image::metadata_json),
            templates: StringMap::new(),
            backups: Vec::new(),
        }
    }

    pub(crate) fn url(&self) -> String {
        url(&format!("/1.0/instances/{}", self.name), &self.project)
    }

    /// Profiles' config, then the local config.
    pub(crate) fn expanded_config(&self, state: &State) -> StringMap {
        let mut out = StringMap::new();
        for profile in state.profiles_of(self) {
            out.extend(profile.config.clone());
        }
        out.extend(self.config.clone());
        out
    }

    /// Profiles' devices, then the local devices.
    pub(crate) fn expanded_devices(&self, state: &State) -> Devices {
        let mut out = Devices::new();
        for profile in state.profiles_of(self) {
            out.extend(profile.devices.clone());
        }
        out.extend(self.devices.clone());
        out
    }

    /// The pool of the root disk.
    pub(crate) fn pool(&self, state: &State) -> Option<String> {
        self.expanded_devices(state)
            .values()
            .find(|d| {
                d.get("type").map(String::as_str) == Some("disk")
                    && d.get("path").map(String::as_str) == Some("/")
            })
            .and_then(|d| d.get("pool").cloned())
    }

    /// The object of `GET /1.0/instances/{name}`.
    pub(crate) fn to_json(&self, state: &State) -> Value {
        json!({
            "architecture": self.architecture, "config": self.config, "devices": self.devices,
            "ephemeral": self.ephemeral, "profiles": self.profiles, "stateful": self.stateful,
            "description": self.description, "created_at": self.created_at,
            "expanded_config": self.expanded_config(state),
            "expanded_devices": self.expanded_devices(state), "name": self.name,
            "status": self.status.name(), "status_code": self.status.code(),
            "last_used_at": self.last_used_at,
            "location": self.location.as_deref().unwrap_or("none"), "type": self.kind,
            "project": self.project,
        })
    }

    /// The object plus `state`, `snapshots` and `backups` (recursion 2 / instance full).
    pub(crate) fn to_full_json(&self, state: &State, line: IncusLine) -> Value {
        let mut value = self.to_json(state);
        let snapshots: Vec<Value> = self
            .snapshots
            .iter()
            .map(|s| s.to_json(self, state, line))
            .collect();
        if let Some(object) = value.as_object_mut() {
            object.insert(
                "backups".into(),
                if self.backups.is_empty() {
                    Value::Null
                } else {
                    json!(self.backups)
                },
            );
            object.insert("state".into(), self.state_json(line));
            object.insert(
                "snapshots".into(),
                if snapshots.is_empty() {
                    Value::Null
                } else {
                    Value::Array(snapshots)
                },
            );
        }
        value
    }

    /// The daemon's instance ETag (reference §5.2).
    pub(crate) fn etag(&self, state: &State) -> String {
        let profiles: Vec<Value> = state
            .profiles_of(self)
            .iter()
            .map(|p| p.etag_object())
            .collect();
        let mut devices: Vec<(&String, &StringMap)> = self.devices.iter().collect();
        devices.sort_by_key(|(name, device)| device_order(name, device));
        let devices: Vec<Value> = devices
            .into_iter()
            .map(|(name, config)| json!({"Name": name, "Config": config}))
            .collect();
        let mut x = vec![
            json!(arch_id(&self.architecture)),
            json!(self.ephemeral),
            json!(profiles),
            json!(devices),
        ];
        x.extend(self.config.iter().map(|(k, v)| json!(format!("{k}={v}"))));
        etag::hash(&x)
    }

    /// The object of `GET /1.0/instances/{name}/state`, as the daemon of `line` shows it.
    pub(crate) fn state_json(&self, line: IncusLine) -> Value {
        let running = self.status != PowerState::Stopped;
        let network = if running && line.has_extension(line::NETWORK_STATE_NEEDS_NETNSID) {
            json!({})
        } else if running {
            json!({"lo": {
                "addresses": [],
                "counters": {"bytes_received": 0, "bytes_sent": 0, "packets_received": 0,
                    "packets_sent": 0, "errors_received": 0, "errors_sent": 0,
                    "packets_dropped_outbound": 0, "packets_dropped_inbound": 0},
                "hwaddr": "", "host_name": "", "mtu": 65536, "state": "down", "type": "loopback"}})
        } else {
            Value::Null
        };
        let (usage, total) = if running {
            (393_216, 1_073_741_824_u64)
        } else {
            (0, 0)
        };
        json!({
            "status": self.status.name(), "status_code": self.status.code(), "disk": {},
            "memory": {"usage": usage, "usage_peak": usage, "total": total, "swap_usage": 0, "swap_usage_peak": 0},
            "network": network,
            "pid": if running { 1000 + self.name.len() as u64 } else { 0 },
            "processes": if running { 1 } else { 0 },
            "cpu": {"usage": if running { 1_000_000 } else { 0 }, "allocated_time": if running { 2_000_000_000_u64 } else { 0 }},
            "started_at": self.started_at.clone().unwrap_or_else(zero),
            "os_info": null,
        })
    }

    /// Stopped -> running, with the `volatile.*` rewrites the daemon does.
    pub(crate) fn power_on(&mut self) {
        let now = clock::now();
        self.status = PowerState::Running;
        self.started_at = Some(now.clone());
        self.last_used_at = now;
        self.config.remove("volatile.apply_template");
        self.config
            .insert("volatile.idmap.current".into(), IDMAP.into());
        self.config
            .insert("volatile.last_state.power".into(), "RUNNING".into());
    }

    /// Running or frozen -> stopped.
    pub(crate) fn power_off(&mut self) {
        self.status = PowerState::Stopped;
        self.started_at = None;
        self.config
            .insert("volatile.last_state.power".into(), "STOPPED".into());
        // The daemon records at every stop that the instance has not reported ready since
        // (measured on Incus 6.0.4: a stopped instance's config has it, a started one's not).
        self.config
            .insert("volatile.last_state.ready".into(), "false".into());
    }

    pub(crate) fn snapshot(&self, name: &str) -> Option<&InstanceSnapshot> {
        self.snapshots.iter().find(|s| s.name == name)
    }

    /// A snapshot of the current writable fields.
    pub(crate) fn take_snapshot(
        &self,
        name: &str,
        stateful: bool,
        expires_at: Option<String>,
    ) -> InstanceSnapshot {
        InstanceSnapshot {
            name: name.into(),
            created_at: clock::now(),
            expires_at: expires_at.unwrap_or_else(zero),
            stateful,
            config: self.config.clone(),
            devices: self.devices.clone(),
            profiles: self.profiles.clone(),
            ephemeral: self.ephemeral,
            architecture: self.architecture.clone(),
            description: String::new(),
        }
    }

    /// Brings config, devices, description, ephemeral and architecture back from a snapshot, as the
    /// daemon does; the power state, the profiles and `stateful` are kept (the daemon keeps the
    /// instance's profiles on restore).
    pub(crate) fn restore(&mut self, snapshot: &InstanceSnapshot) {
        let power = self.config.get("volatile.last_state.power").cloned();
        self.config = snapshot.config.clone();
        match power {
            Some(power) => self
                .config
                .insert("volatile.last_state.power".into(), power),
            None => self.config.remove("volatile.last_state.power"),
        };
        self.devices = snapshot.devices.clone();
        self.ephemeral = snapshot.ephemeral;
        self.description = snapshot.description.clone();
        self.architecture = snapshot.architecture.clone();
    }

    /// The name of a snapshot taken without one: the expanded `snapshots.pattern` rendered now
    /// and indexed against this instance's snapshots ([`super::snapshot_names`]).
    pub(crate) fn next_snapshot_name(
        &self,
        state: &State,
    ) -> Result<String, super::snapshot_names::PatternError> {
        let config = self.expanded_config(state);
        let pattern = config.get("snapshots.pattern").map(String::as_str);
        super::snapshot_names::next_instance_snapshot_name(
            super::snapshot_names::pattern_or_default(pattern),
            time::OffsetDateTime::now_utc(),
            self.snapshots.iter().map(|s| s.name.as_str()),
        )
    }
}

impl InstanceSnapshot {
    pub(crate) fn url(&self, instance: &Instance) -> String {
        url(
            &format!("/1.0/instances/{}/snapshots/{}", instance.name, self.name),
            &instance.project,
        )
    }

    /// The snapshot as the daemon of `line` shows it.
    pub(crate) fn to_json(&self, instance: &Instance, state: &State, line: IncusLine) -> Value {
        let view = Instance {
            config: self.config.clone(),
            devices: self.devices.clone(),
            profiles: self.profiles.clone(),
            ..instance.clone()
        };
        let mut json = json!({
            "expires_at": self.expires_at, "architecture": self.architecture, "config": self.config,
            "created_at": self.created_at, "devices": self.devices, "ephemeral": self.ephemeral,
            "expanded_config": view.expanded_config(state),
            "expanded_devices": view.expanded_devices(state), "last_used_at": zero(),
            "name": self.name, "profiles": self.profiles, "stateful": self.stateful, "size": -1,
        });
        if line.has_extension(line::SNAPSHOT_DESCRIPTION) {
            json["description"] = json!(self.description);
        }
        json
    }

    pub(crate) fn etag(&self) -> String {
        etag::hash(&[&self.expires_at])
    }
}

/// Device order in the instance ETag: nics, then disks (root first, then by path), then other
/// types in descending type order, then by name.
fn device_order(name: &str, device: &StringMap) -> (u8, Reverse<String>, String, String) {
    let kind = device.get("type").cloned().unwrap_or_default();
    match kind.as_str() {
        "nic" => (0, Reverse(String::new()), String::new(), name.to_string()),
        "disk" => {
            let path = device.get("path").cloned().unwrap_or_default();
            (1, Reverse(String::new()), path, name.to_string())
        }
        _ => (2, Reverse(kind), String::new(), name.to_string()),
    }
}

fn arch_id(architecture: &str) -> u8 {
    match architecture {
        "i686" => 1,
        "x86_64" => 2,
        "armv7l" => 3,
        "aarch64" => 4,
        "ppc" => 5,
        "ppc64" => 6,
        "ppc64le" => 7,
        "s390x" => 8,
        "mips" => 9,
        "mips64" => 10,
        "riscv32" => 11,
        "riscv64" => 12,
        _ => 0,
    }
}

fn default_project() -> String {
    "default".into()
}
fn default_profiles() -> Vec<String> {
    vec!["default".into()]
}
fn x86_64() -> String {
    "x86_64".into()
}
fn container() -> String {
    "container".into()
}
fn epoch() -> String {
    clock::EPOCH.into()
}
fn zero() -> String {
    clock::ZERO_TIME.into()
}
