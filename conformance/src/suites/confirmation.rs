//! Confirmation: destructive operations run only when `confirm` repeats the exact resource;
//! a missing confirm, "yes" and every near miss are refused before any backend request.

use std::sync::Arc;

use proptest::prelude::*;

use super::property;
use super::session::with_session;
use super::session::Session;
use super::spec_table::{Confirm, SpecOperation, OPERATIONS};
use crate::runner::Check;
use crate::scenario::target::TargetFactory;

/// Four checks per destructive operation.
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    let mut checks = Vec::new();
    for op in OPERATIONS.iter().filter(|o| o.confirm != Confirm::None) {
        let short = op.short();
        checks.push(with_session(
            format!("confirmation::exact_resource::{short}_without_confirm_is_refused"),
            factory,
            move |session: &Session| {
                session
                    .call(op.name, &[op.scope.to_owned()], op.minimal_input())
                    .refused_before_backend("confirmation_required")
            },
        ));
        checks.push(with_session(
            format!("confirmation::inferred_consent::{short}_yes_is_refused"),
            factory,
            move |session: &Session| {
                for consent in ["yes", "YES", "y", "true", "confirm", "ok"] {
                    session
                        .call(op.name, &[op.scope.to_owned()], with_confirm(op, consent))
                        .refused_before_backend("confirmation_mismatch")?;
                }
                Ok(())
            },
        ));
        let trial = format!("confirmation::exact_resource::{short}_near_misses_are_refused");
        let name = trial.clone();
        checks.push(with_session(trial, factory, move |session: &Session| {
            let exact = op.exact_confirm().unwrap_or_default();
            property::check(&name, near_miss(exact), |confirm| {
                session
                    .call(op.name, &[op.scope.to_owned()], with_confirm(op, &confirm))
                    .refused_before_backend("confirmation_mismatch")
            })
        }));
        checks.push(with_session(
            format!("confirmation::exact_resource::{short}_exact_resource_passes"),
            factory,
            move |session: &Session| {
                let called = session.call(op.name, &[op.scope.to_owned()], op.confirmed_input());
                match called.error_kind() {
                    Some("confirmation_required" | "confirmation_mismatch") => {
                        Err(called.failure("the exact resource was refused"))
                    }
                    _ => called.schema_valid(),
                }
            },
        ));
    }
    checks
}

fn with_confirm(op: &SpecOperation, confirm: &str) -> serde_json::Value {
    let mut input = op.minimal_input();
    if let Some(map) = input.as_object_mut() {
        map.insert("confirm".into(), confirm.into());
    }
    input
}

/// Strings close to `exact` but different: case changes, added or removed characters,
/// surrounding whitespace, prefixes and suffixes.
fn near_miss(exact: String) -> impl Strategy<Value = String> {
    let len = exact.chars().count();
    let base = exact.clone();
    let edits = prop_oneof![
        (0..len).prop_map(move |i| edit(&base, i, Edit::FlipCase)),
        (0..len).prop_map({
            let base = exact.clone();
            move |i| edit(&base, i, Edit::Remove)
        }),
        (0..=len, any::<char>()).prop_map({
            let base = exact.clone();
            move |(i, c)| insert(&base, i, c)
        }),
        prop::sample::select(vec![" ", "\t", "\n", "\u{a0}"]).prop_map({
            let base = exact.clone();
            move |ws| format!("{base}{ws}")
        }),
        (1..len.max(2)).prop_map({
            let base = exact.clone();
            move |n| base.chars().take(n).collect::<String>()
        }),
    ];
    edits.prop_filter("must differ from the exact resource", move |s| *s != exact)
}

enum Edit {
    FlipCase,
    Remove,
}

fn edit(base: &str, index: usize, edit: Edit) -> String {
    base.chars()
        .enumerate()
        .filter_map(|(i, c)| match (i == index, &edit) {
            (false, _) => Some(c.to_string()),
            (true, Edit::Remove) => None,
            (true, Edit::FlipCase) if c.is_lowercase() => Some(c.to_uppercase().collect()),
            (true, Edit::FlipCase) => Some(c.to_lowercase().collect::<String>() + "x"),
        })
        .collect()
}

fn insert(base: &str, index: usize, c: char) -> String {
    let mut chars: Vec<char> = base.chars().collect();
    chars.insert(index.min(chars.len()), c);
    chars.into_iter().collect()
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (confirmation); a promise of the harness
    //! seen from outside (its command line, certification, the wire) goes in `tests/harness`.

    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    #[test]
    fn near_misses_always_differ_from_the_exact_resource() {
        let mut runner = TestRunner::deterministic();
        let strategy = near_miss("web/snap0".into());
        for _ in 0..500 {
            let value = strategy.new_tree(&mut runner).unwrap().current();
            assert_ne!(value, "web/snap0");
        }
    }
}
