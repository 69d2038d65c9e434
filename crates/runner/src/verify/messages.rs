//! The lines the Python workers write, typed. The judge (`python/ki_judge.py`) answers each job with
//! one line, `{"ok": true, ...}` or `{"ok": false, "error": ...}`; a solution worker
//! (`python/ki_solution.py`) answers `hello`, `load` and `warm` with one `{"final": true, "ok": ...}`
//! line and a `workload` with stage and check lines, then one final answer.
//!
//! `python/messages.schema.json` is the JSON Schema of these types (a test here keeps it equal to
//! what they generate); the Python tests hold every key the workers write to it, so a field renamed
//! on one side fails a test on CI, not a verification on the GPU.
use serde::Deserialize;
use serde_json::Value;

use crate::compare::OutputComparison;
use crate::verdict::Verdict;

// Every key a worker writes is declared here, so that the schema is the whole protocol; the runner
// reads most of them, and the rest (a traceback, a pid, an exchange's serial) are declared for the
// schema's sake: `#[allow(dead_code)]` on those structs says so.

/// The fields every answer may carry: whether it succeeded, and why not.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[allow(dead_code)]
pub struct Status {
    #[serde(default)]
    pub ok: bool,
    /// The judge's reason for a failed job.
    pub error: Option<String>,
    /// A solution worker's verdict for a failed job (`runtime_error`, `incorrect_numerical`, ...).
    pub verdict: Option<String>,
    pub reason: Option<String>,
    /// The check that refused a suspected reward hack.
    pub check: Option<String>,
    /// The worker's CUDA context is gone: it is not asked again.
    #[serde(default)]
    pub fatal: bool,
    pub traceback: Option<String>,
}

impl Status {
    /// The status of any worker line; a line that is not the protocol's is a failure that says so.
    pub fn of(line: &Value) -> Status {
        decode(line, "its status")
            .unwrap_or_else(|error| Status { error: Some(format!("{error:#}")), ..Status::default() })
    }

    /// The verdict a solution worker gave a failed job (a runtime error when it named none).
    pub fn verdict(&self) -> Verdict {
        Verdict::from_worker(
            self.verdict.as_deref().unwrap_or("runtime_error"),
            self.reason.as_deref().unwrap_or(""),
            self.check.as_deref(),
        )
    }

    /// Why a job failed, in the worker's own words.
    pub fn why(&self) -> &str {
        self.error.as_deref().or(self.reason.as_deref()).unwrap_or("failed")
    }
}

/// The judge's answer to `hello`.
#[derive(Debug, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[allow(dead_code)]
pub struct JudgeHello {
    pub environment: JudgeEnvironment,
    pub pid: u32,
}

/// The GPU and software the judge found (`torch.cuda.get_device_properties(0)` and versions).
#[derive(Debug, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[allow(dead_code)]
pub struct JudgeEnvironment {
    pub device: String,
    pub capability: String,
    pub sm_count: u64,
    pub memory_bytes: u64,
    pub l2_bytes: u64,
    pub python: Option<String>,
    pub torch: Option<String>,
    pub torch_cuda: Option<String>,
    pub flashinfer: Option<String>,
    /// Why FlashInfer could not be imported (the baselines say so on their own).
    pub flashinfer_error: Option<String>,
}

/// The judge's answer to `compare`: each call's outputs against their references.
#[derive(Debug, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct JudgeComparison {
    pub calls: Vec<CallComparison>,
}

#[derive(Debug, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct CallComparison {
    pub label: String,
    pub outputs: Vec<OutputResult>,
}

/// One output of one call: compared, or not comparable (its dtype or shape is not the reference's).
#[derive(Debug, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum OutputResult {
    Mismatch { name: String, mismatch: String, kind: MismatchKind },
    Compared(OutputComparison),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum MismatchKind {
    Dtype,
    Shape,
}

/// A solution worker's answer to `load`.
#[derive(Debug, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[allow(dead_code)]
pub struct Loaded {
    /// Why the solution is taken as destination-passing style (or not).
    pub dps_reason: Option<String>,
    /// The name a baseline gives itself.
    pub label: Option<String>,
    pub description: Option<String>,
    /// Whether the callable writes into output buffers it is given (destination-passing style).
    pub dps: Option<bool>,
}

