//! Worker PROCESSES sharing one queue, on a real SQLite file and on the real PostgreSQL (a
//! schema per test): `ki verify --worker` started several times over 24 jobs, one worker
//! SIGKILLed in the middle of a job. Every job ends exactly once (one publication, one run),
//! the killed worker's job is taken over after its lease expires, no job is ever held by two
//! workers at once, a job that keeps failing its environment is parked with the reason, and
//! the export verifies (`ki catalog verify`, ledger included). Also: concurrent `enqueue`
//! processes of one job create it once, and a worker takes submissions before bulk
//! re-verification.
//!
//! The workers run the queue's fixture executor, which re-issues our bundled H200 runs
//! (`data/`, Apache-2.0) in the worker's environment and measures nothing: these are tests
//! of the queue. The killed worker's lease is short (4 s); every wait is on a condition
//! with a generous deadline, never on a timing.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ki_catalog::Catalog;
use ki_catalog::queue::{
    AttemptOutcome, EnqueueRequest, JobQuery, JobSpec, JobState, Origin, Requirement, Subject, WorkloadSet,
};
use ki_model::rows::{BenchmarkRunRow, OperationRow, RecordEventRow, WorkloadRow};
use serde_json::Value;

const OPERATION: &str = "gqa_paged_decode_h32_kv4_d128_ps1";
// The protocol the bundled H200 runs were measured under (data/README.md).
const PROTOCOL: &str = "kernelindex-rerun-v2-realistic";

fn ki() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ki"))
}

fn bundled_runs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/kernelindex-verified-h200-2026-11-30.jsonl.zst")
}

fn postgres_base_url() -> String {
    std::env::var("KI_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_string())
}

/// A scratch catalog holding our bundled H200 runs: a SQLite file, or a PostgreSQL schema
/// dropped afterwards.
struct Scratch {
    url: String,
    schema: Option<String>,
    directory: tempfile::TempDir,
}

impl Scratch {
    async fn new(backend: &str) -> Scratch {
        let directory = tempfile::tempdir().unwrap();
        let (url, schema) = if backend == "sqlite" {
            (format!("sqlite://{}", directory.path().join("catalog.db").display()), None)
        } else {
            let schema = format!("ki_queue_test_{}_{}", std::process::id(), ki_catalog::new_row_id().simple());
            let admin = sqlx::PgPool::connect(&postgres_base_url()).await.expect("PostgreSQL for the queue tests");
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}"))).execute(&admin).await.unwrap();
            admin.close().await;
            (format!("{}?options=-c%20search_path%3D{schema}", postgres_base_url()), Some(schema))
        };
        let imported =
            ki().args(["catalog", "import"]).arg(bundled_runs()).args(["--database", &url]).output().unwrap();
        assert!(imported.status.success(), "import: {}", String::from_utf8_lossy(&imported.stderr));
        Scratch { url, schema, directory }
    }

    async fn catalog(&self) -> Catalog {
        Catalog::open(&self.url).await.unwrap()
    }

    async fn drop_schema(&self) {
        if let Some(schema) = &self.schema {
            let admin = sqlx::PgPool::connect(&postgres_base_url()).await.unwrap();
            sqlx::raw_sql(sqlx::AssertSqlSafe(format!("DROP SCHEMA {schema} CASCADE"))).execute(&admin).await.unwrap();
            admin.close().await;
        }
    }
}

/// (implementation id, implementation digest) per workload id, for OPERATION's first
/// `workloads` workloads.
async fn runs_by_workload(catalog: &Catalog, workloads: usize) -> BTreeMap<String, Vec<(String, String)>> {
    let operation = catalog
        .rows::<OperationRow>()
        .await
        .unwrap()
        .into_iter()
        .find(|row| row.name == OPERATION)
        .map(|row| row.id)
        .unwrap();
    let chosen: Vec<String> = catalog
        .rows::<WorkloadRow>()
        .await
        .unwrap()
        .into_iter()
        .filter(|row| row.operation_id == operation)
        .take(workloads)
        .map(|row| row.id)
        .collect();
    let mut pairs: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
    for run in catalog.rows::<BenchmarkRunRow>().await.unwrap() {
        let workload = run.workload_id.as_str();
        if chosen.iter().any(|chosen| chosen == workload) {
            let digest = run.manifest["run"]["spec"]["implementationDigest"].as_str().unwrap().to_string();
            pairs.entry(workload.to_string()).or_default().push((run.implementation_id.clone(), digest));
        }
    }
    pairs
}

