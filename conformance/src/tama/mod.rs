//! The `tama-operations/1` profile: a validator and a reference dispatcher.
//!
//! Producers publish their operations as an OpenAPI 3.1 document with `x-tama-*` extensions.
//! [`validate`] (or [`validate_bytes`], which also holds the raw bytes to the 4 MiB limit) checks
//! every rule of the profile and reports each violation with a JSON pointer to where it is, a
//! stable rule id from [`RULES`] and a message.
//!
//! ```
//! use serde_json::json;
//! use incus_conformance::tama;
//!
//! let document = json!({
//!     "openapi": "3.1.1",
//!     "info": {"title": "demo", "version": "0.1.0"},
//!     "x-tama-profile": "tama-operations/1",
//!     "x-tama-source": "demo",
//!     "paths": {}
//! });
//! let report = tama::validate(&document);
//! assert!(report.is_valid(), "{:?}", report.violations());
//!
//! let broken = json!({"openapi": "3.0.3"});
//! let report = tama::validate(&broken);
//! assert!(report.violations().iter().any(|v| v.rule == "document.openapi"));
//! ```
//!
//! [`Dex`] is a reference dispatcher with the profile's execution semantics: it installs
//! validated documents with an [`Executor`], hides operations a caller cannot run from
//! [`Dex::search`], and [`Dex::execute`] validates input before dispatch and output after.

mod dispatch;
mod pointer;
mod report;
mod validate;

pub use dispatch::{
    Caller, Dex, DexError, Executor, ExecutorFuture, InstallError, InstanceError, Outcome,
    SearchHit,
};
pub use report::{Report, Violation, RULES};

pub(crate) use validate::{check_and_compile, check_value};

/// Validates a parsed document against every rule of `tama-operations/1`.
///
/// The 4 MiB document rule is applied to the compact `serde_json` serialization of `document`;
/// use [`validate_bytes`] to apply it to the bytes as published.
pub fn validate(document: &serde_json::Value) -> Report {
    check_value(document, None).report()
}

/// Validates a serialized document: bytes that are not JSON give a single `document.json`
/// violation; otherwise every rule is applied, the 4 MiB rule to `bytes` as given, and a
/// member name repeated within one object (which a parsed value silently drops) is reported:
/// a repeated operation path as `operation.operationId.unique`, any other as
/// `document.duplicate-key`.
///
/// ```
/// use incus_conformance::tama;
///
/// let report = tama::validate_bytes(b"{not json");
/// assert_eq!(report.violations()[0].rule, "document.json");
/// ```
pub fn validate_bytes(bytes: &[u8]) -> Report {
    try_validate_bytes(bytes).unwrap_or_else(|error| {
        Report::from_violations(vec![Violation {
            pointer: String::new(),
            rule: "document.json",
            message: format!("the document is not JSON: {error}"),
        }])
    })
}

/// Like [`validate_bytes`], but bytes that are not JSON are an error rather than a violation
/// (the command line exits with status 2 for them).
///
/// ```
/// use incus_conformance::tama;
///
/// assert!(tama::try_validate_bytes(b"[1,").is_err());
/// let report = tama::try_validate_bytes(br#"{"openapi": "3.1.0"}"#).unwrap();
/// assert!(!report.is_valid());
/// ```
pub fn try_validate_bytes(bytes: &[u8]) -> Result<Report, serde_json::Error> {
    let document = serde_json::from_slice::<serde_json::Value>(bytes)?;
    Ok(check_value(&document, Some(bytes)).report())
}
