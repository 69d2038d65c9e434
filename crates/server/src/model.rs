//! The server's in-memory read model: the ranking's index (the typed rows of every table it
//! ranks, their manifests as compact text) and, beside it, the tables the index does not hold
//! (serving, supersessions) and the look-ups the pages make. Built once at start (and after
//! writes) so that a request only does hash lookups and rendering, never a database query.
//!
//! It also holds what the run dossier ([`crate::dossier`]) and the pages share: links, fields,
//! run summaries and the sizes of a page's lists.

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use ki_model::rows::{
    ModelRevisionRow, ServingConfigurationRow, ServingMeasurementRow, ServingRunRow, ServingStackRevisionRow,
    ServingWorkloadRow,
};
use ki_model::search_text::{self, SearchKind};
use ki_ranking::understand::Lexicon;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A benchmark run as the ranking's index holds it (typed; its manifest is not kept here).
pub type RunRow = ki_ranking::rows::BenchmarkRunRow;

/// A row read from the catalog or an export: its table and its camelCase columns.
#[derive(Debug, Clone)]
pub struct CatalogRow {
    pub table: String,
    pub row: Map<String, Value>,
}

/// Follows a path of object keys inside a JSON document (a manifest).
pub fn pointer<'a>(value: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(value, |at, key| at.get(*key))
}

/// A row with an id, held in a [`Table`].
pub trait Identified {
    fn id(&self) -> &str;
}

macro_rules! identified {
    ($($row:ty),*) => {
        $(impl Identified for $row {
            fn id(&self) -> &str {
                &self.id
            }
        })*
    };
}

identified!(ModelRevisionRow, ServingStackRevisionRow, ServingConfigurationRow, ServingWorkloadRow, ServingRunRow);

/// The typed rows of a table the ranking's index does not hold, with an id index.
#[derive(Debug)]
pub struct Table<T> {
    pub rows: Vec<T>,
    by_id: HashMap<String, usize>,
}

impl<T> Default for Table<T> {
    fn default() -> Self {
        Table { rows: Vec::new(), by_id: HashMap::new() }
    }
}

impl<T: Identified> Table<T> {
    fn push(&mut self, row: T) {
        self.by_id.insert(row.id().to_string(), self.rows.len());
        self.rows.push(row);
    }
}

impl<T> Table<T> {
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    pub fn get(&self, id: &str) -> Option<&T> {
        self.index_of(id).map(|i| &self.rows[i])
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }
}

/// The audit entry of a run's supersession, as the run page states it.
#[derive(Debug, Clone)]
pub struct Supersession {
    pub at: String,
    pub reason: String,
}

/// A row of the corrections' audit trail ([`crate::rows_from_catalog`] streams them in as a
/// `corrections` table): what the model reads of it.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct CorrectionRow {
    action: String,
    run_id: String,
    at: String,
    reason: String,
}

/// An axis an operation's manifest declares (`spec.axes.<name>`), in the manifest's order.
#[derive(Debug, Clone)]
pub struct OperationAxis {
    pub name: String,
    /// Its role is `constant`.
    pub constant: bool,
    /// The value it declares, when it declares one.
    pub value: Option<Value>,
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
    /// `gpus` as places in [`ReadModel::runs_by_gpu`].
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
/// as places (in `runs_by_gpu`, the ranking's sources and projects,
/// [`ReadModel::class_languages`] and [`ReadModel::class_dtype_sets`]), so a search compares
/// integers.
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

/// The ranking's index and what the pages look up beside it. The rows the index holds
/// (sources, projects, operations, aliases, workloads, implementations, runs, measurements,
/// record events, artifacts) are read from it (`m.judgement.operations[op].slug`), never
/// copied; the positions below (`usize`, `u32`) are places in its row vectors.
#[derive(Debug)]
pub struct ReadModel {
    pub judgement: ki_ranking::Index,

