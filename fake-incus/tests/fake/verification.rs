//! Verification from any language over the control socket: `POST /verify` (counts and ordered
//! sequences, with the nearest misses) and `GET /journal/wait` (a bounded long poll); and
//! probabilistic faults that replay run to run.

use crate::common::{call, unix_at};
use fake_incus::FakeIncus;
use serde_json::json;
use std::path::PathBuf;

async fn with_control() -> (FakeIncus, tempfile::TempDir, PathBuf) {
    let fake = FakeIncus::builder().start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let control = dir.path().join("control.socket");
    fake.serve_control(&control).unwrap();
    (fake, dir, control)
}

#[tokio::test]
async fn verify_counts_matching_requests_and_shows_the_nearest_misses() {
    let (fake, _dir, control) = with_control().await;
    for name in ["web", "db"] {
        call(
            &fake,
            "POST",
            "/1.0/profiles?project=default",
            Some(json!({"name": name, "config": {"user.role": name}})),
        )
        .await;
    }
    let pass = unix_at(
        &control,
        "POST",
        "/verify",
        Some(
            json!({"method": "POST", "path": "/1.0/profiles", "query": {"project": "default"},
                    "body": {"config": {"user.role": "db"}}, "count": 1}),
        ),
        &[],
    )
    .await;
    assert_eq!(pass.status(), 200);
    assert_eq!(
        (pass.json()["pass"].clone(), pass.json()["matches"].clone()),
        (json!(true), json!([2]))
    );
    let miss = unix_at(
        &control,
        "POST",
        "/verify",
        Some(json!({"method": "POST", "path": "/1.0/profiles", "body": {"name": "cache"}})),
        &[],
    )
    .await;
    assert_eq!(miss.json()["pass"], false);
    assert_eq!(
        miss.json()["nearest"][0]["misses"],
        json!(["body.name is \"web\", not \"cache\""])
    );
    let sequence = unix_at(
        &control,
        "POST",
        "/verify",
        Some(json!({"sequence": [{"body": {"name": "db"}}, {"body": {"name": "web"}}]})),
        &[],
    )
    .await;
    assert_eq!(
        (
            sequence.json()["pass"].clone(),
            sequence.json()["failed_step"].clone()
        ),
        (json!(false), json!(1))
    );
    let bad = unix_at(
        &control,
        "POST",
        "/verify",
        Some(json!({"count": 1, "at_most": 1})),
        &[],
    )
    .await;
    assert_eq!(bad.status(), 400);
}

#[tokio::test]
async fn journal_wait_returns_once_enough_requests_arrived_and_times_out_within_its_bound() {
    let (fake, _dir, control) = with_control().await;
    let waiting = {
        let control = control.clone();
        tokio::spawn(async move {
            unix_at(
                &control,
                "GET",
                "/journal/wait?method=POST&path=/1.0/profiles&count=2&timeout_ms=20000",
                None,
                &[],
            )
            .await
        })
    };
    for name in ["a", "b"] {
        call(&fake, "POST", "/1.0/profiles", Some(json!({"name": name}))).await;
    }
    let arrived = waiting.await.unwrap();
    assert_eq!(
        (arrived.status(), arrived.json()["matched"].clone()),
        (200, json!(2))
    );
    assert_eq!(arrived.json()["entries"][1]["body"], r#"{"name":"b"}"#);

    let late = unix_at(
        &control,
        "GET",
        "/journal/wait?path=/1.0/nope&timeout_ms=30",
        None,
        &[],
    )
    .await;
    assert_eq!(late.status(), 408);
    assert!(late.json()["error"]
        .as_str()
        .unwrap()
        .contains("0 of 1 matching requests arrived within 30 ms"));
    for (query, says) in [
        ("timeout_ms=600000", "over the limit"),
        ("count=x", "whole number"),
        ("pattern=/x", "unknown query parameter"),
    ] {
        let bad = unix_at(
            &control,
            "GET",
            &format!("/journal/wait?{query}"),
            None,
            &[],
        )
        .await;
        assert_eq!(bad.status(), 400, "{query}");
        assert!(
            bad.json()["error"].as_str().unwrap().contains(says),
            "{query}"
        );
    }
}

#[tokio::test]
async fn a_probabilistic_fault_with_a_seed_hits_the_same_requests_in_two_fakes() {
    let rule = json!({"method": "GET", "path": "/1.0", "probability": 0.3, "seed": 7,
                      "fault": {"kind": "error", "status": 503, "message": "unlucky"}});
    let mut runs = Vec::new();
    for _ in 0..2 {
        let (fake, _dir, control) = with_control().await;
        let added = unix_at(&control, "POST", "/rules", Some(rule.clone()), &[]).await;
        assert_eq!(added.status(), 200);
        let mut statuses = Vec::new();
        for _ in 0..50 {
            statuses.push(call(&fake, "GET", "/1.0", None).await.status());
        }
        runs.push(statuses);
    }
    assert_eq!(runs[0], runs[1], "the same requests fail in both runs");
    let failed = runs[0].iter().filter(|s| **s == 503).count();
    assert!(
        (3..=30).contains(&failed),
        "some but not all: {failed} of 50"
    );
}
