//! CPU time of one search, per query, on the bundled catalog's read model: the answer and its
//! JSON, as `GET /api/v1/search` pays it (without HTTP). Medians of many calls.
//!
//!     cargo run --release -p ki-server --example search_cost [QUERY...]

fn main() -> anyhow::Result<()> {
    let mut queries: Vec<String> = std::env::args().skip(1).collect();
    if queries.is_empty() {
        queries = [
            "gqa decode gpu:h200 batch_size=16",
            "rmsnorm hidden_size=4096 trust:verified",
            "gemm n=4096 k=4096 gpu:b200",
            "gqa paged decode",
            "rmsnrom",
        ]
        .map(str::to_string)
        .to_vec();
    }
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/");
    let mut rows = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for name in [
        "catalog-2026-08-16-0022af0b.jsonl.zst",
        "kernelindex-verified-h200-2026-11-30.jsonl.zst",
        "kernelindex-verify-h200-2026-12-01.jsonl.zst",
    ] {
        for row in ki_server::rows_from_export(std::path::Path::new(&format!("{data}{name}")))? {
            let id = row.row.get("id").and_then(|v| v.as_str()).map(str::to_string);
            if id.is_none_or(|id| seen.insert((row.table.clone(), id))) {
                rows.push(row);
            }
        }
    }
    let model = ki_server::model::ReadModel::build(rows)?;
    let rounds: usize = std::env::var("ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(200);
    println!("| query | median µs | p95 µs | JSON bytes | results |");
    println!("| --- | --- | --- | --- | --- |");
    for query in &queries {
        let mut times = Vec::with_capacity(rounds);
        let mut bytes = 0;
        let mut total = 0;
        for _ in 0..rounds {
            let started = std::time::Instant::now();
            let answer = model.search_answer(query, ki_server::pages::PAGE_LIMIT);
            let json = serde_json::to_vec(&answer)?;
            times.push(started.elapsed().as_secs_f64() * 1e6);
            bytes = json.len();
            total = answer.total;
        }
        times.sort_by(f64::total_cmp);
        println!("| `{query}` | {:.0} | {:.0} | {bytes} | {total} |", times[rounds / 2], times[rounds * 95 / 100]);
    }
    Ok(())
}
