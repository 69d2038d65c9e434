//! Verifying the shared export: every field reproduces, and a single altered row is
//! found and named.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use ki_model::export::{ExportLine, read_export};
use ki_model::identity;
use ki_model::jcs;
use ki_model::verify::{FIELDS, verify_export};
use serde_json::Value;

fn shared_export() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/catalog-2026-08-16-0022af0b.jsonl.zst")
}

fn export() -> &'static [ExportLine] {
    static LINES: OnceLock<Vec<ExportLine>> = OnceLock::new();
    LINES.get_or_init(|| read_export(shared_export()).expect("the shared export reads"))
}

fn field_named(table: &str, name: &str) -> ki_model::verify::Field {
    *FIELDS.iter().find(|f| f.table == table && f.name == name).unwrap_or_else(|| panic!("no field {table}.{name}"))
}

#[test]
fn every_field_of_the_shared_export_reproduces() {
    let lines = export();
    let report = verify_export(lines);
    assert_eq!(report.rows(), lines.len() as u64);
    for tally in &report.fields {
        assert_eq!(
            tally.mismatched, 0,
            "{}.{}: first mismatch {:?}",
            tally.field.table, tally.field.name, tally.first_mismatch
        );
        // A field that was checked on no row would prove nothing.
        let table_rows = report.table_rows.iter().find(|(t, _)| t == tally.field.table).map(|(_, n)| *n).unwrap();
        assert_eq!(tally.ok, table_rows, "{}.{} is checked on every row", tally.field.table, tally.field.name);
    }
    assert!(report.is_clean());
    assert_eq!(report.first_mismatch(), None);
}

#[test]
fn one_altered_comparison_key_is_reported_with_its_row() {
    let mut lines = export().to_vec();
    let runs_with_events: std::collections::HashSet<String> = lines
        .iter()
        .filter(|l| l.table == "record_events")
        .filter_map(|l| l.row["runId"].as_str().map(str::to_string))
        .collect();
    // A run that no record event points at, so only its own row is affected.
    let position =
        lines.iter().position(|l| l.table == "benchmark_runs" && !runs_with_events.contains(l.id())).unwrap();
    let original = lines[position].row["comparisonKey"].as_str().unwrap().to_string();
    let forged = identity::sha256_digest(b"forged");
    lines[position].row.insert("comparisonKey".into(), Value::String(forged.clone()));

    let report = verify_export(&lines);
    assert!(!report.is_clean());
    assert_eq!(report.mismatches(), 1);
    let tally = report.tally(field_named("benchmark_runs", "comparisonKey")).unwrap();
    assert_eq!(tally.mismatched, 1);
    let mismatch = tally.first_mismatch.as_ref().unwrap();
    assert_eq!(mismatch.line, lines[position].line);
    assert_eq!(mismatch.id, lines[position].id());
    assert_eq!(mismatch.stored, forged);
    assert_eq!(mismatch.recomputed, original);
    let (field, first) = report.first_mismatch().unwrap();
    assert_eq!((field.table, first.line), ("benchmark_runs", lines[position].line));
}

#[test]
fn an_edited_workload_manifest_breaks_its_digest_and_the_keys_of_its_runs() {
    let mut lines = export().to_vec();
    let position = lines.iter().position(|l| l.table == "workloads").unwrap();
    let workload_id = lines[position].id().to_string();
    let runs_on_it = lines
        .iter()
        .filter(|l| l.table == "benchmark_runs" && l.row["workloadId"].as_str() == Some(&workload_id))
        .count() as u64;
    let manifest = lines[position].row.get_mut("manifest").unwrap();
    manifest["spec"]["correctness"] = serde_json::json!({"comparator": "edited_after_publication"});

    let report = verify_export(&lines);
    let count = |table, name| report.tally(field_named(table, name)).unwrap().mismatched;
    assert_eq!(count("workloads", "workloadDigest"), 1);
    assert_eq!(count("benchmark_runs", "correctnessKey"), runs_on_it);
    assert_eq!(count("benchmark_runs", "comparisonKey"), runs_on_it);
    // The runs still name the workload digest the row stores, so that check holds.
    assert_eq!(count("benchmark_runs", "manifest → workloads"), 0);
    assert_eq!(report.first_mismatch().unwrap().1.id, workload_id);
}

#[test]
fn an_edited_serving_measurement_breaks_run_digest_metric_set_and_cohort() {
    let mut lines = export().to_vec();
    let position = lines.iter().position(|l| l.table == "serving_runs").unwrap();
    let manifest = lines[position].row.get_mut("manifest").unwrap();
    manifest["spec"]["measurements"][0]["statistic"] = Value::from("p50");

    let report = verify_export(&lines);
    let mismatched: Vec<(&str, &str)> =
        report.fields.iter().filter(|t| t.mismatched > 0).map(|t| (t.field.table, t.field.name)).collect();
    assert_eq!(
        mismatched,
        [
            ("serving_runs", "runDigest"),
            ("serving_runs", "metricSetKey"),
            ("serving_runs", "cohortKey"),
            // The measurement row still says `reported`, which the manifest no longer states.
            ("serving_measurements", "metric, value, sampleCount → serving run manifest"),
        ]
    );
    assert!(report.fields.iter().all(|t| t.mismatched <= 1));
}

