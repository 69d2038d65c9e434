//! Typed views of export-format rows (camelCase columns, as `ki catalog export` writes them).
//!
//! Unknown columns are ignored on purpose: newer snapshots add columns (`solScore`,
//! `implementations.role`, `projects.kind`) and the ranking must still read older and
//! newer rows alike. Missing required columns and wrong types are errors naming the
//! table, the row's line (when known) and the JSON pointer of the field.
//!
//! Sources, projects, operations, aliases, workloads, implementations and artifacts are the
//! record model's rows ([`ki_model::rows`]), the types every writer builds. The run tables
//! (runs, measurements, record events) are held here in compact forms: a million runs are
//! most of the index, and a run row of interned texts takes 296 bytes where the writer's
//! row, its manifests inside, takes 752.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::time::Instant;

/// The tables every writer and reader shares (the run tables below are the index's compact forms).
pub use ki_model::rows::{
    ArtifactRow, ImplementationRow, OperationAliasRow, OperationRow, ProjectRow, SourceRow, WorkloadRow,
};

/// Where a row came from, so that errors can point at it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct RowOrigin {
    /// 1-based line in the export file, when the row came from one.
    pub line: Option<u64>,
}

#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum RowError {
    #[error("{location}: {pointer}: {message}")]
    InvalidField { location: String, pointer: String, message: String },
    #[error("{location}: duplicate id {id} in {table}")]
    DuplicateId { location: String, table: String, id: String },
    #[error("{location}: {pointer}: refers to {target} {value}, which is not in the catalog")]
    DanglingReference { location: String, pointer: String, target: String, value: String },
}

pub(crate) fn describe_location(table: &str, index: usize, origin: RowOrigin, id: Option<&str>) -> String {
    let mut out = match origin.line {
        Some(line) => format!("line {line} ({table} row {})", index + 1),
        None => format!("{table} row {}", index + 1),
    };
    if let Some(id) = id {
        out.push_str(&format!(" id {id}"));
    }
    out
}

/// All rows the ranking reads, grouped by table, each parsed into its typed row as it is
/// pushed: a catalog streamed in is never held whole as JSON maps (kilobytes a row).
#[derive(Debug, Clone)]
pub struct CatalogRows {
    pub(crate) sources: Parsed<SourceRow>,
    pub(crate) projects: Parsed<ProjectRow>,
    pub(crate) operations: Parsed<OperationRow>,
    pub(crate) operation_aliases: Parsed<OperationAliasRow>,
    pub(crate) workloads: Parsed<WorkloadRow>,
    pub(crate) implementations: Parsed<ImplementationRow>,
    pub(crate) benchmark_runs: Parsed<BenchmarkRunRow>,
    /// What the index reads of each run's `manifest` column, taken as the row is pushed.
    pub(crate) run_parts: Vec<RunManifestParts>,
    /// Each run's whole manifest as compact JSON text; `None` when the caller reads manifests
    /// where the rows came from ([`CatalogRows::without_run_manifests`]).
    pub(crate) run_manifest_text: Option<Vec<Box<str>>>,
    pub(crate) measurements: Parsed<MeasurementRow>,
    pub(crate) interner: Interner,
    pub(crate) record_events: Parsed<RecordEventRow>,
    pub(crate) artifacts: Parsed<ArtifactRow>,
}

/// Tables the ranking reads; serving tables belong to another part of the index.
pub const RANKING_TABLES: [&str; 10] = [
    "sources",
    "projects",
    "operations",
    "operation_aliases",
    "workloads",
    "implementations",
    "benchmark_runs",
    "measurements",
    "record_events",
    "artifacts",
];

impl Default for CatalogRows {
    fn default() -> Self {
        CatalogRows {
            sources: Parsed::default(),
            projects: Parsed::default(),
            operations: Parsed::default(),
            operation_aliases: Parsed::default(),
            workloads: Parsed::default(),
            implementations: Parsed::default(),
            benchmark_runs: Parsed::default(),
            run_parts: Vec::new(),
            run_manifest_text: Some(Vec::new()),
            measurements: Parsed::default(),
            interner: Interner::default(),
            record_events: Parsed::default(),
            artifacts: Parsed::default(),
        }
    }
}

