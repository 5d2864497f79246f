//! The fake against the whole Incus 6.0.4 API (`tests/data/incus-6.0.4-endpoints.tsv`, from the
//! daemon's `doc/rest-api.yaml`): every endpoint is routed, and `API.md` says, from the
//! declarations and this measurement, what the fake does with each.

use crate::common::call;
use fake_incus::FakeIncus;
use std::fmt::Write;

const ENDPOINTS: &str = include_str!("../data/incus-6.0.4-endpoints.tsv");

/// Endpoints routed by other work: the issue "Instances and images on the fake" (the instance
/// and image long tail, volume snapshots and backups) and the cluster issue (`/1.0/cluster/certificate`).
/// Each must still be unrouted: when one is routed, it leaves this list.
const ELSEWHERE: &[&str] = &[
    "PUT /1.0/cluster/certificate",
    "GET /1.0/images/{fingerprint}/export",
    "POST /1.0/images/{fingerprint}/export",
    "POST /1.0/images/{fingerprint}/refresh",
    "POST /1.0/images/{fingerprint}/secret",
    "GET /1.0/instances/{name}/access",
    "GET /1.0/instances/{name}/backups",
    "POST /1.0/instances/{name}/backups",
    "GET /1.0/instances/{name}/backups/{backup}",
    "POST /1.0/instances/{name}/backups/{backup}",
    "DELETE /1.0/instances/{name}/backups/{backup}",
    "GET /1.0/instances/{name}/backups/{backup}/export",
    "GET /1.0/instances/{name}/console",
    "POST /1.0/instances/{name}/console",
    "DELETE /1.0/instances/{name}/console",
    "GET /1.0/instances/{name}/debug/memory",
    "GET /1.0/instances/{name}/metadata",
    "PUT /1.0/instances/{name}/metadata",
    "PATCH /1.0/instances/{name}/metadata",
    "GET /1.0/instances/{name}/metadata/templates",
    "POST /1.0/instances/{name}/metadata/templates",
    "DELETE /1.0/instances/{name}/metadata/templates",
    "POST /1.0/instances/{name}/rebuild",
    "GET /1.0/storage-pools/{poolName}/volumes/{type}/{volumeName}/snapshots",
    "POST /1.0/storage-pools/{poolName}/volumes/{type}/{volumeName}/snapshots",
    "GET /1.0/storage-pools/{poolName}/volumes/{type}/{volumeName}/backups",
    "POST /1.0/storage-pools/{poolName}/volumes/{type}/{volumeName}/backups",
    "GET /1.0/storage-pools/{poolName}/volumes/{type}/{volumeName}/backups/{backupName}",
    "POST /1.0/storage-pools/{poolName}/volumes/{type}/{volumeName}/backups/{backupName}",
    "DELETE /1.0/storage-pools/{poolName}/volumes/{type}/{volumeName}/backups/{backupName}",
    "GET /1.0/storage-pools/{poolName}/volumes/{type}/{volumeName}/backups/{backupName}/export",
];

/// How the fake answers an endpoint asked about a name that does not exist.
#[derive(PartialEq, Debug)]
enum Answer {
    /// The unknown-route 404 (`not found`).
    Unrouted,
    /// 501 `not implemented`.
    NotImplemented,
    /// Anything else: the endpoint's own answer, with its status.
    Routed(u16),
}

/// The request path of an endpoint, its parameters filled with names that do not exist
/// (`{type}` with `custom`, a real volume type).
fn concrete(path: &str) -> String {
    path.split('/')
        .map(|s| match s {
            "{type}" => "custom",
            s if s.starts_with('{') => "nothing-here",
            s => s,
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// Every endpoint of the TSV (method, path) with the fake's answer.
async fn measure() -> Vec<(String, String, Answer)> {
    let fake = FakeIncus::builder().start().await.expect("fake starts");
    let mut out = Vec::new();
    for line in ENDPOINTS.lines().filter(|l| !l.starts_with('#')) {
        let mut cells = line.split('\t');
        let (Some(method), Some(path)) = (cells.next(), cells.next()) else {
            continue;
        };
        let reply = call(&fake, method, &concrete(path), None).await;
        let answer = match reply.native_error() {
            Some((404, "not found")) => Answer::Unrouted,
            Some((501, _)) => Answer::NotImplemented,
            _ => Answer::Routed(reply.status()),
        };
        out.push((method.to_owned(), path.to_owned(), answer));
    }
    out
}

#[tokio::test]
async fn every_endpoint_of_incus_6_0_4_is_routed() {
    let measured = measure().await;
    assert_eq!(measured.len(), 226, "the TSV lists 226 endpoints");
    let unrouted: Vec<String> = measured
        .iter()
        .filter(|(_, _, a)| *a == Answer::Unrouted)
        .map(|(m, p, _)| format!("{m} {p}"))
        .collect();
    let unexpected: Vec<&String> = unrouted
        .iter()
        .filter(|e| !ELSEWHERE.contains(&e.as_str()))
        .collect();
    let now_routed: Vec<&&str> = ELSEWHERE
        .iter()
        .filter(|e| !unrouted.iter().any(|u| u == *e))
        .collect();
    assert!(
        unexpected.is_empty() && now_routed.is_empty(),
        "unrouted endpoints ({} of 226): {unexpected:#?}\nrouted now, drop them from ELSEWHERE: {now_routed:#?}",
        unrouted.len()
    );
}

/// API.md as the declarations and the measurement make it.
async fn api_md() -> String {
    let measured = measure().await;
    let count = |f: fn(&Answer) -> bool| measured.iter().filter(|(_, _, a)| f(a)).count();
    let mut out = String::from(
        "# The Incus API on the fake\n\n\
         Generated by `cargo test -p fake-incus --test fake coverage` (`BLESS=1` rewrites it) from \
         the fake's resource declarations and from asking a fresh fake every endpoint of Incus \
         6.0.4 (`tests/data/incus-6.0.4-endpoints.tsv`) about a name that does not exist.\n\n",
    );
    let _ = writeln!(
        out,
        "Of {} endpoints: {} answer as their route does, {} answer `501 not implemented`, {} are \
         not routed (the unknown-route 404).\n",
        measured.len(),
        count(|a| matches!(a, Answer::Routed(_))),
        count(|a| *a == Answer::NotImplemented),
        count(|a| *a == Answer::Unrouted),
    );
    out.push_str("## Declared resources\n\nEach is one declaration served by the fake's one generic implementation (`src/api/resource/`).\n\n");
    out.push_str(&fake_incus::declared_resources_markdown());
    out.push_str(
        "## Every endpoint\n\n| method | path | a fresh fake answers |\n| --- | --- | --- |\n",
    );
    for (method, path, answer) in &measured {
        let said = match answer {
            Answer::Unrouted => "not routed (404 `not found`)".to_owned(),
            Answer::NotImplemented => "501 `not implemented`".to_owned(),
            Answer::Routed(status) => format!("routed ({status} for an unknown name)"),
        };
        let _ = writeln!(out, "| {method} | `{path}` | {said} |");
    }
    out
}

#[tokio::test]
async fn api_md_is_up_to_date() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("API.md");
    let expected = api_md().await;
    if std::env::var_os("BLESS").is_some() {
        std::fs::write(&path, &expected).expect("API.md written");
        return;
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "fake-incus/API.md is stale: run `BLESS=1 cargo test -p fake-incus --test fake api_md_is_up_to_date`"
    );
}
