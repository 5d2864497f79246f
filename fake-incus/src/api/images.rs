//! `/1.0/images` and `/1.0/images/aliases`: list, get (by fingerprint prefix), import (a
//! tarball upload, split or unified) and delete; aliases: list, get, create, rename, update
//! and delete.

use super::filter::Filter;
use super::image_archive::Compression;
use super::image_upload::{self, Form, Upload};
use super::resource::{check_etag, created};
use super::{parse_body, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::operations::OpSpec;
use crate::state::files::ImageFiles;
use crate::state::{clock, url, Image, State};
use bytes::Bytes;
use http::HeaderMap;
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::Digest;
use std::collections::BTreeMap;

/// The images visible from a project (shared with `default` when `features.images=false`).
fn images<'a>(state: &'a State, project: &str) -> impl Iterator<Item = &'a Image> {
    let owner = state.image_project(project);
    state.images.iter().filter(move |i| i.project == owner)
}

/// The images' project check, first of all but on `/1.0/images/{fingerprint}` (`rest`: the path
/// after `/1.0/images`).
pub(super) fn project_first(ctx: &Ctx, rest: &[&str]) -> Result<(), ApiError> {
    if !matches!(rest, [fp] if *fp != "aliases") {
        ctx.require_project(|_| {
            "Check if project has images: fetch project: Project not found".into()
        })?;
    }
    Ok(())
}

pub(super) fn list(ctx: &Ctx) -> ApiResult {
    let filter = ctx
        .param("filter")
        .filter(|f| !f.is_empty())
        .map(Filter::parse)
        .transpose()?;
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let mut out = Vec::new();
    for project in ctx.projects() {
        for image in images(state, &project) {
            let object = shown(ctx, image);
            if let Some(filter) = &filter {
                if !filter.matches(&object)? {
                    continue;
                }
            }
            // The daemon's image and alias URLs never carry `?project=`.
            out.push(if ctx.recursion() == 0 {
                json!(format!("/1.0/images/{}", image.fingerprint))
            } else {
                object
            });
        }
    }
    Ok(envelope::sync(Value::Array(out)))
}

/// A unique image by fingerprint prefix.
fn find<'a>(state: &'a State, project: &str, prefix: &str) -> Option<&'a Image> {
    if prefix.is_empty() {
        return None;
    }
    let mut matches = images(state, project).filter(|i| i.fingerprint.starts_with(prefix));
    let first = matches.next()?;
    matches.next().is_none().then_some(first)
}

pub(super) fn get(ctx: &Ctx, fingerprint: &str) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let image = find(state, &ctx.project(), fingerprint)
        .ok_or_else(|| ApiError::new(404, format!("Image \"{fingerprint}\" not found")))?;
    Ok(envelope::sync_etag(shown(ctx, image), &image.etag()))
}

/// An image as the daemon shows it: with [`crate::line::IMAGE_LOCATIONS`], the members that
/// hold it (every member of a fake cluster, by name; `none` standalone).
fn shown(ctx: &Ctx, image: &Image) -> Value {
    let mut object = image.to_json();
    if ctx.app.has_extension(crate::line::IMAGE_LOCATIONS) {
        let mut locations: Vec<String> = match ctx.app.cluster() {
            Some(cluster) => cluster.members.iter().map(|m| m.name.clone()).collect(),
            None => vec!["none".into()],
        };
        locations.sort();
        object["locations"] = json!(locations);
    }
    object
}

