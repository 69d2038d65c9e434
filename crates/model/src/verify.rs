//! Verifying a catalog export: recompute every digest and key of every row from the
//! manifests it carries and compare with the stored columns, including the
//! cross-references between rows (a run's manifest names the digests of the
//! implementation and workload rows it points at), and every measurement row against
//! the measurements its run's manifest states.

use std::collections::{BTreeMap, HashMap};

use rayon::prelude::*;
use serde_json::{Map, Value};

use crate::export::ExportLine;
use crate::identity::{self, ComparisonParts, IdentityError};

/// One checked column (or cross-reference) of one table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Field {
    pub table: &'static str,
    /// The stored column compared, or for a cross-reference `manifest → table`.
    pub name: &'static str,
}

const fn field(table: &'static str, name: &'static str) -> Field {
    Field { table, name }
}

/// Every field the verifier checks, in report order.
pub const FIELDS: &[Field] = &[
    OPERATION_DIGEST,
    WORKLOAD_DIGEST,
    WORKLOAD_OPERATION,
    IMPLEMENTATION_DIGEST,
    IMPLEMENTATION_OPERATION,
    RUN_DIGEST,
    RUN_PROTOCOL_KEY,
    RUN_PROTOCOL_DIGEST,
    RUN_ENVIRONMENT_KEY,
    RUN_ENVIRONMENT_DIGEST,
    RUN_IMPLEMENTATION,
    RUN_WORKLOAD,
    RUN_CORRECTNESS_KEY,
    RUN_METRIC_KEY,
    RUN_PRIMARY_VALUE,
    RUN_COMPARISON_KEY,
    MEASUREMENT_OF_RUN,
    EVENT_COMPARISON_KEY,
    MODEL_DIGEST,
    STACK_DIGEST,
    CONFIGURATION_DIGEST,
    CONFIGURATION_STACK,
    SERVING_WORKLOAD_DIGEST,
    SERVING_RUN_DIGEST,
    SERVING_RUN_MODEL,
    SERVING_RUN_CONFIGURATION,
    SERVING_RUN_WORKLOAD,
    SERVING_RUN_PROTOCOL_KEY,
    SERVING_RUN_METRIC_SET_KEY,
    SERVING_RUN_COHORT_KEY,
    SERVING_MEASUREMENT_OF_RUN,
];

const OPERATION_DIGEST: Field = field("operations", "semanticDigest");
const WORKLOAD_DIGEST: Field = field("workloads", "workloadDigest");
const WORKLOAD_OPERATION: Field = field("workloads", "manifest → operations");
const IMPLEMENTATION_DIGEST: Field = field("implementations", "implementationDigest");
const IMPLEMENTATION_OPERATION: Field = field("implementations", "manifest → operations");
const RUN_DIGEST: Field = field("benchmark_runs", "runDigest");
const RUN_PROTOCOL_KEY: Field = field("benchmark_runs", "protocolKey");
const RUN_PROTOCOL_DIGEST: Field = field("benchmark_runs", "run.spec.protocolDigest");
const RUN_ENVIRONMENT_KEY: Field = field("benchmark_runs", "environmentKey");
const RUN_ENVIRONMENT_DIGEST: Field = field("benchmark_runs", "run.spec.environmentDigest");
const RUN_IMPLEMENTATION: Field = field("benchmark_runs", "manifest → implementations");
const RUN_WORKLOAD: Field = field("benchmark_runs", "manifest → workloads");
const RUN_CORRECTNESS_KEY: Field = field("benchmark_runs", "correctnessKey");
const RUN_METRIC_KEY: Field = field("benchmark_runs", "metric key (primaryMetric:Statistic:Unit)");
const RUN_PRIMARY_VALUE: Field = field("benchmark_runs", "primaryValue + sampleCount");
const RUN_COMPARISON_KEY: Field = field("benchmark_runs", "comparisonKey");
const MEASUREMENT_OF_RUN: Field = field("measurements", "metric, value, sampleCount → run manifest");
const EVENT_COMPARISON_KEY: Field = field("record_events", "comparisonKey → benchmark_runs");
const MODEL_DIGEST: Field = field("model_revisions", "modelDigest");
const STACK_DIGEST: Field = field("serving_stack_revisions", "stackDigest");
const CONFIGURATION_DIGEST: Field = field("serving_configurations", "configurationDigest");
const CONFIGURATION_STACK: Field = field("serving_configurations", "manifest → serving_stack_revisions");
const SERVING_WORKLOAD_DIGEST: Field = field("serving_workloads", "workloadDigest");
const SERVING_RUN_DIGEST: Field = field("serving_runs", "runDigest");
const SERVING_RUN_MODEL: Field = field("serving_runs", "manifest → model_revisions");
const SERVING_RUN_CONFIGURATION: Field = field("serving_runs", "manifest → serving_configurations");
const SERVING_RUN_WORKLOAD: Field = field("serving_runs", "manifest → serving_workloads");
const SERVING_RUN_PROTOCOL_KEY: Field = field("serving_runs", "protocolKey");
const SERVING_RUN_METRIC_SET_KEY: Field = field("serving_runs", "metricSetKey");
const SERVING_RUN_COHORT_KEY: Field = field("serving_runs", "cohortKey");
const SERVING_MEASUREMENT_OF_RUN: Field =
    field("serving_measurements", "metric, value, sampleCount → serving run manifest");

