//! `fake-incus capture`: read an Incus (a real daemon, or a fake) with `GET`s only and write
//! a seed in the state format that makes the fake answer like it: server config (secrets left
//! out), projects, profiles, networks, storage pools and custom volumes, images (metadata),
//! instances with config, devices, power state and snapshots, and each instance's cluster
//! member when the server is clustered.
//!
//! Only what the fake holds is captured; the instances' files, network sub-resources,
//! certificates and cluster members are not (yet). A resource that disappears while the
//! capture runs (another client deleting it) is skipped.

use crate::client::{self, Request};
use crate::pattern::glob_match;
use crate::state::stored::{Stored, Versioned, FORMAT_VERSION};
use serde_json::{json, Map, Value};
use std::path::Path;

/// What to capture.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct CaptureOptions {
    /// Only this project (and the `default` project's entry and what it lends: its profiles or
    /// images when the project does not have its own). `None`: every project.
    pub project: Option<String>,
    /// Only the instances whose names match this glob (`*` any run of characters). `None`: all.
    pub instances: Option<String>,
}

impl CaptureOptions {
    /// Every project, every instance.
    pub fn new() -> Self {
        Self::default()
    }

    /// Only `project` (plus the `default` project's entry and what it lends).
    pub fn project(mut self, project: impl Into<String>) -> Self {
        self.project = Some(project.into());
        self
    }

    /// Only the instances whose names match `glob`.
    pub fn instances(mut self, glob: impl Into<String>) -> Self {
        self.instances = Some(glob.into());
        self
    }
}

/// Why a capture failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaptureError {
    /// The socket could not be reached, or an answer was not HTTP.
    #[error("GET {path}: {message}")]
    Transport {
        /// The path asked.
        path: String,
        /// What went wrong.
        message: String,
    },
    /// The server answered with an error.
    #[error("GET {path}: {status} {message}")]
    Status {
        /// The path asked.
        path: String,
        /// The HTTP status.
        status: u16,
        /// The Incus error text.
        message: String,
    },
    /// An answer did not have the shape of the Incus API.
    #[error("GET {path}: unexpected answer: {problem}")]
    Shape {
        /// The path asked.
        path: String,
        /// What was unexpected.
        problem: String,
    },
    /// The capture is not a state the fake can load (a resource it cannot hold).
    #[error("the capture does not load as a seed: {0}")]
    NotLoadable(String),
}

/// Server config keys left out of a capture: they hold secrets.
fn is_secret(key: &str) -> bool {
    ["password", "secret", "token"]
        .iter()
        .any(|word| key.contains(word))
        || key.ends_with(".key")
}

/// One `GET`; `None` when the resource is gone (404).
async fn get(socket: &Path, path: &str) -> Result<Option<Value>, CaptureError> {
    let reply = client::send(socket, Request::get(path))
        .await
        .map_err(|e| CaptureError::Transport {
            path: path.into(),
            message: e.to_string(),
        })?;
    match reply.status() {
        200 => Ok(Some(reply.metadata().clone())),
        404 => Ok(None),
        status => Err(CaptureError::Status {
            path: path.into(),
            status,
            message: reply
                .native_error()
                .map(|(_, text)| text.to_string())
                .unwrap_or_default(),
        }),
    }
}

/// A recursive list (`?recursion=1`) as objects; a missing list (404) is empty.
async fn list(socket: &Path, path: &str) -> Result<Vec<Map<String, Value>>, CaptureError> {
    match get(socket, path).await? {
        None => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .into_iter()
            .map(|item| match item {
                Value::Object(object) => Ok(object),
                other => Err(CaptureError::Shape {
                    path: path.into(),
                    problem: format!("a list item is not an object: {other}"),
                }),
            })
            .collect(),
        Some(other) => Err(CaptureError::Shape {
            path: path.into(),
            problem: format!("not a list: {other}"),
        }),
    }
}

/// The named fields of `object`, those present.
fn pick(object: &Map<String, Value>, keys: &[&str]) -> Map<String, Value> {
    keys.iter()
        .filter_map(|key| object.get(*key).map(|v| (key.to_string(), v.clone())))
        .collect()
}

fn text<'a>(object: &'a Map<String, Value>, key: &str) -> &'a str {
    object.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn query(project: &str) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .append_pair("recursion", "1")
        .append_pair("project", project)
        .finish()
}

fn segment(name: &str) -> String {
    percent_encoding::utf8_percent_encode(name, percent_encoding::NON_ALPHANUMERIC).to_string()
}

