//! Protocol conformance over the Unix socket: envelopes, status codes, keys, types, ETags and
//! operation lifecycles, as the real Incus 6.0.4 daemon answers (see the reference captures).

use crate::common;

use common::{assert_envelope, call, call_with, change_state, completed, fake, launch, wait};
use fake_incus::{assert_native_error, FakeIncus};
use serde_json::{json, Value};
use std::time::Duration;

fn keys(value: &Value) -> Vec<&str> {
    value
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect()
}

fn is_quoted_sha256(etag: &str) -> bool {
    etag.len() == 66
        && etag.starts_with('"')
        && etag.ends_with('"')
        && etag[1..65].chars().all(|c| c.is_ascii_hexdigit())
}

#[tokio::test]
async fn root_lists_the_api_version() {
    let fake = fake().await;
    let reply = call(&fake, "GET", "/", None).await;
    assert_eq!(reply.status(), 200);
    assert_envelope(reply.json());
    assert_eq!(reply.json()["metadata"], json!(["/1.0"]));
    assert!(reply.bytes().ends_with(b"\n"), "bodies end with a newline");
}

#[tokio::test]
async fn server_is_trusted_locally_with_environment_and_etag() {
    let fake = fake().await;
    let reply = call(&fake, "GET", "/1.0", None).await;
    assert_eq!(reply.status(), 200);
    let m = reply.metadata();
    assert_eq!(
        keys(m),
        [
            "config",
            "api_extensions",
            "api_status",
            "api_version",
            "auth",
            "public",
            "auth_methods",
            "auth_user_name",
            "auth_user_method",
            "environment"
        ]
    );
    assert_eq!(m["auth"], "trusted");
    assert_eq!(m["auth_user_method"], "unix");
    assert_eq!(m["api_extensions"].as_array().unwrap().len(), 450);
    assert!(m["api_extensions"]
        .as_array()
        .unwrap()
        .contains(&json!("instance_create_start")));
    assert_eq!(m["environment"]["server_version"], "6.0.4");
    assert_eq!(
        m["environment"]["storage_supported_drivers"][0]["Name"],
        "dir"
    );
    assert!(is_quoted_sha256(reply.header("etag").unwrap()));
    // sha256("{}\n"): the server ETag hashes the config map.
    assert_eq!(
        reply.header("etag").unwrap(),
        "\"ca3d163bab055381827226140568f3bef7eaac187cebd76878e0b63e9e442356\""
    );
}

#[tokio::test]
async fn unknown_route_is_404_and_unhandled_method_is_501() {
    let fake = fake().await;
    let reply = call(&fake, "GET", "/2.0", None).await;
    assert_native_error(&reply, 404, "not found");
    assert_envelope(reply.json());
    assert_eq!(reply.json()["metadata"], Value::Null);
    assert_eq!(reply.header("x-content-type-options"), Some("nosniff"));
    let reply = call(&fake, "POST", "/1.0/operations", None).await;
    assert_native_error(&reply, 501, "not implemented");
    let reply = call(&fake, "GET", "/1.0?target=x", None).await;
    assert_native_error(&reply, 404, "Cluster member not found");
}

#[tokio::test]
async fn instance_create_is_async_and_the_operation_succeeds() {
    let fake = fake().await;
    let body = json!({"name": "c1", "source": {"type": "image", "alias": "busybox"}});
    let reply = call(&fake, "POST", "/1.0/instances", Some(body)).await;
    assert_eq!(reply.status(), 202);
    assert_envelope(reply.json());
    assert_eq!(
        (
            reply.json()["type"].as_str(),
            reply.json()["status"].as_str()
        ),
        (Some("async"), Some("Operation created"))
    );
    assert_eq!(reply.json()["status_code"], 100);
    let op = reply.metadata();
    assert_eq!(
        keys(op),
        [
            "id",
            "class",
            "description",
            "created_at",
            "updated_at",
            "status",
            "status_code",
            "resources",
            "metadata",
            "may_cancel",
            "err",
            "location"
        ]
    );
    assert_eq!(op["status"], "Running");
    assert_eq!(op["description"], "Creating instance");
    assert_eq!(op["resources"], json!({"instances": ["/1.0/instances/c1"]}));
    assert_eq!(
        reply.header("location").unwrap(),
        reply.json()["operation"].as_str().unwrap()
    );
    let done = wait(&fake, &reply).await;
    assert_eq!(done.status(), 200);
    assert_eq!(done.header("connection"), Some("keep-alive"));
    assert_eq!(done.metadata()["status"], "Success");
    assert_eq!(done.metadata()["status_code"], 200);
    let got = call(&fake, "GET", "/1.0/instances/c1", None).await;
    assert_eq!(
        keys(got.metadata()),
        [
            "architecture",
            "config",
            "devices",
            "ephemeral",
            "profiles",
            "stateful",
            "description",
            "created_at",
            "expanded_config",
            "expanded_devices",
            "name",
            "status",
            "status_code",
            "last_used_at",
            "location",
            "type",
            "project"
        ]
    );
    assert_eq!(got.metadata()["status"], "Stopped");
    assert_eq!(got.metadata()["last_used_at"], "1970-01-01T00:00:00Z");
    assert_eq!(
        got.metadata()["expanded_devices"]["root"],
        json!({"path": "/", "pool": "default", "type": "disk"})
    );
    assert_eq!(got.metadata()["config"]["image.os"], "busybox");
    assert!(is_quoted_sha256(got.header("etag").unwrap()));
}

