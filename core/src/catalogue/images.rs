//! Image operations: list, get, alias list and delete.

use serde_json::json;

use super::schema::{self, Object};
use super::{Confirmation, Native, Scope, Spec};

pub(super) fn specs() -> Vec<Spec> {
    vec![list(), get(), alias_list(), delete()]
}

fn list() -> Spec {
    Spec {
        name: "incus_image_list",
        title: "List images",
        description: concat!(
            "Lists the images of a project (native image objects: fingerprint, aliases, properties, architecture, type, size, ...); a cached image's update_source.server is replaced by \"[redacted]\" whenever it holds @ (the image server's credentials).",
            list_returns!(),
            project_note!()
        ),
        example: json!({"limit": 50}),
        resource: "image",
        scope: Scope::Read,
        native: Native::ImageList,
        confirmation: None,
        requires: &["GetImages"],
        input: Object::new().optional("limit", schema::limit()),
        success: schema::list_success(),
    }
}

fn get() -> Spec {
    Spec {
        name: "incus_image_get",
        title: "Get an image",
        description: concat!(
            "Reads one image by fingerprint or a unique prefix of it; the result always carries the full fingerprint. A cached image's update_source.server is replaced by \"[redacted]\" whenever it holds @ (the image server's credentials).",
            item_returns!(),
            project_note!()
        ),
        example: json!({"fingerprint": "2f3b1d6e8a7c"}),
        resource: "image",
        scope: Scope::Read,
        native: Native::ImageGet,
        confirmation: None,
        requires: &["GetImage"],
        input: Object::new().required("fingerprint", schema::fingerprint_prefix()),
        success: schema::item_success(),
    }
}

fn alias_list() -> Spec {
    Spec {
        name: "incus_image_alias_list",
        title: "List image aliases",
        description: concat!(
            "Lists the image aliases of a project (native entries: name, target fingerprint, type, description).",
            list_returns!(),
            project_note!()
        ),
        example: json!({"project": "default"}),
        resource: "image",
        scope: Scope::Read,
        native: Native::ImageAliasList,
        confirmation: None,
        requires: &["GetImageAliases"],
        input: Object::new().optional("limit", schema::limit()),
        success: schema::list_success(),
    }
}

fn delete() -> Spec {
    Spec {
        name: "incus_image_delete",
        title: "Delete an image",
        description: concat!(
            "Deletes an image, and its aliases, from a project. fingerprint must be the full 64-character fingerprint (read it with incus_image_list or incus_image_get). Destructive: confirm must repeat the full fingerprint exactly; a prefix or \"yes\" is refused before any request.",
            mutation_returns!(),
            project_note!()
        ),
        example: json!({
            "fingerprint": "2f3b1d6e8a7c4b5d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f",
            "confirm": "2f3b1d6e8a7c4b5d9e0f1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f"
        }),
        resource: "image",
        scope: Scope::Delete,
        native: Native::ImageDelete,
        confirmation: Some(Confirmation::Fingerprint),
        requires: &["DeleteImage", "GetOperationWait"],
        input: Object::new()
            .required("fingerprint", schema::full_fingerprint())
            .optional("wait_seconds", schema::wait_seconds()),
        success: schema::mutation_success(),
    }
}
