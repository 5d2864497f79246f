//! The acceptance plan: every operation's success path and the error paths a real daemon can show, in
//! an order where each step prepares the next (create, start, exec, snapshot, restore, stop, delete).
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::operations::Operations;
use crate::recorder::{field_is, items_contain, CheckSink, Expect, Recorder};

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
}

/// The main test instance (created, started, snapshotted, deleted).
const C1: &str = "c1";
/// A fingerprint that no image has.
const MISSING_FP: &str = "00000000000000000000000000000000000000000000000000000000000000ff";

/// Runs the whole plan. Checks that depend on an earlier step that failed still run: they then fail
/// or are skipped with a reason, so that the report shows the whole picture.
/// `prefix` marks the progress lines (empty for the real daemon).
pub(crate) async fn run_plan(
    ops: &dyn Operations,
    sandbox: &Sandbox,
    prefix: &'static str,
    sink: Option<CheckSink>,
) -> Vec<crate::report::Check> {
    let mut rec = Recorder::new(ops, prefix, sink);
    let sb = sandbox;
    core_checks(&mut rec).await;
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

async fn core_checks(rec: &mut Recorder<'_>) {
    rec.check(
        "incus_server_get",
        "success: the trusted server object",
        json!({}),
        Expect::ok(|v| field_is(v, "/item/api_version", &json!("1.0"))),
    )
    .await;
    rec.check_scoped(
        "incus_server_get",
        "scope_missing without incus.read",
        json!({}),
        &["incus.write"],
        Expect::error("scope_missing"),
    )
    .await;
    rec.check(
        "incus_instance_copy",
        "unknown_operation for a deferred operation",
        json!({}),
        Expect::error("unknown_operation"),
    )
    .await;
}

async fn inventory(rec: &mut Recorder<'_>, sb: &Sandbox) {
    let project = sb.project.clone();
    rec.check(
        "incus_project_list",
        "success: lists the acceptance project",
        json!({}),
        Expect::ok(move |v| items_contain(v, "name", &project)),
    )
    .await;
    let project = sb.project.clone();
    rec.check(
        "incus_project_get",
        "success",
        json!({"name": sb.project}),
        Expect::ok(move |v| field_is(v, "/item/name", &json!(project))),
    )
    .await;
    rec.check(
        "incus_project_get",
        "not found is a native 404",
        json!({"name": format!("{}-missing", sb.project)}),
        Expect::native(404),
    )
    .await;
    rec.check(
        "incus_profile_list",
        "success: the project's default profile",
        with_project(sb, json!({})),
        Expect::ok(|v| items_contain(v, "name", "default")),
    )
    .await;
    rec.check(
        "incus_profile_get",
        "success: default profile has the root disk",
        with_project(sb, json!({"name": "default"})),
        Expect::ok(|v| field_is(v, "/item/devices/root/type", &json!("disk"))),
    )
    .await;
    rec.check(
        "incus_profile_get",
        "not found is a native 404",
        with_project(sb, json!({"name": "no-such-profile"})),
        Expect::native(404),
    )
    .await;
    let networks = rec
        .check(
            "incus_network_list",
            "success",
            with_project(sb, json!({})),
            Expect::ok(|v| {
                v["items"]
                    .as_array()
                    .map(|_| ())
                    .ok_or_else(|| "no items".into())
            }),
        )
        .await;
    match networks["items"].get(0).and_then(|n| n["name"].as_str()) {
        Some(name) => {
            let wanted = json!(name);
            rec.check(
                "incus_network_get",
                "success: the first listed network",
                with_project(sb, json!({"name": name})),
                Expect::ok(move |v| field_is(v, "/item/name", &wanted)),
            )
            .await;
        }
        None => rec.skip(
            "incus_network_get",
            "success",
            "the network list was empty or failed",
        ),
    }
    rec.check(
        "incus_network_get",
        "not found is a native 404",
        with_project(sb, json!({"name": "nonet0"})),
        Expect::native(404),
    )
    .await;
    let pool = sb.pool.clone();
    rec.check(
        "incus_storage_pool_list",
        "success: lists the pool",
        json!({}),
        Expect::ok(move |v| items_contain(v, "name", &pool)),
    )
    .await;
    let pool = sb.pool.clone();
    rec.check(
        "incus_storage_pool_get",
        "success",
        json!({"pool": sb.pool}),
        Expect::ok(move |v| field_is(v, "/item/name", &json!(pool))),
    )
    .await;
    rec.check(
        "incus_storage_pool_get",
        "not found is a native 404",
        json!({"pool": "no-such-pool"}),
        Expect::native(404),
    )
    .await;
}

async fn images(rec: &mut Recorder<'_>, sb: &Sandbox) {
    let fp = sb.fingerprint.clone();
    rec.check(
        "incus_image_list",
        "success: lists the test image",
        with_project(sb, json!({})),
        Expect::ok(move |v| items_contain(v, "fingerprint", &fp)),
    )
    .await;
    let fp = sb.fingerprint.clone();
    rec.check(
        "incus_image_get",
        "success",
        with_project(sb, json!({"fingerprint": sb.fingerprint})),
        Expect::ok(move |v| field_is(v, "/item/fingerprint", &json!(fp))),
    )
    .await;
    rec.check(
        "incus_image_get",
        "not found is a native 404",
        with_project(sb, json!({"fingerprint": MISSING_FP})),
        Expect::native(404),
    )
    .await;
    let alias = sb.alias.clone();
    rec.check(
        "incus_image_alias_list",
        "success: lists the test alias",
        with_project(sb, json!({})),
        Expect::ok(move |v| items_contain(v, "name", &alias)),
    )
    .await;
}

fn image_source(sb: &Sandbox) -> Value {
    json!({"type": "image", "alias": sb.alias})
}

async fn create(rec: &mut Recorder<'_>, sb: &Sandbox) {
    rec.check(
        "incus_instance_list",
        "success: empty project",
        with_project(sb, json!({})),
        Expect::ok(|v| field_is(v, "/count", &json!(0))),
    )
    .await;
    rec.check(
        "incus_instance_create",
        "success: completed",
        with_project(
            sb,
            json!({"name": C1, "source": image_source(sb), "wait_seconds": 60}),
        ),
        Expect::status("completed"),
    )
    .await;
    rec.check(
        "incus_instance_create",
        "duplicate name: accepted, then failed",
        with_project(
            sb,
            json!({"name": C1, "source": image_source(sb), "wait_seconds": 60}),
        ),
        Expect::status("failed"),
    )
    .await;
    rec.check(
        "incus_instance_create",
        "unknown image alias: accepted, then failed",
        with_project(
            sb,
            json!({"name": "c-noimage", "source": {"type": "image", "alias": "no-such-alias"}, "wait_seconds": 60}),
        ),
        Expect::status("failed"),
    )
    .await;
    rec.check(
        "incus_instance_create",
        "unapproved image remote is refused before any request",
        with_project(
            sb,
            json!({"name": "c-remote", "source": {"type": "image", "alias": "x", "remote": "not-approved"}}),
        ),
        Expect::error("unknown_remote"),
    )
    .await;
    rec.check(
        "incus_instance_create",
        "restricted config is refused",
        with_project(
            sb,
            json!({"name": "c-priv", "source": image_source(sb), "config": {"security.privileged": "true"}}),
        ),
        Expect::error("restricted_input"),
    )
    .await;
}

async fn inspect_instance(rec: &mut Recorder<'_>, sb: &Sandbox) {
    rec.check(
        "incus_instance_list",
        "success: the created instance",
        with_project(sb, json!({})),
        Expect::ok(|v| {
            field_is(v, "/count", &json!(1)).and_then(|()| items_contain(v, "name", C1))
        }),
    )
    .await;
    rec.check(
        "incus_instance_get",
        "success with the native ETag",
        with_project(sb, json!({"name": C1})),
        Expect::ok(|v| {
            field_is(v, "/item/name", &json!(C1))?;
            v["etag"]
                .as_str()
                .map(|_| ())
                .ok_or_else(|| "no etag string".into())
        }),
    )
    .await;
    rec.check(
        "incus_instance_get",
        "not found is a native 404",
        with_project(sb, json!({"name": "no-such-instance"})),
        Expect::native(404),
    )
    .await;
}

async fn update(rec: &mut Recorder<'_>, sb: &Sandbox) {
    let got = rec
        .check(
            "incus_instance_get",
            "read the ETag for an update",
            with_project(sb, json!({"name": C1})),
            Expect::ok(|_| Ok(())),
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
        Expect::ok(|v| {
            field_is(v, "/status", &json!("completed"))
                .and_then(|()| field_is(v, "/etag_source", &json!("input")))
        }),
    )
    .await;
    rec.check(
        "incus_instance_update",
        "success reading the ETag first",
        with_project(
            sb,
            json!({"name": C1, "config": {"user.acceptance": "1"}, "description": "acceptance: updated"}),
        ),
        Expect::ok(|v| field_is(v, "/status", &json!("completed")).and_then(|()| field_is(v, "/etag_source", &json!("read")))),
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
        Expect::ok(|v| field_is(v, "/item/config/user.acceptance", &json!("1"))),
    )
    .await;
}

async fn state(rec: &mut Recorder<'_>, sb: &Sandbox) {
    rec.check(
        "incus_instance_state_get",
        "success: stopped",
        with_project(sb, json!({"name": C1})),
        Expect::ok(|v| field_is(v, "/item/status", &json!("Stopped"))),
    )
    .await;
    rec.check(
        "incus_instance_state_get",
        "not found is a native 404",
        with_project(sb, json!({"name": "no-such-instance"})),
        Expect::native(404),
    )
    .await;
    let start = |wait: u64| {
        with_project(
            sb,
            json!({"name": C1, "action": "start", "wait_seconds": wait}),
        )
    };
    rec.check(
        "incus_instance_state_update",
        "start: completed",
        start(60),
        Expect::status("completed"),
    )
    .await;
    rec.check(
        "incus_instance_state_update",
        "start while running: accepted, then failed",
        start(60),
        Expect::status("failed"),
    )
    .await;
    rec.check(
        "incus_instance_state_update",
        "not found is a native 404",
        with_project(sb, json!({"name": "no-such-instance", "action": "start"})),
        Expect::native(404),
    )
    .await;
    rec.check(
        "incus_instance_state_get",
        "success: running",
        with_project(sb, json!({"name": C1})),
        Expect::ok(|v| field_is(v, "/item/status", &json!("Running"))),
    )
    .await;
    let action = |a: &str| with_project(sb, json!({"name": C1, "action": a, "wait_seconds": 30}));
    rec.check(
        "incus_instance_state_update",
        "freeze: completed",
        action("freeze"),
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
        action("unfreeze"),
        Expect::status("completed"),
    )
    .await;
}

fn exec_input(sb: &Sandbox, fields: Value) -> Value {
    let mut input = with_project(sb, json!({"name": C1}));
    if let (Some(target), Value::Object(extra)) = (input.as_object_mut(), fields) {
        target.extend(extra);
    }
    input
}

fn stream(pointer: &'static str, data: &'static str) -> impl Fn(&Value) -> Result<(), String> {
    move |v| field_is(v, &format!("{pointer}/data"), &json!(data))
}

async fn exec(rec: &mut Recorder<'_>, sb: &Sandbox) {
    let run = |fields: Value| exec_input(sb, fields);
    let out = stream("/stdout", "out\n");
    let err = stream("/stderr", "err\n");
    rec.check(
        "incus_instance_exec",
        "success: exit code, stdout and stderr",
        run(json!({"command": ["sh", "-c", "echo out; echo err >&2; exit 3"]})),
        Expect::ok(move |v| {
            field_is(v, "/status", &json!("completed"))?;
            field_is(v, "/exit_code", &json!(3))?;
            out(v)?;
            err(v)
        }),
    )
    .await;
    let echoed = stream("/stdout", "hello stdin");
    rec.check(
        "incus_instance_exec",
        "stdin reaches the command",
        run(json!({"command": ["cat"], "stdin": "hello stdin"})),
        Expect::ok(move |v| field_is(v, "/exit_code", &json!(0)).and_then(|()| echoed(v))),
    )
    .await;
    let env = stream("/stdout", "bar\n/tmp\n");
    rec.check(
        "incus_instance_exec",
        "environment and cwd",
        run(json!({"command": ["sh", "-c", "echo $FOO; pwd"], "environment": {"FOO": "bar"}, "cwd": "/tmp"})),
        Expect::ok(env),
    )
    .await;
    rec.check(
        "incus_instance_exec",
        "non-UTF-8 output comes back as base64",
        run(json!({"command": ["printf", "\\377\\376"]})),
        Expect::ok(|v| {
            field_is(v, "/stdout/encoding", &json!("base64"))?;
            field_is(v, "/stdout/data", &json!("//4="))
        }),
    )
    .await;
    rec.check(
        "incus_instance_exec",
        "output bound: first 64 KiB captured, the rest counted",
        run(json!({"command": ["sh", "-c", "yes | head -c 100000"]})),
        Expect::ok(|v| {
            field_is(v, "/status", &json!("completed"))?;
            field_is(v, "/stdout/truncated", &json!(true))?;
            field_is(v, "/stdout/captured_bytes", &json!(65536))?;
            field_is(v, "/stdout/bytes", &json!(100000))
        }),
    )
    .await;
    rec.check_small_streams(
        "incus_instance_exec",
        "stream total bound: SIGKILL, output_limited",
        run(json!({"command": ["sh", "-c", "yes | head -c 2000000; sleep 30"]})),
        Expect::ok(|v| {
            field_is(v, "/status", &json!("output_limited"))?;
            field_is(v, "/exit_code", &json!(137))?;
            field_is(v, "/stdout/captured_bytes", &json!(65536))?;
            let seen = v["stdout"]["bytes"].as_u64().ok_or("no stdout.bytes")?;
            let ms = v["duration_ms"].as_u64().ok_or("no duration_ms")?;
            if seen <= 512 * 1024 {
                return Err(format!(
                    "stdout.bytes {seen} is within the 512 KiB stream total"
                ));
            }
            if ms >= 20_000 {
                return Err(format!(
                    "duration_ms {ms}: the command was not stopped at the stream total"
                ));
            }
            Ok(())
        }),
    )
    .await;
    rec.check(
        "incus_instance_exec",
        "timeout: SIGKILL, timed_out with exit 137",
        run(json!({"command": ["sleep", "300"], "timeout_seconds": 2})),
        Expect::ok(|v| {
            field_is(v, "/status", &json!("timed_out"))?;
            field_is(v, "/exit_code", &json!(137))?;
            let ms = v["duration_ms"].as_u64().ok_or("no duration_ms")?;
            if (2000..12000).contains(&ms) {
                Ok(())
            } else {
                Err(format!("duration_ms {ms} is not between 2 s and 12 s"))
            }
        }),
    )
    .await;
    rec.check(
        "incus_instance_exec",
        "not found is a native 404",
        with_project(sb, json!({"name": "no-such-instance", "command": ["true"]})),
        Expect::native(404),
    )
    .await;
}

/// Finds the running exec operation while a slow command runs, and exercises the operation calls on it.
async fn operations(rec: &mut Recorder<'_>, sb: &Sandbox) {
    let ops = rec.operations();
    let slow_input = with_project(
        sb,
        json!({"name": C1, "command": ["sleep", "6"], "timeout_seconds": 30}),
    );
    let started = Instant::now();
    let slow = ops.run(
        "incus_instance_exec",
        slow_input.clone(),
        crate::operations::ALL_SCOPES,
    );
    let probe = async {
        let mut found = None;
        let deadline = Instant::now() + Duration::from_secs(5);
        while found.is_none() && Instant::now() < deadline {
            let asked = Instant::now();
            let listed = ops
                .run(
                    "incus_operation_list",
                    with_project(sb, json!({})),
                    crate::operations::ALL_SCOPES,
                )
                .await;
            let millis = asked.elapsed().as_millis();
            found = running_exec(&listed).map(|id| (id, listed, millis));
            if found.is_none() {
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
        let (id, listed, list_ms) = found?;
        let get = ops
            .run(
                "incus_operation_get",
                json!({"operation_id": id}),
                crate::operations::ALL_SCOPES,
            )
            .await;
        let wait = ops
            .run(
                "incus_operation_wait",
                json!({"operation_id": id, "wait_seconds": 1}),
                crate::operations::ALL_SCOPES,
            )
            .await;
        let cancel = ops
            .run(
                "incus_operation_cancel",
                json!({"operation_id": id}),
                crate::operations::ALL_SCOPES,
            )
            .await;
        Some((id, (listed, list_ms), get, wait, cancel))
    };
    let (slow_output, probed) = tokio::join!(slow, probe);
    let millis = started.elapsed().as_millis();
    let slow_error = slow_output["error"]["kind"].as_str().map(str::to_owned);
    rec.record_external(
        "incus_instance_exec",
        "a slow command completes",
        slow_input,
        slow_output,
        millis,
        Expect::ok(|v| field_is(v, "/exit_code", &json!(0))),
    );
    match probed {
        Some((id, (listed, list_ms), get, wait, cancel)) => {
            let want = json!(id);
            rec.record_external(
                "incus_operation_list",
                "success: lists the running exec operation",
                with_project(sb, json!({})),
                listed,
                list_ms,
                Expect::ok(|v| {
                    running_exec(v)
                        .map(|_| ())
                        .ok_or_else(|| "no running exec operation".into())
                }),
            );
            rec.record_external(
                "incus_operation_get",
                "success: the running operation",
                json!({"operation_id": id}),
                get,
                0,
                Expect::ok(move |v| field_is(v, "/item/id", &want)),
            );
            rec.record_external(
                "incus_operation_wait",
                "a wait that outlasts wait_seconds reports running",
                json!({"operation_id": id, "wait_seconds": 1}),
                wait,
                0,
                Expect::ok(|v| {
                    field_is(v, "/status", &json!("running"))
                        .and_then(|()| field_is(v, "/waited_seconds", &json!(1)))
                }),
            );
            rec.record_external(
                "incus_operation_cancel",
                "not cancellable (may_cancel false): unsupported",
                json!({"operation_id": id}),
                cancel,
                0,
                Expect::status("unsupported"),
            );
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
                json!({"operation_id": id}),
                Expect::status("already_final"),
            )
            .await;
        }
        None => {
            let why = match slow_error {
                Some(kind) => format!("needs a running exec operation; exec answered {kind}"),
                None => {
                    "the running exec operation was not found in incus_operation_list within 5 s"
                        .to_owned()
                }
            };
            for op in [
                "incus_operation_list",
                "incus_operation_get",
                "incus_operation_wait",
                "incus_operation_cancel",
            ] {
                rec.skip(op, "the running exec operation", &why);
            }
        }
    }
    let missing = "00000000-0000-4000-8000-000000000000";
    for op in [
        "incus_operation_get",
        "incus_operation_wait",
        "incus_operation_cancel",
    ] {
        rec.check(
            op,
            "not found is a native 404",
            json!({"operation_id": missing}),
            Expect::native(404),
        )
        .await;
    }
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
                json!({"name": C1, "action": "restart", "force": true, "wait_seconds": 0}),
            ),
            Expect::ok(|v| {
                field_is(v, "/status", &json!("running"))?;
                v["operation_id"]
                    .as_str()
                    .map(|_| ())
                    .ok_or_else(|| "no operation_id".into())
            }),
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
    let want = json!(id);
    rec.check(
        "incus_operation_get",
        "success: the restart operation",
        json!({"operation_id": id}),
        Expect::ok(move |v| field_is(v, "/item/id", &want)),
    )
    .await;
    let listed_id = id.clone();
    rec.check(
        "incus_operation_list",
        "success: lists the restart operation",
        with_project(sb, json!({})),
        Expect::ok(move |v| items_contain(v, "id", &listed_id)),
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

fn running_exec(listed: &Value) -> Option<String> {
    listed["items"].as_array()?.iter().find_map(|op| {
        let running = op["status"] == "Running" && op["description"] == "Executing command";
        running
            .then(|| op["id"].as_str().map(str::to_owned))
            .flatten()
    })
}

async fn snapshots(rec: &mut Recorder<'_>, sb: &Sandbox) {
    let snap = |name: &str| {
        with_project(
            sb,
            json!({"instance": C1, "snapshot": name, "wait_seconds": 60}),
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
        "incus_instance_snapshot_create",
        "instance not found is a native 404",
        with_project(sb, json!({"instance": "no-such-instance", "snapshot": "s"})),
        Expect::native(404),
    )
    .await;
    rec.check(
        "incus_instance_snapshot_list",
        "success: lists snap0",
        with_project(sb, json!({"instance": C1})),
        Expect::ok(|v| items_contain(v, "name", "snap0")),
    )
    .await;
    rec.check(
        "incus_instance_snapshot_get",
        "success",
        with_project(sb, json!({"instance": C1, "snapshot": "snap0"})),
        Expect::ok(|v| field_is(v, "/item/name", &json!("snap0"))),
    )
    .await;
    rec.check(
        "incus_instance_snapshot_get",
        "not found is a native 404",
        with_project(sb, json!({"instance": C1, "snapshot": "nosnap"})),
        Expect::native(404),
    )
    .await;
    restore_and_delete_snapshot(rec, sb).await;
}

async fn restore_and_delete_snapshot(rec: &mut Recorder<'_>, sb: &Sandbox) {
    let confirmed = |op_snap: &str, confirm: Option<&str>| {
        let mut input = with_project(
            sb,
            json!({"instance": C1, "snapshot": op_snap, "wait_seconds": 60}),
        );
        if let Some(c) = confirm {
            input["confirm"] = json!(c);
        }
        input
    };
    let restore = "incus_instance_snapshot_restore";
    rec.check(
        restore,
        "without confirm: confirmation_required",
        confirmed("snap0", None),
        Expect::error("confirmation_required"),
    )
    .await;
    rec.check(
        restore,
        "inferred consent \"yes\": confirmation_mismatch",
        confirmed("snap0", Some("yes")),
        Expect::error("confirmation_mismatch"),
    )
    .await;
    rec.check(
        restore,
        "success with the exact confirm",
        confirmed("snap0", Some("c1/snap0")),
        Expect::status("completed"),
    )
    .await;
    rec.check(
        restore,
        "missing snapshot: accepted, then failed",
        confirmed("nosnap", Some("c1/nosnap")),
        Expect::status("failed"),
    )
    .await;
    let delete = "incus_instance_snapshot_delete";
    rec.check(
        delete,
        "near miss confirm: confirmation_mismatch",
        confirmed("snap0", Some("c1/snap")),
        Expect::error("confirmation_mismatch"),
    )
    .await;
    rec.check(
        delete,
        "success with the exact confirm",
        confirmed("snap0", Some("c1/snap0")),
        Expect::status("completed"),
    )
    .await;
    rec.check(
        delete,
        "again: native 404",
        confirmed("snap0", Some("c1/snap0")),
        Expect::native(404),
    )
    .await;
}

async fn volumes(rec: &mut Recorder<'_>, sb: &Sandbox) {
    rec.check(
        "incus_storage_volume_list",
        "success: the instance's volume",
        with_project(sb, json!({"pool": sb.pool})),
        Expect::ok(|v| items_contain(v, "name", C1)),
    )
    .await;
    rec.check(
        "incus_storage_volume_get",
        "success",
        with_project(
            sb,
            json!({"pool": sb.pool, "type": "container", "name": C1}),
        ),
        Expect::ok(|v| field_is(v, "/item/name", &json!(C1))),
    )
    .await;
    rec.check(
        "incus_storage_volume_get",
        "not found is a native 404",
        with_project(
            sb,
            json!({"pool": sb.pool, "type": "custom", "name": "no-such-volume"}),
        ),
        Expect::native(404),
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
    let delete = |confirm: Option<&str>| {
        let mut input = with_project(sb, json!({"name": C1, "wait_seconds": 60}));
        if let Some(c) = confirm {
            input["confirm"] = json!(c);
        }
        input
    };
    let op = "incus_instance_delete";
    rec.check(
        op,
        "without confirm: confirmation_required",
        delete(None),
        Expect::error("confirmation_required"),
    )
    .await;
    rec.check(
        op,
        "wrong case: confirmation_mismatch",
        delete(Some("C1")),
        Expect::error("confirmation_mismatch"),
    )
    .await;
    rec.check(
        op,
        "running instance is a native 400",
        delete(Some(C1)),
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
        delete(Some(C1)),
        Expect::status("completed"),
    )
    .await;
    rec.check(
        op,
        "again: native 404",
        delete(Some(C1)),
        Expect::native(404),
    )
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
