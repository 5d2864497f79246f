//! The cluster endpoints (`/1.0/cluster`, its members and groups), the per-member server
//! object, and how a clustered fake serves any request through any member: routing to the
//! member that owns what the request concerns, placement, and the answers of a cluster with a
//! member down. A standalone fake only gets the standalone answers of `/1.0/cluster*`.

use super::cluster_groups::member_not_found;
use super::router::segments;
use super::Ctx;
use crate::cluster::{Cluster, Database, MemberInfo, Routed, Want};
use crate::envelope::{self, ApiError, ApiResult, Body};
use crate::state::etag;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::{json, Value};
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The cluster of a clustered fake (its endpoints' rows are guarded by it).
fn cluster_of(ctx: &Ctx) -> Result<&Arc<Cluster>, ApiError> {
    ctx.app.cluster().ok_or_else(ApiError::not_found)
}

/// `GET /1.0/cluster`: the cluster as the member the request came through sees it, or a
/// standalone daemon's answer.
pub(super) fn get(ctx: &Ctx) -> ApiResult {
    let metadata = match ctx.app.cluster() {
        Some(cluster) => cluster_object(ctx, &this_member(ctx, cluster).name, true),
        None => cluster_object(ctx, "", false),
    };
    let tag = etag::hash(&metadata);
    Ok(envelope::sync_etag(metadata, &tag))
}

/// `PUT /1.0/cluster`.
pub(super) fn enable(ctx: &Ctx, body: &[u8]) -> ApiResult {
    super::cluster_enable::put(ctx, ctx.app.cluster().is_some(), body)
}

/// What a standalone daemon answers about its cluster's members.
pub(super) fn not_clustered() -> ApiResult {
    Err(ApiError::internal("Server is not clustered"))
}

/// `GET /1.0/cluster/members`.
pub(super) fn members(ctx: &Ctx) -> ApiResult {
    let cluster = cluster_of(ctx)?;
    let items: Vec<Value> = cluster
        .members
        .iter()
        .map(|m| {
            if ctx.recursion() == 0 {
                json!(format!("/1.0/cluster/members/{}", m.name))
            } else {
                member_object(ctx, cluster, m)
            }
        })
        .collect();
    Ok(envelope::sync(Value::Array(items)))
}

/// The 404 of a member the cluster does not have.
pub(super) fn known_member(ctx: &Ctx, name: &str) -> Result<(), ApiError> {
    cluster_of(ctx)?
        .member(name)
        .map(drop)
        .ok_or_else(member_not_found)
}

/// A member as the API shows it, with its ETag.
fn member_with_etag(ctx: &Ctx, name: &str) -> Result<(Value, String), ApiError> {
    let cluster = cluster_of(ctx)?;
    let member = cluster.member(name).ok_or_else(member_not_found)?;
    let object = member_object(ctx, cluster, member);
    let writable = json!({
        "roles": object["roles"], "failure_domain": object["failure_domain"],
        "description": object["description"], "config": object["config"],
        "groups": object["groups"],
    });
    let tag = etag::hash(&writable);
    Ok((object, tag))
}

/// `GET /1.0/cluster/members/{name}`.
pub(super) fn member(ctx: &Ctx, name: &str) -> ApiResult {
    let (object, tag) = member_with_etag(ctx, name)?;
    Ok(envelope::sync_etag(object, &tag))
}

/// `PUT` (`patch`: `PATCH`) `/1.0/cluster/members/{name}`.
pub(super) fn update_member(
    ctx: &Ctx,
    name: &str,
    headers: &HeaderMap,
    body: &[u8],
    patch: bool,
) -> ApiResult {
    let (_, tag) = member_with_etag(ctx, name)?;
    let cluster = cluster_of(ctx)?;
    super::cluster_groups::update_member(ctx, cluster, name, body, patch, headers, &tag)
}

/// `GET /1.0/cluster/members/{name}/state`.
pub(super) fn member_state(ctx: &Ctx) -> ApiResult {
    Ok(envelope::sync(member_state_object(ctx)))
}

/// `POST /1.0/cluster/members/{name}/state`: evacuate or restore.
pub(super) fn evacuate(ctx: &Ctx, name: &str, body: &[u8]) -> ApiResult {
    super::evacuation::post(ctx, cluster_of(ctx)?, name, body)
}

/// `GET /1.0/cluster/groups`.
pub(super) fn groups(ctx: &Ctx) -> ApiResult {
    super::cluster_groups::list(ctx)
}

/// `POST /1.0/cluster/groups`.
pub(super) fn create_group(ctx: &Ctx, body: &[u8]) -> ApiResult {
    super::cluster_groups::create(ctx, cluster_of(ctx)?, body)
}

/// `GET /1.0/cluster/groups/{name}`.
pub(super) fn group(ctx: &Ctx, name: &str) -> ApiResult {
    super::cluster_groups::get(ctx, name)
}

/// `PUT` (`patch`: `PATCH`) `/1.0/cluster/groups/{name}`.
pub(super) fn update_group(
    ctx: &Ctx,
    name: &str,
    body: &[u8],
    patch: bool,
    headers: &HeaderMap,
) -> ApiResult {
    super::cluster_groups::update(ctx, cluster_of(ctx)?, name, body, patch, headers)
}

/// `POST /1.0/cluster/groups/{name}`: a rename.
pub(super) fn rename_group(ctx: &Ctx, name: &str, body: &[u8]) -> ApiResult {
    super::cluster_groups::rename(ctx, name, body)
}

/// `DELETE /1.0/cluster/groups/{name}`.
pub(super) fn delete_group(ctx: &Ctx, name: &str) -> ApiResult {
    super::cluster_groups::delete(ctx, name)
}

/// `POST /1.0/cluster/members {"server_name"}`: a join token for a new member (its name must be
/// new), listing the online members' addresses.
pub(super) fn join_token(ctx: &Ctx, body: &[u8]) -> ApiResult {
    let cluster = cluster_of(ctx)?;
    #[derive(serde::Deserialize)]
    struct ClusterMembersPost {
        #[serde(default)]
        server_name: String,
    }
    let req: ClusterMembersPost = super::parse_body(body)?;
    if cluster.member(&req.server_name).is_some() {
        return Err(ApiError::internal(format!(
            "The cluster already has a member with name: {}",
            req.server_name
        )));
    }
    let records = ctx.app.snapshot().state.records().into_owned();
    let addresses = cluster
        .members
        .iter()
        .filter(|m| cluster.status(&m.name, &records).0 == "Online")
        .map(|m| m.address.clone())
        .collect();
    super::certificates::join_token(ctx, &req.server_name, addresses)
}

/// The member whose listener took the request (the first member for direct calls).
pub(super) fn this_member<'a>(ctx: &Ctx, cluster: &'a Cluster) -> &'a MemberInfo {
    ctx.peer
        .member
        .as_deref()
        .and_then(|name| cluster.member(name))
        .unwrap_or(&cluster.members[0])
}

