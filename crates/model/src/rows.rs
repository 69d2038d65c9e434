//! Typed catalog rows: one serde type per export table, its fields the export's camelCase
//! columns in the export's order, and [`Row`], a row of any table. Producers build rows
//! with these types (and the constructors of the tables whose columns are derived from
//! manifests: [`WorkloadRow::new`], [`BenchmarkRunRow::new`], [`MeasurementRow::primary`]),
//! then hand them to the catalog as export-format maps ([`Row::into_map`]); the catalog's
//! table specs are tested against these types.
//!
//! Measures (`primaryValue`, `value`, …) are `f64`; one that is a whole number within
//! JavaScript's safe range is written as an integer, as the catalog writes it back, so a
//! row keeps one form whether it was planned or read.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::identity::{self, BenchmarkRunKeys, PrimaryMeasurement};

/// Measures serialized as the catalog writes them: integral values as integers.
mod measure {
    use serde::{Deserialize, Deserializer, Serializer};

    const SAFE: f64 = 9_007_199_254_740_991.0;

    pub fn serialize<S: Serializer>(value: &Option<f64>, serializer: S) -> Result<S::Ok, S::Error> {
        match value {
            None => serializer.serialize_none(),
            Some(v) if v.fract() == 0.0 && v.abs() <= SAFE && *v >= 0.0 => serializer.serialize_u64(*v as u64),
            Some(v) if v.fract() == 0.0 && v.abs() <= SAFE => serializer.serialize_i64(*v as i64),
            Some(v) => serializer.serialize_f64(*v),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<f64>, D::Error> {
        Option::<f64>::deserialize(deserializer)
    }
}

/// A measure that is always present.
mod required_measure {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &f64, serializer: S) -> Result<S::Ok, S::Error> {
        super::measure::serialize(&Some(*value), serializer)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<f64, D::Error> {
        f64::deserialize(deserializer)
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SourceRow {
    pub id: String,
    pub slug: String,
    pub kind: String,
    pub name: String,
    #[serde(default)]
    pub policy: Option<Value>,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectRow {
    pub id: String,
    pub slug: String,
    pub name: String,
    pub normalized_name: String,
    #[serde(default)]
    pub canonical_url: Option<String>,
    #[serde(default)]
    pub license_expression: Option<String>,
    /// library, individual or vendor (added after the shared export; absent while null).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    pub manifest: Value,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationRow {
    pub id: String,
    pub slug: String,
    pub family: String,
    pub name: String,
    pub schema_version: String,
    pub semantic_digest: String,
    pub manifest: Value,
    pub tags: Vec<String>,
    pub created_at: String,
    #[serde(default)]
    pub supersedes_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OperationAliasRow {
    pub operation_id: String,
    pub alias: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadRow {
    pub id: String,
    pub operation_id: String,
    pub workload_digest: String,
    pub schema_version: String,
    pub manifest: Value,
    pub shape_summary: String,
    pub dtypes: Vec<String>,
    pub layout_keys: Vec<String>,
    pub created_at: String,
}

impl WorkloadRow {
    /// A workload row whose summary columns come from its manifest: `dtypes` the sorted
    /// set of its tensors' dtypes, `shapeSummary` the first tensor's shape (`[16, 32]`, or
    /// `[]` without tensors). `layout_keys` are the operation's (a workload inherits them).
    pub fn new(
        id: String,
        operation_id: String,
        manifest: Value,
        layout_keys: Vec<String>,
        created_at: String,
    ) -> Result<WorkloadRow, identity::IdentityError> {
        let workload_digest = identity::object_digest(&manifest)?;
        let tensors = manifest.pointer("/spec/tensors").and_then(Value::as_object);
        let dtypes: BTreeSet<String> = tensors
            .into_iter()
            .flat_map(|tensors| tensors.values())
            .filter_map(|tensor| tensor.get("dtype").and_then(Value::as_str).map(str::to_string))
            .collect();
        let shape_summary = tensors
            .and_then(|tensors| tensors.values().next())
            .and_then(|tensor| tensor.get("shape").and_then(Value::as_array))
            .map(|dims| format!("[{}]", dims.iter().map(Value::to_string).collect::<Vec<_>>().join(", ")))
            .unwrap_or_else(|| "[]".to_string());
        Ok(WorkloadRow {
            id,
            operation_id,
            workload_digest,
            schema_version: identity::API_VERSION.to_string(),
            manifest,
            shape_summary,
            dtypes: dtypes.into_iter().collect(),
            layout_keys,
            created_at,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ImplementationRow {
    pub id: String,
    pub project_id: String,
    pub operation_id: String,
    pub slug: String,
    pub implementation_digest: String,
    pub source_revision: String,
    pub language: String,
    #[serde(default)]
    pub framework: Option<String>,
    pub target_architectures: Vec<String>,
    #[serde(default)]
    pub license_expression: Option<String>,
    pub source_available: bool,
    pub installable: bool,
    pub title: String,
    #[serde(default)]
    pub install_kind: Option<String>,
    #[serde(default)]
    pub install_command: Option<String>,
    #[serde(default)]
    pub license_declared: Option<String>,
    /// `baseline` for a source's reference solution (added after the shared export).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    pub manifest: Value,
    pub created_at: String,
    #[serde(default)]
    pub supersedes_id: Option<String>,
}

/// A benchmark run: its manifests (`{run, protocol, environment}`) and the columns derived
/// from them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BenchmarkRunRow {
    pub id: String,
    pub run_digest: String,
    pub implementation_id: String,
    pub workload_id: String,
    #[serde(default)]
    pub source_id: Option<String>,
    pub status: String,
    pub observed_at: String,
    #[serde(default)]
    pub published_at: Option<String>,
    pub hardware_vendor: String,
    pub hardware_model: String,
    pub hardware_architecture: String,
    #[serde(default)]
    pub driver_major: Option<u64>,
    #[serde(default)]
    pub cuda_major: Option<u64>,
    pub protocol_key: String,
    pub environment_key: String,
    pub correctness_key: String,
    pub comparison_key: String,
    pub primary_metric: String,
    #[serde(default, with = "measure")]
    pub primary_value: Option<f64>,
    #[serde(default)]
    pub primary_unit: Option<String>,
    #[serde(default)]
    pub sample_count: Option<u64>,
    #[serde(default, with = "measure")]
    pub uncertainty_low: Option<f64>,
    #[serde(default, with = "measure")]
    pub uncertainty_high: Option<f64>,
    pub reported: bool,
    pub reproduced_by_kernelindex: bool,
    pub independent_replication_count: u64,
    pub source_available: bool,
    pub installable: bool,
    #[serde(default)]
    pub license_expression: Option<String>,
    #[serde(default)]
    pub primary_statistic: Option<String>,
    pub has_raw_evidence: bool,
    pub source_native: bool,
    pub environment_summary: String,
    /// The source's published SOL score (added after the shared export; absent while null).
    #[serde(default, skip_serializing_if = "Option::is_none", with = "measure")]
    pub sol_score: Option<f64>,
    pub manifest: Value,
    #[serde(default)]
    pub supersedes_id: Option<String>,
    #[serde(default)]
    pub retracted_at: Option<String>,
    #[serde(default)]
    pub retraction_reason: Option<String>,
}

/// What a producer says about a run beyond its manifests: where it sits and how far its
/// evidence goes. Everything else in the row is derived.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFacts {
    pub id: String,
    pub implementation_id: String,
    pub workload_id: String,
    pub source_id: Option<String>,
    pub published_at: Option<String>,
    pub reported: bool,
    pub reproduced_by_kernelindex: bool,
    pub independent_replication_count: u64,
    pub source_available: bool,
    pub installable: bool,
    pub license_expression: Option<String>,
    pub has_raw_evidence: bool,
    /// Ends the environment summary: the source or harness (`flashinfer-bench`, `community`,
    /// `kernelindex-rerun-v1`).
    pub label: String,
}

fn str_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

fn major(version: Option<&str>) -> Option<u64> {
    version.and_then(|v| v.split('.').next()).and_then(|m| m.trim().parse::<u64>().ok())
}

/// Why a run row could not be derived from its manifests.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pointer}: {reason}")]
pub struct RunRowError {
    pub pointer: String,
    pub reason: String,
}

impl BenchmarkRunRow {
    /// The row of a run from its manifests and keys ([`identity::benchmark_run_keys`]):
    /// status and observation time from the run; hardware, driver and CUDA majors from the
    /// environment; the primary measurement (metric `none` without one); the run's 95%
    /// interval when it is the interval of its primary latency; the environment summary
    /// `CUDA c · framework v · driver d · label`, each part when known.
    pub fn new(
        facts: RunFacts,
        keys: &BenchmarkRunKeys,
        run: Value,
        protocol: Value,
        environment: Value,
    ) -> Result<BenchmarkRunRow, RunRowError> {
        let missing = |pointer: &str| RunRowError { pointer: pointer.to_string(), reason: "required string".into() };
        let required =
            |value: &Value, pointer: &str| str_at(value, pointer).map(str::to_string).ok_or_else(|| missing(pointer));
        let software = |field: &str| str_at(&environment, &format!("/spec/software/{field}"));
        let (cuda, driver) = (software("cudaToolkit"), software("driver"));
        let mut summary = Vec::new();
        if let Some(cuda) = cuda {
            summary.push(format!("CUDA {cuda}"));
        }
        if let (Some(name), Some(version)) = (software("framework/name"), software("framework/version")) {
            summary.push(format!("{name} {version}"));
        }
        if let Some(driver) = driver {
            summary.push(format!("driver {driver}"));
        }
        summary.push(facts.label.clone());
        let primary: Option<&PrimaryMeasurement> = keys.primary.as_ref();
        let interval = primary
            .filter(|p| p.metric == "latency")
            .and_then(|_| run.pointer("/spec/timing/latencyNs/confidence95").and_then(Value::as_array))
            .and_then(|pair| Some((pair.first()?.as_f64()?, pair.get(1)?.as_f64()?)))
            .filter(|(low, high)| low <= high);
        Ok(BenchmarkRunRow {
            id: facts.id,
            run_digest: keys.run_digest.clone(),
            implementation_id: facts.implementation_id,
            workload_id: facts.workload_id,
            source_id: facts.source_id,
            status: required(&run, "/spec/status")?,
            observed_at: required(&run, "/spec/observedAt")?,
            published_at: facts.published_at,
            hardware_vendor: required(&environment, "/spec/hardware/vendor")?,
            hardware_model: required(&environment, "/spec/hardware/product")?,
            hardware_architecture: required(&environment, "/spec/hardware/architecture")?,
            driver_major: major(driver),
            cuda_major: major(cuda),
            protocol_key: keys.protocol_key.clone(),
            environment_key: keys.environment_key.clone(),
            correctness_key: keys.correctness_key.clone(),
            comparison_key: keys.comparison_key.clone(),
            primary_metric: primary.map_or(identity::NO_METRIC, |p| p.metric.as_str()).to_string(),
            primary_value: primary.and_then(|p| p.value.as_f64()),
            primary_unit: primary.map(|p| p.unit.clone()),
            sample_count: primary.and_then(|p| p.sample_count),
            uncertainty_low: interval.map(|i| i.0),
            uncertainty_high: interval.map(|i| i.1),
            reported: facts.reported,
            reproduced_by_kernelindex: facts.reproduced_by_kernelindex,
            independent_replication_count: facts.independent_replication_count,
            source_available: facts.source_available,
            installable: facts.installable,
            license_expression: facts.license_expression,
            primary_statistic: primary.map(|p| p.statistic.clone()),
            has_raw_evidence: facts.has_raw_evidence,
            source_native: run.pointer("/spec/sourceNative").is_some_and(|v| !v.is_null()),
            environment_summary: summary.join(" · "),
            sol_score: None,
            manifest: serde_json::json!({ "run": run, "protocol": protocol, "environment": environment }),
            supersedes_id: None,
            retracted_at: None,
            retraction_reason: None,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MeasurementRow {
    pub id: String,
    pub run_id: String,
    pub metric: String,
    pub statistic: String,
    pub unit: String,
    #[serde(with = "required_measure")]
    pub value: f64,
    #[serde(default)]
    pub sample_count: Option<u64>,
}

impl MeasurementRow {
    /// The measurement row of a run's primary measurement.
    pub fn primary(id: String, run_id: String, primary: &PrimaryMeasurement) -> MeasurementRow {
        MeasurementRow {
            id,
            run_id,
            metric: primary.metric.clone(),
            statistic: primary.statistic.clone(),
            unit: primary.unit.clone(),
            value: primary.value.as_f64().unwrap_or(f64::NAN),
            sample_count: primary.sample_count,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordEventRow {
    pub id: String,
    pub comparison_key: String,
    pub run_id: String,
    #[serde(default)]
    pub previous_run_id: Option<String>,
    pub policy_version: String,
    pub cause: String,
    pub at: String,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ArtifactRow {
    pub id: String,
    pub content_digest: String,
    pub kind: String,
    pub media_type: String,
    pub size_bytes: u64,
    pub storage: String,
    #[serde(default)]
    pub uri: Option<String>,
    #[serde(default)]
    pub license: Option<String>,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRevisionRow {
    pub id: String,
    pub slug: String,
    pub model_digest: String,
    pub name: String,
    #[serde(default)]
    pub parameter_count: Option<u64>,
    #[serde(default)]
    pub context_length: Option<u64>,
    #[serde(default)]
    pub tokenizer: Option<String>,
    #[serde(default)]
    pub license: Option<String>,
    pub schema_version: String,
    pub manifest: Value,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServingStackRevisionRow {
    pub id: String,
    pub project_id: String,
    pub slug: String,
    pub stack_digest: String,
    pub name: String,
    pub version: String,
    pub schema_version: String,
    pub manifest: Value,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServingConfigurationRow {
    pub id: String,
    pub stack_revision_id: String,
    pub configuration_digest: String,
    pub dtype: String,
    #[serde(default)]
    pub quantization: Option<String>,
    #[serde(default)]
    pub tensor_parallel: Option<u64>,
    pub summary: String,
    pub schema_version: String,
    pub manifest: Value,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServingWorkloadRow {
    pub id: String,
    pub workload_digest: String,
    pub slug: String,
    pub name: String,
    pub streaming: bool,
    pub load_generation: String,
    pub schema_version: String,
    pub manifest: Value,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServingRunRow {
    pub id: String,
    pub run_digest: String,
    pub model_revision_id: String,
    pub configuration_id: String,
    pub workload_id: String,
    #[serde(default)]
    pub source_id: Option<String>,
    pub status: String,
    pub observed_at: String,
    #[serde(default)]
    pub published_at: Option<String>,
    pub cohort_key: String,
    pub protocol_key: String,
    pub quality_policy: String,
    pub metric_set_key: String,
    pub scenario: String,
    #[serde(default)]
    pub accelerator_vendor: Option<String>,
    pub accelerator_model: String,
    pub accelerator_count: u64,
    pub node_count: u64,
    pub total_accelerators: u64,
    pub reported: bool,
    pub schema_version: String,
    pub manifest: Value,
    #[serde(default)]
    pub supersedes_id: Option<String>,
    #[serde(default)]
    pub retracted_at: Option<String>,
    #[serde(default)]
    pub retraction_reason: Option<String>,
    pub created_at: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServingMeasurementRow {
    pub id: String,
    pub run_id: String,
    pub metric: String,
    pub statistic: String,
    pub unit: String,
    #[serde(with = "required_measure")]
    pub value: f64,
    #[serde(default)]
    pub sample_count: Option<u64>,
}

/// A row of any export table.
#[derive(Debug, Clone, PartialEq)]
pub enum Row {
    Source(SourceRow),
    Project(ProjectRow),
    Operation(OperationRow),
    OperationAlias(OperationAliasRow),
    Workload(WorkloadRow),
    Implementation(ImplementationRow),
    BenchmarkRun(Box<BenchmarkRunRow>),
    Measurement(MeasurementRow),
    RecordEvent(RecordEventRow),
    Artifact(ArtifactRow),
    ModelRevision(ModelRevisionRow),
    ServingStackRevision(ServingStackRevisionRow),
    ServingConfiguration(ServingConfigurationRow),
    ServingWorkload(ServingWorkloadRow),
    ServingRun(Box<ServingRunRow>),
    ServingMeasurement(ServingMeasurementRow),
}

/// A row type of one export table, so that a reader can ask for typed rows of it.
pub trait TableRow: Serialize + serde::de::DeserializeOwned {
    /// The export table's name (`benchmark_runs`, …).
    const TABLE: &'static str;
}

/// Why an export-format map is not a row of its table.
#[derive(Debug, thiserror::Error)]
pub enum RowError {
    #[error("unknown table {0:?}")]
    UnknownTable(String),
    #[error("{table} row: {message}")]
    Invalid { table: String, message: String },
}

macro_rules! tables {
    ($($name:literal => $variant:ident($ty:ty) $(boxed $boxed:tt)?),* $(,)?) => {
        /// Every export table, in export order.
        pub const TABLE_NAMES: &[&str] = &[$($name),*];

        impl Row {
            /// The export table the row belongs to.
            pub fn table(&self) -> &'static str {
                match self { $(Row::$variant(_) => $name),* }
            }

            /// Reads an export-format map (camelCase columns) as a row of `table`.
            pub fn from_map(table: &str, row: Map<String, Value>) -> Result<Row, RowError> {
                let invalid = |error: serde_json::Error| RowError::Invalid { table: table.to_string(), message: error.to_string() };
                match table {
                    $($name => Ok(Row::$variant(tables!(@wrap $($boxed)? serde_json::from_value::<$ty>(Value::Object(row)).map_err(invalid)?))),)*
                    other => Err(RowError::UnknownTable(other.to_string())),
                }
            }

            /// The row as an export-format map, columns in export order.
            pub fn into_map(self) -> Map<String, Value> {
                let value = match self { $(Row::$variant(row) => serde_json::to_value(row)),* };
                match value.expect("rows hold only JSON values and finite measures") {
                    Value::Object(map) => map,
                    _ => unreachable!("every row type serializes as an object"),
                }
            }
        }

        $(impl TableRow for $ty {
            const TABLE: &'static str = $name;
        })*

        $(impl From<$ty> for Row {
            fn from(row: $ty) -> Row {
                Row::$variant(tables!(@wrap $($boxed)? row))
            }
        })*
    };
    (@wrap yes $value:expr) => { Box::new($value) };
    (@wrap $value:expr) => { $value };
}

tables! {
    "sources" => Source(SourceRow),
    "projects" => Project(ProjectRow),
    "operations" => Operation(OperationRow),
    "operation_aliases" => OperationAlias(OperationAliasRow),
    "workloads" => Workload(WorkloadRow),
    "implementations" => Implementation(ImplementationRow),
    "benchmark_runs" => BenchmarkRun(BenchmarkRunRow) boxed yes,
    "measurements" => Measurement(MeasurementRow),
    "record_events" => RecordEvent(RecordEventRow),
    "artifacts" => Artifact(ArtifactRow),
    "model_revisions" => ModelRevision(ModelRevisionRow),
    "serving_stack_revisions" => ServingStackRevision(ServingStackRevisionRow),
    "serving_configurations" => ServingConfiguration(ServingConfigurationRow),
    "serving_workloads" => ServingWorkload(ServingWorkloadRow),
    "serving_runs" => ServingRun(ServingRunRow) boxed yes,
    "serving_measurements" => ServingMeasurement(ServingMeasurementRow),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_keep_the_catalog_s_number_form() {
        let row = MeasurementRow {
            id: "m".into(),
            run_id: "r".into(),
            metric: "latency".into(),
            statistic: "mean".into(),
            unit: "ns".into(),
            value: 14150.0,
            sample_count: None,
        };
        let map = Row::from(row.clone()).into_map();
        assert_eq!(
            serde_json::to_string(&map).unwrap(),
            r#"{"id":"m","runId":"r","metric":"latency","statistic":"mean","unit":"ns","value":14150,"sampleCount":null}"#
        );
        let half = MeasurementRow { value: 0.5, ..row };
        assert_eq!(Row::from(half).into_map()["value"], serde_json::json!(0.5));
    }
}
