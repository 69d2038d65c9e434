//! Content digests and comparison keys, exactly as the public index computes them.
//!
//! Every function here works on manifests as `serde_json::Value` (already normalized:
//! durations as integer nanoseconds, sets sorted), so the catalog, the ranking code and
//! the verifier can digest rows without building typed records first. The rules were
//! checked against every row of the shared catalog export:
//!
//! - object digest: `sha256:` + hex(sha256(JCS({apiVersion, kind, spec}))); metadata is
//!   editorial and never digested;
//! - correctness key: sha256(JCS({"correctness": <workload spec.correctness>}));
//! - primary measurement: with `spec.timing`, latency in ns at `timing.primaryStatistic`
//!   (value = latencyNs.mean, else .median when the statistic is `mean`; .median, else
//!   .mean otherwise; sample count = timing.samples); without timing, the first entry of
//!   `spec.measurements`; otherwise none;
//! - metric key: `metric:statistic:unit` of the primary measurement, or `none`;
//! - comparison key: sha256(JCS({v:1, operation, workload, protocol, environment,
//!   correctness, metric})) where operation is the workload's `spec.operationSpecDigest`;
//! - serving protocol key: `harness/version/placement-or-unspecified/streaming-or-non_streaming/loadGeneration`;
//! - serving topology key: `vendor-or-unknown/model/{perNode}x{nodes}/interconnect-or-unspecified`;
//! - metric set key: the unique `metric·statistic` pairs, sorted, joined by `,`;
//! - cohort key: sha256(JCS({modelDigest, tokenizer, workloadDigest, protocolKey,
//!   topologyKey, qualityPolicy, metricSetKey})), tokenizer = the model revision's
//!   `spec.tokenizer.name` or null.

use serde_json::{Map, Number, Value, json};
use sha2::{Digest as _, Sha256};

use crate::jcs::{self, JcsError};

pub const API_VERSION: &str = "kernelindex.dev/v1alpha1";
/// The metric key of a run without a primary measurement.
pub const NO_METRIC: &str = "none";

/// Why a key could not be computed: the JSON pointer (inside the value handed in) of
/// the part that is missing or malformed, and what is wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentityError {
    #[error("{pointer}: {reason}")]
    Shape { pointer: String, reason: String },
    #[error(transparent)]
    Canonical(#[from] JcsError),
}

fn shape(pointer: &str, reason: impl Into<String>) -> IdentityError {
    IdentityError::Shape { pointer: pointer.to_string(), reason: reason.into() }
}

/// `sha256:<64 lowercase hex>` of some bytes.
pub fn sha256_digest(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(71);
    text.push_str("sha256:");
    text.push_str(&hex::encode(Sha256::digest(bytes)));
    text
}

/// `sha256:` + hex(sha256(JCS(value))).
pub fn digest_of(value: &Value) -> Result<String, IdentityError> {
    Ok(sha256_digest(jcs::canonicalize(value)?.as_bytes()))
}

/// Whether `text` is `sha256:` followed by 64 lowercase hex digits.
pub fn is_digest(text: &str) -> bool {
    text.strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
}

/// The object digest of a manifest: JCS of `{apiVersion, kind, spec}` only.
pub fn object_digest(manifest: &Value) -> Result<String, IdentityError> {
    let object = manifest.as_object().ok_or_else(|| shape("", "a manifest must be an object"))?;
    let mut identity: Vec<(&str, &Value)> = Vec::with_capacity(3);
    for field in ["apiVersion", "kind", "spec"] {
        let part = object.get(field).ok_or_else(|| shape(&format!("/{field}"), "required for the object digest"))?;
        identity.push((field, part));
    }
    // JCS of {apiVersion, kind, spec}, written from the manifest's own members (no copy).
    Ok(sha256_digest(jcs::canonicalize_members(&identity)?.as_bytes()))
}

/// The correctness key of a workload's `spec.correctness`; an absent body is left out
/// of the object, as JavaScript drops undefined members.
pub fn correctness_key(correctness: Option<&Value>) -> Result<String, IdentityError> {
    let mut object = Map::new();
    if let Some(body) = correctness {
        object.insert("correctness".to_string(), body.clone());
    }
    digest_of(&Value::Object(object))
}

/// The measurement a benchmark run is ranked by.
#[derive(Debug, Clone, PartialEq)]
pub struct PrimaryMeasurement {
    pub metric: String,
    pub statistic: String,
    pub unit: String,
    pub value: Number,
    pub sample_count: Option<u64>,
}

