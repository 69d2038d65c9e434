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
use crate::solution::{IntakeError, Language, Solution};
use crate::stats::{SampleSummary, median, summarize};
use crate::verdict::{Verdict, first_error_lines};
use crate::worker::{Reply, Worker, log_tail, sanitize};

/// Every Python module the workers of `ki verify` import, written beside each other in the scratch
/// folder (a test holds that each `import ki_*` of them is here).
pub const PY_FILES: &[(&str, &str)] = &[
    ("ki_timing.py", include_str!("../python/ki_timing.py")),
    ("ki_windows.py", include_str!("../python/ki_windows.py")),
    ("ki_inputs.py", include_str!("../python/ki_inputs.py")),
    ("ki_exchange.py", include_str!("../python/ki_exchange.py")),
    ("ki_judge.py", include_str!("../python/ki_judge.py")),
    ("ki_solution.py", include_str!("../python/ki_solution.py")),
    ("ki_build.py", include_str!("../python/ki_build.py")),
    ("ki_baselines.py", include_str!("../python/ki_baselines.py")),
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
    /// A catalog export: reuse its OperationSpec and WorkloadCase records where it has them.
    #[arg(long)]
    pub catalog: Option<PathBuf>,
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

/// Where definitions and workloads are found.
struct Dataset {
    root: PathBuf,
    only_workloads: Option<PathBuf>,
}

fn find_file(dir: &Path, file_name: &str) -> Option<PathBuf> {
    let entries = std::fs::read_dir(dir).ok()?;
    let mut dirs = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            dirs.push(path);
        } else if path.file_name().and_then(|n| n.to_str()) == Some(file_name) {
            return Some(path);
        }
    }
    dirs.sort();
    dirs.iter().find_map(|d| find_file(d, file_name))
}

impl Dataset {
    fn new(args: &VerifyArgs) -> Result<Dataset> {
        if let Some(file) = &args.workloads {
            let root = file.ancestors().nth(3).map(Path::to_path_buf).unwrap_or_default();
            return Ok(Dataset { root, only_workloads: Some(file.clone()) });
        }
        match &args.definition {
            Some(dir) if dir.join("definitions").is_dir() => Ok(Dataset { root: dir.clone(), only_workloads: None }),
            Some(dir) => {
                bail!("--definition {}: not a flashinfer_trace folder (no definitions/ inside)", dir.display())
            }
            None => bail!("give --definition DIR (a flashinfer_trace folder) or --workloads FILE"),
        }
    }

    fn definition(&self, name: &str) -> Result<(Definition, String)> {
        let path = find_file(&self.root.join("definitions"), &format!("{name}.json"))
            .ok_or_else(|| anyhow!("no definition `{name}` under {}", self.root.join("definitions").display()))?;
        let text = std::fs::read_to_string(&path).with_context(|| path.display().to_string())?;
        let definition = Definition::parse(&text, &path.display().to_string())?;
        Ok((definition, text))
    }

    fn workloads_file(&self, name: &str) -> Option<PathBuf> {
        match &self.only_workloads {
            Some(file) => Some(file.clone()),
            None => find_file(&self.root.join("workloads"), &format!("{name}.jsonl")),
        }
    }

