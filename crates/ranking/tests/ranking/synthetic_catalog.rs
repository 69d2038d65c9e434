//! Eligibility reasons, deployability, corrections in the ledger and row errors, on small
//! catalogs written out row by row in the export's format.

use ki_ranking::{CatalogRows, CohortProfile, DeployabilityReason, Index, ResolveMode, ResolveRequest, TrustLevel};
use serde_json::{Map, Value, json};

const KEY: &str = "sha256:1111111111111111111111111111111111111111111111111111111111111111";
const OTHER_KEY: &str = "sha256:2222222222222222222222222222222222222222222222222222222222222222";

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("test rows are objects"),
    }
}

/// A catalog of one operation, one workload, one project and one implementation.
fn base_rows() -> CatalogRows {
    let mut rows = CatalogRows::new();
    rows.push(
        "sources",
        object(
            json!({"id": "src", "slug": "test-source", "kind": "leaderboard", "name": "Test source", "createdAt": AT}),
        ),
        Some(1),
    );
    rows.push(
        "projects",
        object(json!({"id": "proj", "slug": "p", "name": "Project", "normalizedName": "project", "licenseExpression": null, "manifest": {}, "createdAt": AT})),
        Some(2),
    );
    rows.push(
        "operations",
        object(json!({
            "id": "op", "slug": "op-slug", "family": "elementwise", "name": "scale_add", "schemaVersion": "kernelindex.dev/v1alpha1",
            "semanticDigest": "sha256:op", "tags": [], "createdAt": AT,
            "manifest": {"spec": {"axes": {"n": {"role": "variable", "type": "integer"}, "k": {"role": "constant", "value": 4}}}}
        })),
        Some(3),
    );
    rows.push("operation_aliases", object(json!({"operationId": "op", "alias": "saxpy_like"})), Some(4));
    rows.push(
        "workloads",
        object(json!({
            "id": "w", "operationId": "op", "workloadDigest": "sha256:w", "schemaVersion": "kernelindex.dev/v1alpha1",
            "shapeSummary": "[1024]", "dtypes": ["fp32"], "layoutKeys": [], "createdAt": AT,
            "manifest": {"spec": {"axes": {"n": 1024}}}
        })),
        Some(5),
    );
    rows.push("implementations", object(implementation("impl", json!({}))), Some(6));
    rows
}

/// When the catalog's rows were made.
const AT: &str = "2026-08-01T00:00:00.000Z";

fn implementation(id: &str, overrides: Value) -> Value {
    let mut row = json!({
        "id": id, "projectId": "proj", "operationId": "op", "slug": format!("slug-{id}"),
        "implementationDigest": format!("sha256:{id}"), "sourceRevision": "", "language": "cuda", "targetArchitectures": [],
        "title": format!("Implementation {id}"), "createdAt": AT, "sourceAvailable": true, "installable": false,
        "licenseExpression": null, "installCommand": null, "manifest": {}
    });
    merge(&mut row, overrides);
    row
}

fn merge(row: &mut Value, overrides: Value) {
    for (key, value) in object(overrides) {
        row[key] = value;
    }
}

/// A passed, published run with a latency in ns; `overrides` changes any column.
fn run(id: &str, value: f64, observed_at: &str, overrides: Value) -> Map<String, Value> {
    let mut row = json!({
        "id": id, "runDigest": format!("sha256:digest-{id}"), "implementationId": "impl", "workloadId": "w",
        "sourceId": "src", "status": "passed", "observedAt": observed_at, "publishedAt": "2026-08-01T00:00:00.000Z",
        "hardwareModel": "NVIDIA B200", "protocolKey": "sha256:p", "environmentKey": "sha256:e", "correctnessKey": "sha256:c",
        "comparisonKey": KEY, "primaryMetric": "latency", "primaryValue": value, "primaryUnit": "ns", "primaryStatistic": "mean",
        "uncertaintyLow": null, "uncertaintyHigh": null, "reproducedByKernelindex": false, "independentReplicationCount": 0,
        "sourceAvailable": true, "hasRawEvidence": false, "sourceNative": false, "supersedesId": null, "retractedAt": null,
        "manifest": {}
    });
    merge(&mut row, overrides);
    object(row)
}

