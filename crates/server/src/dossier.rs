//! A run's dossier: everything the index knows about one run (its primary measurement and
//! rank, identity, correctness, workload, every statistic its manifest records, its samples,
//! protocol, environment, artifacts, attestations and citation), built from the read model;
//! `pages/run.rs` renders it, the CLI (`ki show run`) prints it.

use serde::Serialize;
use serde_json::Value;

use crate::model::{
    Field, Link, OperationAxis, ReadModel, RunDetail, RunRow, RunSummary, code_of, gpu_href, percent_encode, pointer,
    primary_display, scalar, short_id,
};
use crate::problem::Problem;
use ki_catalog::Attestation;

/// The ranking's rule for a stale run, one number for the web, the JSON and the CLI.
use ki_ranking::views::STALE_AFTER_DAYS;

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Banner {
    /// `retracted`, `superseded` or `stale`.
    pub kind: &'static str,
    /// The kind in words, the heading the message follows ("Retracted", "Stale:").
    pub title: &'static str,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub link: Option<Link>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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
    /// The reference's time beside the speedup, when it can be known.
    pub reference: Option<ReferenceTime>,
    /// What the interval is ("95 % confidence interval" when the manifest says so).
    pub interval_label: String,
    /// `ineligible_reasons` in words.
    pub ineligible_explanations: Vec<String>,
}

/// The reference's time behind "× reference".
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReferenceTime {
    pub ns: f64,
    pub display: String,
    /// `measured` (the source reports the reference's own time) or `derived` (this run's
    /// time × the factor).
    pub basis: &'static str,
    pub explanation: String,
}

/// One statistic the manifest records (the timing summary, the source's own metrics).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Statistic {
    /// The manifest's key (`p05`, `mean_ns`).
    pub key: String,
    /// The key in words.
    pub label: String,
    pub value: f64,
    pub unit: String,
    pub display: String,
    /// `timing` (run.spec.timing) or `source metrics` (run.spec.sourceNative.metrics).
    pub origin: &'static str,
}

