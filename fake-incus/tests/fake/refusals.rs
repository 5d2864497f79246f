//! The endpoints the fake answers only as the daemon does when it cannot or will not do the
//! work. Expected answers were taken from a real standalone Incus 6.0.4 over its Unix socket.

use crate::common::{call, launch, wait};
use fake_incus::{assert_native_error, FakeIncus};
use serde_json::{json, Value};

async fn fake() -> FakeIncus {
    crate::common::builder().start().await.expect("fake starts")
}

const BUSYBOX: &str = "/1.0/images/aliases/busybox";

async fn busybox_fingerprint(fake: &FakeIncus) -> String {
    let alias = call(fake, "GET", BUSYBOX, None).await;
    alias.metadata()["target"]
        .as_str()
        .expect("the busybox alias")
        .to_string()
}

#[tokio::test]
async fn instance_access_on_a_standalone_server_is_null_whatever_the_name() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    for name in ["c1", "nope"] {
        let reply = call(&fake, "GET", &format!("/1.0/instances/{name}/access"), None).await;
        assert_eq!(
            (reply.status(), &reply.json()["type"], reply.metadata()),
            (200, &json!("sync"), &Value::Null)
        );
    }
}

#[tokio::test]
async fn a_memory_dump_is_refused_for_a_container_a_stopped_vm_and_a_missing_instance() {
    let fake = fake().await;
    launch(&fake, "c1", true).await;
    assert_native_error(
        &call(
            &fake,
            "GET",
            "/1.0/instances/c1/debug/memory?format=elf",
            None,
        )
        .await,
        400,
        "Memory dumps are only supported for virtual machines",
    );
    assert_native_error(
        &call(&fake, "GET", "/1.0/instances/nope/debug/memory", None).await,
        404,
        "Failed to fetch instance \"nope\" in project \"default\": Instance not found",
    );
    let vm = call(
        &fake,
        "POST",
        "/1.0/instances",
        Some(json!({"name": "v1", "type": "virtual-machine", "source": {"type": "none"}})),
    )
    .await;
    wait(&fake, &vm).await;
    assert_native_error(
        &call(&fake, "GET", "/1.0/instances/v1/debug/memory", None).await,
        400,
        "Instance must be running to dump memory",
    );
}

#[tokio::test]
async fn an_image_push_answers_as_an_unreachable_target() {
    let fake = fake().await;
    let fingerprint = busybox_fingerprint(&fake).await;
    let export = format!("/1.0/images/{fingerprint}/export");
    for (target, error) in [
        (
            "https://127.0.0.1:1",
            "Get \"https://127.0.0.1:1/1.0\": Unable to connect to: 127.0.0.1:1 ([dial tcp 127.0.0.1:1: connect: connection refused])",
        ),
        (
            "https://127.0.0.1",
            "Get \"https://127.0.0.1/1.0\": Unable to connect to: 127.0.0.1:443 ([dial tcp 127.0.0.1:443: connect: connection refused])",
        ),
        (
            "https://[::1]:1",
            "Get \"https://[::1]:1/1.0\": Unable to connect to: [::1]:1 ([dial tcp [::1]:1: connect: connection refused])",
        ),
        (
            "127.0.0.1:1",
            "parse \"127.0.0.1:1\": first path segment in URL cannot contain colon",
        ),
        ("", "Get \"/1.0\": unsupported protocol scheme \"\""),
    ] {
        let body = json!({"target": target, "secret": "x", "aliases": [{"name": "a"}]});
        assert_native_error(&call(&fake, "POST", &export, Some(body)).await, 500, error);
    }
    assert_native_error(
        &call(
            &fake,
            "POST",
            "/1.0/images/nope/export",
            Some(json!({"target": "https://127.0.0.1:1"})),
        )
        .await,
        404,
        "Image not found",
    );
}

const CERTIFICATE: &str =
    "-----BEGIN CERTIFICATE-----\nMIIBdTCCARugAwIBAgIU\n-----END CERTIFICATE-----\n";
const KEY: &str = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49\n-----END PRIVATE KEY-----\n";

#[tokio::test]
async fn replacing_the_cluster_certificate_of_a_standalone_server_finds_none_to_replace() {
    let fake = fake().await;
    for (body, status, error) in [
        (
            json!({"cluster_certificate": "x", "cluster_certificate_key": "y"}),
            400,
            "Certificate must be base64 encoded PEM certificate: %!w(<nil>)",
        ),
        (
            json!({"cluster_certificate": CERTIFICATE, "cluster_certificate_key": "bad"}),
            400,
            "Private key must be base64 encoded PEM key: %!w(<nil>)",
        ),
        (
            json!({"cluster_certificate": CERTIFICATE, "cluster_certificate_key": KEY}),
            404,
            "open /var/lib/incus/cluster.crt: no such file or directory",
        ),
    ] {
        assert_native_error(
            &call(&fake, "PUT", "/1.0/cluster/certificate", Some(body)).await,
            status,
            error,
        );
    }
}
