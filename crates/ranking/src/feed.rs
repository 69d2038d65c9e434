//! Listing runs and the change feed: what `GET /api/v1/runs` and `GET /api/v1/feed` answer,
//! and what `ki runs` / `ki changes` print, locally or from a running index (`--api`), from
//! the same types.
//!
//! Pure: the caller gathers the events ([`index_events`] gives the index's own: record
//! events and publications; the server adds the catalog's corrections and finished
//! verifications with the constructors below) and this module filters, orders and pages
//! them. Cursors are opaque to clients (hex of a versioned key) and name the last item a
//! page held, so paging is stable while the catalog grows: an item is never returned twice
//! and nothing that existed when paging began is skipped.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::index::{Index, LookupError};
use crate::rank::TrustLevel;
use crate::rows::IdText;
use crate::time::Instant;

/// Items per page when the request names no `limit`.
pub const DEFAULT_LIMIT: usize = 100;
/// Most items one page holds.
pub const MAX_LIMIT: usize = 1000;
/// Longest filter value accepted (names, slugs, digests are far shorter).
pub const MAX_FILTER_CHARS: usize = 300;

/// A request the list or feed cannot answer; each names the parameter that is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeedError {
    #[error("{parameter}: {message}")]
    InvalidParameter { parameter: &'static str, message: String },
    #[error("{parameter}: no {what} {given:?}")]
    NotFound { parameter: &'static str, what: &'static str, given: String },
}

impl FeedError {
    fn invalid(parameter: &'static str, message: impl Into<String>) -> FeedError {
        FeedError::InvalidParameter { parameter, message: message.into() }
    }

    /// The query parameter at fault.
    pub fn parameter(&self) -> &'static str {
        match self {
            FeedError::InvalidParameter { parameter, .. } | FeedError::NotFound { parameter, .. } => parameter,
        }
    }
}

/// Which page: after `cursor` (from the previous page's `nextCursor`), at most `limit` items.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct PageRequest {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
    /// 1 to 1000; default 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
}

impl PageRequest {
    fn limit(&self) -> Result<usize, FeedError> {
        match self.limit {
            None => Ok(DEFAULT_LIMIT),
            Some(limit) if (1..=MAX_LIMIT).contains(&limit) => Ok(limit),
            Some(limit) => Err(FeedError::invalid("limit", format!("{limit} is not between 1 and {MAX_LIMIT}"))),
        }
    }
}

/// Filters of the run list; every one given must match. Names are matched as the rest of the
/// index matches them: an operation by name, slug or alias; an implementation by slug or id;
/// a source by slug, name or id; a workload by id or digest; hardware by model, ignoring case.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hardware: Option<String>,
    /// reported, reproducible, verified or replicated (exactly that level).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub evidence: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub implementation: Option<String>,
    /// The run's status as recorded (`passed`, `incorrect_numerical`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
}

/// One run in a list: what a table row shows, and the links to the rest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ListedRun {
    pub id: String,
    pub digest: String,
    pub operation: String,
    pub workload_id: String,
    pub implementation: String,
    pub project: String,
    pub source: Option<String>,
    pub hardware: Option<String>,
    pub status: String,
    /// reported, reproducible, verified or replicated.
    pub evidence: String,
    /// Dense rank inside its comparison group; none when not ranked.
    pub rank: Option<u32>,
    /// Why it is not ranked (`UNPUBLISHED`, `STATUS_RUNTIME_ERROR`, …); empty when ranked.
    pub ineligibility: Vec<String>,
    pub metric: Option<String>,
    pub statistic: Option<String>,
    pub value: Option<f64>,
    pub unit: Option<String>,
    pub observed_at: String,
    pub published_at: Option<String>,
    pub comparison_key: String,
    pub href: String,
}

/// A page of the run list, ordered by run id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunPage {
    pub runs: Vec<ListedRun>,
    /// Runs matching the filters, on every page together.
    pub total: usize,
    /// Ask again with this `cursor` for the next page; absent on the last.
    pub next_cursor: Option<String>,
}

