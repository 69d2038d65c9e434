//! How a read command prints its answer (an `/api/v1` JSON document): as text for a person,
//! as the document itself (`--json`), or one JSON object a line (`--jsonl`); and the small
//! pieces the text renderings share. Everything goes through `crate::term`.

use clap::Args;
use serde_json::Value;

use crate::term::outln;

#[derive(Args, Clone, Copy, Debug, Default)]
pub struct FormatArgs {
    /// Print the answer as one JSON document.
    #[arg(long, conflicts_with = "jsonl")]
    pub json: bool,
    /// Print one JSON object a line: each item of a list, or the one answer.
    #[arg(long)]
    pub jsonl: bool,
}

impl FormatArgs {
    /// Prints `document`: the text `render` makes of it, or JSON. `items` names the list
    /// `--jsonl` prints a line per item of (`None`: the whole document on one line).
    pub fn print(&self, document: &Value, items: Option<&str>, render: impl FnOnce(&Value) -> String) {
        if self.json {
            outln!("{}", serde_json::to_string_pretty(document).unwrap_or_default());
        } else if self.jsonl {
            let lines: Vec<&Value> = match items {
                Some(key) => list(document, key).iter().collect(),
                None => vec![document],
            };
            let mut out = String::new();
            for line in lines {
                out.push_str(&line.to_string());
                out.push('\n');
            }
            if !out.is_empty() {
                crate::term::out(&out);
            }
        } else {
            crate::term::out(&render(document));
        }
    }
}

/// `document[key]` as text; "" when absent or not a string.
pub fn text<'a>(document: &'a Value, key: &str) -> &'a str {
    document.get(key).and_then(Value::as_str).unwrap_or("")
}

/// `document[key]` as text, when it is a string.
pub fn opt_text<'a>(document: &'a Value, key: &str) -> Option<&'a str> {
    document.get(key).and_then(Value::as_str)
}

/// `document[key]` as a list; empty when absent.
pub fn list<'a>(document: &'a Value, key: &str) -> &'a [Value] {
    document.get(key).and_then(Value::as_array).map(Vec::as_slice).unwrap_or(&[])
}

pub fn number(document: &Value, key: &str) -> Option<f64> {
    document.get(key).and_then(Value::as_f64)
}

/// `document[key]` when present and not null.
pub fn present<'a>(document: &'a Value, key: &str) -> Option<&'a Value> {
    document.get(key).filter(|value| !value.is_null())
}

/// A scalar as a person reads it: strings without quotes, the rest as JSON.
pub fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A measure with its unit, as the web prints it (19451 ns → 19.5 µs).
pub fn measure(value: Option<f64>, unit: Option<&str>) -> String {
    ki_model::units::value(value, unit)
}

/// The first 8 characters of an id.
pub fn short(id: &str) -> &str {
    id.get(..8).unwrap_or(id)
}

/// A comparison key, cut to what tells groups apart in a table.
pub fn short_key(key: &str) -> String {
    format!("{}…", key.get(..23).unwrap_or(key))
}

/// `name=value …` of an object of axes.
pub fn axes_text(axes: Option<&Value>) -> String {
    let Some(Value::Object(axes)) = axes else { return String::new() };
    axes.iter().map(|(k, v)| format!("{k}={}", scalar(v))).collect::<Vec<_>>().join(" ")
}

/// A list of strings joined by `separator`.
pub fn joined(document: &Value, key: &str, separator: &str) -> String {
    list(document, key).iter().map(scalar).collect::<Vec<_>>().join(separator)
}

/// A plain text table: left-aligned columns, two spaces apart.
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    pub fn new(headers: &[&str]) -> Table {
        Table { headers: headers.iter().map(|h| h.to_string()).collect(), rows: Vec::new() }
    }

    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    pub fn render(&self) -> String {
        let width = |i: usize| {
            self.rows
                .iter()
                .map(|r| r.get(i).map(|c| c.chars().count()).unwrap_or(0))
                .chain([self.headers[i].chars().count()])
                .max()
                .unwrap_or(0)
        };
        let widths: Vec<usize> = (0..self.headers.len()).map(width).collect();
        let mut out = String::new();
        for cells in std::iter::once(&self.headers).chain(&self.rows) {
            let line: Vec<String> = cells
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!("{c}{}", " ".repeat(w.saturating_sub(c.chars().count()))))
                .collect();
            out.push_str(line.join("  ").trim_end());
            out.push('\n');
        }
        out
    }
}
