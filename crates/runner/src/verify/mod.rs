//! `ki verify`: anyone's FlashInfer-Bench Solutions (and our baselines) verified and timed on the
//! GPU, each in a fresh process, judged by a process that never imports them.
//!
//! One session: intake (every Solution parsed and validated; a refused document is reported with
//! its file and JSON pointer and nothing is written for it), builds (CUDA/C++ solutions with the torch
//! binding, on the GPU host's nvcc via torch's extension builder, `--jobs` at a time, cached by source
//! digest; FlashInfer's JIT for the baselines warmed the same way) run in the background while the
//! GPU works through the definitions one by one. Per definition: a judge process computes the
//! definition's reference for every (workload, trial) plan; for gqa paged decode the Rust CPU reference
//! recomputes every trial and must agree; then each implementation runs in its own fresh solution
//! worker (the next one is started while the current one runs), one workload request at a time with a
//! deadline. A hang is killed (timeout), a crash or a broken CUDA context ends that worker with a
//! recorded verdict and a fresh worker takes the next workload; a refusal as dishonest ends the
//! solution's run. Records: `manifests/`, `samples/`, `artifacts/` (each solution's source bundle),
//! `runs.jsonl` (appended as runs finish), `catalog-rows.jsonl`, `results.md`, `session.json`.
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use serde_json::{Map, Value, json};

use crate::compare::OutputComparison;
use crate::definition::Definition;
use crate::families::{self, Bound, Ceilings};
use crate::materialize::{InputSource, WorkloadCase, read_workloads, tensor_seed, trial_seed};
use crate::records::{self, VerifyImplementation, VerifyMachine, VerifyRows, VerifyRunFacts};
use crate::solution::{IntakeError, Solution};
use crate::stats::{SampleSummary, median, summarize};
use crate::verdict::{Verdict, first_error_lines};
use crate::worker::{Reply, Worker, log_tail, sanitize};

mod build;
mod intake;
mod messages;
mod plan;
mod record;
mod run;
use build::*;
use intake::*;
use messages::*;
use plan::*;
use run::*;

/// Every Python module the workers of `ki verify` import, written beside each other in the scratch
/// folder (a test holds that each `import ki_*` of them is here).
pub const PY_FILES: &[(&str, &str)] = &[
    ("ki_timing.py", include_str!("../../python/ki_timing.py")),
    ("ki_windows.py", include_str!("../../python/ki_windows.py")),
    ("ki_inputs.py", include_str!("../../python/ki_inputs.py")),
    ("ki_exchange.py", include_str!("../../python/ki_exchange.py")),
    ("ki_judge.py", include_str!("../../python/ki_judge.py")),
    ("ki_compare.py", include_str!("../../python/ki_compare.py")),
    ("ki_routing.py", include_str!("../../python/ki_routing.py")),
    ("ki_solution.py", include_str!("../../python/ki_solution.py")),
    ("ki_build.py", include_str!("../../python/ki_build.py")),
    ("ki_baselines.py", include_str!("../../python/ki_baselines.py")),
];

#[derive(Args, Debug, Clone)]
pub struct VerifyArgs {
    /// FlashInfer-Bench Solution JSON files (current or legacy schema).
    pub solutions: Vec<PathBuf>,
    /// A workloads .jsonl file (its definition is found in the flashinfer_trace folder above it).
    #[arg(long, conflicts_with = "definition")]
    pub workloads: Option<PathBuf>,
    /// A flashinfer_trace folder holding definitions/ and workloads/.
    #[arg(long)]
    pub definition: Option<PathBuf>,
    /// Where the records go.
    #[arg(long, default_value = "verify-out")]
    pub out: PathBuf,
    /// Also run each definition's baseline (FlashInfer's API, torch, or the reference).
    #[arg(long)]
    pub baseline: bool,
    /// With --baseline and no solutions: only these definitions (comma-separated); default all with workloads.
    #[arg(long, value_delimiter = ',')]
    pub only: Vec<String>,
    /// Trials per workload, each on new inputs.
    #[arg(long, default_value_t = 3)]
    pub trials: usize,
    /// At most this many workloads per definition, spread from the smallest to the largest.
    #[arg(long)]
    pub limit: Option<usize>,
    /// Seconds one workload request may take before the solution's worker is killed (timeout).
    #[arg(long, default_value_t = 60)]
    pub timeout: u64,
    /// Seconds one build may take.
    #[arg(long, default_value_t = 600)]
    pub build_timeout: u64,
    /// Builds at a time.
    #[arg(long, default_value_t = 6)]
    pub jobs: usize,
    /// Stop starting new work after this many seconds (what is left is reported as not run).
    #[arg(long)]
    pub deadline: Option<u64>,
    /// Python interpreter with torch (and flashinfer for the baselines).
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// A catalog export (repeatable): reuse its operation, workload and implementation rows where
    /// it has them, so that records of the same thing are one row wherever they are published.
    #[arg(long)]
    pub catalog: Vec<PathBuf>,
    /// Build cache (kept across sessions); default a folder under the scratch space.
    #[arg(long)]
    pub build_cache: Option<PathBuf>,
    /// Run each solution (not the baselines) on at most this many workloads of its definition, spread
    /// from the smallest to the largest (default: every workload).
    #[arg(long)]
    pub solution_workloads: Option<usize>,
    /// The session seed (default: drawn from the OS; published with the records afterwards).
    #[arg(long)]
    pub seed: Option<u64>,
    /// An earlier session's runs.jsonl (repeatable): its recorded (implementation, workload) pairs
    /// are not run again, nor are implementations it refused as dishonest (a run split over calls).
    #[arg(long = "skip-recorded", value_name = "RUNS_JSONL")]
    pub skip_recorded: Vec<PathBuf>,
}