/// The judge's answer to `reference`.
#[derive(Debug, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct ReferenceReply {
    /// The reference's time on the GPU.
    #[allow(dead_code)]
    pub seconds: f64,
    /// Each output's shape and dtype.
    #[allow(dead_code)]
    pub outputs: std::collections::BTreeMap<String, (Vec<u64>, String)>,
    /// moe: what the routing of the trial's inputs reaches (`python/ki_routing.py`).
    #[serde(default)]
    pub routing: Option<Routing>,
}

/// The local experts a moe call's routing reaches, and its (token, local expert) pairs.
#[derive(Debug, Deserialize, Clone, Copy)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Routing {
    pub local_experts: u64,
    pub local_assignments: u64,
}

/// The build worker's one line (`python/ki_build.py`).
#[derive(Debug, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[allow(dead_code)]
pub struct BuildReply {
    pub ok: bool,
    /// The built extension (or the precompiled header).
    pub so_path: Option<String>,
    /// The compiler's output, for a failed build.
    pub log: Option<String>,
    pub seconds: Option<f64>,
    /// The extension was built before, in the build cache.
    pub cached: Option<bool>,
    /// The build used the precompiled torch header.
    pub pch: Option<bool>,
}

/// A line of a solution worker during a `workload` job.
#[derive(Debug, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(untagged)]
pub enum WorkloadLine {
    /// The last line: the verdict and every trial's figures.
    Final(Box<WorkloadAnswer>),
    /// Graph capture starts (`capture`) or ended (`captured`): a worker that dies in between
    /// could not be captured.
    Stage { stage: Stage },
    /// Outputs copied into the exchange, for the judge to compare.
    Check { check: CheckRequest },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    Capture,
    Captured,
}

/// What the worker asks the judge, through the runner.
#[derive(Debug, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[allow(dead_code)]
pub struct CheckRequest {
    pub workload: String,
    pub trial: u64,
    /// A new (larger) exchange buffer to map first.
    pub exchange: Option<ExchangeAnnouncement>,
    pub serial: u64,
    /// Each call's outputs, relayed to the judge.
    pub calls: Vec<CheckedCall>,
    /// A failure here is the worker's to interpret (is the work captured at all?).
    #[serde(default)]
    pub probe: bool,
}

#[derive(Debug, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[allow(dead_code)]
pub struct ExchangeAnnouncement {
    pub serial: u64,
    /// The CUDA IPC handle, 64 bytes in hex.
    pub handle: String,
    pub bytes: u64,
}

/// One call of a check: where the worker copied each output in the exchange, as the judge reads it.
#[derive(Debug, Deserialize, serde::Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct CheckedCall {
    pub label: String,
    pub seed: u64,
    pub outputs: Vec<CheckedOutput>,
}

#[derive(Debug, Deserialize, serde::Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct CheckedOutput {
    pub name: String,
    pub offset: u64,
    pub nbytes: u64,
    pub shape: Vec<u64>,
    pub dtype: String,
    /// ki_exchange.digest of the bytes copied (the judge recomputes it on what it maps).
    pub digest: u64,
}

impl CheckRequest {
    /// The seeds of the calls this check asks about (the runner's side of the seed ledger).
    pub fn seeds(&self) -> impl Iterator<Item = u64> + '_ {
        self.calls.iter().map(|call| call.seed)
    }
}

/// A solution worker's final answer to a `workload` job.
#[derive(Debug, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[allow(dead_code)]
pub struct WorkloadAnswer {
    /// Always true: what tells this line from the others.
    #[serde(rename = "final")]
    pub is_final: bool,
    #[serde(flatten)]
    pub status: Status,
    /// The failed output, for an incorrect one.
    pub output: Option<String>,
    #[serde(default)]
    pub trials: Vec<Trial>,
    pub seeds: Option<SeedReport>,
    /// The measured launch overhead of one call, taken off the eager time by the consistency rule.
    pub launch_overhead_ns: Option<f64>,
}

