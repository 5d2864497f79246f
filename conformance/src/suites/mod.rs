//! The suites: every check of the conformance run, registered as data.
//!
//! A suite is a function that returns checks; [`registry`] gathers them all. Checks that call
//! operations get their target from the factory, one target (and so one fake Incus) per trial.

use std::sync::Arc;

use crate::runner::Check;
use crate::scenario::target::TargetFactory;

mod arbitrary_input;
mod byte_bounds;
mod catalogue;
mod client_binding;
mod cluster;
mod confirmation;
mod contract;
mod evidence;
mod exec_output;
mod exposure;
mod host_callbacks;
pub(crate) mod host_target;
pub(crate) mod inspection_bounds;
pub(crate) mod mutation_faults;
mod property;
pub(crate) mod reliability;
mod restricted;
mod safety;
pub(crate) use safety::value_cases;
pub(crate) mod listing_only;
mod scenarios;
mod scopes;
mod session;
mod spec_table;
mod timeouts;

/// What the run checks: the core with the harness's own hosts, or a host under certification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subject {
    /// The main job: also the suites that need a scripted host or their own connection.
    Core,
    /// A host's certification: only the suites that run through the host under test.
    HostUnderCertification,
    /// An implementation behind the wire protocol: every trial that can be expressed over the
    /// wire (the others are marked [`Check::in_process_only`], each with its reason).
    Adapter,
}

/// The trials an adapter run leaves out, grouped by reason in name order: the names' common
/// `::` prefix (a trailing `*` when the group has more than one trial), and the reason.
pub(crate) fn in_process_only() -> Vec<(String, &'static str)> {
    let factory: Arc<dyn TargetFactory> = Arc::new(listing_only::ListingOnly);
    let mut groups: Vec<(&'static str, Vec<String>)> = Vec::new();
    for check in registry(&factory, Subject::Core) {
        let Some(reason) = check.in_process_only else {
            continue;
        };
        match groups.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, names)) => names.push(check.name),
            None => groups.push((reason, vec![check.name])),
        }
    }
    groups
        .into_iter()
        .map(|(reason, names)| match names.as_slice() {
            [one] => (one.clone(), reason),
            _ => (format!("{}*", common_prefix(&names)), reason),
        })
        .collect()
}

/// The longest prefix of `::`-separated segments that every name shares, with its `::`.
fn common_prefix(names: &[String]) -> String {
    let mut prefix: Vec<&str> = names[0].split("::").collect();
    for name in &names[1..] {
        let shared = prefix
            .iter()
            .zip(name.split("::"))
            .take_while(|(a, b)| **a == *b)
            .count();
        prefix.truncate(shared);
    }
    prefix
        .iter()
        .map(|segment| format!("{segment}::"))
        .collect()
}

/// Every check of the conformance run against targets built by `factory`.
pub(crate) fn registry(factory: &Arc<dyn TargetFactory>, subject: Subject) -> Vec<Check> {
    let mut checks = scenarios::checks(factory);
    if subject != Subject::HostUnderCertification {
        checks.extend(host_callbacks::checks(factory));
        checks.extend(client_binding::checks());
        checks.extend(timeouts::checks(factory));
        checks.extend(contract::live_checks());
        checks.extend(exposure::live_checks());
        checks.extend(restricted::checks(factory));
        checks.extend(cluster::checks(factory));
    }
    checks.extend(catalogue::checks());
    checks.extend(contract::checks());
    checks.extend(exposure::checks());
    checks.extend(evidence::checks(factory));
    checks.extend(scopes::checks(factory));
    checks.extend(confirmation::checks(factory));
    checks.extend(byte_bounds::checks(factory));
    checks.extend(arbitrary_input::checks(factory));
    checks.extend(mutation_faults::checks(factory));
    checks.extend(inspection_bounds::checks(factory));
    checks.extend(exec_output::checks(factory));
    checks.extend(safety::checks(factory));
    if subject == Subject::Adapter {
        checks.retain(|c| c.in_process_only.is_none());
    }
    checks.sort_by(|a, b| a.name.cmp(&b.name));
    checks
}

