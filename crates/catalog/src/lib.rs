//! The KernelIndex catalog: one storage layer, one schema, two backends — SQLite (the
//! embedded default: one file, WAL) and PostgreSQL (a shared deployment).
//!
//! Every table of a catalog export has a table here; rows go in through
//! [`Catalog::import_lines`] (verified, then written in one transaction, or not at all)
//! and come out as export-format rows (`serde_json::Map`, camelCase columns) through the
//! read API, or as an export file through [`Catalog::export_to`].
//!
//! The API is async (sqlx on tokio). A caller without a runtime can build one:
//! `tokio::runtime::Runtime::new()?.block_on(Catalog::open(url))`.
//!
//! # Architecture notes
//!
//! Moved from ARCHITECTURE.md, which keeps the map; this is the detail.
//!
//! ## The crate
//!
//! `crates/catalog` — one storage layer over two backends with one set of migrations.
//! Import is one transaction, all or nothing. `import_file` streams: a reader thread parses
//! the file in parts (20,000 lines or 8 MiB), each part is checked, verified against compact
//! facts of the rows before it (`ki_model::verify::Verifier`; stored parents looked up by id),
//! classified by indexed `IN (…)` lookups (none for a table empty when the import began) and
//! queued to a writer task holding the transaction (PostgreSQL takes the rows by `COPY`); rows
//! whose parents come later wait for the end, and any problem in any part rolls everything back.
//! A table empty when a file import began is loaded without its plain indexes (SQLite: the tables
//! without manifests, whose scans are cheap; PostgreSQL: every table, and its foreign keys), which
//! are made again from the database's own definitions (`sqlite_master`, `pg_get_indexdef`,
//! `pg_get_constraintdef`) in the same transaction before the commit; on PostgreSQL the dropped
//! objects lock those tables until the commit, so a reader of them waits for a first import.
//! `new_file` (`Catalog::import_file_into_new`, what `ki catalog import` uses for a SQLite file
//! that does not exist yet) runs the same import into a temporary file beside the target with no
//! journal and no syncing over one connection (pages written once, not into the WAL and again at
//! the checkpoint), syncs it and gives it its name with a no-clobber link: a failed import
//! removes the file (`ki catalog import` drops the import on Ctrl-C, so an interrupt does too),
//! and nothing ever sees a half-made catalog. `import_lines` (rows already in
//! memory: publishing, the queue, sources) verifies before taking the writer lock, then goes
//! through the same classifier and writer. Export writes the same format back. `retract_run` / `supersede_run` correct a run in one transaction with an
//! audit entry (table `corrections`, not exported; `Catalog::corrections` lists it, and the
//! server's read model gets it as rows of a `corrections` table) and the record events it
//! requires. `state` holds the web's own state (migration 0004): `api_keys` (sha256 of the
//! secret only), `attestations`, `submissions`; a quota-spending write checks its key,
//! scope and quota inside the transaction that writes. Nothing lives beside the database:
//! an older JSON-lines state file is migrated once (`Catalog::import_web_log`).
//! `data/` holds what an empty catalog starts with: the public snapshot and our own
//! verified runner rows, imported together. `queue` is the verification queue (see below).
//! `contents` is the content store (migration 0006, table `artifact_contents`, not exported):
//! the bytes of what rows name by digest — an implementation's source (`manifest.spec.source`),
//! an artifact row, a run's raw samples — written only after the sha256 is recomputed and within
//! 16 MiB each (`Catalog::put_contents`, one transaction, idempotent; `content`, `contents_held`).
//! `Catalog::attach` (`ki catalog attach`) fills it from runner output folders (what their
//! `catalog-rows.jsonl` names, relative to the folder, for rows the catalog holds) and from single
//! files a row names; the bundle `data/artifacts-2026-12-01.jsonl.zst` (built by
//! `cargo run -p ki-catalog --example bundle_contents`) is stored on first start.
//!
//! ## Code map
//!
//! `catalog` (`ki_catalog`) — `Catalog` (cheap to clone; one pool, SQLite or PostgreSQL).
//! `schema::TABLES` (the table specs; `tests/catalog/typed_rows.rs` holds them to the typed rows),
//! `import` (`import_lines`: verify, classify, write in one transaction), `new_file` (a new
//! SQLite catalog from an export, written once), `export`,
//! `corrections` (`retract_run`, `supersede_run`, audit table `corrections`), `ledger`
//! (appends the record events ranking-v1 requires), `state` (`ApiKey`, `Attestation`,
//! `Submission`, `Catalog::authorize` / `add_attestation` / `add_submission`).
//! `contents` (`Content`, `Catalog::put_contents` / `content` / `attach`, `named_contents`).
//! `search` (`Catalog::search(words)` → the `SearchKey`s of the entries whose text holds every
//! word: one statement, SQLite FTS5 trigram or PostgreSQL pg_trgm `LIKE`, the same keys in the
//! same order on both; `search_entries` is derived from the export tables in the import's
//! transaction and not exported).
//! **State lives here, and only here:** the export tables, `corrections`, `api_keys`,
//! `attestations`, `submissions`, the queue's tables, `artifact_contents`, `search_entries`
//! (migrations `0001`–`0007`, one pair of SQL files per version). A write is one transaction; readers never wait for it.

