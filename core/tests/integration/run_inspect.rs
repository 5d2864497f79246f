//! Inspection results: native data unchanged, native order, native total, `limit`, truncation,
//! the 256 KiB output bound, and read failures.
//!
//! Client evidence exercised through `run`: GetInstances, GetInstanceSnapshots, GetImages, GetImageAliases, GetNetworks, GetProfiles,
//! GetProjects, GetStoragePools, GetStoragePoolVolumes, GetOperations, GetInstance, GetInstanceState,
//! GetInstanceSnapshot, GetImage, GetNetwork, GetProfile, GetProject, GetStoragePool,
//! GetStoragePoolVolume, GetOperation, helper:connect.
use crate::run_support;

use std::time::Duration;

use fake_incus::{Fault, Rule};
use run_support::{kind, Bench};
use serde_json::{json, Value};

fn names(result: &Value) -> Vec<String> {
    result["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|item| item["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn json_len(value: &Value) -> usize {
    serde_json::to_vec(value).unwrap().len()
}

#[tokio::test]
async fn every_list_operation_returns_native_items_count_and_truncated() {
    let bench = Bench::start().await;
    bench.instance("a1").await;
    let snapshot = bench
        .call(
            "incus_instance_snapshot_create",
            json!({"instance": "a1", "snapshot": "s0"}),
        )
        .await;
    assert_eq!(snapshot["status"], "completed", "{snapshot}");
    let lists = [
        ("incus_instance_list", json!({}), 1),
        ("incus_instance_snapshot_list", json!({"instance": "a1"}), 1),
        ("incus_image_list", json!({}), 1),
        ("incus_image_alias_list", json!({}), 1),
        ("incus_network_list", json!({}), 1),
        ("incus_profile_list", json!({}), 1),
        ("incus_project_list", json!({}), 1),
        ("incus_storage_pool_list", json!({}), 1),
        ("incus_storage_volume_list", json!({"pool": "default"}), 2),
    ];
    for (name, input, at_least) in lists {
        let result = bench.call(name, input).await;
        let items = result["items"]
            .as_array()
            .unwrap_or_else(|| panic!("{name}: {result}"));
        assert!(items.len() >= at_least, "{name}: {result}");
        assert_eq!(result["count"], items.len(), "{name}: {result}");
        assert_eq!(result["truncated"], false, "{name}: {result}");
    }
    let operations = bench.call("incus_operation_list", json!({})).await;
    assert!(operations["items"].is_array(), "{operations}");
    assert_eq!(
        operations["count"],
        operations["items"].as_array().unwrap().len()
    );
}

#[tokio::test]
async fn lists_keep_native_order_and_the_native_total_under_limit() {
    let bench = Bench::start().await;
    for name in ["c3", "a1", "b2"] {
        bench.instance(name).await;
    }
    let all = bench
        .call("incus_instance_list", json!({"limit": 500}))
        .await;
    let native = names(&all);
    assert_eq!(native.len(), 3);
    let first = bench.call("incus_instance_list", json!({"limit": 2})).await;
    assert_eq!(names(&first), native[..2]);
    assert_eq!(first["count"], 3);
    assert_eq!(first["truncated"], true);
    let one = bench.call("incus_instance_list", json!({"limit": 1})).await;
    assert_eq!(names(&one), native[..1]);
    assert_eq!(one["truncated"], true);
}

#[tokio::test]
async fn lists_return_100_items_by_default() {
    let bench = Bench::start().await;
    bench.instance("web").await;
    for n in 0..101 {
        let result = bench
            .call(
                "incus_instance_snapshot_create",
                json!({"instance": "web", "snapshot": format!("s{n}"), "wait_seconds": 0}),
            )
            .await;
        assert!(result.get("status").is_some(), "{result}");
    }
    // Let every snapshot operation finish.
    let mut listed = Value::Null;
    for _ in 0..100 {
        listed = bench
            .call("incus_instance_snapshot_list", json!({"instance": "web"}))
            .await;
        if listed["count"] == 101 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(listed["count"], 101, "{listed}");
    assert_eq!(listed["items"].as_array().unwrap().len(), 100);
    assert_eq!(listed["truncated"], true);
    let most = bench
        .call(
            "incus_instance_snapshot_list",
            json!({"instance": "web", "limit": 500}),
        )
        .await;
    assert_eq!(most["items"].as_array().unwrap().len(), 101);
    assert_eq!(most["truncated"], false);
}

#[tokio::test]
async fn every_get_operation_returns_the_native_object_unchanged() {
    let bench = Bench::start().await;
    bench.instance("a1").await;
    bench
        .call(
            "incus_instance_snapshot_create",
            json!({"instance": "a1", "snapshot": "s0"}),
        )
        .await;
    let images = bench.call("incus_image_list", json!({})).await;
    let fingerprint = images["items"][0]["fingerprint"]
        .as_str()
        .unwrap()
        .to_owned();
    let created = bench
        .call(
            "incus_instance_snapshot_create",
            json!({"instance": "a1", "snapshot": "s1"}),
        )
        .await;
    let operation_id = created["operation_id"].as_str().unwrap().to_owned();
    let gets = [
        ("incus_server_get", json!({}), "api_version"),
        (
            "incus_instance_get",
            json!({"name": "a1"}),
            "expanded_config",
        ),
        (
            "incus_instance_state_get",
            json!({"name": "a1"}),
            "status_code",
        ),
        (
            "incus_instance_snapshot_get",
            json!({"instance": "a1", "snapshot": "s0"}),
            "expires_at",
        ),
        (
            "incus_image_get",
            json!({"fingerprint": fingerprint}),
            "fingerprint",
        ),
        (
            "incus_image_get",
            json!({"fingerprint": &fingerprint[..12]}),
            "fingerprint",
        ),
        ("incus_network_get", json!({"name": "lo"}), "managed"),
        ("incus_profile_get", json!({"name": "default"}), "devices"),
        ("incus_project_get", json!({"name": "default"}), "config"),
        (
            "incus_storage_pool_get",
            json!({"pool": "default"}),
            "driver",
        ),
        (
            "incus_storage_volume_get",
            json!({"pool": "default", "type": "container", "name": "a1"}),
            "content_type",
        ),
        (
            "incus_operation_get",
            json!({"operation_id": operation_id}),
            "may_cancel",
        ),
    ];
    for (name, input, key) in gets {
        let result = bench.call(name, input).await;
        assert!(result["item"].get(key).is_some(), "{name}: {result}");
    }
    let instance = bench
        .call("incus_instance_get", json!({"name": "a1"}))
        .await;
    assert!(
        instance["etag"]
            .as_str()
            .is_some_and(|etag| !etag.is_empty()),
        "{instance}"
    );
    assert_eq!(instance["item"]["name"], "a1");
    let image = bench
        .call(
            "incus_image_get",
            json!({"fingerprint": &fingerprint[..12]}),
        )
        .await;
    assert_eq!(image["item"]["fingerprint"], fingerprint);
}

#[tokio::test]
async fn a_missing_resource_is_a_native_error_with_status_code_and_message() {
    let bench = Bench::start().await;
    let cases = [
        ("incus_instance_get", json!({"name": "nope"})),
        ("incus_instance_state_get", json!({"name": "nope"})),
        (
            "incus_instance_snapshot_get",
            json!({"instance": "nope", "snapshot": "s"}),
        ),
        ("incus_network_get", json!({"name": "nope"})),
        ("incus_profile_get", json!({"name": "nope"})),
        ("incus_project_get", json!({"name": "nope"})),
        ("incus_storage_pool_get", json!({"pool": "nope"})),
        (
            "incus_operation_get",
            json!({"operation_id": "00000000-0000-4000-8000-000000000000"}),
        ),
    ];
    for (name, input) in cases {
        let result = bench.call(name, input).await;
        assert_eq!(kind(&result), "native", "{name}: {result}");
        assert_eq!(result["error"]["http_status"], 404, "{name}: {result}");
        assert_eq!(result["error"]["error_code"], 404, "{name}: {result}");
        assert!(!result["error"]["message"].as_str().unwrap().is_empty());
    }
}

/// Adds `keys` config keys of `value_len` bytes each, through several updates (64 KiB each).
async fn grow(bench: &Bench, name: &str, keys: usize, value_len: usize) {
    let per_update = (60 * 1024) / (value_len + 20);
    for start in (0..keys).step_by(per_update.max(1)) {
        let config: serde_json::Map<String, Value> = (start..(start + per_update).min(keys))
            .map(|k| (format!("user.k{k:04}"), json!("v".repeat(value_len))))
            .collect();
        let result = bench
            .call(
                "incus_instance_update",
                json!({"name": name, "config": config}),
            )
            .await;
        assert_eq!(result["status"], "completed", "{result}");
    }
}

#[tokio::test]
async fn a_list_over_the_output_bound_drops_items_from_the_end() {
    let bench = Bench::start().await;
    for name in ["a1", "a2", "a3", "a4", "a5"] {
        bench.instance(name).await;
        grow(&bench, name, 6, 10_000).await; // ~60 KiB per instance
    }
    let whole = bench.call("incus_instance_list", json!({"limit": 1})).await;
    assert_eq!(whole["truncated"], true);
    let result = bench.call("incus_instance_list", json!({})).await;
    let kept = result["items"].as_array().unwrap().len();
    assert!((1..5).contains(&kept), "kept {kept}");
    assert_eq!(result["count"], 5);
    assert_eq!(result["truncated"], true);
    assert!(json_len(&result) <= 256 * 1024);
    let native = names(&bench.call("incus_instance_list", json!({"limit": 1})).await);
    assert_eq!(
        names(&result)[0],
        native[0],
        "items are dropped from the end"
    );
}

#[tokio::test]
async fn a_single_item_over_the_output_bound_is_output_limit() {
    let bench = Bench::start().await;
    bench.instance("big").await;
    grow(&bench, "big", 30, 10_000).await; // ~300 KiB of config
    for (name, input) in [
        ("incus_instance_get", json!({"name": "big"})),
        ("incus_instance_list", json!({})),
    ] {
        let result = bench.call(name, input).await;
        assert_eq!(kind(&result), "output_limit", "{name}: {result}");
        assert_eq!(result["error"]["limit"], 256 * 1024);
    }
}

#[tokio::test]
async fn read_failures_are_transport_timeout_or_invalid_response() {
    let bench = Bench::with_timeout(
        crate::run_support::fake_builder(),
        Duration::from_millis(1500),
    )
    .await;
    let cases = [
        (Fault::Stall, "timeout"),
        (Fault::GarbageBody, "invalid_response"),
        (Fault::TruncatedBody, "transport"),
        (Fault::Reset, "transport"),
        (Fault::CloseBeforeApply, "transport"),
        (
            Fault::Error {
                status: 500,
                message: "boom".into(),
            },
            "native",
        ),
    ];
    for (fault, expected) in cases {
        let label = format!("{fault:?}");
        let _guard = bench
            .fake
            .add_rule(Rule::new("GET", "/1.0/instances").fault(fault));
        let result = bench.call("incus_instance_list", json!({})).await;
        assert_eq!(kind(&result), expected, "{label}: {result}");
    }
}
