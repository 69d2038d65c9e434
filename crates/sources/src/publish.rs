//! Publishing planned rows through the catalog's import, so that records the catalog already
//! holds are recognised whatever their row ids.
//!
//! The catalog identifies a row by its id and refuses a second row with the same digest or
//! slug. Rows imported from the public index's export carry the index's ids; a re-import
//! carries ours. So before importing, every planned row is looked up by what identifies its
//! record (digest, slug, content digest); when the catalog holds it, the catalog's row is used
//! verbatim (it then counts as unchanged) and the rows that refer to it are pointed at its id.

use std::collections::HashMap;

use ki_catalog::{Catalog, CatalogError, ImportOptions, ImportReport};
use serde_json::{Map, Value};

/// One catalog row in the export format, as an importer plans it.
#[derive(Debug, Clone, PartialEq)]
pub struct PlannedRow {
    pub table: &'static str,
    pub row: Map<String, Value>,
}

impl PlannedRow {
    /// A typed row (`ki_model::rows`) as a planned export row.
    pub fn typed(row: impl Into<ki_model::rows::Row>) -> PlannedRow {
        let row = row.into();
        PlannedRow { table: row.table(), row: row.into_map() }
    }
}

/// Columns that hold the id of another row.
const REFERENCE_COLUMNS: &[&str] =
    &["sourceId", "projectId", "operationId", "workloadId", "implementationId", "runId", "previousRunId"];

/// The column that identifies the record of a row of `table`, when it has one alone.
fn identity_column(table: &str) -> Option<&'static str> {
    Some(match table {
        "sources" | "projects" => "slug",
        "operations" => "semanticDigest",
        "workloads" => "workloadDigest",
        "implementations" => "implementationDigest",
        "benchmark_runs" => "runDigest",
        "artifacts" => "contentDigest",
        _ => return None,
    })
}

/// The planned rows with every record the catalog already holds replaced by the catalog's
/// own row, and references rewritten to the catalog's ids.
pub async fn reconcile(
    catalog: &Catalog,
    rows: &[PlannedRow],
) -> Result<Vec<ki_model::export::ExportLine>, CatalogError> {
    let mut id_map: HashMap<String, String> = HashMap::new();
    let mut lines = Vec::with_capacity(rows.len());
    for (index, planned) in rows.iter().enumerate() {
        let mut row = planned.row.clone();
        for column in REFERENCE_COLUMNS {
            if let Some(Value::String(id)) = row.get(*column)
                && let Some(mapped) = id_map.get(id)
            {
                row.insert((*column).to_string(), Value::String(mapped.clone()));
            }
        }
        let held = find_held(catalog, planned.table, &row).await?;
        if let Some(held) = held {
            if let (Some(Value::String(ours)), Some(Value::String(theirs))) = (row.get("id"), held.get("id")) {
                id_map.insert(ours.clone(), theirs.clone());
            }
            row = held;
        }
        lines.push(ki_model::export::ExportLine { line: index + 1, table: planned.table.to_string(), row });
    }
    Ok(lines)
}

async fn find_held(
    catalog: &Catalog,
    table: &str,
    row: &Map<String, Value>,
) -> Result<Option<Map<String, Value>>, CatalogError> {
    if let Some(column) = identity_column(table) {
        let Some(value) = row.get(column).and_then(Value::as_str) else { return Ok(None) };
        return Ok(catalog.export_rows_where(table, column, value).await?.into_iter().next());
    }
    // Rows without an identity of their own are known by their parent and their contents.
    let (parent, same): (&str, &[&str]) = match table {
        "operation_aliases" => ("operationId", &["alias"]),
        "measurements" => ("runId", &["metric", "statistic", "unit"]),
        _ => return Ok(None),
    };
    let Some(parent_id) = row.get(parent).and_then(Value::as_str) else { return Ok(None) };
    let siblings = catalog.export_rows_where(table, parent, parent_id).await?;
    Ok(siblings.into_iter().find(|held| same.iter().all(|column| held.get(*column) == row.get(*column))))
}

/// Publishes planned rows through the catalog's import, after [`reconcile`]: the one
/// way every importer writes.
pub async fn publish_rows(
    catalog: &Catalog,
    rows: &[PlannedRow],
    options: &ImportOptions,
) -> Result<ImportReport, CatalogError> {
    let lines = reconcile(catalog, rows).await?;
    catalog.import_lines(&lines, options).await
}
