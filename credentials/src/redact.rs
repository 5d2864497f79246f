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
//!   Incus 7.0 adds two credentials (`instances.tpm.platform_key`,
//!   `storage.linstor.client_key`) and one URL (`storage.linstor.controller_connection`), and its
//!   logging targets (`logging.<name>.target.*`, `server_logging` and `server_logging_webhook`)
//!   take a password ([`is_logging_password`]) and a URL (`target.address`);
//! - network configuration: `bgp.peers.<peer>.password`, the one credential among the network
//!   drivers' keys (`internal/server/network/driver_common.go`, `bgpValidationRules`);
//! - storage pool configuration: `truenas.api_key` (Incus 7.0's TrueNAS driver,
//!   `internal/server/storage/drivers/driver_truenas.go`); 6.0.4's drivers have no credential key;
//! - operation metadata ([`OPERATION_SECRET_KEYS`]): `secret`, the token of trust tokens
//!   (`cmd/incusd/certificates.go`), cluster-join tokens (`cmd/incusd/api_cluster.go`) and image
//!   tokens (`cmd/incusd/images.go`); `fds`, the websocket secrets of exec and console sessions
//!   (`cmd/incusd/instance_exec.go`, `instance_console.go`); `control`, `fs` and `criu`, the
//!   websocket secrets of migrations (`shared/api/migration.go`, `cmd/incusd/migrate.go`); and the
//!   values of an exec session's `environment` (`cmd/incusd/instance_exec.go` stores the request's
//!   environment, tokens an operator passed to the command included, in the operation);
//! - instance, snapshot and profile configuration ([`guest_data`]): the values of `environment.*`,
//!   of the cloud-init data keys ([`GUEST_DATA_KEYS`]) and of the credentials handed to the guest
//!   ([`GUEST_CREDENTIAL_PREFIXES`]: `smbios11.*`, 7.0's `systemd.credential.*` and
//!   `systemd.credential-binary.*`), which hold what the guest is given (passwords, tokens, keys).
//!   Unlike the others, these are the guest's own: whoever can run a command in the guest reads
//!   them there, so a caller may be shown them (the core shows them to callers with `incus.exec`
//!   only);
//! - image objects ([`image`]): the server URL of a cached image's `update_source`, which Incus
//!   keeps as the image was fetched (`cmd/incusd/daemon_images.go`, `CreateImageSource`), with the
//!   image server's `user:password@` when it had one.
//!
//! A URL is treated as carrying credentials whenever its text holds `@` (see [`url_userinfo`]).
//!
//! Every function changes a value in place, keeps its structure, and returns whether it replaced
//! anything; a second pass replaces nothing.
use serde_json::Value;

/// The value every credential is replaced by, wherever a result would carry it.
pub const REDACTED: &str = "[redacted]";

/// Server configuration keys whose value is a credential (`internal/server/cluster/config/config.go`):
/// the Loki password, the OpenFGA API token, the OVN client private key, and the ACME DNS
/// provider's environment (its API credentials) in Incus 6.0.4; the TPM platform private key and
/// the LINSTOR client private key in Incus 7.0.
pub const SERVER_CREDENTIAL_KEYS: &[&str] = &[
    "loki.auth.password",
    "openfga.api.token",
    "network.ovn.client_key",
    "acme.provider.environment",
    "instances.tpm.platform_key",
    "storage.linstor.client_key",
];

/// Server configuration keys whose value is a URL, redacted whole when it may carry
/// `user:password@` (see [`url_userinfo`]); `storage.linstor.controller_connection` is Incus 7.0's.
pub const SERVER_URL_KEYS: &[&str] = &[
    "core.proxy_http",
    "core.proxy_https",
    "loki.api.url",
    "openfga.api.url",
    "storage.linstor.controller_connection",
];

/// Storage pool configuration keys whose value is a credential: Incus 7.0's TrueNAS API key.
pub const STORAGE_POOL_CREDENTIAL_KEYS: &[&str] = &["truenas.api_key"];

