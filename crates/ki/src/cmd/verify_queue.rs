//! The verification queue from the command line: a GPU host's worker (`ki verify --worker`),
//! enqueuing jobs (`ki verify --enqueue FILE`), the queue's state (`ki verify status [JOB]`),
//! and re-verification planning (`ki verify reverify`); cmd/verify.rs registers them. Each
//! function takes the catalog ([`DatabaseArgs`], every command's one `--database`) apart from
//! its arguments, and runs on the one runtime (cmd/database.rs). The worker's executor is the
//! catalog's ([`ki_catalog::queue::RunnerExecutor`]); this file only builds it from flags.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use clap::{Args, ValueEnum};
use ki_catalog::queue::{
    EnqueueOutcome, EnqueueRequest, Enqueued, Job, JobDetail, JobQuery, JobSpec, JobState, Origin, QueueSummary,
    Requirement, ReverifyOptions, RunnerExecutor, StopWhen, Subject, WorkerEvent, WorkerOptions, WorkerRecord,
    WorkloadSet,
};
use ki_model::rows::{ImplementationRow, OperationRow};
use ki_ranking::reverify::{EnvironmentFacts, Framework, Policy};

use super::database::{DatabaseArgs, runtime};
use crate::term::outln;

/// Which executor runs the jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ExecutorKind {
    /// The queue's test executor: re-issues catalog runs in the worker's environment and
    /// MEASURES NOTHING (for testing queues and fleets without a GPU, never for publishing).
    /// Only in builds with the `fixture-executor` feature, which only tests enable.
    #[cfg(feature = "fixture-executor")]
    Fixture,
    /// The verification runner: each job in a child `ki run` (a catalog implementation) or
    /// `ki verify` (a Solution) on this host's GPU.
    Runner,
}

/// When the worker stops by itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Until {
    /// When nothing can be claimed.
    Idle,
    /// When no job is pending or running (jobs of dead workers are waited for and taken over).
    Drained,
}

/// What the worker reports about its machine. The fixture executor takes it as given; the
/// verification runner reads it from the GPU and its software.
#[derive(Args, Clone)]
pub struct EnvironmentArgs {
    /// The GPU product as the driver names it (the runner executor asks nvidia-smi when
    /// this is not given).
    #[arg(long)]
    pub gpu: Option<String>,
    #[arg(long)]
    pub architecture: Option<String>,
    #[arg(long)]
    pub driver: Option<String>,
    /// The CUDA toolkit version.
    #[arg(long)]
    pub cuda: Option<String>,
    /// The framework, NAME=VERSION (torch=2.11.0).
    #[arg(long, value_parser = name_version)]
    pub framework: Option<(String, String)>,
    /// A library, NAME=VERSION (flashinfer=0.5.3); repeatable.
    #[arg(long = "library", value_parser = name_version)]
    pub libraries: Vec<(String, String)>,
}

impl EnvironmentArgs {
    /// The facts as given, with the GPU the fixture pretends to be when none is.
    #[cfg(feature = "fixture-executor")]
    pub fn facts(&self) -> EnvironmentFacts {
        self.facts_over(Probe::default())
    }

    /// The facts as given, the rest from `probe` (flags win).
    fn facts_over(&self, probe: Probe) -> EnvironmentFacts {
        EnvironmentFacts {
            gpu: self.gpu.clone().or(probe.gpu).unwrap_or_else(|| "NVIDIA H200".to_string()).trim().to_string(),
            architecture: self.architecture.clone().or(probe.architecture),
            driver: self.driver.clone().or(probe.driver),
            cuda_toolkit: self.cuda.clone().or(probe.cuda),
            framework: self.framework.clone().map(|(name, version)| Framework { name, version }),
            libraries: self.libraries.iter().cloned().collect(),
        }
    }
}

