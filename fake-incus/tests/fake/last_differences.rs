//! The last endpoints where the fake answered otherwise than Incus 6.0.4 (measured on the real
//! 6.0.4 and 7.0.2, which agree on each): `PUT /1.0/instances`, `PUT /1.0/cluster`, deleting an
//! instance's log file, a host interface's leases, and SFTP without its upgrade.

use crate::common::{call, change_state, completed, fake, launch, wait};
use fake_incus::assert_native_error;
use serde_json::json;

/// The instances of the default project with their status, by name.
async fn statuses(fake: &fake_incus::FakeIncus) -> Vec<(String, String)> {
    let list = call(fake, "GET", "/1.0/instances?recursion=1", None).await;
    let mut out: Vec<(String, String)> = list
        .metadata()
        .as_array()
        .expect("a list")
        .iter()
        .map(|i| {
            let field = |k: &str| i[k].as_str().unwrap_or_default().to_string();
            (field("name"), field("status"))
        })
        .collect();
    out.sort();
    out
}

#[tokio::test]
async fn put_instances_changes_every_instance_the_action_applies_to_in_one_operation() {
    let fake = fake().await;
    for name in ["c1", "c2", "c3"] {
        launch(&fake, name, false).await;
    }
    completed(
        &fake,
        &change_state(&fake, "c3", json!({"action": "start"})).await,
    )
    .await;
    let started = call(
        &fake,
        "PUT",
        "/1.0/instances",
        Some(json!({"state": {"action": "start"}})),
    )
    .await;
    assert_eq!(started.status(), 202, "{}", started.json());
    let metadata = started.metadata();
    assert_eq!(metadata["description"], "Starting instance");
    // Only the stopped ones are started.
    assert_eq!(
        metadata["resources"],
        json!({"instances": ["/1.0/instances/c1", "/1.0/instances/c2"]})
    );
    completed(&fake, &started).await;
    let running: Vec<(String, String)> = ["c1", "c2", "c3"]
        .iter()
        .map(|n| (n.to_string(), "Running".to_string()))
        .collect();
    assert_eq!(statuses(&fake).await, running);
    // Nothing stopped: nothing to start, and the operation still succeeds.
    let again = call(
        &fake,
        "PUT",
        "/1.0/instances",
        Some(json!({"state": {"action": "start"}})),
    )
    .await;
    assert_eq!(again.metadata()["resources"], json!({}));
    completed(&fake, &again).await;
    let stopped = call(
        &fake,
        "PUT",
        "/1.0/instances",
        Some(json!({"state": {"action": "stop", "force": true}})),
    )
    .await;
    completed(&fake, &stopped).await;
    assert!(statuses(&fake).await.iter().all(|(_, s)| s == "Stopped"));
}

#[tokio::test]
async fn put_instances_refuses_a_bad_body_an_unknown_action_and_a_missing_project_as_the_daemon() {
    let fake = fake().await;
    for (body, text) in [
        (json!({}), "Unknown action: ''"),
        (
            json!({"state": {"action": "bogus"}}),
            "Unknown action: 'bogus'",
        ),
        (
            json!([]),
            "json: cannot unmarshal array into Go value of type api.InstancesPut",
        ),
    ] {
        let refused = call(&fake, "PUT", "/1.0/instances", Some(body)).await;
        assert_native_error(&refused, 400, text);
    }
    let missing = call(
        &fake,
        "PUT",
        "/1.0/instances?project=nosuch",
        Some(json!({"state": {"action": "start"}})),
    )
    .await;
    let (status, text) = missing.native_error().expect("an error");
    assert_eq!(status, 500);
    assert!(
        text.starts_with("failed to add \"Starting instance\" Operation ")
            && text.ends_with(" to database: Fetch project ID: Project not found"),
        "{text}"
    );
}

