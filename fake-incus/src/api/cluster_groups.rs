//! Cluster groups (`/1.0/cluster/groups[/{name}]`) and member updates (`PUT`/`PATCH
//! /1.0/cluster/members/{name}`), as Incus 6.0.4 answers them, measured on a real cluster:
//!
//! - groups: `POST` 201 (`Location`), an existing name 500 `Failed to create "cluster_groups"
//!   entry: UNIQUE constraint failed: cluster_groups.name`, an unknown member 500 (nothing
//!   made), no name 400 `No name provided`; an unknown group 404 `Cluster_group not found`;
//!   `PUT` sets description and members (an unknown member 404 `Failed to get node info:
//!   Cluster member not found`, nothing changed; a member left out whose only group this is
//!   stays in it); `PATCH` answers as the daemon's (it deletes the group's member rows expecting
//!   one: with other than one member it is 500 `Query deleted N NodeClusterGroup rows instead of
//!   1`); rename (`POST`) 201, `default` 403, a taken name 500 `Name "x" already in use`;
//!   `DELETE` of a group with members 500 `Only empty cluster groups can be removed`, of
//!   `default` 403.
//! - members: `PUT` replaces config, roles, description, failure domain and groups; `PATCH`
//!   merges only `config` (the rest is replaced, as the daemon's `PATCH` does). Checked in the
//!   daemon's order: ETag (412), dropping `database` 400 `The "database" role cannot be dropped
//!   at this time` (adding it: `... added ...`), no group 400 `Cluster members need to belong to
//!   at least one group`, config 500 (`Invalid cluster configuration key "k"[ value]`), roles
//!   500 `Update roles: Invalid cluster role "x"`, an empty failure domain 500 `Update failure
//!   domain: Failure domain name can't be empty`, an unknown group 404 `Update cluster groups:
//!   Failed to add member to cluster group: Failed to get cluster group ID: Cluster_group not
//!   found`. Nothing changes unless every check passes.

use super::{parse_body, Ctx};
use crate::cluster::{config_problem, known_role, Cluster, Group, Records, DEFAULT_GROUP};
use crate::envelope::{self, ApiError, ApiResult};
use crate::state::etag;
use crate::state::member_records::database_role;
use http::HeaderMap;
use serde::Deserialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// An unknown member's 404.
pub(super) fn member_not_found() -> ApiError {
    ApiError::new(404, "Cluster member not found")
}

fn group_not_found() -> ApiError {
    ApiError::new(404, "Cluster_group not found")
}

/// `/1.0/cluster/groups[/{name}]` on a cluster.
/// `GET /1.0/cluster/groups`.
pub(super) fn list(ctx: &Ctx) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let records = snapshot.state.records();
    let items: Vec<Value> = records
        .groups
        .iter()
        .map(|group| {
            if ctx.recursion() == 0 {
                json!(format!("/1.0/cluster/groups/{}", group.name))
            } else {
                group_object(&records, &group.name).unwrap_or(Value::Null)
            }
        })
        .collect();
    Ok(envelope::sync(Value::Array(items)))
}

/// `GET /1.0/cluster/groups/{name}`.
pub(super) fn get(ctx: &Ctx, name: &str) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let object = group_object(&snapshot.state.records(), name).ok_or_else(group_not_found)?;
    let tag =
        etag::hash(&json!({"description": object["description"], "members": object["members"]}));
    Ok(envelope::sync_etag(object, &tag))
}

