//! The search grammar's answers (`/api/v1/search` and the results page) on the bundled catalog
//! served from a real SQLite file and from the real PostgreSQL: the example queries get
//! their expected first answer on both, run ids, prefixes and external ids find their runs, a
//! typo gets "did you mean", unknown filters are named, and the page escapes what it echoes.

use serde_json::Value;

use crate::serving::{Database, Live, serve};

fn search(server: &Live, query: &str) -> Value {
    let path = format!("/api/v1/search?q={}", ki_server::model::percent_encode(query));
    let reply = server.get(&path);
    assert_eq!(reply.status, 200, "{query}: {}", reply.body);
    reply.json()
}

/// The first answer: the answered operation, the first match, and the first group's GPU and #1.
fn first_answer(answer: &Value) -> (String, String, String) {
    let operation = answer["answer"]["operation"]["name"].as_str().unwrap_or("").to_string();
    let first = answer["results"][0]["label"].as_str().unwrap_or("").to_string();
    let gpu = answer["answer"]["cohorts"][0]["hardware"].as_str().unwrap_or("").to_string();
    (operation, first, gpu)
}

fn the_examples_answer_alike(database: Database) {
    let server = serve(database.open_with_bundle(), ki_server::connections::Limits::default());
    for (query, operation, gpu) in [
        ("gqa decode gpu:h200 batch_size=16", "gqa_paged_decode_h32_kv4_d128_ps1", "NVIDIA H200"),
        ("rmsnorm hidden_size=4096 trust:verified", "rmsnorm_h4096", ""),
        ("gemm n=4096 k=4096 gpu:b200", "gemm_n4096_k4096", "NVIDIA B200"),
    ] {
        let answer = search(&server, query);
        let (answered, first, first_gpu) = first_answer(&answer);
        assert_eq!(answered, operation, "{} answers {query:?}", database.name);
        assert_eq!(first, operation, "{}: first match of {query:?}", database.name);
        if !gpu.is_empty() {
            assert_eq!(first_gpu, gpu, "{}: {query:?}", database.name);
            for cohort in answer["answer"]["cohorts"].as_array().unwrap() {
                assert_eq!(cohort["hardware"], gpu, "{query:?}: the GPU filter holds in the answer");
            }
        }
        // Every match passes the filters: under gpu:, each lists that GPU.
        if let Some(wanted) = query.split_whitespace().find_map(|w| w.strip_prefix("gpu:")) {
            for hit in answer["results"].as_array().unwrap() {
                let gpus: Vec<String> =
                    hit["gpus"].as_array().unwrap().iter().map(|g| g.as_str().unwrap().to_lowercase()).collect();
                assert!(gpus.iter().any(|g| g.contains(wanted)), "{query:?}: {hit}");
            }
        }
    }
    // The batch_size axis narrows the answer to groups measured at it.
    let answer = search(&server, "gqa decode gpu:h200 batch_size=16");
    for cohort in answer["answer"]["cohorts"].as_array().unwrap() {
        assert_eq!(cohort["axes"]["batch_size"], 16);
    }
    // The exact operation comes first and every operation says its runs and GPUs.
    let answer = search(&server, "gqa paged decode");
    let results = answer["results"].as_array().unwrap();
    assert!(results.iter().all(|r| r["runs"].is_u64() && r["gpus"].is_array()));
    let runs: Vec<u64> =
        results.iter().filter(|r| r["kind"] == "operation").map(|r| r["runs"].as_u64().unwrap()).collect();
    assert!(runs[0] > 0 && runs[0] >= *runs.last().unwrap(), "operations with runs lead: {runs:?}");
    let exact = search(&server, "gqa_paged_decode_h32_kv8_d128_ps1");
    assert_eq!(exact["results"][0]["label"], "gqa_paged_decode_h32_kv8_d128_ps1");
}

#[test]
fn the_example_queries_get_their_first_answer_on_sqlite() {
    the_examples_answer_alike(Database::sqlite());
}

#[test]
fn the_example_queries_get_their_first_answer_on_postgres() {
    the_examples_answer_alike(Database::postgres());
}

