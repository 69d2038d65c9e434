//! Records of a runner session, as kernelindex.dev/v1alpha1 manifests: one BenchmarkProtocol
//! (kernelindex-rerun-v2-<input rule>), one ExecutionEnvironment, an ImplementationRevision per implementation,
//! the OperationSpec and WorkloadCases (reused verbatim from a catalog export when one is given, so
//! the runs join the index's existing workloads), and a BenchmarkRun per implementation and workload
//! with its raw samples as a digested artifact. Digests are `ki_model::identity::object_digest`.
//!
//! The environment's spec holds only what does not change between sessions on one machine (GPU,
//! architecture, memory, driver, CUDA, NVRTC, OS), so that every implementation measured on it shares
//! one environment key and so one comparison group; what a session observed (SM count, L2, clocks at
//! the start, the calibration) goes into metadata labels and `session.json`.
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use ki_model::rows::{BenchmarkRunRow, MeasurementRow, Row, RunFacts};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::definition::Definition;
use crate::execute::WorkloadRun;
use crate::gpu::{Calibration, GpuSession};
use crate::materialize::WorkloadCase;
use crate::protocol::PerCallMethod;
use crate::protocol::{COMPARABILITY_FAMILY, PROTOCOL_VERSION, TIMER, TimingProtocol};
use crate::stats::SampleSummary;

const API_VERSION: &str = "kernelindex.dev/v1alpha1";
const HARNESS_REPOSITORY: &str = "https://github.com/SamMausberg/KernelIndex";

/// See [`RecordWriter::entity_created_at`]: when KernelIndex's runner first wrote records.
const ENTITY_CREATED_AT: &str = "2026-11-30T00:00:00Z";
/// The digest of the native kernel's CUDA source and of the Rust launcher that compiles it and
/// picks its variant and schedule per call.
fn native_source_digest() -> String {
    sha256_of(
        &[ki_kernels::gqa_paged_decode::SOURCE.as_bytes(), ki_kernels::gqa_paged_decode::LAUNCHER_SOURCE.as_bytes()]
            .concat(),
    )
}

pub fn sha256_of(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// The install recipe a runner implementation's rows carry, (`installKind`, `installCommand`): FlashInfer's
/// package, and the native kernel's build from source ([`ki_kernels::GQA_PAGED_DECODE_INSTALL_RECIPE`]); none
/// for a Python file given by path.
pub fn install_recipe(label: &str) -> Option<(&'static str, &'static str)> {
    if label.starts_with("flashinfer") {
        Some(("pip", "pip install flashinfer-python==0.5.3"))
    } else if label == "kernelindex-native" {
        Some(("source", ki_kernels::GQA_PAGED_DECODE_INSTALL_RECIPE))
    } else {
        None
    }
}

fn digest(manifest: &Value) -> Result<String> {
    ki_model::identity::object_digest(manifest).map_err(|e| anyhow!("digesting a manifest: {e}"))
}

/// The hardware block of an environment manifest for a device as the driver names it: the
/// product is the GPU model as the index names it (`ki_model::gpu::model_of_device`: "NVIDIA H100
/// 80GB HBM3" is an "NVIDIA H100"), the rest of the driver's name its form factor; a name that is
/// no known model's is kept whole.
fn hardware_block(device: &str, architecture: &str, memory_bytes: u64) -> Value {
    let mut block = json!({"vendor": "nvidia", "product": device, "architecture": architecture, "memoryBytes": memory_bytes, "count": 1});
    if let Some((model, form)) = ki_model::gpu::model_of_device(device) {
        block["product"] = json!(model);
        if let Some(form) = form {
            block["formFactor"] = json!(form);
        }
    }
    block
}

/// Lower-case name for manifest metadata (`^[a-z0-9][a-z0-9._-]*$`).
fn slug(text: &str) -> String {
    let s: String = text
        .to_ascii_lowercase()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' || c == '-' { c } else { '-' })
        .collect();
    s.trim_matches('-').chars().take(200).collect()
}

/// What the machine is, read at the session's start.
#[derive(Clone, Debug, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionFacts {
    pub device: crate::gpu::DeviceProperties,
    /// `nvidia-smi` fields read at the start (driver, clocks, persistence), when it is there.
    pub nvidia_smi: BTreeMap<String, String>,
    pub operating_system: Option<String>,
    pub kernel: Option<String>,
    pub worker: Option<Value>,
    pub started_at: String,
}

pub(crate) fn nvidia_smi_facts() -> BTreeMap<String, String> {
    let fields = "name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,persistence_mode,power.limit,temperature.gpu";
    let output = std::process::Command::new("nvidia-smi")
        .args([&format!("--query-gpu={fields}"), "--format=csv,noheader,nounits"])
        .output();
    let mut facts = BTreeMap::new();
    if let Ok(output) = output {
        let text = String::from_utf8_lossy(&output.stdout);
        if let Some(line) = text.lines().next() {
            for (key, value) in fields.split(',').zip(line.split(',')) {
                facts.insert(key.to_string(), value.trim().to_string());
            }
        }
    }
    facts
}

impl SessionFacts {
    pub fn read(session: &GpuSession, worker: Option<Value>) -> Result<SessionFacts> {
        let os = std::fs::read_to_string("/etc/os-release").ok().and_then(|t| {
            t.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=").map(|v| v.trim_matches('"').to_string()))
        });
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").ok().map(|s| s.trim().to_string());
        Ok(SessionFacts {
            device: session.properties.clone(),
            nvidia_smi: nvidia_smi_facts(),
            operating_system: os,
            kernel,
            worker,
            started_at: ki_model::utc::now_seconds(),
        })
    }

    fn cuda_version(&self) -> String {
        let v = self.device.driver_cuda_version;
        format!("{}.{}", v / 1000, (v % 1000) / 10)
    }

    fn architecture(&self) -> String {
        format!("sm_{}{}", self.device.compute_capability.0, self.device.compute_capability.1)
    }
}

pub fn protocol_manifest(protocol: &TimingProtocol) -> Value {
    let notes: String = protocol.description().chars().take(1000).collect();
    json!({
        "apiVersion": API_VERSION,
        "kind": "BenchmarkProtocol",
        "metadata": {
            "name": protocol.name(),
            "title": format!("KernelIndex controlled re-run, protocol v2, {} inputs", protocol.input_rule.name())
        },
        "spec": {
            "harness": {"name": "kernelindex-runner", "version": PROTOCOL_VERSION, "repository": HARNESS_REPOSITORY},
            "measurement": {
                "timer": TIMER,
                "synchronization": "stream_ordered",
                "compileIncluded": false,
                "setupIncluded": false,
                "warmupIterations": protocol.warmup_iterations,
                "measuredIterations": protocol.calls_per_graph * protocol.graph_pairs,
                "samples": protocol.per_call_samples(),
                "inputRegeneration": protocol.input_regeneration(),
                "outlierPolicy": "none; L2 flushed (over 2x L2 written) before every call, a graph of the flushes alone subtracted",
                "primaryStatistic": "median"
            },
            "correctness": {
                "reference": "KernelIndex CPU reference of the FlashInfer-Bench definition (fp32 math on bf16 inputs)",
                "comparator": "flashinfer_bench_eval"
            },
            "devicePolicy": {"clocksLocked": false},
            "comparability": {"family": COMPARABILITY_FAMILY, "notes": notes}
        }
    })
}

