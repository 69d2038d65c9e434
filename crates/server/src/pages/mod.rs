//! The web, one module per page (or API resource): each holds its view model (plain
//! serializable data; the HTML renders it and the JSON twin serializes the very same
//! value), its maud template, and its axum handlers. This module holds what pages share:
//! the layout, small templates and the handler helpers (links, fields and run summaries are the
//! read model's, [`crate::model`]). A run's dossier is built in [`crate::dossier`].
//!
//! Templates are maud: every interpolated string is escaped, so source and submitter
//! text can never become markup. No page carries inline script or style (the CSP forbids
//! both); `/static/site.js` only adds conveniences (copy buttons) to pages that work
//! without it.

use std::sync::Arc;

use axum::http::header;
use axum::response::{IntoResponse, Response};
use maud::{DOCTYPE, Markup, PreEscaped, html};

use crate::AppState;
use crate::model::{Field, ReadModel, RunSummary, gpu_href};
use crate::problem::Problem;
use ki_catalog::{CatalogError, KeyRefusal};

pub mod compare;
pub mod docs;
pub mod exports;
pub mod feed;
pub mod gpu;
pub mod gpus;
pub mod home;
pub mod implementation;
pub mod models;
pub mod operation;
pub mod project;
pub mod records;
pub mod resolve;
pub mod run;
pub mod run_list;
pub mod search;
pub mod serving;
pub mod source;
pub mod submission;
pub mod verifications;

pub type Shared = Arc<AppState>;

pub type Answer = Result<Response, Problem>;

pub const SITE_CSS: &str = include_str!("../../assets/site.css");

pub const SITE_JS: &str = include_str!("../../assets/site.js");

pub fn layout(title: &str, main: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · KernelIndex" }
                link rel="stylesheet" href="/static/site.css";
                link rel="alternate" type="application/atom+xml" title="KernelIndex records" href="/records.atom";
                script src="/static/site.js" defer {}
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.site {
                    a.brand href="/" { "KernelIndex" }
                    nav aria-label="Main" {
                        ul {
                            li { a href="/resolve" { "Resolve" } }
                            li { a href="/records" { "Records" } }
                            li { a href="/projects" { "Projects" } }
                            li { a href="/gpus" { "GPUs" } }
                            li { a href="/models" { "Models" } }
                            li { a href="/serving" { "Serving" } }
                            li { a href="/verifications" { "Verifications" } }
                            li { a href="/docs" { "Docs" } }
                        }
                    }
                    form.search role="search" action="/" method="get" {
                        label for="site-q" { "Search" }
                        input #site-q type="search" name="q" maxlength="200" placeholder="operation, alias, implementation, GPU";
                        button type="submit" { "Go" }
                    }
                }
                main #main { (main) }
                footer.site {
                    p { "KernelIndex — an index of GPU-kernel benchmark runs. Records are "
                        code { "kernelindex.dev/v1alpha1" } " manifests known by their sha256 content digest. "
                        a href="/docs" { "How ranking works" } " · " a href="/api/v1/openapi.json" { "API" } }
                }
            }
        }
    }
}

pub fn error_page(problem: &Problem) -> (axum::http::StatusCode, Markup) {
    let body = layout(
        &problem.title,
        html! {
            h1 { (problem.title) }
            p { (problem.detail) }
            @if let Some(id) = &problem.request_id { p.muted { "Request id " code { (id) } } }
            p { a href="/" { "Back to the index" } }
        },
    );
    (problem.status_code(), body)
}

pub fn field_list(fields: &[Field]) -> Markup {
    html! {
        dl.fields {
            @for f in fields {
                div {
                    dt { (f.label) }
                    dd {
                        @if f.code {
                            code { (f.value) }
                            " " button.copy type="button" data-copy=(f.value) aria-label={ "Copy " (f.label) } { "Copy" }
                        } @else if let Some(href) = &f.href {
                            a href=(href) { (f.value) }
                        } @else {
                            (f.value)
                        }
                    }
                }
            }
        }
    }
}

pub fn section(id: &str, title: &str, body: Markup) -> Markup {
    html! {
        section id=(id) aria-labelledby={ (id) "-h" } {
            h2 id={ (id) "-h" } { (title) }
            (body)
        }
    }
}

