//! Dates and times as the index writes and reads them: RFC 3339 UTC timestamps
//! (`2026-08-15T02:02:57.440Z`), the days they fall on, and now. The one date module for the
//! CLI, the catalog and the web, on `jiff` (no civil-date arithmetic of our own).

use jiff::{Timestamp, ToSpan, Unit};

const SECONDS_PER_DAY: i64 = 86_400;

fn clamp(result: Result<Timestamp, jiff::Error>) -> Timestamp {
    result.unwrap_or(Timestamp::MAX)
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for milliseconds since the Unix epoch (the export's form).
pub fn from_unix_millis(millis: i64) -> String {
    format!("{:.3}", clamp(Timestamp::from_millisecond(millis)))
}

/// `YYYY-MM-DDTHH:MM:SSZ` for seconds since the Unix epoch.
pub fn from_unix_seconds(seconds: i64) -> String {
    format!("{:.0}", clamp(Timestamp::from_second(seconds)))
}

/// The current time as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn now_millis() -> String {
    format!("{:.3}", Timestamp::now())
}

/// The current time as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn now_seconds() -> String {
    format!("{:.0}", Timestamp::now())
}

/// The current time in nanoseconds since the Unix epoch (saturating past year 2262).
pub fn now_nanos() -> i64 {
    i64::try_from(Timestamp::now().as_nanosecond()).unwrap_or(i64::MAX)
}

/// The start of today (UTC) as `YYYY-MM-DDT00:00:00.000Z`.
pub fn today_start() -> String {
    from_unix_millis(today().saturating_mul(SECONDS_PER_DAY * 1000))
}

/// Nanoseconds since the Unix epoch of an RFC 3339 timestamp with an offset (`Z`,
/// `+02:00`, or PostgreSQL's text form `2026-08-15 02:02:57.44+00`); the error names the text.
pub fn parse_nanos(text: &str) -> Result<i64, String> {
    let timestamp: Timestamp = text.parse().map_err(|error| format!("timestamp {text:?}: {error}"))?;
    i64::try_from(timestamp.as_nanosecond()).map_err(|_| format!("timestamp {text:?}: out of range"))
}

/// Days since 1970-01-01 of a timestamp's date (`2025-10-16T01:45:15Z` → 20377), when it
/// starts with a valid date.
pub fn day_of(timestamp: &str) -> Option<i64> {
    let date: jiff::civil::Date = timestamp.get(0..10)?.parse().ok()?;
    let midnight = jiff::tz::Offset::UTC.to_timestamp(date.to_datetime(jiff::civil::Time::midnight())).ok()?;
    Some(midnight.as_second().div_euclid(SECONDS_PER_DAY))
}

/// The date part of a timestamp, `2025-10-16`.
pub fn date_of(timestamp: &str) -> &str {
    timestamp.get(0..10).unwrap_or(timestamp)
}

/// `YYYY-MM-DD` of a day count since 1970-01-01.
pub fn date_text(days: i64) -> String {
    from_unix_seconds(days.saturating_mul(SECONDS_PER_DAY))[..10].to_string()
}

/// Today (UTC) as days since 1970-01-01.
pub fn today() -> i64 {
    Timestamp::now().as_second().div_euclid(SECONDS_PER_DAY)
}

/// Seconds until the next UTC midnight, for Retry-After on a daily quota.
pub fn seconds_to_midnight() -> i64 {
    let now = Timestamp::now();
    let next = (today() + 1) * SECONDS_PER_DAY;
    let rounded = now.round(Unit::Second).unwrap_or(now);
    (next - rounded.as_second()).clamp(1, SECONDS_PER_DAY)
}

/// `timestamp` plus `days` days, in the export's form (for tests and generators).
pub fn add_days(timestamp: &str, days: i64) -> Option<String> {
    let parsed: Timestamp = timestamp.parse().ok()?;
    Some(format!("{:.3}", parsed.checked_add((days * 24).hours()).ok()?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn now_agrees_with_itself() {
        let (day, text, nanos, start) = (today(), now_millis(), now_nanos(), today_start());
        assert!((nanos - parse_nanos(&text).unwrap()).abs() < 60_000_000_000, "{text} vs {nanos}");
        // Read around midnight, `today` may be the day before `start`'s.
        assert!(
            start.ends_with("T00:00:00.000Z") && day_of(&start).is_some_and(|d| d == day || d == day + 1),
            "{start}"
        );
    }

    #[test]
    fn known_instants() {
        assert_eq!(from_unix_seconds(0), "1970-01-01T00:00:00Z");
        assert_eq!(from_unix_seconds(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(from_unix_millis(1_786_759_377_440), "2026-08-15T02:02:57.440Z");
        assert_eq!(from_unix_millis(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(now_millis().len(), 24);
    }

    #[test]
    fn export_and_postgres_spellings_are_the_same_instant() {
        let export = parse_nanos("2026-08-15T02:02:57.440Z").unwrap();
        assert_eq!(parse_nanos("2026-08-15 02:02:57.44+00").unwrap(), export);
        assert_eq!(parse_nanos("2026-08-15T04:02:57.44+02:00").unwrap(), export);
        assert_eq!(parse_nanos("1970-01-01T00:00:00Z").unwrap(), 0);
        assert_eq!(parse_nanos("2000-03-01T00:00:00Z").unwrap() / 1_000_000_000, 951_868_800);
        for text in [
            "2026-08-15",
            "2026-13-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-08-15T02:02:57",
            "2026-08-15T02:02:57.Z",
        ] {
            let error = parse_nanos(text).unwrap_err();
            assert!(error.contains(text), "{error}");
        }
    }

    #[test]
    fn days() {
        for days in [-1000, 0, 11_016, 20_000, 20_500] {
            assert_eq!(day_of(&date_text(days)), Some(days));
        }
        assert_eq!(day_of("1970-01-02T00:00:00Z"), Some(1));
        assert_eq!(date_text(day_of("2026-08-20T12:00:00.000Z").unwrap()), "2026-08-20");
        assert_eq!(day_of("garbage"), None);
        assert!((1..=86_400).contains(&seconds_to_midnight()));
        assert_eq!(add_days("2026-08-15T02:02:57.440Z", 2).as_deref(), Some("2026-08-17T02:02:57.440Z"));
    }
}
