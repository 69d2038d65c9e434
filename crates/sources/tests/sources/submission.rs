//! Community submissions published through the real catalog (a SQLite file): the
//! registry's fixture bundle becomes published Reported rows plus the record event of
//! its new comparison group, once; a later bundle may name what the catalog holds; a
//! bundle that names what nobody holds, or a kind the catalog has no table for, is
//! refused naming the manifest. The registry's serving examples publish as serving rows
//! whose digests and keys `ki catalog verify` recomputes.

use std::path::{Path, PathBuf};

use ki_catalog::{Catalog, CatalogError, ImportOptions, ImportReport};
use ki_model::rows::{
    BenchmarkRunRow, ImplementationRow, OperationRow, ProjectRow, ServingRunRow, ServingStackRevisionRow,
};
use ki_sources::publish::publish_rows;
use ki_sources::submission::{SubmissionError, SubmittedManifest, plan};
use serde_json::Value;

fn registry(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/kernelindex-registry").join(path)
}

/// The manifests of a registry file, the way the web stores a submission of it: each
/// implementation with the project slug its bundle entry names.
fn manifests(path: &str) -> Vec<SubmittedManifest> {
    let bytes = std::fs::read(registry(path)).unwrap();
    let bundle = ki_model::parse::parse_documents(&bytes).unwrap().remove(0).value;
    ki_model::manifest::parse_manifests(&bytes)
        .unwrap_or_else(|problems| panic!("{path}: {problems:?}"))
        .into_iter()
        .map(|valid| {
            let entry = valid.pointer.strip_suffix("/manifest").and_then(|at| bundle.pointer(at));
            let project_slug = entry.and_then(|e| e.get("projectSlug")).and_then(Value::as_str).map(str::to_string);
            SubmittedManifest { manifest: valid.value, project_slug }
        })
        .collect()
}

fn of_kind(all: &[SubmittedManifest], kinds: &[&str]) -> Vec<SubmittedManifest> {
    all.iter().filter(|m| kinds.contains(&m.manifest["kind"].as_str().unwrap_or(""))).cloned().collect()
}

fn inserted(report: &ImportReport, table: &str) -> u64 {
    report.table(table).map_or(0, |counts| counts.inserted)
}

const AT: &str = "2026-11-30T12:00:00.000Z";

