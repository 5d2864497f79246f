//! Instances, their snapshots and images as the daemon answers them (issue 23's fidelity items):
//! list filters, image URLs, image delete, the daemon's validation and texts, snapshot rename,
//! update and copy from a snapshot. Expected answers were taken from a real Incus 6.0.4.

use crate::common::{call, change_state, completed, fake, launch, wait};
use fake_incus::{assert_native_error, FakeIncus, Reply, Request};
use serde_json::{json, Value};

fn filtered(filter: &str) -> String {
    let query: String = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("filter", filter)
        .finish();
    format!("/1.0/instances?{query}")
}

/// The outcome of a finished operation from its wait answer: `("Failure", err)` for the error
/// envelope of a failed one, its status and `err` otherwise.
pub(crate) fn failure(done: &Reply) -> (&str, &str) {
    let body = done.json();
    if body["type"] == "error" {
        return ("Failure", body["error"].as_str().unwrap_or_default());
    }
    let metadata = done.metadata();
    (
        metadata["status"].as_str().unwrap_or_default(),
        metadata["err"].as_str().unwrap_or_default(),
    )
}

async fn write(fake: &FakeIncus, instance: &str, path: &str, bytes: &[u8]) {
    let reply = fake
        .call(
            Request::post(&format!("/1.0/instances/{instance}/files?path={path}"))
                .header("content-type", "application/octet-stream")
                .body(bytes.to_vec()),
        )
        .await;
    assert_eq!(reply.status(), 200, "{}", reply.json());
}

async fn read(fake: &FakeIncus, instance: &str, path: &str) -> Option<Vec<u8>> {
    let reply = call(
        fake,
        "GET",
        &format!("/1.0/instances/{instance}/files?path={path}"),
        None,
    )
    .await;
    (reply.status() == 200).then(|| reply.bytes().to_vec())
}

#[tokio::test]
async fn list_filters_compare_as_the_daemon_case_insensitively_by_pattern_and_left_to_right() {
    let fake = fake().await;
    launch(&fake, "c1", true).await;
    launch(&fake, "c2", false).await;
    let patch = call(
        &fake,
        "PATCH",
        "/1.0/instances/c1",
        Some(json!({"config": {"user.role": "Web"}})),
    )
    .await;
    assert_eq!(patch.status(), 200);
    let names = |reply: &Reply| -> Vec<String> {
        reply
            .metadata()
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|u| u.as_str()?.rsplit('/').next().map(str::to_string))
            .collect()
    };
    for (filter, expected) in [
        ("status eq running", vec!["c1"]),
        ("status eq RUNNING", vec!["c1"]),
        ("name eq C.*", vec!["c1", "c2"]),
        ("name eq c", vec![]),
        ("name eq ^c", vec!["c1", "c2"]),
        ("config.user.role eq web", vec!["c1"]),
        ("config.nope eq x", vec![]),
        ("ephemeral eq FALSE", vec!["c1", "c2"]),
        ("name eq c1 or name eq c2 and status eq Stopped", vec!["c2"]),
        ("NOT name eq c1", vec!["c2"]),
        ("expanded_devices.root.path eq /", vec!["c1", "c2"]),
        ("location eq none", vec!["c1", "c2"]),
    ] {
        let reply = call(&fake, "GET", &filtered(filter), None).await;
        assert_eq!(reply.status(), 200, "{filter}: {}", reply.json());
        assert_eq!(names(&reply), expected, "{filter}");
    }
    for (filter, status, text) in [
        (
            "nope eq x",
            500,
            "Invalid type \"invalid\" for field \"nope\"",
        ),
        (
            "status_code eq 103",
            500,
            "Unsupported filter type \"int\" for field \"status_code\"",
        ),
        ("name zz c1", 500, "Unsupported operation"),
        (
            "devices.root.path eq /",
            500,
            "Invalid type \"invalid\" for field \"devices.root.path\"",
        ),
        ("name eq \"c1\"", 400, "Invalid filter: unterminated quote"),
        (
            "name eq c1 and",
            400,
            "Invalid filter: unterminated compound clause",
        ),
    ] {
        let reply = call(&fake, "GET", &filtered(filter), None).await;
        assert_native_error(&reply, status, text);
    }
}

#[tokio::test]
async fn image_and_alias_urls_never_carry_the_project() {
    let fake = fake().await;
    let created = call(
        &fake,
        "POST",
        "/1.0/projects",
        Some(json!({"name": "p1", "config": {"features.images": "false"}})),
    )
    .await;
    assert_eq!(created.status(), 201, "{}", created.json());
    for path in ["/1.0/images?project=p1", "/1.0/images?project=default"] {
        let list = call(&fake, "GET", path, None).await;
        let urls = list.metadata().as_array().cloned().unwrap_or_default();
        assert!(!urls.is_empty());
        assert!(urls.iter().all(|u| u
            .as_str()
            .is_some_and(|u| u.starts_with("/1.0/images/") && !u.contains('?'))));
    }
    let aliases = call(&fake, "GET", "/1.0/images/aliases?project=p1", None).await;
    assert_eq!(aliases.metadata(), &json!(["/1.0/images/aliases/busybox"]));
}

