//! `ki resolve`, `ki show run`, `ki records` and `ki compare` run as a user runs them:
//! on the shared export file, on a SQLite catalog and on the PostgreSQL catalog.

use std::path::PathBuf;
use std::process::{Command, Output};

use serde_json::Value;

fn export() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/catalog-2026-08-16-0022af0b.jsonl.zst")
}

fn ki(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ki")).args(args).env_remove("KI_DATABASE_URL").output().expect("ki runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

const GQA_CASE: [&str; 12] = [
    "--operation",
    "gqa_paged_decode_h32_kv4_d128_ps1",
    "--axis",
    "batch_size=16",
    "--axis",
    "num_pages=1070",
    "--axis",
    "len_indptr=17",
    "--axis",
    "num_kv_indices=1020",
    "--hardware",
    "NVIDIA B200",
];

fn resolve_json(source: &[&str]) -> Value {
    let mut args = vec!["resolve"];
    args.extend(GQA_CASE);
    args.push("--json");
    args.extend(source);
    let output = ki(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    serde_json::from_slice(&output.stdout).expect("resolve --json prints JSON")
}

#[test]
fn resolve_names_the_flashinfer_wrapper_first_on_b200() {
    let path = export();
    let source = ["--export", path.to_str().unwrap()];
    let answer = resolve_json(&source);
    assert_eq!(answer["mode"], "exact");
    let leader = &answer["cohorts"][0]["fastest"][0];
    assert_eq!(leader["rank"], 1);
    assert_eq!(leader["value"], 19451.0);
    assert!(leader["implementation"].as_str().unwrap().contains("flashinfer-wrapper-78fd04"));

    let mut args = vec!["resolve"];
    args.extend(GQA_CASE);
    args.extend(source);
    let output = ki(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("mode: exact"), "{text}");
    let first_row = text.lines().find(|l| l.trim_start().starts_with("1 ")).expect("a rank-1 row");
    assert!(first_row.contains("flashinfer-wrapper-78fd04") && first_row.contains("19.5 µs"), "{first_row}");
    // The caveats of the JSON answer (ki_ranking's, the ones the web's resolve page shows), one
    // `caveat:` line each; this reported-only case has no verified run.
    let caveats: Vec<&str> =
        answer["cohorts"][0]["caveats"].as_array().unwrap().iter().map(|c| c["message"].as_str().unwrap()).collect();
    assert!(caveats.iter().any(|m| m.starts_with("best verified: none")), "{caveats:?}");
    for message in &caveats {
        assert!(text.contains(&format!("    caveat: {message}\n")), "{message} in {text}");
    }
    assert!(text.contains("best verified: none"), "{text}");

    // show run, by the short id a run page shows.
    let run_id = leader["runId"].as_str().unwrap();
    let output = ki(&["show", "run", &run_id[..18], "--export", path.to_str().unwrap()]);
    assert!(output.status.success(), "{}", stderr(&output));
    let page = stdout(&output);
    assert!(page.contains("Rank 1 in its comparison group") && page.contains("source-native comparison"), "{page}");
    assert!(page.contains("× reference") && page.contains(run_id));
    let output =
        ki(&["show", "run", leader["runDigest"].as_str().unwrap(), "--json", "--export", path.to_str().unwrap()]);
    let dossier: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(dossier["id"], run_id);
}

#[test]
fn an_unmeasured_case_prints_its_brackets_and_an_unknown_operation_fails() {
    let path = export();
    let output = ki(&[
        "resolve",
        "--operation",
        "gqa_paged_decode_h32_kv4_d128_ps1",
        "--axis",
        "batch_size=16",
        "--axis",
        "num_kv_indices=5000",
        "--export",
        path.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("mode: browse") && text.contains("never measured"), "{text}");
    assert!(
        text.contains("Nearest measured case below: num_kv_indices=")
            && text.contains("Nearest measured case above: num_kv_indices="),
        "{text}"
    );

    let output = ki(&["resolve", "--operation", "no_such_op", "--export", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stdout(&output).contains("no_such_op"));

    let output = ki(&["resolve", "--operation", "x", "--axis", "batch_size", "--export", path.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("--axis \"batch_size\": expected NAME=VALUE"), "{}", stderr(&output));

    let output = ki(&["show", "run", "ffffffff-0000", "--export", path.to_str().unwrap()]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("no run matches"), "{}", stderr(&output));
}

#[test]
fn records_page_by_page_and_compare_two_runs() {
    let path = export();
    let path = path.to_str().unwrap();
    let output = ki(&["records", "--json", "--export", path]);
    assert!(output.status.success(), "{}", stderr(&output));
    let first: Value = serde_json::from_slice(&output.stdout).unwrap();
    let records = first["records"].as_array().unwrap();
    assert_eq!(records.len(), 100);
    assert!(first["total"].as_u64().unwrap() > 100 && first["pages"].as_u64().unwrap() > 1, "{first}");
    let second: Value =
        serde_json::from_slice(&ki(&["records", "--page", "2", "--json", "--export", path]).stdout).unwrap();
    assert_eq!(second["page"], 2);
    // Newest first, across pages.
    let at: Vec<&str> =
        records.iter().chain(second["records"].as_array().unwrap()).map(|r| r["at"].as_str().unwrap()).collect();
    assert!(at.windows(2).all(|pair| pair[0] >= pair[1]), "{at:?}");
    let lines = stdout(&ki(&["records", "--jsonl", "--export", path]));
    assert_eq!(lines.lines().count(), 100);
    let text = stdout(&ki(&["records", "--export", path]));
    assert!(text.lines().last().unwrap().starts_with("page 1 of "), "{text}");

    // Two successive holders of one record: same comparison group.
    let with_previous = records.iter().find(|r| r["previous"].is_object()).unwrap();
    let new = with_previous["holder"]["id"].as_str().unwrap();
    let old = with_previous["previous"]["href"].as_str().unwrap().trim_start_matches("/runs/");
    let output = ki(&["compare", new, old, "--export", path]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("All runs are in one comparison group"), "{}", stdout(&output));
    let comparison: Value =
        serde_json::from_slice(&ki(&["compare", new, old, "--json", "--export", path]).stdout).unwrap();
    assert_eq!(comparison["runs"][0]["relativeToBestInGroup"], 1.0);
    assert!(comparison["runs"][1]["relativeToBestInGroup"].as_f64().unwrap() > 1.0);
    let output = ki(&["compare", new, "--export", path]);
    assert!(!output.status.success());
    assert!(stderr(&output).contains("2 to 8 runs"), "{}", stderr(&output));
}

#[test]
fn an_empty_sqlite_catalog_gets_the_snapshot_and_answers_the_same() {
    let directory = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", directory.path().join("catalog.db").display());
    let from_database = resolve_json(&["--database", &url]);
    let path = export();
    let from_export = resolve_json(&["--export", path.to_str().unwrap()]);
    assert_eq!(from_database["cohorts"], from_export["cohorts"]);
    assert_eq!(from_database["mode"], "exact");
}

#[test]
fn the_postgresql_catalog_answers_the_same() {
    if Command::new("psql").arg("--version").output().is_err() {
        eprintln!("skipped: psql is not installed to create a test schema");
        return;
    }
    let schema = format!("ranking_cli_{}", std::process::id());
    let psql = |sql: &str| {
        let output = Command::new("psql")
            .args(["-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-v", "ON_ERROR_STOP=1", "-c", sql])
            .output()
            .unwrap();
        assert!(output.status.success(), "psql {sql}: {}", stderr(&output));
    };
    psql(&format!("CREATE SCHEMA {schema}"));
    let url = format!("postgres://postgres@127.0.0.1:5432/test?options=-c%20search_path%3D{schema}");
    let result = std::panic::catch_unwind(|| resolve_json(&["--database", &url]));
    psql(&format!("DROP SCHEMA {schema} CASCADE"));
    let from_database = result.expect("resolve on PostgreSQL");
    let path = export();
    let from_export = resolve_json(&["--export", path.to_str().unwrap()]);
    assert_eq!(from_database["cohorts"], from_export["cohorts"]);
}

#[test]
fn an_unreachable_catalog_fails_at_once_naming_why_without_the_password() {
    // Port 1 refuses connections: the error must say so (a pool alone would retry for 30 s and
    // then say only "pool timed out"), and must not print the password.
    let output = ki(&["resolve", "--database", "postgres://reader:hunter2@127.0.0.1:1/catalog", "--operation", "x"]);
    assert!(!output.status.success());
    let message = stderr(&output);
    assert!(
        message.contains("Connection refused") && message.contains("postgres://reader:***@127.0.0.1:1/catalog"),
        "{message}"
    );
    assert!(!message.contains("hunter2"), "{message}");
    let sqlite = ki(&["resolve", "--database", "sqlite:///no/such/directory/k.db", "--operation", "x"]);
    assert!(!sqlite.status.success());
    assert!(stderr(&sqlite).contains("cannot open sqlite:///no/such/directory/k.db"), "{}", stderr(&sqlite));
}

/// `ki resolve` reads names as the search does (issue 34): a GPU as people write it, a loose
/// axis name and operation words, saying what it read as what; from an export and a catalog.
#[test]
fn resolve_reads_names_as_the_search_does() {
    let path = export();
    let output = ki(&[
        "resolve",
        "--operation",
        "gqa_paged_decode_h32_kv4_d128_ps1",
        "--hardware",
        "b200",
        "--axis",
        "batch=16",
        "--export",
        path.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("read hardware “b200” as NVIDIA B200"), "{text}");
    assert!(text.contains("read axis “batch” as batch_size"), "{text}");
    assert!(text.contains("Comparison group"), "{text}");

    let output = ki(&[
        "resolve",
        "--operation",
        "gqa paged decode",
        "--hardware",
        "B200",
        "--json",
        "--export",
        path.to_str().unwrap(),
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    let read: Vec<&str> = answer["readAs"].as_array().unwrap().iter().map(|r| r["field"].as_str().unwrap()).collect();
    assert_eq!(read, ["hardware", "operation"], "{answer}");
    assert!(answer["operation"]["name"].as_str().unwrap().contains("gqa_paged_decode"), "{answer}");
    assert!(answer["cohorts"].as_array().unwrap().iter().all(|c| c["hardware"] == "NVIDIA B200"), "{answer}");
}
