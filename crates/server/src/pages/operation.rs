//! An operation (`/operations/{slug}`): current records per workload (sortable, look-alike
//! groups told apart), the leaderboard of the group picked (the largest by default), every
//! comparison group paged, one sweep chart per GPU, its implementations and semantics, with a
//! GPU filter; every choice is in the URL. And the list of all operations (`/operations`).

use std::collections::{BTreeMap, HashMap};

use axum::extract::Query;
use axum::extract::{Path, State};
use maud::{Markup, html};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::implementation::ImplementationItem;
use super::{
    Answer, PAGE_LIMIT, PageQuery, RunSummary, Shared, find_operation, gpu_link, html_response, json_response, layout,
    pager, pages_for, runs_table, scalar, section, trusted,
};
use crate::model::{ReadModel, RunRow, pointer, slugify, text};
use crate::problem::Problem;

/// Most series the sweep chart draws.
pub const CHART_SERIES: usize = 8;

/// Most distinct values of an axis a sweep line holds fixed (more: it varies with the swept axis).
const MAX_HELD_VALUES: usize = 8;

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct AxisView {
    pub name: String,
    pub role: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub value: Option<String>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ParameterView {
    pub name: String,
    pub kind: &'static str,
    pub dtype: String,
    pub shape: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Semantics {
    pub axes: Vec<AxisView>,
    pub inputs: Vec<ParameterView>,
    pub outputs: Vec<ParameterView>,
    pub reference: Option<Value>,
    pub properties: Vec<(String, String)>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadRecord {
    pub workload: String,
    pub hardware: String,
    pub comparison_key: String,
    pub eligible_runs: usize,
    pub holder: RunSummary,
    /// Where this group differs from the others on the same workload and hardware (protocol,
    /// environment, correctness rule, metric); empty when it is the only one.
    pub differs_by: Vec<String>,
    /// This operation's page with this group's leaderboard.
    pub group_href: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Leaderboard {
    pub comparison_key: String,
    pub workload: String,
    pub hardware: String,
    pub protocol: String,
    pub entries: Vec<RunSummary>,
    pub eligible_runs: usize,
    /// The group's fastest deployable run (named beside its #1).
    pub best_deployable: Option<RunSummary>,
    /// This operation's page with this group's leaderboard.
    pub href: String,
}

/// One point of a sweep: the best run at one axis value.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SweepPoint {
    pub x: f64,
    pub ns: f64,
    pub run_href: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SweepSeries {
    /// The implementation, and the other variable axes' values held fixed along the line.
    pub label: String,
    /// Sorted by axis value.
    pub points: Vec<SweepPoint>,
}

/// Latency against one axis on one GPU, one line per implementation and fixed other axes.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Sweep {
    pub axis: String,
    pub metric: String,
    pub hardware: String,
    pub series: Vec<SweepSeries>,
    /// Lines with at least two points before the chart kept the longest [`CHART_SERIES`].
    pub series_total: usize,
}

/// A GPU this operation has runs on, as a choice of the page's GPU filter.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GpuChoice {
    pub name: String,
    pub slug: String,
    pub runs: usize,
    pub href: String,
    pub selected: bool,
}

/// The order of the records table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RecordOrder {
    /// Hardware, then the workload's axes as numbers (the default).
    #[default]
    Workload,
    /// Fastest holder first (time metrics; others after).
    Value,
    /// Most eligible runs first.
    Runs,
}

impl RecordOrder {
    fn as_str(self) -> &'static str {
        match self {
            RecordOrder::Workload => "workload",
            RecordOrder::Value => "value",
            RecordOrder::Runs => "runs",
        }
    }
}

/// What the operation page shows; every choice is in the URL.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
pub struct OperationQuery {
    /// Only runs on this GPU (its slug, e.g. `nvidia-h200`).
    #[schemars(length(max = 200))]
    pub gpu: Option<String>,
    /// The comparison group whose leaderboard is shown (its comparison key); the largest by default.
    #[schemars(length(max = 200))]
    pub group: Option<String>,
    /// The records table's order.
    pub sort: Option<RecordOrder>,
    /// Page of the comparison-group list.
    #[schemars(extend("maximum" = 18_446_744_073_709_551_615_u64))]
    pub page: Option<usize>,
}

