//! Differential probe of the fake cluster against a real 3-member Incus 6.0.4 cluster: the same
//! raw requests, step by step, through member `m1`'s Unix socket on both (a fake cluster of
//! members `m1`, `m2`, `m3`), compared as `differential_real` compares a standalone daemon (the
//! shared [`differential`] module: status, envelope keys, types, error texts), and the
//! `location` of what was placed, moved or copied.
//!
//! The steps: reads (server, `?target=`, cluster, members, groups, resources, pools, networks),
//! placement (`?target=` a member, an unknown one, `@group`), a move and a move to its own
//! member, a copy with `--target`, evacuation and restore of `m2`, groups (create, duplicate,
//! placement on a group, delete refused while it has members, emptied and deleted, `default`
//! refused) and member config (`scheduler.instance`, dropping the `database` role, `PATCH`);
//! then, when the probe may kill and start a member, member `m3` down and back: its daemon
//! killed on both sides, each side polled (bounded) until what is routed to `m3` answers
//! "Server isn't ready yet" (the heartbeat round, drawn on both), then the steps compared (its
//! instance, exec, `?target=`, lists, creations), each side polled until `m3` shows `Offline`,
//! compared again, then `m3` started again and polled until it serves and shows `Online`, and
//! compared once more.
//! The moments before the heartbeat round are not compared step by step: on the real cluster
//! they depend on when the round comes (the fake's own tests pin them under a seed).
//!
//! Runs when `REAL_INCUS_CLUSTER_SOCKET` names the Unix socket of member `m1` of a real cluster
//! (`ci/real-incus-cluster.sh` sets it; its busybox image has alias `busybox`); otherwise the
//! test is reported as ignored, with that reason. The member-down part also needs
//! `REAL_INCUS_CLUSTER_DIR` (the cluster's directory: `m3/incusd.pid` is the daemon to kill) and
//! `REAL_INCUS_CLUSTER_START` (a command that starts a member again given its name, e.g.
//! `bash ci/real-incus-cluster.sh start`); without them it is skipped, and says so. Everything it makes on the real cluster lives
//! in a project of its own and is deleted at the end (also on failure, by a guard), as are the
//! group it creates and the member config it changes.

mod differential;
mod ignorable;

use differential::{
    answers, line_of, report, seed_with_project, wait_real, Known, Probe, Reply, Req, Side,
};
use hyper::Method;
use ignorable::trial;
use libtest_mimic::Completion;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Known divergences of the fake cluster from a real Incus 6.0.4 cluster, each with its reason.
const KNOWN: &[Known] = &[];

/// Where the probe's instances end up, by name, and the group it made.
struct Cleanup {
    socket: PathBuf,
    project: String,
    group: String,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let (socket, project, group) = (
            self.socket.clone(),
            self.project.clone(),
            self.group.clone(),
        );
        let cleaned = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the cleanup");
            runtime.block_on(clean(&socket, &project, &group))
        })
        .join();
        if let Ok(Err(e)) | Err(e) = cleaned.map_err(|_| "cleanup panicked".to_string()) {
            eprintln!("cleanup of the real cluster failed: {e}");
        }
    }
}

/// Restores `m2`, puts `m3`'s config back, deletes the group, the project's instances and the
/// project.
async fn clean(socket: &Path, project: &str, group: &str) -> Result<(), String> {
    if let Some(down) = MemberDown::from_env() {
        if !down.alive() {
            down.start()?;
        }
    }
    let side = Side::new("real", socket);
    let restore =
        Req::new(Method::POST, "/1.0/cluster/members/m2/state").json(&json!({"action": "restore"}));
    let restored = side.send(&restore).await?;
    wait_real(&side, &restored).await?;
    side.send(&Req::new(Method::PUT, "/1.0/cluster/members/m3").json(&member_body(json!({}))))
        .await?;
    let emptied = json!({"description": "", "members": []});
    let group_url = format!("/1.0/cluster/groups/{group}");
    side.send(&Req::new(Method::PUT, &group_url).json(&emptied))
        .await?;
    side.send(&Req::new(Method::DELETE, &group_url)).await?;
    let q = format!("project={project}");
    let listed = side.send(&Req::get(format!("/1.0/instances?{q}"))).await?;
    for url in listed.metadata().as_array().into_iter().flatten() {
        let Some(url) = url.as_str() else { continue };
        let path = url.split('?').next().unwrap_or(url);
        let deleted = side
            .send(&Req::new(Method::DELETE, format!("{path}?{q}")))
            .await?;
        wait_real(&side, &deleted).await?;
    }
    let gone = side
        .send(&Req::new(
            Method::DELETE,
            format!("/1.0/projects/{project}"),
        ))
        .await?;
    if !gone.is_success() {
        return Err(format!("deleting project {project}: {}", gone.body));
    }
    Ok(())
}

