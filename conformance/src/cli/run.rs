//! `incus-conformance run`: the conformance run, with libtest's flags and our reports.

use std::process::ExitCode;

/// Run every suite against the core, one embedded fake Incus per trial.
#[derive(Debug, Default, clap::Args)]
pub(crate) struct RunCommand {
    #[command(flatten)]
    args: incus_conformance::RunArgs,
}

impl RunCommand {
    pub(crate) fn execute(&self) -> ExitCode {
        incus_conformance::run_conformance(&self.args)
    }
}
