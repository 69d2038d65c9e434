//! The in-memory index: rows joined, every run judged, every comparison group ranked.
//! Built once from catalog rows; all queries afterwards are lookups.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::Value;

use crate::licence::{LicenceVerdict, judge_licence};
use crate::rank::{CohortProfile, Contender, Direction, Ineligibility, TrustLevel, rank_contenders};
use crate::rows::*;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum DeployabilityReason {
    NoPublicSource,
    NoLicense,
    LicenseNotPermissive,
    LicenseUnparseable,
    NoInstallRecipe,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Deployability {
    pub deployable: bool,
    pub reasons: Vec<DeployabilityReason>,
    pub licence: LicenceVerdict,
}

impl Deployability {
    pub fn assess(source_available: bool, licence_expression: Option<&str>, has_install_recipe: bool) -> Deployability {
        let mut reasons = Vec::new();
        if !source_available {
            reasons.push(DeployabilityReason::NoPublicSource);
        }
        let licence = judge_licence(licence_expression);
        match &licence {
            LicenceVerdict::Permissive => {}
            LicenceVerdict::Missing => reasons.push(DeployabilityReason::NoLicense),
            LicenceVerdict::NotPermissive { .. } => reasons.push(DeployabilityReason::LicenseNotPermissive),
            LicenceVerdict::Unparseable { .. } => reasons.push(DeployabilityReason::LicenseUnparseable),
        }
        if !has_install_recipe {
            reasons.push(DeployabilityReason::NoInstallRecipe);
        }
        Deployability { deployable: reasons.is_empty(), reasons, licence }
    }
}

/// What the index concluded about one run (one per run: kept narrow, 48 bytes).
#[derive(Debug, Clone)]
pub struct RunFacts {
    /// Why the run is not ranked; none for an eligible run (most are), which then holds no
    /// allocation. Behind one thin pointer: 8 bytes a run where a slice takes 16.
    ineligibility: Option<Box<Reasons>>,
    /// Shared by every run with the same source, licence and install recipe.
    pub deployability: std::sync::Arc<Deployability>,
    /// The source's own "× reference" figure, from its native metrics.
    pub reference_speedup: OptionalNumber,
    /// Speedup over the cohort's marked baseline implementation.
    pub baseline_speedup: OptionalNumber,
    /// Its comparison group ([`RunFacts::cohort`]).
    cohort: u32,
    /// Dense rank inside its comparison group (from 1); None when ineligible.
    rank: Option<std::num::NonZeroU32>,
    /// Position in the cohort's ranking (display order), meaningful only with a rank.
    position: u32,
    pub trust: TrustLevel,
}

/// The reasons an ineligible run is not ranked (never empty).
#[derive(Debug, Clone)]
struct Reasons(Vec<Ineligibility>);

impl RunFacts {
    pub fn eligible(&self) -> bool {
        self.ineligibility.is_none()
    }

    /// Why the run is not ranked: empty when it is eligible.
    pub fn ineligibility(&self) -> &[Ineligibility] {
        self.ineligibility.as_deref().map_or(&[], |reasons| &reasons.0)
    }

    /// Dense rank inside its comparison group (from 1); None when ineligible.
    pub fn rank(&self) -> Option<u32> {
        self.rank.map(std::num::NonZeroU32::get)
    }

    /// Position in the cohort's ranking (display order, from 0); None when ineligible.
    pub fn position(&self) -> Option<u32> {
        self.rank.map(|_| self.position)
    }

    /// The run's comparison group (`Index::cohorts[cohort]`).
    pub fn cohort(&self) -> usize {
        self.cohort as usize
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankedEntry {
    pub run: usize,
    pub rank: u32,
}

/// One comparison group: all runs sharing a comparison key.
#[derive(Debug, Clone)]
pub struct Cohort {
    /// Shared with its runs' rows.
    pub comparison_key: Text,
    pub profile: CohortProfile,
    pub direction: Direction,
    /// Every run with this key, eligible or not, in row order.
    pub runs: Vec<usize>,
    /// Eligible runs, best first.
    pub ranking: Vec<RankedEntry>,
    /// The fastest eligible run of a baseline-marked implementation.
    pub baseline: Option<usize>,
}

#[derive(Debug)]
pub struct Index {
    pub sources: Vec<SourceRow>,
    pub projects: Vec<ProjectRow>,
    pub operations: Vec<OperationRow>,
    pub operation_aliases: Vec<OperationAliasRow>,
    pub workloads: Vec<WorkloadRow>,
    pub implementations: Vec<ImplementationRow>,
    pub runs: Vec<BenchmarkRunRow>,
    pub measurements: Vec<MeasurementRow>,
    pub record_events: Vec<RecordEventRow>,
    pub artifacts: Vec<ArtifactRow>,
    pub facts: Vec<RunFacts>,
    pub cohorts: Vec<Cohort>,

    pub(crate) source_by_id: HashMap<String, usize>,
    pub(crate) operation_by_id: HashMap<String, usize>,
    pub(crate) implementation_by_id: HashMap<String, usize>,
    /// Runs in id order and in digest order: exact look-ups and prefixes (a short id, a
    /// digest's start) by binary search, in 4 bytes a run.
    pub(crate) run_id_order: TextOrder,
    pub(crate) run_digest_order: TextOrder,
    pub(crate) cohort_by_key: HashMap<Text, usize>,
    /// Operation names, slugs and aliases, exact and lower-cased.
    pub(crate) operation_by_name: HashMap<String, usize>,
    pub(crate) operation_by_folded_name: HashMap<String, Vec<usize>>,
    pub(crate) workload_operation: Vec<usize>,
    pub(crate) implementation_project: Vec<usize>,
    /// Each operation's implementations, in row order (one whose operation id names no
    /// operation is listed under none).
    pub(crate) implementations_by_operation: Vec<Vec<usize>>,
    /// Each project's implementations, in row order.
    pub(crate) implementations_by_project: Vec<Vec<usize>>,
    pub(crate) run_implementation: Vec<u32>,
    pub(crate) run_workload: Vec<u32>,
    pub(crate) workloads_by_operation: Vec<Vec<usize>>,
    pub(crate) runs_by_workload: Groups,
    /// The comparison groups with eligible runs on each workload (what resolve reads).
    pub(crate) cohorts_by_workload: Vec<Vec<MeasuredCohort>>,
    pub(crate) measurements_by_run: Groups,
    pub(crate) events_by_run: Groups,
    pub(crate) artifact_by_digest: HashMap<String, usize>,
    /// Workload axes with the operation's constant axes filled in.
    pub(crate) workload_axes: Vec<BTreeMap<String, Value>>,
    /// Axes a request must name to pin one case (the operation's non-constant axes).
    pub(crate) operation_variable_axes: Vec<Vec<String>>,
    /// Every axis name the operation or its workloads use.
    pub(crate) operation_known_axes: Vec<Vec<String>>,
    /// The run manifest's protocol name and title (`protocol.metadata.name`, `.title`): each
    /// distinct pair once (`protocol_labels`), and per run its pair's position (4 bytes a run
    /// where two texts take 16).
    pub(crate) run_protocol_label: Vec<u32>,
    pub(crate) protocol_labels: Vec<(Option<Text>, Option<Text>)>,
    /// The run manifest's title (`run.metadata.title`), when it has one.
    pub(crate) run_title: TextColumn,
    /// The source's own id of the run (`run.spec.sourceNative.externalId`), when it has one.
    pub(crate) run_external_id: TextColumn,
    pub(crate) manifests: ManifestText,
}

impl Index {
    /// Every part of the index, named, in turn (for a memory probe that drops them one at a
    /// time and counts what each held: `ki-server`'s `read_model_memory` example).
    #[doc(hidden)]
    pub fn into_named_parts(self) -> Vec<(&'static str, Box<dyn std::any::Any>)> {
        // Every field named: a new one fails to compile here until the probe counts it.
        let Index {
            sources,
            projects,
            operations,
            operation_aliases,
            workloads,
            implementations,
            runs,
            measurements,
            record_events,
            artifacts,
            facts,
            cohorts,
            source_by_id,
            operation_by_id,
            implementation_by_id,
            run_id_order,
            run_digest_order,
            cohort_by_key,
            operation_by_name,
            operation_by_folded_name,
            workload_operation,
            implementation_project,
            implementations_by_operation,
            implementations_by_project,
            run_implementation,
            run_workload,
            workloads_by_operation,
            runs_by_workload,
            cohorts_by_workload,
            measurements_by_run,
            events_by_run,
            artifact_by_digest,
            workload_axes,
            operation_variable_axes,
            operation_known_axes,
            run_protocol_label,
            protocol_labels,
            run_title,
            run_external_id,
            manifests,
        } = self;
        vec![
            ("runs", Box::new(runs)),
            ("measurements", Box::new(measurements)),
            ("record events", Box::new(record_events)),
            ("run facts", Box::new(facts)),
            ("comparison groups", Box::new(cohorts)),
            ("sources, projects, operations", Box::new((sources, projects, operations, operation_aliases))),
            ("workloads", Box::new(workloads)),
            ("implementations", Box::new(implementations)),
            ("artifacts", Box::new((artifacts, artifact_by_digest))),
            (
                "look-ups by name and key",
                Box::new((
                    source_by_id,
                    operation_by_id,
                    implementation_by_id,
                    cohort_by_key,
                    operation_by_name,
                    operation_by_folded_name,
                )),
            ),
            ("run id and digest orders", Box::new((run_id_order, run_digest_order))),
            ("run implementation, workload", Box::new((run_implementation, run_workload))),
            (
                "groups by workload, run",
                Box::new((
                    workloads_by_operation,
                    runs_by_workload,
                    workload_operation,
                    implementation_project,
                    implementations_by_operation,
                    implementations_by_project,
                    measurements_by_run,
                    events_by_run,
                )),
            ),
            ("comparison groups by workload", Box::new(cohorts_by_workload)),
            ("workload axes", Box::new((workload_axes, operation_variable_axes, operation_known_axes))),
            ("run protocol labels", Box::new((run_protocol_label, protocol_labels))),
            ("run titles", Box::new(run_title)),
            ("run external ids", Box::new(run_external_id)),
            ("manifests", Box::new(manifests)),
        ]
    }
}

/// The manifests of projects, operations, workloads, implementations and runs as compact JSON text,
/// parsed when one is asked for. They are most of a catalog's bytes, and as parsed values
/// several times that; the index needs them only while it is built, so once built the typed
/// rows' `manifest` fields are emptied (`Value::Null`) and these are the only copy.
#[derive(Debug, Default)]
pub(crate) struct ManifestText {
    projects: Vec<Box<str>>,
    operations: Vec<Box<str>>,
    workloads: Vec<Box<str>>,
    implementations: Vec<Box<str>>,
    runs: Vec<Box<str>>,
    /// False once the runs' manifests are forgotten.
    runs_held: bool,
}

impl ManifestText {
    fn take<'a>(rows: impl Iterator<Item = &'a mut Value>) -> Vec<Box<str>> {
        rows.map(|manifest| {
            let text = serde_json::to_string(manifest).unwrap_or_default();
            *manifest = Value::Null;
            text.into_boxed_str()
        })
        .collect()
    }

    fn parse(text: Option<&str>) -> Value {
        // Written by `take` from a parsed value, so it parses back to the same value.
        text.and_then(|t| serde_json::from_str(t).ok()).unwrap_or(Value::Null)
    }
}

/// Rows in the order of their text (rows with one text in row order), for exact and prefix
/// look-ups by binary search; the caller gives each row's text (`text_of`).
#[derive(Debug, Default)]
pub(crate) struct TextOrder(Vec<u32>);

impl TextOrder {
    fn build<'a, F: HexForm + 'a>(rows: usize, text_of: impl Fn(usize) -> &'a HexText<F>) -> TextOrder {
        let mut order: Vec<u32> = (0..u32::try_from(rows).expect("fewer than 2^32 rows")).collect();
        // Stable: a text held by several rows keeps them in row order, so `exact` finds the last.
        order.sort_by(|&a, &b| text_of(a as usize).cmp(text_of(b as usize)));
        TextOrder(order)
    }

    /// The row holding `text`; of several, the last (as a map filled in row order would say).
    fn exact<'t, F: HexForm + 't>(&self, text: &str, text_of: impl Fn(usize) -> &'t HexText<F>) -> Option<usize> {
        self.held(&HexText::new(text), text_of)
    }

    /// As [`TextOrder::exact`], for a text already held as the rows hold theirs.
    fn held<'t, F: HexForm + 't>(
        &self,
        wanted: &HexText<F>,
        text_of: impl Fn(usize) -> &'t HexText<F>,
    ) -> Option<usize> {
        let end = self.0.partition_point(|&r| text_of(r as usize) <= wanted);
        let row = *self.0[..end].last()? as usize;
        (text_of(row) == wanted).then_some(row)
    }

    /// The rows whose text starts with `prefix`, in text order.
    fn prefixed<'a, 't, F: HexForm + 't>(
        &'a self,
        text_of: impl Fn(usize) -> &'t HexText<F> + 'a,
        prefix: &'a str,
    ) -> impl Iterator<Item = usize> + 'a {
        let start = self.0.partition_point(|&r| *text_of(r as usize).text() < *prefix);
        self.0[start..].iter().map(|&r| r as usize).take_while(move |&r| text_of(r).text().starts_with(prefix))
    }
}

