//! A member goes down: before a mutation, during a mutation's wait, during an exec, and while
//! lists are read through the members still up. The answers are the kinds the spec gives what
//! was observed, and nothing is resent.

use fake_incus::{Answer, Fault, JournalEntry, Rule};
use serde_json::{json, Value};

use super::session::{take_down, waiting, Cluster, Through};
use super::{
    instance_on, is_member_down_error, place_one_per_member, trial, DELETE, EXEC, READ, WRITE,
};
use crate::runner::Check;
use crate::scenario::target::TargetFactory;
use std::sync::Arc;

pub(super) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    vec![
        trial(
            factory,
            "mutation::native_rejection::member_down_before_a_mutation_is_the_members_native_error",
            down_before_mutations,
        ),
        trial(
            factory,
            "mutation::statuses::member_down_during_the_wait_is_running",
            |cluster| {
                let (through, _) = down_during_wait(cluster, Mutation::ALL[0])?;
                is_running(&through)
            },
        ),
        {
            let factory = Arc::clone(factory);
            Check::new(
                "cluster::mutation::never_resent::member_down_during_any_mutation_resends_nothing",
                move || resends_nothing(&factory),
            )
        },
        trial(
            factory,
            "exec::unobserved_exit::member_down_during_an_exec_is_running_with_its_operation",
            down_during_exec,
        ),
        trial(
            factory,
            "inspection::passthrough::instance_list_with_a_member_down_shows_its_instances_as_incus_lists_them",
            instance_list_member_down,
        ),
        trial(
            factory,
            "inspection::native_order::operation_list_with_a_member_down_counts_what_incus_lists",
            operation_list_member_down,
        ),
    ]
}

/// A mutation of the instance on the member that goes down: the native request it makes.
#[derive(Debug, Clone, Copy)]
struct Mutation {
    operation: &'static str,
    scopes: &'static [&'static str],
    method: &'static str,
    /// The path, `{name}` standing for the instance.
    path: &'static str,
}

impl Mutation {
    /// Every mutation that creates an operation on the instance's member.
    const ALL: [Mutation; 5] = [
        Mutation {
            operation: "incus_instance_state_update",
            scopes: WRITE,
            method: "PUT",
            path: "/1.0/instances/{name}/state",
        },
        Mutation {
            operation: "incus_instance_snapshot_create",
            scopes: WRITE,
            method: "POST",
            path: "/1.0/instances/{name}/snapshots",
        },
        Mutation {
            operation: "incus_instance_snapshot_restore",
            scopes: DELETE,
            method: "PUT",
            path: "/1.0/instances/{name}",
        },
        Mutation {
            operation: "incus_instance_snapshot_delete",
            scopes: DELETE,
            method: "DELETE",
            path: "/1.0/instances/{name}/snapshots/snap0",
        },
        Mutation {
            operation: "incus_instance_delete",
            scopes: DELETE,
            method: "DELETE",
            path: "/1.0/instances/{name}",
        },
    ];

    fn path(&self, name: &str) -> String {
        self.path.replace("{name}", name)
    }

    fn input(&self, name: &str) -> Value {
        let snapshot =
            json!({"instance": name, "snapshot": "snap0", "confirm": format!("{name}/snap0")});
        match self.operation {
            "incus_instance_state_update" => {
                json!({"name": name, "action": "restart", "force": true})
            }
            "incus_instance_snapshot_create" => json!({"instance": name, "snapshot": "snap1"}),
            "incus_instance_delete" => json!({"name": name, "confirm": name}),
            _ => snapshot,
        }
    }

    /// How many times its request reached the cluster during `through`, through any member.
    fn sent(&self, through: &Through, name: &str) -> usize {
        let path = self.path(name);
        through
            .entries
            .iter()
            .filter(|e| e.method == self.method && e.path == path)
            .count()
    }
}

/// One instance per member; the one on `m2` stopped, with a snapshot `snap0`.
fn prepare(cluster: &Cluster) -> Result<String, String> {
    let placed = place_one_per_member(cluster)?;
    let name = instance_on(&placed, "m2").to_owned();
    let snapshot = json!({"instance": name, "snapshot": "snap0"});
    cluster
        .call("m1", "incus_instance_snapshot_create", WRITE, snapshot)
        .succeeded()?;
    Ok(name)
}

