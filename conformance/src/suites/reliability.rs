//! `RELIABILITY.md`: what the core and the fake promise when things go wrong, measured by running
//! them, and the test that fails when the document no longer says what the run measures.
//!
//! Every figure in the document is a verdict or a count that does not depend on timing: the run
//! itself fails when a promise breaks (a mutation sent twice, a denied call that reached the
//! backend, a crash, a result off its schema, a lost update), so the document only ever shows
//! promises that held. The normal test run is the short version; `RELIABILITY_LONG=1` runs the
//! bad-input and load sections with many more cases (and does not rewrite the document).

use std::fmt::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use incus_operations::{run, Connection, Endpoint, RunOptions, Scope};
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{json, Value};

use super::arbitrary_input::{self, REFUSED_BEFORE_BACKEND};
use super::host_target::scripted;
use super::host_target::{HostFactory, HostTargets};
use super::mutation_faults::{self, Expected, MUTATIONS, TRANSPORT_FAULTS};
use super::session::Session;
use super::spec_table::{Confirm, OPERATIONS};
use crate::scenario::fake::Listener;
use crate::scenario::format::FakeSetup;
use crate::scenario::host::{
    Answer, BindingBehaviour, CallbackBehaviour, ConnectionLimits, HostBehaviour,
};
use crate::scenario::target::TargetFactory;
use crate::ReferenceHost;

/// Every scope: the reliability runs grant everything and test the refusals explicitly.
const ALL_SCOPES: [Scope; 4] = [Scope::Read, Scope::Write, Scope::Exec, Scope::Delete];

/// Environment variable that selects the long run of the document's test.
#[cfg(test)]
const LONG_VARIABLE: &str = "RELIABILITY_LONG";

/// How many cases the sections with a size run.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Size {
    /// Arbitrary inputs per operation.
    bad_inputs: u32,
    /// Concurrent clients of the load section.
    clients: usize,
    /// Updates per client.
    updates: usize,
}

impl Size {
    /// The size of the normal test run, which the document records.
    pub(crate) const SHORT: Size = Size {
        bad_inputs: 32,
        clients: 16,
        updates: 25,
    };

    /// The opt-in long run.
    pub(crate) const LONG: Size = Size {
        bad_inputs: 1000,
        clients: 16,
        updates: 1000,
    };
}

/// Runs every section and renders the document; `Err` lists every promise that broke.
pub(crate) fn markdown(size: Size) -> Result<String, String> {
    let mut out = String::from(HEADER);
    let mut broken = Vec::new();
    for section in [fault_matrix, denied_before_backend, tls_refusals] {
        match section() {
            Ok(text) => out.push_str(&text),
            Err(problems) => broken.push(problems),
        }
    }
    for section in [bad_input, load] {
        match section(size) {
            Ok(text) => out.push_str(&text),
            Err(problems) => broken.push(problems),
        }
    }
    if broken.is_empty() {
        Ok(out)
    } else {
        Err(broken.join("\n\n"))
    }
}

const HEADER: &str = "# Reliability

What the operation core and the fake Incus promise when things go wrong, and the runs that show it.
This file is generated: `BLESS=1 cargo test -p incus-conformance --lib reliability_md` rewrites it, and
the same test without `BLESS` fails when the file no longer says what the run measures, or when any
promise below breaks. `RELIABILITY_LONG=1 cargo test -p incus-conformance --lib reliability_md` runs the
bad-input and load sections with many more cases (it checks the same promises and leaves the file alone);
`cargo run -q -p incus-conformance -- reliability [--long]` prints the document from an installed harness.
Every run starts its own fake Incus (`fake-incus`), and every call goes through `run()` and the reference
host, over the fake's Unix socket or its mutual-TLS HTTPS listener.

";