/// Members listed per group (runs per workload, record events per run) in two flat vectors,
/// 4 bytes a member and 4 a group, where a vector per group takes 24 bytes and an allocation.
#[derive(Debug, Default)]
pub(crate) struct Groups {
    /// Group g's members are `members[starts[g]..starts[g + 1]]`.
    starts: Vec<u32>,
    members: Vec<u32>,
}

impl Groups {
    /// From each member's group, in member order; a member listed under no group is `None`.
    fn build(groups: usize, group_of: impl Iterator<Item = Option<usize>> + Clone) -> Groups {
        let mut starts = vec![0u32; groups + 1];
        for group in group_of.clone().flatten() {
            starts[group + 1] += 1;
        }
        for g in 0..groups {
            starts[g + 1] += starts[g];
        }
        let mut next = starts.clone();
        let mut members = vec![0u32; starts[groups] as usize];
        for (member, group) in group_of.enumerate() {
            if let Some(group) = group {
                members[next[group] as usize] = u32::try_from(member).expect("fewer than 2^32 members");
                next[group] += 1;
            }
        }
        Groups { starts, members }
    }

    /// The group's members in member order; none for a group out of range.
    fn of(&self, group: usize) -> &[u32] {
        match (self.starts.get(group), self.starts.get(group + 1)) {
            (Some(&start), Some(&end)) => &self.members[start as usize..end as usize],
            _ => &[],
        }
    }
}

