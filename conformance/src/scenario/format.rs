//! The scenario file format (documented for users in `scenarios/README.md`).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::Value;

/// A scenario file, as written.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct Scenario {
    /// Equal to the file stem; the trial is `scenario::<name>`.
    pub(crate) name: String,
    /// What the scenario shows, in a sentence or two.
    pub(crate) description: String,
    /// The clause ids (`area::clause`) the scenario checks.
    pub(crate) clauses: Vec<String>,
    /// Fake-only setup: seed state and fault rules. A scenario with this section is not portable.
    #[serde(default)]
    pub(crate) fake: Option<FakeSetup>,
    /// The calls, in order.
    pub(crate) steps: Vec<Step>,
}

/// Fake-only setup, applied when the fake Incus for the scenario starts.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct FakeSetup {
    /// Seed state, in the fake's state format (the format of its state dump).
    #[serde(default)]
    pub(crate) seed: Option<Value>,
    /// Fault rules, in the fake's rule script format, in install order.
    #[serde(default)]
    pub(crate) faults: Vec<Value>,
}

/// One call and what it must return.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct Step {
    /// Optional label used in failure messages.
    #[serde(default)]
    pub(crate) label: Option<String>,
    /// The operation name (any string: unknown names are a valid test).
    pub(crate) operation: String,
    /// The caller's verified scopes.
    pub(crate) scopes: Vec<String>,
    /// The operation input (any JSON value: malformed input is a valid test). `"${var}"`
    /// strings are replaced by values saved by earlier steps.
    pub(crate) input: Value,
    /// Expectations on the result.
    #[serde(default)]
    pub(crate) expect: Expect,
    /// Fake-only expectations on the requests the backend received during this step.
    #[serde(default)]
    pub(crate) journal: Option<JournalExpect>,
    /// Values of the result to reuse in later steps: variable name -> JSON pointer.
    #[serde(default)]
    pub(crate) save: BTreeMap<String, String>,
}

/// Expectations on one result. All given expectations must hold.
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct Expect {
    /// `/status` equals this.
    #[serde(default)]
    pub(crate) status: Option<String>,
    /// `/error/kind` equals this; `null` means "no error key".
    #[serde(default, deserialize_with = "some_or_null")]
    pub(crate) error_kind: Option<Option<String>>,
    /// JSON pointer -> expected value.
    #[serde(default)]
    pub(crate) equals: BTreeMap<String, Value>,
    /// JSON pointers that must resolve.
    #[serde(default)]
    pub(crate) present: Vec<String>,
    /// JSON pointers that must not resolve.
    #[serde(default)]
    pub(crate) absent: Vec<String>,
    /// JSON pointer -> length of the array, object or string there.
    #[serde(default)]
    pub(crate) lengths: BTreeMap<String, usize>,
    /// JSON pointer -> the number there is at most this.
    #[serde(default)]
    pub(crate) at_most: BTreeMap<String, f64>,
    /// The result validates against the operation's output schema (default true).
    #[serde(default = "yes")]
    pub(crate) schema_valid: bool,
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
            at_most: BTreeMap::new(),
            schema_valid: true,
        }
    }
}

/// Fake-only expectations on the journal of one step.
#[derive(Debug, Clone, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct JournalExpect {
    /// The step sent no request at all to the backend.
    #[serde(default)]
    pub(crate) no_backend_request: bool,
    /// Request counts per method and path pattern.
    #[serde(default)]
    pub(crate) requests: Vec<RequestCount>,
}

/// "exactly `count` requests with this method whose path matches `path`" (and, when given,
/// whose JSON body equals `body` and whose `If-Match` presence is `conditional`).
#[derive(Debug, Clone, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub(crate) struct RequestCount {
    /// HTTP method, or `*` for any.
    pub(crate) method: String,
    /// Path pattern: `/`-separated segments, `*` matches one segment, a final `**` any rest.
    pub(crate) path: String,
    /// Exact count expected.
    pub(crate) count: usize,
    /// Only requests whose body parses as JSON equal to this value.
    #[serde(default)]
    pub(crate) body: Option<Value>,
    /// Only requests that carry (`true`) or lack (`false`) an `If-Match` header.
    #[serde(default)]
    pub(crate) conditional: Option<bool>,
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
    pub(crate) fn portable(&self) -> bool {
        self.fake.is_none() && self.steps.iter().all(|step| step.journal.is_none())
    }
}