/// Each mutation under each fault, on both listeners: the status observed and how many times the
/// mutating request reached the backend.
fn fault_matrix() -> Result<String, String> {
    let mut out = String::from(
        "## Fault matrix

One fresh fake per cell: the resource is prepared through the operations, one fault rule is installed
on the mutating request (or on the operation wait that follows its acceptance), then the mutation runs.
`read` rows make the operation fail and fault the read of the operation that follows the wait's failure
report: the wait observed the failure, so they are `failed` whatever the read does. `sent` counts the
mutating (or exec) request in the fake's journal: every cell is sent exactly once, nothing is ever resent.
`uncertain`: the request may have been applied but no answer was decoded; `running`: the outcome was not
observed within the wait; `failed`: the operation's failure was observed; `completed`: the command's own
exit was observed (exec rows: the operation may fail without an exit code, finish only while a wait is in
flight, or its first wait may break, which is asked again and never a reason to kill); `native N`: Incus
refused it with HTTP status N.

| mutation | fault | on | Unix socket | HTTPS |
|---|---|---|---|---|
",
    );
    let factories = [
        listener_factory(Listener::Unix),
        listener_factory(Listener::Https),
    ];
    let mut problems = Vec::new();
    for mutation in MUTATIONS {
        for (rule, expected) in mutation_faults::faults(*mutation) {
            let cells = per_listener(&factories, &mut problems, |factory| {
                let (called, sent) = mutation_faults::observe(factory, *mutation, &rule)?;
                mutation_faults::verdict(&called, sent, &rule, expected)?;
                Ok(format!("{}, sent {sent}", outcome(&called.result)))
            });
            let on = if rule["path"] == json!(mutation.path) {
                "request"
            } else {
                "wait"
            };
            let _ = writeln!(
                out,
                "| `{}` | {} | {on} | {} | {} |",
                mutation.operation,
                fault_label(&rule["fault"]),
                cells[0],
                cells[1]
            );
        }
    }
    for mutation in MUTATIONS.iter().filter(|m| m.async_operation) {
        for rules in mutation_faults::read_faults(*mutation) {
            let cells = per_listener(&factories, &mut problems, |factory| {
                let session = Session::start(factory, &FakeSetup::default())?;
                let (called, sent) = mutation_faults::observe_on(&session, *mutation, &rules)?;
                mutation_faults::verdict(&called, sent, &rules[1], Expected::Failed)?;
                if called.result["wait_error"] != json!(mutation_faults::INJECTED) {
                    return Err(called.failure("expected the failure as wait_error"));
                }
                Ok(format!("{}, sent {sent}", outcome(&called.result)))
            });
            let _ = writeln!(
                out,
                "| `{}` | operation_fail, then {} | read | {} | {} |",
                mutation.operation,
                fault_label(&rules[1]["fault"]),
                cells[0],
                cells[1]
            );
        }
    }
    for (rule, expected) in mutation_faults::exec_observed_faults() {
        let cells = per_listener(&factories, &mut problems, |factory| {
            let session = Session::start(factory, &FakeSetup::default())?;
            super::exec_output::start_instance(&session)?;
            let (called, sent) = mutation_faults::exec_observed_case(&session, &rule, expected)?;
            Ok(format!("{}, sent {sent}", outcome(&called.result)))
        });
        let on = if rule["path"] == json!("/1.0/instances/web/exec") {
            "request"
        } else {
            "wait"
        };
        let _ = writeln!(
            out,
            "| `incus_instance_exec` | {} | {on} | {} | {} |",
            fault_label(&rule["fault"]),
            cells[0],
            cells[1]
        );
    }
    for kind in TRANSPORT_FAULTS {
        let cells = per_listener(&factories, &mut problems, |factory| {
            let session = Session::start(factory, &FakeSetup::default())?;
            super::exec_output::start_instance(&session)?;
            let (called, sent) = mutation_faults::exec_case(&session, kind)?;
            mutation_faults::exec_verdict(&called, sent, kind)?;
            Ok(format!("{}, sent {sent}", outcome(&called.result)))
        });
        let _ = writeln!(
            out,
            "| `incus_instance_exec` | {kind} | request | {} | {} |",
            cells[0], cells[1]
        );
    }
    out.push('\n');
    finish(out, problems)
}

/// Targets through the reference host over `listener`.
fn listener_factory(listener: Listener) -> Arc<dyn TargetFactory> {
    let hosts: HostFactory<ReferenceHost> =
        Arc::new(|connection| (ReferenceHost::new(connection), ()));
    Arc::new(HostTargets::new(hosts).listener(listener))
}

