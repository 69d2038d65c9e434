//! JSON text written the way the public index writes it (JavaScript's `JSON.stringify`):
//! compact, keys in their stored order, numbers in ECMAScript form
//! (`0.000010048658277929109`, `1e+21`). Writing exports this way makes an export of an
//! imported snapshot byte-identical to the snapshot.

use serde_json::{Map, Number, Value};

/// Appends `value` as compact JSON text.
pub fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => write_number(number, out),
        Value::String(text) => write_string(text, out),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => write_object(map, out),
    }
}

pub fn write_object(map: &Map<String, Value>, out: &mut String) {
    out.push('{');
    for (index, (key, item)) in map.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_string(key, out);
        out.push(':');
        write_value(item, out);
    }
    out.push('}');
}

pub fn to_text(value: &Value) -> String {
    let mut out = String::new();
    write_value(value, &mut out);
    out
}

fn write_number(number: &Number, out: &mut String) {
    if let Some(unsigned) = number.as_u64() {
        out.push_str(itoa_u64(unsigned).as_str());
    } else if let Some(signed) = number.as_i64() {
        out.push_str(&signed.to_string());
    } else {
        write_f64(number.as_f64().unwrap_or(f64::NAN), out);
    }
}

fn itoa_u64(value: u64) -> String {
    value.to_string()
}

/// ECMAScript Number::toString; JSON has no NaN or infinity, and `JSON.stringify`
/// writes them as `null`.
pub fn write_f64(value: f64, out: &mut String) {
    if !value.is_finite() {
        out.push_str("null");
        return;
    }
    let mut buffer = ryu_js::Buffer::new();
    out.push_str(buffer.format_finite(value));
}

/// A string with the escapes `JSON.stringify` uses: `\"`, `\\`, the five short control
/// escapes, and `\u00xx` (lowercase) for the other control characters.
pub fn write_string(text: &str, out: &mut String) {
    out.push('"');
    let mut start = 0;
    for (index, byte) in text.bytes().enumerate() {
        let escape: Option<&str> = match byte {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0x08 => Some("\\b"),
            0x0c => Some("\\f"),
            0x00..=0x1f => None,
            _ => continue,
        };
        out.push_str(&text[start..index]);
        match escape {
            Some(escape) => out.push_str(escape),
            None => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[(byte >> 4) as usize] as char);
                out.push(HEX[(byte & 0xf) as usize] as char);
            }
        }
        start = index + 1;
    }
    out.push_str(&text[start..]);
    out.push('"');
}

/// The JSON number a stored double stands for: an integral value within JavaScript's
/// safe range reads back as an integer (as `JSON.parse` of the exported text would),
/// anything else as a double.
pub fn number_from_f64(value: f64) -> Value {
    const SAFE: f64 = 9_007_199_254_740_991.0;
    if value.fract() == 0.0 && value.abs() <= SAFE {
        if value >= 0.0 {
            return Value::from(value as u64);
        }
        return Value::from(value as i64);
    }
    Number::from_f64(value).map(Value::Number).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_written_as_ecmascript_does() {
        let cases = [
            (1.0048658277929109e-05, "0.000010048658277929109"),
            (1e21, "1e+21"),
            (1e-7, "1e-7"),
            (14150.0, "14150"),
            (8840.42, "8840.42"),
            (-0.0, "0"),
        ];
        for (value, expected) in cases {
            let mut out = String::new();
            write_f64(value, &mut out);
            assert_eq!(out, expected, "{value:e}");
        }
    }

    #[test]
    fn strings_escape_like_json_stringify() {
        let mut out = String::new();
        write_string("a\"b\\c\nd\u{1}e\u{7f}·\u{2028}", &mut out);
        assert_eq!(out, "\"a\\\"b\\\\c\\nd\\u0001e\u{7f}·\u{2028}\"");
    }

    #[test]
    fn integral_doubles_read_back_as_integers() {
        assert_eq!(number_from_f64(14150.0), Value::from(14150u64));
        assert!(number_from_f64(0.5).is_f64());
        assert!(number_from_f64(1e300).is_f64());
    }
}
