//! The server's in-memory read model: every catalog row in export format, indexed for
//! the lookups the pages make. Built once at start (and after writes) so that a request
//! only does hash lookups and rendering, never a database query.
//!
//! It also holds what the run dossier ([`crate::dossier`]) and the pages share: links, fields,
//! run summaries and the sizes of a page's lists.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use ki_ranking::understand::Lexicon;

use ki_model::search_text::{self, SearchKind};
use serde::Serialize;
use serde_json::{Map, Value};

pub type Row = Map<String, Value>;

/// A benchmark run as the ranking's index holds it (typed; its manifest is not kept here).
pub type RunRow = ki_ranking::rows::BenchmarkRunRow;

/// A row read from the catalog or an export: its table and its camelCase columns.
#[derive(Debug, Clone)]
pub struct CatalogRow {
    pub table: String,
    pub row: Row,
}

/// Text of a string column, or "" when absent or null.
pub fn text<'a>(row: &'a Row, column: &str) -> &'a str {
    row.get(column).and_then(Value::as_str).unwrap_or("")
}

/// Text of a string column, or None when absent, null or empty.
pub fn opt_text<'a>(row: &'a Row, column: &str) -> Option<&'a str> {
    row.get(column).and_then(Value::as_str).filter(|s| !s.is_empty())
}

pub fn number(row: &Row, column: &str) -> Option<f64> {
    row.get(column).and_then(Value::as_f64)
}

pub fn flag(row: &Row, column: &str) -> bool {
    row.get(column).and_then(Value::as_bool).unwrap_or(false)
}

/// Follows a path of object keys inside a JSON value.
pub fn pointer<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |at, key| at.get(*key))
}

/// Rows held as compact JSON text with an id index, each parsed when it is read: for a table
/// of many rows that pages read a few at a time (implementations: as JSON maps about 5 KB a
/// row, as text a fifth of that).
#[derive(Debug, Default)]
pub struct TextTable {
    rows: Vec<Box<str>>,
    by_id: HashMap<String, usize>,
}

impl TextTable {
    fn push(&mut self, row: &Row) -> usize {
        let index = self.rows.len();
        if let Some(id) = row.get("id").and_then(Value::as_str) {
            self.by_id.insert(id.to_string(), index);
        }
        self.rows.push(serde_json::to_string(row).unwrap_or_default().into_boxed_str());
        index
    }

    /// Row `index` (written by `push` from a row, so it parses back to that row).
    pub fn row(&self, index: usize) -> Row {
        serde_json::from_str(&self.rows[index]).unwrap_or_default()
    }

    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    pub fn get(&self, id: &str) -> Option<Row> {
        self.index_of(id).map(|i| self.row(i))
    }

    /// Every row, parsed in turn.
    pub fn iter(&self) -> impl Iterator<Item = Row> + '_ {
        (0..self.rows.len()).map(|i| self.row(i))
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// One table's rows with an id index.
#[derive(Debug, Default)]
pub struct Table {
    pub rows: Vec<Row>,
    by_id: HashMap<String, usize>,
}

impl Table {
    fn push(&mut self, row: Row) -> usize {
        let index = self.rows.len();
        if let Some(id) = row.get("id").and_then(Value::as_str) {
            self.by_id.insert(id.to_string(), index);
        }
        self.rows.push(row);
        index
    }

    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    pub fn get(&self, id: &str) -> Option<&Row> {
        self.index_of(id).map(|i| &self.rows[i])
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// What the search box can find (`pages::search` scores and filters them).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct SearchEntry {
    pub kind: &'static str,
    pub label: String,
    pub detail: String,
    pub href: String,
    /// Benchmark runs behind the entry.
    pub runs: usize,
    /// The GPUs of those runs, most runs first.
    pub gpus: Vec<String>,
    /// The catalog search index's key for the entry (the row's id; a GPU's model).
    #[serde(skip)]
    pub key: String,
    /// Lower-cased text the words are looked for in (`ki_model::search_text`).
    #[serde(skip)]
    pub haystack: String,
    /// The names that count as an exact match, lower-cased with `_` and `-` as spaces.
    #[serde(skip)]
    pub names: Vec<String>,
    /// The operation, for operations.
    #[serde(skip)]
    pub operation: Option<usize>,
    /// The row behind the entry among those of its kind (the operation, implementation or
    /// project index; the GPU's place in `runs_by_gpu`).
    #[serde(skip)]
    pub of: usize,
    /// The run classes ([`ReadModel::run_classes`]) of the runs behind the entry, ascending.
    #[serde(skip)]
    pub classes: Vec<u32>,
    /// `gpus` as places in [`Tables::runs_by_gpu`].
    #[serde(skip)]
    pub gpu_ids: Vec<u32>,
    /// The projects of the runs behind the entry, as places in the ranking's projects, ascending.
    #[serde(skip)]
    pub project_ids: Vec<u32>,
    /// The languages and dtype lists of the runs behind the entry, as places
    /// ([`ClassPlaces`]), ascending.
    #[serde(skip)]
    pub language_ids: Vec<u32>,
    #[serde(skip)]
    pub dtype_set_ids: Vec<u32>,
    /// The best evidence among the runs behind the entry (none: no run).
    #[serde(skip)]
    pub best_trust: Option<ki_ranking::TrustLevel>,
    /// The entry's place when entries score alike: operations first, then the most-run, then by
    /// label, kind and key (fixed when the model is built, so a search sorts integers).
    #[serde(skip)]
    pub order: u32,
}

/// What the `gpu:`, `source:`, `project:`, `language:` and `dtype:` filters read of a run class,
/// as places (in `runs_by_gpu`, the sources table, the ranking's projects,
/// [`Tables::class_languages`] and [`Tables::class_dtype_sets`]), so a search compares integers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassPlaces {
    pub gpu: u32,
    pub source: u32,
    pub project: u32,
    pub language: u32,
    pub dtypes: u32,
}

impl ClassPlaces {
    pub const NONE: u32 = u32::MAX;
}

/// A record event of the ranking index (`Index::record_events[event]`) and its new holder's run.
#[derive(Debug, Clone, Copy)]
pub struct RecordRef {
    pub event: u32,
    pub holder: Option<u32>,
}

/// Every row, indexed for display lookups.
#[derive(Debug, Default)]
pub struct Tables {
    pub sources: Table,
    pub projects: Table,
    pub operations: Table,
    /// Each workload's label (its variable axes and dtypes), in the ranking index's workload
    /// order; the rest of a workload is the index's (typed row, axes, manifest).
    pub workload_labels: Vec<Box<str>>,
    pub implementations: TextTable,
    pub artifacts: Table,
    /// The ranking index's record events newest first (ties by id), each with its new holder's
    /// run, so that the ledger pages neither sort nor look runs up per request.
    pub records: Vec<RecordRef>,
    pub model_revisions: Table,
    pub serving_stacks: Table,
    pub serving_configurations: Table,
    pub serving_workloads: Table,
    pub serving_runs: Table,
    /// Superseded run id → the audit entry of its supersession (only from a catalog; an
    /// export carries no audit trail).
    pub supersessions: HashMap<String, Row>,

