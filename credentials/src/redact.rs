//! Which values in Incus's answers are credentials, each replaced by the one marker [`REDACTED`].
//!
//! Incus 6.0.4 marks no configuration key as hidden (its config schema,
//! `internal/server/config/schema.go`, has no such attribute, and `GET /1.0` dumps every key
//! that is set, `loki.auth.password` included, as the daemon shows). The lists below are read
//! from the schemas and the code that creates the values, key by key:
//!
//! - server configuration (`internal/server/cluster/config/config.go`, `ConfigSchema`): the keys
//!   whose value is a credential ([`SERVER_CREDENTIAL_KEYS`]), and the URL keys whose value may
//!   carry `user:password@` ([`SERVER_URL_KEYS`]; redacted when it does). The member keys
//!   (`internal/server/node/config.go`) are addresses and paths only;
//! - network configuration: `bgp.peers.<peer>.password`, the one credential among the network
//!   drivers' keys (`internal/server/network/driver_common.go`, `bgpValidationRules`);
//! - operation metadata ([`OPERATION_SECRET_KEYS`]): `secret`, the token of trust tokens
//!   (`cmd/incusd/certificates.go`), cluster-join tokens (`cmd/incusd/api_cluster.go`) and image
//!   tokens (`cmd/incusd/images.go`); `fds`, the websocket secrets of exec and console sessions
//!   (`cmd/incusd/instance_exec.go`, `instance_console.go`); `control`, `fs` and `criu`, the
//!   websocket secrets of migrations (`shared/api/migration.go`, `cmd/incusd/migrate.go`).
//!
//! Every function changes a value in place, keeps its structure, and returns whether it replaced
//! anything; a second pass replaces nothing.
use serde_json::Value;

/// The value every credential is replaced by, wherever a result would carry it.
pub const REDACTED: &str = "[redacted]";

/// Server configuration keys whose value is a credential (Incus 6.0.4,
/// `internal/server/cluster/config/config.go`): the Loki password, the OpenFGA API token, the OVN
/// client private key, and the ACME DNS provider's environment (its API credentials).
pub const SERVER_CREDENTIAL_KEYS: &[&str] = &[
    "loki.auth.password",
    "openfga.api.token",
    "network.ovn.client_key",
    "acme.provider.environment",
];

/// Server configuration keys whose value is a URL, redacted when it carries `user:password@`.
pub const SERVER_URL_KEYS: &[&str] = &[
    "core.proxy_http",
    "core.proxy_https",
    "loki.api.url",
    "openfga.api.url",
];

/// Network configuration keys `bgp.peers.<peer>.password`: this prefix, one peer name, this suffix.
const BGP_PEER_PREFIX: &str = "bgp.peers.";
const BGP_PASSWORD_SUFFIX: &str = ".password";

/// Operation metadata keys whose value is a secret (every string inside it is redacted).
pub const OPERATION_SECRET_KEYS: &[&str] = &["secret", "fds", "control", "fs", "criu"];

/// The server object (`GET /1.0`): its credential keys, and URL keys that carry a password.
/// Returns whether anything was replaced.
///
/// ```
/// use incus_credentials::redact::{self, REDACTED};
/// let mut server = serde_json::json!({"config": {
///     "loki.auth.password": "s3cret",
///     "core.proxy_http": "http://user:pw@proxy:3128",
///     "core.https_address": "127.0.0.1:8443",
/// }});
/// assert!(redact::server(&mut server));
/// assert_eq!(server["config"]["loki.auth.password"], REDACTED);
/// assert_eq!(server["config"]["core.proxy_http"], REDACTED);
/// assert_eq!(server["config"]["core.https_address"], "127.0.0.1:8443");
/// ```
pub fn server(object: &mut Value) -> bool {
    config_entries(object, |key, value| {
        SERVER_CREDENTIAL_KEYS.contains(&key)
            || (SERVER_URL_KEYS.contains(&key) && value.as_str().is_some_and(has_userinfo))
    })
}

/// A network object: its `bgp.peers.<peer>.password` keys. Returns whether anything was
/// replaced.
///
/// ```
/// use incus_credentials::redact::{self, REDACTED};
/// let mut network = serde_json::json!({"name": "br0", "config": {
///     "bgp.peers.r1.password": "pw", "bgp.peers.r1.address": "10.0.0.1",
/// }});
/// assert!(redact::network(&mut network));
/// assert_eq!(network["config"]["bgp.peers.r1.password"], REDACTED);
/// assert_eq!(network["config"]["bgp.peers.r1.address"], "10.0.0.1");
/// ```
pub fn network(object: &mut Value) -> bool {
    config_entries(object, |key, _| is_bgp_password(key))
}

/// An operation object: the secrets of its metadata (the strings under
/// [`OPERATION_SECRET_KEYS`], their structure kept). Returns whether anything was replaced.
///
/// ```
/// use incus_credentials::redact::{self, REDACTED};
/// let mut exec = serde_json::json!({"class": "websocket", "metadata": {
///     "fds": {"0": "a1b2", "control": "c3d4"}, "interactive": true,
/// }});
/// assert!(redact::operation(&mut exec));
/// assert_eq!(exec["metadata"]["fds"], serde_json::json!({"0": REDACTED, "control": REDACTED}));
/// ```
pub fn operation(object: &mut Value) -> bool {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return false;
    };
    let mut changed = false;
    for (key, value) in metadata.iter_mut() {
        if OPERATION_SECRET_KEYS.contains(&key.as_str()) {
            changed |= strings(value);
        }
    }
    changed
}

