//! Fault rules: which requests to disturb and how.
//!
//! Rules are kept in install order. For each request every rule whose method and path match
//! counts the request; the first rule whose [`Which`] selects it gives the verdict. Requests that
//! no rule selects pass. Rules are serde types (the JSON rule file format of the README) and
//! have Rust builders.

pub(crate) mod transport;

use serde::{Deserialize, Serialize};
use std::sync::{Arc, Mutex, Weak};

/// One fault rule: a request matcher and the fault to apply.
///
/// ```
/// use fake_incus::{Fault, Rule};
/// let rule = Rule::new("POST", "/1.0/instances").nth(2).fault(Fault::CloseAfterApply);
/// assert_eq!(rule.path, "/1.0/instances");
/// let json = serde_json::to_string(&rule).unwrap();
/// assert_eq!(serde_json::from_str::<Rule>(&json).unwrap(), rule);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rule {
    /// HTTP method to match (`None` or `"*"`: any).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Path pattern (no query): `*` matches within one segment, `**` matches anything.
    pub path: String,
    /// Which of the matching requests the fault applies to.
    #[serde(default)]
    pub which: Which,
    /// What happens to the selected requests.
    pub fault: Fault,
}

/// Which matching requests a rule selects (counting from 1, in arrival order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Which {
    /// Every matching request.
    #[default]
    Every,
    /// Only the n-th matching request.
    Nth(u64),
    /// The first n matching requests.
    First(u64),
}

/// What a rule does to a selected request.
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
        /// HTTP status and `error_code`.
        status: u16,
        /// The `error` text.
        message: String,
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
    /// The operation created by this request takes `ms` milliseconds before it finishes.
    OperationDuration {
        /// Milliseconds before the operation's work runs.
        ms: u64,
    },
    /// The operation created by this request fails with `message` (nothing is applied).
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

impl Fault {
    /// A short name for the journal.
    pub(crate) fn name(&self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.get("kind").and_then(|k| k.as_str()).map(String::from))
            .unwrap_or_default()
    }

    /// Whether the fault changes how the request is answered (vs. what an operation does).
    pub(crate) fn is_transport(&self) -> bool {
        matches!(
            self,
            Self::Delay { .. }
                | Self::Error { .. }
                | Self::CloseBeforeApply
                | Self::CloseAfterApply
                | Self::Stall
                | Self::GarbageBody
                | Self::TruncatedBody
                | Self::Dribble { .. }
                | Self::Reset
        )
    }
}

impl Rule {
    /// A rule for `method` (`"*"` for any) and a path pattern, selecting every match, with a
    /// placeholder `Delay { ms: 0 }` fault until [`Rule::fault`] sets one.
    pub fn new(method: &str, path: &str) -> Self {
        Self {
            method: (method != "*").then(|| method.to_uppercase()),
            path: path.into(),
            which: Which::Every,
            fault: Fault::Delay { ms: 0 },
        }
    }
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
    /// Every matching request.
    pub fn every(mut self) -> Self {
        self.which = Which::Every;
        self
    }
    /// Sets the fault.
    pub fn fault(mut self, fault: Fault) -> Self {
        self.fault = fault;
        self
    }

    fn matches(&self, method: &str, path: &str) -> bool {
        let method_ok = match &self.method {
            None => true,
            Some(m) => m == "*" || m.eq_ignore_ascii_case(method),
        };
        method_ok && glob_match(self.path.as_bytes(), path.as_bytes())
    }

    /// Checks that the rule can be used.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if !self.path.starts_with('/') {
            return Err(format!("path pattern {:?} must start with '/'", self.path));
        }
        match (&self.which, &self.fault) {
            (Which::Nth(0), _) => Err("nth counts from 1".into()),
            (_, Fault::Dribble { chunk_bytes: 0, .. }) => {
                Err("chunk_bytes must be at least 1".into())
            }
            (_, Fault::Error { status, .. }) if !(400..=599).contains(status) => {
                Err(format!("error status {status} is not 4xx/5xx"))
            }
            (_, Fault::ExecDropWebsocket { fd })
                if !["0", "1", "2", "control"].contains(&fd.as_str()) =>
            {
                Err(format!("unknown fd {fd:?}"))
            }
            _ => Ok(()),
        }
    }
}

