//! Conformance harness for the Incus operations.
//!
//! # How the code is laid out
//!
//! The modules, top-down; a module uses only modules listed after it, never one above it (the
//! binary's `cli` sits on top of them all):
//!
//! | module | what it does |
//! |---|---|
//! | `certify` | [`certify`] and [`certify_adapter`]: every suite through a host's own binding, or through an adapter process |
//! | [`adapter`] | the wire protocol `incus-operations-adapter/1` and the targets that speak it |
//! | `suites` | the trials, named `area::clause::case`: one module per area of the specification (`catalogue`, `scopes`, `confirmation`, ...), `cluster/` over a fake cluster, `safety/`, and `spec_table`, the specification's catalogue table written down independently of the core |
//! | [`scenario`] | the scenario files: format, loader, engine (`run`, with the runner's variables and `when`), matcher, and the targets (the fake, a host) |
//! | `clauses` | the specification's clauses, and `CLAUSES.md` generated from the registered trials |
//! | `runner` | the libtest-like runner: trials, progress, baseline, JSON events and JUnit |
//! | `reference_host`, `embedded` | the reference [`ReferenceHost`]; the files built into the binary (scenarios) |
//! | [`tama`] | the `tama-operations/1` profile validator and reference dispatcher (uses nothing above) |
//!
//! Where to add things: a trial goes into the suite of its area and is named after its clause; a
//! call sequence that needs no Rust is a scenario file in `scenarios/`; a spec table row goes into
//! `suites/spec_table.rs`.

pub mod adapter;
mod certify;
mod clauses;
mod embedded;
mod reference_host;
mod runner;
pub mod scenario;
mod suites;
pub mod tama;

pub use certify::{certify, certify_adapter, certify_with, in_process_only_listing};
pub use reference_host::ReferenceHost;
pub use runner::RunArgs;

use std::process::ExitCode;
use std::sync::Arc;

/// The project's main job: runs every suite against the core through the reference host, one
/// embedded fake Incus per trial, and returns the exit code (0 when every test passed).
///
/// (Compiled as a doctest but not run there: it is the whole main job, which CI runs.)
///
/// ```no_run
/// use clap::Parser;
///
/// #[derive(Parser)]
/// struct Cli {
///     #[command(flatten)]
///     run: incus_conformance::RunArgs,
/// }
///
/// fn main() -> std::process::ExitCode {
///     incus_conformance::run_conformance(&Cli::parse().run)
/// }
/// ```
pub fn run_conformance(args: &RunArgs) -> ExitCode {
    let hosts: scenario::fake::HostFactory<ReferenceHost> =
        Arc::new(|connection| (ReferenceHost::new(connection), ()));
    let factory: Arc<dyn scenario::target::TargetFactory> =
        Arc::new(scenario::fake::HostTargets::new(hosts));
    certify::run_suites(args, &factory, suites::Subject::Core)
}

/// `RELIABILITY.md`: runs every reliability measurement (each mutation under each fault on both
/// listeners, the refusals before the backend, TLS refusals, bad input, load) and renders the
/// document; `Err` lists every promise that broke. `long` runs many more bad-input and load cases.
///
/// (Compiled as a doctest but not run there: it takes every measurement, which the test
/// `reliability_md_is_up_to_date` does.)
///
/// ```no_run
/// let text = incus_conformance::reliability_markdown(false).expect("every promise holds");
/// assert!(text.starts_with("# Reliability"));
/// ```
pub fn reliability_markdown(long: bool) -> Result<String, String> {
    let size = if long {
        suites::reliability::Size::LONG
    } else {
        suites::reliability::Size::SHORT
    };
    suites::reliability::markdown(size)
}

/// The cases of the core's value rules as data (`conformance/data/safety-values.json`, the list the
/// `safety::*` trials run against the fake): each `{"rule", "label", "operation", "scopes",
/// "input", "expect", "harm"?}`, with `expect` one of `invalid_input`, `scope_missing`,
/// `restricted_input` (refused before any request; `harm` says what the input does to a real
/// daemon that takes it) or `sent` (a benign value that reaches Incus). Inputs name an existing
/// instance `c1`, a new instance `w1`, pool `default` and volume `vol1`; a runner against a real
/// daemon renames them (`real-incus-acceptance` does).
///
/// ```
/// let cases = incus_conformance::safety_value_cases();
/// assert!(cases.iter().any(|case| case["expect"] == "sent"));
/// ```
pub fn safety_value_cases() -> Vec<serde_json::Value> {
    suites::value_cases()
}

/// `CLAUSES.md`: every clause of the specification with its sentence and the tests that check it,
/// generated from the registered tests.
pub fn clauses_markdown() -> String {
    let factory: Arc<dyn scenario::target::TargetFactory> =
        Arc::new(suites::listing_only::ListingOnly);
    let checks = suites::registry(&factory, suites::Subject::Core);
    clauses::render_markdown(
        checks
            .iter()
            .map(|c| (c.name.as_str(), c.clauses.as_slice())),
    )
}
