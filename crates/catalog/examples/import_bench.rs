//! Import benchmark: reading + verifying + importing the shared export into an empty
//! catalog, repeated; then a re-import (which must insert 0 rows). Prints each run and
//! the median.
//!
//! cargo run --release -p ki-catalog --example import_bench -- sqlite [RUNS]
//! cargo run --release -p ki-catalog --example import_bench -- postgres [RUNS]
//!
//! PostgreSQL: postgres://postgres@127.0.0.1:5432/test (KI_TEST_POSTGRES_URL), one fresh
//! schema per run, dropped afterwards.

use std::path::PathBuf;
use std::time::Instant;

use ki_catalog::{Catalog, ImportOptions};

fn export_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/kernelindex-registry/registry/exports/catalog-2026-08-16-0022af0b.jsonl.zst")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let backend = args.next().unwrap_or_else(|| "sqlite".into());
    let runs: usize = args.next().map(|runs| runs.parse()).transpose()?.unwrap_or(5);
    let base = std::env::var("KI_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let mut seconds = Vec::new();
    for run in 0..runs {
        let directory = tempfile::tempdir()?;
        let (url, schema) = if backend == "sqlite" {
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
        let started = Instant::now();
        let report = catalog.import_file(&export_path(), &ImportOptions::default()).await?;
        let elapsed = started.elapsed().as_secs_f64();
        let again = Instant::now();
        let second = catalog.import_file(&export_path(), &ImportOptions::default()).await?;
        let again = again.elapsed().as_secs_f64();
        println!(
            "run {}: imported {} rows in {elapsed:.2} s; re-import inserted {} (unchanged {}) in {again:.2} s",
            run + 1,
            report.inserted(),
            second.inserted(),
            second.unchanged()
        );
        assert_eq!(second.inserted(), 0);
        seconds.push(elapsed);
        catalog.close().await;
        if let Some(schema) = schema {
            let admin = sqlx::PgPool::connect(&base).await?;
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE"))).execute(&admin).await?;
            admin.close().await;
        }
    }
    seconds.sort_by(f64::total_cmp);
    println!("{backend}: median import {:.2} s over {runs} runs (min {:.2}, max {:.2})", seconds[runs / 2], seconds[0], seconds[runs - 1]);
    Ok(())
}
