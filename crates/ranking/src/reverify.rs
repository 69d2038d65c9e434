//! Re-verification: which Verified runs to run again because the world moved. A group's
//! current #1 Verified run (and the Verified runners-up behind it) goes back to the
//! verification queue when its environment is older than a threshold, or when a worker with
//! the same GPU has reported a newer driver, CUDA toolkit, framework or library than the one
//! the run was measured on.
//!
//! Pure, like the rest of ranking: the index, the environments workers reported and a
//! policy in; decisions out. The catalog's queue turns each decision into a job at the
//! re-verification priority.
//!
//! A re-run lands in its own comparison group when its environment differs (the environment
//! is part of the comparison key), and in the same group when only age made it stale. Each
//! decision names its *basis*: the newest Verified run of that implementation on that
//! workload, protocol and GPU. The queue's job key contains it, so a run is re-verified once
//! per basis, and planning again after the re-runs are published plans nothing more for
//! them (their newest run is then fresh and as new as any environment seen).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::index::Index;
use crate::time::Instant;

/// The software names an environment is compared on besides its libraries.
pub const DRIVER: &str = "driver";
pub const CUDA_TOOLKIT: &str = "cudaToolkit";

/// What an execution environment is, as far as re-verification cares: the GPU and the
/// versions of the software under the kernel. The same shape describes what a worker
/// reported about itself and what a run's `ExecutionEnvironment` manifest says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EnvironmentFacts {
    /// The GPU's product name as the driver reports it (`NVIDIA H200`).
    pub gpu: String,
    /// `sm_90` and the like, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub architecture: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_toolkit: Option<String>,
    /// The framework and its version (`torch` → `2.11.0`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub framework: Option<Framework>,
    /// Library versions by name (`flashinfer` → `0.5.3`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub libraries: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Framework {
    pub name: String,
    pub version: String,
}

