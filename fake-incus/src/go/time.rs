//! Go's `time`, as the daemon writes times and durations into its texts (a member's `No
//! heartbeat for 20.07s (2026-12-01 08:52:40.312695806 +0000 UTC)`, a file's `X-Incus-modified`).

use std::time::{Duration, SystemTime};
use time::OffsetDateTime;

/// A duration as `Duration.String` writes it (`20.07s`, `1m0.627061261s`).
pub(crate) fn duration_string(duration: Duration) -> String {
    let nanos = duration.as_nanos();
    if nanos == 0 {
        return "0s".into();
    }
    if nanos < 1_000_000_000 {
        let (unit, scale) = match nanos {
            n if n < 1_000 => return format!("{n}ns"),
            n if n < 1_000_000 => ("µs", 1_000u128),
            _ => ("ms", 1_000_000u128),
        };
        return format!("{}{unit}", fraction(nanos, scale));
    }
    let hours = nanos / 3_600_000_000_000;
    let minutes = nanos / 60_000_000_000 % 60;
    let seconds = fraction(nanos % 60_000_000_000, 1_000_000_000);
    match (hours, minutes) {
        (0, 0) => format!("{seconds}s"),
        (0, m) => format!("{m}m{seconds}s"),
        (h, m) => format!("{h}h{m}m{seconds}s"),
    }
}

/// `value / scale` with its decimals, trailing zeros dropped.
fn fraction(value: u128, scale: u128) -> String {
    let whole = value / scale;
    let rest = value % scale;
    if rest == 0 {
        return whole.to_string();
    }
    let width = scale.ilog10() as usize;
    let decimals = format!("{rest:0width$}");
    format!("{whole}.{}", decimals.trim_end_matches('0'))
}

/// A time as `Time.String` writes a UTC time (`2026-12-01 08:52:40.312695806 +0000
/// UTC`).
pub(crate) fn utc_time_string(at: SystemTime) -> String {
    let at = time::OffsetDateTime::from(at);
    let nanos = at.nanosecond();
    let fraction = if nanos == 0 {
        String::new()
    } else {
        format!(".{nanos:09}").trim_end_matches('0').to_string()
    };
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}{fraction} +0000 UTC",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second()
    )
}

