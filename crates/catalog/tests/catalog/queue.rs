//! The verification queue's API on both backends (a real SQLite file and the real
//! PostgreSQL, a schema per test): idempotent enqueue, priorities, GPU and software
//! requirements, leases that expire and are taken over (the old holder refused, nothing
//! written), exactly-once publication in one transaction, parking, lanes, the read API, and
//! re-verification when a newer environment appears, with the record events that follow.
//!
//! Records come from `data/kernelindex-verified-h200-2026-11-30.jsonl.zst` (our own H200
//! runs, Apache-2.0, in the repository) and are re-issued by the queue's fixture executor
//! (`ki_catalog::queue::FixtureExecutor`), which measures nothing: these tests are of the
//! queue, not of the verifier. Process-level concurrency (several worker processes, one
//! SIGKILLed) is in `crates/ki/tests/queue_workers.rs`.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::time::{Duration, Instant};

use crate::support::TestDb;
use ki_catalog::queue::{
    self, AttemptOutcome, EnqueueRequest, Enqueued, EnvironmentFailure, Executor, FixtureExecutor, JobQuery, JobSpec,
    JobState, Origin, QueueError, Requirement, ReverifyOptions, StopWhen, Subject, WorkerOptions, WorkloadSet,
};
use ki_catalog::{Catalog, CatalogError, ExportLine, ImportOptions, KeyRefusal, Scope};
use ki_model::rows::{BenchmarkRunRow, RecordEventRow};
use ki_ranking::reverify::{EnvironmentFacts, Policy};
use ki_ranking::{CatalogRows, Index};
use serde_json::{Map, Value};

const RUNS_FILE: &str = "kernelindex-verified-h200-2026-11-30.jsonl.zst";
const OPERATION: &str = "gqa_paged_decode_h32_kv4_d128_ps1";

fn text<'a>(row: &'a Map<String, Value>, column: &str) -> &'a str {
    row.get(column).and_then(Value::as_str).unwrap_or("")
}

/// Our H200 rows for the first `workloads` workloads of OPERATION: every source, project,
/// operation and implementation row, those workloads, their runs and measurements.
fn fixture_lines(workloads: usize) -> Vec<ExportLine> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data").join(RUNS_FILE);
    let lines = ki_model::export::read_export(&path).expect("the bundled verified runs read");
    let operation = lines
        .iter()
        .find(|line| line.table == "operations" && text(&line.row, "name") == OPERATION)
        .map(|line| text(&line.row, "id").to_string())
        .expect("the operation is bundled");
    let chosen: HashSet<String> = lines
        .iter()
        .filter(|line| line.table == "workloads" && text(&line.row, "operationId") == operation)
        .take(workloads)
        .map(|line| line.id().to_string())
        .collect();
    let runs: HashSet<String> = lines
        .iter()
        .filter(|line| line.table == "benchmark_runs" && chosen.contains(text(&line.row, "workloadId")))
        .map(|line| line.id().to_string())
        .collect();
    lines
        .into_iter()
        .filter(|line| match line.table.as_str() {
            "workloads" => chosen.contains(line.id()),
            "benchmark_runs" => runs.contains(line.id()),
            "measurements" => runs.contains(text(&line.row, "runId")),
            _ => true,
        })
        .collect()
}

struct Fixture {
    _db: TestDb,
    catalog: Catalog,
    /// Runs per workload id.
    runs: BTreeMap<String, Vec<Map<String, Value>>>,
    protocol: String,
}

impl Fixture {
    async fn new(db: TestDb, workloads: usize) -> Fixture {
        let catalog = db.open().await;
        let lines = fixture_lines(workloads);
        let options = ImportOptions { append_record_events: true, ..ImportOptions::default() };
        catalog.import_lines(&lines, &options).await.expect("the fixture imports");
        let mut runs: BTreeMap<String, Vec<Map<String, Value>>> = BTreeMap::new();
        for line in lines.iter().filter(|line| line.table == "benchmark_runs") {
            runs.entry(text(&line.row, "workloadId").to_string()).or_default().push(line.row.clone());
        }
        let first = runs.values().next().and_then(|runs| runs.first()).expect("a run");
        let protocol = first["manifest"]["protocol"]["metadata"]["name"].as_str().expect("a protocol name").to_string();
        Fixture { _db: db, catalog, runs, protocol }
    }

    fn workloads(&self) -> Vec<&str> {
        self.runs.keys().map(String::as_str).collect()
    }

