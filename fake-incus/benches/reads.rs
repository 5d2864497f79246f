//! The reads of issue 12 against the fake and a real Incus, side by side in one run.
//!
//! `cargo bench -p fake-incus --bench reads`. The fake runs as its own process (the
//! `fake-incus serve` binary of this build, seeded through `--state`), like the real daemon, and
//! the load generator is this process: `clients` tokio tasks, each sending its next request as
//! soon as the previous answer's body is read. Every cell (target, request, clients, connection
//! mode) runs for `BENCH_SECONDS`, and the cells of the fake and of the real daemon alternate,
//! round after round, so that a busy machine slows both alike.
//!
//! Connection modes: `fresh` opens one connection per request and writes at once (as the core's
//! client does); `keepalive` keeps one connection per client and never leaves it silent (the next
//! request follows the previous answer at once), so incusd's accept loop, which stalls on new
//! connections that stay silent, is never exposed. Bodies are read to their end frame by frame
//! and counted, not gathered into one buffer.
//!
//! Each cell also gives the CPU time the target's process used per answered request (`cpu us/r`:
//! all its threads, from `/proc/PID/task/*/schedstat`; the real daemon's PID is the `server_pid`
//! its `GET /1.0` reports). Throughput on a shared machine follows the others' load; CPU per
//! request much less so. The real daemon's figure also holds whatever else it serves meanwhile.
//!
//! Environment:
//! - `INCUS_SOCKET`: the real daemon's socket (default `/var/lib/incus/unix.socket`; when nothing
//!   answers there, only the fake is measured). `BENCH_REAL=0` skips the real daemon.
//!   On the real daemon the bench creates a project `bench-<random>` with 100 stopped `busybox`
//!   instances and deletes them and the project at the end.
//! - `FAKE_INCUS_BASELINE`: another `fake-incus` binary (say, built from the commit before a
//!   change); it joins the 100-instance table as a third target, interleaved like the others.
//! - `BENCH_FLOOR` (default on; `0` leaves it out): the floor as another target, a minimal
//!   server answering the fake's bodies (see `floor_serve`); `floor/real` is the most any server
//!   could show against the real daemon with this load generator, `fake/floor` what the fake
//!   reaches of it.
//! - `BENCH_NGINX=/path/to/nginx` (`bash fake-incus/benches/nginx.sh` puts Debian's there and
//!   prints the path): nginx as another target, serving the fake's own bodies as static files
//!   on a Unix socket (2 worker processes, access log off): `fake/nginx` is how near the fake's
//!   answers come to a mature static server's with the same bytes. Its CPU time is not read.
//! - `BENCH_OHA=/path/to/oha`: [oha](https://github.com/hatoo/oha) drives every cell of the
//!   100-instance table instead of this process (an independent load generator, same targets,
//!   same interleaving; p50/p99 are then the means of the rounds' figures).
//! - `BENCH_SECONDS` (default 1): length of one cell. `BENCH_ROUNDS` (default 2).
//! - `BENCH_MODES` (default `fresh,keepalive`).
//! - `BENCH_REQUESTS` (default all four): the requests of the 100-instance table, by label,
//!   separated by commas (`BENCH_REQUESTS='GET /1.0'`). `BENCH_CLIENTS` (default `1,16`).
//! - `BENCH_SCALE` (default `1000,10000`): the instance counts of the linear-cost table.
//! - `BENCH_RSS_REQUESTS` (default 20000; the issue's figure is 200000): requests sent to the
//!   fake between its two RSS readings. `BENCH_STEADY_SECONDS` (default 0): a steady load of that
//!   length after them, with an RSS reading every 10 s.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use serde_json::{json, Value};
use tokio::io::AsyncBufReadExt;

type Sender = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// How the load generator connects.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mode {
    Fresh,
    KeepAlive,
}

impl Mode {
    fn label(self) -> &'static str {
        match self {
            Mode::Fresh => "fresh",
            Mode::KeepAlive => "keepalive",
        }
    }
}

async fn connect(socket: &Path) -> Result<Sender, String> {
    let stream = tokio::net::UnixStream::connect(socket)
        .await
        .map_err(|e| format!("connect {}: {e}", socket.display()))?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| format!("handshake: {e}"))?;
    tokio::spawn(connection);
    Ok(sender)
}

/// A request as the bench sends it (JSON, to the host `incus`).
fn request(method: Method, path: &str, body: Bytes) -> Result<Request<Full<Bytes>>, String> {
    Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, "incus")
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .body(Full::new(body))
        .map_err(|e| e.to_string())
}

/// One request on `sender`; returns the status and the body's length.
async fn exchange(
    sender: &mut Sender,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> Result<(u16, Bytes), String> {
    let body = body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string()));
    let request = request(method, path, body)?;
    sender.ready().await.map_err(|e| format!("ready: {e}"))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("send: {e}"))?;
    let status = response.status().as_u16();
    let bytes = response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("body: {e}"))?
        .to_bytes();
    Ok((status, bytes))
}

