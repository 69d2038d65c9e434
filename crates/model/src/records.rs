//! Typed kernelindex.dev/v1alpha1 records: the 13 kinds, in their normalized form.
//!
//! Every struct rejects unknown fields, optional fields stay absent when written back (so a
//! record round-trips to the same canonical JSON and digest), and closed schema enums are Rust
//! enums. Constraints a type cannot express (patterns, lengths, bounds) are checked by
//! [`crate::schema`] before these types are read; [`crate::manifest::parse_manifests`] does both.
//! Durations are integer nanoseconds here: unit strings such as "0.008 ms" exist only in input
//! and are converted by [`crate::normalize`].

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_with::skip_serializing_none;

pub use crate::identity::API_VERSION;

/// The 13 manifest kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Kind {
    OperationSpec,
    WorkloadCase,
    WorkloadSuite,
    SoftwareProject,
    ImplementationRevision,
    BenchmarkProtocol,
    ExecutionEnvironment,
    BenchmarkRun,
    ModelRevision,
    ServingStackRevision,
    ServingConfiguration,
    ServingWorkload,
    ServingRun,
}

impl Kind {
    pub const ALL: [Kind; 13] = [
        Kind::OperationSpec,
        Kind::WorkloadCase,
        Kind::WorkloadSuite,
        Kind::SoftwareProject,
        Kind::ImplementationRevision,
        Kind::BenchmarkProtocol,
        Kind::ExecutionEnvironment,
        Kind::BenchmarkRun,
        Kind::ModelRevision,
        Kind::ServingStackRevision,
        Kind::ServingConfiguration,
        Kind::ServingWorkload,
        Kind::ServingRun,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Kind::OperationSpec => "OperationSpec",
            Kind::WorkloadCase => "WorkloadCase",
            Kind::WorkloadSuite => "WorkloadSuite",
            Kind::SoftwareProject => "SoftwareProject",
            Kind::ImplementationRevision => "ImplementationRevision",
            Kind::BenchmarkProtocol => "BenchmarkProtocol",
            Kind::ExecutionEnvironment => "ExecutionEnvironment",
            Kind::BenchmarkRun => "BenchmarkRun",
            Kind::ModelRevision => "ModelRevision",
            Kind::ServingStackRevision => "ServingStackRevision",
            Kind::ServingConfiguration => "ServingConfiguration",
            Kind::ServingWorkload => "ServingWorkload",
            Kind::ServingRun => "ServingRun",
        }
    }

    pub fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A manifest of one kind: `apiVersion`, `kind`, `metadata` (editorial, not digested) and `spec`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Record<S> {
    pub api_version: String,
    pub kind: Kind,
    pub metadata: Metadata,
    pub spec: S,
}

/// Any manifest.
#[derive(Debug, Clone, PartialEq)]
pub enum Manifest {
    OperationSpec(Record<OperationSpec>),
    WorkloadCase(Record<WorkloadCase>),
    WorkloadSuite(Record<WorkloadSuite>),
    SoftwareProject(Record<SoftwareProject>),
    ImplementationRevision(Record<ImplementationRevision>),
    BenchmarkProtocol(Record<BenchmarkProtocol>),
    ExecutionEnvironment(Record<ExecutionEnvironment>),
    BenchmarkRun(Record<BenchmarkRun>),
    ModelRevision(Record<ModelRevision>),
    ServingStackRevision(Record<ServingStackRevision>),
    ServingConfiguration(Record<ServingConfiguration>),
    ServingWorkload(Record<ServingWorkload>),
    ServingRun(Record<ServingRun>),
}

/// Applies `$body` to the record inside any variant.
macro_rules! each_variant {
    ($m:expr, $r:ident => $body:expr) => {
        match $m {
            Manifest::OperationSpec($r) => $body,
            Manifest::WorkloadCase($r) => $body,
            Manifest::WorkloadSuite($r) => $body,
            Manifest::SoftwareProject($r) => $body,
            Manifest::ImplementationRevision($r) => $body,
            Manifest::BenchmarkProtocol($r) => $body,
            Manifest::ExecutionEnvironment($r) => $body,
            Manifest::BenchmarkRun($r) => $body,
            Manifest::ModelRevision($r) => $body,
            Manifest::ServingStackRevision($r) => $body,
            Manifest::ServingConfiguration($r) => $body,
            Manifest::ServingWorkload($r) => $body,
            Manifest::ServingRun($r) => $body,
        }
    };
}

impl Manifest {
    pub fn kind(&self) -> Kind {
        each_variant!(self, r => r.kind)
    }

