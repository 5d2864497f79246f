//! One REST resource, declared once ([`Decl`] and the hooks of [`Resource`]), and the one
//! implementation of its endpoints ([`serve`]): list (recursion 0 and 1, `filter=`,
//! `all-projects`), get (with the ETag), create, `PUT`, `PATCH`, rename (`POST` with a new name)
//! and delete, with the daemon's status codes and answers. A resource module keeps only what is
//! its own: its declaration, its validation, how it renders, what it refuses, what follows a
//! change, and its sub-endpoints.
//!
//! Each declared resource contributes rows to the route table ([`routes`]): its collection, its
//! object and the endpoints below it, each with the checks the implementation makes first.

pub(crate) mod doc;
pub(crate) mod plain;
mod store;

pub(crate) use plain::Plain;

pub(crate) use store::{Objects, Store, Typed};

use super::filter::Filter;
use super::router::{Call, Check, Handler, Route, Step, ANY};
use super::{parse_body, Ctx};
use crate::envelope::{self, ApiError, ApiResult};
use crate::operations::OpSpec;
use crate::state::{etag, url, State};
use http::{HeaderMap, HeaderValue, StatusCode};
use serde_json::{json, Map, Value};
use std::sync::Arc;

/// Where an object lives: the project that owns it (after its feature's fallback to `default`)
/// and its parent's key (`""` for a top-level resource; `pool/bucket` for a bucket's keys).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct At {
    pub(crate) project: String,
    pub(crate) parent: String,
    /// The Incus line the fake answers as: what a hook asks `has_extension` of.
    pub(crate) line: crate::line::IncusLine,
}

/// Which project an object belongs to.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Scope {
    /// The server's: `project=` is ignored.
    Global,
    /// The request's project, or `default` when the project lacks this feature (`None`: always
    /// the request's project).
    Project(Option<&'static str>),
}

/// What a successful create or rename answers.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Answer {
    /// 201, `null` metadata, the object's URL in `Location` (the daemon's `SyncResponseLocation`).
    Location,
    /// 200 with `{}` (the daemon's `EmptySyncResponse`).
    Empty,
    /// An operation (202) whose task does the change.
    Operation(&'static str),
    /// Not served: 501, as the daemon answers a method it has no handler for.
    No,
}

/// The request a hook is asked about.
#[derive(Clone, Copy, PartialEq, Debug)]
pub(crate) enum Verb {
    Get,
    Create,
    /// `PUT`.
    Update,
    /// `PATCH`.
    Patch,
    Rename,
    Delete,
}

/// What a create or rename checks first, as the daemon's handler does: the answer to a request
/// that is wrong in several ways at once is the first check's.
#[derive(Clone, Copy, PartialEq)]
pub(crate) enum First {
    /// The parent, then the new name, then (a rename) the object.
    Parent,
    /// The new name, then the parent (a volume's name before its pool).
    Name,
    /// A rename looks the object up before it checks the new name (networks, ACLs,
    /// integrations load the object first).
    Object,
}

