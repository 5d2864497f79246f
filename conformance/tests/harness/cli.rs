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
fn help_names_the_default_incus_line() {
    let output = conformance(&["run", "--help"]);
    assert!(output.status.success(), "{output:?}");
    let text = stdout(&output);
    let words: Vec<&str> = text.split_whitespace().collect();
    let said = format!(
        "Default: the fake's default line, {}",
        fake_incus::IncusLine::DEFAULT.name()
    );
    assert!(
        words.join(" ").contains(&said),
        "{said:?} missing from help:\n{text}"
    );
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

/// The same binary copied elsewhere and run from yet another directory, as `cargo install` or
/// a CI artifact would run it.
fn relocated(args: &[&str], home: &tempfile::TempDir) -> Output {
    let binary = home.path().join("bin").join("incus-conformance");
    if !binary.exists() {
        std::fs::create_dir_all(binary.parent().unwrap()).unwrap();
        std::fs::copy(env!("CARGO_BIN_EXE_incus-conformance"), &binary).unwrap();
    }
    let elsewhere = home.path().join("elsewhere");
    std::fs::create_dir_all(&elsewhere).unwrap();
    Command::new(&binary)
        .args(args)
        .current_dir(&elsewhere)
        .env_remove("INCUS_CONFORMANCE_SCENARIOS")
        .output()
        .expect("the relocated incus-conformance runs")
}

#[test]
fn an_installed_binary_runs_the_same_trials_anywhere() {
    let home = tempfile::tempdir().unwrap();
    let in_tree = Command::new(env!("CARGO_BIN_EXE_incus-conformance"))
        .args(["run", "--list"])
        .env_remove("INCUS_CONFORMANCE_SCENARIOS")
        .output()
        .unwrap();
    let moved = relocated(&["run", "--list"], &home);
    assert!(moved.status.success(), "{moved:?}");
    let trials = stdout(&in_tree).lines().count();
    assert!(trials >= 400, "only {trials} trials in the tree");
    assert_eq!(stdout(&moved), stdout(&in_tree), "the trial lists differ");
    // The trials that read repository files (scenarios, evidence ledgers, the pinned
    // catalogue fixture, the core's manifest and sources) pass from there too.
    for filter in [
        "evidence::",
        "exposure::",
        "catalogue::public_contract",
        "scenario::instance_list",
    ] {
        let run = relocated(&["run", "-q", filter], &home);
        let text = stdout(&run);
        assert!(run.status.success(), "{filter}: {text}");
        assert!(!text.contains(" 0 passed"), "{filter} ran nothing: {text}");
    }
}