/// The worker's seed ledger: the seeds of the timed calls and of those checked.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
#[allow(dead_code)]
pub struct SeedReport {
    pub timed: Vec<u64>,
    pub checked: Vec<u64>,
    pub used: Option<u64>,
}

/// One trial's figures (each on fresh inputs); kept whole in the run's samples.
#[derive(Debug, Clone, Default, Deserialize, serde::Serialize)]
#[cfg_attr(test, derive(schemars::JsonSchema))]
pub struct Trial {
    pub trial: u64,
    /// Outputs checked against the judge's references in this trial.
    pub checks: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_call_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub host_call_ns: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eager_iterations: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub calls_per_graph: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph_replays: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub eager_ns: Option<Vec<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync_probe_ns: Option<Vec<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_graph_ns: Option<Vec<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph_replay_ns: Option<Vec<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cupti_ns: Option<Vec<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernels_per_call: Option<Vec<f64>>,
    /// Why the calls were not timed in a graph.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub graph_error: Option<String>,
    /// `in_graph` or `cupti`: the trial's primary figure.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
}

impl Trial {
    /// The samples of one figure (`eager_ns`, `in_graph_ns`, ...), if this trial has it.
    pub fn figure(&self, figure: Figure) -> Option<&[f64]> {
        match figure {
            Figure::Eager => self.eager_ns.as_deref(),
            Figure::SyncProbe => self.sync_probe_ns.as_deref(),
            Figure::InGraph => self.in_graph_ns.as_deref(),
            Figure::GraphReplay => self.graph_replay_ns.as_deref(),
            Figure::Cupti => self.cupti_ns.as_deref(),
            Figure::KernelsPerCall => self.kernels_per_call.as_deref(),
        }
    }
}

/// The figures a trial may hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    Eager,
    SyncProbe,
    InGraph,
    GraphReplay,
    Cupti,
    KernelsPerCall,
}

/// Every sample of one figure over the trials that have it.
pub fn samples(trials: &[Trial], figure: Figure) -> Vec<f64> {
    trials.iter().filter_map(|t| t.figure(figure)).flatten().copied().collect()
}