/// An implementation to verify.
#[derive(Clone)]
enum Entry {
    Solution { solution: Box<Solution>, files: Vec<String> },
    Baseline,
}

#[derive(Clone)]
struct Implementation {
    key: String,
    definition: String,
    entry: Entry,
    /// The workloads (uuids) this session runs it on: every one of its definition, or a spread
    /// (`--solution-workloads`), less what earlier sessions recorded (`--skip-recorded`).
    workloads: std::collections::BTreeSet<String>,
}

impl Implementation {
    fn runs_on(&self, plans: &WorkloadPlans) -> bool {
        self.workloads.contains(&plans.case.uuid)
    }

    fn label(&self) -> String {
        match &self.entry {
            Entry::Solution { solution, .. } => solution.short_name(),
            Entry::Baseline => format!("baseline-{}", self.definition),
        }
    }
}

/// A finished build (or baseline warm-up).
#[derive(Clone, Debug)]
enum Built {
    Ready { so_path: Option<String> },
    Failed { verdict: Verdict, log: String },
}

type BuildBoard = Arc<(Mutex<BTreeMap<String, Built>>, Condvar)>;

/// One (workload, trial) plan as both workers receive it, with what the runner keeps of it.
struct TrialPlan {
    json: Value,
    /// The family's bound from the axes and the synthesized inputs.
    bound: Bound,
    /// moe: what each local expert the routing reaches adds to the bound.
    expert_work: Option<families::moe::ExpertWork>,
    /// What the judge found the trial's own inputs add to the bound (moe: the weights of the local
    /// experts the routing reaches, and their flops), once it computed the reference.
    routed: std::sync::OnceLock<Bound>,
}

impl TrialPlan {
    fn bound(&self) -> Bound {
        let routed = self.routed.get().copied().unwrap_or_default();
        Bound { bytes: self.bound.bytes + routed.bytes, flops: self.bound.flops + routed.flops }
    }
}

struct WorkloadPlans {
    case: WorkloadCase,
    trials: Vec<TrialPlan>,
    synthesized: Vec<String>,
    drawn_random: Vec<String>,
}

/// The result of one implementation on one workload.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunResult {
    pub implementation: String,
    pub implementation_key: String,
    pub definition: String,
    pub workload: String,
    pub axes: BTreeMap<String, i64>,
    pub verdict: Verdict,
    pub method: Option<String>,
    /// Why the published figure is not the method's usual one (CUPTI's in place of the in-graph).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method_note: Option<String>,
    pub latency: Option<SampleSummary>,
    pub eager: Option<SampleSummary>,
    pub graph_replay: Option<SampleSummary>,
    pub bound_ns: f64,
    pub speed_of_light_percent: Option<f64>,
    pub worst: Vec<OutputComparison>,
    pub checks: usize,
    pub dps: Option<String>,
    pub reference_agreement: Option<String>,
    pub seconds: f64,
    #[serde(skip)]
    pub samples: Value,
    #[serde(skip)]
    pub primary_samples: Vec<f64>,
    #[serde(skip)]
    pub log: Option<String>,
}

