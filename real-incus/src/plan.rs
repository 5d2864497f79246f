//! The acceptance plan: the ordered lifecycle, where each step prepares the next (create, start,
//! exec, snapshot, restore, stop, delete) or names what the sandbox made (its project, pool and
//! image). Checks that are single calls on their own are scenario files (`scenarios/`), run by
//! the scenario engine after the plan; both are judged by its matcher.
use std::time::{Duration, Instant};

use incus_conformance::scenario::format::Expect;
use incus_conformance::scenario::target::Target as _;
use serde_json::{json, Value};

use crate::recorder::{CheckSink, Recorder};
use crate::targets::Targets;

/// The isolated world the plan runs in.
#[derive(Debug, Clone)]
pub(crate) struct Sandbox {
    pub(crate) project: String,
    pub(crate) pool: String,
    /// Alias of the test image inside the project.
    pub(crate) alias: String,
    /// Full fingerprint of the test image.
    pub(crate) fingerprint: String,
    /// A host-approved image remote and an alias on it, when one was configured.
    pub(crate) remote: Option<(String, String)>,
    /// The instance the exec, operation and snapshot checks run on: [`C1`], or on a cluster an
    /// instance the setup placed (`?target=`) on another member than the one the runner talks to,
    /// so that every one of those calls is forwarded.
    pub(crate) workload: String,
    /// Clustered: the member the workload lives on.
    pub(crate) workload_member: Option<String>,
}

impl Sandbox {
    /// The workload is an instance of its own (on another member), not [`C1`].
    fn separate_workload(&self) -> bool {
        self.workload != C1
    }
}

/// The main test instance (created, started, snapshotted, deleted).
pub(crate) const C1: &str = "c1";

/// Runs the whole plan. Checks that depend on an earlier step that failed still run: they then fail
/// or are skipped with a reason, so that the report shows the whole picture.
/// `prefix` marks the progress lines (empty for the real daemon).
pub(crate) async fn run_plan(
    targets: &Targets,
    sandbox: &Sandbox,
    prefix: &'static str,
    sink: Option<CheckSink>,
) -> Vec<crate::report::Check> {
    let mut rec = Recorder::new(targets, prefix, sink);
    let sb = sandbox;
    inventory(&mut rec, sb).await;
    images(&mut rec, sb).await;
    create(&mut rec, sb).await;
    inspect_instance(&mut rec, sb).await;
    update(&mut rec, sb).await;
    state(&mut rec, sb).await;
    exec(&mut rec, sb).await;
    operations(&mut rec, sb).await;
    snapshots(&mut rec, sb).await;
    volumes(&mut rec, sb).await;
    remote(&mut rec, sb).await;
    delete_instance(&mut rec, sb).await;
    delete_image(&mut rec, sb).await;
    rec.checks
}

fn with_project(sb: &Sandbox, fields: Value) -> Value {
    let mut input = fields;
    input["project"] = json!(sb.project);
    input
}

async fn inventory(rec: &mut Recorder<'_>, sb: &Sandbox) {
    rec.check(
        "incus_project_list",
        "success: lists the acceptance project",
        json!({}),
        Expect::success().contains("/items", json!({"name": sb.project})),
    )
    .await;
    rec.check(
        "incus_project_get",
        "success",
        json!({"name": sb.project}),
        Expect::success().equals("/item/name", sb.project.as_str()),
    )
    .await;
    rec.check(
        "incus_storage_pool_list",
        "success: lists the pool",
        json!({}),
        Expect::success().contains("/items", json!({"name": sb.pool})),
    )
    .await;
    rec.check(
        "incus_storage_pool_get",
        "success",
        json!({"pool": sb.pool}),
        Expect::success().equals("/item/name", sb.pool.as_str()),
    )
    .await;
}

