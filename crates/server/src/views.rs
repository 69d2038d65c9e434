//! View models: what each page shows, as plain serializable data. The HTML pages render
//! these and the JSON API serializes the very same values, so the two never disagree.

use serde::Serialize;
use serde_json::Value;

use crate::format;
use crate::model::{ReadModel, Row, number, opt_text, pointer, text};
use crate::store::Attestation;

/// Runs observed longer ago than this are flagged stale.
pub const STALE_AFTER_DAYS: i64 = 180;

#[derive(Debug, Clone, Serialize)]
pub struct Link {
    pub label: String,
    pub href: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Field {
    pub label: String,
    pub value: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub href: Option<String>,
    /// Shown in a monospace face with a copy button (digests, keys).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub code: bool,
}

impl Field {
    pub fn new(label: impl Into<String>, value: impl Into<String>) -> Field {
        Field { label: label.into(), value: value.into(), href: None, code: false }
    }
    fn link(mut self, href: impl Into<String>) -> Field {
        self.href = Some(href.into());
        self
    }
    fn code(mut self) -> Field {
        self.code = true;
        self
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Banner {
    /// `retracted`, `superseded` or `stale`.
    pub kind: &'static str,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<Link>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    pub id: String,
    pub short_id: String,
    pub digest: String,
    pub title: String,
    pub implementation: String,
    pub project: String,
    pub hardware: String,
    pub status: String,
    pub value: Option<f64>,
    pub unit: String,
    pub display: String,
    pub statistic: String,
    pub rank: Option<u32>,
    pub trust: String,
    pub observed_at: String,
    pub href: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Primary {
    pub metric: String,
    pub statistic: String,
    pub value: Option<f64>,
    pub unit: String,
    pub display: String,
    pub sample_count: Option<i64>,
    pub interval: Option<(f64, f64)>,
    pub interval_display: Option<String>,
    pub rank: Option<u32>,
    /// Eligible runs in the comparison group.
    pub group_size: usize,
    pub profile: String,
    pub observed_at: String,
    pub ineligible_reasons: Vec<String>,
    /// The comparison group's #1 when this run is not it.
    pub leader: Option<RunSummary>,
    pub compare_href: Option<String>,
    pub reference_speedup: Option<f64>,
    pub baseline_speedup: Option<f64>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Tensor {
    pub name: String,
    pub dtype: String,
    pub shape: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSection {
    pub axes: Vec<Field>,
    pub constants: Vec<Field>,
    pub tensors: Vec<Tensor>,
    pub definition_comparator: Option<String>,
    pub digest: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Measurement {
    pub metric: String,
    pub statistic: String,
    pub value: f64,
    pub unit: String,
    pub display: String,
    pub sample_count: Option<i64>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactView {
    pub kind: String,
    pub digest: String,
    pub media_type: String,
    pub size_bytes: Option<i64>,
    pub uri: Option<String>,
    pub license: Option<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Citation {
    pub permalink: String,
    pub digest: String,
    pub accessed: String,
    pub text: String,
    pub bibtex: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Deployability {
    pub deployable: bool,
    pub reasons: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunDossier {
    pub id: String,
    pub short_id: String,
    pub digest: String,
    pub title: String,
    pub status: String,
    /// Evidence level: reported, reproducible, verified or replicated.
    pub evidence_level: String,
    pub deployability: Deployability,
    pub banners: Vec<Banner>,
    pub primary: Primary,
    pub identity: Vec<Field>,
    pub correctness: Vec<Field>,
    pub workload: WorkloadSection,
    pub measurements: Vec<Measurement>,
    pub protocol: Vec<Field>,
    pub environment: Vec<Field>,
    pub artifacts: Vec<ArtifactView>,
    pub attestations: Vec<Attestation>,
    pub manifest: Value,
    pub citation: Citation,
    pub report_issue_href: String,
    pub published_at: Option<String>,
    pub source: Option<Link>,
    pub licence: Option<String>,
    pub operation: Option<Link>,
    pub implementation: Link,
    pub project: Link,
    pub json_href: String,
}

pub fn short_id(id: &str) -> String {
    id.chars().filter(|c| *c != '-').take(8).collect()
}

/// The primary value with its unit for display ("93.0 µs"), or "—".
pub fn primary_display(run: &Row) -> String {
    match (number(run, "primaryValue"), opt_text(run, "primaryUnit")) {
        (Some(v), Some(unit)) => format::measured(v, unit),
        (Some(v), None) => format::plain_number(v),
        _ => "—".into(),
    }
}

impl ReadModel {
    pub fn run_summary(&self, run: usize) -> RunSummary {
        let row = &self.runs.rows[run];
        let implementation = self.implementations.get(text(row, "implementationId"));
        let project = implementation.and_then(|i| self.projects.get(text(i, "projectId")));
        let facts = &self.judgement.facts[run];
        let id = text(row, "id").to_string();
        RunSummary {
            short_id: short_id(&id),
            href: format!("/runs/{id}"),
            id,
            digest: text(row, "runDigest").into(),
            title: run_title(row),
            implementation: implementation.map(|i| text(i, "slug")).unwrap_or("").into(),
            project: project.map(|p| text(p, "name")).unwrap_or("").into(),
            hardware: text(row, "hardwareModel").into(),
            status: text(row, "status").into(),
            value: number(row, "primaryValue"),
            unit: text(row, "primaryUnit").into(),
            display: primary_display(row),
            statistic: text(row, "primaryStatistic").into(),
            rank: facts.rank,
            trust: facts.trust.as_str().into(),
            observed_at: text(row, "observedAt").into(),
        }
    }

    pub fn dossier(&self, run: usize, attestations: Vec<Attestation>, base_url: &str) -> RunDossier {
        let row = &self.runs.rows[run];
        let id = text(row, "id").to_string();
        let digest = text(row, "runDigest").to_string();
        let manifest = row.get("manifest").cloned().unwrap_or(Value::Null);
        let run_spec = pointer(&manifest, &["run", "spec"]).cloned().unwrap_or(Value::Null);
        let facts = &self.judgement.facts[run];
        let implementation = self.implementations.get(text(row, "implementationId"));
        let project = implementation.and_then(|i| self.projects.get(text(i, "projectId")));
        let workload = self.workloads.get(text(row, "workloadId"));
        let operation = self.run_operation(run);
        let source = self.sources.get(text(row, "sourceId"));

        let implementation_link = Link {
            label: implementation.map(|i| text(i, "slug")).unwrap_or("unknown").into(),
            href: implementation.map(|i| format!("/implementations/{}", text(i, "slug"))).unwrap_or_default(),
        };
        let project_link = Link {
            label: project.map(|p| text(p, "name")).unwrap_or("unknown").into(),
            href: project.map(|p| format!("/projects/{}", text(p, "slug"))).unwrap_or_default(),
        };
        let operation_link = operation.map(|op| Link {
            label: self.operation_title(op).into(),
            href: format!("/operations/{}", text(&self.operations.rows[op], "slug")),
        });

        RunDossier {
            short_id: short_id(&id),
            title: run_title(row),
            status: text(row, "status").into(),
            evidence_level: facts.trust.as_str().into(),
            deployability: Deployability {
                deployable: facts.deployability.deployable,
                reasons: facts.deployability.reasons.iter().map(code_of).collect(),
            },
            banners: self.banners(run),
            primary: self.primary(run),
            identity: self.identity(run, &implementation_link, &project_link),
            correctness: correctness_fields(row, &manifest),
            workload: workload_section(workload, operation.map(|op| &self.operations.rows[op])),
            measurements: self.measurements(run),
            protocol: protocol_fields(&manifest),
            environment: environment_fields(&manifest),
            artifacts: self.artifacts_of(&run_spec, implementation),
            attestations,
            citation: citation(&id, &digest, &run_title(row), base_url, text(row, "observedAt")),
            report_issue_href: format!(
                "https://github.com/SamMausberg/KernelIndex/issues/new?title={}",
                percent_encode(&format!("Run {id}: "))
            ),
            published_at: opt_text(row, "publishedAt").map(|t| format::date_of(t).to_string()),
            source: source
                .map(|s| Link { label: text(s, "name").into(), href: format!("/docs#source-{}", text(s, "slug")) }),
            licence: source
                .and_then(|s| s.get("policy"))
                .and_then(|p| p.get("license"))
                .and_then(Value::as_str)
                .map(str::to_string),
            operation: operation_link,
            implementation: implementation_link,
            project: project_link,
            json_href: format!("/api/v1/runs/{id}"),
            manifest,
            digest,
            id,
        }
    }

    fn banners(&self, run: usize) -> Vec<Banner> {
        let row = &self.runs.rows[run];
        let mut banners = Vec::new();
        if let Some(at) = opt_text(row, "retractedAt") {
            let reason = opt_text(row, "retractionReason").unwrap_or("no reason given");
            banners.push(Banner {
                kind: "retracted",
                message: format!("Retracted on {}: {reason}", format::date_of(at)),
                link: None,
            });
        }
        for reason in &self.judgement.facts[run].ineligibility {
            if let ki_ranking::rank::Ineligibility::Superseded { by } = reason {
                let message = match self.supersessions.get(text(row, "id")) {
                    Some(entry) => format!(
                        "Superseded on {} by a newer published run: {}",
                        format::date_of(text(entry, "at")),
                        text(entry, "reason")
                    ),
                    None => "Superseded by a newer published run.".into(),
                };
                banners.push(Banner {
                    kind: "superseded",
                    message,
                    link: Some(Link { label: format!("Run {}", short_id(by)), href: format!("/runs/{by}") }),
                });
            }
        }
        if let Some(observed) = format::day_of(text(row, "observedAt")) {
            let age = format::today() - observed;
            if age > STALE_AFTER_DAYS {
                banners.push(Banner {
                    kind: "stale",
                    message: format!("Stale: observed {age} days ago (more than {STALE_AFTER_DAYS}); software and drivers may have moved on."),
                    link: None,
                });
            }
        }
        banners
    }

    fn primary(&self, run: usize) -> Primary {
        let row = &self.runs.rows[run];
        let facts = &self.judgement.facts[run];
        let cohort = &self.judgement.cohorts[facts.cohort];
        let unit = text(row, "primaryUnit").to_string();
        let interval = match (number(row, "uncertaintyLow"), number(row, "uncertaintyHigh")) {
            (Some(low), Some(high)) => Some((low, high)),
            _ => None,
        };
        let leader_run = cohort.ranking.first().map(|e| e.run).filter(|&leader| leader != run);
        let id = text(row, "id");
        Primary {
            metric: text(row, "primaryMetric").into(),
            statistic: text(row, "primaryStatistic").into(),
            value: number(row, "primaryValue"),
            display: primary_display(row),
            sample_count: row.get("sampleCount").and_then(Value::as_i64),
            interval_display: interval
                .map(|(l, h)| format!("{} – {}", format::measured(l, &unit), format::measured(h, &unit))),
            unit,
            interval,
            rank: facts.rank,
            group_size: cohort.ranking.len(),
            profile: profile_label(cohort.profile).into(),
            observed_at: format::date_of(text(row, "observedAt")).into(),
            ineligible_reasons: facts.ineligibility.iter().map(|r| r.code()).collect(),
            compare_href: leader_run
                .map(|leader| format!("/compare?run={id}&run={}", text(&self.runs.rows[leader], "id"))),
            leader: leader_run.map(|leader| self.run_summary(leader)),
            reference_speedup: facts.reference_speedup,
            baseline_speedup: facts.baseline_speedup,
        }
    }

    fn identity(&self, run: usize, implementation: &Link, project: &Link) -> Vec<Field> {
        let row = &self.runs.rows[run];
        let implementation_row = self.implementations.get(text(row, "implementationId"));
        let mut fields = vec![
            Field::new("implementation", &implementation.label).link(&implementation.href),
            Field::new("project", &project.label).link(&project.href),
        ];
        if let Some(revision) = implementation_row.and_then(|i| opt_text(i, "sourceRevision")) {
            fields.push(Field::new("revision", revision).code());
        }
        if let Some(workload) = self.workloads.get(text(row, "workloadId")) {
            let op = self.operations.get(text(workload, "operationId"));
            fields.push(Field::new("workload", workload_label(workload, op)));
        }
        fields.push(Field::new("comparison key", text(row, "comparisonKey")).code());
        if let Some(source) = self.sources.get(text(row, "sourceId")) {
            fields.push(Field::new("source", text(source, "name")));
        }
        let manifest = row.get("manifest").cloned().unwrap_or(Value::Null);
        if let Some(external) =
            pointer(&manifest, &["run", "spec", "sourceNative", "externalId"]).and_then(Value::as_str)
        {
            fields.push(Field::new("external id", external).code());
        }
        if let Some(benchmark) =
            pointer(&manifest, &["run", "spec", "sourceNative", "benchmark"]).and_then(Value::as_str)
        {
            fields.push(Field::new("source benchmark", benchmark));
        }
        fields.push(Field::new("hardware", hardware_label(row)));
        fields.push(Field::new("run digest", text(row, "runDigest")).code());
        fields
    }

    fn measurements(&self, run: usize) -> Vec<Measurement> {
        let mut out: Vec<Measurement> = self
            .measurements_by_run
            .get(&run)
            .map(|rows| {
                rows.iter()
                    .filter_map(|m| {
                        let value = number(m, "value")?;
                        let unit = text(m, "unit").to_string();
                        Some(Measurement {
                            metric: text(m, "metric").into(),
                            statistic: text(m, "statistic").into(),
                            display: format::measured(value, &unit),
                            value,
                            unit,
                            sample_count: m.get("sampleCount").and_then(Value::as_i64),
                        })
                    })
                    .collect()
            })
            .unwrap_or_default();
        out.sort_by(|a, b| (&a.metric, &a.statistic).cmp(&(&b.metric, &b.statistic)));
        out
    }

    fn artifacts_of(&self, run_spec: &Value, implementation: Option<&Row>) -> Vec<ArtifactView> {
        let mut digests = Vec::new();
        if let Some(evidence) = run_spec.get("evidence") {
            collect_digests(evidence, &mut digests);
        }
        if let Some(source) =
            implementation.and_then(|i| i.get("manifest")).and_then(|m| pointer(m, &["spec", "source"]))
        {
            collect_digests(source, &mut digests);
        }
        digests.sort();
        digests.dedup();
        digests
            .iter()
            .filter_map(|d| self.artifact_by_digest.get(d).map(|&a| &self.artifacts.rows[a]))
            .map(|a| ArtifactView {
                kind: text(a, "kind").into(),
                digest: text(a, "contentDigest").into(),
                media_type: text(a, "mediaType").into(),
                size_bytes: a.get("sizeBytes").and_then(Value::as_i64),
                uri: opt_text(a, "uri").map(str::to_string),
                license: opt_text(a, "license").map(str::to_string),
            })
            .collect()
    }
}

fn collect_digests(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::String(s) if s.starts_with("sha256:") && s.len() == 71 => out.push(s.clone()),
        Value::String(s) => {
            if let Some(at) = s.find("sha256:") {
                let candidate = &s[at..];
                if candidate.len() >= 71 {
                    out.push(candidate[..71].to_string());
                }
            }
        }
        Value::Object(map) => map.values().for_each(|v| collect_digests(v, out)),
        Value::Array(items) => items.iter().for_each(|v| collect_digests(v, out)),
        _ => {}
    }
}

pub fn code_of<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(Value::String(s)) => s,
        Ok(other) => other.to_string(),
        Err(_) => String::new(),
    }
}

pub fn profile_label(profile: ki_ranking::rank::CohortProfile) -> &'static str {
    match profile {
        ki_ranking::rank::CohortProfile::SourceNative => "source-native comparison",
        ki_ranking::rank::CohortProfile::StrictExact => "strict exact comparison",
    }
}

pub fn run_title(row: &Row) -> String {
    row.get("manifest")
        .and_then(|m| pointer(m, &["run", "metadata", "title"]))
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| format!("Run {}", short_id(text(row, "id"))))
}

pub fn hardware_label(row: &Row) -> String {
    match (opt_text(row, "hardwareModel"), opt_text(row, "hardwareArchitecture")) {
        (Some(model), Some(arch)) => format!("{model} ({arch})"),
        (Some(model), None) => model.to_string(),
        _ => "unknown".into(),
    }
}

/// The operation's variable axes of a workload and its dtypes, "batch_size = 16 · … · bf16".
pub fn workload_label(workload: &Row, operation: Option<&Row>) -> String {
    let axes = workload.get("manifest").and_then(|m| pointer(m, &["spec", "axes"])).and_then(Value::as_object);
    let variable = |name: &str| {
        operation
            .and_then(|op| op.get("manifest"))
            .and_then(|m| pointer(m, &["spec", "axes", name, "role"]))
            .and_then(Value::as_str)
            .is_none_or(|role| role != "constant")
    };
    let mut parts: Vec<String> = Vec::new();
    if let Some(axes) = axes {
        for (name, value) in axes {
            if variable(name) {
                parts.push(format!("{name} = {}", scalar(value)));
            }
        }
    }
    if let Some(dtypes) = workload.get("dtypes").and_then(Value::as_array) {
        let names: Vec<&str> = dtypes.iter().filter_map(Value::as_str).collect();
        if !names.is_empty() {
            parts.push(names.join("/"));
        }
    }
    parts.join(" · ")
}

pub fn scalar(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Null => "null".into(),
        other => other.to_string(),
    }
}

/// The protocol's comparator (what the seed page shows), the run's reported errors, and
/// the run's own comparator when it names a different one.
fn correctness_fields(row: &Row, manifest: &Value) -> Vec<Field> {
    let mut fields = Vec::new();
    let protocol_comparator = pointer(manifest, &["protocol", "spec", "correctness", "comparator"]).map(scalar);
    let run_correctness = pointer(manifest, &["run", "spec", "correctness"]).and_then(Value::as_object);
    let run_comparator = run_correctness.and_then(|c| c.get("comparator")).map(scalar);
    if let Some(c) = protocol_comparator.clone().or(run_comparator.clone()) {
        fields.push(Field::new("comparator", c));
    }
    if let Some(c) = run_correctness {
        for (key, label) in
            [("maximumAbsoluteError", "max absolute error"), ("maximumRelativeError", "max relative error")]
        {
            if let Some(v) = c.get(key) {
                fields.push(Field::new(label, scalar(v)));
            }
        }
        for (key, v) in c {
            if !matches!(key.as_str(), "comparator" | "maximumAbsoluteError" | "maximumRelativeError") {
                fields.push(Field::new(key.clone(), scalar(v)));
            }
        }
    }
    if protocol_comparator.is_some() && run_comparator.is_some() && protocol_comparator != run_comparator {
        fields.push(Field::new("run comparator", run_comparator.unwrap_or_default()));
    }
    fields.push(Field::new("result", text(row, "status")));
    fields
}

fn workload_section(workload: Option<&Row>, operation: Option<&Row>) -> WorkloadSection {
    let mut section = WorkloadSection {
        axes: Vec::new(),
        constants: Vec::new(),
        tensors: Vec::new(),
        definition_comparator: None,
        digest: String::new(),
    };
    let Some(workload) = workload else { return section };
    section.digest = text(workload, "workloadDigest").into();
    let Some(spec) = workload.get("manifest").and_then(|m| m.get("spec")) else { return section };
    if let Some(axes) = spec.get("axes").and_then(Value::as_object) {
        for (name, value) in axes {
            let role = operation
                .and_then(|op| op.get("manifest"))
                .and_then(|m| pointer(m, &["spec", "axes", name, "role"]))
                .and_then(Value::as_str);
            let field = Field::new(name.clone(), scalar(value));
            if role == Some("constant") { section.constants.push(field) } else { section.axes.push(field) }
        }
    }
    if let Some(tensors) = spec.get("tensors").and_then(Value::as_object) {
        for (name, t) in tensors {
            let shape = t.get("shape").map(|s| s.to_string().replace(',', ", ")).unwrap_or_default();
            section.tensors.push(Tensor {
                name: name.clone(),
                dtype: t.get("dtype").map(scalar).unwrap_or_default(),
                shape,
            });
        }
    }
    section.definition_comparator = pointer(spec, &["correctness", "comparator"]).map(scalar);
    section
}

/// Flattens a spec object into "a.b" style fields, the last path segment as the label
/// where that is unambiguous enough for reading.
fn flatten(prefix: &str, value: &Value, out: &mut Vec<Field>) {
    match value {
        Value::Object(map) => {
            for (key, v) in map {
                let label = if prefix.is_empty() { key.clone() } else { format!("{prefix}{}", capitalize(key)) };
                flatten(&label, v, out);
            }
        }
        Value::Array(items) => out.push(Field::new(prefix, items.iter().map(scalar).collect::<Vec<_>>().join(", "))),
        other => out.push(Field::new(prefix, scalar(other))),
    }
}

fn capitalize(key: &str) -> String {
    let mut chars = key.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn protocol_fields(manifest: &Value) -> Vec<Field> {
    let mut fields = Vec::new();
    let Some(spec) = pointer(manifest, &["protocol", "spec"]) else { return fields };
    if let Some(harness) = spec.get("harness") {
        let name = harness.get("name").map(scalar).unwrap_or_default();
        let mut field = Field::new("harness", name);
        if let Some(repo) = harness.get("repository").and_then(Value::as_str).filter(|u| u.starts_with("https://")) {
            field.href = Some(repo.to_string());
        }
        fields.push(field);
        if let Some(version) = harness.get("version") {
            fields.push(Field::new("harnessVersion", scalar(version)));
        }
    }
    // Measurement and correctness keys read as the seed page prints them: timer,
    // primaryStatistic, correctnessReference, comparabilityFamily.
    if let Some(m) = spec.get("measurement") {
        flatten("", m, &mut fields);
    }
    if let Some(c) = spec.get("correctness") {
        flatten("correctness", c, &mut fields);
    }
    if let Some(c) = spec.get("comparability") {
        flatten("comparability", c, &mut fields);
    }
    for (key, v) in spec.as_object().into_iter().flatten() {
        if !matches!(key.as_str(), "harness" | "measurement" | "correctness" | "comparability") {
            flatten(key, v, &mut fields);
        }
    }
    fields
}

fn environment_fields(manifest: &Value) -> Vec<Field> {
    let mut fields = Vec::new();
    let Some(spec) = pointer(manifest, &["environment", "spec"]) else { return fields };
    if let Some(hw) = spec.get("hardware") {
        let product = hw.get("product").map(scalar).unwrap_or_else(|| "unknown".into());
        let arch = hw.get("architecture").map(scalar);
        fields.push(Field::new(
            "gpu",
            match arch {
                Some(a) => format!("{product} ({a})"),
                None => product,
            },
        ));
        for (key, v) in hw.as_object().into_iter().flatten() {
            if !matches!(key.as_str(), "product" | "architecture") {
                flatten(key, v, &mut fields);
            }
        }
    }
    if let Some(sw) = spec.get("software").and_then(Value::as_object) {
        for (key, v) in sw {
            match (key.as_str(), v) {
                ("framework", Value::Object(f)) => fields.push(Field::new(
                    "framework",
                    format!(
                        "{} {}",
                        f.get("name").map(scalar).unwrap_or_default(),
                        f.get("version").map(scalar).unwrap_or_default()
                    )
                    .trim()
                    .to_string(),
                )),
                ("libraries", Value::Object(libs)) => {
                    for (name, version) in libs {
                        fields.push(Field::new(name.clone(), scalar(version)));
                    }
                }
                _ => flatten(key, v, &mut fields),
            }
        }
    }
    for (key, v) in spec.as_object().into_iter().flatten() {
        if !matches!(key.as_str(), "hardware" | "software") {
            flatten(key, v, &mut fields);
        }
    }
    fields
}

fn citation(id: &str, digest: &str, title: &str, base_url: &str, observed_at: &str) -> Citation {
    let permalink = format!("{base_url}/runs/{id}");
    let accessed = format::date_text(format::today());
    let year = observed_at.get(0..4).unwrap_or("n.d.");
    let key = format!("kernelindex_{}", short_id(id));
    // BibTeX treats braces and backslashes specially; drop them from free text.
    let safe_title: String = title.chars().filter(|c| !matches!(c, '{' | '}' | '\\')).collect();
    Citation {
        text: format!("KernelIndex. “{safe_title}”. Run {id}, {digest}. {permalink} (accessed {accessed})."),
        bibtex: format!(
            "@misc{{{key},\n  title = {{{safe_title}}},\n  author = {{{{KernelIndex}}}},\n  year = {{{year}}},\n  howpublished = {{\\url{{{permalink}}}}},\n  note = {{Run digest {digest}; accessed {accessed}}}\n}}"
        ),
        permalink,
        digest: digest.into(),
        accessed,
    }
}

/// Percent-encodes everything but unreserved characters (RFC 3986).
pub fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
