//! Brings runner output written before an implementation had an install recipe up to what the
//! runner writes now (`ki_runner::records::install_recipe`): in each `catalog-rows.jsonl` named,
//! the implementation rows of a runner implementation that has a recipe get `installable`,
//! `installKind` and `installCommand`, and the runs of those implementations `installable`.
//! These columns are not part of any digest or key (manifests are not touched); every other line
//! is written back byte for byte.
//!
//! `cargo run -p ki-runner --example install_recipes -- fixtures/gqa-paged-decode/*/catalog-rows.jsonl`
use std::collections::HashSet;

use serde_json::{Value, json};

fn main() -> anyhow::Result<()> {
    for path in std::env::args().skip(1) {
        let text = std::fs::read_to_string(&path)?;
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        let mut recipes = HashSet::new();
        let mut changed = 0;
        for pass in ["implementations", "benchmark_runs"] {
            for line in &mut lines {
                let mut parsed: Value = serde_json::from_str(line)?;
                if parsed["table"] != pass {
                    continue;
                }
                let row = &mut parsed["row"];
                let before = row.clone();
                if pass == "implementations" {
                    let title = row["title"].as_str().unwrap_or_default().to_string();
                    let Some((kind, command)) = ki_runner::records::install_recipe(&title) else { continue };
                    row["installable"] = json!(true);
                    row["installKind"] = json!(kind);
                    row["installCommand"] = json!(command);
                    recipes.insert(row["id"].as_str().unwrap_or_default().to_string());
                } else if recipes.contains(row["implementationId"].as_str().unwrap_or_default()) {
                    row["installable"] = json!(true);
                }
                if *row != before {
                    *line = serde_json::to_string(&parsed)?;
                    changed += 1;
                }
            }
        }
        let mut out = lines.join("\n");
        if text.ends_with('\n') {
            out.push('\n');
        }
        std::fs::write(&path, out)?;
        eprintln!("{path}: {changed} rows changed");
    }
    Ok(())
}