use std::path::Path;

use ki_model::rows::{BenchmarkRunRow, MeasurementRow, ServingRunRow, TableRow};
use serde_json::{Map, Value};

mod access;
pub mod contents;
mod corrections;
mod error;
mod export;
mod feed;
mod import;
pub mod json_text;
mod ledger;
mod migrate;
mod new_file;
pub mod queue;
mod rows;
pub mod schema;
mod search;
mod slice;
mod state;
mod store;
pub mod urls;

pub use access::{KeyRefusal, Scope};
pub use contents::{AttachReport, Content, PutReport};
pub use corrections::{Correction, CorrectionAction, CorrectionReport};
pub use error::{CatalogError, Conflict, ContentRefusal, Refusal, Result, RowProblem};
pub use export::{ExportFormat, ExportSummary};
pub use import::{ImportOptions, ImportProgress, ImportReport, ImportStage, ProgressFn, TableCounts};
pub use ki_model::export::ExportLine;
pub use ledger::AppendedEvent;
pub use search::SearchKey;
pub use state::{
    ATTESTATIONS_PER_PAGE, ApiKey, Attestation, AttestationKind, AttestationPage, NewAttestation, Submission,
    SubmittedDocument, WebLogImport, hash_key,
};
pub use store::Backend;

use error::DbContext;
use rows::SqlValue;
use schema::{Kind, Table};
use store::{Pool, Session};

/// The catalog used when neither `--database` nor `KI_DATABASE_URL` names one.
pub const DEFAULT_DATABASE_URL: &str = "sqlite://kernelindex.db";

/// The environment variable that names the catalog database.
pub const DATABASE_URL_ENV: &str = "KI_DATABASE_URL";

/// The snapshot shipped in `data/`, imported into an empty catalog on first start.
pub const BUNDLED_SNAPSHOT_NAME: &str = "catalog-2026-08-16-0022af0b.jsonl.zst";
static BUNDLED_SNAPSHOT: &[u8] = include_bytes!("../../../data/catalog-2026-08-16-0022af0b.jsonl.zst");
/// KernelIndex's own runs, bundled beside the public snapshot so that a fresh index shows them
/// (data/README.md): the native kernel and FlashInfer on the H200 (2026-11-30), `ki verify` on
/// the H200 (2026-12-01: gemm, refusals), and the coverage run's baselines and PR-221 solutions on
/// an H100 and on the H200 (2026-12-07).
pub const BUNDLED_RUN_FILES: &[(&str, &[u8])] = &[
    (
        "kernelindex-verified-h200-2026-11-30.jsonl.zst",
        include_bytes!("../../../data/kernelindex-verified-h200-2026-11-30.jsonl.zst"),
    ),
    (
        "kernelindex-verify-h200-2026-12-01.jsonl.zst",
        include_bytes!("../../../data/kernelindex-verify-h200-2026-12-01.jsonl.zst"),
    ),
    (
        "kernelindex-verify-h100-2026-12-07.jsonl.zst",
        include_bytes!("../../../data/kernelindex-verify-h100-2026-12-07.jsonl.zst"),
    ),
    (
        "kernelindex-verify-h200-2026-12-07.jsonl.zst",
        include_bytes!("../../../data/kernelindex-verify-h200-2026-12-07.jsonl.zst"),
    ),
];