#[tokio::test]
async fn a_second_image_delete_is_accepted_while_the_image_exists_and_fails_in_its_operation() {
    let fake = fake().await;
    let list = call(&fake, "GET", "/1.0/images", None).await;
    let url = list.metadata()[0].as_str().expect("an image").to_string();
    // Both are asked before either runs: both accepted, as on the daemon.
    let (first, second) = tokio::join!(
        call(&fake, "DELETE", &url, None),
        call(&fake, "DELETE", &url, None)
    );
    assert_eq!((first.status(), second.status()), (202, 202));
    assert_eq!(
        first.metadata()["resources"]["images"],
        json!([url.clone()])
    );
    let outcomes = [wait(&fake, &first).await, wait(&fake, &second).await];
    let failures: Vec<(String, String)> = outcomes
        .iter()
        .map(|d| {
            let (status, err) = failure(d);
            (status.to_string(), err.to_string())
        })
        .collect();
    assert!(
        failures.contains(&("Success".into(), String::new()))
            && failures.contains(&("Failure".into(), "Image not found".into())),
        "{failures:?}"
    );
    assert_native_error(
        &call(&fake, "DELETE", &url, None).await,
        404,
        "Image not found",
    );
}

#[tokio::test]
async fn create_refuses_what_the_daemon_refuses_no_root_disk_bad_schedule_duplicate_profile() {
    let fake = fake().await;
    for (body, err) in [
        (
            json!({"name": "np", "source": {"type": "image", "alias": "busybox"}, "profiles": []}),
            "Failed creating instance record: Failed initializing instance: Failed getting root disk: No root device could be found",
        ),
        (
            json!({"name": "sch", "source": {"type": "image", "alias": "busybox"}, "config": {"snapshots.schedule": "bogus"}}),
            "Failed creating instance record: Schedule must be of the form: <minute> <hour> <day-of-month> <month> <day-of-week>",
        ),
        (
            json!({"name": "tw", "source": {"type": "image", "alias": "busybox"}, "profiles": ["default", "default"]}),
            "Failed creating instance record: Duplicate profile found in request",
        ),
    ] {
        let reply = call(&fake, "POST", "/1.0/instances", Some(body)).await;
        let done = wait(&fake, &reply).await;
        assert_eq!(failure(&done), ("Failure", err));
    }
    assert_eq!(
        call(&fake, "GET", "/1.0/instances", None).await.metadata(),
        &json!([])
    );
}

#[tokio::test]
async fn updates_refuse_a_bad_schedule_a_duplicate_profile_and_losing_the_root_disk() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    for (body, text) in [
        (
            json!({"config": {"snapshots.schedule": "bogus"}}),
            "Invalid config: Schedule must be of the form: <minute> <hour> <day-of-month> <month> <day-of-week>",
        ),
        (
            json!({"config": {"snapshots.schedule": "@daily, 1 2 3 4 99"}}),
            "Invalid config: Error parsing schedule: end of range (99) above maximum (6): 99",
        ),
        (
            json!({"profiles": ["default", "default"]}),
            "Duplicate profile found in request",
        ),
        (
            json!({"profiles": []}),
            "Invalid root disk device: No root device could be found",
        ),
    ] {
        let reply = call(&fake, "PATCH", "/1.0/instances/c1", Some(body)).await;
        assert_native_error(&reply, 500, text);
    }
    let ok = call(
        &fake,
        "PATCH",
        "/1.0/instances/c1",
        Some(json!({"config": {"snapshots.schedule": "@DAILY, */5 1-3 * jan mon-fri"}})),
    )
    .await;
    assert_eq!(ok.status(), 200, "{}", ok.json());
}

#[tokio::test]
async fn the_daemon_texts_for_renaming_a_missing_instance_and_a_bad_instance_limit() {
    let fake = fake().await;
    let rename = call(
        &fake,
        "POST",
        "/1.0/instances/nosuch",
        Some(json!({"name": "x"})),
    )
    .await;
    assert_native_error(
        &rename,
        404,
        "Failed to get address of instance's member: Instance not found",
    );
    let project = call(
        &fake,
        "POST",
        "/1.0/projects",
        Some(json!({"name": "bad", "config": {"limits.instances": "abc"}})),
    )
    .await;
    assert_native_error(
        &project,
        400,
        "Invalid project configuration key \"limits.instances\" value: Invalid value for uint32 \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax",
    );
}

