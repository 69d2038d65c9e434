//! The worker loop: claim a job, run it through an [`Executor`] while a timer renews the
//! lease, then publish (complete) or record the failure. The same loop runs one worker on a
//! laptop against SQLite and each worker of a fleet against one PostgreSQL.

use std::future::Future;
use std::time::Duration;

use serde::Serialize;

use super::{ClaimedJob, Completion, JobState, QueueError, RegisteredWorker, Verdict};
use crate::error::{CatalogError, Refusal};
use crate::{Catalog, ExportLine};

/// What a job produced: its records, in the export format (`{table, row}` lines, parents
/// the catalog lacks included), and its verdict. Published together by
/// [`Catalog::complete`].
#[derive(Debug, Clone)]
pub struct JobOutcome {
    pub lines: Vec<ExportLine>,
    pub verdict: Verdict,
}

/// The job could not be run here, through no fault of the job: no GPU, a driver or CUDA
/// error, a full disk, a toolchain that is missing. Counted against the job; it is parked
/// after its limit. A job that runs and fails (wrong answers, a compile error of its own
/// code, a hang, a refused cheat) is a [`Verdict`], not this.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvironmentFailure {
    pub reason: String,
}

impl EnvironmentFailure {
    pub fn new(reason: impl Into<String>) -> EnvironmentFailure {
        EnvironmentFailure { reason: reason.into() }
    }
}

impl std::fmt::Display for EnvironmentFailure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.reason)
    }
}

/// Runs verification jobs. The real one is the verification runner (`ki verify`);
/// [`super::FixtureExecutor`] is the queue's test executor.
///
/// Inputs: the claimed job ([`ClaimedJob::job`]'s spec: the solution or implementation,
/// the workload set, the protocol, and [`ClaimedJob::claimed_at_ms`]). Outputs: the
/// records and the verdict, or an environment failure.
///
/// The future is dropped when the job's lease is lost or the worker is stopped: an executor
/// that starts processes must end them when dropped (e.g. `tokio::process::Command::
/// kill_on_drop`). It must not block the async runtime (the lease is renewed on it): blocking
/// work belongs in a child process or `tokio::task::spawn_blocking`. Records should be
/// observed (their `observedAt`) after the claim: jobs of one lane run one at a time, which
/// keeps their runs in observation order.
pub trait Executor: Send + Sync {
    fn execute(&self, job: &ClaimedJob) -> impl Future<Output = Result<JobOutcome, EnvironmentFailure>> + Send;
}

/// When a worker stops by itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopWhen {
    /// Never: wait for work until stopped.
    Never,
    /// As soon as it finds nothing to claim.
    Idle,
    /// When no job is pending or running (a running job whose worker died is still waited
    /// for: its lease will expire and this worker takes it over).
    Drained,
}

#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// How long a claim or renewal holds a job; renewed every third of it.
    pub lease: Duration,
    /// How long to wait before looking again when nothing could be claimed.
    pub poll: Duration,
    /// How long a job waits after an environment failure before it can be claimed again.
    pub retry_delay: Duration,
    pub stop: StopWhen,
    /// Stop after claiming this many jobs.
    pub max_jobs: Option<u64>,
}

impl Default for WorkerOptions {
    fn default() -> WorkerOptions {
        WorkerOptions {
            lease: Duration::from_secs(120),
            poll: Duration::from_secs(5),
            retry_delay: Duration::from_secs(30),
            stop: StopWhen::Never,
            max_jobs: None,
        }
    }
}

/// What happened to a job on this worker, as it happens.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum WorkerEvent {
    Claimed { job_id: String, attempt: u32, subject: String, workloads: usize },
    Completed { job_id: String, attempt: u32, verdict: String, runs: usize, record_events: usize },
    Failed { job_id: String, attempt: u32, reason: String, now: JobState },
    Released { job_id: String, attempt: u32, note: String },
    LeaseLost { job_id: String, attempt: u32, message: String },
}

/// Jobs this worker handled, by how they ended here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkerReport {
    pub claimed: u64,
    pub completed: u64,
    pub failed: u64,
    pub released: u64,
    pub lost: u64,
}

