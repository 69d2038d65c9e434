pub mod admin;
pub mod catalog;
pub mod catalog_store;
pub mod database;
pub mod manifest;
pub mod ranking;
pub mod run;
pub mod serve;
pub mod source;
// Not yet through `term`: the coordinator converts these two at the merge of session 6.
#[allow(clippy::print_stdout, clippy::print_stderr, clippy::disallowed_methods)]
pub mod verify;
#[allow(clippy::print_stdout, clippy::print_stderr, clippy::disallowed_methods)]
pub mod verify_queue;