/// Instance and profile configuration keys whose value is data handed to the guest (cloud-init's
/// user, vendor and network data, and their `user.*` spellings), besides every `environment.*`
/// key ([`GUEST_ENVIRONMENT_PREFIX`]).
pub const GUEST_DATA_KEYS: &[&str] = &[
    "cloud-init.user-data",
    "cloud-init.vendor-data",
    "cloud-init.network-config",
    "user.user-data",
    "user.vendor-data",
    "user.network-config",
    "user.meta-data",
];

/// The prefix of the instance and profile configuration keys that set an environment variable of
/// the guest's init and of every exec session.
pub const GUEST_ENVIRONMENT_PREFIX: &str = "environment.";

/// The prefixes of the instance and profile configuration keys that hand the guest a credential:
/// SMBIOS type 11 strings (`smbios11.*`, Incus 6.0.4 and 7.0, which systemd reads as credentials)
/// and systemd credentials (`systemd.credential.*`, `systemd.credential-binary.*`, Incus 7.0's
/// `instance_systemd_credentials`).
pub const GUEST_CREDENTIAL_PREFIXES: &[&str] = &[
    "smbios11.",
    "systemd.credential.",
    "systemd.credential-binary.",
];

/// Incus 7.0's logging target keys (`logging.<name>.target.<field>`): the password is a
/// credential, the address a URL that may carry one.
const LOGGING_PREFIX: &str = "logging.";
const LOGGING_PASSWORD_FIELD: &str = "target.password";
const LOGGING_ADDRESS_FIELD: &str = "target.address";

/// Network configuration keys `bgp.peers.<peer>.password`: this prefix, one peer name, this suffix.
const BGP_PEER_PREFIX: &str = "bgp.peers.";
const BGP_PASSWORD_SUFFIX: &str = ".password";

/// Operation metadata keys whose value is a secret (every string inside it is redacted).
pub const OPERATION_SECRET_KEYS: &[&str] = &["secret", "fds", "control", "fs", "criu"];

/// The operation metadata key of an exec session's environment: its values are redacted, its
/// variable names kept.
pub const OPERATION_ENVIRONMENT_KEY: &str = "environment";

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
        let url =
            SERVER_URL_KEYS.contains(&key) || logging_field(key) == Some(LOGGING_ADDRESS_FIELD);
        SERVER_CREDENTIAL_KEYS.contains(&key)
            || is_logging_password(key)
            || (url && value.as_str().is_some_and(url_userinfo))
    })
}

/// The field of a logging target key (`logging.<name>.<field>`, the name without a dot).
fn logging_field(key: &str) -> Option<&str> {
    let (name, field) = key.strip_prefix(LOGGING_PREFIX)?.split_once('.')?;
    (!name.is_empty()).then_some(field)
}

/// Whether a server configuration key is a logging target's password
/// (`logging.<name>.target.password`, Incus 7.0 `internal/server/cluster/config/config.go`,
/// `LoggingConfigForLoki`, `LoggingConfigForWebhook`).
///
/// ```
/// use incus_credentials::redact::is_logging_password;
/// assert!(is_logging_password("logging.siem.target.password"));
/// assert!(!is_logging_password("logging.siem.target.username"));
/// ```
pub fn is_logging_password(key: &str) -> bool {
    logging_field(key) == Some(LOGGING_PASSWORD_FIELD)
}