/// `KI_DATABASE_URL` if set, else [`DEFAULT_DATABASE_URL`].
pub fn default_database_url() -> String {
    std::env::var(DATABASE_URL_ENV)
        .ok()
        .filter(|url| !url.is_empty())
        .unwrap_or_else(|| DEFAULT_DATABASE_URL.to_string())
}

/// A new row id: UUID v7 (time-ordered), as the catalog uses for rows it creates.
pub fn new_row_id() -> uuid::Uuid {
    uuid::Uuid::now_v7()
}

/// An open catalog. Cheap to clone (clones share one connection pool); usable from many
/// tasks at once: readers never wait for a running import.
#[derive(Clone, Debug)]
pub struct Catalog {
    pool: Pool,
    url: String,
}

impl Catalog {
    /// Opens (creating if needed) the catalog at `url` — `sqlite://PATH` or
    /// `postgres://…` — and applies any pending migrations.
    ///
    /// For PostgreSQL, a schema other than `public` can be chosen in the URL with
    /// `?options=-c%20search_path%3DNAME`.
    pub async fn open(url: &str) -> Result<Catalog> {
        let pool = store::connect(url).await?;
        migrate::migrate(&pool).await?;
        Ok(Catalog { pool, url: urls::redact(url) })
    }

    /// `url` with any password hidden, for messages.
    pub fn redacted_url(url: &str) -> String {
        urls::redact(url)
    }

    /// The database URL (password hidden).
    pub fn url(&self) -> &str {
        &self.url
    }

    pub fn backend(&self) -> Backend {
        match self.pool {
            Pool::Sqlite(_) => Backend::Sqlite,
            Pool::Postgres(_) => Backend::Postgres,
        }
    }

    /// Closes the pool, waiting for its connections to finish.
    pub async fn close(&self) {
        store::close(&self.pool).await
    }

    /// Imports export-format rows: the one way rows enter the catalog.
    ///
    /// 1. Every row is checked against its table (columns, types, formats, closed sets);
    ///    the first problem is returned as [`CatalogError::InvalidRow`] naming the line and
    ///    JSON pointer.
    /// 2. Every digest and key is recomputed ([`ki_model::verify`]); parents the rows refer
    ///    to but do not carry are read from the catalog for this. Any mismatch refuses the
    ///    whole import ([`CatalogError::Verification`], naming the first row).
    /// 3. In one transaction, each row is classified against the catalog: unchanged (same
    ///    key, identical content), new, or conflicting (same key or same unique digest/slug,
    ///    different content). Any conflict refuses the import
    ///    ([`CatalogError::Conflicts`]); otherwise the new rows are written and committed.
    ///
    /// On any error nothing is written. Re-importing the same rows inserts nothing. With
    /// `options.dry_run` nothing is written and conflicts are reported in the
    /// [`ImportReport`] instead of raised.
    pub async fn import_lines(&self, lines: &[ExportLine], options: &ImportOptions) -> Result<ImportReport> {
        import::import_lines(&self.pool, lines, options).await
    }