/// Replaces `config` entries chosen by `secret(key, value)`.
fn config_entries(object: &mut Value, secret: impl Fn(&str, &Value) -> bool) -> bool {
    let Some(config) = object.get_mut("config").and_then(Value::as_object_mut) else {
        return false;
    };
    let mut changed = false;
    for (key, value) in config.iter_mut() {
        if secret(key, value) && value.as_str() != Some(REDACTED) {
            *value = Value::String(REDACTED.to_owned());
            changed = true;
        }
    }
    changed
}

/// Replaces every string (and number) inside `value`, keeping its structure (the names of an
/// exec's websockets stay, their secrets go).
fn strings(value: &mut Value) -> bool {
    match value {
        Value::String(text) if text == REDACTED => false,
        Value::String(_) | Value::Number(_) => {
            *value = Value::String(REDACTED.to_owned());
            true
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |changed, item| strings(item) | changed),
        Value::Object(fields) => fields
            .values_mut()
            .fold(false, |changed, item| strings(item) | changed),
        Value::Null | Value::Bool(_) => false,
    }
}

fn is_bgp_password(key: &str) -> bool {
    key.strip_prefix(BGP_PEER_PREFIX)
        .and_then(|rest| rest.strip_suffix(BGP_PASSWORD_SUFFIX))
        .is_some_and(|peer| !peer.is_empty() && !peer.contains('.'))
}

/// Whether a URL names a user (`scheme://user[:password]@host`).
fn has_userinfo(url: &str) -> bool {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
    authority.contains('@')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn server_credential_keys_are_replaced_and_other_keys_kept() {
        let mut object = json!({"config": {
            "loki.auth.password": "s3cret", "openfga.api.token": "tok",
            "network.ovn.client_key": "-----BEGIN EC PRIVATE KEY-----",
            "acme.provider.environment": "CLOUDFLARE_DNS_API_TOKEN=abc",
            "loki.auth.username": "incus", "core.https_address": "127.0.0.1:8443",
            "user.note": "kept"
        }, "environment": {"server_version": "6.0.4"}});
        assert!(server(&mut object));
        let config = &object["config"];
        for key in SERVER_CREDENTIAL_KEYS {
            assert_eq!(config[key], REDACTED, "{key}");
        }
        assert_eq!(config["loki.auth.username"], "incus");
        assert_eq!(config["core.https_address"], "127.0.0.1:8443");
        assert_eq!(config["user.note"], "kept");
        assert_eq!(object["environment"]["server_version"], "6.0.4");
    }

    #[test]
    fn server_urls_are_replaced_only_when_they_carry_a_user() {
        let mut object = json!({"config": {
            "core.proxy_http": "http://u:pw@proxy:3128",
            "core.proxy_https": "http://proxy:3128/a@b",
            "loki.api.url": "https://user@loki.example",
            "openfga.api.url": "https://openfga.example"
        }});
        server(&mut object);
        assert_eq!(object["config"]["core.proxy_http"], REDACTED);
        assert_eq!(
            object["config"]["core.proxy_https"],
            "http://proxy:3128/a@b"
        );
        assert_eq!(object["config"]["loki.api.url"], REDACTED);
        assert_eq!(
            object["config"]["openfga.api.url"],
            "https://openfga.example"
        );
    }

    #[test]
    fn network_bgp_peer_passwords_are_replaced() {
        let mut net = json!({"name": "br0", "config": {
            "bgp.peers.r1.password": "pw", "bgp.peers.r1.address": "10.0.0.1",
            "bgp.peers.password": "not a peer key", "ipv4.address": "10.0.0.1/24"
        }});
        assert!(network(&mut net));
        assert_eq!(net["config"]["bgp.peers.r1.password"], REDACTED);
        assert_eq!(net["config"]["bgp.peers.r1.address"], "10.0.0.1");
        assert_eq!(net["config"]["bgp.peers.password"], "not a peer key");
        assert_eq!(net["config"]["ipv4.address"], "10.0.0.1/24");
        assert!(!network(&mut net), "a second pass changes nothing");
    }

    #[test]
    fn operation_secrets_are_replaced_and_their_shape_kept() {
        let mut token = json!({"class": "token", "metadata": {
            "secret": "8fffd4c5", "fingerprint": "018c2fbf", "addresses": ["127.0.0.1:8443"],
            "request": {"name": "agent", "token": true}
        }});
        assert!(operation(&mut token));
        assert_eq!(token["metadata"]["secret"], REDACTED);
        assert_eq!(token["metadata"]["fingerprint"], "018c2fbf");
        assert_eq!(token["metadata"]["request"]["name"], "agent");

        let mut exec = json!({"class": "websocket", "metadata": {
            "command": ["sh"], "fds": {"0": "a1", "control": "c1"}, "interactive": true
        }});
        operation(&mut exec);
        assert_eq!(
            exec["metadata"]["fds"],
            json!({"0": REDACTED, "control": REDACTED})
        );
        assert_eq!(exec["metadata"]["command"], json!(["sh"]));

        let mut migration = json!({"metadata": {"control": "x", "fs": "y", "criu": "z"}});
        operation(&mut migration);
        assert_eq!(
            migration["metadata"],
            json!({"control": REDACTED, "fs": REDACTED, "criu": REDACTED})
        );
        let mut plain = json!({"metadata": {"return": 0}});
        assert!(!operation(&mut plain));
        assert!(!operation(&mut json!({"metadata": null})));
    }
}
