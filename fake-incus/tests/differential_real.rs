//! Differential probe: replays one sequence of raw HTTP requests on the real Incus daemon and on
//! a fresh fake, and compares them request by request (HTTP status, envelope fields, the keys
//! and JSON types of the metadata, and the presence of the `ETag` and `Location` headers).
//!
//! The comparison is the fake's own, [`fake_incus::differ::compare`] (also used by
//! `fake-incus replay`): what it compares and what it normalises is documented there. Besides:
//! whether the ETag changes between two GETs (description-only PATCH, config PATCH, two
//! snapshots) and the recorded exec output.
//!
//! Known divergences live in [`KNOWN`], each with its reason; the test fails on any other. The
//! client, the probe and the report are [`differential`]'s, shared with the cluster's probe.
//!
//! The real daemon gets a project of its own, created through the API and deleted at the end
//! (also on failure, by a guard). The fake has no project creation endpoint, so the same project
//! is seeded into its state; both sides then see the same URLs.
//!
//! Every step is logged with both statuses; `DIFF_DUMP=<part of a step label>` also prints the
//! bodies of the matching steps.
//!
//! When no real daemon answers on `INCUS_SOCKET` (default `/var/lib/incus/unix.socket`) the
//! test is reported as ignored, with that reason. A second trial compares the fake as Incus 7.0
//! with a real 7.0 daemon on `INCUS7_SOCKET` (ignored, with its reason, when unset or silent):
//! every endpoint of 7.0's list, and the resources 7.0 adds.

mod differential;
mod ignorable;

use differential::{
    answers, line_of, report, seed_with_project, short, wait_real, Known, Probe, Reply, Req, Side,
};
use fake_incus::differ::normalised;
use hyper::{Method, StatusCode};
use ignorable::trial;
use libtest_mimic::Completion;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

const DEFAULT_SOCKET: &str = "/var/lib/incus/unix.socket";
/// Known divergences of the fake from Incus 6.0.4. Each one is a fake bug to fix unless its
/// reason says otherwise; when one is fixed, the test prints it as stale: delete it here.
const KNOWN: &[Known] = &[];

/// Deletes what the probe created on the real daemon, even when the test panics.
struct Cleanup {
    socket: PathBuf,
    project: String,
    instance: String,
    /// What else to delete first, best effort (objects outside the project: the 7.0 probe's
    /// network address set lives in `default`'s networks).
    leftovers: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let (socket, project, instance) = (
            self.socket.clone(),
            self.project.clone(),
            self.instance.clone(),
        );
        let leftovers = std::mem::take(&mut self.leftovers);
        let cleaned = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime for the cleanup");
            runtime.block_on(async {
                let side = Side::new("real", &socket);
                for path in &leftovers {
                    let _ = side.send(&Req::new(Method::DELETE, path)).await;
                }
                clean(&socket, &project, &instance).await
            })
        })
        .join();
        if let Ok(Err(e)) | Err(e) = cleaned.map_err(|_| "cleanup panicked".to_string()) {
            eprintln!("cleanup of the real daemon failed: {e}");
        }
    }
}

async fn clean(socket: &Path, project: &str, instance: &str) -> Result<(), String> {
    let side = Side::new("real", socket);
    clean_instance(&side, &format!("project={project}"), instance).await?;
    delete_project(&side, project).await
}

/// Stops (forced) and deletes one instance; an instance that does not exist is no error.
async fn clean_instance(side: &Side, q: &str, instance: &str) -> Result<(), String> {
    let url = format!("/1.0/instances/{instance}?{q}");
    let stop = json!({"action": "stop", "force": true, "timeout": -1});
    let started = side
        .send(&Req::new(Method::PUT, format!("/1.0/instances/{instance}/state?{q}")).json(&stop))
        .await?;
    wait_real(side, &started).await?;
    let deleted = side.send(&Req::new(Method::DELETE, &url)).await?;
    wait_real(side, &deleted).await
}

/// Deletes an empty project (without `force`).
async fn delete_project(side: &Side, project: &str) -> Result<(), String> {
    let gone = side
        .send(&Req::new(
            Method::DELETE,
            format!("/1.0/projects/{project}"),
        ))
        .await?;
    if gone.status != StatusCode::OK {
        return Err(format!("deleting project {project}: {}", gone.body));
    }
    Ok(())
}

/// The description of the probe's project on the real daemon: which process owns it, so that a
/// later run can tell a project left by a killed run from one another run is still using.
fn owner_mark() -> String {
    format!("{OWNER_MARK}{}", std::process::id())
}

const OWNER_MARK: &str = "differential probe, pid ";

/// Whether a process of this machine (the daemon is reached by its Unix socket, so it is local)
/// with this id is alive.
fn alive(pid: &str) -> bool {
    Path::new("/proc").join(pid).exists()
}

/// Whether another differential probe runs on this machine (the kernel cuts process names at 15
/// bytes).
fn another_probe_runs() -> bool {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return false;
    };
    entries.flatten().any(|entry| {
        let pid = entry.file_name().to_string_lossy().into_owned();
        // Only the numbered entries are processes (`self` is this one).
        pid.bytes().all(|b| b.is_ascii_digit())
            && pid != me
            && std::fs::read_to_string(entry.path().join("comm"))
                .is_ok_and(|comm| comm.starts_with("differential_re"))
    })
}

/// Removes the `diff-*` projects an earlier, killed run left on the real daemon: those whose owner
/// (named in the description) is gone, and unmarked ones (left by versions before the mark) when
/// no other probe runs. Instances first (stopped, then deleted), then the project; never with
/// `force`, so a project holding anything else stays, with a message.
async fn remove_stale_projects(real: &Side) {
    let Ok(list) = real.send(&Req::get("/1.0/projects?recursion=1")).await else {
        return;
    };
    let others = another_probe_runs();
    let stale = list
        .metadata()
        .as_array()
        .into_iter()
        .flatten()
        .filter(|project| {
            let name = project["name"].as_str().unwrap_or_default();
            let description = project["description"].as_str().unwrap_or_default();
            name.starts_with("diff-")
                && match description.strip_prefix(OWNER_MARK) {
                    Some(pid) => !alive(pid),
                    None => description.is_empty() && !others,
                }
        });
    for project in stale {
        let name = project["name"].as_str().unwrap_or_default();
        if let Err(e) = remove_project(real, name).await {
            eprintln!("stale project {name} left in place: {e}");
        } else {
            println!("removed stale project {name} of an earlier run");
        }
    }
}

async fn remove_project(real: &Side, project: &str) -> Result<(), String> {
    let q = format!("project={project}");
    let instances = real.send(&Req::get(format!("/1.0/instances?{q}"))).await?;
    for url in instances.metadata().as_array().into_iter().flatten() {
        // `/1.0/instances/NAME?project=PROJECT`
        let path = url.as_str().unwrap_or_default().split('?').next();
        let name = path.unwrap_or_default().rsplit('/').next();
        clean_instance(real, &q, name.unwrap_or_default()).await?;
    }
    delete_project(real, project).await
}

