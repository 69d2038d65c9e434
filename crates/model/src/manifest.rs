//! The front door for untrusted manifests: parse → schema check → normalize → typed record →
//! digest, with every problem reported by JSON pointer and source position.
//!
//! A file may hold several YAML documents (`---`), each checked on its own. A document is either
//! one manifest (it has `kind`) or a submission bundle, the format of
//! `registry/submissions/example-fixture.yaml`: a mapping of `projects`, `operations`,
//! `workloads` (lists of manifests), `implementations` (`{projectSlug, manifest}`) and `runs`
//! (`{run, protocol, environment}`). In a bundle each run's `protocolDigest` and
//! `environmentDigest` must be the digests of the protocol and environment given with it; its
//! other references may name records already in the catalog, so they are not required to be in
//! the bundle. A file is valid only when every manifest in it is; an empty file is an error.

use std::io::Read;
use std::path::Path;

use serde_json::Value;

use crate::identity::object_digest;
use crate::normalize::normalize;
use crate::parse::{MAX_INPUT_BYTES, nul_byte_problem, parse_documents_with};
use crate::problem::Problem;
use crate::records::{Kind, Manifest};
use crate::schema::check_manifest;

/// A manifest that passed every check.
#[derive(Debug, Clone)]
pub struct ValidManifest {
    /// 0-based position of the document in its file.
    pub document: usize,
    /// JSON pointer of the manifest inside its document: "" for a plain manifest,
    /// e.g. `/runs/0/protocol` inside a bundle.
    pub pointer: String,
    pub kind: Kind,
    /// The normalized manifest as JSON (what is digested and stored).
    pub value: Value,
    /// The same manifest, typed.
    pub record: Manifest,
    /// `sha256:<hex>` of JCS({apiVersion, kind, spec}) of the normalized manifest.
    pub digest: String,
}

/// Parses and validates every manifest in `bytes` (YAML 1.2 or JSON, one or more documents).
/// Returns all manifests, or every problem of every document.
pub fn parse_manifests(bytes: &[u8]) -> Result<Vec<ValidManifest>, Vec<Problem>> {
    // Positions are recorded only on a second pass, when there are problems to locate.
    // Parsing problems are re-read with positions so that a duplicate key names its first line.
    let documents =
        parse_documents_with(bytes, false).map_err(|fast| parse_documents_with(bytes, true).err().unwrap_or(fast))?;
    if documents.is_empty() {
        return Err(vec![Problem::new("", "no manifest: the input holds no YAML or JSON document")]);
    }
    let mut valid = Vec::new();
    let mut problems = Vec::new();
    // Empty documents (`---` alone, or `null`) are one problem together, however many: a file
    // of 200,000 `---` lines gets one line, not one per document.
    let empty: Vec<usize> = documents.iter().filter(|doc| doc.value.is_null()).map(|doc| doc.index).collect();
    if let Some(&first) = empty.first() {
        let message = match empty.len() {
            1 => "empty document: every document must hold a manifest".to_string(),
            n => format!(
                "{n} empty documents (the first is document {}): every document must hold a manifest",
                first + 1
            ),
        };
        problems.push(Problem::new("", message).in_document(first));
    }
    for doc in documents.into_iter().filter(|doc| !doc.value.is_null()) {
        let mut found = Vec::new();
        for (pointer, expected, value) in manifests_of_document(doc.value, &mut found) {
            match validate_value(value) {
                Ok(mut m) if expected.is_none_or(|kinds| kinds.contains(&m.kind)) => {
                    m.document = doc.index;
                    m.pointer = pointer;
                    valid.push(m);
                }
                Ok(m) => {
                    let names: Vec<&str> = expected.unwrap_or_default().iter().map(|k| k.name()).collect();
                    found.push(Problem::new(
                        format!("{pointer}/kind"),
                        format!("expected {} here, got {}", names.join(" or "), m.kind),
                    ));
                }
                Err(inner) => {
                    found.extend(inner.into_iter().map(|p| Problem { pointer: format!("{pointer}{}", p.pointer), ..p }))
                }
            }
        }
        if found.is_empty() {
            check_bundle_pairs(valid.iter().filter(|m| m.document == doc.index), &mut found);
        }
        problems.extend(found.into_iter().map(|p| p.in_document(doc.index)));
    }
    if problems.is_empty() {
        return Ok(valid);
    }
    if let Ok(located_documents) = parse_documents_with(bytes, true) {
        for p in problems.iter_mut().filter(|p| p.location.is_none()) {
            let map = p.document.and_then(|d| located_documents.get(d)).map(|d| &d.source_map);
            p.location = map.and_then(|m| m.locate(&p.pointer));
        }
    }
    Err(problems)
}