/// What the index reads of a run's manifest (`{run, protocol, environment}`) while it ranks and
/// lists: a few texts, interned, rather than the manifest (kilobytes a run as JSON values).
#[derive(Debug, Clone, Default)]
pub(crate) struct RunManifestParts {
    pub(crate) framework: Option<Text>,
    pub(crate) protocol_name: Option<Text>,
    pub(crate) protocol_title: Option<Text>,
    pub(crate) title: Option<Box<str>>,
    pub(crate) external_id: Option<Box<str>>,
    /// The source's own speedup over its reference, when it reports one.
    pub(crate) reference_speedup: Option<f64>,
}

impl RunManifestParts {
    fn read(manifest: &Value, interner: &mut Interner) -> RunManifestParts {
        let text = |pointer: &str| manifest.pointer(pointer).and_then(Value::as_str);
        let mut shared = |pointer: &str| {
            let mut text: Text = text(pointer)?.into();
            interner.intern(&mut text);
            Some(text)
        };
        RunManifestParts {
            framework: shared("/environment/spec/software/framework/name"),
            protocol_name: shared("/protocol/metadata/name"),
            protocol_title: shared("/protocol/metadata/title"),
            title: text("/run/metadata/title").map(Box::from),
            external_id: text("/run/spec/sourceNative/externalId").map(Box::from),
            reference_speedup: source_native_reference_speedup(manifest),
        }
    }
}

/// The source's own speedup over its reference, when it reports one.
fn source_native_reference_speedup(manifest: &Value) -> Option<f64> {
    let metrics = manifest.pointer("/run/spec/sourceNative/metrics")?;
    if let Some(factor) = metrics.get("speedup_factor").and_then(Value::as_f64) {
        return Some(factor);
    }
    let reference = metrics.get("reference_latency_ms").and_then(Value::as_f64)?;
    let latency = metrics.get("latency_ms").and_then(Value::as_f64)?;
    (latency > 0.0).then(|| reference / latency)
}

impl CatalogRows {
    pub fn new() -> Self {
        Self::default()
    }

    /// Rows whose runs' manifests the index will not hold ([`crate::Index::run_manifest`] is
    /// `None`): the caller reads them where the rows came from, by run id.
    pub fn without_run_manifests() -> Self {
        CatalogRows { run_manifest_text: None, ..Self::default() }
    }

    /// Adds one row. Returns false (and keeps nothing) for a table the ranking does not
    /// read, such as the serving tables.
    pub fn push(&mut self, table: &str, row: Map<String, Value>, line: Option<u64>) -> bool {
        let origin = RowOrigin { line };
        match table {
            "benchmark_runs" => {
                let mut row = row;
                let manifest = row.remove("manifest").unwrap_or(Value::Null);
                let held = self.benchmark_runs.rows.len();
                self.benchmark_runs.push(table, origin, Value::Object(row), |run| run.intern(&mut self.interner));
                if self.benchmark_runs.rows.len() > held {
                    self.run_parts.push(RunManifestParts::read(&manifest, &mut self.interner));
                    if let Some(texts) = &mut self.run_manifest_text {
                        texts.push(serde_json::to_string(&manifest).unwrap_or_default().into_boxed_str());
                    }
                }
                return true;
            }
            "measurements" => {
                self.measurements.push(table, origin, Value::Object(row), |m| m.intern(&mut self.interner))
            }
            "record_events" => {
                self.record_events.push(table, origin, Value::Object(row), |e| e.intern(&mut self.interner))
            }
            "sources" => self.sources.push(table, origin, Value::Object(row), |_| {}),
            "projects" => self.projects.push(table, origin, Value::Object(row), |_| {}),
            "operations" => self.operations.push(table, origin, Value::Object(row), |_| {}),
            "operation_aliases" => self.operation_aliases.push(table, origin, Value::Object(row), |_| {}),
            "workloads" => self.workloads.push(table, origin, Value::Object(row), |_| {}),
            "implementations" => self.implementations.push(table, origin, Value::Object(row), |_| {}),
            "artifacts" => self.artifacts.push(table, origin, Value::Object(row), |_| {}),
            _ => return false,
        }
        true
    }

