//! ranking-v1 on the public index's real export (data/): the recomputed ledger, the
//! record holders, and resolve on cases measured and never measured.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::sync::OnceLock;

use ki_ranking::{CatalogRows, Index, ResolveMode, ResolveRequest, Side};
use serde_json::{Value, json};

fn export_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/catalog-2026-08-16-0022af0b.jsonl.zst")
}

fn rows() -> &'static CatalogRows {
    static ROWS: OnceLock<CatalogRows> = OnceLock::new();
    ROWS.get_or_init(|| {
        let mut rows = CatalogRows::new();
        for line in ki_model::export::read_export(export_path()).expect("the shared export reads") {
            rows.push(&line.table, line.row, Some(line.line as u64));
        }
        rows
    })
}

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| Index::from_rows(rows()).expect("the shared export indexes"))
}

#[test]
fn recomputed_ledger_equals_every_stored_record_event() {
    let index = index();
    let report = index.verify_record_events();
    let stored_keys: BTreeSet<&str> = index.record_events.iter().map(|e| e.comparison_key.as_str()).collect();
    assert!(report.is_clean(), "first mismatch: {:#?}", report.mismatches.first());
    assert_eq!(report.stored_events, index.record_events.len());
    assert_eq!(report.recomputed_events, report.stored_events);
    assert_eq!(report.cohorts_checked, stored_keys.len());
    assert_eq!(report.cohorts_matching, report.cohorts_checked);
    // The figures issue 4 names for this snapshot.
    assert_eq!((report.stored_events, report.cohorts_checked), (2948, 1828));
    assert!(index.pending_ledger_events().is_empty(), "recomputing must not ask to append anything");
}

#[test]
fn ledger_diff_reports_a_removed_and_an_altered_event() {
    let index = index();
    let mut stored = index.record_events.clone();
    let removed = stored.remove(0);
    let altered_key = stored[10].comparison_key.clone();
    stored[10].previous_run_id = Some(removed.run_id.clone());
    let report = index.diff_ledger(&stored);
    assert_eq!(report.mismatches.len(), if altered_key == removed.comparison_key { 1 } else { 2 });
    let for_removed = report.mismatches.iter().find(|m| m.comparison_key == removed.comparison_key).unwrap();
    assert!(for_removed.missing.iter().any(|e| e.run_id == removed.run_id));
    let for_altered = report.mismatches.iter().find(|m| m.comparison_key == altered_key).unwrap();
    assert_eq!(for_altered.unexpected.len(), 1);
    assert_eq!(for_altered.missing.len(), 1);
}

#[test]
fn rank_one_runs_are_their_cohorts_last_record_holders() {
    let index = index();
    let mut last_holder: HashMap<&str, &ki_ranking::rows::RecordEventRow> = HashMap::new();
    for event in &index.record_events {
        let entry = last_holder.entry(&event.comparison_key).or_insert(event);
        if (event.at.instant, &event.run_id) > (entry.at.instant, &entry.run_id) {
            *entry = event;
        }
    }
    let mut checked = 0;
    for cohort in &index.cohorts {
        let Some(first) = cohort.ranking.first() else {
            assert!(
                !last_holder.contains_key(cohort.comparison_key.as_str()),
                "a cohort with no eligible run holds a record"
            );
            continue;
        };
        let holder = last_holder[cohort.comparison_key.as_str()];
        let holder_run = index.run_index(&holder.run_id.to_string()).unwrap();
        assert_eq!(index.facts[holder_run].rank(), Some(1), "cohort {}", cohort.comparison_key);
        let best = index.primary_value(first.run).unwrap();
        for entry in cohort.ranking.iter().take_while(|e| e.rank == 1) {
            assert_eq!(index.primary_value(entry.run), Some(best));
        }
        checked += 1;
    }
    assert_eq!(checked, last_holder.len());
}

