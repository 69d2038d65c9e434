//! The streamed import (issue 15): a file is read, checked, verified and written in parts
//! (20,000 lines at most) inside one transaction. Whatever part a problem is in, nothing is
//! written; a row may refer to rows of earlier parts, of later parts or of the catalog.

use crate::support::{TestDb, export_text, shared_export_text, shared_lines};
use ki_catalog::{Catalog, CatalogError, ExportLine, ImportOptions};
use serde_json::Value;

/// Lines per part of a streamed import at most (`import::CHUNK_LINES`; a part also ends at
/// 8 MiB of text); the shared export has 40,795, so a row past line 40,000 is in the third part
/// or later.
const PART: usize = 20_000;

async fn state(catalog: &Catalog) -> (Vec<(&'static str, u64)>, Vec<u8>) {
    (catalog.row_counts().await.unwrap(), export_text(catalog).await)
}

/// Writes export lines as a JSON-lines file, numbered as written.
fn write_file(directory: &tempfile::TempDir, name: &str, lines: &[ExportLine]) -> std::path::PathBuf {
    let path = directory.path().join(name);
    let mut text = String::new();
    for line in lines {
        let object = serde_json::json!({"table": line.table, "row": Value::Object(line.row.clone())});
        text.push_str(&serde_json::to_string(&object).unwrap());
        text.push('\n');
    }
    std::fs::write(&path, text).unwrap();
    path
}

/// The last row of `table`, as an index into `lines`.
fn last_of(lines: &[ExportLine], table: &str) -> usize {
    lines.iter().rposition(|line| line.table == table).unwrap()
}

/// A digest altered in the last part refuses the whole file: the rows of the first two parts,
/// already written inside the transaction, are rolled back.
async fn mismatch_in_last_part_writes_nothing(db: TestDb) {
    let catalog = db.open().await;
    let before = state(&catalog).await;
    let mut lines = shared_lines().to_vec();
    let at = last_of(&lines, "serving_measurements");
    assert!(lines[at].line > 2 * PART, "the altered row is in the third part or later");
    let value = lines[at].row["value"].as_f64().unwrap();
    lines[at].row.insert("value".into(), Value::from(value * 2.0 + 1.0));
    let directory = tempfile::tempdir().unwrap();
    let path = write_file(&directory, "altered.jsonl", &lines);
    match catalog.import_file(&path, &ImportOptions::default()).await {
        Err(CatalogError::Verification { mismatches, first, origin }) => {
            assert_eq!(mismatches, 1, "{}: {first}", db.name);
            assert!(first.starts_with(&format!("line {}: serving_measurements row ", lines[at].line)), "{first}");
            assert!(origin.contains("altered.jsonl"), "{origin}");
        }
        other => panic!("{}: an altered digest must be refused, got {other:?}", db.name),
    }
    assert_eq!(state(&catalog).await, before, "{}: nothing written", db.name);
    catalog.close().await;
}
on_both_backends!(mismatch_in_last_part_writes_nothing);

/// A file imports in parts (runs verified against workloads and implementations of the first
/// part), exports byte for byte, re-imports as all unchanged; then a row of the last part with
/// the same key and other content is a conflict named by its line, and nothing is written.
async fn streamed_import_reimport_and_late_conflict(db: TestDb) {
    let catalog = db.open().await;
    let lines = shared_lines();
    let directory = tempfile::tempdir().unwrap();
    let path = write_file(&directory, "shared.jsonl", lines);
    let report = catalog.import_file(&path, &ImportOptions::default()).await.unwrap();
    assert_eq!(report.inserted(), lines.len() as u64, "{}", db.name);
    assert!(export_text(&catalog).await == shared_export_text(), "{}: the export differs", db.name);

    let again = catalog.import_file(&path, &ImportOptions::default()).await.unwrap();
    assert_eq!((again.inserted(), again.unchanged()), (0, lines.len() as u64), "{}", db.name);

    let before = state(&catalog).await;
    let mut changed = lines.to_vec();
    let at = last_of(&changed, "serving_runs");
    assert!(changed[at].line > 2 * PART);
    changed[at].row.insert("scenario".into(), Value::from("a scenario the catalog does not hold"));
    let path = write_file(&directory, "changed.jsonl", &changed);
    match catalog.import_file(&path, &ImportOptions::default()).await {
        Err(CatalogError::Conflicts { count, first, .. }) => {
            assert_eq!((count, first.line, first.table), (1, changed[at].line, "serving_runs"), "{}", db.name);
            assert!(first.reason.contains("scenario"), "{}", first.reason);
        }
        other => panic!("{}: a changed row must be a conflict, got {other:?}", db.name),
    }
    let dry = ImportOptions { dry_run: true, ..ImportOptions::default() };
    let report = catalog.import_file(&path, &dry).await.unwrap();
    assert_eq!((report.conflicting(), report.unchanged()), (1, lines.len() as u64 - 1));
    assert_eq!(report.conflicts[0].line, changed[at].line);
    assert_eq!(state(&catalog).await, before, "{}: nothing written", db.name);
    catalog.close().await;
}
on_both_backends!(streamed_import_reimport_and_late_conflict);

/// Children before their parents: runs, measurements and record events first, the tables they
/// refer to parts later. The rows wait for their parents, are verified and written at the end,
/// and the catalog exports the shared file byte for byte.
async fn parents_in_later_parts(db: TestDb) {
    let catalog = db.open().await;
    let children = ["benchmark_runs", "measurements", "record_events"];
    let mut lines: Vec<ExportLine> =
        shared_lines().iter().filter(|line| children.contains(&line.table.as_str())).cloned().collect();
    assert!(lines.len() > PART, "the children fill more than one part");
    lines.extend(shared_lines().iter().filter(|line| !children.contains(&line.table.as_str())).cloned());
    for (index, line) in lines.iter_mut().enumerate() {
        line.line = index + 1;
    }
    let report = catalog.import_lines(&lines, &ImportOptions::default()).await.unwrap();
    assert_eq!(report.inserted(), lines.len() as u64, "{}", db.name);
    assert!(export_text(&catalog).await == shared_export_text(), "{}: the export differs", db.name);
    catalog.close().await;
}
on_both_backends!(parents_in_later_parts);

/// A run referring to a source that no part and no stored row holds is refused at the end,
/// named by line and pointer, with nothing written.
async fn dangling_reference_found_at_the_end(db: TestDb) {
    let catalog = db.open().await;
    let before = state(&catalog).await;
    let mut lines = shared_lines().to_vec();
    let at = lines.iter().position(|line| line.table == "benchmark_runs").unwrap();
    let missing = ki_catalog::new_row_id().to_string();
    lines[at].row.insert("sourceId".into(), Value::from(missing.clone()));
    match catalog.import_lines(&lines, &ImportOptions::default()).await {
        Err(CatalogError::InvalidRow { problem, .. }) => {
            assert_eq!((problem.line, problem.pointer.as_str()), (lines[at].line, "/row/sourceId"), "{}", db.name);
            assert!(problem.message.contains(&missing), "{}", problem.message);
        }
        other => panic!("{}: a dangling reference must be refused, got {other:?}", db.name),
    }
    assert_eq!(state(&catalog).await, before, "{}: nothing written", db.name);
    catalog.close().await;
}
on_both_backends!(dangling_reference_found_at_the_end);

/// The schema objects an import may drop and make again: every index (name and definition)
/// and, on PostgreSQL, every constraint, as text in name order.
async fn schema_of(db: &TestDb) -> Vec<(String, String)> {
    let sql = if db.url.starts_with("sqlite:") {
        "SELECT name, COALESCE(sql, '') FROM sqlite_master WHERE type = 'index' ORDER BY name"
    } else {
        "SELECT indexname::text, indexdef FROM pg_indexes WHERE schemaname = current_schema() \
         UNION ALL SELECT conname::text, pg_get_constraintdef(oid) FROM pg_constraint \
         WHERE connamespace = current_schema()::regnamespace ORDER BY 1, 2"
    };
    if db.url.starts_with("sqlite:") {
        let pool = sqlx::SqlitePool::connect(&db.url).await.unwrap();
        let rows: Vec<(String, String)> = sqlx::query_as(sql).fetch_all(&pool).await.unwrap();
        pool.close().await;
        rows
    } else {
        let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
        let rows: Vec<(String, String)> = sqlx::query_as(sql).fetch_all(&pool).await.unwrap();
        pool.close().await;
        rows
    }
}

/// A file imported into empty tables is loaded without their plain indexes (and, on PostgreSQL,
/// foreign keys), which are made again in the import's transaction: afterwards the schema is the
/// one the migrations made, and after a refused import too. Re-importing into the now filled
/// tables (which keep their indexes) finds every row unchanged.
async fn bulk_load_leaves_the_schema_as_migrated(db: TestDb) {
    let catalog = db.open().await;
    let migrated = schema_of(&db).await;
    assert!(migrated.iter().any(|(name, _)| name == "benchmark_runs_comparison_key_primary_value_idx"), "{migrated:?}");
    let directory = tempfile::tempdir().unwrap();

    let mut altered = shared_lines().to_vec();
    let at = last_of(&altered, "serving_measurements");
    let value = altered[at].row["value"].as_f64().unwrap();
    altered[at].row.insert("value".into(), Value::from(value * 2.0 + 1.0));
    let path = write_file(&directory, "altered.jsonl", &altered);
    assert!(catalog.import_file(&path, &ImportOptions::default()).await.is_err(), "{}", db.name);
    assert_eq!(schema_of(&db).await, migrated, "{}: the schema after a refused import", db.name);

    let path = write_file(&directory, "shared.jsonl", shared_lines());
    let report = catalog.import_file(&path, &ImportOptions::default()).await.unwrap();
    assert_eq!(report.inserted(), shared_lines().len() as u64, "{}", db.name);
    assert_eq!(schema_of(&db).await, migrated, "{}: the schema after the import", db.name);
    assert!(export_text(&catalog).await == shared_export_text(), "{}: the export differs", db.name);

    let again = catalog.import_file(&path, &ImportOptions::default()).await.unwrap();
    assert_eq!((again.inserted(), again.unchanged()), (0, shared_lines().len() as u64), "{}", db.name);
    assert_eq!(schema_of(&db).await, migrated, "{}", db.name);
    catalog.close().await;
}
on_both_backends!(bulk_load_leaves_the_schema_as_migrated);