    pub fn len(&self) -> usize {
        self.sources.rows.len()
            + self.projects.rows.len()
            + self.operations.rows.len()
            + self.operation_aliases.rows.len()
            + self.workloads.rows.len()
            + self.implementations.rows.len()
            + self.benchmark_runs.rows.len()
            + self.measurements.rows.len()
            + self.record_events.rows.len()
            + self.artifacts.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Where each row of a table came from, and its id, for errors after parsing.
pub(crate) type Origins = Vec<(RowOrigin, Option<String>)>;

/// A table's rows parsed as they are pushed; the first bad row is kept as the error.
#[derive(Debug, Clone)]
pub struct Parsed<T> {
    rows: Vec<T>,
    origins: Origins,
    error: Option<RowError>,
}

impl<T> Default for Parsed<T> {
    fn default() -> Self {
        Parsed { rows: Vec::new(), origins: Vec::new(), error: None }
    }
}

impl<T: DeserializeOwned> Parsed<T> {
    fn push(&mut self, table: &str, origin: RowOrigin, value: Value, mut keep: impl FnMut(&mut T)) {
        if self.error.is_some() {
            return;
        }
        let index = self.rows.len();
        let id = value.get("id").and_then(Value::as_str).map(String::from);
        match serde_path_to_error::deserialize::<_, T>(value) {
            Ok(mut row) => {
                keep(&mut row);
                self.rows.push(row);
                self.origins.push((origin, id));
            }
            Err(err) => {
                let path = err.path().to_string();
                let pointer = if path == "." { "/".to_string() } else { format!("/{}", path.replace('.', "/")) };
                self.error = Some(RowError::InvalidField {
                    location: describe_location(table, index, origin, id.as_deref()),
                    pointer,
                    message: err.into_inner().to_string(),
                });
            }
        }
    }

    /// The rows and where each came from, or the first bad row's error.
    pub(crate) fn finish(self) -> Result<(Vec<T>, Origins), RowError> {
        match self.error {
            Some(error) => Err(error),
            None => Ok((self.rows, self.origins)),
        }
    }
}

/// Text many rows repeat (ids of parents, keys, GPU names, units), held once and shared: the
/// index interns it ([`Interner`]), so a million runs do not hold a million copies of a key.
/// One pointer wide (the length lives with the text), where `Arc<str>` takes two: a run row
/// holds sixteen of them.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default, Deserialize, Serialize)]
#[serde(transparent)]
pub struct Text(arcstr::ArcStr);

impl Text {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for Text {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for Text {
    fn from(text: &str) -> Text {
        Text(text.into())
    }
}

impl From<String> for Text {
    fn from(text: String) -> Text {
        Text(text.into())
    }
}

impl std::fmt::Debug for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl std::fmt::Display for Text {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<Text> for String {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}

/// A text type's JSON schema is a string's: it serializes as one.
macro_rules! schema_of_a_string {
    ([$($generics:tt)*] $type:ty) => {
        impl<$($generics)*> schemars::JsonSchema for $type {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                String::schema_name()
            }

            fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                String::json_schema(generator)
            }

            fn inline_schema() -> bool {
                true
            }
        }
    };
}

schema_of_a_string!([] Text);

/// How a [`HexText`] spells its bytes when it holds them: a fixed prefix, then two lowercase
/// hex digits a byte, with a dash before the bytes listed in `DASHES`.
pub trait HexForm {
    type Bytes: Copy + Eq + Ord + std::hash::Hash + AsRef<[u8]> + AsMut<[u8]> + Default;
    const PREFIX: &'static str;
    /// Indexes of the bytes preceded by a dash.
    const DASHES: &'static [usize];
}

/// A UUID, `8-4-4-4-12` lowercase hex digits (a run's id).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum UuidForm {}

impl HexForm for UuidForm {
    type Bytes = [u8; 16];
    const PREFIX: &'static str = "";
    const DASHES: &'static [usize] = &[4, 6, 8, 10];
}

/// `sha256:` and 64 lowercase hex digits (a run's digest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Sha256Form {}

impl HexForm for Sha256Form {
    type Bytes = [u8; 32];
    const PREFIX: &'static str = "sha256:";
    const DASHES: &'static [usize] = &[];
}

/// Text that is almost always of one hexadecimal form (a run's id, its digest), held as the
/// bytes it spells (16 for a UUID's 36 characters, 32 for a digest's 71) when it is exactly
/// that form, on the heap otherwise. A text has one representation, so equality and hashing
/// are the representation's; order is the text's.
pub struct HexText<F: HexForm>(HexRepr<F::Bytes>);

#[derive(Clone, PartialEq, Eq, Hash)]
enum HexRepr<B> {
    Bytes(B),
    Text(Box<str>),
}

/// The longest spelling of a [`HexText`]'s bytes (a digest's 71 characters).
const SPELLED_MAX: usize = 71;

/// A [`HexText`] as text: borrowed when it is held as text, spelled in place otherwise.
pub enum HexStr<'a> {
    Held(&'a str),
    Spelled { len: u8, bytes: [u8; SPELLED_MAX] },
}

impl std::ops::Deref for HexStr<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        match self {
            HexStr::Held(text) => text,
            // SAFETY: `spell` wrote `len` bytes of ASCII (a prefix, hex digits and dashes).
            HexStr::Spelled { len, bytes } => unsafe { std::str::from_utf8_unchecked(&bytes[..*len as usize]) },
        }
    }
}

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

impl<F: HexForm> HexText<F> {
    pub fn new(text: &str) -> Self {
        match Self::pack(text.as_bytes()) {
            Some(bytes) => HexText(HexRepr::Bytes(bytes)),
            None => HexText(HexRepr::Text(text.into())),
        }
    }