async fn snapshot(fake: &FakeIncus, instance: &str, name: &str) {
    let reply = call(
        fake,
        "POST",
        &format!("/1.0/instances/{instance}/snapshots"),
        Some(json!({ "name": name })),
    )
    .await;
    completed(fake, &reply).await;
}

#[tokio::test]
async fn a_stop_records_that_the_instance_has_not_reported_ready_since() {
    let fake = fake().await;
    launch(&fake, "c1", true).await;
    let shown = call(&fake, "GET", "/1.0/instances/c1", None).await;
    assert!(shown.metadata()["config"]["volatile.last_state.ready"].is_null());
    let stopped = change_state(&fake, "c1", json!({"action": "stop", "force": true})).await;
    wait(&fake, &stopped).await;
    // Measured on Incus 6.0.4 (a transcript replayed by `fake-incus replay`).
    let shown = call(&fake, "GET", "/1.0/instances/c1", None).await;
    assert_eq!(
        shown.metadata()["config"]["volatile.last_state.ready"],
        "false"
    );
}

#[tokio::test]
async fn a_stateful_snapshot_needs_migration_stateful_before_anything_else() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let body = json!({"name": "s0", "stateful": true});
    let started = call(&fake, "POST", "/1.0/instances/c1/snapshots", Some(body)).await;
    // Measured on Incus 6.0.4, on a stopped instance: the operation fails with this text.
    let done = wait(&fake, &started).await;
    assert_eq!(
        failure(&done),
        (
            "Failure",
            "Stateful snapshots require that the instance has migration.stateful be set to true"
        )
    );
    let snapshots = call(&fake, "GET", "/1.0/instances/c1/snapshots", None).await;
    assert_eq!(snapshots.metadata(), &json!([]));
}

#[tokio::test]
async fn an_instance_rename_defers_the_rename_templates_to_the_next_start() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let renamed = call(
        &fake,
        "POST",
        "/1.0/instances/c1",
        Some(json!({"name": "c2"})),
    )
    .await;
    assert_eq!(wait(&fake, &renamed).await.metadata()["status"], "Success");
    let shown = call(&fake, "GET", "/1.0/instances/c2", None).await;
    // Measured on Incus 6.0.4 (a transcript replayed by `fake-incus replay`).
    assert_eq!(
        shown.metadata()["config"]["volatile.apply_template"],
        "rename"
    );
    assert_eq!(
        shown.metadata()["expanded_config"]["volatile.apply_template"],
        "rename"
    );
    let started = change_state(&fake, "c2", json!({"action": "start"})).await;
    wait(&fake, &started).await;
    let shown = call(&fake, "GET", "/1.0/instances/c2", None).await;
    assert!(shown.metadata()["config"]["volatile.apply_template"].is_null());
}

#[tokio::test]
async fn a_snapshot_rename_is_an_operation_that_moves_its_record_and_files() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    write(&fake, "c1", "/root/f", b"v1").await;
    snapshot(&fake, "c1", "s1").await;
    snapshot(&fake, "c1", "s2").await;
    let renamed = call(
        &fake,
        "POST",
        "/1.0/instances/c1/snapshots/s1",
        Some(json!({"name": "r1"})),
    )
    .await;
    assert_eq!(renamed.metadata()["description"], "Renaming snapshot");
    assert_eq!(
        renamed.metadata()["resources"],
        json!({"instances": ["/1.0/instances/c1"], "instances_snapshots": ["/1.0/instances/c1/snapshots/s1"]})
    );
    completed(&fake, &renamed).await;
    assert_eq!(
        call(&fake, "GET", "/1.0/instances/c1/snapshots", None)
            .await
            .metadata(),
        &json!([
            "/1.0/instances/c1/snapshots/r1",
            "/1.0/instances/c1/snapshots/s2"
        ])
    );
    for (body, status, text) in [
        (json!({"name": "s2"}), 409, "Name 'c1/s2' already in use"),
        (
            json!({"name": "a/b"}),
            400,
            "Invalid snapshot name: Cannot contain \"/\"",
        ),
        (
            json!({"name": ""}),
            400,
            "A new name for the instance must be provided",
        ),
    ] {
        let reply = call(&fake, "POST", "/1.0/instances/c1/snapshots/r1", Some(body)).await;
        assert_native_error(&reply, status, text);
    }
    assert_native_error(
        &call(
            &fake,
            "POST",
            "/1.0/instances/c1/snapshots/nope",
            Some(json!({"name": "x"})),
        )
        .await,
        404,
        "Failed to fetch snapshot \"nope\" of instance \"c1\" in project \"default\": Instance_snapshot not found",
    );
    // The renamed snapshot keeps the files: restoring it brings them back.
    write(&fake, "c1", "/root/f", b"v2").await;
    let restore = call(
        &fake,
        "PUT",
        "/1.0/instances/c1",
        Some(json!({"restore": "r1"})),
    )
    .await;
    completed(&fake, &restore).await;
    assert_eq!(read(&fake, "c1", "/root/f").await, Some(b"v1".to_vec()));
}

