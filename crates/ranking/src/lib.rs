//! ranking-v1: the index's judgement on benchmark runs. Pure logic over export-format
//! rows (no I/O): eligibility, trust, deployability, dense ranks per comparison key,
//! the record-event ledger, resolve (fastest compatible kernels for a workload), run
//! dossiers and side-by-side comparison. Every answer is serde-serializable.
//!
//! Typical use: collect rows into [`CatalogRows`], build an [`Index`] once, then query.
//!
//! # Architecture notes
//!
//! Moved from ARCHITECTURE.md, which keeps the map; this is the detail.
//!
//! ## The crate
//!
//! `crates/ranking` — pure functions over export-format rows: no I/O, so it tests fast
//! and the server can hold it in memory. `reverify` plans re-verification (see below).
//!
//! ## Code map
//!
//! `ranking` (`ki_ranking`) — `Index` (built from `CatalogRows`, whose runs and measurements are
//! parsed as they are pushed, `rows::Parsed`; texts rows repeat are shared, `rows::Text` (one
//! pointer wide, the length beside the text) / `Interner`; runs found by id and digest, whole or by
//! prefix, through two sorted orders (`TextOrder`, a binary search; 4 bytes a run each); a run's id
//! and digest live in its row as the bytes they spell when they are a canonical UUID and
//! `sha256:` digest (`rows::HexText`: 24 and 40 bytes, other texts on the heap; ordered as text);
//! optional values are as wide as the value (`rows::OptionalNumber`, absent as NaN;
//! `OptionalCount`, absent as `i64::MIN`; `OptionalTimestamp`, absent as the instant `i64::MIN`,
//! which `Timestamp::parse` refuses); a run's `RunFacts` are 48 bytes (its reasons for being
//! unranked behind one thin pointer, rank and position in 8 bytes); protocol names and titles
//! are held once per distinct pair;
//! `facts`, `cohorts`; each workload's comparison groups with eligible runs, with the
//! hardware and framework its filters test (`MeasuredCohort`), so resolve never walks runs; lists per
//! workload or per run (runs, record events, measurements) are flat (`Groups`, 4 bytes a member) and
//! run titles and the sources' own ids share one buffer (`TextColumn`); of a run's manifest only
//! what ranking and listing read is taken as the row is pushed (`rows::RunManifestParts`), the
//! whole manifest kept as compact text unless the rows are `CatalogRows::without_run_manifests`
//! (a caller that reads them where the rows came from); timestamps keep their text only when it is
//! not the instant's export form (`rows::Timestamp::text`)),
//! `RunFacts`, `TrustLevel`, `Deployability`, `resolve` (`ResolveRequest` →
//! `ResolveResponse`; 10 comparison groups unless the request's `limit` asks for 1 to 50, the rest
//! counted; a case never measured answers the nearest measured cases on either side, each `NearestCase`
//! naming every axis that differs), `ledger` (`LedgerEvent`, `diff_ledger`), `views` (`RunSummary`,
//! `CohortView`, `Comparison`; the run page's dossier is the server's), `feed` (`list_runs`, `index_events`, `feed_page`: the run list
//! and the change feed with opaque cursors), `query` (`parse_search` → `SearchRequest`: the one
//! search grammar of words, `Filter`s and axes), `understand` (plain words → `Understood`: a
//! `Lexicon` of the catalog's names built once per read model reads GPU aliases, model spellings,
//! dtypes, loose axes and common names into the same `SearchRequest`, each as a removable `Chip`,
//! typos corrected per word against the whole lexicon with `strsim`), `forgiving` (`Index::read_request`,
//! `Index::resolve_read_at`: a resolve request's operation words, GPU, axis names and dtypes read with that
//! lexicon, what was read as what in `ResolveResponse::read_as`; `Index::lexicon` for a partial index), `lead` (`Index::resolve_lead`: what
//! a search's answer leads with — evidence filters applied, verified groups first, the nearest
//! measured workload). **Architecture invariant:** pure; depends only on `model`.

pub mod feed;
pub mod forgiving;
pub mod index;
pub mod lead;
pub mod ledger;
pub mod licence;
pub mod query;
pub mod rank;
pub mod resolve;
pub mod reverify;
pub mod rows;
pub mod time;
pub mod understand;
pub mod views;

pub use index::{Cohort, Deployability, DeployabilityReason, Index, LookupError, RankedEntry, RunFacts};
pub use ledger::{CohortLedgerMismatch, LedgerEvent, LedgerReport};
pub use licence::{LicenceVerdict, judge_licence};
pub use rank::{CohortProfile, Direction, Ineligibility, POLICY_VERSION, TrustLevel};
pub use resolve::{BatchSizeError, NearestCase, ResolveMode, ResolveRequest, ResolveResponse, Side};
pub use rows::{CatalogRows, RowError};
pub use time::Instant;
pub use views::{Caveat, CaveatKind, CohortView, CompareError, Comparison, KeyPart, RecordView, RunSummary};