/// The first row where a field did not reproduce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    pub line: usize,
    /// The row's `id`.
    pub id: String,
    /// What the row says.
    pub stored: String,
    /// What recomputing from the manifests gives (or why it could not be computed).
    pub recomputed: String,
}

/// Counts for one field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldTally {
    pub field: Field,
    pub ok: u64,
    pub mismatched: u64,
    /// The mismatching row with the lowest line number.
    pub first_mismatch: Option<Mismatch>,
}

impl FieldTally {
    fn new(field: Field) -> Self {
        FieldTally { field, ok: 0, mismatched: 0, first_mismatch: None }
    }

    fn record(&mut self, outcome: Result<(), Mismatch>) {
        match outcome {
            Ok(()) => self.ok += 1,
            Err(mismatch) => {
                self.mismatched += 1;
                if self.first_mismatch.as_ref().is_none_or(|first| mismatch.line < first.line) {
                    self.first_mismatch = Some(mismatch);
                }
            }
        }
    }

    fn merge(&mut self, other: FieldTally) {
        self.ok += other.ok;
        self.mismatched += other.mismatched;
        if let Some(mismatch) = other.first_mismatch {
            self.mismatched -= 1;
            self.record(Err(mismatch));
        }
    }
}

/// The outcome of verifying an export.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// Rows read per table, in the order tables first appeared.
    pub table_rows: Vec<(String, u64)>,
    /// One tally per entry of [`FIELDS`], in that order.
    pub fields: Vec<FieldTally>,
}

impl VerifyReport {
    pub fn rows(&self) -> u64 {
        self.table_rows.iter().map(|(_, count)| count).sum()
    }

    pub fn mismatches(&self) -> u64 {
        self.fields.iter().map(|tally| tally.mismatched).sum()
    }

    /// True when every checked field of every row reproduced.
    pub fn is_clean(&self) -> bool {
        self.mismatches() == 0
    }

    /// The mismatch at the lowest line over all fields: what an importer names when it
    /// refuses a snapshot.
    pub fn first_mismatch(&self) -> Option<(Field, &Mismatch)> {
        self.fields
            .iter()
            .filter_map(|tally| tally.first_mismatch.as_ref().map(|mismatch| (tally.field, mismatch)))
            .min_by_key(|(_, mismatch)| mismatch.line)
    }

    pub fn tally(&self, field: Field) -> Option<&FieldTally> {
        self.fields.iter().find(|tally| tally.field == field)
    }
}

/// A row id as a map key: a canonical lowercase UUID packed into 128 bits (what every
/// catalog row carries), anything else kept as text.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Id {
    Uuid(u128),
    Other(Box<str>),
}

fn id_key(text: &str) -> Id {
    let bytes = text.as_bytes();
    if bytes.len() == 36 {
        let mut value: u128 = 0;
        let mut ok = true;
        for (index, byte) in bytes.iter().enumerate() {
            if matches!(index, 8 | 13 | 18 | 23) {
                ok &= *byte == b'-';
                continue;
            }
            let digit = match byte {
                b'0'..=b'9' => byte - b'0',
                b'a'..=b'f' => byte - b'a' + 10,
                _ => {
                    ok = false;
                    break;
                }
            };
            value = (value << 4) | u128::from(digit);
        }
        if ok {
            return Id::Uuid(value);
        }
    }
    Id::Other(text.into())
}

/// A stored column's text, kept small: a `sha256:` digest as its 32 bytes.
#[derive(Debug, Clone)]
enum Compact {
    Sha256([u8; 32]),
    Text(Box<str>),
}

