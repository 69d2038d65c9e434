//! RFC 8785 JSON Canonicalization Scheme (JCS).
//!
//! Written here rather than taken from `serde_json_canonicalizer` because that crate
//! converts every integer to a double without a check (an integer above 2^53 would
//! silently change its digest) and re-parses each object key to sort it; this one makes
//! one pass over a `serde_json::Value`. Numbers are written by `ryu-js`, which follows
//! ECMAScript's Number::toString exactly as RFC 8785 section 3.2.2.3 requires; the
//! crate is still used in the tests as an independent oracle.

use std::cmp::Ordering;
use std::fmt;

use serde_json::{Map, Number, Value};

/// Why a value has no canonical form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JcsError {
    /// An integer above 2^53 whose canonical (ECMAScript double) text is not its own
    /// digits: JavaScript, and so the public index, would read a different number.
    #[error(
        "{pointer}: integer {literal} is above 2^53 and would not survive canonicalization (JavaScript reads it as a different number)"
    )]
    UnsafeInteger { pointer: String, literal: String },
    /// NaN and the infinities have no JSON form (serde_json cannot build them, but a
    /// `Number` from a custom source might).
    #[error("{pointer}: number {literal} is not finite")]
    NonFinite { pointer: String, literal: String },
}

/// Every integer up to this magnitude is exactly a double and is written as its digits.
const EXACT_INTEGER_LIMIT: u64 = 1 << 53;

/// Canonical JSON text of `value` (RFC 8785).
pub fn canonicalize(value: &Value) -> Result<String, JcsError> {
    let mut out = String::with_capacity(256);
    write_canonical(value, &mut out)?;
    Ok(out)
}

/// Appends the canonical JSON text of `value` to `out`. On error `out` holds a partial
/// text that the caller should discard.
pub fn write_canonical(value: &Value, out: &mut String) -> Result<(), JcsError> {
    let mut path = Vec::new();
    write_value(value, out, &mut path)
}

/// Canonical JSON text of the object whose members are `members` (distinct names), as
/// [`canonicalize`] writes that object, without building it.
pub fn canonicalize_members(members: &[(&str, &Value)]) -> Result<String, JcsError> {
    let mut entries: Vec<(&str, &Value)> = members.to_vec();
    entries.sort_unstable_by(|(a, _), (b, _)| compare_utf16(a, b));
    let mut out = String::with_capacity(256);
    let mut path = Vec::new();
    out.push('{');
    for (index, (key, item)) in entries.into_iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_string(key, &mut out);
        out.push(':');
        path.push(Step::Key(key));
        write_value(item, &mut out, &mut path)?;
        path.pop();
    }
    out.push('}');
    Ok(out)
}

/// One step of the path to the value being written, kept only to name it in errors.
enum Step<'a> {
    Key(&'a str),
    Index(usize),
}

fn pointer_of(path: &[Step<'_>]) -> String {
    if path.is_empty() {
        return String::new();
    }
    let mut pointer = String::new();
    for step in path {
        pointer.push('/');
        match step {
            Step::Key(key) => pointer.push_str(&key.replace('~', "~0").replace('/', "~1")),
            Step::Index(index) => pointer.push_str(&index.to_string()),
        }
    }
    pointer
}

fn write_value<'a>(value: &'a Value, out: &mut String, path: &mut Vec<Step<'a>>) -> Result<(), JcsError> {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => write_number(number, out, path)?,
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                path.push(Step::Index(index));
                write_value(item, out, path)?;
                path.pop();
            }
            out.push(']');
        }
        Value::Object(map) => write_object(map, out, path)?,
    }
    Ok(())
}

fn write_object<'a>(map: &'a Map<String, Value>, out: &mut String, path: &mut Vec<Step<'a>>) -> Result<(), JcsError> {
    let mut entries: Vec<(&'a String, &'a Value)> = map.iter().collect();
    // RFC 8785 3.2.3: order by the UTF-16 code units of the (unescaped) names.
    entries.sort_unstable_by(|(a, _), (b, _)| compare_utf16(a, b));
    out.push('{');
    for (index, (key, item)) in entries.into_iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_string(key, out);
        out.push(':');
        path.push(Step::Key(key));
        write_value(item, out, path)?;
        path.pop();
    }
    out.push('}');
    Ok(())
}

/// Orders strings by UTF-16 code units, as JavaScript's default sort does. UTF-8 byte
/// order agrees except for characters above U+FFFF (surrogate pairs, 0xD800..) against
/// U+E000..U+FFFF, so the byte comparison settles the common case.
pub fn compare_utf16(a: &str, b: &str) -> Ordering {
    let simple = |s: &str| s.bytes().all(|byte| byte < 0xEE);
    if simple(a) && simple(b) {
        return a.as_bytes().cmp(b.as_bytes());
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

fn write_number(number: &Number, out: &mut String, path: &[Step<'_>]) -> Result<(), JcsError> {
    let mut buffer = ryu_js::Buffer::new();
    let integer = number.as_u64().map(|n| (n, false)).or_else(|| number.as_i64().map(|n| (n.unsigned_abs(), true)));
    if let Some((magnitude, negative)) = integer {
        let double = if negative { -(magnitude as f64) } else { magnitude as f64 };
        let text = buffer.format_finite(double);
        // Above 2^53 ECMAScript may print other digits than the integer had (2^60 prints
        // as 1152921504606847000): accept only integers whose canonical text is their own.
        if magnitude > EXACT_INTEGER_LIMIT && text.trim_start_matches('-') != magnitude.to_string() {
            return Err(JcsError::UnsafeInteger { pointer: pointer_of(path), literal: number.to_string() });
        }
        out.push_str(text);
        return Ok(());
    }
    let double = number.as_f64().unwrap_or(f64::NAN);
    if !double.is_finite() {
        return Err(JcsError::NonFinite { pointer: pointer_of(path), literal: number.to_string() });
    }
    out.push_str(buffer.format_finite(double));
    Ok(())
}

/// RFC 8785 3.2.2.2: escape `"`, `\` and the C0 controls (the short forms where JSON
/// has them, otherwise `\u00xx` in lowercase hex); everything else is written as is.
fn write_string(text: &str, out: &mut String) {
    out.push('"');
    let mut clean_from = 0;
    for (index, byte) in text.bytes().enumerate() {
        let escape: &str = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x08 => "\\b",
            0x0C => "\\f",
            0x00..=0x1F => "",
            _ => continue,
        };
        out.push_str(&text[clean_from..index]);
        if escape.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            out.push_str("\\u00");
            out.push(HEX[(byte >> 4) as usize] as char);
            out.push(HEX[(byte & 0xF) as usize] as char);
        } else {
            out.push_str(escape);
        }
        clean_from = index + 1;
    }
    out.push_str(&text[clean_from..]);
    out.push('"');
}

/// An integer literal in JSON text that no double holds exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsafeIntegerLiteral {
    /// Byte offset of the literal in the text.
    pub offset: usize,
    pub literal: String,
}

