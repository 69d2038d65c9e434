//! The model crate's integration tests, one module per feature, in one test binary (compiled and
//! linked once, not once per file).

mod export_reader;
mod export_verify;
mod identity_jcs_rfc8785;
mod records_bad_input;
mod records_examples;
mod records_export;
