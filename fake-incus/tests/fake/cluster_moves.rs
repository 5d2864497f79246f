//! Instances across the fake cluster's members (moves, copies, evacuation and restore) and the
//! cluster's groups and member config, each checked against what a real 3-member Incus 6.0.4
//! cluster answered (measured on loopback, dir pools, busybox containers; the texts are the
//! daemon's).

use crate::cluster::{cluster, create, location_of, via};
use crate::common::Reply;
use fake_incus::{assert_native_error, FakeIncus};
use serde_json::{json, Value};

const NO_CRIU: &str = "Unable to perform live container migration. CRIU isn't installed on the source server. To migrate the container, stop the container before migration or install CRIU on the source server";

/// Waits (through `member`) for the operation an accepted request started.
async fn wait(fake: &FakeIncus, member: &str, accepted: &Reply) -> Reply {
    assert_eq!(accepted.status(), 202, "{}", accepted.json());
    let op = accepted.json()["operation"].as_str().expect("operation");
    let path = format!("{}/wait?timeout=10", op.split('?').next().unwrap_or(op));
    via(fake, member, "GET", &path, None).await
}

/// Creates a stopped instance on `target` (through m1) and waits for it.
async fn stopped(fake: &FakeIncus, name: &str, target: &str) {
    let body = json!({"name": name, "source": {"type": "image", "alias": "busybox"}});
    let path = format!("/1.0/instances?target={target}");
    let accepted = via(fake, "m1", "POST", &path, Some(body)).await;
    let done = wait(fake, "m1", &accepted).await;
    assert_eq!(done.metadata()["status"], "Success", "{}", done.json());
}

async fn instance(fake: &FakeIncus, name: &str) -> Value {
    let reply = via(fake, "m1", "GET", &format!("/1.0/instances/{name}"), None).await;
    assert_eq!(reply.status(), 200, "{}", reply.json());
    reply.metadata().clone()
}

async fn move_to(fake: &FakeIncus, member: &str, name: &str, target: &str, live: bool) -> Reply {
    let body = json!({"name": name, "migration": true, "live": live, "instance_only": false});
    let path = format!("/1.0/instances/{name}?target={target}");
    via(fake, member, "POST", &path, Some(body)).await
}

#[tokio::test]
async fn a_stopped_instance_moves_with_its_snapshots_and_volumes_and_its_operation_on_the_source() {
    let fake = cluster().await;
    stopped(&fake, "mv1", "m1").await;
    let snap = via(
        &fake,
        "m1",
        "POST",
        "/1.0/instances/mv1/snapshots",
        Some(json!({"name": "s1"})),
    )
    .await;
    wait(&fake, "m1", &snap).await;
    let accepted = move_to(&fake, "m2", "mv1", "m3", true).await;
    assert_eq!(accepted.metadata()["description"], "Migrating instance");
    assert_eq!(
        location_of(&accepted),
        "m1",
        "the move runs on the source member"
    );
    assert!(
        !accepted.json()["operation"]
            .as_str()
            .unwrap_or_default()
            .contains('?'),
        "a forwarded move's operation URL has no project: {}",
        accepted.json()
    );
    let done = wait(&fake, "m2", &accepted).await;
    assert_eq!(done.metadata()["status"], "Success", "{}", done.json());
    for member in ["m1", "m2", "m3"] {
        let reply = via(&fake, member, "GET", "/1.0/instances/mv1", None).await;
        assert_eq!(location_of(&reply), "m3", "through {member}");
    }
    let volumes = via(
        &fake,
        "m1",
        "GET",
        "/1.0/storage-pools/default/volumes?recursion=1",
        None,
    )
    .await;
    let located: Vec<(String, String)> = volumes
        .metadata()
        .as_array()
        .expect("volumes")
        .iter()
        .filter(|v| v["name"].as_str().is_some_and(|n| n.starts_with("mv1")))
        .map(|v| (v["name"].to_string(), v["location"].to_string()))
        .collect();
    assert_eq!(
        located,
        [
            ("\"mv1\"".to_string(), "\"m3\"".to_string()),
            ("\"mv1/s1\"".to_string(), "\"m3\"".to_string())
        ]
    );
    let snapshot = via(&fake, "m2", "GET", "/1.0/instances/mv1/snapshots/s1", None).await;
    assert_eq!(snapshot.status(), 200, "the snapshot went with it");
    // A later operation on the instance runs on its new member.
    let accepted = via(
        &fake,
        "m1",
        "PUT",
        "/1.0/instances/mv1/state",
        Some(json!({"action": "start"})),
    )
    .await;
    assert_eq!(location_of(&accepted), "m3");
}

