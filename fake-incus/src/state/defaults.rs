//! The state of a fresh fake daemon, modelled on a freshly initialised real one: project
//! `default`, profile `default` with a root disk on the dir pool `default`, the loopback
//! network `lo`, and a busybox image with alias `busybox`.

use super::archive::{self, Tarball};
use super::files::Tree;
use super::images::Alias;
use super::{clock, Image, Network, Pool, Profile, Project, State, StringMap};
use bytes::Bytes;
use sha2::{Digest, Sha256};
use std::sync::OnceLock;

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
        images: vec![busybox()],
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

/// When the built-in busybox image was made (2023-11-14T22:13:20Z): its metadata's
/// `creation_date`, its `created_at` (the daemon takes it from the metadata) and the time of every
/// entry of its files, fixed so that the files are the same bytes in every run.
const BUSYBOX_MADE: i64 = 1_700_000_000;

/// The files of the built-in busybox image, a split image as the real daemons' test image is: a
/// gzipped tarball of `metadata.yaml` and one of the busybox skeleton. Its fingerprint is the
/// SHA-256 of the two, as the daemon's is, so that a client that exports it finds the hash it
/// checks.
pub(crate) struct BusyboxFiles {
    pub(crate) fingerprint: String,
    pub(crate) metadata: Bytes,
    pub(crate) rootfs: Bytes,
}

/// The built-in busybox image's files, made once per process (a few kilobytes).
pub(crate) fn busybox_files() -> &'static BusyboxFiles {
    static FILES: OnceLock<BusyboxFiles> = OnceLock::new();
    FILES.get_or_init(make_busybox_files)
}

fn make_busybox_files() -> BusyboxFiles {
    {
        // Writing to memory cannot fail; an empty part would only make exports differ.
        let metadata_yaml = serde_yaml_ng::to_string(&busybox_image(String::new()).metadata_json())
            .unwrap_or_default();
        let mut metadata = Tarball::fixed_at(BUSYBOX_MADE as u64);
        let metadata = metadata
            .file("metadata.yaml", metadata_yaml.as_bytes(), 0o644)
            .and_then(|()| metadata.into_tar())
            .and_then(|tar| archive::gzip(&tar))
            .unwrap_or_default();
        let mut rootfs = Tarball::fixed_at(BUSYBOX_MADE as u64);
        let rootfs = rootfs
            .tree(".", &Tree::skeleton())
            .and_then(|()| rootfs.into_tar())
            .and_then(|tar| archive::gzip(&tar))
            .unwrap_or_default();
        let mut hash = Sha256::new();
        hash.update(&metadata);
        hash.update(&rootfs);
        BusyboxFiles {
            fingerprint: hex::encode(hash.finalize()),
            metadata: Bytes::from(metadata),
            rootfs: Bytes::from(rootfs),
        }
    }
}

fn busybox_image(fingerprint: String) -> Image {
    let made = time::OffsetDateTime::from_unix_timestamp(BUSYBOX_MADE)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_else(clock::now);
    Image {
        project: "default".into(),
        fingerprint,
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
        size: 0,
        kind: "container".into(),
        created_at: made,
        uploaded_at: clock::now(),
        last_used_at: clock::ZERO_TIME.into(),
        expires_at: clock::ZERO_TIME.into(),
        executables: None,
    }
}

/// The built-in busybox image, its fingerprint and size those of its files.
fn busybox() -> Image {
    let files = busybox_files();
    Image {
        size: (files.metadata.len() + files.rootfs.len()) as u64,
        ..busybox_image(files.fingerprint.clone())
    }
}

fn map(pairs: &[(&str, &str)]) -> StringMap {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_busybox_image_is_the_same_bytes_in_every_run_and_its_fingerprint_hashes_them() {
        let (one, two) = (make_busybox_files(), make_busybox_files());
        assert_eq!(one.metadata, two.metadata);
        assert_eq!(one.rootfs, two.rootfs);
        let mut hash = Sha256::new();
        hash.update(&one.metadata);
        hash.update(&one.rootfs);
        assert_eq!(one.fingerprint, hex::encode(hash.finalize()));
        assert_eq!(state().images[0].fingerprint, one.fingerprint);
        let names = |gz: &Bytes| -> Vec<String> {
            let tar = flate2::read::GzDecoder::new(gz.as_ref());
            tar::Archive::new(tar)
                .entries()
                .unwrap()
                .map(|e| e.unwrap().path().unwrap().display().to_string())
                .collect()
        };
        assert_eq!(names(&one.metadata), ["metadata.yaml"]);
        assert!(names(&one.rootfs)
            .iter()
            .any(|name| name.trim_start_matches("./") == "bin/busybox"));
    }
}
