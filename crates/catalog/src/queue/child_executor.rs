//! The queue's real executor, [`RunnerExecutor`]: each claimed job is run by a `ki` binary
//! in a child process (`ki run` for an implementation the catalog holds, `ki verify` for a
//! FlashInfer-Bench Solution), exactly as a person would run it, and the child's
//! `catalog-rows.jsonl` becomes the job's records. The binary is given (`ki verify --worker`
//! passes itself, so the child runs the same build as the worker); this crate knows only its
//! command line.
//!
//! Why child processes: a crash, hang or leak of the code under test (or of a CUDA context)
//! ends with its process, never with the worker that holds the lease; and the worker's async
//! runtime is never blocked. Why a GPU lock: two workers on one host time one GPU in turns,
//! or each would measure the other's kernels.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use ki_model::rows::{BenchmarkRunRow, ImplementationRow, OperationRow, TableRow, WorkloadRow};
use ki_ranking::reverify::EnvironmentFacts;
use serde_json::{Map, Value, json};

use super::worker::{EnvironmentFailure, Executor, JobOutcome};
use super::{ClaimedJob, Subject, Verdict, VerdictStatus};
use crate::{Catalog, ExportLine};

/// Protocols the runner times, by the page-table rule that ends their name.
const RUNNER_PROTOCOL_PREFIX: &str = "kernelindex-rerun-v2-";
const LENGTH_RULES: [&str; 4] = ["realistic", "uniform", "lognormal", "tail"];
/// The catalog implementations `ki run` can run again, by their title.
const RUNNER_IMPLEMENTATIONS: [&str; 3] = ["kernelindex-native", "flashinfer-tc", "flashinfer-notc"];
/// The tail of a failed child's log kept in the failure reason.
const LOG_TAIL_BYTES: usize = 1500;

/// Runs each job as a child `ki run` or `ki verify` (see the module notes).
pub struct RunnerExecutor {
    pub catalog: Catalog,
    /// The `ki` binary the children run (the worker's own, so that they run its build).
    pub ki: PathBuf,
    /// Where each job's folder is made (removed when the job ends).
    pub scratch: PathBuf,
    /// Held (flock) while a job uses the GPU.
    pub gpu_lock: PathBuf,
    pub python: String,
    /// A flashinfer_trace folder (definitions/, workloads/) for Solution jobs.
    pub trace: Option<PathBuf>,
    /// The worker's GPU, as registered: every run a job publishes must be on it.
    pub environment: EnvironmentFacts,
    /// Trials per workload (each on fresh inputs).
    pub trials: usize,
    /// Samples one trial of the runner's protocol takes (`ki_runner`'s
    /// `TimingProtocol::RERUN_V2.graph_pairs`): a re-verification is timed with as many
    /// trials as give its basis run's samples.
    pub samples_per_trial: usize,
    /// Longest a job's child may run.
    pub job_timeout: Duration,
}

impl Executor for RunnerExecutor {
    async fn execute(&self, job: &ClaimedJob) -> Result<JobOutcome, EnvironmentFailure> {
        let folder = tempfile::Builder::new()
            .prefix("ki-job-")
            .tempdir_in(&self.scratch)
            .map_err(|error| failure(format!("cannot make a job folder in {}: {error}", self.scratch.display())))?;
        let lines = match &job.job.spec.subject {
            Subject::Implementation { implementation_id, implementation_digest } => {
                self.implementation_job(job, implementation_id, implementation_digest, folder.path()).await?
            }
            Subject::Solution { name, document } => self.solution_job(job, name, document, folder.path()).await?,
        };
        let outcome = outcome_of(job, lines, &self.environment)?;
        Ok(outcome)
    }
}

