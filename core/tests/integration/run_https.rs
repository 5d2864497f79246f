//! The same operations through a connection over HTTPS with mutual TLS; a client identity the
//! server does not trust fails discovery, after authorization and before any operation request.
//!
//! Client evidence exercised through `run`: helper:connect, GetInstances, CreateInstance,
//! GetOperationWait.
use crate::run_support;

use fake_incus::FakeIncus;
use incus_operations::{Connection, Endpoint};
use run_support::{call_with, kind, TestHost, ALL};
use serde_json::json;

#[tokio::test]
async fn operations_run_over_mutual_tls() {
    let fake = FakeIncus::builder().https(true).start().await.unwrap();
    let endpoint = Endpoint::https(
        fake.https_url().unwrap(),
        fake.client_cert_pem(),
        fake.client_key_pem(),
        fake.server_cert_pem(),
    );
    let host = TestHost::new(Connection::builder(endpoint).build().unwrap());
    let created = call_with(
        &host,
        "incus_instance_create",
        json!({"name": "web", "source": {"type": "image", "alias": "busybox"}}),
        &ALL,
    )
    .await;
    assert_eq!(created["status"], "completed", "{created}");
    let listed = call_with(&host, "incus_instance_list", json!({}), &ALL).await;
    assert_eq!(listed["count"], 1, "{listed}");
    let server = call_with(&host, "incus_server_get", json!({}), &ALL).await;
    assert_eq!(server["item"]["auth"], "trusted", "{server}");
    assert!(fake.journal().iter().all(|entry| entry.trusted));
}

#[tokio::test]
async fn an_untrusted_client_identity_is_discovery_failed() {
    let dir = tempfile::tempdir().unwrap();
    let fake = FakeIncus::builder()
        .https(true)
        .tls_dir(dir.path())
        .start()
        .await
        .unwrap();
    // The server's own certificate is a valid identity that the server does not trust.
    let read = |name: &str| std::fs::read_to_string(dir.path().join(name)).unwrap();
    let endpoint = Endpoint::https(
        fake.https_url().unwrap(),
        read("server.crt"),
        read("server.key"),
        fake.server_cert_pem(),
    );
    let host = TestHost::new(Connection::builder(endpoint).build().unwrap());
    let result = call_with(&host, "incus_instance_list", json!({}), &ALL).await;
    assert_eq!(kind(&result), "discovery_failed", "{result}");
    assert_eq!(host.callbacks(), ["binding", "authorize"]);
    let journal = fake.journal();
    assert!(
        journal.iter().all(|entry| entry.path == "/1.0"),
        "only discovery: {journal:?}"
    );
}
