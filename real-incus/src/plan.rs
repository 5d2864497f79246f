//! What the acceptance runner checks beyond the data: the lifecycle of every operation is
//! `scenarios/lifecycle.json`, run with the other portable scenarios by the scenario engine
//! (`portable.rs`). Here stays only what a scenario file cannot say: the workload the checks run
//! on (an instance of the plan's own, or on a cluster the one the setup placed on another member),
//! where the cluster placed it, an exec on the connection with the small stream total, a running
//! exec operation probed while it runs and a mutation that outlasts its wait, and the configured
//! image remote. All are judged by the engine's matcher.
use std::time::{Duration, Instant};

use incus_conformance::scenario::format::Expect;
use incus_conformance::scenario::target::Target as _;
use serde_json::{json, Value};

use crate::recorder::{CheckSink, Recorder};
use crate::report::{Check, ServerAnswer};
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
    /// The instance the exec and operation checks run on: [`C1`], or on a cluster an
    /// instance the setup placed (`?target=`) on another member than the one the runner talks to,
    /// so that every one of those calls is forwarded.
    pub(crate) workload: String,
    /// Clustered: the member the workload lives on.
    pub(crate) workload_member: Option<String>,
}

/// The workload of a standalone daemon (created and started by the plan).
pub(crate) const C1: &str = "c1";

/// What the plan did: its checks, and the server's answers that chose which checks ran.
#[derive(Debug, Default)]
pub(crate) struct PlanRun {
    pub(crate) checks: Vec<Check>,
    pub(crate) answers: Vec<ServerAnswer>,
}

/// Runs the whole plan. Checks that depend on an earlier step that failed still run: they then fail
/// or are skipped with a reason, so that the report shows the whole picture.
/// `prefix` marks the progress lines (empty for the real daemon).
pub(crate) async fn run_plan(
    targets: &Targets,
    sandbox: &Sandbox,
    prefix: &'static str,
    sink: Option<CheckSink>,
) -> PlanRun {
    let mut recorder = Recorder::new(targets, prefix, sink);
    workload(&mut recorder, sandbox).await;
    small_streams(&mut recorder, sandbox).await;
    let answers = operations(&mut recorder, sandbox).await;
    remote(&mut recorder, sandbox).await;
    PlanRun {
        checks: recorder.checks,
        answers,
    }
}

fn with_project(sandbox: &Sandbox, fields: Value) -> Value {
    let mut input = fields;
    input["project"] = json!(sandbox.project);
    input
}

/// The workload, running: on a standalone daemon [`C1`], created and started here; on a cluster
/// the instance the setup placed and started on another member, listed there with its location.
async fn workload(recorder: &mut Recorder<'_>, sandbox: &Sandbox) {
    let Some(member) = &sandbox.workload_member else {
        let source = json!({"type": "image", "alias": sandbox.alias});
        recorder
            .check(
                "incus_instance_create",
                "the workload: completed",
                with_project(
                    sandbox,
                    json!({"name": C1, "source": source, "wait_seconds": 60}),
                ),
                Expect::status("completed"),
            )
            .await;
        recorder
            .check(
                "incus_instance_state_update",
                "start the workload: completed",
                with_project(
                    sandbox,
                    json!({"name": C1, "action": "start", "wait_seconds": 60}),
                ),
                Expect::status("completed"),
            )
            .await;
        return;
    };
    recorder
        .check(
            "incus_instance_list",
            "clustered: the workload is listed on its member",
            with_project(sandbox, json!({})),
            Expect::success().contains(
                "/items",
                json!({"name": sandbox.workload, "location": member}),
            ),
        )
        .await;
    recorder
        .check(
            "incus_instance_get",
            "clustered: the workload's location passes through",
            with_project(sandbox, json!({"name": sandbox.workload})),
            Expect::success()
                .equals("/item/location", member.as_str())
                .equals("/item/status", "Running"),
        )
        .await;
}

fn exec_input(sandbox: &Sandbox, fields: Value) -> Value {
    let mut input = with_project(sandbox, json!({"name": sandbox.workload}));
    if let (Some(target), Value::Object(extra)) = (input.as_object_mut(), fields) {
        target.extend(extra);
    }
    input
}

/// 512 KiB: the exec stream total of the small-stream connection.
const SMALL_STREAM_TOTAL: f64 = 512.0 * 1024.0;

/// The stream total is the connection's: only the runner's second connection has a small one.
async fn small_streams(recorder: &mut Recorder<'_>, sandbox: &Sandbox) {
    recorder
        .check_small_streams(
            "incus_instance_exec",
            "stream total bound: SIGKILL, output_limited",
            exec_input(
                sandbox,
                json!({"command": ["sh", "-c", "yes | head -c 2000000; sleep 30"]}),
            ),
            // Past the stream total, and stopped there rather than after the 30 s sleep.
            Expect::status("output_limited")
                .equals("/exit_code", 137)
                .equals("/stdout/captured_bytes", 65536)
                .at_least("/stdout/bytes", SMALL_STREAM_TOTAL + 1.0)
                .at_most("/duration_ms", 19_999.0),
        )
        .await;
}

