//! RFC 3339 UTC timestamps as the index writes them, from Unix time, without a
//! date-time dependency: one civil-date conversion for every crate.

/// `YYYY-MM-DDTHH:MM:SS.mmmZ` for milliseconds since the Unix epoch (the export's form).
pub fn from_unix_millis(millis: i64) -> String {
    let (seconds, millis) = (millis.div_euclid(1000), millis.rem_euclid(1000));
    let whole = from_unix_seconds(seconds);
    format!("{}.{millis:03}Z", &whole[..whole.len() - 1])
}

/// `YYYY-MM-DDTHH:MM:SSZ` for seconds since the Unix epoch.
pub fn from_unix_seconds(seconds: i64) -> String {
    let (days, rem) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_index + 2) / 5 + 1;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// The current time as `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn now_millis() -> String {
    let since_epoch = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    from_unix_millis(since_epoch.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_instants() {
        assert_eq!(from_unix_seconds(0), "1970-01-01T00:00:00Z");
        assert_eq!(from_unix_seconds(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(from_unix_millis(1_786_759_377_440), "2026-08-15T02:02:57.440Z");
        assert_eq!(from_unix_millis(-1), "1969-12-31T23:59:59.999Z");
    }
}
