//! Fault rules: which requests to disturb and how.
//!
//! Rules are kept in install order. For each request every rule whose method and path match
//! counts the request; the first rule whose [`Which`] selects it (and, for a rule with a
//! `probability`, whose draw fires) gives the verdict. Requests that no rule selects pass. A
//! rule's random numbers (`probability`, `jitter_ms`) come from its own generator seeded with its
//! `seed`, drawn once per request it selects, so the same requests get the same faults run to run. A rule carries one fault or several that act in different places (a
//! delay and an operation failure, say). Rules are serde types (the JSON rule format of
//! FAULTS.md) and have Rust builders; a rule that could never match or fire is refused with a
//! [`RuleError`].
//!
//! Where a fault acts decides its module, and each module holds the effect beside the type:
//! [`transport`] (the connection and the answer), [`operation`] (the operation the request
//! creates) and [`exec`] (the command and websockets of an exec). [`Plan`] is the checked
//! verdict for one request, split by those three places.

pub(crate) mod exec;
pub(crate) mod operation;
pub(crate) mod transport;

use crate::pattern::glob_match;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

/// One fault rule: a request matcher and the faults to apply. Built with [`Rule::new`] and
/// [`RuleBuilder::fault`], or read from JSON.
///
/// ```
/// use fake_incus::{Fault, Rule, Which};
/// let rule = Rule::new("POST", "/1.0/instances").nth(2).fault(Fault::CloseAfterApply);
/// assert_eq!(rule.path(), "/1.0/instances");
/// assert_eq!(rule.which(), Which::Nth(2));
/// let json = serde_json::to_string(&rule).unwrap();
/// assert_eq!(serde_json::from_str::<Rule>(&json).unwrap(), rule);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RuleSpec", into = "RuleSpec")]
pub struct Rule {
    method: Option<String>,
    path: String,
    which: Which,
    faults: Vec<Fault>,
    chance: Chance,
}

/// A rule's randomness: the probability that a selected request is disturbed, the extra delay
/// drawn for each, and the seed of the rule's random numbers (so that a run replays).
#[derive(Debug, Clone, Copy, Default)]
struct Chance {
    /// `None`: always.
    probability: Option<f64>,
    /// Up to this many milliseconds added to the rule's `delay`.
    jitter_ms: u64,
    seed: u64,
}

impl PartialEq for Chance {
    fn eq(&self, other: &Self) -> bool {
        self.probability.map(f64::to_bits) == other.probability.map(f64::to_bits)
            && self.jitter_ms == other.jitter_ms
            && self.seed == other.seed
    }
}

impl Eq for Chance {}

impl Chance {
    fn is_random(&self) -> bool {
        self.probability.is_some() || self.jitter_ms > 0
    }
}

/// A rule's matcher before its fault is given: [`Rule::new`] makes one, [`RuleBuilder::fault`]
/// or [`RuleBuilder::faults`] turns it into a [`Rule`].
///
/// ```
/// use fake_incus::{Fault, Rule};
/// let rule = Rule::new("GET", "/1.0/instances/*").first(3).fault(Fault::Delay { ms: 50 });
/// assert_eq!(rule.method(), Some("GET"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a matcher does nothing until it is given a fault"]
pub struct RuleBuilder {
    method: Option<String>,
    path: String,
    which: Which,
    chance: Chance,
}

/// The JSON shape of a rule: `fault` is one fault object or a list of them.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct RuleSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    method: Option<String>,
    path: String,
    #[serde(default)]
    which: Which,
    /// The probability (0 < p ≤ 1) that a selected request is disturbed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    probability: Option<f64>,
    /// Up to this many milliseconds added to the rule's delay, drawn per request.
    #[serde(default, skip_serializing_if = "is_zero")]
    jitter_ms: u64,
    /// The seed of the rule's random numbers (default 0).
    #[serde(default, skip_serializing_if = "is_zero")]
    seed: u64,
    fault: serde_json::Value,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl TryFrom<RuleSpec> for Rule {
    type Error = RuleError;
    fn try_from(spec: RuleSpec) -> Result<Self, RuleError> {
        let faults = match spec.fault {
            serde_json::Value::Array(_) => serde_json::from_value(spec.fault),
            one => serde_json::from_value(one).map(|fault| vec![fault]),
        }
        .map_err(|e| RuleError::BadFault(e.to_string()))?;
        let rule = Self {
            method: spec.method.filter(|m| m != "*").map(|m| m.to_uppercase()),
            path: spec.path,
            which: spec.which,
            faults,
            chance: Chance {
                probability: spec.probability,
                jitter_ms: spec.jitter_ms,
                seed: spec.seed,
            },
        };
        rule.plan()?;
        Ok(rule)
    }
}

