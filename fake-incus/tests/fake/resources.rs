//! The declared resources beyond instances and images (networks and their objects, storage
//! pools and buckets, projects' state, certificates, warnings, the server's configuration and
//! its read-only endpoints), each asked in process for what the daemon promises: create, read,
//! update, rename, delete, and the error paths (unknown name, duplicate, in use, invalid key),
//! with the daemon's status codes and texts (checked on Incus 6.0.4).

use crate::common::{call, call_with, fake, Reply};
use fake_incus::{assert_native_error, FakeIncus};
use serde_json::{json, Value};

async fn get(fake: &FakeIncus, path: &str) -> Value {
    let reply = call(fake, "GET", path, None).await;
    assert_eq!(reply.status(), 200, "GET {path}: {:?}", reply.json());
    reply.json()["metadata"].clone()
}

fn assert_created(reply: &Reply, location: &str) {
    assert_eq!(
        (reply.status(), reply.header("location")),
        (201, Some(location)),
        "{:?}",
        reply.json()
    );
}

fn assert_ok(reply: &Reply) {
    assert_eq!(reply.status(), 200, "{:?}", reply.json());
}

#[tokio::test]
async fn network_acls_are_created_merged_renamed_and_deleted_as_the_daemon_does() {
    let fake = fake().await;
    let acl = json!({"name": "web", "description": "d", "config": {"user.a": "1"}});
    let reply = call(&fake, "POST", "/1.0/network-acls", Some(acl.clone())).await;
    assert_created(&reply, "/1.0/network-acls/web");
    let reply = call(&fake, "POST", "/1.0/network-acls", Some(acl)).await;
    assert_native_error(&reply, 400, "The network ACL already exists");
    let reply = call(
        &fake,
        "POST",
        "/1.0/network-acls",
        Some(json!({"name": "a b"})),
    )
    .await;
    assert_native_error(
        &reply,
        500,
        "Name can only contain alphanumeric and hyphen characters",
    );
    let bad = json!({"name": "x", "config": {"bad": "1"}});
    let reply = call(&fake, "POST", "/1.0/network-acls", Some(bad)).await;
    assert_native_error(&reply, 500, "Invalid config option \"bad\"");

    let object = get(&fake, "/1.0/network-acls/web").await;
    assert_eq!(
        object,
        json!({"name": "web", "description": "d", "egress": [], "ingress": [],
            "config": {"user.a": "1"}, "used_by": [], "project": "default"})
    );
    let patch = json!({"config": {"user.b": "2"}});
    assert_ok(&call(&fake, "PATCH", "/1.0/network-acls/web", Some(patch)).await);
    let object = get(&fake, "/1.0/network-acls/web").await;
    assert_eq!(
        (&object["config"], &object["description"]),
        (&json!({"user.a": "1", "user.b": "2"}), &json!("d")),
        "PATCH merges the config key by key and keeps what it does not send"
    );
    let unset = json!({"config": {"user.a": ""}});
    assert_ok(&call(&fake, "PATCH", "/1.0/network-acls/web", Some(unset)).await);
    assert_eq!(
        get(&fake, "/1.0/network-acls/web").await["config"],
        json!({"user.b": "2"})
    );
    assert_ok(
        &call(
            &fake,
            "PUT",
            "/1.0/network-acls/web",
            Some(json!({"config": {}})),
        )
        .await,
    );
    let object = get(&fake, "/1.0/network-acls/web").await;
    assert_eq!(
        (&object["config"], &object["description"]),
        (&json!({}), &json!(""))
    );

    let reply = call(
        &fake,
        "POST",
        "/1.0/network-acls/web",
        Some(json!({"name": "www"})),
    )
    .await;
    assert_created(&reply, "/1.0/network-acls/www");
    let reply = call(&fake, "GET", "/1.0/network-acls/web", None).await;
    assert_native_error(&reply, 404, "Network ACL not found");
    let reply = call(&fake, "GET", "/1.0/network-acls/www/log", None).await;
    assert_native_error(
        &reply,
        500,
        "Only OVN log entries may be retrieved at this time",
    );
    assert_ok(&call(&fake, "DELETE", "/1.0/network-acls/www", None).await);
    let reply = call(&fake, "DELETE", "/1.0/network-acls/www", None).await;
    assert_native_error(&reply, 404, "Network ACL not found");
    assert_eq!(get(&fake, "/1.0/network-acls").await, json!([]));
}