/// The declaration of one REST resource.
pub(crate) struct Decl {
    /// The collection's path; `{}` stands for a parent's key (`/1.0/networks/{}/forwards`).
    pub(crate) collection: &'static str,
    /// The field that names an object (`name`, `listen_address`, `fingerprint`).
    pub(crate) key: &'static str,
    pub(crate) scope: Scope,
    /// The fields `PUT` and `PATCH` may change, in the order the ETag hashes them.
    pub(crate) writable: &'static [&'static str],
    pub(crate) create: Answer,
    pub(crate) update: bool,
    pub(crate) rename: Answer,
    pub(crate) delete: bool,
    /// What a create or rename checks first.
    pub(crate) first: First,
    /// The 404 of an unknown object.
    pub(crate) not_found: &'static str,
    /// What the object is called in the daemon's name check, which a line with
    /// [`crate::line::OBJECT_NAMES_ARE_API_NAMES`] makes first on a create or rename
    /// (`Invalid network peer name: ...`); `""`: none.
    pub(crate) api_name: &'static str,
    /// How a line with [`crate::line::INTEGRATION_DELETE_BY_ID`] words an unknown object on a
    /// delete (its id lookup: `Failed to get network integration ID`); `""`: as a get does.
    pub(crate) delete_lookup: &'static str,
    /// The answer to a create (or rename) onto an existing key: status and text (`{name}`
    /// stands for the key).
    pub(crate) exists: (u16, &'static str),
    /// The 404 when `project=` names no project, on the collection and on an object (`{}`
    /// stands for the project).
    pub(crate) project_not_found: [&'static str; 2],
    /// What the fake does not do of this resource (API.md).
    pub(crate) limits: &'static str,
    /// Whether an empty list of URLs (recursion 0) is `null` (the daemon's nil slice) rather
    /// than `[]`; an empty list of objects is `[]` either way.
    pub(crate) null_when_empty: bool,
    /// Where its objects are kept.
    pub(crate) store: &'static dyn Store,
    /// The endpoints below an object.
    pub(crate) subs: &'static [Sub],
    /// The API extension that introduced the resource: a line without it routes none of its
    /// endpoints.
    pub(crate) extension: Option<&'static str>,
}

impl Decl {
    /// What most resources declare: keyed by `name`, the server's, `description` and `config`
    /// writable, created with a `Location`, updated and deleted, not renamed, no sub-endpoints.
    /// A declaration states its own fields and takes the rest from here (`..Decl::DEFAULTS`).
    pub(crate) const DEFAULTS: Decl = Decl {
        collection: "",
        key: "name",
        scope: Scope::Global,
        writable: &["description", "config"],
        create: Answer::Location,
        update: true,
        rename: Answer::No,
        delete: true,
        first: First::Parent,
        not_found: "",
        api_name: "",
        delete_lookup: "",
        exists: (409, ""),
        project_not_found: ["", ""],
        limits: "",
        null_when_empty: false,
        store: &Objects {
            kind: "",
            key: "name",
        },
        subs: &[],
        extension: None,
    };
}

/// An endpoint below an object (`/state`, `/leases`, `/log`, ...).
pub(crate) struct Sub {
    pub(crate) method: &'static str,
    /// The path after the object; `{}` matches any segment, handed to `serve`.
    pub(crate) path: &'static [&'static str],
    /// Answers with the context, the object's place, its key and the `{}` segments.
    pub(crate) serve: fn(&Ctx, &At, &str, &[&str]) -> ApiResult,
    /// What the fake answers (API.md).
    pub(crate) does: &'static str,
}