#[tokio::test]
async fn a_move_to_its_own_member_is_refused_with_the_daemons_text() {
    let fake = cluster().await;
    stopped(&fake, "mv2", "m2").await;
    for member in ["m1", "m2"] {
        let reply = move_to(&fake, member, "mv2", "m2", true).await;
        assert_native_error(
            &reply,
            400,
            "Requested target server is the same as current server",
        );
    }
}

#[tokio::test]
async fn a_running_instance_is_not_moved_stateless_nor_live_without_criu() {
    let fake = cluster().await;
    create(&fake, "m1", "mv3", Some("m3")).await;
    let reply = move_to(&fake, "m1", "mv3", "m1", false).await;
    assert_native_error(
        &reply,
        400,
        "Instance must be stopped to be moved statelessly",
    );
    let accepted = move_to(&fake, "m1", "mv3", "m1", true).await;
    assert_eq!(location_of(&accepted), "m3");
    let done = wait(&fake, "m1", &accepted).await;
    assert_native_error(
        &done,
        500,
        &format!("Failed setting up instance migration on source: {NO_CRIU}"),
    );
    let after = instance(&fake, "mv3").await;
    assert_eq!(
        (after["location"].as_str(), after["status"].as_str()),
        (Some("m3"), Some("Running"))
    );
}

#[tokio::test]
async fn move_targets_unknown_member_and_group_refused_and_a_group_target_is_recorded() {
    let fake = cluster().await;
    stopped(&fake, "mv4", "m1").await;
    let reply = move_to(&fake, "m1", "mv4", "nope", true).await;
    assert_native_error(&reply, 404, "Cluster member \"nope\" not found");
    let reply = move_to(&fake, "m1", "mv4", "@nope", true).await;
    assert_native_error(&reply, 400, "Cluster group \"nope\" doesn't exist");
    let accepted = move_to(&fake, "m1", "mv4", "@default", true).await;
    wait(&fake, "m1", &accepted).await;
    let moved = instance(&fake, "mv4").await;
    assert_eq!(moved["location"], "m2", "the group's emptiest other member");
    assert_eq!(moved["config"]["volatile.cluster.group"], "default");
    let accepted = move_to(&fake, "m1", "mv4", "m3", true).await;
    wait(&fake, "m1", &accepted).await;
    let moved = instance(&fake, "mv4").await;
    assert_eq!(moved["location"], "m3");
    assert!(moved["config"].get("volatile.cluster.group").is_none());
}

#[tokio::test]
async fn copies_are_located_on_their_target_or_their_placement() {
    let fake = cluster().await;
    stopped(&fake, "src", "m1").await;
    let bare = json!({"name": "cp0", "source": {"type": "copy", "source": "src"}});
    let reply = via(&fake, "m1", "POST", "/1.0/instances?target=m2", Some(bare)).await;
    assert_native_error(&reply, 400, "Architecture isn't supported: ");
    // The official client sends the source's architecture.
    let copy = |name: &str| json!({"name": name, "architecture": "x86_64", "source": {"type": "copy", "source": "src"}});
    let accepted = via(
        &fake,
        "m1",
        "POST",
        "/1.0/instances?target=m2",
        Some(copy("cp1")),
    )
    .await;
    assert_eq!(location_of(&accepted), "m2");
    assert_eq!(
        accepted.metadata()["resources"]["instances"],
        json!(["/1.0/instances/cp1"]),
        "a copy onto another member names only the new instance"
    );
    wait(&fake, "m1", &accepted).await;
    let copied = instance(&fake, "cp1").await;
    assert_eq!(copied["location"], "m2");
    // A migration: what the request says, the root disk made local (measured).
    assert!(copied["config"].get("image.os").is_none(), "{copied}");
    assert_eq!(copied["devices"]["root"]["path"], "/");
    let accepted = via(&fake, "m1", "POST", "/1.0/instances", Some(copy("cp2"))).await;
    let placed = location_of(&accepted).to_string();
    assert_eq!(
        placed, "m3",
        "placed on the member with the fewest instances"
    );
    wait(&fake, "m1", &accepted).await;
    assert_eq!(instance(&fake, "cp2").await["location"], "m3");
}

