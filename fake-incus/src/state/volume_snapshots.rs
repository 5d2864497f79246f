//! Snapshots of custom storage volumes: what each keeps of its volume when taken.

use super::{clock, url, StringMap};
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

/// A snapshot of the custom volume `volume` of `project` in `pool`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct VolumeSnapshot {
    pub(crate) pool: String,
    pub(crate) project: String,
    pub(crate) volume: String,
    pub(crate) name: String,
    #[serde(default)]
    pub(crate) description: String,
    /// The volume's config when taken (a restore brings it back).
    #[serde(default)]
    pub(crate) config: StringMap,
    #[serde(default = "clock::now")]
    pub(crate) created_at: String,
    /// `None`: never expires.
    #[serde(default)]
    pub(crate) expires_at: Option<String>,
}

impl VolumeSnapshot {
    pub(crate) fn url(&self) -> String {
        url(
            &format!(
                "/1.0/storage-pools/{}/volumes/custom/{}/snapshots/{}",
                self.pool, self.volume, self.name
            ),
            &self.project,
        )
    }

    /// The object of `GET …/snapshots/{name}` (`full`) or of the recursive list, which names it
    /// `volume/snapshot`, has no content type and a `null` expiry when it has none.
    pub(crate) fn to_json(&self, full: bool) -> Value {
        let expires = match (&self.expires_at, full) {
            (Some(at), _) => json!(at),
            (None, true) => json!(clock::ZERO_TIME),
            (None, false) => Value::Null,
        };
        json!({
            "description": self.description, "expires_at": expires,
            "name": if full { self.name.clone() } else { format!("{}/{}", self.volume, self.name) },
            "config": self.config, "content_type": if full { "filesystem" } else { "" },
            "created_at": self.created_at,
        })
    }

    /// The daemon's ETag of a volume snapshot: its description and expiry.
    pub(crate) fn etag(&self) -> String {
        super::etag::hash(&json!([
            self.description,
            self.expires_at.as_deref().unwrap_or(clock::ZERO_TIME)
        ]))
    }
}