pub fn environment_manifest(facts: &SessionFacts, calibration: &Calibration) -> Value {
    let smi = &facts.nvidia_smi;
    let mut software = Map::new();
    if let Some(os) = &facts.operating_system {
        software.insert("operatingSystem".into(), json!(os));
    }
    if let Some(driver) = smi.get("driver_version") {
        software.insert("driver".into(), json!(driver));
    }
    software.insert("cudaToolkit".into(), json!(facts.cuda_version()));
    software.insert(
        "compiler".into(),
        json!(format!("nvrtc {}.{}", facts.device.nvrtc_version.0, facts.device.nvrtc_version.1)),
    );
    let mut labels = Map::new();
    let mut label = |k: &str, v: String| {
        labels.insert(k.to_string(), json!(v.chars().take(200).collect::<String>()));
    };
    label("sm_count", facts.device.multiprocessor_count.to_string());
    label("l2_cache_bytes", facts.device.l2_cache_bytes.to_string());
    label("max_sm_clock_khz", facts.device.max_sm_clock_khz.to_string());
    label("max_memory_clock_khz", facts.device.max_memory_clock_khz.to_string());
    for (key, field) in [
        ("sm_clock_mhz_at_start", "clocks.sm"),
        ("memory_clock_mhz_at_start", "clocks.mem"),
        ("persistence_mode", "persistence_mode"),
        ("power_limit_w", "power.limit"),
    ] {
        if let Some(v) = smi.get(field) {
            label(key, v.clone());
        }
    }
    label("empty_kernel_graph_ns", format!("{:.0}", calibration.empty_kernel_graph_ns));
    label("empty_kernel_in_graph_ns", format!("{:.0}", calibration.empty_kernel_in_graph_ns));
    label("copy_bandwidth_gbps", format!("{:.1}", calibration.copy_bandwidth_bytes_per_s / 1e9));
    if let Some(kernel) = &facts.kernel {
        label("kernel", kernel.clone());
    }
    json!({
        "apiVersion": API_VERSION,
        "kind": "ExecutionEnvironment",
        "metadata": {
            "name": slug(&format!("kernelindex-{}-{}", facts.device.name, facts.architecture())),
            "title": format!("KernelIndex runner · {}", facts.device.name),
            "labels": labels
        },
        "spec": {
            "hardware": hardware_block(&facts.device.name, &facts.architecture(), facts.device.total_memory_bytes as u64),
            "software": software,
            "settings": {"clocksLocked": false}
        }
    })
}

/// The ImplementationRevision of one implementation label.
pub fn implementation_manifest(label: &str, operation_digest: &str, worker: Option<&Value>) -> Value {
    let flashinfer_version =
        worker.and_then(|w| w.get("flashinfer")).and_then(Value::as_str).unwrap_or("0.5.3").to_string();
    let (project, callable, support_note, build_variants, source) = match label {
        "flashinfer-tc" | "flashinfer-notc" => {
            let tc = label == "flashinfer-tc";
            (
                json!({"repository": "https://github.com/flashinfer-ai/flashinfer", "version": flashinfer_version}),
                json!({"language": "python", "symbol": "flashinfer.BatchDecodeWithPagedKVCacheWrapper.run", "interface": "kernelindex_worker"}),
                format!(
                    "FlashInfer {flashinfer_version} BatchDecodeWithPagedKVCacheWrapper, NHD layout, use_tensor_cores={tc}, planned outside the timing"
                ),
                json!([{"name": format!("use-tensor-cores-{tc}"), "install": {"kind": "pip", "package": "flashinfer-python", "version": flashinfer_version}}]),
                None,
            )
        }
        "kernelindex-native" => (
            // The kernel's and its launcher's sources are its revision: the runner runs the CUDA
            // source it embeds, with the variant and schedule the launcher picks.
            json!({"repository": HARNESS_REPOSITORY, "version": format!("{}+src.{}", env!("CARGO_PKG_VERSION"), &native_source_digest()[7..19])}),
            json!({"language": "cuda", "path": "crates/kernels/cuda/gqa_paged_decode.cu", "symbol": "gqa_paged_decode", "interface": "kernelindex_runner"}),
            "KernelIndex native GQA paged-decode kernel, compiled by NVRTC at run time".to_string(),
            json!([{"name": "nvrtc", "install": {"kind": "source", "repository": HARNESS_REPOSITORY}}]),
            Some(
                json!({"contentDigest": sha256_of(ki_kernels::gqa_paged_decode::SOURCE.as_bytes()), "fileName": "gqa_paged_decode.cu", "sizeBytes": ki_kernels::gqa_paged_decode::SOURCE.len()}),
            ),
        ),
        other => {
            // A python:PATH file is identified by its contents (the path alone says nothing).
            let path = other.trim_start_matches("python:");
            let source = std::fs::read(path).ok().map(|bytes| {
                let name = std::path::Path::new(path)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                json!({"contentDigest": sha256_of(&bytes), "fileName": name, "sizeBytes": bytes.len()})
            });
            let version = source
                .as_ref()
                .and_then(|s| s["contentDigest"].as_str())
                .map(|d| format!("src.{}", &d[7..19]))
                .unwrap_or_else(|| "unreadable".into());
            (
                json!({"version": version}),
                json!({"language": "python", "path": path, "symbol": "run", "interface": "kernelindex_worker"}),
                format!("Python implementation {other}"),
                json!([]),
                source,
            )
        }
    };
    let mut spec = json!({
        "projectRevision": project,
        "operation": {"specDigest": operation_digest},
        "callable": callable,
        "support": {"hardwareArchitectures": ["sm_90"], "dtypes": ["bf16", "fp32", "int32"]},
        "licensing": {"declared": "Apache-2.0"}
    });
    if build_variants.as_array().is_some_and(|a| !a.is_empty()) {
        spec["buildVariants"] = build_variants;
    }
    if let Some(source) = source {
        spec["source"] = source;
    }
    json!({
        "apiVersion": API_VERSION,
        "kind": "ImplementationRevision",
        "metadata": {"name": slug(label), "title": label, "description": support_note},
        "spec": spec
    })
}

/// An OperationSpec for a definition that the catalog does not hold (the catalog's own is used when
/// it does, so digests match the index).
pub fn operation_manifest(definition: &Definition) -> Result<Value> {
    let dtype = |d: crate::tensor::DType| match d {
        crate::tensor::DType::BF16 => "bf16",
        crate::tensor::DType::F32 => "fp32",
        crate::tensor::DType::F16 => "fp16",
        other => other.definition_name(),
    };
    let entries = |specs: Vec<crate::definition::TensorSpec>| -> Vec<Value> {
        specs
            .into_iter()
            .map(|s| match s.shape {
                Some(shape) => {
                    json!({"name": s.name, "tensor": {"shape": shape, "dtype": dtype(s.dtype)}})
                }
                None => json!({"name": s.name, "scalar": {"dtype": dtype(s.dtype)}}),
            })
            .collect()
    };
    let axes: Map<String, Value> = definition
        .axes
        .iter()
        .map(|(name, axis)| {
            let v = match (axis.kind.as_str(), axis.value) {
                ("const", Some(value)) => {
                    json!({"role": "constant", "type": "integer", "value": value})
                }
                _ => json!({"role": "variable", "type": "integer"}),
            };
            (name.clone(), v)
        })
        .collect();
    Ok(json!({
        "apiVersion": API_VERSION,
        "kind": "OperationSpec",
        "metadata": {"name": slug(&definition.name), "title": definition.name},
        "spec": {
            "family": "gqa-paged",
            "axes": axes,
            "inputs": entries(definition.input_specs().map_err(|e| anyhow!(e))?),
            "outputs": entries(definition.output_specs().map_err(|e| anyhow!(e))?),
            "semantics": {"mutation": "none", "determinism": "unspecified"}
        }
    }))
}

/// Which method gave `latency`, and under which inputs, in words (the run record's description).
fn run_description(run: &WorkloadRun, protocol: &TimingProtocol) -> String {
    let method = match run.per_call_method {
        Some(PerCallMethod::InGraph) => format!(
            "latency is the per-call device time inside one captured CUDA graph ({} x (L2 flush, call) minus the {} \
             flushes, / {}), the same value as latency_in_graph",
            protocol.calls_per_graph, protocol.calls_per_graph, protocol.calls_per_graph
        ),
        Some(PerCallMethod::Cupti) => "latency is the CUPTI device time of the kernels one call launches, summed, the \
                                       same value as latency_cupti (the callable could not be captured in a graph)"
            .to_string(),
        None => "no per-call latency: the run failed".to_string(),
    };
    format!("{method}; latency_eager and latency_graph_replay beside it. Inputs: {}.", protocol.input_regeneration())
}

fn ns(value: f64) -> Value {
    json!(value.max(0.0).round() as u64)
}

fn latency_block(summary: &SampleSummary, sorted: &[f64]) -> Value {
    json!({
        "median": ns(summary.median),
        "mean": ns(summary.mean),
        "p05": ns(crate::stats::quantile_sorted(sorted, 0.05)),
        "p95": ns(crate::stats::quantile_sorted(sorted, 0.95)),
        "minimum": ns(summary.min),
        "maximum": ns(summary.max),
        "confidence95": [ns(summary.ci95_low), ns(summary.ci95_high)]
    })
}

