//! `--state-dir`: the whole state survives a restart, a SIGKILL at any moment loses no answered
//! change and leaves a state that loads, and a state file of another format version is refused.
//!
//! The kill loop runs `FAKE_INCUS_KILL_LOOPS` rounds (default 5; the target is 1,000)
//! under a mutating load, within `FAKE_INCUS_KILL_SECONDS` (default 120): each round starts the
//! binary on the same directory, checks every change answered so far, changes things from
//! several clients at once, and kills the fake (SIGKILL, through its handle) at a random moment
//! drawn from `FAKE_INCUS_KILL_SEED` (printed, so that a failure can be replayed).

use fake_incus::{client, Request};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const BIN: &str = env!("CARGO_BIN_EXE_fake-incus");

fn env_number(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Starts `fake-incus serve` on `dir` (socket `dir/incus.socket`, state `dir/state`) and waits
/// (bounded) for its ready line. Errors carry what the fake wrote on stderr.
pub(crate) async fn start(dir: &Path, extra: &[&str]) -> Result<Child, String> {
    let mut child = Command::new(BIN)
        .arg("serve")
        .arg("--unix")
        .arg(dir.join("incus.socket"))
        .arg("--state-dir")
        .arg(dir.join("state"))
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| e.to_string())?;
    let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
    match tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await {
        Ok(Ok(Some(_ready))) => Ok(child),
        _ => {
            let _ = child.kill().await;
            let output = child.wait_with_output().await.map_err(|e| e.to_string())?;
            Err(String::from_utf8_lossy(&output.stderr).into_owned())
        }
    }
}

pub(crate) async fn send(socket: &Path, request: Request) -> Option<fake_incus::Reply> {
    let reply = tokio::time::timeout(Duration::from_secs(10), client::send(socket, request))
        .await
        .ok()?
        .ok()?;
    (!reply.dropped()).then_some(reply)
}

/// What a client knows of one resource after its request.
#[derive(Debug, Clone, PartialEq)]
enum Known {
    /// Answered: it exists with this value.
    Present(String),
    /// Answered: it is gone.
    Absent,
    /// Not answered (the fake died first): either is right, but never half of it.
    Either(String),
}

type Ledger = Arc<Mutex<BTreeMap<String, Known>>>;

/// One client's load: creates profiles (with a config value), writes files into `c1`, deletes
/// some of its profiles; records what was answered.
async fn client_load(socket: PathBuf, ledger: Ledger, tag: String) {
    for i in 0u32.. {
        let name = format!("p-{tag}-{i}");
        let value = format!("v{i}");
        let created = send(
            &socket,
            Request::post("/1.0/profiles")
                .json(&json!({"name": name, "config": {"user.n": value, "user.m": value}})),
        )
        .await;
        let known = match created {
            Some(r) if r.status() < 300 => Known::Present(value.clone()),
            Some(r) => panic!("creating {name}: {} {:?}", r.status(), r.json()),
            None => Known::Either(value.clone()),
        };
        let died = !matches!(known, Known::Present(_));
        ledger
            .lock()
            .unwrap()
            .insert(format!("profile {name}"), known);
        if died {
            return;
        }
        let file = format!("/root/f-{tag}-{i}");
        let written = send(
            &socket,
            Request::post(&format!("/1.0/instances/c1/files?path={file}"))
                .header("X-Incus-type", "file")
                .body(value.clone().into_bytes()),
        )
        .await;
        let known = match written {
            Some(r) if r.status() < 300 => Known::Present(value.clone()),
            Some(r) => panic!("writing {file}: {} {:?}", r.status(), r.json()),
            None => Known::Either(value.clone()),
        };
        let died = !matches!(known, Known::Present(_));
        ledger.lock().unwrap().insert(format!("file {file}"), known);
        if died {
            return;
        }
        if i % 3 == 2 {
            let gone = format!("p-{tag}-{}", i - 1);
            let deleted = send(&socket, Request::delete(&format!("/1.0/profiles/{gone}"))).await;
            let known = match deleted {
                Some(r) if r.status() < 300 => Known::Absent,
                Some(r) => panic!("deleting {gone}: {} {:?}", r.status(), r.json()),
                None => Known::Either(format!("v{}", i - 1)),
            };
            let died = known != Known::Absent;
            ledger
                .lock()
                .unwrap()
                .insert(format!("profile {gone}"), known);
            if died {
                return;
            }
        }
    }
}

