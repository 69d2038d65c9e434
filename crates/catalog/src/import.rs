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
}

impl std::fmt::Debug for ImportOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImportOptions")
            .field("dry_run", &self.dry_run)
            .field("origin", &self.origin)
            .field("progress", &self.progress.is_some())
            .field("append_record_events", &self.append_record_events)
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

/// Rows grouped by table (index into `TABLES`), validated.
struct Snapshot {
    tables: Vec<Vec<PreparedRow>>,
}

fn prepare(lines: &[ExportLine], options: &ImportOptions) -> Result<Snapshot> {
    let invalid = |line: &ExportLine, pointer: &str, message: String| CatalogError::InvalidRow {
        origin: origin_prefix(options),
        problem: Box::new(crate::RowProblem {
            line: line.line,
            table: line.table.clone(),
            pointer: pointer.to_string(),
            message,
        }),
    };
    // Checking a row is independent of the others, so rows are checked in parallel; the
    // results keep line order, so the problem reported is still the first by line.
    let checked: Vec<Result<(usize, PreparedRow)>> = lines
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
        .collect();
    let mut tables: Vec<Vec<PreparedRow>> = TABLES.iter().map(|_| Vec::new()).collect();
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
        tables[position].push(prepared);
    }
    Ok(Snapshot { tables })
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

async fn load_existing(session: &mut Session, table: &'static Table) -> Result<Existing> {
    let backend = session.backend();
    let sql = format!("SELECT {} FROM {}", store::select_list(backend, table), table.name);
    let storages = store::storages(table.columns.iter().map(|column| column.kind));
    let unique_positions: Vec<usize> =
        table.columns.iter().enumerate().filter(|(_, column)| column.unique).map(|(index, _)| index).collect();
    let mut existing = Existing {
        text_by_key: HashMap::new(),
        unique_owner: unique_positions.iter().map(|_| HashMap::new()).collect(),
    };
    session
        .for_each(&sql, &[], &storages, |values| -> Result<()> {
            let key = row_key(table, &values);
            for (slot, position) in unique_positions.iter().enumerate() {
                if let Some(text) = values[*position].as_text() {
                    existing.unique_owner[slot].insert(text.to_string(), key.clone());
                }
            }
            existing.text_by_key.insert(key, rows::rendered(table, &values));
            Ok(())
        })
        .await?;
    Ok(existing)
}

impl From<sqlx::Error> for CatalogError {
    fn from(cause: sqlx::Error) -> Self {
        CatalogError::Database { context: "catalog query failed".into(), cause }
    }
}

fn show_key(key: &str) -> String {
    key.replace('\u{0}', " ")
}

/// Rows checked against their tables and verified (every digest and key), ready to be
/// written by [`write_verified`].
pub(crate) struct Verified {
    snapshot: Snapshot,
}

/// Checks and verifies `lines` (reading the parents they name from the catalog); writes
/// nothing. Done before a write transaction begins, so that the writer lock is held only
/// for the writing.
pub(crate) async fn verify_lines(pool: &Pool, lines: &[ExportLine], options: &ImportOptions) -> Result<Verified> {
    let snapshot = prepare(lines, options)?;
    let context = reference_context(pool, lines).await?;
    verify(lines, context, options)?;
    Ok(Verified { snapshot })
}

/// Verifies `lines`, then writes the rows the catalog lacks in one transaction.
pub(crate) async fn import_lines(pool: &Pool, lines: &[ExportLine], options: &ImportOptions) -> Result<ImportReport> {
    let verified = verify_lines(pool, lines, options).await?;
    let mut session = Session::begin(pool, !options.dry_run).await?;
    match write_verified(&mut session, &verified, options).await {
        Ok(report) if !report.dry_run => {
            session.commit().await.context(|| "cannot commit the import".into())?;
            Ok(report)
        }
        outcome => {
            session.rollback().await.context(|| "cannot roll back".into())?;
            outcome
        }
    }
}