/// An optional text per row in one buffer (run titles, the sources' own run ids: mostly
/// distinct, so interning shares nothing): 4 bytes a row and the text, where a `Text` takes
/// 8 and an allocation of its own.
#[derive(Debug, Default)]
pub(crate) struct TextColumn {
    text: String,
    /// Row r's text is `text[ends[r - 1]..ends[r]]` (from 0 for the first row).
    ends: Vec<u32>,
    /// Bit r set: row r has a text (an empty one included).
    present: Vec<u64>,
}

impl TextColumn {
    fn build<'a>(values: impl Iterator<Item = Option<&'a str>>) -> TextColumn {
        let mut column = TextColumn::default();
        for (row, value) in values.enumerate() {
            if row % 64 == 0 {
                column.present.push(0);
            }
            if let Some(value) = value {
                column.text.push_str(value);
                column.present[row / 64] |= 1 << (row % 64);
            }
            column.ends.push(u32::try_from(column.text.len()).expect("under 4 GiB of text"));
        }
        column.text.shrink_to_fit();
        column
    }

    fn get(&self, row: usize) -> Option<&str> {
        let end = *self.ends.get(row)? as usize;
        let start = if row == 0 { 0 } else { self.ends[row - 1] as usize };
        (self.present[row / 64] & (1 << (row % 64)) != 0).then(|| &self.text[start..end])
    }
}

/// A comparison group measured on a workload, with the hardware and framework of its eligible
/// runs (what resolve's filters test), each distinct pair once.
#[derive(Debug)]
pub(crate) struct MeasuredCohort {
    pub(crate) cohort: u32,
    pub(crate) filters: Vec<(Option<Text>, Option<Text>)>,
}

/// Each workload's comparison groups that have eligible runs, in the order of their first
/// eligible run.
fn measured_cohorts(
    runs_by_workload: &Groups,
    workloads: usize,
    runs: &[BenchmarkRunRow],
    facts: &[RunFacts],
    run_framework: &[Option<Text>],
) -> Vec<Vec<MeasuredCohort>> {
    (0..workloads)
        .map(|workload| {
            let mut measured: Vec<MeasuredCohort> = Vec::new();
            let mut position: HashMap<usize, usize> = HashMap::new();
            let workload_runs = runs_by_workload.of(workload).iter().map(|&run| run as usize);
            for run in workload_runs.filter(|&run| facts[run].eligible()) {
                let cohort = facts[run].cohort();
                let at = *position.entry(cohort).or_insert_with(|| {
                    measured.push(MeasuredCohort {
                        cohort: u32::try_from(cohort).expect("fewer than 2^32 comparison groups"),
                        filters: Vec::new(),
                    });
                    measured.len() - 1
                });
                let pair = (runs[run].hardware_model.clone(), run_framework[run].clone());
                if !measured[at].filters.contains(&pair) {
                    measured[at].filters.push(pair);
                }
            }
            measured
        })
        .collect()
}

fn index_by_id<K: std::hash::Hash + Eq + std::fmt::Display>(
    table: &str,
    ids: impl Iterator<Item = K>,
    origins: &Origins,
) -> Result<HashMap<K, usize>, RowError> {
    let mut map = HashMap::new();
    for (index, id) in ids.enumerate() {
        match map.entry(id) {
            std::collections::hash_map::Entry::Vacant(slot) => {
                slot.insert(index);
            }
            std::collections::hash_map::Entry::Occupied(taken) => {
                let shown = taken.key().to_string();
                return Err(RowError::DuplicateId {
                    location: describe_location(table, index, origins[index].0, Some(&shown)),
                    table: table.to_string(),
                    id: shown,
                });
            }
        }
    }
    Ok(map)
}

