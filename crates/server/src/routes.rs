//! The route table and its handlers. Every route is registered through [`Routes`],
//! which records its description for `/api/v1/openapi.json`.

use std::sync::Arc;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, RawQuery, State};
use axum::handler::Handler;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{MethodRouter, get, post};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::AppState;
use crate::http::{parse_pairs, presented_key};
use crate::model::ReadModel;
use crate::openapi::{Method, Produces, RouteDoc};
use crate::problem::{FieldProblem, Problem};
use crate::store::{Attestation, AttestationKind, Refusal, Scope, Submission};
use crate::{format, pages, submit};

type Shared = Arc<AppState>;
type Answer = Result<Response, Problem>;

/// Request bodies above this are refused (413) before a handler sees them: the largest
/// legitimate body is a submission bundle, whose manifests are capped at 1 MiB each.
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;
/// Longest free-text field of an attestation.
pub const MAX_NOTE_CHARS: usize = 2000;

struct Routes {
    router: Router<Shared>,
    docs: Vec<RouteDoc>,
}

impl Routes {
    #[allow(clippy::too_many_arguments)] // one call per route reads as a table of the API
    fn add<H, T>(
        mut self,
        method: Method,
        path: &'static str,
        produces: Produces,
        summary: &'static str,
        query: &'static [&'static str],
        auth: bool,
        handler: H,
    ) -> Self
    where
        H: Handler<T, Shared>,
        T: 'static,
    {
        let method_router: MethodRouter<Shared> = match method {
            Method::Get => get(handler),
            Method::Post => post(handler),
        };
        self.router = self.router.route(path, method_router);
        self.docs.push(RouteDoc { method, path, summary, produces, query, auth });
        self
    }
}