/// The sections of a submission bundle and the kinds each may hold.
const BUNDLE_SECTIONS: [(&str, &[Kind]); 5] = [
    ("projects", &[Kind::SoftwareProject]),
    ("operations", &[Kind::OperationSpec]),
    ("workloads", &[Kind::WorkloadCase, Kind::WorkloadSuite]),
    ("implementations", &[Kind::ImplementationRevision]),
    ("runs", &[Kind::BenchmarkRun, Kind::BenchmarkProtocol, Kind::ExecutionEnvironment]),
];

type Slot = (String, Option<&'static [Kind]>, Value);

/// Splits a document into its manifests: itself, or the members of a bundle (with the kinds
/// allowed at each place). Problems with the bundle's own shape go to `problems`.
fn manifests_of_document(document: Value, problems: &mut Vec<Problem>) -> Vec<Slot> {
    let Value::Object(map) = document else {
        return vec![(String::new(), None, document)];
    };
    let is_bundle = !map.contains_key("kind")
        && !map.contains_key("apiVersion")
        && map.keys().any(|k| BUNDLE_SECTIONS.iter().any(|(s, _)| s == k));
    if !is_bundle {
        return vec![(String::new(), None, Value::Object(map))];
    }
    let mut slots = Vec::new();
    for (section, entries) in map {
        let Some(&(_, kinds)) = BUNDLE_SECTIONS.iter().find(|(s, _)| *s == section) else {
            let names: Vec<&str> = BUNDLE_SECTIONS.iter().map(|(s, _)| *s).collect();
            problems.push(Problem::new(
                format!("/{section}"),
                format!("unknown bundle section {section:?}; allowed: {}", names.join(", ")),
            ));
            continue;
        };
        let Value::Array(entries) = entries else {
            problems.push(Problem::new(format!("/{section}"), "a bundle section must be a list"));
            continue;
        };
        for (i, entry) in entries.into_iter().enumerate() {
            let at = format!("/{section}/{i}");
            match section.as_str() {
                "implementations" => {
                    let mut parts = take_fields(entry, &at, &["projectSlug", "manifest"], &["manifest"], problems);
                    if let Some(slug) = parts.remove("projectSlug")
                        && !slug.is_string()
                    {
                        problems.push(Problem::new(format!("{at}/projectSlug"), "expected string"));
                    }
                    if let Some(m) = parts.remove("manifest") {
                        slots.push((format!("{at}/manifest"), Some(kinds), m));
                    }
                }
                "runs" => {
                    let fields = ["run", "protocol", "environment"];
                    let mut parts = take_fields(entry, &at, &fields, &fields, problems);
                    for (field, kind) in [
                        ("run", &[Kind::BenchmarkRun]),
                        ("protocol", &[Kind::BenchmarkProtocol]),
                        ("environment", &[Kind::ExecutionEnvironment]),
                    ] {
                        if let Some(m) = parts.remove(field) {
                            slots.push((format!("{at}/{field}"), Some(kind as &'static [Kind]), m));
                        }
                    }
                }
                _ => slots.push((at, Some(kinds), entry)),
            }
        }
    }
    slots
}

/// The fields of a bundle entry, checking it is a mapping with only `allowed` and all `required`.
fn take_fields(
    entry: Value,
    at: &str,
    allowed: &[&str],
    required: &[&str],
    problems: &mut Vec<Problem>,
) -> serde_json::Map<String, Value> {
    let Value::Object(map) = entry else {
        problems.push(Problem::new(at, format!("expected a mapping with {}", allowed.join(", "))));
        return serde_json::Map::new();
    };
    for key in map.keys().filter(|k| !allowed.contains(&k.as_str())) {
        problems.push(Problem::new(
            crate::problem::child_pointer(at, key),
            format!("unknown field {key:?}; allowed fields: {}", allowed.join(", ")),
        ));
    }
    for name in required.iter().filter(|n| !map.contains_key(**n)) {
        problems.push(Problem::new(format!("{at}/{name}"), "required field is missing"));
    }
    map
}

/// In a bundle, a run names the digests of the protocol and environment given beside it.
fn check_bundle_pairs<'a>(manifests: impl Iterator<Item = &'a ValidManifest>, problems: &mut Vec<Problem>) {
    let manifests: Vec<&ValidManifest> = manifests.collect();
    for run in manifests.iter().filter(|m| m.kind == Kind::BenchmarkRun && m.pointer.ends_with("/run")) {
        let base = run.pointer.trim_end_matches("/run");
        for (field, partner) in [("protocolDigest", "protocol"), ("environmentDigest", "environment")] {
            let partner_pointer = format!("{base}/{partner}");
            let Some(given) = manifests.iter().find(|m| m.pointer == partner_pointer) else { continue };
            let named = run.value.pointer(&format!("/spec/{field}")).and_then(Value::as_str).unwrap_or_default();
            if named != given.digest {
                problems.push(Problem::new(
                    format!("{}/spec/{field}", run.pointer),
                    format!(
                        "names {named}, but the {partner} given with this run ({partner_pointer}) has digest {}",
                        given.digest
                    ),
                ));
            }
        }
    }
}

/// Like [`parse_manifests`] but requires exactly one document (an upload of one manifest).
pub fn parse_manifest(bytes: &[u8]) -> Result<ValidManifest, Vec<Problem>> {
    let mut all = parse_manifests(bytes)?;
    if all.len() != 1 {
        return Err(vec![Problem::new("", format!("expected one manifest, found {} documents", all.len()))]);
    }
    Ok(all.remove(0))
}

/// Validates a manifest that is already JSON (an export row, a request body parsed elsewhere).
/// Duplicate keys cannot be seen here: `Value` has already merged them.
pub fn validate_value(mut value: Value) -> Result<ValidManifest, Vec<Problem>> {
    let problems = check_manifest(&value);
    if !problems.is_empty() {
        return Err(problems);
    }
    // check_manifest has verified `kind` names one of the 13 kinds.
    let kind = value
        .get("kind")
        .and_then(Value::as_str)
        .and_then(Kind::from_name)
        .ok_or_else(|| vec![Problem::new("/kind", "unknown kind")])?;
    let problems = normalize(kind, &mut value);
    if !problems.is_empty() {
        return Err(problems);
    }
    let record = Manifest::from_value(&value)
        .map_err(|e| vec![Problem::new("", format!("does not fit the {kind} record: {e}"))])?;
    let digest = object_digest(&value).map_err(|e| vec![Problem::new("", format!("cannot digest: {e}"))])?;
    Ok(ValidManifest { document: 0, pointer: String::new(), kind, value, record, digest })
}

/// Reads and validates a manifest file, refusing one over 1 MiB without reading it all.
pub fn read_manifest_file(path: &Path) -> Result<Vec<ValidManifest>, Vec<Problem>> {
    let io_problem = |e: std::io::Error| vec![Problem::new("", format!("cannot read the file: {e}"))];
    let file = std::fs::File::open(path).map_err(io_problem)?;
    let mut bytes = Vec::new();
    // One byte past the limit is enough to know the input is too large.
    file.take(MAX_INPUT_BYTES as u64 + 1).read_to_end(&mut bytes).map_err(io_problem)?;
    // Binary input is named as such before its size: `/dev/zero` is NUL bytes, not "too long".
    if let Some(problem) = nul_byte_problem(&bytes) {
        return Err(vec![problem]);
    }
    if bytes.len() > MAX_INPUT_BYTES {
        // Only a regular file's metadata gives its size (a device or a pipe says 0).
        let message = match std::fs::metadata(path) {
            Ok(metadata) if metadata.is_file() => {
                format!("input is {} bytes; the limit is {MAX_INPUT_BYTES} bytes (1 MiB)", metadata.len())
            }
            _ => format!("input is longer than the limit of {MAX_INPUT_BYTES} bytes (1 MiB)"),
        };
        return Err(vec![Problem::new("", message)]);
    }
    parse_manifests(&bytes)
}
