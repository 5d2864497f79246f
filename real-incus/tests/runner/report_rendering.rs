//! Report rendering on sample data.
use real_incus::cleanup::CleanupOutcome;
use real_incus::report::{
    BenignCase, Check, ExtensionUse, Outcome, RefusedCase, Relayed, Report, RuleEvidence,
    SafetyValues, ServerAnswer, ServerInfo,
};
use serde_json::json;

fn check(operation: &str, name: &str, outcome: Outcome) -> Check {
    Check {
        operation: operation.into(),
        name: name.into(),
        outcome,
        duration_ms: 12,
        input: json!({"name": "c1", "project": "ioacc-0123456789"}),
        output: json!({"error": {"kind": "native", "message": "Instance is running", "http_status": 400}}),
        problem: (outcome == Outcome::Failed).then(|| "expected success, got error".to_owned()),
    }
}

fn catalogue() -> Vec<(String, bool, Vec<String>)> {
    vec![
        (
            "incus_instance_delete".into(),
            true,
            vec!["DeleteInstance".into(), "GetOperationWait".into()],
        ),
        (
            "incus_server_get".into(),
            false,
            vec!["helper:connect".into()],
        ),
    ]
}

fn sample(outcome: Outcome) -> Report {
    let mut report = Report {
        runner_version: "0.1.0".into(),
        started_at: "2026-11-30T12:00:00Z".into(),
        duration_ms: 4200,
        endpoint: "unix:/run/incus.socket".into(),
        project: "ioacc-0123456789".into(),
        image: "built from busybox".into(),
        server: Some(ServerInfo {
            version: "6.0.4".into(),
            api_version: "1.0".into(),
            driver: "lxc / dir".into(),
            kernel: "6.1".into(),
            api_extensions: vec!["etag".into(), "patch".into()],
        }),
        checks: vec![
            check("incus_instance_delete", "success", outcome),
            check("incus_server_get", "success", Outcome::Passed),
        ],
        cleanup: CleanupOutcome {
            done: vec!["delete project ioacc-0123456789".into()],
            ..Default::default()
        },
        ..Report::default()
    };
    report.summarize(&catalogue());
    report
}

#[test]
fn report_has_server_version_extensions_and_a_row_per_operation() {
    let md = sample(Outcome::Passed).to_markdown();
    assert!(md.starts_with("# Real Incus acceptance: PASSED"), "{md}");
    assert!(md.contains("Incus 6.0.4 (API 1.0)"));
    assert!(md.contains("API extensions (2): etag, patch"));
    assert!(md.contains("| `incus_instance_delete` | yes | passed | 12 | DeleteInstance, GetOperationWait | success |"), "{md}");
    assert!(
        md.contains("| `incus_server_get` | no (review) | passed |"),
        "{md}"
    );
    assert!(md.contains("## Cleanup: nothing left"));
    assert!(!md.contains("## Failures"));
}

#[test]
fn report_shows_each_failure_with_the_call_and_the_answer() {
    let report = sample(Outcome::Failed);
    assert!(!report.passed());
    let md = report.to_markdown();
    assert!(md.starts_with("# Real Incus acceptance: FAILED"));
    assert!(md.contains("## Failures (1)"));
    assert!(md.contains("### `incus_instance_delete`: success"));
    assert!(
        md.contains("\"project\": \"ioacc-0123456789\""),
        "the call is shown"
    );
    assert!(
        md.contains("\"message\": \"Instance is running\""),
        "the answer is shown"
    );
}

#[test]
fn report_passes_only_when_every_operation_passed_and_nothing_is_left() {
    assert!(sample(Outcome::Passed).passed());
    let mut skipped = sample(Outcome::Skipped);
    skipped.summarize(&catalogue());
    assert!(
        !skipped.passed(),
        "an operation that never ran is not a pass"
    );
    let mut dirty = sample(Outcome::Passed);
    dirty
        .cleanup
        .leftovers
        .push("project ioacc-0123456789".into());
    assert!(!dirty.passed());
    assert!(dirty
        .to_markdown()
        .contains("**left over:** project ioacc-0123456789"));
    let mut interrupted = sample(Outcome::Passed);
    interrupted.interrupted = true;
    assert!(!interrupted.passed());
    assert!(
        Report::default().to_markdown().contains("FAILED"),
        "an empty run is not a pass"
    );
}

#[test]
fn report_writes_markdown_and_a_json_twin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let report = sample(Outcome::Failed);
    let (md, json) = report.write(&dir.path().join("reports")).expect("write");
    assert!(md.ends_with("real-incus-acceptance.md"));
    let back: Report =
        serde_json::from_str(&std::fs::read_to_string(json).expect("read")).expect("parse");
    assert_eq!(back, report);
}

#[test]
fn table_cells_escape_pipes_and_newlines() {
    let mut report = sample(Outcome::Passed);
    report.checks[0].name = "a | b\nc".into();
    report.summarize(&catalogue());
    let md = report.to_markdown();
    assert!(md.contains("a \\| b c"), "{md}");
}