    fn names_with_workloads(&self) -> Vec<String> {
        let mut names = Vec::new();
        let mut stack = vec![self.root.join("workloads")];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    stack.push(path);
                } else if let Some(stem) =
                    path.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".jsonl"))
                {
                    names.push(stem.to_string());
                }
            }
        }
        if let Some(file) = &self.only_workloads
            && let Some(stem) = file.file_name().and_then(|n| n.to_str()).and_then(|n| n.strip_suffix(".jsonl"))
        {
            names = vec![stem.to_string()];
        }
        names.sort();
        names
    }
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
    bound: Bound,
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
    results: Vec<RunResult>,
    runs_file: std::fs::File,
    agreement: Arc<Mutex<BTreeMap<(String, usize), String>>>,
    /// Baselines' labels and descriptions, as their workers reported them.
    descriptions: BTreeMap<String, (String, String)>,
    spare_judge: Option<Worker>,
    /// Workloads whose axes no rule can honour: (definition, uuid, why); not run.
    invalid: Mutex<Vec<(String, String, String)>>,
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
    let mut refused: Vec<IntakeError> = Vec::new();
    let mut implementations: Vec<Implementation> = Vec::new();
    let mut definitions: BTreeMap<String, (Definition, String)> = BTreeMap::new();
    for path in &args.solutions {
        match Solution::read(path) {
            Err(error) => refused.push(error),
            Ok(solution) => {
                if !definitions.contains_key(&solution.definition) {
                    match dataset.definition(&solution.definition) {
                        Ok(found) => {
                            definitions.insert(solution.definition.clone(), found);
                        }
                        Err(error) => {
                            refused.push(IntakeError {
                                file: path.display().to_string(),
                                pointer: "/definition".into(),
                                reason: format!("{error:#}"),
                            });
                            continue;
                        }
                    }
                }
                if dataset.workloads_file(&solution.definition).is_none() {
                    refused.push(IntakeError {
                        file: path.display().to_string(),
                        pointer: "/definition".into(),
                        reason: format!("definition `{}` has no workloads in the data set", solution.definition),
                    });
                    continue;
                }
                let file = path.display().to_string();
                if let Some(existing) = implementations.iter_mut().find(|i| i.key == solution.source_digest) {
                    if let Entry::Solution { files, .. } = &mut existing.entry {
                        files.push(file);
                    }
                    continue;
                }
                implementations.push(Implementation {
                    key: solution.source_digest.clone(),
                    definition: solution.definition.clone(),
                    entry: Entry::Solution { solution: Box::new(solution), files: vec![file] },
                    workloads: Default::default(),
                });
            }
        }
    }
    for error in &refused {
        eprintln!("refused at intake: {}", sanitize(&error.to_string()));
    }
    if args.baseline {
        let names: Vec<String> = if !args.only.is_empty() {
            args.only.clone()
        } else if args.solutions.is_empty() {
            dataset.names_with_workloads()
        } else {
            let mut n: Vec<String> = implementations.iter().map(|i| i.definition.clone()).collect();
            n.sort();
            n.dedup();
            n
        };
        for name in names {
            if !definitions.contains_key(&name) {
                definitions.insert(name.clone(), dataset.definition(&name)?);
            }
            implementations.insert(
                0,
                Implementation {
                    key: format!("baseline:{name}"),
                    definition: name,
                    entry: Entry::Baseline,
                    workloads: Default::default(),
                },
            );
        }
    }
    if implementations.is_empty() {
        eprintln!("nothing to verify ({} refused at intake); nothing written", refused.len());
        return Ok(ExitCode::FAILURE);
    }
    let recorded = crate::recorded::Recorded::read(&args.skip_recorded)?;
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
            eprintln!("the device's architecture is unknown ({error:#}): builds target 9.0a");
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
        results: Vec::new(),
        runs_file,
        agreement: Arc::new(Mutex::new(BTreeMap::new())),
        descriptions: BTreeMap::new(),
        spare_judge: None,
        invalid: Mutex::new(Vec::new()),
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
        eprintln!(
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
            eprintln!("nothing left to verify: every run was recorded earlier; nothing written");
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
    eprintln!(
        "verify: {} runs recorded ({passed} passed), {} not run, {} refused at intake; records in {}",
        records,
        session.results.len() - records,
        refused.len(),
        args.out.display()
    );
    Ok(if records == 0 {
        eprintln!("verify: nothing was verified");
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
            eprintln!("definition {name}: {error:#}");
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

/// The Rust CPU reference of gqa paged decode, recomputing every trial the judge dumped.
pub struct CrossCheck {
    sender: Option<std::sync::mpsc::Sender<(Definition, String, usize, PathBuf)>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl CrossCheck {
    fn start(results: Arc<Mutex<BTreeMap<(String, usize), String>>>) -> CrossCheck {
        let (sender, receiver) = std::sync::mpsc::channel::<(Definition, String, usize, PathBuf)>();
        let thread = std::thread::spawn(move || {
            for (definition, workload, trial, path) in receiver {
                let verdict = cross_check_one(&definition, &path);
                std::fs::remove_file(&path).ok();
                results.lock().unwrap().insert((workload, trial), verdict);
            }
        });
        CrossCheck { sender: Some(sender), thread: Some(thread) }
    }

    fn submit(&self, definition: &Definition, workload: &str, trial: usize, path: PathBuf) {
        if let Some(s) = &self.sender {
            let _ = s.send((definition.clone(), workload.to_string(), trial, path));
        }
    }

    /// Stops taking work; waits at most `limit` for what is queued (the rest stays unchecked).
    fn finish(mut self, limit: Duration) {
        self.sender.take();
        let deadline = Instant::now() + limit;
        if let Some(t) = self.thread.take() {
            while !t.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(100));
            }
            if t.is_finished() {
                let _ = t.join();
            }
        }
    }
}

/// "agree" when the CPU reference passes flashinfer_bench_eval against the GPU reference on every
/// output, else why not.
fn cross_check_one(definition: &Definition, path: &Path) -> String {
    let set = match crate::tensor::TensorSet::read(path) {
        Ok(s) => s,
        Err(e) => return format!("unreadable: {e}"),
    };
    let cpu = match crate::reference::run_definition_reference(definition, &set, &path.display().to_string()) {
        Ok(o) => o,
        Err(e) => return format!("CPU reference failed: {e}"),
    };
    let mut worst = String::from("agree");
    for spec in definition.output_specs().unwrap_or_default() {
        let (Some(c), Some(g)) = (cpu.get(&spec.name), set.get(&format!("reference.{}", spec.name))) else {
            return format!("output {} missing", spec.name);
        };
        match crate::compare::compare_tensors(&spec.name, g, c, crate::compare::Tolerance::FLASHINFER_BENCH_DEFAULT) {
            Ok(cmp) if cmp.flashinfer_bench_pass => {}
            Ok(cmp) => {
                worst = format!(
                    "disagree on {}: max abs {:.3e}, matched {:.4}",
                    cmp.name, cmp.max_abs_error, cmp.matched_ratio
                )
            }
            Err(e) => worst = format!("disagree: {e}"),
        }
    }
    worst
}

fn spec_shape(spec: &crate::definition::TensorSpec, axes: &BTreeMap<String, usize>) -> Vec<usize> {
    spec.shape.as_deref().unwrap_or(&[]).iter().map(|a| axes.get(a).copied().unwrap_or(0)).collect()
}

impl Session {
    fn left(&self) -> Option<Duration> {
        self.args.deadline.map(|d| Duration::from_secs(d).saturating_sub(self.started.elapsed()))
    }

    fn out_of_time(&self) -> bool {
        self.left().is_some_and(|l| l.is_zero())
    }

    fn plan_definition(&self, definition: &Definition, file: &Path) -> Result<Vec<WorkloadPlans>> {
        let mut lines: Vec<WorkloadCase> =
            read_workloads(file)?.into_iter().filter(|l| l.definition == definition.name).map(|l| l.workload).collect();
        if let Some(limit) = self.args.limit
            && limit < lines.len()
        {
            // Spread from the smallest to the largest workload, in file order.
            let mut by_size: Vec<(f64, usize)> = lines
                .iter()
                .enumerate()
                .map(|(i, w)| (w.axes.values().map(|&v| v.max(1) as f64).product::<f64>(), i))
                .collect();
            by_size.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mut keep: Vec<usize> = (0..limit)
                .map(|k| by_size[if limit <= 1 { 0 } else { k * (by_size.len() - 1) / (limit - 1) }].1)
                .collect();
            keep.sort();
            keep.dedup();
            lines = keep.into_iter().map(|i| lines[i].clone()).collect();
        }
        let dir = self.scratch.join("plans").join(&definition.name);
        std::fs::create_dir_all(&dir)?;
        let inputs = definition.input_specs().map_err(|e| anyhow!(e))?;
        let outputs = definition.output_specs().map_err(|e| anyhow!(e))?;
        let mut all = Vec::new();
        for (index, case) in lines.into_iter().enumerate() {
            match self.plan_workload(definition, &case, index, &dir, &inputs, &outputs) {
                Ok(plans) => all.push(plans),
                Err(error) => {
                    let reason = format!("{error:#}");
                    eprintln!("workload {} of {}: not run: {}", case.uuid, definition.name, sanitize(&reason));
                    self.invalid.lock().unwrap().push((definition.name.clone(), case.uuid.clone(), reason));
                }
            }
        }
        Ok(all)
    }

    fn plan_workload(
        &self,
        definition: &Definition,
        case: &WorkloadCase,
        index: usize,
        dir: &Path,
        inputs: &[crate::definition::TensorSpec],
        outputs: &[crate::definition::TensorSpec],
    ) -> Result<WorkloadPlans> {
        let case = case.clone();
        {
            let axes = families::resolved_axes(definition, &case)?;
            let workload_seed = tensor_seed(self.seed, &format!("{}/{}", definition.name, case.uuid));
            let mut trials = Vec::new();
            let mut synthesized_names = Vec::new();
            let mut drawn_random = Vec::new();
            for t in 0..self.args.trials {
                let seed = trial_seed(workload_seed, t);
                let made = families::synthesize(definition, &case, &axes, seed)?;
                let file = dir.join(format!("w{index}-t{t}.safetensors"));
                if !made.synthesized.tensors.is_empty() {
                    made.synthesized.write(&file)?;
                }
                let mut tensors = Vec::new();
                for spec in inputs {
                    let shape = spec_shape(spec, &axes);
                    let source = case.inputs.get(&spec.name);
                    let entry = match source {
                        Some(InputSource::Scalar { value }) => {
                            json!({"name": spec.name, "source": "scalar", "dtype": spec.dtype.definition_name(), "value": value})
                        }
                        Some(InputSource::Safetensors { .. }) if made.synthesized.get(&spec.name).is_some() => {
                            json!({"name": spec.name, "source": "file", "dtype": spec.dtype.definition_name(), "shape": shape, "path": file.display().to_string(), "key": spec.name})
                        }
                        _ => {
                            json!({"name": spec.name, "source": "random", "dtype": spec.dtype.definition_name(), "shape": shape,
                                "seed": tensor_seed(seed, &spec.name) & 0x7fff_ffff_ffff_ffff})
                        }
                    };
                    tensors.push(entry);
                }
                let outs: Vec<Value> = outputs
                    .iter()
                    .map(|s| json!({"name": s.name, "dtype": s.dtype.definition_name(), "shape": spec_shape(s, &axes)}))
                    .collect();
                let bound = families::bound(definition, &axes, &made.synthesized);
                trials.push(TrialPlan {
                    json: json!({"workload": case.uuid, "trial": t, "seed": seed, "tensors": tensors, "outputs": outs}),
                    bound,
                });
                synthesized_names = made.synthesized_names.clone();
                drawn_random = made.drawn_random.clone();
            }
            Ok(WorkloadPlans { case, trials, synthesized: synthesized_names, drawn_random })
        }
    }

    fn py(&self, name: &str) -> String {
        self.python_dir.join(name).display().to_string()
    }

    fn build_dir(&self, key: &str) -> PathBuf {
        let base = self.args.build_cache.clone().unwrap_or_else(|| self.scratch.join("builds"));
        // The architecture is part of the key: a cache carried to another GPU is not reused.
        let arch = self.env.iter().find(|(k, _)| k == "TORCH_CUDA_ARCH_LIST").map_or("", |(_, v)| v.as_str());
        base.join(format!(
            "sm{}-{}",
            arch.replace('.', ""),
            key.trim_start_matches("sha256:").chars().take(24).collect::<String>()
        ))
    }

    /// Builds (CUDA solutions) and warm-ups (baselines: FlashInfer's JIT) on `--jobs` threads.
    fn start_builds(
        &self,
        jobs: Vec<(Implementation, Option<Value>)>,
        definitions: &BTreeMap<String, (Definition, String)>,
        board: BuildBoard,
    ) -> std::thread::JoinHandle<()> {
        let queue = Arc::new(Mutex::new(jobs.into_iter().collect::<std::collections::VecDeque<_>>()));
        let defs: Arc<BTreeMap<String, Value>> = Arc::new(
            definitions
                .iter()
                .map(|(k, (_, text))| (k.clone(), serde_json::from_str(text).unwrap_or(Value::Null)))
                .collect(),
        );
        let python = self.args.python.clone();
        let env = self.env.clone();
        let logs = self.out.join("logs");
        let build_script = self.py("ki_build.py");
        let solution_script = self.py("ki_solution.py");
        let timeout = Duration::from_secs(self.args.build_timeout);
        let build_dirs: BTreeMap<String, PathBuf> =
            queue.lock().unwrap().iter().map(|(i, _)| (i.key.clone(), self.build_dir(&i.key))).collect();
        let threads = self.args.jobs.max(1);
        let pch_dir = self.args.build_cache.clone().unwrap_or_else(|| self.scratch.join("builds")).join("pch");
        {
            // The precompiled torch header, on a thread of its own: builds use it once it exists.
            let (python, env, script, dir, log) =
                (python.clone(), env.clone(), build_script.clone(), pch_dir.clone(), logs.join("pch.build.log"));
            std::thread::spawn(move || {
                let dir_text = dir.display().to_string();
                if let Ok(mut w) = Worker::spawn(&python, &[&script, "--pch", &dir_text], &env, &log, "pch") {
                    crate::worker::register(w.pid());
                    let reply = w.receive(Duration::from_secs(300));
                    eprintln!(
                        "precompiled torch header: {}",
                        if matches!(&reply, Reply::Line(v) if v["ok"] == true) { "ready" } else { "not made" }
                    );
                    crate::worker::unregister(w.pid());
                }
            });
        }
        std::thread::spawn(move || {
            let handles: Vec<_> = (0..threads)
                .map(|_| {
                    let pch = pch_dir.clone();
                    let (queue, board, defs, python, env, logs, build_script, solution_script, build_dirs) = (
                        queue.clone(),
                        board.clone(),
                        defs.clone(),
                        python.clone(),
                        env.clone(),
                        logs.clone(),
                        build_script.clone(),
                        solution_script.clone(),
                        build_dirs.clone(),
                    );
                    std::thread::spawn(move || {
                        loop {
                            let Some((implementation, plan)) = queue.lock().unwrap().pop_front() else { return };
                            let started = Instant::now();
                            let label = implementation.label();
                            let log = logs.join(format!("{}.build.log", records::manifest_slug(&label)));
                            let result = match &implementation.entry {
                                Entry::Solution { solution, .. } => build_one(
                                    &python,
                                    &env,
                                    &build_script,
                                    solution,
                                    &build_dirs[&implementation.key],
                                    &pch,
                                    &log,
                                    timeout,
                                ),
                                Entry::Baseline => warm_baseline(
                                    &python,
                                    &env,
                                    &solution_script,
                                    &defs[&implementation.definition],
                                    plan,
                                    &log,
                                    timeout,
                                ),
                            };
                            eprintln!(
                                "build {label}: {} in {:.0} s",
                                if matches!(result, Built::Ready { .. }) { "ready" } else { "FAILED" },
                                started.elapsed().as_secs_f64()
                            );
                            let (lock, cvar) = &*board;
                            lock.lock().unwrap().insert(implementation.key.clone(), result);
                            cvar.notify_all();
                        }
                    })
                })
                .collect();
            for h in handles {
                let _ = h.join();
            }
        })
    }

    fn wait_built(&self, board: &BuildBoard, key: &str) -> Option<Built> {
        let (lock, cvar) = &**board;
        let mut map = lock.lock().unwrap();
        loop {
            if let Some(b) = map.get(key) {
                return Some(b.clone());
            }
            let wait = self.left().unwrap_or(Duration::from_secs(3600)).min(Duration::from_secs(5));
            if self.out_of_time() {
                return None;
            }
            map = cvar.wait_timeout(map, wait).unwrap().0;
        }
    }

    fn spawn_judge(&self) -> Result<Worker> {
        let log = self.out.join("logs").join(format!("judge-{}.log", self.started.elapsed().as_millis()));
        Worker::spawn(&self.args.python, &["-u", &self.py("ki_judge.py")], &self.env, &log, "judge")
    }

    fn spawn_solution_worker(&self, label: &str) -> Result<Worker> {
        let log = self.out.join("logs").join(format!(
            "{}.{}.log",
            records::manifest_slug(label),
            self.started.elapsed().as_millis()
        ));
        let script = self.py("ki_solution.py");
        let mut env = self.env.clone();
        env.push(("KI_MEMORY_FRACTION".into(), "0.85".into()));
        Worker::spawn(&self.args.python, &["-u", &script], &env, &log, label)
    }

    #[allow(clippy::too_many_arguments)]
    fn run_definition(
        &mut self,
        definition: &Definition,
        text: &str,
        plans: &[WorkloadPlans],
        implementations: &[Implementation],
        board: &BuildBoard,
        machine: &Arc<Mutex<VerifyMachine>>,
        cross_check: &CrossCheck,
    ) -> Result<()> {
        if self.out_of_time() {
            for i in implementations {
                self.not_run(i, definition, plans, "the session's deadline passed before this definition");
            }
            return Ok(());
        }
        eprintln!(
            "== [{:.0}s] {} ({} workloads, {} implementations)",
            self.started.elapsed().as_secs_f64(),
            definition.name,
            plans.len(),
            implementations.len()
        );
        // A judge started ahead (during the previous definition) when there is one.
        let mut judge = match self.spare_judge.take() {
            Some(j) => j,
            None => self.spawn_judge()?,
        };
        self.spare_judge = self.spawn_judge().ok();
        let hello = expect_ok(judge.request(&json!({"op": "hello"}), Duration::from_secs(120)), "judge hello")?;
        {
            let mut m = machine.lock().unwrap();
            if m.device.is_empty() {
                let e = &hello["environment"];
                m.device = e["device"].as_str().unwrap_or("").to_string();
                m.capability = e["capability"].as_str().unwrap_or("").to_string();
                m.sm_count = e["sm_count"].as_u64().unwrap_or(0);
                m.memory_bytes = e["memory_bytes"].as_u64().unwrap_or(0);
                m.l2_bytes = e["l2_bytes"].as_u64().unwrap_or(0);
                m.cuda = e["torch_cuda"].as_str().map(str::to_string);
                m.torch = e["torch"].as_str().map(str::to_string);
                m.flashinfer = e["flashinfer"].as_str().map(str::to_string);
            }
        }
        expect_ok(
            judge.request(&json!({"op": "definition", "json": text}), Duration::from_secs(60)),
            "judge definition",
        )?;
        // References for every (workload, trial), computed once and shared by every implementation.
        let dump = definition.op_type == "gqa_paged" && !definition.inputs.contains_key("qo_indptr");
        let started = Instant::now();
        let mut reference_failed: BTreeMap<String, String> = BTreeMap::new();
        for w in plans.iter().filter(|w| implementations.iter().any(|i| i.runs_on(w))) {
            for t in &w.trials {
                let trial = t.json["trial"].as_u64().unwrap_or(0) as usize;
                let path = self.scratch.join(format!("xcheck-{}-{trial}.safetensors", w.case.uuid));
                let mut job = json!({"op": "reference", "plan": t.json});
                // The CPU reference recomputes the first trial of every workload (each run's first).
                let dump = dump && trial == 0;
                if dump {
                    job["dump"] = json!(path.display().to_string());
                }
                match judge.request(&job, Duration::from_secs(self.args.timeout.max(120))) {
                    Reply::Line(v) if v["ok"] == true => {
                        if dump {
                            cross_check.submit(definition, &w.case.uuid, trial, path);
                        }
                    }
                    Reply::Line(v) => {
                        reference_failed.insert(w.case.uuid.clone(), v["error"].as_str().unwrap_or("").to_string());
                    }
                    other => bail!("the judge failed on workload {}: {other:?}", w.case.uuid),
                }
            }
        }
        eprintln!("references of {}: {:.1} s", definition.name, started.elapsed().as_secs_f64());
        let mut next: Option<Worker> = None;
        for (position, implementation) in implementations.iter().enumerate() {
            let worker = match next.take() {
                Some(w) => Some(w),
                None => self.spawn_solution_worker(&implementation.label()).ok(),
            };
            // The next implementation's worker starts (imports, CUDA, warm-up) while this one runs.
            if let Some(following) = implementations.get(position + 1) {
                next = self.spawn_solution_worker(&following.label()).ok();
            }
            self.run_implementation(definition, plans, implementation, worker, &mut judge, board, &reference_failed);
        }
        drop(next);
        judge.kill();
        Ok(())
    }

    fn not_run(
        &mut self,
        implementation: &Implementation,
        definition: &Definition,
        plans: &[WorkloadPlans],
        reason: &str,
    ) {
        for w in plans.iter().filter(|w| implementation.runs_on(w)) {
            let verdict = Verdict::NotRun { reason: reason.to_string() };
            self.record(implementation, definition, w, verdict, None, None, String::new());
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn run_implementation(
        &mut self,
        definition: &Definition,
        plans: &[WorkloadPlans],
        implementation: &Implementation,
        worker: Option<Worker>,
        judge: &mut Worker,
        board: &BuildBoard,
        reference_failed: &BTreeMap<String, String>,
    ) {
        let all_plans = plans;
        let plans: Vec<&WorkloadPlans> = all_plans.iter().filter(|w| implementation.runs_on(w)).collect();
        let label = implementation.label();
        let needs_build = match &implementation.entry {
            Entry::Baseline => true,
            Entry::Solution { solution, .. } => solution.language.is_compiled(),
        };
        let mut so_path = None;
        if needs_build {
            match self.wait_built(board, &implementation.key) {
                None => {
                    return self.not_run(
                        implementation,
                        definition,
                        all_plans,
                        "the session's deadline passed during its build",
                    );
                }
                Some(Built::Failed { verdict, log }) => {
                    for &w in &plans {
                        self.record(implementation, definition, w, verdict.clone(), None, None, log.clone());
                    }
                    return;
                }
                Some(Built::Ready { so_path: p }) => so_path = p,
            }
        }
        let definition_json: Value = serde_json::to_value(DefinitionView::of(definition)).unwrap_or(Value::Null);
        let load_job = match &implementation.entry {
            Entry::Baseline => json!({"op": "load", "kind": "baseline", "definition": definition_json}),
            Entry::Solution { solution, .. } => {
                let dir = self.scratch.join("sources").join(solution.source_digest.trim_start_matches("sha256:"));
                if let Err(e) = solution.write_sources(&dir) {
                    let verdict = Verdict::RuntimeError { reason: format!("writing its sources: {e}") };
                    for &w in &plans {
                        self.record(implementation, definition, w, verdict.clone(), None, None, String::new());
                    }
                    return;
                }
                json!({
                    "op": "load", "kind": if solution.language.is_compiled() { "torch_ext" } else { "python" },
                    "dir": dir.display().to_string(), "entry_file": solution.entry_file, "function": solution.entry_function,
                    "so_path": so_path, "module_name": build_module_name(&solution.source_digest),
                    "dps": solution.destination_passing_style, "definition": definition_json,
                })
            }
        };
        let mut worker = worker;
        let mut crashes = 0;
        let mut timeouts = 0;
        let mut dps_note: Option<String> = None;
        let mut label_override: Option<String> = None;
        let mut stop: Option<String> = None;
        for &w in &plans {
            if let Some(reason) = &stop {
                self.record(
                    implementation,
                    definition,
                    w,
                    Verdict::NotRun { reason: reason.clone() },
                    None,
                    None,
                    String::new(),
                );
                continue;
            }
            if self.out_of_time() {
                stop = Some("the session's deadline passed".into());
                self.record(
                    implementation,
                    definition,
                    w,
                    Verdict::NotRun { reason: "the session's deadline passed".into() },
                    None,
                    None,
                    String::new(),
                );
                continue;
            }
            if let Some(reason) = reference_failed.get(&w.case.uuid) {
                let v =
                    Verdict::NotRun { reason: format!("the definition's reference failed on this workload: {reason}") };
                self.record(implementation, definition, w, v, None, None, String::new());
                continue;
            }
            // A worker for this workload: the one in hand, else a fresh one (after a crash).
            if worker.is_none() {
                if crashes >= 3 {
                    stop = Some("three worker processes of this solution ended abnormally".into());
                    self.record(
                        implementation,
                        definition,
                        w,
                        Verdict::NotRun { reason: stop.clone().unwrap() },
                        None,
                        None,
                        String::new(),
                    );
                    continue;
                }
                worker = self.spawn_solution_worker(&label).ok();
            }
            let Some(mut current) = worker.take() else {
                stop = Some("its worker process could not be started".into());
                continue;
            };
            // Load on first use of this worker.
            if current.label != "loaded" {
                match current.request(&load_job, Duration::from_secs(600)) {
                    Reply::Line(v) if v["ok"] == true => {
                        current.label = "loaded".into();
                        dps_note = v["dps_reason"].as_str().map(str::to_string).or(dps_note);
                        label_override = v["label"].as_str().map(str::to_string).or(label_override);
                        if let Some(d) = v["description"].as_str() {
                            self.descriptions.insert(
                                implementation.key.clone(),
                                (label_override.clone().unwrap_or_default(), d.to_string()),
                            );
                        }
                    }
                    Reply::Line(v) => {
                        let verdict = Verdict::from_worker(
                            v["verdict"].as_str().unwrap_or("runtime_error"),
                            v["reason"].as_str().unwrap_or(""),
                            v["check"].as_str(),
                        );
                        let tail = log_tail(&current.log, 2000);
                        for &w2 in &plans {
                            self.record(
                                implementation,
                                definition,
                                w2,
                                verdict.clone(),
                                None,
                                dps_note.clone(),
                                tail.clone(),
                            );
                        }
                        return;
                    }
                    Reply::Timeout(d) => {
                        current.kill();
                        let verdict = Verdict::Timeout { seconds: d.as_secs(), reason: "loading the solution".into() };
                        for &w2 in &plans {
                            self.record(implementation, definition, w2, verdict.clone(), None, None, String::new());
                        }
                        return;
                    }
                    Reply::Ended(why) => {
                        let verdict = Verdict::RuntimeError {
                            reason: format!("the worker ended while loading the solution: {why}"),
                        };
                        for &w2 in &plans {
                            self.record(implementation, definition, w2, verdict.clone(), None, None, String::new());
                        }
                        return;
                    }
                }
            }
            let started = Instant::now();
            let outcome = self.run_workload(&mut current, judge, w);
            let seconds = started.elapsed().as_secs_f64();
            let (verdict, done, keep) = match outcome {
                WorkloadOutcome::Final(v) => {
                    let fatal = v["fatal"] == true;
                    (v, true, !fatal)
                }
                WorkloadOutcome::Timeout(d) => {
                    current.kill();
                    (json!({"verdict": "timeout", "seconds": d.as_secs()}), true, false)
                }
                WorkloadOutcome::Ended(why) => (
                    json!({"verdict": "runtime_error", "reason": format!("the worker process ended: {why}")}),
                    true,
                    false,
                ),
            };
            let _ = done;
            let status = verdict["verdict"].as_str().unwrap_or("runtime_error").to_string();
            let mut v = match status.as_str() {
                "timeout" => Verdict::Timeout {
                    seconds: verdict["seconds"].as_u64().unwrap_or(self.args.timeout),
                    reason: "the workload request (build excluded) did not finish".into(),
                },
                other => {
                    Verdict::from_worker(other, verdict["reason"].as_str().unwrap_or(""), verdict["check"].as_str())
                }
            };
            if let Verdict::Incorrect { output, reason, .. } = &mut v {
                *output = verdict["output"].as_str().map(str::to_string);
                let _ = reason;
            }
            let log = if v == Verdict::Passed { String::new() } else { log_tail(&current.log, 2000) };
            let hack = matches!(v, Verdict::SuspectedRewardHack { .. });
            if matches!(v, Verdict::Timeout { .. }) {
                timeouts += 1;
            }
            if !keep || matches!(v, Verdict::RuntimeError { .. }) && verdict["fatal"] == true {
                crashes += 1;
                judge.request(&json!({"op": "close", "exchange": current.pid().to_string()}), Duration::from_secs(30));
                current.kill();
            } else {
                worker = Some(current);
            }
            let mut result = self.record(implementation, definition, w, v, Some(&verdict), dps_note.clone(), log);
            result.seconds = seconds;
            if let Some(l) = &label_override {
                result.implementation = l.clone();
            }
            if let Some(last) = self.results.last_mut() {
                last.seconds = seconds;
            }
            if hack {
                stop = Some(format!("refused as dishonest on workload {}", w.case.uuid));
            } else if timeouts >= 2 {
                stop = Some(format!("timed out on two workloads (the last {})", w.case.uuid));
            }
        }
        if let Some(mut w) = worker {
            judge.request(&json!({"op": "close", "exchange": w.pid().to_string()}), Duration::from_secs(30));
            w.kill();
        }
    }

    /// One workload request: relays the worker's checks to the judge until the final answer.
    fn run_workload(&mut self, worker: &mut Worker, judge: &mut Worker, plans: &WorkloadPlans) -> WorkloadOutcome {
        let job = json!({"op": "workload", "trials": plans.trials.iter().map(|t| t.json.clone()).collect::<Vec<_>>(), "protocol": timing_protocol()});
        let deadline = Instant::now() + Duration::from_secs(self.args.timeout);
        if let Err(e) = worker.send(&job) {
            return WorkloadOutcome::Ended(format!("{e:#}"));
        }
        let exchange = worker.pid().to_string();
        let mut worst: BTreeMap<String, OutputComparison> = BTreeMap::new();
        // The seeds of the calls this runner itself asked the judge about (the ledger's other side).
        let mut relayed: Vec<u64> = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match worker.receive(left) {
                Reply::Timeout(_) => return WorkloadOutcome::Timeout(Duration::from_secs(self.args.timeout)),
                Reply::Ended(why) => return WorkloadOutcome::Ended(why),
                Reply::Line(line) => {
                    if line.get("final").is_some() {
                        let mut line = line;
                        line["worst"] =
                            serde_json::to_value(worst.into_values().collect::<Vec<_>>()).unwrap_or(Value::Null);
                        line["relayed_seeds"] = json!(relayed);
                        return WorkloadOutcome::Final(line);
                    }
                    let Some(check) = line.get("check") else { continue };
                    relayed.extend(check["calls"].as_array().into_iter().flatten().filter_map(|c| c["seed"].as_u64()));
                    let answer = self.judge_check(judge, &exchange, check, &mut worst);
                    if worker.send(&answer).is_err() {
                        return WorkloadOutcome::Ended("the worker closed its input".into());
                    }
                }
            }
        }
    }

    fn judge_check(
        &self,
        judge: &mut Worker,
        exchange: &str,
        check: &Value,
        worst: &mut BTreeMap<String, OutputComparison>,
    ) -> Value {
        if let Some(announce) = check.get("exchange").filter(|a| a.is_object()) {
            let open =
                json!({"op": "open", "exchange": exchange, "handle": announce["handle"], "bytes": announce["bytes"]});
            if let Err(e) = expect_ok(judge.request(&open, Duration::from_secs(60)), "judge open") {
                return json!({"pass": false, "harness_error": true, "reason": format!("the judge could not map the outputs: {e:#}")});
            }
        }
        let compare = json!({"op": "compare", "exchange": exchange, "workload": check["workload"], "trial": check["trial"], "calls": check["calls"], "atol": 1e-2, "rtol": 1e-2});
        let reply = match expect_ok(judge.request(&compare, Duration::from_secs(120)), "judge compare") {
            Ok(r) => r,
            Err(e) => {
                return json!({"pass": false, "harness_error": true, "reason": format!("the judge failed: {e:#}")});
            }
        };
        // A probe's failure is the worker's to interpret (a replay that shows the work escaped the
        // capture): its figures join the published worst case only when it passes.
        let probe = check["probe"] == true;
        let mut seen = Vec::new();
        let mut failure = None;
        'calls: for call in reply["calls"].as_array().into_iter().flatten() {
            for out in call["outputs"].as_array().into_iter().flatten() {
                let name = out["name"].as_str().unwrap_or("?").to_string();
                if let Some(mismatch) = out["mismatch"].as_str() {
                    let status = if out["kind"] == "dtype" { "incorrect_dtype" } else { "incorrect_shape" };
                    return json!({"pass": false, "verdict": status, "output": name, "reason": format!("output {name}: {mismatch} ({})", call["label"].as_str().unwrap_or(""))});
                }
                let cmp = OutputComparison {
                    name: name.clone(),
                    elements: out["elements"].as_u64().unwrap_or(0) as usize,
                    max_abs_error: out["maxAbsError"].as_f64().unwrap_or(f64::NAN),
                    max_rel_error: out["maxRelError"].as_f64().unwrap_or(f64::NAN),
                    relative_l2_error: out["relativeL2Error"].as_f64().unwrap_or(f64::INFINITY),
                    matched_ratio: out["matchedRatio"].as_f64().unwrap_or(0.0),
                    flashinfer_bench_pass: out["flashinferBenchPass"] == true,
                    sol_execbench_matched_ratio: out["solExecbenchMatchedRatio"].as_f64().unwrap_or(0.0),
                    sol_execbench_pass: out["solExecbenchPass"] == true,
                    non_finite_mismatches: out["nonFiniteMismatches"].as_u64().unwrap_or(0) as usize,
                };
                if !cmp.flashinfer_bench_pass {
                    failure = Some(
                        json!({"pass": false, "verdict": "incorrect_numerical", "output": name, "reason": format!(
                        "output {name} ({}, trial {}): max abs error {:.3e}, max rel error {:.3e}, matched {:.4} of {} elements, {} non-finite",
                        call["label"].as_str().unwrap_or(""), check["trial"], cmp.max_abs_error, cmp.max_rel_error, cmp.matched_ratio, cmp.elements, cmp.non_finite_mismatches)}),
                    );
                    seen.push(cmp);
                    break 'calls;
                }
                seen.push(cmp);
            }
        }
        if failure.is_none() || !probe {
            for cmp in seen {
                fold_worst(worst, cmp);
            }
        }
        if let Some(failure) = failure {
            return failure;
        }
        json!({"pass": true})
    }

    /// A passed answer held to the harness's own rules: the seed ledger (every timed call on values
    /// of its own, the checks among them) and the consistency of its figures. Ok(Some(why)) when
    /// the CUPTI figure is to be published in place of the in-graph one.
    fn harness_rules(
        &self,
        answer: &Value,
        plans: &WorkloadPlans,
        trials: &[Value],
        primary: &[f64],
        in_graph_trials: usize,
    ) -> Result<Option<String>, Verdict> {
        use crate::consistency::{self, Figures, Finding, Ledger, Method};
        let seeds = |v: &Value| -> Vec<u64> { v.as_array().into_iter().flatten().filter_map(Value::as_u64).collect() };
        let ledger = Ledger { timed: seeds(&answer["seeds"]["timed"]), checked: seeds(&answer["seeds"]["checked"]) };
        let relayed = seeds(&answer["relayed_seeds"]);
        let plan_seeds: Vec<u64> = plans.trials.iter().filter_map(|t| t.json["seed"].as_u64()).collect();
        if let Err(breach) = consistency::check_ledger(&ledger, &relayed, &plan_seeds, trials.len()) {
            return Err(Verdict::HarnessError {
                reason: format!("the input-value rule cannot be vouched for: {breach}"),
            });
        }
        let cupti = samples(trials, "cupti_ns");
        let figures = Figures {
            method: if in_graph_trials == trials.len() { Method::InGraph } else { Method::Cupti },
            primary: median(primary),
            eager: median(&samples(trials, "eager_ns")),
            cupti: (!cupti.is_empty()).then(|| median(&cupti)),
            activities: median(&samples(trials, "kernels_per_call")),
            launch_overhead: answer["launch_overhead_ns"].as_f64().unwrap_or(0.0),
            // Without probes nothing is taken off for a synchronization (the stricter floor).
            sync_overhead: Some(samples(trials, "sync_probe_ns")).filter(|p| !p.is_empty()).map_or(0.0, |p| median(&p)),
        };
        match consistency::judge_figures(&figures) {
            Finding::Consistent => Ok(None),
            Finding::PublishCupti(why) => Ok(Some(why)),
            Finding::Unmeasurable(reason) => Err(Verdict::Unmeasurable { reason }),
            Finding::GraphDivergence(reason) => {
                Err(Verdict::SuspectedRewardHack { check: "graph_divergence".into(), reason })
            }
        }
    }

    /// Folds one workload's answer into a RunResult, appends it to runs.jsonl and keeps it.
    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        implementation: &Implementation,
        definition: &Definition,
        plans: &WorkloadPlans,
        verdict: Verdict,
        answer: Option<&Value>,
        dps: Option<String>,
        log: String,
    ) -> RunResult {
        let trials: Vec<Value> = answer.and_then(|a| a["trials"].as_array().cloned()).unwrap_or_default();
        // A figure every trial has (none when a trial lacks it).
        let collect = |key: &str| -> Option<Vec<f64>> {
            (!trials.is_empty() && trials.iter().all(|t| t[key].is_array())).then(|| samples(&trials, key))
        };
        // Each trial's primary figure: in-graph where its calls were captured, else CUPTI.
        let in_graph_trials = trials.iter().filter(|t| t["in_graph_ns"].is_array()).count();
        let mut method = match in_graph_trials {
            _ if trials.is_empty() => None,
            0 => Some("latency_cupti".to_string()),
            n if n == trials.len() => Some("latency_in_graph".to_string()),
            _ => Some("latency_in_graph+latency_cupti".to_string()),
        };
        let mut primary: Vec<f64> = trials
            .iter()
            .flat_map(|t| {
                samples(std::slice::from_ref(t), if t["in_graph_ns"].is_array() { "in_graph_ns" } else { "cupti_ns" })
            })
            .collect();
        let mut method_note = None;
        let mut verdict = verdict;
        if verdict == Verdict::Passed
            && let Some(answer) = answer
        {
            match self.harness_rules(answer, plans, &trials, &primary, in_graph_trials) {
                Ok(None) => {}
                Ok(Some(why)) => {
                    primary = samples(&trials, "cupti_ns");
                    method = Some("latency_cupti".to_string());
                    method_note = Some(why);
                }
                Err(refusal) => verdict = refusal,
            }
        }
        let latency = (!primary.is_empty()).then(|| summarize(&primary));
        let eager = collect("eager_ns").filter(|s| !s.is_empty()).map(|s| summarize(&s));
        let graph_replay = collect("graph_replay_ns").filter(|s| !s.is_empty()).map(|s| summarize(&s));
        let bound = plans.trials.first().map(|t| t.bound).unwrap_or_default();
        let bound_ns = bound.time_ns(&Ceilings::H200_DATASHEET);
        if verdict == Verdict::Passed
            && let Some(l) = &latency
            && crate::consistency::below_speed_of_light(l.median, bound_ns)
        {
            verdict = Verdict::SuspectedRewardHack {
                check: "below_speed_of_light".into(),
                reason: format!(
                    "median {:.0} ns is below {:.0}% of the speed-of-light bound {:.0} ns ({:.3e} bytes, {:.3e} FLOP at the H200's datasheet peaks)",
                    l.median,
                    crate::consistency::SPEED_OF_LIGHT_MARGIN * 100.0,
                    bound_ns,
                    bound.bytes,
                    bound.flops
                ),
            };
        }
        if verdict == Verdict::Passed && latency.is_none() {
            verdict = Verdict::RuntimeError { reason: "passed every check but produced no timing samples".into() };
        }
        let worst: Vec<OutputComparison> =
            answer.and_then(|a| serde_json::from_value(a["worst"].clone()).ok()).unwrap_or_default();
        let checks = trials.iter().map(|t| t["checks"].as_u64().unwrap_or(0) as usize).sum();
        // Filled in when the records are written (the CPU reference runs beside the GPU work).
        let agreement = None;
        let result = RunResult {
            implementation: implementation.label(),
            implementation_key: implementation.key.clone(),
            definition: definition.name.clone(),
            workload: plans.case.uuid.clone(),
            axes: plans.case.axes.clone(),
            speed_of_light_percent: latency.as_ref().filter(|_| bound_ns > 0.0).map(|l| 100.0 * bound_ns / l.median),
            method: method.filter(|_| latency.is_some()),
            method_note,
            latency,
            eager,
            graph_replay,
            bound_ns,
            worst,
            checks,
            dps,
            reference_agreement: agreement,
            seconds: 0.0,
            samples: json!({"trials": trials}),
            primary_samples: primary,
            log: (!log.is_empty()).then_some(log),
            verdict,
        };
        let line = serde_json::to_string(&result).unwrap_or_default();
        let _ = writeln!(self.runs_file, "{line}");
        eprintln!(
            "  [{:.0}s] {} {} {}{}",
            self.started.elapsed().as_secs_f64(),
            result.implementation,
            result.workload.split('-').next().unwrap_or(""),
            result.verdict.label(),
            result.latency.as_ref().map(|l| format!(" {:.2} us", l.median / 1e3)).unwrap_or_else(|| format!(
                " {}",
                sanitize(&result.verdict.reason()).chars().take(160).collect::<String>()
            ))
        );
        self.results.push(result.clone());
        result
    }
}

enum WorkloadOutcome {
    Final(Value),
    Timeout(Duration),
    Ended(String),
}

fn expect_ok(reply: Reply, what: &str) -> Result<Value> {
    match reply {
        Reply::Line(v) if v["ok"] == true => Ok(v),
        Reply::Line(v) => bail!("{what}: {}", v["error"].as_str().or(v["reason"].as_str()).unwrap_or("failed")),
        Reply::Timeout(d) => bail!("{what}: no answer in {} s", d.as_secs()),
        Reply::Ended(why) => bail!("{what}: the process ended: {why}"),
    }
}

/// The part of a definition the workers need.
#[derive(serde::Serialize)]
struct DefinitionView<'a> {
    name: &'a str,
    op_type: &'a str,
    axes: BTreeMap<&'a str, Value>,
    inputs: &'a Map<String, Value>,
    outputs: &'a Map<String, Value>,
    reference: &'a str,
}