impl From<Rule> for RuleSpec {
    fn from(rule: Rule) -> Self {
        let fault = match rule.faults.as_slice() {
            [one] => serde_json::to_value(one),
            many => serde_json::to_value(many),
        }
        .unwrap_or_default();
        Self {
            method: rule.method,
            path: rule.path,
            which: rule.which,
            probability: rule.chance.probability,
            jitter_ms: rule.chance.jitter_ms,
            seed: rule.chance.seed,
            fault,
        }
    }
}

/// Which matching requests a rule selects (counting from 1, in arrival order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Which {
    /// Every matching request.
    #[default]
    Every,
    /// Only the n-th matching request (n ≥ 1).
    Nth(u64),
    /// The first n matching requests (n ≥ 1).
    First(u64),
}

/// What a rule does to a selected request.
///
/// Each kind acts in one place: the transport (`delay`, `error`, `respond`, the closes, `stall`,
/// the body faults, `reset`), the operation the request creates (`operation_*`), or the exec
/// session (`exec_*`). One rule may combine faults of different places.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
#[non_exhaustive]
pub enum Fault {
    /// Answer normally after waiting `ms` milliseconds.
    Delay {
        /// Milliseconds to wait before handling the request.
        ms: u64,
    },
    /// Answer with a native Incus error envelope; nothing is applied.
    Error {
        /// HTTP status and `error_code` (400–599).
        status: u16,
        /// The `error` text.
        message: String,
    },
    /// Answer with this status, headers and body instead of the normal answer. Nothing is
    /// applied unless `apply` is true (then the request is handled first and its answer
    /// replaced).
    Respond {
        /// HTTP status (200–599).
        status: u16,
        /// Headers to send (name to value).
        #[serde(default)]
        headers: std::collections::BTreeMap<String, String>,
        /// The body, sent as is.
        #[serde(default)]
        body: String,
        /// Handle (apply) the request before answering.
        #[serde(default)]
        apply: bool,
    },
    /// Close the connection without applying the request or answering.
    CloseBeforeApply,
    /// Apply the request (state change, operation created), then close without answering.
    CloseAfterApply,
    /// Never answer (until the client gives up or the fake stops); nothing is applied.
    Stall,
    /// Apply the request, then answer 200 with a body that is not JSON.
    GarbageBody,
    /// Apply the request, then send the headers and only half the body, then close.
    TruncatedBody,
    /// Apply the request, then send the body in chunks of `chunk_bytes` every `interval_ms`.
    Dribble {
        /// Bytes per chunk (at least 1).
        chunk_bytes: usize,
        /// Pause between chunks.
        interval_ms: u64,
    },
    /// Reset the connection (TCP RST on HTTPS; a plain close on the Unix socket); nothing applied.
    Reset,
    /// The operation created by this request takes `ms` milliseconds before its work runs
    /// (for exec: before the command starts).
    OperationDuration {
        /// Milliseconds before the operation's work runs.
        ms: u64,
    },
    /// The operation created by this request fails with `message` (nothing is applied; an
    /// exec command does not run).
    OperationFail {
        /// The operation's `err`.
        message: String,
    },
    /// The operation created by this request never finishes.
    OperationNeverFinish,
    /// The operation reports `may_cancel: false` (the default for every operation).
    OperationNotCancellable,
    /// The operation reports `may_cancel: true`, never finishes on its own and can be cancelled.
    OperationCancellable,
    /// The operation finishes only once a wait request for it is in flight.
    OperationFinishDuringWait,
    /// The exec command ignores SIGKILL sent through the control socket.
    ExecIgnoreSigkill,
    /// The exec command ignores the first SIGKILL and obeys any later one, so that a second
    /// SIGKILL from the client shows.
    ExecIgnoreFirstSigkill,
    /// The exec operation finishes only `ms` milliseconds after its command exited.
    ExecExitAfter {
        /// Milliseconds between the command's exit and the operation's end.
        ms: u64,
    },
    /// The server drops the exec websocket of `fd` (`"0"`, `"1"`, `"2"`, `"control"`) right
    /// after it connects.
    ExecDropWebsocket {
        /// The fd whose websocket is dropped.
        fd: String,
    },
}

/// Where a fault acts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Delay,
    Answer,
    Operation,
    Exec,
}

