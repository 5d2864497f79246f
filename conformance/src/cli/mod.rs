//! The command line of `incus-conformance` (minimal structure; reconciled with the catalogue's).

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod run;

/// Conformance harness for the Incus operations.
#[derive(Debug, Parser)]
#[command(name = "incus-conformance", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run every suite against the core with an embedded fake Incus (the default).
    Run(run::RunCommand),
}

/// Parses the command line and runs the chosen command.
pub(crate) fn main() -> ExitCode {
    match Cli::parse().command {
        Some(Command::Run(command)) => command.execute(),
        None => run::RunCommand::default().execute(),
    }
}