impl<'a> DefinitionView<'a> {
    fn of(d: &'a Definition) -> DefinitionView<'a> {
        DefinitionView {
            name: &d.name,
            op_type: &d.op_type,
            axes: d.axes.iter().map(|(k, a)| (k.as_str(), json!({"type": a.kind, "value": a.value}))).collect(),
            inputs: &d.inputs,
            outputs: &d.outputs,
            reference: &d.reference,
        }
    }
}

fn build_module_name(digest: &str) -> String {
    format!("ki_solution_{}", digest.trim_start_matches("sha256:").chars().take(16).collect::<String>())
}

#[allow(clippy::too_many_arguments)]
fn build_one(
    python: &str,
    env: &[(String, String)],
    script: &str,
    solution: &Solution,
    dir: &Path,
    pch_dir: &Path,
    log: &Path,
    timeout: Duration,
) -> Built {
    let source_dir = dir.join("src");
    if let Err(e) = solution.write_sources(&source_dir) {
        return Built::Failed {
            verdict: Verdict::RuntimeError { reason: format!("writing the sources: {e}") },
            log: String::new(),
        };
    }
    let name = build_module_name(&solution.source_digest);
    let build_dir = dir.join("build");
    let args = [
        script,
        &source_dir.display().to_string(),
        &build_dir.display().to_string(),
        &name,
        &pch_dir.display().to_string(),
    ];
    let args: Vec<&str> = args.iter().map(|s| s.as_ref()).collect();
    let mut worker = match Worker::spawn(python, &args, env, log, "build") {
        Ok(w) => w,
        Err(e) => {
            return Built::Failed { verdict: Verdict::RuntimeError { reason: format!("{e:#}") }, log: String::new() };
        }
    };
    crate::worker::register(worker.pid());
    let reply = worker.receive(timeout);
    crate::worker::unregister(worker.pid());
    match reply {
        Reply::Line(v) if v["ok"] == true => Built::Ready { so_path: v["so_path"].as_str().map(str::to_string) },
        Reply::Line(v) => {
            let text = v["log"].as_str().unwrap_or("").to_string();
            let _ = std::fs::write(log.with_extension("compiler.log"), &text);
            Built::Failed {
                verdict: Verdict::CompileError { first_lines: first_error_lines(&text, 6) },
                log: text.chars().rev().take(4000).collect::<String>().chars().rev().collect(),
            }
        }
        Reply::Timeout(d) => {
            worker.kill();
            Built::Failed {
                verdict: Verdict::Timeout { seconds: d.as_secs(), reason: "the build".into() },
                log: log_tail(log, 2000),
            }
        }
        Reply::Ended(why) => {
            Built::Failed { verdict: Verdict::CompileError { first_lines: first_error_lines(&why, 6) }, log: why }
        }
    }
}

/// A baseline's warm-up: FlashInfer compiles its kernels for this definition (JIT) on a small plan.
fn warm_baseline(
    python: &str,
    env: &[(String, String)],
    script: &str,
    definition: &Value,
    plan: Option<Value>,
    log: &Path,
    timeout: Duration,
) -> Built {
    let Some(plan) = plan else { return Built::Ready { so_path: None } };
    let mut worker = match Worker::spawn(python, &["-u", script], env, log, "warm") {
        Ok(w) => w,
        Err(e) => {
            return Built::Failed { verdict: Verdict::RuntimeError { reason: format!("{e:#}") }, log: String::new() };
        }
    };
    crate::worker::register(worker.pid());
    let load = json!({"op": "load", "kind": "baseline", "definition": definition});
    match worker.request(&load, timeout) {
        Reply::Line(v) if v["ok"] == true => {}
        other => {
            return Built::Failed {
                verdict: Verdict::RuntimeError { reason: format!("loading the baseline: {other:?}") },
                log: log_tail(log, 2000),
            };
        }
    }
    match worker.request(&json!({"op": "warm", "plan": plan}), timeout) {
        Reply::Line(v) if v["ok"] == true => Built::Ready { so_path: None },
        Reply::Line(v) => Built::Failed {
            verdict: Verdict::RuntimeError {
                reason: format!("warming the baseline: {}", v["reason"].as_str().unwrap_or("")),
            },
            log: log_tail(log, 2000),
        },
        other => Built::Failed {
            verdict: Verdict::RuntimeError { reason: format!("warming the baseline: {other:?}") },
            log: log_tail(log, 2000),
        },
    }
}

/// Languages, for records.
pub fn language_name(language: Language) -> &'static str {
    language.as_str()
}