/// What this host says about its GPU and toolkit (nvidia-smi, nvcc); empty where they are
/// missing.
#[derive(Default)]
struct Probe {
    gpu: Option<String>,
    architecture: Option<String>,
    driver: Option<String>,
    cuda: Option<String>,
}

impl Probe {
    fn read() -> Probe {
        let output = |program: &str, args: &[&str]| {
            std::process::Command::new(program)
                .args(args)
                .output()
                .ok()
                .filter(|output| output.status.success())
                .map(|output| String::from_utf8_lossy(&output.stdout).into_owned())
        };
        let mut probe = Probe::default();
        let smi = output("nvidia-smi", &["--query-gpu=name,driver_version,compute_cap", "--format=csv,noheader"]);
        if let Some(first) = smi.as_deref().and_then(|text| text.lines().next()) {
            let fields: Vec<&str> = first.split(',').map(str::trim).collect();
            if let [name, driver, capability] = fields[..] {
                probe.gpu = Some(name.to_string());
                probe.driver = Some(driver.to_string());
                probe.architecture = Some(format!("sm_{}", capability.replace('.', "")));
            }
        }
        // "Cuda compilation tools, release 13.0, V13.0.88"
        probe.cuda = output("nvcc", &["--version"]).and_then(|text| {
            let release = text.split("release ").nth(1)?;
            Some(release.split(',').next()?.trim().to_string())
        });
        probe
    }
}

fn name_version(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((name, version)) if !name.trim().is_empty() && !version.trim().is_empty() => {
            Ok((name.trim().to_string(), version.trim().to_string()))
        }
        _ => Err(format!("expected NAME=VERSION, got {text:?}")),
    }
}