    pub fn metadata(&self) -> &Metadata {
        each_variant!(self, r => &r.metadata)
    }

    /// Reads a typed manifest from JSON of the kind its `kind` field names. Use
    /// [`crate::manifest::parse_manifests`] for untrusted input: it reports every problem by
    /// pointer and normalizes first; this reports serde's first error only.
    pub fn from_value(value: &serde_json::Value) -> Result<Manifest, serde_json::Error> {
        use serde::de::Error;
        let kind = value
            .get("kind")
            .and_then(|k| k.as_str())
            .and_then(Kind::from_name)
            .ok_or_else(|| serde_json::Error::custom("missing or unknown `kind`"))?;
        Ok(match kind {
            Kind::OperationSpec => Manifest::OperationSpec(Deserialize::deserialize(value)?),
            Kind::WorkloadCase => Manifest::WorkloadCase(Deserialize::deserialize(value)?),
            Kind::WorkloadSuite => Manifest::WorkloadSuite(Deserialize::deserialize(value)?),
            Kind::SoftwareProject => Manifest::SoftwareProject(Deserialize::deserialize(value)?),
            Kind::ImplementationRevision => Manifest::ImplementationRevision(Deserialize::deserialize(value)?),
            Kind::BenchmarkProtocol => Manifest::BenchmarkProtocol(Deserialize::deserialize(value)?),
            Kind::ExecutionEnvironment => Manifest::ExecutionEnvironment(Deserialize::deserialize(value)?),
            Kind::BenchmarkRun => Manifest::BenchmarkRun(Deserialize::deserialize(value)?),
            Kind::ModelRevision => Manifest::ModelRevision(Deserialize::deserialize(value)?),
            Kind::ServingStackRevision => Manifest::ServingStackRevision(Deserialize::deserialize(value)?),
            Kind::ServingConfiguration => Manifest::ServingConfiguration(Deserialize::deserialize(value)?),
            Kind::ServingWorkload => Manifest::ServingWorkload(Deserialize::deserialize(value)?),
            Kind::ServingRun => Manifest::ServingRun(Deserialize::deserialize(value)?),
        })
    }

    /// The manifest as JSON (`apiVersion`, `kind`, `metadata`, `spec`).
    pub fn to_value(&self) -> serde_json::Value {
        // Serializing plain structs of strings, numbers and maps cannot fail; a float that is
        // not finite cannot get here because parsing refuses it.
        each_variant!(self, r => serde_json::to_value(r).expect("records serialize to JSON"))
    }
}

impl Serialize for Manifest {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        each_variant!(self, r => r.serialize(serializer))
    }
}

impl<'de> Deserialize<'de> for Manifest {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let value = serde_json::Value::deserialize(deserializer)?;
        Manifest::from_value(&value).map_err(serde::de::Error::custom)
    }
}

// ---- metadata (same for every kind) ----

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Metadata {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    pub labels: Option<BTreeMap<String, String>>,
    pub authors: Option<Vec<Author>>,
    pub source_refs: Option<Vec<SourceRef>>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Author {
    pub name: Option<String>,
    pub github: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SourceRef {
    pub url: String,
}

/// A content-addressed external file (`uri` + `sha256:` digest).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ArtifactRef {
    pub uri: String,
    pub digest: String,
}

/// A measured value: `metric:statistic:unit` plus the number.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MetricValue {
    pub metric: String,
    pub unit: String,
    pub statistic: String,
    pub value: f64,
    pub sample_count: Option<u64>,
}

