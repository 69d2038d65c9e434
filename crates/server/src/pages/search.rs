//! Search (`/?q=` and `GET /api/v1/search`, and `ki search` through the same function): the
//! query grammar of `ki_ranking::query` (words, `filter:value`, `axis=N`). The catalog's search
//! index (`Catalog::search`: SQLite FTS5, PostgreSQL pg_trgm) finds the entries whose text holds
//! every word; the read model holds each entry's runs, which the filters test, and scores them.
//! The answer leads with the ranked answer for the best-matching operation (and the workload
//! its axes name: exact, the groups to choose from, or the nearest measured cases), then the
//! records a run id, prefix, digest or external id names, then operations, implementations,
//! projects and GPUs with their run counts and GPUs, scored: whole-word and exact-name matches
//! first, then the most-run. A word that matches nothing gets "did you mean".

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;

use ki_catalog::{Catalog, CatalogError};
use ki_ranking::query::{Filter, SearchRequest, dtype_short, edit_distance_within, parse_search};
use ki_ranking::{ResolveRequest, ResolveResponse, TrustLevel};
use maud::{Markup, html};
use serde::Serialize;

use crate::model::{ReadModel, SearchEntry, slugify, text};

/// What the search found.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchAnswer<'a> {
    pub query: String,
    /// The query as the grammar read it (with notes on what it could not use).
    pub request: SearchRequest,
    /// The ranked answer for the best-matching operation, under the query's axes, dtypes and GPU:
    /// resolve's answer, ten comparison groups (`omittedCohorts` counts the rest).
    pub answer: Option<ResolveResponse>,
    /// Runs the query names by id, id prefix, digest or external id.
    pub records: Vec<RunHit>,
    /// Best match first.
    pub results: Vec<&'a SearchEntry>,
    /// Results before the limit.
    pub total: usize,
    /// The query with unknown words replaced by the nearest known ones, when that finds more.
    pub did_you_mean: Option<String>,
}

/// A run the query names directly.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunHit {
    pub id: String,
    /// How the query named it: `id`, `digest` or `external id`.
    pub matched_by: String,
    pub label: String,
    pub hardware: String,
    pub href: String,
}

/// Each query word's search entries (indexes into [`crate::model::Tables::search`], ascending)
/// as the catalog's search index found them: a word is looked up in the database once per read
/// model, and a query takes the entries all its words found. A new model (after any write)
/// starts empty, so the lists never outlive the entries they point at. Bounded: emptied when it
/// holds too many words or entries.
#[derive(Debug, Default)]
pub struct WordMatches(std::sync::Mutex<HashMap<String, Arc<[u32]>>>);

/// Most words and most entries (over all words) [`WordMatches`] holds: a few MiB at most.
const MAX_CACHED_WORDS: usize = 4096;
const MAX_CACHED_ENTRIES: usize = 1 << 20;

impl WordMatches {
    fn get(&self, word: &str) -> Option<Arc<[u32]>> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(word).cloned()
    }

    fn insert(&self, word: &str, entries: Arc<[u32]>) {
        let mut words = self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let held: usize = words.values().map(|e| e.len()).sum();
        if words.len() >= MAX_CACHED_WORDS || held + entries.len() > MAX_CACHED_ENTRIES {
            words.clear();
        }
        words.insert(word.to_string(), entries);
    }
}

/// The values `lists` (each ascending) all hold, ascending.
fn common_entries(mut lists: Vec<Arc<[u32]>>) -> Vec<u32> {
    lists.sort_by_key(|list| list.len());
    let Some((shortest, rest)) = lists.split_first() else { return Vec::new() };
    shortest.iter().copied().filter(|entry| rest.iter().all(|list| list.binary_search(entry).is_ok())).collect()
}

/// Runs listed for an id prefix that several runs share.
const MAX_PREFIX_RUNS: usize = 10;

const TRUST_NAMES: [(&str, TrustLevel); 4] = [
    ("reported", TrustLevel::Reported),
    ("reproducible", TrustLevel::Reproducible),
    ("verified", TrustLevel::Verified),
    ("replicated", TrustLevel::Replicated),
];