impl Compact {
    fn new(text: String) -> Compact {
        if text.len() == 71
            && let Some(hex_digits) = text.strip_prefix("sha256:")
            && hex_digits.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f'))
        {
            let mut bytes = [0u8; 32];
            if hex::decode_to_slice(hex_digits, &mut bytes).is_ok() {
                return Compact::Sha256(bytes);
            }
        }
        Compact::Text(text.into_boxed_str())
    }

    fn text(&self) -> String {
        match self {
            Compact::Sha256(bytes) => format!("sha256:{}", hex::encode(bytes)),
            Compact::Text(text) => text.to_string(),
        }
    }
}

/// What a run's measurement rows are checked against: each measurement its manifest states,
/// shown as `metric:statistic:unit = value (n samples)`.
type Stated = Box<[Box<str>]>;

fn show_measurement(kind: &str, value: Option<f64>, samples: Option<u64>) -> String {
    format!(
        "{kind} = {} ({} samples)",
        value.map_or("null".to_string(), |v| v.to_string()),
        samples.map_or("null".to_string(), |s| s.to_string())
    )
}

fn stated_of(spec: Option<&Value>) -> Stated {
    spec.map(identity::stated_measurements)
        .unwrap_or_default()
        .iter()
        .map(|s| {
            show_measurement(&format!("{}:{}:{}", s.metric, s.statistic, s.unit), Some(s.value), s.sample_count)
                .into_boxed_str()
        })
        .collect()
}

/// Each recomputed from a workload's manifest, or why it could not be.
type Recomputed = Result<String, String>;
/// A workload manifest's correctness key, operationSpecDigest and digest.
type WorkloadKeys = (Recomputed, Recomputed, Recomputed);

/// What a benchmark run's checks need of the workload row it points at.
#[derive(Debug, Clone)]
struct WorkloadFacts {
    /// The stored `workloadDigest` column.
    digest: String,
    /// From the workload's manifest: (correctness key, operationSpecDigest, manifest digest).
    manifest: Result<WorkloadKeys, String>,
}

/// What a row's checks need of a row it refers to, by the referenced row's table.
#[derive(Debug, Clone)]
enum Fact {
    /// A stored digest column (operations, implementations, stacks, configurations).
    Digest(Compact),
    Workload(Box<WorkloadFacts>),
    /// A benchmark run: its comparison key and stated measurements.
    Run(Compact, Stated),
    /// A serving run: its stated measurements.
    ServingRun(Stated),
    /// A model revision or serving workload: its digest column and manifest (serving run keys
    /// are computed from both manifests; these tables are small).
    Manifested(Compact, Option<Box<Value>>),
}

/// Which referenced tables the verifier follows, from which column.
const FOLLOWED: &[(&str, &str, &str)] = &[
    ("workloads", "operationId", "operations"),
    ("implementations", "operationId", "operations"),
    ("benchmark_runs", "implementationId", "implementations"),
    ("benchmark_runs", "workloadId", "workloads"),
    ("measurements", "runId", "benchmark_runs"),
    ("record_events", "runId", "benchmark_runs"),
    ("serving_configurations", "stackRevisionId", "serving_stack_revisions"),
    ("serving_measurements", "runId", "serving_runs"),
    ("serving_runs", "modelRevisionId", "model_revisions"),
    ("serving_runs", "configurationId", "serving_configurations"),
    ("serving_runs", "workloadId", "serving_workloads"),
];

/// The referenced tables, in the order of [`References::tables`].
const REFERENCED: &[&str] = &[
    "operations",
    "workloads",
    "implementations",
    "benchmark_runs",
    "serving_runs",
    "model_revisions",
    "serving_stack_revisions",
    "serving_configurations",
    "serving_workloads",
];

/// Compact facts of the rows that others refer to, by table and id: what the checks of a
/// referring row need, not the whole rows (a run keeps its comparison key and stated
/// measurements, a workload the keys its manifest gives).
#[derive(Debug, Default)]
pub struct References {
    tables: [HashMap<Id, Fact>; REFERENCED.len()],
}

