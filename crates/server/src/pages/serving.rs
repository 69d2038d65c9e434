//! Serving (`/serving`, `/serving/runs/{id}`): end-to-end inference runs.

use axum::extract::Query;
use axum::extract::{Path, State};
use maud::{Markup, html};
use serde::Serialize;
use serde_json::Value;

use super::{Answer, Shared, html_response, json_response, layout, pager, pages_for, section};
use crate::model::{Link, PAGE_LIMIT, scalar};
use crate::model::{ReadModel, number, pointer, text};
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
                    number(m, "value").map(ki_model::units::plain_number).unwrap_or_default(),
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
            observed_at: ki_model::utc::date_of(text(row, "observedAt")).into(),
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
                            number(m, "value").map(ki_model::units::plain_number).unwrap_or_default(),
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