async fn publish(catalog: &Catalog, manifests: &[SubmittedManifest]) -> Result<ImportReport, String> {
    let rows = plan(catalog, manifests, AT).await.map_err(|e| e.to_string())?;
    let options = ImportOptions { append_record_events: true, ..ImportOptions::default() };
    publish_rows(catalog, &rows, &options).await.map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_fixture_bundle_publishes_once() {
    let directory = tempfile::tempdir().unwrap();
    let catalog = Catalog::open(&format!("sqlite://{}", directory.path().join("c.db").display())).await.unwrap();
    let fixture = manifests("submissions/example-fixture.yaml");
    // The public index already has an operation named rmsnorm-h4096 (a different one).
    let export = ki_model::export::read_export(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/catalog-2026-08-16-0022af0b.jsonl.zst"),
    )
    .unwrap();
    let namesake: Vec<_> =
        export.into_iter().filter(|l| l.table == "operations" && l.row["slug"] == "rmsnorm-h4096").collect();
    catalog.import_lines(&namesake, &ImportOptions::default()).await.unwrap();

    // Nothing held yet: a run alone names parents nobody has.
    let run_only = of_kind(&fixture, &["BenchmarkRun", "BenchmarkProtocol", "ExecutionEnvironment"]);
    let refused = plan(&catalog, &run_only, AT).await.unwrap_err().to_string();
    assert!(
        refused.contains("BenchmarkRun") && refused.contains("neither the submission nor the catalog holds"),
        "{refused}"
    );
    // A run without its protocol cannot be keyed.
    let no_protocol = of_kind(
        &fixture,
        &[
            "SoftwareProject",
            "OperationSpec",
            "WorkloadCase",
            "ImplementationRevision",
            "BenchmarkRun",
            "ExecutionEnvironment",
        ],
    );
    let refused = plan(&catalog, &no_protocol, AT).await.unwrap_err().to_string();
    assert!(refused.contains("BenchmarkProtocol") && refused.contains("does not carry"), "{refused}");
    assert_eq!(
        catalog.row_counts().await.unwrap().iter().map(|(_, n)| n).sum::<u64>(),
        1,
        "a refused plan writes nothing"
    );

    // Had the slug been kept, the import would refuse, naming the clash (not the
    // workload that refers to the refused operation).
    let mut clashing = plan(&catalog, &fixture, AT).await.unwrap();
    let operation = clashing.iter_mut().find(|row| row.table == "operations").unwrap();
    operation.row.insert("slug".into(), Value::from("rmsnorm-h4096"));
    match publish_rows(&catalog, &clashing, &ImportOptions::default()).await {
        Err(CatalogError::Conflicts { first, .. }) => {
            assert!(first.reason.contains("slug rmsnorm-h4096 is already held"), "{first}")
        }
        other => panic!("a taken slug must be refused as a conflict, got {other:?}"),
    }

    let first = publish(&catalog, &fixture).await.expect("the fixture publishes");
    for table in [
        "sources",
        "projects",
        "operations",
        "workloads",
        "implementations",
        "benchmark_runs",
        "measurements",
        "record_events",
    ] {
        assert_eq!(inserted(&first, table), 1, "{table}");
    }
    let run = &catalog.rows::<BenchmarkRunRow>().await.unwrap()[0];
    assert_eq!(run.published_at.as_deref(), Some(AT));
    assert_eq!((run.reported, run.has_raw_evidence), (true, false));
    assert_eq!(run.primary_value, Some(8120.0));
    assert_eq!((run.uncertainty_low, run.uncertainty_high), (Some(8095.0), Some(8151.0)));
    let event = &first.record_events[0];
    assert_eq!(
        (event.run_id.as_str(), event.previous_run_id.as_deref(), event.cause.as_str()),
        (run.id.as_str(), None, "new_run")
    );
    let operation = catalog
        .rows_where::<OperationRow>(
            "semanticDigest",
            "sha256:7a3b25630f0628b21ed74b6adb588d28f7e29191f9038bed6f56ed393deefb5b",
        )
        .await
        .unwrap();
    assert_eq!(operation[0].slug, "rmsnorm-h4096-7a3b2563", "the namesake keeps its slug; the new one is told apart");
    let implementation = &catalog.rows::<ImplementationRow>().await.unwrap()[0];
    assert_eq!(implementation.project_id, catalog.rows::<ProjectRow>().await.unwrap()[0].id);

    // Again, or the run alone now that its parents are held: nothing new.
    assert_eq!(publish(&catalog, &fixture).await.unwrap().inserted(), 0);
    assert_eq!(publish(&catalog, &run_only).await.unwrap().inserted(), 0);

    // A WorkloadSuite has no table: refused by name, nothing written.
    let before = catalog.row_counts().await.unwrap();
    match plan(&catalog, &manifests("examples/workload-suite.yaml"), AT).await {
        Err(SubmissionError::Manifest { kind, message, .. }) => {
            assert_eq!(kind, "WorkloadSuite");
            assert!(message.contains("cannot be published"), "{message}");
        }
        other => panic!("a workload suite must be refused, got {other:?}"),
    }
    assert_eq!(catalog.row_counts().await.unwrap(), before);
    catalog.close().await;
}

/// The registry's five serving examples (a closed digest chain) as one submission.
fn serving_examples() -> Vec<SubmittedManifest> {
    ["model-revision", "serving-stack-revision", "serving-configuration", "serving-workload", "serving-run"]
        .iter()
        .flat_map(|name| manifests(&format!("examples/{name}.yaml")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serving_records_publish_once_and_verify() {
    let directory = tempfile::tempdir().unwrap();
    let catalog = Catalog::open(&format!("sqlite://{}", directory.path().join("c.db").display())).await.unwrap();
    let all = serving_examples();

    // The run alone names a model, configuration and workload nobody holds.
    let run_only = of_kind(&all, &["ServingRun"]);
    let refused = plan(&catalog, &run_only, AT).await.unwrap_err().to_string();
    assert!(
        refused.contains("ServingRun") && refused.contains("neither the submission nor the catalog holds"),
        "{refused}"
    );

    let report = publish(&catalog, &all).await.unwrap();
    for table in [
        "model_revisions",
        "serving_stack_revisions",
        "serving_configurations",
        "serving_workloads",
        "serving_runs",
        "projects",
    ] {
        assert_eq!(inserted(&report, table), 1, "{table}");
    }
    assert_eq!(inserted(&report, "serving_measurements"), 2);
    let run = &catalog.rows::<ServingRunRow>().await.unwrap()[0];
    assert_eq!(run.status, "valid");
    assert_eq!(run.scenario, "open_loop", "no source-native scenario: the workload's load generation");
    assert_eq!((run.accelerator_model.as_str(), run.accelerator_count, run.total_accelerators), ("NVIDIA B200", 2, 2));
    assert!(run.reported);
    assert_eq!(run.protocol_key, "example_loadgen/1.2.0/unspecified/streaming/open_loop");
    assert!(run.published_at.is_some());
    // The stack's project did not exist: it is made from the stack's spec.project.
    let project = &catalog.rows::<ProjectRow>().await.unwrap()[0];
    assert_eq!((project.slug.as_str(), project.name.as_str()), ("meridian-serve", "meridian-serve"));
    let stack = &catalog.rows::<ServingStackRevisionRow>().await.unwrap()[0];
    assert_eq!(stack.project_id, project.id);
    assert_eq!(stack.version, "0.4.1");

    // Again, or the run alone now that its parents are held: nothing new.
    assert_eq!(publish(&catalog, &all).await.unwrap().inserted(), 0);
    assert_eq!(publish(&catalog, &run_only).await.unwrap().inserted(), 0);

    // The export recomputes every serving digest and key.
    let export = directory.path().join("serving.jsonl.zst");
    catalog.export_to(&export).await.unwrap();
    let lines = ki_model::export::read_export(&export).unwrap();
    let report = ki_model::verify::verify_export(&lines);
    assert!(report.is_clean(), "{report:?}");
    assert!(lines.iter().any(|l| l.table == "serving_runs"));
    catalog.close().await;
}
