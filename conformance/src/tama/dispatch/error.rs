//! The dispatcher's errors: a closed set of kinds, each saying whether the executor was called.

use serde::Serialize;
use serde_json::{Map, Value};

use crate::tama::Violation;

/// Why an install was refused; nothing is changed when it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum InstallError {
    /// The document breaks the profile; these are the validator's violations.
    #[error("the document is not a valid tama-operations/1 document ({} violations)", violations.len())]
    Invalid {
        /// Every violation, as [`crate::tama::validate`] reports them.
        violations: Vec<Violation>,
    },
    /// An operation ID already belongs to another document of this cassette.
    #[error("operation {operation_id:?} is already installed by source {source_id:?}")]
    DuplicateOperation {
        /// The clashing operation ID.
        operation_id: String,
        /// The source that already installed it.
        source_id: String,
    },
}

/// Where an instance (input or result) breaks its schema.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstanceError {
    /// JSON pointer into the instance.
    pub pointer: String,
    /// What is wrong; not a stable contract.
    pub message: String,
}

/// An `execute` that did not produce a valid result.
///
/// Serialized (see [`DexError::to_json`]) as `{"kind": ..., "dispatched": ..., ...}`.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum DexError {
    /// No installed document has this operation.
    #[error("unknown operation {operation_id:?}")]
    UnknownOperation {
        /// The requested operation ID.
        operation_id: String,
    },
    /// The caller's verified scopes lack some that the operation lists.
    #[error("operation {operation_id:?} needs scopes {missing:?}")]
    ScopeMissing {
        /// The operation.
        operation_id: String,
        /// The listed scopes the caller does not have.
        missing: Vec<String>,
    },
    /// The input does not match the operation's input schema.
    #[error("invalid input for {operation_id:?}: {} errors", errors.len())]
    InvalidInput {
        /// The operation.
        operation_id: String,
        /// Where the input breaks its schema.
        errors: Vec<InstanceError>,
    },
    /// The operation declares `x-tama-confirmation` and its field is missing or empty.
    #[error("operation {operation_id:?} needs confirmation field {field:?}")]
    ConfirmationRequired {
        /// The operation.
        operation_id: String,
        /// The confirmation field to send.
        field: String,
    },
    /// The executor was called and failed to return (it panicked). It may have taken effect.
    #[error("dispatch of {operation_id:?} failed: {message}")]
    DispatchFailed {
        /// The operation.
        operation_id: String,
        /// What happened.
        message: String,
    },
    /// The executor returned a result (or error) that does not match its schema. The
    /// operation may have taken effect: `identity` holds the `x-tama-identity` values found.
    #[error("operation {operation_id:?} returned invalid output: {} errors", errors.len())]
    InvalidOutput {
        /// The operation.
        operation_id: String,
        /// `"ok"` or `"error"`: which side of the executor's result was invalid.
        returned: &'static str,
        /// Where the result breaks its schema.
        errors: Vec<InstanceError>,
        /// The identity properties' string, integer or boolean values (each at most 256 bytes).
        identity: Map<String, Value>,
    },
}

impl DexError {
    /// Whether the executor was called: `false` means the operation did not run; `true`
    /// (`dispatch_failed`, `invalid_output`) means it may have taken effect and must not be
    /// retried blindly.
    pub fn dispatched(&self) -> bool {
        matches!(
            self,
            Self::DispatchFailed { .. } | Self::InvalidOutput { .. }
        )
    }

    /// The stable kind, as serialized: `unknown_operation`, `scope_missing`, `invalid_input`,
    /// `confirmation_required`, `dispatch_failed` or `invalid_output`.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::UnknownOperation { .. } => "unknown_operation",
            Self::ScopeMissing { .. } => "scope_missing",
            Self::InvalidInput { .. } => "invalid_input",
            Self::ConfirmationRequired { .. } => "confirmation_required",
            Self::DispatchFailed { .. } => "dispatch_failed",
            Self::InvalidOutput { .. } => "invalid_output",
        }
    }

    /// The wire shape: the serialized error with its `dispatched` flag.
    ///
    /// ```
    /// use incus_conformance::tama::DexError;
    ///
    /// let error = DexError::UnknownOperation { operation_id: "nope".into() };
    /// let json = error.to_json();
    /// assert_eq!(json["kind"], "unknown_operation");
    /// assert_eq!(json["dispatched"], false);
    /// ```
    pub fn to_json(&self) -> Value {
        let mut value = serde_json::to_value(self).unwrap_or_else(|_| Value::Object(Map::new()));
        if let Some(object) = value.as_object_mut() {
            object.insert("dispatched".to_owned(), Value::Bool(self.dispatched()));
        }
        value
    }
}
