//! The kernelindex.dev/v1alpha1 record model: parsing, validation, normalization,
//! canonical JSON (RFC 8785) and the content digests and keys that identify records.
//! Pure logic: no I/O except reading the files a caller names.

// Canonical identity (JCS, digests, keys) and catalog-export reading/verification.
pub mod escape;
pub mod export;
pub mod identity;
pub mod jcs;
pub mod verify;

// Typed manifests: parse (YAML 1.2 / JSON), normalize, validate.
pub mod manifest;
pub mod normalize;
pub mod parse;
pub mod problem;
pub mod records;
// One serde type per catalog export table, and the constructors producers build rows with.
pub mod rows;
pub mod schema;
// The text the search box looks in, for the catalog's index and the read model alike.
pub mod search_text;
// One formatter each, for the CLI and the web alike: slugs, and values with their units.
pub mod slug;
pub mod units;
pub mod utc;