/// Writes a session's records into a directory: manifests/, samples/, runs.jsonl, results.md.
pub struct RecordWriter {
    root: PathBuf,
    protocol_manifest: Value,
    environment_manifest: Value,
    operation_row: Option<Map<String, Value>>,
    catalog_workload_rows: Vec<Map<String, Value>>,
    /// Catalog rows for `ki catalog import`, in table order.
    rows: BTreeMap<&'static str, Vec<Value>>,
    protocol_digest: String,
    environment_digest: String,
    operation_digest: String,
    catalog_workloads: Vec<Value>,
    worker: Option<Value>,
    implementations: BTreeMap<String, String>,
    facts: SessionFacts,
    calibration: Calibration,
    protocol: TimingProtocol,
}

fn write_json(path: &Path, value: &Value) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)?;
    text.push('\n');
    std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
}

/// An operation row and its workload rows, as a catalog export holds them.
pub type OperationRows = (Map<String, Value>, Vec<Map<String, Value>>);

/// A stable row id: UUID v8 from sha256("kernelindex:kernelindex-rerun:<table>:<key>").
pub fn row_id(table: &str, key: &str) -> String {
    let digest = Sha256::digest(format!("kernelindex:kernelindex-rerun:{table}:{key}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Uuid::new_v8(bytes).to_string()
}

fn row(table: &str, fields: Value) -> Value {
    json!({"table": table, "row": fields})
}

/// A typed catalog row (`ki_model::rows`) as a line of catalog-rows.jsonl.
fn typed_row(typed: Row) -> Result<Value> {
    Ok(row(typed.table(), Value::Object(typed.into_map())))
}

impl RecordWriter {
    pub fn new(
        root: &Path,
        definition: &Definition,
        protocol: &TimingProtocol,
        facts: &SessionFacts,
        calibration: &Calibration,
        catalog: Option<OperationRows>,
    ) -> Result<RecordWriter> {
        for sub in ["manifests", "samples"] {
            std::fs::create_dir_all(root.join(sub))?;
        }
        let protocol_manifest = protocol_manifest(protocol);
        let environment = environment_manifest(facts, calibration);
        write_json(&root.join("manifests/benchmark-protocol.json"), &protocol_manifest)?;
        write_json(&root.join("manifests/execution-environment.json"), &environment)?;
        let (operation_row, catalog_workload_rows) = match catalog {
            Some((operation, workloads)) => (Some(operation), workloads),
            None => (None, Vec::new()),
        };
        let operation = match &operation_row {
            Some(row) => row["manifest"].clone(),
            None => operation_manifest(definition)?,
        };
        let catalog_workloads: Vec<Value> = catalog_workload_rows.iter().map(|r| r["manifest"].clone()).collect();
        let operation_digest = digest(&operation)?;
        write_json(&root.join(format!("manifests/operation-{}.json", slug(&definition.name))), &operation)?;
        write_json(
            &root.join("session.json"),
            &json!({"facts": facts, "calibration": calibration, "protocol": protocol, "protocolDescription": protocol.description()}),
        )?;
        Ok(RecordWriter {
            root: root.to_path_buf(),
            protocol_manifest: protocol_manifest.clone(),
            environment_manifest: environment.clone(),
            operation_row,
            catalog_workload_rows,
            rows: BTreeMap::new(),
            protocol_digest: digest(&protocol_manifest)?,
            environment_digest: digest(&environment)?,
            operation_digest,
            catalog_workloads,
            worker: facts.worker.clone(),
            implementations: BTreeMap::new(),
            facts: facts.clone(),
            calibration: calibration.clone(),
            protocol: *protocol,
        })
    }

    /// The catalog's WorkloadCase with the same axes, else one written from the workload.
    fn workload_manifest(&self, definition_name: &str, workload: &WorkloadCase) -> Value {
        let found = self.catalog_workloads.iter().find(|m| {
            let axes = &m["spec"]["axes"];
            workload.axes.iter().all(|(k, v)| axes.get(k).and_then(Value::as_i64) == Some(*v))
                && axes.as_object().is_some_and(|a| a.len() == workload.axes.len())
        });
        if let Some(found) = found {
            return found.clone();
        }
        let short = workload.uuid.split('-').next().unwrap_or("case");
        json!({
            "apiVersion": API_VERSION,
            "kind": "WorkloadCase",
            "metadata": {"name": slug(&format!("{definition_name}-{short}")), "title": format!("{definition_name} · {:?}", workload.axes)},
            "spec": {
                "operationSpecDigest": self.operation_digest,
                "axes": workload.axes,
                "tensors": {},
                "correctness": {"comparator": "flashinfer_bench_eval"}
            }
        })
    }

    fn implementation_digest(&mut self, label: &str) -> Result<String> {
        if let Some(d) = self.implementations.get(label) {
            return Ok(d.clone());
        }
        let manifest = implementation_manifest(label, &self.operation_digest, self.worker.as_ref());
        let d = digest(&manifest)?;
        write_json(&self.root.join(format!("manifests/implementation-{}.json", slug(label))), &manifest)?;
        self.add_implementation_rows(label, &manifest, &d);
        self.implementations.insert(label.to_string(), d.clone());
        Ok(d)
    }

    pub fn write_run(&mut self, workload: &WorkloadCase, run: &WorkloadRun) -> Result<Value> {
        let workload_manifest = self.workload_manifest(&run.definition, workload);
        let workload_digest = digest(&workload_manifest)?;
        // A workload given by --axis has no uuid: name its files by its digest instead.
        let short = match workload.uuid.split('-').next() {
            Some(head) if !head.is_empty() => head.to_string(),
            _ => workload_digest.trim_start_matches("sha256:").chars().take(8).collect(),
        };
        let workload_file = self.root.join(format!("manifests/workload-{}.json", slug(&short)));
        if !workload_file.exists() {
            write_json(&workload_file, &workload_manifest)?;
        }
        let implementation_digest = self.implementation_digest(&run.implementation)?;
        let samples = json!({
            "implementation": run.implementation,
            "workload": run.workload_uuid,
            "unit": "ns",
            "trials": run.trials.iter().map(|t| json!({"seed": t.seed, "eager": t.timing.eager_ns, "graphReplay": t.timing.graph_ns, "inGraphPerCall": t.timing.in_graph_ns, "cuptiPerCall": t.timing.cupti_ns})).collect::<Vec<_>>()
        });
        let samples_bytes = serde_json::to_vec(&samples)?;
        let samples_name = format!("samples/{}-{}.json", slug(&run.implementation), slug(&short));
        std::fs::write(self.root.join(&samples_name), &samples_bytes)?;
        let samples_ref = json!({"uri": samples_name, "digest": sha256_of(&samples_bytes)});
        let status = if run.error.is_some() {
            "runtime_error"
        } else if run.correct {
            "passed"
        } else {
            "incorrect_numerical"
        };
        let mut spec = json!({
            "implementationDigest": implementation_digest,
            "workloadDigest": workload_digest,
            "protocolDigest": self.protocol_digest,
            "environmentDigest": self.environment_digest,
            "status": status,
            "observedAt": ki_model::utc::now_seconds(),
            "evidence": {"rawSamples": samples_ref.clone()}
        });
        if !run.worst.is_empty() {
            let max_abs = run.worst.iter().map(|c| c.max_abs_error).fold(0.0, f64::max);
            let max_rel = run.worst.iter().map(|c| c.max_rel_error).fold(0.0, f64::max);
            let matched = run.worst.iter().map(|c| c.matched_ratio).fold(1.0, f64::min);
            spec["correctness"] = json!({
                "comparator": "flashinfer_bench_eval",
                "maximumAbsoluteError": max_abs,
                "maximumRelativeError": if max_rel.is_finite() { max_rel } else { f64::MAX },
                "matchedRatio": matched
            });
        }
        if let (Some(per_call), Some(method)) = (&run.per_call, run.per_call_method) {
            let mut sorted: Vec<f64> = run
                .trials
                .iter()
                .flat_map(|t| match method {
                    PerCallMethod::InGraph => t.timing.in_graph_ns.iter().flatten().copied(),
                    PerCallMethod::Cupti => t.timing.cupti_ns.iter().flatten().copied(),
                })
                .collect();
            sorted.sort_by(f64::total_cmp);
            spec["timing"] = json!({
                "primaryStatistic": "median",
                "samples": per_call.count,
                "latencyNs": latency_block(per_call, &sorted),
                "rawSamples": samples_ref
            });
            let median = |metric: &str, s: &SampleSummary| json!({"metric": metric, "unit": "ns", "statistic": "median", "value": s.median.max(0.0).round(), "sampleCount": s.count});
            let mut measurements = vec![median("latency", per_call), median(method.metric(), per_call)];
            if let Some(eager) = &run.eager {
                measurements.push(median("latency_eager", eager));
            }
            if let Some(graph) = &run.graph {
                measurements.push(median("latency_graph_replay", graph));
            }
            if let Some(p) = run.per_call_percent_of_speed_of_light {
                measurements.push(json!({"metric": "speed_of_light", "unit": "percent", "statistic": "median", "value": (p * 100.0).round() / 100.0}));
            }
            spec["measurements"] = json!(measurements);
        }
        let manifest = json!({
            "apiVersion": API_VERSION,
            "kind": "BenchmarkRun",
            "metadata": {
                "name": slug(&format!("kernelindex-rerun-{}-{}", run.implementation, short)),
                "title": format!("{} · {} · workload {}", run.implementation, run.definition, run.workload_uuid),
                "description": run_description(run, &self.protocol),
                "labels": {
                    "latency_method": run.per_call_method.map_or("none", PerCallMethod::metric),
                    "input_rule": self.protocol.input_rule.name()
                }
            },
            "spec": spec
        });
        write_json(
            &self.root.join(format!("manifests/run-{}-{}.json", slug(&run.implementation), slug(&short))),
            &manifest,
        )?;
        self.add_run_rows(&manifest, &workload_manifest, run)?;
        let mut line = serde_json::to_value(run)?;
        // The raw samples live in samples/; keep runs.jsonl to summaries and comparisons.
        if let Some(trials) = line.get_mut("trials").and_then(Value::as_array_mut) {
            for t in trials {
                t.as_object_mut().map(|o| o.remove("timing"));
            }
        }
        line["runDigest"] = json!(digest(&manifest)?);
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(self.root.join("runs.jsonl"))?;
        writeln!(file, "{}", serde_json::to_string(&line)?)?;
        Ok(manifest)
    }

    /// createdAt of the rows every session writes alike (the source, projects, implementations):
    /// one fixed time, so that a second session's rows equal the first's and import as unchanged
    /// instead of conflicting on their creation time. Runs carry their own times.
    fn entity_created_at(&self) -> Value {
        json!(ENTITY_CREATED_AT)
    }

    fn source_id(&self) -> String {
        row_id("sources", "kernelindex-rerun")
    }

    fn add_implementation_rows(&mut self, label: &str, manifest: &Value, implementation_digest: &str) {
        let Some(operation_row) = &self.operation_row else {
            return;
        };
        let (project_slug, project_name, repository, language) = if label.starts_with("flashinfer") {
            ("flashinfer-library", "FlashInfer", "https://github.com/flashinfer-ai/flashinfer", "python")
        } else if label == "kernelindex-native" {
            ("kernelindex", "KernelIndex", HARNESS_REPOSITORY, "cuda")
        } else {
            ("kernelindex-python", "KernelIndex Python implementations", HARNESS_REPOSITORY, "python")
        };
        let project_id = row_id("projects", project_slug);
        let created = self.entity_created_at();
        let operation_id = operation_row["id"].clone();
        let projects = self.rows.entry("projects").or_default();
        if !projects.iter().any(|r| r["row"]["id"] == json!(project_id)) {
            let host_id = repository.trim_start_matches("https://github.com/");
            projects.push(row("projects", json!({
                "id": project_id, "slug": project_slug, "name": project_name, "normalizedName": project_name.to_lowercase(),
                "canonicalUrl": repository, "licenseExpression": "Apache-2.0",
                "manifest": {"apiVersion": API_VERSION, "kind": "SoftwareProject", "metadata": {"name": project_slug},
                    "spec": {"name": project_name, "repository": repository, "host": {"kind": "github", "id": host_id}}},
                "createdAt": created
            })));
        }
        let install = install_recipe(label);
        let implementation_row = row(
            "implementations",
            json!({
                "id": row_id("implementations", implementation_digest),
                "projectId": project_id,
                "operationId": operation_id,
                "slug": slug(&format!("{label}-{}", &implementation_digest[7..13])),
                "implementationDigest": implementation_digest,
                "sourceRevision": manifest["spec"]["projectRevision"].get("version").or(manifest["spec"]["projectRevision"].get("commit")).cloned().unwrap_or(Value::Null),
                "language": language,
                "framework": Value::Null,
                "targetArchitectures": ["sm_90"],
                "licenseExpression": "Apache-2.0",
                "sourceAvailable": true,
                "installable": install.is_some(),
                "title": label,
                "installKind": install.map_or(Value::Null, |(kind, _)| json!(kind)),
                "installCommand": install.map_or(Value::Null, |(_, command)| json!(command)),
                "licenseDeclared": "Apache-2.0",
                "manifest": manifest,
                "createdAt": created,
                "supersedesId": Value::Null
            }),
        );
        self.rows.entry("implementations").or_default().push(implementation_row);
    }

    fn add_run_rows(&mut self, run_manifest: &Value, workload_manifest: &Value, run: &WorkloadRun) -> Result<()> {
        let workload_digest = digest(workload_manifest)?;
        let Some(workload_row) =
            self.catalog_workload_rows.iter().find(|r| r["workloadDigest"] == json!(workload_digest))
        else {
            return Ok(()); // only runs of the catalog's own workloads become catalog rows
        };
        let keys = ki_model::identity::benchmark_run_keys(
            run_manifest,
            &self.protocol_manifest,
            &self.environment_manifest,
            workload_manifest,
        )
        .map_err(|e| anyhow!("run keys: {e}"))?;
        let run_id = row_id("benchmark_runs", &keys.run_digest);
        if let Some(p) = keys.primary.as_ref() {
            let id = row_id("measurements", &format!("{}:{}", keys.run_digest, p.metric_key()));
            let measurement = MeasurementRow::primary(id, run_id.clone(), p);
            self.rows.entry("measurements").or_default().push(typed_row(measurement.into())?);
        }
        let facts = RunFacts {
            id: run_id,
            implementation_id: row_id(
                "implementations",
                run_manifest["spec"]["implementationDigest"].as_str().unwrap_or(""),
            ),
            workload_id: workload_row["id"].as_str().unwrap_or_default().to_string(),
            source_id: Some(self.source_id()),
            // Published when observed: the runner's own runs.
            published_at: run_manifest["spec"]["observedAt"].as_str().map(str::to_string),
            reported: false,
            reproduced_by_kernelindex: true,
            independent_replication_count: 0,
            source_available: true,
            installable: install_recipe(&run.implementation).is_some(),
            license_expression: Some("Apache-2.0".to_string()),
            has_raw_evidence: true,
            label: self.protocol.name().to_string(),
        };
        let run_row = BenchmarkRunRow::new(
            facts,
            &keys,
            run_manifest.clone(),
            self.protocol_manifest.clone(),
            self.environment_manifest.clone(),
        )
        .map_err(|e| anyhow!("run row: {e}"))?;
        let run_row = typed_row(run_row.into())?;
        self.rows.entry("benchmark_runs").or_default().push(run_row);
        Ok(())
    }

    /// Writes `catalog-rows.jsonl`: the session's rows in the catalog export format (source, projects,
    /// the catalog's own operation and workload rows, implementations, runs, measurements), for
    /// `ki catalog import`. Nothing is written when no catalog export was given.
    fn write_catalog_rows(&self) -> Result<()> {
        let Some(operation_row) = &self.operation_row else {
            return Ok(());
        };
        let mut lines: Vec<Value> = vec![row(
            "sources",
            json!({
                "id": self.source_id(), "slug": "kernelindex-rerun", "kind": "benchmark",
                "name": "KernelIndex controlled re-runs", "policy": Value::Null, "createdAt": self.entity_created_at()
            }),
        )];
        lines.extend(self.rows.get("projects").cloned().unwrap_or_default());
        lines.push(row("operations", Value::Object(operation_row.clone())));
        let used: Vec<&Value> = self
            .rows
            .get("benchmark_runs")
            .map(|r| r.iter().map(|r| &r["row"]["workloadId"]).collect())
            .unwrap_or_default();
        for workload in &self.catalog_workload_rows {
            if used.contains(&&workload["id"]) {
                lines.push(row("workloads", Value::Object(workload.clone())));
            }
        }
        for table in ["implementations", "benchmark_runs", "measurements"] {
            lines.extend(self.rows.get(table).cloned().unwrap_or_default());
        }
        let mut text = String::new();
        for line in lines {
            text.push_str(&serde_json::to_string(&line)?);
            text.push('\n');
        }
        std::fs::write(self.root.join("catalog-rows.jsonl"), text)?;
        Ok(())
    }

    /// Writes results.md (one row per workload and implementation) and catalog-rows.jsonl.
    pub fn finish(&self, runs: &[WorkloadRun], command: &str) -> Result<()> {
        self.write_catalog_rows()?;
        let mut md = String::new();
        let smi = &self.facts.nvidia_smi;
        md.push_str(&format!(
            "# {} on {}\n\nDate (UTC): {}. GPU: {} ({} SMs, {} GiB, L2 {} MiB). Driver {}, CUDA {}, NVRTC {}.{}. Worker: {}.\n\n",
            runs.first().map_or("", |r| r.definition.as_str()),
            self.facts.device.name,
            self.facts.started_at,
            self.facts.device.name,
            self.facts.device.multiprocessor_count,
            self.facts.device.total_memory_bytes >> 30,
            self.facts.device.l2_cache_bytes >> 20,
            smi.get("driver_version").map_or("?", String::as_str),
            self.facts.cuda_version(),
            self.facts.device.nvrtc_version.0,
            self.facts.device.nvrtc_version.1,
            self.facts.worker.as_ref().map_or("none".into(), |w| w.to_string()),
        ));
        md.push_str(&format!(
            "Clocks at start: SM {} MHz, memory {} MHz (max SM {} MHz). Calibration: empty kernel {:.2} µs eager / {:.2} µs graph replay after a flush / {:.2} µs per call in one graph; device-to-device copy {:.0} GB/s (read + write).\n\n",
            smi.get("clocks.sm").map_or("?", String::as_str),
            smi.get("clocks.mem").map_or("?", String::as_str),
            smi.get("clocks.max.sm").map_or("?", String::as_str),
            self.calibration.empty_kernel_eager_ns / 1e3,
            self.calibration.empty_kernel_graph_ns / 1e3,
            self.calibration.empty_kernel_in_graph_ns / 1e3,
            self.calibration.copy_bandwidth_bytes_per_s / 1e9
        ));
        md.push_str(&format!("Protocol: {}\n\nCommand:\n\n```\n{command}\n```\n\n", self.protocol.description()));
        md.push_str("Latencies in µs: per call = the published `latency` (in one graph, or CUPTI where marked *), median of all samples with its [bootstrap 95% interval]; replay = a one-call graph replayed after a flush; eager = one call between events after a flush. SOL = minimum bytes ÷ per-call median ÷ measured copy bandwidth. Correct = every output of every trial passes flashinfer_bench_eval; rel L2 is the worst over outputs and trials.\n\n");
        md.push_str("| # | workload | batch | tokens | implementation | per call µs | 95% interval | replay µs | eager µs | SOL % | correct | rel L2 |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
        let mut by_workload: Vec<&str> = Vec::new();
        for run in runs {
            if !by_workload.contains(&run.workload_uuid.as_str()) {
                by_workload.push(&run.workload_uuid);
            }
            let n = by_workload.iter().position(|u| *u == run.workload_uuid).unwrap() + 1;
            let us =
                |s: &Option<SampleSummary>| s.as_ref().map_or("-".to_string(), |s| format!("{:.2}", s.median / 1e3));
            let interval = run
                .per_call
                .as_ref()
                .map_or("-".to_string(), |s| format!("[{:.2}, {:.2}]", s.ci95_low / 1e3, s.ci95_high / 1e3));
            let sol = |p: Option<f64>| p.map_or("-".to_string(), |p| format!("{p:.1}"));
            let l2 = run.worst.iter().map(|c| c.relative_l2_error).fold(0.0, f64::max);
            md.push_str(&format!(
                "| {n} | {} | {} | {} | {} | {}{} | {} | {} | {} | {} | {} | {:.2e} |\n",
                run.workload_uuid.split('-').next().unwrap_or(""),
                run.axes.get("batch_size").copied().unwrap_or(0),
                run.axes.get("num_kv_indices").copied().unwrap_or(0),
                run.implementation,
                us(&run.per_call),
                if run.per_call_method == Some(PerCallMethod::Cupti) { "*" } else { "" },
                interval,
                us(&run.graph),
                us(&run.eager),
                sol(run.per_call_percent_of_speed_of_light),
                if run.error.is_some() {
                    "error"
                } else if run.correct {
                    "yes"
                } else {
                    "NO"
                },
                l2
            ));
        }
        let mut labels: Vec<&str> = runs.iter().map(|r| r.implementation.as_str()).collect();
        labels.sort();
        labels.dedup();
        md.push_str("\n## Summary\n\n| implementation | workloads | all correct | geomean per call µs | geomean replay µs | geomean eager µs |\n|---|---|---|---|---|---|\n");
        for label in labels {
            let mine: Vec<&WorkloadRun> = runs.iter().filter(|r| r.implementation == label).collect();
            let medians = |pick: fn(&WorkloadRun) -> &Option<SampleSummary>| -> Vec<f64> {
                mine.iter().filter_map(|r| pick(r).as_ref().map(|s| s.median / 1e3)).collect()
            };
            let (per_call, graph, eager) = (medians(|r| &r.per_call), medians(|r| &r.graph), medians(|r| &r.eager));
            let geomean = |v: &[f64]| {
                if v.is_empty() { "-".to_string() } else { format!("{:.2}", crate::stats::geometric_mean(v)) }
            };
            md.push_str(&format!(
                "| {label} | {} | {} | {} | {} | {} |\n",
                mine.len(),
                mine.iter().all(|r| r.correct),
                geomean(&per_call),
                geomean(&graph),
                geomean(&eager)
            ));
        }
        std::fs::write(self.root.join("results.md"), md)?;
        Ok(())
    }
}

// ------------------------------------------------------------------------------------------------
// `ki verify` (issue 13): protocol kernelindex-rerun-v2, third-party solutions, baselines, verdicts.
// New functions beside the v1 writer above; they share its row, slug and digest helpers.

/// The timing protocol of `ki verify` (docs/PROTOCOL-V2.md), per input rule.
pub const PROTOCOL_V2_NAME: &str = "kernelindex-verify-v3";

pub const PROTOCOL_V2_DESCRIPTION: &str = "kernelindex-verify-v3: each timed call's random inputs are rewritten on \
the GPU from a seed drawn from the OS at its turn (in a graph, by a kernel reading seeds written before each replay): \
no call sees values seen before. Over 2x L2 written before every timed call. Primary: latency_in_graph for a \
capturable callable (graph of N x (refill, flush, call) less a graph of N x (refill, flush), per call); else \
latency_cupti, the union of the device intervals of every kernel, copy and memset between markers around the call, \
whatever launched them. Median, bootstrap 95% interval. Figures must agree (CUPTI vs eager less launch overhead, \
in-graph vs CUPTI), else unmeasurable. A separate judge checks outputs against the reference on each checked call's \
own inputs (first, eager, random and last graph replays, CUPTI); outputs poisoned before and scanned after every \
call; monkey patches, threads, child processes, side streams, lazy outputs, graphs that skip work refused; \
times under 80% of the speed-of-light bound refused.";

/// BenchmarkProtocol `kernelindex-rerun-v2-<rule>` (docs/PROTOCOL-V2.md: the rule is part of the key).
pub fn protocol_manifest_v2(rule: &str, trials: usize, samples_per_trial: usize) -> Value {
    let notes: String = PROTOCOL_V2_DESCRIPTION.chars().take(1000).collect();
    json!({
        "apiVersion": API_VERSION,
        "kind": "BenchmarkProtocol",
        "metadata": {"name": slug(&format!("{PROTOCOL_V2_NAME}-{rule}")), "title": format!("KernelIndex verification, protocol v3, inputs `{rule}`")},
        "spec": {
            "harness": {"name": "kernelindex-runner", "version": PROTOCOL_V2_NAME, "repository": HARNESS_REPOSITORY},
            "measurement": {
                "timer": "cuda_graph_per_call",
                "synchronization": "device",
                "compileIncluded": false,
                "setupIncluded": false,
                "warmupIterations": 2,
                "measuredIterations": samples_per_trial,
                "samples": samples_per_trial * trials,
                "inputRegeneration": format!("per_call_{}", rule.replace('-', "_")),
                "outlierPolicy": "none; L2 flushed (over 2x L2 written) before every timed call, outside its span",
                "primaryStatistic": "median"
            },
            "correctness": {
                "reference": "the FlashInfer-Bench definition's own PyTorch reference, run on the GPU by a separate judge process",
                "comparator": "flashinfer_bench_eval"
            },
            "devicePolicy": {"clocksLocked": false},
            "comparability": {"family": "kernelindex_rerun_v2", "notes": notes}
        }
    })
}

/// What `ki verify` knows of the machine (from its judge process and nvidia-smi).
#[derive(Clone, Debug, Default, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyMachine {
    pub device: String,
    pub capability: String,
    pub sm_count: u64,
    pub memory_bytes: u64,
    pub l2_bytes: u64,
    pub driver: Option<String>,
    pub cuda: Option<String>,
    pub nvcc: Option<String>,
    pub torch: Option<String>,
    pub flashinfer: Option<String>,
    pub operating_system: Option<String>,
    pub nvidia_smi: BTreeMap<String, String>,
}

impl VerifyMachine {
    pub fn read_host(&mut self) {
        self.nvidia_smi = nvidia_smi_facts();
        self.driver = self.nvidia_smi.get("driver_version").cloned();
        self.operating_system = std::fs::read_to_string("/etc/os-release").ok().and_then(|t| {
            t.lines().find_map(|l| l.strip_prefix("PRETTY_NAME=").map(|v| v.trim_matches('"').to_string()))
        });
        self.nvcc = std::process::Command::new("nvcc").arg("--version").output().ok().and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .find_map(|l| l.split("release ").nth(1).map(|r| r.split(',').next().unwrap_or("").trim().to_string()))
        });
    }

    fn architecture(&self) -> String {
        format!("sm_{}", self.capability.replace('.', ""))
    }
}