/// `DELETE /1.0/images/{fp}`: resolved when asked (so a second delete of an image whose first
/// delete still runs is accepted, as on the daemon), removed in the operation, which fails with
/// the daemon's 404 when the image went in the meantime.
pub(super) fn delete(ctx: &Ctx, fingerprint: &str) -> ApiResult {
    let project = ctx.project();
    let (owner, full) = {
        let state = ctx.app.state();
        let image = find(&state, &project, fingerprint)
            .ok_or_else(|| ApiError::new(404, "Image not found"))?;
        (image.project.clone(), image.fingerprint.clone())
    };
    let spec = OpSpec {
        project: project.clone(),
        class: "task",
        description: "Deleting image",
        // Operation resources carry the project (the daemon's operations add it).
        resources: BTreeMap::from([(
            "images".to_string(),
            vec![url(&format!("/1.0/images/{full}"), &project)],
        )]),
        metadata: Value::Null,
        may_cancel: false,
        duration: std::time::Duration::ZERO,
    };
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            let before = state.images.len();
            state
                .images
                .retain(|i| !(i.project == owner && i.fingerprint == full));
            if state.images.len() == before {
                return Err(ApiError::new(404, "Image not found"));
            }
            Ok(None)
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

pub(super) fn list_aliases(ctx: &Ctx) -> ApiResult {
    let project = ctx.project();
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let mut out = Vec::new();
    for image in images(state, &project) {
        for alias in &image.aliases {
            out.push(if ctx.recursion() == 0 {
                json!(format!("/1.0/images/aliases/{}", alias.name))
            } else {
                image.alias_json(alias)
            });
        }
    }
    Ok(envelope::sync(Value::Array(out)))
}

pub(super) fn get_alias(ctx: &Ctx, name: &str) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let project = ctx.project();
    let (image, alias) = images(state, &project)
        .find_map(|i| i.aliases.iter().find(|a| a.name == name).map(|a| (i, a)))
        .ok_or_else(|| ApiError::new(404, "Image alias not found"))?;
    let object = image.alias_json(alias);
    let etag = crate::state::etag::hash(&object);
    Ok(envelope::sync_etag(object, &etag))
}

/// The part of `api.ImagesPost` that decides what a JSON request is.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ImagesPost {
    source: ImagesPostSource,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ImagesPostSource {
    #[serde(rename = "type", deserialize_with = "super::null_default")]
    kind: String,
    #[serde(deserialize_with = "super::null_default")]
    mode: String,
}

/// `POST /1.0/images`. As the daemon does, the body is a JSON request when it decodes as one,
/// and otherwise an image upload (JSON that does not decode is refused only when sent as
/// `application/json`). Uploads are read here (see [`image_upload`]); what they become is
/// decided in the operation, like the daemon, which reports every upload problem there.
/// Publishing an instance or a snapshot is served ([`publish`]); other JSON requests (copying
/// from a remote or a URL, push tokens) are not simulated: 501.
pub(super) async fn create(ctx: &Ctx, headers: &HeaderMap, body: &Bytes) -> ApiResult {
    let header = |name: &str| {
        headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    let content_type = header("content-type");
    match parse_body::<ImagesPost>(body) {
        Ok(req) => {
            let known = [
                "container",
                "instance",
                "virtual-machine",
                "snapshot",
                "image",
                "url",
            ];
            if req.source.mode != "push" && !known.contains(&req.source.kind.as_str()) {
                return Err(ApiError::internal("Invalid images JSON"));
            }
            if matches!(
                req.source.kind.as_str(),
                "container" | "instance" | "virtual-machine" | "snapshot"
            ) {
                return publish(ctx, body);
            }
            return Err(ApiError::not_implemented());
        }
        Err(err) if content_type.as_deref() == Some("application/json") => return Err(err),
        Err(_) => {}
    }
    let form = Form::of(content_type.as_deref());
    let filename = header("x-incus-filename").unwrap_or_default();
    let owned = body.clone();
    let upload = match form {
        Form::Split(boundary) => image_upload::split(owned, boundary).await,
        Form::Unified => {
            tokio::task::spawn_blocking(move || image_upload::unified(&owned, &filename))
                .await
                .unwrap_or_else(|e| Err(image_upload::UploadError(e.to_string())))
        }
    };
    // The rootfs is kept by fingerprint: the image's instances start with it; the files as
    // uploaded are what its export sends.
    if let Ok(up) = &upload {
        let mut files = ctx.app.files();
        if let Some(rootfs) = &up.rootfs {
            files.set_image(&up.fingerprint, rootfs.clone());
        }
        files.set_image_files(&up.fingerprint, up.files.clone());
    }
    let request = UploadRequest {
        project: ctx.project(),
        public: header("x-incus-public").is_some_and(|v| is_true(&v)),
        properties: query_values(header("x-incus-properties").as_deref()),
        aliases: query_values(header("x-incus-aliases").as_deref())
            .into_iter()
            .filter(|(k, _)| k == "alias")
            .map(|(_, v)| v)
            .collect(),
        profiles: query_values(header("x-incus-profiles").as_deref())
            .into_iter()
            .filter(|(k, _)| k == "profile")
            .map(|(_, v)| v)
            .collect(),
        expected: header("x-incus-fingerprint").unwrap_or_default(),
    };
    let early_metadata = match &upload {
        Ok(up) => {
            let state = ctx.app.state();
            let profiles_exist = request
                .profiles
                .iter()
                .all(|p| state.profile(&request.project, p).is_some());
            (profiles_exist && up.kind != "unknown" && request.fingerprint_matches(up))
                .then(|| upload_metadata(up))
        }
        Err(_) => None,
    };
    let spec = OpSpec {
        project: request.project.clone(),
        class: "task",
        description: "Downloading image",
        resources: BTreeMap::new(),
        metadata: Value::Null,
        may_cancel: false,
        duration: std::time::Duration::ZERO,
    };
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| import(state, request, upload)),
    );
    // The daemon sets `fingerprint` and `size` once the upload is read, also when the import
    // then fails (a duplicate fingerprint, an alias in use); the 202 still has `null`.
    if let (Some(metadata), Some(id)) = (early_metadata, op["id"].as_str()) {
        ctx.app.operations.init_operation_metadata(id, metadata);
    }
    ctx.applied();
    Ok(envelope::operation_created(op))
}