/// `m2` is down; every mutation of its instance, and an exec on it, through `m1` or `m3` is
/// refused natively with the member's message, reached the cluster once and was not applied.
fn down_before_mutations(cluster: &Cluster) -> Result<(), String> {
    let name = prepare(cluster)?;
    let start = json!({"name": name, "action": "start"});
    cluster
        .call("m2", "incus_instance_state_update", WRITE, start)
        .succeeded()?;
    cluster.down("m2")?;
    for (i, mutation) in Mutation::ALL.iter().enumerate() {
        let via = if i % 2 == 0 { "m1" } else { "m3" };
        let refused = cluster.call(
            via,
            mutation.operation,
            mutation.scopes,
            mutation.input(&name),
        );
        is_member_down_error(&refused)?;
        if mutation.operation == "incus_instance_snapshot_restore" {
            // A restore first reads the snapshot it brings back (SECURITY.md); that read is
            // refused, so no PUT is sent at all.
            let read = format!("/1.0/instances/{name}/snapshots/snap0");
            once_not_applied(&refused, "GET", &read)?;
            if !refused
                .sent(mutation.method, &mutation.path(&name))
                .is_empty()
            {
                return Err(refused.failure("a restore was sent although its read was refused"));
            }
            continue;
        }
        once_not_applied(&refused, mutation.method, &mutation.path(&name))?;
    }
    let exec = json!({"name": name, "command": ["true"]});
    let refused = cluster.call("m3", "incus_instance_exec", EXEC, exec);
    is_member_down_error(&refused)?;
    once_not_applied(&refused, "POST", &format!("/1.0/instances/{name}/exec"))?;
    // The update reads the ETag first; that read is refused, so no PATCH is sent at all.
    let update = json!({"name": name, "description": "never"});
    let refused = cluster.call("m1", "incus_instance_update", WRITE, update);
    is_member_down_error(&refused)?;
    if !refused.sent("PATCH", "/1.0/instances/*").is_empty() {
        return Err(refused.failure("a PATCH was sent although the ETag read was refused"));
    }
    Ok(())
}

/// The request reached the cluster exactly once during the call and changed nothing.
pub(super) fn once_not_applied(through: &Through, method: &str, path: &str) -> Result<(), String> {
    let sent: Vec<&JournalEntry> = through
        .entries
        .iter()
        .filter(|e| e.method == method && e.path == path)
        .collect();
    match sent.as_slice() {
        [entry] if !entry.applied => Ok(()),
        [_] => Err(through.failure(&format!("{method} {path} was applied"))),
        _ => Err(through.failure(&format!(
            "{method} {path} reached the cluster {} times, expected once",
            sent.len()
        ))),
    }
}

/// Whether `entry` is a wait on an operation (the wait's answer starts at once and its body
/// comes when the operation ends, so the entry may already show the status).
fn is_wait(entry: &JournalEntry) -> bool {
    entry.is("GET", "/1.0/operations/*/wait")
}

/// The instance on `m2` gets `mutation`, whose operation never finishes on its own, through
/// `m1`; `m2` goes down while the core waits on it. The call and the instance's name.
fn down_during_wait(cluster: &Cluster, mutation: Mutation) -> Result<(Through, String), String> {
    let name = prepare(cluster)?;
    let rule = Rule::new(mutation.method, &mutation.path(&name)).fault(Fault::OperationNeverFinish);
    cluster
        .fake()
        .add_rule(rule)
        .map_err(|e| format!("the never-finish rule was refused: {e}"))?
        .forget();
    let input = waiting(mutation.input(&name), 5);
    let through = cluster.call_and_act(
        "m1",
        mutation.operation,
        mutation.scopes,
        input,
        |entries| entries.iter().any(is_wait),
        |fake| take_down(fake, "m2"),
    )?;
    Ok((through, name))
}

/// `running`, with the operation identity and the reason the wait ended, schema-valid.
fn is_running(through: &Through) -> Result<(), String> {
    through.expect("/status", &json!("running"))?;
    if !through
        .result()
        .get("operation_id")
        .is_some_and(Value::is_string)
    {
        return Err(through.failure("running without the operation identity"));
    }
    through.called.schema_valid()
}

/// For every mutation, on a cluster of its own: the member going down during the wait leaves
/// the mutating request sent once, and the exec request of an exec cut by it too.
fn resends_nothing(factory: &Arc<dyn TargetFactory>) -> Result<(), String> {
    for mutation in Mutation::ALL {
        let cluster = Cluster::start(factory)?;
        let (through, name) = down_during_wait(&cluster, mutation)?;
        let sent = mutation.sent(&through, &name);
        if sent != 1 {
            return Err(through.failure(&format!(
                "{} {} reached the cluster {sent} times, expected once",
                mutation.method,
                mutation.path(&name)
            )));
        }
    }
    let cluster = Cluster::start(factory)?;
    let (through, name) = exec_cut_by_member_down(&cluster)?;
    let sent = through
        .sent("POST", &format!("/1.0/instances/{name}/exec"))
        .len();
    if sent != 1 {
        return Err(through.failure(&format!(
            "the exec request reached the cluster {sent} times, expected once"
        )));
    }
    Ok(())
}