/// Whether a name holds a filter's value, as text or as a slug (`h200` in "NVIDIA H200").
fn contains(have: &str, wanted: &str) -> bool {
    let have = have.to_lowercase();
    have.contains(wanted) || slugify(&have).contains(&slugify(wanted))
}

/// What the `gpu:` and `source:` filters name, found once per query: GPU models and source ids.
struct KnownMatches<'a> {
    gpus: Option<HashSet<&'a str>>,
    sources: Option<HashSet<&'a str>>,
}

/// The query's words as an entry's score reads them.
struct Words<'a> {
    words: &'a [String],
    /// The words as one name: lower-cased, `_` and `-` as spaces.
    phrase: String,
}

impl<'a> Words<'a> {
    fn new(words: &'a [String]) -> Words<'a> {
        Words { words, phrase: words.join(" ").replace(['_', '-'], " ") }
    }

    /// How well an entry's text matches the words: 3 per whole word, 1 per part of a word, 20
    /// more when the words are exactly one of its names; None when a word is missing.
    fn score(&self, entry: &SearchEntry) -> Option<u32> {
        // Most entries miss a word: test that before splitting the text into words.
        if !self.words.iter().all(|w| entry.haystack.contains(w.as_str())) {
            return None;
        }
        let mut score = 0;
        for word in self.words {
            score += if whole_word_in(&entry.haystack, word) { 3 } else { 1 };
        }
        if !self.words.is_empty() && entry.names.contains(&self.phrase) {
            score += 20;
        }
        Some(score)
    }
}

/// Whether `word` is one of the words of `text` (its runs of alphanumeric characters): an
/// occurrence with no alphanumeric character on either side. Found without splitting the text:
/// the search scores every entry a query's words are in.
fn whole_word_in(text: &str, word: &str) -> bool {
    if word.is_empty() || !word.chars().all(char::is_alphanumeric) {
        return false;
    }
    text.match_indices(word).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + word.len()..].chars().next();
        !before.is_some_and(char::is_alphanumeric) && !after.is_some_and(char::is_alphanumeric)
    })
}

