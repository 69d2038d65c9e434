//! An implementation (`/implementations/{slug}`) and its runs.

use axum::extract::{Path, State};
use maud::{Markup, html};
use serde::Serialize;
use serde_json::Value;

use super::{Answer, Shared, html_response, json_response, layout, runs_table, section};
use crate::model::{Link, PAGE_LIMIT, ReadModel, RunSummary};
use crate::problem::Problem;

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImplementationItem {
    pub slug: String,
    pub title: String,
    pub project: String,
    pub runs: usize,
    pub href: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImplementationView {
    pub slug: String,
    pub title: String,
    pub digest: String,
    pub project: Link,
    pub operation: Option<Link>,
    pub revision: Option<String>,
    pub language: Option<String>,
    pub licence: Option<String>,
    pub source_available: bool,
    /// Where the source is (a repository, a file by digest), or that the index has neither.
    pub source_code: crate::model::Field,
    pub installable: bool,
    pub install_command: Option<String>,
    pub runs: Vec<RunSummary>,
    pub runs_total: usize,
    pub manifest: Value,
    /// The source as the index holds it, file by file (also at
    /// `/api/v1/implementations/{slug}/source`).
    pub source: Option<super::source::SourceView>,
}

impl ReadModel {
    pub fn implementation_item(&self, i: usize) -> ImplementationItem {
        let imp = &self.judgement.implementations[i];
        ImplementationItem {
            slug: imp.slug.clone(),
            title: imp.title.clone(),
            project: self.judgement.projects[self.judgement.implementation_project(i)].name.clone(),
            runs: self.runs_by_implementation.get(&i).map_or(0, Vec::len),
            href: format!("/implementations/{}", imp.slug),
        }
    }
}

impl ReadModel {
    pub fn implementation_view(&self, i: usize) -> ImplementationView {
        let row = &self.judgement.implementations[i];
        let project = &self.judgement.projects[self.judgement.implementation_project(i)];
        let op = self.judgement.operation_index(&row.operation_id);
        let manifest = self.judgement.implementation_manifest(i);
        let present = |text: &Option<String>| text.clone().filter(|t| !t.is_empty());
        let mut runs: Vec<usize> =
            self.runs_by_implementation.get(&i).into_iter().flatten().map(|&r| r as usize).collect();
        runs.sort_by_cached_key(|&r| std::cmp::Reverse(self.run(r).observed_at.text().into_owned()));
        let runs_total = runs.len();
        runs.truncate(PAGE_LIMIT);
        ImplementationView {
            slug: row.slug.clone(),
            title: row.title.clone(),
            digest: row.implementation_digest.clone(),
            project: Link { label: project.name.clone(), href: format!("/projects/{}", project.slug) },
            operation: op.map(|o| Link {
                label: self.operation_title(o).into(),
                href: format!("/operations/{}", self.judgement.operations[o].slug),
            }),
            revision: Some(row.source_revision.clone()).filter(|r| !r.is_empty()),
            language: Some(row.language.clone()).filter(|l| !l.is_empty()),
            licence: present(&row.license_expression),
            source_available: row.source_available,
            source_code: self.source_code(row.source_available, &manifest),
            installable: row.installable,
            install_command: present(&row.install_command),
            runs: self.summaries(runs),
            runs_total,
            manifest,
            source: None,
        }
    }
}

pub fn render(v: &ImplementationView) -> Markup {
    layout(
        &v.slug,
        html! {
            nav.crumbs aria-label="Breadcrumb" { a href=(v.project.href) { (v.project.label) } " / " (v.slug) }
            h1 { (v.slug) }
            p.subtitle { (v.title) }
            dl.fields {
                div { dt { "project" } dd { a href=(v.project.href) { (v.project.label) } } }
                @if let Some(op) = &v.operation { div { dt { "operation" } dd { a href=(op.href) { (op.label) } } } }
                @if let Some(r) = &v.revision { div { dt { "revision" } dd { code { (r) } } } }
                @if let Some(l) = &v.language { div { dt { "language" } dd { (l) } } }
                div { dt { "licence" } dd { (v.licence.as_deref().unwrap_or("none declared")) } }
                div { dt { "source code" } dd {
                    @if let Some(href) = &v.source_code.href { a href=(href) rel="nofollow noopener" { (v.source_code.value) } }
                    @else { (v.source_code.value) }
                } }
                div { dt { "install" } dd { @if let Some(c) = &v.install_command {
                    // A recipe of several lines (build, then call) keeps its lines; it may scroll
                    // sideways, so it takes the keyboard's focus (WCAG 2.1.1).
                    @if c.contains('\n') { pre.recipe tabindex="0" { code { (c) } } } @else { code { (c) } }
                } @else { "no install recipe" } } }
                div { dt { "digest" } dd { code { (v.digest) } } }
            }
            p { a href={ "/api/v1/implementations/" (v.slug) } type="application/json" { "JSON" } }
            @if let Some(source) = &v.source { (super::source::source_section(source)) }
            (runs_table(&format!("Runs ({} in all, newest first)", v.runs_total), &v.runs))
            (section("manifest", "Manifest", html! { details { summary { "Show manifest" } pre { code { (serde_json::to_string_pretty(&v.manifest).unwrap_or_default()) } } } }))
        },
    )
}

/// The view with its source read from the catalog's content store.
async fn view(state: &crate::AppState, slug: &str) -> Result<ImplementationView, Problem> {
    let model = state.model();
    let i = model.find_implementation(slug)?;
    let mut view = model.implementation_view(i);
    view.source = Some(super::source::source_of(state, &model, i).await?);
    Ok(view)
}

pub async fn page(State(state): State<Shared>, Path(slug): Path<String>) -> Answer {
    Ok(html_response(render(&view(&state, &slug).await?)))
}

pub async fn api(State(state): State<Shared>, Path(slug): Path<String>) -> Answer {
    Ok(json_response(&view(&state, &slug).await?))
}
