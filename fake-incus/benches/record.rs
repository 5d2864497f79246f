//! What recording adds to a request: the same requests straight to an Incus and through
//! `fake-incus record` in front of it, side by side in one run.
//!
//! `cargo test -p fake-incus --bench record` (test profile) or `cargo bench -p fake-incus --bench
//! record` (release). Targets: a fake started in process, and the real daemon on `INCUS_SOCKET`
//! (default `/var/lib/incus/unix.socket`) when one answers (`BENCH_REAL=0` leaves it out). The
//! recorder runs on a runtime and thread of its own, as it does in a process of its own, once on
//! a multi-thread runtime (two workers, as `fake-incus record` on two processors) and once on a
//! current-thread one. One client sends one request at a time, each on a fresh connection (as
//! the `incus` client and the core do), direct and recorded alternating request by request, so a
//! busy machine slows both alike: `BENCH_ROUNDS` (default 5) rounds of `BENCH_REQUESTS` (default
//! 200) requests each way.
//!
//! Printed per target, runtime and request: the median and mean latency direct and recorded,
//! their difference and ratio; the recorder's own account (`recorder_us` of the transcript: from
//! the request's arrival to its answer going back, less the upstream's time), median and p99;
//! and the upstream's time as the recorder saw it (`upstream_us`: its fresh connection, the
//! request, the whole answer), to set beside the direct latency: when the two are alike, what
//! recording adds is the client's hop to the recorder, not the upstream's.

use fake_incus::client::{self, Request};
use fake_incus::record::Recorder;
use fake_incus::FakeIncus;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The latency of one request.
async fn once(socket: &Path, path: &str) -> Duration {
    let started = Instant::now();
    let reply = client::send(socket, Request::get(path))
        .await
        .expect("an answer");
    assert_eq!(reply.status(), 200, "{path}");
    started.elapsed()
}

/// The latencies of `count` requests to `direct` and `count` to `recorded`, one at a time and
/// alternating request by request, so that a busy moment of the machine slows both alike.
async fn run(direct: &Path, recorded: &Path, path: &str, count: usize) -> [Vec<Duration>; 2] {
    let mut out = [Vec::with_capacity(count), Vec::with_capacity(count)];
    for _ in 0..count {
        out[0].push(once(direct, path).await);
        out[1].push(once(recorded, path).await);
    }
    out
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or_default()
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    let at = ((values.len() as f64 - 1.0) * p).round() as usize;
    values.get(at).copied().unwrap_or_default()
}

fn micros(values: &[Duration]) -> Vec<f64> {
    values.iter().map(|d| d.as_secs_f64() * 1e6).collect()
}

/// A recorder in front of `upstream` on a runtime and thread of its own, as `fake-incus record`
/// runs in a process of its own: `current_thread` or a multi-thread runtime of two workers.
struct Hosted {
    socket: PathBuf,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Hosted {
    fn start(upstream: &Path, dir: &Path, current_thread: bool) -> Self {
        let socket = dir.join("recorder.socket");
        let transcript = dir.join("bench.jsonl");
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let (ready, is_ready) = std::sync::mpsc::channel();
        let (upstream, at) = (upstream.to_path_buf(), socket.clone());
        let thread = std::thread::spawn(move || {
            let runtime = if current_thread {
                tokio::runtime::Builder::new_current_thread()
            } else {
                let mut builder = tokio::runtime::Builder::new_multi_thread();
                builder.worker_threads(2);
                builder
            }
            .enable_all()
            .build()
            .expect("a runtime");
            runtime.block_on(async move {
                let recorder = Recorder::start(
                    &upstream,
                    &at,
                    &transcript,
                    fake_incus::transcript::DEFAULT_BODY_LIMIT,
                )
                .await
                .expect("recorder");
                ready.send(()).expect("the bench waits");
                let _ = stopped.await;
                recorder.finish().await.expect("transcript");
            });
        });
        is_ready.recv().expect("the recorder started");
        Self {
            socket,
            stop: Some(stop),
            thread: Some(thread),
        }
    }

    fn finish(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            thread.join().expect("the recorder's thread");
        }
    }
}