/// A result in a few words: its status, or its error kind (with the HTTP status of a native one).
fn outcome(result: &Value) -> String {
    if let Some(kind) = result.pointer("/error/kind").and_then(Value::as_str) {
        return match result.pointer("/error/http_status").and_then(Value::as_u64) {
            Some(status) => format!("{kind} {status}"),
            None => kind.to_owned(),
        };
    }
    result
        .get("status")
        .and_then(Value::as_str)
        .unwrap_or("completed")
        .to_owned()
}

/// A fault rule's fault, as its kind and its parameters.
fn fault_label(fault: &Value) -> String {
    let kind = fault["kind"].as_str().unwrap_or_default();
    match fault.get("status") {
        Some(status) => format!("{kind} {status}"),
        None => kind.to_owned(),
    }
}

/// Every refusal that the checks before the backend make, for every operation: the error kind
/// and the number of requests the fake received (always 0, not even discovery).
fn denied_before_backend() -> Result<String, String> {
    let mut out = String::from(
        "## Denied before the backend

Every operation, refused at each check that comes before the native calls. The number is the count of
requests the fake Incus received during the call: a denied call never reaches the backend, not even for
discovery. `-`: the check does not apply to that operation.

| operation | no scope | invalid input | no confirm | confirm \"yes\" | restricted | binding denied | unauthorized |
|---|---|---|---|---|---|---|---|
",
    );
    let reference = listener_factory(Listener::Unix);
    let deny = |binding, authorize| {
        let host = HostBehaviour {
            binding: BindingBehaviour {
                answer: binding,
                project: None,
            },
            authorize: CallbackBehaviour { answer: authorize },
            callback_timeout_ms: Some(300),
            ..HostBehaviour::default()
        };
        scripted(&reference, host, ConnectionLimits::default()).0
    };
    let binding_denied = deny(Answer::Deny, Answer::Allow);
    let unauthorized = deny(Answer::Allow, Answer::Deny);
    let mut problems = Vec::new();
    for op in OPERATIONS {
        let scopes = [op.scope.to_owned()];
        let mut invalid = op.confirmed_input();
        invalid["socket"] = json!("/var/lib/incus/unix.socket");
        let mut yes = op.minimal_input();
        yes["confirm"] = json!("yes");
        let restricted = matches!(op.name, "incus_instance_create" | "incus_instance_update");
        let mut privileged = op.confirmed_input();
        privileged["config"] = json!({"security.privileged": "true"});
        let destructive = op.confirm != Confirm::None;
        let cases: [Refusal<'_>; 7] = [
            (Some(&reference), &[], op.confirmed_input(), "scope_missing"),
            (Some(&reference), &scopes, invalid, "invalid_input"),
            (
                destructive.then_some(&reference),
                &scopes,
                op.minimal_input(),
                "confirmation_required",
            ),
            (
                destructive.then_some(&reference),
                &scopes,
                yes,
                "confirmation_mismatch",
            ),
            (
                restricted.then_some(&reference),
                &scopes,
                privileged,
                "restricted_input",
            ),
            (
                Some(&binding_denied),
                &scopes,
                op.confirmed_input(),
                "binding_denied",
            ),
            (
                Some(&unauthorized),
                &scopes,
                op.confirmed_input(),
                "unauthorized",
            ),
        ];
        let mut cells = Vec::new();
        for (factory, scopes, input, kind) in cases {
            let Some(factory) = factory else {
                cells.push("-".to_owned());
                continue;
            };
            let cell = Session::start(factory, &FakeSetup::default()).and_then(|session| {
                let called = session.call(op.name, scopes, input);
                called.refused_before_backend(kind)?;
                Ok(format!("{}", called.requests.as_ref().map_or(0, Vec::len)))
            });
            let cell = cell.map_err(|problem| format!("{}: {problem}", op.name));
            cells.push(or_broken(cell, &mut problems));
        }
        let _ = writeln!(out, "| `{}` | {} |", op.name, cells.join(" | "));
    }
    out.push('\n');
    finish(out, problems)
}

/// One refusal case: the targets (`None`: the check does not apply), scopes, input, error kind.
type Refusal<'a> = (
    Option<&'a Arc<dyn TargetFactory>>,
    &'a [String],
    Value,
    &'static str,
);

