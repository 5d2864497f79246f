//! Writable configuration over the Unix socket: profiles, projects and custom storage volumes,
//! with the answers, ETags and operations of a real Incus 6.0.4 daemon (captured from one).

use crate::common;

use common::{call, call_with, fake, launch, wait};
use fake_incus::assert_native_error;
use serde_json::{json, Value};

fn error(reply: &common::Reply) -> (u16, &str) {
    (reply.status(), reply.json()["error"].as_str().unwrap_or(""))
}

fn etag(reply: &common::Reply) -> String {
    reply
        .header("etag")
        .expect("an ETag")
        .trim_matches('"')
        .to_string()
}

#[tokio::test]
async fn profile_create_answers_201_with_location_and_the_daemon_etag() {
    let fake = fake().await;
    let body = json!({"name": "p1", "config": {"limits.cpu": "2"}, "description": "d"});
    let reply = call(&fake, "POST", "/1.0/profiles", Some(body)).await;
    assert_eq!(reply.status(), 201);
    assert_eq!(reply.header("location"), Some("/1.0/profiles/p1"));
    assert_eq!(reply.json()["metadata"], Value::Null);
    let got = call(&fake, "GET", "/1.0/profiles/p1", None).await;
    assert_eq!(
        got.metadata(),
        &json!({"config": {"limits.cpu": "2"}, "description": "d", "devices": {},
                "name": "p1", "used_by": [], "project": "default"})
    );
    // sha256 of `[{"limits.cpu":"2"},"d",{}]\n`, as the real daemon sent it.
    assert_eq!(
        etag(&got),
        "9718da64c99b970024f9b648a7f060c19d981453f39250ffd041400428612d18"
    );
}

#[tokio::test]
async fn profile_create_refuses_bad_names_keys_devices_and_duplicates_with_the_daemon_text() {
    let fake = fake().await;
    let cases = [
        (json!({"name": ""}), 400, "No name provided"),
        (
            json!({"name": "a/b"}),
            400,
            "Profile names may not contain slashes",
        ),
        (
            json!({"name": "p", "config": {"nope": "2"}}),
            400,
            "Unknown configuration key: nope",
        ),
        (
            json!({"name": "p", "config": {"limits.cpu": "abc"}}),
            400,
            "Invalid CPU limit syntax",
        ),
        (
            json!({"name": "p", "devices": {"d": {"type": "bogus"}}}),
            400,
            "Device validation failed for \"d\": Failed loading device \"d\": Unsupported device type",
        ),
        (
            json!({"name": "p", "devices": {"d": {"type": "disk", "path": "/mnt"}}}),
            400,
            "Device validation failed for \"d\": Disk entry is missing the required \"source\" or \"path\" property",
        ),
        (
            json!({"name": "default"}),
            500,
            "Error inserting \"default\" into database: The profile already exists",
        ),
    ];
    for (body, status, text) in cases {
        let reply = call(&fake, "POST", "/1.0/profiles", Some(body.clone())).await;
        assert_eq!(error(&reply), (status, text), "{body}");
    }
    assert_eq!(
        fake.requests("POST", "/1.0/profiles")
            .iter()
            .filter(|e| e.applied)
            .count(),
        0,
        "nothing was applied"
    );
}