/// A declared resource: its [`Decl`], its store, and hooks whose defaults are the common case.
pub(crate) trait Resource: Sync {
    fn decl(&self) -> &Decl;
    /// The fields of a new object and their defaults (the key is added).
    fn template(&self) -> Value {
        json!({"description": "", "config": {}})
    }
    /// Whether the parent exists (its 404 otherwise).
    fn parent(&self, _state: &State, _at: &At) -> Result<(), ApiError> {
        Ok(())
    }
    /// Whether a key is a valid name for a new object.
    fn check_key(&self, key: &str, at: &At) -> Result<(), ApiError> {
        plain::any_name(key, at)
    }
    /// Fills what a new object takes from the server (its creation time, a project's default
    /// features) before it is checked.
    fn prepare(&self, _state: &State, _at: &At, _object: &mut Value) -> Result<(), ApiError> {
        Ok(())
    }
    /// A create this resource answers its own way (a certificate's trust token).
    fn intercept_create(&self, _ctx: &Ctx, _at: &At, _body: &[u8]) -> Option<ApiResult> {
        None
    }
    /// A `PUT` this resource answers its own way (a volume's `restore`).
    fn intercept_update(
        &self,
        _ctx: &Ctx,
        _at: &At,
        _key: &str,
        _body: &[u8],
    ) -> Option<ApiResult> {
        None
    }
    /// A rename (`POST` on the object) this resource answers its own way (a volume moved to
    /// another pool).
    fn intercept_rename(
        &self,
        _ctx: &Ctx,
        _at: &At,
        _key: &str,
        _body: &[u8],
    ) -> Option<ApiResult> {
        None
    }
    /// Whether a rename's body asks for more than a new name (a move: 501 where the fake has
    /// no such thing).
    fn check_rename(&self, _body: &Map<String, Value>, _at: &At) -> Result<(), ApiError> {
        Ok(())
    }
    /// Whether the body of a `PUT` or `PATCH` may be asked at all, checked before its object is
    /// looked up (a warning's `status`); the others' bodies are read after the lookup and the
    /// ETag check, as the daemon reads them.
    fn check_request(&self, _body: &[u8]) -> Result<(), ApiError> {
        Ok(())
    }
    /// Whether an object may be stored as it is (`current`: what it replaces, on an update).
    fn validate(
        &self,
        _state: &State,
        _at: &At,
        _object: &Value,
        _current: Option<&Value>,
    ) -> Result<(), ApiError> {
        Ok(())
    }
    /// Whether a list shows the object to this caller (a restricted certificate sees only its
    /// projects).
    /// What a create or update checks after [`Resource::validate`] that depends on the Incus
    /// line the fake answers as (`current`: the object before an update).
    fn validate_for_line(
        &self,
        _ctx: &Ctx,
        _state: &State,
        _at: &At,
        _object: &Value,
        _current: Option<&Value>,
    ) -> Result<(), ApiError> {
        Ok(())
    }
    fn shown_to(&self, _ctx: &Ctx, _object: &Value) -> bool {
        true
    }
    /// What a get reads by a key the store does not hold (a custom volume's snapshot read as
    /// the volume `NAME/SNAPSHOT`): its rendering and ETag; `None` (the default): not found.
    fn read_other(&self, _state: &State, _at: &At, _key: &str) -> Option<(Value, String)> {
        None
    }
    /// The object as the API shows it (adds `used_by`, the project, computed fields).
    fn render(&self, _state: &State, _at: &At, object: Value) -> Value {
        object
    }
    /// The daemon's ETag of the object (default: its writable fields, in order).
    fn etag(&self, object: &Value) -> String {
        let fields: Vec<&Value> = self
            .decl()
            .writable
            .iter()
            .map(|f| object.get(*f).unwrap_or(&Value::Null))
            .collect();
        etag::hash(&fields)
    }
    /// The object after a `PUT` (absent writable fields take their defaults) or a `PATCH`
    /// (absent fields kept; maps merged key by key, a key set to `""` removed).
    fn merge(&self, current: &Value, body: &Map<String, Value>, patch: bool) -> Value {
        merge(self.decl().writable, &self.template(), current, body, patch)
    }
    fn not_found(&self, _verb: Verb, _key: &str) -> ApiError {
        ApiError::new(404, self.decl().not_found)
    }
    fn exists(&self, _verb: Verb, key: &str) -> ApiError {
        let (status, text) = self.decl().exists;
        ApiError::new(status, text.replace("{name}", key))
    }
    /// Whether a unique prefix of a key names its object (certificates' fingerprints).
    fn by_prefix(&self) -> bool {
        false
    }
    /// Whether an object may ever be renamed or deleted (the `default` profile may not).
    fn protected(&self, _key: &str, _verb: Verb) -> Result<(), ApiError> {
        Ok(())
    }
    /// Whether the object may be deleted (or renamed) now: refusals such as "in use".
    fn refuse(&self, _state: &State, _at: &At, _key: &str, _verb: Verb) -> Result<(), ApiError> {
        Ok(())
    }
    /// What follows a create (a project's `default` profile, a trusted certificate).
    fn created(&self, _ctx: &Ctx, _state: &mut State, _at: &At, _object: &Value) {}
    /// What follows an update; an error is answered after the change is saved.
    fn updated(
        &self,
        _state: &mut State,
        _at: &At,
        _before: &Value,
        _after: &Value,
    ) -> Result<(), ApiError> {
        Ok(())
    }
    /// What follows a rename (references to the old name follow it).
    fn renamed(&self, _state: &mut State, _at: &At, _old: &str, _new: &str) {}
    /// What follows a delete.
    fn deleted(&self, _ctx: &Ctx, _state: &mut State, _at: &At, _key: &str) {}
}