async fn measure(name: &str, upstream: &Path, paths: &[&str], rounds: usize, count: usize) {
    for current_thread in [false, true] {
        let flavour = if current_thread {
            "current-thread"
        } else {
            "multi-thread"
        };
        let dir = tempfile::tempdir().expect("temp dir");
        let recorder = Hosted::start(upstream, dir.path(), current_thread);
        for path in paths {
            let (mut direct, mut recorded) = (Vec::new(), Vec::new());
            // Warm both paths up.
            run(upstream, &recorder.socket, path, 5).await;
            for _ in 0..rounds {
                let [d, r] = run(upstream, &recorder.socket, path, count).await;
                direct.extend(d);
                recorded.extend(r);
            }
            let (mut d, mut r) = (micros(&direct), micros(&recorded));
            let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
            let (dm, rm) = (mean(&d), mean(&r));
            let (dmed, rmed) = (median(&mut d), median(&mut r));
            println!(
                "| {name} | {flavour} | `GET {path}` | {dmed:.0} | {rmed:.0} | {:+.0} | {:.2} | {dm:.0} | {rm:.0} | {:+.0} |",
                rmed - dmed,
                rmed / dmed,
                rm - dm
            );
        }
        recorder.finish();
        let text = std::fs::read_to_string(dir.path().join("bench.jsonl")).expect("transcript");
        let (_, exchanges) = fake_incus::transcript::parse(&text).expect("a transcript");
        let mut own: Vec<f64> = exchanges
            .iter()
            .map(|e| e.timing.recorder_us as f64)
            .collect();
        println!(
            "\n{name}, {flavour}: the recorder's own time per request (transcript `recorder_us`, {} requests): median {:.0} us, p99 {:.0} us",
            own.len(),
            median(&mut own),
            percentile(&mut own, 0.99),
        );
        for path in paths {
            let mut upstream: Vec<f64> = exchanges
                .iter()
                .filter(|e| {
                    let query = if e.request.query.is_empty() {
                        String::new()
                    } else {
                        format!("?{}", e.request.query)
                    };
                    *path == format!("{}{query}", e.request.path)
                })
                .map(|e| e.timing.upstream_us as f64)
                .collect();
            println!(
                "{name}, {flavour}: `GET {path}`: the upstream's time as the recorder saw it (`upstream_us`: connecting, sending, the whole answer read): median {:.0} us",
                median(&mut upstream)
            );
        }
        println!();
    }
}

fn real_socket() -> PathBuf {
    std::env::var_os("INCUS_SOCKET").map_or_else(
        || PathBuf::from("/var/lib/incus/unix.socket"),
        PathBuf::from,
    )
}

async fn real_answers(socket: &Path) -> bool {
    let probe = client::send(socket, Request::get("/1.0"));
    matches!(
        tokio::time::timeout(Duration::from_secs(5), probe).await,
        Ok(Ok(reply)) if reply.status() == 200
    )
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let rounds = env_number("BENCH_ROUNDS", 5);
    let count = env_number("BENCH_REQUESTS", 200);
    println!(
        "{rounds} rounds of {count} requests, direct and recorded alternating; latency in us\n"
    );
    println!("| target | recorder runtime | request | direct median | recorded median | added | ratio | direct mean | recorded mean | added (mean) |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let fake = FakeIncus::builder().start().await.expect("fake");
    measure(
        "fake",
        fake.unix_socket(),
        &["/1.0", "/1.0/instances?recursion=1"],
        rounds,
        count,
    )
    .await;
    let real = real_socket();
    if std::env::var("BENCH_REAL").is_ok_and(|v| v == "0") {
        println!("real daemon: left out (BENCH_REAL=0)");
    } else if real_answers(&real).await {
        measure(
            "real",
            &real,
            &["/1.0", "/1.0/projects?recursion=1"],
            rounds,
            count,
        )
        .await;
    } else {
        println!("real daemon: none answers on {}", real.display());
    }
}
