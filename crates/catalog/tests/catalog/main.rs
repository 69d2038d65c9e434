//! The catalog's integration tests, one module per feature, in one test binary: the crate is
//! optimized in tests (imports of the 40,795-row export), and one binary compiles and links
//! the shared code once instead of once per file.

#[macro_use]
mod support;

mod contents;
mod corrections;
mod new_file;
mod queue;
mod search;
mod state;
mod store;
mod streamed;
mod typed_rows;