/// What the upload's headers ask for.
struct UploadRequest {
    project: String,
    public: bool,
    properties: Vec<(String, String)>,
    aliases: Vec<String>,
    profiles: Vec<String>,
    expected: String,
}

impl UploadRequest {
    fn fingerprint_matches(&self, upload: &Upload) -> bool {
        self.expected.is_empty() || self.expected == upload.fingerprint
    }
}

/// Go's `util.IsTrue`.
fn is_true(value: &str) -> bool {
    matches!(
        value.to_ascii_lowercase().as_str(),
        "true" | "1" | "yes" | "on"
    )
}

/// `url.ParseQuery` of a header value (pairs in order; bad pairs skipped).
fn query_values(value: Option<&str>) -> Vec<(String, String)> {
    value
        .map(|v| {
            url::form_urlencoded::parse(v.as_bytes())
                .into_owned()
                .collect()
        })
        .unwrap_or_default()
}

fn upload_metadata(upload: &Upload) -> Value {
    json!({"fingerprint": upload.fingerprint, "size": upload.size.to_string()})
}

/// The import, in the operation: the daemon's checks in its order, then the image and its
/// aliases.
fn import(
    state: &mut State,
    request: UploadRequest,
    upload: Result<Upload, image_upload::UploadError>,
) -> Result<Option<Value>, ApiError> {
    let upload = upload.map_err(|e| ApiError::internal(e.0))?;
    if !request.fingerprint_matches(&upload) {
        return Err(ApiError::internal(format!(
            "fingerprints don't match, got {} expected {}",
            upload.fingerprint, request.expected
        )));
    }
    let project = request.project.as_str();
    if let Some(missing) = request
        .profiles
        .iter()
        .find(|p| state.profile(project, p).is_none())
    {
        return Err(ApiError::internal(format!(
            "Profile '{missing}' doesn't exist"
        )));
    }
    let owner = state.image_project(project);
    if state
        .images
        .iter()
        .any(|i| i.project == owner && i.fingerprint == upload.fingerprint)
    {
        return Err(ApiError::internal(
            "Image with same fingerprint already exists",
        ));
    }
    if upload.kind == "unknown" {
        return Err(ApiError::internal("Invalid instance type"));
    }
    let mut properties = upload.metadata.properties.clone();
    // `url.ParseQuery` keeps every value of a key; the daemon takes the first.
    let first_values: BTreeMap<&str, &str> = request
        .properties
        .iter()
        .rev()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    for (key, value) in first_values {
        properties.insert(key.to_string(), value.to_string());
    }
    let unix_time = |seconds: i64| {
        time::OffsetDateTime::from_unix_timestamp(seconds)
            .ok()
            .and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            })
            .unwrap_or_else(|| clock::ZERO_TIME.to_string())
    };
    let metadata = upload_metadata(&upload);
    let image = Image {
        project: owner.clone(),
        fingerprint: upload.fingerprint.clone(),
        properties,
        aliases: Vec::new(),
        public: request.public,
        // The daemon gives an image uploaded without profiles the `default` one.
        profiles: if request.profiles.is_empty() {
            crate::state::images::default_profiles()
        } else {
            request.profiles.clone()
        },
        auto_update: false,
        architecture: upload.metadata.architecture.clone(),
        filename: upload.filename.clone(),
        size: upload.size,
        kind: upload.kind.clone(),
        created_at: if upload.metadata.creation_date > 0 {
            unix_time(upload.metadata.creation_date)
        } else {
            clock::ZERO_TIME.to_string()
        },
        uploaded_at: clock::now(),
        last_used_at: clock::ZERO_TIME.into(),
        expires_at: if upload.metadata.expiry_date > 0 {
            unix_time(upload.metadata.expiry_date)
        } else {
            clock::ZERO_TIME.to_string()
        },
        executables: upload.executables,
    };
    state.images.push(image);
    // The image is recorded before its aliases, so an alias in use fails the operation and
    // leaves the image without it, as on the daemon.
    for name in request.aliases {
        if alias_owner(state, project, &name).is_some() {
            return Err(ApiError::internal(format!("Alias already exists: {name}")));
        }
        if let Some(image) = state
            .images
            .iter_mut()
            .find(|i| i.project == owner && i.fingerprint == upload.fingerprint)
        {
            image.aliases.push(crate::state::images::Alias {
                name,
                description: String::new(),
            });
        }
    }
    Ok(Some(metadata))
}