impl Fault {
    /// The fault's kind, as in the rule format (`"close_after_apply"`).
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Delay { .. } => "delay",
            Self::Error { .. } => "error",
            Self::Respond { .. } => "respond",
            Self::CloseBeforeApply => "close_before_apply",
            Self::CloseAfterApply => "close_after_apply",
            Self::Stall => "stall",
            Self::GarbageBody => "garbage_body",
            Self::TruncatedBody => "truncated_body",
            Self::Dribble { .. } => "dribble",
            Self::Reset => "reset",
            Self::OperationDuration { .. } => "operation_duration",
            Self::OperationFail { .. } => "operation_fail",
            Self::OperationNeverFinish => "operation_never_finish",
            Self::OperationNotCancellable => "operation_not_cancellable",
            Self::OperationCancellable => "operation_cancellable",
            Self::OperationFinishDuringWait => "operation_finish_during_wait",
            Self::ExecIgnoreSigkill => "exec_ignore_sigkill",
            Self::ExecIgnoreFirstSigkill => "exec_ignore_first_sigkill",
            Self::ExecExitAfter { .. } => "exec_exit_after",
            Self::ExecDropWebsocket { .. } => "exec_drop_websocket",
        }
    }

    fn place(&self) -> Place {
        match self {
            Self::Delay { .. } => Place::Delay,
            Self::Error { .. }
            | Self::Respond { .. }
            | Self::CloseBeforeApply
            | Self::CloseAfterApply
            | Self::Stall
            | Self::GarbageBody
            | Self::TruncatedBody
            | Self::Dribble { .. }
            | Self::Reset => Place::Answer,
            Self::OperationDuration { .. }
            | Self::OperationFail { .. }
            | Self::OperationNeverFinish
            | Self::OperationNotCancellable
            | Self::OperationCancellable
            | Self::OperationFinishDuringWait => Place::Operation,
            Self::ExecIgnoreSigkill
            | Self::ExecIgnoreFirstSigkill
            | Self::ExecExitAfter { .. }
            | Self::ExecDropWebsocket { .. } => Place::Exec,
        }
    }
}

/// Why a rule was refused: it could never match a request, or its faults could never fire.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RuleError {
    /// The path pattern does not start with `/`.
    #[error("path pattern {0:?} must start with '/'")]
    PathNotAbsolute(String),
    /// The path pattern holds a query string or fragment, which is never part of a matched path.
    #[error(
        "path pattern {0:?} holds a query or fragment ('?' or '#'); patterns match the path only"
    )]
    PathWithQuery(String),
    /// The method is not an HTTP method token.
    #[error("method {0:?} is not an HTTP method")]
    BadMethod(String),
    /// `nth` or `first` is 0, so no request is ever selected.
    #[error("{0} counts from 1; 0 selects no request")]
    ZeroCount(&'static str),
    /// The rule has no fault.
    #[error("a rule needs at least one fault")]
    NoFault,
    /// A fault object is not one of the documented kinds, or its fields are wrong.
    #[error("fault: {0}")]
    BadFault(String),
    /// A field of a fault is out of range.
    #[error("{kind}: {problem}")]
    BadField {
        /// The fault's kind.
        kind: &'static str,
        /// What is wrong.
        problem: String,
    },
    /// Two faults of the rule act in the same place (two answers, two operation faults, ...).
    #[error("{first} and {second} both decide the {place}; a rule can hold only one")]
    Conflict {
        /// The first fault's kind.
        first: &'static str,
        /// The second fault's kind.
        second: &'static str,
        /// What both decide.
        place: &'static str,
    },
    /// One fault keeps the request from being applied, so another can never fire.
    #[error("{blocker} applies nothing, so {blocked} can never fire")]
    NeverApplied {
        /// The fault that stops the request.
        blocker: &'static str,
        /// The fault that would need the request applied.
        blocked: &'static str,
    },
    /// The rule's requests never create what the fault acts on.
    #[error("{kind} acts on {needs}, which {method} {path} never creates")]
    NeverCreated {
        /// The fault's kind.
        kind: &'static str,
        /// What the fault needs (`an operation`, `an exec session`).
        needs: &'static str,
        /// The rule's method (`*` for any).
        method: String,
        /// The rule's path pattern.
        path: String,
    },
}

