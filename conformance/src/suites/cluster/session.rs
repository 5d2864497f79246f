//! One fake cluster for one trial, and the core through the reference host on each member's own
//! Unix socket: a call names the member it goes through.

use std::sync::Arc;
use std::time::Duration;

use fake_incus::{ClusterTimings, FakeIncus, JournalEntry};
use incus_operations::Connection;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::scenario::format::Scenario;
use crate::scenario::run::{run_in, Context, Transcript};
use crate::scenario::target::{HostTarget, Request, Target, TargetFactory};
use crate::suites::session::Called;
use crate::ReferenceHost;

/// The members of every trial's cluster, in the order the fake is given them.
pub(super) const MEMBERS: [&str; 3] = ["m1", "m2", "m3"];

/// How long a trial waits for the moment it acts on (a request in flight) before it fails.
const TRIGGER_BOUND: Duration = Duration::from_secs(5);

/// How often the journal is read while waiting for that moment.
const TRIGGER_POLL: Duration = Duration::from_millis(2);

/// A started fake cluster, the runtime it lives on, and one host per member.
pub(super) struct Cluster {
    runtime: tokio::runtime::Runtime,
    fake: FakeIncus,
    hosts: Vec<(String, Box<dyn Target>)>,
}

/// One call through one member: what the core returned and every request the cluster received
/// meanwhile, with the member each came through.
#[derive(Debug, Clone)]
pub(super) struct Through {
    /// The call, as the other suites see one.
    pub(super) called: Called,
    /// The journal's entries of the call.
    pub(super) entries: Vec<JournalEntry>,
}

impl Cluster {
    /// Starts a cluster of [`MEMBERS`] with the fast timings, and the core on each member.
    pub(super) fn start(factory: &Arc<dyn TargetFactory>) -> Result<Self, String> {
        Self::start_with(factory, |builder| builder)
    }

    /// As [`Cluster::start`], with more set-up of the fake (seed state, rules).
    pub(super) fn start_with(
        factory: &Arc<dyn TargetFactory>,
        setup: impl FnOnce(fake_incus::FakeIncusBuilder) -> fake_incus::FakeIncusBuilder,
    ) -> Result<Self, String> {
        let runtime = crate::suites::session::trial_runtime(factory.virtual_time())?;
        let builder = crate::scenario::fake::builder()
            .cluster(MEMBERS)
            .cluster_timings(ClusterTimings::fast());
        let fake = runtime
            .block_on(setup(builder).start())
            .map_err(|e| format!("the fake cluster did not start: {e}"))?;
        let members = fake.members();
        let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
        if names != MEMBERS {
            return Err(format!(
                "the fake cluster has members {names:?}, expected {MEMBERS:?}"
            ));
        }
        let hosts = members
            .iter()
            .map(|member| {
                let target = factory.bound_to(&member.unix_socket).unwrap_or_else(|| {
                    let host = ReferenceHost::new(Connection::unix(&member.unix_socket));
                    Box::new(HostTarget::new(host, ()))
                });
                (member.name.clone(), target)
            })
            .collect();
        Ok(Self {
            runtime,
            fake,
            hosts,
        })
    }

    /// The fake itself (journal, member faults).
    pub(super) fn fake(&self) -> &FakeIncus {
        &self.fake
    }

    fn host(&self, member: &str) -> &dyn Target {
        self.hosts
            .iter()
            .find(|(name, _)| name == member)
            .map(|(_, host)| host.as_ref())
            .unwrap_or_else(|| self.hosts[0].1.as_ref())
    }

    fn last_seq(&self) -> u64 {
        self.fake.journal_page(u64::MAX).last_seq
    }

    /// Runs `operation` through `member` as a caller holding `scopes`.
    pub(super) fn call(
        &self,
        member: &str,
        operation: &str,
        scopes: &[&str],
        input: Value,
    ) -> Through {
        let before = self.last_seq();
        let scopes: Vec<String> = scopes.iter().map(|s| (*s).to_owned()).collect();
        let result =
            self.runtime
                .block_on(self.host(member).call(operation, &scopes, input.clone()));
        self.through(before, operation, scopes, input, result)
    }

    /// Runs `operation` through `member` and, as soon as `trigger` holds for the journal's
    /// entries of the call, does `action` to the cluster while the call goes on. Fails when
    /// that moment never comes within a bound, or the action fails.
    pub(super) fn call_and_act(
        &self,
        member: &str,
        operation: &str,
        scopes: &[&str],
        input: Value,
        trigger: impl Fn(&[JournalEntry]) -> bool,
        action: impl FnOnce(&FakeIncus) -> Result<(), String>,
    ) -> Result<Through, String> {
        let before = self.last_seq();
        let scopes: Vec<String> = scopes.iter().map(|s| (*s).to_owned()).collect();
        let call = self.host(member).call(operation, &scopes, input.clone());
        let watch = async {
            let until = Instant::now() + TRIGGER_BOUND;
            // The moment must hold on two polls in a row: the call runs on this same thread,
            // so in between it gets to read the answers the journal already shows as sent.
            let mut seen = false;
            loop {
                let page = self.fake.journal_page(before);
                if trigger(&page.entries) {
                    if seen {
                        return action(&self.fake);
                    }
                    seen = true;
                } else {
                    seen = false;
                }
                if Instant::now() >= until {
                    return Err(format!(
                        "the request to act on never came within {} s",
                        TRIGGER_BOUND.as_secs()
                    ));
                }
                tokio::time::sleep(TRIGGER_POLL).await;
            }
        };
        let (result, acted) = self.runtime.block_on(async { tokio::join!(call, watch) });
        let through = self.through(before, operation, scopes, input, result);
        acted.map_err(|e| through.called.failure(&e))?;
        Ok(through)
    }

