//! The change feed (`GET /api/v1/feed?since=TIME`): record events, publications,
//! corrections and finished verifications strictly after `since`, oldest first, a page at a
//! time. The index's own events come from the read model; corrections and verifications are
//! read from the catalog on each request, so every replica reports the same. Ordered and
//! paged by [`ki_ranking::feed::feed_page`], which `ki changes` calls too.

use axum::extract::Query;
use axum::extract::State;
use ki_ranking::feed::{FeedItem, FeedPage, PageRequest};
use serde::Deserialize;

use super::run_list::feed_problem;
use super::{Answer, Shared, json_response};
use crate::AppState;
use crate::problem::Problem;

#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedQuery {
    /// RFC 3339 (`2026-12-01T00:00:00Z`): events strictly after it; absent: from the start.
    #[schemars(regex(
        pattern = r"^$|^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?(Z|[+-][0-9]{2}:[0-9]{2})$"
    ))]
    pub since: Option<String>,
    /// `nextCursor` of the previous page, with the same `since` (opaque: a cursor this feed
    /// did not give out is refused).
    #[schemars(regex(pattern = "^[0-9a-f]+$"))]
    pub cursor: Option<String>,
    /// 1 to 1000 events per page (default 100).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<usize>,
}

/// Every event the index knows of, in no particular order.
pub async fn all_events(state: &AppState) -> Result<Vec<FeedItem>, Problem> {
    let mut events = ki_ranking::feed::index_events(&state.model().judgement);
    let internal = |e: &dyn std::fmt::Display| Problem::internal(format!("cannot read the catalog: {e}"));
    events.extend(state.catalog.feed_events().await.map_err(|e| internal(&e))?);
    Ok(events)
}

pub async fn feed(state: &AppState, mut query: FeedQuery) -> Result<FeedPage, Problem> {
    // `since=` (empty) is no `since`, as the other filters treat an empty value.
    query.since = query.since.filter(|s| !s.trim().is_empty());
    let page = PageRequest { cursor: query.cursor, limit: query.limit };
    // Checked before the catalog is read.
    if let Some(since) = &query.since {
        ki_ranking::feed::parse_since(since).map_err(feed_problem)?;
    }
    let events = all_events(state).await?;
    ki_ranking::feed::feed_page(events, query.since.as_deref(), &page).map_err(feed_problem)
}

pub async fn api(State(state): State<Shared>, Query(query): Query<FeedQuery>) -> Answer {
    Ok(json_response(&feed(&state, query).await?))
}
