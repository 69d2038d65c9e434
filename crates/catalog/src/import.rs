//! Importing export-format rows: verify, check, classify, then write everything in one
//! transaction — or nothing.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use ki_model::export::ExportLine;
use ki_model::verify::verify_export_with_progress;
use rayon::prelude::*;

use crate::error::{CatalogError, Conflict, DbContext, Result};
use crate::rows::{self, PreparedRow, SqlValue, row_key};
use crate::schema::{self, TABLES, Table};
use crate::store::{self, Backend, Pool, Session};

/// Where an import is, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImportStage {
    /// Recomputing digests and keys: `done` of `total` rows.
    Verifying,
    /// Checking rows against the catalog: `done` of `total` tables.
    Checking,
    /// Writing new rows: `done` of `total` new rows, currently into `table`.
    Writing,
    Committing,
}

#[derive(Debug, Clone, Copy)]
pub struct ImportProgress {
    pub stage: ImportStage,
    pub table: Option<&'static str>,
    pub done: u64,
    pub total: u64,
}

pub type ProgressFn = Arc<dyn Fn(ImportProgress) + Send + Sync>;

/// How to import.
#[derive(Clone, Default)]
pub struct ImportOptions {
    /// Report what would happen (new / unchanged / conflicting per table) and write
    /// nothing; conflicts are reported, not raised.
    pub dry_run: bool,
    /// Names where the rows came from (a file name) in error messages.
    pub origin: Option<String>,
    /// Called as the import advances (from the importing task).
    pub progress: Option<ProgressFn>,
    /// After writing, append in the same transaction the record events ranking-v1
    /// requires for the comparison groups of the new runs (publishing new runs).
    /// Off for snapshots, which carry their own record events.
    pub append_record_events: bool,
    /// As `append_record_events`, but only when the rows hold benchmark runs and no
    /// record_events rows (a snapshot brings its own ledger; the runner's rows do not),
    /// decided once every row has been read.
    pub append_record_events_unless_ledgered: bool,
}

impl std::fmt::Debug for ImportOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImportOptions")
            .field("dry_run", &self.dry_run)
            .field("origin", &self.origin)
            .field("progress", &self.progress.is_some())
            .field("append_record_events", &self.append_record_events)
            .field("append_record_events_unless_ledgered", &self.append_record_events_unless_ledgered)
            .finish()
    }
}

/// Per-table outcome of an import.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableCounts {
    pub table: &'static str,
    /// Rows written (in a dry run: rows that would be written, i.e. new).
    pub inserted: u64,
    /// Rows the catalog already held with identical content.
    pub unchanged: u64,
    /// Rows that clash with the catalog (only non-zero in a dry run; a real import
    /// with conflicts is refused).
    pub conflicting: u64,
}

/// What an import did (or, in a dry run, would do).
#[derive(Debug, Clone, PartialEq)]
pub struct ImportReport {
    pub dry_run: bool,
    /// One entry per table, in export order (tables the snapshot lacks have zeros).
    pub tables: Vec<TableCounts>,
    /// Every conflicting row (dry run only).
    pub conflicts: Vec<Conflict>,
    /// Record events appended for new runs (with `append_record_events`); they are
    /// counted in the record_events table's `inserted` too.
    pub record_events: Vec<crate::AppendedEvent>,
}

impl ImportReport {
    pub fn inserted(&self) -> u64 {
        self.tables.iter().map(|counts| counts.inserted).sum()
    }
    pub fn unchanged(&self) -> u64 {
        self.tables.iter().map(|counts| counts.unchanged).sum()
    }
    pub fn conflicting(&self) -> u64 {
        self.tables.iter().map(|counts| counts.conflicting).sum()
    }
    pub fn table(&self, name: &str) -> Option<&TableCounts> {
        self.tables.iter().find(|counts| counts.table == name)
    }
}

fn report_progress(options: &ImportOptions, stage: ImportStage, table: Option<&'static str>, done: u64, total: u64) {
    if let Some(progress) = &options.progress {
        progress(ImportProgress { stage, table, done, total });
    }
}

fn origin_prefix(options: &ImportOptions) -> String {
    options.origin.as_ref().map(|origin| format!("{origin}: ")).unwrap_or_default()
}

/// A line refused, named by its line, table and the JSON pointer of what is wrong.
fn invalid_row(options: &ImportOptions, line: &ExportLine, pointer: &str, message: String) -> CatalogError {
    CatalogError::InvalidRow {
        origin: origin_prefix(options),
        problem: Box::new(crate::RowProblem {
            line: line.line,
            table: line.table.clone(),
            pointer: pointer.to_string(),
            message,
        }),
    }
}

/// Each line checked against its table (its position in `TABLES` and its prepared values), in
/// line order. Checking a row is independent of the others, so rows are checked in parallel; the
/// results keep line order, so the problem reported is still the first by line.
fn check_lines(lines: &[ExportLine], options: &ImportOptions) -> Vec<Result<(usize, PreparedRow)>> {
    let invalid = |line: &ExportLine, pointer: &str, message: String| invalid_row(options, line, pointer, message);
    lines
        .par_iter()
        .map(|line| {
            let Some(position) = TABLES.iter().position(|table| table.name == line.table) else {
                let known: Vec<&str> = schema::table_names().collect();
                return Err(invalid(
                    line,
                    "/table",
                    format!("unknown table {:?} (known: {})", line.table, known.join(", ")),
                ));
            };
            let prepared = rows::prepare_row(&TABLES[position], line.line, &line.row).map_err(|problem| {
                CatalogError::InvalidRow { origin: origin_prefix(options), problem: Box::new(problem) }
            })?;
            Ok((position, prepared))
        })
        .collect()
}

fn prepare(lines: &[ExportLine], options: &ImportOptions) -> Result<()> {
    let invalid = |line: &ExportLine, pointer: &str, message: String| invalid_row(options, line, pointer, message);
    let checked = check_lines(lines, options);
    let mut seen: Vec<HashMap<String, usize>> = TABLES.iter().map(|_| HashMap::new()).collect();
    for (line, result) in lines.iter().zip(checked) {
        let (position, prepared) = result?;
        let table = &TABLES[position];
        let key = row_key(table, &prepared.values);
        if let Some(earlier) = seen[position].insert(key.clone(), line.line) {
            return Err(invalid(
                line,
                "/row",
                format!("repeats the {} row {} of line {earlier}", table.name, key.replace('\u{0}', " ")),
            ));
        }
    }
    Ok(())
}