/// Raw markup from trusted server code (the SVG chart), never from data.
pub fn trusted(markup: String) -> PreEscaped<String> {
    PreEscaped(markup)
}

// ---------- shared bits ----------

pub fn pager(base: &str, page: usize, pages: usize) -> Markup {
    let sep = if base.contains('?') { '&' } else { '?' };
    html! {
        @if pages > 1 {
            nav.pager aria-label="Pages" {
                @if page > 1 { a href={ (base) (sep) "page=" (page - 1) } rel="prev" { "← Previous" } }
                span { "Page " (page) " of " (pages) }
                @if page < pages { a href={ (base) (sep) "page=" (page + 1) } rel="next" { "Next →" } }
            }
        }
    }
}

/// Runs with their rank, implementation (linked to the run), value and evidence; the run's id,
/// GPU and date are secondary columns (`opt`), which a phone hides so the rest fits its width.
pub fn runs_table(caption: &str, runs: &[RunSummary]) -> Markup {
    html! {
        table.leaderboard {
            caption { (caption) }
            thead { tr {
                th scope="col" class="num" { "rank" } th scope="col" { "implementation" }
                th scope="col" class="num" { "value" } th scope="col" { "evidence" }
                th scope="col" class="opt" { "run" } th scope="col" class="opt" { "hardware" } th scope="col" class="opt" { "observed" }
            } }
            tbody { @for r in runs { tr {
                td.num { @if let Some(rank) = r.rank { (rank) } @else { "—" } }
                td { a href=(r.href) { @if r.implementation.is_empty() { (r.short_id) } @else { (r.implementation) } } }
                td.num { (r.display) " " span.muted { (r.statistic) } }
                td { (evidence_badge(&r.trust)) }
                td.opt { a href=(r.href) { (r.short_id) } }
                td.opt { (gpu_link(&r.hardware)) }
                td.opt { (ki_model::utc::date_of(&r.observed_at)) }
            } } }
        }
    }
}

/// The class that gives an evidence level its colour (`ev-verified`); `level` is a
/// `TrustLevel` name (reported, reproducible, verified, replicated).
pub fn evidence_class(level: &str) -> String {
    format!("ev-{level}")
}

/// What an evidence level means (`/docs#evidence` lists them; a badge's hover title).
pub fn evidence_meaning(level: &str) -> &'static str {
    match level {
        "replicated" => "at least two independent replications",
        "verified" => "reproduced by KernelIndex's own runner",
        "reproducible" => "source available and raw evidence present",
        "reported" => "the source's claim",
        _ => "",
    }
}

/// An evidence level as a badge in its colour (verified and replicated stand out), its
/// meaning as the hover title.
pub fn evidence_badge(level: &str) -> Markup {
    html! { span.badge.(evidence_class(level)) title=(evidence_meaning(level)) { (level) } }
}

/// Statuses a verifier gives a run it refuses to publish as a measurement (the others that are
/// not `passed` are failures).
const REFUSED_STATUSES: [&str; 3] = ["suspected_reward_hack", "policy_violation", "revoked"];

/// Why a run is not ranked, in a word or two: its status, "retracted", "superseded", …
fn ineligibility_word(reason: &ki_ranking::Ineligibility) -> String {
    match reason {
        ki_ranking::Ineligibility::Status(status) => status.clone(),
        ki_ranking::Ineligibility::Retracted => "retracted".into(),
        ki_ranking::Ineligibility::Superseded { .. } => "superseded".into(),
        ki_ranking::Ineligibility::Unpublished => "unpublished".into(),
        ki_ranking::Ineligibility::MissingPrimaryMetric => "no primary metric".into(),
    }
}

