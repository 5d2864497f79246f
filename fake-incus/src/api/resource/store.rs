//! Where a declared resource keeps its objects: [`Typed`] over one of the state's typed lists
//! (projects, profiles, networks, pools, custom volumes, whose shape the seed format fixes), or
//! [`Objects`], the state's generic store keyed by (kind, project, parent, key) for the others.
//! Both hand the generic handler the stored object as JSON.

use super::At;
use crate::envelope::ApiError;
use crate::state::{Object, State};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;

/// The objects of one resource in the state.
pub(crate) trait Store: Sync {
    /// The stored objects at `at` (the owning project and the parent), in order.
    fn list(&self, state: &State, at: &At) -> Vec<Value>;
    /// Adds an object.
    fn insert(&self, state: &mut State, at: &At, object: Value) -> Result<(), ApiError>;
    /// Replaces the object whose key is `key` (its key may change: a rename).
    fn replace(&self, state: &mut State, at: &At, key: &str, object: Value)
        -> Result<(), ApiError>;
    /// Removes the object whose key is `key`.
    fn remove(&self, state: &mut State, at: &At, key: &str);
    /// The kind of the generic store's objects (`None`: a typed list of the state).
    fn kind(&self) -> Option<&'static str> {
        None
    }
}

/// A typed list of the state, whose rows are read and written as their JSON (the seed format):
/// `key` names a row, and its fields `project` and `parent` (when the rows have them) say where
/// it lives.
pub(crate) struct Typed<T: 'static> {
    pub(crate) rows: fn(&State) -> &Vec<T>,
    pub(crate) rows_mut: fn(&mut State) -> &mut Vec<T>,
    pub(crate) key: &'static str,
    pub(crate) project: Option<&'static str>,
    pub(crate) parent: Option<&'static str>,
}

fn decode<T: DeserializeOwned>(object: Value) -> Result<T, ApiError> {
    serde_json::from_value(object).map_err(|e| ApiError::bad_request(e.to_string()))
}

impl<T> Typed<T> {
    /// The list `rows` of the state, its rows keyed by `name`, owned by no project.
    pub(crate) const fn rows(
        rows: fn(&State) -> &Vec<T>,
        rows_mut: fn(&mut State) -> &mut Vec<T>,
    ) -> Self {
        Self {
            rows,
            rows_mut,
            key: "name",
            project: None,
            parent: None,
        }
    }
    /// Rows say their project in their field `project`.
    pub(crate) const fn per_project(self) -> Self {
        Self {
            project: Some("project"),
            ..self
        }
    }
    /// Rows say their parent's key in this field.
    pub(crate) const fn under(self, field: &'static str) -> Self {
        Self {
            parent: Some(field),
            ..self
        }
    }
    fn is_at(&self, row: &Value, at: &At) -> bool {
        let field = |name: Option<&str>, want: &str| {
            name.is_none_or(|name| row[name].as_str() == Some(want))
        };
        field(self.project, &at.project) && field(self.parent, &at.parent)
    }
    /// The row as JSON, placed at `at`.
    fn placed(&self, mut object: Value, at: &At) -> Value {
        for (field, value) in [(self.project, &at.project), (self.parent, &at.parent)] {
            if let Some(field) = field {
                object[field] = Value::String(value.clone());
            }
        }
        object
    }
    fn position(&self, state: &State, at: &At, key: &str) -> Option<usize>
    where
        T: Serialize,
    {
        (self.rows)(state).iter().position(|r| {
            let row = serde_json::to_value(r).unwrap_or_default();
            self.is_at(&row, at) && row[self.key].as_str() == Some(key)
        })
    }
}

impl<T: Serialize + DeserializeOwned + Send + Sync> Store for Typed<T> {
    fn list(&self, state: &State, at: &At) -> Vec<Value> {
        (self.rows)(state)
            .iter()
            .filter_map(|r| serde_json::to_value(r).ok())
            .filter(|r| self.is_at(r, at))
            .collect()
    }
    fn insert(&self, state: &mut State, at: &At, object: Value) -> Result<(), ApiError> {
        let row: T = decode(self.placed(object, at))?;
        (self.rows_mut)(state).push(row);
        Ok(())
    }
    fn replace(
        &self,
        state: &mut State,
        at: &At,
        key: &str,
        object: Value,
    ) -> Result<(), ApiError> {
        let row: T = decode(self.placed(object, at))?;
        if let Some(i) = self.position(state, at, key) {
            (self.rows_mut)(state)[i] = row;
        }
        Ok(())
    }
    fn remove(&self, state: &mut State, at: &At, key: &str) {
        if let Some(i) = self.position(state, at, key) {
            (self.rows_mut)(state).remove(i);
        }
    }
}

/// The generic store: objects of kind `kind`, keyed by their field `key`.
pub(crate) struct Objects {
    pub(crate) kind: &'static str,
    pub(crate) key: &'static str,
}

impl Objects {
    fn matches(&self, object: &Object, at: &At, key: &str) -> bool {
        object.is_at(at) && object.value[self.key].as_str() == Some(key)
    }
}

impl Object {
    fn is_at(&self, at: &At) -> bool {
        self.project == at.project && self.parent == at.parent
    }
}

impl Store for Objects {
    fn kind(&self) -> Option<&'static str> {
        Some(self.kind)
    }
    fn list(&self, state: &State, at: &At) -> Vec<Value> {
        state
            .objects
            .get(self.kind)
            .into_iter()
            .flatten()
            .filter(|o| o.is_at(at))
            .map(|o| o.value.clone())
            .collect()
    }
    fn insert(&self, state: &mut State, at: &At, value: Value) -> Result<(), ApiError> {
        state
            .objects
            .entry(self.kind.to_owned())
            .or_default()
            .push(Object {
                project: at.project.clone(),
                parent: at.parent.clone(),
                value,
            });
        Ok(())
    }
    fn replace(&self, state: &mut State, at: &At, key: &str, value: Value) -> Result<(), ApiError> {
        if let Some(slot) = state
            .objects
            .get_mut(self.kind)
            .into_iter()
            .flatten()
            .find(|o| self.matches(o, at, key))
        {
            slot.value = value;
        }
        Ok(())
    }
    fn remove(&self, state: &mut State, at: &At, key: &str) {
        if let Some(objects) = state.objects.get_mut(self.kind) {
            objects.retain(|o| !self.matches(o, at, key));
        }
    }
}