/// Reads the Incus behind `socket` with `GET`s only and returns a seed in the state format
/// (checked to load).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use fake_incus::{capture, CaptureOptions, FakeIncus};
/// let seed = serde_json::json!({"instances": [{"name": "c1", "status": "Running"}]});
/// let fake = FakeIncus::builder().state(seed).start().await?;
/// let captured = capture(fake.unix_socket(), &CaptureOptions::new()).await?;
/// assert_eq!(captured["instances"][0]["name"], "c1");
/// assert!(fake.journal().iter().all(|entry| entry.method == "GET"));
/// # Ok(()) }
/// ```
pub async fn capture(socket: &Path, options: &CaptureOptions) -> Result<Value, CaptureError> {
    let server = get(socket, "/1.0").await?.unwrap_or_default();
    let clustered = server["environment"]["server_clustered"] == json!(true);
    let server_config: Map<String, Value> = server["config"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(key, _)| !is_secret(key))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();

    let mut projects = Vec::new();
    for project in list(socket, "/1.0/projects?recursion=1").await? {
        let name = text(&project, "name");
        if name == "default" || options.project.as_deref().is_none_or(|p| p == name) {
            projects.push(pick(&project, &["name", "description", "config"]));
        }
    }
    let feature = |project: &Map<String, Value>, key: &str| {
        text(project, "name") == "default" || project["config"][key] == json!("true")
    };

    let mut profiles = Vec::new();
    let mut images = Vec::new();
    let mut instances = Vec::new();
    let mut volumes = Vec::new();
    let mut volume_owners: Vec<String> = Vec::new();
    let pools = list(socket, "/1.0/storage-pools?recursion=1").await?;
    for project in &projects {
        let name = text(project, "name");
        let chosen = options.project.as_deref().is_none_or(|p| p == name);
        if feature(project, "features.profiles") {
            for profile in list(socket, &format!("/1.0/profiles?{}", query(name))).await? {
                let mut profile = pick(&profile, &["name", "description", "config", "devices"]);
                profile.insert("project".into(), json!(name));
                profiles.push(profile);
            }
        }
        if feature(project, "features.images") {
            for raw in list(socket, &format!("/1.0/images?{}", query(name))).await? {
                let aliases: Vec<Value> = image_aliases(&raw);
                let mut image = pick(
                    &raw,
                    &[
                        "fingerprint",
                        "properties",
                        "public",
                        "profiles",
                        "auto_update",
                        "architecture",
                        "filename",
                        "size",
                        "type",
                        "created_at",
                        "uploaded_at",
                        "last_used_at",
                        "expires_at",
                    ],
                );
                image.insert("aliases".into(), json!(aliases));
                image.insert("project".into(), json!(name));
                images.push(image);
            }
        }
        if !chosen {
            continue;
        }
        // A project without its own volumes uses the default project's (as for profiles and
        // images); each project's volumes are read once.
        let owner = if feature(project, "features.storage.volumes") {
            name
        } else {
            "default"
        };
        if !volume_owners.contains(&owner.to_string()) {
            volume_owners.push(owner.to_string());
            for pool in &pools {
                let pool_name = text(pool, "name");
                let path = format!(
                    "/1.0/storage-pools/{}/volumes/custom?{}",
                    segment(pool_name),
                    query(owner)
                );
                for volume in list(socket, &path).await? {
                    let mut volume =
                        pick(&volume, &["name", "description", "config", "created_at"]);
                    volume.insert("pool".into(), json!(pool_name));
                    volume.insert("project".into(), json!(owner));
                    volumes.push(volume);
                }
            }
        }
        for instance in list(socket, &format!("/1.0/instances?{}", query(name))).await? {
            let instance_name = text(&instance, "name").to_string();
            let wanted = options
                .instances
                .as_deref()
                .is_none_or(|glob| glob_match(glob.as_bytes(), instance_name.as_bytes()));
            if !wanted {
                continue;
            }
            let path = format!(
                "/1.0/instances/{}/snapshots?{}",
                segment(&instance_name),
                query(name)
            );
            let snapshots: Vec<Map<String, Value>> = list(socket, &path)
                .await?
                .into_iter()
                .map(|snapshot| {
                    let mut kept = pick(
                        &snapshot,
                        &[
                            "created_at",
                            "expires_at",
                            "stateful",
                            "config",
                            "devices",
                            "profiles",
                            "ephemeral",
                            "architecture",
                            "description",
                        ],
                    );
                    let full = text(&snapshot, "name");
                    let short = full.rsplit('/').next().unwrap_or(full);
                    kept.insert("name".into(), json!(short));
                    kept
                })
                .collect();
            let mut kept = pick(
                &instance,
                &[
                    "name",
                    "architecture",
                    "config",
                    "devices",
                    "ephemeral",
                    "profiles",
                    "stateful",
                    "description",
                    "created_at",
                    "last_used_at",
                    "type",
                ],
            );
            let status = match text(&instance, "status") {
                "Running" => "Running",
                "Frozen" => "Frozen",
                _ => "Stopped",
            };
            kept.insert("status".into(), json!(status));
            kept.insert("project".into(), json!(name));
            kept.insert("snapshots".into(), json!(snapshots));
            if clustered {
                kept.insert("location".into(), instance["location"].clone());
            }
            instances.push(kept);
        }
    }
    let networks: Vec<Map<String, Value>> = list(socket, "/1.0/networks?recursion=1")
        .await?
        .iter()
        .map(|n| pick(n, &["name", "description", "type", "managed", "config"]))
        .collect();
    let storage_pools: Vec<Map<String, Value>> = pools
        .iter()
        .map(|p| pick(p, &["name", "driver", "description", "config"]))
        .collect();
    let seed = json!({
        "format_version": FORMAT_VERSION,
        "server_config": server_config,
        "projects": projects,
        "profiles": profiles,
        "networks": networks,
        "storage_pools": storage_pools,
        "storage_volumes": volumes,
        "images": images,
        "instances": instances,
    });
    Stored::from_json(seed.clone(), Versioned::Required)
        .map_err(|e| CaptureError::NotLoadable(e.to_string()))?;
    Ok(seed)
}

/// An image's aliases as the seed holds them (`name`, `description`).
fn image_aliases(image: &Map<String, Value>) -> Vec<Value> {
    image
        .get("aliases")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .map(|alias| Value::Object(pick(alias, &["name", "description"])))
        .collect()
}