#[derive(Args)]
pub struct WorkerArgs {
    /// Which executor runs the jobs (the verification runner joins at merge with `ki verify`).
    #[arg(long, value_enum)]
    pub executor: ExecutorKind,
    #[command(flatten)]
    pub environment: EnvironmentArgs,
    /// This host's name in the queue (default: the hostname).
    #[arg(long)]
    pub host: Option<String>,
    /// How long a claim holds a job without renewal; renewed every third of it.
    #[arg(long, default_value_t = 120.0)]
    pub lease_seconds: f64,
    /// How long to wait before looking again when nothing can be claimed.
    #[arg(long, default_value_t = 5.0)]
    pub poll_seconds: f64,
    /// How long a job waits after an environment failure before it is claimed again.
    #[arg(long, default_value_t = 30.0)]
    pub retry_seconds: f64,
    /// Stop by itself (default: run until SIGINT or SIGTERM, giving back the job in hand).
    #[arg(long, value_enum)]
    pub until: Option<Until>,
    /// Stop after claiming this many jobs.
    #[arg(long)]
    pub max_jobs: Option<u64>,
    /// The fixture executor's time per job, in milliseconds.
    #[cfg(feature = "fixture-executor")]
    #[arg(long, default_value_t = 0)]
    pub fixture_delay_ms: u64,
    /// The runner executor: where each job's folder is made (default: the system's temporary folder).
    #[arg(long)]
    pub scratch: Option<PathBuf>,
    /// The runner executor: the lock file workers of one GPU take turns on (default: one per
    /// host under the scratch folder).
    #[arg(long)]
    pub gpu_lock: Option<PathBuf>,
    /// The runner executor: trials per workload, each on fresh inputs, for jobs that re-verify
    /// no run (a re-verification takes as many as the run it re-verifies had).
    #[arg(long, default_value_t = 3)]
    pub trials: usize,
    /// The runner executor: longest one job may run, in seconds.
    #[arg(long, default_value_t = 1800)]
    pub job_timeout_seconds: u64,
    /// The runner executor: Python with torch (and flashinfer) for Python implementations and Solutions.
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// The runner executor: a flashinfer_trace folder (definitions/, workloads/) for Solution jobs.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// One JSON object per event on stdout, instead of text.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args)]
pub struct EnqueueArgs {
    /// A FlashInfer-Bench Solution (JSON) to verify.
    #[arg(required_unless_present = "implementation", conflicts_with = "implementation")]
    pub solution: Option<PathBuf>,
    /// Instead of a solution: a catalog implementation (its id) to run again.
    #[arg(long)]
    pub implementation: Option<String>,
    /// A workload to run (its uuid, or catalog id); repeatable.
    #[arg(long = "workload")]
    pub workloads: Vec<String>,
    /// Workloads from a file: FlashInfer-Bench workload JSONL (`workload.uuid` per line) or
    /// one id per line.
    #[arg(long = "workloads")]
    pub workloads_file: Option<PathBuf>,
    /// The operation (definition) the workloads are of (default: the solution's
    /// `definition`, or the implementation's operation).
    #[arg(long)]
    pub definition: Option<String>,
    /// The timing protocol's name (e.g. kernelindex-rerun-v2-random).
    #[arg(long)]
    pub protocol: String,
    /// The GPU a worker must have (as the driver names it).
    #[arg(long)]
    pub gpu: Option<String>,
    /// Software a worker must have at least, NAME=VERSION (driver=580, cudaToolkit=13.0, flashinfer=0.5.3); repeatable.
    #[arg(long = "min-software", value_parser = name_version)]
    pub min_software: Vec<(String, String)>,
    /// Who asked: a person's submission runs before bulk re-verification.
    #[arg(long, value_enum, default_value = "submission")]
    pub priority: PriorityArg,
    /// The submission this job belongs to (shown on the submission's page).
    #[arg(long)]
    pub submission: Option<String>,
    /// Why, for people.
    #[arg(long)]
    pub reason: Option<String>,
    /// Environment failures after which the job is parked.
    #[arg(long)]
    pub max_environment_failures: Option<u32>,
    #[arg(long)]
    pub json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PriorityArg {
    Submission,
    Reverification,
}

#[derive(Args)]
pub struct StatusArgs {
    /// One job (id or sha256: key) in full, with its attempts and workers.
    pub job: Option<String>,
    /// Only jobs in this state.
    #[arg(long, value_parser = parse_state)]
    pub state: Option<JobState>,
    /// Only the jobs of this submission.
    #[arg(long)]
    pub submission: Option<String>,
    /// At most this many jobs per state.
    #[arg(long, default_value_t = 20)]
    pub limit: u32,
    #[arg(long)]
    pub json: bool,
}

fn parse_state(text: &str) -> Result<JobState, String> {
    JobState::parse(text).ok_or_else(|| format!("expected pending, running, done or parked, got {text:?}"))
}

#[derive(Args)]
pub struct ReverifyArgs {
    /// Re-verify a group's #1 Verified run observed longer ago than this many days (default:
    /// only newer software seen on a worker makes a run stale).
    #[arg(long)]
    pub older_than_days: Option<f64>,
    /// Verified runs behind each #1 that go with it.
    #[arg(long, default_value_t = 2)]
    pub runners_up: usize,
    /// Environment failures after which a job is parked.
    #[arg(long)]
    pub max_environment_failures: Option<u32>,
    /// Enqueue at most this many (the first planned: groups in catalog order, #1 first).
    #[arg(long)]
    pub limit: Option<usize>,
    /// Say what would be enqueued; enqueue nothing.
    #[arg(long)]
    pub dry_run: bool,
    #[arg(long)]
    pub json: bool,
}

fn seconds(value: f64, what: &str) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|duration| !duration.is_zero())
        .ok_or_else(|| anyhow!("--{what} must be a positive number of seconds, got {value}"))
}

fn hostname() -> String {
    let mut buffer = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes at most that much.
    let result = unsafe { libc::gethostname(buffer.as_mut_ptr().cast(), buffer.len()) };
    let end = buffer.iter().position(|&byte| byte == 0).unwrap_or(buffer.len());
    match result {
        0 if end > 0 => String::from_utf8_lossy(&buffer[..end]).into_owned(),
        _ => "unknown-host".to_string(),
    }
}

