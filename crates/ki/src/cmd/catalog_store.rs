//! `ki catalog import`, `ki catalog export` and `ki catalog attach`: moving snapshots (and the
//! contents their rows name) in and out of a catalog database (SQLite by default, or PostgreSQL).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use ki_catalog::{Catalog, ImportOptions, ImportProgress, ImportReport, ImportStage};

use super::database::{DatabaseArgs, runtime};
use crate::term::{errln, outln};

#[derive(Args)]
pub struct ImportArgs {
    /// The export to import (`.jsonl` or `.jsonl.zst`).
    pub file: PathBuf,
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Report per table what is new, unchanged and conflicting; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Say on stderr which stage the import is in (when no progress bar is drawn).
    #[arg(long, short)]
    pub verbose: bool,
}

#[derive(Args)]
pub struct AttachArgs {
    /// Runner output folders (holding catalog-rows.jsonl), or such a folder packed as
    /// `NAME.tar.zst`, or single files a catalog row names by digest (an implementation's
    /// source, an artifact).
    #[arg(required_unless_present = "bundled")]
    pub paths: Vec<PathBuf>,
    /// Also store the contents bundled in data/ (what a first start stores), for a catalog
    /// made before they were bundled.
    #[arg(long)]
    pub bundled: bool,
    #[command(flatten)]
    pub database: DatabaseArgs,
}

#[derive(Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Where to write the export: `NAME.jsonl` (JSON lines) or `NAME.jsonl.zst` (zstd-compressed).
    #[arg(long)]
    pub out: PathBuf,
}

