//! Heap bytes held by each part of the server's read model, built from export files
//! (the bundled catalog's three by default). A counting allocator reports live bytes and
//! the peak, so the figures do not depend on the allocator's fragmentation.
//!
//!     cargo run --release -p ki-server --example read_model_memory [EXPORT...]
//!     cargo run --release -p ki-server --example read_model_memory sqlite:///path/catalog.db
//!
//! From a catalog URL the model is built as `ki serve` builds it (`model_from_catalog`, rows
//! streamed), so "rows read" is not reported.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
        PEAK.fetch_max(live, Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            let live = LIVE.fetch_add(new_size - layout.size(), Relaxed) + new_size - layout.size();
            PEAK.fetch_max(live, Relaxed);
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn mib(bytes: usize) -> String {
    format!("{:8.1} MiB", bytes as f64 / (1024.0 * 1024.0))
}

fn rss() -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmRSS"))
        .unwrap_or("VmRSS: ?")
        .split_whitespace()
        .skip(1)
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() -> anyhow::Result<()> {
    let mut files: Vec<String> = std::env::args().skip(1).collect();
    if files.is_empty() {
        let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/");
        for name in [
            "catalog-2026-08-16-0022af0b.jsonl.zst",
            "kernelindex-verified-h200-2026-11-30.jsonl.zst",
            "kernelindex-verify-h200-2026-12-01.jsonl.zst",
        ] {
            files.push(format!("{data}{name}"));
        }
    }
    let base = LIVE.load(Relaxed);
    let started = std::time::Instant::now();
    let model = match files.as_slice() {
        [url] if url.starts_with("sqlite:") || url.starts_with("postgres") => {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
            runtime.block_on(async {
                let catalog = ki_catalog::Catalog::open(url).await?;
                ki_server::model_from_catalog(&catalog).await
            })?
        }
        _ => model_from_exports(&files)?,
    };
    let built = LIVE.load(Relaxed) - base;
    println!(
        "read model built in {:.2} s      {}   (peak {}, RSS {})",
        started.elapsed().as_secs_f64(),
        mib(built),
        mib(PEAK.load(Relaxed) - base),
        rss()
    );
    let ki_server::model::ReadModel { tables, judgement } = model;
    let mut judgement = judgement;
    let mut index_part = |name: &str, take: &mut dyn FnMut(&mut ki_ranking::Index)| {
        let before = LIVE.load(Relaxed);
        take(&mut judgement);
        println!("  index: {name:<23}{}", mib(before - LIVE.load(Relaxed)));
    };
    index_part("runs", &mut |i| drop(std::mem::take(&mut i.runs)));
    index_part("measurements", &mut |i| drop(std::mem::take(&mut i.measurements)));
    index_part("record events", &mut |i| drop(std::mem::take(&mut i.record_events)));
    index_part("run facts", &mut |i| drop(std::mem::take(&mut i.facts)));
    index_part("comparison groups", &mut |i| drop(std::mem::take(&mut i.cohorts)));
    let before = LIVE.load(Relaxed);
    drop(judgement);
    println!("  index: the rest               {}", mib(before - LIVE.load(Relaxed)));
    let mut tables = tables;
    let mut part = |name: &str, take: &mut dyn FnMut(&mut ki_server::model::Tables)| {
        let before = LIVE.load(Relaxed);
        take(&mut tables);
        println!("  tables: {name:<22}{}", mib(before - LIVE.load(Relaxed)));
    };
    part("runs by key", &mut |t| {
        drop(std::mem::take(&mut t.runs_by_external_id));
        drop(std::mem::take(&mut t.runs_by_implementation));
        drop(std::mem::take(&mut t.runs_by_gpu));
    });
    part("workload labels", &mut |t| drop(std::mem::take(&mut t.workload_labels)));
    part("implementations", &mut |t| drop(std::mem::take(&mut t.implementations)));
    part("record events", &mut |t| drop(std::mem::take(&mut t.records)));
    part("artifacts", &mut |t| drop(std::mem::take(&mut t.artifacts)));
    part("operations", &mut |t| drop(std::mem::take(&mut t.operations)));
    part("serving", &mut |t| {
        drop(std::mem::take(&mut t.serving_runs));
        drop(std::mem::take(&mut t.serving_measurements_by_run));
        drop(std::mem::take(&mut t.serving_configurations));
    });
    part("search", &mut |t| {
        drop(std::mem::take(&mut t.search));
        drop(std::mem::take(&mut t.search_vocabulary));
    });
    let before = LIVE.load(Relaxed);
    drop(tables);
    println!("  tables: the rest              {}", mib(before - LIVE.load(Relaxed)));
    Ok(())
}

/// The model from export files, as `ki serve` builds it from a catalog (the runs' manifests
/// left where they came from); prints the rows' own size first.
fn model_from_exports(files: &[String]) -> anyhow::Result<ki_server::model::ReadModel> {
    let base = LIVE.load(Relaxed);
    let mut rows = Vec::new();
    // The bundled files share some rows (sources, projects): each once, as an import keeps it.
    let mut seen = std::collections::HashSet::new();
    for file in files {
        for row in ki_server::rows_from_export(std::path::Path::new(file))? {
            let id = row.row.get("id").and_then(|v| v.as_str()).map(str::to_string);
            if id.is_none_or(|id| seen.insert((row.table.clone(), id))) {
                rows.push(row);
            }
        }
    }
    drop(seen);
    println!("rows read ({} rows)           {}", rows.len(), mib(LIVE.load(Relaxed) - base));
    PEAK.store(LIVE.load(Relaxed), Relaxed);
    let mut builder = ki_server::model::ModelBuilder::new(ki_server::model::RunDetails::InCatalog);
    for row in rows {
        builder.push(row.table, row.row);
    }
    Ok(builder.finish()?)
}