/// A `PUT /1.0/cluster/members/m3` body with this config (m3 votes: role `database`).
fn member_body(config: Value) -> Value {
    json!({"config": config, "roles": ["database"], "failure_domain": "default",
           "description": "", "groups": ["default"]})
}

/// Records a divergence when the two sides' values differ.
fn same(probe: &mut Probe, label: &str, what: &str, real: &Value, fake: &Value) {
    println!("{label}: {what} real {real} | fake {fake}");
    if real != fake {
        let diff = format!("{what}: value real {real} vs fake {fake}");
        probe.diffs.push((label.to_string(), diff));
    }
}

/// The instance's `location` on both sides.
async fn locations(probe: &mut Probe, label: &str, name: &str, q: &str) -> (Value, Value) {
    let (r, f) = probe
        .step(label, Req::get(format!("/1.0/instances/{name}?{q}")))
        .await;
    (
        r.metadata()["location"].clone(),
        f.metadata()["location"].clone(),
    )
}

/// Creates `name` from the busybox image with this `?target=` on both sides and waits.
async fn create(
    probe: &mut Probe,
    label: &str,
    name: &str,
    q: &str,
    target: &str,
) -> (Reply, Reply) {
    let body = json!({"name": name, "source": {"type": "image", "alias": "busybox"}});
    let url = format!("/1.0/instances?{q}&target={target}");
    let started = probe
        .step(label, Req::new(Method::POST, url).json(&body))
        .await;
    probe.wait(label, &started).await
}

async fn fake_cluster_answers_like_a_real_cluster_step_by_step() -> Completion {
    let Some(socket) = std::env::var_os("REAL_INCUS_CLUSTER_SOCKET").map(PathBuf::from) else {
        return Completion::ignored_with(
            "needs a real Incus cluster: REAL_INCUS_CLUSTER_SOCKET (its member m1's socket) is not set",
        );
    };
    if !answers(&socket).await {
        return Completion::ignored_with(format!(
            "needs a real Incus cluster (none answers at {})",
            socket.display()
        ));
    }
    let real = Side::new("real", &socket);
    let cluster = real
        .send(&Req::get("/1.0/cluster"))
        .await
        .expect("real answers");
    if cluster.metadata()["enabled"] != true {
        return Completion::ignored_with(format!(
            "the daemon at {} is not clustered",
            socket.display()
        ));
    }
    let unique = uuid::Uuid::new_v4().simple().to_string();
    let project = format!("dcl-{}", &unique[..8]);
    let group = format!("g{}", &unique[..8]);
    let features = json!({"features.images": "false", "features.profiles": "false"});
    let created = real
        .send(
            &Req::new(Method::POST, "/1.0/projects")
                .json(&json!({"name": project, "config": features, "description": ""})),
        )
        .await
        .expect("real answers");
    let _cleanup = Cleanup {
        socket: socket.clone(),
        project: project.clone(),
        group: group.clone(),
    };
    assert!(
        created.is_success(),
        "creating project {project} on the real cluster: {}",
        created.body
    );
    let read = real
        .send(&Req::get(format!("/1.0/projects/{project}")))
        .await
        .expect("real answers");
    let config = read.metadata()["config"].clone();
    // The fake imitates the cluster's own line (its default is the newest it matches).
    let line = line_of(&real).await;
    let blank = fake_incus::FakeIncus::builder()
        .cluster(["m1", "m2", "m3"])
        .incus_version(line)
        .start()
        .await
        .expect("fake cluster starts");
    let seed = seed_with_project(blank.dump_state(), &project, "", &config);
    drop(blank);
    let fake = fake_incus::FakeIncus::builder()
        .cluster(["m1", "m2", "m3"])
        .incus_version(line)
        .state(seed)
        .start()
        .await
        .expect("fake cluster starts with the probe project");
    let mut probe = Probe {
        real,
        fake: Side::new("fake", fake.unix_socket()),
        diffs: Vec::new(),
        steps: 0,
    };
    let q = format!("project={project}");
    reads(&mut probe).await;
    placement_moves_and_copies(&mut probe, &q).await;
    evacuation(&mut probe, &q).await;
    groups(&mut probe, &q, &group).await;
    member_config(&mut probe).await;
    match MemberDown::from_env() {
        Some(down) => member_down_and_back(&mut probe, &fake, &down, &q).await,
        None => println!(
            "member down and back: skipped (REAL_INCUS_CLUSTER_DIR and REAL_INCUS_CLUSTER_START are not both set)"
        ),
    }
    report(&probe, KNOWN);
    Completion::Completed
}