fn facts_of(line: &ExportLine) -> Option<(usize, Id, Fact)> {
    let position = REFERENCED.iter().position(|table| *table == line.table)?;
    let row = &line.row;
    let manifest = row.get("manifest");
    let fact = match line.table.as_str() {
        "operations" => Fact::Digest(Compact::new(stored(row, "semanticDigest"))),
        "implementations" => Fact::Digest(Compact::new(stored(row, "implementationDigest"))),
        "serving_stack_revisions" => Fact::Digest(Compact::new(stored(row, "stackDigest"))),
        "serving_configurations" => Fact::Digest(Compact::new(stored(row, "configurationDigest"))),
        "workloads" => Fact::Workload(Box::new(WorkloadFacts {
            digest: stored(row, "workloadDigest"),
            manifest: manifest.ok_or_else(|| "the workload row has no manifest".to_string()).map(|w| {
                (
                    identity::correctness_key(w.pointer("/spec/correctness"))
                        .map_err(|e| at_pointer("workload manifest/spec", e)),
                    manifest_str(Some(w), "/spec/operationSpecDigest").map_err(|reason| format!("workload {reason}")),
                    manifest_digest(Some(w), "workload manifest"),
                )
            }),
        })),
        "benchmark_runs" => Fact::Run(
            Compact::new(stored(row, "comparisonKey")),
            stated_of(manifest.and_then(|m| m.pointer("/run/spec"))),
        ),
        "serving_runs" => Fact::ServingRun(stated_of(manifest.and_then(|m| m.get("spec")))),
        "model_revisions" => {
            Fact::Manifested(Compact::new(stored(row, "modelDigest")), manifest.cloned().map(Box::new))
        }
        "serving_workloads" => {
            Fact::Manifested(Compact::new(stored(row, "workloadDigest")), manifest.cloned().map(Box::new))
        }
        _ => return None,
    };
    Some((position, id_key(line.id()), fact))
}

impl References {
    /// Adds the facts of `lines` (rows of tables others refer to; other rows are ignored).
    /// A later row with the same id replaces an earlier one.
    pub fn learn(&mut self, lines: &[ExportLine]) {
        let facts: Vec<(usize, Id, Fact)> = lines.par_iter().filter_map(facts_of).collect();
        for (position, id, fact) in facts {
            self.tables[position].insert(id, fact);
        }
    }

    fn get(&self, table: &str, id: &str) -> Option<&Fact> {
        let position = REFERENCED.iter().position(|known| *known == table)?;
        self.tables[position].get(&id_key(id))
    }

    /// The rows `line`'s checks follow that these references lack: (table, id).
    pub fn unknown_references<'l>(&self, line: &'l ExportLine) -> Vec<(&'static str, &'l str)> {
        FOLLOWED
            .iter()
            .filter(|(table, _, _)| *table == line.table)
            .filter_map(|(_, column, target)| {
                let id = line.row.get(*column).and_then(Value::as_str)?;
                self.get(target, id).is_none().then_some((*target, id))
            })
            .collect()
    }
}

/// Verifies an export in parts, in file order, keeping only compact facts of the rows that
/// later rows refer to. A row whose referenced rows are not known yet is kept and checked by
/// [`Verifier::finish`] (a parent may come later in the file). The report equals
/// [`verify_export`]'s on the same rows.
#[derive(Debug)]
pub struct Verifier {
    pub references: References,
    fields: Vec<FieldTally>,
    table_rows: Vec<(String, u64)>,
    deferred: Vec<ExportLine>,
}

impl Default for Verifier {
    fn default() -> Self {
        Verifier::new()
    }
}

fn empty_tallies() -> Vec<FieldTally> {
    FIELDS.iter().map(|field| FieldTally::new(*field)).collect()
}

fn merge_tallies(mut left: Vec<FieldTally>, right: Vec<FieldTally>) -> Vec<FieldTally> {
    for (mine, theirs) in left.iter_mut().zip(right) {
        mine.merge(theirs);
    }
    left
}

fn check_lines(lines: &[&ExportLine], references: &References, progress: &(impl Fn(u64) + Sync)) -> Vec<FieldTally> {
    let done = std::sync::atomic::AtomicU64::new(0);
    lines
        .par_chunks(256)
        .fold(
            || (empty_tallies(), DigestMemo::default()),
            |(mut tallies, mut memo), chunk| {
                for line in chunk {
                    check_line(line, references, &mut memo, &mut |field, outcome| {
                        let slot =
                            FIELDS.iter().position(|known| *known == field).expect("every checked field is listed");
                        tallies[slot].record(outcome);
                    });
                }
                let total =
                    done.fetch_add(chunk.len() as u64, std::sync::atomic::Ordering::Relaxed) + chunk.len() as u64;
                progress(total);
                (tallies, memo)
            },
        )
        .map(|(tallies, _)| tallies)
        .reduce(empty_tallies, merge_tallies)
}

/// Object digests of manifest parts that many rows repeat (a run's protocol and environment),
/// remembered by the key the row states for them. A part reuses a remembered digest only when
/// it equals (as JSON) the part that digest was computed from, so it has the same canonical
/// text: what a row states decides nothing, it only finds the candidates.
#[derive(Default)]
struct DigestMemo {
    parts: HashMap<String, Vec<Remembered>>,
}