impl EnvironmentFacts {
    /// The facts of an `ExecutionEnvironment` manifest (`spec.hardware`, `spec.software`);
    /// None when it names no GPU product.
    pub fn from_manifest(environment: &Value) -> Option<EnvironmentFacts> {
        let spec = environment.get("spec")?;
        let text = |pointer: &str| spec.pointer(pointer).and_then(Value::as_str).map(str::to_string);
        let gpu = text("/hardware/product").filter(|gpu| !gpu.trim().is_empty())?;
        let framework = match (text("/software/framework/name"), text("/software/framework/version")) {
            (Some(name), Some(version)) => Some(Framework { name, version }),
            _ => None,
        };
        let libraries = spec
            .pointer("/software/libraries")
            .and_then(Value::as_object)
            .map(|libraries| {
                libraries
                    .iter()
                    .filter_map(|(name, version)| version.as_str().map(|version| (name.clone(), version.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        Some(EnvironmentFacts {
            gpu,
            architecture: text("/hardware/architecture"),
            driver: text("/software/driver"),
            cuda_toolkit: text("/software/cudaToolkit"),
            framework,
            libraries,
        })
    }

    /// The version of one piece of software: `driver`, `cudaToolkit`, the framework's name
    /// or a library's name.
    pub fn version(&self, name: &str) -> Option<&str> {
        match name {
            DRIVER => self.driver.as_deref(),
            CUDA_TOOLKIT => self.cuda_toolkit.as_deref(),
            _ => match &self.framework {
                Some(framework) if framework.name == name => Some(&framework.version),
                _ => self.libraries.get(name).map(String::as_str),
            },
        }
    }

    /// Every software name this environment gives a version for.
    pub fn software(&self) -> Vec<(&str, &str)> {
        let mut named = Vec::new();
        if let Some(driver) = &self.driver {
            named.push((DRIVER, driver.as_str()));
        }
        if let Some(cuda) = &self.cuda_toolkit {
            named.push((CUDA_TOOLKIT, cuda.as_str()));
        }
        if let Some(framework) = &self.framework {
            named.push((framework.name.as_str(), framework.version.as_str()));
        }
        named.extend(self.libraries.iter().map(|(name, version)| (name.as_str(), version.as_str())));
        named
    }

    /// Same GPU product (case and surrounding space ignored).
    pub fn same_gpu(&self, gpu: &str) -> bool {
        self.gpu.trim().eq_ignore_ascii_case(gpu.trim())
    }

    /// True when every minimum in `minimums` (software name → version) is met.
    pub fn satisfies(&self, minimums: &BTreeMap<String, String>) -> bool {
        minimums.iter().all(|(name, minimum)| {
            self.version(name).and_then(|have| compare_versions(have, minimum)).is_some_and(|o| o != Ordering::Less)
        })
    }
}

/// Compares two version strings by their leading dot-separated numbers (`580.159.04`,
/// `13.0`, `2.11.0+cu130` → 2.11.0); missing components count as 0. None when either has no
/// leading number, so that an unreadable version never looks newer.
pub fn compare_versions(a: &str, b: &str) -> Option<Ordering> {
    let (a, b) = (version_numbers(a)?, version_numbers(b)?);
    let length = a.len().max(b.len());
    let component = |v: &[u64], i: usize| v.get(i).copied().unwrap_or(0);
    Some((0..length).map(|i| component(&a, i).cmp(&component(&b, i))).find(|o| o.is_ne()).unwrap_or(Ordering::Equal))
}

fn version_numbers(text: &str) -> Option<Vec<u64>> {
    let text = text.trim().trim_start_matches(['v', 'V']);
    let mut numbers = Vec::new();
    for part in text.split('.') {
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        if digits.is_empty() {
            break;
        }
        numbers.push(digits.parse().ok()?);
        if digits.len() != part.len() {
            break; // `0+cu130`, `1rc2`: the number ends here
        }
    }
    (!numbers.is_empty()).then_some(numbers)
}

/// When to re-verify.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Re-verify a run observed longer ago than this (nanoseconds); None: age alone never does.
    pub max_age_ns: Option<i64>,
    /// How many Verified runs behind each group's #1 go with it.
    pub runners_up: usize,
}

/// Why a run is to be verified again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Staleness {
    /// Observed longer ago than the policy allows.
    Old { observed_at: String, age_days: i64 },
    /// A worker with the same GPU runs newer software.
    NewerSoftware { newer: Vec<NewerSoftware> },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewerSoftware {
    pub name: String,
    /// What the group's #1 run was measured with.
    pub run: String,
    /// The newest version a worker reported.
    pub seen: String,
}

/// One run to verify again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Reverification {
    pub comparison_key: String,
    /// 0 for the group's #1 Verified run, 1 for the first runner-up, …
    pub position: usize,
    pub run_id: String,
    pub implementation_id: String,
    pub implementation_digest: String,
    pub operation: String,
    pub workload_id: String,
    /// The protocol's name (its manifest's `metadata.name`), else its key.
    pub protocol: String,
    pub gpu: String,
    /// Software versions the re-run must have at least (empty when only age made it stale).
    pub minimum_software: BTreeMap<String, String>,
    /// The newest Verified run of this implementation on this workload, protocol and GPU.
    pub basis_run_id: String,
    pub staleness: Staleness,
}

fn run_environment(index: &Index, run: usize) -> Option<EnvironmentFacts> {
    EnvironmentFacts::from_manifest(index.run_manifest(run)?.get("environment")?)
}

fn protocol_name(index: &Index, run: usize) -> String {
    index.run_protocol_name(run).map(str::to_string).unwrap_or_else(|| index.runs[run].protocol_key.to_string())
}

/// For each software name of `run`, the newest version any seen environment of the same GPU
/// has, where that is newer.
fn newer_software(run: &EnvironmentFacts, seen: &[EnvironmentFacts]) -> Vec<NewerSoftware> {
    let mut newer: Vec<NewerSoftware> = Vec::new();
    for (name, have) in run.software() {
        let newest = seen
            .iter()
            .filter(|environment| environment.same_gpu(&run.gpu))
            .filter_map(|environment| environment.version(name))
            .filter(|version| compare_versions(version, have) == Some(Ordering::Greater))
            .max_by(|a, b| compare_versions(a, b).unwrap_or(Ordering::Equal));
        if let Some(seen) = newest {
            newer.push(NewerSoftware { name: name.to_string(), run: have.to_string(), seen: seen.to_string() });
        }
    }
    newer
}

/// The runs the policy says to verify again: for every comparison group whose #1 Verified
/// run is stale (see the module notes), that run and up to `policy.runners_up` Verified
/// runs behind it, each unless a newer Verified run of the same implementation, workload,
/// protocol and GPU already answers the staleness. Groups in index order, best run first.
pub fn plan(index: &Index, seen: &[EnvironmentFacts], policy: &Policy, now: Instant) -> Vec<Reverification> {
    let mut planned = Vec::new();
    for cohort in &index.cohorts {
        let verified: Vec<usize> = cohort
            .ranking
            .iter()
            .map(|entry| entry.run)
            .filter(|&run| index.facts[run].trust.is_verified())
            .take(policy.runners_up.saturating_add(1))
            .collect();
        let Some(&leader) = verified.first() else { continue };
        let Some(environment) = run_environment(index, leader) else { continue };
        let observed = &index.runs[leader].observed_at;
        let age = now.0.saturating_sub(observed.instant.0);
        let newer = newer_software(&environment, seen);
        let staleness = if !newer.is_empty() {
            Staleness::NewerSoftware { newer }
        } else if policy.max_age_ns.is_some_and(|max_age| age > max_age) {
            Staleness::Old { observed_at: observed.text().into_owned(), age_days: age / 86_400_000_000_000 }
        } else {
            continue;
        };
        let minimum_software: BTreeMap<String, String> = match &staleness {
            Staleness::NewerSoftware { newer } => {
                newer.iter().map(|software| (software.name.clone(), software.seen.clone())).collect()
            }
            Staleness::Old { .. } => BTreeMap::new(),
        };
        for (position, &run) in verified.iter().enumerate() {
            let Some(basis) = newest_sibling(index, run, &environment.gpu) else { continue };
            if answered(index, basis, &minimum_software, policy, now) {
                continue;
            }
            let row = &index.runs[run];
            planned.push(Reverification {
                comparison_key: cohort.comparison_key.to_string(),
                position,
                run_id: row.id.to_string(),
                implementation_id: row.implementation_id.to_string(),
                implementation_digest: index.implementation_of(run).implementation_digest.clone(),
                operation: index.operation_of(run).name.clone(),
                workload_id: row.workload_id.to_string(),
                protocol: protocol_name(index, run),
                gpu: environment.gpu.clone(),
                minimum_software: minimum_software.clone(),
                basis_run_id: index.runs[basis].id.to_string(),
                staleness: staleness.clone(),
            });
        }
    }
    planned
}

/// The newest eligible Verified run of `run`'s implementation on its workload and protocol
/// (by name) on `gpu`: `run` itself when nothing newer exists.
fn newest_sibling(index: &Index, run: usize, gpu: &str) -> Option<usize> {
    let row = &index.runs[run];
    let protocol = protocol_name(index, run);
    index
        .workload_runs(index.run_workload(run))
        .filter(|&other| {
            let candidate = &index.runs[other];
            candidate.implementation_id == row.implementation_id
                && index.facts[other].eligible()
                && index.facts[other].trust.is_verified()
                && protocol_name(index, other) == protocol
                && run_environment(index, other).is_some_and(|environment| environment.same_gpu(gpu))
        })
        .max_by(|&a, &b| {
            let (a_row, b_row) = (&index.runs[a], &index.runs[b]);
            a_row.observed_at.instant.cmp(&b_row.observed_at.instant).then_with(|| a_row.id.cmp(&b_row.id))
        })
}

/// True when `basis` (the newest sibling) already meets the minimums and is young enough:
/// it is the re-run, and nothing is left to do.
fn answered(
    index: &Index,
    basis: usize,
    minimum_software: &BTreeMap<String, String>,
    policy: &Policy,
    now: Instant,
) -> bool {
    let Some(environment) = run_environment(index, basis) else { return false };
    let age = now.0.saturating_sub(index.runs[basis].observed_at.instant.0);
    let young = policy.max_age_ns.is_none_or(|max_age| age <= max_age);
    young && environment.satisfies(minimum_software)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn versions_compare_by_their_numbers() {
        assert_eq!(compare_versions("580.159.04", "580.65.06"), Some(Ordering::Greater));
        assert_eq!(compare_versions("13.0", "13"), Some(Ordering::Equal));
        assert_eq!(compare_versions("2.11.0+cu130", "2.9"), Some(Ordering::Greater));
        assert_eq!(compare_versions("0.5.3", "0.10.0"), Some(Ordering::Less));
        assert_eq!(compare_versions("v1.2", "1.2.0"), Some(Ordering::Equal));
        assert_eq!(compare_versions("nvrtc 13.0", "13.0"), None);
        assert_eq!(compare_versions("", "1"), None);
    }

    #[test]
    fn facts_come_from_an_environment_manifest() {
        let manifest = json!({"spec": {
            "hardware": {"vendor": "nvidia", "product": "NVIDIA H200", "architecture": "sm_90"},
            "software": {"driver": "580.159.04", "cudaToolkit": "13.0", "framework": {"name": "torch", "version": "2.11.0"},
                         "libraries": {"flashinfer": "0.5.3"}}
        }});
        let facts = EnvironmentFacts::from_manifest(&manifest).unwrap();
        assert_eq!(facts.gpu, "NVIDIA H200");
        assert_eq!(facts.version("driver"), Some("580.159.04"));
        assert_eq!(facts.version("torch"), Some("2.11.0"));
        assert_eq!(facts.version("flashinfer"), Some("0.5.3"));
        assert_eq!(facts.version("triton"), None);
        let minimums = BTreeMap::from([("driver".to_string(), "580".to_string())]);
        assert!(facts.satisfies(&minimums));
        let minimums = BTreeMap::from([("cudaToolkit".to_string(), "13.1".to_string())]);
        assert!(!facts.satisfies(&minimums));
        let minimums = BTreeMap::from([("triton".to_string(), "3.0".to_string())]);
        assert!(!facts.satisfies(&minimums), "software the environment lacks is not satisfied");
        assert!(EnvironmentFacts::from_manifest(&json!({"spec": {"hardware": {}}})).is_none());
    }

    #[test]
    fn newer_software_is_taken_from_workers_with_the_same_gpu_only() {
        let run = EnvironmentFacts {
            gpu: "NVIDIA H200".into(),
            architecture: None,
            driver: Some("580.159.04".into()),
            cuda_toolkit: Some("13.0".into()),
            framework: None,
            libraries: BTreeMap::new(),
        };
        let other_gpu = EnvironmentFacts { gpu: "NVIDIA A100".into(), driver: Some("600.1".into()), ..run.clone() };
        let older = EnvironmentFacts { driver: Some("575.0".into()), ..run.clone() };
        assert!(newer_software(&run, &[other_gpu.clone(), older.clone(), run.clone()]).is_empty());
        let newer = EnvironmentFacts { gpu: "nvidia h200".into(), cuda_toolkit: Some("13.1".into()), ..run.clone() };
        let newest = EnvironmentFacts { cuda_toolkit: Some("13.2".into()), ..run.clone() };
        assert_eq!(
            newer_software(&run, &[other_gpu, older, newer, newest]),
            vec![NewerSoftware { name: "cudaToolkit".into(), run: "13.0".into(), seen: "13.2".into() }]
        );
    }
}
