//! One workload, every implementation: materialize fresh inputs per trial, compute the reference,
//! run each implementation (Rust executor or Python worker) under the protocol, compare every output
//! and summarize the timings.
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use serde::Serialize;
use serde_json::Value;

use crate::compare::{OutputComparison, Tolerance, compare_tensors};
use crate::definition::Definition;
use crate::gpu::{Calibration, GpuImplementation, GpuSession, TrialTiming};
use crate::materialize::{LengthRule, WorkloadCase, materialize, trial_seed};
use crate::protocol::{PerCallMethod, TimingProtocol};
use crate::python::{PythonWorker, TrialFiles};
use crate::reference::run_definition_reference;
use crate::stats::{SampleSummary, summarize};
use crate::tensor::TensorSet;

/// Something that runs an implementation over a workload's trials.
pub enum Executor<'a> {
    /// A Rust implementation on the runner's own GPU session.
    Gpu { session: &'a GpuSession, implementation: Box<dyn GpuImplementation + 'a> },
    /// A Python implementation ("flashinfer" or "python:PATH") in the worker.
    Python {
        worker: &'a RefCell<PythonWorker>,
        implementation: String,
        options: Value,
        label: String,
        flush_bytes: usize,
    },
}

impl Executor<'_> {
    pub fn label(&self) -> String {
        match self {
            Executor::Gpu { implementation, .. } => implementation.name(),
            Executor::Python { label, .. } => label.clone(),
        }
    }
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TrialRecord {
    pub seed: u64,
    pub comparisons: Vec<OutputComparison>,
    /// The outputs after all timed calls were bit-identical to the first call's (Rust executor only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeat_identical: Option<bool>,
    pub timing: TrialTiming,
}

/// The result of one implementation on one workload.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadRun {
    pub implementation: String,
    pub definition: String,
    pub workload_uuid: String,
    pub axes: BTreeMap<String, i64>,
    pub seed: u64,
    pub trials: Vec<TrialRecord>,
    /// Every output of every trial passes flashinfer_bench_eval.
    pub correct: bool,
    /// Per output, the worst over trials: largest errors, smallest matched ratio.
    pub worst: Vec<OutputComparison>,
    /// The published figure (`latency`): per-call device time, in one graph or by CUPTI.
    pub per_call: Option<SampleSummary>,
    pub per_call_method: Option<PerCallMethod>,
    pub eager: Option<SampleSummary>,
    pub graph: Option<SampleSummary>,
    pub graph_error: Option<String>,
    pub minimum_bytes: u64,
    pub per_call_percent_of_speed_of_light: Option<f64>,
    pub eager_percent_of_speed_of_light: Option<f64>,
    pub graph_percent_of_speed_of_light: Option<f64>,
    /// Set when the implementation failed to run; then there are no timings.
    pub error: Option<String>,
}

/// The fewest bytes one call must move: every input read once (K and V only for the tokens the
/// sequences use), every output written once.
pub fn gqa_minimum_bytes(definition: &Definition, inputs: &TensorSet) -> u64 {
    let (Some(hkv), Some(d), Some(ps)) =
        (definition.const_axis("num_kv_heads"), definition.const_axis("head_dim"), definition.const_axis("page_size"))
    else {
        return 0;
    };
    let indptr = inputs.get("kv_indptr").and_then(|t| t.to_i32()).unwrap_or_default();
    let last = inputs.get("kv_last_page_len").and_then(|t| t.to_i32());
    let mut tokens = 0u64;
    for b in 0..indptr.len().saturating_sub(1) {
        let pages = (indptr[b + 1] - indptr[b]).max(0) as u64;
        if pages > 0 {
            let last_len = last.as_ref().map_or(ps as u64, |l| l[b].max(0) as u64);
            tokens += (pages - 1) * ps as u64 + last_len;
        }
    }
    let kv = tokens * (hkv * d * 2 * 2) as u64;
    let small: u64 = ["q", "kv_indptr", "kv_indices", "kv_last_page_len"]
        .iter()
        .filter_map(|n| inputs.get(n))
        .map(|t| t.bytes.len() as u64)
        .sum();
    let q = inputs.get("q").map_or(0, |t| t.bytes.len() as u64);
    let batch = indptr.len().saturating_sub(1) as u64;
    let hq = definition.const_axis("num_qo_heads").unwrap_or(0) as u64;
    // output is bf16 like q; lse is f32 per (sequence, query head).
    kv + small + q + batch * hq * 4
}