/// `used_by` as the daemon's `network/acl.UsedBy` builds it, and the refusals while it is not
/// empty (the ACL-in-a-rule case and both refusal texts measured on a real daemon).
#[tokio::test]
async fn an_acls_used_by_lists_networks_profiles_acls_and_nics_naming_it() {
    let fake = fake().await;
    for acl in [
        json!({"name": "a1"}),
        json!({"name": "a2", "ingress": [{"action": "allow", "source": "a1", "state": "enabled"}]}),
    ] {
        assert_created(
            &call(&fake, "POST", "/1.0/network-acls", Some(acl.clone())).await,
            &format!("/1.0/network-acls/{}", acl["name"].as_str().unwrap()),
        );
    }
    assert_eq!(
        get(&fake, "/1.0/network-acls/a1").await["used_by"],
        json!(["/1.0/network-acls/a2"])
    );
    let bridge = json!({"name": "br1", "type": "bridge", "config": {"security.acls": "a1"}});
    assert_created(
        &call(&fake, "POST", "/1.0/networks", Some(bridge)).await,
        "/1.0/networks/br1",
    );
    let nic =
        json!({"devices": {"eth1": {"type": "nic", "network": "br1", "security.acls": "a1"}}});
    assert_ok(&call(&fake, "PATCH", "/1.0/profiles/default", Some(nic)).await);
    assert_eq!(
        get(&fake, "/1.0/network-acls/a1").await["used_by"],
        json!([
            "/1.0/networks/br1",
            "/1.0/profiles/default",
            "/1.0/network-acls/a2"
        ])
    );
    let reply = call(&fake, "DELETE", "/1.0/network-acls/a1", None).await;
    assert_native_error(&reply, 500, "Cannot delete an ACL that is in use");
    let reply = call(
        &fake,
        "POST",
        "/1.0/network-acls/a1",
        Some(json!({"name": "a9"})),
    )
    .await;
    assert_native_error(&reply, 500, "Cannot rename an ACL that is in use");
    assert_eq!(
        get(&fake, "/1.0/network-acls/a2").await["used_by"],
        json!([])
    );
    assert_ok(&call(&fake, "DELETE", "/1.0/network-acls/a2", None).await);
}

#[tokio::test]
async fn a_stale_etag_is_refused_with_412() {
    let fake = fake().await;
    call(
        &fake,
        "POST",
        "/1.0/network-zones",
        Some(json!({"name": "z.example"})),
    )
    .await;
    let reply = call(&fake, "GET", "/1.0/network-zones/z.example", None).await;
    let etag = reply.header("etag").expect("an ETag").to_owned();
    let put = json!({"description": "one"});
    let reply = call_with(
        &fake,
        "PUT",
        "/1.0/network-zones/z.example",
        Some(put.clone()),
        &[("If-Match", &etag)],
    )
    .await;
    assert_ok(&reply);
    let reply = call_with(
        &fake,
        "PUT",
        "/1.0/network-zones/z.example",
        Some(put),
        &[("If-Match", &etag)],
    )
    .await;
    assert_eq!(reply.status(), 412, "{:?}", reply.json());
}

