//! Time of one search, per query, on a catalog (the bundled one when it is empty): the
//! catalog's search index, the read model's answer and its JSON, as `GET /api/v1/search` pays
//! it (without HTTP). Medians of many calls.
//!
//!     DATABASE=sqlite:///tmp/search.db cargo run --release -p ki-server --example search_cost [QUERY...]

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
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
    let url = std::env::var("DATABASE").unwrap_or_else(|_| "sqlite:///tmp/search-cost.db".to_string());
    let catalog = ki_catalog::Catalog::open(&url).await?;
    catalog.ensure_bundled_snapshot().await?;
    let model = ki_server::model_from_catalog(&catalog).await?;
    let rounds: usize = std::env::var("ROUNDS").ok().and_then(|r| r.parse().ok()).unwrap_or(200);
    if std::env::var("INDEX_ONLY").is_ok() {
        for query in &queries {
            let words = ki_ranking::query::parse_search(query).words;
            let mut times = Vec::new();
            let mut n = 0;
            for _ in 0..rounds {
                let started = std::time::Instant::now();
                n = catalog.search(&words).await?.len();
                times.push(started.elapsed().as_secs_f64() * 1e6);
            }
            times.sort_by(f64::total_cmp);
            println!("index only `{query}`: median {:.0} µs, {n} entries", times[rounds / 2]);
        }
    }
    println!("| query | median µs | p95 µs | JSON bytes | results |");
    println!("| --- | --- | --- | --- | --- |");
    for query in &queries {
        let mut times = Vec::with_capacity(rounds);
        let mut bytes = 0;
        let mut total = 0;
        for _ in 0..rounds {
            let started = std::time::Instant::now();
            let answer = model.search_answer(&catalog, query, ki_server::model::PAGE_LIMIT).await?;
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