#[tokio::test]
async fn snapshot_put_and_patch_set_only_expires_at_in_an_operation() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    snapshot(&fake, "c1", "s1").await;
    let path = "/1.0/instances/c1/snapshots/s1";
    for (method, when) in [
        ("PUT", "2030-01-01T00:00:00Z"),
        ("PATCH", "2031-01-01T00:00:00Z"),
    ] {
        let reply = call(&fake, method, path, Some(json!({ "expires_at": when }))).await;
        assert_eq!(reply.metadata()["description"], "Updating snapshot");
        completed(&fake, &reply).await;
        let got = call(&fake, "GET", path, None).await;
        assert_eq!(got.metadata()["expires_at"], when);
    }
    // Without `expires_at` nothing changes, still through an operation.
    let empty = call(&fake, "PUT", path, Some(json!({}))).await;
    wait(&fake, &empty).await;
    let got = call(&fake, "GET", path, None).await;
    assert_eq!(got.metadata()["expires_at"], "2031-01-01T00:00:00Z");
    assert_native_error(
        &call(&fake, "PUT", path, Some(json!({"expires_at": "bad"}))).await,
        400,
        "parsing time \"bad\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"bad\" as \"2006\"",
    );
    let stale = fake
        .call(
            Request::put(path)
                .header("if-match", "\"nope\"")
                .json(&json!({"expires_at": "2032-01-01T00:00:00Z"})),
        )
        .await;
    assert_eq!(stale.status(), 412);
}

#[tokio::test]
async fn a_copy_from_a_snapshot_has_the_snapshots_config_and_files_and_no_snapshots() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let patch = call(
        &fake,
        "PATCH",
        "/1.0/instances/c1",
        Some(json!({"config": {"user.k": "then"}})),
    )
    .await;
    assert_eq!(patch.status(), 200);
    write(&fake, "c1", "/root/f", b"then").await;
    snapshot(&fake, "c1", "s1").await;
    let patch = call(
        &fake,
        "PATCH",
        "/1.0/instances/c1",
        Some(json!({"config": {"user.k": "now"}})),
    )
    .await;
    assert_eq!(patch.status(), 200);
    write(&fake, "c1", "/root/f", b"now").await;

    let copied = call(
        &fake,
        "POST",
        "/1.0/instances",
        Some(json!({"name": "c2", "source": {"type": "copy", "source": "c1/s1"}})),
    )
    .await;
    assert_eq!(
        copied.metadata()["resources"]["instances"],
        json!(["/1.0/instances/c2", "/1.0/instances/c1%2Fs1"])
    );
    completed(&fake, &copied).await;
    let c2 = call(&fake, "GET", "/1.0/instances/c2", None).await;
    assert_eq!(c2.metadata()["config"]["user.k"], "then");
    assert_eq!(c2.metadata()["config"]["volatile.apply_template"], "copy");
    assert_eq!(read(&fake, "c2", "/root/f").await, Some(b"then".to_vec()));
    let snaps = call(&fake, "GET", "/1.0/instances/c2/snapshots", None).await;
    assert_eq!(snaps.metadata(), &Value::Array(Vec::new()));

    let missing = call(
        &fake,
        "POST",
        "/1.0/instances",
        Some(json!({"name": "c3", "source": {"type": "copy", "source": "c1/nope"}})),
    )
    .await;
    assert_native_error(
        &missing,
        404,
        "Failed to fetch snapshot \"nope\" of instance \"c1\" in project \"default\": Instance_snapshot not found",
    );
}

