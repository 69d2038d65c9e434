//! Keeping the stored record-event ledger equal to the one ranking-v1 recomputes from
//! the runs, by appending what is missing — inside the caller's write transaction.
//!
//! Only the comparison groups a write touched are recomputed, from the rows ranking-v1
//! needs for them: the group's runs, the runs that supersede them or that they
//! supersede, those runs' parents, and the group's stored events. Appending is
//! idempotent: a second pass finds nothing missing. A change whose recomputed ledger
//! no longer contains a stored event would need that event deleted; it is refused.

use std::collections::{BTreeSet, HashSet};

use ki_model::rows::TableRow;
use ki_ranking::{CatalogRows, Index, LedgerEvent};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::error::{CatalogError, DbContext, Refusal, Result};
use crate::rows::{self, SqlValue};
use crate::schema::{self, Table};
use crate::store::{self, Session};

/// A record event written by the catalog: who took the record of a comparison group,
/// from whom, why and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AppendedEvent {
    pub id: String,
    pub comparison_key: String,
    /// The new record holder.
    pub run_id: String,
    /// The previous holder (None when the group had no record before).
    pub previous_run_id: Option<String>,
    /// `new_run`, `retraction` or `supersession`.
    pub cause: String,
    pub at: String,
}

fn table(name: &str) -> Result<&'static Table> {
    schema::table(name).ok_or_else(|| CatalogError::Export(format!("unknown table {name:?}")))
}

/// Rows of `table` whose `column` equals `value`, as export-format rows.
pub(crate) async fn rows_by(
    session: &mut Session,
    table_name: &str,
    column: &str,
    value: &str,
) -> Result<Vec<Map<String, Value>>> {
    let spec = table(table_name)?;
    crate::fetch_by(session, spec, column, value)
        .await?
        .iter()
        .map(|values| rows::to_json_row(spec, values).map_err(CatalogError::Corrupt))
        .collect()
}

/// Rows of `T`'s table whose `column` equals `value`, typed.
pub(crate) async fn typed_rows_by<T: TableRow>(session: &mut Session, column: &str, value: &str) -> Result<Vec<T>> {
    rows_by(session, T::TABLE, column, value).await?.into_iter().map(crate::typed).collect()
}

fn text<'a>(row: &'a Map<String, Value>, column: &str) -> Option<&'a str> {
    row.get(column).and_then(Value::as_str)
}

/// Collects rows into [`CatalogRows`] once each, loading the parents each run names.
struct Collector {
    rows: CatalogRows,
    seen: HashSet<(&'static str, String)>,
}

impl Collector {
    fn add(&mut self, table: &'static str, row: Map<String, Value>) -> bool {
        let Some(id) = text(&row, "id").map(str::to_string) else { return false };
        if !self.seen.insert((table, id)) {
            return false;
        }
        self.rows.push(table, row, None);
        true
    }

    /// Adds the row of `table` with id `id` (if the catalog holds it and it is new here),
    /// returning it so that its own parents can be followed.
    async fn add_by_id(
        &mut self,
        session: &mut Session,
        table: &'static str,
        id: &str,
    ) -> Result<Option<Map<String, Value>>> {
        if self.seen.contains(&(table, id.to_string())) {
            return Ok(None);
        }
        let Some(row) = rows_by(session, table, "id", id).await?.into_iter().next() else { return Ok(None) };
        self.add(table, row.clone());
        Ok(Some(row))
    }