fn trust_level(text: &str) -> Option<TrustLevel> {
    [TrustLevel::Reported, TrustLevel::Reproducible, TrustLevel::Verified, TrustLevel::Replicated]
        .into_iter()
        .find(|level| level.as_str() == text)
}

fn filter_value<'a>(parameter: &'static str, value: &'a Option<String>) -> Result<Option<&'a str>, FeedError> {
    match value.as_deref().map(str::trim) {
        None | Some("") => Ok(None),
        Some(text) if text.chars().count() > MAX_FILTER_CHARS => {
            Err(FeedError::invalid(parameter, format!("longer than {MAX_FILTER_CHARS} characters")))
        }
        Some(text) => Ok(Some(text)),
    }
}

fn lookup(parameter: &'static str, error: LookupError) -> FeedError {
    match error {
        LookupError::NotFound { what, given } => FeedError::NotFound { parameter, what, given },
        ambiguous => FeedError::invalid(parameter, ambiguous.to_string()),
    }
}

fn not_found(parameter: &'static str, what: &'static str, given: &str) -> FeedError {
    FeedError::NotFound { parameter, what, given: given.to_string() }
}

fn with_sha256(text: &str) -> String {
    if text.starts_with("sha256:") { text.to_string() } else { format!("sha256:{text}") }
}

/// The filters resolved to the index's positions, so matching a run is comparisons only.
struct ResolvedFilter<'a> {
    operation: Option<usize>,
    workload: Option<&'a str>,
    hardware: Option<&'a str>,
    evidence: Option<TrustLevel>,
    source: Option<&'a str>,
    implementation: Option<&'a str>,
    status: Option<&'a str>,
}

impl<'a> ResolvedFilter<'a> {
    fn new(index: &'a Index, filter: &'a RunFilter) -> Result<ResolvedFilter<'a>, FeedError> {
        let operation = match filter_value("operation", &filter.operation)? {
            Some(name) => Some(index.find_operation(name).map_err(|e| lookup("operation", e))?),
            None => None,
        };
        let workload = match filter_value("workload", &filter.workload)? {
            Some(given) => {
                let digest = with_sha256(given);
                let found = index.workloads.iter().find(|w| w.id == given || w.workload_digest == digest);
                Some(found.map(|w| w.id.as_str()).ok_or_else(|| not_found("workload", "workload", given))?)
            }
            None => None,
        };
        let evidence = match filter_value("evidence", &filter.evidence)? {
            Some(text) => Some(trust_level(text).ok_or_else(|| {
                FeedError::invalid(
                    "evidence",
                    format!("{text:?} is not one of reported, reproducible, verified, replicated"),
                )
            })?),
            None => None,
        };
        let source = match filter_value("source", &filter.source)? {
            Some(given) => {
                let found = index.sources.iter().find(|s| s.id == given || s.slug == given || s.name == given);
                Some(found.map(|s| s.id.as_str()).ok_or_else(|| not_found("source", "source", given))?)
            }
            None => None,
        };
        let implementation = match filter_value("implementation", &filter.implementation)? {
            Some(given) => {
                let found = index.implementations.iter().find(|i| i.id == given || i.slug == given);
                Some(found.map(|i| i.id.as_str()).ok_or_else(|| not_found("implementation", "implementation", given))?)
            }
            None => None,
        };
        Ok(ResolvedFilter {
            operation,
            workload,
            hardware: filter_value("hardware", &filter.hardware)?,
            evidence,
            source,
            implementation,
            status: filter_value("status", &filter.status)?,
        })
    }

    fn matches(&self, index: &Index, run: usize) -> bool {
        let row = &index.runs[run];
        self.operation.is_none_or(|op| index.workload_operation[index.run_workload(run)] == op)
            && self.workload.is_none_or(|w| &*row.workload_id == w)
            && self.hardware.is_none_or(|h| row.hardware_model.as_deref().is_some_and(|m| m.eq_ignore_ascii_case(h)))
            && self.evidence.is_none_or(|level| index.facts[run].trust == level)
            && self.source.is_none_or(|s| row.source_id.as_deref() == Some(s))
            && self.implementation.is_none_or(|i| &*row.implementation_id == i)
            && self.status.is_none_or(|s| &*row.status == s)
    }
}

