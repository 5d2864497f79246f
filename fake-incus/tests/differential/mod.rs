//! The differential probes' shared pieces: one side's raw HTTP client over a Unix socket, the
//! request and answer, the probe that sends each step to both sides, the comparison of two
//! answers (HTTP status, envelope fields, error text with ids masked, the keys and JSON types of
//! the metadata, the presence of the `ETag` and `Location` headers) and the report that fails
//! on any divergence not listed as known. Used by `differential_real` (a standalone daemon) and
//! `differential_cluster_real` (a cluster); each binary uses part of it.
#![allow(dead_code)]

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use hyperlocal::{UnixConnector, Uri};
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// The comparison of two answers is the fake's own (`fake-incus replay` uses it too).
pub(crate) use fake_incus::differ::{compare, Observed as Reply};

/// The operation wait bound used for every async step.
pub(crate) const WAIT: &str = "timeout=60";
/// A known divergence: a diff line of one step that is tolerated until the fake is fixed.
pub(crate) struct Known {
    /// The step label, or `*` for every step.
    pub(crate) step: &'static str,
    /// A substring of the diff line.
    pub(crate) diff: &'static str,
    pub(crate) reason: &'static str,
}

/// Differences that are properties of the host a daemon runs on, not of its line: the hardware
/// `GET /1.0/resources` describes is the machine's, and Incus leaves out (`omitempty`) what a
/// machine does not show. They may appear in any leg on any machine (`GET /1.0/resources`, a
/// cluster member's resources), so they are allowed everywhere and never reported stale.
pub(crate) const HOST_PROPERTIES: &[Known] = &[
    Known {
        step: "*",
        diff: "metadata.system.type: value real \"virtual-machine\" vs fake \"container\"",
        reason: "a property of the host: both lines ask `systemd-detect-virt --container`; \
                 the fake answers as a container host does, and a 7.0 daemon started from a \
                 tree of its own in a mount namespace of its own (`real-incus7-up.sh`) finds \
                 nothing that marks the container, so it answers `virtual-machine`",
    },
    Known {
        step: "*",
        diff: "metadata.network.cards[]: keys only in fake [\"ports\"]",
        reason: "a property of the host: Incus lists a card's ports from the network interfaces \
             the kernel shows under the card, and leaves the list out when it finds none (a \
             CI machine's 7.0 daemon found none for its card; the fake's captured host has one)",
    },
];

/// A client that opens a fresh connection for every request and writes the request at once.
///
/// A pooled client may open a connection in the background and then leave it silent, because
/// an idle pooled connection freed up first. Incus 6.0 peeks at the first byte of every Unix
/// connection inside its accept loop (to tell TLS from plain HTTP), so one silent connection
/// stops the daemon from accepting any other: its own `callhook` processes then time out and
/// instance start or stop fails after 30-60 s. Without an idle pool nothing is ever left silent.
pub(crate) fn one_connection_per_request() -> Client<UnixConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new())
        .pool_max_idle_per_host(0)
        .build(UnixConnector)
}

/// One daemon under probe.
pub(crate) struct Side {
    pub(crate) name: &'static str,
    pub(crate) socket: PathBuf,
    pub(crate) client: Client<UnixConnector, Full<Bytes>>,
}

impl Side {
    pub(crate) fn new(name: &'static str, socket: &Path) -> Self {
        Self {
            name,
            socket: socket.to_path_buf(),
            client: one_connection_per_request(),
        }
    }

    pub(crate) async fn send(&self, req: &Req) -> Result<Reply, String> {
        let uri: hyper::Uri = Uri::new(&self.socket, &req.path).into();
        let mut builder = Request::builder().method(req.method.clone()).uri(uri);
        for (name, value) in &req.headers {
            builder = builder.header(*name, value);
        }
        let body = match &req.body {
            Some(text) => {
                builder = builder.header("content-type", "application/json");
                Full::new(Bytes::from(text.clone()))
            }
            None => Full::new(Bytes::new()),
        };
        let request = builder.body(body).map_err(|e| e.to_string())?;
        let call = self.client.request(request);
        let response = tokio::time::timeout(Duration::from_secs(120), call)
            .await
            .map_err(|_| format!("{}: {} {} timed out", self.name, req.method, req.path))?
            .map_err(|e| format!("{}: {} {}: {e}", self.name, req.method, req.path))?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok(Reply::new(status, &headers, &bytes))
    }
}

/// A raw request.
#[derive(Debug, Clone)]
pub(crate) struct Req {
    pub(crate) method: Method,
    pub(crate) path: String,
    pub(crate) headers: Vec<(&'static str, String)>,
    pub(crate) body: Option<String>,
}

impl Req {
    pub(crate) fn new(method: Method, path: impl Into<String>) -> Self {
        Self {
            method,
            path: path.into(),
            headers: Vec::new(),
            body: None,
        }
    }
    pub(crate) fn get(path: impl Into<String>) -> Self {
        Self::new(Method::GET, path)
    }
    pub(crate) fn json(mut self, body: &Value) -> Self {
        self.body = Some(body.to_string());
        self
    }
    pub(crate) fn raw(mut self, body: &str) -> Self {
        self.body = Some(body.to_string());
        self
    }
    pub(crate) fn header(mut self, name: &'static str, value: impl Into<String>) -> Self {
        self.headers.push((name, value.into()));
        self
    }
}

/// The probe: both sides, and the diffs found so far.
pub(crate) struct Probe {
    pub(crate) real: Side,
    pub(crate) fake: Side,
    pub(crate) diffs: Vec<(String, String)>,
    pub(crate) steps: usize,
}

impl Probe {
    /// The same request on both sides.
    pub(crate) async fn step(&mut self, label: &str, req: Req) -> (Reply, Reply) {
        self.step_each(label, req.clone(), req).await
    }