#[tokio::test]
async fn duplicate_instance_name_fails_inside_the_operation_not_409() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let body = json!({"name": "c1", "source": {"type": "image", "alias": "busybox"}});
    let reply = call(&fake, "POST", "/1.0/instances", Some(body)).await;
    assert_eq!(reply.status(), 202);
    let done = wait(&fake, &reply).await;
    assert_eq!(
        done.status(),
        200,
        "the wait answers 200 even for a failed operation"
    );
    assert_envelope(done.json());
    assert_eq!(done.json()["type"], "error");
    assert_eq!(done.json()["error_code"], 500);
    assert!(done.json()["error"]
        .as_str()
        .unwrap()
        .contains("UNIQUE constraint failed: instances.project_id, instances.name"));
    let missing = json!({"name": "c2", "source": {"type": "image", "alias": "nope"}});
    let done = wait(
        &fake,
        &call(&fake, "POST", "/1.0/instances", Some(missing)).await,
    )
    .await;
    assert_eq!(
        done.json()["error"],
        "Image not provided for instance creation"
    );
}

#[tokio::test]
async fn instance_create_rejects_bad_input_synchronously() {
    let fake = fake().await;
    let reply = call(
        &fake,
        "POST",
        "/1.0/instances",
        Some(json!({"name": "bad_name!", "source": {"type": "image", "alias": "busybox"}})),
    )
    .await;
    assert_eq!(reply.status(), 400);
    assert_eq!(
        reply.json()["error"],
        "Invalid instance name: Name can only contain alphanumeric and hyphen characters"
    );
    let reply = call(&fake, "POST", "/1.0/instances", Some(json!({"name": "r3"}))).await;
    assert_native_error(&reply, 400, "Unknown source type ");
    let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
        .build(hyperlocal::UnixConnector);
    let uri: http::Uri = hyperlocal::Uri::new(fake.unix_socket(), "/1.0/instances").into();
    let req = http::Request::post(uri)
        .body(http_body_util::Full::new(bytes::Bytes::from_static(
            b"{bad",
        )))
        .unwrap();
    let resp = client.request(req).await.unwrap();
    assert_eq!(resp.status(), 400);
    assert!(
        fake.journal().iter().all(|e| !e.applied),
        "nothing was applied"
    );
}

#[tokio::test]
async fn instance_lists_follow_recursion_filter_and_project() {
    let fake = fake().await;
    launch(&fake, "c1", true).await;
    launch(&fake, "c2", false).await;
    let r0 = call(&fake, "GET", "/1.0/instances", None).await;
    assert_eq!(
        r0.metadata(),
        &json!(["/1.0/instances/c1", "/1.0/instances/c2"])
    );
    assert!(r0.header("etag").is_none(), "collections carry no ETag");
    let r1 = call(&fake, "GET", "/1.0/instances?recursion=1", None).await;
    assert_eq!(r1.metadata()[0]["name"], "c1");
    assert!(r1.metadata()[0].get("state").is_none());
    let r2 = call(&fake, "GET", "/1.0/instances?recursion=2", None).await;
    assert_eq!(
        r2.metadata()[1]["snapshots"],
        Value::Null,
        "no snapshots is null"
    );
    assert_eq!(r2.metadata()[1]["backups"], Value::Null);
    assert_eq!(r2.metadata()[0]["state"]["status"], "Running");
    assert_eq!(r2.metadata()[1]["state"]["network"], Value::Null);
    let filtered = call(
        &fake,
        "GET",
        "/1.0/instances?filter=status%20eq%20Running",
        None,
    )
    .await;
    assert_eq!(filtered.metadata(), &json!(["/1.0/instances/c1"]));
    let bad = call(
        &fake,
        "GET",
        "/1.0/instances?recursion=1&filter=name%20zz",
        None,
    )
    .await;
    assert_native_error(&bad, 400, "Invalid filter: clause has no value");
    let unknown = call(&fake, "GET", "/1.0/instances?project=nope", None).await;
    assert_eq!((unknown.status(), unknown.metadata()), (200, &json!([])));
    let slash = call(&fake, "GET", "/1.0/instances/c1%2Fsnap0", None).await;
    assert_native_error(&slash, 400, "Invalid instance name");
    let missing = call(&fake, "GET", "/1.0/instances/nope?project=default", None).await;
    assert_eq!(missing.status(), 404);
    assert_eq!(
        missing.json()["error"],
        "Failed to fetch instance \"nope\" in project \"default\": Instance not found"
    );
}

#[tokio::test]
async fn etag_ignores_description_and_changes_on_start() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let etag = |r: &common::Reply| r.header("etag").unwrap().to_string();
    let before = etag(&call(&fake, "GET", "/1.0/instances/c1", None).await);
    let patched = call(
        &fake,
        "PATCH",
        "/1.0/instances/c1",
        Some(json!({"description": "new"})),
    )
    .await;
    assert_eq!(
        (patched.status(), patched.metadata()),
        (200, &json!({})),
        "PATCH is synchronous"
    );
    assert_eq!(
        before,
        etag(&call(&fake, "GET", "/1.0/instances/c1", None).await)
    );
    let start = change_state(&fake, "c1", json!({"action": "start"})).await;
    wait(&fake, &start).await;
    assert_ne!(
        before,
        etag(&call(&fake, "GET", "/1.0/instances/c1", None).await)
    );
}