/// The `PUT`/`PATCH` merge of the daemon for plain objects.
pub(crate) fn merge(
    writable: &[&str],
    template: &Value,
    current: &Value,
    body: &Map<String, Value>,
    patch: bool,
) -> Value {
    let mut out = current.clone();
    for field in writable {
        let sent = body.get(*field).filter(|v| !v.is_null());
        let value = match (sent, patch, current.get(*field)) {
            (Some(Value::Object(sent)), true, Some(Value::Object(now))) => {
                let mut merged = now.clone();
                for (k, v) in sent {
                    merged.insert(k.clone(), v.clone());
                }
                Value::Object(merged)
            }
            (Some(sent), _, _) => sent.clone(),
            (None, true, Some(now)) => now.clone(),
            (None, _, _) => template.get(*field).cloned().unwrap_or(Value::Null),
        };
        out[*field] = without_empty(value);
    }
    out
}

/// A map with its `""` values removed (how the daemon stores a config); other values as they are.
pub(crate) fn without_empty(value: Value) -> Value {
    match value {
        Value::Object(map) if map.values().all(Value::is_string) => Value::Object(
            map.into_iter()
                .filter(|(_, v)| v.as_str() != Some(""))
                .collect(),
        ),
        other => other,
    }
}

/// Every declared resource, in the order API.md lists them.
pub(crate) fn table() -> &'static [&'static dyn Resource] {
    super::declared()
}

/// What a declared resource checks before the method is looked at, as a check row of the
/// route table.
#[derive(Clone, Copy)]
pub(crate) enum Before {
    /// The collection's: the request's project exists.
    Collection,
    /// An object's: the request's project exists.
    Object,
    /// An endpoint below an object: the project, then the object's parent.
    Sub,
}

/// A declared resource's endpoint, as a row of the route table.
#[derive(Clone, Copy)]
pub(crate) enum Action {
    List,
    Create,
    Get,
    Update,
    Patch,
    Rename,
    Delete,
    Sub(&'static Sub),
    /// A path below an object that no endpoint serves: the project's 404, else `not found`.
    Unknown,
}

/// The rows a declared resource contributes to the route table: its collection, its object
/// and the endpoints below it, each after the checks the generic implementation makes first.
pub(crate) fn routes(resource: &'static dyn Resource) -> Vec<Route> {
    const GET: &[&str] = &["GET"];
    const POST: &[&str] = &["POST"];
    const PUT: &[&str] = &["PUT"];
    const PATCH: &[&str] = &["PATCH"];
    const DELETE: &[&str] = &["DELETE"];
    let decl = resource.decl();
    let collection = decl.collection.replace("{}", "{name}");
    let object = format!("{collection}/{{{}}}", decl.key.replace('_', "-"));
    let row = |path: &str, methods: &'static [&'static str], step: Step| Route {
        path: path.to_owned().into(),
        methods,
        extension: decl.extension,
        guard: None,
        step,
    };
    let check = |path: &str, before: Before| {
        let check = move |ctx: &Ctx, call: &Call| first(resource, ctx, before, &call.args());
        row(path, ANY, Step::Check(Check::Generic(Arc::new(check))))
    };
    let answer = |path: &str, methods, action: Action| {
        row(
            path,
            methods,
            Step::Answer(Handler::Generic(Arc::new(move |ctx: &Ctx, call: &Call| {
                respond(resource, ctx, action, call)
            }))),
        )
    };
    let scoped = decl.scope != Scope::Global;
    let mut out = Vec::new();
    if scoped {
        out.push(check(&collection, Before::Collection));
    }
    out.push(answer(&collection, GET, Action::List));
    if decl.create != Answer::No {
        out.push(answer(&collection, POST, Action::Create));
    }
    if scoped {
        out.push(check(&object, Before::Object));
    }
    out.push(answer(&object, GET, Action::Get));
    if decl.update {
        out.push(answer(&object, PUT, Action::Update));
        out.push(answer(&object, PATCH, Action::Patch));
    }
    if decl.rename != Answer::No {
        out.push(answer(&object, POST, Action::Rename));
    }
    if decl.delete {
        out.push(answer(&object, DELETE, Action::Delete));
    }
    let mut paths: Vec<&[&str]> = Vec::new();
    for sub in decl.subs {
        if !paths.contains(&sub.path) {
            paths.push(sub.path);
        }
    }
    for path in paths {
        let below = path
            .iter()
            .map(|s| if *s == "{}" { "{name}" } else { s })
            .collect::<Vec<_>>()
            .join("/");
        let below = format!("{object}/{below}");
        out.push(check(&below, Before::Sub));
        for sub in decl.subs.iter().filter(|s| s.path == path) {
            out.push(answer(
                &below,
                std::slice::from_ref(&sub.method),
                Action::Sub(sub),
            ));
        }
    }
    out.push(answer(&format!("{object}/**"), ANY, Action::Unknown));
    out
}