async fn images(rec: &mut Recorder<'_>, sb: &Sandbox) {
    rec.check(
        "incus_image_list",
        "success: lists the test image",
        with_project(sb, json!({})),
        Expect::success().contains("/items", json!({"fingerprint": sb.fingerprint})),
    )
    .await;
    rec.check(
        "incus_image_get",
        "success",
        with_project(sb, json!({"fingerprint": sb.fingerprint})),
        Expect::success().equals("/item/fingerprint", sb.fingerprint.as_str()),
    )
    .await;
    rec.check(
        "incus_image_alias_list",
        "success: lists the test alias",
        with_project(sb, json!({})),
        Expect::success().contains("/items", json!({"name": sb.alias})),
    )
    .await;
}

fn image_source(sb: &Sandbox) -> Value {
    json!({"type": "image", "alias": sb.alias})
}

async fn create(rec: &mut Recorder<'_>, sb: &Sandbox) {
    let c1 = with_project(
        sb,
        json!({"name": C1, "source": image_source(sb), "wait_seconds": 60}),
    );
    rec.check(
        "incus_instance_create",
        "success: completed",
        c1.clone(),
        Expect::status("completed"),
    )
    .await;
    rec.check(
        "incus_instance_create",
        "duplicate name: accepted, then failed",
        c1,
        Expect::status("failed"),
    )
    .await;
}

async fn inspect_instance(rec: &mut Recorder<'_>, sb: &Sandbox) {
    rec.check(
        "incus_instance_list",
        "success: the created instance",
        with_project(sb, json!({})),
        Expect::success()
            .equals("/count", if sb.separate_workload() { 2 } else { 1 })
            .contains("/items", json!({"name": C1})),
    )
    .await;
    if let Some(member) = &sb.workload_member {
        rec.check(
            "incus_instance_list",
            "clustered: the workload is listed on its member",
            with_project(sb, json!({})),
            Expect::success().contains("/items", json!({"name": sb.workload, "location": member})),
        )
        .await;
        rec.check(
            "incus_instance_get",
            "clustered: the workload's location passes through",
            with_project(sb, json!({"name": sb.workload})),
            Expect::success()
                .equals("/item/location", member.as_str())
                .equals("/item/status", "Running"),
        )
        .await;
    }
    rec.check(
        "incus_instance_get",
        "success with the native ETag",
        with_project(sb, json!({"name": C1})),
        Expect::success().equals("/item/name", C1).present("/etag"),
    )
    .await;
}

async fn update(rec: &mut Recorder<'_>, sb: &Sandbox) {
    let got = rec
        .check(
            "incus_instance_get",
            "read the ETag for an update",
            with_project(sb, json!({"name": C1})),
            Expect::success(),
        )
        .await;
    let etag = got["etag"].as_str().unwrap_or("missing-etag").to_owned();
    rec.check(
        "incus_instance_update",
        "success with the given ETag",
        with_project(
            sb,
            json!({"name": C1, "etag": etag, "description": "acceptance: updated"}),
        ),
        Expect::status("completed").equals("/etag_source", "input"),
    )
    .await;
    rec.check(
        "incus_instance_update",
        "success reading the ETag first",
        with_project(
            sb,
            json!({"name": C1, "config": {"user.acceptance": "1"}, "description": "acceptance: updated"}),
        ),
        Expect::status("completed").equals("/etag_source", "read"),
    )
    .await;
    rec.check(
        "incus_instance_update",
        "stale ETag is a native 412",
        with_project(
            sb,
            json!({"name": C1, "etag": etag, "description": "stale"}),
        ),
        Expect::native(412),
    )
    .await;
    rec.check(
        "incus_instance_get",
        "the update is visible",
        with_project(sb, json!({"name": C1})),
        Expect::success().equals("/item/config/user.acceptance", "1"),
    )
    .await;
}