#[tokio::test]
async fn if_match_is_compared_literally_and_stale_is_412() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let current = call(&fake, "GET", "/1.0/instances/c1", None)
        .await
        .header("etag")
        .unwrap()
        .to_string();
    let bare = current.trim_matches('"').to_string();
    let stale = call_with(
        &fake,
        "PATCH",
        "/1.0/instances/c1",
        Some(json!({"config": {"user.a": "1"}})),
        &[("if-match", "\"abc\"")],
    )
    .await;
    assert_eq!(stale.status(), 412);
    assert_eq!(
        stale.json()["error"],
        format!("ETag doesn't match: {bare} vs abc")
    );
    let star = call_with(
        &fake,
        "PATCH",
        "/1.0/instances/c1",
        Some(json!({})),
        &[("if-match", "*")],
    )
    .await;
    assert_eq!(star.status(), 412, "* is not special");
    let ok = call_with(
        &fake,
        "PATCH",
        "/1.0/instances/c1",
        Some(json!({"config": {"user.a": "1"}})),
        &[("if-match", &bare)],
    )
    .await;
    assert_eq!(ok.status(), 200);
    let got = call(&fake, "GET", "/1.0/instances/c1", None).await;
    assert_eq!(got.metadata()["config"]["user.a"], "1");
    let removed = call(
        &fake,
        "PATCH",
        "/1.0/instances/c1",
        Some(json!({"config": {"user.a": ""}})),
    )
    .await;
    assert_eq!(removed.status(), 200);
    let got = call(&fake, "GET", "/1.0/instances/c1", None).await;
    assert!(
        got.metadata()["config"].get("user.a").is_none(),
        "\"\" deletes the key"
    );
    let stale_put = call_with(
        &fake,
        "PUT",
        "/1.0/instances/c1",
        Some(json!({"config": {}})),
        &[("if-match", "abc")],
    )
    .await;
    assert_eq!(stale_put.status(), 412, "PUT checks If-Match synchronously");
    let missing = call_with(
        &fake,
        "PATCH",
        "/1.0/instances/nope",
        Some(json!({})),
        &[("if-match", "abc")],
    )
    .await;
    assert_eq!(missing.status(), 404, "lookup comes before the ETag");
}

#[tokio::test]
async fn patch_validation_errors_are_500_and_restore_mode_is_400() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let bad = call(
        &fake,
        "PATCH",
        "/1.0/instances/c1",
        Some(json!({"config": {"foo.bar": "1"}})),
    )
    .await;
    assert_native_error(
        &bad,
        500,
        "Invalid config: Unknown configuration key: foo.bar",
    );
    for (key, value, message) in [
        (
            "limits.memory",
            "bogus",
            "Invalid config: Invalid value: bogus",
        ),
        (
            "limits.cpu",
            "abc",
            "Invalid config: Invalid CPU limit syntax",
        ),
        (
            "security.privileged",
            "maybe",
            "Invalid config: Invalid value for a boolean \"maybe\"",
        ),
        (
            "limits.processes",
            "x",
            "Invalid config: Invalid value for an integer \"x\"",
        ),
        (
            "snapshots.expiry",
            "bad",
            "Invalid config: Invalid expiry expression",
        ),
        (
            "volatile.foo",
            "1",
            "Invalid config: Unknown configuration key: volatile.foo",
        ),
    ] {
        let bad = call(
            &fake,
            "PATCH",
            "/1.0/instances/c1",
            Some(json!({"config": {key: value}})),
        )
        .await;
        assert_eq!(
            (bad.status(), bad.json()["error"].as_str()),
            (500, Some(message)),
            "{key}"
        );
    }
    for (key, value) in [
        ("limits.memory", "512MiB"),
        ("limits.cpu", "0-1"),
        ("security.nesting", "true"),
        ("snapshots.expiry", "1d 2w"),
    ] {
        let ok = call(
            &fake,
            "PATCH",
            "/1.0/instances/c1",
            Some(json!({"config": {key: value}})),
        )
        .await;
        assert_eq!(ok.status(), 200, "{key}={value}");
    }
    let restore = call(
        &fake,
        "PATCH",
        "/1.0/instances/c1",
        Some(json!({"restore": "s"})),
    )
    .await;
    assert_native_error(&restore, 400, "Can't call PATCH in restore mode");
}

#[tokio::test]
async fn put_replaces_and_requires_volatile_idmap_keys() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let got = call(&fake, "GET", "/1.0/instances/c1", None).await;
    let mut config = got.metadata()["config"].clone();
    config["user.k"] = json!("v");
    let put = call(
        &fake,
        "PUT",
        "/1.0/instances/c1",
        Some(json!({"config": config, "devices": {}, "profiles": ["default"]})),
    )
    .await;
    assert_eq!(
        (put.status(), put.metadata()["description"].as_str()),
        (202, Some("Updating instance"))
    );
    completed(&fake, &put).await;
    let dropped = call(
        &fake,
        "PUT",
        "/1.0/instances/c1",
        Some(json!({"config": {"user.k": "v"}, "profiles": ["default"]})),
    )
    .await;
    let done = wait(&fake, &dropped).await;
    assert_eq!(
        done.json()["error"],
        "Volatile idmap keys can't be deleted by the user"
    );
    let got = call(&fake, "GET", "/1.0/instances/c1", None).await;
    assert_eq!(got.metadata()["config"]["user.k"], "v");
    assert!(
        got.metadata()["config"]
            .get("volatile.idmap.next")
            .is_some(),
        "nothing changed"
    );
}

#[tokio::test]
async fn state_changes_take_a_moment_like_a_real_daemon_unless_a_fault_says_otherwise() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let state_put = |action: &'static str| {
        let fake = &fake;
        async move {
            call(
                fake,
                "PUT",
                "/1.0/instances/c1/state",
                Some(json!({"action": action, "force": true})),
            )
            .await
        }
    };
    let started = std::time::Instant::now();
    let start = state_put("start").await;
    let url = start.json()["operation"].as_str().unwrap().to_owned();
    assert_eq!(start.metadata()["status"], "Running");
    let at_once = call(&fake, "GET", &format!("{url}/wait?timeout=0"), None).await;
    assert_eq!(at_once.json()["error"], "context deadline exceeded");
    completed(&fake, &start).await;
    assert!(started.elapsed() >= Duration::from_millis(200));
    let restart = state_put("restart").await;
    let started = std::time::Instant::now();
    wait(&fake, &restart).await;
    assert!(started.elapsed() >= Duration::from_millis(300));
    let _instant = fake.add_rule(
        fake_incus::Rule::new("PUT", "/1.0/instances/c1/state")
            .fault(fake_incus::Fault::OperationDuration { ms: 0 }),
    );
    let stop = state_put("stop").await;
    let url = stop.json()["operation"].as_str().unwrap();
    let waited = call(&fake, "GET", &format!("{url}/wait?timeout=1"), None).await;
    assert_eq!(waited.metadata()["status"], "Success");
}

