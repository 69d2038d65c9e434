//! Test databases on both backends, and the shared export, for the catalog's tests.
#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use ki_catalog::{Catalog, ExportLine};

/// The PostgreSQL the tests use (trust auth); override with KI_TEST_POSTGRES_URL.
pub fn postgres_base_url() -> String {
    std::env::var("KI_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_string())
}

/// The public index's export of 2026-08-16, bundled in data/ (see data/README.md).
pub fn shared_export_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/catalog-2026-08-16-0022af0b.jsonl.zst")
}

/// The shared export's lines, read once per test binary.
pub fn shared_lines() -> &'static [ExportLine] {
    static LINES: OnceLock<Vec<ExportLine>> = OnceLock::new();
    LINES.get_or_init(|| ki_model::export::read_export(shared_export_path()).expect("the shared export reads"))
}

/// The shared export, decompressed, byte for byte.
pub fn shared_export_text() -> &'static [u8] {
    static TEXT: OnceLock<Vec<u8>> = OnceLock::new();
    TEXT.get_or_init(|| {
        let compressed = std::fs::read(shared_export_path()).expect("the shared export exists");
        zstd::decode_all(compressed.as_slice()).expect("the shared export decompresses")
    })
}

/// Rows per table in a set of lines, in export table order.
pub fn counts_of(lines: &[ExportLine]) -> Vec<(&'static str, u64)> {
    ki_catalog::schema::table_names()
        .map(|table| (table, lines.iter().filter(|line| line.table == table).count() as u64))
        .collect()
}

/// The lines of the given tables only.
pub fn lines_of(tables: &[&str]) -> Vec<ExportLine> {
    shared_lines().iter().filter(|line| tables.contains(&line.table.as_str())).cloned().collect()
}

pub const PARENT_TABLES: &[&str] = &["sources", "projects", "operations", "operation_aliases"];

/// A fresh, empty catalog database; dropped (the file, or the PostgreSQL schema) when
/// this value is.
pub struct TestDb {
    pub url: String,
    pub name: String,
    _directory: Option<tempfile::TempDir>,
    pg_schema: Option<String>,
}

static NEXT: AtomicU32 = AtomicU32::new(0);

impl TestDb {
    pub fn sqlite() -> TestDb {
        let directory = tempfile::tempdir().expect("a temporary directory");
        let url = format!("sqlite://{}", directory.path().join("catalog.db").display());
        TestDb { url, name: "sqlite".into(), _directory: Some(directory), pg_schema: None }
    }

    pub async fn postgres() -> TestDb {
        let schema = format!(
            "ki_test_{}_{}_{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed),
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().subsec_nanos()
        );
        let admin = sqlx::PgPool::connect(&postgres_base_url()).await.unwrap_or_else(|error| {
            panic!("PostgreSQL at {} is needed by the store tests: {error}", postgres_base_url())
        });
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}"))).execute(&admin).await.unwrap();
        admin.close().await;
        let url = format!("{}?options=-c%20search_path%3D{schema}", postgres_base_url());
        TestDb { url, name: "postgres".into(), _directory: None, pg_schema: Some(schema) }
    }

    pub async fn open(&self) -> Catalog {
        Catalog::open(&self.url).await.unwrap_or_else(|error| panic!("open {}: {error}", self.url))
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let Some(schema) = self.pg_schema.take() else { return };
        // Drop runs outside any runtime we may block; use a thread with its own.
        let _ = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            runtime.block_on(async {
                if let Ok(admin) = sqlx::PgPool::connect(&postgres_base_url()).await {
                    let _ = sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE")))
                        .execute(&admin)
                        .await;
                    admin.close().await;
                }
            });
        })
        .join();
    }
}

/// The uncompressed export of a catalog.
pub async fn export_text(catalog: &Catalog) -> Vec<u8> {
    let mut out = Vec::new();
    catalog.export_lines_to(&mut out).await.expect("export");
    out
}

/// Runs an async test body once per backend.
#[macro_export]
macro_rules! on_both_backends {
    ($body:ident) => {
        mod $body {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$body($crate::support::TestDb::sqlite()).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$body($crate::support::TestDb::postgres().await).await;
            }
        }
    };
}
