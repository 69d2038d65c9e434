//! `ki compare`: 2 to 8 runs side by side, the answer of `GET /api/v1/compare`.

use std::process::ExitCode;

use clap::Args;
use serde_json::Value;

use super::output::{FormatArgs, Table, list, measure, number, opt_text, scalar, short, text};
use crate::reader::{ReadArgs, Reader};

#[derive(Args)]
pub struct CompareArgs {
    /// 2 to 8 runs: ids, digests or unique prefixes.
    #[arg(required = true, num_args = 1..)]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub format: FormatArgs,
    #[command(flatten)]
    pub read: ReadArgs,
}

pub fn run(args: CompareArgs) -> anyhow::Result<ExitCode> {
    let comparison = Reader::new(&args.read)?.compare(&args.runs)?;
    args.format.print(&comparison, Some("runs"), render);
    Ok(ExitCode::SUCCESS)
}

pub fn render(comparison: &Value) -> String {
    let differing: Vec<&str> = list(comparison, "differingAxes").iter().filter_map(Value::as_str).collect();
    let mut headers = vec!["run", "implementation", "hardware", "value", "interval", "rank", "trust", "× #1", "× best"];
    headers.extend(&differing);
    let mut table = Table::new(&headers);
    for run in list(comparison, "runs") {
        let s = &run["summary"];
        let rank = match s["rank"].as_u64() {
            Some(rank) => format!("#{rank}"),
            None => {
                format!("unranked ({})", list(s, "ineligibility").iter().map(scalar).collect::<Vec<_>>().join(", "))
            }
        };
        let mut cells = vec![
            short(text(s, "runId")).to_string(),
            text(s, "implementation").to_string(),
            text(s, "hardware").to_string(),
            measure(number(s, "value"), opt_text(s, "unit")),
            match run["interval"].as_array().map(|pair| (number_at(pair, 0), number_at(pair, 1))) {
                Some((Some(low), Some(high))) => {
                    format!(
                        "{} – {}",
                        measure(Some(low), opt_text(s, "unit")),
                        measure(Some(high), opt_text(s, "unit"))
                    )
                }
                _ => "—".into(),
            },
            rank,
            text(s, "trust").to_string(),
            number(run, "relativeToFirst").map(|r| format!("{r:.2}")).unwrap_or_else(|| "—".into()),
            number(run, "relativeToBestInGroup").map(|r| format!("{r:.2}")).unwrap_or_else(|| "—".into()),
        ];
        cells.extend(differing.iter().map(|axis| run["axes"].get(*axis).map(scalar).unwrap_or_default()));
        table.row(cells);
    }
    let mut out = table.render();
    if comparison["sameComparisonGroup"].as_bool() == Some(true) {
        out.push_str("All runs are in one comparison group: values compare directly.\n");
    } else {
        let differing: Vec<String> = list(comparison, "differingKeys").iter().map(key_part).collect();
        out.push_str(&format!(
            "The runs are in different comparison groups (they differ in {}): × best is within each group only.\n",
            differing.join(", ")
        ));
    }
    out.push_str("Fastest first; × #1 is how many times slower than the first run.\n");
    out
}

fn number_at(pair: &[Value], i: usize) -> Option<f64> {
    pair.get(i).and_then(Value::as_f64)
}

/// A comparison-key part as `ki_ranking::KeyPart::label` words it.
fn key_part(code: &Value) -> String {
    match code.as_str().unwrap_or("") {
        "gpu" => "GPU".into(),
        "correctness_rule" => "correctness rule".into(),
        other => other.to_string(),
    }
}
