//! Faults: every failure says whether the request may have been sent, and nothing is resent.

use fake_incus::{Fault, Rule};

use super::*;
use crate::client::ClientError;

async fn client_with_timeout(fake: &FakeIncus, timeout: Duration) -> Client {
    let connection = Connection::builder(Endpoint::unix(fake.unix_socket()))
        .timeout(timeout)
        .build()
        .unwrap();
    Client::connect(connection).await.unwrap()
}

fn posts_to_instances(fake: &FakeIncus) -> usize {
    fake.requests("POST", "/1.0/instances").len()
}

fn create_body() -> serde_json::Value {
    json!({"name": "c1", "source": {"type": "image", "alias": "busybox"}})
}

/// A connection closed after Incus applied a create (CreateInstance): may have been sent, and
/// sent once only.
#[tokio::test(start_paused = true)]
async fn close_after_apply_may_have_been_sent_and_is_not_resent() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    let _rule = fake.add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::CloseAfterApply));
    let error = client
        .create_instance(PROJECT, &create_body())
        .await
        .unwrap_err();
    assert!(error.may_have_been_sent(), "{error:?}");
    assert!(matches!(error, ClientError::Transport { .. }), "{error:?}");
    assert_eq!(posts_to_instances(&fake), 1, "nothing is resent");
    assert!(requests(&fake).iter().any(|e| e.applied));
}

/// A connection closed before apply is indistinguishable for the client: conservatively
/// "may have been sent", and still sent once only.
#[tokio::test(start_paused = true)]
async fn close_before_apply_is_reported_conservatively_and_not_resent() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    let _rule = fake.add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::CloseBeforeApply));
    let error = client
        .create_instance(PROJECT, &create_body())
        .await
        .unwrap_err();
    assert!(error.may_have_been_sent(), "{error:?}");
    assert_eq!(posts_to_instances(&fake), 1, "nothing is resent");
}

/// A reset connection: may have been sent, never resent.
#[tokio::test(start_paused = true)]
async fn reset_is_a_transport_error_and_not_resent() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    let _rule = fake.add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::Reset));
    let error = client
        .create_instance(PROJECT, &create_body())
        .await
        .unwrap_err();
    assert!(error.may_have_been_sent(), "{error:?}");
    assert_eq!(posts_to_instances(&fake), 1);
}

/// A stalled answer (GetInstances) hits the connection timeout, after sending.
#[tokio::test(start_paused = true)]
async fn stalled_request_times_out_after_sending() {
    let fake = fake().await;
    let client = client_with_timeout(&fake, SHORT).await;
    let _rule = fake.add_rule(Rule::new("GET", "/1.0/instances").fault(Fault::Stall));
    let started = tokio::time::Instant::now();
    let error = client.get_instances(PROJECT).await.unwrap_err();
    assert!(
        matches!(
            error,
            ClientError::Timeout {
                may_have_been_sent: true,
                ..
            }
        ),
        "{error:?}"
    );
    assert!(started.elapsed() < SHORT * 4, "bounded by the timeout");
    assert_eq!(fake.requests("*", "/1.0/instances").len(), 1);
}

/// A delay longer than the timeout on a mutation: a timeout that may have been sent.
#[tokio::test(start_paused = true)]
async fn slow_mutation_times_out_as_maybe_sent() {
    let fake = fake().await;
    let client = client_with_timeout(&fake, SHORT).await;
    let _rule =
        fake.add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::Delay { ms: 2_000 }));
    let error = client
        .create_instance(PROJECT, &create_body())
        .await
        .unwrap_err();
    assert!(
        matches!(
            error,
            ClientError::Timeout {
                may_have_been_sent: true,
                ..
            }
        ),
        "{error:?}"
    );
    assert_eq!(posts_to_instances(&fake), 1);
}

/// A body that is not JSON is an invalid response (the request was sent).
#[tokio::test(start_paused = true)]
async fn garbage_body_is_an_invalid_response() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    let _rule = fake.add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::GarbageBody));
    let error = client
        .create_instance(PROJECT, &create_body())
        .await
        .unwrap_err();
    assert!(
        matches!(error, ClientError::InvalidResponse { .. }),
        "{error:?}"
    );
    assert!(error.may_have_been_sent());
}

/// A truncated body is never taken for an answer.
#[tokio::test(start_paused = true)]
async fn truncated_body_is_not_an_answer() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    let _rule = fake.add_rule(Rule::new("GET", "/1.0/instances").fault(Fault::TruncatedBody));
    let error = client.get_instances(PROJECT).await.unwrap_err();
    assert!(
        matches!(
            error,
            ClientError::Transport { .. } | ClientError::InvalidResponse { .. }
        ),
        "{error:?}"
    );
    assert!(error.may_have_been_sent());
}

/// A native error injected by the fake comes back unchanged.
#[tokio::test(start_paused = true)]
async fn native_error_keeps_status_code_and_message() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    let _rule = fake.add_rule(Rule::new("GET", "/1.0/networks").fault(Fault::Error {
        status: 503,
        message: "maintenance".into(),
    }));
    match client.get_networks(PROJECT).await {
        Err(ClientError::Native {
            http_status,
            error_code,
            message,
        }) => assert_eq!(
            (http_status, error_code, message.as_str()),
            (503, 503, "maintenance")
        ),
        other => panic!("unexpected {other:?}"),
    }
}

/// A missing socket fails to connect: nothing was sent.
#[tokio::test(start_paused = true)]
async fn missing_socket_is_a_connect_error_that_sent_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let error = Client::connect(Connection::unix(dir.path().join("absent.socket")))
        .await
        .unwrap_err();
    assert!(matches!(error, ClientError::Connect { .. }), "{error:?}");
    assert!(!error.may_have_been_sent());
}

/// An answer larger than `max_stream_bytes` is refused instead of being buffered.
#[tokio::test(start_paused = true)]
async fn response_over_max_stream_bytes_is_refused() {
    let fake = fake().await;
    let client = unix_client(&fake).await;
    running_instance(&client, "c1").await;
    let etag = client
        .get_instance(PROJECT, "c1")
        .await
        .unwrap()
        .etag
        .unwrap();
    let big = json!({"description": "x".repeat(70 * 1024)});
    client
        .patch_instance(PROJECT, "c1", &big, &etag)
        .await
        .unwrap();
    let small = Connection::builder(Endpoint::unix(fake.unix_socket()))
        .max_stream_bytes(64 * 1024)
        .build()
        .unwrap();
    let bounded = Client::connect(small).await.unwrap();
    let error = bounded.get_instance(PROJECT, "c1").await.unwrap_err();
    assert!(
        matches!(error, ClientError::ResponseTooLarge { limit: 65_536 }),
        "{error:?}"
    );
}

/// Over mutual TLS too, a connection closed after apply may have been sent and is not resent.
#[tokio::test(start_paused = true)]
async fn close_after_apply_over_https_may_have_been_sent() {
    let fake = fake().await;
    let client = Client::connect(https_connection(&fake)).await.unwrap();
    let _rule = fake.add_rule(Rule::new("POST", "/1.0/instances").fault(Fault::CloseAfterApply));
    let error = client
        .create_instance(PROJECT, &create_body())
        .await
        .unwrap_err();
    assert!(error.may_have_been_sent(), "{error:?}");
    assert_eq!(posts_to_instances(&fake), 1);
}