#[tokio::test]
async fn a_move_to_another_project_rehomes_the_instance_its_snapshots_and_files() {
    let fake = fake().await;
    let created = call(
        &fake,
        "POST",
        "/1.0/projects",
        Some(json!({"name": "p2", "config": {"features.images": "false", "features.profiles": "false"}})),
    )
    .await;
    assert_eq!(created.status(), 201, "{}", created.json());
    launch(&fake, "c1", true).await;
    launch(&fake, "c2", false).await;
    write(&fake, "c2", "/root/f", b"kept").await;
    snapshot(&fake, "c2", "s1").await;
    let body = json!({"migration": true, "project": "p2"});
    assert_native_error(
        &call(&fake, "POST", "/1.0/instances/c1", Some(body.clone())).await,
        400,
        "Instance must be stopped to be moved statelessly",
    );
    let moved = call(&fake, "POST", "/1.0/instances/c2", Some(body.clone())).await;
    assert_eq!(moved.metadata()["description"], "Migrating instance");
    assert_eq!(
        moved.metadata()["resources"],
        json!({"instances": ["/1.0/instances/c2"]})
    );
    completed(&fake, &moved).await;
    assert_eq!(
        call(&fake, "GET", "/1.0/instances", None).await.metadata(),
        &json!(["/1.0/instances/c1"])
    );
    let there = call(&fake, "GET", "/1.0/instances/c2?project=p2", None).await;
    assert_eq!(there.metadata()["project"], "p2");
    let snaps = call(&fake, "GET", "/1.0/instances/c2/snapshots?project=p2", None).await;
    assert_eq!(
        snaps.metadata(),
        &json!(["/1.0/instances/c2/snapshots/s1?project=p2"])
    );
    let file = call(
        &fake,
        "GET",
        "/1.0/instances/c2/files?path=/root/f&project=p2",
        None,
    )
    .await;
    assert_eq!(file.bytes().as_ref(), b"kept");
    // A name in use in the destination is refused before anything starts.
    launch(&fake, "c3", false).await;
    let clash = json!({"migration": true, "project": "p2", "name": "c2"});
    assert_native_error(
        &call(&fake, "POST", "/1.0/instances/c3", Some(clash)).await,
        409,
        "Name \"c2\" already in use",
    );
    let nowhere = json!({"migration": true, "project": "nope"});
    let reply = call(&fake, "POST", "/1.0/instances/c3", Some(nowhere)).await;
    let done = wait(&fake, &reply).await;
    assert_eq!(
        failure(&done),
        (
            "Failure",
            "Failed requesting instance create on destination: Failed loading project: Project not found"
        )
    );
}

#[tokio::test]
async fn instance_metadata_comes_from_its_image_and_put_patch_and_templates_write_it() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    let got = call(&fake, "GET", "/1.0/instances/c1/metadata", None).await;
    let metadata = got.metadata().clone();
    assert_eq!(metadata["properties"]["os"], "busybox");
    assert_eq!(metadata["templates"], Value::Null);
    assert!(got.header("etag").is_some());
    let put = call(
        &fake,
        "PUT",
        "/1.0/instances/c1/metadata",
        Some(
            json!({"architecture": "x86_64", "creation_date": 1, "properties": {"os": "x"},
            "templates": {"/etc/hostname": {"when": ["create"], "template": "hostname.tpl"}}}),
        ),
    )
    .await;
    assert_eq!((put.status(), put.metadata()), (200, &json!({})));
    let patch = call(
        &fake,
        "PATCH",
        "/1.0/instances/c1/metadata",
        Some(json!({"properties": {"os": "y"}})),
    )
    .await;
    assert_eq!(patch.status(), 200);
    let got = call(&fake, "GET", "/1.0/instances/c1/metadata", None).await;
    assert_eq!(
        got.metadata(),
        &json!({"architecture": "x86_64", "creation_date": 1, "expiry_date": 0,
            "properties": {"os": "y"}, "templates": {"/etc/hostname": {"when": ["create"],
            "create_only": false, "template": "hostname.tpl", "properties": {}}}})
    );

    let templates = "/1.0/instances/c1/metadata/templates";
    let upload = fake
        .call(
            Request::post(&format!("{templates}?path=hostname.tpl"))
                .header("content-type", "application/octet-stream")
                .body(b"{{ container.name }}".to_vec()),
        )
        .await;
    assert_eq!(upload.status(), 200, "{}", upload.json());
    let list = call(&fake, "GET", templates, None).await;
    assert_eq!(list.metadata(), &json!(["hostname.tpl"]));
    let file = call(
        &fake,
        "GET",
        &format!("{templates}?path=hostname.tpl"),
        None,
    )
    .await;
    assert_eq!(file.bytes().as_ref(), b"{{ container.name }}");
    let path = format!("{templates}?path=hostname.tpl");
    assert_eq!(call(&fake, "DELETE", &path, None).await.status(), 200);
    assert_native_error(
        &call(&fake, "DELETE", &path, None).await,
        404,
        "Template \"hostname.tpl\" not found",
    );
    assert_native_error(
        &call(&fake, "POST", templates, None).await,
        400,
        "missing path argument",
    );
}

#[tokio::test]
async fn logs_list_lxc_log_and_the_console_log_is_empty_as_for_a_busybox_container() {
    let fake = fake().await;
    launch(&fake, "c1", true).await;
    let logs = call(&fake, "GET", "/1.0/instances/c1/logs", None).await;
    assert_eq!(logs.metadata(), &json!(["/1.0/instances/c1/logs/lxc.log"]));
    let log = call(&fake, "GET", "/1.0/instances/c1/logs/lxc.log", None).await;
    assert_eq!(
        (log.status(), log.header("content-type")),
        (200, Some("application/octet-stream"))
    );
    assert_native_error(
        &call(&fake, "GET", "/1.0/instances/c1/logs/nope.log", None).await,
        400,
        "Log file name \"nope.log\" not valid",
    );
    let console = call(&fake, "GET", "/1.0/instances/c1/console?type=log", None).await;
    assert_eq!((console.status(), console.bytes().len()), (200, 0));
    assert_native_error(
        &call(&fake, "GET", "/1.0/instances/c1/console?type=bad", None).await,
        500,
        "Invalid value for type parameter: bad",
    );
    let cleared = call(&fake, "DELETE", "/1.0/instances/c1/console", None).await;
    assert_eq!((cleared.status(), cleared.metadata()), (200, &json!({})));
}