#[tokio::test]
async fn a_live_copy_of_a_running_instance_onto_another_member_needs_criu() {
    let fake = cluster().await;
    create(&fake, "m1", "run", Some("m3")).await;
    let copy = |name: &str, live: bool| json!({"name": name, "source": {"type": "copy", "source": "run", "live": live}});
    let reply = via(
        &fake,
        "m1",
        "POST",
        "/1.0/instances?target=m1",
        Some(copy("c1", true)),
    )
    .await;
    assert_native_error(&reply, 500, NO_CRIU);
    let reply = via(
        &fake,
        "m1",
        "POST",
        "/1.0/instances",
        Some(copy("c2", true)),
    )
    .await;
    assert_native_error(&reply, 500, NO_CRIU);
    let same = via(
        &fake,
        "m1",
        "POST",
        "/1.0/instances?target=m3",
        Some(copy("c3", true)),
    )
    .await;
    assert_eq!(
        same.metadata()["resources"]["instances"],
        json!(["/1.0/instances/c3", "/1.0/instances/run"]),
        "a copy on its source's member names both"
    );
    assert_eq!(
        wait(&fake, "m1", &same).await.metadata()["status"],
        "Success"
    );
    let reply = via(
        &fake,
        "m1",
        "POST",
        "/1.0/instances?target=m2",
        Some(copy("c4", false)),
    )
    .await;
    assert_native_error(&reply, 400, "Architecture isn't supported: ");
    let mut body = copy("c4", false);
    body["architecture"] = json!("x86_64");
    let stateless = via(&fake, "m1", "POST", "/1.0/instances?target=m2", Some(body)).await;
    assert_eq!(
        wait(&fake, "m1", &stateless).await.metadata()["status"],
        "Success"
    );
}

async fn member_state(fake: &FakeIncus, member: &str, body: Value) -> Reply {
    let path = format!("/1.0/cluster/members/{member}/state");
    let accepted = via(fake, "m1", "POST", &path, Some(body)).await;
    if accepted.status() != 202 {
        return accepted;
    }
    assert_eq!(location_of(&accepted), member, "it runs on the member");
    assert_eq!(accepted.metadata()["resources"], json!({}));
    wait(fake, "m1", &accepted).await
}

async fn status_of(fake: &FakeIncus, member: &str) -> (String, String) {
    let reply = via(
        fake,
        "m1",
        "GET",
        &format!("/1.0/cluster/members/{member}"),
        None,
    )
    .await;
    let m = reply.metadata();
    (
        m["status"].as_str().unwrap_or_default().to_string(),
        m["message"].as_str().unwrap_or_default().to_string(),
    )
}

#[tokio::test]
async fn evacuation_migrates_and_stops_by_mode_placement_avoids_the_member_and_restore_brings_back()
{
    let fake = cluster().await;
    stopped(&fake, "e-stopped", "m2").await;
    create(&fake, "m1", "e-run", Some("m2")).await;
    let body = json!({"name": "e-stop", "source": {"type": "image", "alias": "busybox"},
                      "start": true, "config": {"cluster.evacuate": "stop"}});
    let accepted = via(&fake, "m1", "POST", "/1.0/instances?target=m2", Some(body)).await;
    wait(&fake, "m1", &accepted).await;
    let done = member_state(&fake, "m2", json!({"action": "evacuate"})).await;
    assert_eq!(done.metadata()["status"], "Success", "{}", done.json());
    assert_eq!(done.metadata()["description"], "Evacuating cluster member");
    assert_eq!(
        status_of(&fake, "m2").await,
        ("Evacuated".into(), "Unavailable due to maintenance".into())
    );
    let moved = instance(&fake, "e-stopped").await;
    assert_ne!(moved["location"], "m2");
    assert_eq!(moved["config"]["volatile.evacuate.origin"], "m2");
    let moved = instance(&fake, "e-run").await;
    assert_ne!(moved["location"], "m2");
    assert_eq!(
        moved["status"], "Running",
        "started again on its new member"
    );
    let kept = instance(&fake, "e-stop").await;
    assert_eq!(
        (kept["location"].as_str(), kept["status"].as_str()),
        (Some("m2"), Some("Stopped"))
    );
    assert_eq!(kept["config"]["volatile.last_state.power"], "RUNNING");
    // While evacuated: not placed on, not created on, nothing started there.
    for n in 0..3 {
        let body = json!({"name": format!("u{n}"), "source": {"type": "none"}});
        let accepted = via(&fake, "m1", "POST", "/1.0/instances", Some(body)).await;
        assert_ne!(location_of(&accepted), "m2");
    }
    let body = json!({"name": "t1", "source": {"type": "none"}});
    let reply = via(&fake, "m1", "POST", "/1.0/instances?target=m2", Some(body)).await;
    assert_native_error(&reply, 403, "Cluster member is evacuated");
    let start = json!({"action": "start"});
    let reply = via(
        &fake,
        "m1",
        "PUT",
        "/1.0/instances/e-stop/state",
        Some(start),
    )
    .await;
    assert_native_error(&reply, 403, "Cluster member is evacuated");
    let again = member_state(&fake, "m2", json!({"action": "evacuate"})).await;
    assert_native_error(&again, 500, "Cluster member is already evacuated");
    let done = member_state(&fake, "m2", json!({"action": "restore"})).await;
    assert_eq!(done.metadata()["status"], "Success", "{}", done.json());
    assert_eq!(done.metadata()["description"], "Restoring cluster member");
    assert_eq!(status_of(&fake, "m2").await.0, "Online");
    for (name, status) in [
        ("e-stopped", "Stopped"),
        ("e-run", "Running"),
        ("e-stop", "Running"),
    ] {
        let back = instance(&fake, name).await;
        assert_eq!(
            (back["location"].as_str(), back["status"].as_str()),
            (Some("m2"), Some(status)),
            "{name}"
        );
        assert!(back["config"].get("volatile.evacuate.origin").is_none());
    }
    let again = member_state(&fake, "m2", json!({"action": "restore"})).await;
    assert_native_error(&again, 500, "Cluster member is already restored");
}

