//! `incus-conformance reliability`: runs the reliability measurements and prints `RELIABILITY.md`.

use std::io::Write;
use std::process::ExitCode;

/// Flags of `reliability`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// Run the bad-input and load sections with many more cases (the committed document records
    /// the short run).
    #[arg(long)]
    long: bool,
}

/// Prints the document; exit 1 (with every broken promise on stderr) when a promise broke.
pub(crate) fn run(args: Args) -> ExitCode {
    match incus_conformance::reliability_markdown(args.long) {
        Ok(text) => {
            let mut stdout = std::io::stdout().lock();
            match stdout
                .write_all(text.as_bytes())
                .and_then(|()| stdout.flush())
            {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("incus-conformance: cannot write the output: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(problems) => {
            eprintln!("incus-conformance: reliability promises broke:\n{problems}");
            ExitCode::FAILURE
        }
    }
}
