//! `Dex`: a reference dispatcher with the profile's execution semantics.

// `DexError::InvalidOutput` carries the schema errors and the identity values by value: the
// error path is not hot, and callers read them directly.
#![allow(clippy::result_large_err)]

mod error;
mod executor;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use jsonschema::Validator;
use serde::Serialize;
use serde_json::{Map, Value};

pub use error::{DexError, InstallError, InstanceError};
pub use executor::{Executor, ExecutorFuture};

use super::validate::OperationValidators;

/// Identity values longer than this many bytes are not copied.
const MAX_IDENTITY_VALUE_BYTES: usize = 256;

/// The caller of a search or an execute, with the scopes the host has verified.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Caller {
    scopes: BTreeSet<String>,
}

impl Caller {
    /// A caller holding exactly these verified scopes.
    pub fn with_scopes<I, S>(scopes: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self {
            scopes: scopes.into_iter().map(Into::into).collect(),
        }
    }

    fn lacks<'a>(&self, needed: &'a [String]) -> Vec<&'a String> {
        needed
            .iter()
            .filter(|scope| !self.scopes.contains(*scope))
            .collect()
    }
}

/// What a successful `execute` returns: the executor's result or its (valid) error.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// `Ok(result)`, valid against the `"200"` schema.
    Ok(Value),
    /// `Err(error)`, valid against `"default"` (or unchecked when none is declared).
    Error(Value),
}

/// One search result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SearchHit {
    /// The document's `x-tama-source`.
    pub source: String,
    /// The operation ID (unique within this dispatcher).
    pub operation_id: String,
    /// The operation's summary.
    pub summary: String,
    /// The operation's tags.
    pub tags: Vec<String>,
    /// Marked when the operation is deprecated; deprecated operations stay indexed.
    pub deprecated: bool,
    /// `x-tama-destructive`.
    pub destructive: bool,
    /// `x-tama-bounds`, informational (never enforced).
    pub bounds: Map<String, Value>,
}

/// An installed operation: what the document says, plus its compiled validators.
struct Installed {
    source: String,
    detail: Value,
    scopes: Vec<String>,
    confirmation_field: Option<String>,
    identity: Vec<String>,
    validators: OperationValidators,
    executor: Arc<dyn Executor>,
}

impl Installed {
    fn text(&self, field: &str) -> String {
        self.detail
            .get(field)
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    }

    fn tags(&self) -> Vec<String> {
        let tags = self.detail.get("tags").and_then(Value::as_array);
        tags.into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    }

    fn flag(&self, field: &str) -> bool {
        self.detail
            .get(field)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    fn hit(&self, operation_id: &str) -> SearchHit {
        SearchHit {
            source: self.source.clone(),
            operation_id: operation_id.to_owned(),
            summary: self.text("summary"),
            tags: self.tags(),
            deprecated: self.flag("deprecated"),
            destructive: self.flag("x-tama-destructive"),
            bounds: self
                .detail
                .get("x-tama-bounds")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
        }
    }

    fn matches(&self, operation_id: &str, terms: &[String]) -> bool {
        let haystack = format!(
            "{operation_id}\n{}\n{}\n{}",
            self.text("summary"),
            self.text("description"),
            self.tags().join("\n")
        )
        .to_lowercase();
        terms.iter().all(|term| haystack.contains(term))
    }
}

/// A cassette of installed documents, each addressed by its source ID (`x-tama-source`) and
/// run by its own executor. Operation IDs are unique within a `Dex`.
///
/// ```
/// use incus_conformance::tama::{Caller, Dex, Outcome};
/// use serde_json::{json, Value};
///
/// let document = json!({
///     "openapi": "3.1.1",
///     "info": {"title": "demo", "version": "0.1.0"},
///     "x-tama-profile": "tama-operations/1",
///     "x-tama-source": "demo",
///     "paths": {"/operations/echo": {"post": {
///         "operationId": "echo",
///         "summary": "Echo a word",
///         "description": "Returns the word it is given.",
///         "x-tama-scopes": ["demo.read"],
///         "x-tama-destructive": false,
///         "requestBody": {"required": true, "content": {"application/json": {"schema": {
///             "type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}}}},
///         "responses": {"200": {"description": "The word", "content": {"application/json": {
///             "schema": {"type": "object", "required": ["word"]}}}}}
///     }}}
/// });
/// let mut dex = Dex::new();
/// dex.install(document, |_id: String, input: Value| async move { Ok::<Value, Value>(input) })
///     .expect("valid document");
///
/// let caller = Caller::with_scopes(["demo.read"]);
/// assert_eq!(dex.search("echo", &caller).len(), 1);
/// let outcome = futures_util::FutureExt::now_or_never(
///     dex.execute("echo", json!({"word": "hi"}), &caller),
/// );
/// assert_eq!(outcome, Some(Ok(Outcome::Ok(json!({"word": "hi"})))));
/// ```
#[derive(Default)]
pub struct Dex {
    operations: BTreeMap<String, Installed>,
}

impl Dex {
    /// An empty cassette.
    pub fn new() -> Self {
        Self::default()
    }

