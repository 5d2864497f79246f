//! Profile operations: list and get.

use serde_json::json;

use super::schema::{self, Object};
use super::{Native, Scope, Spec};

pub(super) fn specs() -> Vec<Spec> {
    vec![list(), get()]
}

fn list() -> Spec {
    Spec {
        name: "incus_profile_list",
        title: "List profiles",
        description: concat!(
            "Lists the profiles of a project (native profile objects: name, description, config, devices, used_by). A project without its own profiles shows those of project default.",
            list_returns!(),
            guest_data_note!(),
            used_by_note!(),
            project_note!()
        ),
        example: json!({"project": "default"}),
        resource: "profile",
        scope: Scope::Read,
        native: Native::ProfileList,
        confirmation: None,
        requires: &["GetProfiles"],
        input: Object::new().optional("limit", schema::limit()),
        success: schema::list_success(),
    }
}

fn get() -> Spec {
    Spec {
        name: "incus_profile_get",
        title: "Get a profile",
        description: concat!(
            "Reads one profile by name.",
            item_returns!(),
            guest_data_note!(),
            used_by_note!(),
            project_note!()
        ),
        example: json!({"name": "default"}),
        resource: "profile",
        scope: Scope::Read,
        native: Native::ProfileGet,
        confirmation: None,
        requires: &["GetProfile"],
        input: Object::new().required("name", schema::object_name("Profile name.")),
        success: schema::item_success(),
    }
}
