//! `ki search`: the search grammar's answer (`GET /api/v1/search`): the ranked answer for the
//! best-matching operation, runs named by id, digest or external id, and the matches with their
//! run counts and GPUs.

use std::process::ExitCode;

use clap::Args;
use serde_json::Value;

use super::output::{FormatArgs, Table, list, text};
use crate::reader::{ReadArgs, Reader};

#[derive(Args)]
pub struct SearchArgs {
    /// Words (every one must match; case does not matter), filters (gpu:h200 dtype:bf16 arch:
    /// model: family: source: trust:verified license: language: installable:yes) and axes
    /// (batch_size=16); a run id, digest or external id finds its run.
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
    let found = !list(&answer, "results").is_empty() || !list(&answer, "records").is_empty();
    Ok(if found { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

pub fn render(answer: &Value) -> String {
    let mut out = String::new();
    for note in list(&answer["request"], "notes") {
        out.push_str(&format!("note: {}\n", note.as_str().unwrap_or("")));
    }
    for run in list(answer, "records") {
        out.push_str(&format!(
            "run {} ({}, matched by {}): {}\n",
            text(run, "id"),
            text(run, "hardware"),
            text(run, "matchedBy"),
            text(run, "label")
        ));
    }
    let resolved = &answer["answer"];
    if let Some(operation) = resolved["operation"]["name"].as_str() {
        out.push_str(&format!("answer: {operation} ({})\n", text(resolved, "mode")));
        for cohort in list(resolved, "cohorts").iter().take(5) {
            if let Some(first) = list(cohort, "fastest").first() {
                let value = ki_model::units::value(first["value"].as_f64(), first["unit"].as_str());
                out.push_str(&format!(
                    "  #1 {} {value} on {}\n",
                    text(first, "implementation"),
                    cohort["hardware"].as_str().unwrap_or("-")
                ));
            }
        }
    }
    let results = list(answer, "results");
    let mut table = Table::new(&["kind", "name", "detail", "runs", "GPUs", "page"]);
    for result in results {
        table.row(vec![
            text(result, "kind").to_string(),
            text(result, "label").to_string(),
            text(result, "detail").to_string(),
            result["runs"].as_u64().unwrap_or(0).to_string(),
            list(result, "gpus").iter().filter_map(Value::as_str).take(3).collect::<Vec<_>>().join(", "),
            text(result, "href").to_string(),
        ]);
    }
    if !results.is_empty() {
        out.push_str(&table.render());
    }
    let total = answer["total"].as_u64().unwrap_or(results.len() as u64);
    out.push_str(&format!("{total} result(s) for {:?}\n", text(answer, "query")));
    if let Some(corrected) = answer["didYouMean"].as_str() {
        out.push_str(&format!("read as: {corrected} (the results above are its)\n"));
    }
    out
}