#[tokio::test]
async fn profile_put_and_patch_check_the_etag_and_patch_merges_and_keeps_the_description() {
    let fake = fake().await;
    let body = json!({"name": "p1", "config": {"limits.cpu": "2"}, "description": "d"});
    call(&fake, "POST", "/1.0/profiles", Some(body)).await;
    let before = etag(&call(&fake, "GET", "/1.0/profiles/p1", None).await);
    let put = json!({"config": {"limits.memory": "1GB"}, "description": "e"});
    let refused = call_with(
        &fake,
        "PUT",
        "/1.0/profiles/p1",
        Some(put.clone()),
        &[("if-match", "\"bad\"")],
    )
    .await;
    assert_native_error(
        &refused,
        412,
        format!("ETag doesn't match: {before} vs bad").as_str(),
    );
    let reply = call(&fake, "PUT", "/1.0/profiles/p1", Some(put)).await;
    assert_eq!((reply.status(), reply.metadata()), (200, &json!({})));
    let got = call(&fake, "GET", "/1.0/profiles/p1", None).await;
    assert_eq!(
        etag(&got),
        "b6a3ca841b3695820d8304e14e7843e41094fb8400a4e432a031e40fa127d096"
    );
    let patch =
        json!({"config": {"user.x": "1"}, "devices": {"eth0": {"type": "nic", "nictype": "p2p"}}});
    assert_eq!(
        call(&fake, "PATCH", "/1.0/profiles/p1", Some(patch))
            .await
            .status(),
        200
    );
    let got = call(&fake, "GET", "/1.0/profiles/p1", None).await;
    assert_eq!(
        got.metadata()["config"],
        json!({"limits.memory": "1GB", "user.x": "1"})
    );
    assert_eq!(got.metadata()["description"], "e", "PATCH keeps it");
    assert_eq!(
        etag(&got),
        "6885f753492aa3d906e25b2c44d7115e7e408e6b87fcff078c823dc589478ee6"
    );
    let unset = json!({"config": {"user.x": ""}});
    call(&fake, "PATCH", "/1.0/profiles/p1", Some(unset)).await;
    let got = call(&fake, "GET", "/1.0/profiles/p1", None).await;
    assert_eq!(got.metadata()["config"], json!({"limits.memory": "1GB"}));
    let bad = call(
        &fake,
        "PUT",
        "/1.0/profiles/p1",
        Some(json!({"config": {"nope": "1"}})),
    )
    .await;
    assert_native_error(&bad, 500, "Unknown configuration key: nope");
    let missing = call(&fake, "PUT", "/1.0/profiles/nosuch", Some(json!({}))).await;
    assert_native_error(
        &missing,
        404,
        "Failed to retrieve profile \"nosuch\": Profile not found",
    );
}

#[tokio::test]
async fn profile_changes_show_at_once_in_the_expanded_config_and_devices_of_its_instances() {
    let fake = fake().await;
    call(&fake, "POST", "/1.0/profiles", Some(json!({"name": "p1"}))).await;
    let create = json!({"name": "c1", "source": {"type": "none"}, "profiles": ["default", "p1"]});
    let done = wait(
        &fake,
        &call(&fake, "POST", "/1.0/instances", Some(create)).await,
    )
    .await;
    assert_eq!(done.json()["type"], "sync", "{}", done.json());
    let before = call(&fake, "GET", "/1.0/instances/c1", None).await;
    let patch = json!({"config": {"limits.cpu": "3"}, "devices": {"eth0": {"type": "nic", "nictype": "p2p"}}});
    call(&fake, "PATCH", "/1.0/profiles/p1", Some(patch)).await;
    let after = call(&fake, "GET", "/1.0/instances/c1", None).await;
    assert_eq!(after.metadata()["expanded_config"]["limits.cpu"], "3");
    assert_eq!(
        after.metadata()["expanded_devices"]["eth0"],
        json!({"type": "nic", "nictype": "p2p"})
    );
    assert_ne!(
        before.header("etag"),
        after.header("etag"),
        "the instance ETag embeds its profiles"
    );
    let listed = call(&fake, "GET", "/1.0/instances?recursion=1", None).await;
    assert_eq!(listed.metadata()[0]["expanded_config"]["limits.cpu"], "3");
    let profile = call(&fake, "GET", "/1.0/profiles/p1", None).await;
    assert_eq!(profile.metadata()["used_by"], json!(["/1.0/instances/c1"]));
}