fn table() -> Routes {
    use Method::{Get, Post};
    use Produces::*;
    Routes { router: Router::new(), docs: Vec::new() }
        .add(
            Get,
            "/",
            Html,
            "Home with search over operations, aliases, implementations and hardware",
            &["q"],
            false,
            home,
        )
        .add(Get, "/api/v1/search", Json, "Search results", &["q"], false, api_search)
        .add(Get, "/runs/{id}", Html, "Run dossier by id, digest or short id", &[], false, run_page)
        .add(Get, "/api/v1/runs/{id}", Json, "Run dossier as JSON", &[], false, api_run)
        .add(
            Post,
            "/runs/{id}/attestations",
            Html,
            "File an attestation from the run page's form",
            &[],
            true,
            form_attestation,
        )
        .add(
            Post,
            "/api/v1/runs/{id}/attestations",
            Json,
            "File an attestation (reproduced, could_not_reproduce, environment_note, regression_observed)",
            &[],
            true,
            api_attestation,
        )
        .add(Get, "/operations", Html, "All operations", &["page"], false, operations_page)
        .add(Get, "/api/v1/operations", Json, "All operations as JSON", &["page"], false, api_operations)
        .add(
            Get,
            "/operations/{slug}",
            Html,
            "Operation: current records, leaderboard, sweep chart, implementations, semantics",
            &[],
            false,
            operation_page,
        )
        .add(Get, "/api/v1/operations/{slug}", Json, "Operation as JSON", &[], false, api_operation)
        .add(
            Get,
            "/resolve",
            Html,
            "Resolve form and answer",
            &["operation", "axes", "dtypes", "hardware", "framework"],
            false,
            resolve_page,
        )
        .add(
            Post,
            "/api/v1/resolve/kernel",
            Json,
            "Resolve one workload to the fastest compatible kernels",
            &[],
            false,
            api_resolve,
        )
        .add(Post, "/api/v1/resolve/kernel/batch", Json, "Resolve 1 to 20 workloads", &[], false, api_resolve_batch)
        .add(
            Get,
            "/compare",
            Html,
            "Compare 2 to 8 runs; format=markdown|csv|json exports",
            &["run", "format"],
            false,
            compare_page,
        )
        .add(Get, "/api/v1/compare", Json, "Comparison as JSON", &["run"], false, api_compare)
        .add(Get, "/records", Html, "Record events, newest first", &["page"], false, records_page)
        .add(Get, "/records.atom", Atom, "Record events as an Atom feed", &[], false, records_atom)
        .add(Get, "/api/v1/records", Json, "Record events as JSON", &["page"], false, api_records)
        .add(Get, "/projects", Html, "Projects", &["page"], false, projects_page)
        .add(Get, "/api/v1/projects", Json, "Projects as JSON", &["page"], false, api_projects)
        .add(Get, "/projects/{slug}", Html, "One project and its implementations", &[], false, project_page)
        .add(Get, "/api/v1/projects/{slug}", Json, "Project as JSON", &[], false, api_project)
        .add(Get, "/implementations/{slug}", Html, "One implementation and its runs", &[], false, implementation_page)
        .add(Get, "/api/v1/implementations/{slug}", Json, "Implementation as JSON", &[], false, api_implementation)
        .add(Get, "/gpus", Html, "Hardware in the index", &[], false, gpus_page)
        .add(Get, "/api/v1/gpus", Json, "Hardware as JSON", &[], false, api_gpus)
        .add(Get, "/serving", Html, "Serving (end-to-end inference) runs", &["page", "workload"], false, serving_page)
        .add(Get, "/api/v1/serving", Json, "Serving runs as JSON", &["page", "workload"], false, api_serving)
        .add(Get, "/serving/runs/{id}", Html, "One serving run", &[], false, serving_run_page)
        .add(Get, "/api/v1/serving/runs/{id}", Json, "Serving run as JSON", &[], false, api_serving_run)
        .add(
            Post,
            "/api/v1/submissions",
            Json,
            "Submit a manifest bundle (stored Reported, unpublished)",
            &[],
            true,
            api_submit,
        )
        .add(Get, "/submissions/{id}", Html, "A submission and its validation", &[], false, submission_page)
        .add(Get, "/api/v1/submissions/{id}", Json, "Submission as JSON", &[], false, api_submission)
        .add(Get, "/docs", Html, "How the index works: ranking, evidence, sources, API", &[], false, docs_page)
        .add(Get, "/api/v1/openapi.json", Json, "This document", &[], false, api_openapi)
        .add(Get, "/static/site.css", Asset, "Stylesheet", &[], false, site_css)
        .add(Get, "/static/site.js", Asset, "Progressive-enhancement script", &[], false, site_js)
        .add(Get, "/healthz", Asset, "Liveness", &[], false, healthz)
}

/// Every route's description, in registration order.
pub fn route_docs() -> Vec<RouteDoc> {
    table().docs
}

pub fn router(state: Shared) -> Router {
    let Routes { router, .. } = table();
    router
        .fallback(crate::http::not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(crate::http::middleware))
        .with_state(state)
}

// ---------- helpers ----------

fn html(markup: maud::Markup) -> Response {
    axum::response::Html(markup.into_string()).into_response()
}