#[tokio::test]
async fn managed_bridges_are_created_updated_renamed_and_deleted_unless_in_use() {
    let fake = fake().await;
    let bridge =
        json!({"name": "br1", "type": "bridge", "config": {"ipv4.address": "10.9.0.1/24"}});
    let reply = call(&fake, "POST", "/1.0/networks", Some(bridge.clone())).await;
    assert_created(&reply, "/1.0/networks/br1");
    let reply = call(&fake, "POST", "/1.0/networks", Some(bridge)).await;
    assert_native_error(&reply, 409, "Network \"br1\" already exists");
    let bad = json!({"name": "br2", "config": {"nope": "1"}});
    let reply = call(&fake, "POST", "/1.0/networks", Some(bad)).await;
    assert_native_error(
        &reply,
        400,
        "Invalid option for network \"br2\" option \"nope\"",
    );
    let reply = call(&fake, "POST", "/1.0/networks", Some(json!({"name": ""}))).await;
    assert_native_error(&reply, 400, "No name provided");

    let object = get(&fake, "/1.0/networks/br1").await;
    assert_eq!(
        (&object["managed"], &object["type"], &object["status"]),
        (&json!(true), &json!("bridge"), &json!("Created"))
    );
    let state = get(&fake, "/1.0/networks/br1/state").await;
    assert_eq!(state["addresses"][0]["address"], "10.9.0.1");
    assert_eq!(get(&fake, "/1.0/networks/br1/leases").await, json!([]));
    let allocations = get(&fake, "/1.0/network-allocations").await;
    assert_eq!(allocations[0]["addresses"], "10.9.0.1/24");

    let patch = json!({"config": {"user.x": "y"}});
    assert_ok(&call(&fake, "PATCH", "/1.0/networks/br1", Some(patch)).await);
    let config = &get(&fake, "/1.0/networks/br1").await["config"];
    assert_eq!(
        config,
        &json!({"ipv4.address": "10.9.0.1/24", "user.x": "y"})
    );

    let reply = call(
        &fake,
        "POST",
        "/1.0/networks/br1",
        Some(json!({"name": "br9"})),
    )
    .await;
    assert_created(&reply, "/1.0/networks/br9");
    let nic = json!({"devices": {"eth0": {"type": "nic", "network": "br9"}}});
    assert_ok(&call(&fake, "PATCH", "/1.0/profiles/default", Some(nic)).await);
    assert_eq!(
        get(&fake, "/1.0/networks/br9").await["used_by"],
        json!(["/1.0/profiles/default"])
    );
    let reply = call(&fake, "DELETE", "/1.0/networks/br9", None).await;
    assert_native_error(&reply, 400, "The network is currently in use");
    let reply = call(
        &fake,
        "POST",
        "/1.0/networks/br9",
        Some(json!({"name": "br8"})),
    )
    .await;
    assert_native_error(&reply, 400, "Network is currently in use");
    let none = json!({"devices": {}});
    assert_ok(&call(&fake, "PUT", "/1.0/profiles/default", Some(none)).await);
    assert_ok(&call(&fake, "DELETE", "/1.0/networks/br9", None).await);

    let reply = call(&fake, "GET", "/1.0/networks/br9", None).await;
    assert_native_error(&reply, 404, "Network not found");
    let reply = call(&fake, "DELETE", "/1.0/networks/br9", None).await;
    assert_native_error(&reply, 404, "Failed loading network: Network not found");
    let reply = call(&fake, "DELETE", "/1.0/networks/lo", None).await;
    assert_native_error(&reply, 404, "Failed loading network: Network not found");
}

#[tokio::test]
async fn a_project_with_its_own_networks_refuses_bridges() {
    let fake = fake().await;
    let project = json!({"name": "p1", "config": {"features.networks": "true"}});
    call(&fake, "POST", "/1.0/projects", Some(project)).await;
    let bridge = json!({"name": "n1", "type": "bridge"});
    let reply = call(&fake, "POST", "/1.0/networks?project=p1", Some(bridge)).await;
    assert_native_error(
        &reply,
        400,
        "Network type does not support non-default projects",
    );
    assert_eq!(get(&fake, "/1.0/networks?project=p1").await, json!([]));
    let reply = call(&fake, "GET", "/1.0/networks?project=nope", None).await;
    assert_native_error(
        &reply,
        404,
        "Failed to load project \"nope\": Project not found",
    );
}

#[tokio::test]
async fn forwards_live_on_managed_networks_and_balancers_and_peers_need_ovn() {
    let fake = fake().await;
    call(&fake, "POST", "/1.0/networks", Some(json!({"name": "br1"}))).await;
    let forward = json!({"listen_address": "192.0.2.1", "ports": []});
    let reply = call(
        &fake,
        "POST",
        "/1.0/networks/br1/forwards",
        Some(forward.clone()),
    )
    .await;
    assert_created(&reply, "/1.0/networks/br1/forwards/192.0.2.1");
    let reply = call(&fake, "POST", "/1.0/networks/br1/forwards", Some(forward)).await;
    assert_native_error(
        &reply,
        409,
        "Failed creating forward: A forward for that listen address already exists",
    );
    let bad = json!({"listen_address": "not-an-ip"});
    let reply = call(&fake, "POST", "/1.0/networks/br1/forwards", Some(bad)).await;
    assert_native_error(&reply, 400, "Invalid listen address");
    assert_eq!(
        get(&fake, "/1.0/networks/br1/forwards").await,
        json!(["/1.0/networks/br1/forwards/192.0.2.1"])
    );
    assert_ok(
        &call(
            &fake,
            "DELETE",
            "/1.0/networks/br1/forwards/192.0.2.1",
            None,
        )
        .await,
    );
    let reply = call(&fake, "GET", "/1.0/networks/br1/forwards/192.0.2.1", None).await;
    assert_native_error(&reply, 404, "Network forward not found");
    let reply = call(&fake, "GET", "/1.0/networks/lo/forwards", None).await;
    assert_native_error(&reply, 404, "Failed loading network: Network not found");

    let reply = call(&fake, "GET", "/1.0/networks/br1/load-balancers", None).await;
    assert_native_error(
        &reply,
        400,
        "Network driver \"bridge\" does not support load balancers",
    );
    let reply = call(
        &fake,
        "POST",
        "/1.0/networks/br1/peers",
        Some(json!({"name": "p"})),
    )
    .await;
    assert_native_error(
        &reply,
        400,
        "Network driver \"bridge\" does not support peering",
    );
}