impl PrimaryMeasurement {
    /// `metric:statistic:unit`.
    pub fn metric_key(&self) -> String {
        format!("{}:{}:{}", self.metric, self.statistic, self.unit)
    }
}

/// `metric:statistic:unit` of the primary measurement, or `none`.
pub fn metric_key(primary: Option<&PrimaryMeasurement>) -> String {
    primary.map_or_else(|| NO_METRIC.to_string(), PrimaryMeasurement::metric_key)
}

/// The primary measurement of a BenchmarkRun `spec` (see the module notes for the rule).
pub fn primary_measurement(run_spec: &Value) -> Result<Option<PrimaryMeasurement>, IdentityError> {
    if let Some(timing) = run_spec.get("timing").filter(|timing| !timing.is_null()) {
        let statistic = string_at(timing, "/timing", "primaryStatistic")?;
        let latency = timing
            .get("latencyNs")
            .and_then(Value::as_object)
            .ok_or_else(|| shape("/timing/latencyNs", "required object"))?;
        let preferred: [&str; 2] = if statistic == "mean" { ["mean", "median"] } else { ["median", "mean"] };
        let chosen = preferred.into_iter().find_map(|name| latency.get(name).map(|value| (name, value)));
        if let Some((name, value)) = chosen {
            let value = nanoseconds(value).map_err(|reason| shape(&format!("/timing/latencyNs/{name}"), reason))?;
            let sample_count = optional_count(timing, "/timing", "samples")?;
            return Ok(Some(PrimaryMeasurement {
                metric: "latency".to_string(),
                statistic: statistic.to_string(),
                unit: "ns".to_string(),
                value,
                sample_count,
            }));
        }
    }
    let Some(first) = run_spec.get("measurements").and_then(Value::as_array).and_then(|list| list.first()) else {
        return Ok(None);
    };
    let at = "/measurements/0";
    let value = first
        .get("value")
        .and_then(Value::as_number)
        .ok_or_else(|| shape(&format!("{at}/value"), "required number"))?;
    Ok(Some(PrimaryMeasurement {
        metric: string_at(first, at, "metric")?.to_string(),
        statistic: string_at(first, at, "statistic")?.to_string(),
        unit: string_at(first, at, "unit")?.to_string(),
        value: value.clone(),
        sample_count: optional_count(first, at, "sampleCount")?,
    }))
}

/// One measurement a run's manifest states, as a measurement row repeats it.
#[derive(Debug, Clone, PartialEq)]
pub struct StatedMeasurement {
    pub metric: String,
    pub statistic: String,
    pub unit: String,
    pub value: f64,
    pub sample_count: Option<u64>,
}

/// Every measurement a run `spec` states (a BenchmarkRun's or a ServingRun's): each latency
/// of `timing.latencyNs` (metric `latency`, unit `ns`, `timing.samples` samples; the public
/// index names `minimum` and `maximum` `min` and `max`, and writes no row for the interval
/// `confidence95`), then each entry of `measurements`. What cannot be read is left out: the
/// schema check refuses it, and a row repeating it then matches nothing.
pub fn stated_measurements(run_spec: &Value) -> Vec<StatedMeasurement> {
    let mut stated = Vec::new();
    if let Some(timing) = run_spec.get("timing") {
        let samples = timing.get("samples").and_then(Value::as_u64);
        for (name, value) in timing.get("latencyNs").and_then(Value::as_object).into_iter().flatten() {
            let statistic = match name.as_str() {
                "minimum" => "min",
                "maximum" => "max",
                other => other,
            };
            if let Some(value) = value.as_f64() {
                stated.push(StatedMeasurement {
                    metric: "latency".to_string(),
                    statistic: statistic.to_string(),
                    unit: "ns".to_string(),
                    value,
                    sample_count: samples,
                });
            }
        }
    }
    for entry in run_spec.get("measurements").and_then(Value::as_array).into_iter().flatten() {
        let text = |field: &str| entry.get(field).and_then(Value::as_str).map(str::to_string);
        if let (Some(metric), Some(statistic), Some(unit), Some(value)) =
            (text("metric"), text("statistic"), text("unit"), entry.get("value").and_then(Value::as_f64))
        {
            let sample_count = entry.get("sampleCount").and_then(Value::as_u64);
            stated.push(StatedMeasurement { metric, statistic, unit, value, sample_count });
        }
    }
    stated
}