/// `GET /1.0/cluster`: the member's name, and the per-member keys of the storage pools.
fn cluster_object(ctx: &Ctx, server_name: &str, enabled: bool) -> Value {
    let pools: Vec<Value> = ctx
        .app
        .snapshot()
        .state
        .storage_pools
        .iter()
        .map(|pool| {
            json!({
                "entity": "storage-pool", "name": pool.name, "key": "source", "value": "",
                "description": format!("\"source\" property for storage pool \"{}\"", pool.name),
            })
        })
        .collect();
    json!({"server_name": server_name, "enabled": enabled, "member_config": pools})
}

/// A member as `/1.0/cluster/members` lists it: its own roles first, then its database roles.
fn member_object(ctx: &Ctx, cluster: &Cluster, member: &MemberInfo) -> Value {
    let index = cluster.index(&member.name).unwrap_or(0);
    let snapshot = ctx.app.snapshot();
    let records = snapshot.state.records();
    let record = records.member(&member.name);
    let database = super::cluster_groups::database_roles(cluster, index);
    let mut roles = record.roles.clone();
    roles.extend(database.iter().map(ToString::to_string));
    let (status, message) = cluster.status(&member.name, &records);
    json!({
        "roles": roles, "failure_domain": record.failure_domain,
        "description": record.description, "config": record.config,
        "groups": record.groups, "server_name": member.name,
        "url": format!("https://{}", member.address), "database": database.contains(&"database"),
        "status": status, "message": message, "architecture": "x86_64",
    })
}

