//! `fake-incus capture`: read an Incus (a real daemon, or a fake) with `GET`s only, over its Unix
//! socket or its HTTPS listener (a client certificate, the server certificate pinned: the core's
//! TLS client configuration), and write a seed in the state format that makes the fake answer
//! like it: server config, projects, profiles, networks and everything the fake declares in its
//! generic store (network ACLs, zones and records, forwards, load balancers, peers,
//! integrations, buckets and their keys, certificates, warnings), storage pools and custom
//! volumes, images (metadata, and with `with_image_files` their files), instances with config,
//! devices, power state and snapshots, and when the server is clustered each instance's member
//! and the cluster's records (each member's config, own roles, description, failure domain,
//! groups and whether it is evacuated; the cluster groups).
//!
//! Credentials are replaced by `[redacted]` by the one definition of them that the core uses too
//! (`incus-credentials`: server config keys and URLs, network BGP passwords); certificates are public parts only, as the API shows them.
//! With `with_instance_files`, each captured instance's file tree too, read through the file
//! API (`GET /1.0/instances/{name}/files?path=`), within a byte budget: a capture that would hold
//! more file bytes fails and says where. The API shows a symbolic link's target made absolute,
//! so a relative link comes back absolute; `/proc`, `/sys` and `/dev` (kernel file systems on a
//! running instance) are kept as directories without their entries; an entry the API will not
//! read (a socket, a device) is left out; the snapshots' files are not read (no file API).
//! A resource that disappears while the capture runs is skipped, and a sub-collection its
//! parent does not have (forwards of an unmanaged network) is empty.

use crate::api::resource::{self, Scope};
use crate::client::{Connection, Dialer, Reply, Request, Source};
use crate::pattern::glob_match;
use crate::state::member_records::{database_role, Group, MemberRecord, Records};
use crate::state::stored::{Stored, Versioned, FORMAT_VERSION};
use base64::Engine;
use bytes::Bytes;
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
    /// Also the images' files (`GET /1.0/images/{fingerprint}/export`).
    pub with_image_files: bool,
    /// Also the captured instances' files, at most this many bytes of file content in all.
    /// `None`: not the instances' files.
    pub instance_files_budget: Option<u64>,
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

    /// Also the images' files.
    pub fn with_image_files(mut self) -> Self {
        self.with_image_files = true;
        self
    }

    /// Also the captured instances' files, at most `budget` bytes of file content in all.
    pub fn with_instance_files(mut self, budget: u64) -> Self {
        self.instance_files_budget = Some(budget);
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
    /// The instances' files hold more bytes than the budget allows.
    #[error("the instances' files exceed the budget of {budget} bytes at {project}/{instance}:{path} (raise the budget or narrow the capture with --instances)")]
    FileBudget {
        /// The budget, in bytes of file content.
        budget: u64,
        /// The instance's project.
        project: String,
        /// The instance being read.
        instance: String,
        /// The file that went over the budget.
        path: String,
    },
    /// The HTTPS credentials or URL are not usable.
    #[error("HTTPS: {0}")]
    Tls(String),
}

/// How many connections read the per-instance lists at once.
const PARALLEL: usize = 8;

/// A keep-alive connection to the source, reopened once when it fails (every request is a
/// `GET`, so asking again is harmless).
struct Reader {
    dialer: Dialer,
    connection: Option<Connection>,
}

impl Reader {
    fn new(source: &Source) -> Result<Self, CaptureError> {
        Ok(Self {
            dialer: Dialer::new(source).map_err(CaptureError::Tls)?,
            connection: None,
        })
    }

    async fn connect(&self) -> Result<Connection, String> {
        let stream = self.dialer.open().await?;
        Connection::over(stream).await.map_err(|e| e.to_string())
    }

