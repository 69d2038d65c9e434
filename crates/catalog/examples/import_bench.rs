//! Import benchmark: reading + verifying + importing the shared export into an empty
//! catalog, repeated; then a re-import (which must insert 0 rows). Prints each run with
//! the time spent per stage, and the medians.
//!
//! cargo run --release -p ki-catalog --example import_bench -- sqlite [RUNS]
//! cargo run --release -p ki-catalog --example import_bench -- postgres [RUNS]
//!
//! PostgreSQL: postgres://postgres@127.0.0.1:5432/test (`--postgres` or KI_TEST_POSTGRES_URL),
//! one fresh schema per run, dropped afterwards.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use clap::{Parser, ValueEnum};
use ki_catalog::{Catalog, ImportOptions, ImportStage};

/// Times importing the public index's export into an empty catalog, and a re-import.
#[derive(Parser)]
struct Args {
    /// The catalog backend to import into.
    #[arg(value_enum, default_value_t = Backend::Sqlite)]
    backend: Backend,
    /// How many imports to time.
    #[arg(default_value_t = 5, value_parser = clap::value_parser!(u16).range(1..))]
    runs: u16,
    /// The PostgreSQL database (each run gets a fresh schema in it).
    #[arg(long, env = "KI_TEST_POSTGRES_URL", default_value = "postgres://postgres@127.0.0.1:5432/test")]
    postgres: String,
}

#[derive(Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Backend {
    Sqlite,
    Postgres,
}

fn export_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/catalog-2026-08-16-0022af0b.jsonl.zst")
}

/// The stages in the order an import passes them; "read" is everything before the first
/// progress report (reading + decompressing the file, checking rows, loading references).
const STAGES: [&str; 6] = ["read", "verify", "check", "write", "commit", "total"];

fn stage_index(stage: ImportStage) -> usize {
    match stage {
        ImportStage::Verifying => 1,
        ImportStage::Checking => 2,
        ImportStage::Writing => 3,
        ImportStage::Committing => 4,
    }
}

/// CPU seconds (user + system, all threads) this process has used so far, from
/// /proc/self/stat (Linux; clock ticks of 1/100 s). Unlike wall time it hardly depends on
/// what else the machine runs. PostgreSQL's own work is not in it.
fn cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return f64::NAN };
    // Fields after the parenthesised command name; utime and stime are the 12th and 13th.
    let fields: Vec<&str> = stat.rsplit(')').next().unwrap_or("").split_whitespace().collect();
    let ticks = |index: usize| fields.get(index).and_then(|field| field.parse::<f64>().ok()).unwrap_or(f64::NAN);
    (ticks(11) + ticks(12)) / 100.0
}

/// Runs one import, returning (rows inserted, rows unchanged, seconds per entry of STAGES,
/// CPU seconds).
async fn timed_import(catalog: &Catalog) -> Result<(u64, u64, [f64; 6], f64), Box<dyn std::error::Error>> {
    let cpu_before = cpu_seconds();
    // When each stage was first reported.
    let marks: Arc<Mutex<[Option<Instant>; 5]>> = Arc::new(Mutex::new([None; 5]));
    let started = Instant::now();
    marks.lock().unwrap()[0] = Some(started);
    let recorder = Arc::clone(&marks);
    let options = ImportOptions {
        progress: Some(Arc::new(move |progress: ki_catalog::ImportProgress| {
            let mut marks = recorder.lock().unwrap();
            marks[stage_index(progress.stage)].get_or_insert_with(Instant::now);
        })),
        ..ImportOptions::default()
    };
    let report = catalog.import_file(&export_path(), &options).await?;
    let ended = Instant::now();
    let marks = *marks.lock().unwrap();
    let mut seconds = [0.0; 6];
    for stage in 0..5 {
        let Some(from) = marks[stage] else { continue };
        let to = marks[stage + 1..].iter().flatten().next().copied().unwrap_or(ended);
        seconds[stage] = (to - from).as_secs_f64();
    }
    seconds[5] = (ended - started).as_secs_f64();
    Ok((report.inserted(), report.unchanged(), seconds, cpu_seconds() - cpu_before))
}

fn show(seconds: &[f64; 6]) -> String {
    STAGES.iter().zip(seconds).map(|(name, value)| format!("{name} {value:.2}")).collect::<Vec<_>>().join(", ")
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = Args::parse();
    let runs = usize::from(args.runs);
    let base = args.postgres;
    let backend = match args.backend {
        Backend::Sqlite => "sqlite",
        Backend::Postgres => "postgres",
    };
    let mut firsts: Vec<[f64; 6]> = Vec::new();
    let mut cpus: Vec<f64> = Vec::new();
    let mut agains: Vec<f64> = Vec::new();
    for run in 0..runs {
        let directory = tempfile::tempdir()?;
        let (url, schema) = if args.backend == Backend::Sqlite {
            (format!("sqlite://{}", directory.path().join("bench.db").display()), None)
        } else {
            let schema = format!("ki_bench_{}_{run}", std::process::id());
            let admin = sqlx::PgPool::connect(&base).await?;
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}"))).execute(&admin).await?;
            admin.close().await;
            (format!("{base}?options=-c%20search_path%3D{schema}"), Some(schema))
        };
        let catalog = Catalog::open(&url).await?;
        // Timed: read the file, verify every digest, write every row in one transaction.
        let (inserted, _, first, cpu) = timed_import(&catalog).await?;
        let (again_inserted, again_unchanged, again, _) = timed_import(&catalog).await?;
        println!("run {}: imported {inserted} rows in {:.2} s, {cpu:.2} s CPU ({})", run + 1, first[5], show(&first));
        println!(
            "       re-import inserted {again_inserted} (unchanged {again_unchanged}) in {:.2} s ({})",
            again[5],
            show(&again)
        );
        if again_inserted != 0 {
            return Err(format!("the re-import inserted {again_inserted} rows; it must insert none").into());
        }
        firsts.push(first);
        cpus.push(cpu);
        agains.push(again[5]);
        catalog.close().await;
        if let Some(schema) = schema {
            let admin = sqlx::PgPool::connect(&base).await?;
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE"))).execute(&admin).await?;
            admin.close().await;
        }
    }
    let mut medians = [0.0; 6];
    for (stage, slot) in medians.iter_mut().enumerate() {
        *slot = median(&mut firsts.iter().map(|seconds| seconds[stage]).collect::<Vec<_>>());
    }
    let mut totals: Vec<f64> = firsts.iter().map(|seconds| seconds[5]).collect();
    totals.sort_by(f64::total_cmp);
    println!(
        "{backend}: median import {:.2} s over {runs} runs (min {:.2}, max {:.2}), median {:.2} s CPU; median per stage: {}; median re-import {:.2} s",
        medians[5],
        totals[0],
        totals[runs - 1],
        median(&mut cpus),
        show(&medians),
        median(&mut agains)
    );
    Ok(())
}