struct Session {
    args: VerifyArgs,
    python_dir: PathBuf,
    scratch: PathBuf,
    out: PathBuf,
    seed: u64,
    started: Instant,
    env: Vec<(String, String)>,
    /// What builds target (`TORCH_CUDA_ARCH_LIST`), part of the build cache's key.
    arch: String,
    results: Vec<RunResult>,
    runs_file: std::fs::File,
    agreement: Arc<Mutex<BTreeMap<(String, usize), String>>>,
    /// Baselines' labels and descriptions, as their workers reported them.
    descriptions: BTreeMap<String, (String, String)>,
    spare_judge: Option<Worker>,
    /// Workloads whose axes no rule can honour: (definition, uuid, why); not run.
    invalid: Mutex<Vec<(String, String, String)>>,
    /// The `--catalog` rows the records reuse (operations, workloads, implementations).
    catalog: crate::records::CatalogRows,
}

fn os_seed() -> u64 {
    let mut bytes = [0u8; 8];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        use std::io::Read;
        let _ = f.read_exact(&mut bytes);
    }
    u64::from_le_bytes(bytes) ^ std::process::id() as u64
}

fn timing_protocol() -> Value {
    json!({"calls_per_graph": 8, "graph_replays": 10, "eager_iterations": 10, "trial_budget_s": 0.25})
}

