//! The member-down checks on a real cluster: one member's daemon is killed (`SIGKILL`, by the PID
//! the caller gives) while an exec runs on an instance it owns, and the operations are called
//! through another member. The core must give the documented kinds: a native error carrying the
//! member's message for everything routed to the dead member, `running` (with the operation
//! identity) for the exec whose exit was never observed, success for everything on live members,
//! and nothing resent.
//!
//! It runs in a project of its own (`ioacc-...`), which it cannot remove while the member is down:
//! the caller restarts the member and removes it (`real-incus-acceptance --cleanup-only`), as
//! `ci/real-incus-cluster.sh` does. The judging functions are pure and tested without a cluster.
use std::path::PathBuf;
use std::time::{Duration, Instant};

use incus_conformance::scenario::format::Expect;
use incus_conformance::scenario::matcher;
use incus_conformance::scenario::target::{HostTarget, Target as _};
use incus_conformance::ReferenceHost;
use serde_json::{json, Value};

use crate::admin::Admin;
use crate::cluster::ClusterInfo;
use crate::endpoint::Endpoint;
use crate::recorder::{all_scopes, judged};
use crate::report::{Check, Outcome};
use crate::sandbox::{self, ImageSource, IMAGE_ALIAS};
use crate::targets;

/// What the member-down run needs.
#[derive(Debug, Clone)]
pub struct MemberDown {
    /// Unix socket of a member that stays up (the run talks only to it).
    pub socket: PathBuf,
    /// The member whose daemon is killed.
    pub victim: String,
    /// The PID of that member's `incusd`.
    pub victim_pid: u32,
    /// Static busybox for the test image.
    pub busybox: PathBuf,
}

/// The messages Incus gives for a request routed to a dead member, by phase (see the reference on
/// clusters): at once (connection refused), during the first 10 s (the event link), after that.
pub const MEMBER_DOWN_MESSAGES: [&str; 3] = [
    "Unable to connect to",
    "Missing event connection with target cluster member",
    "Server isn't ready yet",
];

/// A request routed to the dead member: a native error (HTTP 500) whose message is the member's.
pub fn is_member_down_error(output: &Value) -> Result<(), String> {
    let error = &output["error"];
    if error["kind"] != "native" || error["http_status"] != 500 {
        return Err(format!(
            "expected a native error with http_status 500, got {}",
            matcher::short(output)
        ));
    }
    let message = error["message"].as_str().unwrap_or_default();
    if MEMBER_DOWN_MESSAGES.iter().any(|m| message.contains(m)) {
        Ok(())
    } else {
        Err(format!(
            "the native message {message:?} is none of the member-down messages {MEMBER_DOWN_MESSAGES:?}"
        ))
    }
}

/// An operation the call's project does not list (one on a dead member, missing from the cluster's
/// list): the core answers it as an unknown id, the native 404 `Operation not found`, since it
/// cannot tell which project the operation belongs to (see SECURITY.md, operations of the call's
/// project only).
pub fn is_unlisted_operation(output: &Value) -> Result<(), String> {
    let error = &output["error"];
    if error["kind"] == "native"
        && error["http_status"] == 404
        && error["message"] == "Operation not found"
    {
        Ok(())
    } else {
        Err(format!(
            "expected the unknown-operation answer (native 404 Operation not found), got {}",
            matcher::short(output)
        ))
    }
}

/// The exec whose member died mid-run: its exit was never observed, so the result is `running` with
/// the operation identity (never `completed` with an exit code, never resent), or `uncertain` had
/// the streams not been attached.
pub fn is_unobserved_exec(output: &Value) -> Result<(), String> {
    let status = output["status"].as_str().unwrap_or_default();
    if !matches!(status, "running" | "uncertain") {
        return Err(format!(
            "expected running (exit not observed) or uncertain, got {}",
            matcher::short(output)
        ));
    }
    if output["operation_id"].as_str().is_none_or(str::is_empty) {
        return Err("the exec result has no operation_id".to_owned());
    }
    Ok(())
}

/// The instance list with a member down: it answers, the dead member's instances have
/// `status: "Error"` (112), the live ones their real state.
pub fn lists_dead_instance_in_error(output: &Value, dead: &str, live: &str) -> Result<(), String> {
    let items = output["items"]
        .as_array()
        .ok_or_else(|| format!("expected a list, got {}", matcher::short(output)))?;
    let find = |name: &str| items.iter().find(|i| i["name"] == name);
    let dead_item = find(dead).ok_or_else(|| format!("{dead} is not listed"))?;
    if dead_item["status"] != "Error" || dead_item["status_code"] != 112 {
        return Err(format!(
            "{dead} on the dead member is listed as {} ({}), expected Error (112)",
            dead_item["status"], dead_item["status_code"]
        ));
    }
    let live_item = find(live).ok_or_else(|| format!("{live} is not listed"))?;
    if live_item["status"] != "Running" {
        return Err(format!(
            "{live} on a live member is listed as {}",
            live_item["status"]
        ));
    }
    Ok(())
}

