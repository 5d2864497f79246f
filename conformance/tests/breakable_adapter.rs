//! Proof that the wire catches real bugs: `adapters/breakable.py` forwards to the reference
//! adapter and breaks one promise at a time; for each, the harness fails the clause that names
//! the promise, and fails no trial outside the clauses that promise touches. One trial per
//! broken promise, named after the clause that must catch it; ignored, with the reason, where
//! `python3` is missing.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, ExitCode};

use libtest_mimic::{Arguments, Failed, Trial};
use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_incus-conformance");

/// One broken promise: its `INCUS_ADAPTER_BREAK` word, the clause that must fail, and the clause
/// prefixes any failing trial may have (the promise's own area, and what depends on it).
struct Broken {
    word: &'static str,
    trial: &'static str,
    must_fail: &'static str,
    may_fail: &'static [&'static str],
}

const BROKEN: &[Broken] = &[
    Broken {
        word: "resend_mutation",
        trial: "mutation::never_resent::a_resent_mutation_is_caught",
        must_fail: "mutation::never_resent",
        may_fail: &[
            "mutation::",
            "exec::",
            "cancel::",
            "update::",
            "inspection::",
            "timeouts::",
            "safety::",
            "catalogue::synchronous",
            "restricted_input::allow_callback",
            "results::",
        ],
    },
    Broken {
        word: "skip_scope_check",
        trial: "scopes::per_operation::a_skipped_scope_check_is_caught",
        must_fail: "scopes::per_operation",
        // The safety rules that ask for a second scope (incus.delete for ephemeral, incus.exec
        // for guest code, which the config-key property and the adversary also generate, and
        // which a restore or a newer line's key can bring) break with it, and so do the reads
        // that show a caller with incus.exec more (exec sessions' commands, the guest's data).
        may_fail: &[
            "scopes::",
            "check_order::sequence",
            "safety::ephemeral_update_needs_delete",
            "safety::ephemeral_stop_needs_delete",
            "safety::ephemeral_create_needs_delete",
            "safety::guest_code_needs_exec",
            "safety::config_keys_allowlisted",
            "safety::restore_judged_like_a_write",
            "safety::keys_by_server_extensions",
            "safety::adversary",
            "safety::exec_sessions_redacted",
            "safety::guest_data_redacted",
        ],
    },
    Broken {
        word: "accept_yes",
        trial: "confirmation::exact_resource::accepting_yes_is_caught",
        must_fail: "confirmation::exact_resource",
        may_fail: &["confirmation::", "check_order::sequence"],
    },
    Broken {
        word: "allow_restricted",
        trial: "restricted_input::denied_by_default::letting_a_restricted_key_through_is_caught",
        must_fail: "restricted_input::denied_by_default",
        may_fail: &["restricted_input::", "safety::"],
    },
    Broken {
        word: "exceed_output_bound",
        trial: "inspection::output_bound::exceeding_the_output_bound_is_caught",
        must_fail: "inspection::output_bound",
        may_fail: &["inspection::", "results::match_output_schema"],
    },
    Broken {
        word: "drop_uncertain",
        trial: "mutation::statuses::dropping_uncertain_is_caught",
        must_fail: "mutation::statuses",
        may_fail: &["mutation::", "safety::", "update::"],
    },
    Broken {
        word: "hang_past_wait",
        trial: "timeouts::effective_wait::hanging_past_the_wait_is_caught",
        must_fail: "timeouts::effective_wait",
        may_fail: &["timeouts::", "mutation::", "catalogue::synchronous"],
    },
];