    // What lists, labels and search read of the manifests for many rows at once, read from
    // each manifest once at build rather than parsed per row per request.
    /// Each operation's title (its manifest's `metadata.title`, else its name).
    pub operation_titles: Vec<Box<str>>,
    /// Each operation's declared axes (`spec.axes`).
    pub operation_axes: Vec<Vec<OperationAxis>>,
    /// Each workload's label (its variable axes and dtypes).
    pub workload_labels: Vec<Box<str>>,
    /// Each implementation's manifest name (`metadata.name`: a revision's lineage).
    pub implementation_names: Vec<Option<Box<str>>>,

    /// The ranking index's record events newest first (ties by id), each with its new holder's
    /// run, so that the ledger pages neither sort nor look runs up per request.
    pub records: Vec<RecordRef>,

    // Tables the index does not hold.
    pub model_revisions: Table<ModelRevisionRow>,
    pub serving_stacks: Table<ServingStackRevisionRow>,
    pub serving_configurations: Table<ServingConfigurationRow>,
    pub serving_workloads: Table<ServingWorkloadRow>,
    pub serving_runs: Table<ServingRunRow>,
    pub serving_measurements_by_run: HashMap<usize, Vec<ServingMeasurementRow>>,
    /// Superseded run id → the audit entry of its supersession (only from a catalog; an
    /// export carries no audit trail).
    pub supersessions: HashMap<String, Supersession>,

    pub operation_by_slug: HashMap<String, usize>,
    /// Lower-cased name, slug and every alias → operation.
    pub operation_by_name: HashMap<String, usize>,
    pub aliases_by_operation: HashMap<usize, Vec<String>>,
    pub project_by_slug: HashMap<String, usize>,
    pub implementation_by_slug: HashMap<String, usize>,
    /// The source's own id of a run (`submission/555004`), lower-cased.
    pub runs_by_external_id: HashMap<String, Vec<u32>>,
    pub serving_run_by_digest: HashMap<String, usize>,

    pub runs_by_implementation: HashMap<usize, Vec<u32>>,
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

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("row {index} of {table}: {message}")]
    BadRow { table: String, index: usize, message: String },
    #[error("the ranking refused the catalog: {0}")]
    Ranking(#[from] ki_ranking::RowError),
}

impl ReadModel {
    /// One pass over the rows: each ranking row goes whole (moved, not copied) to the ranking's
    /// index, which keeps the one copy of the rows and their manifests (compact, parsed per
    /// page); the model keeps the other tables as typed rows.
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
        let manifest = catalog.run_by_id(id).await?.map_or(Value::Null, |row| row.manifest);
        let measurements = catalog.rows_where("runId", id).await?;
        Ok(RunDetail { manifest, measurements })
    }

    /// The run's row in export format with its whole manifest ([`ReadModel::run_detail`]).
    pub async fn full_run_row(
        &self,
        catalog: &ki_catalog::Catalog,
        run: usize,
    ) -> Result<Map<String, Value>, ki_catalog::CatalogError> {
        let mut row = match serde_json::to_value(self.run(run)) {
            Ok(Value::Object(row)) => row,
            _ => Map::new(),
        };
        row.insert("manifest".into(), self.run_detail(catalog, run).await?.manifest);
        Ok(row)
    }

    /// The label of the workload a run measured.
    pub fn run_workload_label(&self, run: usize) -> &str {
        &self.workload_labels[self.judgement.run_workload(run)]
    }