fn family_project(label: &str) -> (&'static str, &'static str, &'static str) {
    if label.starts_with("flashinfer") {
        ("flashinfer-library", "FlashInfer", "https://github.com/flashinfer-ai/flashinfer")
    } else if label.starts_with("torch") {
        ("pytorch", "PyTorch", "https://github.com/pytorch/pytorch")
    } else {
        ("flashinfer-bench", "FlashInfer-Bench", "https://github.com/flashinfer-ai/flashinfer-bench")
    }
}

/// The FlashInfer-Bench commit the definitions (and so the reference baselines) come from.
const DEFINITIONS_COMMIT: &str = "ecafa9c2c62007667838226068b21ca9ff1c9183";

impl Session {
    #[allow(clippy::too_many_arguments)]
    fn write_records(
        &mut self,
        machine: &VerifyMachine,
        definitions: &BTreeMap<String, (Definition, String)>,
        implementations: &[Implementation],
        plans: &BTreeMap<String, Vec<WorkloadPlans>>,
        refused: &[IntakeError],
    ) -> Result<()> {
        let out = self.out.clone();
        let mut rows = VerifyRows::default();
        let source_id = rows.source();
        let environment = records::verify_environment_manifest(machine);
        let environment_digest = records::manifest_digest(&environment)?;
        records::write_manifest(&out.join("manifests/execution-environment.json"), &environment)?;
        let names: Vec<String> = definitions.keys().cloned().collect();
        let catalog = match &self.args.catalog {
            Some(c) => records::catalog_operations(c, &names)?,
            None => BTreeMap::new(),
        };
        let samples_per_trial = 10;
        let mut protocols: BTreeMap<String, (Value, String)> = BTreeMap::new();
        let mut operations: BTreeMap<String, (String, String, Value)> = BTreeMap::new();
        for (name, (definition, _)) in definitions {
            let rule = families::rule(definition).to_string();
            if !protocols.contains_key(&rule) {
                let manifest = records::protocol_manifest_v2(&rule, self.args.trials, samples_per_trial);
                let digest = records::manifest_digest(&manifest)?;
                records::write_manifest(&out.join(format!("manifests/protocol-{rule}.json")), &manifest)?;
                protocols.insert(rule.clone(), (manifest, digest));
            }
            let catalog_row = catalog.get(name).map(|(op, _)| op);
            let manifest = match catalog_row {
                Some(row) => row["manifest"].clone(),
                None => records::definition_operation_manifest(definition)?,
            };
            let digest = records::manifest_digest(&manifest)?;
            let id = rows.operation(catalog_row, definition, &manifest)?;
            records::write_manifest(
                &out.join(format!("manifests/operation-{}.json", records::manifest_slug(name))),
                &manifest,
            )?;
            operations.insert(name.clone(), (id, digest, manifest));
        }
        // Implementations.
        let mut implementation_rows: BTreeMap<String, (String, String, String)> = BTreeMap::new();
        for implementation in implementations {
            let (definition, _) = &definitions[&implementation.definition];
            let (operation_id, operation_digest, _) = &operations[&implementation.definition];
            let dtypes: Vec<String> = {
                let mut d: Vec<String> = definition
                    .input_specs()
                    .unwrap_or_default()
                    .iter()
                    .chain(definition.output_specs().unwrap_or_default().iter())
                    .map(|s| match s.dtype {
                        crate::tensor::DType::BF16 => "bf16".to_string(),
                        crate::tensor::DType::F16 => "fp16".to_string(),
                        crate::tensor::DType::F32 => "fp32".to_string(),
                        crate::tensor::DType::F8E4M3 => "fp8_e4m3".to_string(),
                        other => other.definition_name().to_string(),
                    })
                    .collect();
                d.sort();
                d.dedup();
                d
            };
            let info = match &implementation.entry {
                Entry::Solution { solution, files } => {
                    let artifact = ki_model::jcs::canonicalize(&solution.artifact()).map_err(|e| anyhow!("{e}"))?;
                    let artifact_digest = ki_model::identity::sha256_digest(artifact.as_bytes());
                    let uri = format!("artifacts/{}.json", &artifact_digest[7..]);
                    std::fs::write(out.join(&uri), &artifact)?;
                    rows.artifact(&artifact_digest, artifact.len(), &uri);
                    let mut description = solution.description.clone().unwrap_or_default();
                    description.push_str(&format!(
                        " · FlashInfer-Bench Solution `{}` by {} ({} schema, {}, entry {}::{}); verified from {}",
                        solution.name,
                        solution.author,
                        match solution.schema {
                            crate::solution::Schema::Current => "current",
                            crate::solution::Schema::Legacy => "legacy",
                        },
                        solution.language.as_str(),
                        solution.entry_file,
                        solution.entry_function,
                        files
                            .iter()
                            .map(|f| Path::new(f)
                                .file_name()
                                .map(|n| n.to_string_lossy().into_owned())
                                .unwrap_or_default())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                    VerifyImplementation {
                        label: implementation.label(),
                        title: solution.name.clone(),
                        description,
                        language: solution.language.as_str().to_string(),
                        project_slug: "flashinfer-bench-community".into(),
                        project_name: "FlashInfer-Bench community solutions".into(),
                        repository: "https://github.com/flashinfer-ai/flashinfer-bench".into(),
                        version: format!("src.{}", &solution.source_digest[7..19]),
                        callable_path: Some(solution.entry_file.clone()),
                        symbol: solution.entry_function.clone(),
                        authors: vec![solution.author.clone()],
                        source: Some((artifact_digest, uri, artifact.len())),
                        install: None,
                    }
                }
                Entry::Baseline => {
                    let (label, description) = self
                        .descriptions
                        .get(&implementation.key)
                        .cloned()
                        .unwrap_or_else(|| (format!("baseline-{}", definition.op_type), "baseline".into()));
                    let (project_slug, project_name, repository) = family_project(&label);
                    let version = if label.starts_with("flashinfer") {
                        machine.flashinfer.clone().unwrap_or_else(|| "0.5.3".into())
                    } else if label.starts_with("torch") {
                        machine.torch.clone().unwrap_or_default()
                    } else {
                        DEFINITIONS_COMMIT[..12].to_string()
                    };
                    VerifyImplementation {
                        label: label.clone(),
                        title: format!("{label} · {}", definition.name),
                        description: format!("Baseline of {}: {description}", definition.name),
                        language: "python".into(),
                        project_slug: project_slug.into(),
                        project_name: project_name.into(),
                        repository: repository.into(),
                        version: version.clone(),
                        callable_path: None,
                        symbol: description.chars().take(200).collect(),
                        authors: Vec::new(),
                        source: None,
                        install: label.starts_with("flashinfer").then(|| ("flashinfer-python".to_string(), version)),
                    }
                }
            };
            let manifest = records::verify_implementation_manifest(&info, operation_digest, &dtypes);
            let project_id = rows.project(&info.project_slug, &info.project_name, &info.repository);
            let (id, digest) = rows.implementation(&info, &manifest, &project_id, operation_id)?;
            records::write_manifest(
                &out.join(format!(
                    "manifests/implementation-{}.json",
                    records::manifest_slug(&format!("{}-{}", info.label, &digest[7..15]))
                )),
                &manifest,
            )?;
            implementation_rows.insert(implementation.key.clone(), (id, digest, info.label.clone()));
        }
        // Runs.
        let mut results = std::mem::take(&mut self.results);
        let agreement = self.agreement.lock().unwrap().clone();
        for r in results.iter_mut() {
            let (definition, _) = &definitions[&r.definition];
            if definition.op_type == "gqa_paged"
                && !definition.inputs.contains_key("qo_indptr")
                && r.verdict.is_record()
            {
                r.reference_agreement = Some(match agreement.get(&(r.workload.clone(), 0)) {
                    Some(v) if v == "agree" => "agrees with the GPU reference (first trial)".into(),
                    Some(v) => v.clone(),
                    None => "not checked (the session ended first)".into(),
                });
            }
        }
        for result in results.iter().filter(|r| r.verdict.is_record()) {
            let (definition, _) = &definitions[&result.definition];
            let (operation_id, operation_digest, _) = &operations[&result.definition];
            let plan = plans[&result.definition].iter().find(|w| w.case.uuid == result.workload);
            let catalog_workload = catalog.get(&result.definition).and_then(|(_, workloads)| {
                workloads.iter().find(|w| {
                    let axes = &w["manifest"]["spec"]["axes"];
                    result.axes.iter().all(|(k, v)| axes.get(k).and_then(Value::as_i64) == Some(*v))
                })
            });
            let workload_manifest = match catalog_workload {
                Some(row) => row["manifest"].clone(),
                None => records::verify_workload_manifest(definition, operation_digest, &result.axes, &result.workload),
            };
            let workload_digest = records::manifest_digest(&workload_manifest)?;
            let workload_id = rows.workload(catalog_workload, operation_id, &workload_manifest)?;
            let short = result.workload.split('-').next().unwrap_or("case").to_string();
            let (implementation_id, implementation_digest, label) =
                implementation_rows[&result.implementation_key].clone();
            let stem = records::manifest_slug(&format!("{label}-{}-{short}", &implementation_digest[7..13]));
            let samples_bytes = serde_json::to_vec(&result.samples)?;
            let samples_uri = format!("samples/{stem}.json");
            std::fs::write(out.join(&samples_uri), &samples_bytes)?;
            let samples_ref = json!({"uri": samples_uri, "digest": records::sha256_of(&samples_bytes)});
            let log_ref = match &result.log {
                Some(text) => {
                    let uri = format!("logs/{stem}.verdict.log");
                    std::fs::write(out.join(&uri), text)?;
                    Some(json!({"uri": uri, "digest": records::sha256_of(text.as_bytes())}))
                }
                None => None,
            };
            let rule = families::rule(definition).to_string();
            let (protocol, protocol_digest) = &protocols[&rule];
            let mut labels: BTreeMap<String, String> = BTreeMap::new();
            labels.insert("verdict".into(), result.verdict.label().to_string());
            if let Verdict::SuspectedRewardHack { check, .. } = &result.verdict {
                labels.insert("refused_by".into(), check.clone());
            }
            if let Verdict::Incorrect { output: Some(o), .. } = &result.verdict {
                labels.insert("failed_output".into(), o.clone());
            }
            labels.insert("input_rule".into(), rule.clone());
            if let Some(p) = plan
                && !p.synthesized.is_empty()
            {
                labels.insert("synthesized_inputs".into(), p.synthesized.join(","));
                if !p.drawn_random.is_empty() {
                    labels.insert("drawn_like_random".into(), p.drawn_random.join(","));
                }
            }
            if let Some(m) = &result.method {
                labels.insert("timing_method".into(), m.clone());
            }
            if let Some(note) = &result.method_note {
                // Label values are at most 200 characters (benchmark-run.v1alpha1).
                labels.insert("timing_method_note".into(), note.chars().take(200).collect());
            }
            if let Some(d) = &result.dps {
                labels.insert("destination_passing".into(), d.clone());
            }
            if let Some(a) = &result.reference_agreement {
                labels.insert("cpu_reference".into(), a.clone());
            }
            labels.insert("session_seed".into(), self.seed.to_string());
            labels.insert("checked_calls".into(), result.checks.to_string());
            let mut latencies = Vec::new();
            if let (Some(method), Some(primary)) = (&result.method, &result.latency) {
                let mut sorted = result.primary_samples.clone();
                sorted.sort_by(f64::total_cmp);
                latencies.push((
                    method.split('+').next().unwrap_or("latency_in_graph").to_string(),
                    primary.clone(),
                    sorted,
                ));
            }
            if let Some(e) = &result.eager {
                latencies.push(("latency_eager".into(), e.clone(), Vec::new()));
            }
            if let Some(g) = &result.graph_replay {
                latencies.push(("latency_graph_replay".into(), g.clone(), Vec::new()));
            }
            let reason = result.verdict.reason();
            let facts = VerifyRunFacts {
                label: &label,
                definition: &result.definition,
                workload_uuid: &result.workload,
                status: result.verdict.status(),
                reason: &reason,
                labels,
                implementation_digest: &implementation_digest,
                workload_digest: &workload_digest,
                protocol_digest,
                environment_digest: &environment_digest,
                worst: &result.worst,
                latencies,
                speed_of_light_percent: result.speed_of_light_percent,
                samples: Some(samples_ref),
                log: log_ref,
            };
            let manifest = records::verify_run_manifest(&facts);
            records::write_manifest(&out.join(format!("manifests/run-{stem}.json")), &manifest)?;
            let summary = format!(
                "CUDA {} · driver {} · {}-{rule}",
                machine.cuda.as_deref().unwrap_or("?"),
                machine.driver.as_deref().unwrap_or("?"),
                records::PROTOCOL_V2_NAME
            );
            let interval = result.latency.as_ref().map(|l| (l.ci95_low, l.ci95_high));
            rows.run(
                &manifest,
                protocol,
                &environment,
                &workload_manifest,
                &implementation_id,
                &workload_id,
                &source_id,
                interval,
                &summary,
            )?;
        }
        rows.write(&out.join("catalog-rows.jsonl"))?;
        self.results = results;
        let command: Vec<String> = std::env::args().collect();
        records::write_manifest(
            &out.join("session.json"),
            &json!({
                "command": command.join(" "), "startedAt": records::utc_now(), "seconds": self.started.elapsed().as_secs_f64(),
                "seed": self.seed, "machine": machine, "trials": self.args.trials, "timingProtocol": timing_protocol(),
                "protocolDescription": records::PROTOCOL_V2_DESCRIPTION,
                "invalidWorkloads": self.invalid.lock().unwrap().iter().map(|(d, w, r)| json!({"definition": d, "workload": w, "reason": r})).collect::<Vec<_>>(),
                "refusedAtIntake": refused.iter().map(|e| json!({"file": e.file, "pointer": e.pointer, "reason": e.reason})).collect::<Vec<_>>(),
            }),
        )?;
        std::fs::write(out.join("results.md"), self.results_table(machine, refused))?;
        Ok(())
    }

    fn results_table(&self, machine: &VerifyMachine, refused: &[IntakeError]) -> String {
        let mut md = String::new();
        md.push_str(&format!(
            "# ki verify on {}\n\nDate (UTC): {}. GPU: {} ({} SMs, {} GiB). Driver {}, CUDA {}, nvcc {}, torch {}, FlashInfer {}. Seed {}. Trials {}.\n\n",
            machine.device,
            records::utc_now(),
            machine.device,
            machine.sm_count,
            machine.memory_bytes >> 30,
            machine.driver.as_deref().unwrap_or("?"),
            machine.cuda.as_deref().unwrap_or("?"),
            machine.nvcc.as_deref().unwrap_or("?"),
            machine.torch.as_deref().unwrap_or("?"),
            machine.flashinfer.as_deref().unwrap_or("?"),
            self.seed,
            self.args.trials
        ));
        md.push_str(&format!("Command: `{}`\n\n", std::env::args().collect::<Vec<_>>().join(" ")));
        if !refused.is_empty() {
            md.push_str("## Refused at intake (nothing written for them)\n\n");
            for e in refused {
                md.push_str(&format!(
                    "- `{}`: `{}`: {}\n",
                    e.file,
                    if e.pointer.is_empty() { "/" } else { &e.pointer },
                    sanitize(&e.reason)
                ));
            }
            md.push('\n');
        }
        md.push_str("## Runs\n\nLatency: median µs of the primary per-call figure, [bootstrap 95% interval]; SOL = speed-of-light bound (H200 datasheet peaks) ÷ median.\n\n");
        md.push_str("| definition | workload | implementation | verdict | latency µs | 95% interval | method | eager µs | SOL % | reason |\n|---|---|---|---|---|---|---|---|---|---|\n");
        for r in &self.results {
            let us =
                |s: &Option<SampleSummary>| s.as_ref().map_or("-".to_string(), |s| format!("{:.2}", s.median / 1e3));
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
                r.definition,
                r.workload.split('-').next().unwrap_or(""),
                r.implementation,
                r.verdict.label(),
                us(&r.latency),
                r.latency.as_ref().map_or("-".into(), |l| format!(
                    "[{:.2}, {:.2}]",
                    l.ci95_low / 1e3,
                    l.ci95_high / 1e3
                )),
                r.method.as_deref().unwrap_or("-"),
                us(&r.eager),
                r.speed_of_light_percent.map_or("-".into(), |p| format!("{p:.1}")),
                sanitize(&r.verdict.reason()).replace('|', "/").chars().take(200).collect::<String>()
            ));
        }
        md
    }
}