/// Decodes a line the worker wrote as `T`; a line that is not one is the harness's fault, named.
pub fn decode<T: serde::de::DeserializeOwned>(line: &Value, what: &str) -> anyhow::Result<T> {
    T::deserialize(line).map_err(|error| anyhow::anyhow!("{what}: the worker's line is not the protocol's ({error})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The schema both sides test: every message type here, one document.
    fn schema() -> Value {
        let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
        let mut defs = serde_json::Map::new();
        let mut add = |name: &str, schema: schemars::Schema| {
            defs.insert(name.to_string(), schema.to_value());
        };
        add("Status", generator.subschema_for::<Status>());
        add("JudgeHello", generator.subschema_for::<JudgeHello>());
        add("JudgeComparison", generator.subschema_for::<JudgeComparison>());
        add("ReferenceReply", generator.subschema_for::<ReferenceReply>());
        add("Loaded", generator.subschema_for::<Loaded>());
        add("BuildReply", generator.subschema_for::<BuildReply>());
        add("WorkloadLine", generator.subschema_for::<WorkloadLine>());
        let mut all = generator.take_definitions(true);
        all.extend(defs.into_iter().map(|(k, v)| (format!("message:{k}"), v)));
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "The lines the runner's Python workers write (crates/runner/src/verify/messages.rs)",
            "$defs": all,
        })
    }

    const SCHEMA_FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/python/messages.schema.json");

    #[test]
    fn the_committed_schema_is_the_types_schema() {
        let generated = serde_json::to_string_pretty(&schema()).unwrap() + "\n";
        if std::env::var_os("KI_WRITE_SCHEMA").is_some() {
            std::fs::write(SCHEMA_FILE, &generated).unwrap();
        }
        let committed = std::fs::read_to_string(SCHEMA_FILE).unwrap_or_default();
        assert!(
            committed == generated,
            "{SCHEMA_FILE} is not the schema of messages.rs' types: run `KI_WRITE_SCHEMA=1 cargo test -p ki-runner \
             messages` and commit it"
        );
    }

    #[test]
    fn a_workload_line_is_told_apart_by_its_keys() {
        let stage: WorkloadLine = decode(&json!({"stage": "capture"}), "t").unwrap();
        assert!(matches!(stage, WorkloadLine::Stage { stage: Stage::Capture }));
        let check: WorkloadLine = decode(
            &json!({"check": {"workload": "w", "trial": 1, "exchange": null, "serial": 2,
                    "calls": [{"label": "first:0", "seed": 7, "outputs": []}], "probe": false}}),
            "t",
        )
        .unwrap();
        let WorkloadLine::Check { check } = check else { panic!("not a check") };
        assert_eq!(check.seeds().collect::<Vec<_>>(), vec![7]);
        // A refused hack's final answer names its check as a string: still the final line.
        let hack: WorkloadLine = decode(
            &json!({"final": true, "trials": [], "seeds": {"timed": [], "checked": [], "used": 0},
                    "launch_overhead_ns": 1500.0, "verdict": "suspected_reward_hack", "check": "side_stream",
                    "reason": "work left on another stream"}),
            "t",
        )
        .unwrap();
        let WorkloadLine::Final(answer) = hack else { panic!("not final") };
        assert_eq!(answer.status.check.as_deref(), Some("side_stream"));
        assert!(!answer.status.fatal);
        assert!(decode::<WorkloadLine>(&json!({"stage": "elsewhere"}), "t").is_err());
    }

    #[test]
    fn a_passed_answer_keeps_its_trials_figures() {
        let line = json!({"final": true, "verdict": "passed", "launch_overhead_ns": 2100.5,
            "seeds": {"timed": [3, 4], "checked": [4], "used": 5},
            "trials": [{"trial": 0, "checks": 5, "first_call_ns": 1.0e6, "host_call_ns": 9.0e4, "eager_iterations": 10,
                        "calls_per_graph": 8, "graph_replays": 10, "sync_probe_ns": [], "eager_ns": [100.0, 110.0],
                        "in_graph_ns": [90.0], "graph_replay_ns": [95.0], "method": "in_graph",
                        "cupti_ns": [91.0, 92.0], "kernels_per_call": [1.0, 1.0]}]});
        let WorkloadLine::Final(answer) = decode(&line, "t").unwrap() else { panic!("not final") };
        assert_eq!(samples(&answer.trials, Figure::Cupti), vec![91.0, 92.0]);
        assert_eq!(samples(&answer.trials, Figure::InGraph), vec![90.0]);
        assert_eq!(answer.seeds.as_ref().unwrap().timed, vec![3, 4]);
        // Written back whole into the run's samples (nothing the worker measured is lost).
        let back = serde_json::to_value(&answer.trials[0]).unwrap();
        assert_eq!(back, line["trials"][0]);
    }

    #[test]
    fn the_judge_tells_a_mismatch_from_a_comparison() {
        let reply = json!({"ok": true, "calls": [{"label": "eager:3", "outputs": [
            {"name": "out", "mismatch": "bfloat16 [2, 3], the reference is float32 [2, 3]", "kind": "dtype"},
            {"name": "lse", "elements": 6, "maxAbsError": 0.0, "maxRelError": 0.0, "relativeL2Error": 0.0,
             "matchedRatio": 1.0, "flashinferBenchPass": true, "solExecbenchMatchedRatio": 1.0,
             "solExecbenchPass": true, "nonFiniteMismatches": 0}]}]});
        let comparison: JudgeComparison = decode(&reply, "t").unwrap();
        let outputs = &comparison.calls[0].outputs;
        assert!(matches!(&outputs[0], OutputResult::Mismatch { kind: MismatchKind::Dtype, .. }));
        assert!(matches!(&outputs[1], OutputResult::Compared(c) if c.flashinfer_bench_pass && c.elements == 6));
        let status: Status = decode(&json!({"ok": false, "error": "KeyError: 'x'"}), "t").unwrap();
        assert_eq!(status.why(), "KeyError: 'x'");
    }
}
