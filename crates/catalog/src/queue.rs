//! The verification queue: jobs for GPU workers, kept in the catalog's own tables
//! (migration 5) on both backends, so that one worker on a laptop (SQLite) and a fleet of
//! GPU hosts (one PostgreSQL) run the same code.
//!
//! A job is one solution or implementation × a workload set × a protocol (× a requirement
//! on the worker, × for a re-verification the run it re-verifies), known by the digest of
//! exactly that ([`JobSpec::key`]): enqueuing it again does nothing while it is pending,
//! running or done, and re-opens it when it was parked.
//!
//! Life of a job, every step one short transaction:
//! - [`Catalog::enqueue`]: pending, at its [`Origin`]'s priority (people's submissions
//!   before bulk re-verification).
//! - [`Catalog::claim`]: a worker takes the first pending job it can run (its GPU and
//!   software meet the job's [`Requirement`]) with a lease. PostgreSQL: `SELECT … FOR UPDATE
//!   SKIP LOCKED`, so concurrent claimers never wait on, nor take, the same job; SQLite:
//!   `BEGIN IMMEDIATE` and a conditional `UPDATE`, one claimer at a time. A running job whose
//!   lease has expired (its worker died or stalled) counts as an environment failure and is
//!   claimed again.
//! - [`Catalog::renew`] while it runs; nothing is locked across the work, only the lease
//!   (a token and an expiry from the database's clock) says who holds the job.
//! - [`Catalog::complete`]: in ONE write transaction, check the lease is still held, write
//!   the job's records through the catalog's one writer (the import's verify-then-write,
//!   with the record events ranking-v1 requires) and mark the job done with its verdict. A
//!   worker whose lease was taken over is refused and writes nothing, so a job's records are
//!   published exactly once.
//! - [`Catalog::fail`] (an environment failure: back to pending after a delay, parked with
//!   the reason after the job's limit) or [`Catalog::release`] (given back untouched).
//!
//! Jobs that share a *lane* (one workload under one protocol on one GPU model) run one at a
//! time: the record-event ledger follows observation order and is only appended to, so runs
//! of one comparison group must be published in the order they were observed.
//!
//! The worker loop is [`run_worker`] over an [`Executor`]; `FixtureExecutor` is the
//! queue's test executor, compiled only with the `fixture-executor` feature (tests enable
//! it; a release build has no way to make runs that measure nothing). [`Catalog::enqueue_reverification`] enqueues what
//! `ki_ranking::reverify::plan` decides. The read side ([`Catalog::job`],
//! [`Catalog::jobs`], [`Catalog::queue_summary`], [`Catalog::workers`]) is what `ki
//! verify status` prints and the server's verification pages read.
//!
//! # The queue across crates
//!
//! Moved from ARCHITECTURE.md ("Verification at scale").
//!
//! State lives in the catalog, nowhere else: migration 0005 adds `verification_jobs`,
//! `verification_attempts`, `verification_workers` and `verification_lanes` on both backends
//! (the queue's own record, not exported). Key types: `ki_catalog::queue::{JobSpec, Job,
//! Lease, ClaimedJob, Executor, run_worker}` and `ki_ranking::reverify::{plan,
//! EnvironmentFacts}`; the commands are `ki verify --worker`, `ki verify --enqueue FILE`,
//! `ki verify status [JOB]` and `ki verify reverify` (`crates/ki/src/cmd/verify.rs` registers
//! them, `verify_queue.rs` holds them).
//!
//! - **Executors.** The worker loop is generic over `Executor`. The real one
//!   ([`RunnerExecutor`] in `queue/child_executor.rs`; `ki verify --worker --executor runner`
//!   builds it from its flags) runs each job as a child of the same `ki` binary — `ki run`
//!   for a catalog implementation (native, FlashInfer), `ki verify` for a FlashInfer-Bench
//!   Solution — in a job folder, and publishes the child's
//!   `catalog-rows.jsonl` after checking that its runs are on the worker's GPU, under the job's
//!   protocol, of the job's implementation revision. A child dies with its worker
//!   (`PR_SET_PDEATHSIG`) and with a lost lease (kill on drop), so a killed worker never leaves
//!   a kernel timing beside its successor; workers of one GPU take turns through a lock file
//!   (`ki run --gpu-lock`: held from calibration to the last timing, so one worker's NVRTC
//!   compile overlaps another's measurement; released by the kernel when a holder dies).
//!   `fixture` is the queue's test executor: it re-issues catalog runs and measures nothing, and
//!   exists only in builds with the `fixture-executor` feature (`ki-catalog` and `ki`), which
//!   only tests enable (`.ci/run` passes `--features ki/fixture-executor`); a release build
//!   has no such executor. A Verified run (reproduced by KernelIndex) is published through the
//!   queue only with its environment manifest and a raw-samples reference (sha256) in its run
//!   manifest, `hasRawEvidence` set; `Catalog::complete` refuses it otherwise, nothing written.
//!
//! - **A job** is a solution (carried whole) or a catalog implementation × a workload set × a
//!   protocol × a requirement on the worker (GPU model, minimum driver / CUDA / library
//!   versions) × for a re-verification its basis run. Its key is the digest of exactly that
//!   (`JobSpec::key`): enqueuing it again does nothing while it is pending, running or done,
//!   and re-opens it when parked. Its origin sets its priority: submissions before bulk
//!   re-verification.
//! - **Sources of jobs**: `ki verify --enqueue`, the re-verification plan, and a submission
//!   whose bundle carries Solutions (`verify:` in `POST /api/v1/submissions`):
//!   `Catalog::add_submission_with_jobs` writes the submission and its jobs in one
//!   transaction, or neither.
//! - **Every step is one short transaction**; nothing is locked across the work. A claim
//!   writes a lease (a token and an expiry from the database's clock, so the hosts of a fleet
//!   need not agree on the time); the worker renews it every third of its length while its
//!   `Executor` runs. Completion checks, in the same write transaction that writes the job's
//!   records through the import's writer (verify, then write, with the record events
//!   ranking-v1 requires) and its verdict, that the token still holds the job: a worker whose
//!   lease ran out and was taken over is refused and writes nothing, so each job is published
//!   exactly once. A lease that runs out counts as an environment failure, as does an
//!   executor's `EnvironmentFailure`; at the job's limit it is parked with the reason.
//! - **Lanes.** The record-event ledger follows observation order and is only appended to, so
//!   runs of one comparison group must be published in the order they were observed. Jobs
//!   that share a lane (one workload under one protocol on one GPU model) therefore run one at
//!   a time; a publication that would still rewrite history (jobs of different lanes whose
//!   runs share a group) is given back and run again, not counted as a failure.
//! - **One worker on a laptop** runs `ki verify --worker --database sqlite://…`: claims are
//!   serialized by SQLite's `BEGIN IMMEDIATE` (readers are never blocked, WAL), and several
//!   worker processes on one host share the file safely (the tests run three, one SIGKILLed).
//!   **A fleet** runs the same binary on every GPU host with `--database postgres://…` on one
//!   PostgreSQL: claimers read candidates without locks and lock them one at a time with
//!   `FOR UPDATE SKIP LOCKED` (no claimer waits on another, and priority order holds across
//!   them); lane rows are locked the same way; publication takes the catalog writer's advisory
//!   lock, as every import does, so publications are serial while claims, renewals and the
//!   runs themselves are not. The worker registers its GPU and software; a job is claimed
//!   only by a worker that meets its requirement. What limits a fleet is publication: each
//!   completion classifies its rows against the stored tables inside the writer lock, a cost
//!   that grows with the catalog (the import's, shared with every writer).
//! - **Re-verification** is a pure plan (`ki_ranking::reverify::plan`: the index, the
//!   environments workers reported, a policy in; decisions out): a group's #1 Verified run and
//!   its Verified runners-up go back to the queue when the #1 is older than a threshold or a
//!   worker with the same GPU reports newer software. `Catalog::enqueue_reverification`
//!   enqueues the decisions at the re-verification priority, requiring that newer software.
//!   The re-runs land in the new environment's groups, where their record events follow;
//!   planning again enqueues nothing for them.
//! - **API boundary** for the server (`GET /api/v1/verifications/{id}`, the queue page, a
//!   submission's jobs): `Catalog::job` (one job with its attempts and their workers),
//!   `Catalog::jobs(&JobQuery)` (by state, submission or origin), `Catalog::queue_summary`,
//!   `Catalog::workers`; a submission carrying a Solution enqueues with `Catalog::enqueue`
//!   (`Origin::Submission`, its `submission_id`). All types are serde-serializable.
//! - Architecture Invariant: the queue writes catalog rows only through the import's writer,
//!   and only in the transaction that marks the job done under a held lease.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use ki_ranking::reverify::{self, EnvironmentFacts, Reverification, Staleness};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::error::{CatalogError, DbContext};
use crate::import::{self, ImportOptions};
use crate::rows::{SqlValue, Storage};
use crate::store::{Backend, Pool, Session};
use crate::{Catalog, ExportLine};

mod child_executor;
#[cfg(feature = "fixture-executor")]
mod fixture;
mod worker;