async fn reads(probe: &mut Probe) {
    for (label, path) in [
        ("server", "/1.0"),
        ("server of m2", "/1.0?target=m2"),
        ("server of an unknown member", "/1.0?target=nope"),
        ("cluster", "/1.0/cluster"),
        ("members", "/1.0/cluster/members"),
        ("members recursion=1", "/1.0/cluster/members?recursion=1"),
        ("member m2", "/1.0/cluster/members/m2"),
        ("unknown member", "/1.0/cluster/members/nope"),
        ("member m2 state", "/1.0/cluster/members/m2/state"),
        ("groups recursion=1", "/1.0/cluster/groups?recursion=1"),
        ("group default", "/1.0/cluster/groups/default"),
        ("unknown group", "/1.0/cluster/groups/nope"),
        ("resources of m3", "/1.0/resources?target=m3"),
        ("pool of m2", "/1.0/storage-pools/default?target=m2"),
        (
            "pool resources of m2",
            "/1.0/storage-pools/default/resources?target=m2",
        ),
        ("networks of an unknown member", "/1.0/networks?target=nope"),
        (
            "instances of an unknown member",
            "/1.0/instances?target=nope",
        ),
    ] {
        probe.step(label, Req::get(path)).await;
    }
}

async fn placement_moves_and_copies(probe: &mut Probe, q: &str) {
    create(probe, "create on m2", "dc-a", q, "m2").await;
    let (r, f) = locations(probe, "placed on m2", "dc-a", q).await;
    same(probe, "placed on m2", "location", &r, &f);
    let body = json!({"name": "dc-x", "source": {"type": "image", "alias": "busybox"}});
    for (label, target) in [
        ("create on an unknown member", "nope"),
        ("create on an unknown group", "@nope"),
    ] {
        let url = format!("/1.0/instances?{q}&target={target}");
        probe
            .step(label, Req::new(Method::POST, url).json(&body))
            .await;
    }
    create(probe, "create on group default", "dc-b", q, "@default").await;
    let moving = json!({"name": "dc-a", "migration": true, "live": false});
    let url = format!("/1.0/instances/dc-a?{q}&target=m3");
    let started = probe
        .step("move to m3", Req::new(Method::POST, &url).json(&moving))
        .await;
    probe.wait("move to m3", &started).await;
    let (r, f) = locations(probe, "moved to m3", "dc-a", q).await;
    same(probe, "moved to m3", "location", &r, &f);
    probe
        .step(
            "move to its own member",
            Req::new(Method::POST, &url).json(&moving),
        )
        .await;
    let mut copy = json!({"name": "dc-c", "source": {"type": "copy", "source": "dc-a"}});
    probe
        .step(
            "copy onto m1 without the architecture",
            Req::new(Method::POST, format!("/1.0/instances?{q}&target=m1")).json(&copy),
        )
        .await;
    copy["architecture"] = json!("x86_64");
    let started = probe
        .step(
            "copy onto m1",
            Req::new(Method::POST, format!("/1.0/instances?{q}&target=m1")).json(&copy),
        )
        .await;
    probe.wait("copy onto m1", &started).await;
    let (r, f) = locations(probe, "copied onto m1", "dc-c", q).await;
    same(probe, "copied onto m1", "location", &r, &f);
}

async fn evacuation(probe: &mut Probe, q: &str) {
    let state = "/1.0/cluster/members/m2/state";
    let evacuate = json!({"action": "evacuate"});
    let started = probe
        .step("evacuate m2", Req::new(Method::POST, state).json(&evacuate))
        .await;
    probe.wait("evacuate m2", &started).await;
    probe
        .step("m2 evacuated", Req::get("/1.0/cluster/members/m2"))
        .await;
    let body = json!({"name": "dc-e", "source": {"type": "image", "alias": "busybox"}});
    probe
        .step(
            "create on the evacuated m2",
            Req::new(Method::POST, format!("/1.0/instances?{q}&target=m2")).json(&body),
        )
        .await;
    let started = probe
        .step(
            "evacuate m2 again",
            Req::new(Method::POST, state).json(&evacuate),
        )
        .await;
    probe.wait("evacuate m2 again", &started).await;
    let restore = json!({"action": "restore"});
    let started = probe
        .step("restore m2", Req::new(Method::POST, state).json(&restore))
        .await;
    probe.wait("restore m2", &started).await;
    probe
        .step("m2 restored", Req::get("/1.0/cluster/members/m2"))
        .await;
    let started = probe
        .step(
            "restore m2 again",
            Req::new(Method::POST, state).json(&restore),
        )
        .await;
    probe.wait("restore m2 again", &started).await;
    probe
        .step(
            "evacuate with a bad mode",
            Req::new(Method::POST, state).json(&json!({"action": "evacuate", "mode": "bogus"})),
        )
        .await;
}