/// The index of the image that has this alias in the project's image store.
fn alias_owner(state: &State, project: &str, name: &str) -> Option<usize> {
    let owner = state.image_project(project);
    state
        .images
        .iter()
        .position(|i| i.project == owner && i.aliases.iter().any(|a| a.name == name))
}

/// `api.ImageAliasesPost` (also the body of `PUT` and of the rename `POST`).
#[derive(Deserialize, Default)]
#[serde(default)]
struct AliasBody {
    #[serde(deserialize_with = "super::null_default")]
    name: String,
    #[serde(deserialize_with = "super::null_default")]
    target: String,
    #[serde(deserialize_with = "super::null_default")]
    description: String,
}

fn alias_not_found() -> ApiError {
    ApiError::new(404, "Image alias not found")
}

fn alias_exists(name: &str) -> ApiError {
    ApiError::new(409, format!("Alias \"{name}\" already exists"))
}

/// `POST /1.0/images/aliases`: the target is a fingerprint or a unique prefix of one.
pub(super) fn create_alias(ctx: &Ctx, body: &[u8]) -> ApiResult {
    let req: AliasBody = parse_body(body)?;
    let checks_names = ctx
        .app
        .has_extension(crate::line::OBJECT_NAMES_ARE_API_NAMES);
    if req.name.is_empty() || req.target.is_empty() {
        return Err(ApiError::bad_request(if checks_names {
            "Alias name and target are required"
        } else {
            "name and target are required"
        }));
    }
    alias_api_name(ctx, &req.name)?;
    let project = ctx.project();
    let mut state = ctx.app.state();
    if alias_owner(&state, &project, &req.name).is_some() {
        return Err(alias_exists(&req.name));
    }
    let fingerprint = find(&state, &project, &req.target)
        .map(|i| i.fingerprint.clone())
        .ok_or_else(|| ApiError::new(404, "Image not found"))?;
    let owner = state.image_project(&project);
    if let Some(image) = state
        .images
        .iter_mut()
        .find(|i| i.project == owner && i.fingerprint == fingerprint)
    {
        image.aliases.push(crate::state::images::Alias {
            name: req.name.clone(),
            description: req.description,
        });
    }
    ctx.applied();
    created(&url(&format!("/1.0/images/aliases/{}", req.name), &project))
}