/// `GET /1.0/cluster/members/{name}/state`.
fn member_state_object(ctx: &Ctx) -> Value {
    let pools: serde_json::Map<String, Value> = ctx
        .app
        .snapshot()
        .state
        .storage_pools
        .iter()
        .map(|pool| (pool.name.clone(), super::resources::pool_usage()))
        .collect();
    json!({
        "sysinfo": {"uptime": 2852, "load_averages": [0.25, 0.18, 0.1],
            "total_ram": 25_275_990_016_u64, "free_ram": 12_301_320_192_u64,
            "shared_ram": 9_592_832, "buffered_ram": 32_002_048, "total_swap": 0, "free_swap": 0,
            "processes": 168},
        "storage_pools": pools,
    })
}

/// `GET /1.0` on a cluster, trusted: the server object as `member` sees itself.
pub(super) fn server_view(ctx: &Ctx, member: &MemberInfo, mut object: Value) -> ApiResult {
    let mut config = ctx.app.snapshot().state.server_config.clone();
    config.insert("cluster.https_address".into(), member.address.clone());
    config.insert("core.https_address".into(), member.address.clone());
    let tag = etag::hash(&config);
    object["config"] = json!(config);
    let environment = &mut object["environment"];
    environment["addresses"] = json!([member.address]);
    environment["server_clustered"] = json!(true);
    environment["server_name"] = json!(member.name);
    Ok(envelope::sync_etag(object, &tag))
}

/// Serves a request on a cluster, through the member whose listener took it: routes it to the
/// member that owns what it concerns (answering as the cluster does when that member is down),
/// places created instances, and gives the answer its clustered form.
pub(super) async fn serve(ctx: &mut Ctx, cluster: &Cluster, req: Request<Bytes>) -> ApiResult {
    if !ctx.trusted {
        return super::route(ctx, req).await;
    }
    database_ready(ctx, cluster, &req).await?;
    let here = this_member(ctx, cluster).name.clone();
    let owner = owner(ctx, cluster, &req)?;
    let location = match &owner {
        Owner::Member(name) | Owner::Placed(name) => name.clone(),
        Owner::Here => here.clone(),
    };
    if let Owner::Member(name) = &owner {
        if *name != here {
            forwarding(ctx, cluster, &req, name).await?;
        }
    }
    let kind = Kind::of(&req);
    let owner_life = cluster.life_token(&location);
    ctx.scope = crate::cluster::Scope {
        location: Some(location.clone()),
        life: owner_life.clone(),
    };
    let response = match super::migration::before(ctx, cluster, &req) {
        Some(answer) => answer?,
        None => super::route(ctx, req).await?,
    };
    finish(ctx, cluster, &here, &location, kind, owner_life, response).await
}

/// Waits for the cluster's database as the request needs it: everything but the member's
/// own `GET /1.0` (and streams: events, websockets) reads it. While the voters elect a new
/// leader the request waits for the election; without quorum it fails (see
/// [`crate::ClusterTimings::no_quorum_stall`]), as measured on a real cluster.
async fn database_ready(
    ctx: &Ctx,
    cluster: &Cluster,
    req: &Request<Bytes>,
) -> Result<(), ApiError> {
    let path = req.uri().path().trim_end_matches('/');
    let own_server = path == "/1.0" && ctx.param("target").is_none_or(str::is_empty);
    if own_server || super::is_upgrade(req) || path == "/1.0/events" || path.is_empty() {
        return Ok(());
    }
    let (until, failure) = match cluster.database() {
        Database::Ready => return Ok(()),
        Database::Electing { until } => (until, None),
        Database::NoQuorum if path == "/1.0/cluster/members" => (
            tokio::time::Instant::now()
                + cluster.timings.no_quorum_stall.min(std::time::Duration::from_secs(5)),
            Some(ApiError::internal("context deadline exceeded")),
        ),
        Database::NoQuorum => (
            tokio::time::Instant::now() + cluster.timings.no_quorum_stall,
            Some(ApiError::new(503, "Failed to begin transaction: failed to create cowsql connection: no available cowsql leader server found")),
        ),
    };
    tokio::select! {
        () = tokio::time::sleep_until(until) => {}
        () = ctx.app.shutdown.cancelled() => {}
    }
    failure.map_or(Ok(()), Err)
}

/// Who serves a request.
enum Owner {
    /// The member the request came through (nothing routes it elsewhere).
    Here,
    /// The member that owns the instance, operation or `?target=` it names.
    Member(String),
    /// An instance creation, placed on this member.
    Placed(String),
}