async fn state(rec: &mut Recorder<'_>, sb: &Sandbox) {
    let named = || with_project(sb, json!({"name": C1}));
    rec.check(
        "incus_instance_state_get",
        "success: stopped",
        named(),
        Expect::success().equals("/item/status", "Stopped"),
    )
    .await;
    let action = |action: &str, wait: u64| {
        with_project(
            sb,
            json!({"name": C1, "action": action, "wait_seconds": wait}),
        )
    };
    rec.check(
        "incus_instance_state_update",
        "start: completed",
        action("start", 60),
        Expect::status("completed"),
    )
    .await;
    rec.check(
        "incus_instance_state_update",
        "start while running: accepted, then failed",
        action("start", 60),
        Expect::status("failed"),
    )
    .await;
    rec.check(
        "incus_instance_state_get",
        "success: running",
        named(),
        Expect::success().equals("/item/status", "Running"),
    )
    .await;
    rec.check(
        "incus_instance_state_update",
        "freeze: completed",
        action("freeze", 30),
        Expect::status("completed"),
    )
    .await;
    rec.check(
        "incus_instance_exec",
        "frozen instance is a native 400",
        with_project(sb, json!({"name": C1, "command": ["true"]})),
        Expect::native(400),
    )
    .await;
    rec.check(
        "incus_instance_state_update",
        "unfreeze: completed",
        action("unfreeze", 30),
        Expect::status("completed"),
    )
    .await;
}

fn exec_input(sb: &Sandbox, fields: Value) -> Value {
    let mut input = with_project(sb, json!({"name": sb.workload}));
    if let (Some(target), Value::Object(extra)) = (input.as_object_mut(), fields) {
        target.extend(extra);
    }
    input
}

/// 512 KiB: the exec stream total of the small-stream connection.
const SMALL_STREAM_TOTAL: f64 = 512.0 * 1024.0;

async fn exec(rec: &mut Recorder<'_>, sb: &Sandbox) {
    let run = |fields: Value| exec_input(sb, fields);
    rec.check(
        "incus_instance_exec",
        "success: exit code, stdout and stderr",
        run(json!({"command": ["sh", "-c", "echo out; echo err >&2; exit 3"]})),
        Expect::status("completed")
            .equals("/exit_code", 3)
            .equals("/stdout/data", "out\n")
            .equals("/stderr/data", "err\n"),
    )
    .await;
    rec.check(
        "incus_instance_exec",
        "stdin reaches the command",
        run(json!({"command": ["cat"], "stdin": "hello stdin"})),
        Expect::success()
            .equals("/exit_code", 0)
            .equals("/stdout/data", "hello stdin"),
    )
    .await;
    rec.check(
        "incus_instance_exec",
        "environment and cwd",
        run(json!({"command": ["sh", "-c", "echo $FOO; pwd"], "environment": {"FOO": "bar"}, "cwd": "/tmp"})),
        Expect::success().equals("/stdout/data", "bar\n/tmp\n"),
    )
    .await;
    rec.check(
        "incus_instance_exec",
        "non-UTF-8 output comes back as base64",
        run(json!({"command": ["printf", "\\377\\376"]})),
        Expect::success()
            .equals("/stdout/encoding", "base64")
            .equals("/stdout/data", "//4="),
    )
    .await;
    rec.check(
        "incus_instance_exec",
        "output bound: first 64 KiB captured, the rest counted",
        run(json!({"command": ["sh", "-c", "yes | head -c 100000"]})),
        Expect::status("completed")
            .equals("/stdout/truncated", true)
            .equals("/stdout/captured_bytes", 65536)
            .equals("/stdout/bytes", 100000),
    )
    .await;
    rec.check_small_streams(
        "incus_instance_exec",
        "stream total bound: SIGKILL, output_limited",
        run(json!({"command": ["sh", "-c", "yes | head -c 2000000; sleep 30"]})),
        // Past the stream total, and stopped there rather than after the 30 s sleep.
        Expect::status("output_limited")
            .equals("/exit_code", 137)
            .equals("/stdout/captured_bytes", 65536)
            .at_least("/stdout/bytes", SMALL_STREAM_TOTAL + 1.0)
            .at_most("/duration_ms", 19_999.0),
    )
    .await;
    rec.check(
        "incus_instance_exec",
        "timeout: SIGKILL, timed_out with exit 137",
        run(json!({"command": ["sleep", "300"], "timeout_seconds": 2})),
        Expect::status("timed_out")
            .equals("/exit_code", 137)
            .at_least("/duration_ms", 2_000.0)
            .at_most("/duration_ms", 11_999.0),
    )
    .await;
}