#[tokio::test]
async fn evacuation_reads_cluster_evacuate_from_the_instances_profiles_unless_it_sets_its_own() {
    let fake = cluster().await;
    let profile = json!({"name": "stay", "config": {"cluster.evacuate": "stop"}, "devices": {}});
    let reply = via(&fake, "m1", "POST", "/1.0/profiles", Some(profile)).await;
    assert_eq!(reply.status(), 201, "{}", reply.json());
    let launch = |name: &str, config: Value| {
        json!({"name": name, "source": {"type": "image", "alias": "busybox"}, "start": true,
               "profiles": ["default", "stay"], "config": config})
    };
    for (name, config) in [
        ("p-stays", json!({})),
        ("p-own", json!({"cluster.evacuate": "migrate"})),
    ] {
        let body = launch(name, config);
        let accepted = via(&fake, "m1", "POST", "/1.0/instances?target=m2", Some(body)).await;
        let done = wait(&fake, "m1", &accepted).await;
        assert_eq!(done.metadata()["status"], "Success", "{}", done.json());
    }
    let done = member_state(&fake, "m2", json!({"action": "evacuate"})).await;
    assert_eq!(done.metadata()["status"], "Success", "{}", done.json());
    let kept = instance(&fake, "p-stays").await;
    assert_eq!(
        (kept["location"].as_str(), kept["status"].as_str()),
        (Some("m2"), Some("Stopped")),
        "the profile's stop mode"
    );
    let moved = instance(&fake, "p-own").await;
    assert_ne!(moved["location"], "m2", "its own migrate mode wins");
    assert_eq!(moved["status"], "Running");
    // A request's explicit mode overrides both.
    let done = member_state(&fake, "m2", json!({"action": "restore"})).await;
    assert_eq!(done.metadata()["status"], "Success", "{}", done.json());
    let done = member_state(
        &fake,
        "m2",
        json!({"action": "evacuate", "mode": "migrate"}),
    )
    .await;
    assert_eq!(done.metadata()["status"], "Success", "{}", done.json());
    assert_ne!(instance(&fake, "p-stays").await["location"], "m2");
}

#[tokio::test]
async fn a_live_migrate_evacuation_fails_without_criu_and_the_member_stays_online() {
    let fake = cluster().await;
    stopped(&fake, "l-first", "m3").await;
    create(&fake, "m1", "l-run", Some("m3")).await;
    let done = member_state(
        &fake,
        "m3",
        json!({"action": "evacuate", "mode": "live-migrate"}),
    )
    .await;
    assert_native_error(
        &done,
        500,
        &format!("Failed to evacuate instances: Failed to migrate instance \"l-run\" in project \"default\": Failed setting up instance migration on source: {NO_CRIU}"),
    );
    assert_eq!(status_of(&fake, "m3").await.0, "Online");
    assert_ne!(
        instance(&fake, "l-first").await["location"],
        "m3",
        "moved before the failure"
    );
    assert_eq!(instance(&fake, "l-run").await["location"], "m3");
}

