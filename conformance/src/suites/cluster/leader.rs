//! The database leader goes down, then a second voter (no quorum). The core sends no target and
//! knows no members: it reports what the members still up answer, as the spec gives it kinds,
//! and resends nothing.

use serde_json::json;

use super::session::{Cluster, Through};
use super::{
    instance_on, is_member_down_error, is_native_error, once_not_applied, place_one_per_member,
    trial, READ, WRITE,
};
use crate::runner::Check;
use crate::scenario::target::TargetFactory;
use std::sync::Arc;

pub(super) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    vec![
        trial(
            factory,
            "inspection::passthrough::leader_down_reads_of_live_members_complete_after_the_election",
            reads_after_election,
        ),
        trial(
            factory,
            "mutation::native_rejection::leader_down_a_mutation_of_its_instance_is_its_native_error_sent_once",
            mutation_on_dead_leader,
        ),
        trial(
            factory,
            "mutation::native_rejection::no_quorum_is_the_clusters_native_503_sent_once",
            no_quorum,
        ),
    ]
}

/// `m1` (the leader) is down: the instance on `m2` reads through `m3` and `m2` as before.
fn reads_after_election(cluster: &Cluster) -> Result<(), String> {
    let placed = place_one_per_member(cluster)?;
    let name = instance_on(&placed, "m2").to_owned();
    cluster.down("m1")?;
    for via in ["m3", "m2"] {
        let got = cluster.call(via, "incus_instance_get", READ, json!({"name": name}));
        got.succeeded()?;
        got.expect("/item/location", &json!("m2"))?;
    }
    Ok(())
}

/// `m1` (the leader) is down: starting its instance through `m2` is the member-down native
/// error, sent once and not applied.
fn mutation_on_dead_leader(cluster: &Cluster) -> Result<(), String> {
    let placed = place_one_per_member(cluster)?;
    let name = instance_on(&placed, "m1").to_owned();
    cluster.down("m1")?;
    let start = json!({"name": name, "action": "start"});
    let refused = cluster.call("m2", "incus_instance_state_update", WRITE, start);
    is_member_down_error(&refused)?;
    once_not_applied(&refused, "PUT", &format!("/1.0/instances/{name}/state"))
}

/// The result is a native error of HTTP 503 with the database's message, unchanged.
fn is_no_quorum_error(through: &Through) -> Result<(), String> {
    let no_leader = |message: &str| message.contains("no available cowsql leader server found");
    let expected = "expected a native error, HTTP 503, with the database's no-leader message";
    is_native_error(through, 503, None, no_leader, expected)
}

/// `m1` and `m3` down: a read and a start through `m2` of the instance on `m2` are the
/// cluster's native 503, each request sent once (the start not applied).
fn no_quorum(cluster: &Cluster) -> Result<(), String> {
    let placed = place_one_per_member(cluster)?;
    let name = instance_on(&placed, "m2").to_owned();
    cluster.down("m1")?;
    cluster.down("m3")?;
    let read = cluster.call("m2", "incus_instance_get", READ, json!({"name": name}));
    is_no_quorum_error(&read)?;
    let path = format!("/1.0/instances/{name}");
    if read.sent("GET", &path).len() != 1 {
        return Err(read.failure("the read reached the cluster other than once"));
    }
    let start = json!({"name": name, "action": "start"});
    let refused = cluster.call("m2", "incus_instance_state_update", WRITE, start);
    is_no_quorum_error(&refused)?;
    once_not_applied(&refused, "PUT", &format!("{path}/state"))
}