/// The requests whose answers a cluster gives another form.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    InstanceList,
    OperationList,
    OperationWait,
    Pool,
    PoolList,
    VolumeList,
    Volume,
    /// An exec, console or instance creation: a forwarded answer's operation URL names the
    /// project (the daemon's `ForwardedOperationResponse`).
    ForwardedOperation,
    Async,
    Other,
}

impl Kind {
    fn of(req: &Request<Bytes>) -> Self {
        let segs = segments(req.uri().path());
        let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
        let get = req.method() == Method::GET;
        match segs.as_slice() {
            ["1.0", "instances"] if get => Self::InstanceList,
            ["1.0", "operations"] if get => Self::OperationList,
            ["1.0", "operations", _, "wait"] if get => Self::OperationWait,
            ["1.0", "storage-pools"] if get => Self::PoolList,
            ["1.0", "storage-pools", _] if get => Self::Pool,
            ["1.0", "storage-pools", _, "volumes", ..] if get && segs.len() <= 5 => {
                Self::VolumeList
            }
            ["1.0", "storage-pools", _, "volumes", _, _] if get => Self::Volume,
            ["1.0", "instances"] | ["1.0", "instances", _, "exec" | "console"] if !get => {
                Self::ForwardedOperation
            }
            _ if !get => Self::Async,
            _ => Self::Other,
        }
    }
}

/// Finds the member that serves the request; answers the cluster's errors for bad targets
/// and creations it refuses before placement.
fn owner(ctx: &Ctx, cluster: &Cluster, req: &Request<Bytes>) -> Result<Owner, ApiError> {
    let segs = segments(req.uri().path());
    let segs: Vec<&str> = segs.iter().map(String::as_str).collect();
    let target = ctx.param("target").filter(|t| !t.is_empty());
    let project = ctx.project();
    match segs.as_slice() {
        ["1.0", "instances"] if req.method() == Method::POST && !super::is_upgrade(req) => {
            let owner = place(ctx, cluster, req.body(), target)?;
            copy_across_members(ctx, req.body(), &owner)?;
            Ok(owner)
        }
        ["1.0", "instances", name, ..] => {
            let location = ctx
                .app
                .snapshot()
                .state
                .instance(&project, name)
                .and_then(|i| i.location.clone());
            Ok(location.map_or(Owner::Here, Owner::Member))
        }
        ["1.0", "operations", id, ..] => {
            let location = ctx
                .app
                .operations
                .ops()
                .get(id)
                .and_then(|op| op.location.clone());
            Ok(location.map_or(Owner::Here, Owner::Member))
        }
        ["1.0", "cluster", "members", name, "state"] if cluster.member(name).is_some() => {
            Ok(Owner::Member((*name).to_string()))
        }
        ["1.0"] | ["1.0", "resources" | "storage-pools" | "networks", ..] => match target {
            Some(target) if cluster.member(target).is_some() => {
                Ok(Owner::Member(target.to_string()))
            }
            // The network and pool lists ignore a target they do not know (measured: 200).
            Some(_) if matches!(segs.as_slice(), ["1.0", "storage-pools" | "networks"]) => {
                Ok(Owner::Here)
            }
            Some(_) => Err(member_not_found()),
            None => Ok(Owner::Here),
        },
        _ => Ok(Owner::Here),
    }
}

/// A copy onto another member than its source's is a migration, which needs the new
/// instance's `architecture` in the request: without it the daemon answers 400 `Architecture
/// isn't supported: ` (measured; the official client always sends it).
fn copy_across_members(ctx: &Ctx, body: &[u8], owner: &Owner) -> Result<(), ApiError> {
    let (Owner::Member(to) | Owner::Placed(to)) = owner else {
        return Ok(());
    };
    let Ok(body) = serde_json::from_slice::<Value>(body) else {
        return Ok(());
    };
    let source = &body["source"];
    let architecture = body["architecture"].as_str().unwrap_or_default();
    if source["type"].as_str() != Some("copy") || !architecture.is_empty() {
        return Ok(());
    }
    let project = source["project"]
        .as_str()
        .filter(|p| !p.is_empty())
        .map_or_else(|| ctx.project(), str::to_string);
    let name = source["source"].as_str().unwrap_or_default();
    let name = name.split('/').next().unwrap_or(name);
    let snapshot = ctx.app.snapshot();
    let Some(from) = snapshot.state.instance(&project, name) else {
        return Ok(());
    };
    // A live copy of a running instance is refused for want of CRIU first (measured).
    let live = source["live"].as_bool() == Some(true);
    if live && from.status != crate::state::PowerState::Stopped {
        return Ok(());
    }
    if from.location.as_ref().is_some_and(|from| from != to) {
        return Err(ApiError::bad_request("Architecture isn't supported: "));
    }
    Ok(())
}