#[tokio::test]
async fn state_changes_are_operations_with_daemon_failures() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let stop = change_state(&fake, "c1", json!({"action": "stop"})).await;
    assert_eq!(stop.metadata()["description"], "Stopping instance");
    let done = wait(&fake, &stop).await;
    assert_native_error(&done, 400, "The instance is already stopped");
    let bad = change_state(&fake, "c1", json!({"action": "explode"})).await;
    assert_native_error(&bad, 400, "Unknown action: 'explode'");
    wait(
        &fake,
        &change_state(&fake, "c1", json!({"action": "start"})).await,
    )
    .await;
    let again = wait(
        &fake,
        &change_state(&fake, "c1", json!({"action": "start"})).await,
    )
    .await;
    assert_native_error(&again, 500, "The instance is already running");
    let state = call(&fake, "GET", "/1.0/instances/c1/state", None).await;
    assert_eq!(
        keys(state.metadata()),
        [
            "status",
            "status_code",
            "disk",
            "memory",
            "network",
            "pid",
            "processes",
            "cpu",
            "started_at",
            "os_info"
        ]
    );
    assert!(state.header("etag").is_none());
    wait(
        &fake,
        &change_state(&fake, "c1", json!({"action": "freeze"})).await,
    )
    .await;
    let frozen = call(&fake, "GET", "/1.0/instances/c1/state", None).await;
    assert_eq!(
        (
            frozen.metadata()["status"].as_str(),
            frozen.metadata()["status_code"].as_u64()
        ),
        (Some("Frozen"), Some(110))
    );
    let delete = call(&fake, "DELETE", "/1.0/instances/c1", None).await;
    assert_native_error(&delete, 400, "Instance is running");
}

#[tokio::test]
async fn snapshots_create_list_restore_and_delete() {
    let fake = fake().await;
    launch(&fake, "c1", true).await;
    let create = call(
        &fake,
        "POST",
        "/1.0/instances/c1/snapshots",
        Some(json!({"name": "s1"})),
    )
    .await;
    assert_eq!(
        create.metadata()["resources"]["instances_snapshots"],
        json!(["/1.0/instances/c1/snapshots/s1"])
    );
    wait(&fake, &create).await;
    let auto = wait(
        &fake,
        &call(
            &fake,
            "POST",
            "/1.0/instances/c1/snapshots",
            Some(json!({})),
        )
        .await,
    )
    .await;
    assert_eq!(auto.json()["type"], "sync");
    let list = call(&fake, "GET", "/1.0/instances/c1/snapshots", None).await;
    assert_eq!(
        list.metadata(),
        &json!([
            "/1.0/instances/c1/snapshots/s1",
            "/1.0/instances/c1/snapshots/snap0"
        ])
    );
    let snap = call(&fake, "GET", "/1.0/instances/c1/snapshots/s1", None).await;
    assert_eq!(
        snap.header("etag").unwrap(),
        "\"2c86054b814faf5dfb954f32dfdc8a32e8e36dce3d9b1c93ed3e2f204f13a1f2\""
    );
    assert_eq!(
        keys(snap.metadata()),
        [
            "expires_at",
            "architecture",
            "config",
            "created_at",
            "devices",
            "ephemeral",
            "expanded_config",
            "expanded_devices",
            "last_used_at",
            "name",
            "profiles",
            "stateful",
            "size"
        ]
    );
    let dup = wait(
        &fake,
        &call(
            &fake,
            "POST",
            "/1.0/instances/c1/snapshots",
            Some(json!({"name": "s1"})),
        )
        .await,
    )
    .await;
    assert!(dup.json()["error"]
        .as_str()
        .unwrap()
        .starts_with("Failed creating instance snapshot record \"s1\""));
    let slash = call(
        &fake,
        "POST",
        "/1.0/instances/c1/snapshots",
        Some(json!({"name": "a/b"})),
    )
    .await;
    assert_eq!(slash.status(), 400);
    call(
        &fake,
        "PATCH",
        "/1.0/instances/c1",
        Some(json!({"config": {"user.after": "1"}})),
    )
    .await;
    let restore = call(
        &fake,
        "PUT",
        "/1.0/instances/c1",
        Some(json!({"restore": "s1"})),
    )
    .await;
    assert_eq!(restore.metadata()["description"], "Restoring snapshot");
    wait(&fake, &restore).await;
    let got = call(&fake, "GET", "/1.0/instances/c1", None).await;
    assert!(got.metadata()["config"].get("user.after").is_none());
    assert_eq!(
        got.metadata()["status"],
        "Running",
        "a restored container keeps running"
    );
    let missing = wait(
        &fake,
        &call(
            &fake,
            "PUT",
            "/1.0/instances/c1",
            Some(json!({"restore": "nope"})),
        )
        .await,
    )
    .await;
    assert_eq!(missing.json()["error"], "Snapshot c1/nope does not exist");
    let delete = call(&fake, "DELETE", "/1.0/instances/c1/snapshots/s1", None).await;
    assert_eq!(delete.metadata()["description"], "Deleting snapshot");
    wait(&fake, &delete).await;
    let gone = call(&fake, "GET", "/1.0/instances/c1/snapshots/s1", None).await;
    assert_eq!(gone.status(), 404);
    assert_eq!(gone.json()["error"], "Failed to fetch snapshot \"s1\" of instance \"c1\" in project \"default\": Instance_snapshot not found");
    let unknown = call(&fake, "GET", "/1.0/instances/nope/snapshots", None).await;
    assert_eq!((unknown.status(), unknown.metadata()), (200, &json!([])));
}