/// Resolves on SIGINT or SIGTERM (a supervisor stopping the worker).
async fn stop_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
}

pub fn worker(database: &DatabaseArgs, args: WorkerArgs) -> anyhow::Result<ExitCode> {
    let options = WorkerOptions {
        lease: seconds(args.lease_seconds, "lease-seconds")?,
        poll: seconds(args.poll_seconds, "poll-seconds")?,
        retry_delay: Duration::try_from_secs_f64(args.retry_seconds)
            .map_err(|_| anyhow!("--retry-seconds must be a number of seconds, got {}", args.retry_seconds))?,
        stop: match args.until {
            None => StopWhen::Never,
            Some(Until::Idle) => StopWhen::Idle,
            Some(Until::Drained) => StopWhen::Drained,
        },
        max_jobs: args.max_jobs,
    };
    let environment = match args.executor {
        #[cfg(feature = "fixture-executor")]
        ExecutorKind::Fixture => args.environment.facts(),
        ExecutorKind::Runner => {
            let probe = Probe::read();
            if args.environment.gpu.is_none() && probe.gpu.is_none() {
                bail!(
                    "ki verify --worker: cannot tell which GPU this host has (nvidia-smi gave no answer); pass --gpu"
                );
            }
            args.environment.facts_over(probe)
        }
    };
    let host = args.host.clone().unwrap_or_else(hostname);
    let json = args.json;
    runtime()?.block_on(async {
        let catalog = database.open().await?;
        let worker = catalog.register_worker(&host, &environment).await?;
        let mut on_event = |event: &WorkerEvent| print_event(event, json);
        if json {
            outln!(
                "{}",
                serde_json::json!({"event": "started", "workerId": worker.id, "host": host, "environment": environment})
            );
        } else {
            outln!("worker {} on {} ({}) started", worker.id, &host, &environment.gpu);
        }
        let report = match args.executor {
            #[cfg(feature = "fixture-executor")]
            ExecutorKind::Fixture => {
                crate::term::errln!(
                    "ki verify --worker: the fixture executor re-issues catalog runs and measures nothing; use it only to test queues"
                );
                let executor =
                    ki_catalog::queue::FixtureExecutor::new(catalog.clone(), environment.clone(), Duration::from_millis(args.fixture_delay_ms));
                ki_catalog::queue::run_worker(&catalog, &worker, &executor, &options, stop_signal(), &mut on_event)
                    .await?
            }
            ExecutorKind::Runner => {
                let scratch = args.scratch.clone().unwrap_or_else(std::env::temp_dir);
                std::fs::create_dir_all(&scratch).with_context(|| format!("cannot make {}", scratch.display()))?;
                let executor = RunnerExecutor {
                    catalog: catalog.clone(),
                    ki: std::env::current_exe().context("cannot tell where this ki binary is")?,
                    gpu_lock: args.gpu_lock.clone().unwrap_or_else(|| scratch.join("kernelindex-gpu.lock")),
                    scratch,
                    python: args.python.clone(),
                    trace: args.trace.clone(),
                    environment: environment.clone(),
                    trials: args.trials.max(1),
                    samples_per_trial: ki_runner::protocol::TimingProtocol::RERUN_V2.graph_pairs,
                    job_timeout: Duration::from_secs(args.job_timeout_seconds.max(1)),
                };
                ki_catalog::queue::run_worker(&catalog, &worker, &executor, &options, stop_signal(), &mut on_event)
                    .await?
            }
        };
        catalog.worker_stopped(&worker).await?;
        if json {
            outln!("{}", serde_json::json!({"event": "stopped", "workerId": worker.id, "report": report}));
        } else {
            outln!(
                "worker {} stopped: {} claimed, {} completed, {} failed, {} released, {} lost",
                worker.id, report.claimed, report.completed, report.failed, report.released, report.lost
            );
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn print_event(event: &WorkerEvent, json: bool) {
    if json {
        if let Ok(line) = serde_json::to_string(event) {
            outln!("{line}");
        }
        return;
    }
    match event {
        WorkerEvent::Claimed { job_id, attempt, subject, workloads } => {
            outln!("claimed job {job_id} (attempt {attempt}): {}, {workloads} workload(s)", subject)
        }
        WorkerEvent::Completed { job_id, attempt, verdict, runs, record_events } => outln!(
            "completed job {job_id} (attempt {attempt}): {verdict}, {runs} run(s) published, {record_events} record event(s)"
        ),
        WorkerEvent::Failed { job_id, attempt, reason, now } => {
            outln!("failed job {job_id} (attempt {attempt}), now {}: {}", now.as_str(), reason)
        }
        WorkerEvent::Released { job_id, attempt, note } => {
            outln!("released job {job_id} (attempt {attempt}): {}", note)
        }
        WorkerEvent::LeaseLost { job_id, attempt, message } => {
            outln!("lost job {job_id} (attempt {attempt}): {}", message)
        }
    }
}

/// Reads at most `limit` bytes of `path`.
fn read_bounded(path: &Path, limit: usize) -> anyhow::Result<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path).with_context(|| format!("{}: cannot open", path.display()))?;
    let mut bytes = Vec::new();
    file.take(limit as u64 + 1).read_to_end(&mut bytes).with_context(|| format!("{}: cannot read", path.display()))?;
    if bytes.len() > limit {
        bail!("{}: larger than {} MiB", path.display(), limit >> 20);
    }
    Ok(bytes)
}

/// Workload names from a file: JSONL entries with `workload.uuid` (FlashInfer-Bench) or
/// `uuid`, or one name per line.
fn workloads_from(path: &Path) -> anyhow::Result<Vec<String>> {
    let bytes = read_bounded(path, 64 << 20)?;
    let text = String::from_utf8(bytes).map_err(|_| anyhow!("{}: not UTF-8 text", path.display()))?;
    let mut names = Vec::new();
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        if line.starts_with('{') {
            let value = ki_model::parse::parse_json(line.as_bytes())
                .map_err(|problem| anyhow!("{}:{}: {problem}", path.display(), number + 1))?;
            let uuid = value.pointer("/workload/uuid").or_else(|| value.get("uuid")).and_then(|uuid| uuid.as_str());
            match uuid {
                Some(uuid) => names.push(uuid.to_string()),
                None => bail!("{}:{}: /workload/uuid: required string", path.display(), number + 1),
            }
        } else {
            names.push(line.to_string());
        }
    }
    Ok(names)
}

pub fn enqueue(database: &DatabaseArgs, args: EnqueueArgs) -> anyhow::Result<ExitCode> {
    let mut workloads = args.workloads.clone();
    if let Some(path) = &args.workloads_file {
        workloads.extend(workloads_from(path)?);
    }
    runtime()?.block_on(async {
        let catalog = database.open().await?;
        let (subject, definition) = match (&args.solution, &args.implementation) {
            (Some(path), _) => {
                let bytes = read_bounded(path, ki_catalog::queue::MAX_SOLUTION_BYTES)?;
                let document =
                    ki_model::parse::parse_json(&bytes).map_err(|problem| anyhow!("{}: {problem}", path.display()))?;
                let name = document
                    .get("name")
                    .and_then(|name| name.as_str())
                    .ok_or_else(|| anyhow!("{}: /name: required string (a FlashInfer-Bench Solution)", path.display()))?
                    .to_string();
                let definition = document.get("definition").and_then(|d| d.as_str()).map(str::to_string);
                (Subject::Solution { name, document }, definition)
            }
            (None, Some(id)) => {
                let row = catalog
                    .rows_where::<ImplementationRow>("id", id.trim())
                    .await?
                    .into_iter()
                    .next()
                    .ok_or_else(|| anyhow!("no implementation {:?} in {}", id, catalog.url()))?;
                let operation = catalog.rows_where::<OperationRow>("id", &row.operation_id).await?;
                let definition = operation.into_iter().next().map(|operation| operation.name);
                (
                    Subject::Implementation {
                        implementation_id: row.id,
                        implementation_digest: row.implementation_digest,
                    },
                    definition,
                )
            }
            (None, None) => bail!("give a Solution file or --implementation ID"),
        };
        let operation = args
            .definition
            .clone()
            .or(definition)
            .ok_or_else(|| anyhow!("which definition are the workloads of? give --definition NAME"))?;
        let spec = JobSpec {
            subject,
            workloads: WorkloadSet { operation, workloads },
            protocol: args.protocol.clone(),
            requirement: Requirement {
                gpu: args.gpu.clone(),
                minimum_software: args.min_software.iter().cloned().collect::<BTreeMap<_, _>>(),
            },
            basis_run_id: None,
        };
        let request = EnqueueRequest {
            spec,
            origin: match args.priority {
                PriorityArg::Submission => Origin::Submission,
                PriorityArg::Reverification => Origin::Reverification,
            },
            submission_id: args.submission.clone(),
            reverifies_run_id: None,
            reason: args.reason.clone(),
            max_environment_failures: args.max_environment_failures,
        };
        let outcome = catalog.enqueue(&request).await?;
        if args.json {
            outln!("{}", serde_json::to_string_pretty(&outcome)?);
        } else {
            print_enqueued(&outcome);
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn print_enqueued(outcome: &EnqueueOutcome) {
    let job = &outcome.job;
    let what = match outcome.outcome {
        Enqueued::Created => "enqueued",
        Enqueued::AlreadyQueued => "already queued (nothing changed)",
        Enqueued::AlreadyDone => "already done (nothing changed)",
        Enqueued::Reopened => "re-opened (it was parked)",
    };
    outln!("{what}: job {} ({}), {}", job.id, job.state.as_str(), describe_spec(job));
    outln!("  key {}", job.key);
}

fn describe_spec(job: &Job) -> String {
    let spec = &job.spec;
    let kind = match &spec.subject {
        Subject::Solution { .. } => "solution",
        Subject::Implementation { .. } => "implementation",
    };
    let mut text = format!(
        "{kind} {} on {} workload(s) of {} under {}",
        spec.subject.label(),
        spec.workloads.workloads.len(),
        &spec.workloads.operation,
        &spec.protocol
    );
    if let Some(gpu) = &spec.requirement.gpu {
        text.push_str(&format!(", on {}", gpu));
    }
    for (name, version) in &spec.requirement.minimum_software {
        text.push_str(&format!(", {} ≥ {}", name, version));
    }
    text
}

pub fn status(database: &DatabaseArgs, args: StatusArgs) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(async {
        let catalog = database.open().await?;
        if let Some(reference) = &args.job {
            let Some(detail) = catalog.job(reference).await? else {
                bail!("no verification job {:?} in {} (give a job id or its sha256: key)", reference, catalog.url());
            };
            if args.json {
                outln!("{}", serde_json::to_string_pretty(&detail)?);
            } else {
                print_job(&detail);
            }
            return Ok(ExitCode::SUCCESS);
        }
        let summary = catalog.queue_summary().await?;
        let states: Vec<JobState> = match args.state {
            Some(state) => vec![state],
            None => JobState::ALL.to_vec(),
        };
        let mut listed = Vec::new();
        for state in states {
            let query = JobQuery {
                state: Some(state),
                submission_id: args.submission.clone(),
                origin: None,
                limit: Some(args.limit),
            };
            listed.push((state, catalog.jobs(&query).await?));
        }
        let workers = catalog.workers().await?;
        if args.json {
            let jobs: serde_json::Map<String, serde_json::Value> = listed
                .iter()
                .map(|(state, jobs)| (state.as_str().to_string(), serde_json::to_value(jobs).unwrap_or_default()))
                .collect();
            let value = serde_json::json!({"summary": summary, "jobs": jobs, "workers": workers});
            outln!("{}", serde_json::to_string_pretty(&value)?);
        } else {
            print_summary(&summary, &listed, &workers);
        }
        Ok(ExitCode::SUCCESS)
    })
}

fn print_summary(summary: &QueueSummary, listed: &[(JobState, Vec<Job>)], workers: &[WorkerRecord]) {
    outln!(
        "queue: {} pending, {} running ({} with an expired lease), {} done, {} parked",
        summary.pending,
        summary.running,
        summary.running_expired,
        summary.done,
        summary.parked
    );
    for (state, jobs) in listed {
        if jobs.is_empty() {
            continue;
        }
        outln!("\n{}:", state.as_str());
        for job in jobs {
            outln!("  {}  {}", job.id, job_line(job, workers));
        }
    }
    if !workers.is_empty() {
        outln!("\nworkers:");
        for worker in workers {
            outln!("  {}", worker_line(worker));
        }
    }
}

fn job_line(job: &Job, workers: &[WorkerRecord]) -> String {
    let mut line = format!("{}  {}", job.origin.as_str(), describe_spec(job));
    match job.state {
        JobState::Pending => line.push_str(&format!(", enqueued {}", job.enqueued_at)),
        JobState::Running => {
            let worker = job.worker_id.as_deref().unwrap_or("?");
            let host = workers.iter().find(|w| w.id == worker).map_or("", |w| w.host.as_str());
            line.push_str(&format!(", attempt {} on worker {worker} ({host})", job.attempts));
            if let Some(until) = &job.lease_expires_at {
                let expired = if job.lease_expired { " (expired: to be taken over)" } else { "" };
                line.push_str(&format!(", lease until {until}{expired}"));
            }
        }
        JobState::Done => {
            if let Some(verdict) = &job.verdict {
                line.push_str(&format!(", {}", verdict.status.as_str()));
            }
            if let Some(published) = &job.published {
                line.push_str(&format!(
                    ", {} run(s), {} record event(s)",
                    published.run_ids.len(),
                    published.record_events.len()
                ));
            }
            line.push_str(&format!(", finished {}", job.finished_at.as_deref().unwrap_or("?")));
        }
        JobState::Parked => line.push_str(&format!(": {}", job.parked_reason.as_deref().unwrap_or(""))),
    }
    line
}

fn worker_line(worker: &WorkerRecord) -> String {
    let environment = &worker.environment;
    let mut software: Vec<String> =
        environment.software().into_iter().map(|(name, version)| format!("{} {}", name, version)).collect();
    if software.is_empty() {
        software.push("software unknown".into());
    }
    let state = match &worker.stopped_at {
        Some(at) => format!("stopped {at}"),
        None => format!("last seen {}", worker.last_seen_at),
    };
    format!("{}  {}  {}  {}  {state}", worker.id, &worker.host, &environment.gpu, software.join(", "))
}

fn print_job(detail: &JobDetail) {
    let job = &detail.job;
    outln!("job {}  ({})", job.id, job.state.as_str());
    outln!("  key        {}", job.key);
    outln!("  what       {}", describe_spec(job));
    outln!("  origin     {} (priority {})", job.origin.as_str(), job.priority);
    if let Some(submission) = &job.submission_id {
        outln!("  submission {}", submission);
    }
    if let Some(run) = &job.reverifies_run_id {
        outln!("  re-verifies run {run}");
    }
    if let Some(reason) = &job.reason {
        outln!("  reason     {}", reason);
    }
    outln!("  enqueued   {}", job.enqueued_at);
    outln!(
        "  attempts   {} ({} environment failure(s) of {} allowed)",
        job.attempts,
        job.environment_failures,
        job.max_environment_failures
    );
    if let (JobState::Running, Some(worker)) = (job.state, &job.worker_id) {
        let expired = if job.lease_expired { " (expired: to be taken over)" } else { "" };
        outln!("  running on worker {worker}, lease until {}{expired}", job.lease_expires_at.as_deref().unwrap_or("?"));
    }
    if let Some(verdict) = &job.verdict {
        outln!("  verdict    {}: {}", verdict.status.as_str(), &verdict.summary);
    }
    if let Some(published) = &job.published {
        outln!("  published  {} row(s); runs {}", published.rows_inserted, published.run_ids.join(", "));
        for event in &published.record_events {
            let previous = event.previous_run_id.as_deref().unwrap_or("none");
            outln!(
                "  record event: run {} takes the record of {} from {previous} ({})",
                event.run_id,
                event.comparison_key,
                event.cause
            );
        }
    }
    if let Some(reason) = &job.parked_reason {
        outln!("  parked     {}", reason);
    }
    if let Some(finished) = &job.finished_at {
        outln!("  finished   {finished}");
    }
    if !detail.attempts.is_empty() {
        outln!("\n  # | worker | claimed | ended | outcome | message");
        for attempt in &detail.attempts {
            let host = detail.workers.iter().find(|w| w.id == attempt.worker_id).map_or("", |w| w.host.as_str());
            outln!(
                "  {} | {} ({host}) | {} | {} | {} | {}",
                attempt.attempt,
                attempt.worker_id,
                attempt.claimed_at,
                attempt.ended_at.as_deref().unwrap_or("-"),
                attempt.outcome.map_or("holding", |outcome| outcome.as_str()),
                attempt.message.as_deref().unwrap_or("")
            );
        }
    }
}

pub fn reverify(database: &DatabaseArgs, args: ReverifyArgs) -> anyhow::Result<ExitCode> {
    let max_age_ns = match args.older_than_days {
        None => None,
        Some(days) if days.is_finite() && days > 0.0 => Some((days * 86_400e9) as i64),
        Some(days) => bail!("--older-than-days must be a positive number, got {days}"),
    };
    let policy = Policy { max_age_ns, runners_up: args.runners_up };
    runtime()?.block_on(async {
        let catalog = database.open().await?;
        let options = ReverifyOptions {
            policy,
            limit: args.limit,
            max_environment_failures: args.max_environment_failures,
            dry_run: args.dry_run,
        };
        let report = catalog.enqueue_reverification(&options).await?;
        if args.json {
            outln!("{}", serde_json::to_string_pretty(&report)?);
            return Ok(ExitCode::SUCCESS);
        }
        let created = report.enqueued.iter().filter(|outcome| outcome.outcome == Enqueued::Created).count();
        let verb = if args.dry_run { "would enqueue" } else { "planned" };
        outln!("{verb} {} re-verification(s); {created} new job(s)", report.planned.len());
        for (index, decision) in report.planned.iter().enumerate() {
            let outcome = report.enqueued.get(index).map(|outcome| match outcome.outcome {
                Enqueued::Created => format!("job {} enqueued", outcome.job.id),
                Enqueued::AlreadyQueued => format!("job {} already queued", outcome.job.id),
                Enqueued::AlreadyDone => format!("job {} already done", outcome.job.id),
                Enqueued::Reopened => format!("job {} re-opened", outcome.job.id),
            });
            outln!(
                "  run {} (#{} of group {}) on {}: {}",
                decision.run_id,
                decision.position + 1,
                decision.comparison_key,
                &decision.gpu,
                outcome.unwrap_or_else(|| "dry run".into())
            );
        }
        Ok(ExitCode::SUCCESS)
    })
}