/// The ExecutionEnvironment of a `ki verify` session: the same spec for every run on one machine.
pub fn verify_environment_manifest(machine: &VerifyMachine) -> Value {
    let mut software = Map::new();
    if let Some(os) = &machine.operating_system {
        software.insert("operatingSystem".into(), json!(os));
    }
    if let Some(driver) = &machine.driver {
        software.insert("driver".into(), json!(driver));
    }
    if let Some(cuda) = &machine.cuda {
        software.insert("cudaToolkit".into(), json!(cuda));
    }
    if let Some(nvcc) = &machine.nvcc {
        software.insert("compiler".into(), json!(format!("nvcc {nvcc}")));
    }
    let mut labels = Map::new();
    labels.insert("sm_count".into(), json!(machine.sm_count.to_string()));
    labels.insert("l2_cache_bytes".into(), json!(machine.l2_bytes.to_string()));
    if let Some(t) = &machine.torch {
        labels.insert("torch".into(), json!(t));
    }
    if let Some(f) = &machine.flashinfer {
        labels.insert("flashinfer".into(), json!(f));
    }
    for (key, field) in [("sm_clock_mhz_at_start", "clocks.sm"), ("memory_clock_mhz_at_start", "clocks.mem")] {
        if let Some(v) = machine.nvidia_smi.get(field) {
            labels.insert(key.into(), json!(v));
        }
    }
    json!({
        "apiVersion": API_VERSION,
        "kind": "ExecutionEnvironment",
        "metadata": {
            "name": slug(&format!("kernelindex-verify-{}-{}", machine.device, machine.architecture())),
            "title": format!("KernelIndex verify · {}", machine.device),
            "labels": labels
        },
        "spec": {
            "hardware": hardware_block(&machine.device, &machine.architecture(), machine.memory_bytes),
            "software": software,
            "settings": {"clocksLocked": false}
        }
    })
}

