//! `snapshots.expiry`: when a snapshot taken now expires (Incus `internal/instance/expiry.go`).

use time::format_description::well_known::Rfc3339;
use time::{Date, Duration, Month, OffsetDateTime};

/// The expiry of a snapshot taken at `from` (RFC 3339) under the expression `expression`
/// (`<n>(S|M|H|d|w|m|y)` fields separated by single spaces, each unit at most once, e.g.
/// `1d 3H`): `None` for an empty expression, the daemon's error text for an invalid one.
/// Years, months and days are added as Go's `AddDate` does (an overflowing day rolls into the
/// next month), then hours, minutes and seconds.
pub(crate) fn expiry(from: &str, expression: &str) -> Result<Option<String>, String> {
    let expression = expression.trim();
    if expression.is_empty() {
        return Ok(None);
    }
    let invalid = || "Invalid expiry expression".to_string();
    let mut fields = [0_i64; 7];
    const UNITS: &str = "SMHdwmy";
    for value in expression.split(' ') {
        let unit = value.chars().last().ok_or_else(invalid)?;
        let index = UNITS.find(unit).ok_or_else(invalid)?;
        let digits = &value[..value.len() - unit.len_utf8()];
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(invalid());
        }
        if fields[index] > 0 {
            return Err(invalid());
        }
        fields[index] = digits.parse().map_err(|_| invalid())?;
    }
    let [seconds, minutes, hours, days, weeks, months, years] = fields;
    let from = OffsetDateTime::parse(from, &Rfc3339).map_err(|e| e.to_string())?;
    let month_index =
        i64::from(from.year()) * 12 + i64::from(u8::from(from.month())) - 1 + years * 12 + months;
    let year = i32::try_from(month_index.div_euclid(12)).map_err(|_| invalid())?;
    let month = u8::try_from(month_index.rem_euclid(12) + 1)
        .ok()
        .and_then(|m| Month::try_from(m).ok())
        .ok_or_else(invalid)?;
    let first = Date::from_calendar_date(year, month, 1).map_err(|_| invalid())?;
    let date = first
        .checked_add(Duration::days(i64::from(from.day()) - 1 + days + weeks * 7))
        .ok_or_else(invalid)?;
    let at = from
        .replace_date(date)
        .checked_add(
            Duration::hours(hours) + Duration::minutes(minutes) + Duration::seconds(seconds),
        )
        .ok_or_else(invalid)?;
    at.format(&Rfc3339).map(Some).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seven_days_is_a_week_later_at_the_same_moment() {
        assert_eq!(
            expiry("2026-12-06T02:40:02.508136575Z", "7d")
                .unwrap()
                .as_deref(),
            Some("2026-12-13T02:40:02.508136575Z")
        );
        assert_eq!(
            expiry("2026-12-06T02:40:02Z", "1d 3H").unwrap().as_deref(),
            Some("2026-12-07T05:40:02Z")
        );
    }

    #[test]
    fn months_overflow_into_the_next_month_as_go_add_date_does() {
        assert_eq!(
            expiry("2026-01-31T00:00:00Z", "1m").unwrap().as_deref(),
            Some("2026-03-03T00:00:00Z")
        );
        assert_eq!(
            expiry("2026-12-31T00:00:00Z", "1y 1m 2w")
                .unwrap()
                .as_deref(),
            Some("2028-02-14T00:00:00Z")
        );
    }

    #[test]
    fn an_empty_expression_is_no_expiry_and_a_bad_one_the_daemons_error() {
        assert_eq!(expiry("2026-01-01T00:00:00Z", " "), Ok(None));
        for bad in ["7", "d", "7x", "1d 1d", "1d  2H", "-1d"] {
            assert_eq!(
                expiry("2026-01-01T00:00:00Z", bad),
                Err("Invalid expiry expression".to_string()),
                "{bad}"
            );
        }
    }
}