#[tokio::test]
async fn profile_rename_and_delete_follow_the_daemon_default_and_in_use_rules() {
    let fake = fake().await;
    for (method, path, status, text) in [
        (
            "POST",
            "/1.0/profiles/default",
            403,
            "The \"default\" profile cannot be renamed",
        ),
        (
            "DELETE",
            "/1.0/profiles/default",
            403,
            "The \"default\" profile cannot be deleted",
        ),
        ("DELETE", "/1.0/profiles/nosuch", 404, "Profile not found"),
        (
            "POST",
            "/1.0/profiles/nosuch",
            500,
            "Profile \"nosuch\" doesn't exist",
        ),
    ] {
        let reply = call(&fake, method, path, Some(json!({"name": "x"}))).await;
        assert_eq!(error(&reply), (status, text), "{method} {path}");
    }
    call(&fake, "POST", "/1.0/profiles", Some(json!({"name": "p1"}))).await;
    let taken = call(
        &fake,
        "POST",
        "/1.0/profiles/p1",
        Some(json!({"name": "default"})),
    )
    .await;
    assert_native_error(&taken, 500, "Profile \"default\" already exists");
    let create = json!({"name": "c1", "source": {"type": "none"}, "profiles": ["default", "p1"]});
    wait(
        &fake,
        &call(&fake, "POST", "/1.0/instances", Some(create)).await,
    )
    .await;
    let in_use = call(&fake, "DELETE", "/1.0/profiles/p1", None).await;
    assert_native_error(&in_use, 500, "Profile is currently in use");
    let renamed = call(
        &fake,
        "POST",
        "/1.0/profiles/p1",
        Some(json!({"name": "p2"})),
    )
    .await;
    assert_eq!(
        (renamed.status(), renamed.header("location")),
        (201, Some("/1.0/profiles/p2"))
    );
    let instance = call(&fake, "GET", "/1.0/instances/c1", None).await;
    assert_eq!(instance.metadata()["profiles"], json!(["default", "p2"]));
    let patch = json!({"profiles": ["default"]});
    call(&fake, "PATCH", "/1.0/instances/c1", Some(patch)).await;
    let deleted = call(&fake, "DELETE", "/1.0/profiles/p2", None).await;
    assert_eq!((deleted.status(), deleted.metadata()), (200, &json!({})));
    let unknown = json!({"profiles": ["default", "nosuch"]});
    let refused = call(&fake, "PATCH", "/1.0/instances/c1", Some(unknown)).await;
    assert_native_error(&refused, 404, "Profile not found");
}

#[tokio::test]
async fn project_create_gets_the_default_features_and_its_own_default_profile() {
    let fake = fake().await;
    let reply = call(
        &fake,
        "POST",
        "/1.0/projects",
        Some(json!({"name": "pr1", "description": "pd"})),
    )
    .await;
    assert_eq!(
        (reply.status(), reply.header("location")),
        (201, Some("/1.0/projects/pr1"))
    );
    let got = call(&fake, "GET", "/1.0/projects/pr1", None).await;
    assert_eq!(
        got.metadata(),
        &json!({"config": {"features.images": "true", "features.profiles": "true",
                "features.storage.buckets": "true", "features.storage.volumes": "true"},
                "description": "pd", "name": "pr1",
                "used_by": ["/1.0/profiles/default?project=pr1"]})
    );
    assert_eq!(
        etag(&got),
        "90eca9d4da5d65d01f5cc166f508d2f43c0cc0a27c07e9d0a7231387c4c86271"
    );
    let profiles = call(&fake, "GET", "/1.0/profiles?project=pr1&recursion=1", None).await;
    assert_eq!(
        profiles.metadata(),
        &json!([{"config": {}, "description": "Default Incus profile for project pr1",
                 "devices": {}, "name": "default", "used_by": [], "project": "pr1"}])
    );
    let created = call(
        &fake,
        "POST",
        "/1.0/profiles?project=pr1",
        Some(json!({"name": "pp"})),
    )
    .await;
    assert_eq!(
        created.header("location"),
        Some("/1.0/profiles/pp?project=pr1")
    );
}

