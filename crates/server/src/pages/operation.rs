//! An operation (`/operations/{slug}`): its constant axes stated once; the leaderboard of the
//! comparison group picked (by default the largest group with a verified run, else the largest),
//! best first, its statistic, unit and direction in the header, each run's evidence beside it;
//! one sweep chart per GPU, one line per implementation at one value of the held axes (a picker
//! for the others); the workload picker, one row per comparison group with the varying axes as
//! sorted columns (sortable, look-alike groups told apart); every comparison group, verified first,
//! paged; its implementations and semantics, with a GPU filter. Every choice is in the URL. Where
//! nothing is ranked the page says why. And the list of all operations (`/operations`).

use std::collections::{BTreeMap, HashMap};

use axum::extract::Query;
use axum::extract::{Path, State};
use maud::{Markup, html};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::implementation::ImplementationItem;
use super::{
    Answer, PageQuery, Shared, find_operation, gpu_link, html_response, json_response, layout, pager, pages_for,
    section, trusted,
};
use crate::chart::{Sweep, SweepFacet, SweepPoint, SweepSeries};
use crate::model::{PAGE_LIMIT, RunSummary, scalar};
use crate::model::{ReadModel, RunRow, pointer, slugify};
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
    /// The values of [`OperationView::varying_axes`], in that order ("" where the workload has none).
    pub axes: Vec<String>,
    /// The workload's dtypes, "bfloat16" or "float16/int8".
    pub dtypes: String,
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
    /// The group's metric ("latency") and statistic ("median"): every run in it shares them.
    pub metric: String,
    pub statistic: String,
    /// "lower is better" or "higher is better".
    pub direction: String,
    /// The unit the values column is written in (the #1's scale for times: "µs").
    pub unit: String,
    /// Best first: the group's ranking (by value, in its direction).
    pub entries: Vec<RunSummary>,
    pub eligible_runs: usize,
    /// Of the eligible runs, those at evidence verified or replicated.
    pub verified_runs: usize,
    /// The group's fastest deployable run (named beside its #1).
    pub best_deployable: Option<RunSummary>,
    /// This operation's page with this group's leaderboard.
    pub href: String,
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
    /// The values of the sweeps' held axes to draw (`batch_size=16`); by default the picked
    /// group's, else the one with the most points.
    #[schemars(length(max = 200))]
    pub facet: Option<String>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct AxisValue {
    pub name: String,
    pub value: String,
}