#[tokio::test]
async fn member_state_refuses_unknown_modes_and_actions_with_the_daemons_texts() {
    let fake = cluster().await;
    let reply = member_state(&fake, "m2", json!({"action": "evacuate", "mode": "bogus"})).await;
    assert_native_error(
        &reply,
        400,
        "Invalid value \"bogus\" (not one of [auto migrate live-migrate stop stateful-stop force-stop])",
    );
    let reply = member_state(&fake, "m2", json!({"action": "frobnicate"})).await;
    assert_native_error(&reply, 400, "Unknown action \"frobnicate\"");
    let reply = member_state(&fake, "nope", json!({"action": "restore"})).await;
    assert_native_error(&reply, 404, "Cluster member not found");
}

#[tokio::test]
async fn cluster_groups_are_created_assigned_renamed_and_deleted_with_the_daemons_texts() {
    let fake = cluster().await;
    let post = |body: Value| via(&fake, "m1", "POST", "/1.0/cluster/groups", Some(body));
    let made = post(json!({"name": "g1", "description": "gd", "members": ["m2"]})).await;
    assert_eq!(made.status(), 201);
    assert_eq!(made.header("location"), Some("/1.0/cluster/groups/g1"));
    let reply = post(json!({"name": "g1"})).await;
    assert_native_error(
        &reply,
        500,
        "Failed to create \"cluster_groups\" entry: UNIQUE constraint failed: cluster_groups.name",
    );
    let reply = post(json!({"name": "g2", "members": ["nope"]})).await;
    assert_native_error(&reply, 500, "Failed to create \"nodes_clusters_groups\" entry: NOT NULL constraint failed: nodes_cluster_groups.node_id");
    let reply = post(json!({"name": ""})).await;
    assert_native_error(&reply, 400, "No name provided");
    let reply = via(&fake, "m1", "GET", "/1.0/cluster/groups/g1", None).await;
    assert_eq!(
        reply.metadata(),
        &json!({"description": "gd", "members": ["m2"], "name": "g1"})
    );
    assert_eq!(
        reply.header("etag"),
        Some("\"dec4d608d35a74c19bd38e086ffb35acf763cd5146b43fc14200a964116f07b4\""),
        "the daemon's ETag of this group"
    );
    let reply = via(&fake, "m1", "GET", "/1.0/cluster/groups/g2", None).await;
    assert_native_error(&reply, 404, "Cluster_group not found");
    let member = via(&fake, "m1", "GET", "/1.0/cluster/members/m2", None).await;
    assert_eq!(member.metadata()["groups"], json!(["default", "g1"]));
    let put = json!({"description": "new", "members": ["m2", "m3"]});
    let reply = via(&fake, "m1", "PUT", "/1.0/cluster/groups/g1", Some(put)).await;
    assert_eq!(reply.status(), 200);
    let reply = via(
        &fake,
        "m1",
        "PUT",
        "/1.0/cluster/groups/g1",
        Some(json!({"members": ["zz"]})),
    )
    .await;
    assert_native_error(
        &reply,
        404,
        "Failed to get node info: Cluster member not found",
    );
    let reply = via(
        &fake,
        "m1",
        "PATCH",
        "/1.0/cluster/groups/g1",
        Some(json!({"description": "p"})),
    )
    .await;
    assert_native_error(
        &reply,
        500,
        "Query deleted 2 NodeClusterGroup rows instead of 1",
    );
    let reply = via(&fake, "m1", "GET", "/1.0/cluster/groups/g1", None).await;
    assert_eq!(reply.metadata()["members"], json!(["m2", "m3"]));
    let rename = |from: &str, to: &str| {
        let path = format!("/1.0/cluster/groups/{from}");
        let body = json!({"name": to});
        let fake = &fake;
        async move { via(fake, "m1", "POST", &path, Some(body)).await }
    };
    assert_eq!(rename("g1", "g3").await.status(), 201);
    assert_native_error(
        &rename("default", "g9").await,
        403,
        "The \"default\" group cannot be renamed",
    );
    assert_eq!(post(json!({"name": "g5"})).await.status(), 201);
    assert_native_error(&rename("g3", "g5").await, 500, "Name \"g5\" already in use");
    let delete = |name: &str| {
        let path = format!("/1.0/cluster/groups/{name}");
        let fake = &fake;
        async move { via(fake, "m1", "DELETE", &path, None).await }
    };
    assert_native_error(
        &delete("g3").await,
        500,
        "Only empty cluster groups can be removed",
    );
    assert_native_error(
        &delete("default").await,
        403,
        "The 'default' cluster group cannot be deleted",
    );
    assert_eq!(delete("g5").await.status(), 200);
    assert_native_error(&delete("g5").await, 404, "Cluster_group not found");
    let list = via(&fake, "m1", "GET", "/1.0/cluster/groups", None).await;
    assert_eq!(
        list.metadata(),
        &json!(["/1.0/cluster/groups/default", "/1.0/cluster/groups/g3"])
    );
    // An unknown group target; a group target places within the group.
    let body = json!({"name": "x", "source": {"type": "none"}});
    let reply = via(
        &fake,
        "m1",
        "POST",
        "/1.0/instances?target=@nope",
        Some(body.clone()),
    )
    .await;
    assert_native_error(&reply, 400, "Cluster group \"nope\" doesn't exist");
    let accepted = via(&fake, "m1", "POST", "/1.0/instances?target=@g3", Some(body)).await;
    assert_eq!(location_of(&accepted), "m2");
    let name = accepted.metadata()["resources"]["instances"][0]
        .as_str()
        .and_then(|u| u.rsplit('/').next())
        .unwrap()
        .to_string();
    wait(&fake, "m1", &accepted).await;
    assert_eq!(
        instance(&fake, &name).await["config"]["volatile.cluster.group"],
        "g3",
        "the group it was placed in is recorded"
    );
}

