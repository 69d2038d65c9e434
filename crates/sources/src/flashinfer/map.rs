//! Mapping a read data set to kernelindex.dev/v1alpha1 manifests and catalog rows, in the
//! shapes the public index exports for source `flashinfer-bench`.

use std::collections::{BTreeSet, HashMap, HashSet};

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use super::read::{Axis, Dataset, Definition, Evaluation, InputData, Solution, Trace, Workload};
use crate::names;
use ki_model::identity::{self, API_VERSION};
use ki_model::rows::{BenchmarkRunRow, MeasurementRow, RunFacts, WorkloadRow};

/// The source slug the public index files these records under.
pub const SOURCE_SLUG: &str = "flashinfer-bench";
/// The data set's home; solutions, definitions and traces link back to it.
pub const DEFAULT_REPOSITORY: &str = "https://huggingface.co/datasets/flashinfer-ai/flashinfer-trace";
/// Authors whose solutions are human-written or library baselines; every other author is an
/// agent, imported only when named (the source policy: agent traces need explicit labelling).
pub const HUMAN_AUTHORS: &[&str] = &["baseline", "flashinfer"];
/// The public index compares FlashInfer-Bench workloads with this comparator name.
const WORKLOAD_COMPARATOR: &str = "sol_execbench_eval";
const LICENSE: &str = "Apache-2.0";

pub use crate::publish::PlannedRow;

/// What to import and how to label it.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Agent authors whose solutions (and their traces) are imported, marked llm-generated.
    pub authors: Vec<String>,
    /// The data set revision (a commit), when known: it goes into source links and the
    /// implementations' projectRevision.
    pub revision: Option<String>,
    pub repository: String,
    /// Stamped on new rows as createdAt / publishedAt.
    pub imported_at: Timestamp,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            authors: Vec::new(),
            revision: None,
            repository: DEFAULT_REPOSITORY.to_string(),
            imported_at: Timestamp::now(),
        }
    }
}

/// Counts of what a data set held and what was left out, for the command's report.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanSummary {
    pub definitions: usize,
    pub workloads: usize,
    pub solutions: usize,
    pub traces: usize,
    /// Solutions of agent authors not named with --authors, and their traces.
    pub skipped_solutions: usize,
    pub skipped_traces: usize,
    /// Workload entries that map to a WorkloadCase already produced (same digest).
    pub duplicate_workloads: usize,
}

/// The rows to publish, in the export's table order.
#[derive(Debug, Clone, Default)]
pub struct ImportPlan {
    pub rows: Vec<PlannedRow>,
    pub summary: PlanSummary,
}

/// When FlashInfer-Bench replaced its timer (CUDA events, mean) with CUPTI (median of trials).
pub fn timer_change() -> Timestamp {
    "2026-02-24T00:00:00Z".parse().expect("a valid date")
}

/// A row id derived from what identifies the row, so a re-import produces the same id.
pub fn row_id(table: &str, key: &str) -> String {
    crate::row_id(SOURCE_SLUG, table, key)
}

fn timestamp(t: &Timestamp) -> String {
    format!("{t:.3}")
}