#[tokio::test]
async fn images_and_aliases_resolve_and_delete_together() {
    let fake = fake().await;
    let list = call(&fake, "GET", "/1.0/images?recursion=1", None).await;
    let image = &list.metadata()[0];
    assert_eq!(
        keys(image),
        [
            "auto_update",
            "properties",
            "public",
            "expires_at",
            "profiles",
            "aliases",
            "architecture",
            "cached",
            "filename",
            "fingerprint",
            "size",
            "type",
            "created_at",
            "last_used_at",
            "uploaded_at",
            "project"
        ]
    );
    let fp = image["fingerprint"].as_str().unwrap().to_string();
    let by_prefix = call(&fake, "GET", &format!("/1.0/images/{}", &fp[..12]), None).await;
    assert_eq!(by_prefix.metadata()["fingerprint"], fp.as_str());
    assert!(by_prefix.header("etag").is_some());
    let alias = call(&fake, "GET", "/1.0/images/aliases/busybox", None).await;
    assert_eq!(
        alias.metadata(),
        &json!({"description": "", "target": fp, "name": "busybox", "type": "container"})
    );
    let nope = call(&fake, "GET", "/1.0/images/abc", None).await;
    assert_native_error(&nope, 404, "Image \"abc\" not found");
    let del_nope = call(&fake, "DELETE", "/1.0/images/abc", None).await;
    assert_native_error(&del_nope, 404, "Image not found");
    let delete = call(&fake, "DELETE", &format!("/1.0/images/{fp}"), None).await;
    assert_eq!(
        delete.metadata()["resources"],
        json!({"images": [format!("/1.0/images/{fp}")]})
    );
    wait(&fake, &delete).await;
    let alias = call(&fake, "GET", "/1.0/images/aliases/busybox", None).await;
    assert_native_error(&alias, 404, "Image alias not found");
}

#[tokio::test]
async fn read_only_resources_have_the_daemon_shapes() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    // Each object's keys in the daemon's order, and its ETag where the daemon sends one.
    let shapes: [(&str, &[&str], Option<&str>); 5] = [
        (
            "/1.0/networks/lo",
            &[
                "config",
                "description",
                "name",
                "type",
                "used_by",
                "managed",
                "status",
                "locations",
                "project",
            ],
            Some("f0b27cab0882758cc723539b84d23e4f2b394a49f09cc8df756d463744b9da71"),
        ),
        (
            "/1.0/profiles/default",
            &[
                "config",
                "description",
                "devices",
                "name",
                "used_by",
                "project",
            ],
            Some("12b5fad504e1f435d9de1739519902aecb628092d3ae91955235c366541f7b6a"),
        ),
        (
            "/1.0/projects/default",
            &["config", "description", "name", "used_by"],
            Some("9289efd089a9cba50849c2e637cb098a19fee6941aa263e8c358c4ca89df700d"),
        ),
        (
            "/1.0/storage-pools/default",
            &[
                "config",
                "description",
                "name",
                "driver",
                "used_by",
                "status",
                "locations",
            ],
            None,
        ),
        (
            "/1.0/storage-pools/default/volumes/container/c1",
            &[
                "config",
                "description",
                "name",
                "type",
                "used_by",
                "location",
                "content_type",
                "project",
                "created_at",
            ],
            Some("9ba9b7d35c48ef6ff06dc798267bd54546ab0b065a5e37ee13d30427facfbbce"),
        ),
    ];
    for (path, fields, etag) in shapes {
        let reply = call(&fake, "GET", path, None).await;
        assert_eq!(keys(reply.metadata()), fields, "{path}");
        if let Some(etag) = etag {
            assert_eq!(
                reply.header("etag"),
                Some(format!("\"{etag}\"").as_str()),
                "{path}"
            );
        }
    }
    let profile = call(&fake, "GET", "/1.0/profiles/default", None).await;
    assert_eq!(profile.metadata()["used_by"], json!(["/1.0/instances/c1"]));
    let volumes = call(&fake, "GET", "/1.0/storage-pools/default/volumes", None).await;
    assert_eq!(
        volumes.metadata(),
        &json!(["/1.0/storage-pools/default/volumes/container/c1"])
    );
    for (path, message) in [
        ("/1.0/networks/nope", "Network not found"),
        ("/1.0/profiles/nope", "Fetch profile: Profile not found"),
        ("/1.0/projects/nope", "Project not found"),
        ("/1.0/storage-pools/nope", "Storage pool not found"),
        (
            "/1.0/storage-pools/default/volumes/container/nope",
            "Storage pool volume not found",
        ),
    ] {
        assert_native_error(&call(&fake, "GET", path, None).await, 404, message);
    }
}