/// One GET on `sender` for the load loops: the body is read to its end frame by frame and
/// only counted, never gathered into one buffer (the load generator's own copy would otherwise
/// weigh in every figure, most of all for large bodies). Returns the status and the body's
/// length.
async fn exchange_drain(sender: &mut Sender, path: &str) -> Result<(u16, u64), String> {
    let request = request(Method::GET, path, Bytes::new())?;
    sender.ready().await.map_err(|e| format!("ready: {e}"))?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| format!("send: {e}"))?;
    let status = response.status().as_u16();
    let mut body = response.into_body();
    let mut length = 0u64;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| format!("body: {e}"))?;
        if let Some(data) = frame.data_ref() {
            length += data.len() as u64;
        }
    }
    Ok((status, length))
}

/// The body of a GET on a fresh connection, as the server sent it.
async fn raw_body(socket: &Path, path: &str) -> String {
    let mut sender = connect(socket).await.expect("connect");
    let (status, bytes) = exchange(&mut sender, Method::GET, path, None)
        .await
        .expect("GET");
    assert_eq!(status, 200, "{path}");
    String::from_utf8(bytes.to_vec()).expect("UTF-8")
}

/// One request on a fresh connection, parsed as JSON.
async fn call(socket: &Path, method: Method, path: &str, body: Option<Value>) -> Value {
    let mut sender = match connect(socket).await {
        Ok(sender) => sender,
        Err(e) => return json!({"bench_error": e}),
    };
    match exchange(&mut sender, method, path, body.as_ref()).await {
        Ok((_, bytes)) => serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        Err(e) => json!({"bench_error": e}),
    }
}

/// Sends an async request and waits for its operation; the final operation status.
async fn mutate(socket: &Path, method: Method, path: &str, body: Option<Value>) -> String {
    let accepted = call(socket, method, path, body).await;
    let Some(operation) = accepted["operation"].as_str().filter(|o| !o.is_empty()) else {
        return format!("not accepted: {accepted}");
    };
    let done = call(
        socket,
        Method::GET,
        &format!("{operation}/wait?timeout=120"),
        None,
    )
    .await;
    done["metadata"]["status"]
        .as_str()
        .unwrap_or("no status")
        .to_string()
}

/// The measurements of one cell (or of several cells merged).
#[derive(Default)]
struct Stats {
    requests: u64,
    errors: u64,
    elapsed: Duration,
    micros: Vec<u32>,
    bytes: u64,
    /// CPU time the target process used during the cell (all its threads), when known.
    cpu_ns: Option<u64>,
    /// With oha as the load generator: each round's (p50, p99) in ms, as oha reports them.
    oha_quantiles: Vec<(f64, f64)>,
}