impl ReadModel {
    /// The GPUs and sources the query's `gpu:` and `source:` filters name, found once per query.
    fn known_matches(&self, request: &SearchRequest) -> KnownMatches<'_> {
        let named = |filter: Filter| request.values(filter).next().is_some();
        let gpus = named(Filter::Gpu).then(|| {
            self.runs_by_gpu
                .iter()
                .map(|(name, _)| name.as_str())
                .filter(|name| request.values(Filter::Gpu).all(|g| contains(name, g)))
                .collect()
        });
        let sources = named(Filter::Source).then(|| {
            self.sources
                .rows
                .iter()
                .filter(|src| {
                    request
                        .values(Filter::Source)
                        .all(|s| contains(text(src, "slug"), s) || contains(text(src, "name"), s))
                })
                .map(|src| text(src, "id"))
                .collect()
        });
        KnownMatches { gpus, sources }
    }

    /// A run passes the query's run filters (GPU, architecture, source, trust, licence,
    /// language, installable, dtype), read from the ranking's typed rows.
    fn run_matches(&self, run: usize, request: &SearchRequest, known: &KnownMatches) -> bool {
        let index = &self.judgement;
        let row = &index.runs[run];
        let all = |filter: Filter, test: &dyn Fn(&str) -> bool| request.values(filter).all(test);
        known.gpus.as_ref().is_none_or(|gpus| row.hardware_model.as_deref().is_some_and(|m| gpus.contains(m)))
            && known
                .sources
                .as_ref()
                .is_none_or(|sources| row.source_id.as_deref().is_some_and(|s| sources.contains(s)))
            && all(Filter::Arch, &|a| row.hardware_architecture.as_deref().is_some_and(|h| h.eq_ignore_ascii_case(a)))
            && all(Filter::Trust, &|t| {
                TRUST_NAMES
                    .iter()
                    .find(|(name, _)| *name == t)
                    .is_some_and(|(_, least)| index.facts[run].trust >= *least)
            })
            && all(Filter::License, &|l| {
                index.implementation_of(run).license_expression.as_deref().is_some_and(|e| contains(e, l))
            })
            && all(Filter::Language, &|l| {
                index.implementation_of(run).language.as_deref().is_some_and(|x| x.eq_ignore_ascii_case(l))
            })
            && all(Filter::Installable, &|yes| row.installable == matches!(yes, "yes" | "true" | "1"))
            && all(Filter::Dtype, &|d| {
                let wanted = dtype_short(d);
                index.workload_of(run).dtypes.iter().any(|x| dtype_short(x) == wanted)
            })
    }

    /// An entry passes the query's filters: its own (family, model) and, when the query has
    /// run filters, at least one of its runs passes them all.
    fn entry_matches(&self, entry: &SearchEntry, request: &SearchRequest, known: &KnownMatches) -> bool {
        let run_filters = request.filters.iter().any(|f| !matches!(f.filter, Filter::Family | Filter::Model));
        let own = |filter: Filter| request.values(filter).next().is_some();
        if own(Filter::Family) || own(Filter::Model) {
            let Some(op) = entry.operation else { return false };
            let row = &self.operations.rows[op];
            let family = text(row, "family");
            if !request.values(Filter::Family).all(|f| family.to_lowercase().contains(f)) {
                return false;
            }
            let tags: Vec<String> = row
                .get("tags")
                .and_then(serde_json::Value::as_array)
                .map(|t| t.iter().filter_map(|x| x.as_str()).map(str::to_lowercase).collect())
                .unwrap_or_default();
            let models: Vec<String> = tags.iter().filter_map(|t| t.strip_prefix("model:")).map(slugify).collect();
            if !request.values(Filter::Model).all(|m| models.iter().any(|have| have.contains(&slugify(m)))) {
                return false;
            }
        }
        // No run on a GPU the filter names: nothing to test run by run.
        if let Some(gpus) = &known.gpus
            && !entry.gpus.iter().any(|gpu| gpus.contains(gpu.as_str()))
        {
            return false;
        }
        !run_filters || entry.run_list.iter().any(|&r| self.run_matches(r as usize, request, known))
    }

    /// Whether an operation has every axis of the query at its value: a constant axis of that
    /// value, or a variable one some workload of it was measured at.
    fn fits_axes(&self, op: usize, request: &SearchRequest) -> bool {
        let row = &self.operations.rows[op];
        let Some(axes) = row.get("manifest").and_then(|m| crate::model::pointer(m, &["spec", "axes"])) else {
            return false;
        };
        let same = |a: &serde_json::Value, b: &serde_json::Value| match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => a == b,
        };
        request.axes.iter().all(|(name, wanted)| {
            let Some(axis) = axes.get(name) else { return false };
            if let Some(value) = axis.get("value") {
                return same(value, wanted);
            }
            self.judgement
                .operation_workloads(op)
                .iter()
                .any(|&w| self.judgement.workload_axes(w).get(name).is_some_and(|v| same(v, wanted)))
        })
    }

    /// Runs named by id (or prefix), digest or external id.
    fn run_hits(&self, request: &SearchRequest) -> Vec<RunHit> {
        let mut hits = Vec::new();
        let mut seen = BTreeSet::new();
        for word in &request.words {
            let mut found: Vec<(usize, &str)> = Vec::new();
            match self.judgement.find_run(word) {
                Ok(run) => {
                    let by = if word.contains("sha256") || word.len() == 64 { "digest" } else { "id" };
                    found.push((run, by));
                }
                // A prefix several runs share: the first of them, by id.
                Err(ki_ranking::LookupError::Ambiguous { .. }) => {
                    let runs = self.judgement.runs_with_id_prefix(word).take(MAX_PREFIX_RUNS);
                    found.extend(runs.map(|r| (r, "id prefix")));
                }
                Err(_) => {}
            }
            for &run in self.runs_by_external_id.get(word.as_str()).into_iter().flatten() {
                found.push((run as usize, "external id"));
            }
            for (run, by) in found {
                if seen.insert(run) {
                    let summary = self.run_summary(run);
                    hits.push(RunHit {
                        id: summary.id.clone(),
                        matched_by: by.into(),
                        label: format!("{} · {}", summary.implementation, summary.display),
                        hardware: summary.hardware.clone(),
                        href: summary.href,
                    });
                }
            }
        }
        hits
    }

    /// The entries the catalog's search index finds for the words that pass the filters, best
    /// first: by score (10 more for an operation that fits the axes), operations first, then
    /// the most-run, then by label. An entry the read model does not hold (a row written after
    /// it was built) waits for the next build.
    async fn ranked_entries(
        &self,
        catalog: &Catalog,
        request: &SearchRequest,
    ) -> Result<Vec<(u32, &SearchEntry)>, CatalogError> {
        let known = self.known_matches(request);
        let words = Words::new(&request.words);
        let found: Vec<u32> = if request.words.is_empty() {
            (0..u32::try_from(self.search.len()).expect("fewer than 2^32 search entries")).collect()
        } else {
            let mut lists = Vec::with_capacity(request.words.len());
            for word in &request.words {
                lists.push(self.word_entries(catalog, word).await?);
            }
            common_entries(lists)
        };
        let mut scored: Vec<(u32, &SearchEntry)> = found
            .into_iter()
            .map(|entry| &self.search[entry as usize])
            .filter_map(|e| words.score(e).map(|s| (s, e)))
            .filter(|(_, e)| self.entry_matches(e, request, &known))
            .map(|(s, e)| {
                let fits = !request.axes.is_empty() && e.operation.is_some_and(|op| self.fits_axes(op, request));
                (s + if fits { 10 } else { 0 }, e)
            })
            .collect();
        scored.sort_by(|a, b| {
            b.0.cmp(&a.0)
                .then((a.1.kind != "operation").cmp(&(b.1.kind != "operation")))
                .then(b.1.runs.cmp(&a.1.runs))
                .then(a.1.label.cmp(&b.1.label))
                .then(a.1.kind.cmp(b.1.kind))
                .then(a.1.key.cmp(&b.1.key))
        });
        Ok(scored)
    }

    /// The entries the catalog's search index finds for one word (those this model holds).
    async fn word_entries(&self, catalog: &Catalog, word: &str) -> Result<Arc<[u32]>, CatalogError> {
        if let Some(entries) = self.search_matches.get(word) {
            return Ok(entries);
        }
        let found = catalog.search(&[word.to_string()]).await?;
        let mut entries: Vec<u32> = found
            .into_iter()
            .filter_map(|found| self.search_by_key.get(&(found.kind, found.key)))
            .map(|&entry| entry as u32)
            .collect();
        entries.sort_unstable();
        entries.dedup();
        let entries: Arc<[u32]> = entries.into();
        self.search_matches.insert(word, entries.clone());
        Ok(entries)
    }

    /// The one search: what `/`, `/api/v1/search`, `ki search` and the MCP tool answer. The
    /// catalog's search index finds the words; the read model filters, scores and ranks.
    pub async fn search_answer(
        &self,
        catalog: &Catalog,
        query: &str,
        limit: usize,
    ) -> Result<SearchAnswer<'_>, CatalogError> {
        let request = parse_search(query);
        let records = self.run_hits(&request);
        let ranked = if request.words.is_empty() && request.filters.is_empty() {
            Vec::new()
        } else {
            self.ranked_entries(catalog, &request).await?
        };
        // The best-ranked operation with runs (ranking already puts operations that fit the axes first).
        let answer = ranked
            .iter()
            .find(|(_, e)| e.kind == "operation" && e.runs > 0)
            .and_then(|(_, e)| e.operation)
            // The answer leads the results; the whole list is the resolve form's (one link away).
            .map(|op| self.judgement.resolve(&self.resolve_request(op, &request)));
        let did_you_mean =
            if ranked.is_empty() && records.is_empty() { self.did_you_mean(catalog, &request).await? } else { None };
        let total = ranked.len();
        Ok(SearchAnswer {
            query: query.to_string(),
            answer,
            records,
            results: ranked.into_iter().take(limit).map(|(_, e)| e).collect(),
            total,
            did_you_mean,
            request,
        })
    }

    /// The resolve request a search stands for on one operation.
    fn resolve_request(&self, op: usize, request: &SearchRequest) -> ResolveRequest {
        // The GPU filter names one GPU when one GPU of the index matches it (the most-run on a tie).
        let hardware = request.values(Filter::Gpu).next().and_then(|wanted| {
            self.runs_by_gpu
                .iter()
                .map(|(name, _)| name)
                .find(|name| slugify(name) == slugify(wanted))
                .or_else(|| {
                    self.runs_by_gpu.iter().map(|(name, _)| name).find(|name| slugify(name).contains(&slugify(wanted)))
                })
                .cloned()
        });
        ResolveRequest {
            operation: text(&self.operations.rows[op], "name").to_string(),
            axes: request.axes.clone(),
            dtypes: request.values(Filter::Dtype).map(str::to_string).collect(),
            hardware,
            framework: None,
            limit: None,
        }
    }

    /// The query with each word the search index finds nowhere replaced by the nearest word of
    /// the index's text (at most two edits away, fewer than the word has characters; the first
    /// in code-point order on a tie), when the new query finds something.
    async fn did_you_mean(&self, catalog: &Catalog, request: &SearchRequest) -> Result<Option<String>, CatalogError> {
        let mut changed = false;
        let mut words = Vec::with_capacity(request.words.len());
        for word in &request.words {
            if !catalog.search(std::slice::from_ref(word)).await?.is_empty() {
                words.push(word.clone());
                continue;
            }
            let most = 2.min(word.chars().count().saturating_sub(1));
            let best = self
                .search_vocabulary
                .iter()
                .filter_map(|t| Some((edit_distance_within(word, t, most)?, t.as_str())))
                .min();
            match best {
                Some((_, t)) => {
                    changed = true;
                    words.push(t.to_string());
                }
                None => words.push(word.clone()),
            }
        }
        if !changed {
            return Ok(None);
        }
        let retry = SearchRequest { words: words.clone(), ..request.clone() };
        if self.ranked_entries(catalog, &retry).await?.is_empty() {
            return Ok(None);
        }
        let mut parts = words;
        parts.extend(request.filters.iter().map(|f| format!("{}:{}", f.filter.name(), f.value)));
        parts.extend(request.axes.iter().map(|(k, v)| format!("{k}={}", crate::pages::scalar(v))));
        Ok(Some(parts.join(" ")))
    }
}