/// `ki verify`.
pub fn verify(args: VerifyArgs) -> Result<ExitCode> {
    // A worker or judge that dies closes its pipe; writing to it must be an error this session
    // records (the batch goes on), not a SIGPIPE that ends it (`ki` restores the default
    // disposition for its other commands).
    // SAFETY: setting a signal's disposition to SIG_IGN installs no handler and touches no memory.
    unsafe { libc::signal(libc::SIGPIPE, libc::SIG_IGN) };
    let dataset = Dataset::new(&args)?;
    // 1. Intake: every document parsed and validated before anything is written.
    let Intake { mut implementations, definitions, refused } = intake(&args, &dataset)?;
    if implementations.is_empty() {
        say!("nothing to verify ({} refused at intake); nothing written", refused.len());
        return Ok(ExitCode::FAILURE);
    }
    // The catalogs the records reuse rows of, read before any work: a missing or malformed one
    // stops the session here, naming it, not after the GPU time is spent.
    let names: Vec<String> = definitions.keys().cloned().collect();
    let catalog = crate::records::catalog_rows(&args.catalog, &names)?;
    let recorded = crate::recorded::Recorded::read(&args.skip_recorded)?;
    if !recorded.is_empty() {
        recorded.check_card(crate::records::nvidia_smi_facts().get("name").map(String::as_str))?;
    }
    // 2. The session's folders and workers' files.
    let out_existed = args.out.exists();
    std::fs::create_dir_all(&args.out)?;
    for sub in ["manifests", "samples", "artifacts", "logs"] {
        std::fs::create_dir_all(args.out.join(sub))?;
    }
    let scratch_base = if Path::new("/dev/shm").is_dir() { PathBuf::from("/dev/shm") } else { std::env::temp_dir() };
    let scratch = scratch_base.join(format!("ki-verify-{}", std::process::id()));
    let python_dir = scratch.join("python");
    std::fs::create_dir_all(&python_dir)?;
    for (name, text) in PY_FILES {
        std::fs::write(python_dir.join(name), text)?;
    }
    let seed = args.seed.unwrap_or_else(os_seed);
    let arch = match crate::gpu::compute_capability() {
        Ok((major, minor)) => crate::gpu::build_arch(major, minor),
        Err(error) => {
            say!("the device's architecture is unknown ({error:#}): builds target 9.0a");
            "9.0a".to_string()
        }
    };
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let env = vec![
        ("PYTHONUNBUFFERED".to_string(), "1".to_string()),
        ("PYTHONDONTWRITEBYTECODE".to_string(), "1".to_string()),
        (
            "FLASHINFER_WORKSPACE_BASE".to_string(),
            std::env::var("KI_FLASHINFER_WORKSPACE").unwrap_or_else(|_| "/tmp/ki-flashinfer".into()),
        ),
        ("TORCH_CUDA_ARCH_LIST".to_string(), arch.clone()),
        // nvcc's jobs per build, so that `--jobs` builds at a time share the host's cores.
        ("MAX_JOBS".to_string(), (cores / args.jobs.max(1)).max(1).to_string()),
    ];
    let runs_file = std::fs::OpenOptions::new().create(true).append(true).open(args.out.join("runs.jsonl"))?;
    let mut session = Session {
        out: args.out.clone(),
        args: args.clone(),
        python_dir,
        scratch: scratch.clone(),
        seed,
        started: Instant::now(),
        env,
        arch,
        results: Vec::new(),
        runs_file,
        agreement: Arc::new(Mutex::new(BTreeMap::new())),
        descriptions: BTreeMap::new(),
        spare_judge: None,
        invalid: Mutex::new(Vec::new()),
        catalog,
    };
    // 3. Plans for every definition (Rust synthesizes the blob inputs by the family's rule).
    let mut order: Vec<String> = definitions.keys().cloned().collect();
    let priority = |op: &str| match op {
        "gemm" => 0,
        "moe" => 1,
        "rmsnorm" => 2,
        "gqa_paged" => 3,
        "gqa_ragged" => 4,
        _ => 5,
    };
    order.sort_by_key(|n| (priority(&definitions[n].0.op_type), n.clone()));
    let mut plans: BTreeMap<String, Vec<WorkloadPlans>> = BTreeMap::new();
    for name in &order {
        let (definition, _) = &definitions[name];
        let file = dataset.workloads_file(name).ok_or_else(|| anyhow!("no workloads for {name}"))?;
        plans.insert(name.clone(), session.plan_definition(definition, &file)?);
    }
    // What earlier sessions recorded is not run again.
    for i in &mut implementations {
        let all = &plans[&i.definition];
        let chosen: Vec<usize> = match (&i.entry, args.solution_workloads) {
            (Entry::Solution { .. }, Some(n)) if n < all.len() => spread(all, n),
            _ => (0..all.len()).collect(),
        };
        i.workloads = chosen
            .into_iter()
            .map(|k| all[k].case.uuid.clone())
            .filter(|uuid| !recorded.is_done(&i.key, uuid))
            .collect();
    }
    if !recorded.is_empty() {
        let before = implementations.len();
        implementations.retain(|i| !i.workloads.is_empty() && !recorded.refused_as_dishonest(&i.key));
        say!(
            "resuming: {} runs recorded earlier are not run again; {} of {before} implementations have work left",
            recorded.len(),
            implementations.len()
        );
        order.retain(|n| implementations.iter().any(|i| &i.definition == n));
        if implementations.is_empty() {
            std::fs::remove_dir_all(&scratch).ok();
            if !out_existed {
                std::fs::remove_dir_all(&args.out).ok();
            }
            say!("nothing left to verify: every run was recorded earlier; nothing written");
            return Ok(ExitCode::SUCCESS);
        }
    }
    // 4. Builds and warm-ups in the background.
    let board: BuildBoard = Arc::new((Mutex::new(BTreeMap::new()), Condvar::new()));
    let build_jobs: Vec<(Implementation, Option<Value>)> = order
        .iter()
        .flat_map(|name| {
            let first_plan = plans[name].first().and_then(|w| w.trials.first()).map(|t| t.json.clone());
            implementations
                .iter()
                .filter(|i| &i.definition == name)
                .filter(|i| match &i.entry {
                    Entry::Baseline => true,
                    Entry::Solution { solution, .. } => solution.language.is_compiled(),
                })
                .map(move |i| (i.clone(), first_plan.clone()))
                .collect::<Vec<_>>()
        })
        .collect();
    let builder = session.start_builds(build_jobs, &definitions, board.clone());
    // 5. The GPU, one definition at a time.
    let machine = Arc::new(Mutex::new(VerifyMachine::default()));
    let cross_check = crate::verify::CrossCheck::start(session.agreement.clone());
    // Definitions in order, each with the implementations whose build is ready; what is not ready yet
    // waits for a later pass (the GPU never idles for a build while other work is ready).
    let mut remaining: BTreeMap<String, Vec<Implementation>> = order
        .iter()
        .map(|n| (n.clone(), implementations.iter().filter(|i| &i.definition == n).cloned().collect()))
        .collect();
    while !remaining.is_empty() {
        let mut progressed = false;
        for name in &order {
            if session.out_of_time() {
                break;
            }
            let Some(list) = remaining.get_mut(name) else { continue };
            let done: Vec<String> = board.0.lock().unwrap().keys().cloned().collect();
            let ready: Vec<Implementation> =
                list.iter().filter(|i| !needs_build(i) || done.contains(&i.key)).cloned().collect();
            if ready.is_empty() {
                continue;
            }
            list.retain(|i| !ready.iter().any(|r| r.key == i.key));
            if list.is_empty() {
                remaining.remove(name);
            }
            session.run_ready(name, &definitions, &plans, ready, &board, &machine, &cross_check);
            progressed = true;
        }
        if session.out_of_time() {
            for (name, list) in std::mem::take(&mut remaining) {
                for i in &list {
                    session.not_run(
                        i,
                        &definitions[&name].0,
                        &plans[&name],
                        "the session's deadline passed before its build finished",
                    );
                }
            }
            break;
        }
        if !progressed {
            let (lock, cvar) = &*board;
            let guard = lock.lock().unwrap();
            let _ = cvar.wait_timeout(guard, Duration::from_secs(2)).unwrap();
        }
    }
    cross_check.finish(Duration::from_secs(30));
    crate::worker::kill_registered();
    drop(builder);
    // 6. Records.
    let mut machine = machine.lock().unwrap().clone();
    machine.read_host();
    session.write_records(&machine, &definitions, &implementations, &plans, &refused)?;
    std::fs::remove_dir_all(&scratch).ok();
    let records = session.results.iter().filter(|r| r.verdict.is_record()).count();
    let passed = session.results.iter().filter(|r| r.verdict == Verdict::Passed).count();
    say!(
        "verify: {} runs recorded ({passed} passed), {} not run, {} refused at intake; records in {}",
        records,
        session.results.len() - records,
        refused.len(),
        args.out.display()
    );
    Ok(if records == 0 {
        say!("verify: nothing was verified");
        ExitCode::FAILURE
    } else if refused.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    })
}