#[tokio::test]
async fn a_rebuild_replaces_the_root_file_system_and_image_keys_of_a_stopped_instance() {
    let fake = fake().await;
    launch(&fake, "c1", true).await;
    let body = json!({"source": {"type": "image", "alias": "busybox"}});
    assert_native_error(
        &call(
            &fake,
            "POST",
            "/1.0/instances/c1/rebuild",
            Some(body.clone()),
        )
        .await,
        400,
        "Instance must be stopped to be rebuilt",
    );
    let stop = change_state(&fake, "c1", json!({"action": "stop", "force": true})).await;
    wait(&fake, &stop).await;
    write(&fake, "c1", "/root/x", b"hi").await;
    snapshot(&fake, "c1", "s1").await;
    let rebuilt = call(&fake, "POST", "/1.0/instances/c1/rebuild", Some(body)).await;
    assert_eq!(rebuilt.metadata()["description"], "Rebuilding instance");
    completed(&fake, &rebuilt).await;
    assert_eq!(read(&fake, "c1", "/root/x").await, None);
    assert!(read(&fake, "c1", "/etc/inittab").await.is_some());
    let config = call(&fake, "GET", "/1.0/instances/c1", None)
        .await
        .metadata()["config"]
        .clone();
    assert_eq!(config["image.os"], "busybox");
    assert_eq!(config["volatile.apply_template"], "create");

    let none = json!({"source": {"type": "none"}});
    let rebuilt = call(&fake, "POST", "/1.0/instances/c1/rebuild", Some(none)).await;
    completed(&fake, &rebuilt).await;
    let config = call(&fake, "GET", "/1.0/instances/c1", None)
        .await
        .metadata()["config"]
        .clone();
    assert_eq!(
        (config.get("image.os"), config.get("volatile.base_image")),
        (None, None)
    );
    // The snapshot keeps the files it had.
    let restore = call(
        &fake,
        "PUT",
        "/1.0/instances/c1",
        Some(json!({"restore": "s1"})),
    )
    .await;
    completed(&fake, &restore).await;
    assert_eq!(read(&fake, "c1", "/root/x").await, Some(b"hi".to_vec()));

    let missing = json!({"source": {"type": "image", "alias": "nope"}});
    let reply = call(&fake, "POST", "/1.0/instances/c1/rebuild", Some(missing)).await;
    let done = wait(&fake, &reply).await;
    assert_eq!(
        failure(&done),
        ("Failure", "Image not provided for instance rebuild")
    );
}

async fn busybox_fingerprint(fake: &FakeIncus) -> String {
    let image = call(fake, "GET", "/1.0/images/aliases/busybox", None).await;
    image.metadata()["target"]
        .as_str()
        .expect("busybox alias")
        .to_string()
}

#[tokio::test]
async fn image_put_replaces_and_patch_merges_the_writable_fields() {
    let fake = fake().await;
    let fp = busybox_fingerprint(&fake).await;
    let path = format!("/1.0/images/{fp}");
    let put = call(
        &fake,
        "PUT",
        &path,
        Some(
            json!({"public": true, "properties": {"os": "new"}, "profiles": ["default"],
            "expires_at": "2030-01-01T00:00:00Z"}),
        ),
    )
    .await;
    assert_eq!((put.status(), put.metadata()), (200, &json!({})));
    let patch = call(
        &fake,
        "PATCH",
        &path,
        Some(json!({"properties": {"extra": "1"}})),
    )
    .await;
    assert_eq!(patch.status(), 200);
    let image = call(&fake, "GET", &path, None).await.metadata().clone();
    assert_eq!(
        (&image["public"], &image["properties"], &image["expires_at"]),
        (
            &json!(true),
            &json!({"extra": "1", "os": "new"}),
            &json!("2030-01-01T00:00:00Z")
        )
    );
    // A PUT without fields resets them, keeping the expiry.
    let empty = call(&fake, "PUT", &path, Some(json!({}))).await;
    assert_eq!(empty.status(), 200);
    let image = call(&fake, "GET", &path, None).await.metadata().clone();
    assert_eq!(
        (&image["public"], &image["properties"], &image["profiles"]),
        (&json!(false), &json!({}), &json!(["default"]))
    );
    assert_eq!(image["expires_at"], "2030-01-01T00:00:00Z");
    assert_native_error(
        &call(&fake, "PUT", &path, Some(json!({"profiles": ["nope"]}))).await,
        500,
        "Profile 'nope' doesn't exist",
    );
    assert_native_error(
        &call(&fake, "PUT", "/1.0/images/nope", Some(json!({}))).await,
        404,
        "Image not found",
    );
}

