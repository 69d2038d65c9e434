//! The kernelindex.dev/v1alpha1 record model: parsing, validation, normalization,
//! canonical JSON (RFC 8785) and the content digests and keys that identify records.
//! Pure logic: no I/O except reading the files a caller names.
//!
//! # Architecture notes
//!
//! Moved from ARCHITECTURE.md, which keeps the map; this is the detail.
//!
//! ## The crate
//!
//! `crates/model` — the record model. `parse` reads YAML 1.2 or JSON (duplicate keys,
//! alias bombs and oversized documents are refused) into typed `records`; `normalize`
//! brings durations to integer nanoseconds, timestamps to UTC and set-like lists to
//! sorted unique order; `jcs` is RFC 8785; `identity` computes object digests,
//! protocol/environment/correctness/comparison keys and serving cohort keys; `export`
//! reads catalog exports (`.jsonl` / `.jsonl.zst`); `verify` recomputes every digest and
//! key of an export. `parse::parse_json` is the one strict reader of JSON from outside (API bodies,
//! `ki verify`'s inputs); `escape` is the one escaper of control and bidi characters (terminal lines
//! of `ki` and the runner, every HTML, Atom and Markdown answer).
//!
//! ## Code map
//!
//! `model` (`ki_model`) — `records` (typed manifests, `Kind`), `parse` (YAML 1.2 / JSON with
//! limits), `identity` (`object_digest`, `benchmark_run_keys` → `BenchmarkRunKeys`,
//! `serving_run_keys`), `jcs`, `export` (`ExportReader`, `ExportLine`), `verify`
//! (`verify_export` → `VerifyReport`). `rows`: **the typed rows**, one serde type per export
//! table (`SourceRow` … `BenchmarkRunRow` … `ServingMeasurementRow`) and `Row` for any table;
//! the derived tables' constructors `WorkloadRow::new`, `BenchmarkRunRow::new` (from
//! manifests, keys and `RunFacts`) and `MeasurementRow::primary` are what every producer
//! calls. `folder_archive`: a runner output folder packed as one `.tar.zst` (fixtures/ keeps them so;
//! `ki catalog attach` and the tests read it as the folder). The one module each for dates (`utc`, on jiff), slugs (`slug`) and values with
//! units (`units`: `19.5 µs`), used by CLI and web alike. `search_text` (`SearchKind`,
//! `SearchText`): the text the search box looks in, per operation, implementation, project and
//! GPU — written once for the catalog's search index and the server's read model.
//! **Architecture invariant:** no I/O beyond files a caller names; no database, no HTTP.

// Canonical identity (JCS, digests, keys) and catalog-export reading/verification.
pub mod escape;
pub mod export;
pub mod folder_archive;
pub mod gpu;
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