#[tokio::test]
async fn zones_hold_records_and_integrations_take_only_ovn() {
    let fake = fake().await;
    let reply = call(
        &fake,
        "POST",
        "/1.0/network-zones",
        Some(json!({"name": "z.example"})),
    )
    .await;
    assert_created(&reply, "/1.0/network-zones/z.example");
    let reply = call(
        &fake,
        "POST",
        "/1.0/network-zones",
        Some(json!({"name": "z.example"})),
    )
    .await;
    assert_native_error(&reply, 400, "The network zone already exists");
    let record = json!({"name": "www", "entries": [{"type": "A", "value": "192.0.2.1"}]});
    let reply = call(
        &fake,
        "POST",
        "/1.0/network-zones/z.example/records",
        Some(record.clone()),
    )
    .await;
    assert_created(&reply, "/1.0/network-zones/z.example/records/www");
    let object = get(&fake, "/1.0/network-zones/z.example/records/www").await;
    assert_eq!(object["entries"], record["entries"]);
    let reply = call(
        &fake,
        "GET",
        "/1.0/network-zones/z.example/records/nope",
        None,
    )
    .await;
    assert_native_error(&reply, 404, "Network zone record not found");
    let reply = call(&fake, "GET", "/1.0/network-zones/nope/records", None).await;
    assert_native_error(&reply, 404, "Network zone not found");
    let reply = call(
        &fake,
        "POST",
        "/1.0/network-zones/z.example/records/www",
        Some(json!({"name": "w"})),
    )
    .await;
    assert_native_error(&reply, 501, "not implemented");

    let reply = call(
        &fake,
        "POST",
        "/1.0/network-integrations",
        Some(json!({"name": "i1", "type": "bgp"})),
    )
    .await;
    assert_native_error(&reply, 400, "Unsupported integration type \"bgp\"");
    let reply = call(
        &fake,
        "POST",
        "/1.0/network-integrations",
        Some(json!({"name": "i1", "type": "ovn"})),
    )
    .await;
    assert_created(&reply, "/1.0/network-integrations/i1");
    let reply = call(&fake, "GET", "/1.0/network-integrations/nope", None).await;
    assert_native_error(&reply, 404, "Network_integration not found");
}

#[tokio::test]
async fn storage_pools_are_created_updated_and_deleted_unless_in_use() {
    let fake = fake().await;
    let reply = call(
        &fake,
        "POST",
        "/1.0/storage-pools",
        Some(json!({"name": "p2", "driver": "dir"})),
    )
    .await;
    assert_created(&reply, "/1.0/storage-pools/p2");
    let reply = call(
        &fake,
        "POST",
        "/1.0/storage-pools",
        Some(json!({"name": "p2", "driver": "dir"})),
    )
    .await;
    assert_native_error(
        &reply,
        409,
        "The storage pool already exists: The record already exists",
    );
    let reply = call(
        &fake,
        "POST",
        "/1.0/storage-pools",
        Some(json!({"name": "p3", "driver": "nope"})),
    )
    .await;
    assert_native_error(&reply, 500, "Unknown driver");
    let reply = call(
        &fake,
        "POST",
        "/1.0/storage-pools",
        Some(json!({"name": "p3"})),
    )
    .await;
    assert_native_error(&reply, 400, "No driver provided");
    let pool = get(&fake, "/1.0/storage-pools/p2").await;
    assert_eq!(pool["config"]["source"], "/var/lib/incus/storage-pools/p2");
    let patch = json!({"config": {"user.a": "b"}});
    assert_ok(&call(&fake, "PATCH", "/1.0/storage-pools/p2", Some(patch)).await);
    assert_eq!(
        get(&fake, "/1.0/storage-pools/p2").await["config"]["user.a"],
        "b"
    );
    assert!(get(&fake, "/1.0/storage-pools/p2/resources").await["space"].is_object());
    let reply = call(&fake, "GET", "/1.0/storage-pools/nope/resources", None).await;
    assert_native_error(&reply, 500, "Storage pool not found");

    let reply = call(&fake, "DELETE", "/1.0/storage-pools/default", None).await;
    assert_native_error(&reply, 400, "The storage pool is currently in use");
    assert_ok(&call(&fake, "DELETE", "/1.0/storage-pools/p2", None).await);
    let reply = call(&fake, "DELETE", "/1.0/storage-pools/p2", None).await;
    assert_native_error(&reply, 404, "Storage pool not found");
}

