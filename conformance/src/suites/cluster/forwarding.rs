//! Placement and forwarding: the cluster picks where an instance lives, and every request on it
//! works through any member, with `location` passed through unchanged.

use serde_json::{json, Value};

use super::session::{waiting, Cluster, MEMBERS};
use super::{create_input, instance_on, place_one_per_member, trial, DELETE, EXEC, READ, WRITE};
use crate::runner::Check;
use crate::scenario::target::TargetFactory;
use std::sync::Arc;

pub(super) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    vec![
        trial(
            factory,
            "inspection::passthrough::placed_instance_reports_the_member_the_cluster_picked",
            placement,
        ),
        trial(
            factory,
            "inspection::passthrough::server_get_is_the_view_of_the_member_asked",
            server_views,
        ),
        trial(
            factory,
            "inspection::passthrough::instance_on_another_member_reads_the_same_through_every_member",
            forwarded_reads,
        ),
        trial(
            factory,
            "mutation::statuses::mutations_on_another_member_complete_through_any_member",
            forwarded_mutations,
        ),
        trial(
            factory,
            "exec::noninteractive::exec_on_another_member_runs_through_any_member",
            forwarded_exec,
        ),
        trial(
            factory,
            "inspection::passthrough::operation_of_another_member_reads_through_any_member",
            operation_get_elsewhere,
        ),
        trial(
            factory,
            "mutation::statuses::operation_wait_through_another_member_observes_the_outcome",
            operation_wait_elsewhere,
        ),
    ]
}

/// The create sends no `target` (placement is the cluster's choice, not agent input), and the
/// instance reads back with the create operation's `location` through every member.
fn placement(cluster: &Cluster) -> Result<(), String> {
    let created = cluster.call("m3", "incus_instance_create", WRITE, create_input("cl-a"));
    created.succeeded()?;
    for post in created.sent("POST", "/1.0/instances") {
        let query = post.query.as_deref().unwrap_or_default();
        if query.split('&').any(|pair| pair.starts_with("target=")) {
            return Err(created.failure("the create named a target member"));
        }
    }
    let location = created
        .result()
        .pointer("/operation/location")
        .cloned()
        .unwrap_or(Value::Null);
    if !location.as_str().is_some_and(|l| MEMBERS.contains(&l)) {
        return Err(created.failure("the create operation's location is not a member's name"));
    }
    for via in MEMBERS {
        let got = cluster.call(via, "incus_instance_get", READ, json!({"name": "cl-a"}));
        got.succeeded()?;
        got.expect("/item/location", &location)?;
        let listed = cluster.call(via, "incus_instance_list", READ, json!({}));
        listed.succeeded()?;
        listed.expect("/items/0/location", &location)?;
        got.all_through(via)?;
    }
    Ok(())
}

/// `incus_server_get` through each member is that member's view of the cluster.
fn server_views(cluster: &Cluster) -> Result<(), String> {
    for via in MEMBERS {
        let server = cluster.call(via, "incus_server_get", READ, json!({}));
        server.succeeded()?;
        server.expect("/item/environment/server_clustered", &json!(true))?;
        server.expect("/item/environment/server_name", &json!(via))?;
    }
    Ok(())
}

/// An instance on `m2` and its state and snapshots read the same through `m1`, `m2` and `m3`,
/// its `location` being `m2` whichever member answers.
fn forwarded_reads(cluster: &Cluster) -> Result<(), String> {
    let placed = place_one_per_member(cluster)?;
    let name = instance_on(&placed, "m2");
    let snapshot = json!({"instance": name, "snapshot": "snap0"});
    cluster
        .call("m1", "incus_instance_snapshot_create", WRITE, snapshot)
        .succeeded()?;
    let reads = [
        ("incus_instance_get", json!({"name": name})),
        ("incus_instance_state_get", json!({"name": name})),
        ("incus_instance_snapshot_list", json!({"instance": name})),
        (
            "incus_instance_snapshot_get",
            json!({"instance": name, "snapshot": "snap0"}),
        ),
    ];
    for (operation, input) in reads {
        let mut first: Option<Value> = None;
        for via in MEMBERS {
            let read = cluster.call(via, operation, READ, input.clone());
            read.succeeded()?;
            read.all_through(via)?;
            if operation == "incus_instance_get" {
                read.expect("/item/location", &json!("m2"))?;
            }
            match &first {
                None => first = Some(read.result().clone()),
                Some(seen) if seen != read.result() => {
                    return Err(read.failure(&format!(
                        "{operation} through {via} differs from through m1: {seen}"
                    )))
                }
                Some(_) => {}
            }
        }
    }
    Ok(())
}