/// How many of a request's arguments name the object's parents.
fn parents(resource: &dyn Resource) -> usize {
    resource.decl().collection.matches("{}").count()
}

/// A check row of a declared resource (see [`Before`]); `args` are the path's arguments.
pub(crate) fn first(
    resource: &'static dyn Resource,
    ctx: &Ctx,
    before: Before,
    args: &[&str],
) -> Result<(), ApiError> {
    let decl = resource.decl();
    if decl.scope != Scope::Global {
        let text = decl.project_not_found[usize::from(!matches!(before, Before::Collection))];
        ctx.require_project(|p| text.replace("{}", p))?;
    }
    if let Before::Sub = before {
        let parent = args[..parents(resource)].join("/");
        let at = at(resource, ctx, &ctx.project(), &parent);
        resource.parent(&ctx.app.snapshot().state, &at)?;
    }
    Ok(())
}

/// A create in the collection below `parent`, checked as the collection's `POST` is (the
/// volumes' typed create hands its custom volumes here).
pub(crate) fn create_below(
    resource: &'static dyn Resource,
    ctx: &Ctx,
    parent: &str,
    body: &[u8],
) -> ApiResult {
    first(resource, ctx, Before::Collection, &[])?;
    let at = at(resource, ctx, &ctx.project(), parent);
    create(resource, ctx, &at, body)
}

/// An endpoint row of a declared resource (see [`Action`]).
pub(crate) fn respond(
    resource: &'static dyn Resource,
    ctx: &Ctx,
    action: Action,
    call: &Call,
) -> ApiResult {
    let args = call.args();
    let (parent, rest) = args.split_at(parents(resource).min(args.len()));
    let parent = parent.join("/");
    let key = rest.first().copied().unwrap_or_default();
    let at = at(resource, ctx, &ctx.project(), &parent);
    let (headers, body) = (call.headers(), call.body());
    match action {
        Action::List => list(resource, ctx, &parent),
        Action::Create => create(resource, ctx, &at, body),
        Action::Get => get(resource, ctx, &at, key),
        Action::Update => update(resource, ctx, &at, key, headers, body, false),
        Action::Patch => update(resource, ctx, &at, key, headers, body, true),
        Action::Rename => rename(resource, ctx, &at, key, body),
        Action::Delete => delete(resource, ctx, &at, key),
        Action::Sub(sub) => (sub.serve)(ctx, &at, key, rest.get(1..).unwrap_or_default()),
        Action::Unknown => {
            first(resource, ctx, Before::Object, &args)?;
            Err(ApiError::not_found())
        }
    }
}

/// Where the objects of `project` live for this resource.
fn at(resource: &dyn Resource, ctx: &Ctx, project: &str, parent: &str) -> At {
    let project = match resource.decl().scope {
        Scope::Global => String::new(),
        Scope::Project(None) => project.to_owned(),
        Scope::Project(Some(feature)) => ctx.app.snapshot().state.feature_project(project, feature),
    };
    At {
        project,
        parent: parent.to_owned(),
        line: ctx.app.settings.line,
    }
}

/// The URL of an object of this resource.
pub(crate) fn object_url(resource: &dyn Resource, at: &At, key: &str) -> String {
    let mut parents = at.parent.split('/');
    let collection: Vec<String> = resource
        .decl()
        .collection
        .split('/')
        .map(|s| match s {
            "{}" => encode(parents.next().unwrap_or_default()),
            s => s.to_owned(),
        })
        .collect();
    let path = format!("{}/{}", collection.join("/"), encode(key));
    if at.project.is_empty() {
        path
    } else {
        url(&path, &at.project)
    }
}

