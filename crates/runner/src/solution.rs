//! FlashInfer-Bench Solutions: the intake of `ki verify`.
//!
//! A Solution (FlashInfer-Bench `docs/flashinfer-trace/solution.mdx`) names its definition, its
//! language, its entry point `file::function` and carries its source files inline. Two schemas are
//! read:
//! * current: `spec.language` lower case (`python`, `triton`, `cuda`, `cpp`), optional
//!   `destination_passing_style` (default true: outputs preallocated and passed last) and `binding`
//!   (`tvm-ffi` default, or `torch`);
//! * legacy (2025): `spec.language` capitalised (`"Python"`) and/or `spec.build_commands`; outputs are
//!   returned (no destination passing).
//!
//! When a current-schema solution leaves `destination_passing_style` out, the worker applies the
//! schema's default unless the entry point's own signature takes exactly the inputs and no more, in
//! which case it is called value-returning and the record says so (many published solutions were
//! written that way before the field existed).
//!
//! Intake refuses a document with a clear `FILE: /json/pointer: reason`, and nothing is written for
//! it. Reads are bounded (`MAX_SOLUTION_BYTES`), paths are relative and stay inside the solution.
//!
//! The source digest covers everything that decides what runs: `sha256(JCS({"language", "binding",
//! "entryPoint", "destinationPassingStyle", "sources": [{"path", "content"}] sorted by path}))`.
use std::path::Path;

use serde_json::{Map, Value, json};

/// The largest Solution file intake reads.
pub const MAX_SOLUTION_BYTES: u64 = 16 << 20;
/// The most source files one Solution may carry.
pub const MAX_SOURCES: usize = 256;

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Language {
    Python,
    Triton,
    Cuda,
    Cpp,
}

impl Language {
    pub fn as_str(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Triton => "triton",
            Language::Cuda => "cuda",
            Language::Cpp => "cpp",
        }
    }

    /// Built with torch's extension builder before it can run.
    pub fn is_compiled(self) -> bool {
        matches!(self, Language::Cuda | Language::Cpp)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Schema {
    Current,
    Legacy,
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SourceFile {
    pub path: String,
    pub content: String,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Solution {
    pub name: String,
    pub definition: String,
    pub description: Option<String>,
    pub author: String,
    pub schema: Schema,
    pub language: Language,
    pub target_hardware: Vec<String>,
    pub entry_file: String,
    pub entry_function: String,
    /// As declared; None when the document leaves it out (see the module docs). Legacy: Some(false).
    pub destination_passing_style: Option<bool>,
    pub binding: Option<String>,
    pub dependencies: Vec<String>,
    pub sources: Vec<SourceFile>,
    /// `sha256:<hex>` of the source bundle (module docs).
    pub source_digest: String,
}

/// Why a document was refused at intake: the file, a JSON pointer into it, the reason.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{file}: {pointer}: {reason}")]
pub struct IntakeError {
    pub file: String,
    pub pointer: String,
    pub reason: String,
}

fn refuse(file: &str, pointer: &str, reason: impl Into<String>) -> IntakeError {
    IntakeError { file: file.to_string(), pointer: pointer.to_string(), reason: reason.into() }
}

fn string<'a>(object: &'a Map<String, Value>, key: &str, at: &str, file: &str) -> Result<&'a str, IntakeError> {
    match object.get(key) {
        Some(Value::String(s)) => Ok(s),
        Some(other) => Err(refuse(file, &format!("{at}/{key}"), format!("must be a string, found {}", kind_of(other)))),
        None => Err(refuse(file, &format!("{at}/{key}"), "is missing")),
    }
}

fn optional_string(
    object: &Map<String, Value>,
    key: &str,
    at: &str,
    file: &str,
) -> Result<Option<String>, IntakeError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(refuse(file, &format!("{at}/{key}"), format!("must be a string, found {}", kind_of(other)))),
    }
}

fn string_list(object: &Map<String, Value>, key: &str, at: &str, file: &str) -> Result<Vec<String>, IntakeError> {
    match object.get(key) {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| {
                v.as_str().map(str::to_string).ok_or_else(|| {
                    refuse(file, &format!("{at}/{key}/{i}"), format!("must be a string, found {}", kind_of(v)))
                })
            })
            .collect(),
        Some(other) => {
            Err(refuse(file, &format!("{at}/{key}"), format!("must be an array of strings, found {}", kind_of(other))))
        }
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn identifier(text: &str) -> bool {
    let mut chars = text.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A relative path that stays inside the solution's folder.
fn safe_relative_path(path: &str) -> Result<(), &'static str> {
    if path.is_empty() || path.len() > 255 {
        return Err("must be 1 to 255 bytes long");
    }
    if path.starts_with('/') || path.contains('\\') || path.contains('\0') {
        return Err("must be a relative path with '/' separators");
    }
    if path.split('/').any(|part| part.is_empty() || part == "." || part == "..") {
        return Err("must not contain empty, '.' or '..' components");
    }
    if !path.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | '/')) {
        return Err("may hold only ASCII letters, digits, '_', '-', '.' and '/'");
    }
    Ok(())
}

