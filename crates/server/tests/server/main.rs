//! The server crate's integration tests, one module per feature, in one test binary (compiled and
//! linked once, not once per file).

mod common;
mod serving;

mod api_lists;
mod browser;
mod compare_resolve;
mod dossier;
mod gpu_pages;
mod hardening;
mod operation_page;
mod relevance;
mod routes;
mod search;
mod source;
mod user_cases;
mod verifications;
