//! Export-format rows ↔ typed column values: validation of incoming rows (every problem
//! named by line and JSON pointer), the canonical text of a row, and rows read back.

use serde_json::{Map, Value};

use crate::error::RowProblem;
use crate::json_text;
use crate::schema::{API_VERSION, Column, Kind, Table};

/// One column value as it is bound to or read from SQL. JSON, UUIDs, digests and
/// timestamps travel as text.
#[derive(Debug, Clone, PartialEq)]
pub enum SqlValue {
    Text(Option<String>),
    Int(Option<i64>),
    Real(Option<f64>),
    Bool(Option<bool>),
}

/// How a kind is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Storage {
    Text,
    Int,
    Real,
    Bool,
}

pub fn storage(kind: Kind) -> Storage {
    match kind {
        Kind::Count | Kind::PositiveCount => Storage::Int,
        Kind::Measure => Storage::Real,
        Kind::Bool => Storage::Bool,
        Kind::Uuid
        | Kind::Text
        | Kind::Digest
        | Kind::Timestamp
        | Kind::Json
        | Kind::JsonArray
        | Kind::Enum(_)
        | Kind::SchemaVersion => Storage::Text,
    }
}

impl SqlValue {
    pub fn null(kind: Kind) -> SqlValue {
        match storage(kind) {
            Storage::Text => SqlValue::Text(None),
            Storage::Int => SqlValue::Int(None),
            Storage::Real => SqlValue::Real(None),
            Storage::Bool => SqlValue::Bool(None),
        }
    }

    pub fn as_text(&self) -> Option<&str> {
        match self {
            SqlValue::Text(Some(text)) => Some(text),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self, SqlValue::Text(None) | SqlValue::Int(None) | SqlValue::Real(None) | SqlValue::Bool(None))
    }
}

/// A validated incoming row: its values in the table's column order.
#[derive(Debug, Clone)]
pub struct PreparedRow {
    pub line: usize,
    pub values: Vec<SqlValue>,
}

/// The identity of a row within its table: its `id`, or both alias columns joined.
pub fn row_key(table: &Table, values: &[SqlValue]) -> String {
    let mut key = String::new();
    for (index, name) in table.key.iter().enumerate() {
        let position = table.columns.iter().position(|column| column.json == *name).unwrap_or(0);
        if index > 0 {
            key.push('\u{0}');
        }
        key.push_str(values[position].as_text().unwrap_or(""));
    }
    key
}

/// Checks an export row against its table and turns it into column values.
pub fn prepare_row(table: &'static Table, line: usize, row: &Map<String, Value>) -> Result<PreparedRow, RowProblem> {
    let problem =
        |pointer: String, message: String| RowProblem { line, table: table.name.to_string(), pointer, message };
    // An unknown column is reported before anything else about the row. Searching for
    // one costs columns × keys comparisons, so it is done only when the row is
    // already known to be wrong or to have more keys than the table has columns.
    let unknown_column = || {
        row.keys().find(|key| table.column(key).is_none()).map(|unknown| {
            let known: Vec<&str> = table.columns.iter().map(|column| column.json).collect();
            problem(
                format!("/row/{}", escape_pointer(unknown)),
                format!("unknown column of {} (its columns: {})", table.name, known.join(", ")),
            )
        })
    };
    let mut values = Vec::with_capacity(table.columns.len());
    let mut found = 0;
    // Rows usually hold their columns in the table's order (exports are written so): each
    // column is first looked for at the next key, and looked up by name only when not there.
    let mut next = row.iter().peekable();
    for column in table.columns {
        let in_order = match next.peek() {
            Some((key, value)) if key.as_str() == column.json => {
                let value = *value;
                next.next();
                Some(value)
            }
            _ => None,
        };
        let value = match in_order.or_else(|| row.get(column.json)) {
            Some(value) => {
                found += 1;
                column_value(column, value)
            }
            None if column.added_later => Ok(SqlValue::null(column.kind)),
            None => Err("missing column".to_string()),
        };
        match value {
            Ok(value) => values.push(value),
            Err(message) => {
                return Err(unknown_column().unwrap_or_else(|| problem(format!("/row/{}", column.json), message)));
            }
        }
    }
    // Every key that is not one of the table's columns is unknown.
    if row.len() != found
        && let Some(unknown) = unknown_column()
    {
        return Err(unknown);
    }
    check_row_rules(table, &values).map_err(|(pointer, message)| problem(pointer, message))?;
    Ok(PreparedRow { line, values })
}