impl RunnerExecutor {
    async fn implementation_job(
        &self,
        job: &ClaimedJob,
        implementation_id: &str,
        implementation_digest: &str,
        folder: &Path,
    ) -> Result<Vec<ExportLine>, EnvironmentFailure> {
        let spec = &job.job.spec;
        let implementation: ImplementationRow = self.one_row("id", implementation_id).await?;
        let title = implementation.title.as_str();
        if !RUNNER_IMPLEMENTATIONS.contains(&title) {
            return Err(failure(format!(
                "implementation {implementation_id} ({title:?}) is not one `ki run` can run again (it runs {})",
                RUNNER_IMPLEMENTATIONS.join(", ")
            )));
        }
        let choice = if title == "kernelindex-native" { "native" } else { title };
        let rule = length_rule(&spec.protocol)?;
        let trials = self.trials_like(spec.basis_run_id.as_deref()).await?;
        let operation: OperationRow = self.one_row("name", &spec.workloads.operation).await?;
        let mut workloads: Vec<WorkloadRow> = Vec::new();
        for id in &spec.workloads.workloads {
            workloads.push(self.one_row("id", id).await?);
        }
        // The runner names the index's own operation and workload records when it is given
        // them (so a re-run lands in the same comparison group): a two-table export.
        let catalog = folder.join("catalog.jsonl");
        let mut export = serde_json::to_string(&json!({"table": "operations", "row": operation})).unwrap_or_default();
        for workload in &workloads {
            export.push('\n');
            export
                .push_str(&serde_json::to_string(&json!({"table": "workloads", "row": workload})).unwrap_or_default());
        }
        export.push('\n');
        std::fs::write(&catalog, export)
            .map_err(|error| failure(format!("cannot write {}: {error}", catalog.display())))?;

        let mut lines = Vec::new();
        for (index, workload) in workloads.iter().enumerate() {
            let axes = workload.manifest.pointer("/spec/axes").and_then(Value::as_object).ok_or_else(|| {
                failure(format!("workload {}: its manifest has no /spec/axes", spec.workloads.workloads[index]))
            })?;
            let out = folder.join(format!("workload-{index}"));
            let mut args: Vec<String> = vec![
                "run".into(),
                "--operation".into(),
                spec.workloads.operation.clone(),
                "--implementation".into(),
                choice.into(),
                "--trials".into(),
                trials.to_string(),
                "--lengths".into(),
                rule.into(),
                "--seed".into(),
                seed_of(&job.job.key, job.lease.attempt, index).to_string(),
                "--python".into(),
                self.python.clone(),
                "--catalog".into(),
                catalog.display().to_string(),
                "--out".into(),
                out.display().to_string(),
                // The child takes the GPU only to measure: one worker's compile overlaps the
                // other's timing.
                "--gpu-lock".into(),
                self.gpu_lock.display().to_string(),
            ];
            for (name, value) in axes {
                args.push("--axis".into());
                args.push(format!("{name}={}", value.as_i64().map_or_else(|| value.to_string(), |n| n.to_string())));
            }
            let log = folder.join(format!("workload-{index}.log"));
            self.child(&args, &log, false).await?;
            let rows = read_rows(&out.join("catalog-rows.jsonl"), &log).await?;
            for line in &rows {
                if line.table == "benchmark_runs" && text(&line.row, "implementationId") != Some(implementation_id) {
                    let found = rows
                        .iter()
                        .find(|l| l.table == "implementations")
                        .and_then(|l| text(&l.row, "implementationDigest"))
                        .unwrap_or("?");
                    return Err(failure(format!(
                        "this worker's build of {title} is another revision (digest {found}) than the job's ({implementation_digest}); run the job on a worker built from that revision"
                    )));
                }
            }
            lines.extend(rows);
        }
        Ok(lines)
    }