/// The search results page (the home page with a query).
pub fn render_results(answer: &SearchAnswer<'_>) -> Markup {
    html! {
        section aria-labelledby="results-h" {
            h2 #results-h { (answer.total) " " (if answer.total == 1 { "result" } else { "results" }) " for “" (answer.query) "”" }
            @for note in &answer.request.notes { p.banner { (note) } }
            @if let Some(suggestion) = &answer.did_you_mean {
                p { "Did you mean " a href={ "/?q=" (crate::pages::percent_encode(suggestion)) } { (suggestion) } "?" }
            }
            @if !answer.records.is_empty() {
                h3 { "Runs named by the query" }
                ul.results { @for r in &answer.records { li {
                    span.badge { "run" } " " a href=(r.href) { (r.label) } " " span.muted { (r.hardware) " · matched by " (r.matched_by) }
                } } }
            }
            @if let Some(resolved) = &answer.answer { (render_answer(resolved)) }
            @if !answer.results.is_empty() {
                h3 { "Matches" }
                ul.results { @for r in &answer.results { li {
                    span.badge { (r.kind) } " " a href=(r.href) { (r.label) } " " span.muted { (r.detail) }
                    @if r.kind != "hardware" {
                        " · " (r.runs) " runs"
                        @if !r.gpus.is_empty() { " on " (r.gpus.iter().take(3).cloned().collect::<Vec<_>>().join(", ")) @if r.gpus.len() > 3 { " and " (r.gpus.len() - 3) " more" } }
                    }
                } } }
            }
        }
    }
}