/// `*` matches any run of characters except `/`; `**` matches anything.
fn glob_match(pattern: &[u8], text: &[u8]) -> bool {
    match pattern {
        [] => text.is_empty(),
        [b'*', b'*', rest @ ..] => (0..=text.len()).any(|i| glob_match(rest, &text[i..])),
        [b'*', rest @ ..] => {
            let limit = text.iter().position(|&c| c == b'/').unwrap_or(text.len());
            (0..=limit).any(|i| glob_match(rest, &text[i..]))
        }
        [c, rest @ ..] => text.first() == Some(c) && glob_match(rest, &text[1..]),
    }
}

struct Installed {
    id: u64,
    rule: Rule,
    seen: u64,
}

#[derive(Default)]
struct Inner {
    next_id: u64,
    rules: Vec<Installed>,
}

/// The installed rules.
#[derive(Default, Clone)]
pub(crate) struct Faults {
    inner: Arc<Mutex<Inner>>,
}

impl Faults {
    pub(crate) fn install(&self, rule: Rule) -> RuleGuard {
        let mut inner = lock(&self.inner);
        inner.next_id += 1;
        let id = inner.next_id;
        inner.rules.push(Installed { id, rule, seen: 0 });
        RuleGuard {
            faults: Arc::downgrade(&self.inner),
            id,
            keep: false,
        }
    }

    pub(crate) fn clear(&self) {
        lock(&self.inner).rules.clear();
    }

    pub(crate) fn rules(&self) -> Vec<Rule> {
        lock(&self.inner)
            .rules
            .iter()
            .map(|r| r.rule.clone())
            .collect()
    }

    /// The verdict for one request: the first selected rule's fault, if any.
    pub(crate) fn verdict(&self, method: &str, path: &str) -> Option<Fault> {
        let mut inner = lock(&self.inner);
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
            if selected && verdict.is_none() {
                verdict = Some(installed.rule.fault.clone());
            }
        }
        verdict
    }
}

fn lock(inner: &Mutex<Inner>) -> std::sync::MutexGuard<'_, Inner> {
    inner
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes its rule when dropped, unless [`RuleGuard::forget`] was called.
#[must_use = "dropping the guard removes the rule at once"]
pub struct RuleGuard {
    faults: Weak<Mutex<Inner>>,
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
        if let Some(inner) = self.faults.upgrade() {
            lock(&inner).rules.retain(|r| r.id != self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_star_stays_in_one_segment() {
        assert!(glob_match(b"/1.0/instances/*", b"/1.0/instances/c1"));
        assert!(!glob_match(b"/1.0/instances/*", b"/1.0/instances/c1/state"));
        assert!(glob_match(b"/1.0/**", b"/1.0/instances/c1/state"));
        assert!(glob_match(
            b"/1.0/operations/*/wait",
            b"/1.0/operations/abc/wait"
        ));
    }

    #[test]
    fn first_selected_rule_wins_and_every_rule_counts() {
        let faults = Faults::default();
        let _a = faults.install(Rule::new("GET", "/x").nth(2).fault(Fault::Stall));
        let _b = faults.install(Rule::new("*", "/x").fault(Fault::Reset));
        assert_eq!(faults.verdict("GET", "/x"), Some(Fault::Reset));
        assert_eq!(faults.verdict("GET", "/x"), Some(Fault::Stall));
        assert_eq!(faults.verdict("GET", "/x"), Some(Fault::Reset));
    }

    #[test]
    fn guard_removes_rule_on_drop() {
        let faults = Faults::default();
        let guard = faults.install(Rule::new("GET", "/x").fault(Fault::Stall));
        drop(guard);
        assert_eq!(faults.verdict("GET", "/x"), None);
        faults
            .install(Rule::new("GET", "/x").fault(Fault::Stall))
            .forget();
        assert_eq!(faults.verdict("GET", "/x"), Some(Fault::Stall));
    }
}