/// Parent rows the snapshot refers to but does not carry, loaded from the catalog so the
/// verifier can follow every cross-reference (e.g. a single new run whose workload is
/// already stored). Closed under references: a loaded workload brings its operation.
async fn reference_context(pool: &Pool, lines: &[ExportLine]) -> Result<Vec<ExportLine>> {
    let mut present: HashMap<&'static str, HashSet<String>> = HashMap::new();
    let mut wanted: Vec<(&'static Table, String)> = Vec::new();
    let visit = |table: &'static Table,
                 row: &serde_json::Map<String, serde_json::Value>,
                 wanted: &mut Vec<(&'static Table, String)>| {
        for column in table.columns {
            let Some(target) = column.references.filter(|target| *target != table.name) else { continue };
            if let Some(id) = row.get(column.json).and_then(serde_json::Value::as_str) {
                wanted.push((schema::table(target).expect("references name known tables"), id.to_string()));
            }
        }
    };
    for line in lines {
        if let Some(table) = schema::table(&line.table) {
            present.entry(table.name).or_default().insert(line.id().to_string());
            visit(table, &line.row, &mut wanted);
        }
    }
    let mut context = Vec::new();
    let mut session: Option<Session> = None;
    while let Some((table, id)) = wanted.pop() {
        if !present.entry(table.name).or_default().insert(id.clone()) {
            continue;
        }
        if session.is_none() {
            session = Some(Session::begin(pool, false).await?);
        }
        let Some(reader) = session.as_mut() else { continue };
        if let Some(values) = crate::fetch_by(reader, table, "id", &id).await?.into_iter().next() {
            let row = rows::to_json_row(table, &values).map_err(CatalogError::Corrupt)?;
            visit(table, &row, &mut wanted);
            context.push(ExportLine { line: 0, table: table.name.to_string(), row });
        }
    }
    if let Some(session) = session {
        session.rollback().await.context(|| "cannot end a read transaction".into())?;
    }
    Ok(context)
}

fn verify(lines: &[ExportLine], context: Vec<ExportLine>, options: &ImportOptions) -> Result<()> {
    let total = lines.len() as u64;
    report_progress(options, ImportStage::Verifying, None, 0, total);
    let report = if context.is_empty() {
        verify_export_with_progress(lines, |done| {
            report_progress(options, ImportStage::Verifying, None, done.min(total), total)
        })
    } else {
        let mut all = lines.to_vec();
        all.extend(context);
        verify_export_with_progress(&all, |done| {
            report_progress(options, ImportStage::Verifying, None, done.min(total), total)
        })
    };
    report_progress(options, ImportStage::Verifying, None, total, total);
    if report.is_clean() {
        return Ok(());
    }
    let first = match report.first_mismatch() {
        Some((field, mismatch)) => {
            let place =
                if mismatch.line == 0 { "a stored catalog row".to_string() } else { format!("line {}", mismatch.line) };
            format!(
                "{place}: {} row {}: {} is {:?} but recomputes to {:?}",
                field.table, mismatch.id, field.name, mismatch.stored, mismatch.recomputed
            )
        }
        None => "unknown row".to_string(),
    };
    Err(CatalogError::Verification { origin: origin_prefix(options), mismatches: report.mismatches() as usize, first })
}

/// What the catalog holds of one table: each row's text by key, and the owner of each
/// unique value.
struct Existing {
    text_by_key: HashMap<String, String>,
    unique_owner: Vec<HashMap<String, String>>,
}

/// [`Existing`] from a table's stored rows.
fn existing_from(table: &'static Table, stored: Vec<Vec<SqlValue>>) -> Existing {
    let unique_positions: Vec<usize> =
        table.columns.iter().enumerate().filter(|(_, column)| column.unique).map(|(index, _)| index).collect();
    let mut existing = Existing {
        text_by_key: HashMap::new(),
        unique_owner: unique_positions.iter().map(|_| HashMap::new()).collect(),
    };
    for values in stored {
        let key = row_key(table, &values);
        for (slot, position) in unique_positions.iter().enumerate() {
            if let Some(text) = values[*position].as_text() {
                existing.unique_owner[slot].insert(text.to_string(), key.clone());
            }
        }
        existing.text_by_key.insert(key, rows::rendered(table, &values));
    }
    existing
}

impl From<sqlx::Error> for CatalogError {
    fn from(cause: sqlx::Error) -> Self {
        CatalogError::Database { context: "catalog query failed".into(), cause }
    }
}

fn lost_transaction() -> CatalogError {
    CatalogError::Export("the import's transaction was lost".into())
}

fn show_key(key: &str) -> String {
    key.replace('\u{0}', " ")
}

/// Checks and verifies `lines` (reading the parents they name from the catalog); writes
/// nothing. Done before a write transaction begins, so that the writer lock is held only
/// for the writing.
pub(crate) async fn verify_lines(pool: &Pool, lines: &[ExportLine], options: &ImportOptions) -> Result<()> {
    prepare(lines, options)?;
    let context = reference_context(pool, lines).await?;
    verify(lines, context, options)
}

/// Verifies `lines` and writes the rows the catalog lacks, in one transaction: the
/// streamed import ([`Importer`]) given the lines in parts.
///
/// The lines are in memory already, so they are checked and verified before the write
/// transaction begins (the writer lock is held only for classifying and writing, as before
/// the import streamed); the importer then skips verification.
pub(crate) async fn import_lines(pool: &Pool, lines: &[ExportLine], options: &ImportOptions) -> Result<ImportReport> {
    verify_lines(pool, lines, options).await?;
    let mut importer = Importer::begin(pool, options, Load::Rows).await?;
    importer.verified_before = true;
    let total = lines.len() as u64;
    let mut done = 0;
    report_progress(options, ImportStage::Verifying, None, 0, total);
    for part in lines.chunks(CHUNK_LINES) {
        if let Err(error) = importer.add(part).await {
            importer.abandon().await;
            return Err(error);
        }
        done += part.len() as u64;
        report_progress(options, ImportStage::Verifying, None, done, total);
    }
    importer.finish().await
}

/// Writes `lines`, verified by [`verify_lines`] before the caller's write transaction began, as
/// [`import_lines`] does (the one classifier and writer of every publication path), inside that
/// transaction: the caller writes more in it and commits, or rolls back on an error. The
/// transaction comes back with the outcome (a conflict, a dangling reference: the caller must
/// not commit); Err only when it was lost.
pub(crate) async fn write_within(
    session: Session,
    lines: &[ExportLine],
    options: &ImportOptions,
) -> Result<(Session, Result<ImportReport>)> {
    let mut importer = Importer::start(session, options, Load::Rows).await?;
    importer.verified_before = true;
    for part in lines.chunks(CHUNK_LINES) {
        if let Err(error) = importer.add(part).await {
            // The writer's own failure, if any, is the same error or a consequence of it.
            let _ = importer.reclaim().await;
            let session = importer.session.take().ok_or_else(lost_transaction)?;
            return Ok((session, Err(error)));
        }
    }
    importer.conclude_within().await
}

fn abbreviate(lines: &[String]) -> String {
    match lines {
        [] => String::new(),
        [only] => only.clone(),
        [first, .., last] => format!("{first}–{last}"),
    }
}

/// Names the first column whose value differs between two renderings of a row.
fn first_difference(table: &Table, stored: &str, incoming: &str) -> String {
    let parse =
        |text: &str| serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text).unwrap_or_default();
    let (stored, incoming) = (parse(stored), parse(incoming));
    for column in table.columns {
        if stored.get(column.json) != incoming.get(column.json) {
            let show = |value: Option<&serde_json::Value>| {
                let text = value.map(|value| value.to_string()).unwrap_or_default();
                if text.chars().count() > 80 {
                    format!("{}…", text.chars().take(80).collect::<String>())
                } else {
                    text
                }
            };
            return format!(
                "same key, different content: {} is {} in the catalog but {} here",
                column.json,
                show(stored.get(column.json)),
                show(incoming.get(column.json))
            );
        }
    }
    "same key, different content".to_string()
}

