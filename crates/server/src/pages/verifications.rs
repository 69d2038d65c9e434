//! The verification queue (`/verifications`, `/verifications/{id}` and their JSON twins under
//! `/api/v1/`): what waits, what runs on which worker, what is done with which verdict, what
//! was parked and why. Read from the catalog on each request (the queue changes by the
//! second); the JSON of one job is [`ki_catalog::queue::JobDetail`] as it is, the same value
//! `ki verify-queue status --json JOB` prints.

use std::collections::BTreeMap;

use axum::extract::Query;
use axum::extract::{Path, State};
use ki_catalog::queue::{Job, JobDetail, JobQuery, JobState, Origin, QueueSummary, WorkerRecord};
use maud::{Markup, html};
use serde::{Deserialize, Serialize};

use super::{Answer, Shared, html_response, json_response, layout, section};
use crate::AppState;
use crate::problem::Problem;

/// Jobs listed per state on the page, and by default in the JSON.
pub const DEFAULT_JOBS: u32 = 100;
/// Most jobs one answer lists.
pub const MAX_JOBS: u32 = 1000;

#[derive(Debug, Clone, Default, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerificationsQuery {
    /// pending, running, done or parked; absent: every state.
    #[schemars(extend("enum" = ["", "pending", "running", "done", "parked"]))]
    pub state: Option<String>,
    /// Only the jobs of this submission.
    #[schemars(length(max = 100))]
    pub submission: Option<String>,
    /// submission or reverification.
    #[schemars(extend("enum" = ["", "submission", "reverification"]))]
    pub origin: Option<String>,
    /// 1 to 1000 (default 100).
    #[schemars(range(min = 1, max = 1000))]
    pub limit: Option<u32>,
}

/// The queue: how many jobs in each state, the jobs asked for, and the workers that hold
/// running ones.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueView {
    pub summary: QueueSummary,
    /// Pending ones in the order workers take them, the others newest first.
    pub jobs: Vec<Job>,
    /// The workers named by the listed jobs, by id.
    pub workers: BTreeMap<String, WorkerRecord>,
}

fn job_query(query: &VerificationsQuery) -> Result<JobQuery, Problem> {
    let state = match query.state.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        Some(text) => Some(JobState::parse(text).ok_or_else(|| {
            Problem::bad_request(format!("state: {text:?} is not one of pending, running, done, parked"))
        })?),
        None => None,
    };
    let origin = match query.origin.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        Some("submission") => Some(Origin::Submission),
        Some("reverification") => Some(Origin::Reverification),
        Some(text) => {
            return Err(Problem::bad_request(format!("origin: {text:?} is not submission or reverification")));
        }
        None => None,
    };
    let limit = query.limit.unwrap_or(DEFAULT_JOBS);
    if !(1..=MAX_JOBS).contains(&limit) {
        return Err(Problem::bad_request(format!("limit: {limit} is not between 1 and {MAX_JOBS}")));
    }
    let submission_id = query.submission.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_string);
    if submission_id.as_ref().is_some_and(|s| s.chars().count() > 100) {
        return Err(Problem::bad_request("submission: a submission id is a uuid"));
    }
    Ok(JobQuery { state, submission_id, origin, limit: Some(limit) })
}

fn queue_problem(error: ki_catalog::queue::QueueError) -> Problem {
    Problem::internal(format!("cannot read the verification queue: {error}"))
}

pub async fn queue_view(state: &AppState, query: &JobQuery) -> Result<QueueView, Problem> {
    let summary = state.catalog.queue_summary().await.map_err(queue_problem)?;
    let jobs = state.catalog.jobs(query).await.map_err(queue_problem)?;
    let workers = if jobs.iter().any(|j| j.worker_id.is_some()) {
        state.catalog.workers().await.map_err(queue_problem)?
    } else {
        Vec::new()
    };
    let wanted: std::collections::BTreeSet<&str> = jobs.iter().filter_map(|j| j.worker_id.as_deref()).collect();
    let workers = workers.into_iter().filter(|w| wanted.contains(w.id.as_str())).map(|w| (w.id.clone(), w)).collect();
    Ok(QueueView { summary, jobs, workers })
}

async fn find_job(state: &AppState, id: &str) -> Result<JobDetail, Problem> {
    if id.chars().count() > 100 {
        return Err(Problem::bad_request("a job is named by its uuid or its sha256: key"));
    }
    state
        .catalog
        .job(id)
        .await
        .map_err(queue_problem)?
        .ok_or_else(|| Problem::not_found(format!("no verification job {id:?}")))
}