/// A latency already normalized to integer nanoseconds.
fn nanoseconds(value: &Value) -> Result<Number, String> {
    match value {
        Value::Number(number) if number.is_u64() => Ok(number.clone()),
        Value::String(text) => {
            Err(format!("duration {text:?} must be normalized to integer nanoseconds before digesting"))
        }
        other => Err(format!("expected integer nanoseconds, found {other}")),
    }
}

fn string_at<'a>(object: &'a Value, at: &str, field: &str) -> Result<&'a str, IdentityError> {
    object.get(field).and_then(Value::as_str).ok_or_else(|| shape(&format!("{at}/{field}"), "required string"))
}

fn optional_count(object: &Value, at: &str, field: &str) -> Result<Option<u64>, IdentityError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => {
            value.as_u64().map(Some).ok_or_else(|| shape(&format!("{at}/{field}"), "expected a non-negative integer"))
        }
    }
}

/// The parts of a kernel comparison key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ComparisonParts<'a> {
    /// The operation digest named by the workload (`spec.operationSpecDigest`).
    pub operation: &'a str,
    pub workload: &'a str,
    pub protocol: &'a str,
    pub environment: &'a str,
    pub correctness: &'a str,
    pub metric: &'a str,
}

/// sha256(JCS({"v":1, operation, workload, protocol, environment, correctness, metric})).
pub fn comparison_key(parts: &ComparisonParts<'_>) -> String {
    let key = json!({
        "v": 1,
        "operation": parts.operation,
        "workload": parts.workload,
        "protocol": parts.protocol,
        "environment": parts.environment,
        "correctness": parts.correctness,
        "metric": parts.metric,
    });
    digest_of(&key).expect("strings and a small integer always canonicalize")
}

/// Every key of one benchmark run, recomputed from its manifests.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchmarkRunKeys {
    pub run_digest: String,
    pub protocol_key: String,
    pub environment_key: String,
    pub correctness_key: String,
    pub primary: Option<PrimaryMeasurement>,
    pub metric_key: String,
    pub comparison_key: String,
}

/// Computes every key of a BenchmarkRun from the run, its BenchmarkProtocol and
/// ExecutionEnvironment, and the workload (WorkloadCase or WorkloadSuite) it names.
/// Errors point into whichever manifest is at fault, prefixed `/run`, `/protocol`,
/// `/environment` or `/workload`.
pub fn benchmark_run_keys(
    run: &Value,
    protocol: &Value,
    environment: &Value,
    workload: &Value,
) -> Result<BenchmarkRunKeys, IdentityError> {
    let run_digest = object_digest(run).map_err(|e| prefixed("/run", e))?;
    let protocol_key = object_digest(protocol).map_err(|e| prefixed("/protocol", e))?;
    let environment_key = object_digest(environment).map_err(|e| prefixed("/environment", e))?;
    let workload_digest = object_digest(workload).map_err(|e| prefixed("/workload", e))?;
    let workload_spec = &workload["spec"];
    let correctness_key =
        correctness_key(workload_spec.get("correctness")).map_err(|e| prefixed("/workload/spec", e))?;
    let operation = workload_spec
        .get("operationSpecDigest")
        .and_then(Value::as_str)
        .ok_or_else(|| shape("/workload/spec/operationSpecDigest", "required string"))?;
    let primary = primary_measurement(&run["spec"]).map_err(|e| prefixed("/run/spec", e))?;
    let metric_key = metric_key(primary.as_ref());
    let comparison_key = comparison_key(&ComparisonParts {
        operation,
        workload: &workload_digest,
        protocol: &protocol_key,
        environment: &environment_key,
        correctness: &correctness_key,
        metric: &metric_key,
    });
    Ok(BenchmarkRunKeys {
        run_digest,
        protocol_key,
        environment_key,
        correctness_key,
        primary,
        metric_key,
        comparison_key,
    })
}

fn prefixed(prefix: &str, error: IdentityError) -> IdentityError {
    match error {
        IdentityError::Shape { pointer, reason } => {
            IdentityError::Shape { pointer: format!("{prefix}{pointer}"), reason }
        }
        IdentityError::Canonical(JcsError::UnsafeInteger { pointer, literal }) => {
            IdentityError::Canonical(JcsError::UnsafeInteger { pointer: format!("{prefix}{pointer}"), literal })
        }
        IdentityError::Canonical(JcsError::NonFinite { pointer, literal }) => {
            IdentityError::Canonical(JcsError::NonFinite { pointer: format!("{prefix}{pointer}"), literal })
        }
    }
}