fn manifest(kind: &str, metadata: Value, spec: Value) -> Value {
    json!({ "apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec })
}

fn digest(manifest: &Value) -> String {
    identity::object_digest(manifest).expect("importer manifests hold only finite numbers and safe integers")
}

fn media_type(path: &str) -> &'static str {
    match path.rsplit('.').next().unwrap_or("") {
        "py" => "text/x-python",
        "cu" | "cuh" => "text/x-cuda",
        "cpp" | "cc" | "cxx" => "text/x-c++src",
        "h" | "hpp" | "hxx" => "text/x-c++hdr",
        "c" => "text/x-csrc",
        _ => "text/plain",
    }
}

/// The OperationSpec of a definition. Constraints and the reference code have no place in
/// the spec; they go to metadata labels and an artifact (see the README).
pub fn operation_manifest(definition: &Definition, options: &ImportOptions, reference_digest: &str) -> Value {
    let mut axes = Map::new();
    for (name, axis) in &definition.axes {
        let body = match axis {
            Axis::Const(v) => json!({ "role": "constant", "type": "integer", "value": v }),
            Axis::Var => json!({ "role": "variable", "type": "integer" }),
        };
        axes.insert(names::identifier(name), body);
    }
    let port = |t: &super::read::TensorDecl| match &t.shape {
        None => json!({ "name": names::identifier(&t.name), "scalar": { "dtype": t.dtype } }),
        Some(shape) => json!({
            "name": names::identifier(&t.name),
            "tensor": { "dtype": t.dtype, "shape": shape.iter().map(|a| names::identifier(a)).collect::<Vec<_>>() },
        }),
    };
    let spec = json!({
        "family": names::slug(&definition.op_type),
        "axes": axes,
        "inputs": definition.inputs.iter().map(port).collect::<Vec<_>>(),
        "outputs": definition.outputs.iter().map(port).collect::<Vec<_>>(),
        "reference": { "language": "python" },
        "semantics": { "mutation": "none", "determinism": "unspecified" },
    });
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(names::slug(&definition.name)));
    metadata.insert("title".into(), json!(definition.name));
    if let Some(d) = &definition.description {
        metadata.insert("description".into(), json!(d));
    }
    metadata.insert("sourceRefs".into(), json!([{ "url": source_url(options, "definitions") }]));
    let mut labels = Map::new();
    labels.insert("reference_digest".into(), json!(reference_digest));
    for (i, c) in definition.constraints.iter().enumerate() {
        labels.insert(format!("constraint_{i}"), json!(c));
    }
    metadata.insert("labels".into(), Value::Object(labels));
    manifest("OperationSpec", Value::Object(metadata), spec)
}

fn source_url(options: &ImportOptions, path: &str) -> String {
    match &options.revision {
        Some(rev) => format!("{}/blob/{rev}/{path}", options.repository),
        None => format!("{}/tree/main/{path}", options.repository),
    }
}

/// The WorkloadCase of a workload entry, given its definition's OperationSpec digest.
pub fn workload_manifest(definition: &Definition, workload: &Workload, operation_digest: &str) -> Value {
    let mut values: HashMap<&str, i64> = HashMap::new();
    for (name, axis) in &definition.axes {
        if let Axis::Const(v) = axis {
            values.insert(name, *v);
        }
    }
    let mut axes = Map::new();
    for (name, value) in &workload.axes {
        values.insert(name, *value);
        axes.insert(names::identifier(name), json!(value));
    }
    let mut tensors = Map::new();
    let mut scalars = Map::new();
    for input in &definition.inputs {
        let data = workload.inputs.iter().find(|(n, _)| n == &input.name).map(|(_, d)| d);
        match (&input.shape, data) {
            (Some(shape), Some(data)) => {
                let generator = match data {
                    InputData::Random => "random",
                    InputData::Safetensors { .. } => "safetensors",
                    InputData::Scalar(_) => unreachable!("read::check_workload refuses a scalar for a tensor"),
                };
                // Every axis was checked to have a value (const or bound by the workload).
                let dims: Vec<i64> =
                    shape.iter().map(|a| values.get(a.as_str()).copied().unwrap_or_default()).collect();
                tensors.insert(
                    names::identifier(&input.name),
                    json!({ "shape": dims, "dtype": input.dtype, "data": { "generator": generator } }),
                );
            }
            (None, Some(InputData::Scalar(value))) => {
                scalars.insert(names::identifier(&input.name), json!({ "dtype": input.dtype, "value": value }));
            }
            _ => {}
        }
    }
    let mut spec = Map::new();
    spec.insert("operationSpecDigest".into(), json!(operation_digest));
    spec.insert("axes".into(), Value::Object(axes));
    spec.insert("tensors".into(), Value::Object(tensors));
    if !scalars.is_empty() {
        spec.insert("scalars".into(), Value::Object(scalars));
    }
    spec.insert("correctness".into(), json!({ "comparator": WORKLOAD_COMPARATOR }));
    let uuid_prefix: String = workload.uuid.chars().take(8).collect();
    let axes_text: Vec<String> = workload.axes.iter().map(|(n, v)| format!("{n}={v}")).collect();
    let metadata = json!({
        "name": format!("{}-{}", names::slug(&definition.name), names::slug(&uuid_prefix)),
        "title": format!("{} · {}", definition.name, axes_text.join(", ")),
    });
    manifest("WorkloadCase", metadata, Value::Object(spec))
}