/// A group as the API shows it; `None` for an unknown group.
fn group_object(records: &Records, name: &str) -> Option<Value> {
    let group = records.group(name)?;
    let members = records.group_members(name);
    Some(json!({"description": group.description, "members": members, "name": group.name}))
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct GroupBody {
    #[serde(deserialize_with = "super::null_default")]
    name: String,
    #[serde(deserialize_with = "super::null_default")]
    description: String,
    #[serde(deserialize_with = "super::null_default")]
    members: Option<Vec<String>>,
}

/// `names` when every one is a member, else the daemon's error for the first unknown one.
fn known_members(
    cluster: &Cluster,
    names: &[String],
    unknown: impl Fn() -> ApiError,
) -> Result<Vec<String>, ApiError> {
    match names.iter().find(|n| cluster.index(n).is_none()) {
        Some(_) => Err(unknown()),
        None => Ok(names.to_vec()),
    }
}

/// On a line that checks it ([`crate::line::OBJECT_NAMES_ARE_API_NAMES`]), a group's new name as
/// an API name: `Invalid cluster group name: why` (400).
fn check_group_name(ctx: &Ctx, name: &str) -> Result<(), ApiError> {
    let checked = ctx
        .app
        .has_extension(crate::line::OBJECT_NAMES_ARE_API_NAMES);
    super::validation::checked_api_name(checked, "cluster group", name)
}

pub(super) fn create(ctx: &Ctx, cluster: &Cluster, body: &[u8]) -> ApiResult {
    let req: GroupBody = parse_body(body)?;
    check_group_name(ctx, &req.name)?;
    if req.name.is_empty() {
        return Err(ApiError::bad_request("No name provided"));
    }
    let members = known_members(cluster, req.members.as_deref().unwrap_or_default(), || {
        ApiError::internal("Failed to create \"nodes_clusters_groups\" entry: NOT NULL constraint failed: nodes_cluster_groups.node_id")
    })?;
    let mut state = ctx.app.state();
    let records = state.records_mut();
    if records.group(&req.name).is_some() {
        // The generated database code maps the conflict from 6.16 on.
        if ctx
            .app
            .has_extension(crate::line::GENERATED_CONFLICTS_ARE_409)
        {
            return Err(ApiError::new(
                409,
                "This \"Cluster_group\" entry already exists",
            ));
        }
        return Err(ApiError::internal("Failed to create \"cluster_groups\" entry: UNIQUE constraint failed: cluster_groups.name"));
    }
    records.groups.push(Group {
        name: req.name.clone(),
        description: req.description,
    });
    for member in members {
        let groups = &mut records.member_mut(&member).groups;
        if !groups.contains(&req.name) {
            groups.push(req.name.clone());
        }
    }
    super::resource::created(&format!("/1.0/cluster/groups/{}", req.name))
}

pub(super) fn update(
    ctx: &Ctx,
    cluster: &Cluster,
    name: &str,
    body: &[u8],
    patch: bool,
    headers: &HeaderMap,
) -> ApiResult {
    let mut state = ctx.app.state();
    let current = group_object(&state.records(), name).ok_or_else(group_not_found)?;
    if patch {
        // The daemon checks a PATCH against a hash of `[description, members]`.
        let tag = etag::hash(&json!([current["description"], current["members"]]));
        super::resource::check_etag(headers, &tag)?;
    }
    let req: GroupBody = parse_body(body)?;
    let wanted = if patch {
        let members = current["members"].as_array().map_or(0, Vec::len);
        if members != 1 {
            return Err(ApiError::internal(format!(
                "Query deleted {members} NodeClusterGroup rows instead of 1"
            )));
        }
        match req.members {
            Some(members) => members,
            None => serde_json::from_value(current["members"].clone()).unwrap_or_default(),
        }
    } else {
        req.members.unwrap_or_default()
    };
    let wanted = known_members(cluster, &wanted, || {
        ApiError::new(404, "Failed to get node info: Cluster member not found")
    })?;
    let records = state.records_mut();
    if let Some(group) = records.groups.iter_mut().find(|g| g.name == name) {
        group.description = req.description;
    }
    for member in &wanted {
        records.member_mut(member);
    }
    for record in &mut records.members {
        let inside = record.groups.iter().any(|g| g == name);
        if wanted.contains(&record.name) {
            if !inside {
                record.groups.push(name.to_string());
            }
        } else if inside && record.groups.len() > 1 {
            record.groups.retain(|g| g != name);
        }
    }
    Ok(envelope::empty())
}

pub(super) fn rename(ctx: &Ctx, name: &str, body: &[u8]) -> ApiResult {
    let req: super::RenameBody = parse_body(body)?;
    let mut state = ctx.app.state();
    let records = state.records_mut();
    if records.group(name).is_none() {
        return Err(group_not_found());
    }
    if name == DEFAULT_GROUP {
        return Err(ApiError::new(
            403,
            "The \"default\" group cannot be renamed",
        ));
    }
    check_group_name(ctx, &req.name)?;
    if records.group(&req.name).is_some() {
        return Err(ApiError::internal(format!(
            "Name \"{}\" already in use",
            req.name
        )));
    }
    for group in records.groups.iter_mut().filter(|g| g.name == name) {
        group.name.clone_from(&req.name);
    }
    for record in &mut records.members {
        for group in record.groups.iter_mut().filter(|g| *g == name) {
            group.clone_from(&req.name);
        }
    }
    drop(state);
    super::resource::created(&format!("/1.0/cluster/groups/{}", req.name))
}

pub(super) fn delete(ctx: &Ctx, name: &str) -> ApiResult {
    let mut state = ctx.app.state();
    let records = state.records_mut();
    if records.group(name).is_none() {
        return Err(group_not_found());
    }
    if name == DEFAULT_GROUP {
        return Err(ApiError::new(
            403,
            "The 'default' cluster group cannot be deleted",
        ));
    }
    if !records.group_members(name).is_empty() {
        return Err(ApiError::internal(
            "Only empty cluster groups can be removed",
        ));
    }
    records.groups.retain(|g| g.name != name);
    Ok(envelope::empty())
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct MemberPut {
    #[serde(deserialize_with = "super::null_default")]
    config: Option<BTreeMap<String, String>>,
    #[serde(deserialize_with = "super::null_default")]
    roles: Vec<String>,
    #[serde(deserialize_with = "super::null_default")]
    description: String,
    #[serde(deserialize_with = "super::null_default")]
    failure_domain: String,
    #[serde(deserialize_with = "super::null_default")]
    groups: Vec<String>,
}

/// The database roles of member `index`: voters have `database`, the leader also
/// `database-leader` (a dead voter keeps `database`, as measured).
pub(super) fn database_roles(cluster: &Cluster, index: usize) -> &'static [&'static str] {
    if !Cluster::voter(index) {
        &[]
    } else if cluster.leader() == Some(index) {
        &["database-leader", "database"]
    } else {
        &["database"]
    }
}

/// `PUT`/`PATCH /1.0/cluster/members/{name}`.
pub(super) fn update_member(
    ctx: &Ctx,
    cluster: &Cluster,
    name: &str,
    body: &[u8],
    patch: bool,
    headers: &HeaderMap,
    current_tag: &str,
) -> ApiResult {
    let index = cluster.index(name).ok_or_else(member_not_found)?;
    super::resource::check_etag(headers, current_tag)?;
    let req: MemberPut = parse_body(body)?;
    let database = database_roles(cluster, index).contains(&"database");
    let asks_database = req.roles.iter().any(|r| r == "database");
    if database && !asks_database {
        return Err(ApiError::bad_request(
            "The \"database\" role cannot be dropped at this time",
        ));
    }
    if !database && asks_database {
        return Err(ApiError::bad_request(
            "The \"database\" role cannot be added at this time",
        ));
    }
    if req.groups.is_empty() {
        return Err(ApiError::bad_request(
            "Cluster members need to belong to at least one group",
        ));
    }
    let mut config = req.config.unwrap_or_default();
    if let Some(why) = config_problem(&config) {
        return Err(ApiError::internal(why));
    }
    if let Some(role) = req.roles.iter().find(|r| !known_role(r)) {
        return Err(ApiError::internal(format!(
            "Update roles: Invalid cluster role \"{role}\""
        )));
    }
    if req.failure_domain.is_empty() {
        return Err(ApiError::internal(
            "Update failure domain: Failure domain name can't be empty",
        ));
    }
    let mut state = ctx.app.state();
    let records = state.records_mut();
    if req.groups.iter().any(|g| records.group(g).is_none()) {
        return Err(ApiError::new(404, "Update cluster groups: Failed to add member to cluster group: Failed to get cluster group ID: Cluster_group not found"));
    }
    let record = records.member_mut(name);
    if patch {
        for (key, value) in &record.config {
            config.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
    record.config = config;
    record.roles = Vec::new();
    for role in req.roles {
        if !database_role(&role) && !record.roles.contains(&role) {
            record.roles.push(role);
        }
    }
    record.description = req.description;
    record.failure_domain = req.failure_domain;
    record.groups = Vec::new();
    for group in req.groups {
        if !record.groups.contains(&group) {
            record.groups.push(group);
        }
    }
    Ok(envelope::empty())
}
