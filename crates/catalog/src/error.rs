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
    #[error("{context}: {source}")]
    Database {
        context: String,
        #[source]
        source: sqlx::Error,
    },
    #[error("{0}")]
    Migration(String),
    /// The snapshot failed digest/key verification; nothing was written.
    #[error("{origin}snapshot refused, nothing written: {mismatches} digest/key mismatch(es); first: {first}")]
    Verification { origin: String, mismatches: usize, first: String },
    /// A row is malformed; nothing was written.
    #[error("{origin}snapshot refused, nothing written: {problem}")]
    InvalidRow { origin: String, problem: RowProblem },
    /// Rows clash with the catalog; nothing was written.
    #[error("{origin}snapshot refused, nothing written: {count} conflicting row(s); first: {first}")]
    Conflicts { origin: String, count: usize, first: Conflict, conflicts: Vec<Conflict> },
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
}

pub type Result<T, E = CatalogError> = std::result::Result<T, E>;

/// Attaches what was being done to a database error.
pub(crate) trait DbContext<T> {
    fn context(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T> DbContext<T> for std::result::Result<T, sqlx::Error> {
    fn context(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| CatalogError::Database { context: context(), source })
    }
}