    /// The bytes `text` spells, when it is exactly the form (lowercase digits only).
    fn pack(text: &[u8]) -> Option<F::Bytes> {
        let mut bytes = F::Bytes::default();
        let width = F::PREFIX.len() + 2 * bytes.as_ref().len() + F::DASHES.len();
        if text.len() != width || !text.starts_with(F::PREFIX.as_bytes()) {
            return None;
        }
        let digit = |c: u8| match c {
            b'0'..=b'9' => Some(c - b'0'),
            b'a'..=b'f' => Some(c - b'a' + 10),
            _ => None,
        };
        let mut at = F::PREFIX.len();
        for (index, byte) in bytes.as_mut().iter_mut().enumerate() {
            if F::DASHES.contains(&index) {
                if text[at] != b'-' {
                    return None;
                }
                at += 1;
            }
            *byte = digit(text[at])? << 4 | digit(text[at + 1])?;
            at += 2;
        }
        Some(bytes)
    }

    /// The text, as it was given.
    pub fn text(&self) -> HexStr<'_> {
        match &self.0 {
            HexRepr::Text(text) => HexStr::Held(text),
            HexRepr::Bytes(held) => {
                let mut bytes = [0; SPELLED_MAX];
                let prefix = F::PREFIX.as_bytes();
                bytes[..prefix.len()].copy_from_slice(prefix);
                let mut at = prefix.len();
                for (index, byte) in held.as_ref().iter().enumerate() {
                    if F::DASHES.contains(&index) {
                        bytes[at] = b'-';
                        at += 1;
                    }
                    bytes[at] = HEX_DIGITS[usize::from(byte >> 4)];
                    bytes[at + 1] = HEX_DIGITS[usize::from(byte & 15)];
                    at += 2;
                }
                HexStr::Spelled { len: at as u8, bytes }
            }
        }
    }
}

/// A run's id: a canonical UUID is held as its 16 bytes.
pub type IdText = HexText<UuidForm>;
/// A run's digest: `sha256:` and 64 hex digits is held as its 32 bytes.
pub type DigestText = HexText<Sha256Form>;

impl<F: HexForm> Clone for HexText<F> {
    fn clone(&self) -> Self {
        HexText(self.0.clone())
    }
}

impl<F: HexForm> Default for HexText<F> {
    fn default() -> Self {
        HexText::new("")
    }
}

impl<F: HexForm> PartialEq for HexText<F> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}

impl<F: HexForm> Eq for HexText<F> {}

impl<F: HexForm> std::hash::Hash for HexText<F> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state)
    }
}

impl<F: HexForm> PartialEq<str> for HexText<F> {
    fn eq(&self, other: &str) -> bool {
        *self.text() == *other
    }
}

impl<F: HexForm> PartialEq<&str> for HexText<F> {
    fn eq(&self, other: &&str) -> bool {
        *self.text() == **other
    }
}

impl<F: HexForm> PartialEq<HexText<F>> for String {
    fn eq(&self, other: &HexText<F>) -> bool {
        *self.as_str() == *other.text()
    }
}

impl<F: HexForm> PartialEq<HexText<F>> for &str {
    fn eq(&self, other: &HexText<F>) -> bool {
        **self == *other.text()
    }
}