/// Where `POST /1.0/instances` places the instance: the target member, the group's member
/// with the fewest instances, or (untargeted) the online member with the fewest instances.
fn place(
    ctx: &Ctx,
    cluster: &Cluster,
    body: &[u8],
    target: Option<&str>,
) -> Result<Owner, ApiError> {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let count = |member: &str| {
        state
            .instances
            .iter()
            .filter(|i| i.location.as_deref() == Some(member))
            .count()
    };
    match target {
        Some(group) if group.starts_with('@') => {
            let group = &group[1..];
            if state.records().group(group).is_none() {
                return Err(ApiError::bad_request(format!(
                    "Cluster group \"{group}\" doesn't exist"
                )));
            }
            let want = Want {
                group: Some(group),
                ..Want::default()
            };
            let member = cluster
                .place(&state.records(), &want, count)
                .ok_or_else(no_member)?;
            Ok(Owner::Placed(member))
        }
        Some(member) => {
            if cluster.member(member).is_none() {
                return Err(ApiError::new(
                    404,
                    format!("Cluster member \"{member}\" not found"),
                ));
            }
            Ok(Owner::Member(member.to_string()))
        }
        None => {
            if unknown_image(ctx, body) {
                return Err(ApiError::internal(
                    "No fingerprint prefix specified for the image",
                ));
            }
            let member = cluster
                .place(&state.records(), &Want::default(), count)
                .ok_or_else(no_member)?;
            Ok(Owner::Placed(member))
        }
    }
}

fn no_member() -> ApiError {
    ApiError::internal("No suitable cluster member could be found")
}

/// Whether an untargeted creation names an image by alias that does not exist: placement
/// looks the image up first and fails with no fingerprint to go on.
fn unknown_image(ctx: &Ctx, body: &[u8]) -> bool {
    let Ok(body) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    let source = &body["source"];
    let alias = source["alias"].as_str().unwrap_or_default();
    let fingerprint = source["fingerprint"].as_str().unwrap_or_default();
    if source["type"].as_str() != Some("image") || alias.is_empty() || !fingerprint.is_empty() {
        return false;
    }
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let owner = state.image_project(&ctx.project());
    !state
        .images
        .iter()
        .any(|i| i.project == owner && i.aliases.iter().any(|a| a.name == alias))
}

/// What happens to a request forwarded to `member`: nothing while it serves; while it is
/// down, the cluster's answers (see [`Routed`]).
async fn forwarding(
    ctx: &Ctx,
    cluster: &Cluster,
    req: &Request<Bytes>,
    member: &str,
) -> Result<(), ApiError> {
    let Some(info) = cluster.member(member) else {
        return Ok(());
    };
    let creation =
        req.method() == Method::POST && req.uri().path().trim_end_matches('/') == "/1.0/instances";
    match cluster.routed(member) {
        Routed::Serve => Ok(()),
        Routed::NotReady { down: true } | Routed::Stalled { .. } if creation => {
            Err(refused_creation(ctx, info))
        }
        Routed::NotReady { .. } => Err(ApiError::internal("Server isn't ready yet")),
        Routed::Refused if creation => Err(refused_creation(ctx, info)),
        Routed::Refused => {
            let path = req
                .uri()
                .path_and_query()
                .map_or_else(|| req.uri().path().to_string(), ToString::to_string);
            Err(ApiError::internal(
                info.refused(req.method().as_str(), &path),
            ))
        }
        Routed::Stalled { until } => {
            tokio::select! {
                () = tokio::time::sleep_until(until) => {}
                () = ctx.app.shutdown.cancelled() => {}
            }
            Err(ApiError::internal(
                "Missing event connection with target cluster member",
            ))
        }
    }
}

fn refused_creation(ctx: &Ctx, member: &MemberInfo) -> ApiError {
    let path = format!(
        "/1.0/instances?project={}&target={}",
        ctx.project(),
        member.name
    );
    ApiError::internal(member.refused("POST", &path))
}

