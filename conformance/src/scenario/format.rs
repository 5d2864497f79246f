//! The scenario file format (documented for users in `scenarios/README.md`).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// The variables a runner supplies before the first step (`${project}` and so on); a step may
/// also name those saved by earlier steps, and no other (checked when the scenario is loaded).
pub const RUNNER_VARIABLES: [&str; 4] = ["project", "pool", "alias", "fingerprint"];

/// The variables a cluster runner supplies besides [`RUNNER_VARIABLES`], for the scenarios that
/// take a member down ([`Scenario::clustered`]): the member the calls go through, the member that
/// goes down and the member that stays up beside them; and `exec_timeout`, the `timeout_seconds`
/// of an exec whose member goes down while it runs, in the cluster's own time scale
/// ([`REAL_CLUSTER_EXEC_TIMEOUT`], [`FAKE_CLUSTER_EXEC_TIMEOUT`]).
pub const CLUSTER_VARIABLES: [&str; 4] = ["through", "down", "live", "exec_timeout"];

/// `${exec_timeout}` on a real cluster: an exec whose member goes down while it runs lasts past
/// the heartbeat round after the death (up to 11 s on a real cluster), from which the cluster
/// answers for the member at once; so when the core gives up on the command (its timeout, then
/// the 5 s grace) the cluster has settled what the death leads to, as the steps after it expect.
pub const REAL_CLUSTER_EXEC_TIMEOUT: u64 = 30;

/// `${exec_timeout}` on the fake cluster, which plays a real cluster's member-down timeline 250
/// times faster (`fake_incus::ClusterTimings::fast`: its heartbeat round within 44 ms): 2 s is
/// past that round, and leaves a loaded machine a thousand times the milliseconds it takes the
/// runner to see the exec stream and take the member down before the command's timeout; it proves
/// what [`REAL_CLUSTER_EXEC_TIMEOUT`] does on a real cluster in a fifth of the time where the run
/// is on real time (`--real-time`, the wire).
pub const FAKE_CLUSTER_EXEC_TIMEOUT: u64 = 2;

/// A scenario file, as written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Scenario {
    /// Equal to the file stem; the trial is `scenario::<name>`.
    pub name: String,
    /// What the scenario shows, in a sentence or two.
    pub description: String,
    /// The clause ids (`area::clause`) the scenario checks.
    pub clauses: Vec<String>,
    /// Fake-only setup: seed state and fault rules. A scenario with this section is not portable.
    #[serde(default)]
    pub fake: Option<FakeSetup>,
    /// The calls, in order.
    pub steps: Vec<Step>,
}

/// Fake-only setup, applied when the fake Incus for the scenario starts.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct FakeSetup {
    /// Seed state, in the fake's state format (the format of its state dump).
    #[serde(default)]
    pub seed: Option<Value>,
    /// Fault rules, in the fake's rule script format, in install order.
    #[serde(default)]
    pub faults: Vec<Value>,
}

/// One step: a call and what it must return; or, on a cluster, a member going down or coming
/// back ([`Step::member`] alone) or an operator's request ([`Step::operator`]).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Optional label used in failure messages.
    #[serde(default)]
    pub label: Option<String>,
    /// The operation name (any string: unknown names are a valid test); empty in a step that
    /// makes no call.
    #[serde(default)]
    pub operation: String,
    /// The caller's verified scopes.
    #[serde(default)]
    pub scopes: Vec<String>,
    /// The operation input (any JSON value: malformed input is a valid test). `"${var}"`
    /// strings are replaced by a runner variable or a value saved by an earlier step.
    #[serde(default)]
    pub input: Value,
    /// Expectations on the result.
    #[serde(default)]
    pub expect: Expect,
    /// Fake-only expectations on the requests the backend received during this step.
    #[serde(default)]
    pub journal: Option<JournalExpect>,
    /// Values of the result to reuse in later steps: variable name -> JSON pointer.
    #[serde(default)]
    pub save: BTreeMap<String, String>,
    /// Runs only on a cluster or only on a standalone daemon; always when absent.
    #[serde(default)]
    pub when: Option<When>,
    /// A cluster member's daemon goes down or comes back: a step of its own (no call), or with
    /// [`MemberChange::once`], while this step's call runs.
    #[serde(default)]
    pub member: Option<MemberChange>,
    /// Instead of a call: a request sent to the daemon beside the core, as an operator would
    /// (set-up that no operation makes, such as an instance placed on a given member).
    #[serde(default)]
    pub operator: Option<OperatorRequest>,
}

