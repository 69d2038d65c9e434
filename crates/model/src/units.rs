//! Values with their units as people read them, one formatter for the CLI and the web:
//! durations at three significant digits in the largest fitting unit (`19.5 µs`, as the
//! public pages print them), other measures as a plain number and their unit.

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

/// A measure that may be absent, with the unit it may have: "—" when absent.
pub fn value(value: Option<f64>, unit: Option<&str>) -> String {
    match (value, unit) {
        (Some(v), Some(unit)) => measured(v, unit),
        (Some(v), None) => plain_number(v),
        (None, _) => "—".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_read_like_the_public_pages() {
        assert_eq!(duration_ns(92_972.0), "93.0 µs");
        assert_eq!(duration_ns(19_451.0), "19.5 µs");
        assert_eq!(duration_ns(512.0), "512 ns");
        assert_eq!(duration_ns(2_500_000.0), "2.50 ms");
        assert_eq!(measured(1.0048658277929109e-05, "s"), "10.0 µs");
        assert_eq!(measured(8840.42, "tokens_s"), "8840.42 tokens/s");
        assert_eq!(value(Some(19_451.0), Some("ns")), "19.5 µs");
        assert_eq!(value(Some(0.5), None), "0.5");
        assert_eq!(value(None, Some("ns")), "—");
    }
}
