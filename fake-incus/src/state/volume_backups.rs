//! Backups of custom storage volumes: what `GET .../volumes/custom/{vol}/backups/{name}` shows,
//! and where the backup's tarball is kept.

use super::files::Files;
use super::{clock, url, State};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// The instance slot of the files' backup table that holds the volume backups' tarballs (no
/// instance name has a slash, so none collides); each tarball is keyed there by its backup's
/// [`VolumeBackup::tarball`], which neither a rename of the backup nor of its volume changes.
pub(crate) const TARBALLS: &str = "/volume-backups";

/// A backup of the custom volume `volume` of `project` in `pool`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct VolumeBackup {
    pub(crate) pool: String,
    pub(crate) project: String,
    pub(crate) volume: String,
    pub(crate) name: String,
    #[serde(default = "clock::now")]
    pub(crate) created_at: String,
    #[serde(default = "zero")]
    pub(crate) expires_at: String,
    #[serde(default)]
    pub(crate) volume_only: bool,
    #[serde(default)]
    pub(crate) optimized_storage: bool,
    /// The key of its tarball under [`TARBALLS`] in the files.
    pub(crate) tarball: String,
}

fn zero() -> String {
    clock::ZERO_TIME.into()
}

impl VolumeBackup {
    pub(crate) fn url(&self) -> String {
        url(
            &format!(
                "/1.0/storage-pools/{}/volumes/custom/{}/backups/{}",
                self.pool, self.volume, self.name
            ),
            &self.project,
        )
    }

    /// Whether it belongs to that volume.
    pub(crate) fn of(&self, pool: &str, project: &str, volume: &str) -> bool {
        self.pool == pool && self.project == project && self.volume == volume
    }

    /// The API object.
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "name": self.name,
            "created_at": self.created_at,
            "expires_at": self.expires_at,
            "volume_only": self.volume_only,
            "optimized_storage": self.optimized_storage,
        })
    }
}

/// When a volume is deleted: its backups go, their tarballs too.
pub(crate) fn forget(state: &mut State, files: &mut Files, pool: &str, owner: &str, name: &str) {
    state.volume_backups.retain(|b| {
        let gone = b.of(pool, owner, name);
        if gone {
            files.set_backup(owner, TARBALLS, &b.tarball, None);
        }
        !gone
    });
}

/// After a volume was renamed: its backups follow (their tarballs are keyed apart from it).
pub(crate) fn follow_rename(state: &mut State, pool: &str, owner: &str, old: &str, new: &str) {
    for b in &mut state.volume_backups {
        if b.of(pool, owner, old) {
            b.volume = new.to_owned();
        }
    }
}