#[tokio::test]
async fn operations_list_wait_cancel_and_expire_like_the_daemon() {
    let fake = crate::common::builder()
        .operation_retention(Duration::from_millis(300))
        .start()
        .await
        .unwrap();
    let none = call(&fake, "GET", "/1.0/operations", None).await;
    assert_eq!(none.metadata(), &json!({}));
    let _slow = fake.add_rule(
        fake_incus::Rule::new("POST", "/1.0/instances")
            .fault(fake_incus::Fault::OperationNeverFinish),
    );
    let create = call(
        &fake,
        "POST",
        "/1.0/instances",
        Some(json!({"name": "c1", "source": {"type": "image", "alias": "busybox"}})),
    )
    .await;
    let url = create.json()["operation"].as_str().unwrap().to_string();
    let list = call(&fake, "GET", "/1.0/operations", None).await;
    assert_eq!(list.metadata(), &json!({"running": [url]}));
    let timed_out = call(&fake, "GET", &format!("{url}/wait?timeout=0"), None).await;
    assert_eq!(timed_out.status(), 200);
    assert_native_error(&timed_out, 500, "context deadline exceeded");
    let bad = call(&fake, "GET", &format!("{url}/wait?timeout=abc"), None).await;
    assert_native_error(&bad, 500, "strconv.Atoi: parsing \"abc\": invalid syntax");
    let cancel = call(&fake, "DELETE", &url, None).await;
    assert_native_error(&cancel, 400, "This operation can't be cancelled");
    let both = call(
        &fake,
        "GET",
        "/1.0/operations?project=default&all-projects=true",
        None,
    )
    .await;
    assert_native_error(
        &both,
        400,
        "Cannot specify a project when requesting all projects",
    );
    let unknown = call(
        &fake,
        "GET",
        "/1.0/operations/00000000-0000-4000-8000-000000000000/wait",
        None,
    )
    .await;
    assert_native_error(&unknown, 404, "Operation not found");
    drop(_slow);
    let missing = change_state(&fake, "nope", json!({"action": "start"})).await;
    assert_eq!(
        missing.status(),
        404,
        "state of a missing instance is a sync 404"
    );
    let quick = call(
        &fake,
        "POST",
        "/1.0/instances",
        Some(json!({"name": "c2", "source": {"type": "image", "alias": "busybox"}})),
    )
    .await;
    let quick_url = quick.json()["operation"].as_str().unwrap().to_string();
    wait(&fake, &quick).await;
    let late_cancel = call(&fake, "DELETE", &quick_url, None).await;
    assert_native_error(
        &late_cancel,
        400,
        "Only running operations can be cancelled",
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    loop {
        let reply = call(&fake, "GET", &quick_url, None).await;
        if reply.status() == 404 {
            assert_eq!(reply.json()["error"], "Operation not found");
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "finished operations expire"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test]
async fn state_seeds_dumps_and_resets() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let dump = fake.dump_state();
    assert_eq!(dump["instances"][0]["name"], "c1");
    let copy = crate::common::builder()
        .state(dump.clone())
        .start()
        .await
        .unwrap();
    let got = call(&copy, "GET", "/1.0/instances/c1", None).await;
    assert_eq!(got.status(), 200);
    fake.reset();
    assert_eq!(
        call(&fake, "GET", "/1.0/instances", None).await.metadata(),
        &json!([])
    );
    assert!(fake.journal().len() == 1, "reset clears the journal");
    let err = crate::common::builder()
        .state(json!({"instances": [{"name": "x", "project": "nope"}]}))
        .start()
        .await
        .unwrap_err();
    assert!(err.to_string().contains("unknown project"), "{err}");
    let err = crate::common::builder()
        .state(json!([1]))
        .start()
        .await
        .unwrap_err();
    assert!(matches!(err, fake_incus::Error::State(_)));
}

#[tokio::test]
async fn unknown_project_is_404_with_each_endpoint_message_but_lists_instances_empty() {
    let fake = fake().await;
    let cases = [
        ("GET", "/1.0/instances/x?project=nope", "Project not found"),
        (
            "PUT",
            "/1.0/instances/x/state?project=nope",
            "Project not found",
        ),
        (
            "GET",
            "/1.0/instances/x/snapshots?project=nope",
            "Project not found",
        ),
        (
            "GET",
            "/1.0/images?project=nope",
            "Check if project has images: fetch project: Project not found",
        ),
        (
            "GET",
            "/1.0/images/aliases/busybox?project=nope",
            "Check if project has images: fetch project: Project not found",
        ),
        (
            "GET",
            "/1.0/images/abc?project=nope",
            "Image \"abc\" not found",
        ),
        (
            "GET",
            "/1.0/profiles?project=nope",
            "Failed loading project \"nope\": Project not found",
        ),
        (
            "GET",
            "/1.0/networks/lo?project=nope",
            "Failed to load project \"nope\": Project not found",
        ),
        (
            "GET",
            "/1.0/storage-pools/default/volumes?project=nope",
            "Project not found",
        ),
        (
            "GET",
            "/1.0/storage-pools/default/volumes/container/x?project=nope",
            "Failed to load project \"nope\": Project not found",
        ),
        (
            "POST",
            "/1.0/instances?project=nope",
            "Failed loading project: Project not found",
        ),
    ];
    for (method, path, message) in cases {
        let body = (method != "GET")
            .then(|| json!({"action": "start", "name": "x", "source": {"type": "none"}}));
        let reply = call(&fake, method, path, body).await;
        assert_eq!(
            (reply.status(), reply.json()["error"].as_str()),
            (404, Some(message)),
            "{method} {path}"
        );
    }
    assert_eq!(
        call(&fake, "GET", "/1.0/operations?project=nope", None)
            .await
            .metadata(),
        &json!({})
    );
    assert_eq!(
        call(&fake, "GET", "/1.0/storage-pools?project=nope", None)
            .await
            .status(),
        200
    );
}

#[tokio::test]
async fn ephemeral_instances_are_deleted_when_stopped() {
    let fake = fake().await;
    let body = json!({"name": "e1", "ephemeral": true, "start": true, "source": {"type": "image", "alias": "busybox"}});
    wait(
        &fake,
        &call(&fake, "POST", "/1.0/instances", Some(body)).await,
    )
    .await;
    assert_eq!(
        call(&fake, "GET", "/1.0/instances/e1", None)
            .await
            .metadata()["ephemeral"],
        true
    );
    wait(
        &fake,
        &change_state(&fake, "e1", json!({"action": "stop", "force": true})).await,
    )
    .await;
    assert_eq!(
        call(&fake, "GET", "/1.0/instances/e1", None).await.status(),
        404
    );
}

#[tokio::test]
async fn create_reports_config_and_device_errors_in_the_operation_and_unknown_profiles_at_once() {
    let fake = fake().await;
    let bad = json!({"name": "c1", "source": {"type": "image", "alias": "busybox"}, "config": {"limits.memory": "bogus"}});
    let done = wait(
        &fake,
        &call(&fake, "POST", "/1.0/instances", Some(bad)).await,
    )
    .await;
    assert_native_error(
        &done,
        500,
        "Failed creating instance record: Invalid value: bogus",
    );
    let unknown = json!({"name": "c1", "source": {"type": "image", "alias": "busybox"}, "config": {"foo.bar": "1"}});
    let done = wait(
        &fake,
        &call(&fake, "POST", "/1.0/instances", Some(unknown)).await,
    )
    .await;
    assert_eq!(
        done.json()["error"],
        "Failed creating instance record: Unknown configuration key: foo.bar"
    );
    let profile = json!({"name": "c1", "source": {"type": "image", "alias": "busybox"}, "profiles": ["nope"]});
    let reply = call(&fake, "POST", "/1.0/instances", Some(profile)).await;
    assert_native_error(&reply, 500, "Requested profile \"nope\" doesn't exist");
    launch(&fake, "c1", false).await;
    let device = json!({"devices": {"eth9": {"type": "nic", "nictype": "bogus"}}});
    let reply = call(&fake, "PATCH", "/1.0/instances/c1", Some(device)).await;
    assert_eq!(reply.status(), 500);
    assert_eq!(reply.json()["error"], "Invalid devices: Device validation failed for \"eth9\": Failed loading device \"eth9\": Unsupported device type");
    let bad_json = call_with(&fake, "PUT", "/1.0/instances/c1/state", None, &[]).await;
    assert_native_error(&bad_json, 400, "EOF");
}

#[tokio::test]
async fn power_transition_failures_use_the_daemon_texts() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let act = |action: &'static str| {
        let fake = &fake;
        async move {
            wait(
                fake,
                &call(
                    fake,
                    "PUT",
                    "/1.0/instances/c1/state",
                    Some(json!({"action": action})),
                )
                .await,
            )
            .await
        }
    };
    let expect = |reply: common::Reply, message: &str, code: u16| {
        assert_native_error(&reply, code, message);
    };
    expect(act("restart").await, "The instance is already stopped", 400);
    expect(act("freeze").await, "The instance isn't running", 500);
    expect(act("unfreeze").await, "The container isn't running", 500);
    act("start").await;
    expect(
        act("unfreeze").await,
        "The container is already running",
        500,
    );
    act("freeze").await;
    expect(act("freeze").await, "The container is already frozen", 500);
}

