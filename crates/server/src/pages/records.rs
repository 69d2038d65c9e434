//! Records (`/records`, `/records.atom`, `/api/v1/records`): record events newest first.

use axum::extract::Query;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use maud::{Markup, html};
use serde::Serialize;

use super::{Answer, Link, PageQuery, RunSummary, Shared, html_response, json_response, layout, pager, pages_for};
use crate::model::{ReadModel, Row, opt_text, text};

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
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
                    td { @if let Some(h) = &r.holder { a href=(h.href) { (h.implementation) } " on " (crate::pages::gpu_link(&h.hardware)) } }
                    td.num { @if let Some(h) = &r.holder { (h.display) } }
                    td { @if let Some(p) = &r.previous { a href=(p.href) { (p.label) } " " (r.previous_display.as_deref().unwrap_or("")) } @else { "—" } }
                    td { (r.cause) }
                } } }
            }
            (pager("/records", list.page, list.pages))
        },
    )
}

/// An RFC 3339 timestamp as Atom's date; the epoch when a row holds something else (a
/// record event's time is checked on import, so that does not happen in practice).
fn atom_date(text: &str) -> atom_syndication::FixedDateTime {
    atom_syndication::FixedDateTime::parse_from_rfc3339(text)
        .or_else(|_| atom_syndication::FixedDateTime::parse_from_rfc3339(&ki_model::utc::now_millis()))
        .unwrap_or_default()
}

fn atom_link(href: String, rel: &str) -> atom_syndication::Link {
    atom_syndication::Link { href, rel: rel.to_string(), ..Default::default() }
}

/// The newest record events as an Atom feed (RFC 4287), built and escaped by `atom_syndication`.
pub fn atom(list: &RecordList, base_url: &str) -> String {
    use atom_syndication::{Entry, Feed, Text};
    let updated = list.records.first().map(|r| r.at.clone()).unwrap_or_else(ki_model::utc::now_millis);
    let entries: Vec<Entry> = list
        .records
        .iter()
        .filter_map(|r| {
            let h = r.holder.as_ref()?;
            let op = r.operation.as_ref().map(|o| o.label.as_str()).unwrap_or("");
            Some(Entry {
                title: Text::plain(format!(
                    "{op}: {} holds the record at {} on {}",
                    h.implementation, h.display, h.hardware
                )),
                id: format!("{base_url}/runs/{}#record-{}", h.id, r.at),
                updated: atom_date(&r.at),
                links: vec![atom_link(format!("{base_url}{}", h.href), "alternate")],
                summary: Some(Text::plain(format!("cause {}; comparison key {}", r.cause, r.comparison_key))),
                ..Default::default()
            })
        })
        .collect();
    let feed = Feed {
        title: Text::plain("KernelIndex records"),
        id: format!("{base_url}/records"),
        updated: atom_date(&updated),
        links: vec![
            atom_link(format!("{base_url}/records.atom"), "self"),
            atom_link(format!("{base_url}/records"), "alternate"),
        ],
        entries,
        ..Default::default()
    };
    feed.to_string()
}

// ---------- records ----------

pub const RECORDS_PER_PAGE: usize = 100;

pub async fn page(State(state): State<Shared>, Query(q): Query<PageQuery>) -> Answer {
    Ok(html_response(render(&state.model().record_list(q.number(), RECORDS_PER_PAGE))))
}

pub async fn api(State(state): State<Shared>, Query(q): Query<PageQuery>) -> Answer {
    Ok(json_response(&state.model().record_list(q.number(), RECORDS_PER_PAGE)))
}

pub async fn atom_feed(State(state): State<Shared>) -> Answer {
    let list = state.model().record_list(1, 50);
    Ok(([(header::CONTENT_TYPE, "application/atom+xml; charset=utf-8")], atom(&list, &state.base_url)).into_response())
}