/// An image object (`GET /1.0/images/{fingerprint}`): the server URL of its `update_source` when
/// it may carry `user:password@` (see [`url_userinfo`]). Returns whether anything was replaced.
///
/// ```
/// use incus_credentials::redact::{self, REDACTED};
/// let mut image = serde_json::json!({"fingerprint": "be3d", "update_source": {
///     "server": "https://mirror:t0k3n@images.example.org", "protocol": "simplestreams", "alias": "debian/12",
/// }});
/// assert!(redact::image(&mut image));
/// assert_eq!(image["update_source"]["server"], REDACTED);
/// assert_eq!(image["update_source"]["alias"], "debian/12");
/// ```
pub fn image(object: &mut Value) -> bool {
    let Some(server) = object.pointer_mut("/update_source/server") else {
        return false;
    };
    if server.as_str().is_some_and(url_userinfo) {
        *server = Value::String(REDACTED.to_owned());
        true
    } else {
        false
    }
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

/// A storage pool object: its [`STORAGE_POOL_CREDENTIAL_KEYS`]. Returns whether anything was
/// replaced.
pub fn storage_pool(object: &mut Value) -> bool {
    config_entries(object, |key, _| STORAGE_POOL_CREDENTIAL_KEYS.contains(&key))
}

/// An operation object: the secrets of its metadata (the strings under
/// [`OPERATION_SECRET_KEYS`], and the values of an exec session's `environment`, their structure
/// and the variable names kept). Returns whether anything was replaced.
///
/// ```
/// use incus_credentials::redact::{self, REDACTED};
/// let mut exec = serde_json::json!({"class": "websocket", "metadata": {
///     "command": ["deploy"], "environment": {"API_TOKEN": "t0k3n", "HOME": "/root"},
///     "fds": {"0": "a1b2", "control": "c3d4"}, "interactive": true,
/// }});
/// assert!(redact::operation(&mut exec));
/// assert_eq!(exec["metadata"]["fds"], serde_json::json!({"0": REDACTED, "control": REDACTED}));
/// assert_eq!(exec["metadata"]["environment"], serde_json::json!({"API_TOKEN": REDACTED, "HOME": REDACTED}));
/// // The command is the caller's business (see the core's rules), not a credential here.
/// assert_eq!(exec["metadata"]["command"], serde_json::json!(["deploy"]));
/// ```
pub fn operation(object: &mut Value) -> bool {
    let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut) else {
        return false;
    };
    let mut changed = false;
    for (key, value) in metadata.iter_mut() {
        if OPERATION_SECRET_KEYS.contains(&key.as_str()) || key == OPERATION_ENVIRONMENT_KEY {
            changed |= values(value);
        }
    }
    changed
}

/// An instance, snapshot or profile object: the values of its `environment.*`, cloud-init data
/// keys ([`GUEST_DATA_KEYS`]) and guest credentials ([`GUEST_CREDENTIAL_PREFIXES`]) in `config` and
/// in `expanded_config`. Returns whether anything was replaced.
///
/// ```
/// use incus_credentials::redact::{self, REDACTED};
/// let mut instance = serde_json::json!({"name": "web",
///     "config": {"environment.DB_PASSWORD": "pw", "limits.cpu": "2"},
///     "expanded_config": {"environment.DB_PASSWORD": "pw", "cloud-init.user-data": "#cloud-config\npassword: pw", "limits.cpu": "2"},
/// });
/// assert!(redact::guest_data(&mut instance));
/// assert_eq!(instance["config"]["environment.DB_PASSWORD"], REDACTED);
/// assert_eq!(instance["expanded_config"]["cloud-init.user-data"], REDACTED);
/// assert_eq!(instance["expanded_config"]["limits.cpu"], "2");
/// ```
pub fn guest_data(object: &mut Value) -> bool {
    let is_guest_data = |key: &str, _: &Value| {
        key.starts_with(GUEST_ENVIRONMENT_PREFIX)
            || GUEST_DATA_KEYS.contains(&key)
            || GUEST_CREDENTIAL_PREFIXES
                .iter()
                .any(|prefix| key.len() > prefix.len() && key.starts_with(prefix))
    };
    let config = config_entries(object, is_guest_data);
    entries(object, "expanded_config", is_guest_data) | config
}