/// Checks the entries of the ledger whose key `chosen` accepts against the restarted fake;
/// returns how many answered changes it checked. The profiles come in one list, so that a
/// long run's checks stay cheap.
async fn check(socket: &Path, ledger: &Ledger, chosen: impl Fn(&str) -> bool) -> usize {
    let entries: Vec<(String, Known)> = ledger
        .lock()
        .unwrap()
        .iter()
        .filter(|(what, _)| chosen(what))
        .map(|(what, known)| (what.clone(), known.clone()))
        .collect();
    let listed = send(socket, Request::get("/1.0/profiles?recursion=1"))
        .await
        .expect("the restarted fake answers");
    let profiles: BTreeMap<String, Value> = listed
        .metadata()
        .as_array()
        .expect("a list of profiles")
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap_or_default().to_string(),
                p["config"].clone(),
            )
        })
        .collect();
    let mut answered = 0;
    for (what, known) in entries {
        let (kind, name) = what.split_once(' ').unwrap();
        let found: Option<String> = if kind == "profile" {
            profiles.get(name).map(|config| {
                assert_eq!(
                    config["user.n"], config["user.m"],
                    "{what}: half of a change applied: {config}"
                );
                config["user.n"].as_str().unwrap_or_default().to_string()
            })
        } else {
            let reply = send(
                socket,
                Request::get(&format!("/1.0/instances/c1/files?path={name}")),
            )
            .await
            .expect("the restarted fake answers");
            match reply.status() {
                404 => None,
                200 => Some(String::from_utf8_lossy(reply.bytes()).into_owned()),
                other => panic!("{what}: {other}"),
            }
        };
        match known {
            Known::Present(value) => {
                answered += 1;
                assert_eq!(found, Some(value), "{what}: an answered change was lost");
            }
            Known::Absent => {
                answered += 1;
                assert_eq!(found, None, "{what}: an answered delete was lost");
            }
            Known::Either(value) => assert!(
                found.is_none() || found.as_deref() == Some(value.as_str()),
                "{what}: neither before nor after: {found:?}"
            ),
        }
    }
    answered
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fake_killed_at_any_moment_restarts_with_every_answered_change_and_nothing_half_applied()
{
    let rounds = env_number("FAKE_INCUS_KILL_LOOPS", 5);
    let budget = Duration::from_secs(env_number("FAKE_INCUS_KILL_SECONDS", 120));
    let seed = env_number("FAKE_INCUS_KILL_SEED", 20_261_202);
    println!("kill loop: {rounds} rounds, seed {seed}");
    let mut random = seed | 1;
    let mut next = move || {
        // xorshift64: enough to spread the kill moments, and the same every run for a seed.
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        random
    };
    let dir = tempfile::tempdir().unwrap();
    let seed_file = dir.path().join("seed.json");
    std::fs::write(
        &seed_file,
        json!({"instances": [{"name": "c1", "status": "Running"}]}).to_string(),
    )
    .unwrap();
    let socket = dir.path().join("incus.socket");
    let ledger: Ledger = Arc::default();
    let started = Instant::now();
    let mut done = 0;
    while done < rounds && started.elapsed() < budget {
        let mut child = start(dir.path(), &["--state", seed_file.to_str().unwrap()])
            .await
            .unwrap_or_else(|e| panic!("round {done}: the state did not load: {e}"));
        // What the last round changed was in flight when the fake died; the final check below
        // reads everything again.
        let last = format!("-{}.", done.max(1) - 1);
        check(&socket, &ledger, |what| what.contains(&last)).await;
        let clients: Vec<_> = (0..3)
            .map(|c| {
                tokio::spawn(client_load(
                    socket.clone(),
                    Arc::clone(&ledger),
                    format!("{done}.{c}"),
                ))
            })
            .collect();
        // Somewhere between at once and 150 ms into the load.
        let moment = Duration::from_micros(next() % 150_000);
        tokio::time::sleep(moment).await;
        child.kill().await.unwrap();
        for client in clients {
            tokio::time::timeout(Duration::from_secs(30), client)
                .await
                .expect("a client stops once the fake is gone")
                .unwrap();
        }
        done += 1;
    }
    let mut child = start(dir.path(), &[])
        .await
        .unwrap_or_else(|e| panic!("after {done} kills the state did not load: {e}"));
    let answered = check(&socket, &ledger, |_| true).await;
    child.kill().await.unwrap();
    println!(
        "kill loop: {done} kills in {:?}, {answered} answered changes checked, 0 lost",
        started.elapsed()
    );
    assert!(done >= 1, "no round ran within {budget:?}");
    assert!(answered > 0, "the load changed nothing");
}

