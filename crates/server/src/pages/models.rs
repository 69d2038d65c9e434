//! Models (`/models`, `/models/{slug}`): the operations a model uses, from the operations'
//! `model:<slug>` tags (FlashInfer-Bench definitions carry them); per operation and GPU the
//! best verified and the best reported run; and the model's operations nobody has measured.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use maud::{Markup, html};
use serde::Serialize;
use serde_json::Value;

use super::gpu::{BestRun, Claim, best_cell};
use super::{Answer, Shared, gpu_href, gpu_link, html_response, json_response, layout, section};
use crate::model::{ReadModel, slugify, text};
use crate::problem::Problem;

/// The tag prefix naming a model an operation belongs to.
pub const MODEL_TAG: &str = "model:";

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelItem {
    pub slug: String,
    /// The name as the tag spells it.
    pub name: String,
    pub href: String,
    pub operations: usize,
    /// Operations with at least one run.
    pub measured: usize,
    /// Operations with no run at all.
    pub gaps: usize,
}

/// Models named by operation tags.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ModelList {
    pub models: Vec<ModelItem>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelOperationOnGpu {
    pub gpu: String,
    pub gpu_href: String,
    pub runs: usize,
    /// Of the runs, those at evidence verified or replicated that passed and stand (a failed,
    /// refused or retracted run is never counted as verified).
    pub verified_runs: usize,
    pub best_verified: Option<BestRun>,
    pub best_reported: Option<BestRun>,
    /// Why there is no best verified run when runs at that evidence exist.
    pub why_no_verified: Option<String>,
    /// Why there is no best reported run when runs at that evidence exist.
    pub why_no_reported: Option<String>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelOperation {
    pub slug: String,
    pub title: String,
    pub family: String,
    pub href: String,
    /// Runs on every GPU.
    pub runs: usize,
    /// One entry per GPU with runs, most-run first; empty for a gap.
    pub gpus: Vec<ModelOperationOnGpu>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ModelView {
    pub slug: String,
    pub name: String,
    /// Operations of this model with runs, most-run first.
    pub operations: Vec<ModelOperation>,
    /// Operations of this model with no run on any GPU, by title.
    pub gaps: Vec<ModelOperation>,
}

impl ReadModel {
    /// Model slug → (the name as tagged, its operations), by slug.
    pub fn models(&self) -> BTreeMap<String, (String, Vec<usize>)> {
        let mut models: BTreeMap<String, (String, Vec<usize>)> = BTreeMap::new();
        for (op, row) in self.operations.rows.iter().enumerate() {
            for tag in row.get("tags").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str) {
                let Some(name) = tag.strip_prefix(MODEL_TAG) else { continue };
                let slug = slugify(name);
                if slug.is_empty() {
                    continue;
                }
                let entry = models.entry(slug).or_insert_with(|| (name.to_string(), Vec::new()));
                if !entry.1.contains(&op) {
                    entry.1.push(op);
                }
            }
        }
        models
    }

    /// Every run of an operation, over its workloads.
    fn operation_runs(&self, op: usize) -> Vec<usize> {
        self.judgement.operation_workloads(op).iter().flat_map(|w| self.judgement.workload_runs(*w)).collect()
    }

    pub fn model_list(&self) -> ModelList {
        let models = self
            .models()
            .into_iter()
            .map(|(slug, (name, ops))| {
                let measured = ops.iter().filter(|&&op| !self.operation_runs(op).is_empty()).count();
                ModelItem {
                    href: format!("/models/{slug}"),
                    slug,
                    name,
                    operations: ops.len(),
                    measured,
                    gaps: ops.len() - measured,
                }
            })
            .collect();
        ModelList { models }
    }

    fn model_operation(&self, op: usize) -> ModelOperation {
        let row = &self.operations.rows[op];
        let runs = self.operation_runs(op);
        let mut by_gpu: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for &r in &runs {
            by_gpu.entry(self.run(r).hardware_model.as_deref().unwrap_or("")).or_default().push(r);
        }
        let mut gpus: Vec<ModelOperationOnGpu> = by_gpu
            .into_iter()
            .map(|(gpu, gpu_runs)| {
                let (best_verified, why_no_verified) = self.best_or_why(&gpu_runs, Claim::Verified);
                let (best_reported, why_no_reported) = self.best_or_why(&gpu_runs, Claim::Reported);
                ModelOperationOnGpu {
                    gpu: gpu.to_string(),
                    gpu_href: gpu_href(gpu),
                    runs: gpu_runs.len(),
                    verified_runs: gpu_runs.iter().filter(|&&r| self.counts_as(r, Claim::Verified)).count(),
                    best_verified,
                    best_reported,
                    why_no_verified,
                    why_no_reported,
                }
            })
            .collect();
        gpus.sort_by(|a, b| b.runs.cmp(&a.runs).then(a.gpu.cmp(&b.gpu)));
        let slug = text(row, "slug").to_string();
        ModelOperation {
            href: format!("/operations/{slug}"),
            slug,
            title: self.operation_title(op).into(),
            family: text(row, "family").into(),
            runs: runs.len(),
            gpus,
        }
    }

    pub fn model_view(&self, slug: &str) -> Option<ModelView> {
        let (name, ops) = self.models().remove(slug)?;
        let (mut operations, mut gaps): (Vec<ModelOperation>, Vec<ModelOperation>) =
            ops.into_iter().map(|op| self.model_operation(op)).partition(|o| o.runs > 0);
        operations.sort_by(|a, b| b.runs.cmp(&a.runs).then(a.title.cmp(&b.title)).then(a.slug.cmp(&b.slug)));
        gaps.sort_by(|a, b| a.title.cmp(&b.title).then(a.slug.cmp(&b.slug)));
        Some(ModelView { slug: slug.to_string(), name, operations, gaps })
    }
}

pub fn render_list(list: &ModelList) -> Markup {
    layout(
        "Models",
        html! {
            h1 { "Models" }
            p { "Models named by the operations' " code { "model:" } " tags (the FlashInfer-Bench definitions carry them), "
                "with how many of their operations have runs in the index." }
            p { a href="/api/v1/models" type="application/json" { "JSON" } }
            @if list.models.is_empty() { p { "No operation carries a model tag." } } @else {
                table { thead { tr { th scope="col" { "model" } th scope="col" class="num" { "operations" } th scope="col" class="num" { "measured" } th scope="col" class="num" { "not measured" } } }
                    tbody { @for m in &list.models { tr {
                        td { a href=(m.href) { (m.name) } } td.num { (m.operations) } td.num { (m.measured) } td.num { (m.gaps) }
                    } } } }
            }
        },
    )
}

pub fn render(v: &ModelView) -> Markup {
    let main = html! {
        nav.crumbs aria-label="Breadcrumb" { a href="/models" { "Models" } " / " (v.name) }
        h1 { (v.name) }
        p { (v.operations.len() + v.gaps.len()) " operations tagged " code { (MODEL_TAG) (v.name) } ": "
            (v.operations.len()) " measured, " (v.gaps.len()) " not measured. "
            a href={ "/api/v1/models/" (v.slug) } type="application/json" { "JSON" } }
        (section("operations", "Best kernels per operation and GPU", html! {
            p { "Runs are ranked only inside a comparison group; each best is the fastest eligible run of its evidence "
                "in the group (of that operation, on that GPU) with the most such runs. Verified counts the verified runs that "
                "passed and stand: a failed, refused or retracted run is never counted as verified." }
            @if v.operations.is_empty() { p { "None of this model's operations has a run yet." } } @else {
                table {
                    thead { tr { th scope="col" { "operation" } th scope="col" { "GPU" } th scope="col" class="num" { "runs" } th scope="col" class="num" { "verified" } th scope="col" { "best verified" } th scope="col" { "best reported" } } }
                    tbody { @for o in &v.operations { @for (i, g) in o.gpus.iter().enumerate() { tr {
                        td { @if i == 0 { a href=(o.href) { (o.title) } } }
                        td { (gpu_link(&g.gpu)) }
                        td.num { (g.runs) }
                        td.num { (g.verified_runs) }
                        td { (best_cell(g.best_verified.as_ref(), g.why_no_verified.as_deref())) }
                        td { (best_cell(g.best_reported.as_ref(), g.why_no_reported.as_deref())) }
                    } } } }
                }
            }
        }))
        (section("gaps", "Not measured", html! {
            @if v.gaps.is_empty() { p { "Every operation of this model has runs." } } @else {
                p { "Operations of this model with no run on any GPU in the index." }
                ul { @for g in &v.gaps { li { a href=(g.href) { (g.title) } " — " (g.family) } } }
            }
        }))
    };
    layout(&v.name, main)
}

fn find_model(model: &ReadModel, slug: &str) -> Result<ModelView, Problem> {
    model.model_view(slug).ok_or_else(|| Problem::not_found(format!("no model {slug:?}")))
}

pub async fn list_page(State(state): State<Shared>) -> Answer {
    Ok(html_response(render_list(&state.model().model_list())))
}

pub async fn api_list(State(state): State<Shared>) -> Answer {
    Ok(json_response(&state.model().model_list()))
}

pub async fn page(State(state): State<Shared>, Path(slug): Path<String>) -> Answer {
    Ok(html_response(render(&find_model(&state.model(), &slug)?)))
}

pub async fn api(State(state): State<Shared>, Path(slug): Path<String>) -> Answer {
    Ok(json_response(&find_model(&state.model(), &slug)?))
}