impl Rule {
    /// A matcher for `method` (`"*"` for any) and a path pattern (`*` within one segment, `**`
    /// across segments), selecting every match until [`RuleBuilder::nth`] or
    /// [`RuleBuilder::first`] narrows it. Give it its fault with [`RuleBuilder::fault`].
    #[allow(
        clippy::new_ret_no_self,
        reason = "a rule only exists with its fault; new starts the builder"
    )]
    pub fn new(method: &str, path: &str) -> RuleBuilder {
        RuleBuilder {
            method: (method != "*").then(|| method.to_uppercase()),
            path: path.into(),
            which: Which::Every,
            chance: Chance::default(),
        }
    }

    /// The method matched (`None`: any).
    pub fn method(&self) -> Option<&str> {
        self.method.as_deref()
    }

    /// The path pattern.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Which matching requests are selected.
    pub fn which(&self) -> Which {
        self.which
    }

    /// The faults applied to a selected request.
    pub fn faults(&self) -> &[Fault] {
        &self.faults
    }

    /// The probability that a selected request is disturbed (`None`: always).
    pub fn probability(&self) -> Option<f64> {
        self.chance.probability
    }

    /// The most milliseconds added to the rule's delay.
    pub fn jitter_ms(&self) -> u64 {
        self.chance.jitter_ms
    }

    /// The seed of the rule's random numbers.
    pub fn seed(&self) -> u64 {
        self.chance.seed
    }

    /// Checks that the rule can fire and that its faults go together.
    ///
    /// ```
    /// use fake_incus::{Fault, Rule, RuleError};
    /// let never = Rule::new("GET", "/1.0/instances").first(0).fault(Fault::Stall);
    /// assert_eq!(never.check(), Err(RuleError::ZeroCount("first")));
    /// let both = Rule::new("POST", "/1.0/instances")
    ///     .faults([Fault::Delay { ms: 10 }, Fault::OperationFail { message: "full".into() }]);
    /// assert_eq!(both.check(), Ok(()));
    /// ```
    pub fn check(&self) -> Result<(), RuleError> {
        self.plan().map(|_| ())
    }

    fn matches(&self, method: &str, path: &str) -> bool {
        let method_ok = match &self.method {
            None => true,
            Some(m) => m == "*" || m.eq_ignore_ascii_case(method),
        };
        method_ok && glob_match(self.path.as_bytes(), path.as_bytes())
    }

    /// The checked plan of the rule's faults.
    fn plan(&self) -> Result<Plan, RuleError> {
        check_pattern(&self.path)?;
        if let Some(method) = &self.method {
            if method.is_empty()
                || !method
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
            {
                return Err(RuleError::BadMethod(method.clone()));
            }
        }
        match self.which {
            Which::Nth(0) => return Err(RuleError::ZeroCount("nth")),
            Which::First(0) => return Err(RuleError::ZeroCount("first")),
            _ => {}
        }
        if self.faults.is_empty() {
            return Err(RuleError::NoFault);
        }
        if let Some(p) = self.chance.probability {
            if !(p > 0.0 && p <= 1.0) {
                return Err(RuleError::BadField {
                    kind: "probability",
                    problem: format!("{p} is not in (0, 1]; 0 would never fire"),
                });
            }
        }
        if self.chance.jitter_ms > 0
            && !self.faults.iter().any(|f| matches!(f, Fault::Delay { .. }))
        {
            return Err(RuleError::BadField {
                kind: "jitter_ms",
                problem: "the rule has no delay fault to add it to".into(),
            });
        }
        let mut plan = Plan::default();
        let mut taken: Vec<(Place, &'static str)> = Vec::new();
        for fault in &self.faults {
            let place = fault.place();
            let exclusive = place != Place::Exec;
            if let Some((_, first)) = taken.iter().find(|(p, kind)| {
                *p == place
                    && (exclusive || *kind == fault.kind() || exec::conflicting(kind, fault.kind()))
            }) {
                return Err(RuleError::Conflict {
                    first,
                    second: fault.kind(),
                    place: match place {
                        Place::Delay => "delay",
                        Place::Answer => "answer",
                        Place::Operation => "operation",
                        Place::Exec => "exec behaviour",
                    },
                });
            }
            taken.push((place, fault.kind()));
            match place {
                Place::Delay | Place::Answer => plan.transport.add(fault)?,
                Place::Operation => {
                    plan.operation = operation::OperationFault::from_fault(fault);
                    self.needs(
                        "an operation",
                        fault.kind(),
                        operation::may_create(self.method.as_deref()),
                    )?;
                }
                Place::Exec => {
                    plan.exec.add(fault)?;
                    self.needs(
                        "an exec session",
                        fault.kind(),
                        exec::may_create(self.method.as_deref(), &self.path),
                    )?;
                }
            }
            plan.kinds.push(fault.kind());
        }
        if let Some(blocker) = plan.transport.applies_nothing() {
            if let Some(blocked) = self
                .faults
                .iter()
                .find(|f| matches!(f.place(), Place::Operation | Place::Exec))
            {
                return Err(RuleError::NeverApplied {
                    blocker,
                    blocked: blocked.kind(),
                });
            }
        }
        Ok(plan)
    }

    fn needs(
        &self,
        needs: &'static str,
        kind: &'static str,
        possible: bool,
    ) -> Result<(), RuleError> {
        if possible {
            return Ok(());
        }
        Err(RuleError::NeverCreated {
            kind,
            needs,
            method: self.method.clone().unwrap_or_else(|| "*".into()),
            path: self.path.clone(),
        })
    }
}