    async fn solution_job(
        &self,
        job: &ClaimedJob,
        name: &str,
        document: &Value,
        folder: &Path,
    ) -> Result<Vec<ExportLine>, EnvironmentFailure> {
        let spec = &job.job.spec;
        let trace = self.trace.as_ref().ok_or_else(|| {
            failure("a Solution job needs the FlashInfer-Bench definitions and workloads: start the worker with --trace DIR")
        })?;
        // A flashinfer_trace folder of the job's workloads alone, beside the real definitions.
        let definition = spec.workloads.operation.as_str();
        let source = find_workloads(trace, definition)
            .ok_or_else(|| failure(format!("{}: no workloads file for definition {definition}", trace.display())))?;
        let relative = source.strip_prefix(trace).unwrap_or(&source).to_path_buf();
        let own = folder.join("flashinfer_trace");
        let target = own.join(&relative);
        let wanted: Vec<&str> = spec.workloads.workloads.iter().map(String::as_str).collect();
        let kept = filter_workloads(&source, &wanted)?;
        if kept.len() != wanted.len() {
            return Err(failure(format!(
                "{}: {} of the job's {} workloads are not in it",
                source.display(),
                wanted.len() - kept.len(),
                wanted.len()
            )));
        }
        let prepare = || -> std::io::Result<()> {
            std::fs::create_dir_all(target.parent().unwrap_or(&own))?;
            std::fs::write(&target, kept.join("\n") + "\n")?;
            std::os::unix::fs::symlink(trace.join("definitions"), own.join("definitions"))
        };
        prepare().map_err(|error| failure(format!("cannot prepare {}: {error}", own.display())))?;
        let solution = folder.join("solution.json");
        std::fs::write(&solution, serde_json::to_vec_pretty(document).unwrap_or_default())
            .map_err(|error| failure(format!("cannot write {}: {error}", solution.display())))?;
        let out = folder.join("verify-out");
        let args: Vec<String> = vec![
            "verify".into(),
            solution.display().to_string(),
            "--workloads".into(),
            target.display().to_string(),
            "--trials".into(),
            self.trials.to_string(),
            "--python".into(),
            self.python.clone(),
            "--out".into(),
            out.display().to_string(),
        ];
        // `ki verify` builds, runs and times in processes of its own: it holds the GPU throughout.
        let log = folder.join("verify.log");
        self.child(&args, &log, true).await.map_err(|error| failure(format!("{name}: {error}")))?;
        read_rows(&out.join("catalog-rows.jsonl"), &log).await
    }

    /// Trials per workload: as many as the run being re-verified had, so that the new run is
    /// timed under the same protocol record (the trial count is part of it, and so of the
    /// comparison group); the worker's own number for a job with no basis run.
    async fn trials_like(&self, basis_run_id: Option<&str>) -> Result<usize, EnvironmentFailure> {
        let Some(basis) = basis_run_id else { return Ok(self.trials) };
        let run: BenchmarkRunRow = self.one_row("id", basis).await?;
        let samples =
            run.manifest.pointer("/protocol/spec/measurement/samples").and_then(Value::as_u64).unwrap_or(0) as usize;
        trials_for(samples, self.samples_per_trial, self.trials).map_err(|why| failure(format!("run {basis}: {why}")))
    }

    async fn one_row<T: TableRow>(&self, column: &str, value: &str) -> Result<T, EnvironmentFailure> {
        let table = T::TABLE;
        self.catalog
            .rows_where(column, value)
            .await
            .map_err(|error| failure(format!("cannot read {table}: {error}")))?
            .into_iter()
            .next()
            .ok_or_else(|| failure(format!("the catalog has no {table} row with {column} {value:?}")))
    }