pub(super) fn delete_alias(ctx: &Ctx, name: &str) -> ApiResult {
    let project = ctx.project();
    let mut state = ctx.app.state();
    let index = alias_owner(&state, &project, name).ok_or_else(alias_not_found)?;
    state.images[index].aliases.retain(|a| a.name != name);
    ctx.applied();
    Ok(envelope::empty())
}

/// `POST /1.0/images/aliases/{name}` with a new `name`.
/// An alias name is an API name, `/` allowed, on a line that checks it
/// ([`crate::line::OBJECT_NAMES_ARE_API_NAMES`]).
fn alias_api_name(ctx: &Ctx, name: &str) -> Result<(), ApiError> {
    if !ctx
        .app
        .has_extension(crate::line::OBJECT_NAMES_ARE_API_NAMES)
    {
        return Ok(());
    }
    match super::validation::api_name_problem(name, true) {
        Some(why) => Err(ApiError::bad_request(format!(
            "Invalid image alias name: {why}"
        ))),
        None => Ok(()),
    }
}

pub(super) fn rename_alias(ctx: &Ctx, name: &str, body: &[u8]) -> ApiResult {
    let req: AliasBody = parse_body(body)?;
    alias_api_name(ctx, &req.name)?;
    let project = ctx.project();
    let mut state = ctx.app.state();
    if alias_owner(&state, &project, &req.name).is_some() {
        return Err(alias_exists(&req.name));
    }
    let index = alias_owner(&state, &project, name).ok_or_else(alias_not_found)?;
    for alias in &mut state.images[index].aliases {
        if alias.name == name {
            alias.name.clone_from(&req.name);
        }
    }
    ctx.applied();
    created(&url(&format!("/1.0/images/aliases/{}", req.name), &project))
}

/// `PUT` (target required) and `PATCH` (only the fields sent) of an alias, with `If-Match`.
pub(super) fn update_alias(
    ctx: &Ctx,
    name: &str,
    headers: &HeaderMap,
    body: &[u8],
    patch: bool,
) -> ApiResult {
    let (target, description) = if patch {
        let fields: serde_json::Map<String, Value> = parse_body(body)?;
        let text = |key: &str| match fields.get(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(ApiError::bad_request(format!(
                "Could not find key {key} in map"
            ))),
        };
        (text("target")?, text("description")?)
    } else {
        let req: AliasBody = parse_body(body)?;
        if req.target.is_empty() {
            return Err(ApiError::bad_request("The target field is required"));
        }
        (Some(req.target), Some(req.description))
    };
    let project = ctx.project();
    let mut state = ctx.app.state();
    let index = alias_owner(&state, &project, name).ok_or_else(alias_not_found)?;
    let current = state.images[index]
        .aliases
        .iter()
        .find(|a| a.name == name)
        .cloned()
        .ok_or_else(alias_not_found)?;
    let etag = crate::state::etag::hash(&state.images[index].alias_json(&current));
    check_etag(headers, &etag)?;
    let destination = match &target {
        Some(target) => {
            let fingerprint = if patch {
                // PATCH looks the target up by its full fingerprint.
                images(&state, &project)
                    .find(|i| i.fingerprint == *target)
                    .map(|i| i.fingerprint.clone())
            } else {
                find(&state, &project, target).map(|i| i.fingerprint.clone())
            };
            let fingerprint = fingerprint.ok_or_else(|| ApiError::new(404, "Image not found"))?;
            let owner = state.image_project(&project);
            state
                .images
                .iter()
                .position(|i| i.project == owner && i.fingerprint == fingerprint)
                .ok_or_else(|| ApiError::new(404, "Image not found"))?
        }
        None => index,
    };
    let alias = crate::state::images::Alias {
        name: name.to_string(),
        description: description.unwrap_or(current.description),
    };
    state.images[index].aliases.retain(|a| a.name != name);
    state.images[destination].aliases.push(alias);
    ctx.applied();
    Ok(envelope::empty())
}

/// The image a request names, or the daemon's 404 `Image not found`.
pub(super) fn found(state: &State, project: &str, fingerprint: &str) -> Result<Image, ApiError> {
    find(state, project, fingerprint)
        .cloned()
        .ok_or_else(|| ApiError::new(404, "Image not found"))
}

