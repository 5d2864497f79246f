//! Project operations: list and get.

use serde_json::json;

use super::schema::{self, Object};
use super::{Native, Scope, Spec};

pub(super) fn specs() -> Vec<Spec> {
    vec![list(), get()]
}

fn list() -> Spec {
    Spec {
        name: "incus_project_list",
        title: "List projects",
        description: concat!(
            "Lists the Incus projects (native project objects: name, description, config features, used_by). The project field, when given, only selects the request context.",
            list_returns!(),
            used_by_note!()
        ),
        example: json!({"limit": 10}),
        resource: "project",
        scope: Scope::Read,
        native: Native::ProjectList,
        confirmation: None,
        requires: &["GetProjects"],
        input: Object::new().optional("limit", schema::limit()),
        success: schema::list_success(),
    }
}

fn get() -> Spec {
    Spec {
        name: "incus_project_get",
        title: "Get a project",
        description: concat!(
            "Reads one project by name (the name field; project, when given, only selects the request context).",
            item_returns!(),
            used_by_note!()
        ),
        example: json!({"name": "default"}),
        resource: "project",
        scope: Scope::Read,
        native: Native::ProjectGet,
        confirmation: None,
        requires: &["GetProject"],
        input: Object::new().required(
            "name",
            json!({
                "type": "string",
                "description": "Project name.",
                "minLength": 1,
                "maxLength": 63,
                "pattern": "^[A-Za-z0-9][A-Za-z0-9_.-]*$",
            }),
        ),
        success: schema::item_success(),
    }
}
