//! Server operation: get.

use serde_json::json;

use super::schema::Object;
use super::{schema, Native, Scope, Spec};

pub(super) fn specs() -> Vec<Spec> {
    vec![get()]
}

fn get() -> Spec {
    Spec {
        name: "incus_server_get",
        title: "Get the Incus server's information",
        description: concat!(
            "Reads the server information that discovery obtained (GET /1.0): api_version, api_extensions, auth, config and environment (server_version, driver, kernel, architectures, storage, ...).",
            " Returns {\"item\": <native server object>} unchanged except for credentials: the value of each config key that holds one (loki.auth.password, openfga.api.token, network.ovn.client_key, acme.provider.environment, instances.tpm.platform_key, storage.linstor.client_key, logging.<name>.target.password, and core.proxy_http, core.proxy_https, loki.api.url, openfga.api.url, storage.linstor.controller_connection or logging.<name>.target.address whenever its text holds @, since a password there may hold /, ? or #) is replaced by \"[redacted]\". Results are at most 256 KiB of JSON (output_limit otherwise).",
            project_note!()
        ),
        example: json!({}),
        resource: "server",
        scope: Scope::Read,
        native: Native::ServerGet,
        confirmation: None,
        requires: &["helper:connect"],
        input: Object::new(),
        success: schema::item_success(),
    }
}
