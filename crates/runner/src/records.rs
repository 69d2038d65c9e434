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
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, anyhow};
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

/// `YYYY-MM-DDTHH:MM:SSZ` for now (UTC), without a date library: days since the epoch to a civil
/// date by Howard Hinnant's algorithm.
pub fn utc_now() -> String {
    let seconds = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or(0);
    utc_from_unix(seconds)
}

pub fn utc_from_unix(seconds: i64) -> String {
    ki_model::utc::from_unix_seconds(seconds)
}

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

fn digest(manifest: &Value) -> Result<String> {
    ki_model::identity::object_digest(manifest).map_err(|e| anyhow!("digesting a manifest: {e}"))
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

fn nvidia_smi_facts() -> BTreeMap<String, String> {
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
            started_at: utc_now(),
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
            "hardware": {
                "vendor": "nvidia",
                "product": facts.device.name,
                "architecture": facts.architecture(),
                "memoryBytes": facts.device.total_memory_bytes,
                "count": 1
            },
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
type OperationRows = (Map<String, Value>, Vec<Map<String, Value>>);

/// The operation row and workload rows the catalog export holds for `definition`, if any.
fn catalog_rows_of(catalog: &Path, definition: &Definition) -> Result<Option<OperationRows>> {
    let lines = ki_model::export::read_export(catalog).map_err(|e| anyhow!("{}: {e}", catalog.display()))?;
    let Some(operation) = lines
        .iter()
        .find(|l| {
            l.table == "operations" && l.row.get("name").and_then(Value::as_str) == Some(definition.name.as_str())
        })
        .map(|l| l.row.clone())
    else {
        return Ok(None);
    };
    let operation_id = operation.get("id").cloned();
    let workloads = lines
        .iter()
        .filter(|l| l.table == "workloads" && l.row.get("operationId") == operation_id.as_ref())
        .map(|l| l.row.clone())
        .collect();
    Ok(Some((operation, workloads)))
}

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

impl RecordWriter {
    pub fn new(
        root: &Path,
        definition: &Definition,
        protocol: &TimingProtocol,
        facts: &SessionFacts,
        calibration: &Calibration,
        catalog: Option<&Path>,
    ) -> Result<RecordWriter> {
        for sub in ["manifests", "samples"] {
            std::fs::create_dir_all(root.join(sub))?;
        }
        let protocol_manifest = protocol_manifest(protocol);
        let environment = environment_manifest(facts, calibration);
        write_json(&root.join("manifests/benchmark-protocol.json"), &protocol_manifest)?;
        write_json(&root.join("manifests/execution-environment.json"), &environment)?;
        let (operation_row, catalog_workload_rows) =
            match catalog.map(|c| catalog_rows_of(c, definition)).transpose()?.flatten() {
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
            "observedAt": utc_now(),
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
                "installable": label.starts_with("flashinfer"),
                "title": label,
                "installKind": if label.starts_with("flashinfer") { json!("pip") } else { Value::Null },
                "installCommand": if label.starts_with("flashinfer") { json!("pip install flashinfer-python==0.5.3") } else { Value::Null },
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
        let spec = &run_manifest["spec"];
        let primary = keys.primary.as_ref();
        if let Some(p) = primary {
            let measurement = row(
                "measurements",
                json!({
                    "id": row_id("measurements", &format!("{}:{}", keys.run_digest, p.metric_key())),
                    "runId": run_id, "metric": p.metric, "statistic": p.statistic, "unit": p.unit,
                    "value": Value::Number(p.value.clone()), "sampleCount": p.sample_count
                }),
            );
            self.rows.entry("measurements").or_default().push(measurement);
        }
        let environment = &self.environment_manifest["spec"];
        let cuda = environment["software"]["cudaToolkit"].as_str().unwrap_or("");
        let driver = environment["software"]["driver"].as_str().unwrap_or("");
        let (low, high) = run.per_call.as_ref().map_or((Value::Null, Value::Null), |s| {
            (json!(s.ci95_low.round() as u64), json!(s.ci95_high.round() as u64))
        });
        let workload_id = workload_row["id"].clone();
        let run_row = row(
            "benchmark_runs",
            json!({
                "id": run_id,
                "runDigest": keys.run_digest,
                "implementationId": row_id("implementations", spec["implementationDigest"].as_str().unwrap_or("")),
                "workloadId": workload_id,
                "sourceId": self.source_id(),
                "status": spec["status"],
                "observedAt": spec["observedAt"],
                "publishedAt": spec["observedAt"],
                "hardwareVendor": environment["hardware"]["vendor"],
                "hardwareModel": environment["hardware"]["product"],
                "hardwareArchitecture": environment["hardware"]["architecture"],
                "driverMajor": driver.split('.').next().and_then(|d| d.parse::<u64>().ok()),
                "cudaMajor": cuda.split('.').next().and_then(|d| d.parse::<u64>().ok()),
                "protocolKey": keys.protocol_key,
                "environmentKey": keys.environment_key,
                "correctnessKey": keys.correctness_key,
                "comparisonKey": keys.comparison_key,
                "primaryMetric": primary.map_or("none", |p| p.metric.as_str()),
                "primaryValue": primary.map_or(Value::Null, |p| Value::Number(p.value.clone())),
                "primaryUnit": primary.map(|p| p.unit.clone()),
                "sampleCount": primary.and_then(|p| p.sample_count),
                "uncertaintyLow": low,
                "uncertaintyHigh": high,
                "reported": false,
                "reproducedByKernelindex": true,
                "independentReplicationCount": 0,
                "sourceAvailable": true,
                "installable": run.implementation.starts_with("flashinfer"),
                "licenseExpression": "Apache-2.0",
                "primaryStatistic": primary.map(|p| p.statistic.clone()),
                "hasRawEvidence": true,
                "sourceNative": false,
                "environmentSummary": format!("CUDA {cuda} · driver {driver} · {}", self.protocol.name()),
                "manifest": {"run": run_manifest, "protocol": self.protocol_manifest, "environment": self.environment_manifest},
                "supersedesId": Value::Null,
                "retractedAt": Value::Null,
                "retractionReason": Value::Null
            }),
        );
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