    /// Installs `document`, run by `executor`. A document with the same source ID replaces the
    /// installed one. Refused, with nothing changed, when the document breaks the profile or
    /// one of its operation IDs belongs to another source in this cassette.
    ///
    /// Install compiles every operation's schemas once (each with the components it reaches),
    /// so that `execute` only validates.
    pub fn install(
        &mut self,
        document: Value,
        executor: impl Executor,
    ) -> Result<(), InstallError> {
        let mut validators = super::check_and_compile(&document)
            .map_err(|violations| InstallError::Invalid { violations })?;
        let source = document["x-tama-source"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        for operation_id in validators.keys() {
            if let Some(other) = self
                .operations
                .get(operation_id)
                .filter(|o| o.source != source)
            {
                return Err(InstallError::DuplicateOperation {
                    operation_id: operation_id.clone(),
                    source_id: other.source.clone(),
                });
            }
        }
        self.remove(&source);
        let executor: Arc<dyn Executor> = Arc::new(executor);
        for item in document["paths"]
            .as_object()
            .into_iter()
            .flat_map(Map::values)
        {
            let detail = &item["post"];
            let operation_id = detail["operationId"]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            if let Some(validators) = validators.remove(&operation_id) {
                let installed = Installed {
                    source: source.clone(),
                    scopes: strings(&detail["x-tama-scopes"]),
                    confirmation_field: detail["x-tama-confirmation"]["field"]
                        .as_str()
                        .map(str::to_owned),
                    identity: strings(&detail["x-tama-identity"]),
                    detail: detail.clone(),
                    validators,
                    executor: Arc::clone(&executor),
                };
                self.operations.insert(operation_id, installed);
            }
        }
        tracing::debug!(source, "installed tama-operations/1 document");
        Ok(())
    }

    /// Removes the document installed under `source`; returns whether there was one.
    pub fn remove(&mut self, source: &str) -> bool {
        let before = self.operations.len();
        self.operations
            .retain(|_, installed| installed.source != source);
        self.operations.len() != before
    }

    /// Operations whose ID, summary, description or tags contain every whitespace-separated
    /// term of `query` (case-insensitive; an empty query matches all), sorted by operation ID.
    /// Operations the caller's verified scopes cannot run are hidden.
    pub fn search(&self, query: &str, caller: &Caller) -> Vec<SearchHit> {
        let terms: Vec<String> = query.split_whitespace().map(str::to_lowercase).collect();
        self.operations
            .iter()
            .filter(|(_, installed)| caller.lacks(&installed.scopes).is_empty())
            .filter(|(id, installed)| installed.matches(id, &terms))
            .map(|(id, installed)| installed.hit(id))
            .collect()
    }

    /// The full operation object as published (other `x-` extensions included), or `None`
    /// when there is no such operation or the caller cannot run it.
    pub fn describe(&self, operation_id: &str, caller: &Caller) -> Option<&Value> {
        let installed = self.operations.get(operation_id)?;
        caller
            .lacks(&installed.scopes)
            .is_empty()
            .then_some(&installed.detail)
    }

    /// Runs `operation_id` for `caller`: checks scopes, the confirmation field and the input
    /// schema before dispatch, calls the executor (with no deadline of its own), then checks
    /// the result against `"200"` (ok) or `"default"` (error, when declared).
    pub async fn execute(
        &self,
        operation_id: &str,
        input: Value,
        caller: &Caller,
    ) -> Result<Outcome, DexError> {
        let installed =
            self.operations
                .get(operation_id)
                .ok_or_else(|| DexError::UnknownOperation {
                    operation_id: operation_id.to_owned(),
                })?;
        check_before_dispatch(operation_id, installed, &input, caller)?;
        tracing::debug!(operation_id, "dispatching");
        let returned =
            executor::call_catching_panics(installed.executor.as_ref(), operation_id, input)
                .await
                .map_err(|message| DexError::DispatchFailed {
                    operation_id: operation_id.to_owned(),
                    message,
                })?;
        check_after_dispatch(operation_id, installed, returned)
    }
}

fn check_before_dispatch(
    operation_id: &str,
    installed: &Installed,
    input: &Value,
    caller: &Caller,
) -> Result<(), DexError> {
    let missing = caller.lacks(&installed.scopes);
    if !missing.is_empty() {
        return Err(DexError::ScopeMissing {
            operation_id: operation_id.to_owned(),
            missing: missing.into_iter().cloned().collect(),
        });
    }
    if let Some(field) = &installed.confirmation_field {
        if is_missing_or_empty(input.get(field)) {
            return Err(DexError::ConfirmationRequired {
                operation_id: operation_id.to_owned(),
                field: field.clone(),
            });
        }
    }
    let errors = instance_errors(&installed.validators.input, input);
    if errors.is_empty() {
        Ok(())
    } else {
        Err(DexError::InvalidInput {
            operation_id: operation_id.to_owned(),
            errors,
        })
    }
}

fn check_after_dispatch(
    operation_id: &str,
    installed: &Installed,
    returned: Result<Value, Value>,
) -> Result<Outcome, DexError> {
    let (validator, value, side) = match &returned {
        Ok(result) => (Some(&installed.validators.ok), result, "ok"),
        Err(error) => (installed.validators.error.as_ref(), error, "error"),
    };
    let errors = validator
        .map(|v| instance_errors(v, value))
        .unwrap_or_default();
    if !errors.is_empty() {
        return Err(DexError::InvalidOutput {
            operation_id: operation_id.to_owned(),
            returned: side,
            errors,
            identity: copy_identity(&installed.identity, value),
        });
    }
    Ok(match returned {
        Ok(result) => Outcome::Ok(result),
        Err(error) => Outcome::Error(error),
    })
}

fn is_missing_or_empty(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => true,
        Some(Value::String(text)) => text.is_empty(),
        Some(Value::Array(items)) => items.is_empty(),
        Some(Value::Object(members)) => members.is_empty(),
        Some(_) => false,
    }
}

fn instance_errors(validator: &Validator, instance: &Value) -> Vec<InstanceError> {
    validator
        .iter_errors(instance)
        .map(|error| InstanceError {
            pointer: error.instance_path().as_str().to_owned(),
            message: error.masked().to_string(),
        })
        .collect()
}

/// The identity properties of `value` that are strings (at most 256 bytes), integers or
/// booleans.
fn copy_identity(names: &[String], value: &Value) -> Map<String, Value> {
    let Some(object) = value.as_object() else {
        return Map::new();
    };
    names
        .iter()
        .filter_map(|name| {
            let found = object.get(name)?;
            let copyable = match found {
                Value::String(text) => text.len() <= MAX_IDENTITY_VALUE_BYTES,
                Value::Number(number) => number.is_i64() || number.is_u64(),
                Value::Bool(_) => true,
                _ => false,
            };
            copyable.then(|| (name.clone(), found.clone()))
        })
        .collect()
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}
