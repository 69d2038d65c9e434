//! Models (`/models`, `/models/{slug}`): the operations a model uses, from the operations'
//! `model:<slug>` tags (FlashInfer-Bench definitions carry them); per operation and GPU the
//! best verified and the best reported run; and the model's operations nobody has measured.

use std::collections::BTreeMap;

use axum::extract::{Path, Query, State};
use maud::{Markup, html};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::gpu::{BestRun, Claim, best_cell};
use super::{Answer, Shared, gpu_link, html_response, json_response, layout, section};
use crate::model::gpu_href;
use crate::model::{ReadModel, slugify};
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

/// Batch and context length a model page answers for when the reader names none.
pub const DEFAULT_BATCH: u64 = 16;
pub const DEFAULT_CONTEXT: u64 = 1024;

/// The model page's form: the reader's batch size and context length (tokens per sequence), as
/// typed (empty: the defaults).
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct CaseForm {
    /// Sequences per call (default 16).
    pub batch: String,
    /// Tokens per sequence (default 1024).
    pub context: String,
}

/// The case a model page's "best" is for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Case {
    pub batch: u64,
    pub context: u64,
}

impl Default for Case {
    fn default() -> Self {
        Case { batch: DEFAULT_BATCH, context: DEFAULT_CONTEXT }
    }
}

impl CaseForm {
    /// The case the form names; a field that is not a whole number from 1 to 2^40 is refused in words.
    pub fn case(&self) -> Result<Case, String> {
        let read = |typed: &str, what: &str, default: u64| -> Result<u64, String> {
            let typed = typed.trim().replace(['_', ','], "");
            if typed.is_empty() {
                return Ok(default);
            }
            match typed.parse::<u64>() {
                Ok(n) if (1..=1 << 40).contains(&n) => Ok(n),
                _ => Err(format!("{what} takes a whole number from 1, such as {default}; got “{typed}”")),
            }
        };
        Ok(Case {
            batch: read(&self.batch, "Batch size", DEFAULT_BATCH)?,
            context: read(&self.context, "Context length", DEFAULT_CONTEXT)?,
        })
    }
}

/// The measured workload a best is taken from: its batch and context length, as read from its
/// axes (absent when the operation has no such axis), and whether that is the reader's case.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct MeasuredCase {
    pub batch: Option<f64>,
    pub context: Option<f64>,
    /// Every axis the operation has of the two equals the reader's.
    pub exact: bool,
    /// The workload's label (variable axes and dtypes).
    pub workload: String,
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
    /// The measured workload nearest the reader's case the bests are taken from; None when the
    /// operation has neither a batch nor a context axis (then from the group with the most runs).
    pub case: Option<MeasuredCase>,
    pub best_verified: Option<BestRun>,
    pub best_reported: Option<BestRun>,
    /// Why there is no best verified run when runs at that evidence exist.
    pub why_no_verified: Option<String>,
    /// Why there is no best reported run when runs at that evidence exist.
    pub why_no_reported: Option<String>,
}

/// A workload's batch size (its `batch_size` axis, as the operation spells it) and context
/// length: `seq_len` (or the operation's spelling), else KV tokens per sequence of a paged
/// cache (`num_kv_indices` × `page_size` ÷ `batch_size`), else `total_kv` ÷ sequences
/// (`len_indptr` − 1).
pub fn case_of(axes: &BTreeMap<String, Value>) -> (Option<f64>, Option<f64>) {
    let names: Vec<&str> = axes.keys().map(String::as_str).collect();
    let value = |name: &str| axes.get(name).and_then(Value::as_f64);
    let own = |name: &str| ki_ranking::understand::axis_for(name, &names).and_then(|a| value(&a));
    let batch = own("batch_size");
    let context = own("seq_len")
        .or_else(|| {
            let (entries, batch) = (value("num_kv_indices")?, batch.filter(|b| *b > 0.0)?);
            Some(entries * value("page_size").unwrap_or(1.0) / batch)
        })
        .or_else(|| {
            let (total, sequences) = (value("total_kv")?, value("len_indptr")? - 1.0);
            (sequences > 0.0).then_some(total / sequences)
        });
    (batch, context)
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
    /// The batch and context length each best is for (the reader's, else the defaults).
    pub case: Case,
}