#[tokio::test]
async fn member_updates_keep_the_database_role_and_scheduler_manual_keeps_placement_off() {
    let fake = cluster().await;
    let member = |body: Value, method: &'static str| {
        via(&fake, "m1", method, "/1.0/cluster/members/m3", Some(body))
    };
    let reply = member(
        json!({"roles": [], "failure_domain": "default", "groups": ["default"]}),
        "PUT",
    )
    .await;
    assert_native_error(
        &reply,
        400,
        "The \"database\" role cannot be dropped at this time",
    );
    let reply = member(json!({"config": {"scheduler.instance": "group"}}), "PATCH").await;
    assert_native_error(
        &reply,
        400,
        "The \"database\" role cannot be dropped at this time",
    );
    let reply = member(json!({"roles": ["database"]}), "PATCH").await;
    assert_native_error(
        &reply,
        400,
        "Cluster members need to belong to at least one group",
    );
    let base = |extra: Value| {
        let mut body =
            json!({"roles": ["database"], "groups": ["default"], "failure_domain": "default"});
        if let (Some(b), Some(e)) = (body.as_object_mut(), extra.as_object()) {
            b.extend(e.clone());
        }
        body
    };
    let reply = member(base(json!({"config": {"foo": "bar"}})), "PATCH").await;
    assert_native_error(&reply, 500, "Invalid cluster configuration key \"foo\"");
    let reply = member(
        base(json!({"config": {"scheduler.instance": "bogus"}})),
        "PATCH",
    )
    .await;
    assert_native_error(
        &reply,
        500,
        "Invalid cluster configuration key \"scheduler.instance\" value",
    );
    let reply = member(base(json!({"groups": ["nope"]})), "PATCH").await;
    assert_native_error(&reply, 404, "Update cluster groups: Failed to add member to cluster group: Failed to get cluster group ID: Cluster_group not found");
    let reply = member(base(json!({"roles": ["bogus", "database"]})), "PATCH").await;
    assert_native_error(&reply, 500, "Update roles: Invalid cluster role \"bogus\"");
    let reply = member(
        json!({"roles": ["database"], "groups": ["default"]}),
        "PATCH",
    )
    .await;
    assert_native_error(
        &reply,
        500,
        "Update failure domain: Failure domain name can't be empty",
    );
    let reply = member(
        base(
            json!({"roles": ["database", "event-hub"], "failure_domain": "fd2",
        "description": "d3", "config": {"scheduler.instance": "manual"}}),
        ),
        "PUT",
    )
    .await;
    assert_eq!(reply.status(), 200, "{}", reply.json());
    let shown = via(&fake, "m1", "GET", "/1.0/cluster/members/m3", None).await;
    let m = shown.metadata();
    assert_eq!(m["roles"], json!(["event-hub", "database"]));
    assert_eq!(
        (m["failure_domain"].as_str(), m["description"].as_str()),
        (Some("fd2"), Some("d3"))
    );
    let reply = member(base(json!({"config": {"user.x": "1"}})), "PATCH").await;
    assert_eq!(reply.status(), 200);
    let shown = via(&fake, "m1", "GET", "/1.0/cluster/members/m3", None).await;
    assert_eq!(
        shown.metadata()["config"],
        json!({"scheduler.instance": "manual", "user.x": "1"}),
        "PATCH merges the config"
    );
    let stale = via(&fake, "m1", "GET", "/1.0/cluster/members/m3", None).await;
    let tag = stale.header("etag").expect("etag");
    let reply = member(
        base(json!({"config": {"scheduler.instance": "manual"}})),
        "PUT",
    )
    .await;
    assert_eq!(reply.status(), 200);
    let socket = fake.member("m1").expect("m1").unix_socket;
    let reply = crate::common::unix_at(
        &socket,
        "PUT",
        "/1.0/cluster/members/m3",
        Some(base(json!({}))),
        &[("If-Match", tag)],
    )
    .await;
    assert_eq!(reply.status(), 412, "{}", reply.json());
    for n in 0..4 {
        let body = json!({"name": format!("s{n}"), "source": {"type": "none"}});
        let accepted = via(&fake, "m1", "POST", "/1.0/instances", Some(body)).await;
        assert_ne!(
            location_of(&accepted),
            "m3",
            "manual members are only targeted"
        );
    }
    let body = json!({"name": "s9", "source": {"type": "none"}});
    let accepted = via(&fake, "m1", "POST", "/1.0/instances?target=m3", Some(body)).await;
    assert_eq!(location_of(&accepted), "m3");
}

