//! JSON text written the way the public index writes it (JavaScript's `JSON.stringify`):
//! serde_json's compact writer, keys in their stored order, with numbers in ECMAScript form
//! by ryu-js (`0.000010048658277929109`, `1e+21`). serde_json already escapes strings as
//! `JSON.stringify` does (`\"`, `\\`, the five short control escapes, `\u00xx` in lower case for
//! the other control characters, nothing else). Writing exports this way makes an export of
//! an imported snapshot byte-identical to the snapshot.

use std::io;

use serde::Serialize;
use serde_json::ser::Formatter;
use serde_json::{Number, Value};

/// serde_json's compact formatting with ECMAScript Number::toString for doubles (serde_json
/// writes non-finite doubles as `null` before they reach it, as `JSON.stringify` does).
struct EcmaScriptNumbers;

impl Formatter for EcmaScriptNumbers {
    fn write_f64<W: ?Sized + io::Write>(&mut self, writer: &mut W, value: f64) -> io::Result<()> {
        writer.write_all(ryu_js::Buffer::new().format_finite(value).as_bytes())
    }
}

fn write(value: &(impl Serialize + ?Sized), out: &mut Vec<u8>) {
    let mut serializer = serde_json::Serializer::with_formatter(out, EcmaScriptNumbers);
    // Neither a Value (string keys only) nor a str or f64 can fail to serialize into memory.
    value.serialize(&mut serializer).expect("JSON text of an in-memory value");
}

/// Appends `value` as compact JSON text.
pub fn write_value(value: &Value, out: &mut Vec<u8>) {
    write(value, out);
}

/// Appends `text` as a JSON string.
pub fn write_string(text: &str, out: &mut Vec<u8>) {
    write(text, out);
}

/// Appends a double as ECMAScript writes it (`null` for NaN and the infinities).
pub fn write_f64(value: f64, out: &mut Vec<u8>) {
    write(&value, out);
}

pub fn to_text(value: &Value) -> String {
    let mut out = Vec::new();
    write_value(value, &mut out);
    String::from_utf8(out).expect("serde_json writes UTF-8")
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
            (f64::NAN, "null"),
            (f64::INFINITY, "null"),
        ];
        for (value, expected) in cases {
            let mut out = Vec::new();
            write_f64(value, &mut out);
            assert_eq!(String::from_utf8(out).unwrap(), expected, "{value:e}");
        }
        // Inside a value too, integers as integers.
        let value = serde_json::json!({"a": [1.0048658277929109e-05, 14150.0, 7, -3, 18446744073709551615u64]});
        assert_eq!(to_text(&value), r#"{"a":[0.000010048658277929109,14150,7,-3,18446744073709551615]}"#);
    }

    #[test]
    fn strings_escape_like_json_stringify() {
        let mut out = Vec::new();
        write_string("a\"b\\c\nd\u{1}e\u{7f}·\u{2028}\u{8}\u{c}\r\t\u{1f}/", &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), "\"a\\\"b\\\\c\\nd\\u0001e\u{7f}·\u{2028}\\b\\f\\r\\t\\u001f/\"");
    }

    #[test]
    fn integral_doubles_read_back_as_integers() {
        assert_eq!(number_from_f64(14150.0), Value::from(14150u64));
        assert!(number_from_f64(0.5).is_f64());
        assert!(number_from_f64(1e300).is_f64());
    }
}
