//! The runner over synthetic checks: selection, outcomes, baseline, JSON and JUnit reports.

use std::io::Write;
use std::sync::{Arc, Mutex};

use clap::Parser;
use serde_json::Value;

use super::*;

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    run: RunArgs,
}

fn args(flags: &[&str]) -> RunArgs {
    let argv = [
        "incus-conformance",
        "--test-threads",
        "1",
        "--color",
        "never",
    ];
    Cli::try_parse_from(argv.iter().chain(flags)).unwrap().run
}

#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Buffer {
    fn events(&self) -> Vec<Value> {
        let bytes = self.0.lock().unwrap().clone();
        String::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }
}

fn passing(name: &str) -> Check {
    Check::new(name, || Ok(()))
}

fn failing(name: &str) -> Check {
    Check::new(name, || Err("the rule does not hold".into()))
}

fn sample() -> Vec<Check> {
    vec![
        passing("scopes::per_operation::read_scope_is_enough"),
        failing("confirmation::inferred_consent::yes_is_refused"),
        passing("confirmation::exact_resource::full_name_passes"),
    ]
}

/// Runs with `--format json` plus `flags`; returns the verdict and the events.
fn run_json(flags: &[&str], checks: Vec<Check>) -> (Verdict, Vec<Value>) {
    let mut all = vec!["--format", "json"];
    all.extend_from_slice(flags);
    let buffer = Buffer::default();
    let sink = buffer.clone();
    let verdict = execute_to(&args(&all), checks, move || EventSink::new(Box::new(sink)));
    (verdict, buffer.events())
}

fn finished<'a>(events: &'a [Value], name: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == "test" && e["name"] == name && e["event"] != "started")
        .unwrap_or_else(|| panic!("no finished event for {name} in {events:?}"))
}

fn summary(events: &[Value]) -> &Value {
    let last = events.last().unwrap();
    assert_eq!(last["event"], "finished", "{last}");
    last
}

#[test]
fn json_events_describe_each_test_and_the_summary() {
    let (verdict, events) = run_json(&[], sample());
    assert_eq!(verdict, Verdict::Failed);
    assert_eq!(events[0]["schema"], json::SCHEMA);
    assert_eq!(events[0]["test_count"], 3);
    let failed = finished(&events, "confirmation::inferred_consent::yes_is_refused");
    assert_eq!(failed["event"], "failed");
    assert_eq!(failed["message"], "the rule does not hold");
    assert_eq!(
        failed["clauses"],
        serde_json::json!(["confirmation::inferred_consent"])
    );
    let passed = finished(&events, "scopes::per_operation::read_scope_is_enough");
    assert_eq!(passed["event"], "passed");
    assert!(passed["duration_ms"].is_u64());
    let summary = summary(&events);
    assert_eq!(summary["result"], "failed");
    assert_eq!(summary["passed"], 2);
    assert_eq!(summary["failed"], 1);
    assert_eq!(
        summary["clauses"]["confirmation::inferred_consent"]["failed"],
        1
    );
    assert_eq!(summary["clauses"]["scopes::per_operation"]["run"], 1);
}

#[test]
fn all_passing_tests_make_a_passing_run() {
    let checks = vec![passing("scopes::read::a"), passing("scopes::read::b")];
    let (verdict, events) = run_json(&[], checks);
    assert_eq!(verdict, Verdict::Passed);
    assert_eq!(summary(&events)["result"], "ok");
}

#[test]
fn filter_skip_and_exact_select_tests() {
    let (_, events) = run_json(&["confirmation", "--skip", "yes_is"], sample());
    assert_eq!(events[0]["test_count"], 1);
    assert_eq!(summary(&events)["filtered_out"], 2);
    finished(&events, "confirmation::exact_resource::full_name_passes");

    let (verdict, events) = run_json(
        &["--exact", "scopes::per_operation::read_scope_is_enough"],
        sample(),
    );
    assert_eq!(verdict, Verdict::Passed);
    assert_eq!(events[0]["test_count"], 1);
}

#[test]
fn a_panicking_test_fails_with_its_message() {
    let checks = vec![Check::new("exec::capture::panics", || panic!("boom"))];
    let (verdict, events) = run_json(&[], checks);
    assert_eq!(verdict, Verdict::Failed);
    let event = finished(&events, "exec::capture::panics");
    assert_eq!(event["message"], "test panicked: boom");
}

