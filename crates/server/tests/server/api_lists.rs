//! Issue 19's API for agents and scripts, against a real server on the bundled catalog (a
//! SQLite file, as `ki serve` makes on first start): the run list and its cursor, the change
//! feed, the catalog export, CORS for reads, ETags.

use std::collections::BTreeSet;
use std::io::Read;

use crate::serving::{BUNDLED, Database, block_on, serve};
use serde_json::Value;

fn run_ids(page: &Value) -> Vec<String> {
    page["runs"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_string()).collect()
}

#[test]
fn paging_the_run_list_through_the_bundled_catalog_returns_every_run_exactly_once() {
    let server = &BUNDLED.server;
    let stored: BTreeSet<String> = block_on(server.state.catalog.rows::<ki_model::rows::BenchmarkRunRow>())
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert!(stored.len() > 8000, "the bundle holds {} runs", stored.len());
    let mut seen: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/v1/runs?limit=700&cursor={c}"),
            None => "/api/v1/runs?limit=700".to_string(),
        };
        let reply = server.get(&path);
        assert_eq!(reply.status, 200, "{}", reply.body);
        let page = reply.json();
        assert_eq!(page["total"], stored.len());
        let ids = run_ids(&page);
        assert!(ids.len() <= 700);
        seen.extend(ids);
        pages += 1;
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
        assert!(pages < 100, "the cursor does not advance");
    }
    let unique: BTreeSet<String> = seen.iter().cloned().collect();
    assert_eq!(unique.len(), seen.len(), "a run came back twice");
    assert_eq!(unique, stored, "the pages do not hold exactly the catalog's runs");
    assert_eq!(pages, stored.len().div_ceil(700));
    // The default page.
    assert_eq!(run_ids(&server.get("/api/v1/runs").json()).len(), 100);
}

#[test]
fn the_run_list_filters_and_names_what_is_wrong() {
    let server = &BUNDLED.server;
    let model = server.state.model();
    let index = &model.judgement;
    let operation = "gqa_paged_decode_h32_kv4_d128_ps1";
    let page = server.get(&format!("/api/v1/runs?operation={operation}&limit=1000")).json();
    let expected = (0..index.runs.len()).filter(|&r| index.operation_of(r).name == operation).count();
    assert!(expected > 0);
    assert_eq!(page["total"], expected);
    assert!(page["runs"].as_array().unwrap().iter().all(|r| r["operation"] == operation));

    let verified = server.get("/api/v1/runs?evidence=verified&hardware=nvidia%20h200&limit=1000").json();
    let expected = (0..index.runs.len())
        .filter(|&r| {
            index.facts[r].trust == ki_ranking::TrustLevel::Verified
                && index.runs[r].hardware_model.as_deref().is_some_and(|h| h.eq_ignore_ascii_case("NVIDIA H200"))
        })
        .count();
    assert!(expected > 0, "the bundle holds our verified H200 runs");
    assert_eq!(verified["total"], expected);
    assert!(verified["runs"].as_array().unwrap().iter().all(|r| r["evidence"] == "verified"));

    let seed = &index.runs[index.find_run(crate::serving::SEED_WORKLOAD_RUN).unwrap()];
    let implementation = &index.implementations.iter().find(|i| *i.id == *seed.implementation_id).unwrap().slug;
    let by_all = server
        .get(&format!(
            "/api/v1/runs?implementation={implementation}&workload={}&status={}&source=flashinfer-bench",
            seed.workload_id, seed.status
        ))
        .json();
    assert!(run_ids(&by_all).contains(&crate::serving::SEED_WORKLOAD_RUN.to_string()), "{by_all}");

    let problem = server.get("/api/v1/runs?evidence=trusted").problem(400);
    assert_eq!(problem["errors"][0]["pointer"], "/evidence");
    let problem = server.get("/api/v1/runs?operation=no_such_op").problem(404);
    assert_eq!(problem["errors"][0]["pointer"], "/operation");
    server.get("/api/v1/runs?cursor=not-a-cursor").problem(400);
    server.get("/api/v1/runs?limit=0").problem(400);
    server.get("/api/v1/runs?limit=many").problem(400);
    // Lengths are characters, as the schema's maxLength counts them: 200 (or 100) of them is
    // a reference looked up, one more is refused.
    let accented = |n: usize| "%C3%A9".repeat(n);
    server.get(&format!("/api/v1/runs/{}", accented(200))).problem(404);
    server.get(&format!("/api/v1/runs/{}", accented(201))).problem(400);
    server.get(&format!("/api/v1/verifications/{}", accented(100))).problem(404);
    server.get(&format!("/api/v1/verifications/{}", accented(101))).problem(400);
}