#[tokio::test]
async fn a_project_without_features_profiles_sees_and_changes_the_default_projects_profiles() {
    let fake = fake().await;
    let config = json!({"features.profiles": "false", "features.images": "false"});
    call(
        &fake,
        "POST",
        "/1.0/projects",
        Some(json!({"name": "pr2", "config": config})),
    )
    .await;
    let got = call(&fake, "GET", "/1.0/projects/pr2", None).await;
    assert_eq!(
        got.metadata()["config"],
        json!({"features.images": "false", "features.profiles": "false",
               "features.storage.buckets": "true", "features.storage.volumes": "true"})
    );
    assert_eq!(got.metadata()["used_by"], json!([]));
    let profiles = call(&fake, "GET", "/1.0/profiles?project=pr2&recursion=1", None).await;
    assert_eq!(profiles.metadata()[0]["project"], "default");
    assert_eq!(
        profiles.metadata()[0]["description"],
        "Default Incus profile"
    );
    let created = call(
        &fake,
        "POST",
        "/1.0/profiles?project=pr2",
        Some(json!({"name": "pp"})),
    )
    .await;
    assert_eq!(created.header("location"), Some("/1.0/profiles/pp"));
    assert_eq!(
        call(&fake, "GET", "/1.0/profiles/pp", None).await.status(),
        200
    );
}

#[tokio::test]
async fn project_writes_refuse_what_the_daemon_refuses_with_its_text() {
    let fake = fake().await;
    for (body, text) in [
        (json!({"name": ""}), "No name provided"),
        (json!({"name": "a/b"}), "Project names may not contain slashes"),
        (
            json!({"name": "x", "config": {"nope": "1"}}),
            "Invalid project configuration key \"nope\"",
        ),
        (
            json!({"name": "x", "config": {"features.images": "maybe"}}),
            "Invalid project configuration key \"features.images\" value: Invalid value for a boolean \"maybe\"",
        ),
    ] {
        let reply = call(&fake, "POST", "/1.0/projects", Some(body.clone())).await;
        assert_eq!(error(&reply), (400, text), "{body}");
    }
    call(&fake, "POST", "/1.0/projects", Some(json!({"name": "pr3"}))).await;
    let twice = call(&fake, "POST", "/1.0/projects", Some(json!({"name": "pr3"}))).await;
    assert_native_error(&twice, 500, "Failed creating project \"pr3\": Failed adding database record: Failed to create \"projects\" entry: UNIQUE constraint failed: projects.name");
    for (method, path, status, text) in [
        (
            "DELETE",
            "/1.0/projects/default",
            403,
            "The 'default' project cannot be deleted",
        ),
        (
            "POST",
            "/1.0/projects/default",
            403,
            "The 'default' project cannot be renamed",
        ),
        (
            "DELETE",
            "/1.0/projects/nosuch",
            404,
            "Fetch project \"nosuch\": Project not found",
        ),
        ("PUT", "/1.0/projects/nosuch", 404, "Project not found"),
    ] {
        let reply = call(&fake, method, path, Some(json!({"name": "x"}))).await;
        assert_eq!(error(&reply), (status, text), "{method} {path}");
    }
    let features = call(
        &fake,
        "PUT",
        "/1.0/projects/default",
        Some(json!({"config": {"features.images": "true"}})),
    )
    .await;
    assert_native_error(
        &features,
        400,
        "You can't change the features of the default project",
    );
}