    /// Every part of the model, named, in turn, the ranking's index first (for a memory probe
    /// that drops them one at a time and counts what each held: the `read_model_memory` example).
    #[doc(hidden)]
    pub fn into_named_parts(self) -> (ki_ranking::Index, NamedParts) {
        // Every field named: a new one fails to compile here until the probe counts it.
        let ReadModel {
            judgement,
            operation_titles,
            operation_axes,
            workload_labels,
            implementation_names,
            records,
            model_revisions,
            serving_stacks,
            serving_configurations,
            serving_workloads,
            serving_runs,
            serving_measurements_by_run,
            supersessions,
            operation_by_slug,
            operation_by_name,
            aliases_by_operation,
            project_by_slug,
            implementation_by_slug,
            runs_by_external_id,
            serving_run_by_digest,
            runs_by_implementation,
            runs_by_gpu,
            search,
            run_classes,
            class_of_run,
            class_places,
            class_languages,
            class_dtype_sets,
            search_by_key,
            search_matches,
        } = self;
        let parts: NamedParts = vec![
            ("runs by key", Box::new((runs_by_external_id, runs_by_implementation, runs_by_gpu))),
            ("workload labels", Box::new(workload_labels)),
            ("operation titles and axes", Box::new((operation_titles, operation_axes))),
            ("implementation names", Box::new(implementation_names)),
            ("record events", Box::new(records)),
            (
                "serving",
                Box::new((
                    model_revisions,
                    serving_stacks,
                    serving_configurations,
                    serving_workloads,
                    serving_runs,
                    serving_measurements_by_run,
                    serving_run_by_digest,
                )),
            ),
            ("supersessions", Box::new(supersessions)),
            (
                "look-ups by id, slug and name",
                Box::new((
                    operation_by_slug,
                    operation_by_name,
                    aliases_by_operation,
                    project_by_slug,
                    implementation_by_slug,
                )),
            ),
            ("search", Box::new((search, search_by_key, search_matches))),
            ("run classes", Box::new((run_classes, class_of_run, class_places, class_languages, class_dtype_sets))),
        ];
        (judgement, parts)
    }
}

