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

/// A measured value with its unit: times as durations, percentages as `0.12 %`, bytes as
/// [`bytes`], anything else as number + unit.
pub fn measured(value: f64, unit: &str) -> String {
    match (to_ns(value, unit), unit) {
        (Some(ns), _) => duration_ns(ns),
        (None, "percent" | "%") => percent(value),
        (None, "bytes" | "B") if value >= 0.0 && value.fract() == 0.0 && value < 9e15 => bytes(value as u64),
        (None, _) => format!("{} {}", plain_number(value), unit.replace('_', "/")),
    }
}

/// A number without float noise: integers as integers, others to at most 4 decimals (and
/// three significant digits in scientific notation below 0.0001).
pub fn plain_number(value: f64) -> String {
    if !value.is_finite() {
        return "—".into();
    }
    if value.fract() == 0.0 && value.abs() < 1e15 {
        return format!("{value:.0}");
    }
    let text = format!("{value:.4}");
    let trimmed = text.trim_end_matches('0').trim_end_matches('.');
    if trimmed == "0" || trimmed == "-0" { scientific(value) } else { trimmed.to_string() }
}

/// `4.77e-7`: three significant digits.
fn scientific(value: f64) -> String {
    let text = format!("{value:.2e}");
    match text.split_once('e') {
        Some((mantissa, exponent)) => {
            let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
            format!("{mantissa}e{exponent}")
        }
        None => text,
    }
}

/// A whole count with thousands separators: `150,109,880,320`.
pub fn count(value: u64) -> String {
    let digits = value.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A number as people read it: integers with thousands separators, fractions at four
/// significant digits (at most four decimals), tiny values in scientific notation.
pub fn number(value: f64) -> String {
    if !value.is_finite() {
        return "—".into();
    }
    let sign = if value < 0.0 { "-" } else { "" };
    let magnitude = value.abs();
    if magnitude >= 1000.0 || (value.fract() == 0.0 && magnitude < 1e15) {
        if magnitude < 1e15 {
            return format!("{sign}{}", count(magnitude.round() as u64));
        }
        return scientific(value);
    }
    if magnitude == 0.0 {
        return "0".into();
    }
    if magnitude < 1e-4 {
        return scientific(value);
    }
    let decimals = (3 - magnitude.log10().floor() as i32).clamp(0, 4) as usize;
    let text = format!("{magnitude:.decimals$}");
    let trimmed = if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.') } else { &text };
    format!("{sign}{trimmed}")
}

/// A percentage: `0.12 %`, `99.5 %`.
pub fn percent(value: f64) -> String {
    format!("{} %", number(value))
}

/// A size in bytes: the binary unit that fits, and the exact count beside it
/// (`139.8 GiB (150,109,880,320 bytes)`; `512 bytes`).
pub fn bytes(value: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if value < 1024 {
        return format!("{} bytes", count(value));
    }
    let mut scaled = value as f64;
    let mut unit = "bytes";
    for u in UNITS {
        if scaled < 1024.0 {
            break;
        }
        scaled /= 1024.0;
        unit = u;
    }
    format!("{scaled:.1} {unit} ({} bytes)", count(value))
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
        assert_eq!(measured(0.12, "percent"), "0.12 %");
        assert_eq!(measured(150_109_880_320.0, "bytes"), "139.8 GiB (150,109,880,320 bytes)");
    }

    #[test]
    fn counts_and_bytes_have_thousands_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1000), "1,000");
        assert_eq!(count(150_109_880_320), "150,109,880,320");
        assert_eq!(bytes(512), "512 bytes");
        assert_eq!(bytes(62_914_560), "60.0 MiB (62,914,560 bytes)");
        assert_eq!(bytes(150_109_880_320), "139.8 GiB (150,109,880,320 bytes)");
    }

    #[test]
    fn numbers_carry_no_float_noise() {
        assert_eq!(number(31.18645668029785), "31.19");
        assert_eq!(number(0.913485), "0.9135");
        assert_eq!(number(6.861587455479475), "6.862");
        assert_eq!(number(0.0078125), "0.0078");
        assert_eq!(number(4.76837158203125e-07), "4.77e-7");
        assert_eq!(number(150_109_880_320.0), "150,109,880,320");
        assert_eq!(number(49_755.65), "49,756");
        assert_eq!(number(-2.5), "-2.5");
        assert_eq!(number(1.0), "1");
        assert_eq!(number(0.0), "0");
        assert_eq!(number(f64::NAN), "—");
        assert_eq!(percent(0.12), "0.12 %");
        assert_eq!(plain_number(31.18645668029785), "31.1865");
        assert_eq!(plain_number(1.7214407536293386e-07), "1.72e-7");
        assert_eq!(plain_number(8840.42), "8840.42");
    }
}
