//! Importers that turn external benchmark data sets into kernelindex.dev/v1alpha1 records.
//!
//! An importer reads a data set, validates it whole, and produces catalog rows in the export
//! format (`{table, row}` with camelCase columns, exactly the shapes the public index exports),
//! so that publishing goes through the catalog's own import path in one transaction: there is
//! no second writer. Row ids are derived from content digests, so a re-import yields the same
//! rows and the catalog can recognise them as unchanged.
//!
//! # Architecture notes
//!
//! Moved from ARCHITECTURE.md, which keeps the map; this is the detail.
//!
//! ## The crate
//!
//! `crates/sources` — importers. Each turns a source's files into export-format rows and
//! hands them to `Catalog::import_lines` (through `publish::publish_rows`), so there is one
//! writer and one verifier. `submission` maps a community submission's manifests (kernel
//! and serving records) to rows.
//!
//! ## Code map
//!
//! `sources` (`ki_sources`) — producers of rows: `flashinfer` (`plan_import` → `ImportPlan`),
//! `submission` (`plan`), `synthetic` (`generate`, behind `ki catalog generate`); all publish
//! through `publish::publish_rows` → `Catalog::import_lines`.

pub mod error;
pub mod flashinfer;
pub mod names;
pub mod publish;
pub mod submission;
pub mod synthetic;

pub use error::{SourceError, SourceErrors};

/// A row id derived from what identifies the row within its source, so that a re-import
/// produces the same id: UUID v8 from sha256("kernelindex:<source>:<table>:<key>").
pub fn row_id(source: &str, table: &str, key: &str) -> String {
    use sha2::Digest;
    let digest = sha2::Sha256::digest(format!("kernelindex:{source}:{table}:{key}").as_bytes());
    let mut id = [0u8; 16];
    id.copy_from_slice(&digest[..16]);
    uuid::Uuid::new_v8(id).to_string()
}