    pub operation_by_slug: HashMap<String, usize>,
    /// Lower-cased name, slug and every alias → operation.
    pub operation_by_name: HashMap<String, usize>,
    pub aliases_by_operation: HashMap<usize, Vec<String>>,
    pub project_by_slug: HashMap<String, usize>,
    pub implementation_by_slug: HashMap<String, usize>,
    /// The source's own id of a run (`submission/555004`), lower-cased.
    pub runs_by_external_id: HashMap<String, Vec<u32>>,
    pub artifact_by_digest: HashMap<String, usize>,
    pub serving_run_by_digest: HashMap<String, usize>,

    pub implementations_by_operation: HashMap<usize, Vec<usize>>,
    pub implementations_by_project: HashMap<usize, Vec<usize>>,
    pub runs_by_implementation: HashMap<usize, Vec<u32>>,
    pub serving_measurements_by_run: HashMap<usize, Vec<Row>>,
    /// Hardware model → run indexes.
    pub runs_by_gpu: Vec<(String, Vec<u32>)>,
    pub search: Vec<SearchEntry>,
    /// One run of each run class: runs that every run filter of a search treats alike (same
    /// GPU, architecture, source, trust, installability, project, language, licence and
    /// dtypes). A search tests each class once, not each run: at a million runs, testing
    /// every run behind every entry took 400 ms for `flashinfer h200`.
    pub run_classes: Vec<u32>,
    /// Each run's class (a place in `run_classes`).
    pub class_of_run: Vec<u32>,
    /// What the `gpu:`, `source:`, `project:`, `language:` and `dtype:` filters read of each
    /// class, as places.
    pub class_places: Vec<ClassPlaces>,
    /// The implementations' languages that classes name (`ClassPlaces::language`).
    pub class_languages: Vec<String>,
    /// The workloads' dtype lists that classes name (`ClassPlaces::dtypes`).
    pub class_dtype_sets: Vec<Vec<String>>,
    /// Search entries by the catalog search index's kind and key.
    pub search_by_key: HashMap<(SearchKind, String), usize>,
    /// The entries the catalog's search index found for each word asked since this model was
    /// built.
    pub search_matches: WordMatches,
}

/// The tables plus the ranking's judgement on them. Run indexes agree between the two:
/// both hold benchmark runs in the order the rows came.
#[derive(Debug)]
pub struct ReadModel {
    pub tables: Tables,
    pub judgement: ki_ranking::Index,
}

impl std::ops::Deref for ReadModel {
    type Target = Tables;
    fn deref(&self) -> &Tables {
        &self.tables
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("row {index} of {table}: {message}")]
    BadRow { table: String, index: usize, message: String },
    #[error("the ranking refused the catalog: {0}")]
    Ranking(#[from] ki_ranking::RowError),
}

impl ReadModel {
    /// One pass over the rows: each ranking row goes whole (moved, not copied) to the ranking's
    /// index, which keeps the one full copy of the manifests (compact, parsed per page); the
    /// tables keep the columns and, of the big manifests, only what lists and search read for
    /// many rows at once ([`list_parts`]).
    pub fn build(rows: Vec<CatalogRow>) -> Result<ReadModel, ModelError> {
        let mut builder = ModelBuilder::new(RunDetails::Held);
        for CatalogRow { table, row } in rows {
            builder.push(table, row);
        }
        builder.finish()
    }

    /// A run's typed row (its manifest is [`ki_ranking::Index::run_manifest`]).
    pub fn run(&self, run: usize) -> &RunRow {
        &self.judgement.runs[run]
    }

    /// What the model holds of the run beyond its typed row, when it holds its details (a model
    /// built from export rows); None for a model whose runs' details stay in the catalog.
    pub fn held_run_detail(&self, run: usize) -> Option<RunDetail> {
        let manifest = self.judgement.run_manifest(run)?;
        Some(RunDetail { manifest, measurements: self.judgement.measurements_of(run).cloned().collect() })
    }

    /// The run's whole manifest (`{run, protocol, environment}`) and its measurements: the
    /// index's copies when it holds them, else the catalog's (read by indexed run id).
    pub async fn run_detail(
        &self,
        catalog: &ki_catalog::Catalog,
        run: usize,
    ) -> Result<RunDetail, ki_catalog::CatalogError> {
        if let Some(detail) = self.held_run_detail(run) {
            return Ok(detail);
        }
        let id = &*self.run(run).id.text();
        let manifest = catalog.run_by_id(id).await?.and_then(|mut row| row.remove("manifest")).unwrap_or(Value::Null);
        let measurements = catalog
            .measurements_of_run(id)
            .await?
            .into_iter()
            .map(|row| {
                serde_json::from_value(Value::Object(row))
                    .map_err(|e| ki_catalog::CatalogError::Corrupt(format!("a measurement of run {id}: {e}")))
            })
            .collect::<Result<_, _>>()?;
        Ok(RunDetail { manifest, measurements })
    }