/// The clauses of every failed test of a wire run with `broken` (of the tests `filter` selects,
/// all without one), each with the test's name.
fn failures_of(broken: &str, filter: &[&str]) -> Result<Vec<(String, Vec<String>)>, Failed> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("adapters/breakable.py");
    let output = Command::new(BIN)
        .args(["certify", "--format", "json"])
        .args(filter)
        .arg("--adapter")
        .arg(format!("python3 '{}'", script.display()))
        .env("INCUS_ADAPTER_BREAK", broken)
        .env("INCUS_REFERENCE_ADAPTER", format!("'{BIN}' adapter"))
        .output()
        .map_err(|e| format!("cannot run the harness: {e}"))?;
    let mut failed = Vec::new();
    let mut finished = false;
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let event: Value = serde_json::from_str(line).map_err(|e| format!("{line}: {e}"))?;
        finished |= event["type"] == "suite" && event["event"] == "finished";
        if event["type"] == "test" && event["event"] == "failed" {
            let clauses = event["clauses"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|c| c.as_str().map(str::to_owned))
                .collect();
            failed.push((
                event["name"].as_str().unwrap_or_default().to_owned(),
                clauses,
            ));
        }
    }
    if !finished {
        return Err(format!(
            "the run did not finish: {}",
            String::from_utf8_lossy(&output.stderr)
        )
        .into());
    }
    Ok(failed)
}

/// The failures of a whole wire run with `broken`. A trial that fails outside the clauses the
/// promise touches is run again alone: the exec trials can miss their bounds on a machine busy
/// with other work, so only a failure that repeats counts.
fn failures(broken: &str, may_fail: &[&str]) -> Result<Vec<(String, Vec<String>)>, Failed> {
    let mut failed = failures_of(broken, &[])?;
    let mut kept = Vec::new();
    for (name, clauses) in failed.drain(..) {
        let touched = clauses
            .iter()
            .any(|id| may_fail.iter().any(|p| id.starts_with(p)));
        if touched || !failures_of(broken, &["--exact", &name])?.is_empty() {
            kept.push((name, clauses));
        } else {
            eprintln!("{broken}: {name} failed in the whole run and passed alone (a busy machine)");
        }
    }
    Ok(kept)
}

fn caught(broken: &Broken) -> Result<(), Failed> {
    let failed = failures(broken.word, broken.may_fail)?;
    let clauses: BTreeSet<&str> = failed
        .iter()
        .flat_map(|(_, c)| c.iter().map(String::as_str))
        .collect();
    if !clauses.contains(broken.must_fail) {
        return Err(format!(
            "{} broken, but no {} trial failed (failed: {clauses:?})",
            broken.word, broken.must_fail
        )
        .into());
    }
    let outside: Vec<&(String, Vec<String>)> = failed
        .iter()
        .filter(|(_, c)| {
            !c.iter()
                .any(|id| broken.may_fail.iter().any(|p| id.starts_with(p)))
        })
        .collect();
    if outside.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} broken, and trials of other clauses failed too: {outside:?}",
            broken.word
        )
        .into())
    }
}

/// A run with nothing broken passes: the Python adapter itself keeps every promise.
fn faithful() -> Result<(), Failed> {
    let failed = failures("", &[])?;
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!("nothing broken, yet these failed: {failed:?}").into())
    }
}

fn main() -> ExitCode {
    let mut args = Arguments::from_args();
    // Each trial is a whole conformance run with its own threads, mostly waiting on real time
    // (17 s of wall time for 7 s of CPU, adapters included): two runs at a time keep two cores
    // busy without starving the runs' exec and timeout trials of the CPU (a failure outside the
    // promise's clauses is run again alone before it counts).
    if args.test_threads.is_none() {
        args.test_threads = Some(2);
    }
    let python = Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let mut trials: Vec<Trial> = BROKEN
        .iter()
        .map(|b| Trial::test(b.trial, move || caught(b)).with_ignored_flag(!python))
        .collect();
    trials.push(
        Trial::test(
            "results::match_output_schema::the_faithful_python_adapter_passes",
            faithful,
        )
        .with_ignored_flag(!python),
    );
    if !python {
        eprintln!("python3 is missing: the breakable adapter's trials are ignored");
    }
    libtest_mimic::run(&args, trials).exit_code()
}
