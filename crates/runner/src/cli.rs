//! `ki reference` and `ki run`: argument structs and their implementations. The ki binary calls
//! these (crates/ki/src/cmd/run.rs); so does the runner's own small `ki-runner` binary that is
//! carried to the GPU machine.
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use serde_json::{Value, json};

use crate::definition::Definition;
use crate::execute::{Executor, InputPlan, PreparedTrial, WorkloadRun, prepare_trials, run_workload};
use crate::gpu::{GpuImplementation, GpuSession, cuda_available};
use crate::materialize::{LengthRule, WorkloadCase, materialize, read_workloads, synthesizes_page_table};
use crate::protocol::{InputRule, TimingProtocol};
use crate::python::PythonWorker;
use crate::records::{RecordWriter, SessionFacts};
use crate::reference::run_definition_reference;
use crate::tensor::TensorSet;

#[derive(Args, Debug)]
pub struct ReferenceArgs {
    /// A built-in definition name (e.g. gqa_paged_decode_h32_kv4_d128_ps1) or a definition JSON file.
    pub definition: String,
    /// Input tensors named as the definition's inputs (scalars as 0-dimensional tensors).
    #[arg(long, required_unless_present = "workloads")]
    pub inputs: Option<PathBuf>,
    /// Instead of --inputs: materialize workload --workload of this workloads .jsonl file.
    #[arg(long, requires = "workload", conflicts_with = "inputs")]
    pub workloads: Option<PathBuf>,
    /// The workload's uuid in --workloads.
    #[arg(long)]
    pub workload: Option<String>,
    /// Seed of materialized inputs.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// How a synthesized page table draws its sequence lengths: realistic, uniform, lognormal, tail
    /// (crates/runner/src/materialize.rs).
    #[arg(long, default_value_t = LengthRule::Realistic)]
    pub lengths: LengthRule,
    /// Also write the materialized inputs here.
    #[arg(long)]
    pub save_inputs: Option<PathBuf>,
    /// Where to write the outputs (named as the definition's outputs).
    #[arg(long)]
    pub out: PathBuf,
}

/// The folder that workload blob paths (`./blob/workloads/...`) are relative to: the one holding
/// `flashinfer_trace/` above a workloads file in `flashinfer_trace/workloads/<op>/`.
fn blob_root_of(workloads_file: &Path) -> Option<PathBuf> {
    workloads_file.ancestors().nth(4).map(Path::to_path_buf)
}