    /// The run's row in export format with its whole manifest ([`ReadModel::run_detail`]).
    pub async fn full_run_row(
        &self,
        catalog: &ki_catalog::Catalog,
        run: usize,
    ) -> Result<Row, ki_catalog::CatalogError> {
        let mut row = match serde_json::to_value(self.run(run)) {
            Ok(Value::Object(row)) => row,
            _ => Row::new(),
        };
        row.insert("manifest".into(), self.run_detail(catalog, run).await?.manifest);
        Ok(row)
    }

    /// A workload's typed row with its whole manifest (the dossier shows its tensors).
    pub fn full_workload_row(&self, workload: usize) -> Row {
        let mut row = match serde_json::to_value(&self.judgement.workloads[workload]) {
            Ok(Value::Object(row)) => row,
            _ => Row::new(),
        };
        row.insert("manifest".into(), self.judgement.workload_manifest(workload));
        row
    }

    /// The label of the workload a run measured.
    pub fn run_workload_label(&self, run: usize) -> &str {
        &self.workload_labels[self.judgement.run_workload(run)]
    }
}

/// What a run's page reads beyond the run's typed row ([`ReadModel::run_detail`]).
#[derive(Debug, Clone)]
pub struct RunDetail {
    /// `{run, protocol, environment}`.
    pub manifest: Value,
    pub measurements: Vec<ki_ranking::rows::MeasurementRow>,
}

/// Whether a model keeps its runs' details (whole manifests and measurement rows). A model built
/// from a catalog does not: they are most of a catalog's bytes (kilobytes a run) and a page about
/// one run reads them from the catalog by id ([`ReadModel::run_detail`]); one built from export
/// rows has no catalog to ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunDetails {
    Held,
    InCatalog,
}

/// Takes rows one at a time (as they stream from a catalog or an export) into what the model
/// keeps, so that building never holds every row whole.
pub struct ModelBuilder {
    run_details: RunDetails,
    ranking_rows: ki_ranking::CatalogRows,
    table_rows: Vec<CatalogRow>,
}

impl ModelBuilder {
    pub fn new(run_details: RunDetails) -> ModelBuilder {
        let ranking_rows = match run_details {
            RunDetails::Held => ki_ranking::CatalogRows::new(),
            RunDetails::InCatalog => ki_ranking::CatalogRows::without_run_manifests(),
        };
        ModelBuilder { run_details, ranking_rows, table_rows: Vec::new() }
    }

    pub fn push(&mut self, table: String, row: Row) {
        if !ki_ranking::rows::RANKING_TABLES.contains(&table.as_str()) {
            self.table_rows.push(CatalogRow { table, row });
            return;
        }
        // Pages read runs and measurements from the index's typed rows (`ReadModel::run`,
        // `Index::measurements_of`).
        if table == "measurements" {
            if self.run_details == RunDetails::Held {
                self.ranking_rows.push(&table, row, None);
            }
            return;
        }
        if table == "benchmark_runs" {
            self.ranking_rows.push(&table, row, None);
            return;
        }
        let parts = list_parts(&table);
        let columns: Row = row
            .iter()
            .map(|(key, value)| match key.as_str() {
                "manifest" if !parts.is_empty() => (key.clone(), pruned(value, parts)),
                _ => (key.clone(), value.clone()),
            })
            .collect();
        self.ranking_rows.push(&table, row, None);
        self.table_rows.push(CatalogRow { table, row: columns });
    }

    pub fn finish(self) -> Result<ReadModel, ModelError> {
        let judgement = ki_ranking::Index::from_owned_rows(self.ranking_rows)?;
        let tables = Tables::build(self.table_rows, &judgement)?;
        release_freed_memory();
        Ok(ReadModel { tables, judgement })
    }
}

/// The parts of a manifest the tables keep, per table: what list pages, labels and search
/// read for many rows at once. Pages about one record take the whole manifest from the
/// ranking's index (`ReadModel::full_run_row` and its neighbours). Tables not named keep
/// their manifests whole (they are small, or the index does not hold them).
pub fn list_parts(table: &str) -> &'static [&'static [&'static str]] {
    match table {
        "operations" => &[&["metadata", "title"], &["spec", "axes"]],
        "workloads" => &[&["spec", "axes"]],
        "implementations" => {
            &[&["metadata", "name"], &["spec", "projectRevision"], &["spec", "source"], &["spec", "callable"]]
        }
        _ => &[],
    }
}

/// A copy of `value` with only the given paths (absent ones stay absent).
fn pruned(value: &Value, paths: &[&[&str]]) -> Value {
    let mut out = Value::Object(Map::new());
    for path in paths {
        let Some(found) = pointer(value, path) else { continue };
        let mut at = &mut out;
        for key in &path[..path.len() - 1] {
            at = at
                .as_object_mut()
                .expect("pruned builds objects only")
                .entry(key.to_string())
                .or_insert_with(|| Value::Object(Map::new()));
        }
        if let (Some(object), Some(last)) = (at.as_object_mut(), path.last()) {
            object.insert(last.to_string(), found.clone());
        }
    }
    out
}

/// Gives the pages the building freed back to the system: glibc keeps a process's peak
/// otherwise, and a build's peak is twice what the model holds.
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free heap pages to the kernel; it touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}