/// Instance names: distinctive, since every container's cgroup sits at the top of the host's
/// hierarchy (`lxc.payload.<project>_<name>`).
const ON_DEAD: &str = "md-dead";
const ON_LIVE: &str = "md-live";
const PLACED: &str = "md-placed";

/// The longest the run waits for the exec to show up, for the member to be seen Offline, and for
/// any one call.
const EXEC_VISIBLE: Duration = Duration::from_secs(15);
const OFFLINE_WITHIN: Duration = Duration::from_secs(60);
const CALL_BOUND: Duration = Duration::from_secs(120);

/// Runs the member-down checks; returns every check (failed ones say why) and the project it left
/// for the caller to remove once the member is back. Errors are set-up failures before the kill.
pub async fn run(setup: &MemberDown) -> Result<(Vec<Check>, String), String> {
    let endpoint = Endpoint::Unix(setup.socket.clone());
    let admin = Admin::new(endpoint).map_err(|e| e.to_string())?;
    let server = admin.server().await.map_err(|e| e.to_string())?;
    let members = admin
        .get("/1.0/cluster/members?recursion=1")
        .await
        .map_err(|e| e.to_string())?;
    let cluster = ClusterInfo::from_answers(&server, &members.metadata)
        .ok_or("the server is not clustered")?;
    if cluster.member == setup.victim {
        return Err(format!(
            "the run talks to {}, the member it would kill",
            cluster.member
        ));
    }
    let live = cluster
        .members
        .iter()
        .map(|m| m.name.as_str())
        .find(|m| *m != setup.victim && *m != cluster.member)
        .unwrap_or(cluster.member.as_str())
        .to_owned();
    let project = sandbox::random_project_name();
    eprintln!(
        "member-down: project {project}; {ON_DEAD} on {}, {ON_LIVE} on {live}, through {}",
        setup.victim, cluster.member
    );
    let source = ImageSource::Busybox(setup.busybox.clone());
    sandbox::prepare(&admin, &project, "default", &source, None)
        .await
        .map_err(|e| format!("setup: {e}"))?;
    for (name, member) in [(ON_DEAD, setup.victim.as_str()), (ON_LIVE, live.as_str())] {
        admin
            .launch_on(&project, name, IMAGE_ALIAS, member)
            .await
            .map_err(|e| format!("setup: {name} on {member}: {e}"))?;
    }
    let connection = targets::connection(targets::unix(&setup.socket), 90, None)?;
    let target = HostTarget::new(ReferenceHost::new(connection).default_project(&project), ());
    let mut run = Run {
        target: &target,
        checks: Vec::new(),
    };
    let killed = run.exec_while_killed(setup, &project).await?;
    run.routed_to_dead(&killed).await;
    run.live_members(&live, &setup.victim).await;
    wait_offline(&admin, &setup.victim, &mut run.checks).await;
    Ok((run.checks, project))
}

/// What is known after the kill.
struct Killed {
    /// The exec operation that was running on the dead member.
    operation_id: Option<String>,
}

struct Run<'a> {
    target: &'a HostTarget<ReferenceHost>,
    checks: Vec<Check>,
}