/// What the probe of a running exec operation saw.
struct Probed {
    id: String,
    listed: (Value, Duration),
    got: (Value, Duration),
    waited: (Value, Duration),
    /// The server's `may_cancel` of the running exec operation, as `incus_operation_get` read it.
    cancellable: bool,
    /// The cancel of the running exec, asked only when the server said it cannot be cancelled
    /// (asked of a cancellable one, it would end the command the check waits on).
    cancelled: Option<(Value, Duration)>,
}

/// A call of one operation with every scope, timed.
async fn timed_call(
    target: &crate::targets::Target,
    operation: &'static str,
    input: Value,
) -> (Value, Duration) {
    let asked = Instant::now();
    let output = target
        .call(operation, &crate::recorder::all_scopes(), input)
        .await;
    (output, asked.elapsed())
}

/// Lists the project's operations until a running exec shows (at most 5 s): its id and the listing.
async fn find_running_exec(
    target: &crate::targets::Target,
    sandbox: &Sandbox,
) -> Option<(String, (Value, Duration))> {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        let listed = timed_call(
            target,
            "incus_operation_list",
            with_project(sandbox, json!({})),
        )
        .await;
        if let Some(id) = running_exec(&listed.0) {
            return Some((id, listed));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

/// The exec of `sleep SECONDS` on the workload, within a 30 s duration bound.
fn sleeping(sandbox: &Sandbox, seconds: u32) -> Value {
    exec_input(
        sandbox,
        json!({"command": ["sleep", seconds.to_string()], "timeout_seconds": 30}),
    )
}

/// What the server answered about its running exec operations.
const EXEC_CANCELLABLE: &str = "Can a running exec operation be cancelled? (its may_cancel, as \
     incus_operation_get of the plan's running exec read it; no API extension says so: Incus 7.0 made \
     exec operations cancellable, a cancel closing the command's control channel, which kills it)";

/// Finds the running exec operation while a slow command runs, and exercises the operation calls on
/// it; returns what the server answered that chose the checks.
async fn operations(recorder: &mut Recorder<'_>, sandbox: &Sandbox) -> Vec<ServerAnswer> {
    let target = &recorder.targets().standard;
    let slow_input = sleeping(sandbox, 6);
    let slow = timed_call(target, "incus_instance_exec", slow_input.clone());
    let probe = async {
        let (id, listed) = find_running_exec(target, sandbox).await?;
        let by_id = json!({"operation_id": id});
        let got = timed_call(target, "incus_operation_get", by_id.clone()).await;
        let waited = timed_call(
            target,
            "incus_operation_wait",
            json!({"operation_id": id, "wait_seconds": 1}),
        )
        .await;
        let cancellable = got.0["item"]["may_cancel"] == Value::Bool(true);
        let cancelled = if cancellable {
            None
        } else {
            Some(timed_call(target, "incus_operation_cancel", by_id).await)
        };
        Some(Probed {
            id,
            listed,
            got,
            waited,
            cancellable,
            cancelled,
        })
    };
    let ((slow_output, slow_elapsed), probed) = tokio::join!(slow, probe);
    let slow_error = slow_output["error"]["kind"].as_str().map(str::to_owned);
    recorder.record_external(
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
            recorder.skip(op, "the running exec operation", &why);
        }
        mutation_outlasting_wait(recorder, sandbox).await;
        return Vec::new();
    };
    let id = probed.id;
    let by_id = json!({"operation_id": id});
    for (operation, name, input, (output, elapsed), expect) in [
        (
            "incus_operation_list",
            "success: lists the running exec operation",
            with_project(sandbox, json!({})),
            probed.listed,
            Expect::success().contains("/items", RUNNING_EXEC.clone()),
        ),
        (
            "incus_operation_get",
            "success: the running operation",
            by_id.clone(),
            probed.got,
            on_workload_member(sandbox, Expect::success().equals("/item/id", id.as_str())),
        ),
        (
            "incus_operation_wait",
            "a wait that outlasts wait_seconds reports running",
            json!({"operation_id": id, "wait_seconds": 1}),
            probed.waited,
            Expect::status("running").equals("/waited_seconds", 1),
        ),
    ] {
        recorder.record_external(operation, name, input, output, elapsed, expect);
    }
    let answer = ServerAnswer {
        question: EXEC_CANCELLABLE.to_owned(),
        answer: if probed.cancellable {
            "yes (may_cancel true): the cancel is checked on an exec of its own, so that the slow \
             command still completes"
        } else {
            "no (may_cancel false): the cancel of the running exec is unsupported"
        }
        .to_owned(),
        seen_in: "incus_operation_get: success: the running operation".to_owned(),
    };
    if let Some((output, elapsed)) = probed.cancelled {
        recorder.record_external(
            "incus_operation_cancel",
            "not cancellable (the server's may_cancel is false): unsupported",
            by_id.clone(),
            output,
            elapsed,
            Expect::status("unsupported"),
        );
    }
    recorder
        .check(
            "incus_operation_wait",
            "a finished operation (within retention) is completed",
            json!({"operation_id": id, "wait_seconds": 10}),
            Expect::status("completed"),
        )
        .await;
    recorder
        .check(
            "incus_operation_cancel",
            "a finished operation is already_final",
            by_id,
            Expect::status("already_final"),
        )
        .await;
    if probed.cancellable {
        cancelled_exec(recorder, sandbox).await;
    }
    mutation_outlasting_wait(recorder, sandbox).await;
    vec![answer]
}

/// Where the server's exec operations can be cancelled (`may_cancel` true), the cancel of a running
/// exec is `requested` (one DELETE accepted), and the command ends then, long before its own end:
/// Incus kills it and records no exit code (the operation is `Cancelled`, and later `Failure`), so
/// the exec is `failed` without one, and a wait on its operation sees it `failed`.
async fn cancelled_exec(recorder: &mut Recorder<'_>, sandbox: &Sandbox) {
    let target = &recorder.targets().standard;
    let input = sleeping(sandbox, 30);
    let exec = timed_call(target, "incus_instance_exec", input.clone());
    let cancel = async {
        let (id, _) = find_running_exec(target, sandbox).await?;
        let cancelled = timed_call(
            target,
            "incus_operation_cancel",
            json!({"operation_id": id}),
        )
        .await;
        Some((id, cancelled))
    };
    let ((exec_output, exec_elapsed), cancelled) = tokio::join!(exec, cancel);
    let Some((id, (cancel_output, cancel_elapsed))) = cancelled else {
        recorder.record_external(
            "incus_instance_exec",
            "a cancelled command ends: failed, no exit code",
            input,
            exec_output,
            exec_elapsed,
            Expect::status("failed"),
        );
        recorder.skip(
            "incus_operation_cancel",
            "cancellable (the server's may_cancel is true): requested",
            "the running exec operation was not found in incus_operation_list within 5 s",
        );
        return;
    };
    recorder.record_external(
        "incus_operation_cancel",
        "cancellable (the server's may_cancel is true): requested",
        json!({"operation_id": id}),
        cancel_output,
        cancel_elapsed,
        Expect::status("requested").equals("/operation_id", id.as_str()),
    );
    recorder.record_external(
        "incus_instance_exec",
        "a cancelled command ends: failed, no exit code",
        input,
        exec_output,
        exec_elapsed,
        Expect::status("failed")
            .equals("/exit_code", Value::Null)
            .equals("/operation_id", id.as_str())
            .present("/reason")
            .at_most("/duration_ms", 19_999.0),
    );
    recorder
        .check(
            "incus_operation_wait",
            "the cancelled exec's operation is failed",
            json!({"operation_id": id, "wait_seconds": 10}),
            Expect::status("failed"),
        )
        .await;
}

/// A mutation with `wait_seconds: 0` reports running; a later operation wait sees it complete.
async fn mutation_outlasting_wait(recorder: &mut Recorder<'_>, sandbox: &Sandbox) {
    let out = recorder
        .check(
            "incus_instance_state_update",
            "restart with wait_seconds 0 reports running",
            with_project(
                sandbox,
                json!({"name": sandbox.workload, "action": "restart", "force": true, "wait_seconds": 0}),
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
            recorder.skip(op, name, "the restart gave no operation id");
        }
        return;
    };
    recorder
        .check(
            "incus_operation_get",
            "success: the restart operation",
            json!({"operation_id": id}),
            on_workload_member(sandbox, Expect::success().equals("/item/id", id.as_str())),
        )
        .await;
    recorder
        .check(
            "incus_operation_list",
            "success: lists the restart operation",
            with_project(sandbox, json!({})),
            Expect::success().contains("/items", json!({"id": id})),
        )
        .await;
    recorder
        .check(
            "incus_operation_wait",
            "waits for the restart to complete",
            json!({"operation_id": id, "wait_seconds": 60}),
            Expect::status("completed"),
        )
        .await;
    recorder
        .check(
            "incus_operation_cancel",
            "the finished restart is already_final",
            json!({"operation_id": id}),
            Expect::status("already_final"),
        )
        .await;
}

/// Clustered: the operation's `location` (the workload's member) passes through unchanged.
fn on_workload_member(sandbox: &Sandbox, expect: Expect) -> Expect {
    match &sandbox.workload_member {
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

async fn remote(recorder: &mut Recorder<'_>, sandbox: &Sandbox) {
    let Some((remote, alias)) = &sandbox.remote else {
        recorder.skip(
            "incus_instance_create",
            "from a host-approved image remote",
            "no image remote configured (--image-remote NAME=URL)",
        );
        return;
    };
    let source = json!({"type": "image", "alias": alias, "remote": remote});
    recorder
        .check(
            "incus_instance_create",
            "from a host-approved image remote",
            with_project(
                sandbox,
                json!({"name": "c-remote", "source": source, "wait_seconds": 60}),
            ),
            Expect::status("completed"),
        )
        .await;
    recorder
        .check(
            "incus_instance_delete",
            "delete the instance from the remote image",
            with_project(
                sandbox,
                json!({"name": "c-remote", "confirm": "c-remote", "wait_seconds": 60}),
            ),
            Expect::status("completed"),
        )
        .await;
}
