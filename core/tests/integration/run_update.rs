//! `incus_instance_update`: a conditional PATCH of only the given fields, with the ETag from the
//! input or read first.
//!
//! Client evidence exercised through `run`: PatchInstance, GetInstance.
use crate::run_support;

use fake_incus::{Fault, Rule};
use run_support::{kind, Bench};
use serde_json::{json, Value};

#[tokio::test]
async fn update_reads_the_etag_first_when_none_is_given() {
    let bench = Bench::start().await;
    bench.instance("web").await;
    let before = bench
        .call("incus_instance_get", json!({"name": "web"}))
        .await;
    let etag = before["etag"].as_str().unwrap().to_owned();
    bench.fake.clear_journal();
    let result = bench
        .call(
            "incus_instance_update",
            json!({"name": "web", "config": {"limits.cpu": "2"}}),
        )
        .await;
    assert_eq!(
        result,
        json!({"status": "completed", "etag_source": "read", "etag": etag})
    );
    let requests = bench.requests();
    let methods: Vec<(&str, &str)> = requests
        .iter()
        .map(|e| (e.method.as_str(), e.path.as_str()))
        .collect();
    assert_eq!(
        methods,
        [
            ("GET", "/1.0/instances/web"),
            ("PATCH", "/1.0/instances/web")
        ]
    );
    let patch = &requests[1];
    assert_eq!(
        patch.if_match.as_deref().map(|m| m.trim_matches('"')),
        Some(etag.trim_matches('"'))
    );
    let body: Value = serde_json::from_str(&patch.body).unwrap();
    assert_eq!(
        body,
        json!({"config": {"limits.cpu": "2"}}),
        "only the given fields"
    );
    let after = bench
        .call("incus_instance_get", json!({"name": "web"}))
        .await;
    assert_eq!(after["item"]["config"]["limits.cpu"], "2");
}

#[tokio::test]
async fn update_uses_the_given_etag_and_a_stale_one_is_a_native_412() {
    let bench = Bench::start().await;
    bench.instance("web").await;
    let etag = bench
        .call("incus_instance_get", json!({"name": "web"}))
        .await["etag"]
        .as_str()
        .unwrap()
        .to_owned();
    let result = bench
        .call(
            "incus_instance_update",
            json!({"name": "web", "etag": etag, "profiles": ["default"], "description": "web"}),
        )
        .await;
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result["etag_source"], "input");
    assert_eq!(result["etag"], etag.as_str());
    let changed = bench
        .call(
            "incus_instance_update",
            json!({"name": "web", "config": {"user.x": "1"}}),
        )
        .await;
    assert_eq!(changed["status"], "completed", "{changed}");
    let patches_before = bench.count("PATCH", "/1.0/instances/web");
    let stale = bench
        .call(
            "incus_instance_update",
            json!({"name": "web", "etag": etag, "config": {"user.y": "1"}}),
        )
        .await;
    assert_eq!(kind(&stale), "native", "{stale}");
    assert_eq!(stale["error"]["http_status"], 412, "{stale}");
    assert_eq!(
        bench.count("PATCH", "/1.0/instances/web"),
        patches_before + 1
    );
    let after = bench
        .call("incus_instance_get", json!({"name": "web"}))
        .await;
    assert!(after["item"]["config"].get("user.y").is_none());
}

#[tokio::test]
async fn update_of_a_missing_instance_is_a_native_404_without_a_patch() {
    let bench = Bench::start().await;
    let result = bench
        .call(
            "incus_instance_update",
            json!({"name": "nope", "description": "x"}),
        )
        .await;
    assert_eq!(kind(&result), "native", "{result}");
    assert_eq!(result["error"]["http_status"], 404);
    assert_eq!(bench.count("PATCH", "/1.0/instances/nope"), 0);
}

#[tokio::test]
async fn update_without_a_decoded_answer_is_uncertain_and_not_resent() {
    let bench = Bench::start().await;
    bench.instance("web").await;
    let _rule = bench
        .fake
        .add_rule(Rule::new("PATCH", "/1.0/instances/web").fault(Fault::CloseAfterApply));
    let result = bench
        .call(
            "incus_instance_update",
            json!({"name": "web", "description": "new"}),
        )
        .await;
    assert_eq!(result["status"], "uncertain", "{result}");
    assert_eq!(result["etag_source"], "read");
    // The reason, as mutations carry theirs in wait_error.
    let reason = result["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("transport error"), "{result}");
    assert_eq!(bench.count("PATCH", "/1.0/instances/web"), 1);
}

#[tokio::test]
async fn update_refuses_input_without_writable_fields() {
    let bench = Bench::start().await;
    let result = bench
        .call("incus_instance_update", json!({"name": "web"}))
        .await;
    assert_eq!(kind(&result), "invalid_input", "{result}");
    assert!(bench.fake.journal().is_empty());
}