#[tokio::test]
async fn buckets_answer_as_a_daemon_without_minio() {
    let fake = fake().await;
    assert_eq!(
        get(&fake, "/1.0/storage-pools/default/buckets").await,
        json!([])
    );
    let reply = call(
        &fake,
        "POST",
        "/1.0/storage-pools/default/buckets",
        Some(json!({"name": "b1"})),
    )
    .await;
    assert_native_error(&reply, 500, "Failed creating storage bucket: Bucket name must be between 3 and 63 lowercase letters, numbers, periods or hyphens and must start with a letter or number");
    let reply = call(
        &fake,
        "POST",
        "/1.0/storage-pools/default/buckets",
        Some(json!({"name": "bucket1"})),
    )
    .await;
    assert_native_error(&reply, 500, "Failed creating storage bucket: Failed connecting to bucket: Couldn't find the MinIO client tool");
    let reply = call(
        &fake,
        "GET",
        "/1.0/storage-pools/default/buckets/nope",
        None,
    )
    .await;
    assert_native_error(&reply, 404, "Storage bucket not found");
    let reply = call(
        &fake,
        "GET",
        "/1.0/storage-pools/default/buckets/nope/keys",
        None,
    )
    .await;
    assert_native_error(
        &reply,
        404,
        "Failed loading storage bucket: Storage bucket not found",
    );
}

#[tokio::test]
async fn server_config_is_set_and_unset_under_the_daemons_key_rules() {
    let fake = fake().await;
    let reply = call(
        &fake,
        "PATCH",
        "/1.0",
        Some(json!({"config": {"bad.key": "1"}})),
    )
    .await;
    assert_native_error(&reply, 400, "cannot set 'bad.key' to '1': unknown key");
    let set = json!({"config": {"user.a": "1", "images.auto_update_interval": "0"}});
    assert_ok(&call(&fake, "PATCH", "/1.0", Some(set)).await);
    let config = &get(&fake, "/1.0").await["config"];
    assert_eq!(
        config,
        &json!({"user.a": "1", "images.auto_update_interval": "0"})
    );
    let unset = json!({"config": {"user.a": ""}});
    assert_ok(&call(&fake, "PATCH", "/1.0", Some(unset)).await);
    assert_eq!(
        get(&fake, "/1.0").await["config"],
        json!({"images.auto_update_interval": "0"})
    );
    assert_ok(&call(&fake, "PUT", "/1.0", Some(json!({"config": {}}))).await);
    assert_eq!(get(&fake, "/1.0").await["config"], json!({}));
    let reply = call(&fake, "PATCH", "/1.0", Some(json!({"config": {"core.debug_address": "x", "images.compression_algorithm": "gzip", "cluster.offline_threshold": "abc"}}))).await;
    assert_eq!(
        reply.status(),
        400,
        "an integer key refuses a word: {:?}",
        reply.json()
    );
}

