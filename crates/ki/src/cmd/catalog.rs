//! `ki catalog …`: catalog snapshots. Each subcommand has its own function below.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use crate::term::outln;
use clap::Subcommand;
use indicatif::{ProgressBar, ProgressStyle};
use ki_model::export::{ExportLine, open_export};
use ki_model::verify::{Verifier, VerifyReport};

#[derive(Subcommand)]
pub enum CatalogCommand {
    /// Recompute every digest and key of an export (`.jsonl` or `.jsonl.zst`); exit 1 on any mismatch.
    Verify { export: PathBuf },
    /// Import an export into the catalog in one transaction (verified first; re-importing inserts nothing).
    Import(super::catalog_store::ImportArgs),
    /// Write the published catalog as an export (`.jsonl` plain, `.jsonl.zst` compressed).
    Export(super::catalog_store::ExportArgs),
    /// Store the contents the catalog's rows name (sources, raw samples) from runner output
    /// folders or their `.tar.zst` archives (the files their catalog-rows.jsonl names) or single
    /// files, each digest checked; one transaction, or nothing written.
    Attach(super::catalog_store::AttachArgs),
    /// Write a synthetic export shaped like the public one (operations, workloads,
    /// implementations, comparison groups of realistic sizes, record events as ranking-v1
    /// requires, every digest valid), for scale tests.
    Generate {
        /// Benchmark runs to generate.
        #[arg(long)]
        runs: u64,
        /// The random seed: the same seed gives the same file, byte for byte.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Where to write the zstd-compressed JSONL export.
        #[arg(long)]
        out: PathBuf,
    },
}

pub fn run(command: CatalogCommand) -> anyhow::Result<ExitCode> {
    match command {
        CatalogCommand::Verify { export } => verify(&export),
        CatalogCommand::Import(args) => super::catalog_store::import(args),
        CatalogCommand::Export(args) => super::catalog_store::export(args),
        CatalogCommand::Attach(args) => super::catalog_store::attach(args),
        CatalogCommand::Generate { runs, seed, out } => generate(runs, seed, &out),
    }
}

fn generate(runs: u64, seed: u64, out: &Path) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let s = ki_sources::synthetic::generate(runs, seed, out)
        .map_err(|error| anyhow::anyhow!("cannot write {}: {error}", out.display()))?;
    outln!(
        "{}: {} runs ({} comparison groups, the largest {} runs), {} measurements, {} record events, {} operations, {} workloads, {} implementations in {:.1} s",
        out.display(),
        s.runs,
        s.comparison_groups,
        s.largest_group,
        s.measurements,
        s.record_events,
        s.operations,
        s.workloads,
        s.implementations,
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}

/// A progress bar on stderr when it is a terminal; a hidden one (drawing nothing) when piped.
fn progress_bar(length: u64, template: &str) -> ProgressBar {
    if !crate::term::stderr_is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(length);
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

/// Lines checked at a time: the verifier checks a chunk in parallel, then the chunk's rows
/// go into the ranking's compact rows and the lines are dropped.
const VERIFY_CHUNK: usize = 8192;

/// Streams the export: each chunk of lines is verified (`Verifier`: the facts later rows
/// refer to are kept, the rows are not) and then pushed into the ranking's compact rows
/// without run manifests (what the ledger needs), so memory grows with those compact rows,
/// not with the export's text or its parsed JSON.
fn verify(path: &Path) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let reader = open_export(path)?;
    let progress = progress_bar(reader.file_len(), "checking {wide_bar} {bytes}/{total_bytes}");
    let consumed = reader.progress_counter();
    let mut verifier = Verifier::new();
    let mut rows = ki_ranking::CatalogRows::without_run_manifests();
    let mut chunk: Vec<ExportLine> = Vec::with_capacity(VERIFY_CHUNK);
    let mut flush = |chunk: &mut Vec<ExportLine>, verifier: &mut Verifier| {
        verifier.add(chunk);
        for line in chunk.drain(..) {
            rows.push(&line.table, line.row, Some(line.line as u64));
        }
    };
    for line in reader {
        chunk.push(line?);
        if chunk.len() == VERIFY_CHUNK {
            flush(&mut chunk, &mut verifier);
            progress.set_position(consumed.load(std::sync::atomic::Ordering::Relaxed));
        }
    }
    flush(&mut chunk, &mut verifier);
    progress.finish_and_clear();
    let report = verifier.finish();

    print_report(path, &report);
    outln!(
        "{} rows, {} checks, {} mismatches in {:.2} s",
        report.rows(),
        report.fields.iter().map(|t| t.ok + t.mismatched).sum::<u64>(),
        report.mismatches(),
        started.elapsed().as_secs_f64(),
    );
    let ledger_clean = verify_ledger(rows);
    Ok(if report.is_clean() && ledger_clean { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// Recomputes the ranking-v1 record-event ledger from the export's runs and compares it
/// with the export's `record_events`; prints the verdict and returns whether it matched.
fn verify_ledger(rows: ki_ranking::CatalogRows) -> bool {
    let index = match ki_ranking::Index::from_owned_rows(rows) {
        Ok(index) => index,
        Err(error) => {
            outln!("record events: cannot rank this export: {error}");
            return false;
        }
    };
    let ledger = index.verify_record_events();
    outln!(
        "record events ({}): {} stored, {} recomputed, {} of {} comparison groups match",
        ledger.policy_version,
        ledger.stored_events,
        ledger.recomputed_events,
        ledger.cohorts_matching,
        ledger.cohorts_checked
    );
    if let Some(first) = ledger.mismatches.first() {
        outln!(
            "record events: {} comparison groups differ; first {}: {} recomputed events not stored, {} stored events not recomputed",
            ledger.mismatches.len(),
            first.comparison_key,
            first.missing.len(),
            first.unexpected.len()
        );
    }
    let clean = ledger.is_clean();
    // Freeing 40k parsed rows one allocation at a time costs seconds; the process is
    // about to exit and the OS reclaims the memory at once.
    std::mem::forget(index);
    clean
}

fn print_report(path: &Path, report: &VerifyReport) {
    outln!("{}", path.display());
    let rows: Vec<String> = report.table_rows.iter().map(|(table, count)| format!("{table} {count}")).collect();
    outln!("rows: {}", rows.join(", "));
    outln!();
    let name_width =
        report.fields.iter().map(|t| t.field.table.len() + 1 + t.field.name.chars().count()).max().unwrap_or(0);
    outln!("{:<name_width$}  {:>8}  {:>8}", "field", "ok", "mismatch");
    for tally in &report.fields {
        let name = format!("{}.{}", tally.field.table, tally.field.name);
        // Pad by characters: field names contain the multi-byte arrow.
        let padding = name_width.saturating_sub(name.chars().count());
        outln!("{name}{}  {:>8}  {:>8}", " ".repeat(padding), tally.ok, tally.mismatched);
    }
    let mismatching: Vec<_> = report.fields.iter().filter(|t| t.first_mismatch.is_some()).collect();
    if !mismatching.is_empty() {
        outln!();
        outln!("first mismatch of each field:");
        for tally in mismatching {
            let mismatch = tally.first_mismatch.as_ref().expect("filtered on it");
            outln!(
                "  {}.{}: line {} (id {}): stored {}, recomputed {}",
                tally.field.table,
                tally.field.name,
                mismatch.line,
                mismatch.id,
                mismatch.stored,
                mismatch.recomputed
            );
        }
    }
    outln!();
}
