//! RFC 3339 timestamps as instants, so that ordering never depends on how a backend
//! printed them (`2026-08-15T02:02:57.440Z` from an export, `2026-08-15 02:02:57.44+00`
//! from PostgreSQL text output).

use serde::Serialize;

/// Nanoseconds since the Unix epoch, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Instant(pub i64);

impl Instant {
    pub fn parse(text: &str) -> Result<Instant, String> {
        let bad = |why: &str| format!("timestamp {text:?}: {why}");
        let bytes = text.as_bytes();
        if bytes.len() < 19 {
            return Err(bad("expected YYYY-MM-DDTHH:MM:SS with a UTC offset"));
        }
        let digits = |range: std::ops::Range<usize>| -> Result<i64, String> {
            let part = &text[range];
            if part.bytes().all(|b| b.is_ascii_digit()) {
                Ok(part.parse::<i64>().unwrap_or(0))
            } else {
                Err(bad("expected digits"))
            }
        };
        if bytes[4] != b'-'
            || bytes[7] != b'-'
            || !matches!(bytes[10], b'T' | b't' | b' ')
            || bytes[13] != b':'
            || bytes[16] != b':'
        {
            return Err(bad("expected YYYY-MM-DDTHH:MM:SS"));
        }
        let (year, month, day) = (digits(0..4)?, digits(5..7)?, digits(8..10)?);
        let (hour, minute, second) = (digits(11..13)?, digits(14..16)?, digits(17..19)?);
        if !(1..=12).contains(&month)
            || day < 1
            || day > days_in_month(year, month)
            || hour > 23
            || minute > 59
            || second > 60
        {
            return Err(bad("date or time out of range"));
        }
        let mut rest = &text[19..];
        let mut nanos: i64 = 0;
        if let Some(fraction) = rest.strip_prefix('.') {
            let count = fraction.bytes().take_while(u8::is_ascii_digit).count();
            if count == 0 || count > 9 {
                return Err(bad("fraction of a second needs 1 to 9 digits"));
            }
            nanos = fraction[..count].parse::<i64>().unwrap_or(0) * 10_i64.pow(9 - count as u32);
            rest = &fraction[count..];
        }
        let offset_seconds = match rest {
            "Z" | "z" => 0,
            _ => {
                let sign = match rest.as_bytes().first() {
                    Some(b'+') => 1,
                    Some(b'-') => -1,
                    _ => return Err(bad("missing UTC offset (Z or ±HH:MM)")),
                };
                let body = &rest[1..];
                let (hours, minutes) = match body.len() {
                    2 => (body, "00"),
                    4 => (&body[..2], &body[2..]),
                    5 if body.as_bytes()[2] == b':' => (&body[..2], &body[3..]),
                    _ => return Err(bad("malformed UTC offset")),
                };
                let parse = |s: &str| s.parse::<i64>().map_err(|_| bad("malformed UTC offset"));
                sign * (parse(hours)? * 3600 + parse(minutes)? * 60)
            }
        };
        let days = days_from_civil(year, month, day);
        let seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset_seconds;
        Ok(Instant(seconds * 1_000_000_000 + nanos))
    }
}

fn is_leap(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

fn days_in_month(year: i64, month: i64) -> i64 {
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if is_leap(year) => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let shifted_month = (month + 9) % 12;
    let day_of_year = (153 * shifted_month + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_and_postgres_spellings_are_the_same_instant() {
        let export = Instant::parse("2026-08-15T02:02:57.440Z").unwrap();
        let postgres = Instant::parse("2026-08-15 02:02:57.44+00").unwrap();
        let offset = Instant::parse("2026-08-15T04:02:57.44+02:00").unwrap();
        assert_eq!(export, postgres);
        assert_eq!(export, offset);
        assert_eq!(Instant::parse("1970-01-01T00:00:00Z").unwrap(), Instant(0));
        assert_eq!(Instant::parse("2000-03-01T00:00:00Z").unwrap().0 / 1_000_000_000, 951_868_800);
    }

    #[test]
    fn malformed_timestamps_are_rejected_with_the_text() {
        for text in [
            "2026-08-15",
            "2026-13-01T00:00:00Z",
            "2026-02-30T00:00:00Z",
            "2026-08-15T02:02:57",
            "2026-08-15T02:02:57.Z",
        ] {
            let err = Instant::parse(text).unwrap_err();
            assert!(err.contains(text), "{err}");
        }
    }
}