pub use child_executor::RunnerExecutor;
#[cfg(feature = "fixture-executor")]
pub use fixture::FixtureExecutor;
pub use worker::{
    EnvironmentFailure, Executor, JobOutcome, StopWhen, WorkerEvent, WorkerOptions, WorkerReport, run_worker,
};

/// Longest solution document carried in a job (its JSON text).
pub const MAX_SOLUTION_BYTES: usize = 4 << 20;
/// Most workloads in one job.
pub const MAX_WORKLOADS: usize = 4096;
/// Environment failures (including expired leases) after which a job is parked, unless the
/// enqueuer says otherwise.
pub const DEFAULT_MAX_ENVIRONMENT_FAILURES: u32 = 3;
const MAX_NAME_CHARS: usize = 200;
const MAX_TEXT_CHARS: usize = 2000;
/// Candidates read per round of a claim.
const CLAIM_BATCH: i64 = 32;
/// Lanes per statement (well inside both backends' parameter limits).
const LANE_CHUNK: usize = 500;

/// What a job verifies.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case", rename_all_fields = "camelCase")]
pub enum Subject {
    /// A FlashInfer-Bench Solution, carried whole so that any worker can run it.
    Solution { name: String, document: Value },
    /// An implementation the catalog holds (re-verification).
    Implementation { implementation_id: String, implementation_digest: String },
}

impl Subject {
    /// What the subject is, for the job key: the solution document's digest (RFC 8785 JCS,
    /// SHA-256), or the implementation's digest.
    fn identity(&self) -> Result<Value, QueueError> {
        Ok(match self {
            Subject::Solution { document, .. } => {
                let digest = ki_model::identity::digest_of(document)
                    .map_err(|error| QueueError::Invalid(format!("/subject/document: {error}")))?;
                json!({"kind": "solution", "digest": digest})
            }
            Subject::Implementation { implementation_digest, .. } => {
                json!({"kind": "implementation", "digest": implementation_digest})
            }
        })
    }

    /// The solution's name or the implementation's id.
    pub fn label(&self) -> &str {
        match self {
            Subject::Solution { name, .. } => name,
            Subject::Implementation { implementation_id, .. } => implementation_id,
        }
    }
}

/// The workloads a job runs: cases of one operation (definition), by the names the
/// executor knows them by (FlashInfer-Bench workload uuids, or catalog workload ids).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct WorkloadSet {
    pub operation: String,
    pub workloads: Vec<String>,
}

/// What a worker must be to take a job.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Requirement {
    /// The GPU product (`NVIDIA H200`, compared ignoring case); None: any GPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<String>,
    /// Software at least this new (`driver`, `cudaToolkit`, a framework or library name →
    /// version); see [`EnvironmentFacts::satisfies`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub minimum_software: BTreeMap<String, String>,
}

/// One job: what to verify, on what, how, and on which kind of worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobSpec {
    pub subject: Subject,
    pub workloads: WorkloadSet,
    /// The timing protocol's name (`kernelindex-rerun-v2-random`).
    pub protocol: String,
    #[serde(default)]
    pub requirement: Requirement,
    /// For a re-verification, the newest run of the implementation on the workload when it
    /// was planned: part of the key, so that each run is re-verified once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basis_run_id: Option<String>,
}

impl JobSpec {
    /// Checks the spec, with workloads sorted and unique and names trimmed.
    pub fn normalized(mut self) -> Result<JobSpec, QueueError> {
        let bad = |pointer: &str, why: &str| Err(QueueError::Invalid(format!("{pointer}: {why}")));
        let name_ok = |text: &str| !text.trim().is_empty() && text.chars().count() <= MAX_NAME_CHARS;
        match &mut self.subject {
            Subject::Solution { name, document } => {
                *name = name.trim().to_string();
                if !name_ok(name) {
                    return bad("/subject/name", "must be 1 to 200 characters");
                }
                if !document.is_object() {
                    return bad("/subject/document", "must be a JSON object (a FlashInfer-Bench Solution)");
                }
                if serde_json::to_string(document).map_or(usize::MAX, |text| text.len()) > MAX_SOLUTION_BYTES {
                    return bad("/subject/document", "is larger than 4 MiB");
                }
            }
            Subject::Implementation { implementation_id, implementation_digest } => {
                if uuid::Uuid::try_parse(implementation_id).is_err() {
                    return bad("/subject/implementationId", "must be a UUID");
                }
                *implementation_id = implementation_id.to_ascii_lowercase();
                if !crate::rows::is_digest(implementation_digest) {
                    return bad("/subject/implementationDigest", "must be sha256: and 64 hex digits");
                }
            }
        }
        self.workloads.operation = self.workloads.operation.trim().to_string();
        if !name_ok(&self.workloads.operation) {
            return bad("/workloads/operation", "must be 1 to 200 characters");
        }
        let workloads: BTreeSet<String> =
            self.workloads.workloads.iter().map(|workload| workload.trim().to_string()).collect();
        if workloads.is_empty() {
            return bad("/workloads/workloads", "name at least one workload");
        }
        if workloads.len() > MAX_WORKLOADS {
            return bad("/workloads/workloads", "more than 4,096 workloads; split the job");
        }
        if let Some(bad_name) = workloads.iter().find(|workload| !name_ok(workload)) {
            return Err(QueueError::Invalid(format!(
                "/workloads/workloads: {:?} must be 1 to 200 characters",
                sanitized(bad_name)
            )));
        }
        self.workloads.workloads = workloads.into_iter().collect();
        self.protocol = self.protocol.trim().to_string();
        if !name_ok(&self.protocol) {
            return bad("/protocol", "must be 1 to 200 characters");
        }
        if let Some(gpu) = &mut self.requirement.gpu {
            *gpu = gpu.trim().to_string();
            if !name_ok(gpu) {
                return bad("/requirement/gpu", "must be 1 to 200 characters");
            }
        }
        for (name, version) in &self.requirement.minimum_software {
            if !name_ok(name) || reverify::compare_versions(version, version).is_none() {
                return Err(QueueError::Invalid(format!(
                    "/requirement/minimumSoftware/{}: {:?} is not a version (digits and dots, e.g. 580.65)",
                    sanitized(name),
                    sanitized(version)
                )));
            }
        }
        if let Some(basis) = &self.basis_run_id
            && uuid::Uuid::try_parse(basis).is_err()
        {
            return bad("/basisRunId", "must be a UUID");
        }
        Ok(self)
    }

    /// The job's identity: `sha256:` of the RFC 8785 JCS of what it verifies (the solution's
    /// or implementation's digest), its workloads, protocol, requirement and basis.
    pub fn key(&self) -> Result<String, QueueError> {
        let identity = json!({
            "v": 1,
            "subject": self.subject.identity()?,
            "workloads": self.workloads,
            "protocol": self.protocol,
            "requirement": self.requirement,
            "basisRunId": self.basis_run_id,
        });
        ki_model::identity::digest_of(&identity).map_err(|error| QueueError::Invalid(format!("job key: {error}")))
    }

    /// The lanes of this job on a worker with `gpu`: one per workload, sorted, so that every
    /// claimer inserts and locks lane rows in one order (no deadlock between two claims).
    fn lanes(&self, gpu: &str) -> Vec<String> {
        let mut lanes: Vec<String> = self
            .workloads
            .workloads
            .iter()
            .map(|workload| {
                let identity = json!({
                    "protocol": self.protocol,
                    "gpu": gpu.trim().to_ascii_lowercase(),
                    "operation": self.workloads.operation,
                    "workload": workload,
                });
                ki_model::identity::digest_of(&identity).expect("strings always canonicalize")
            })
            .collect();
        lanes.sort_unstable();
        lanes
    }
}

/// Where a job came from; it sets the job's priority.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Origin {
    /// Someone asked for it (a submission, `ki verify --enqueue`): runs first.
    Submission,
    /// The re-verification policy: runs when no submission waits.
    Reverification,
}

impl Origin {
    pub fn as_str(self) -> &'static str {
        match self {
            Origin::Submission => "submission",
            Origin::Reverification => "reverification",
        }
    }

    fn parse(text: &str) -> Option<Origin> {
        match text {
            "submission" => Some(Origin::Submission),
            "reverification" => Some(Origin::Reverification),
            _ => None,
        }
    }

    /// Lower runs first; the gap leaves room for levels between.
    pub fn priority(self) -> i64 {
        match self {
            Origin::Submission => 100,
            Origin::Reverification => 200,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JobState {
    /// Waiting for a worker.
    Pending,
    /// Held by a worker's lease (which may have expired: see [`Job::lease_expired`]).
    Running,
    /// Its verdict and records are published.
    Done,
    /// Failed its environment too often; [`Job::parked_reason`] says why.
    Parked,
}

impl JobState {
    pub const ALL: [JobState; 4] = [JobState::Pending, JobState::Running, JobState::Done, JobState::Parked];

    pub fn as_str(self) -> &'static str {
        match self {
            JobState::Pending => "pending",
            JobState::Running => "running",
            JobState::Done => "done",
            JobState::Parked => "parked",
        }
    }

    pub fn parse(text: &str) -> Option<JobState> {
        JobState::ALL.into_iter().find(|state| state.as_str() == text)
    }
}

/// How a verification ended (issue 13's verdicts).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerdictStatus {
    /// Correct and timed: a Verified run.
    Passed,
    Incorrect,
    CompileError,
    RuntimeError,
    Timeout,
    /// Refused as dishonest (which check: in the summary).
    Refused,
}