#[tokio::test]
async fn the_whole_state_survives_a_restart_files_included_and_operations_do_not() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("incus.socket");
    let mut child = start(dir.path(), &[]).await.unwrap();
    let created = send(
        &socket,
        Request::post("/1.0/instances").json(&json!({"name": "c1", "source": {"type": "none"}})),
    )
    .await
    .unwrap();
    let operation = created.operation().unwrap().to_string();
    let done = send(&socket, Request::get(&format!("{operation}/wait")))
        .await
        .unwrap();
    assert_eq!(done.metadata()["status"], "Success");
    let written = send(
        &socket,
        Request::post("/1.0/instances/c1/files?path=/root/kept")
            .header("X-Incus-type", "file")
            .body(&b"kept\n"[..]),
    )
    .await
    .unwrap();
    assert_eq!(written.status(), 200);
    child.kill().await.unwrap();

    let mut child = start(dir.path(), &[]).await.unwrap();
    let file = send(
        &socket,
        Request::get("/1.0/instances/c1/files?path=/root/kept"),
    )
    .await
    .unwrap();
    assert_eq!(
        (file.status(), file.bytes().as_ref()),
        (200, &b"kept\n"[..])
    );
    let gone = send(&socket, Request::get(&operation)).await.unwrap();
    fake_incus::assert_native_error(&gone, 404, "Operation not found");
    let listed = send(&socket, Request::get("/1.0/operations"))
        .await
        .unwrap();
    assert_eq!(
        listed.metadata(),
        &json!({}),
        "a restarted daemon has no operations"
    );
    child.kill().await.unwrap();
}

#[tokio::test]
async fn a_state_file_of_another_format_version_is_refused_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let mut child = start(dir.path(), &[]).await.unwrap();
    child.kill().await.unwrap();
    let file = dir.path().join("state/state.json");
    let mut state: Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let version = state["format_version"].as_u64().unwrap();
    for (other, says) in [
        (version + 1, "is newer than this fake-incus reads"),
        (version - 1, "is older than this fake-incus reads"),
    ] {
        state["format_version"] = json!(other);
        std::fs::write(&file, state.to_string()).unwrap();
        let err = start(dir.path(), &[]).await.unwrap_err();
        assert!(err.contains(says), "{err}");
        assert!(err.contains("state.json"), "names the file: {err}");
    }
}

#[tokio::test]
async fn an_operation_event_is_sent_only_once_what_it_reports_is_on_disk() {
    use futures_util::StreamExt;
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("incus.socket");
    let seed = dir.path().join("seed.json");
    std::fs::write(
        &seed,
        json!({"instances": [{"name": "c1", "status": "Stopped"}]}).to_string(),
    )
    .unwrap();
    let mut child = start(dir.path(), &["--state", seed.to_str().unwrap()])
        .await
        .unwrap();
    // What the official client does: listen to the events, then wait there for the operation.
    let stream = tokio::net::UnixStream::connect(&socket).await.unwrap();
    let (mut events, _) =
        tokio_tungstenite::client_async("ws://unix.socket/1.0/events?type=operation", stream)
            .await
            .unwrap();
    let started = send(
        &socket,
        Request::put("/1.0/instances/c1/state").json(&json!({"action": "start"})),
    )
    .await
    .unwrap();
    assert_eq!(started.status(), 202);
    let success = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(Ok(message)) = events.next().await {
            let event: Value =
                serde_json::from_str(message.to_text().unwrap_or("{}")).unwrap_or_default();
            if event["metadata"]["status"] == "Success" {
                return;
            }
        }
        panic!("the events stream ended");
    });
    success.await.expect("the start succeeded in time");
    child.kill().await.unwrap();

    let mut child = start(dir.path(), &[]).await.unwrap();
    let instance = send(&socket, Request::get("/1.0/instances/c1"))
        .await
        .unwrap();
    assert_eq!(
        instance.metadata()["status"],
        "Running",
        "the reported start was lost"
    );
    child.kill().await.unwrap();
}