pub fn reference(args: ReferenceArgs) -> Result<ExitCode> {
    let definition = Definition::load(&args.definition)?;
    let (inputs, origin) = match (&args.inputs, &args.workloads) {
        (Some(path), _) => (TensorSet::read(path)?, path.display().to_string()),
        (None, Some(file)) => {
            let uuid = args.workload.as_deref().unwrap_or_default();
            let lines = read_workloads(file)?;
            let line = lines
                .iter()
                .find(|l| l.workload.uuid == uuid)
                .with_context(|| format!("{}: no workload with uuid {uuid}", file.display()))?;
            let inputs =
                materialize(&definition, &line.workload, args.seed, blob_root_of(file).as_deref(), args.lengths)?;
            if let Some(path) = &args.save_inputs {
                inputs.write(path)?;
            }
            (inputs, format!("{}#{uuid}", file.display()))
        }
        (None, None) => bail!("give --inputs, or --workloads with --workload"),
    };
    let started = std::time::Instant::now();
    let outputs = run_definition_reference(&definition, &inputs, &origin)?;
    let seconds = started.elapsed().as_secs_f64();
    outputs.write(&args.out)?;
    say!("reference {}: {origin} -> {} in {seconds:.3} s", definition.name, args.out.display());
    Ok(ExitCode::SUCCESS)
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// The operation: a built-in definition name or a definition JSON file.
    #[arg(long)]
    pub operation: String,
    /// Workloads .jsonl file (FlashInfer-Bench workload lines). Without --workload: every line of
    /// the operation (the batch form).
    #[arg(long)]
    pub workloads: Option<PathBuf>,
    /// One workload's uuid in --workloads.
    #[arg(long, requires = "workloads")]
    pub workload: Option<String>,
    /// A workload given by its axes instead (repeat: --axis batch_size=16 --axis num_pages=1070 ...).
    #[arg(long = "axis", value_name = "NAME=VALUE")]
    pub axes: Vec<String>,
    /// flashinfer (both use_tensor_cores settings), flashinfer-tc, flashinfer-notc, native, or
    /// python:PATH (a file defining run(**inputs)). Comma-separate several to run them side by side.
    #[arg(long)]
    pub implementation: String,
    /// Trials, each on fresh inputs.
    #[arg(long, default_value_t = 3)]
    pub trials: usize,
    /// Directory for manifests, samples and the results table.
    #[arg(long, default_value = "runs")]
    pub out: PathBuf,
    /// Run once on these inputs and write the outputs to --outputs (no timing).
    #[arg(long, requires = "outputs")]
    pub inputs: Option<PathBuf>,
    #[arg(long, requires = "inputs")]
    pub outputs: Option<PathBuf>,
    /// Seed of the materialized inputs (trial t uses a seed derived from it).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// How synthesized page tables draw their sequence lengths: realistic, uniform, lognormal, tail
    /// (crates/runner/src/materialize.rs). Part of the protocol record, so of every comparison key.
    #[arg(long, default_value_t = LengthRule::Realistic)]
    pub lengths: LengthRule,
    /// Python interpreter for python implementations and the FlashInfer baseline.
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// Only the first N workloads of the batch form (for quick checks).
    #[arg(long)]
    pub limit: Option<usize>,
    /// A catalog export (.jsonl or .jsonl.zst): reuse its OperationSpec and WorkloadCase manifests
    /// for the definition, so the runs' digests name the index's existing workloads.
    #[arg(long)]
    pub catalog: Option<PathBuf>,
    /// A lock file held (exclusively) from calibration to the last timing: processes that
    /// share one GPU take turns measuring, while their compiles still overlap.
    #[arg(long)]
    pub gpu_lock: Option<PathBuf>,
}

/// One implementation the user asked for.
#[derive(Clone, Debug, PartialEq)]
pub enum ImplementationChoice {
    FlashInfer { use_tensor_cores: bool },
    Native,
    Python(PathBuf),
}

impl ImplementationChoice {
    pub fn parse_list(text: &str) -> Result<Vec<ImplementationChoice>> {
        let mut choices = Vec::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            match item {
                "flashinfer" => {
                    choices.push(ImplementationChoice::FlashInfer { use_tensor_cores: false });
                    choices.push(ImplementationChoice::FlashInfer { use_tensor_cores: true });
                }
                "flashinfer-notc" => choices.push(ImplementationChoice::FlashInfer { use_tensor_cores: false }),
                "flashinfer-tc" => choices.push(ImplementationChoice::FlashInfer { use_tensor_cores: true }),
                "native" => choices.push(ImplementationChoice::Native),
                other => match other.strip_prefix("python:") {
                    Some(path) if !path.is_empty() => choices.push(ImplementationChoice::Python(PathBuf::from(path))),
                    _ => bail!(
                        "--implementation: unknown `{other}` (flashinfer, flashinfer-tc, flashinfer-notc, native, python:PATH)"
                    ),
                },
            }
        }
        if choices.is_empty() {
            bail!("--implementation: none given");
        }
        Ok(choices)
    }

    pub fn label(&self) -> String {
        match self {
            ImplementationChoice::FlashInfer { use_tensor_cores: true } => "flashinfer-tc".into(),
            ImplementationChoice::FlashInfer { use_tensor_cores: false } => "flashinfer-notc".into(),
            ImplementationChoice::Native => "kernelindex-native".into(),
            ImplementationChoice::Python(path) => format!("python:{}", path.display()),
        }
    }
}