#[tokio::test]
async fn put_cluster_checks_its_body_in_the_daemons_order() {
    let fake = fake().await;
    for (body, text) in [
        (
            json!({"enabled": true}),
            "ServerName is required when enabling clustering",
        ),
        (
            json!({"server_name": "m1"}),
            "ServerName must be empty when disabling clustering",
        ),
        (
            json!({"server_name": "@m1", "enabled": true}),
            "ServerName may not start with \"@\"",
        ),
        (
            json!({"server_name": "m1", "enabled": true, "cluster_address": "10.0.0.1:8443"}),
            "No target cluster member certificate provided",
        ),
        (
            json!({"server_name": "m1", "enabled": true, "cluster_address": "10.0.0.1:8443",
                   "cluster_certificate": "PEM"}),
            "No server address provided for this member",
        ),
    ] {
        let refused = call(&fake, "PUT", "/1.0/cluster", Some(body.clone())).await;
        assert_native_error(&refused, 400, text);
    }
    // Disabling clustering on a standalone server: `{}` (the daemon then restarts).
    let disabled = call(&fake, "PUT", "/1.0/cluster", Some(json!({}))).await;
    assert_eq!((disabled.status(), disabled.metadata()), (200, &json!({})));
}

#[tokio::test]
async fn put_cluster_bootstrap_needs_an_address_and_the_fake_forms_a_cluster_only_at_start() {
    let fake = fake().await;
    let bootstrap = json!({"server_name": "m1", "enabled": true});
    let no_address = call(&fake, "PUT", "/1.0/cluster", Some(bootstrap.clone())).await;
    assert_native_error(
        &no_address,
        500,
        "Cannot use wildcard core.https_address \"\" for cluster.https_address. Please specify a new cluster.https_address or core.https_address",
    );
    let addressed = call(
        &fake,
        "PATCH",
        "/1.0",
        Some(json!({"config": {"core.https_address": "127.0.0.1:8443"}})),
    )
    .await;
    assert_eq!(addressed.status(), 200, "{}", addressed.json());
    let started = call(&fake, "PUT", "/1.0/cluster", Some(bootstrap)).await;
    assert_eq!(started.status(), 202, "{}", started.json());
    assert_eq!(started.metadata()["description"], "Creating bootstrap node");
    assert_eq!(started.metadata()["resources"], json!({"cluster": []}));
    let failed = wait(&fake, &started).await;
    let (_, text) = failed.native_error().expect("the operation fails");
    assert!(text.contains("--cluster"), "{text}");
    let server = call(&fake, "GET", "/1.0", None).await;
    assert_eq!(server.metadata()["environment"]["server_clustered"], false);
}

#[tokio::test]
async fn an_instance_log_file_is_deleted_or_refused_as_the_daemon_does() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    for (method, file, status, text) in [
        (
            "DELETE",
            "lxc.log",
            400,
            "Only log files excluding qemu.log and lxc.log may be deleted",
        ),
        (
            "DELETE",
            "other.log",
            400,
            "Log file name \"other.log\" not valid",
        ),
        (
            "GET",
            "lxc.conf",
            400,
            "Log file name \"lxc.conf\" not valid",
        ),
        (
            "DELETE",
            "migration_x.log",
            404,
            "remove /var/log/incus/c1/migration_x.log: no such file or directory",
        ),
        (
            "GET",
            "qemu.log",
            404,
            "open /var/log/incus/c1/qemu.log: no such file or directory",
        ),
        ("POST", "lxc.log", 501, "not implemented"),
    ] {
        let path = format!("/1.0/instances/c1/logs/{file}");
        let reply = call(&fake, method, &path, None).await;
        assert_native_error(&reply, status, text);
    }
    let unknown = call(&fake, "DELETE", "/1.0/instances/nosuch/logs/x.log", None).await;
    assert_native_error(
        &unknown,
        404,
        "Failed to fetch instance \"nosuch\" in project \"default\": Instance not found",
    );
}

#[tokio::test]
async fn the_leases_of_a_host_interface_are_the_daemons_404() {
    let fake = fake().await;
    let leases = call(&fake, "GET", "/1.0/networks/lo/leases", None).await;
    assert_native_error(&leases, 404, "Failed loading network: Network not found");
}

#[tokio::test]
async fn sftp_without_its_upgrade_is_refused_before_the_instance_is_looked_up() {
    let fake = fake().await;
    let reply = call(&fake, "GET", "/1.0/instances/nosuch/sftp", None).await;
    assert_native_error(&reply, 400, "Missing or invalid upgrade header");
}
