//! Input byte bounds: 16 KiB for reads, 64 KiB for mutations, 1 MiB for exec, refused with
//! `input_too_large` and the bound before any backend request.

use std::sync::Arc;

use serde_json::Value;

use super::session::with_session;
use super::session::Session;
use super::spec_table::{SpecOperation, OPERATIONS};
use crate::runner::Check;
use crate::scenario::target::TargetFactory;

/// One check per operation: one byte over the bound is refused; at the bound it is not a size error.
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    OPERATIONS
        .iter()
        .map(|op| {
            let name = format!("byte_bounds::input::{}_is_bounded", op.short());
            with_session(name, factory, move |session: &Session| {
                let bound = op.class.bound();
                let over = session.call(op.name, &[op.scope.to_owned()], padded(op, bound + 1));
                over.refused_before_backend("input_too_large")?;
                if over.result.pointer("/error/limit") != Some(&Value::from(bound)) {
                    return Err(over.failure(&format!("expected /error/limit {bound}")));
                }
                let at = session.call(op.name, &[op.scope.to_owned()], padded(op, bound));
                if at.error_kind() == Some("input_too_large") {
                    return Err(at.failure(&format!("input of exactly {bound} bytes was refused")));
                }
                at.schema_valid()
            })
        })
        .collect()
}

/// The operation's confirmed minimal input, padded with a `description` string so that its
/// compact serialization is exactly `size` bytes.
pub(crate) fn padded(op: &SpecOperation, size: usize) -> Value {
    let mut input = op.confirmed_input();
    if let Some(map) = input.as_object_mut() {
        map.insert("description".into(), Value::String(String::new()));
    }
    let base = serde_json::to_vec(&input).map(|v| v.len()).unwrap_or(0);
    if let Some(map) = input.as_object_mut() {
        map.insert(
            "description".into(),
            Value::String("d".repeat(size.saturating_sub(base))),
        );
    }
    input
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (input byte bounds); a promise of the
    //! harness seen from outside (its command line, certification, the wire) goes in
    //! `tests/harness`.

    use super::*;

    #[test]
    fn padding_reaches_the_exact_size() {
        for op in OPERATIONS {
            let input = padded(op, op.class.bound() + 1);
            assert_eq!(
                serde_json::to_vec(&input).unwrap().len(),
                op.class.bound() + 1
            );
        }
    }
}