fn json_response<T: serde::Serialize>(value: &T) -> Response {
    match serde_json::to_vec(value) {
        Ok(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => Problem::internal(format!("cannot serialize: {e}")).into_response(),
    }
}

fn query_value(query: &Option<String>, name: &str) -> Option<String> {
    parse_pairs(query.as_deref().unwrap_or("")).into_iter().find(|(k, _)| k == name).map(|(_, v)| v)
}

fn page_param(query: &Option<String>) -> usize {
    query_value(query, "page").and_then(|p| p.parse::<usize>().ok()).unwrap_or(1).clamp(1, 100_000)
}

fn find_run(model: &ReadModel, reference: &str) -> Result<usize, Problem> {
    if reference.len() > 200 {
        return Err(Problem::bad_request("a run reference is a uuid, a sha256 digest or a short id"));
    }
    model.judgement.find_run(reference).map_err(|e| match e {
        ki_ranking::LookupError::Ambiguous { .. } => Problem::bad_request(e.to_string()),
        ki_ranking::LookupError::NotFound { .. } => Problem::not_found(e.to_string()),
    })
}

fn find_operation(model: &ReadModel, slug: &str) -> Result<usize, Problem> {
    model.find_operation(slug).ok_or_else(|| Problem::not_found(format!("no operation {slug:?}")))
}

// ---------- runs ----------

fn dossier(state: &AppState, reference: &str) -> Result<crate::views::RunDossier, Problem> {
    let model = state.model();
    let run = find_run(&model, reference)?;
    let id = crate::model::text(&model.runs.rows[run], "id");
    let _ = state.store.refresh();
    Ok(model.dossier(run, state.store.attestations_for(id), &state.base_url))
}

async fn run_page(State(state): State<Shared>, Path(id): Path<String>) -> Answer {
    Ok(html(pages::run_page(&dossier(&state, &id)?)))
}

async fn api_run(State(state): State<Shared>, Path(id): Path<String>) -> Answer {
    Ok(json_response(&dossier(&state, &id)?))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct AttestationInput {
    kind: String,
    #[serde(default)]
    observed_ns: Option<Value>,
    #[serde(default)]
    evidence_url: Option<String>,
    #[serde(default)]
    note: Option<String>,
    /// Only from the HTML form, which cannot set headers.
    #[serde(default)]
    api_key: Option<String>,
}

fn refusal_problem(refusal: Refusal) -> Problem {
    match refusal {
        Refusal::NoKey => Problem::unauthorized("send an API key as `Authorization: Bearer ki_…`"),
        Refusal::UnknownKey => Problem::unauthorized("the API key is unknown or revoked"),
        Refusal::MissingScope(scope) => {
            Problem::forbidden(format!("the API key lacks the {scope:?} scope").to_lowercase())
        }
        Refusal::QuotaExceeded => Problem::quota_exceeded(format::seconds_to_midnight()),
    }
}

/// Checks an https URL closely enough that it is safe to link: scheme, a host, no
/// whitespace or control characters, bounded length.
pub fn valid_evidence_url(url: &str) -> bool {
    let Some(rest) = url.strip_prefix("https://") else { return false };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    url.len() <= 2000
        && !host.is_empty()
        && !host.contains('@')
        && url.chars().all(|c| !c.is_whitespace() && !c.is_control() && c != '"' && c != '<' && c != '>')
}

fn file_attestation(
    state: &AppState,
    reference: &str,
    key: Option<&str>,
    input: AttestationInput,
) -> Result<Attestation, Problem> {
    let model = state.model();
    let run = find_run(&model, reference)?;
    let key = state.store.authorize(key, Scope::Attest).map_err(refusal_problem)?;
    let mut errors = Vec::new();
    let kind = AttestationKind::parse(input.kind.trim());
    if kind.is_none() {
        errors.push(FieldProblem {
            pointer: "/kind".into(),
            detail: "one of reproduced, could_not_reproduce, environment_note, regression_observed".into(),
        });
    }
    let observed_ns = match input.observed_ns {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) if s.trim().is_empty() => None,
        Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64(),
        Some(Value::String(s)) if s.trim().parse::<u64>().is_ok() => s.trim().parse().ok(),
        Some(_) => {
            errors.push(FieldProblem {
                pointer: "/observedNs".into(),
                detail: "a whole, non-negative number of nanoseconds".into(),
            });
            None
        }
    };
    let evidence_url = input.evidence_url.map(|u| u.trim().to_string()).filter(|u| !u.is_empty());
    if let Some(url) = &evidence_url
        && !valid_evidence_url(url)
    {
        errors.push(FieldProblem {
            pointer: "/evidenceUrl".into(),
            detail: "an https:// URL with a host, at most 2000 characters".into(),
        });
    }
    let note = input.note.map(|n| n.trim().to_string()).filter(|n| !n.is_empty());
    if note.as_ref().is_some_and(|n| n.chars().count() > MAX_NOTE_CHARS) {
        errors.push(FieldProblem { pointer: "/note".into(), detail: format!("at most {MAX_NOTE_CHARS} characters") });
    }
    if !errors.is_empty() {
        return Err(Problem::unprocessable("the attestation is not valid", errors));
    }
    let attestation = Attestation {
        id: uuid::Uuid::now_v7().to_string(),
        run_id: crate::model::text(&model.runs.rows[run], "id").to_string(),
        kind: kind.expect("checked above"),
        observed_ns,
        evidence_url,
        note,
        attester: key.label.clone(),
        key_id: key.id.clone(),
        created_at: format::now_rfc3339(),
    };
    state.store.add_attestation(attestation.clone()).map_err(|e| Problem::internal(e.to_string()))?;
    Ok(attestation)
}

async fn api_attestation(
    State(state): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let input: AttestationInput = serde_json::from_slice(&body)
        .map_err(|e| Problem::bad_request(format!("the body must be a JSON attestation: {e}")))?;
    if input.api_key.is_some() {
        return Err(Problem::bad_request("send the API key in the Authorization header, not the body"));
    }
    let key = presented_key(&headers);
    let attestation = file_attestation(&state, &id, key.as_deref(), input)?;
    let mut response = (StatusCode::CREATED, json_response(&attestation)).into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("/runs/{}#replications", attestation.run_id)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

async fn form_attestation(
    State(state): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let text = std::str::from_utf8(&body).map_err(|_| Problem::bad_request("the form is not UTF-8"))?;
    let mut input =
        AttestationInput { kind: String::new(), observed_ns: None, evidence_url: None, note: None, api_key: None };
    for (k, v) in parse_pairs(text) {
        match k.as_str() {
            "kind" => input.kind = v,
            "observedNs" => input.observed_ns = Some(Value::String(v)),
            "evidenceUrl" => input.evidence_url = Some(v),
            "note" => input.note = Some(v),
            "apiKey" => input.api_key = Some(v),
            _ => return Err(Problem::bad_request(format!("unknown form field {k:?}"))),
        }
    }
    let key = input.api_key.take().or_else(|| presented_key(&headers));
    let attestation = file_attestation(&state, &id, key.as_deref(), input)?;
    Ok(Redirect::to(&format!("/runs/{}#replications", attestation.run_id)).into_response())
}

// ---------- operations ----------

async fn operation_page(State(state): State<Shared>, Path(slug): Path<String>) -> Answer {
    let model = state.model();
    let op = find_operation(&model, &slug)?;
    Ok(html(pages::operation_page(&model.operation_view(op))))
}

async fn api_operation(State(state): State<Shared>, Path(slug): Path<String>) -> Answer {
    let model = state.model();
    let op = find_operation(&model, &slug)?;
    Ok(json_response(&model.operation_view(op)))
}

async fn operations_page(State(state): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    Ok(html(pages::operations_page(&state.model().operation_list(page_param(&q)))))
}

async fn api_operations(State(state): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    Ok(json_response(&state.model().operation_list(page_param(&q))))
}

// ---------- home and search ----------

async fn home(State(state): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    let model = state.model();
    let query = query_value(&q, "q").unwrap_or_default();
    let query: String = query.chars().take(200).collect();
    Ok(html(pages::home_page(&model, &query)))
}

async fn api_search(State(state): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    let model = state.model();
    let query: String = query_value(&q, "q").unwrap_or_default().chars().take(200).collect();
    let results = model.search(&query, crate::catalog_views::PAGE_LIMIT);
    Ok(json_response(&json!({ "query": query, "results": results })))
}

// ---------- resolve ----------

/// Parses "batch_size=16, num_pages=1070" (commas, semicolons or whitespace between).
pub fn parse_axes(text: &str) -> Result<std::collections::BTreeMap<String, Value>, String> {
    let mut axes = std::collections::BTreeMap::new();
    for part in text.split([',', ';', '\n', ' ', '\t', '\r']).map(str::trim).filter(|p| !p.is_empty()) {
        let (name, value) = part.split_once('=').ok_or_else(|| format!("{part:?} is not name=value"))?;
        let (name, value) = (name.trim(), value.trim());
        if name.is_empty() || value.is_empty() {
            return Err(format!("{part:?} is not name=value"));
        }
        let parsed = if let Ok(i) = value.parse::<i64>() {
            json!(i)
        } else if let Ok(f) = value.parse::<f64>() {
            if f.is_finite() { json!(f) } else { json!(value) }
        } else {
            json!(value)
        };
        axes.insert(name.to_string(), parsed);
        if axes.len() > 32 {
            return Err("at most 32 axes".into());
        }
    }
    Ok(axes)
}

async fn resolve_page(State(state): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    let model = state.model();
    let pairs = parse_pairs(q.as_deref().unwrap_or(""));
    let get =
        |name: &str| pairs.iter().find(|(k, _)| k == name).map(|(_, v)| v.trim().to_string()).filter(|v| !v.is_empty());
    let form = pages::ResolveForm {
        operation: get("operation").unwrap_or_default(),
        axes: get("axes").unwrap_or_default(),
        dtypes: get("dtypes").unwrap_or_default(),
        hardware: get("hardware").unwrap_or_default(),
        framework: get("framework").unwrap_or_default(),
    };
    if form.operation.is_empty() {
        return Ok(html(pages::resolve_page(&form, None, None)));
    }
    let axes = match parse_axes(&form.axes) {
        Ok(axes) => axes,
        Err(message) => return Ok(html(pages::resolve_page(&form, None, Some(&message)))),
    };
    let request = ki_ranking::ResolveRequest {
        operation: form.operation.clone(),
        axes,
        dtypes: form
            .dtypes
            .split([',', ' '])
            .map(str::trim)
            .filter(|d| !d.is_empty())
            .map(str::to_string)
            .take(16)
            .collect(),
        hardware: Some(form.hardware.clone()).filter(|h| !h.is_empty()),
        framework: Some(form.framework.clone()).filter(|f| !f.is_empty()),
    };
    let answer = model.judgement.resolve(&request);
    Ok(html(pages::resolve_page(&form, Some(&answer), None)))
}

fn parse_json<T: serde::de::DeserializeOwned>(body: &[u8], what: &str) -> Result<T, Problem> {
    serde_json::from_slice(body).map_err(|e| Problem::bad_request(format!("the body must be {what}: {e}")))
}

async fn api_resolve(State(state): State<Shared>, body: Bytes) -> Answer {
    let request: ki_ranking::ResolveRequest = parse_json(&body, "a resolve request")?;
    Ok(json_response(&state.model().judgement.resolve(&request)))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchInput {
    requests: Vec<ki_ranking::ResolveRequest>,
}

async fn api_resolve_batch(State(state): State<Shared>, body: Bytes) -> Answer {
    let input: BatchInput = parse_json(&body, "{\"requests\": [...]} with 1 to 20 resolve requests")?;
    let answers =
        state.model().judgement.resolve_batch(&input.requests).map_err(|e| Problem::bad_request(e.to_string()))?;
    Ok(json_response(&json!({ "responses": answers })))
}

// ---------- compare ----------

fn comparison(model: &ReadModel, q: &Option<String>) -> Result<(Vec<String>, ki_ranking::Comparison), Problem> {
    let mut refs: Vec<String> = Vec::new();
    for (k, v) in parse_pairs(q.as_deref().unwrap_or("")) {
        if k == "run" {
            refs.extend(v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string));
        }
        if refs.len() > 8 {
            break;
        }
    }
    let borrowed: Vec<&str> = refs.iter().map(String::as_str).collect();
    match model.judgement.compare(&borrowed) {
        Ok(c) => Ok((refs, c)),
        Err(ki_ranking::CompareError::Lookup(ki_ranking::LookupError::NotFound { given, .. })) => {
            Err(Problem::not_found(format!("no run matches {given:?}")))
        }
        Err(e) => Err(Problem::bad_request(e.to_string())),
    }
}

async fn compare_page(State(state): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    let model = state.model();
    let (refs, c) = comparison(&model, &q)?;
    match query_value(&q, "format").as_deref() {
        None | Some("") | Some("html") => Ok(html(pages::compare_page(&c, &refs))),
        Some("json") => Ok(json_response(&c)),
        Some("markdown") | Some("md") => {
            Ok(([(header::CONTENT_TYPE, "text/markdown; charset=utf-8")], pages::compare_markdown(&c)).into_response())
        }
        Some("csv") => Ok((
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
                (header::CONTENT_DISPOSITION, "attachment; filename=\"compare.csv\""),
            ],
            pages::compare_csv(&c),
        )
            .into_response()),
        Some(other) => Err(Problem::bad_request(format!("format {other:?}: use markdown, csv or json"))),
    }
}

async fn api_compare(State(state): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    Ok(json_response(&comparison(&state.model(), &q)?.1))
}

// ---------- records ----------

pub const RECORDS_PER_PAGE: usize = 100;

async fn records_page(State(state): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    Ok(html(pages::records_page(&state.model().record_list(page_param(&q), RECORDS_PER_PAGE))))
}

async fn api_records(State(state): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    Ok(json_response(&state.model().record_list(page_param(&q), RECORDS_PER_PAGE)))
}

async fn records_atom(State(state): State<Shared>) -> Answer {
    let list = state.model().record_list(1, 50);
    Ok(([(header::CONTENT_TYPE, "application/atom+xml; charset=utf-8")], pages::records_atom(&list, &state.base_url))
        .into_response())
}

// ---------- projects, implementations, gpus ----------

async fn projects_page(State(state): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    Ok(html(pages::projects_page(&state.model().project_list(page_param(&q)))))
}

async fn api_projects(State(state): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    Ok(json_response(&state.model().project_list(page_param(&q))))
}

fn find_project(model: &ReadModel, slug: &str) -> Result<usize, Problem> {
    model.project_by_slug.get(slug).copied().ok_or_else(|| Problem::not_found(format!("no project {slug:?}")))
}

async fn project_page(State(state): State<Shared>, Path(slug): Path<String>) -> Answer {
    let model = state.model();
    Ok(html(pages::project_page(&model.project_view(find_project(&model, &slug)?))))
}

async fn api_project(State(state): State<Shared>, Path(slug): Path<String>) -> Answer {
    let model = state.model();
    Ok(json_response(&model.project_view(find_project(&model, &slug)?)))
}

fn find_implementation(model: &ReadModel, slug: &str) -> Result<usize, Problem> {
    model
        .implementation_by_slug
        .get(slug)
        .copied()
        .or_else(|| model.implementations.index_of(slug))
        .ok_or_else(|| Problem::not_found(format!("no implementation {slug:?}")))
}

async fn implementation_page(State(state): State<Shared>, Path(slug): Path<String>) -> Answer {
    let model = state.model();
    Ok(html(pages::implementation_page(&model.implementation_view(find_implementation(&model, &slug)?))))
}

async fn api_implementation(State(state): State<Shared>, Path(slug): Path<String>) -> Answer {
    let model = state.model();
    Ok(json_response(&model.implementation_view(find_implementation(&model, &slug)?)))
}

async fn gpus_page(State(state): State<Shared>) -> Answer {
    Ok(html(pages::gpus_page(&state.model().gpu_list())))
}

async fn api_gpus(State(state): State<Shared>) -> Answer {
    Ok(json_response(&json!({ "gpus": state.model().gpu_list() })))
}

// ---------- serving ----------

async fn serving_page(State(state): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    let workload = query_value(&q, "workload");
    Ok(html(pages::serving_page(&state.model().serving_list(page_param(&q), workload.as_deref()))))
}

async fn api_serving(State(state): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    let workload = query_value(&q, "workload");
    Ok(json_response(&state.model().serving_list(page_param(&q), workload.as_deref())))
}

fn find_serving_run(model: &ReadModel, id: &str) -> Result<usize, Problem> {
    model.find_serving_run(id).ok_or_else(|| Problem::not_found(format!("no serving run {id:?}")))
}

async fn serving_run_page(State(state): State<Shared>, Path(id): Path<String>) -> Answer {
    let model = state.model();
    Ok(html(pages::serving_run_page(&model.serving_run_view(find_serving_run(&model, &id)?))))
}

async fn api_serving_run(State(state): State<Shared>, Path(id): Path<String>) -> Answer {
    let model = state.model();
    Ok(json_response(&model.serving_run_view(find_serving_run(&model, &id)?)))
}

// ---------- submissions ----------

async fn api_submit(State(state): State<Shared>, headers: HeaderMap, body: Bytes) -> Answer {
    let key = state.store.authorize(presented_key(&headers).as_deref(), Scope::Submit).map_err(refusal_problem)?;
    if body.len() > ki_model::parse::MAX_INPUT_BYTES {
        return Err(Problem::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too-large",
            "Bundle too large",
            "a bundle is at most 1 MiB",
        ));
    }
    let bundle =
        submit::validate_bundle(&body).map_err(|errors| Problem::unprocessable("the bundle is not valid", errors))?;
    let submission = Submission {
        id: uuid::Uuid::now_v7().to_string(),
        trust: "reported".into(),
        title: bundle.title,
        documents: bundle.documents,
        submitter: key.label.clone(),
        key_id: key.id.clone(),
        created_at: format::now_rfc3339(),
        published_at: None,
    };
    state.store.add_submission(submission.clone()).map_err(|e| Problem::internal(e.to_string()))?;
    let mut response = (StatusCode::CREATED, json_response(&submission_json(&submission))).into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("/submissions/{}", submission.id)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

fn submission_json(s: &Submission) -> Value {
    json!({
        "id": s.id,
        "title": s.title,
        "trust": s.trust,
        "published": s.published_at.is_some(),
        "publishedAt": s.published_at,
        "submitter": s.submitter,
        "createdAt": s.created_at,
        "documents": s.documents.iter().map(|d| json!({"kind": d.kind, "name": d.name, "title": d.title, "digest": d.digest})).collect::<Vec<_>>(),
        "href": format!("/submissions/{}", s.id),
    })
}

fn find_submission(state: &AppState, id: &str) -> Result<Submission, Problem> {
    let _ = state.store.refresh();
    state.store.submission(id).ok_or_else(|| Problem::not_found(format!("no submission {id:?}")))
}

async fn submission_page(State(state): State<Shared>, Path(id): Path<String>) -> Answer {
    Ok(html(pages::submission_page(&find_submission(&state, &id)?)))
}

async fn api_submission(State(state): State<Shared>, Path(id): Path<String>) -> Answer {
    let s = find_submission(&state, &id)?;
    let mut value = submission_json(&s);
    value["manifests"] = json!(s.documents.iter().map(|d| &d.manifest).collect::<Vec<_>>());
    Ok(json_response(&value))
}

// ---------- docs and assets ----------

async fn docs_page(State(state): State<Shared>) -> Answer {
    Ok(html(pages::docs_page(&state.model(), &route_docs())))
}

async fn api_openapi() -> Answer {
    Ok(json_response(&crate::openapi::document(&route_docs())))
}

async fn site_css() -> Response {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8"), (header::CACHE_CONTROL, "public, max-age=3600")],
        pages::SITE_CSS,
    )
        .into_response()
}

async fn site_js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8"), (header::CACHE_CONTROL, "public, max-age=3600")],
        pages::SITE_JS,
    )
        .into_response()
}

async fn healthz() -> &'static str {
    "ok"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axes_text_parses_numbers_and_refuses_junk() {
        let axes = parse_axes("batch_size=16, num_pages=1070; ratio=0.5 name=x").unwrap();
        assert_eq!(axes["batch_size"], json!(16));
        assert_eq!(axes["ratio"], json!(0.5));
        assert_eq!(axes["name"], json!("x"));
        assert!(parse_axes("batch_size").is_err());
        assert!(parse_axes("=3").is_err());
    }

    #[test]
    fn evidence_urls_must_be_plain_https() {
        assert!(valid_evidence_url("https://example.org/run/1"));
        assert!(!valid_evidence_url("http://example.org"));
        assert!(!valid_evidence_url("javascript:alert(1)"));
        assert!(!valid_evidence_url("https://"));
        assert!(!valid_evidence_url("https://a b"));
        assert!(!valid_evidence_url("https://user@host/"));
    }
}