fn build(extra_runs: Vec<Map<String, Value>>) -> Index {
    let mut rows = base_rows();
    for (i, row) in extra_runs.into_iter().enumerate() {
        rows.push("benchmark_runs", row, Some(100 + i as u64));
    }
    Index::from_rows(&rows).expect("synthetic catalog indexes")
}

fn codes(index: &Index, id: &str) -> Vec<String> {
    index.facts[index.run_index(id).unwrap()].ineligibility().iter().map(|r| r.code()).collect()
}

#[test]
fn each_eligibility_reason_is_named() {
    let index = build(vec![
        run("ok", 10.0, "2026-01-01T00:00:00Z", json!({})),
        run("unpublished", 9.0, "2026-01-02T00:00:00Z", json!({"publishedAt": null})),
        run("crashed", 8.0, "2026-01-03T00:00:00Z", json!({"status": "runtime_error"})),
        run("compile", 8.0, "2026-01-03T00:00:00Z", json!({"status": "compile_error"})),
        run(
            "retracted",
            7.0,
            "2026-01-04T00:00:00Z",
            json!({"retractedAt": "2026-02-01T00:00:00Z", "retractionReason": "wrong harness"}),
        ),
        run("old", 6.0, "2026-01-05T00:00:00Z", json!({})),
        run("new", 6.5, "2026-01-06T00:00:00Z", json!({"supersedesId": "old"})),
        run("draft-fix", 20.0, "2026-01-06T00:00:00Z", json!({"supersedesId": "ok", "publishedAt": null})),
        run("no-metric", 5.0, "2026-01-07T00:00:00Z", json!({"primaryMetric": "none", "primaryValue": null})),
        run("nan-value", 5.0, "2026-01-07T00:00:00Z", json!({"primaryValue": null})),
        run(
            "many",
            5.0,
            "2026-01-08T00:00:00Z",
            json!({"publishedAt": null, "status": "timeout", "primaryMetric": null}),
        ),
    ]);
    assert!(codes(&index, "ok").is_empty(), "a draft correction does not supersede");
    assert_eq!(codes(&index, "unpublished"), ["UNPUBLISHED"]);
    assert_eq!(codes(&index, "crashed"), ["STATUS_RUNTIME_ERROR"]);
    assert_eq!(codes(&index, "compile"), ["STATUS_COMPILE_ERROR"]);
    assert_eq!(codes(&index, "retracted"), ["RETRACTED"]);
    assert_eq!(codes(&index, "old"), ["SUPERSEDED"]);
    assert!(codes(&index, "new").is_empty());
    assert_eq!(codes(&index, "no-metric"), ["MISSING_PRIMARY_METRIC"]);
    assert_eq!(codes(&index, "nan-value"), ["MISSING_PRIMARY_METRIC"]);
    assert_eq!(codes(&index, "many"), ["UNPUBLISHED", "STATUS_TIMEOUT", "MISSING_PRIMARY_METRIC"]);
    // Only the eligible are ranked: new (6.5) then ok (10).
    let cohort = index.cohort(KEY).unwrap();
    let ranked: Vec<String> = cohort.ranking.iter().map(|e| index.runs[e.run].id.to_string()).collect();
    assert_eq!(ranked, ["new", "ok"]);
    let json = serde_json::to_value(index.run_summary(index.run_index("crashed").unwrap())).unwrap();
    assert_eq!(json["ineligibility"], json!(["STATUS_RUNTIME_ERROR"]));
}

