//! The fake against the whole Incus 6.0.4 API (`tests/data/incus-6.0.4-endpoints.tsv`, from the
//! daemon's `doc/rest-api.yaml`) when it imitates 6.0, and against the whole Incus 7.0 API
//! (`incus-7.0-endpoints.tsv`) when it imitates 7.0: every endpoint has its row in the route
//! table ([`fake_incus::route_table`], served by the line's API extensions) and is routed, and
//! `API.md` says, from the table, the declarations and this measurement, what the fake does
//! with each.

use crate::common::call;
use fake_incus::{route_table, Endpoint, FakeIncus, IncusLine};
use std::fmt::Write;

const ENDPOINTS: &str = include_str!("../data/incus-6.0.4-endpoints.tsv");
const ENDPOINTS_7_0: &str = include_str!("../data/incus-7.0-endpoints.tsv");

/// Endpoints left to other work (none now: all 226 are routed). Each must still be unrouted:
/// when one is routed, it leaves this list.
const ELSEWHERE: &[&str] = &[];

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

/// The endpoints of a TSV (method, path).
fn listed(endpoints: &str) -> Vec<(&str, &str)> {
    endpoints
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let mut cells = l.split('\t');
            Some((cells.next()?, cells.next()?))
        })
        .collect()
}

/// The rows of the route table that serve `method` on `path` (a TSV path) for `line`.
fn rows(table: &[Endpoint], line: IncusLine, method: &str, path: &str) -> Vec<Endpoint> {
    table
        .iter()
        .filter(|e| e.method == method && e.matches(&concrete(path)))
        .filter(|e| e.extension.is_none_or(|x| line.has_extension(x)))
        .cloned()
        .collect()
}

/// Endpoints of Incus that no row of the table serves by their method, and why.
const NO_ROW: &[(&str, &str)] = &[
    (
        "DELETE /1.0/cluster/members/{name}",
        "the fake removes no member: standalone, every method of a member is 500 `Server is not clustered`; a cluster answers 501",
    ),
    (
        "GET /1.0/instances/{name}/debug/repair",
        "7.0's API document says GET, the daemon's handler (and the fake's row) is POST: GET is 501",
    ),
];

