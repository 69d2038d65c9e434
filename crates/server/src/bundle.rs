//! A submitted bundle validated: the manifests it holds, each checked by the record model and
//! digested, and the verification jobs its `verify:` group asks for. `POST /api/v1/submissions`
//! ([`crate::pages::submission`]) stores what it answers; it reads nothing but the bundle.

use serde_json::Value;

use crate::problem::FieldProblem;
use ki_catalog::SubmittedDocument;

/// Most manifests one submission may hold.
pub const MAX_MANIFESTS: usize = 200;

/// Most Solutions one submission may ask to verify.
pub const MAX_SOLUTIONS: usize = 20;
/// The protocol a submitted Solution is timed under when it names none.
pub const DEFAULT_SOLUTION_PROTOCOL: &str = "kernelindex-rerun-v2-realistic";

#[derive(Debug)]
pub struct ValidatedBundle {
    pub title: String,
    pub documents: Vec<SubmittedDocument>,
    /// One verification job per Solution of the bundle's `verify:` group.
    pub jobs: Vec<ki_catalog::queue::JobSpec>,
}

/// A `verify:` entry: `{solution, workloads, protocol?}`, the Solution whole (any worker
/// can run it), the workloads by their FlashInfer-Bench uuids.
fn verification_job(pointer: &str, item: Value) -> Result<ki_catalog::queue::JobSpec, FieldProblem> {
    use ki_catalog::queue::{JobSpec, Requirement, Subject, WorkloadSet};
    let Value::Object(mut entry) = item else {
        return Err(problem(pointer, "a verify entry is {solution, workloads, protocol?}"));
    };
    if let Some(unknown) = entry.keys().find(|k| !["solution", "workloads", "protocol"].contains(&k.as_str())) {
        return Err(problem(format!("{pointer}/{unknown}"), "unknown member (solution, workloads, protocol)"));
    }
    let Some(Value::Object(solution)) = entry.remove("solution") else {
        return Err(problem(format!("{pointer}/solution"), "required: a FlashInfer-Bench Solution (JSON object)"));
    };
    let field = |name: &str| solution.get(name).and_then(Value::as_str).map(str::trim).filter(|t| !t.is_empty());
    let name = field("name").ok_or_else(|| problem(format!("{pointer}/solution/name"), "required string"))?.to_string();
    let definition = field("definition")
        .ok_or_else(|| problem(format!("{pointer}/solution/definition"), "required string"))?
        .to_string();
    let workloads = match entry.remove("workloads") {
        Some(Value::Array(list)) if !list.is_empty() => list
            .into_iter()
            .enumerate()
            .map(|(i, w)| match w {
                Value::String(uuid) if !uuid.trim().is_empty() => Ok(uuid.trim().to_string()),
                _ => Err(problem(format!("{pointer}/workloads/{i}"), "a workload uuid (string)")),
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err(problem(format!("{pointer}/workloads"), "required: a non-empty list of workload uuids")),
    };
    let protocol = match entry.remove("protocol") {
        None => DEFAULT_SOLUTION_PROTOCOL.to_string(),
        Some(Value::String(protocol)) if !protocol.trim().is_empty() => protocol.trim().to_string(),
        Some(_) => return Err(problem(format!("{pointer}/protocol"), "a protocol name (string)")),
    };
    JobSpec {
        subject: Subject::Solution { name, document: Value::Object(solution) },
        workloads: WorkloadSet { operation: definition, workloads },
        protocol,
        requirement: Requirement::default(),
        basis_run_id: None,
    }
    .normalized()
    .map_err(|error| problem(pointer, error.to_string()))
}

pub(crate) fn problem(pointer: impl Into<String>, detail: impl Into<String>) -> FieldProblem {
    FieldProblem { pointer: pointer.into(), detail: detail.into() }
}

/// Validates a bundle; on failure returns every problem with its JSON pointer.
pub fn validate_bundle(bytes: &[u8]) -> Result<ValidatedBundle, Vec<FieldProblem>> {
    let documents = ki_model::parse::parse_documents(bytes).map_err(|problems| {
        problems.into_iter().map(|p| problem(p.display_pointer().to_string(), p.to_string())).collect::<Vec<_>>()
    })?;
    // (pointer prefix, manifest value, project slug of an implementation)
    let mut manifests: Vec<(String, Value, Option<String>)> = Vec::new();
    let mut jobs = Vec::new();
    let mut job_problems = Vec::new();
    let many = documents.len() > 1;
    for doc in documents {
        let prefix = if many { format!("/documents/{}", doc.index) } else { String::new() };
        match doc.value {
            Value::Object(map) if !map.contains_key("apiVersion") => {
                for (group, list) in map {
                    let Value::Array(items) = list else {
                        return Err(vec![problem(
                            format!("{prefix}/{group}"),
                            "a bundle maps each group to a list of manifests",
                        )]);
                    };
                    if group == "verify" {
                        for (i, item) in items.into_iter().enumerate() {
                            let pointer = format!("{prefix}/verify/{i}");
                            match verification_job(&pointer, item) {
                                Ok(job) => jobs.push(job),
                                Err(found) => job_problems.push(found),
                            }
                        }
                        continue;
                    }
                    for (i, item) in items.into_iter().enumerate() {
                        match item {
                            // A wrapper such as {run, protocol, environment} or {projectSlug,
                            // manifest}: each member that is a manifest; the rest annotate.
                            Value::Object(members)
                                if !members.contains_key("apiVersion")
                                    && members.values().any(|m| m.get("apiVersion").is_some()) =>
                            {
                                let project = members.get("projectSlug").and_then(Value::as_str).map(str::to_string);
                                for (member, manifest) in members {
                                    if manifest.get("apiVersion").is_some() {
                                        manifests.push((
                                            format!("{prefix}/{group}/{i}/{member}"),
                                            manifest,
                                            project.clone(),
                                        ));
                                    }
                                }
                            }
                            item => manifests.push((format!("{prefix}/{group}/{i}"), item, None)),
                        }
                    }
                }
            }
            value => manifests.push((prefix, value, None)),
        }
    }
    if manifests.is_empty() && jobs.is_empty() && job_problems.is_empty() {
        return Err(vec![problem("/", "the bundle holds no manifest and no Solution to verify")]);
    }
    if jobs.len() + job_problems.len() > MAX_SOLUTIONS {
        return Err(vec![problem(
            "/verify",
            format!("{} Solutions; one submission asks for at most {MAX_SOLUTIONS}", jobs.len() + job_problems.len()),
        )]);
    }
    if manifests.len() > MAX_MANIFESTS {
        return Err(vec![problem(
            "/",
            format!("{} manifests; one submission takes at most {MAX_MANIFESTS}", manifests.len()),
        )]);
    }
    let mut problems = job_problems;
    let mut out = Vec::new();
    for (prefix, value, project_slug) in manifests {
        match ki_model::manifest::validate_value(value) {
            Ok(valid) => {
                let metadata = valid.value.get("metadata");
                out.push(SubmittedDocument {
                    kind: valid.kind.name().to_string(),
                    name: metadata.and_then(|m| m.get("name")).and_then(Value::as_str).unwrap_or("").to_string(),
                    title: metadata.and_then(|m| m.get("title")).and_then(Value::as_str).map(str::to_string),
                    digest: valid.digest,
                    manifest: valid.value,
                    project_slug,
                });
            }
            Err(found) => {
                for p in found {
                    problems.push(problem(format!("{prefix}{}", p.pointer), p.message));
                }
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    // The run's title names a submission best; else the first manifest's.
    let title = out
        .iter()
        .find(|d| d.kind == "BenchmarkRun" || d.kind == "ServingRun")
        .or(out.first())
        .map(|d| d.title.clone().unwrap_or_else(|| d.name.clone()))
        .or_else(|| jobs.first().map(|job| format!("verify {}", job.subject.label())))
        .unwrap_or_default();
    Ok(ValidatedBundle { title, documents: out, jobs })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A file of the registry examples in the repository's fixtures/.
    fn registry(path: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/kernelindex-registry").join(path)
    }

    #[test]
    fn the_registry_fixture_bundle_validates() {
        let bytes = std::fs::read(registry("submissions/example-fixture.yaml")).unwrap();
        let bundle = validate_bundle(&bytes).unwrap_or_else(|p| panic!("{p:?}"));
        assert!(bundle.documents.len() >= 5, "{}", bundle.documents.len());
        assert!(bundle.documents.iter().all(|d| d.digest.starts_with("sha256:") && d.digest.len() == 71));
        assert!(bundle.documents.iter().any(|d| d.kind == "BenchmarkRun"));
        // Publication needs to know whose implementation it is.
        let implementation = bundle.documents.iter().find(|d| d.kind == "ImplementationRevision").unwrap();
        assert_eq!(implementation.project_slug.as_deref(), Some("meridian-kernels"));
        assert!(
            bundle.documents.iter().filter(|d| d.kind != "ImplementationRevision").all(|d| d.project_slug.is_none())
        );
    }

    #[test]
    fn invalid_examples_are_refused_with_pointers() {
        for name in ["bad-digest", "unknown-field", "duplicate-key", "ambiguous-duration"] {
            let bytes = std::fs::read(registry(&format!("examples/invalid/{name}.yaml"))).unwrap();
            let problems = validate_bundle(&bytes).expect_err(name);
            assert!(!problems.is_empty(), "{name}");
        }
        assert!(validate_bundle(b"").is_err());
        assert!(validate_bundle(b"projects: 3").is_err());
    }
}