impl Stats {
    fn merge(&mut self, other: Stats) {
        self.requests += other.requests;
        self.errors += other.errors;
        self.elapsed += other.elapsed;
        self.micros.extend(other.micros);
        self.bytes += other.bytes;
        self.cpu_ns = self.cpu_ns.zip(other.cpu_ns).map(|(a, b)| a + b);
        self.oha_quantiles.extend(other.oha_quantiles);
    }
    /// The target's CPU time per answered request, in microseconds.
    fn cpu_per_request(&self) -> Option<f64> {
        self.cpu_ns
            .map(|ns| ns as f64 / 1e3 / (self.requests.max(1) as f64))
    }
    fn rate(&self) -> f64 {
        self.requests as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
    fn percentile(&mut self, p: f64) -> f64 {
        if self.micros.is_empty() && !self.oha_quantiles.is_empty() {
            // oha gives no samples: the mean of the rounds' figures.
            let pick = |&(p50, p99): &(f64, f64)| if p < 0.9 { p50 } else { p99 };
            let sum: f64 = self.oha_quantiles.iter().map(pick).sum();
            return sum / self.oha_quantiles.len() as f64;
        }
        if self.micros.is_empty() {
            return f64::NAN;
        }
        self.micros.sort_unstable();
        let rank = ((self.micros.len() as f64 - 1.0) * p).round() as usize;
        f64::from(self.micros[rank]) / 1000.0
    }
}

/// `clients` tasks send `path` until `duration` has passed and at least `min_requests` answers
/// came back (stopping anyway after 60 s).
async fn load(
    socket: &Path,
    path: &str,
    clients: usize,
    duration: Duration,
    min_requests: u64,
    mode: Mode,
) -> Stats {
    let started = Instant::now();
    let deadline = started + duration;
    let hard_stop = started + Duration::from_secs(60);
    let done = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let socket = socket.to_path_buf();
        let path = path.to_string();
        let done = std::sync::Arc::clone(&done);
        tasks.push(tokio::spawn(async move {
            let mut stats = Stats::default();
            let mut kept: Option<Sender> = None;
            loop {
                let now = Instant::now();
                let enough = done.load(std::sync::atomic::Ordering::Relaxed) >= min_requests;
                if (now >= deadline && enough) || now >= hard_stop {
                    break;
                }
                let sent = Instant::now();
                let sender = match (mode, kept.take()) {
                    (Mode::KeepAlive, Some(sender)) => Ok(sender),
                    _ => connect(&socket).await,
                };
                let outcome = match sender {
                    Ok(mut sender) => {
                        let answer = exchange_drain(&mut sender, &path).await;
                        if mode == Mode::KeepAlive && answer.is_ok() {
                            kept = Some(sender);
                        }
                        answer
                    }
                    Err(e) => Err(e),
                };
                let micros = u32::try_from(sent.elapsed().as_micros()).unwrap_or(u32::MAX);
                match outcome {
                    Ok((200, length)) => {
                        stats.requests += 1;
                        stats.bytes += length;
                        stats.micros.push(micros);
                        done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                    Ok(_) | Err(_) => stats.errors += 1,
                }
            }
            stats
        }));
    }
    let mut total = Stats::default();
    for task in tasks {
        if let Ok(stats) = task.await {
            total.merge(stats);
        }
    }
    total.elapsed = started.elapsed();
    total
}

/// One cell with [oha](https://github.com/hatoo/oha) as the load generator instead of this
/// process (`BENCH_OHA=/path/to/oha`): an independent client, for a cross-check of the figures.
async fn oha_load(
    oha: &Path,
    socket: &Path,
    path: &str,
    clients: usize,
    duration: Duration,
    mode: Mode,
) -> Stats {
    let mut command = tokio::process::Command::new(oha);
    command
        .arg("-z")
        .arg(format!("{}ms", duration.as_millis().max(1)))
        .arg("-c")
        .arg(clients.to_string())
        .args(["--no-tui", "--output-format", "json", "--unix-socket"])
        .arg(socket)
        .arg(format!("http://incus{path}"))
        .stderr(Stdio::inherit())
        .kill_on_drop(true);
    if mode == Mode::Fresh {
        command.arg("--disable-keepalive");
    }
    let output = command.output().await.expect("oha runs");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    let ok = report["statusCodeDistribution"]["200"]
        .as_u64()
        .unwrap_or(0);
    let all: u64 = report["statusCodeDistribution"]
        .as_object()
        .map_or(0, |codes| codes.values().filter_map(Value::as_u64).sum());
    // The requests oha cut at the end of its time are not errors of the target.
    let errors: u64 = report["errorDistribution"].as_object().map_or(0, |errors| {
        errors
            .iter()
            .filter(|(what, _)| !what.contains("aborted due to deadline"))
            .filter_map(|(_, n)| n.as_u64())
            .sum()
    });
    let ms = |key: &str| {
        report["latencyPercentiles"][key]
            .as_f64()
            .unwrap_or(f64::NAN)
            * 1e3
    };
    Stats {
        requests: ok,
        errors: errors + (all - ok),
        elapsed: Duration::from_secs_f64(report["summary"]["total"].as_f64().unwrap_or(0.0)),
        micros: Vec::new(),
        bytes: report["summary"]["totalData"].as_u64().unwrap_or(0),
        cpu_ns: None,
        oha_quantiles: vec![(ms("p50"), ms("p99"))],
    }
}

/// Starts `command` (killed when dropped) and waits, at most 30 s, for its first line on
/// stdout, its ready line; stdout is then drained so that the child never blocks on a full pipe.
async fn spawn_until_ready(
    command: &mut tokio::process::Command,
    what: &str,
) -> tokio::process::Child {
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .unwrap_or_else(|e| panic!("{what} does not start: {e}"));
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = tokio::io::BufReader::new(stdout).lines();
    let ready = tokio::time::timeout(Duration::from_secs(30), lines.next_line()).await;
    assert!(
        matches!(ready, Ok(Ok(Some(_)))),
        "{what} did not print its ready line: {ready:?}"
    );
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    child
}

/// A fake-incus process serving a seeded state.
struct FakeProcess {
    child: tokio::process::Child,
    socket: PathBuf,
    ready_in: Duration,
    _dir: tempfile::TempDir,
}

impl FakeProcess {
    async fn start(binary: &Path, seed: &Value) -> FakeProcess {
        let dir = tempfile::tempdir().expect("temp dir");
        let state = dir.path().join("state.json");
        std::fs::write(&state, seed.to_string()).expect("seed file");
        let socket = dir.path().join("unix.socket");
        let started = Instant::now();
        let mut command = tokio::process::Command::new(binary);
        command
            .arg("serve")
            .arg("--unix")
            .arg(&socket)
            .arg("--tls-dir")
            .arg(dir.path())
            .arg("--state")
            .arg(&state);
        let child = spawn_until_ready(&mut command, "fake-incus").await;
        let ready_in = started.elapsed();
        FakeProcess {
            child,
            socket,
            ready_in,
            _dir: dir,
        }
    }

