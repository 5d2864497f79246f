//! The public client surface: `Connection` and `Client::connect` (discovery, `helper:connect`)
//! over the fake Incus's Unix socket and mutual-TLS listener.

use std::time::Duration;

use fake_incus::FakeIncus;
use incus_operations::{Client, ClientError, Connection, ConnectionError, Endpoint};

async fn fake() -> FakeIncus {
    FakeIncus::builder()
        .https(true)
        .start()
        .await
        .expect("the fake starts")
}

fn https(fake: &FakeIncus, cert: String, key: String, pinned: String) -> Connection {
    Connection::builder(Endpoint::https(
        fake.https_url().expect("HTTPS is on"),
        cert,
        key,
        pinned,
    ))
    .build()
    .expect("valid credentials")
}

#[tokio::test]
async fn discovery_over_unix_requires_and_keeps_the_trusted_server() {
    let fake = fake().await;
    let client = Client::connect(Connection::unix(fake.unix_socket()))
        .await
        .unwrap();
    assert_eq!(client.server()["auth"], "trusted");
    assert!(client.server()["api_extensions"].is_array());
    let journal = fake.journal();
    assert_eq!(journal.len(), 1);
    assert_eq!(
        (journal[0].method.as_str(), journal[0].path.as_str()),
        ("GET", "/1.0")
    );
}

#[tokio::test]
async fn discovery_over_mutual_https_with_a_trusted_certificate() {
    let fake = fake().await;
    let connection = https(
        &fake,
        fake.client_cert_pem(),
        fake.client_key_pem(),
        fake.server_cert_pem(),
    );
    let client = Client::connect(connection).await.unwrap();
    assert_eq!(client.server()["auth"], "trusted");
    assert_eq!(client.server()["auth_user_method"], "tls");
    let journal = fake.journal();
    assert_eq!(journal.len(), 1);
    assert!(journal[0].trusted);
    assert!(
        journal[0].cert_fingerprint.is_some(),
        "the client presented its certificate"
    );
}

#[tokio::test]
async fn discovery_refuses_an_untrusted_client_certificate() {
    let fake = fake().await;
    let other = fake_incus_with_other_identity().await;
    let connection = https(
        &fake,
        other.client_cert_pem(),
        other.client_key_pem(),
        fake.server_cert_pem(),
    );
    let error = Client::connect(connection).await.unwrap_err();
    match &error {
        ClientError::Untrusted { auth } => assert_eq!(auth, "untrusted"),
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(fake.journal().len(), 1, "only GET /1.0 was sent");
}

#[tokio::test]
async fn pinned_certificate_mismatch_fails_the_handshake_and_sends_nothing() {
    let fake = fake().await;
    let other = fake_incus_with_other_identity().await;
    let connection = https(
        &fake,
        fake.client_cert_pem(),
        fake.client_key_pem(),
        other.server_cert_pem(),
    );
    let error = Client::connect(connection).await.unwrap_err();
    assert!(matches!(error, ClientError::Tls { .. }), "{error:?}");
    assert!(!error.may_have_been_sent());
    assert!(fake.journal().is_empty(), "no request reached Incus");
}

#[tokio::test]
async fn discovery_that_stalls_times_out() {
    let fake = fake().await;
    let _rule = fake.add_rule(fake_incus::Rule::new("GET", "/1.0").fault(fake_incus::Fault::Stall));
    let connection = Connection::builder(Endpoint::unix(fake.unix_socket()))
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let error = Client::connect(connection).await.unwrap_err();
    assert!(matches!(error, ClientError::Timeout { .. }), "{error:?}");
}

#[tokio::test]
async fn tls_handshake_that_never_completes_times_out_without_sending() {
    let fake = fake().await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let silent = tokio::spawn(async move {
        let (socket, _) = listener.accept().await.unwrap();
        // Hold the connection open without ever answering the TLS handshake.
        std::future::pending::<()>().await;
        drop(socket);
    });
    let connection = Connection::builder(Endpoint::https(
        format!("https://{address}"),
        fake.client_cert_pem(),
        fake.client_key_pem(),
        fake.server_cert_pem(),
    ))
    .timeout(Duration::from_millis(300))
    .build()
    .unwrap();
    let error = Client::connect(connection).await.unwrap_err();
    silent.abort();
    assert!(
        matches!(
            error,
            ClientError::Timeout {
                may_have_been_sent: false,
                ..
            }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn connection_refused_is_a_connect_error_that_sent_nothing() {
    let fake = fake().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    drop(listener);
    let connection = Connection::builder(Endpoint::https(
        format!("https://{address}"),
        fake.client_cert_pem(),
        fake.client_key_pem(),
        fake.server_cert_pem(),
    ))
    .build()
    .unwrap();
    let error = Client::connect(connection).await.unwrap_err();
    assert!(matches!(error, ClientError::Connect { .. }), "{error:?}");
    assert!(!error.may_have_been_sent());
}

#[tokio::test]
async fn connection_refuses_bad_credentials_before_any_request() {
    let endpoint = Endpoint::https("https://127.0.0.1:1", "not a pem", "not a pem", "not a pem");
    let error = Connection::builder(endpoint).build().unwrap_err();
    assert!(
        matches!(error, ConnectionError::InvalidPem { .. }),
        "{error}"
    );
    let endpoint = Endpoint::https("http://127.0.0.1:1", "", "", "");
    let error = Connection::builder(endpoint).build().unwrap_err();
    assert!(
        matches!(error, ConnectionError::InvalidUrl { .. }),
        "{error}"
    );
}

/// A second fake, whose server and client identities the first one does not know.
async fn fake_incus_with_other_identity() -> FakeIncus {
    fake().await
}