/// Comparison groups listed per page.
pub const GROUPS_PER_PAGE: usize = 50;

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperationView {
    pub id: String,
    pub slug: String,
    pub name: String,
    pub title: String,
    pub family: String,
    pub description: Option<String>,
    pub aliases: Vec<String>,
    pub tags: Vec<String>,
    pub semantic_digest: String,
    /// GPUs with runs of this operation, most runs first.
    pub gpus: Vec<GpuChoice>,
    /// The GPU filter in force (a slug), if any.
    pub gpu: Option<String>,
    pub sort: RecordOrder,
    pub records: Vec<WorkloadRecord>,
    pub records_total: usize,
    /// The chosen group's leaderboard, or the largest group's.
    pub leaderboard: Option<Leaderboard>,
    /// Whether `leaderboard` is the group named in the URL (not the default).
    pub leaderboard_chosen: bool,
    /// Every group with an eligible run (under the GPU filter), largest first, one page of them.
    pub groups: Vec<Leaderboard>,
    pub groups_total: usize,
    pub groups_page: usize,
    pub groups_pages: usize,
    /// One sweep per GPU (under the GPU filter).
    pub sweeps: Vec<Sweep>,
    pub implementations: Vec<ImplementationItem>,
    pub implementations_total: usize,
    pub semantics: Semantics,
}