/// Whether a URL may carry credentials in its userinfo (`scheme://user:password@host`): whenever
/// its text holds `@`, which is the only delimiter of userinfo in RFC 3986, in the WHATWG URL
/// standard and in Go's `net/url` (which Incus parses with).
///
/// No parser decides this, because none can fail closed on it: a password that holds `/`, `?` or
/// `#` (unescaped, as operators type them) ends the authority early, so
/// `http://user:123/secret@proxy:3128` parses cleanly as host `user`, port `123` and path
/// `/secret@proxy:3128`, with no userinfo, and the password in plain sight; a scheme-relative
/// `//user:pw@host` does not parse as a URL at all. Any `@` makes the whole value a credential,
/// at the cost of hiding a URL whose path merely holds one.
///
/// ```
/// use incus_credentials::redact::url_userinfo;
/// assert!(url_userinfo("http://user:pw@proxy:3128"));
/// assert!(url_userinfo("//user:pw@proxy:3128"));
/// assert!(url_userinfo("http://user:p#w@proxy:3128"));
/// assert!(url_userinfo("http://user:123/secret@proxy:3128"));
/// assert!(!url_userinfo("http://proxy.example:3128"));
/// ```
pub fn url_userinfo(url: &str) -> bool {
    url.contains('@')
}

/// Replaces `config` entries chosen by `secret(key, value)`.
fn config_entries(object: &mut Value, secret: impl Fn(&str, &Value) -> bool) -> bool {
    entries(object, "config", secret)
}

