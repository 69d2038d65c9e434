//! Projects (`/projects`, `/projects/{slug}`): who publishes implementations.

use axum::extract::Query;
use axum::extract::{Path, State};
use maud::{Markup, html};
use serde::Serialize;
use serde_json::Value;

use super::implementation::ImplementationItem;
use super::{Answer, PageQuery, Shared, html_response, json_response, layout, pager, pages_for, section};
use crate::model::{PAGE_LIMIT, ReadModel};
use crate::problem::Problem;

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectItem {
    pub slug: String,
    pub name: String,
    pub implementations: usize,
    pub href: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectList {
    pub projects: Vec<ProjectItem>,
    pub total: usize,
    pub page: usize,
    pub pages: usize,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProjectView {
    pub slug: String,
    pub name: String,
    pub canonical_url: Option<String>,
    pub licence: Option<String>,
    pub manifest: Value,
    pub implementations: Vec<ImplementationItem>,
    pub implementations_total: usize,
}

impl ReadModel {
    pub fn project_list(&self, page: usize) -> ProjectList {
        let mut items: Vec<(usize, ProjectItem)> = self
            .judgement
            .projects
            .iter()
            .enumerate()
            .map(|(i, p)| {
                (
                    i,
                    ProjectItem {
                        slug: p.slug.clone(),
                        name: p.name.clone(),
                        implementations: self.judgement.project_implementations(i).len(),
                        href: format!("/projects/{}", p.slug),
                    },
                )
            })
            .collect();
        items.sort_by(|a, b| b.1.implementations.cmp(&a.1.implementations).then(a.1.name.cmp(&b.1.name)));
        let total = items.len();
        let pages = pages_for(total, PAGE_LIMIT);
        let page = page.clamp(1, pages);
        ProjectList {
            projects: items.into_iter().skip((page - 1) * PAGE_LIMIT).take(PAGE_LIMIT).map(|(_, p)| p).collect(),
            total,
            page,
            pages,
        }
    }

    pub fn project_view(&self, p: usize) -> ProjectView {
        let row = &self.judgement.projects[p];
        let mut implementations: Vec<ImplementationItem> =
            self.judgement.project_implementations(p).iter().map(|&i| self.implementation_item(i)).collect();
        implementations.sort_by(|a, b| b.runs.cmp(&a.runs).then(a.slug.cmp(&b.slug)));
        let implementations_total = implementations.len();
        implementations.truncate(PAGE_LIMIT);
        ProjectView {
            slug: row.slug.clone(),
            name: row.name.clone(),
            canonical_url: row.canonical_url.clone().filter(|u| !u.is_empty()),
            licence: row.license_expression.clone().filter(|l| !l.is_empty()),
            manifest: self.judgement.project_manifest(p),
            implementations,
            implementations_total,
        }
    }
}

// ---------- projects, implementations, gpus ----------

pub fn render_list(list: &ProjectList) -> Markup {
    layout(
        "Projects",
        html! {
            h1 { "Projects" }
            p { (list.total) " projects, most implementations first." }
            table { thead { tr { th scope="col" { "project" } th scope="col" { "slug" } th scope="col" class="num" { "implementations" } } }
                tbody { @for p in &list.projects { tr { td { a href=(p.href) { (p.name) } } td { code { (p.slug) } } td.num { (p.implementations) } } } } }
            (pager("/projects", list.page, list.pages))
        },
    )
}

pub fn render(v: &ProjectView) -> Markup {
    layout(
        &v.name,
        html! {
            h1 { (v.name) }
            p { code { (v.slug) } @if let Some(l) = &v.licence { " · licence " (l) }
                @if let Some(u) = &v.canonical_url { @if u.starts_with("https://") { " · " a href=(u) rel="noopener" { (u) } } } }
            p { a href={ "/api/v1/projects/" (v.slug) } type="application/json" { "JSON" } }
            (section("implementations", "Implementations", html! {
                ul { @for i in &v.implementations { li { a href=(i.href) { (i.slug) } " — " (i.title) " · " (i.runs) " runs" } } }
                @if v.implementations_total > v.implementations.len() { p.muted { (v.implementations_total) " in all; the most-run shown." } }
            }))
            (section("manifest", "Manifest", html! { details { summary { "Show manifest" } pre { code { (serde_json::to_string_pretty(&v.manifest).unwrap_or_default()) } } } }))
        },
    )
}

// ---------- projects, implementations, gpus ----------

pub async fn list_page(State(state): State<Shared>, Query(q): Query<PageQuery>) -> Answer {
    Ok(html_response(render_list(&state.model().project_list(q.number()))))
}

pub async fn api_list(State(state): State<Shared>, Query(q): Query<PageQuery>) -> Answer {
    Ok(json_response(&state.model().project_list(q.number())))
}

fn find_project(model: &ReadModel, slug: &str) -> Result<usize, Problem> {
    model.project_by_slug.get(slug).copied().ok_or_else(|| Problem::not_found(format!("no project {slug:?}")))
}

pub async fn page(State(state): State<Shared>, Path(slug): Path<String>) -> Answer {
    let model = state.model();
    Ok(html_response(render(&model.project_view(find_project(&model, &slug)?))))
}

pub async fn api(State(state): State<Shared>, Path(slug): Path<String>) -> Answer {
    let model = state.model();
    Ok(json_response(&model.project_view(find_project(&model, &slug)?)))
}
