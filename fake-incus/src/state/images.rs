//! Images and their aliases.

use super::{clock, etag, StringMap};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// An image alias as embedded in the image.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Alias {
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: String,
}

/// A local image of one project.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Image {
    #[serde(default = "default_project")]
    pub(crate) project: String,
    pub(crate) fingerprint: String,
    #[serde(default)]
    pub(crate) properties: StringMap,
    #[serde(default)]
    pub(crate) aliases: Vec<Alias>,
    #[serde(default)]
    pub(crate) public: bool,
    /// The profiles an instance created from this image gets when its create names none
    /// (`default` unless the upload or the seed says otherwise), as the daemon keeps them.
    #[serde(default = "default_profiles")]
    pub(crate) profiles: Vec<String>,
    #[serde(default)]
    pub(crate) auto_update: bool,
    #[serde(default = "x86_64")]
    pub(crate) architecture: String,
    #[serde(default = "rootfs")]
    pub(crate) filename: String,
    #[serde(default)]
    pub(crate) size: u64,
    #[serde(default = "container", rename = "type")]
    pub(crate) kind: String,
    #[serde(default = "clock::now")]
    pub(crate) created_at: String,
    #[serde(default = "clock::now")]
    pub(crate) uploaded_at: String,
    #[serde(default = "zero")]
    pub(crate) last_used_at: String,
    /// When the image expires (`expiry_date` of its `metadata.yaml`); the zero time: never.
    #[serde(default = "zero")]
    pub(crate) expires_at: String,
    /// The executables the image's rootfs holds, as absolute paths (`/bin/sh`, `/usr/bin/env`):
    /// the non-directory entries directly under `bin/`, `sbin/`, `usr/bin/` and `usr/sbin/`,
    /// sorted and without duplicates, as recorded when the image was imported. `None` means the
    /// default busybox set (the seeded test image, or an import whose rootfs the fake could
    /// not read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) executables: Option<Vec<String>>,
}

impl Image {
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "auto_update": self.auto_update, "properties": self.properties, "public": self.public,
            "expires_at": self.expires_at, "profiles": self.profiles, "aliases": self.aliases,
            "architecture": self.architecture, "cached": false, "filename": self.filename,
            "fingerprint": self.fingerprint, "size": self.size, "type": self.kind,
            "created_at": self.created_at, "last_used_at": self.last_used_at,
            "uploaded_at": self.uploaded_at, "project": self.project,
        })
    }
    /// The image's `metadata.yaml` as an instance created from it shows it (`/metadata`).
    pub(crate) fn metadata_json(&self) -> Value {
        let unix = |text: &str| {
            time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
                .map_or(0, |t| t.unix_timestamp().max(0))
        };
        json!({
            "architecture": self.architecture, "creation_date": unix(&self.created_at),
            "expiry_date": unix(&self.expires_at), "properties": self.properties,
            "templates": null,
        })
    }

    pub(crate) fn etag(&self) -> String {
        etag::hash(&json!([self.public, self.auto_update, self.properties]))
    }
    /// The alias entry as `GET /1.0/images/aliases/{name}` shows it.
    pub(crate) fn alias_json(&self, alias: &Alias) -> Value {
        json!({
            "description": alias.description, "target": self.fingerprint,
            "name": alias.name, "type": self.kind,
        })
    }
}

pub(crate) fn default_profiles() -> Vec<String> {
    vec!["default".into()]
}
fn default_project() -> String {
    "default".into()
}
fn x86_64() -> String {
    "x86_64".into()
}
fn rootfs() -> String {
    "rootfs.tar.gz".into()
}
fn container() -> String {
    "container".into()
}
fn zero() -> String {
    clock::ZERO_TIME.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::Instance;

    /// `cmd/incusd/instances_post.go`: a create that names no profiles gets the source image's
    /// `profiles`; an image uploaded or seeded without any has `default`.
    #[test]
    fn an_image_carries_its_profiles_and_an_instance_created_from_it_gets_them() {
        let image: Image = serde_json::from_value(json!({
            "fingerprint": "b".repeat(64), "profiles": ["iso"]
        }))
        .unwrap();
        assert_eq!(image.to_json()["profiles"], json!(["iso"]));
        let instance = Instance::from_image("c1", "default", Some(&image));
        assert_eq!(instance.profiles, ["iso"]);
        let plain: Image = serde_json::from_value(json!({"fingerprint": "c".repeat(64)})).unwrap();
        assert_eq!(plain.to_json()["profiles"], json!(["default"]));
        let empty = Instance::from_image("c2", "default", None);
        assert_eq!(empty.profiles, ["default"]);
    }
}
