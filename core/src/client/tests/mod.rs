//! Client tests against the fake Incus (`fake-incus`): what each native call sends (seen in the
//! fake's journal) and what it returns. They are unit tests because the native calls are
//! crate-internal; the public surface (`Client::connect`, `Connection`) is also tested from
//! `core/tests/integration/client_connect.rs`.

use std::time::Duration;

use fake_incus::{FakeIncus, IncusLine, JournalEntry};
use serde_json::json;

use super::{Client, Connection, Endpoint, WaitOutcome};

mod exec;
mod faults;
mod mutations;
mod reads;

/// The project every test works in.
const PROJECT: &str = "default";

/// The Incus line these tests' answers were measured on (the real 6.0.4: a create of a taken
/// name fails in its operation, a wait answers a failure as an error).
const MEASURED: IncusLine = IncusLine::V6_0;

/// A fake Incus imitating [`MEASURED`] on its own Unix socket, HTTPS included.
async fn fake() -> FakeIncus {
    FakeIncus::builder()
        .incus_version(MEASURED)
        .https(true)
        .start()
        .await
        .expect("the fake starts")
}

/// A discovered client over the fake's Unix socket.
async fn unix_client(fake: &FakeIncus) -> Client {
    Client::connect(Connection::unix(fake.unix_socket()))
        .await
        .expect("discovery over the Unix socket")
}

/// A connection over the fake's HTTPS listener with its trusted client identity.
fn https_connection(fake: &FakeIncus) -> Connection {
    Connection::builder(https_endpoint(fake))
        .build()
        .expect("valid HTTPS connection")
}

fn https_endpoint(fake: &FakeIncus) -> Endpoint {
    Endpoint::https(
        fake.https_url().expect("HTTPS is on"),
        fake.client_cert_pem(),
        fake.client_key_pem(),
        fake.server_cert_pem(),
    )
}

/// The journal entries that are not websocket upgrades, after discovery.
fn requests(fake: &FakeIncus) -> Vec<JournalEntry> {
    fake.journal()
        .into_iter()
        .filter(|entry| !entry.websocket && entry.path != "/1.0")
        .collect()
}

/// The last non-websocket request the fake received.
fn last_request(fake: &FakeIncus) -> JournalEntry {
    requests(fake).pop().expect("a request reached the fake")
}

/// Creates and starts instance `name` from the fake's `busybox` image, waiting for it.
async fn running_instance(client: &Client, name: &str) {
    let body = json!({
        "name": name,
        "source": {"type": "image", "alias": "busybox"},
        "start": true,
    });
    let accepted = client
        .create_instance(PROJECT, &body)
        .await
        .expect("create accepted");
    finish(client, &accepted.id).await;
}

/// Waits for an operation to be final; panics otherwise.
async fn finish(client: &Client, id: &str) -> serde_json::Value {
    match client
        .get_operation_wait(PROJECT, id, 10)
        .await
        .expect("the wait answers")
    {
        WaitOutcome::Final(operation) => operation,
        other => panic!("operation {id} did not finish: {other:?}"),
    }
}

/// A short bound for tests that wait for a timeout.
const SHORT: Duration = Duration::from_millis(500);
