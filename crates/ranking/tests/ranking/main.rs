//! The ranking crate's integration tests, one module per feature, in one test binary (compiled and
//! linked once, not once per file).

mod forgiving;
mod shared_export;
mod synthetic_catalog;
