//! The search index (migration 0007): written in the transaction of every import that adds what
//! it derives from (and by nothing that writes nothing), filled by the migration for a catalog
//! that already has rows, the same entries in the same order on SQLite and PostgreSQL, and
//! words that hold FTS5 or LIKE syntax read as text.

use ki_catalog::{Catalog, ImportOptions, SearchKey};
use ki_model::search_text::SearchKind;

use crate::support::{PARENT_TABLES, TestDb, lines_of, shared_lines};

fn words(text: &str) -> Vec<String> {
    text.split_whitespace().map(str::to_lowercase).collect()
}

async fn found(catalog: &Catalog, text: &str) -> Vec<SearchKey> {
    catalog.search(&words(text)).await.unwrap_or_else(|e| panic!("search {text:?}: {e}"))
}

/// Queries whose words hold FTS5 query syntax, LIKE wildcards, SQL and NUL.
const HOSTILE: &[&str] = &[
    "\"",
    "gqa\" OR \"gemm",
    "gemm*",
    "NEAR(gemm decode)",
    "haystack:gemm",
    "^gemm",
    "{kind}",
    "50% off_",
    "\\",
    "'; DROP TABLE search_entries; --",
    "gemm\u{0}",
    "-gemm",
    "+",
    "a",
];

async fn the_index_follows_every_import(db: TestDb) {
    let catalog = db.open().await;
    assert!(found(&catalog, "").await.is_empty(), "{}: an empty catalog finds nothing", db.name);

    let parents = lines_of(PARENT_TABLES);
    let dry = ImportOptions { dry_run: true, ..ImportOptions::default() };
    catalog.import_lines(&parents, &dry).await.unwrap();
    assert!(found(&catalog, "rmsnorm").await.is_empty(), "{}: a dry run indexes nothing", db.name);

    catalog.import_lines(&parents, &ImportOptions::default()).await.unwrap();
    let rmsnorm = found(&catalog, "rmsnorm").await;
    assert!(!rmsnorm.is_empty() && rmsnorm.iter().all(|c| c.kind == SearchKind::Operation), "{}: {rmsnorm:?}", db.name);
    assert!(found(&catalog, "h200").await.iter().all(|c| c.kind != SearchKind::Hardware), "no runs, no GPUs yet");
    // Every operation is found by its own name, in any case, and by its slug.
    for line in parents.iter().filter(|l| l.table == "operations").take(40) {
        let id = line.row["id"].as_str().unwrap();
        for name in [line.row["name"].as_str().unwrap().to_uppercase(), line.row["slug"].as_str().unwrap().to_string()]
        {
            let hits = found(&catalog, &name).await;
            assert!(hits.iter().any(|c| c.kind == SearchKind::Operation && c.key == id), "{}: {name}", db.name);
        }
    }
    // An alias is found, and names its operation.
    let alias = parents.iter().find(|l| l.table == "operation_aliases").unwrap();
    let by_alias = found(&catalog, alias.row["alias"].as_str().unwrap()).await;
    assert!(by_alias.iter().any(|c| c.key == alias.row["operationId"]), "{}: {by_alias:?}", db.name);

    catalog.import_lines(shared_lines(), &ImportOptions::default()).await.unwrap();
    let gpu = shared_lines().iter().find_map(|l| l.row.get("hardwareModel")?.as_str()).unwrap();
    let by_gpu = found(&catalog, gpu).await;
    assert!(by_gpu.iter().any(|c| c.kind == SearchKind::Hardware && c.key == gpu), "{}: {gpu}", db.name);
    assert!(found(&catalog, "gemm").await.iter().any(|c| c.kind == SearchKind::Implementation), "{}", db.name);
    // Re-importing writes nothing, and the index stays as it was.
    let before = found(&catalog, "").await;
    catalog.import_lines(shared_lines(), &ImportOptions::default()).await.unwrap();
    assert_eq!(found(&catalog, "").await, before);

    // Substrings of any length, every word required.
    let (decode, gqa) = (found(&catalog, "gqa decode").await, found(&catalog, "gqa").await);
    assert!(!decode.is_empty() && decode.len() < gqa.len(), "{}", db.name);
    assert!(decode.iter().all(|c| gqa.iter().any(|g| (&g.kind, &g.key) == (&c.kind, &c.key))), "every word counts");
    assert!(!found(&catalog, "h2").await.is_empty(), "{}: a two-letter word is found", db.name);

    for query in HOSTILE {
        catalog.search(&words(query)).await.unwrap_or_else(|e| panic!("{}: {query:?}: {e}", db.name));
    }
    assert!(found(&catalog, "gemm*").await.is_empty(), "* is a character, not a prefix query");
    assert!(found(&catalog, "50%").await.is_empty(), "% is a character, not a wildcard");
    assert_eq!(found(&catalog, "").await, before, "{}: hostile words changed nothing", db.name);

    catalog.close().await;
}
on_both_backends!(the_index_follows_every_import);

/// A catalog from before migration 0007 holds rows and no index: opening it builds the index.
async fn an_existing_catalog_is_indexed_by_the_migration(db: TestDb) {
    let catalog = db.open().await;
    catalog.import_lines(&lines_of(PARENT_TABLES), &ImportOptions::default()).await.unwrap();
    let indexed = found(&catalog, "").await;
    assert!(!indexed.is_empty());
    catalog.close().await;
    let undo = "DROP TABLE search_entries; DELETE FROM ki_schema_migrations WHERE version = 7";
    if db.name == "sqlite" {
        let pool = sqlx::SqlitePool::connect(&db.url).await.unwrap();
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP TABLE search_entries_text; {undo}")))
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
    } else {
        let pool = sqlx::PgPool::connect(&db.url).await.unwrap();
        sqlx::raw_sql(undo).execute(&pool).await.unwrap();
        pool.close().await;
    }
    let catalog = db.open().await;
    assert_eq!(found(&catalog, "").await, indexed, "{}: the migration filled the index", db.name);
    catalog.close().await;
}
on_both_backends!(an_existing_catalog_is_indexed_by_the_migration);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn both_backends_find_the_same_entries_in_the_same_order() {
    let (sqlite_db, postgres_db) = (TestDb::sqlite(), TestDb::postgres().await);
    let (sqlite, postgres) = (sqlite_db.open().await, postgres_db.open().await);
    for catalog in [&sqlite, &postgres] {
        catalog.import_lines(shared_lines(), &ImportOptions::default()).await.unwrap();
    }
    let queries =
        ["", "gqa decode", "rmsnorm", "gemm", "gqa paged decode", "h200", "nvidia", "flashinfer", "fp8", "moe"];
    for query in queries.iter().chain(HOSTILE) {
        let (a, b) = (found(&sqlite, query).await, found(&postgres, query).await);
        assert_eq!(a, b, "{query:?}");
    }
    sqlite.close().await;
    postgres.close().await;
}