/// What the probe of a running exec operation saw.
struct Probed {
    id: String,
    listed: (Value, Duration),
    got: (Value, Duration),
    waited: (Value, Duration),
    cancelled: (Value, Duration),
}

/// Finds the running exec operation while a slow command runs, and exercises the operation calls on it.
async fn operations(rec: &mut Recorder<'_>, sb: &Sandbox) {
    let target = &rec.targets().standard;
    let scopes = crate::recorder::all_scopes();
    let call = |operation: &'static str, input: Value| {
        let scopes = &scopes;
        async move {
            let asked = Instant::now();
            let output = target.call(operation, scopes, input).await;
            (output, asked.elapsed())
        }
    };
    let slow_input = with_project(
        sb,
        json!({"name": sb.workload, "command": ["sleep", "6"], "timeout_seconds": 30}),
    );
    let slow = call("incus_instance_exec", slow_input.clone());
    let probe = async {
        let mut found = None;
        let deadline = Instant::now() + Duration::from_secs(5);
        while found.is_none() && Instant::now() < deadline {
            let listed = call("incus_operation_list", with_project(sb, json!({}))).await;
            found = running_exec(&listed.0).map(|id| (id, listed));
            if found.is_none() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        let (id, listed) = found?;
        let by_id = json!({"operation_id": id});
        let got = call("incus_operation_get", by_id.clone()).await;
        let waited = call(
            "incus_operation_wait",
            json!({"operation_id": id, "wait_seconds": 1}),
        )
        .await;
        let cancelled = call("incus_operation_cancel", by_id).await;
        Some(Probed {
            id,
            listed,
            got,
            waited,
            cancelled,
        })
    };
    let ((slow_output, slow_elapsed), probed) = tokio::join!(slow, probe);
    let slow_error = slow_output["error"]["kind"].as_str().map(str::to_owned);
    rec.record_external(
        "incus_instance_exec",
        "a slow command completes",
        slow_input,
        slow_output,
        slow_elapsed,
        Expect::success().equals("/exit_code", 0),
    );
    let Some(probed) = probed else {
        let why = match slow_error {
            Some(kind) => format!("needs a running exec operation; exec answered {kind}"),
            None => "the running exec operation was not found in incus_operation_list within 5 s"
                .to_owned(),
        };
        for op in [
            "incus_operation_list",
            "incus_operation_get",
            "incus_operation_wait",
            "incus_operation_cancel",
        ] {
            rec.skip(op, "the running exec operation", &why);
        }
        mutation_outlasting_wait(rec, sb).await;
        return;
    };
    let id = probed.id;
    let by_id = json!({"operation_id": id});
    for (operation, name, input, (output, elapsed), expect) in [
        (
            "incus_operation_list",
            "success: lists the running exec operation",
            with_project(sb, json!({})),
            probed.listed,
            Expect::success().contains("/items", RUNNING_EXEC.clone()),
        ),
        (
            "incus_operation_get",
            "success: the running operation",
            by_id.clone(),
            probed.got,
            on_workload_member(sb, Expect::success().equals("/item/id", id.as_str())),
        ),
        (
            "incus_operation_wait",
            "a wait that outlasts wait_seconds reports running",
            json!({"operation_id": id, "wait_seconds": 1}),
            probed.waited,
            Expect::status("running").equals("/waited_seconds", 1),
        ),
        (
            "incus_operation_cancel",
            "not cancellable (may_cancel false): unsupported",
            by_id.clone(),
            probed.cancelled,
            Expect::status("unsupported"),
        ),
    ] {
        rec.record_external(operation, name, input, output, elapsed, expect);
    }
    rec.check(
        "incus_operation_wait",
        "a finished operation (within retention) is completed",
        json!({"operation_id": id, "wait_seconds": 10}),
        Expect::status("completed"),
    )
    .await;
    rec.check(
        "incus_operation_cancel",
        "a finished operation is already_final",
        by_id,
        Expect::status("already_final"),
    )
    .await;
    mutation_outlasting_wait(rec, sb).await;
}