// ---- OperationSpec ----

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OperationSpec {
    pub family: String,
    pub axes: BTreeMap<String, Axis>,
    pub inputs: Vec<OperationArgument>,
    pub outputs: Vec<OperationArgument>,
    pub semantics: Semantics,
    pub reference: Option<OperationReference>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Axis {
    pub role: AxisRole,
    #[serde(rename = "type")]
    pub value_type: AxisType,
    pub value: Option<i64>,
    pub minimum: Option<i64>,
    pub maximum: Option<i64>,
    pub expression: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AxisRole {
    Variable,
    Constant,
    Derived,
}

/// Axes are integers in v1alpha1 (the schema's `const: "integer"`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AxisType {
    Integer,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OperationArgument {
    pub name: String,
    pub tensor: Option<TensorSignature>,
    pub scalar: Option<ScalarSignature>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TensorSignature {
    pub shape: Vec<Dimension>,
    pub dtype: String,
    pub layout: Option<Layout>,
}

/// A tensor dimension: a fixed size or the name of an axis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Dimension {
    Size(u64),
    Axis(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Layout {
    RowMajor,
    ColMajor,
    Contiguous,
    Strided,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ScalarSignature {
    pub dtype: String,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Semantics {
    pub expression: Option<String>,
    pub mutation: Mutation,
    pub determinism: Determinism,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mutation {
    None,
    InPlace,
    Destination,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Determinism {
    Deterministic,
    Nondeterministic,
    Unspecified,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OperationReference {
    pub language: String,
    pub artifact: Option<ArtifactRef>,
}

// ---- WorkloadCase ----

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkloadCase {
    pub operation_spec_digest: String,
    pub axes: BTreeMap<String, i64>,
    pub tensors: BTreeMap<String, WorkloadTensor>,
    pub scalars: Option<BTreeMap<String, WorkloadScalar>>,
    pub correctness: CaseCorrectness,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkloadTensor {
    pub shape: Vec<u64>,
    pub dtype: String,
    pub strides: Option<Vec<i64>>,
    pub alignment_bytes: Option<u64>,
    pub data: Option<TensorData>,
}

/// How a tensor's contents are made: a seeded generator or a stored artifact.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TensorData {
    pub generator: String,
    pub seed: Option<u64>,
    pub parameters: Option<BTreeMap<String, f64>>,
    pub artifact: Option<ArtifactRef>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkloadScalar {
    pub dtype: String,
    pub value: f64,
}

/// The correctness rule of a workload (its JCS is the run's correctnessKey input).
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct CaseCorrectness {
    pub comparator: String,
    pub max_absolute_error: Option<f64>,
    pub max_relative_error: Option<f64>,
    pub required_matched_ratio: Option<f64>,
    pub nan_policy: Option<SpecialValuePolicy>,
    pub infinity_policy: Option<SpecialValuePolicy>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpecialValuePolicy {
    Reject,
    ExactMatch,
    Ignore,
}

// ---- WorkloadSuite ----

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct WorkloadSuite {
    pub operation_spec_digest: String,
    pub cases: Vec<SuiteCase>,
    pub correctness: SuiteCorrectness,
    pub aggregation: Aggregation,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SuiteCase {
    pub external_id: String,
    pub axes: BTreeMap<String, i64>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SuiteCorrectness {
    pub comparator: String,
    pub description: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Aggregation {
    pub metric: String,
    pub statistic: String,
}

// ---- SoftwareProject ----

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SoftwareProject {
    pub name: String,
    pub kind: Option<ProjectKind>,
    pub repository: Option<String>,
    pub homepage: Option<String>,
    pub host: Option<ProjectHost>,
    pub packages: Option<Vec<Package>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProjectKind {
    Library,
    Individual,
    Vendor,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProjectHost {
    pub kind: HostKind,
    pub id: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostKind {
    Github,
    Huggingface,
    Gitlab,
    Other,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Package {
    pub ecosystem: String,
    pub name: String,
}

// ---- ImplementationRevision ----

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ImplementationRevision {
    pub project_revision: ProjectRevision,
    pub operation: OperationRef,
    pub callable: Callable,
    pub support: Support,
    pub source: Option<SourceFile>,
    pub build_variants: Option<Vec<BuildVariant>>,
    pub licensing: Licensing,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProjectRevision {
    pub repository: Option<String>,
    pub commit: Option<String>,
    pub version: Option<String>,
    pub tree_digest: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct OperationRef {
    pub spec_digest: String,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Callable {
    pub language: String,
    pub path: Option<String>,
    pub symbol: Option<String>,
    pub interface: Option<String>,
}

/// What an implementation supports. Every list is a set: normalization sorts and de-duplicates it.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Support {
    pub hardware_architectures: Vec<String>,
    pub products_tested: Option<Vec<String>>,
    pub axes: Option<Vec<String>>,
    pub dtypes: Vec<String>,
    pub layouts: Option<Vec<String>>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct SourceFile {
    pub content_digest: String,
    pub file_name: Option<String>,
    pub size_bytes: Option<u64>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BuildVariant {
    pub name: String,
    pub install: Install,
    pub requirements: Option<BTreeMap<String, String>>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Install {
    pub kind: InstallKind,
    pub repository: Option<String>,
    pub commit: Option<String>,
    pub package: Option<String>,
    pub version: Option<String>,
    pub command: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InstallKind {
    Git,
    Pip,
    Package,
    Container,
    Source,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Licensing {
    pub declared: Option<String>,
    pub concluded: Option<String>,
    pub evidence: Option<LicenseEvidence>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LicenseEvidence {
    pub path: String,
    pub digest: Option<String>,
}

// ---- BenchmarkProtocol ----

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BenchmarkProtocol {
    pub harness: Harness,
    pub measurement: MeasurementMethod,
    pub correctness: Option<ProtocolCorrectness>,
    pub device_policy: Option<DevicePolicy>,
    pub comparability: Option<Comparability>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Harness {
    pub name: String,
    pub version: Option<String>,
    pub repository: Option<String>,
    pub commit: Option<String>,
}

/// How timing is taken. `warmup_duration` is in nanoseconds.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct MeasurementMethod {
    pub timer: String,
    pub synchronization: Option<String>,
    pub compile_included: Option<bool>,
    pub setup_included: Option<bool>,
    pub warmup_iterations: Option<u64>,
    pub warmup_duration: Option<u64>,
    pub measured_iterations: Option<u64>,
    pub samples: Option<u64>,
    pub input_regeneration: Option<String>,
    pub outlier_policy: Option<String>,
    pub primary_statistic: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ProtocolCorrectness {
    pub reference: String,
    pub comparator: String,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct DevicePolicy {
    pub clocks_locked: Option<bool>,
    pub power_limit_watts: Option<f64>,
    pub persistence_mode: Option<bool>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Comparability {
    pub family: String,
    pub notes: Option<String>,
}

// ---- ExecutionEnvironment ----

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ExecutionEnvironment {
    pub hardware: Hardware,
    pub software: Software,
    pub settings: Option<EnvironmentSettings>,
    pub image_digest: Option<String>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Hardware {
    pub vendor: String,
    pub product: String,
    pub architecture: String,
    pub form_factor: Option<String>,
    pub memory_bytes: Option<u64>,
    pub count: Option<u64>,
    pub interconnect: Option<String>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Software {
    pub operating_system: Option<String>,
    pub kernel: Option<String>,
    pub driver: Option<String>,
    pub cuda_toolkit: Option<String>,
    pub compiler: Option<String>,
    pub framework: Option<Framework>,
    pub libraries: Option<BTreeMap<String, String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Framework {
    pub name: String,
    pub version: String,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct EnvironmentSettings {
    pub clocks_locked: Option<bool>,
    pub power_limit_watts: Option<f64>,
    pub persistence_mode: Option<bool>,
    pub ecc_enabled: Option<bool>,
    pub environment_variables: Option<BTreeMap<String, String>>,
}

// ---- BenchmarkRun ----

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct BenchmarkRun {
    pub implementation_digest: String,
    pub workload_digest: String,
    pub protocol_digest: String,
    pub environment_digest: String,
    pub status: RunStatus,
    pub correctness: Option<RunCorrectness>,
    pub timing: Option<Timing>,
    pub measurements: Option<Vec<MetricValue>>,
    pub source_native: Option<RunSourceNative>,
    pub evidence: Option<Evidence>,
    /// UTC, RFC 3339 with `Z`, kept as written (its digest depends on the exact text).
    pub observed_at: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Passed,
    IncorrectShape,
    IncorrectDtype,
    IncorrectNumerical,
    CompileError,
    RuntimeError,
    Timeout,
    ResourceExceeded,
    InvalidReference,
    PolicyViolation,
    SuspectedRewardHack,
    IncompleteEvidence,
    Revoked,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunCorrectness {
    pub comparator: String,
    pub maximum_absolute_error: Option<f64>,
    pub maximum_relative_error: Option<f64>,
    pub matched_ratio: Option<f64>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Timing {
    pub primary_statistic: String,
    pub samples: Option<u64>,
    pub latency_ns: LatencyNs,
    pub raw_samples: Option<ArtifactRef>,
}

/// Latency statistics in integer nanoseconds.
#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct LatencyNs {
    pub median: Option<u64>,
    pub mean: Option<u64>,
    pub p05: Option<u64>,
    pub p95: Option<u64>,
    pub minimum: Option<u64>,
    pub maximum: Option<u64>,
    pub mad: Option<u64>,
    pub confidence95: Option<[u64; 2]>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RunSourceNative {
    pub source: String,
    pub benchmark: Option<String>,
    pub external_id: Option<String>,
    pub metrics: Option<BTreeMap<String, f64>>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Evidence {
    pub logs: Option<ArtifactRef>,
    pub raw_samples: Option<ArtifactRef>,
    pub harness: Option<HarnessRef>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct HarnessRef {
    pub repository: String,
    pub commit: String,
}

// ---- ModelRevision ----

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ModelRevision {
    pub model: String,
    pub repository: Option<ModelRepository>,
    pub tokenizer: Option<Tokenizer>,
    pub architecture: Option<String>,
    pub parameter_count: Option<u64>,
    pub context_length: Option<u64>,
    pub modality: Option<String>,
    pub license: Option<String>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ModelRepository {
    pub host: ModelHost,
    pub id: String,
    pub revision: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelHost {
    Huggingface,
    Github,
    Other,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Tokenizer {
    pub name: Option<String>,
    pub revision: Option<String>,
    pub digest: Option<String>,
}

// ---- ServingStackRevision ----

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServingStackRevision {
    pub project: StackProject,
    pub revision: StackRevision,
    /// Ordered as written (the registry example's digest shows it is not sorted).
    pub backends: Option<Vec<String>>,
    pub api_protocol: Option<String>,
    pub license: Option<String>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StackProject {
    pub name: String,
    pub repository: Option<String>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct StackRevision {
    pub version: Option<String>,
    pub commit: Option<String>,
    pub container_digest: Option<String>,
}

// ---- ServingConfiguration ----

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServingConfiguration {
    pub stack_digest: String,
    pub dtype: Option<String>,
    pub quantization: Option<String>,
    pub parallelism: Option<Parallelism>,
    pub attention_backend: Option<String>,
    pub kv_cache: Option<KvCache>,
    pub limits: Option<ServingLimits>,
    pub speculative: Option<Speculative>,
    pub options: Option<BTreeMap<String, String>>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Parallelism {
    pub tensor: Option<u64>,
    pub pipeline: Option<u64>,
    pub data: Option<u64>,
    pub expert: Option<u64>,
    pub context: Option<u64>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct KvCache {
    pub dtype: Option<String>,
    pub capacity_tokens: Option<u64>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServingLimits {
    pub max_sequence_length: Option<u64>,
    pub max_batch_size: Option<u64>,
    pub max_num_tokens: Option<u64>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Speculative {
    pub method: String,
    pub draft_model: Option<String>,
}

// ---- ServingWorkload ----

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServingWorkload {
    pub dataset: Option<Dataset>,
    pub tokens: Option<TokenDistributions>,
    pub streaming: bool,
    pub load_generation: LoadGeneration,
    pub arrival: Option<String>,
    pub request_rate_per_second: Option<f64>,
    pub slo: Option<Vec<ServiceLevelObjective>>,
    pub sampling: Option<Sampling>,
    pub duration_seconds: Option<u64>,
    pub request_count: Option<u64>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Dataset {
    pub name: String,
    pub digest: Option<String>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TokenDistributions {
    pub prompt: Option<TokenDistribution>,
    pub output: Option<TokenDistribution>,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct TokenDistribution {
    pub distribution: String,
    pub mean: Option<f64>,
    pub maximum: Option<u64>,
    pub artifact_digest: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LoadGeneration {
    OpenLoop,
    ClosedLoop,
    Offline,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServiceLevelObjective {
    pub metric: String,
    pub statistic: String,
    pub operator: SloOperator,
    pub value: f64,
    pub unit: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SloOperator {
    #[serde(rename = "<=")]
    AtMost,
    #[serde(rename = "<")]
    Below,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Sampling {
    pub temperature: Option<f64>,
    pub seeded: Option<bool>,
}

// ---- ServingRun ----

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServingRun {
    pub model_digest: String,
    pub configuration_digest: String,
    pub workload_digest: String,
    pub topology: Topology,
    pub harness: ServingHarness,
    pub placement: Option<String>,
    pub quality_policy: String,
    pub status: ServingRunStatus,
    pub measurements: Vec<MetricValue>,
    pub source_native: Option<ServingSourceNative>,
    pub caveats: Option<Vec<String>>,
    /// UTC, RFC 3339 with `Z`, kept as written (its digest depends on the exact text).
    pub observed_at: String,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Topology {
    pub accelerator_vendor: Option<String>,
    pub accelerator_model: String,
    pub accelerators_per_node: u64,
    pub node_count: u64,
    pub interconnect: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServingHarness {
    pub name: String,
    pub version: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ServingRunStatus {
    Valid,
    Invalid,
    IncompleteEvidence,
}

#[skip_serializing_none]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ServingSourceNative {
    pub source: String,
    pub benchmark: String,
    pub scenario: String,
    pub division: String,
    pub category: String,
    pub external_id: String,
    pub metrics: Option<BTreeMap<String, SourceMetric>>,
}

/// A source-native metric: a number or, where the source reports one, text.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SourceMetric {
    Number(f64),
    Text(String),
}