/// Every trial's samples of one figure (a worker's `<figure>_ns` arrays), in trial order.
fn samples(trials: &[Value], key: &str) -> Vec<f64> {
    trials.iter().flat_map(|t| t[key].as_array().into_iter().flatten().filter_map(Value::as_f64)).collect()
}

/// `n` workloads spread from the smallest to the largest (by the product of their axes).
fn spread(plans: &[WorkloadPlans], n: usize) -> Vec<usize> {
    let mut order: Vec<(f64, usize)> = plans
        .iter()
        .enumerate()
        .map(|(i, w)| (w.case.axes.values().map(|&v| (v.max(1)) as f64).product::<f64>(), i))
        .collect();
    order.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut picked: Vec<usize> =
        (0..n.max(1)).map(|k| order[if n <= 1 { 0 } else { k * (order.len() - 1) / (n - 1) }].1).collect();
    picked.sort();
    picked.dedup();
    picked
}

/// Folds one output's comparison into the worst case seen for that output.
fn fold_worst(worst: &mut BTreeMap<String, OutputComparison>, cmp: OutputComparison) {
    let entry = worst.entry(cmp.name.clone()).or_insert_with(|| cmp.clone());
    entry.max_abs_error = entry.max_abs_error.max(cmp.max_abs_error);
    entry.max_rel_error = entry.max_rel_error.max(cmp.max_rel_error);
    entry.relative_l2_error = entry.relative_l2_error.max(cmp.relative_l2_error);
    entry.matched_ratio = entry.matched_ratio.min(cmp.matched_ratio);
    entry.flashinfer_bench_pass &= cmp.flashinfer_bench_pass;
    entry.non_finite_mismatches += cmp.non_finite_mismatches;
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