async fn groups(probe: &mut Probe, q: &str, group: &str) {
    let url = format!("/1.0/cluster/groups/{group}");
    let made = json!({"name": group, "description": "probe", "members": ["m2"]});
    probe
        .step(
            "group create",
            Req::new(Method::POST, "/1.0/cluster/groups").json(&made),
        )
        .await;
    probe.step("group get", Req::get(&url)).await;
    probe
        .step(
            "group create again",
            Req::new(Method::POST, "/1.0/cluster/groups").json(&made),
        )
        .await;
    create(
        probe,
        "create on the group",
        "dc-g",
        q,
        &format!("@{group}"),
    )
    .await;
    let (r, f) = locations(probe, "placed on the group", "dc-g", q).await;
    same(probe, "placed on the group", "location", &r, &f);
    probe
        .step("group delete with a member", Req::new(Method::DELETE, &url))
        .await;
    let emptied = json!({"description": "", "members": []});
    probe
        .step("group emptied", Req::new(Method::PUT, &url).json(&emptied))
        .await;
    probe
        .step("group delete", Req::new(Method::DELETE, &url))
        .await;
    probe
        .step(
            "group default delete",
            Req::new(Method::DELETE, "/1.0/cluster/groups/default"),
        )
        .await;
}

async fn member_config(probe: &mut Probe) {
    let url = "/1.0/cluster/members/m3";
    let manual = member_body(json!({"scheduler.instance": "manual"}));
    probe
        .step("member m3 manual", Req::new(Method::PUT, url).json(&manual))
        .await;
    probe.step("member m3 read", Req::get(url)).await;
    let mut dropped = member_body(json!({}));
    dropped["roles"] = json!([]);
    probe
        .step(
            "member m3 without the database role",
            Req::new(Method::PUT, url).json(&dropped),
        )
        .await;
    probe
        .step(
            "member m3 bad config",
            Req::new(Method::PUT, url).json(&member_body(json!({"foo": "bar"}))),
        )
        .await;
    probe
        .step(
            "member m3 patch",
            Req::new(Method::PATCH, url).json(&json!({"config": {"user.probe": "1"}})),
        )
        .await;
    probe
        .step(
            "member m3 back",
            Req::new(Method::PUT, url).json(&member_body(json!({}))),
        )
        .await;
}

/// How the probe kills and starts the real cluster's member `m3`.
struct MemberDown {
    /// `m3`'s daemon's PID file.
    pid_file: PathBuf,
    /// The command that starts a member again (the member's name is added).
    start: String,
}

impl MemberDown {
    const MEMBER: &'static str = "m3";

    fn from_env() -> Option<Self> {
        let dir = PathBuf::from(std::env::var_os("REAL_INCUS_CLUSTER_DIR")?);
        let start = std::env::var("REAL_INCUS_CLUSTER_START").ok()?;
        Some(Self {
            pid_file: dir.join(Self::MEMBER).join("incusd.pid"),
            start,
        })
    }

    fn pid(&self) -> Option<String> {
        let pid = std::fs::read_to_string(&self.pid_file).ok()?;
        let pid = pid.trim();
        pid.chars()
            .all(|c| c.is_ascii_digit())
            .then(|| pid.to_string())
    }

    fn alive(&self) -> bool {
        self.pid().is_some_and(|pid| {
            std::process::Command::new("kill")
                .args(["-0", &pid])
                .status()
                .is_ok_and(|s| s.success())
        })
    }

    /// SIGKILL of the member's daemon, as the reference's measurements did.
    fn kill(&self) -> Result<(), String> {
        let pid = self.pid().ok_or("no PID for the member's daemon")?;
        let killed = std::process::Command::new("kill")
            .args(["-KILL", &pid])
            .status()
            .map_err(|e| e.to_string())?;
        killed
            .success()
            .then_some(())
            .ok_or_else(|| format!("kill -KILL {pid} failed"))
    }