/// A mutation with `wait_seconds: 0` reports running; a later operation wait sees it complete.
async fn mutation_outlasting_wait(rec: &mut Recorder<'_>, sb: &Sandbox) {
    let out = rec
        .check(
            "incus_instance_state_update",
            "restart with wait_seconds 0 reports running",
            with_project(
                sb,
                json!({"name": sb.workload, "action": "restart", "force": true, "wait_seconds": 0}),
            ),
            Expect::status("running").present("/operation_id"),
        )
        .await;
    let Some(id) = out["operation_id"].as_str().map(str::to_owned) else {
        for (op, name) in [
            ("incus_operation_get", "success: the restart operation"),
            (
                "incus_operation_list",
                "success: lists the restart operation",
            ),
            ("incus_operation_wait", "waits for the restart to complete"),
            (
                "incus_operation_cancel",
                "the finished restart is already_final",
            ),
        ] {
            rec.skip(op, name, "the restart gave no operation id");
        }
        return;
    };
    rec.check(
        "incus_operation_get",
        "success: the restart operation",
        json!({"operation_id": id}),
        on_workload_member(sb, Expect::success().equals("/item/id", id.as_str())),
    )
    .await;
    rec.check(
        "incus_operation_list",
        "success: lists the restart operation",
        with_project(sb, json!({})),
        Expect::success().contains("/items", json!({"id": id})),
    )
    .await;
    rec.check(
        "incus_operation_wait",
        "waits for the restart to complete",
        json!({"operation_id": id, "wait_seconds": 60}),
        Expect::status("completed"),
    )
    .await;
    rec.check(
        "incus_operation_cancel",
        "the finished restart is already_final",
        json!({"operation_id": id}),
        Expect::status("already_final"),
    )
    .await;
}

/// Clustered: the operation's `location` (the workload's member) passes through unchanged.
fn on_workload_member(sb: &Sandbox, expect: Expect) -> Expect {
    match &sb.workload_member {
        Some(member) => expect.equals("/item/location", member.as_str()),
        None => expect,
    }
}

/// How `incus_operation_list` shows an exec operation that is still running.
static RUNNING_EXEC: std::sync::LazyLock<Value> =
    std::sync::LazyLock::new(|| json!({"status": "Running", "description": "Executing command"}));

fn running_exec(listed: &Value) -> Option<String> {
    let wanted = RUNNING_EXEC.as_object()?;
    listed["items"].as_array()?.iter().find_map(|op| {
        let running = wanted.iter().all(|(k, v)| op.get(k) == Some(v));
        running
            .then(|| op["id"].as_str().map(str::to_owned))
            .flatten()
    })
}

async fn snapshots(rec: &mut Recorder<'_>, sb: &Sandbox) {
    let snap = |name: &str| {
        with_project(
            sb,
            json!({"instance": sb.workload, "snapshot": name, "wait_seconds": 60}),
        )
    };
    rec.check(
        "incus_instance_snapshot_create",
        "success: completed",
        snap("snap0"),
        Expect::status("completed"),
    )
    .await;
    rec.check(
        "incus_instance_snapshot_create",
        "duplicate name: accepted, then failed",
        snap("snap0"),
        Expect::status("failed"),
    )
    .await;
    rec.check(
        "incus_instance_snapshot_list",
        "success: lists snap0",
        with_project(sb, json!({"instance": sb.workload})),
        Expect::success().contains("/items", json!({"name": "snap0"})),
    )
    .await;
    rec.check(
        "incus_instance_snapshot_get",
        "success",
        with_project(sb, json!({"instance": sb.workload, "snapshot": "snap0"})),
        Expect::success().equals("/item/name", "snap0"),
    )
    .await;
    rec.check(
        "incus_instance_snapshot_get",
        "not found is a native 404",
        with_project(sb, json!({"instance": sb.workload, "snapshot": "nosnap"})),
        Expect::native(404),
    )
    .await;
    restore_and_delete_snapshot(rec, sb).await;
}

