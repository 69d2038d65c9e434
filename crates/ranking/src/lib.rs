//! ranking-v1: the index's judgement on benchmark runs. Pure logic over export-format
//! rows (no I/O): eligibility, trust, deployability, dense ranks per comparison key,
//! the record-event ledger, resolve (fastest compatible kernels for a workload), run
//! dossiers and side-by-side comparison. Every answer is serde-serializable.
//!
//! Typical use: collect rows into [`CatalogRows`], build an [`Index`] once, then query.

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
pub use views::{
    Caveat, CaveatKind, CohortView, CompareError, Comparison, KeyPart, RecordView, RunDossier, RunSummary,
};
