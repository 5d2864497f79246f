//! Instances that change member beside the core: an operator moves one (`incus move --target`)
//! or evacuates a member (`incus cluster evacuate`), and the core, which sends no target and
//! knows no members, keeps answering what the cluster answers: the new `location` passed
//! through, the evacuated member's refusal as a `native` error sent once and not applied, and
//! creations placed elsewhere.

use fake_incus::Request;
use serde_json::{json, Value};

use super::session::{Cluster, Through, MEMBERS};
use super::{
    create_input, instance_on, is_native_error, once_not_applied, place_one_per_member, trial,
    READ, WRITE,
};
use crate::runner::Check;
use crate::scenario::target::TargetFactory;
use std::sync::Arc;

pub(super) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    vec![
        trial(
            factory,
            "inspection::passthrough::moved_instance_reports_its_new_member_through_every_member",
            moved_instance,
        ),
        trial(
            factory,
            "mutation::native_rejection::start_on_an_evacuated_member_is_its_native_refusal_sent_once",
            start_while_evacuated,
        ),
        trial(
            factory,
            "mutation::statuses::create_while_a_member_is_evacuated_completes_on_another_member",
            create_while_evacuated,
        ),
        trial(
            factory,
            "mutation::statuses::mutations_after_a_restore_complete_on_the_restored_member",
            after_restore,
        ),
    ]
}

/// The operator moves the (stopped) instance of `m2` to `m3`, through `m1`.
fn move_to_m3(cluster: &Cluster, name: &str) -> Result<(), String> {
    let body = json!({"name": name, "migration": true, "live": true});
    let request = Request::post(&format!("/1.0/instances/{name}?target=m3")).json(&body);
    cluster.operator("m1", request).map(|_| ())
}

/// The operator evacuates `member` (its instances stay, stopped: mode `stop`), or restores it.
fn member_action(cluster: &Cluster, member: &str, body: &Value) -> Result<(), String> {
    let request = Request::post(&format!("/1.0/cluster/members/{member}/state")).json(body);
    cluster.operator("m1", request).map(|_| ())
}

/// After a move, `incus_instance_get` through every member reports the new member, and a
/// mutation on the instance runs there (its operation's `location`).
fn moved_instance(cluster: &Cluster) -> Result<(), String> {
    let placed = place_one_per_member(cluster)?;
    let name = instance_on(&placed, "m2").to_owned();
    move_to_m3(cluster, &name)?;
    for via in MEMBERS {
        let got = cluster.call(via, "incus_instance_get", READ, json!({"name": name}));
        got.succeeded()?;
        got.expect("/item/location", &json!("m3"))?;
        got.all_through(via)?;
    }
    let snapshot = json!({"instance": name, "snapshot": "after-move"});
    let made = cluster.call("m2", "incus_instance_snapshot_create", WRITE, snapshot);
    made.succeeded()?;
    made.expect("/operation/location", &json!("m3"))
}

/// The result is a native error of HTTP 403 with the daemon's evacuation text, unchanged.
fn is_evacuated_refusal(through: &Through) -> Result<(), String> {
    let evacuated = |message: &str| message == "Cluster member is evacuated";
    let expected =
        "expected a native error, HTTP 403 and error code 403, \"Cluster member is evacuated\"";
    is_native_error(through, 403, Some(403), evacuated, expected)
}

/// `m2` evacuated with its instances stopped in place: starting the one on `m2` through `m1` and
/// through `m3` is the member's native refusal, its request sent once and not applied, and the
/// instance stays stopped.
fn start_while_evacuated(cluster: &Cluster) -> Result<(), String> {
    let placed = place_one_per_member(cluster)?;
    let name = instance_on(&placed, "m2").to_owned();
    member_action(
        cluster,
        "m2",
        &json!({"action": "evacuate", "mode": "stop"}),
    )?;
    let path = format!("/1.0/instances/{name}/state");
    for via in ["m1", "m3"] {
        let start = json!({"name": name, "action": "start"});
        let refused = cluster.call(via, "incus_instance_state_update", WRITE, start);
        is_evacuated_refusal(&refused)?;
        once_not_applied(&refused, "PUT", &path)?;
    }
    let state = cluster.call(
        "m3",
        "incus_instance_state_get",
        READ,
        json!({"name": name}),
    );
    state.succeeded()?;
    state.expect("/item/status", &json!("Stopped"))
}

/// `m2` evacuated: creates through every member (`m2` included) complete, none on `m2`.
fn create_while_evacuated(cluster: &Cluster) -> Result<(), String> {
    place_one_per_member(cluster)?;
    member_action(cluster, "m2", &json!({"action": "evacuate"}))?;
    for (i, via) in MEMBERS.iter().enumerate() {
        let name = format!("cl-ev{i}");
        let created = cluster.call(via, "incus_instance_create", WRITE, create_input(&name));
        created.succeeded()?;
        let location = created.result().pointer("/operation/location").cloned();
        if location == Some(json!("m2")) || location.is_none() {
            return Err(created.failure("the create landed on the evacuated member or nowhere"));
        }
    }
    Ok(())
}

/// `m2` evacuated (its instance migrated away) and restored: the instance is back on `m2` and a
/// start through `m1` completes there.
fn after_restore(cluster: &Cluster) -> Result<(), String> {
    let placed = place_one_per_member(cluster)?;
    let name = instance_on(&placed, "m2").to_owned();
    member_action(cluster, "m2", &json!({"action": "evacuate"}))?;
    let away = cluster.call("m1", "incus_instance_get", READ, json!({"name": name}));
    away.succeeded()?;
    if away.result().pointer("/item/location") == Some(&json!("m2")) {
        return Err(away.failure("the evacuation left the instance on m2"));
    }
    member_action(cluster, "m2", &json!({"action": "restore"}))?;
    let start = json!({"name": name, "action": "start"});
    let started = cluster.call("m1", "incus_instance_state_update", WRITE, start);
    started.succeeded()?;
    started.expect("/operation/location", &json!("m2"))
}
