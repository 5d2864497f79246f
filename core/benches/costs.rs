//! The core's own costs (issue 12, item 4), measured on the fake.
//!
//! `cargo bench -p incus-operations --bench costs`. Three measurements, each side by side in one
//! run so that a busy machine slows both sides alike:
//!
//! 1. `run()` overhead over the bare call for an inspection operation: `incus_instance_get`
//!    through `run` (host binding an already discovered client, so no discovery request) against
//!    the request that operation makes, sent by hand (a fresh Unix connection, the request, the
//!    whole body read and parsed as JSON, as the core's client does). The calls alternate.
//! 2. List truncation at the 256 KiB output bound: `incus_profile_list` with `limit` 500 while the
//!    native list holds `BENCH_LIST_SIZES` items (default 1000,10000,100000; each profile is about
//!    700 bytes of JSON, so 500 of them pass the bound and the result is cut by bytes, not only
//!    by `limit`). The core's cost is the `run` time minus the bare fetch of the same native list.
//! 3. (run second, before the lists raise the peak) Exec streaming to the 64 MiB stream total: `incus_instance_exec` of `fake-flood stdout
//!    forever` (the fake's flood command) through `run`, which ends `output_limited` once the
//!    total is passed; MB/s, and this process's peak RSS (fake included: it runs in process)
//!    after an 8 MiB stream and after the 64 MiB one, which shows whether memory follows the
//!    64 KiB capture bound or the stream size.
//!
//! 4. (run first, when a real daemon answers on `INCUS_SOCKET`, default
//!    `/var/lib/incus/unix.socket`; `BENCH_REAL=0` skips it) The same exec streaming through
//!    `run()` on the real daemon: a project `bench-exec-<random>` with one running `busybox`
//!    container (`head -c 8388608 /dev/zero`, then `cat /dev/zero` to the 64 MiB total; a NUL
//!    byte takes 6 bytes of JSON text, so the 256 KiB output bound returns about 43 KB of the
//!    64 KiB captured), deleted at the end. It runs before anything else, so its peak RSS is the core's alone.
//!
//! `BENCH_ITERATIONS` (default 2000) sets the sample count of part 1, `BENCH_LIST_ROUNDS`
//! (default 3) and `BENCH_EXEC_ROUNDS` (default 3) the repetitions of parts 2 and 3.

use std::path::Path;
use std::time::{Duration, Instant};

use incus_operations::{run, AllowAll, Client, Connection, RunOptions, Scope};
use serde_json::{json, Value};

/// The bare native call: a fresh connection, one GET, the body read and parsed.
async fn bare_get(socket: &Path, path: &str) -> Value {
    let reply = fake_incus::client::send(socket, fake_incus::Request::get(path))
        .await
        .expect("GET");
    serde_json::from_slice(reply.bytes()).expect("JSON")
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentile(samples: &mut [Duration], p: f64) -> Duration {
    samples.sort_unstable();
    let rank = ((samples.len() as f64 - 1.0) * p).round() as usize;
    samples[rank]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Peak resident memory of this process so far (`VmHWM`), in MiB.
fn peak_rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<f64>().ok())
        })
        .map_or(f64::NAN, |kib| kib / 1024.0)
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        // First: the peak RSS it reports is then the core's alone (no fake in process yet).
        real_exec_streaming().await;
        run_overhead().await;
        // Before the lists: their 100k-item list raises the peak RSS this part reports.
        exec_streaming().await;
        list_truncation().await;
    });
}

async fn started_fake(seed: Option<Value>) -> fake_incus::FakeIncus {
    let mut builder = fake_incus::FakeIncus::builder();
    if let Some(seed) = seed {
        builder = builder.state(seed);
    }
    builder.start().await.expect("the fake starts")
}

async fn host_for(fake: &fake_incus::FakeIncus) -> AllowAll {
    let connection = Connection::builder(incus_operations::Endpoint::unix(fake.unix_socket()))
        .timeout(Duration::from_secs(61))
        .stream_timeout(Duration::from_secs(125))
        .build()
        .expect("connection");
    let client = Client::connect(connection).await.expect("discovery");
    AllowAll::client(client)
}

