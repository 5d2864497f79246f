//! `incus-conformance tama ...`: the tama-operations/1 profile document.

use std::process::ExitCode;

/// Subcommands of `tama`.
#[derive(Debug, clap::Subcommand)]
pub(super) enum Command {
    /// Print the tama-operations/1 document of the exported operations as JSON.
    Export {
        /// Include the operations that are not exported (for review, not for publishing).
        #[arg(long)]
        all: bool,
    },
    // `validate` is added here by the profile validator's owner.
}

pub(super) fn run(command: Command) -> ExitCode {
    match command {
        Command::Export { all } => {
            let document = if all {
                incus_operations::tama_document_all()
            } else {
                incus_operations::tama_document()
            };
            super::print_json(&document)
        }
    }
}