// ---------------------------------------------------------------------------------------
// The streaming import: a snapshot in parts, in line order, in one transaction.
// ---------------------------------------------------------------------------------------

/// Lines per part of a streamed import (and at most [`CHUNK_BYTES`] of text).
pub(crate) const CHUNK_LINES: usize = 20_000;
/// Bytes of export text per part of a streamed import.
pub(crate) const CHUNK_BYTES: usize = 8 << 20;
/// Values per `IN (…)` lookup.
const LOOKUP_BATCH: usize = 500;

/// A compact copy of a key or unique value: a UUID or digest as its bytes, other text as text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Val {
    Uuid(u128),
    Sha256([u8; 32]),
    Text(Box<str>),
}

impl Val {
    fn of(text: &str) -> Val {
        if let Ok(uuid) = uuid::Uuid::try_parse(text)
            && text.len() == 36
            && *uuid.hyphenated().encode_lower(&mut uuid::Uuid::encode_buffer()) == *text
        {
            return Val::Uuid(uuid.as_u128());
        }
        if rows::is_digest(text) {
            let mut bytes = [0u8; 32];
            if hex::decode_to_slice(&text[7..], &mut bytes).is_ok() {
                return Val::Sha256(bytes);
            }
        }
        Val::Text(text.into())
    }

    fn show(&self) -> String {
        match self {
            Val::Uuid(value) => uuid::Uuid::from_u128(*value).hyphenated().to_string(),
            Val::Sha256(bytes) => format!("sha256:{}", hex::encode(bytes)),
            Val::Text(text) => show_key(text),
        }
    }
}

/// A reference of a new row that neither the snapshot so far nor the catalog held when the
/// row was read: checked again at the end (the row it names may come later in the file).
struct PendingReference {
    table: usize,
    line: usize,
    column: usize,
    target: &'static str,
    id: String,
}

/// SQLite's page cache during an import, in KiB: a million runs' unique keys and indexes.
const IMPORT_CACHE_KIB: i64 = 384 << 10;

/// Bytes of `COPY` text per statement (PostgreSQL).
const COPY_BYTES: usize = 2 << 20;

/// Writes queued to the import's writer task before it makes them wait.
const WRITER_QUEUE: usize = 16;

/// The writer task: it gives the transaction back with the first failed write, if any.
type WriterTask = tokio::task::JoinHandle<(Session, Result<()>)>;

/// What the import's writer task is asked to do, in order.
enum Command {
    Write {
        sql: String,
        params: Vec<SqlValue>,
        context: String,
    },
    /// PostgreSQL: rows in `COPY`'s text format.
    Copy {
        sql: String,
        data: Vec<u8>,
        context: String,
    },
    Fetch {
        sql: String,
        params: Vec<SqlValue>,
        storages: Vec<rows::Storage>,
        context: String,
        reply: tokio::sync::oneshot::Sender<Result<Vec<Vec<SqlValue>>>>,
    },
}

/// The state of one streamed import, inside its transaction.
pub(crate) struct Importer {
    /// The transaction, while no writer task holds it.
    session: Option<Session>,
    /// The writer task holding the transaction while parts are added: writes are queued to
    /// it and run while the next part is checked and verified; lookups queue behind them.
    writer: Option<(tokio::sync::mpsc::Sender<Command>, WriterTask)>,
    options: ImportOptions,
    /// Tables that held rows before the import began: only these need lookups.
    stored_before: Vec<bool>,
    /// Every snapshot row's key so far, per table, with its line.
    seen: Vec<HashMap<Val, usize>>,
    /// Unique values of the snapshot's new rows, per table and unique column: the owner's key.
    owners: Vec<Vec<HashMap<Val, Val>>>,
    /// Ids looked up in the catalog for references: whether the catalog holds them.
    stored_ids: Vec<HashMap<Val, bool>>,
    /// Stored rows of tables keyed by more than one column (operation_aliases), loaded once.
    stored_multi: HashMap<usize, Existing>,
    verifier: ki_model::verify::Verifier,
    counts: Vec<TableCounts>,
    conflicts: Vec<Conflict>,
    /// The first malformed or repeated row; the import is then refused, whatever follows.
    invalid: Option<CatalogError>,
    pending: Vec<PendingReference>,
    /// New rows written at the end: rows whose references were not known yet, and rows
    /// referring to such rows.
    deferred: Vec<(usize, PreparedRow)>,
    deferred_keys: Vec<HashSet<Val>>,
    search: crate::search::NewRows,
    comparison_keys: std::collections::BTreeSet<String>,
    saw_runs: bool,
    saw_record_events: bool,
    lines: u64,
    backend: Backend,
    /// The rows were verified before the import began ([`import_lines`]).
    verified_before: bool,
    /// The plain indexes of tables empty when the import began, dropped for the load and
    /// made again (these statements) before the commit.
    dropped_indexes: Vec<String>,
    /// PostgreSQL: the foreign keys of those tables, dropped for the load and added again
    /// (checked) after the indexes.
    dropped_keys: Vec<String>,
    pub(crate) timing: [std::time::Duration; 5],
}

/// The plain (not unique) indexes of `table`: (name, the statement that makes it), read from
/// the database itself so that they are made again exactly as the migrations made them.
/// Unique indexes stay: they back the keys, unique columns and foreign keys.
async fn plain_indexes(session: &mut Session, table: &Table) -> Result<Vec<(String, String)>> {
    let sql = match session.backend() {
        Backend::Sqlite => {
            "SELECT name, sql FROM sqlite_master WHERE type = 'index' AND tbl_name = ?1 AND sql IS NOT NULL \
             ORDER BY name"
        }
        Backend::Postgres => {
            "SELECT c.relname::text, pg_get_indexdef(x.indexrelid) FROM pg_index x \
             JOIN pg_class c ON c.oid = x.indexrelid \
             WHERE x.indrelid = to_regclass($1::text) AND NOT x.indisunique AND NOT x.indisprimary \
             ORDER BY 1"
        }
    };
    let found = session
        .fetch_all(sql, &[SqlValue::Text(Some(table.name.to_string()))], &[rows::Storage::Text, rows::Storage::Text])
        .await
        .context(|| format!("cannot list the indexes of {}", table.name))?;
    Ok(found
        .into_iter()
        .filter_map(|values| match (values[0].as_text(), values[1].as_text()) {
            (Some(name), Some(statement)) if statement.starts_with("CREATE INDEX ") => {
                Some((name.to_string(), statement.to_string()))
            }
            _ => None,
        })
        .collect())
}

