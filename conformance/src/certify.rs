//! Host certification: a host crate runs the conformance suites through its own `Host`.

use std::process::ExitCode;
use std::sync::Arc;

use clap::Parser;
use incus_operations::{Connection, Host};

use crate::adapter::targets::WireTargets;
use crate::runner::{self, RunArgs};
use crate::scenario::fake::HostTargets;
use crate::scenario::target::TargetFactory;
use crate::suites;

/// Runs every suite through the host that `host_factory` builds for each trial's fake Incus,
/// with the command line of the test binary; returns the exit code for `main`.
///
/// Each trial starts an embedded fake Incus and asks the host factory for a host bound to it
/// (and a caller the host fully authorizes); every operation of the suites then goes through
/// `run()` with that host. The run reports per test and per clause, like the main job.
///
/// In the host crate, a test target without the libtest harness:
///
/// ```toml
/// [dev-dependencies]
/// incus-conformance = "0.1"
///
/// [[test]]
/// name = "incus_conformance"
/// harness = false
/// ```
///
/// and `tests/incus_conformance.rs`:
///
/// ```no_run
/// use incus_conformance::ReferenceHost;
///
/// fn main() -> std::process::ExitCode {
///     // Replace ReferenceHost with the host under certification.
///     incus_conformance::certify(|connection| (ReferenceHost::new(connection), ()))
/// }
/// ```
///
/// (That example is compiled as a doctest but not run there: it is a whole certification, which
/// the example host `conformance/consumer` runs as its own test.)
///
/// `cargo test --test incus_conformance` then runs every check; libtest's flags work as usual
/// (`-- --list`, `-- scopes::`, `-- --format json`, `-- --junit report.xml`).
///
/// `host_factory` gets the connection to the trial's fake Incus (a Unix socket) and returns the
/// host bound to it and a caller that the host authorizes for every operation.
pub fn certify<H, F>(host_factory: F) -> ExitCode
where
    H: Host + 'static,
    F: Fn(Connection) -> (H, H::Caller) + Send + Sync + 'static,
{
    #[derive(Parser)]
    #[command(name = "incus-conformance-certify")]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }
    match Cli::try_parse() {
        Ok(cli) => certify_with(&cli.run, host_factory),
        Err(error) => {
            let _ = error.print();
            if error.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            }
        }
    }
}

/// Like [`certify`], with explicit run arguments instead of the process's command line.
pub fn certify_with<H, F>(args: &RunArgs, host_factory: F) -> ExitCode
where
    H: Host + 'static,
    F: Fn(Connection) -> (H, H::Caller) + Send + Sync + 'static,
{
    let factory: Arc<dyn TargetFactory> = Arc::new(HostTargets::new(Arc::new(host_factory)));
    run_suites(args, &factory, suites::Subject::HostUnderCertification)
}

/// Runs every suite for `subject` through `factory`'s targets as `args` say, every fake answering
/// as the run's Incus line (`--incus-version`); returns the exit code. The line is set here, above
/// both the runner and the scenario engine, so neither needs the other for it.
pub(crate) fn run_suites(
    args: &RunArgs,
    factory: &Arc<dyn TargetFactory>,
    subject: suites::Subject,
) -> ExitCode {
    crate::scenario::fake::use_incus_line(args.incus_line());
    runner::execute(args, suites::registry(factory, subject))
}

/// Runs every suite that can be expressed over the wire protocol `incus-operations-adapter/1`
/// through the adapter behind `targets`, with the same clause names, reports, JSON events, JUnit
/// and baseline as the main job; returns the exit code. With `--list`, the trials that only run
/// in-process follow the list, each with its reason.
pub fn certify_adapter(args: &RunArgs, targets: WireTargets) -> ExitCode {
    let factory: Arc<dyn TargetFactory> = Arc::new(targets);
    let code = run_suites(args, &factory, suites::Subject::Adapter);
    if args.listing() {
        print!("{}", in_process_only_listing());
    }
    code
}

/// The trials an adapter run leaves out, with the reason for each group.
pub fn in_process_only_listing() -> String {
    let mut text = String::from("\nin-process only (not run over the wire):\n");
    for (trials, reason) in suites::in_process_only() {
        text.push_str(&format!("  {trials}: {reason}\n"));
    }
    text
}
