//! The home page (`/`): search over operations, aliases, implementations and hardware,
//! the most-measured operations and the latest records; and `/api/v1/search`.

use axum::extract::Query;
use axum::extract::State;
use maud::{Markup, html};

use super::{Answer, PAGE_LIMIT, Shared, html_response, json_response, layout};
use crate::model::ReadModel;

// ---------- home ----------

pub fn render(model: &ReadModel, query: &str) -> Markup {
    let results = model.search(query, 100);
    let main = html! {
        h1 { "KernelIndex" }
        p { "The fastest verified kernel for your exact workload: " (model.runs.len()) " benchmark runs of "
            (model.operations.len()) " operations on " (model.runs_by_gpu.len()) " GPUs, ranked inside comparison groups that share operation, workload, protocol, environment and correctness rule." }
        form role="search" action="/" method="get" {
            label for="home-q" { "Search operations, aliases, implementations and hardware" }
            div { input #home-q type="search" name="q" value=(query) maxlength="200"; " " button type="submit" { "Search" } }
        }
        @if !query.is_empty() {
            section aria-labelledby="results-h" {
                h2 #results-h { (results.len()) " results for “" (query) "”" }
                ul.results { @for r in &results { li { span.badge { (r.kind) } " " a href=(r.href) { (r.label) } " " span.muted { (r.detail) } } } }
            }
        } @else {
            section aria-labelledby="ops-h" {
                h2 #ops-h { "Most-measured operations" }
                ul { @for o in model.operation_list(1).operations.iter().take(15) { li { a href=(o.href) { (o.title) } " · " (o.runs) " runs" } } }
                p { a href="/operations" { "All operations →" } }
            }
            section aria-labelledby="rec-h" {
                h2 #rec-h { "Latest records" }
                ul { @for r in model.record_list(1, 10).records { li {
                    (ki_model::utc::date_of(&r.at)) " · "
                    @if let Some(op) = &r.operation { a href=(op.href) { (op.label) } " · " }
                    @if let Some(h) = &r.holder { a href=(h.href) { (h.implementation) } " " (h.display) }
                } } }
                p { a href="/records" { "All records →" } }
            }
        }
    };
    layout("Search", main)
}

// ---------- home and search ----------

/// `?q=…`: what to search for (the first 200 characters count).
#[derive(Debug, Clone, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct SearchQuery {
    pub q: Option<String>,
}

/// What the search found.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct SearchAnswer<'a> {
    pub query: String,
    pub results: Vec<&'a crate::model::SearchEntry>,
}

impl SearchQuery {
    fn text(&self) -> String {
        self.q.as_deref().unwrap_or("").chars().take(200).collect()
    }
}

pub async fn page(State(state): State<Shared>, Query(q): Query<SearchQuery>) -> Answer {
    let model = state.model();
    Ok(html_response(render(&model, &q.text())))
}

pub async fn api_search(State(state): State<Shared>, Query(q): Query<SearchQuery>) -> Answer {
    let model = state.model();
    let query = q.text();
    let results = model.search(&query, PAGE_LIMIT);
    Ok(json_response(&SearchAnswer { query, results }))
}
