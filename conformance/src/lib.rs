//! Conformance harness for the Incus operations.

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
    runner::execute(args, suites::registry(&factory, suites::Subject::Core))
}

/// `RELIABILITY.md`: runs every reliability measurement (each mutation under each fault on both
/// listeners, the refusals before the backend, TLS refusals, bad input, load) and renders the
/// document; `Err` lists every promise that broke. `long` runs many more bad-input and load cases.
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

/// `CLAUSES.md`: every clause of the specification with its sentence and the tests that check it,
/// generated from the registered tests.
pub fn clauses_markdown() -> String {
    let factory: Arc<dyn scenario::target::TargetFactory> =
        Arc::new(suites::unavailable::Unavailable);
    let checks = suites::registry(&factory, suites::Subject::Core);
    clauses::render_markdown(
        checks
            .iter()
            .map(|c| (c.name.as_str(), c.clauses.as_slice())),
    )
}