/// Applies a change to the image with this full fingerprint in the project's image store.
fn change_image(ctx: &Ctx, fingerprint: &str, change: impl FnOnce(&mut Image)) -> ApiResult {
    let project = ctx.project();
    let mut state = ctx.app.state();
    let owner = state.image_project(&project);
    if let Some(image) = state
        .images
        .iter_mut()
        .find(|i| i.project == owner && i.fingerprint == fingerprint)
    {
        change(image);
    }
    ctx.applied();
    Ok(envelope::empty())
}

/// `api.ImagePut`.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ImagePut {
    #[serde(deserialize_with = "super::null_default")]
    public: bool,
    #[serde(deserialize_with = "super::null_default")]
    auto_update: bool,
    #[serde(deserialize_with = "super::null_default")]
    properties: BTreeMap<String, String>,
    profiles: Option<Vec<String>>,
    #[serde(deserialize_with = "super::null_default")]
    expires_at: String,
}

/// `PUT /1.0/images/{fp}` (`incus image edit`): public, auto_update, properties and profiles
/// replaced (no profiles: `default`), `expires_at` set unless zero; a missing profile is the
/// daemon's 500.
pub(super) fn put(ctx: &Ctx, fingerprint: &str, headers: &HeaderMap, body: &[u8]) -> ApiResult {
    let project = ctx.project();
    let image = found(&ctx.app.state(), &project, fingerprint)?;
    check_etag(headers, &image.etag())?;
    let req: ImagePut = parse_body(body)?;
    let profiles = req
        .profiles
        .unwrap_or_else(crate::state::images::default_profiles);
    if let Some(missing) = profiles
        .iter()
        .find(|p| ctx.app.state().profile(&project, p).is_none())
    {
        return Err(ApiError::internal(format!(
            "Profile '{missing}' doesn't exist"
        )));
    }
    let expires = match req.expires_at.as_str() {
        "" | clock::ZERO_TIME => None,
        text => Some(super::snapshots::parse_time(text)?),
    };
    change_image(ctx, &image.fingerprint, |image| {
        image.public = req.public;
        image.auto_update = req.auto_update;
        image.properties = req.properties;
        // The database keeps no property with an empty value (`UpdateImage`): that is how
        // `incus image unset-property` (a PUT of the key with "") removes one.
        image.properties.retain(|_, value| !value.is_empty());
        image.profiles = profiles;
        if let Some(expires) = expires {
            image.expires_at = expires;
        }
    })
}

/// `PATCH /1.0/images/{fp}` (`incus image set-property`): `public` and `auto_update` when sent as
/// booleans, `properties` merged over the current ones.
pub(super) fn patch(ctx: &Ctx, fingerprint: &str, headers: &HeaderMap, body: &[u8]) -> ApiResult {
    let image = found(&ctx.app.state(), &ctx.project(), fingerprint)?;
    check_etag(headers, &image.etag())?;
    let fields: serde_json::Map<String, Value> = parse_body(body)?;
    let req: ImagePut = parse_body(body)?;
    change_image(ctx, &image.fingerprint, |image| {
        if let Some(public) = fields.get("public").and_then(Value::as_bool) {
            image.public = public;
        }
        if let Some(auto_update) = fields.get("auto_update").and_then(Value::as_bool) {
            image.auto_update = auto_update;
        }
        if fields.contains_key("properties") {
            let mut properties = req.properties;
            for (key, value) in &image.properties {
                properties
                    .entry(key.clone())
                    .or_insert_with(|| value.clone());
            }
            image.properties = properties;
            image.properties.retain(|_, value| !value.is_empty());
        }
    })
}

