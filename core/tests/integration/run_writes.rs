//! What create, update and state changes may write (`SECURITY.md`): deletion through `ephemeral`
//! needs `incus.delete`, guest code needs `incus.exec`, the profiles a create implies are read,
//! checked and sent, devices and config keys are judged key by key, and `allow_restricted` sees
//! values. Each refusal is proven by the journal: nothing sent, or only the documented reads.
//!
//! Client evidence exercised through `run`: none beyond the reads of `incus_image_alias_list`,
//! `incus_image_get`, `incus_profile_get` and `incus_instance_get`, used here as check reads.
use crate::run_support;

use incus_operations::{RestrictedItem, Scope};
use run_support::{call_with, kind, Act, Bench, ALL};
use serde_json::{json, Value};

const WRITE: [Scope; 1] = [Scope::Write];

/// The requests after discovery, as `METHOD path`.
fn sent(bench: &Bench) -> Vec<String> {
    bench
        .requests()
        .iter()
        .map(|entry| format!("{} {}", entry.method, entry.path))
        .collect()
}

/// `c1` ephemeral and running with a snapshot, `c2` running; an image whose profiles are
/// `["privileged"]` and one whose are `["default"]`; profiles `default`, `privileged`, `ci`.
fn seed() -> Value {
    json!({
        "instances": [
            {"name": "c1", "ephemeral": true, "status": "Running", "snapshots": [{"name": "snap0"}]},
            {"name": "c2", "status": "Running"}
        ],
        "profiles": [
            {"name": "default", "devices": {"root": {"type": "disk", "pool": "default", "path": "/"}}},
            {"name": "privileged", "config": {"security.privileged": "true"}},
            {"name": "ci", "config": {"cloud-init.user-data": "#cloud-config\nruncmd: [id]"}}
        ],
        "images": [
            {"fingerprint": "a".repeat(64), "aliases": [{"name": "priv"}], "profiles": ["privileged"]},
            {"fingerprint": "b".repeat(64), "aliases": [{"name": "plain"}]}
        ]
    })
}

async fn bench() -> Bench {
    Bench::with(crate::run_support::fake_builder().state(seed())).await
}

#[tokio::test]
async fn setting_ephemeral_by_update_needs_incus_delete() {
    let bench = bench().await;
    let host = bench.host();
    let input = json!({"name": "c2", "ephemeral": true});
    let result = call_with(&host, "incus_instance_update", input.clone(), &WRITE).await;
    assert_eq!(kind(&result), "scope_missing", "{result}");
    let message = result["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("incus.delete") && message.contains("ephemeral"),
        "{message}"
    );
    assert!(bench.fake.journal().is_empty(), "{:?}", sent(&bench));
    let result = call_with(
        &host,
        "incus_instance_update",
        json!({"name": "c1", "ephemeral": false}),
        &WRITE,
    )
    .await;
    assert_eq!(result["status"], "completed", "{result}");
    let both = [Scope::Write, Scope::Delete];
    let result = call_with(&host, "incus_instance_update", input, &both).await;
    assert_eq!(result["status"], "completed", "{result}");
}

#[tokio::test]
async fn stopping_an_ephemeral_instance_needs_incus_delete_after_one_read() {
    let bench = bench().await;
    let host = bench.host();
    let stop = json!({"name": "c1", "action": "stop", "force": true});
    let result = call_with(&host, "incus_instance_state_update", stop.clone(), &WRITE).await;
    assert_eq!(kind(&result), "scope_missing", "{result}");
    assert_eq!(sent(&bench), ["GET /1.0/instances/c1"]);
    // Restart is not refused and reads nothing: Incus clears the flag for a restart.
    bench.fake.clear_journal();
    let restart = json!({"name": "c1", "action": "restart", "force": true});
    let result = call_with(&host, "incus_instance_state_update", restart, &WRITE).await;
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(bench.count("GET", "/1.0/instances/c1"), 0);
    // A stop of a plain instance: the one read, then the stop.
    bench.fake.clear_journal();
    let plain = json!({"name": "c2", "action": "stop", "force": true});
    let result = call_with(&host, "incus_instance_state_update", plain, &WRITE).await;
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(bench.count("GET", "/1.0/instances/c2"), 1);
    // With incus.delete: no read, and Incus deletes the ephemeral instance as it stops.
    bench.fake.clear_journal();
    let both = [Scope::Write, Scope::Delete];
    let result = call_with(&host, "incus_instance_state_update", stop, &both).await;
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(bench.count("GET", "/1.0/instances/c1"), 0);
    let gone = call_with(&host, "incus_instance_get", json!({"name": "c1"}), &ALL).await;
    assert_eq!(gone["error"]["http_status"], 404, "{gone}");
}