async fn fake_answers_like_the_real_daemon_request_by_request() -> Completion {
    let socket = PathBuf::from(std::env::var("INCUS_SOCKET").unwrap_or(DEFAULT_SOCKET.into()));
    if !answers(&socket).await {
        return Completion::ignored_with(format!(
            "needs a real Incus daemon on INCUS_SOCKET (none answers at {})",
            socket.display()
        ));
    }
    let unique = uuid::Uuid::new_v4().simple().to_string();
    let project = format!("diff-{}", &unique[..8]);
    let name = format!("dp{}", &unique[..8]);
    let features = json!({"features.images": "false", "features.profiles": "false"});

    let real = Side::new("real", &socket);
    remove_stale_projects(&real).await;
    let create_project = Req::new(Method::POST, "/1.0/projects")
        .json(&json!({"name": project, "config": features, "description": owner_mark()}));
    let created = real.send(&create_project).await.expect("real answers");
    let _cleanup = Cleanup {
        socket: socket.clone(),
        project: project.clone(),
        instance: name.clone(),
        leftovers: Vec::new(),
    };
    assert!(
        created.is_success(),
        "creating project {project} on the real daemon: {}",
        created.body
    );
    // The daemon adds its defaults (e.g. `features.storage.volumes`): seed what it reports.
    let read = Req::get(format!("/1.0/projects/{project}"));
    let read = real.send(&read).await.expect("real answers");
    let config = read.metadata()["config"].clone();

    // The fake answers as the daemon's line, chosen by the API extensions it advertises.
    let line = line_of(&real).await;
    println!(
        "the fake answers as Incus {line} ({})",
        line.server_version()
    );
    let blank = fake_incus::FakeIncus::builder()
        .incus_version(line)
        .start()
        .await
        .expect("fake starts");
    let seed = seed_with_project(blank.dump_state(), &project, &owner_mark(), &config);
    drop(blank);
    let fake = fake_incus::FakeIncus::builder()
        .incus_version(line)
        .state(seed)
        .start()
        .await
        .expect("fake starts with the probe project");
    let mut probe = Probe {
        real,
        fake: Side::new("fake", fake.unix_socket()),
        diffs: Vec::new(),
        steps: 0,
    };
    let endpoints = if line.has_extension("instances_debug_repair") {
        ENDPOINTS_7_0
    } else {
        ENDPOINTS_6_0
    };
    run_sequence(&mut probe, &project, &name, endpoints).await;
    report(&probe, KNOWN);
    Completion::Completed
}

/// The request sequence. Paths are identical on both sides except operation and image ids.
async fn run_sequence(probe: &mut Probe, project: &str, name: &str, endpoints: &'static str) {
    let q = format!("project={project}");
    let inst = format!("/1.0/instances/{name}");
    server_and_errors(probe).await;
    every_get_of_an_unknown_name(probe, project, endpoints).await;
    every_mutation_of_an_unknown_name(probe, project, endpoints).await;

    for recursion in 0..=2 {
        let path = format!("/1.0/instances?{q}&recursion={recursion}");
        probe
            .step(
                &format!("list instances recursion={recursion} (empty)"),
                Req::get(path),
            )
            .await;
    }
    let create = json!({"name": name, "source": {"type": "image", "alias": "busybox"}});
    let started = probe
        .step(
            "create instance",
            Req::new(Method::POST, format!("/1.0/instances?{q}")).json(&create),
        )
        .await;
    probe.wait("create instance", &started).await;
    for recursion in 0..=2 {
        let path = format!("/1.0/instances?{q}&recursion={recursion}");
        probe
            .step(
                &format!("list instances recursion={recursion}"),
                Req::get(path),
            )
            .await;
    }
    probe
        .step("get instance", Req::get(format!("{inst}?{q}")))
        .await;
    probe
        .step(
            "get instance state (stopped)",
            Req::get(format!("{inst}/state?{q}")),
        )
        .await;
    let volume = format!("/1.0/storage-pools/default/volumes/container/{name}?{q}");
    probe.step("get container volume", Req::get(volume)).await;

    let start = json!({"action": "start", "timeout": 30});
    let started = probe
        .step(
            "start",
            Req::new(Method::PUT, format!("{inst}/state?{q}")).json(&start),
        )
        .await;
    probe.wait("start", &started).await;
    probe
        .step(
            "get instance state (running)",
            Req::get(format!("{inst}/state?{q}")),
        )
        .await;

    let exec = json!({
        "command": ["echo", "hi"], "environment": {}, "interactive": false,
        "wait-for-websocket": false, "record-output": true,
    });
    let started = probe
        .step(
            "exec echo hi (record-output)",
            Req::new(Method::POST, format!("{inst}/exec?{q}")).json(&exec),
        )
        .await;
    let (real, fake) = probe.wait("exec echo hi (record-output)", &started).await;
    exec_output(probe, &inst, &q, (&real, &fake)).await;
    exec_not_found(probe, &inst, &q).await;
    shell_lines(probe, &inst, &q).await;
    running_errors(probe, &inst, &q, &create).await;
    console(probe, &inst, &q).await;
    volume_move_refusals(probe, &inst, &q).await;

    freeze_and_restart(probe, &inst, &q).await;
    instance_updates(probe, &inst, &q).await;
    snapshots(probe, &inst, &q).await;
    probe
        .step(
            "delete running instance",
            Req::new(Method::DELETE, format!("{inst}?{q}")),
        )
        .await;
    let stop = json!({"action": "stop", "force": true, "timeout": -1});
    let stopped = probe
        .step(
            "stop (force)",
            Req::new(Method::PUT, format!("{inst}/state?{q}")).json(&stop),
        )
        .await;
    probe.wait("stop (force)", &stopped).await;
    operations(probe, &q, &stopped).await;
    restore_and_delete_snapshot(probe, &inst, &q).await;
    stopped_errors(probe, &inst, &q).await;
    console_stopped(probe, &inst, &q).await;
    publish_unknown_compression(probe, name, &q).await;
    read_only_resources(probe, project, name).await;
}

async fn server_and_errors(probe: &mut Probe) {
    probe.step("GET /", Req::get("/")).await;
    probe.step("GET /1.0", Req::get("/1.0")).await;
    probe.step("GET /2.0", Req::get("/2.0")).await;
    probe
        .step(
            "POST /1.0/operations",
            Req::new(Method::POST, "/1.0/operations"),
        )
        .await;
    server_config_refusals(probe).await;
}

/// Server config values the daemon refuses, one rule each, and a stale `If-Match` on `PUT` and
/// `PATCH /1.0`: every request is refused, so the shared daemon's config never changes.
async fn server_config_refusals(probe: &mut Probe) {
    let refused = [
        ("acme.agree_tos", "maybe"),
        ("core.bgp_asn", "x"),
        ("images.compression_algorithm", "bogus"),
        ("core.https_address", "bogus:addr:x"),
        ("core.bgp_routerid", "1.2.3"),
        ("core.bgp_asn", "-5"),
        ("instances.nic.host_name", "bogus"),
        ("cluster.images_minimal_replica", "-2"),
        ("cluster.max_voters", "4"),
        ("cluster.max_standby", "9"),
        ("cluster.offline_threshold", "3"),
        ("core.remote_token_expiry", "bogus"),
        ("loki.types", "lifecycle,bogus"),
        ("loki.loglevel", "bogus"),
        ("acme.challenge", "bogus"),
        ("storage.backups_volume", "a/b/c"),
        ("storage.images_volume", "nopool/nope"),
        ("storage.images_volume", "default/nothing-here"),
        ("no.such.key", "1"),
    ];
    for (key, value) in refused {
        let body = json!({"config": {key: value}});
        let req = Req::new(Method::PATCH, "/1.0").json(&body);
        probe.step(&format!("PATCH /1.0 {key}={value}"), req).await;
    }
    let stale = "0".repeat(64);
    for method in [Method::PUT, Method::PATCH] {
        let req = Req::new(method.clone(), "/1.0")
            .json(&json!({"config": {}}))
            .header("if-match", stale.clone());
        probe
            .step(&format!("{method} /1.0 with a stale If-Match"), req)
            .await;
    }
}

/// Every endpoint of Incus 6.0.4, from its `doc/rest-api.yaml` (`tests/data/`).
const ENDPOINTS_6_0: &str = include_str!("data/incus-6.0.4-endpoints.tsv");
/// Every endpoint of Incus 7.0 (the 6.0.4 ones and 21 more).
const ENDPOINTS_7_0: &str = include_str!("data/incus-7.0-endpoints.tsv");