fn parse_axes(items: &[String]) -> Result<BTreeMap<String, i64>> {
    items
        .iter()
        .map(|item| {
            let (name, value) = item.split_once('=').ok_or_else(|| anyhow!("--axis {item}: expected NAME=VALUE"))?;
            let value: i64 = value.trim().parse().map_err(|_| anyhow!("--axis {item}: `{value}` is not an integer"))?;
            Ok((name.trim().to_string(), value))
        })
        .collect()
}

/// Environment for the worker: FlashInfer's JIT cache under /tmp (the repository stays clean).
fn worker_environment() -> Vec<(String, String)> {
    let base = std::env::var("KI_FLASHINFER_WORKSPACE").unwrap_or_else(|_| "/tmp/ki-flashinfer".into());
    vec![("FLASHINFER_WORKSPACE_BASE".into(), base), ("PYTHONUNBUFFERED".into(), "1".into())]
}

fn native_implementation(session: &GpuSession, definition: &Definition) -> Result<Box<dyn GpuImplementation>> {
    Ok(Box::new(crate::native::NativeGqaPagedDecode::new(session, definition)?))
}

pub fn run(args: RunArgs) -> Result<ExitCode> {
    let definition = Definition::load(&args.operation)?;
    let choices = ImplementationChoice::parse_list(&args.implementation)?;
    if args.trials == 0 {
        bail!("--trials must be at least 1");
    }
    // Workloads to run (checked before any GPU work, so bad arguments fail fast).
    let workloads: Vec<WorkloadCase> = if args.inputs.is_some() {
        Vec::new()
    } else if let Some(file) = &args.workloads {
        let lines = read_workloads(file)?;
        let mut selected: Vec<WorkloadCase> = lines
            .into_iter()
            .filter(|l| l.definition == definition.name)
            .map(|l| l.workload)
            .filter(|w| args.workload.as_deref().is_none_or(|u| w.uuid == u))
            .collect();
        if selected.is_empty() {
            bail!(
                "{}: no workload of {} matches{}",
                file.display(),
                definition.name,
                args.workload.as_deref().map(|u| format!(" uuid {u}")).unwrap_or_default()
            );
        }
        if let Some(limit) = args.limit {
            selected.truncate(limit);
        }
        selected
    } else if !args.axes.is_empty() {
        vec![WorkloadCase::from_axes(&definition, parse_axes(&args.axes)?)?]
    } else {
        bail!("give --workloads [--workload UUID], --axis NAME=VALUE..., or --inputs with --outputs");
    };
    let blob_root = args.workloads.as_deref().and_then(blob_root_of);
    let input_rule = input_rule(&definition, &workloads, blob_root.as_deref(), args.lengths)?;
    if !cuda_available() {
        bail!("ki run needs a CUDA GPU: the CUDA driver library or device was not found");
    }
    let protocol = TimingProtocol { trials: args.trials, input_rule, ..TimingProtocol::RERUN_V2 };
    let session = GpuSession::open(0, protocol)?;
    let needs_python = choices.iter().any(|c| !matches!(c, ImplementationChoice::Native));
    let worker =
        if needs_python { Some(RefCell::new(PythonWorker::start(&args.python, &worker_environment())?)) } else { None };

    if let (Some(inputs_path), Some(outputs_path)) = (&args.inputs, &args.outputs) {
        return run_once(&definition, &choices[0], &session, worker.as_ref(), inputs_path, outputs_path);
    }

    let facts = SessionFacts::read(&session, worker.as_ref().map(|w| w.borrow().environment.clone()))?;
    // Compiled before the GPU is taken (NVRTC works on the CPU); measured with it held.
    let mut executors = executors_for(&choices, &session, &definition, worker.as_ref())?;
    let _gpu = match &args.gpu_lock {
        Some(path) => Some(lock_gpu(path)?),
        None => None,
    };
    let calibration = session.calibrate(1 << 30)?;
    say!(
        "calibration: empty kernel {:.2} us eager / {:.2} us graph replay / {:.2} us per call in a graph; copy bandwidth {:.0} GB/s; protocol {}",
        calibration.empty_kernel_eager_ns / 1e3,
        calibration.empty_kernel_graph_ns / 1e3,
        calibration.empty_kernel_in_graph_ns / 1e3,
        calibration.copy_bandwidth_bytes_per_s / 1e9,
        protocol.name()
    );
    std::fs::create_dir_all(&args.out)?;
    let scratch = tempfile::tempdir()?;
    let catalog = match &args.catalog {
        Some(path) => crate::records::catalog_rows(std::slice::from_ref(path), std::slice::from_ref(&definition.name))?
            .operations
            .remove(&definition.name),
        None => None,
    };
    let mut writer = RecordWriter::new(&args.out, &definition, &protocol, &facts, &calibration, catalog)?;
    let mut all_runs: Vec<WorkloadRun> = Vec::new();
    for (index, workload) in workloads.iter().enumerate() {
        let work_dir = scratch.path().join(format!("w{index}"));
        let plan =
            InputPlan { seed: args.seed, trials: args.trials, blob_root: blob_root.as_deref(), lengths: args.lengths };
        let trials: Vec<PreparedTrial> = prepare_trials(&definition, workload, &plan, &work_dir, needs_python)?;
        let runs =
            run_workload(&definition, workload, args.seed, &trials, &mut executors, &protocol, Some(&calibration));
        for run in &runs {
            print_run_line(index, workloads.len(), run);
            writer.write_run(workload, run)?;
        }
        all_runs.extend(runs);
        std::fs::remove_dir_all(&work_dir).ok();
    }
    let command: Vec<String> = std::env::args().collect();
    writer.finish(&all_runs, &command.join(" "))?;
    let all_correct = all_runs.iter().all(|r| r.correct);
    say!("wrote {} runs to {}; all correct: {all_correct}", all_runs.len(), args.out.display());
    Ok(if all_correct { ExitCode::SUCCESS } else { ExitCode::from(2) })
}