    fn rss_kib(&self) -> Option<u64> {
        rss_kib(self.child.id()?)
    }
}

/// The CPU time (ns) all threads of process `pid` have used so far (`/proc/PID/task/*/schedstat`;
/// the real daemon is read too, through the `server_pid` its `GET /1.0` reports).
fn cpu_ns(pid: u32) -> Option<u64> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut total = 0;
    for task in tasks.flatten() {
        let stat = std::fs::read_to_string(task.path().join("schedstat")).unwrap_or_default();
        total += stat
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0);
    }
    Some(total)
}

/// `load` on one target, with the CPU time its process used meanwhile.
async fn measured(
    pid: Option<u32>,
    socket: &Path,
    path: &str,
    clients: usize,
    duration: Duration,
    min_requests: u64,
    mode: Mode,
) -> Stats {
    let before = pid.and_then(cpu_ns);
    let mut stats = match std::env::var_os("BENCH_OHA") {
        Some(oha) => oha_load(Path::new(&oha), socket, path, clients, duration, mode).await,
        None => load(socket, path, clients, duration, min_requests, mode).await,
    };
    let after = pid.and_then(cpu_ns);
    stats.cpu_ns = before.zip(after).map(|(b, a)| a.saturating_sub(b));
    stats
}

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// An instance as the fake's seed format has it, taken from a fake that created one from the
/// `busybox` image, so that seeded instances are exactly what the fake itself makes.
async fn instance_template() -> Value {
    let fake = fake_incus::FakeIncus::builder()
        .start()
        .await
        .expect("an in-process fake starts");
    let create = json!({"name": "template", "source": {"type": "image", "alias": "busybox"}});
    let status = mutate(
        fake.unix_socket(),
        Method::POST,
        "/1.0/instances",
        Some(create),
    )
    .await;
    assert_eq!(status, "Success", "template instance");
    let state = fake.dump_state();
    state["instances"][0].clone()
}

fn instance_name(i: usize) -> String {
    format!("b{i:05}")
}

fn seed(template: &Value, project: &Value, count: usize) -> Value {
    let project_name = project["name"].as_str().unwrap_or("default");
    let instances: Vec<Value> = (0..count)
        .map(|i| {
            let mut instance = template.clone();
            instance["name"] = json!(instance_name(i));
            instance["project"] = json!(project_name);
            if let Some(config) = instance["config"].as_object_mut() {
                for key in [
                    "volatile.uuid",
                    "volatile.uuid.generation",
                    "volatile.cloud-init.instance-id",
                ] {
                    config.insert(key.into(), json!(uuid::Uuid::new_v4().to_string()));
                }
            }
            instance
        })
        .collect();
    let default = json!({"name": "default", "description": "Default Incus project", "config": {
        "features.images": "true", "features.networks": "true", "features.networks.zones": "true",
        "features.profiles": "true", "features.storage.buckets": "true",
        "features.storage.volumes": "true"}});
    json!({"projects": [default, project], "instances": instances})
}

/// The bench's project and instances on the real daemon; deleted when dropped.
struct RealFixture {
    socket: PathBuf,
    project: String,
    created: Vec<String>,
}

impl RealFixture {
    async fn create(socket: &Path, project: &str, count: usize) -> (RealFixture, Value) {
        let mut fixture = RealFixture {
            socket: socket.to_path_buf(),
            project: project.to_string(),
            created: Vec::new(),
        };
        let body = json!({"name": project, "description": "fake-incus reads bench (temporary)",
            "config": {"features.images": "false", "features.profiles": "false"}});
        let answer = call(socket, Method::POST, "/1.0/projects", Some(body)).await;
        assert_eq!(
            answer["type"], "sync",
            "creating project {project}: {answer}"
        );
        let names: Vec<String> = (0..count).map(instance_name).collect();
        for chunk in names.chunks(4) {
            let creations = chunk.iter().map(|name| {
                let body = json!({"name": name, "source": {"type": "image", "alias": "busybox"}});
                let path = format!("/1.0/instances?project={project}");
                async move {
                    (
                        name.clone(),
                        mutate(socket, Method::POST, &path, Some(body)).await,
                    )
                }
            });
            for (name, status) in futures_util::future::join_all(creations).await {
                assert_eq!(status, "Success", "creating {name} on the real daemon");
                fixture.created.push(name);
            }
        }
        let project_object = call(
            socket,
            Method::GET,
            &format!("/1.0/projects/{project}"),
            None,
        )
        .await;
        let config = project_object["metadata"]["config"].clone();
        (
            fixture,
            json!({"name": project, "description": "fake-incus reads bench (temporary)", "config": config}),
        )
    }
}

impl RealFixture {
    /// Deletes the instances, then the project.
    async fn delete(socket: PathBuf, project: String, names: Vec<String>) {
        for chunk in names.chunks(8) {
            let deletions = chunk.iter().map(|name| {
                let path = format!("/1.0/instances/{name}?project={project}");
                let socket = socket.clone();
                async move { mutate(&socket, Method::DELETE, &path, None).await }
            });
            futures_util::future::join_all(deletions).await;
        }
        let answer = call(
            &socket,
            Method::DELETE,
            &format!("/1.0/projects/{project}"),
            None,
        )
        .await;
        if answer["type"] != "sync" {
            eprintln!("could not delete project {project} from the real daemon: {answer}");
        }
    }
}

