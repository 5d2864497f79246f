//! The state of a fresh fake daemon, modelled on a freshly initialised real one: project
//! `default`, profile `default` with a root disk on the dir pool `default`, the loopback
//! network `lo`, and a busybox image with alias `busybox`.

use super::images::Alias;
use super::{clock, Image, Network, Pool, Profile, Project, State, StringMap};
use sha2::{Digest, Sha256};

pub(super) fn state() -> State {
    State {
        server_config: StringMap::new(),
        projects: vec![default_project()],
        profiles: vec![default_profile()],
        networks: vec![Network {
            name: "lo".into(),
            description: String::new(),
            kind: "loopback".into(),
            managed: false,
            project: "default".into(),
            config: StringMap::new(),
        }],
        storage_pools: vec![Pool {
            name: "default".into(),
            driver: "dir".into(),
            description: String::new(),
            config: map(&[("source", "/var/lib/incus/storage-pools/default")]),
        }],
        storage_volumes: Vec::new(),
        images: vec![busybox_image()],
        instances: Vec::new(),
        objects: std::collections::BTreeMap::new(),
        cluster: None,
        volume_snapshots: Vec::new(),
        volume_backups: Vec::new(),
    }
}

fn default_project() -> Project {
    let features = [
        "features.images",
        "features.networks",
        "features.networks.zones",
        "features.profiles",
        "features.storage.buckets",
        "features.storage.volumes",
    ];
    Project {
        name: "default".into(),
        description: "Default Incus project".into(),
        config: features
            .iter()
            .map(|f| (f.to_string(), "true".to_string()))
            .collect(),
    }
}

fn default_profile() -> Profile {
    Profile {
        project: "default".into(),
        name: "default".into(),
        description: "Default Incus profile".into(),
        config: StringMap::new(),
        devices: [(
            "root".to_string(),
            map(&[("path", "/"), ("pool", "default"), ("type", "disk")]),
        )]
        .into_iter()
        .collect(),
    }
}

/// The fingerprint of the built-in busybox image (stable across runs).
pub(crate) fn busybox_fingerprint() -> String {
    hex::encode(Sha256::digest(b"fake-incus busybox image"))
}

fn busybox_image() -> Image {
    let now = clock::now();
    Image {
        project: "default".into(),
        fingerprint: busybox_fingerprint(),
        properties: map(&[
            ("description", "busybox test image"),
            ("os", "busybox"),
            ("release", "1"),
        ]),
        aliases: vec![Alias {
            name: "busybox".into(),
            description: String::new(),
        }],
        public: false,
        profiles: super::images::default_profiles(),
        auto_update: false,
        architecture: "x86_64".into(),
        filename: "rootfs.tar.gz".into(),
        size: 1_031_679,
        kind: "container".into(),
        created_at: now.clone(),
        uploaded_at: now,
        last_used_at: clock::ZERO_TIME.into(),
        expires_at: clock::ZERO_TIME.into(),
        executables: None,
    }
}

fn map(pairs: &[(&str, &str)]) -> StringMap {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