/// `GET /1.0/images/{fp}/export`: the files the image was imported or published as; an image
/// the fake was seeded with (no files) is exported as a unified tarball of its tree.
pub(super) fn export(ctx: &Ctx, fingerprint: &str) -> ApiResult {
    let image = find(&ctx.app.state(), &ctx.project(), fingerprint)
        .cloned()
        .ok_or_else(|| ApiError::new(404, format!("Image \"{fingerprint}\" not found")))?;
    let builtin = crate::state::defaults::busybox_files();
    let stored = ctx.app.files().image_files(&image.fingerprint).or_else(|| {
        (image.fingerprint == builtin.fingerprint).then(|| ImageFiles::Split {
            metadata: builtin.metadata.clone(),
            rootfs: builtin.rootfs.clone(),
        })
    });
    let files = match stored {
        Some(files) => files,
        None => {
            let tree = ctx
                .app
                .files()
                .rootfs(Some(&image.fingerprint), image.executables.as_deref())
                .unwrap_or_default();
            let tarball = super::image_archive::unified_tarball(
                &image.metadata_json(),
                &tree,
                Compression::Gzip,
            )?;
            ImageFiles::Unified(Bytes::from(tarball))
        }
    };
    Ok(super::image_archive::export_response(
        &image.fingerprint,
        files,
        image.kind == "virtual-machine",
    ))
}

