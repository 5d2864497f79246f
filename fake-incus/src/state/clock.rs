//! Timestamps in the daemon's format: RFC 3339, UTC, nanoseconds with trailing zeros dropped.

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// The Go zero time, used for unset timestamps.
pub(crate) const ZERO_TIME: &str = "0001-01-01T00:00:00Z";
/// What an instance that never started reports as `last_used_at`.
pub(crate) const EPOCH: &str = "1970-01-01T00:00:00Z";

/// The current time.
pub(crate) fn now() -> String {
    OffsetDateTime::now_utc()
        .format(&Rfc3339)
        .unwrap_or_else(|_| ZERO_TIME.to_string())
}