#[test]
fn source_native_profile_ties_only_equal_values() {
    let interval = |low: f64, high: f64| json!({"uncertaintyLow": low, "uncertaintyHigh": high});
    let strict = build(vec![
        run("a", 10.0, "2026-01-01T00:00:00Z", interval(9.0, 11.0)),
        run("b", 10.5, "2026-01-02T00:00:00Z", interval(10.0, 11.0)),
    ]);
    let cohort = strict.cohort(KEY).unwrap();
    assert_eq!(cohort.profile, CohortProfile::StrictExact);
    assert!(cohort.ranking.iter().all(|e| e.rank == 1));
    // Same intervals, but one run is source-native: the cohort is, and they no longer tie.
    let mut native = interval(10.0, 11.0);
    native["sourceNative"] = json!(true);
    let mixed = build(vec![
        run("a", 10.0, "2026-01-01T00:00:00Z", interval(9.0, 11.0)),
        run("b", 10.5, "2026-01-02T00:00:00Z", native),
    ]);
    let cohort = mixed.cohort(KEY).unwrap();
    assert_eq!(cohort.profile, CohortProfile::SourceNative);
    assert_eq!(cohort.ranking.iter().map(|e| e.rank).collect::<Vec<_>>(), [1, 2]);
}

#[test]
fn trust_breaks_a_tie_before_recency() {
    let index = build(vec![
        run("newer", 10.0, "2026-03-01T00:00:00Z", json!({})),
        run("verified", 10.0, "2026-01-01T00:00:00Z", json!({"reproducedByKernelindex": true})),
        run("replicated", 10.0, "2025-01-01T00:00:00Z", json!({"independentReplicationCount": 2})),
        run("evidence", 10.0, "2025-06-01T00:00:00Z", json!({"hasRawEvidence": true})),
    ]);
    let cohort = index.cohort(KEY).unwrap();
    let order: Vec<(String, TrustLevel)> =
        cohort.ranking.iter().map(|e| (index.runs[e.run].id.to_string(), index.facts[e.run].trust)).collect();
    let order: Vec<(&str, TrustLevel)> = order.iter().map(|(id, trust)| (id.as_str(), *trust)).collect();
    assert_eq!(
        order,
        [
            ("replicated", TrustLevel::Replicated),
            ("verified", TrustLevel::Verified),
            ("evidence", TrustLevel::Reproducible),
            ("newer", TrustLevel::Reported)
        ]
    );
    let answer = index.resolve(&ResolveRequest {
        operation: "saxpy_like".into(),
        axes: [("n".into(), json!(1024))].into(),
        ..Default::default()
    });
    assert_eq!(answer.mode, ResolveMode::Exact);
    assert_eq!(answer.cohorts[0].best_verified.as_ref().unwrap().run_id, "replicated");
}

#[test]
fn deployability_names_each_missing_requirement() {
    let mut rows = base_rows();
    rows.push(
        "implementations",
        object(implementation(
            "deployable",
            json!({"licenseExpression": "MIT OR GPL-3.0-only", "installCommand": "pip install fastkernel"}),
        )),
        Some(7),
    );
    rows.push(
        "implementations",
        object(implementation("copyleft", json!({"licenseExpression": "GPL-3.0-only AND MIT", "installable": true}))),
        Some(8),
    );
    rows.push(
        "implementations",
        object(implementation("garbled", json!({"licenseExpression": "MIT AND (", "sourceAvailable": false}))),
        Some(9),
    );
    for (i, implementation) in ["impl", "deployable", "copyleft", "garbled"].iter().enumerate() {
        rows.push(
            "benchmark_runs",
            run(implementation, 10.0 + i as f64, "2026-01-01T00:00:00Z", json!({"implementationId": implementation})),
            Some(20 + i as u64),
        );
    }
    let index = Index::from_rows(&rows).unwrap();
    let reasons = |id: &str| index.facts[index.run_index(id).unwrap()].deployability.reasons.clone();
    use DeployabilityReason::*;
    assert_eq!(reasons("impl"), [NoLicense, NoInstallRecipe]);
    assert_eq!(reasons("deployable"), []);
    assert_eq!(reasons("copyleft"), [LicenseNotPermissive]);
    assert_eq!(reasons("garbled"), [NoPublicSource, LicenseUnparseable, NoInstallRecipe]);
    let view = index.cohort_view(0, 5);
    assert_eq!(view.best_deployable.unwrap().run_id, "deployable");
    assert_eq!(view.fastest[0].run_id, "impl");
}