impl Drop for RealFixture {
    /// Runs on a thread of its own (with its own runtime), so it works inside the bench's
    /// runtime and during a panic.
    fn drop(&mut self) {
        let socket = self.socket.clone();
        let project = self.project.clone();
        let names = std::mem::take(&mut self.created);
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(RealFixture::delete(socket, project, names));
        });
        if cleanup.join().is_err() {
            eprintln!("the cleanup of the real daemon panicked");
        }
    }
}

async fn real_answers(socket: &Path) -> bool {
    if !socket.exists() {
        return false;
    }
    let probe = tokio::time::timeout(
        Duration::from_secs(5),
        call(socket, Method::GET, "/1.0", None),
    );
    matches!(probe.await, Ok(v) if v["metadata"]["auth"] == "trusted")
}

/// The floor: the least a server can do to answer over a Unix socket with this load generator.
/// A process of its own (this bench, started again with `BENCH_FLOOR_SERVE=SOCKET` and
/// `BENCH_FLOOR_ANSWERS=FILE`) whose threads block in `accept`, read each request head and
/// write the answer kept for its path (the same body the fake gives, with a minimal head):
/// no parsing beyond the request line, no routing, no allocation per request. Its rate is what
/// no server could beat on this machine with this client, so `floor/real` is the most any fake
/// could show, and `fake/floor` what the fake reaches of it.
fn floor_serve(socket: &Path, answers: &Path) -> ! {
    use std::io::{Read, Write};
    let kept: std::collections::HashMap<String, String> =
        serde_json::from_slice(&std::fs::read(answers).expect("floor answers")).expect("JSON");
    let kept: std::collections::HashMap<Vec<u8>, Vec<u8>> = kept
        .into_iter()
        .map(|(path, body)| {
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
                body.len()
            );
            (
                path.into_bytes(),
                [head.into_bytes(), body.into_bytes()].concat(),
            )
        })
        .collect();
    let kept = std::sync::Arc::new(kept);
    let listener = std::os::unix::net::UnixListener::bind(socket).expect("floor socket");
    let listener = std::sync::Arc::new(listener);
    let not_found: &[u8] = b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n";
    let threads: Vec<_> = (0..64)
        .map(|_| {
            let listener = std::sync::Arc::clone(&listener);
            let kept = std::sync::Arc::clone(&kept);
            std::thread::spawn(move || loop {
                let Ok((mut stream, _)) = listener.accept() else {
                    continue;
                };
                let mut buf = vec![0u8; 8192];
                let mut filled = 0;
                while let Ok(n) = stream.read(&mut buf[filled..]) {
                    if n == 0 {
                        break;
                    }
                    filled += n;
                    let Some(end) = buf[..filled].windows(4).position(|w| w == b"\r\n\r\n") else {
                        if filled == buf.len() {
                            break;
                        }
                        continue;
                    };
                    let path = buf[..end].split(|&b| b == b' ').nth(1).unwrap_or_default();
                    let answer = kept.get(path).map_or(not_found, Vec::as_slice);
                    if stream.write_all(answer).is_err() {
                        break;
                    }
                    buf.copy_within(end + 4..filled, 0);
                    filled -= end + 4;
                }
            })
        })
        .collect();
    println!("ready");
    for thread in threads {
        let _ = thread.join();
    }
    std::process::exit(0)
}