fn implementation_job(workload: &str, implementation: &(String, String)) -> JobSpec {
    JobSpec {
        subject: Subject::Implementation {
            implementation_id: implementation.0.clone(),
            implementation_digest: implementation.1.clone(),
        },
        workloads: WorkloadSet { operation: OPERATION.into(), workloads: vec![workload.to_string()] },
        protocol: PROTOCOL.into(),
        requirement: Requirement { gpu: Some("NVIDIA H200".into()), ..Requirement::default() },
        basis_run_id: None,
    }
}

/// A worker process whose JSON event lines are collected as they come.
struct Worker {
    child: Child,
    events: Arc<Mutex<Vec<Value>>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    /// A worker holding its jobs with leases of `lease` seconds.
    fn start(url: &str, lease: &str, extra: &[&str]) -> Worker {
        let mut child = ki()
            .args(["verify", "--worker", "--database", url, "--executor", "fixture", "--json"])
            .args(["--driver", "590.48.01", "--cuda", "13.1", "--lease-seconds", lease, "--poll-seconds", "0.2"])
            .args(["--retry-seconds", "0.1"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("ki verify-queue worker starts");
        let stdout = child.stdout.take().unwrap();
        let events: Arc<Mutex<Vec<Value>>> = Arc::default();
        let sink = events.clone();
        let reader = std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Ok(event) = serde_json::from_str::<Value>(&line) {
                    sink.lock().unwrap().push(event);
                }
            }
        });
        Worker { child, events, reader: Some(reader) }
    }

    fn events(&self) -> Vec<Value> {
        self.events.lock().unwrap().clone()
    }

    fn of_kind(&self, kind: &str) -> Vec<Value> {
        self.events().into_iter().filter(|event| event["event"] == kind).collect()
    }

    /// Waits for the process to end by itself; its events are then complete.
    fn wait(&mut self, deadline: Instant) -> std::process::ExitStatus {
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                if let Some(reader) = self.reader.take() {
                    reader.join().unwrap();
                }
                return status;
            }
            assert!(Instant::now() < deadline, "a worker did not finish in time; its events: {:#?}", self.events());
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_for(what: &str, deadline: Instant, mut done: impl FnMut() -> bool) {
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

async fn workers_drain_the_queue_while_one_is_killed(backend: &str) {
    let scratch = Scratch::new(backend).await;
    let catalog = scratch.catalog().await;
    let runs_before = catalog.rows::<BenchmarkRunRow>().await.unwrap().len();
    // 8 workloads x their 3 implementations: 24 jobs, three to a lane.
    let pairs = runs_by_workload(&catalog, 8).await;
    let mut requests = Vec::new();
    for (workload, implementations) in &pairs {
        for implementation in implementations {
            requests.push(EnqueueRequest::new(implementation_job(workload, implementation), Origin::Reverification));
        }
    }
    assert_eq!(requests.len(), 24);
    let jobs: Vec<String> =
        catalog.enqueue_many(&requests).await.unwrap().into_iter().map(|outcome| outcome.job.id).collect();
    // And a job no worker here can do: a solution (the fixture executor fails its
    // environment), parked after two failures.
    let solution = scratch.directory.path().join("solution.json");
    std::fs::write(&solution, r#"{"name": "queue-test-solution", "definition": "gqa_paged_decode_h32_kv4_d128_ps1", "spec": {"language": "python", "entry_point": "main.py::run"}, "sources": [{"path": "main.py", "content": "def run(): pass\n"}]}"#).unwrap();
    let workload = pairs.keys().next().unwrap();
    let enqueued = ki()
        .args(["verify", "--enqueue", "--database", &scratch.url])
        .arg(&solution)
        .args(["--workload", workload, "--protocol", PROTOCOL, "--max-environment-failures", "2"])
        .args(["--priority", "reverification", "--json"])
        .output()
        .unwrap();
    assert!(enqueued.status.success(), "{}", String::from_utf8_lossy(&enqueued.stderr));
    let solution_job: Value = serde_json::from_slice(&enqueued.stdout).unwrap();
    let solution_job = solution_job["job"]["id"].as_str().unwrap().to_string();

    // The victim takes one job and holds it (a minute per job); two more workers drain.
    let deadline = Instant::now() + Duration::from_secs(300);
    // The victim's lease is short (4 s: its job is taken over soon after the kill); the
    // survivors' are long, so that a loaded machine never makes them miss a renewal.
    let mut victim = Worker::start(&scratch.url, "4", &["--fixture-delay-ms", "60000"]);
    wait_for("the victim to claim a job", deadline, || !victim.of_kind("claimed").is_empty());
    let mut survivors: Vec<Worker> = (0..2)
        .map(|_| Worker::start(&scratch.url, "30", &["--fixture-delay-ms", "300", "--until", "drained"]))
        .collect();
    wait_for("the survivors to complete a job", deadline, || {
        survivors.iter().any(|worker| !worker.of_kind("completed").is_empty())
    });
    victim.child.kill().unwrap(); // SIGKILL, in the middle of its job
    victim.child.wait().unwrap();
    let victims_job = victim.of_kind("claimed")[0]["jobId"].as_str().unwrap().to_string();
    assert!(victim.of_kind("completed").is_empty());
    for worker in &mut survivors {
        assert!(worker.wait(deadline).success());
    }

    // Every implementation job is done, exactly once: one completion, one run each.
    let summary = catalog.queue_summary().await.unwrap();
    assert_eq!((summary.pending, summary.running, summary.done, summary.parked), (0, 0, 24, 1), "{summary:?}");
    let completions: Vec<String> = survivors
        .iter()
        .flat_map(|worker| worker.of_kind("completed"))
        .map(|event| event["jobId"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(completions.len(), 24, "one completion per job");
    assert_eq!(completions.iter().collect::<HashSet<_>>().len(), 24);
    let mut published_runs = HashSet::new();
    for id in &jobs {
        let detail = catalog.job(id).await.unwrap().unwrap();
        assert_eq!(detail.job.state, JobState::Done);
        let published = detail.job.published.as_ref().unwrap();
        assert_eq!(published.run_ids.len(), 1);
        assert!(published_runs.insert(published.run_ids[0].clone()), "a run published by two jobs");
        // Never held by two workers at once: each attempt began after the one before ended.
        for pair in detail.attempts.windows(2) {
            let ended = pair[0].ended_at.as_deref().expect("an earlier attempt ended");
            assert!(pair[1].claimed_at.as_str() >= ended, "overlapping attempts of job {id}: {:#?}", detail.attempts);
        }
        let completed = detail.attempts.iter().filter(|a| a.outcome == Some(AttemptOutcome::Completed)).count();
        assert_eq!(completed, 1, "job {id}: {:#?}", detail.attempts);
    }
    let runs = catalog.rows::<BenchmarkRunRow>().await.unwrap();
    assert_eq!(runs.len(), runs_before + 24, "exactly one new run per job, none twice");

    // The victim's job was taken over after its lease expired.
    let taken_over = catalog.job(&victims_job).await.unwrap().unwrap();
    assert_eq!(taken_over.attempts.len(), 2, "{:#?}", taken_over.attempts);
    assert_eq!(taken_over.attempts[0].outcome, Some(AttemptOutcome::Expired));
    assert_eq!(taken_over.attempts[1].outcome, Some(AttemptOutcome::Completed));
    assert_ne!(taken_over.attempts[0].worker_id, taken_over.attempts[1].worker_id);
    assert_eq!(taken_over.job.environment_failures, 1);

    // The solution job failed its environment twice and was parked, saying why.
    let parked = catalog.job(&solution_job).await.unwrap().unwrap();
    assert_eq!(parked.job.state, JobState::Parked);
    let reason = parked.job.parked_reason.unwrap_or_default();
    assert!(reason.contains("after 2 environment failure(s)") && reason.contains("solution"), "{reason}");
    assert!(parked.attempts.iter().all(|attempt| attempt.outcome == Some(AttemptOutcome::Failed)));

    // Every new group got its record events; the export verifies, ledger included.
    let events = catalog.rows::<RecordEventRow>().await.unwrap();
    let new_groups: HashSet<&str> = runs
        .iter()
        .filter(|run| published_runs.contains(run.id.as_str()))
        .map(|run| run.comparison_key.as_str())
        .collect();
    assert_eq!(new_groups.len(), 8, "one new group per workload (the newer environment)");
    for group in &new_groups {
        assert!(events.iter().any(|event| event.comparison_key == *group), "group {group} has no record");
    }
    let export = scratch.directory.path().join("export.jsonl.zst");
    let exported = ki().args(["catalog", "export", "--database", &scratch.url, "--out"]).arg(&export).output().unwrap();
    assert!(exported.status.success(), "{}", String::from_utf8_lossy(&exported.stderr));
    let verified = ki().args(["catalog", "verify"]).arg(&export).output().unwrap();
    let report = String::from_utf8_lossy(&verified.stdout);
    assert!(verified.status.success() && report.contains(" 0 mismatches"), "{report}");
    let ledger = report.lines().find(|line| line.starts_with("record events")).unwrap_or_default().to_string();
    let numbers: Vec<&str> = ledger.split_whitespace().filter(|word| word.parse::<u64>().is_ok()).collect();
    assert!(numbers.len() == 4 && numbers[0] == numbers[1] && numbers[2] == numbers[3], "{ledger}");

    // `status` shows the queue, and one job with its attempts.
    let status = ki().args(["verify", "status", "--database", &scratch.url]).output().unwrap();
    let status_text = String::from_utf8_lossy(&status.stdout);
    assert!(
        status_text.starts_with("queue: 0 pending, 0 running (0 with an expired lease), 24 done, 1 parked"),
        "{status_text}"
    );
    let one = ki().args(["verify", "status", "--json", "--database", &scratch.url, &victims_job]).output().unwrap();
    let one: Value = serde_json::from_slice(&one.stdout).unwrap();
    assert_eq!(one["attempts"].as_array().map(Vec::len), Some(2));
    assert_eq!(one["attempts"][0]["outcome"], "expired");
    catalog.close().await;
    scratch.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_workers_drain_the_queue_while_one_is_killed() {
    workers_drain_the_queue_while_one_is_killed("sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_workers_drain_the_queue_while_one_is_killed() {
    workers_drain_the_queue_while_one_is_killed("postgres").await;
}

fn enqueue_command(url: &str, implementation: &str, workload: &str, priority: &str) -> Command {
    let mut command = ki();
    command.args(["verify", "--enqueue", "--database", url, "--implementation", implementation]).args([
        "--workload",
        workload,
        "--protocol",
        PROTOCOL,
        "--priority",
        priority,
        "--json",
    ]);
    command
}

fn outcome_of(output: &Output) -> (String, String) {
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    (value["outcome"].as_str().unwrap().to_string(), value["job"]["id"].as_str().unwrap().to_string())
}

/// Four `enqueue` processes of one job at once: one creates it, three find it. Then
/// bulk re-verification jobs and two later submissions: one worker takes the submissions
/// first, then the rest oldest first.
async fn enqueue_processes_and_priorities(backend: &str) {
    let scratch = Scratch::new(backend).await;
    let catalog = scratch.catalog().await;
    let pairs = runs_by_workload(&catalog, 6).await;
    let firsts: Vec<(&String, &(String, String))> =
        pairs.iter().map(|(workload, implementations)| (workload, &implementations[0])).collect();
    let (workload, implementation) = firsts[0];
    let racers: Vec<Child> = (0..4)
        .map(|_| {
            enqueue_command(&scratch.url, &implementation.0, workload, "reverification")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outcomes: Vec<(String, String)> =
        racers.into_iter().map(|child| outcome_of(&child.wait_with_output().unwrap())).collect();
    let created = outcomes.iter().filter(|(outcome, _)| outcome == "created").count();
    assert_eq!(created, 1, "{outcomes:?}");
    assert!(
        outcomes
            .iter()
            .all(|(outcome, id)| id == &outcomes[0].1 && (outcome == "created" || outcome == "already_queued"))
    );

    let mut bulk = vec![outcomes[0].1.clone()];
    for (workload, implementation) in &firsts[1..4] {
        bulk.push(
            outcome_of(&enqueue_command(&scratch.url, &implementation.0, workload, "reverification").output().unwrap())
                .1,
        );
    }
    let mut people = Vec::new();
    for (workload, implementation) in &firsts[4..6] {
        people.push(
            outcome_of(&enqueue_command(&scratch.url, &implementation.0, workload, "submission").output().unwrap()).1,
        );
    }
    let mut worker = Worker::start(&scratch.url, "30", &["--until", "idle"]);
    assert!(worker.wait(Instant::now() + Duration::from_secs(300)).success());
    let claimed: Vec<String> =
        worker.of_kind("claimed").iter().map(|event| event["jobId"].as_str().unwrap().to_string()).collect();
    let expected: Vec<String> = people.iter().chain(&bulk).cloned().collect();
    assert_eq!(claimed, expected, "submissions first, then re-verification oldest first");
    let done = catalog.jobs(&JobQuery { state: Some(JobState::Done), ..JobQuery::default() }).await.unwrap();
    assert_eq!(done.len(), 6);
    let by_origin: HashMap<Origin, usize> = done.iter().fold(HashMap::new(), |mut counts, job| {
        *counts.entry(job.origin).or_default() += 1;
        counts
    });
    assert_eq!((by_origin[&Origin::Submission], by_origin[&Origin::Reverification]), (2, 4));
    // Enqueuing a done job again changes nothing.
    let again = outcome_of(&enqueue_command(&scratch.url, &firsts[4].1.0, firsts[4].0, "submission").output().unwrap());
    assert_eq!(again, ("already_done".to_string(), people[0].clone()));
    catalog.close().await;
    scratch.drop_schema().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_enqueue_processes_and_priorities() {
    enqueue_processes_and_priorities("sqlite").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_enqueue_processes_and_priorities() {
    enqueue_processes_and_priorities("postgres").await;
}
