//! The CLI as a client (issue 19): every read command run with `--api URL` against a real
//! `ki serve` prints byte for byte what it prints reading the same catalog itself — as text,
//! with `--json` and with `--jsonl` — and exits the same way, refusals included. One SQLite
//! catalog of the bundled snapshot, served by a process this test starts.

mod common;

use std::process::Output;

use serde_json::Value;

/// Permalinks name where the index is served; a catalog read here names the public index.
const BASE_URL: &str = "https://kernelindex.dev";

const GQA: &str = "gqa_paged_decode_h32_kv4_d128_ps1";

fn ki(args: &[String]) -> Output {
    common::ki().args(args).env_remove("KI_DATABASE_URL").output().expect("ki runs")
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|a| a.to_string()).collect()
}

/// Runs `command` from the catalog and from the index, in each output format, and asserts
/// the same bytes and exit; returns the catalog's `--json` output.
fn same_both_ways(command: &[&str], local: &[String], remote: &[String]) -> Output {
    let mut json = None;
    for format in [None, Some("--json"), Some("--jsonl")] {
        let mut args = strings(command);
        args.extend(format.map(str::to_string));
        let here = ki(&[args.clone(), local.to_vec()].concat());
        let there = ki(&[args.clone(), remote.to_vec()].concat());
        let shown =
            |o: &Output| format!("{}{}", String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr));
        assert_eq!(here.status.code(), there.status.code(), "{args:?}:\n{}\n---\n{}", shown(&here), shown(&there));
        // (`search` with no hit exits 1 like grep; only a refusal says why on stderr.)
        if here.status.code() == Some(1) && here.stdout.is_empty() && !here.stderr.is_empty() {
            // A refusal: the same words, the index's naming its URL besides.
            let (a, b) = (String::from_utf8_lossy(&here.stderr), String::from_utf8_lossy(&there.stderr));
            assert!(b.starts_with(a.trim_end()) && b.contains(" (GET http://"), "{args:?}:\n{a}---\n{b}");
            if format == Some("--json") {
                json = Some(here);
            }
            continue;
        }
        // (`--jsonl` of an empty list is no line at all.)
        assert!(format == Some("--jsonl") || !here.stdout.is_empty(), "{args:?} printed nothing:\n{}", shown(&here));
        if here.stdout != there.stdout {
            let (a, b) = (String::from_utf8_lossy(&here.stdout), String::from_utf8_lossy(&there.stdout));
            let line = a.lines().zip(b.lines()).position(|(x, y)| x != y).unwrap_or(0);
            panic!(
                "{args:?}: --api prints other bytes, from line {}:\n  catalog: {:?}\n  api:     {:?}",
                line + 1,
                a.lines().nth(line),
                b.lines().nth(line)
            );
        }
        if format == Some("--json") {
            json = Some(here);
        }
    }
    json.expect("the --json form ran")
}

fn document(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).expect("--json prints one JSON document")
}

#[test]
fn every_read_command_prints_the_same_from_a_running_index() {
    let directory = tempfile::tempdir().unwrap();
    let database = common::bundled_sqlite(directory.path(), "catalog.db");
    let server = common::start_server_with(directory.path(), &database, &["--base-url", BASE_URL]);
    let local = strings(&["--database", &database]);
    let remote = strings(&["--api", &format!("http://{}", server.addr)]);

    let found = document(&same_both_ways(&["search", "gqa", "decode"], &local, &remote));
    assert!(found["results"].as_array().unwrap().iter().any(|r| r["label"] == GQA), "{found}");
    same_both_ways(&["search", "no-such-thing-anywhere"], &local, &remote);

    let case = [
        "resolve",
        "--operation",
        GQA,
        "--axis",
        "batch_size=1",
        "--axis",
        "len_indptr=2",
        "--axis",
        "num_kv_indices=11",
        "--axis",
        "num_pages=12",
        "--hardware",
        "NVIDIA H200",
    ];
    let answer = document(&same_both_ways(&case, &local, &remote));
    // Measured on the H200 under two protocols (the runner's realistic page tables, and the
    // verification lane's): the answer offers both groups, ours first.
    assert_eq!(answer["mode"], "chooser", "{answer}");
    assert_eq!(answer["cohorts"].as_array().unwrap().len(), 2, "{answer}");
    let fastest = answer["cohorts"][0]["fastest"].as_array().unwrap();
    assert!(fastest.len() >= 2, "our own H200 runs: native and FlashInfer both ways");
    let (first, second) = (fastest[0]["runId"].as_str().unwrap(), fastest[1]["runId"].as_str().unwrap());
    // The public snapshot's B200 case, an unmeasured case (nearest cases), and an operation
    // that does not exist (exit 1).
    let b200 = ["--axis", "batch_size=16", "--axis", "num_pages=1070", "--hardware", "NVIDIA B200"];
    same_both_ways(&[&["resolve", "--operation", GQA][..], &b200].concat(), &local, &remote);
    same_both_ways(&["resolve", "--operation", GQA, "--axis", "num_kv_indices=5000"], &local, &remote);
    same_both_ways(&["resolve", "--operation", "no_such_op"], &local, &remote);

    let dossier = document(&same_both_ways(&["show", "run", first], &local, &remote));
    assert_eq!(dossier["id"], first);
    assert_eq!(dossier["citation"]["permalink"].as_str().map(|p| p.starts_with(BASE_URL)), Some(true));
    same_both_ways(&["show", "run", &first[..13]], &local, &remote);

    let comparison = document(&same_both_ways(&["compare", first, second], &local, &remote));
    assert_eq!(comparison["sameComparisonGroup"], true);

    let records = document(&same_both_ways(&["records"], &local, &remote));
    assert!(records["total"].as_u64().unwrap() > 100, "{records}");
    same_both_ways(&["records", "--page", "2"], &local, &remote);

    // Refusals: the same words from both (the index's answer names its URL besides).
    for command in [vec!["show", "run", "ffffffff-0000"], vec!["compare", first, "ffffffff-0000"]] {
        let mut words = Vec::new();
        for source in [&local, &remote] {
            let output = ki(&[strings(&command), source.clone()].concat());
            assert_eq!(output.status.code(), Some(1), "{command:?}");
            let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
            assert!(stderr.contains("no run matches \"ffffffff-0000\""), "{command:?}: {stderr}");
            words.push(stderr);
        }
        assert!(words[1].contains(&format!("http://{}/api/v1/", server.addr)), "{}", words[1]);
    }
}

