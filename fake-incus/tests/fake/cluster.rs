//! The fake cluster (`FakeIncusBuilder::cluster`): members with their own sockets, the cluster
//! endpoints, placement and forwarding through any member, and member faults, each checked
//! against the answers of a real Incus 6.0.4 cluster (the reference captures).

use crate::common::{unix_at, Reply};
use fake_incus::{assert_native_error, ClusterTimings, FakeIncus, Span};
use serde_json::{json, Value};
use std::time::Duration;

pub(crate) async fn cluster() -> FakeIncus {
    crate::common::builder()
        .cluster(["m1", "m2", "m3"])
        .cluster_timings(ClusterTimings::fast())
        .start()
        .await
        .expect("fake cluster")
}

/// A request through member `member`'s Unix socket.
pub(crate) async fn via(
    fake: &FakeIncus,
    member: &str,
    method: &str,
    path: &str,
    body: Option<Value>,
) -> Reply {
    let socket = fake.member(member).expect("member").unix_socket;
    unix_at(&socket, method, path, body, &[]).await
}

#[tokio::test]
async fn each_member_has_its_own_socket_and_answers_as_itself() {
    let fake = cluster().await;
    let members = fake.members();
    assert_eq!(
        members.iter().map(|m| m.name.as_str()).collect::<Vec<_>>(),
        ["m1", "m2", "m3"]
    );
    assert_eq!(members[0].unix_socket, fake.unix_socket());
    for member in &members {
        assert!(member.https_url.is_none() && member.https_address.is_none());
        let reply = via(&fake, &member.name, "GET", "/1.0", None).await;
        assert_eq!(reply.status(), 200);
        let env = &reply.metadata()["environment"];
        assert_eq!(env["server_clustered"], true);
        assert_eq!(env["server_name"], member.name.as_str());
        let address = env["addresses"][0]
            .as_str()
            .expect("an address")
            .to_string();
        assert_eq!(
            reply.metadata()["config"]["core.https_address"],
            address.as_str()
        );
        assert_eq!(
            reply.metadata()["config"]["cluster.https_address"],
            address.as_str()
        );
    }
    assert!(fake.member("nope").is_none());
}

#[tokio::test]
async fn server_target_answers_with_that_members_view_and_404_for_unknown() {
    let fake = cluster().await;
    let reply = via(&fake, "m1", "GET", "/1.0?target=m2", None).await;
    assert_eq!(reply.status(), 200);
    assert_eq!(reply.metadata()["environment"]["server_name"], "m2");
    let reply = via(&fake, "m1", "GET", "/1.0?target=nope", None).await;
    assert_native_error(&reply, 404, "Cluster member not found");
}

#[tokio::test]
async fn cluster_object_names_the_member_asked() {
    let fake = cluster().await;
    let reply = via(&fake, "m2", "GET", "/1.0/cluster", None).await;
    assert_eq!(reply.status(), 200);
    assert_eq!(reply.metadata()["server_name"], "m2");
    assert_eq!(reply.metadata()["enabled"], true);
    assert_eq!(reply.metadata()["member_config"][0]["key"], "source");
    assert!(reply.header("etag").is_some());
}

#[tokio::test]
async fn members_list_in_order_with_the_real_keys() {
    let fake = cluster().await;
    let reply = via(&fake, "m3", "GET", "/1.0/cluster/members", None).await;
    assert_eq!(
        reply.metadata(),
        &json!([
            "/1.0/cluster/members/m1",
            "/1.0/cluster/members/m2",
            "/1.0/cluster/members/m3"
        ])
    );
    let reply = via(&fake, "m1", "GET", "/1.0/cluster/members?recursion=1", None).await;
    let first = &reply.metadata()[0];
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        keys,
        [
            "roles",
            "failure_domain",
            "description",
            "config",
            "groups",
            "server_name",
            "url",
            "database",
            "status",
            "message",
            "architecture"
        ]
    );
    assert_eq!(first["roles"], json!(["database-leader", "database"]));
    assert_eq!(
        (first["status"].as_str(), first["message"].as_str()),
        (Some("Online"), Some("Fully operational"))
    );
    let reply = via(&fake, "m1", "GET", "/1.0/cluster/members/nope", None).await;
    assert_native_error(&reply, 404, "Cluster member not found");
    let reply = via(&fake, "m1", "GET", "/1.0/cluster/members/m2/state", None).await;
    assert_eq!(reply.status(), 200);
    assert!(reply.metadata()["sysinfo"]["total_ram"].is_u64());
    assert!(reply.metadata()["storage_pools"]["default"]["space"]["total"].is_u64());
    let reply = via(&fake, "m1", "GET", "/1.0/cluster/groups?recursion=1", None).await;
    assert_eq!(
        reply.metadata(),
        &json!([{"description": "Default cluster group", "members": ["m1", "m2", "m3"], "name": "default"}])
    );
}

