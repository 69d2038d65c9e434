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