/// Each refusal as a real Incus 6.0.4 daemon answered it (asked with these values).
#[tokio::test]
async fn server_config_values_are_checked_by_the_daemons_rule_for_their_key() {
    let fake = fake().await;
    let refused = [
        ("acme.agree_tos", "maybe", 400, "cannot set 'acme.agree_tos' to 'maybe': invalid boolean"),
        ("images.auto_update_interval", "x", 400, "cannot set 'images.auto_update_interval' to 'x': invalid integer"),
        ("core.bgp_asn", "x", 400, "cannot set 'core.bgp_asn' to 'x': invalid integer"),
        ("images.compression_algorithm", "bogus", 400, "cannot set 'images.compression_algorithm' to 'bogus': Compression algorithm \"bogus\" isn't currently supported"),
        ("core.https_address", "bogus:addr:x", 400, "cannot set 'core.https_address' to 'bogus:addr:x': Couldn't resolve \"bogus:addr:x\""),
        ("core.metrics_address", "::1:99999", 400, "cannot set 'core.metrics_address' to '::1:99999': Couldn't resolve \"::1:99999\""),
        ("acme.http.port", "abc", 400, "cannot set 'acme.http.port' to 'abc': Couldn't resolve \"abc\""),
        ("core.bgp_routerid", "1.2.3", 400, "cannot set 'core.bgp_routerid' to '1.2.3': Not an IPv4 address \"1.2.3\""),
        ("core.bgp_asn", "-5", 400, "cannot set 'core.bgp_asn' to '-5': Value isn't within valid range. Must be between 0 and 4294967294"),
        ("instances.nic.host_name", "bogus", 400, "cannot set 'instances.nic.host_name' to 'bogus': Invalid value \"bogus\" (not one of [random mac])"),
        ("cluster.images_minimal_replica", "-2", 400, "cannot set 'cluster.images_minimal_replica' to '-2': Invalid value for image replica count"),
        ("cluster.max_voters", "4", 400, "cannot set 'cluster.max_voters' to '4': Value must be an odd number equal to or higher than 3"),
        ("cluster.max_standby", "9", 400, "cannot set 'cluster.max_standby' to '9': Value must be between 0 and 5"),
        ("cluster.offline_threshold", "3", 400, "cannot set 'cluster.offline_threshold' to '3': Value must be greater than '10'"),
        ("core.remote_token_expiry", "bogus", 400, "cannot set 'core.remote_token_expiry' to 'bogus': Invalid expiry expression"),
        ("loki.types", "lifecycle,bogus", 400, "cannot set 'loki.types' to 'lifecycle,bogus': Item \"bogus\": Invalid value \"bogus\" (not one of [lifecycle logging network-acl])"),
        ("loki.loglevel", "bogus", 400, "cannot set 'loki.loglevel' to 'bogus': not a valid logrus Level: \"bogus\""),
        ("acme.challenge", "bogus", 400, "cannot set 'acme.challenge' to 'bogus': Invalid value \"bogus\" (not one of [DNS-01 HTTP-01])"),
        ("storage.backups_volume", "a/b/c", 500, "Failed validation of \"storage.backups_volume\": Invalid syntax for volume, must be <pool>/<volume>"),
        ("storage.images_volume", "nopool/nope", 404, "Failed validation of \"storage.images_volume\": Unable to load storage pool \"nopool\": Storage pool not found"),
        ("storage.images_volume", "default/nope", 404, "Failed validation of \"storage.images_volume\": Failed loading storage volume \"default/nope\" in \"default\" project: Storage volume not found"),
    ];
    for (key, value, status, text) in refused {
        let body = json!({"config": {key: value}});
        let reply = call(&fake, "PATCH", "/1.0", Some(body)).await;
        assert_native_error(&reply, status, text);
    }
    assert_eq!(
        get(&fake, "/1.0").await["config"],
        json!({}),
        "nothing was set"
    );
    let accepted = json!({"config": {
        "core.https_address": "[::1]:8443", "core.metrics_address": ":9100", "acme.http.port": ":80",
        "core.bgp_asn": "65000", "cluster.max_voters": "5", "cluster.offline_threshold": "20",
        "core.remote_token_expiry": "1d 3H", "loki.types": "lifecycle,logging",
        "loki.loglevel": "warn", "images.compression_algorithm": "zstd -19",
    }});
    assert_ok(&call(&fake, "PATCH", "/1.0", Some(accepted)).await);
    let create = json!({"name": "images", "type": "custom"});
    assert_ok(
        &call(
            &fake,
            "POST",
            "/1.0/storage-pools/default/volumes",
            Some(create),
        )
        .await,
    );
    let volume = json!({"config": {"storage.images_volume": "default/images"}});
    assert_ok(&call(&fake, "PATCH", "/1.0", Some(volume)).await);
}