#[tokio::test]
async fn a_standalone_fake_answers_the_cluster_endpoints_as_a_standalone_daemon() {
    let fake = crate::common::builder().start().await.unwrap();
    assert!(fake.members().is_empty());
    let reply = unix_at(fake.unix_socket(), "GET", "/1.0/cluster", None, &[]).await;
    assert_eq!(reply.status(), 200);
    assert_eq!(
        (
            reply.metadata()["server_name"].as_str(),
            reply.metadata()["enabled"].as_bool()
        ),
        (Some(""), Some(false))
    );
    let reply = unix_at(fake.unix_socket(), "GET", "/1.0/cluster/members", None, &[]).await;
    assert_native_error(&reply, 500, "Server is not clustered");
    let reply = unix_at(fake.unix_socket(), "GET", "/1.0/cluster/groups", None, &[]).await;
    assert_native_error(&reply, 400, "This server is not clustered");
    let reply = unix_at(fake.unix_socket(), "GET", "/1.0", None, &[]).await;
    assert_eq!(reply.metadata()["environment"]["server_clustered"], false);
    assert!(fake.member_down("m1").is_err());
}

#[tokio::test]
async fn a_member_down_refuses_connections_on_its_own_socket_until_it_is_up() {
    let fake = cluster().await;
    let socket = fake.member("m2").unwrap().unix_socket;
    fake.member_down("m2").unwrap();
    let refused = tokio::net::UnixStream::connect(&socket)
        .await
        .expect_err("refused");
    assert_eq!(refused.kind(), std::io::ErrorKind::ConnectionRefused);
    fake.member_up("m2").unwrap();
    let reply = via(&fake, "m2", "GET", "/1.0", None).await;
    assert_eq!(reply.metadata()["environment"]["server_name"], "m2");
    let _ = Duration::ZERO;
}

/// Creates an instance through `member` (targeted when `target` is set) and waits for it.
pub(crate) async fn create(
    fake: &FakeIncus,
    member: &str,
    name: &str,
    target: Option<&str>,
) -> Reply {
    let path = match target {
        Some(t) => format!("/1.0/instances?target={t}"),
        None => "/1.0/instances".to_string(),
    };
    let body =
        json!({"name": name, "source": {"type": "image", "alias": "busybox"}, "start": true});
    let accepted = via(fake, member, "POST", &path, Some(body)).await;
    assert_eq!(accepted.status(), 202, "create {name}: {}", accepted.json());
    let op = accepted.json()["operation"]
        .as_str()
        .expect("operation")
        .to_string();
    let done = via(
        fake,
        member,
        "GET",
        &format!("{}/wait?timeout=10", op.split('?').next().unwrap()),
        None,
    )
    .await;
    assert_eq!(
        done.json()["type"],
        "sync",
        "create {name}: {}",
        done.json()
    );
    accepted
}