/// A pattern must be absolute and hold no query or fragment.
fn check_pattern(path: &str) -> Result<(), RuleError> {
    if !path.starts_with('/') {
        return Err(RuleError::PathNotAbsolute(path.into()));
    }
    if path.contains(['?', '#']) {
        return Err(RuleError::PathWithQuery(path.into()));
    }
    Ok(())
}

impl RuleBuilder {
    /// Only the n-th matching request (1-based).
    pub fn nth(mut self, n: u64) -> Self {
        self.which = Which::Nth(n);
        self
    }
    /// The first n matching requests.
    pub fn first(mut self, n: u64) -> Self {
        self.which = Which::First(n);
        self
    }
    /// Every matching request (the default).
    pub fn every(mut self) -> Self {
        self.which = Which::Every;
        self
    }
    /// Disturb a selected request only with probability `p` (0 < p ≤ 1), drawn from the
    /// rule's seeded random numbers: the same requests give the same draws run to run.
    pub fn probability(mut self, p: f64) -> Self {
        self.chance.probability = Some(p);
        self
    }
    /// Add up to `ms` milliseconds, drawn per request, to the rule's `delay` fault.
    pub fn jitter_ms(mut self, ms: u64) -> Self {
        self.chance.jitter_ms = ms;
        self
    }
    /// The seed of the rule's random numbers (default 0).
    pub fn seed(mut self, seed: u64) -> Self {
        self.chance.seed = seed;
        self
    }
    /// The rule with this fault.
    pub fn fault(self, fault: Fault) -> Rule {
        self.faults([fault])
    }
    /// The rule with several faults acting in different places (a delay and an operation
    /// fault, an answer fault and an exec fault, ...).
    pub fn faults(self, faults: impl IntoIterator<Item = Fault>) -> Rule {
        Rule {
            method: self.method,
            path: self.path,
            which: self.which,
            faults: faults.into_iter().collect(),
            chance: self.chance,
        }
    }
}

/// What a selected request's faults do, split by where they act.
#[derive(Debug, Clone, Default)]
pub(crate) struct Plan {
    /// Delay and answer faults.
    pub(crate) transport: transport::TransportFaults,
    /// The operation the request creates.
    pub(crate) operation: Option<operation::OperationFault>,
    /// The exec session the request creates.
    pub(crate) exec: exec::ExecFaults,
    /// The kinds of the faults, for the journal.
    pub(crate) kinds: Vec<&'static str>,
}

struct Installed {
    id: u64,
    rule: Rule,
    plan: Plan,
    seen: u64,
    /// The rule's random numbers, seeded from the rule (only for a rule with a chance).
    random: Option<rand::rngs::StdRng>,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    rules: Vec<Installed>,
}

/// The rules and, readable without their lock, how many there are: a request that no rule can
/// select (the usual case) costs one atomic load.
#[derive(Default)]
struct Shared {
    inner: Mutex<Inner>,
    /// `inner.rules.len()`, updated under the lock after every change.
    installed: AtomicUsize,
}

impl Shared {
    /// The rules, locked; the count is brought up to date when the guard is dropped.
    fn lock(&self) -> Counted<'_> {
        Counted {
            inner: self
                .inner
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            installed: &self.installed,
        }
    }
}

/// The locked rules; dropping it publishes their count.
struct Counted<'a> {
    inner: MutexGuard<'a, Inner>,
    installed: &'a AtomicUsize,
}

impl std::ops::Deref for Counted<'_> {
    type Target = Inner;
    fn deref(&self) -> &Inner {
        &self.inner
    }
}

impl std::ops::DerefMut for Counted<'_> {
    fn deref_mut(&mut self) -> &mut Inner {
        &mut self.inner
    }
}

impl Drop for Counted<'_> {
    fn drop(&mut self) {
        self.installed
            .store(self.inner.rules.len(), Ordering::Release);
    }
}

