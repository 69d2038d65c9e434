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