#[test]
fn the_feed_returns_an_event_written_after_since_and_none_before() {
    let database = Database::sqlite();
    let catalog = database.open_with_bundle();
    let server = serve(catalog.clone(), ki_server::connections::Limits::default());
    let everything = block_on(ki_server::pages::feed::all_events(&server.state)).unwrap();
    assert!(everything.len() > 1000, "the bundle's history: {} events", everything.len());
    std::thread::sleep(std::time::Duration::from_millis(20));
    let since = ki_model::utc::now_millis();
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(server.get(&format!("/api/v1/feed?since={since}")).json()["events"], serde_json::json!([]));

    // Retract the holder of a record: a correction and a record event, both after `since`.
    let model = server.state.model();
    let index = &model.judgement;
    let cohort = index.cohorts.iter().find(|c| c.ranking.len() >= 2).unwrap();
    let holder = index.runs[cohort.ranking[0].run].id.to_string();
    let report = block_on(catalog.retract_run(&holder, "feed test: measured on a throttled GPU", "api-test")).unwrap();
    assert!(!report.events.is_empty(), "the record moved");
    // The read model follows the catalog, as `ki serve --reload-every` does.
    let rows = crate::serving::catalog_rows(&catalog);
    server.state.replace_model(ki_server::model::ReadModel::build(rows).unwrap());

    let page = server.get(&format!("/api/v1/feed?since={since}")).json();
    let events = page["events"].as_array().unwrap();
    let kinds: Vec<&str> = events.iter().map(|e| e["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"correction") && kinds.contains(&"record"), "{kinds:?}");
    let correction = events.iter().find(|e| e["kind"] == "correction").unwrap();
    assert_eq!(correction["runId"], holder.as_str());
    assert_eq!(correction["action"], "retract");
    let since_instant = ki_ranking::Instant::parse(&since).unwrap();
    let times: Vec<ki_ranking::Instant> =
        events.iter().map(|e| ki_ranking::Instant::parse(e["at"].as_str().unwrap()).unwrap()).collect();
    assert!(times.iter().all(|t| *t > since_instant), "an event from before since");
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "not oldest first");

    // Without `since`, the whole history, paged by cursor, oldest first, each event once.
    let mut seen = 0;
    let mut cursor: Option<String> = None;
    let mut last: Option<ki_ranking::Instant> = None;
    loop {
        let path = match &cursor {
            Some(c) => format!("/api/v1/feed?limit=1000&cursor={c}"),
            None => "/api/v1/feed?limit=1000".to_string(),
        };
        let page = server.get(&path).json();
        for event in page["events"].as_array().unwrap() {
            let at = ki_ranking::Instant::parse(event["at"].as_str().unwrap()).unwrap();
            assert!(last.is_none_or(|l| l <= at));
            last = Some(at);
            seen += 1;
        }
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(seen, everything.len() + events.len());
    let problem = server.get("/api/v1/feed?since=yesterday").problem(400);
    assert_eq!(problem["errors"][0]["pointer"], "/since");
}

#[test]
fn the_latest_export_streams_the_catalog_with_its_sha256_and_row_count() {
    let server = &BUNDLED.server;
    let url = format!("{}/api/v1/exports/latest", server.base);
    let mut response = crate::serving::agent().get(&url).call().unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let header = |name: &str| response.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_string);
    assert_eq!(header("content-type").as_deref(), Some("application/zstd"));
    let sha256 = header("x-kernelindex-sha256").expect("the sha256 header");
    let rows: u64 = header("x-kernelindex-rows").expect("the row-count header").parse().unwrap();
    let etag = header("etag").unwrap();
    let mut body = Vec::new();
    response.body_mut().with_config().limit(1 << 30).reader().read_to_end(&mut body).unwrap();
    use sha2::Digest;
    assert_eq!(hex::encode(sha2::Sha256::digest(&body)), sha256);
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("latest.jsonl.zst");
    std::fs::write(&path, &body).unwrap();
    let lines = ki_model::export::read_export(&path).expect("the download is an export");
    assert_eq!(lines.len() as u64, rows);
    let runs = lines.iter().filter(|l| l.table == "benchmark_runs").count();
    assert_eq!(runs, server.state.model().judgement.runs.len(), "the export is the served catalog");
    let report = ki_model::verify::verify_export(&lines);
    assert!(report.is_clean(), "{report:?}");
    // The client that has it gets a 304, without the body.
    let again = server.get_with("/api/v1/exports/latest", &[("if-none-match", &etag)]);
    assert_eq!(again.status, 304);
    assert!(again.body.is_empty());
}

#[test]
fn reads_are_open_to_any_origin_and_writes_are_not() {
    let server = &BUNDLED.server;
    let read = server.get_with("/api/v1/operations", &[("origin", "https://example.org")]);
    assert_eq!(read.header("access-control-allow-origin"), Some("*"));
    assert!(read.header("access-control-expose-headers").unwrap().contains("etag"));
    let preflight = crate::serving::reply(
        crate::serving::agent()
            .run(
                ureq::http::Request::builder()
                    .method("OPTIONS")
                    .uri(format!("{}/api/v1/runs", server.base))
                    .header("origin", "https://example.org")
                    .header("access-control-request-method", "GET")
                    .header("access-control-request-headers", "if-none-match")
                    .body(())
                    .unwrap(),
            )
            .unwrap(),
    );
    assert_eq!(preflight.status, 204);
    assert_eq!(preflight.header("access-control-allow-methods"), Some("GET, HEAD"));
    assert!(preflight.header("access-control-allow-headers").unwrap().contains("if-none-match"));
    let write = server.post("/api/v1/resolve/kernel", "application/json", None, "{}");
    assert_eq!(write.header("access-control-allow-origin"), None);
}

#[test]
fn pages_and_json_carry_etags_and_answer_304_when_unchanged() {
    let server = &BUNDLED.server;
    for path in [
        "/api/v1/operations",
        "/operations",
        &format!("/runs/{}", crate::serving::SEED_WORKLOAD_RUN),
        "/api/v1/runs?limit=5",
        "/api/v1/feed?limit=5",
    ] {
        let first = server.get(path);
        assert_eq!(first.status, 200, "{path}");
        let etag = first.header("etag").unwrap_or_else(|| panic!("{path}: no ETag")).to_string();
        let again = server.get_with(path, &[("if-none-match", &etag)]);
        assert_eq!(again.status, 304, "{path}");
        assert!(again.body.is_empty());
        assert_eq!(again.header("etag"), Some(etag.as_str()));
        let other = server.get_with(path, &[("if-none-match", "\"something-else\"")]);
        assert_eq!(other.status, 200);
        assert_eq!(other.body, first.body);
    }
    assert_ne!(server.get("/api/v1/runs?limit=5").header("etag"), server.get("/api/v1/runs?limit=6").header("etag"));
}
