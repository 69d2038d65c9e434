//! Records (`/records`, `/records.atom`, `/api/v1/records`): record events newest first.

use axum::extract::{RawQuery, State};
use axum::http::header;
use axum::response::IntoResponse;
use maud::{Markup, html};
use serde::Serialize;

use super::{Answer, Link, RunSummary, Shared, html_response, json_response, layout, page_param, pager, pages_for};
use crate::model::{ReadModel, Row, opt_text, text};

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordItem {
    pub at: String,
    pub cause: String,
    pub operation: Option<Link>,
    pub holder: Option<RunSummary>,
    pub previous: Option<Link>,
    pub previous_display: Option<String>,
    pub comparison_key: String,
}

#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordList {
    pub records: Vec<RecordItem>,
    pub total: usize,
    pub page: usize,
    pub pages: usize,
}

impl ReadModel {
    pub fn record_item(&self, event: &Row) -> RecordItem {
        let holder = self.runs.index_of(text(event, "runId"));
        let previous = opt_text(event, "previousRunId").and_then(|p| self.runs.index_of(p));
        RecordItem {
            at: text(event, "at").into(),
            cause: text(event, "cause").into(),
            operation: holder.and_then(|h| self.run_operation(h)).map(|o| Link {
                label: self.operation_title(o).into(),
                href: format!("/operations/{}", text(&self.operations.rows[o], "slug")),
            }),
            holder: holder.map(|h| self.run_summary(h)),
            previous: previous.map(|p| Link {
                label: format!("Run {}", crate::pages::short_id(text(&self.runs.rows[p], "id"))),
                href: format!("/runs/{}", text(&self.runs.rows[p], "id")),
            }),
            previous_display: previous.map(|p| crate::pages::primary_display(&self.runs.rows[p])),
            comparison_key: text(event, "comparisonKey").into(),
        }
    }

    /// Record events newest first, a page at a time.
    pub fn record_list(&self, page: usize, per_page: usize) -> RecordList {
        let total = self.record_events.len();
        let pages = pages_for(total, per_page);
        let page = page.clamp(1, pages);
        RecordList {
            records: self
                .record_events
                .iter()
                .skip((page - 1) * per_page)
                .take(per_page)
                .map(|e| self.record_item(e))
                .collect(),
            total,
            page,
            pages,
        }
    }
}

// ---------- records ----------

pub fn render(list: &RecordList) -> Markup {
    layout(
        "Records",
        html! {
            h1 { "Records" }
            p { "Every time a comparison group gets a new fastest eligible run, the index records it (policy ranking-v1). " (list.total) " events, newest first. "
                a href="/records.atom" type="application/atom+xml" { "Atom feed" } " · " a href="/api/v1/records" type="application/json" { "JSON" } }
            table { caption { "Record events" }
                thead { tr { th scope="col" { "when" } th scope="col" { "operation" } th scope="col" { "new holder" } th scope="col" class="num" { "value" } th scope="col" { "previous" } th scope="col" { "cause" } } }
                tbody { @for r in &list.records { tr {
                    td { (ki_model::utc::date_of(&r.at)) }
                    td { @if let Some(op) = &r.operation { a href=(op.href) { (op.label) } } }
                    td { @if let Some(h) = &r.holder { a href=(h.href) { (h.implementation) } " on " (h.hardware) } }
                    td.num { @if let Some(h) = &r.holder { (h.display) } }
                    td { @if let Some(p) = &r.previous { a href=(p.href) { (p.label) } " " (r.previous_display.as_deref().unwrap_or("")) } @else { "—" } }
                    td { (r.cause) }
                } } }
            }
            (pager("/records", list.page, list.pages))
        },
    )
}

fn xml_escape(text: &str) -> String {
    crate::chart::escape(text)
}

pub fn atom(list: &RecordList, base_url: &str) -> String {
    let updated = list.records.first().map(|r| r.at.clone()).unwrap_or_else(ki_model::utc::now_millis);
    let mut out = String::with_capacity(32 * 1024);
    out.push_str("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\">\n");
    out.push_str(&format!(
        "<title>KernelIndex records</title>\n<id>{0}/records</id>\n<link rel=\"self\" href=\"{0}/records.atom\"/>\n<link href=\"{0}/records\"/>\n<updated>{1}</updated>\n",
        xml_escape(base_url),
        xml_escape(&updated)
    ));
    for r in &list.records {
        let Some(h) = &r.holder else { continue };
        let op = r.operation.as_ref().map(|o| o.label.as_str()).unwrap_or("");
        let title = format!("{op}: {} holds the record at {} on {}", h.implementation, h.display, h.hardware);
        out.push_str(&format!(
            "<entry>\n<title>{}</title>\n<id>{}/runs/{}#record-{}</id>\n<link href=\"{}{}\"/>\n<updated>{}</updated>\n<summary>{}</summary>\n</entry>\n",
            xml_escape(&title),
            xml_escape(base_url),
            xml_escape(&h.id),
            xml_escape(&r.at),
            xml_escape(base_url),
            xml_escape(&h.href),
            xml_escape(&r.at),
            xml_escape(&format!("cause {}; comparison key {}", r.cause, r.comparison_key)),
        ));
    }
    out.push_str("</feed>\n");
    out
}

// ---------- records ----------

pub const RECORDS_PER_PAGE: usize = 100;

pub async fn page(State(state): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    Ok(html_response(render(&state.model().record_list(page_param(&q), RECORDS_PER_PAGE))))
}

pub async fn api(State(state): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    Ok(json_response(&state.model().record_list(page_param(&q), RECORDS_PER_PAGE)))
}

pub async fn atom_feed(State(state): State<Shared>) -> Answer {
    let list = state.model().record_list(1, 50);
    Ok(([(header::CONTENT_TYPE, "application/atom+xml; charset=utf-8")], atom(&list, &state.base_url)).into_response())
}