#[tokio::test]
async fn a_stale_etag_on_the_server_config_is_refused_with_412() {
    let fake = fake().await;
    let reply = call(&fake, "GET", "/1.0", None).await;
    let etag = reply.header("etag").expect("an ETag").to_owned();
    let set = json!({"config": {"user.a": "1"}});
    let reply = call_with(
        &fake,
        "PUT",
        "/1.0",
        Some(set.clone()),
        &[("If-Match", &etag)],
    )
    .await;
    assert_ok(&reply);
    for method in ["PUT", "PATCH"] {
        let reply = call_with(
            &fake,
            method,
            "/1.0",
            Some(set.clone()),
            &[("If-Match", &etag)],
        )
        .await;
        assert_eq!(reply.status(), 412, "{method}: {:?}", reply.json());
    }
}

#[tokio::test]
async fn a_warning_update_checks_its_status_before_it_looks_the_warning_up() {
    let fake = fake().await;
    for method in ["PUT", "PATCH"] {
        let reply = call(&fake, method, "/1.0/warnings/nope", Some(json!({}))).await;
        assert_native_error(&reply, 400, "Invalid warning type \"\"");
        let resolved = json!({"status": "resolved"});
        let reply = call(&fake, method, "/1.0/warnings/nope", Some(resolved)).await;
        assert_native_error(
            &reply,
            403,
            "Status may only be set to \"acknowledge\" or \"new\"",
        );
    }
}

/// As a real daemon lists them: `project=` keeps that project's warnings (an unknown project has
/// none, no 404); an empty list is `null` at recursion 0 and `[]` at recursion 1.
#[tokio::test]
async fn warnings_are_listed_per_project_when_project_is_given() {
    let server =
        json!({"uuid": "0a360cfa-4e07-434d-8c98-033df55fd4c6", "project": "", "type": "t"});
    let p1 = json!({"uuid": "70faa3ab-1f85-4bbe-abbf-eb48c1df897c", "project": "p1", "type": "t"});
    let state = json!({
        "projects": [{"name": "default"}, {"name": "p1"}],
        "objects": {"warning": [{"value": server}, {"value": p1}]},
    });
    let fake = crate::common::builder()
        .state(state)
        .start()
        .await
        .expect("fake starts");
    let all = get(&fake, "/1.0/warnings").await;
    assert_eq!(all.as_array().map(Vec::len), Some(2), "{all}");
    let listed = get(&fake, "/1.0/warnings?project=p1&recursion=1").await;
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert_eq!(listed[0]["project"], "p1");
    assert_eq!(get(&fake, "/1.0/warnings?project=nope").await, Value::Null);
    assert_eq!(
        get(&fake, "/1.0/warnings?project=nope&recursion=1").await,
        json!([])
    );
}

#[tokio::test]
async fn warnings_are_none_on_a_fresh_fake() {
    let fake = fake().await;
    assert_eq!(get(&fake, "/1.0/warnings").await, Value::Null);
    let reply = call(&fake, "GET", "/1.0/warnings/nope", None).await;
    assert_native_error(&reply, 404, "Warning not found");
    let ack = json!({"status": "acknowledged"});
    let reply = call(&fake, "PUT", "/1.0/warnings/nope", Some(ack)).await;
    assert_native_error(&reply, 404, "Warning not found");
    let reply = call(&fake, "DELETE", "/1.0/warnings/nope", None).await;
    assert_native_error(&reply, 404, "Warning not found");
}

#[tokio::test]
async fn seeded_warnings_are_acknowledged_and_deleted() {
    let uuid = "70faa3ab-1f85-4bbe-abbf-eb48c1df897c";
    let warning = json!({"uuid": uuid, "status": "new", "type": "t", "count": 1});
    let state = json!({"objects": {"warning": [{"value": warning}]}});
    let fake = crate::common::builder()
        .state(state)
        .start()
        .await
        .expect("fake starts");
    assert_eq!(
        get(&fake, "/1.0/warnings").await,
        json!([format!("/1.0/warnings/{uuid}")])
    );
    let path = format!("/1.0/warnings/{uuid}");
    let reply = call(&fake, "PUT", &path, Some(json!({"status": "resolved"}))).await;
    assert_native_error(
        &reply,
        403,
        "Status may only be set to \"acknowledge\" or \"new\"",
    );
    let reply = call(&fake, "PUT", &path, Some(json!({"status": "nope"}))).await;
    assert_native_error(&reply, 400, "Invalid warning type \"nope\"");
    assert_ok(&call(&fake, "PUT", &path, Some(json!({"status": "acknowledged"}))).await);
    assert_eq!(get(&fake, &path).await["status"], "acknowledged");
    assert_ok(&call(&fake, "DELETE", &path, None).await);
    assert_eq!(get(&fake, "/1.0/warnings").await, Value::Null);
}