fn baseline_file(text: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    file.write_all(text.as_bytes()).unwrap();
    file
}

#[test]
fn listed_failures_keep_the_run_green() {
    let file = baseline_file("# known\nconfirmation::inferred_consent::yes_is_refused\n");
    let path = file.path().to_str().unwrap();
    let (verdict, events) = run_json(&["--expected-failures", path], sample());
    assert_eq!(verdict, Verdict::Passed);
    let event = finished(&events, "confirmation::inferred_consent::yes_is_refused");
    assert_eq!(event["event"], "expected_failure");
    assert_eq!(summary(&events)["expected_failures"], 1);
}

#[test]
fn a_listed_test_that_passes_is_stale_and_fails_the_run() {
    let file = baseline_file(
        r#"["confirmation::inferred_consent::yes_is_refused", "scopes::per_operation::read_scope_is_enough"]"#,
    );
    let path = file.path().to_str().unwrap();
    let (verdict, events) = run_json(&["--expected-failures", path], sample());
    assert_eq!(verdict, Verdict::Failed);
    let event = finished(&events, "scopes::per_operation::read_scope_is_enough");
    assert_eq!(event["event"], "stale_expected_failure");
    assert_eq!(summary(&events)["stale_expected_failures"], 1);
}

#[test]
fn a_listed_name_that_names_no_test_fails_the_run() {
    let file = baseline_file("confirmation::inferred_consent::yes_is_refused\ngone::away::test\n");
    let path = file.path().to_str().unwrap();
    let (verdict, events) = run_json(&["--expected-failures", path], sample());
    assert_eq!(verdict, Verdict::Failed);
    assert_eq!(
        summary(&events)["unknown_baseline_entries"],
        serde_json::json!(["gone::away::test"])
    );
}

#[test]
fn an_unreadable_baseline_or_duplicate_names_stop_the_run() {
    let (verdict, _) = run_json(
        &["--expected-failures", "/nonexistent/baseline.txt"],
        sample(),
    );
    assert_eq!(verdict, Verdict::Usage);
    let (verdict, _) = run_json(
        &[],
        vec![passing("scopes::read::a"), passing("scopes::read::a")],
    );
    assert_eq!(verdict, Verdict::Usage);
}

#[test]
fn junit_report_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("report.xml");
    let log = dir.path().join("libtest.log");
    let verdict = execute_to(
        &args(&[
            "-q",
            "--junit",
            path.to_str().unwrap(),
            "--logfile",
            log.to_str().unwrap(),
        ]),
        sample(),
        || unreachable!("no JSON events in terse mode"),
    );
    assert_eq!(verdict, Verdict::Failed);
    let xml = std::fs::read_to_string(&path).unwrap();
    assert!(xml.contains(r#"tests="3""#), "{xml}");
    assert!(xml.contains(r#"failures="1""#), "{xml}");
}

#[test]
fn list_runs_nothing() {
    let ran = Arc::new(Mutex::new(false));
    let flag = Arc::clone(&ran);
    let check = Check::new("scopes::read::a", move || {
        *flag.lock().unwrap() = true;
        Ok(())
    });
    assert_eq!(
        execute_to(&args(&["--list"]), vec![check], || unreachable!()),
        Verdict::Passed
    );
    assert!(!*ran.lock().unwrap());
}

#[test]
fn scripted_panics_fail_like_any_panic_but_quietly() {
    let checks = vec![Check::new(
        "binding::callback_failure_denies::quiet",
        || panic!("callback {EXPECTED_PANIC}"),
    )];
    let (verdict, events) = run_json(&[], checks);
    assert_eq!(verdict, Verdict::Failed);
    let event = finished(&events, "binding::callback_failure_denies::quiet");
    assert!(event["message"].as_str().unwrap().contains(EXPECTED_PANIC));
}

#[test]
fn incus_version_chooses_the_line_the_fakes_answer_as_and_refuses_others() {
    assert_eq!(
        args(&["--incus-version", "7.0"]).incus_version,
        Some(fake_incus::IncusLine::V7_0)
    );
    assert_eq!(args(&[]).incus_version, None);
    let argv = ["incus-conformance", "--incus-version", "6.1"];
    let refused = Cli::try_parse_from(argv).err().unwrap().to_string();
    assert!(
        refused.contains("it imitates 6.0 (6.0.4), 7.0 (7.0.2)"),
        "{refused}"
    );
}