fn encode(key: &str) -> String {
    percent_encoding::utf8_percent_encode(key, percent_encoding::NON_ALPHANUMERIC)
        .to_string()
        .replace("%2D", "-")
        .replace("%2E", ".")
        .replace("%5F", "_")
}

fn key_of<'v>(resource: &dyn Resource, object: &'v Value) -> &'v str {
    object[resource.decl().key].as_str().unwrap_or_default()
}

/// The stored object `key` at `at` (or, where keys are fingerprints, the one object whose key
/// starts with `key`).
pub(crate) fn find_object(
    resource: &dyn Resource,
    state: &State,
    at: &At,
    key: &str,
) -> Option<Value> {
    let objects = resource.decl().store.list(state, at);
    if let Some(found) = objects.iter().find(|o| key_of(resource, o) == key) {
        return Some(found.clone());
    }
    let mut prefixed = objects.into_iter().filter(|o| {
        resource.by_prefix() && !key.is_empty() && key_of(resource, o).starts_with(key)
    });
    match (prefixed.next(), prefixed.next()) {
        (Some(only), None) => Some(only),
        _ => None,
    }
}

fn list(resource: &'static dyn Resource, ctx: &Ctx, parent: &str) -> ApiResult {
    let filter = ctx.param("filter").map(Filter::parse).transpose()?;
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    let projects = match resource.decl().scope {
        Scope::Global => vec![String::new()],
        Scope::Project(_) => ctx.projects(),
    };
    let mut seen = Vec::new();
    let mut items = Vec::new();
    for project in projects {
        let at = at(resource, ctx, &project, parent);
        if seen.contains(&at) {
            continue;
        }
        resource.parent(state, &at)?;
        for object in resource.decl().store.list(state, &at) {
            if !resource.shown_to(ctx, &object) {
                continue;
            }
            let key = key_of(resource, &object).to_owned();
            let rendered = resource.render(state, &at, object);
            if let Some(filter) = &filter {
                if !filter.matches(&rendered)? {
                    continue;
                }
            }
            let shown_in = At {
                project: if at.project.is_empty() {
                    at.project.clone()
                } else {
                    project.clone()
                },
                parent: at.parent.clone(),
                line: at.line,
            };
            items.push(if ctx.recursion() == 0 {
                json!(object_url(resource, &shown_in, &key))
            } else {
                rendered
            });
        }
        seen.push(at);
    }
    if items.is_empty() && resource.decl().null_when_empty && ctx.recursion() == 0 {
        return Ok(envelope::sync(Value::Null));
    }
    Ok(envelope::sync(Value::Array(items)))
}

fn get(resource: &'static dyn Resource, ctx: &Ctx, at: &At, key: &str) -> ApiResult {
    let snapshot = ctx.app.snapshot();
    let state = &snapshot.state;
    resource.parent(state, at)?;
    let Some(object) = find_object(resource, state, at, key) else {
        let (rendered, etag) = resource
            .read_other(state, at, key)
            .ok_or_else(|| resource.not_found(Verb::Get, key))?;
        return Ok(envelope::sync_etag(rendered, &etag));
    };
    let etag = resource.etag(&object);
    Ok(envelope::sync_etag(
        resource.render(state, at, object),
        &etag,
    ))
}

/// The answer to a successful create or rename.
fn answer(answer: Answer, location: &str) -> ApiResult {
    match answer {
        Answer::Location => created(location),
        _ => Ok(envelope::empty()),
    }
}

/// 201 with the new object's URL in `Location` and `null` metadata, as the daemon answers a
/// synchronous create or rename.
pub(crate) fn created(location: &str) -> ApiResult {
    let mut resp = envelope::sync(Value::Null);
    *resp.status_mut() = StatusCode::CREATED;
    if let Ok(value) = HeaderValue::from_str(location) {
        resp.headers_mut().insert(http::header::LOCATION, value);
    }
    Ok(resp)
}

