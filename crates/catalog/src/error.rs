use std::fmt;

/// A problem with one row of a snapshot: where it is and what is wrong.
#[derive(Debug, Clone, PartialEq)]
pub struct RowProblem {
    /// 1-based line of the export the row came from.
    pub line: usize,
    pub table: String,
    /// JSON pointer into the export line, e.g. `/row/runDigest`.
    pub pointer: String,
    pub message: String,
}

impl fmt::Display for RowProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {} {}: {}", self.line, self.table, self.pointer, self.message)
    }
}

/// A row of a snapshot that clashes with what the catalog (or an earlier line of the
/// same snapshot) already holds: same key or same unique value, different content.
#[derive(Debug, Clone, PartialEq)]
pub struct Conflict {
    pub line: usize,
    pub table: &'static str,
    /// The row's key (`id`, or `operationId alias`).
    pub key: String,
    /// What clashes, e.g. `runDigest sha256:… is already held by row 01a0…`.
    pub reason: String,
}

impl fmt::Display for Conflict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {} row {}: {}", self.line, self.table, self.key, self.reason)
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("unsupported database URL {0:?}: use sqlite://PATH or postgres://USER@HOST[:PORT]/DATABASE")]
    Url(String),
    /// The driver's message is part of this one's, so the driver error is not also a
    /// `source` (an error chain printed whole would say it twice).
    #[error("{context}: {cause}")]
    Database { context: String, cause: sqlx::Error },
    #[error("{0}")]
    Migration(String),
    /// The snapshot failed digest/key verification; nothing was written.
    #[error("{origin}snapshot refused, nothing written: {mismatches} digest/key mismatch(es); first: {first}")]
    Verification { origin: String, mismatches: usize, first: String },
    /// A row is malformed; nothing was written.
    #[error("{origin}snapshot refused, nothing written: {problem}")]
    InvalidRow { origin: String, problem: Box<RowProblem> },
    /// Rows clash with the catalog; nothing was written.
    #[error("{origin}snapshot refused, nothing written: {count} conflicting row(s); first: {first}")]
    Conflicts { origin: String, count: usize, first: Box<Conflict>, conflicts: Vec<Conflict> },
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{0}")]
    Export(String),
    /// The snapshot file could not be read (the message names the file and line).
    #[error("snapshot refused, nothing written: {0}")]
    Snapshot(String),
    #[error("the catalog holds a row it cannot read back: {0}")]
    Corrupt(String),
    /// A correction or publication was refused before anything was written.
    #[error("refused, nothing written: {0}")]
    Refused(Refusal),
    /// A write with an API key was refused before anything was written.
    #[error("refused, nothing written: {0}")]
    KeyRefused(crate::access::KeyRefusal),
    /// Contents were refused before anything was written (a digest that does not match, a
    /// content over the limit, a file no row names).
    #[error("refused, nothing written: {0}")]
    ContentRefused(ContentRefusal),
}

/// Why a correction (or the record events a publication needs) was refused. Each names
/// the runs involved so the admin can see what to fix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("no benchmark run has the {role} {given:?} (give a run id or its sha256: run digest)")]
    UnknownRun { role: &'static str, given: String },
    #[error("the {0} must not be empty")]
    Empty(&'static str),
    #[error("no API key has the id or prefix {0:?}")]
    UnknownApiKey(String),
    #[error("no submission has the id {0:?}")]
    UnknownSubmission(String),
    #[error("the evidence URL {url:?} {reason}")]
    EvidenceUrl { url: String, reason: String },
    #[error("run {run} is already retracted (since {at}: {reason}); a retraction is made once")]
    AlreadyRetracted { run: String, at: String, reason: String },
    #[error("a run cannot supersede itself ({0})")]
    SameRun(String),
    #[error(
        "run {new} cannot supersede run {old}: they are in different comparison groups ({new_key} and {old_key}); only a run of the same operation, workload, protocol, environment, correctness rule and metric replaces another"
    )]
    DifferentComparisonKey { old: String, new: String, old_key: String, new_key: String },
    #[error("run {new} cannot supersede run {old}: {new} is not published")]
    SuccessorUnpublished { old: String, new: String },
    #[error("run {new} cannot supersede run {old}: {new} is retracted")]
    SuccessorRetracted { old: String, new: String },
    #[error("run {old} is already superseded by run {by}")]
    AlreadySuperseded { old: String, by: String },
    #[error("run {new} already supersedes run {other}; a run supersedes at most one run")]
    SuccessorTaken { new: String, other: String },
    #[error("run {new} cannot supersede run {old}: {old} supersedes {new}, and supersession cannot go in a circle")]
    Cycle { old: String, new: String },
    /// Record events are only appended; a change that would alter the stored history of
    /// a comparison group (rather than extend it) is refused.
    #[error(
        "this would rewrite the record history of comparison group {comparison_key}: the stored event {event} no longer follows from its runs, and record events are only ever appended"
    )]
    RewritesHistory { comparison_key: String, event: String },
    /// A Verified run (reproduced by KernelIndex) is published only with what traces it to
    /// a runner session: its environment manifest and its raw samples.
    #[error(
        "run {run} is marked reproduced by KernelIndex (Verified) but carries no {missing}; a Verified run is published only with its environment record and raw samples"
    )]
    UntraceableVerifiedRun { run: String, missing: &'static str },
}

pub type Result<T, E = CatalogError> = std::result::Result<T, E>;

/// Attaches what was being done to a database error.
pub(crate) trait DbContext<T> {
    fn context(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T> DbContext<T> for std::result::Result<T, sqlx::Error> {
    fn context(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|cause| CatalogError::Database { context: context(), cause })
    }
}

/// Why contents were refused; nothing was written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ContentRefusal {
    #[error("{origin}: {digest:?} is not a sha256 digest (\"sha256:\" and 64 lowercase hex digits)")]
    MalformedDigest { origin: String, digest: String },
    #[error("{origin}: its sha256 is {actual}, not {claimed} as the rows name it")]
    DigestMismatch { origin: String, claimed: String, actual: String },
    #[error("{origin} ({digest}): {size} bytes, over the content store's limit of {limit} bytes (16 MiB)")]
    TooLarge { origin: String, digest: String, size: u64, limit: usize },
    #[error("{origin}: {reason}")]
    Unreadable { origin: String, reason: String },
    #[error(
        "{origin}: its sha256 {digest} is not named by any row of the catalog (an implementation's source or an artifact)"
    )]
    NotNamed { origin: String, digest: String },
}