fn worker_label(worker: Option<&WorkerRecord>, id: &str) -> String {
    match worker {
        Some(w) => format!("{} on {} ({})", crate::model::short_id(&w.id), w.host, w.environment.gpu),
        None => crate::model::short_id(id),
    }
}

/// One table of jobs (shared by the queue page and a submission's page).
pub fn jobs_table(caption: &str, jobs: &[Job], workers: &BTreeMap<String, WorkerRecord>) -> Markup {
    html! {
        table {
            caption { (caption) }
            thead { tr {
                th scope="col" { "job" } th scope="col" { "subject" } th scope="col" { "operation" }
                th scope="col" class="num" { "workloads" } th scope="col" { "state" } th scope="col" { "worker or outcome" }
                th scope="col" { "enqueued" }
            } }
            tbody { @for j in jobs { tr {
                td { a href={ "/verifications/" (j.id) } { (crate::model::short_id(&j.id)) } }
                td { (j.spec.subject.label()) }
                td { (j.spec.workloads.operation) }
                td.num { (j.spec.workloads.workloads.len()) }
                td { (j.state.as_str()) @if j.lease_expired { " (lease expired)" } }
                td {
                    @match j.state {
                        JobState::Running => { @if let Some(w) = &j.worker_id { (worker_label(workers.get(w), w)) } }
                        JobState::Done => { @if let Some(v) = &j.verdict { (v.status.as_str()) ": " (v.summary) } }
                        JobState::Parked => { (j.parked_reason.as_deref().unwrap_or("parked")) }
                        JobState::Pending => { "priority " (j.priority) " · " (j.origin.as_str()) }
                    }
                }
                td { (ki_model::utc::date_of(&j.enqueued_at)) }
            } } }
        }
    }
}

/// What a state's table would hold and what puts a job there: said instead of an empty table.
fn empty_state(state: JobState) -> Markup {
    match state {
        JobState::Pending => {
            html! { p.empty { "No job is waiting. Jobs are enqueued by " code { "ki verify --enqueue FILE" }
            " (FlashInfer-Bench Solutions or catalog implementations), by a submission whose bundle carries Solutions ("
            code { "verify:" } " in " code { "POST /api/v1/submissions" } "), and by "
            code { "ki verify reverify" } " when a record's #1 is old or a worker reports newer software." } }
        }
        JobState::Running => {
            html! { p.empty { "No job is running. A GPU worker (" code { "ki verify --worker --database …" }
            ") claims the next pending job that its GPU and software meet and holds it under a lease while it runs." } }
        }
        JobState::Done => {
            html! { p.empty { "No job has finished yet. A job is done when its worker publishes its runs or its verdict "
            "(a failed or refused solution is a verdict too); each lists here with that verdict." } }
        }
        JobState::Parked => {
            html! { p.empty { "No job is parked. A job is parked, with the reason, after too many environment "
            "failures (a lost lease, a worker that could not run it); enqueuing it again re-opens it." } }
        }
    }
}

pub fn render_queue(view: &QueueView) -> Markup {
    let s = &view.summary;
    let of = |state: JobState| view.jobs.iter().filter(|j| j.state == state).cloned().collect::<Vec<_>>();
    let table = |state: JobState, caption: &str| -> Markup {
        let jobs = of(state);
        if jobs.is_empty() { empty_state(state) } else { jobs_table(caption, &jobs, &view.workers) }
    };
    let empty = s.pending + s.running + s.done + s.parked == 0;
    layout(
        "Verification queue",
        html! {
            h1 { "Verification queue" }
            p { "Solutions and implementations waiting for, or done with, a run on KernelIndex's own GPU workers. "
                "People's submissions run before bulk re-verification. "
                a href="/api/v1/verifications" type="application/json" { "JSON" } }
            @if empty {
                p.banner role="note" { "The queue is empty: nothing has been enqueued on this index yet. "
                    "Each state below says what would put a job in it." }
            }
            p.badges {
                span.badge { "pending " (s.pending) } " "
                span.badge { "running " (s.running) @if s.running_expired > 0 { " (" (s.running_expired) " with expired leases)" } } " "
                span.badge { "done " (s.done) } " "
                span.badge { "parked " (s.parked) }
            }
            (section("pending", "Pending", table(JobState::Pending, "Pending, in the order workers take them")))
            (section("running", "Running", table(JobState::Running, "Running, with the worker that holds each")))
            (section("done", "Done", table(JobState::Done, "Done, newest first, with the verdict")))
            (section("parked", "Parked", table(JobState::Parked, "Parked, with the reason")))
        },
    )
}

