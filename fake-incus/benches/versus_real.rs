//! The fake and a real Incus answering the same requests, side by side.
//!
//! `cargo bench -p fake-incus --bench versus_real` needs a real daemon on `INCUS_SOCKET` (default
//! `/var/lib/incus/unix.socket`) with a `busybox` image alias in project `default`; without one it
//! says so and exits 0. Every workload runs on the real daemon and on the fake in alternation, round
//! after round, so that a busy machine slows both alike; the ratio of the medians is what counts.
//! Each request opens its own connection and writes at once, as the core's client does. The
//! instances it creates on the real daemon are named `bench-<random>` and deleted before it ends.
//!
//! Two fakes take part: one as it comes (start and stop take 200 ms, like a small container on a
//! real host) and one whose state changes finish at once (an `operation_duration` rule of 0 ms).

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use fake_incus::{client, Request};
use hyper::Method;
use serde_json::{json, Value};

const ROUNDS: usize = 7;

/// One daemon, reached over its Unix socket.
struct Daemon {
    name: &'static str,
    socket: PathBuf,
}

impl Daemon {
    /// One request on a fresh connection; the answer's bytes, unparsed (the client does no more
    /// work than it must, so the ratio is the daemons').
    async fn send(&self, method: Method, path: &str, body: Option<Value>) -> Bytes {
        let request = Request::new(method.as_str(), path)
            .header("content-type", "application/json")
            .body(body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string())));
        client::send(&self.socket, request)
            .await
            .unwrap_or_else(|e| panic!("{}: {e}", self.name))
            .bytes()
            .clone()
    }

    async fn send_json(&self, method: Method, path: &str, body: Option<Value>) -> Value {
        let bytes = self.send(method, path, body).await;
        serde_json::from_slice(&bytes).unwrap_or(Value::Null)
    }

    /// Sends an async request and waits for its operation; panics when it fails.
    async fn mutate(&self, method: Method, path: &str, body: Option<Value>) {
        let accepted = self.send_json(method, path, body).await;
        let operation = accepted["operation"]
            .as_str()
            .unwrap_or_else(|| panic!("{}: {path}: no operation in {accepted}", self.name))
            .to_owned();
        let done = self
            .send_json(Method::GET, &format!("{operation}/wait?timeout=60"), None)
            .await;
        let status = done["metadata"]["status"].as_str().unwrap_or_default();
        assert_eq!(status, "Success", "{}: {path}: {done}", self.name);
    }

    async fn answers(&self) -> bool {
        if !self.socket.exists() {
            return false;
        }
        let probe = tokio::time::timeout(
            Duration::from_secs(5),
            tokio::net::UnixStream::connect(&self.socket),
        );
        matches!(probe.await, Ok(Ok(_)))
    }
}

/// A named sequence of requests, timed as a whole.
#[derive(Clone, Copy)]
enum Workload {
    Server,
    ListInstances,
    Lifecycle,
    Exec,
}

impl Workload {
    const ALL: [Self; 4] = [
        Self::Server,
        Self::ListInstances,
        Self::Lifecycle,
        Self::Exec,
    ];

    fn label(self) -> &'static str {
        match self {
            Self::Server => "GET /1.0 x20",
            Self::ListInstances => "GET /1.0/instances?recursion=2 x20",
            Self::Lifecycle => "create, start, stop, delete (each waited)",
            Self::Exec => "exec echo (record-output, waited) x5",
        }
    }

    async fn run(self, daemon: &Daemon, instance: &str, running: &str) {
        match self {
            Self::Server => {
                for _ in 0..20 {
                    daemon.send(Method::GET, "/1.0", None).await;
                }
            }
            Self::ListInstances => {
                for _ in 0..20 {
                    daemon
                        .send(Method::GET, "/1.0/instances?recursion=2", None)
                        .await;
                }
            }
            Self::Lifecycle => lifecycle(daemon, instance).await,
            Self::Exec => {
                let exec = json!({"command": ["echo", "hi"], "record-output": true,
                    "wait-for-websocket": false, "interactive": false});
                let path = format!("/1.0/instances/{running}/exec");
                for _ in 0..5 {
                    daemon.mutate(Method::POST, &path, Some(exec.clone())).await;
                }
            }
        }
    }
}