impl Tables {
    fn build(rows: Vec<CatalogRow>, judgement: &ki_ranking::Index) -> Result<Tables, ModelError> {
        let mut model = Tables::default();
        let mut aliases: Vec<Row> = Vec::new();
        let mut serving_measurements: Vec<Row> = Vec::new();
        let mut workloads: Vec<Row> = Vec::new();
        for (index, CatalogRow { table, row }) in rows.into_iter().enumerate() {
            let needs_id = !matches!(table.as_str(), "operation_aliases" | "measurements" | "serving_measurements");
            if needs_id && row.get("id").and_then(Value::as_str).is_none() {
                return Err(ModelError::BadRow { table, index, message: "no id".into() });
            }
            match table.as_str() {
                "sources" => drop(model.sources.push(row)),
                "projects" => drop(model.projects.push(row)),
                "operations" => drop(model.operations.push(row)),
                "operation_aliases" => aliases.push(row),
                "workloads" => workloads.push(row),
                "implementations" => drop(model.implementations.push(&row)),
                // The ranking index holds the record events as typed rows (`Tables::records`).
                "record_events" => {}
                "artifacts" => drop(model.artifacts.push(row)),
                "model_revisions" => drop(model.model_revisions.push(row)),
                "serving_stack_revisions" => drop(model.serving_stacks.push(row)),
                "serving_configurations" => drop(model.serving_configurations.push(row)),
                "serving_workloads" => drop(model.serving_workloads.push(row)),
                "serving_runs" => drop(model.serving_runs.push(row)),
                "serving_measurements" => serving_measurements.push(row),
                "corrections" if text(&row, "action") == "supersede" => {
                    drop(model.supersessions.insert(text(&row, "runId").to_string(), row))
                }
                // Tables the web does not show (source snapshots, links) are skipped.
                _ => {}
            }
        }

        for (i, op) in model.operations.rows.iter().enumerate() {
            model.operation_by_slug.insert(text(op, "slug").to_string(), i);
            model.operation_by_name.insert(text(op, "slug").to_lowercase(), i);
            model.operation_by_name.insert(text(op, "name").to_lowercase(), i);
        }
        for alias in &aliases {
            if let Some(op) = model.operations.index_of(text(alias, "operationId")) {
                let name = text(alias, "alias").to_string();
                model.operation_by_name.insert(name.to_lowercase(), op);
                model.aliases_by_operation.entry(op).or_default().push(name);
            }
        }
        for (i, p) in model.projects.rows.iter().enumerate() {
            model.project_by_slug.insert(text(p, "slug").to_string(), i);
        }
        model.workload_labels = workloads
            .iter()
            .map(|w| {
                let operation = model.operations.get(text(w, "operationId"));
                workload_label(w, operation).into_boxed_str()
            })
            .collect();
        for (i, imp) in model.implementations.iter().enumerate() {
            model.implementation_by_slug.insert(text(&imp, "slug").to_string(), i);
            if let Some(op) = model.operations.index_of(text(&imp, "operationId")) {
                model.implementations_by_operation.entry(op).or_default().push(i);
            }
            if let Some(p) = model.projects.index_of(text(&imp, "projectId")) {
                model.implementations_by_project.entry(p).or_default().push(i);
            }
        }
        let mut gpus: HashMap<String, Vec<u32>> = HashMap::new();
        for (i, run) in judgement.runs.iter().enumerate() {
            let number = u32::try_from(i).expect("fewer than 2^32 runs");
            if let Some(external) = judgement.run_external_id(i) {
                model.runs_by_external_id.entry(external.to_lowercase()).or_default().push(number);
            }
            if let Some(imp) = model.implementations.index_of(&run.implementation_id) {
                model.runs_by_implementation.entry(imp).or_default().push(number);
            }
            if let Some(gpu) = run.hardware_model.as_deref().filter(|g| !g.is_empty()) {
                gpus.entry(gpu.to_string()).or_default().push(number);
            }
        }
        model.runs_by_gpu = gpus.into_iter().collect();
        model.runs_by_gpu.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));
        for m in serving_measurements {
            if let Some(run) = model.serving_runs.index_of(text(&m, "runId")) {
                model.serving_measurements_by_run.entry(run).or_default().push(m);
            }
        }
        for (i, a) in model.artifacts.rows.iter().enumerate() {
            model.artifact_by_digest.insert(text(a, "contentDigest").to_string(), i);
        }
        for (i, r) in model.serving_runs.rows.iter().enumerate() {
            model.serving_run_by_digest.insert(text(r, "runDigest").to_string(), i);
        }
        // Newest first, ties by id, so "recent records" needs no sort per request.
        let events = &judgement.record_events;
        let mut newest: Vec<usize> = (0..events.len()).collect();
        newest.sort_by(|&a, &b| {
            let (a, b) = (&events[a], &events[b]);
            b.at.text().cmp(&a.at.text()).then(b.id.cmp(&a.id))
        });
        model.records = newest
            .into_iter()
            .map(|event| RecordRef {
                event: u32::try_from(event).expect("fewer than 2^32 record events"),
                holder: judgement.run_of(&events[event].run_id).map(|run| run as u32),
            })
            .collect();
        model.check_aligned(&workloads, judgement)?;
        let (class_of_run, run_classes) = run_classes(judgement);
        model.set_class_places(judgement, &run_classes);
        model.run_classes = run_classes;
        model.search = model.build_search(judgement, &class_of_run, &model.class_places);
        model.class_of_run = class_of_run;
        model.search_by_key = model
            .search
            .iter()
            .enumerate()
            .filter_map(|(i, e)| Some(((SearchKind::parse(e.kind)?, e.key.clone()), i)))
            .collect();
        Ok(model)
    }
}

impl Tables {
    /// Pages index the tables and the ranking's index by the same position (a run's facts,
    /// its full manifest): both must hold the same rows in the same order.
    fn check_aligned(&self, workloads: &[Row], judgement: &ki_ranking::Index) -> Result<(), ModelError> {
        let implementations: Vec<Row> = self.implementations.iter().collect();
        let tables: [(&str, &[Row], Vec<&str>); 3] = [
            ("operations", &self.operations.rows, judgement.operations.iter().map(|r| r.id.as_str()).collect()),
            ("workloads", workloads, judgement.workloads.iter().map(|r| r.id.as_str()).collect()),
            ("implementations", &implementations, judgement.implementations.iter().map(|r| r.id.as_str()).collect()),
        ];
        for (table, rows, ids) in tables {
            let held: Vec<&str> = rows.iter().map(|r| text(r, "id")).collect();
            if held != ids {
                return Err(ModelError::BadRow {
                    table: table.into(),
                    index: held.iter().zip(&ids).position(|(a, b)| a != b).unwrap_or(held.len().min(ids.len())),
                    message: "the tables and the ranking's index disagree on the rows' order".into(),
                });
            }
        }
        Ok(())
    }

