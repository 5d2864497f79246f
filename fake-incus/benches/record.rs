//! What recording adds to a request: the same requests straight to an Incus and through
//! `fake-incus record` in front of it, side by side in one run.
//!
//! `cargo test -p fake-incus --bench record` (test profile) or `cargo bench -p fake-incus --bench
//! record` (release). Targets: a fake started in process, and the real daemon on `INCUS_SOCKET`
//! (default `/var/lib/incus/unix.socket`) when one answers (`BENCH_REAL=0` leaves it out). One
//! client sends one request at a time, each on a fresh connection (as the `incus` client and the
//! core do); the direct and the recorded rounds alternate, `BENCH_ROUNDS` (default 5) rounds of
//! `BENCH_REQUESTS` (default 200) requests each, so a busy machine slows both alike.
//!
//! Printed per target and request: the median and mean latency direct and recorded, their
//! difference and ratio, and the recorder's own account (`recorder_us` of the transcript: from
//! the request's arrival to its answer going back, less the upstream's time), median and p99.

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

/// The latencies of `count` requests, one at a time.
async fn run(socket: &Path, path: &str, count: usize) -> Vec<Duration> {
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let started = Instant::now();
        let reply = client::send(socket, Request::get(path))
            .await
            .expect("an answer");
        assert_eq!(reply.status(), 200, "{path}");
        out.push(started.elapsed());
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

async fn measure(name: &str, upstream: &Path, paths: &[&str], rounds: usize, count: usize) {
    let dir = tempfile::tempdir().expect("temp dir");
    let transcript = dir.path().join("bench.jsonl");
    let recorder = Recorder::start(
        upstream,
        &dir.path().join("recorder.socket"),
        &transcript,
        fake_incus::transcript::DEFAULT_BODY_LIMIT,
    )
    .await
    .expect("recorder");
    for path in paths {
        let (mut direct, mut recorded) = (Vec::new(), Vec::new());
        // Warm both paths up.
        run(upstream, path, 5).await;
        run(recorder.unix_socket(), path, 5).await;
        for _ in 0..rounds {
            direct.extend(run(upstream, path, count).await);
            recorded.extend(run(recorder.unix_socket(), path, count).await);
        }
        let (mut d, mut r) = (micros(&direct), micros(&recorded));
        let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
        let (dm, rm) = (mean(&d), mean(&r));
        let (dmed, rmed) = (median(&mut d), median(&mut r));
        println!(
            "| {name} | `GET {path}` | {dmed:.0} | {rmed:.0} | {:+.0} | {:.2} | {dm:.0} | {rm:.0} | {:+.0} |",
            rmed - dmed,
            rmed / dmed,
            rm - dm
        );
    }
    recorder.finish().await.expect("transcript");
    let text = std::fs::read_to_string(&transcript).expect("transcript");
    let (_, exchanges) = fake_incus::transcript::parse(&text).expect("a transcript");
    let mut own: Vec<f64> = exchanges
        .iter()
        .map(|e| e.timing.recorder_us as f64)
        .collect();
    println!(
        "\n{name}: the recorder's own time per request (transcript `recorder_us`, {} requests): median {:.0} us, p99 {:.0} us\n",
        own.len(),
        median(&mut own),
        percentile(&mut own, 0.99)
    );
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
    println!("| target | request | direct median | recorded median | added | ratio | direct mean | recorded mean | added (mean) |");
    println!("|---|---|---|---|---|---|---|---|---|");
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
