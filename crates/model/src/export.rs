//! Reading catalog exports: JSONL, optionally Zstandard-compressed, one
//! `{"table": …, "row": {…}}` object per line.
//!
//! The reader streams (the 40,795-line export is 49 MB once decompressed), detects
//! compression by the zstd magic number rather than the file name, and names the file
//! and line of every problem. It holds at most one line of [`MAX_LINE_BYTES`] at a time,
//! so a file that is not an export (`/dev/zero`, a binary, a file without newlines) is
//! refused after a few bytes instead of being read into memory; an empty file is refused
//! too, since an export always holds rows. It checks each row's shape — a known table, an object
//! row, the columns that identity and cross-references need — but not the values of
//! those columns; [`crate::verify`] does that.

use std::fmt;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::jcs;

/// Every table an export may hold, in the order the public index writes them, with the
/// columns a row of it must have (other columns are allowed: later exports add some).
pub const TABLES: &[(&str, &[&str])] = &[
    ("sources", &["id", "slug"]),
    ("projects", &["id", "slug", "manifest"]),
    ("operations", &["id", "slug", "semanticDigest", "manifest"]),
    ("operation_aliases", &["operationId", "alias"]),
    ("workloads", &["id", "operationId", "workloadDigest", "manifest"]),
    ("implementations", &["id", "projectId", "operationId", "implementationDigest", "manifest"]),
    (
        "benchmark_runs",
        &[
            "id",
            "runDigest",
            "implementationId",
            "workloadId",
            "protocolKey",
            "environmentKey",
            "correctnessKey",
            "comparisonKey",
            "primaryMetric",
            "primaryStatistic",
            "primaryUnit",
            "primaryValue",
            "manifest",
        ],
    ),
    ("measurements", &["id", "runId", "metric", "statistic", "unit", "value"]),
    ("record_events", &["id", "comparisonKey", "runId"]),
    ("artifacts", &["id", "contentDigest"]),
    ("model_revisions", &["id", "modelDigest", "manifest"]),
    ("serving_stack_revisions", &["id", "stackDigest", "manifest"]),
    ("serving_configurations", &["id", "stackRevisionId", "configurationDigest", "manifest"]),
    ("serving_workloads", &["id", "workloadDigest", "manifest"]),
    (
        "serving_runs",
        &[
            "id",
            "runDigest",
            "modelRevisionId",
            "configurationId",
            "workloadId",
            "cohortKey",
            "protocolKey",
            "metricSetKey",
            "manifest",
        ],
    ),
    ("serving_measurements", &["id", "runId", "metric", "statistic", "unit", "value"]),
];

/// The columns a row of `table` must have, or `None` for a table exports never hold.
pub fn required_columns(table: &str) -> Option<&'static [&'static str]> {
    TABLES.iter().find(|(name, _)| *name == table).map(|(_, columns)| *columns)
}

/// The longest line an export may hold. The longest line of the public export is 9.4 KB
/// (a run row with its three manifests); a row carries at most one manifest, which
/// [`crate::parse::MAX_INPUT_BYTES`] caps at 1 MiB, plus its columns. 4 MiB leaves room for
/// any honest row and bounds what one line can make the reader allocate.
pub const MAX_LINE_BYTES: usize = 4 << 20;

/// One line of an export.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportLine {
    /// 1-based line number in the (decompressed) file.
    pub line: usize,
    pub table: String,
    pub row: Map<String, Value>,
}

impl ExportLine {
    /// The row's `id` column as text ("" when it has none, e.g. operation_aliases).
    pub fn id(&self) -> &str {
        self.row.get("id").and_then(Value::as_str).unwrap_or("")
    }
}

/// What went wrong reading an export, always naming the file and, past opening it, the line.
#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    // The io::Error is shown in the message and not chained as a source, so that
    // `{:#}` (anyhow) does not print it twice.
    #[error("{}: cannot open: {error}", path.display())]
    Open { path: PathBuf, error: io::Error },
    /// A read or decompression failure, e.g. a truncated zstd stream.
    #[error("{}:{line}: cannot read{}: {error}", path.display(), if *compressed { " the zstd stream" } else { "" })]
    Read { path: PathBuf, line: usize, compressed: bool, error: io::Error },
    #[error("{}:{line}: invalid JSON: {message}", path.display())]
    Json { path: PathBuf, line: usize, message: String },
    /// The reader stops here: what follows is not export text.
    #[error("{}:{line}: the line is longer than {MAX_LINE_BYTES} bytes (4 MiB): not a catalog export", path.display())]
    LineTooLong { path: PathBuf, line: usize },
    /// The reader stops here: JSON text never holds a NUL byte.
    #[error("{}:{line}: byte {column} is a NUL byte: not a catalog export (JSON lines)", path.display())]
    NulByte { path: PathBuf, line: usize, column: usize },
    #[error("{}:{line}: byte {column} is not UTF-8 text", path.display())]
    NotUtf8 { path: PathBuf, line: usize, column: usize },
    #[error("{}: empty: not a catalog export", path.display())]
    Empty { path: PathBuf },
    #[error("{}:{line}: {message}", path.display())]
    Shape { path: PathBuf, line: usize, message: String },
    #[error("{}:{line}: unknown table {table:?} (known: {})", path.display(), known_tables())]
    UnknownTable { path: PathBuf, line: usize, table: String },
    #[error("{}:{line}: {table} row lacks the required column {column:?}", path.display())]
    MissingColumn { path: PathBuf, line: usize, table: String, column: &'static str },
}