/// PostgreSQL: the foreign keys of `table` as (name, the statement that adds it again).
async fn foreign_keys(session: &mut Session, table: &Table) -> Result<Vec<(String, String)>> {
    let sql = "SELECT conname::text, pg_get_constraintdef(oid) FROM pg_constraint \
               WHERE conrelid = to_regclass($1::text) AND contype = 'f' ORDER BY 1";
    let found = session
        .fetch_all(sql, &[SqlValue::Text(Some(table.name.to_string()))], &[rows::Storage::Text, rows::Storage::Text])
        .await
        .context(|| format!("cannot list the foreign keys of {}", table.name))?;
    Ok(found
        .into_iter()
        .filter_map(|values| match (values[0].as_text(), values[1].as_text()) {
            (Some(name), Some(definition)) => Some((
                name.to_string(),
                format!("ALTER TABLE {} ADD CONSTRAINT {} {definition}", table.name, quote_ident(name)),
            )),
            _ => None,
        })
        .collect())
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Whether a file import into `table`, empty when it began, drops the table's plain indexes and
/// makes them again after the load. Making an index scans the whole table: on SQLite, whose
/// tables hold their rows' manifests inline (about 3 KB a run), a scan per index costs more than
/// keeping the index up to date in the import's page cache, so only tables without manifests
/// (measurements, record events, aliases) are rebuilt there. PostgreSQL rebuilds every table.
fn rebuilds_indexes(backend: Backend, table: &Table) -> bool {
    match backend {
        Backend::Sqlite => table.column("manifest").is_none(),
        Backend::Postgres => true,
    }
}

/// SQLite: the connection's page cache back to its default size (the import's connection goes
/// back to the pool). Best effort: the cache only sizes memory.
async fn restore_cache(session: &mut Session) {
    if session.backend() == Backend::Sqlite {
        let _ = session.execute("PRAGMA cache_size = -2000", &[]).await;
    }
}

/// How an import loads its rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Load {
    /// Rows in memory (publishing, the queue, sources): few, into tables that stay indexed.
    Rows,
    /// A file: a table empty when the import began is loaded without its plain indexes,
    /// which are made again, sorted once, before the commit (in the same transaction).
    File,
}

impl Importer {
    /// Begins the import's transaction (a write transaction unless a dry run) and reads
    /// which tables hold rows.
    pub(crate) async fn begin(pool: &Pool, options: &ImportOptions, load: Load) -> Result<Importer> {
        let mut session = Session::begin(pool, !options.dry_run).await?;
        if session.backend() == Backend::Sqlite && !options.dry_run {
            // The pages a bulk load keeps changing (the B-trees of its tables' unique keys and of the
            // indexes kept up to date) stay in memory rather than being written and read again.
            session
                .execute(&format!("PRAGMA cache_size = -{IMPORT_CACHE_KIB}"), &[])
                .await
                .context(|| "cannot size the cache".into())?;
        }
        Importer::start(session, options, load).await
    }

    /// An import inside a transaction the caller began and ends ([`write_within`]).
    async fn start(mut session: Session, options: &ImportOptions, load: Load) -> Result<Importer> {
        let backend = session.backend();
        let mut stored_before = Vec::with_capacity(TABLES.len());
        for table in TABLES {
            let sql = format!("SELECT CAST(1 AS BIGINT) FROM {} LIMIT 1", table.name);
            let rows = session
                .fetch_all(&sql, &[], &[rows::Storage::Int])
                .await
                .context(|| format!("cannot read {}", table.name))?;
            stored_before.push(!rows.is_empty());
        }
        let mut dropped_indexes = Vec::new();
        let mut dropped_keys = Vec::new();
        if load == Load::File && !options.dry_run {
            for (table, stored) in TABLES.iter().zip(&stored_before) {
                if *stored || !rebuilds_indexes(backend, table) {
                    continue;
                }
                for (name, statement) in plain_indexes(&mut session, table).await? {
                    let drop = format!("DROP INDEX {}", quote_ident(&name));
                    session.execute(&drop, &[]).await.context(|| format!("cannot drop the index {name}"))?;
                    dropped_indexes.push(statement);
                }
                // PostgreSQL checks a deferred foreign key per row at the commit (and a table with
                // such checks pending cannot be indexed); added again after the load, each is
                // checked by one join.
                if backend == Backend::Postgres {
                    for (name, statement) in foreign_keys(&mut session, table).await? {
                        let drop = format!("ALTER TABLE {} DROP CONSTRAINT {}", table.name, quote_ident(&name));
                        session.execute(&drop, &[]).await.context(|| format!("cannot drop {name}"))?;
                        dropped_keys.push(statement);
                    }
                }
            }
        }
        let (sender, mut receiver) = tokio::sync::mpsc::channel::<Command>(WRITER_QUEUE);
        let handle = tokio::spawn(async move {
            let mut outcome: Result<()> = Ok(());
            while let Some(command) = receiver.recv().await {
                match command {
                    Command::Write { sql, params, context } => {
                        if outcome.is_ok()
                            && let Err(cause) = session.execute(&sql, &params).await
                        {
                            outcome = Err(CatalogError::Database { context, cause });
                        }
                    }
                    Command::Copy { sql, data, context } => {
                        if outcome.is_ok()
                            && let Err(cause) = session.copy_in(&sql, &data).await
                        {
                            outcome = Err(CatalogError::Database { context, cause });
                        }
                    }
                    Command::Fetch { sql, params, storages, context, reply } => {
                        let answer = match &outcome {
                            Ok(()) => session.fetch_all(&sql, &params, &storages).await.context(|| context),
                            Err(error) => Err(CatalogError::Export(format!("an earlier write failed: {error}"))),
                        };
                        let _ = reply.send(answer);
                    }
                }
            }
            (session, outcome)
        });
        Ok(Importer {
            session: None,
            writer: Some((sender, handle)),
            options: options.clone(),
            stored_before,
            seen: TABLES.iter().map(|_| HashMap::new()).collect(),
            owners: TABLES.iter().map(|table| table.unique_columns().map(|_| HashMap::new()).collect()).collect(),
            stored_ids: TABLES.iter().map(|_| HashMap::new()).collect(),
            stored_multi: HashMap::new(),
            verifier: ki_model::verify::Verifier::new(),
            counts: TABLES
                .iter()
                .map(|table| TableCounts { table: table.name, inserted: 0, unchanged: 0, conflicting: 0 })
                .collect(),
            conflicts: Vec::new(),
            invalid: None,
            pending: Vec::new(),
            deferred: Vec::new(),
            deferred_keys: TABLES.iter().map(|_| HashSet::new()).collect(),
            search: crate::search::NewRows::default(),
            comparison_keys: Default::default(),
            saw_runs: false,
            saw_record_events: false,
            lines: 0,
            backend,
            verified_before: false,
            dropped_indexes,
            dropped_keys,
            timing: Default::default(),
        })
    }

