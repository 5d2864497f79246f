//! The catalogue as a contract: `describe()` is the pinned fixture and the profile export says
//! the same; reading the catalogue has no side effects; `run()` returns only when its work is over.

use std::collections::BTreeSet;
use std::time::Duration;

use fake_incus::FakeIncus;
use incus_operations::{Connection, RunOptions, Scope};
use serde_json::{json, Value};
use tokio::time::Instant;

use super::session::block_on;
use crate::embedded;
use crate::runner::Check;
use crate::scenario::fake;
use crate::scenario::format::FakeSetup;
use crate::ReferenceHost;

/// How long the fake is watched for late requests once `run()` has returned.
const QUIET: Duration = Duration::from_millis(500);
/// How often it is looked at meanwhile.
const LOOK: Duration = Duration::from_millis(20);

/// Why the public-contract checks run only in-process.
const PUBLIC_CONTRACT: &str = "checks this build's Rust catalogue (describe(), the pinned fixture, the profile export), not the implementation under test";
/// Why the no-side-effects checks run only in-process.
const NO_SIDE_EFFECTS: &str =
    "reads the Rust catalogue API and checks that doing so needs no runtime and sends nothing";
/// Why the synchronous checks run only in-process.
const SYNCHRONOUS: &str = "drives run() on the harness's own runtime to see that no task outlives it; over the wire, every trial's journal already shows what the implementation sent";

/// The contract checks that need nothing running (every run, certification included).
pub(crate) fn checks() -> Vec<Check> {
    vec![
        Check::new(
            "catalogue::public_contract::describe_is_the_pinned_fixture",
            describe_is_the_fixture,
        )
        .in_process_only(PUBLIC_CONTRACT),
        Check::new(
            "catalogue::public_contract::profile_names_and_schemas_are_describe",
            profile_is_describe,
        )
        .in_process_only(PUBLIC_CONTRACT),
        Check::new(
            "catalogue::no_side_effects::catalogue_reads_need_no_runtime",
            catalogue_reads_need_no_runtime,
        )
        .in_process_only(NO_SIDE_EFFECTS),
    ]
}

/// The checks that start their own fake Incus and reference host (main job only).
pub(crate) fn live_checks() -> Vec<Check> {
    vec![
        Check::new(
            "catalogue::no_side_effects::catalogue_reads_send_no_request",
            || block_on(catalogue_reads_send_no_request()),
        )
        .in_process_only(NO_SIDE_EFFECTS),
        Check::new(
            "catalogue::synchronous::waited_mutation_is_over_when_run_returns",
            || block_on(waited_mutation_is_over()),
        )
        .in_process_only(SYNCHRONOUS),
        Check::new(
            "catalogue::synchronous::exec_is_over_when_run_returns",
            || block_on(exec_is_over()),
        )
        .in_process_only(SYNCHRONOUS),
    ]
}

fn verdict(problems: Vec<String>) -> Result<(), String> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// `describe()` of every catalogued operation: exported ones through `describe`, the others
/// through their unavailable entry.
fn described() -> Vec<(String, Value)> {
    let exported = incus_operations::all()
        .into_iter()
        .map(|d| (d.name().to_owned(), incus_operations::describe(d.name())));
    let others = incus_operations::not_exported()
        .into_iter()
        .filter_map(|u| {
            u.descriptor()
                .map(|d| (d.name().to_owned(), Some(d.describe())))
        });
    exported
        .chain(others)
        .map(|(name, value)| (name, value.unwrap_or(Value::Null)))
        .collect()
}

fn pinned_fixture() -> Result<Vec<Value>, String> {
    let path = "core/tests/fixtures/operations-catalogue.json";
    serde_json::from_str(embedded::read(path)?)
        .map_err(|e| format!("{path} is not a JSON array: {e}"))
}

fn describe_is_the_fixture() -> Result<(), String> {
    let fixture = pinned_fixture()?;
    let described = described();
    let mut problems = Vec::new();
    let pinned: BTreeSet<&str> = fixture.iter().filter_map(|e| e["name"].as_str()).collect();
    let live: BTreeSet<&str> = described.iter().map(|(n, _)| n.as_str()).collect();
    for name in live.symmetric_difference(&pinned) {
        problems.push(format!(
            "{name} is in only one of describe() and the pinned fixture"
        ));
    }
    for (name, value) in &described {
        match fixture.iter().find(|e| e["name"] == name.as_str()) {
            Some(entry) if entry == value => {}
            Some(_) => problems.push(format!("describe({name}) differs from the pinned fixture")),
            None => {}
        }
    }
    verdict(problems)
}

/// The schema without its `$schema` keyword, as the profile publishes it.
fn without_dialect(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
    }
    schema
}

fn profile_is_describe() -> Result<(), String> {
    let document = incus_operations::tama_document();
    let paths = document["paths"].as_object().cloned().unwrap_or_default();
    let exported: BTreeSet<String> = incus_operations::all()
        .iter()
        .map(|d| format!("/operations/{}", d.name()))
        .collect();
    let published: BTreeSet<String> = paths.keys().cloned().collect();
    let mut problems: Vec<String> = exported
        .symmetric_difference(&published)
        .map(|path| format!("{path} is in only one of all() and the profile export"))
        .collect();
    for descriptor in incus_operations::all() {
        let name = descriptor.name();
        let Some(described) = incus_operations::describe(name) else {
            problems.push(format!(
                "describe({name}) is empty for an exported operation"
            ));
            continue;
        };
        let post = &paths
            .get(&format!("/operations/{name}"))
            .cloned()
            .unwrap_or_default()["post"];
        let request = &post["requestBody"]["content"]["application/json"]["schema"];
        let expectations = [
            ("operationId", &post["operationId"], json!(name)),
            ("summary", &post["summary"], described["title"].clone()),
            (
                "description",
                &post["description"],
                described["description"].clone(),
            ),
            (
                "x-tama-scopes",
                &post["x-tama-scopes"],
                json!([described["scope"]]),
            ),
            (
                "request schema",
                request,
                without_dialect(&described["input_schema"]),
            ),
        ];
        for (what, published, expected) in expectations {
            if *published != expected {
                problems.push(format!("{name}: the profile's {what} is not describe()'s"));
            }
        }
    }
    verdict(problems)
}