/// What a step does, read from which of its keys it has.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action<'a> {
    /// Calls an operation (`operation`, `scopes`, `input`), with a member going down during
    /// the call when `member` is given.
    Call(Option<&'a MemberChange>),
    /// A member goes down or comes back (`member` alone).
    Member(&'a MemberChange),
    /// An operator's request (`operator`).
    Operator(&'a OperatorRequest),
}

impl Step {
    /// What the step does.
    pub fn action(&self) -> Action<'_> {
        match (&self.operator, &self.member) {
            (Some(request), _) => Action::Operator(request),
            (None, Some(change)) if change.once.is_none() => Action::Member(change),
            (None, change) => Action::Call(change.as_ref()),
        }
    }

    /// The step's label, or what it does.
    pub fn describe(&self) -> String {
        if let Some(label) = &self.label {
            return label.clone();
        }
        match self.action() {
            Action::Call(_) => self.operation.clone(),
            Action::Member(change) => change.describe(),
            Action::Operator(request) => format!("{} {}", request.method, request.path),
        }
    }
}

/// A cluster member's daemon goes down (killed, as `SIGKILL` would) or comes back (started
/// again; the step ends once the cluster serves it again). Exactly one of `down` and `up`.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct MemberChange {
    /// The member whose daemon goes down (`"${down}"` in the repository's scenarios).
    #[serde(default)]
    pub down: Option<String>,
    /// The member whose daemon comes back.
    #[serde(default)]
    pub up: Option<String>,
    /// With `down` on a step that calls: the member goes down once the call reaches this
    /// moment, while it runs.
    #[serde(default)]
    pub once: Option<Moment>,
}

impl MemberChange {
    /// `"m2 goes down"`, `"m2 comes back"`.
    pub fn describe(&self) -> String {
        match (&self.down, &self.up) {
            (Some(member), _) => format!("{member} goes down"),
            (None, Some(member)) => format!("{member} comes back"),
            (None, None) => "no member change".to_owned(),
        }
    }
}

/// A moment of a call in flight at which a member goes down.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Moment {
    /// The core waits on the operation the call started.
    Waiting,
    /// The exec the call started runs with its streams attached.
    Streaming,
}

/// A request sent to the daemon beside the core, through the member the run talks to. It must
/// succeed; an operation it starts is waited for and must succeed too.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OperatorRequest {
    /// The HTTP method.
    pub method: String,
    /// The path with its query (`"${var}"` substituted, like inputs).
    pub path: String,
    /// The JSON body, if any.
    #[serde(default)]
    pub body: Option<Value>,
}

/// Which backends a step runs on.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum When {
    /// Only through a member of a cluster.
    Clustered,
    /// Only on a standalone daemon.
    Standalone,
}

