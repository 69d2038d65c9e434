//! `ki search`: operations, implementations, projects and hardware whose text holds every
//! word of a query, the answer of `GET /api/v1/search`.

use std::process::ExitCode;

use clap::Args;
use serde_json::Value;

use super::output::{FormatArgs, Table, list, text};
use crate::reader::{ReadArgs, Reader};

#[derive(Args)]
pub struct SearchArgs {
    /// Words to look for (every one must match; case does not matter).
    #[arg(required = true, num_args = 1..)]
    pub words: Vec<String>,
    #[command(flatten)]
    pub format: FormatArgs,
    #[command(flatten)]
    pub read: ReadArgs,
}

pub fn run(args: SearchArgs) -> anyhow::Result<ExitCode> {
    let answer = Reader::new(&args.read)?.search(&args.words.join(" "))?;
    args.format.print(&answer, Some("results"), render);
    Ok(if list(&answer, "results").is_empty() { ExitCode::FAILURE } else { ExitCode::SUCCESS })
}

pub fn render(answer: &Value) -> String {
    let results = list(answer, "results");
    let mut table = Table::new(&["kind", "name", "detail", "page"]);
    for result in results {
        table.row(vec![
            text(result, "kind").to_string(),
            text(result, "label").to_string(),
            text(result, "detail").to_string(),
            text(result, "href").to_string(),
        ]);
    }
    let mut out = if results.is_empty() { String::new() } else { table.render() };
    out.push_str(&format!("{} result(s) for {:?}\n", results.len(), text(answer, "query")));
    out
}
