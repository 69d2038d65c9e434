//! The sources crate's integration tests, one module per feature, in one test binary (compiled and
//! linked once, not once per file).

mod flashinfer;
mod publish;
mod submission;
