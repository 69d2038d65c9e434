//! Human formatting of values, units and dates for the pages.

use std::time::{SystemTime, UNIX_EPOCH};

/// A duration in nanoseconds with three significant digits and the largest fitting unit,
/// the way the public pages print it ("93.0 µs").
pub fn duration_ns(ns: f64) -> String {
    if !ns.is_finite() {
        return "—".into();
    }
    let (value, unit) = if ns.abs() < 1e3 {
        (ns, "ns")
    } else if ns.abs() < 1e6 {
        (ns / 1e3, "µs")
    } else if ns.abs() < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    format!("{} {unit}", three_significant(value))
}

fn three_significant(value: f64) -> String {
    let magnitude = value.abs();
    let decimals = if magnitude >= 100.0 {
        0
    } else if magnitude >= 10.0 {
        1
    } else {
        2
    };
    if unit_is_integer(value) && decimals == 0 {
        return format!("{value:.0}");
    }
    format!("{value:.decimals$}")
}

fn unit_is_integer(value: f64) -> bool {
    value.fract() == 0.0
}

/// Nanoseconds for a value in a time unit, when the unit is one.
pub fn to_ns(value: f64, unit: &str) -> Option<f64> {
    let factor = match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    };
    Some(value * factor)
}

/// A measured value with its unit: times as durations, anything else as number + unit.
pub fn measured(value: f64, unit: &str) -> String {
    match to_ns(value, unit) {
        Some(ns) => duration_ns(ns),
        None => format!("{} {}", plain_number(value), unit.replace('_', "/")),
    }
}

/// A number without float noise: integers as integers, others to at most 6 significant digits.
pub fn plain_number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        return format!("{value:.0}");
    }
    let text = format!("{value:.6}");
    let trimmed = text.trim_end_matches('0').trim_end_matches('.');
    if trimmed == "0" || trimmed == "-0" { format!("{value:e}") } else { trimmed.to_string() }
}

/// "4909.45" for a speedup factor.
pub fn factor(value: f64) -> String {
    format!("{value:.2}")
}

/// Days since 1970-01-01 for a civil date (proleptic Gregorian).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The civil date for a day count since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// The day count of a timestamp's date part ("2025-10-16T01:45:15Z" → days), if it has one.
pub fn day_of(timestamp: &str) -> Option<i64> {
    let date = timestamp.get(0..10)?;
    let mut parts = date.split('-');
    let year = parts.next()?.parse().ok()?;
    let month = parts.next()?.parse().ok()?;
    let day = parts.next()?.parse().ok()?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    Some(days_from_civil(year, month, day))
}

/// The date part of a timestamp, "2025-10-16".
pub fn date_of(timestamp: &str) -> &str {
    timestamp.get(0..10).unwrap_or(timestamp)
}

pub fn unix_now() -> (i64, u32) {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    (now.as_secs() as i64, now.subsec_millis())
}

pub fn today() -> i64 {
    unix_now().0.div_euclid(86_400)
}

pub fn date_text(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    format!("{y:04}-{m:02}-{d:02}")
}

/// Now as an RFC 3339 UTC timestamp with milliseconds, like the catalog writes.
pub fn now_rfc3339() -> String {
    let (secs, millis) = unix_now();
    let days = secs.div_euclid(86_400);
    let rest = secs.rem_euclid(86_400);
    format!("{}T{:02}:{:02}:{:02}.{millis:03}Z", date_text(days), rest / 3600, rest / 60 % 60, rest % 60)
}

/// Seconds until the next UTC midnight, for Retry-After on a daily quota.
pub fn seconds_to_midnight() -> i64 {
    86_400 - unix_now().0.rem_euclid(86_400)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_the_public_pages() {
        assert_eq!(duration_ns(92_972.0), "93.0 µs");
        assert_eq!(duration_ns(19_451.0), "19.5 µs");
        assert_eq!(duration_ns(512.0), "512 ns");
        assert_eq!(duration_ns(2_500_000.0), "2.50 ms");
        assert_eq!(measured(1.0048658277929109e-05, "s"), "10.0 µs");
        assert_eq!(measured(8840.42, "tokens_s"), "8840.42 tokens/s");
    }

    #[test]
    fn civil_dates_round_trip() {
        for days in [-1000, 0, 11_016, 20_000, 20_500] {
            let (y, m, d) = civil_from_days(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
        assert_eq!(day_of("1970-01-02T00:00:00Z"), Some(1));
        assert_eq!(date_text(day_of("2026-08-20T12:00:00.000Z").unwrap()), "2026-08-20");
        assert_eq!(day_of("garbage"), None);
    }
}
