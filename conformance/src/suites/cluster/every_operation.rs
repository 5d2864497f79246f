//! Every exported operation through a member that is not the first: each succeeds as on a
//! standalone daemon, and the `location` of what it returns is the member the cluster placed
//! the instance on, unchanged.

use std::collections::BTreeSet;

use fake_incus::{Fault, Rule};
use serde_json::{json, Value};

use super::session::{waiting, Cluster, Through};
use super::{create_input, trial, DELETE, EXEC, READ, WRITE};
use crate::runner::Check;
use crate::scenario::target::TargetFactory;
use std::sync::Arc;

pub(super) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    ["m2", "m3"]
        .into_iter()
        .map(|via| {
            trial(
                factory,
                &format!("catalogue::synchronous::every_operation_runs_through_{via}"),
                move |cluster| every_operation(cluster, via),
            )
        })
        .collect()
}

/// What a step's result must show.
enum Expect {
    /// A success (a mutation `completed`).
    Success,
    /// A success whose `/item/location` is the instance's member.
    Located,
    /// This `status`.
    Status(&'static str),
}

/// Runs the plan through `via`: every exported operation at least once, in an order where each
/// finds what it needs.
fn every_operation(cluster: &Cluster, via: &'static str) -> Result<(), String> {
    let mut plan = Plan {
        cluster,
        via,
        called: BTreeSet::new(),
        location: Value::Null,
    };
    plan.step("incus_server_get", READ, json!({}), Expect::Success)?;
    plan.step("incus_project_list", READ, json!({}), Expect::Success)?;
    plan.step(
        "incus_project_get",
        READ,
        json!({"name": "default"}),
        Expect::Success,
    )?;
    plan.step("incus_profile_list", READ, json!({}), Expect::Success)?;
    plan.step(
        "incus_profile_get",
        READ,
        json!({"name": "default"}),
        Expect::Success,
    )?;
    plan.step("incus_network_list", READ, json!({}), Expect::Success)?;
    plan.step(
        "incus_network_get",
        READ,
        json!({"name": "lo"}),
        Expect::Success,
    )?;
    plan.step("incus_storage_pool_list", READ, json!({}), Expect::Success)?;
    let pool = json!({"pool": "default"});
    plan.step(
        "incus_storage_pool_get",
        READ,
        pool.clone(),
        Expect::Success,
    )?;
    let images = plan.step("incus_image_list", READ, json!({}), Expect::Success)?;
    let fingerprint = images
        .result()
        .pointer("/items/0/fingerprint")
        .cloned()
        .unwrap_or(Value::Null);
    let image = json!({"fingerprint": fingerprint});
    plan.step("incus_image_get", READ, image, Expect::Success)?;
    plan.step("incus_image_alias_list", READ, json!({}), Expect::Success)?;

    let created = plan.step(
        "incus_instance_create",
        WRITE,
        create_input("web"),
        Expect::Success,
    )?;
    plan.location = created
        .result()
        .pointer("/operation/location")
        .cloned()
        .unwrap_or(Value::Null);
    let web = json!({"name": "web"});
    plan.step("incus_instance_list", READ, json!({}), Expect::Success)?;
    plan.step("incus_instance_get", READ, web.clone(), Expect::Located)?;
    plan.step(
        "incus_instance_state_get",
        READ,
        web.clone(),
        Expect::Success,
    )?;
    let update = json!({"name": "web", "description": "through a member"});
    plan.step("incus_instance_update", WRITE, update, Expect::Success)?;
    let start = json!({"name": "web", "action": "start"});
    plan.step("incus_instance_state_update", WRITE, start, Expect::Success)?;
    let exec = json!({"name": "web", "command": ["echo", "hello"]});
    plan.step("incus_instance_exec", EXEC, exec, Expect::Success)?;

    let snapshot = json!({"instance": "web", "snapshot": "snap0"});
    let mut confirmed = snapshot.clone();
    confirmed["confirm"] = json!("web/snap0");
    plan.step(
        "incus_instance_snapshot_create",
        WRITE,
        snapshot.clone(),
        Expect::Success,
    )?;
    let instance = json!({"instance": "web"});
    plan.step(
        "incus_instance_snapshot_list",
        READ,
        instance,
        Expect::Success,
    )?;
    plan.step(
        "incus_instance_snapshot_get",
        READ,
        snapshot,
        Expect::Success,
    )?;
    plan.step(
        "incus_instance_snapshot_restore",
        DELETE,
        confirmed.clone(),
        Expect::Success,
    )?;
    plan.step(
        "incus_instance_snapshot_delete",
        DELETE,
        confirmed,
        Expect::Success,
    )?;

    plan.step("incus_storage_volume_list", READ, pool, Expect::Success)?;
    let volume = json!({"pool": "default", "type": "container", "name": "web"});
    plan.step("incus_storage_volume_get", READ, volume, Expect::Located)?;

    let id = plan.slow_restart()?;
    let by_id = json!({"operation_id": id});
    plan.step("incus_operation_list", READ, json!({}), Expect::Success)?;
    plan.step("incus_operation_get", READ, by_id.clone(), Expect::Located)?;
    let wait = json!({"operation_id": id, "wait_seconds": 10});
    plan.step(
        "incus_operation_wait",
        READ,
        wait,
        Expect::Status("completed"),
    )?;
    let cancel = by_id;
    plan.step(
        "incus_operation_cancel",
        WRITE,
        cancel,
        Expect::Status("already_final"),
    )?;

    let stop = json!({"name": "web", "action": "stop", "force": true});
    plan.step("incus_instance_state_update", WRITE, stop, Expect::Success)?;
    let delete = json!({"name": "web", "confirm": "web"});
    plan.step("incus_instance_delete", DELETE, delete, Expect::Success)?;
    let mut image_delete = json!({"fingerprint": fingerprint});
    image_delete["confirm"] = fingerprint.clone();
    plan.step("incus_image_delete", DELETE, image_delete, Expect::Success)?;
    plan.covers_every_exported_operation()
}

/// The plan's progress through one member.
struct Plan<'a> {
    cluster: &'a Cluster,
    via: &'static str,
    called: BTreeSet<&'static str>,
    /// Where the cluster placed `web` (the create operation's `location`).
    location: Value,
}