/// The floor server's process (see [`floor_serve`]), answering `answers` (path to body).
struct FloorProcess {
    child: tokio::process::Child,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl FloorProcess {
    async fn start(answers: &std::collections::HashMap<String, String>) -> FloorProcess {
        let dir = tempfile::tempdir().expect("temp dir");
        let file = dir.path().join("answers.json");
        std::fs::write(&file, serde_json::to_vec(answers).expect("JSON")).expect("answers file");
        let socket = dir.path().join("floor.socket");
        let mut command = tokio::process::Command::new(std::env::current_exe().expect("bench exe"));
        command
            .env("BENCH_FLOOR_SERVE", &socket)
            .env("BENCH_FLOOR_ANSWERS", &file);
        let child = spawn_until_ready(&mut command, "the floor server").await;
        FloorProcess {
            child,
            socket,
            _dir: dir,
        }
    }
}

/// nginx (`BENCH_NGINX`) serving `answers` (request target to body) as static files on a Unix
/// socket in a directory of its own; stopped (with its workers) when dropped.
struct NginxProcess {
    child: tokio::process::Child,
    socket: PathBuf,
    _dir: tempfile::TempDir,
}

impl NginxProcess {
    async fn start(binary: &Path, answers: &std::collections::HashMap<String, String>) -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("bodies");
        std::fs::create_dir_all(root.join("tmp")).expect("nginx directories");
        let mut map = String::new();
        for (i, (target, body)) in answers.iter().enumerate() {
            std::fs::write(root.join(format!("{i}.json")), body).expect("body file");
            map.push_str(&format!("    \"{target}\" /{i}.json;\n"));
        }
        let socket = dir.path().join("nginx.socket");
        let d = dir.path().display();
        let conf = format!(
            "daemon off;\nworker_processes 2;\npid {d}/nginx.pid;\nerror_log stderr error;\n\
             events {{ worker_connections 1024; }}\n\
             http {{\n  access_log off;\n  client_body_temp_path {d}/bodies/tmp;\n\
             proxy_temp_path {d}/bodies/tmp;\n  fastcgi_temp_path {d}/bodies/tmp;\n\
             uwsgi_temp_path {d}/bodies/tmp;\n  scgi_temp_path {d}/bodies/tmp;\n\
             map_hash_bucket_size 256;\n  map $request_uri $answer {{\n    default /missing;\n{map}  }}\n\
             server {{\n    listen unix:{socket};\n    root {d}/bodies;\n\
             default_type application/json;\n    location / {{ try_files $answer =404; }}\n  }}\n}}\n",
            socket = socket.display()
        );
        let file = dir.path().join("nginx.conf");
        std::fs::write(&file, conf).expect("nginx.conf");
        let child = tokio::process::Command::new(binary)
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&file)
            .arg("-e")
            .arg("stderr")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("nginx does not start: {e}"));
        let until = Instant::now() + Duration::from_secs(30);
        let mut child = child;
        while tokio::net::UnixStream::connect(&socket).await.is_err() {
            assert!(
                matches!(child.try_wait(), Ok(None)),
                "nginx exited (its error is above)"
            );
            assert!(Instant::now() < until, "nginx did not listen within 30 s");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        NginxProcess {
            child,
            socket,
            _dir: dir,
        }
    }
}

impl Drop for NginxProcess {
    fn drop(&mut self) {
        // SIGTERM: the master stops its workers and exits (a SIGKILL would leave them serving).
        if let Some(pid) = self.child.id() {
            let _ = std::process::Command::new("kill")
                .arg("-TERM")
                .arg(pid.to_string())
                .status();
        }
    }
}

