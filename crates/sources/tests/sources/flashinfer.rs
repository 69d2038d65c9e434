//! The FlashInfer-Bench importer against the real samples in fixtures/ and the public index's
//! export of the same records.

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ki_model::export::ExportLine;
use ki_model::identity;
use ki_sources::flashinfer::{ImportOptions, ImportPlan, plan_import};
use serde_json::{Map, Value};

/// This repository's root: the tests read fixtures/ and data/ only.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn samples() -> PathBuf {
    repository().join("fixtures/flashinfer-trace-samples")
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures")
}

fn export() -> &'static Vec<ExportLine> {
    static EXPORT: OnceLock<Vec<ExportLine>> = OnceLock::new();
    EXPORT.get_or_init(|| {
        let path = repository().join("data/catalog-2026-08-16-0022af0b.jsonl.zst");
        ki_model::export::read_export(path).expect("the shared export reads")
    })
}

fn export_rows(table: &str) -> impl Iterator<Item = &'static Map<String, Value>> + '_ {
    export().iter().filter(move |l| l.table == table).map(|l| &l.row)
}

fn options() -> ImportOptions {
    ImportOptions {
        imported_at: "2026-11-30T00:00:00Z".parse::<jiff::Timestamp>().unwrap(),
        ..ImportOptions::default()
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

fn place(from: &Path, to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    std::fs::copy(from, to).unwrap();
}

const LEGACY_SOLUTION: &str =
    "dataset/solutions/gqa/gqa_paged_decode_h32_kv8_d128_ps1/flashinfer_gqa_paged_decode_h32_kv8_d128_ps1.json";
const AGENT_SOLUTION: &str = "bench/test/results/fib_all_defs_20260317_141743/gpt-5.2/solutions/gpt-5.2/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1/gpt-5.2_gqa_paged_decode_h32_kv4_d128_ps1_cuda_optimized_r10_c0_high.json";

/// The samples laid out as one data set: definitions and workloads, the two example solutions
/// under solutions/<author>/…, and the fixture traces under traces/<author>/….
fn full_dataset() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy_tree(&samples().join("flashinfer_trace/definitions"), &root.join("definitions"));
    copy_tree(&samples().join("flashinfer_trace/workloads"), &root.join("workloads"));
    place(
        &samples().join(LEGACY_SOLUTION),
        &root.join("solutions/flashinfer/gqa_paged/gqa_paged_decode_h32_kv8_d128_ps1/flashinfer_gqa_paged_decode_h32_kv8_d128_ps1.json"),
    );
    place(
        &samples().join(AGENT_SOLUTION),
        &root.join("solutions/gpt-5.2/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1/gpt-5.2_gqa_paged_decode_h32_kv4_d128_ps1_cuda_optimized_r10_c0_high.json"),
    );
    place(
        &fixtures().join("traces/gpt-5.2.jsonl"),
        &root.join("traces/gpt-5.2/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.jsonl"),
    );
    place(
        &fixtures().join("traces/flashinfer.jsonl"),
        &root.join("traces/flashinfer/gqa_paged/gqa_paged_decode_h32_kv8_d128_ps1.jsonl"),
    );
    dir
}

fn count(plan: &ImportPlan, table: &str) -> usize {
    plan.table(table).count()
}

#[test]
fn samples_give_17_operations_and_96_workloads() {
    let plan = plan_import(&samples().join("flashinfer_trace"), &options()).expect("the samples import");
    assert_eq!(count(&plan, "operations"), 17);
    assert_eq!(count(&plan, "operation_aliases"), 17);
    assert_eq!(count(&plan, "workloads"), 96);
    assert_eq!(count(&plan, "benchmark_runs"), 0);
    assert_eq!(plan.summary.workloads, 96);
    // Every digest is the digest of the manifest beside it, and every workload names its operation.
    let operations: HashMap<&str, &str> =
        plan.table("operations").map(|r| (r["id"].as_str().unwrap(), r["semanticDigest"].as_str().unwrap())).collect();
    for r in plan.table("operations") {
        assert_eq!(identity::object_digest(&r["manifest"]).unwrap(), r["semanticDigest"].as_str().unwrap());
    }
    for r in plan.table("workloads") {
        assert_eq!(identity::object_digest(&r["manifest"]).unwrap(), r["workloadDigest"].as_str().unwrap());
        let operation = operations[r["operationId"].as_str().unwrap()];
        assert_eq!(r["manifest"]["spec"]["operationSpecDigest"], operation);
    }
}

#[test]
fn rows_have_exactly_the_export_columns() {
    let mut options = options();
    options.authors = vec!["gpt-5.2".into()];
    let dir = full_dataset();
    let plan = plan_import(dir.path(), &options).unwrap();
    let tables: BTreeSet<&str> = plan.rows.iter().map(|r| r.table).collect();
    for table in [
        "sources",
        "projects",
        "operations",
        "operation_aliases",
        "workloads",
        "implementations",
        "benchmark_runs",
        "measurements",
        "artifacts",
    ] {
        assert!(tables.contains(table), "the plan has no {table} rows");
    }
    for table in tables {
        let expected: BTreeSet<&String> = export_rows(table).next().unwrap().keys().collect();
        for row in plan.table(table) {
            let got: BTreeSet<&String> = row.keys().collect();
            assert_eq!(got, expected, "{table} columns");
        }
    }
}

#[test]
fn seed_workload_equals_the_export_field_for_field() {
    let plan = plan_import(&samples().join("flashinfer_trace"), &options()).unwrap();
    let ours = plan
        .table("workloads")
        .find(|r| r["manifest"]["metadata"]["name"].as_str().unwrap().ends_with("-ec96bc77"))
        .expect("the seed's workload is in the samples");
    let theirs = export_rows("workloads")
        .find(|r| r["workloadDigest"] == "sha256:e2f20ad104b19977f82ac6208878167a35ea8b1d5f3e10765ff45824695259fa")
        .expect("the export holds the seed's workload");
    assert_eq!(ours["workloadDigest"], theirs["workloadDigest"]);
    assert_eq!(ours["manifest"], theirs["manifest"], "spec and metadata");
    for column in ["schemaVersion", "shapeSummary", "dtypes", "layoutKeys"] {
        assert_eq!(ours[column], theirs[column], "{column}");
    }
    let axes = &ours["manifest"]["spec"]["axes"];
    assert_eq!(
        (axes["batch_size"].as_i64(), axes["num_pages"].as_i64(), axes["num_kv_indices"].as_i64()),
        (Some(16), Some(1070), Some(1020))
    );
}

#[test]
fn seed_operation_equals_the_export_in_spec_and_columns() {
    let plan = plan_import(&samples().join("flashinfer_trace"), &options()).unwrap();
    let ours = plan.table("operations").find(|r| r["name"] == "gqa_paged_decode_h32_kv4_d128_ps1").unwrap();
    let theirs = export_rows("operations")
        .find(|r| r["name"] == "gqa_paged_decode_h32_kv4_d128_ps1" && r["family"] == "gqa-paged")
        .unwrap();
    assert_eq!(ours["semanticDigest"], theirs["semanticDigest"]);
    assert_eq!(ours["manifest"]["spec"], theirs["manifest"]["spec"]);
    for column in ["slug", "family", "name", "schemaVersion", "tags", "supersedesId"] {
        assert_eq!(ours[column], theirs[column], "{column}");
    }
    // Metadata differs only where the README says: the source link names the revision the
    // rows came from, and labels keep the constraints and the reference code's digest.
    let (our_meta, their_meta) = (&ours["manifest"]["metadata"], &theirs["manifest"]["metadata"]);
    for field in ["name", "title", "description"] {
        assert_eq!(our_meta[field], their_meta[field], "metadata.{field}");
    }
    assert_eq!(our_meta["labels"]["constraint_0"], "len_indptr == batch_size + 1");
    let reference_digest = our_meta["labels"]["reference_digest"].as_str().unwrap();
    assert!(plan.table("artifacts").any(|a| a["contentDigest"] == reference_digest));
}

#[test]
fn how_many_sample_records_the_public_index_holds() {
    // Not a fixed number: it reports how far the older samples agree with the public index.
    let plan = plan_import(&samples().join("flashinfer_trace"), &options()).unwrap();
    let known_ops: BTreeSet<&str> = export_rows("operations").filter_map(|r| r["semanticDigest"].as_str()).collect();
    let known_workloads: BTreeSet<&str> =
        export_rows("workloads").filter_map(|r| r["workloadDigest"].as_str()).collect();
    let ops = plan.table("operations").filter(|r| known_ops.contains(r["semanticDigest"].as_str().unwrap())).count();
    let workloads =
        plan.table("workloads").filter(|r| known_workloads.contains(r["workloadDigest"].as_str().unwrap())).count();
    eprintln!("operations in the export: {ops}/17; workloads in the export: {workloads}/96");
    assert!(ops >= 1 && workloads >= 1);
}

#[test]
fn a_plan_is_reproducible() {
    let dir = full_dataset();
    let mut first_options = options();
    first_options.authors = vec!["gpt-5.2".into()];
    let first = plan_import(dir.path(), &first_options).unwrap();
    let mut later = first_options.clone();
    later.imported_at = "2027-01-01T12:00:00Z".parse::<jiff::Timestamp>().unwrap();
    let second = plan_import(dir.path(), &later).unwrap();
    assert_eq!(first.rows.len(), second.rows.len());
    for (a, b) in first.rows.iter().zip(&second.rows) {
        assert_eq!(a.table, b.table);
        assert_eq!(a.row.get("id"), b.row.get("id"), "ids come from digests, not time");
        for column in
            ["semanticDigest", "workloadDigest", "implementationDigest", "runDigest", "contentDigest", "manifest"]
        {
            assert_eq!(a.row.get(column), b.row.get(column), "{column}");
        }
    }
}

#[test]
fn agent_solutions_only_when_their_authors_are_named() {
    let dir = full_dataset();
    let plan = plan_import(dir.path(), &options()).unwrap();
    assert_eq!(count(&plan, "implementations"), 1, "only the flashinfer solution");
    assert_eq!(plan.summary.skipped_solutions, 1);
    assert_eq!(plan.summary.skipped_traces, 3);
    assert_eq!(count(&plan, "benchmark_runs"), 1);
    let project = plan.table("projects").next().unwrap();
    assert_eq!(project["slug"], "flashinfer-flashinfer");

    let mut named = options();
    named.authors = vec!["gpt-5.2".into()];
    let plan = plan_import(dir.path(), &named).unwrap();
    assert_eq!(count(&plan, "implementations"), 2);
    assert_eq!(count(&plan, "benchmark_runs"), 4);
    let agent = plan.table("implementations").find(|r| r["language"] == "cuda").unwrap();
    assert_eq!(agent["manifest"]["metadata"]["labels"]["provenance"], "llm-generated");
    assert_eq!(agent["manifest"]["spec"]["callable"]["path"], "main.cpp");
    assert_eq!(agent["manifest"]["spec"]["callable"]["symbol"], "run");
    // Each of the three source files is an artifact with its content digest.
    let solution: Value =
        serde_json::from_str(&std::fs::read_to_string(samples().join(AGENT_SOLUTION)).unwrap()).unwrap();
    for file in solution["sources"].as_array().unwrap() {
        let content = file["content"].as_str().unwrap();
        let digest = identity::sha256_digest(content.as_bytes());
        let artifact =
            plan.table("artifacts").find(|a| a["contentDigest"] == digest.as_str()).expect("artifact per file");
        assert_eq!(artifact["sizeBytes"], content.len());
        if file["path"] == "main.cpp" {
            assert_eq!(agent["manifest"]["spec"]["source"]["contentDigest"], digest.as_str());
        }
    }
    let agent_project = plan.table("projects").find(|r| r["id"] == agent["projectId"]).unwrap();
    assert_eq!(agent_project["manifest"]["metadata"]["labels"]["provenance"], "llm-generated");
}

#[test]
fn traces_map_to_runs_as_the_public_index_maps_them() {
    let dir = full_dataset();
    let mut named = options();
    named.authors = vec!["gpt-5.2".into()];
    let plan = plan_import(dir.path(), &named).unwrap();
    let runs: Vec<&Map<String, Value>> = plan.table("benchmark_runs").collect();
    let trace_lines: Vec<Value> = std::fs::read_to_string(fixtures().join("traces/gpt-5.2.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let export_runs: Vec<&Map<String, Value>> = export_rows("benchmark_runs")
        .filter(|r| r["manifest"]["run"]["spec"]["sourceNative"]["source"] == "flashinfer-bench")
        .collect();

    // Before the timer change: the public index's protocol and environment, digest for digest.
    let before = runs.iter().find(|r| r["observedAt"] == "2025-10-16T01:45:15.062Z").unwrap();
    let same_env = export_runs.iter().find(|r| r["environmentSummary"] == before["environmentSummary"]).unwrap();
    assert_eq!(before["environmentKey"], same_env["environmentKey"]);
    assert_eq!(before["manifest"]["environment"], same_env["manifest"]["environment"]);
    assert_eq!(before["protocolKey"], same_env["protocolKey"]);
    assert_eq!(before["manifest"]["protocol"], same_env["manifest"]["protocol"]);
    let seed_workload = plan.table("workloads").find(|w| w["id"] == before["workloadId"]).unwrap();
    assert_eq!(before["correctnessKey"], same_env["correctnessKey"]);
    assert_eq!(
        seed_workload["workloadDigest"],
        "sha256:e2f20ad104b19977f82ac6208878167a35ea8b1d5f3e10765ff45824695259fa"
    );
    let evaluation = &trace_lines[0]["evaluation"];
    let spec = &before["manifest"]["run"]["spec"];
    let latency_ns = (evaluation["performance"]["latency_ms"].as_f64().unwrap() * 1e6).round() as u64;
    assert_eq!(spec["timing"]["latencyNs"]["mean"], latency_ns);
    assert_eq!(before["primaryValue"], latency_ns);
    assert_eq!(
        spec["sourceNative"]["metrics"]["reference_latency_ms"],
        evaluation["performance"]["reference_latency_ms"]
    );
    assert_eq!(spec["sourceNative"]["metrics"]["speedup_factor"], evaluation["performance"]["speedup_factor"]);
    assert_eq!(spec["correctness"]["maximumRelativeError"], evaluation["correctness"]["max_relative_error"]);
    assert_eq!(before["status"], "passed");

    // After it: another protocol (CUPTI, median), so another digest and comparison key.
    let after = runs.iter().find(|r| r["observedAt"] == "2026-03-10T08:00:00.000Z").unwrap();
    assert_ne!(after["protocolKey"], before["protocolKey"]);
    assert_eq!(after["manifest"]["protocol"]["spec"]["measurement"]["primaryStatistic"], "median");
    assert_eq!(after["primaryStatistic"], "median");
    assert!(after["manifest"]["run"]["spec"]["timing"]["latencyNs"]["median"].is_u64());
    assert_ne!(after["comparisonKey"], before["comparisonKey"]);
    assert_eq!(after["workloadId"], before["workloadId"]);
    let median = plan.table("measurements").find(|m| m["runId"] == after["id"]).unwrap();
    assert_eq!(
        (median["metric"].as_str(), median["statistic"].as_str(), median["unit"].as_str()),
        (Some("latency"), Some("median"), Some("ns"))
    );

    // "NaN" / "Infinity" errors are not numbers a manifest can hold: the comparator stays, the values go.
    let numerical = runs.iter().find(|r| r["status"] == "incorrect_numerical").unwrap();
    let correctness = numerical["manifest"]["run"]["spec"]["correctness"].as_object().unwrap();
    assert_eq!(correctness.keys().collect::<Vec<_>>(), vec!["comparator"]);
    assert_eq!(numerical["primaryMetric"], "none");
    assert_eq!(numerical["hasRawEvidence"], true);
    let log = numerical["manifest"]["run"]["spec"]["evidence"]["logs"]["digest"].as_str().unwrap();
    let artifact = plan.table("artifacts").find(|a| a["contentDigest"] == log).unwrap();
    assert_eq!(artifact["kind"], "log");

    let runtime = runs.iter().find(|r| r["status"] == "runtime_error").unwrap();
    assert!(runtime["manifest"]["run"]["spec"].get("timing").is_none());
    assert!(runtime["manifest"]["run"]["spec"].get("correctness").is_none());
    assert!(plan.table("measurements").all(|m| m["runId"] != runtime["id"]));

    // Every key is what the record model recomputes from the manifests.
    for run in &runs {
        let workload = plan.table("workloads").find(|w| w["id"] == run["workloadId"]).unwrap();
        let m = &run["manifest"];
        let keys =
            identity::benchmark_run_keys(&m["run"], &m["protocol"], &m["environment"], &workload["manifest"]).unwrap();
        assert_eq!(run["runDigest"], keys.run_digest.as_str());
        assert_eq!(run["comparisonKey"], keys.comparison_key.as_str());
        let implementation = plan.table("implementations").find(|i| i["id"] == run["implementationId"]).unwrap();
        assert_eq!(m["run"]["spec"]["implementationDigest"], implementation["implementationDigest"]);
    }
}

/// A data set of the real definitions plus `extra` files (relative path → fixture).
fn dataset_with(extra: &[(&str, PathBuf)]) -> tempfile::TempDir {
    let dir = full_dataset();
    for (relative, fixture) in extra {
        place(fixture, &dir.path().join(relative));
    }
    dir
}

fn line_of(path: &Path, needle: &str) -> usize {
    std::fs::read_to_string(path).unwrap().lines().position(|l| l.contains(needle)).unwrap() + 1
}

fn refused(dir: &Path, file: &str) -> String {
    let errors = plan_import(dir, &options()).expect_err("the data set must be refused");
    assert_eq!(errors.0.len(), 1, "{errors}");
    let text = errors.to_string();
    assert!(text.contains(file), "{text} names {file}");
    text
}

#[test]
fn malformed_definitions_are_refused_with_file_and_line() {
    let cases = [
        ("reference_without_run", "\"reference\"", "global function named `run`"),
        ("shape_undeclared_axis", "\"num_heads\"", "does not declare"),
        ("input_output_same_name", "\"q\": {", "both an input and an output"),
    ];
    for (name, needle, reason) in cases {
        let fixture = fixtures().join(format!("definitions/{name}.json"));
        let relative = format!("definitions/gqa_paged/{name}.json");
        let dir = dataset_with(&[(&relative, fixture.clone())]);
        let text = refused(dir.path(), &relative);
        // The second match of "q" is the output; the others have one match.
        let placed = dir.path().join(&relative);
        let contents = std::fs::read_to_string(&placed).unwrap();
        let line = if name == "input_output_same_name" {
            contents.lines().enumerate().filter(|(_, l)| l.contains(needle)).nth(1).unwrap().0 + 1
        } else {
            line_of(&placed, needle)
        };
        assert!(text.contains(&format!("{relative}:{line}:")), "{text} should name line {line}");
        assert!(text.contains(reason), "{text}");
    }
}

#[test]
fn workloads_contradicting_their_definition_are_refused() {
    let target = "workloads/gqa_paged/gqa_paged_decode_h32_kv4_d128_ps1.jsonl";
    let dir = dataset_with(&[(target, fixtures().join("workloads/axes_contradict_constraint.jsonl"))]);
    let text = refused(dir.path(), &format!("{target}:3:"));
    assert!(text.contains("len_indptr == batch_size + 1"), "{text}");

    let dir = dataset_with(&[(target, fixtures().join("workloads/axes_contradict_const.jsonl"))]);
    let text = refused(dir.path(), &format!("{target}:2:"));
    assert!(text.contains("/workload/axes/num_qo_heads") && text.contains("const 32"), "{text}");
}

#[test]
fn a_trace_naming_an_unknown_solution_is_refused() {
    let target = "traces/flashinfer/gqa_paged/gqa_paged_decode_h32_kv8_d128_ps1.jsonl";
    let dir = dataset_with(&[(target, fixtures().join("traces/unknown_solution.jsonl"))]);
    let text = refused(dir.path(), &format!("{target}:2:"));
    assert!(text.contains("unknown solution \"no_such_solution\""), "{text}");
}

/// Traces become runs with no record events of their own; publishing them appends the events
/// ranking-v1 requires, so the catalog's ledger equals the recomputed one, and publishing
/// again appends nothing.
#[tokio::test(flavor = "multi_thread")]
async fn published_traces_get_their_record_events() {
    let data = full_dataset();
    let mut with_agents = options();
    with_agents.authors = vec!["gpt-5.2".into()];
    let plan = plan_import(data.path(), &with_agents).expect("the full data set imports");
    let runs = count(&plan, "benchmark_runs");
    assert!(runs > 1, "the fixture traces give runs");
    let dir = tempfile::tempdir().unwrap();
    let catalog =
        ki_catalog::Catalog::open(&format!("sqlite://{}", dir.path().join("catalog.db").display())).await.unwrap();
    let first = ki_sources::flashinfer::publish(&catalog, &plan, false, "full data set").await.unwrap();
    assert!(!first.record_events.is_empty(), "{first:?}");
    let index = catalog.ranking_index().await.unwrap();
    assert!(index.pending_ledger_events().is_empty(), "the stored ledger is complete");
    let again = ki_sources::flashinfer::publish(
        &catalog,
        &plan_import(data.path(), &with_agents).unwrap(),
        false,
        "full data set",
    )
    .await
    .unwrap();
    assert!(again.record_events.is_empty() && again.inserted() == 0, "{again:?}");
    catalog.close().await;
}

/// Every file read from a data set is bounded: a definition over 16 MiB is refused, naming
/// the file, without being read whole.
#[test]
fn an_oversized_definition_is_refused_by_size() {
    let dir = full_dataset();
    // A definition no workload names, so that its refusal is the only problem.
    let relative = "definitions/gqa_paged/gqa_paged_decode_h6_kv1_d128_ps64.json";
    let placed = dir.path().join(relative);
    let mut text = std::fs::read_to_string(&placed).unwrap();
    text.push_str(&" ".repeat(17 << 20));
    std::fs::write(&placed, text).unwrap();
    let message = refused(dir.path(), relative);
    assert!(message.contains("larger than 16777216 bytes (16 MiB)"), "{message}");
}