impl Index {
    /// One run as the list shows it.
    pub fn listed_run(&self, run: usize) -> ListedRun {
        let row = &self.runs[run];
        let facts = &self.facts[run];
        ListedRun {
            id: row.id.to_string(),
            digest: row.run_digest.to_string(),
            operation: self.operation_of(run).name.clone(),
            workload_id: row.workload_id.to_string(),
            implementation: self.implementation_of(run).slug.clone(),
            project: self.project_of(run).name.clone(),
            source: self.source_of(run).map(|s| s.name.clone()),
            hardware: row.hardware_model.as_deref().map(str::to_string),
            status: row.status.to_string(),
            evidence: facts.trust.as_str().to_string(),
            rank: facts.rank(),
            ineligibility: facts.ineligibility().iter().map(|i| i.code()).collect(),
            metric: row.primary_metric.as_deref().map(str::to_string),
            statistic: row.primary_statistic.as_deref().map(str::to_string),
            value: self.primary_value(run),
            unit: row.primary_unit.as_deref().map(str::to_string),
            observed_at: row.observed_at.text().into_owned(),
            published_at: row.published_at.get().map(|t| t.text().into_owned()),
            comparison_key: row.comparison_key.to_string(),
            href: format!("/runs/{}", row.id),
        }
    }
}

const RUN_CURSOR: &str = "runs-v1|";
const FEED_CURSOR: &str = "feed-v1|";

fn encode_cursor(prefix: &str, key: &str) -> String {
    hex::encode(format!("{prefix}{key}"))
}

fn decode_cursor(prefix: &str, cursor: &str) -> Result<String, FeedError> {
    let invalid = || FeedError::invalid("cursor", "not a cursor this list gave out (pass nextCursor unchanged)");
    let bytes = hex::decode(cursor.trim()).map_err(|_| invalid())?;
    let text = String::from_utf8(bytes).map_err(|_| invalid())?;
    text.strip_prefix(prefix).map(str::to_string).ok_or_else(invalid)
}

/// The runs matching `filter`, ordered by id (a run's id never changes, so the order is
/// stable), one page of them.
pub fn list_runs(index: &Index, filter: &RunFilter, page: &PageRequest) -> Result<RunPage, FeedError> {
    let resolved = ResolvedFilter::new(index, filter)?;
    let limit = page.limit()?;
    let after = page.cursor.as_deref().map(|c| decode_cursor(RUN_CURSOR, c)).transpose()?;
    let mut matching: Vec<usize> = (0..index.runs.len()).filter(|&run| resolved.matches(index, run)).collect();
    matching.sort_unstable_by(|&a, &b| index.runs[a].id.cmp(&index.runs[b].id));
    let start = match &after {
        Some(last) => matching.partition_point(|&run| *index.runs[run].id.text() <= **last),
        None => 0,
    };
    let rest = &matching[start..];
    let shown = &rest[..rest.len().min(limit)];
    let next_cursor = (rest.len() > shown.len())
        .then(|| shown.last().map(|&run| encode_cursor(RUN_CURSOR, &index.runs[run].id.text())))
        .flatten();
    Ok(RunPage { runs: shown.iter().map(|&run| index.listed_run(run)).collect(), total: matching.len(), next_cursor })
}

// ---------- the feed ----------

/// A comparison group's record moved (ranking-v1's ledger).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordChange {
    pub comparison_key: String,
    /// The new record holder.
    pub run_id: String,
    pub previous_run_id: Option<String>,
    /// Why it moved (`new_record`, `retraction`, …).
    pub cause: String,
    pub policy_version: String,
    pub operation: Option<String>,
    pub value: Option<f64>,
    pub unit: Option<String>,
}

/// Runs published together: one source's runs sharing one publication time (an import, a
/// `ki admin publish`, a verification's records).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Publication {
    pub source: Option<String>,
    pub run_count: usize,
    /// Sorted.
    pub run_ids: Vec<String>,
    /// The operations the runs measure, sorted.
    pub operations: Vec<String>,
}

/// A run retracted or superseded (`ki admin retract` / `supersede`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CorrectionChange {
    pub correction_id: String,
    /// `retract` or `supersede`.
    pub action: String,
    pub run_id: String,
    pub by_run_id: Option<String>,
    pub reason: String,
    pub actor: String,
}