/// The protocol's input rule for a session: the length rule when the workloads' page tables are
/// synthesized, `random` when they are all read from files. A session mixing both is refused, since
/// one protocol record must say how every run's inputs were made.
fn input_rule(
    definition: &Definition,
    workloads: &[WorkloadCase],
    blob_root: Option<&Path>,
    lengths: LengthRule,
) -> Result<InputRule> {
    let (synthesized, read): (Vec<&WorkloadCase>, Vec<&WorkloadCase>) =
        workloads.iter().partition(|w| synthesizes_page_table(definition, w, blob_root));
    match (synthesized.first(), read.first()) {
        (Some(a), Some(b)) => bail!(
            "workload {} synthesizes its page table (under --lengths {lengths}) while workload {} reads its own: \
             run them in separate sessions, one protocol record each",
            a.uuid,
            b.uuid
        ),
        (Some(_), None) => Ok(InputRule::Lengths(lengths)),
        _ => Ok(InputRule::Random),
    }
}

fn print_run_line(index: usize, total: usize, run: &WorkloadRun) {
    let us = |s: &Option<crate::stats::SampleSummary>| {
        s.as_ref().map_or("-".to_string(), |s| format!("{:.2}", s.median / 1e3))
    };
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "[{}/{}] {} {} per call {} us replay {} us eager {} us correct {}{}",
        index + 1,
        total,
        run.workload_uuid,
        run.implementation,
        us(&run.per_call),
        us(&run.graph),
        us(&run.eager),
        run.correct,
        run.error.as_deref().map(|e| format!(" ERROR {e}")).unwrap_or_default()
    );
}