/// Connections the fake's HTTPS listener must refuse, and what the core reports.
fn tls_refusals() -> Result<String, String> {
    let mut out = String::from(
        "## TLS refusals

The fake's HTTPS listener with mutual TLS, and the core's client with the server certificate pinned.
`trusted requests` counts the requests the fake handled as coming from a trusted client, and
`applied` the requests it applied: a refused identity changes nothing.

| client | operation | result | trusted requests | applied |
|---|---|---|---|---|
",
    );
    let mut problems = Vec::new();
    let cases: [(&str, Identity, &str, &str); 6] = [
        (
            "a certificate the server does not trust",
            Identity::Untrusted,
            "incus_instance_list",
            "discovery_failed",
        ),
        (
            "a certificate the server does not trust",
            Identity::Untrusted,
            "incus_instance_create",
            "discovery_failed",
        ),
        (
            "a trusted certificate that has expired",
            Identity::Expired,
            "incus_instance_create",
            "discovery_failed",
        ),
        (
            "a trusted certificate not valid yet",
            Identity::NotYetValid,
            "incus_instance_create",
            "discovery_failed",
        ),
        (
            "pins another server certificate",
            Identity::WrongPin,
            "incus_instance_list",
            "discovery_failed",
        ),
        (
            "pins another server certificate",
            Identity::WrongPin,
            "incus_instance_create",
            "discovery_failed",
        ),
    ];
    for (client, identity, operation, expected) in cases {
        let cell = super::session::block_on_value(tls_case(identity, operation));
        let row = match cell {
            Ok((result, trusted, applied)) => {
                let seen = outcome(&result);
                if !seen.starts_with(expected) || trusted != 0 || applied != 0 {
                    problems.push(format!(
                        "{client}, {operation}: expected {expected} with nothing trusted or applied, got {seen} ({trusted} trusted, {applied} applied): {result}"
                    ));
                }
                format!("{seen} | {trusted} | {applied}")
            }
            Err(problem) => {
                problems.push(format!("{client}, {operation}: {problem}"));
                "BROKEN | | ".to_owned()
            }
        };
        let _ = writeln!(out, "| {client} | `{operation}` | {row} |");
    }
    out.push('\n');
    finish(out, problems)
}

/// A client identity for [`tls_refusals`].
#[derive(Debug, Clone, Copy)]
enum Identity {
    Untrusted,
    Expired,
    NotYetValid,
    WrongPin,
}

/// One call over HTTPS as `identity`: the result, the requests handled as trusted and the
/// requests applied.
async fn tls_case(identity: Identity, operation: &str) -> Result<(Value, usize, usize), String> {
    let fake = crate::scenario::fake::builder()
        .https(true)
        .start()
        .await
        .map_err(|e| format!("the fake Incus did not start: {e}"))?;
    let url = fake.https_url().ok_or("no HTTPS listener")?;
    let day = time::Duration::days(1);
    let now = time::OffsetDateTime::now_utc();
    let (cert, key, server) = match identity {
        Identity::Untrusted => {
            let (cert, key) = certificate(now - day, now + day)?;
            (cert, key, fake.server_cert_pem())
        }
        Identity::Expired | Identity::NotYetValid => {
            let (from, to) = match identity {
                Identity::Expired => (now - day * 30, now - day),
                _ => (now + day, now + day * 30),
            };
            let (cert, key) = certificate(from, to)?;
            fake.trust_certificate(&cert)
                .map_err(|e| format!("the fake refused to trust the certificate: {e}"))?;
            (cert, key, fake.server_cert_pem())
        }
        Identity::WrongPin => {
            let (other, _) = certificate(now - day, now + day)?;
            (fake.client_cert_pem(), fake.client_key_pem(), other)
        }
    };
    let connection = Connection::builder(Endpoint::https(url, cert, key, server))
        .timeout(Duration::from_secs(5))
        .build()
        .map_err(|e| format!("cannot build the connection: {e}"))?;
    let host = ReferenceHost::new(connection);
    let input = match operation {
        "incus_instance_create" => {
            json!({"name": "web", "source": {"type": "image", "alias": "busybox"}})
        }
        _ => json!({}),
    };
    let result = run(operation, input, RunOptions::new(&host, &(), ALL_SCOPES)).await;
    let journal = fake.journal();
    let trusted = journal.iter().filter(|entry| entry.trusted).count();
    let applied = journal.iter().filter(|entry| entry.applied).count();
    Ok((result, trusted, applied))
}