fn percent_of_speed_of_light(
    bytes: u64,
    summary: &Option<SampleSummary>,
    calibration: Option<&Calibration>,
) -> Option<f64> {
    let (summary, calibration) = (summary.as_ref()?, calibration?);
    Some(100.0 * bytes as f64 / (summary.median * 1e-9) / calibration.copy_bandwidth_bytes_per_s)
}

/// The per-call summary of a run and its method: in one graph when every trial was captured, else
/// CUPTI when every trial has those samples, else none.
fn per_call_of(records: &[TrialRecord]) -> (Option<SampleSummary>, Option<PerCallMethod>) {
    let pick = |samples: fn(&TrialTiming) -> &Option<Vec<f64>>, method| {
        let all: Option<Vec<&Vec<f64>>> = records.iter().map(|r| samples(&r.timing).as_ref()).collect();
        let values: Vec<f64> = all?.into_iter().flatten().copied().collect();
        (!values.is_empty()).then(|| (summarize(&values), method))
    };
    match pick(|t| &t.in_graph_ns, PerCallMethod::InGraph).or_else(|| pick(|t| &t.cupti_ns, PerCallMethod::Cupti)) {
        Some((summary, method)) => (Some(summary), Some(method)),
        None => (None, None),
    }
}

/// Folds per-trial comparisons into the worst case per output.
fn worst_of(trials: &[TrialRecord]) -> Vec<OutputComparison> {
    let mut worst: BTreeMap<String, OutputComparison> = BTreeMap::new();
    for c in trials.iter().flat_map(|t| &t.comparisons) {
        worst.entry(c.name.clone()).and_modify(|w| w.fold_worst(c)).or_insert_with(|| c.clone());
    }
    worst.into_values().collect()
}

fn compare_outputs(
    definition: &Definition,
    outputs: &TensorSet,
    reference: &TensorSet,
) -> Result<Vec<OutputComparison>> {
    let mut comparisons = Vec::new();
    for spec in definition.output_specs().map_err(|e| anyhow!(e))? {
        let expected =
            reference.get(&spec.name).ok_or_else(|| anyhow!("the reference has no output `{}`", spec.name))?;
        let got =
            outputs.get(&spec.name).ok_or_else(|| anyhow!("the implementation produced no output `{}`", spec.name))?;
        comparisons.push(compare_tensors(&spec.name, got, expected, Tolerance::FLASHINFER_BENCH_DEFAULT)?);
    }
    Ok(comparisons)
}

/// Inputs and reference outputs of one trial.
pub struct PreparedTrial {
    pub seed: u64,
    pub inputs: TensorSet,
    pub reference: TensorSet,
    pub files: TrialFiles,
}

/// How a run's inputs are made: `trials` fresh sets, seeds derived from `seed`, blobs read from
/// `blob_root`, synthesized page tables under `lengths`.
#[derive(Clone, Copy, Debug)]
pub struct InputPlan<'a> {
    pub seed: u64,
    pub trials: usize,
    pub blob_root: Option<&'a Path>,
    pub lengths: LengthRule,
}

/// Materializes the plan's input sets, computes their references and writes the inputs under
/// `work_dir` for the Python worker.
pub fn prepare_trials(
    definition: &Definition,
    workload: &WorkloadCase,
    plan: &InputPlan<'_>,
    work_dir: &Path,
    write_files: bool,
) -> Result<Vec<PreparedTrial>> {
    std::fs::create_dir_all(work_dir).with_context(|| format!("creating {}", work_dir.display()))?;
    (0..plan.trials)
        .map(|t| {
            let seed = trial_seed(plan.seed, t);
            let inputs = materialize(definition, workload, seed, plan.blob_root, plan.lengths)?;
            let reference =
                run_definition_reference(definition, &inputs, &format!("workload {} trial {t}", workload.uuid))?;
            let files = TrialFiles {
                inputs: work_dir.join(format!("trial{t}.inputs.safetensors")),
                outputs: work_dir.join(format!("trial{t}.outputs.safetensors")),
            };
            if write_files {
                inputs.write(&files.inputs)?;
            }
            Ok(PreparedTrial { seed, inputs, reference, files })
        })
        .collect()
}