#[test]
fn implementations_are_listed_by_operation_and_project_and_found_by_id() {
    let mut rows = base_rows();
    rows.push("projects", object(json!({"id": "other", "slug": "o", "name": "Other", "normalizedName": "other", "manifest": {}, "createdAt": AT})), Some(7));
    rows.push("implementations", object(implementation("second", json!({"projectId": "other"}))), Some(8));
    // An operation id that names no operation is no error: the implementation is listed under none.
    rows.push("implementations", object(implementation("orphan", json!({"operationId": "gone"}))), Some(9));
    rows.push("implementations", object(implementation("third", json!({}))), Some(10));
    let index = Index::from_rows(&rows).expect("an unknown operation id is not refused");
    let place = |id: &str| index.implementation_index(id).unwrap();
    assert_eq!([place("impl"), place("second"), place("orphan"), place("third")], [0, 1, 2, 3]);
    assert_eq!(index.implementation_index("gone"), None);
    assert_eq!(index.operation_index("op"), Some(0));
    assert_eq!(index.operation_index("op-slug"), None, "an id, not a slug");
    assert_eq!(index.operation_implementations(0), [0, 1, 3]);
    assert_eq!(index.operation_implementations(1), [] as [usize; 0], "an operation out of range has none");
    assert_eq!(index.project_implementations(0), [0, 2, 3]);
    assert_eq!(index.project_implementations(1), [1]);
    assert_eq!(index.project_implementations(2), [] as [usize; 0]);
}

#[test]
fn baseline_speedup_uses_the_marked_implementation() {
    let mut rows = base_rows();
    rows.push("implementations", object(implementation("torch", json!({"role": "baseline"}))), Some(7));
    rows.push("benchmark_runs", run("fast", 25.0, "2026-01-01T00:00:00Z", json!({})), Some(10));
    rows.push(
        "benchmark_runs",
        run("reference", 100.0, "2026-01-01T00:00:00Z", json!({"implementationId": "torch"})),
        Some(11),
    );
    let index = Index::from_rows(&rows).unwrap();
    assert_eq!(index.facts[index.run_index("fast").unwrap()].baseline_speedup.get(), Some(4.0));
    assert_eq!(index.facts[index.run_index("reference").unwrap()].baseline_speedup.get(), Some(1.0));
    let without = build(vec![run("fast", 25.0, "2026-01-01T00:00:00Z", json!({}))]);
    assert_eq!(without.facts[0].baseline_speedup.get(), None);
}

#[test]
fn ledger_is_a_running_best_with_no_event_for_an_equal_value() {
    let index = build(vec![
        run("first", 100.0, "2026-01-01T00:00:00Z", json!({})),
        run("slower", 120.0, "2026-01-02T00:00:00Z", json!({})),
        run("better", 80.0, "2026-01-03T00:00:00Z", json!({})),
        run("equal", 80.0, "2026-01-04T00:00:00Z", json!({})),
        // Same instant as "best": ties in observedAt go by id, so "a-best" comes first.
        run("z-best", 50.0, "2026-01-05T00:00:00Z", json!({})),
        run("a-best", 50.0, "2026-01-05T00:00:00Z", json!({})),
        run("failed", 1.0, "2026-01-06T00:00:00Z", json!({"status": "runtime_error"})),
        run("elsewhere", 1.0, "2026-01-06T00:00:00Z", json!({"comparisonKey": OTHER_KEY})),
    ]);
    let events = index.ledger_for_cohort(0);
    let chain: Vec<(&str, Option<&str>, &str)> =
        events.iter().map(|e| (e.run_id.as_str(), e.previous_run_id.as_deref(), e.cause.as_str())).collect();
    assert_eq!(
        chain,
        [("first", None, "new_run"), ("better", Some("first"), "new_run"), ("a-best", Some("better"), "new_run")]
    );
    assert!(events.iter().all(|e| e.policy_version == "ranking-v1"));
    assert_eq!(events[1].at.text(), "2026-01-03T00:00:00Z");
    // Idempotent: same rows, same ledger; stored as-is, nothing is pending.
    assert_eq!(index.ledger_for_cohort(0), events);
    assert_eq!(index.recompute_ledger().len(), 4);
}