/// `found`, the row `value` names, or the error naming the row that refers to nothing.
fn resolve_reference(
    found: Option<usize>,
    value: &str,
    table: &str,
    index: usize,
    origins: &Origins,
    pointer: &str,
    target: &str,
) -> Result<usize, RowError> {
    found.ok_or_else(|| RowError::DanglingReference {
        location: describe_location(table, index, origins[index].0, origins[index].1.as_deref()),
        pointer: pointer.to_string(),
        target: target.to_string(),
        value: value.to_string(),
    })
}

fn primary_value(run: &BenchmarkRunRow) -> Option<f64> {
    let metric = run.primary_metric.as_deref().map(str::trim).unwrap_or("");
    if metric.is_empty() || metric == "none" {
        return None;
    }
    run.primary_value.get().filter(|v| v.is_finite())
}

impl Index {
    /// Parses, joins and ranks a copy of `rows`. Fails on the first malformed row or
    /// dangling reference.
    pub fn from_rows(rows: &CatalogRows) -> Result<Index, RowError> {
        Self::from_owned_rows(rows.clone())
    }

    /// As [`Index::from_rows`], taking the rows (no copy of the manifests).
    pub fn from_owned_rows(rows: CatalogRows) -> Result<Index, RowError> {
        let (sources, source_origins): (Vec<SourceRow>, _) = rows.sources.finish()?;
        let (mut projects, project_origins): (Vec<ProjectRow>, _) = rows.projects.finish()?;
        let (mut operations, operation_origins): (Vec<OperationRow>, _) = rows.operations.finish()?;
        let (operation_aliases, alias_origins): (Vec<OperationAliasRow>, _) = rows.operation_aliases.finish()?;
        let (mut workloads, workload_origins): (Vec<WorkloadRow>, _) = rows.workloads.finish()?;
        let (mut implementations, implementation_origins): (Vec<ImplementationRow>, _) =
            rows.implementations.finish()?;
        // Parsed and interned as they were pushed.
        let (runs, run_origins) = rows.benchmark_runs.finish()?;
        let run_parts = rows.run_parts;
        let (measurements, measurement_origins) = rows.measurements.finish()?;
        let mut interner = rows.interner;
        let (record_events, _): (Vec<RecordEventRow>, _) = rows.record_events.finish()?;
        let (artifacts, _): (Vec<ArtifactRow>, _) = rows.artifacts.finish()?;

        let source_by_id = index_by_id("sources", sources.iter().map(|r| r.id.clone()), &source_origins)?;
        let project_by_id = index_by_id("projects", projects.iter().map(|r| r.id.clone()), &project_origins)?;
        let operation_by_id = index_by_id("operations", operations.iter().map(|r| r.id.clone()), &operation_origins)?;
        let workload_by_id = index_by_id("workloads", workloads.iter().map(|r| r.id.clone()), &workload_origins)?;
        let implementation_by_id =
            index_by_id("implementations", implementations.iter().map(|r| r.id.clone()), &implementation_origins)?;
        let run_by_id = index_by_id("benchmark_runs", runs.iter().map(|r| r.id.clone()), &run_origins)?;

        let mut operation_by_name = HashMap::new();
        let mut operation_by_folded_name: HashMap<String, Vec<usize>> = HashMap::new();
        let mut add_name = |name: &str, op: usize| {
            operation_by_name.entry(name.to_string()).or_insert(op);
            let folded = operation_by_folded_name.entry(name.to_lowercase()).or_default();
            if !folded.contains(&op) {
                folded.push(op);
            }
        };
        for (op, operation) in operations.iter().enumerate() {
            add_name(&operation.name, op);
            add_name(&operation.slug, op);
        }
        for (index, alias) in operation_aliases.iter().enumerate() {
            let op = resolve_reference(
                operation_by_id.get(&alias.operation_id).copied(),
                &alias.operation_id,
                "operation_aliases",
                index,
                &alias_origins,
                "/operationId",
                "operation",
            )?;
            add_name(&alias.alias, op);
        }

        let operation_variable_axes: Vec<Vec<String>> = operations
            .iter()
            .map(|op| match op.manifest.pointer("/spec/axes").and_then(Value::as_object) {
                Some(axes) => axes
                    .iter()
                    .filter(|(_, spec)| spec.get("role").and_then(Value::as_str) != Some("constant"))
                    .map(|(name, _)| name.clone())
                    .collect(),
                None => Vec::new(),
            })
            .collect();
        let mut operation_known_axes: Vec<Vec<String>> = operations
            .iter()
            .map(|op| {
                op.manifest
                    .pointer("/spec/axes")
                    .and_then(Value::as_object)
                    .map(|a| a.keys().cloned().collect())
                    .unwrap_or_default()
            })
            .collect();

        let mut workload_operation = Vec::with_capacity(workloads.len());
        let mut workloads_by_operation = vec![Vec::new(); operations.len()];
        let mut workload_axes = Vec::with_capacity(workloads.len());
        for (index, workload) in workloads.iter().enumerate() {
            let op = resolve_reference(
                operation_by_id.get(&workload.operation_id).copied(),
                &workload.operation_id,
                "workloads",
                index,
                &workload_origins,
                "/operationId",
                "operation",
            )?;
            workload_operation.push(op);
            workloads_by_operation[op].push(index);
            let mut axes = BTreeMap::new();
            if let Some(spec_axes) = operations[op].manifest.pointer("/spec/axes").and_then(Value::as_object) {
                for (name, spec) in spec_axes {
                    if spec.get("role").and_then(Value::as_str) == Some("constant")
                        && let Some(value) = spec.get("value")
                    {
                        axes.insert(name.clone(), value.clone());
                    }
                }
            }
            if let Some(own) = workload.manifest.pointer("/spec/axes").and_then(Value::as_object) {
                for (name, value) in own {
                    axes.insert(name.clone(), value.clone());
                    if !operation_known_axes[op].contains(name) {
                        operation_known_axes[op].push(name.clone());
                    }
                }
            }
            workload_axes.push(axes);
        }

        let mut implementation_project = Vec::with_capacity(implementations.len());
        let mut implementations_by_operation = vec![Vec::new(); operations.len()];
        let mut implementations_by_project = vec![Vec::new(); projects.len()];
        for (index, implementation) in implementations.iter().enumerate() {
            let project = resolve_reference(
                project_by_id.get(&implementation.project_id).copied(),
                &implementation.project_id,
                "implementations",
                index,
                &implementation_origins,
                "/projectId",
                "project",
            )?;
            implementation_project.push(project);
            implementations_by_project[project].push(index);
            // An operation id that names no operation is no error: the implementation is
            // listed under no operation.
            if let Some(&op) = operation_by_id.get(&implementation.operation_id) {
                implementations_by_operation[op].push(index);
            }
        }

        let mut run_implementation = Vec::with_capacity(runs.len());
        let mut run_workload = Vec::with_capacity(runs.len());
        let mut superseded_by: HashMap<usize, usize> = HashMap::new();
        for (index, run) in runs.iter().enumerate() {
            let origins = &run_origins;
            run_implementation.push(resolve_reference(
                implementation_by_id.get(&*run.implementation_id).copied(),
                &run.implementation_id,
                "benchmark_runs",
                index,
                origins,
                "/implementationId",
                "implementation",
            )?);
            let workload = resolve_reference(
                workload_by_id.get(&*run.workload_id).copied(),
                &run.workload_id,
                "benchmark_runs",
                index,
                origins,
                "/workloadId",
                "workload",
            )?;
            run_workload.push(workload);
            if let Some(source_id) = &run.source_id {
                resolve_reference(
                    source_by_id.get(&**source_id).copied(),
                    source_id,
                    "benchmark_runs",
                    index,
                    origins,
                    "/sourceId",
                    "source",
                )?;
            }
            // Only a published successor supersedes: a draft correction changes nothing yet.
            if let (Some(target), Some(_)) = (&run.supersedes_id, run.published_at.get()) {
                let superseded = resolve_reference(
                    run_by_id.get(&IdText::new(target)).copied(),
                    target,
                    "benchmark_runs",
                    index,
                    origins,
                    "/supersedesId",
                    "benchmark run",
                )?;
                superseded_by.entry(superseded).or_insert(index);
            }
        }

        let runs_by_workload = Groups::build(workloads.len(), run_workload.iter().map(|&w| Some(w)));
        let mut measurement_run = Vec::with_capacity(measurements.len());
        for (index, measurement) in measurements.iter().enumerate() {
            measurement_run.push(Some(resolve_reference(
                run_by_id.get(&IdText::new(&measurement.run_id)).copied(),
                &measurement.run_id,
                "measurements",
                index,
                &measurement_origins,
                "/runId",
                "benchmark run",
            )?));
        }
        let measurements_by_run = Groups::build(runs.len(), measurement_run.into_iter());
        // An event names its run by id; one for a run the rows lack is listed under none.
        let events_by_run =
            Groups::build(runs.len(), record_events.iter().map(|event| run_by_id.get(&event.run_id).copied()));
        let artifact_by_digest = artifacts.iter().enumerate().map(|(i, a)| (a.content_digest.clone(), i)).collect();

        let run_framework: Vec<Option<Text>> = run_parts
            .iter()
            .zip(&run_implementation)
            .map(|(parts, &implementation)| match &implementations[implementation].framework {
                Some(framework) => {
                    let mut text: Text = framework.as_str().into();
                    interner.intern(&mut text);
                    Some(text)
                }
                None => parts.framework.clone(),
            })
            .collect();

        // Judge every run on its own.
        let mut deployabilities: HashMap<(bool, Option<String>, bool), std::sync::Arc<Deployability>> = HashMap::new();
        let mut cohort_by_key: HashMap<Text, usize> = HashMap::new();
        let mut cohorts: Vec<Cohort> = Vec::new();
        let mut facts = Vec::with_capacity(runs.len());
        for (index, run) in runs.iter().enumerate() {
            let implementation = &implementations[run_implementation[index]];
            let project = &projects[implementation_project[run_implementation[index]]];
            let mut ineligibility = Vec::new();
            if run.published_at.is_none() {
                ineligibility.push(Ineligibility::Unpublished);
            }
            if &*run.status != "passed" {
                ineligibility.push(Ineligibility::Status(run.status.to_string()));
            }
            if run.retracted_at.is_some() {
                ineligibility.push(Ineligibility::Retracted);
            }
            if let Some(&successor) = superseded_by.get(&index) {
                ineligibility.push(Ineligibility::Superseded { by: runs[successor].id.to_string() });
            }
            if primary_value(run).is_none() {
                ineligibility.push(Ineligibility::MissingPrimaryMetric);
            }
            let source_available = implementation.source_available && run.source_available;
            let trust = TrustLevel::assess(
                run.independent_replication_count,
                run.reproduced_by_kernelindex,
                source_available,
                run.has_raw_evidence,
            );
            let licence = implementation
                .license_expression
                .as_deref()
                .or(run.license_expression.as_deref())
                .or(project.license_expression.as_deref());
            let has_install_recipe = implementation.installable
                || run.installable
                || implementation.install_command.as_deref().is_some_and(|c| !c.trim().is_empty());
            let deployability = deployabilities
                .entry((source_available, licence.map(str::to_string), has_install_recipe))
                .or_insert_with(|| {
                    std::sync::Arc::new(Deployability::assess(source_available, licence, has_install_recipe))
                })
                .clone();
            let cohort = *cohort_by_key.entry(run.comparison_key.clone()).or_insert_with(|| {
                cohorts.push(Cohort {
                    comparison_key: run.comparison_key.clone(),
                    profile: CohortProfile::StrictExact,
                    direction: Direction::LowerIsBetter,
                    runs: Vec::new(),
                    ranking: Vec::new(),
                    baseline: None,
                });
                cohorts.len() - 1
            });
            cohorts[cohort].runs.push(index);
            facts.push(RunFacts {
                ineligibility: (!ineligibility.is_empty()).then(|| Box::new(Reasons(ineligibility))),
                trust,
                deployability,
                cohort: u32::try_from(cohort).expect("fewer than 2^32 comparison groups"),
                rank: None,
                position: 0,
                reference_speedup: run_parts[index].reference_speedup.into(),
                baseline_speedup: OptionalNumber::NONE,
            });
        }

        // Rank every comparison group.
        for cohort in &mut cohorts {
            let eligible: Vec<usize> = cohort.runs.iter().copied().filter(|&r| facts[r].eligible()).collect();
            // The profile is decided by the ranked runs: an ineligible source-native run
            // must not loosen or tighten how the eligible ones tie.
            cohort.profile = if eligible.iter().any(|&r| runs[r].source_native) {
                CohortProfile::SourceNative
            } else {
                CohortProfile::StrictExact
            };
            if let Some(&first) = eligible.first() {
                let run = &runs[first];
                cohort.direction =
                    Direction::for_metric(run.primary_metric.as_deref().unwrap_or(""), run.primary_unit.as_deref());
            }
            let contenders: Vec<Contender<IdText>> = eligible
                .iter()
                .map(|&r| Contender {
                    id: &runs[r].id,
                    value: primary_value(&runs[r]).unwrap_or(f64::NAN),
                    interval: match (runs[r].uncertainty_low.get(), runs[r].uncertainty_high.get()) {
                        (Some(low), Some(high)) if low.is_finite() && high.is_finite() => {
                            Some((low.min(high), low.max(high)))
                        }
                        _ => None,
                    },
                    trust: facts[r].trust,
                    observed_at: runs[r].observed_at.instant,
                })
                .collect();
            cohort.ranking = rank_contenders(&contenders, cohort.profile, cohort.direction)
                .into_iter()
                .map(|(i, rank)| RankedEntry { run: eligible[i], rank })
                .collect();
            for (position, entry) in cohort.ranking.iter().enumerate() {
                facts[entry.run].rank = Some(std::num::NonZeroU32::new(entry.rank).expect("dense ranks start at 1"));
                facts[entry.run].position = u32::try_from(position).expect("fewer than 2^32 runs");
            }
            cohort.baseline = cohort
                .ranking
                .iter()
                .find(|entry| implementations[run_implementation[entry.run]].role.as_deref() == Some("baseline"))
                .map(|entry| entry.run);
            if let Some(baseline) = cohort.baseline {
                let baseline_value = primary_value(&runs[baseline]).unwrap_or(f64::NAN);
                for entry in &cohort.ranking {
                    let value = primary_value(&runs[entry.run]).unwrap_or(f64::NAN);
                    let speedup = match cohort.direction {
                        Direction::LowerIsBetter => baseline_value / value,
                        Direction::HigherIsBetter => value / baseline_value,
                    };
                    facts[entry.run].baseline_speedup = speedup.is_finite().then_some(speedup).into();
                }
            }
        }

        let cohorts_by_workload = measured_cohorts(&runs_by_workload, workloads.len(), &runs, &facts, &run_framework);

        let mut protocol_labels = Vec::new();
        let mut label_positions = HashMap::new();
        let run_protocol_label = run_parts
            .iter()
            .map(|parts| {
                let label = (parts.protocol_name.clone(), parts.protocol_title.clone());
                *label_positions.entry(label).or_insert_with_key(|label| {
                    protocol_labels.push(label.clone());
                    u32::try_from(protocol_labels.len() - 1).expect("fewer than 2^32 protocol labels")
                })
            })
            .collect();
        drop(label_positions);
        let run_title = TextColumn::build(run_parts.iter().map(|parts| parts.title.as_deref()));
        let run_external_id = TextColumn::build(run_parts.iter().map(|parts| parts.external_id.as_deref()));
        drop(run_parts);
        let manifests = ManifestText {
            projects: ManifestText::take(projects.iter_mut().map(|r| &mut r.manifest)),
            operations: ManifestText::take(operations.iter_mut().map(|r| &mut r.manifest)),
            workloads: ManifestText::take(workloads.iter_mut().map(|r| &mut r.manifest)),
            implementations: ManifestText::take(implementations.iter_mut().map(|r| &mut r.manifest)),
            runs_held: rows.run_manifest_text.is_some(),
            runs: rows.run_manifest_text.unwrap_or_default(),
        };
        // The build's map of ids gives way to the compact orders the lookups keep.
        drop(run_by_id);
        let run_id_order = TextOrder::build(runs.len(), |r| &runs[r].id);
        let run_digest_order = TextOrder::build(runs.len(), |r| &runs[r].run_digest);
        Ok(Index {
            sources,
            projects,
            operations,
            operation_aliases,
            workloads,
            implementations,
            runs,
            measurements,
            record_events,
            artifacts,
            facts,
            cohorts,
            source_by_id,
            operation_by_id,
            implementation_by_id,
            run_id_order,
            run_digest_order,
            cohort_by_key,
            operation_by_name,
            operation_by_folded_name,
            workload_operation,
            implementation_project,
            implementations_by_operation,
            implementations_by_project,
            run_implementation: run_implementation
                .into_iter()
                .map(|i| u32::try_from(i).expect("fewer than 2^32 implementations"))
                .collect(),
            run_workload: run_workload
                .into_iter()
                .map(|w| u32::try_from(w).expect("fewer than 2^32 workloads"))
                .collect(),
            workloads_by_operation,
            runs_by_workload,
            cohorts_by_workload,
            measurements_by_run,
            events_by_run,
            artifact_by_digest,
            workload_axes,
            operation_variable_axes,
            operation_known_axes,
            run_protocol_label,
            protocol_labels,
            run_title,
            run_external_id,
            manifests,
        })
    }