fn family_name(op_type: &str) -> String {
    op_type.replace('_', "-")
}

/// An OperationSpec for any FlashInfer-Bench definition (the catalog's own is used when it has one).
pub fn definition_operation_manifest(definition: &Definition) -> Result<Value> {
    let mut manifest = operation_manifest(definition)?;
    manifest["spec"]["family"] = json!(family_name(&definition.op_type));
    Ok(manifest)
}

/// A WorkloadCase for a workload the catalog does not hold.
pub fn verify_workload_manifest(
    definition: &Definition,
    operation_digest: &str,
    axes: &BTreeMap<String, i64>,
    uuid: &str,
) -> Value {
    let short = uuid.split('-').next().unwrap_or("case");
    json!({
        "apiVersion": API_VERSION,
        "kind": "WorkloadCase",
        "metadata": {"name": slug(&format!("{}-{short}", definition.name)), "title": format!("{} · {}", definition.name, axes.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(", "))},
        "spec": {"operationSpecDigest": operation_digest, "axes": axes, "tensors": {}, "correctness": {"comparator": "flashinfer_bench_eval"}}
    })
}

/// Who an implementation of `ki verify` is, for its ImplementationRevision and project row.
#[derive(Clone, Debug)]
pub struct VerifyImplementation {
    pub label: String,
    pub title: String,
    pub description: String,
    pub language: String,
    pub project_slug: String,
    pub project_name: String,
    pub repository: String,
    pub version: String,
    pub callable_path: Option<String>,
    pub symbol: String,
    pub authors: Vec<String>,
    /// The source bundle (a third-party solution's): (contentDigest, fileName, sizeBytes).
    pub source: Option<(String, String, usize)>,
    pub install: Option<(String, String)>,
}