/// `harness/version/placement-or-unspecified/streaming-or-non_streaming/loadGeneration`.
pub fn serving_protocol_key(
    harness_name: &str,
    harness_version: &str,
    placement: Option<&str>,
    streaming: bool,
    load_generation: &str,
) -> String {
    let streaming = if streaming { "streaming" } else { "non_streaming" };
    format!("{harness_name}/{harness_version}/{}/{streaming}/{load_generation}", placement.unwrap_or("unspecified"))
}

/// `vendor-or-unknown/model/{perNode}x{nodes}/interconnect-or-unspecified`.
pub fn serving_topology_key(
    vendor: Option<&str>,
    model: &str,
    accelerators_per_node: u64,
    node_count: u64,
    interconnect: Option<&str>,
) -> String {
    format!(
        "{}/{model}/{accelerators_per_node}x{node_count}/{}",
        vendor.unwrap_or("unknown"),
        interconnect.unwrap_or("unspecified")
    )
}

/// The unique `metric·statistic` pairs, sorted (UTF-16 order, as JavaScript sorts), joined by commas.
pub fn metric_set_key<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> String {
    let mut keys: Vec<String> = pairs.into_iter().map(|(metric, statistic)| format!("{metric}·{statistic}")).collect();
    keys.sort_unstable_by(|a, b| jcs::compare_utf16(a, b));
    keys.dedup();
    keys.join(",")
}

/// The seven parts of a serving cohort.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CohortParts<'a> {
    pub model_digest: &'a str,
    pub tokenizer: Option<&'a str>,
    pub workload_digest: &'a str,
    pub protocol_key: &'a str,
    pub topology_key: &'a str,
    pub quality_policy: &'a str,
    pub metric_set_key: &'a str,
}

/// sha256(JCS({modelDigest, tokenizer, workloadDigest, protocolKey, topologyKey, qualityPolicy, metricSetKey})).
pub fn cohort_key(parts: &CohortParts<'_>) -> String {
    let key = json!({
        "modelDigest": parts.model_digest,
        "tokenizer": parts.tokenizer,
        "workloadDigest": parts.workload_digest,
        "protocolKey": parts.protocol_key,
        "topologyKey": parts.topology_key,
        "qualityPolicy": parts.quality_policy,
        "metricSetKey": parts.metric_set_key,
    });
    digest_of(&key).expect("strings and null always canonicalize")
}

/// Every key of one serving run, recomputed from its manifests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServingRunKeys {
    pub run_digest: String,
    pub protocol_key: String,
    pub topology_key: String,
    pub metric_set_key: String,
    pub cohort_key: String,
}

/// Computes every key of a ServingRun from the run, its ModelRevision and its
/// ServingWorkload. Errors point into `/run`, `/model` or `/workload`.
pub fn serving_run_keys(run: &Value, model: &Value, workload: &Value) -> Result<ServingRunKeys, IdentityError> {
    let run_digest = object_digest(run).map_err(|e| prefixed("/run", e))?;
    let spec = run.get("spec").ok_or_else(|| shape("/run/spec", "required"))?;
    let harness = spec.get("harness").ok_or_else(|| shape("/run/spec/harness", "required object"))?;
    let workload_spec = workload.get("spec").ok_or_else(|| shape("/workload/spec", "required"))?;
    let streaming = workload_spec
        .get("streaming")
        .and_then(Value::as_bool)
        .ok_or_else(|| shape("/workload/spec/streaming", "required boolean"))?;
    let protocol_key = serving_protocol_key(
        string_at(harness, "/run/spec/harness", "name")?,
        string_at(harness, "/run/spec/harness", "version")?,
        optional_str(spec, "/run/spec", "placement")?,
        streaming,
        string_at(workload_spec, "/workload/spec", "loadGeneration")?,
    );
    let topology = spec.get("topology").ok_or_else(|| shape("/run/spec/topology", "required object"))?;
    let topology_key = serving_topology_key(
        optional_str(topology, "/run/spec/topology", "acceleratorVendor")?,
        string_at(topology, "/run/spec/topology", "acceleratorModel")?,
        count_at(topology, "/run/spec/topology", "acceleratorsPerNode")?,
        count_at(topology, "/run/spec/topology", "nodeCount")?,
        optional_str(topology, "/run/spec/topology", "interconnect")?,
    );
    let measurements = spec
        .get("measurements")
        .and_then(Value::as_array)
        .ok_or_else(|| shape("/run/spec/measurements", "required array"))?;
    let mut pairs = Vec::with_capacity(measurements.len());
    for (index, measurement) in measurements.iter().enumerate() {
        let at = format!("/run/spec/measurements/{index}");
        pairs.push((string_at(measurement, &at, "metric")?, string_at(measurement, &at, "statistic")?));
    }
    let metric_set_key = metric_set_key(pairs);
    let tokenizer = match model.pointer("/spec/tokenizer") {
        None | Some(Value::Null) => None,
        Some(tokenizer) => optional_str(tokenizer, "/model/spec/tokenizer", "name")?,
    };
    let cohort_key = cohort_key(&CohortParts {
        model_digest: string_at(spec, "/run/spec", "modelDigest")?,
        tokenizer,
        workload_digest: string_at(spec, "/run/spec", "workloadDigest")?,
        protocol_key: &protocol_key,
        topology_key: &topology_key,
        quality_policy: string_at(spec, "/run/spec", "qualityPolicy")?,
        metric_set_key: &metric_set_key,
    });
    Ok(ServingRunKeys { run_digest, protocol_key, topology_key, metric_set_key, cohort_key })
}

