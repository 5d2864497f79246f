//! `incus-conformance`: the conformance harness's command line (see `cli` for the subcommands).

mod cli;

use std::process::ExitCode;

fn main() -> ExitCode {
    cli::main(std::env::args_os())
}
