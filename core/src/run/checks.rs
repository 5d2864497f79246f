//! The checks that need nothing but the descriptor and the input: scope, input byte bound and
//! confirmation. None of them talks to the host or the backend.
//!
//! The byte bound is measured on the compact serialization of the input (`serde_json::to_vec`),
//! before schema validation, so that an oversized input never reaches the schema validator:
//! 16 KiB for reads, 64 KiB for mutations, 1 MiB for exec. An input of exactly the bound passes.
use serde_json::Value;

use super::output::json_len;
use super::results::RunError;
use crate::catalogue::{Confirmation, Descriptor, Scope};

/// The operation's scope must be among the caller's verified scopes.
pub(crate) fn scope(descriptor: &Descriptor, granted: &[Scope]) -> Result<(), RunError> {
    if granted.contains(&descriptor.scope()) {
        Ok(())
    } else {
        Err(RunError::ScopeMissing(
            descriptor.scope().as_str().to_owned(),
        ))
    }
}

/// The serialized input must not exceed the operation's bound.
pub(crate) fn input_bytes(descriptor: &Descriptor, input: &Value) -> Result<(), RunError> {
    let limit = usize::try_from(descriptor.max_input_bytes()).unwrap_or(usize::MAX);
    let size = json_len(input);
    if size > limit {
        return Err(RunError::InputTooLarge { size, limit });
    }
    Ok(())
}

/// A destructive operation needs `confirm` equal, byte for byte, to the affected resource.
/// Nothing is trimmed or case-folded, so "yes", prefixes and near misses are refused.
pub(crate) fn confirmation(descriptor: &Descriptor, input: &Value) -> Result<(), RunError> {
    let Some(rule) = descriptor.confirmation() else {
        return Ok(());
    };
    let target = rule.expected(input).unwrap_or_default();
    match input.get(Confirmation::FIELD) {
        None | Some(Value::Null) => Err(RunError::ConfirmationRequired(target)),
        Some(Value::String(confirm)) if !target.is_empty() && *confirm == target => Ok(()),
        Some(_) => Err(RunError::ConfirmationMismatch(target)),
    }
}