fn optional_str<'a>(object: &'a Value, at: &str, field: &str) -> Result<Option<&'a str>, IdentityError> {
    match object.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(text)) => Ok(Some(text)),
        Some(_) => Err(shape(&format!("{at}/{field}"), "expected a string")),
    }
}

fn count_at(object: &Value, at: &str, field: &str) -> Result<u64, IdentityError> {
    object
        .get(field)
        .and_then(Value::as_u64)
        .ok_or_else(|| shape(&format!("{at}/{field}"), "required non-negative integer"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_format_is_checked() {
        assert!(is_digest(&sha256_digest(b"")));
        assert!(!is_digest("md5:d41d8cd98f00b204e9800998ecf8427e"));
        assert!(!is_digest(&sha256_digest(b"").to_uppercase()));
    }

    #[test]
    fn metadata_does_not_change_the_object_digest() {
        let a = json!({"apiVersion": API_VERSION, "kind": "K", "metadata": {"name": "a"}, "spec": {"x": 1}});
        let b = json!({"spec": {"x": 1.0}, "kind": "K", "apiVersion": API_VERSION, "metadata": {"name": "b"}});
        assert_eq!(object_digest(&a).unwrap(), object_digest(&b).unwrap());
        let missing = object_digest(&json!({"apiVersion": API_VERSION, "kind": "K"})).unwrap_err();
        assert_eq!(missing.to_string(), "/spec: required for the object digest");
    }

    #[test]
    fn timing_wins_over_measurements_and_falls_back_between_mean_and_median() {
        let spec = json!({
            "timing": {"primaryStatistic": "mean", "samples": 3, "latencyNs": {"median": 7}},
            "measurements": [{"metric": "score", "statistic": "geomean", "unit": "s", "value": 0.5}]
        });
        let primary = primary_measurement(&spec).unwrap().unwrap();
        assert_eq!(
            (primary.metric_key(), primary.value.as_u64(), primary.sample_count),
            ("latency:mean:ns".into(), Some(7), Some(3))
        );
        let without_timing =
            json!({"measurements": [{"metric": "score", "statistic": "geomean", "unit": "s", "value": 0.5}]});
        assert_eq!(metric_key(primary_measurement(&without_timing).unwrap().as_ref()), "score:geomean:s");
        assert_eq!(metric_key(primary_measurement(&json!({})).unwrap().as_ref()), "none");
        let unnormalized = json!({"timing": {"primaryStatistic": "median", "latencyNs": {"median": "8 us"}}});
        assert_eq!(
            primary_measurement(&unnormalized).unwrap_err().to_string(),
            "/timing/latencyNs/median: duration \"8 us\" must be normalized to integer nanoseconds before digesting"
        );
    }

    #[test]
    fn metric_set_key_sorts_and_deduplicates() {
        let key = metric_set_key([("ttft_ms", "p99"), ("output_token_throughput_tps", "reported"), ("ttft_ms", "p99")]);
        assert_eq!(key, "output_token_throughput_tps·reported,ttft_ms·p99");
    }
}