/// A manifest part and its object digest (or why it has none).
type Remembered = (Value, Result<String, String>);

/// Candidates remembered per stated key: rows that state one key for different parts are
/// digested each time beyond this.
const MEMO_CANDIDATES: usize = 4;

impl DigestMemo {
    /// `manifest_digest(part, at)`, remembered under `stated`.
    fn digest(&mut self, part: Option<&Value>, at: &str, stated: Option<&str>) -> Result<String, String> {
        let (Some(value), Some(stated)) = (part, stated) else { return manifest_digest(part, at) };
        let candidates = self.parts.entry(stated.to_string()).or_default();
        if let Some((_, digest)) = candidates.iter().find(|(known, _)| known == value) {
            return digest.clone();
        }
        let digest = manifest_digest(part, at);
        if candidates.len() < MEMO_CANDIDATES {
            candidates.push((value.clone(), digest.clone()));
        }
        digest
    }
}

impl Verifier {
    pub fn new() -> Self {
        Verifier {
            references: References::default(),
            fields: empty_tallies(),
            table_rows: Vec::new(),
            deferred: Vec::new(),
        }
    }

    /// Learns the facts of `lines` and checks every row whose references are known; the
    /// others wait for [`Verifier::finish`].
    pub fn add(&mut self, lines: &[ExportLine]) {
        self.learn(lines);
        self.check(lines);
    }

    /// Learns the facts of `lines` (also of stored rows given as lines), checking nothing.
    pub fn learn(&mut self, lines: &[ExportLine]) {
        self.references.learn(lines);
    }

    /// Checks every row of `lines` whose references are known (learn them first); the others
    /// wait for [`Verifier::finish`].
    pub fn check(&mut self, lines: &[ExportLine]) {
        let mut ready = Vec::with_capacity(lines.len());
        for line in lines {
            count_row(&mut self.table_rows, &line.table);
            if self.references.unknown_references(line).is_empty() {
                ready.push(line);
            } else {
                self.deferred.push(line.clone());
            }
        }
        let tallies = check_lines(&ready, &self.references, &|_| {});
        self.fields = merge_tallies(std::mem::take(&mut self.fields), tallies);
    }

    /// Mismatches found so far.
    pub fn mismatches(&self) -> u64 {
        self.fields.iter().map(|tally| tally.mismatched).sum()
    }

    /// Checks the rows that waited for their references, and reports.
    pub fn finish(mut self) -> VerifyReport {
        let deferred = std::mem::take(&mut self.deferred);
        let waiting: Vec<&ExportLine> = deferred.iter().collect();
        let tallies = check_lines(&waiting, &self.references, &|_| {});
        let fields = merge_tallies(self.fields, tallies);
        VerifyReport { table_rows: self.table_rows, fields }
    }
}

fn count_row(table_rows: &mut Vec<(String, u64)>, table: &str) {
    match table_rows.iter_mut().find(|(name, _)| name == table) {
        Some((_, count)) => *count += 1,
        None => table_rows.push((table.to_string(), 1)),
    }
}

/// Recomputes every digest and key of every row. Rows are checked in parallel; the
/// report does not depend on the order or the thread count.
pub fn verify_export(lines: &[ExportLine]) -> VerifyReport {
    verify_export_with_progress(lines, |_| {})
}

/// As [`verify_export`], calling `progress(rows_done)` now and then (from any thread).
pub fn verify_export_with_progress(lines: &[ExportLine], progress: impl Fn(u64) + Sync) -> VerifyReport {
    let mut references = References::default();
    references.learn(lines);
    let all: Vec<&ExportLine> = lines.iter().collect();
    let fields = check_lines(&all, &references, &progress);
    let mut table_rows: Vec<(String, u64)> = Vec::new();
    let mut positions: BTreeMap<&str, usize> = BTreeMap::new();
    for line in lines {
        match positions.get(line.table.as_str()) {
            Some(&position) => table_rows[position].1 += 1,
            None => {
                positions.insert(&line.table, table_rows.len());
                table_rows.push((line.table.clone(), 1));
            }
        }
    }
    VerifyReport { table_rows, fields }
}

/// A stored column as text for comparison and display (`null` when absent).
fn stored(row: &Map<String, Value>, column: &str) -> String {
    match row.get(column) {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => "null".to_string(),
    }
}

