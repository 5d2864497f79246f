//! Every fault type, scripted per rule, and the journal that proves what was sent and applied.

use crate::common;

use common::{unix, unix_raw, wait, ClientCert, Https};
use fake_incus::{assert_native_error, Answer, FakeIncus, Fault, Rule, Which};
use serde_json::json;
use std::time::{Duration, Instant};

fn create_body(name: &str) -> serde_json::Value {
    json!({"name": name, "source": {"type": "image", "alias": "busybox"}})
}

async fn fake() -> FakeIncus {
    crate::common::builder().https(true).start().await.unwrap()
}

async fn instance_exists(fake: &FakeIncus, name: &str) -> bool {
    unix(fake, "GET", &format!("/1.0/instances/{name}"), None)
        .await
        .status()
        == 200
}

#[tokio::test]
async fn fault_delay_answers_normally_after_the_delay() {
    let fake = fake().await;
    let _rule = fake.add_rule(Rule::new("GET", "/1.0").fault(Fault::Delay { ms: 300 }));
    let started = Instant::now();
    let reply = unix(&fake, "GET", "/1.0", None).await;
    assert_eq!(reply.status(), 200);
    assert!(started.elapsed() >= Duration::from_millis(300));
}

#[tokio::test]
async fn fault_native_error_is_an_incus_error_envelope_and_applies_nothing() {
    let fake = fake().await;
    let _rule = fake.add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::Error {
        status: 503,
        message: "busy".into(),
    }));
    let reply = unix(&fake, "POST", "/1.0/instances", Some(create_body("c1"))).await;
    assert_eq!(reply.status(), 503);
    assert_native_error(&reply, 503, "busy");
    common::assert_envelope(reply.json());
    let entry = fake.journal().into_iter().last().unwrap();
    assert!(!entry.applied);
    assert_eq!(
        entry.answer,
        Answer::Fault {
            fault: "error".into(),
            code: Some(503)
        }
    );
    assert!(!instance_exists(&fake, "c1").await);
}

#[tokio::test]
async fn fault_close_before_apply_drops_the_connection_and_changes_nothing() {
    let fake = fake().await;
    let _rule = fake.add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::CloseBeforeApply));
    let result = unix_raw(&fake, "POST", "/1.0/instances", Some(create_body("c1"))).await;
    assert!(result.is_err(), "no answer: {result:?}");
    assert!(!instance_exists(&fake, "c1").await);
    let post = fake.requests("POST", "/**");
    assert_eq!(post.len(), 1, "sent exactly once");
    assert!(!post[0].applied);
    assert_eq!(post[0].body, create_body("c1").to_string());
}

