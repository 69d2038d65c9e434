//! Corrections on both backends, on real comparison groups of the shared export: a
//! retraction and a supersession each delete nothing, make the run ineligible, append
//! the record event ranking-v1 requires (new leader, previous holder) and an audit
//! entry, and leave the stored ledger equal to the recomputed one; repeated or bad
//! corrections are refused with nothing written.

use std::cmp::Ordering;
use std::collections::{BTreeSet, HashMap};

use crate::support::{TestDb, export_text, shared_lines};
use ki_catalog::{Catalog, CatalogError, CorrectionAction, ExportLine, ImportOptions, Refusal};
use ki_model::rows::RecordEventRow;
use ki_ranking::{Index, Ineligibility};
use serde_json::{Map, Value};

fn text<'a>(row: &'a Map<String, Value>, column: &str) -> &'a str {
    row.get(column).and_then(Value::as_str).unwrap_or("")
}

fn eligible(run: &Map<String, Value>) -> bool {
    !run["publishedAt"].is_null()
        && text(run, "status") == "passed"
        && !matches!(text(run, "primaryMetric"), "" | "none")
        && run["primaryValue"].is_number()
        && run["retractedAt"].is_null()
}

/// A comparison group of the shared export with its record holder and its runs.
struct Group {
    key: String,
    holder: String,
    /// The latest stored event's time.
    last_event_at: String,
    runs: Vec<Map<String, Value>>,
}

/// Groups with at least three eligible runs and a stored record, in export order.
/// The first group with an eligible run other than its record holder whose observedAt compares
/// to the group's last record event as `when`; with that run's id.
fn group_with_other_run(all: &[Group], when: Ordering) -> Option<(&Group, String)> {
    all.iter().find_map(|group| {
        let run = group.runs.iter().find(|run| {
            eligible(run)
                && text(run, "id") != group.holder
                && text(run, "observedAt").cmp(group.last_event_at.as_str()) == when
        })?;
        Some((group, text(run, "id").to_string()))
    })
}

fn groups() -> Vec<Group> {
    let mut runs: HashMap<&str, Vec<Map<String, Value>>> = HashMap::new();
    let mut events: HashMap<&str, Vec<&Map<String, Value>>> = HashMap::new();
    let mut order = Vec::new();
    for line in shared_lines() {
        match line.table.as_str() {
            "benchmark_runs" => {
                let key = text(&line.row, "comparisonKey");
                if !runs.contains_key(key) {
                    order.push(key);
                }
                runs.entry(key).or_default().push(line.row.clone());
            }
            "record_events" => events.entry(text(&line.row, "comparisonKey")).or_default().push(&line.row),
            _ => {}
        }
    }
    order
        .into_iter()
        .filter_map(|key| {
            let group_runs = runs.remove(key)?;
            // Every `at` in the shared export has the same textual form, so text order is time order.
            let last = events.get(key)?.iter().max_by_key(|event| text(event, "at"))?;
            (group_runs.iter().filter(|run| eligible(run)).count() >= 3).then(|| Group {
                key: key.to_string(),
                holder: text(last, "runId").to_string(),
                last_event_at: text(last, "at").to_string(),
                runs: group_runs,
            })
        })
        .collect()
}