impl ExportError {
    /// The 1-based line the error is about (0 when the file could not be opened).
    pub fn line(&self) -> usize {
        match self {
            ExportError::Open { .. } | ExportError::Empty { .. } => 0,
            ExportError::Read { line, .. }
            | ExportError::Json { line, .. }
            | ExportError::LineTooLong { line, .. }
            | ExportError::NulByte { line, .. }
            | ExportError::NotUtf8 { line, .. }
            | ExportError::Shape { line, .. }
            | ExportError::UnknownTable { line, .. }
            | ExportError::MissingColumn { line, .. } => *line,
        }
    }
}

fn known_tables() -> String {
    TABLES.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ")
}

const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// Counts the bytes taken from the file, so a caller can show progress through it.
struct CountingReader<R> {
    inner: R,
    consumed: Arc<AtomicU64>,
}

impl<R: Read> Read for CountingReader<R> {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let count = self.inner.read(buffer)?;
        self.consumed.fetch_add(count as u64, Ordering::Relaxed);
        Ok(count)
    }
}

/// A streaming iterator over the lines of an export file.
///
/// Yields `Err` for a line that cannot be used and carries on with the next; a read or
/// decompression error ends the iteration.
pub struct ExportReader {
    path: PathBuf,
    source: Box<dyn BufRead + Send>,
    compressed: bool,
    file_len: u64,
    consumed: Arc<AtomicU64>,
    buffer: Vec<u8>,
    line: usize,
    /// Lines that held something; none by the end means the file is empty.
    data_lines: usize,
    finished: bool,
}

impl fmt::Debug for ExportReader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExportReader").field("path", &self.path).field("line", &self.line).finish_non_exhaustive()
    }
}

/// Opens an export (`.jsonl` or `.jsonl.zst`; compression is detected from the content).
pub fn open_export(path: impl AsRef<Path>) -> Result<ExportReader, ExportError> {
    let path = path.as_ref().to_path_buf();
    let open_error = |error| ExportError::Open { path: path.clone(), error };
    let file = File::open(&path).map_err(open_error)?;
    let file_len = file.metadata().map_err(open_error)?.len();
    export_reader(path, file, file_len)
}

/// Reads an export from any byte source, as [`open_export`] reads a file: `path` names it in
/// errors, `file_len` is its size for [`ExportReader::progress`].
pub fn export_reader(
    path: PathBuf,
    mut file: impl Read + Send + 'static,
    file_len: u64,
) -> Result<ExportReader, ExportError> {
    let open_error = |error| ExportError::Open { path: path.clone(), error };
    let mut magic = [0u8; 4];
    let mut filled = 0;
    while filled < magic.len() {
        match file.read(&mut magic[filled..]).map_err(open_error)? {
            0 => break,
            count => filled += count,
        }
    }
    let consumed = Arc::new(AtomicU64::new(filled as u64));
    let rest = CountingReader { inner: file, consumed: Arc::clone(&consumed) };
    let whole = io::Cursor::new(magic[..filled].to_vec()).chain(rest);
    let compressed = filled == 4 && magic == ZSTD_MAGIC;
    let source: Box<dyn BufRead + Send> = if compressed {
        let decoder = zstd::stream::read::Decoder::new(whole).map_err(open_error)?;
        Box::new(BufReader::with_capacity(1 << 17, decoder))
    } else {
        Box::new(BufReader::with_capacity(1 << 17, whole))
    };
    Ok(ExportReader {
        path,
        source,
        compressed,
        file_len,
        consumed,
        buffer: Vec::new(),
        line: 0,
        data_lines: 0,
        finished: false,
    })
}