/// `Time.String()`'s text (`2024-05-01 10:00:00.5 +0200 CEST`) as RFC 3339
/// (`2024-05-01T10:00:00.5+02:00`).
pub(crate) fn time_string_to_rfc3339(go: &str) -> Option<String> {
    let mut parts = go.split(' ');
    let (date, clock, offset) = (parts.next()?, parts.next()?, parts.next()?);
    let (sign, digits) = offset.split_at_checked(1)?;
    if !matches!(sign, "+" | "-")
        || digits.len() != 4
        || !digits.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    let text = format!("{date}T{clock}{sign}{}:{}", &digits[..2], &digits[2..]);
    time::OffsetDateTime::parse(&text, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(|_| text)
}

/// Go's `time.Time.Format(layout)` in UTC, for the reference-time elements of Go's `nextStdChunk`.
pub(crate) fn format(t: OffsetDateTime, layout: &str) -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    const DAYS: [&str; 7] = [
        "Monday",
        "Tuesday",
        "Wednesday",
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
    ];
    let month = MONTHS[usize::from(u8::from(t.month())) - 1];
    let weekday = DAYS[usize::from(t.weekday().number_days_from_monday())];
    let hour12 = match t.hour() % 12 {
        0 => 12,
        h => h,
    };
    let mut out = String::with_capacity(layout.len() + 8);
    let mut rest = layout;
    while !rest.is_empty() {
        // The longest element first where one is a prefix of another, as Go checks them.
        let chunk: Option<(usize, String)> = [
            ("January", month.to_string()),
            ("Jan", month[..3].to_string()),
            ("Monday", weekday.to_string()),
            ("Mon", weekday[..3].to_string()),
            ("MST", "UTC".to_string()),
            ("2006", format!("{:04}", t.year())),
            ("002", format!("{:03}", t.ordinal())),
            ("__2", format!("{:>3}", t.ordinal())),
            ("01", format!("{:02}", u8::from(t.month()))),
            ("02", format!("{:02}", t.day())),
            ("03", format!("{hour12:02}")),
            ("04", format!("{:02}", t.minute())),
            ("05", format!("{:02}", t.second())),
            ("06", format!("{:02}", t.year().rem_euclid(100))),
            ("15", format!("{:02}", t.hour())),
            // Go reads `_2006` as a literal `_` and the year.
            ("_2006", format!("_{:04}", t.year())),
            ("_2", format!("{:>2}", t.day())),
            ("1", u8::from(t.month()).to_string()),
            ("2", t.day().to_string()),
            ("3", hour12.to_string()),
            ("4", t.minute().to_string()),
            ("5", t.second().to_string()),
            ("PM", if t.hour() < 12 { "AM" } else { "PM" }.to_string()),
            ("pm", if t.hour() < 12 { "am" } else { "pm" }.to_string()),
            ("-07:00:00", "+00:00:00".to_string()),
            ("-070000", "+000000".to_string()),
            ("-07:00", "+00:00".to_string()),
            ("-0700", "+0000".to_string()),
            ("-07", "+00".to_string()),
            ("Z07:00:00", "Z".to_string()),
            ("Z070000", "Z".to_string()),
            ("Z07:00", "Z".to_string()),
            ("Z0700", "Z".to_string()),
            ("Z07", "Z".to_string()),
        ]
        .into_iter()
        .find(|(element, _)| rest.starts_with(element))
        .map(|(element, value)| (element.len(), value))
        .or_else(|| layout_fraction(t, rest));
        match chunk {
            Some((len, value)) => {
                out.push_str(&value);
                rest = &rest[len..];
            }
            None => {
                let c = rest.chars().next().unwrap_or_default();
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

/// `.000` (fixed digits) or `.999` (trailing zeros dropped, the dot too if nothing is left):
/// Go's fractional seconds, a run of one digit after `.` or `,` not followed by another digit.
fn layout_fraction(t: OffsetDateTime, rest: &str) -> Option<(usize, String)> {
    let bytes = rest.as_bytes();
    let (&separator, tail) = bytes.split_first()?;
    let digit = *tail.first()?;
    if !matches!(separator, b'.' | b',') || !matches!(digit, b'0' | b'9') {
        return None;
    }
    let run = tail.iter().take_while(|&&b| b == digit).count();
    if tail.get(run).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let nanos = format!("{:09}", t.nanosecond());
    let digits = &nanos[..run.min(9)];
    let value = if digit == b'0' {
        format!("{}{digits}", char::from(separator))
    } else {
        let trimmed = digits.trim_end_matches('0');
        if trimmed.is_empty() {
            String::new()
        } else {
            format!("{}{trimmed}", char::from(separator))
        }
    };
    Some((1 + run, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn durations_are_written_as_go_writes_them() {
        assert_eq!(duration_string(Duration::from_millis(20_070)), "20.07s");
        assert_eq!(
            duration_string(Duration::from_nanos(60_627_061_261)),
            "1m0.627061261s"
        );
        assert_eq!(duration_string(Duration::from_secs(20)), "20s");
        assert_eq!(duration_string(Duration::from_millis(120)), "120ms");
        assert_eq!(duration_string(Duration::from_micros(1500)), "1.5ms");
        assert_eq!(duration_string(Duration::from_secs(3_725)), "1h2m5s");
    }

    #[test]
    fn times_are_written_as_go_writes_a_utc_time() {
        let at = SystemTime::UNIX_EPOCH + Duration::new(1_796_115_160, 312_695_806);
        assert_eq!(
            utc_time_string(at),
            "2026-12-01 08:52:40.312695806 +0000 UTC"
        );
        let whole = SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_115_160);
        assert_eq!(utc_time_string(whole), "2026-12-01 08:52:40 +0000 UTC");
    }

    #[test]
    fn a_file_api_modification_time_as_go_prints_it_reads_as_rfc3339() {
        assert_eq!(
            time_string_to_rfc3339("2026-12-01 22:31:37 +0000 UTC").as_deref(),
            Some("2026-12-01T22:31:37+00:00")
        );
        assert_eq!(
            time_string_to_rfc3339("2024-05-01 10:00:00.5 +0200 CEST").as_deref(),
            Some("2024-05-01T10:00:00.5+02:00")
        );
        for bad in [
            "",
            "2024-05-01",
            "2024-05-01 10:00:00 UTC",
            "2024-13-01 10:00:00 +0000",
        ] {
            assert_eq!(time_string_to_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_layout_formats_go_reference_elements_in_utc() {
        const NOW: OffsetDateTime = time::macros::datetime!(2026-12-06 05:41:03.120 UTC);
        assert_eq!(format(NOW, "2006-01-02"), "2026-12-06");
        assert_eq!(format(NOW, "20060102-150405"), "20261206-054103");
        assert_eq!(
            format(NOW, "Jan_2-3PM-Monday_2006"),
            "Dec 6-5AM-Sunday_2026"
        );
        assert_eq!(format(NOW, "05.000-05.999"), "03.120-03.12");
        assert_eq!(format(NOW, "x002y"), "x340y");
    }
}