/// The rows these comparison groups need, and nothing else: their runs, measurements and
/// record events, and the parents those name. A small, real, self-consistent catalog.
fn subset(keys: &[&str]) -> Vec<ExportLine> {
    let all = shared_lines();
    let in_keys = |row: &Map<String, Value>| keys.contains(&text(row, "comparisonKey"));
    let runs: Vec<&ExportLine> =
        all.iter().filter(|line| line.table == "benchmark_runs" && in_keys(&line.row)).collect();
    let ids = |table: &str, column: &str, rows: &[&ExportLine]| -> BTreeSet<String> {
        rows.iter().filter(|line| line.table == table).map(|line| text(&line.row, column).to_string()).collect()
    };
    let run_ids = ids("benchmark_runs", "id", &runs);
    let implementation_ids = ids("benchmark_runs", "implementationId", &runs);
    let workload_ids = ids("benchmark_runs", "workloadId", &runs);
    let source_ids = ids("benchmark_runs", "sourceId", &runs);
    let implementations: Vec<&ExportLine> = all
        .iter()
        .filter(|line| line.table == "implementations" && implementation_ids.contains(text(&line.row, "id")))
        .collect();
    let workloads: Vec<&ExportLine> =
        all.iter().filter(|line| line.table == "workloads" && workload_ids.contains(text(&line.row, "id"))).collect();
    let project_ids = ids("implementations", "projectId", &implementations);
    let mut operation_ids = ids("implementations", "operationId", &implementations);
    operation_ids.extend(ids("workloads", "operationId", &workloads));
    all.iter()
        .filter(|line| {
            let row = &line.row;
            match line.table.as_str() {
                "sources" => source_ids.contains(text(row, "id")),
                "projects" => project_ids.contains(text(row, "id")),
                "operations" => operation_ids.contains(text(row, "id")),
                "operation_aliases" => operation_ids.contains(text(row, "operationId")),
                "implementations" => implementation_ids.contains(text(row, "id")),
                "workloads" => workload_ids.contains(text(row, "id")),
                "benchmark_runs" => run_ids.contains(text(row, "id")),
                "measurements" => run_ids.contains(text(row, "runId")),
                "record_events" => in_keys(row),
                _ => false,
            }
        })
        .cloned()
        .collect()
}

/// ranking-v1 over everything the catalog holds.
async fn judgement(catalog: &Catalog) -> Index {
    catalog.ranking_index().await.expect("the catalog ranks")
}

fn codes(index: &Index, run: &str) -> Vec<String> {
    index.facts[index.run_index(run).unwrap()].ineligibility().iter().map(Ineligibility::code).collect()
}

/// `run` is eligible and has the best value of its group (the new record holder; among
/// equal values the ledger keeps the earliest, the ranking may list another first).
fn assert_holds_the_best_value(index: &Index, key: &str, run: &str) {
    assert!(codes(index, run).is_empty(), "the new holder {run} is eligible: {:?}", codes(index, run));
    let best = index.primary_value(index.cohort(key).unwrap().ranking[0].run);
    assert_eq!(index.primary_value(index.run_index(run).unwrap()), best, "{run} holds the best value of {key}");
}

