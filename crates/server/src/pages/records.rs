//! Records (`/records`, `/records.atom`, `/api/v1/records`): record events newest first.

use axum::extract::Query;
use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use maud::{Markup, html};
use serde::Serialize;

use super::{Answer, PageQuery, Shared, html_response, json_response, layout, pager, pages_for};
use crate::model::{Link, RunSummary};
use crate::model::{RECORDS_PER_PAGE, ReadModel, RecordRef};

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordItem {
    pub at: String,
    pub cause: String,
    pub operation: Option<Link>,
    /// The workload's variable axes and dtypes ("batch_size = 16 · … · bfloat16").
    pub workload: Option<String>,
    /// The new holder's GPU, linking to its page.
    pub gpu: Option<Link>,
    pub holder: Option<RunSummary>,
    /// The previous holder, by its implementation's name, linking to its run.
    pub previous: Option<Link>,
    pub previous_display: Option<String>,
    pub comparison_key: String,
}

/// The ledger's filters, as the URL carries them: `gpu=` (a GPU's slug, as in `/gpus/{slug}`),
/// `verified=1` (the new holder is verified or replicated), `source=1` (the new holder's
/// implementation has public source), and `page=`.
#[derive(Debug, Clone, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(default)]
pub struct RecordsQuery {
    #[schemars(extend("maximum" = 18_446_744_073_709_551_615_u64))]
    pub page: Option<usize>,
    #[schemars(length(max = 200))]
    pub gpu: Option<String>,
    #[schemars(extend("enum" = ["", "0", "1"]))]
    pub verified: Option<String>,
    #[schemars(extend("enum" = ["", "0", "1"]))]
    pub source: Option<String>,
}

/// The filters a ledger page was asked for, once checked.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordFilter {
    /// The GPU's name (the slug asked for resolved against the catalog).
    pub gpu: Option<String>,
    pub gpu_slug: Option<String>,
    pub verified: bool,
    pub source: bool,
}

impl RecordFilter {
    pub fn is_empty(&self) -> bool {
        self.gpu.is_none() && !self.verified && !self.source
    }

    /// The query string of these filters (without `page`), "" when none.
    pub fn query(&self) -> String {
        let mut params = Vec::new();
        if let Some(slug) = &self.gpu_slug {
            params.push(format!("gpu={}", crate::model::percent_encode(slug)));
        }
        if self.verified {
            params.push("verified=1".to_string());
        }
        if self.source {
            params.push("source=1".to_string());
        }
        params.join("&")
    }
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordList {
    pub records: Vec<RecordItem>,
    /// Record events matching the filters.
    pub total: usize,
    /// Record events in the ledger, filtered or not.
    pub all: usize,
    pub page: usize,
    pub pages: usize,
    pub filter: RecordFilter,
    /// GPUs the filter can pick, most runs first, each linking to the ledger filtered by it.
    pub gpus: Vec<Link>,
}

/// A `0`/`1` filter flag (absent or empty: off); anything else is refused by name, as the
/// schema's enum says.
fn on(flag: &Option<String>, name: &str) -> Result<bool, crate::problem::Problem> {
    match flag.as_deref() {
        None | Some("") | Some("0") => Ok(false),
        Some("1") => Ok(true),
        Some(other) => Err(crate::problem::Problem::bad_request(format!("{name}= takes 1 or 0, not {other:?}"))),
    }
}

impl ReadModel {
    /// The filters of a query; an unknown GPU is a 404 naming it.
    pub fn record_filter(&self, q: &RecordsQuery) -> Result<RecordFilter, crate::problem::Problem> {
        let wanted = q.gpu.as_deref().map(str::trim).filter(|g| !g.is_empty());
        let gpu = match wanted {
            None => None,
            Some(wanted) => Some(
                self.runs_by_gpu
                    .iter()
                    .map(|(name, _)| name)
                    .find(|name| {
                        crate::model::slugify(name) == crate::model::slugify(wanted)
                            && !crate::model::slugify(wanted).is_empty()
                    })
                    .cloned()
                    .ok_or_else(|| crate::problem::Problem::not_found(format!("no GPU {wanted:?} in the catalog")))?,
            ),
        };
        Ok(RecordFilter {
            gpu_slug: gpu.as_deref().map(crate::model::slugify),
            gpu,
            verified: on(&q.verified, "verified")?,
            source: on(&q.source, "source")?,
        })
    }

