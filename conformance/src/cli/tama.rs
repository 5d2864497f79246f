//! `incus-conformance tama ...`: the tama-operations/1 profile document.

use std::path::PathBuf;
use std::process::ExitCode;

use super::tama_validate::{self, Format};

/// Subcommands of `tama`.
#[derive(Debug, clap::Subcommand)]
pub(super) enum Command {
    /// Print the tama-operations/1 document of the exported operations as JSON.
    Export {
        /// Include the operations that are not exported (for review, not for publishing).
        #[arg(long)]
        all: bool,
    },
    /// Validate tama-operations/1 documents: exit 0 when all are valid, 1 when any is not, 2 on
    /// a usage error or an unreadable or non-JSON file.
    Validate {
        /// Output format: `text` (one line per violation, then a summary) or `json` (one array).
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// The documents to validate.
        #[arg(required = true)]
        files: Vec<PathBuf>,
    },
}

pub(super) fn run(command: Command) -> ExitCode {
    match command {
        Command::Export { all } => {
            let document = if all {
                incus_operations::tama_document_all()
            } else {
                incus_operations::tama_document()
            };
            super::output::print_json(&document)
        }
        Command::Validate { format, files } => tama_validate::run(format, &files),
    }
}