    /// The project's manifest (parsed from the index's compact copy; the typed row's
    /// `manifest` field is empty once the index is built).
    pub fn project_manifest(&self, project: usize) -> Value {
        ManifestText::parse(self.manifests.projects.get(project).map(|t| &**t))
    }

    /// The operation's manifest (as [`Index::project_manifest`]).
    pub fn operation_manifest(&self, operation: usize) -> Value {
        ManifestText::parse(self.manifests.operations.get(operation).map(|t| &**t))
    }

    pub fn workload_manifest(&self, workload: usize) -> Value {
        ManifestText::parse(self.manifests.workloads.get(workload).map(|t| &**t))
    }

    pub fn implementation_manifest(&self, implementation: usize) -> Value {
        ManifestText::parse(self.manifests.implementations.get(implementation).map(|t| &**t))
    }

    /// The run's manifests (`{run, protocol, environment}`); None when the index was built
    /// without them ([`CatalogRows::without_run_manifests`]).
    pub fn run_manifest(&self, run: usize) -> Option<Value> {
        self.manifests.runs_held.then(|| ManifestText::parse(self.manifests.runs.get(run).map(|t| &**t)))
    }

    /// The run manifest's protocol name, when it has one.
    pub fn run_protocol_name(&self, run: usize) -> Option<&str> {
        self.protocol_labels[*self.run_protocol_label.get(run)? as usize].0.as_deref()
    }