impl ReadModel {
    /// Model slug → (the name as tagged, its operations), by slug.
    pub fn models(&self) -> BTreeMap<String, (String, Vec<usize>)> {
        let mut models: BTreeMap<String, (String, Vec<usize>)> = BTreeMap::new();
        for (op, row) in self.judgement.operations.iter().enumerate() {
            for tag in &row.tags {
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

    /// Of `runs` (one operation on one GPU), those of the measured workload nearest `case`: the
    /// smallest sum of |ln(measured ÷ asked)| over the batch and context axes the workload has,
    /// then the most eligible runs, verified ones first. None when no workload has either axis.
    fn nearest_case_runs(&self, runs: &[usize], case: Case) -> Option<(MeasuredCase, Vec<usize>)> {
        let facts = &self.judgement.facts;
        let mut by_workload: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for &r in runs {
            if facts[r].eligible() && facts[r].position().is_some() {
                by_workload.entry(self.judgement.run_workload(r)).or_default().push(r);
            }
        }
        let distance = |asked: u64, measured: Option<f64>| match measured {
            Some(m) if m > 0.0 => (m / asked as f64).ln().abs(),
            Some(_) => f64::INFINITY,
            None => 0.0,
        };
        let (workload, members) = by_workload
            .into_iter()
            .filter_map(|(w, members)| {
                let (batch, context) = case_of(self.judgement.workload_axes(w));
                (batch.is_some() || context.is_some()).then(|| {
                    let d = distance(case.batch, batch) + distance(case.context, context);
                    let verified = members.iter().filter(|&&r| Claim::Verified.admits(facts[r].trust)).count();
                    (d, verified, members.len(), w, members)
                })
            })
            .min_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)).then(b.2.cmp(&a.2)).then(a.3.cmp(&b.3)))
            .map(|(.., w, members)| (w, members))?;
        let (batch, context) = case_of(self.judgement.workload_axes(workload));
        let same = |asked: u64, measured: Option<f64>| measured.is_none_or(|m| m == asked as f64);
        let measured = MeasuredCase {
            batch,
            context,
            exact: same(case.batch, batch) && same(case.context, context),
            workload: self.run_workload_label(members[0]).into(),
        };
        Some((measured, members))
    }

    fn model_operation(&self, op: usize, case: Case) -> ModelOperation {
        let row = &self.judgement.operations[op];
        let runs = self.operation_runs(op);
        let mut by_gpu: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
        for &r in &runs {
            by_gpu.entry(self.run(r).hardware_model.as_deref().unwrap_or("")).or_default().push(r);
        }
        let mut gpus: Vec<ModelOperationOnGpu> = by_gpu
            .into_iter()
            .map(|(gpu, gpu_runs)| {
                let (measured, chosen) = match self.nearest_case_runs(&gpu_runs, case) {
                    Some((measured, chosen)) => (Some(measured), chosen),
                    None => (None, gpu_runs.clone()),
                };
                let (best_verified, why_no_verified) = self.best_or_why(&chosen, Claim::Verified);
                let (best_reported, why_no_reported) = self.best_or_why(&chosen, Claim::Reported);
                ModelOperationOnGpu {
                    gpu: gpu.to_string(),
                    gpu_href: gpu_href(gpu),
                    runs: gpu_runs.len(),
                    verified_runs: gpu_runs.iter().filter(|&&r| self.counts_as(r, Claim::Verified)).count(),
                    case: measured,
                    best_verified,
                    best_reported,
                    why_no_verified,
                    why_no_reported,
                }
            })
            .collect();
        gpus.sort_by(|a, b| b.runs.cmp(&a.runs).then(a.gpu.cmp(&b.gpu)));
        let slug = row.slug.clone();
        ModelOperation {
            href: format!("/operations/{slug}"),
            slug,
            title: self.operation_title(op).into(),
            family: row.family.clone(),
            runs: runs.len(),
            gpus,
        }
    }

