//! The core on a cluster: the same clauses of the specification, checked over a fake cluster of
//! three members (`m1`, `m2`, `m3`), each with its own Unix socket, through the reference host
//! bound to one member at a time. Tests are named `cluster::<area>::<clause>::<case>`.
//!
//! | Trial | Clause | What a cluster adds |
//! |---|---|---|
//! | `placement::` | `inspection::passthrough` | the cluster picks the member (no `target` is sent); `location` is passed through unchanged, the same through every member |
//! | `forwarding::` | `inspection::passthrough`, `mutation::statuses` | an instance on `m2` read and changed through `m1` and `m3`; each mutating request sent once |
//! | `forwarding::` | `exec::noninteractive` | exec through `m1` and `m3` on an instance of `m2`: output, exit code, the operation's `location` |
//! | `forwarding::` | `inspection::passthrough`, `mutation::statuses` | an operation of `m2` read and waited on through `m3` |
//! | `<clause>::<file stem>` of `scenarios/cluster/` | `mutation::native_rejection`, `mutation::statuses`, `mutation::never_resent`, `exec::unobserved_exit`, `inspection::passthrough`, `inspection::native_order` | a member down before a mutation, during its wait or during an exec, and lists read with it down: the cluster scenarios, as data, through `m1` and `m3` with `m2` going down and coming back (see `member_down`) |
//! | `evacuation::` | `inspection::passthrough` | an instance moved by an operator (`incus move --target`): its new `location` through every member, its mutations run there |
//! | `evacuation::` | `mutation::native_rejection` | a start on an evacuated member: the `native` 403 "Cluster member is evacuated", sent once, not applied |
//! | `evacuation::` | `mutation::statuses` | creates while a member is evacuated complete on other members; after a restore, mutations complete on the restored member |
//! | `leader::` | `inspection::passthrough` | the database leader down: reads of live members' instances complete once a new leader is elected |
//! | `leader::` | `mutation::native_rejection` | the leader down: a mutation of its instance is the member-down `native` error; two voters down: the cluster's `native` 503, each request sent once |
//! | `catalogue::synchronous::` | `catalogue::synchronous` | `scenarios/lifecycle.json` (every exported operation) through `m2` and through `m3` |
//!
//! Each trial starts its own cluster with `ClusterTimings::fast()`, so that the member-down
//! stalls and thresholds take tens of milliseconds, not the real daemon's seconds.

use std::sync::Arc;

use serde_json::{json, Value};

use crate::runner::Check;
use crate::scenario::target::TargetFactory;

mod evacuation;
mod forwarding;
mod leader;
mod lifecycle;
mod member_down;
mod session;

use session::{Cluster, Through};

const READ: &[&str] = &["incus.read"];
const WRITE: &[&str] = &["incus.write"];
const EXEC: &[&str] = &["incus.exec"];
const DELETE: &[&str] = &["incus.delete"];

/// The cluster trials: each starts its own fake cluster, and calls each member through the run's
/// backend (an adapter over the wire) or, in-process, the reference host.
pub(crate) fn checks(factory: &Arc<dyn TargetFactory>) -> Vec<Check> {
    let mut checks = Vec::new();
    checks.extend(forwarding::checks(factory));
    checks.extend(member_down::checks(factory));
    checks.extend(evacuation::checks(factory));
    checks.extend(leader::checks(factory));
    checks.extend(lifecycle::checks(factory));
    checks
}

/// A cluster trial: starts a cluster, runs `body` on it.
fn trial(
    factory: &Arc<dyn TargetFactory>,
    name: &str,
    body: impl FnOnce(&Cluster) -> Result<(), String> + Send + 'static,
) -> Check {
    let factory = Arc::clone(factory);
    Check::new(format!("cluster::{name}"), move || {
        body(&Cluster::start(&factory)?)
    })
}

/// The create input for `name` from the fake's `busybox` image (no target: the cluster picks).
fn create_input(name: &str) -> Value {
    json!({"name": name, "source": {"type": "image", "alias": "busybox"}})
}

/// Creates `name` through `via` (the cluster places it) and returns the member it landed on,
/// read from the create operation's `location`.
fn create(cluster: &Cluster, via: &str, name: &str) -> Result<String, String> {
    let created = cluster.call(via, "incus_instance_create", WRITE, create_input(name));
    created.succeeded()?;
    created
        .result()
        .pointer("/operation/location")
        .and_then(Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| created.failure("the create operation names no location"))
}

/// One instance per member, created through `m1` and placed by the cluster (fewest instances
/// first); the names with the member each landed on, in creation order.
fn place_one_per_member(cluster: &Cluster) -> Result<Vec<(String, String)>, String> {
    let mut placed = Vec::new();
    for name in ["cl-a", "cl-b", "cl-c"] {
        let location = create(cluster, "m1", name)?;
        placed.push((name.to_owned(), location));
    }
    let mut members: Vec<&str> = placed.iter().map(|(_, m)| m.as_str()).collect();
    members.sort_unstable();
    if members != session::MEMBERS {
        return Err(format!(
            "three creates on an empty cluster landed on {placed:?}, not one per member (the cluster places on the member with the fewest instances)"
        ));
    }
    Ok(placed)
}

/// The instance of `placed` that lives on `member`.
fn instance_on<'a>(placed: &'a [(String, String)], member: &str) -> &'a str {
    placed
        .iter()
        .find(|(_, location)| location == member)
        .map_or("", |(name, _)| name.as_str())
}

/// Whether `message` is one a cluster member answers for a member that is down (the reference's
/// table: connection refused while forwarding, the missing event link, not ready yet).
fn is_member_down_message(message: &str) -> bool {
    message == "Server isn't ready yet"
        || message == "Missing event connection with target cluster member"
        || message.contains("Unable to connect to")
}

/// The request reached the cluster exactly once during the call and changed nothing.
fn once_not_applied(through: &Through, method: &str, path: &str) -> Result<(), String> {
    let sent = through.sent(method, path);
    match sent.as_slice() {
        [entry] if !entry.applied => Ok(()),
        [_] => Err(through.failure(&format!("{method} {path} was applied"))),
        _ => Err(through.failure(&format!(
            "{method} {path} reached the cluster {} times, expected once",
            sent.len()
        ))),
    }
}

/// The result is a native error of HTTP 500 whose message is the member-down text, unchanged.
fn is_member_down_error(through: &Through) -> Result<(), String> {
    let expected =
        "expected a native error, HTTP 500 and error code 500, with the member-down message";
    is_native_error(through, 500, Some(500), is_member_down_message, expected)
}

/// The result is a native error of HTTP `status` (and error code `code`, when given) whose
/// message `matches`, passed on unchanged; otherwise a failure that says what was `expected`.
fn is_native_error(
    through: &Through,
    status: u64,
    code: Option<u64>,
    matches: impl Fn(&str) -> bool,
    expected: &str,
) -> Result<(), String> {
    let result = through.result();
    let message = result
        .pointer("/error/message")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let code_holds =
        code.is_none_or(|code| result.pointer("/error/error_code") == Some(&json!(code)));
    if through.called.error_kind() != Some("native")
        || result.pointer("/error/http_status") != Some(&json!(status))
        || !code_holds
        || !matches(message)
    {
        return Err(through.failure(expected));
    }
    through.called.schema_valid()
}
