//! The wire protocol end to end, through the built binary: every trial that can be expressed
//! over the wire has the same verdict in-process and through the reference adapter (standard
//! input and output), a selection also over HTTP, and the trials left out are the listed ones.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

const BIN: &str = env!("CARGO_BIN_EXE_incus-conformance");

/// The outcome of every test of a `--format json` run with `args`.
fn outcomes(args: &[&str]) -> BTreeMap<String, String> {
    let output = Command::new(BIN)
        .args(args)
        .args(["--format", "json"])
        .output()
        .expect("the harness runs");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let mut outcomes = BTreeMap::new();
    for line in stdout.lines() {
        let event: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{line}: {e}"));
        if event["type"] == "test" && event["event"] != "started" {
            let name = event["name"].as_str().unwrap().to_owned();
            let outcome = match event["message"].as_str() {
                Some(message) => format!(
                    "{}: {}",
                    event["event"],
                    message.lines().next().unwrap_or("")
                ),
                None => event["event"].to_string(),
            };
            outcomes.insert(name, outcome);
        }
    }
    assert!(
        !outcomes.is_empty(),
        "no test ran: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    outcomes
}

/// The reference adapter as an `--adapter` command (the path quoted for the word splitting).
fn reference_adapter() -> String {
    format!("'{BIN}' adapter")
}

/// The prefixes `certify --list` gives as in-process only.
fn in_process_only() -> Vec<String> {
    let output = Command::new(BIN)
        .args(["certify", "--adapter", &reference_adapter(), "--list"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let (_, section) = stdout
        .split_once("in-process only (not run over the wire):")
        .expect("--list lists the in-process-only trials");
    section
        .lines()
        .filter_map(|l| l.trim().split_once(": "))
        .map(|(prefix, reason)| {
            assert!(!reason.trim().is_empty(), "{prefix} says no reason");
            prefix.trim_end_matches('*').to_owned()
        })
        .collect()
}

#[test]
fn every_wire_trial_has_the_verdict_it_has_in_process() {
    let wire = outcomes(&["certify", "--adapter", &reference_adapter()]);
    let local = outcomes(&["run"]);
    let only = in_process_only();
    let mut differences = Vec::new();
    for (name, outcome) in &local {
        let listed = only.iter().any(|p| name.starts_with(p.as_str()));
        match (wire.get(name), listed) {
            (Some(over_wire), false) if over_wire == outcome => {}
            (Some(over_wire), false) => {
                differences.push(format!(
                    "{name}: in-process {outcome}, over the wire {over_wire}"
                ));
            }
            (None, true) => {}
            (Some(_), true) => differences.push(format!(
                "{name} is listed in-process only but ran over the wire"
            )),
            (None, false) => differences.push(format!(
                "{name} did not run over the wire and is not listed"
            )),
        }
    }
    for name in wire.keys().filter(|n| !local.contains_key(*n)) {
        differences.push(format!("{name} ran over the wire only"));
    }
    assert!(differences.is_empty(), "{differences:#?}");
    assert!(
        wire.len() * 10 > local.len() * 8,
        "only {} of {} trials over the wire",
        wire.len(),
        local.len()
    );
}

/// `incus-conformance adapter --listen 127.0.0.1:0`, killed when dropped.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn the_wire_over_http_gives_the_in_process_verdicts() {
    let child = Command::new(BIN)
        .args(["adapter", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut served = Served(child);
    let mut url = String::new();
    BufReader::new(served.0.stdout.take().unwrap())
        .read_line(&mut url)
        .unwrap();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");
    // The host's behaviour (allow_restricted of every answer) and the fake's journal.
    let selection = "restricted_input::";
    let wire_args = ["certify", "--adapter-url", url.trim(), selection];
    let local_args = ["run", selection];
    let wire = outcomes(&wire_args);
    let local = outcomes(&local_args);
    let only = in_process_only();
    let local: BTreeMap<_, _> = local
        .into_iter()
        .filter(|(n, _)| !only.iter().any(|p| n.starts_with(p.as_str())))
        .collect();
    assert_eq!(wire, local);
}