/// Starts the instance on `m2` and runs a long command on it through `m1`; `m2` goes down once
/// the four exec websockets are connected. The call and the instance's name.
fn exec_cut_by_member_down(cluster: &Cluster) -> Result<(Through, String), String> {
    let placed = place_one_per_member(cluster)?;
    let name = instance_on(&placed, "m2").to_owned();
    let start = json!({"name": name, "action": "start"});
    cluster
        .call("m1", "incus_instance_state_update", WRITE, start)
        .succeeded()?;
    let input = json!({"name": name, "command": ["sleep", "30"], "timeout_seconds": 5});
    let through = cluster.call_and_act(
        "m1",
        "incus_instance_exec",
        EXEC,
        input,
        |entries| {
            // Four websockets (control, 0, 1, 2), all upgraded: the command runs.
            let upgraded = entries
                .iter()
                .filter(|e| e.websocket && e.answer == (Answer::Status { code: 101 }))
                .count();
            upgraded >= 4
        },
        |fake| take_down(fake, "m2"),
    )?;
    Ok((through, name))
}

/// An exec cut by its member going down is `running` with the exec operation's identity and no
/// exit code (its exit was not observed), schema-valid.
fn down_during_exec(cluster: &Cluster) -> Result<(), String> {
    let (through, _) = exec_cut_by_member_down(cluster)?;
    is_running(&through)?;
    through.expect("/exit_code", &Value::Null)?;
    through.expect("/operation/location", &json!("m2"))
}

/// With `m2` down, the instance list through `m1` and `m3` holds every instance, the one of
/// `m2` as Incus lists it (`Error`, 112), unchanged.
fn instance_list_member_down(cluster: &Cluster) -> Result<(), String> {
    let placed = place_one_per_member(cluster)?;
    let down = instance_on(&placed, "m2");
    cluster.down("m2")?;
    for via in ["m1", "m3"] {
        let listed = cluster.call(via, "incus_instance_list", READ, json!({}));
        listed.succeeded()?;
        listed.expect("/count", &json!(placed.len()))?;
        let items = listed.items();
        for (name, location) in &placed {
            let Some(item) = items.iter().find(|i| i.get("name") == Some(&json!(name))) else {
                return Err(listed.failure(&format!("{name} is not listed")));
            };
            let in_error = item.get("status") == Some(&json!("Error"))
                && item.get("status_code") == Some(&json!(112));
            if item.get("location") != Some(&json!(location)) || in_error != (name == down) {
                return Err(listed.failure(&format!(
                    "{name} (on {location}) is listed as {item}; only the instance of the member down is in Error (112)"
                )));
            }
        }
    }
    Ok(())
}

/// With `m2` down, the operation list through `m1` leaves out its operations and counts what
/// Incus lists.
fn operation_list_member_down(cluster: &Cluster) -> Result<(), String> {
    let placed = place_one_per_member(cluster)?;
    let mut ids = Vec::new();
    for member in ["m2", "m3"] {
        let name = instance_on(&placed, member);
        let path = format!("/1.0/instances/{name}/state");
        let rule = Rule::new("PUT", &path).fault(Fault::OperationNeverFinish);
        cluster
            .fake()
            .add_rule(rule)
            .map_err(|e| format!("the never-finish rule was refused: {e}"))?
            .forget();
        let input = waiting(json!({"name": name, "action": "start"}), 0);
        let started = cluster.call("m1", "incus_instance_state_update", WRITE, input);
        is_running(&started)?;
        ids.push(started.result()["operation_id"].clone());
    }
    cluster.down("m2")?;
    let listed = cluster.call("m1", "incus_operation_list", READ, json!({}));
    listed.succeeded()?;
    let items = listed.items();
    listed.expect("/count", &json!(items.len()))?;
    listed.expect("/truncated", &json!(false))?;
    let listed_ids: Vec<&Value> = items.iter().filter_map(|op| op.get("id")).collect();
    if listed_ids.contains(&&ids[0]) || !listed_ids.contains(&&ids[1]) {
        return Err(listed.failure(&format!(
            "expected the operation of m3 ({}) listed and the one of m2 ({}) left out",
            ids[1], ids[0]
        )));
    }
    Ok(())
}
