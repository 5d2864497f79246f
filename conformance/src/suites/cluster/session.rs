//! One fake cluster for one trial, and the core through the reference host on each member's own
//! Unix socket: a call names the member it goes through.

use std::sync::Arc;
use std::time::Duration;

use fake_incus::{Answer, ClusterTimings, FakeIncus, JournalEntry};
use incus_operations::Connection;
use serde_json::{json, Value};
use tokio::time::Instant;

use crate::scenario::fake;
use crate::scenario::format::{Moment, Scenario, FAKE_CLUSTER_EXEC_TIMEOUT};
use crate::scenario::run::{run_in, Context, Transcript};
use crate::scenario::target::{BoxFuture, HostTarget, Members, Request, Target, TargetFactory};
use crate::suites::session::Called;
use crate::ReferenceHost;

/// The members of every trial's cluster, in the order the fake is given them.
pub(super) const MEMBERS: [&str; 3] = ["m1", "m2", "m3"];

/// How long a trial waits for the moment it acts on (a request in flight), or for a member to
/// be served again, before it fails.
const TRIGGER_BOUND: Duration = Duration::from_secs(5);

/// How often the journal is read while waiting for that moment (or a member asked for).
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

    fn through(
        &self,
        before: u64,
        operation: &str,
        scopes: Vec<String>,
        input: Value,
        result: Value,
    ) -> Through {
        let entries = self.fake.journal_page(before).entries;
        let requests = entries.iter().map(fake::request).collect();
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
    /// state (clustered: its `when: clustered` steps run) and, for a scenario that takes a member
    /// down, the cluster's: `${through}` is `member`, `${down}` is `m2`, `${live}` the third
    /// member. The transcript and every request the cluster received meanwhile.
    pub(super) fn run_scenario(
        &self,
        member: &str,
        scenario: &Scenario,
    ) -> (Transcript, Vec<JournalEntry>) {
        let before = self.last_seq();
        let target = MemberTarget {
            cluster: self,
            member,
        };
        let transcript = self.runtime.block_on(async {
            let mut context = Context::discover(&target, "default", "default", "busybox").await;
            if scenario.clustered() {
                let live = MEMBERS.iter().find(|m| !["m2", member].contains(m));
                let variables = [
                    ("through", member),
                    ("down", "m2"),
                    ("live", live.unwrap_or(&"")),
                ];
                for (name, value) in variables {
                    context.variables.insert(name.to_owned(), json!(value));
                }
                context
                    .variables
                    .insert("exec_timeout".into(), json!(FAKE_CLUSTER_EXEC_TIMEOUT));
            }
            run_in(scenario, &target, &context.on_cluster()).await
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
fn take_down(fake: &FakeIncus, member: &str) -> Result<(), String> {
    fake.member_down(member)
        .map_err(|e| format!("member_down({member}) failed: {e}"))
}

/// The cluster as a scenario's target through one member: the core through that member's
/// socket, the whole cluster's journal, operator requests through that member, and the
/// members' daemons taken down and brought back.
struct MemberTarget<'a> {
    cluster: &'a Cluster,
    member: &'a str,
}

impl Target for MemberTarget<'_> {
    fn call<'a>(
        &'a self,
        operation: &'a str,
        scopes: &'a [String],
        input: Value,
    ) -> BoxFuture<'a, Value> {
        self.cluster
            .host(self.member)
            .call(operation, scopes, input)
    }

    fn journal(&self) -> Option<Vec<Request>> {
        Some(fake::journal(&self.cluster.fake))
    }

    fn output_schema(&self, operation: &str) -> Option<Value> {
        self.cluster.host(self.member).output_schema(operation)
    }

    fn add_fault(&self, rule: &Value) -> Result<(), String> {
        fake::add_fault(&self.cluster.fake, rule)
    }

    fn native<'a>(
        &'a self,
        method: &'a str,
        path: &'a str,
        body: Option<Value>,
    ) -> BoxFuture<'a, Result<(u16, Value), String>> {
        Box::pin(async move {
            let mut request = fake_incus::Request::new(method, path).through(self.member);
            if let Some(body) = &body {
                request = request.json(body);
            }
            let reply = self.cluster.fake.call(request).await;
            Ok((reply.status(), reply.json().clone()))
        })
    }

    fn members(&self) -> Option<&dyn Members> {
        Some(self)
    }
}

impl Members for MemberTarget<'_> {
    fn down<'a>(&'a self, member: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move { take_down(&self.cluster.fake, member) })
    }

    /// Back once the member talked through answers for it (`GET /1.0?target=`), as
    /// `ci/real-incus-cluster.sh` waits for a real member.
    fn up<'a>(&'a self, member: &'a str) -> BoxFuture<'a, Result<(), String>> {
        Box::pin(async move {
            let fake = &self.cluster.fake;
            fake.member_up(member)
                .map_err(|e| format!("member_up({member}) failed: {e}"))?;
            let until = Instant::now() + TRIGGER_BOUND;
            let ready = fake_incus::Request::get(&format!("/1.0?target={member}"));
            while fake.call(ready.clone().through(self.member)).await.status() != 200 {
                if Instant::now() >= until {
                    return Err(format!(
                        "{member} was not served again within {} s",
                        TRIGGER_BOUND.as_secs()
                    ));
                }
                tokio::time::sleep(TRIGGER_POLL).await;
            }
            Ok(())
        })
    }

    /// Watches the journal from now on: `waiting`, a wait on an operation; `streaming`, the
    /// four exec websockets (control, 0, 1, 2) upgraded.
    fn moment(&self, moment: Moment) -> BoxFuture<'_, Result<(), String>> {
        let before = self.cluster.last_seq();
        let reached = move |entries: &[JournalEntry]| match moment {
            Moment::Waiting => entries
                .iter()
                .any(|e| e.is("GET", "/1.0/operations/*/wait")),
            Moment::Streaming => {
                let upgraded = entries
                    .iter()
                    .filter(|e| e.websocket && e.answer == (Answer::Status { code: 101 }))
                    .count();
                upgraded >= 4
            }
        };
        Box::pin(async move {
            let until = Instant::now() + TRIGGER_BOUND;
            // The moment must hold on two polls in a row: the call runs on this same thread,
            // so in between it gets to read the answers the journal already shows as sent.
            let mut seen = false;
            loop {
                if reached(&self.cluster.fake.journal_page(before).entries) {
                    if seen {
                        return Ok(());
                    }
                    seen = true;
                } else {
                    seen = false;
                }
                if Instant::now() >= until {
                    return Err(format!(
                        "the moment never came within {} s",
                        TRIGGER_BOUND.as_secs()
                    ));
                }
                tokio::time::sleep(TRIGGER_POLL).await;
            }
        })
    }
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