/// The project an author's solutions belong to: `(slug, name)`.
fn project_of(author: &str) -> (String, String) {
    if author == "baseline" {
        ("flashinfer-baseline".into(), "FlashInfer-Bench baselines".into())
    } else {
        (format!("flashinfer-{}", names::slug(author)), author.to_string())
    }
}

fn is_agent(author: &str) -> bool {
    !HUMAN_AUTHORS.contains(&author)
}

/// `(hardwareArchitectures, productsTested)` of a solution.
fn support_hardware(solution: &Solution) -> (Vec<String>, Vec<String>) {
    let products: BTreeSet<String> = solution.target_hardware.iter().map(|h| names::product(h)).collect();
    // Compiled code targets an architecture; Python and Triton run wherever their runtime does.
    let architectures: BTreeSet<String> = if matches!(solution.language.as_str(), "cuda" | "cpp") {
        products.iter().filter_map(|p| names::cuda_architecture(p)).map(str::to_string).collect()
    } else {
        BTreeSet::new()
    };
    let architectures =
        if architectures.is_empty() { vec!["unknown".to_string()] } else { architectures.into_iter().collect() };
    (architectures, products.into_iter().collect())
}

pub fn implementation_manifest(
    solution: &Solution,
    definition: &Definition,
    operation_digest: &str,
    options: &ImportOptions,
) -> Value {
    let entry = solution
        .sources
        .iter()
        .find(|s| s.path == solution.entry_file)
        .expect("read::parse_solution checks the entry file");
    let (architectures, products) = support_hardware(solution);
    let dtypes: BTreeSet<&str> = definition.inputs.iter().chain(&definition.outputs).map(|t| t.dtype).collect();
    let mut project_revision = Map::new();
    project_revision.insert("repository".into(), json!(options.repository));
    if let Some(rev) = &options.revision {
        project_revision.insert("commit".into(), json!(rev));
    }
    let mut support = Map::new();
    support.insert("hardwareArchitectures".into(), json!(architectures));
    support.insert("dtypes".into(), json!(dtypes));
    if !products.is_empty() {
        support.insert("productsTested".into(), json!(products));
    }
    let spec = json!({
        "projectRevision": project_revision,
        "operation": { "specDigest": operation_digest },
        "callable": { "language": solution.language, "path": solution.entry_file, "symbol": solution.entry_symbol },
        "support": support,
        "source": {
            "contentDigest": identity::sha256_digest(entry.content.as_bytes()),
            "fileName": entry.path,
            "sizeBytes": entry.content.len(),
        },
        "licensing": { "declared": LICENSE, "concluded": LICENSE },
    });
    let mut metadata = Map::new();
    metadata.insert("name".into(), json!(names::slug(&solution.name)));
    metadata.insert("title".into(), json!(solution.name));
    if let Some(d) = &solution.description {
        metadata.insert("description".into(), json!(d));
    }
    metadata.insert("authors".into(), json!([{ "name": solution.author }]));
    metadata.insert("sourceRefs".into(), json!([{ "url": source_url(options, &solution.relative_path) }]));
    if is_agent(&solution.author) {
        metadata.insert("labels".into(), json!({ "provenance": "llm-generated" }));
    }
    manifest("ImplementationRevision", Value::Object(metadata), spec)
}