#[tokio::test]
async fn guest_code_needs_incus_exec_in_the_input_and_in_applied_profiles() {
    let bench = bench().await;
    let host = bench.host();
    for key in [
        "cloud-init.user-data",
        "user.vendor-data",
        "cloud-init.network-config",
    ] {
        let input = json!({"name": "c2", "config": {key: "#cloud-config\nruncmd: [id]"}});
        let result = call_with(&host, "incus_instance_update", input.clone(), &WRITE).await;
        assert_eq!(kind(&result), "scope_missing", "{key}: {result}");
        assert!(bench.fake.journal().is_empty());
        let with_exec = [Scope::Write, Scope::Exec];
        let result = call_with(&host, "incus_instance_update", input, &with_exec).await;
        assert_eq!(result["status"], "completed", "{key}: {result}");
        bench.fake.clear_journal();
    }
    let input = json!({"name": "c2", "profiles": ["default", "ci"]});
    let result = call_with(&host, "incus_instance_update", input, &WRITE).await;
    assert_eq!(kind(&result), "scope_missing", "{result}");
    let message = result["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("from profile \"ci\""), "{message}");
    assert_eq!(
        sent(&bench),
        ["GET /1.0/profiles/default", "GET /1.0/profiles/ci"]
    );
}

#[tokio::test]
async fn a_create_without_profiles_checks_and_sends_the_image_profiles() {
    let bench = bench().await;
    let host = bench.host();
    let input = json!({"name": "w1", "source": {"type": "image", "alias": "priv"}});
    let result = call_with(&host, "incus_instance_create", input, &WRITE).await;
    assert_eq!(kind(&result), "restricted_input", "{result}");
    let fingerprint = "a".repeat(64);
    assert_eq!(
        sent(&bench),
        [
            "GET /1.0/images/aliases".to_owned(),
            format!("GET /1.0/images/{fingerprint}"),
            "GET /1.0/profiles/privileged".to_owned()
        ]
    );
    assert_eq!(
        *host.restricted_items.lock().unwrap(),
        [RestrictedItem::config_key(
            "security.privileged",
            json!("true")
        )]
    );
    bench.fake.clear_journal();
    let input = json!({"name": "w1", "source": {"type": "image", "alias": "plain"}});
    let result = call_with(&host, "incus_instance_create", input, &WRITE).await;
    assert_eq!(result["status"], "completed", "{result}");
    let posts = bench.fake.requests("POST", "/1.0/instances");
    let post = posts.first().expect("the create was sent");
    let body: Value = serde_json::from_str(&post.body).unwrap();
    assert_eq!(body["profiles"], json!(["default"]), "{body}");
    // An empty instance reads no image; an unknown alias falls back to default, as in Incus.
    bench.fake.clear_journal();
    let input = json!({"name": "w2", "source": {"type": "none"}});
    let result = call_with(&host, "incus_instance_create", input, &WRITE).await;
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(bench.count("GET", "/1.0/images/aliases"), 0);
    assert_eq!(bench.count("GET", "/1.0/profiles/default"), 1);
}

#[tokio::test]
async fn device_keys_outside_the_allowlist_are_restricted_items_with_their_config() {
    let bench = bench().await;
    let host = bench.host();
    let routes =
        json!({"type": "nic", "network": "incusbr0", "ipv4.routes": "0.0.0.0/1,128.0.0.0/1"});
    let input = json!({"name": "c2", "devices": {"eth1": routes.clone()}});
    let result = call_with(&host, "incus_instance_update", input, &WRITE).await;
    assert_eq!(kind(&result), "restricted_input", "{result}");
    assert!(bench.fake.journal().is_empty());
    assert_eq!(
        *host.restricted_items.lock().unwrap(),
        [RestrictedItem::device("eth1", routes)]
    );
    let plain =
        json!({"type": "nic", "network": "incusbr0", "name": "eth1", "ipv4.address": "10.0.0.7"});
    let input =
        json!({"name": "c2", "devices": {"eth1": plain}, "config": {"limits.memory": "1GiB"}});
    let result = call_with(&host, "incus_instance_update", input, &WRITE).await;
    assert_ne!(kind(&result), "restricted_input", "{result}");
}

#[tokio::test]
async fn a_host_may_allow_one_exact_host_path() {
    let bench = bench().await;
    let mut host = bench.host();
    host.restricted = Act::Allow;
    let data = json!({"type": "disk", "source": "/srv/data", "path": "/data"});
    let input = json!({"name": "c2", "devices": {"data": data.clone()}});
    let result = call_with(&host, "incus_instance_update", input, &WRITE).await;
    assert_eq!(result["status"], "completed", "{result}");
    let items = host.restricted_items.lock().unwrap().clone();
    assert_eq!(items, [RestrictedItem::device("data", data)]);
    assert_eq!(items[0].device_type(), Some("disk"));
}