/// An import stage and the table it is at, if any.
type StageAndTable = (ImportStage, Option<&'static str>);

fn bar(length: u64, template: &str) -> ProgressBar {
    if !crate::term::stderr_is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(length);
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar
}

pub fn import(args: ImportArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    // A file that is not an export (empty, binary, /dev/zero) is refused before the database
    // is opened; a later unreadable line refuses the file inside the import's transaction.
    if let Some(Err(error)) = ki_model::export::open_export(&args.file)?.next() {
        anyhow::bail!("snapshot refused, nothing written: {error}");
    }
    // The file is streamed into the catalog: progress is in bytes of the file read.
    let progress = bar(1, "{msg:9} {wide_bar} {bytes}/{total_bytes}");
    let verbose = args.verbose;
    // The stage (and table) last reported, so a verbose import prints each once.
    let last_stage: Arc<Mutex<Option<StageAndTable>>> = Arc::default();
    let on_progress = {
        let progress = progress.clone();
        move |update: ImportProgress| {
            let label = match update.stage {
                ImportStage::Verifying => "verifying",
                ImportStage::Checking => "checking",
                ImportStage::Writing => "writing",
                ImportStage::Committing => "committing",
            };
            let mut last = last_stage.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
            if *last != Some((update.stage, update.table)) {
                *last = Some((update.stage, update.table));
                progress.set_message(label);
                progress.set_length(update.total.max(1));
                if verbose && (update.stage != ImportStage::Checking) {
                    match update.table {
                        Some(table) => errln!("{label} {table} ({} of {} rows done)", update.done, update.total),
                        None => errln!("{label}"),
                    }
                }
            }
            progress.set_position(update.done);
        }
    };
    let options = ImportOptions {
        dry_run: args.dry_run,
        origin: Some(args.file.display().to_string()),
        progress: Some(Arc::new(on_progress)),
        // A snapshot carries its own record events (`ki catalog verify` checks them); runs
        // without any, such as the verification runner's rows, get the ones ranking-v1 requires.
        append_record_events_unless_ledgered: true,
        ..ImportOptions::default()
    };
    let report = runtime()?.block_on(async {
        let import = async {
            // A SQLite file still to be made is built on its own and written once (much faster).
            if let Some(report) = Catalog::import_file_into_new(&args.database.url(), &args.file, &options).await? {
                return anyhow::Ok(report);
            }
            let catalog = args.database.open().await?;
            let report = catalog.import_file(&args.file, &options).await;
            catalog.close().await;
            anyhow::Ok(report?)
        };
        // Ctrl-C ends the import by dropping it, which rolls its transaction back or removes the
        // file it was making; the signal alone would end the process with a half-made file left.
        tokio::select! {
            report = import => report,
            _ = tokio::signal::ctrl_c() => Err(anyhow::anyhow!("interrupted: nothing written")),
        }
    });
    progress.finish_and_clear();
    let report = report?;
    let rows = (report.inserted() + report.unchanged() + report.conflicting()) as usize;
    print_import_report(&args, &report, rows, started.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}

fn print_import_report(args: &ImportArgs, report: &ImportReport, rows: usize, seconds: f64) {
    outln!("{} → {}", args.file.display(), args.database.shown());
    if report.dry_run {
        outln!("{:<26} {:>9} {:>9} {:>11}", "table", "new", "unchanged", "conflicting");
        for counts in &report.tables {
            outln!("{:<26} {:>9} {:>9} {:>11}", counts.table, counts.inserted, counts.unchanged, counts.conflicting);
        }
        outln!("{:<26} {:>9} {:>9} {:>11}", "total", report.inserted(), report.unchanged(), report.conflicting());
        for conflict in report.conflicts.iter().take(20) {
            outln!("conflict: {conflict}");
        }
        if report.conflicts.len() > 20 {
            outln!("… and {} more conflicts", report.conflicts.len() - 20);
        }
        outln!("dry run: nothing written ({rows} rows checked in {seconds:.2} s)");
        return;
    }
    outln!("{:<26} {:>9} {:>16}", "table", "inserted", "already present");
    for counts in &report.tables {
        outln!("{:<26} {:>9} {:>16}", counts.table, counts.inserted, counts.unchanged);
    }
    outln!("{:<26} {:>9} {:>16}", "total", report.inserted(), report.unchanged());
    if report.inserted() == 0 {
        outln!("nothing new: all {} rows were already present ({seconds:.2} s)", report.unchanged());
    } else {
        outln!("imported {} new rows in one transaction in {seconds:.2} s", report.inserted());
    }
    if !report.record_events.is_empty() {
        outln!(
            "({} of them record events that ranking-v1 requires for the new runs' comparison groups)",
            report.record_events.len()
        );
    }
}

pub fn export(args: ExportArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let summary = runtime()?.block_on(async {
        let catalog = args.database.open().await?;
        let summary = catalog.export_to(&args.out).await;
        catalog.close().await;
        anyhow::Ok(summary?)
    })?;
    for (table, count) in &summary.tables {
        outln!("{table:<26} {count:>9}");
    }
    outln!("exported {} rows to {} in {:.2} s", summary.rows(), args.out.display(), started.elapsed().as_secs_f64());
    Ok(ExitCode::SUCCESS)
}

/// `ki catalog attach PATH... [--bundled]`.
pub fn attach(args: AttachArgs) -> anyhow::Result<ExitCode> {
    let (report, bundled) = runtime()?.block_on(async {
        let catalog = args.database.open().await?;
        let bundled = if args.bundled { Some(catalog.put_bundled_contents().await) } else { None };
        let report = catalog.attach(&args.paths).await;
        catalog.close().await;
        anyhow::Ok((report?, bundled.transpose()?))
    })?;
    outln!(
        "{} → {}",
        args.paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", "),
        args.database.shown()
    );
    if let Some(bundled) = bundled {
        outln!("bundled: {} stored, {} already held", bundled.stored, bundled.already_held);
    }
    for named in &report.attached {
        outln!("{:<12} {}  {}", named.what, named.digest, named.address);
    }
    for named in &report.not_in_catalog {
        outln!(
            "skipped: {} {} ({}): the catalog has no {} row {} (import the folder's rows first)",
            named.what,
            named.address,
            named.digest,
            named.table,
            named.row_id
        );
    }
    for named in &report.missing {
        outln!("missing: {} {} ({}): not in the folder", named.what, named.address, named.digest);
    }
    outln!(
        "{} stored ({} bytes), {} already held, {} skipped, {} missing",
        report.put.stored,
        report.put.bytes_stored,
        report.put.already_held,
        report.not_in_catalog.len(),
        report.missing.len()
    );
    Ok(ExitCode::SUCCESS)
}
