//! The queue's test executor. It MEASURES NOTHING and is not a verifier, nor a stand-in for
//! one: it exists so that the queue's own guarantees (one holder per job, leases, exactly-once
//! publication, priorities, parking, re-verification) can be tested end to end on real
//! databases with records the catalog really verifies and ranks, without a GPU.
//!
//! For each workload of a job whose subject is a catalog implementation, it takes that
//! implementation's latest published run on the workload under the job's protocol (the
//! template) and re-issues it as a new run in the worker's environment: the environment
//! manifest gets the worker's GPU and software, the run is observed at the claim, and its
//! latencies are the template's scaled by a factor in [0.9, 1.1) drawn from the job's key, the
//! attempt and the workload (so two attempts of one job give different runs, and a double
//! publication would show). Digests and keys are recomputed by `ki_model::identity`, so the
//! rows pass the import's verification like any producer's. The run says in its metadata
//! that it is a re-issue. Solutions cannot be re-issued: a job for one fails its environment.

use std::time::Duration;

use ki_ranking::reverify::EnvironmentFacts;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::worker::{EnvironmentFailure, Executor, JobOutcome};
use super::{ClaimedJob, Subject, Verdict, VerdictStatus};
use crate::{Catalog, ExportLine};

/// See the module notes: re-issues catalog runs; measures nothing.
#[derive(Debug, Clone)]
pub struct FixtureExecutor {
    catalog: Catalog,
    environment: EnvironmentFacts,
    /// How long each job "runs" before its records are made (lets a test kill a worker
    /// mid-job).
    pub delay: Duration,
}

impl FixtureExecutor {
    /// An executor that reads templates from `catalog` and reports `environment` (the one
    /// its worker registered with).
    pub fn new(catalog: Catalog, environment: EnvironmentFacts, delay: Duration) -> FixtureExecutor {
        FixtureExecutor { catalog, environment, delay }
    }
}

impl Executor for FixtureExecutor {
    async fn execute(&self, job: &ClaimedJob) -> Result<JobOutcome, EnvironmentFailure> {
        tokio::time::sleep(self.delay).await;
        let spec = &job.job.spec;
        let Subject::Implementation { implementation_id, .. } = &spec.subject else {
            return Err(EnvironmentFailure::new(
                "the fixture executor re-issues catalog implementations' runs only; a solution needs the verification runner",
            ));
        };
        let failure = |what: String| EnvironmentFailure::new(format!("fixture executor: {what}"));
        let mut lines = Vec::new();
        let mut statuses = Vec::new();
        for workload in &spec.workloads.workloads {
            let runs = self
                .catalog
                .export_rows_where("benchmark_runs", "workloadId", workload)
                .await
                .map_err(|error| failure(error.to_string()))?;
            let template = runs
                .into_iter()
                .filter(|run| {
                    text(run, "implementationId") == Some(implementation_id.as_str())
                        && run.get("publishedAt").is_some_and(|at| !at.is_null())
                        && run.get("retractedAt").is_none_or(Value::is_null)
                        && protocol_name(run).as_deref() == Some(spec.protocol.as_str())
                })
                .max_by(|a, b| text(a, "observedAt").cmp(&text(b, "observedAt")))
                .ok_or_else(|| {
                    failure(format!(
                        "no published run of implementation {implementation_id} on workload {workload} under protocol {} to re-issue",
                        spec.protocol
                    ))
                })?;
            let workload_row = self
                .catalog
                .export_rows_where("workloads", "id", workload)
                .await
                .map_err(|error| failure(error.to_string()))?
                .into_iter()
                .next()
                .ok_or_else(|| failure(format!("workload {workload} is not in the catalog")))?;
            let measurements = self
                .catalog
                .export_rows_where("measurements", "runId", text(&template, "id").unwrap_or_default())
                .await
                .map_err(|error| failure(error.to_string()))?;
            let factor = factor(&job.job.key, job.lease.attempt, workload);
            statuses.push(text(&template, "status").unwrap_or_default().to_string());
            lines.extend(
                reissue(&template, &workload_row, &measurements, &self.environment, job.claimed_at_ms, factor)
                    .map_err(failure)?,
            );
        }
        // Numbered as a file's lines would be, so that a refusal names the row.
        for (index, line) in lines.iter_mut().enumerate() {
            line.line = index + 1;
        }
        let status = match statuses.iter().find(|status| *status != "passed").map(String::as_str) {
            None => VerdictStatus::Passed,
            Some("incorrect_numerical" | "incorrect_shape" | "incorrect") => VerdictStatus::Incorrect,
            Some("compile_error") => VerdictStatus::CompileError,
            Some("timeout") => VerdictStatus::Timeout,
            Some(_) => VerdictStatus::RuntimeError,
        };
        let summary = format!(
            "fixture executor: re-issued {} run(s) of implementation {implementation_id} in the worker's environment (no measurement)",
            statuses.len()
        );
        Ok(JobOutcome { lines, verdict: Verdict { status, summary, detail: Value::Null } })
    }
}