#[test]
fn a_retraction_appends_an_event_for_the_new_leader_and_deletes_nothing() {
    let index = build(vec![
        run("first", 100.0, "2026-01-01T00:00:00Z", json!({})),
        run("second", 90.0, "2026-01-02T00:00:00Z", json!({})),
        run(
            "cheat",
            10.0,
            "2026-01-03T00:00:00Z",
            json!({"retractedAt": "2026-02-01T00:00:00Z", "retractionReason": "did not compute the op"}),
        ),
        run("later", 95.0, "2026-03-01T00:00:00Z", json!({})),
    ]);
    let events = index.ledger_for_cohort(0);
    let chain: Vec<(&str, Option<&str>, &str, String)> = events
        .iter()
        .map(|e| (e.run_id.as_str(), e.previous_run_id.as_deref(), e.cause.as_str(), e.at.text().into_owned()))
        .collect();
    assert_eq!(
        chain,
        [
            ("first", None, "new_run", "2026-01-01T00:00:00Z"),
            ("second", Some("first"), "new_run", "2026-01-02T00:00:00Z"),
            ("cheat", Some("second"), "new_run", "2026-01-03T00:00:00Z"),
            ("second", Some("cheat"), "retraction", "2026-02-01T00:00:00Z"),
        ]
        .map(|(run, previous, cause, at)| (run, previous, cause, at.to_string()))
    );
    // The retracted run stays in the catalog, unranked, with its reason.
    let cheat = index.run_index("cheat").unwrap();
    assert_eq!(index.facts[cheat].rank(), None);
    assert_eq!(index.runs[cheat].retraction_reason.as_deref(), Some("did not compute the op"));
}

#[test]
fn superseding_the_leader_hands_the_record_on() {
    let index = build(vec![
        run("first", 100.0, "2026-01-01T00:00:00Z", json!({})),
        run("leader", 50.0, "2026-01-02T00:00:00Z", json!({})),
        run("fix", 70.0, "2026-01-05T00:00:00Z", json!({"supersedesId": "leader"})),
    ]);
    let chain: Vec<(String, Option<String>, String)> =
        index.ledger_for_cohort(0).into_iter().map(|e| (e.run_id, e.previous_run_id, e.cause)).collect();
    assert_eq!(
        chain,
        [
            ("first".into(), None, "new_run".into()),
            ("leader".into(), Some("first".into()), "new_run".into()),
            ("fix".into(), Some("leader".into()), "supersession".into()),
        ]
    );
}

#[test]
fn stored_events_are_diffed_and_pending_ones_listed() {
    let mut rows = base_rows();
    rows.push("benchmark_runs", run("first", 100.0, "2026-01-01T00:00:00Z", json!({})), Some(10));
    rows.push("benchmark_runs", run("second", 90.0, "2026-01-02T00:00:00Z", json!({})), Some(11));
    rows.push(
        "record_events",
        object(json!({"id": "e1", "comparisonKey": KEY, "runId": "first", "previousRunId": null, "policyVersion": "ranking-v1",
                      "cause": "new_run", "at": "2026-01-01 00:00:00+00"})),
        Some(12),
    );
    let index = Index::from_rows(&rows).unwrap();
    let report = index.verify_record_events();
    assert!(!report.is_clean());
    assert_eq!(report.mismatches[0].missing.len(), 1);
    assert!(report.mismatches[0].unexpected.is_empty(), "the PostgreSQL spelling of the same instant matches");
    let pending = index.pending_ledger_events();
    assert_eq!(pending.len(), 1);
    assert_eq!(pending[0].run_id, "second");
}