/// Runs jobs until `options.stop` says so, `options.max_jobs` are claimed, or `shutdown`
/// completes (a job in hand is then given back). Reports each step to `on_event`.
///
/// Errors of the queue itself (the database went away: a claim failed five times in a row,
/// or a completion could not be written) end the loop with the error; a job in hand is then
/// taken back by another worker when its lease runs out.
pub async fn run_worker<E: Executor>(
    catalog: &Catalog,
    worker: &RegisteredWorker,
    executor: &E,
    options: &WorkerOptions,
    shutdown: impl Future<Output = ()> + Send,
    on_event: &mut (dyn FnMut(&WorkerEvent) + Send),
) -> Result<WorkerReport, QueueError> {
    const MAX_FAILED_CLAIMS: u32 = 5;
    let mut shutdown = std::pin::pin!(shutdown);
    let mut report = WorkerReport::default();
    let mut failed_claims = 0;
    loop {
        if options.max_jobs.is_some_and(|max| report.claimed >= max) {
            return Ok(report);
        }
        let claimed = tokio::select! {
            _ = &mut shutdown => return Ok(report),
            claimed = catalog.claim(worker, options.lease) => claimed,
        };
        // A database hiccup (a dropped connection, a deadlock another claimer broke) is
        // tried again a few times before the worker gives up.
        let claimed = match claimed {
            Ok(claimed) => {
                failed_claims = 0;
                claimed
            }
            Err(QueueError::Catalog(error @ CatalogError::Database { .. })) if failed_claims < MAX_FAILED_CLAIMS => {
                failed_claims += 1;
                tracing::warn!("cannot claim a job (try {failed_claims} of {MAX_FAILED_CLAIMS}): {error}");
                tokio::select! {
                    _ = &mut shutdown => return Ok(report),
                    _ = tokio::time::sleep(options.poll) => continue,
                }
            }
            Err(error) => return Err(error),
        };
        let Some(job) = claimed else {
            let stop = match options.stop {
                StopWhen::Never => false,
                StopWhen::Idle => true,
                StopWhen::Drained => catalog.queue_summary().await?.active() == 0,
            };
            if stop {
                return Ok(report);
            }
            tokio::select! {
                _ = &mut shutdown => return Ok(report),
                _ = tokio::time::sleep(options.poll) => continue,
            }
        };
        report.claimed += 1;
        let (job_id, attempt) = (job.job.id.clone(), job.lease.attempt);
        on_event(&WorkerEvent::Claimed {
            job_id: job_id.clone(),
            attempt,
            subject: job.job.spec.subject.label().to_string(),
            workloads: job.job.spec.workloads.workloads.len(),
        });
        let lost = |message: String| WorkerEvent::LeaseLost { job_id: job_id.clone(), attempt, message };
        let renew_every = (job.lease.duration / 3).max(Duration::from_millis(100));
        let mut renewal = tokio::time::interval_at(tokio::time::Instant::now() + renew_every, renew_every);
        renewal.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let execution = executor.execute(&job);
        let mut execution = std::pin::pin!(execution);
        let result = loop {
            tokio::select! {
                result = &mut execution => break Some(result),
                _ = renewal.tick() => match catalog.renew(&job.lease).await {
                    Ok(_) => {}
                    Err(QueueError::LeaseLost { .. } | QueueError::UnknownJob(_)) => break None,
                    // A renewal that fails for the database's sake is tried again at the next
                    // tick; if the lease runs out meanwhile, completion is refused.
                    Err(error) => tracing::warn!("job {job_id}: cannot renew the lease: {error}"),
                },
                _ = &mut shutdown => {
                    match catalog.release(&job.lease, "the worker was stopped").await {
                        Ok(()) => {
                            report.released += 1;
                            on_event(&WorkerEvent::Released { job_id: job_id.clone(), attempt, note: "the worker was stopped".into() });
                        }
                        Err(QueueError::LeaseLost { now, .. }) => {
                            report.lost += 1;
                            on_event(&lost(now));
                        }
                        Err(error) => return Err(error),
                    }
                    return Ok(report);
                }
            }
        };
        let Some(result) = result else {
            report.lost += 1;
            on_event(&lost("the lease could not be renewed: another worker holds the job".into()));
            continue;
        };
        let failure = match result {
            Ok(outcome) => match catalog.complete(&job.lease, &outcome).await {
                Ok(Completion { verdict, published, .. }) => {
                    report.completed += 1;
                    on_event(&WorkerEvent::Completed {
                        job_id: job_id.clone(),
                        attempt,
                        verdict: verdict.status.as_str().to_string(),
                        runs: published.run_ids.len(),
                        record_events: published.record_events.len(),
                    });
                    continue;
                }
                Err(QueueError::LeaseLost { now, .. }) => {
                    report.lost += 1;
                    on_event(&lost(now));
                    continue;
                }
                Err(QueueError::Publication { error, .. })
                    if matches!(*error, CatalogError::Refused(Refusal::RewritesHistory { .. })) =>
                {
                    // A run of the same comparison group observed later was published first
                    // (jobs of different lanes can share a group); a fresh run of this job
                    // will be observed after it.
                    let note = format!("run again: {error}");
                    catalog.release(&job.lease, &note).await?;
                    report.released += 1;
                    on_event(&WorkerEvent::Released { job_id: job_id.clone(), attempt, note });
                    continue;
                }
                Err(QueueError::Publication { error, .. }) => {
                    EnvironmentFailure::new(format!("the executor's records were refused: {error}"))
                }
                Err(error) => return Err(error),
            },
            Err(failure) => failure,
        };
        match catalog.fail(&job.lease, &failure, options.retry_delay).await {
            Ok(now) => {
                report.failed += 1;
                on_event(&WorkerEvent::Failed { job_id: job_id.clone(), attempt, reason: failure.reason, now });
            }
            Err(QueueError::LeaseLost { now, .. }) => {
                report.lost += 1;
                on_event(&lost(now));
            }
            Err(error) => return Err(error),
        }
    }
}