/// 412 unless `If-Match` (when sent) is the object's current ETag.
pub(crate) fn check_etag(headers: &HeaderMap, current: &str) -> Result<(), ApiError> {
    let Some(sent) = headers.get(http::header::IF_MATCH) else {
        return Ok(());
    };
    let sent = String::from_utf8_lossy(sent.as_bytes());
    let sent = sent.trim_matches('"');
    if sent == current {
        Ok(())
    } else {
        Err(ApiError::new(
            412,
            format!("ETag doesn't match: {current} vs {sent}"),
        ))
    }
}

pub(crate) fn body_object(body: &[u8]) -> Result<Map<String, Value>, ApiError> {
    let value: Value = parse_body(body)?;
    match value {
        Value::Object(map) => Ok(map),
        Value::Null => Ok(Map::new()),
        _ => Err(ApiError::bad_request(
            "json: cannot unmarshal array into Go value of type struct",
        )),
    }
}

fn create(resource: &'static dyn Resource, ctx: &Ctx, at: &At, body: &[u8]) -> ApiResult {
    let decl = resource.decl();
    api_name_first(resource, ctx, body, decl.key)?;
    if let Some(answer) = resource.intercept_create(ctx, at, body) {
        return answer;
    }
    let sent = body_object(body)?;
    let mut object = resource.template();
    for (field, value) in &sent {
        if object.get(field).is_some() && !value.is_null() {
            object[field.as_str()] = without_empty(value.clone());
        }
    }
    let key = sent.get(decl.key).cloned().unwrap_or(json!(""));
    if decl.first == First::Name {
        resource.check_key(key.as_str().unwrap_or_default(), at)?;
    }
    object[decl.key] = key;
    let mut state = ctx.app.state();
    resource.parent(&state, at)?;
    resource.prepare(&state, at, &mut object)?;
    let key = object[decl.key].as_str().unwrap_or_default().to_owned();
    resource.check_key(&key, at)?;
    if find_object(resource, &state, at, &key).is_some() {
        return Err(resource.exists(Verb::Create, &key));
    }
    resource.validate(&state, at, &object, None)?;
    resource.validate_for_line(ctx, &state, at, &object, None)?;
    resource
        .decl()
        .store
        .insert(&mut state, at, object.clone())?;
    resource.created(ctx, &mut state, at, &object);
    drop(state);
    ctx.applied();
    answer(decl.create, &object_url(resource, at, &key))
}

/// The daemon's check of a new `noun` name on a line that makes it
/// ([`crate::line::OBJECT_NAMES_ARE_API_NAMES`]: `validate.IsAPIName`), `Invalid {noun} name:
/// why` (400); `Ok` on a line that does not. A resource's [`Resource::check_key`] calls it where
/// its handler makes the check.
pub(crate) fn api_name(at: &At, noun: &str, key: &str) -> Result<(), ApiError> {
    super::validation::checked_api_name(names_are_api_names(at), noun, key)
}

/// Whether the line checks new names as API names ([`api_name`]).
pub(crate) fn names_are_api_names(at: &At) -> bool {
    at.line
        .has_extension(crate::line::OBJECT_NAMES_ARE_API_NAMES)
}

/// The daemon's first check of a new name, on a line that makes it
/// ([`crate::line::OBJECT_NAMES_ARE_API_NAMES`]) and for a resource that declares it.
pub(crate) fn api_name_first(
    resource: &dyn Resource,
    ctx: &Ctx,
    body: &[u8],
    field: &str,
) -> Result<(), ApiError> {
    let noun = resource.decl().api_name;
    if noun.is_empty()
        || !ctx
            .app
            .has_extension(crate::line::OBJECT_NAMES_ARE_API_NAMES)
    {
        return Ok(());
    }
    let sent = body_object(body)?;
    let name = sent.get(field).and_then(Value::as_str).unwrap_or_default();
    super::validation::checked_api_name(true, noun, name)
}