/// Reads a whole export into memory, stopping at the first problem.
pub fn read_export(path: impl AsRef<Path>) -> Result<Vec<ExportLine>, ExportError> {
    open_export(path)?.collect()
}

impl ExportReader {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of the file consumed so far and the file's size (compressed bytes for a
    /// `.zst`), for a progress bar.
    pub fn progress(&self) -> (u64, u64) {
        (self.consumed.load(Ordering::Relaxed), self.file_len)
    }

    /// A handle on the consumed-bytes counter that stays valid while the reader is
    /// moved into another thread or consumed by an iterator adaptor.
    pub fn progress_counter(&self) -> Arc<AtomicU64> {
        Arc::clone(&self.consumed)
    }

    pub fn file_len(&self) -> u64 {
        self.file_len
    }

    /// The length in bytes of the line last read (with its newline).
    pub fn last_line_bytes(&self) -> usize {
        self.buffer.len()
    }

    fn parse_line(&self, text: &str) -> Result<ExportLine, ExportError> {
        let line = self.line;
        let path = || self.path.clone();
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Raw {
            table: String,
            row: Value,
        }
        let raw: Raw = serde_json::from_str(text).map_err(|error| ExportError::Json {
            path: path(),
            line,
            message: error.to_string(),
        })?;
        let Some(required) = required_columns(&raw.table) else {
            return Err(ExportError::UnknownTable { path: path(), line, table: raw.table });
        };
        let Value::Object(row) = raw.row else {
            return Err(ExportError::Shape {
                path: path(),
                line,
                message: format!("the row of a {} line must be a JSON object", raw.table),
            });
        };
        if let Some(column) = required.iter().find(|column| !row.contains_key(**column)) {
            return Err(ExportError::MissingColumn { path: path(), line, table: raw.table, column });
        }
        // A long integer literal would have been rounded on parsing and so would digest
        // differently from what the line says; refuse it rather than verify a changed row.
        if let Some(found) = jcs::find_unsafe_integer_literal(text) {
            return Err(ExportError::Shape {
                path: path(),
                line,
                message: format!("{found} (column {}); it would not survive canonicalization", found.offset + 1),
            });
        }
        Ok(ExportLine { line, table: raw.table, row })
    }
}

impl Iterator for ExportReader {
    type Item = Result<ExportLine, ExportError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if self.finished {
                return None;
            }
            self.line += 1;
            match self.read_line() {
                Ok(true) => {}
                Ok(false) => {
                    self.finished = true;
                    if self.data_lines == 0 {
                        return Some(Err(ExportError::Empty { path: self.path.clone() }));
                    }
                    return None;
                }
                Err(error) => {
                    self.finished = true;
                    return Some(Err(error));
                }
            }
            let text = match std::str::from_utf8(&self.buffer) {
                Ok(text) => text.trim_end_matches(['\n', '\r']),
                Err(error) => {
                    self.data_lines += 1;
                    let column = error.valid_up_to() + 1;
                    return Some(Err(ExportError::NotUtf8 { path: self.path.clone(), line: self.line, column }));
                }
            };
            // A final newline is normal; blank lines elsewhere carry nothing.
            if text.trim().is_empty() {
                continue;
            }
            self.data_lines += 1;
            return Some(self.parse_line(text));
        }
    }
}

impl ExportReader {
    /// Reads the next line (with its newline) into `buffer`, refusing one over
    /// [`MAX_LINE_BYTES`] or holding a NUL byte as soon as it shows. False at the end.
    fn read_line(&mut self) -> Result<bool, ExportError> {
        self.buffer.clear();
        loop {
            let available = match self.source.fill_buf() {
                Ok(available) => available,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => {
                    return Err(ExportError::Read {
                        path: self.path.clone(),
                        line: self.line,
                        compressed: self.compressed,
                        error,
                    });
                }
            };
            if available.is_empty() {
                return Ok(!self.buffer.is_empty());
            }
            let newline = available.iter().position(|&byte| byte == b'\n');
            let chunk = &available[..newline.map_or(available.len(), |end| end + 1)];
            if let Some(at) = chunk.iter().position(|&byte| byte == 0) {
                let column = self.buffer.len() + at + 1;
                return Err(ExportError::NulByte { path: self.path.clone(), line: self.line, column });
            }
            if self.buffer.len() + chunk.len() > MAX_LINE_BYTES {
                return Err(ExportError::LineTooLong { path: self.path.clone(), line: self.line });
            }
            self.buffer.extend_from_slice(chunk);
            let taken = chunk.len();
            self.source.consume(taken);
            if newline.is_some() {
                return Ok(true);
            }
        }
    }
}