    /// Retracts a benchmark run (by id or run digest) with a reason, in one transaction:
    /// sets its `retractedAt` (now, UTC) and `retractionReason`, appends the record
    /// events ranking-v1 now requires (the next holder takes the record when the run held
    /// it), and writes an audit entry naming `actor`. Deletes nothing. A run already
    /// retracted is refused ([`Refusal::AlreadyRetracted`]), as is any other problem,
    /// with nothing written.
    pub async fn retract_run(&self, run: &str, reason: &str, actor: &str) -> Result<CorrectionReport> {
        corrections::retract(&self.pool, run, reason, actor).await
    }

    /// Marks run `old` as superseded by run `new` (ids or run digests), in one
    /// transaction: `new` must be a different, published, unretracted run of the same
    /// comparison key that supersedes nothing else yet, and `old` must not be superseded
    /// already. Sets `new.supersedesId`, appends the record events ranking-v1 now
    /// requires and writes an audit entry. Deletes nothing; refused, writes nothing.
    pub async fn supersede_run(&self, old: &str, new: &str, reason: &str, actor: &str) -> Result<CorrectionReport> {
        corrections::supersede(&self.pool, old, new, reason, actor).await
    }

    /// The audit trail of corrections, oldest first.
    pub async fn corrections(&self) -> Result<Vec<Correction>> {
        corrections::list(&self.pool).await
    }

    /// Appends, in one transaction, the record events ranking-v1 requires for the given
    /// comparison keys and the store lacks; returns them. Idempotent: a second call
    /// appends nothing. Corrections and publications call this themselves.
    pub async fn append_pending_record_events(&self, comparison_keys: &[&str]) -> Result<Vec<AppendedEvent>> {
        let keys = comparison_keys.iter().map(|key| key.to_string()).collect();
        let mut session = Session::begin(&self.pool, true).await?;
        let appended = ledger::append_pending(&mut session, &keys).await?;
        session.commit().await.context(|| "cannot commit record events".into())?;
        Ok(appended)
    }

    /// A number that grows with every write: rows are never deleted, and every
    /// correction adds an audit entry. A reader compares it to know when to reload.
    pub async fn revision(&self) -> Result<u64> {
        let rows: u64 = self.row_counts().await?.iter().map(|(_, count)| count).sum();
        Ok(rows + self.corrections_count().await?)
    }

    async fn corrections_count(&self) -> Result<u64> {
        let mut session = Session::begin(&self.pool, false).await?;
        let rows = session
            .fetch_all("SELECT COUNT(*) FROM corrections", &[], &[rows::Storage::Int])
            .await
            .context(|| "cannot count corrections".into())?;
        session.rollback().await.context(|| "cannot end a read transaction".into())?;
        Ok(match rows.first().and_then(|row| row.first()) {
            Some(SqlValue::Int(Some(count))) => *count as u64,
            _ => 0,
        })
    }

    /// Reads an export file (`.jsonl` or `.jsonl.zst`) and imports it with
    /// [`Catalog::import_lines`]. A line that cannot be read refuses the whole file.
    ///
    /// The file is streamed: read, checked, verified and written in parts inside the one
    /// transaction, keeping only compact facts of the rows read (keys, unique values, what
    /// later rows' checks need), so memory does not grow with the rows' text. Progress is
    /// reported as bytes of the file read (`done` of `total`).
    pub async fn import_file(&self, path: &Path, options: &ImportOptions) -> Result<ImportReport> {
        let mut options = options.clone();
        options.origin.get_or_insert_with(|| path.display().to_string());
        import::import_file(&self.pool, path, &options).await
    }

    /// Makes a new SQLite catalog at `url` from an export file, as [`Catalog::open`] then
    /// [`Catalog::import_file`] would, when `url` names a file that does not exist yet; `None`
    /// (nothing done) for any other URL, an existing file, or a dry run. The catalog is built
    /// in a file of its own beside it, written once rather than through the WAL, and takes its
    /// name only when complete: on an error nothing is left behind.
    pub async fn import_file_into_new(url: &str, path: &Path, options: &ImportOptions) -> Result<Option<ImportReport>> {
        let Some(target) = new_file::file_to_make(url).filter(|_| !options.dry_run) else { return Ok(None) };
        let mut options = options.clone();
        options.origin.get_or_insert_with(|| path.display().to_string());
        let report = new_file::import_into_new(&target, path, &options).await?;
        // Opened once as every catalog is, so that the file is in WAL mode like any other.
        Catalog::open(url).await?.close().await;
        Ok(Some(report))
    }

