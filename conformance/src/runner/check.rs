//! A check: one named, clause-tagged test body, before it becomes a libtest trial.

use std::fmt;

/// The body of a check: returns `Err(message)` when the rule does not hold.
pub(crate) type CheckBody = Box<dyn FnOnce() -> Result<(), String> + Send>;

/// One test of the conformance run.
///
/// `name` follows `area::clause::case` (the clause it checks, then the case), or
/// `context::area::clause::case` for a clause checked in a deployment context of its own (see
/// [`CONTEXTS`]: `cluster::mutation::statuses::...` checks `mutation::statuses` on a cluster), or
/// `scenario::<file-stem>` for scenario files, which declare their clauses themselves.
pub(crate) struct Check {
    pub(crate) name: String,
    pub(crate) clauses: Vec<String>,
    pub(crate) body: CheckBody,
    /// Why the check runs only in-process, when it does: it checks this build's Rust code
    /// rather than an implementation's behaviour, or needs what has no wire form. An adapter
    /// run leaves it out and lists it with this reason.
    pub(crate) in_process_only: Option<&'static str>,
}

impl Check {
    /// A check of the clause that `name` names (`[context::]area::clause::case`).
    pub(crate) fn new(
        name: impl Into<String>,
        body: impl FnOnce() -> Result<(), String> + Send + 'static,
    ) -> Self {
        let name = name.into();
        let clause = clause_of(&name).unwrap_or_default();
        Self {
            name,
            clauses: vec![clause],
            body: Box::new(body),
            in_process_only: None,
        }
    }

    /// A check that names its clauses explicitly (scenario files).
    pub(crate) fn with_clauses(
        name: impl Into<String>,
        clauses: Vec<String>,
        body: impl FnOnce() -> Result<(), String> + Send + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            clauses,
            body: Box::new(body),
            in_process_only: None,
        }
    }

    /// The check runs only in-process, for `reason` (see [`Check::in_process_only`]).
    pub(crate) fn in_process_only(mut self, reason: &'static str) -> Self {
        self.in_process_only = Some(reason);
        self
    }
}

impl fmt::Debug for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Check")
            .field("name", &self.name)
            .field("clauses", &self.clauses)
            .field("in_process_only", &self.in_process_only)
            .finish_non_exhaustive()
    }
}

/// Deployment contexts that prefix a test name: the same clauses of the specification, checked
/// where the backend is not one standalone daemon (`cluster`: a cluster of Incus members).
pub(crate) const CONTEXTS: &[&str] = &["cluster"];

/// The clause id (`area::clause`) of a test named `area::clause::case` or
/// `context::area::clause::case` (a context of [`CONTEXTS`]).
pub(crate) fn clause_of(name: &str) -> Option<String> {
    let mut parts: Vec<&str> = name.split("::").collect();
    if parts.len() == 4 && CONTEXTS.contains(&parts[0]) {
        parts.remove(0);
    }
    match parts.as_slice() {
        [area, clause, _case] => Some(format!("{area}::{clause}")),
        _ => None,
    }
}

/// Whether a segment of a test name is lower snake case (`[a-z0-9_]+`, starting with a letter).
pub(crate) fn is_snake_segment(segment: &str) -> bool {
    segment.starts_with(|c: char| c.is_ascii_lowercase())
        && segment
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

#[cfg(test)]
mod tests {
    //! What goes here: tests of this module on its own (A check); a promise of the harness seen
    //! from outside (its command line, certification, the wire) goes in `tests/harness`.

    use super::*;

    #[test]
    fn clause_of_takes_the_first_two_segments() {
        assert_eq!(
            clause_of("confirmation::exact_resource::yes_is_refused").as_deref(),
            Some("confirmation::exact_resource")
        );
        assert_eq!(clause_of("scenario::x"), None);
    }

    #[test]
    fn clause_of_a_context_test_skips_the_context() {
        assert_eq!(
            clause_of("cluster::mutation::statuses::member_down_during_the_wait").as_deref(),
            Some("mutation::statuses")
        );
        assert_eq!(clause_of("nocontext::mutation::statuses::case"), None);
        assert_eq!(clause_of("a::b::c::d::e"), None);
    }

    #[test]
    fn snake_segments_reject_capitals_and_dashes() {
        assert!(is_snake_segment("yes_is_refused2"));
        assert!(!is_snake_segment("Yes"));
        assert!(!is_snake_segment("a-b"));
        assert!(!is_snake_segment("_a"));
    }
}