#[test]
fn every_run_is_judged_with_reasons_matching_its_row() {
    let index = index();
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    for (run, facts) in index.runs.iter().zip(&index.facts) {
        let codes: Vec<String> = facts.ineligibility().iter().map(|r| r.code()).collect();
        assert_eq!(&*run.status != "passed", codes.iter().any(|c| c.starts_with("STATUS_")), "{}", run.id);
        assert_eq!(facts.rank().is_some(), codes.is_empty());
        for code in codes {
            *reasons.entry(code).or_default() += 1;
        }
        // No implementation in this snapshot has an install recipe.
        assert!(!facts.deployability.deployable);
    }
    let failed = index.runs.iter().filter(|r| &*r.status != "passed").count();
    assert_eq!(reasons.iter().filter(|(c, _)| c.starts_with("STATUS_")).map(|(_, n)| n).sum::<usize>(), failed);
    assert!(reasons.contains_key("MISSING_PRIMARY_METRIC"));
}

#[test]
fn resolve_gives_the_flashinfer_wrapper_as_number_one_on_b200() {
    let index = index();
    let request = ResolveRequest {
        operation: "gqa_paged_decode_h32_kv4_d128_ps1".into(),
        axes: [("batch_size", 16), ("num_pages", 1070), ("len_indptr", 17), ("num_kv_indices", 1020)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect(),
        hardware: Some("NVIDIA B200".into()),
        ..Default::default()
    };
    let answer = index.resolve(&request);
    assert_eq!(answer.mode, ResolveMode::Exact, "{:?}", answer.notes);
    assert_eq!(answer.cohorts.len(), 1);
    let leader = &answer.cohorts[0].fastest[0];
    assert_eq!(leader.rank, Some(1));
    assert!(leader.implementation.contains("flashinfer-wrapper-78fd04"), "{}", leader.implementation);
    assert_eq!(leader.value, Some(19451.0));
    assert_eq!(leader.unit.as_deref(), Some("ns"));
    assert_eq!(leader.hardware.as_deref(), Some("NVIDIA B200"));
    // The flashinfer-bench "× reference" figure comes from the run's native metrics.
    let reference = leader.reference_speedup.unwrap();
    assert!((reference - 53.694410959879555 / 0.01945123864337948).abs() < 1e-6 * reference);
    // JSON for the web server.
    let json = serde_json::to_value(&answer).unwrap();
    assert_eq!(json["mode"], "exact");
    assert_eq!(json["cohorts"][0]["fastest"][0]["runId"], Value::String(leader.run_id.clone()));
}

#[test]
fn an_alias_and_other_case_resolve_to_the_same_operation() {
    let index = index();
    let alias = &index.operation_aliases[0];
    let op = index.find_operation(&alias.alias).unwrap();
    assert_eq!(index.operations[op].id, alias.operation_id);
    let upper = index.find_operation(&index.operations[op].name.to_uppercase()).unwrap();
    assert_eq!(upper, op);
    let unknown = index.resolve(&ResolveRequest { operation: "no_such_operation".into(), ..Default::default() });
    assert_eq!(unknown.mode, ResolveMode::None);
    assert!(unknown.notes[0].contains("no_such_operation"));
}

#[test]
fn an_unknown_axis_is_named() {
    let index = index();
    let mut request = ResolveRequest { operation: "gqa_paged_decode_h32_kv4_d128_ps1".into(), ..Default::default() };
    request.axes.insert("batchsize".into(), json!(16));
    let answer = index.resolve(&request);
    assert_eq!(answer.mode, ResolveMode::None);
    assert!(answer.notes[0].contains("batchsize"), "{:?}", answer.notes);
}

/// Measured values of one axis among the workloads that agree with `fixed` elsewhere.
fn measured_values(index: &Index, op: usize, axis: &str, fixed: &BTreeMap<String, Value>) -> Vec<f64> {
    let op_id = &index.operations[op].id;
    let mut values: Vec<f64> = index
        .workloads
        .iter()
        .enumerate()
        .filter(|(_, w)| &w.operation_id == op_id)
        .filter(|(w, _)| {
            let axes = index.workload_axes(*w);
            fixed.iter().all(|(k, v)| k == axis || axes.get(k).and_then(Value::as_f64) == v.as_f64())
        })
        .filter(|(w, _)| {
            index
                .runs
                .iter()
                .enumerate()
                .any(|(r, run)| *run.workload_id == *index.workloads[*w].id && index.facts[r].eligible())
        })
        .filter_map(|(w, _)| index.workload_axes(w).get(axis).and_then(Value::as_f64))
        .collect();
    values.sort_by(f64::total_cmp);
    values.dedup();
    values
}

#[test]
fn a_never_measured_case_gets_its_bracketing_measured_cases() {
    let index = index();
    // Any operation with one variable axis measured at three or more values.
    let (op, axis, values) = (0..index.operations.len())
        .find_map(|op| {
            let manifest = index.operation_manifest(op);
            let spec = manifest.pointer("/spec/axes")?.as_object()?;
            let variable: Vec<&String> = spec.iter().filter(|(_, s)| s["role"] != "constant").map(|(k, _)| k).collect();
            let [axis] = variable.as_slice() else { return None };
            let values = measured_values(index, op, axis, &BTreeMap::new());
            (values.len() >= 3).then(|| (op, axis.to_string(), values))
        })
        .expect("the export has a one-axis operation measured at 3+ values");
    let (low, high) = (values[1], values[2]);
    let wanted = if high - low >= 2.0 { (low + 1.0).round() } else { (low + high) / 2.0 };
    let request = ResolveRequest {
        operation: index.operations[op].name.clone(),
        axes: [(axis.clone(), json!(wanted))].into_iter().collect(),
        ..Default::default()
    };
    let answer = index.resolve(&request);
    assert_eq!(answer.mode, ResolveMode::Browse, "{:?}", answer.notes);
    assert!(answer.cohorts.is_empty());
    let below = answer.nearest.iter().find(|n| n.side == Side::Below).expect("a case below");
    let above = answer.nearest.iter().find(|n| n.side == Side::Above).expect("a case above");
    assert_eq!(below.measured.as_f64(), Some(low));
    assert_eq!(above.measured.as_f64(), Some(high));
    for case in [below, above] {
        assert_eq!(case.axis, axis);
        assert!(!case.cohorts.is_empty());
        for cohort in &case.cohorts {
            assert_eq!(cohort.axes[&axis].as_f64(), case.measured.as_f64());
            assert_eq!(cohort.fastest[0].rank, Some(1));
        }
    }
}

#[test]
fn brackets_follow_the_one_differing_axis_and_never_two() {
    let index = index();
    let op = index.find_operation("gqa_paged_decode_h32_kv4_d128_ps1").unwrap();
    // batch_size fixed, num_kv_indices between two measured values: brackets along it.
    let fixed: BTreeMap<String, Value> = [("batch_size".to_string(), json!(16))].into_iter().collect();
    let values = measured_values(index, op, "num_kv_indices", &fixed);
    let (low, high) = (values[3], values[4]);
    let mut request =
        ResolveRequest { operation: index.operations[op].name.clone(), axes: fixed, ..Default::default() };
    request.axes.insert("num_kv_indices".into(), json!(((low + high) / 2.0).round()));
    let answer = index.resolve(&request);
    assert_eq!(answer.mode, ResolveMode::Browse);
    let sides: Vec<(Side, Option<f64>, &str)> =
        answer.nearest.iter().map(|n| (n.side, n.measured.as_f64(), n.axis.as_str())).collect();
    assert_eq!(sides, vec![(Side::Below, Some(low), "num_kv_indices"), (Side::Above, Some(high), "num_kv_indices")]);

    // A pinned case that differs from every measured case in two axes (num_pages and
    // num_kv_indices both off the measured 16-batch cases) gets the nearest of those on either
    // side, each naming both axes (issue 34; it had no answer before).
    let mut two_off = ResolveRequest { operation: index.operations[op].name.clone(), ..Default::default() };
    for (axis, value) in [("batch_size", 16), ("len_indptr", 17), ("num_pages", 1500), ("num_kv_indices", 1450)] {
        two_off.axes.insert(axis.into(), json!(value));
    }
    let answer = index.resolve(&two_off);
    assert_eq!(answer.mode, ResolveMode::Browse, "{:?}", answer.notes);
    assert!(!answer.nearest.is_empty());
    let mut sides = Vec::new();
    for case in &answer.nearest {
        let mut axes: Vec<&str> = case.differs.iter().map(|d| d.axis.as_str()).collect();
        axes.sort_unstable();
        assert_eq!(axes, ["num_kv_indices", "num_pages"], "{:?}", case.differs);
        assert_eq!(case.differs[0].axis, case.axis, "the axis the sides are told along comes first");
        for cohort in &case.cohorts {
            assert_eq!(
                (cohort.axes["batch_size"].as_f64(), cohort.axes["len_indptr"].as_f64()),
                (Some(16.0), Some(17.0))
            );
            for d in &case.differs {
                assert_eq!(cohort.axes[&d.axis], d.measured);
            }
        }
        let measured = case.measured.as_f64().unwrap();
        let asked = case.requested.as_f64().unwrap();
        assert!(if case.side == Side::Below { measured < asked } else { measured > asked });
        sides.push(case.side);
    }
    sides.dedup();
    assert_eq!(sides.len(), answer.nearest.len(), "at most one case per side");

    // Only num_pages off the measured (16, 1070, 17, 1020) case: that case is below.
    two_off.axes.insert("num_kv_indices".into(), json!(1020));
    let answer = index.resolve(&two_off);
    assert_eq!(answer.mode, ResolveMode::Browse);
    assert_eq!(answer.nearest.len(), 1);
    assert_eq!((answer.nearest[0].side, answer.nearest[0].measured.as_f64()), (Side::Below, Some(1070.0)));
}

#[test]
fn several_comparison_groups_for_one_case_make_a_chooser() {
    let index = index();
    // Find a workload measured in two or more comparison groups (e.g. several GPUs).
    let mut groups: HashMap<&str, BTreeSet<&str>> = HashMap::new();
    for (r, run) in index.runs.iter().enumerate() {
        if index.facts[r].eligible() {
            groups.entry(&run.workload_id).or_default().insert(&run.comparison_key);
        }
    }
    let (workload_id, keys) =
        groups.iter().filter(|(_, k)| k.len() >= 2).min_by_key(|(w, _)| **w).expect("a case in two groups");
    let w = index.workloads.iter().position(|w| &w.id == workload_id).unwrap();
    let op = index.operations.iter().position(|o| o.id == index.workloads[w].operation_id).unwrap();
    let axes = index.workload_axes(w).clone();
    let request = ResolveRequest { operation: index.operations[op].name.clone(), axes, ..Default::default() };
    let answer = index.resolve(&request);
    // Other workloads of the operation may share these axes (e.g. other dtypes), so at
    // least the groups of this workload are offered.
    assert!(matches!(answer.mode, ResolveMode::Chooser | ResolveMode::Browse), "{:?}", answer.mode);
    let offered: BTreeSet<&str> = answer.cohorts.iter().map(|c| c.comparison_key.as_str()).collect();
    assert!(keys.iter().all(|k| offered.contains(k)) || answer.omitted_cohorts > 0);
}

#[test]
fn batches_take_one_to_twenty_requests() {
    let index = index();
    let request = ResolveRequest { operation: index.operations[0].name.clone(), ..Default::default() };
    assert!(index.resolve_batch(&[]).is_err());
    assert_eq!(index.resolve_batch(&vec![request.clone(); 20]).unwrap().len(), 20);
    let err = index.resolve_batch(&vec![request; 21]).unwrap_err();
    assert!(err.to_string().contains("21"));
}

#[test]
fn compare_and_dossier_on_real_runs() {
    let index = index();
    let cohort = index.cohorts.iter().find(|c| c.ranking.len() >= 3).unwrap();
    let ids: Vec<String> = cohort.ranking.iter().take(3).map(|e| index.runs[e.run].id.to_string()).collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    let comparison = index.compare(&ids).unwrap();
    assert!(comparison.same_comparison_group);
    assert_eq!(comparison.runs[0].relative_to_best_in_group, Some(1.0));
    assert!(comparison.runs[2].relative_to_best_in_group.unwrap() >= 1.0);
    assert!(index.compare(&ids[..1]).is_err());
    assert!(index.compare(&[ids[0], ids[0]]).is_err());

    let second = cohort.ranking[1].run;
    let id = index.runs[second].id.to_string();
    let short_id = &id[..13];
    // A run is found by its id, a unique prefix of it, or its digest.
    assert_eq!(index.find_run(short_id).or_else(|_| index.find_run(&id)).unwrap(), second);
    assert_eq!(index.find_run(&index.runs[second].run_digest.to_string()).unwrap(), second);
    assert!(index.measurements_of(second).next().is_some());
    assert!(index.find_run("zzzzzzzz-not-a-run").is_err());
}
