//! `ki catalog import` killed with SIGKILL while it writes rows leaves the catalog exactly
//! as it was; `ki catalog import` / `export` as a user runs them. Both backends.

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ki_catalog::{Catalog, ExportLine, ImportOptions};

fn shared_export() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/catalog-2026-08-16-0022af0b.jsonl.zst")
}

fn postgres_base_url() -> String {
    std::env::var("KI_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_string())
}

/// A scratch catalog: a SQLite file, or a PostgreSQL schema dropped afterwards.
struct Scratch {
    url: String,
    schema: Option<String>,
    _directory: tempfile::TempDir,
}

impl Scratch {
    async fn new(backend: &str) -> Scratch {
        let directory = tempfile::tempdir().unwrap();
        if backend == "sqlite" {
            let url = format!("sqlite://{}", directory.path().join("catalog.db").display());
            return Scratch { url, schema: None, _directory: directory };
        }
        let schema = format!("ki_kill_test_{}_{}", std::process::id(), ki_catalog::new_row_id().simple());
        let admin = sqlx::PgPool::connect(&postgres_base_url()).await.expect("PostgreSQL for the store tests");
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}"))).execute(&admin).await.unwrap();
        admin.close().await;
        let url = format!("{}?options=-c%20search_path%3D{schema}", postgres_base_url());
        Scratch { url, schema: Some(schema), _directory: directory }
    }

    async fn drop_schema(&self) {
        if let Some(schema) = &self.schema {
            let admin = sqlx::PgPool::connect(&postgres_base_url()).await.unwrap();
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE"))).execute(&admin).await.unwrap();
            admin.close().await;
        }
    }
}

