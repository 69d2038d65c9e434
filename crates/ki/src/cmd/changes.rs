//! `ki changes --since TIME`: what changed after a time — record events, publications,
//! corrections, finished verifications — oldest first, a page at a time; the answer of
//! `GET /api/v1/feed` (`ki_ranking::feed::feed_page`). For a CI job that notices new records.

use std::process::ExitCode;

use clap::Args;
use ki_ranking::feed::PageRequest;
use serde_json::Value;

use super::output::{FormatArgs, joined, list, measure, number, opt_text, scalar, short, short_key, text};
use crate::reader::{ReadArgs, Reader};

#[derive(Args)]
pub struct ChangesArgs {
    /// Only what happened strictly after this time (RFC 3339: 2026-12-01T00:00:00Z).
    #[arg(long)]
    pub since: Option<String>,
    /// The next page: the cursor the previous one ended with (with the same --since).
    #[arg(long)]
    pub cursor: Option<String>,
    /// Events per page, 1 to 1000 (default 100).
    #[arg(long)]
    pub limit: Option<usize>,
    #[command(flatten)]
    pub format: FormatArgs,
    #[command(flatten)]
    pub read: ReadArgs,
}

pub fn run(args: ChangesArgs) -> anyhow::Result<ExitCode> {
    let page = PageRequest { cursor: args.cursor, limit: args.limit };
    let answer = Reader::new(&args.read)?.changes(args.since.as_deref(), &page)?;
    args.format.print(&answer, Some("events"), render);
    Ok(ExitCode::SUCCESS)
}

/// One line per event: when, what kind, what.
pub fn render(page: &Value) -> String {
    let mut out = String::new();
    let events = list(page, "events");
    for event in events {
        let what = match text(event, "kind") {
            "record" => format!(
                "{} ({}) took the record of {} in {} ({}; before: {})",
                short(text(event, "runId")),
                measure(number(event, "value"), opt_text(event, "unit")),
                opt_text(event, "operation").unwrap_or("?"),
                short_key(text(event, "comparisonKey")),
                text(event, "cause"),
                opt_text(event, "previousRunId").map(short).unwrap_or("none"),
            ),
            "publication" => format!(
                "{} run(s) published from {} ({})",
                scalar(&event["runCount"]),
                opt_text(event, "source").unwrap_or("?"),
                joined(event, "operations", ", "),
            ),
            "correction" => {
                let by = opt_text(event, "byRunId").map(|by| format!(" by {}", short(by))).unwrap_or_default();
                format!(
                    "{} run {}{by} by {}: {}",
                    text(event, "action"),
                    short(text(event, "runId")),
                    text(event, "actor"),
                    text(event, "reason")
                )
            }
            "verification" => format!(
                "verification {} of {} {}{}{}",
                short(text(event, "jobId")),
                text(event, "subject"),
                text(event, "state"),
                opt_text(event, "verdict").map(|v| format!(": {v}")).unwrap_or_default(),
                opt_text(event, "summary").map(|s| format!(" ({s})")).unwrap_or_default(),
            ),
            other => other.to_string(),
        };
        out.push_str(&format!("{}  {:<12}  {what}\n", text(event, "at"), text(event, "kind")));
    }
    let since = opt_text(page, "since").map(|s| format!(" after {s}")).unwrap_or_default();
    out.push_str(&format!("{} change(s){since}\n", events.len()));
    if let Some(cursor) = opt_text(page, "nextCursor") {
        out.push_str(&format!("next page: --cursor {cursor}\n"));
    }
    out
}