/// A self-signed client certificate valid from `from` to `to`, and its key (PEM).
fn certificate(
    from: time::OffsetDateTime,
    to: time::OffsetDateTime,
) -> Result<(String, String), String> {
    let key = rcgen::KeyPair::generate().map_err(|e| e.to_string())?;
    let mut params = rcgen::CertificateParams::new(vec!["reliability-client".to_owned()])
        .map_err(|e| e.to_string())?;
    params.not_before = from;
    params.not_after = to;
    let cert = params.self_signed(&key).map_err(|e| e.to_string())?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Arbitrary JSON input for every operation: never a crash, always a result on the output
/// schema, and refused input never reaches the backend.
fn bad_input(size: Size) -> Result<String, String> {
    let factory = listener_factory(Listener::Unix);
    let mut problems = Vec::new();
    let mut cases = 0u64;
    let mut refused = 0u64;
    let mut crashes = 0u64;
    let mut off_schema = 0u64;
    let mut reached = 0u64;
    let seed = super::property::base_seed();
    for op in OPERATIONS {
        let session = match Session::start(&factory, &FakeSetup::default()) {
            Ok(session) => session,
            Err(problem) => {
                problems.push(problem);
                continue;
            }
        };
        let config = Config {
            cases: size.bad_inputs,
            failure_persistence: None,
            ..Config::default()
        };
        let rng = TestRng::from_seed(
            RngAlgorithm::ChaCha,
            &super::property::trial_seed(seed, op.name),
        );
        let mut runner = TestRunner::new_with_rng(config, rng);
        let strategy = arbitrary_input::input();
        let scopes = [op.scope.to_owned()];
        for _ in 0..size.bad_inputs {
            let Ok(tree) = strategy.new_tree(&mut runner) else {
                continue;
            };
            let input = tree.current();
            cases += 1;
            let called = catch_unwind(AssertUnwindSafe(|| {
                session.call(op.name, &scopes, input.clone())
            }));
            let Ok(called) = called else {
                crashes += 1;
                problems.push(format!("{}: the call panicked on input {input}", op.name));
                continue;
            };
            if let Err(problem) = called.schema_valid() {
                off_schema += 1;
                problems.push(problem);
            }
            if called
                .error_kind()
                .is_some_and(|kind| REFUSED_BEFORE_BACKEND.contains(&kind))
            {
                refused += 1;
                if let Err(problem) = called.no_backend_request() {
                    reached += 1;
                    problems.push(problem);
                }
            }
        }
    }
    let out = format!(
        "## Bad input

Arbitrary JSON (mostly objects with plausible keys and values of every type, sometimes any JSON value)
as the input of every operation, through `run()` over the fake's Unix socket, with a fixed seed
(`INCUS_CONFORMANCE_SEED` changes it).

| operations | cases | refused before the backend | crashes | results off the output schema | refused inputs that reached the backend |
|---|---|---|---|---|---|
| {} | {cases} | {} | {crashes} | {off_schema} | {reached} |

",
        OPERATIONS.len(),
        refused,
    );
    finish(out, problems)
}

/// Concurrent clients updating instances through one fake: no error, no lost update, and the
/// memory of the process does not grow with the requests.
fn load(size: Size) -> Result<String, String> {
    let mut problems = Vec::new();
    let (rss_before, rss_after, errors, lost) = super::session::block_on_value(load_run(size))?;
    let growth = rss_after.saturating_sub(rss_before);
    let bound = 32 * 1024 * 1024;
    if errors != 0 {
        problems.push(format!("{errors} updates under load did not complete"));
    }
    if lost != 0 {
        problems.push(format!("{lost} completed updates were lost"));
    }
    if growth > bound {
        problems.push(format!(
            "the process grew by {growth} bytes of RSS under load (bound {bound})"
        ));
    }
    let out = format!(
        "## Load

{clients} concurrent clients, each updating its own instance {updates} times through `run()`
(`incus_instance_update`, a config key per update) on one fake over its Unix socket. A lost update is a
completed update whose value is not in the instance's config afterwards. The resident memory of the
whole process (core, fake and journal) is read before and after.

| clients | updates | errors | lost updates | RSS growth under 32 MiB |
|---|---|---|---|---|
| {clients} | {total} | {errors} | {lost} | {holds} |

",
        clients = size.clients,
        updates = size.updates,
        total = size.clients * size.updates,
        holds = if growth <= bound { "holds" } else { "BROKEN" },
    );
    finish(out, problems)
}

/// The load run: RSS before and after, errors, lost updates.
async fn load_run(size: Size) -> Result<(u64, u64, usize, usize), String> {
    let fake = crate::scenario::fake::builder()
        .start()
        .await
        .map_err(|e| format!("the fake Incus did not start: {e}"))?;
    let host = Arc::new(ReferenceHost::new(Connection::unix(fake.unix_socket())));
    for client in 0..size.clients {
        let input = json!({"name": format!("load-{client}"), "source": {"type": "image", "alias": "busybox"}});
        let result = run(
            "incus_instance_create",
            input,
            RunOptions::new(host.as_ref(), &(), ALL_SCOPES),
        )
        .await;
        if result.get("status") != Some(&json!("completed")) {
            return Err(format!("creating the load instances failed: {result}"));
        }
    }
    let rss_before = resident_bytes();
    let mut tasks = tokio::task::JoinSet::new();
    for client in 0..size.clients {
        let host = Arc::clone(&host);
        let updates = size.updates;
        tasks.spawn(async move {
            let mut errors = 0;
            for update in 0..updates {
                let input = json!({
                    "name": format!("load-{client}"),
                    "config": {format!("user.update-{}", update % 8): update.to_string()},
                });
                let result = run(
                    "incus_instance_update",
                    input,
                    RunOptions::new(host.as_ref(), &(), ALL_SCOPES),
                )
                .await;
                if result.get("status") != Some(&json!("completed")) {
                    errors += 1;
                }
            }
            errors
        });
    }
    let mut errors = 0;
    while let Some(joined) = tasks.join_next().await {
        errors += joined.map_err(|e| format!("a load client panicked: {e}"))?;
    }
    let rss_after = resident_bytes();
    let state = fake.dump_state();
    let mut lost = 0;
    for client in 0..size.clients {
        let name = format!("load-{client}");
        let config = state["instances"]
            .as_array()
            .and_then(|all| all.iter().find(|i| i["name"] == json!(name)))
            .map(|i| i["config"].clone())
            .unwrap_or_default();
        for key in 0..8.min(size.updates) {
            let last = (0..size.updates).rev().find(|u| u % 8 == key).unwrap_or(0);
            if config[format!("user.update-{key}")] != json!(last.to_string()) {
                lost += 1;
            }
        }
    }
    Ok((rss_before, rss_after, errors, lost))
}

/// The resident set size of this process in bytes (0 where `/proc` does not say).
fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|statm| statm.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096)
}

