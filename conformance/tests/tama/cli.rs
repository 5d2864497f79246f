//! `incus-conformance tama validate`: formats and exit statuses.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use crate::support::spec_example;
use serde_json::{json, Value};

fn run(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_incus-conformance"))
        .args(args)
        .current_dir(dir)
        .output()
        .expect("the binary runs")
}

fn write(dir: &Path, name: &str, contents: &[u8]) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, contents).expect("write fixture");
    path
}

/// A temporary directory holding `good.json` (the spec's example) and `bad.json` (two violations).
fn good_and_bad() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "good.json",
        &serde_json::to_vec(&spec_example()).unwrap(),
    );
    write(dir.path(), "bad.json", &invalid_document());
    dir
}

fn invalid_document() -> Vec<u8> {
    let mut document = spec_example();
    document["openapi"] = json!("3.0.3");
    document["x-tama-owner"] = json!("me");
    serde_json::to_vec(&document).expect("serializes")
}

#[test]
fn exit_status_is_0_when_every_file_is_valid() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "a.json",
        &serde_json::to_vec(&spec_example()).unwrap(),
    );
    let output = run(&["tama", "validate", "a.json"], dir.path());
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("1 file(s) checked: 1 valid, 0 invalid"),
        "{stdout}"
    );
}

#[test]
fn exit_status_is_1_when_any_file_is_invalid_and_text_names_file_pointer_rule_and_message() {
    let dir = good_and_bad();
    let output = run(&["tama", "validate", "good.json", "bad.json"], dir.path());
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("bad.json: /openapi: document.openapi: ")),
        "{stdout}"
    );
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("bad.json: /x-tama-owner: document.x-tama-unknown: ")),
        "{stdout}"
    );
    assert_eq!(
        lines.last(),
        Some(&"2 file(s) checked: 1 valid, 1 invalid, 2 violation(s)")
    );
}

#[test]
fn json_format_prints_one_array_with_file_valid_and_errors() {
    let dir = good_and_bad();
    let output = run(
        &[
            "tama",
            "validate",
            "--format",
            "json",
            "good.json",
            "bad.json",
        ],
        dir.path(),
    );
    assert_eq!(output.status.code(), Some(1));
    let results: Value = serde_json::from_slice(&output.stdout).expect("stdout is one JSON value");
    assert_eq!(
        results[0],
        json!({"file": "good.json", "valid": true, "errors": []})
    );
    assert_eq!(results[1]["file"], "bad.json");
    assert_eq!(results[1]["valid"], false);
    let errors = results[1]["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 2);
    assert_eq!(errors[0]["pointer"], "/openapi");
    assert_eq!(errors[0]["rule"], "document.openapi");
    assert!(errors[0]["message"].as_str().is_some_and(|m| !m.is_empty()));
    assert_eq!(results.as_array().map(Vec::len), Some(2));
}

#[test]
fn exit_status_is_2_for_a_non_json_file_with_a_message_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "good.json",
        &serde_json::to_vec(&spec_example()).unwrap(),
    );
    write(dir.path(), "broken.json", b"{\"openapi\": ");
    let output = run(
        &["tama", "validate", "good.json", "broken.json"],
        dir.path(),
    );
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("broken.json is not JSON"), "{stderr}");
}

#[test]
fn exit_status_is_2_for_an_unreadable_file_with_a_message_naming_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let output = run(&["tama", "validate", "missing.json"], dir.path());
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("cannot read missing.json"), "{stderr}");
}

#[test]
fn exit_status_is_2_on_a_usage_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    for args in [
        &["tama", "validate"][..],
        &["tama", "validate", "--format", "xml", "a.json"],
    ] {
        let output = run(args, dir.path());
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
    }
}
