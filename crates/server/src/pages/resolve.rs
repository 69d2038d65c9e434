//! Resolve (`/resolve`, `POST /api/v1/resolve/kernel[/batch]`): the fastest compatible
//! kernels for an exact workload.

use axum::body::Bytes;
use axum::extract::Query;
use axum::extract::State;
use maud::{Markup, html};
use serde::Deserialize;

use super::{Answer, Shared, html_response, json_response, layout, parse_json};
use crate::problem::Problem;

// ---------- resolve ----------

/// The resolve form's fields, as the page's query string carries them.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct ResolveForm {
    pub operation: String,
    pub axes: String,
    pub dtypes: String,
    pub hardware: String,
    pub framework: String,
}

fn cohort_block(c: &ki_ranking::CohortView) -> Markup {
    let axes: Vec<String> = c.axes.iter().map(|(k, v)| format!("{k}={}", crate::pages::scalar(v))).collect();
    html! {
        article.cohort {
            h3 { @if let Some(h) = &c.hardware { (crate::pages::gpu_link(h)) } @else { "unknown hardware" } " · " (c.protocol.as_deref().unwrap_or("")) }
            p.muted { (axes.join(", ")) " · " (c.dtypes.join("/")) " · " (c.eligible_runs) " eligible of " (c.runs) " runs" }
            ol { @for r in &c.fastest { li {
                a href={ "/runs/" (r.run_id) } { (r.implementation) } " — "
                (ki_model::units::value(r.value, r.unit.as_deref()))
                " · rank " (r.rank.map(|x| x.to_string()).unwrap_or_else(|| "—".into())) " · " (crate::pages::code_of(&r.trust))
            } } }
            @if let Some(v) = &c.best_verified { p { "Best verified: " a href={ "/runs/" (v.run_id) } { (v.implementation) } } }
            @if let Some(d) = &c.best_deployable { p { "Best deployable: " a href={ "/runs/" (d.run_id) } { (d.implementation) } } }
        }
    }
}

pub fn render(form: &ResolveForm, answer: Option<&ki_ranking::ResolveResponse>, error: Option<&str>) -> Markup {
    let main = html! {
        h1 { "Resolve a workload" }
        p { "Name an operation and the values of its axes; the index answers with the fastest eligible runs of every comparison group that measured exactly that case, or the nearest measured cases along one differing axis." }
        form method="get" action="/resolve" {
            div.row { label for="r-op" { "Operation (name, slug or alias)" } input #r-op name="operation" required value=(form.operation) maxlength="200"; }
            div.row { label for="r-axes" { "Axes (name=value, comma-separated)" } input #r-axes name="axes" value=(form.axes) maxlength="2000" placeholder="batch_size=16, num_pages=1070"; }
            div.row { label for="r-dtypes" { "Dtypes (optional)" } input #r-dtypes name="dtypes" value=(form.dtypes) maxlength="200" placeholder="bf16"; }
            div.row { label for="r-hw" { "Hardware (optional)" } input #r-hw name="hardware" value=(form.hardware) maxlength="200" placeholder="NVIDIA B200"; }
            div.row { label for="r-fw" { "Framework (optional)" } input #r-fw name="framework" value=(form.framework) maxlength="200"; }
            button type="submit" { "Resolve" }
        }
        @if let Some(message) = error { p.banner role="alert" { (message) } }
        @if let Some(a) = answer {
            section #answer aria-labelledby="answer-h" {
                h2 #answer-h { "Answer: " (crate::pages::code_of(&a.mode)) }
                @if let Some(op) = &a.operation { p { "Operation " a href={ "/operations/" (op.slug) } { (op.name) } " · variable axes: " (op.variable_axes.join(", ")) } }
                @for n in &a.notes { p.muted { (n) } }
                @for c in &a.cohorts { (cohort_block(c)) }
                @if a.omitted_cohorts > 0 { p.muted { (a.omitted_cohorts) " more comparison groups not shown." } }
                @if !a.nearest.is_empty() {
                    h2 { "Nearest measured cases" }
                    @for n in &a.nearest {
                        h3 { (crate::pages::code_of(&n.side)) ": " (n.axis) " = " (crate::pages::scalar(&n.measured)) " (asked " (crate::pages::scalar(&n.requested)) ")" }
                        @for c in &n.cohorts { (cohort_block(c)) }
                    }
                }
            }
        }
    };
    layout("Resolve", main)
}

// ---------- resolve ----------

pub async fn page(State(state): State<Shared>, Query(form): Query<ResolveForm>) -> Answer {
    let model = state.model();
    let trimmed = |text: &str| text.trim().to_string();
    let form = ResolveForm {
        operation: trimmed(&form.operation),
        axes: trimmed(&form.axes),
        dtypes: trimmed(&form.dtypes),
        hardware: trimmed(&form.hardware),
        framework: trimmed(&form.framework),
    };
    if form.operation.is_empty() {
        return Ok(html_response(render(&form, None, None)));
    }
    let axes = match ki_ranking::query::parse_axes(&form.axes) {
        Ok(axes) => axes,
        Err(message) => return Ok(html_response(render(&form, None, Some(&message)))),
    };
    let request = ki_ranking::ResolveRequest {
        operation: form.operation.clone(),
        axes,
        dtypes: ki_ranking::query::parse_dtypes(&form.dtypes),
        hardware: Some(form.hardware.clone()).filter(|h| !h.is_empty()),
        framework: Some(form.framework.clone()).filter(|f| !f.is_empty()),
    };
    let answer = model.judgement.resolve(&request);
    Ok(html_response(render(&form, Some(&answer), None)))
}

pub async fn api(State(state): State<Shared>, body: Bytes) -> Answer {
    let request: ki_ranking::ResolveRequest = parse_json(&body, "a resolve request")?;
    Ok(json_response(&state.model().judgement.resolve(&request)))
}

/// 1 to 20 resolve requests.
#[derive(Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BatchInput {
    #[schemars(length(min = 1, max = 20))]
    requests: Vec<ki_ranking::ResolveRequest>,
}

/// One answer per request, in order.
#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct BatchAnswer {
    pub responses: Vec<ki_ranking::ResolveResponse>,
}

pub async fn api_batch(State(state): State<Shared>, body: Bytes) -> Answer {
    let input: BatchInput = parse_json(&body, "{\"requests\": [...]} with 1 to 20 resolve requests")?;
    let answers =
        state.model().judgement.resolve_batch(&input.requests).map_err(|e| Problem::bad_request(e.to_string()))?;
    Ok(json_response(&BatchAnswer { responses: answers }))
}