/// Expectations on one result. All given expectations must hold.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// `/status` equals this.
    #[serde(default)]
    pub status: Option<String>,
    /// `/error/kind` equals this; `null` means "no error key".
    #[serde(default, deserialize_with = "some_or_null")]
    pub error_kind: Option<Option<String>>,
    /// JSON pointer -> expected value.
    #[serde(default)]
    pub equals: BTreeMap<String, Value>,
    /// JSON pointers that must resolve.
    #[serde(default)]
    pub present: Vec<String>,
    /// JSON pointers that must not resolve.
    #[serde(default)]
    pub absent: Vec<String>,
    /// JSON pointer -> length of the array, object or string there.
    #[serde(default)]
    pub lengths: BTreeMap<String, usize>,
    /// JSON pointer -> the number there is at least this.
    #[serde(default)]
    pub at_least: BTreeMap<String, f64>,
    /// JSON pointer -> the number there is at most this.
    #[serde(default)]
    pub at_most: BTreeMap<String, f64>,
    /// JSON pointer -> an item the array there holds: an element equal to it or, for an
    /// object, an object element with (at least) every field of it, each equal. An array of
    /// items: every one of them is held.
    #[serde(default)]
    pub contains: BTreeMap<String, Value>,
    /// JSON pointer -> an item (or an array of items) the array there does not hold, in the
    /// sense of `contains`.
    #[serde(default)]
    pub lacks: BTreeMap<String, Value>,
    /// JSON pointer -> a regular expression the string there matches.
    #[serde(default)]
    pub matches: BTreeMap<String, String>,
    /// The result validates against the operation's output schema (default true).
    #[serde(default = "yes")]
    pub schema_valid: bool,
    /// Alternatives, by name: the result also meets every expectation of at least one of them.
    /// For an answer that differs between Incus lines without an API extension to tell them apart
    /// (the answer itself says which line's behaviour the server has); empty: no alternatives.
    /// An alternative's own `schema_valid` is not used: this one's decides.
    #[serde(default)]
    pub any_of: BTreeMap<String, Expect>,
}

impl Default for Expect {
    fn default() -> Self {
        Self {
            status: None,
            error_kind: None,
            equals: BTreeMap::new(),
            present: Vec::new(),
            absent: Vec::new(),
            lengths: BTreeMap::new(),
            at_least: BTreeMap::new(),
            at_most: BTreeMap::new(),
            contains: BTreeMap::new(),
            lacks: BTreeMap::new(),
            matches: BTreeMap::new(),
            schema_valid: true,
            any_of: BTreeMap::new(),
        }
    }
}

/// Expectations built in code, the same ones a scenario file writes (for the ordered checks that
/// cannot be files, such as the acceptance runner's lifecycle):
///
/// ```
/// use incus_conformance::scenario::format::Expect;
/// use incus_conformance::scenario::matcher::mismatches;
/// use serde_json::json;
///
/// let expect = Expect::success()
///     .equals("/count", 1)
///     .contains("/items", json!({"name": "c1"}));
/// let result = json!({"count": 1, "items": [{"name": "c1", "status": "Running"}]});
/// let schema = json!({"type": "object"});
/// assert!(mismatches(&expect, &result, Some(&schema)).is_empty());
/// let missing = mismatches(&Expect::native(404), &result, Some(&schema));
/// assert_eq!(missing, ["/error/kind is absent, expected \"native\"",
///                      "/error/http_status is absent, expected 404"]);
/// ```
impl Expect {
    /// A success: the result has no `error` key.
    pub fn success() -> Self {
        Self {
            error_kind: Some(None),
            ..Self::default()
        }
    }

    /// An error of this kind.
    pub fn error(kind: &str) -> Self {
        Self {
            error_kind: Some(Some(kind.to_owned())),
            ..Self::default()
        }
    }

    /// A `native` error with this HTTP status.
    pub fn native(http_status: u16) -> Self {
        Self::error("native").equals("/error/http_status", http_status)
    }

    /// A success whose `/status` is `status` (a mutation's or a wait's outcome).
    pub fn status(status: &str) -> Self {
        Self {
            status: Some(status.to_owned()),
            ..Self::success()
        }
    }

    /// Also: the value at `pointer` equals `value`.
    pub fn equals(mut self, pointer: &str, value: impl Into<Value>) -> Self {
        self.equals.insert(pointer.to_owned(), value.into());
        self
    }

    /// Also: `pointer` resolves.
    pub fn present(mut self, pointer: &str) -> Self {
        self.present.push(pointer.to_owned());
        self
    }

    /// Also: the array at `pointer` holds `item` (an equal element or, for an object, an
    /// object element with every field of it).
    pub fn contains(mut self, pointer: &str, item: impl Into<Value>) -> Self {
        self.contains.insert(pointer.to_owned(), item.into());
        self
    }