#[test]
fn bad_rows_are_refused_naming_line_and_field() {
    let mut rows = base_rows();
    rows.push("benchmark_runs", run("bad", 10.0, "2026-01-01T00:00:00Z", json!({"primaryValue": "fast"})), Some(42));
    let err = Index::from_rows(&rows).unwrap_err().to_string();
    assert!(err.contains("line 42") && err.contains("/primaryValue") && err.contains("bad"), "{err}");

    let mut rows = base_rows();
    rows.push("benchmark_runs", run("late", 10.0, "2026-01-01T00:00:00", json!({})), Some(43));
    let err = Index::from_rows(&rows).unwrap_err().to_string();
    assert!(err.contains("line 43") && err.contains("/observedAt") && err.contains("offset"), "{err}");

    let mut rows = base_rows();
    rows.push(
        "benchmark_runs",
        run("orphan", 10.0, "2026-01-01T00:00:00Z", json!({"workloadId": "missing"})),
        Some(44),
    );
    let err = Index::from_rows(&rows).unwrap_err().to_string();
    assert!(err.contains("line 44") && err.contains("/workloadId") && err.contains("missing"), "{err}");

    let mut rows = base_rows();
    rows.push("benchmark_runs", run("twice", 10.0, "2026-01-01T00:00:00Z", json!({})), Some(45));
    rows.push("benchmark_runs", run("twice", 11.0, "2026-01-01T00:00:00Z", json!({})), Some(46));
    let err = Index::from_rows(&rows).unwrap_err().to_string();
    assert!(err.contains("line 46") && err.contains("duplicate id twice"), "{err}");

    let mut rows = base_rows();
    let mut missing = run("incomplete", 10.0, "2026-01-01T00:00:00Z", json!({}));
    missing.remove("comparisonKey");
    rows.push("benchmark_runs", missing, Some(47));
    let err = Index::from_rows(&rows).unwrap_err().to_string();
    assert!(err.contains("line 47") && err.contains("comparisonKey"), "{err}");

    assert!(!base_rows().push("serving_runs", Map::new(), None), "serving rows are not the ranking's");
}

#[test]
fn higher_is_better_metrics_rank_and_record_the_other_way() {
    let throughput = json!({"primaryMetric": "throughput", "primaryUnit": "tokens/s"});
    let index = build(vec![
        run("low", 100.0, "2026-01-01T00:00:00Z", throughput.clone()),
        run("high", 300.0, "2026-01-02T00:00:00Z", throughput),
    ]);
    let cohort = index.cohort(KEY).unwrap();
    assert_eq!(index.runs[cohort.ranking[0].run].id, "high");
    assert_eq!(index.ledger_for_cohort(0).len(), 2);
}

#[test]
fn a_hardware_filter_that_removes_everything_says_where_the_case_was_measured() {
    let index = build(vec![run("b200", 10.0, "2026-01-01T00:00:00Z", json!({}))]);
    let mut request = ResolveRequest {
        operation: "scale_add".into(),
        axes: [("n".into(), json!(1024.0))].into(),
        ..Default::default()
    };
    assert_eq!(index.resolve(&request).mode, ResolveMode::Exact, "1024.0 and 1024 are one case");
    request.hardware = Some("nvidia b200".into());
    assert_eq!(index.resolve(&request).mode, ResolveMode::Exact, "hardware matches without regard to case");
    request.hardware = Some("NVIDIA H100".into());
    let answer = index.resolve(&request);
    assert_eq!(answer.mode, ResolveMode::None);
    assert!(answer.notes.iter().any(|n| n.contains("NVIDIA B200")), "{:?}", answer.notes);
    request.hardware = None;
    request.dtypes = vec!["fp16".into()];
    assert_eq!(index.resolve(&request).mode, ResolveMode::None, "the workload does not use fp16");
}