fn main() {
    if let (Some(socket), Some(answers)) = (
        std::env::var_os("BENCH_FLOOR_SERVE"),
        std::env::var_os("BENCH_FLOOR_ANSWERS"),
    ) {
        floor_serve(Path::new(&socket), Path::new(&answers));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(bench());
}

async fn bench() {
    let seconds: f64 = env_or("BENCH_SECONDS", 1.0);
    let cell = Duration::from_secs_f64(seconds);
    let rounds: usize = env_or("BENCH_ROUNDS", 2);
    let modes: Vec<Mode> = std::env::var("BENCH_MODES")
        .unwrap_or_else(|_| "fresh,keepalive".into())
        .split(',')
        .filter_map(|m| match m.trim() {
            "fresh" => Some(Mode::Fresh),
            "keepalive" => Some(Mode::KeepAlive),
            _ => None,
        })
        .collect();
    let only: Option<Vec<String>> = std::env::var("BENCH_REQUESTS")
        .ok()
        .map(|r| r.split(',').map(|l| l.trim().to_string()).collect());
    let client_counts: Vec<usize> = std::env::var("BENCH_CLIENTS")
        .unwrap_or_else(|_| "1,16".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let scale: Vec<usize> = std::env::var("BENCH_SCALE")
        .unwrap_or_else(|_| "1000,10000".into())
        .split(',')
        .filter_map(|n| n.trim().parse().ok())
        .collect();
    let rss_requests: u64 = env_or("BENCH_RSS_REQUESTS", 20_000);
    let steady_seconds: u64 = env_or("BENCH_STEADY_SECONDS", 0);
    let real_socket = std::env::var_os("INCUS_SOCKET").map_or_else(
        || PathBuf::from("/var/lib/incus/unix.socket"),
        PathBuf::from,
    );
    let use_real =
        std::env::var("BENCH_REAL").as_deref() != Ok("0") && real_answers(&real_socket).await;

    let project = format!("bench-{}", &uuid::Uuid::new_v4().simple().to_string()[..8]);
    let template = instance_template().await;
    let (fixture, project_object) = if use_real {
        let started = Instant::now();
        let (fixture, object) = RealFixture::create(&real_socket, &project, 100).await;
        println!(
            "real daemon: project {project} with 100 stopped busybox instances created in {:.1} s",
            started.elapsed().as_secs_f64()
        );
        (Some(fixture), object)
    } else {
        println!(
            "no real daemon answers on {} (set INCUS_SOCKET): measuring the fake alone",
            real_socket.display()
        );
        let object = json!({"name": project, "config": {"features.images": "false", "features.profiles": "false"}});
        (None, object)
    };

    let binary = PathBuf::from(env!("CARGO_BIN_EXE_fake-incus"));
    let fake = FakeProcess::start(&binary, &seed(&template, &project_object, 100)).await;
    println!(
        "fake: spawn to ready (100 instances seeded) {:.1} ms",
        fake.ready_in.as_secs_f64() * 1e3
    );
    let baseline = match std::env::var_os("FAKE_INCUS_BASELINE") {
        Some(path) => {
            Some(FakeProcess::start(Path::new(&path), &seed(&template, &project_object, 100)).await)
        }
        None => None,
    };
    let get = instance_name(50);
    let requests = [
        ("GET /1.0".to_string(), "/1.0".to_string()),
        (
            "GET /1.0/instances".to_string(),
            format!("/1.0/instances?project={project}"),
        ),
        (
            "GET /1.0/instances?recursion=1".to_string(),
            format!("/1.0/instances?project={project}&recursion=1"),
        ),
        (
            "GET /1.0/instances/NAME".to_string(),
            format!("/1.0/instances/{get}?project={project}"),
        ),
    ];
    let mut targets: Vec<(&str, PathBuf, Option<u32>)> = Vec::new();
    if use_real {
        let server = call(&real_socket, Method::GET, "/1.0", None).await;
        let pid = server["metadata"]["environment"]["server_pid"]
            .as_u64()
            .and_then(|p| u32::try_from(p).ok());
        targets.push(("real", real_socket.clone(), pid));
    }
    targets.push(("fake", fake.socket.clone(), fake.child.id()));
    if let Some(baseline) = &baseline {
        targets.push(("baseline", baseline.socket.clone(), baseline.child.id()));
    }
    let mut answers = std::collections::HashMap::new();
    for (_, path) in &requests {
        let body = raw_body(&fake.socket, path).await;
        answers.insert(path.clone(), body);
    }
    let mut floor = None;
    if std::env::var("BENCH_FLOOR").as_deref() != Ok("0") {
        let process = FloorProcess::start(&answers).await;
        targets.push(("floor", process.socket.clone(), process.child.id()));
        floor = Some(process);
    }
    let nginx = match std::env::var_os("BENCH_NGINX") {
        Some(binary) => Some(NginxProcess::start(Path::new(&binary), &answers).await),
        None => None,
    };
    if let Some(nginx) = &nginx {
        targets.push(("nginx", nginx.socket.clone(), None));
    }

    for (_, path) in &requests {
        for (name, socket, _) in &targets {
            let answer = call(socket, Method::GET, path, None).await;
            assert_eq!(answer["status_code"], 200, "{name}: {path}: {answer}");
        }
    }

    println!(
        "\n100 instances, {rounds} rounds x {seconds} s per cell, the targets' cells interleaved"
    );
    print!("{:<10} {:<31} {:>3}", "mode", "request", "c");
    for (name, _, _) in &targets {
        print!(
            " {:>9} {:>13} {:>8}",
            format!("{name} r/s"),
            "p50/p99 ms",
            "cpu us/r"
        );
    }
    if use_real {
        print!(" {:>10}", "fake/real");
    }
    if baseline.is_some() {
        print!(" {:>10}", "fake/base");
    }
    if floor.is_some() {
        if use_real {
            print!(" {:>10}", "floor/real");
        }
        print!(" {:>10}", "fake/floor");
    }
    if nginx.is_some() {
        print!(" {:>10}", "fake/nginx");
    }
    println!(" {:>6}", "errors");
    for &mode in &modes {
        let chosen = requests
            .iter()
            .filter(|(label, _)| only.as_ref().is_none_or(|only| only.contains(label)));
        for (label, path) in chosen {
            for &clients in &client_counts {
                let mut merged: Vec<Stats> = targets
                    .iter()
                    .map(|_| Stats {
                        cpu_ns: Some(0),
                        ..Stats::default()
                    })
                    .collect();
                for _ in 0..rounds {
                    for (i, (_, socket, pid)) in targets.iter().enumerate() {
                        let stats = measured(*pid, socket, path, clients, cell, 20, mode).await;
                        merged[i].merge(stats);
                    }
                }
                print!("{:<10} {:<31} {:>3}", mode.label(), label, clients);
                for stats in &mut merged {
                    let latency =
                        format!("{:.2}/{:.2}", stats.percentile(0.5), stats.percentile(0.99));
                    let cpu = stats
                        .cpu_per_request()
                        .map_or("?".to_string(), |us| format!("{us:.1}"));
                    print!(" {:>9.0} {:>13} {:>8}", stats.rate(), latency, cpu);
                }
                let rate = |name: &str| {
                    targets
                        .iter()
                        .position(|(n, _, _)| *n == name)
                        .map(|i| merged[i].rate())
                };
                let fake_rate = rate("fake").unwrap_or(f64::NAN);
                if let Some(real) = rate("real") {
                    print!(" {:>10}", format!("{:.1}x", fake_rate / real));
                }
                if let Some(base) = rate("baseline") {
                    print!(" {:>10}", format!("{:.1}x", fake_rate / base));
                }
                if let Some(floor) = rate("floor") {
                    if let Some(real) = rate("real") {
                        print!(" {:>10}", format!("{:.1}x", floor / real));
                    }
                    print!(" {:>10}", format!("{:.2}", fake_rate / floor));
                }
                if let Some(nginx) = rate("nginx") {
                    print!(" {:>10}", format!("{:.2}", fake_rate / nginx));
                }
                println!(" {:>6}", merged.iter().map(|s| s.errors).sum::<u64>());
            }
        }
    }
    drop(fixture);
    drop(floor);
    drop(nginx);

    if !scale.is_empty() {
        linear_cost(
            &binary,
            &template,
            &project_object,
            &project,
            &scale,
            cell,
            rounds,
        )
        .await;
    }
    drop(baseline);
    memory(&fake, &requests, rss_requests, steady_seconds).await;
}

/// Time per request at 1 client (keep-alive) with 100 instances and with each count of `scale`,
/// the fakes interleaved.
async fn linear_cost(
    binary: &Path,
    template: &Value,
    project_object: &Value,
    project: &str,
    scale: &[usize],
    cell: Duration,
    rounds: usize,
) {
    let mut counts = vec![100];
    counts.extend_from_slice(scale);
    let mut fakes = Vec::new();
    for &count in &counts {
        let fake = FakeProcess::start(binary, &seed(template, project_object, count)).await;
        println!(
            "fake with {count} instances: spawn to ready {:.1} ms",
            fake.ready_in.as_secs_f64() * 1e3
        );
        fakes.push(fake);
    }
    let get = instance_name(50);
    let requests = [
        (
            "GET /1.0/instances",
            format!("/1.0/instances?project={project}"),
        ),
        (
            "GET /1.0/instances?recursion=1",
            format!("/1.0/instances?project={project}&recursion=1"),
        ),
        (
            "GET /1.0/instances/NAME",
            format!("/1.0/instances/{get}?project={project}"),
        ),
    ];
    println!(
        "\nlinear cost: 1 client, keep-alive, mean time per request after one warm-up request, \
         and the fake's CPU time per request (ratio to 100 instances; to the previous count)"
    );
    print!("{:<32}", "request");
    for count in &counts {
        print!(" {:>30}", format!("{count} inst."));
    }
    println!();
    for (label, path) in &requests {
        // One request first, so that the mean is of answers from rendered objects (the first
        // request after a start renders every object once).
        for fake in &fakes {
            call(&fake.socket, Method::GET, path, None).await;
        }
        let mut merged: Vec<Stats> = fakes
            .iter()
            .map(|_| Stats {
                cpu_ns: Some(0),
                ..Stats::default()
            })
            .collect();
        for _ in 0..rounds {
            for (i, fake) in fakes.iter().enumerate() {
                let pid = fake.child.id();
                let stats = measured(pid, &fake.socket, path, 1, cell, 5, Mode::KeepAlive).await;
                merged[i].merge(stats);
            }
        }
        let times: Vec<f64> = merged.iter().map(|s| 1e3 / s.rate()).collect();
        let cpus: Vec<f64> = merged
            .iter()
            .map(|s| s.cpu_per_request().unwrap_or(f64::NAN) / 1e3)
            .collect();
        for (what, values) in [("", &times), (" (fake CPU)", &cpus)] {
            print!("{:<32}", format!("{label}{what}"));
            for (i, ms) in values.iter().enumerate() {
                let previous = values[i.saturating_sub(1)];
                let ratios = format!("{:.1}x; {:.1}x prev.", ms / values[0], ms / previous);
                print!(" {:>30}", format!("{ms:.3} ms ({ratios})"));
            }
            println!();
        }
    }
}

/// The fake's RSS before and after `requests` requests (the four reads in turn, 16 clients,
/// fresh connections), then during an optional steady load.
async fn memory(
    fake: &FakeProcess,
    requests: &[(String, String)],
    count: u64,
    steady_seconds: u64,
) {
    let before = fake.rss_kib();
    let started = Instant::now();
    let per_path = (count / requests.len() as u64).max(1);
    let mut sent = 0;
    for (_, path) in requests {
        let stats = load(
            &fake.socket,
            path,
            16,
            Duration::ZERO,
            per_path,
            Mode::Fresh,
        )
        .await;
        sent += stats.requests;
    }
    let after = fake.rss_kib();
    let kib = |v: Option<u64>| v.map_or("?".into(), |v| format!("{:.1} MiB", v as f64 / 1024.0));
    println!(
        "\nfake RSS: {} before, {} after {sent} requests ({:.1} s; BENCH_RSS_REQUESTS={count})",
        kib(before),
        kib(after),
        started.elapsed().as_secs_f64()
    );
    if steady_seconds > 0 {
        let end = Instant::now() + Duration::from_secs(steady_seconds);
        let mut i = 0;
        while Instant::now() < end {
            let (_, path) = &requests[i % requests.len()];
            load(
                &fake.socket,
                path,
                16,
                Duration::from_secs(10),
                1,
                Mode::Fresh,
            )
            .await;
            i += 1;
            println!("  steady load, {} s: RSS {}", i * 10, kib(fake.rss_kib()));
        }
    }
}
