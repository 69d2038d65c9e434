//! `ki runs`: every run, filtered, a page at a time behind an opaque cursor, ordered by id —
//! the answer of `GET /api/v1/runs` (`ki_ranking::feed::list_runs`).

use std::process::ExitCode;

use clap::Args;
use ki_ranking::feed::{PageRequest, RunFilter};
use serde_json::Value;

use super::output::{FormatArgs, Table, list, measure, number, opt_text, scalar, short, text};
use crate::reader::{ReadArgs, Reader};

#[derive(Args)]
pub struct RunsArgs {
    /// An operation's name, slug or alias.
    #[arg(long)]
    pub operation: Option<String>,
    /// A workload's id or digest.
    #[arg(long)]
    pub workload: Option<String>,
    /// A hardware model (`NVIDIA H200`), ignoring case.
    #[arg(long)]
    pub hardware: Option<String>,
    /// reported, reproducible, verified or replicated.
    #[arg(long)]
    pub evidence: Option<String>,
    /// A source's slug, name or id.
    #[arg(long)]
    pub source: Option<String>,
    /// An implementation's slug or id.
    #[arg(long)]
    pub implementation: Option<String>,
    /// The run's recorded status (`passed`, `incorrect_numerical`, …).
    #[arg(long)]
    pub status: Option<String>,
    /// The next page: the cursor the previous one ended with.
    #[arg(long)]
    pub cursor: Option<String>,
    /// Runs per page, 1 to 1000 (default 100).
    #[arg(long)]
    pub limit: Option<usize>,
    #[command(flatten)]
    pub format: FormatArgs,
    #[command(flatten)]
    pub read: ReadArgs,
}

pub fn run(args: RunsArgs) -> anyhow::Result<ExitCode> {
    let filter = RunFilter {
        operation: args.operation,
        workload: args.workload,
        hardware: args.hardware,
        evidence: args.evidence,
        source: args.source,
        implementation: args.implementation,
        status: args.status,
    };
    let page = PageRequest { cursor: args.cursor, limit: args.limit };
    let answer = Reader::new(&args.read)?.runs(&filter, &page)?;
    args.format.print(&answer, Some("runs"), render);
    Ok(ExitCode::SUCCESS)
}

pub fn render(page: &Value) -> String {
    let runs = list(page, "runs");
    let mut table = Table::new(&[
        "run",
        "operation",
        "implementation",
        "hardware",
        "value",
        "rank",
        "evidence",
        "status",
        "observed",
    ]);
    for run in runs {
        let observed = text(run, "observedAt");
        table.row(vec![
            short(text(run, "id")).to_string(),
            text(run, "operation").to_string(),
            text(run, "implementation").to_string(),
            opt_text(run, "hardware").unwrap_or("—").to_string(),
            measure(number(run, "value"), opt_text(run, "unit")),
            match run["rank"].as_u64() {
                Some(rank) => format!("#{rank}"),
                None => format!(
                    "unranked ({})",
                    list(run, "ineligibility").iter().map(scalar).collect::<Vec<_>>().join(", ")
                ),
            },
            text(run, "evidence").to_string(),
            text(run, "status").to_string(),
            observed.get(..10).unwrap_or(observed).to_string(),
        ]);
    }
    let mut out = if runs.is_empty() { String::new() } else { table.render() };
    out.push_str(&format!("{} of {} run(s)\n", runs.len(), scalar(&page["total"])));
    if let Some(cursor) = opt_text(page, "nextCursor") {
        out.push_str(&format!("next page: --cursor {cursor}\n"));
    }
    out
}