impl<F: HexForm> PartialOrd for HexText<F> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl<F: HexForm> Ord for HexText<F> {
    /// The texts' order: two held as bytes compare as their bytes (same prefix and dashes,
    /// and lowercase hex digits sort as the values they spell).
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        match (&self.0, &other.0) {
            (HexRepr::Bytes(mine), HexRepr::Bytes(theirs)) => mine.cmp(theirs),
            _ => (*self.text()).cmp(&*other.text()),
        }
    }
}

impl<F: HexForm> From<&str> for HexText<F> {
    fn from(text: &str) -> Self {
        HexText::new(text)
    }
}

impl<F: HexForm> From<HexText<F>> for String {
    fn from(text: HexText<F>) -> String {
        text.to_string()
    }
}

impl<F: HexForm> std::fmt::Debug for HexText<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.text(), f)
    }
}

impl<F: HexForm> std::fmt::Display for HexText<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text())
    }
}

impl<F: HexForm> Serialize for HexText<F> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text())
    }
}

impl<'de, F: HexForm> Deserialize<'de> for HexText<F> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(deserializer)?;
        Ok(HexText::new(&text))
    }
}

schema_of_a_string!([F: HexForm] HexText<F>);

#[cfg(test)]
mod hex_text_tests {
    use super::{DigestText, HexRepr, IdText};

    #[test]
    fn canonical_ids_and_digests_are_held_as_bytes_and_every_text_reads_back_whole() {
        let uuid = "01a006c1-dd5d-76cf-9e44-f49eb6d945d0";
        let digest = "sha256:6c043f231be11c21818034983223b1bb0a65d2c9fb6bda7061bcf85c3f57ffa1";
        let upper = "01A006C1-DD5D-76CF-9E44-F49EB6D945D0";
        let texts = [
            "",
            "run-a",
            uuid,
            upper,
            "01a006c1dd5d76cf9e44f49eb6d945d0",
            "01a006c1-dd5d-76cf-9e44-f49eb6d945d",
            "01a006c1-dd5d-76cf-9e44-f49eb6d945d00",
            "01a006c1-dd5d-76cf-9e44_f49eb6d945d0",
            "01a006c1-dd5d-76cf-9e44-f49eb6d945g0",
            "ü-ß-名前",
            digest,
            &digest.replace("sha256", "sha512"),
            &digest.to_uppercase(),
            &digest[..70],
            &"z".repeat(300),
        ];
        for text in texts {
            for held in [IdText::new(text).to_string(), DigestText::new(text).to_string()] {
                assert_eq!(held, text);
            }
            let id = IdText::new(text);
            assert_eq!(serde_json::to_string(&id).unwrap(), serde_json::to_string(text).unwrap());
            let back: IdText = serde_json::from_str(&serde_json::to_string(text).unwrap()).unwrap();
            assert_eq!(back, id);
            assert!(id == text && DigestText::new(text) == text);
        }
        assert!(matches!(IdText::new(uuid).0, HexRepr::Bytes(_)));
        assert!(matches!(IdText::new(upper).0, HexRepr::Text(_)), "held as given: upper case stays text");
        assert!(matches!(DigestText::new(digest).0, HexRepr::Bytes(_)));
        assert!(matches!(DigestText::new(uuid).0, HexRepr::Text(_)));
        assert_eq!(std::mem::size_of::<IdText>(), 24);
        assert_eq!(std::mem::size_of::<DigestText>(), 40);
    }

    #[test]
    fn ids_and_digests_sort_as_their_texts_however_held() {
        let texts = [
            "",
            "0",
            "00000000-0000-0000-0000-000000000000",
            "00000000-0000-0000-0000-00000000000",
            "0f000000-0000-0000-0000-000000000000",
            "10000000-0000-0000-0000-000000000000",
            "9fffffff-ffff-ffff-ffff-ffffffffffff",
            "a0000000-0000-0000-0000-000000000000",
            "A0000000-0000-0000-0000-000000000000",
            "ffffffff-ffff-ffff-ffff-ffffffffffff",
            "sha256:00",
            "sha256:0000000000000000000000000000000000000000000000000000000000000000",
            "sha256:09ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
            "sha256:a000000000000000000000000000000000000000000000000000000000000000",
            "sha256:ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
            "sha256:g",
            "run-b",
        ];
        for a in texts {
            for b in texts {
                assert_eq!(IdText::new(a).cmp(&IdText::new(b)), a.cmp(b), "{a} against {b}");
                assert_eq!(DigestText::new(a).cmp(&DigestText::new(b)), a.cmp(b), "{a} against {b}");
                assert_eq!(IdText::new(a) == IdText::new(b), a == b);
            }
        }
    }
}