pub(crate) fn location_of(reply: &Reply) -> &str {
    reply.metadata()["location"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn target_places_the_instance_on_that_member_and_its_operation_runs_there() {
    let fake = cluster().await;
    let accepted = create(&fake, "m1", "cl-m2", Some("m2")).await;
    assert_eq!(location_of(&accepted), "m2");
    assert!(
        accepted.json()["operation"]
            .as_str()
            .unwrap()
            .ends_with("?project=default"),
        "a forwarded async answer's operation URL carries the project: {}",
        accepted.json()["operation"]
    );
    for member in ["m1", "m2", "m3"] {
        let reply = via(&fake, member, "GET", "/1.0/instances/cl-m2", None).await;
        assert_eq!(
            (reply.status(), location_of(&reply)),
            (200, "m2"),
            "through {member}"
        );
    }
    let reply = via(&fake, "m1", "GET", "/1.0/instances/cl-m2?target=m3", None).await;
    assert_eq!(
        location_of(&reply),
        "m2",
        "target is ignored on instance GET"
    );
}

#[tokio::test]
async fn target_group_and_untargeted_creates_go_to_the_member_with_fewest_instances() {
    let fake = cluster().await;
    create(&fake, "m1", "cl-a", Some("m1")).await;
    create(&fake, "m1", "cl-b", Some("m2")).await;
    let accepted = create(&fake, "m1", "cl-c", Some("@default")).await;
    assert_eq!(location_of(&accepted), "m3");
    let accepted = create(&fake, "m2", "cl-d", None).await;
    assert_eq!(location_of(&accepted), "m1", "ties go to the first member");
}

#[tokio::test]
async fn unknown_targets_and_untargeted_unknown_aliases_get_the_clustered_errors() {
    let fake = cluster().await;
    let body = json!({"name": "cl-x", "source": {"type": "none"}});
    let reply = via(
        &fake,
        "m1",
        "POST",
        "/1.0/instances?target=nope",
        Some(body),
    )
    .await;
    assert_native_error(&reply, 404, "Cluster member \"nope\" not found");
    let body = json!({"name": "cl-noimg", "source": {"type": "image", "alias": "no-such-alias"}});
    let reply = via(&fake, "m1", "POST", "/1.0/instances", Some(body.clone())).await;
    assert_native_error(&reply, 500, "No fingerprint prefix specified for the image");
    let accepted = via(&fake, "m1", "POST", "/1.0/instances?target=m2", Some(body)).await;
    assert_eq!(
        accepted.status(),
        202,
        "targeted, the alias is looked up by the operation"
    );
    let op = accepted.json()["operation"]
        .as_str()
        .unwrap()
        .split('?')
        .next()
        .unwrap()
        .to_string();
    let done = via(&fake, "m1", "GET", &format!("{op}/wait?timeout=10"), None).await;
    assert_eq!(
        done.json()["error"],
        "Image not provided for instance creation"
    );
    let reply = via(&fake, "m1", "GET", "/1.0/instances?target=nope", None).await;
    assert_eq!(reply.status(), 200, "target is ignored on instance lists");
}

#[tokio::test]
async fn instance_names_are_unique_cluster_wide() {
    let fake = cluster().await;
    create(&fake, "m1", "cl-same", Some("m1")).await;
    let body = json!({"name": "cl-same", "source": {"type": "none"}});
    let accepted = via(&fake, "m2", "POST", "/1.0/instances?target=m2", Some(body)).await;
    let op = accepted.json()["operation"]
        .as_str()
        .unwrap()
        .split('?')
        .next()
        .unwrap()
        .to_string();
    let done = via(&fake, "m2", "GET", &format!("{op}/wait?timeout=10"), None).await;
    assert!(
        done.json()["error"]
            .as_str()
            .unwrap()
            .contains("UNIQUE constraint failed"),
        "{}",
        done.json()
    );
}

#[tokio::test]
async fn lists_filter_on_location_and_operations_come_from_every_member() {
    let fake = cluster().await;
    create(&fake, "m1", "cl-m1", Some("m1")).await;
    create(&fake, "m1", "cl-m2", Some("m2")).await;
    let reply = via(
        &fake,
        "m3",
        "GET",
        "/1.0/instances?recursion=1&filter=location+eq+m2",
        None,
    )
    .await;
    let names: Vec<&str> = reply
        .metadata()
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["cl-m2"]);
    let reply = via(&fake, "m3", "GET", "/1.0/operations?recursion=1", None).await;
    let mut locations: Vec<&str> = reply.metadata()["success"]
        .as_array()
        .unwrap()
        .iter()
        .map(|op| op["location"].as_str().unwrap())
        .collect();
    locations.sort_unstable();
    assert_eq!(locations, ["m1", "m2"]);
}

#[tokio::test]
async fn pools_are_on_every_member_and_volumes_where_their_instance_is() {
    let fake = cluster().await;
    create(&fake, "m1", "cl-m2", Some("m2")).await;
    let reply = via(&fake, "m1", "GET", "/1.0/storage-pools/default", None).await;
    assert_eq!(reply.metadata()["locations"], json!(["m1", "m2", "m3"]));
    assert!(
        reply.metadata()["config"].get("source").is_none(),
        "the cluster-wide pool hides source"
    );
    let reply = via(
        &fake,
        "m1",
        "GET",
        "/1.0/storage-pools/default?target=m2",
        None,
    )
    .await;
    assert!(
        reply.metadata()["config"].get("source").is_some(),
        "?target= shows the member's source"
    );
    let reply = via(
        &fake,
        "m1",
        "GET",
        "/1.0/storage-pools/default/volumes?recursion=1",
        None,
    )
    .await;
    let volume = reply
        .metadata()
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == "cl-m2")
        .expect("its volume")
        .clone();
    assert_eq!(volume["location"], "m2");
    let reply = via(
        &fake,
        "m1",
        "GET",
        "/1.0/storage-pools/default?target=nope",
        None,
    )
    .await;
    assert_native_error(&reply, 404, "Cluster member not found");
}