fn escape_pointer(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn column_value(column: &Column, value: &Value) -> Result<SqlValue, String> {
    if value.is_null() {
        return if column.nullable { Ok(SqlValue::null(column.kind)) } else { Err("must not be null".to_string()) };
    }
    let text = |expected: &str| {
        value.as_str().map(str::to_string).ok_or_else(|| format!("must be {expected}, found {}", type_name(value)))
    };
    Ok(match column.kind {
        Kind::Uuid => {
            let text = text("a UUID string")?;
            check_uuid(&text)?;
            SqlValue::Text(Some(text))
        }
        Kind::Text => SqlValue::Text(Some(text("a string")?)),
        Kind::Digest => {
            let text = text("a sha256 digest string")?;
            if !is_digest(&text) {
                return Err(format!("{text:?} is not sha256: followed by 64 lowercase hex digits"));
            }
            SqlValue::Text(Some(text))
        }
        Kind::Timestamp => {
            let text = text("a timestamp string")?;
            if !is_utc_timestamp(&text) {
                return Err(format!("{text:?} is not a UTC timestamp like 2026-08-15T02:02:57.440Z"));
            }
            SqlValue::Text(Some(text))
        }
        Kind::Count | Kind::PositiveCount => {
            let number = value.as_i64().ok_or_else(|| format!("must be an integer, found {}", type_name(value)))?;
            let minimum = if column.kind == Kind::PositiveCount { 1 } else { 0 };
            if number < minimum {
                return Err(format!("{number} is below the minimum {minimum}"));
            }
            SqlValue::Int(Some(number))
        }
        Kind::Measure => {
            let Value::Number(number) = value else {
                return Err(format!("must be a number, found {}", type_name(value)));
            };
            // A stored double must read back as the same JSON number.
            if number.as_u64().is_some_and(|n| n > (1u64 << 53)) || number.as_i64().is_some_and(|n| n < -(1i64 << 53)) {
                return Err(format!("{number} is an integer too large to keep exactly"));
            }
            let float = number.as_f64().ok_or_else(|| format!("{number} is not a finite number"))?;
            if !float.is_finite() || float.is_nan() {
                return Err(format!("{number} is not a finite number"));
            }
            if float < 0.0 {
                return Err(format!("{number} is negative"));
            }
            SqlValue::Real(Some(float))
        }
        Kind::Bool => SqlValue::Bool(Some(
            value.as_bool().ok_or_else(|| format!("must be true or false, found {}", type_name(value)))?,
        )),
        Kind::Json => SqlValue::Text(Some(json_text::to_text(value))),
        Kind::JsonArray => {
            if !value.is_array() {
                return Err(format!("must be an array, found {}", type_name(value)));
            }
            SqlValue::Text(Some(json_text::to_text(value)))
        }
        Kind::Enum(allowed) => {
            let text = text("a string")?;
            if !allowed.contains(&text.as_str()) {
                return Err(format!("{text:?} is not one of {}", allowed.join(", ")));
            }
            SqlValue::Text(Some(text))
        }
        Kind::SchemaVersion => {
            let text = text("a string")?;
            if text != API_VERSION {
                return Err(format!("{text:?} is not {API_VERSION}"));
            }
            SqlValue::Text(Some(text))
        }
    })
}

/// Rules across columns, mirrored by table CHECKs in the migrations.
fn check_row_rules(table: &Table, values: &[SqlValue]) -> Result<(), (String, String)> {
    let get = |name: &str| table.columns.iter().position(|column| column.json == name).map(|index| &values[index]);
    if let (Some(reason), Some(at)) = (get("retractionReason"), get("retractedAt"))
        && !reason.is_null()
        && at.is_null()
    {
        return Err(("/row/retractionReason".into(), "a retraction reason needs retractedAt".into()));
    }
    if let (Some(value), Some(unit)) = (get("primaryValue"), get("primaryUnit"))
        && value.is_null() != unit.is_null()
    {
        return Err((
            "/row/primaryUnit".into(),
            "primaryValue and primaryUnit must both be set or both be null".into(),
        ));
    }
    if let (Some(SqlValue::Real(Some(low))), Some(SqlValue::Real(Some(high)))) =
        (get("uncertaintyLow"), get("uncertaintyHigh"))
        && low > high
    {
        return Err(("/row/uncertaintyLow".into(), format!("{low} is above uncertaintyHigh {high}")));
    }
    Ok(())
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// UUIDs are kept in canonical lowercase hyphenated form, the form PostgreSQL returns,
/// so both backends give back the same text.
fn check_uuid(text: &str) -> Result<(), String> {
    match uuid::Uuid::try_parse(text) {
        Ok(parsed) if *parsed.hyphenated().encode_lower(&mut uuid::Uuid::encode_buffer()) == *text => Ok(()),
        Ok(_) => Err(format!("{text:?} is not in canonical lowercase hyphenated UUID form")),
        Err(error) => Err(format!("{text:?} is not a UUID: {error}")),
    }
}

pub fn is_digest(text: &str) -> bool {
    text.len() == 71
        && text.starts_with("sha256:")
        && text[7..].bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
}

/// `YYYY-MM-DDTHH:MM[:SS[.fraction]]Z`, the form the schemas accept.
fn is_utc_timestamp(text: &str) -> bool {
    let bytes = text.as_bytes();
    let digits =
        |range: std::ops::Range<usize>| bytes.get(range).is_some_and(|part| part.iter().all(u8::is_ascii_digit));
    if bytes.len() < 17 || !text.ends_with('Z') {
        return false;
    }
    let shape = digits(0..4)
        && bytes[4] == b'-'
        && digits(5..7)
        && bytes[7] == b'-'
        && digits(8..10)
        && bytes[10] == b'T'
        && digits(11..13)
        && bytes[13] == b':'
        && digits(14..16);
    if !shape {
        return false;
    }
    let rest = &text[16..text.len() - 1];
    if rest.is_empty() {
        return true;
    }
    let Some(seconds) = rest.strip_prefix(':') else { return false };
    let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, "0"));
    let month: u32 = text[5..7].parse().unwrap_or(0);
    let day: u32 = text[8..10].parse().unwrap_or(0);
    let hour: u32 = text[11..13].parse().unwrap_or(99);
    let minute: u32 = text[14..16].parse().unwrap_or(99);
    whole.len() == 2
        && whole.bytes().all(|byte| byte.is_ascii_digit())
        && !fraction.is_empty()
        && fraction.bytes().all(|byte| byte.is_ascii_digit())
        && (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && hour < 24
        && minute < 60
        && whole < "60"
}

/// The row as export text: columns in table order, JSON columns spliced in as stored,
/// numbers in ECMAScript form, a null column added later left out. Equal rows give equal
/// text on both backends.
pub fn render_row(table: &Table, values: &[SqlValue], out: &mut Vec<u8>) {
    out.push(b'{');
    let mut first = true;
    for (column, value) in table.columns.iter().zip(values) {
        if column.added_later && value.is_null() {
            continue;
        }
        if !first {
            out.push(b',');
        }
        first = false;
        json_text::write_string(column.json, out);
        out.push(b':');
        match value {
            SqlValue::Text(None) | SqlValue::Int(None) | SqlValue::Real(None) | SqlValue::Bool(None) => {
                out.extend_from_slice(b"null")
            }
            SqlValue::Text(Some(text)) => match column.kind {
                // Stored as the JSON text it was written as.
                Kind::Json | Kind::JsonArray => out.extend_from_slice(text.as_bytes()),
                _ => json_text::write_string(text, out),
            },
            SqlValue::Int(Some(number)) => out.extend_from_slice(number.to_string().as_bytes()),
            SqlValue::Real(Some(number)) => json_text::write_f64(*number, out),
            SqlValue::Bool(Some(flag)) => out.extend_from_slice(if *flag { b"true" } else { b"false" }),
        }
    }
    out.push(b'}');
}

pub fn rendered(table: &Table, values: &[SqlValue]) -> String {
    let mut out = Vec::new();
    render_row(table, values, &mut out);
    String::from_utf8(out).expect("rows render as UTF-8")
}

/// The row as an export-format JSON object (camelCase keys, table column order, a null
/// column added later left out, as in exports).
pub fn to_json_row(table: &Table, values: &[SqlValue]) -> Result<Map<String, Value>, String> {
    let mut row = Map::with_capacity(table.columns.len());
    for (column, value) in table.columns.iter().zip(values) {
        if column.added_later && value.is_null() {
            continue;
        }
        let json = match value {
            SqlValue::Text(None) | SqlValue::Int(None) | SqlValue::Real(None) | SqlValue::Bool(None) => Value::Null,
            SqlValue::Text(Some(text)) => match column.kind {
                Kind::Json | Kind::JsonArray => serde_json::from_str(text)
                    .map_err(|error| format!("{}.{} holds invalid JSON: {error}", table.name, column.sql))?,
                _ => Value::String(text.clone()),
            },
            SqlValue::Int(Some(number)) => Value::from(*number),
            SqlValue::Real(Some(number)) => json_text::number_from_f64(*number),
            SqlValue::Bool(Some(flag)) => Value::Bool(*flag),
        };
        row.insert(column.json.to_string(), json);
    }
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_must_be_utc() {
        assert!(is_utc_timestamp("2026-08-15T02:02:57.440Z"));
        assert!(is_utc_timestamp("2025-09-04T19:30:14Z"));
        assert!(is_utc_timestamp("2025-09-04T19:30Z"));
        assert!(!is_utc_timestamp("2025-09-04T19:30:14+02:00"));
        assert!(!is_utc_timestamp("2025-13-04T19:30:14Z"));
        assert!(!is_utc_timestamp("2025-09-04 19:30:14Z"));
        assert!(!is_utc_timestamp("2025-09-04T19:30:14.Z"));
    }

    #[test]
    fn rows_are_checked_column_by_column() {
        let table = crate::schema::table("measurements").unwrap();
        let good: Map<String, Value> = serde_json::from_str(
            r#"{"id":"01a0032e-d5df-7898-9560-e4836c2af4ef","runId":"01a0032e-d57a-74d8-8b5c-15a3ea25ed78","metric":"latency","statistic":"mean","unit":"ns","value":14150,"sampleCount":null}"#,
        )
        .unwrap();
        let prepared = prepare_row(table, 7, &good).unwrap();
        assert_eq!(rendered(table, &prepared.values), json_text::to_text(&Value::Object(good.clone())));
        assert_eq!(to_json_row(table, &prepared.values).unwrap(), good);

        let mut negative = good.clone();
        negative.insert("value".into(), Value::from(-1.5));
        let problem = prepare_row(table, 7, &negative).unwrap_err();
        assert_eq!((problem.line, problem.pointer.as_str()), (7, "/row/value"));

        let mut unknown = good.clone();
        unknown.insert("extra".into(), Value::Null);
        assert_eq!(prepare_row(table, 7, &unknown).unwrap_err().pointer, "/row/extra");
        // An unknown column is named before a missing one.
        unknown.shift_remove("value");
        assert_eq!(prepare_row(table, 7, &unknown).unwrap_err().pointer, "/row/extra");
        unknown.shift_remove("extra");
        assert_eq!(prepare_row(table, 7, &unknown).unwrap_err().pointer, "/row/value");

        let mut upper = good;
        upper.insert("id".into(), Value::from("01A0032E-D5DF-7898-9560-E4836C2AF4EF"));
        assert_eq!(prepare_row(table, 7, &upper).unwrap_err().pointer, "/row/id");
    }
}
