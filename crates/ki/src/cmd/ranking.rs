//! The rows the ranking-v1 judgement (crate ki-ranking) reads, from a catalog database or an
//! export file, and the arguments that name them.

use std::path::PathBuf;

use anyhow::{Context, bail};
use clap::Args;
use ki_ranking::rows::RANKING_TABLES;
use ki_ranking::{CatalogRows, Index};
use serde_json::Value;

use super::database::{DatabaseArgs, runtime};
use crate::term::errln;

/// Where the rows come from.
#[derive(Args, Clone)]
pub struct DataArgs {
    /// The catalog read (an empty one gets the bundled snapshot first).
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Read an export file (.jsonl or .jsonl.zst) instead of a catalog database.
    #[arg(long, conflicts_with = "database")]
    pub export: Option<PathBuf>,
}

/// Loads the rows the ranking reads and builds the index.
pub fn load_index(data: &DataArgs) -> anyhow::Result<Index> {
    load(data, None)
}

/// The index of one operation only, when the rows come from a database: the operation's
/// comparison groups are whole in it (a group never spans operations), so a resolve answers
/// exactly as on the full index while reading a fraction of the catalog. An operation that
/// is not found gives an index of every operation and no runs, so the resolver's
/// not-found and ambiguity messages are the same.
pub fn load_index_for_operation(data: &DataArgs, operation: &str) -> anyhow::Result<Index> {
    load(data, Some(operation))
}

fn load(data: &DataArgs, operation: Option<&str>) -> anyhow::Result<Index> {
    let mut rows = CatalogRows::new();
    if let Some(path) = &data.export {
        let lines = ki_model::export::read_export(path)
            .with_context(|| format!("cannot read the export {}", path.display()))?;
        for line in lines {
            rows.push(&line.table, line.row, Some(line.line as u64));
        }
        return Index::from_owned_rows(rows).with_context(|| format!("cannot rank the rows of {}", path.display()));
    }
    // Messages name the catalog without its password.
    let shown = data.database.shown();
    runtime()?.block_on(async {
        let catalog = data.database.open().await?;
        if let Some(report) = catalog.ensure_bundled_snapshot().await.context("cannot import the bundled snapshot")? {
            errln!("note: the catalog was empty; imported the bundled snapshot ({} rows)", report.inserted());
        }
        let read_tables = async |tables: &[&'static str], into: &mut CatalogRows| -> anyhow::Result<()> {
            for &table in tables {
                catalog
                    .for_each_row(table, |row| {
                        into.push(table, row, None);
                        Ok(())
                    })
                    .await
                    .with_context(|| format!("cannot read {table} from {shown}"))?;
            }
            Ok(())
        };
        match operation {
            None => read_tables(&RANKING_TABLES, &mut rows).await?,
            Some(name) => {
                let mut names = CatalogRows::new();
                read_tables(&["sources", "projects", "operations", "operation_aliases"], &mut names).await?;
                let names =
                    Index::from_owned_rows(names).with_context(|| format!("cannot read the operations of {shown}"))?;
                let ids: Vec<String> =
                    names.find_operation(name).map(|op| vec![names.operations[op].id.clone()]).unwrap_or_default();
                catalog
                    .for_each_ranking_row_of_operations(&ids, |table, row| {
                        rows.push(table, row, None);
                        Ok(())
                    })
                    .await
                    .with_context(|| format!("cannot read the rows of operation {name} from {shown}"))?;
            }
        }
        catalog.close().await;
        anyhow::Ok(())
    })?;
    Index::from_owned_rows(rows).with_context(|| format!("cannot rank the rows of {shown}"))
}

/// `NAME=VALUE`, the value a JSON number or boolean when it reads as one, else text.
pub fn parse_axis(argument: &str) -> anyhow::Result<(String, Value)> {
    let Some((name, value)) = argument.split_once('=') else {
        bail!("--axis {argument:?}: expected NAME=VALUE");
    };
    let (name, value) = (name.trim(), value.trim());
    if name.is_empty() || value.is_empty() {
        bail!("--axis {argument:?}: both NAME and VALUE are needed");
    }
    let parsed = match serde_json::from_str::<Value>(value) {
        Ok(number @ Value::Number(_)) => number,
        Ok(boolean @ Value::Bool(_)) => boolean,
        _ => Value::String(value.to_string()),
    };
    Ok((name.to_string(), parsed))
}
