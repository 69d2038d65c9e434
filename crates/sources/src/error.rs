//! Errors that name the file, the line and the JSON pointer of what is wrong.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// One problem with a source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceError {
    pub file: PathBuf,
    /// 1-based line in `file`, when known.
    pub line: Option<usize>,
    /// RFC 6901 pointer inside the JSON document (for JSONL: inside that line's record).
    pub pointer: String,
    pub message: String,
}

impl fmt::Display for SourceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        let pointer = if self.pointer.is_empty() { "/" } else { &self.pointer };
        write!(f, ": {pointer}: {}", self.message)
    }
}

impl std::error::Error for SourceError {}

/// Every problem found in a data set; an import with any of them writes nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceErrors(pub Vec<SourceError>);

impl fmt::Display for SourceErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (index, error) in self.0.iter().enumerate() {
            if index > 0 {
                writeln!(f)?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SourceErrors {}

/// Where a JSON value came from, so that a problem found while walking it can name its line.
#[derive(Debug, Clone)]
pub struct Origin {
    file: Arc<PathBuf>,
    kind: OriginKind,
}

#[derive(Debug, Clone)]
enum OriginKind {
    /// One line of a JSONL file: every problem in it is on that line.
    Line(usize),
    /// A whole JSON file: the line of a pointer is looked up in the text when needed.
    Document(Arc<String>),
    /// No text at all (e.g. a directory layout problem).
    File,
}

impl Origin {
    pub fn line(file: &Path, line: usize) -> Self {
        Origin { file: Arc::new(file.to_path_buf()), kind: OriginKind::Line(line) }
    }

    pub fn document(file: &Path, text: String) -> Self {
        Origin { file: Arc::new(file.to_path_buf()), kind: OriginKind::Document(Arc::new(text)) }
    }

    pub fn file(file: &Path) -> Self {
        Origin { file: Arc::new(file.to_path_buf()), kind: OriginKind::File }
    }

    pub fn path(&self) -> &Path {
        &self.file
    }

    /// The 1-based line of this record (JSONL) or of the node at `pointer` (JSON file).
    pub fn line_of(&self, pointer: &str) -> Option<usize> {
        match &self.kind {
            OriginKind::Line(line) => Some(*line),
            OriginKind::File => None,
            // Parsing again only on the error path keeps the normal path a plain serde_json
            // parse; the record model's parser keeps a position for every node.
            OriginKind::Document(text) => ki_model::parse::parse_str(text)
                .ok()
                .and_then(|documents| documents.into_iter().next())
                .and_then(|document| document.source_map.locate(pointer))
                .map(|location| location.line),
        }
    }

    pub fn error(&self, pointer: impl Into<String>, message: impl Into<String>) -> SourceError {
        let pointer = pointer.into();
        SourceError { file: self.file.to_path_buf(), line: self.line_of(&pointer), pointer, message: message.into() }
    }
}