fn run_gpu(
    session: &GpuSession,
    implementation: &mut dyn GpuImplementation,
    definition: &Definition,
    trials: &[PreparedTrial],
) -> Result<Vec<TrialRecord>> {
    let mut records = Vec::new();
    for trial in trials {
        implementation.prepare(session, &trial.inputs)?;
        implementation.launch(session)?;
        let first = implementation.read_outputs(session)?;
        let comparisons = compare_outputs(definition, &first, &trial.reference)?;
        let timing = session.time_trial(implementation)?;
        let last = implementation.read_outputs(session)?;
        records.push(TrialRecord { seed: trial.seed, comparisons, repeat_identical: Some(first == last), timing });
    }
    Ok(records)
}

fn run_python(
    worker: &RefCell<PythonWorker>,
    implementation: &str,
    options: &Value,
    flush_bytes: usize,
    protocol: &TimingProtocol,
    definition: &Definition,
    trials: &[PreparedTrial],
) -> Result<(Vec<TrialRecord>, Option<String>)> {
    let files: Vec<TrialFiles> = trials.iter().map(|t| t.files.clone()).collect();
    let results = worker.borrow_mut().run(implementation, options, definition, protocol, flush_bytes, &files)?;
    let mut records = Vec::new();
    let mut graph_error = None;
    for (trial, (timing, error)) in trials.iter().zip(results) {
        let outputs = TensorSet::read(&trial.files.outputs)?;
        let comparisons = compare_outputs(definition, &outputs, &trial.reference)?;
        graph_error = graph_error.or(error);
        records.push(TrialRecord { seed: trial.seed, comparisons, repeat_identical: None, timing });
    }
    Ok((records, graph_error))
}

/// Runs every executor over the prepared trials of one workload.
pub fn run_workload(
    definition: &Definition,
    workload: &WorkloadCase,
    seed: u64,
    trials: &[PreparedTrial],
    executors: &mut [Executor<'_>],
    protocol: &TimingProtocol,
    calibration: Option<&Calibration>,
) -> Vec<WorkloadRun> {
    let minimum_bytes = trials.first().map_or(0, |t| gqa_minimum_bytes(definition, &t.inputs));
    executors
        .iter_mut()
        .map(|executor| {
            let label = executor.label();
            let result = match executor {
                Executor::Gpu { session, implementation } => {
                    run_gpu(session, implementation.as_mut(), definition, trials).map(|r| (r, None))
                }
                Executor::Python { worker, implementation, options, flush_bytes, .. } => {
                    run_python(worker, implementation, options, *flush_bytes, protocol, definition, trials)
                }
            };
            let (records, graph_error, error) = match result {
                Ok((records, graph_error)) => (records, graph_error, None),
                Err(e) => (Vec::new(), None, Some(format!("{e:#}"))),
            };
            let eager_samples: Vec<f64> = records.iter().flat_map(|r| r.timing.eager_ns.iter().copied()).collect();
            let graph_samples: Vec<f64> =
                records.iter().flat_map(|r| r.timing.graph_ns.iter().flatten().copied()).collect();
            let eager = (!eager_samples.is_empty()).then(|| summarize(&eager_samples));
            let graph = (!graph_samples.is_empty() && records.iter().all(|r| r.timing.graph_ns.is_some()))
                .then(|| summarize(&graph_samples));
            let (per_call, per_call_method) = per_call_of(&records);
            let correct = error.is_none()
                && !records.is_empty()
                && records.iter().all(|r| r.comparisons.iter().all(|c| c.flashinfer_bench_pass));
            WorkloadRun {
                implementation: label,
                definition: definition.name.clone(),
                workload_uuid: workload.uuid.clone(),
                axes: workload.axes.clone(),
                seed,
                worst: worst_of(&records),
                trials: records,
                correct,
                per_call_percent_of_speed_of_light: percent_of_speed_of_light(minimum_bytes, &per_call, calibration),
                eager_percent_of_speed_of_light: percent_of_speed_of_light(minimum_bytes, &eager, calibration),
                graph_percent_of_speed_of_light: percent_of_speed_of_light(minimum_bytes, &graph, calibration),
                per_call,
                per_call_method,
                eager,
                graph,
                graph_error,
                minimum_bytes,
                error,
            }
        })
        .collect()
}