/// Replaces the entries of the map `field` chosen by `secret(key, value)`.
fn entries(object: &mut Value, field: &str, secret: impl Fn(&str, &Value) -> bool) -> bool {
    let Some(config) = object.get_mut(field).and_then(Value::as_object_mut) else {
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

/// Replaces every string and number inside `value`, keeping its structure (the names of an
/// exec's websockets stay, their secrets go). Returns whether anything was replaced.
///
/// ```
/// use incus_credentials::redact::{values, REDACTED};
/// let mut command = serde_json::json!(["curl", "-H", "Authorization: t0k3n"]);
/// assert!(values(&mut command));
/// assert_eq!(command, serde_json::json!([REDACTED, REDACTED, REDACTED]));
/// ```
pub fn values(value: &mut Value) -> bool {
    match value {
        Value::String(text) if text == REDACTED => false,
        Value::String(_) | Value::Number(_) => {
            *value = Value::String(REDACTED.to_owned());
            true
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |changed, item| values(item) | changed),
        Value::Object(fields) => fields
            .values_mut()
            .fold(false, |changed, item| values(item) | changed),
        Value::Null | Value::Bool(_) => false,
    }
}

fn is_bgp_password(key: &str) -> bool {
    key.strip_prefix(BGP_PEER_PREFIX)
        .and_then(|rest| rest.strip_suffix(BGP_PASSWORD_SUFFIX))
        .is_some_and(|peer| !peer.is_empty() && !peer.contains('.'))
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (which values in Incus's answers are
    //! credentials, each replaced by the one marker [`REDACTED`]); what the core and the fake make
    //! of it goes in their own tests.

    use super::*;
    use serde_json::json;

    #[test]
    fn server_credential_keys_are_replaced_and_other_keys_kept() {
        let mut object = json!({"config": {
            "loki.auth.password": "s3cret", "openfga.api.token": "tok",
            "network.ovn.client_key": "-----BEGIN EC PRIVATE KEY-----",
            "acme.provider.environment": "CLOUDFLARE_DNS_API_TOKEN=abc",
            "instances.tpm.platform_key": "-----BEGIN PRIVATE KEY-----",
            "storage.linstor.client_key": "-----BEGIN PRIVATE KEY-----",
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
    fn logging_target_passwords_and_urls_with_a_user_are_replaced() {
        let mut object = json!({"config": {
            "logging.siem.target.type": "loki", "logging.siem.target.password": "pw",
            "logging.siem.target.username": "incus",
            "logging.hook.target.address": "https://ops:pw@hooks.example/x",
            "logging.plain.target.address": "https://hooks.example/x"
        }});
        assert!(server(&mut object));
        let config = &object["config"];
        assert_eq!(config["logging.siem.target.password"], REDACTED);
        assert_eq!(config["logging.hook.target.address"], REDACTED);
        assert_eq!(config["logging.siem.target.username"], "incus");
        assert_eq!(
            config["logging.plain.target.address"],
            "https://hooks.example/x"
        );
    }

    #[test]
    fn an_image_update_source_with_a_user_is_replaced() {
        let mut image_object = json!({"update_source": {"server": "//u:pw@images.example"}});
        assert!(image(&mut image_object));
        let mut public = json!({"update_source": {"server": "https://images.linuxcontainers.org"}});
        assert!(!image(&mut public));
        assert!(!image(&mut json!({"fingerprint": "ab"})));
    }

    #[test]
    fn server_urls_are_replaced_whenever_they_may_carry_a_user() {
        let carrying = [
            "http://u:pw@proxy:3128",
            "https://user@loki.example",
            // Scheme-relative: no URL parser reads it, Go's net/url reads its userinfo.
            "//u:pw@proxy:3128",
            // Unescaped `#`, `/` and `?` in the password end the authority early.
            "http://u:p#w@proxy:3128",
            "http://u:123/secret@proxy:3128",
            "http://u:p?w@proxy:3128",
            // A path that merely holds `@` is hidden too: it cannot be told from the above.
            "http://proxy:3128/a@b",
            "u:pw@proxy:3128",
        ];
        for url in carrying {
            let mut object = json!({"config": {"core.proxy_https": url}});
            assert!(server(&mut object), "{url}");
            assert_eq!(object["config"]["core.proxy_https"], REDACTED, "{url}");
        }
        let mut object = json!({"config": {
            "openfga.api.url": "https://openfga.example",
            "core.proxy_http": "http://10.0.0.9:3128",
            "storage.linstor.controller_connection": "https://linstor.example:3371"
        }});
        assert!(!server(&mut object));
        assert_eq!(
            object["config"]["openfga.api.url"],
            "https://openfga.example"
        );
    }

    #[test]
    fn guest_data_is_replaced_in_config_and_expanded_config() {
        let mut instance = json!({
            "config": {"environment.TOKEN": "t", "user.user-data": "u", "user.note": "kept",
                       "cloud-init.ssh-keys.admin": "root:ssh-ed25519 AAAA"},
            "expanded_config": {"environment.TOKEN": "t", "cloud-init.vendor-data": "v",
                                "cloud-init.network-config": "n", "limits.cpu": "1"}
        });
        assert!(guest_data(&mut instance));
        assert_eq!(instance["config"]["environment.TOKEN"], REDACTED);
        assert_eq!(instance["config"]["user.user-data"], REDACTED);
        assert_eq!(instance["config"]["user.note"], "kept");
        assert_eq!(
            instance["config"]["cloud-init.ssh-keys.admin"],
            "root:ssh-ed25519 AAAA"
        );
        assert_eq!(
            instance["expanded_config"]["cloud-init.vendor-data"],
            REDACTED
        );
        assert_eq!(
            instance["expanded_config"]["cloud-init.network-config"],
            REDACTED
        );
        assert_eq!(instance["expanded_config"]["limits.cpu"], "1");
        assert!(!guest_data(&mut instance), "a second pass changes nothing");
        let mut vm = json!({"config": {
            "smbios11.io.systemd.credential:db": "pw", "systemd.credential.db": "pw",
            "systemd.credential-binary.key": "cHc=", "smbios11.": "kept"
        }});
        assert!(guest_data(&mut vm));
        assert_eq!(vm["config"]["smbios11.io.systemd.credential:db"], REDACTED);
        assert_eq!(vm["config"]["systemd.credential.db"], REDACTED);
        assert_eq!(vm["config"]["systemd.credential-binary.key"], REDACTED);
    }

    #[test]
    fn storage_pool_api_keys_are_replaced() {
        let mut pool = json!({"config": {"truenas.api_key": "k", "truenas.host": "nas"}});
        assert!(storage_pool(&mut pool));
        assert_eq!(pool["config"]["truenas.api_key"], REDACTED);
        assert_eq!(pool["config"]["truenas.host"], "nas");
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

        let mut session = json!({"metadata": {"environment": {"TOKEN": "t", "HOME": "/root"}}});
        assert!(operation(&mut session));
        assert_eq!(
            session["metadata"]["environment"],
            json!({"TOKEN": REDACTED, "HOME": REDACTED})
        );

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