/// The two FlashInfer-Bench timing protocols: before the timer change (CUDA events, mean;
/// identical to the protocol the public index holds) and after it (CUPTI, median of trials).
pub fn protocol_manifest(observed: &Timestamp) -> Value {
    let harness =
        json!({ "name": "flashinfer-bench", "repository": "https://github.com/flashinfer-ai/flashinfer-bench" });
    let correctness =
        json!({ "reference": "definition reference implementation", "comparator": "flashinfer_bench_eval" });
    if *observed < timer_change() {
        manifest(
            "BenchmarkProtocol",
            json!({ "name": "flashinfer-bench-trace", "title": "FlashInfer-Bench trace harness" }),
            json!({
                "harness": harness,
                "measurement": { "timer": "harness_reported", "primaryStatistic": "mean" },
                "correctness": correctness,
                "comparability": { "family": "flashinfer_bench_trace" },
            }),
        )
    } else {
        manifest(
            "BenchmarkProtocol",
            json!({ "name": "flashinfer-bench-trace-cupti", "title": "FlashInfer-Bench trace harness (CUPTI timer, from 2026-02-24)" }),
            json!({
                "harness": harness,
                "measurement": { "timer": "cupti", "primaryStatistic": "median" },
                "correctness": correctness,
                "comparability": {
                    "family": "flashinfer_bench_trace",
                    "notes": "From 2026-02-24 FlashInfer-Bench times with CUPTI and reports the median of trials; earlier traces used CUDA events and a mean.",
                },
            }),
        )
    }
}

pub fn environment_manifest(evaluation: &Evaluation) -> Value {
    let product = names::product(&evaluation.hardware);
    let mut software = Map::new();
    let mut libraries = Map::new();
    let mut name_parts = vec![names::slug(&product)];
    let mut cuda = None;
    for (lib, version) in &evaluation.libs {
        match lib.as_str() {
            "torch" => {
                software.insert("framework".into(), json!({ "name": "pytorch", "version": version }));
            }
            "cuda" => cuda = Some(version.clone()),
            other => {
                libraries.insert(names::identifier(other), json!(version));
            }
        }
    }
    if let Some(Value::Object(f)) = software.get("framework") {
        name_parts.push(names::slug(f["version"].as_str().unwrap_or("")));
    }
    for version in libraries.values() {
        name_parts.push(names::slug(version.as_str().unwrap_or("")));
    }
    if !libraries.is_empty() {
        software.insert("libraries".into(), Value::Object(libraries));
    }
    if let Some(c) = &cuda {
        software.insert("cudaToolkit".into(), json!(c));
        name_parts.push(names::slug(c));
    }
    manifest(
        "ExecutionEnvironment",
        json!({ "name": format!("sol-trace-{}", name_parts.join("-")), "title": format!("{product} (trace-reported software)") }),
        json!({
            "hardware": { "vendor": names::vendor(&product), "product": product, "architecture": "unknown" },
            "software": software,
        }),
    )
}

fn latency_ns(ms: f64) -> u64 {
    (ms * 1e6).round() as u64
}

pub struct RunManifests {
    pub run: Value,
    pub protocol: Value,
    pub environment: Value,
    pub log_digest: Option<String>,
}

pub fn run_manifests(trace: &Trace, implementation_digest: &str, workload_digest: &str) -> RunManifests {
    let evaluation = &trace.evaluation;
    let protocol = protocol_manifest(&evaluation.timestamp);
    let environment = environment_manifest(evaluation);
    let statistic = protocol["spec"]["measurement"]["primaryStatistic"].as_str().unwrap_or("mean").to_string();
    let mut spec = Map::new();
    spec.insert("implementationDigest".into(), json!(implementation_digest));
    spec.insert("workloadDigest".into(), json!(workload_digest));
    spec.insert("protocolDigest".into(), json!(digest(&protocol)));
    spec.insert("environmentDigest".into(), json!(digest(&environment)));
    spec.insert("status".into(), json!(evaluation.status));
    spec.insert("observedAt".into(), json!(timestamp(&evaluation.timestamp)));
    if let Some((absolute, relative)) = evaluation.correctness {
        let mut c = Map::new();
        c.insert("comparator".into(), json!(WORKLOAD_COMPARATOR));
        if let Some(a) = absolute {
            c.insert("maximumAbsoluteError".into(), json!(a));
        }
        if let Some(r) = relative {
            c.insert("maximumRelativeError".into(), json!(r));
        }
        spec.insert("correctness".into(), Value::Object(c));
    }
    let mut native = Map::new();
    native.insert("source".into(), json!(SOURCE_SLUG));
    native.insert("benchmark".into(), json!(trace.definition));
    if let Some(p) = &evaluation.performance {
        let mut latency = Map::new();
        latency.insert(statistic.clone(), json!(latency_ns(p.latency_ms)));
        spec.insert("timing".into(), json!({ "primaryStatistic": statistic, "latencyNs": latency }));
        let mut metrics = Map::new();
        metrics.insert("latency_ms".into(), json!(p.latency_ms));
        if let Some(r) = p.reference_latency_ms {
            metrics.insert("reference_latency_ms".into(), json!(r));
        }
        if let Some(s) = p.speedup_factor {
            metrics.insert("speedup_factor".into(), json!(s));
        }
        native.insert("metrics".into(), Value::Object(metrics));
    }
    spec.insert("sourceNative".into(), Value::Object(native));
    let log_digest = (!evaluation.log.is_empty()).then(|| identity::sha256_digest(evaluation.log.as_bytes()));
    if let Some(d) = &log_digest {
        spec.insert("evidence".into(), json!({ "logs": { "uri": format!("kernelindex:artifact/{d}"), "digest": d } }));
    }
    let uuid_prefix: String = trace.workload.uuid.chars().take(8).collect();
    let run = manifest(
        "BenchmarkRun",
        json!({
            "name": format!("sol-trace-{}-{}", names::slug(&trace.definition), names::slug(&uuid_prefix)),
            "title": format!("{} · {}", trace.solution, trace.definition),
        }),
        Value::Object(spec),
    );
    RunManifests { run, protocol, environment, log_digest }
}