    /// Runs `ki ARGS` (with the GPU lock held throughout when `hold_gpu`), output to `log`.
    /// Killed when the job's future is dropped (lease lost, worker stopped) and when the
    /// worker itself dies.
    async fn child(&self, args: &[String], log: &Path, hold_gpu: bool) -> Result<(), EnvironmentFailure> {
        let _gpu = match hold_gpu {
            true => Some(GpuLock::acquire(&self.gpu_lock).await?),
            false => None,
        };
        let output =
            std::fs::File::create(log).map_err(|error| failure(format!("cannot write {}: {error}", log.display())))?;
        let errors = output.try_clone().map_err(|error| failure(format!("cannot write {}: {error}", log.display())))?;
        let mut command = tokio::process::Command::new(&self.ki);
        command.args(args).stdin(Stdio::null()).stdout(output).stderr(errors).kill_on_drop(true);
        // SAFETY: prctl is async-signal-safe; between fork and exec it only sets a flag.
        unsafe {
            command.pre_exec(|| {
                // The child dies with the worker (a SIGKILLed worker cannot kill it itself).
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut process =
            command.spawn().map_err(|error| failure(format!("cannot start {}: {error}", self.ki.display())))?;
        let status = match tokio::time::timeout(self.job_timeout, process.wait()).await {
            Ok(status) => status.map_err(|error| failure(format!("waiting for `ki {}`: {error}", args[0])))?,
            Err(_) => {
                let _ = process.kill().await;
                return Err(failure(format!(
                    "`ki {}` ran longer than {} s: killed; {}",
                    args[0],
                    self.job_timeout.as_secs(),
                    log_tail(log)
                )));
            }
        };
        // Exit 2: the child ran and wrote its records, some of them failing (an incorrect
        // run): a verdict, published like any other. Anything else is the environment's.
        if !status.success() && status.code() != Some(2) {
            return Err(failure(format!("`ki {}` failed ({status}): {}", args[0], log_tail(log))));
        }
        Ok(())
    }
}

/// The records and verdict of a job, after checking that they are what the job asked for.
fn outcome_of(
    job: &ClaimedJob,
    mut lines: Vec<ExportLine>,
    environment: &EnvironmentFacts,
) -> Result<JobOutcome, EnvironmentFailure> {
    let spec = &job.job.spec;
    let mut statuses = BTreeMap::<String, usize>::new();
    for line in lines.iter().filter(|line| line.table == "benchmark_runs") {
        let model = text(&line.row, "hardwareModel").unwrap_or_default();
        if !model.eq_ignore_ascii_case(&environment.gpu) {
            return Err(failure(format!(
                "a run was measured on {model:?}, not on this worker's registered GPU {:?}",
                environment.gpu
            )));
        }
        let protocol = text(&line.row, "environmentSummary").unwrap_or_default();
        if !protocol.ends_with(spec.protocol.as_str()) {
            return Err(failure(format!(
                "a run was timed under {protocol:?}, not the job's protocol {}",
                spec.protocol
            )));
        }
        *statuses.entry(text(&line.row, "status").unwrap_or("unknown").to_string()).or_default() += 1;
    }
    let runs: usize = statuses.values().sum();
    if runs == 0 {
        return Err(failure("the runner wrote no runs".to_string()));
    }
    // Numbered as one file's lines, so that a refusal names the row.
    for (index, line) in lines.iter_mut().enumerate() {
        line.line = index + 1;
    }
    let status = match statuses.keys().find(|status| status.as_str() != "passed").map(String::as_str) {
        None => VerdictStatus::Passed,
        Some("incorrect_numerical" | "incorrect_shape" | "incorrect") => VerdictStatus::Incorrect,
        Some("compile_error") => VerdictStatus::CompileError,
        Some("timeout") => VerdictStatus::Timeout,
        Some("suspected_reward_hack") => VerdictStatus::Refused,
        Some(_) => VerdictStatus::RuntimeError,
    };
    let counts: Vec<String> = statuses.iter().map(|(status, count)| format!("{count} {status}")).collect();
    let summary = format!(
        "{} on {} under {}: {runs} run(s), {}",
        spec.subject.label(),
        environment.gpu,
        spec.protocol,
        counts.join(", ")
    );
    Ok(JobOutcome { lines, verdict: Verdict { status, summary, detail: json!({"statuses": statuses}) } })
}

/// Trials that give `samples` samples at `per_trial` samples a trial (none known: `fallback`).
fn trials_for(samples: usize, per_trial: usize, fallback: usize) -> Result<usize, String> {
    match samples {
        0 => Ok(fallback),
        samples if per_trial > 0 && samples % per_trial == 0 => Ok(samples / per_trial),
        samples => Err(format!(
            "{samples} samples is not a whole number of trials of {per_trial}: this runner cannot time it the same way"
        )),
    }
}

fn length_rule(protocol: &str) -> Result<&'static str, EnvironmentFailure> {
    protocol
        .strip_prefix(RUNNER_PROTOCOL_PREFIX)
        .and_then(|rule| LENGTH_RULES.iter().copied().find(|known| *known == rule))
        .ok_or_else(|| {
            failure(format!(
                "protocol {protocol:?} is not one the runner times (it times {RUNNER_PROTOCOL_PREFIX}{{{}}})",
                LENGTH_RULES.join(",")
            ))
        })
}

/// Fresh inputs for every attempt of every job, yet the same for a replay of one attempt.
fn seed_of(job_key: &str, attempt: u32, workload: usize) -> u64 {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("{job_key}:{attempt}:{workload}").as_bytes());
    u64::from_le_bytes(digest[..8].try_into().unwrap_or_default()) >> 1
}

/// The records a child wrote; when it wrote none (it stopped before: a usage error also
/// exits 2), its log says why.
async fn read_rows(path: &Path, log: &Path) -> Result<Vec<ExportLine>, EnvironmentFailure> {
    if !path.is_file() {
        return Err(failure(format!("the child wrote no records ({}): {}", path.display(), log_tail(log))));
    }
    let owned = path.to_path_buf();
    tokio::task::spawn_blocking(move || ki_model::export::read_export(&owned))
        .await
        .map_err(|error| failure(format!("reading {}: {error}", path.display())))?
        .map_err(|error| failure(format!("{}: {error}", path.display())))
}

fn find_workloads(trace: &Path, definition: &str) -> Option<PathBuf> {
    let file = format!("{definition}.jsonl");
    let families = std::fs::read_dir(trace.join("workloads")).ok()?;
    families.flatten().map(|family| family.path().join(&file)).find(|candidate| candidate.is_file())
}

/// The lines of a FlashInfer-Bench workloads file whose `workload.uuid` is wanted.
fn filter_workloads(path: &Path, wanted: &[&str]) -> Result<Vec<String>, EnvironmentFailure> {
    let text =
        std::fs::read_to_string(path).map_err(|error| failure(format!("cannot read {}: {error}", path.display())))?;
    Ok(text
        .lines()
        .filter(|line| {
            serde_json::from_str::<Value>(line)
                .ok()
                .and_then(|value| value.pointer("/workload/uuid").and_then(Value::as_str).map(str::to_string))
                .is_some_and(|uuid| wanted.contains(&uuid.as_str()))
        })
        .map(str::to_string)
        .collect())
}

fn log_tail(log: &Path) -> String {
    let bytes = std::fs::read(log).unwrap_or_default();
    let start = bytes.len().saturating_sub(LOG_TAIL_BYTES);
    let tail = String::from_utf8_lossy(&bytes[start..]);
    let tail = tail.trim();
    if tail.is_empty() { "no output".to_string() } else { tail.replace('\n', " | ") }
}

fn text<'a>(row: &'a Map<String, Value>, column: &str) -> Option<&'a str> {
    row.get(column).and_then(Value::as_str)
}

