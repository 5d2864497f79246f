//! What results never carry (credentials, replaced by `REDACTED`) and which operations a call
//! sees (its project's only), through `run` over the fake Incus.
//!
//! Client evidence exercised through `run`: GetOperations (the project check of get, wait and
//! cancel), GetOperation, GetOperationWait, DeleteOperation, GetNetwork, GetNetworks.
use crate::run_support;

use fake_incus::{Fault, Rule};
use incus_operations::REDACTED;
use run_support::{kind, Bench};
use serde_json::{json, Value};

/// Project `other` beside `default` (the default project keeps its features).
fn two_projects() -> Value {
    let features: serde_json::Map<String, Value> = [
        "features.images",
        "features.networks",
        "features.networks.zones",
        "features.profiles",
        "features.storage.buckets",
        "features.storage.volumes",
    ]
    .iter()
    .map(|key| ((*key).to_owned(), json!("true")))
    .collect();
    json!([
        {"name": "default", "description": "Default Incus project", "config": features},
        {"name": "other", "description": "", "config": {"features.profiles": "false"}},
    ])
}

#[tokio::test]
async fn server_get_replaces_credential_keys_and_keeps_the_others() {
    let seed = json!({"server_config": {
        "loki.auth.password": "pw-1", "openfga.api.token": "tok-2",
        "network.ovn.client_key": "key-3", "acme.provider.environment": "TOKEN=env-4",
        "core.proxy_http": "http://u:pw-5@proxy:3128", "core.proxy_https": "http://proxy:3128",
        "loki.auth.username": "incus"
    }});
    let bench = Bench::with(crate::run_support::fake_builder().state(seed)).await;
    let result = bench.call("incus_server_get", json!({})).await;
    let config = &result["item"]["config"];
    for key in [
        "loki.auth.password",
        "openfga.api.token",
        "network.ovn.client_key",
        "acme.provider.environment",
        "core.proxy_http",
    ] {
        assert_eq!(config[key], REDACTED, "{key}: {result}");
    }
    assert_eq!(config["core.proxy_https"], "http://proxy:3128");
    assert_eq!(config["loki.auth.username"], "incus");
    for secret in ["pw-1", "tok-2", "key-3", "env-4", "pw-5"] {
        assert!(!result.to_string().contains(secret), "{secret}: {result}");
    }
}

#[tokio::test]
async fn network_get_and_list_replace_bgp_peer_passwords() {
    let seed = json!({"networks": [{"name": "br0", "type": "bridge", "managed": true,
        "config": {"bgp.peers.r1.password": "bgp-pw", "bgp.peers.r1.asn": "65001"}}]});
    let bench = Bench::with(crate::run_support::fake_builder().state(seed)).await;
    let get = bench
        .call("incus_network_get", json!({"name": "br0"}))
        .await;
    let list = bench.call("incus_network_list", json!({})).await;
    for network in [&get["item"], &list["items"][0]] {
        assert_eq!(
            network["config"]["bgp.peers.r1.password"], REDACTED,
            "{network}"
        );
        assert_eq!(network["config"]["bgp.peers.r1.asn"], "65001");
    }
}

/// A running operation (an instance create that never finishes) in `project`.
async fn running_operation(bench: &Bench, project: &str, name: &str) -> String {
    let _rule = bench.fake.add_rule(
        Rule::new("POST", "/1.0/instances")
            .nth(1)
            .fault(Fault::OperationNeverFinish),
    );
    let result = bench
        .call(
            "incus_instance_create",
            json!({"name": name, "project": project, "source": {"type": "none"},
                "devices": {"root": {"type": "disk", "path": "/", "pool": "default"}},
                "wait_seconds": 0}),
        )
        .await;
    assert_eq!(result["status"], "running", "{result}");
    result["operation_id"].as_str().expect("id").to_owned()
}

/// The requests since `since` (journal entries), discovery left out, as `METHOD path?query`.
fn sent_since(bench: &Bench, since: usize) -> Vec<String> {
    bench
        .fake
        .journal()
        .into_iter()
        .skip(since)
        .filter(|e| !(e.method == "GET" && e.path == "/1.0"))
        .map(|e| format!("{} {}?{}", e.method, e.path, e.query.unwrap_or_default()))
        .collect()
}

#[tokio::test]
async fn get_wait_and_cancel_answer_another_projects_operation_exactly_as_an_unknown_one() {
    let bench =
        Bench::with(crate::run_support::fake_builder().state(json!({"projects": two_projects()})))
            .await;
    let foreign = running_operation(&bench, "other", "c1").await;
    let unknown = "00000000-0000-4000-8000-000000000000";
    for (name, extra) in [
        ("incus_operation_get", json!({})),
        ("incus_operation_wait", json!({"wait_seconds": 1})),
        ("incus_operation_cancel", json!({})),
    ] {
        let input = |id: &str| {
            let mut input = extra.clone();
            input["operation_id"] = json!(id);
            input["project"] = json!("default");
            input
        };
        let expected = bench.call(name, input(unknown)).await;
        let since = bench.fake.journal().len();
        let result = bench.call(name, input(&foreign)).await;
        assert_eq!(result, expected, "{name}");
        assert_eq!(kind(&result), "native");
        assert_eq!(result["error"]["http_status"], 404, "{name}: {result}");
        assert_eq!(
            sent_since(&bench, since),
            ["GET /1.0/operations?project=default"],
            "{name}"
        );
    }
    let still = bench
        .call(
            "incus_operation_get",
            json!({"operation_id": foreign, "project": "other"}),
        )
        .await;
    assert_eq!(still["item"]["status"], "Running", "{still}");
}

#[tokio::test]
async fn the_projects_own_operation_is_read_after_one_list_and_listed_only_there() {
    let bench =
        Bench::with(crate::run_support::fake_builder().state(json!({"projects": two_projects()})))
            .await;
    let own = running_operation(&bench, "other", "c1").await;
    let since = bench.fake.journal().len();
    let got = bench
        .call(
            "incus_operation_get",
            json!({"operation_id": own, "project": "other"}),
        )
        .await;
    assert_eq!(got["item"]["id"], own.as_str(), "{got}");
    assert_eq!(
        sent_since(&bench, since),
        [
            "GET /1.0/operations?project=other".to_owned(),
            format!("GET /1.0/operations/{own}?project=other"),
        ]
    );
    let listed = |result: &Value| {
        result["items"]
            .as_array()
            .is_some_and(|items| items.iter().any(|op| op["id"] == own.as_str()))
    };
    let in_other = bench
        .call("incus_operation_list", json!({"project": "other"}))
        .await;
    let in_default = bench
        .call("incus_operation_list", json!({"project": "default"}))
        .await;
    assert!(listed(&in_other), "{in_other}");
    assert!(!listed(&in_default), "{in_default}");
}
