//! The catalog store on both backends: import, re-import, overlap, round trip, refusals,
//! concurrent readers, migrations. Every test body runs on SQLite (a temporary file) and on
//! PostgreSQL (a fresh schema in the `test` database).

use std::collections::HashMap;

use crate::support::{TestDb, counts_of, export_text, lines_of, shared_export_text, shared_lines};
use ki_catalog::{Catalog, CatalogError, ExportLine, ImportOptions};
use ki_model::rows::{BenchmarkRunRow, MeasurementRow};
use serde_json::Value;

/// An export row as its table's type.
fn typed<T: serde::de::DeserializeOwned>(row: &serde_json::Map<String, Value>) -> T {
    serde_json::from_value(Value::Object(row.clone())).unwrap()
}

/// Full life of a snapshot: a partial import, the overlapping full snapshot adds only the
/// rest, a re-import adds nothing, the export reproduces the shared file byte for byte, and
/// importing that export elsewhere exports identically again.
async fn import_overlap_reimport_and_round_trip(db: TestDb) {
    let catalog = db.open().await;
    let all = shared_lines();
    let expected = counts_of(all);

    let partial = lines_of(&["sources", "projects", "operations", "operation_aliases", "workloads"]);
    let first = catalog.import_lines(&partial, &ImportOptions::default()).await.expect("partial import");
    assert_eq!(first.inserted(), partial.len() as u64);

    let overlap = catalog.import_lines(all, &ImportOptions::default()).await.expect("full import");
    let partial_counts: HashMap<_, _> = counts_of(&partial).into_iter().collect();
    for (table, count) in &expected {
        let counts = overlap.table(table).unwrap();
        assert_eq!(counts.unchanged, partial_counts[table], "{}: {table} already present", db.name);
        assert_eq!(counts.inserted, count - partial_counts[table], "{}: {table} inserted", db.name);
    }
    assert_eq!(catalog.row_counts().await.unwrap(), expected);

    let again = catalog.import_lines(all, &ImportOptions::default()).await.expect("re-import");
    assert_eq!(again.inserted(), 0, "{}: a re-import inserts nothing", db.name);
    assert_eq!(again.unchanged(), all.len() as u64);

    let exported = export_text(&catalog).await;
    assert!(exported == shared_export_text(), "{}: the export differs from the shared snapshot", db.name);

    // Through a file: export → import into an empty catalog → export: identical bytes.
    let directory = tempfile::tempdir().unwrap();
    let first_file = directory.path().join("first.jsonl.zst");
    let summary = catalog.export_to(&first_file).await.unwrap();
    assert_eq!(summary.rows(), all.len() as u64);
    let other_db = if db.name == "sqlite" { TestDb::sqlite() } else { TestDb::postgres().await };
    let other = other_db.open().await;
    let report = other.import_file(&first_file, &ImportOptions::default()).await.unwrap();
    assert_eq!(report.inserted(), all.len() as u64);
    let second_file = directory.path().join("second.jsonl.zst");
    other.export_to(&second_file).await.unwrap();
    assert_eq!(std::fs::read(&first_file).unwrap(), std::fs::read(&second_file).unwrap());

    // The read API gives back the very rows that went in.
    let runs: Vec<&ExportLine> = all.iter().filter(|line| line.table == "benchmark_runs").collect();
    let stored_runs = catalog.rows::<BenchmarkRunRow>().await.unwrap();
    assert_eq!(stored_runs.len(), runs.len());
    assert!(stored_runs.iter().zip(&runs).all(|(stored, line)| *stored == typed(&line.row)));
    let run = runs.iter().find(|line| line.row["primaryValue"].is_f64()).expect("a run with a fractional value");
    let id = run.row["id"].as_str().unwrap();
    let digest = run.row["runDigest"].as_str().unwrap();
    assert_eq!(catalog.run_by_id(id).await.unwrap(), Some(typed(&run.row)));
    assert_eq!(catalog.run_by_digest(digest).await.unwrap(), Some(typed(&run.row)));
    assert_eq!(catalog.run_by_id("not-a-uuid").await.unwrap(), None);
    let measurements: Vec<MeasurementRow> = all
        .iter()
        .filter(|line| line.table == "measurements" && line.row["runId"] == run.row["id"])
        .map(|line| typed(&line.row))
        .collect();
    assert_eq!(catalog.measurements_of_run(id).await.unwrap(), measurements);
    let key = run.row["comparisonKey"].as_str().unwrap();
    let peers = runs.iter().filter(|line| line.row["comparisonKey"] == key).count();
    assert_eq!(catalog.runs_by_comparison_key(key).await.unwrap().len(), peers);
    let serving = all.iter().find(|line| line.table == "serving_runs").unwrap();
    let serving_digest = serving.row["runDigest"].as_str().unwrap();
    assert_eq!(catalog.serving_run_by_digest(serving_digest).await.unwrap(), Some(typed(&serving.row)));

    other.close().await;
    catalog.close().await;
}
on_both_backends!(import_overlap_reimport_and_round_trip);