/// Issue 17: a changed `measurements.value` verified clean. Each measurement row must repeat a
/// measurement its run's manifest states (metric, statistic, unit, value, sample count).
#[test]
fn an_altered_measurement_value_is_a_mismatch_naming_what_the_manifest_states() {
    let mut lines = export().to_vec();
    let position = lines.iter().position(|l| l.table == "measurements").unwrap();
    let original = lines[position].row["value"].as_f64().unwrap();
    lines[position].row.insert("value".into(), Value::from(original + 1.0));

    let report = verify_export(&lines);
    assert_eq!(report.mismatches(), 1, "only the measurement row: the run's columns are untouched");
    let tally = report.tally(field_named("measurements", "metric, value, sampleCount → run manifest")).unwrap();
    let mismatch = tally.first_mismatch.as_ref().unwrap();
    assert_eq!((mismatch.line, mismatch.id.as_str()), (lines[position].line, lines[position].id()));
    let row = &lines[position].row;
    let kind = format!(
        "{}:{}:{}",
        row["metric"].as_str().unwrap(),
        row["statistic"].as_str().unwrap(),
        row["unit"].as_str().unwrap()
    );
    assert!(mismatch.stored.starts_with(&format!("{kind} = {}", original + 1.0)), "{mismatch:?}");
    assert!(mismatch.recomputed.starts_with(&format!("{kind} = {original}")), "{mismatch:?}");
}

#[test]
fn measurement_rows_with_another_statistic_sample_count_or_run_are_mismatches() {
    let find = |lines: &[ExportLine], table: &str| lines.iter().position(|l| l.table == table).unwrap();
    let tally_of = |lines: &[ExportLine], table: &str, name: &str| {
        let report = verify_export(lines);
        report.tally(field_named(table, name)).unwrap().clone()
    };
    let kernel = "metric, value, sampleCount → run manifest";
    // A statistic the run never states.
    let mut lines = export().to_vec();
    let position = find(&lines, "measurements");
    lines[position].row.insert("statistic".into(), Value::from("p99"));
    let tally = tally_of(&lines, "measurements", kernel);
    assert_eq!(tally.mismatched, 1);
    assert!(tally.first_mismatch.unwrap().recomputed.contains("the run's manifest states no latency:p99:ns"));
    // Another sample count.
    let mut lines = export().to_vec();
    let position = find(&lines, "measurements");
    lines[position].row.insert("sampleCount".into(), Value::from(7));
    assert_eq!(tally_of(&lines, "measurements", kernel).mismatched, 1);
    // A run that is not there.
    let mut lines = export().to_vec();
    let position = find(&lines, "measurements");
    lines[position].row.insert("runId".into(), Value::from("no-such-run"));
    let tally = tally_of(&lines, "measurements", kernel);
    assert_eq!(tally.first_mismatch.unwrap().recomputed, "error: no benchmark_runs row with id no-such-run");
    // A serving measurement's value.
    let mut lines = export().to_vec();
    let position = find(&lines, "serving_measurements");
    lines[position].row.insert("value".into(), Value::from(1.5));
    assert_eq!(
        tally_of(&lines, "serving_measurements", "metric, value, sampleCount → serving run manifest").mismatched,
        1
    );
}

#[test]
fn a_dangling_reference_is_a_mismatch_that_says_so() {
    let mut lines = export().to_vec();
    let position = lines.iter().position(|l| l.table == "benchmark_runs").unwrap();
    lines[position].row.insert("implementationId".into(), Value::from("no-such-id"));
    let report = verify_export(&lines);
    let tally = report.tally(field_named("benchmark_runs", "manifest → implementations")).unwrap();
    assert_eq!(tally.mismatched, 1);
    assert_eq!(tally.first_mismatch.as_ref().unwrap().recomputed, "error: no implementations row with id no-such-id");
}

#[test]
fn the_run_key_functions_reproduce_export_rows() {
    let lines = export();
    let workloads: std::collections::HashMap<&str, &ExportLine> =
        lines.iter().filter(|l| l.table == "workloads").map(|l| (l.id(), l)).collect();
    // One run of each primary-measurement shape: timing with or without measurements,
    // measurements only, neither.
    let mut seen = std::collections::HashSet::new();
    for line in lines.iter().filter(|l| l.table == "benchmark_runs") {
        let manifest = &line.row["manifest"];
        let spec = &manifest["run"]["spec"];
        let shape = (spec.get("timing").is_some(), spec.get("measurements").is_some());
        if !seen.insert(shape) {
            continue;
        }
        let workload = &workloads[line.row["workloadId"].as_str().unwrap()].row["manifest"];
        let keys =
            identity::benchmark_run_keys(&manifest["run"], &manifest["protocol"], &manifest["environment"], workload)
                .unwrap();
        assert_eq!(keys.run_digest, line.row["runDigest"]);
        assert_eq!(keys.protocol_key, line.row["protocolKey"]);
        assert_eq!(keys.environment_key, line.row["environmentKey"]);
        assert_eq!(keys.correctness_key, line.row["correctnessKey"]);
        assert_eq!(keys.comparison_key, line.row["comparisonKey"]);
        assert_eq!(keys.primary.as_ref().map(|p| p.metric.as_str()).unwrap_or("none"), line.row["primaryMetric"]);
    }
    assert_eq!(seen.len(), 4, "the export holds all four shapes");
}

#[test]
fn canonical_text_of_every_manifest_agrees_with_an_independent_implementation() {
    for line in export() {
        let Some(manifest) = line.row.get("manifest") else { continue };
        let ours = jcs::canonicalize(manifest).unwrap();
        let theirs = serde_json_canonicalizer::to_string(manifest).unwrap();
        assert_eq!(ours, theirs, "line {}", line.line);
    }
}