    /// The run manifest's protocol title, when it has one.
    pub fn run_protocol_title(&self, run: usize) -> Option<&str> {
        self.protocol_labels[*self.run_protocol_label.get(run)? as usize].1.as_deref()
    }

    /// The run manifest's title, when it has one.
    pub fn run_title(&self, run: usize) -> Option<&str> {
        self.run_title.get(run)
    }

    /// The source's own id of the run (`submission/555004`), when it has one.
    pub fn run_external_id(&self, run: usize) -> Option<&str> {
        self.run_external_id.get(run)
    }

    /// A run by its digest (`sha256:…`).
    pub fn run_by_digest(&self, digest: &str) -> Option<usize> {
        self.run_digest_order.exact(digest, |run| &self.runs[run].run_digest)
    }

    /// The workload a run measured.
    pub fn run_workload(&self, run: usize) -> usize {
        self.run_workload[run] as usize
    }

    /// The implementation a run measured.
    pub fn run_implementation(&self, run: usize) -> usize {
        self.run_implementation[run] as usize
    }

    /// The project an implementation belongs to (a place in [`Index::projects`]).
    pub fn implementation_project(&self, implementation: usize) -> usize {
        self.implementation_project[implementation]
    }

    /// The implementations of an operation (a place in [`Index::operations`]), in row order; an
    /// implementation whose operation id names no operation is listed under none.
    pub fn operation_implementations(&self, operation: usize) -> &[usize] {
        self.implementations_by_operation.get(operation).map_or(&[], Vec::as_slice)
    }

