//! [`Plain`]: a resource whose whole behaviour is its declaration. Its objects live in the
//! state's generic store; it checks its key with a rule, its config keys against the prefixes
//! it accepts, and its parent with a function; its object is its stored fields with the
//! request's project shown in `project` (when it has one).

use super::{At, Decl, Resource, Scope, Verb};
use crate::api::Ctx;
use crate::envelope::ApiError;
use crate::state::State;
use serde_json::{json, Value};

/// A rule an object (or a request's body) must satisfy.
pub(crate) type Check = fn(&Value) -> Result<(), ApiError>;

/// A rule an object must satisfy on some Incus lines: the context, the state, where the object
/// lives, the object.
pub(crate) type LineCheck = fn(&Ctx, &State, &At, &Value) -> Result<(), ApiError>;

pub(crate) struct Plain {
    pub(crate) decl: Decl,
    /// The object's fields and their defaults (JSON).
    pub(crate) fields: &'static str,
    /// The config keys it accepts (prefixes; a key ending in `.` is a namespace).
    pub(crate) config_keys: &'static [&'static str],
    /// The answer to another config key (`{key}` stands for it).
    pub(crate) invalid_key: (u16, &'static str),
    /// The rule of a new object's key.
    pub(crate) key_rule: fn(&str, &At) -> Result<(), ApiError>,
    /// Whether the parent exists, and may hold such objects.
    pub(crate) parent: fn(&State, &At) -> Result<(), ApiError>,
    /// What else an object must satisfy.
    pub(crate) check: Check,
    /// What the body of a `PUT` or `PATCH` must satisfy, where the daemon reads the body before
    /// it looks the object up.
    pub(crate) request: Option<Check>,
    /// The answer to a rename of an unknown object, where it is not the others' 404.
    pub(crate) renaming_unknown: Option<(u16, &'static str)>,
    /// Whether a list shows the object to this request.
    pub(crate) shown: fn(&Ctx, &Value) -> bool,
    /// What the object shows beyond its stored fields (an ACL's `used_by`).
    pub(crate) computed: fn(&State, &At, Value) -> Value,
    /// The refusal of a rename or delete while its `used_by` is not empty (`{verb}` stands for
    /// `rename` or `delete`).
    pub(crate) in_use: Option<(u16, &'static str)>,
    /// What else an object must satisfy that depends on the Incus line (see
    /// [`Resource::validate_for_line`]).
    pub(crate) line_check: LineCheck,
}

impl Plain {
    /// What most plain resources declare (see [`Decl::DEFAULTS`]): `name`, `description` and
    /// `config` fields, `user.*` config keys only, any name without `/`, no parent, nothing
    /// more to check.
    pub(crate) const DEFAULTS: Plain = Plain {
        decl: Decl::DEFAULTS,
        fields: r#"{"name":"","description":"","config":{}}"#,
        config_keys: &["user."],
        invalid_key: (400, "Invalid option \"{key}\""),
        key_rule: any_name,
        parent: top,
        check: anything,
        request: None,
        renaming_unknown: None,
        shown: |_, _| true,
        computed: |_, _, object| object,
        in_use: None,
        line_check: |_, _, _, _| Ok(()),
    };
}

/// A key that is not empty and holds no `/`.
pub(crate) fn any_name(key: &str, _: &At) -> Result<(), ApiError> {
    match key {
        "" => Err(ApiError::bad_request("No name provided")),
        k if k.contains('/') => Err(ApiError::bad_request("Name cannot contain \"/\"")),
        _ => Ok(()),
    }
}

/// Nothing above it.
pub(crate) fn top(_: &State, _: &At) -> Result<(), ApiError> {
    Ok(())
}

/// Nothing more to check.
pub(crate) fn anything(_: &Value) -> Result<(), ApiError> {
    Ok(())
}

impl Resource for Plain {
    fn decl(&self) -> &Decl {
        &self.decl
    }
    fn template(&self) -> Value {
        serde_json::from_str(self.fields).unwrap_or_else(|_| json!({}))
    }
    fn parent(&self, state: &State, at: &At) -> Result<(), ApiError> {
        (self.parent)(state, at)
    }
    fn check_key(&self, key: &str, at: &At) -> Result<(), ApiError> {
        (self.key_rule)(key, at)
    }
    fn check_request(&self, body: &[u8]) -> Result<(), ApiError> {
        match self.request {
            Some(check) => check(&Value::Object(super::body_object(body)?)),
            None => Ok(()),
        }
    }
    fn not_found(&self, verb: Verb, _key: &str) -> ApiError {
        match (verb, self.renaming_unknown) {
            (Verb::Rename, Some((status, text))) => ApiError::new(status, text),
            _ => ApiError::new(404, self.decl.not_found),
        }
    }
    fn validate(
        &self,
        _: &State,
        _: &At,
        object: &Value,
        _: Option<&Value>,
    ) -> Result<(), ApiError> {
        for key in object["config"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, _)| k)
        {
            let known = self.config_keys.iter().any(|p| {
                if p.ends_with('.') {
                    key.starts_with(p)
                } else {
                    key == p
                }
            });
            if !known {
                let (status, text) = self.invalid_key;
                return Err(ApiError::new(status, text.replace("{key}", key)));
            }
        }
        (self.check)(object)
    }
    fn validate_for_line(
        &self,
        ctx: &Ctx,
        state: &State,
        at: &At,
        object: &Value,
        _: Option<&Value>,
    ) -> Result<(), ApiError> {
        (self.line_check)(ctx, state, at, object)
    }
    fn refuse(&self, state: &State, at: &At, key: &str, verb: Verb) -> Result<(), ApiError> {
        let Some((status, text)) = self.in_use else {
            return Ok(());
        };
        let Some(object) = super::find_object(self, state, at, key) else {
            return Ok(());
        };
        let used = (self.computed)(state, at, object)["used_by"]
            .as_array()
            .is_some_and(|u| !u.is_empty());
        let verb = if verb == Verb::Rename {
            "rename"
        } else {
            "delete"
        };
        match used {
            true => Err(ApiError::new(status, text.replace("{verb}", verb))),
            false => Ok(()),
        }
    }
    fn shown_to(&self, ctx: &Ctx, object: &Value) -> bool {
        (self.shown)(ctx, object)
    }
    /// A project's object shows the request's project; a server-wide one keeps its own.
    fn render(&self, state: &State, at: &At, mut object: Value) -> Value {
        if object.get("project").is_some() && self.decl.scope != Scope::Global {
            object["project"] = json!(at.project);
        }
        (self.computed)(state, at, object)
    }
}
