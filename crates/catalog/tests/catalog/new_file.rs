//! A new SQLite catalog made from an export file (`Catalog::import_file_into_new`): built beside
//! its name without a journal and put in place only once complete. It must hold exactly what
//! `open` then `import_file` would, and leave nothing behind when the file is refused.

use crate::support::{export_text, shared_export_path, shared_export_text, shared_lines};
use ki_catalog::{Catalog, CatalogError, ImportOptions};

fn url_of(path: &std::path::Path) -> String {
    format!("sqlite://{}", path.display())
}

/// The names in `dir`, sorted.
fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn a_new_file_holds_what_an_import_into_an_open_catalog_holds() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("new.db");
    let report = Catalog::import_file_into_new(&url_of(&target), &shared_export_path(), &ImportOptions::default())
        .await
        .unwrap()
        .expect("a file still to be made is made");
    assert_eq!(report.inserted(), shared_lines().len() as u64);
    // Only the catalog (and the WAL files of the one opening that put it in WAL mode) remain.
    assert!(names_in(dir.path()).iter().all(|name| name.starts_with("new.db")), "{:?}", names_in(dir.path()));

    let catalog = Catalog::open(&url_of(&target)).await.unwrap();
    assert!(export_text(&catalog).await == shared_export_text(), "the export differs from the imported file");
    let again = catalog.import_file(&shared_export_path(), &ImportOptions::default()).await.unwrap();
    assert_eq!((again.inserted(), again.unchanged()), (0, shared_lines().len() as u64));
    catalog.close().await;
    assert_eq!(journal_mode_of(&target).await, "wal", "the new catalog is in WAL mode like any other");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let plain = dir.path().join("plain.db");
        Catalog::open(&url_of(&plain)).await.unwrap().close().await;
        let mode = |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&target), mode(&plain), "made with the permissions SQLite gives a new catalog");
    }

    // A file that exists now, a dry run and an in-memory database are left to the usual path.
    let export = shared_export_path();
    let plain_import = ImportOptions::default();
    let existing = Catalog::import_file_into_new(&url_of(&target), &export, &plain_import).await;
    assert!(existing.unwrap().is_none());
    let dry = ImportOptions { dry_run: true, ..ImportOptions::default() };
    let other = dir.path().join("dry.db");
    assert!(Catalog::import_file_into_new(&url_of(&other), &export, &dry).await.unwrap().is_none());
    assert!(!other.exists(), "a dry run makes no file");
    for in_memory in ["sqlite::memory:", "sqlite://:memory:", &format!("sqlite://{}?mode=memory", other.display())] {
        let memory = Catalog::import_file_into_new(in_memory, &export, &plain_import).await;
        assert!(memory.unwrap().is_none(), "{in_memory}");
    }
    assert!(!other.exists(), "an in-memory database makes no file");
    let strays: Vec<_> = std::fs::read_dir(".")
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().contains("memory"))
        .collect();
    assert!(strays.is_empty(), "an in-memory URL made a file: {strays:?}");
}

/// The journal mode a SQLite file is in, read through a catalog-free connection.
async fn journal_mode_of(path: &std::path::Path) -> String {
    use sqlx::Connection;
    let mut connection = sqlx::SqliteConnection::connect(&url_of(path)).await.unwrap();
    let mode: (String,) = sqlx::query_as("PRAGMA journal_mode").fetch_one(&mut connection).await.unwrap();
    connection.close().await.unwrap();
    mode.0
}

#[tokio::test]
async fn a_refused_file_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let mut lines = shared_lines().to_vec();
    let at = lines.iter().rposition(|line| line.table == "benchmark_runs").unwrap();
    lines[at].row.insert("runDigest".into(), serde_json::Value::from(format!("sha256:{}", "0".repeat(64))));
    let mut text = String::new();
    for line in &lines {
        let object = serde_json::json!({"table": line.table, "row": serde_json::Value::Object(line.row.clone())});
        text.push_str(&serde_json::to_string(&object).unwrap());
        text.push('\n');
    }
    let export = dir.path().join("altered.jsonl");
    std::fs::write(&export, text).unwrap();
    let target = dir.path().join("new.db");
    match Catalog::import_file_into_new(&url_of(&target), &export, &ImportOptions::default()).await {
        Err(CatalogError::Verification { mismatches, first, origin }) => {
            assert_eq!(mismatches, 1, "{first}");
            assert!(first.starts_with(&format!("line {}: benchmark_runs row ", lines[at].line)), "{first}");
            assert!(origin.contains("altered.jsonl"), "{origin}");
        }
        other => panic!("an altered digest must be refused, got {other:?}"),
    }
    assert_eq!(names_in(dir.path()), ["altered.jsonl"], "no catalog and no half-made file");

    // A folder that does not exist: a clear error naming the file, nothing made.
    let nowhere = dir.path().join("missing").join("new.db");
    let error = Catalog::import_file_into_new(&url_of(&nowhere), &export, &ImportOptions::default()).await.unwrap_err();
    assert!(error.to_string().contains("missing/new.db"), "{error}");
    assert_eq!(names_in(dir.path()), ["altered.jsonl"]);
}