#[tokio::test]
async fn a_non_empty_project_cannot_be_deleted_renamed_or_lose_a_feature() {
    let fake = fake().await;
    call(&fake, "POST", "/1.0/projects", Some(json!({"name": "pr3"}))).await;
    call(
        &fake,
        "POST",
        "/1.0/profiles?project=pr3",
        Some(json!({"name": "pp3"})),
    )
    .await;
    let delete = call(&fake, "DELETE", "/1.0/projects/pr3", None).await;
    assert_native_error(&delete, 500, "Only empty projects can be removed.");
    let rename = call(
        &fake,
        "POST",
        "/1.0/projects/pr3",
        Some(json!({"name": "pr4"})),
    )
    .await;
    assert_eq!(rename.json()["metadata"]["description"], "Renaming project");
    assert_eq!(rename.json()["metadata"]["resources"], json!({}));
    let done = wait(&fake, &rename).await;
    assert_native_error(&done, 500, "Only empty projects can be renamed");
    let current = call(&fake, "GET", "/1.0/projects/pr3", None).await;
    let tag = etag(&current);
    let mut config = current.metadata()["config"].clone();
    config["features.profiles"] = json!("false");
    let put = json!({ "config": config });
    let stale = call_with(
        &fake,
        "PUT",
        "/1.0/projects/pr3",
        Some(put.clone()),
        &[("if-match", "\"bad\"")],
    )
    .await;
    assert_native_error(
        &stale,
        412,
        format!("ETag doesn't match: {tag} vs bad").as_str(),
    );
    let lose = call(&fake, "PUT", "/1.0/projects/pr3", Some(put)).await;
    assert_native_error(
        &lose,
        400,
        "Project feature \"features.profiles\" cannot be disabled on non-empty projects",
    );
    // PATCH replaces the config it is given, as the daemon does: the features go missing.
    let patch = json!({"config": {"limits.instances": "5"}});
    let lose = call(&fake, "PATCH", "/1.0/projects/pr3", Some(patch)).await;
    assert_eq!(error(&lose).0, 400);
    let mut config = current.metadata()["config"].clone();
    config["user.x"] = json!("y");
    let keep = json!({"config": config, "description": "nd"});
    assert_eq!(
        call(&fake, "PUT", "/1.0/projects/pr3", Some(keep))
            .await
            .status(),
        200
    );
    call(&fake, "DELETE", "/1.0/profiles/pp3?project=pr3", None).await;
    let renamed = wait(
        &fake,
        &call(
            &fake,
            "POST",
            "/1.0/projects/pr3",
            Some(json!({"name": "pr4"})),
        )
        .await,
    )
    .await;
    assert_eq!(renamed.json()["metadata"]["status"], "Success");
    let moved = call(&fake, "GET", "/1.0/profiles/default?project=pr4", None).await;
    assert_eq!(moved.metadata()["project"], "pr4");
    let patch = json!({"description": "pat"});
    call(&fake, "PATCH", "/1.0/projects/pr4", Some(patch)).await;
    let got = call(&fake, "GET", "/1.0/projects/pr4", None).await;
    assert_eq!(got.metadata()["config"]["user.x"], "y", "PATCH keeps it");
    let deleted = call(&fake, "DELETE", "/1.0/projects/pr4", None).await;
    assert_eq!((deleted.status(), deleted.metadata()), (200, &json!({})));
    assert_eq!(
        call(&fake, "GET", "/1.0/profiles?project=pr4", None)
            .await
            .status(),
        404
    );
}

