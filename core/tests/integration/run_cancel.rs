//! `incus_operation_cancel`: read first, then at most one DELETE.
//!
//! Client evidence exercised through `run`: GetOperation, DeleteOperation.
use crate::run_support;

use fake_incus::{Fault, Rule};
use run_support::{kind, Bench};
use serde_json::{json, Value};

async fn operation(bench: &Bench, fault: Option<Fault>) -> String {
    let _rule = fault.map(|fault| {
        bench
            .fake
            .add_rule(Rule::new("POST", "/1.0/instances").fault(fault))
    });
    let result = bench
        .call("incus_instance_create", json!({"name": format!("i{}", bench.fake.journal().len()), "source": {"type": "image", "alias": "busybox"}, "wait_seconds": 0}))
        .await;
    result["operation_id"]
        .as_str()
        .expect("operation id")
        .to_owned()
}

fn deletes(bench: &Bench, id: &str) -> usize {
    bench.count("DELETE", &format!("/1.0/operations/{id}"))
}

#[tokio::test]
async fn cancel_of_a_finished_operation_is_already_final() {
    let bench = Bench::start().await;
    let id = operation(&bench, None).await;
    bench
        .call("incus_operation_wait", json!({"operation_id": id}))
        .await;
    let result = bench
        .call("incus_operation_cancel", json!({"operation_id": id}))
        .await;
    assert_eq!(result["status"], "already_final", "{result}");
    assert_eq!(result["operation_id"], id.as_str());
    assert_eq!(result["operation"]["status"], "Success");
    assert_eq!(deletes(&bench, &id), 0);
}

#[tokio::test]
async fn cancel_of_an_operation_that_cannot_be_cancelled_is_unsupported() {
    let bench = Bench::start().await;
    let id = operation(&bench, Some(Fault::OperationNeverFinish)).await;
    let result = bench
        .call("incus_operation_cancel", json!({"operation_id": id}))
        .await;
    assert_eq!(result["status"], "unsupported", "{result}");
    assert_eq!(result["operation"]["may_cancel"], false);
    assert_eq!(deletes(&bench, &id), 0);
}

#[tokio::test]
async fn cancel_sends_one_delete_and_reports_requested() {
    let bench = Bench::start().await;
    let id = operation(&bench, Some(Fault::OperationCancellable)).await;
    let result = bench
        .call("incus_operation_cancel", json!({"operation_id": id}))
        .await;
    assert_eq!(result["status"], "requested", "{result}");
    assert_eq!(
        result["operation"]["status"], "Running",
        "the operation read first"
    );
    assert_eq!(deletes(&bench, &id), 1);
    let after = bench
        .call("incus_operation_get", json!({"operation_id": id}))
        .await;
    assert_eq!(after["item"]["status"], "Cancelled", "{after}");
}

#[tokio::test]
async fn cancel_without_a_decoded_answer_is_uncertain_and_not_resent() {
    let bench = Bench::start().await;
    let id = operation(&bench, Some(Fault::OperationCancellable)).await;
    let _rule = bench
        .fake
        .add_rule(Rule::new("DELETE", "/1.0/operations/*").fault(Fault::CloseAfterApply));
    let result = bench
        .call("incus_operation_cancel", json!({"operation_id": id}))
        .await;
    assert_eq!(result["status"], "uncertain", "{result}");
    let reason = result["reason"].as_str().unwrap_or_default();
    assert!(reason.starts_with("transport error"), "{result}");
    assert_eq!(deletes(&bench, &id), 1);
}

#[tokio::test]
async fn cancel_of_an_unknown_operation_is_a_native_404() {
    let bench = Bench::start().await;
    let result = bench
        .call(
            "incus_operation_cancel",
            json!({"operation_id": "00000000-0000-4000-8000-000000000000"}),
        )
        .await;
    assert_eq!(kind(&result), "native", "{result}");
    assert_eq!(result["error"]["http_status"], 404);
    assert_eq!(result["error"]["operation_id"], Value::Null);
}