/// Every `GET` endpoint of an endpoint list (`tests/data/`) that names an object, asked
/// about names that exist on neither side: the same status and error text. Only those two are
/// compared here (the answers are errors, or empty answers such as a project's `access`);
/// websocket, event and console endpoints are left to their own steps.
async fn every_get_of_an_unknown_name(probe: &mut Probe, project: &str, list: &'static str) {
    let streams = ["websocket", "events", "sftp", "console"];
    for (_, path) in endpoints_naming_an_object(list, |method| method == "GET") {
        if streams.iter().any(|s| path.contains(s)) {
            continue;
        }
        let req = Req::get(unknown_names(path, project));
        unknown_name_answers_agree(probe, &format!("GET {path} (unknown names)"), &req).await;
    }
}

/// Every `POST`, `PUT`, `PATCH`, `DELETE` and `HEAD` endpoint of a list that names an object,
/// asked about names that exist on neither side with the smallest body (`{}`), compared as
/// [`every_get_of_an_unknown_name`] compares: status and error text.
///
/// Nothing is left out: every path names an object that exists on neither side (a fresh project,
/// names no test creates), so each request fails before it can act, on the daemon as on the fake.
async fn every_mutation_of_an_unknown_name(probe: &mut Probe, project: &str, list: &'static str) {
    let mut asked = 0;
    let mut equal = 0;
    for path in endpoints_naming_an_object(list, |method| method != "GET") {
        let (method, path) = path;
        let method = Method::from_bytes(method.as_bytes()).expect("a method of the endpoint list");
        let mut req = Req::new(method.clone(), unknown_names(path, project));
        if matches!(method, Method::POST | Method::PUT | Method::PATCH) {
            req = req.json(&json!({}));
        }
        asked += 1;
        if unknown_name_answers_agree(probe, &format!("{method} {path} (unknown names)"), &req)
            .await
        {
            equal += 1;
        }
    }
    println!("non-GET endpoints naming unknown objects: {equal} of {asked} answer as the daemon");
}

/// The endpoints of an endpoint list (`tests/data/`) whose method passes `wanted` and whose path
/// names an object (`{...}`), as (method, path).
fn endpoints_naming_an_object(
    list: &'static str,
    wanted: impl Fn(&str) -> bool,
) -> impl Iterator<Item = (&'static str, &'static str)> {
    list.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|line| {
            let mut cells = line.split('\t');
            Some((cells.next()?, cells.next()?))
        })
        .filter(move |(method, path)| wanted(method) && path.contains('{'))
}

/// An endpoint path with every name replaced by one that exists on neither side (a volume type by
/// `custom`), in the probe's project.
fn unknown_names(path: &str, project: &str) -> String {
    let concrete: Vec<&str> = path
        .split('/')
        .map(|s| match s {
            "{type}" => "custom",
            s if s.starts_with('{') => "nothing-here",
            s => s,
        })
        .collect();
    format!("{}?project={project}", concrete.join("/"))
}

/// Sends `req` to both sides and records a divergence when their status or error text differ.
async fn unknown_name_answers_agree(probe: &mut Probe, label: &str, req: &Req) -> bool {
    probe.steps += 1;
    let (r, f) = tokio::join!(probe.real.send(req), probe.fake.send(req));
    let r = r.unwrap_or_else(|e| panic!("{e}"));
    let f = f.unwrap_or_else(|e| panic!("{e}"));
    let answer = |reply: &Reply| (reply.status, normalised(reply.body.get("error")));
    println!("{label}: real {} | fake {}", short(&r.body), short(&f.body));
    let agree = answer(&r) == answer(&f);
    if !agree {
        probe.diffs.push((
            label.to_string(),
            format!("real {:?} | fake {:?}", answer(&r), answer(&f)),
        ));
    }
    agree
}

/// The recorded output of the exec: the log list and the stdout file.
async fn exec_output(probe: &mut Probe, inst: &str, q: &str, waited: (&Reply, &Reply)) {
    probe
        .step(
            "exec output list",
            Req::get(format!("{inst}/logs/exec-output?{q}")),
        )
        .await;
    let stdout = |r: &Reply| {
        let fallback = format!("{inst}/logs/exec-output/exec_missing.stdout");
        let path = r.metadata()["metadata"]["output"]["1"].as_str();
        format!("{}?{q}", path.unwrap_or(&fallback))
    };
    let (real, fake) = probe
        .step_each(
            "exec output stdout",
            Req::get(stdout(waited.0)),
            Req::get(stdout(waited.1)),
        )
        .await;
    if real.body != fake.body {
        let diff = format!("body: real {} vs fake {}", real.body, fake.body);
        probe.diffs.push(("exec output stdout".into(), diff));
    }
}

/// Shell lines of the kind tools run in the busybox image, in order in one instance (files made by
/// one are seen by the next): each must give the same exit status, stdout and stderr on both sides.
const SHELL_LINES: &[&str] = &[
    "umask 77 && mkdir -p \"$(echo ~/.tmp)\" && echo ok=$(pwd)",
    "echo $HOME $PWD; pwd; ls -d ~/.tmp",
    "/tmp; echo $?; nosuch; echo $?; /nope; echo $?; /etc/inittab; echo $?",
    "cat /nope; ls /nope; rm /nope; mkdir /root; mkdir /a/b; rmdir /nope; echo end",
    "echo hi > /tmp/x; cat /tmp/x; wc /tmp/x; wc -l < /tmp/x; wc -c /tmp/x; cat < /tmp/x",
    "echo `echo a` $(echo b); (cd /tmp; pwd); pwd; for i in 1 2; do echo $i; done",
    "if [ -d /tmp ]; then echo yes; fi; case ab in a*) echo A;; esac; f(){ echo f$1; return 3; }; f x; echo $?",
    "x=1; export x; env | grep ^x; command -v ls; command -v cd; command -v nosuch; echo $?; type ls",
    "set -e; false; echo no",
    "cat <<EOF\na $HOME\nEOF\ncat <<'E'\n$HOME\nE",
    "uname; uname -s -m; uname -a",
    "printf 'b\\na\\nb\\n' | sort | uniq -c; echo abc | tr a-c A-C; echo a:b:c | cut -d: -f2,3",
    "echo hello | sed 's/l/L/g'; echo xyz | grep -c y; echo q | base64; echo cQo= | base64 -d",
    "printf abc > /tmp/f; md5sum /tmp/f; sha1sum /tmp/f; sha256sum < /tmp/f",
    "mkdir -p /tmp/t/u; touch /tmp/t/a.txt /tmp/t/u/b.txt; find /tmp/t -name '*.txt' | sort | xargs echo; find /tmp/t -type d",
    "[ -f /etc/inittab ] && test ! -e /tmp/none && echo ok; [ 1 -lt 2 ]; echo $?; [ a = b ]; echo $?",
    "ls -R /etc; ls -d /tmp /root; ls /bin | head -3",
    "touch /tmp/m; chmod 751 /tmp/m; stat -c '%a %s %F' /tmp/m; chmod u-w,o+w /tmp/m; stat -c %A /tmp/m",
    "ln -s /etc/inittab /tmp/l; readlink /tmp/l; head -1 /tmp/l; cp /etc/inittab /tmp/c; mv /tmp/c /tmp/d; ls /tmp/d; basename /a/b/c.txt .txt; dirname /a/b/c",
    "id; whoami; echo $?; hostname",
    "kill -0 $$; echo $?; kill 99999; echo $?",
    "head -n 1 /etc/inittab; tail -n 1 /etc/inittab; tail -c 4 /etc/inittab",
    "echo ${x:-d} ${#HOME} $((3*4)); set -- a b; echo $# \"$@\"",
    "which sh; which uname; echo $?; mktemp -u | cut -c1-9",
    "dd if=/dev/zero bs=512 count=3 | wc -c",
    "echo a 1>&2; echo b >&2 2>/dev/null; ls /nope 2>&1 | cat",
    "while read a b; do echo \"$b $a\"; done <<E\n1 2\n3 4\nE",
    "[ -x /bin/sh ] && echo x; [ -L /bin/sh ] && echo l; [ -s /etc/inittab ] && echo s",
    "chown 1:2 /tmp/x && stat -c '%u %g' /tmp/x; chown nobody /tmp/x; echo $?",
    "grep -n sleep /etc/inittab; grep -q nope /etc/inittab; echo $?; grep -v true /etc/inittab; grep nope /nofile; echo $?",
    "rm -r /tmp/t; ls /tmp; rm -rf /tmp/nope; echo $?",
    "exit 7",
];