pub fn verify_implementation_manifest(
    implementation: &VerifyImplementation,
    operation_digest: &str,
    dtypes: &[String],
) -> Value {
    let mut spec = json!({
        "projectRevision": {"repository": implementation.repository, "version": implementation.version},
        "operation": {"specDigest": operation_digest},
        "callable": {"language": implementation.language, "symbol": implementation.symbol, "interface": "flashinfer_bench_solution"},
        "support": {"hardwareArchitectures": ["sm_90"], "dtypes": dtypes},
        "licensing": {"declared": "Apache-2.0"}
    });
    if let Some(path) = &implementation.callable_path {
        spec["callable"]["path"] = json!(path);
    }
    if let Some((digest, file, size)) = &implementation.source {
        spec["source"] = json!({"contentDigest": digest, "fileName": file, "sizeBytes": (*size).max(1)});
        spec["projectRevision"]["treeDigest"] = json!(digest);
    }
    if let Some((package, version)) = &implementation.install {
        spec["buildVariants"] = json!([{"name": slug(&implementation.label), "install": {"kind": "pip", "package": package, "version": version}}]);
    }
    let mut metadata = json!({"name": slug(&implementation.label), "title": implementation.title.chars().take(200).collect::<String>(), "description": implementation.description.chars().take(2000).collect::<String>()});
    if !implementation.authors.is_empty() {
        metadata["authors"] = json!(
            implementation
                .authors
                .iter()
                .map(|a| json!({"name": a.chars().take(200).collect::<String>()}))
                .collect::<Vec<_>>()
        );
    }
    json!({"apiVersion": API_VERSION, "kind": "ImplementationRevision", "metadata": metadata, "spec": spec})
}

/// One run's result as `ki verify` publishes it.
pub struct VerifyRunFacts<'a> {
    pub label: &'a str,
    pub definition: &'a str,
    pub workload_uuid: &'a str,
    pub status: &'a str,
    pub reason: &'a str,
    pub labels: BTreeMap<String, String>,
    pub implementation_digest: &'a str,
    pub workload_digest: &'a str,
    pub protocol_digest: &'a str,
    pub environment_digest: &'a str,
    pub worst: &'a [crate::compare::OutputComparison],
    /// (metric name, summary) of the primary latency and its companions.
    pub latencies: Vec<(String, SampleSummary, Vec<f64>)>,
    pub speed_of_light_percent: Option<f64>,
    pub samples: Option<Value>,
    pub log: Option<Value>,
}