#[test]
fn ids_prefixes_digests_and_external_ids_find_their_runs_and_typos_get_a_suggestion() {
    let database = Database::sqlite();
    let server = serve(database.open_with_bundle(), ki_server::connections::Limits::default());
    let model = server.state.model();
    let row = model.run(0);
    let (id, digest) = (row.id.to_string(), row.run_digest.to_string());
    let (id, digest) = (id.as_str(), digest.as_str());
    for (query, by) in [(id, "id"), (digest, "digest"), (&id[..8], "id")] {
        let answer = search(&server, query);
        let records = answer["records"].as_array().unwrap();
        assert!(
            records.iter().any(|r| r["id"] == id && r["matchedBy"].as_str().unwrap().starts_with(by)),
            "{query}: {records:?}"
        );
    }
    let external = search(&server, "submission/555004");
    assert_eq!(external["records"][0]["matchedBy"], "external id");
    assert!(external["records"][0]["label"].as_str().unwrap().contains("555004"));

    // A typo is read as the nearest word of the lexicon: the results are the corrected query's,
    // and the page offers it.
    let typo = search(&server, "rmsnrom");
    assert!(typo["total"].as_u64().unwrap() > 0, "{typo}");
    assert_eq!(typo["didYouMean"], "rmsnorm");
    assert_eq!(typo["understood"]["corrections"][0], serde_json::json!(["rmsnrom", "rmsnorm"]));
    let page = server.get_with("/?q=rmsnrom", &[("accept", "text/html")]);
    assert!(page.body.contains("Did you mean") && page.body.contains("/?q=rmsnorm"));

    let unknown = search(&server, "gemm colour:red");
    assert!(unknown["request"]["notes"][0].as_str().unwrap().starts_with("colour: is not a filter"));
    let hostile = server.get_with("/?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E%20x:%3Cb%3E", &[("accept", "text/html")]);
    assert!(!hostile.body.contains("<script>alert(1)") && !hostile.body.contains("<b>"));
    assert!(hostile.body.contains("&lt;script&gt;"));
}

/// Queries of every kind: the examples, typos, ids, prefixes, a digest, an external id,
/// empty, filters only, and hostile text (FTS5 operators, quotes, LIKE wildcards, SQL, NUL).
fn queries(model: &ki_server::model::ReadModel) -> Vec<String> {
    let row = model.run(0);
    let (id, digest) = (row.id.to_string(), row.run_digest.to_string());
    let mut queries: Vec<String> = [
        "gqa decode gpu:h200 batch_size=16",
        "rmsnorm hidden_size=4096 trust:verified",
        "gemm n=4096 k=4096 gpu:b200",
        "gqa paged decode",
        "gqa paged decode h32",
        "gqa_paged_decode_h32_kv8_d128_ps1",
        "rmsnrom",
        "gemn decod gpu:h200",
        "flashinfr",
        "submission/555004",
        "",
        "   ",
        "gpu:h200",
        "trust:verified dtype:bf16",
        "family:gqa-paged-attention",
        "language:cuda installable:yes",
        "h2",
        "\"",
        "gqa\" OR \"gemm",
        "gemm* NEAR(gqa decode) haystack:x",
        "^rmsnorm {kind} -gemm +x",
        "50% off_ \\",
        "'; DROP TABLE search_entries; --",
        "gemm\u{0} x",
        "ünïcödé ΣΊΣΥΦΟΣ",
        "colour:red gemm",
    ]
    .map(str::to_string)
    .to_vec();
    queries.push(id.clone());
    queries.push(id[..8].to_string());
    queries.push(digest);
    queries.push("x".repeat(300));
    queries
}

/// Every query's whole JSON answer is the same from the SQLite and the PostgreSQL catalog.
#[test]
fn every_answer_is_the_same_on_sqlite_and_postgres() {
    let (sqlite_db, postgres_db) = (Database::sqlite(), Database::postgres());
    let sqlite = serve(sqlite_db.open_with_bundle(), ki_server::connections::Limits::default());
    let postgres = serve(postgres_db.open_with_bundle(), ki_server::connections::Limits::default());
    for query in queries(&sqlite.state.model()) {
        let (a, b) = (search(&sqlite, &query), search(&postgres, &query));
        assert_eq!(a, b, "{query:?}: SQLite and PostgreSQL differ");
    }
    let answer = search(&sqlite, "gqa paged decode h32");
    let hrefs: Vec<&str> = answer["results"].as_array().unwrap().iter().filter_map(|r| r["href"].as_str()).collect();
    assert!(hrefs.contains(&"/operations/gqa-paged-decode-h32-kv4-d128-ps1"), "{hrefs:?}");
    let hostile = search(&sqlite, "gemm* NEAR(gqa decode) haystack:x");
    assert_eq!(hostile["total"], 0, "operators are text: {hostile}");
    assert!(search(&sqlite, "gpu:h200")["total"].as_u64().unwrap() > 0, "a filter alone lists what passes it");
}