/// The impls every `Optional…` type shares: `Default` (absent), and `Debug`, serde and the JSON
/// schema exactly as the `Option` it stands for, through its `get` and `TryFrom<Option<_>>`.
macro_rules! held_as_option {
    ($held:ident, $value:ty) => {
        impl Default for $held {
            fn default() -> Self {
                $held::NONE
            }
        }

        impl std::fmt::Debug for $held {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&self.get(), f)
            }
        }

        impl Serialize for $held {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                self.get().serialize(serializer)
            }
        }

        impl<'de> Deserialize<'de> for $held {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                $held::try_from(Option::<$value>::deserialize(deserializer)?).map_err(serde::de::Error::custom)
            }
        }

        impl schemars::JsonSchema for $held {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                Option::<$value>::schema_name()
            }

            fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                Option::<$value>::json_schema(generator)
            }

            fn inline_schema() -> bool {
                true
            }
        }
    };
}

/// An optional number in 8 bytes, where `Option<f64>` takes 16 (a run holds three): absent is
/// NaN, which no column holds (JSON has no NaN, and a catalog's NaN reads as null).
#[derive(Clone, Copy)]
pub struct OptionalNumber(f64);

impl OptionalNumber {
    pub const NONE: OptionalNumber = OptionalNumber(f64::NAN);

    pub fn get(self) -> Option<f64> {
        (!self.0.is_nan()).then_some(self.0)
    }
}

impl From<Option<f64>> for OptionalNumber {
    fn from(number: Option<f64>) -> OptionalNumber {
        number.map_or(OptionalNumber::NONE, OptionalNumber)
    }
}

impl PartialEq for OptionalNumber {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

held_as_option!(OptionalNumber, f64);

#[cfg(test)]
mod optional_number_tests {
    use super::OptionalNumber;

    #[test]
    fn numbers_and_their_absence_read_back_as_given() {
        for number in [None, Some(0.0), Some(-0.0), Some(1.5e-300), Some(f64::MAX), Some(-19.45)] {
            let held = OptionalNumber::from(number);
            assert_eq!(held.get().map(f64::to_bits), number.map(f64::to_bits));
            let json = serde_json::to_string(&held).unwrap();
            assert_eq!(json, serde_json::to_string(&number).unwrap());
            assert_eq!(serde_json::from_str::<OptionalNumber>(&json).unwrap(), held);
        }
        assert_eq!(OptionalNumber::from(Some(f64::NAN)).get(), None);
        assert_eq!(std::mem::size_of::<OptionalNumber>(), 8);
    }
}

/// An optional integer count in 8 bytes, where `Option<i64>` takes 16: absent is `i64::MIN`,
/// which no count is (the catalog holds positive counts; a file stating `i64::MIN` is refused
/// when read rather than read as absent).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct OptionalCount(i64);

impl OptionalCount {
    pub const NONE: OptionalCount = OptionalCount(i64::MIN);

    pub fn get(self) -> Option<i64> {
        (self.0 != i64::MIN).then_some(self.0)
    }
}

impl TryFrom<Option<i64>> for OptionalCount {
    type Error = String;

    fn try_from(count: Option<i64>) -> Result<OptionalCount, String> {
        match count {
            None => Ok(OptionalCount::NONE),
            Some(i64::MIN) => Err(format!("count {} is out of range", i64::MIN)),
            Some(count) => Ok(OptionalCount(count)),
        }
    }
}

held_as_option!(OptionalCount, i64);

#[cfg(test)]
mod optional_count_tests {
    use super::OptionalCount;

