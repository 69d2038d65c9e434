//! An operation (`/operations/{slug}`): current records per workload, the leaderboard of
//! its largest comparison group, the sweep chart, its implementations and semantics; and
//! the list of all operations (`/operations`).

use std::collections::{BTreeMap, HashMap};

use axum::extract::Query;
use axum::extract::{Path, State};
use maud::{Markup, html};
use serde::Serialize;
use serde_json::Value;

use super::implementation::ImplementationItem;
use super::{
    Answer, PAGE_LIMIT, PageQuery, RunSummary, Shared, find_operation, gpu_link, html_response, json_response, layout,
    pager, pages_for, runs_table, scalar, section, trusted, workload_label,
};
use crate::model::{ReadModel, Row, number, pointer, text};

/// Most series the sweep chart draws.
pub const CHART_SERIES: usize = 8;

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
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SweepSeries {
    pub implementation: String,
    /// (axis value, primary value in ns), sorted by axis value.
    pub points: Vec<(f64, f64)>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Sweep {
    pub axis: String,
    pub metric: String,
    pub hardware: String,
    pub series: Vec<SweepSeries>,
}

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
    pub records: Vec<WorkloadRecord>,
    pub records_total: usize,
    pub leaderboard: Option<Leaderboard>,
    pub other_groups: Vec<Leaderboard>,
    pub sweep: Option<Sweep>,
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

impl ReadModel {
    pub fn operation_view(&self, op: usize) -> OperationView {
        let row = &self.operations.rows[op];
        let manifest = row.get("manifest").cloned().unwrap_or(Value::Null);
        let spec = manifest.get("spec").cloned().unwrap_or(Value::Null);

        // Every comparison group with runs on this operation's workloads.
        let mut cohorts: Vec<usize> = Vec::new();
        let mut cohort_seen = std::collections::HashSet::new();
        for &w in self.workloads_by_operation.get(&op).into_iter().flatten() {
            for &r in self.runs_by_workload.get(&w).into_iter().flatten() {
                let c = self.judgement.facts[r].cohort;
                if cohort_seen.insert(c) {
                    cohorts.push(c);
                }
            }
        }
        let leader_of = |c: usize| self.judgement.cohorts[c].ranking.first().map(|e| e.run);
        let describe = |c: usize, top: usize| -> Leaderboard {
            let cohort = &self.judgement.cohorts[c];
            let sample = cohort.ranking.first().map(|e| e.run).unwrap_or(cohort.runs[0]);
            let sample_row = &self.runs.rows[sample];
            let workload = self.workloads.get(text(sample_row, "workloadId"));
            Leaderboard {
                comparison_key: cohort.comparison_key.clone(),
                workload: workload.map(|w| workload_label(w, Some(row))).unwrap_or_default(),
                hardware: text(sample_row, "hardwareModel").into(),
                protocol: sample_row
                    .get("manifest")
                    .and_then(|m| pointer(m, &["protocol", "metadata", "title"]))
                    .map(scalar)
                    .unwrap_or_default(),
                entries: self.summaries(cohort.ranking.iter().take(top).map(|e| e.run)),
                eligible_runs: cohort.ranking.len(),
            }
        };

        let mut records: Vec<WorkloadRecord> = cohorts
            .iter()
            .filter_map(|&c| {
                let leader = leader_of(c)?;
                let lrow = &self.runs.rows[leader];
                let workload = self.workloads.get(text(lrow, "workloadId"))?;
                Some(WorkloadRecord {
                    workload: workload_label(workload, Some(row)),
                    hardware: text(lrow, "hardwareModel").into(),
                    comparison_key: self.judgement.cohorts[c].comparison_key.clone(),
                    eligible_runs: self.judgement.cohorts[c].ranking.len(),
                    holder: self.run_summary(leader),
                })
            })
            .collect();
        records.sort_by(|a, b| (&a.hardware, &a.workload).cmp(&(&b.hardware, &b.workload)));
        let records_total = records.len();
        records.truncate(PAGE_LIMIT);

        // The primary group: the one with the most eligible runs (ties: key order).
        let primary =
            cohorts.iter().copied().filter(|&c| !self.judgement.cohorts[c].ranking.is_empty()).max_by(|&a, &b| {
                let (ca, cb) = (&self.judgement.cohorts[a], &self.judgement.cohorts[b]);
                ca.ranking.len().cmp(&cb.ranking.len()).then(cb.comparison_key.cmp(&ca.comparison_key))
            });
        let leaderboard = primary.map(|c| describe(c, 50));
        let mut other_groups: Vec<Leaderboard> = cohorts
            .iter()
            .copied()
            .filter(|&c| Some(c) != primary && leader_of(c).is_some())
            .map(|c| describe(c, 1))
            .collect();
        other_groups
            .sort_by(|a, b| b.eligible_runs.cmp(&a.eligible_runs).then(a.comparison_key.cmp(&b.comparison_key)));
        other_groups.truncate(50);

        let sweep = primary.and_then(|c| self.sweep(op, c, &cohorts));

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

        let axes = spec
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

        OperationView {
            id: text(row, "id").into(),
            slug: text(row, "slug").into(),
            name: text(row, "name").into(),
            title: self.operation_title(op).into(),
            family: text(row, "family").into(),
            description: pointer(&manifest, &["metadata", "description"]).map(scalar),
            aliases: self.aliases_by_operation.get(&op).cloned().unwrap_or_default(),
            tags: row.get("tags").and_then(Value::as_array).map(|t| t.iter().map(scalar).collect()).unwrap_or_default(),
            semantic_digest: text(row, "semanticDigest").into(),
            records,
            records_total,
            leaderboard,
            other_groups,
            sweep,
            implementations,
            implementations_total,
            semantics: Semantics {
                axes,
                inputs: params(spec.get("inputs")),
                outputs: params(spec.get("outputs")),
                reference: spec.get("reference").cloned(),
                properties,
            },
        }
    }

    /// Latency against the axis that varies most, across the groups sharing the primary
    /// group's protocol, environment and metric; one series per implementation.
    fn sweep(&self, op: usize, primary: usize, cohorts: &[usize]) -> Option<Sweep> {
        let sample = self.judgement.cohorts[primary].ranking.first()?.run;
        let srow = &self.runs.rows[sample];
        let same_setup = |r: &Row| {
            text(r, "protocolKey") == text(srow, "protocolKey")
                && text(r, "environmentKey") == text(srow, "environmentKey")
                && text(r, "primaryMetric") == text(srow, "primaryMetric")
                && text(r, "primaryStatistic") == text(srow, "primaryStatistic")
        };
        let op_row = &self.operations.rows[op];
        let variable_axes: Vec<String> = op_row
            .get("manifest")
            .and_then(|m| pointer(m, &["spec", "axes"]))
            .and_then(Value::as_object)
            .map(|a| {
                a.iter()
                    .filter(|(_, v)| v.get("role").and_then(Value::as_str) != Some("constant"))
                    .map(|(k, _)| k.clone())
                    .collect()
            })
            .unwrap_or_default();
        // (implementation, axis values, value) of each group's eligible runs.
        let mut points: Vec<(String, BTreeMap<String, f64>, f64)> = Vec::new();
        for &c in cohorts {
            for entry in &self.judgement.cohorts[c].ranking {
                let r = &self.runs.rows[entry.run];
                if !same_setup(r) {
                    continue;
                }
                // Only time metrics plot on a latency axis.
                let Some(ns) =
                    number(r, "primaryValue").and_then(|v| ki_model::units::to_ns(v, text(r, "primaryUnit")))
                else {
                    continue;
                };
                let Some(w) = self.workloads.get(text(r, "workloadId")) else { continue };
                let axes = w.get("manifest").and_then(|m| pointer(m, &["spec", "axes"])).and_then(Value::as_object);
                let values: BTreeMap<String, f64> = variable_axes
                    .iter()
                    .filter_map(|a| axes.and_then(|m| m.get(a)).and_then(Value::as_f64).map(|v| (a.clone(), v)))
                    .collect();
                let implementation =
                    self.implementations.get(text(r, "implementationId")).map(|i| text(i, "slug")).unwrap_or("");
                points.push((implementation.to_string(), values, ns));
            }
        }
        let axis = variable_axes
            .iter()
            .max_by_key(|a| {
                let mut distinct: Vec<u64> = points.iter().filter_map(|p| p.1.get(*a)).map(|v| v.to_bits()).collect();
                distinct.sort_unstable();
                distinct.dedup();
                distinct.len()
            })?
            .clone();
        let mut by_impl: HashMap<String, Vec<(f64, f64)>> = HashMap::new();
        for (implementation, values, ns) in points {
            if let Some(x) = values.get(&axis) {
                by_impl.entry(implementation).or_default().push((*x, ns));
            }
        }
        let mut series: Vec<SweepSeries> = by_impl
            .into_iter()
            .map(|(implementation, mut pts)| {
                pts.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.total_cmp(&b.1)));
                // One point per axis value: the best at that value.
                pts.dedup_by(|next, kept| next.0 == kept.0);
                SweepSeries { implementation, points: pts }
            })
            .collect();
        series.sort_by(|a, b| b.points.len().cmp(&a.points.len()).then(a.implementation.cmp(&b.implementation)));
        series.truncate(CHART_SERIES);
        if series.iter().all(|s| s.points.len() < 2) {
            return None;
        }
        Some(Sweep {
            axis,
            metric: format!("{} ({})", text(srow, "primaryMetric"), text(srow, "primaryStatistic")),
            hardware: text(srow, "hardwareModel").into(),
            series,
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
        let workloads = self.workloads_by_operation.get(&op).map_or(&[][..], Vec::as_slice);
        OperationItem {
            slug: text(row, "slug").into(),
            title: self.operation_title(op).into(),
            family: text(row, "family").into(),
            workloads: workloads.len(),
            runs: workloads.iter().map(|w| self.runs_by_workload.get(w).map_or(0, Vec::len)).sum(),
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
    let main = html! {
        h1 { (v.title) }
        p.subtitle { (v.family) @if let Some(d) = &v.description { " — " (d) } }
        @if !v.aliases.is_empty() { p { "Also known as " (v.aliases.join(", ")) } }
        p { a href={ "/api/v1/operations/" (v.slug) } type="application/json" { "JSON" } " · "
            a href={ "/resolve?operation=" (crate::pages::percent_encode(&v.name)) } { "Resolve a workload of this operation" } }
        (section("records", "Current records per workload", html! {
            @if v.records.is_empty() { p { "No eligible runs yet." } } @else {
                table {
                    caption { "Rank-1 run of every comparison group (" (v.records_total) " groups" @if v.records_total > v.records.len() { ", first " (v.records.len()) " shown" } ")" }
                    thead { tr { th scope="col" { "workload" } th scope="col" { "hardware" } th scope="col" { "holder" } th scope="col" class="num" { "value" } th scope="col" class="num" { "runs" } } }
                    tbody { @for r in &v.records { tr {
                        td { (r.workload) } td { (gpu_link(&r.hardware)) }
                        td { a href=(r.holder.href) { (r.holder.implementation) } }
                        td.num { (r.holder.display) }
                        td.num { (r.eligible_runs) }
                    } } }
                }
            }
        }))
        (section("leaderboard", "Leaderboard", html! {
            @if let Some(l) = &v.leaderboard {
                p { "The largest comparison group: " (l.workload) " on " (gpu_link(&l.hardware)) ", protocol " (l.protocol) ". "
                    "Other protocols and hardware are ranked apart below." }
                (runs_table(&format!("{} eligible runs, best first", l.eligible_runs), &l.entries))
            } @else { p { "No eligible runs yet." } }
            @if !v.other_groups.is_empty() {
                details { summary { "Other comparison groups (" (v.other_groups.len()) ")" }
                    table { thead { tr { th scope="col" { "workload" } th scope="col" { "hardware" } th scope="col" { "protocol" } th scope="col" { "#1" } th scope="col" class="num" { "runs" } } }
                        tbody { @for g in &v.other_groups { tr {
                            td { (g.workload) } td { (gpu_link(&g.hardware)) } td { (g.protocol) }
                            td { @if let Some(first) = g.entries.first() { a href=(first.href) { (first.implementation) " · " (first.display) } } }
                            td.num { (g.eligible_runs) }
                        } } } }
                }
            }
        }))
        (section("sweep", "Sweep", html! {
            @if let Some(svg) = v.sweep.as_ref().and_then(crate::chart::sweep_svg) {
                figure { (trusted(svg))
                    figcaption { "Latency against " (v.sweep.as_ref().map(|s| s.axis.as_str()).unwrap_or("")) ", one line per implementation (best run per axis value, log scale)." } }
            } @else { p { "Not enough measured cases along one axis to draw a sweep." } }
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

pub async fn page(State(state): State<Shared>, Path(slug): Path<String>) -> Answer {
    let model = state.model();
    let op = find_operation(&model, &slug)?;
    Ok(html_response(render(&model.operation_view(op))))
}

pub async fn api(State(state): State<Shared>, Path(slug): Path<String>) -> Answer {
    let model = state.model();
    let op = find_operation(&model, &slug)?;
    Ok(json_response(&model.operation_view(op)))
}

pub async fn list_page(State(state): State<Shared>, Query(q): Query<PageQuery>) -> Answer {
    Ok(html_response(render_list(&state.model().operation_list(q.number()))))
}

pub async fn api_list(State(state): State<Shared>, Query(q): Query<PageQuery>) -> Answer {
    Ok(json_response(&state.model().operation_list(q.number())))
}
