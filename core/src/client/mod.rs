//! The Incus client every operation runs through.
//!
//! One file per resource, as in the Incus Go client, each a set of thin methods over the
//! helpers of [`query`]: `query` (any envelope plus ETag), `query_value`/`query_list` (a sync
//! payload) and `query_operation` (the operation of a 202). Native data is returned unchanged
//! as [`serde_json::Value`]. Every method takes the Incus project explicitly.
//!
//! Requests are never retried or resent: each one uses a fresh connection and one connection
//! attempt, and every failure says whether the request may have reached Incus
//! ([`ClientError::may_have_been_sent`]).

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

mod connection;
mod error;
mod exec;
mod images;
mod instances;
mod networks;
mod operations;
mod profiles;
mod projects;
mod query;
mod server;
mod snapshots;
mod state;
mod storage;
mod tls;
mod transport;

#[cfg(test)]
mod tests;

pub use connection::{
    Connection, ConnectionBuilder, Endpoint, DEFAULT_MAX_STREAM_BYTES, DEFAULT_STREAM_TIMEOUT,
    DEFAULT_TIMEOUT,
};
pub use error::{ClientError, ConnectionError};
pub(crate) use exec::{ExecOutcome, ExecRequest, StreamCapture, StreamEnd};
#[cfg(test)]
pub(crate) use exec::{ExecStatus, CAPTURE_BYTES};
pub(crate) use operations::{is_final, WaitOutcome};
pub(crate) use query::{json_len, Accepted, ListItem, Single};
pub use tls::client_config as tls_client_config;

/// The kill grace of exec: after `SIGKILL`, collection has this long to observe the exit.
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(5);

/// A discovered Incus server that trusts this client.
///
/// Built only by [`Client::connect`], which checks that the server reports
/// `auth: "trusted"`. It keeps the server object of that discovery.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let fake = fake_incus::FakeIncus::builder().start().await?;
/// # let socket = fake.unix_socket().to_path_buf(); // on a host: "/var/lib/incus/unix.socket"
/// use incus_operations::{Client, Connection};
///
/// let client = Client::connect(Connection::unix(socket)).await?;
/// println!("Incus {}", client.server()["environment"]["server_version"]);
/// # assert_eq!(client.server()["auth"], "trusted");
/// # Ok(())
/// # }
/// ```
///
/// Cloning is cheap (the server object is shared, not copied), so a host may hand every call a
/// clone of one discovered client.
#[derive(Clone, Debug)]
pub struct Client {
    connection: Connection,
    /// Shared: a deep copy of the server object (its API extensions alone are hundreds of
    /// strings) on every clone cost more than a whole inspection operation's checks.
    server: Arc<Value>,
}

impl Client {
    /// The server object (`GET /1.0` metadata) seen at discovery, unchanged.
    pub fn server(&self) -> &Value {
        &self.server
    }

    /// The connection this client was discovered over.
    pub fn connection(&self) -> &Connection {
        &self.connection
    }
}

/// The server-side wait in seconds: `min(wait_seconds, floor(timeout_ms / 1000) - 1)`, never
/// negative, so that the wait always ends before the request's own timeout.
pub(crate) fn effective_wait(wait_seconds: u64, timeout: Duration) -> u64 {
    let whole_seconds = u64::try_from(timeout.as_millis() / 1000).unwrap_or(u64::MAX);
    wait_seconds.min(whole_seconds.saturating_sub(1))
}

/// The exec duration bound in seconds: the requested one, capped at `stream_timeout` minus the
/// kill grace.
pub(crate) fn exec_duration_cap(timeout_seconds: u64, stream_timeout: Duration) -> u64 {
    let cap = stream_timeout.saturating_sub(KILL_GRACE).as_secs();
    timeout_seconds.min(cap)
}

/// The exec stream total: 64 MiB, or half the connection's `max_stream_bytes` if smaller.
pub(crate) fn exec_stream_total(max_stream_bytes: u64) -> u64 {
    (64 * 1024 * 1024).min(max_stream_bytes / 2)
}

#[cfg(test)]
mod bound_tests {
    //! What goes here: tests of this module on its own (the Incus client every operation runs
    //! through); a promise of the whole `run()` or of the client against a fake Incus, seen through
    //! the public API, goes in `tests/integration`.

    use super::*;

    #[test]
    fn effective_wait_leaves_one_second_of_the_timeout() {
        assert_eq!(effective_wait(10, Duration::from_secs(30)), 10);
        assert_eq!(effective_wait(60, Duration::from_secs(30)), 29);
        assert_eq!(effective_wait(60, Duration::from_millis(61_999)), 60);
        assert_eq!(effective_wait(60, Duration::from_millis(1_999)), 0);
        assert_eq!(effective_wait(5, Duration::from_millis(500)), 0);
    }

    #[test]
    fn exec_duration_is_capped_at_stream_timeout_minus_grace() {
        assert_eq!(exec_duration_cap(30, Duration::from_secs(65)), 30);
        assert_eq!(exec_duration_cap(300, Duration::from_secs(65)), 60);
        assert_eq!(exec_duration_cap(300, Duration::from_millis(6_500)), 1);
    }

    #[test]
    fn exec_stream_total_is_64_mib_or_half_the_stream_bound() {
        assert_eq!(
            exec_stream_total(DEFAULT_MAX_STREAM_BYTES),
            64 * 1024 * 1024
        );
        assert_eq!(exec_stream_total(1024 * 1024), 512 * 1024);
    }
}