    /// A read in the import's transaction (after the writes queued before it).
    async fn fetch(
        &self,
        sql: String,
        params: Vec<SqlValue>,
        storages: Vec<rows::Storage>,
        context: String,
    ) -> Result<Vec<Vec<SqlValue>>> {
        let Some((sender, _)) = &self.writer else {
            return Err(CatalogError::Export("the import's transaction has ended".into()));
        };
        let (reply, answer) = tokio::sync::oneshot::channel();
        sender
            .send(Command::Fetch { sql, params, storages, context, reply })
            .await
            .map_err(|_| CatalogError::Export("the import's writer stopped".into()))?;
        answer.await.map_err(|_| CatalogError::Export("the import's writer stopped".into()))?
    }

    /// Rows of `table` whose column `column_json` is one of `values`, by batches of `IN (…)`.
    async fn fetch_in(
        &self,
        table: &'static Table,
        column_json: &str,
        values: &[String],
    ) -> Result<Vec<Vec<SqlValue>>> {
        let Some(column) = table.column(column_json) else { return Ok(Vec::new()) };
        let backend = self.backend;
        let storages = store::storages(table.columns.iter().map(|column| column.kind));
        let mut found = Vec::new();
        let values: Vec<&String> = values
            .iter()
            // A malformed id cannot match, and PostgreSQL would reject it as a uuid.
            .filter(|value| column.kind != schema::Kind::Uuid || uuid::Uuid::try_parse(value).is_ok())
            .collect();
        for batch in values.chunks(LOOKUP_BATCH) {
            let placeholders: Vec<String> =
                (1..=batch.len()).map(|number| store::placeholder(backend, number, column.kind)).collect();
            let sql = format!(
                "SELECT {} FROM {} WHERE {} IN ({})",
                store::select_list(backend, table),
                table.name,
                column.sql,
                placeholders.join(", ")
            );
            let params: Vec<SqlValue> = batch.iter().map(|value| SqlValue::Text(Some((*value).clone()))).collect();
            found.extend(self.fetch(sql, params, storages.clone(), format!("cannot read {}", table.name)).await?);
        }
        Ok(found)
    }

    /// Takes the transaction back from the writer task once every queued write has run;
    /// the first write that failed is the error.
    async fn reclaim(&mut self) -> Result<()> {
        if let Some((sender, handle)) = self.writer.take() {
            drop(sender);
            let (session, outcome) =
                handle.await.map_err(|error| CatalogError::Export(format!("the import's writer failed: {error}")))?;
            self.session = Some(session);
            outcome?;
        }
        Ok(())
    }

    fn failed(&self) -> bool {
        self.invalid.is_some() || self.verifier.mismatches() > 0
    }

    /// Checks, verifies, classifies and (unless a dry run or something is already wrong)
    /// writes the next part of the snapshot. After a malformed row only the rest's rows are
    /// counted; after a mismatch the rest is still verified (to count the mismatches) but not
    /// classified; after a conflict it is classified (to list the conflicts) but not written.
    pub(crate) async fn add(&mut self, lines: &[ExportLine]) -> Result<()> {
        self.lines += lines.len() as u64;
        if self.invalid.is_some() {
            return Ok(());
        }
        let mut clock = std::time::Instant::now();
        let mut lap = |timing: &mut [std::time::Duration; 5], slot: usize| {
            timing[slot] += clock.elapsed();
            clock = std::time::Instant::now();
        };
        let prepared = match self.prepare(lines) {
            Ok(prepared) => prepared,
            Err(error) => {
                self.invalid = Some(error);
                return Ok(());
            }
        };
        // Verification: facts of the part, then of the stored rows it refers to.
        lap(&mut self.timing, 0);
        if !self.verified_before {
            self.verify(lines).await?;
        }
        lap(&mut self.timing, 2);
        if self.failed() {
            return Ok(());
        }
        let new_rows = self.classify(prepared).await?;
        lap(&mut self.timing, 3);
        if self.options.dry_run || !self.conflicts.is_empty() {
            return Ok(());
        }
        for (position, rows) in new_rows.iter().enumerate() {
            let refs: Vec<&PreparedRow> = rows.iter().collect();
            self.write(position, &refs).await?;
        }
        lap(&mut self.timing, 4);
        Ok(())
    }

