//! The change feed's events the catalog keeps beside the index's rows: corrections, and
//! verification jobs that ended (done or parked). The server's `GET /api/v1/feed` and
//! `ki changes` both read them here, on each request, so every replica reports the same;
//! ordering and paging are `ki_ranking::feed::feed_page`'s.

use ki_ranking::feed::{CorrectionChange, FeedEvent, FeedItem, VerificationChange};

use crate::Catalog;
use crate::queue::{JobQuery, JobState, QueueError};

/// Most finished jobs of each final state the feed reads.
pub const MAX_FEED_JOBS: u32 = 10_000;

impl Catalog {
    /// Every correction and every finished verification job, as feed events, in no order.
    pub async fn feed_events(&self) -> Result<Vec<FeedItem>, QueueError> {
        let mut events = Vec::new();
        for correction in self.corrections().await? {
            events.push(FeedItem {
                at: correction.at.clone(),
                event: FeedEvent::Correction(CorrectionChange {
                    correction_id: correction.id,
                    action: correction.action.as_str().to_string(),
                    run_id: correction.run_id,
                    by_run_id: correction.by_run_id,
                    reason: correction.reason,
                    actor: correction.actor,
                }),
            });
        }
        for state in [JobState::Done, JobState::Parked] {
            let query = JobQuery { state: Some(state), limit: Some(MAX_FEED_JOBS), ..JobQuery::default() };
            for job in self.jobs(&query).await? {
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
}
