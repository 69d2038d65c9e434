//! Serving (`/serving`, `/serving/runs/{id}`): end-to-end inference runs.

use axum::extract::Query;
use axum::extract::{Path, State};
use maud::{Markup, html};
use serde::Serialize;
use serde_json::Value;

use super::{Answer, Shared, html_response, json_response, layout, pager, pages_for, section};
use crate::model::{Link, PAGE_LIMIT, scalar};
use crate::model::{ReadModel, pointer};
use crate::problem::Problem;

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ServingList {
    pub runs: Vec<ServingItem>,
    pub total: usize,
    pub page: usize,
    pub pages: usize,
    pub workloads: Vec<Link>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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

impl ReadModel {
    fn serving_item(&self, s: usize) -> ServingItem {
        let row = &self.serving_runs.rows[s];
        let model = self.model_revisions.get(&row.model_revision_id);
        let workload = self.serving_workloads.get(&row.workload_id);
        let configuration = self.serving_configurations.get(&row.configuration_id);
        let headline =
            self.serving_measurements_by_run.get(&s).and_then(|m| m.first()).map(measured).unwrap_or_default();
        ServingItem {
            title: pointer(&row.manifest, &["metadata", "title"]).map(scalar).unwrap_or_else(|| row.id.clone()),
            href: format!("/serving/runs/{}", row.id),
            id: row.id.clone(),
            model: model.map(|m| m.name.clone()).unwrap_or_default(),
            workload: workload.map(|w| w.name.clone()).unwrap_or_default(),
            scenario: row.scenario.clone(),
            accelerator: row.accelerator_model.clone(),
            accelerators: i64::try_from(row.total_accelerators).unwrap_or(0),
            system: configuration.map(|c| c.summary.clone()).unwrap_or_default(),
            status: row.status.clone(),
            headline,
            observed_at: ki_model::utc::date_of(&row.observed_at).into(),
        }
    }

    pub fn serving_list(&self, page: usize, workload_slug: Option<&str>) -> ServingList {
        let workload_id = workload_slug
            .and_then(|slug| self.serving_workloads.rows.iter().find(|w| w.slug == slug))
            .map(|w| w.id.as_str());
        let runs = &self.serving_runs.rows;
        let mut runs: Vec<usize> =
            (0..runs.len()).filter(|&s| workload_id.is_none_or(|w| runs[s].workload_id == w)).collect();
        runs.sort_by(|a, b| {
            let (ra, rb) = (&self.serving_runs.rows[*a], &self.serving_runs.rows[*b]);
            rb.observed_at.cmp(&ra.observed_at).then(ra.id.cmp(&rb.id))
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
                .map(|w| Link { label: w.name.clone(), href: format!("/serving?workload={}", w.slug) })
                .collect(),
        }
    }

    pub fn serving_run_view(&self, s: usize) -> ServingRunView {
        let row = &self.serving_runs.rows[s];
        let source = row.source_id.as_deref().and_then(|id| self.judgement.source_index(id));
        let source = source.map(|s| &self.judgement.sources[s]);
        ServingRunView {
            item: self.serving_item(s),
            digest: row.run_digest.clone(),
            cohort_key: row.cohort_key.clone(),
            quality_policy: row.quality_policy.clone(),
            measurements: self
                .serving_measurements_by_run
                .get(&s)
                .into_iter()
                .flatten()
                .map(|m| (m.metric.clone(), m.statistic.clone(), measured(m)))
                .collect(),
            manifest: row.manifest.clone(),
            configuration: self
                .serving_configurations
                .get(&row.configuration_id)
                .map(|c| c.manifest.clone())
                .unwrap_or(Value::Null),
            workload_manifest: self
                .serving_workloads
                .get(&row.workload_id)
                .map(|w| w.manifest.clone())
                .unwrap_or(Value::Null),
            source: source.map(|s| s.name.clone()),
            licence: source.and_then(|s| s.policy.as_ref()?.get("license")).map(scalar),
        }
    }
}

/// A measurement's value and unit ("3.2 tokens/s").
fn measured(m: &ki_model::rows::ServingMeasurementRow) -> String {
    format!("{} {}", ki_model::units::plain_number(m.value), m.unit.replace('_', "/"))
}

// ---------- serving ----------

pub fn render_list(list: &ServingList) -> Markup {
    layout(
        "Serving",
        html! {
            h1 { "Serving" }
            p { "End-to-end inference results (MLPerf Inference and others): " (list.total) " runs. Serving runs are grouped by cohort (model, tokenizer, workload, protocol, topology, quality policy, metrics)." }
            p { "Workloads: " @for (i, w) in list.workloads.iter().enumerate() { @if i > 0 { " · " } a href=(w.href) { (w.label) } } }
            table { thead { tr { th scope="col" { "run" } th scope="col" { "model" } th scope="col" { "scenario" } th scope="col" { "system" } th scope="col" { "accelerators" } th scope="col" class="num" { "result" } th scope="col" { "observed" } } }
                tbody { @for r in &list.runs { tr {
                    td { a href=(r.href) { (r.title) } } td { (r.model) } td { (r.scenario) } td { (r.system) }
                    td { (r.accelerators) " × " (r.accelerator) } td.num { (r.headline) } td { (r.observed_at) }
                } } } }
            (pager("/serving", list.page, list.pages))
        },
    )
}

pub fn render_run(v: &ServingRunView) -> Markup {
    let r = &v.item;
    layout(
        &r.title,
        html! {
            h1 { (r.title) }
            p.badges { span.badge { "status: " (r.status) } " " span.badge.ev-reported { "evidence: reported" } }
            dl.fields {
                div { dt { "model" } dd { (r.model) } }
                div { dt { "workload" } dd { (r.workload) } }
                div { dt { "scenario" } dd { (r.scenario) } }
                div { dt { "system" } dd { (r.system) } }
                div { dt { "accelerators" } dd { (r.accelerators) " × " (r.accelerator) } }
                div { dt { "quality policy" } dd { (v.quality_policy) } }
                div { dt { "observed" } dd { (r.observed_at) } }
                div { dt { "cohort key" } dd { code { (v.cohort_key) } } }
                div { dt { "run digest" } dd { code { (v.digest) } } }
            }
            (section("measurements", "Measurements", html! { ul { @for (m, s, val) in &v.measurements { li { (m) " · " (s) " " strong { (val) } } } } }))
            (section("manifest", "Canonical manifest", html! {
                details { summary { "Show manifest" } pre { code { (serde_json::to_string_pretty(&v.manifest).unwrap_or_default()) } } }
                details { summary { "Configuration" } pre { code { (serde_json::to_string_pretty(&v.configuration).unwrap_or_default()) } } }
                details { summary { "Workload" } pre { code { (serde_json::to_string_pretty(&v.workload_manifest).unwrap_or_default()) } } }
            }))
            footer.record { p { (v.source.as_deref().unwrap_or("")) @if let Some(l) = &v.licence { " · " (l) } } p { a href={ "/api/v1/serving/runs/" (r.id) } type="application/json" { "JSON" } } }
        },
    )
}

// ---------- serving ----------

/// `?page=N&workload=…` of the serving list.
#[derive(Debug, Clone, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct ServingQuery {
    #[schemars(extend("maximum" = 18_446_744_073_709_551_615_u64))]
    pub page: Option<usize>,
    /// A serving workload's id or slug.
    pub workload: Option<String>,
}

impl ServingQuery {
    fn page(&self) -> usize {
        super::PageQuery { page: self.page }.number()
    }
}

pub async fn list_page(State(state): State<Shared>, Query(q): Query<ServingQuery>) -> Answer {
    Ok(html_response(render_list(&state.model().serving_list(q.page(), q.workload.as_deref()))))
}

pub async fn api_list(State(state): State<Shared>, Query(q): Query<ServingQuery>) -> Answer {
    Ok(json_response(&state.model().serving_list(q.page(), q.workload.as_deref())))
}

fn find_serving_run(model: &ReadModel, id: &str) -> Result<usize, Problem> {
    model.find_serving_run(id).ok_or_else(|| Problem::not_found(format!("no serving run {id:?}")))
}

pub async fn run_page(State(state): State<Shared>, Path(id): Path<String>) -> Answer {
    let model = state.model();
    Ok(html_response(render_run(&model.serving_run_view(find_serving_run(&model, &id)?))))
}

pub async fn api_run(State(state): State<Shared>, Path(id): Path<String>) -> Answer {
    let model = state.model();
    Ok(json_response(&model.serving_run_view(find_serving_run(&model, &id)?)))
}