/// The report names the server version and what the judgement relied on: the API extensions the
/// checks need (one the server lacks marked), and the server's answers where the Incus lines differ
/// with no extension to tell them apart; the JSON twin holds both.
#[test]
fn the_report_names_the_extensions_and_the_answers_the_judgement_relied_on() {
    let mut report = sample(Outcome::Passed);
    report.extensions_relied_on = vec![
        ExtensionUse {
            name: "etag".into(),
            needed_for: "conditional PATCH".into(),
            advertised: true,
        },
        ExtensionUse {
            name: "operation_wait".into(),
            needed_for: "every wait_seconds".into(),
            advertised: false,
        },
    ];
    report.server_answers = vec![ServerAnswer {
        question: "Can a running exec operation be cancelled?".into(),
        answer: "no (may_cancel false)".into(),
        seen_in: "incus_operation_get: success: the running operation".into(),
    }];
    let md = report.to_markdown();
    assert!(
        md.contains("## What the judgement relied on (Incus 6.0.4)"),
        "{md}"
    );
    assert!(md.contains("| `etag` | yes | conditional PATCH |"), "{md}");
    assert!(
        md.contains("| `operation_wait` | **NO** | every wait_seconds |"),
        "{md}"
    );
    assert!(
        md.contains("- Can a running exec operation be cancelled? **no (may_cancel false)** (in incus_operation_get: success: the running operation)"),
        "{md}"
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["extensions_relied_on"][1]["advertised"], false);
    assert_eq!(json["server_answers"][0]["answer"], "no (may_cancel false)");
    assert_eq!(json["server"]["version"], "6.0.4");
}

fn refused(label: &str, requests: Vec<Relayed>, outcome: Outcome) -> RefusedCase {
    RefusedCase {
        label: label.into(),
        operation: "incus_instance_update".into(),
        scopes: vec!["incus.write".into()],
        expected: "invalid_input".into(),
        got: "invalid_input".into(),
        harm: Some("destroys every snapshot of the pool".into()),
        requests,
        documented_reads: Vec::new(),
        outcome,
        problem: (outcome == Outcome::Failed).then(|| "kept from the daemon by the relay".into()),
    }
}

fn with_safety(refused_outcome: Outcome) -> Report {
    let mut report = sample(Outcome::Passed);
    let blocked = Relayed {
        method: "PATCH".into(),
        path: "/1.0/instances/values1?project=p".into(),
        forwarded: false,
    };
    let requests = match refused_outcome {
        Outcome::Failed => vec![blocked],
        _ => Vec::new(),
    };
    report.safety_values = Some(SafetyValues {
        method: "through a read-only relay".into(),
        rules: vec![RuleEvidence {
            rule: "safety::snapshot_pattern_grammar".into(),
            refused: vec![refused("pattern '..'", requests, refused_outcome)],
            benign: vec![BenignCase {
                label: "pattern 'snap%d'".into(),
                operation: "incus_instance_update".into(),
                scopes: vec!["incus.write".into()],
                evidence: vec!["an unnamed snapshot is named \"snap0\"".into()],
                outcome: Outcome::Passed,
                problem: None,
            }],
        }],
        verified: vec!["instance values1 reads as before".into()],
        errors: Vec::new(),
        duration_ms: 4200,
    });
    report
}

#[test]
fn the_safety_section_names_the_line_and_what_reached_the_daemon_for_each_refused_input() {
    let report = with_safety(Outcome::Passed);
    assert!(report.passed());
    let md = report.to_markdown();
    assert!(
        md.contains("## Safety values on Incus 6.0.4: 1/1 refused before any change, 1/1 benign applied and read back (4.2 s)"),
        "{md}"
    );
    assert!(
        md.contains("### `safety::snapshot_pattern_grammar`"),
        "{md}"
    );
    assert!(
        md.contains("| pattern '..' (harm: destroys every snapshot of the pool) | `incus_instance_update` | incus.write | invalid_input | invalid_input | nothing | passed |"),
        "{md}"
    );
    assert!(
        md.contains("an unnamed snapshot is named \"snap0\""),
        "{md}"
    );
    assert!(
        md.contains("- Verified: instance values1 reads as before"),
        "{md}"
    );
}

#[test]
fn a_refused_input_the_core_sent_on_fails_the_run_and_shows_the_blocked_request() {
    let report = with_safety(Outcome::Failed);
    assert!(!report.passed(), "a failed refusal fails the run");
    let md = report.to_markdown();
    assert!(md.contains("0/1 refused before any change"), "{md}");
    assert!(
        md.contains("PATCH /1.0/instances/values1?project=p (blocked by the relay)"),
        "{md}"
    );
    let mut errors = with_safety(Outcome::Passed);
    if let Some(safety) = errors.safety_values.as_mut() {
        safety
            .errors
            .push("teardown: deleting values1: busy".into());
    }
    assert!(!errors.passed(), "an error around the cases fails the run");
}

#[test]
fn control_characters_of_refused_values_are_escaped_in_the_markdown() {
    let mut report = with_safety(Outcome::Passed);
    if let Some(safety) = report.safety_values.as_mut() {
        safety.rules[0].refused[0].label = "user.\u{0}x='1'".into();
    }
    let md = report.to_markdown();
    assert!(!md.contains('\u{0}'), "no raw control character");
    assert!(md.contains("user.\\u{0}x='1'"), "{md}");
}