/// A BenchmarkRun of `ki verify`: failures carry no measurement, and their reason in metadata.
pub fn verify_run_manifest(facts: &VerifyRunFacts<'_>) -> Value {
    let mut spec = json!({
        "implementationDigest": facts.implementation_digest,
        "workloadDigest": facts.workload_digest,
        "protocolDigest": facts.protocol_digest,
        "environmentDigest": facts.environment_digest,
        "status": facts.status,
        "observedAt": ki_model::utc::now_seconds(),
    });
    if !facts.worst.is_empty() {
        let max_abs = facts.worst.iter().map(|c| c.max_abs_error).fold(0.0, f64::max);
        let max_rel = facts.worst.iter().map(|c| c.max_rel_error).fold(0.0, f64::max);
        let matched = facts.worst.iter().map(|c| c.matched_ratio).fold(1.0, f64::min);
        let finite = |v: f64| if v.is_finite() { v } else { f64::MAX };
        spec["correctness"] = json!({"comparator": "flashinfer_bench_eval", "maximumAbsoluteError": finite(max_abs), "maximumRelativeError": finite(max_rel), "matchedRatio": matched});
    }
    let mut evidence = Map::new();
    if let Some(samples) = &facts.samples {
        evidence.insert("rawSamples".into(), samples.clone());
    }
    if let Some(log) = &facts.log {
        evidence.insert("logs".into(), log.clone());
    }
    if !evidence.is_empty() {
        spec["evidence"] = Value::Object(evidence);
    }
    if facts.status == "passed"
        && let Some((_, primary, sorted)) = facts.latencies.first()
    {
        let mut timing = json!({"primaryStatistic": "median", "samples": primary.count, "latencyNs": latency_block(primary, sorted)});
        if let Some(samples) = &facts.samples {
            timing["rawSamples"] = samples.clone();
        }
        spec["timing"] = timing;
        let mut measurements = vec![
            json!({"metric": "latency", "unit": "ns", "statistic": "median", "value": primary.median.round(), "sampleCount": primary.count}),
        ];
        for (metric, summary, _) in &facts.latencies {
            measurements.push(json!({"metric": metric, "unit": "ns", "statistic": "median", "value": summary.median.round(), "sampleCount": summary.count}));
        }
        if let Some(p) = facts.speed_of_light_percent {
            measurements.push(json!({"metric": "speed_of_light", "unit": "percent", "statistic": "median", "value": (p * 100.0).round() / 100.0}));
        }
        spec["measurements"] = json!(measurements);
    }
    let mut labels = Map::new();
    for (k, v) in &facts.labels {
        labels.insert(k.clone(), json!(v.chars().take(200).collect::<String>()));
    }
    let short = facts.workload_uuid.split('-').next().unwrap_or("case");
    let mut metadata = json!({
        "name": slug(&format!("kernelindex-verify-{}-{short}", facts.label)),
        "title": format!("{} · {} · workload {}", facts.label, facts.definition, facts.workload_uuid).chars().take(200).collect::<String>(),
        "labels": labels
    });
    if !facts.reason.is_empty() {
        metadata["description"] = json!(facts.reason.chars().take(2000).collect::<String>());
    }
    json!({"apiVersion": API_VERSION, "kind": "BenchmarkRun", "metadata": metadata, "spec": spec})
}

/// Catalog rows of a `ki verify` session, in the export format (`ki catalog import`).
#[derive(Default)]
pub struct VerifyRows {
    rows: BTreeMap<&'static str, Vec<Value>>,
    ids: std::collections::BTreeSet<String>,
}

impl VerifyRows {
    fn push(&mut self, table: &'static str, id: String, fields: Value) {
        if self.ids.insert(format!("{table}:{id}")) {
            self.rows.entry(table).or_default().push(row(table, fields));
        }
    }

    pub fn source(&mut self) -> String {
        let id = row_id("sources", "kernelindex-rerun");
        self.push("sources", id.clone(), json!({"id": id, "slug": "kernelindex-rerun", "kind": "benchmark", "name": "KernelIndex controlled re-runs", "policy": Value::Null, "createdAt": ENTITY_CREATED_AT}));
        id
    }

    pub fn project(&mut self, slug_text: &str, name: &str, repository: &str) -> String {
        let id = row_id("projects", slug_text);
        let host_id = repository.trim_start_matches("https://github.com/").to_string();
        self.push(
            "projects",
            id.clone(),
            json!({
                "id": id, "slug": slug_text, "name": name, "normalizedName": name.to_lowercase(),
                "canonicalUrl": repository, "licenseExpression": "Apache-2.0",
                "manifest": {"apiVersion": API_VERSION, "kind": "SoftwareProject", "metadata": {"name": slug_text},
                    "spec": {"name": name, "repository": repository, "host": {"kind": "github", "id": host_id}}},
                "createdAt": ENTITY_CREATED_AT
            }),
        );
        id
    }

    /// The catalog's own operation row, or a new one for `manifest`.
    pub fn operation(
        &mut self,
        catalog_row: Option<&Map<String, Value>>,
        definition: &Definition,
        manifest: &Value,
    ) -> Result<String> {
        if let Some(existing) = catalog_row {
            let id = existing["id"].as_str().unwrap_or_default().to_string();
            self.push("operations", id.clone(), Value::Object(existing.clone()));
            return Ok(id);
        }
        let d = digest(manifest)?;
        let id = row_id("operations", &d);
        self.push("operations", id.clone(), json!({
            "id": id, "slug": slug(&definition.name), "family": family_name(&definition.op_type), "name": definition.name,
            "schemaVersion": API_VERSION, "semanticDigest": d, "manifest": manifest, "tags": [family_name(&definition.op_type)],
            "createdAt": ENTITY_CREATED_AT, "supersedesId": Value::Null
        }));
        Ok(id)
    }

    pub fn workload(
        &mut self,
        catalog_row: Option<&Map<String, Value>>,
        operation_id: &str,
        manifest: &Value,
    ) -> Result<String> {
        if let Some(existing) = catalog_row {
            let id = existing["id"].as_str().unwrap_or_default().to_string();
            self.push("workloads", id.clone(), Value::Object(existing.clone()));
            return Ok(id);
        }
        let d = digest(manifest)?;
        let id = row_id("workloads", &d);
        let axes = &manifest["spec"]["axes"];
        self.push("workloads", id.clone(), json!({
            "id": id, "operationId": operation_id, "workloadDigest": d, "schemaVersion": API_VERSION, "manifest": manifest,
            "shapeSummary": axes.to_string().chars().take(200).collect::<String>(), "dtypes": [], "layoutKeys": ["contiguous"], "createdAt": ENTITY_CREATED_AT
        }));
        Ok(id)
    }

    pub fn artifact(&mut self, content_digest: &str, size: usize, uri: &str) {
        let id = row_id("artifacts", content_digest);
        self.push("artifacts", id.clone(), json!({
            "id": id, "contentDigest": content_digest, "kind": "source", "mediaType": "application/json", "sizeBytes": size,
            "storage": "bundled", "uri": uri, "license": Value::Null, "createdAt": ENTITY_CREATED_AT
        }));
    }

    /// The implementation's row: the catalog's own when it holds this id (a row published
    /// before, whose manifest differs at most in metadata), else a new one for `manifest`.
    pub fn implementation(
        &mut self,
        implementation: &VerifyImplementation,
        manifest: Value,
        project_id: &str,
        operation_id: &str,
        catalog: &BTreeMap<String, Map<String, Value>>,
    ) -> Result<(String, String, Value)> {
        let d = digest(&manifest)?;
        let id = row_id("implementations", &d);
        // A row the catalog already holds is reused whole, its manifest included (the same
        // identity; its metadata may say where that session read the solution).
        if let Some(existing) = catalog.get(&id) {
            let manifest = existing.get("manifest").cloned().unwrap_or(manifest);
            self.push("implementations", id.clone(), Value::Object(existing.clone()));
            return Ok((id, d, manifest));
        }
        self.push("implementations", id.clone(), json!({
            "id": id, "projectId": project_id, "operationId": operation_id,
            "slug": slug(&format!("{}-{}", implementation.label, &d[7..13])), "implementationDigest": d,
            "sourceRevision": implementation.version, "language": implementation.language, "framework": Value::Null,
            "targetArchitectures": ["sm_90"], "licenseExpression": "Apache-2.0", "sourceAvailable": true,
            "installable": implementation.install.is_some(), "title": implementation.title.chars().take(200).collect::<String>(),
            "installKind": if implementation.install.is_some() { json!("pip") } else { Value::Null },
            "installCommand": implementation.install.as_ref().map_or(Value::Null, |(p, v)| json!(format!("pip install {p}=={v}"))),
            "licenseDeclared": "Apache-2.0", "manifest": manifest.clone(), "createdAt": ENTITY_CREATED_AT, "supersedesId": Value::Null
        }));
        Ok((id, d, manifest))
    }