    /// Imports the bundled snapshot when the catalog holds no rows at all; returns its
    /// report, or `None` when the catalog already had rows. What a server calls on start.
    /// The bundled contents (`data/artifacts-*.jsonl.zst`) are stored with them.
    pub async fn ensure_bundled_snapshot(&self) -> Result<Option<ImportReport>> {
        if !self.is_empty().await? {
            return Ok(None);
        }
        let lines = tokio::task::spawn_blocking(read_bundled_snapshot)
            .await
            .map_err(|error| CatalogError::Export(format!("reading the bundled snapshot failed: {error}")))??;
        let options = ImportOptions {
            origin: Some(format!(
                "bundled {BUNDLED_SNAPSHOT_NAME} + {}",
                BUNDLED_RUN_FILES.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(" + ")
            )),
            // The snapshot brings its own ledger; our runner's rows bring none, so their groups'
            // record events are appended (the snapshot's groups need none: nothing is pending).
            append_record_events: true,
            ..ImportOptions::default()
        };
        let report = self.import_lines(&lines, &options).await?;
        // The contents the bundled rows name (sources, raw samples), in a transaction of their
        // own: the rows' import is the export format's, the content store is not.
        self.put_bundled_contents().await?;
        Ok(Some(report))
    }

    /// Writes an export of the published catalog to `path` (atomically): JSON lines for
    /// `NAME.jsonl`, zstd-compressed for `NAME.jsonl.zst`; any other name is refused before
    /// anything is written.
    pub async fn export_to(&self, path: &Path) -> Result<ExportSummary> {
        export::write_file(&self.pool, path).await
    }

    /// Writes the export lines, uncompressed, to `out`.
    pub async fn export_lines_to(&self, out: &mut dyn std::io::Write) -> Result<ExportSummary> {
        export::write_lines(&self.pool, out).await
    }

    /// True when no table holds a row.
    pub async fn is_empty(&self) -> Result<bool> {
        Ok(self.row_counts().await?.iter().all(|(_, count)| *count == 0))
    }

    /// Rows per table (all rows, published or not), in export order.
    pub async fn row_counts(&self) -> Result<Vec<(&'static str, u64)>> {
        let mut session = Session::begin(&self.pool, false).await?;
        let mut counts = Vec::with_capacity(schema::TABLES.len());
        for table in schema::TABLES {
            let sql = format!("SELECT COUNT(*) FROM {}", table.name);
            let rows = session
                .fetch_all(&sql, &[], &[rows::Storage::Int])
                .await
                .context(|| format!("cannot count {}", table.name))?;
            let count = match rows.first().and_then(|row| row.first()) {
                Some(SqlValue::Int(Some(count))) => *count as u64,
                _ => 0,
            };
            counts.push((table.name, count));
        }
        session.rollback().await.context(|| "cannot end a read transaction".into())?;
        Ok(counts)
    }

    /// The ranking's index over every run the catalog holds (unpublished runs included).
    pub async fn ranking_index(&self) -> Result<ki_ranking::Index> {
        let mut rows = ki_ranking::CatalogRows::new();
        for table in ki_ranking::rows::RANKING_TABLES {
            self.for_each_row(table, |row| {
                rows.push(table, row, None);
                Ok(())
            })
            .await?;
        }
        ki_ranking::Index::from_owned_rows(rows).map_err(|error| CatalogError::Corrupt(error.to_string()))
    }

    /// Every row of `T`'s table (unpublished runs included), in arrival order.
    pub async fn rows<T: TableRow>(&self) -> Result<Vec<T>> {
        let mut rows = Vec::new();
        self.for_each_row(T::TABLE, |row| {
            rows.push(typed(row)?);
            Ok(())
        })
        .await?;
        Ok(rows)
    }