#[tokio::test]
async fn the_journal_records_the_member_each_request_came_through() {
    let fake = cluster().await;
    via(&fake, "m2", "GET", "/1.0", None).await;
    via(&fake, "m3", "GET", "/1.0", None).await;
    let members: Vec<Option<String>> = fake.journal().into_iter().map(|e| e.member).collect();
    assert_eq!(members, [Some("m2".to_string()), Some("m3".to_string())]);
}

/// A cluster whose member-down phases are set for one test: `just_died` long means the
/// "just died" phase lasts the whole test; zero means it is over at once.
pub(crate) async fn cluster_with(timings: ClusterTimings) -> FakeIncus {
    crate::common::builder()
        .cluster(["m1", "m2", "m3"])
        .cluster_timings(timings)
        .start()
        .await
        .expect("fake cluster")
}

fn long() -> Duration {
    Duration::from_secs(600)
}

/// The member's address as the cluster names it (`url` without the scheme).
async fn address_of(fake: &FakeIncus, member: &str) -> String {
    let reply = via(
        fake,
        "m1",
        "GET",
        &format!("/1.0/cluster/members/{member}"),
        None,
    )
    .await;
    reply.metadata()["url"]
        .as_str()
        .unwrap()
        .trim_start_matches("https://")
        .to_string()
}

#[tokio::test]
async fn just_after_a_member_died_its_instance_get_is_refused_with_its_address_at_once() {
    let fake = cluster_with(ClusterTimings {
        refused_window: long(),
        event_link_stall: Duration::from_millis(200),
        heartbeat: Span::fixed(long()),
        offline: Span::fixed(long()),
        back_online: Span::fixed(Duration::ZERO),
        ..ClusterTimings::fast()
    })
    .await;
    create(&fake, "m1", "cl-m3", Some("m3")).await;
    let addr = address_of(&fake, "m3").await;
    fake.member_down("m3").unwrap();
    let started = std::time::Instant::now();
    let reply = via(&fake, "m1", "GET", "/1.0/instances/cl-m3", None).await;
    assert_eq!(reply.status(), 500);
    assert_eq!(
        reply.json()["error"],
        format!("Get \"https://{addr}/1.0/instances/cl-m3\": Unable to connect to: {addr} ([dial tcp {addr}: connect: connection refused])")
    );
    assert!(started.elapsed() < Duration::from_millis(200), "at once");
    let body = json!({"name": "cl-new3", "source": {"type": "image", "alias": "busybox"}});
    let reply = via(&fake, "m1", "POST", "/1.0/instances?target=m3", Some(body)).await;
    assert_eq!(
        reply.json()["error"],
        format!("Post \"https://{addr}/1.0/instances?project=default&target=m3\": Unable to connect to: {addr} ([dial tcp {addr}: connect: connection refused])")
    );
    let members = via(&fake, "m1", "GET", "/1.0/cluster/members/m3", None).await;
    assert_eq!(
        members.metadata()["status"],
        "Online",
        "still Online before the threshold"
    );
}