/// Gives a served answer its clustered form.
async fn finish(
    ctx: &Ctx,
    cluster: &Cluster,
    here: &str,
    location: &str,
    kind: Kind,
    owner_life: Option<CancellationToken>,
    response: Response<Body>,
) -> ApiResult {
    let status = response.status();
    if kind == Kind::OperationWait && status == StatusCode::OK && location != here {
        return Ok(cut_with_member(response, owner_life, ctx.app.settings.line));
    }
    let patch: fn(&Ctx, &Cluster, &str, &mut Value) = match kind {
        Kind::ForwardedOperation if status == StatusCode::ACCEPTED && location != here => {
            forwarded_operation
        }
        Kind::InstanceList if status == StatusCode::OK => instances_with_members_down,
        Kind::OperationList if status == StatusCode::OK => operations_of_live_members,
        Kind::Pool if status == StatusCode::OK => pool,
        Kind::PoolList if status == StatusCode::OK => pools,
        Kind::VolumeList | Kind::Volume if status == StatusCode::OK => volumes,
        _ => return Ok(response),
    };
    let (mut parts, body) = response.into_parts();
    let bytes = body
        .collect()
        .await
        .map_err(|e| ApiError::internal(e.to_string()))?
        .to_bytes();
    let Ok(mut value) = serde_json::from_slice::<Value>(&bytes) else {
        return Ok(Response::from_parts(parts, envelope::full(bytes)));
    };
    patch(ctx, cluster, here, &mut value);
    if kind == Kind::ForwardedOperation {
        if let Some(url) = value["operation"].as_str() {
            if let Ok(header) = HeaderValue::from_str(url) {
                parts.headers.insert(http::header::LOCATION, header);
            }
        }
    }
    if kind == Kind::Pool {
        let m = &value["metadata"];
        let tag = etag::hash(&json!([
            m["name"],
            m["driver"],
            m["description"],
            m["config"]
        ]));
        if let Ok(header) = HeaderValue::from_str(&format!("\"{tag}\"")) {
            parts.headers.insert(http::header::ETAG, header);
        }
    }
    let mut bytes = serde_json::to_vec(&value).unwrap_or_default();
    bytes.push(b'\n');
    parts.headers.remove(http::header::CONTENT_LENGTH);
    Ok(Response::from_parts(parts, envelope::full(bytes)))
}

/// A forwarded exec, console or creation answer's operation URL carries the project (other
/// forwarded answers, a snapshot's or a state change's, are the member's own: no project).
fn forwarded_operation(ctx: &Ctx, _: &Cluster, _: &str, value: &mut Value) {
    if let Some(url) = value["operation"].as_str().filter(|u| !u.contains('?')) {
        value["operation"] = json!(format!("{url}?project={}", ctx.project()));
    }
}

/// Whether what lives on `member` is out of reach (its daemon is down or not ready).
fn unreachable(cluster: &Cluster, member: Option<&str>) -> bool {
    member.is_some_and(|m| cluster.routed(m) != Routed::Serve)
}

/// Instances of a member that is down are listed as the database knows them: `Error` (112),
/// no config, no state.
fn instances_with_members_down(ctx: &Ctx, cluster: &Cluster, _: &str, value: &mut Value) {
    let Some(items) = value["metadata"].as_array_mut() else {
        return;
    };
    for item in items.iter_mut().filter(|i| i.is_object()) {
        if !unreachable(cluster, item["location"].as_str()) {
            continue;
        }
        let mut down = json!({
            "architecture": "", "config": null, "devices": null, "ephemeral": false,
            "profiles": null, "stateful": false, "description": "",
            "created_at": crate::state::clock::ZERO_TIME, "name": item["name"], "status": "Error",
            "status_code": 112, "last_used_at": crate::state::clock::ZERO_TIME,
            "location": item["location"], "type": item["type"], "project": item["project"],
        });
        if ctx.recursion() >= 2 {
            down["backups"] = Value::Null;
            down["state"] = Value::Null;
            down["snapshots"] = Value::Null;
        }
        *item = down;
    }
}