#[tokio::test]
async fn certificates_are_added_listed_updated_and_removed() {
    let fake = fake().await;
    let key = rcgen::KeyPair::generate().expect("key");
    let cert = rcgen::CertificateParams::new(vec!["client".into()])
        .expect("params")
        .self_signed(&key)
        .expect("certificate");
    use base64::Engine;
    use sha2::Digest;
    let der = base64::engine::general_purpose::STANDARD.encode(cert.der());
    let fingerprint = hex::encode(sha2::Sha256::digest(cert.der()));
    let add = json!({"type": "client", "name": "laptop", "certificate": der});
    let reply = call(&fake, "POST", "/1.0/certificates", Some(add.clone())).await;
    assert_created(&reply, &format!("/1.0/certificates/{fingerprint}"));
    let reply = call(&fake, "POST", "/1.0/certificates", Some(add)).await;
    assert_native_error(&reply, 409, "Certificate already in trust store");
    let bad = json!({"type": "client", "certificate": "!!"});
    let reply = call(&fake, "POST", "/1.0/certificates", Some(bad)).await;
    assert_native_error(&reply, 400, "illegal base64 data at input byte 0");
    let reply = call(
        &fake,
        "POST",
        "/1.0/certificates",
        Some(json!({"type": "client"})),
    )
    .await;
    assert_native_error(&reply, 400, "Client is already trusted");

    let path = format!("/1.0/certificates/{fingerprint}");
    let object = get(&fake, &path).await;
    assert_eq!(
        (&object["name"], &object["type"]),
        (&json!("laptop"), &json!("client"))
    );
    assert!(object["certificate"]
        .as_str()
        .unwrap_or_default()
        .starts_with("-----BEGIN CERTIFICATE-----"));
    let patch = json!({"restricted": true, "projects": ["default"]});
    assert_ok(&call(&fake, "PATCH", &path, Some(patch)).await);
    let object = get(&fake, &path).await;
    assert_eq!(
        (&object["restricted"], &object["name"]),
        (&json!(true), &json!("laptop"))
    );
    assert_ok(&call(&fake, "DELETE", &path, None).await);
    let reply = call(&fake, "GET", &path, None).await;
    assert_native_error(&reply, 404, "Certificate not found");
    assert_eq!(get(&fake, "/1.0/certificates").await, json!([]));
}

#[tokio::test]
async fn project_state_counts_instances_against_their_limits() {
    let fake = fake().await;
    let project = json!({"name": "p1", "config": {"limits.instances": "3"}});
    call(&fake, "POST", "/1.0/projects", Some(project)).await;
    // p1's own default profile has no root disk: the instance brings its own, as the daemon
    // requires.
    let create = json!({"name": "c1", "source": {"type": "none"},
        "devices": {"root": {"type": "disk", "path": "/", "pool": "default"}}});
    let reply = call(&fake, "POST", "/1.0/instances?project=p1", Some(create)).await;
    crate::common::wait(&fake, &reply).await;
    let state = get(&fake, "/1.0/projects/p1/state").await;
    assert_eq!(
        state["resources"]["instances"],
        json!({"Limit": 3, "Usage": 1})
    );
    assert_eq!(
        state["resources"]["containers"],
        json!({"Limit": -1, "Usage": 1})
    );
    assert_eq!(get(&fake, "/1.0/projects/p1/access").await, Value::Null);
    let reply = call(&fake, "GET", "/1.0/projects/nope/state", None).await;
    assert_native_error(
        &reply,
        404,
        "Fetch project database object: Project not found",
    );
}

#[tokio::test]
async fn the_server_reports_resources_metrics_and_its_configuration_metadata() {
    let fake = fake().await;
    crate::common::launch(&fake, "c1", true).await;
    let resources = get(&fake, "/1.0/resources").await;
    assert!(resources["cpu"]["total"].as_u64() > Some(0), "{resources}");
    let reply = call(&fake, "GET", "/1.0/metrics", None).await;
    assert_eq!(reply.status(), 200);
    let text = String::from_utf8_lossy(reply.bytes()).into_owned();
    assert!(
        text.contains("incus_procs_total{name=\"c1\",project=\"default\",type=\"container\"} 1"),
        "{text}"
    );
    let metadata = get(&fake, "/1.0/metadata/configuration").await;
    assert!(metadata["configs"]["server"]["core"]["keys"].is_array());
}