fn row(table: &'static str, pairs: Vec<(&str, Value)>) -> PlannedRow {
    PlannedRow { table, row: pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect() }
}

/// Everything a data set maps to, as export rows. Rows are de-duplicated by their identity
/// (digest, slug or content digest), keeping the first.
pub fn plan(dataset: &Dataset, options: &ImportOptions) -> ImportPlan {
    let created_at = timestamp(&options.imported_at);
    let created = json!(created_at);
    let mut summary = PlanSummary { definitions: dataset.definitions.len(), ..PlanSummary::default() };
    let mut projects = Vec::new();
    let mut operations = Vec::new();
    let mut aliases = Vec::new();
    let mut workloads = Vec::new();
    let mut implementations = Vec::new();
    let mut runs = Vec::new();
    let mut measurements = Vec::new();
    let mut artifacts = Vec::new();
    let mut seen_artifacts = HashSet::new();
    let mut add_artifact =
        |artifacts: &mut Vec<PlannedRow>, content: &str, kind: &str, media: &str, uri: Value, license: Value| {
            let d = identity::sha256_digest(content.as_bytes());
            if seen_artifacts.insert(d.clone()) {
                artifacts.push(row(
                    "artifacts",
                    vec![
                        ("id", json!(row_id("artifacts", &d))),
                        ("contentDigest", json!(d)),
                        ("kind", json!(kind)),
                        ("mediaType", json!(media)),
                        ("sizeBytes", json!(content.len())),
                        ("storage", json!("inline")),
                        ("uri", uri),
                        ("license", license),
                        ("createdAt", created.clone()),
                    ],
                ));
            }
            d
        };

    let source_id = row_id("sources", SOURCE_SLUG);
    let source = row(
        "sources",
        vec![
            ("id", json!(source_id)),
            ("slug", json!(SOURCE_SLUG)),
            ("kind", json!("benchmark")),
            ("name", json!("FlashInfer-Bench")),
            (
                "policy",
                json!({
                    "url": options.repository,
                    "terms": "Apache-2.0: redistribution and display permitted with license notice. Baseline (human/library) traces only; agent-generated traces require explicit author labeling before import.",
                    "license": LICENSE,
                    "attribution": "FlashInfer-Bench (flashinfer-ai/flashinfer-trace)",
                }),
            ),
            ("createdAt", created.clone()),
        ],
    );

    // Operations, keyed by definition name: (row id, digest).
    let mut operation_of: HashMap<&str, (String, String)> = HashMap::new();
    for definition in &dataset.definitions {
        let reference_digest = add_artifact(
            &mut artifacts,
            &definition.reference,
            "source",
            "text/x-python",
            json!(options.repository),
            json!(LICENSE),
        );
        let m = operation_manifest(definition, options, &reference_digest);
        let d = digest(&m);
        let id = row_id("operations", &d);
        operation_of.insert(&definition.name, (id.clone(), d.clone()));
        let tags: Vec<String> = definition.tags.iter().map(|t| names::tag(t)).collect();
        operations.push(row(
            "operations",
            vec![
                ("id", json!(id)),
                ("slug", json!(names::slug(&definition.name))),
                ("family", json!(names::slug(&definition.op_type))),
                ("name", json!(definition.name)),
                ("schemaVersion", json!(API_VERSION)),
                ("semanticDigest", json!(d)),
                ("manifest", m),
                ("tags", json!(tags)),
                ("createdAt", created.clone()),
                ("supersedesId", Value::Null),
            ],
        ));
        aliases.push(row("operation_aliases", vec![("operationId", json!(id)), ("alias", json!(definition.name))]));
    }

    // Workloads, keyed by (definition, uuid): (row id, digest, manifest).
    let mut workload_of: HashMap<(String, String), (String, String, Value)> = HashMap::new();
    let mut seen_workloads = HashSet::new();
    let mut add_workload =
        |workloads: &mut Vec<PlannedRow>, workload: &Workload, counted: bool| -> (String, String, Value) {
            let key = (workload.definition.clone(), workload.uuid.clone());
            if let Some(found) = workload_of.get(&key) {
                return found.clone();
            }
            let definition =
                dataset.definition(&workload.definition).expect("read::check_workload checked the definition");
            let (operation_id, operation_digest) = &operation_of[definition.name.as_str()];
            let m = workload_manifest(definition, workload, operation_digest);
            let d = digest(&m);
            let id = row_id("workloads", &d);
            if seen_workloads.insert(d.clone()) {
                let layouts = vec!["contiguous".to_string()];
                let typed = WorkloadRow::new(id.clone(), operation_id.clone(), m.clone(), layouts, created_at.clone())
                    .expect("importer manifests hold only finite numbers and safe integers");
                workloads.push(PlannedRow::typed(typed));
            } else if counted {
                summary.duplicate_workloads += 1;
            }
            let entry = (id, d, m);
            workload_of.insert(key, entry.clone());
            entry
        };
    for workload in &dataset.workloads {
        add_workload(&mut workloads, workload, true);
    }

    // Solutions → projects + implementations, keyed by solution name: (row id, digest).
    let mut implementation_of: HashMap<&str, (String, String)> = HashMap::new();
    let mut seen_projects = HashSet::new();
    let mut seen_implementations = HashSet::new();
    for solution in &dataset.solutions {
        if is_agent(&solution.author) && !options.authors.iter().any(|a| a == &solution.author) {
            summary.skipped_solutions += 1;
            continue;
        }
        summary.solutions += 1;
        let definition = dataset.definition(&solution.definition).expect("read checked the solution's definition");
        let (operation_id, operation_digest) = &operation_of[definition.name.as_str()];
        let (project_slug, project_name) = project_of(&solution.author);
        let project_id = row_id("projects", &project_slug);
        if seen_projects.insert(project_slug.clone()) {
            let mut metadata = json!({ "name": project_slug });
            if is_agent(&solution.author) {
                metadata["labels"] = json!({ "provenance": "llm-generated" });
            }
            let m = manifest(
                "SoftwareProject",
                metadata,
                json!({
                    "name": project_name,
                    "host": { "kind": "huggingface", "id": "flashinfer-ai/flashinfer-trace" },
                    "repository": options.repository,
                }),
            );
            projects.push(row(
                "projects",
                vec![
                    ("id", json!(project_id)),
                    ("slug", json!(project_slug)),
                    ("name", json!(project_name)),
                    ("normalizedName", json!(project_name.to_lowercase())),
                    ("canonicalUrl", json!(options.repository)),
                    ("licenseExpression", Value::Null),
                    ("manifest", m),
                    ("createdAt", created.clone()),
                ],
            ));
        }
        for file in &solution.sources {
            add_artifact(
                &mut artifacts,
                &file.content,
                "source",
                media_type(&file.path),
                json!(options.repository),
                json!(LICENSE),
            );
        }
        let m = implementation_manifest(solution, definition, operation_digest, options);
        let d = digest(&m);
        let id = row_id("implementations", &d);
        implementation_of.insert(&solution.name, (id.clone(), d.clone()));
        if !seen_implementations.insert(d.clone()) {
            continue;
        }
        let architectures = m["spec"]["support"]["hardwareArchitectures"].clone();
        implementations.push(row(
            "implementations",
            vec![
                ("id", json!(id)),
                ("projectId", json!(project_id)),
                ("operationId", json!(operation_id)),
                ("slug", json!(format!("flashinfer-{}", names::slug(&solution.name)))),
                ("implementationDigest", json!(d)),
                // Without --revision the solution's own source digest names what was measured
                // (the catalog needs a revision for every implementation).
                (
                    "sourceRevision",
                    json!(
                        options
                            .revision
                            .clone()
                            .or_else(|| m["spec"]["source"]["contentDigest"].as_str().map(str::to_string))
                    ),
                ),
                ("language", json!(solution.language)),
                ("framework", Value::Null),
                ("targetArchitectures", architectures),
                ("licenseExpression", json!(LICENSE)),
                ("sourceAvailable", json!(true)),
                ("installable", json!(false)),
                ("title", json!(solution.name)),
                ("installKind", Value::Null),
                ("installCommand", Value::Null),
                ("licenseDeclared", json!(LICENSE)),
                ("manifest", m),
                ("createdAt", created.clone()),
                ("supersedesId", Value::Null),
            ],
        ));
    }

    let mut seen_runs = HashSet::new();
    for trace in &dataset.traces {
        let Some((implementation_id, implementation_digest)) = implementation_of.get(trace.solution.as_str()) else {
            // read::read_dataset refused unknown solutions, so this one's author was not admitted.
            summary.skipped_traces += 1;
            continue;
        };
        summary.traces += 1;
        let (workload_id, workload_digest, workload_manifest) = add_workload(&mut workloads, &trace.workload, false);
        let manifests = run_manifests(trace, implementation_digest, &workload_digest);
        if let Some(log_digest) = &manifests.log_digest {
            let d = add_artifact(&mut artifacts, &trace.evaluation.log, "log", "text/plain", Value::Null, Value::Null);
            debug_assert_eq!(&d, log_digest);
        }
        let keys = identity::benchmark_run_keys(
            &manifests.run,
            &manifests.protocol,
            &manifests.environment,
            &workload_manifest,
        )
        .expect("importer manifests are well formed");
        if !seen_runs.insert(keys.run_digest.clone()) {
            continue;
        }
        let run_id = row_id("benchmark_runs", &keys.run_digest);
        if let Some(p) = keys.primary.as_ref() {
            let id = row_id("measurements", &format!("{}:{}", keys.run_digest, p.metric_key()));
            measurements.push(PlannedRow::typed(MeasurementRow::primary(id, run_id.clone(), p)));
        }
        let facts = RunFacts {
            id: run_id,
            implementation_id: implementation_id.clone(),
            workload_id,
            source_id: Some(source_id.clone()),
            published_at: Some(created_at.clone()),
            reported: true,
            reproduced_by_kernelindex: false,
            independent_replication_count: 0,
            source_available: true,
            installable: false,
            license_expression: Some(LICENSE.to_string()),
            has_raw_evidence: manifests.log_digest.is_some(),
            label: SOURCE_SLUG.to_string(),
        };
        let typed = BenchmarkRunRow::new(facts, &keys, manifests.run, manifests.protocol, manifests.environment)
            .expect("importer manifests name the run's status, time and hardware");
        runs.push(PlannedRow::typed(typed));
    }
    summary.workloads = workloads.len();

    let mut rows = vec![source];
    rows.extend(projects);
    rows.extend(operations);
    rows.extend(aliases);
    rows.extend(workloads);
    rows.extend(implementations);
    rows.extend(runs);
    rows.extend(measurements);
    rows.extend(artifacts);
    ImportPlan { rows, summary }
}

impl ImportPlan {
    /// The rows of one table.
    pub fn table<'a>(&'a self, table: &'a str) -> impl Iterator<Item = &'a Map<String, Value>> + 'a {
        self.rows.iter().filter(move |r| r.table == table).map(|r| &r.row)
    }
}