/// Comparison groups listed per page.
pub const GROUPS_PER_PAGE: usize = 50;
/// Rows of the workload picker (a FlashInfer-Bench workload list's size): enough to pick from, few
/// enough that the page stays short with several GPUs and protocols; the group list below holds
/// every group, a page at a time, and the GPU filter narrows both.
pub const PICKER_ROWS: usize = 48;

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
    /// The axes every workload shares (role constant, or one value in every workload), stated once.
    pub constant_axes: Vec<AxisValue>,
    /// The axes workloads differ in, fewest distinct values first: the workload picker's columns
    /// and its default order.
    pub varying_axes: Vec<String>,
    /// The distinct dtypes of the listed workloads.
    pub dtypes: Vec<String>,
    /// Runs of this operation (under the GPU filter), eligible or not.
    pub runs: usize,
    /// Why no run is ranked, when there are runs and none is ("4 runs, all refused: suspected_reward_hack").
    pub why_none_ranked: Option<String>,
    /// GPUs with runs of this operation, most runs first.
    pub gpus: Vec<GpuChoice>,
    /// The GPU filter in force (a slug), if any.
    pub gpu: Option<String>,
    pub sort: RecordOrder,
    /// The workload picker: rank 1 of every comparison group, in `sort` order.
    pub records: Vec<WorkloadRecord>,
    pub records_total: usize,
    /// The chosen group's leaderboard, or the first group's (verified first, then the largest).
    pub leaderboard: Option<Leaderboard>,
    /// Whether `leaderboard` is the group named in the URL (not the default).
    pub leaderboard_chosen: bool,
    /// Every group with an eligible run (under the GPU filter), those with a verified run first,
    /// then the largest, one page of them.
    pub groups: Vec<Leaderboard>,
    pub groups_total: usize,
    pub groups_page: usize,
    pub groups_pages: usize,
    /// One sweep per GPU (under the GPU filter).
    pub sweeps: Vec<Sweep>,
    /// The facet asked for (`facet=`), if any.
    pub facet: Option<String>,
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
        params.push(format!("gpu={}", crate::model::percent_encode(gpu)));
    }
    if let Some(group) = group {
        params.push(format!("group={}", crate::model::percent_encode(group)));
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

/// What tells look-alike values apart, each value shortened to its parts (" · "-separated, a
/// trailing "(key)" aside) that not every value shares: "CUDA 12.8 · pytorch 2.8.0 (f4292a8be127)"
/// against "CUDA 12.8 · pytorch 2.9.1 (af7cb68a0bb0)" is "pytorch 2.8.0". A value whose parts all
/// recur elsewhere is said whole.
fn what_differs(values: &[&str]) -> Vec<String> {
    let parts = |value: &str| -> Vec<String> {
        let body = match value.rsplit_once(" (") {
            Some((body, key)) if key.ends_with(')') => body,
            _ => value,
        };
        body.split(" · ").map(str::to_string).collect()
    };
    let split: Vec<Vec<String>> = values.iter().map(|v| parts(v)).collect();
    values
        .iter()
        .zip(&split)
        .map(|(value, own)| {
            let differing: Vec<&str> =
                own.iter().filter(|p| !split.iter().all(|other| other.contains(p))).map(String::as_str).collect();
            if differing.is_empty() { value.to_string() } else { differing.join(" · ") }
        })
        .collect()
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
    /// The operation's axes its workloads differ in (role not `constant`, two values or more),
    /// fewest distinct values first (a batch size before a page count), then in the definition's
    /// order; and those it calls variable that every workload holds at one value.
    fn varying_axes(&self, op: usize) -> (Vec<String>, Vec<AxisValue>) {
        let defined: Vec<String> =
            self.operation_axes[op].iter().filter(|axis| !axis.constant).map(|axis| axis.name.clone()).collect();
        let workloads = self.judgement.operation_workloads(op);
        let distinct = |axis: &str| {
            let mut values: Vec<String> =
                workloads.iter().filter_map(|&w| self.judgement.workload_axes(w).get(axis)).map(scalar).collect();
            values.sort_unstable();
            values.dedup();
            values.len()
        };
        let mut ordered: Vec<(usize, usize, String)> =
            defined.into_iter().enumerate().map(|(i, axis)| (distinct(&axis), i, axis)).collect();
        ordered.sort();
        // An axis no workload gives a value has no column; one with a single value is constant.
        let mut varying = Vec::new();
        let mut constant = Vec::new();
        for (count, _, axis) in ordered {
            match count {
                0 => {}
                1 => {
                    let value = workloads.iter().find_map(|&w| self.judgement.workload_axes(w).get(&axis).map(scalar));
                    constant.push(AxisValue { name: axis, value: value.unwrap_or_default() });
                }
                _ => varying.push(axis),
            }
        }
        (varying, constant)
    }

    /// A workload's values of the given axes, as numbers (absent or non-numeric: NaN, sorted last).
    fn axis_values(&self, workload: usize, axes: &[String]) -> Vec<f64> {
        let values = self.judgement.workload_axes(workload);
        axes.iter().map(|a| values.get(a).and_then(Value::as_f64).unwrap_or(f64::NAN)).collect()
    }

    /// How many runs of a comparison group's ranking are at evidence verified or better.
    fn verified_in(&self, cohort: usize) -> usize {
        self.judgement.cohorts[cohort]
            .ranking
            .iter()
            .filter(|e| self.judgement.facts[e.run].trust.is_verified())
            .count()
    }

    /// The operation page under its query. A GPU, a comparison group or a sweep facet the
    /// operation has no runs in is refused by name.
    pub fn operation_view(&self, op: usize, query: &OperationQuery) -> Result<OperationView, Problem> {
        let row = &self.judgement.operations[op];
        let slug = row.slug.as_str();
        let manifest = self.judgement.operation_manifest(op);
        let spec = manifest.get("spec").cloned().unwrap_or(Value::Null);
        let sort = query.sort.unwrap_or_default();
        let (axes, same_everywhere) = self.varying_axes(op);

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
        let runs_here: Vec<usize> =
            runs.iter().copied().filter(|&r| gpu_name.is_none_or(|g| gpu_of(self.run(r)) == g)).collect();

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
            let entries = self.summaries(cohort.ranking.iter().take(top).map(|e| e.run));
            Leaderboard {
                comparison_key: cohort.comparison_key.to_string(),
                workload: self.run_workload_label(sample).into(),
                hardware: gpu_of(sample_row).into(),
                protocol: setup_fields(self, sample)[0].1.clone(),
                metric: sample_row.primary_metric.as_deref().unwrap_or("").into(),
                statistic: sample_row.primary_statistic.as_deref().unwrap_or("").into(),
                direction: match cohort.direction {
                    ki_ranking::Direction::LowerIsBetter => "lower is better",
                    ki_ranking::Direction::HigherIsBetter => "higher is better",
                }
                .into(),
                unit: column_unit(&entries),
                entries,
                eligible_runs: cohort.ranking.len(),
                verified_runs: self.verified_in(c),
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
                let workload = self.judgement.run_workload(leader);
                let values = self.judgement.workload_axes(workload);
                Some(Keyed {
                    record: WorkloadRecord {
                        workload: self.run_workload_label(leader).into(),
                        axes: axes.iter().map(|a| values.get(a).map(scalar).unwrap_or_default()).collect(),
                        dtypes: self.judgement.workload_of(leader).dtypes.join("/"),
                        hardware: gpu_of(lrow).into(),
                        comparison_key: key.to_string(),
                        eligible_runs: self.judgement.cohorts[c].ranking.len(),
                        holder: self.run_summary(leader),
                        differs_by: Vec::new(),
                        group_href: format!("{}#leaderboard", href(Some(key), sort, 1)),
                    },
                    workload_id: lrow.workload_id.to_string(),
                    axis_values: self.axis_values(workload, &axes),
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
                    let values: Vec<&str> = members.iter().map(|&i| keyed[i].setup[field].1.as_str()).collect();
                    let said = what_differs(&values);
                    for (&i, value) in members.iter().zip(said) {
                        let name = keyed[i].setup[field].0;
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
        let mut dtypes: Vec<String> = keyed.iter().map(|k| k.record.dtypes.clone()).collect();
        dtypes.sort();
        dtypes.dedup();
        let records: Vec<WorkloadRecord> = keyed.into_iter().take(PICKER_ROWS).map(|k| k.record).collect();

        // Every group with an eligible run: those with a verified run first, then the largest;
        // the leaderboard is the chosen one, else the first.
        let mut ranked: Vec<(usize, usize)> =
            cohorts.iter().copied().filter(|&c| leader_of(c).is_some()).map(|c| (c, self.verified_in(c))).collect();
        ranked.sort_by(|&(a, va), &(b, vb)| {
            let (ca, cb) = (&self.judgement.cohorts[a], &self.judgement.cohorts[b]);
            (vb > 0)
                .cmp(&(va > 0))
                .then(cb.ranking.len().cmp(&ca.ranking.len()))
                .then(vb.cmp(&va))
                .then(ca.comparison_key.cmp(&cb.comparison_key))
        });
        let ranked: Vec<usize> = ranked.into_iter().map(|(c, _)| c).collect();
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

        // The sweeps draw the facet asked for, else the picked group's workload's, else their fullest.
        let group_key = leaderboard.as_ref().filter(|_| leaderboard_chosen).map(|l| l.comparison_key.clone());
        let leader_workload = leaderboard
            .as_ref()
            .and_then(|l| l.entries.first())
            .and_then(|e| self.judgement.find_run(&e.id).ok())
            .map(|r| self.judgement.run_workload(r));
        let facet_href = |key: &str| {
            let base = operation_href(slug, gpu_slug.as_deref(), group_key.as_deref(), sort, 1);
            let sep = if base.contains('?') { '&' } else { '?' };
            format!("{base}{sep}facet={}#sweep", crate::model::percent_encode(key))
        };
        let sweeps: Vec<Sweep> = gpus
            .iter()
            .filter(|g| gpu_name.is_none_or(|name| name == g.name))
            .filter_map(|g| self.sweep(&axes, &g.name, &cohorts, query.facet.as_deref(), leader_workload, &facet_href))
            .collect();
        if let Some(wanted) = &query.facet
            && !sweeps.iter().any(|s| s.facets.iter().any(|f| f.key == *wanted))
        {
            return Err(Problem::not_found(format!("operation {slug:?} has no sweep at {wanted:?}")));
        }

        let mut implementations: Vec<ImplementationItem> =
            self.judgement.operation_implementations(op).iter().map(|&i| self.implementation_item(i)).collect();
        implementations.sort_by(|a, b| b.runs.cmp(&a.runs).then(a.slug.cmp(&b.slug)));
        let implementations_total = implementations.len();
        implementations.truncate(PAGE_LIMIT);

        let semantic_axes: Vec<AxisView> = spec
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
        let constant_axes = semantic_axes
            .iter()
            .filter(|a| a.role == "constant")
            .filter_map(|a| Some(AxisValue { name: a.name.clone(), value: a.value.clone()? }))
            .chain(same_everywhere)
            .collect();
        let properties = spec
            .get("semantics")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), scalar(v))).collect())
            .unwrap_or_default();

        Ok(OperationView {
            id: row.id.clone(),
            slug: slug.into(),
            name: row.name.clone(),
            title: self.operation_title(op).into(),
            family: row.family.clone(),
            description: pointer(&manifest, &["metadata", "description"]).map(scalar),
            aliases: self.aliases_by_operation.get(&op).cloned().unwrap_or_default(),
            tags: row.tags.clone(),
            semantic_digest: row.semantic_digest.clone(),
            constant_axes,
            varying_axes: axes,
            dtypes,
            runs: runs_here.len(),
            why_none_ranked: self.why_none_eligible(&runs_here),
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
            facet: query.facet.clone(),
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
    /// protocol, environment and metric of that GPU's largest group. The few-valued axes that the
    /// other held ones do not determine are held: each of their values is a facet, drawn one at a
    /// time (`facet`, else the facet of `prefer`'s workload, else the one with the most points),
    /// one line per implementation, so a line never joins batch sizes.
    fn sweep(
        &self,
        axes: &[String],
        gpu: &str,
        cohorts: &[usize],
        facet: Option<&str>,
        prefer: Option<usize>,
        facet_href: &dyn Fn(&str) -> String,
    ) -> Option<Sweep> {
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
                points.push((
                    self.judgement.implementation_of(entry.run).slug.clone(),
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
        // The swept axis: the most values (the first such in column order).
        let most = (0..axes.len()).map(distinct).max()?;
        let axis = (0..axes.len()).find(|&a| distinct(a) == most)?;
        // The held axes: few-valued ones (a batch size, a head count) that the axes already held
        // do not determine (len_indptr follows batch_size). Whether the swept axis determines
        // them does not matter: one workload per swept value would make every axis "determined"
        // and join batch sizes into one line. Axes with many values vary along the line.
        let mut others: Vec<usize> = (0..axes.len()).filter(|&a| a != axis && distinct(a) > 1).collect();
        others.sort_by_key(|&a| distinct(a));
        let mut held: Vec<usize> = Vec::new();
        for a in others {
            if distinct(a) > MAX_HELD_VALUES {
                continue;
            }
            let mut seen: HashMap<Vec<u64>, u64> = HashMap::new();
            let implied = !held.is_empty()
                && points.iter().all(|p| {
                    let key: Vec<u64> = held.iter().map(|&i| p.1[i].to_bits()).collect();
                    *seen.entry(key).or_insert(p.1[a].to_bits()) == p.1[a].to_bits()
                });
            if !implied {
                held.push(a);
            }
        }
        held.sort_unstable();
        let facet_of = |values: &[f64]| -> (String, String) {
            let parts: Vec<(String, String)> =
                held.iter().map(|&i| (axes[i].clone(), ki_model::units::plain_number(values[i]))).collect();
            (
                parts.iter().map(|(a, v)| format!("{a}={v}")).collect::<Vec<_>>().join(","),
                parts.iter().map(|(a, v)| format!("{a} = {v}")).collect::<Vec<_>>().join(" · "),
            )
        };
        // facet key → (its label, its values for ordering, implementation → points)
        type Lines = BTreeMap<String, Vec<SweepPoint>>;
        let mut facets: BTreeMap<String, (String, Vec<f64>, Lines)> = BTreeMap::new();
        for (implementation, values, ns, run) in points {
            let x = values[axis];
            if !x.is_finite() {
                continue;
            }
            let (key, label) = facet_of(&values);
            let order: Vec<f64> = held.iter().map(|&i| values[i]).collect();
            let run_href = format!("/runs/{}", self.run(run).id);
            let entry = facets.entry(key).or_insert_with(|| (label, order, BTreeMap::new()));
            entry.2.entry(implementation).or_default().push(SweepPoint { x, ns, run_href });
        }
        // Each facet's lines: one point per value of the swept axis (the best there), two or more.
        let mut drawn: Vec<(String, String, Vec<f64>, Vec<SweepSeries>)> = facets
            .into_iter()
            .map(|(key, (label, order, lines))| {
                let series: Vec<SweepSeries> = lines
                    .into_iter()
                    .map(|(label, mut pts)| {
                        pts.sort_by(|a, b| a.x.total_cmp(&b.x).then(a.ns.total_cmp(&b.ns)));
                        pts.dedup_by(|next, kept| next.x == kept.x);
                        SweepSeries { label, points: pts }
                    })
                    .filter(|s| s.points.len() >= 2)
                    .collect();
                (key, label, order, series)
            })
            .filter(|f| !f.3.is_empty())
            .collect();
        drawn.sort_by(|a, b| {
            a.2.iter().zip(&b.2).map(|(x, y)| x.total_cmp(y)).find(|o| o.is_ne()).unwrap_or(std::cmp::Ordering::Equal)
        });
        let preferred = prefer.map(|w| facet_of(&self.axis_values(w, axes)).0);
        let size = |f: &(String, String, Vec<f64>, Vec<SweepSeries>)| f.3.iter().map(|s| s.points.len()).sum::<usize>();
        let chosen = facet
            .and_then(|wanted| drawn.iter().position(|f| f.0 == wanted))
            .or_else(|| preferred.and_then(|p| drawn.iter().position(|f| f.0 == p)))
            .or_else(|| {
                let most = drawn.iter().map(size).max()?;
                drawn.iter().position(|f| size(f) == most)
            })?;
        let facet_list: Vec<SweepFacet> = drawn
            .iter()
            .enumerate()
            .map(|(i, f)| SweepFacet {
                key: f.0.clone(),
                label: f.1.clone(),
                points: size(f),
                href: facet_href(&f.0),
                selected: i == chosen,
            })
            .collect();
        let mut series = drawn.swap_remove(chosen).3;
        let series_total = series.len();
        series.sort_by(|a, b| b.points.len().cmp(&a.points.len()).then(a.label.cmp(&b.label)));
        series.truncate(CHART_SERIES);
        Some(Sweep {
            axis: axes[axis].clone(),
            metric: format!(
                "{} ({})",
                srow.primary_metric.as_deref().unwrap_or(""),
                srow.primary_statistic.as_deref().unwrap_or("")
            ),
            hardware: gpu.into(),
            held: held.iter().map(|&i| axes[i].clone()).collect(),
            facets: facet_list,
            series,
            series_total,
        })
    }
}

/// The unit a leaderboard's values column is written in: for times the scale of the #1's value
/// ("µs"), else the runs' own unit.
fn column_unit(entries: &[RunSummary]) -> String {
    let Some(first) = entries.first() else { return String::new() };
    match first.value.and_then(|v| ki_model::units::to_ns(v, &first.unit)) {
        Some(ns) => time_scale(ns).0.into(),
        None => first.unit.clone(),
    }
}

/// The unit a time of `ns` nanoseconds reads best in, and nanoseconds per that unit.
fn time_scale(ns: f64) -> (&'static str, f64) {
    match ns.abs() {
        v if v < 1e3 => ("ns", 1.0),
        v if v < 1e6 => ("µs", 1e3),
        v if v < 1e9 => ("ms", 1e6),
        _ => ("s", 1e9),
    }
}

/// A run's value written in the leaderboard's unit (a plain number; the unit is in the header),
/// or its own display when it cannot be (no value, another unit).
pub fn value_in(run: &RunSummary, unit: &str) -> String {
    let Some(value) = run.value else { return run.display.clone() };
    let scale = match unit {
        "ns" => Some(1.0),
        "µs" => Some(1e3),
        "ms" => Some(1e6),
        "s" => Some(1e9),
        _ => None,
    };
    match (ki_model::units::to_ns(value, &run.unit), scale) {
        // Three significant digits, as durations are written elsewhere ("4.80"), when the value
        // reads in the column's unit; a larger one in full ("1,200").
        (Some(ns), Some(_)) if time_scale(ns).0 == unit => {
            ki_model::units::duration_ns(ns).trim_end_matches(unit).trim_end().to_string()
        }
        (Some(ns), Some(scale)) => ki_model::units::number(ns / scale),
        (None, None) if run.unit == unit => ki_model::units::number(value),
        _ => run.display.clone(),
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
        let row = &self.judgement.operations[op];
        let workloads = self.judgement.operation_workloads(op);
        OperationItem {
            slug: row.slug.clone(),
            title: self.operation_title(op).into(),
            family: row.family.clone(),
            workloads: workloads.len(),
            runs: workloads.iter().map(|w| self.judgement.workload_runs(*w).len()).sum(),
            href: format!("/operations/{}", row.slug),
        }
    }

    /// Operations with the most runs first.
    pub fn operation_list(&self, page: usize) -> OperationList {
        let mut items: Vec<OperationItem> =
            (0..self.judgement.operations.len()).map(|op| self.operation_item(op)).collect();
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

/// The leaderboard: rank, implementation (to the run), value in one unit named in the header with
/// the statistic and which way is better, evidence; the run's id and date are secondary (`opt`:
/// a phone hides them, so the rest fits its width).
fn leaderboard_table(l: &Leaderboard) -> Markup {
    let what = [l.statistic.as_str(), l.metric.as_str()].into_iter().filter(|s| !s.is_empty()).collect::<Vec<_>>();
    html! {
        table.leaderboard {
            caption { (l.eligible_runs) " eligible runs, best first" @if l.eligible_runs > l.entries.len() { "; the first " (l.entries.len()) " shown" } }
            thead { tr {
                th scope="col" class="num" { "rank" }
                th scope="col" { "implementation" }
                th scope="col" class="num" {
                    (what.join(" ")) @if !l.unit.is_empty() { " (" (l.unit) ")" }
                    br; span.direction { (l.direction) }
                }
                th scope="col" { "evidence" }
                th scope="col" class="opt" { "run" }
                th scope="col" class="opt" { "observed" }
            } }
            tbody { @for r in &l.entries { tr {
                td.num { @if let Some(rank) = r.rank { (rank) } @else { "—" } }
                td { a href=(r.href) { @if r.implementation.is_empty() { (r.short_id) } @else { (r.implementation) } } }
                td.num { (value_in(r, &l.unit)) }
                td { (crate::pages::evidence_badge(&r.trust)) }
                td.opt { a href=(r.href) { (r.short_id) } }
                td.opt { (ki_model::utc::date_of(&r.observed_at)) }
            } } }
        }
    }
}

pub fn render(v: &OperationView) -> Markup {
    let group = v.leaderboard.as_ref().filter(|_| v.leaderboard_chosen).map(|l| l.comparison_key.as_str());
    let order_link = |order: RecordOrder, label: &str| -> Markup {
        html! {
            @if v.sort == order { span aria-current="true" { (label) } }
            @else { a href={ (operation_href(&v.slug, v.gpu.as_deref(), group, order, 1)) "#records" } { (label) } }
        }
    };
    let any_differences = v.records.iter().any(|r| !r.differs_by.is_empty());
    let several_dtypes = v.dtypes.len() > 1;
    let several_gpus = v.gpu.is_none() && v.gpus.len() > 1;
    let first_group = (v.groups_page - 1) * GROUPS_PER_PAGE + 1;
    let on_gpu = v.gpus.iter().find(|g| g.selected).map(|g| g.name.as_str());
    let main = html! {
        h1 { (v.title) }
        p.subtitle { (v.family) @if let Some(d) = &v.description { " — " (d) } }
        @if !v.aliases.is_empty() { p { "Also known as " (v.aliases.join(", ")) } }
        @if !v.constant_axes.is_empty() || v.dtypes.len() == 1 {
            p #constants { "Every workload has "
                @for (i, a) in v.constant_axes.iter().enumerate() { @if i > 0 { " · " } code { (a.name) " = " (a.value) } }
                @if v.dtypes.len() == 1 { @if !v.constant_axes.is_empty() { " · " } "dtypes " code { (v.dtypes[0]) } }
                @if !v.varying_axes.is_empty() { "; they differ in " (v.varying_axes.join(", ")) }
                "." }
        }
        p { a href={ "/api/v1/operations/" (v.slug) } type="application/json" { "JSON" } " · "
            a href={ "/resolve?operation=" (crate::model::percent_encode(&v.name)) } { "Resolve a workload of this operation" } }
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
        (section("leaderboard", "Leaderboard", html! {
            @if let Some(l) = &v.leaderboard {
                p { @if v.leaderboard_chosen { "The comparison group you picked: " }
                    @else if l.verified_runs > 0 { "The largest comparison group with a verified run: " }
                    @else { "The largest comparison group (none has a verified run): " }
                    strong { (l.workload) } " on " (gpu_link(&l.hardware)) ", protocol " (l.protocol) "; "
                    (l.eligible_runs) " eligible runs, " (l.verified_runs) " verified. "
                    "Other workloads, protocols and hardware are ranked apart: "
                    a href="#records" { "pick a workload" } "." }
                p #leaderboard-deployable { "#1: " @if let Some(first) = l.entries.first() { a href=(first.href) { (first.implementation) } " · " }
                    (crate::pages::deployable_beside(l.entries.first().map(Into::into), l.best_deployable.as_ref().map(Into::into))) }
                (leaderboard_table(l))
            } @else if let Some(why) = &v.why_none_ranked {
                p.banner role="note" { "No run is ranked" @if let Some(gpu) = on_gpu { " on " (gpu) } ": " (why) "." }
            } @else { p { "No runs of this operation yet" @if let Some(gpu) = on_gpu { " on " (gpu) } ". A run arrives with an imported snapshot ("
                code { "ki catalog import" } "), a submission, or a job of the " a href="/verifications" { "verification queue" } "." } }
        }))
        (section("sweep", "Sweeps", html! {
            @if v.sweeps.is_empty() { p { "Not enough measured cases along one axis to draw a sweep." } }
            @for (i, sweep) in v.sweeps.iter().enumerate() {
                @let facet = sweep.facets.iter().find(|f| f.selected);
                @if sweep.facets.len() > 1 {
                    nav.choices aria-label={ "Held axes of the sweep on " (sweep.hardware) } {
                        span { "On " (sweep.hardware) ", " (sweep.held.join(", ")) ": " }
                        @for (j, f) in sweep.facets.iter().enumerate() {
                            @if j > 0 { " · " }
                            @let value = f.label.split(" · ").map(|part| part.split(" = ").nth(1).unwrap_or(part)).collect::<Vec<_>>().join(", ");
                            @if f.selected { span aria-current="true" { (value) } }
                            @else { a href=(f.href) { (value) } }
                        }
                    }
                }
                @if let Some(svg) = crate::chart::sweep_svg(sweep, i) {
                    figure { (trusted(svg))
                        figcaption { "On " (sweep.hardware) @if let Some(f) = facet { @if !f.label.is_empty() { " at " (f.label) } } ": "
                            (sweep.metric) " against " (sweep.axis)
                            ", one line per implementation (best run per value; each point links to its run)"
                            @if sweep.series_total > sweep.series.len() { "; the " (sweep.series.len()) " longest of " (sweep.series_total) " lines" }
                            "." } }
                }
            }
        }))
        (section("records", "Current records per workload", html! {
            @if v.records.is_empty() {
                p { "Nothing to pick: no comparison group has a ranked run (see the leaderboard above)." }
            } @else {
                p { "Pick a workload to see its leaderboard. One row per comparison group: its #1 run. " }
                nav.choices aria-label="Order of the workloads" {
                    span { "Order: " } (order_link(RecordOrder::Workload, "by axes")) " · "
                    (order_link(RecordOrder::Value, "fastest first")) " · " (order_link(RecordOrder::Runs, "most runs first"))
                }
                table.picker {
                    caption { (v.records_total) " comparison groups" @if v.records_total > v.records.len() { ", first " (v.records.len()) " shown (the GPU filter narrows them; " a href="#groups" { "the group list" } " holds every one)" }
                        @if v.sort == RecordOrder::Workload && !v.varying_axes.is_empty() { ", by " (v.varying_axes.join(", then ")) } }
                    thead { tr {
                        @for a in &v.varying_axes { th scope="col" class="num" { (a) } }
                        @if several_dtypes { th scope="col" { "dtypes" } }
                        @if several_gpus { th scope="col" { "GPU" } }
                        th scope="col" { "#1" } th scope="col" class="num" { "value" } th scope="col" { "evidence" }
                        th scope="col" class="num" { "runs" }
                        @if any_differences { th scope="col" { "differs by" } }
                        th scope="col" { "group" }
                    } }
                    tbody { @for r in &v.records { tr {
                        @for value in &r.axes { td.num { (value) } }
                        @if several_dtypes { td { (r.dtypes) } }
                        @if several_gpus { td { (gpu_link(&r.hardware)) } }
                        td { a href=(r.holder.href) { (r.holder.implementation) } }
                        td.num { (r.holder.display) }
                        td { (crate::pages::evidence_badge(&r.holder.trust)) }
                        td.num { (r.eligible_runs) }
                        @if any_differences { td.differs { (r.differs_by.join("; ")) } }
                        td { @if Some(r.comparison_key.as_str()) == v.leaderboard.as_ref().map(|l| l.comparison_key.as_str()) { span aria-current="true" { "shown" } }
                             @else { a href=(r.group_href) { "pick" } } }
                    } } }
                }
            }
        }))
        (section("groups", "Comparison groups", html! {
            @if v.groups.is_empty() { p { "No comparison group has an eligible run yet." } } @else {
                details open[v.groups_page > 1] {
                    summary { (v.groups_total) " groups with an eligible run: those with a verified run first, then the largest" }
                    table {
                        caption { (first_group) "–" (first_group + v.groups.len() - 1) " of " (v.groups_total) " shown" }
                        thead { tr { th scope="col" { "workload" } th scope="col" { "hardware" } th scope="col" { "protocol" } th scope="col" { "#1" } th scope="col" class="num" { "verified" } th scope="col" class="num" { "runs" } th scope="col" { "group" } } }
                        tbody { @for g in &v.groups { tr {
                            td { (g.workload) } td { (gpu_link(&g.hardware)) } td { (g.protocol) }
                            td { @if let Some(first) = g.entries.first() { a href=(first.href) { (first.implementation) " · " span.value { (first.display) } } } }
                            td.num { (g.verified_runs) }
                            td.num { (g.eligible_runs) }
                            td { @if Some(g.comparison_key.as_str()) == group { "shown above" } @else { a href={ (g.href) "#leaderboard" } { "leaderboard" } } }
                        } } }
                    }
                    (pager(&operation_href(&v.slug, v.gpu.as_deref(), group, v.sort, 1), v.groups_page, v.groups_pages))
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
            details { summary { (v.semantics.inputs.len()) " inputs and " (v.semantics.outputs.len()) " outputs" }
                table { caption { "Inputs" } thead { tr { th scope="col" { "name" } th scope="col" { "kind" } th scope="col" { "dtype" } th scope="col" { "shape" } } }
                    tbody { @for p in &v.semantics.inputs { tr { td { (p.name) } td { (p.kind) } td { (p.dtype) } td { (p.shape) } } } } }
                table { caption { "Outputs" } thead { tr { th scope="col" { "name" } th scope="col" { "kind" } th scope="col" { "dtype" } th scope="col" { "shape" } } }
                    tbody { @for p in &v.semantics.outputs { tr { td { (p.name) } td { (p.kind) } td { (p.dtype) } td { (p.shape) } } } } }
            }
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