fn update(
    resource: &'static dyn Resource,
    ctx: &Ctx,
    at: &At,
    key: &str,
    headers: &HeaderMap,
    body: &[u8],
    patch: bool,
) -> ApiResult {
    if let Some(answer) = Some(())
        .filter(|()| !patch)
        .and_then(|()| resource.intercept_update(ctx, at, key, body))
    {
        return answer;
    }
    let mut state = ctx.app.state();
    resource.parent(&state, at)?;
    resource.check_request(body)?;
    let verb = if patch { Verb::Patch } else { Verb::Update };
    let current =
        find_object(resource, &state, at, key).ok_or_else(|| resource.not_found(verb, key))?;
    check_etag(headers, &resource.etag(&current))?;
    let sent = body_object(body)?;
    let next = resource.merge(&current, &sent, patch);
    resource.validate(&state, at, &next, Some(&current))?;
    resource.validate_for_line(ctx, &state, at, &next, Some(&current))?;
    resource
        .decl()
        .store
        .replace(&mut state, at, key_of(resource, &current), next.clone())?;
    ctx.applied();
    resource.updated(&mut state, at, &current, &next)?;
    Ok(envelope::empty())
}

fn rename(
    resource: &'static dyn Resource,
    ctx: &Ctx,
    at: &At,
    key: &str,
    body: &[u8],
) -> ApiResult {
    api_name_first(resource, ctx, body, "name")?;
    if let Some(answer) = resource.intercept_rename(ctx, at, key, body) {
        return answer;
    }
    let sent = body_object(body)?;
    let new = sent
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    let (old, place) = (key.to_owned(), at.clone());
    resource.protected(key, Verb::Rename)?;
    resource.check_rename(&sent, at)?;
    let first = resource.decl().first;
    if first == First::Name {
        resource.check_key(&new, at)?;
    }
    let work = move |state: &mut State| -> Result<(), ApiError> {
        resource.parent(state, &place)?;
        let unknown = || resource.not_found(Verb::Rename, &old);
        let found = find_object(resource, state, &place, &old);
        if first == First::Object && found.is_none() {
            return Err(unknown());
        }
        resource.check_key(&new, &place)?;
        if find_object(resource, state, &place, &new).is_some() {
            return Err(resource.exists(Verb::Rename, &new));
        }
        let mut object = found.ok_or_else(unknown)?;
        resource.refuse(state, &place, &old, Verb::Rename)?;
        object[resource.decl().key] = json!(new);
        resource.decl().store.replace(state, &place, &old, object)?;
        resource.renamed(state, &place, &old, &new);
        Ok(())
    };
    let decl = resource.decl();
    if let Answer::Operation(description) = decl.rename {
        // The operation belongs to no project (`OperationCreate(s, "", ...)` of a project
        // rename): its events reach every listener, whatever project it watches.
        let spec = OpSpec {
            resources: Default::default(),
            ..OpSpec::task("", description, String::new())
        };
        let op = ctx.start_task(
            spec,
            Box::new(move |state: &mut State| work(state).map(|()| None)),
        );
        ctx.applied();
        return Ok(envelope::operation_created(op));
    }
    let location = object_url(
        resource,
        at,
        sent.get("name").and_then(Value::as_str).unwrap_or_default(),
    );
    let mut state = ctx.app.state();
    work(&mut state)?;
    drop(state);
    ctx.applied();
    answer(decl.rename, &location)
}

fn delete(resource: &'static dyn Resource, ctx: &Ctx, at: &At, key: &str) -> ApiResult {
    let mut state = ctx.app.state();
    resource.protected(key, Verb::Delete)?;
    resource.parent(&state, at)?;
    let object = find_object(resource, &state, at, key).ok_or_else(|| {
        let unknown = resource.not_found(Verb::Delete, key);
        let lookup = resource.decl().delete_lookup;
        if lookup.is_empty() || !ctx.app.has_extension(crate::line::INTEGRATION_DELETE_BY_ID) {
            return unknown;
        }
        ApiError::new(unknown.status, format!("{lookup}: {}", unknown.message))
    })?;
    let key = key_of(resource, &object);
    resource.refuse(&state, at, key, Verb::Delete)?;
    resource.decl().store.remove(&mut state, at, key);
    resource.deleted(ctx, &mut state, at, key);
    drop(state);
    ctx.applied();
    Ok(envelope::empty())
}