#[tokio::test]
async fn fault_close_after_apply_drops_the_connection_but_the_change_happens() {
    let fake = fake().await;
    let _rule = fake.add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::CloseAfterApply));
    assert!(
        unix_raw(&fake, "POST", "/1.0/instances", Some(create_body("c1")))
            .await
            .is_err()
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while !instance_exists(&fake, "c1").await {
        assert!(Instant::now() < deadline, "the creation was applied");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let post = fake.requests("POST", "/**").remove(0);
    assert!(post.applied);
    assert_eq!(
        post.answer,
        Answer::Fault {
            fault: "close_after_apply".into(),
            code: None
        }
    );
}

#[tokio::test]
async fn fault_stall_never_answers() {
    let fake = fake().await;
    let _rule = fake.add_rule(Rule::new("GET", "/1.0/instances").fault(Fault::Stall));
    let result = tokio::time::timeout(
        Duration::from_millis(300),
        unix_raw(&fake, "GET", "/1.0/instances", None),
    )
    .await;
    assert!(result.is_err(), "the client gives up first");
    assert_eq!(
        fake.journal()[0].answer,
        Answer::Fault {
            fault: "stall".into(),
            code: None
        }
    );
}

#[tokio::test]
async fn fault_garbage_body_is_not_json() {
    let fake = fake().await;
    let _rule = fake.add_rule(Rule::new("GET", "/1.0").fault(Fault::GarbageBody));
    let reply = unix_raw(&fake, "GET", "/1.0", None).await.unwrap();
    assert_eq!(reply.status(), 200);
    assert!(serde_json::from_slice::<serde_json::Value>(reply.bytes()).is_err());
}

#[tokio::test]
async fn fault_truncated_body_cuts_the_connection_mid_body() {
    let fake = fake().await;
    let _rule = fake.add_rule(Rule::new("GET", "/1.0").fault(Fault::TruncatedBody));
    let result = unix_raw(&fake, "GET", "/1.0", None).await;
    assert!(result.is_err(), "reading the body fails: {result:?}");
}

#[tokio::test]
async fn fault_dribble_sends_the_whole_body_slowly() {
    let fake = fake().await;
    let _rule = fake.add_rule(Rule::new("GET", "/1.0/instances").fault(Fault::Dribble {
        chunk_bytes: 10,
        interval_ms: 20,
    }));
    let started = Instant::now();
    let reply = unix_raw(&fake, "GET", "/1.0/instances", None)
        .await
        .unwrap();
    assert_eq!(reply.json()["metadata"], json!([]));
    assert!(
        started.elapsed() >= Duration::from_millis(20 * 9),
        "about 10 chunks with pauses"
    );
}

#[tokio::test]
async fn fault_reset_aborts_the_https_connection() {
    let fake = fake().await;
    let _rule = fake.add_rule(Rule::new("GET", "/1.0/instances").fault(Fault::Reset));
    let client = Https::new(&fake, ClientCert::Trusted, false);
    let mut connection = fake_incus::client::Connection::over(client.connect().await)
        .await
        .unwrap();
    let request = fake_incus::Request::get("/1.0/instances").header("host", "127.0.0.1");
    assert!(connection.send(request).await.is_err());
    assert!(
        unix_raw(&fake, "GET", "/1.0/instances", None)
            .await
            .is_err(),
        "on the Unix socket a reset is a close"
    );
}

#[tokio::test]
async fn fault_rules_select_nth_first_and_every_in_install_order() {
    let fake = fake().await;
    let _nth = fake.add_rule(
        Rule::new("GET", "/1.0/instances")
            .nth(2)
            .fault(Fault::Error {
                status: 500,
                message: "second".into(),
            }),
    );
    let _first = fake.add_rule(Rule::new("*", "/1.0/**").first(3).fault(Fault::Error {
        status: 502,
        message: "first".into(),
    }));
    let statuses = [
        unix(&fake, "GET", "/1.0/instances", None).await.status(),
        unix(&fake, "GET", "/1.0/instances", None).await.status(),
        unix(&fake, "GET", "/1.0/instances", None).await.status(),
        unix(&fake, "GET", "/1.0/instances", None).await.status(),
    ];
    assert_eq!(statuses, [502, 500, 502, 200]);
    drop(_nth);
    drop(_first);
    assert_eq!(
        unix(&fake, "GET", "/1.0/instances", None).await.status(),
        200,
        "guards removed the rules"
    );
    let kept = fake.add_rule(Rule::new("GET", "/1.0/profiles").fault(Fault::Error {
        status: 500,
        message: "x".into(),
    }));
    kept.expect("a valid rule").forget();
    assert_eq!(
        unix(&fake, "GET", "/1.0/profiles", None).await.status(),
        500
    );
    fake.clear_rules();
    assert_eq!(
        unix(&fake, "GET", "/1.0/profiles", None).await.status(),
        200
    );
}

#[tokio::test]
async fn fault_rules_round_trip_through_the_json_rule_format() {
    let text = r#"[
        {"method": "POST", "path": "/1.0/instances", "which": {"nth": 2}, "fault": {"kind": "close_after_apply"}},
        {"path": "/1.0/operations/*/wait", "fault": {"kind": "delay", "ms": 100}},
        {"path": "/1.0/instances/*/exec", "which": {"first": 1}, "fault": {"kind": "exec_drop_websocket", "fd": "control"}}
    ]"#;
    let rules: Vec<Rule> = serde_json::from_str(text).unwrap();
    assert_eq!(rules[0].which(), Which::Nth(2));
    assert_eq!(rules[1].method(), None);
    assert_eq!(
        rules[2].faults(),
        [Fault::ExecDropWebsocket {
            fd: "control".into()
        }]
    );
    let again: Vec<Rule> = serde_json::from_value(serde_json::to_value(&rules).unwrap()).unwrap();
    assert_eq!(again, rules);
    assert!(
        serde_json::from_str::<Rule>(r#"{"path": "/x", "fault": {"kind": "explode"}}"#).is_err()
    );
    let bad = crate::common::builder()
        .rule(Rule::new("GET", "/x").nth(0).fault(Fault::Stall))
        .start()
        .await
        .unwrap_err();
    assert!(matches!(bad, fake_incus::Error::Rule(_)));
}

#[tokio::test]
async fn fault_operation_duration_fail_and_never_finish() {
    let fake = fake().await;
    let rule = fake
        .add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::OperationDuration { ms: 300 }));
    let started = Instant::now();
    let done = wait(
        &fake,
        &unix(&fake, "POST", "/1.0/instances", Some(create_body("c1"))).await,
    )
    .await;
    assert_eq!(done.json()["type"], "sync");
    assert!(started.elapsed() >= Duration::from_millis(300));
    drop(rule);
    let rule = fake.add_rule(
        Rule::new("POST", "/1.0/instances").fault(Fault::OperationFail {
            message: "disk full".into(),
        }),
    );
    let done = wait(
        &fake,
        &unix(&fake, "POST", "/1.0/instances", Some(create_body("c2"))).await,
    )
    .await;
    assert_eq!(done.json()["error"], "disk full");
    assert!(
        !instance_exists(&fake, "c2").await,
        "a failed operation applies nothing"
    );
    drop(rule);
    let _rule =
        fake.add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::OperationNeverFinish));
    let reply = unix(&fake, "POST", "/1.0/instances", Some(create_body("c3"))).await;
    let url = reply.json()["operation"].as_str().unwrap();
    let waited = unix(&fake, "GET", &format!("{url}/wait?timeout=1"), None).await;
    assert_eq!(waited.json()["error"], "context deadline exceeded");
    assert_eq!(
        unix(&fake, "GET", url, None).await.metadata()["status"],
        "Running"
    );
}

