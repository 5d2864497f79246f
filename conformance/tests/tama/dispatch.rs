//! The reference dispatcher's execution semantics, one test per sentence of the profile.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::support::spec_example;
use incus_conformance::tama::{
    Caller, Dex, DexError, Executor, ExecutorFuture, InstallError, Outcome,
};
use serde_json::{json, Value};

const DELETE: &str = "incus_image_delete";

fn caller() -> Caller {
    Caller::with_scopes(["incus.delete"])
}

fn good_input() -> Value {
    json!({"fingerprint": "abc123", "confirm": "abc123"})
}

/// An executor that counts calls and returns a fixed answer.
fn counting(calls: &Arc<AtomicUsize>, answer: Result<Value, Value>) -> impl Executor {
    let calls = Arc::clone(calls);
    move |_id: String, _input: Value| {
        calls.fetch_add(1, Ordering::SeqCst);
        let answer = answer.clone();
        async move { answer }
    }
}

fn dex_with(answer: Result<Value, Value>) -> (Dex, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let mut dex = Dex::new();
    dex.install(spec_example(), counting(&calls, answer))
        .expect("the example installs");
    (dex, calls)
}

fn ok_result() -> Result<Value, Value> {
    Ok(json!({"operation_id": "op-1", "status": "completed"}))
}

/// A second document with its own source and one operation.
fn other_source(source: &str, operation_id: &str) -> Value {
    let mut document = spec_example();
    document["x-tama-source"] = json!(source);
    document["paths"] = json!({ format!("/operations/{operation_id}"): crate::support::operation_named(operation_id) });
    document
}

#[test]
fn install_refuses_an_invalid_document_with_the_validators_errors() {
    let mut document = spec_example();
    document["openapi"] = json!("3.0.3");
    let mut dex = Dex::new();
    let error = dex
        .install(document.clone(), counting(&Arc::default(), ok_result()))
        .unwrap_err();
    let InstallError::Invalid { violations } = error else {
        panic!("expected Invalid, got {error:?}");
    };
    assert_eq!(
        violations,
        incus_conformance::tama::validate(&document).into_violations()
    );
    assert!(
        dex.search("", &caller()).is_empty(),
        "nothing was installed"
    );
}

#[tokio::test]
async fn documents_are_addressed_by_source_id_and_reinstalling_a_source_replaces_it() {
    let (mut dex, first_calls) = dex_with(ok_result());
    let second_calls = Arc::new(AtomicUsize::new(0));
    dex.install(spec_example(), counting(&second_calls, ok_result()))
        .expect("same source reinstalls");
    dex.execute(DELETE, good_input(), &caller())
        .await
        .expect("runs");
    assert_eq!(first_calls.load(Ordering::SeqCst), 0);
    assert_eq!(second_calls.load(Ordering::SeqCst), 1);
    assert!(dex.remove("opsmaru_incus"));
    assert!(!dex.remove("opsmaru_incus"));
    assert!(dex.search("", &caller()).is_empty());
}

#[test]
fn operation_id_must_be_unique_within_the_cassette() {
    let (mut dex, _) = dex_with(ok_result());
    let clash = other_source("macus", DELETE);
    let error = dex
        .install(clash, counting(&Arc::default(), ok_result()))
        .unwrap_err();
    assert_eq!(
        error,
        InstallError::DuplicateOperation {
            operation_id: DELETE.into(),
            source_id: "opsmaru_incus".into()
        }
    );
    assert_eq!(dex.search("", &caller()).len(), 1, "nothing changed");
    dex.install(
        other_source("macus", "macus_start"),
        counting(&Arc::default(), ok_result()),
    )
    .expect("a distinct operation ID installs beside it");
    assert_eq!(dex.search("", &caller()).len(), 2);
}