/// A verification job that ended (done with a verdict, or parked).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerificationChange {
    pub job_id: String,
    /// `done` or `parked`.
    pub state: String,
    /// What was verified (a solution's name or an implementation).
    pub subject: String,
    /// The verdict's status (`passed`, `incorrect`, …) when done.
    pub verdict: Option<String>,
    /// The verdict's summary, or why it was parked.
    pub summary: Option<String>,
    pub run_ids: Vec<String>,
    pub href: String,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum FeedEvent {
    Record(RecordChange),
    Publication(Publication),
    Correction(CorrectionChange),
    Verification(VerificationChange),
}

impl FeedEvent {
    /// Orders events of one instant, and names an event uniquely inside its kind.
    fn order_key(&self) -> String {
        match self {
            FeedEvent::Record(r) => format!("0|{}|{}", r.comparison_key, r.run_id),
            FeedEvent::Publication(p) => {
                format!(
                    "1|{}|{}",
                    p.source.as_deref().unwrap_or(""),
                    p.run_ids.first().map(String::as_str).unwrap_or("")
                )
            }
            FeedEvent::Correction(c) => format!("2|{}", c.correction_id),
            FeedEvent::Verification(v) => format!("3|{}", v.job_id),
        }
    }
}

/// One event of the feed, with when it happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedItem {
    /// RFC 3339, UTC.
    pub at: String,
    #[serde(flatten)]
    pub event: FeedEvent,
}

/// A page of the feed, oldest first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FeedPage {
    /// The `since` asked for (events strictly after it), as given.
    pub since: Option<String>,
    pub events: Vec<FeedItem>,
    /// Ask again with this `cursor` (and the same `since`) for the next page; absent on the last.
    pub next_cursor: Option<String>,
}

/// The index's own events: every stored record event and every publication (runs grouped by
/// source and publication time).
pub fn index_events(index: &Index) -> Vec<FeedItem> {
    let mut items = Vec::with_capacity(index.record_events.len());
    for event in &index.record_events {
        let run = index.run_of(&event.run_id);
        items.push(FeedItem {
            at: event.at.text().into_owned(),
            event: FeedEvent::Record(RecordChange {
                comparison_key: event.comparison_key.to_string(),
                run_id: event.run_id.to_string(),
                previous_run_id: event.previous_run_id.as_ref().map(IdText::to_string),
                cause: event.cause.to_string(),
                policy_version: event.policy_version.to_string(),
                operation: run.map(|r| index.operation_of(r).name.clone()),
                value: run.and_then(|r| index.primary_value(r)),
                unit: run.and_then(|r| index.runs[r].primary_unit.as_deref().map(str::to_string)),
            }),
        });
    }
    let mut batches: BTreeMap<(Instant, String, Option<&str>), Vec<usize>> = BTreeMap::new();
    for (run, row) in index.runs.iter().enumerate() {
        if let Some(published) = row.published_at.get() {
            batches
                .entry((published.instant, published.text().into_owned(), row.source_id.as_deref()))
                .or_default()
                .push(run);
        }
    }
    for ((_, at, _), runs) in batches {
        let mut run_ids: Vec<String> = runs.iter().map(|&r| index.runs[r].id.to_string()).collect();
        run_ids.sort();
        let mut operations: Vec<String> = runs.iter().map(|&r| index.operation_of(r).name.clone()).collect();
        operations.sort();
        operations.dedup();
        items.push(FeedItem {
            at,
            event: FeedEvent::Publication(Publication {
                source: index.source_of(runs[0]).map(|s| s.name.clone()),
                run_count: runs.len(),
                run_ids,
                operations,
            }),
        });
    }
    items
}

/// Parses a `since` value: an RFC 3339 timestamp.
pub fn parse_since(text: &str) -> Result<Instant, FeedError> {
    Instant::parse(text.trim())
        .map_err(|e| FeedError::invalid("since", format!("{e}; give an RFC 3339 time such as 2026-12-01T00:00:00Z")))
}