#[tokio::test]
async fn before_the_heartbeat_round_forwarded_requests_stall_then_miss_the_event_connection() {
    let stall = Duration::from_millis(300);
    let fake = cluster_with(ClusterTimings {
        refused_window: Duration::ZERO,
        event_link_stall: stall,
        heartbeat: Span::fixed(long()),
        offline: Span::fixed(long()),
        back_online: Span::fixed(Duration::ZERO),
        ..ClusterTimings::fast()
    })
    .await;
    create(&fake, "m1", "cl-m3", Some("m3")).await;
    fake.member_down("m3").unwrap();
    for (method, path, body) in [
        ("GET", "/1.0/instances/cl-m3", None),
        (
            "POST",
            "/1.0/instances/cl-m3/exec",
            Some(json!({"command": ["true"], "wait-for-websocket": false})),
        ),
        ("GET", "/1.0?target=m3", None),
    ] {
        let started = std::time::Instant::now();
        let reply = via(&fake, "m1", method, path, body).await;
        assert_eq!(
            (reply.status(), reply.json()["error"].as_str()),
            (
                500,
                Some("Missing event connection with target cluster member")
            ),
            "{method} {path}"
        );
        assert!(started.elapsed() >= stall, "{method} {path} stalls first");
    }
}

#[tokio::test]
async fn a_pinned_seed_pins_the_heartbeat_round_that_turns_the_stall_into_not_ready() {
    let timings = ClusterTimings {
        refused_window: Duration::ZERO,
        event_link_stall: Duration::from_millis(20),
        heartbeat: Span::new(Duration::from_millis(150), Duration::from_millis(400)),
        offline: Span::fixed(long()),
        ..ClusterTimings::fast()
    }
    .with_seed(7);
    // m3 is the third member; this is its first death.
    let heartbeat = timings.timeline(2, 0).heartbeat;
    let fake = cluster_with(timings).await;
    create(&fake, "m1", "cl-m3", Some("m3")).await;
    fake.member_down("m3").unwrap();
    let died = std::time::Instant::now();
    let mut stalled = 0;
    loop {
        let sent = died.elapsed();
        let reply = via(&fake, "m1", "GET", "/1.0/instances/cl-m3", None).await;
        match reply.json()["error"].as_str() {
            Some("Missing event connection with target cluster member") => {
                assert!(
                    sent < heartbeat,
                    "stalled although sent at {sent:?}, after {heartbeat:?}"
                );
                stalled += 1;
            }
            Some("Server isn't ready yet") => {
                assert!(
                    died.elapsed() >= heartbeat,
                    "not ready before {heartbeat:?}"
                );
                break;
            }
            other => panic!("unexpected answer {other:?}"),
        }
        assert!(died.elapsed() < Duration::from_secs(10), "bounded");
    }
    assert!(stalled > 0, "stalled before the heartbeat round");
}

