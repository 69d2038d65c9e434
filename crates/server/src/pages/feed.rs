//! The change feed (`GET /api/v1/feed?since=TIME`): record events, publications,
//! corrections and finished verifications strictly after `since`, oldest first, a page at a
//! time. The index's own events come from the read model; corrections and verifications are
//! read from the catalog on each request, so every replica reports the same. Ordered and
//! paged by [`ki_ranking::feed::feed_page`], which `ki changes` calls too.

use axum::extract::Query;
use axum::extract::State;
use ki_catalog::queue::{JobQuery, JobState};
use ki_ranking::feed::{CorrectionChange, FeedEvent, FeedItem, FeedPage, PageRequest, VerificationChange};
use serde::Deserialize;

use super::run_list::feed_problem;
use super::{Answer, Shared, code_of, json_response};
use crate::AppState;
use crate::problem::Problem;

/// Most finished jobs of each final state the feed reads.
const MAX_JOBS: u32 = 10_000;

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
    for correction in state.catalog.corrections().await.map_err(|e| internal(&e))? {
        events.push(FeedItem {
            at: correction.at.clone(),
            event: FeedEvent::Correction(CorrectionChange {
                correction_id: correction.id,
                action: code_of(&correction.action),
                run_id: correction.run_id,
                by_run_id: correction.by_run_id,
                reason: correction.reason,
                actor: correction.actor,
            }),
        });
    }
    for state_wanted in [JobState::Done, JobState::Parked] {
        let query = JobQuery { state: Some(state_wanted), limit: Some(MAX_JOBS), ..JobQuery::default() };
        for job in state.catalog.jobs(&query).await.map_err(|e| internal(&e))? {
            let Some(at) = job.finished_at.clone() else { continue };
            events.push(FeedItem {
                at,
                event: FeedEvent::Verification(VerificationChange {
                    href: format!("/verifications/{}", job.id),
                    state: job.state.as_str().to_string(),
                    subject: job.spec.subject.label().to_string(),
                    verdict: job.verdict.as_ref().map(|v| v.status.as_str().to_string()),
                    summary: job.verdict.as_ref().map(|v| v.summary.clone()).or(job.parked_reason.clone()),
                    run_ids: job.published.as_ref().map(|p| p.run_ids.clone()).unwrap_or_default(),
                    job_id: job.id,
                }),
            });
        }
    }
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