impl ReadModel {
    /// Why none of `runs` is ranked, counted by each run's first reason: "4 runs, all refused:
    /// suspected_reward_hack", "5 runs, all failed: 3 runtime_error, 2 timeout", "3 runs, none
    /// ranked: 2 retracted, 1 runtime_error". None when `runs` is empty or one of them is ranked.
    pub fn why_none_eligible(&self, runs: &[usize]) -> Option<String> {
        let facts = &self.judgement.facts;
        if runs.is_empty() || runs.iter().any(|&r| facts[r].eligible()) {
            return None;
        }
        let mut reasons: Vec<(String, usize)> = Vec::new();
        let (mut refused, mut failed) = (true, true);
        for &r in runs {
            let first = facts[r].ineligibility().first();
            let is_status = matches!(first, Some(ki_ranking::Ineligibility::Status(_)));
            let word = first.map(ineligibility_word).unwrap_or_else(|| "not ranked".into());
            refused &= is_status && REFUSED_STATUSES.contains(&word.as_str());
            failed &= is_status && !REFUSED_STATUSES.contains(&word.as_str());
            match reasons.iter_mut().find(|(w, _)| *w == word) {
                Some((_, count)) => *count += 1,
                None => reasons.push((word, 1)),
            }
        }
        reasons.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let verdict = if refused {
            "all refused"
        } else if failed {
            "all failed"
        } else {
            "none ranked"
        };
        let listed = if reasons.len() == 1 {
            reasons[0].0.clone()
        } else {
            reasons.iter().map(|(word, count)| format!("{count} {word}")).collect::<Vec<_>>().join(", ")
        };
        let noun = if runs.len() == 1 { "run" } else { "runs" };
        let verdict = if runs.len() == 1 {
            verdict.replace("all ", "").replace("none ranked", "not ranked")
        } else {
            verdict.into()
        };
        Some(format!("{} {noun}, {verdict}: {listed}", runs.len()))
    }
}

impl ReadModel {
    /// The fastest deployable eligible run of the comparison group with this key (see
    /// [`deployable_beside`]).
    pub fn best_deployable(&self, comparison_key: &str) -> Option<RunSummary> {
        self.judgement.best_deployable_in(comparison_key).map(|run| self.run_summary(run))
    }
}

/// A run a "best deployable" note names: its id, implementation, value with its unit and rank.
pub struct NamedRun<'a> {
    pub id: &'a str,
    pub implementation: &'a str,
    pub display: String,
    pub rank: Option<u32>,
}

impl<'a> From<&'a RunSummary> for NamedRun<'a> {
    fn from(r: &'a RunSummary) -> Self {
        NamedRun { id: &r.id, implementation: &r.implementation, display: r.display.clone(), rank: r.rank }
    }
}

impl<'a> From<&'a ki_ranking::RunSummary> for NamedRun<'a> {
    fn from(r: &'a ki_ranking::RunSummary) -> Self {
        NamedRun {
            id: &r.run_id,
            implementation: &r.implementation,
            display: ki_model::units::value(r.value, r.unit.as_deref()),
            rank: r.rank,
        }
    }
}

/// What every page that names a fastest run says beside it (issue 34): that it is deployable
/// itself, or the group's best deployable run (public source, permissive licence, install
/// recipe), or that the group has none. A deployable run that shares the fastest's rank (a tie:
/// equal values or overlapping intervals, ranking-v1) is said to tie with it, since its value may
/// be the lower of the two.
pub fn deployable_beside(fastest: Option<NamedRun<'_>>, deployable: Option<NamedRun<'_>>) -> Markup {
    let tied = |f: &NamedRun<'_>, d: &NamedRun<'_>| f.rank.is_some() && f.rank == d.rank;
    html! {
        span.deployable {
            @match (fastest, deployable) {
                (Some(f), Some(d)) if f.id == d.id => { "deployable" }
                (Some(f), Some(d)) if tied(&f, &d) => {
                    "best deployable, tied at #" (d.rank.unwrap_or(1)) ": " a href={ "/runs/" (d.id) } { (d.implementation) } " " span.value { (d.display) }
                }
                (_, Some(d)) => { "best deployable: " a href={ "/runs/" (d.id) } { (d.implementation) } " " span.value { (d.display) } }
                (_, None) => { "best deployable: none in this group" }
            }
        }
    }
}

impl ReadModel {
    pub fn summaries(&self, runs: impl IntoIterator<Item = usize>) -> Vec<RunSummary> {
        runs.into_iter().map(|r| self.run_summary(r)).collect()
    }
}