    /// The implementations of a project (a place in [`Index::projects`]), in row order.
    pub fn project_implementations(&self, project: usize) -> &[usize] {
        self.implementations_by_project.get(project).map_or(&[], Vec::as_slice)
    }

    /// An operation by its id, as its place in [`Index::operations`].
    pub fn operation_index(&self, id: &str) -> Option<usize> {
        self.operation_by_id.get(id).copied()
    }

    /// An implementation by its id, as its place in [`Index::implementations`].
    pub fn implementation_index(&self, id: &str) -> Option<usize> {
        self.implementation_by_id.get(id).copied()
    }

    /// A source by its id, as its place in [`Index::sources`].
    pub fn source_index(&self, id: &str) -> Option<usize> {
        self.source_by_id.get(id).copied()
    }

    /// An artifact by its content digest, as its place in [`Index::artifacts`].
    pub fn artifact_index(&self, digest: &str) -> Option<usize> {
        self.artifact_by_digest.get(digest).copied()
    }

    /// The operation a workload is a case of.
    pub fn workload_operation(&self, workload: usize) -> usize {
        self.workload_operation[workload]
    }

    /// An operation's workloads, in row order.
    pub fn operation_workloads(&self, operation: usize) -> &[usize] {
        &self.workloads_by_operation[operation]
    }

