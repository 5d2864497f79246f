//! The messages of `incus-operations-adapter/1`, one JSON Schema each in
//! `conformance/adapter-protocol/`.
//!
//! Per call the harness sends a [`CallRequest`]; the implementation answers with the operation's
//! result object and nothing else (or, when it cannot read the request at all, an
//! [`AdapterError`] object).

use std::path::PathBuf;

use incus_operations::Endpoint;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::scenario::host::{ConnectionLimits, HostBehaviour};

/// The protocol name and version every request carries.
pub const PROTOCOL: &str = "incus-operations-adapter/1";

/// One call of one operation, as the harness sends it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallRequest {
    /// Always [`PROTOCOL`].
    pub protocol: String,
    /// The operation's name (any string: an unknown name is a valid test).
    pub operation: String,
    /// The operation's input (any JSON value: malformed input is a valid test).
    pub input: Value,
    /// The caller's verified scopes; strings that name no scope grant nothing.
    pub scopes: Vec<String>,
    /// The caller's identity, as the host knows it.
    pub caller: String,
    /// The Incus the implementation must use for this call.
    pub backend: Backend,
    /// What the implementation's host does when the operation calls back into it.
    pub host: HostBehaviour,
}

/// The Incus the call must reach, and the bounds of the connection: exactly one of
/// `unix_socket` and `https`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Backend {
    /// The path of the Incus Unix socket (trusted, as on the Incus host).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unix_socket: Option<PathBuf>,
    /// Incus over HTTPS with mutual TLS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub https: Option<HttpsBackend>,
    /// The bounds of the connection (absent ones: the implementation's defaults).
    #[serde(flatten)]
    pub limits: ConnectionLimits,
}

/// Incus over HTTPS: the client presents its certificate, the server certificate is pinned.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpsBackend {
    /// `https://HOST:PORT`.
    pub url: String,
    /// The client certificate, PEM.
    pub client_cert: String,
    /// The client certificate's private key, PEM.
    pub client_key: String,
    /// The server certificate to pin, PEM.
    pub server_cert: String,
}

impl Backend {
    /// The core's endpoint for this backend.
    pub fn endpoint(&self) -> Result<Endpoint, String> {
        match (&self.unix_socket, &self.https) {
            (Some(socket), None) => Ok(Endpoint::unix(socket)),
            (None, Some(https)) => Ok(Endpoint::https(
                &https.url,
                &https.client_cert,
                &https.client_key,
                &https.server_cert,
            )),
            _ => Err("the backend names neither or both of unix_socket and https".into()),
        }
    }
}

/// The answer of an adapter that could not read a request (never an operation's result).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdapterError {
    /// Why, in a sentence.
    pub adapter_error: String,
}

/// The field that marks an [`AdapterError`] answer.
pub const ADAPTER_ERROR: &str = "adapter_error";