impl VerdictStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictStatus::Passed => "passed",
            VerdictStatus::Incorrect => "incorrect",
            VerdictStatus::CompileError => "compile_error",
            VerdictStatus::RuntimeError => "runtime_error",
            VerdictStatus::Timeout => "timeout",
            VerdictStatus::Refused => "refused",
        }
    }
}

/// A job's verdict: what the executor concluded, published with its records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Verdict {
    pub status: VerdictStatus,
    /// One or two sentences (at most 2,000 characters are kept).
    pub summary: String,
    /// The executor's detail (per workload, errors, …), as it chooses to give it.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub detail: Value,
}

/// A record event a job's publication appended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PublishedEvent {
    pub comparison_key: String,
    pub run_id: String,
    pub previous_run_id: Option<String>,
    pub cause: String,
    pub at: String,
}

/// What a job's completion wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Published {
    /// The benchmark runs among its records (new or already held).
    pub run_ids: Vec<String>,
    /// Rows written (record events included).
    pub rows_inserted: u64,
    pub record_events: Vec<PublishedEvent>,
}

/// A job as the queue holds it.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Job {
    pub id: String,
    pub key: String,
    pub spec: JobSpec,
    pub origin: Origin,
    pub priority: i64,
    pub submission_id: Option<String>,
    pub reverifies_run_id: Option<String>,
    pub reason: Option<String>,
    pub state: JobState,
    /// Claims so far.
    pub attempts: u32,
    pub environment_failures: u32,
    pub max_environment_failures: u32,
    /// The worker holding it (running only).
    pub worker_id: Option<String>,
    pub lease_expires_at: Option<String>,
    /// Running, but its lease has run out: its worker died or stalled, and the next claim
    /// takes the job over.
    pub lease_expired: bool,
    pub verdict: Option<Verdict>,
    pub published: Option<Published>,
    pub parked_reason: Option<String>,
    pub enqueued_at: String,
    pub updated_at: String,
    pub finished_at: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttemptOutcome {
    Completed,
    Failed,
    Released,
    /// Its lease ran out; the job was taken back.
    Expired,
}

impl AttemptOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            AttemptOutcome::Completed => "completed",
            AttemptOutcome::Failed => "failed",
            AttemptOutcome::Released => "released",
            AttemptOutcome::Expired => "expired",
        }
    }

    fn parse(text: &str) -> Option<AttemptOutcome> {
        [AttemptOutcome::Completed, AttemptOutcome::Failed, AttemptOutcome::Released, AttemptOutcome::Expired]
            .into_iter()
            .find(|outcome| outcome.as_str() == text)
    }
}

/// One claim of a job.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Attempt {
    pub attempt: u32,
    pub worker_id: String,
    pub claimed_at: String,
    pub ended_at: Option<String>,
    /// None while the attempt holds the job.
    pub outcome: Option<AttemptOutcome>,
    pub message: Option<String>,
}

/// A worker process as it registered.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerRecord {
    pub id: String,
    pub host: String,
    pub environment: EnvironmentFacts,
    pub started_at: String,
    pub last_seen_at: String,
    pub stopped_at: Option<String>,
}

/// A job with every attempt and the workers that made them.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct JobDetail {
    pub job: Job,
    pub attempts: Vec<Attempt>,
    pub workers: Vec<WorkerRecord>,
}

/// Jobs per state.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct QueueSummary {
    pub pending: u64,
    pub running: u64,
    /// Of the running: leases run out, waiting to be claimed again.
    pub running_expired: u64,
    pub done: u64,
    pub parked: u64,
}

impl QueueSummary {
    /// Pending or running: work that is not over.
    pub fn active(&self) -> u64 {
        self.pending + self.running
    }
}

/// Which jobs to list.
#[derive(Debug, Clone, Default)]
pub struct JobQuery {
    pub state: Option<JobState>,
    pub submission_id: Option<String>,
    pub origin: Option<Origin>,
    /// At most this many (default 100).
    pub limit: Option<u32>,
}

/// A job to enqueue.
#[derive(Debug, Clone)]
pub struct EnqueueRequest {
    pub spec: JobSpec,
    pub origin: Origin,
    /// The submission it came from, so that the submission's page can list its jobs.
    pub submission_id: Option<String>,
    /// A re-verification's run.
    pub reverifies_run_id: Option<String>,
    /// Why it was enqueued, for people.
    pub reason: Option<String>,
    /// Default [`DEFAULT_MAX_ENVIRONMENT_FAILURES`].
    pub max_environment_failures: Option<u32>,
}

impl EnqueueRequest {
    pub fn new(spec: JobSpec, origin: Origin) -> EnqueueRequest {
        EnqueueRequest {
            spec,
            origin,
            submission_id: None,
            reverifies_run_id: None,
            reason: None,
            max_environment_failures: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Enqueued {
    Created,
    /// The same job is pending or running: nothing changed.
    AlreadyQueued,
    /// The same job is done: nothing changed.
    AlreadyDone,
    /// The same job was parked: it is pending again, its failures forgotten.
    Reopened,
}

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnqueueOutcome {
    pub outcome: Enqueued,
    pub job: Job,
}

/// A worker registered with the queue.
#[derive(Debug, Clone, PartialEq)]
pub struct RegisteredWorker {
    pub id: String,
    pub host: String,
    pub environment: EnvironmentFacts,
}

/// The right to work on one claimed job: valid while the job is running under this token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub job_id: String,
    pub token: String,
    pub attempt: u32,
    pub worker_id: String,
    /// How long each renewal extends it.
    pub duration: Duration,
}

/// A job a worker holds.
#[derive(Debug, Clone, PartialEq)]
pub struct ClaimedJob {
    pub job: Job,
    pub lease: Lease,
    /// When the claim was made (database clock, ms since the Unix epoch).
    pub claimed_at_ms: i64,
}

/// What [`Catalog::complete`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub job_id: String,
    pub verdict: Verdict,
    pub published: Published,
}

/// How [`Catalog::enqueue_reverification`] plans and enqueues.
#[derive(Debug, Clone)]
pub struct ReverifyOptions {
    pub policy: reverify::Policy,
    /// Enqueue at most this many (the first planned: groups in catalog order, #1 first).
    pub limit: Option<usize>,
    pub max_environment_failures: Option<u32>,
    /// Plan only; enqueue nothing.
    pub dry_run: bool,
}

impl ReverifyOptions {
    pub fn new(policy: reverify::Policy) -> ReverifyOptions {
        ReverifyOptions { policy, limit: None, max_environment_failures: None, dry_run: false }
    }
}

/// What [`Catalog::enqueue_reverification`] planned and enqueued.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReverificationReport {
    pub planned: Vec<Reverification>,
    /// One per planned run (empty in a dry run).
    pub enqueued: Vec<EnqueueOutcome>,
}

#[derive(Debug, thiserror::Error)]
pub enum QueueError {
    #[error("invalid verification job: {0}")]
    Invalid(String),
    #[error("no verification job {0:?} (give a job id or its sha256: key)")]
    UnknownJob(String),
    /// The job is no longer held under this lease (it expired and another worker took the
    /// job, or the job ended); nothing was written.
    #[error("verification job {job}: attempt {attempt} no longer holds it ({now}); nothing written")]
    LeaseLost { job: String, attempt: u32, now: String },
    /// The job's records were refused by the catalog; nothing was written. The catalog's
    /// message is part of this one's (not also a `source`, so a chain prints it once).
    #[error("verification job {job}: its records were refused, nothing published: {error}")]
    Publication { job: String, error: Box<CatalogError> },
    #[error(transparent)]
    Catalog(#[from] CatalogError),
}

impl From<sqlx::Error> for QueueError {
    fn from(cause: sqlx::Error) -> Self {
        QueueError::Catalog(CatalogError::Database { context: "verification queue query failed".into(), cause })
    }
}

type QueueResult<T> = std::result::Result<T, QueueError>;

/// The first Verified run among `lines` (a `benchmark_runs` row marked reproduced by
/// KernelIndex) that does not carry what traces it to a runner session: its environment
/// manifest (with a spec), raw evidence claimed (`hasRawEvidence`), and a raw-samples
/// reference with a sha256 digest in its run manifest (`spec.evidence.rawSamples` or
/// `spec.timing.rawSamples`).
fn untraceable_verified_run(lines: &[ExportLine]) -> Option<crate::error::Refusal> {
    lines.iter().filter(|line| line.table == "benchmark_runs").find_map(|line| {
        let row = &line.row;
        if row.get("reproducedByKernelindex").and_then(Value::as_bool) != Some(true) {
            return None;
        }
        let refusal = |missing: &'static str| {
            Some(crate::error::Refusal::UntraceableVerifiedRun { run: sanitized(line.id()), missing })
        };
        let manifest = row.get("manifest");
        if !manifest.and_then(|m| m.pointer("/environment/spec")).is_some_and(Value::is_object) {
            return refusal("environment manifest");
        }
        let run_spec = manifest.and_then(|m| m.pointer("/run/spec"));
        let samples = ["/evidence/rawSamples/digest", "/timing/rawSamples/digest"]
            .iter()
            .filter_map(|pointer| run_spec.and_then(|spec| spec.pointer(pointer)).and_then(Value::as_str))
            .find(|digest| {
                digest.strip_prefix("sha256:").is_some_and(|hex| {
                    hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
                })
            });
        if samples.is_none() || row.get("hasRawEvidence").and_then(Value::as_bool) != Some(true) {
            return refusal("raw samples");
        }
        None
    })
}