fn text<'a>(row: &'a Map<String, Value>, column: &str) -> Option<&'a str> {
    row.get(column).and_then(Value::as_str)
}

fn protocol_name(run: &Map<String, Value>) -> Option<String> {
    run.get("manifest")
        .and_then(|manifest| manifest.pointer("/protocol/metadata/name"))
        .and_then(Value::as_str)
        .or_else(|| text(run, "protocolKey"))
        .map(str::to_string)
}

/// A factor in [0.9, 1.1) from the job key, attempt and workload.
fn factor(key: &str, attempt: u32, workload: &str) -> f64 {
    let digest = Sha256::digest(format!("{key}\u{0}{attempt}\u{0}{workload}").as_bytes());
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    0.9 + 0.2 * (u64::from_be_bytes(bytes) >> 11) as f64 / (1u64 << 53) as f64
}

fn scaled_integer(value: &Value, factor: f64) -> Value {
    match value.as_f64() {
        Some(number) if value.is_u64() => json!((number * factor).round().max(1.0) as u64),
        Some(number) => json!((number * factor).round().max(1.0)),
        None => value.clone(),
    }
}

/// A stable row id (UUID v8) from a table and a key.
fn row_id(table: &str, key: &str) -> String {
    let digest = Sha256::digest(format!("kernelindex:queue-fixture:{table}:{key}").as_bytes());
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_custom_bytes(bytes).into_uuid().to_string()
}

fn leading_number(version: Option<&str>) -> Value {
    version
        .and_then(|version| version.split('.').next())
        .and_then(|major| major.trim().parse::<u64>().ok())
        .map_or(Value::Null, |major| json!(major))
}

