//! The one conversion from internal failures to the error shape of every result:
//! `{"error": {"kind", "message", ...optional}}`.
use serde_json::{json, Map, Value};

use crate::client::ClientError;
use crate::error::ErrorKind;

/// Why a call did not produce a success result. Each variant is one `error.kind`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum RunError {
    #[error("unknown operation: {0}")]
    UnknownOperation(String),
    #[error("the caller's verified scopes lack {0}")]
    ScopeMissing(String),
    #[error("{message}")]
    InvalidInput { message: String, pointer: String },
    #[error("serialized input is {size} bytes, over the bound of {limit} bytes")]
    InputTooLarge { size: usize, limit: usize },
    #[error("this operation is destructive: confirm must repeat {0}")]
    ConfirmationRequired(String),
    #[error("confirm does not repeat the affected resource exactly: expected {0}")]
    ConfirmationMismatch(String),
    #[error("restricted input not allowed by the host: {0}")]
    RestrictedInput(String),
    #[error("the host gave no binding: {0}")]
    BindingDenied(String),
    #[error("the host did not authorize the call: {0}")]
    Unauthorized(String),
    #[error("the host does not approve image remote {0:?}")]
    UnknownRemote(String),
    #[error("discovery failed: {0}")]
    DiscoveryFailed(String),
    #[error("{message}")]
    Native {
        http_status: u16,
        error_code: i64,
        message: String,
    },
    #[error("{0}")]
    Transport(String),
    #[error("{0}")]
    Timeout(String),
    #[error("the result would exceed {limit} bytes of JSON even without list items")]
    OutputLimit { limit: usize },
    #[error("invalid response from Incus: {0}")]
    InvalidResponse(String),
}

impl RunError {
    /// The `error.kind` of this failure.
    pub(crate) fn kind(&self) -> ErrorKind {
        match self {
            RunError::UnknownOperation(_) => ErrorKind::UnknownOperation,
            RunError::ScopeMissing(_) => ErrorKind::ScopeMissing,
            RunError::InvalidInput { .. } => ErrorKind::InvalidInput,
            RunError::InputTooLarge { .. } => ErrorKind::InputTooLarge,
            RunError::ConfirmationRequired(_) => ErrorKind::ConfirmationRequired,
            RunError::ConfirmationMismatch(_) => ErrorKind::ConfirmationMismatch,
            RunError::RestrictedInput(_) => ErrorKind::RestrictedInput,
            RunError::BindingDenied(_) => ErrorKind::BindingDenied,
            RunError::Unauthorized(_) => ErrorKind::Unauthorized,
            RunError::UnknownRemote(_) => ErrorKind::UnknownRemote,
            RunError::DiscoveryFailed(_) => ErrorKind::DiscoveryFailed,
            RunError::Native { .. } => ErrorKind::Native,
            RunError::Transport(_) => ErrorKind::Transport,
            RunError::Timeout(_) => ErrorKind::Timeout,
            RunError::OutputLimit { .. } => ErrorKind::OutputLimit,
            RunError::InvalidResponse(_) => ErrorKind::InvalidResponse,
        }
    }

    /// The error result: `{"error": {"kind", "message", ...}}`.
    pub(crate) fn to_result(&self) -> Value {
        let mut error = Map::new();
        error.insert("kind".into(), json!(self.kind().as_str()));
        error.insert("message".into(), json!(self.to_string()));
        match self {
            RunError::InvalidInput { pointer, .. } => {
                error.insert("pointer".into(), json!(pointer));
            }
            RunError::InputTooLarge { limit, .. } | RunError::OutputLimit { limit } => {
                error.insert("limit".into(), json!(limit));
            }
            RunError::Native {
                http_status,
                error_code,
                ..
            } => {
                error.insert("http_status".into(), json!(http_status));
                error.insert("error_code".into(), json!(error_code));
            }
            _ => {}
        }
        json!({ "error": Value::Object(error) })
    }
}

/// A failed read (or a mutation that was surely not sent, or rejected natively).
pub(crate) fn read_error(error: ClientError) -> RunError {
    let message = error.to_string();
    match error {
        ClientError::Native {
            http_status,
            error_code,
            message,
        } => RunError::Native {
            http_status,
            error_code,
            message,
        },
        ClientError::Timeout { .. } => RunError::Timeout(message),
        ClientError::InvalidResponse { .. } | ClientError::ResponseTooLarge { .. } => {
            RunError::InvalidResponse(message)
        }
        ClientError::Untrusted { .. } => RunError::DiscoveryFailed(message),
        _ => RunError::Transport(message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn native_errors_carry_status_code_and_message() {
        let result = RunError::Native {
            http_status: 404,
            error_code: 404,
            message: "Instance not found".into(),
        }
        .to_result();
        assert_eq!(
            result,
            json!({"error": {"kind": "native", "message": "Instance not found",
                             "http_status": 404, "error_code": 404}})
        );
    }

    #[test]
    fn invalid_input_names_a_pointer() {
        let result = RunError::InvalidInput {
            message: "bad".into(),
            pointer: "/limit".into(),
        }
        .to_result();
        assert_eq!(result["error"]["pointer"], "/limit");
        assert_eq!(result["error"]["kind"], "invalid_input");
    }
}