/// The installed rules.
#[derive(Default, Clone)]
pub(crate) struct Faults {
    shared: Arc<Shared>,
}

impl Faults {
    /// Installs a rule after the others, once it is checked.
    pub(crate) fn install(&self, rule: Rule) -> Result<RuleGuard, RuleError> {
        let plan = rule.plan()?;
        let mut inner = self.shared.lock();
        inner.next_id += 1;
        let id = inner.next_id;
        let random = rule
            .chance
            .is_random()
            .then(|| rand::SeedableRng::seed_from_u64(rule.chance.seed));
        inner.rules.push(Installed {
            id,
            rule,
            plan,
            seen: 0,
            random,
        });
        Ok(RuleGuard {
            faults: Arc::downgrade(&self.shared),
            id,
            keep: false,
        })
    }

    pub(crate) fn clear(&self) {
        self.shared.lock().rules.clear();
    }

    pub(crate) fn rules(&self) -> Vec<Rule> {
        self.shared
            .lock()
            .rules
            .iter()
            .map(|r| r.rule.clone())
            .collect()
    }

    /// The verdict for one request: the plan of the first selected rule, if any.
    pub(crate) fn verdict(&self, method: &str, path: &str) -> Option<Plan> {
        // No rule installed: nothing to count or select, and no lock to take. A rule installed
        // while this request is in flight applies from the next request on, as it would had
        // this request taken the lock first.
        if self.shared.installed.load(Ordering::Acquire) == 0 {
            return None;
        }
        let mut inner = self.shared.lock();
        let mut verdict = None;
        for installed in inner
            .rules
            .iter_mut()
            .filter(|r| r.rule.matches(method, path))
        {
            installed.seen += 1;
            let selected = match installed.rule.which {
                Which::Every => true,
                Which::Nth(n) => installed.seen == n,
                Which::First(n) => installed.seen <= n,
            };
            if !selected {
                continue;
            }
            // Every selected request draws from the rule's own numbers, whatever the other
            // rules decide, so that the draws depend only on the requests the rule selects.
            let chance = installed.rule.chance;
            let (fires, jitter) = match installed.random.as_mut() {
                Some(random) => {
                    use rand::Rng;
                    let fires = chance
                        .probability
                        .is_none_or(|p| random.random::<f64>() < p);
                    let jitter =
                        (chance.jitter_ms > 0).then(|| random.random_range(0..=chance.jitter_ms));
                    (fires, jitter)
                }
                None => (true, None),
            };
            if fires && verdict.is_none() {
                let mut plan = installed.plan.clone();
                if let (Some(extra), Some(delay)) = (jitter, plan.transport.delay.as_mut()) {
                    *delay += millis(extra);
                }
                verdict = Some(plan);
            }
        }
        verdict
    }
}

fn millis(ms: u64) -> Duration {
    Duration::from_millis(ms)
}

/// Removes its rule when dropped, unless [`RuleGuard::forget`] was called.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use fake_incus::{FakeIncus, Fault, Rule};
/// let fake = FakeIncus::builder().start().await?;
/// let guard = fake.add_rule(Rule::new("GET", "/1.0").fault(Fault::Stall))?;
/// assert_eq!(fake.rules().len(), 1);
/// drop(guard);
/// assert!(fake.rules().is_empty());
/// # Ok(()) }
/// ```
#[must_use = "dropping the guard removes the rule at once"]
pub struct RuleGuard {
    faults: Weak<Shared>,
    id: u64,
    keep: bool,
}

impl RuleGuard {
    /// Keeps the rule installed for the fake's lifetime (or until `clear_rules`).
    pub fn forget(mut self) {
        self.keep = true;
    }
}

impl std::fmt::Debug for RuleGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuleGuard").field("id", &self.id).finish()
    }
}

impl Drop for RuleGuard {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        if let Some(shared) = self.faults.upgrade() {
            shared.lock().rules.retain(|r| r.id != self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(plan: Option<Plan>) -> Option<Vec<&'static str>> {
        plan.map(|p| p.kinds)
    }

    #[test]
    fn first_selected_rule_wins_and_every_rule_counts() {
        let faults = Faults::default();
        let _a = faults.install(Rule::new("GET", "/x").nth(2).fault(Fault::Stall));
        let _b = faults.install(Rule::new("*", "/x").fault(Fault::Reset));
        assert_eq!(kinds(faults.verdict("GET", "/x")), Some(vec!["reset"]));
        assert_eq!(kinds(faults.verdict("GET", "/x")), Some(vec!["stall"]));
        assert_eq!(kinds(faults.verdict("GET", "/x")), Some(vec!["reset"]));
    }

