//! Storage operations: pool list/get and volume list/get.

use serde_json::{json, Value};

use super::schema::{self, Object};
use super::{Native, Scope, Spec};

pub(super) fn specs() -> Vec<Spec> {
    vec![pool_list(), pool_get(), volume_list(), volume_get()]
}

fn pool() -> Value {
    schema::object_name("Storage pool name.")
}

fn pool_list() -> Spec {
    Spec {
        name: "incus_storage_pool_list",
        title: "List storage pools",
        description: concat!(
            "Lists the storage pools (native pool objects: name, driver, status, config, used_by).",
            list_returns!(),
            " The value of truenas.api_key (the TrueNAS API key of Incus 7.0's truenas driver) is replaced by \"[redacted]\".",
            used_by_note!(),
            project_note!()
        ),
        example: json!({}),
        resource: "storage",
        scope: Scope::Read,
        native: Native::StoragePoolList,
        confirmation: None,
        requires: &["GetStoragePools"],
        input: Object::new().optional("limit", schema::limit()),
        success: schema::list_success(),
    }
}

fn pool_get() -> Spec {
    Spec {
        name: "incus_storage_pool_get",
        title: "Get a storage pool",
        description: concat!(
            "Reads one storage pool by name.",
            item_returns!(),
            " The value of truenas.api_key (the TrueNAS API key of Incus 7.0's truenas driver) is replaced by \"[redacted]\".",
            used_by_note!(),
            project_note!()
        ),
        example: json!({"pool": "default"}),
        resource: "storage",
        scope: Scope::Read,
        native: Native::StoragePoolGet,
        confirmation: None,
        requires: &["GetStoragePool"],
        input: Object::new().required("pool", pool()),
        success: schema::item_success(),
    }
}

fn volume_list() -> Spec {
    Spec {
        name: "incus_storage_volume_list",
        title: "List the volumes of a storage pool",
        description: concat!(
            "Lists the volumes of one storage pool in a project: instance, image and custom volumes, and snapshot volumes named <volume>/<snapshot> (native volume objects: name, type, content_type, config, used_by).",
            list_returns!(),
            used_by_note!(),
            project_note!()
        ),
        example: json!({"pool": "default", "limit": 100}),
        resource: "storage",
        scope: Scope::Read,
        native: Native::StorageVolumeList,
        confirmation: None,
        requires: &["GetStoragePoolVolumes"],
        input: Object::new()
            .required("pool", pool())
            .optional("limit", schema::limit()),
        success: schema::list_success(),
    }
}

fn volume_get() -> Spec {
    Spec {
        name: "incus_storage_volume_get",
        title: "Get a storage volume",
        description: concat!(
            "Reads one volume of a storage pool by pool, type (container, virtual-machine, image or custom) and name.",
            item_returns!(),
            used_by_note!(),
            project_note!()
        ),
        example: json!({"pool": "default", "type": "custom", "name": "data"}),
        resource: "storage",
        scope: Scope::Read,
        native: Native::StorageVolumeGet,
        confirmation: None,
        requires: &["GetStoragePoolVolume"],
        input: Object::new()
            .required("pool", pool())
            .required(
                "type",
                json!({"enum": ["container", "virtual-machine", "image", "custom"], "description": "Volume type."}),
            )
            .required("name", schema::object_name("Volume name.")),
        success: schema::item_success(),
    }
}
