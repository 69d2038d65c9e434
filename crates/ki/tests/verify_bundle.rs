//! `ki verify`'s records bundled in data/ (the H200 session of bench/verify/RESULTS-2026-12-01.md, its
//! rows in fixtures/verify-h200-2026-12-01): every run is KernelIndex's own re-run on an NVIDIA H200;
//! the passed ones are Verified with a latency; the failures carry their verdict and reason (the four
//! SOL-ExecBench negative controls refused by name); a fresh catalog imports them and `ki show run`
//! tells why a run failed.
mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;

use common::ki;
use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn lines(text: &str) -> Vec<Value> {
    text.lines().filter(|l| !l.trim().is_empty()).map(|l| serde_json::from_str(l).unwrap()).collect()
}

fn bundle() -> Vec<Value> {
    let path = root().join("data/kernelindex-verify-h200-2026-12-01.jsonl.zst");
    lines(&String::from_utf8(zstd::decode_all(std::fs::File::open(path).unwrap()).unwrap()).unwrap())
}

#[test]
fn the_bundle_is_the_sessions_published_rows() {
    let packed = root().join("fixtures/verify-h200-2026-12-01").join(ki_model::folder_archive::PACKED);
    let folder = ki_model::folder_archive::FolderArchive::read(&packed).unwrap();
    let published = std::str::from_utf8(folder.file("catalog-rows.bundle.jsonl").unwrap()).unwrap();
    assert_eq!(bundle(), lines(published));
}

#[test]
fn verified_runs_and_failures_with_reasons() {
    let rows = bundle();
    let runs: Vec<&Value> = rows.iter().filter(|l| l["table"] == "benchmark_runs").map(|l| &l["row"]).collect();
    assert!(!runs.is_empty());
    let mut verified_families = BTreeSet::new();
    let mut refusals = BTreeSet::new();
    for run in &runs {
        assert_eq!(run["reproducedByKernelindex"], true);
        assert_eq!(run["hardwareModel"], "NVIDIA H200");
        let manifest = &run["manifest"]["run"];
        let labels = &manifest["metadata"]["labels"];
        assert_eq!(labels["verdict"], run["status"]);
        if run["status"] == "passed" {
            assert!(run["primaryValue"].as_f64().unwrap() > 0.0, "{run}");
            assert_eq!(run["primaryMetric"], "latency");
            let method = labels["timing_method"].as_str().unwrap();
            assert!(method == "latency_in_graph" || method == "latency_cupti", "{method}");
            verified_families
                .insert(manifest["metadata"]["title"].as_str().unwrap().split(" · ").nth(1).unwrap().to_string());
        } else {
            assert!(run["primaryValue"].is_null(), "a failure is never ranked: {run}");
            let reason = manifest["metadata"]["description"].as_str().unwrap_or("");
            assert!(!reason.is_empty(), "a failure says why: {run}");
            if run["status"] == "suspected_reward_hack" {
                refusals.insert(labels["refused_by"].as_str().unwrap().to_string());
            }
            if run["status"] == "compile_error" {
                assert!(reason.contains("error"), "{reason}");
            }
        }
    }
    // The six gemm definitions have verified runs (baselines and PR 221 solutions).
    assert!(verified_families.iter().filter(|d| d.starts_with("gemm_")).count() >= 6, "{verified_families:?}");
    let expected: BTreeSet<String> =
        ["lazy_output", "monkey_patch", "side_stream", "thread_injection"].iter().map(|s| s.to_string()).collect();
    assert_eq!(refusals, expected, "the four negative controls, each refused by its own check");

    // A fresh catalog imports them; the run of a refused control says why.
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("kernelindex.db").display());
    let file = root().join("data/kernelindex-verify-h200-2026-12-01.jsonl.zst");
    let output = ki()
        .args(["catalog", "import"])
        .arg(&file)
        .args(["--database", &database])
        .env_remove("KI_DATABASE_URL")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let refused = runs.iter().find(|r| r["status"] == "suspected_reward_hack").unwrap();
    let output = ki()
        .args(["show", "run", refused["id"].as_str().unwrap(), "--json", "--database", &database])
        .env_remove("KI_DATABASE_URL")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("suspected_reward_hack") && text.contains("refused ("), "{text}");
}