fn failure(reason: impl Into<String>) -> EnvironmentFailure {
    EnvironmentFailure::new(reason)
}

/// An exclusive lock on a file for as long as it lives (released by the kernel when the
/// holder dies, so a killed worker never leaves the GPU locked).
struct GpuLock {
    _file: std::fs::File,
}

impl GpuLock {
    async fn acquire(path: &Path) -> Result<GpuLock, EnvironmentFailure> {
        let owned = path.to_path_buf();
        tokio::task::spawn_blocking(move || {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&owned)
                .map_err(|error| failure(format!("cannot open the GPU lock {}: {error}", owned.display())))?;
            file.lock().map_err(|error| failure(format!("cannot lock {}: {error}", owned.display())))?;
            Ok(GpuLock { _file: file })
        })
        .await
        .map_err(|error| failure(format!("waiting for the GPU lock: {error}")))?
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_re_verification_is_timed_with_as_many_trials_as_its_basis_run() {
        assert_eq!(trials_for(90, 30, 1), Ok(3));
        assert_eq!(trials_for(30, 30, 3), Ok(1));
        assert_eq!(trials_for(0, 30, 3), Ok(3), "no basis: the worker's number");
        assert!(trials_for(45, 30, 3).unwrap_err().contains("not a whole number of trials of 30"));
    }

    #[test]
    fn only_the_runners_protocols_are_taken() {
        assert_eq!(length_rule("kernelindex-rerun-v2-tail").map_err(|e| e.reason), Ok("tail"));
        let refused = length_rule("kernelindex-rerun-v1").unwrap_err().reason;
        assert!(refused.contains("kernelindex-rerun-v2-{realistic,uniform,lognormal,tail}"), "{refused}");
        assert!(length_rule("kernelindex-rerun-v2-").is_err());
    }

    #[test]
    fn seeds_differ_by_job_attempt_and_workload() {
        let seeds = [seed_of("k", 1, 0), seed_of("k", 2, 0), seed_of("k", 1, 1), seed_of("j", 1, 0)];
        for (i, a) in seeds.iter().enumerate() {
            for b in &seeds[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(seed_of("k", 1, 0), seed_of("k", 1, 0));
        assert!(seeds.iter().all(|seed| *seed < (1 << 63)), "seeds fit the runner's i64 columns");
    }
}