/// The template run re-issued in `environment`, observed at `observed_ms`, latencies scaled
/// by `factor`: its benchmark_runs line and its measurements.
fn reissue(
    template: &Map<String, Value>,
    workload: &Map<String, Value>,
    measurements: &[Map<String, Value>],
    environment: &EnvironmentFacts,
    observed_ms: i64,
    factor: f64,
) -> Result<Vec<ExportLine>, String> {
    let manifest = template.get("manifest").ok_or("the template run has no manifest")?;
    let (Some(run), Some(protocol), Some(old_environment)) =
        (manifest.get("run"), manifest.get("protocol"), manifest.get("environment"))
    else {
        return Err("the template run's manifest lacks its run, protocol or environment".into());
    };
    let workload_manifest = workload.get("manifest").ok_or("the workload has no manifest")?;

    let mut new_environment = old_environment.clone();
    let spec = new_environment.get_mut("spec").and_then(Value::as_object_mut).ok_or("environment has no spec")?;
    let hardware = spec.entry("hardware").or_insert_with(|| json!({}));
    hardware["product"] = json!(environment.gpu);
    if let Some(architecture) = &environment.architecture {
        hardware["architecture"] = json!(architecture);
    }
    let software = spec.entry("software").or_insert_with(|| json!({}));
    if let Some(driver) = &environment.driver {
        software["driver"] = json!(driver);
    }
    if let Some(cuda) = &environment.cuda_toolkit {
        software["cudaToolkit"] = json!(cuda);
    }
    if let Some(framework) = &environment.framework {
        software["framework"] = json!({"name": framework.name, "version": framework.version});
    }
    if !environment.libraries.is_empty() {
        software["libraries"] = json!(environment.libraries);
    }
    let digest = |value: &Value| ki_model::identity::object_digest(value).map_err(|error| error.to_string());
    let environment_digest = digest(&new_environment)?;

    let observed_at = ki_model::utc::from_unix_millis(observed_ms);
    let mut new_run = run.clone();
    let template_id = text(template, "id").unwrap_or_default();
    new_run["metadata"]["description"] = json!(format!(
        "Re-issued by the verification queue's fixture executor from run {template_id}: not a measurement."
    ));
    let run_spec = new_run.get_mut("spec").and_then(Value::as_object_mut).ok_or("run has no spec")?;
    run_spec.insert("environmentDigest".into(), json!(environment_digest));
    run_spec.insert("observedAt".into(), json!(observed_at));
    if let Some(latency) =
        run_spec.get_mut("timing").and_then(|timing| timing.get_mut("latencyNs")).and_then(Value::as_object_mut)
    {
        for value in latency.values_mut() {
            *value = match &*value {
                Value::Array(items) => Value::Array(items.iter().map(|item| scaled_integer(item, factor)).collect()),
                other => scaled_integer(other, factor),
            };
        }
    }
    if let Some(list) = run_spec.get_mut("measurements").and_then(Value::as_array_mut) {
        for measurement in list {
            if measurement.get("unit").and_then(Value::as_str) == Some("ns") {
                measurement["value"] = scaled_integer(&measurement["value"], factor);
            }
        }
    }
    let keys = ki_model::identity::benchmark_run_keys(&new_run, protocol, &new_environment, workload_manifest)
        .map_err(|error| format!("the re-issued run's keys: {error}"))?;
    let run_id = row_id("benchmark_runs", &keys.run_digest);
    let primary = keys.primary.as_ref();

    let mut row = template.clone();
    let software = &new_environment["spec"]["software"];
    let cuda = software["cudaToolkit"].as_str();
    let driver = software["driver"].as_str();
    let scaled = |column: &str| template.get(column).map_or(Value::Null, |value| scaled_integer(value, factor));
    for (column, value) in [
        ("id", json!(run_id)),
        ("runDigest", json!(keys.run_digest)),
        ("observedAt", json!(observed_at)),
        ("publishedAt", json!(observed_at)),
        ("hardwareModel", json!(environment.gpu)),
        ("hardwareArchitecture", new_environment["spec"]["hardware"]["architecture"].clone()),
        ("driverMajor", leading_number(driver)),
        ("cudaMajor", leading_number(cuda)),
        ("protocolKey", json!(keys.protocol_key)),
        ("environmentKey", json!(keys.environment_key)),
        ("correctnessKey", json!(keys.correctness_key)),
        ("comparisonKey", json!(keys.comparison_key)),
        ("primaryValue", primary.map_or(Value::Null, |p| Value::Number(p.value.clone()))),
        ("sampleCount", primary.and_then(|p| p.sample_count).map_or(Value::Null, |count| json!(count))),
        ("uncertaintyLow", scaled("uncertaintyLow")),
        ("uncertaintyHigh", scaled("uncertaintyHigh")),
        (
            "environmentSummary",
            json!(format!(
                "CUDA {} · driver {} · re-issued by the queue's fixture executor",
                cuda.unwrap_or("?"),
                driver.unwrap_or("?")
            )),
        ),
        ("manifest", json!({"run": new_run, "protocol": protocol, "environment": new_environment})),
        ("supersedesId", Value::Null),
        ("retractedAt", Value::Null),
        ("retractionReason", Value::Null),
    ] {
        row.insert(column.to_string(), value);
    }
    let mut lines = vec![ExportLine { line: 0, table: "benchmark_runs".into(), row }];
    for measurement in measurements {
        let mut copy = measurement.clone();
        let key = format!(
            "{}:{}:{}",
            keys.run_digest,
            text(measurement, "metric").unwrap_or_default(),
            text(measurement, "statistic").unwrap_or_default()
        );
        copy.insert("id".into(), json!(row_id("measurements", &key)));
        copy.insert("runId".into(), json!(run_id));
        if text(measurement, "unit") == Some("ns")
            && let Some(value) = measurement.get("value")
        {
            copy.insert("value".into(), scaled_integer(value, factor));
        }
        lines.push(ExportLine { line: 0, table: "measurements".into(), row: copy });
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factors_stay_in_range_and_differ_by_attempt() {
        let first = factor("sha256:abc", 1, "w");
        let second = factor("sha256:abc", 2, "w");
        assert!((0.9..1.1).contains(&first) && (0.9..1.1).contains(&second));
        assert_ne!(first, second);
        assert_eq!(first, factor("sha256:abc", 1, "w"));
    }
}