#[tokio::test]
async fn fault_operation_cancellable_can_be_cancelled_and_not_cancellable_cannot() {
    let fake = fake().await;
    let rule =
        fake.add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::OperationCancellable));
    let reply = unix(&fake, "POST", "/1.0/instances", Some(create_body("c1"))).await;
    assert_eq!(reply.metadata()["may_cancel"], true);
    let url = reply.json()["operation"].as_str().unwrap();
    let cancel = unix(&fake, "DELETE", url, None).await;
    assert_eq!((cancel.status(), cancel.metadata()), (200, &json!({})));
    let op = unix(&fake, "GET", url, None).await;
    assert_eq!(
        (
            op.metadata()["status"].as_str(),
            op.metadata()["status_code"].as_u64()
        ),
        (Some("Cancelled"), Some(401))
    );
    assert_eq!(op.metadata()["err"], "");
    let waited = unix(&fake, "GET", &format!("{url}/wait"), None).await;
    assert_eq!(
        waited.json()["type"],
        "sync",
        "a cancelled operation waits like a success"
    );
    assert!(!instance_exists(&fake, "c1").await);
    drop(rule);
    let _rule =
        fake.add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::OperationNotCancellable));
    let reply = unix(&fake, "POST", "/1.0/instances", Some(create_body("c2"))).await;
    assert_eq!(reply.metadata()["may_cancel"], false);
}

#[tokio::test]
async fn fault_operation_finish_during_wait_finishes_only_once_waited() {
    let fake = fake().await;
    let _rule =
        fake.add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::OperationFinishDuringWait));
    let reply = unix(&fake, "POST", "/1.0/instances", Some(create_body("c1"))).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let url = reply.json()["operation"].as_str().unwrap().to_string();
    assert_eq!(
        unix(&fake, "GET", &url, None).await.metadata()["status"],
        "Running"
    );
    let done = unix(&fake, "GET", &format!("{url}/wait?timeout=5"), None).await;
    assert_eq!(done.metadata()["status"], "Success");
    assert!(instance_exists(&fake, "c1").await);
}

#[tokio::test]
async fn journal_records_every_request_in_arrival_order() {
    let fake = fake().await;
    unix(&fake, "GET", "/1.0", None).await;
    common::unix_with(
        &fake,
        "PATCH",
        "/1.0/instances/nope?project=default",
        Some(json!({})),
        &[("if-match", "\"x\"")],
    )
    .await;
    let entries = fake.journal();
    assert_eq!(entries.len(), 2);
    assert_eq!((entries[0].seq, entries[1].seq), (1, 2));
    assert_eq!(entries[1].method, "PATCH");
    assert_eq!(entries[1].path, "/1.0/instances/nope");
    assert_eq!(entries[1].query.as_deref(), Some("project=default"));
    assert_eq!(entries[1].if_match.as_deref(), Some("\"x\""));
    assert_eq!(entries[1].content_type.as_deref(), Some("application/json"));
    assert_eq!(entries[1].answer, Answer::Status { code: 404 });
    assert_eq!(entries[1].listener, fake_incus::Listener::Unix);
    fake.clear_journal();
    unix(&fake, "GET", "/1.0", None).await;
    assert_eq!(
        fake.journal()[0].seq,
        3,
        "numbers keep counting after a clear"
    );
}

