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
    /// A scope that this input needs beyond the operation's own (`scope_missing`), and why.
    #[error("{reason}: the caller's verified scopes lack {scope}")]
    ScopeNeeded { scope: String, reason: String },
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
    #[error("{}", output_limit_message(*limit, *single))]
    OutputLimit {
        limit: usize,
        /// A single-object result (a get), rather than a list whose first item alone is over.
        single: bool,
    },
    #[error("invalid response from Incus: {0}")]
    InvalidResponse(String),
}

impl RunError {
    /// The `error.kind` of this failure.
    pub(crate) fn kind(&self) -> ErrorKind {
        match self {
            RunError::UnknownOperation(_) => ErrorKind::UnknownOperation,
            RunError::ScopeMissing(_) | RunError::ScopeNeeded { .. } => ErrorKind::ScopeMissing,
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
            RunError::InputTooLarge { limit, .. } | RunError::OutputLimit { limit, .. } => {
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

fn output_limit_message(limit: usize, single: bool) -> String {
    if single {
        format!("the result is a single object over the output bound of {limit} bytes of JSON")
    } else {
        format!("the first list item alone is over the output bound of {limit} bytes of JSON")
    }
}

/// The status of a success result (exec's own statuses come from the client's exec outcome).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Status {
    /// The native outcome was observed and it succeeded (or a synchronous request was answered).
    Completed,
    /// The native outcome was observed and it failed.
    Failed,
    /// The outcome was not observed within the wait; nothing was cancelled.
    Running,
    /// The request may have been accepted, but no answer was decoded ([`Uncertain`]).
    Uncertain,
    /// Cancel: the operation had finished; nothing was sent.
    AlreadyFinal,
    /// Cancel: `may_cancel` is false; nothing was sent.
    Unsupported,
    /// Cancel: one native DELETE was accepted.
    Requested,
}

/// The one rule for "may have been sent, so uncertain": a request that may have reached Incus
/// and got no decoded answer. A native error is an answer (the request was refused before it was
/// accepted), so it is an error result; a request surely not sent is an error result too. Nothing
/// uncertain is ever resent.
fn is_uncertain(error: &ClientError) -> bool {
    error.may_have_been_sent() && !matches!(error, ClientError::Native { .. })
}

/// A request that may have reached Incus without a decoded answer: its result is `uncertain` and
/// carries `reason`, and nothing is resent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Uncertain {
    /// Why the outcome is unknown (the error after the request may have been sent).
    pub(crate) reason: String,
}

/// Applies the one rule to a failed request that may change something: [`Uncertain`] with its
/// reason, or the error result when the request was refused or surely not sent.
pub(crate) fn uncertain_or_error(error: ClientError) -> Result<Uncertain, RunError> {
    if is_uncertain(&error) {
        Ok(Uncertain {
            reason: error.to_string(),
        })
    } else {
        Err(read_error(error))
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
    //! What goes here: tests of this module on its own (the one conversion from internal failures
    //! to the error shape of every result); a promise of the whole `run()` or of the client against
    //! a fake Incus, seen through the public API, goes in `tests/integration`.

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
    fn statuses_serialize_as_the_spec_spells_them() {
        let spelled: Vec<Value> = [
            Status::Completed,
            Status::Failed,
            Status::Running,
            Status::Uncertain,
            Status::AlreadyFinal,
            Status::Unsupported,
            Status::Requested,
        ]
        .iter()
        .map(|status| json!(status))
        .collect();
        assert_eq!(
            spelled,
            [
                "completed",
                "failed",
                "running",
                "uncertain",
                "already_final",
                "unsupported",
                "requested"
            ]
        );
    }

    #[test]
    fn only_a_request_that_may_have_been_sent_without_an_answer_is_uncertain() {
        let after_send = ClientError::Transport {
            message: "reset".into(),
            may_have_been_sent: true,
        };
        let before_send = ClientError::Transport {
            message: "refused".into(),
            may_have_been_sent: false,
        };
        let native = ClientError::Native {
            http_status: 400,
            error_code: 400,
            message: "no".into(),
        };
        assert!(is_uncertain(&after_send));
        assert!(!is_uncertain(&before_send));
        assert!(!is_uncertain(&native));
        let reason = uncertain_or_error(after_send).unwrap().reason;
        assert!(reason.contains("reset"), "{reason}");
        assert_eq!(
            uncertain_or_error(before_send).unwrap_err().kind(),
            ErrorKind::Transport
        );
        assert_eq!(
            uncertain_or_error(native).unwrap_err().kind(),
            ErrorKind::Native
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