#[tokio::test]
async fn rename_is_an_operation_refused_while_running() {
    let fake = fake().await;
    launch(&fake, "c1", true).await;
    let running = wait(
        &fake,
        &call(
            &fake,
            "POST",
            "/1.0/instances/c1",
            Some(json!({"name": "c2"})),
        )
        .await,
    )
    .await;
    // The real daemon's wait answers 500 for it.
    assert_native_error(&running, 500, "Renaming of running instance not allowed");
    let bad = call(
        &fake,
        "POST",
        "/1.0/instances/c1",
        Some(json!({"name": "bad_name"})),
    )
    .await;
    assert_eq!(bad.status(), 400);
    wait(
        &fake,
        &change_state(&fake, "c1", json!({"action": "stop"})).await,
    )
    .await;
    let renamed = call(
        &fake,
        "POST",
        "/1.0/instances/c1",
        Some(json!({"name": "c2"})),
    )
    .await;
    assert_eq!(renamed.metadata()["description"], "Renaming instance");
    completed(&fake, &renamed).await;
    assert_eq!(
        call(&fake, "GET", "/1.0/instances/c2", None).await.status(),
        200
    );
    assert_eq!(
        call(&fake, "GET", "/1.0/instances/c1", None).await.status(),
        404
    );
    let bogus = call(
        &fake,
        "GET",
        "/1.0/storage-pools/default/volumes/bogus",
        None,
    )
    .await;
    assert_native_error(&bogus, 400, "Invalid storage volume type name");
}