#[test]
fn a_framework_filter_finds_a_group_by_any_of_its_eligible_runs() {
    let mut rows = base_rows();
    rows.push("implementations", object(implementation("triton", json!({"framework": "Triton"}))), Some(7));
    rows.push("implementations", object(implementation("cuda", json!({"framework": "CUDA"}))), Some(8));
    let runs = [
        run("t", 10.0, "2026-01-01T00:00:00Z", json!({"implementationId": "triton"})),
        // A failed run's framework does not make its group measured for that framework.
        run("c", 12.0, "2026-01-02T00:00:00Z", json!({"implementationId": "cuda", "status": "runtime_error"})),
        run("c2", 11.0, "2026-01-03T00:00:00Z", json!({"implementationId": "cuda", "comparisonKey": OTHER_KEY})),
    ];
    for (i, row) in runs.into_iter().enumerate() {
        rows.push("benchmark_runs", row, Some(100 + i as u64));
    }
    let index = Index::from_rows(&rows).expect("synthetic catalog indexes");
    let mut request = ResolveRequest {
        operation: "scale_add".into(),
        axes: [("n".into(), json!(1024))].into(),
        ..Default::default()
    };
    assert_eq!(index.resolve(&request).cohorts.len(), 2, "both groups measured n = 1024");
    request.framework = Some("triton".into());
    let answer = index.resolve(&request);
    assert_eq!(answer.mode, ResolveMode::Exact);
    assert_eq!(answer.cohorts.len(), 1);
    assert_eq!(answer.cohorts[0].comparison_key, KEY);
    request.framework = Some("CUDA".into());
    let answer = index.resolve(&request);
    assert_eq!(answer.cohorts.len(), 1);
    assert_eq!(answer.cohorts[0].comparison_key, OTHER_KEY, "the failed CUDA run's group is not measured for CUDA");
    request.framework = Some("jax".into());
    assert_eq!(index.resolve(&request).mode, ResolveMode::None);
}

#[test]
fn an_answer_lists_ten_groups_unless_the_request_asks_for_between_one_and_fifty() {
    let mut rows = base_rows();
    // One workload measured in 13 comparison groups (13 environments, say).
    for group in 0..13u64 {
        let key = format!("sha256:{group:064x}");
        let row = run(&format!("r{group}"), 10.0 + group as f64, "2026-01-01T00:00:00Z", json!({"comparisonKey": key}));
        rows.push("benchmark_runs", row, Some(100 + group));
    }
    let index = Index::from_rows(&rows).expect("synthetic catalog indexes");
    let mut request = ResolveRequest {
        operation: "scale_add".into(),
        axes: [("n".into(), json!(1024))].into(),
        ..Default::default()
    };
    let answer = index.resolve(&request);
    assert_eq!((answer.mode, answer.cohorts.len(), answer.omitted_cohorts), (ResolveMode::Chooser, 10, 3));
    request.limit = Some(3);
    let answer = index.resolve(&request);
    assert_eq!((answer.cohorts.len(), answer.omitted_cohorts), (3, 10));
    request.limit = Some(50);
    let answer = index.resolve(&request);
    assert_eq!((answer.cohorts.len(), answer.omitted_cohorts), (13, 0));
    let listed: Vec<&str> = answer.cohorts.iter().map(|c| c.comparison_key.as_str()).collect();
    request.limit = Some(4);
    let first_four: Vec<String> = index.resolve(&request).cohorts.into_iter().map(|c| c.comparison_key).collect();
    assert_eq!(first_four, listed[..4], "a smaller limit lists the first groups of the same order");
    for wrong in [0, 51, usize::MAX] {
        request.limit = Some(wrong);
        let err = request.cohort_limit().unwrap_err();
        assert_eq!(err.to_string(), format!("limit takes 1 to 50 comparison groups, got {wrong}"));
    }
    assert_eq!(serde_json::to_value(ResolveRequest::default()).unwrap().get("limit"), None, "absent stays absent");
}

