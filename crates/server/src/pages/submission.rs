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

use super::{Answer, Shared, catalog_problem, html_response, json_response, layout};
use crate::AppState;
use crate::bundle::{problem, validate_bundle};
use crate::http::presented_key;
use crate::model::short_id;
use crate::problem::Problem;
use ki_catalog::{Scope, Submission};

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