#[test]
fn every_endpoint_of_incus_has_a_row_in_the_route_table_on_its_line() {
    let table = route_table();
    let mut missing = Vec::new();
    for (line, endpoints) in [
        (IncusLine::V6_0, ENDPOINTS),
        (IncusLine::V7_0, ENDPOINTS_7_0),
    ] {
        for (method, path) in listed(endpoints) {
            let endpoint = format!("{method} {path}");
            let known = NO_ROW.iter().any(|(e, _)| *e == endpoint);
            if rows(&table, line, method, path).is_empty() != known {
                missing.push(format!("{line}: {endpoint}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "endpoints without a row (or listed in NO_ROW and now served): {missing:#?}"
    );
}

#[test]
fn the_endpoints_7_0_adds_are_rows_that_name_the_api_extension_6_0_lacks() {
    let table = route_table();
    let six = listed(ENDPOINTS);
    let added: Vec<(&str, &str)> = listed(ENDPOINTS_7_0)
        .into_iter()
        .filter(|e| !six.contains(e))
        .collect();
    assert_eq!(added.len(), 21, "{added:#?}");
    for (method, path) in added {
        for row in rows(&table, IncusLine::V7_0, method, path) {
            let extension = row.extension.unwrap_or_default();
            assert!(
                !extension.is_empty() && !IncusLine::V6_0.has_extension(extension),
                "{method} {path}: its row {row:?} is not one of 7.0's"
            );
        }
    }
}

/// Every endpoint of the 6.0.4 TSV (method, path) with the answer of a fake imitating 6.0.
async fn measure() -> Vec<(String, String, Answer)> {
    measure_line(IncusLine::V6_0, ENDPOINTS).await
}

/// Every endpoint of a TSV (method, path) with the answer of a fake imitating `line`.
async fn measure_line(line: IncusLine, endpoints: &str) -> Vec<(String, String, Answer)> {
    let fake = FakeIncus::builder()
        .incus_version(line)
        .start()
        .await
        .expect("fake starts");
    let mut out = Vec::new();
    for line in endpoints.lines().filter(|l| !l.starts_with('#')) {
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

#[tokio::test]
async fn every_endpoint_of_incus_7_0_is_routed_when_the_fake_imitates_7_0() {
    let measured = measure_line(IncusLine::V7_0, ENDPOINTS_7_0).await;
    assert_eq!(measured.len(), 247, "the TSV lists 247 endpoints");
    let unrouted: Vec<String> = measured
        .iter()
        .filter(|(_, _, a)| *a == Answer::Unrouted)
        .map(|(m, p, _)| format!("{m} {p}"))
        .collect();
    assert!(
        unrouted.is_empty(),
        "unrouted endpoints of 7.0: {unrouted:#?}"
    );
    // The 21 that 7.0 adds are not served when the fake imitates 6.0.
    let six = measure_line(IncusLine::V6_0, ENDPOINTS_7_0).await;
    let only_7_0: Vec<&(String, String, Answer)> = six
        .iter()
        .filter(|(m, p, a)| {
            *a == Answer::Unrouted
                && !ENDPOINTS
                    .lines()
                    .any(|l| l.starts_with(&format!("{m}\t{p}\t")))
        })
        .collect();
    assert_eq!(only_7_0.len(), 21, "{only_7_0:#?}");
}

/// API.md as the declarations and the measurement make it.
async fn api_md() -> String {
    let measured = measure().await;
    let count = |f: fn(&Answer) -> bool| measured.iter().filter(|(_, _, a)| f(a)).count();
    let mut out = String::from(
        "# The Incus API on the fake\n\n\
         Generated by `cargo test -p fake-incus --test fake coverage` (`BLESS=1` rewrites it) from \
         the fake's route table (`src/api/routes.rs`, `fake_incus::route_table()`), its resource \
         declarations and from asking a fresh fake every endpoint of Incus 6.0.4 \
         (`tests/data/incus-6.0.4-endpoints.tsv`) about a name that does not exist.\n\n",
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
    out.push_str(&table_md());
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
    let seven = measure_line(IncusLine::V7_0, ENDPOINTS_7_0).await;
    let added: Vec<&(String, String, Answer)> = seven
        .iter()
        .filter(|(m, p, _)| !measured.iter().any(|(m6, p6, _)| m6 == m && p6 == p))
        .collect();
    let _ = write!(
        out,
        "\n## Incus 7.0 (`--incus-version 7.0`)\n\nAsked the same way, a fake imitating 7.0 \
         routes {} of the {} endpoints of Incus 7.0 (`tests/data/incus-7.0-endpoints.tsv`). \
         The {} that 7.0 adds, each served only by a line with the API extension that brought \
         it (its row's):\n\n| method | path | API extension | a fresh fake answers |\n| --- | --- | --- | --- |\n",
        seven
            .iter()
            .filter(|(_, _, a)| *a != Answer::Unrouted)
            .count(),
        seven.len(),
        added.len(),
    );
    let table = route_table();
    for (method, path, answer) in added {
        let said = match answer {
            Answer::Unrouted => "not routed (404 `not found`)".to_owned(),
            Answer::NotImplemented => "501 `not implemented`".to_owned(),
            Answer::Routed(status) => format!("routed ({status} for an unknown name)"),
        };
        let extensions: Vec<String> = rows(&table, IncusLine::V7_0, method, path)
            .iter()
            .filter_map(|row| row.extension.map(|e| format!("`{e}`")))
            .collect();
        let extension = if extensions.is_empty() {
            "(no row for the method)".to_owned()
        } else {
            extensions.join(", ")
        };
        let _ = writeln!(out, "| {method} | `{path}` | {extension} | {said} |");
    }
    out
}

/// API.md's part on the route table: every row, in the order a request walks them.
fn table_md() -> String {
    let mut out = String::from(
        "## The route table\n\nEvery endpoint the fake serves, in the order a request walks them \
         (`src/api/routes.rs`; the declared resources' rows come from their declarations). A row \
         with an API extension is served only by a line that has it; `*` answers every method no \
         row of its path took; a path whose rows serve other methods answers `501`.\n\n\
         | method | path | API extension | when |\n| --- | --- | --- | --- |\n",
    );
    for row in route_table() {
        let extension = row.extension.map(|e| format!("`{e}`")).unwrap_or_default();
        let when = row.when.unwrap_or_default();
        let _ = writeln!(
            out,
            "| {} | `{}` | {extension} | {when} |",
            row.method, row.path
        );
    }
    out.push('\n');
    out
}

#[tokio::test]
async fn api_md_is_up_to_date() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("API.md");
    let expected = api_md().await;
    if std::env::var("BLESS").as_deref() == Ok("1") {
        std::fs::write(&path, &expected).expect("API.md written");
        return;
    }
    let actual = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        actual == expected,
        "fake-incus/API.md is stale: run `BLESS=1 cargo test -p fake-incus --test fake api_md_is_up_to_date`"
    );
}