/// What a search leads with (`Index::resolve_lead`): groups with a verified run first, whatever their
/// size; the evidence filters applied to each group's runs (a group none pass is dropped); the
/// leader is the first group's fastest verified run, else its #1; and when the workload asked
/// was not measured, the nearest one, naming the axis that differs.
#[test]
fn a_search_leads_with_verified_groups_filtered_runs_and_the_nearest_workload() {
    let h200 = json!({"comparisonKey": OTHER_KEY, "hardwareModel": "NVIDIA H200"});
    let mut verified_h200 = h200.clone();
    verified_h200["reproducedByKernelindex"] = json!(true);
    let index = build(vec![
        run("b200-fast", 5.0, "2026-01-01T00:00:00Z", json!({})),
        run("b200-mid", 6.0, "2026-01-01T00:00:00Z", json!({})),
        run("b200-slow", 7.0, "2026-01-01T00:00:00Z", json!({})),
        run("h200-reported", 4.0, "2026-01-01T00:00:00Z", h200),
        run("h200-verified", 8.0, "2026-01-01T00:00:00Z", verified_h200),
    ]);
    let id = |summary: &Option<ki_ranking::RunSummary>| summary.as_ref().map(|s| s.run_id.clone()).unwrap_or_default();
    let request = ResolveRequest {
        operation: "scale_add".into(),
        axes: [("n".into(), json!(1024))].into(),
        limit: Some(50),
        ..Default::default()
    };

    let (answer, lead) = index.resolve_lead(&request, None, 10);
    assert_eq!(answer.cohorts[0].hardware.as_deref(), Some("NVIDIA H200"), "the verified group leads, though smaller");
    assert_eq!(id(&lead.leader), "h200-verified");
    assert_eq!(id(&lead.fastest), "h200-reported", "the faster reported run is named beside it");
    assert!(lead.differs.is_empty());

    // Only reported runs pass: no group has a verified run, so the larger leads.
    let reported = |run: usize| !index.facts[run].trust.is_verified();
    let (answer, lead) = index.resolve_lead(&request, Some(&reported), 10);
    assert_eq!(answer.cohorts.len(), 2);
    assert_eq!(answer.cohorts[0].hardware.as_deref(), Some("NVIDIA B200"));
    assert_eq!((id(&lead.leader), lead.fastest.is_none()), ("b200-fast".to_string(), true));
    assert_eq!(answer.cohorts[1].eligible_runs, 1, "the H200 group counts the runs that pass");

    // `trust:verified`: the B200 group has none and is dropped; the H200 one keeps its verified run.
    let verified = |run: usize| index.facts[run].trust.is_verified();
    let (answer, lead) = index.resolve_lead(&request, Some(&verified), 10);
    assert_eq!(answer.cohorts.len(), 1);
    assert_eq!(answer.cohorts[0].fastest.iter().map(|r| r.run_id.as_str()).collect::<Vec<_>>(), ["h200-verified"]);
    assert_eq!(id(&lead.leader), "h200-verified");

    // n = 2000 was never measured: the nearest workload (n = 1024) leads, saying so.
    let unmeasured = ResolveRequest { axes: [("n".into(), json!(2000))].into(), ..request.clone() };
    let answer = index.resolve(&unmeasured);
    assert!(answer.cohorts.is_empty() && !answer.nearest.is_empty());
    let (answer, lead) = index.resolve_lead(&unmeasured, None, 1);
    assert_eq!(lead.differs.len(), 1);
    assert_eq!(
        (lead.differs[0].axis.as_str(), &lead.differs[0].asked, &lead.differs[0].measured),
        ("n", &json!(2000), &json!(1024))
    );
    assert_eq!(answer.cohorts.len(), 1, "the nearest workload's groups, within the limit");
    assert_eq!(id(&lead.leader), "h200-verified");
}
