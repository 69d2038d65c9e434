//! View models for the catalog pages: operations, projects, implementations, GPUs,
//! serving, records and search. Each list is bounded so no parameter can make a page slow.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;
use serde_json::Value;

use crate::format;
use crate::model::{ReadModel, Row, number, opt_text, pointer, slugify, text};
use crate::views::{Link, RunSummary, scalar, workload_label};

/// Most rows any list on a page shows.
pub const PAGE_LIMIT: usize = 200;
/// Most series the sweep chart draws.
pub const CHART_SERIES: usize = 8;

#[derive(Debug, Clone, Serialize)]
pub struct AxisView {
    pub name: String,
    pub role: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub value: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ParameterView {
    pub name: String,
    pub kind: &'static str,
    pub dtype: String,
    pub shape: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Semantics {
    pub axes: Vec<AxisView>,
    pub inputs: Vec<ParameterView>,
    pub outputs: Vec<ParameterView>,
    pub reference: Option<Value>,
    pub properties: Vec<(String, String)>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadRecord {
    pub workload: String,
    pub hardware: String,
    pub comparison_key: String,
    pub eligible_runs: usize,
    pub holder: RunSummary,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Leaderboard {
    pub comparison_key: String,
    pub workload: String,
    pub hardware: String,
    pub protocol: String,
    pub entries: Vec<RunSummary>,
    pub eligible_runs: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct SweepSeries {
    pub implementation: String,
    /// (axis value, primary value in ns), sorted by axis value.
    pub points: Vec<(f64, f64)>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sweep {
    pub axis: String,
    pub metric: String,
    pub hardware: String,
    pub series: Vec<SweepSeries>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImplementationItem {
    pub slug: String,
    pub title: String,
    pub project: String,
    pub runs: usize,
    pub href: String,
}

#[derive(Debug, Clone, Serialize)]
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
    pub fn summaries(&self, runs: impl IntoIterator<Item = usize>) -> Vec<RunSummary> {
        runs.into_iter().map(|r| self.run_summary(r)).collect()
    }

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
                let Some(ns) = number(r, "primaryValue").and_then(|v| format::to_ns(v, text(r, "primaryUnit"))) else {
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

    pub fn implementation_item(&self, i: usize) -> ImplementationItem {
        let imp = &self.implementations.rows[i];
        ImplementationItem {
            slug: text(imp, "slug").into(),
            title: text(imp, "title").into(),
            project: self.projects.get(text(imp, "projectId")).map(|p| text(p, "name")).unwrap_or("").into(),
            runs: self.runs_by_implementation.get(&i).map_or(0, Vec::len),
            href: format!("/implementations/{}", text(imp, "slug")),
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectItem {
    pub slug: String,
    pub name: String,
    pub implementations: usize,
    pub href: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectList {
    pub projects: Vec<ProjectItem>,
    pub total: usize,
    pub page: usize,
    pub pages: usize,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectView {
    pub slug: String,
    pub name: String,
    pub canonical_url: Option<String>,
    pub licence: Option<String>,
    pub manifest: Value,
    pub implementations: Vec<ImplementationItem>,
    pub implementations_total: usize,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImplementationView {
    pub slug: String,
    pub title: String,
    pub digest: String,
    pub project: Link,
    pub operation: Option<Link>,
    pub revision: Option<String>,
    pub language: Option<String>,
    pub licence: Option<String>,
    pub source_available: bool,
    pub installable: bool,
    pub install_command: Option<String>,
    pub runs: Vec<RunSummary>,
    pub runs_total: usize,
    pub manifest: Value,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GpuItem {
    pub model: String,
    pub anchor: String,
    pub vendor: String,
    pub architectures: Vec<String>,
    pub runs: usize,
    pub operations: usize,
    pub records_held: usize,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServingItem {
    pub id: String,
    pub title: String,
    pub model: String,
    pub workload: String,
    pub scenario: String,
    pub accelerator: String,
    pub accelerators: i64,
    pub system: String,
    pub status: String,
    pub headline: String,
    pub observed_at: String,
    pub href: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServingList {
    pub runs: Vec<ServingItem>,
    pub total: usize,
    pub page: usize,
    pub pages: usize,
    pub workloads: Vec<Link>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ServingRunView {
    pub item: ServingItem,
    pub digest: String,
    pub cohort_key: String,
    pub quality_policy: String,
    pub measurements: Vec<(String, String, String)>,
    pub manifest: Value,
    pub configuration: Value,
    pub workload_manifest: Value,
    pub source: Option<String>,
    pub licence: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordItem {
    pub at: String,
    pub cause: String,
    pub operation: Option<Link>,
    pub holder: Option<RunSummary>,
    pub previous: Option<Link>,
    pub previous_display: Option<String>,
    pub comparison_key: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordList {
    pub records: Vec<RecordItem>,
    pub total: usize,
    pub page: usize,
    pub pages: usize,
}

pub fn pages_for(total: usize, per_page: usize) -> usize {
    total.div_ceil(per_page).max(1)
}

impl ReadModel {
    pub fn project_list(&self, page: usize) -> ProjectList {
        let mut items: Vec<(usize, ProjectItem)> = self
            .projects
            .rows
            .iter()
            .enumerate()
            .map(|(i, p)| {
                (
                    i,
                    ProjectItem {
                        slug: text(p, "slug").into(),
                        name: text(p, "name").into(),
                        implementations: self.implementations_by_project.get(&i).map_or(0, Vec::len),
                        href: format!("/projects/{}", text(p, "slug")),
                    },
                )
            })
            .collect();
        items.sort_by(|a, b| b.1.implementations.cmp(&a.1.implementations).then(a.1.name.cmp(&b.1.name)));
        let total = items.len();
        let pages = pages_for(total, PAGE_LIMIT);
        let page = page.clamp(1, pages);
        ProjectList {
            projects: items.into_iter().skip((page - 1) * PAGE_LIMIT).take(PAGE_LIMIT).map(|(_, p)| p).collect(),
            total,
            page,
            pages,
        }
    }

    pub fn project_view(&self, p: usize) -> ProjectView {
        let row = &self.projects.rows[p];
        let mut implementations: Vec<ImplementationItem> = self
            .implementations_by_project
            .get(&p)
            .into_iter()
            .flatten()
            .map(|&i| self.implementation_item(i))
            .collect();
        implementations.sort_by(|a, b| b.runs.cmp(&a.runs).then(a.slug.cmp(&b.slug)));
        let implementations_total = implementations.len();
        implementations.truncate(PAGE_LIMIT);
        ProjectView {
            slug: text(row, "slug").into(),
            name: text(row, "name").into(),
            canonical_url: opt_text(row, "canonicalUrl").map(str::to_string),
            licence: opt_text(row, "licenseExpression").map(str::to_string),
            manifest: row.get("manifest").cloned().unwrap_or(Value::Null),
            implementations,
            implementations_total,
        }
    }

    pub fn implementation_view(&self, i: usize) -> ImplementationView {
        let row = &self.implementations.rows[i];
        let project = self.projects.get(text(row, "projectId"));
        let op = self.operations.index_of(text(row, "operationId"));
        let mut runs: Vec<usize> = self.runs_by_implementation.get(&i).cloned().unwrap_or_default();
        runs.sort_by(|a, b| text(&self.runs.rows[*b], "observedAt").cmp(text(&self.runs.rows[*a], "observedAt")));
        let runs_total = runs.len();
        runs.truncate(PAGE_LIMIT);
        ImplementationView {
            slug: text(row, "slug").into(),
            title: text(row, "title").into(),
            digest: text(row, "implementationDigest").into(),
            project: Link {
                label: project.map(|p| text(p, "name")).unwrap_or("").into(),
                href: project.map(|p| format!("/projects/{}", text(p, "slug"))).unwrap_or_default(),
            },
            operation: op.map(|o| Link {
                label: self.operation_title(o).into(),
                href: format!("/operations/{}", text(&self.operations.rows[o], "slug")),
            }),
            revision: opt_text(row, "sourceRevision").map(str::to_string),
            language: opt_text(row, "language").map(str::to_string),
            licence: opt_text(row, "licenseExpression").map(str::to_string),
            source_available: row.get("sourceAvailable").and_then(Value::as_bool).unwrap_or(false),
            installable: row.get("installable").and_then(Value::as_bool).unwrap_or(false),
            install_command: opt_text(row, "installCommand").map(str::to_string),
            runs: self.summaries(runs),
            runs_total,
            manifest: row.get("manifest").cloned().unwrap_or(Value::Null),
        }
    }

    pub fn gpu_list(&self) -> Vec<GpuItem> {
        self.runs_by_gpu
            .iter()
            .map(|(model, runs)| {
                let mut architectures: Vec<String> = runs
                    .iter()
                    .filter_map(|&r| opt_text(&self.runs.rows[r], "hardwareArchitecture"))
                    .map(str::to_string)
                    .collect();
                architectures.sort();
                architectures.dedup();
                let mut ops: Vec<usize> = runs.iter().filter_map(|&r| self.run_operation(r)).collect();
                ops.sort_unstable();
                ops.dedup();
                GpuItem {
                    model: model.clone(),
                    anchor: slugify(model),
                    vendor: runs.first().map(|&r| text(&self.runs.rows[r], "hardwareVendor")).unwrap_or("").into(),
                    architectures,
                    runs: runs.len(),
                    operations: ops.len(),
                    records_held: runs.iter().filter(|&&r| self.judgement.facts[r].rank == Some(1)).count(),
                }
            })
            .collect()
    }

    fn serving_item(&self, s: usize) -> ServingItem {
        let row = &self.serving_runs.rows[s];
        let model = self.model_revisions.get(text(row, "modelRevisionId"));
        let workload = self.serving_workloads.get(text(row, "workloadId"));
        let configuration = self.serving_configurations.get(text(row, "configurationId"));
        let headline = self
            .serving_measurements_by_run
            .get(&s)
            .and_then(|m| m.first())
            .map(|m| {
                format!(
                    "{} {}",
                    number(m, "value").map(format::plain_number).unwrap_or_default(),
                    text(m, "unit").replace('_', "/")
                )
            })
            .unwrap_or_default();
        let id = text(row, "id").to_string();
        ServingItem {
            title: row
                .get("manifest")
                .and_then(|m| pointer(m, &["metadata", "title"]))
                .map(scalar)
                .unwrap_or_else(|| id.clone()),
            href: format!("/serving/runs/{id}"),
            id,
            model: model.map(|m| text(m, "name")).unwrap_or("").into(),
            workload: workload.map(|w| text(w, "name")).unwrap_or("").into(),
            scenario: text(row, "scenario").into(),
            accelerator: text(row, "acceleratorModel").into(),
            accelerators: row.get("totalAccelerators").and_then(Value::as_i64).unwrap_or(0),
            system: configuration.map(|c| text(c, "summary")).unwrap_or("").into(),
            status: text(row, "status").into(),
            headline,
            observed_at: format::date_of(text(row, "observedAt")).into(),
        }
    }

    pub fn serving_list(&self, page: usize, workload_slug: Option<&str>) -> ServingList {
        let workload_id = workload_slug
            .and_then(|slug| self.serving_workloads.rows.iter().find(|w| text(w, "slug") == slug))
            .map(|w| text(w, "id").to_string());
        let mut runs: Vec<usize> = (0..self.serving_runs.len())
            .filter(|&s| workload_id.as_deref().is_none_or(|w| text(&self.serving_runs.rows[s], "workloadId") == w))
            .collect();
        runs.sort_by(|a, b| {
            let (ra, rb) = (&self.serving_runs.rows[*a], &self.serving_runs.rows[*b]);
            text(rb, "observedAt").cmp(text(ra, "observedAt")).then(text(ra, "id").cmp(text(rb, "id")))
        });
        let total = runs.len();
        let pages = pages_for(total, PAGE_LIMIT);
        let page = page.clamp(1, pages);
        ServingList {
            runs: runs
                .into_iter()
                .skip((page - 1) * PAGE_LIMIT)
                .take(PAGE_LIMIT)
                .map(|s| self.serving_item(s))
                .collect(),
            total,
            page,
            pages,
            workloads: self
                .serving_workloads
                .rows
                .iter()
                .map(|w| Link { label: text(w, "name").into(), href: format!("/serving?workload={}", text(w, "slug")) })
                .collect(),
        }
    }

    pub fn serving_run_view(&self, s: usize) -> ServingRunView {
        let row = &self.serving_runs.rows[s];
        let source = self.sources.get(text(row, "sourceId"));
        ServingRunView {
            item: self.serving_item(s),
            digest: text(row, "runDigest").into(),
            cohort_key: text(row, "cohortKey").into(),
            quality_policy: text(row, "qualityPolicy").into(),
            measurements: self
                .serving_measurements_by_run
                .get(&s)
                .into_iter()
                .flatten()
                .map(|m| {
                    (
                        text(m, "metric").to_string(),
                        text(m, "statistic").to_string(),
                        format!(
                            "{} {}",
                            number(m, "value").map(format::plain_number).unwrap_or_default(),
                            text(m, "unit").replace('_', "/")
                        ),
                    )
                })
                .collect(),
            manifest: row.get("manifest").cloned().unwrap_or(Value::Null),
            configuration: self
                .serving_configurations
                .get(text(row, "configurationId"))
                .and_then(|c| c.get("manifest"))
                .cloned()
                .unwrap_or(Value::Null),
            workload_manifest: self
                .serving_workloads
                .get(text(row, "workloadId"))
                .and_then(|c| c.get("manifest"))
                .cloned()
                .unwrap_or(Value::Null),
            source: source.map(|s| text(s, "name").to_string()),
            licence: source.and_then(|s| s.get("policy")).and_then(|p| p.get("license")).map(scalar),
        }
    }

    pub fn record_item(&self, event: &Row) -> RecordItem {
        let holder = self.runs.index_of(text(event, "runId"));
        let previous = opt_text(event, "previousRunId").and_then(|p| self.runs.index_of(p));
        RecordItem {
            at: text(event, "at").into(),
            cause: text(event, "cause").into(),
            operation: holder.and_then(|h| self.run_operation(h)).map(|o| Link {
                label: self.operation_title(o).into(),
                href: format!("/operations/{}", text(&self.operations.rows[o], "slug")),
            }),
            holder: holder.map(|h| self.run_summary(h)),
            previous: previous.map(|p| Link {
                label: format!("Run {}", crate::views::short_id(text(&self.runs.rows[p], "id"))),
                href: format!("/runs/{}", text(&self.runs.rows[p], "id")),
            }),
            previous_display: previous.map(|p| crate::views::primary_display(&self.runs.rows[p])),
            comparison_key: text(event, "comparisonKey").into(),
        }
    }

    /// Record events newest first, a page at a time.
    pub fn record_list(&self, page: usize, per_page: usize) -> RecordList {
        let total = self.record_events.len();
        let pages = pages_for(total, per_page);
        let page = page.clamp(1, pages);
        RecordList {
            records: self
                .record_events
                .iter()
                .skip((page - 1) * per_page)
                .take(per_page)
                .map(|e| self.record_item(e))
                .collect(),
            total,
            page,
            pages,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationItem {
    pub slug: String,
    pub title: String,
    pub family: String,
    pub workloads: usize,
    pub runs: usize,
    pub href: String,
}

#[derive(Debug, Clone, Serialize)]
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