    #[test]
    fn counts_and_their_absence_read_back_as_given() {
        for count in [None, Some(0), Some(1), Some(-1), Some(i64::MAX), Some(i64::MIN + 1)] {
            let held = OptionalCount::try_from(count).unwrap();
            assert_eq!(held.get(), count);
            let json = serde_json::to_string(&held).unwrap();
            assert_eq!(json, serde_json::to_string(&count).unwrap());
            assert_eq!(serde_json::from_str::<OptionalCount>(&json).unwrap(), held);
        }
        let refused = serde_json::from_str::<OptionalCount>("-9223372036854775808").unwrap_err();
        assert!(refused.to_string().contains("out of range"), "{refused}");
        assert_eq!(std::mem::size_of::<OptionalCount>(), 8);
    }
}

/// Hands out one shared copy of each distinct text.
#[derive(Debug, Default, Clone)]
pub struct Interner {
    held: std::collections::HashSet<Text>,
}

impl Interner {
    pub fn intern(&mut self, text: &mut Text) {
        match self.held.get(&**text) {
            Some(held) => *text = held.clone(),
            None => {
                self.held.insert(text.clone());
            }
        }
    }

    pub fn intern_option(&mut self, text: &mut Option<Text>) {
        if let Some(text) = text {
            self.intern(text);
        }
    }
}

impl BenchmarkRunRow {
    /// Shares the row's repeated texts with every other row interned through `interner`.
    pub fn intern(&mut self, interner: &mut Interner) {
        for text in [
            &mut self.implementation_id,
            &mut self.workload_id,
            &mut self.status,
            &mut self.protocol_key,
            &mut self.environment_key,
            &mut self.correctness_key,
            &mut self.comparison_key,
        ] {
            interner.intern(text);
        }
        for text in [
            &mut self.source_id,
            &mut self.hardware_vendor,
            &mut self.hardware_model,
            &mut self.hardware_architecture,
            &mut self.primary_metric,
            &mut self.primary_unit,
            &mut self.primary_statistic,
            &mut self.license_expression,
            &mut self.environment_summary,
        ] {
            interner.intern_option(text);
        }
    }
}

/// A page about one run reads its measurements from the catalog in this form.
impl ki_model::rows::TableRow for MeasurementRow {
    const TABLE: &'static str = "measurements";
}

impl MeasurementRow {
    /// As [`BenchmarkRunRow::intern`].
    pub fn intern(&mut self, interner: &mut Interner) {
        for text in [&mut self.run_id, &mut self.metric, &mut self.statistic, &mut self.unit] {
            interner.intern(text);
        }
    }
}

/// A timestamp column: its instant, and the text as stored when that is not the instant's
/// export form (`YYYY-MM-DDTHH:MM:SS.mmmZ`): most timestamps are, and a million runs then hold
/// no timestamp text at all. [`Timestamp::text`] gives the stored text back exactly.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Timestamp {
    pub instant: Instant,
    stored: Option<Text>,
}

impl Timestamp {
    pub fn parse(text: &str) -> Result<Timestamp, String> {
        let instant = Instant::parse(text)?;
        if instant.0 == i64::MIN {
            // The one instant `OptionalTimestamp` keeps for "absent" (1677-09-21T00:12:43.145224192Z).
            return Err(format!("{text} is out of range"));
        }
        let canonical = instant.0 % 1_000_000 == 0 && ki_model::utc::from_unix_millis(instant.0 / 1_000_000) == text;
        Ok(Timestamp { instant, stored: (!canonical).then(|| text.into()) })
    }

    /// The text as stored.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match &self.stored {
            Some(text) => std::borrow::Cow::Borrowed(text),
            None => std::borrow::Cow::Owned(ki_model::utc::from_unix_millis(self.instant.0 / 1_000_000)),
        }
    }
}

impl schemars::JsonSchema for Timestamp {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Timestamp".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({"type": "string", "description": "RFC 3339, as stored"})
    }
}

impl Serialize for Timestamp {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text())
    }
}

impl<'de> Deserialize<'de> for Timestamp {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = std::borrow::Cow::<str>::deserialize(deserializer)?;
        Timestamp::parse(&text).map_err(serde::de::Error::custom)
    }
}

/// An optional timestamp in 16 bytes, where `Option<Timestamp>` takes 24: absent is the instant
/// `i64::MIN`, which [`Timestamp::parse`] refuses.
#[derive(Clone, PartialEq, Eq)]
pub struct OptionalTimestamp(Timestamp);

impl OptionalTimestamp {
    pub const NONE: OptionalTimestamp = OptionalTimestamp(Timestamp { instant: Instant(i64::MIN), stored: None });

    pub fn get(&self) -> Option<&Timestamp> {
        (self.0.instant.0 != i64::MIN).then_some(&self.0)
    }

    pub fn is_none(&self) -> bool {
        self.get().is_none()
    }

