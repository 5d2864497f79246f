//! The command line: one file per subcommand, dispatched from here.
//!
//! To add a subcommand: create `cli/<name>.rs` with an `Args` (or a nested `Command`) and a
//! `run(...) -> ExitCode`, add a variant to [`Command`] and a match arm in [`main`].
//! Exit codes: 0 success, 1 the job ran and failed, 2 usage errors.

mod adapter;
mod call;
mod catalogue;
mod certify;
mod output;
mod reliability;
mod run;
mod tama;
mod tama_validate;

use std::ffi::OsString;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use output::USAGE;

#[derive(Debug, Parser)]
#[command(
    name = "incus-conformance",
    version,
    about = "Conformance harness for the Incus operations",
    long_about = "Conformance harness for the Incus operations: the catalogue, the tama-operations/1 profile, and the suites run against the core over an embedded fake Incus (the default).\n\nWithout a subcommand it runs the suites and takes the flags of `run` directly: `incus-conformance --list`, `incus-conformance scenario:: --junit report.xml`.",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// The flags of the default `run`, accepted without the subcommand.
    #[command(flatten)]
    run: run::Args,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Print every operation descriptor (with an `exported` flag) and the unavailable operations
    /// with their reasons, as JSON.
    Catalogue(catalogue::Args),
    /// The tama-operations/1 profile document.
    Tama {
        #[command(subcommand)]
        command: tama::Command,
    },
    /// Run every suite against the core with an embedded fake Incus (the default): libtest's
    /// flags, plus --junit FILE and --expected-failures FILE.
    Run(run::Args),
    /// Run one operation through the reference host bound to a connection; print the result.
    /// Exit 0 for a success object, 1 for an error result, 2 for a usage error.
    Call(Box<call::Args>),
    /// Measure what the core and the fake promise when things go wrong (faults on both listeners,
    /// refusals before the backend, TLS refusals, bad input, load) and print RELIABILITY.md.
    /// Exit 1 when a promise broke.
    Reliability(reliability::Args),
    /// Run every suite that can be expressed over the wire protocol incus-operations-adapter/1
    /// through an implementation under test (--adapter 'COMMAND ARGS' or --adapter-url URL),
    /// with the flags of `run`. --list also lists the trials that only run in-process, and why.
    Certify(Box<certify::Args>),
    /// The reference adapter: the core behind incus-operations-adapter/1, on standard input and
    /// output (JSON lines), or over HTTP with --listen ADDR.
    Adapter(adapter::Args),
}

/// Parses `args` (program name first) and runs the chosen subcommand.
pub(crate) fn main(args: impl IntoIterator<Item = OsString>) -> ExitCode {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(error) => {
            // --help and --version are not errors; everything else is a usage error.
            let _ = error.print();
            return if error.use_stderr() {
                ExitCode::from(USAGE)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match cli.command {
        Some(Command::Catalogue(args)) => catalogue::run(args),
        Some(Command::Tama { command }) => tama::run(command),
        Some(Command::Run(args)) => run::run(args),
        Some(Command::Call(args)) => call::run_call(*args),
        Some(Command::Reliability(args)) => reliability::run(args),
        Some(Command::Certify(args)) => certify::run(*args),
        Some(Command::Adapter(args)) => adapter::run(args),
        None => run::run(cli.run),
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (the command line); a promise of the harness
    //! seen from outside (its command line, certification, the wire) goes in `tests/harness`.

    use super::*;
    use clap::CommandFactory;

    fn parse(args: &[&str]) -> Result<Cli, clap::Error> {
        Cli::try_parse_from(std::iter::once("incus-conformance").chain(args.iter().copied()))
    }

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn cli_parses_catalogue_and_tama_export() {
        assert!(matches!(
            parse(&["catalogue"]),
            Ok(Cli {
                command: Some(Command::Catalogue(_)),
                ..
            })
        ));
        let export = parse(&["tama", "export", "--all"]).unwrap();
        assert!(matches!(
            export.command,
            Some(Command::Tama {
                command: tama::Command::Export { all: true }
            })
        ));
        assert!(parse(&[]).unwrap().command.is_none());
    }

    #[test]
    fn cli_usage_errors_exit_2() {
        for args in [
            &["--bogus-flag"][..],
            &["tama"],
            &["tama", "export", "--bogus"],
        ] {
            let argv = std::iter::once("incus-conformance").chain(args.iter().copied());
            assert_eq!(
                main(argv.map(OsString::from)),
                ExitCode::from(USAGE),
                "{args:?}"
            );
        }
    }
}