    /// A model's page for the reader's batch and context length.
    pub fn model_view(&self, slug: &str, case: Case) -> Option<ModelView> {
        let (name, ops) = self.models().remove(slug)?;
        let (mut operations, mut gaps): (Vec<ModelOperation>, Vec<ModelOperation>) =
            ops.into_iter().map(|op| self.model_operation(op, case)).partition(|o| o.runs > 0);
        operations.sort_by(|a, b| b.runs.cmp(&a.runs).then(a.title.cmp(&b.title)).then(a.slug.cmp(&b.slug)));
        gaps.sort_by(|a, b| a.title.cmp(&b.title).then(a.slug.cmp(&b.slug)));
        Some(ModelView { slug: slug.to_string(), name, operations, gaps, case })
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

/// A measured case in words: "batch 16 · context 1,024 (your case)".
fn case_text(c: &MeasuredCase) -> String {
    let number = |v: f64| ki_model::units::plain_number((v * 10.0).round() / 10.0);
    let mut parts = Vec::new();
    if let Some(b) = c.batch {
        parts.push(format!("batch {}", number(b)));
    }
    if let Some(t) = c.context {
        parts.push(format!("context {}", number(t)));
    }
    parts.join(" · ")
}

pub fn render(v: &ModelView, form: &CaseForm, error: Option<&str>) -> Markup {
    let main = html! {
        nav.crumbs aria-label="Breadcrumb" { a href="/models" { "Models" } " / " (v.name) }
        h1 { (v.name) }
        p { (v.operations.len() + v.gaps.len()) " operations tagged " code { (MODEL_TAG) (v.name) } ": "
            (v.operations.len()) " measured, " (v.gaps.len()) " not measured. "
            a href={ "/api/v1/models/" (v.slug) "?batch=" (v.case.batch) "&context=" (v.case.context) } type="application/json" { "JSON" } }
        form.case method="get" action={ "/models/" (v.slug) } {
            div.row { label for="m-batch" { "Batch size (sequences per call; default " (DEFAULT_BATCH) ")" }
                input #m-batch name="batch" inputmode="numeric" maxlength="20" value=(form.batch) placeholder=(DEFAULT_BATCH); }
            div.row { label for="m-context" { "Context length (tokens per sequence; default " (DEFAULT_CONTEXT) ")" }
                input #m-context name="context" inputmode="numeric" maxlength="20" value=(form.context) placeholder=(DEFAULT_CONTEXT); }
            button type="submit" { "Show the best for this case" }
        }
        @if let Some(message) = error { p.banner role="alert" { (message) } }
        (section("operations", "Best kernels per operation and GPU", html! {
            p #case { "For batch " (v.case.batch) " and context " (v.case.context) " tokens: each best is taken from the measured workload "
                "nearest this case (the measured case column says which, and whether it is yours); runs are ranked only inside "
                "a comparison group, and each best is the fastest eligible run of its evidence in that workload's group with the most such runs. "
                "An operation with neither a batch nor a context axis takes the group with the most runs. Verified counts the verified runs that "
                "passed and stand: a failed, refused or retracted run is never counted as verified." }
            @if v.operations.is_empty() { p { "None of this model's operations has a run yet." } } @else {
                table {
                    thead { tr { th scope="col" { "operation" } th scope="col" { "GPU" } th scope="col" class="num" { "runs" } th scope="col" class="num" { "verified" } th scope="col" { "measured case" } th scope="col" { "best verified" } th scope="col" { "best reported" } } }
                    tbody { @for o in &v.operations { @for (i, g) in o.gpus.iter().enumerate() { tr {
                        td { @if i == 0 { a href=(o.href) { (o.title) } } }
                        td { (gpu_link(&g.gpu)) }
                        td.num { (g.runs) }
                        td.num { (g.verified_runs) }
                        td { @match &g.case {
                            Some(c) if c.exact => { (case_text(c)) " " span.muted { "(your case)" } }
                            Some(c) => { (case_text(c)) " " span.muted { "(nearest measured)" } }
                            None => { span.muted { "no batch or context axis" } }
                        } }
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

fn find_model(model: &ReadModel, slug: &str, case: Case) -> Result<ModelView, Problem> {
    model.model_view(slug, case).ok_or_else(|| Problem::not_found(format!("no model {slug:?}")))
}

pub async fn list_page(State(state): State<Shared>) -> Answer {
    Ok(html_response(render_list(&state.model().model_list())))
}

pub async fn api_list(State(state): State<Shared>) -> Answer {
    Ok(json_response(&state.model().model_list()))
}

pub async fn page(State(state): State<Shared>, Path(slug): Path<String>, Query(form): Query<CaseForm>) -> Answer {
    // A case the page cannot read is said on the page, over the defaults' answer.
    let (case, error) = match form.case() {
        Ok(case) => (case, None),
        Err(message) => (Case::default(), Some(message)),
    };
    Ok(html_response(render(&find_model(&state.model(), &slug, case)?, &form, error.as_deref())))
}

pub async fn api(State(state): State<Shared>, Path(slug): Path<String>, Query(form): Query<CaseForm>) -> Answer {
    let case = form.case().map_err(Problem::bad_request)?;
    Ok(json_response(&find_model(&state.model(), &slug, case)?))
}
