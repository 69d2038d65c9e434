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
    /// Most comparison groups to list (1 to 50; empty: 10).
    pub limit: String,
}

impl ResolveForm {
    /// This form's page with `limit` groups.
    fn href_with_limit(&self, limit: usize) -> String {
        use crate::model::percent_encode as enc;
        format!(
            "/resolve?operation={}&axes={}&dtypes={}&hardware={}&framework={}&limit={limit}",
            enc(&self.operation),
            enc(&self.axes),
            enc(&self.dtypes),
            enc(&self.hardware),
            enc(&self.framework)
        )
    }
}

/// How fast a run is next to #1 of its group, as a fraction in (0, 1]: #1's value over this
/// run's for lower-is-better metrics, this run's over #1's for higher-is-better ones.
pub fn speed_fraction(value: Option<f64>, first: Option<f64>, direction: ki_ranking::Direction) -> Option<f64> {
    let (value, first) = (value?, first?);
    if !(value.is_finite() && first.is_finite()) || value <= 0.0 || first <= 0.0 {
        return None;
    }
    Some(match direction {
        ki_ranking::Direction::LowerIsBetter => first / value,
        ki_ranking::Direction::HigherIsBetter => value / first,
    })
}

/// A horizontal bar, server-rendered SVG (no inline style: the CSP forbids it), `fraction`
/// of the full width, labelled for screen readers.
pub fn speed_bar(fraction: f64, label: &str) -> Markup {
    let width = format!("{:.1}", (fraction.clamp(0.0, 1.0) * 100.0).max(0.5));
    html! {
        svg.bar width="120" height="10" viewBox="0 0 100 10" preserveAspectRatio="none" role="img" aria-label=(label) {
            rect.track x="0" y="0" width="100" height="10" {}
            rect.fill x="0" y="0" width=(width) height="10" {}
        }
    }
}

fn cohort_block(c: &ki_ranking::CohortView) -> Markup {
    let axes: Vec<String> = c.axes.iter().map(|(k, v)| format!("{k}={}", crate::model::scalar(v))).collect();
    let first = c.fastest.first().and_then(|r| r.value);
    let name = |run: &Option<ki_ranking::RunSummary>| match run {
        Some(r) => {
            html! { a href={ "/runs/" (r.run_id) } { (r.implementation) } " (" (ki_model::units::value(r.value, r.unit.as_deref())) ", #" (r.rank.unwrap_or(0)) ")" }
        }
        None => html! { "none" },
    };
    html! {
        article.cohort {
            h3 { @if let Some(h) = &c.hardware { (crate::pages::gpu_link(h)) } @else { "unknown hardware" } " · " (c.protocol.as_deref().unwrap_or("")) }
            p.muted { (axes.join(", ")) " · " (c.dtypes.join("/")) " · " (c.eligible_runs) " eligible of " (c.runs) " runs · "
                (c.metric.as_deref().unwrap_or("?")) " " (c.statistic.as_deref().unwrap_or("")) " ("
                @match c.direction { ki_ranking::Direction::LowerIsBetter => "lower is better", ki_ranking::Direction::HigherIsBetter => "higher is better" } ")" }
            @if !c.caveats.is_empty() {
                ul.caveats aria-label="Caveats" { @for caveat in &c.caveats { li data-kind=(crate::model::code_of(&caveat.kind)) { (caveat.message) } } }
            }
            table {
                caption { "Fastest eligible runs, speed relative to #1" }
                thead { tr { th scope="col" class="num" { "#" } th scope="col" { "implementation" } th scope="col" { "project" } th scope="col" class="num" { "value" }
                    th scope="col" { "speed vs #1" } th scope="col" { "evidence" } th scope="col" { "deployable" } th scope="col" { "observed" } } }
                tbody { @for r in &c.fastest {
                    @let fraction = speed_fraction(r.value, first, c.direction);
                    tr {
                        td.num { (r.rank.map(|x| x.to_string()).unwrap_or_else(|| "—".into())) }
                        td { a href={ "/runs/" (r.run_id) } { (r.implementation) } }
                        td { (r.project) }
                        td.num { (ki_model::units::value(r.value, r.unit.as_deref())) }
                        td { @if let Some(f) = fraction {
                            @let label = format!("{}% of #1's speed", ki_model::units::plain_number((f * 1000.0).round() / 10.0));
                            (speed_bar(f, &label)) " " span.muted { (label) }
                        } @else { "—" } }
                        td { (crate::pages::evidence_badge(&crate::model::code_of(&r.trust))) }
                        td { @if r.deployable { "yes" } @else { "no" } }
                        td { (ki_model::utc::date_of(&r.observed_at)) }
                    }
                } }
            }
            p.leaders { "Best verified: " (name(&c.best_verified)) " · #1: " (name(&c.fastest.first().cloned())) " · "
                (crate::pages::deployable_beside(c.fastest.first().map(Into::into), c.best_deployable.as_ref().map(Into::into))) }
        }
    }
}

