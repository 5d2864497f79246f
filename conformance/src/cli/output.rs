//! What every subcommand shares: the usage exit code and JSON on standard output.

use std::io::Write;
use std::process::ExitCode;

/// Exit code for usage errors.
pub(super) const USAGE: u8 = 2;

/// Writes a JSON value to stdout, pretty-printed; a closed stdout is a failure, not a panic.
pub(super) fn print_json(value: &serde_json::Value) -> ExitCode {
    let text = match serde_json::to_string_pretty(value) {
        Ok(text) => text,
        Err(error) => {
            eprintln!("incus-conformance: cannot serialize the output: {error}");
            return ExitCode::FAILURE;
        }
    };
    let mut stdout = std::io::stdout().lock();
    match writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("incus-conformance: cannot write the output: {error}");
            ExitCode::FAILURE
        }
    }
}