impl Solution {
    /// Reads and validates one Solution file (bounded read).
    pub fn read(path: &Path) -> Result<Solution, IntakeError> {
        use std::io::Read;
        let file = path.display().to_string();
        let handle = std::fs::File::open(path).map_err(|e| refuse(&file, "", format!("cannot be read: {e}")))?;
        let mut bytes = Vec::new();
        handle
            .take(MAX_SOLUTION_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| refuse(&file, "", format!("cannot be read: {e}")))?;
        if bytes.len() as u64 > MAX_SOLUTION_BYTES {
            return Err(refuse(&file, "", format!("is larger than {MAX_SOLUTION_BYTES} bytes")));
        }
        Solution::parse(&bytes, &file)
    }

    /// Parses and validates Solution JSON; `file` names the document in errors.
    pub fn parse(bytes: &[u8], file: &str) -> Result<Solution, IntakeError> {
        let value: Value = serde_json::from_slice(bytes)
            .map_err(|e| refuse(file, "", format!("not valid JSON (line {} column {}): {e}", e.line(), e.column())))?;
        let root = value.as_object().ok_or_else(|| refuse(file, "", "a Solution must be a JSON object"))?;
        let name = string(root, "name", "", file)?;
        if name.trim().is_empty() || name.len() > 200 {
            return Err(refuse(file, "/name", "must be 1 to 200 characters"));
        }
        let definition = string(root, "definition", "", file)?;
        if definition.is_empty()
            || definition.len() > 200
            || !definition.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        {
            return Err(refuse(file, "/definition", "must be a definition name (letters, digits, '_', '-', '.')"));
        }
        let author = string(root, "author", "", file)?;
        let description = optional_string(root, "description", "", file)?;
        let spec = match root.get("spec") {
            Some(Value::Object(spec)) => spec,
            Some(other) => return Err(refuse(file, "/spec", format!("must be an object, found {}", kind_of(other)))),
            None => return Err(refuse(file, "/spec", "is missing")),
        };
        let language_text = string(spec, "language", "/spec", file)?;
        let language = match language_text.to_ascii_lowercase().as_str() {
            "python" => Language::Python,
            "triton" => Language::Triton,
            "cuda" => Language::Cuda,
            "cpp" | "c++" => Language::Cpp,
            other => {
                return Err(refuse(
                    file,
                    "/spec/language",
                    format!("`{other}` is not one of python, triton, cuda, cpp"),
                ));
            }
        };
        let legacy_language = language_text.chars().next().is_some_and(|c| c.is_ascii_uppercase());
        let build_commands = string_list(spec, "build_commands", "/spec", file)?;
        if !build_commands.is_empty() {
            return Err(refuse(file, "/spec/build_commands", "build commands are not run by this runner"));
        }
        let schema =
            if legacy_language || spec.contains_key("build_commands") { Schema::Legacy } else { Schema::Current };
        let target_hardware = match spec.get("target_hardware") {
            None => return Err(refuse(file, "/spec/target_hardware", "is missing")),
            Some(_) => string_list(spec, "target_hardware", "/spec", file)?,
        };
        let entry_point = string(spec, "entry_point", "/spec", file)?;
        let (entry_file, entry_function) = entry_point.rsplit_once("::").ok_or_else(|| {
            refuse(file, "/spec/entry_point", format!("`{entry_point}` is not of the form file::function"))
        })?;
        safe_relative_path(entry_file).map_err(|why| refuse(file, "/spec/entry_point", format!("the file {why}")))?;
        if !identifier(entry_function) {
            return Err(refuse(file, "/spec/entry_point", format!("`{entry_function}` is not a function name")));
        }
        let destination_passing_style = match spec.get("destination_passing_style") {
            None | Some(Value::Null) => (schema == Schema::Legacy).then_some(false),
            Some(Value::Bool(b)) => Some(*b),
            Some(other) => {
                return Err(refuse(
                    file,
                    "/spec/destination_passing_style",
                    format!("must be a boolean, found {}", kind_of(other)),
                ));
            }
        };
        let binding = optional_string(spec, "binding", "/spec", file)?;
        if language.is_compiled() {
            match binding.as_deref() {
                Some("torch") => {}
                Some("tvm-ffi") | None => {
                    return Err(refuse(
                        file,
                        "/spec/binding",
                        "tvm-ffi (the default) is not supported by this runner: only binding \"torch\" is built",
                    ));
                }
                Some(other) => return Err(refuse(file, "/spec/binding", format!("`{other}` is not tvm-ffi or torch"))),
            }
        }
        let dependencies = string_list(spec, "dependencies", "/spec", file)?;
        let sources = match root.get("sources") {
            Some(Value::Array(items)) => items,
            Some(other) => return Err(refuse(file, "/sources", format!("must be an array, found {}", kind_of(other)))),
            None => return Err(refuse(file, "/sources", "is missing")),
        };
        if sources.is_empty() || sources.len() > MAX_SOURCES {
            return Err(refuse(file, "/sources", format!("must hold 1 to {MAX_SOURCES} files")));
        }
        let mut files: Vec<SourceFile> = Vec::with_capacity(sources.len());
        for (i, item) in sources.iter().enumerate() {
            let at = format!("/sources/{i}");
            let object =
                item.as_object().ok_or_else(|| refuse(file, &at, "must be an object with path and content"))?;
            let path = string(object, "path", &at, file)?;
            safe_relative_path(path).map_err(|why| refuse(file, &format!("{at}/path"), why))?;
            let content = string(object, "content", &at, file)?;
            if files.iter().any(|f| f.path == path) {
                return Err(refuse(file, &format!("{at}/path"), format!("`{path}` appears twice")));
            }
            files.push(SourceFile { path: path.to_string(), content: content.to_string() });
        }
        if !files.iter().any(|f| f.path == entry_file) {
            return Err(refuse(file, "/spec/entry_point", format!("the file `{entry_file}` is not among /sources")));
        }
        let mut solution = Solution {
            name: name.to_string(),
            definition: definition.to_string(),
            description,
            author: author.to_string(),
            schema,
            language,
            target_hardware,
            entry_file: entry_file.to_string(),
            entry_function: entry_function.to_string(),
            destination_passing_style,
            binding,
            dependencies,
            sources: files,
            source_digest: String::new(),
        };
        solution.source_digest = solution.compute_digest().map_err(|e| refuse(file, "", e))?;
        Ok(solution)
    }