#[cfg(test)]
mod registry_tests {
    //! What goes here: tests of this module on its own (the suites); a promise of the harness seen
    //! from outside (its command line, certification, the wire) goes in `tests/harness`.

    use super::*;
    use crate::runner::check::{clause_of, is_snake_segment, CONTEXTS};
    use std::collections::BTreeSet;

    fn listing() -> Vec<Check> {
        let factory: Arc<dyn TargetFactory> = Arc::new(listing_only::ListingOnly);
        registry(&factory, Subject::Core)
    }

    #[test]
    fn test_names_follow_area_clause_case_and_name_registered_clauses() {
        let mut seen = BTreeSet::new();
        for check in listing() {
            assert!(seen.insert(check.name.clone()), "duplicate {}", check.name);
            let segments: Vec<&str> = check.name.split("::").collect();
            assert!(
                segments.iter().all(|s| is_snake_segment(s)),
                "{}",
                check.name
            );
            if segments[0] == "scenario" {
                assert_eq!(segments.len(), 2, "{}", check.name);
            } else {
                let context = CONTEXTS.contains(&segments[0]);
                assert_eq!(
                    segments.len(),
                    if context { 4 } else { 3 },
                    "{} is not [context::]area::clause::case",
                    check.name
                );
                assert_eq!(check.clauses, vec![clause_of(&check.name).unwrap()]);
            }
            assert!(!check.clauses.is_empty(), "{} checks no clause", check.name);
            for clause in &check.clauses {
                assert!(
                    crate::clauses::find(clause).is_some(),
                    "{}: {clause}",
                    check.name
                );
            }
        }
    }

    #[test]
    fn the_in_process_only_listing_names_exactly_the_trials_an_adapter_run_leaves_out() {
        let factory: Arc<dyn TargetFactory> = Arc::new(listing_only::ListingOnly);
        let adapter: BTreeSet<String> = registry(&factory, Subject::Adapter)
            .into_iter()
            .map(|c| c.name)
            .collect();
        let groups = in_process_only();
        assert!(groups.len() >= 7, "{groups:?}");
        for check in listing() {
            let listed = groups
                .iter()
                .any(|(trials, _)| match trials.strip_suffix('*') {
                    Some(prefix) => check.name.starts_with(prefix),
                    None => check.name == *trials,
                });
            assert_eq!(listed, !adapter.contains(&check.name), "{}", check.name);
        }
    }

    #[test]
    fn certification_leaves_out_the_checks_of_the_harness_own_hosts() {
        let factory: Arc<dyn TargetFactory> = Arc::new(listing_only::ListingOnly);
        let certified = registry(&factory, Subject::HostUnderCertification);
        let core = registry(&factory, Subject::Core);
        assert!(certified.len() < core.len());
        assert!(certified
            .iter()
            .all(|c| !c.name.starts_with("binding::callback_failure_denies")));
        assert!(certified.iter().any(|c| c.name.starts_with("scenario::")));
    }

    #[test]
    fn every_suite_setup_is_accepted_by_the_fake() {
        for setup in mutation_faults::setups()
            .into_iter()
            .chain(inspection_bounds::setups())
        {
            session::block_on(async { crate::scenario::fake::start(&setup).await.map(drop) })
                .unwrap_or_else(|e| panic!("{setup:?}: {e}"));
        }
    }

    #[test]
    fn clauses_md_is_up_to_date() {
        generated_file_is_current("CLAUSES.md", &crate::clauses_markdown(), "clauses_md");
    }
}

/// Asserts that the generated file at `path` (relative to this crate) holds `text`; with `BLESS=1`
/// it writes `text` there instead. `test` names the lib test that regenerates it.
#[cfg(test)]
pub(crate) fn generated_file_is_current(name: &str, text: &str, test: &str) {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(name);
    if std::env::var("BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, text).unwrap();
        return;
    }
    let current = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        current == text,
        "{name} is out of date: run `BLESS=1 cargo test -p incus-conformance --lib {test}`"
    );
}

#[cfg(test)]
mod tests;