    fn start(&self) -> Result<(), String> {
        let command = format!("{} {}", self.start, Self::MEMBER);
        let started = std::process::Command::new("sh")
            .args(["-c", &command])
            .status()
            .map_err(|e| e.to_string())?;
        started
            .success()
            .then_some(())
            .ok_or_else(|| format!("{command} failed"))
    }
}

/// Sends `req` on one side until `done` holds for the answer (every 0.5 s, within `bound`).
async fn until(
    side: &Side,
    req: &Req,
    done: impl Fn(&Reply) -> bool,
    bound: Duration,
) -> Result<Duration, String> {
    let started = Instant::now();
    loop {
        let reply = side.send(req).await?;
        if done(&reply) {
            return Ok(started.elapsed());
        }
        if started.elapsed() > bound {
            return Err(format!(
                "{}: {} {} did not settle within {bound:?} (last: {})",
                side.name, req.method, req.path, reply.body
            ));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Polls both sides until `done` holds on each; a side that does not settle is a divergence.
async fn settle(probe: &mut Probe, label: &str, req: Req, done: impl Fn(&Reply) -> bool + Copy) {
    let bound = Duration::from_secs(60);
    let (r, f) = tokio::join!(
        until(&probe.real, &req, done, bound),
        until(&probe.fake, &req, done, bound)
    );
    println!("{label}: real after {r:?} | fake after {f:?}");
    for (side, outcome) in [("real", r), ("fake", f)] {
        if let Err(e) = outcome {
            probe
                .diffs
                .push((label.to_string(), format!("{side} did not settle: {e}")));
        }
    }
}

fn error_is(reply: &Reply, text: &str) -> bool {
    reply.body["error"].as_str() == Some(text)
}

async fn member_down_and_back(
    probe: &mut Probe,
    fake: &fake_incus::FakeIncus,
    down: &MemberDown,
    q: &str,
) {
    create(probe, "create on m3", "dc-d", q, "m3").await;
    let inst = format!("/1.0/instances/dc-d?{q}");
    if let Err(e) = down.kill() {
        probe
            .diffs
            .push(("member down".into(), format!("killing m3: {e}")));
        return;
    }
    fake.member_down("m3").expect("the fake's m3 goes down");
    settle(probe, "m3 not ready", Req::get(&inst), |r| {
        error_is(r, "Server isn't ready yet")
    })
    .await;
    let exec = json!({"command": ["true"], "wait-for-websocket": false});
    let body = json!({"name": "dc-n", "source": {"type": "image", "alias": "busybox"}});
    for (label, req) in [
        ("down: instance", Req::get(&inst)),
        (
            "down: instance state",
            Req::get(format!("/1.0/instances/dc-d/state?{q}")),
        ),
        (
            "down: exec",
            Req::new(Method::POST, format!("/1.0/instances/dc-d/exec?{q}")).json(&exec),
        ),
        ("down: server of m3", Req::get("/1.0?target=m3")),
        (
            "down: instances recursion=1",
            Req::get(format!("/1.0/instances?{q}&recursion=1")),
        ),
        (
            "down: create on m3",
            Req::new(Method::POST, format!("/1.0/instances?{q}&target=m3")).json(&body),
        ),
    ] {
        probe.step(label, req).await;
    }
    settle(
        probe,
        "m3 offline",
        Req::get("/1.0/cluster/members/m3"),
        |r| r.metadata()["status"] == "Offline",
    )
    .await;
    probe
        .step("down: member m3", Req::get("/1.0/cluster/members/m3"))
        .await;
    probe
        .step("down: instance when offline", Req::get(&inst))
        .await;
    if let Err(e) = down.start() {
        probe
            .diffs
            .push(("member back".into(), format!("starting m3: {e}")));
        return;
    }
    fake.member_up("m3").expect("the fake's m3 comes back");
    settle(probe, "m3 back", Req::get(&inst), |r| r.is_success()).await;
    probe.step("back: instance", Req::get(&inst)).await;
    // Serving again and showing Online come within a fraction of a second of each other, in
    // either order (measured): the member is compared once it shows Online on each side.
    settle(
        probe,
        "m3 online",
        Req::get("/1.0/cluster/members/m3"),
        |r| r.metadata()["status"] == "Online",
    )
    .await;
    probe
        .step("back: member m3", Req::get("/1.0/cluster/members/m3"))
        .await;
}

fn main() -> std::process::ExitCode {
    let args = libtest_mimic::Arguments::from_args();
    let trials = vec![trial(
        "fake_cluster_answers_like_a_real_cluster_step_by_step",
        fake_cluster_answers_like_a_real_cluster_step_by_step,
    )];
    libtest_mimic::run(&args, trials).exit_code()
}