    fn compute_digest(&self) -> Result<String, String> {
        let mut sources: Vec<&SourceFile> = self.sources.iter().collect();
        sources.sort_by(|a, b| a.path.cmp(&b.path));
        let bundle = json!({
            "language": self.language.as_str(),
            "binding": self.binding,
            "entryPoint": format!("{}::{}", self.entry_file, self.entry_function),
            "destinationPassingStyle": self.destination_passing_style,
            "sources": sources.iter().map(|s| json!({"path": s.path, "content": s.content})).collect::<Vec<_>>(),
        });
        let canonical = ki_model::jcs::canonicalize(&bundle).map_err(|e| format!("canonicalizing the sources: {e}"))?;
        Ok(ki_model::identity::sha256_digest(canonical.as_bytes()))
    }

    /// The source bundle as one JSON document (the artifact pages show), canonical and digested.
    pub fn artifact(&self) -> Value {
        let mut sources: Vec<&SourceFile> = self.sources.iter().collect();
        sources.sort_by(|a, b| a.path.cmp(&b.path));
        json!({
            "name": self.name,
            "definition": self.definition,
            "author": self.author,
            "description": self.description,
            "spec": {
                "language": self.language.as_str(),
                "binding": self.binding,
                "entry_point": format!("{}::{}", self.entry_file, self.entry_function),
                "destination_passing_style": self.destination_passing_style,
                "target_hardware": self.target_hardware,
                "dependencies": self.dependencies,
            },
            "sources": sources.iter().map(|s| json!({"path": s.path, "content": s.content})).collect::<Vec<_>>(),
            "sourceDigest": self.source_digest,
        })
    }

    /// Writes the sources under `dir` (created), for the builder or the Python worker.
    pub fn write_sources(&self, dir: &Path) -> std::io::Result<()> {
        for source in &self.sources {
            let path = dir.join(&source.path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)?;
            }
            std::fs::write(path, &source.content)?;
        }
        Ok(())
    }

    /// A short lower-case name for files and manifests: the name's slug and the digest's first hex.
    pub fn short_name(&self) -> String {
        let slug: String = self
            .name
            .to_ascii_lowercase()
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '-' })
            .collect();
        let slug = slug.trim_matches('-').chars().take(120).collect::<String>();
        format!("{slug}-{}", &self.source_digest[7..15])
    }
}