/// Every mutation of an instance on `m2`, each through `m1` or `m3`, completes; its operation
/// names `m2`; the mutating request reached the cluster once, through the member called.
fn forwarded_mutations(cluster: &Cluster) -> Result<(), String> {
    let placed = place_one_per_member(cluster)?;
    let name = instance_on(&placed, "m2");
    let snapshot = json!({"instance": name, "snapshot": "snap0"});
    let mut confirmed = snapshot.clone();
    confirmed["confirm"] = json!(format!("{name}/snap0"));
    let steps = [
        (
            "m1",
            "incus_instance_state_update",
            WRITE,
            json!({"name": name, "action": "start"}),
            ("PUT", "/1.0/instances/*/state"),
        ),
        (
            "m3",
            "incus_instance_update",
            WRITE,
            json!({"name": name, "description": "forwarded"}),
            ("PATCH", "/1.0/instances/*"),
        ),
        (
            "m1",
            "incus_instance_snapshot_create",
            WRITE,
            snapshot,
            ("POST", "/1.0/instances/*/snapshots"),
        ),
        (
            "m3",
            "incus_instance_snapshot_restore",
            DELETE,
            confirmed.clone(),
            ("PUT", "/1.0/instances/*"),
        ),
        (
            "m1",
            "incus_instance_snapshot_delete",
            DELETE,
            confirmed,
            ("DELETE", "/1.0/instances/*/snapshots/*"),
        ),
        (
            "m3",
            "incus_instance_state_update",
            WRITE,
            json!({"name": name, "action": "stop", "force": true}),
            ("PUT", "/1.0/instances/*/state"),
        ),
        (
            "m1",
            "incus_instance_delete",
            DELETE,
            json!({"name": name, "confirm": name}),
            ("DELETE", "/1.0/instances/*"),
        ),
    ];
    for (via, operation, scopes, input, (method, path)) in steps {
        let changed = cluster.call(via, operation, scopes, input);
        changed.succeeded()?;
        changed.all_through(via)?;
        if operation != "incus_instance_update" {
            changed.expect("/operation/location", &json!("m2"))?;
        }
        let sent = changed.sent(method, path).len();
        if sent != 1 {
            return Err(changed.failure(&format!(
                "{method} {path} reached the cluster {sent} times, expected once"
            )));
        }
    }
    let gone = cluster.call("m3", "incus_instance_get", READ, json!({"name": name}));
    if gone.result().pointer("/error/http_status") != Some(&json!(404)) {
        return Err(gone.failure("the instance deleted through m1 is still there through m3"));
    }
    Ok(())
}

/// Exec through `m1` and `m3` on the running instance of `m2`: the command's output and exit
/// code, the exec operation's `location` `m2`, the streams through the member called.
fn forwarded_exec(cluster: &Cluster) -> Result<(), String> {
    let placed = place_one_per_member(cluster)?;
    let name = instance_on(&placed, "m2");
    let start = json!({"name": name, "action": "start"});
    cluster
        .call("m2", "incus_instance_state_update", WRITE, start)
        .succeeded()?;
    for via in ["m1", "m3"] {
        let input =
            json!({"name": name, "command": ["sh", "-c", "echo out; echo err >&2; exit 3"]});
        let exec = cluster.call(via, "incus_instance_exec", EXEC, input);
        exec.expect("/status", &json!("completed"))?;
        exec.expect("/exit_code", &json!(3))?;
        exec.expect("/stdout/data", &json!("out\n"))?;
        exec.expect("/stderr/data", &json!("err\n"))?;
        exec.expect("/operation/location", &json!("m2"))?;
        exec.all_through(via)?;
        let sockets = exec.entries.iter().filter(|e| e.websocket).count();
        if sockets != 4 {
            return Err(exec.failure(&format!(
                "{sockets} exec websockets through {via}, expected 4"
            )));
        }
        exec.called.schema_valid()?;
    }
    Ok(())
}

/// Starts an operation on the instance of `m2` that runs for a while, through `m1`; returns
/// the operation id.
fn slow_operation_on_m2(cluster: &Cluster) -> Result<String, String> {
    let placed = place_one_per_member(cluster)?;
    let name = instance_on(&placed, "m2");
    let rule = fake_incus::Rule::new("PUT", &format!("/1.0/instances/{name}/state"))
        .fault(fake_incus::Fault::OperationDuration { ms: 300 });
    cluster
        .fake()
        .add_rule(rule)
        .map_err(|e| format!("the operation-duration rule was refused: {e}"))?
        .forget();
    let input = waiting(json!({"name": name, "action": "start"}), 0);
    let started = cluster.call("m1", "incus_instance_state_update", WRITE, input);
    started.expect("/status", &json!("running"))?;
    started.expect("/operation/location", &json!("m2"))?;
    started
        .result()
        .get("operation_id")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| started.failure("running without the operation identity"))
}

/// `incus_operation_get` and `incus_operation_list` through `m3` show the operation of `m2`
/// with its `location`, unchanged.
fn operation_get_elsewhere(cluster: &Cluster) -> Result<(), String> {
    let id = slow_operation_on_m2(cluster)?;
    let got = cluster.call(
        "m3",
        "incus_operation_get",
        READ,
        json!({"operation_id": id}),
    );
    got.succeeded()?;
    got.expect("/item/id", &json!(id))?;
    got.expect("/item/location", &json!("m2"))?;
    got.all_through("m3")?;
    let listed = cluster.call("m3", "incus_operation_list", READ, json!({}));
    listed.succeeded()?;
    let items = listed.items();
    if !items
        .iter()
        .any(|op| op.get("id") == Some(&json!(id)) && op.get("location") == Some(&json!("m2")))
    {
        return Err(listed.failure("the operation of m2 is not listed through m3"));
    }
    Ok(())
}

/// `incus_operation_wait` through `m3` on the operation of `m2` observes its completion.
fn operation_wait_elsewhere(cluster: &Cluster) -> Result<(), String> {
    let id = slow_operation_on_m2(cluster)?;
    let input = json!({"operation_id": id, "wait_seconds": 10});
    let waited = cluster.call("m3", "incus_operation_wait", READ, input);
    waited.expect("/status", &json!("completed"))?;
    waited.expect("/operation/location", &json!("m2"))?;
    waited.expect("/operation/status_code", &json!(200))?;
    waited.all_through("m3")?;
    waited.called.schema_valid()
}