/// A recorded output of an exec (`fd` 1 or 2), as the body the log endpoint answers.
async fn output(side: &Side, reply: &Reply, fd: &str, q: &str) -> Value {
    let Some(path) = reply.metadata()["metadata"]["output"][fd].as_str() else {
        return Value::Null;
    };
    match side.send(&Req::get(format!("{path}?{q}"))).await {
        Ok(file) => file.body,
        Err(error) => Value::String(error),
    }
}

/// Runs each of [`SHELL_LINES`] with `sh -c` on both sides and compares status and output.
async fn shell_lines(probe: &mut Probe, inst: &str, q: &str) {
    for line in SHELL_LINES {
        let label = format!("sh -c {line:?}");
        let exec = json!({
            "command": ["sh", "-c", line], "environment": {}, "interactive": false,
            "wait-for-websocket": false, "record-output": true,
        });
        let started = probe
            .step(
                &label,
                Req::new(Method::POST, format!("{inst}/exec?{q}")).json(&exec),
            )
            .await;
        let (real, fake) = probe.wait(&label, &started).await;
        let ret = |r: &Reply| r.metadata()["metadata"]["return"].clone();
        let real_out = (
            ret(&real),
            output(&probe.real, &real, "1", q).await,
            output(&probe.real, &real, "2", q).await,
        );
        let fake_out = (
            ret(&fake),
            output(&probe.fake, &fake, "1", q).await,
            output(&probe.fake, &fake, "2", q).await,
        );
        if real_out != fake_out {
            let show =
                |o: &(Value, Value, Value)| format!("return {} stdout {} stderr {}", o.0, o.1, o.2);
            let diff = format!("real {} vs fake {}", show(&real_out), show(&fake_out));
            probe.diffs.push((label, diff));
        }
    }
}

/// A command the busybox image does not hold (`pwd`), recorded: the operation fails with `Command
/// not found` and `return` 127, and still lists both (empty) log files.
async fn exec_not_found(probe: &mut Probe, inst: &str, q: &str) {
    let label = "exec pwd, not in the image (record-output)";
    let exec = json!({
        "command": ["pwd"], "environment": {}, "interactive": false,
        "wait-for-websocket": false, "record-output": true,
    });
    let started = probe
        .step(
            label,
            Req::new(Method::POST, format!("{inst}/exec?{q}")).json(&exec),
        )
        .await;
    probe.wait(label, &started).await;
    let op = |r: &Reply| format!("/1.0/operations/{}", r.operation_id().unwrap_or_default());
    let (real, fake) = probe
        .step_each(
            "exec pwd operation",
            Req::get(op(&started.0)),
            Req::get(op(&started.1)),
        )
        .await;
    for side in [&real, &fake] {
        let output = &side.metadata()["metadata"]["output"];
        if output.as_object().map(|o| o.len()) != Some(2) {
            let diff = format!("no two output logs: {}", side.body);
            probe.diffs.push(("exec pwd operation".into(), diff));
        }
    }
    exec_output(probe, inst, q, (&real, &fake)).await;
}

/// Errors while the instance runs: most are 202 then a failed operation.
async fn running_errors(probe: &mut Probe, inst: &str, q: &str, create: &Value) {
    let start = json!({"action": "start", "timeout": 30});
    let started = probe
        .step(
            "start when running",
            Req::new(Method::PUT, format!("{inst}/state?{q}")).json(&start),
        )
        .await;
    probe.wait("start when running", &started).await;
    let started = probe
        .step(
            "create duplicate instance",
            Req::new(Method::POST, format!("/1.0/instances?{q}")).json(create),
        )
        .await;
    probe.wait("create duplicate instance", &started).await;
    let bad = json!({"action": "jump"});
    probe
        .step(
            "instance state bad action",
            Req::new(Method::PUT, format!("{inst}/state?{q}")).json(&bad),
        )
        .await;
    for (label, command) in [
        ("exec command not found", json!(["nosuchcommand"])),
        ("exec exit 3", json!(["sh", "-c", "exit 3"])),
    ] {
        let exec = json!({"command": command, "wait-for-websocket": false, "record-output": true});
        let started = probe
            .step(
                label,
                Req::new(Method::POST, format!("{inst}/exec?{q}")).json(&exec),
            )
            .await;
        probe.wait(label, &started).await;
    }
    let exec = json!({"command": ["sleep", "1"], "wait-for-websocket": false});
    let started = probe
        .step(
            "exec sleep 1",
            Req::new(Method::POST, format!("{inst}/exec?{q}")).json(&exec),
        )
        .await;
    let op = |r: &Reply| format!("/1.0/operations/{}", r.operation_id().unwrap_or_default());
    let (real, fake) = (op(&started.0), op(&started.1));
    probe
        .step_each(
            "cancel running exec",
            Req::new(Method::DELETE, &real),
            Req::new(Method::DELETE, &fake),
        )
        .await;
    probe.wait("exec sleep 1", &started).await;
    probe
        .step_each(
            "cancel finished exec",
            Req::new(Method::DELETE, &real),
            Req::new(Method::DELETE, &fake),
        )
        .await;
    probe
        .step_each(
            "wait with a bad timeout",
            Req::get(format!("{real}/wait?timeout=abc")),
            Req::get(format!("{fake}/wait?timeout=abc")),
        )
        .await;
    let unknown = "/1.0/operations/00000000-0000-0000-0000-000000000000";
    probe
        .step(
            "cancel unknown operation",
            Req::new(Method::DELETE, unknown),
        )
        .await;
    exec_websocket_timeouts(probe, inst, q).await;
    // More than 5 s have passed since the `exec sleep 1` operation finished.
    probe
        .step_each(
            "operation get after its retention",
            Req::get(real),
            Req::get(fake),
        )
        .await;
}

/// A websocket-mode exec nobody connects to: the POST answers (fds), a wait that times out
/// while they run, and the failure 5 s later.
async fn exec_websocket_timeouts(probe: &mut Probe, inst: &str, q: &str) {
    let mut started = Vec::new();
    // Only non-interactive: an unconnected interactive exec can delay the real instance's
    // next stop by minutes.
    for (label, interactive) in [("exec websocket non-interactive", false)] {
        let exec = json!({
            "command": ["true"], "wait-for-websocket": true, "interactive": interactive,
        });
        let url = format!("{inst}/exec?{q}");
        started.push((
            label,
            probe
                .step(label, Req::new(Method::POST, url).json(&exec))
                .await,
        ));
    }
    let op = |r: &Reply| format!("/1.0/operations/{}", r.operation_id().unwrap_or_default());
    let (real, fake) = (op(&started[0].1 .0), op(&started[0].1 .1));
    probe
        .step_each(
            "operation get while running",
            Req::get(real.clone()),
            Req::get(fake.clone()),
        )
        .await;
    probe
        .step_each(
            "operation wait timeout=1 while running",
            Req::get(format!("{real}/wait?timeout=1")),
            Req::get(format!("{fake}/wait?timeout=1")),
        )
        .await;
    for (label, pair) in &started {
        probe.wait(label, pair).await;
    }
}

