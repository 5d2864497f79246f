//! Go's `time`, as the daemon writes times and durations into its texts (a member's `No
//! heartbeat for 20.07s (2026-12-01 08:52:40.312695806 +0000 UTC)`, a file's `X-Incus-modified`).

use std::time::{Duration, SystemTime};

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
}