#[tokio::test]
async fn resources_per_member_list_targets_and_forwarded_operation_urls_as_the_daemon() {
    let fake = cluster().await;
    for path in [
        "/1.0/resources?target=m3",
        "/1.0/storage-pools/default/resources?target=m2",
    ] {
        let reply = via(&fake, "m1", "GET", path, None).await;
        assert_eq!(reply.status(), 200, "{path}: {}", reply.json());
    }
    let resources = via(&fake, "m1", "GET", "/1.0/resources", None).await;
    assert_eq!(resources.metadata()["cpu"]["architecture"], "x86_64");
    let pool = via(
        &fake,
        "m1",
        "GET",
        "/1.0/storage-pools/default/resources",
        None,
    )
    .await;
    assert!(pool.metadata()["space"]["total"].as_u64().is_some());
    for path in [
        "/1.0/resources?target=nope",
        "/1.0/storage-pools/default/resources?target=nope",
        "/1.0/networks/lo?target=nope",
    ] {
        let reply = via(&fake, "m1", "GET", path, None).await;
        assert_native_error(&reply, 404, "Cluster member not found");
    }
    for path in [
        "/1.0/networks?target=nope",
        "/1.0/storage-pools?target=nope",
    ] {
        let reply = via(&fake, "m1", "GET", path, None).await;
        assert_eq!(
            reply.status(),
            200,
            "a list ignores an unknown target: {path}"
        );
    }
    create(&fake, "m1", "f3", Some("m3")).await;
    let snap = via(
        &fake,
        "m1",
        "POST",
        "/1.0/instances/f3/snapshots",
        Some(json!({"name": "a"})),
    )
    .await;
    assert_eq!(location_of(&snap), "m3");
    let url = snap.json()["operation"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        !url.contains('?'),
        "a forwarded snapshot's operation URL: {url}"
    );
    let exec = via(
        &fake,
        "m1",
        "POST",
        "/1.0/instances/f3/exec",
        Some(json!({"command": ["true"], "wait-for-websocket": false})),
    )
    .await;
    let url = exec.json()["operation"].as_str().unwrap_or_default();
    assert!(
        url.ends_with("?project=default"),
        "a forwarded exec's operation URL: {url}"
    );
}