/// Everything a refused correction must leave as it was.
async fn state(catalog: &Catalog) -> (Vec<(&'static str, u64)>, Vec<u8>, usize) {
    (catalog.row_counts().await.unwrap(), export_text(catalog).await, catalog.corrections().await.unwrap().len())
}

fn count(counts: &[(&'static str, u64)], table: &str) -> u64 {
    counts.iter().find(|(name, _)| *name == table).map_or(0, |(_, count)| *count)
}

/// Retracting the record holder of a real comparison group.
async fn retract_the_record_holder(db: TestDb) {
    let all = groups();
    let group = &all[0];
    let catalog = db.open().await;
    catalog.import_lines(&subset(&[&group.key]), &ImportOptions::default()).await.expect("the subset imports");
    assert!(judgement(&catalog).await.verify_record_events().is_clean(), "{}: the subset's ledger is whole", db.name);
    let before = catalog.row_counts().await.unwrap();

    let report = catalog
        .retract_run(&group.holder, "did not compute the operation", "test-admin")
        .await
        .expect("the retraction");
    assert_eq!(report.correction.action, CorrectionAction::Retract);
    assert_eq!(report.correction.run_id, group.holder);
    assert_eq!(report.comparison_key, group.key);
    assert!(report.correction.at.ends_with('Z'), "UTC: {}", report.correction.at);

    // Nothing deleted: every table as before, plus the one record event.
    let after = catalog.row_counts().await.unwrap();
    for ((table, was), (_, is)) in before.iter().zip(&after) {
        let added = if *table == "record_events" { 1 } else { 0 };
        assert_eq!(*is, was + added, "{}: {table}", db.name);
    }

    // The run is ineligible as RETRACTED, with its reason; the next best run took over.
    let index = judgement(&catalog).await;
    assert!(codes(&index, &group.holder).contains(&"RETRACTED".to_string()), "{:?}", codes(&index, &group.holder));
    let run = index.find_run(&group.holder).unwrap();
    assert_eq!(index.runs[run].retraction_reason.as_deref(), Some("did not compute the operation"));
    assert_eq!(report.events.len(), 1, "{}: {:?}", db.name, report.events);
    let event = &report.events[0];
    let leader = event.run_id.clone();
    assert_eq!(event.previous_run_id.as_deref(), Some(group.holder.as_str()));
    assert_holds_the_best_value(&index, &group.key, &leader);
    assert_eq!((event.cause.as_str(), event.at.as_str()), ("retraction", report.correction.at.as_str()));
    let stored = catalog.rows_where::<RecordEventRow>("id", &event.id).await.unwrap();
    assert_eq!(stored[0].run_id, leader);
    assert_eq!(stored[0].previous_run_id.as_deref(), Some(group.holder.as_str()));

    // The stored ledger is the recomputed one; asking again appends nothing.
    assert!(index.verify_record_events().is_clean(), "{}: {:?}", db.name, index.verify_record_events().mismatches);
    assert_eq!(catalog.append_pending_record_events(&[&group.key]).await.unwrap(), vec![]);

    // The audit trail says who, when, what and why.
    let audit = catalog.corrections().await.unwrap();
    assert_eq!(audit, vec![report.correction.clone()]);
    assert_eq!(audit[0].actor, "test-admin");

    // A second retraction of the same run is refused and writes nothing.
    let unchanged = state(&catalog).await;
    match catalog.retract_run(&group.holder, "again", "test-admin").await {
        Err(CatalogError::Refused(Refusal::AlreadyRetracted { run, reason, .. })) => {
            assert_eq!((run.as_str(), reason.as_str()), (group.holder.as_str(), "did not compute the operation"));
        }
        other => panic!("{}: a second retraction must be refused, got {other:?}", db.name),
    }
    assert!(state(&catalog).await == unchanged, "{}: a refused retraction writes nothing", db.name);

    // By run digest too: the new leader, with no record to hand on but the one it holds.
    let digest =
        text(&group.runs.iter().find(|run| text(run, "id") == leader).unwrap().clone(), "runDigest").to_string();
    let second = catalog.retract_run(&digest, "wrong harness", "test-admin").await.unwrap();
    assert_eq!(second.correction.run_id, leader);
    assert_eq!(second.events.len(), 1);
    assert_eq!(second.events[0].previous_run_id.as_deref(), Some(leader.as_str()));
    assert!(judgement(&catalog).await.verify_record_events().is_clean());
    catalog.close().await;
}
on_both_backends!(retract_the_record_holder);

/// Superseding the record holder by a later run of its group hands the record on.
async fn supersede_the_record_holder(db: TestDb) {
    let all = groups();
    let (group, successor) =
        group_with_other_run(&all, Ordering::Greater).expect("a group with a run observed after its last record event");
    let catalog = db.open().await;
    catalog.import_lines(&subset(&[&group.key]), &ImportOptions::default()).await.unwrap();
    let before = catalog.row_counts().await.unwrap();

    let report = catalog
        .supersede_run(&group.holder, &successor, "rerun with the fixed harness", "test-admin")
        .await
        .expect("the supersession");
    assert_eq!(report.correction.action, CorrectionAction::Supersede);
    assert_eq!(report.correction.by_run_id.as_deref(), Some(successor.as_str()));
    let after = catalog.row_counts().await.unwrap();
    assert_eq!(count(&after, "benchmark_runs"), count(&before, "benchmark_runs"), "{}: nothing deleted", db.name);
    assert_eq!(count(&after, "record_events"), count(&before, "record_events") + report.events.len() as u64);
    let old = catalog.run_by_id(&group.holder).await.unwrap().expect("the superseded run is still there");
    assert!(old.retracted_at.is_none());
    let new = catalog.run_by_id(&successor).await.unwrap().unwrap();
    assert_eq!(new.supersedes_id.as_deref(), Some(group.holder.as_str()));

    let index = judgement(&catalog).await;
    assert!(codes(&index, &group.holder).contains(&"SUPERSEDED".to_string()), "{:?}", codes(&index, &group.holder));
    assert_eq!(report.events.len(), 1, "{}: {:?}", db.name, report.events);
    let event = &report.events[0];
    assert_eq!(event.previous_run_id.as_deref(), Some(group.holder.as_str()));
    assert_holds_the_best_value(&index, &group.key, &event.run_id);
    assert_eq!(event.cause, "supersession");
    assert_eq!(event.at, new.observed_at, "a supersession takes effect when the successor was observed");
    assert!(index.verify_record_events().is_clean(), "{}: {:?}", db.name, index.verify_record_events().mismatches);
    assert_eq!(catalog.append_pending_record_events(&[&group.key]).await.unwrap(), vec![]);

    // The same supersession again, or another successor for the same run: refused.
    let unchanged = state(&catalog).await;
    match catalog.supersede_run(&group.holder, &successor, "again", "test-admin").await {
        Err(CatalogError::Refused(Refusal::AlreadySuperseded { by, .. })) => assert_eq!(by, successor),
        other => panic!("{}: superseding twice must be refused, got {other:?}", db.name),
    }
    assert!(state(&catalog).await == unchanged, "{}: nothing written", db.name);
    catalog.close().await;
}
on_both_backends!(supersede_the_record_holder);

/// Unknown runs, runs of different comparison groups, a run superseding itself, empty
/// reasons and a supersession that would rewrite a stored record: refused, nothing written.
async fn bad_corrections_write_nothing(db: TestDb) {
    let all = groups();
    let (first, second) = (&all[0], &all[1]);
    // A group where a run was observed before the holder took the record: superseding
    // the holder by it would undo the holder's stored record event.
    let (rewrite, earlier) = group_with_other_run(&all, Ordering::Less)
        .expect("a group with a run observed before its record holder's event");
    let catalog = db.open().await;
    let keys: Vec<&str> = vec![&first.key, &second.key, &rewrite.key];
    catalog.import_lines(&subset(&keys), &ImportOptions::default()).await.unwrap();
    let before = state(&catalog).await;

    let refusal = |result: Result<ki_catalog::CorrectionReport, CatalogError>| match result {
        Err(CatalogError::Refused(refusal)) => refusal,
        other => panic!("{}: expected a refusal, got {other:?}", db.name),
    };
    let unknown = "01a00000-0000-7000-8000-000000000000";
    assert!(
        matches!(refusal(catalog.retract_run(unknown, "x", "a").await), Refusal::UnknownRun { given, .. } if given == unknown)
    );
    assert!(matches!(refusal(catalog.retract_run("not a run", "x", "a").await), Refusal::UnknownRun { .. }));
    let missing_digest = format!("sha256:{}", "0".repeat(64));
    assert!(matches!(
        refusal(catalog.supersede_run(&first.holder, &missing_digest, "x", "a").await),
        Refusal::UnknownRun { .. }
    ));
    assert_eq!(refusal(catalog.retract_run(&first.holder, "  ", "a").await), Refusal::Empty("retraction reason"));
    assert_eq!(refusal(catalog.retract_run(&first.holder, "x", "").await), Refusal::Empty("actor"));
    assert_eq!(
        refusal(catalog.supersede_run(&first.holder, &first.holder, "x", "a").await),
        Refusal::SameRun(first.holder.clone())
    );
    let across = refusal(catalog.supersede_run(&first.holder, &second.holder, "x", "a").await);
    assert!(
        matches!(&across, Refusal::DifferentComparisonKey { old_key, new_key, .. } if *old_key == first.key && *new_key == second.key)
    );
    assert!(across.to_string().contains("different comparison groups"), "{across}");
    let rewritten = refusal(catalog.supersede_run(&rewrite.holder, &earlier, "x", "a").await);
    assert!(
        matches!(&rewritten, Refusal::RewritesHistory { comparison_key, .. } if *comparison_key == rewrite.key),
        "{rewritten}"
    );

    assert!(state(&catalog).await == before, "{}: refused corrections write nothing", db.name);
    assert!(judgement(&catalog).await.verify_record_events().is_clean());
    catalog.close().await;
}
on_both_backends!(bad_corrections_write_nothing);
