//! Submissions (`POST /api/v1/submissions`, `/submissions/{id}`): manifest bundles parsed
//! and validated by the record model, digested, and kept as a Reported, unpublished
//! submission until an admin publishes it.
//!
//! A bundle is YAML or JSON in one of three shapes: one manifest; several YAML
//! documents, one manifest each; or the registry's bundle mapping (`projects:`,
//! `operations:`, `workloads:`, … each a list of manifests). The mapping may also hold
//! `verify:`, a list of FlashInfer-Bench Solutions to verify on the index's GPUs, each
//! `{solution, workloads, protocol?}`: the submission and one verification job per
//! Solution are written in one transaction, and the submission's page lists the jobs.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use maud::{Markup, html};
use serde_json::Value;

use super::{Answer, Shared, catalog_problem, html_response, json_response, layout, short_id};
use crate::AppState;
use crate::http::presented_key;
use crate::problem::{FieldProblem, Problem};
use ki_catalog::{Scope, Submission, SubmittedDocument};

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

fn problem(pointer: impl Into<String>, detail: impl Into<String>) -> FieldProblem {
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

// ---------- submissions ----------

pub fn render(s: &Submission, jobs: &super::verifications::QueueView) -> Markup {
    layout(
        &format!("Submission {}", short_id(&s.id)),
        html! {
            h1 { "Submission " (short_id(&s.id)) }
            p.subtitle { (s.title) }
            @if s.published_at.is_none() { div.banner role="note" data-kind="unpublished" { strong { "unpublished: " } "awaiting review by an index admin; it is not ranked." } }
            dl.fields {
                div { dt { "evidence" } dd { (super::evidence_badge(&s.trust)) } }
                div { dt { "submitter" } dd { (s.submitter) } }
                div { dt { "submitted" } dd { (s.created_at) } }
                div { dt { "published" } dd { (s.published_at.as_deref().unwrap_or("not yet")) } }
            }
            table { caption { "Manifests (validated and digested)" }
                thead { tr { th scope="col" { "kind" } th scope="col" { "name" } th scope="col" { "title" } th scope="col" { "digest" } } }
                tbody { @for d in &s.documents { tr { td { (d.kind) } td { (d.name) } td { (d.title.as_deref().unwrap_or("")) } td { code { (d.digest) } } } } } }
            (super::section("verifications", "Verification jobs", html! {
                @if jobs.jobs.is_empty() { p { "No verification jobs: this submission carries no solution to run." } }
                @else { (super::verifications::jobs_table("Jobs this submission enqueued", &jobs.jobs, &jobs.workers)) }
            }))
            p { a href={ "/api/v1/submissions/" (s.id) } type="application/json" { "JSON" } }
        },
    )
}

// ---------- submissions ----------

pub async fn api_submit(State(state): State<Shared>, headers: HeaderMap, body: Bytes) -> Answer {
    let key = presented_key(&headers);
    state.catalog.authorize(key.as_deref(), Scope::Submit).await.map_err(catalog_problem)?;
    if body.len() > ki_model::parse::MAX_INPUT_BYTES {
        return Err(Problem::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too-large",
            "Bundle too large",
            "a bundle is at most 1 MiB",
        ));
    }
    let bundle = validate_bundle(&body).map_err(|errors| Problem::unprocessable("the bundle is not valid", errors))?;
    let submission = if bundle.jobs.is_empty() {
        state.catalog.add_submission(key.as_deref(), bundle.title, bundle.documents).await.map_err(catalog_problem)?
    } else {
        let (submission, _) = state
            .catalog
            .add_submission_with_jobs(key.as_deref(), bundle.title, bundle.documents, bundle.jobs)
            .await
            .map_err(|error| match error {
                ki_catalog::queue::QueueError::Catalog(error) => catalog_problem(error),
                other => Problem::unprocessable("the bundle is not valid", vec![problem("/verify", other.to_string())]),
            })?;
        submission
    };
    let mut response = (StatusCode::CREATED, json_response(&submission_json(&submission))).into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("/submissions/{}", submission.id)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

/// One manifest of a submission, as validated and digested.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct SubmittedManifest {
    pub kind: String,
    pub name: String,
    pub title: Option<String>,
    pub digest: String,
}

/// A submission as the API shows it (on `GET`, with its manifests and verification jobs).
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubmissionView {
    pub id: String,
    pub title: String,
    pub trust: String,
    pub published: bool,
    pub published_at: Option<String>,
    pub submitter: String,
    pub created_at: String,
    pub documents: Vec<SubmittedManifest>,
    pub href: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub manifests: Option<Vec<Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub verifications: Option<Vec<ki_catalog::queue::Job>>,
}

fn submission_json(s: &Submission) -> SubmissionView {
    SubmissionView {
        id: s.id.clone(),
        title: s.title.clone(),
        trust: s.trust.clone(),
        published: s.published_at.is_some(),
        published_at: s.published_at.clone(),
        submitter: s.submitter.clone(),
        created_at: s.created_at.clone(),
        documents: s
            .documents
            .iter()
            .map(|d| SubmittedManifest {
                kind: d.kind.clone(),
                name: d.name.clone(),
                title: d.title.clone(),
                digest: d.digest.clone(),
            })
            .collect(),
        href: format!("/submissions/{}", s.id),
        manifests: None,
        verifications: None,
    }
}

async fn find_submission(state: &AppState, id: &str) -> Result<Submission, Problem> {
    let found = state.catalog.submission(id).await.map_err(catalog_problem)?;
    found.ok_or_else(|| Problem::not_found(format!("no submission {id:?}")))
}

/// The verification jobs a submission enqueued.
async fn submission_jobs(state: &AppState, id: &str) -> Result<super::verifications::QueueView, Problem> {
    let query = ki_catalog::queue::JobQuery {
        submission_id: Some(id.to_string()),
        limit: Some(super::verifications::MAX_JOBS),
        ..Default::default()
    };
    super::verifications::queue_view(state, &query).await
}

pub async fn page(State(state): State<Shared>, Path(id): Path<String>) -> Answer {
    let submission = find_submission(&state, &id).await?;
    let jobs = submission_jobs(&state, &submission.id).await?;
    Ok(html_response(render(&submission, &jobs)))
}

pub async fn api(State(state): State<Shared>, Path(id): Path<String>) -> Answer {
    let s = find_submission(&state, &id).await?;
    let jobs = submission_jobs(&state, &s.id).await?;
    let mut value = submission_json(&s);
    value.manifests = Some(s.documents.iter().map(|d| d.manifest.clone()).collect());
    value.verifications = Some(jobs.jobs);
    Ok(json_response(&value))
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