fn compare(line: &ExportLine, stored: String, recomputed: Result<String, String>) -> Result<(), Mismatch> {
    match recomputed {
        Ok(value) if value == stored => Ok(()),
        Ok(value) => Err(Mismatch { line: line.line, id: line.id().to_string(), stored, recomputed: value }),
        Err(reason) => {
            Err(Mismatch { line: line.line, id: line.id().to_string(), stored, recomputed: format!("error: {reason}") })
        }
    }
}

fn manifest_digest(manifest: Option<&Value>, at: &str) -> Result<String, String> {
    let manifest = manifest.ok_or_else(|| format!("{at}: no manifest"))?;
    identity::object_digest(manifest).map_err(|error| at_pointer(at, error))
}

fn at_pointer(at: &str, error: IdentityError) -> String {
    format!("{at}{error}")
}

/// The facts of the row of `table` that `row[column]` points at.
fn referenced<'a>(
    row: &Map<String, Value>,
    column: &str,
    table: &str,
    references: &'a References,
) -> Result<&'a Fact, String> {
    let id = row.get(column).and_then(Value::as_str).ok_or_else(|| format!("{column} is not an id"))?;
    references.get(table, id).ok_or_else(|| format!("no {table} row with id {id}"))
}

/// The stored digest column of a referenced row.
fn digest_of(fact: &Fact) -> String {
    match fact {
        Fact::Digest(digest) | Fact::Manifested(digest, _) | Fact::Run(digest, _) => digest.text(),
        Fact::Workload(workload) => workload.digest.clone(),
        Fact::ServingRun(_) => "null".to_string(),
    }
}

/// A string inside a manifest, for cross-reference checks.
fn manifest_str(manifest: Option<&Value>, pointer: &str) -> Result<String, String> {
    manifest
        .and_then(|manifest| manifest.pointer(pointer))
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| format!("manifest{pointer}: required string"))
}

fn check_line(
    line: &ExportLine,
    index: &References,
    memo: &mut DigestMemo,
    record: &mut dyn FnMut(Field, Result<(), Mismatch>),
) {
    let row = &line.row;
    let manifest = row.get("manifest");
    match line.table.as_str() {
        "operations" => record(
            OPERATION_DIGEST,
            compare(line, stored(row, "semanticDigest"), manifest_digest(manifest, "manifest")),
        ),
        "workloads" => {
            record(
                WORKLOAD_DIGEST,
                compare(line, stored(row, "workloadDigest"), manifest_digest(manifest, "manifest")),
            );
            let operation = referenced(row, "operationId", "operations", index).map(digest_of);
            check_reference(
                line,
                WORKLOAD_OPERATION,
                manifest_str(manifest, "/spec/operationSpecDigest"),
                operation,
                record,
            );
        }
        "implementations" => {
            record(
                IMPLEMENTATION_DIGEST,
                compare(line, stored(row, "implementationDigest"), manifest_digest(manifest, "manifest")),
            );
            let operation = referenced(row, "operationId", "operations", index).map(digest_of);
            check_reference(
                line,
                IMPLEMENTATION_OPERATION,
                manifest_str(manifest, "/spec/operation/specDigest"),
                operation,
                record,
            );
        }
        "benchmark_runs" => check_benchmark_run(line, index, memo, record),
        "measurements" => {
            let stated = referenced(row, "runId", "benchmark_runs", index).map(|run| match run {
                Fact::Run(_, stated) => &stated[..],
                _ => &[][..],
            });
            record(MEASUREMENT_OF_RUN, check_measurement(line, stated));
        }
        "record_events" => {
            let run = referenced(row, "runId", "benchmark_runs", index).map(digest_of);
            record(EVENT_COMPARISON_KEY, compare(line, stored(row, "comparisonKey"), run));
        }
        "model_revisions" => {
            record(MODEL_DIGEST, compare(line, stored(row, "modelDigest"), manifest_digest(manifest, "manifest")))
        }
        "serving_stack_revisions" => {
            record(STACK_DIGEST, compare(line, stored(row, "stackDigest"), manifest_digest(manifest, "manifest")))
        }
        "serving_configurations" => {
            record(
                CONFIGURATION_DIGEST,
                compare(line, stored(row, "configurationDigest"), manifest_digest(manifest, "manifest")),
            );
            let stack = referenced(row, "stackRevisionId", "serving_stack_revisions", index).map(digest_of);
            check_reference(line, CONFIGURATION_STACK, manifest_str(manifest, "/spec/stackDigest"), stack, record);
        }
        "serving_workloads" => record(
            SERVING_WORKLOAD_DIGEST,
            compare(line, stored(row, "workloadDigest"), manifest_digest(manifest, "manifest")),
        ),
        "serving_runs" => check_serving_run(line, index, record),
        "serving_measurements" => {
            let stated = referenced(row, "runId", "serving_runs", index).map(|run| match run {
                Fact::ServingRun(stated) => &stated[..],
                _ => &[][..],
            });
            record(SERVING_MEASUREMENT_OF_RUN, check_measurement(line, stated));
        }
        _ => {}
    }
}