    /// Per-side requests (for ids that differ between the sides).
    pub(crate) async fn step_each(&mut self, label: &str, real: Req, fake: Req) -> (Reply, Reply) {
        self.steps += 1;
        // Concurrently: a slow real daemon must not let the fake's operations expire.
        let (r, f) = tokio::join!(self.real.send(&real), self.fake.send(&fake));
        let r = r.unwrap_or_else(|e| panic!("{e}"));
        let f = f.unwrap_or_else(|e| panic!("{e}"));
        println!(
            "{label}: real {} {} | fake {} {}",
            r.status,
            short(&r.body),
            f.status,
            short(&f.body)
        );
        if std::env::var("DIFF_DUMP").is_ok_and(|wanted| label.contains(wanted.as_str())) {
            println!("  real body: {}\n  fake body: {}", r.body, f.body);
        }
        for diff in compare(&r, &f) {
            self.diffs.push((label.to_string(), diff));
        }
        (r, f)
    }

    /// Records a divergence when the ETag changed between two GETs on one side only.
    pub(crate) fn etag_changes(
        &mut self,
        label: &str,
        before: &(Reply, Reply),
        after: &(Reply, Reply),
    ) {
        let changed = |b: &Reply, a: &Reply| b.etag != a.etag;
        let (real, fake) = (changed(&before.0, &after.0), changed(&before.1, &after.1));
        if real != fake {
            let diff = format!("ETag changed: real {real} vs fake {fake}");
            self.diffs.push((label.to_string(), diff));
        }
    }

    /// Waits on both sides' operations of an async step. A side that started no operation
    /// is a divergence of the step itself, already recorded: its wait is a `GET` of the
    /// unknown operation, so the sequence goes on.
    pub(crate) async fn wait(&mut self, label: &str, started: &(Reply, Reply)) -> (Reply, Reply) {
        let path = |reply: &Reply| {
            let id = reply.operation_id().unwrap_or_else(|| "none".into());
            Req::get(format!("/1.0/operations/{id}/wait?{WAIT}"))
        };
        let (real, fake) = (path(&started.0), path(&started.1));
        self.step_each(&format!("{label} wait"), real, fake).await
    }
}

/// The envelope's error, or its status, for the step log.
pub(crate) fn short(body: &Value) -> String {
    match body["error"].as_str() {
        Some(error) if !error.is_empty() => format!("error {error:?}"),
        _ => match body["metadata"]["err"].as_str() {
            Some(err) if !err.is_empty() => format!("operation err {err:?}"),
            _ => body["status"].to_string(),
        },
    }
}

pub(crate) async fn wait_real(side: &Side, started: &Reply) -> Result<(), String> {
    if let Some(id) = started.operation_id() {
        side.send(&Req::get(format!("/1.0/operations/{id}/wait?{WAIT}")))
            .await?;
    }
    Ok(())
}

/// Whether a daemon answers `GET /1.0` on this socket.
pub(crate) async fn answers(socket: &Path) -> bool {
    if !socket.exists() {
        return false;
    }
    let side = Side::new("real", socket);
    let req = Req::get("/1.0");
    let probe = tokio::time::timeout(Duration::from_secs(5), side.send(&req));
    matches!(probe.await, Ok(Ok(reply)) if reply.status == StatusCode::OK)
}

/// The Incus line the fake imitates against this daemon: the newest whose every API extension
/// the daemon advertises (its `GET /1.0`), as the acceptance runner chooses it.
pub(crate) async fn line_of(side: &Side) -> fake_incus::IncusLine {
    let server = side
        .send(&Req::get("/1.0"))
        .await
        .expect("the daemon answers");
    let advertised: Vec<&str> = server.metadata()["api_extensions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    fake_incus::IncusLine::newest_advertised(&advertised)
}

/// The fake's state with one more project, described and configured like the real one.
pub(crate) fn seed_with_project(
    dump: Value,
    project: &str,
    description: &str,
    config: &Value,
) -> Value {
    let mut state = dump;
    let entry = json!({"name": project, "description": description, "config": config});
    if let Some(projects) = state["projects"].as_array_mut() {
        projects.push(entry);
    }
    state
}

/// Prints the diff list and fails on any divergence that is not a known one.
pub(crate) fn report(probe: &Probe, known_list: &[Known]) {
    let matches = |k: &Known, step: &str, diff: &str| {
        (k.step == "*" || k.step == step) && diff.contains(k.diff)
    };
    let known = |step: &str, diff: &str| known_list.iter().position(|k| matches(k, step, diff));
    let host = |step: &str, diff: &str| HOST_PROPERTIES.iter().find(|k| matches(k, step, diff));
    let mut used = BTreeSet::new();
    let mut unexpected = Vec::new();
    for (step, diff) in &probe.diffs {
        if let Some(k) = host(step, diff) {
            println!("host property [{step}] {diff} ({})", k.reason);
            continue;
        }
        match known(step, diff) {
            Some(i) => {
                used.insert(i);
                println!(
                    "known divergence [{step}] {diff} ({})",
                    known_list[i].reason
                );
            }
            None => unexpected.push(format!("[{step}] {diff}")),
        }
    }
    for (i, k) in known_list.iter().enumerate() {
        if !used.contains(&i) {
            println!(
                "stale allow-list entry (fixed? remove it): [{}] {}",
                k.step, k.diff
            );
        }
    }
    println!(
        "{} requests compared, {} known divergences, {} unexpected",
        probe.steps,
        probe.diffs.len() - unexpected.len(),
        unexpected.len()
    );
    assert!(
        unexpected.is_empty(),
        "the fake diverges from the real daemon:\n{}",
        unexpected.join("\n")
    );
}
