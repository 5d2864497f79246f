//! The closed set of error kinds a result can carry in `{"error": {"kind": ...}}`.

use serde::{Deserialize, Serialize};

/// Why an operation failed. Callers match on the kind, never on the message.
///
/// The set is closed: output schemas enumerate exactly these values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// The name is not an exported operation.
    UnknownOperation,
    /// The caller's verified scopes lack the operation's scope.
    ScopeMissing,
    /// The input fails the input schema or a semantic rule (for example a bad fingerprint length).
    InvalidInput,
    /// The serialized input is over the operation's input bound (16 KiB reads, 64 KiB mutations,
    /// 1 MiB exec).
    InputTooLarge,
    /// A destructive operation was called without `confirm`.
    ConfirmationRequired,
    /// `confirm` does not repeat the exact affected resource.
    ConfirmationMismatch,
    /// The input names restricted config keys or devices and the host did not allow them.
    RestrictedInput,
    /// The host's `binding` callback failed, panicked, hung or returned something malformed.
    BindingDenied,
    /// The host's `authorize` callback said no, or failed, panicked, hung or returned something malformed.
    Unauthorized,
    /// `source.remote` names an image remote the host does not approve.
    UnknownRemote,
    /// `GET /1.0` failed or the server did not report `auth: "trusted"`.
    DiscoveryFailed,
    /// Incus rejected the request (before acceptance, for mutations); carries `http_status`,
    /// `error_code` and the native message.
    Native,
    /// The request could not be sent or the answer not read (reads, and mutations that were surely not
    /// sent).
    Transport,
    /// A read did not answer within the connection's timeout, or the call passed its bound
    /// before anything that changes state was sent.
    Timeout,
    /// The result would exceed the 256 KiB output bound even with no list items.
    OutputLimit,
    /// Incus answered something that is not a valid Incus response.
    InvalidResponse,
}

impl ErrorKind {
    /// Every kind, in documentation order.
    pub const ALL: [ErrorKind; 16] = [
        ErrorKind::UnknownOperation,
        ErrorKind::ScopeMissing,
        ErrorKind::InvalidInput,
        ErrorKind::InputTooLarge,
        ErrorKind::ConfirmationRequired,
        ErrorKind::ConfirmationMismatch,
        ErrorKind::RestrictedInput,
        ErrorKind::BindingDenied,
        ErrorKind::Unauthorized,
        ErrorKind::UnknownRemote,
        ErrorKind::DiscoveryFailed,
        ErrorKind::Native,
        ErrorKind::Transport,
        ErrorKind::Timeout,
        ErrorKind::OutputLimit,
        ErrorKind::InvalidResponse,
    ];

    /// The wire name, as it appears in `error.kind`.
    ///
    /// ```
    /// assert_eq!(incus_operations::ErrorKind::ScopeMissing.as_str(), "scope_missing");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::UnknownOperation => "unknown_operation",
            ErrorKind::ScopeMissing => "scope_missing",
            ErrorKind::InvalidInput => "invalid_input",
            ErrorKind::InputTooLarge => "input_too_large",
            ErrorKind::ConfirmationRequired => "confirmation_required",
            ErrorKind::ConfirmationMismatch => "confirmation_mismatch",
            ErrorKind::RestrictedInput => "restricted_input",
            ErrorKind::BindingDenied => "binding_denied",
            ErrorKind::Unauthorized => "unauthorized",
            ErrorKind::UnknownRemote => "unknown_remote",
            ErrorKind::DiscoveryFailed => "discovery_failed",
            ErrorKind::Native => "native",
            ErrorKind::Transport => "transport",
            ErrorKind::Timeout => "timeout",
            ErrorKind::OutputLimit => "output_limit",
            ErrorKind::InvalidResponse => "invalid_response",
        }
    }

    /// What the kind means, in one sentence (the same text as the variant's documentation).
    pub const fn meaning(self) -> &'static str {
        match self {
            ErrorKind::UnknownOperation => "The name is not an exported operation.",
            ErrorKind::ScopeMissing => "The caller's verified scopes lack the operation's scope.",
            ErrorKind::InvalidInput => {
                "The input fails the input schema or a semantic rule (for example a bad fingerprint length)."
            }
            ErrorKind::InputTooLarge => {
                "The serialized input is over the operation's input bound (16 KiB reads, 64 KiB mutations, 1 MiB exec)."
            }
            ErrorKind::ConfirmationRequired => "A destructive operation was called without confirm.",
            ErrorKind::ConfirmationMismatch => {
                "confirm does not repeat the exact affected resource."
            }
            ErrorKind::RestrictedInput => {
                "The input names restricted config keys or devices and the host did not allow them."
            }
            ErrorKind::BindingDenied => {
                "The host's binding callback failed, panicked, hung or returned something malformed."
            }
            ErrorKind::Unauthorized => {
                "The host's authorize callback said no, or failed, panicked, hung or returned something malformed."
            }
            ErrorKind::UnknownRemote => {
                "source.remote names an image remote the host does not approve."
            }
            ErrorKind::DiscoveryFailed => {
                "GET /1.0 failed or the server did not report auth: \"trusted\"."
            }
            ErrorKind::Native => {
                "Incus rejected the request (before acceptance, for mutations); carries http_status, error_code and the native message."
            }
            ErrorKind::Transport => {
                "The request could not be sent or the answer not read (reads, and mutations that were surely not sent)."
            }
            ErrorKind::Timeout => {
                "A read did not answer within the connection's timeout, or the whole call passed its bound before anything that changes state was sent."
            }
            ErrorKind::OutputLimit => {
                "The result would exceed the 256 KiB output bound even with no list items."
            }
            ErrorKind::InvalidResponse => {
                "Incus answered something that is not a valid Incus response."
            }
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the closed set of error kinds a result can
    //! carry in `{"error": {"kind": ...}}`); a promise of the whole `run()` or of the client
    //! against a fake Incus, seen through the public API, goes in `tests/integration`.

    use super::*;

    #[test]
    fn error_kinds_serialize_as_their_wire_names() {
        for kind in ErrorKind::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
            let back: ErrorKind = serde_json::from_value(kind.as_str().into()).unwrap();
            assert_eq!(back, kind);
        }
    }
}
