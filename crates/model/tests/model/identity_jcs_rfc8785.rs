//! RFC 8785 test vectors, written from the RFC's text: the number serialization table
//! of Appendix B, the sample of section 3.2.2 and the sorting sample of section 3.2.3,
//! plus the examples the project's issue names.

use ki_model::jcs::{JcsError, canonicalize, find_unsafe_integer_literal};
use serde_json::{Value, json};

/// Appendix B: IEEE 754 bit patterns and their canonical text.
const NUMBER_VECTORS: &[(u64, &str)] = &[
    (0x0000000000000000, "0"),
    (0x8000000000000000, "0"),
    (0x0000000000000001, "5e-324"),
    (0x8000000000000001, "-5e-324"),
    (0x7fefffffffffffff, "1.7976931348623157e+308"),
    (0xffefffffffffffff, "-1.7976931348623157e+308"),
    (0x4340000000000000, "9007199254740992"),
    (0xc340000000000000, "-9007199254740992"),
    (0x4430000000000000, "295147905179352830000"),
    (0x44b52d02c7e14af5, "9.999999999999997e+22"),
    (0x44b52d02c7e14af6, "1e+23"),
    (0x44b52d02c7e14af7, "1.0000000000000001e+23"),
    (0x444b1ae4d6e2ef4e, "999999999999999700000"),
    (0x444b1ae4d6e2ef4f, "999999999999999900000"),
    (0x444b1ae4d6e2ef50, "1e+21"),
    (0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"),
    (0x3eb0c6f7a0b5ed8d, "0.000001"),
    (0x41b3de4355555553, "333333333.3333332"),
    (0x41b3de4355555554, "333333333.33333325"),
    (0x41b3de4355555555, "333333333.3333333"),
    (0x41b3de4355555556, "333333333.3333334"),
    (0x41b3de4355555557, "333333333.33333343"),
    (0xbecbf647612f3696, "-0.0000033333333333333333"),
    (0x43143ff3c1cb0959, "1424953923781206.2"),
];

#[test]
fn appendix_b_numbers() {
    for &(bits, expected) in NUMBER_VECTORS {
        let value = Value::from(f64::from_bits(bits));
        assert_eq!(canonicalize(&value).unwrap(), expected, "bits {bits:016x}");
    }
}

#[test]
fn appendix_b_numbers_survive_a_parse_of_their_shortest_text() {
    // The same table, read from JSON text as a manifest would be.
    for &(bits, expected) in NUMBER_VECTORS {
        let text = format!("{:e}", f64::from_bits(bits));
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(canonicalize(&value).unwrap(), expected, "text {text}");
    }
}

#[test]
fn nan_and_infinity_have_no_json_form() {
    // serde_json maps non-finite floats to null when building a Value, so the only way a
    // non-finite number reaches the writer is through `Number`, which refuses them.
    assert!(serde_json::Number::from_f64(f64::NAN).is_none());
    assert!(serde_json::Number::from_f64(f64::INFINITY).is_none());
}

#[test]
fn issue_examples() {
    let value: Value = serde_json::from_str("[1.0048658277929109e-05, 1e21, 4.50, -0.0]").unwrap();
    assert_eq!(canonicalize(&value).unwrap(), "[0.000010048658277929109,1e+21,4.5,0]");
}

#[test]
fn section_3_2_2_sample() {
    let input = r#"{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }"#;
    // The RFC's output, verbatim.
    let expected = r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#;
    let value: Value = serde_json::from_str(input).unwrap();
    assert_eq!(canonicalize(&value).unwrap(), expected);
}

#[test]
fn section_3_2_3_sorting_by_utf16_code_units() {
    let input = r#"{
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew Letter Dalet With Dagesh",
      "1": "One",
      "\ud83d\ude00": "Emoji: Grinning Face",
      "\u0080": "Control",
      "\u00f6": "Latin Small Letter O With Diaeresis"
    }"#;
    let value: Value = serde_json::from_str(input).unwrap();
    let canonical = canonicalize(&value).unwrap();
    let reparsed: serde_json::Map<String, Value> = serde_json::from_str(&canonical).unwrap();
    let order: Vec<&str> = reparsed.values().map(|v| v.as_str().unwrap()).collect();
    assert_eq!(
        order,
        [
            "Carriage Return",
            "One",
            "Control",
            "Latin Small Letter O With Diaeresis",
            "Euro Sign",
            "Emoji: Grinning Face",
            "Hebrew Letter Dalet With Dagesh",
        ]
    );
    // Only the C0 control is escaped; U+0080 and the rest are written as UTF-8.
    assert!(canonical.starts_with("{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u{80}\":\"Control\""));
}

#[test]
fn escapes_are_the_ecmascript_ones() {
    let value = json!("\u{0}\u{8}\u{9}\u{a}\u{c}\u{d}\u{1f}\u{7f}\u{2028}/\"\\");
    let expected = concat!(r#""\u0000\b\t\n\f\r\u001f"#, "\u{7f}\u{2028}", r#"/\"\\""#);
    assert_eq!(canonicalize(&value).unwrap(), expected);
}

#[test]
fn whitespace_and_member_order_do_not_matter() {
    let a: Value = serde_json::from_str(r#"{ "b" : [1, {"y":2,"x":1}], "a" : "z" }"#).unwrap();
    let b: Value = serde_json::from_str(r#"{"a":"z","b":[1.0,{"x":1,"y":2e0}]}"#).unwrap();
    assert_eq!(canonicalize(&a).unwrap(), r#"{"a":"z","b":[1,{"x":1,"y":2}]}"#);
    assert_eq!(canonicalize(&a).unwrap(), canonicalize(&b).unwrap());
}

#[test]
fn integers_above_2_pow_53_are_refused_not_changed() {
    // Within u64: serde_json keeps the integer, the writer refuses it.
    let value: Value = serde_json::from_str(r#"{"size": 9007199254740993}"#).unwrap();
    match canonicalize(&value) {
        Err(JcsError::UnsafeInteger { pointer, literal }) => {
            assert_eq!((pointer.as_str(), literal.as_str()), ("/size", "9007199254740993"));
        }
        other => panic!("expected an unsafe-integer error, got {other:?}"),
    }
    // 2^53 itself is exact.
    let value: Value = serde_json::from_str("[9007199254740992, -9007199254740992]").unwrap();
    assert_eq!(canonicalize(&value).unwrap(), "[9007199254740992,-9007199254740992]");
    // Beyond u64, serde_json has already rounded it to a double: only the text shows it.
    let text = r#"{"size": 123456789012345678901234567}"#;
    let found = find_unsafe_integer_literal(text).expect("the long literal is found");
    assert_eq!(found.literal, "123456789012345678901234567");
}

#[test]
fn agrees_with_an_independent_implementation_on_mixed_values() {
    let value = json!({
        "z": [0.1, 0.2, 0.30000000000000004, 1e-7, 123456789.125, -1.5e300, 5e-324],
        "é": {"\u{10000}": 1, "\u{ffff}": 2, "a\u{0}": 3},
        "": null,
        "t": [true, false, "\u{1b}ü"],
    });
    assert_eq!(canonicalize(&value).unwrap(), serde_json_canonicalizer::to_string(&value).unwrap());
}