async fn state(url: &str) -> (Vec<(&'static str, u64)>, Vec<u8>) {
    let catalog = Catalog::open(url).await.unwrap();
    let counts = catalog.row_counts().await.unwrap();
    let mut text = Vec::new();
    catalog.export_lines_to(&mut text).await.unwrap();
    catalog.close().await;
    (counts, text)
}

async fn killed_mid_import_changes_nothing(backend: &str) {
    let scratch = Scratch::new(backend).await;
    let lines: Vec<ExportLine> = ki_model::export::read_export(shared_export()).unwrap();
    let parents: Vec<ExportLine> = lines
        .iter()
        .filter(|line| ["sources", "projects", "operations", "operation_aliases"].contains(&line.table.as_str()))
        .cloned()
        .collect();
    {
        let catalog = Catalog::open(&scratch.url).await.unwrap();
        catalog.import_lines(&parents, &ImportOptions::default()).await.unwrap();
        catalog.close().await;
    }
    let before = state(&scratch.url).await;

    let mut child = Command::new(env!("CARGO_BIN_EXE_ki"))
        .args(["catalog", "import", "--verbose", "--database", &scratch.url])
        .arg(shared_export())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ki runs");
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = Vec::new();
    for line in stderr.lines() {
        let line = line.unwrap();
        seen.push(line.clone());
        // Rows of earlier tables are written; runs are being written now, with measurements
        // and record events still to come (margin: the kill must land before the commit).
        if line.starts_with("writing benchmark_runs") {
            child.kill().unwrap();
            break;
        }
    }
    let status = child.wait().unwrap();
    assert_eq!(status.signal(), Some(9), "{backend}: ki was to be killed mid-import; it said:\n{}", seen.join("\n"));
    assert!(seen.iter().any(|line| line.starts_with("writing benchmark_runs")), "{seen:?}");

    let after = state(&scratch.url).await;
    assert_eq!(after.0, before.0, "{backend}: row counts after the kill");
    assert!(after.1 == before.1, "{backend}: the catalog changed after the kill");
    if backend == "sqlite" {
        use sqlx::Row;
        let pool = sqlx::SqlitePool::connect(&scratch.url).await.unwrap();
        let check: String = sqlx::query("PRAGMA integrity_check").fetch_one(&pool).await.unwrap().get(0);
        assert_eq!(check, "ok");
        pool.close().await;
    }

    // The same import then runs to the end and adds everything but the parents.
    let output = Command::new(env!("CARGO_BIN_EXE_ki"))
        .args(["catalog", "import", "--database", &scratch.url])
        .arg(shared_export())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{backend}: {stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    let total = format!("total {:>34} {:>16}", lines.len() - parents.len(), parents.len());
    assert!(
        stdout
            .lines()
            .any(|line| line.split_whitespace().collect::<Vec<_>>() == total.split_whitespace().collect::<Vec<_>>()),
        "{stdout}"
    );
    assert!(!stdout.contains('\u{1b}'), "no progress bar when piped");

    // A second run inserts nothing and says so.
    let output = Command::new(env!("CARGO_BIN_EXE_ki"))
        .args(["catalog", "import", "--database", &scratch.url])
        .arg(shared_export())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success());
    assert!(stdout.contains(&format!("nothing new: all {} rows were already present", lines.len())), "{stdout}");

    // `ki catalog export` writes the shared snapshot's exact lines.
    let out = scratch._directory.path().join("export.jsonl.zst");
    let output = Command::new(env!("CARGO_BIN_EXE_ki"))
        .args(["catalog", "export", "--database", &scratch.url, "--out"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let exported = zstd::decode_all(std::fs::read(&out).unwrap().as_slice()).unwrap();
    let shared = zstd::decode_all(std::fs::read(shared_export()).unwrap().as_slice()).unwrap();
    assert!(exported == shared, "{backend}: export differs from the shared snapshot");

    scratch.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_killed_mid_import_changes_nothing() {
    killed_mid_import_changes_nothing("sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_killed_mid_import_changes_nothing() {
    killed_mid_import_changes_nothing("postgres").await;
}

#[test]
fn an_altered_digest_is_refused_by_the_command() {
    let directory = tempfile::tempdir().unwrap();
    let plain = zstd::decode_all(std::fs::read(shared_export()).unwrap().as_slice()).unwrap();
    let text = String::from_utf8(plain).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let position = lines.iter().position(|line| line.starts_with("{\"table\":\"workloads\"")).unwrap();
    let digest_at =
        lines[position].find("\"workloadDigest\":\"sha256:").unwrap() + "\"workloadDigest\":\"sha256:".len();
    let original = lines[position].as_bytes()[digest_at];
    lines[position].replace_range(digest_at..digest_at + 1, if original == b'a' { "b" } else { "a" });
    let path = directory.path().join("altered.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let database = format!("sqlite://{}", directory.path().join("catalog.db").display());
    let output = Command::new(env!("CARGO_BIN_EXE_ki"))
        .args(["catalog", "import", "--database", &database])
        .arg(&path)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains(&format!("line {}", position + 1)) && stderr.contains("workloadDigest"), "{stderr}");
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let empty = runtime.block_on(async {
        let catalog = Catalog::open(&database).await.unwrap();
        catalog.is_empty().await.unwrap()
    });
    assert!(empty, "nothing written");
}

/// Ctrl-C (SIGINT) while `ki catalog import` writes: into a SQLite file still to be made, the
/// half-made file is removed (the folder is left as it was); into an existing catalog, the
/// transaction is rolled back. Either way the command says it was interrupted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn interrupted_import_leaves_nothing() {
    let directory = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", directory.path().join("catalog.db").display());
    let interrupt = |database: &str| {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ki"))
            .args(["catalog", "import", "--verbose", "--database", database])
            .arg(shared_export())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ki runs");
        let mut seen = Vec::new();
        for line in BufReader::new(child.stderr.take().unwrap()).lines() {
            let line = line.unwrap();
            seen.push(line.clone());
            // Runs are being written, with measurements and record events still to come.
            if line.starts_with("writing benchmark_runs") {
                let sent = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
                assert!(sent.success());
            }
        }
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(1), "ki was to stop on the interrupt; it said:\n{}", seen.join("\n"));
        assert!(seen.iter().any(|line| line.contains("interrupted: nothing written")), "{seen:?}");
    };

    interrupt(&database);
    let left: Vec<_> = std::fs::read_dir(directory.path()).unwrap().flatten().map(|entry| entry.file_name()).collect();
    assert!(left.is_empty(), "the half-made catalog is removed: {left:?}");

    let catalog = Catalog::open(&database).await.unwrap();
    catalog.close().await;
    let before = state(&database).await;
    interrupt(&database);
    assert!(state(&database).await == before, "the existing catalog is unchanged");
}

/// An import that finds another process writing says at once that it waits for that
/// process's lock (it used to wait up to 60 s in silence on SQLite, and without end on
/// PostgreSQL, which looked like a hang), and goes on when the lock is released.
async fn an_import_waiting_for_another_writer_says_so(backend: &str) {
    let scratch = Scratch::new(backend).await;
    let database = scratch.url.clone();
    Catalog::open(&database).await.unwrap().close().await;

    // Another writer holding the catalog's write lock for two seconds: SQLite's own lock, or
    // the advisory lock `ki` writers take on PostgreSQL ("kicatalg").
    let other = OtherWriter::hold(&database).await;
    let started = std::time::Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_ki"))
        .args(["catalog", "import", "--database", &database])
        .arg(shared_export())
        .env_remove("KI_DATABASE_URL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ki runs");
    tokio::time::sleep(std::time::Duration::from_secs(2)).await;
    other.release().await;
    let output = child.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{said}");
    assert!(said.contains("warning: another process is writing to"), "{said}");
    assert!(started.elapsed() >= std::time::Duration::from_secs(2), "it waited for the lock");
    scratch.drop_schema().await;
}

/// A connection of another process's kind holding the catalog's write lock.
enum OtherWriter {
    Sqlite(sqlx::SqliteConnection),
    Postgres(sqlx::PgConnection),
}

impl OtherWriter {
    async fn hold(url: &str) -> OtherWriter {
        use sqlx::Connection;
        if url.starts_with("sqlite:") {
            let mut connection = sqlx::SqliteConnection::connect(url).await.unwrap();
            sqlx::raw_sql("BEGIN IMMEDIATE").execute(&mut connection).await.unwrap();
            OtherWriter::Sqlite(connection)
        } else {
            let mut connection = sqlx::PgConnection::connect(url).await.unwrap();
            sqlx::raw_sql("BEGIN; SELECT pg_advisory_xact_lock(7739826704828427367)")
                .execute(&mut connection)
                .await
                .unwrap();
            OtherWriter::Postgres(connection)
        }
    }

    async fn release(self) {
        match self {
            OtherWriter::Sqlite(mut connection) => {
                sqlx::raw_sql("ROLLBACK").execute(&mut connection).await.unwrap();
            }
            OtherWriter::Postgres(mut connection) => {
                sqlx::raw_sql("ROLLBACK").execute(&mut connection).await.unwrap();
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_import_waiting_for_another_writer_says_so() {
    an_import_waiting_for_another_writer_says_so("sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_import_waiting_for_another_writer_says_so() {
    an_import_waiting_for_another_writer_says_so("postgres").await;
}