#[tokio::test]
async fn operation_lists_put_the_asked_members_own_operations_first() {
    let fake = cluster().await;
    create(&fake, "m1", "o1", Some("m1")).await;
    create(&fake, "m1", "o3", Some("m3")).await;
    for name in ["o1", "o3"] {
        let body = json!({"command": ["sleep", "5"], "wait-for-websocket": false});
        let accepted = via(
            &fake,
            "m1",
            "POST",
            &format!("/1.0/instances/{name}/exec"),
            Some(body),
        )
        .await;
        assert_eq!(accepted.status(), 202);
    }
    for (member, first) in [("m1", "m1"), ("m3", "m3")] {
        let list = via(&fake, member, "GET", "/1.0/operations?recursion=1", None).await;
        let running = list.metadata()["running"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let locations: Vec<&str> = running
            .iter()
            .filter_map(|o| o["location"].as_str())
            .collect();
        assert_eq!(
            locations.first().copied(),
            Some(first),
            "through {member}: {locations:?}"
        );
    }
}

/// The groups, member config and evacuation as the members list them, through m1.
async fn records_seen(fake: &FakeIncus) -> (Value, Value) {
    let groups = via(fake, "m1", "GET", "/1.0/cluster/groups?recursion=1", None).await;
    let members = via(fake, "m1", "GET", "/1.0/cluster/members?recursion=1", None).await;
    let members: Vec<Value> = members
        .metadata()
        .as_array()
        .unwrap_or_else(|| panic!("the members list: {}", members.json()))
        .iter()
        .map(|m| json!([m["server_name"], m["config"], m["groups"], m["status"]]))
        .collect();
    (groups.metadata().clone(), Value::Array(members))
}

/// Gives the cluster a group with m2 in it, `scheduler.instance: manual` on m3 and m2
/// evacuated.
async fn change_records(fake: &FakeIncus) {
    let group = json!({"name": "g1", "description": "one", "members": ["m2"]});
    let reply = via(fake, "m1", "POST", "/1.0/cluster/groups", Some(group)).await;
    assert_eq!(reply.status(), 201, "{}", reply.json());
    let current = via(fake, "m1", "GET", "/1.0/cluster/members/m3", None).await;
    let mut member = current.metadata().clone();
    member["config"] = json!({"scheduler.instance": "manual"});
    let reply = via(fake, "m1", "PUT", "/1.0/cluster/members/m3", Some(member)).await;
    assert_eq!(reply.status(), 200, "{}", reply.json());
    let done = member_state(fake, "m2", json!({"action": "evacuate"})).await;
    assert_eq!(done.metadata()["status"], "Success", "{}", done.json());
}

#[tokio::test]
async fn cluster_records_are_part_of_the_state_dump_reset_snapshots_and_the_state_dir() {
    let dir = tempfile::tempdir().unwrap();
    let started = || {
        crate::common::builder()
            .cluster(["m1", "m2", "m3"])
            .state_dir(dir.path())
            .start()
    };
    let fake = started().await.expect("fake cluster");
    let fresh = records_seen(&fake).await;
    fake.save_snapshot("fresh").unwrap();
    change_records(&fake).await;
    let changed = records_seen(&fake).await;
    assert_ne!(changed, fresh);
    let dump = fake.dump_state();
    assert_eq!(dump["format_version"], 2);
    assert_eq!(dump["cluster"]["groups"][1]["name"], "g1");
    assert_eq!(dump["cluster"]["members"][1]["evacuated"], true);
    fake.save_snapshot("changed").unwrap();
    fake.restore_snapshot("fresh").unwrap();
    assert_eq!(records_seen(&fake).await, fresh, "a snapshot restore");
    fake.restore_snapshot("changed").unwrap();
    assert_eq!(records_seen(&fake).await, changed, "and back");
    drop(fake);
    let again = started().await.expect("restarted on the state dir");
    assert_eq!(records_seen(&again).await, changed, "kept across a restart");
    again.reset();
    assert_eq!(records_seen(&again).await, fresh, "a reset");
    drop(again);
    // A seed's records are fitted to the cluster's members.
    let mut seed = dump.clone();
    seed.as_object_mut().unwrap().remove("format_version");
    seed["cluster"]["members"][0]["name"] = json!("gone");
    let seeded = crate::common::builder()
        .cluster(["m1", "m2", "m3"])
        .state(seed)
        .start()
        .await
        .expect("seeded cluster");
    let (groups, members) = records_seen(&seeded).await;
    assert_eq!(groups, changed.0);
    assert_eq!(members[0], json!(["m1", {}, ["default"], "Online"]));
    assert_eq!(members[1], changed.1[1]);
}