    /// Whether a record event's new holder passes the filters.
    pub fn record_matches(&self, record: RecordRef, filter: &RecordFilter) -> bool {
        if filter.is_empty() {
            return true;
        }
        let Some(h) = record.holder.map(|h| h as usize) else {
            return false;
        };
        let row = self.run(h);
        filter.gpu.as_deref().is_none_or(|g| row.hardware_model.as_deref().unwrap_or("") == g)
            && (!filter.verified || self.judgement.facts[h].trust.is_verified())
            && (!filter.source || row.source_available)
    }

    pub fn record_item(&self, record: RecordRef) -> RecordItem {
        let event = &self.judgement.record_events[record.event as usize];
        let holder = record.holder.map(|h| h as usize);
        let previous = event.previous_run_id.as_ref().and_then(|p| self.judgement.run_of(p));
        let implementation_name = |run: usize| {
            Some(self.judgement.implementation_of(run).slug.clone())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| format!("Run {}", crate::model::short_id(&self.run(run).id.text())))
        };
        RecordItem {
            at: event.at.text().into_owned(),
            cause: event.cause.to_string(),
            operation: holder.and_then(|h| self.run_operation(h)).map(|o| Link {
                label: self.operation_title(o).into(),
                href: format!("/operations/{}", self.judgement.operations[o].slug),
            }),
            workload: holder.map(|h| self.run_workload_label(h).into()),
            gpu: holder
                .and_then(|h| self.run(h).hardware_model.as_deref().filter(|g| !g.is_empty()))
                .map(|g| Link { label: g.to_string(), href: crate::model::gpu_href(g) }),
            holder: holder.map(|h| self.run_summary(h)),
            previous: previous
                .map(|p| Link { label: implementation_name(p), href: format!("/runs/{}", self.run(p).id) }),
            previous_display: previous.map(|p| crate::model::primary_display(self.run(p))),
            comparison_key: event.comparison_key.to_string(),
        }
    }

    /// Record events newest first, a page at a time.
    pub fn record_list(&self, page: usize, per_page: usize) -> RecordList {
        self.record_list_filtered(&RecordFilter::default(), page, per_page)
    }

    /// Record events whose new holder passes `filter`, newest first, a page at a time.
    pub fn record_list_filtered(&self, filter: &RecordFilter, page: usize, per_page: usize) -> RecordList {
        let matching = || self.records.iter().copied().filter(|&r| self.record_matches(r, filter));
        let total = if filter.is_empty() { self.records.len() } else { matching().count() };
        let pages = pages_for(total, per_page);
        let page = page.clamp(1, pages);
        RecordList {
            records: matching().skip((page - 1) * per_page).take(per_page).map(|r| self.record_item(r)).collect(),
            total,
            all: self.records.len(),
            page,
            pages,
            filter: filter.clone(),
            gpus: self
                .runs_by_gpu
                .iter()
                .filter(|(name, _)| !crate::model::slugify(name).is_empty())
                .map(|(name, _)| Link {
                    label: name.clone(),
                    href: format!("/records?gpu={}", crate::model::slugify(name)),
                })
                .collect(),
        }
    }
}

// ---------- records ----------