#[test]
fn the_same_operation_id_may_appear_in_other_cassettes() {
    let (_one, _) = dex_with(ok_result());
    let mut two = Dex::new();
    two.install(
        other_source("macus", DELETE),
        counting(&Arc::default(), ok_result()),
    )
    .expect("another cassette may hold the same operation ID");
}

#[test]
fn search_hides_operations_the_caller_cannot_run() {
    let (dex, _) = dex_with(ok_result());
    assert_eq!(dex.search("image", &caller()).len(), 1);
    assert!(dex
        .search("image", &Caller::with_scopes(["incus.read"]))
        .is_empty());
    assert!(dex.search("", &Caller::default()).is_empty());
    assert!(dex.describe(DELETE, &Caller::default()).is_none());
}

#[test]
fn search_matches_every_term_in_id_summary_description_or_tags() {
    let (dex, _) = dex_with(ok_result());
    assert_eq!(dex.search("DELETE fingerprint", &caller()).len(), 1);
    assert!(dex.search("delete snapshot", &caller()).is_empty());
}

#[test]
fn deprecated_operations_stay_indexed_and_are_marked_in_results() {
    let mut document = spec_example();
    document["paths"]["/operations/incus_image_delete"]["post"]["deprecated"] = json!(true);
    let mut dex = Dex::new();
    dex.install(document, counting(&Arc::default(), ok_result()))
        .expect("installs");
    let hits = dex.search("image", &caller());
    assert_eq!(hits.len(), 1);
    assert!(hits[0].deprecated);
    let (fresh, _) = dex_with(ok_result());
    assert!(!fresh.search("image", &caller())[0].deprecated);
}

#[test]
fn bounds_are_informational_returned_in_results() {
    let (dex, _) = dex_with(ok_result());
    let hit = &dex.search("", &caller())[0];
    assert_eq!(hit.bounds["max_wait_seconds"], json!(60));
    assert!(hit.destructive);
    assert_eq!(hit.source, "opsmaru_incus");
}

#[test]
fn other_extensions_are_returned_with_full_operation_detail() {
    let (dex, _) = dex_with(ok_result());
    let detail = dex.describe(DELETE, &caller()).expect("visible");
    assert_eq!(
        detail["x-opsmaru-requires"],
        json!(["DeleteImage", "GetOperationWait"])
    );
}

#[tokio::test]
async fn input_is_validated_before_dispatch() {
    let (dex, calls) = dex_with(ok_result());
    let input = json!({"fingerprint": 7, "confirm": "abc"});
    let error = dex.execute(DELETE, input, &caller()).await.unwrap_err();
    assert_eq!(error.kind(), "invalid_input");
    assert!(!error.dispatched());
    let DexError::InvalidInput { errors, .. } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(errors[0].pointer, "/fingerprint");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "the executor was not called"
    );
}

