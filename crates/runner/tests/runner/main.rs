//! The runner crate's integration tests, one module per feature, in one test binary (compiled and
//! linked once, not once per file).

mod cli;
mod gpu;
mod length_rules;
mod materialize_compare;
mod moe_bound;
mod records;
mod reference;
mod verify_intake;