    /// A job re-running the `index`-th run (file order) of `workload`.
    fn spec(&self, workload: &str, index: usize) -> JobSpec {
        let run = &self.runs[workload][index];
        let implementation_id = text(run, "implementationId").to_string();
        JobSpec {
            subject: Subject::Implementation {
                implementation_id,
                implementation_digest: run["manifest"]["run"]["spec"]["implementationDigest"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            },
            workloads: WorkloadSet { operation: OPERATION.into(), workloads: vec![workload.to_string()] },
            protocol: self.protocol.clone(),
            requirement: Requirement::default(),
            basis_run_id: None,
        }
    }

    async fn run_count(&self) -> usize {
        self.catalog.rows::<BenchmarkRunRow>().await.unwrap().len()
    }
}

fn h200(driver: &str, cuda: &str) -> EnvironmentFacts {
    EnvironmentFacts {
        gpu: "NVIDIA H200".into(),
        architecture: Some("sm_90".into()),
        driver: Some(driver.into()),
        cuda_toolkit: Some(cuda.into()),
        framework: None,
        libraries: BTreeMap::new(),
    }
}

fn submission(spec: JobSpec) -> EnqueueRequest {
    EnqueueRequest::new(spec, Origin::Submission)
}

const LEASE: Duration = Duration::from_secs(30);

/// Waits (polling) until `done` holds, up to a generous deadline.
async fn wait_until<F: std::future::Future<Output = bool>>(what: &str, mut done: impl FnMut() -> F) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !done().await {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn enqueue_is_idempotent_by_key(db: TestDb) {
    let fixture = Fixture::new(db, 2).await;
    let catalog = &fixture.catalog;
    let workloads = fixture.workloads();
    let spec = fixture.spec(workloads[0], 0);
    let first = catalog.enqueue(&submission(spec.clone())).await.unwrap();
    assert_eq!(first.outcome, Enqueued::Created);
    assert_eq!(first.job.state, JobState::Pending);
    assert_eq!(first.job.key, spec.key().unwrap());
    // The same job again, its workloads named in another order and with spaces: one job.
    let mut again = spec.clone();
    again.workloads.workloads = vec![format!(" {} ", workloads[0]), workloads[0].to_string()];
    let second = catalog.enqueue(&submission(again)).await.unwrap();
    assert_eq!(second.outcome, Enqueued::AlreadyQueued);
    assert_eq!(second.job.id, first.job.id);
    // Another protocol or another requirement is another job.
    let mut other = spec.clone();
    other.protocol = "kernelindex-rerun-v2-random".into();
    assert_eq!(catalog.enqueue(&submission(other)).await.unwrap().outcome, Enqueued::Created);
    let mut on_a100 = spec.clone();
    on_a100.requirement.gpu = Some("NVIDIA A100".into());
    assert_eq!(catalog.enqueue(&submission(on_a100)).await.unwrap().outcome, Enqueued::Created);
    assert_eq!(catalog.queue_summary().await.unwrap().pending, 3);

    // Done: enqueuing again does nothing, and publishes nothing more.
    let worker = catalog.register_worker("test-host", &h200("580.159.04", "13.0")).await.unwrap();
    let executor = FixtureExecutor::new(catalog.clone(), worker.environment.clone(), Duration::ZERO);
    let claimed = catalog.claim(&worker, LEASE).await.unwrap().expect("a job");
    assert_eq!(claimed.job.id, first.job.id, "the oldest job of the highest priority goes first");
    let outcome = executor.execute(&claimed).await.unwrap();
    catalog.complete(&claimed.lease, &outcome).await.unwrap();
    let runs = fixture.run_count().await;
    let done = catalog.enqueue(&submission(spec.clone())).await.unwrap();
    assert_eq!(done.outcome, Enqueued::AlreadyDone);
    assert_eq!(done.job.state, JobState::Done);
    assert_eq!(fixture.run_count().await, runs);

    // Parked: enqueuing again re-opens it with its failures forgotten.
    let mut request = submission(fixture.spec(workloads[1], 0));
    request.max_environment_failures = Some(1);
    let parked = catalog.enqueue(&request).await.unwrap().job;
    // The other-protocol job is older: fail it, with a long retry delay, out of the way.
    let older = catalog.claim(&worker, LEASE).await.unwrap().expect("a job");
    assert_ne!(older.job.id, parked.id);
    let later = Duration::from_secs(3600);
    assert_eq!(catalog.fail(&older.lease, &EnvironmentFailure::new("busy"), later).await.unwrap(), JobState::Pending);
    let held = catalog.claim(&worker, LEASE).await.unwrap().expect("a job");
    assert_eq!(held.job.id, parked.id);
    let state = catalog.fail(&held.lease, &EnvironmentFailure::new("no CUDA device"), Duration::ZERO).await.unwrap();
    assert_eq!(state, JobState::Parked);
    let reopened = catalog.enqueue(&request).await.unwrap();
    assert_eq!(reopened.outcome, Enqueued::Reopened);
    assert_eq!(reopened.job.state, JobState::Pending);
    assert_eq!(reopened.job.environment_failures, 0);
    assert_eq!(reopened.job.parked_reason, None);

    // Bad specs are refused with the field named, and nothing is enqueued.
    let before = catalog.queue_summary().await.unwrap();
    let mut empty = spec.clone();
    empty.workloads.workloads.clear();
    let error = catalog.enqueue(&submission(empty)).await.unwrap_err();
    assert!(error.to_string().contains("/workloads/workloads"), "{error}");
    let mut bad_version = spec;
    bad_version.requirement.minimum_software.insert("driver".into(), "latest".into());
    let batch = [submission(fixture.spec(workloads[1], 2)), submission(bad_version)];
    let error = catalog.enqueue_many(&batch).await.unwrap_err();
    assert!(error.to_string().contains("job 2 of 2: /requirement/minimumSoftware/driver"), "{error}");
    assert_eq!(catalog.queue_summary().await.unwrap(), before, "a refused batch enqueues nothing");
}
on_both_backends!(enqueue_is_idempotent_by_key);

async fn submissions_run_before_reverification(db: TestDb) {
    let fixture = Fixture::new(db, 4).await;
    let catalog = &fixture.catalog;
    let workloads = fixture.workloads();
    let mut bulk = Vec::new();
    for workload in &workloads[..3] {
        bulk.push(
            catalog.enqueue(&EnqueueRequest::new(fixture.spec(workload, 0), Origin::Reverification)).await.unwrap(),
        );
    }
    let person = catalog.enqueue(&submission(fixture.spec(workloads[3], 0))).await.unwrap();
    assert!(person.job.priority < bulk[0].job.priority);
    let pending = catalog.jobs(&JobQuery { state: Some(JobState::Pending), ..JobQuery::default() }).await.unwrap();
    let order: Vec<&str> = pending.iter().map(|job| job.id.as_str()).collect();
    let expected: Vec<&str> =
        std::iter::once(person.job.id.as_str()).chain(bulk.iter().map(|b| b.job.id.as_str())).collect();
    assert_eq!(order, expected, "pending jobs list in the order workers take them");
    let worker = catalog.register_worker("test-host", &h200("580.159.04", "13.0")).await.unwrap();
    let mut claimed = Vec::new();
    while let Some(job) = catalog.claim(&worker, LEASE).await.unwrap() {
        claimed.push(job.job.id.clone());
    }
    assert_eq!(claimed, expected, "the submission first, then re-verification oldest first");
    let summary = catalog.queue_summary().await.unwrap();
    assert_eq!((summary.pending, summary.running), (0, 4));
}
on_both_backends!(submissions_run_before_reverification);

async fn requirements_match_the_worker(db: TestDb) {
    let fixture = Fixture::new(db, 1).await;
    let catalog = &fixture.catalog;
    let workload = fixture.workloads()[0];
    let mut on_a100 = fixture.spec(workload, 0);
    on_a100.requirement.gpu = Some("NVIDIA A100-SXM4-80GB".into());
    let a100_job = catalog.enqueue(&submission(on_a100)).await.unwrap().job;
    let mut newer = fixture.spec(workload, 1);
    newer.requirement.gpu = Some("nvidia h200".into());
    newer.requirement.minimum_software = BTreeMap::from([("driver".into(), "590".into())]);
    let newer_job = catalog.enqueue(&submission(newer)).await.unwrap().job;

    let old = catalog.register_worker("old-host", &h200("580.159.04", "13.0")).await.unwrap();
    assert_eq!(catalog.claim(&old, LEASE).await.unwrap(), None, "neither job fits an H200 with driver 580");
    let new = catalog.register_worker("new-host", &h200("590.48.01", "13.1")).await.unwrap();
    let claimed = catalog.claim(&new, LEASE).await.unwrap().expect("the driver-590 job");
    assert_eq!(claimed.job.id, newer_job.id);
    assert_eq!(catalog.claim(&new, LEASE).await.unwrap(), None, "the A100 job waits for an A100");
    let a100 = EnvironmentFacts { gpu: "NVIDIA A100-SXM4-80GB".into(), ..h200("575.57.08", "12.9") };
    let a100_worker = catalog.register_worker("a100-host", &a100).await.unwrap();
    assert_eq!(catalog.claim(&a100_worker, LEASE).await.unwrap().map(|job| job.job.id), Some(a100_job.id));

    // Workers are recorded with their GPU and software; the environments seen are distinct.
    let workers = catalog.workers().await.unwrap();
    assert_eq!(workers.len(), 3);
    assert_eq!(workers[0].host, "a100-host");
    assert_eq!(workers[0].environment.driver.as_deref(), Some("575.57.08"));
    assert_eq!(catalog.worker_environments().await.unwrap().len(), 3);
}
on_both_backends!(requirements_match_the_worker);

async fn an_expired_lease_is_taken_over_and_its_holder_refused(db: TestDb) {
    let fixture = Fixture::new(db, 1).await;
    let catalog = &fixture.catalog;
    let job = catalog.enqueue(&submission(fixture.spec(fixture.workloads()[0], 0))).await.unwrap().job;
    let environment = h200("580.159.04", "13.0");
    let stalled = catalog.register_worker("stalled-host", &environment).await.unwrap();
    let rescuer = catalog.register_worker("rescue-host", &environment).await.unwrap();
    let executor = FixtureExecutor::new(catalog.clone(), environment, Duration::ZERO);

    // Short, but long enough that the next line runs well inside it on a loaded machine.
    let first = catalog.claim(&stalled, Duration::from_secs(5)).await.unwrap().expect("the job");
    assert_eq!(catalog.claim(&rescuer, LEASE).await.unwrap(), None, "a live lease is never taken over");
    wait_until("the lease expires", || async {
        catalog.job(&job.id).await.unwrap().is_some_and(|detail| detail.job.lease_expired)
    })
    .await;
    assert_eq!(catalog.queue_summary().await.unwrap().running_expired, 1);
    let second = catalog.claim(&rescuer, LEASE).await.unwrap().expect("the job, taken over");
    assert_eq!(second.job.id, job.id);
    assert_eq!(second.lease.attempt, 2);
    assert_eq!(second.job.environment_failures, 1, "an expired lease counts against the job");

    // The stalled worker wakes up: its renewal and its completion are refused, nothing written.
    let runs = fixture.run_count().await;
    assert!(matches!(catalog.renew(&first.lease).await, Err(QueueError::LeaseLost { .. })));
    let stale_outcome = executor.execute(&first).await.unwrap();
    let refused = catalog.complete(&first.lease, &stale_outcome).await.unwrap_err();
    assert!(matches!(refused, QueueError::LeaseLost { .. }), "{refused}");
    assert!(refused.to_string().contains("attempt 2 on worker"), "{refused}");
    assert!(matches!(
        catalog.fail(&first.lease, &EnvironmentFailure::new("late"), Duration::ZERO).await,
        Err(QueueError::LeaseLost { .. })
    ));
    assert_eq!(fixture.run_count().await, runs, "the refused completion wrote nothing");

    // The rescuer publishes, once.
    catalog.renew(&second.lease).await.unwrap();
    let outcome = executor.execute(&second).await.unwrap();
    let completion = catalog.complete(&second.lease, &outcome).await.unwrap();
    assert_eq!(completion.published.run_ids.len(), 1);
    assert_eq!(fixture.run_count().await, runs + 1);
    let again = catalog.complete(&second.lease, &outcome).await.unwrap_err();
    assert!(matches!(again, QueueError::LeaseLost { .. }), "a second completion is refused: {again}");
    assert_eq!(fixture.run_count().await, runs + 1);

    let detail = catalog.job(&job.id).await.unwrap().expect("the job");
    assert_eq!(detail.job.state, JobState::Done);
    assert_eq!(detail.job.worker_id, None);
    let outcomes: Vec<Option<AttemptOutcome>> = detail.attempts.iter().map(|attempt| attempt.outcome).collect();
    assert_eq!(outcomes, [Some(AttemptOutcome::Expired), Some(AttemptOutcome::Completed)]);
    assert_eq!(detail.attempts[0].worker_id, stalled.id);
    assert!(detail.attempts[0].message.as_deref().unwrap_or("").contains("expired"), "{:?}", detail.attempts[0]);
    assert_eq!(detail.workers.len(), 2);
    let published = detail.job.published.expect("what it published");
    assert_eq!(published.run_ids, completion.published.run_ids);
    // The same job by its key.
    assert_eq!(catalog.job(&job.key).await.unwrap().map(|detail| detail.job.id), Some(job.id));
}
on_both_backends!(an_expired_lease_is_taken_over_and_its_holder_refused);

async fn environment_failures_park_a_job_with_the_reason(db: TestDb) {
    let fixture = Fixture::new(db, 1).await;
    let catalog = &fixture.catalog;
    let mut request = submission(fixture.spec(fixture.workloads()[0], 0));
    request.max_environment_failures = Some(2);
    request.submission_id = Some("submission-7".into());
    let job = catalog.enqueue(&request).await.unwrap().job;
    let worker = catalog.register_worker("test-host", &h200("580.159.04", "13.0")).await.unwrap();

    let first = catalog.claim(&worker, LEASE).await.unwrap().expect("the job");
    let state =
        catalog.fail(&first.lease, &EnvironmentFailure::new("CUDA_ERROR_NO_DEVICE"), Duration::from_secs(3600)).await;
    assert_eq!(state.unwrap(), JobState::Pending);
    assert_eq!(catalog.claim(&worker, LEASE).await.unwrap(), None, "a failed job waits its retry delay");
    catalog.enqueue(&request).await.unwrap();
    let job_now = catalog.job(&job.id).await.unwrap().unwrap().job;
    assert_eq!(
        (job_now.state, job_now.environment_failures),
        (JobState::Pending, 1),
        "re-enqueuing a pending job changes nothing"
    );

    let mut retry = submission(fixture.spec(fixture.workloads()[0], 1));
    retry.max_environment_failures = Some(2);
    let other = catalog.enqueue(&retry).await.unwrap().job;
    let held = catalog.claim(&worker, LEASE).await.unwrap().expect("the other job");
    assert_eq!(held.job.id, other.id);
    let state = catalog.fail(&held.lease, &EnvironmentFailure::new("out of disk"), Duration::ZERO).await.unwrap();
    assert_eq!(state, JobState::Pending);
    let held = catalog.claim(&worker, LEASE).await.unwrap().expect("the other job again");
    let state = catalog.fail(&held.lease, &EnvironmentFailure::new("nvcc not found"), Duration::ZERO).await.unwrap();
    assert_eq!(state, JobState::Parked);
    let parked = catalog.job(&other.id).await.unwrap().unwrap();
    let reason = parked.job.parked_reason.clone().expect("a reason");
    assert!(reason.contains("parked after 2 environment failure(s)") && reason.contains("nvcc not found"), "{reason}");
    assert_eq!(parked.attempts.len(), 2);
    assert!(parked.attempts.iter().all(|attempt| attempt.outcome == Some(AttemptOutcome::Failed)));
    assert!(parked.job.finished_at.is_some());
    assert_eq!(catalog.claim(&worker, LEASE).await.unwrap(), None, "a parked job is not claimed");

    let summary = catalog.queue_summary().await.unwrap();
    assert_eq!((summary.pending, summary.parked), (1, 1));
    let listed = catalog.jobs(&JobQuery { state: Some(JobState::Parked), ..JobQuery::default() }).await.unwrap();
    assert_eq!(listed.iter().map(|job| job.id.as_str()).collect::<Vec<_>>(), [other.id.as_str()]);
    let of_submission =
        catalog.jobs(&JobQuery { submission_id: Some("submission-7".into()), ..JobQuery::default() }).await.unwrap();
    assert_eq!(of_submission.iter().map(|job| job.id.as_str()).collect::<Vec<_>>(), [job.id.as_str()]);
}
on_both_backends!(environment_failures_park_a_job_with_the_reason);

async fn jobs_of_one_lane_run_one_at_a_time(db: TestDb) {
    let fixture = Fixture::new(db, 2).await;
    let catalog = &fixture.catalog;
    let workloads = fixture.workloads();
    // Two implementations on one workload share a lane; another workload is another lane.
    let first = catalog.enqueue(&submission(fixture.spec(workloads[0], 0))).await.unwrap().job;
    let same_lane = catalog.enqueue(&submission(fixture.spec(workloads[0], 1))).await.unwrap().job;
    let other_lane = catalog.enqueue(&submission(fixture.spec(workloads[1], 0))).await.unwrap().job;
    let environment = h200("580.159.04", "13.0");
    let a = catalog.register_worker("host-a", &environment).await.unwrap();
    let b = catalog.register_worker("host-b", &environment).await.unwrap();
    let held = catalog.claim(&a, LEASE).await.unwrap().expect("a job");
    assert_eq!(held.job.id, first.id);
    let next = catalog.claim(&b, LEASE).await.unwrap().expect("a job");
    assert_eq!(next.job.id, other_lane.id, "the job sharing the held lane waits");
    assert_eq!(catalog.claim(&b, LEASE).await.unwrap(), None);
    let executor = FixtureExecutor::new(catalog.clone(), environment, Duration::ZERO);
    let outcome = executor.execute(&held).await.unwrap();
    catalog.complete(&held.lease, &outcome).await.unwrap();
    let after = catalog.claim(&b, LEASE).await.unwrap().expect("the lane is free");
    assert_eq!(after.job.id, same_lane.id);
    // A released job frees its lane too.
    catalog.release(&after.lease, "stopping").await.unwrap();
    let again = catalog.claim(&a, LEASE).await.unwrap().expect("released, pending again");
    assert_eq!((again.job.id.as_str(), again.lease.attempt), (same_lane.id.as_str(), 2));
    let detail = catalog.job(&same_lane.id).await.unwrap().unwrap();
    assert_eq!(detail.attempts[0].outcome, Some(AttemptOutcome::Released));
    assert_eq!(detail.job.environment_failures, 0, "a release is not a failure");
}
on_both_backends!(jobs_of_one_lane_run_one_at_a_time);

async fn refused_records_publish_nothing_and_leave_the_job_held(db: TestDb) {
    let fixture = Fixture::new(db, 1).await;
    let catalog = &fixture.catalog;
    let job = catalog.enqueue(&submission(fixture.spec(fixture.workloads()[0], 0))).await.unwrap().job;
    let environment = h200("590.48.01", "13.1");
    let worker = catalog.register_worker("test-host", &environment).await.unwrap();
    let executor = FixtureExecutor::new(catalog.clone(), environment, Duration::ZERO);
    let held = catalog.claim(&worker, LEASE).await.unwrap().expect("the job");
    let good = executor.execute(&held).await.unwrap();
    let mut bad = good.clone();
    let run = bad.lines.iter_mut().find(|line| line.table == "benchmark_runs").unwrap();
    run.row.insert("primaryValue".into(), serde_json::json!(1));
    let events_before = catalog.rows::<RecordEventRow>().await.unwrap().len();
    let runs = fixture.run_count().await;
    let error = catalog.complete(&held.lease, &bad).await.unwrap_err();
    assert!(matches!(error, QueueError::Publication { .. }), "{error}");
    assert!(error.to_string().contains("nothing published"), "{error}");
    assert_eq!(fixture.run_count().await, runs);
    assert_eq!(catalog.rows::<RecordEventRow>().await.unwrap().len(), events_before);
    let still = catalog.job(&job.id).await.unwrap().unwrap().job;
    assert_eq!((still.state, still.verdict), (JobState::Running, None), "the verdict was not written either");

    let completion = catalog.complete(&held.lease, &good).await.unwrap();
    assert_eq!(fixture.run_count().await, runs + 1);
    // A new environment is a new comparison group: the re-run takes its record.
    assert_eq!(completion.published.record_events.len(), 1);
    assert_eq!(completion.published.record_events[0].previous_run_id, None);
    assert_eq!(catalog.rows::<RecordEventRow>().await.unwrap().len(), events_before + 1);
    let done = catalog.job(&job.id).await.unwrap().unwrap().job;
    assert_eq!(done.state, JobState::Done);
    assert_eq!(done.verdict.map(|verdict| verdict.status), Some(queue::VerdictStatus::Passed));
}
on_both_backends!(refused_records_publish_nothing_and_leave_the_job_held);

/// The outcome's run re-digested after `strip` changed its manifest: records the import's
/// verification takes (digests and keys recomputed), so only the queue's own rule can refuse.
fn redigested(
    outcome: &queue::JobOutcome,
    workload: &Map<String, Value>,
    strip: impl Fn(&mut Map<String, Value>),
) -> queue::JobOutcome {
    let mut changed = outcome.clone();
    let line = changed.lines.iter_mut().find(|line| line.table == "benchmark_runs").unwrap();
    strip(&mut line.row);
    let manifest = &line.row["manifest"];
    let environment = manifest.get("environment").cloned().unwrap_or(Value::Null);
    if let Ok(keys) = ki_model::identity::benchmark_run_keys(
        &manifest["run"],
        &manifest["protocol"],
        &environment,
        &workload["manifest"],
    ) {
        line.row.insert("runDigest".into(), Value::String(keys.run_digest));
    }
    changed
}

/// A Verified run (reproduced by KernelIndex) published through the queue must carry its
/// environment manifest and raw samples: records that pass the import's verification but
/// lack either are refused, nothing written, and the job stays held.
async fn a_verified_run_without_raw_samples_or_environment_is_not_published(db: TestDb) {
    let fixture = Fixture::new(db, 1).await;
    let catalog = &fixture.catalog;
    let workload_id = fixture.workloads()[0].to_string();
    let job = catalog.enqueue(&submission(fixture.spec(&workload_id, 0))).await.unwrap().job;
    let environment = h200("590.48.01", "13.1");
    let worker = catalog.register_worker("test-host", &environment).await.unwrap();
    let executor = FixtureExecutor::new(catalog.clone(), environment, Duration::ZERO);
    let held = catalog.claim(&worker, LEASE).await.unwrap().expect("the job");
    let good = executor.execute(&held).await.unwrap();
    let workload = fixture_lines(1)
        .into_iter()
        .find(|line| line.table == "workloads" && line.id() == workload_id)
        .map(|line| line.row)
        .unwrap();
    let no_samples = redigested(&good, &workload, |row| {
        let spec = row["manifest"]["run"]["spec"].as_object_mut().unwrap();
        spec.remove("evidence");
        if let Some(timing) = spec.get_mut("timing").and_then(Value::as_object_mut) {
            timing.remove("rawSamples");
        }
        row.insert("hasRawEvidence".into(), Value::Bool(false));
    });
    let runs = fixture.run_count().await;
    let error = catalog.complete(&held.lease, &no_samples).await.unwrap_err();
    assert!(matches!(error, QueueError::Publication { .. }), "{error}");
    assert!(error.to_string().contains("raw samples"), "{error}");
    let claimed = redigested(&good, &workload, |row| {
        row.insert("hasRawEvidence".into(), Value::Bool(false));
    });
    let error = catalog.complete(&held.lease, &claimed).await.unwrap_err();
    assert!(error.to_string().contains("raw samples"), "{error}");
    let no_environment = redigested(&good, &workload, |row| {
        row["manifest"].as_object_mut().unwrap().remove("environment");
    });
    let error = catalog.complete(&held.lease, &no_environment).await.unwrap_err();
    assert!(error.to_string().contains("environment"), "{error}");
    assert_eq!(fixture.run_count().await, runs);
    let still = catalog.job(&job.id).await.unwrap().unwrap().job;
    assert_eq!((still.state, still.verdict), (JobState::Running, None));
    // With both, it is published.
    catalog.complete(&held.lease, &good).await.unwrap();
    assert_eq!(fixture.run_count().await, runs + 1);
}
on_both_backends!(a_verified_run_without_raw_samples_or_environment_is_not_published);

/// A newer driver and CUDA appear on an H200 worker: the #1 Verified run of every group
/// and its runner-up are enqueued at the re-verification priority, run by a worker in that
/// environment and published into the new environment's groups, whose record events are
/// the ones ranking-v1 requires (first arrival takes the record, a strictly faster later
/// one takes it over). Planning again enqueues nothing.
async fn a_newer_environment_reverifies_the_leaders(db: TestDb) {
    let fixture = Fixture::new(db, 3).await;
    let catalog = &fixture.catalog;
    let policy = Policy { max_age_ns: None, runners_up: 1 };
    // Workers so far run what the runs were measured on: nothing to do.
    let old = h200("580.159.04", "13.0");
    catalog.register_worker("old-host", &old).await.unwrap();
    let a100 = EnvironmentFacts { gpu: "NVIDIA A100-SXM4-80GB".into(), ..h200("600.10", "13.2") };
    catalog.register_worker("a100-host", &a100).await.unwrap();
    assert!(catalog.enqueue_reverification(&ReverifyOptions::new(policy.clone())).await.unwrap().planned.is_empty());

    let newer = h200("590.48.01", "13.1");
    let worker = catalog.register_worker("new-host", &newer).await.unwrap();
    let dry = catalog
        .enqueue_reverification(&ReverifyOptions { dry_run: true, ..ReverifyOptions::new(policy.clone()) })
        .await
        .unwrap();
    assert_eq!(dry.planned.len(), 6, "3 groups x (#1 + 1 runner-up): {:#?}", dry.planned);
    assert!(dry.enqueued.is_empty());
    assert_eq!(catalog.queue_summary().await.unwrap().pending, 0, "a dry run enqueues nothing");
    let report = catalog.enqueue_reverification(&ReverifyOptions::new(policy.clone())).await.unwrap();
    assert_eq!(report.planned, dry.planned);
    assert!(report.enqueued.iter().all(|outcome| outcome.outcome == Enqueued::Created));

    // The planned runs are each group's two best (the index's ranking), and the jobs require
    // the newer software on an H200.
    let index = catalog.ranking_index().await.unwrap();
    for decision in &report.planned {
        let cohort = index.cohort(&decision.comparison_key).unwrap();
        let run = index.run_index(&decision.run_id).unwrap();
        assert_eq!(cohort.ranking[decision.position].run, run);
        assert_eq!(decision.minimum_software.get("driver").map(String::as_str), Some("590.48.01"));
        assert_eq!(decision.minimum_software.get("cudaToolkit").map(String::as_str), Some("13.1"));
    }
    let job = &report.enqueued[0].job;
    assert_eq!(job.origin, Origin::Reverification);
    assert_eq!(job.reverifies_run_id.as_deref(), Some(report.planned[0].run_id.as_str()));
    assert!(job.reason.as_deref().unwrap_or("").contains("driver 580.159.04 → 590.48.01"), "{:?}", job.reason);

    // The old worker cannot take them; the new one runs them all.
    let old_worker = catalog.register_worker("old-host", &old).await.unwrap();
    assert_eq!(catalog.claim(&old_worker, LEASE).await.unwrap(), None);
    let executor = FixtureExecutor::new(catalog.clone(), newer.clone(), Duration::ZERO);
    let options = WorkerOptions { lease: LEASE, stop: StopWhen::Idle, ..WorkerOptions::default() };
    let mut events = Vec::new();
    let done = queue::run_worker(catalog, &worker, &executor, &options, std::future::pending(), &mut |event| {
        events.push(event.clone())
    })
    .await
    .unwrap();
    assert_eq!((done.claimed, done.completed), (6, 6), "{events:#?}");

    // Each job published one run in the newer environment's group of its workload.
    let jobs = catalog.jobs(&JobQuery { origin: Some(Origin::Reverification), ..JobQuery::default() }).await.unwrap();
    assert!(jobs.iter().all(|job| job.state == JobState::Done));
    let all_runs = catalog.rows::<BenchmarkRunRow>().await.unwrap();
    let by_id: HashMap<&str, &BenchmarkRunRow> = all_runs.iter().map(|run| (run.id.as_str(), run)).collect();
    let mut new_groups: BTreeMap<String, Vec<&BenchmarkRunRow>> = BTreeMap::new();
    for job in &jobs {
        let published = job.published.as_ref().unwrap();
        assert_eq!(published.run_ids.len(), 1);
        let run = by_id[published.run_ids[0].as_str()];
        assert_eq!(run.manifest["environment"]["spec"]["software"]["driver"], "590.48.01");
        let original = by_id[job.reverifies_run_id.as_deref().unwrap()];
        assert_eq!(run.workload_id, original.workload_id);
        assert_eq!(run.implementation_id, original.implementation_id);
        assert_ne!(run.comparison_key, original.comparison_key);
        new_groups.entry(run.comparison_key.clone()).or_default().push(run);
    }
    assert_eq!(new_groups.len(), 3);

    // The expected record events of each new group, from its runs in observation order.
    let stored = catalog.rows::<RecordEventRow>().await.unwrap();
    let published_events: usize = jobs.iter().map(|job| job.published.as_ref().unwrap().record_events.len()).sum();
    let mut expected_total = 0;
    for (key, runs) in &mut new_groups {
        runs.sort_by(|a, b| a.observed_at.cmp(&b.observed_at).then(a.id.cmp(&b.id)));
        let mut expected: Vec<(String, Option<String>)> = Vec::new();
        let mut leader: Option<(&str, f64)> = None;
        for run in runs.iter() {
            let value = run.primary_value.unwrap();
            if leader.is_none_or(|(_, best)| value < best) {
                expected.push((run.id.clone(), leader.map(|(id, _)| id.to_string())));
                leader = Some((&run.id, value));
            }
        }
        let got: Vec<(String, Option<String>)> = stored
            .iter()
            .filter(|event| event.comparison_key == *key)
            .map(|event| (event.run_id.clone(), event.previous_run_id.clone()))
            .collect();
        assert_eq!(got, expected, "record events of group {key}");
        assert!(stored.iter().filter(|event| event.comparison_key == *key).all(|e| e.cause == "new_run"));
        expected_total += expected.len();
    }
    assert_eq!(published_events, expected_total, "each job's publication says which events it appended");

    // The whole catalog verifies, and its ledger equals the recomputed one.
    let mut export = Vec::new();
    catalog.export_lines_to(&mut export).await.unwrap();
    let file = tempfile::Builder::new().suffix(".jsonl").tempfile().unwrap();
    std::fs::write(file.path(), &export).unwrap();
    let lines = ki_model::export::read_export(file.path()).unwrap();
    assert!(ki_model::verify::verify_export(&lines).is_clean());
    let mut rows = CatalogRows::new();
    for line in lines {
        rows.push(&line.table, line.row, None);
    }
    assert!(Index::from_owned_rows(rows).unwrap().verify_record_events().is_clean());

    // Planning again: the re-runs answer every group; nothing new is enqueued.
    let again = catalog.enqueue_reverification(&ReverifyOptions::new(policy.clone())).await.unwrap();
    assert!(again.planned.is_empty(), "{:#?}", again.planned);
    assert_eq!(catalog.queue_summary().await.unwrap().pending, 0);
}
on_both_backends!(a_newer_environment_reverifies_the_leaders);

/// Age alone: with a threshold shorter than the runs' age, each group's #1 is re-run in the
/// same environment (so the same group), once.
async fn old_runs_are_reverified_once(db: TestDb) {
    let fixture = Fixture::new(db, 2).await;
    let catalog = &fixture.catalog;
    let environment = h200("580.159.04", "13.0");
    let worker = catalog.register_worker("host", &environment).await.unwrap();
    // The bundled runs were observed on 2026-11-30; a minute is long past.
    let policy = Policy { max_age_ns: Some(60 * 1_000_000_000), runners_up: 0 };
    let first = ReverifyOptions { limit: Some(1), ..ReverifyOptions::new(policy.clone()) };
    let first = catalog.enqueue_reverification(&first).await.unwrap();
    assert_eq!(first.enqueued.iter().map(|outcome| outcome.outcome).collect::<Vec<_>>(), [Enqueued::Created]);
    let report = catalog.enqueue_reverification(&ReverifyOptions::new(policy.clone())).await.unwrap();
    assert_eq!(report.planned.len(), 2);
    let outcomes: Vec<Enqueued> = report.enqueued.iter().map(|outcome| outcome.outcome).collect();
    assert_eq!(outcomes, [Enqueued::AlreadyQueued, Enqueued::Created], "planning again finds the pending job");
    assert!(report.planned.iter().all(|decision| decision.minimum_software.is_empty() && decision.position == 0));
    let executor = FixtureExecutor::new(catalog.clone(), environment, Duration::ZERO);
    let options = WorkerOptions { lease: LEASE, stop: StopWhen::Idle, ..WorkerOptions::default() };
    let done =
        queue::run_worker(catalog, &worker, &executor, &options, std::future::pending(), &mut |_| {}).await.unwrap();
    assert_eq!(done.completed, 2);
    for job in catalog.jobs(&JobQuery::default()).await.unwrap() {
        let run_id = &job.published.as_ref().unwrap().run_ids[0];
        let run = catalog.run_by_id(run_id).await.unwrap().unwrap();
        let original = catalog.run_by_id(job.reverifies_run_id.as_deref().unwrap()).await.unwrap().unwrap();
        assert_eq!(run.comparison_key, original.comparison_key, "same environment, same group");
    }
    let again = catalog.enqueue_reverification(&ReverifyOptions::new(policy.clone())).await.unwrap();
    assert!(again.planned.is_empty(), "the fresh re-runs answer the age: {:#?}", again.planned);
}
on_both_backends!(old_runs_are_reverified_once);

/// A submission that carries Solutions: the submission and one job per Solution are written
/// in one transaction (people's priority, naming the submission), or nothing is: a job spec
/// that is not valid is refused before anything is written (the key's daily quota is not
/// spent), and a key that may not submit writes neither.
async fn a_submission_and_its_solution_jobs_are_written_together(db: TestDb) {
    let fixture = Fixture::new(db, 2).await;
    let catalog = &fixture.catalog;
    let workloads = fixture.workloads();
    let (_, secret) = catalog.create_api_key("submitter", &[Scope::Submit], 1).await.unwrap();
    let solution = |name: &str, workload: &str| JobSpec {
        subject: Subject::Solution {
            name: name.into(),
            document: serde_json::json!({"name": name, "definition": OPERATION, "spec": {"language": "python"}}),
        },
        workloads: WorkloadSet { operation: OPERATION.into(), workloads: vec![workload.to_string()] },
        protocol: fixture.protocol.clone(),
        requirement: Requirement::default(),
        basis_run_id: None,
    };
    let jobs_before = catalog.queue_summary().await.unwrap();

    let invalid = catalog
        .add_submission_with_jobs(Some(&secret), "bad".into(), Vec::new(), vec![solution("  ", workloads[0])])
        .await
        .unwrap_err();
    assert!(matches!(&invalid, QueueError::Invalid(message) if message.contains("/subject/name")), "{invalid}");
    let unknown = catalog
        .add_submission_with_jobs(Some("ki_not_a_key"), "x".into(), Vec::new(), vec![solution("a", workloads[0])])
        .await
        .unwrap_err();
    assert!(matches!(&unknown, QueueError::Catalog(CatalogError::KeyRefused(KeyRefusal::UnknownKey))), "{unknown:?}");
    assert_eq!(catalog.queue_summary().await.unwrap(), jobs_before, "refused submissions enqueue nothing");

    // The quota of one write was not spent by the refusals above.
    let (submission, outcomes) = catalog
        .add_submission_with_jobs(
            Some(&secret),
            "two solutions".into(),
            Vec::new(),
            vec![solution("a", workloads[0]), solution("b", workloads[1])],
        )
        .await
        .unwrap();
    assert_eq!(outcomes.len(), 2);
    for outcome in &outcomes {
        assert_eq!(outcome.outcome, Enqueued::Created);
        assert_eq!(outcome.job.submission_id.as_deref(), Some(submission.id.as_str()));
        assert_eq!(outcome.job.origin, Origin::Submission);
    }
    let listed =
        catalog.jobs(&JobQuery { submission_id: Some(submission.id.clone()), ..JobQuery::default() }).await.unwrap();
    assert_eq!(listed.len(), 2, "the submission's page lists its jobs");
    assert!(catalog.submission(&submission.id).await.unwrap().is_some());
    let over = catalog
        .add_submission_with_jobs(Some(&secret), "third".into(), Vec::new(), vec![solution("c", workloads[0])])
        .await
        .unwrap_err();
    assert!(matches!(&over, QueueError::Catalog(CatalogError::KeyRefused(KeyRefusal::QuotaExceeded))), "{over:?}");
}
on_both_backends!(a_submission_and_its_solution_jobs_are_written_together);
