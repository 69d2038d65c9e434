//! The run list (`GET /api/v1/runs`): every run, filtered, a page at a time behind an opaque
//! cursor; computed by [`ki_ranking::feed::list_runs`], which `ki runs` calls too.

use axum::extract::Query;
use axum::extract::State;
use ki_ranking::feed::{FeedError, PageRequest, RunFilter, RunPage};
use serde::Deserialize;

use super::{Answer, Shared, json_response};
use crate::problem::{FieldProblem, Problem};

/// The list's query: its filters (each one given must match) and the page.
#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunsQuery {
    /// An operation's name, slug or alias.
    #[schemars(length(max = 300))]
    pub operation: Option<String>,
    /// A workload's id or digest.
    #[schemars(length(max = 300))]
    pub workload: Option<String>,
    /// A hardware model (`NVIDIA H200`), ignoring case.
    #[schemars(length(max = 300))]
    pub hardware: Option<String>,
    /// reported, reproducible, verified or replicated.
    #[schemars(extend("enum" = ["", "reported", "reproducible", "verified", "replicated"]))]
    pub evidence: Option<String>,
    /// A source's slug, name or id.
    #[schemars(length(max = 300))]
    pub source: Option<String>,
    /// An implementation's slug or id.
    #[schemars(length(max = 300))]
    pub implementation: Option<String>,
    /// The run's recorded status (`passed`, `incorrect_numerical`, …).
    #[schemars(length(max = 300))]
    pub status: Option<String>,
    /// `nextCursor` of the previous page (opaque: a cursor this list did not give out is refused).
    #[schemars(regex(pattern = "^[0-9a-f]+$"))]
    pub cursor: Option<String>,
    /// 1 to 1000 runs per page (default 100).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

impl RunsQuery {
    fn split(self) -> (RunFilter, PageRequest) {
        let filter = RunFilter {
            operation: self.operation,
            workload: self.workload,
            hardware: self.hardware,
            evidence: self.evidence,
            source: self.source,
            implementation: self.implementation,
            status: self.status,
        };
        (filter, PageRequest { cursor: self.cursor, limit: self.limit })
    }
}

/// A list or feed request that cannot be answered, naming the query parameter.
pub fn feed_problem(error: FeedError) -> Problem {
    let pointer = format!("/{}", error.parameter());
    let mut problem = match &error {
        FeedError::NotFound { .. } => Problem::not_found(error.to_string()),
        FeedError::InvalidParameter { .. } => Problem::bad_request(error.to_string()),
    };
    problem.errors = vec![FieldProblem { pointer, detail: error.to_string() }];
    problem
}

pub fn run_page(state: &crate::AppState, query: RunsQuery) -> Result<RunPage, Problem> {
    let (filter, page) = query.split();
    ki_ranking::feed::list_runs(&state.model().judgement, &filter, &page).map_err(feed_problem)
}

pub async fn api(State(state): State<Shared>, Query(query): Query<RunsQuery>) -> Answer {
    Ok(json_response(&run_page(&state, query)?))
}
