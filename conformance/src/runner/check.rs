//! A check: one named, clause-tagged test body, before it becomes a libtest trial.

use std::fmt;

/// The body of a check: returns `Err(message)` when the rule does not hold.
pub(crate) type CheckBody = Box<dyn FnOnce() -> Result<(), String> + Send>;

/// One test of the conformance run.
///
/// `name` follows `area::clause::case` (the clause it checks, then the case), or
/// `scenario::<file-stem>` for scenario files, which declare their clauses themselves.
pub(crate) struct Check {
    pub(crate) name: String,
    pub(crate) clauses: Vec<String>,
    pub(crate) body: CheckBody,
}

impl Check {
    /// A check of the clause named by the first two segments of `name` (`area::clause::case`).
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
        }
    }
}

impl fmt::Debug for Check {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Check")
            .field("name", &self.name)
            .field("clauses", &self.clauses)
            .finish_non_exhaustive()
    }
}

/// The clause id (`area::clause`) of a test named `area::clause::case`.
pub(crate) fn clause_of(name: &str) -> Option<String> {
    let mut parts = name.split("::");
    let area = parts.next()?;
    let clause = parts.next()?;
    parts.next()?;
    Some(format!("{area}::{clause}"))
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
    fn snake_segments_reject_capitals_and_dashes() {
        assert!(is_snake_segment("yes_is_refused2"));
        assert!(!is_snake_segment("Yes"));
        assert!(!is_snake_segment("a-b"));
        assert!(!is_snake_segment("_a"));
    }
}