fn params(list: Option<&Value>) -> Vec<ParameterView> {
    list.and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|p| {
                    let (kind, body) = match (p.get("tensor"), p.get("scalar")) {
                        (Some(t), _) => ("tensor", t),
                        (None, Some(s)) => ("scalar", s),
                        _ => ("other", p),
                    };
                    ParameterView {
                        name: p.get("name").map(scalar).unwrap_or_default(),
                        kind,
                        dtype: body.get("dtype").map(scalar).unwrap_or_default(),
                        shape: body
                            .get("shape")
                            .and_then(Value::as_array)
                            .map(|s| format!("[{}]", s.iter().map(scalar).collect::<Vec<_>>().join(", ")))
                            .unwrap_or_default(),
                    }
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The operation page's URL with the given choices (defaults left out).
pub fn operation_href(slug: &str, gpu: Option<&str>, group: Option<&str>, sort: RecordOrder, page: usize) -> String {
    let mut params = Vec::new();
    if let Some(gpu) = gpu {
        params.push(format!("gpu={}", crate::pages::percent_encode(gpu)));
    }
    if let Some(group) = group {
        params.push(format!("group={}", crate::pages::percent_encode(group)));
    }
    if sort != RecordOrder::Workload {
        params.push(format!("sort={}", sort.as_str()));
    }
    if page > 1 {
        params.push(format!("page={page}"));
    }
    let query = if params.is_empty() { String::new() } else { format!("?{}", params.join("&")) };
    format!("/operations/{slug}{query}")
}

/// How a group's runs were measured, field by field: what tells look-alike groups apart.
fn setup_fields(model: &ReadModel, r: usize) -> [(&'static str, String); 4] {
    let run = model.run(r);
    let short = |key: &str| key.trim_start_matches("sha256:").chars().take(12).collect::<String>();
    let protocol =
        model.judgement.run_protocol_title(r).map(str::to_string).unwrap_or_else(|| short(&run.protocol_key));
    let environment = match run.environment_summary.as_deref().unwrap_or("") {
        "" => short(&run.environment_key),
        summary => format!("{summary} ({})", short(&run.environment_key)),
    };
    [
        ("protocol", protocol),
        ("environment", environment),
        ("correctness rule", short(&run.correctness_key)),
        (
            "metric",
            format!(
                "{} ({})",
                run.primary_metric.as_deref().unwrap_or(""),
                run.primary_statistic.as_deref().unwrap_or("")
            ),
        ),
    ]
}

/// The primary value in nanoseconds, for time metrics.
fn primary_ns(run: &RunRow) -> Option<f64> {
    run.primary_value.get().and_then(|v| ki_model::units::to_ns(v, run.primary_unit.as_deref().unwrap_or("")))
}

/// A run's GPU model ("" when unknown).
fn gpu_of(run: &RunRow) -> &str {
    run.hardware_model.as_deref().unwrap_or("")
}

impl ReadModel {
    /// The operation's variable axes (not `constant`), in the definition's order.
    fn variable_axes(&self, op: usize) -> Vec<String> {
        self.operations.rows[op]
            .get("manifest")
            .and_then(|m| pointer(m, &["spec", "axes"]))
            .and_then(Value::as_object)
            .map(|a| {
                a.iter()
                    .filter(|(_, v)| v.get("role").and_then(Value::as_str) != Some("constant"))
                    .map(|(k, _)| k.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A workload's values of the given axes, as numbers (absent or non-numeric: NaN, sorted last).
    fn axis_values(&self, workload: usize, axes: &[String]) -> Vec<f64> {
        let values = self.judgement.workload_axes(workload);
        axes.iter().map(|a| values.get(a).and_then(Value::as_f64).unwrap_or(f64::NAN)).collect()
    }

    /// The operation page under its query. A GPU or a comparison group the operation has no runs
    /// in is refused by name.
    pub fn operation_view(&self, op: usize, query: &OperationQuery) -> Result<OperationView, Problem> {
        let row = &self.operations.rows[op];
        let slug = text(row, "slug");
        let manifest = self.judgement.operation_manifest(op);
        let spec = manifest.get("spec").cloned().unwrap_or(Value::Null);
        let sort = query.sort.unwrap_or_default();
        let axes = self.variable_axes(op);

        let runs: Vec<usize> =
            self.judgement.operation_workloads(op).iter().flat_map(|w| self.judgement.workload_runs(*w)).collect();
        let mut gpu_runs: BTreeMap<&str, usize> = BTreeMap::new();
        for &r in &runs {
            *gpu_runs.entry(gpu_of(self.run(r))).or_default() += 1;
        }
        let gpu_name: Option<&str> =
            match &query.gpu {
                None => None,
                Some(wanted) => {
                    Some(gpu_runs.keys().copied().find(|name| slugify(name) == *wanted).ok_or_else(|| {
                        Problem::not_found(format!("operation {slug:?} has no runs on a GPU {wanted:?}"))
                    })?)
                }
            };
        let gpu_slug = gpu_name.map(slugify);
        let href = |group: Option<&str>, sort: RecordOrder, page: usize| {
            operation_href(slug, gpu_slug.as_deref(), group, sort, page)
        };
        let mut gpus: Vec<GpuChoice> = gpu_runs
            .iter()
            .map(|(name, &count)| GpuChoice {
                name: name.to_string(),
                slug: slugify(name),
                runs: count,
                href: operation_href(slug, Some(&slugify(name)), None, sort, 1),
                selected: Some(*name) == gpu_name,
            })
            .collect();
        gpus.sort_by(|a, b| b.runs.cmp(&a.runs).then(a.name.cmp(&b.name)));

        // Every comparison group with runs on this operation's workloads (and the GPU chosen).
        let mut all_cohorts: Vec<usize> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for &r in &runs {
            let c = self.judgement.facts[r].cohort();
            if seen.insert(c) {
                all_cohorts.push(c);
            }
        }
        let leader_of = |c: usize| self.judgement.cohorts[c].ranking.first().map(|e| e.run);
        let sample_of = |c: usize| {
            let cohort = &self.judgement.cohorts[c];
            cohort.ranking.first().map(|e| e.run).unwrap_or(cohort.runs[0])
        };
        let on_gpu = |c: usize| gpu_name.is_none_or(|g| gpu_of(self.run(sample_of(c))) == g);
        let cohorts: Vec<usize> = all_cohorts.iter().copied().filter(|&c| on_gpu(c)).collect();
        let describe = |c: usize, top: usize| -> Leaderboard {
            let cohort = &self.judgement.cohorts[c];
            let sample = sample_of(c);
            let sample_row = self.run(sample);
            Leaderboard {
                comparison_key: cohort.comparison_key.to_string(),
                workload: self.run_workload_label(sample).into(),
                hardware: gpu_of(sample_row).into(),
                protocol: setup_fields(self, sample)[0].1.clone(),
                entries: self.summaries(cohort.ranking.iter().take(top).map(|e| e.run)),
                eligible_runs: cohort.ranking.len(),
                best_deployable: self.judgement.best_deployable_of(c).map(|run| self.run_summary(run)),
                href: href(Some(&cohort.comparison_key), sort, 1),
            }
        };

        // The records: rank 1 of each group, with what tells look-alike groups apart.
        struct Keyed {
            record: WorkloadRecord,
            workload_id: String,
            axis_values: Vec<f64>,
            ns: Option<f64>,
            setup: [(&'static str, String); 4],
        }
        let mut keyed: Vec<Keyed> = cohorts
            .iter()
            .filter_map(|&c| {
                let leader = leader_of(c)?;
                let lrow = self.run(leader);
                let key = &self.judgement.cohorts[c].comparison_key;
                Some(Keyed {
                    record: WorkloadRecord {
                        workload: self.run_workload_label(leader).into(),
                        hardware: gpu_of(lrow).into(),
                        comparison_key: key.to_string(),
                        eligible_runs: self.judgement.cohorts[c].ranking.len(),
                        holder: self.run_summary(leader),
                        differs_by: Vec::new(),
                        group_href: format!("{}#leaderboard", href(Some(key), sort, 1)),
                    },
                    workload_id: lrow.workload_id.to_string(),
                    axis_values: self.axis_values(self.judgement.run_workload(leader), &axes),
                    ns: primary_ns(lrow),
                    setup: setup_fields(self, leader),
                })
            })
            .collect();
        let mut alike: HashMap<(String, String), Vec<usize>> = HashMap::new();
        for (i, k) in keyed.iter().enumerate() {
            alike.entry((k.workload_id.clone(), k.record.hardware.clone())).or_default().push(i);
        }
        for members in alike.values().filter(|m| m.len() > 1) {
            for field in 0..4 {
                let first = &keyed[members[0]].setup[field].1;
                if members.iter().any(|&i| &keyed[i].setup[field].1 != first) {
                    for &i in members {
                        let (name, value) = keyed[i].setup[field].clone();
                        keyed[i].record.differs_by.push(format!("{name}: {value}"));
                    }
                }
            }
        }
        let by_workload = |a: &Keyed, b: &Keyed| {
            a.record.hardware.cmp(&b.record.hardware).then_with(|| {
                a.axis_values
                    .iter()
                    .zip(&b.axis_values)
                    .map(|(x, y)| x.total_cmp(y))
                    .find(|o| o.is_ne())
                    .unwrap_or(std::cmp::Ordering::Equal)
                    .then_with(|| a.record.workload.cmp(&b.record.workload))
                    .then_with(|| a.record.comparison_key.cmp(&b.record.comparison_key))
            })
        };
        match sort {
            RecordOrder::Workload => keyed.sort_by(by_workload),
            RecordOrder::Value => keyed.sort_by(|a, b| match (a.ns, b.ns) {
                (Some(x), Some(y)) => x.total_cmp(&y).then_with(|| by_workload(a, b)),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                (None, None) => by_workload(a, b),
            }),
            RecordOrder::Runs => keyed
                .sort_by(|a, b| b.record.eligible_runs.cmp(&a.record.eligible_runs).then_with(|| by_workload(a, b))),
        }
        let records_total = keyed.len();
        let records: Vec<WorkloadRecord> = keyed.into_iter().take(PAGE_LIMIT).map(|k| k.record).collect();

        // Every group with an eligible run, largest first; the leaderboard is the chosen one.
        let mut ranked: Vec<usize> = cohorts.iter().copied().filter(|&c| leader_of(c).is_some()).collect();
        ranked.sort_by(|&a, &b| {
            let (ca, cb) = (&self.judgement.cohorts[a], &self.judgement.cohorts[b]);
            cb.ranking.len().cmp(&ca.ranking.len()).then(ca.comparison_key.cmp(&cb.comparison_key))
        });
        let (leaderboard, leaderboard_chosen) = match &query.group {
            Some(key) => {
                let c = all_cohorts
                    .iter()
                    .copied()
                    .find(|&c| self.judgement.cohorts[c].comparison_key.as_str() == key.as_str())
                    .ok_or_else(|| Problem::not_found(format!("operation {slug:?} has no comparison group {key:?}")))?;
                (Some(describe(c, 50)), true)
            }
            None => (ranked.first().map(|&c| describe(c, 50)), false),
        };
        let groups_total = ranked.len();
        let groups_pages = pages_for(groups_total, GROUPS_PER_PAGE);
        let groups_page = query.page.unwrap_or(1).clamp(1, groups_pages);
        let groups: Vec<Leaderboard> = ranked
            .iter()
            .skip((groups_page - 1) * GROUPS_PER_PAGE)
            .take(GROUPS_PER_PAGE)
            .map(|&c| describe(c, 1))
            .collect();

        let sweeps: Vec<Sweep> = gpus
            .iter()
            .filter(|g| gpu_name.is_none_or(|name| name == g.name))
            .filter_map(|g| self.sweep(&axes, &g.name, &cohorts))
            .collect();

        let mut implementations: Vec<ImplementationItem> = self
            .implementations_by_operation
            .get(&op)
            .into_iter()
            .flatten()
            .map(|&i| self.implementation_item(i))
            .collect();
        implementations.sort_by(|a, b| b.runs.cmp(&a.runs).then(a.slug.cmp(&b.slug)));
        let implementations_total = implementations.len();
        implementations.truncate(PAGE_LIMIT);

        let semantic_axes = spec
            .get("axes")
            .and_then(Value::as_object)
            .map(|axes| {
                axes.iter()
                    .map(|(name, a)| AxisView {
                        name: name.clone(),
                        role: a.get("role").map(scalar).unwrap_or_default(),
                        kind: a.get("type").map(scalar).unwrap_or_default(),
                        value: a.get("value").map(scalar),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let properties = spec
            .get("semantics")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), scalar(v))).collect())
            .unwrap_or_default();

        Ok(OperationView {
            id: text(row, "id").into(),
            slug: slug.into(),
            name: text(row, "name").into(),
            title: self.operation_title(op).into(),
            family: text(row, "family").into(),
            description: pointer(&manifest, &["metadata", "description"]).map(scalar),
            aliases: self.aliases_by_operation.get(&op).cloned().unwrap_or_default(),
            tags: row.get("tags").and_then(Value::as_array).map(|t| t.iter().map(scalar).collect()).unwrap_or_default(),
            semantic_digest: text(row, "semanticDigest").into(),
            gpus,
            gpu: gpu_slug.clone(),
            sort,
            records,
            records_total,
            leaderboard,
            leaderboard_chosen,
            groups,
            groups_total,
            groups_page,
            groups_pages,
            sweeps,
            implementations,
            implementations_total,
            semantics: Semantics {
                axes: semantic_axes,
                inputs: params(spec.get("inputs")),
                outputs: params(spec.get("outputs")),
                reference: spec.get("reference").cloned(),
                properties,
            },
        })
    }

    /// Latency against the axis that varies most on one GPU, across the groups sharing the
    /// protocol, environment and metric of that GPU's largest group; one line per implementation
    /// and values of the other variable axes, so that lines never mix batch sizes.
    fn sweep(&self, axes: &[String], gpu: &str, cohorts: &[usize]) -> Option<Sweep> {
        let on_gpu: Vec<usize> = cohorts
            .iter()
            .copied()
            .filter(|&c| self.judgement.cohorts[c].ranking.first().is_some_and(|e| gpu_of(self.run(e.run)) == gpu))
            .collect();
        let primary = on_gpu.iter().copied().max_by(|&a, &b| {
            let (ca, cb) = (&self.judgement.cohorts[a], &self.judgement.cohorts[b]);
            ca.ranking.len().cmp(&cb.ranking.len()).then(cb.comparison_key.cmp(&ca.comparison_key))
        })?;
        let srow = self.run(self.judgement.cohorts[primary].ranking.first()?.run);
        let same_setup = |r: &RunRow| {
            r.protocol_key == srow.protocol_key
                && r.environment_key == srow.environment_key
                && r.primary_metric == srow.primary_metric
                && r.primary_statistic == srow.primary_statistic
        };
        // (implementation, axis values, value, run) of each group's eligible runs.
        let mut points: Vec<(String, Vec<f64>, f64, usize)> = Vec::new();
        for &c in &on_gpu {
            for entry in &self.judgement.cohorts[c].ranking {
                let r = self.run(entry.run);
                // Only time metrics plot on a latency axis.
                let (true, Some(ns)) = (same_setup(r), primary_ns(r)) else { continue };
                let implementation =
                    self.implementations.get(&r.implementation_id).map(|i| text(&i, "slug").to_string());
                points.push((
                    implementation.unwrap_or_default(),
                    self.axis_values(self.judgement.run_workload(entry.run), axes),
                    ns,
                    entry.run,
                ));
            }
        }
        let distinct = |a: usize| {
            let mut values: Vec<u64> =
                points.iter().map(|p| p.1[a]).filter(|v| v.is_finite()).map(f64::to_bits).collect();
            values.sort_unstable();
            values.dedup();
            values.len()
        };
        let axis = (0..axes.len()).max_by_key(|&a| distinct(a))?;
        // The axes a line holds fixed: those with few values (a batch size, a head count) that
        // the swept axis and the axes already held do not determine (len_indptr follows
        // batch_size). Axes with many values co-vary with the swept one and are not held.
        let mut others: Vec<usize> = (0..axes.len()).filter(|&a| a != axis && distinct(a) > 1).collect();
        others.sort_by_key(|&a| distinct(a));
        let mut held: Vec<usize> = Vec::new();
        for a in others {
            if distinct(a) > MAX_HELD_VALUES {
                continue;
            }
            let mut seen: HashMap<Vec<u64>, u64> = HashMap::new();
            let implied = points.iter().all(|p| {
                let key: Vec<u64> =
                    std::iter::once(axis).chain(held.iter().copied()).map(|i| p.1[i].to_bits()).collect();
                *seen.entry(key).or_insert(p.1[a].to_bits()) == p.1[a].to_bits()
            });
            if !implied {
                held.push(a);
            }
        }
        held.sort_unstable();
        let mut lines: BTreeMap<String, Vec<SweepPoint>> = BTreeMap::new();
        for (implementation, values, ns, run) in points {
            let x = values[axis];
            if !x.is_finite() {
                continue;
            }
            let fixed = held.iter().map(|&i| format!("{} = {}", axes[i], ki_model::units::plain_number(values[i])));
            let label = std::iter::once(implementation).chain(fixed).collect::<Vec<_>>().join(" · ");
            let run_href = format!("/runs/{}", self.run(run).id);
            lines.entry(label).or_default().push(SweepPoint { x, ns, run_href });
        }
        let mut series: Vec<SweepSeries> = lines
            .into_iter()
            .map(|(label, mut pts)| {
                pts.sort_by(|a, b| a.x.total_cmp(&b.x).then(a.ns.total_cmp(&b.ns)));
                // One point per axis value: the best at that value.
                pts.dedup_by(|next, kept| next.x == kept.x);
                SweepSeries { label, points: pts }
            })
            .filter(|s| s.points.len() >= 2)
            .collect();
        let series_total = series.len();
        series.sort_by(|a, b| b.points.len().cmp(&a.points.len()).then(a.label.cmp(&b.label)));
        series.truncate(CHART_SERIES);
        if series.is_empty() {
            return None;
        }
        Some(Sweep {
            axis: axes[axis].clone(),
            metric: format!(
                "{} ({})",
                srow.primary_metric.as_deref().unwrap_or(""),
                srow.primary_statistic.as_deref().unwrap_or("")
            ),
            hardware: gpu.into(),
            series,
            series_total,
        })
    }
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperationItem {
    pub slug: String,
    pub title: String,
    pub family: String,
    pub workloads: usize,
    pub runs: usize,
    pub href: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperationList {
    pub operations: Vec<OperationItem>,
    pub total: usize,
    pub page: usize,
    pub pages: usize,
}

impl ReadModel {
    pub fn operation_item(&self, op: usize) -> OperationItem {
        let row = &self.operations.rows[op];
        let workloads = self.judgement.operation_workloads(op);
        OperationItem {
            slug: text(row, "slug").into(),
            title: self.operation_title(op).into(),
            family: text(row, "family").into(),
            workloads: workloads.len(),
            runs: workloads.iter().map(|w| self.judgement.workload_runs(*w).len()).sum(),
            href: format!("/operations/{}", text(row, "slug")),
        }
    }

    /// Operations with the most runs first.
    pub fn operation_list(&self, page: usize) -> OperationList {
        let mut items: Vec<OperationItem> = (0..self.operations.len()).map(|op| self.operation_item(op)).collect();
        items.sort_by(|a, b| b.runs.cmp(&a.runs).then(a.title.cmp(&b.title)));
        let total = items.len();
        let pages = pages_for(total, PAGE_LIMIT);
        let page = page.clamp(1, pages);
        OperationList {
            operations: items.into_iter().skip((page - 1) * PAGE_LIMIT).take(PAGE_LIMIT).collect(),
            total,
            page,
            pages,
        }
    }
}

// ---------- operations ----------

pub fn render(v: &OperationView) -> Markup {
    let group = v.leaderboard.as_ref().filter(|_| v.leaderboard_chosen).map(|l| l.comparison_key.as_str());
    let sort_link = |order: RecordOrder, label: &str| -> Markup {
        html! {
            @if v.sort == order { span aria-current="true" { (label) " ▾" } }
            @else { a href={ (operation_href(&v.slug, v.gpu.as_deref(), group, order, 1)) "#records" } { (label) } }
        }
    };
    let any_differences = v.records.iter().any(|r| !r.differs_by.is_empty());
    let first_group = (v.groups_page - 1) * GROUPS_PER_PAGE + 1;
    let main = html! {
        h1 { (v.title) }
        p.subtitle { (v.family) @if let Some(d) = &v.description { " — " (d) } }
        @if !v.aliases.is_empty() { p { "Also known as " (v.aliases.join(", ")) } }
        p { a href={ "/api/v1/operations/" (v.slug) } type="application/json" { "JSON" } " · "
            a href={ "/resolve?operation=" (crate::pages::percent_encode(&v.name)) } { "Resolve a workload of this operation" } }
        @if !v.gpus.is_empty() {
            nav.choices aria-label="GPU" {
                span { "GPU: " }
                @if v.gpu.is_none() { span aria-current="true" { "all" } }
                @else { a href=(operation_href(&v.slug, None, None, v.sort, 1)) { "all" } }
                @for g in &v.gpus {
                    " · "
                    @if g.selected { span aria-current="true" { (g.name) " (" (g.runs) ")" } }
                    @else { a href=(g.href) { (g.name) " (" (g.runs) ")" } }
                }
            }
        }
        (section("records", "Current records per workload", html! {
            @if v.records.is_empty() { p { "No eligible runs yet." } } @else {
                table {
                    caption { "Rank-1 run of every comparison group (" (v.records_total) " groups" @if v.records_total > v.records.len() { ", first " (v.records.len()) " shown" } ")" }
                    thead { tr {
                        th scope="col" { (sort_link(RecordOrder::Workload, "workload")) } th scope="col" { "hardware" }
                        th scope="col" { "holder" } th scope="col" class="num" { (sort_link(RecordOrder::Value, "value")) }
                        th scope="col" class="num" { (sort_link(RecordOrder::Runs, "runs")) }
                        @if any_differences { th scope="col" { "differs by" } }
                        th scope="col" { "group" }
                    } }
                    tbody { @for r in &v.records { tr {
                        td { (r.workload) } td { (gpu_link(&r.hardware)) }
                        td { a href=(r.holder.href) { (r.holder.implementation) } }
                        td.num { (r.holder.display) }
                        td.num { (r.eligible_runs) }
                        @if any_differences { td { (r.differs_by.join("; ")) } }
                        td { a href=(r.group_href) { "leaderboard" } }
                    } } }
                }
            }
        }))
        (section("leaderboard", "Leaderboard", html! {
            @if let Some(l) = &v.leaderboard {
                p { @if v.leaderboard_chosen { "The comparison group you picked: " } @else { "The largest comparison group: " }
                    (l.workload) " on " (gpu_link(&l.hardware)) ", protocol " (l.protocol) ". "
                    "Other protocols and hardware are ranked apart; pick any group below." }
                p #leaderboard-deployable { "#1: " @if let Some(first) = l.entries.first() { a href=(first.href) { (first.implementation) } " · " }
                    (crate::pages::deployable_beside(l.entries.first().map(Into::into), l.best_deployable.as_ref().map(Into::into))) }
                (runs_table(&format!("{} eligible runs, best first", l.eligible_runs), &l.entries))
            } @else { p { "No eligible runs yet." } }
        }))
        (section("groups", "Comparison groups", html! {
            @if v.groups.is_empty() { p { "No comparison group has an eligible run yet." } } @else {
                table {
                    caption { (v.groups_total) " groups with an eligible run, largest first; " (first_group) "–" (first_group + v.groups.len() - 1) " shown" }
                    thead { tr { th scope="col" { "workload" } th scope="col" { "hardware" } th scope="col" { "protocol" } th scope="col" { "#1" } th scope="col" class="num" { "runs" } th scope="col" { "group" } } }
                    tbody { @for g in &v.groups { tr {
                        td { (g.workload) } td { (gpu_link(&g.hardware)) } td { (g.protocol) }
                        td { @if let Some(first) = g.entries.first() { a href=(first.href) { (first.implementation) " · " span.value { (first.display) } } } }
                        td.num { (g.eligible_runs) }
                        td { @if Some(g.comparison_key.as_str()) == group { "shown above" } @else { a href={ (g.href) "#leaderboard" } { "leaderboard" } } }
                    } } }
                }
                (pager(&operation_href(&v.slug, v.gpu.as_deref(), group, v.sort, 1), v.groups_page, v.groups_pages))
            }
        }))
        (section("sweep", "Sweeps", html! {
            @if v.sweeps.is_empty() { p { "Not enough measured cases along one axis to draw a sweep." } }
            @for (i, sweep) in v.sweeps.iter().enumerate() {
                @if let Some(svg) = crate::chart::sweep_svg(sweep, i) {
                    figure { (trusted(svg))
                        figcaption { "On " (sweep.hardware) ": " (sweep.metric) " against " (sweep.axis)
                            ", one line per implementation and fixed other axes (best run per value; each point links to its run)"
                            @if sweep.series_total > sweep.series.len() { "; the " (sweep.series.len()) " longest of " (sweep.series_total) " lines" }
                            "." } }
                }
            }
        }))
        (section("implementations", "Implementations", html! {
            ul { @for i in &v.implementations { li { a href=(i.href) { (i.slug) } " — " (i.project) " · " (i.runs) " runs" } } }
            @if v.implementations_total > v.implementations.len() { p.muted { (v.implementations_total) " in all; the most-run shown." } }
        }))
        (section("semantics", "Semantics", html! {
            table { caption { "Axes" } thead { tr { th scope="col" { "name" } th scope="col" { "role" } th scope="col" { "type" } th scope="col" { "value" } } }
                tbody { @for a in &v.semantics.axes { tr { td { (a.name) } td { (a.role) } td { (a.kind) } td { (a.value.as_deref().unwrap_or("")) } } } } }
            table { caption { "Inputs" } thead { tr { th scope="col" { "name" } th scope="col" { "kind" } th scope="col" { "dtype" } th scope="col" { "shape" } } }
                tbody { @for p in &v.semantics.inputs { tr { td { (p.name) } td { (p.kind) } td { (p.dtype) } td { (p.shape) } } } } }
            table { caption { "Outputs" } thead { tr { th scope="col" { "name" } th scope="col" { "kind" } th scope="col" { "dtype" } th scope="col" { "shape" } } }
                tbody { @for p in &v.semantics.outputs { tr { td { (p.name) } td { (p.kind) } td { (p.dtype) } td { (p.shape) } } } } }
            dl.fields { @for (k, val) in &v.semantics.properties { div { dt { (k) } dd { (val) } } } }
            @if let Some(r) = &v.semantics.reference { details { summary { "Reference" } pre { code { (serde_json::to_string_pretty(r).unwrap_or_default()) } } } }
            p.muted { "Semantic digest " code { (v.semantic_digest) } }
        }))
    };
    layout(&v.title, main)
}

pub fn render_list(list: &OperationList) -> Markup {
    layout(
        "Operations",
        html! {
            h1 { "Operations" }
            p { (list.total) " operations, most-measured first." }
            table { thead { tr { th scope="col" { "operation" } th scope="col" { "family" } th scope="col" class="num" { "workloads" } th scope="col" class="num" { "runs" } } }
                tbody { @for o in &list.operations { tr { td { a href=(o.href) { (o.title) } } td { (o.family) } td.num { (o.workloads) } td.num { (o.runs) } } } } }
            (pager("/operations", list.page, list.pages))
        },
    )
}

// ---------- operations ----------

pub async fn page(State(state): State<Shared>, Path(slug): Path<String>, Query(q): Query<OperationQuery>) -> Answer {
    let model = state.model();
    let op = find_operation(&model, &slug)?;
    Ok(html_response(render(&model.operation_view(op, &q)?)))
}

pub async fn api(State(state): State<Shared>, Path(slug): Path<String>, Query(q): Query<OperationQuery>) -> Answer {
    let model = state.model();
    let op = find_operation(&model, &slug)?;
    Ok(json_response(&model.operation_view(op, &q)?))
}

pub async fn list_page(State(state): State<Shared>, Query(q): Query<PageQuery>) -> Answer {
    Ok(html_response(render_list(&state.model().operation_list(q.number()))))
}

pub async fn api_list(State(state): State<Shared>, Query(q): Query<PageQuery>) -> Answer {
    Ok(json_response(&state.model().operation_list(q.number())))
}