/// Writes the verified rows the catalog lacks inside the caller's write transaction (which
/// the caller commits, or rolls back on an error and after a dry run). Conflicting rows and
/// dangling references are errors; the caller's transaction must then not be committed.
pub(crate) async fn write_verified(
    session: &mut Session,
    verified: &Verified,
    options: &ImportOptions,
) -> Result<ImportReport> {
    let snapshot = &verified.snapshot;
    let backend = session.backend();
    let mut counts = Vec::with_capacity(TABLES.len());
    let mut conflicts = Vec::new();
    let mut to_insert: Vec<Vec<&PreparedRow>> = Vec::with_capacity(TABLES.len());
    // Keys present after the import, per table, for reference checks.
    let mut known_keys: HashMap<&'static str, HashSet<String>> = HashMap::new();

    for (position, table) in TABLES.iter().enumerate() {
        report_progress(options, ImportStage::Checking, Some(table.name), position as u64, TABLES.len() as u64);
        let incoming = &snapshot.tables[position];
        let mut existing = load_existing(session, table).await?;
        let mut table_counts = TableCounts { table: table.name, inserted: 0, unchanged: 0, conflicting: 0 };
        let mut new_rows = Vec::new();
        let mut keys: HashSet<String> = existing.text_by_key.keys().cloned().collect();
        let unique_columns: Vec<(usize, &schema::Column)> =
            table.columns.iter().enumerate().filter(|(_, column)| column.unique).collect();
        for row in incoming {
            let key = row_key(table, &row.values);
            let conflict = |reason: String| Conflict { line: row.line, table: table.name, key: show_key(&key), reason };
            // Only a row whose key is already stored needs its text, to compare.
            if let Some(stored) = existing.text_by_key.get(&key) {
                let text = rows::rendered(table, &row.values);
                if *stored == text {
                    table_counts.unchanged += 1;
                } else {
                    table_counts.conflicting += 1;
                    conflicts.push(conflict(first_difference(table, stored, &text)));
                }
                continue;
            }
            let mut clash = None;
            for (slot, (position, column)) in unique_columns.iter().enumerate() {
                if let Some(value) = row.values[*position].as_text()
                    && let Some(owner) = existing.unique_owner[slot].get(value)
                {
                    clash = Some(format!("{} {value} is already held by row {}", column.json, show_key(owner)));
                    break;
                }
            }
            if let Some(reason) = clash {
                table_counts.conflicting += 1;
                conflicts.push(conflict(reason));
                // Rows referring to it are not dangling: the conflict is what gets reported.
                keys.insert(key);
                continue;
            }
            for (slot, (position, _)) in unique_columns.iter().enumerate() {
                if let Some(value) = row.values[*position].as_text() {
                    existing.unique_owner[slot].insert(value.to_string(), key.clone());
                }
            }
            // No later snapshot row can have this key (prepare refuses repeats), so the
            // row's text is not kept for comparison.
            keys.insert(key);
            table_counts.inserted += 1;
            new_rows.push(row);
        }
        known_keys.insert(table.name, keys);
        // Every reference must land on a row that exists once the import is done.
        for row in &new_rows {
            for (column, value) in table.columns.iter().zip(&row.values) {
                let (Some(target), Some(id)) = (column.references, value.as_text()) else { continue };
                if !known_keys.get(target).is_some_and(|keys| keys.contains(id)) {
                    let problem = crate::RowProblem {
                        line: row.line,
                        table: table.name.to_string(),
                        pointer: format!("/row/{}", column.json),
                        message: format!(
                            "refers to {target} row {id}, which neither the snapshot nor the catalog holds"
                        ),
                    };
                    return Err(CatalogError::InvalidRow {
                        origin: origin_prefix(options),
                        problem: Box::new(problem),
                    });
                }
            }
        }
        counts.push(table_counts);
        to_insert.push(new_rows);
    }

    if options.dry_run || !conflicts.is_empty() {
        if !options.dry_run {
            conflicts.sort_by_key(|conflict| conflict.line);
            let first = Box::new(conflicts[0].clone());
            return Err(CatalogError::Conflicts {
                origin: origin_prefix(options),
                count: conflicts.len(),
                first,
                conflicts,
            });
        }
        conflicts.sort_by_key(|conflict| conflict.line);
        return Ok(ImportReport { dry_run: true, tables: counts, conflicts, record_events: Vec::new() });
    }

    let total: u64 = counts.iter().map(|counts| counts.inserted).sum();
    let mut done = 0u64;
    for (table, rows) in TABLES.iter().zip(&to_insert) {
        report_progress(options, ImportStage::Writing, Some(table.name), done, total);
        for batch in rows.chunks(store::batch_rows(table)) {
            write_batch(session, backend, table, batch).await?;
            done += batch.len() as u64;
            report_progress(options, ImportStage::Writing, Some(table.name), done, total);
        }
    }
    crate::search::refresh(session, &search_index_input(&to_insert)).await?;
    let mut record_events = Vec::new();
    if options.append_record_events {
        let runs = TABLES.iter().position(|table| table.name == "benchmark_runs");
        let key_column =
            runs.and_then(|position| TABLES[position].columns.iter().position(|column| column.json == "comparisonKey"));
        let keys: std::collections::BTreeSet<String> = match (runs, key_column) {
            (Some(runs), Some(column)) => {
                to_insert[runs].iter().filter_map(|row| row.values[column].as_text().map(str::to_string)).collect()
            }
            _ => Default::default(),
        };
        record_events = crate::ledger::append_pending(session, &keys).await?;
        if let Some(events) = counts.iter_mut().find(|counts| counts.table == "record_events") {
            events.inserted += record_events.len() as u64;
        }
    }
    report_progress(options, ImportStage::Committing, None, total, total);
    Ok(ImportReport { dry_run: false, tables: counts, conflicts: Vec::new(), record_events })
}

/// What the new rows change in the search index: any new named row, and the new runs' GPUs.
fn search_index_input(to_insert: &[Vec<&PreparedRow>]) -> crate::search::NewRows {
    let mut new = crate::search::NewRows::default();
    for (table, rows) in TABLES.iter().zip(to_insert) {
        if rows.is_empty() {
            continue;
        }
        match table.name {
            "operations" | "operation_aliases" | "implementations" | "projects" => new.text_changed = true,
            "benchmark_runs" => {
                if let Some(column) = table.columns.iter().position(|column| column.json == "hardwareModel") {
                    new.gpus.extend(rows.iter().filter_map(|row| row.values[column].as_text().map(str::to_string)));
                }
            }
            _ => {}
        }
    }
    new
}

async fn write_batch(
    session: &mut Session,
    backend: Backend,
    table: &'static Table,
    batch: &[&PreparedRow],
) -> Result<()> {
    let sql = store::insert_sql(backend, table, batch.len());
    let params: Vec<SqlValue> = batch.iter().flat_map(|row| row.values.iter().cloned()).collect();
    session.execute(&sql, &params).await.context(|| {
        let lines: Vec<String> = batch.iter().map(|row| row.line.to_string()).collect();
        format!("cannot write {} rows (lines {})", table.name, abbreviate(&lines))
    })?;
    Ok(())
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