    #[test]
    fn guard_removes_rule_on_drop() {
        let faults = Faults::default();
        let guard = faults.install(Rule::new("GET", "/x").fault(Fault::Stall));
        drop(guard);
        assert!(faults.verdict("GET", "/x").is_none());
        faults
            .install(Rule::new("GET", "/x").fault(Fault::Stall))
            .unwrap()
            .forget();
        assert_eq!(kinds(faults.verdict("GET", "/x")), Some(vec!["stall"]));
    }

    #[test]
    fn rules_that_can_never_fire_are_refused() {
        let refused = |rule: Rule| rule.check().unwrap_err();
        assert_eq!(
            refused(Rule::new("GET", "/x").first(0).fault(Fault::Stall)),
            RuleError::ZeroCount("first")
        );
        assert_eq!(
            refused(Rule::new("GET", "/x").nth(0).fault(Fault::Stall)),
            RuleError::ZeroCount("nth")
        );
        assert!(matches!(
            refused(Rule::new("GET", "/1.0/instances?recursion=1").fault(Fault::Stall)),
            RuleError::PathWithQuery(_)
        ));
        assert!(matches!(
            refused(Rule::new("GET", "1.0").fault(Fault::Stall)),
            RuleError::PathNotAbsolute(_)
        ));
        assert!(matches!(
            refused(Rule::new("GE T", "/x").fault(Fault::Stall)),
            RuleError::BadMethod(_)
        ));
        assert_eq!(
            refused(Rule::new("GET", "/x").faults([])),
            RuleError::NoFault
        );
        assert!(matches!(
            refused(Rule::new("GET", "/1.0/instances").fault(Fault::OperationNeverFinish)),
            RuleError::NeverCreated { .. }
        ));
        assert!(matches!(
            refused(Rule::new("POST", "/1.0/instances").fault(Fault::ExecIgnoreSigkill)),
            RuleError::NeverCreated { .. }
        ));
        assert!(matches!(
            refused(Rule::new("POST", "/1.0/instances").faults([Fault::Stall, Fault::Reset])),
            RuleError::Conflict { .. }
        ));
        assert!(matches!(
            refused(Rule::new("POST", "/1.0/instances").faults([
                Fault::CloseBeforeApply,
                Fault::OperationFail {
                    message: "x".into()
                }
            ])),
            RuleError::NeverApplied { .. }
        ));
        assert!(matches!(
            refused(
                Rule::new("POST", "/1.0/instances/*/exec")
                    .faults([Fault::ExecIgnoreSigkill, Fault::ExecIgnoreFirstSigkill])
            ),
            RuleError::Conflict { .. }
        ));
        for fault in [
            Fault::Dribble {
                chunk_bytes: 0,
                interval_ms: 1,
            },
            Fault::Error {
                status: 200,
                message: String::new(),
            },
            Fault::Respond {
                status: 99,
                headers: Default::default(),
                body: String::new(),
                apply: false,
            },
            Fault::Respond {
                status: 200,
                headers: [("bad name".to_string(), "v".to_string())].into(),
                body: String::new(),
                apply: false,
            },
        ] {
            assert!(matches!(
                refused(Rule::new("GET", "/x").fault(fault)),
                RuleError::BadField { .. }
            ));
        }
        assert!(matches!(
            refused(
                Rule::new("POST", "/1.0/instances/*/exec")
                    .fault(Fault::ExecDropWebsocket { fd: "3".into() })
            ),
            RuleError::BadField { .. }
        ));
    }

    /// Which of `n` requests a fresh set of rules disturbs, and with what delay.
    fn draws(rule: &Rule, n: usize) -> Vec<Option<Duration>> {
        let faults = Faults::default();
        faults.install(rule.clone()).unwrap().forget();
        (0..n)
            .map(|_| {
                faults
                    .verdict("GET", "/x")
                    .map(|p| p.transport.delay.unwrap_or_default())
            })
            .collect()
    }

    #[test]
    fn a_probability_with_a_seed_disturbs_the_same_requests_run_to_run() {
        let rule = Rule::new("GET", "/x")
            .probability(0.1)
            .seed(7)
            .fault(Fault::Stall);
        let first = draws(&rule, 1000);
        assert_eq!(
            first,
            draws(&rule, 1000),
            "same seed, same requests disturbed"
        );
        let hits = first.iter().filter(|d| d.is_some()).count();
        assert!((50..=150).contains(&hits), "about 10% of 1000: {hits}");
        let other = draws(
            &Rule::new("GET", "/x")
                .probability(0.1)
                .seed(8)
                .fault(Fault::Stall),
            1000,
        );
        assert_ne!(first, other, "another seed, other requests");
    }