    /// Streams every row of `table` (unpublished runs included), in arrival order, to
    /// `visit`, without holding the table in memory.
    pub async fn for_each_row(
        &self,
        table: &str,
        mut visit: impl FnMut(Map<String, Value>) -> Result<()>,
    ) -> Result<()> {
        let spec = known_table(table)?;
        let mut session = Session::begin(&self.pool, false).await?;
        let backend = session.backend();
        let sql = format!("SELECT {} FROM {} ORDER BY seq", store::select_list(backend, spec), spec.name);
        let storages = store::storages(spec.columns.iter().map(|column| column.kind));
        session
            .for_each(&sql, &[], &storages, |values| {
                visit(rows::to_json_row(spec, &values).map_err(CatalogError::Corrupt)?)
            })
            .await?;
        session.rollback().await.context(|| "cannot end a read transaction".into())?;
        Ok(())
    }

    /// The rows of `T`'s table whose indexed column `column` (camelCase, e.g. `runId`,
    /// `comparisonKey`, `runDigest`) equals `value`, in arrival order.
    pub async fn rows_where<T: TableRow>(&self, column: &str, value: &str) -> Result<Vec<T>> {
        self.export_rows_where(T::TABLE, column, value).await?.into_iter().map(typed).collect()
    }

    /// [`Catalog::rows_where`] of a table named at run time, as export-format rows: what a
    /// publication reconciles its planned export rows against.
    pub async fn export_rows_where(&self, table: &str, column: &str, value: &str) -> Result<Vec<Map<String, Value>>> {
        let spec = known_table(table)?;
        let column =
            spec.column(column).ok_or_else(|| CatalogError::Export(format!("{table} has no column {column:?}")))?;
        let found = fetch_by_on_pool(&self.pool, spec, column.json, value).await?;
        found.iter().map(|values| rows::to_json_row(spec, values).map_err(CatalogError::Corrupt)).collect()
    }

    async fn one_where<T: TableRow>(&self, column: &str, value: &str) -> Result<Option<T>> {
        Ok(self.rows_where(column, value).await?.into_iter().next())
    }

    /// A benchmark run (published or not) by its `id`.
    pub async fn run_by_id(&self, id: &str) -> Result<Option<BenchmarkRunRow>> {
        self.one_where("id", id).await
    }

    /// A benchmark run (published or not) by its `runDigest`.
    pub async fn run_by_digest(&self, digest: &str) -> Result<Option<BenchmarkRunRow>> {
        self.one_where("runDigest", digest).await
    }

    /// The measurements of a benchmark run, in arrival order.
    pub async fn measurements_of_run(&self, run_id: &str) -> Result<Vec<MeasurementRow>> {
        self.rows_where("runId", run_id).await
    }

    /// All benchmark runs sharing a comparison key.
    pub async fn runs_by_comparison_key(&self, comparison_key: &str) -> Result<Vec<BenchmarkRunRow>> {
        self.rows_where("comparisonKey", comparison_key).await
    }

    /// A serving run (published or not) by its `runDigest`.
    pub async fn serving_run_by_digest(&self, digest: &str) -> Result<Option<ServingRunRow>> {
        self.one_where("runDigest", digest).await
    }
}

/// A stored row as its table's type; a row the type cannot read was stored by no writer of
/// this model (an edited file), so the catalog is corrupt.
fn typed<T: TableRow>(row: Map<String, Value>) -> Result<T> {
    let id = row.get("id").and_then(Value::as_str).unwrap_or("(no id)").to_string();
    serde_json::from_value(Value::Object(row))
        .map_err(|error| CatalogError::Corrupt(format!("{} row {id}: {error}", T::TABLE)))
}