/// The operations of a member that is down are missing from the list; the asked member's own
/// come first in each status group (the daemon lists its own, then asks the others).
fn operations_of_live_members(ctx: &Ctx, cluster: &Cluster, here: &str, value: &mut Value) {
    let Some(groups) = value["metadata"].as_object_mut() else {
        return;
    };
    let locations: std::collections::HashMap<String, Option<String>> = ctx
        .app
        .operations
        .ops()
        .list
        .iter()
        .map(|op| (op.id.clone(), op.location.clone()))
        .collect();
    for items in groups.values_mut() {
        if let Some(items) = items.as_array_mut() {
            items.retain(|item| {
                let id = item["id"]
                    .as_str()
                    .or_else(|| item.as_str().and_then(|u| u.rsplit('/').next()))
                    .unwrap_or_default();
                let location = locations.get(id).cloned().flatten();
                !unreachable(cluster, location.as_deref())
            });
            let elsewhere = |item: &Value| {
                let id = item["id"]
                    .as_str()
                    .or_else(|| item.as_str().and_then(|u| u.rsplit('/').next()))
                    .unwrap_or_default();
                locations.get(id).cloned().flatten().as_deref() != Some(here)
            };
            items.sort_by_key(elsewhere);
        }
    }
    groups.retain(|_, items| items.as_array().is_none_or(|i| !i.is_empty()));
}

/// A pool on a cluster: on every member; the cluster-wide view hides the per-member
/// `source`, `?target=` shows it and the member's own users.
fn pool(ctx: &Ctx, cluster: &Cluster, _: &str, value: &mut Value) {
    let target = ctx.param("target").filter(|t| !t.is_empty());
    clustered_pool(ctx, cluster, target, &mut value["metadata"]);
}

fn pools(ctx: &Ctx, cluster: &Cluster, _: &str, value: &mut Value) {
    if let Some(items) = value["metadata"].as_array_mut() {
        for item in items.iter_mut().filter(|i| i.is_object()) {
            clustered_pool(ctx, cluster, None, item);
        }
    }
}

fn clustered_pool(ctx: &Ctx, cluster: &Cluster, target: Option<&str>, pool: &mut Value) {
    let names: Vec<&str> = cluster.members.iter().map(|m| m.name.as_str()).collect();
    pool["locations"] = json!(names);
    match target {
        None => {
            if let Some(config) = pool["config"].as_object_mut() {
                config.remove("source");
            }
        }
        Some(target) => {
            let snapshot = ctx.app.snapshot();
            let state = &snapshot.state;
            if let Some(used_by) = pool["used_by"].as_array_mut() {
                used_by.retain(|url| {
                    let Some(rest) = url.as_str().and_then(|u| u.strip_prefix("/1.0/instances/"))
                    else {
                        return true;
                    };
                    let (name, query) = rest.split_once('?').unwrap_or((rest, ""));
                    let project = query
                        .split('&')
                        .find_map(|kv| kv.strip_prefix("project="))
                        .unwrap_or("default");
                    state
                        .instance(project, name)
                        .is_none_or(|i| i.location.as_deref() == Some(target))
                });
            }
        }
    }
}

/// A volume on a cluster lives where its instance does (custom volumes: on the first member).
fn volumes(ctx: &Ctx, cluster: &Cluster, _: &str, value: &mut Value) {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let first = cluster.members[0].name.clone();
    let locate = |volume: &mut Value| {
        if !volume.is_object() {
            return;
        }
        let kind = volume["type"].as_str().unwrap_or_default();
        let location = match kind {
            "container" | "virtual-machine" => {
                let project = volume["project"].as_str().unwrap_or("default");
                // A snapshot's volume (`c1/s1`) is where its instance is.
                let name = volume["name"].as_str().unwrap_or_default();
                let name = name.split('/').next().unwrap_or(name);
                state
                    .instance(project, name)
                    .and_then(|i| i.location.clone())
                    .unwrap_or_else(|| first.clone())
            }
            _ => first.clone(),
        };
        volume["location"] = json!(location);
    };
    match &mut value["metadata"] {
        Value::Array(items) => items.iter_mut().for_each(locate),
        object => locate(object),
    }
}

/// The body of a wait on another member's operation, cut short with "unexpected EOF" if that
/// member dies while it waits.
fn cut_with_member(
    response: Response<Body>,
    life: Option<CancellationToken>,
    line: crate::line::IncusLine,
) -> Response<Body> {
    let Some(life) = life else {
        return response;
    };
    let (parts, body) = response.into_parts();
    let frame = async move {
        tokio::select! {
            collected = body.collect() => collected.map(|c| Frame::data(c.to_bytes())),
            () = life.cancelled() => {
                let bytes = ApiError::internal("unexpected EOF").body_bytes(line);
                Ok(Frame::data(Bytes::from(bytes)))
            }
        }
    };
    let stream = futures_util::stream::once(Box::pin(frame));
    Response::from_parts(parts, BodyExt::boxed_unsync(StreamBody::new(stream)))
}