/// The 2026-12-07 coverage publications (`bench/verify/coverage/publish.py` over each series'
/// calls, whose rows are in fixtures/verify-<card>-2026-12-07): every row is one a call wrote; one run
/// per implementation × workload, all on the card as the public index names it; passed runs are
/// ranked with their raw samples, failures are not ranked and say why, and no harness fault is
/// published as a run's (out of memory under the harness, a prefill workload with fewer KV tokens
/// than queries); the contents bundled beside each are exactly those its rows name.
#[test]
fn the_coverage_publications_are_the_calls_rows() {
    publication_is_the_calls_rows("h100", &["s25-call1", "s25-call2", "s27-call1"], "NVIDIA H100", 1600, 1100);
    publication_is_the_calls_rows("h200", &["s26-call1", "s26-call2", "s26-call3"], "NVIDIA H200", 800, 700);
}

fn publication_is_the_calls_rows(card: &str, calls: &[&str], hardware: &str, min_runs: usize, min_passed: usize) {
    let read = |path: PathBuf| {
        lines(&String::from_utf8(zstd::decode_all(std::fs::File::open(path).unwrap()).unwrap()).unwrap())
    };
    let rows_file = root().join(format!("data/kernelindex-verify-{card}-2026-12-07.jsonl.zst"));
    let published = read(rows_file.clone());
    let fixtures = root().join(format!("fixtures/verify-{card}-2026-12-07"));
    let written: std::collections::HashSet<String> = calls
        .iter()
        .flat_map(|call| read(fixtures.join(format!("{call}-catalog-rows.jsonl.zst"))))
        .map(|line| line.to_string())
        .collect();
    for line in &published {
        assert!(written.contains(&line.to_string()), "a row no call wrote: {}", &line.to_string()[..200]);
    }
    let axes_of: std::collections::HashMap<&str, &Value> = published
        .iter()
        .filter(|l| l["table"] == "workloads")
        .map(|l| (l["row"]["id"].as_str().unwrap(), &l["row"]["manifest"]["spec"]["axes"]))
        .collect();

    let runs: Vec<&Value> = published.iter().filter(|l| l["table"] == "benchmark_runs").map(|l| &l["row"]).collect();
    assert!(runs.len() > min_runs, "{card}: {} runs", runs.len());
    let mut cases = BTreeSet::new();
    for run in &runs {
        assert!(
            cases.insert((run["implementationId"].as_str(), run["workloadId"].as_str())),
            "two runs of one case: {run}"
        );
        assert_eq!(run["hardwareModel"], hardware);
        assert_eq!(run["reproducedByKernelindex"], true);
        let axes = axes_of[run["workloadId"].as_str().unwrap()];
        let kv = axes.get("num_kv_indices").or(axes.get("total_kv")).and_then(Value::as_u64);
        let queries = axes.get("total_q").and_then(Value::as_u64);
        assert!(!matches!((queries, kv), (Some(q), Some(k)) if k < q), "fewer KV tokens than queries: {run}");
        if run["status"] == "passed" {
            assert!(run["primaryValue"].as_f64().unwrap() > 0.0, "{run}");
            assert_eq!(run["hasRawEvidence"], true, "{run}");
        } else {
            assert!(run["primaryValue"].is_null(), "a failure is never ranked: {run}");
            let reason = run["manifest"]["run"]["metadata"]["description"].as_str().unwrap_or("");
            assert!(!reason.is_empty(), "a failure says why: {run}");
            // Out of memory under the harness is the harness's fault, never published as the run's.
            assert!(!reason.contains("OUT_OF_MEMORY") && !reason.contains("CUDA out of memory"), "{run}");
        }
    }
    let passed = runs.iter().filter(|r| r["status"] == "passed").count();
    assert!(passed > min_passed && passed < runs.len(), "{card}: {passed} of {} passed", runs.len());

    let export = ki_model::export::read_export(&rows_file).unwrap();
    let named: BTreeSet<String> = ki_catalog::contents::named_contents(&export).into_iter().map(|n| n.digest).collect();
    let name = format!("kernelindex-verify-{card}-2026-12-07.contents.jsonl.zst");
    let held: BTreeSet<String> =
        ki_catalog::contents::read_bundle(&name, &std::fs::read(root().join("data").join(&name)).unwrap())
            .unwrap()
            .into_iter()
            .map(|c| c.digest)
            .collect();
    assert_eq!(named, held);
}