#[tokio::test]
async fn scopes_are_checked_against_the_callers_verified_scopes_on_every_execute() {
    let (dex, calls) = dex_with(ok_result());
    let error = dex
        .execute(DELETE, good_input(), &Caller::with_scopes(["incus.read"]))
        .await
        .unwrap_err();
    assert_eq!(
        error,
        DexError::ScopeMissing {
            operation_id: DELETE.into(),
            missing: vec!["incus.delete".into()]
        }
    );
    assert!(!error.dispatched());
    dex.execute(DELETE, good_input(), &caller())
        .await
        .expect("the scoped caller runs it");
    assert!(dex
        .execute(DELETE, good_input(), &Caller::default())
        .await
        .is_err());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_call_whose_confirmation_field_is_missing_or_empty_is_rejected() {
    let (dex, calls) = dex_with(ok_result());
    for input in [
        json!({"fingerprint": "abc"}),
        json!({"fingerprint": "abc", "confirm": ""}),
    ] {
        let error = dex.execute(DELETE, input, &caller()).await.unwrap_err();
        assert_eq!(
            error,
            DexError::ConfirmationRequired {
                operation_id: DELETE.into(),
                field: "confirm".into()
            }
        );
        assert!(!error.dispatched());
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn the_producers_executor_still_checks_the_confirmation_value_itself() {
    let mut dex = Dex::new();
    let executor = |_id: String, input: Value| async move {
        if input["confirm"] == input["fingerprint"] {
            Ok(json!({"operation_id": "op-1", "status": "completed"}))
        } else {
            Err(json!({"error": "confirmation_mismatch"}))
        }
    };
    dex.install(spec_example(), executor).expect("installs");
    let near_miss = json!({"fingerprint": "abc123", "confirm": "abc12"});
    let outcome = dex
        .execute(DELETE, near_miss, &caller())
        .await
        .expect("dispatched");
    assert_eq!(
        outcome,
        Outcome::Error(json!({"error": "confirmation_mismatch"}))
    );
}

#[tokio::test]
async fn an_ok_result_must_match_the_200_schema() {
    let (dex, _) = dex_with(ok_result());
    let outcome = dex
        .execute(DELETE, good_input(), &caller())
        .await
        .expect("valid");
    assert_eq!(outcome, Outcome::Ok(ok_result().unwrap()));

    let (dex, calls) = dex_with(Ok(json!({"status": "completed"})));
    let error = dex
        .execute(DELETE, good_input(), &caller())
        .await
        .unwrap_err();
    assert_eq!(error.kind(), "invalid_output");
    assert!(
        error.dispatched(),
        "invalid_output means the operation may have taken effect"
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn an_error_must_match_default_when_one_is_declared() {
    let (dex, _) = dex_with(Err(json!({"error": "not_found"})));
    let outcome = dex
        .execute(DELETE, good_input(), &caller())
        .await
        .expect("valid error");
    assert_eq!(outcome, Outcome::Error(json!({"error": "not_found"})));

    let (dex, _) = dex_with(Err(json!({"reason": "not_found"})));
    let error = dex
        .execute(DELETE, good_input(), &caller())
        .await
        .unwrap_err();
    let DexError::InvalidOutput { returned, .. } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(*returned, "error");
    assert!(error.dispatched());
}

#[tokio::test]
async fn an_error_is_returned_unchecked_when_no_default_is_declared() {
    let mut document = spec_example();
    let responses = &mut document["paths"]["/operations/incus_image_delete"]["post"]["responses"];
    responses
        .as_object_mut()
        .expect("responses")
        .remove("default");
    let mut dex = Dex::new();
    let answer = Err(json!(["anything", 1]));
    dex.install(document, counting(&Arc::default(), answer.clone()))
        .expect("installs");
    let outcome = dex
        .execute(DELETE, good_input(), &caller())
        .await
        .expect("passed through");
    assert_eq!(outcome, Outcome::Error(json!(["anything", 1])));
}

#[tokio::test]
async fn invalid_output_copies_identity_string_integer_or_boolean_values_of_at_most_256_bytes() {
    let mut document = spec_example();
    let post = &mut document["paths"]["/operations/incus_image_delete"]["post"];
    let properties =
        &mut post["responses"]["200"]["content"]["application/json"]["schema"]["properties"];
    for name in ["attempt", "done", "ratio", "nested", "long"] {
        properties[name] = json!({});
    }
    post["x-tama-identity"] = json!([
        "operation_id",
        "status",
        "attempt",
        "done",
        "ratio",
        "nested",
        "long"
    ]);
    let result = json!({
        "operation_id": "op-1", "status": 42, "attempt": 3, "done": false,
        "ratio": 0.5, "nested": {"a": 1}, "long": "x".repeat(257)
    });
    let mut dex = Dex::new();
    dex.install(document, counting(&Arc::default(), Ok(result)))
        .expect("installs");
    let error = dex
        .execute(DELETE, good_input(), &caller())
        .await
        .unwrap_err();
    let DexError::InvalidOutput { identity, .. } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(
        Value::Object(identity.clone()),
        json!({"operation_id": "op-1", "status": 42, "attempt": 3, "done": false})
    );
    assert_eq!(error.to_json()["identity"]["operation_id"], "op-1");
}

#[tokio::test]
async fn a_string_identity_value_of_exactly_256_bytes_is_copied() {
    let value = "é".repeat(128);
    assert_eq!(value.len(), 256);
    let (dex, _) = dex_with(Ok(json!({"operation_id": value, "status": 1})));
    let error = dex
        .execute(DELETE, good_input(), &caller())
        .await
        .unwrap_err();
    let DexError::InvalidOutput { identity, .. } = error else {
        panic!("{error:?}");
    };
    assert_eq!(identity["operation_id"], json!(value));
}

struct Panicking {
    when_called: bool,
}

impl Executor for Panicking {
    fn execute(&self, _operation_id: &str, _input: Value) -> ExecutorFuture {
        assert!(!self.when_called, "boom while called");
        Box::pin(async { panic!("boom while running") })
    }
}

#[tokio::test]
async fn a_panicking_executor_is_dispatch_failed_and_says_dispatched_true() {
    for when_called in [true, false] {
        let mut dex = Dex::new();
        dex.install(spec_example(), Panicking { when_called })
            .expect("installs");
        let error = dex
            .execute(DELETE, good_input(), &caller())
            .await
            .unwrap_err();
        let DexError::DispatchFailed { message, .. } = &error else {
            panic!("{error:?}");
        };
        assert!(message.contains("boom"), "{message}");
        assert!(error.dispatched(), "the operation may have taken effect");
        assert_eq!(error.to_json()["dispatched"], json!(true));
        assert_eq!(error.to_json()["kind"], json!("dispatch_failed"));
    }
}

#[tokio::test]
async fn errors_before_dispatch_carry_dispatched_false() {
    let (dex, calls) = dex_with(ok_result());
    let errors = [
        dex.execute("nope", good_input(), &caller())
            .await
            .unwrap_err(),
        dex.execute(DELETE, good_input(), &Caller::default())
            .await
            .unwrap_err(),
        dex.execute(DELETE, json!({"fingerprint": "a"}), &caller())
            .await
            .unwrap_err(),
        dex.execute(
            DELETE,
            json!({"fingerprint": "a", "confirm": "a", "x": 1}),
            &caller(),
        )
        .await
        .unwrap_err(),
    ];
    let kinds: Vec<_> = errors.iter().map(DexError::kind).collect();
    assert_eq!(
        kinds,
        [
            "unknown_operation",
            "scope_missing",
            "confirmation_required",
            "invalid_input"
        ]
    );
    for error in &errors {
        assert!(!error.dispatched());
        assert_eq!(error.to_json()["dispatched"], json!(false));
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn tama_dex_adds_no_deadline_and_does_not_enforce_bounds() {
    let mut document = spec_example();
    document["paths"]["/operations/incus_image_delete"]["post"]["x-tama-bounds"] =
        json!({"max_wait_seconds": 0});
    let (release, released) = tokio::sync::oneshot::channel::<()>();
    let released = Arc::new(tokio::sync::Mutex::new(Some(released)));
    let executor = move |_id: String, _input: Value| {
        let released = Arc::clone(&released);
        async move {
            let receiver = released.lock().await.take().expect("called once");
            receiver.await.expect("released");
            // Longer than the documented bound of 0 seconds.
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            Ok(json!({"operation_id": "op-1", "status": "completed"}))
        }
    };
    let mut dex = Dex::new();
    dex.install(document, executor).expect("installs");
    let input = good_input();
    let caller = caller();
    let (outcome, ()) = tokio::join!(dex.execute(DELETE, input, &caller), async move {
        for _ in 0..10 {
            tokio::task::yield_now().await;
        }
        release.send(()).expect("executor waiting");
    });
    assert!(matches!(outcome, Ok(Outcome::Ok(_))), "{outcome:?}");
}