/// Text from outside, for messages: control characters shown escaped, bounded.
fn sanitized(text: &str) -> String {
    text.chars().take(MAX_NAME_CHARS).flat_map(char::escape_debug).collect()
}

fn bounded(text: &str) -> String {
    text.trim().chars().take(MAX_TEXT_CHARS).collect()
}

fn utc(millis: i64) -> String {
    ki_model::utc::from_unix_millis(millis)
}

/// `?N` placeholders as the backend spells them.
fn sql(backend: Backend, text: &str) -> String {
    match backend {
        Backend::Sqlite => text.to_string(),
        Backend::Postgres => text.replace('?', "$"),
    }
}

fn text(value: impl Into<String>) -> SqlValue {
    SqlValue::Text(Some(value.into()))
}

fn opt_text(value: Option<&str>) -> SqlValue {
    SqlValue::Text(value.map(str::to_string))
}

fn int(value: i64) -> SqlValue {
    SqlValue::Int(Some(value))
}

fn millis(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

/// A queue write transaction: SQLite `BEGIN IMMEDIATE` (one writer at a time, so a
/// conditional update is a claim); PostgreSQL a plain transaction (row locks, never the
/// catalog writer's advisory lock, which only publication needs).
async fn begin_queue(pool: &Pool) -> QueueResult<Session> {
    Ok(match pool {
        Pool::Sqlite(pool) => Session::Sqlite(
            pool.begin_with("BEGIN IMMEDIATE").await.context(|| "cannot begin a queue transaction".into())?,
        ),
        Pool::Postgres(pool) => {
            Session::Postgres(pool.begin().await.context(|| "cannot begin a queue transaction".into())?)
        }
    })
}

/// A job request checked and keyed, ready to insert.
type PreparedJob = (JobSpec, String, String, u32);

/// Checks every request (all before any is written), with its key and stored spec.
fn prepare_requests(requests: &[EnqueueRequest]) -> QueueResult<Vec<PreparedJob>> {
    let mut prepared = Vec::with_capacity(requests.len());
    for (index, request) in requests.iter().enumerate() {
        let at = |error: QueueError| match error {
            QueueError::Invalid(message) if requests.len() > 1 => {
                QueueError::Invalid(format!("job {} of {}: {message}", index + 1, requests.len()))
            }
            other => other,
        };
        let spec = request.spec.clone().normalized().map_err(at)?;
        let key = spec.key().map_err(at)?;
        let max_failures = request.max_environment_failures.unwrap_or(DEFAULT_MAX_ENVIRONMENT_FAILURES);
        if !(1..=100).contains(&max_failures) {
            return Err(at(QueueError::Invalid("maxEnvironmentFailures: must be 1 to 100".into())));
        }
        for (name, value) in [("submissionId", &request.submission_id), ("reverifiesRunId", &request.reverifies_run_id)]
        {
            if value.as_ref().is_some_and(|value| value.trim().is_empty() || value.chars().count() > MAX_NAME_CHARS) {
                return Err(at(QueueError::Invalid(format!("{name}: must be 1 to 200 characters"))));
            }
        }
        let spec_json = serde_json::to_string(&spec).map_err(|error| corrupt("job spec", error))?;
        prepared.push((spec, key, spec_json, max_failures));
    }
    Ok(prepared)
}

/// Inserts prepared jobs in `session` (the caller commits): a job whose key the queue holds
/// is left as it is when pending, running or done, and re-opened when parked.
async fn insert_jobs(
    session: &mut Session,
    prepared: &[PreparedJob],
    requests: &[EnqueueRequest],
) -> QueueResult<Vec<EnqueueOutcome>> {
    let backend = session.backend();
    let now = db_now(session).await?;
    let insert = sql(
        backend,
        "INSERT INTO verification_jobs (id, job_key, spec, gpu_model, priority, origin, submission_id, \
         reverifies_run_id, reason, state, max_environment_failures, available_ms, enqueued_ms, updated_ms) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'pending', ?10, ?11, ?11, ?11) ON CONFLICT (job_key) DO NOTHING",
    );
    let reopen = sql(
        backend,
        "UPDATE verification_jobs SET state = 'pending', parked_reason = NULL, finished_ms = NULL, \
         environment_failures = 0, available_ms = ?1, updated_ms = ?1 WHERE id = ?2 AND state = 'parked'",
    );
    let mut outcomes = Vec::with_capacity(prepared.len());
    for ((spec, key, spec_json, max_failures), request) in prepared.iter().zip(requests) {
        let params = [
            text(crate::new_row_id().to_string()),
            text(key),
            text(spec_json),
            opt_text(spec.requirement.gpu.as_deref()),
            int(request.origin.priority()),
            text(request.origin.as_str()),
            opt_text(request.submission_id.as_deref().map(str::trim)),
            opt_text(request.reverifies_run_id.as_deref().map(str::trim)),
            opt_text(request.reason.as_deref().map(bounded).as_deref()),
            int((*max_failures).into()),
            int(now),
        ];
        let created = session.execute(&insert, &params).await.context(|| "cannot enqueue a job".into())? == 1;
        let existing = job_by(session, "job_key", key, now).await?.ok_or_else(|| corrupt("enqueue", key))?;
        let outcome = if created {
            Enqueued::Created
        } else {
            match existing.job.state {
                JobState::Pending | JobState::Running => Enqueued::AlreadyQueued,
                JobState::Done => Enqueued::AlreadyDone,
                JobState::Parked => {
                    session
                        .execute(&reopen, &[int(now), text(&existing.job.id)])
                        .await
                        .context(|| "cannot re-open a parked job".into())?;
                    Enqueued::Reopened
                }
            }
        };
        let job = match outcome {
            Enqueued::Reopened => job_by(session, "job_key", key, now).await?.ok_or_else(|| corrupt("enqueue", key))?,
            _ => existing,
        };
        outcomes.push(EnqueueOutcome { outcome, job: job.job });
    }
    Ok(outcomes)
}

/// The database's clock, ms since the Unix epoch: one clock for every host of a fleet.
async fn db_now(session: &mut Session) -> QueueResult<i64> {
    let query = match session.backend() {
        Backend::Sqlite => "SELECT CAST(round((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)",
        Backend::Postgres => "SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint",
    };
    let rows = session.fetch_all(query, &[], &[Storage::Int]).await.context(|| "cannot read the clock".into())?;
    match rows.first().and_then(|row| row.first()) {
        Some(SqlValue::Int(Some(now))) => Ok(*now),
        _ => Err(CatalogError::Corrupt("the database clock gave no time".into()).into()),
    }
}

const JOB_COLUMNS: &str = "id, job_key, spec, priority, origin, submission_id, reverifies_run_id, reason, state, \
     attempts, environment_failures, max_environment_failures, worker_id, lease_token, lease_expires_ms, verdict, \
     published, parked_reason, enqueued_ms, updated_ms, finished_ms, seq";

const JOB_STORAGES: [Storage; 22] = [
    Storage::Text,
    Storage::Text,
    Storage::Text,
    Storage::Int,
    Storage::Text,
    Storage::Text,
    Storage::Text,
    Storage::Text,
    Storage::Text,
    Storage::Int,
    Storage::Int,
    Storage::Int,
    Storage::Text,
    Storage::Text,
    Storage::Int,
    Storage::Text,
    Storage::Text,
    Storage::Text,
    Storage::Int,
    Storage::Int,
    Storage::Int,
    Storage::Int,
];

/// A job row read back, with what the queue itself needs beside the public [`Job`].
struct JobRow {
    job: Job,
    lease_token: Option<String>,
    lease_expires_ms: Option<i64>,
    seq: i64,
}

fn column_text(values: &[SqlValue], index: usize) -> Option<String> {
    values.get(index).and_then(SqlValue::as_text).map(str::to_string)
}

fn column_int(values: &[SqlValue], index: usize) -> Option<i64> {
    match values.get(index) {
        Some(SqlValue::Int(value)) => *value,
        _ => None,
    }
}

fn corrupt(what: &str, detail: impl std::fmt::Display) -> QueueError {
    QueueError::Catalog(CatalogError::Corrupt(format!("verification queue: {what}: {detail}")))
}

fn parse_json<T: serde::de::DeserializeOwned>(values: &[SqlValue], index: usize, what: &str) -> QueueResult<Option<T>> {
    column_text(values, index).map(|text| serde_json::from_str(&text).map_err(|error| corrupt(what, error))).transpose()
}

fn job_row(values: &[SqlValue], now: i64) -> QueueResult<JobRow> {
    let count = |index: usize| column_int(values, index).unwrap_or(0).clamp(0, u32::MAX as i64) as u32;
    let state_text = column_text(values, 8).unwrap_or_default();
    let state = JobState::parse(&state_text).ok_or_else(|| corrupt("job state", &state_text))?;
    let origin_text = column_text(values, 4).unwrap_or_default();
    let origin = Origin::parse(&origin_text).ok_or_else(|| corrupt("job origin", &origin_text))?;
    let spec: JobSpec = parse_json(values, 2, "job spec")?.ok_or_else(|| corrupt("job spec", "missing"))?;
    let lease_expires_ms = column_int(values, 14);
    Ok(JobRow {
        job: Job {
            id: column_text(values, 0).unwrap_or_default(),
            key: column_text(values, 1).unwrap_or_default(),
            spec,
            origin,
            priority: column_int(values, 3).unwrap_or_default(),
            submission_id: column_text(values, 5),
            reverifies_run_id: column_text(values, 6),
            reason: column_text(values, 7),
            state,
            attempts: count(9),
            environment_failures: count(10),
            max_environment_failures: count(11),
            worker_id: column_text(values, 12),
            lease_expires_at: lease_expires_ms.map(utc),
            lease_expired: state == JobState::Running && lease_expires_ms.is_some_and(|expiry| expiry < now),
            verdict: parse_json(values, 15, "job verdict")?,
            published: parse_json(values, 16, "job publication")?,
            parked_reason: column_text(values, 17),
            enqueued_at: utc(column_int(values, 18).unwrap_or_default()),
            updated_at: utc(column_int(values, 19).unwrap_or_default()),
            finished_at: column_int(values, 20).map(utc),
        },
        lease_token: column_text(values, 13),
        lease_expires_ms,
        seq: column_int(values, 21).unwrap_or_default(),
    })
}

async fn job_by(session: &mut Session, column: &str, value: &str, now: i64) -> QueueResult<Option<JobRow>> {
    let query = sql(session.backend(), &format!("SELECT {JOB_COLUMNS} FROM verification_jobs WHERE {column} = ?1"));
    let rows = session.fetch_all(&query, &[text(value)], &JOB_STORAGES).await?;
    rows.first().map(|values| job_row(values, now)).transpose()
}

/// The job under `lease`, if the lease still holds it; otherwise the refusal naming what
/// happened instead. On PostgreSQL the job row stays locked until the transaction ends.
async fn held_job(session: &mut Session, lease: &Lease, now: i64) -> QueueResult<JobRow> {
    let lock = match session.backend() {
        Backend::Sqlite => "",
        Backend::Postgres => " FOR UPDATE",
    };
    let query = sql(session.backend(), &format!("SELECT {JOB_COLUMNS} FROM verification_jobs WHERE id = ?1{lock}"));
    let rows = session.fetch_all(&query, &[text(&lease.job_id)], &JOB_STORAGES).await?;
    let Some(row) = rows.first().map(|values| job_row(values, now)).transpose()? else {
        return Err(QueueError::UnknownJob(lease.job_id.clone()));
    };
    if row.job.state == JobState::Running && row.lease_token.as_deref() == Some(lease.token.as_str()) {
        return Ok(row);
    }
    let now_text = match row.job.state {
        JobState::Running => format!(
            "attempt {} on worker {} holds it now",
            row.job.attempts,
            row.job.worker_id.as_deref().unwrap_or("?")
        ),
        state => format!("it is {} now", state.as_str()),
    };
    Err(QueueError::LeaseLost { job: lease.job_id.clone(), attempt: lease.attempt, now: now_text })
}

async fn end_attempt(
    session: &mut Session,
    token: &str,
    outcome: AttemptOutcome,
    message: &str,
    now: i64,
) -> QueueResult<()> {
    let query = sql(
        session.backend(),
        "UPDATE verification_attempts SET outcome = ?1, message = ?2, ended_ms = ?3 WHERE lease_token = ?4 AND outcome IS NULL",
    );
    session
        .execute(&query, &[text(outcome.as_str()), text(bounded(message)), int(now), text(token)])
        .await
        .context(|| "cannot record how an attempt ended".into())?;
    Ok(())
}

async fn free_lanes(session: &mut Session, job_id: &str) -> QueueResult<()> {
    let query = sql(session.backend(), "UPDATE verification_lanes SET job_id = NULL WHERE job_id = ?1");
    session.execute(&query, &[text(job_id)]).await.context(|| "cannot free a job's lanes".into())?;
    Ok(())
}

/// Takes every lane of a job for it, or none: false when a lane is being claimed by another
/// transaction right now (PostgreSQL: locked), or is held by another running job whose
/// lease is live.
async fn take_lanes(session: &mut Session, job_id: &str, lanes: &[String], now: i64) -> QueueResult<bool> {
    let backend = session.backend();
    for chunk in lanes.chunks(LANE_CHUNK) {
        let values: Vec<String> = (1..=chunk.len()).map(|n| format!("(?{n})")).collect();
        let insert = sql(
            backend,
            &format!(
                "INSERT INTO verification_lanes (lane) VALUES {} ON CONFLICT (lane) DO NOTHING",
                values.join(", ")
            ),
        );
        let params: Vec<SqlValue> = chunk.iter().map(text).collect();
        session.execute(&insert, &params).await.context(|| "cannot record a job's lanes".into())?;
    }
    let mut holders = BTreeSet::new();
    for chunk in lanes.chunks(LANE_CHUNK) {
        let list: Vec<String> = (1..=chunk.len()).map(|n| format!("?{n}")).collect();
        let lock = match backend {
            Backend::Sqlite => "",
            Backend::Postgres => " FOR UPDATE SKIP LOCKED",
        };
        let select = sql(
            backend,
            &format!("SELECT lane, job_id FROM verification_lanes WHERE lane IN ({}){lock}", list.join(", ")),
        );
        let params: Vec<SqlValue> = chunk.iter().map(text).collect();
        let rows = session.fetch_all(&select, &params, &[Storage::Text, Storage::Text]).await?;
        if rows.len() < chunk.len() {
            return Ok(false);
        }
        holders.extend(rows.iter().filter_map(|row| column_text(row, 1)).filter(|holder| holder != job_id));
    }
    for holder in holders {
        let query =
            sql(backend, "SELECT state, lease_expires_ms FROM verification_jobs WHERE id = ?1 AND state = 'running'");
        let rows = session.fetch_all(&query, &[text(&holder)], &[Storage::Text, Storage::Int]).await?;
        if rows.first().and_then(|row| column_int(row, 1)).is_some_and(|expiry| expiry >= now) {
            return Ok(false);
        }
    }
    for chunk in lanes.chunks(LANE_CHUNK) {
        let list: Vec<String> = (2..=chunk.len() + 1).map(|n| format!("?{n}")).collect();
        let update =
            sql(backend, &format!("UPDATE verification_lanes SET job_id = ?1 WHERE lane IN ({})", list.join(", ")));
        let mut params = vec![text(job_id)];
        params.extend(chunk.iter().map(text));
        session.execute(&update, &params).await.context(|| "cannot take a job's lanes".into())?;
    }
    Ok(true)
}

async fn touch_worker(session: &mut Session, worker_id: &str, now: i64) -> QueueResult<()> {
    let query = sql(session.backend(), "UPDATE verification_workers SET last_seen_ms = ?1 WHERE id = ?2");
    session.execute(&query, &[int(now), text(worker_id)]).await.context(|| "cannot record a worker's visit".into())?;
    Ok(())
}

/// A running job whose lease ran out: the attempt is recorded as expired, counted as an
/// environment failure, and the job goes back to pending, or is parked at its limit.
/// Returns the job's state afterwards.
async fn reap(session: &mut Session, row: &JobRow, now: i64) -> QueueResult<JobState> {
    let job = &row.job;
    let Some(token) = row.lease_token.as_deref() else { return Ok(job.state) };
    let expired_at = row.lease_expires_ms.map(utc).unwrap_or_default();
    let worker = job.worker_id.clone().unwrap_or_default();
    let message = format!(
        "the lease of worker {worker} (attempt {}) expired at {expired_at} without renewal: the worker died or stalled",
        job.attempts
    );
    end_attempt(session, token, AttemptOutcome::Expired, &message, now).await?;
    let failures = job.environment_failures + 1;
    let parked = failures >= job.max_environment_failures;
    let query = sql(
        session.backend(),
        "UPDATE verification_jobs SET state = ?1, environment_failures = ?2, parked_reason = ?3, finished_ms = ?4, \
         worker_id = NULL, lease_token = NULL, lease_expires_ms = NULL, updated_ms = ?5 \
         WHERE id = ?6 AND lease_token = ?7",
    );
    let state = if parked { JobState::Parked } else { JobState::Pending };
    let reason = parked.then(|| park_reason(failures, &message));
    session
        .execute(
            &query,
            &[
                text(state.as_str()),
                int(failures.into()),
                opt_text(reason.as_deref()),
                SqlValue::Int(parked.then_some(now)),
                int(now),
                text(&job.id),
                text(token),
            ],
        )
        .await
        .context(|| format!("cannot take back job {}", job.id))?;
    free_lanes(session, &job.id).await?;
    Ok(state)
}

fn park_reason(failures: u32, last: &str) -> String {
    bounded(&format!("parked after {failures} environment failure(s); the last: {last}"))
}

impl Catalog {
    /// Records a worker process (host and environment); its id goes on every claim.
    pub async fn register_worker(&self, host: &str, environment: &EnvironmentFacts) -> QueueResult<RegisteredWorker> {
        let host = host.trim();
        if host.is_empty() || host.chars().count() > MAX_NAME_CHARS {
            return Err(QueueError::Invalid("worker host: must be 1 to 200 characters".into()));
        }
        if environment.gpu.trim().is_empty() || environment.gpu.chars().count() > MAX_NAME_CHARS {
            return Err(QueueError::Invalid("worker environment /gpu: must be 1 to 200 characters".into()));
        }
        let environment_json = serde_json::to_string(environment).map_err(|error| corrupt("environment", error))?;
        let worker = RegisteredWorker {
            id: uuid::Uuid::new_v4().to_string(),
            host: host.to_string(),
            environment: environment.clone(),
        };
        let mut session = begin_queue(&self.pool).await?;
        let now = db_now(&mut session).await?;
        let query = sql(
            session.backend(),
            "INSERT INTO verification_workers (id, host, gpu_model, environment, started_ms, last_seen_ms) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?5)",
        );
        session
            .execute(
                &query,
                &[text(&worker.id), text(host), text(environment.gpu.trim()), text(environment_json), int(now)],
            )
            .await
            .context(|| "cannot register the worker".into())?;
        session.commit().await.context(|| "cannot commit the worker's registration".into())?;
        Ok(worker)
    }

    /// Marks a worker as stopped (a clean exit; a killed worker simply stops being seen).
    pub async fn worker_stopped(&self, worker: &RegisteredWorker) -> QueueResult<()> {
        let mut session = begin_queue(&self.pool).await?;
        let now = db_now(&mut session).await?;
        let query =
            sql(session.backend(), "UPDATE verification_workers SET stopped_ms = ?1, last_seen_ms = ?1 WHERE id = ?2");
        session
            .execute(&query, &[int(now), text(&worker.id)])
            .await
            .context(|| "cannot record the worker's stop".into())?;
        session.commit().await.context(|| "cannot commit the worker's stop".into())?;
        Ok(())
    }

    /// Enqueues one job; see [`Catalog::enqueue_many`].
    pub async fn enqueue(&self, request: &EnqueueRequest) -> QueueResult<EnqueueOutcome> {
        let mut outcomes = self.enqueue_many(std::slice::from_ref(request)).await?;
        outcomes.pop().ok_or_else(|| corrupt("enqueue", "no outcome"))
    }

    /// Enqueues jobs in one transaction (all or none). A job whose key the queue holds is
    /// left as it is when pending, running or done, and re-opened when parked.
    pub async fn enqueue_many(&self, requests: &[EnqueueRequest]) -> QueueResult<Vec<EnqueueOutcome>> {
        let prepared = prepare_requests(requests)?;
        let mut session = begin_queue(&self.pool).await?;
        let outcomes = insert_jobs(&mut session, &prepared, requests).await?;
        session.commit().await.context(|| "cannot commit the enqueued jobs".into())?;
        Ok(outcomes)
    }

    /// Stores a submission and enqueues a verification job for each Solution it carries, in
    /// one transaction: the submission and its jobs, or neither (a job spec that is not valid,
    /// a key that may not submit). The jobs are people's (they run before re-verification)
    /// and name the submission, whose page lists them.
    pub async fn add_submission_with_jobs(
        &self,
        presented: Option<&str>,
        title: String,
        documents: Vec<crate::state::SubmittedDocument>,
        jobs: Vec<JobSpec>,
    ) -> QueueResult<(crate::state::Submission, Vec<EnqueueOutcome>)> {
        let mut requests: Vec<EnqueueRequest> = jobs
            .into_iter()
            .map(|spec| EnqueueRequest {
                reason: Some(format!("submitted: {}", bounded(&title))),
                ..EnqueueRequest::new(spec, Origin::Submission)
            })
            .collect();
        let prepared = prepare_requests(&requests)?;
        let mut session = crate::state::begin_state_write(&self.pool).await?;
        let submission = crate::state::insert_submission(&mut session, presented, title, documents).await?;
        for request in &mut requests {
            request.submission_id = Some(submission.id.clone());
        }
        let outcomes = insert_jobs(&mut session, &prepared, &requests).await?;
        session.commit().await.context(|| "cannot commit the submission and its jobs".into())?;
        Ok((submission, outcomes))
    }

    /// Claims the first job (by priority, then age) that `worker` can run, with a lease of
    /// `lease`; None when there is none. Running jobs whose lease ran out are taken back on
    /// the way (see [`Job::lease_expired`]).
    pub async fn claim(&self, worker: &RegisteredWorker, lease: Duration) -> QueueResult<Option<ClaimedJob>> {
        let mut session = begin_queue(&self.pool).await?;
        let backend = session.backend();
        let now = db_now(&mut session).await?;
        touch_worker(&mut session, &worker.id, now).await?;
        const CLAIMABLE: &str =
            "((state = 'pending' AND available_ms <= ?1) OR (state = 'running' AND lease_expires_ms < ?1))";
        let candidates = sql(
            backend,
            &format!(
                "SELECT {JOB_COLUMNS} FROM verification_jobs WHERE {CLAIMABLE} \
                 AND (gpu_model IS NULL OR lower(gpu_model) = lower(?2)) \
                 AND (priority > ?3 OR (priority = ?3 AND seq > ?4)) \
                 ORDER BY priority, seq LIMIT {CLAIM_BATCH}"
            ),
        );
        // PostgreSQL: candidates are read without locks, then locked one at a time, skipping
        // any another claimer holds, so that concurrent claimers take the first free jobs in
        // priority order instead of one claimer locking a whole batch. SQLite: the write
        // transaction already excludes every other claimer.
        let lock_one = sql(
            backend,
            &format!(
                "SELECT {JOB_COLUMNS} FROM verification_jobs WHERE id = ?2 AND {CLAIMABLE} FOR UPDATE SKIP LOCKED"
            ),
        );
        let mut after = (i64::MIN, i64::MIN);
        let claimed = 'search: loop {
            let rows = session
                .fetch_all(
                    &candidates,
                    &[int(now), text(worker.environment.gpu.trim()), int(after.0), int(after.1)],
                    &JOB_STORAGES,
                )
                .await?;
            for values in &rows {
                let mut row = job_row(values, now)?;
                after = (row.job.priority, row.seq);
                if backend == Backend::Postgres {
                    let locked = session.fetch_all(&lock_one, &[int(now), text(&row.job.id)], &JOB_STORAGES).await?;
                    match locked.first() {
                        Some(values) => row = job_row(values, now)?,
                        None => continue,
                    }
                }
                if row.job.state == JobState::Running && reap(&mut session, &row, now).await? == JobState::Parked {
                    continue;
                }
                let requirement = &row.job.spec.requirement;
                if requirement.gpu.as_deref().is_some_and(|gpu| !worker.environment.same_gpu(gpu))
                    || !worker.environment.satisfies(&requirement.minimum_software)
                {
                    continue;
                }
                let lanes = row.job.spec.lanes(&worker.environment.gpu);
                if !take_lanes(&mut session, &row.job.id, &lanes, now).await? {
                    continue;
                }
                break 'search Some(row);
            }
            if (rows.len() as i64) < CLAIM_BATCH {
                break None;
            }
        };
        let Some(row) = claimed else {
            session.commit().await.context(|| "cannot end a claim".into())?;
            return Ok(None);
        };
        let token = uuid::Uuid::new_v4().to_string();
        let expires = now.saturating_add(millis(lease));
        let attempt = row.job.attempts + 1;
        let update = sql(
            backend,
            "UPDATE verification_jobs SET state = 'running', worker_id = ?1, lease_token = ?2, lease_expires_ms = ?3, \
             attempts = ?4, updated_ms = ?5 WHERE id = ?6 AND state = 'pending'",
        );
        let changed = session
            .execute(
                &update,
                &[text(&worker.id), text(&token), int(expires), int(attempt.into()), int(now), text(&row.job.id)],
            )
            .await
            .context(|| format!("cannot claim job {}", row.job.id))?;
        if changed != 1 {
            return Err(corrupt("claim", format!("job {} changed while it was claimed", row.job.id)));
        }
        let insert = sql(
            backend,
            "INSERT INTO verification_attempts (job_id, attempt, worker_id, lease_token, claimed_ms) VALUES (?1, ?2, ?3, ?4, ?5)",
        );
        session
            .execute(&insert, &[text(&row.job.id), int(attempt.into()), text(&worker.id), text(&token), int(now)])
            .await
            .context(|| "cannot record an attempt".into())?;
        let job = job_by(&mut session, "id", &row.job.id, now).await?.ok_or_else(|| corrupt("claim", &row.job.id))?.job;
        session.commit().await.context(|| "cannot commit a claim".into())?;
        let lease = Lease { job_id: job.id.clone(), token, attempt, worker_id: worker.id.clone(), duration: lease };
        Ok(Some(ClaimedJob { job, lease, claimed_at_ms: now }))
    }

    /// Extends a lease by its duration from now; returns the new expiry (UTC). Refused with
    /// [`QueueError::LeaseLost`] when the job is no longer held under it.
    pub async fn renew(&self, lease: &Lease) -> QueueResult<String> {
        let mut session = begin_queue(&self.pool).await?;
        let now = db_now(&mut session).await?;
        let expires = now.saturating_add(millis(lease.duration));
        let query = sql(
            session.backend(),
            "UPDATE verification_jobs SET lease_expires_ms = ?1, updated_ms = ?2 \
             WHERE id = ?3 AND lease_token = ?4 AND state = 'running'",
        );
        let changed = session
            .execute(&query, &[int(expires), int(now), text(&lease.job_id), text(&lease.token)])
            .await
            .context(|| format!("cannot renew the lease on job {}", lease.job_id))?;
        if changed != 1 {
            let refusal = held_job(&mut session, lease, now).await.err();
            session.rollback().await.context(|| "cannot roll back".into())?;
            return Err(refusal.unwrap_or_else(|| corrupt("renew", "the job is held but did not change")));
        }
        touch_worker(&mut session, &lease.worker_id, now).await?;
        session.commit().await.context(|| "cannot commit a lease renewal".into())?;
        Ok(utc(expires))
    }

    /// Publishes a job's records and verdict and marks it done, in one write transaction:
    /// the lease must still hold the job (else [`QueueError::LeaseLost`], nothing written);
    /// the records are verified and written as [`Catalog::import_lines`] writes them, with
    /// the record events ranking-v1 requires (else [`QueueError::Publication`], nothing
    /// written, the job still held).
    pub async fn complete(&self, lease: &Lease, outcome: &JobOutcome) -> QueueResult<Completion> {
        let options = ImportOptions {
            origin: Some(format!("verification job {}", lease.job_id)),
            append_record_events: true,
            ..ImportOptions::default()
        };
        let refused =
            |error: CatalogError| QueueError::Publication { job: lease.job_id.clone(), error: Box::new(error) };
        if let Some(refusal) = untraceable_verified_run(&outcome.lines) {
            return Err(refused(CatalogError::Refused(refusal)));
        }
        // Verified before the writer lock is taken: that is the slow part. A job may publish
        // no records (a verdict alone).
        if !outcome.lines.is_empty() {
            import::verify_lines(&self.pool, &outcome.lines, &options).await.map_err(refused)?;
        }
        let mut verdict = outcome.verdict.clone();
        verdict.summary = bounded(&verdict.summary);
        let verdict_json = serde_json::to_string(&verdict).map_err(|error| corrupt("verdict", error))?;

        let mut session = Session::begin(&self.pool, true).await?;
        let now = db_now(&mut session).await?;
        if let Err(refusal) = held_job(&mut session, lease, now).await {
            session.rollback().await.context(|| "cannot roll back".into())?;
            return Err(refusal);
        }
        let report = if outcome.lines.is_empty() {
            None
        } else {
            let (written, result) = import::write_within(session, &outcome.lines, &options).await?;
            session = written;
            match result {
                Ok(report) => Some(report),
                Err(error) => {
                    session.rollback().await.context(|| "cannot roll back".into())?;
                    return Err(refused(error));
                }
            }
        };
        let published = Published {
            run_ids: outcome
                .lines
                .iter()
                .filter(|line| line.table == "benchmark_runs")
                .map(|line| line.id().to_string())
                .collect(),
            rows_inserted: report.as_ref().map_or(0, |report| report.inserted()),
            record_events: report
                .iter()
                .flat_map(|report| &report.record_events)
                .map(|event| PublishedEvent {
                    comparison_key: event.comparison_key.clone(),
                    run_id: event.run_id.clone(),
                    previous_run_id: event.previous_run_id.clone(),
                    cause: event.cause.clone(),
                    at: event.at.clone(),
                })
                .collect(),
        };
        let published_json = serde_json::to_string(&published).map_err(|error| corrupt("publication", error))?;
        let query = sql(
            session.backend(),
            "UPDATE verification_jobs SET state = 'done', verdict = ?1, published = ?2, finished_ms = ?3, updated_ms = ?3, \
             worker_id = NULL, lease_token = NULL, lease_expires_ms = NULL WHERE id = ?4 AND lease_token = ?5",
        );
        let changed = session
            .execute(
                &query,
                &[text(verdict_json), text(published_json), int(now), text(&lease.job_id), text(&lease.token)],
            )
            .await
            .context(|| format!("cannot mark job {} done", lease.job_id))?;
        if changed != 1 {
            return Err(corrupt("complete", format!("job {} changed while it was completed", lease.job_id)));
        }
        let message = format!(
            "{}: {} run(s), {} row(s) written, {} record event(s)",
            verdict.status.as_str(),
            published.run_ids.len(),
            published.rows_inserted,
            published.record_events.len()
        );
        end_attempt(&mut session, &lease.token, AttemptOutcome::Completed, &message, now).await?;
        free_lanes(&mut session, &lease.job_id).await?;
        session.commit().await.context(|| format!("cannot commit job {}", lease.job_id))?;
        Ok(Completion { job_id: lease.job_id.clone(), verdict, published })
    }

    /// Records an environment failure of the attempt under `lease`: the job goes back to
    /// pending (claimable again after `retry_after`), or is parked with the reason when it
    /// has failed its limit. Returns the job's state afterwards.
    pub async fn fail(
        &self,
        lease: &Lease,
        failure: &EnvironmentFailure,
        retry_after: Duration,
    ) -> QueueResult<JobState> {
        let mut session = begin_queue(&self.pool).await?;
        let now = db_now(&mut session).await?;
        let row = match held_job(&mut session, lease, now).await {
            Ok(row) => row,
            Err(refusal) => {
                session.rollback().await.context(|| "cannot roll back".into())?;
                return Err(refusal);
            }
        };
        let reason = bounded(&format!("on worker {}: {}", lease.worker_id, failure.reason));
        end_attempt(&mut session, &lease.token, AttemptOutcome::Failed, &reason, now).await?;
        let failures = row.job.environment_failures + 1;
        let parked = failures >= row.job.max_environment_failures;
        let state = if parked { JobState::Parked } else { JobState::Pending };
        let query = sql(
            session.backend(),
            "UPDATE verification_jobs SET state = ?1, environment_failures = ?2, parked_reason = ?3, finished_ms = ?4, \
             available_ms = ?5, updated_ms = ?6, worker_id = NULL, lease_token = NULL, lease_expires_ms = NULL \
             WHERE id = ?7 AND lease_token = ?8",
        );
        session
            .execute(
                &query,
                &[
                    text(state.as_str()),
                    int(failures.into()),
                    opt_text(parked.then(|| park_reason(failures, &reason)).as_deref()),
                    SqlValue::Int(parked.then_some(now)),
                    int(now.saturating_add(millis(retry_after))),
                    int(now),
                    text(&lease.job_id),
                    text(&lease.token),
                ],
            )
            .await
            .context(|| format!("cannot record the failure of job {}", lease.job_id))?;
        free_lanes(&mut session, &lease.job_id).await?;
        session.commit().await.context(|| "cannot commit a job failure".into())?;
        Ok(state)
    }

    /// Gives a job back untouched (the worker is stopping, or must run it again): pending
    /// at once, nothing counted against it.
    pub async fn release(&self, lease: &Lease, note: &str) -> QueueResult<()> {
        let mut session = begin_queue(&self.pool).await?;
        let now = db_now(&mut session).await?;
        if let Err(refusal) = held_job(&mut session, lease, now).await {
            session.rollback().await.context(|| "cannot roll back".into())?;
            return Err(refusal);
        }
        end_attempt(&mut session, &lease.token, AttemptOutcome::Released, note, now).await?;
        let query = sql(
            session.backend(),
            "UPDATE verification_jobs SET state = 'pending', available_ms = ?1, updated_ms = ?1, worker_id = NULL, \
             lease_token = NULL, lease_expires_ms = NULL WHERE id = ?2 AND lease_token = ?3",
        );
        session
            .execute(&query, &[int(now), text(&lease.job_id), text(&lease.token)])
            .await
            .context(|| format!("cannot release job {}", lease.job_id))?;
        free_lanes(&mut session, &lease.job_id).await?;
        session.commit().await.context(|| "cannot commit a release".into())?;
        Ok(())
    }

    /// One job (by id or `sha256:` key) with its attempts and their workers.
    pub async fn job(&self, reference: &str) -> QueueResult<Option<JobDetail>> {
        let reference = reference.trim();
        let mut session = Session::begin(&self.pool, false).await?;
        let backend = session.backend();
        let now = db_now(&mut session).await?;
        let column = if reference.starts_with("sha256:") { "job_key" } else { "id" };
        let Some(row) = job_by(&mut session, column, &reference.to_ascii_lowercase(), now).await? else {
            session.rollback().await.context(|| "cannot end a read transaction".into())?;
            return Ok(None);
        };
        let query = sql(
            backend,
            "SELECT attempt, worker_id, claimed_ms, ended_ms, outcome, message FROM verification_attempts \
             WHERE job_id = ?1 ORDER BY attempt",
        );
        let storages = [Storage::Int, Storage::Text, Storage::Int, Storage::Int, Storage::Text, Storage::Text];
        let attempts: Vec<Attempt> = session
            .fetch_all(&query, &[text(&row.job.id)], &storages)
            .await?
            .iter()
            .map(|values| Attempt {
                attempt: column_int(values, 0).unwrap_or_default().clamp(0, u32::MAX as i64) as u32,
                worker_id: column_text(values, 1).unwrap_or_default(),
                claimed_at: utc(column_int(values, 2).unwrap_or_default()),
                ended_at: column_int(values, 3).map(utc),
                outcome: column_text(values, 4).and_then(|outcome| AttemptOutcome::parse(&outcome)),
                message: column_text(values, 5),
            })
            .collect();
        let worker_ids: BTreeSet<&str> = attempts.iter().map(|attempt| attempt.worker_id.as_str()).collect();
        let mut workers = Vec::new();
        for id in worker_ids {
            workers.extend(workers_where(&mut session, "id = ?1", &[text(id)]).await?);
        }
        session.rollback().await.context(|| "cannot end a read transaction".into())?;
        Ok(Some(JobDetail { job: row.job, attempts, workers }))
    }

    /// Jobs by state, submission or origin: pending ones in the order workers take them,
    /// the others newest first.
    pub async fn jobs(&self, query: &JobQuery) -> QueueResult<Vec<Job>> {
        let mut session = Session::begin(&self.pool, false).await?;
        let backend = session.backend();
        let now = db_now(&mut session).await?;
        let mut conditions = Vec::new();
        let mut params = Vec::new();
        let mut filter = |condition: &str, value: SqlValue| {
            params.push(value);
            conditions.push(condition.replace('#', &format!("?{}", params.len())));
        };
        if let Some(state) = query.state {
            filter("state = #", text(state.as_str()));
        }
        if let Some(submission) = &query.submission_id {
            filter("submission_id = #", text(submission.trim()));
        }
        if let Some(origin) = query.origin {
            filter("origin = #", text(origin.as_str()));
        }
        let order = if query.state == Some(JobState::Pending) { "priority, seq" } else { "seq DESC" };
        let text_query = format!(
            "SELECT {JOB_COLUMNS} FROM verification_jobs{}{} ORDER BY {order} LIMIT {}",
            if conditions.is_empty() { "" } else { " WHERE " },
            conditions.join(" AND "),
            query.limit.unwrap_or(100).min(10_000)
        );
        let rows = session.fetch_all(&sql(backend, &text_query), &params, &JOB_STORAGES).await?;
        session.rollback().await.context(|| "cannot end a read transaction".into())?;
        rows.iter().map(|values| job_row(values, now).map(|row| row.job)).collect()
    }

    /// How many jobs are in each state.
    pub async fn queue_summary(&self) -> QueueResult<QueueSummary> {
        let mut session = Session::begin(&self.pool, false).await?;
        let now = db_now(&mut session).await?;
        let query = sql(
            session.backend(),
            "SELECT state, COUNT(*), SUM(CASE WHEN state = 'running' AND lease_expires_ms < ?1 THEN 1 ELSE 0 END) \
             FROM verification_jobs GROUP BY state",
        );
        let rows = session.fetch_all(&query, &[int(now)], &[Storage::Text, Storage::Int, Storage::Int]).await?;
        session.rollback().await.context(|| "cannot end a read transaction".into())?;
        let mut summary = QueueSummary::default();
        for row in &rows {
            let count = column_int(row, 1).unwrap_or_default().max(0) as u64;
            match column_text(row, 0).as_deref().and_then(JobState::parse) {
                Some(JobState::Pending) => summary.pending = count,
                Some(JobState::Running) => {
                    summary.running = count;
                    summary.running_expired = column_int(row, 2).unwrap_or_default().max(0) as u64;
                }
                Some(JobState::Done) => summary.done = count,
                Some(JobState::Parked) => summary.parked = count,
                None => {}
            }
        }
        Ok(summary)
    }

    /// Every worker that registered, newest first.
    pub async fn workers(&self) -> QueueResult<Vec<WorkerRecord>> {
        let mut session = Session::begin(&self.pool, false).await?;
        let workers = workers_where(&mut session, "1 = 1", &[]).await?;
        session.rollback().await.context(|| "cannot end a read transaction".into())?;
        Ok(workers)
    }

    /// The distinct environments workers have reported: what re-verification compares runs
    /// against.
    pub async fn worker_environments(&self) -> QueueResult<Vec<EnvironmentFacts>> {
        let mut environments: Vec<EnvironmentFacts> = Vec::new();
        for worker in self.workers().await? {
            if !environments.contains(&worker.environment) {
                environments.push(worker.environment);
            }
        }
        Ok(environments)
    }

    /// Plans re-verification over the whole catalog against the environments workers have
    /// reported ([`ki_ranking::reverify::plan`]) and, unless `dry_run`, enqueues one job per
    /// planned run at the re-verification priority, in one transaction. Planning again
    /// enqueues nothing new: the jobs exist (pending or done) or their re-runs answer them.
    pub async fn enqueue_reverification(&self, options: &ReverifyOptions) -> QueueResult<ReverificationReport> {
        let index = self.ranking_index().await?;
        let seen = self.worker_environments().await?;
        let now = {
            let mut session = Session::begin(&self.pool, false).await?;
            let now = db_now(&mut session).await?;
            session.rollback().await.context(|| "cannot end a read transaction".into())?;
            now
        };
        let mut planned =
            reverify::plan(&index, &seen, &options.policy, ki_ranking::Instant(now.saturating_mul(1_000_000)));
        if let Some(limit) = options.limit {
            planned.truncate(limit);
        }
        if options.dry_run || planned.is_empty() {
            return Ok(ReverificationReport { planned, enqueued: Vec::new() });
        }
        let requests: Vec<EnqueueRequest> = planned
            .iter()
            .map(|decision| EnqueueRequest {
                spec: JobSpec {
                    subject: Subject::Implementation {
                        implementation_id: decision.implementation_id.clone(),
                        implementation_digest: decision.implementation_digest.clone(),
                    },
                    workloads: WorkloadSet {
                        operation: decision.operation.clone(),
                        workloads: vec![decision.workload_id.clone()],
                    },
                    protocol: decision.protocol.clone(),
                    requirement: Requirement {
                        gpu: Some(decision.gpu.clone()),
                        minimum_software: decision.minimum_software.clone(),
                    },
                    basis_run_id: Some(decision.basis_run_id.clone()),
                },
                origin: Origin::Reverification,
                submission_id: None,
                reverifies_run_id: Some(decision.run_id.clone()),
                reason: Some(describe_reverification(decision)),
                max_environment_failures: options.max_environment_failures,
            })
            .collect();
        let enqueued = self.enqueue_many(&requests).await?;
        Ok(ReverificationReport { planned, enqueued })
    }
}