/// The events strictly after `since`, oldest first (ties in a fixed order), one page of them.
/// An event whose time cannot be read is left out rather than failing the feed.
pub fn feed_page(events: Vec<FeedItem>, since: Option<&str>, page: &PageRequest) -> Result<FeedPage, FeedError> {
    let since_instant = since.map(parse_since).transpose()?;
    let limit = page.limit()?;
    let after = page
        .cursor
        .as_deref()
        .map(|c| {
            let key = decode_cursor(FEED_CURSOR, c)?;
            let (nanos, rest) = key.split_once('|').unwrap_or(("", ""));
            let nanos: i64 = nanos.parse().map_err(|_| FeedError::invalid("cursor", "not a feed cursor"))?;
            Ok::<_, FeedError>((Instant(nanos), rest.to_string()))
        })
        .transpose()?;
    let mut keyed: Vec<((Instant, String), FeedItem)> = events
        .into_iter()
        .filter_map(|item| {
            let instant = Instant::parse(&item.at).ok()?;
            Some(((instant, item.event.order_key()), item))
        })
        .filter(|((instant, _), _)| since_instant.is_none_or(|since| *instant > since))
        .filter(|(key, _)| after.as_ref().is_none_or(|after| key > after))
        .collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    let more = keyed.len() > limit;
    keyed.truncate(limit);
    let next_cursor = more
        .then(|| keyed.last().map(|((instant, key), _)| encode_cursor(FEED_CURSOR, &format!("{}|{key}", instant.0))))
        .flatten();
    Ok(FeedPage {
        since: since.map(|s| s.trim().to_string()),
        events: keyed.into_iter().map(|(_, item)| item).collect(),
        next_cursor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn correction(at: &str, id: &str) -> FeedItem {
        FeedItem {
            at: at.into(),
            event: FeedEvent::Correction(CorrectionChange {
                correction_id: id.into(),
                action: "retract".into(),
                run_id: "r".into(),
                by_run_id: None,
                reason: "x".into(),
                actor: "a".into(),
            }),
        }
    }

    #[test]
    fn the_feed_pages_oldest_first_strictly_after_since() {
        let events = vec![
            correction("2026-12-01T10:00:00Z", "c3"),
            correction("2026-12-01T09:00:00Z", "c1"),
            correction("2026-12-01T10:00:00Z", "c2"),
            correction("2026-12-01T08:00:00Z", "c0"),
        ];
        let first =
            feed_page(events.clone(), Some("2026-12-01T08:00:00Z"), &PageRequest { cursor: None, limit: Some(2) })
                .unwrap();
        let ids = |page: &FeedPage| -> Vec<String> {
            page.events
                .iter()
                .map(|e| match &e.event {
                    FeedEvent::Correction(c) => c.correction_id.clone(),
                    _ => unreachable!(),
                })
                .collect()
        };
        assert_eq!(ids(&first), ["c1", "c2"]);
        let second = feed_page(
            events.clone(),
            Some("2026-12-01T08:00:00Z"),
            &PageRequest { cursor: first.next_cursor, limit: Some(2) },
        )
        .unwrap();
        assert_eq!(ids(&second), ["c3"]);
        assert_eq!(second.next_cursor, None);
        let err = feed_page(events.clone(), Some("yesterday"), &PageRequest::default()).unwrap_err();
        assert_eq!(err.parameter(), "since");
        let err = feed_page(events.clone(), None, &PageRequest { cursor: Some("zz".into()), limit: None }).unwrap_err();
        assert_eq!(err.parameter(), "cursor");
        // A run-list cursor is not a feed cursor.
        let runs_cursor = encode_cursor(RUN_CURSOR, "x");
        assert!(feed_page(events, None, &PageRequest { cursor: Some(runs_cursor), limit: None }).is_err());
    }

    #[test]
    fn feed_items_carry_their_kind_and_read_back() {
        let item = correction("2026-12-01T10:00:00Z", "c1");
        let json = serde_json::to_value(&item).unwrap();
        assert_eq!(json["kind"], "correction");
        assert_eq!(json["correctionId"], "c1");
        assert_eq!(serde_json::from_value::<FeedItem>(json).unwrap(), item);
    }
}
