//! `incus-conformance run` (and no arguments): the conformance run, with libtest's flags
//! (`FILTER`, `--skip`, `--exact`, `--list`, `--test-threads`, `--format pretty|terse|json`, ...)
//! plus `--junit FILE`, `--expected-failures FILE` and `--incus-version 6.0|7.0`.

use std::process::ExitCode;

/// The flags of the conformance run.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    run: incus_conformance::RunArgs,
}

/// Runs every suite against the core, one embedded fake Incus per trial.
pub(crate) fn run(args: Args) -> ExitCode {
    incus_conformance::run_conformance(&args.run)
}