async fn run_overhead() {
    let iterations: usize = env_or("BENCH_ITERATIONS", 2000);
    let seed = json!({"instances": [{"name": "c1", "project": "default"}]});
    let fake = started_fake(Some(seed)).await;
    let host = host_for(&fake).await;
    let socket = fake.unix_socket().to_path_buf();
    let input = json!({"name": "c1"});
    let first = run(
        "incus_instance_get",
        input.clone(),
        RunOptions::new(&host, &(), [Scope::Read]),
    )
    .await;
    assert_eq!(first["item"]["name"], "c1", "{first}");
    let mut bare = Vec::with_capacity(iterations);
    let mut through = Vec::with_capacity(iterations);
    for _ in 0..iterations {
        let started = Instant::now();
        let value = bare_get(&socket, "/1.0/instances/c1?project=default").await;
        bare.push(started.elapsed());
        std::hint::black_box(value);
        let started = Instant::now();
        let result = run(
            "incus_instance_get",
            input.clone(),
            RunOptions::new(&host, &(), [Scope::Read]),
        )
        .await;
        through.push(started.elapsed());
        std::hint::black_box(result);
    }
    let (bare50, run50) = (percentile(&mut bare, 0.5), percentile(&mut through, 0.5));
    let mean = |s: &[Duration]| s.iter().sum::<Duration>() / s.len() as u32;
    println!("run() overhead, incus_instance_get on the fake, {iterations} alternating calls");
    println!(
        "  bare call (fresh connection, GET, body parsed): p50 {:.1} us, mean {:.1} us, p99 {:.1} us",
        us(bare50),
        us(mean(&bare)),
        us(percentile(&mut bare, 0.99))
    );
    println!(
        "  through run():                                   p50 {:.1} us, mean {:.1} us, p99 {:.1} us",
        us(run50),
        us(mean(&through)),
        us(percentile(&mut through, 0.99))
    );
    println!(
        "  overhead: p50 {:.1} us, mean {:.1} us (ratio run/bare {:.2})",
        us(run50) - us(bare50),
        us(mean(&through)) - us(mean(&bare)),
        run50.as_secs_f64() / bare50.as_secs_f64()
    );
}

fn profiles_seed(count: usize) -> Value {
    let padding = "p".repeat(560);
    let profiles: Vec<Value> = std::iter::once(json!({
        "name": "default", "project": "default", "description": "Default Incus profile",
        "devices": {"root": {"path": "/", "pool": "default", "type": "disk"}},
    }))
    .chain((1..count).map(|i| {
        json!({"name": format!("profile-{i:06}"), "project": "default",
            "description": padding, "config": {"limits.cpu": "1"}})
    }))
    .collect();
    json!({"profiles": profiles})
}