    /// The runs measured on a workload, in row order.
    pub fn workload_runs(&self, workload: usize) -> impl ExactSizeIterator<Item = usize> + '_ {
        self.runs_by_workload.of(workload).iter().map(|&run| run as usize)
    }

    /// The run's record events, in row order.
    pub fn events_of(&self, run: usize) -> impl ExactSizeIterator<Item = &RecordEventRow> + '_ {
        self.events_by_run.of(run).iter().map(|&event| &self.record_events[event as usize])
    }

    /// The workload's axes, the operation's constant axes filled in.
    pub fn workload_axes(&self, workload: usize) -> &BTreeMap<String, Value> {
        &self.workload_axes[workload]
    }

    pub fn cohort(&self, comparison_key: &str) -> Option<&Cohort> {
        self.cohort_by_key.get(comparison_key).map(|&c| &self.cohorts[c])
    }

    pub fn run_index(&self, id: &str) -> Option<usize> {
        self.run_id_order.exact(id, |run| &self.runs[run].id)
    }

    /// [`Index::run_index`] of an id as rows hold it (a record event's run), without spelling it.
    pub fn run_of(&self, id: &IdText) -> Option<usize> {
        self.run_id_order.held(id, |run| &self.runs[run].id)
    }

    pub fn primary_value(&self, run: usize) -> Option<f64> {
        primary_value(&self.runs[run])
    }

    /// The run's measurement rows, in the catalog's order.
    pub fn measurements_of(&self, run: usize) -> impl Iterator<Item = &MeasurementRow> {
        self.measurements_by_run.of(run).iter().map(|&m| &self.measurements[m as usize])
    }

    pub fn implementation_of(&self, run: usize) -> &ImplementationRow {
        &self.implementations[self.run_implementation(run)]
    }

    pub fn project_of(&self, run: usize) -> &ProjectRow {
        &self.projects[self.project_index_of(run)]
    }

    /// The run's project as its place in [`Index::projects`].
    pub fn project_index_of(&self, run: usize) -> usize {
        self.implementation_project(self.run_implementation(run))
    }

    pub fn workload_of(&self, run: usize) -> &WorkloadRow {
        &self.workloads[self.run_workload(run)]
    }

    pub fn operation_of(&self, run: usize) -> &OperationRow {
        &self.operations[self.workload_operation[self.run_workload(run)]]
    }

    pub fn source_of(&self, run: usize) -> Option<&SourceRow> {
        self.runs[run].source_id.as_deref().and_then(|id| self.source_index(id)).map(|s| &self.sources[s])
    }

    /// Looks up an operation by name, slug or alias; exact first, then case-insensitive.
    pub fn find_operation(&self, name: &str) -> Result<usize, LookupError> {
        if let Some(&op) = self.operation_by_name.get(name) {
            return Ok(op);
        }
        match self.operation_by_folded_name.get(&name.to_lowercase()).map(Vec::as_slice) {
            Some([op]) => Ok(*op),
            Some(many) if !many.is_empty() => Err(LookupError::Ambiguous {
                what: "operation",
                given: name.to_string(),
                candidates: many.iter().map(|&op| self.operations[op].name.clone()).collect(),
            }),
            _ => Err(LookupError::NotFound { what: "operation", given: name.to_string() }),
        }
    }

    /// The runs whose id starts with `prefix`, in id order (a binary search, not a scan).
    pub fn runs_with_id_prefix<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = usize> + 'a {
        self.run_id_order.prefixed(|r| &self.runs[r].id, prefix)
    }

    /// Finds a run by id, by run digest (with or without `sha256:`), or by a unique
    /// prefix of either of at least 8 characters (the short id a run page shows).
    pub fn find_run(&self, reference: &str) -> Result<usize, LookupError> {
        let reference = reference.trim();
        if let Some(run) = self.run_index(reference) {
            return Ok(run);
        }
        let digest =
            if reference.starts_with("sha256:") { reference.to_string() } else { format!("sha256:{reference}") };
        if let Some(run) = self.run_by_digest(&digest) {
            return Ok(run);
        }
        if reference.len() < 8 {
            return Err(LookupError::NotFound { what: "run", given: reference.to_string() });
        }
        let mut matches: Vec<usize> = self
            .runs_with_id_prefix(reference)
            .chain(self.run_digest_order.prefixed(|r| &self.runs[r].run_digest, &digest))
            .collect();
        matches.sort_unstable();
        matches.dedup();
        match matches.as_slice() {
            [run] => Ok(*run),
            [] => Err(LookupError::NotFound { what: "run", given: reference.to_string() }),
            many => Err(LookupError::Ambiguous {
                what: "run",
                given: reference.to_string(),
                candidates: many.iter().take(10).map(|&r| self.runs[r].id.to_string()).collect(),
            }),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, schemars::JsonSchema)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum LookupError {
    #[error("no {what} matches {given:?}")]
    NotFound { what: &'static str, given: String },
    #[error("{given:?} matches more than one {what}: {}", candidates.join(", "))]
    Ambiguous { what: &'static str, given: String, candidates: Vec<String> },
}

#[cfg(test)]
mod run_facts_tests {
    #[test]
    fn a_run_s_facts_stay_48_bytes() {
        // One per run: at 1M runs each 8 bytes here are 8 MB of `ki serve`'s memory.
        assert_eq!(std::mem::size_of::<super::RunFacts>(), 48);
    }
}

#[cfg(test)]
mod text_order_tests {
    use super::TextOrder;
    use crate::rows::IdText;

    #[test]
    fn every_text_finds_its_row_and_a_repeated_text_its_last() {
        let texts = ["run-b", "run-a", "run-c", "run-a", "run-ab", "run-a"].map(IdText::new);
        let text = |r: usize| &texts[r];
        let order = TextOrder::build(texts.len(), text);
        assert_eq!(order.exact("run-a", text), Some(5));
        assert_eq!(order.exact("run-b", text), Some(0));
        assert_eq!(order.exact("run-c", text), Some(2));
        assert_eq!(order.exact("run-ab", text), Some(4));
        for absent in ["run-d", "run-", "", "run-aa", "zzz"] {
            assert_eq!(order.exact(absent, text), None, "{absent:?}");
        }
        assert_eq!(order.prefixed(text, "run-a").collect::<Vec<_>>(), [1, 3, 5, 4]);
        assert_eq!(order.prefixed(text, "run-ab").collect::<Vec<_>>(), [4]);
        assert_eq!(order.prefixed(text, "x").count(), 0);
        assert_eq!(TextOrder::build(0, text).exact("run-a", text), None);
    }

    #[test]
    fn uuids_held_as_bytes_are_found_exactly_and_by_prefix() {
        let texts = [
            "9f000000-0000-4000-8000-000000000001",
            "0a000000-0000-4000-8000-000000000002",
            "9f000000-0000-4000-8000-000000000000",
            "not-a-uuid",
            "9F000000-0000-4000-8000-000000000000",
        ]
        .map(IdText::new);
        let text = |r: usize| &texts[r];
        let order = TextOrder::build(texts.len(), text);
        for (row, id) in texts.iter().enumerate() {
            assert_eq!(order.exact(&id.to_string(), text), Some(row));
        }
        assert_eq!(order.prefixed(text, "9f0").collect::<Vec<_>>(), [2, 0]);
        assert_eq!(order.prefixed(text, "9f000000-0000-4000-8000-00000000000").collect::<Vec<_>>(), [2, 0]);
        assert_eq!(order.prefixed(text, "9").collect::<Vec<_>>(), [4, 2, 0], "upper case sorts first");
        assert_eq!(order.prefixed(text, "9F").collect::<Vec<_>>(), [4]);
        assert_eq!(order.exact("9f000000-0000-4000-8000-00000000000", text), None);
    }
}

#[cfg(test)]
mod compact_list_tests {
    use super::{Groups, TextColumn};

    #[test]
    fn groups_list_each_member_under_its_group_in_member_order() {
        let group_of = [Some(2), None, Some(0), Some(2), Some(2), None, Some(0)];
        let groups = Groups::build(4, group_of.iter().copied());
        assert_eq!(groups.of(0), [2, 6]);
        assert_eq!(groups.of(1), [] as [u32; 0]);
        assert_eq!(groups.of(2), [0, 3, 4]);
        assert_eq!(groups.of(3), [] as [u32; 0]);
        assert_eq!(groups.of(4), [] as [u32; 0], "a group out of range has no members");
        assert_eq!(Groups::build(0, std::iter::empty()).of(0), [] as [u32; 0]);
        assert_eq!(Groups::default().of(7), [] as [u32; 0]);
    }

    #[test]
    fn a_text_column_gives_back_each_rows_text_and_tells_empty_from_absent() {
        let texts: Vec<Option<String>> = (0..150)
            .map(|row| match row % 5 {
                0 => None,
                1 => Some(String::new()),
                2 => Some(format!("Synthetic run {row}")),
                3 => Some(format!("ü-名前-{row}")),
                _ => Some("x".repeat(row)),
            })
            .collect();
        let column = TextColumn::build(texts.iter().map(Option::as_deref));
        for (row, text) in texts.iter().enumerate() {
            assert_eq!(column.get(row), text.as_deref(), "row {row}");
        }
        assert_eq!(column.get(texts.len()), None);
        assert_eq!(TextColumn::build(std::iter::empty()).get(0), None);
    }
}