async fn restore_and_delete_snapshot(rec: &mut Recorder<'_>, sb: &Sandbox) {
    let confirmed = |snapshot: &str, confirm: &str| {
        with_project(
            sb,
            json!({"instance": sb.workload, "snapshot": snapshot, "wait_seconds": 60, "confirm": confirm}),
        )
    };
    let restore = "incus_instance_snapshot_restore";
    let snap0 = format!("{}/snap0", sb.workload);
    let nosnap = format!("{}/nosnap", sb.workload);
    rec.check(
        restore,
        "success with the exact confirm",
        confirmed("snap0", &snap0),
        Expect::status("completed"),
    )
    .await;
    rec.check(
        restore,
        "missing snapshot: accepted, then failed",
        confirmed("nosnap", &nosnap),
        Expect::status("failed"),
    )
    .await;
    let delete = "incus_instance_snapshot_delete";
    rec.check(
        delete,
        "success with the exact confirm",
        confirmed("snap0", &snap0),
        Expect::status("completed"),
    )
    .await;
    rec.check(
        delete,
        "again: native 404",
        confirmed("snap0", &snap0),
        Expect::native(404),
    )
    .await;
}

async fn volumes(rec: &mut Recorder<'_>, sb: &Sandbox) {
    rec.check(
        "incus_storage_volume_list",
        "success: the instance's volume",
        with_project(sb, json!({"pool": sb.pool})),
        Expect::success().contains("/items", json!({"name": C1})),
    )
    .await;
    rec.check(
        "incus_storage_volume_get",
        "success",
        with_project(
            sb,
            json!({"pool": sb.pool, "type": "container", "name": C1}),
        ),
        Expect::success().equals("/item/name", C1),
    )
    .await;
}

async fn remote(rec: &mut Recorder<'_>, sb: &Sandbox) {
    let Some((remote, alias)) = &sb.remote else {
        rec.skip(
            "incus_instance_create",
            "from a host-approved image remote",
            "no image remote configured (--image-remote NAME=URL)",
        );
        return;
    };
    let source = json!({"type": "image", "alias": alias, "remote": remote});
    rec.check(
        "incus_instance_create",
        "from a host-approved image remote",
        with_project(
            sb,
            json!({"name": "c-remote", "source": source, "wait_seconds": 60}),
        ),
        Expect::status("completed"),
    )
    .await;
    rec.check(
        "incus_instance_delete",
        "delete the instance from the remote image",
        with_project(
            sb,
            json!({"name": "c-remote", "confirm": "c-remote", "wait_seconds": 60}),
        ),
        Expect::status("completed"),
    )
    .await;
}

async fn delete_instance(rec: &mut Recorder<'_>, sb: &Sandbox) {
    let delete = || with_project(sb, json!({"name": C1, "wait_seconds": 60, "confirm": C1}));
    let op = "incus_instance_delete";
    rec.check(
        op,
        "running instance is a native 400",
        delete(),
        Expect::native(400),
    )
    .await;
    let stop = with_project(
        sb,
        json!({"name": C1, "action": "stop", "force": true, "wait_seconds": 60}),
    );
    rec.check(
        "incus_instance_state_update",
        "stop: completed",
        stop.clone(),
        Expect::status("completed"),
    )
    .await;
    rec.check(
        "incus_instance_state_update",
        "stop while stopped: accepted, then failed",
        stop,
        Expect::status("failed"),
    )
    .await;
    rec.check(
        op,
        "success with the exact confirm",
        delete(),
        Expect::status("completed"),
    )
    .await;
    rec.check(op, "again: native 404", delete(), Expect::native(404))
        .await;
}

async fn delete_image(rec: &mut Recorder<'_>, sb: &Sandbox) {
    let delete = |confirm: &str| {
        with_project(
            sb,
            json!({"fingerprint": sb.fingerprint, "confirm": confirm, "wait_seconds": 60}),
        )
    };
    let op = "incus_image_delete";
    rec.check(
        op,
        "short fingerprint: confirmation_mismatch",
        delete(&sb.fingerprint[..12]),
        Expect::error("confirmation_mismatch"),
    )
    .await;
    rec.check(
        op,
        "success with the full fingerprint",
        delete(&sb.fingerprint),
        Expect::status("completed"),
    )
    .await;
    rec.check(
        op,
        "again: native 404",
        delete(&sb.fingerprint),
        Expect::native(404),
    )
    .await;
}
