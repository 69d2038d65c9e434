//! Normalization before digesting, as the public index does it (issue 2, item 3):
//!
//! - a duration written with a unit ("0.008 ms", "5 us", "1 s") becomes integer nanoseconds; one
//!   that is not a whole number of nanoseconds is refused. Duration fields are the ones whose
//!   schema allows a unit string: `BenchmarkProtocol` `spec.measurement.warmupDuration` and
//!   `BenchmarkRun` `spec.timing.latencyNs.*` (including both ends of `confidence95`);
//! - the set-like lists, `ImplementationRevision` `spec.support.*`, are sorted (by UTF-16 code
//!   units, as JavaScript sorts) and de-duplicated. Which lists are sets was settled against the
//!   data: the registry example's `support.axes` is unsorted and the run example names the digest
//!   of its sorted form; every `support` list in the export is sorted; the stack example's
//!   unsorted `backends` is digested as written, so it is ordered;
//! - timestamps (`observedAt`) must be UTC written with `Z` (the schema pattern enforces it) and
//!   are kept as written: the export digests `…:14Z` and `…:12.000Z` forms alike, so rewriting
//!   either would change a published digest;
//! - a number with an integral value (2048.0) is written as an integer; JCS prints both the
//!   same way, so digests do not change, and typed integer fields can read it.
//!
//! Run after the schema check: it relies on the shapes that check guarantees.

use serde_json::{Number, Value};

use crate::jcs::compare_utf16;
use crate::problem::Problem;
use crate::records::Kind;

/// The largest integer JavaScript holds exactly (2^53 - 1), the schemas' integer bound.
pub const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

const LATENCY_FIELDS: [&str; 7] = ["median", "mean", "p05", "p95", "minimum", "maximum", "mad"];
const SUPPORT_SETS: [&str; 5] = ["hardwareArchitectures", "productsTested", "axes", "dtypes", "layouts"];

/// Normalizes a schema-checked manifest of `kind` in place; returns every problem found (the
/// value must then not be used).
pub fn normalize(kind: Kind, manifest: &mut Value) -> Vec<Problem> {
    let mut problems = Vec::new();
    integral_numbers_as_integers(manifest);
    match kind {
        Kind::BenchmarkProtocol => {
            normalize_duration_at(manifest, "/spec/measurement/warmupDuration", &mut problems);
        }
        Kind::BenchmarkRun => {
            for field in LATENCY_FIELDS {
                normalize_duration_at(manifest, &format!("/spec/timing/latencyNs/{field}"), &mut problems);
            }
            for end in 0..2 {
                normalize_duration_at(manifest, &format!("/spec/timing/latencyNs/confidence95/{end}"), &mut problems);
            }
        }
        Kind::ImplementationRevision => {
            for field in SUPPORT_SETS {
                if let Some(Value::Array(items)) = manifest.pointer_mut(&format!("/spec/support/{field}")) {
                    sort_unique_strings(items);
                }
            }
        }
        _ => {}
    }
    problems
}

fn normalize_duration_at(manifest: &mut Value, pointer: &str, problems: &mut Vec<Problem>) {
    let Some(slot) = manifest.pointer_mut(pointer) else { return };
    if let Value::String(text) = slot {
        match duration_to_nanoseconds(text) {
            Ok(ns) => *slot = Value::from(ns),
            Err(reason) => problems.push(Problem::new(pointer, reason)),
        }
    }
}

/// Converts "0.008 ms", "5us", "5 µs", "1 s", "8120 ns" to an exact nanosecond count.
/// Refuses a value that is not a whole number of nanoseconds or exceeds 2^53 - 1 ns.
pub fn duration_to_nanoseconds(text: &str) -> Result<u64, String> {
    let trimmed = text.trim_end_matches(|c: char| c.is_ascii_alphabetic() || c == 'µ');
    let unit = &text[trimmed.len()..];
    // The schema allows one whitespace character between number and unit.
    let number = trimmed.strip_suffix(char::is_whitespace).unwrap_or(trimmed);
    let ns_per_unit: u128 = match unit {
        "ns" => 1,
        "us" | "µs" => 1_000,
        "ms" => 1_000_000,
        "s" => 1_000_000_000,
        _ => return Err(format!("duration {text:?} needs a unit: ns, us, µs, ms or s")),
    };
    let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
    let digits_ok = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !digits_ok(whole) || (number.contains('.') && !digits_ok(fraction)) {
        return Err(format!("duration {text:?} is not a decimal number followed by a unit"));
    }
    let fraction = fraction.trim_end_matches('0');
    let whole = whole.trim_start_matches('0');
    let too_large = || format!("duration {text:?} exceeds {MAX_SAFE_INTEGER} ns");
    // Digits beyond these can only overflow or be sub-nanosecond; refuse before multiplying.
    if whole.len() > 20 {
        return Err(too_large());
    }
    if fraction.len() > 9 {
        return Err(format!("duration {text:?} is not a whole number of nanoseconds"));
    }
    let scale = 10u128.pow(fraction.len() as u32);
    let mantissa: u128 = format!("{whole}{fraction}").parse().unwrap_or(0);
    let scaled = mantissa * ns_per_unit;
    if !scaled.is_multiple_of(scale) {
        return Err(format!("duration {text:?} is not a whole number of nanoseconds"));
    }
    let ns = scaled / scale;
    if ns > MAX_SAFE_INTEGER as u128 {
        return Err(too_large());
    }
    Ok(ns as u64)
}

fn sort_unique_strings(items: &mut Vec<Value>) {
    items.sort_by(|a, b| match (a.as_str(), b.as_str()) {
        (Some(a), Some(b)) => compare_utf16(a, b),
        // The schema admits only strings here; keep any other order stable.
        _ => std::cmp::Ordering::Equal,
    });
    items.dedup();
}

fn integral_numbers_as_integers(value: &mut Value) {
    match value {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap_or(f64::NAN);
            if f.fract() == 0.0 && f.abs() <= MAX_SAFE_INTEGER as f64 {
                // -0.0 becomes 0, which JCS writes as `0` either way.
                *n = if f < 0.0 { Number::from(f as i64) } else { Number::from(f as u64) };
            }
        }
        Value::Array(items) => items.iter_mut().for_each(integral_numbers_as_integers),
        Value::Object(map) => map.values_mut().for_each(integral_numbers_as_integers),
        _ => {}
    }
}
