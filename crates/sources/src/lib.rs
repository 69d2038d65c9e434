//! Importers that turn external benchmark data sets into kernelindex.dev/v1alpha1 records.
//!
//! An importer reads a data set, validates it whole, and produces catalog rows in the export
//! format (`{table, row}` with camelCase columns, exactly the shapes the public index exports),
//! so that publishing goes through the catalog's own import path in one transaction: there is
//! no second writer. Row ids are derived from content digests, so a re-import yields the same
//! rows and the catalog can recognise them as unchanged.

pub mod error;
pub mod flashinfer;
pub mod names;
pub mod publish;

pub use error::{SourceError, SourceErrors};