pub fn render_job(detail: &JobDetail) -> Markup {
    let j = &detail.job;
    let workers: BTreeMap<String, WorkerRecord> = detail.workers.iter().map(|w| (w.id.clone(), w.clone())).collect();
    layout(
        &format!("Verification {}", crate::model::short_id(&j.id)),
        html! {
            nav.crumbs aria-label="Breadcrumb" { a href="/verifications" { "Verification queue" } }
            h1 { "Verification " (crate::model::short_id(&j.id)) }
            p.subtitle { (j.spec.subject.label()) " · " (j.spec.workloads.operation) " · " (j.spec.protocol) }
            p.badges { span.badge { "state: " (j.state.as_str()) } " " span.badge { "origin: " (j.origin.as_str()) } }
            dl.fields {
                div { dt { "job id" } dd { code { (j.id) } } }
                div { dt { "key" } dd { code { (j.key) } } }
                div { dt { "workloads" } dd { (j.spec.workloads.workloads.len()) } }
                @if let Some(gpu) = &j.spec.requirement.gpu { div { dt { "requires GPU" } dd { (gpu) } } }
                @if let Some(s) = &j.submission_id { div { dt { "submission" } dd { a href={ "/submissions/" (s) } { (s) } } } }
                @if let Some(r) = &j.reverifies_run_id { div { dt { "re-verifies" } dd { a href={ "/runs/" (r) } { (r) } } } }
                @if let Some(r) = &j.reason { div { dt { "reason" } dd { (r) } } }
                div { dt { "attempts" } dd { (j.attempts) " (" (j.environment_failures) " environment failures of " (j.max_environment_failures) " allowed)" } }
                @if let Some(w) = &j.worker_id { div { dt { "held by" } dd { (worker_label(workers.get(w), w)) } } }
                @if let Some(v) = &j.verdict { div { dt { "verdict" } dd { (v.status.as_str()) ": " (v.summary) } } }
                @if let Some(p) = &j.parked_reason { div { dt { "parked" } dd { (p) } } }
                div { dt { "enqueued" } dd { (j.enqueued_at) } }
                @if let Some(f) = &j.finished_at { div { dt { "finished" } dd { (f) } } }
            }
            @if let Some(p) = &j.published {
                (section("published", "Published runs", html! {
                    ul { @for r in &p.run_ids { li { a href={ "/runs/" (r) } { (r) } } } }
                    p { (p.record_events.len()) " record events." }
                }))
            }
            (section("attempts", "Attempts", html! {
                @if detail.attempts.is_empty() { p { "Not claimed yet." } }
                @else {
                    table { caption { "Every claim of this job" }
                        thead { tr { th scope="col" class="num" { "#" } th scope="col" { "worker" } th scope="col" { "claimed" } th scope="col" { "ended" } th scope="col" { "outcome" } } }
                        tbody { @for a in &detail.attempts { tr {
                            td.num { (a.attempt) }
                            td { (worker_label(workers.get(&a.worker_id), &a.worker_id)) }
                            td { (a.claimed_at) }
                            td { (a.ended_at.as_deref().unwrap_or("—")) }
                            td { (a.outcome.map(|o| o.as_str()).unwrap_or("in progress")) @if let Some(m) = &a.message { ": " (m) } }
                        } } }
                    }
                }
            }))
            p { a href={ "/api/v1/verifications/" (j.id) } type="application/json" { "JSON" } }
        },
    )
}

pub async fn page(State(state): State<Shared>, Query(query): Query<VerificationsQuery>) -> Answer {
    let mut jobs = job_query(&query)?;
    let mut view = queue_view(&state, &jobs).await?;
    // The page shows every state: each gets its own newest (or next) jobs.
    if jobs.state.is_none() {
        view.jobs.clear();
        for state_wanted in JobState::ALL {
            jobs.state = Some(state_wanted);
            let part = queue_view(&state, &jobs).await?;
            view.jobs.extend(part.jobs);
            view.workers.extend(part.workers);
        }
    }
    Ok(html_response(render_queue(&view)))
}

pub async fn api_list(State(state): State<Shared>, Query(query): Query<VerificationsQuery>) -> Answer {
    Ok(json_response(&queue_view(&state, &job_query(&query)?).await?))
}

pub async fn job_page(State(state): State<Shared>, Path(id): Path<String>) -> Answer {
    Ok(html_response(render_job(&find_job(&state, &id).await?)))
}

pub async fn api_job(State(state): State<Shared>, Path(id): Path<String>) -> Answer {
    Ok(json_response(&find_job(&state, &id).await?))
}