/// The answer's mode in words.
fn mode_words(a: &ki_ranking::ResolveResponse) -> &'static str {
    match a.mode {
        ki_ranking::ResolveMode::Exact => "measured in one comparison group",
        ki_ranking::ResolveMode::Chooser => {
            "measured in several comparison groups (hardware, protocol or environment); pick one"
        }
        ki_ranking::ResolveMode::Browse if !a.nearest.is_empty() => "not measured; the nearest measured cases",
        ki_ranking::ResolveMode::Browse => "several cases match; the fastest of each",
        ki_ranking::ResolveMode::None => "nothing measured matches",
    }
}

pub fn render(form: &ResolveForm, answer: Option<&ki_ranking::ResolveResponse>, error: Option<&str>) -> Markup {
    let main = html! {
        h1 { "Resolve a workload" }
        p { "Name an operation and the values of its axes; the index answers with the fastest eligible runs of every comparison group that measured exactly that case, or the nearest measured cases on either side, saying which axes differ. "
            "Names are read as the search reads them: " code { "gqa paged decode" } " or " code { "rms norm" } " for an operation, " code { "H200" } " or " code { "H100 SXM" } " for a GPU, " code { "batch=32" } " for " code { "batch_size" } "." }
        form method="get" action="/resolve" {
            div.row { label for="r-op" { "Operation (name, slug, alias or words)" } input #r-op name="operation" required value=(form.operation) maxlength="200"; }
            div.row { label for="r-axes" { "Axes (name=value, comma-separated)" } input #r-axes name="axes" value=(form.axes) maxlength="2000" placeholder="batch_size=16, num_pages=1070"; }
            div.row { label for="r-dtypes" { "Dtypes (optional)" } input #r-dtypes name="dtypes" value=(form.dtypes) maxlength="200" placeholder="bf16"; }
            div.row { label for="r-hw" { "Hardware (optional)" } input #r-hw name="hardware" value=(form.hardware) maxlength="200" placeholder="H200"; }
            div.row { label for="r-fw" { "Framework (optional)" } input #r-fw name="framework" value=(form.framework) maxlength="200"; }
            button type="submit" { "Resolve" }
        }
        @if let Some(message) = error { p.banner role="alert" { (message) } }
        @if let Some(a) = answer {
            section #answer aria-labelledby="answer-h" {
                h2 #answer-h { "Answer: " (crate::model::code_of(&a.mode)) " — " (mode_words(a)) }
                @if !a.read_as.is_empty() {
                    ul #read-as aria-label="Read as" { @for r in &a.read_as { li { "Read " (r.field) " “" (r.given) "” as " strong { (r.read) } "." @if let Some(note) = &r.note { " " span.muted { (note) } } } } }
                }
                @if let Some(op) = &a.operation { p { "Operation " a href={ "/operations/" (op.slug) } { (op.name) } " · variable axes: " (op.variable_axes.join(", ")) } }
                @else {
                    p.banner role="status" { "No operation is named “" (a.request.operation) "”. "
                        a href={ "/?q=" (crate::model::percent_encode(&a.request.operation)) } { "Search for it" } " to see the operations its words match." }
                }
                @for n in &a.notes { p.muted { (n) } }
                @for c in &a.cohorts { (cohort_block(c)) }
                @if a.omitted_cohorts > 0 {
                    @let listed = a.cohorts.len();
                    @let more = (listed + a.omitted_cohorts).min(ki_ranking::resolve::MAX_COHORTS_PER_ANSWER);
                    p.muted { (a.omitted_cohorts) " more comparison groups not shown."
                        @if more > listed { " " a href=(form.href_with_limit(more)) { "List " (more) } "." } }
                }
                @if !a.nearest.is_empty() {
                    h2 { "Nearest measured cases" }
                    @for n in &a.nearest {
                        h3.nearest { (match n.side { ki_ranking::Side::Below => "Below", ki_ranking::Side::Above => "Above" }) ": "
                            (n.differs.iter().map(|d| format!("{} = {} (asked {})", d.axis, crate::model::scalar(&d.measured), crate::model::scalar(&d.asked))).collect::<Vec<_>>().join(", ")) }
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
        limit: trimmed(&form.limit),
    };
    if form.operation.is_empty() {
        return Ok(html_response(render(&form, None, None)));
    }
    let axes = match ki_ranking::query::parse_axes(&form.axes) {
        Ok(axes) => axes,
        Err(message) => return Ok(html_response(render(&form, None, Some(&message)))),
    };
    let limit = match form.limit.as_str() {
        "" => None,
        given => match given.parse::<usize>() {
            Ok(limit) => Some(limit),
            Err(_) => {
                let message = format!("limit takes a whole number of comparison groups, got {given:?}");
                return Ok(html_response(render(&form, None, Some(&message))));
            }
        },
    };
    let request = ki_ranking::ResolveRequest {
        operation: form.operation.clone(),
        axes,
        dtypes: ki_ranking::query::parse_dtypes(&form.dtypes),
        hardware: Some(form.hardware.clone()).filter(|h| !h.is_empty()),
        framework: Some(form.framework.clone()).filter(|f| !f.is_empty()),
        limit,
    };
    if let Err(err) = request.cohort_limit() {
        return Ok(html_response(render(&form, None, Some(&err.to_string()))));
    }
    let answer = model.judgement.resolve_read_at(&request, model.lexicon(), ki_ranking::Instant::now());
    Ok(html_response(render(&form, Some(&answer), None)))
}

pub async fn api(State(state): State<Shared>, body: Bytes) -> Answer {
    let request: ki_ranking::ResolveRequest = parse_json(&body, "a resolve request")?;
    request.cohort_limit().map_err(|e| Problem::bad_request(e.to_string()))?;
    let model = state.model();
    Ok(json_response(&model.judgement.resolve_read_at(&request, model.lexicon(), ki_ranking::Instant::now())))
}

impl crate::model::ReadModel {
    /// Each request read with the search's lexicon and answered (`Index::resolve_read_at`): the
    /// batch endpoint, `ki resolve` and the MCP tool.
    pub fn resolve_batch_read_at(
        &self,
        requests: &[ki_ranking::ResolveRequest],
        now: ki_ranking::Instant,
    ) -> Result<Vec<ki_ranking::ResolveResponse>, ki_ranking::BatchSizeError> {
        if requests.is_empty() || requests.len() > ki_ranking::resolve::MAX_BATCH {
            return Err(ki_ranking::BatchSizeError { given: requests.len() });
        }
        Ok(requests.iter().map(|r| self.judgement.resolve_read_at(r, self.lexicon(), now)).collect())
    }
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
    for (at, request) in input.requests.iter().enumerate() {
        request.cohort_limit().map_err(|e| Problem::bad_request(format!("/requests/{at}/limit: {e}")))?;
    }
    let model = state.model();
    let answers = model
        .resolve_batch_read_at(&input.requests, ki_ranking::Instant::now())
        .map_err(|e| Problem::bad_request(e.to_string()))?;
    Ok(json_response(&BatchAnswer { responses: answers }))
}