fn known_table(name: &str) -> Result<&'static Table> {
    schema::table(name).ok_or_else(|| {
        let known: Vec<&str> = schema::table_names().collect();
        CatalogError::Export(format!("unknown table {name:?} (known: {})", known.join(", ")))
    })
}

/// Rows of `table` whose column `column_json` equals `value`.
pub(crate) async fn fetch_by(
    session: &mut Session,
    table: &'static Table,
    column_json: &str,
    value: &str,
) -> Result<Vec<Vec<SqlValue>>> {
    let Some((sql, param, storages)) = select_by(session.backend(), table, column_json, value) else {
        return Ok(Vec::new());
    };
    session.fetch_all(&sql, &[param], &storages).await.context(|| format!("cannot read {}", table.name))
}

/// As [`fetch_by`], as one statement on a pooled connection (no transaction): what a request
/// reads about one record.
pub(crate) async fn fetch_by_on_pool(
    pool: &store::Pool,
    table: &'static Table,
    column_json: &str,
    value: &str,
) -> Result<Vec<Vec<SqlValue>>> {
    let Some((sql, param, storages)) = select_by(pool.backend(), table, column_json, value) else {
        return Ok(Vec::new());
    };
    store::fetch_all(pool, &sql, &[param], &storages).await.context(|| format!("cannot read {}", table.name))
}

/// The statement reading `table`'s rows whose `column_json` equals `value`, with its parameter
/// and result storages; None when no row can match (a malformed value for the column's type).
fn select_by(
    backend: Backend,
    table: &'static Table,
    column_json: &str,
    value: &str,
) -> Option<(String, SqlValue, Vec<rows::Storage>)> {
    let column = table.column(column_json)?;
    // A malformed id cannot match, and PostgreSQL would reject it as a uuid.
    if column.kind == Kind::Uuid && uuid::Uuid::try_parse(value).is_err() {
        return None;
    }
    let param = match rows::storage(column.kind) {
        rows::Storage::Text => SqlValue::Text(Some(value.to_string())),
        rows::Storage::Int => SqlValue::Int(Some(value.parse().ok()?)),
        rows::Storage::Real => SqlValue::Real(Some(value.parse().ok()?)),
        rows::Storage::Bool => SqlValue::Bool(Some(value.parse().ok()?)),
    };
    let sql = format!(
        "SELECT {} FROM {} WHERE {} = {} ORDER BY seq",
        store::select_list(backend, table),
        table.name,
        column.sql,
        store::placeholder(backend, 1, column.kind)
    );
    Some((sql, param, store::storages(table.columns.iter().map(|column| column.kind))))
}

/// The public snapshot and our own runs ([`BUNDLED_RUN_FILES`]) as the lines of one import (what
/// a first start imports in one transaction). Rows the files share (operations, workloads,
/// implementations) are taken once; a row with the same id but different content stays twice,
/// so that the import refuses it.
pub fn read_bundled_snapshot() -> Result<Vec<ExportLine>> {
    let mut lines = read_embedded(BUNDLED_SNAPSHOT_NAME, BUNDLED_SNAPSHOT)?;
    let key = |l: &ExportLine| (l.table.clone(), serde_json::to_string(&l.row).unwrap_or_default());
    let seen: std::collections::HashSet<(String, String)> = lines.iter().map(key).collect();
    let mut seen = seen;
    for (name, bytes) in BUNDLED_RUN_FILES {
        for line in read_embedded(name, bytes)? {
            if seen.insert(key(&line)) {
                lines.push(line);
            }
        }
    }
    Ok(lines)
}

fn read_embedded(name: &str, bytes: &[u8]) -> Result<Vec<ExportLine>> {
    let io_error = |source| CatalogError::Io { path: name.to_string(), source };
    let mut file = tempfile::Builder::new().suffix(".jsonl.zst").tempfile().map_err(io_error)?;
    std::io::Write::write_all(&mut file, bytes).map_err(io_error)?;
    ki_model::export::read_export(file.path()).map_err(|error| CatalogError::Snapshot(format!("{name}: {error}")))
}
