//! Trust tokens and cluster-join tokens as Incus 6.0.4 makes them (`incus config trust add NAME`,
//! `incus cluster add NAME`): running operations of class `token` in project `default` whose
//! metadata holds the token's `secret`; and the credential keys server config and networks hold,
//! which the daemon shows unchanged.

use crate::common::call;
use fake_incus::FakeIncus;
use fake_incus::Reply;
use serde_json::{json, Value};

/// A fake that listens on the network as far as `core.https_address` says (tokens need it).
async fn listening() -> FakeIncus {
    crate::common::builder()
        .state(json!({"server_config": {"core.https_address": "127.0.0.1:8443"}}))
        .start()
        .await
        .expect("fake starts")
}

fn sorted_keys(value: &Value) -> Vec<String> {
    let mut keys: Vec<String> = value.as_object().expect("object").keys().cloned().collect();
    keys.sort();
    keys
}

fn is_hex64(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

async fn trust_add(fake: &FakeIncus, body: Value) -> Reply {
    call(fake, "POST", "/1.0/certificates", Some(body)).await
}

#[tokio::test]
async fn trust_token_is_a_running_token_operation_of_project_default_with_a_secret() {
    let fake = listening().await;
    let reply = trust_add(
        &fake,
        json!({"name": "agent", "type": "client", "token": true}),
    )
    .await;
    assert_eq!(reply.status(), 202, "{}", reply.json());
    let op = reply.metadata().clone();
    assert_eq!(
        (op["class"].as_str(), op["description"].as_str()),
        (Some("token"), Some("Executing operation"))
    );
    assert_eq!(
        (op["status_code"].as_u64(), op["may_cancel"].as_bool()),
        (Some(103), Some(true))
    );
    assert_eq!(op["resources"], json!({}));
    let metadata = &op["metadata"];
    assert_eq!(
        sorted_keys(metadata),
        ["addresses", "fingerprint", "request", "secret"]
    );
    assert!(is_hex64(metadata["secret"].as_str().unwrap()), "{metadata}");
    assert!(
        is_hex64(metadata["fingerprint"].as_str().unwrap()),
        "{metadata}"
    );
    assert_eq!(metadata["addresses"], json!(["127.0.0.1:8443"]));
    assert_eq!(
        metadata["request"],
        json!({"certificate": "", "description": "", "name": "agent", "projects": [],
               "restricted": false, "token": true, "trust_token": "", "type": "client"})
    );

    // Listed in project default, with its secret, as `incus config trust list-tokens` reads it.
    let id = op["id"].as_str().unwrap();
    let listed = call(&fake, "GET", "/1.0/operations?recursion=1", None).await;
    let running = listed.metadata()["running"].as_array().expect("running");
    assert!(running
        .iter()
        .any(|o| o["id"] == id && o["metadata"]["secret"] == metadata["secret"]));
    // Not listed in another project, but found by id from any project, as Incus does.
    call(
        &fake,
        "POST",
        "/1.0/projects",
        Some(json!({"name": "other"})),
    )
    .await;
    let other = call(&fake, "GET", "/1.0/operations?project=other", None).await;
    assert_eq!(other.metadata(), &json!({}));
    let found = call(
        &fake,
        "GET",
        &format!("/1.0/operations/{id}?project=other"),
        None,
    )
    .await;
    assert_eq!((found.status(), &found.metadata()["id"]), (200, &json!(id)));

    // `incus config trust revoke-token agent`: the operation is cancelled.
    let revoked = call(&fake, "DELETE", &format!("/1.0/operations/{id}"), None).await;
    assert_eq!(revoked.status(), 200, "{}", revoked.json());
    let after = call(&fake, "GET", &format!("/1.0/operations/{id}"), None).await;
    assert_eq!(after.metadata()["status"], "Cancelled");
}

#[tokio::test]
async fn trust_tokens_need_a_network_address_a_client_type_and_no_certificate() {
    let fake = crate::common::builder().start().await.expect("fake starts");
    for (fake, body, message) in [
        (
            &fake,
            json!({"name": "a", "type": "client", "token": true}),
            "Can't issue token when server isn't listening on network",
        ),
        (
            &listening().await,
            json!({"name": "a", "type": "metrics", "token": true}),
            "Tokens can only be issued for client certificates",
        ),
        (
            &listening().await,
            json!({"name": "a", "type": "client", "token": true, "certificate": "MIIB"}),
            "Can't use certificate if token is requested",
        ),
    ] {
        let reply = trust_add(fake, body).await;
        assert_eq!(
            (reply.status(), reply.json()["error"].as_str()),
            (400, Some(message))
        );
        let ops = call(fake, "GET", "/1.0/operations", None).await;
        assert_eq!(ops.metadata(), &json!({}), "no operation was made");
    }
}

#[tokio::test]
async fn cluster_join_token_is_a_token_operation_with_the_online_members_addresses() {
    let fake = crate::common::builder()
        .cluster(["m1", "m2", "m3"])
        .start()
        .await
        .expect("cluster starts");
    let reply = call(
        &fake,
        "POST",
        "/1.0/cluster/members",
        Some(json!({"server_name": "m4"})),
    )
    .await;
    assert_eq!(reply.status(), 202, "{}", reply.json());
    let op = reply.metadata();
    assert_eq!(
        (op["class"].as_str(), op["may_cancel"].as_bool()),
        (Some("token"), Some(true))
    );
    assert_eq!(op["resources"], json!({"cluster": []}));
    let metadata = &op["metadata"];
    assert_eq!(
        sorted_keys(metadata),
        [
            "addresses",
            "expiresAt",
            "fingerprint",
            "secret",
            "serverName"
        ]
    );
    assert_eq!(metadata["serverName"], "m4");
    assert!(is_hex64(metadata["secret"].as_str().unwrap()));
    assert_eq!(metadata["addresses"].as_array().map(Vec::len), Some(3));

    let taken = call(
        &fake,
        "POST",
        "/1.0/cluster/members",
        Some(json!({"server_name": "m2"})),
    )
    .await;
    assert_eq!(
        (taken.status(), taken.json()["error"].as_str()),
        (500, Some("The cluster already has a member with name: m2"))
    );
    let standalone = crate::common::builder().start().await.expect("fake starts");
    let refused = call(
        &standalone,
        "POST",
        "/1.0/cluster/members",
        Some(json!({"server_name": "m4"})),
    )
    .await;
    assert_eq!(
        (refused.status(), refused.json()["error"].as_str()),
        (400, Some("This server is not clustered"))
    );
}

#[tokio::test]
async fn credential_keys_of_server_config_and_networks_are_shown_unchanged_as_incus_does() {
    let fake = crate::common::builder()
        .state(json!({
            "server_config": {"loki.auth.password": "s3cret", "openfga.api.token": "tok"},
            "networks": [{"name": "lo", "type": "loopback"},
                {"name": "br0", "type": "bridge", "managed": true,
                 "config": {"bgp.peers.r1.password": "pw", "bgp.peers.r1.asn": "65001"}}]
        }))
        .start()
        .await
        .expect("fake starts");
    let server = call(&fake, "GET", "/1.0", None).await;
    assert_eq!(server.metadata()["config"]["loki.auth.password"], "s3cret");
    assert_eq!(server.metadata()["config"]["openfga.api.token"], "tok");
    let network = call(&fake, "GET", "/1.0/networks/br0", None).await;
    assert_eq!(network.metadata()["config"]["bgp.peers.r1.password"], "pw");
}