    fn build_search(
        &self,
        judgement: &ki_ranking::Index,
        class_of_run: &[u32],
        class_places: &[ClassPlaces],
    ) -> Vec<SearchEntry> {
        let classes_of = |runs: &mut dyn Iterator<Item = u32>| {
            let mut classes: Vec<u32> = runs.map(|r| class_of_run[r as usize]).collect();
            classes.sort_unstable();
            classes.dedup();
            classes
        };
        let gpus_of = |runs: &[u32]| {
            let mut counts: HashMap<&str, usize> = HashMap::new();
            for &r in runs {
                if let Some(gpu) = judgement.runs[r as usize].hardware_model.as_deref().filter(|g| !g.is_empty()) {
                    *counts.entry(gpu).or_default() += 1;
                }
            }
            let mut gpus: Vec<(&str, usize)> = counts.into_iter().collect();
            gpus.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            gpus.into_iter().map(|(g, _)| g.to_string()).collect::<Vec<_>>()
        };
        let mut out = Vec::new();
        for (i, op) in self.operations.rows.iter().enumerate() {
            let aliases = self.aliases_by_operation.get(&i).cloned().unwrap_or_default();
            let aliases: Vec<&str> = aliases.iter().map(String::as_str).collect();
            let entry_run_list: Vec<u32> = self.entry_runs(judgement, SearchKind::Operation.as_str(), i).collect();
            let found = search_text::operation(text(op, "name"), text(op, "slug"), text(op, "family"), &aliases);
            out.push(SearchEntry {
                kind: SearchKind::Operation.as_str(),
                label: self.operation_title(i).to_string(),
                detail: text(op, "family").to_string(),
                href: format!("/operations/{}", text(op, "slug")),
                runs: entry_run_list.len(),
                gpus: gpus_of(&entry_run_list),
                key: text(op, "id").to_string(),
                haystack: found.haystack,
                names: found.names,
                operation: Some(i),
                of: i,
                classes: classes_of(&mut entry_run_list.into_iter()),
                gpu_ids: Vec::new(),
                project_ids: Vec::new(),
                language_ids: Vec::new(),
                dtype_set_ids: Vec::new(),
                best_trust: None,
                order: 0,
            });
        }
        for (i, imp) in self.implementations.iter().enumerate() {
            let imp = &imp;
            let entry_run_list: Vec<u32> = self.entry_runs(judgement, SearchKind::Implementation.as_str(), i).collect();
            let found = search_text::implementation(text(imp, "slug"), text(imp, "title"));
            out.push(SearchEntry {
                kind: SearchKind::Implementation.as_str(),
                label: text(imp, "slug").to_string(),
                detail: text(imp, "title").to_string(),
                href: format!("/implementations/{}", text(imp, "slug")),
                runs: entry_run_list.len(),
                gpus: gpus_of(&entry_run_list),
                key: text(imp, "id").to_string(),
                haystack: found.haystack,
                names: found.names,
                operation: None,
                of: i,
                classes: classes_of(&mut entry_run_list.into_iter()),
                gpu_ids: Vec::new(),
                project_ids: Vec::new(),
                language_ids: Vec::new(),
                dtype_set_ids: Vec::new(),
                best_trust: None,
                order: 0,
            });
        }
        for (i, p) in self.projects.rows.iter().enumerate() {
            let entry_run_list: Vec<u32> = self.entry_runs(judgement, SearchKind::Project.as_str(), i).collect();
            let found = search_text::project(text(p, "name"), text(p, "slug"));
            out.push(SearchEntry {
                kind: SearchKind::Project.as_str(),
                label: text(p, "name").to_string(),
                detail: text(p, "slug").to_string(),
                href: format!("/projects/{}", text(p, "slug")),
                runs: entry_run_list.len(),
                gpus: gpus_of(&entry_run_list),
                key: text(p, "id").to_string(),
                haystack: found.haystack,
                names: found.names,
                operation: None,
                of: i,
                classes: classes_of(&mut entry_run_list.into_iter()),
                gpu_ids: Vec::new(),
                project_ids: Vec::new(),
                language_ids: Vec::new(),
                dtype_set_ids: Vec::new(),
                best_trust: None,
                order: 0,
            });
        }
        for (i, (gpu, runs)) in self.runs_by_gpu.iter().enumerate() {
            let found = search_text::hardware(gpu);
            let gpu_id = u32::try_from(i).expect("fewer than 2^32 GPUs");
            out.push(SearchEntry {
                kind: SearchKind::Hardware.as_str(),
                label: gpu.clone(),
                detail: format!("{} runs", runs.len()),
                href: format!("/gpus/{}", slugify(gpu)),
                runs: runs.len(),
                gpus: vec![gpu.clone()],
                key: gpu.clone(),
                haystack: found.haystack,
                names: found.names,
                operation: None,
                of: i,
                classes: classes_of(&mut runs.iter().copied()),
                gpu_ids: vec![gpu_id],
                project_ids: Vec::new(),
                language_ids: Vec::new(),
                dtype_set_ids: Vec::new(),
                best_trust: None,
                order: 0,
            });
        }
        let gpu_place: HashMap<&str, u32> =
            self.runs_by_gpu.iter().enumerate().map(|(i, (gpu, _))| (gpu.as_str(), i as u32)).collect();
        for entry in &mut out {
            entry.gpu_ids = entry.gpus.iter().filter_map(|gpu| gpu_place.get(gpu.as_str()).copied()).collect();
            entry.best_trust =
                entry.classes.iter().map(|&c| judgement.facts[self.run_classes[c as usize] as usize].trust).max();
            let places_of = |place: fn(&ClassPlaces) -> u32| {
                let mut places: Vec<u32> = entry.classes.iter().map(|&c| place(&class_places[c as usize])).collect();
                places.sort_unstable();
                places.dedup();
                places
            };
            entry.project_ids = places_of(|p| p.project);
            entry.language_ids = places_of(|p| p.language);
            entry.dtype_set_ids = places_of(|p| p.dtypes);
        }
        let mut by_order: Vec<usize> = (0..out.len()).collect();
        by_order.sort_by(|&a, &b| {
            let (a, b) = (&out[a], &out[b]);
            (a.kind != "operation")
                .cmp(&(b.kind != "operation"))
                .then(b.runs.cmp(&a.runs))
                .then(a.label.cmp(&b.label))
                .then(a.kind.cmp(b.kind))
                .then(a.key.cmp(&b.key))
        });
        for (order, entry) in by_order.into_iter().enumerate() {
            out[entry].order = u32::try_from(order).expect("fewer than 2^32 search entries");
        }
        out
    }