impl Run<'_> {
    async fn call(&self, operation: &str, input: Value) -> (Value, Duration) {
        let started = Instant::now();
        let output = match tokio::time::timeout(
            CALL_BOUND,
            self.target.call(operation, &all_scopes(), input),
        )
        .await
        {
            Ok(output) => output,
            Err(_) => {
                json!({"error": {"kind": "harness_timeout", "message": format!("no result within {CALL_BOUND:?}")}})
            }
        };
        (output, started.elapsed())
    }

    fn record(
        &mut self,
        operation: &str,
        name: &str,
        input: Value,
        (output, elapsed): (Value, Duration),
        verdict: Result<(), String>,
    ) {
        let verdict = verdict.and_then(|()| {
            let schema = self.target.output_schema(operation);
            let problems = matcher::schema_errors(&output, schema.as_ref());
            if problems.is_empty() {
                Ok(())
            } else {
                Err(problems.join("; "))
            }
        });
        let check = judged(operation, name, input, output, elapsed, verdict);
        let mark = if check.outcome == Outcome::Passed {
            "ok  "
        } else {
            "FAIL"
        };
        eprintln!(
            "  {mark}  member-down: {}: {} ({} ms)",
            check.operation, check.name, check.duration_ms
        );
        if let Some(problem) = &check.problem {
            eprintln!("        {problem}");
        }
        let answer = &check.output;
        let said = match answer["error"]["message"].as_str() {
            Some(message) => format!("native {}: {message}", answer["error"]["http_status"]),
            None => format!("status {}", answer["status"]),
        };
        eprintln!("        answer: {}", matcher::short(&Value::String(said)));
        self.checks.push(check);
    }

    async fn expect(&mut self, operation: &str, name: &str, input: Value, expect: Expect) -> Value {
        let answer = self.call(operation, input.clone()).await;
        // The output schema is checked by `record`, for every check.
        let expect = Expect {
            schema_valid: false,
            ..expect
        };
        let problems = matcher::mismatches(&expect, &answer.0, None);
        let verdict = if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("; "))
        };
        let output = answer.0.clone();
        self.record(operation, name, input, answer, verdict);
        output
    }

    /// An exec runs on the victim's instance; the victim is killed; the exec's result.
    async fn exec_while_killed(
        &mut self,
        setup: &MemberDown,
        project: &str,
    ) -> Result<Killed, String> {
        let input = json!({"name": ON_DEAD, "command": ["sleep", "60"], "timeout_seconds": 120});
        let exec = self.call("incus_instance_exec", input.clone());
        let kill = async {
            let deadline = Instant::now() + EXEC_VISIBLE;
            let mut operation_id = None;
            while operation_id.is_none() && Instant::now() < deadline {
                let (listed, _) = self
                    .call("incus_operation_list", json!({"project": project}))
                    .await;
                operation_id = listed["items"].as_array().and_then(|items| {
                    items
                        .iter()
                        .find(|op| {
                            op["status"] == "Running" && op["description"] == "Executing command"
                        })
                        .and_then(|op| op["id"].as_str().map(str::to_owned))
                });
                if operation_id.is_none() {
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
            eprintln!(
                "member-down: killing the incusd of {} (pid {}) mid-exec",
                setup.victim, setup.victim_pid
            );
            let killed = std::process::Command::new("kill")
                .args(["-KILL", &setup.victim_pid.to_string()])
                .status()
                .map_err(|e| format!("kill -KILL {}: {e}", setup.victim_pid))?;
            if !killed.success() {
                return Err(format!("kill -KILL {} failed: {killed}", setup.victim_pid));
            }
            // Right after the kill, before the cluster notices: the connection is refused.
            let at_once = self
                .call("incus_instance_get", json!({"name": ON_DEAD}))
                .await;
            Ok((operation_id, at_once))
        };
        let (answer, killed) = tokio::join!(exec, kill);
        let (operation_id, at_once) = killed?;
        let verdict = is_member_down_error(&at_once.0);
        self.record(
            "incus_instance_get",
            "right after the kill: instance on the dead member",
            json!({"name": ON_DEAD}),
            at_once,
            verdict,
        );
        let verdict = is_unobserved_exec(&answer.0);
        self.record(
            "incus_instance_exec",
            "member dies mid-exec: running with the operation identity",
            input,
            answer,
            verdict,
        );
        Ok(Killed { operation_id })
    }

    /// Everything routed to the dead member: a native error with the member's message.
    async fn routed_to_dead(&mut self, killed: &Killed) {
        let named = json!({"name": ON_DEAD});
        let calls = vec![
            (
                "incus_instance_get",
                "instance on the dead member",
                named.clone(),
            ),
            ("incus_instance_state_get", "its state", named.clone()),
            (
                "incus_instance_state_update",
                "stop it: refused before acceptance, not uncertain",
                json!({"name": ON_DEAD, "action": "stop", "force": true, "wait_seconds": 30}),
            ),
            (
                "incus_instance_exec",
                "exec on it: refused before acceptance",
                json!({"name": ON_DEAD, "command": ["true"]}),
            ),
            (
                "incus_instance_snapshot_create",
                "snapshot it: refused before acceptance",
                json!({"instance": ON_DEAD, "snapshot": "s1", "wait_seconds": 30}),
            ),
        ];
        for (operation, name, input) in calls {
            let answer = self.call(operation, input.clone()).await;
            let verdict = is_member_down_error(&answer.0);
            self.record(operation, name, input, answer, verdict);
        }
        // The dead member's operations are missing from the project's operation list, so the core
        // cannot tell which project one belongs to: get and wait answer it as an unknown id.
        if let Some(id) = &killed.operation_id {
            let unlisted = [
                (
                    "incus_operation_get",
                    "its exec operation: unlisted, so unknown",
                    json!({"operation_id": id}),
                ),
                (
                    "incus_operation_wait",
                    "a wait on its exec operation: unlisted, so unknown",
                    json!({"operation_id": id, "wait_seconds": 5}),
                ),
            ];
            for (operation, name, input) in unlisted {
                let answer = self.call(operation, input.clone()).await;
                let verdict = is_unlisted_operation(&answer.0);
                self.record(operation, name, input, answer, verdict);
            }
        }
        if let Some(id) = &killed.operation_id {
            let answer = self.call("incus_operation_list", json!({})).await;
            let listed = answer.0["items"]
                .as_array()
                .is_some_and(|items| items.iter().any(|op| op["id"] == id.as_str()));
            let verdict = if answer.0.get("error").is_some() {
                Err(format!(
                    "expected a list, got {}",
                    matcher::short(&answer.0)
                ))
            } else if listed {
                Err(format!("the dead member's operation {id} is still listed"))
            } else {
                Ok(())
            };
            self.record(
                "incus_operation_list",
                "answers; the dead member's operations are missing",
                json!({}),
                answer,
                verdict,
            );
        }
    }

    /// Live members answer normally; an untargeted create lands on a live member, once.
    async fn live_members(&mut self, live: &str, victim: &str) {
        let answer = self.call("incus_instance_list", json!({})).await;
        let verdict = lists_dead_instance_in_error(&answer.0, ON_DEAD, ON_LIVE);
        self.record(
            "incus_instance_list",
            "answers; the dead member's instance is in Error (112)",
            json!({}),
            answer,
            verdict,
        );
        self.expect(
            "incus_instance_get",
            "instance on a live member",
            json!({"name": ON_LIVE}),
            Expect::success().equals("/item/location", live),
        )
        .await;
        self.expect(
            "incus_instance_exec",
            "exec on a live member's instance",
            json!({"name": ON_LIVE, "command": ["echo", "alive"]}),
            Expect::status("completed").equals("/stdout/data", "alive\n"),
        )
        .await;
        self.expect(
            "incus_server_get",
            "the member talked to answers",
            json!({}),
            Expect::success(),
        )
        .await;
        self.expect(
            "incus_instance_create",
            "untargeted create: placed on a live member",
            json!({"name": PLACED, "source": {"type": "image", "alias": IMAGE_ALIAS}, "wait_seconds": 60}),
            Expect::status("completed"),
        )
        .await;
        let got = self
            .expect(
                "incus_instance_get",
                "the placed instance",
                json!({"name": PLACED}),
                Expect::success(),
            )
            .await;
        let location = got["item"]["location"].as_str().unwrap_or_default();
        let answer = self.call("incus_instance_list", json!({})).await;
        let placed = answer.0["items"].as_array().map_or(0, |items| {
            items.iter().filter(|i| i["name"] == PLACED).count()
        });
        let verdict = if location.is_empty() || location == victim {
            Err(format!("placed on {location:?}, expected a live member"))
        } else if placed != 1 {
            Err(format!("{PLACED} is listed {placed} times"))
        } else {
            Ok(())
        };
        self.record(
            "incus_instance_list",
            "the create was sent once and landed on a live member",
            json!({}),
            answer,
            verdict,
        );
        self.expect(
            "incus_instance_delete",
            "delete the placed instance",
            json!({"name": PLACED, "confirm": PLACED, "wait_seconds": 60}),
            Expect::status("completed"),
        )
        .await;
    }
}

/// The member shows `Offline` ("No heartbeat for ...") after the heartbeat threshold (20 s).
async fn wait_offline(admin: &Admin, victim: &str, checks: &mut Vec<Check>) {
    let started = Instant::now();
    let path = format!("/1.0/cluster/members/{}", crate::admin::enc(victim));
    let mut last = Value::Null;
    while started.elapsed() < OFFLINE_WITHIN {
        if let Ok(answer) = admin.get(&path).await {
            last = answer.metadata;
            if last["status"] == "Offline" {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let verdict = if last["status"] == "Offline" {
        Ok(())
    } else {
        Err(format!(
            "{victim} not Offline within {OFFLINE_WITHIN:?}: {}",
            matcher::short(&last)
        ))
    };
    let check = judged(
        "cluster",
        &format!("{victim} shows Offline after the heartbeat threshold (GET {path})"),
        Value::Null,
        last,
        started.elapsed(),
        verdict,
    );
    eprintln!(
        "  {}  member-down: {} ({} ms)",
        if check.outcome == Outcome::Passed {
            "ok  "
        } else {
            "FAIL"
        },
        check.name,
        check.duration_ms
    );
    checks.push(check);
}
