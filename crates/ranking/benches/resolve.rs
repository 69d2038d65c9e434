//! Resolve latency over the full shared catalog: one request per measured workload
//! (its full axes, its hardware), each timed alone; prints the build time and the
//! p50 / p90 / p99 / max latency. Run: `cargo bench -p ki-ranking --bench resolve [-- EXPORT]`.

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use ki_ranking::{CatalogRows, Index, ResolveRequest};

/// Resolve latency over a catalog export.
#[derive(Parser)]
struct Args {
    /// The export to index (default: the bundled public snapshot in data/).
    export: Option<PathBuf>,
    /// Passed by `cargo bench`; nothing to do with it.
    #[arg(long, hide = true)]
    bench: bool,
}

fn main() {
    let path = Args::parse().export.unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/catalog-2026-08-16-0022af0b.jsonl.zst")
    });
    let read_start = Instant::now();
    let mut rows = CatalogRows::new();
    for line in ki_model::export::read_export(&path).expect("export reads") {
        rows.push(&line.table, line.row, Some(line.line as u64));
    }
    let read_time = read_start.elapsed();
    let build_start = Instant::now();
    let row_count = rows.len();
    let index = Index::from_owned_rows(rows).expect("export indexes");
    let build_time = build_start.elapsed();

    // Every measured case of the catalog, as a user would ask for it.
    let mut requests = Vec::new();
    for (w, workload) in index.workloads.iter().enumerate() {
        let Some(run) = index.runs.iter().find(|r| *r.workload_id == *workload.id) else { continue };
        let operation = index.operations.iter().find(|o| o.id == workload.operation_id).unwrap();
        requests.push(ResolveRequest {
            operation: operation.name.clone(),
            axes: index.workload_axes(w).clone(),
            dtypes: workload.dtypes.clone(),
            hardware: run.hardware_model.as_deref().map(str::to_string),
            framework: None,
            limit: None,
        });
    }
    // Warm caches once, then time each request alone, several rounds.
    for request in &requests {
        std::hint::black_box(index.resolve(request));
    }
    let mut samples = Vec::new();
    let mut modes = std::collections::BTreeMap::new();
    for _ in 0..5 {
        for request in &requests {
            let start = Instant::now();
            let answer = std::hint::black_box(index.resolve(request));
            samples.push(start.elapsed());
            *modes.entry(format!("{:?}", answer.mode)).or_insert(0usize) += 1;
        }
    }
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    println!(
        "catalog: {} rows read in {:.2?}; index built in {:.2?} ({} runs, {} comparison groups)",
        row_count,
        read_time,
        build_time,
        index.runs.len(),
        index.cohorts.len()
    );
    println!("resolve: {} requests x 5 rounds, modes {:?}", requests.len(), modes);
    println!(
        "resolve latency: p50 {:.1?}  p90 {:.1?}  p99 {:.1?}  max {:.1?}",
        at(0.5),
        at(0.9),
        at(0.99),
        samples[samples.len() - 1]
    );
    let ledger_start = Instant::now();
    let report = index.verify_record_events();
    println!(
        "ledger recompute + diff: {:.2?} ({} events, {} cohorts, clean: {})",
        ledger_start.elapsed(),
        report.recomputed_events,
        report.cohorts_checked,
        report.is_clean()
    );
    assert!(at(0.5).as_secs_f64() < 1e-3, "resolve p50 must be under 1 ms");
}