    /// Each class's places ([`ClassPlaces`]; `NONE` where the run names none), and the
    /// languages and dtype lists they point to.
    fn set_class_places(&mut self, judgement: &ki_ranking::Index, representatives: &[u32]) {
        let gpus: HashMap<&str, u32> =
            self.runs_by_gpu.iter().enumerate().map(|(i, (gpu, _))| (gpu.as_str(), i as u32)).collect();
        let sources: HashMap<&str, u32> =
            self.sources.rows.iter().enumerate().map(|(i, row)| (text(row, "id"), i as u32)).collect();
        let mut languages: HashMap<&str, u32> = HashMap::new();
        let mut dtype_sets: HashMap<&[String], u32> = HashMap::new();
        let places = representatives
            .iter()
            .map(|&run| {
                let next = |len: usize| u32::try_from(len).expect("fewer than 2^32 places");
                let language = match judgement.implementation_of(run as usize).language.as_deref() {
                    Some(language) => {
                        let len = next(languages.len());
                        *languages.entry(language).or_insert(len)
                    }
                    None => ClassPlaces::NONE,
                };
                let dtypes = judgement.workload_of(run as usize).dtypes.as_slice();
                let len = next(dtype_sets.len());
                let dtypes = *dtype_sets.entry(dtypes).or_insert(len);
                let row = &judgement.runs[run as usize];
                let place = |map: &HashMap<&str, u32>, key: Option<&str>| {
                    key.and_then(|k| map.get(k).copied()).unwrap_or(ClassPlaces::NONE)
                };
                ClassPlaces {
                    gpu: place(&gpus, row.hardware_model.as_deref()),
                    source: place(&sources, row.source_id.as_deref()),
                    project: u32::try_from(judgement.project_index_of(run as usize)).expect("fewer than 2^32 projects"),
                    language,
                    dtypes,
                }
            })
            .collect();
        let class_languages = by_place(languages).into_iter().map(str::to_string).collect();
        let class_dtype_sets = by_place(dtype_sets).into_iter().map(<[String]>::to_vec).collect();
        self.class_places = places;
        self.class_languages = class_languages;
        self.class_dtype_sets = class_dtype_sets;
    }

    /// The runs behind a search entry of this kind and row (`SearchEntry::of`).
    pub fn entry_runs<'a>(
        &'a self,
        judgement: &'a ki_ranking::Index,
        kind: &str,
        of: usize,
    ) -> Box<dyn Iterator<Item = u32> + 'a> {
        let implementation = |i: &usize| self.runs_by_implementation.get(i).into_iter().flatten().copied();
        if kind == SearchKind::Operation.as_str() {
            Box::new(
                judgement
                    .operation_workloads(of)
                    .iter()
                    .flat_map(|&w| judgement.workload_runs(w))
                    .map(|r| u32::try_from(r).expect("fewer than 2^32 runs")),
            )
        } else if kind == SearchKind::Implementation.as_str() {
            Box::new(implementation(&of))
        } else if kind == SearchKind::Project.as_str() {
            Box::new(self.implementations_by_project.get(&of).into_iter().flatten().flat_map(implementation))
        } else {
            Box::new(self.runs_by_gpu.get(of).into_iter().flat_map(|(_, runs)| runs.iter().copied()))
        }
    }

    pub fn find_serving_run(&self, id_or_digest: &str) -> Option<usize> {
        self.serving_runs.index_of(id_or_digest).or_else(|| self.serving_run_by_digest.get(id_or_digest).copied())
    }

    pub fn find_operation(&self, slug_or_name: &str) -> Option<usize> {
        self.operation_by_slug
            .get(slug_or_name)
            .or_else(|| self.operation_by_name.get(&slug_or_name.to_lowercase()))
            .copied()
    }

    /// An implementation by slug or id (the implementation page and its source and diff pages).
    pub fn find_implementation(&self, slug: &str) -> Result<usize, crate::problem::Problem> {
        self.implementation_by_slug
            .get(slug)
            .copied()
            .or_else(|| self.implementations.index_of(slug))
            .ok_or_else(|| crate::problem::Problem::not_found(format!("no implementation {slug:?}")))
    }

    /// The operation's human title (its manifest title, else its name).
    pub fn operation_title(&self, op: usize) -> &str {
        let row = &self.operations.rows[op];
        row.get("manifest")
            .and_then(|m| pointer(m, &["metadata", "title"]))
            .and_then(Value::as_str)
            .unwrap_or_else(|| text(row, "name"))
    }
}

pub use ki_model::slug::slug as slugify;

