//! `incus-conformance`: the project's main job.
use std::process::ExitCode;

mod cli;

fn main() -> ExitCode {
    cli::main()
}