    /// The run row (and its measurement when it passed).
    #[allow(clippy::too_many_arguments)]
    pub fn run(
        &mut self,
        run_manifest: &Value,
        protocol: &Value,
        environment: &Value,
        workload_manifest: &Value,
        implementation_id: &str,
        workload_id: &str,
        source_id: &str,
        interval: Option<(f64, f64)>,
        summary: &str,
    ) -> Result<String> {
        let keys = ki_model::identity::benchmark_run_keys(run_manifest, protocol, environment, workload_manifest)
            .map_err(|e| anyhow!("run keys: {e}"))?;
        let run_id = row_id("benchmark_runs", &keys.run_digest);
        let primary = keys.primary.as_ref();
        if let Some(p) = primary {
            self.push(
                "measurements",
                format!("{}:{}", keys.run_digest, p.metric_key()),
                json!({
                    "id": row_id("measurements", &format!("{}:{}", keys.run_digest, p.metric_key())),
                    "runId": run_id, "metric": p.metric, "statistic": p.statistic, "unit": p.unit,
                    "value": Value::Number(p.value.clone()), "sampleCount": p.sample_count
                }),
            );
        }
        let spec = &run_manifest["spec"];
        let hardware = &environment["spec"]["hardware"];
        let software = &environment["spec"]["software"];
        let major = |v: &Value| v.as_str().and_then(|s| s.split('.').next()).and_then(|d| d.parse::<u64>().ok());
        let passed = spec["status"] == "passed";
        self.push("benchmark_runs", run_id.clone(), json!({
            "id": run_id, "runDigest": keys.run_digest, "implementationId": implementation_id, "workloadId": workload_id,
            "sourceId": source_id, "status": spec["status"], "observedAt": spec["observedAt"], "publishedAt": spec["observedAt"],
            "hardwareVendor": hardware["vendor"], "hardwareModel": hardware["product"], "hardwareArchitecture": hardware["architecture"],
            "driverMajor": major(&software["driver"]), "cudaMajor": major(&software["cudaToolkit"]),
            "protocolKey": keys.protocol_key, "environmentKey": keys.environment_key, "correctnessKey": keys.correctness_key,
            "comparisonKey": keys.comparison_key,
            "primaryMetric": primary.map_or("none", |p| p.metric.as_str()),
            "primaryValue": primary.map_or(Value::Null, |p| Value::Number(p.value.clone())),
            "primaryUnit": primary.map(|p| p.unit.clone()), "sampleCount": primary.and_then(|p| p.sample_count),
            "uncertaintyLow": interval.filter(|_| passed).map_or(Value::Null, |(l, _)| json!(l.round() as u64)),
            "uncertaintyHigh": interval.filter(|_| passed).map_or(Value::Null, |(_, h)| json!(h.round() as u64)),
            "reported": false, "reproducedByKernelindex": true, "independentReplicationCount": 0, "sourceAvailable": true,
            "installable": false, "licenseExpression": "Apache-2.0", "primaryStatistic": primary.map(|p| p.statistic.clone()),
            "hasRawEvidence": spec.get("evidence").is_some(), "sourceNative": false,
            "environmentSummary": summary,
            "manifest": {"run": run_manifest, "protocol": protocol, "environment": environment},
            "supersedesId": Value::Null, "retractedAt": Value::Null, "retractionReason": Value::Null
        }));
        Ok(run_id)
    }

    /// Every row, in the order an import needs (referenced rows first).
    pub fn write(&self, path: &Path) -> Result<()> {
        let mut text = String::new();
        for table in [
            "sources",
            "projects",
            "operations",
            "workloads",
            "artifacts",
            "implementations",
            "benchmark_runs",
            "measurements",
        ] {
            for line in self.rows.get(table).into_iter().flatten() {
                text.push_str(&serde_json::to_string(line)?);
                text.push('\n');
            }
        }
        std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))
    }
}

/// Rows of catalog exports a verify session reuses: each operation named (with its workloads),
/// and every implementation by id.
#[derive(Default)]
pub struct CatalogRows {
    pub operations: BTreeMap<String, OperationRows>,
    pub implementations: BTreeMap<String, Map<String, Value>>,
}

/// The rows of `catalogs` (the first file that holds a row wins) of every operation named in
/// `names` (and their workloads), and their implementations.
pub fn catalog_rows(catalogs: &[PathBuf], names: &[String]) -> Result<CatalogRows> {
    let mut lines = Vec::new();
    for catalog in catalogs {
        // The export's own errors name the file (and line).
        lines.extend(ki_model::export::read_export(catalog).map_err(|e| anyhow!("--catalog {e}"))?);
    }
    let mut implementations = BTreeMap::new();
    for l in lines.iter().filter(|l| l.table == "implementations") {
        if let Some(id) = l.row.get("id").and_then(Value::as_str) {
            implementations.entry(id.to_string()).or_insert_with(|| l.row.clone());
        }
    }
    let mut found: BTreeMap<String, OperationRows> = BTreeMap::new();
    for l in lines.iter().filter(|l| l.table == "operations") {
        if let Some(name) = l.row.get("name").and_then(Value::as_str)
            && names.iter().any(|n| n == name)
            && !found.contains_key(name)
        {
            found.insert(name.to_string(), (l.row.clone(), Vec::new()));
        }
    }
    let mut seen = std::collections::BTreeSet::new();
    for l in lines.iter().filter(|l| l.table == "workloads") {
        for (operation, workloads) in found.values_mut() {
            if l.row.get("operationId") == operation.get("id") && seen.insert(l.id().to_string()) {
                workloads.push(l.row.clone());
            }
        }
    }
    Ok(CatalogRows { operations: found, implementations })
}

/// Writes pretty JSON (for verify's manifests).
pub fn write_manifest(path: &Path, value: &Value) -> Result<()> {
    write_json(path, value)
}

pub fn manifest_digest(value: &Value) -> Result<String> {
    digest(value)
}

pub fn manifest_slug(text: &str) -> String {
    slug(text)
}

#[cfg(test)]
mod tests {
    use super::hardware_block;

    fn product(device: &str) -> (String, Option<String>) {
        let block = hardware_block(device, "sm_90", 1);
        (block["product"].as_str().unwrap().to_string(), block["formFactor"].as_str().map(str::to_string))
    }

    #[test]
    fn the_product_is_the_model_the_public_index_names() {
        let form = |s: &str| Some(s.to_string());
        assert_eq!(product("NVIDIA H100 80GB HBM3"), ("NVIDIA H100".into(), form("80GB HBM3")));
        assert_eq!(product("NVIDIA H100 PCIe"), ("NVIDIA H100".into(), form("PCIe")));
        assert_eq!(product("NVIDIA A100-SXM4-80GB"), ("NVIDIA A100".into(), form("SXM4-80GB")));
        assert_eq!(product("NVIDIA GH200 480GB"), ("NVIDIA GH200".into(), form("480GB")));
        assert_eq!(product("NVIDIA L40S"), ("NVIDIA L40S".into(), None));
        // The H200's name is already the model: its manifests (and digests) stay as they were.
        assert_eq!(product("NVIDIA H200"), ("NVIDIA H200".into(), None));
        assert_eq!(
            hardware_block("NVIDIA H200", "sm_90", 7),
            serde_json::json!({"vendor": "nvidia", "product": "NVIDIA H200", "architecture": "sm_90", "memoryBytes": 7, "count": 1})
        );
        // Other shapes are kept whole.
        assert_eq!(product("NVIDIA GeForce RTX 4090"), ("NVIDIA GeForce RTX 4090".into(), None));
        assert_eq!(product("NVIDIA RTX A6000"), ("NVIDIA RTX A6000".into(), None));
        assert_eq!(product("Tesla V100"), ("Tesla V100".into(), None));
    }
}