async fn lifecycle(daemon: &Daemon, name: &str) {
    let create = json!({"name": name, "source": {"type": "image", "alias": "busybox"}});
    let state = format!("/1.0/instances/{name}/state");
    daemon
        .mutate(Method::POST, "/1.0/instances", Some(create))
        .await;
    daemon
        .mutate(Method::PUT, &state, Some(json!({"action": "start"})))
        .await;
    let stop = json!({"action": "stop", "force": true});
    daemon.mutate(Method::PUT, &state, Some(stop)).await;
    daemon
        .mutate(Method::DELETE, &format!("/1.0/instances/{name}"), None)
        .await;
}

/// Deletes the bench instances from the real daemon, whatever happened.
struct Cleanup {
    socket: PathBuf,
    names: Vec<String>,
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        let daemon = Daemon {
            name: "real",
            socket: self.socket.clone(),
        };
        let names = std::mem::take(&mut self.names);
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            for name in names {
                let stop = json!({"action": "stop", "force": true});
                let state = format!("/1.0/instances/{name}/state");
                daemon.send(Method::PUT, &state, Some(stop)).await;
                // Poll (bounded) until the delete is accepted: a stop may still be running.
                for _ in 0..100 {
                    let reply = daemon
                        .send_json(Method::DELETE, &format!("/1.0/instances/{name}"), None)
                        .await;
                    if reply["type"] == "async" || reply["error_code"] == 404 {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        });
    }
}

fn median(samples: &mut [Duration]) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let socket = std::env::var_os("INCUS_SOCKET").map_or_else(
        || PathBuf::from("/var/lib/incus/unix.socket"),
        PathBuf::from,
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let real = Daemon {
        name: "real",
        socket: socket.clone(),
    };
    if !runtime.block_on(real.answers()) {
        println!(
            "skipped: no real Incus answers on {} (set INCUS_SOCKET)",
            socket.display()
        );
        return;
    }
    let unique = &uuid::Uuid::new_v4().simple().to_string()[..8];
    let running = format!("bench-{unique}-exec");
    let mut cleanup = Cleanup {
        socket,
        names: vec![running.clone()],
    };
    let instant = fake_incus::Rule::new("PUT", "/1.0/instances/*/state")
        .every()
        .fault(fake_incus::Fault::OperationDuration { ms: 0 });
    let (fake, fake_instant) = runtime.block_on(async {
        let plain = fake_incus::FakeIncus::builder().start().await;
        let instant = fake_incus::FakeIncus::builder().rule(instant).start().await;
        (
            plain.expect("the fake starts"),
            instant.expect("the fake starts"),
        )
    });
    let sides = [
        real,
        Daemon {
            name: "fake",
            socket: fake.unix_socket().to_path_buf(),
        },
        Daemon {
            name: "fake, instant state changes",
            socket: fake_instant.unix_socket().to_path_buf(),
        },
    ];
    runtime.block_on(async {
        for daemon in &sides {
            prepare_running(daemon, &running).await;
        }
    });
    println!(
        "{:<44} {:>11} {:>11} {:>11} {:>10} {:>10}",
        "workload (median of 7 rounds)", "real", "fake", "instant", "real/fake", "real/inst."
    );
    for workload in Workload::ALL {
        let mut samples = [Vec::new(), Vec::new(), Vec::new()];
        for round in 0..ROUNDS {
            let instance = format!("bench-{unique}-{round}");
            cleanup.names.push(instance.clone());
            for (side, daemon) in sides.iter().enumerate() {
                samples[side].push(time(&runtime, workload, daemon, &instance, &running));
            }
        }
        let [real, fake, instant] = samples.map(|mut s| median(&mut s));
        report(workload, real, fake, instant);
    }
    drop((fake, fake_instant));
    drop(cleanup);
}

async fn prepare_running(daemon: &Daemon, name: &str) {
    let create = json!({"name": name, "source": {"type": "image", "alias": "busybox"}});
    daemon
        .mutate(Method::POST, "/1.0/instances", Some(create))
        .await;
    let start = json!({"action": "start"});
    let state = format!("/1.0/instances/{name}/state");
    daemon.mutate(Method::PUT, &state, Some(start)).await;
}

fn time(
    runtime: &tokio::runtime::Runtime,
    workload: Workload,
    daemon: &Daemon,
    instance: &str,
    running: &str,
) -> Duration {
    let started = Instant::now();
    runtime.block_on(workload.run(daemon, instance, running));
    started.elapsed()
}

fn report(workload: Workload, real: Duration, fake: Duration, instant: Duration) {
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "{:<44} {:>8.2} ms {:>8.2} ms {:>8.2} ms {:>9.0}x {:>9.0}x",
        workload.label(),
        ms(real),
        ms(fake),
        ms(instant),
        ms(real) / ms(fake),
        ms(real) / ms(instant)
    );
}
