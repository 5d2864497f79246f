//! Host certification through the public API: a correct host passes, a broken host fails.

use std::process::ExitCode;

use clap::Parser;
use incus_conformance::{certify_with, ReferenceHost, RunArgs};
use incus_operations::Connection;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
}

/// Flags for one exact test; libtest's own output goes to a log file in `dir`.
fn args(filter: &str, dir: &tempfile::TempDir) -> RunArgs {
    let log = dir.path().join("certify.log");
    let log = log.to_str().expect("a UTF-8 path");
    let argv = [
        "certify",
        "--exact",
        filter,
        "--test-threads",
        "1",
        "-q",
        "--logfile",
        log,
    ];
    Cli::try_parse_from(argv).expect("valid flags").run
}

#[test]
fn the_reference_host_certifies() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let code = certify_with(
        &args("scenario::instance_create_and_get", &dir),
        |connection| (ReferenceHost::new(connection), ()),
    );
    assert_eq!(code, ExitCode::SUCCESS);
}

#[test]
fn a_host_bound_to_the_wrong_incus_fails_certification() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let nowhere = dir.path().join("no-incus.socket");
    let code = certify_with(
        &args("scenario::instance_create_and_get", &dir),
        move |_| (ReferenceHost::new(Connection::unix(&nowhere)), ()),
    );
    assert_ne!(code, ExitCode::SUCCESS);
}