/// The console of the running container: the websocket operation's answer, a second attach
/// (refused, then forced: the first is cancelled), cancelling it, the refusals of the body and
/// of the type, and a frozen instance's console.
async fn console(probe: &mut Probe, inst: &str, q: &str) {
    let url = format!("{inst}/console?{q}");
    let post = |body: &str| Req::new(Method::POST, &url).raw(body);
    let first = probe
        .step(
            "console",
            post(r#"{"width":80,"height":24,"type":"console"}"#),
        )
        .await;
    probe.step("console already connected", post("{}")).await;
    let forced = probe
        .step("console forced", post(r#"{"force":true}"#))
        .await;
    let op = |r: &Reply| format!("/1.0/operations/{}", r.operation_id().unwrap_or_default());
    probe
        .step_each(
            "console taken over",
            Req::get(op(&first.0)),
            Req::get(op(&first.1)),
        )
        .await;
    probe
        .step_each(
            "console cancel",
            Req::new(Method::DELETE, op(&forced.0)),
            Req::new(Method::DELETE, op(&forced.1)),
        )
        .await;
    probe
        .step_each(
            "console cancelled",
            Req::get(op(&forced.0)),
            Req::get(op(&forced.1)),
        )
        .await;
    for (label, body) in [
        ("console empty body", ""),
        ("console array body", "[1]"),
        ("console bad width", r#"{"width":"x"}"#),
        ("console vga on a container", r#"{"type":"vga"}"#),
        ("console unknown type", r#"{"type":"bogus"}"#),
    ] {
        probe.step(label, post(body)).await;
    }
    probe
        .step(
            "console of an unknown instance",
            Req::new(Method::POST, format!("/1.0/instances/nosuch/console?{q}")).raw("{}"),
        )
        .await;
    let state = format!("{inst}/state?{q}");
    let action = |name: &str| Req::new(Method::PUT, &state).json(&json!({"action": name}));
    let frozen = probe.step("console: freeze", action("freeze")).await;
    probe.wait("console: freeze", &frozen).await;
    probe.step("console of a frozen instance", post("{}")).await;
    let thawed = probe.step("console: unfreeze", action("unfreeze")).await;
    probe.wait("console: unfreeze", &thawed).await;
}

/// A custom volume's move and rename refusals (the daemon here has one pool, so a move to a
/// second one is checked by the fake's own tests): an unknown target pool, a taken name, and a
/// volume that the running instance attaches; the volumes are removed again.
async fn volume_move_refusals(probe: &mut Probe, inst: &str, q: &str) {
    let volumes = format!("/1.0/storage-pools/default/volumes/custom?{q}");
    let volume = |name: &str| format!("/1.0/storage-pools/default/volumes/custom/{name}?{q}");
    for name in ["mv1", "mv2"] {
        let body = json!({"name": name, "config": {}});
        probe
            .step(
                &format!("volume {name} create"),
                Req::new(Method::POST, &volumes).json(&body),
            )
            .await;
    }
    let post = |body: Value| Req::new(Method::POST, volume("mv1")).json(&body);
    probe
        .step(
            "volume move to an unknown pool",
            post(json!({"name": "mv3", "pool": "nope"})),
        )
        .await;
    probe
        .step(
            "volume move onto a taken name",
            post(json!({"name": "mv2", "pool": "default"})),
        )
        .await;
    let attach = json!({"devices": {"mv": {"type": "disk", "pool": "default", "source": "mv1", "path": "/mnt/mv"}}});
    probe
        .step(
            "volume attach (running instance)",
            Req::new(Method::PATCH, format!("{inst}?{q}")).json(&attach),
        )
        .await;
    probe
        .step(
            "volume rename while a running instance attaches it",
            post(json!({"name": "mv3"})),
        )
        .await;
    // Detach: a PUT of the instance without the device (PATCH merges devices).
    let (real, fake) = probe
        .step(
            "volume detach: get instance",
            Req::get(format!("{inst}?{q}")),
        )
        .await;
    let detached = |r: &Reply| {
        let mut body = r.metadata().clone();
        if let Some(devices) = body["devices"].as_object_mut() {
            devices.remove("mv");
        }
        body
    };
    let url = format!("{inst}?{q}");
    let started = probe
        .step_each(
            "volume detach",
            Req::new(Method::PUT, &url).json(&detached(&real)),
            Req::new(Method::PUT, &url).json(&detached(&fake)),
        )
        .await;
    probe.wait("volume detach", &started).await;
    for name in ["mv1", "mv2"] {
        probe
            .step(
                &format!("volume {name} delete"),
                Req::new(Method::DELETE, volume(name)),
            )
            .await;
    }
}

/// A stopped instance's console is refused.
async fn console_stopped(probe: &mut Probe, inst: &str, q: &str) {
    probe
        .step(
            "console of a stopped instance",
            Req::new(Method::POST, format!("{inst}/console?{q}")).raw("{}"),
        )
        .await;
}

/// A publish of the stopped instance with a compression the daemon does not know: the operation
/// fails with its text (before any image is made, so nothing lands in the images the probe's
/// project shares with `default`).
async fn publish_unknown_compression(probe: &mut Probe, name: &str, q: &str) {
    let body =
        json!({"source": {"type": "instance", "name": name}, "compression_algorithm": "foo"});
    let started = probe
        .step(
            "publish with an unknown compression",
            Req::new(Method::POST, format!("/1.0/images?{q}")).json(&body),
        )
        .await;
    probe
        .wait("publish with an unknown compression", &started)
        .await;
}

/// Freeze (and exec on a frozen instance), unfreeze, restart.
async fn freeze_and_restart(probe: &mut Probe, inst: &str, q: &str) {
    let state = format!("{inst}/state?{q}");
    let action = |name: &str| Req::new(Method::PUT, &state).json(&json!({"action": name}));
    let started = probe.step("freeze", action("freeze")).await;
    probe.wait("freeze", &started).await;
    probe
        .step("get instance state (frozen)", Req::get(&state))
        .await;
    let exec = json!({"command": ["true"], "wait-for-websocket": false});
    probe
        .step(
            "exec on a frozen instance",
            Req::new(Method::POST, format!("{inst}/exec?{q}")).json(&exec),
        )
        .await;
    let started = probe.step("unfreeze", action("unfreeze")).await;
    probe.wait("unfreeze", &started).await;
    let restart = json!({"action": "restart", "force": true});
    let started = probe
        .step(
            "restart (force)",
            Req::new(Method::PUT, &state).json(&restart),
        )
        .await;
    probe.wait("restart (force)", &started).await;
    probe
        .step("get instance state (restarted)", Req::get(&state))
        .await;
}

/// Errors once the instance is stopped.
async fn stopped_errors(probe: &mut Probe, inst: &str, q: &str) {
    let stop = json!({"action": "stop", "force": true});
    let started = probe
        .step(
            "stop when stopped",
            Req::new(Method::PUT, format!("{inst}/state?{q}")).json(&stop),
        )
        .await;
    probe.wait("stop when stopped", &started).await;
    let exec = json!({"command": ["true"], "wait-for-websocket": true});
    probe
        .step(
            "exec on a stopped instance",
            Req::new(Method::POST, format!("{inst}/exec?{q}")).json(&exec),
        )
        .await;
    probe
        .step(
            "instances with a bad filter",
            Req::get(format!("/1.0/instances?{q}&recursion=1&filter=name%20zz")),
        )
        .await;
    for (label, body) in [
        ("create without source", json!({"name": "nosource"})),
        (
            "create with a bad name",
            json!({"name": "bad_name!", "source": {"type": "image", "alias": "busybox"}}),
        ),
    ] {
        probe
            .step(
                label,
                Req::new(Method::POST, format!("/1.0/instances?{q}")).json(&body),
            )
            .await;
    }
    probe
        .step(
            "delete unknown instance",
            Req::new(Method::DELETE, format!("/1.0/instances/nosuch?{q}")),
        )
        .await;
    probe
        .step(
            "snapshots of unknown instance",
            Req::get(format!("/1.0/instances/nosuch/snapshots?{q}")),
        )
        .await;
    probe
        .step(
            "method not allowed",
            Req::new(Method::PATCH, format!("/1.0/instances?{q}")).json(&json!({})),
        )
        .await;
}

/// PUT with the instance's own body (as a client would), after a GET on each side.
async fn put_update(probe: &mut Probe, inst: &str, q: &str) {
    let (real, fake) = probe
        .step("get instance (for PUT)", Req::get(format!("{inst}?{q}")))
        .await;
    let body = |r: &Reply| {
        let mut m = r.metadata().clone();
        m["config"]["user.put"] = json!("1");
        m
    };
    let url = format!("{inst}?{q}");
    let started = probe
        .step_each(
            "PUT update",
            Req::new(Method::PUT, &url).json(&body(&real)),
            Req::new(Method::PUT, &url).json(&body(&fake)),
        )
        .await;
    probe.wait("PUT update", &started).await;
    let stale = Req::new(Method::PUT, &url)
        .header(
            "If-Match",
            "\"0000000000000000000000000000000000000000000000000000000000000000\"",
        )
        .json(&json!({"description": "stale"}));
    probe.step("PUT with stale If-Match", stale).await;
}

async fn instance_updates(probe: &mut Probe, inst: &str, q: &str) {
    let (real, fake) = probe
        .step("get instance (etag)", Req::get(format!("{inst}?{q}")))
        .await;
    assert!(
        real.etag.is_some() && fake.etag.is_some(),
        "both sides send an ETag on GET instance"
    );
    let stale = Req::new(Method::PATCH, format!("{inst}?{q}"))
        .header(
            "If-Match",
            "\"0000000000000000000000000000000000000000000000000000000000000000\"",
        )
        .json(&json!({"description": "stale"}));
    probe.step("PATCH with stale If-Match", stale).await;
    let star = Req::new(Method::PATCH, format!("{inst}?{q}"))
        .header("If-Match", "*")
        .json(&json!({"description": "star"}));
    probe.step("PATCH with If-Match *", star).await;
    let description = Req::new(Method::PATCH, format!("{inst}?{q}"))
        .json(&json!({"description": "probe", "config": {"user.probe": "0"}}));
    probe.step("PATCH description", description).await;
    let before = probe
        .step(
            "get instance (etag before)",
            Req::get(format!("{inst}?{q}")),
        )
        .await;
    let description = Req::new(Method::PATCH, format!("{inst}?{q}"))
        .json(&json!({"description": "probe2", "config": {"user.probe": "0"}}));
    probe.step("PATCH description only", description).await;
    let after = probe
        .step("get instance (etag after)", Req::get(format!("{inst}?{q}")))
        .await;
    probe.etag_changes("ETag after a description-only PATCH", &before, &after);
    let patch = Req::new(Method::PATCH, format!("{inst}?{q}"))
        .json(&json!({"config": {"user.probe": "1"}}));
    probe.step("PATCH ok", patch).await;
    let patched = probe
        .step(
            "get instance (etag patched)",
            Req::get(format!("{inst}?{q}")),
        )
        .await;
    probe.etag_changes("ETag after a config PATCH", &after, &patched);
    let bad = Req::new(Method::PATCH, format!("{inst}?{q}"))
        .json(&json!({"config": {"limits.memory": "bogus"}}));
    probe.step("PATCH bad config", bad).await;
    // Undo it where it was wrongly applied (`""` deletes a key), so one divergence stays one.
    let undo = Req::new(Method::PATCH, format!("{inst}?{q}"))
        .json(&json!({"config": {"limits.memory": ""}}));
    probe.step("PATCH removing limits.memory", undo).await;
    probe
        .step(
            "PATCH bad JSON",
            Req::new(Method::PATCH, format!("{inst}?{q}")).raw("{"),
        )
        .await;
    probe
        .step(
            "PATCH empty body",
            Req::new(Method::PATCH, format!("{inst}?{q}")).raw(""),
        )
        .await;
    probe
        .step(
            "state change with a truncated literal",
            Req::new(Method::PUT, format!("{inst}/state?{q}")).raw("nul"),
        )
        .await;
    probe
        .step(
            "get instance after PATCH",
            Req::get(format!("{inst}?{q}&recursion=1")),
        )
        .await;
    put_update(probe, inst, q).await;
}

async fn snapshots(probe: &mut Probe, inst: &str, q: &str) {
    let started = probe
        .step(
            "snapshot create",
            Req::new(Method::POST, format!("{inst}/snapshots?{q}")).json(&json!({"name": "snap0"})),
        )
        .await;
    probe.wait("snapshot create", &started).await;
    let started = probe
        .step(
            "snapshot create duplicate",
            Req::new(Method::POST, format!("{inst}/snapshots?{q}")).json(&json!({"name": "snap0"})),
        )
        .await;
    probe.wait("snapshot create duplicate", &started).await;
    probe
        .step("snapshots list", Req::get(format!("{inst}/snapshots?{q}")))
        .await;
    probe
        .step(
            "snapshots list recursion=1",
            Req::get(format!("{inst}/snapshots?{q}&recursion=1")),
        )
        .await;
    probe
        .step(
            "snapshot get",
            Req::get(format!("{inst}/snapshots/snap0?{q}")),
        )
        .await;
    let started = probe
        .step(
            "snapshot create snap1",
            Req::new(Method::POST, format!("{inst}/snapshots?{q}")).json(&json!({"name": "snap1"})),
        )
        .await;
    probe.wait("snapshot create snap1", &started).await;
    let snap0 = probe
        .step(
            "snapshot get snap0",
            Req::get(format!("{inst}/snapshots/snap0?{q}")),
        )
        .await;
    let snap1 = probe
        .step(
            "snapshot get snap1",
            Req::get(format!("{inst}/snapshots/snap1?{q}")),
        )
        .await;
    // Incus gives every snapshot of an instance the same ETag.
    probe.etag_changes("ETag of two snapshots", &snap0, &snap1);
    probe
        .step(
            "snapshot get unknown",
            Req::get(format!("{inst}/snapshots/nosuch?{q}")),
        )
        .await;
}

/// Restores on the stopped instance: restoring a running busybox container on the real
/// daemon sometimes blocks for minutes (its clean shutdown), which would make the probe flaky.
async fn restore_and_delete_snapshot(probe: &mut Probe, inst: &str, q: &str) {
    let started = probe
        .step(
            "restore snapshot",
            Req::new(Method::PUT, format!("{inst}?{q}")).json(&json!({"restore": "snap0"})),
        )
        .await;
    probe.wait("restore snapshot", &started).await;
    let started = probe
        .step(
            "restore missing snapshot",
            Req::new(Method::PUT, format!("{inst}?{q}")).json(&json!({"restore": "nosuch"})),
        )
        .await;
    probe.wait("restore missing snapshot", &started).await;
    let started = probe
        .step(
            "snapshot delete",
            Req::new(Method::DELETE, format!("{inst}/snapshots/snap0?{q}")),
        )
        .await;
    probe.wait("snapshot delete", &started).await;
}

async fn operations(probe: &mut Probe, q: &str, stopped: &(Reply, Reply)) {
    probe
        .step("operations list", Req::get(format!("/1.0/operations?{q}")))
        .await;
    probe
        .step(
            "operations list recursion=1",
            Req::get(format!("/1.0/operations?{q}&recursion=1")),
        )
        .await;
    let id = |r: &Reply| r.operation_id().unwrap_or_default();
    let (real, fake) = (id(&stopped.0), id(&stopped.1));
    probe
        .step_each(
            "operation get (finished, retained)",
            Req::get(format!("/1.0/operations/{real}")),
            Req::get(format!("/1.0/operations/{fake}")),
        )
        .await;
    probe
        .step_each(
            "operation wait timeout=1 (finished)",
            Req::get(format!("/1.0/operations/{real}/wait?timeout=1")),
            Req::get(format!("/1.0/operations/{fake}/wait?timeout=1")),
        )
        .await;
    let unknown = "/1.0/operations/00000000-0000-0000-0000-000000000000";
    probe.step("operation get unknown", Req::get(unknown)).await;
    probe
        .step(
            "operations with project and all-projects",
            Req::get(format!("/1.0/operations?{q}&all-projects=true")),
        )
        .await;
    probe
        .step(
            "operation wait unknown",
            Req::get(format!("{unknown}/wait?timeout=1")),
        )
        .await;
}

async fn read_only_resources(probe: &mut Probe, project: &str, name: &str) {
    let q = format!("project={project}");
    probe
        .step(
            "get unknown instance",
            Req::get(format!("/1.0/instances/nosuch?{q}")),
        )
        .await;
    probe
        .step(
            "create instance bad JSON",
            Req::new(Method::POST, format!("/1.0/instances?{q}")).raw("{"),
        )
        .await;
    probe
        .step(
            "create instance: bytes after the JSON value are ignored",
            Req::new(Method::POST, format!("/1.0/instances?{q}")).raw(r#"{"name": "x1"} junk"#),
        )
        .await;
    let (real, fake) = probe
        .step("images list", Req::get(format!("/1.0/images?{q}")))
        .await;
    probe
        .step(
            "images list recursion=1",
            Req::get(format!("/1.0/images?{q}&recursion=1")),
        )
        .await;
    let busybox = |r: &Reply| {
        r.metadata()
            .as_array()
            .and_then(|a| a.first())
            .and_then(Value::as_str)
            .unwrap_or("/1.0/images/none")
            .split('?')
            .next()
            .unwrap_or_default()
            .to_string()
    };
    probe
        .step_each(
            "image get",
            Req::get(format!("{}?{q}", busybox(&real))),
            Req::get(format!("{}?{q}", busybox(&fake))),
        )
        .await;
    probe
        .step(
            "image get unknown",
            Req::get(format!("/1.0/images/ffff?{q}")),
        )
        .await;
    probe
        .step(
            "image aliases",
            Req::get(format!("/1.0/images/aliases?{q}")),
        )
        .await;
    probe
        .step(
            "image aliases recursion=1",
            Req::get(format!("/1.0/images/aliases?{q}&recursion=1")),
        )
        .await;
    probe
        .step(
            "image alias busybox",
            Req::get(format!("/1.0/images/aliases/busybox?{q}")),
        )
        .await;
    probe
        .step(
            "image alias unknown",
            Req::get(format!("/1.0/images/aliases/nosuch?{q}")),
        )
        .await;
    for (label, path) in [
        ("networks", "/1.0/networks"),
        ("network lo", "/1.0/networks/lo"),
        ("network unknown", "/1.0/networks/nosuch"),
        ("profiles", "/1.0/profiles"),
        ("profile default", "/1.0/profiles/default"),
        ("profile unknown", "/1.0/profiles/nosuch"),
        ("storage pools", "/1.0/storage-pools"),
        ("storage pool default", "/1.0/storage-pools/default"),
        ("storage pool unknown", "/1.0/storage-pools/nosuch"),
        ("storage volumes", "/1.0/storage-pools/default/volumes"),
        (
            "storage pool resources unknown",
            "/1.0/storage-pools/nosuch/resources",
        ),
        ("storage buckets", "/1.0/storage-pools/default/buckets"),
        (
            "storage bucket unknown",
            "/1.0/storage-pools/default/buckets/nosuch",
        ),
        ("network acls", "/1.0/network-acls"),
        ("network acl unknown", "/1.0/network-acls/nosuch"),
        ("network zones", "/1.0/network-zones"),
        ("network zone unknown", "/1.0/network-zones/nosuch"),
        (
            "network zone records unknown zone",
            "/1.0/network-zones/nosuch/records",
        ),
        ("network forwards of lo", "/1.0/networks/lo/forwards"),
        ("network leases of unknown", "/1.0/networks/nosuch/leases"),
        ("network allocations", "/1.0/network-allocations"),
        (
            "network integration unknown",
            "/1.0/network-integrations/nosuch",
        ),
        ("certificate unknown", "/1.0/certificates/nosuch"),
        ("warning unknown", "/1.0/warnings/nosuch"),
    ] {
        probe.step(label, Req::get(format!("{path}?{q}"))).await;
        probe
            .step(
                &format!("{label} recursion=1"),
                Req::get(format!("{path}?{q}&recursion=1")),
            )
            .await;
    }
    probe.step("projects", Req::get("/1.0/projects")).await;
    probe
        .step(
            "projects recursion=1",
            Req::get("/1.0/projects?recursion=1"),
        )
        .await;
    probe
        .step("project get", Req::get(format!("/1.0/projects/{project}")))
        .await;
    probe
        .step("project unknown", Req::get("/1.0/projects/nosuchproject"))
        .await;
    probe
        .step(
            "project state",
            Req::get(format!("/1.0/projects/{project}/state")),
        )
        .await;
    probe
        .step(
            "project state unknown",
            Req::get("/1.0/projects/nosuchproject/state"),
        )
        .await;
    probe
        .step(
            "instances in unknown project",
            Req::get("/1.0/instances?project=nosuchproject"),
        )
        .await;
    probe
        .step(
            "instance in unknown project",
            Req::get(format!("/1.0/instances/{name}?project=nosuchproject")),
        )
        .await;
    let inst = format!("/1.0/instances/{name}?{q}");
    let deleted = probe
        .step("delete instance", Req::new(Method::DELETE, &inst))
        .await;
    probe.wait("delete instance", &deleted).await;
    probe
        .step("get instance after delete", Req::get(inst))
        .await;
}

/// Known divergences of the fake in 7.0 mode from Incus 7.0.2, each with its reason. Every
/// difference of the two lines is the fake's line table's (`fake_incus::IncusLine`, keyed on API
/// extensions); what a host shows of itself is in `differential::HOST_PROPERTIES`.
const KNOWN_7_0: &[Known] = &[];

/// The fake as Incus 7.0 against a real 7.0 daemon (`INCUS7_SOCKET`, as `ci/incus7.sh` prints
/// it): every endpoint of 7.0's list, `GET`s without a name compared whole, every other endpoint
/// asked about names that exist on neither side (status and error text), then the resources 7.0
/// adds with objects of their own. In a project of its own (and, for the network address set
/// that lives in `default`'s networks, a name of its own), removed at the end.
async fn fake_as_incus_7_0_answers_like_the_real_7_0_daemon_endpoint_by_endpoint() -> Completion {
    let Some(socket) = std::env::var_os("INCUS7_SOCKET").map(PathBuf::from) else {
        return Completion::ignored_with(
            "needs a real Incus 7.0 daemon on INCUS7_SOCKET (unset; ci/incus7.sh prints it)",
        );
    };
    if !answers(&socket).await {
        return Completion::ignored_with(format!(
            "needs a real Incus 7.0 daemon on INCUS7_SOCKET (none answers at {})",
            socket.display()
        ));
    }
    let unique = uuid::Uuid::new_v4().simple().to_string();
    let project = format!("diff-{}", &unique[..8]);
    let set = format!("diff-set-{}", &unique[..8]);
    let real = Side::new("real", &socket);
    remove_stale_projects(&real).await;
    let features = json!({"features.images": "false", "features.profiles": "false"});
    let create_project = Req::new(Method::POST, "/1.0/projects")
        .json(&json!({"name": project, "config": features, "description": owner_mark()}));
    let created = real.send(&create_project).await.expect("real answers");
    let _cleanup = Cleanup {
        socket: socket.clone(),
        project: project.clone(),
        instance: format!("dp{}", &unique[..8]),
        leftovers: vec![
            format!("/1.0/storage-pools/default/volumes/custom/v1?project={project}"),
            format!("/1.0/network-address-sets/{set}?project={project}"),
        ],
    };
    assert!(
        created.is_success(),
        "creating project {project} on the real daemon: {}",
        created.body
    );
    let read = real
        .send(&Req::get(format!("/1.0/projects/{project}")))
        .await
        .expect("real answers");
    let config = read.metadata()["config"].clone();
    let blank = fake_incus::FakeIncus::builder()
        .incus_version(fake_incus::IncusLine::V7_0)
        .start()
        .await
        .expect("fake starts");
    let seed = seed_with_project(blank.dump_state(), &project, &owner_mark(), &config);
    drop(blank);
    let fake = fake_incus::FakeIncus::builder()
        .incus_version(fake_incus::IncusLine::V7_0)
        .state(seed)
        .start()
        .await
        .expect("fake starts with the probe project");
    let mut probe = Probe {
        real,
        fake: Side::new("fake", fake.unix_socket()),
        diffs: Vec::new(),
        steps: 0,
    };
    every_get_without_a_name(&mut probe, &project, ENDPOINTS_7_0).await;
    every_get_of_an_unknown_name(&mut probe, &project, ENDPOINTS_7_0).await;
    every_mutation_of_an_unknown_name(&mut probe, &project, ENDPOINTS_7_0).await;
    what_7_0_adds(&mut probe, &project, &set).await;
    report(&probe, KNOWN_7_0);
    Completion::Completed
}

/// Every `GET` endpoint of a list that names no object, compared whole (streams left out).
async fn every_get_without_a_name(probe: &mut Probe, project: &str, list: &'static str) {
    let endpoints = list
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|line| {
            let mut cells = line.split('\t');
            Some((cells.next()?, cells.next()?))
        })
        .filter(|(method, path)| *method == "GET" && !path.contains('{'));
    for (_, path) in endpoints {
        if path == "/1.0/events" {
            continue;
        }
        probe
            .step(
                &format!("GET {path}"),
                Req::get(format!("{path}?project={project}")),
            )
            .await;
    }
}

/// The resources Incus 7.0 adds, with objects: a network address set (created, read, listed,
/// patched, deleted) and a custom volume's files, bitmaps, NBD and rebuild.
async fn what_7_0_adds(probe: &mut Probe, project: &str, set: &str) {
    let q = format!("project={project}");
    let sets = format!("/1.0/network-address-sets?{q}");
    let one = format!("/1.0/network-address-sets/{set}?{q}");
    let body = json!({"name": set, "addresses": ["10.0.0.1", "10.0.1.0/24", "10.0.0.120-10.0.0.130"],
                      "description": "probe", "config": {"user.a": "b"}});
    probe
        .step(
            "create network address set",
            Req::new(Method::POST, &sets).json(&body),
        )
        .await;
    probe
        .step(
            "create network address set again",
            Req::new(Method::POST, &sets).json(&body),
        )
        .await;
    probe.step("get network address set", Req::get(&one)).await;
    probe
        .step(
            "list network address sets",
            Req::get(format!("{sets}&recursion=1")),
        )
        .await;
    let patch = json!({"config": {"user.c": "d"}});
    probe
        .step(
            "patch network address set",
            Req::new(Method::PATCH, &one).json(&patch),
        )
        .await;
    probe
        .step("get patched network address set", Req::get(&one))
        .await;
    probe
        .step("delete network address set", Req::new(Method::DELETE, &one))
        .await;
    // Refused on 7.0, so nothing is made: an ACL rule naming a set that does not exist, a
    // project with its own networks (OVN needed), a state change of a project that does not
    // exist (refused before its body is read).
    for (direction, field) in [("ingress", "source"), ("egress", "destination")] {
        let rule = json!({"action": "allow", "state": "enabled", field: format!("${set}-none")});
        let acl = json!({"name": format!("{set}-acl"), direction: [rule]});
        probe
            .step(
                &format!("ACL {direction} rule naming an unknown address set"),
                Req::new(Method::POST, format!("/1.0/network-acls?{q}")).json(&acl),
            )
            .await;
    }
    let networks = json!({"name": format!("{project}-n"), "config": {"features.networks": "true"}});
    probe
        .step(
            "project with features.networks",
            Req::new(Method::POST, "/1.0/projects").json(&networks),
        )
        .await;
    for body in [json!({"state": {"action": "bogus"}}), json!({})] {
        probe
            .step(
                &format!("PUT /1.0/instances in an unknown project, body {body}"),
                Req::new(Method::PUT, "/1.0/instances?project=nosuchproject").json(&body),
            )
            .await;
    }
    let volumes = format!("/1.0/storage-pools/default/volumes/custom?{q}");
    let volume = "/1.0/storage-pools/default/volumes/custom/v1";
    probe
        .step(
            "create custom volume",
            Req::new(Method::POST, &volumes).json(&json!({"name": "v1"})),
        )
        .await;
    probe
        .step(
            "volume files /",
            Req::get(format!("{volume}/files?path=/&{q}")),
        )
        .await;
    probe
        .step(
            "volume file push",
            Req::new(Method::POST, format!("{volume}/files?path=/hello&{q}")).raw("hi"),
        )
        .await;
    probe
        .step(
            "volume files / after a push",
            Req::get(format!("{volume}/files?path=/&{q}")),
        )
        .await;
    probe
        .step(
            "volume file missing",
            Req::get(format!("{volume}/files?path=/nope&{q}")),
        )
        .await;
    probe
        .step("volume bitmaps", Req::get(format!("{volume}/bitmaps?{q}")))
        .await;
    probe
        .step(
            "volume nbd",
            Req::get(format!("{volume}/nbd?{q}")).header("upgrade", "nbd"),
        )
        .await;
    let started = probe
        .step(
            "volume rebuild",
            Req::new(Method::POST, format!("{volume}/rebuild?{q}")),
        )
        .await;
    probe.wait("volume rebuild", &started).await;
    probe
        .step(
            "volume files / after a rebuild",
            Req::get(format!("{volume}/files?path=/&{q}")),
        )
        .await;
    probe
        .step(
            "delete custom volume",
            Req::new(Method::DELETE, format!("{volume}?{q}")),
        )
        .await;
}

fn main() -> std::process::ExitCode {
    let args = libtest_mimic::Arguments::from_args();
    let trials = vec![
        trial(
            "fake_answers_like_the_real_daemon_request_by_request",
            fake_answers_like_the_real_daemon_request_by_request,
        ),
        trial(
            "fake_as_incus_7_0_answers_like_the_real_7_0_daemon_endpoint_by_endpoint",
            fake_as_incus_7_0_answers_like_the_real_7_0_daemon_endpoint_by_endpoint,
        ),
    ];
    libtest_mimic::run(&args, trials).exit_code()
}