#[tokio::test]
async fn publish_makes_an_image_of_the_instance_tree_that_exports_and_launches_with_its_files() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    write(&fake, "c1", "/root/published", b"yes").await;
    let published = call(
        &fake,
        "POST",
        "/1.0/images",
        Some(
            json!({"source": {"type": "instance", "name": "c1"}, "properties": {"os": "pub"},
            "aliases": [{"name": "pubbed"}]}),
        ),
    )
    .await;
    assert_eq!(published.metadata()["description"], "Downloading image");
    let done = wait(&fake, &published).await;
    let fingerprint = done.metadata()["metadata"]["fingerprint"]
        .as_str()
        .expect("fingerprint")
        .to_string();
    let image = call(&fake, "GET", &format!("/1.0/images/{fingerprint}"), None).await;
    assert_eq!(image.metadata()["properties"]["os"], "pub");
    assert_eq!(
        image.metadata()["aliases"],
        json!([{"name": "pubbed", "description": ""}])
    );

    let export = call(
        &fake,
        "GET",
        &format!("/1.0/images/{fingerprint}/export"),
        None,
    )
    .await;
    assert_eq!(export.status(), 200);
    assert_eq!(
        export.header("content-disposition"),
        Some(format!("inline;filename={fingerprint}.tar.gz").as_str())
    );
    use sha2::Digest;
    assert_eq!(
        hex::encode(sha2::Sha256::digest(export.bytes())),
        fingerprint,
        "the export is the tarball the fingerprint names"
    );
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(export.bytes().as_ref()));
    let names: Vec<String> = archive
        .entries()
        .expect("a tarball")
        .filter_map(|e| Some(e.ok()?.path().ok()?.to_string_lossy().into_owned()))
        .collect();
    assert!(names.contains(&"metadata.yaml".to_string()));
    assert!(names.contains(&"rootfs/root/published".to_string()));

    let launched = call(
        &fake,
        "POST",
        "/1.0/instances",
        Some(json!({"name": "c2", "source": {"type": "image", "alias": "pubbed"}})),
    )
    .await;
    completed(&fake, &launched).await;
    assert_eq!(
        read(&fake, "c2", "/root/published").await,
        Some(b"yes".to_vec())
    );

    launch(&fake, "c3", true).await;
    let running = call(
        &fake,
        "POST",
        "/1.0/images",
        Some(json!({"source": {"type": "instance", "name": "c3"}})),
    )
    .await;
    assert_eq!(
        failure(&wait(&fake, &running).await),
        ("Failure", "Cannot export a running instance as an image")
    );
}

#[tokio::test]
async fn image_refresh_fails_without_a_source_and_secret_is_a_running_token() {
    let fake = fake().await;
    let fp = busybox_fingerprint(&fake).await;
    let refresh = call(&fake, "POST", &format!("/1.0/images/{fp}/refresh"), None).await;
    assert_eq!(refresh.metadata()["description"], "Refreshing image");
    assert_eq!(refresh.metadata()["resources"], json!({}));
    let text =
        format!("Failed to update image \"{fp}\" in project \"default\": Image source not found");
    assert_eq!(
        failure(&wait(&fake, &refresh).await),
        ("Failure", text.as_str())
    );
    let secret = call(&fake, "POST", &format!("/1.0/images/{fp}/secret"), None).await;
    assert_eq!(secret.status(), 202);
    let op = secret.metadata();
    assert_eq!(
        (&op["class"], &op["description"], &op["status"]),
        (
            &json!("token"),
            &json!("Image download token"),
            &json!("Running")
        )
    );
    assert_eq!(op["metadata"]["secret"].as_str().map(str::len), Some(64));
    assert_native_error(
        &call(&fake, "POST", "/1.0/images/nope/secret", None).await,
        404,
        "Image not found",
    );
}