impl ReadModel {
    /// A run by uuid, by `sha256:` digest, or by the bare hex of its digest.
    pub fn find_run(&self, id_or_digest: &str) -> Option<usize> {
        let key = id_or_digest.trim();
        if let Some(i) = self.judgement.run_index(key) {
            return Some(i);
        }
        if let Some(i) = self.judgement.run_by_digest(key) {
            return Some(i);
        }
        if key.len() == 64 && key.bytes().all(|b| b.is_ascii_hexdigit()) {
            return self.judgement.run_by_digest(&format!("sha256:{}", key.to_ascii_lowercase()));
        }
        None
    }

    pub fn run_operation(&self, run: usize) -> Option<usize> {
        Some(self.judgement.workload_operation(self.judgement.run_workload(run)))
    }
}

/// Each run's class and one run of each class (`ReadModel::run_classes`): what every run filter
/// of a search reads of a run, except the implementation's slug.
fn run_classes(judgement: &ki_ranking::Index) -> (Vec<u32>, Vec<u32>) {
    type Key<'a> = (
        Option<&'a str>,
        Option<&'a str>,
        Option<&'a str>,
        ki_ranking::TrustLevel,
        bool,
        &'a str,
        Option<&'a str>,
        Option<&'a str>,
        &'a [String],
    );
    let mut ids: HashMap<Key<'_>, u32> = HashMap::new();
    let mut representatives = Vec::new();
    let class_of_run = (0..judgement.runs.len())
        .map(|run| {
            let row = &judgement.runs[run];
            let implementation = judgement.implementation_of(run);
            let key = (
                row.hardware_model.as_deref(),
                row.source_id.as_deref(),
                row.hardware_architecture.as_deref(),
                judgement.facts[run].trust,
                row.installable,
                judgement.project_of(run).id.as_str(),
                implementation.language.as_deref(),
                implementation.license_expression.as_deref(),
                judgement.workload_of(run).dtypes.as_slice(),
            );
            *ids.entry(key).or_insert_with(|| {
                representatives.push(u32::try_from(run).expect("fewer than 2^32 runs"));
                u32::try_from(representatives.len() - 1).expect("fewer than 2^32 classes")
            })
        })
        .collect();
    (class_of_run, representatives)
}

/// A map's keys in the order of their places (its values, 0, 1, 2, …).
fn by_place<K>(map: HashMap<K, u32>) -> Vec<K> {
    let mut named: Vec<(K, u32)> = map.into_iter().collect();
    named.sort_by_key(|(_, place)| *place);
    named.into_iter().map(|(key, _)| key).collect()
}

/// The operation's variable axes of a workload and its dtypes, "batch_size = 16 · … · bf16".
pub fn workload_label(workload: &Row, operation: Option<&Row>) -> String {
    let axes = workload.get("manifest").and_then(|m| pointer(m, &["spec", "axes"])).and_then(Value::as_object);
    let variable = |name: &str| {
        operation
            .and_then(|op| op.get("manifest"))
            .and_then(|m| pointer(m, &["spec", "axes", name, "role"]))
            .and_then(Value::as_str)
            .is_none_or(|role| role != "constant")
    };
    let mut parts: Vec<String> = Vec::new();
    if let Some(axes) = axes {
        for (name, value) in axes {
            if variable(name) {
                parts.push(format!("{name} = {}", scalar(value)));
            }
        }
    }
    if let Some(dtypes) = workload.get("dtypes").and_then(Value::as_array) {
        let names: Vec<&str> = dtypes.iter().filter_map(Value::as_str).collect();
        if !names.is_empty() {
            parts.push(names.join("/"));
        }
    }
    parts.join(" · ")
}

pub fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

/// What the search keeps per read model: each query word's search entries (indexes into
/// [`crate::model::Tables::search`], ascending) as the catalog's search index found them (a
/// word is looked up in the database once per read model, and a query takes the entries all its
/// words found), and the [`Lexicon`] the words are read with, built on first use. A new model
/// (after any write) starts empty, so neither outlives the entries and names it was made from.
/// Each query term (a word and the common names it stands for) keeps its entries with their
/// weight, so a repeated query scores integers instead of searching each entry's text.
/// Bounded: the lists are emptied when they hold too many words or entries.
#[derive(Debug, Default)]
pub struct WordMatches {
    words: std::sync::Mutex<HashMap<String, Arc<[u32]>>>,
    terms: std::sync::Mutex<HashMap<String, Arc<[TermHit]>>>,
    pub(crate) lexicon: OnceLock<Lexicon>,
    /// Built on the first query that needs it (`ReadModel::entries_at_places`).
    pub(crate) entries_by_place: OnceLock<EntriesByPlace>,
}

/// For each kind of place a search entry has (`SearchEntry::gpu_ids`, `project_ids`,
/// `language_ids`, `dtype_set_ids`), the entries at each place, ascending: a query whose one
/// filter is of such a kind reads the entries of the places it takes instead of testing all.
#[derive(Debug, Default)]
pub struct EntriesByPlace {
    pub gpu: Vec<Vec<u32>>,
    pub project: Vec<Vec<u32>>,
    pub language: Vec<Vec<u32>>,
    pub dtype_set: Vec<Vec<u32>>,
}

impl EntriesByPlace {
    pub(crate) fn of(entries: &[SearchEntry]) -> EntriesByPlace {
        fn add(lists: &mut Vec<Vec<u32>>, places: &[u32], entry: u32) {
            for &place in places {
                let place = place as usize;
                if lists.len() <= place {
                    lists.resize_with(place + 1, Vec::new);
                }
                lists[place].push(entry);
            }
        }
        let mut by = EntriesByPlace::default();
        for (at, entry) in entries.iter().enumerate() {
            let at = u32::try_from(at).expect("fewer than 2^32 search entries");
            add(&mut by.gpu, &entry.gpu_ids, at);
            add(&mut by.project, &entry.project_ids, at);
            add(&mut by.language, &entry.language_ids, at);
            add(&mut by.dtype_set, &entry.dtype_set_ids, at);
        }
        by
    }
}

