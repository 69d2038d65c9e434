//! Heap bytes held by each part of the server's read model, built from export files
//! (the bundled catalog's three by default). A counting allocator over `ki`'s jemalloc reports
//! live bytes and the peak, so the figures do not depend on the allocator's fragmentation, and
//! beside them the bytes jemalloc gives for the live ones (size classes) and the resident set.
//!
//!     cargo run --release -p ki-server --example read_model_memory [EXPORT...]
//!     cargo run --release -p ki-server --example read_model_memory sqlite:///path/catalog.db
//!
//! From a catalog URL the model is built as `ki serve` builds it (`model_from_catalog`, rows
//! streamed), so "rows read" is not reported.

use std::alloc::{GlobalAlloc, Layout};
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

use tikv_jemallocator::Jemalloc;

/// `ki`'s allocator, counting the bytes asked for (`LIVE`, its `PEAK`) and the bytes jemalloc
/// gives for them (`USABLE`: rounded up to its size classes).
struct Counting;
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);
static USABLE: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Relaxed) + layout.size();
        PEAK.fetch_max(live, Relaxed);
        let ptr = unsafe { Jemalloc.alloc(layout) };
        if !ptr.is_null() {
            USABLE.fetch_add(unsafe { tikv_jemallocator::usable_size(ptr) }, Relaxed);
        }
        ptr
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Relaxed);
        USABLE.fetch_sub(unsafe { tikv_jemallocator::usable_size(ptr) }, Relaxed);
        unsafe { Jemalloc.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size > layout.size() {
            let live = LIVE.fetch_add(new_size - layout.size(), Relaxed) + new_size - layout.size();
            PEAK.fetch_max(live, Relaxed);
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Relaxed);
        }
        let before = unsafe { tikv_jemallocator::usable_size(ptr) };
        let moved = unsafe { Jemalloc.realloc(ptr, layout, new_size) };
        if moved.is_null() {
            // The old block stays; count the request back out.
            if new_size > layout.size() {
                LIVE.fetch_sub(new_size - layout.size(), Relaxed);
            } else {
                LIVE.fetch_add(layout.size() - new_size, Relaxed);
            }
        } else {
            USABLE.fetch_sub(before, Relaxed);
            USABLE.fetch_add(unsafe { tikv_jemallocator::usable_size(moved) }, Relaxed);
        }
        moved
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// The options `ki` gives jemalloc (`crates/ki/src/main.rs`), so the resident set is `ki serve`'s.
#[unsafe(export_name = "_rjem_malloc_conf")]
static JEMALLOC_OPTIONS: &u8 = &b"background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0\0"[0];

/// jemalloc's own account: allocated (live, by size class), active (pages of runs in use:
/// allocated plus the free slots of partly used slabs), metadata, resident, mapped, retained.
fn jemalloc_stats() {
    use tikv_jemalloc_ctl::{epoch, stats};
    if epoch::advance().is_err() {
        return;
    }
    let read = |value: tikv_jemalloc_ctl::Result<usize>| value.map(mib).unwrap_or_else(|_| "?".into());
    println!(
        "jemalloc: allocated {}, active {}, metadata {}, resident {}, mapped {}, retained {}",
        read(stats::allocated::read()),
        read(stats::active::read()),
        read(stats::metadata::read()),
        read(stats::resident::read()),
        read(stats::mapped::read()),
        read(stats::retained::read()),
    );
    // Free slots of partly used slabs, by size class (all arenas merged), the largest first.
    let raw = |name: String| {
        let name = format!("{name}\0");
        // SAFETY: each name read here is a size_t or uint32_t jemalloc statistic or constant.
        unsafe { tikv_jemalloc_ctl::raw::read::<usize>(name.as_bytes()) }.ok()
    };
    let raw32 = |name: String| {
        let name = format!("{name}\0");
        // SAFETY: as above, for the uint32_t ones.
        unsafe { tikv_jemalloc_ctl::raw::read::<u32>(name.as_bytes()) }.ok().map(|n| n as usize)
    };
    let bins = raw32("arenas.nbins".into()).unwrap_or(0);
    let mut free: Vec<(usize, usize, usize, usize)> = Vec::new();
    for bin in 0..bins {
        let (Some(size), Some(regions)) =
            (raw(format!("arenas.bin.{bin}.size")), raw32(format!("arenas.bin.{bin}.nregs")))
        else {
            continue;
        };
        let used = raw(format!("stats.arenas.4096.bins.{bin}.curregs")).unwrap_or(0);
        let slabs = raw(format!("stats.arenas.4096.bins.{bin}.curslabs")).unwrap_or(0);
        free.push(((slabs * regions).saturating_sub(used) * size, size, used, slabs * regions));
    }
    free.sort_by(|a, b| b.cmp(a));
    for (wasted, size, used, regions) in free.iter().take(12) {
        println!("  size class {size:>6} B: {used:>9} used of {regions:>9} slots, free {}", mib(*wasted));
    }
}

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
        files.push(format!("{data}{}", ki_catalog::BUNDLED_SNAPSHOT_NAME));
        for (name, _) in ki_catalog::BUNDLED_RUN_FILES {
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
    // The allocator returns the build's freed pages within a second (ki's options, below).
    std::thread::sleep(std::time::Duration::from_secs(3));
    println!(
        "3 s later: live {}, given by jemalloc {}, RSS {}",
        mib(LIVE.load(Relaxed)),
        mib(USABLE.load(Relaxed)),
        rss()
    );
    jemalloc_stats();
    let (judgement, parts) = model.into_named_parts();
    for (name, part) in judgement.into_named_parts() {
        let before = LIVE.load(Relaxed);
        drop(part);
        println!("  index: {name:<31}{}", mib(before - LIVE.load(Relaxed)));
    }
    for (name, part) in parts {
        let before = LIVE.load(Relaxed);
        drop(part);
        println!("  model: {name:<31}{}", mib(before - LIVE.load(Relaxed)));
    }
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