    pub fn is_some(&self) -> bool {
        self.get().is_some()
    }
}

impl From<Option<Timestamp>> for OptionalTimestamp {
    fn from(timestamp: Option<Timestamp>) -> OptionalTimestamp {
        timestamp.map_or(OptionalTimestamp::NONE, OptionalTimestamp)
    }
}

held_as_option!(OptionalTimestamp, Timestamp);

#[cfg(test)]
mod optional_timestamp_tests {
    use super::{OptionalTimestamp, Timestamp};

    #[test]
    fn timestamps_and_their_absence_read_back_as_given() {
        for text in
            [None, Some("2026-12-03T09:12:14.000Z"), Some("2026-12-03T09:12:14Z"), Some("1970-01-01T00:00:00.000Z")]
        {
            let held = OptionalTimestamp::from(text.map(|text| Timestamp::parse(text).unwrap()));
            assert_eq!(held.get().map(|t| t.text().into_owned()).as_deref(), text);
            let json = serde_json::to_string(&held).unwrap();
            assert_eq!(json, serde_json::to_string(&text).unwrap());
            assert_eq!(serde_json::from_str::<OptionalTimestamp>(&json).unwrap(), held);
        }
        let refused = serde_json::from_str::<OptionalTimestamp>("\"1677-09-21T00:12:43.145224192Z\"").unwrap_err();
        assert!(refused.to_string().contains("out of range"), "{refused}");
        assert_eq!(std::mem::size_of::<OptionalTimestamp>(), 16);
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BenchmarkRunRow {
    pub id: IdText,
    pub run_digest: DigestText,
    pub implementation_id: Text,
    pub workload_id: Text,
    #[serde(default)]
    pub source_id: Option<Text>,
    pub status: Text,
    pub observed_at: Timestamp,
    #[serde(default)]
    pub published_at: OptionalTimestamp,
    #[serde(default)]
    pub hardware_vendor: Option<Text>,
    #[serde(default)]
    pub hardware_model: Option<Text>,
    #[serde(default)]
    pub hardware_architecture: Option<Text>,
    pub protocol_key: Text,
    pub environment_key: Text,
    pub correctness_key: Text,
    pub comparison_key: Text,
    #[serde(default)]
    pub primary_metric: Option<Text>,
    #[serde(default)]
    pub primary_value: OptionalNumber,
    #[serde(default)]
    pub primary_unit: Option<Text>,
    #[serde(default)]
    pub primary_statistic: Option<Text>,
    #[serde(default)]
    pub sample_count: OptionalCount,
    #[serde(default)]
    pub uncertainty_low: OptionalNumber,
    #[serde(default)]
    pub uncertainty_high: OptionalNumber,
    #[serde(default)]
    pub reported: bool,
    #[serde(default)]
    pub reproduced_by_kernelindex: bool,
    #[serde(default)]
    pub independent_replication_count: i64,
    #[serde(default)]
    pub source_available: bool,
    #[serde(default)]
    pub installable: bool,
    #[serde(default)]
    pub license_expression: Option<Text>,
    #[serde(default)]
    pub has_raw_evidence: bool,
    #[serde(default)]
    pub source_native: bool,
    #[serde(default)]
    pub environment_summary: Option<Text>,
    #[serde(default)]
    pub supersedes_id: Option<Text>,
    #[serde(default)]
    pub retracted_at: Option<Box<Timestamp>>,
    #[serde(default)]
    pub retraction_reason: Option<Text>,
}

#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MeasurementRow {
    pub id: String,
    pub run_id: Text,
    pub metric: Text,
    pub statistic: Text,
    pub unit: Text,
    #[serde(default)]
    pub value: Option<f64>,
    #[serde(default)]
    pub sample_count: Option<i64>,
}

#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordEventRow {
    #[serde(default)]
    pub id: Option<IdText>,
    pub comparison_key: Text,
    pub run_id: IdText,
    #[serde(default)]
    pub previous_run_id: Option<IdText>,
    pub policy_version: Text,
    pub cause: Text,
    pub at: Timestamp,
}

impl RecordEventRow {
    /// As [`BenchmarkRunRow::intern`]: the comparison key is its runs' own.
    pub fn intern(&mut self, interner: &mut Interner) {
        for text in [&mut self.comparison_key, &mut self.policy_version, &mut self.cause] {
            interner.intern(text);
        }
    }
}