    /// One `GET`, its whole answer.
    async fn reply(&mut self, path: &str) -> Result<Reply, CaptureError> {
        let transport = |message: String| CaptureError::Transport {
            path: path.into(),
            message,
        };
        for attempt in 0..2 {
            if self.connection.is_none() {
                self.connection = Some(self.connect().await.map_err(transport)?);
            }
            let Some(connection) = self.connection.as_mut() else {
                continue;
            };
            match connection.send(Request::get(path)).await {
                Ok(reply) => return Ok(reply),
                Err(e) if attempt == 1 => return Err(transport(e.to_string())),
                Err(_) => self.connection = None,
            }
        }
        Err(transport("no answer".into()))
    }

    /// One `GET`'s metadata; `None` when the resource is gone (404).
    async fn get(&mut self, path: &str) -> Result<Option<Value>, CaptureError> {
        let reply = self.reply(path).await?;
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
    async fn list(&mut self, path: &str) -> Result<Vec<Map<String, Value>>, CaptureError> {
        objects(path, self.get(path).await?)
    }

    /// Several lists at once, over up to [`PARALLEL`] connections of their own; in order.
    async fn lists(&self, paths: &[String]) -> Result<Vec<Vec<Map<String, Value>>>, CaptureError> {
        let lanes = PARALLEL.min(paths.len()).max(1);
        let lane = |first: usize| {
            let mut sibling = Reader {
                dialer: self.dialer.clone(),
                connection: None,
            };
            let mine: Vec<(usize, String)> = paths
                .iter()
                .cloned()
                .enumerate()
                .skip(first)
                .step_by(lanes)
                .collect();
            async move {
                let mut out = Vec::new();
                for (i, path) in mine {
                    out.push((i, sibling.list(&path).await?));
                }
                Ok::<_, CaptureError>(out)
            }
        };
        let done = futures_util::future::try_join_all((0..lanes).map(lane)).await?;
        let mut all: Vec<(usize, Vec<Map<String, Value>>)> = done.into_iter().flatten().collect();
        all.sort_by_key(|(i, _)| *i);
        Ok(all.into_iter().map(|(_, list)| list).collect())
    }

    /// A list below a parent that may not have it (a bridge's load balancers, an unmanaged
    /// network's forwards): any refusal is an empty list.
    async fn list_below(&mut self, path: &str) -> Result<Vec<Map<String, Value>>, CaptureError> {
        match self.get(path).await {
            Ok(found) => objects(path, found),
            Err(CaptureError::Status { .. }) => Ok(Vec::new()),
            Err(other) => Err(other),
        }
    }
}

/// A list's items as objects (`None`: empty).
fn objects(path: &str, list: Option<Value>) -> Result<Vec<Map<String, Value>>, CaptureError> {
    match list {
        None | Some(Value::Null) => Ok(Vec::new()),
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
    capture_from(&Source::Unix(socket.to_path_buf()), options).await
}

/// Reads the Incus at `source` (its Unix socket, or its HTTPS listener) with `GET`s only and
/// returns a seed in the state format (checked to load); see [`capture`].
pub async fn capture_from(
    source: &Source,
    options: &CaptureOptions,
) -> Result<Value, CaptureError> {
    let mut reader = Reader::new(source)?;
    let mut server = reader.get("/1.0").await?.unwrap_or_default();
    incus_credentials::redact::server(&mut server);
    let clustered = server["environment"]["server_clustered"] == json!(true);
    let server_config = server["config"].as_object().cloned().unwrap_or_default();

    let mut projects = Vec::new();
    for project in reader.list("/1.0/projects?recursion=1").await? {
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
    let pools = reader.list("/1.0/storage-pools?recursion=1").await?;
    for project in &projects {
        let name = text(project, "name");
        let chosen = options.project.as_deref().is_none_or(|p| p == name);
        if feature(project, "features.profiles") {
            for profile in reader
                .list(&format!("/1.0/profiles?{}", query(name)))
                .await?
            {
                let mut profile = pick(&profile, &["name", "description", "config", "devices"]);
                profile.insert("project".into(), json!(name));
                profiles.push(profile);
            }
        }
        if feature(project, "features.images") {
            for raw in reader.list(&format!("/1.0/images?{}", query(name))).await? {
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
                for volume in reader.list(&path).await? {
                    let mut volume =
                        pick(&volume, &["name", "description", "config", "created_at"]);
                    volume.insert("pool".into(), json!(pool_name));
                    volume.insert("project".into(), json!(owner));
                    volumes.push(volume);
                }
            }
        }
        let wanted: Vec<Map<String, Value>> = reader
            .list(&format!("/1.0/instances?{}", query(name)))
            .await?
            .into_iter()
            .filter(|instance| {
                options.instances.as_deref().is_none_or(|glob| {
                    glob_match(glob.as_bytes(), text(instance, "name").as_bytes())
                })
            })
            .collect();
        let paths: Vec<String> = wanted
            .iter()
            .map(|instance| {
                format!(
                    "/1.0/instances/{}/snapshots?{}",
                    segment(text(instance, "name")),
                    query(name)
                )
            })
            .collect();
        let snapshot_lists = reader.lists(&paths).await?;
        for (instance, snapshots) in wanted.into_iter().zip(snapshot_lists) {
            let snapshots: Vec<Map<String, Value>> = snapshots
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
    let networks: Vec<Map<String, Value>> = reader
        .list("/1.0/networks?recursion=1")
        .await?
        .into_iter()
        .map(|network| {
            let mut network = Value::Object(network);
            incus_credentials::redact::network(&mut network);
            let network = network.as_object().cloned().unwrap_or_default();
            pick(
                &network,
                &["name", "description", "type", "managed", "config"],
            )
        })
        .collect();
    let storage_pools: Vec<Map<String, Value>> = pools
        .iter()
        .map(|p| pick(p, &["name", "driver", "description", "config"]))
        .collect();
    let objects = declared_objects(&mut reader, &projects).await?;
    let mut seed = json!({
        "format_version": FORMAT_VERSION,
        "server_config": server_config,
        "projects": projects,
        "profiles": profiles,
        "networks": networks,
        "storage_pools": storage_pools,
        "storage_volumes": volumes,
        "images": images,
        "instances": instances,
        "objects": objects,
    });
    // The version read, so that the seed serves as the line of the daemon it was read from.
    if let Some(version) = server["environment"]["server_version"].as_str() {
        seed[crate::state::stored::INCUS_VERSION_KEY] = json!(version);
    }
    if clustered {
        seed["cluster"] = cluster_records(&mut reader).await?;
    }
    let mut contents = Contents::default();
    let mut files = Map::new();
    if options.with_image_files {
        files.insert(
            "image_files".into(),
            image_files(&mut reader, &images, &mut contents).await?,
        );
    }
    if let Some(budget) = options.instance_files_budget {
        let (trees, places) =
            instance_files(&mut reader, &instances, budget, &mut contents).await?;
        files.insert("trees".into(), trees);
        files.insert("instances".into(), places);
    }
    if !files.is_empty() {
        files.insert("contents".into(), json!(contents.encoded));
        seed["files"] = Value::Object(files);
    }
    Stored::from_json(seed.clone(), Versioned::Required)
        .map_err(|e| CaptureError::NotLoadable(e.to_string()))?;
    Ok(seed)
}

/// A member as `/1.0/cluster/members?recursion=1` lists it (the fields a record is made of).
#[derive(serde::Deserialize)]
struct ListedMember {
    server_name: String,
    config: Option<std::collections::BTreeMap<String, String>>,
    roles: Option<Vec<String>>,
    description: Option<String>,
    failure_domain: Option<String>,
    groups: Option<Vec<String>>,
    status: Option<String>,
}

/// The cluster's records, as the seed's `cluster`: of each member listed, what its record holds
/// (the roles the cluster gives, the database roles, left out; evacuated when its status says
/// `Evacuated`, which an offline member's status hides); the groups' names and descriptions.
async fn cluster_records(reader: &mut Reader) -> Result<Value, CaptureError> {
    const MEMBERS: &str = "/1.0/cluster/members?recursion=1";
    const GROUPS: &str = "/1.0/cluster/groups?recursion=1";
    let shape = |path: &str, problem: String| CaptureError::Shape {
        path: path.into(),
        problem,
    };
    let mut members = Vec::new();
    for listed in reader.list(MEMBERS).await? {
        let listed: ListedMember = serde_json::from_value(Value::Object(listed))
            .map_err(|e| shape(MEMBERS, format!("a member: {e}")))?;
        let mut record = MemberRecord::new(&listed.server_name);
        record.config = listed.config.unwrap_or_default();
        record.roles = listed.roles.unwrap_or_default();
        record.roles.retain(|role| !database_role(role));
        record.description = listed.description.unwrap_or_default();
        if let Some(domain) = listed.failure_domain {
            record.failure_domain = domain;
        }
        if let Some(groups) = listed.groups {
            record.groups = groups;
        }
        record.evacuated = listed.status.as_deref() == Some("Evacuated");
        members.push(record);
    }
    let groups = reader
        .list(GROUPS)
        .await?
        .iter()
        .map(|group| Group {
            name: text(group, "name").to_owned(),
            description: text(group, "description").to_owned(),
        })
        .collect();
    serde_json::to_value(Records { members, groups })
        .map_err(|e| CaptureError::NotLoadable(e.to_string()))
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

/// The objects of every resource the fake keeps in its generic store (its declarations say which,
/// where and under which parents), as the seed's `objects`: for each, its project (`""` for the
/// server's), its parents' keys and the object as listed.
async fn declared_objects(
    reader: &mut Reader,
    projects: &[Map<String, Value>],
) -> Result<Map<String, Value>, CaptureError> {
    let mut out = Map::new();
    for resource in resource::table() {
        let decl = resource.decl();
        let Some(kind) = decl.store.kind() else {
            continue;
        };
        let owners: Vec<&str> = match decl.scope {
            Scope::Global => vec![""],
            Scope::Project(feature) => projects
                .iter()
                .map(|p| text(p, "name"))
                .filter(|name| {
                    feature.is_none_or(|feature| {
                        *name == "default"
                            || projects.iter().any(|p| {
                                text(p, "name") == *name && p["config"][feature] == json!("true")
                            })
                    })
                })
                .collect(),
        };
        let mut found = Vec::new();
        for owner in owners {
            let suffix = match owner {
                "" => "recursion=1".to_owned(),
                project => query(project),
            };
            for (parents, collection) in collections(reader, decl.collection, &suffix).await? {
                let path = format!("{collection}?{suffix}");
                let items = match parents.is_empty() {
                    true => reader.list(&path).await?,
                    false => reader.list_below(&path).await?,
                };
                for item in items {
                    found.push(
                        json!({"project": owner, "parent": parents.join("/"), "value": item}),
                    );
                }
            }
        }
        if !found.is_empty() {
            out.insert(kind.to_owned(), Value::Array(found));
        }
    }
    Ok(out)
}

/// The concrete collections of a declared collection path (`/1.0/networks/{}/forwards`): one
/// per parent found by listing the collection before each `{}`, with the parents' keys.
async fn collections(
    reader: &mut Reader,
    pattern: &str,
    suffix: &str,
) -> Result<Vec<(Vec<String>, String)>, CaptureError> {
    let mut found = vec![(Vec::new(), String::new())];
    for part in pattern.split('/').skip(1) {
        let mut next = Vec::new();
        for (parents, prefix) in found {
            if part != "{}" {
                next.push((parents, format!("{prefix}/{part}")));
                continue;
            }
            let listed = match parents.is_empty() {
                true => reader.list(&format!("{prefix}?{suffix}")).await?,
                false => reader.list_below(&format!("{prefix}?{suffix}")).await?,
            };
            for parent in listed {
                let name = text(&parent, "name").to_owned();
                let mut keys = parents.clone();
                keys.push(name.clone());
                next.push((keys, format!("{prefix}/{}", segment(&name))));
            }
        }
        found = next;
    }
    Ok(found)
}

/// The seed's `files.contents`: each distinct file content once (base64), referred to by index.
#[derive(Default)]
struct Contents {
    encoded: Vec<String>,
    indexes: std::collections::HashMap<Bytes, usize>,
}

impl Contents {
    fn index(&mut self, bytes: &Bytes) -> usize {
        if let Some(&index) = self.indexes.get(bytes) {
            return index;
        }
        self.encoded
            .push(base64::engine::general_purpose::STANDARD.encode(bytes));
        let index = self.encoded.len() - 1;
        self.indexes.insert(bytes.clone(), index);
        index
    }
}

/// The files of the captured images (`export`), as the seed's `files.image_files`: per image its
/// unified tarball, or its split metadata and rootfs.
async fn image_files(
    reader: &mut Reader,
    images: &[Map<String, Value>],
    contents: &mut Contents,
) -> Result<Value, CaptureError> {
    let mut index = |bytes: &Bytes| contents.index(bytes);
    let mut entries = Vec::new();
    for image in images {
        let fingerprint = text(image, "fingerprint");
        let path = format!(
            "/1.0/images/{}/export?project={}",
            segment(fingerprint),
            segment(text(image, "project"))
        );
        let reply = reader.reply(&path).await?;
        if reply.status() != 200 {
            continue;
        }
        let (metadata, rootfs) = exported_parts(&path, &reply).await?;
        let mut entry = json!({"fingerprint": fingerprint, "metadata": index(&metadata)});
        if let Some(rootfs) = rootfs {
            entry["rootfs"] = json!(index(&rootfs));
        }
        entries.push(entry);
    }
    Ok(Value::Array(entries))
}

/// Directories whose entries are the kernel's, not the instance's (on a running instance).
const KERNEL_DIRECTORIES: [&str; 3] = ["/proc", "/sys", "/dev"];

/// The captured instances' file trees, as the seed's `files.trees` and `files.instances`: each
/// instance's tree walked from `/` through the file API, at most `budget` bytes of file content
/// in all.
async fn instance_files(
    reader: &mut Reader,
    instances: &[Map<String, Value>],
    budget: u64,
    contents: &mut Contents,
) -> Result<(Value, Value), CaptureError> {
    let mut trees = Vec::new();
    let mut places = Vec::new();
    let mut used: u64 = 0;
    for instance in instances {
        let (project, name) = (text(instance, "project"), text(instance, "name"));
        let mut nodes = Vec::new();
        let mut pending = vec!["/".to_owned()];
        while let Some(path) = pending.pop() {
            let asked = format!(
                "/1.0/instances/{}/files?{}",
                segment(name),
                url::form_urlencoded::Serializer::new(String::new())
                    .append_pair("path", &path)
                    .append_pair("project", project)
                    .finish()
            );
            let reply = reader.reply(&asked).await?;
            if reply.status() != 200 {
                continue;
            }
            let mut node = file_node(&asked, &path, &reply)?;
            let mut content = None;
            match text(&node, "type") {
                "directory" => {
                    if !KERNEL_DIRECTORIES.contains(&path.as_str()) {
                        let mut names = listed_names(&asked, reply.metadata())?;
                        names.sort();
                        let base = path.trim_end_matches('/');
                        pending.extend(names.iter().rev().map(|n| format!("{base}/{n}")));
                    }
                }
                "file" => {
                    used += reply.bytes().len() as u64;
                    if used > budget {
                        return Err(CaptureError::FileBudget {
                            budget,
                            project: project.into(),
                            instance: name.into(),
                            path,
                        });
                    }
                    content = Some(reply.bytes().clone());
                }
                "symlink" => {
                    let target = String::from_utf8_lossy(reply.bytes()).into_owned();
                    node.insert("target".into(), json!(target));
                }
                _ => continue,
            }
            nodes.push((node, content));
        }
        // In path order, and the contents indexed in that order: the same tree captures the
        // same whatever order the server lists a directory in.
        nodes.sort_by(|(a, _), (b, _)| text(a, "path").cmp(text(b, "path")));
        let nodes: Vec<Value> = nodes
            .into_iter()
            .map(|(mut node, content)| {
                if let Some(content) = content {
                    node.insert("content".into(), json!(contents.index(&content)));
                }
                Value::Object(node)
            })
            .collect();
        places.push(json!({"project": project, "instance": name, "tree": trees.len()}));
        trees.push(Value::Array(nodes));
    }
    Ok((Value::Array(trees), Value::Array(places)))
}

/// A directory listing's names.
fn listed_names(path: &str, listing: &Value) -> Result<Vec<String>, CaptureError> {
    match listing {
        Value::Null => Ok(Vec::new()),
        Value::Array(items) => items
            .iter()
            .map(|item| {
                item.as_str()
                    .filter(|name| {
                        !name.is_empty() && !name.contains('/') && *name != "." && *name != ".."
                    })
                    .map(str::to_owned)
                    .ok_or_else(|| CaptureError::Shape {
                        path: path.into(),
                        problem: format!("a directory entry is not a name: {item}"),
                    })
            })
            .collect(),
        other => Err(CaptureError::Shape {
            path: path.into(),
            problem: format!("a directory listing is not a list: {other}"),
        }),
    }
}

/// A file entry of the seed from the file API's headers (`X-Incus-type`, `-uid`, `-gid`,
/// `-mode` in octal, `-modified` as Go prints a time): `path`, `type`, `uid`, `gid`, `mode`,
/// `modified` (RFC 3339).
fn file_node(asked: &str, path: &str, reply: &Reply) -> Result<Map<String, Value>, CaptureError> {
    let header = |name: &str| {
        reply.header(name).ok_or_else(|| CaptureError::Shape {
            path: asked.into(),
            problem: format!("no {name} header"),
        })
    };
    let number = |name: &str, radix: u32| {
        let value = header(name)?;
        u32::from_str_radix(value, radix).map_err(|e| CaptureError::Shape {
            path: asked.into(),
            problem: format!("{name} {value:?}: {e}"),
        })
    };
    let modified = header("x-incus-modified")?;
    let rfc3339 =
        crate::go::time::time_string_to_rfc3339(modified).ok_or_else(|| CaptureError::Shape {
            path: asked.into(),
            problem: format!("x-incus-modified {modified:?} is not a time"),
        })?;
    let mut node = Map::new();
    node.insert("path".into(), json!(path));
    node.insert("type".into(), json!(header("x-incus-type")?));
    node.insert("uid".into(), json!(number("x-incus-uid", 10)?));
    node.insert("gid".into(), json!(number("x-incus-gid", 10)?));
    node.insert("mode".into(), json!(number("x-incus-mode", 8)?));
    node.insert("modified".into(), json!(rfc3339));
    Ok(node)
}

/// An export's files: the one tarball of a unified image, or a split image's metadata and
/// rootfs parts (`multipart/form-data`).
async fn exported_parts(path: &str, reply: &Reply) -> Result<(Bytes, Option<Bytes>), CaptureError> {
    let shape = |problem: String| CaptureError::Shape {
        path: path.into(),
        problem,
    };
    let boundary = reply
        .header("content-type")
        .and_then(|value| value.parse::<mime::Mime>().ok())
        .filter(|m| m.type_() == mime::MULTIPART && m.subtype() == mime::FORM_DATA)
        .and_then(|m| m.get_param(mime::BOUNDARY).map(|b| b.as_str().to_owned()));
    let Some(boundary) = boundary else {
        return Ok((reply.bytes().clone(), None));
    };
    let body = reply.bytes().clone();
    let stream = futures_util::stream::once(async move { Ok::<Bytes, std::io::Error>(body) });
    let mut parts = multer::Multipart::new(stream, boundary);
    let mut found = Vec::new();
    while found.len() < 2 {
        match parts.next_field().await {
            Ok(Some(field)) => found.push(field.bytes().await.map_err(|e| shape(e.to_string()))?),
            Ok(None) => return Err(shape("a split image export needs two parts".into())),
            Err(e) => return Err(shape(e.to_string())),
        }
    }
    let rootfs = found.pop().unwrap_or_default();
    let metadata = found.pop().unwrap_or_default();
    Ok((metadata, Some(rootfs)))
}
