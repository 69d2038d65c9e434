//! The home page (`/`): the search box (answered by [`super::search`]), the most-measured
//! operations and the latest records; and `/api/v1/search`.

use axum::extract::Query;
use axum::extract::State;
use maud::{Markup, html};

use super::{Answer, Shared, catalog_problem, html_response, json_response, layout};
use crate::model::PAGE_LIMIT;
use crate::model::ReadModel;

// ---------- home ----------

pub fn render(model: &ReadModel, query: &str, results: Option<&super::search::SearchAnswer>) -> Markup {
    let main = html! {
        h1 { "KernelIndex" }
        p { "The fastest verified kernel for your exact workload: " (model.judgement.runs.len()) " benchmark runs of "
            (model.judgement.operations.len()) " operations on " (model.runs_by_gpu.len()) " GPUs, ranked inside comparison groups that share operation, workload, protocol, environment and correctness rule." }
        form role="search" action="/" method="get" {
            label for="home-q" { "Search operations, implementations, GPUs and runs" }
            div { input #home-q type="search" name="q" value=(query) maxlength="200" placeholder="gqa decode h200 batch 16"; " " button type="submit" { "Search" } }
            p.muted { "Plain words: an operation or its common name (“rms norm”, “matmul”), a GPU (“h200”), a model (“llama 3.1 8b”), a dtype, a project (“flashinfer”), axes (“batch 16”, “hidden 4096”), “verified”; or filters ("
                (ki_ranking::query::Filter::ALL.iter().map(|f| format!("{}:", f.name())).collect::<Vec<_>>().join(" ")) ") and axes (batch_size=16); run ids, digests and external ids find their run. " a href="/docs#search" { "The search grammar" } }
        }
        @if let Some(results) = results {
            (super::search::render_results(results))
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
                    @if let Some(h) = &r.holder { a href=(h.href) { (h.implementation) } " " span.value { (h.display) } }
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

impl SearchQuery {
    fn text(&self) -> String {
        self.q.as_deref().unwrap_or("").chars().take(200).collect()
    }
}

/// Results the home page lists under a query.
const PAGE_RESULTS: usize = 100;

pub async fn page(State(state): State<Shared>, Query(q): Query<SearchQuery>) -> Answer {
    let model = state.model();
    let query = q.text();
    let results = if query.trim().is_empty() {
        None
    } else {
        Some(model.search_answer(&state.catalog, &query, PAGE_RESULTS).await.map_err(catalog_problem)?)
    };
    Ok(html_response(render(&model, &query, results.as_ref())))
}

pub async fn api_search(State(state): State<Shared>, Query(q): Query<SearchQuery>) -> Answer {
    let model = state.model();
    let answer = model.search_answer(&state.catalog, &q.text(), PAGE_LIMIT).await.map_err(catalog_problem)?;
    Ok(json_response(&answer))
}