fn needs_build(implementation: &Implementation) -> bool {
    match &implementation.entry {
        Entry::Baseline => true,
        Entry::Solution { solution, .. } => solution.language.is_compiled(),
    }
}

impl Session {
    #[allow(clippy::too_many_arguments)]
    fn run_ready(
        &mut self,
        name: &str,
        definitions: &BTreeMap<String, (Definition, String)>,
        plans: &BTreeMap<String, Vec<WorkloadPlans>>,
        mine: Vec<Implementation>,
        board: &BuildBoard,
        machine: &Arc<Mutex<VerifyMachine>>,
        cross_check: &CrossCheck,
    ) {
        let session = self;
        let (definition, text) = &definitions[name];
        let before = session.results.len();
        if let Err(error) = session.run_definition(definition, text, &plans[name], &mine, board, machine, cross_check) {
            say!("definition {name}: {error:#}");
            if session.results.len() == before {
                let reason = format!(
                    "the definition's judge failed: {}",
                    sanitize(&format!("{error:#}")).chars().take(300).collect::<String>()
                );
                for i in &mine {
                    session.not_run(i, definition, &plans[name], &reason);
                }
            }
        }
    }
}

impl Session {
    fn left(&self) -> Option<Duration> {
        self.args.deadline.map(|d| Duration::from_secs(d).saturating_sub(self.started.elapsed()))
    }

    fn out_of_time(&self) -> bool {
        self.left().is_some_and(|l| l.is_zero())
    }

    fn py(&self, name: &str) -> String {
        self.python_dir.join(name).display().to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::PY_FILES;

    /// The `ki_*` modules a Python source imports (`import ki_x` and `from ki_x import ...`).
    fn local_imports(source: &str) -> Vec<String> {
        source
            .lines()
            .filter_map(|line| {
                let line = line.trim_start();
                let rest = line.strip_prefix("import ").or_else(|| line.strip_prefix("from "))?;
                let name = rest.split(|c: char| !(c.is_alphanumeric() || c == '_')).next()?;
                name.starts_with("ki_").then(|| name.to_string())
            })
            .collect()
    }

    #[test]
    fn every_module_a_worker_imports_is_written_beside_it() {
        // Seen on the H200 (2026-12-04): a module missing from this list killed every worker at start.
        let names: Vec<&str> = PY_FILES.iter().map(|(n, _)| n.trim_end_matches(".py")).collect();
        for (file, source) in PY_FILES {
            for module in local_imports(source) {
                assert!(names.contains(&module.as_str()), "{file} imports {module}, which `ki verify` does not write");
            }
        }
        let worker = [crate::python::WORKER_SOURCE, crate::python::TIMING_SOURCE, crate::python::WINDOWS_SOURCE];
        for source in worker {
            for module in local_imports(source) {
                assert!(["ki_timing", "ki_windows"].contains(&module.as_str()), "ki run's worker imports {module}");
            }
        }
        assert_eq!(
            local_imports("import ki_a  # x\nfrom ki_b import c\nimport torch\n  import ki_c\n"),
            ["ki_a", "ki_b", "ki_c"]
        );
    }
}