/// Parts of a read model, each named ([`ReadModel::into_named_parts`]).
#[doc(hidden)]
pub type NamedParts = Vec<(&'static str, Box<dyn std::any::Any>)>;

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

/// The tables the ranking's index does not hold, as their typed rows arrive.
#[derive(Default)]
struct OtherTables {
    model_revisions: Table<ModelRevisionRow>,
    serving_stacks: Table<ServingStackRevisionRow>,
    serving_configurations: Table<ServingConfigurationRow>,
    serving_workloads: Table<ServingWorkloadRow>,
    serving_runs: Table<ServingRunRow>,
    serving_measurements: Vec<ServingMeasurementRow>,
    supersessions: HashMap<String, Supersession>,
    /// Rows seen per table, to name a bad row by its place.
    seen: HashMap<String, usize>,
}

impl OtherTables {
    /// Parses a row of a table the index does not hold into what the model keeps of it; a table
    /// the web does not show (source snapshots, links) is skipped.
    fn push(&mut self, table: &str, row: Map<String, Value>) -> Result<(), String> {
        use ki_model::rows::{Row, RowError};
        if table == "corrections" {
            let correction: CorrectionRow = serde_json::from_value(Value::Object(row)).map_err(|e| e.to_string())?;
            if correction.action == "supersede" {
                let entry = Supersession { at: correction.at, reason: correction.reason };
                self.supersessions.insert(correction.run_id, entry);
            }
            return Ok(());
        }
        match Row::from_map(table, row) {
            Ok(Row::ModelRevision(row)) => self.model_revisions.push(row),
            Ok(Row::ServingStackRevision(row)) => self.serving_stacks.push(row),
            Ok(Row::ServingConfiguration(row)) => self.serving_configurations.push(row),
            Ok(Row::ServingWorkload(row)) => self.serving_workloads.push(row),
            Ok(Row::ServingRun(row)) => self.serving_runs.push(*row),
            Ok(Row::ServingMeasurement(row)) => self.serving_measurements.push(row),
            // The ranking's tables go to its index (`ModelBuilder::push`); others are not shown.
            Ok(_) | Err(RowError::UnknownTable(_)) => {}
            Err(error) => return Err(error.to_string()),
        }
        Ok(())
    }

    /// The place of the next row of `table` among that table's rows.
    fn next_place(&mut self, table: &str) -> usize {
        match self.seen.get_mut(table) {
            Some(seen) => {
                *seen += 1;
                *seen - 1
            }
            None => {
                self.seen.insert(table.to_string(), 1);
                0
            }
        }
    }
}

/// Takes rows one at a time (as they stream from a catalog or an export) into what the model
/// keeps, so that building never holds every row whole.
pub struct ModelBuilder {
    run_details: RunDetails,
    ranking_rows: ki_ranking::CatalogRows,
    others: OtherTables,
    /// The first bad row of a table the index does not hold (the index keeps its own).
    error: Option<ModelError>,
}

impl ModelBuilder {
    pub fn new(run_details: RunDetails) -> ModelBuilder {
        let ranking_rows = match run_details {
            RunDetails::Held => ki_ranking::CatalogRows::new(),
            RunDetails::InCatalog => ki_ranking::CatalogRows::without_run_manifests(),
        };
        ModelBuilder { run_details, ranking_rows, others: OtherTables::default(), error: None }
    }

    /// Takes one export-format row; a bad one is reported by [`ModelBuilder::finish`].
    pub fn push(&mut self, table: String, row: Map<String, Value>) {
        if ki_ranking::rows::RANKING_TABLES.contains(&table.as_str()) {
            // A model whose runs' details stay in the catalog reads measurements from there.
            if table != "measurements" || self.run_details == RunDetails::Held {
                self.ranking_rows.push(&table, row, None);
            }
            return;
        }
        if self.error.is_some() {
            return;
        }
        let index = self.others.next_place(&table);
        if let Err(message) = self.others.push(&table, row) {
            self.error = Some(ModelError::BadRow { table, index, message });
        }
    }

    pub fn finish(self) -> Result<ReadModel, ModelError> {
        if let Some(error) = self.error {
            return Err(error);
        }
        let judgement = ki_ranking::Index::from_owned_rows(self.ranking_rows)?;
        let model = ReadModel::new(judgement, self.others);
        release_freed_memory();
        Ok(model)
    }
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

/// An operation manifest's declared axes (`spec.axes`), in its order.
fn declared_axes(manifest: &Value) -> Vec<OperationAxis> {
    let axes = pointer(manifest, &["spec", "axes"]).and_then(Value::as_object);
    axes.into_iter()
        .flatten()
        .map(|(name, axis)| OperationAxis {
            name: name.clone(),
            constant: axis.get("role").and_then(Value::as_str) == Some("constant"),
            value: axis.get("value").cloned(),
        })
        .collect()
}

impl ReadModel {
    /// The look-ups, labels and search entries over the index's rows and the other tables.
    fn new(judgement: ki_ranking::Index, others: OtherTables) -> ReadModel {
        let index = &judgement;
        // The manifests' parts lists read, each manifest parsed once.
        let (operation_titles, operation_axes): (Vec<Box<str>>, Vec<Vec<OperationAxis>>) = index
            .operations
            .iter()
            .enumerate()
            .map(|(op, row)| {
                let manifest = index.operation_manifest(op);
                let title = pointer(&manifest, &["metadata", "title"]).and_then(Value::as_str).unwrap_or(&row.name);
                (title.into(), declared_axes(&manifest))
            })
            .unzip();
        let workload_labels = (0..index.workloads.len())
            .map(|w| {
                let axes = &operation_axes[index.workload_operation(w)];
                workload_label(&index.workload_manifest(w), &index.workloads[w].dtypes, axes).into_boxed_str()
            })
            .collect();
        let implementation_names = (0..index.implementations.len())
            .map(|i| {
                pointer(&index.implementation_manifest(i), &["metadata", "name"]).and_then(Value::as_str).map(Box::from)
            })
            .collect();

        let mut operation_by_slug = HashMap::new();
        let mut operation_by_name = HashMap::new();
        for (i, op) in index.operations.iter().enumerate() {
            operation_by_slug.insert(op.slug.clone(), i);
            operation_by_name.insert(op.slug.to_lowercase(), i);
            operation_by_name.insert(op.name.to_lowercase(), i);
        }
        let mut aliases_by_operation: HashMap<usize, Vec<String>> = HashMap::new();
        for alias in &index.operation_aliases {
            if let Some(op) = index.operation_index(&alias.operation_id) {
                operation_by_name.insert(alias.alias.to_lowercase(), op);
                aliases_by_operation.entry(op).or_default().push(alias.alias.clone());
            }
        }
        let project_by_slug = index.projects.iter().enumerate().map(|(i, p)| (p.slug.clone(), i)).collect();
        let implementation_by_slug =
            index.implementations.iter().enumerate().map(|(i, imp)| (imp.slug.clone(), i)).collect();

        let mut runs_by_external_id: HashMap<String, Vec<u32>> = HashMap::new();
        let mut runs_by_implementation: HashMap<usize, Vec<u32>> = HashMap::new();
        let mut gpus: HashMap<String, Vec<u32>> = HashMap::new();
        for (i, run) in index.runs.iter().enumerate() {
            let number = u32::try_from(i).expect("fewer than 2^32 runs");
            if let Some(external) = index.run_external_id(i) {
                runs_by_external_id.entry(external.to_lowercase()).or_default().push(number);
            }
            runs_by_implementation.entry(index.run_implementation(i)).or_default().push(number);
            if let Some(gpu) = run.hardware_model.as_deref().filter(|g| !g.is_empty()) {
                gpus.entry(gpu.to_string()).or_default().push(number);
            }
        }
        let mut runs_by_gpu: Vec<(String, Vec<u32>)> = gpus.into_iter().collect();
        runs_by_gpu.sort_by(|a, b| b.1.len().cmp(&a.1.len()).then(a.0.cmp(&b.0)));

        let OtherTables {
            model_revisions,
            serving_stacks,
            serving_configurations,
            serving_workloads,
            serving_runs,
            serving_measurements,
            supersessions,
            seen: _,
        } = others;
        let mut serving_measurements_by_run: HashMap<usize, Vec<ServingMeasurementRow>> = HashMap::new();
        for m in serving_measurements {
            if let Some(run) = serving_runs.index_of(&m.run_id) {
                serving_measurements_by_run.entry(run).or_default().push(m);
            }
        }
        let serving_run_by_digest =
            serving_runs.rows.iter().enumerate().map(|(i, r)| (r.run_digest.clone(), i)).collect();

        // Newest first, ties by id, so "recent records" needs no sort per request.
        let events = &index.record_events;
        let mut newest: Vec<usize> = (0..events.len()).collect();
        newest.sort_by(|&a, &b| {
            let (a, b) = (&events[a], &events[b]);
            b.at.text().cmp(&a.at.text()).then(b.id.cmp(&a.id))
        });
        let records = newest
            .into_iter()
            .map(|event| RecordRef {
                event: u32::try_from(event).expect("fewer than 2^32 record events"),
                holder: index.run_of(&events[event].run_id).map(|run| run as u32),
            })
            .collect();
        let (class_of_run, run_classes) = run_classes(index);

        let mut model = ReadModel {
            judgement,
            operation_titles,
            operation_axes,
            workload_labels,
            implementation_names,
            records,
            model_revisions,
            serving_stacks,
            serving_configurations,
            serving_workloads,
            serving_runs,
            serving_measurements_by_run,
            supersessions,
            operation_by_slug,
            operation_by_name,
            aliases_by_operation,
            project_by_slug,
            implementation_by_slug,
            runs_by_external_id,
            serving_run_by_digest,
            runs_by_implementation,
            runs_by_gpu,
            search: Vec::new(),
            run_classes,
            class_of_run,
            class_places: Vec::new(),
            class_languages: Vec::new(),
            class_dtype_sets: Vec::new(),
            search_by_key: HashMap::new(),
            search_matches: WordMatches::default(),
        };
        model.set_class_places();
        model.search = model.build_search();
        model.search_by_key = model
            .search
            .iter()
            .enumerate()
            .filter_map(|(i, e)| Some(((SearchKind::parse(e.kind)?, e.key.clone()), i)))
            .collect();
        model
    }

    fn build_search(&self) -> Vec<SearchEntry> {
        let judgement = &self.judgement;
        let classes_of = |runs: &mut dyn Iterator<Item = u32>| {
            let mut classes: Vec<u32> = runs.map(|r| self.class_of_run[r as usize]).collect();
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
        for (i, op) in judgement.operations.iter().enumerate() {
            let aliases: Vec<&str> =
                self.aliases_by_operation.get(&i).into_iter().flatten().map(String::as_str).collect();
            let entry_run_list: Vec<u32> = self.entry_runs(SearchKind::Operation.as_str(), i).collect();
            let family = op.family.as_str();
            let found = search_text::operation(&op.name, &op.slug, family, &aliases);
            out.push(SearchEntry {
                kind: SearchKind::Operation.as_str(),
                label: self.operation_title(i).to_string(),
                detail: family.to_string(),
                href: format!("/operations/{}", op.slug),
                runs: entry_run_list.len(),
                gpus: gpus_of(&entry_run_list),
                key: op.id.clone(),
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
        for (i, imp) in judgement.implementations.iter().enumerate() {
            let entry_run_list: Vec<u32> = self.entry_runs(SearchKind::Implementation.as_str(), i).collect();
            let title = imp.title.as_str();
            let found = search_text::implementation(&imp.slug, title);
            out.push(SearchEntry {
                kind: SearchKind::Implementation.as_str(),
                label: imp.slug.clone(),
                detail: title.to_string(),
                href: format!("/implementations/{}", imp.slug),
                runs: entry_run_list.len(),
                gpus: gpus_of(&entry_run_list),
                key: imp.id.clone(),
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
        for (i, p) in judgement.projects.iter().enumerate() {
            let entry_run_list: Vec<u32> = self.entry_runs(SearchKind::Project.as_str(), i).collect();
            let found = search_text::project(&p.name, &p.slug);
            out.push(SearchEntry {
                kind: SearchKind::Project.as_str(),
                label: p.name.clone(),
                detail: p.slug.clone(),
                href: format!("/projects/{}", p.slug),
                runs: entry_run_list.len(),
                gpus: gpus_of(&entry_run_list),
                key: p.id.clone(),
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
                let mut places: Vec<u32> =
                    entry.classes.iter().map(|&c| place(&self.class_places[c as usize])).collect();
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
    fn set_class_places(&mut self) {
        let judgement = &self.judgement;
        let gpus: HashMap<&str, u32> =
            self.runs_by_gpu.iter().enumerate().map(|(i, (gpu, _))| (gpu.as_str(), i as u32)).collect();
        let mut languages: HashMap<&str, u32> = HashMap::new();
        let mut dtype_sets: HashMap<&[String], u32> = HashMap::new();
        let places = self
            .run_classes
            .iter()
            .map(|&run| {
                let next = |len: usize| u32::try_from(len).expect("fewer than 2^32 places");
                let language = judgement.implementation_of(run as usize).language.as_str();
                let len = next(languages.len());
                let language = *languages.entry(language).or_insert(len);
                let dtypes = judgement.workload_of(run as usize).dtypes.as_slice();
                let len = next(dtype_sets.len());
                let dtypes = *dtype_sets.entry(dtypes).or_insert(len);
                let row = &judgement.runs[run as usize];
                let source = row.source_id.as_deref().and_then(|s| judgement.source_index(s));
                ClassPlaces {
                    gpu: row.hardware_model.as_deref().and_then(|g| gpus.get(g).copied()).unwrap_or(ClassPlaces::NONE),
                    source: source.map_or(ClassPlaces::NONE, next),
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
    pub fn entry_runs<'a>(&'a self, kind: &str, of: usize) -> Box<dyn Iterator<Item = u32> + 'a> {
        let implementation = |i: &usize| self.runs_by_implementation.get(i).into_iter().flatten().copied();
        if kind == SearchKind::Operation.as_str() {
            Box::new(
                self.judgement
                    .operation_workloads(of)
                    .iter()
                    .flat_map(|&w| self.judgement.workload_runs(w))
                    .map(|r| u32::try_from(r).expect("fewer than 2^32 runs")),
            )
        } else if kind == SearchKind::Implementation.as_str() {
            Box::new(implementation(&of))
        } else if kind == SearchKind::Project.as_str() {
            Box::new(self.judgement.project_implementations(of).iter().flat_map(implementation))
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
            .or_else(|| self.judgement.implementation_index(slug))
            .ok_or_else(|| crate::problem::Problem::not_found(format!("no implementation {slug:?}")))
    }

    /// The operation's human title (its manifest title, else its name).
    pub fn operation_title(&self, op: usize) -> &str {
        &self.operation_titles[op]
    }

    /// The digest and file name the implementation's manifest gives its source.
    pub fn implementation_source(&self, implementation: usize) -> Option<(String, Option<String>)> {
        source_reference(&self.judgement.implementation_manifest(implementation))
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
        &'a str,
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
                implementation.language.as_str(),
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

/// A workload's variable axes (those its operation does not declare constant) and its dtypes,
/// "batch_size = 16 · … · bf16".
pub fn workload_label(manifest: &Value, dtypes: &[String], operation_axes: &[OperationAxis]) -> String {
    let axes = pointer(manifest, &["spec", "axes"]).and_then(Value::as_object);
    let variable = |name: &str| !operation_axes.iter().any(|axis| axis.name == name && axis.constant);
    let mut parts: Vec<String> = Vec::new();
    if let Some(axes) = axes {
        for (name, value) in axes {
            if variable(name) {
                parts.push(format!("{name} = {}", scalar(value)));
            }
        }
    }
    if !dtypes.is_empty() {
        parts.push(dtypes.join("/"));
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
/// [`ReadModel::search`], ascending) as the catalog's search index found them (a
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
        let facts = &self.judgement.facts[run];
        let id = row.id.to_string();
        RunSummary {
            short_id: short_id(&id),
            href: format!("/runs/{id}"),
            id,
            digest: row.run_digest.to_string(),
            title: self.run_title(run),
            implementation: self.judgement.implementation_of(run).slug.clone(),
            project: self.judgement.project_of(run).name.clone(),
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

/// The digest and file name an implementation's manifest gives its source.
pub fn source_reference(manifest: &Value) -> Option<(String, Option<String>)> {
    let source = manifest.pointer("/spec/source")?;
    let digest = source.get("contentDigest").and_then(Value::as_str)?.to_string();
    Some((digest, source.get("fileName").and_then(Value::as_str).map(str::to_string)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            other => panic!("not an object: {other}"),
        }
    }

    #[test]
    fn a_bad_row_of_a_table_the_index_does_not_hold_is_named() {
        let mut builder = ModelBuilder::new(RunDetails::Held);
        builder.push(
            "corrections".into(),
            object(
                serde_json::json!({"action": "retract", "runId": "r", "at": "2026-01-01T00:00:00.000Z", "reason": "x"}),
            ),
        );
        builder.push("serving_workloads".into(), object(serde_json::json!({"id": "w1"})));
        match builder.finish() {
            Err(ModelError::BadRow { table, index, message }) => {
                assert_eq!((table.as_str(), index), ("serving_workloads", 0));
                assert!(message.contains("workloadDigest"), "{message}");
            }
            other => panic!("a serving workload without its columns was taken: {other:?}"),
        }
    }

    #[test]
    fn supersessions_are_kept_and_tables_the_web_does_not_show_are_skipped() {
        let mut builder = ModelBuilder::new(RunDetails::Held);
        let correction = |action: &str, run: &str| {
            object(serde_json::json!({
                "id": format!("c-{run}"), "action": action, "runId": run, "byRunId": null,
                "reason": format!("{action} {run}"), "actor": "test", "at": "2026-03-04T05:06:07.000Z",
            }))
        };
        builder.push("corrections".into(), correction("supersede", "old"));
        builder.push("corrections".into(), correction("retract", "bad"));
        builder.push("source_snapshots".into(), object(serde_json::json!({"anything": 1})));
        let model = builder.finish().expect("no row is bad");
        assert_eq!(model.supersessions.len(), 1);
        let entry = &model.supersessions["old"];
        assert_eq!((entry.at.as_str(), entry.reason.as_str()), ("2026-03-04T05:06:07.000Z", "supersede old"));
    }

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