async fn list_truncation() {
    let sizes: Vec<usize> = std::env::var("BENCH_LIST_SIZES")
        .unwrap_or_else(|_| "1000,10000,100000".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let rounds: usize = env_or("BENCH_LIST_ROUNDS", 3);
    println!(
        "\nlist truncation at 256 KiB: incus_profile_list, limit 500, {rounds} rounds (median)"
    );
    println!(
        "  {:>8} {:>12} {:>12} {:>12} {:>14} {:>6} {:>9}",
        "native", "bare fetch", "run()", "core cost", "core per item", "kept", "truncated"
    );
    let mut base: Option<f64> = None;
    for &size in &sizes {
        let fake = started_fake(Some(profiles_seed(size))).await;
        let host = host_for(&fake).await;
        let socket = fake.unix_socket().to_path_buf();
        let input = json!({"limit": 500});
        let (mut bare, mut through) = (Vec::new(), Vec::new());
        let mut last = Value::Null;
        for _ in 0..rounds {
            let started = Instant::now();
            let native = bare_get(&socket, "/1.0/profiles?recursion=1&project=default").await;
            bare.push(started.elapsed());
            assert_eq!(native["metadata"].as_array().map(Vec::len), Some(size));
            let started = Instant::now();
            last = run(
                "incus_profile_list",
                input.clone(),
                RunOptions::new(&host, &(), [Scope::Read]),
            )
            .await;
            through.push(started.elapsed());
        }
        let kept = last["items"].as_array().map_or(0, Vec::len);
        assert_eq!(last["count"], size, "{}", last["error"]);
        let (bare, through) = (percentile(&mut bare, 0.5), percentile(&mut through, 0.5));
        let cost = through.as_secs_f64() - bare.as_secs_f64();
        let per_item = cost / size as f64 * 1e9;
        let scale = match base {
            None => {
                base = Some(per_item);
                String::new()
            }
            Some(b) => format!(" ({:.2}x per item)", per_item / b),
        };
        println!(
            "  {:>8} {:>9.2} ms {:>9.2} ms {:>9.2} ms {:>11.0} ns {:>6} {:>9}{scale}",
            size,
            bare.as_secs_f64() * 1e3,
            through.as_secs_f64() * 1e3,
            cost * 1e3,
            per_item,
            kept,
            last["truncated"]
        );
    }
}

async fn exec_streaming() {
    let fake = started_fake(Some(json!({"instances": [
        {"name": "web", "project": "default", "status": "Running"}
    ]})))
    .await;
    let host = host_for(&fake).await;
    println!("\nexec streaming through run() on the fake (in process)");
    exec_cells(
        &host,
        json!({"name": "web"}),
        [
            vec!["fake-flood", "stdout", "8388608"],
            vec!["fake-flood", "stdout", "forever"],
        ],
    )
    .await;
}

/// Part 4: exec streaming on the real daemon, in a project of its own deleted at the end.
async fn real_exec_streaming() {
    let socket = std::env::var_os("INCUS_SOCKET").map_or_else(
        || std::path::PathBuf::from("/var/lib/incus/unix.socket"),
        std::path::PathBuf::from,
    );
    if std::env::var("BENCH_REAL").as_deref() == Ok("0") || !socket.exists() {
        println!(
            "exec streaming on a real daemon: skipped (no daemon at {}; set INCUS_SOCKET)",
            socket.display()
        );
        return;
    }
    let project = format!("bench-exec-{}", std::process::id());
    let created = native(
        &socket,
        "POST",
        "/1.0/projects",
        Some(json!({"name": project,
        "description": "incus-operations costs bench (temporary)",
        "config": {"features.images": "false", "features.profiles": "false"}})),
    )
    .await;
    if created["type"] != "sync" {
        println!(
            "exec streaming on the real daemon: skipped (creating project {project}: {created})"
        );
        return;
    }
    let instances = format!("/1.0/instances?project={project}");
    let outcome = native_wait(
        &socket,
        "POST",
        &instances,
        Some(json!({"name": "flood",
        "source": {"type": "image", "alias": "busybox"}, "start": true})),
    )
    .await;
    if outcome == "Success" {
        let connection = Connection::builder(incus_operations::Endpoint::unix(&socket))
            .timeout(Duration::from_secs(61))
            .stream_timeout(Duration::from_secs(125))
            .build()
            .expect("connection");
        let client = Client::connect(connection).await.expect("discovery");
        let host = AllowAll::client(client);
        println!(
            "exec streaming through run() on the real daemon ({}, project {project})",
            socket.display()
        );
        exec_cells(
            &host,
            json!({"name": "flood", "project": project}),
            [
                vec!["head", "-c", "8388608", "/dev/zero"],
                vec!["cat", "/dev/zero"],
            ],
        )
        .await;
    } else {
        println!("exec streaming on the real daemon: skipped (creating a running busybox container: {outcome})");
    }
    let flood = format!("/1.0/instances/flood?project={project}");
    let _ = native_wait(
        &socket,
        "PUT",
        &format!("/1.0/instances/flood/state?project={project}"),
        Some(json!({"action": "stop", "force": true, "timeout": 30})),
    )
    .await;
    let _ = native_wait(&socket, "DELETE", &flood, None).await;
    let deleted = native(&socket, "DELETE", &format!("/1.0/projects/{project}"), None).await;
    if deleted["type"] != "sync" {
        eprintln!("could not delete project {project} from the real daemon: {deleted}");
    }
}

/// One native request on a fresh connection, its answer parsed (`Null` if it is not JSON).
async fn native(socket: &Path, method: &str, path: &str, body: Option<Value>) -> Value {
    let request = fake_incus::Request::new(method, path);
    let request = match body {
        Some(body) => request.json(&body),
        None => request.header("content-type", "application/json"),
    };
    match fake_incus::client::send(socket, request).await {
        Ok(reply) => reply.json().clone(),
        Err(_) => Value::Null,
    }
}

/// A native asynchronous request and the wait for its operation: the final status.
async fn native_wait(socket: &Path, method: &str, path: &str, body: Option<Value>) -> String {
    let accepted = native(socket, method, path, body).await;
    let Some(operation) = accepted["operation"].as_str().filter(|o| !o.is_empty()) else {
        return format!("not accepted: {accepted}");
    };
    let done = native(
        socket,
        "GET",
        &format!("{operation}/wait?timeout=120"),
        None,
    )
    .await;
    done["metadata"]["status"]
        .as_str()
        .unwrap_or("no status")
        .to_string()
}

/// The two exec cells (a stream of 8 MiB that ends, then one that runs past the 64 MiB total)
/// of `instance`, `BENCH_EXEC_ROUNDS` times each.
async fn exec_cells(host: &AllowAll, instance: Value, commands: [Vec<&str>; 2]) {
    let rounds: usize = env_or("BENCH_EXEC_ROUNDS", 3);
    println!(
        "  {rounds} rounds each; peak RSS before any exec: {:.1} MiB",
        peak_rss_mib()
    );
    for (label, command) in ["8 MiB, exits", "to the 64 MiB total"]
        .into_iter()
        .zip(commands)
    {
        let mut times = Vec::new();
        let mut last = Value::Null;
        for _ in 0..rounds {
            let mut input = instance.clone();
            input["command"] = json!(command);
            input["timeout_seconds"] = json!(120);
            let started = Instant::now();
            last = run(
                "incus_instance_exec",
                input,
                RunOptions::new(host, &(), [Scope::Exec]),
            )
            .await;
            times.push(started.elapsed());
        }
        let seen = last["stdout"]["bytes"].as_u64().unwrap_or(0);
        let median = percentile(&mut times, 0.5);
        println!(
            "  {label:<20} status {:<15} stdout bytes {seen:>9} captured {:>6}: median {:.1} ms, {:.0} MB/s; peak RSS {:.1} MiB",
            last["status"].as_str().unwrap_or("?"),
            last["stdout"]["captured_bytes"],
            median.as_secs_f64() * 1e3,
            seen as f64 / median.as_secs_f64() / 1e6,
            peak_rss_mib()
        );
    }
}
