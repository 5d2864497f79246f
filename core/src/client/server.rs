//! Discovery (Go: `ConnectIncus` + `GetServer`): `GET /1.0`, which must report
//! `auth: "trusted"`. The Go client accepts untrusted answers; this client refuses them.

use std::sync::Arc;

use http::Method;
use serde_json::Value;

use super::error::ClientError;
use super::query::{target, Envelope};
use super::{Client, Connection};

impl Client {
    /// Discovers the server behind `connection`: `GET /1.0`, bounded by the connection's
    /// timeout, and requires `auth == "trusted"`.
    ///
    /// Fails with [`ClientError::Untrusted`] when the server answers but does not trust this
    /// client (for example an HTTPS client certificate missing from its trust store).
    pub async fn connect(connection: Connection) -> Result<Client, ClientError> {
        let mut client = Client {
            connection,
            server: Arc::new(Value::Null),
        };
        let reply = client
            .query(Method::GET, target(&["1.0"], &[]), None, None)
            .await?;
        let Envelope::Sync(server) = reply.envelope else {
            return Err(ClientError::invalid_response(
                "GET /1.0 did not answer a sync response",
            ));
        };
        let auth = server.get("auth").and_then(Value::as_str).unwrap_or("");
        if auth != "trusted" {
            return Err(ClientError::Untrusted {
                auth: auth.to_owned(),
            });
        }
        tracing::debug!("discovered a trusting Incus server");
        client.server = Arc::new(server);
        Ok(client)
    }
}