/// `ki run --inputs IN --outputs OUT`: one call on the given inputs, outputs written, and a
/// comparison with the reference printed (nothing timed).
fn run_once(
    definition: &Definition,
    choice: &ImplementationChoice,
    session: &GpuSession,
    worker: Option<&RefCell<PythonWorker>>,
    inputs_path: &Path,
    outputs_path: &Path,
) -> Result<ExitCode> {
    let inputs = TensorSet::read(inputs_path)?;
    let reference = run_definition_reference(definition, &inputs, &inputs_path.display().to_string())?;
    let outputs = match choice {
        ImplementationChoice::Native => {
            let mut implementation = native_implementation(session, definition)?;
            implementation.prepare(session, &inputs)?;
            implementation.launch(session)?;
            implementation.read_outputs(session)?
        }
        other => {
            let (implementation, options) = match other {
                ImplementationChoice::FlashInfer { use_tensor_cores } => {
                    ("flashinfer".to_string(), json!({"use_tensor_cores": use_tensor_cores}))
                }
                ImplementationChoice::Python(path) => {
                    (format!("python:{}", std::fs::canonicalize(path)?.display()), Value::Null)
                }
                ImplementationChoice::Native => unreachable!(),
            };
            let once = TimingProtocol {
                warmup_iterations: 0,
                timed_iterations: 1,
                trials: 1,
                calls_per_graph: 1,
                graph_pairs: 1,
                ..TimingProtocol::RERUN_V2
            };
            let files = crate::python::TrialFiles {
                inputs: std::fs::canonicalize(inputs_path)?,
                outputs: outputs_path.to_path_buf(),
            };
            worker.unwrap().borrow_mut().run(
                &implementation,
                &options,
                definition,
                &once,
                session.flush_bytes(),
                &[files],
            )?;
            TensorSet::read(outputs_path)?
        }
    };
    outputs.write(outputs_path)?;
    for spec in definition.output_specs().map_err(|e| anyhow!(e))? {
        let (Some(got), Some(expected)) = (outputs.get(&spec.name), reference.get(&spec.name)) else {
            continue;
        };
        let c = crate::compare::compare_tensors(
            &spec.name,
            got,
            expected,
            crate::compare::Tolerance::FLASHINFER_BENCH_DEFAULT,
        )?;
        say!(
            "{}: max abs {:.3e} max rel {:.3e} rel L2 {:.3e} matched {:.4} flashinfer_bench_eval {}",
            c.name,
            c.max_abs_error,
            c.max_rel_error,
            c.relative_l2_error,
            c.matched_ratio,
            c.flashinfer_bench_pass
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// One executor per implementation asked for (the native kernel compiled here).
fn executors_for<'a>(
    choices: &[ImplementationChoice],
    session: &'a GpuSession,
    definition: &Definition,
    worker: Option<&'a RefCell<PythonWorker>>,
) -> Result<Vec<Executor<'a>>> {
    let mut executors: Vec<Executor> = Vec::new();
    for choice in choices {
        executors.push(match choice {
            ImplementationChoice::Native => {
                Executor::Gpu { session, implementation: native_implementation(session, definition)? }
            }
            ImplementationChoice::FlashInfer { use_tensor_cores } => Executor::Python {
                worker: worker.unwrap(),
                implementation: "flashinfer".into(),
                options: json!({"use_tensor_cores": use_tensor_cores}),
                label: choice.label(),
                flush_bytes: session.flush_bytes(),
            },
            ImplementationChoice::Python(path) => Executor::Python {
                worker: worker.unwrap(),
                implementation: format!(
                    "python:{}",
                    std::fs::canonicalize(path).with_context(|| format!("{}", path.display()))?.display()
                ),
                options: Value::Null,
                label: choice.label(),
                flush_bytes: session.flush_bytes(),
            },
        });
    }
    Ok(executors)
}

/// Waits for the exclusive lock on `path` (created if missing); the kernel releases it when
/// this process ends, however it ends.
fn lock_gpu(path: &Path) -> Result<std::fs::File> {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .with_context(|| format!("cannot open the GPU lock {}", path.display()))?;
    file.lock().with_context(|| format!("cannot lock {}", path.display()))?;
    Ok(file)
}
