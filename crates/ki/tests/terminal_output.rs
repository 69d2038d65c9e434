//! What `ki` prints is sanitized (issue 17): a string from outside — here a submission's
//! `metadata.title` holding ESC, BEL and CR sequences — reaches the terminal escaped, never raw.
//! The submission is a real one: a run of the bundled snapshot with its protocol and
//! environment, validated by the server's own bundle check and stored in a SQLite catalog the
//! way `POST /api/v1/submissions` stores it, then published by `ki admin publish`.

use std::process::Command;

use ki_catalog::{Catalog, Scope};
use serde_json::{Value, json};

/// A title that would clear the screen, ring the bell, rewrite its own line and turn text red.
const HOSTILE_TITLE: &str = "fast\u{1b}[2J\u{1b}]0;owned\u{7}kernel\rFORGED \u{1b}[31mred\u{9b}0m \u{202e}txet";

fn bundled_run_manifests() -> Value {
    let data = concat!(env!("CARGO_MANIFEST_DIR"), "/../../data/catalog-2026-08-16-0022af0b.jsonl.zst");
    let lines = ki_model::export::read_export(std::path::Path::new(data)).expect("the bundled snapshot reads");
    let run = lines.into_iter().find(|line| line.table == "benchmark_runs").expect("a benchmark run");
    run.row["manifest"].clone()
}

#[test]
fn admin_publish_prints_a_hostile_title_escaped() {
    let directory = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", directory.path().join("catalog.db").display());
    let mut wrapper = bundled_run_manifests();
    wrapper["run"]["metadata"]["title"] = json!(HOSTILE_TITLE);
    let bundle = serde_json::to_vec(&json!({ "runs": [wrapper] })).unwrap();

    let runtime = tokio::runtime::Runtime::new().unwrap();
    let submission_id = runtime.block_on(async {
        let catalog = Catalog::open(&url).await.unwrap();
        catalog.ensure_bundled_snapshot().await.unwrap();
        let (_, secret) = catalog.create_api_key("terminal test", &[Scope::Submit], 10).await.unwrap();
        let validated = ki_server::bundle::validate_bundle(&bundle).expect("the bundle is valid");
        assert_eq!(validated.title, HOSTILE_TITLE);
        let submission = catalog.add_submission(Some(&secret), validated.title, validated.documents).await.unwrap();
        catalog.close().await;
        submission.id
    });

    let output = Command::new(env!("CARGO_BIN_EXE_ki"))
        .args(["admin", "publish", &submission_id, "--database", &url])
        .env_remove("KI_DATABASE_URL")
        .output()
        .unwrap();
    let stdout = String::from_utf8(output.stdout).unwrap();
    assert!(output.status.success(), "{stdout}{}", String::from_utf8_lossy(&output.stderr));
    for raw in ['\u{1b}', '\u{7}', '\r', '\u{9b}', '\u{202e}'] {
        assert!(!stdout.contains(raw), "{raw:?} reached the terminal raw:\n{stdout:?}");
    }
    let escaped = "fast\\u001b[2J\\u001b]0;owned\\u0007kernel\\u000dFORGED \\u001b[31mred\\u009b0m \\u202etxet";
    assert!(stdout.contains(&format!("({escaped})")), "the title is shown escaped:\n{stdout}");
}

fn ki_output(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_ki")).args(args).env_remove("KI_DATABASE_URL").output().expect("ki runs")
}

/// `ki manifest validate` of an 800 KB file of `---` lines: one problem, not 200,000 lines.
#[test]
fn manifest_validate_prints_one_line_for_many_empty_documents() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("empty.yaml");
    std::fs::write(&path, "---\n".repeat(200_000)).unwrap();
    let output = ki_output(&["manifest", "validate", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert_eq!(stdout.lines().count(), 1, "{} lines", stdout.lines().count());
    assert!(stdout.contains("200000 empty documents"), "{stdout}");
}

/// `ki verify` and `ki verify --enqueue` read Solutions with the strict JSON reader, as `ki
/// manifest validate` reads manifests: a duplicate key is refused with its pointer, exit 1,
/// nothing written.
#[test]
fn ki_verify_refuses_duplicate_json_keys() {
    let dir = tempfile::tempdir().unwrap();
    let solution = dir.path().join("solution.json");
    std::fs::write(
        &solution,
        r#"{"name": "dup", "definition": "gemm_n128_k2048", "author": "x", "spec": {"language": "python", "language": "triton"}, "sources": []}"#,
    )
    .unwrap();
    let out = dir.path().join("out");
    let output = ki_output(&["verify", solution.to_str().unwrap(), "--out", out.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("/spec/language: duplicate key"), "{stderr}");
    assert!(!out.exists(), "ki verify wrote {}", out.display());
    let database = format!("sqlite://{}", dir.path().join("catalog.db").display());
    let output = ki_output(&[
        "verify",
        "--enqueue",
        solution.to_str().unwrap(),
        "--protocol",
        "kernelindex-rerun-v2",
        "--workload",
        "w",
        "--database",
        &database,
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("/spec/language: duplicate key"), "{stderr}");
}