pub fn render(list: &RecordList) -> Markup {
    let query = list.filter.query();
    let base = if query.is_empty() { "/records".to_string() } else { format!("/records?{query}") };
    let atom = if query.is_empty() { "/records.atom".to_string() } else { format!("/records.atom?{query}") };
    let json = if query.is_empty() { "/api/v1/records".to_string() } else { format!("/api/v1/records?{query}") };
    layout(
        "Records",
        html! {
            h1 { "Records" }
            p { "Every time a comparison group gets a new fastest eligible run, the index records it (policy ranking-v1). "
                @if list.filter.is_empty() { (list.total) " events, newest first. " }
                @else { (list.total) " of " (list.all) " events match, newest first. " }
                a href=(atom) type="application/atom+xml" { "Atom feed" } " · " a href=(json) type="application/json" { "JSON" } }
            form.filters method="get" action="/records" {
                div.row { label for="rec-gpu" { "GPU" }
                    select #rec-gpu name="gpu" {
                        option value="" selected[list.filter.gpu.is_none()] { "all" }
                        @for g in &list.gpus {
                            @let slug = crate::model::slugify(&g.label);
                            option value=(slug) selected[list.filter.gpu_slug.as_deref() == Some(slug.as_str())] { (g.label) }
                        }
                    } }
                div.row { input #rec-verified type="checkbox" name="verified" value="1" checked[list.filter.verified]; label for="rec-verified" { "verified holders only" } }
                div.row { input #rec-source type="checkbox" name="source" value="1" checked[list.filter.source]; label for="rec-source" { "holders with public source only" } }
                button type="submit" { "Filter" }
                @if !list.filter.is_empty() { " " a href="/records" { "clear filters" } }
            }
            table { caption { "Record events" }
                thead { tr { th scope="col" { "when" } th scope="col" { "operation" } th scope="col" { "workload" } th scope="col" { "GPU" } th scope="col" { "new holder" } th scope="col" class="num" { "value" } th scope="col" { "evidence" } th scope="col" { "previous holder" } th scope="col" { "cause" } } }
                tbody { @for r in &list.records { tr {
                    td { (ki_model::utc::date_of(&r.at)) }
                    td { @if let Some(op) = &r.operation { a href=(op.href) { (op.label) } } }
                    td { (r.workload.as_deref().unwrap_or("")) }
                    td { @if let Some(g) = &r.gpu { (crate::pages::gpu_link(&g.label)) } }
                    td { @if let Some(h) = &r.holder { a href=(h.href) { (h.implementation) } } }
                    td.num { @if let Some(h) = &r.holder { (h.display) } }
                    td { @if let Some(h) = &r.holder { (crate::pages::evidence_badge(&h.trust)) } }
                    td { @if let Some(p) = &r.previous { a href=(p.href) { (p.label) } " " (r.previous_display.as_deref().unwrap_or("")) } @else { "—" } }
                    td { (r.cause) }
                } } }
            }
            (pager(&base, list.page, list.pages))
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
                    "{op} ({}) on {}: {} holds the record at {}",
                    r.workload.as_deref().unwrap_or("workload unknown"),
                    h.hardware,
                    h.implementation,
                    h.display
                )),
                id: format!("{base_url}/runs/{}#record-{}", h.id, r.at),
                updated: atom_date(&r.at),
                links: vec![atom_link(format!("{base_url}{}", h.href), "alternate")],
                summary: Some(Text::plain(format!(
                    "workload {}; GPU {}; evidence {}; previous holder {}; cause {}; comparison key {}",
                    r.workload.as_deref().unwrap_or("unknown"),
                    h.hardware,
                    h.trust,
                    r.previous.as_ref().map(|p| p.label.as_str()).unwrap_or("none"),
                    r.cause,
                    r.comparison_key
                ))),
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

fn records_page(q: &RecordsQuery) -> usize {
    PageQuery { page: q.page }.number()
}

pub async fn page(State(state): State<Shared>, Query(q): Query<RecordsQuery>) -> Answer {
    let model = state.model();
    let filter = model.record_filter(&q)?;
    Ok(html_response(render(&model.record_list_filtered(&filter, records_page(&q), RECORDS_PER_PAGE))))
}

pub async fn api(State(state): State<Shared>, Query(q): Query<RecordsQuery>) -> Answer {
    let model = state.model();
    let filter = model.record_filter(&q)?;
    Ok(json_response(&model.record_list_filtered(&filter, records_page(&q), RECORDS_PER_PAGE)))
}

/// The newest 50 record events (under the same filters as the page) as Atom.
pub async fn atom_feed(State(state): State<Shared>, Query(q): Query<RecordsQuery>) -> Answer {
    let model = state.model();
    let filter = model.record_filter(&q)?;
    let list = model.record_list_filtered(&filter, 1, 50);
    Ok(([(header::CONTENT_TYPE, "application/atom+xml; charset=utf-8")], atom(&list, &state.base_url)).into_response())
}