/// A GPU model's name linking to its page; a name with no slug (empty, or no letter or
/// digit) stays plain text.
pub fn gpu_link(model: &str) -> Markup {
    html! {
        @if crate::model::slugify(model).is_empty() { (model) } @else { a href=(gpu_href(model)) { (model) } }
    }
}

pub fn pages_for(total: usize, per_page: usize) -> usize {
    total.div_ceil(per_page).max(1)
}

// ---------- helpers ----------

pub fn html_response(markup: maud::Markup) -> Response {
    axum::response::Html(markup.into_string()).into_response()
}

pub fn json_response<T: serde::Serialize>(value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => Problem::internal(format!("cannot serialize: {e}")).into_response(),
    }
}

/// `?page=N` of a paged list (1 when absent; a page past the last shows the last).
#[derive(Debug, Clone, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct PageQuery {
    #[serde(default, deserialize_with = "page_number")]
    #[schemars(extend("maximum" = 18_446_744_073_709_551_615_u64))]
    pub page: Option<usize>,
}

/// A page number as the schema says: digits. `?page=` (empty) is refused like `?page=x`,
/// not read as absent.
fn page_number<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<usize>, D::Error> {
    let text = <String as serde::Deserialize>::deserialize(deserializer)?;
    text.parse::<usize>()
        .map(Some)
        .map_err(|_| serde::de::Error::custom(format!("page takes a whole number from 1, got {text:?}")))
}

impl PageQuery {
    pub fn number(&self) -> usize {
        self.page.unwrap_or(1).clamp(1, 100_000)
    }
}

/// A JSON body read by the one strict reader (`ki_model::parse::parse_json`: a duplicate key is
/// refused, not resolved to its last value), then as `T`.
pub fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8], what: &str) -> Result<T, Problem> {
    let document = ki_model::parse::parse_json(body)
        .map_err(|problem| Problem::bad_request(format!("the body must be {what}: {problem}")))?;
    serde_json::from_value(document).map_err(|e| Problem::bad_request(format!("the body must be {what}: {e}")))
}

pub fn find_operation(model: &ReadModel, slug: &str) -> Result<usize, Problem> {
    model.find_operation(slug).ok_or_else(|| Problem::not_found(format!("no operation {slug:?}")))
}

pub fn refusal_problem(refusal: KeyRefusal) -> Problem {
    match refusal {
        KeyRefusal::NoKey => Problem::unauthorized("send an API key as `Authorization: Bearer ki_…`"),
        KeyRefusal::UnknownKey => Problem::unauthorized("the API key is unknown or revoked"),
        KeyRefusal::MissingScope(scope) => {
            Problem::forbidden(format!("the API key lacks the {} scope", scope.as_str()))
        }
        KeyRefusal::QuotaExceeded => Problem::quota_exceeded(ki_model::utc::seconds_to_midnight()),
    }
}

/// A catalog error as the problem a client gets: a refused key as 401/403/429, anything
/// else as an internal error.
pub fn catalog_problem(error: CatalogError) -> Problem {
    match error {
        CatalogError::KeyRefused(refusal) => refusal_problem(refusal),
        other => Problem::internal(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::{NamedRun, deployable_beside};

    fn run<'a>(id: &'a str, rank: u32, display: &str) -> NamedRun<'a> {
        NamedRun { id, implementation: id, display: display.into(), rank: Some(rank) }
    }

    /// The deployable note: the fastest itself, one tied with it (whose value may be the lower),
    /// one ranked below, or none.
    #[test]
    fn the_deployable_note_says_when_it_ties_with_the_fastest() {
        let note = |f, d| deployable_beside(f, d).into_string();
        assert!(note(Some(run("a", 1, "2.53 µs")), Some(run("a", 1, "2.53 µs"))).contains(">deployable<"));
        let tied = note(Some(run("a", 1, "2.53 µs")), Some(run("b", 1, "2.43 µs")));
        assert!(tied.contains("best deployable, tied at #1: ") && tied.contains("2.43 µs"), "{tied}");
        let below = note(Some(run("a", 1, "2.53 µs")), Some(run("b", 3, "9.1 µs")));
        assert!(below.contains("best deployable: ") && !below.contains("tied"), "{below}");
        assert!(note(Some(run("a", 1, "1 µs")), None).contains("none in this group"));
    }
}