    /// Verifies a part: the facts of its rows, then of the stored rows it refers to.
    async fn verify(&mut self, lines: &[ExportLine]) -> Result<()> {
        self.verifier.learn(lines);
        let mut wanted: Vec<(&'static str, String)> = Vec::new();
        for line in lines {
            for (target, id) in self.verifier.references.unknown_references(line) {
                wanted.push((target, id.to_string()));
            }
        }
        if !wanted.is_empty() {
            let stored = self.stored_rows(wanted).await?;
            self.verifier.learn(&stored);
        }
        self.verifier.check(lines);
        Ok(())
    }

    /// Rows checked against their tables, grouped by table; a repeated key is refused.
    fn prepare(&mut self, lines: &[ExportLine]) -> Result<Vec<Vec<PreparedRow>>> {
        let options = &self.options;
        let invalid = |line: &ExportLine, pointer: &str, message: String| invalid_row(options, line, pointer, message);
        let checked = check_lines(lines, options);
        let mut tables: Vec<Vec<PreparedRow>> = TABLES.iter().map(|_| Vec::new()).collect();
        for (line, result) in lines.iter().zip(checked) {
            let (position, prepared) = result?;
            let table = &TABLES[position];
            let key = row_key(table, &prepared.values);
            if let Some(earlier) = self.seen[position].insert(Val::of(&key), line.line) {
                return Err(invalid(
                    line,
                    "/row",
                    format!("repeats the {} row {} of line {earlier}", table.name, key.replace('\u{0}', " ")),
                ));
            }
            match table.name {
                "benchmark_runs" => self.saw_runs = true,
                "record_events" => self.saw_record_events = true,
                _ => {}
            }
            tables[position].push(prepared);
        }
        Ok(tables)
    }

    /// Stored rows (as export lines, line 0) of the given (table, id)s, for verification;
    /// remembers which ids the catalog holds.
    async fn stored_rows(&mut self, wanted: Vec<(&'static str, String)>) -> Result<Vec<ExportLine>> {
        let mut by_table: HashMap<&'static str, Vec<String>> = HashMap::new();
        for (table, id) in wanted {
            let position = TABLES.iter().position(|known| known.name == table).expect("verified tables are known");
            if !self.stored_before[position] || self.stored_ids[position].contains_key(&Val::of(&id)) {
                continue;
            }
            by_table.entry(TABLES[position].name).or_default().push(id);
        }
        let mut lines = Vec::new();
        for (name, mut ids) in by_table {
            ids.sort();
            ids.dedup();
            let position = TABLES.iter().position(|known| known.name == name).expect("known");
            let table = &TABLES[position];
            let found = self.fetch_in(table, "id", &ids).await?;
            let id_column = table.columns.iter().position(|column| column.json == "id").unwrap_or(0);
            for id in &ids {
                self.stored_ids[position].insert(Val::of(id), false);
            }
            for values in found {
                if let Some(id) = values[id_column].as_text() {
                    self.stored_ids[position].insert(Val::of(id), true);
                }
                let row = rows::to_json_row(table, &values).map_err(CatalogError::Corrupt)?;
                lines.push(ExportLine { line: 0, table: table.name.to_string(), row });
            }
        }
        Ok(lines)
    }

    /// Whether the catalog holds row `id` of table `position` (looked up once per id).
    async fn stored_ids_of(&mut self, position: usize, ids: Vec<String>) -> Result<()> {
        let mut ids: Vec<String> =
            ids.into_iter().filter(|id| !self.stored_ids[position].contains_key(&Val::of(id))).collect();
        if ids.is_empty() {
            return Ok(());
        }
        ids.sort();
        ids.dedup();
        for id in &ids {
            self.stored_ids[position].insert(Val::of(id), false);
        }
        if !self.stored_before[position] {
            return Ok(());
        }
        let table = &TABLES[position];
        let id_column = table.columns.iter().position(|column| column.json == "id").unwrap_or(0);
        for values in self.fetch_in(table, "id", &ids).await? {
            if let Some(id) = values[id_column].as_text() {
                self.stored_ids[position].insert(Val::of(id), true);
            }
        }
        Ok(())
    }

    /// Classifies a part's rows against the catalog and the snapshot so far: unchanged,
    /// conflicting or new. Returns the new rows to write now, per table; new rows whose
    /// references are not known yet wait for the end.
    async fn classify(&mut self, prepared: Vec<Vec<PreparedRow>>) -> Result<Vec<Vec<PreparedRow>>> {
        let mut to_write: Vec<Vec<PreparedRow>> = TABLES.iter().map(|_| Vec::new()).collect();
        for (position, incoming) in prepared.into_iter().enumerate() {
            if incoming.is_empty() {
                continue;
            }
            let table = &TABLES[position];
            // What the catalog holds of these keys and unique values.
            let mut stored_text: HashMap<String, String> = HashMap::new();
            let unique_columns: Vec<(usize, &schema::Column)> =
                table.columns.iter().enumerate().filter(|(_, column)| column.unique).collect();
            let mut stored_owner: Vec<HashMap<String, String>> =
                unique_columns.iter().map(|_| HashMap::new()).collect();
            if self.stored_before[position] {
                if table.key.len() == 1 {
                    let keys: Vec<String> = incoming.iter().map(|row| row_key(table, &row.values)).collect();
                    for values in self.fetch_in(table, table.key[0], &keys).await? {
                        stored_text.insert(row_key(table, &values), rows::rendered(table, &values));
                    }
                    for (slot, (column_position, column)) in unique_columns.iter().enumerate() {
                        let wanted: Vec<String> = incoming
                            .iter()
                            .filter_map(|row| row.values[*column_position].as_text().map(str::to_string))
                            .collect();
                        for values in self.fetch_in(table, column.json, &wanted).await? {
                            if let Some(value) = values[*column_position].as_text() {
                                stored_owner[slot].insert(value.to_string(), row_key(table, &values));
                            }
                        }
                    }
                } else {
                    if !self.stored_multi.contains_key(&position) {
                        let sql = format!("SELECT {} FROM {}", store::select_list(self.backend, table), table.name);
                        let storages = store::storages(table.columns.iter().map(|column| column.kind));
                        let stored =
                            self.fetch(sql, Vec::new(), storages, format!("cannot read {}", table.name)).await?;
                        self.stored_multi.insert(position, existing_from(table, stored));
                    }
                    let existing = &self.stored_multi[&position];
                    for row in &incoming {
                        let key = row_key(table, &row.values);
                        if let Some(text) = existing.text_by_key.get(&key) {
                            stored_text.insert(key, text.clone());
                        }
                    }
                    for (slot, map) in existing.unique_owner.iter().enumerate() {
                        stored_owner[slot].extend(map.iter().map(|(value, owner)| (value.clone(), owner.clone())));
                    }
                }
            }
            let mut new_rows = Vec::new();
            for row in incoming {
                let key = row_key(table, &row.values);
                let conflict =
                    |reason: String| Conflict { line: row.line, table: table.name, key: show_key(&key), reason };
                if let Some(stored) = stored_text.get(&key) {
                    let text = rows::rendered(table, &row.values);
                    if *stored == text {
                        self.counts[position].unchanged += 1;
                    } else {
                        self.counts[position].conflicting += 1;
                        self.conflicts.push(conflict(first_difference(table, stored, &text)));
                    }
                    continue;
                }
                let mut clash = None;
                for (slot, (column_position, column)) in unique_columns.iter().enumerate() {
                    let Some(value) = row.values[*column_position].as_text() else { continue };
                    let owner = self.owners[position][slot]
                        .get(&Val::of(value))
                        .map(Val::show)
                        .or_else(|| stored_owner[slot].get(value).map(|owner| show_key(owner)));
                    if let Some(owner) = owner {
                        clash = Some(format!("{} {value} is already held by row {owner}", column.json));
                        break;
                    }
                }
                if let Some(reason) = clash {
                    self.counts[position].conflicting += 1;
                    self.conflicts.push(conflict(reason));
                    continue;
                }
                for (slot, (column_position, _)) in unique_columns.iter().enumerate() {
                    if let Some(value) = row.values[*column_position].as_text() {
                        self.owners[position][slot].insert(Val::of(value), Val::of(&key));
                    }
                }
                self.counts[position].inserted += 1;
                new_rows.push(row);
            }
            // References of the new rows: to a snapshot row, or a stored one.
            let targets: Vec<Option<usize>> = table
                .columns
                .iter()
                .map(|column| {
                    column.references.map(|target| TABLES.iter().position(|known| known.name == target).expect("known"))
                })
                .collect();
            let mut unknown: HashMap<usize, Vec<String>> = HashMap::new();
            for row in &new_rows {
                for (target, value) in targets.iter().zip(&row.values) {
                    let (Some(target_position), Some(id)) = (*target, value.as_text()) else { continue };
                    let id_val = Val::of(id);
                    if !self.seen[target_position].contains_key(&id_val)
                        && !self.stored_ids[target_position].contains_key(&id_val)
                    {
                        unknown.entry(target_position).or_default().push(id.to_string());
                    }
                }
            }
            for (target_position, ids) in unknown {
                self.stored_ids_of(target_position, ids).await?;
            }
            for row in new_rows {
                let mut wait = false;
                for (index, (column, value)) in table.columns.iter().zip(&row.values).enumerate() {
                    let (Some(target), Some(target_position), Some(id)) =
                        (column.references, targets[index], value.as_text())
                    else {
                        continue;
                    };
                    let id_val = Val::of(id);
                    let stored = self.stored_before[target_position]
                        && self.stored_ids[target_position].get(&id_val).copied().unwrap_or(false);
                    if stored {
                        continue;
                    }
                    // A row of this import: written already, unless it waits itself (or comes
                    // later in the same table, which one statement covers only within a batch).
                    match self.seen[target_position].get(&id_val).copied() {
                        None => {
                            self.pending.push(PendingReference {
                                table: position,
                                line: row.line,
                                column: index,
                                target,
                                id: id.to_string(),
                            });
                            wait = true;
                        }
                        Some(line) => {
                            let earlier = line <= row.line || target_position < position;
                            let target_waits = !self.deferred_keys[target_position].is_empty()
                                && self.deferred_keys[target_position].contains(&id_val);
                            if !earlier || target_waits {
                                wait = true;
                            }
                        }
                    }
                }
                if wait {
                    self.deferred_keys[position].insert(Val::of(&row_key(table, &row.values)));
                    self.deferred.push((position, row));
                } else {
                    to_write[position].push(row);
                }
            }
        }
        Ok(to_write)
    }

    /// Writes new rows of one table and notes what they change in the search index and
    /// which comparison groups they join.
    async fn write(&mut self, position: usize, rows: &[&PreparedRow]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        let table = &TABLES[position];
        report_progress(&self.options, ImportStage::Writing, Some(table.name), self.lines, self.lines);
        let Some((sender, _)) = &self.writer else {
            return Err(CatalogError::Export("the import's transaction has ended".into()));
        };
        let stopped = |_| CatalogError::Export("the import's writer stopped".into());
        if self.backend == Backend::Postgres {
            // COPY, in statements of about COPY_BYTES each.
            let mut start = 0;
            while start < rows.len() {
                let mut data = Vec::with_capacity(COPY_BYTES + (COPY_BYTES >> 2));
                let mut end = start;
                while end < rows.len() && data.len() < COPY_BYTES {
                    store::copy_row(&rows[end].values, &mut data);
                    end += 1;
                }
                let lines = [rows[start].line.to_string(), rows[end - 1].line.to_string()];
                let context =
                    format!("cannot write {} rows (lines {})", table.name, abbreviate(&lines[..(end - start).min(2)]));
                sender.send(Command::Copy { sql: store::copy_sql(table), data, context }).await.map_err(stopped)?;
                start = end;
            }
        } else {
            for batch in rows.chunks(store::batch_rows(table)) {
                let sql = store::insert_sql(self.backend, table, batch.len());
                let params: Vec<SqlValue> = batch.iter().flat_map(|row| row.values.iter().cloned()).collect();
                let lines: Vec<String> = batch.iter().map(|row| row.line.to_string()).collect();
                let context = format!("cannot write {} rows (lines {})", table.name, abbreviate(&lines));
                sender.send(Command::Write { sql, params, context }).await.map_err(stopped)?;
            }
        }
        match table.name {
            "operations" | "operation_aliases" | "implementations" | "projects" => self.search.text_changed = true,
            "benchmark_runs" => {
                let column = |name: &str| table.columns.iter().position(|column| column.json == name);
                if let Some(column) = column("hardwareModel") {
                    self.search
                        .gpus
                        .extend(rows.iter().filter_map(|row| row.values[column].as_text().map(str::to_string)));
                }
                if let Some(column) = column("comparisonKey") {
                    self.comparison_keys
                        .extend(rows.iter().filter_map(|row| row.values[column].as_text().map(str::to_string)));
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Rolls the transaction back after an error of `add`.
    pub(crate) async fn abandon(mut self) {
        let _ = self.reclaim().await;
        if let Some(mut session) = self.session.take() {
            restore_cache(&mut session).await;
            let _ = session.rollback().await;
        }
    }

    /// Ends the import: the first problem refuses it (a malformed row, then a digest or key
    /// mismatch, then a reference to a row nobody holds, then conflicts); otherwise the rows
    /// that waited are written, the search index refreshed and the record events appended,
    /// and the transaction committed (rolled back after a dry run).
    pub(crate) async fn finish(self) -> Result<ImportReport> {
        let (options, lines) = (self.options.clone(), self.lines);
        let (mut session, outcome) = self.conclude_within().await?;
        match outcome {
            Ok(report) if !report.dry_run => {
                report_progress(&options, ImportStage::Committing, None, lines, lines);
                let started = std::time::Instant::now();
                session.commit().await.context(|| "cannot commit the import".into())?;
                if std::env::var_os("KI_IMPORT_TIMING").is_some() {
                    eprintln!("committed in {:?}", started.elapsed());
                }
                Ok(report)
            }
            outcome => {
                restore_cache(&mut session).await;
                session.rollback().await.context(|| "cannot roll back".into())?;
                outcome
            }
        }
    }

    /// Ends the import but not its transaction: the rows that waited are written, the search
    /// index refreshed and the record events appended, or the first problem refuses the import
    /// (as [`Importer::finish`] says); the transaction comes back with the outcome, for the
    /// caller to write more in it and commit, or to roll back. Err only when the transaction
    /// itself was lost.
    async fn conclude_within(mut self) -> Result<(Session, Result<ImportReport>)> {
        let started = std::time::Instant::now();
        let concluded = self.conclude().await;
        let reclaimed = self.reclaim().await;
        if std::env::var_os("KI_IMPORT_TIMING").is_some() {
            eprintln!("concluded (queued writes done) in {:?}", started.elapsed());
        }
        let Some(mut session) = self.session.take() else {
            return Err(concluded.err().or(reclaimed.err()).unwrap_or_else(lost_transaction));
        };
        let outcome = match (concluded, reclaimed) {
            (Err(error), _) | (Ok(_), Err(error)) => Err(error),
            (Ok(report), Ok(())) if report.dry_run => Ok(report),
            (Ok(report), Ok(())) => self.complete(&mut session, report).await,
        };
        Ok((session, outcome))
    }

    /// After every row is written: the search index, the record events, the cache size.
    async fn complete(&mut self, session: &mut Session, mut report: ImportReport) -> Result<ImportReport> {
        let started = std::time::Instant::now();
        if session.backend() == Backend::Postgres && !self.dropped_indexes.is_empty() {
            // Each index is sorted in memory rather than in temporary files (this transaction only).
            session
                .execute("SET LOCAL maintenance_work_mem = '256MB'", &[])
                .await
                .context(|| "cannot set maintenance_work_mem".into())?;
        }
        for statement in std::mem::take(&mut self.dropped_indexes) {
            session.execute(&statement, &[]).await.context(|| format!("cannot make an index again: {statement}"))?;
        }
        let indexed = started.elapsed();
        for statement in std::mem::take(&mut self.dropped_keys) {
            session
                .execute(&statement, &[])
                .await
                .context(|| format!("cannot add a foreign key again: {statement}"))?;
        }
        if std::env::var_os("KI_IMPORT_TIMING").is_some() {
            eprintln!(
                "indexes made again in {indexed:?}, foreign keys added again in {:?}",
                started.elapsed() - indexed
            );
        }
        let search = std::mem::take(&mut self.search);
        crate::search::refresh(session, &search).await?;
        let append = self.options.append_record_events
            || (self.options.append_record_events_unless_ledgered && self.saw_runs && !self.saw_record_events);
        if append {
            report.record_events = crate::ledger::append_pending(session, &self.comparison_keys).await?;
            if let Some(events) = report.tables.iter_mut().find(|counts| counts.table == "record_events") {
                events.inserted += report.record_events.len() as u64;
            }
        }
        restore_cache(session).await;
        Ok(report)
    }

    async fn conclude(&mut self) -> Result<ImportReport> {
        if let Some(error) = self.invalid.take() {
            return Err(error);
        }
        let verifier = std::mem::take(&mut self.verifier);
        let report = verifier.finish();
        if !report.is_clean() {
            let first = match report.first_mismatch() {
                Some((field, mismatch)) => {
                    let place = if mismatch.line == 0 {
                        "a stored catalog row".to_string()
                    } else {
                        format!("line {}", mismatch.line)
                    };
                    format!(
                        "{place}: {} row {}: {} is {:?} but recomputes to {:?}",
                        field.table, mismatch.id, field.name, mismatch.stored, mismatch.recomputed
                    )
                }
                None => "unknown row".to_string(),
            };
            return Err(CatalogError::Verification {
                origin: origin_prefix(&self.options),
                mismatches: report.mismatches() as usize,
                first,
            });
        }
        // Every reference must land on a row that exists once the import is done.
        let mut dangling: Option<&PendingReference> = None;
        for pending in &self.pending {
            let target = TABLES.iter().position(|known| known.name == pending.target).expect("known");
            if self.seen[target].contains_key(&Val::of(&pending.id)) {
                continue;
            }
            if dangling.is_none_or(|first| {
                (pending.table, pending.line, pending.column) < (first.table, first.line, first.column)
            }) {
                dangling = Some(pending);
            }
        }
        if let Some(pending) = dangling {
            let table = &TABLES[pending.table];
            let problem = crate::RowProblem {
                line: pending.line,
                table: table.name.to_string(),
                pointer: format!("/row/{}", table.columns[pending.column].json),
                message: format!(
                    "refers to {} row {}, which neither the snapshot nor the catalog holds",
                    pending.target, pending.id
                ),
            };
            return Err(CatalogError::InvalidRow { origin: origin_prefix(&self.options), problem: Box::new(problem) });
        }
        let mut conflicts = std::mem::take(&mut self.conflicts);
        conflicts.sort_by_key(|conflict| conflict.line);
        if self.options.dry_run {
            return Ok(ImportReport {
                dry_run: true,
                tables: self.counts.clone(),
                conflicts,
                record_events: Vec::new(),
            });
        }
        if !conflicts.is_empty() {
            let first = Box::new(conflicts[0].clone());
            return Err(CatalogError::Conflicts {
                origin: origin_prefix(&self.options),
                count: conflicts.len(),
                first,
                conflicts,
            });
        }
        // The rows that waited for rows later in the file: parents first, then by line.
        let mut deferred = std::mem::take(&mut self.deferred);
        deferred.sort_by_key(|(position, row)| (*position, row.line));
        let mut start = 0;
        while start < deferred.len() {
            let position = deferred[start].0;
            let end = deferred[start..]
                .iter()
                .position(|(other, _)| *other != position)
                .map_or(deferred.len(), |n| start + n);
            let rows: Vec<&PreparedRow> = deferred[start..end].iter().map(|(_, row)| row).collect();
            self.write(position, &rows).await?;
            start = end;
        }
        Ok(ImportReport {
            dry_run: false,
            tables: self.counts.clone(),
            conflicts: Vec::new(),
            record_events: Vec::new(),
        })
    }
}

/// Imports an export file as it is read: a reader thread parses it into parts of at most
/// [`CHUNK_LINES`] lines or [`CHUNK_BYTES`] of text, one part ahead of the importer, which
/// checks, verifies and writes each in the one transaction. Memory holds two parts and the
/// compact facts of the rows read, whatever the file's size. A line that cannot be read
/// refuses the whole file (the transaction is rolled back).
pub(crate) async fn import_file(pool: &Pool, path: &std::path::Path, options: &ImportOptions) -> Result<ImportReport> {
    let mut reader = ki_model::export::open_export(path).map_err(|error| CatalogError::Snapshot(error.to_string()))?;
    let consumed = reader.progress_counter();
    let file_len = reader.file_len();
    let (sender, mut receiver) =
        tokio::sync::mpsc::channel::<std::result::Result<Vec<ExportLine>, ki_model::export::ExportError>>(1);
    let producer = std::thread::spawn(move || {
        let mut part = Vec::new();
        let mut bytes = 0;
        while let Some(line) = reader.next() {
            match line {
                Ok(line) => {
                    bytes += reader.last_line_bytes();
                    part.push(line);
                    if part.len() >= CHUNK_LINES || bytes >= CHUNK_BYTES {
                        bytes = 0;
                        if sender.blocking_send(Ok(std::mem::take(&mut part))).is_err() {
                            return;
                        }
                    }
                }
                Err(error) => {
                    let _ = sender.blocking_send(Err(error));
                    return;
                }
            }
        }
        if !part.is_empty() {
            let _ = sender.blocking_send(Ok(part));
        }
    });
    let outcome = async {
        let mut importer = Importer::begin(pool, options, Load::File).await?;
        report_progress(options, ImportStage::Verifying, None, 0, file_len);
        let mut waited = std::time::Duration::ZERO;
        let mut working = std::time::Duration::ZERO;
        loop {
            let t0 = std::time::Instant::now();
            let Some(part) = receiver.recv().await else { break };
            waited += t0.elapsed();
            let t1 = std::time::Instant::now();
            let added = match part {
                Ok(part) => importer.add(&part).await,
                Err(error) => Err(CatalogError::Snapshot(error.to_string())),
            };
            if let Err(error) = added {
                importer.abandon().await;
                return Err(error);
            }
            working += t1.elapsed();
            let done = consumed.load(std::sync::atomic::Ordering::Relaxed);
            report_progress(options, ImportStage::Verifying, None, done.min(file_len), file_len);
        }
        if std::env::var_os("KI_IMPORT_TIMING").is_some() {
            eprintln!("waited {waited:?} working {working:?} phases {:?}", importer.timing);
        }
        importer.finish().await
    }
    .await;
    drop(receiver);
    let _ = producer.join();
    outcome
}
