//! `ki records`: the record-event ledger newest first, a page at a time — who took the record
//! of a comparison group, and when — the answer of `GET /api/v1/records`.

use std::process::ExitCode;

use clap::Args;
use serde_json::Value;

use super::output::{FormatArgs, Table, list, present, scalar, short_key, text};
use crate::reader::{ReadArgs, Reader};

#[derive(Args)]
pub struct RecordsArgs {
    /// Which page (100 events each, newest first).
    #[arg(long, default_value_t = 1)]
    pub page: usize,
    #[command(flatten)]
    pub format: FormatArgs,
    #[command(flatten)]
    pub read: ReadArgs,
}

pub fn run(args: RecordsArgs) -> anyhow::Result<ExitCode> {
    let answer = Reader::new(&args.read)?.records(args.page)?;
    args.format.print(&answer, Some("records"), render);
    Ok(ExitCode::SUCCESS)
}

pub fn render(answer: &Value) -> String {
    let mut table = Table::new(&["at", "cause", "operation", "comparison group", "new holder", "value", "previous"]);
    for record in list(answer, "records") {
        let holder = present(record, "holder");
        let previous = match present(record, "previous") {
            Some(previous) => format!("{} {}", text(previous, "label"), text(record, "previousDisplay")),
            None => "—".into(),
        };
        table.row(vec![
            text(record, "at").to_string(),
            text(record, "cause").to_string(),
            present(record, "operation").map(|o| text(o, "label")).unwrap_or("?").to_string(),
            short_key(text(record, "comparisonKey")),
            holder
                .map(|h| format!("{} on {} ({})", text(h, "implementation"), text(h, "hardware"), text(h, "shortId")))
                .unwrap_or_else(|| "?".into()),
            holder.map(|h| text(h, "display").to_string()).unwrap_or_else(|| "?".into()),
            previous.trim_end().to_string(),
        ]);
    }
    let mut out = table.render();
    out.push_str(&format!(
        "page {} of {} · {} record event(s) in all\n",
        scalar(&answer["page"]),
        scalar(&answer["pages"]),
        scalar(&answer["total"])
    ));
    out
}

/// Most record events one `records_since` answer lists (newest first); the rest are counted.
pub const MAX_EVENTS_SINCE: usize = 1000;

/// `since` as nanoseconds: a full RFC 3339 time, or a date meaning its midnight UTC.
pub fn parse_since(text: &str) -> anyhow::Result<i64> {
    let text = text.trim();
    let full = if text.len() == 10 { format!("{text}T00:00:00Z") } else { text.to_string() };
    ki_model::utc::parse_nanos(&full).map_err(|error| anyhow::anyhow!("since {text:?}: {error}"))
}

/// The record events at or after `since`, newest first: the pages of `GET /api/v1/records`
/// read until one is older (at most [`MAX_EVENTS_SINCE`] listed).
pub fn since(reader: &Reader, since: &str) -> anyhow::Result<Value> {
    let cutoff = parse_since(since)?;
    let mut records = Vec::new();
    let mut more = 0usize;
    let mut page = 1;
    'pages: loop {
        let answer = reader.records(page)?;
        for record in list(&answer, "records") {
            let at = ki_model::utc::parse_nanos(text(record, "at")).unwrap_or(i64::MIN);
            if at < cutoff {
                break 'pages;
            }
            if records.len() < MAX_EVENTS_SINCE {
                records.push(record.clone());
            } else {
                more += 1;
            }
        }
        if answer["page"].as_u64() >= answer["pages"].as_u64() {
            break;
        }
        page += 1;
    }
    Ok(serde_json::json!({ "since": since.trim(), "records": records, "omitted": more }))
}