/// A measurement row repeats one measurement of its run: the run's manifest must state the
/// same metric, statistic and unit with the same value and sample count. (The row need not
/// be the only one: the public index writes a row per statement, our runner only the
/// primary one.)
fn check_measurement(line: &ExportLine, stated: Result<&[Box<str>], String>) -> Result<(), Mismatch> {
    let row = &line.row;
    let text = |column: &str| row.get(column).and_then(Value::as_str).unwrap_or("null");
    let (metric, statistic, unit) = (text("metric"), text("statistic"), text("unit"));
    let kind = format!("{metric}:{statistic}:{unit}");
    let stored = show_measurement(
        &kind,
        row.get("value").and_then(Value::as_f64),
        row.get("sampleCount").and_then(Value::as_u64),
    );
    let prefix = format!("{kind} = ");
    let recomputed = stated.and_then(|stated| {
        let same_kind: Vec<&str> =
            stated.iter().map(|shown| &**shown).filter(|shown| shown.starts_with(&prefix)).collect();
        if same_kind.is_empty() {
            return Err(format!("the run's manifest states no {metric}:{statistic}:{unit}"));
        }
        // Equal when any statement agrees (a latency may be stated twice, in timing and in measurements).
        Ok(same_kind.iter().find(|s| **s == stored).unwrap_or(&same_kind[0]).to_string())
    });
    compare(line, stored, recomputed)
}

/// A manifest names a digest; the row it points at by id must carry that digest.
fn check_reference(
    line: &ExportLine,
    field: Field,
    named: Result<String, String>,
    target: Result<String, String>,
    record: &mut dyn FnMut(Field, Result<(), Mismatch>),
) {
    let outcome = match named {
        // `stored` is the manifest's claim, `recomputed` what the referenced row holds.
        Ok(named) => compare(line, named, target),
        Err(reason) => compare(line, "null".to_string(), Err(reason)),
    };
    record(field, outcome);
}