#[tokio::test]
async fn backups_are_created_listed_renamed_exported_in_the_daemon_layout_and_deleted() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    write(&fake, "c1", "/root/f", b"backed up").await;
    snapshot(&fake, "c1", "s1").await;
    let created = call(
        &fake,
        "POST",
        "/1.0/instances/c1/backups",
        Some(json!({"name": "b1"})),
    )
    .await;
    assert_eq!(created.metadata()["description"], "Backing up instance");
    assert_eq!(
        created.metadata()["resources"],
        json!({"backups": ["/1.0/instances/c1/backups/b1"], "instances": ["/1.0/instances/c1"]})
    );
    completed(&fake, &created).await;
    let unnamed = call(&fake, "POST", "/1.0/instances/c1/backups", Some(json!({}))).await;
    wait(&fake, &unnamed).await;
    let list = call(&fake, "GET", "/1.0/instances/c1/backups", None).await;
    assert_eq!(
        list.metadata(),
        &json!([
            "/1.0/instances/c1/backups/b1",
            "/1.0/instances/c1/backups/backup0"
        ])
    );
    let b1 = call(&fake, "GET", "/1.0/instances/c1/backups/b1", None).await;
    let keys: Vec<&String> = b1.metadata().as_object().expect("object").keys().collect();
    assert_eq!(
        keys,
        [
            "name",
            "created_at",
            "expires_at",
            "instance_only",
            "optimized_storage"
        ]
    );
    let again = call(
        &fake,
        "POST",
        "/1.0/instances/c1/backups",
        Some(json!({"name": "b1"})),
    )
    .await;
    assert_eq!(
        failure(&wait(&fake, &again).await),
        ("Failure", "Create backup: Backup \"c1/b1\" already exists")
    );
    assert_native_error(
        &call(
            &fake,
            "POST",
            "/1.0/instances/c1/backups",
            Some(json!({"name": "a/b"})),
        )
        .await,
        400,
        "Backup names may not contain slashes",
    );

    let export = call(&fake, "GET", "/1.0/instances/c1/backups/b1/export", None).await;
    assert_eq!(
        (export.status(), export.header("content-type")),
        (200, Some("application/octet-stream"))
    );
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(export.bytes().as_ref()));
    let names: Vec<String> = archive
        .entries()
        .expect("a tarball")
        .filter_map(|e| Some(e.ok()?.path().ok()?.to_string_lossy().into_owned()))
        .collect();
    for expected in [
        "backup/index.yaml",
        "backup/container/backup.yaml",
        "backup/container/metadata.yaml",
        "backup/container/rootfs/root/f",
        "backup/snapshots/s1/rootfs/root/f",
    ] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} in {names:?}"
        );
    }

    let renamed = call(
        &fake,
        "POST",
        "/1.0/instances/c1/backups/b1",
        Some(json!({"name": "b2"})),
    )
    .await;
    assert_eq!(
        renamed.metadata()["description"],
        "Renaming instance backup"
    );
    completed(&fake, &renamed).await;
    let moved = call(&fake, "GET", "/1.0/instances/c1/backups/b2/export", None).await;
    assert_eq!(moved.bytes(), export.bytes());
    let deleted = call(&fake, "DELETE", "/1.0/instances/c1/backups/b2", None).await;
    assert_eq!(
        deleted.metadata()["description"],
        "Removing instance backup"
    );
    wait(&fake, &deleted).await;
    assert_native_error(
        &call(&fake, "GET", "/1.0/instances/c1/backups/b2", None).await,
        404,
        "Instance backup not found",
    );
}

#[tokio::test]
async fn an_exported_backup_imports_as_a_new_instance_with_its_files_and_snapshots() {
    let fake = fake().await;
    launch(&fake, "c1", false).await;
    write(&fake, "c1", "/root/f", b"then").await;
    snapshot(&fake, "c1", "s1").await;
    write(&fake, "c1", "/root/f", b"now").await;
    let created = call(
        &fake,
        "POST",
        "/1.0/instances/c1/backups",
        Some(json!({"name": "b1"})),
    )
    .await;
    wait(&fake, &created).await;
    let tarball = call(&fake, "GET", "/1.0/instances/c1/backups/b1/export", None)
        .await
        .bytes()
        .clone();
    let upload = |name: Option<&str>, body: Vec<u8>| {
        let request = Request::post("/1.0/instances")
            .header("content-type", "application/octet-stream")
            .body(body);
        match name {
            Some(name) => request.header("x-incus-name", name),
            None => request,
        }
    };
    let imported = fake.call(upload(Some("c2"), tarball.to_vec())).await;
    assert_eq!(imported.metadata()["description"], "Restoring backup");
    completed(&fake, &imported).await;
    assert_eq!(read(&fake, "c2", "/root/f").await, Some(b"now".to_vec()));
    let snaps = call(&fake, "GET", "/1.0/instances/c2/snapshots", None).await;
    assert_eq!(snaps.metadata(), &json!(["/1.0/instances/c2/snapshots/s1"]));
    let restore = call(
        &fake,
        "PUT",
        "/1.0/instances/c2",
        Some(json!({"restore": "s1"})),
    )
    .await;
    wait(&fake, &restore).await;
    assert_eq!(read(&fake, "c2", "/root/f").await, Some(b"then".to_vec()));

    let clash = fake.call(upload(None, tarball.to_vec())).await;
    assert_eq!(
        failure(&wait(&fake, &clash).await),
        (
            "Failure",
            "Create instance from backup: Cannot restore volume, already exists on target"
        )
    );
    assert_native_error(
        &fake.call(upload(None, b"garbage".to_vec())).await,
        500,
        "Unsupported compression",
    );
}
