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
mod scenarios;
mod scopes;
mod session;
mod spec_table;
mod timeouts;
pub(crate) mod unavailable;

/// What the run checks: the core with the harness's own hosts, or a host under certification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Subject {
    /// The main job: also the suites that need a scripted host or their own connection.
    Core,
    /// A host's certification: only the suites that run through the host under test.
    HostUnderCertification,
    /// An implementation behind the wire protocol: every trial that can be expressed over the
    /// wire (see [`IN_PROCESS_ONLY`] for the others and why).
    Adapter,
}

/// The trials that only make sense in-process, by name prefix, with the reason. An adapter run
/// leaves them out and lists them.
pub(crate) const IN_PROCESS_ONLY: &[(&str, &str)] = &[
    ("catalogue::public_contract::", "checks this build's Rust catalogue (describe(), the pinned fixture, the profile export), not the implementation under test"),
    ("catalogue::no_side_effects::", "reads the Rust catalogue API and checks that doing so needs no runtime and sends nothing"),
    ("catalogue::synchronous::", "drives run() on the harness's own runtime to see that no task outlives it; over the wire, every trial's journal already shows what the implementation sent"),
    ("exposure::", "checks the Rust crate (its dependencies, its source, a Rust host's execute tool), not an implementation's behaviour"),
    ("evidence::", "checks the evidence ledgers compiled into this build's core"),
    ("binding::trusted_backend::a_discovered_client_is_used_without_discovering_again", "binds a caller to a Rust Client value (Binding::client), which has no wire form"),
    ("authorization::validated_input::authorize_sees_normalized_input", "reads the input the host's authorize callback was given; the wire carries only the result (the callback order checks of the other host trials are likewise in-process only)"),
];

/// Why the trial `name` only runs in-process, if it does.
pub(crate) fn in_process_only(name: &str) -> Option<&'static str> {
    IN_PROCESS_ONLY
        .iter()
        .find(|(prefix, _)| name.starts_with(prefix))
        .map(|(_, reason)| *reason)
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
        checks.retain(|c| in_process_only(&c.name).is_none());
    }
    checks.sort_by(|a, b| a.name.cmp(&b.name));
    checks
}

#[cfg(test)]
mod registry_tests {
    use super::*;
    use crate::runner::check::{clause_of, is_snake_segment, CONTEXTS};
    use std::collections::BTreeSet;

    fn listing() -> Vec<Check> {
        let factory: Arc<dyn TargetFactory> = Arc::new(unavailable::Unavailable);
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
    fn certification_leaves_out_the_checks_of_the_harness_own_hosts() {
        let factory: Arc<dyn TargetFactory> = Arc::new(unavailable::Unavailable);
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
