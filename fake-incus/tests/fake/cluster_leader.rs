//! The database leader's death and the loss of quorum, as measured on a real 3-member Incus
//! 6.0.4 cluster (SIGKILL of the leader `m1`, then of a second voter): `GET /1.0` answers at
//! once; every request that reads the database stalls until the remaining voters elect a new
//! leader (about 6 s; `m3` took the role), then is served; what was routed to the dead leader
//! answers "Server isn't ready yet"; without quorum the database requests fail.

use crate::cluster::{cluster_with, create, via};
use fake_incus::{assert_native_error, ClusterTimings};
use serde_json::json;
use std::time::{Duration, Instant};

fn electing(election: Duration) -> ClusterTimings {
    ClusterTimings {
        leader_election: election,
        ..ClusterTimings::fast()
    }
}

fn roles(reply: &crate::common::Reply) -> Vec<(String, serde_json::Value)> {
    reply
        .metadata()
        .as_array()
        .expect("members")
        .iter()
        .map(|m| {
            (
                m["server_name"].as_str().unwrap_or_default().to_string(),
                m["roles"].clone(),
            )
        })
        .collect()
}

#[tokio::test]
async fn the_leaders_death_stalls_database_requests_until_a_new_leader_is_elected() {
    let election = Duration::from_millis(300);
    let fake = cluster_with(electing(election)).await;
    create(&fake, "m1", "on-m1", Some("m1")).await;
    create(&fake, "m1", "on-m2", Some("m2")).await;
    let died = Instant::now();
    fake.member_down("m1").expect("m1 down");
    let server = via(&fake, "m2", "GET", "/1.0", None).await;
    assert_eq!(server.status(), 200);
    assert!(died.elapsed() < election, "GET /1.0 reads no database");
    let read = via(&fake, "m3", "GET", "/1.0/instances/on-m2", None).await;
    assert_eq!(read.status(), 200, "{}", read.json());
    assert!(
        died.elapsed() >= election,
        "a database read waits for the election"
    );
    let routed = via(&fake, "m2", "GET", "/1.0/instances/on-m1", None).await;
    assert_native_error(&routed, 500, "Server isn't ready yet");
    let members = via(&fake, "m2", "GET", "/1.0/cluster/members?recursion=1", None).await;
    assert_eq!(
        roles(&members),
        [
            ("m1".to_string(), json!(["database"])),
            ("m2".to_string(), json!(["database"])),
            ("m3".to_string(), json!(["database-leader", "database"])),
        ]
    );
    let started = Instant::now();
    let read = via(&fake, "m2", "GET", "/1.0/instances", None).await;
    assert_eq!(read.status(), 200);
    assert!(
        started.elapsed() < election,
        "after the election reads do not wait"
    );
}

#[tokio::test]
async fn without_quorum_database_requests_fail_and_a_returning_voter_restores_it() {
    let fake = cluster_with(electing(Duration::from_millis(10))).await;
    fake.member_down("m1").expect("m1 down");
    fake.member_down("m3").expect("m3 down");
    assert_eq!(via(&fake, "m2", "GET", "/1.0", None).await.status(), 200);
    let read = via(&fake, "m2", "GET", "/1.0/instances", None).await;
    assert_native_error(
        &read,
        503,
        "Failed to begin transaction: failed to create cowsql connection: no available cowsql leader server found",
    );
    let members = via(&fake, "m2", "GET", "/1.0/cluster/members", None).await;
    assert_native_error(&members, 500, "context deadline exceeded");
    fake.member_up("m3").expect("m3 up");
    let read = via(&fake, "m2", "GET", "/1.0/instances", None).await;
    assert_eq!(read.status(), 200, "{}", read.json());
}
