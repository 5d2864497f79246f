//! `incus-conformance tama validate [--format text|json] FILE...`: checks published
//! `tama-operations/1` documents, for CI.
//!
//! Exit status: 0 when every file is valid, 1 when any is invalid, 2 when a file cannot be read
//! or is not JSON (the message names the file).

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use incus_conformance::tama::{self, Report, Violation};
use serde::Serialize;

/// How results are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub(crate) enum Format {
    /// One line per violation, `FILE: POINTER: RULE: MESSAGE`, then a summary.
    #[default]
    Text,
    /// One JSON array: `[{"file", "valid", "errors": [{"pointer", "rule", "message"}]}]`.
    Json,
}

#[derive(Serialize)]
struct FileResult<'a> {
    file: String,
    valid: bool,
    errors: &'a [Violation],
}

/// Validates `files` and prints the results in `format`.
pub(crate) fn run(format: Format, files: &[PathBuf]) -> ExitCode {
    if files.is_empty() {
        eprintln!("incus-conformance tama validate: no FILE given");
        return ExitCode::from(2);
    }
    let mut reports = Vec::with_capacity(files.len());
    for file in files {
        match read(file) {
            Ok(report) => reports.push((file, report)),
            Err(message) => {
                eprintln!("incus-conformance tama validate: {message}");
                return ExitCode::from(2);
            }
        }
    }
    let printed = match format {
        Format::Text => print_text(&reports),
        Format::Json => print_json(&reports),
    };
    if let Err(error) = printed {
        eprintln!("incus-conformance tama validate: cannot write the results: {error}");
        return ExitCode::from(2);
    }
    if reports.iter().all(|(_, report)| report.is_valid()) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

fn read(file: &PathBuf) -> Result<Report, String> {
    let bytes =
        std::fs::read(file).map_err(|error| format!("cannot read {}: {error}", file.display()))?;
    tama::try_validate_bytes(&bytes)
        .map_err(|error| format!("{} is not JSON: {error}", file.display()))
}

fn print_text(reports: &[(&PathBuf, Report)]) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    let mut invalid = 0usize;
    let mut violations = 0usize;
    for (file, report) in reports {
        for v in report.violations() {
            writeln!(
                out,
                "{}: {}: {}: {}",
                file.display(),
                display_pointer(&v.pointer),
                v.rule,
                v.message
            )?;
        }
        if !report.is_valid() {
            invalid += 1;
            violations += report.violations().len();
        }
    }
    writeln!(
        out,
        "{} file(s) checked: {} valid, {invalid} invalid, {violations} violation(s)",
        reports.len(),
        reports.len() - invalid
    )
}

/// The whole document's pointer is empty; print it as `/` would be wrong, so quote it.
fn display_pointer(pointer: &str) -> &str {
    if pointer.is_empty() {
        "\"\""
    } else {
        pointer
    }
}

fn print_json(reports: &[(&PathBuf, Report)]) -> std::io::Result<()> {
    let results: Vec<FileResult<'_>> = reports
        .iter()
        .map(|(file, report)| FileResult {
            file: file.display().to_string(),
            valid: report.is_valid(),
            errors: report.violations(),
        })
        .collect();
    let mut out = std::io::stdout().lock();
    serde_json::to_writer_pretty(&mut out, &results)?;
    writeln!(out)
}
