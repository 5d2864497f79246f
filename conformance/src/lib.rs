//! Conformance harness for the Incus operations.

mod reference_host;

pub use reference_host::ReferenceHost;

mod clauses;
mod runner;
mod scenario;
mod suites;
pub mod tama;

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
    let factory: Arc<dyn scenario::target::TargetFactory> =
        Arc::new(suites::unavailable::Unavailable);
    runner::execute(args, suites::registry(&factory))
}

/// `CLAUSES.md`: every clause of the specification with its sentence and the tests that check it,
/// generated from the registered tests.
pub fn clauses_markdown() -> String {
    let factory: Arc<dyn scenario::target::TargetFactory> =
        Arc::new(suites::unavailable::Unavailable);
    let checks = suites::registry(&factory);
    clauses::render_markdown(
        checks
            .iter()
            .map(|c| (c.name.as_str(), c.clauses.as_slice())),
    )
}