#[tokio::test]
async fn fault_respond_answers_with_the_chosen_status_headers_and_body() {
    let fake = fake().await;
    let _rule = fake.add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::Respond {
        status: 418,
        headers: [("x-fake".to_string(), "teapot".to_string())].into(),
        body: "{\"short\": true}".into(),
        apply: false,
    }));
    let reply = unix(&fake, "POST", "/1.0/instances", Some(create_body("r1"))).await;
    assert_eq!(reply.status(), 418);
    assert_eq!(reply.header("x-fake"), Some("teapot"));
    assert_eq!(reply.json(), &json!({"short": true}));
    assert!(!instance_exists(&fake, "r1").await, "nothing applied");
    let entry = fake.requests("POST", "/1.0/instances").pop().unwrap();
    assert!(!entry.applied);
    assert_eq!(entry.faults, ["respond"]);
}

#[tokio::test]
async fn one_rule_can_delay_a_request_and_fail_its_operation() {
    let fake = fake().await;
    let _rule = fake.add_rule(Rule::new("POST", "/1.0/instances").faults([
        Fault::Delay { ms: 200 },
        Fault::OperationFail {
            message: "disk full".into(),
        },
    ]));
    let started = Instant::now();
    let accepted = unix(&fake, "POST", "/1.0/instances", Some(create_body("d1"))).await;
    assert!(started.elapsed() >= Duration::from_millis(200));
    assert_eq!(accepted.status(), 202);
    let done = wait(&fake, &accepted).await;
    assert_eq!(done.json()["error"], "disk full");
    let entry = fake.requests("POST", "/1.0/instances").pop().unwrap();
    assert_eq!(entry.faults, ["delay", "operation_fail"]);
}

#[tokio::test]
async fn rules_that_can_never_fire_are_refused_by_add_rule_the_builder_and_the_control_socket() {
    let fake = fake().await;
    let err = fake
        .add_rule(
            Rule::new("GET", "/1.0/instances")
                .first(0)
                .fault(Fault::Stall),
        )
        .unwrap_err();
    assert_eq!(err.to_string(), "first counts from 1; 0 selects no request");
    let err = fake
        .add_rule(Rule::new("GET", "/1.0/instances?recursion=1").fault(Fault::Stall))
        .unwrap_err();
    assert!(err.to_string().contains("query"), "{err}");
    assert!(fake.rules().is_empty(), "nothing was installed");
    let dir = tempfile::tempdir().unwrap();
    let control = dir.path().join("control.socket");
    fake.serve_control(&control).unwrap();
    let refused = common::unix_at(
        &control,
        "POST",
        "/rules",
        Some(json!({"path": "/x", "which": {"first": 0}, "fault": {"kind": "stall"}})),
        &[],
    )
    .await;
    assert_eq!(refused.status(), 400);
    assert!(
        refused.json()["error"]
            .as_str()
            .is_some_and(|e| e.contains("first counts from 1")),
        "{}",
        refused.json()
    );
}

#[tokio::test]
async fn reset_keeps_the_rules_and_clears_state_operations_and_journal() {
    let fake = fake().await;
    let _rule = fake.add_rule(Rule::new("GET", "/1.0/networks").fault(Fault::Error {
        status: 503,
        message: "down".into(),
    }));
    unix(&fake, "POST", "/1.0/instances", Some(create_body("k1"))).await;
    fake.reset();
    assert!(fake.journal().is_empty());
    assert_eq!(fake.rules().len(), 1, "rules are kept");
    assert_eq!(
        unix(&fake, "GET", "/1.0/networks", None).await.status(),
        503
    );
    assert!(!instance_exists(&fake, "k1").await);
}

#[tokio::test]
async fn the_journal_limit_keeps_the_last_entries_and_expectations_count_them_all() {
    let fake = crate::common::builder()
        .journal_limit(2)
        .start()
        .await
        .unwrap();
    let three = fake.expect("GET", "/1.0/*", 3);
    for path in ["/1.0/networks", "/1.0/profiles", "/1.0/projects"] {
        unix(&fake, "GET", path, None).await;
    }
    let page = fake.journal_page(0);
    assert_eq!(page.dropped, 1);
    assert_eq!(page.entries.len(), 2);
    assert_eq!(fake.journal_page(page.last_seq - 1).entries.len(), 1);
    assert_eq!(three.finish(), Ok(()));
}