/// What the index knows about the run's samples.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Samples {
    pub count: Option<u64>,
    /// Whether the index holds the sample values (it holds only their artifact's name and
    /// digest: no catalog table carries sample values).
    pub values_held: bool,
    /// The artifact that names them, when the run names one.
    pub artifact: Option<ArtifactView>,
    pub explanation: String,
    /// A server-rendered SVG of the summary the manifest records (minimum, 5th and 95th
    /// percentile, median, mean, maximum, interval), when it records one.
    #[serde(skip)]
    pub summary_svg: Option<String>,
    /// The histogram of the raw samples, when the catalog's content store holds them.
    pub histogram: Option<crate::chart::Histogram>,
    /// Which series of the samples file the histogram counts (`inGraphPerCall`: the
    /// per-call time inside one captured graph, the published latency; or `cuptiPerCall`).
    pub series: Option<&'static str>,
    #[serde(skip)]
    pub histogram_svg: Option<String>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Tensor {
    pub name: String,
    pub dtype: String,
    pub shape: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadSection {
    pub axes: Vec<Field>,
    pub constants: Vec<Field>,
    pub tensors: Vec<Tensor>,
    pub definition_comparator: Option<String>,
    pub digest: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Measurement {
    pub metric: String,
    /// The metric in words.
    pub label: String,
    pub statistic: String,
    pub value: f64,
    pub unit: String,
    pub display: String,
    pub sample_count: Option<i64>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactView {
    /// What the run calls it, in words ("raw samples", "logs", "source code").
    pub name: String,
    pub kind: String,
    pub digest: String,
    pub media_type: String,
    pub size_bytes: Option<u64>,
    pub size_display: Option<String>,
    pub uri: Option<String>,
    /// A link to it, when its address is an https URL.
    pub href: Option<String>,
    pub storage: Option<String>,
    pub license: Option<String>,
    /// Whether the catalog has a row describing it (it never holds the content).
    pub described_in_catalog: bool,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Citation {
    pub permalink: String,
    pub digest: String,
    pub accessed: String,
    pub text: String,
    pub bibtex: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Deployability {
    pub deployable: bool,
    pub reasons: Vec<String>,
    /// `reasons` in words.
    pub explanations: Vec<String>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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
    /// Every statistic the manifest records beside the measurements.
    pub statistics: Vec<Statistic>,
    pub samples: Samples,
    pub protocol: Vec<Field>,
    pub environment: Vec<Field>,
    pub artifacts: Vec<ArtifactView>,
    /// One page of the run's attestations, newest first (`?page=N`).
    pub attestations: Vec<Attestation>,
    /// The run's attestations in all.
    pub attestation_count: u64,
    /// Which page of them `attestations` is, from 1, and how many pages there are.
    pub attestation_page: u64,
    pub attestation_pages: u64,
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
    /// The implementation's source on its page, when the index holds it.
    pub source_href: Option<String>,
}

impl ReadModel {
    /// The run's dossier from its details ([`ReadModel::run_detail`]).
    pub fn dossier(
        &self,
        run: usize,
        detail: RunDetail,
        attestations: ki_catalog::AttestationPage,
        base_url: &str,
    ) -> RunDossier {
        let RunDetail { manifest, measurements } = detail;
        let row = self.run(run);
        let id = row.id.to_string();
        let digest = row.run_digest.to_string();
        let run_spec = pointer(&manifest, &["run", "spec"]).cloned().unwrap_or(Value::Null);
        let facts = &self.judgement.facts[run];
        let implementation = self.judgement.implementation_of(run);
        // Parsed once: the identity's source code field and the artifacts read it.
        let implementation_manifest = self.judgement.implementation_manifest(self.judgement.run_implementation(run));
        let project = self.judgement.project_of(run);
        let workload = self.judgement.run_workload(run);
        let operation = self.judgement.workload_operation(workload);
        let source = self.judgement.source_of(run);

        let implementation_link =
            Link { label: implementation.slug.clone(), href: format!("/implementations/{}", implementation.slug) };
        let project_link = Link { label: project.name.clone(), href: format!("/projects/{}", project.slug) };
        let operation_link = Some(Link {
            label: self.operation_title(operation).into(),
            href: format!("/operations/{}", self.judgement.operations[operation].slug),
        });

        RunDossier {
            short_id: short_id(&id),
            title: self.run_title(run),
            status: row.status.to_string(),
            evidence_level: facts.trust.as_str().into(),
            deployability: Deployability {
                deployable: facts.deployability.deployable,
                reasons: facts.deployability.reasons.iter().map(code_of).collect(),
                explanations: facts.deployability.reasons.iter().map(|r| deployability_sentence(*r).into()).collect(),
            },
            banners: self.banners(run),
            primary: self.primary(run, &manifest),
            identity: self.identity(run, &manifest, &implementation_manifest, &implementation_link, &project_link),
            correctness: correctness_fields(row, &manifest),
            // The whole manifest: the section shows its tensors.
            workload: workload_section(
                &self.judgement.workloads[workload].workload_digest,
                &self.judgement.workload_manifest(workload),
                &self.operation_axes[operation],
            ),
            measurements: measurement_list(&measurements, &manifest),
            statistics: statistics(&run_spec),
            samples: self.samples(row, &run_spec),
            protocol: protocol_fields(&manifest),
            environment: environment_fields(&manifest),
            artifacts: self.artifacts_of(&run_spec, &implementation_manifest),
            attestation_count: attestations.total,
            attestation_page: attestations.page,
            attestation_pages: attestations.pages,
            attestations: attestations.items,
            citation: citation(&id, &digest, &self.run_title(run), base_url, &row.observed_at.text()),
            report_issue_href: format!(
                "https://github.com/SamMausberg/KernelIndex/issues/new?title={}",
                percent_encode(&format!("Run {id}: "))
            ),
            published_at: row.published_at.get().map(|t| ki_model::utc::date_of(&t.text()).to_string()),
            source: source.map(|s| Link { label: s.name.clone(), href: format!("/docs#source-{}", s.slug) }),
            licence: source.and_then(|s| s.policy.as_ref()?.get("license")).and_then(Value::as_str).map(str::to_string),
            operation: operation_link,
            implementation: implementation_link,
            project: project_link,
            json_href: format!("/api/v1/runs/{id}"),
            source_href: None,
            manifest,
            digest: digest.to_string(),
            id: id.to_string(),
        }
    }

    fn banners(&self, run: usize) -> Vec<Banner> {
        let row = self.run(run);
        let mut banners = Vec::new();
        if let Some(at) = row.retracted_at.as_ref().map(|at| at.text()) {
            let reason = row.retraction_reason.as_deref().filter(|r| !r.is_empty()).unwrap_or("no reason given");
            banners.push(Banner {
                kind: "retracted",
                title: banner_title("retracted"),
                message: format!("on {}: {reason}", ki_model::utc::date_of(&at)),
                link: None,
            });
        }
        for reason in self.judgement.facts[run].ineligibility() {
            if let ki_ranking::rank::Ineligibility::Superseded { by } = reason {
                let message = match self.supersessions.get(&*row.id.text()) {
                    Some(entry) => {
                        format!("on {} by a newer published run: {}", ki_model::utc::date_of(&entry.at), entry.reason)
                    }
                    None => "by a newer published run.".into(),
                };
                banners.push(Banner {
                    kind: "superseded",
                    title: banner_title("superseded"),
                    message,
                    link: Some(Link { label: format!("Run {}", short_id(by)), href: format!("/runs/{by}") }),
                });
            }
        }
        if let Some(observed) = ki_model::utc::day_of(&row.observed_at.text()) {
            let age = ki_model::utc::today() - observed;
            if age > STALE_AFTER_DAYS {
                banners.push(Banner {
                    kind: "stale",
                    title: banner_title("stale"),
                    message: format!("observed {age} days ago (more than {STALE_AFTER_DAYS}); software and drivers may have moved on."),
                    link: None,
                });
            }
        }
        banners
    }

    fn primary(&self, run: usize, manifest: &Value) -> Primary {
        let row = self.run(run);
        let facts = &self.judgement.facts[run];
        let cohort = &self.judgement.cohorts[facts.cohort()];
        let unit = row.primary_unit.as_deref().unwrap_or_default().to_string();
        let interval = match (row.uncertainty_low.get(), row.uncertainty_high.get()) {
            (Some(low), Some(high)) => Some((low, high)),
            _ => None,
        };
        let leader_run = cohort.ranking.first().map(|e| e.run).filter(|&leader| leader != run);
        let id = &row.id;
        let reference = facts.reference_speedup.get().and_then(|factor| reference_time(row, manifest, factor));
        let interval_label = if pointer(manifest, &["run", "spec", "timing", "latencyNs", "confidence95"]).is_some() {
            "95 % confidence interval"
        } else {
            "interval"
        };
        Primary {
            reference,
            interval_label: interval_label.into(),
            ineligible_explanations: facts.ineligibility().iter().map(ineligibility_sentence).collect(),
            metric: row.primary_metric.as_deref().unwrap_or_default().to_string(),
            statistic: row.primary_statistic.as_deref().unwrap_or_default().to_string(),
            value: row.primary_value.get(),
            display: primary_display(row),
            sample_count: row.sample_count.get(),
            interval_display: interval.map(|(l, h)| {
                format!("{} – {}", ki_model::units::measured(l, &unit), ki_model::units::measured(h, &unit))
            }),
            unit,
            interval,
            rank: facts.rank(),
            group_size: cohort.ranking.len(),
            profile: profile_label(cohort.profile).into(),
            observed_at: ki_model::utc::date_of(&row.observed_at.text()).into(),
            ineligible_reasons: facts.ineligibility().iter().map(|r| r.code()).collect(),
            compare_href: leader_run.map(|leader| format!("/compare?run={id}&run={}", self.run(leader).id)),
            leader: leader_run.map(|leader| self.run_summary(leader)),
            reference_speedup: facts.reference_speedup.get(),
            baseline_speedup: facts.baseline_speedup.get(),
        }
    }

    fn identity(
        &self,
        run: usize,
        manifest: &Value,
        implementation_manifest: &Value,
        implementation: &Link,
        project: &Link,
    ) -> Vec<Field> {
        let row = self.run(run);
        let mut fields = vec![
            Field::new("implementation", &implementation.label).link(&implementation.href),
            Field::new("project", &project.label).link(&project.href),
        ];
        let revision = self.judgement.implementation_of(run).source_revision.as_str();
        if !revision.is_empty() {
            fields.push(Field::new("revision", revision).code());
        }
        fields.push(Field::new("workload", self.run_workload_label(run)));
        fields.push(Field::new("comparison key", &*row.comparison_key).code());
        if let Some(source) = self.judgement.source_of(run) {
            fields.push(Field::new("source", &source.name));
        }
        if let Some(external) =
            pointer(manifest, &["run", "spec", "sourceNative", "externalId"]).and_then(Value::as_str)
        {
            fields.push(Field::new("external id", external).code());
        }
        if let Some(benchmark) =
            pointer(manifest, &["run", "spec", "sourceNative", "benchmark"]).and_then(Value::as_str)
        {
            fields.push(Field::new("source benchmark", benchmark));
        }
        fields.push(self.source_code(row.source_available, implementation_manifest));
        let hardware = Field::new("hardware", hardware_label(row));
        fields.push(match row.hardware_model.as_deref().filter(|m| !m.is_empty()) {
            Some(model) => hardware.link(gpu_href(model)),
            None => hardware,
        });
        fields.push(Field::new("run digest", row.run_digest.to_string()).code());
        fields
    }

    /// Where an implementation's source is: its repository, the file the index holds a digest of
    /// (linked where its artifact row has an https address), or a plain statement that the index
    /// has neither. `implementation_manifest` is the implementation's manifest.
    pub fn source_code(&self, available: bool, implementation_manifest: &Value) -> Field {
        let spec = implementation_manifest.get("spec");
        let repository = spec
            .and_then(|s| pointer(s, &["projectRevision", "repository"]))
            .and_then(Value::as_str)
            .filter(|u| u.starts_with("https://"));
        if let Some(repository) = repository {
            let version = spec.and_then(|s| pointer(s, &["projectRevision", "version"])).and_then(Value::as_str);
            let label = match version {
                Some(v) => format!("{repository} at {v}"),
                None => repository.to_string(),
            };
            return Field::new("source code", label).link(repository);
        }
        if let Some(source) = spec.and_then(|s| s.get("source")) {
            let file = source.get("fileName").and_then(Value::as_str).unwrap_or("source file");
            let digest = source.get("contentDigest").and_then(Value::as_str).unwrap_or("");
            let view = self.artifact_view("source code", digest, None);
            let field = Field::new("source code", format!("{file} ({digest})"));
            return match view.href {
                Some(href) => field.link(href),
                None => field,
            };
        }
        Field::new(
            "source code",
            if available {
                "the source reports it available, but the index holds neither a copy nor a link"
            } else {
                "not available"
            },
        )
    }

    /// One evidence reference (`{uri, digest}`) as an artifact, with the catalog's row for its
    /// digest when there is one.
    fn artifact_view(&self, name: &str, digest: &str, uri: Option<&str>) -> ArtifactView {
        let row = self.judgement.artifact_index(digest).map(|a| &self.judgement.artifacts[a]);
        let present = |text: &Option<String>| text.as_deref().filter(|t| !t.is_empty()).map(str::to_string);
        let uri = row.and_then(|a| present(&a.uri)).or(uri.map(str::to_string));
        let size_bytes = row.map(|a| a.size_bytes);
        ArtifactView {
            name: name.into(),
            kind: row.map(|a| a.kind.clone()).unwrap_or_else(|| name.into()),
            digest: digest.into(),
            media_type: row.map(|a| a.media_type.clone()).unwrap_or_default(),
            size_display: size_bytes.map(ki_model::units::bytes),
            size_bytes,
            href: uri.clone().filter(|u| u.starts_with("https://")),
            uri,
            storage: row.map(|a| a.storage.clone()).filter(|s| !s.is_empty()),
            license: row.and_then(|a| present(&a.license)),
            described_in_catalog: row.is_some(),
        }
    }

    /// The run's evidence (raw samples, logs: `run.spec.evidence` and `run.spec.timing.rawSamples`)
    /// and its implementation's source, each once.
    fn artifacts_of(&self, run_spec: &Value, implementation_manifest: &Value) -> Vec<ArtifactView> {
        let mut out: Vec<ArtifactView> = Vec::new();
        let mut push = |view: ArtifactView| {
            if !out.iter().any(|a| a.digest == view.digest && a.name == view.name) {
                out.push(view);
            }
        };
        let mut references: Vec<(String, &Value)> = Vec::new();
        for (key, reference) in run_spec.get("evidence").and_then(Value::as_object).into_iter().flatten() {
            references.push((words(key), reference));
        }
        if let Some(raw) = pointer(run_spec, &["timing", "rawSamples"]) {
            references.push(("raw samples".into(), raw));
        }
        for (name, reference) in references {
            let mut digests = Vec::new();
            collect_digests(reference, &mut digests);
            let uri = reference.get("uri").and_then(Value::as_str);
            for digest in digests.into_iter().take(1) {
                push(self.artifact_view(&name, &digest, uri));
            }
        }
        if let Some(source) = pointer(implementation_manifest, &["spec", "source"]) {
            let mut digests = Vec::new();
            collect_digests(source, &mut digests);
            let file = source.get("fileName").and_then(Value::as_str);
            for digest in digests {
                let mut view = self.artifact_view("source code", &digest, None);
                if view.uri.is_none() {
                    view.uri = file.map(str::to_string);
                }
                push(view);
            }
        }
        out
    }

    /// The samples: their count, the artifact that names them, and the manifest's summary.
    fn samples(&self, row: &RunRow, run_spec: &Value) -> Samples {
        let timing = run_spec.get("timing");
        let count = timing
            .and_then(|t| t.get("samples"))
            .and_then(Value::as_u64)
            .or_else(|| row.sample_count.get().and_then(|n| u64::try_from(n).ok()));
        let reference =
            pointer(run_spec, &["evidence", "rawSamples"]).or_else(|| timing.and_then(|t| t.get("rawSamples")));
        let artifact = reference.and_then(|r| {
            let digest = r.get("digest").and_then(Value::as_str)?;
            Some(self.artifact_view("raw samples", digest, r.get("uri").and_then(Value::as_str)))
        });
        let explanation = match &artifact {
            Some(a) => format!(
                "The run names its raw samples ({}, digest {}), but the index does not hold their values: no \
                 catalog table carries them, so there is no histogram of the samples here.{}",
                a.uri.as_deref().unwrap_or("no address"),
                a.digest,
                if a.href.is_some() {
                    " Follow the link to read them."
                } else {
                    " Their address is relative to the session that produced the run, not a link."
                }
            ),
            None => "The run names no raw samples; only the summary below is known.".into(),
        };
        let summary = timing.and_then(|t| t.get("latencyNs")).and_then(Value::as_object);
        let summary_svg = summary.and_then(|s| {
            let get = |key: &str| s.get(key).and_then(Value::as_f64);
            let interval = s.get("confidence95").and_then(Value::as_array).and_then(|pair| match pair.as_slice() {
                [low, high] => Some((low.as_f64()?, high.as_f64()?)),
                _ => None,
            });
            crate::chart::summary_svg(&crate::chart::Summary {
                minimum: get("minimum"),
                p05: get("p05"),
                median: get("median"),
                mean: get("mean"),
                p95: get("p95"),
                maximum: get("maximum"),
                interval,
            })
        });
        Samples {
            count,
            values_held: false,
            artifact,
            explanation,
            summary_svg,
            histogram: None,
            series: None,
            histogram_svg: None,
        }
    }
}

/// The reference's time: the source's own measurement of it when the manifest has one,
/// else this run's time × the factor.
fn reference_time(row: &RunRow, manifest: &Value, factor: f64) -> Option<ReferenceTime> {
    let metrics = pointer(manifest, &["run", "spec", "sourceNative", "metrics"]);
    if let Some(ms) = metrics.and_then(|m| m.get("reference_latency_ms")).and_then(Value::as_f64) {
        let ns = ms * 1e6;
        return Some(ReferenceTime {
            ns,
            display: ki_model::units::duration_ns(ns),
            basis: "measured",
            explanation: "the reference's own time, as the source measured it".into(),
        });
    }
    let own_ns = metrics
        .and_then(|m| m.get("latency_ms"))
        .and_then(Value::as_f64)
        .map(|ms| ms * 1e6)
        .or_else(|| ki_model::units::to_ns(row.primary_value.get()?, row.primary_unit.as_deref().unwrap_or("")))?;
    let ns = own_ns * factor;
    ns.is_finite().then(|| ReferenceTime {
        ns,
        display: ki_model::units::duration_ns(ns),
        basis: "derived",
        explanation: "derived: this run's time × the factor".into(),
    })
}

/// The timing summary (`run.spec.timing.latencyNs`, in nanoseconds) and the source's own metrics
/// (`run.spec.sourceNative.metrics`, their unit read from the key's suffix), each in words.
fn statistics(run_spec: &Value) -> Vec<Statistic> {
    let mut out = Vec::new();
    if let Some(summary) = pointer(run_spec, &["timing", "latencyNs"]).and_then(Value::as_object) {
        let order = ["median", "mean", "p05", "p95", "minimum", "maximum"];
        let mut keys: Vec<&String> = summary.keys().collect();
        keys.sort_by_key(|k| order.iter().position(|o| o == k).unwrap_or(order.len()));
        for key in keys {
            if let Some(value) = summary[key.as_str()].as_f64() {
                out.push(Statistic {
                    key: key.clone(),
                    label: words(key),
                    value,
                    unit: "ns".into(),
                    display: ki_model::units::duration_ns(value),
                    origin: "timing",
                });
            }
        }
    }
    if let Some(metrics) = pointer(run_spec, &["sourceNative", "metrics"]).and_then(Value::as_object) {
        for (key, v) in metrics {
            let Some(value) = v.as_f64() else { continue };
            let (stem, unit) = match key.rsplit_once('_') {
                Some((stem, unit @ ("ns" | "us" | "ms" | "s"))) => (stem, unit),
                _ => (key.as_str(), ""),
            };
            out.push(Statistic {
                key: key.clone(),
                label: words(stem),
                value,
                unit: unit.into(),
                display: if unit.is_empty() {
                    ki_model::units::number(value)
                } else {
                    ki_model::units::measured(value, unit)
                },
                origin: "source metrics",
            });
        }
    }
    out
}

/// A metric's name in words (`latency_graph_replay` → "latency, one-call graph replay").
pub fn metric_label(metric: &str) -> String {
    match metric {
        "latency_in_graph" => "latency inside one captured graph".into(),
        "latency_eager" => "latency, eager launches".into(),
        "latency_graph_replay" => "latency, one-call graph replay".into(),
        "speed_of_light" => "share of the speed of light".into(),
        other => words(other),
    }
}

/// A manifest key in words: camelCase and snake_case split, known abbreviations spelled as
/// people write them (`harnessVersion` → "harness version", `l2_cache_bytes` → "L2 cache bytes",
/// `p05` → "5th percentile").
pub fn words(key: &str) -> String {
    match key {
        "p05" => return "5th percentile".into(),
        "p50" => return "50th percentile".into(),
        "p95" => return "95th percentile".into(),
        "p99" => return "99th percentile".into(),
        "confidence95" => return "95 % confidence interval".into(),
        _ => {}
    }
    let mut parts: Vec<String> = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in key.chars() {
        if c == '_' || c == '-' || c == ' ' || c == '.' {
            if !current.is_empty() {
                parts.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !current.is_empty() {
            parts.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
        .iter()
        .map(|w| match w.as_str() {
            "cuda" => "CUDA".to_string(),
            "gpu" => "GPU".to_string(),
            "cpu" => "CPU".to_string(),
            "sm" => "SM".to_string(),
            "l2" => "L2".to_string(),
            "id" => "ID".to_string(),
            "khz" => "kHz".to_string(),
            "mhz" => "MHz".to_string(),
            "gbps" => "GB/s".to_string(),
            "w" => "W".to_string(),
            "ns" => "ns".to_string(),
            "os" => "OS".to_string(),
            _ => w.clone(),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Why a run is not deployable, in a sentence.
pub fn deployability_sentence(reason: ki_ranking::index::DeployabilityReason) -> &'static str {
    use ki_ranking::index::DeployabilityReason as R;
    match reason {
        R::NoPublicSource => "Its source code is not public.",
        R::NoLicense => "It declares no licence.",
        R::LicenseNotPermissive => "Its licence is not a permissive one.",
        R::LicenseUnparseable => "Its licence expression cannot be read.",
        R::NoInstallRecipe => "There is no install recipe: the index does not know how to install it.",
    }
}

/// Why a run is not ranked, in words.
pub fn ineligibility_sentence(reason: &ki_ranking::rank::Ineligibility) -> String {
    use ki_ranking::rank::Ineligibility as I;
    match reason {
        I::Unpublished => "it is not published".into(),
        I::Status(status) => format!("its result is {}", words(status)),
        I::Retracted => "it was retracted".into(),
        I::Superseded { .. } => "a newer run supersedes it".into(),
        I::MissingPrimaryMetric => "it has no primary measurement".into(),
    }
}

/// A key as a label: in words, less a trailing "bytes" (the value says it: `139.8 GiB (… bytes)`).
fn label_of(key: &str) -> String {
    let label = words(key);
    match label.strip_suffix(" bytes") {
        Some(stem) if key.to_ascii_lowercase().ends_with("bytes") => stem.to_string(),
        _ => label,
    }
}

/// A manifest value as people read it: numbers through the one formatter (sizes in bytes for
/// keys that say so), booleans as yes / no.
fn value_text(key: &str, value: &Value) -> String {
    match value {
        Value::Number(n) => match n.as_f64() {
            Some(v) if key.to_ascii_lowercase().ends_with("bytes") && v >= 0.0 && v.fract() == 0.0 => {
                ki_model::units::bytes(v as u64)
            }
            Some(v) => ki_model::units::number(v),
            None => n.to_string(),
        },
        Value::Bool(true) => "yes".into(),
        Value::Bool(false) => "no".into(),
        other => scalar(other),
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

/// The protocol's comparator (what the seed page shows), the run's reported errors, and
/// the run's own comparator when it names a different one.
fn correctness_fields(row: &RunRow, manifest: &Value) -> Vec<Field> {
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
                fields.push(Field::new(label, value_text(key, v)));
            }
        }
        for (key, v) in c {
            if !matches!(key.as_str(), "comparator" | "maximumAbsoluteError" | "maximumRelativeError") {
                fields.push(Field::new(words(key), value_text(key, v)));
            }
        }
    }
    if protocol_comparator.is_some() && run_comparator.is_some() && protocol_comparator != run_comparator {
        fields.push(Field::new("run comparator", run_comparator.unwrap_or_default()));
    }
    fields.push(Field::new("result", words(&row.status)));
    fields
}

/// A workload (its digest and manifest) beside the axes its operation declares.
fn workload_section(digest: &str, manifest: &Value, operation_axes: &[OperationAxis]) -> WorkloadSection {
    let mut section = WorkloadSection {
        axes: Vec::new(),
        constants: Vec::new(),
        tensors: Vec::new(),
        definition_comparator: None,
        digest: digest.into(),
    };
    let Some(spec) = manifest.get("spec") else { return section };
    if let Some(axes) = spec.get("axes").and_then(Value::as_object) {
        for (name, value) in axes {
            let constant = operation_axes.iter().any(|axis| axis.name == *name && axis.constant);
            let field = Field::new(name.clone(), scalar(value));
            if constant { section.constants.push(field) } else { section.axes.push(field) }
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
        Value::Array(items) => out.push(Field::new(
            words(prefix),
            items.iter().map(|v| value_text(prefix, v)).collect::<Vec<_>>().join(", "),
        )),
        other => out.push(Field::new(label_of(prefix), value_text(prefix, other))),
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
            fields.push(Field::new("harness version", scalar(version)));
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
            "GPU",
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
                        fields.push(Field::new(words(name), scalar(version)));
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
    // What the runner read off the device at the start (its labels are text: numbers parsed back).
    for (key, v) in
        pointer(manifest, &["environment", "metadata", "labels"]).and_then(Value::as_object).into_iter().flatten()
    {
        let parsed = v.as_str().and_then(|t| t.parse::<f64>().ok()).and_then(serde_json::Number::from_f64);
        let value = parsed.map(Value::Number).unwrap_or_else(|| v.clone());
        fields.push(Field::new(label_of(key), value_text(key, &value)));
    }
    fields
}

fn citation(id: &str, digest: &str, title: &str, base_url: &str, observed_at: &str) -> Citation {
    let permalink = format!("{base_url}/runs/{id}");
    let accessed = ki_model::utc::date_text(ki_model::utc::today());
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

/// The banner's heading: the kind in words.
fn banner_title(kind: &str) -> &'static str {
    match kind {
        "retracted" => "Retracted",
        "superseded" => "Superseded",
        "stale" => "Stale:",
        _ => "Note:",
    }
}

/// The run's measurement rows and the manifest's own measurements the rows do not carry, by metric.
fn measurement_list(rows: &[ki_ranking::rows::MeasurementRow], manifest: &Value) -> Vec<Measurement> {
    let mut out: Vec<Measurement> = rows
        .iter()
        .filter_map(|m| {
            let value = m.value?;
            Some(Measurement {
                label: metric_label(&m.metric),
                metric: m.metric.to_string(),
                statistic: m.statistic.to_string(),
                display: ki_model::units::measured(value, &m.unit),
                value,
                unit: m.unit.to_string(),
                sample_count: m.sample_count,
            })
        })
        .collect();
    // The manifest's own measurements the table does not carry (the catalog keeps the primary
    // one as a row; eager, graph replay and speed of light live in the manifest only).
    let listed = pointer(manifest, &["run", "spec", "measurements"]);
    for m in listed.and_then(Value::as_array).into_iter().flatten() {
        let (Some(metric), Some(value)) =
            (m.get("metric").and_then(Value::as_str), m.get("value").and_then(Value::as_f64))
        else {
            continue;
        };
        let statistic = m.get("statistic").and_then(Value::as_str).unwrap_or("");
        if out.iter().any(|o| o.metric == metric && o.statistic == statistic) {
            continue;
        }
        let unit = m.get("unit").and_then(Value::as_str).unwrap_or("").to_string();
        out.push(Measurement {
            label: metric_label(metric),
            metric: metric.into(),
            statistic: statistic.into(),
            display: ki_model::units::measured(value, &unit),
            value,
            unit,
            sample_count: m.get("sampleCount").and_then(Value::as_i64),
        });
    }
    out.sort_by(|a, b| (&a.metric, &a.statistic).cmp(&(&b.metric, &b.statistic)));
    out
}

/// What the catalog's content store adds to a dossier: the raw samples' histogram and a link
/// to the implementation's source. The web and the CLI (`ki show run`) both call it.
pub async fn held_contents(
    catalog: &ki_catalog::Catalog,
    model: &ReadModel,
    run: usize,
    d: &mut RunDossier,
) -> Result<(), ki_catalog::CatalogError> {
    if let Some((digest, _)) = model.implementation_source(model.judgement.run_implementation(run))
        && !catalog.contents_held(&[&digest]).await?.is_empty()
    {
        d.source_href = Some(format!("{}#source", d.implementation.href));
    }
    let Some(artifact) = &d.samples.artifact else { return Ok(()) };
    let Some(bytes) = catalog.content(&artifact.digest).await? else { return Ok(()) };
    let series = serde_json::from_slice::<Value>(&bytes).ok().and_then(|v| primary_series(&v));
    let Some((name, values)) = series else {
        d.samples.explanation =
            format!("The index holds the raw samples ({}), but they carry no per-call times to draw.", artifact.digest);
        return Ok(());
    };
    let Some(histogram) = crate::chart::histogram_of(&values) else { return Ok(()) };
    d.samples.values_held = true;
    d.samples.explanation = format!(
        "The index holds the raw samples ({}, digest {}): {} per-call times {} across the trials, drawn below.",
        artifact.uri.as_deref().unwrap_or("no address"),
        artifact.digest,
        ki_model::units::count(histogram.count as u64),
        if name == "inGraphPerCall" { "inside one captured graph" } else { "measured by CUPTI" }
    );
    d.samples.histogram_svg = Some(crate::chart::histogram_svg(&histogram));
    d.samples.histogram = Some(histogram);
    d.samples.series = Some(name);
    Ok(())
}

/// The published series of a samples file, across its trials: the per-call time inside one
/// captured graph (`inGraphPerCall` as `ki run` writes it, `in_graph_ns` as `ki verify` does), or
/// the CUPTI per-call time where a trial has no graph time.
pub fn primary_series(samples: &Value) -> Option<(&'static str, Vec<f64>)> {
    let trials = samples.get("trials")?.as_array()?;
    let pick = |trial: &Value, keys: [&str; 2]| {
        keys.iter()
            .find_map(|k| trial.get(*k).and_then(Value::as_array))
            .map(|values| values.iter().filter_map(Value::as_f64).collect::<Vec<f64>>())
    };
    for (name, keys) in
        [("inGraphPerCall", ["inGraphPerCall", "in_graph_ns"]), ("cuptiPerCall", ["cuptiPerCall", "cupti_ns"])]
    {
        let values: Vec<f64> = trials.iter().filter_map(|t| pick(t, keys)).flatten().collect();
        if !values.is_empty() {
            return Some((name, values));
        }
    }
    None
}

/// The run a reference names (its id, its run digest, or a unique prefix of either of at least 8
/// characters: `Index::find_run`); one that names none is a 404, one that names several (or is
/// too long to be a reference) a 400.
pub fn find_run(model: &ReadModel, reference: &str) -> Result<usize, Problem> {
    if reference.chars().count() > 200 {
        return Err(Problem::bad_request("a run reference is a uuid, a sha256 digest or a short id"));
    }
    model.judgement.find_run(reference).map_err(|e| match e {
        ki_ranking::LookupError::Ambiguous { .. } => Problem::bad_request(e.to_string()),
        ki_ranking::LookupError::NotFound { .. } => Problem::not_found(e.to_string()),
    })
}

pub fn profile_label(profile: ki_ranking::rank::CohortProfile) -> &'static str {
    match profile {
        ki_ranking::rank::CohortProfile::SourceNative => "source-native comparison",
        ki_ranking::rank::CohortProfile::StrictExact => "strict exact comparison",
    }
}

pub fn hardware_label(run: &RunRow) -> String {
    fn present(text: &Option<ki_ranking::rows::Text>) -> Option<&str> {
        text.as_deref().filter(|t| !t.is_empty())
    }
    match (present(&run.hardware_model), present(&run.hardware_architecture)) {
        (Some(model), Some(arch)) => format!("{model} ({arch})"),
        (Some(model), None) => model.to_string(),
        _ => "unknown".into(),
    }
}
