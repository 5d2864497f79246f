//! `incus-conformance`: the project's main job.
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod cli;

#[derive(Parser)]
#[command(
    name = "incus-conformance",
    version,
    about = "Conformance harness for the Incus operations"
)]
struct Args {
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// The tama-operations/1 profile.
    #[command(subcommand)]
    Tama(TamaCommand),
}

#[derive(Subcommand)]
enum TamaCommand {
    /// Validate tama-operations/1 documents: exit 0 when all are valid, 1 when any is not,
    /// 2 on a usage error or an unreadable or non-JSON file.
    Validate {
        /// Output format.
        #[arg(long, value_enum, default_value_t = cli::tama_validate::Format::Text)]
        format: cli::tama_validate::Format,
        /// Documents to validate.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

fn main() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(error) => {
            let _ = error.print();
            return if error.use_stderr() {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
    };
    match args.command {
        Some(Command::Tama(TamaCommand::Validate { format, files })) => {
            cli::tama_validate::run(format, &files)
        }
        None => ExitCode::SUCCESS,
    }
}