impl Plan<'_> {
    fn step(
        &mut self,
        operation: &'static str,
        scopes: &[&str],
        input: Value,
        expect: Expect,
    ) -> Result<Through, String> {
        self.called.insert(operation);
        let through = self.cluster.call(self.via, operation, scopes, input);
        match expect {
            Expect::Success => through.succeeded()?,
            Expect::Located => {
                through.succeeded()?;
                through.expect("/item/location", &self.location)?;
            }
            Expect::Status(status) => {
                through.expect("/status", &json!(status))?;
                through.called.schema_valid()?;
            }
        }
        through.all_through(self.via)?;
        Ok(through)
    }

    /// A restart of `web` that takes a moment, not waited on: its operation id.
    fn slow_restart(&mut self) -> Result<String, String> {
        let rule = Rule::new("PUT", "/1.0/instances/web/state")
            .nth(1)
            .fault(Fault::OperationDuration { ms: 200 });
        self.cluster
            .fake()
            .add_rule(rule)
            .map_err(|e| format!("the operation-duration rule was refused: {e}"))?
            .forget();
        let restart = waiting(json!({"name": "web", "action": "restart"}), 0);
        let started = self.step(
            "incus_instance_state_update",
            WRITE,
            restart,
            Expect::Status("running"),
        )?;
        started
            .result()
            .get("operation_id")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| started.failure("running without the operation identity"))
    }

    /// The plan called exactly the exported operations.
    fn covers_every_exported_operation(&self) -> Result<(), String> {
        let exported: BTreeSet<&str> = incus_operations::all().iter().map(|d| d.name()).collect();
        if self.called == exported {
            return Ok(());
        }
        Err(format!(
            "the plan through {} is not the exported operations: not called {:?}, not exported {:?}",
            self.via,
            exported.difference(&self.called).collect::<Vec<_>>(),
            self.called.difference(&exported).collect::<Vec<_>>()
        ))
    }
}