#[tokio::test]
async fn custom_volume_create_update_and_delete_answer_as_the_daemon() {
    let fake = fake().await;
    // The name is the real daemon's capture's: it is part of the volume ETag.
    let base = "/1.0/storage-pools/default/volumes/custom";
    let body = json!({"name": "wcp-v1", "config": {"size": "10MiB"}, "description": "vd"});
    let reply = call(&fake, "POST", base, Some(body)).await;
    assert_eq!((reply.status(), reply.metadata()), (200, &json!({})));
    let got = call(&fake, "GET", &format!("{base}/wcp-v1"), None).await;
    let m = got.metadata();
    assert_eq!(
        (&m["config"], &m["description"], &m["type"], &m["used_by"]),
        (
            &json!({"size": "10MiB"}),
            &json!("vd"),
            &json!("custom"),
            &json!([])
        )
    );
    assert_eq!(
        etag(&got),
        "77089bbfe0f63df26c4c4017b030ad3fee98208d4fe394cf097b30deac13e4ac"
    );
    for (path, body, status, text) in [
        (
            base,
            json!({"name": "wcp-v1"}),
            409,
            "Volume by that name already exists",
        ),
        (
            base,
            json!({"name": "v2", "config": {"nope": "1"}}),
            500,
            "Invalid option for volume \"v2\" option \"nope\"",
        ),
        (
            base,
            json!({"name": "v2", "config": {"size": "abc"}}),
            500,
            "Invalid value for volume \"v2\" option \"size\": Invalid value: abc",
        ),
        (base, json!({"name": ""}), 400, "No name provided"),
        (
            "/1.0/storage-pools/default/volumes",
            json!({"name": "v3"}),
            400,
            "Currently not allowed to create storage volumes of type \"\"",
        ),
        (
            "/1.0/storage-pools/nopool/volumes/custom",
            json!({"name": "v3"}),
            404,
            "Storage pool not found",
        ),
    ] {
        let reply = call(&fake, "POST", path, Some(body.clone())).await;
        assert_eq!(error(&reply), (status, text), "{body}");
    }
    let put = json!({"config": {"size": "20MiB", "user.a": "b"}, "description": "new"});
    let stale = call_with(
        &fake,
        "PUT",
        &format!("{base}/wcp-v1"),
        Some(put.clone()),
        &[("if-match", "\"bad\"")],
    )
    .await;
    assert_eq!(stale.status(), 412);
    assert_eq!(
        call(&fake, "PUT", &format!("{base}/wcp-v1"), Some(put))
            .await
            .status(),
        200
    );
    let got = call(&fake, "GET", &format!("{base}/wcp-v1"), None).await;
    assert_eq!(
        etag(&got),
        "b80105bdf9679cd75380de5182c987a8c54f06b79aed69d87842414a5ef62555"
    );
    let patch = json!({"config": {"user.c": "d"}});
    call(&fake, "PATCH", &format!("{base}/wcp-v1"), Some(patch)).await;
    let got = call(&fake, "GET", &format!("{base}/wcp-v1"), None).await;
    assert_eq!(
        (&got.metadata()["config"], &got.metadata()["description"]),
        (
            &json!({"size": "20MiB", "user.a": "b", "user.c": "d"}),
            &json!("")
        ),
        "PATCH merges the config and resets the description, as the daemon does"
    );
    assert_eq!(
        etag(&got),
        "22b7c0c596f0f083b3ea858b2909e0202dbc60090542346726e32742ec829aba"
    );
    let bad = call(
        &fake,
        "PUT",
        &format!("{base}/wcp-v1"),
        Some(json!({"config": {"nope": "x"}})),
    )
    .await;
    assert_native_error(
        &bad,
        500,
        "Invalid option for volume \"default_wcp-v1\" option \"nope\"",
    );
    for method in ["PUT", "DELETE"] {
        let reply = call(&fake, method, &format!("{base}/nosuch"), Some(json!({}))).await;
        assert_eq!(
            error(&reply),
            (404, "Storage pool volume not found"),
            "{method}"
        );
    }
    let deleted = call(&fake, "DELETE", &format!("{base}/wcp-v1"), None).await;
    assert_eq!((deleted.status(), deleted.metadata()), (200, &json!({})));
    assert_eq!(
        call(&fake, "GET", &format!("{base}/wcp-v1"), None)
            .await
            .status(),
        404
    );
}

#[tokio::test]
async fn an_attached_volume_is_used_by_its_instance_and_cannot_be_deleted() {
    let fake = fake().await;
    let base = "/1.0/storage-pools/default/volumes/custom";
    call(&fake, "POST", base, Some(json!({"name": "v1"}))).await;
    launch(&fake, "c1", false).await;
    let missing = json!({"devices": {"v": {"type": "disk", "pool": "default", "source": "nosuchvol", "path": "/mnt"}}});
    let refused = call(&fake, "PATCH", "/1.0/instances/c1", Some(missing)).await;
    assert_native_error(&refused, 404, "Failed add validation for device \"v\": Failed loading custom volume: Storage volume not found");
    let create = json!({"name": "c2", "source": {"type": "none"},
        "devices": {"v": {"type": "disk", "pool": "default", "source": "nosuchvol", "path": "/mnt"}}});
    let done = wait(
        &fake,
        &call(&fake, "POST", "/1.0/instances", Some(create)).await,
    )
    .await;
    assert_native_error(&done, 404, "Failed creating instance record: Failed initializing instance: Failed add validation for device \"v\": Failed loading custom volume: Storage volume not found");
    let attach = json!({"devices": {"v": {"type": "disk", "pool": "default", "source": "v1", "path": "/mnt"}}});
    let reply = call(&fake, "PATCH", "/1.0/instances/c1", Some(attach)).await;
    assert_eq!(reply.status(), 200, "{}", reply.json());
    let got = call(&fake, "GET", &format!("{base}/v1"), None).await;
    assert_eq!(got.metadata()["used_by"], json!(["/1.0/instances/c1"]));
    let in_use = call(&fake, "DELETE", &format!("{base}/v1"), None).await;
    assert_native_error(&in_use, 400, "The storage volume is still in use");
    let pool = call(&fake, "GET", "/1.0/storage-pools/default", None).await;
    assert_eq!(
        pool.metadata()["used_by"],
        json!([
            "/1.0/instances/c1",
            "/1.0/profiles/default",
            format!("{base}/v1")
        ])
    );
    let project = call(&fake, "GET", "/1.0/projects/default", None).await;
    let used_by = project.metadata()["used_by"].as_array().unwrap().clone();
    assert_eq!(used_by.last(), Some(&json!(format!("{base}/v1"))));
}

