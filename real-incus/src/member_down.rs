//! The cluster scenarios on a real cluster: `scenarios/cluster/`, those without fake-only set-up,
//! through the conformance crate's scenario engine, as the fake cluster runs them. The calls go
//! through one member; the member that goes down is killed (`SIGKILL` of its `incusd`, by the PID
//! file of its directory) and brought back by the command that starts it again, which returns
//! once the cluster serves it (`ci/real-incus-cluster.sh start MEMBER`).
//!
//! It runs in a project of its own (`ioacc-...`), its instances removed between scenarios, and
//! brings back a member a failing scenario left down; the caller removes the project
//! (`real-incus-acceptance --cleanup-only`), as `ci/real-incus-cluster.sh` does.
use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use incus_conformance::scenario::format::{Moment, Scenario, REAL_CLUSTER_EXEC_TIMEOUT};
use incus_conformance::scenario::load;
use incus_conformance::scenario::run::{self, Context};
use incus_conformance::scenario::target::{BoxFuture, HostTarget, Members, Request, Target};
use incus_conformance::ReferenceHost;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::admin::{enc, Admin};
use crate::cleanup;
use crate::cluster::ClusterInfo;
use crate::endpoint::Endpoint;
use crate::portable::step_check;
use crate::report::{Check, Outcome};
use crate::sandbox::{self, ImageSource, SCENARIO_ALIAS};
use crate::targets;

/// What the member-down run needs.
#[derive(Debug, Clone)]
pub struct MemberDown {
    /// Unix socket of a member that stays up (the run talks only to it).
    pub socket: PathBuf,
    /// The member whose daemon goes down (`${down}`).
    pub victim: String,
    /// The cluster's directory: `MEMBER/incusd.pid` holds each member's daemon's PID.
    pub cluster_dir: PathBuf,
    /// The command that starts a member again and returns once the cluster serves it (the
    /// member's name is appended).
    pub start: String,
    /// Static busybox for the test image.
    pub busybox: PathBuf,
}

/// The longest the run waits for a call to reach the moment a member goes down at.
const MOMENT_BOUND: Duration = Duration::from_secs(20);

/// How often the operations are listed while waiting for that moment.
const MOMENT_POLL: Duration = Duration::from_millis(200);

/// Once the exec operation runs, how long the core is given to attach its streams (it does so
/// as soon as the daemon answers the exec request; the operation is listed from that answer on).
const STREAMS_ATTACHED: Duration = Duration::from_secs(1);

/// Runs every cluster scenario without fake-only set-up; returns a check per step (failed ones
/// say why) and the project it left for the caller to remove. Errors are set-up failures.
pub async fn run(setup: &MemberDown) -> Result<(Vec<Check>, String), String> {
    let admin = Admin::new(Endpoint::Unix(setup.socket.clone())).map_err(|e| e.to_string())?;
    let server = admin.server().await.map_err(|e| e.to_string())?;
    let members = admin
        .get("/1.0/cluster/members?recursion=1")
        .await
        .map_err(|e| e.to_string())?;
    let cluster = ClusterInfo::from_answers(&server, &members.metadata)
        .ok_or("the server is not clustered")?;
    let through = cluster.member.clone();
    if through == setup.victim {
        return Err(format!(
            "the run talks to {through}, the member it would kill"
        ));
    }
    let live = cluster
        .members
        .iter()
        .map(|m| m.name.clone())
        .find(|m| *m != setup.victim && *m != through)
        .ok_or("the cluster has no third member to stay up")?;
    let project = sandbox::random_project_name();
    eprintln!(
        "member-down: project {project}; through {through}, {} goes down, {live} stays up",
        setup.victim
    );
    let source = ImageSource::Busybox(setup.busybox.clone());
    sandbox::prepare(&admin, &project, "default", &source, None)
        .await
        .map_err(|e| format!("setup: {e}"))?;
    let connection = targets::connection(targets::unix(&setup.socket), 90, None)?;
    let target = RealCluster {
        calls: HostTarget::new(ReferenceHost::new(connection).default_project(&project), ()),
        admin: admin.clone(),
        project: project.clone(),
        setup: setup.clone(),
        through: through.clone(),
        down: Mutex::new(BTreeSet::new()),
    };
    let mut context = Context::discover(&target, &project, "default", SCENARIO_ALIAS).await;
    for (name, value) in [
        ("through", &through),
        ("down", &setup.victim),
        ("live", &live),
    ] {
        context.variables.insert(name.to_owned(), json!(value));
    }
    context
        .variables
        .insert("exec_timeout".into(), json!(REAL_CLUSTER_EXEC_TIMEOUT));
    context.clustered = true;
    context.journal_unchecked = true;
    let mut checks = Vec::new();
    for scenario in scenarios(&mut checks) {
        if let Err(e) = cleanup::clear_instances(&admin, &project).await {
            checks.push(failed(&scenario.name, &format!("reset before it: {e}")));
            continue;
        }
        let transcript = run::run_in(&scenario, &target, &context).await;
        for member in target.left_down() {
            eprintln!(
                "member-down: bringing back {member}, left down by scenario::{}",
                scenario.name
            );
            if let Err(e) = target.up(&member).await {
                return Err(format!("{member} could not be brought back: {e}"));
            }
        }
        let mark = if transcript.passed() { "ok  " } else { "FAIL" };
        eprintln!("  {mark}  member-down: scenario::{}", scenario.name);
        if let Err(failure) = transcript.verdict() {
            eprintln!("        {failure}");
        }
        checks.extend(transcript.steps.iter().map(|step| {
            let mut check = step_check(&scenario.name, step);
            if check.operation.is_empty() {
                check.operation = "cluster".to_owned();
            }
            check
        }));
    }
    Ok((checks, project))
}