/// A search entry that holds a query term, and how well: 3 for a whole word, 1 for part of one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct TermHit {
    pub entry: u32,
    pub weight: u8,
}

/// Most words and most entries (over all words) [`WordMatches`] holds: a few MiB at most.
const MAX_CACHED_WORDS: usize = 4096;
const MAX_CACHED_ENTRIES: usize = 1 << 20;

impl WordMatches {
    pub(crate) fn get(&self, word: &str) -> Option<Arc<[u32]>> {
        self.words.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(word).cloned()
    }

    pub(crate) fn insert(&self, word: &str, entries: Arc<[u32]>) {
        bounded_insert(&self.words, word, entries);
    }

    pub(crate) fn term(&self, term: &str) -> Option<Arc<[TermHit]>> {
        self.terms.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(term).cloned()
    }

    pub(crate) fn insert_term(&self, term: &str, hits: Arc<[TermHit]>) {
        bounded_insert(&self.terms, term, hits);
    }
}

fn bounded_insert<T>(map: &std::sync::Mutex<HashMap<String, Arc<[T]>>>, key: &str, list: Arc<[T]>) {
    let mut map = map.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let held: usize = map.values().map(|e| e.len()).sum();
    if map.len() >= MAX_CACHED_WORDS || held + list.len() > MAX_CACHED_ENTRIES {
        map.clear();
    }
    map.insert(key.to_string(), list);
}

// ---------- what the dossier and the pages share ----------

/// Most rows any list on a page shows.
pub const PAGE_LIMIT: usize = 200;

/// Record events on one page of the records ledger (`/records`, `ki records`).
pub const RECORDS_PER_PAGE: usize = 100;

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Link {
    pub label: String,
    pub href: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Field {
    pub label: String,
    pub value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub href: Option<String>,
    /// Shown in a monospace face with a copy button (digests, keys).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub code: bool,
}

impl Field {
    pub fn new(label: impl Into<String>, value: impl Into<String>) -> Field {
        Field { label: label.into(), value: value.into(), href: None, code: false }
    }

    pub fn link(mut self, href: impl Into<String>) -> Field {
        self.href = Some(href.into());
        self
    }

    pub fn code(mut self) -> Field {
        self.code = true;
        self
    }
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    pub id: String,
    pub short_id: String,
    pub digest: String,
    pub title: String,
    pub implementation: String,
    pub project: String,
    pub hardware: String,
    pub status: String,
    pub value: Option<f64>,
    pub unit: String,
    pub display: String,
    pub statistic: String,
    pub rank: Option<u32>,
    pub trust: String,
    pub observed_at: String,
    pub href: String,
}

pub fn short_id(id: &str) -> String {
    id.chars().filter(|c| *c != '-').take(8).collect()
}

/// The primary value with its unit for display ("93.0 µs"), or "—".
pub fn primary_display(run: &RunRow) -> String {
    ki_model::units::value(run.primary_value.get(), run.primary_unit.as_deref())
}

impl ReadModel {
    pub fn run_summary(&self, run: usize) -> RunSummary {
        let row = self.run(run);
        let implementation = self.implementations.get(&row.implementation_id);
        let implementation = implementation.as_ref();
        let project = implementation.and_then(|i| self.projects.get(text(i, "projectId")));
        let facts = &self.judgement.facts[run];
        let id = row.id.to_string();
        RunSummary {
            short_id: short_id(&id),
            href: format!("/runs/{id}"),
            id,
            digest: row.run_digest.to_string(),
            title: self.run_title(run),
            implementation: implementation.map(|i| text(i, "slug")).unwrap_or("").into(),
            project: project.map(|p| text(p, "name")).unwrap_or("").into(),
            hardware: row.hardware_model.as_deref().unwrap_or_default().to_string(),
            status: row.status.to_string(),
            value: row.primary_value.get(),
            unit: row.primary_unit.as_deref().unwrap_or_default().to_string(),
            display: primary_display(row),
            statistic: row.primary_statistic.as_deref().unwrap_or_default().to_string(),
            rank: facts.rank(),
            trust: facts.trust.as_str().into(),
            observed_at: row.observed_at.text().into_owned(),
        }
    }

    /// The run manifest's title, else "Run" and its short id.
    pub fn run_title(&self, run: usize) -> String {
        match self.judgement.run_title(run) {
            Some(title) => title.to_string(),
            None => format!("Run {}", short_id(&self.run(run).id.text())),
        }
    }
}

pub fn code_of<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

/// A GPU model's page, `/gpus/{slug}`.
pub fn gpu_href(model: &str) -> String {
    format!("/gpus/{}", slugify(model))
}

/// Percent-encodes everything but unreserved characters (RFC 3986).
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The digest and file name the implementation's manifest gives its source.
pub fn source_reference(row: &Row) -> Option<(String, Option<String>)> {
    let source = row.get("manifest").and_then(|m| m.pointer("/spec/source"))?;
    let digest = source.get("contentDigest").and_then(Value::as_str)?.to_string();
    Some((digest, source.get("fileName").and_then(Value::as_str).map(str::to_string)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_word_lists_stay_within_their_bound() {
        let matches = WordMatches::default();
        matches.insert("gemm", vec![1, 2, 3].into());
        assert_eq!(matches.get("gemm").as_deref(), Some(&[1, 2, 3][..]));
        assert_eq!(matches.get("gem"), None);
        let big: Arc<[u32]> = (0..MAX_CACHED_ENTRIES as u32 - 1).collect();
        matches.insert("synthetic", big);
        assert_eq!(matches.get("gemm"), None, "over the bound, the earlier words are let go");
        assert_eq!(matches.get("synthetic").map(|e| e.len()), Some(MAX_CACHED_ENTRIES - 1));
        for word in 0..MAX_CACHED_WORDS + 1 {
            matches.insert(&format!("w{word}"), vec![0].into());
        }
        assert!(matches.words.lock().unwrap().len() <= MAX_CACHED_WORDS);
    }
}