/// The ranked answer for the best-matching operation, leading the results.
fn render_answer(resolved: &ResolveResponse) -> Markup {
    let Some(operation) = &resolved.operation else { return html! {} };
    let mode = match resolved.mode {
        ki_ranking::ResolveMode::Exact => "the workload you named was measured in one comparison group",
        ki_ranking::ResolveMode::Chooser => {
            "the workload you named was measured in several comparison groups: pick one"
        }
        ki_ranking::ResolveMode::Browse => "the fastest in each comparison group of this operation",
        ki_ranking::ResolveMode::None => "nothing measured matches",
    };
    html! {
        section.answer aria-labelledby="answer-h" {
            h3 #answer-h { "Answer: " a href={ "/operations/" (operation.slug) } { (operation.name) } }
            p.muted { (mode) @if !resolved.request.axes.is_empty() { " (" (resolved.request.axes.iter().map(|(k, v)| format!("{k} = {}", crate::pages::scalar(v))).collect::<Vec<_>>().join(", ")) ")" } "." }
            @for note in &resolved.notes { p.banner { (note) } }
            @if !resolved.cohorts.is_empty() {
                table {
                    caption { "Fastest per comparison group" @if resolved.omitted_cohorts > 0 { " (" (resolved.omitted_cohorts) " more groups not shown)" } }
                    thead { tr { th scope="col" { "workload" } th scope="col" { "GPU" } th scope="col" { "#1" } th scope="col" class="num" { "value" } th scope="col" { "best verified" } } }
                    tbody { @for c in &resolved.cohorts { tr {
                        td { (c.axes.iter().map(|(k, v)| format!("{k} = {}", crate::pages::scalar(v))).collect::<Vec<_>>().join(" · ")) }
                        td { (c.hardware.as_deref().unwrap_or("—")) }
                        td { @if let Some(first) = c.fastest.first() { a href={ "/runs/" (first.run_id) } { (first.implementation) } } }
                        td.num { @if let Some(first) = c.fastest.first() { (ki_model::units::value(first.value, first.unit.as_deref())) } }
                        td { @if let Some(v) = &c.best_verified { a href={ "/runs/" (v.run_id) } { (v.implementation) } } @else { "none" } }
                    } } }
                }
            }
            @if !resolved.nearest.is_empty() {
                p { "Not measured; nearest measured: "
                    (resolved.nearest.iter().map(|n| format!("{} = {} (asked {})", n.axis, crate::pages::scalar(&n.measured), crate::pages::scalar(&n.requested))).collect::<Vec<_>>().join("; ")) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_word_is_a_run_of_letters_and_digits_alone() {
        let split = |text: &str, word: &str| text.split(|c: char| !c.is_alphanumeric()).any(|t| t == word);
        let text = "gqa_paged_decode gqa-paged-decode nvidia h200 décode 0 10 sm_90a";
        for word in [
            "gqa",
            "paged",
            "decode",
            "h200",
            "décode",
            "0",
            "10",
            "sm",
            "90a",
            "code",
            "h2",
            "1",
            "90",
            "gqa_paged",
            "",
            "é",
            "nvidia h200",
        ] {
            assert_eq!(whole_word_in(text, word), split(text, word), "{word:?}");
        }
        assert!(whole_word_in("0", "0") && !whole_word_in("00", "0") && whole_word_in("x 0", "0"));
    }

    #[test]
    fn a_query_takes_the_entries_every_word_found() {
        let list = |entries: &[u32]| -> Arc<[u32]> { entries.into() };
        assert_eq!(common_entries(vec![list(&[1, 4, 7, 9]), list(&[0, 4, 9, 12]), list(&[4, 9])]), [4, 9]);
        assert_eq!(common_entries(vec![list(&[1, 2]), list(&[])]), [] as [u32; 0]);
        assert_eq!(common_entries(vec![list(&[3, 5])]), [3, 5]);
        assert_eq!(common_entries(Vec::new()), [] as [u32; 0]);
    }

    #[test]
    fn the_word_lists_stay_within_their_bound() {
        let matches = WordMatches::default();
        matches.insert("gemm", vec![1, 2, 3].into());
        assert_eq!(matches.get("gemm").as_deref(), Some(&[1, 2, 3][..]));
        assert_eq!(matches.get("gem"), None);
        let big: Arc<[u32]> = (0..MAX_CACHED_ENTRIES as u32 - 1).collect();
        matches.insert("synthetic", big);
        assert_eq!(matches.get("gemm"), None, "over the bound, the earlier words are let go");
        assert_eq!(matches.get("synthetic").map(|e| e.len()), Some(MAX_CACHED_ENTRIES - 1));
        for word in 0..MAX_CACHED_WORDS + 1 {
            matches.insert(&format!("w{word}"), vec![0].into());
        }
        assert!(matches.0.lock().unwrap().len() <= MAX_CACHED_WORDS);
    }
}
