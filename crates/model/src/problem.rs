//! One thing wrong with a manifest, located by JSON pointer (and source position when known).

use std::fmt;

/// A 1-based line and column in the source text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Location {
    pub line: usize,
    pub column: usize,
}

/// A problem found while parsing, validating or normalizing a manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    /// 0-based index of the YAML document in its file; `None` for problems of the whole input.
    pub document: Option<usize>,
    /// RFC 6901 JSON pointer of the offending value ("" is the document root).
    pub pointer: String,
    pub message: String,
    pub location: Option<Location>,
}

impl Problem {
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Problem { document: None, pointer: pointer.into(), message: message.into(), location: None }
    }

    pub fn at(mut self, location: Option<Location>) -> Self {
        self.location = location;
        self
    }

    pub fn in_document(mut self, document: usize) -> Self {
        self.document = Some(document);
        self
    }

    /// The pointer as printed: the root is written `/` so that every line reads `FILE: /…: reason`.
    pub fn display_pointer(&self) -> &str {
        if self.pointer.is_empty() { "/" } else { &self.pointer }
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.display_pointer(), self.message)?;
        match (self.document, self.location) {
            (Some(d), Some(l)) if d > 0 => {
                write!(f, " (document {}, line {}, column {})", d + 1, l.line, l.column)
            }
            (Some(d), None) if d > 0 => write!(f, " (document {})", d + 1),
            (_, Some(l)) => write!(f, " (line {}, column {})", l.line, l.column),
            _ => Ok(()),
        }
    }
}

/// Appends `key` to a JSON pointer, escaping `~` and `/` as RFC 6901 requires.
pub fn child_pointer(parent: &str, key: &str) -> String {
    let mut out = String::with_capacity(parent.len() + key.len() + 1);
    out.push_str(parent);
    out.push('/');
    for c in key.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}