#[test]
fn an_index_that_is_not_there_is_named_in_the_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}");
    let output = ki(&strings(&["search", "gqa", "--api", &url]));
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains(&format!("GET {url}/api/v1/search?q=gqa")), "{stderr}");

    let output = ki(&strings(&["search", "gqa", "--api", "ftp://example.org"]));
    assert!(String::from_utf8_lossy(&output.stderr).contains("give an http:// or https:// URL"));
    let output = ki(&strings(&["search", "gqa", "--api", &url, "--database", "sqlite://x.db"]));
    assert!(!output.status.success(), "--api and --database together are refused");
}

/// `ki runs` and `ki changes` (the API's run list and change feed), the same from both.
#[test]
fn runs_and_changes_print_the_same_from_a_running_index() {
    let directory = tempfile::tempdir().unwrap();
    let database = common::bundled_sqlite(directory.path(), "catalog.db");
    let server = common::start_server_with(directory.path(), &database, &["--base-url", BASE_URL]);
    let local = strings(&["--database", &database]);
    let remote = strings(&["--api", &format!("http://{}", server.addr)]);

    let page = document(&same_both_ways(
        &["runs", "--operation", GQA, "--hardware", "NVIDIA H200", "--limit", "7"],
        &local,
        &remote,
    ));
    assert_eq!(page["runs"].as_array().unwrap().len(), 7);
    let cursor = page["nextCursor"].as_str().expect("more than one page").to_string();
    let next = ["runs", "--operation", GQA, "--hardware", "NVIDIA H200", "--limit", "7", "--cursor", &cursor];
    same_both_ways(&next, &local, &remote);
    same_both_ways(&["runs", "--evidence", "verified", "--status", "incorrect_numerical"], &local, &remote);
    same_both_ways(&["runs", "--evidence", "nope"], &local, &remote);

    let changes = document(&same_both_ways(&["changes", "--since", "2026-11-01T00:00:00Z"], &local, &remote));
    let events = changes["events"].as_array().unwrap();
    assert!(!events.is_empty() && events.iter().all(|e| e["at"].as_str().unwrap() > "2026-11-01"), "{changes}");
    same_both_ways(&["changes", "--since", "2026-11-01T00:00:00Z", "--limit", "3"], &local, &remote);
    same_both_ways(&["changes", "--since", "yesterday"], &local, &remote);
}

/// Paging `ki runs` through the whole bundled catalog lists every run exactly once.
#[test]
fn paging_runs_lists_every_run_once() {
    let directory = tempfile::tempdir().unwrap();
    let database = common::bundled_sqlite(directory.path(), "catalog.db");
    let mut seen = std::collections::BTreeSet::new();
    let mut cursor: Option<String> = None;
    let mut total = None;
    loop {
        let mut args = strings(&["runs", "--limit", "1000", "--json", "--database", &database]);
        args.extend(cursor.iter().flat_map(|c| ["--cursor".to_string(), c.clone()]));
        let output = ki(&args);
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let page = document(&output);
        total.get_or_insert(page["total"].as_u64().unwrap());
        for run in page["runs"].as_array().unwrap() {
            assert!(seen.insert(run["id"].as_str().unwrap().to_string()), "{} listed twice", run["id"]);
        }
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(Some(seen.len() as u64), total);
    assert!(seen.len() > 8000, "the bundled catalog has {} runs", seen.len());
}