/// Reading the catalogue outside any async runtime works: it spawns no task and opens nothing
/// (a spawn or a socket on a runtime would panic here).
fn catalogue_reads_need_no_runtime() -> Result<(), String> {
    if tokio::runtime::Handle::try_current().is_ok() {
        return Err("the trial unexpectedly runs inside a runtime".into());
    }
    let exported = read_the_catalogue();
    if exported == 0 {
        return Err("all() exports nothing, so the reads prove nothing".into());
    }
    Ok(())
}

/// Every public catalogue read once; returns how many operations are exported.
fn read_the_catalogue() -> usize {
    let all = incus_operations::all();
    for descriptor in &all {
        let _ = incus_operations::fetch(descriptor.name());
        let _ = incus_operations::describe(descriptor.name());
    }
    let _ = incus_operations::not_exported();
    let _ = incus_operations::tama_document();
    let _ = incus_operations::tama_document_all();
    all.len()
}

async fn start(faults: Vec<Value>) -> Result<(FakeIncus, ReferenceHost), String> {
    let fake = fake::start(&FakeSetup { seed: None, faults }).await?;
    let host = ReferenceHost::new(Connection::unix(fake.unix_socket()));
    Ok((fake, host))
}

async fn run(host: &ReferenceHost, name: &str, scopes: &[Scope], input: Value) -> Value {
    incus_operations::run(name, input, RunOptions::new(host, &(), scopes.to_vec())).await
}

/// The fake receives nothing more for a while after `what` returned (the runtime keeps running
/// meanwhile, so a task left behind would get to send its request).
async fn stays_quiet(fake: &FakeIncus, what: &str) -> Result<(), String> {
    let settled = fake.journal_page(0).last_seq;
    let until = Instant::now() + QUIET;
    while Instant::now() < until {
        tokio::time::sleep(LOOK).await;
        let page = fake.journal_page(settled);
        if page.last_seq != settled {
            let late: Vec<String> = page
                .entries
                .iter()
                .map(|e| format!("{} {}", e.method, e.path))
                .collect();
            return Err(format!(
                "after {what} returned, the fake still received {} request(s): {}",
                page.last_seq - settled,
                late.join(", ")
            ));
        }
    }
    Ok(())
}

async fn catalogue_reads_send_no_request() -> Result<(), String> {
    let (fake, host) = start(Vec::new()).await?;
    let nothing = fake.expect("*", "/**", 0);
    read_the_catalogue();
    let refused = run(
        &host,
        "incus_instance_delete",
        &[Scope::Read],
        json!({"name": "web"}),
    )
    .await;
    if refused.pointer("/error/kind") != Some(&json!("scope_missing")) {
        return Err(format!(
            "a delete with only incus.read was not refused: {refused}"
        ));
    }
    stays_quiet(&fake, "the catalogue reads and a refused run()").await?;
    nothing
        .finish()
        .map_err(|e| format!("the catalogue reads and a refused run() sent requests: {e}"))
}

fn completed(what: &str, result: &Value) -> Result<(), String> {
    if result.get("status") == Some(&json!("completed")) {
        Ok(())
    } else {
        Err(format!("{what} did not complete: {result}"))
    }
}

async fn waited_mutation_is_over() -> Result<(), String> {
    let slow = json!({"method": "POST", "path": "/1.0/instances", "which": {"nth": 1},
        "fault": {"kind": "operation_duration", "ms": 1500}});
    let (fake, host) = start(vec![slow]).await?;
    let create =
        json!({"name": "web", "source": {"type": "image", "alias": "busybox"}, "wait_seconds": 30});
    let started = Instant::now();
    let result = run(&host, "incus_instance_create", &[Scope::Write], create).await;
    completed("the create", &result)?;
    if started.elapsed() < Duration::from_millis(1500) {
        return Err("run() returned before the 1.5 s operation could have finished".into());
    }
    stays_quiet(&fake, "the waited create").await
}

async fn exec_is_over() -> Result<(), String> {
    let (fake, host) = start(Vec::new()).await?;
    let create = json!({"name": "web", "source": {"type": "image", "alias": "busybox"}});
    completed(
        "the create",
        &run(&host, "incus_instance_create", &[Scope::Write], create).await,
    )?;
    let start = json!({"name": "web", "action": "start"});
    completed(
        "the start",
        &run(&host, "incus_instance_state_update", &[Scope::Write], start).await,
    )?;
    let exec = json!({"name": "web", "command": ["true"]});
    let result = run(&host, "incus_instance_exec", &[Scope::Exec], exec).await;
    completed("the exec", &result)?;
    if result.get("exit_code") != Some(&json!(0)) {
        return Err(format!("the exec reported no exit code 0: {result}"));
    }
    stays_quiet(&fake, "the exec").await
}
