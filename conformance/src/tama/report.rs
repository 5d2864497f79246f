//! What the validator returns: violations with a pointer, a stable rule id and a message.

use serde::Serialize;

/// Every rule id the validator can report, in the order of the profile text.
///
/// Ids are stable: callers match on them, never on messages.
pub const RULES: &[&str] = &[
    "document.json",
    "document.type",
    "document.depth",
    "document.openapi",
    "document.jsonSchemaDialect",
    "document.info",
    "document.info.title",
    "document.info.version",
    "document.x-tama-profile",
    "document.x-tama-source",
    "document.paths",
    "document.components",
    "document.components.schemas",
    "document.components.name",
    "document.webhooks",
    "document.x-tama-unknown",
    "document.duplicate-key",
    "document.size",
    "document.operations.count",
    "path.key",
    "path.item",
    "path.item.field",
    "path.item.post",
    "operation.type",
    "operation.field",
    "operation.operationId",
    "operation.operationId.path",
    "operation.operationId.unique",
    "operation.summary",
    "operation.summary.length",
    "operation.description",
    "operation.description.length",
    "operation.tags",
    "operation.tags.item",
    "operation.tags.length",
    "operation.tags.count",
    "operation.tags.unique",
    "operation.deprecated",
    "operation.requestBody",
    "operation.requestBody.field",
    "operation.requestBody.required",
    "operation.requestBody.description",
    "operation.requestBody.content",
    "operation.requestBody.schema.type",
    "operation.responses",
    "operation.responses.key",
    "operation.responses.200",
    "operation.response",
    "operation.response.field",
    "operation.response.description",
    "operation.response.content",
    "operation.media.field",
    "operation.media.schema",
    "operation.x-tama-scopes",
    "operation.x-tama-scopes.item",
    "operation.x-tama-scopes.unique",
    "operation.x-tama-destructive",
    "operation.x-tama-confirmation",
    "operation.x-tama-confirmation.field",
    "operation.x-tama-confirmation.description",
    "operation.x-tama-bounds",
    "operation.x-tama-bounds.key",
    "operation.x-tama-bounds.value",
    "operation.x-tama-identity",
    "operation.x-tama-identity.item",
    "operation.x-tama-identity.count",
    "operation.x-tama-identity.unique",
    "operation.x-tama-identity.declared",
    "operation.x-tama-unknown",
    "operation.extensions.size",
    "schema.meta",
    "schema.dialect",
    "schema.id",
    "schema.ref.external",
    "schema.ref.unresolved",
    // Reported only by `Dex::install`, should a schema the validator accepted fail to compile;
    // the validator itself compiles no schema (formats such as `regex` are asserted instead).
    "schema.compile",
    "schema.size",
];

/// One broken rule.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Violation {
    /// RFC 6901 JSON pointer (with `~0`/`~1` escapes) to the offending value; for a missing
    /// member, to the member that should be there. The empty string is the whole document.
    pub pointer: String,
    /// Stable rule id, one of [`RULES`].
    pub rule: &'static str,
    /// Human-readable explanation; not a stable contract.
    pub message: String,
}

/// The verdict on one document: every violation found, sorted by pointer then rule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Report {
    violations: Vec<Violation>,
}

impl Report {
    pub(crate) fn from_violations(mut violations: Vec<Violation>) -> Self {
        violations.sort();
        violations.dedup();
        Self { violations }
    }

    /// Whether the document conforms (no violation at all).
    pub fn is_valid(&self) -> bool {
        self.violations.is_empty()
    }

    /// The violations, sorted by pointer then rule.
    pub fn violations(&self) -> &[Violation] {
        &self.violations
    }

    /// Takes the violations out of the report.
    pub fn into_violations(self) -> Vec<Violation> {
        self.violations
    }
}