/// Why a run is re-verified, for people.
fn describe_reverification(decision: &Reverification) -> String {
    let place = match decision.position {
        0 => "the #1 Verified run".to_string(),
        n => format!("Verified runner-up {n}"),
    };
    let why = match &decision.staleness {
        Staleness::Old { observed_at, age_days } => format!("observed {age_days} days ago ({observed_at})"),
        Staleness::NewerSoftware { newer } => {
            let list: Vec<String> = newer
                .iter()
                .map(|software| format!("{} {} → {}", software.name, software.run, software.seen))
                .collect();
            format!("a worker on {} runs newer software: {}", decision.gpu, list.join(", "))
        }
    };
    format!("re-verify {place} of comparison group {}: {why}", decision.comparison_key)
}

async fn workers_where(session: &mut Session, condition: &str, params: &[SqlValue]) -> QueueResult<Vec<WorkerRecord>> {
    let query = sql(
        session.backend(),
        &format!(
            "SELECT id, host, environment, started_ms, last_seen_ms, stopped_ms FROM verification_workers \
             WHERE {condition} ORDER BY seq DESC"
        ),
    );
    let storages = [Storage::Text, Storage::Text, Storage::Text, Storage::Int, Storage::Int, Storage::Int];
    let rows = session.fetch_all(&query, params, &storages).await?;
    rows.iter()
        .map(|values| {
            Ok(WorkerRecord {
                id: column_text(values, 0).unwrap_or_default(),
                host: column_text(values, 1).unwrap_or_default(),
                environment: parse_json(values, 2, "worker environment")?
                    .ok_or_else(|| corrupt("worker environment", "missing"))?,
                started_at: utc(column_int(values, 3).unwrap_or_default()),
                last_seen_at: utc(column_int(values, 4).unwrap_or_default()),
                stopped_at: column_int(values, 5).map(utc),
            })
        })
        .collect()
}