/// The export state of a catalog, to show that a refused import changed nothing.
async fn state(catalog: &Catalog) -> (Vec<(&'static str, u64)>, Vec<u8>) {
    (catalog.row_counts().await.unwrap(), export_text(catalog).await)
}

/// The parents of a few runs, plus those runs: a small, self-contained snapshot.
fn small_snapshot() -> Vec<ExportLine> {
    let all = shared_lines();
    let runs: Vec<&ExportLine> = all.iter().filter(|line| line.table == "benchmark_runs").take(5).collect();
    let referenced = |column: &str| -> Vec<Value> { runs.iter().map(|run| run.row[column].clone()).collect() };
    let implementations = referenced("implementationId");
    let workloads = referenced("workloadId");
    let mut lines: Vec<ExportLine> = all
        .iter()
        .filter(|line| match line.table.as_str() {
            "sources" | "projects" | "operations" | "operation_aliases" => true,
            "implementations" => implementations.contains(&line.row["id"]),
            "workloads" => workloads.contains(&line.row["id"]),
            _ => false,
        })
        .cloned()
        .collect();
    lines.extend(runs.into_iter().cloned());
    lines
}

/// An altered digest, a malformed value, a dangling reference and a conflicting row are
/// each refused whole, naming the row, with nothing written.
async fn refused_snapshots_write_nothing(db: TestDb) {
    let catalog = db.open().await;
    let base = lines_of(&["sources", "projects", "operations", "operation_aliases"]);
    catalog.import_lines(&base, &ImportOptions::default()).await.unwrap();
    let before = state(&catalog).await;
    let snapshot = small_snapshot();

    // One altered run digest.
    let mut altered = snapshot.clone();
    let run = altered.iter_mut().rev().find(|line| line.table == "benchmark_runs").unwrap();
    let line_number = run.line;
    let digest = run.row["runDigest"].as_str().unwrap().to_string();
    let flipped = format!("{}{}", &digest[..70], if digest.ends_with('0') { '1' } else { '0' });
    run.row.insert("runDigest".into(), Value::from(flipped));
    match catalog.import_lines(&altered, &ImportOptions::default()).await {
        Err(CatalogError::Verification { first, .. }) => {
            assert!(first.contains(&format!("line {line_number}")), "{}: {first}", db.name);
            assert!(first.contains("runDigest"), "{first}");
        }
        other => panic!("{}: an altered digest must be refused, got {other:?}", db.name),
    }
    assert_eq!(state(&catalog).await, before, "{}: nothing written", db.name);

    // A negative measurement value, named by line and pointer.
    let mut negative = snapshot.clone();
    let run = negative.iter_mut().find(|line| line.table == "benchmark_runs").unwrap();
    let line_number = run.line;
    run.row.insert("independentReplicationCount".into(), Value::from(-1));
    match catalog.import_lines(&negative, &ImportOptions::default()).await {
        Err(CatalogError::InvalidRow { problem, .. }) => {
            assert_eq!((problem.line, problem.pointer.as_str()), (line_number, "/row/independentReplicationCount"));
        }
        other => panic!("{}: a negative count must be refused, got {other:?}", db.name),
    }
    assert_eq!(state(&catalog).await, before);

    // A run whose implementation is neither in the snapshot nor in the catalog.
    let dangling: Vec<ExportLine> = snapshot.iter().filter(|line| line.table != "implementations").cloned().collect();
    assert!(
        catalog.import_lines(&dangling, &ImportOptions::default()).await.is_err(),
        "{}: dangling reference",
        db.name
    );
    assert_eq!(state(&catalog).await, before);

    // Same id, different content: a dry run reports it, an import refuses it.
    let mut conflicting = snapshot.clone();
    let source = conflicting.iter_mut().find(|line| line.table == "sources").unwrap();
    let line_number = source.line;
    source.row.insert("name".into(), Value::from("Renamed source"));
    let dry = ImportOptions { dry_run: true, ..ImportOptions::default() };
    let report = catalog.import_lines(&conflicting, &dry).await.expect("a dry run reports conflicts");
    assert_eq!(report.table("sources").unwrap().conflicting, 1);
    assert_eq!(report.conflicts[0].line, line_number);
    assert!(report.conflicts[0].reason.contains("name"), "{}", report.conflicts[0].reason);
    assert_eq!(report.table("benchmark_runs").unwrap().inserted, 5);
    match catalog.import_lines(&conflicting, &ImportOptions::default()).await {
        Err(CatalogError::Conflicts { count, first, .. }) => assert_eq!((count, first.line), (1, line_number)),
        other => panic!("{}: a conflicting row must be refused, got {other:?}", db.name),
    }
    assert_eq!(state(&catalog).await, before);

    // A new row that takes a digest another row already holds.
    let mut stolen = snapshot.clone();
    let operation = stolen.iter_mut().find(|line| line.table == "operations").unwrap();
    operation.row.insert("id".into(), Value::from(ki_catalog::new_row_id().to_string()));
    let report = catalog.import_lines(&stolen, &dry).await;
    assert!(report.is_err() || report.as_ref().unwrap().conflicting() > 0, "{}: a taken digest", db.name);
    assert_eq!(state(&catalog).await, before);

    // The clean snapshot then imports, and only adds what is new.
    let report = catalog.import_lines(&snapshot, &ImportOptions::default()).await.unwrap();
    assert_eq!(report.unchanged(), base.len() as u64);
    assert_eq!(report.inserted(), (snapshot.len() - base.len()) as u64);
    catalog.close().await;
}
on_both_backends!(refused_snapshots_write_nothing);

/// A snapshot file with one truncated line is refused whole.
async fn truncated_line_refused(db: TestDb) {
    let catalog = db.open().await;
    let before = state(&catalog).await;
    let text = std::str::from_utf8(shared_export_text()).unwrap();
    let mut lines: Vec<&str> = text.lines().take(3000).collect();
    let cut = lines[2000];
    lines[2000] = &cut[..cut.len() / 2];
    let directory = tempfile::tempdir().unwrap();
    let path = directory.path().join("truncated.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    match catalog.import_file(&path, &ImportOptions::default()).await {
        Err(CatalogError::Snapshot(message)) => assert!(message.contains(":2001:"), "{}: {message}", db.name),
        other => panic!("{}: a truncated line must be refused, got {other:?}", db.name),
    }
    assert_eq!(state(&catalog).await, before);
    catalog.close().await;
}
on_both_backends!(truncated_line_refused);

/// Issue 17: a changed `measurements.value` imported. A measurement row must repeat what its
/// run's manifest states; otherwise the snapshot is refused naming the row, nothing written,
/// also when the run is already in the catalog rather than in the snapshot.
async fn altered_measurement_refused(db: TestDb) {
    let catalog = db.open().await;
    let before = state(&catalog).await;
    let mut snapshot = small_snapshot();
    let run_ids: Vec<Value> =
        snapshot.iter().filter(|line| line.table == "benchmark_runs").map(|line| line.row["id"].clone()).collect();
    snapshot.extend(
        shared_lines()
            .iter()
            .filter(|line| line.table == "measurements" && run_ids.contains(&line.row["runId"]))
            .cloned(),
    );
    let alter = |lines: &mut Vec<ExportLine>| -> (usize, String) {
        let measurement = lines.iter_mut().find(|line| line.table == "measurements").unwrap();
        let value = measurement.row["value"].as_f64().unwrap();
        measurement.row.insert("value".into(), Value::from(value * 2.0));
        (measurement.line, measurement.id().to_string())
    };
    let mut altered = snapshot.clone();
    let (line_number, id) = alter(&mut altered);
    match catalog.import_lines(&altered, &ImportOptions::default()).await {
        Err(CatalogError::Verification { mismatches, first, .. }) => {
            assert_eq!(mismatches, 1, "{}: {first}", db.name);
            assert!(first.starts_with(&format!("line {line_number}: measurements row {id}: ")), "{first}");
        }
        other => panic!("{}: an altered measurement must be refused, got {other:?}", db.name),
    }
    assert_eq!(state(&catalog).await, before, "{}: nothing written", db.name);

    // The honest snapshot imports; then a new measurement row for a stored run is held to it too.
    catalog.import_lines(&snapshot, &ImportOptions::default()).await.unwrap();
    let after = state(&catalog).await;
    let mut extra: Vec<ExportLine> =
        altered.into_iter().filter(|line| line.table == "measurements" && line.id() == id).collect();
    extra[0].row.insert("id".into(), Value::from(ki_catalog::new_row_id().to_string()));
    match catalog.import_lines(&extra, &ImportOptions::default()).await {
        Err(CatalogError::Verification { first, .. }) => assert!(first.contains("measurements row"), "{first}"),
        other => panic!("{}: an altered measurement of a stored run must be refused, got {other:?}", db.name),
    }
    assert_eq!(state(&catalog).await, after);
    catalog.close().await;
}
on_both_backends!(altered_measurement_refused);

/// Issue 17: `ki catalog import /dev/zero` aborted allocating 8 GiB, and an empty file imported
/// as a snapshot. Both are refused, naming the file, with nothing written.
async fn files_that_are_not_exports_are_refused(db: TestDb) {
    let catalog = db.open().await;
    let before = state(&catalog).await;
    let directory = tempfile::tempdir().unwrap();
    let empty = directory.path().join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let cases = [
        (
            std::path::PathBuf::from("/dev/zero"),
            "/dev/zero:1: byte 1 is a NUL byte: not a catalog export (JSON lines)".to_string(),
        ),
        (empty.clone(), format!("{}: empty: not a catalog export", empty.display())),
    ];
    for (path, expected) in cases {
        match catalog.import_file(&path, &ImportOptions::default()).await {
            Err(CatalogError::Snapshot(message)) => assert_eq!(message, expected, "{}", db.name),
            other => panic!("{}: {} must be refused, got {other:?}", db.name, path.display()),
        }
        assert_eq!(state(&catalog).await, before, "{}: nothing written", db.name);
    }
    catalog.close().await;
}
on_both_backends!(files_that_are_not_exports_are_refused);

/// Issue 17: `--out x.jsonl` wrote zstd. The name says the format: `.jsonl` plain,
/// `.jsonl.zst` compressed; any other name is refused and nothing is written.
async fn export_file_names_say_the_format(db: TestDb) {
    let catalog = db.open().await;
    catalog.import_lines(&lines_of(crate::support::PARENT_TABLES), &ImportOptions::default()).await.unwrap();
    let expected = export_text(&catalog).await;
    let directory = tempfile::tempdir().unwrap();

    let plain = directory.path().join("catalog.jsonl");
    catalog.export_to(&plain).await.unwrap();
    assert!(std::fs::read(&plain).unwrap() == expected, "{}: .jsonl is the plain text", db.name);

    let packed = directory.path().join("catalog.jsonl.zst");
    catalog.export_to(&packed).await.unwrap();
    let bytes = std::fs::read(&packed).unwrap();
    assert_eq!(bytes[..4], [0x28, 0xB5, 0x2F, 0xFD], "{}: .jsonl.zst is a zstd frame", db.name);
    assert!(zstd::decode_all(bytes.as_slice()).unwrap() == expected);

    for name in ["catalog.json", "catalog.zst", "catalog.jsonl.gz", "catalog", ".jsonl", "catalog.JSONL"] {
        let path = directory.path().join(name);
        match catalog.export_to(&path).await {
            Err(CatalogError::Export(message)) => assert_eq!(
                message,
                format!(
                    "{}: an export is named NAME.jsonl (JSON lines) or NAME.jsonl.zst (zstd-compressed)",
                    path.display()
                )
            ),
            other => panic!("{}: {name} must be refused, got {other:?}", db.name),
        }
        assert!(!path.exists(), "{name}: nothing written");
    }
    assert_eq!(std::fs::read_dir(directory.path()).unwrap().count(), 2, "no temporary file left behind");
    catalog.close().await;
}
on_both_backends!(export_file_names_say_the_format);

/// While an import runs, readers keep getting answers, and each answer shows the catalog
/// either before or after the import, never half of it.
async fn readers_keep_reading_during_import(db: TestDb) {
    let catalog = db.open().await;
    let all = shared_lines();
    let total_runs = all.iter().filter(|line| line.table == "benchmark_runs").count() as u64;
    let importing = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
    let importer = {
        let catalog = catalog.clone();
        let importing = importing.clone();
        tokio::spawn(async move {
            let report = catalog.import_lines(shared_lines(), &ImportOptions::default()).await;
            importing.store(false, std::sync::atomic::Ordering::SeqCst);
            report
        })
    };
    let reader = Catalog::open(&db.url).await.unwrap();
    let mut reads_during_import = 0;
    let mut observed = std::collections::BTreeSet::new();
    while importing.load(std::sync::atomic::Ordering::SeqCst) {
        let counts = reader.row_counts().await.expect("a read during the import");
        let runs = counts.iter().find(|(table, _)| *table == "benchmark_runs").unwrap().1;
        assert!(runs == 0 || runs == total_runs, "{}: a reader saw {runs} runs mid-import", db.name);
        observed.insert(runs);
        if importing.load(std::sync::atomic::Ordering::SeqCst) {
            reads_during_import += 1;
        }
    }
    let report = importer.await.unwrap().expect("the import");
    assert_eq!(report.inserted(), all.len() as u64);
    assert!(reads_during_import >= 3, "{}: only {reads_during_import} reads completed during the import", db.name);
    assert_eq!(reader.row_counts().await.unwrap(), counts_of(all));
    // The bundled snapshot is the shared one; the catalog is not empty, so nothing happens.
    assert_eq!(catalog.ensure_bundled_snapshot().await.unwrap(), None);
    reader.close().await;
    catalog.close().await;
}
on_both_backends!(readers_keep_reading_during_import);

/// The migrations' tables have exactly the spec's columns, in order (those added later
/// last, as ALTER TABLE appends them); the spec's columns, less those added later, are
/// exactly the shared export's; reopening applies nothing again.
async fn schema_matches_spec_and_export(db: TestDb) {
    let catalog = db.open().await;
    let reopened = db.open().await;
    for table in ki_catalog::schema::TABLES {
        let (later, first): (Vec<&ki_catalog::schema::Column>, Vec<_>) =
            table.columns.iter().partition(|column| column.added_later);
        let expected: Vec<&str> = first.iter().chain(&later).map(|column| column.sql).collect();
        let found = column_names(&db, table.name).await;
        assert_eq!(
            found.iter().map(String::as_str).filter(|name| *name != "seq").collect::<Vec<_>>(),
            expected,
            "{}",
            table.name
        );
        let first_line = shared_lines().iter().find(|line| line.table == table.name).unwrap();
        let json: Vec<&str> = first.iter().map(|column| column.json).collect();
        assert_eq!(first_line.row.keys().map(String::as_str).collect::<Vec<_>>(), json, "{}", table.name);
    }
    assert!(catalog.is_empty().await.unwrap());
    reopened.close().await;
    catalog.close().await;
}
on_both_backends!(schema_matches_spec_and_export);

/// `row` with `key: value` inserted right after the key `after`, where newer snapshots of
/// the public index put it.
fn with_key_after(
    row: &serde_json::Map<String, Value>,
    after: &str,
    key: &str,
    value: Value,
) -> serde_json::Map<String, Value> {
    let mut row = row.clone();
    let position = row.keys().position(|name| name == after).unwrap_or_else(|| panic!("the row has {after}")) + 1;
    row.shift_insert(position, key.to_string(), value);
    row
}

/// Newer snapshots carry projects.kind, implementations.role and benchmark_runs.solScore:
/// rows with them import, read back and export exactly as they came; rows without them
/// (the shared export) still round-trip unchanged, and an explicit null is left out.
async fn later_columns_round_trip(db: TestDb) {
    let catalog = db.open().await;
    let mut snapshot = small_snapshot();
    let project = snapshot.iter_mut().find(|line| line.table == "projects").unwrap();
    project.row = with_key_after(&project.row, "licenseExpression", "kind", Value::from("library"));
    let project_row = project.row.clone();
    let run = snapshot
        .iter_mut()
        .find(|line| line.table == "benchmark_runs" && !line.row["publishedAt"].is_null())
        .expect("a published run");
    run.row = with_key_after(&run.row, "environmentSummary", "solScore", Value::from(0.8125));
    let run_row = run.row.clone();
    let implementation_id = run_row["implementationId"].clone();
    let implementation = snapshot
        .iter_mut()
        .find(|line| line.table == "implementations" && line.row["id"] == implementation_id)
        .unwrap();
    implementation.row = with_key_after(&implementation.row, "licenseDeclared", "role", Value::from("baseline"));
    let implementation_row = implementation.row.clone();
    // An explicit null in a newer snapshot reads as the column being absent.
    let other = snapshot.iter_mut().filter(|line| line.table == "projects").nth(1).unwrap();
    let other_row = other.row.clone();
    other.row = with_key_after(&other.row, "licenseExpression", "kind", Value::Null);

    let report =
        catalog.import_lines(&snapshot, &ImportOptions::default()).await.expect("a snapshot with the later columns");
    assert_eq!(report.inserted(), snapshot.len() as u64);
    let again = catalog.import_lines(&snapshot, &ImportOptions::default()).await.unwrap();
    assert_eq!((again.inserted(), again.unchanged()), (0, snapshot.len() as u64), "{}: a re-import", db.name);

    let id = run_row["id"].as_str().unwrap();
    assert_eq!(catalog.run_by_id(id).await.unwrap(), Some(typed(&run_row)), "{}", db.name);
    let exported = String::from_utf8(export_text(&catalog).await).unwrap();
    let line_of = |table: &str, row: &serde_json::Map<String, Value>| {
        format!("{{\"table\":\"{table}\",\"row\":{}}}", ki_catalog::json_text::to_text(&Value::Object(row.clone())))
    };
    for (table, row) in [
        ("projects", &project_row),
        ("implementations", &implementation_row),
        ("benchmark_runs", &run_row),
        ("projects", &other_row),
    ] {
        let expected = line_of(table, row);
        assert!(exported.lines().any(|line| line == expected), "{}: the export lacks {expected}", db.name);
    }
    assert!(exported.contains("\"solScore\":0.8125,\"manifest\""), "{}", db.name);

    // A changed later column on a stored row is a conflict like any other.
    let mut changed = snapshot.clone();
    let run = changed.iter_mut().find(|line| line.row.get("solScore").is_some()).unwrap();
    run.row.insert("solScore".into(), Value::from(0.5));
    match catalog.import_lines(&changed, &ImportOptions::default()).await {
        Err(CatalogError::Conflicts { count, first, .. }) => {
            assert_eq!(count, 1);
            assert!(first.reason.contains("solScore"), "{}", first.reason);
        }
        other => panic!("{}: a changed solScore must conflict, got {other:?}", db.name),
    }
    // A negative SOL score is refused like any other measure.
    let mut negative = small_snapshot();
    let run = negative.iter_mut().find(|line| line.table == "benchmark_runs").unwrap();
    run.row = with_key_after(&run.row, "environmentSummary", "solScore", Value::from(-1.0));
    let line_number = run.line;
    match catalog.import_lines(&negative, &ImportOptions::default()).await {
        Err(CatalogError::InvalidRow { problem, .. }) => {
            assert_eq!((problem.line, problem.pointer.as_str()), (line_number, "/row/solScore"))
        }
        other => panic!("{}: a negative solScore must be refused, got {other:?}", db.name),
    }
    catalog.close().await;
}
on_both_backends!(later_columns_round_trip);

/// A catalog made before migration 0003 (version 1 only) is brought up to date when opened,
/// and then imports and exports the shared snapshot unchanged.
async fn version_1_catalog_is_migrated(db: TestDb) {
    use sha2::Digest;
    let (sql, backend_dir) = if db.name == "sqlite" {
        (include_str!("../../migrations/sqlite/0001_catalog.sql"), "sqlite")
    } else {
        (include_str!("../../migrations/postgres/0001_catalog.sql"), "postgres")
    };
    let checksum = hex::encode(sha2::Sha256::digest(sql.as_bytes()));
    let ledger = format!(
        "CREATE TABLE ki_schema_migrations (version BIGINT PRIMARY KEY, name TEXT NOT NULL, checksum TEXT NOT NULL, applied_at TEXT NOT NULL); \
         INSERT INTO ki_schema_migrations VALUES (1, 'catalog', '{checksum}', '2026-11-30T00:00:00.000Z');"
    );
    if backend_dir == "sqlite" {
        let options = sqlx::sqlite::SqliteConnectOptions::new()
            .filename(db.url.trim_start_matches("sqlite://"))
            .create_if_missing(true);
        let pool = sqlx::SqlitePool::connect_with(options).await.unwrap();
        sqlx::raw_sql(sql).execute(&pool).await.unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(ledger)).execute(&pool).await.unwrap();
        pool.close().await;
    } else {
        let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
        sqlx::raw_sql(sql).execute(&pool).await.unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(ledger)).execute(&pool).await.unwrap();
        pool.close().await;
    }
    assert!(!column_names(&db, "benchmark_runs").await.contains(&"sol_score".to_string()));
    let catalog = db.open().await;
    assert!(column_names(&db, "benchmark_runs").await.contains(&"sol_score".to_string()), "{}", db.name);
    let report = catalog.import_lines(shared_lines(), &ImportOptions::default()).await.unwrap();
    assert_eq!(report.inserted(), shared_lines().len() as u64);
    assert!(
        export_text(&catalog).await == shared_export_text(),
        "{}: the export differs from the shared snapshot",
        db.name
    );
    catalog.close().await;
}
on_both_backends!(version_1_catalog_is_migrated);