impl fmt::Display for UnsafeIntegerLiteral {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "integer {} at byte {} is above 2^53 and not exactly a double", self.literal, self.offset)
    }
}

/// Finds the first integer literal in JSON `text` that is not exactly a double.
///
/// serde_json (without `arbitrary_precision`, which would change number handling for
/// the whole workspace) keeps integers up to 2^64 exactly, and [`canonicalize`] rejects
/// those that are not exact doubles; but a longer integer literal is parsed straight
/// into a rounded `f64` and can no longer be told apart from a float. This scan over the
/// raw text catches those. It assumes `text` is JSON (strings are skipped by their
/// quotes); it does not validate it.
pub fn find_unsafe_integer_literal(text: &str) -> Option<UnsafeIntegerLiteral> {
    let bytes = text.as_bytes();
    let mut index = 0;
    while index < bytes.len() {
        match bytes[index] {
            b'"' => {
                index += 1;
                while index < bytes.len() {
                    match bytes[index] {
                        b'\\' => index += 2,
                        b'"' => break,
                        _ => index += 1,
                    }
                }
                index += 1;
            }
            b'-' | b'0'..=b'9' => {
                let start = index;
                index += 1;
                while index < bytes.len() && matches!(bytes[index], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-') {
                    index += 1;
                }
                let literal = &text[start..index];
                // Up to 19 digits always fits u64/i64, which serde_json keeps exactly and
                // `canonicalize` checks; longer ones arrive as rounded doubles.
                let digits = literal.trim_start_matches('-');
                if digits.len() > 19 && digits.bytes().all(|b| b.is_ascii_digit()) && !is_exact_double(digits) {
                    return Some(UnsafeIntegerLiteral { offset: start, literal: literal.to_string() });
                }
            }
            _ => index += 1,
        }
    }
    None
}

/// Whether a run of decimal digits survives canonicalization unchanged: parsed as a
/// double and written back as ECMAScript does, it must give the same digits.
fn is_exact_double(digits: &str) -> bool {
    let Ok(double) = digits.parse::<f64>() else { return false };
    double.is_finite() && ryu_js::Buffer::new().format_finite(double) == digits
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn integers_that_are_exact_doubles_pass_and_others_are_named() {
        assert_eq!(canonicalize(&json!(9007199254740992u64)).unwrap(), "9007199254740992");
        // 10^19 is a double whose ECMAScript text is its own digits; 2^60 is a double too,
        // but ECMAScript writes it as 1152921504606847000, so it would change.
        assert_eq!(canonicalize(&json!(10000000000000000000u64)).unwrap(), "10000000000000000000");
        assert!(canonicalize(&json!(1152921504606846976u64)).is_err());
        let error = canonicalize(&json!({"a": [1, 9007199254740993u64]})).unwrap_err();
        assert_eq!(error, JcsError::UnsafeInteger { pointer: "/a/1".into(), literal: "9007199254740993".into() });
        assert!(canonicalize(&json!(-9007199254740993i64)).is_err());
    }

    #[test]
    fn members_canonicalize_as_the_object_they_make() {
        let spec = json!({"b": [1, 2.5, "x\u{1}"], "a": {"z": null, "é": true}});
        let members: [(&str, &Value); 3] = [("spec", &spec), ("kind", &json!("K")), ("apiVersion", &json!("v"))];
        let object: Map<String, Value> =
            members.iter().map(|(key, value)| (key.to_string(), (*value).clone())).collect();
        assert_eq!(canonicalize_members(&members).unwrap(), canonicalize(&Value::Object(object)).unwrap());
        let unsafe_spec = json!({"a": [9007199254740993u64]});
        assert_eq!(
            canonicalize_members(&[("spec", &unsafe_spec)]).unwrap_err(),
            canonicalize(&json!({"spec": unsafe_spec})).unwrap_err()
        );
    }

    #[test]
    fn long_integer_literals_are_found_outside_strings_only() {
        assert_eq!(find_unsafe_integer_literal(r#"{"a":"123456789012345678901234"}"#), None);
        assert_eq!(find_unsafe_integer_literal(r#"{"a":1e300,"b":100000000000000000000}"#), None);
        let found = find_unsafe_integer_literal(r#"{"a\"":[123456789012345678901234]}"#).unwrap();
        assert_eq!(found.literal, "123456789012345678901234");
        assert_eq!(found.offset, 8);
    }
}