    async fn add_run_with_parents(&mut self, session: &mut Session, run: Map<String, Value>) -> Result<()> {
        let implementation = text(&run, "implementationId").map(str::to_string);
        let workload = text(&run, "workloadId").map(str::to_string);
        let source = text(&run, "sourceId").map(str::to_string);
        if !self.add("benchmark_runs", run) {
            return Ok(());
        }
        if let Some(id) = implementation
            && let Some(row) = self.add_by_id(session, "implementations", &id).await?
            && let Some(project) = text(&row, "projectId")
        {
            self.add_by_id(session, "projects", project).await?;
        }
        if let Some(id) = workload
            && let Some(row) = self.add_by_id(session, "workloads", &id).await?
            && let Some(operation) = text(&row, "operationId")
        {
            self.add_by_id(session, "operations", operation).await?;
        }
        if let Some(id) = source {
            self.add_by_id(session, "sources", &id).await?;
        }
        Ok(())
    }
}

/// The recomputed events of comparison group `key` that the store lacks.
async fn pending_for_key(session: &mut Session, key: &str) -> Result<Vec<LedgerEvent>> {
    let mut collector = Collector { rows: CatalogRows::new(), seen: HashSet::new() };
    let runs = rows_by(session, "benchmark_runs", "comparisonKey", key).await?;
    let mut related = Vec::new();
    for run in &runs {
        let Some(id) = text(run, "id") else { continue };
        // Supersession links may cross groups in imported data; both ends are needed.
        related.extend(rows_by(session, "benchmark_runs", "supersedesId", id).await?);
        if let Some(target) = text(run, "supersedesId") {
            related.extend(rows_by(session, "benchmark_runs", "id", target).await?);
        }
    }
    for run in runs.into_iter().chain(related) {
        collector.add_run_with_parents(session, run).await?;
    }
    for event in rows_by(session, "record_events", "comparisonKey", key).await? {
        collector.rows.push("record_events", event, None);
    }
    let index = Index::from_owned_rows(collector.rows)
        .map_err(|error| CatalogError::Corrupt(format!("comparison group {key} cannot be ranked: {error}")))?;
    // Other groups present only through supersession links are incomplete: look at `key` alone.
    let Some(mismatch) = index.verify_record_events().mismatches.into_iter().find(|m| m.comparison_key == key) else {
        return Ok(Vec::new());
    };
    if let Some(stale) = mismatch.unexpected.first() {
        let event = format!(
            "{} (run {} took the record from {} by {} at {})",
            stale.id.as_ref().map_or("without id".to_string(), |id| id.to_string()),
            stale.run_id,
            stale.previous_run_id.as_ref().map_or("nobody".to_string(), |id| id.to_string()),
            stale.cause,
            stale.at.text()
        );
        return Err(CatalogError::Refused(Refusal::RewritesHistory { comparison_key: key.to_string(), event }));
    }
    Ok(mismatch.missing)
}

/// Appends the record events ranking-v1 requires for the comparison groups `keys`, in
/// the caller's transaction; returns what was appended (nothing when up to date).
pub(crate) async fn append_pending(session: &mut Session, keys: &BTreeSet<String>) -> Result<Vec<AppendedEvent>> {
    let spec = table("record_events")?;
    let created_at = ki_model::utc::now_millis();
    let mut appended = Vec::new();
    for key in keys {
        for event in pending_for_key(session, key).await? {
            let id = crate::new_row_id().to_string();
            let row = ki_model::rows::Row::from(ki_model::rows::RecordEventRow {
                id: id.clone(),
                comparison_key: event.comparison_key.clone(),
                run_id: event.run_id.clone(),
                previous_run_id: event.previous_run_id.clone(),
                policy_version: event.policy_version.clone(),
                cause: event.cause.clone(),
                at: event.at.text().into_owned(),
                created_at: created_at.clone(),
            })
            .into_map();
            let prepared = rows::prepare_row(spec, 0, &row).map_err(|problem| {
                CatalogError::Corrupt(format!("a recomputed record event does not fit its table: {problem}"))
            })?;
            let sql = store::insert_sql(session.backend(), spec, 1);
            session
                .execute(&sql, &prepared.values)
                .await
                .context(|| format!("cannot append a record event to {key}"))?;
            appended.push(AppendedEvent {
                id,
                comparison_key: event.comparison_key,
                run_id: event.run_id,
                previous_run_id: event.previous_run_id,
                cause: event.cause,
                at: event.at.text().into_owned(),
            });
        }
    }
    Ok(appended)
}

/// `value` as a bound SQL text parameter.
pub(crate) fn text_param(value: impl Into<String>) -> SqlValue {
    SqlValue::Text(Some(value.into()))
}
