//! The run page (`/runs/{id}`, `/api/v1/runs/{id}`): a run's dossier ([`crate::dossier`])
//! rendered, or served as JSON, and the attestation form and its endpoints.

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect};
use axum_extra::extract::{Form, Query};
use maud::{Markup, html};
use serde::Deserialize;
use serde_json::Value;

use super::{Answer, PageQuery, Shared, catalog_problem, field_list, html_response, json_response, layout, section};
use crate::AppState;
use crate::dossier::{RunDossier, find_run, held_contents, words};
use crate::http::presented_key;
use crate::problem::{FieldProblem, Problem};
use ki_catalog::{Attestation, AttestationKind, NewAttestation, Scope};

/// Longest free-text field of an attestation.
pub const MAX_NOTE_CHARS: usize = 2000;

pub fn attestation_form(run_id: &str) -> Markup {
    html! {
        details.form {
            summary { "Add a reproduction or note" }
            form method="post" action={ "/runs/" (run_id) "/attestations" } {
                p.muted { "Needs an API key with the attest scope (" code { "ki admin key create --scope attest" } ")." }
                div.row { label for="att-key" { "API key" } input #att-key name="apiKey" type="password" required autocomplete="off"; }
                div.row {
                    label for="att-kind" { "Kind" }
                    select #att-kind name="kind" {
                        @for k in AttestationKind::ALL { option value=(k.as_str()) { (k.label()) } }
                    }
                }
                div.row { label for="att-ns" { "Observed latency (ns, optional)" } input #att-ns name="observedNs" type="number" min="0" step="1"; }
                div.row { label for="att-url" { "Evidence URL (https, optional)" } input #att-url name="evidenceUrl" type="url" pattern="https://.*" maxlength="2000"; }
                div.row { label for="att-note" { "Note (optional)" } textarea #att-note name="note" maxlength="2000" rows="3" {} }
                button type="submit" { "File attestation" }
            }
        }
    }
}

fn attestation_list(items: &[Attestation]) -> Markup {
    html! {
        @if items.is_empty() {
            p { "No attestations yet." }
        } @else {
            ul.attestations {
                @for a in items {
                    li {
                        strong { (a.kind.label()) }
                        " by " (a.attester) " on " (ki_model::utc::date_of(&a.created_at))
                        @if let Some(ns) = a.observed_ns { " · observed " (ki_model::units::duration_ns(ns as f64)) }
                        @if let Some(url) = &a.evidence_url { " · " a href=(url) rel="nofollow noopener" { "evidence" } }
                        @if let Some(note) = &a.note { p { (note) } }
                    }
                }
            }
        }
    }
}

pub fn render(d: &RunDossier) -> Markup {
    let p = &d.primary;
    let main = html! {
        nav.crumbs aria-label="Breadcrumb" {
            a href=(d.project.href) { (d.project.label) } " / " a href=(d.implementation.href) { (d.implementation.label) }
        }
        h1 { "Run " (d.short_id) }
        p.subtitle { (d.title) }
        p.badges {
            span.badge.status data-status=(d.status) { "status: " (words(&d.status)) }
            " "
            span.badge.evidence.(crate::pages::evidence_class(&d.evidence_level)) { "evidence: " (d.evidence_level) }
            " "
            span.badge.deployable[d.deployability.deployable].not-deployable[!d.deployability.deployable] { @if d.deployability.deployable { "deployable" } @else { "not deployable" } }
        }
        @for b in &d.banners {
            div.banner role="note" data-kind=(b.kind) {
                strong { (b.title) " " } (b.message)
                @if let Some(l) = &b.link { " " a href=(l.href) { (l.label) } }
            }
        }
        (section("primary", "Primary measurement", html! {
            p.big { span.value { (p.display) } " " span.stat { (p.statistic) } }
            p {
                @if let (Some(rank), true) = (p.rank, p.group_size > 0) {
                    "Rank " (rank) " of " (p.group_size) " in its comparison group"
                } @else {
                    "Not ranked: " (p.ineligible_explanations.join("; "))
                }
                " · " (p.profile) " · observed " (p.observed_at)
            }
            @if let Some(n) = d.samples.count.or(p.sample_count.and_then(|n| u64::try_from(n).ok())) {
                p { (ki_model::units::count(n)) " samples" }
            }
            @if let Some(i) = &p.interval_display { p { (p.interval_label) " " (i) } }
            @if let (Some(href), Some(leader)) = (&p.compare_href, &p.leader) {
                p { a.cta href=(href) { "Compare with #1 →" } " " span.muted { "(" (leader.implementation) ", " (leader.display) ")" } }
            } @else if p.rank == Some(1) {
                p { "This run holds #1 in its comparison group." }
            }
            @if let Some(x) = p.reference_speedup {
                p.reference {
                    (ki_model::units::factor(x)) "× reference"
                    @if let Some(r) = &p.reference { " · reference " strong { (r.display) } " (" (r.explanation) ")" }
                }
            }
            @if let Some(x) = p.baseline_speedup { p { (ki_model::units::factor(x)) "× baseline" } }
            @if !d.deployability.deployable {
                div.muted { "Not deployable:" ul { @for e in &d.deployability.explanations { li { (e) } } } }
            }
        }))
        (section("identity", "Identity", field_list(&d.identity)))
        (section("correctness", "Correctness", field_list(&d.correctness)))
        (section("workload", "Workload", html! {
            (field_list(&d.workload.axes))
            @if !d.workload.constants.is_empty() {
                details { summary { "Constant axes" } (field_list(&d.workload.constants)) }
            }
            table {
                caption { "Tensors" }
                thead { tr { th scope="col" { "name" } th scope="col" { "dtype" } th scope="col" { "shape" } } }
                tbody { @for t in &d.workload.tensors { tr { td { (t.name) } td { (t.dtype) } td { (t.shape) } } } }
            }
            @if let Some(c) = &d.workload.definition_comparator { p { "definition comparator " code { (c) } } }
        }))
        (section("measurements", "Measurements", html! {
            @if d.measurements.is_empty() { p { "No measurements recorded." } }
            ul { @for m in &d.measurements {
                li.measurement { (m.label) " · " (words(&m.statistic)) " " strong { (m.display) }
                    @if let Some(n) = m.sample_count.and_then(|n| u64::try_from(n).ok()) { " (" (ki_model::units::count(n)) " samples)" } }
            } }
            @if !d.statistics.is_empty() {
                table.statistics {
                    caption { "Every statistic the manifest records" }
                    thead { tr { th scope="col" { "statistic" } th scope="col" { "value" } th scope="col" { "from" } } }
                    tbody { @for st in &d.statistics {
                        tr { td { (st.label) } td.num { (st.display) } td { (st.origin) } }
                    } }
                }
            }
        }))
        (section("samples", "Samples", html! {
            @if let Some(n) = d.samples.count { p { (ki_model::units::count(n)) " samples" } }
            p { (d.samples.explanation) }
            @if let Some(svg) = &d.samples.histogram_svg {
                figure.distribution.histogram {
                    (maud::PreEscaped(svg))
                    figcaption { "The raw samples: how many per-call times fall in each bin (hover a bar), with the median (solid) and the 5th and 95th percentiles (dashed) of these values." }
                }
            }
            @if let Some(svg) = &d.samples.summary_svg {
                figure.distribution {
                    (maud::PreEscaped(svg))
                    figcaption { "The spread the manifest records: minimum to maximum (line), 5th to 95th percentile (box), median (bar), mean (dot) and the interval (band). A summary, not the samples." }
                }
            }
        }))
        (section("protocol", "Protocol", field_list(&d.protocol)))
        (section("environment", "Environment", field_list(&d.environment)))
        (section("artifacts", "Artifacts", html! {
            @if let Some(href) = &d.source_href { p { a href=(href) { "Read the source of " (d.implementation.label) " →" } } }
            @if d.artifacts.is_empty() { p { "No artifacts published with this run." } }
            @else { ul.artifacts { @for a in &d.artifacts {
                li.artifact {
                    strong { (a.name) }
                    @if let Some(u) = &a.uri {
                        " · "
                        @if let Some(href) = &a.href { a href=(href) rel="nofollow noopener" { (u) } } @else { code { (u) } }
                    }
                    " · digest " code { (a.digest) }
                    @if !a.media_type.is_empty() { " · " (a.media_type) }
                    @if let Some(s) = &a.size_display { " · " (s) }
                    @if let Some(st) = &a.storage { " · stored " (words(st)) }
                    @if let Some(l) = &a.license { " · " (l) }
                    @if !a.described_in_catalog { " · " span.muted { "named by the run only; the catalog has no row for it" } }
                    @if a.href.is_none() { " · " span.muted { "no link: the index holds its name and digest, not its content" } }
                }
            } } }
        }))
        (section("replications", "Replications and notes", html! {
            @if d.attestation_count > 0 {
                p { (d.attestation_count) " attestation" @if d.attestation_count != 1 { "s" } ", newest first"
                    @if d.attestation_pages > 1 { " (" (d.attestations.len()) " on this page)" } "." }
            }
            (attestation_list(&d.attestations))
            (super::pager(&format!("/runs/{}", d.id), d.attestation_page as usize, d.attestation_pages as usize))
            p.muted { "Community attestations. They never change the evidence level; only a KernelIndex-controlled rerun does." }
            (attestation_form(&d.id))
        }))
        (section("manifest", "Canonical manifest", html! {
            details {
                summary { "Show manifest" }
                pre { code { (serde_json::to_string_pretty(&d.manifest).unwrap_or_default()) } }
            }
        }))
        (section("cite", "Cite this record", html! {
            p { "Permalink " a href=(d.citation.permalink) { (d.citation.permalink) } }
            p { "Digest " code { (d.citation.digest) } " · accessed " (d.citation.accessed) }
            p { (d.citation.text) }
            details { summary { "BibTeX" } pre { code { (d.citation.bibtex) } } }
        }))
        (section("report", "Report an issue", html! {
            p { a href=(d.report_issue_href) rel="noopener" { "Report an issue with this run" } }
        }))
        footer.record {
            p {
                @if let Some(p) = &d.published_at { "Published " (p) } @else { "Unpublished" }
                @if let Some(s) = &d.source { " · " (s.label) }
                @if let Some(l) = &d.licence { " · " (l) }
            }
            p {
                @if let Some(op) = &d.operation { a href=(op.href) { "All results for " (op.label) " →" } " · " }
                a href=(d.json_href) type="application/json" { "JSON" }
            }
        }
    };
    layout(&format!("Run {}", d.short_id), main)
}

// ---------- runs ----------

async fn dossier(state: &AppState, reference: &str, page: usize) -> Result<RunDossier, Problem> {
    let model = state.model();
    let run = find_run(&model, reference)?;
    let id = &*model.run(run).id.text();
    // Read from the catalog on every request: an attestation filed through any replica shows at once.
    let attestations = state.catalog.attestation_page(id, page as u64).await.map_err(catalog_problem)?;
    let detail = model.run_detail(&state.catalog, run).await.map_err(catalog_problem)?;
    let mut dossier = model.dossier(run, detail, attestations, &state.base_url);
    held_contents(&state.catalog, &model, run, &mut dossier).await.map_err(catalog_problem)?;
    Ok(dossier)
}

pub async fn page(State(state): State<Shared>, Path(id): Path<String>, Query(q): Query<PageQuery>) -> Answer {
    Ok(html_response(render(&dossier(&state, &id, q.number()).await?)))
}

pub async fn api(State(state): State<Shared>, Path(id): Path<String>, Query(q): Query<PageQuery>) -> Answer {
    Ok(json_response(&dossier(&state, &id, q.number()).await?))
}

/// Largest observed latency an attestation may carry: 2^53 - 1, the largest integer every
/// JSON reader holds exactly (the OpenAPI schema's maximum).
pub const MAX_OBSERVED_NS: u64 = ki_model::parse::MAX_EXACT_WHOLE_NUMBER;

/// An attestation as the API takes it (the key goes in the `Authorization` header).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttestationInput {
    #[schemars(with = "ki_catalog::AttestationKind")]
    kind: String,
    /// The latency you observed, in whole nanoseconds.
    #[serde(default)]
    #[schemars(with = "Option<u64>", range(max = 9_007_199_254_740_991_i64))]
    observed_ns: Option<Value>,
    /// An https:// link to your evidence.
    #[serde(default)]
    #[schemars(regex(pattern = ki_catalog::urls::EVIDENCE_URL_PATTERN), length(max = 2000))]
    evidence_url: Option<String>,
    #[serde(default)]
    #[schemars(length(max = 2000))]
    note: Option<String>,
    /// Only from the HTML form, which cannot set headers.
    #[serde(default)]
    #[schemars(skip)]
    api_key: Option<String>,
}

/// Files an attestation whose key the caller has already authorized (before reading the body:
/// a request without a valid key learns nothing about the run or its input).
async fn file_attestation(
    state: &AppState,
    reference: &str,
    key: Option<&str>,
    input: AttestationInput,
    from_form: bool,
) -> Result<Attestation, Problem> {
    let run_id = {
        let model = state.model();
        let run = find_run(&model, reference)?;
        model.run(run).id.clone()
    };
    let mut errors = Vec::new();
    let kind = AttestationKind::parse(input.kind.trim());
    if kind.is_none() {
        errors.push(FieldProblem {
            pointer: "/kind".into(),
            detail: "one of reproduced, could_not_reproduce, environment_note, regression_observed".into(),
        });
    }
    // As the OpenAPI schema says: a JSON integer from 0 to 2^53 - 1 (the form's field, text
    // by nature, is read as its digits).
    let observed_ns = match input.observed_ns {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if from_form && s.trim().is_empty() => Ok(None),
        Some(Value::Number(n)) => ki_model::parse::whole_number(&n).ok_or(()).map(Some),
        Some(Value::String(s)) if from_form => s.trim().parse::<u64>().map(Some).map_err(|_| ()),
        Some(_) => Err(()),
    };
    let observed_ns = match observed_ns {
        Ok(ns) if ns.is_none_or(|ns| ns <= MAX_OBSERVED_NS) => ns,
        _ => {
            errors.push(FieldProblem {
                pointer: "/observedNs".into(),
                detail: format!(
                    "a whole, non-negative number of nanoseconds, at most {MAX_OBSERVED_NS} (a JSON integer)"
                ),
            });
            None
        }
    };
    let evidence_url = input.evidence_url.map(|u| u.trim().to_string()).filter(|u| !u.is_empty());
    // The catalog checks it again where it is stored; asked here, every problem of the
    // request is named at once.
    if let Some(Err(reason)) = evidence_url.as_deref().map(ki_catalog::urls::evidence_url) {
        errors.push(FieldProblem { pointer: "/evidenceUrl".into(), detail: reason });
    }
    let note = input.note.map(|n| n.trim().to_string()).filter(|n| !n.is_empty());
    if note.as_ref().is_some_and(|n| n.chars().count() > MAX_NOTE_CHARS) {
        errors.push(FieldProblem { pointer: "/note".into(), detail: format!("at most {MAX_NOTE_CHARS} characters") });
    }
    if !errors.is_empty() {
        return Err(Problem::unprocessable("the attestation is not valid", errors));
    }
    let new = NewAttestation {
        run_id: run_id.to_string(),
        kind: kind.expect("checked above"),
        observed_ns,
        evidence_url,
        note,
    };
    // The key, its scope and its quota are checked again in the writing transaction.
    state.catalog.add_attestation(key, new).await.map_err(catalog_problem)
}

pub async fn api_attestation(
    State(state): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> Answer {
    let key = presented_key(&headers);
    state.catalog.authorize(key.as_deref(), Scope::Attest).await.map_err(catalog_problem)?;
    let content_type = headers.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("");
    let essence = content_type.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
    if essence != "application/json" {
        return Err(Problem::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported-media-type",
            "Unsupported Media Type",
            format!("the body must be application/json, not {:?}", ki_model::escape::for_terminal_line(content_type)),
        ));
    }
    // The one strict JSON reader: a duplicate key is refused, not resolved to its last value.
    let document = ki_model::parse::parse_json(&body)
        .map_err(|problem| Problem::bad_request(format!("the body must be a JSON attestation: {problem}")))?;
    let input: AttestationInput = serde_json::from_value(document)
        .map_err(|e| Problem::bad_request(format!("the body must be a JSON attestation: {e}")))?;
    if input.api_key.is_some() {
        return Err(Problem::bad_request("send the API key in the Authorization header, not the body"));
    }
    let attestation = file_attestation(&state, &id, key.as_deref(), input, false).await?;
    let mut response = (StatusCode::CREATED, json_response(&attestation)).into_response();
    if let Ok(location) = HeaderValue::from_str(&format!("/runs/{}#replications", attestation.run_id)) {
        response.headers_mut().insert(header::LOCATION, location);
    }
    Ok(response)
}

/// The run page's form (which cannot set headers, so it carries the key as a field).
#[derive(Debug, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AttestationForm {
    #[schemars(with = "ki_catalog::AttestationKind")]
    pub kind: String,
    // A form has no null: a field is absent or text.
    #[serde(default)]
    #[schemars(with = "String", transform = form_field, regex(pattern = r"^[0-9]{0,15}$"))]
    pub observed_ns: Option<String>,
    #[serde(default)]
    #[schemars(with = "String", transform = form_field, regex(pattern = ki_catalog::urls::EVIDENCE_URL_OR_EMPTY_PATTERN), length(max = 2000))]
    pub evidence_url: Option<String>,
    #[serde(default)]
    #[schemars(with = "String", transform = form_field, length(max = 2000))]
    pub note: Option<String>,
    #[serde(default)]
    #[schemars(with = "String", transform = form_field)]
    pub api_key: Option<String>,
}

/// A form field's schema: absent or text, never null (so no `default: null` either).
fn form_field(schema: &mut schemars::Schema) {
    schema.remove("default");
}

pub async fn form_attestation(
    State(state): State<Shared>,
    Path(id): Path<String>,
    headers: HeaderMap,
    Form(form): Form<AttestationForm>,
) -> Answer {
    let key = form.api_key.clone().filter(|k| !k.trim().is_empty()).or_else(|| presented_key(&headers));
    state.catalog.authorize(key.as_deref(), Scope::Attest).await.map_err(catalog_problem)?;
    let input = AttestationInput {
        kind: form.kind,
        observed_ns: form.observed_ns.map(Value::String),
        evidence_url: form.evidence_url,
        note: form.note,
        api_key: None,
    };
    let attestation = file_attestation(&state, &id, key.as_deref(), input, true).await?;
    Ok(Redirect::to(&format!("/runs/{}#replications", attestation.run_id)).into_response())
}
