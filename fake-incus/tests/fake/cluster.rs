//! The fake cluster (`FakeIncusBuilder::cluster`): members with their own sockets, the cluster
//! endpoints, placement and forwarding through any member, and member faults, each checked
//! against the answers of a real Incus 6.0.4 cluster (the reference captures).

use crate::common::{unix_at, Reply};
use fake_incus::{ClusterTimings, FakeIncus};
use serde_json::{json, Value};
use std::time::Duration;

async fn cluster() -> FakeIncus {
    FakeIncus::builder()
        .cluster(["m1", "m2", "m3"])
        .cluster_timings(ClusterTimings::fast())
        .start()
        .await
        .expect("fake cluster")
}

/// A request through member `member`'s Unix socket.
async fn via(
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
        assert_eq!(reply.status, 200);
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
    assert_eq!(reply.status, 200);
    assert_eq!(reply.metadata()["environment"]["server_name"], "m2");
    let reply = via(&fake, "m1", "GET", "/1.0?target=nope", None).await;
    assert_eq!(
        (reply.status, reply.body["error"].as_str()),
        (404, Some("Cluster member not found"))
    );
}

#[tokio::test]
async fn cluster_object_names_the_member_asked() {
    let fake = cluster().await;
    let reply = via(&fake, "m2", "GET", "/1.0/cluster", None).await;
    assert_eq!(reply.status, 200);
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
    assert_eq!(
        (reply.status, reply.body["error"].as_str()),
        (404, Some("Cluster member not found"))
    );
    let reply = via(&fake, "m1", "GET", "/1.0/cluster/members/m2/state", None).await;
    assert_eq!(reply.status, 200);
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
    let fake = FakeIncus::builder().start().await.unwrap();
    assert!(fake.members().is_empty());
    let reply = unix_at(fake.unix_socket(), "GET", "/1.0/cluster", None, &[]).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        (
            reply.metadata()["server_name"].as_str(),
            reply.metadata()["enabled"].as_bool()
        ),
        (Some(""), Some(false))
    );
    let reply = unix_at(fake.unix_socket(), "GET", "/1.0/cluster/members", None, &[]).await;
    assert_eq!(
        (reply.status, reply.body["error"].as_str()),
        (500, Some("Server is not clustered"))
    );
    let reply = unix_at(fake.unix_socket(), "GET", "/1.0/cluster/groups", None, &[]).await;
    assert_eq!(
        (reply.status, reply.body["error"].as_str()),
        (400, Some("This server is not clustered"))
    );
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