fn check_benchmark_run(
    line: &ExportLine,
    index: &References,
    memo: &mut DigestMemo,
    record: &mut dyn FnMut(Field, Result<(), Mismatch>),
) {
    let row = &line.row;
    let manifest = row.get("manifest");
    let run = manifest.and_then(|m| m.get("run"));
    let protocol = manifest.and_then(|m| m.get("protocol"));
    let environment = manifest.and_then(|m| m.get("environment"));

    record(RUN_DIGEST, compare(line, stored(row, "runDigest"), manifest_digest(run, "manifest/run")));
    let stated = |column: &str| row.get(column).and_then(Value::as_str);
    let protocol_key = memo.digest(protocol, "manifest/protocol", stated("protocolKey"));
    let environment_key = memo.digest(environment, "manifest/environment", stated("environmentKey"));
    record(RUN_PROTOCOL_KEY, compare(line, stored(row, "protocolKey"), protocol_key.clone()));
    record(RUN_ENVIRONMENT_KEY, compare(line, stored(row, "environmentKey"), environment_key.clone()));
    check_reference(line, RUN_PROTOCOL_DIGEST, manifest_str(run, "/spec/protocolDigest"), protocol_key.clone(), record);
    check_reference(
        line,
        RUN_ENVIRONMENT_DIGEST,
        manifest_str(run, "/spec/environmentDigest"),
        environment_key.clone(),
        record,
    );

    let implementation_digest = referenced(row, "implementationId", "implementations", index).map(digest_of);
    check_reference(
        line,
        RUN_IMPLEMENTATION,
        manifest_str(run, "/spec/implementationDigest"),
        implementation_digest,
        record,
    );
    let workload = referenced(row, "workloadId", "workloads", index).and_then(|fact| match fact {
        Fact::Workload(workload) => Ok(&**workload),
        _ => Err("the workload row has no manifest".to_string()),
    });
    let workload_digest = workload.clone().map(|w| w.digest.clone());
    check_reference(line, RUN_WORKLOAD, manifest_str(run, "/spec/workloadDigest"), workload_digest, record);

    // The workload's own manifest, not its stored digest column, feeds the keys.
    let workload_manifest = workload.and_then(|w| w.manifest.clone());
    let correctness_key = workload_manifest.clone().and_then(|(correctness, _, _)| correctness);
    record(RUN_CORRECTNESS_KEY, compare(line, stored(row, "correctnessKey"), correctness_key.clone()));

    let primary = run
        .ok_or_else(|| "manifest/run: missing".to_string())
        .and_then(|run| identity::primary_measurement(&run["spec"]).map_err(|e| at_pointer("manifest/run/spec", e)));
    let stored_metric_key = match row.get("primaryMetric").and_then(Value::as_str) {
        Some(identity::NO_METRIC) => identity::NO_METRIC.to_string(),
        _ => format!(
            "{}:{}:{}",
            stored(row, "primaryMetric"),
            stored(row, "primaryStatistic"),
            stored(row, "primaryUnit")
        ),
    };
    let metric_key = primary.clone().map(|p| identity::metric_key(p.as_ref()));
    record(RUN_METRIC_KEY, compare(line, stored_metric_key, metric_key.clone()));
    let show_value = |value: Option<f64>, samples: Option<u64>| {
        format!(
            "{} ({} samples)",
            value.map_or("null".to_string(), |v| v.to_string()),
            samples.map_or("null".to_string(), |s| s.to_string())
        )
    };
    let stored_value =
        show_value(row.get("primaryValue").and_then(Value::as_f64), row.get("sampleCount").and_then(Value::as_u64));
    let value = primary.map(|p| match p {
        Some(p) => show_value(p.value.as_f64(), p.sample_count),
        None => show_value(None, None),
    });
    record(RUN_PRIMARY_VALUE, compare(line, stored_value, value));

    let comparison_key = (|| -> Result<String, String> {
        let (_, operation, workload_digest) = workload_manifest?;
        let (operation, workload_digest) = (operation?, workload_digest?);
        Ok(identity::comparison_key(&ComparisonParts {
            operation: &operation,
            workload: &workload_digest,
            protocol: &protocol_key?,
            environment: &environment_key?,
            correctness: &correctness_key?,
            metric: &metric_key?,
        }))
    })();
    record(RUN_COMPARISON_KEY, compare(line, stored(row, "comparisonKey"), comparison_key));
}

fn check_serving_run(line: &ExportLine, index: &References, record: &mut dyn FnMut(Field, Result<(), Mismatch>)) {
    let row = &line.row;
    let manifest = row.get("manifest");
    record(SERVING_RUN_DIGEST, compare(line, stored(row, "runDigest"), manifest_digest(manifest, "manifest")));

    let model = referenced(row, "modelRevisionId", "model_revisions", index);
    let configuration = referenced(row, "configurationId", "serving_configurations", index);
    let workload = referenced(row, "workloadId", "serving_workloads", index);
    check_reference(
        line,
        SERVING_RUN_MODEL,
        manifest_str(manifest, "/spec/modelDigest"),
        model.clone().map(digest_of),
        record,
    );
    check_reference(
        line,
        SERVING_RUN_CONFIGURATION,
        manifest_str(manifest, "/spec/configurationDigest"),
        configuration.map(digest_of),
        record,
    );
    check_reference(
        line,
        SERVING_RUN_WORKLOAD,
        manifest_str(manifest, "/spec/workloadDigest"),
        workload.clone().map(digest_of),
        record,
    );

    let keys = (|| -> Result<identity::ServingRunKeys, String> {
        let run = manifest.ok_or("no manifest")?;
        fn manifest_of(fact: &Fact) -> Option<&Value> {
            match fact {
                Fact::Manifested(_, Some(manifest)) => Some(&**manifest),
                _ => None,
            }
        }
        let model = manifest_of(model?).ok_or("the model_revisions row has no manifest")?;
        let workload = manifest_of(workload?).ok_or("the serving_workloads row has no manifest")?;
        identity::serving_run_keys(run, model, workload).map_err(|error| error.to_string())
    })();
    let part =
        |pick: fn(&identity::ServingRunKeys) -> &String| keys.as_ref().map(|k| pick(k).clone()).map_err(Clone::clone);
    record(SERVING_RUN_PROTOCOL_KEY, compare(line, stored(row, "protocolKey"), part(|k| &k.protocol_key)));
    record(SERVING_RUN_METRIC_SET_KEY, compare(line, stored(row, "metricSetKey"), part(|k| &k.metric_set_key)));
    record(SERVING_RUN_COHORT_KEY, compare(line, stored(row, "cohortKey"), part(|k| &k.cohort_key)));
}
