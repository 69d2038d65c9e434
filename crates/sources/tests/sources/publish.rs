//! Publishing FlashInfer-Bench rows through the real catalog (SQLite file and PostgreSQL):
//! idempotent re-imports, records already imported from the public index's export recognised
//! as unchanged, and refused data sets writing nothing.

use std::path::{Path, PathBuf};

use ki_catalog::{Catalog, ImportReport};
use ki_sources::flashinfer::{ImportOptions, plan_import, publish};

/// This repository's root: the tests read fixtures/ and data/ only.
fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn samples() -> PathBuf {
    repository().join("fixtures/flashinfer-trace-samples/flashinfer_trace")
}

fn options() -> ImportOptions {
    ImportOptions {
        imported_at: "2026-11-30T00:00:00Z".parse::<jiff::Timestamp>().unwrap(),
        ..ImportOptions::default()
    }
}

fn counts(report: &ImportReport, table: &str) -> (u64, u64, u64) {
    report.table(table).map(|c| (c.inserted, c.unchanged, c.conflicting)).unwrap_or_default()
}

const PG_ADMIN: &str = "postgres://postgres@127.0.0.1:5432/test";

/// A scratch schema on the local PostgreSQL, dropped when the test ends.
struct Scratch {
    name: String,
}

impl Scratch {
    async fn create() -> Scratch {
        let name = format!("ki_sources_{}_{}", std::process::id(), ki_model::utc::now_nanos());
        let pool = sqlx::PgPool::connect(PG_ADMIN).await.expect("PostgreSQL on 127.0.0.1:5432 (database test)");
        // The name is built from our pid and the clock: digits and letters only.
        sqlx::query(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {name}"))).execute(&pool).await.unwrap();
        pool.close().await;
        Scratch { name }
    }

    fn url(&self) -> String {
        format!("{PG_ADMIN}?options=-c%20search_path%3D{}", self.name)
    }

    async fn drop_schema(self) {
        let pool = sqlx::PgPool::connect(PG_ADMIN).await.unwrap();
        sqlx::query(sqlx::AssertSqlSafe(format!("DROP SCHEMA {} CASCADE", self.name))).execute(&pool).await.unwrap();
        pool.close().await;
    }
}

async fn import_twice(catalog: &Catalog) {
    let plan = plan_import(&samples(), &options()).unwrap();
    let dry = publish(catalog, &plan, true, "samples").await.unwrap();
    assert_eq!(counts(&dry, "operations"), (17, 0, 0));
    assert_eq!(counts(&dry, "workloads"), (96, 0, 0));
    assert!(catalog.is_empty().await.unwrap(), "a dry run writes nothing");

    let first = publish(catalog, &plan, false, "samples").await.unwrap();
    assert_eq!(counts(&first, "operations"), (17, 0, 0));
    assert_eq!(counts(&first, "workloads"), (96, 0, 0));
    assert_eq!(first.inserted() as usize, plan.rows.len());

    // Planned again at another time: same records, nothing new.
    let mut later = options();
    later.imported_at = "2027-01-01T00:00:00Z".parse::<jiff::Timestamp>().unwrap();
    let again = plan_import(&samples(), &later).unwrap();
    let second = publish(catalog, &again, false, "samples").await.unwrap();
    assert_eq!(second.inserted(), 0, "{second:?}");
    assert_eq!(second.unchanged() as usize, again.rows.len());
    assert_eq!(counts(&second, "workloads"), (0, 96, 0));
}

#[tokio::test(flavor = "multi_thread")]
async fn sqlite_second_import_inserts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("catalog.db").display());
    let catalog = Catalog::open(&url).await.unwrap();
    import_twice(&catalog).await;
    catalog.close().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn postgres_second_import_inserts_nothing() {
    let scratch = Scratch::create().await;
    let catalog = Catalog::open(&scratch.url()).await.unwrap();
    import_twice(&catalog).await;
    catalog.close().await;
    scratch.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread")]
async fn records_from_the_public_export_are_recognised_as_unchanged() {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("catalog.db").display());
    let catalog = Catalog::open(&url).await.unwrap();
    // The public index's FlashInfer-Bench operations and workloads (with their ids), as
    // imported from its export: the sources, operations, aliases and workloads tables.
    let export = repository().join("data/catalog-2026-08-16-0022af0b.jsonl.zst");
    let lines = ki_model::export::read_export(&export).unwrap();
    let from_flashinfer = |line: &ki_model::export::ExportLine| {
        line.row["manifest"]["metadata"]["sourceRefs"].to_string().contains("flashinfer-ai/flashinfer-trace")
    };
    let operation_ids: std::collections::HashSet<String> = lines
        .iter()
        .filter(|l| l.table == "operations" && from_flashinfer(l))
        .map(|l| l.row["id"].as_str().unwrap().to_string())
        .collect();
    let subset: Vec<ki_model::export::ExportLine> = lines
        .into_iter()
        .filter(|l| match l.table.as_str() {
            "sources" => true,
            "operations" => operation_ids.contains(l.row["id"].as_str().unwrap()),
            "operation_aliases" | "workloads" => operation_ids.contains(l.row["operationId"].as_str().unwrap()),
            _ => false,
        })
        .collect();
    assert!(subset.iter().filter(|l| l.table == "workloads").count() > 96);
    catalog.import_lines(&subset, &ki_catalog::ImportOptions::default()).await.unwrap();
    let before = catalog.row_counts().await.unwrap();

    let plan = plan_import(&samples(), &options()).unwrap();
    let dry = publish(&catalog, &plan, true, "samples").await.unwrap();
    assert_eq!(counts(&dry, "operations"), (0, 17, 0), "{dry:?}");
    assert_eq!(counts(&dry, "operation_aliases"), (0, 17, 0));
    assert_eq!(counts(&dry, "workloads"), (0, 96, 0));
    assert_eq!(counts(&dry, "sources"), (0, 1, 0));
    assert_eq!(dry.conflicting(), 0, "{:?}", dry.conflicts);
    assert_eq!(catalog.row_counts().await.unwrap(), before, "a dry run writes nothing");

    // Only the reference code (kept as artifacts) is new to the index.
    let written = publish(&catalog, &plan, false, "samples").await.unwrap();
    assert_eq!(written.inserted(), counts(&written, "artifacts").0);
    assert_eq!(counts(&written, "artifacts").0, 17);
    let again = publish(&catalog, &plan, false, "samples").await.unwrap();
    assert_eq!(again.inserted(), 0);
    catalog.close().await;
}
