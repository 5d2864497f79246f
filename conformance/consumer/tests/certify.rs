//! Certifies `TeamHost`: every conformance suite runs through it, over a fake Incus per trial.
//! `cargo test -p host-certification-example` prints the per-test and per-clause report;
//! libtest's flags work after `--` (`--list`, a name filter, `--skip`, `--format json`).
use std::process::ExitCode;

use host_certification_example::{Grants, TeamHost};
use incus_operations::Scope;

fn main() -> ExitCode {
    let scopes = [Scope::Read, Scope::Write, Scope::Exec, Scope::Delete];
    incus_conformance::certify(move |connection| {
        let caller = Grants::new("certification", scopes).any_project();
        (TeamHost::new(connection), caller)
    })
}
