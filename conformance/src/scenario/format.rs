//! The scenario file format (documented for users in `scenarios/README.md`).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// The variables a runner supplies before the first step (`${project}` and so on); a step may
/// also name those saved by earlier steps, and no other (checked when the scenario is loaded).
pub const RUNNER_VARIABLES: [&str; 4] = ["project", "pool", "alias", "fingerprint"];

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

/// One call and what it must return.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// Optional label used in failure messages.
    #[serde(default)]
    pub label: Option<String>,
    /// The operation name (any string: unknown names are a valid test).
    pub operation: String,
    /// The caller's verified scopes.
    pub scopes: Vec<String>,
    /// The operation input (any JSON value: malformed input is a valid test). `"${var}"`
    /// strings are replaced by a runner variable or a value saved by an earlier step.
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
    /// object, an object element with (at least) every field of it, each equal.
    #[serde(default)]
    pub contains: BTreeMap<String, Value>,
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
            .chain(&self.present)
            .chain(&self.absent);
        own.chain(self.any_of.values().flat_map(Expect::pointers))
            .collect()
    }

    /// The values that may name variables (`equals` and `contains`), those of the alternatives
    /// included.
    pub fn values(&self) -> Vec<&Value> {
        let own = self.equals.values().chain(self.contains.values());
        own.chain(self.any_of.values().flat_map(Expect::values))
            .collect()
    }

    /// The same, to substitute variables in place.
    pub fn values_mut(&mut self) -> Vec<&mut Value> {
        let own = self.equals.values_mut().chain(self.contains.values_mut());
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
/// whose JSON body equals `body` and whose `If-Match` presence is `conditional`).
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
}