    /// Also: the number at `pointer` is at least `bound`.
    pub fn at_least(mut self, pointer: &str, bound: f64) -> Self {
        self.at_least.insert(pointer.to_owned(), bound);
        self
    }

    /// Also: the number at `pointer` is at most `bound`.
    pub fn at_most(mut self, pointer: &str, bound: f64) -> Self {
        self.at_most.insert(pointer.to_owned(), bound);
        self
    }

    /// Also: the result meets at least one of these alternatives, each named.
    pub fn any_of<'a>(mut self, alternatives: impl IntoIterator<Item = (&'a str, Expect)>) -> Self {
        self.any_of.extend(
            alternatives
                .into_iter()
                .map(|(name, expect)| (name.to_owned(), expect)),
        );
        self
    }

    /// Every JSON pointer the expectations name, those of the alternatives included.
    pub fn pointers(&self) -> Vec<&String> {
        let own = self
            .equals
            .keys()
            .chain(self.lengths.keys())
            .chain(self.at_least.keys())
            .chain(self.at_most.keys())
            .chain(self.contains.keys())
            .chain(self.lacks.keys())
            .chain(self.matches.keys())
            .chain(&self.present)
            .chain(&self.absent);
        own.chain(self.any_of.values().flat_map(Expect::pointers))
            .collect()
    }

    /// The values that may name variables (`equals`, `contains` and `lacks`), those of the
    /// alternatives included.
    pub fn values(&self) -> Vec<&Value> {
        let own = self
            .equals
            .values()
            .chain(self.contains.values())
            .chain(self.lacks.values());
        own.chain(self.any_of.values().flat_map(Expect::values))
            .collect()
    }

    /// The same, to substitute variables in place.
    pub fn values_mut(&mut self) -> Vec<&mut Value> {
        let own = self
            .equals
            .values_mut()
            .chain(self.contains.values_mut())
            .chain(self.lacks.values_mut());
        own.chain(self.any_of.values_mut().flat_map(Expect::values_mut))
            .collect()
    }
}

/// Fake-only expectations on the journal of one step.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct JournalExpect {
    /// The step sent no request at all to the backend.
    #[serde(default)]
    pub no_backend_request: bool,
    /// Request counts per method and path pattern.
    #[serde(default)]
    pub requests: Vec<RequestCount>,
}

/// "exactly `count` requests with this method whose path matches `path`" (and, when given,
/// whose JSON body equals `body`, whose `If-Match` presence is `conditional` and that were
/// `applied` or not).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RequestCount {
    /// HTTP method, or `*` for any.
    pub method: String,
    /// Path pattern in the fake's dialect ([`fake_incus::path_matches`]): `*` matches within one
    /// segment, `**` across segments; the query is ignored.
    pub path: String,
    /// Exact count expected.
    pub count: usize,
    /// Only requests whose body parses as JSON equal to this value.
    #[serde(default)]
    pub body: Option<Value>,
    /// Only requests that carry (`true`) or lack (`false`) an `If-Match` header.
    #[serde(default)]
    pub conditional: Option<bool>,
    /// Only requests the backend accepted (`true`: a change was made or an operation created)
    /// or did not (`false`).
    #[serde(default)]
    pub applied: Option<bool>,
}

fn yes() -> bool {
    true
}

fn some_or_null<'de, D>(deserializer: D) -> Result<Option<Option<String>>, D::Error>
where
    D: serde::Deserializer<'de>,
{
    Option::<String>::deserialize(deserializer).map(Some)
}

impl Scenario {
    /// Portable scenarios use no fake-only feature and also run against a real Incus.
    pub fn portable(&self) -> bool {
        self.fake.is_none() && self.steps.iter().all(|step| step.journal.is_none())
    }

    /// Cluster scenarios take a member down: they run on a cluster whose members the runner can
    /// take down and bring back (the fake cluster; a real one), with [`CLUSTER_VARIABLES`].
    pub fn clustered(&self) -> bool {
        self.steps.iter().any(|step| step.member.is_some())
    }
}