/// The built-in cluster scenarios that need no fake-only set-up; a file that does not load is a
/// failed check.
fn scenarios(checks: &mut Vec<Check>) -> Vec<Scenario> {
    let mut found = Vec::new();
    for file in load::builtin_cluster() {
        match file.scenario {
            Ok(scenario) if scenario.fake.is_none() => found.push(scenario),
            Ok(_) => {}
            Err(e) => checks.push(failed(&file.stem, &e.to_string())),
        }
    }
    found
}

fn failed(scenario: &str, problem: &str) -> Check {
    Check {
        operation: "cluster".to_owned(),
        name: format!("scenario::{scenario}"),
        outcome: Outcome::Failed,
        duration_ms: 0,
        input: Value::Null,
        output: Value::Null,
        problem: Some(problem.to_owned()),
    }
}

/// The real cluster as a scenario's target: the core through one member, the admin client for
/// operator requests, members killed by PID and started again by command.
struct RealCluster {
    calls: HostTarget<ReferenceHost>,
    admin: Admin,
    project: String,
    setup: MemberDown,
    through: String,
    /// The members this run took down and has not brought back.
    down: Mutex<BTreeSet<String>>,
}

impl RealCluster {
    fn left_down(&self) -> Vec<String> {
        self.lock().iter().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.down
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn pid(&self, member: &str) -> Result<String, String> {
        let file = self.setup.cluster_dir.join(member).join("incusd.pid");
        let pid = std::fs::read_to_string(&file)
            .map_err(|e| format!("no PID for {member}'s daemon ({}): {e}", file.display()))?;
        let pid = pid.trim();
        if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!("{} holds no PID: {pid:?}", file.display()));
        }
        Ok(pid.to_owned())
    }

    /// The project's running operations, recursion on.
    async fn running(&self) -> Vec<Value> {
        let path = format!("/1.0/operations?project={}&recursion=1", enc(&self.project));
        match self.admin.get(&path).await {
            Ok(answer) => answer.metadata["running"]
                .as_array()
                .cloned()
                .unwrap_or_default(),
            Err(_) => Vec::new(),
        }
    }
}

impl Target for RealCluster {
    fn call<'a>(
        &'a self,
        operation: &'a str,
        scopes: &'a [String],
        input: Value,
    ) -> BoxFuture<'a, Value> {
        self.calls.call(operation, scopes, input)
    }

    fn journal(&self) -> Option<Vec<Request>> {
        None
    }

    fn output_schema(&self, operation: &str) -> Option<Value> {
        self.calls.output_schema(operation)
    }

    fn add_fault(&self, _rule: &Value) -> Result<(), String> {
        Err("fault rules need a fake Incus; this target is a real cluster".into())
    }

    fn native<'a>(
        &'a self,
        method: &'a str,
        path: &'a str,
        body: Option<Value>,
    ) -> BoxFuture<'a, Result<(u16, Value), String>> {
        Box::pin(async move {
            self.admin
                .raw(method, path, body)
                .await
                .map_err(|e| e.to_string())
        })
    }

    fn members(&self) -> Option<&dyn Members> {
        Some(self)
    }
}

impl Members for RealCluster {
    fn down<'a>(&'a self, member: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            if member == self.through {
                return Err(format!("{member} is the member the run talks to"));
            }
            let pid = self.pid(member)?;
            eprintln!("member-down: killing the incusd of {member} (pid {pid})");
            let killed = tokio::process::Command::new("kill")
                .args(["-KILL", &pid])
                .status()
                .await
                .map_err(|e| format!("kill -KILL {pid}: {e}"))?;
            if !killed.success() {
                return Err(format!("kill -KILL {pid} failed: {killed}"));
            }
            self.lock().insert(member.to_owned());
            Ok(())
        })
    }

    fn up<'a>(&'a self, member: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let command = format!("{} {member}", self.setup.start);
            eprintln!("member-down: starting {member} again ({command})");
            let started = tokio::process::Command::new("sh")
                .args(["-c", &command])
                .status()
                .await
                .map_err(|e| format!("{command}: {e}"))?;
            if !started.success() {
                return Err(format!("{command} failed: {started}"));
            }
            self.lock().remove(member);
            Ok(())
        })
    }

    /// The project's operations listed until one shows the moment: `waiting`, an operation
    /// running; `streaming`, an exec operation running, its streams given a moment to attach.
    fn moment(&self, moment: Moment) -> BoxFuture<'_, Result<(), String>> {
        Box::pin(async move {
            let until = Instant::now() + MOMENT_BOUND;
            loop {
                let running = self.running().await;
                let reached = running.iter().any(|op| match moment {
                    Moment::Waiting => true,
                    Moment::Streaming => op["description"] == "Executing command",
                });
                if reached {
                    if moment == Moment::Streaming {
                        tokio::time::sleep(STREAMS_ATTACHED).await;
                    }
                    return Ok(());
                }
                if Instant::now() >= until {
                    return Err(format!(
                        "no such operation was running within {} s",
                        MOMENT_BOUND.as_secs()
                    ));
                }
                tokio::time::sleep(MOMENT_POLL).await;
            }
        })
    }
}