/// The section, or every problem found while measuring it.
/// One cell per listener: what `cell` reports on each.
fn per_listener(
    factories: &[Arc<dyn TargetFactory>],
    problems: &mut Vec<String>,
    cell: impl Fn(&Arc<dyn TargetFactory>) -> Result<String, String>,
) -> Vec<String> {
    factories
        .iter()
        .map(|factory| or_broken(cell(factory), problems))
        .collect()
}

/// A cell's text, or `BROKEN` with its problem recorded.
fn or_broken(cell: Result<String, String>, problems: &mut Vec<String>) -> String {
    cell.unwrap_or_else(|problem| {
        problems.push(problem);
        "BROKEN".to_owned()
    })
}

fn finish(out: String, problems: Vec<String>) -> Result<String, String> {
    if problems.is_empty() {
        Ok(out)
    } else {
        Err(problems.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (`RELIABILITY.md`); a promise of the harness
    //! seen from outside (its command line, certification, the wire) goes in `tests/harness`.

    use super::*;

    #[test]
    fn reliability_md_is_up_to_date_and_every_promise_holds() {
        let long = std::env::var_os(LONG_VARIABLE).is_some();
        let text =
            crate::reliability_markdown(long).unwrap_or_else(|problems| panic!("{problems}"));
        if long {
            println!("{text}");
            return;
        }
        super::super::generated_file_is_current("../RELIABILITY.md", &text, "reliability_md");
    }
}