/// `POST /1.0/images/{fp}/refresh`: an operation that fails as the daemon's does for an image
/// with no remote source (every image of the fake).
pub(super) fn refresh(ctx: &Ctx, fingerprint: &str) -> ApiResult {
    let project = ctx.project();
    let image = found(&ctx.app.state(), &project, fingerprint)?;
    let spec = OpSpec {
        project: project.clone(),
        class: "task",
        description: "Refreshing image",
        resources: BTreeMap::new(),
        metadata: Value::Null,
        may_cancel: false,
        duration: std::time::Duration::ZERO,
    };
    let op = ctx.start_task(
        spec,
        Box::new(move |_: &mut State| {
            Err(ApiError::new(
                404,
                format!(
                    "Failed to update image \"{}\" in project \"{project}\": Image source not found",
                    image.fingerprint
                ),
            ))
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}

/// `POST /1.0/images/{fp}/secret`: a running token operation (`Image download token`) whose
/// metadata holds the secret.
pub(super) fn secret(ctx: &Ctx, fingerprint: &str) -> ApiResult {
    let project = ctx.project();
    let image = found(&ctx.app.state(), &project, fingerprint)?;
    let spec = OpSpec {
        project: project.clone(),
        class: "token",
        description: "Image download token",
        resources: BTreeMap::from([(
            "images".to_string(),
            vec![url(&format!("/1.0/images/{}", image.fingerprint), &project)],
        )]),
        metadata: json!({"secret": super::certificates::secret()}),
        may_cancel: true,
        duration: std::time::Duration::ZERO,
    };
    let (_, operation) = ctx
        .app
        .operations
        .create_operation(spec, None, ctx.location());
    ctx.applied();
    Ok(envelope::operation_created(operation))
}

/// `api.ImagesPost` for a publish.
#[derive(Deserialize, Default)]
#[serde(default)]
struct PublishBody {
    source: PublishSource,
    #[serde(deserialize_with = "super::null_default")]
    properties: BTreeMap<String, String>,
    #[serde(deserialize_with = "super::null_default")]
    aliases: Vec<AliasBody>,
    #[serde(deserialize_with = "super::null_default")]
    public: bool,
    #[serde(deserialize_with = "super::null_default")]
    expires_at: String,
    #[serde(deserialize_with = "super::null_default")]
    compression_algorithm: String,
}

/// The compression of a publish: the request's, else the project's, else the server's
/// `images.compression_algorithm`, else gzip (the daemon's default).
fn publish_compression(state: &State, project: &str, req: &PublishBody) -> String {
    let configured = |config: Option<&String>| config.filter(|v| !v.is_empty()).cloned();
    let key = "images.compression_algorithm";
    Some(req.compression_algorithm.clone())
        .filter(|v| !v.is_empty())
        .or_else(|| configured(state.project(project).and_then(|p| p.config.get(key))))
        .or_else(|| configured(state.server_config.get(key)))
        .unwrap_or_else(|| "gzip".to_owned())
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct PublishSource {
    #[serde(rename = "type", deserialize_with = "super::null_default")]
    kind: String,
    #[serde(deserialize_with = "super::null_default")]
    name: String,
}

/// `POST /1.0/images` from an instance or a snapshot (`incus publish`): a `Downloading image`
/// operation that makes a unified tarball of the instance's (or snapshot's) tree and its
/// metadata with the request's properties, and records it as a new image with the request's
/// aliases; its result metadata is the fingerprint and size, as for an upload.
fn publish(ctx: &Ctx, body: &[u8]) -> ApiResult {
    let req: PublishBody = parse_body(body)?;
    let project = ctx.project();
    let spec = OpSpec {
        project: project.clone(),
        class: "task",
        description: "Downloading image",
        resources: BTreeMap::new(),
        metadata: Value::Null,
        may_cancel: false,
        duration: std::time::Duration::ZERO,
    };
    let app = std::sync::Arc::clone(&ctx.app);
    let op = ctx.start_task(
        spec,
        Box::new(move |state: &mut State| {
            let (name, snap) = match req.source.name.split_once('/') {
                Some((name, snap)) => (name.to_string(), Some(snap.to_string())),
                None => (req.source.name.clone(), None),
            };
            let instance = state
                .instance(&project, &name)
                .ok_or_else(|| super::instance_not_found(&name, &project))?;
            if let Some(snap) = &snap {
                if instance.snapshot(snap).is_none() {
                    return Err(super::snapshot_not_found(&name, snap, &project));
                }
            } else if instance.status != crate::state::PowerState::Stopped {
                return Err(ApiError::internal(
                    "Cannot export a running instance as an image",
                ));
            }
            let mut metadata = instance.metadata.clone().unwrap_or_else(|| json!({}));
            let mut properties: BTreeMap<String, String> = metadata["properties"]
                .as_object()
                .into_iter()
                .flatten()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect();
            properties.extend(req.properties.clone());
            let now = time::OffsetDateTime::now_utc();
            metadata["architecture"] = json!(instance.architecture);
            metadata["creation_date"] = json!(now.unix_timestamp());
            metadata["expiry_date"] = json!(0);
            metadata["properties"] = json!(properties);
            metadata["templates"] = json!({});
            let (kind, architecture) = (instance.kind.clone(), instance.architecture.clone());
            let compression = Compression::named(&publish_compression(state, &project, &req))?;
            let tree = app
                .files()
                .tree_of(&project, &name, snap.as_deref())
                .unwrap_or_default();
            let tarball = super::image_archive::unified_tarball(&metadata, &tree, compression)?;
            let fingerprint = hex::encode(sha2::Sha256::digest(&tarball));
            let owner = state.image_project(&project);
            if state
                .images
                .iter()
                .any(|i| i.project == owner && i.fingerprint == fingerprint)
            {
                return Err(ApiError::internal(
                    "Image with same fingerprint already exists",
                ));
            }
            if let Some(taken) = req
                .aliases
                .iter()
                .find(|a| alias_owner(state, &project, &a.name).is_some())
            {
                return Err(ApiError::internal(format!(
                    "Alias already exists: {}",
                    taken.name
                )));
            }
            let size = tarball.len() as u64;
            let now = clock::now();
            state.images.push(Image {
                project: owner,
                fingerprint: fingerprint.clone(),
                properties,
                aliases: req
                    .aliases
                    .iter()
                    .map(|a| crate::state::images::Alias {
                        name: a.name.clone(),
                        description: a.description.clone(),
                    })
                    .collect(),
                public: req.public,
                profiles: crate::state::images::default_profiles(),
                auto_update: false,
                architecture,
                filename: String::new(),
                size,
                kind,
                created_at: now.clone(),
                uploaded_at: now,
                last_used_at: clock::ZERO_TIME.into(),
                expires_at: if req.expires_at.is_empty() {
                    clock::ZERO_TIME.into()
                } else {
                    req.expires_at.clone()
                },
                executables: None,
            });
            let mut files = app.files();
            files.set_image(&fingerprint, tree);
            files.set_image_files(&fingerprint, ImageFiles::Unified(Bytes::from(tarball)));
            Ok(Some(
                json!({"fingerprint": fingerprint, "size": size.to_string()}),
            ))
        }),
    );
    ctx.applied();
    Ok(envelope::operation_created(op))
}