async fn column_names(db: &TestDb, table: &str) -> Vec<String> {
    use sqlx::Row;
    if db.name == "sqlite" {
        let pool = sqlx::SqlitePool::connect(&db.url).await.unwrap();
        let rows =
            sqlx::query(sqlx::AssertSqlSafe(format!("PRAGMA table_info({table})"))).fetch_all(&pool).await.unwrap();
        pool.close().await;
        rows.iter().map(|row| row.get::<String, _>("name")).collect()
    } else {
        let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
        let rows = sqlx::query(
            "SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = $1 ORDER BY ordinal_position",
        )
        .bind(table)
        .fetch_all(&pool)
        .await
        .unwrap();
        pool.close().await;
        rows.iter().map(|row| row.get::<String, _>(0)).collect()
    }
}

/// The snapshot shipped in data/ is the public index's export, byte for byte: the sha256
/// data/README.md gives (its first 8 hex digits are in the file name).
#[test]
fn bundled_snapshot_is_the_public_export() {
    use sha2::{Digest, Sha256};
    let bundled = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data").join(ki_catalog::BUNDLED_SNAPSHOT_NAME),
    )
    .unwrap();
    assert_eq!(bundled.len(), 3_124_880);
    assert_eq!(
        hex::encode(Sha256::digest(&bundled)),
        "0022af0bfbed96c53e2a2a2315a3e46f0c362c11d1ea1fefd95daac368638f6b"
    );
}

#[tokio::test]
async fn unsupported_urls_are_refused() {
    let error = Catalog::open("mysql://localhost/x").await.unwrap_err();
    assert!(error.to_string().contains("sqlite://PATH"), "{error}");
}