    fn through(
        &self,
        before: u64,
        operation: &str,
        scopes: Vec<String>,
        input: Value,
        result: Value,
    ) -> Through {
        let entries = self.fake.journal_page(before).entries;
        let requests = entries
            .iter()
            .map(|entry| Request {
                method: entry.method.clone(),
                path: entry.path.clone(),
                query: entry.query.clone(),
                body: entry.body.clone(),
                if_match: entry.if_match.clone(),
            })
            .collect();
        let called = Called {
            operation: operation.to_owned(),
            scopes,
            input,
            result,
            requests: Some(requests),
            output_schema: self
                .hosts
                .first()
                .and_then(|(_, host)| host.output_schema(operation)),
        };
        Through { called, entries }
    }

    /// Runs `scenario` through `member` with the runner's variables of the cluster's default
    /// state (clustered: its `when: clustered` steps run); the transcript and every request the
    /// cluster received meanwhile.
    pub(super) fn run_scenario(
        &self,
        member: &str,
        scenario: &Scenario,
    ) -> (Transcript, Vec<JournalEntry>) {
        let before = self.last_seq();
        let target = self.host(member);
        let transcript = self.runtime.block_on(async {
            let context = Context::discover(target, "default", "default", "busybox").await;
            run_in(scenario, target, &context.on_cluster()).await
        });
        (transcript, self.fake.journal_page(before).entries)
    }

    /// The member's daemon dies.
    pub(super) fn down(&self, member: &str) -> Result<(), String> {
        take_down(&self.fake, member)
    }

    /// Asks the fake itself through `member`, as an operator acting beside the core would
    /// (moving an instance, evacuating a member), waiting for the operation it starts.
    pub(super) fn operator(
        &self,
        member: &str,
        request: fake_incus::Request,
    ) -> Result<Value, String> {
        let reply = self
            .runtime
            .block_on(self.fake.call(request.through(member)));
        let answer = reply.json().clone();
        let Some(operation) = answer["operation"].as_str().filter(|o| !o.is_empty()) else {
            return if reply.status() < 400 {
                Ok(answer)
            } else {
                Err(format!("the operator's request was refused: {answer}"))
            };
        };
        let path = format!(
            "{}/wait?timeout=10",
            operation.split('?').next().unwrap_or(operation)
        );
        let waited = self.runtime.block_on(
            self.fake
                .call(fake_incus::Request::get(&path).through(member)),
        );
        let outcome = waited.json().clone();
        if outcome["metadata"]["status"] != "Success" {
            return Err(format!(
                "the operator's operation did not succeed: {outcome}"
            ));
        }
        Ok(outcome)
    }
}

/// Kills `member`'s daemon in `fake` (also from inside a call, while it runs).
pub(super) fn take_down(fake: &FakeIncus, member: &str) -> Result<(), String> {
    fake.member_down(member)
        .map_err(|e| format!("member_down({member}) failed: {e}"))
}

impl Through {
    /// The call's result.
    pub(super) fn result(&self) -> &Value {
        &self.called.result
    }

    /// The `items` of a list result (none when the result has none).
    pub(super) fn items(&self) -> &[Value] {
        self.result()
            .get("items")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// A failure message about this call (with its reproducer).
    pub(super) fn failure(&self, problem: &str) -> String {
        self.called.failure(&format!(
            "{problem}\n  requests: {}",
            self.entries
                .iter()
                .map(|e| format!(
                    "{} {}{} via {}",
                    e.method,
                    e.path,
                    e.query
                        .as_deref()
                        .map(|q| format!("?{q}"))
                        .unwrap_or_default(),
                    e.member.as_deref().unwrap_or("?")
                ))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    }

    /// The requests of `method` on a path matching `pattern` during the call.
    pub(super) fn sent(&self, method: &str, pattern: &str) -> Vec<&JournalEntry> {
        self.entries
            .iter()
            .filter(|e| e.is(method, pattern))
            .collect()
    }

    /// Every request of the call came through `member`.
    pub(super) fn all_through(&self, member: &str) -> Result<(), String> {
        match self
            .entries
            .iter()
            .find(|e| e.member.as_deref() != Some(member))
        {
            Some(other) => Err(self.failure(&format!(
                "{} {} came through {:?}, not {member}",
                other.method, other.path, other.member
            ))),
            None => Ok(()),
        }
    }

    /// The result is a success (no `error`; a mutation's status `completed`) that matches the
    /// output schema.
    pub(super) fn succeeded(&self) -> Result<(), String> {
        let result = self.result();
        if result.get("error").is_some() {
            return Err(self.failure("expected a success"));
        }
        if let Some(status) = result.get("status").and_then(Value::as_str) {
            if !matches!(status, "completed" | "requested" | "already_final") {
                return Err(self.failure(&format!("expected completed, got status {status}")));
            }
        }
        self.called.schema_valid()
    }

    /// `pointer` of the result equals `value`.
    pub(super) fn expect(&self, pointer: &str, value: &Value) -> Result<(), String> {
        match self.result().pointer(pointer) {
            Some(found) if found == value => Ok(()),
            found => Err(self.failure(&format!(
                "expected {pointer} = {value}, found {}",
                found.map_or_else(|| "nothing".to_owned(), Value::to_string)
            ))),
        }
    }
}

/// The input of a call, with `wait_seconds` (mutations) added.
pub(super) fn waiting(mut input: Value, seconds: u64) -> Value {
    input["wait_seconds"] = json!(seconds);
    input
}
