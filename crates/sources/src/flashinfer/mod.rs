//! FlashInfer-Bench (flashinfer-trace) importer.
//!
//! Layout of a data set directory: `definitions/<op_type>/<name>.json`,
//! `workloads/<op_type>/<name>.jsonl`, `solutions/<author>/<op_type>/<name>/<solution>.json`,
//! `traces/<author>/<op_type>/<name>.jsonl`, `blob/…` (safetensors, referenced by path).
//! [`plan_import`] reads and checks all of it, then maps it to export rows; a data set with
//! any problem yields only errors.

mod constraint;
pub mod map;
pub mod read;

use std::path::Path;

pub use map::{ImportOptions, ImportPlan, PlanSummary, PlannedRow, row_id};
pub use read::Dataset;

use crate::error::SourceErrors;

/// Reads the data set at `dir` and maps it to catalog rows.
pub fn plan_import(dir: &Path, options: &ImportOptions) -> Result<ImportPlan, SourceErrors> {
    let dataset = read::read_dataset(dir).map_err(SourceErrors)?;
    Ok(map::plan(&dataset, options))
}

/// Publishes a FlashInfer-Bench plan in one transaction (or, with `dry_run`, reports
/// what would happen): per table, rows new / unchanged / conflicting.
pub async fn publish(
    catalog: &ki_catalog::Catalog,
    plan: &ImportPlan,
    dry_run: bool,
    origin: &str,
) -> Result<ki_catalog::ImportReport, ki_catalog::CatalogError> {
    // Traces become runs with no record events of their own: append the ones ranking-v1 requires.
    let options = ki_catalog::ImportOptions {
        dry_run,
        origin: Some(origin.to_string()),
        append_record_events: true,
        ..ki_catalog::ImportOptions::default()
    };
    crate::publish::publish_rows(catalog, &plan.rows, &options).await
}
