//! The `incus-conformance` command line: the runner's flags, listing and usage errors.

use std::process::{Command, Output};

fn conformance(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_incus-conformance"))
        .args(args)
        .output()
        .expect("incus-conformance runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[test]
fn list_names_every_test_after_its_clause() {
    let output = conformance(&["run", "--list"]);
    assert!(output.status.success(), "{output:?}");
    let text = stdout(&output);
    for name in [
        "scenario::instance_delete_refuses_yes: test",
        "confirmation::inferred_consent::instance_delete_yes_is_refused: test",
        "scopes::exec::instance_exec_needs_it: test",
        "byte_bounds::input::instance_exec_is_bounded: test",
    ] {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
}

#[test]
fn filters_skip_and_exact_apply_to_the_list() {
    let all = conformance(&["run", "--list"]);
    let filtered = conformance(&["run", "--list", "scenario::", "--skip", "exec"]);
    assert!(filtered.status.success());
    let lines = stdout(&filtered);
    assert!(
        lines
            .lines()
            .all(|l| l.starts_with("scenario::") && !l.contains("exec")),
        "{lines}"
    );
    assert!(lines.lines().count() < stdout(&all).lines().count());
    let exact = conformance(&["run", "--list", "--exact", "scenario::instance_list_empty"]);
    assert_eq!(stdout(&exact), "scenario::instance_list_empty: test\n");
}

#[test]
fn help_documents_the_report_and_baseline_flags() {
    let output = conformance(&["run", "--help"]);
    assert!(output.status.success(), "{output:?}");
    let text = stdout(&output);
    for flag in [
        "--junit",
        "--expected-failures",
        "--format",
        "--skip",
        "--exact",
        "--test-threads",
        "--list",
    ] {
        assert!(text.contains(flag), "{flag} missing from help:\n{text}");
    }
}

#[test]
fn an_unreadable_baseline_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.txt");
    let output = conformance(&[
        "run",
        "--expected-failures",
        missing.to_str().unwrap(),
        "--list",
    ]);
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    assert!(String::from_utf8_lossy(&output.stderr).contains("cannot read expected-failures file"));
}