    #[test]
    fn a_jittered_delay_stays_within_its_bounds_and_replays() {
        let rule = Rule::new("GET", "/x")
            .jitter_ms(50)
            .seed(3)
            .fault(Fault::Delay { ms: 100 });
        let delays = draws(&rule, 200);
        assert_eq!(delays, draws(&rule, 200));
        let ms: Vec<u128> = delays.iter().map(|d| d.unwrap().as_millis()).collect();
        assert!(ms.iter().all(|m| (100..=150).contains(m)), "{ms:?}");
        assert!(ms.iter().min() != ms.iter().max(), "it varies");
        let json = serde_json::to_value(&rule).unwrap();
        assert_eq!(
            (json["jitter_ms"].clone(), json["seed"].clone()),
            (50.into(), 3.into())
        );
        assert_eq!(serde_json::from_value::<Rule>(json).unwrap(), rule);
    }

    #[test]
    fn a_rule_that_loses_its_draw_lets_the_next_rule_decide() {
        let faults = Faults::default();
        faults
            .install(
                Rule::new("GET", "/x")
                    .probability(0.5)
                    .seed(1)
                    .fault(Fault::Stall),
            )
            .unwrap()
            .forget();
        faults
            .install(Rule::new("GET", "/x").fault(Fault::Reset))
            .unwrap()
            .forget();
        let kinds: Vec<_> = (0..100)
            .map(|_| kinds(faults.verdict("GET", "/x")).unwrap()[0])
            .collect();
        assert!(
            kinds.contains(&"stall") && kinds.contains(&"reset"),
            "{kinds:?}"
        );
    }

    #[test]
    fn a_chance_that_could_never_fire_is_refused() {
        for (json, says) in [
            (
                r#"{"path": "/x", "probability": 0, "fault": {"kind": "stall"}}"#,
                "0 would never fire",
            ),
            (
                r#"{"path": "/x", "probability": 1.5, "fault": {"kind": "stall"}}"#,
                "not in (0, 1]",
            ),
            (
                r#"{"path": "/x", "jitter_ms": 5, "fault": {"kind": "stall"}}"#,
                "no delay fault",
            ),
        ] {
            let err = serde_json::from_str::<Rule>(json).unwrap_err().to_string();
            assert!(err.contains(says), "{json}: {err}");
        }
        let rule: Rule = serde_json::from_str(
            r#"{"path": "/x", "probability": 0.1, "seed": 7, "fault": {"kind": "stall"}}"#,
        )
        .unwrap();
        assert_eq!((rule.probability(), rule.seed()), (Some(0.1), 7));
    }

    #[test]
    fn faults_of_different_places_combine_on_one_rule() {
        let rule = Rule::new("POST", "/1.0/instances/*/exec").faults([
            Fault::Delay { ms: 5 },
            Fault::OperationDuration { ms: 10 },
            Fault::ExecIgnoreFirstSigkill,
            Fault::ExecExitAfter { ms: 1 },
        ]);
        let plan = rule.plan().unwrap();
        assert_eq!(plan.transport.delay, Some(Duration::from_millis(5)));
        assert!(plan.operation.is_some());
        assert_eq!(plan.kinds.len(), 4);
    }

    #[test]
    fn the_json_format_takes_one_fault_or_a_list_and_refuses_what_cannot_fire() {
        let one: Rule = serde_json::from_str(
            r#"{"method": "POST", "path": "/1.0/instances", "which": {"nth": 2}, "fault": {"kind": "close_after_apply"}}"#,
        )
        .unwrap();
        assert_eq!(
            one,
            Rule::new("POST", "/1.0/instances")
                .nth(2)
                .fault(Fault::CloseAfterApply)
        );
        let two: Rule = serde_json::from_str(
            r#"{"path": "/1.0/instances", "fault": [{"kind": "delay", "ms": 5}, {"kind": "operation_fail", "message": "m"}]}"#,
        )
        .unwrap();
        assert_eq!(two.faults().len(), 2);
        let back: Rule = serde_json::from_value(serde_json::to_value(&two).unwrap()).unwrap();
        assert_eq!(back, two);
        let err = serde_json::from_str::<Rule>(
            r#"{"path": "/x", "which": {"first": 0}, "fault": {"kind": "stall"}}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("first counts from 1"), "{err}");
    }
}
