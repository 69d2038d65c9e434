//! `ki source import …`: importing external benchmark data sets into the catalog.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Subcommand, ValueEnum};
use ki_sources::flashinfer::{ImportOptions, plan_import};

use super::database::{DatabaseArgs, block_on};
use crate::term::{errln, outln};

#[derive(Subcommand)]
pub enum SourceCommand {
    /// Import a data set: validate it whole, map it to records, publish in one transaction.
    Import {
        /// Which data set format DIR holds.
        source: SourceKind,
        /// The data set's root directory (for flashinfer-bench: the one holding definitions/).
        dir: PathBuf,
        /// Report per kind what is new, unchanged and conflicting; write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Agent authors whose solutions and traces to import (comma-separated); they are
        /// marked llm-generated. Human and library baselines are always imported.
        #[arg(long, value_delimiter = ',')]
        authors: Vec<String>,
        /// The data set revision (a commit), recorded in source links and implementations.
        #[arg(long)]
        revision: Option<String>,
        #[command(flatten)]
        database: DatabaseArgs,
    },
}

#[derive(Clone, Copy, ValueEnum)]
pub enum SourceKind {
    /// FlashInfer-Bench's flashinfer-trace data set.
    FlashinferBench,
}

pub fn run(command: SourceCommand) -> anyhow::Result<ExitCode> {
    match command {
        SourceCommand::Import { source: SourceKind::FlashinferBench, dir, dry_run, authors, revision, database } => {
            import_flashinfer(&dir, dry_run, authors, revision, database)
        }
    }
}

fn import_flashinfer(
    dir: &Path,
    dry_run: bool,
    authors: Vec<String>,
    revision: Option<String>,
    database: DatabaseArgs,
) -> anyhow::Result<ExitCode> {
    if let Some(rev) = &revision
        && !(rev.len() == 40 && rev.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
    {
        anyhow::bail!("--revision {rev:?} must be a full 40-character lowercase hex commit");
    }
    let authors: Vec<String> = authors.into_iter().map(|a| a.trim().to_string()).filter(|a| !a.is_empty()).collect();
    let options = ImportOptions { authors, revision, ..ImportOptions::default() };
    let plan = match plan_import(dir, &options) {
        Ok(plan) => plan,
        Err(errors) => {
            for error in &errors.0 {
                errln!("{error}");
            }
            errln!("{} problem(s) in {}; nothing written", errors.0.len(), dir.display());
            return Ok(ExitCode::FAILURE);
        }
    };
    let s = &plan.summary;
    outln!(
        "{}: {} definitions, {} workloads, {} solutions, {} traces",
        dir.display(),
        s.definitions,
        s.workloads,
        s.solutions,
        s.traces
    );
    if s.skipped_solutions > 0 {
        outln!(
            "skipped {} agent-written solution(s) and {} trace(s): name their authors with --authors to import them",
            s.skipped_solutions,
            s.skipped_traces
        );
    }
    let url = database.shown();
    let report = block_on(async {
        let catalog = database.open().await?;
        let report = ki_sources::flashinfer::publish(&catalog, &plan, dry_run, &dir.display().to_string()).await;
        catalog.close().await;
        anyhow::Ok(report?)
    })??;
    outln!("{:<24} {:>8} {:>10} {:>12}", "kind", "new", "unchanged", "conflicting");
    for counts in &report.tables {
        if counts.inserted + counts.unchanged + counts.conflicting == 0 {
            continue;
        }
        outln!("{:<24} {:>8} {:>10} {:>12}", counts.table, counts.inserted, counts.unchanged, counts.conflicting);
    }
    for conflict in &report.conflicts {
        outln!("conflict: {conflict}");
    }
    if dry_run {
        outln!("dry run: nothing written to {}", url);
    } else {
        outln!("{} rows written to {} ({} already there)", report.inserted(), url, report.unchanged());
    }
    Ok(ExitCode::SUCCESS)
}
