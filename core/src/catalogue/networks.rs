//! Network operations: list and get.

use serde_json::json;

use super::schema::{self, Object};
use super::{Native, Scope, Spec};

pub(super) fn specs() -> Vec<Spec> {
    vec![list(), get()]
}

fn list() -> Spec {
    Spec {
        name: "incus_network_list",
        title: "List networks",
        description: concat!(
            "Lists the networks visible in a project, managed bridges and unmanaged host interfaces alike (native network objects: name, type, managed, status, config, used_by).",
            list_returns!(),
            " The value of every bgp.peers.<peer>.password key (a BGP session password) is replaced by \"[redacted]\".",
            used_by_note!(),
            project_note!()
        ),
        example: json!({}),
        resource: "network",
        scope: Scope::Read,
        native: Native::NetworkList,
        confirmation: None,
        requires: &["GetNetworks"],
        input: Object::new().optional("limit", schema::limit()),
        success: schema::list_success(),
    }
}

fn get() -> Spec {
    Spec {
        name: "incus_network_get",
        title: "Get a network",
        description: concat!(
            "Reads one network by name.",
            item_returns!(),
            " The value of every bgp.peers.<peer>.password key (a BGP session password) is replaced by \"[redacted]\".",
            used_by_note!(),
            project_note!()
        ),
        example: json!({"name": "incusbr0"}),
        resource: "network",
        scope: Scope::Read,
        native: Native::NetworkGet,
        confirmation: None,
        requires: &["GetNetwork"],
        input: Object::new().required("name", schema::object_name("Network name.")),
        success: schema::item_success(),
    }
}
