//! RFC 3339 timestamps as instants, so that ordering never depends on how a backend
//! printed them (`2026-08-15T02:02:57.440Z` from an export, `2026-08-15 02:02:57.44+00`
//! from PostgreSQL text output). Parsing is `ki_model::utc`'s, the one date module.

use serde::Serialize;

/// Nanoseconds since the Unix epoch, UTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct Instant(pub i64);

impl Instant {
    pub fn parse(text: &str) -> Result<Instant, String> {
        ki_model::utc::parse_nanos(text).map(Instant)
    }

    /// Now, as resolve answers judge stale evidence against it.
    pub fn now() -> Instant {
        Instant(ki_model::utc::now_nanos())
    }
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