/// The plain-words queries (which answered nothing before) answer, every filter the words
/// meant is a chip linking to the query without it, and odd input — empty, 10,000 characters,
/// control characters, filters only, unknown words only — answers 200 with a message, escaped.
#[test]
fn plain_words_answer_with_chips_and_odd_input_gets_a_message() {
    let database = Database::sqlite();
    let server = serve(database.open_with_bundle(), ki_server::connections::Limits::default());
    // No MLA decode operation was measured on an H100: nothing matches, and the answer says that
    // without the GPU it finds some.
    let h100 = search(&server, "mla decode h100");
    assert_eq!(h100["total"], 0);
    assert_eq!(h100["withoutFilter"][0]["chip"]["label"], "NVIDIA H100", "{h100}");
    assert!(h100["withoutFilter"][0]["results"].as_u64().unwrap() > 0);
    for query in [
        "gqa paged decode h200 batch_size=16",
        "rmsnorm h200",
        "flashinfer h200",
        "llama 3.1 8b",
        "rmsnorm hidden 4096",
    ] {
        let answer = search(&server, query);
        assert!(answer["total"].as_u64().unwrap() > 0, "{query}: {answer}");
        assert!(answer["answer"]["operation"]["name"].is_string(), "{query}: {answer}");
    }
    // A word no name of the lexicon holds but an entry's text does is searched for as it stands.
    let native = search(&server, "kernelindex-native");
    assert!(
        native["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["label"].as_str().unwrap().starts_with("kernelindex-native")),
        "{native}"
    );
    assert_eq!(native["understood"]["unknown"], serde_json::json!([]));
    // `trust:verified` filters the answer: every listed run is verified.
    let verified = search(&server, "gqa paged decode batch_size=16 trust:verified");
    for cohort in verified["answer"]["cohorts"].as_array().unwrap() {
        for run in cohort["fastest"].as_array().unwrap() {
            assert_eq!(run["trust"], "verified", "{run}");
        }
    }
    // Without it, verified groups lead: the H200's, not B200 groups of one reported run.
    let plain = search(&server, "gqa paged decode batch_size=16");
    assert_eq!(plain["answer"]["cohorts"][0]["hardware"], "NVIDIA H200");
    assert_eq!(plain["lead"]["leader"]["trust"], "verified");

    let page = server.get_with("/?q=gqa+paged+decode+h200+batch+16+flashinfer", &[("accept", "text/html")]);
    assert_eq!(page.status, 200);
    for chip in ["/?q=gqa%20paged%20decode%20batch%2016%20flashinfer", "/?q=gqa%20paged%20decode%20h200%20flashinfer"] {
        assert!(page.body.contains(chip), "no chip linking to {chip}");
    }
    assert!(page.body.contains("lower is better") && page.body.contains("fastest verified"), "the answer's header");

    let control = "rmsnorm \u{7}\u{1b}[31m\u{202e} <b>x</b>";
    let long = "rmsnorm ".repeat(1250);
    for (query, says) in [
        // An empty query is the home page itself (the API says what to type).
        ("", "Most-measured operations"),
        ("   ", "Most-measured operations"),
        (long.as_str(), ""),
        (control, "Matched nothing"),
        ("trust:verified dtype:bf16", ""),
        ("zzqqxx wwvvkk", "No operation, GPU, model"),
        ("batch 16", "Axes alone"),
    ] {
        let path = format!("/?q={}", ki_server::model::percent_encode(query));
        let page = server.get_with(&path, &[("accept", "text/html")]);
        assert_eq!(page.status, 200, "{query:?}");
        assert!(page.body.contains(says), "{query:?}: no {says:?}");
        assert!(!page.body.contains("<b>x") && !page.body.contains('\u{1b}') && !page.body.contains('\u{202e}'));
        let api = search(&server, query);
        assert!(api["understood"].is_object(), "{query:?}");
        if query.trim().is_empty() {
            assert!(api["message"].as_str().unwrap().starts_with("Type an operation"), "{api}");
        }
    }
}
