//! The rows the ranking needs for a few operations, read with indexed queries instead of whole
//! tables, so that a one-off question (`ki resolve`) does not read the entire catalog.
use serde_json::{Map, Value};

use crate::error::{CatalogError, DbContext, Result};
use crate::rows::{self, SqlValue};
use crate::schema::Kind;
use crate::store::{self, Session};
use crate::{Catalog, known_table};

/// The ranking's tables and which of their rows belong to a set of operations.
enum Scope {
    /// Small tables the rows of any operation refer to: read whole.
    All,
    /// Rows whose `operation_id` is one of the operations.
    Operation,
    /// Runs on the operations' workloads.
    Run,
    /// Rows whose `run_id` is one of those runs.
    RunChild,
}

const SLICE: [(&str, Scope); 10] = [
    ("sources", Scope::All),
    ("projects", Scope::All),
    ("operations", Scope::All),
    ("operation_aliases", Scope::All),
    ("workloads", Scope::Operation),
    ("implementations", Scope::Operation),
    ("benchmark_runs", Scope::Run),
    ("measurements", Scope::RunChild),
    ("record_events", Scope::RunChild),
    ("artifacts", Scope::All),
];

impl Catalog {
    /// Streams, table by table in the ranking's order, every row of the small shared tables
    /// (sources, projects, operations, aliases, artifacts) and the rows that belong to the
    /// operations `operation_ids` (their workloads, implementations, runs on those workloads and
    /// the runs' measurements and record events). Ids that are not uuids match nothing.
    pub async fn for_each_ranking_row_of_operations(
        &self,
        operation_ids: &[String],
        mut visit: impl FnMut(&'static str, Map<String, Value>) -> Result<()>,
    ) -> Result<()> {
        let ids: Vec<&String> = operation_ids.iter().filter(|id| uuid::Uuid::try_parse(id).is_ok()).collect();
        let mut session = Session::begin(&self.pool, false).await?;
        let backend = session.backend();
        let list = || {
            if ids.is_empty() {
                return "NULL".to_string();
            }
            (1..=ids.len()).map(|n| store::placeholder(backend, n, Kind::Uuid)).collect::<Vec<_>>().join(", ")
        };
        let workloads = format!("SELECT id FROM workloads WHERE operation_id IN ({})", list());
        let runs = format!("SELECT id FROM benchmark_runs WHERE workload_id IN ({workloads})");
        for (name, scope) in SLICE {
            let spec = known_table(name)?;
            let filter = match scope {
                Scope::All => String::new(),
                Scope::Operation => format!(" WHERE operation_id IN ({})", list()),
                Scope::Run => format!(" WHERE workload_id IN ({workloads})"),
                Scope::RunChild => format!(" WHERE run_id IN ({runs})"),
            };
            let params: Vec<SqlValue> = match scope {
                Scope::All => Vec::new(),
                _ => ids.iter().map(|id| SqlValue::Text(Some(id.to_string()))).collect(),
            };
            let sql = format!("SELECT {} FROM {}{filter} ORDER BY seq", store::select_list(backend, spec), spec.name);
            let storages = store::storages(spec.columns.iter().map(|column| column.kind));
            session
                .for_each(&sql, &params, &storages, |values| {
                    visit(name, rows::to_json_row(spec, &values).map_err(CatalogError::Corrupt)?)
                })
                .await?;
        }
        session.rollback().await.context(|| "cannot end a read transaction".into())?;
        Ok(())
    }
}
