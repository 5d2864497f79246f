//! Scopes: each operation needs its own scope, whatever other scopes the caller holds, and
//! the refusal comes before any backend request.

use std::sync::Arc;

use super::session::with_session;
use super::session::Session;
use super::spec_table::{scopes_without, OPERATIONS};
use crate::runner::Check;
use crate::scenario::target::TargetFactory;

/// `scopes::<scope>::<operation>_needs_it` and `scopes::per_operation::<operation>_own_scope_is_enough`.
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    let mut checks = Vec::new();
    for op in OPERATIONS {
        let name = format!("scopes::{}::{}_needs_it", op.scope_word(), op.short());
        checks.push(with_session(name, factory, move |session: &Session| {
            let input = op.confirmed_input();
            session
                .call(op.name, &scopes_without(op.scope), input.clone())
                .refused_before_backend("scope_missing")?;
            session
                .call(op.name, &[], input)
                .refused_before_backend("scope_missing")
        }));
        let name = format!("scopes::per_operation::{}_own_scope_is_enough", op.short());
        checks.push(with_session(name, factory, move |session: &Session| {
            let called = session.call(op.name, &[op.scope.to_owned()], op.confirmed_input());
            if called.error_kind() == Some("scope_missing") {
                return Err(called.failure(&format!("{} alone was not enough", op.scope)));
            }
            called.schema_valid()
        }));
    }
    checks
}