/// Answers of Incus 6.0.4 for keys inside known namespaces and for disk sources, checked
/// against the daemon (create: in the operation; PATCH and PUT: the daemon's texts).
#[tokio::test]
async fn unknown_keys_in_known_namespaces_and_relative_disk_sources_are_refused_like_the_daemon() {
    let fake = fake().await;
    let create = |extra: Value| {
        let mut body = json!({"name": "p14", "source": {"type": "none"}});
        body.as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        body
    };
    let unknown = "Failed creating instance record: Unknown configuration key: ";
    for key in [
        "security.nonsense",
        "security.privileged ",
        " security.privileged",
        "SECURITY.privileged",
        "security.",
        "security.privileged.x",
        "limits.nonsense",
        "boot.nonsense",
        "raw.nonsense",
        "linux.nonsense",
        "volatile.nonsense",
        "volatile.eth0.nonsense",
        "snapshots.nonsense",
        "migration.nonsense",
        "cloud-init.nonsense",
        "nvidia.nonsense",
        "agent.nonsense",
        "cluster.nonsense",
    ] {
        let body = create(json!({"config": {key: "1"}}));
        let done = wait(
            &fake,
            &call(&fake, "POST", "/1.0/instances", Some(body)).await,
        )
        .await;
        assert_eq!(
            (
                done.json()["error"].as_str(),
                done.json()["error_code"].as_u64()
            ),
            (Some(format!("{unknown}{key}").as_str()), Some(500)),
            "{key:?}"
        );
    }
    for key in [
        "user.anything",
        "environment.X",
        "image.anything",
        "limits.kernel.nofile",
        "linux.sysctl.net.ipv4.ip_forward",
        "volatile.eth0.hwaddr",
    ] {
        let body = create(json!({"config": {key: "1"}}));
        let done = wait(
            &fake,
            &call(&fake, "POST", "/1.0/instances", Some(body)).await,
        )
        .await;
        assert_eq!(done.json()["type"], "sync", "{key}: {}", done.json());
        let delete = call(&fake, "DELETE", "/1.0/instances/p14", None).await;
        wait(&fake, &delete).await;
    }
    let devices = "Failed creating instance record: Failed initializing instance: Invalid devices: Device validation failed for \"d\": ";
    for (device, why) in [
        (
            json!({"type": "disk", "source": "../../etc", "path": "/mnt"}),
            "Source path must be absolute for local sources",
        ),
        (
            json!({"type": "disk", "source": "etc", "path": "/mnt"}),
            "Source path must be absolute for local sources",
        ),
        (
            json!({"type": "disk", "path": "/mnt"}),
            "Disk entry is missing the required \"source\" or \"path\" property",
        ),
    ] {
        let body = create(json!({"devices": {"d": device}}));
        let done = wait(
            &fake,
            &call(&fake, "POST", "/1.0/instances", Some(body)).await,
        )
        .await;
        assert_eq!(
            done.json()["error"].as_str(),
            Some(format!("{devices}{why}").as_str()),
            "{device}"
        );
    }
    let body = create(json!({"devices": {"d": {"type": "bogus"}}}));
    let done = wait(
        &fake,
        &call(&fake, "POST", "/1.0/instances", Some(body)).await,
    )
    .await;
    assert_eq!(
        done.json()["error"],
        "Failed creating instance record: Invalid device type \"bogus\""
    );
    for device in [
        json!({"type": "disk", "source": "/etc/../etc", "path": "/mnt"}),
        json!({"type": "disk", "source": "/etc"}),
    ] {
        let body = create(json!({"devices": {"d": device}}));
        let done = wait(
            &fake,
            &call(&fake, "POST", "/1.0/instances", Some(body)).await,
        )
        .await;
        assert_eq!(
            done.json()["metadata"]["status"],
            "Success",
            "{}",
            done.json()
        );
        let delete = call(&fake, "DELETE", "/1.0/instances/p14", None).await;
        wait(&fake, &delete).await;
    }
    let done = wait(
        &fake,
        &call(&fake, "POST", "/1.0/instances", Some(create(json!({})))).await,
    )
    .await;
    assert_eq!(done.json()["type"], "sync");
    for (patch, error) in [
        (json!({"devices": {"d": {"type": "disk", "source": "../../etc", "path": "/mnt"}}}), "Invalid devices: Device validation failed for \"d\": Source path must be absolute for local sources"),
        (json!({"config": {"security.nonsense": "1"}}), "Invalid config: Unknown configuration key: security.nonsense"),
        (json!({"config": {"security.privileged ": "true"}}), "Invalid config: Unknown configuration key: security.privileged "),
        (json!({"devices": {"d": {"type": "bogus"}}}), "Invalid devices: Device validation failed for \"d\": Failed loading device \"d\": Unsupported device type"),
    ] {
        let reply = call(&fake, "PATCH", "/1.0/instances/p14", Some(patch)).await;
        assert_native_error(&reply, 500, error);
    }
    // PUT sends back what GET gave (volatile keys included), plus the bad entry.
    let current = call(&fake, "GET", "/1.0/instances/p14", None)
        .await
        .metadata()["config"]
        .clone();
    let mut bad_config = current.clone();
    bad_config["security.nonsense"] = json!("1");
    for (put, error) in [
        (json!({"config": bad_config, "devices": {}}), "Invalid config: Unknown configuration key: security.nonsense"),
        (json!({"config": current, "devices": {"d": {"type": "disk", "source": "../../etc", "path": "/mnt"}}}), "Invalid devices: Device validation failed for \"d\": Source path must be absolute for local sources"),
    ] {
        let done = wait(&fake, &call(&fake, "PUT", "/1.0/instances/p14", Some(put)).await).await;
        assert_native_error(&done, 500, error);
    }
}

/// As on the real daemon: a restore gives the instance the snapshot's description (a snapshot's is
/// always empty), config, devices and ephemeral flag back, and keeps its profiles.
#[tokio::test]
async fn snapshot_restore_resets_description_config_devices_and_ephemeral_but_keeps_profiles() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let profile = call(
        &fake,
        "POST",
        "/1.0/profiles",
        Some(json!({"name": "extra", "config": {}, "devices": {}})),
    )
    .await;
    let extra_profile = profile.status() == 201 || profile.status() == 200;
    let before = call(
        &fake,
        "PATCH",
        "/1.0/instances/c1",
        Some(json!({"description": "before", "config": {"user.a": "0"}})),
    )
    .await;
    settled(&fake, &before).await;
    let snap = call(
        &fake,
        "POST",
        "/1.0/instances/c1/snapshots",
        Some(json!({"name": "s1"})),
    )
    .await;
    settled(&fake, &snap).await;
    let profiles = if extra_profile {
        json!(["default", "extra"])
    } else {
        json!(["default"])
    };
    let after = call(
        &fake,
        "PATCH",
        "/1.0/instances/c1",
        Some(
            json!({"description": "after", "ephemeral": true, "profiles": profiles,
            "config": {"user.a": "1", "user.b": "2"}, "devices": {"d1": {"type": "none"}}}),
        ),
    )
    .await;
    settled(&fake, &after).await;
    let restore = call(
        &fake,
        "PUT",
        "/1.0/instances/c1",
        Some(json!({"restore": "s1"})),
    )
    .await;
    settled(&fake, &restore).await;
    let got = call(&fake, "GET", "/1.0/instances/c1", None).await;
    let instance = got.metadata();
    assert_eq!(instance["description"], "", "the snapshot's description");
    assert_eq!(instance["ephemeral"], false);
    assert_eq!(instance["devices"], json!({}));
    assert_eq!(instance["config"]["user.a"], "0");
    assert_eq!(instance["config"].get("user.b"), None);
    assert_eq!(instance["profiles"], profiles, "the profiles are kept");
    assert_eq!(instance["architecture"], "x86_64");
}

/// A change answered at once (200) or by an operation that succeeds.
async fn settled(fake: &FakeIncus, reply: &common::Reply) {
    if reply.status() == 202 {
        let done = wait(fake, reply).await;
        assert_eq!(
            done.json()["metadata"]["status"],
            "Success",
            "{}",
            done.json()
        );
    } else {
        assert_eq!(reply.status(), 200, "{}", reply.json());
    }
}