#[tokio::test]
async fn a_profile_change_that_attaches_a_missing_volume_is_saved_and_reported() {
    let fake = fake().await;
    call(&fake, "POST", "/1.0/profiles", Some(json!({"name": "p1"}))).await;
    let create = json!({"name": "c1", "source": {"type": "none"}, "profiles": ["default", "p1"]});
    wait(
        &fake,
        &call(&fake, "POST", "/1.0/instances", Some(create)).await,
    )
    .await;
    let patch = json!({"devices": {"d": {"type": "disk", "source": "nosuchvol", "pool": "default", "path": "/mnt"}}});
    let reply = call(&fake, "PATCH", "/1.0/profiles/p1", Some(patch)).await;
    assert_native_error(&reply, 500, "The following instances failed to update (profile change still saved):\n - Project: default, Instance: c1: Failed add validation for device \"d\": Failed loading custom volume: Storage volume not found\n");
    let profile = call(&fake, "GET", "/1.0/profiles/p1", None).await;
    assert!(profile.metadata()["devices"].get("d").is_some(), "saved");
}

#[tokio::test]
async fn custom_volume_rename_answers_201_and_the_attaching_devices_follow() {
    let fake = fake().await;
    let base = "/1.0/storage-pools/default/volumes/custom";
    for name in ["r1", "r2"] {
        call(&fake, "POST", base, Some(json!({ "name": name }))).await;
    }
    for (path, name, status, text) in [
        ("r1", "r2", 409, "Volume by that name already exists"),
        ("r1", "", 400, "No name provided"),
        (
            "r1",
            "a/b",
            400,
            "Storage volume names may not contain slashes",
        ),
        ("nosuch", "r3", 404, "Storage pool volume not found"),
    ] {
        let reply = call(
            &fake,
            "POST",
            &format!("{base}/{path}"),
            Some(json!({ "name": name })),
        )
        .await;
        assert_eq!(error(&reply), (status, text), "{path} -> {name}");
    }
    launch(&fake, "c1", false).await;
    let attach = json!({"devices": {"data": {"type": "disk", "pool": "default", "source": "r1", "path": "/mnt"}}});
    call(&fake, "PATCH", "/1.0/instances/c1", Some(attach)).await;
    let renamed = call(
        &fake,
        "POST",
        &format!("{base}/r1"),
        Some(json!({"name": "r3"})),
    )
    .await;
    assert_eq!(
        (renamed.status(), renamed.header("location")),
        (201, Some(format!("{base}/r3").as_str()))
    );
    assert_eq!(renamed.json()["metadata"], Value::Null);
    let instance = call(&fake, "GET", "/1.0/instances/c1", None).await;
    assert_eq!(instance.metadata()["devices"]["data"]["source"], "r3");
    let got = call(&fake, "GET", &format!("{base}/r3"), None).await;
    assert_eq!(got.metadata()["used_by"], json!(["/1.0/instances/c1"]));
}