#[tokio::test]
async fn the_offline_message_counts_from_the_last_heartbeat_before_the_death() {
    let fake = cluster_with(ClusterTimings {
        heartbeat: Span::fixed(Duration::ZERO),
        offline: Span::fixed(Duration::from_millis(30)),
        offline_threshold: Duration::from_secs(20),
        ..ClusterTimings::fast()
    })
    .await;
    fake.member_down("m2").unwrap();
    let died = std::time::Instant::now();
    let mut member = Value::Null;
    while died.elapsed() < Duration::from_secs(5) {
        member = via(&fake, "m1", "GET", "/1.0/cluster/members/m2", None)
            .await
            .metadata()
            .clone();
        if member["status"] == "Offline" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(
        died.elapsed() >= Duration::from_millis(30),
        "Offline at the drawn moment"
    );
    let message = member["message"].as_str().unwrap();
    // 20 s threshold, Offline 30 ms after the death: the last heartbeat was 19.97 s before it.
    let seconds: f64 = message
        .strip_prefix("No heartbeat for ")
        .and_then(|m| m.split("s (").next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{message}"));
    assert!((20.0..25.0).contains(&seconds), "{message}");
}

#[tokio::test]
async fn once_not_ready_everything_routed_to_the_dead_member_answers_server_isnt_ready_yet() {
    let fake = cluster_with(ClusterTimings {
        event_link_stall: long(),
        heartbeat: Span::fixed(Duration::ZERO),
        offline: Span::fixed(long()),
        back_online: Span::fixed(long()),
        ..ClusterTimings::fast()
    })
    .await;
    create(&fake, "m1", "cl-m1", Some("m1")).await;
    create(&fake, "m1", "cl-m3", Some("m3")).await;
    let op = sleeping_exec_on_m3(&fake).await;
    fake.member_down("m3").unwrap();
    for (method, path) in [
        ("GET", "/1.0/instances/cl-m3".to_string()),
        ("GET", "/1.0/instances/cl-m3/state".to_string()),
        ("PUT", "/1.0/instances/cl-m3/state".to_string()),
        ("DELETE", "/1.0/instances/cl-m3".to_string()),
        ("POST", "/1.0/instances/cl-m3/snapshots".to_string()),
        ("POST", "/1.0/instances/cl-m3/exec".to_string()),
        ("GET", format!("/1.0/operations/{op}")),
        ("GET", format!("/1.0/operations/{op}/wait?timeout=2")),
        ("GET", "/1.0?target=m3".to_string()),
        ("GET", "/1.0/resources?target=m3".to_string()),
        ("GET", "/1.0/storage-pools/default?target=m3".to_string()),
        ("GET", "/1.0/cluster/members/m3/state".to_string()),
    ] {
        let body =
            (method != "GET").then(|| json!({"action": "stop", "name": "s1", "command": ["true"]}));
        let reply = via(&fake, "m2", method, &path, body).await;
        assert_eq!(
            (reply.status(), reply.json()["error"].as_str()),
            (500, Some("Server isn't ready yet")),
            "{method} {path}"
        );
    }
    let reply = via(&fake, "m1", "GET", "/1.0/instances/cl-m1", None).await;
    assert_eq!(
        reply.status(),
        200,
        "what lives on live members answers as before"
    );
    let body = json!({"name": "cl-new", "source": {"type": "image", "alias": "busybox"}});
    let accepted = via(&fake, "m1", "POST", "/1.0/instances", Some(body)).await;
    assert_eq!(accepted.status(), 202);
    assert_ne!(location_of(&accepted), "m3", "placed on a live member");
    let reply = via(&fake, "m1", "GET", "/1.0/instances?recursion=2", None).await;
    let down = reply
        .metadata()
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["name"] == "cl-m3")
        .unwrap()
        .clone();
    assert_eq!(
        (down["status"].as_str(), down["status_code"].as_u64()),
        (Some("Error"), Some(112))
    );
    assert_eq!(down["state"], Value::Null);
    assert_eq!(down["config"], Value::Null);
    assert_eq!(down["location"], "m3");
    let reply = via(&fake, "m1", "GET", "/1.0/operations?recursion=1", None).await;
    let listed: Vec<&str> = reply
        .metadata()
        .as_object()
        .unwrap()
        .values()
        .flat_map(|g| g.as_array().unwrap())
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert!(
        !listed.contains(&op.as_str()),
        "its operations are missing from the list"
    );
}

#[tokio::test]
async fn a_dead_member_shows_offline_after_the_heartbeat_threshold() {
    let fake = cluster_with(ClusterTimings {
        event_link_stall: long(),
        heartbeat: Span::fixed(Duration::ZERO),
        offline: Span::fixed(Duration::from_millis(50)),
        back_online: Span::fixed(Duration::from_millis(50)),
        ..ClusterTimings::fast()
    })
    .await;
    fake.member_down("m2").unwrap();
    let mut member = Value::Null;
    for _ in 0..100 {
        let reply = via(&fake, "m1", "GET", "/1.0/cluster/members?recursion=1", None).await;
        member = reply.metadata()[1].clone();
        if member["status"] == "Offline" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(member["status"], "Offline");
    let message = member["message"].as_str().unwrap();
    assert!(
        message.starts_with("No heartbeat for ") && message.ends_with(" +0000 UTC)"),
        "{message}"
    );
    fake.member_up("m2").unwrap();
    let mut status = Value::Null;
    for _ in 0..100 {
        let reply = via(&fake, "m1", "GET", "/1.0/cluster/members/m2", None).await;
        status = reply.metadata()["status"].clone();
        if status == "Online" {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(status, "Online", "Online again once back");
}

#[tokio::test]
async fn after_a_member_returns_its_old_operations_are_gone_and_its_instances_remain() {
    let fake = cluster_with(ClusterTimings {
        event_link_stall: long(),
        heartbeat: Span::fixed(Duration::ZERO),
        offline: Span::fixed(long()),
        back_online: Span::fixed(Duration::ZERO),
        ..ClusterTimings::fast()
    })
    .await;
    create(&fake, "m1", "cl-m3", Some("m3")).await;
    let op = sleeping_exec_on_m3(&fake).await;
    fake.member_down("m3").unwrap();
    fake.member_up("m3").unwrap();
    let reply = via(&fake, "m1", "GET", &format!("/1.0/operations/{op}"), None).await;
    assert_native_error(&reply, 404, "Operation not found");
    let reply = via(&fake, "m1", "GET", "/1.0/instances/cl-m3", None).await;
    assert_eq!(
        (reply.status(), reply.metadata()["status"].as_str()),
        (200, Some("Running"))
    );
}

#[tokio::test]
async fn a_members_death_cuts_exec_streams_with_eof_and_waits_with_unexpected_eof() {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite::Message;
    let fake = cluster_with(ClusterTimings {
        event_link_stall: long(),
        heartbeat: Span::fixed(long()),
        offline: Span::fixed(long()),
        back_online: Span::fixed(Duration::ZERO),
        ..ClusterTimings::fast()
    })
    .await;
    create(&fake, "m1", "cl-m3", Some("m3")).await;
    let body =
        json!({"command": ["sleep", "30"], "wait-for-websocket": true, "interactive": false});
    let exec = via(&fake, "m1", "POST", "/1.0/instances/cl-m3/exec", Some(body)).await;
    assert_eq!(location_of(&exec), "m3");
    let op = exec.metadata()["id"].as_str().unwrap().to_string();
    let fds = exec.metadata()["metadata"]["fds"].clone();
    let mut sockets = Vec::new();
    for fd in ["0", "1", "2", "control"] {
        let stream = tokio::net::UnixStream::connect(fake.unix_socket())
            .await
            .unwrap();
        let url = format!(
            "ws://unix.socket/1.0/operations/{op}/websocket?secret={}",
            fds[fd].as_str().unwrap()
        );
        let (ws, _) = tokio_tungstenite::client_async(url, stream)
            .await
            .expect("upgrade through m1");
        sockets.push(ws);
    }
    let socket = fake.unix_socket().to_path_buf();
    let waiting = tokio::spawn(async move {
        unix_at(
            &socket,
            "GET",
            &format!("/1.0/operations/{op}/wait?timeout=30"),
            None,
            &[],
        )
        .await
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    fake.member_down("m3").unwrap();
    for (fd, ws) in ["0", "1", "2", "control"].iter().zip(sockets.iter_mut()) {
        let ended = tokio::time::timeout(Duration::from_secs(5), async {
            loop {
                match ws.next().await {
                    Some(Ok(Message::Close(frame))) => {
                        return Err(format!("a close frame {frame:?}"))
                    }
                    Some(Ok(_)) => continue,
                    Some(Err(_)) | None => return Ok(()),
                }
            }
        })
        .await
        .expect("the stream ends");
        assert_eq!(ended, Ok(()), "fd {fd}: EOF without a close frame");
    }
    let waited = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the wait ends")
        .unwrap();
    assert_eq!(
        (waited.status(), waited.json()["error"].as_str()),
        (200, Some("unexpected EOF"))
    );
}

#[tokio::test]
async fn with_https_every_member_has_its_own_address_and_serves_the_one_cluster_certificate() {
    use crate::common::{ClientCert, Https};
    let fake = crate::common::builder()
        .https(true)
        .cluster(["m1", "m2", "m3"])
        .cluster_timings(ClusterTimings::fast())
        .start()
        .await
        .unwrap();
    let members = fake.members();
    assert_eq!(members[0].https_address, fake.https_address());
    assert_eq!(members[0].https_url, fake.https_url());
    let client = Https::new(&fake, ClientCert::Trusted, false);
    let mut seen = std::collections::BTreeSet::new();
    for member in &members {
        let addr = member.https_address.expect("an HTTPS address");
        assert!(seen.insert(addr), "addresses differ");
        let reply = client.clone().at(addr).request("GET", "/1.0", None).await;
        assert_eq!(reply.status(), 200);
        let env = &reply.metadata()["environment"];
        assert_eq!(env["server_name"], member.name.as_str());
        assert_eq!(env["addresses"], json!([addr.to_string()]));
        assert_eq!(env["certificate"], fake.server_cert_pem().as_str());
        let listed = via(
            &fake,
            "m1",
            "GET",
            &format!("/1.0/cluster/members/{}", member.name),
            None,
        )
        .await;
        assert_eq!(listed.metadata()["url"], format!("https://{addr}"));
    }
    fake.member_down("m2").unwrap();
    let refused = tokio::net::TcpStream::connect(members[1].https_address.unwrap()).await;
    assert!(
        refused.is_err(),
        "a dead member's HTTPS address refuses connections"
    );
}

#[tokio::test]
async fn serve_cluster_lists_the_members_in_its_ready_line_and_obeys_control_down_and_up() {
    use tokio::io::AsyncBufReadExt;
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("unix.socket");
    let control = dir.path().join("control.socket");
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_fake-incus"))
        .arg("serve")
        .arg("--unix")
        .arg(&socket)
        .args([
            "--cluster",
            "m1,m2,m3",
            "--https",
            "--cluster-timings",
            "fast",
        ])
        .arg("--control")
        .arg(&control)
        .stdout(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(20), lines.next_line())
        .await
        .expect("ready in time")
        .unwrap()
        .unwrap();
    let ready: Value = serde_json::from_str(&line).unwrap();
    let members = ready["members"].as_object().expect("members");
    assert_eq!(members.keys().collect::<Vec<_>>(), ["m1", "m2", "m3"]);
    assert_eq!(members["m1"]["unix_socket"], socket.to_str().unwrap());
    assert_eq!(members["m1"]["https_address"], ready["https_address"]);
    for (name, member) in members {
        let path = std::path::PathBuf::from(member["unix_socket"].as_str().unwrap());
        let reply = unix_at(&path, "GET", "/1.0", None, &[]).await;
        assert_eq!(
            reply.metadata()["environment"]["server_name"],
            name.as_str()
        );
        assert!(member["https_address"]
            .as_str()
            .is_some_and(|a| !a.ends_with(":0")));
    }
    let m2 = std::path::PathBuf::from(members["m2"]["unix_socket"].as_str().unwrap());
    let down = unix_at(&control, "POST", "/cluster/members/m2/down", None, &[]).await;
    assert_eq!(down.status(), 200, "{}", down.json());
    assert!(tokio::net::UnixStream::connect(&m2).await.is_err());
    let unknown = unix_at(&control, "POST", "/cluster/members/nope/down", None, &[]).await;
    assert_eq!(unknown.status(), 404);
    let up = unix_at(&control, "POST", "/cluster/members/m2/up", None, &[]).await;
    assert_eq!(up.status(), 200, "{}", up.json());
    let reply = unix_at(&m2, "GET", "/1.0", None, &[]).await;
    assert_eq!(reply.status(), 200);
    let listed = unix_at(&control, "GET", "/cluster/members", None, &[]).await;
    assert_eq!(listed.json()[1]["name"], "m2");
    child.kill().await.unwrap();
}

#[tokio::test]
async fn seeded_instances_are_spread_over_the_members_unless_their_location_is_given() {
    let fake = crate::common::builder()
        .cluster(["m1", "m2", "m3"])
        .state(json!({"instances": [
            {"name": "a", "status": "Running"},
            {"name": "b", "status": "Running", "location": "m3"},
            {"name": "c", "status": "Running"},
        ]}))
        .start()
        .await
        .unwrap();
    let reply = via(&fake, "m2", "GET", "/1.0/instances?recursion=1", None).await;
    let located: Vec<(&str, &str)> = reply
        .metadata()
        .as_array()
        .unwrap()
        .iter()
        .map(|i| (i["name"].as_str().unwrap(), i["location"].as_str().unwrap()))
        .collect();
    assert_eq!(located, [("a", "m1"), ("b", "m3"), ("c", "m2")]);
    assert_eq!(
        fake.dump_state()["instances"][1]["location"],
        "m3",
        "the dump keeps locations"
    );
}

/// Starts `sleep 30` in `cl-m3` through m1 (no websockets); the exec operation's id.
async fn sleeping_exec_on_m3(fake: &FakeIncus) -> String {
    let exec = via(
        fake,
        "m1",
        "POST",
        "/1.0/instances/cl-m3/exec",
        Some(json!({"command": ["sleep", "30"], "wait-for-websocket": false})),
    )
    .await;
    exec.metadata()["id"].as_str().unwrap().to_string()
}
