//! Search (`/?q=` and `GET /api/v1/search`, and `ki search` through the same function): plain
//! words read by `ki_ranking::understand` against the read model's lexicon (GPU names and
//! aliases, models in any spelling, dtypes, loose axes, projects, implementations and trust
//! words become filters, each shown as a chip; typos are corrected word by word against the
//! whole lexicon; what matches nothing is named), on top of the grammar of
//! `ki_ranking::query` (`filter:value`, `axis=N`). The catalog's search index (`Catalog::search`:
//! SQLite FTS5, PostgreSQL pg_trgm) finds the entries whose text holds every operation word (or
//! one of the common names it stands for); the read model holds each entry's runs, which the
//! filters test, and scores them. The answer leads with the ranked answer for the best-matching
//! operation, GPU and workload (`ki_ranking::lead`: groups with verified runs first, the
//! evidence filters applied to the groups' runs, the nearest measured workload when the one
//! asked was not measured), then the records a run id, prefix, digest or external id names,
//! then operations, implementations, projects and GPUs with their run counts and GPUs, scored:
//! whole-word and exact-name matches first, then the most-run.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;

use ki_catalog::{Catalog, CatalogError};
use ki_ranking::lead::Lead;
use ki_ranking::query::{Filter, SearchRequest, dtype_short};
use ki_ranking::understand::{Lexicon, LexiconParts, OperationNames, Understood, axis_for, understand};
use ki_ranking::{ResolveRequest, ResolveResponse, TrustLevel};
use maud::{Markup, html};
use serde::Serialize;

use crate::model::{ReadModel, SearchEntry, TermHit, slugify};

/// What the search found.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SearchAnswer<'a> {
    pub query: String,
    /// The query as the grammar and the lexicon read it (with notes on what it could not use).
    pub request: SearchRequest,
    /// What the words were read as: operation terms, filter and axis chips, unknown words,
    /// corrections.
    pub understood: Understood,
    /// The ranked answer for the best-matching operation, under the query's axes, dtypes and GPU,
    /// shaped by `ki_ranking::lead` (verified groups first, the evidence filters applied), ten
    /// comparison groups (`omittedCohorts` counts the rest).
    pub answer: Option<ResolveResponse>,
    /// The head of the answer: its leader (the first group's fastest verified run, else its #1),
    /// the best deployable run, and the axes of the nearest workload that differ from those asked.
    pub lead: Option<Lead>,
    /// Runs the query names by id, id prefix, digest or external id.
    pub records: Vec<RunHit>,
    /// Best match first.
    pub results: Vec<&'a SearchEntry>,
    /// Results before the limit.
    pub total: usize,
    /// The query with every misspelt word corrected (the results are the corrected query's).
    pub did_you_mean: Option<String>,
    /// What the page says when the query asks nothing it can answer (empty, only unknown words).
    pub message: Option<String>,
    /// When nothing matches: the filters whose removal finds something, with the results then.
    pub without_filter: Vec<Relaxed>,
}

/// A filter of a query that matched nothing, and what the query finds without it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Relaxed {
    pub chip: ki_ranking::understand::Chip,
    /// Results of the query without it.
    pub results: usize,
}

/// Filters tried one by one when a query matches nothing.
const MAX_RELAXED: usize = 4;

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

/// The entries a query matches, ranked: the first `limit` of them in order, how many there are,
/// and the best-ranked operation with runs (the one the answer leads with; operations that fit
/// the query's axes rank first).
#[derive(Default)]
struct Ranked<'a> {
    top: Vec<&'a SearchEntry>,
    total: usize,
    lead: Option<usize>,
}

/// The entries every list (each ascending by entry) holds, ascending, with their weights summed.
fn common_entries(mut lists: Vec<Arc<[TermHit]>>) -> Vec<(u32, u32)> {
    lists.sort_by_key(|list| list.len());
    let Some((shortest, rest)) = lists.split_first() else { return Vec::new() };
    shortest
        .iter()
        .filter_map(|hit| {
            let mut weight = u32::from(hit.weight);
            for list in rest {
                let at = list.binary_search_by_key(&hit.entry, |h| h.entry).ok()?;
                weight += u32::from(list[at].weight);
            }
            Some((hit.entry, weight))
        })
        .collect()
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

/// What the `gpu:`, `source:`, `project:`, `language:` and `dtype:` filters name, found once
/// per query: per place ([`crate::model::ClassPlaces`]: a GPU of `runs_by_gpu`, a source, a
/// project of the ranking's, a language, a dtype list), whether the filter takes it.
struct KnownMatches {
    gpus: Option<Vec<bool>>,
    sources: Option<Vec<bool>>,
    projects: Option<Vec<bool>>,
    languages: Option<Vec<bool>>,
    dtype_sets: Option<Vec<bool>>,
    /// Per run class (`ReadModel::run_classes`), whether its runs pass every run filter but
    /// the implementation's, decided when first asked (a query's words find few entries; only
    /// their classes are tested); none when the query has no run filter.
    classes: Option<Vec<std::cell::Cell<ClassVerdict>>>,
    /// The query's run filters are all of one kind among `gpu:`, `project:`, `trust:`,
    /// `language:` and `dtype:`: an entry's own places or best evidence (`entry_matches`) decide
    /// whether some run of it passes, with no class tested.
    entry_places_decide: bool,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum ClassVerdict {
    Untested,
    Passes,
    Fails,
}

/// The query's operation terms as an entry's score reads them: each term is a word and the
/// common names it stands for, any one of which the entry's text must hold.
struct Words<'a> {
    terms: &'a [Vec<String>],
    /// The terms' first words as one name: lower-cased, `_` and `-` as spaces.
    phrase: String,
}

impl<'a> Words<'a> {
    fn new(terms: &'a [Vec<String>]) -> Words<'a> {
        let first: Vec<&str> = terms.iter().filter_map(|t| t.first()).map(String::as_str).collect();
        Words { terms, phrase: first.join(" ").replace(['_', '-'], " ") }
    }

    /// How well an entry's text holds one term: 3 for a whole word, 1 for part of a word (the
    /// best of the term's alternatives); 0 when it holds none.
    fn weight(term: &[String], entry: &SearchEntry) -> u8 {
        // Most entries miss a word: test that before splitting the text into words.
        let found = term.iter().filter(|w| entry.haystack.contains(w.as_str()));
        found.map(|w| if whole_word_in(&entry.haystack, w) { 3 } else { 1 }).max().unwrap_or(0)
    }

    /// An entry's score: the terms' weights (`weights`, summed), 20 more when the words are
    /// exactly one of its names, 2 when one of its names starts with them.
    fn score(&self, weights: u32, entry: &SearchEntry) -> u32 {
        let mut score = weights;
        if !self.terms.is_empty() && entry.names.contains(&self.phrase) {
            score += 20;
        } else if !self.terms.is_empty()
            && entry.names.iter().any(|n| n.strip_prefix(&self.phrase).is_some_and(|rest| rest.starts_with(' ')))
        {
            // A name that starts with the words (`rmsnorm` in `rmsnorm h7168`, not in
            // `fused add rmsnorm h7168`) is closer than one that only holds them.
            score += 2;
        }
        score
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
    fn known_matches(&self, request: &SearchRequest) -> KnownMatches {
        let named = |filter: Filter| request.values(filter).next().is_some();
        let gpus = named(Filter::Gpu).then(|| {
            self.runs_by_gpu.iter().map(|(name, _)| request.values(Filter::Gpu).all(|g| contains(name, g))).collect()
        });
        let projects = named(Filter::Project).then(|| {
            let projects = &self.judgement.projects;
            let exact = |p: &ki_ranking::rows::ProjectRow, wanted: &str| {
                p.name.eq_ignore_ascii_case(wanted) || p.slug.eq_ignore_ascii_case(wanted)
            };
            // A project named exactly as asked is that project; else every project whose name holds it.
            request
                .values(Filter::Project)
                .map(|wanted| -> HashSet<&str> {
                    let exactly: HashSet<&str> =
                        projects.iter().filter(|p| exact(p, wanted)).map(|p| p.id.as_str()).collect();
                    if !exactly.is_empty() {
                        return exactly;
                    }
                    projects
                        .iter()
                        .filter(|p| contains(&p.name, wanted) || contains(&p.slug, wanted))
                        .map(|p| p.id.as_str())
                        .collect()
                })
                .reduce(|a, b| a.intersection(&b).copied().collect())
                .map(|ids| projects.iter().map(|p| ids.contains(p.id.as_str())).collect())
                .unwrap_or_default()
        });
        let sources = named(Filter::Source).then(|| {
            self.judgement
                .sources
                .iter()
                .map(|src| request.values(Filter::Source).all(|s| contains(&src.slug, s) || contains(&src.name, s)))
                .collect()
        });
        let languages = named(Filter::Language).then(|| {
            let takes = |have: &str| request.values(Filter::Language).all(|l| have.eq_ignore_ascii_case(l));
            self.class_languages.iter().map(|language| takes(language)).collect()
        });
        let dtype_sets = named(Filter::Dtype).then(|| {
            let takes = |have: &[String]| {
                request.values(Filter::Dtype).all(|d| {
                    let wanted = dtype_short(d);
                    have.iter().any(|x| dtype_short(x).starts_with(&wanted))
                })
            };
            self.class_dtype_sets.iter().map(|dtypes| takes(dtypes)).collect()
        });
        let run_filters = request.filters.iter().any(|f| !matches!(f.filter, Filter::Family | Filter::Model));
        let classes = run_filters.then(|| vec![std::cell::Cell::new(ClassVerdict::Untested); self.run_classes.len()]);
        let run_filter_kinds: BTreeSet<&str> = request
            .filters
            .iter()
            .filter(|f| !matches!(f.filter, Filter::Family | Filter::Model))
            .map(|f| f.filter.name())
            .collect();
        let entry_places_decide = run_filter_kinds.len() == 1
            && [Filter::Gpu, Filter::Project, Filter::Trust, Filter::Language, Filter::Dtype]
                .iter()
                .any(|f| run_filter_kinds.contains(f.name()));
        KnownMatches { gpus, sources, projects, languages, dtype_sets, classes, entry_places_decide }
    }

    /// Whether the runs of a class pass every run filter but the implementation's.
    fn class_passes(&self, class: u32, request: &SearchRequest, known: &KnownMatches) -> bool {
        let Some(classes) = &known.classes else { return true };
        let verdict = &classes[class as usize];
        if verdict.get() == ClassVerdict::Untested {
            let passes =
                self.run_matches_class(class as usize, self.run_classes[class as usize] as usize, request, known);
            verdict.set(if passes { ClassVerdict::Passes } else { ClassVerdict::Fails });
        }
        verdict.get() == ClassVerdict::Passes
    }

    /// A run passes the query's run filters (GPU, architecture, source, trust, licence,
    /// language, installable, dtype, implementation), read from the ranking's typed rows.
    fn run_matches(&self, run: usize, request: &SearchRequest, known: &KnownMatches) -> bool {
        let implementation = |i: &str| self.judgement.implementation_of(run).slug.to_lowercase().contains(i);
        self.class_passes(self.class_of_run[run], request, known)
            && request.values(Filter::Implementation).all(implementation)
    }

    /// A class's runs pass every run filter but the implementation's (tested on `class`'s
    /// representative `run`).
    fn run_matches_class(&self, class: usize, run: usize, request: &SearchRequest, known: &KnownMatches) -> bool {
        let index = &self.judgement;
        let row = &index.runs[run];
        let places = self.class_places[class];
        let takes = |allowed: &Option<Vec<bool>>, place: u32| {
            allowed.as_ref().is_none_or(|allowed| allowed.get(place as usize).copied().unwrap_or(false))
        };
        let all = |filter: Filter, test: &dyn Fn(&str) -> bool| request.values(filter).all(test);
        takes(&known.gpus, places.gpu)
            && takes(&known.sources, places.source)
            && takes(&known.projects, places.project)
            && takes(&known.languages, places.language)
            && takes(&known.dtype_sets, places.dtypes)
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
            && all(Filter::Installable, &|yes| row.installable == matches!(yes, "yes" | "true" | "1"))
    }

    /// An entry passes the query's filters: its own (family, model) and, when the query has
    /// run filters, at least one of its runs passes them all.
    fn entry_matches(&self, entry: &SearchEntry, request: &SearchRequest, known: &KnownMatches) -> bool {
        let run_filters = request.filters.iter().any(|f| !matches!(f.filter, Filter::Family | Filter::Model));
        let own = |filter: Filter| request.values(filter).next().is_some();
        if own(Filter::Family) || own(Filter::Model) {
            let Some(op) = entry.operation else { return false };
            let row = &self.judgement.operations[op];
            let family = row.family.as_str();
            if !request.values(Filter::Family).all(|f| family.to_lowercase().contains(f)) {
                return false;
            }
            let tags: Vec<String> = row.tags.iter().map(|t| t.to_lowercase()).collect();
            let models: Vec<String> = tags.iter().filter_map(|t| t.strip_prefix("model:")).map(slugify).collect();
            if !request.values(Filter::Model).all(|m| models.iter().any(|have| have.contains(&slugify(m)))) {
                return false;
            }
        }
        // No run on a GPU the filter names: nothing to test run by run.
        if let Some(gpus) = &known.gpus
            && !entry.gpu_ids.iter().any(|&gpu| gpus[gpu as usize])
        {
            return false;
        }
        // Nor in a project the filter names.
        if let Some(projects) = &known.projects
            && !entry.project_ids.iter().any(|&project| projects[project as usize])
        {
            return false;
        }
        // Nor in a language or with dtypes the filters name.
        let takes_any = |allowed: &Option<Vec<bool>>, places: &[u32]| {
            allowed
                .as_ref()
                .is_none_or(|allowed| places.iter().any(|&p| allowed.get(p as usize).copied().unwrap_or(false)))
        };
        if !takes_any(&known.languages, &entry.language_ids) || !takes_any(&known.dtype_sets, &entry.dtype_set_ids) {
            return false;
        }
        // Nor with evidence as good as the trust filter asks.
        let trusted = |t: &str| {
            let least = TRUST_NAMES.iter().find(|(name, _)| *name == t).map(|(_, least)| *least);
            least.is_some_and(|least| entry.best_trust.is_some_and(|best| best >= least))
        };
        if !request.values(Filter::Trust).all(trusted) {
            return false;
        }
        !run_filters || self.some_run_matches(entry, request, known)
    }

    /// Some run behind the entry passes every run filter: one run of each of its classes is
    /// tested, and only with an implementation filter the runs of the entry themselves.
    fn some_run_matches(&self, entry: &SearchEntry, request: &SearchRequest, known: &KnownMatches) -> bool {
        if known.classes.is_none() || known.entry_places_decide {
            return true;
        }
        if !entry.classes.iter().any(|&c| self.class_passes(c, request, known)) {
            return false;
        }
        // Runs of a passing class may still differ in their implementation's slug.
        request.values(Filter::Implementation).next().is_none()
            || self.entry_runs(entry.kind, entry.of).any(|r| self.run_matches(r as usize, request, known))
    }

    /// Whether an operation has every axis of the query (as it spells it, `axis_for`) at its
    /// value: a constant axis of that value, or a variable one some workload of it was measured at.
    fn fits_axes(&self, op: usize, request: &SearchRequest) -> bool {
        let axes = &self.operation_axes[op];
        let same = |a: &serde_json::Value, b: &serde_json::Value| match (a.as_f64(), b.as_f64()) {
            (Some(x), Some(y)) => x == y,
            _ => a == b,
        };
        let names: Vec<&str> = axes.iter().map(|axis| axis.name.as_str()).collect();
        request.axes.iter().all(|(name, wanted)| {
            // The query's axis as this operation spells it (`batch_size` is its `batch`).
            let Some(name) = axis_for(name, &names) else { return false };
            let name = name.as_str();
            let Some(axis) = axes.iter().find(|axis| axis.name == name) else { return false };
            if let Some(value) = &axis.value {
                return same(value, wanted);
            }
            self.judgement
                .operation_workloads(op)
                .iter()
                .any(|&w| self.judgement.workload_axes(w).get(name).is_some_and(|v| same(v, wanted)))
        })
    }

    /// Runs named by id (or prefix), digest or external id.
    fn run_hits(&self, words: &[String]) -> Vec<RunHit> {
        let mut hits = Vec::new();
        let mut seen = BTreeSet::new();
        for word in words {
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

    /// The entries the catalog's search index finds for the terms that pass the filters, best
    /// first: by score (10 more for an operation that fits the axes), operations first, then
    /// the most-run, then by label. An entry the read model does not hold (a row written after
    /// it was built) waits for the next build.
    async fn ranked_entries(
        &self,
        catalog: &Catalog,
        request: &SearchRequest,
        terms: &[Vec<String>],
        limit: usize,
    ) -> Result<Ranked<'_>, CatalogError> {
        let known = self.known_matches(request);
        let words = Words::new(terms);
        let at_places = if terms.is_empty() { self.entries_at_places(&known) } else { None };
        // With no family or model filter, the entries at the query's places are those that match.
        let all_match = at_places.is_some()
            && request.values(Filter::Family).next().is_none()
            && request.values(Filter::Model).next().is_none();
        let found: Vec<(u32, u32)> = if let Some(entries) = at_places {
            entries.into_iter().map(|e| (e, 0)).collect()
        } else if terms.is_empty() {
            (0..u32::try_from(self.search.len()).expect("fewer than 2^32 search entries")).map(|e| (e, 0)).collect()
        } else {
            let mut lists = Vec::with_capacity(terms.len());
            for term in terms {
                lists.push(self.term_hits(catalog, term).await?);
            }
            common_entries(lists)
        };
        let mut scored: Vec<(u32, &SearchEntry)> = found
            .into_iter()
            .map(|(entry, weights)| {
                let entry = &self.search[entry as usize];
                (words.score(weights, entry), entry)
            })
            .filter(|(_, e)| all_match || self.entry_matches(e, request, &known))
            .map(|(s, e)| {
                let fits = !request.axes.is_empty() && e.operation.is_some_and(|op| self.fits_axes(op, request));
                (s + if fits { 10 } else { 0 }, e)
            })
            .collect();
        // `order` is operations first, the most-run, then label, kind and key (`SearchEntry::order`):
        // a total order, so the first `limit` taken by selection are those a full sort puts first.
        let rank = |(score, entry): &(u32, &SearchEntry)| (std::cmp::Reverse(*score), entry.order);
        let total = scored.len();
        let lead = scored
            .iter()
            .filter(|(_, e)| e.kind == "operation" && e.runs > 0)
            .min_by_key(|hit| rank(hit))
            .and_then(|(_, e)| e.operation);
        if limit < scored.len() {
            scored.select_nth_unstable_by_key(limit, rank);
            scored.truncate(limit);
        }
        scored.sort_unstable_by_key(rank);
        Ok(Ranked { top: scored.into_iter().map(|(_, e)| e).collect(), total, lead })
    }

    /// When the query's places decide (`KnownMatches::entry_places_decide`) by GPU, project,
    /// language or dtypes: the entries at a place it takes, ascending, each once (the rest could
    /// not pass `entry_matches`; these all do, but for a family or model filter). None when every
    /// entry must be tested.
    fn entries_at_places(&self, known: &KnownMatches) -> Option<Vec<u32>> {
        if !known.entry_places_decide {
            return None;
        }
        let by = self.search_matches.entries_by_place.get_or_init(|| crate::model::EntriesByPlace::of(&self.search));
        let (taken, lists) = [
            (&known.gpus, &by.gpu),
            (&known.projects, &by.project),
            (&known.languages, &by.language),
            (&known.dtype_sets, &by.dtype_set),
        ]
        .into_iter()
        .find_map(|(taken, lists)| Some((taken.as_ref()?, lists)))?;
        let mut entries: Vec<u32> = lists
            .iter()
            .enumerate()
            .filter(|(place, _)| taken.get(*place).copied().unwrap_or(false))
            .flat_map(|(_, entries)| entries.iter().copied())
            .collect();
        entries.sort_unstable();
        entries.dedup();
        Some(entries)
    }

    /// The entries that hold a term (a word or one of the common names it stands for): those the
    /// catalog's search index found for any of its words whose text holds one, with the weight
    /// of the best; ascending by entry.
    async fn term_hits(&self, catalog: &Catalog, term: &[String]) -> Result<Arc<[TermHit]>, CatalogError> {
        let key = term.join("\n");
        if let Some(hits) = self.search_matches.term(&key) {
            return Ok(hits);
        }
        let mut entries: Vec<u32> = Vec::new();
        for word in term {
            entries.extend(self.word_entries(catalog, word).await?.iter().copied());
        }
        entries.sort_unstable();
        entries.dedup();
        let hits: Arc<[TermHit]> = entries
            .into_iter()
            .map(|entry| TermHit { entry, weight: Words::weight(term, &self.search[entry as usize]) })
            .filter(|hit| hit.weight > 0)
            .collect();
        self.search_matches.insert_term(&key, hits.clone());
        Ok(hits)
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

    /// The lexicon the query's words are read with: the catalog's names, gathered once per read
    /// model (operations with their aliases, families, `model:` tags and axes; GPUs; projects;
    /// implementations; languages).
    pub fn lexicon(&self) -> &Lexicon {
        self.search_matches.lexicon.get_or_init(|| {
            let index = &self.judgement;
            let operations = index
                .operations
                .iter()
                .enumerate()
                .map(|(op, row)| OperationNames {
                    name: &row.name,
                    slug: &row.slug,
                    family: row.family.as_str(),
                    aliases: self.aliases_by_operation.get(&op).into_iter().flatten().map(String::as_str).collect(),
                    models: row.tags.iter().filter_map(|t| t.strip_prefix("model:")).collect(),
                    axes: self.operation_axes[op].iter().map(|axis| axis.name.as_str()).collect(),
                })
                .collect();
            let languages: BTreeSet<&str> = index.implementations.iter().map(|i| i.language.as_str()).collect();
            Lexicon::new(&LexiconParts {
                operations,
                gpus: self.runs_by_gpu.iter().map(|(gpu, _)| gpu.as_str()).collect(),
                projects: index.projects.iter().map(|p| (p.name.as_str(), p.slug.as_str())).collect(),
                implementations: index.implementations.iter().map(|i| i.slug.as_str()).collect(),
                languages: languages.into_iter().collect(),
            })
        })
    }

    /// The one search: what `/`, `/api/v1/search`, `ki search` and the MCP tool answer. The
    /// lexicon reads the words; the catalog's search index finds the operation words; the read
    /// model filters, scores and ranks, and the ranking shapes the answer it leads with.
    pub async fn search_answer(
        &self,
        catalog: &Catalog,
        query: &str,
        limit: usize,
    ) -> Result<SearchAnswer<'_>, CatalogError> {
        let mut understood = understand(query, self.lexicon());
        self.search_unknown_words(catalog, &mut understood).await?;
        let request = understood.request.clone();
        let records = self.run_hits(&understood.identifiers);
        let asks = !understood.terms.is_empty() || !request.filters.is_empty();
        let ranked = if asks {
            self.ranked_entries(catalog, &request, &understood.terms, limit).await?
        } else {
            Ranked::default()
        };
        let (answer, lead) = match ranked.lead {
            Some(op) => {
                let (answer, lead) = self.lead_answer(op, &request);
                (Some(answer), Some(lead))
            }
            None => (None, None),
        };
        let message = if query.trim().is_empty() {
            Some("Type an operation, a GPU, a model or a run id: “rmsnorm h200”, “llama 3.1 8b”.".to_string())
        } else if !asks && records.is_empty() && !understood.unknown.is_empty() {
            Some(format!("No operation, GPU, model, dtype or project is named “{}”.", understood.unknown.join("”, “")))
        } else if !asks && records.is_empty() && !request.axes.is_empty() {
            Some("Axes alone answer nothing: name the operation, a GPU or a model too.".to_string())
        } else {
            None
        };
        // Nothing matched: which filter, removed, finds something (the words' lists are cached).
        let mut without_filter = Vec::new();
        if ranked.total == 0 && asks {
            for chip in understood.chips.iter().filter(|c| c.kind != "axis").take(MAX_RELAXED) {
                let Some(at) = request.filters.iter().position(|f| f.filter.name() == chip.kind) else { continue };
                let mut fewer = request.clone();
                fewer.filters.remove(at);
                if fewer.filters.is_empty() && understood.terms.is_empty() {
                    continue;
                }
                let results = self.ranked_entries(catalog, &fewer, &understood.terms, 0).await?.total;
                if results > 0 {
                    without_filter.push(Relaxed { chip: chip.clone(), results });
                }
            }
        }
        let message = match message {
            None if ranked.total == 0 && records.is_empty() && asks => Some(if without_filter.is_empty() {
                "Nothing the index holds matches all of these words.".to_string()
            } else {
                "Nothing the index holds matches all of this; without one of its filters it finds:".to_string()
            }),
            message => message,
        };
        let total = ranked.total;
        Ok(SearchAnswer {
            without_filter,
            query: query.to_string(),
            did_you_mean: understood.corrected.clone(),
            answer,
            lead,
            records,
            results: ranked.top,
            total,
            message,
            request,
            understood,
        })
    }

    /// A word the lexicon does not know but some entry's text holds (part of an implementation's
    /// slug, `kernelindex-native`; a word of a title) is searched for as it stands, as every word
    /// was before the lexicon; a word with operators, quotes or brackets stays unknown.
    async fn search_unknown_words(&self, catalog: &Catalog, understood: &mut Understood) -> Result<(), CatalogError> {
        let mut unknown = Vec::new();
        for typed in std::mem::take(&mut understood.unknown) {
            let word = typed.to_lowercase();
            let length = word.chars().count();
            let plain = (3..=ki_ranking::understand::MAX_WORD_CHARS).contains(&length)
                && word.chars().all(|c| c.is_alphanumeric() || "_-.+".contains(c));
            if plain && !self.word_entries(catalog, &word).await?.is_empty() {
                understood.request.words.push(word.clone());
                understood.terms.push(vec![word]);
            } else {
                unknown.push(typed);
            }
        }
        understood.unknown = unknown;
        Ok(())
    }

    /// The answer a search leads with on one operation: resolve under the query's GPU, axes and
    /// dtypes, shaped by the ranking (`Index::resolve_lead`) with the query's evidence filters.
    fn lead_answer(&self, op: usize, request: &SearchRequest) -> (ResolveResponse, Lead) {
        let (resolve, ignored) = self.resolve_request(op, request);
        let evidence =
            request.filters.iter().any(|f| !matches!(f.filter, Filter::Gpu | Filter::Model | Filter::Family));
        let (mut answer, lead) = if evidence {
            // Its own `KnownMatches`, not `ranked_entries`': the class verdicts it memoises are
            // `Cell`s, which no reference may carry across that function's catalog awaits.
            let known = self.known_matches(request);
            let keep = |run: usize| self.run_matches(run, request, &known);
            self.judgement.resolve_lead(&resolve, Some(&keep), ANSWER_GROUPS)
        } else {
            self.judgement.resolve_lead(&resolve, None, ANSWER_GROUPS)
        };
        if !ignored.is_empty() {
            answer.notes.push(format!("{} has no {}: not applied", answer_name(&answer), ignored.join(", ")));
        }
        (answer, lead)
    }

    /// The resolve request a search stands for on one operation, and the query's axes it
    /// leaves out because the operation has no such axis.
    fn resolve_request(&self, op: usize, request: &SearchRequest) -> (ResolveRequest, Vec<String>) {
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
        let workloads = self.judgement.operation_workloads(op);
        // The operation's axes: declared, and those its workloads name.
        let mut own: BTreeSet<&str> = self.operation_axes[op].iter().map(|axis| axis.name.as_str()).collect();
        own.extend(workloads.iter().flat_map(|&w| self.judgement.workload_axes(w).keys().map(String::as_str)));
        let own: Vec<&str> = own.into_iter().collect();
        // Each of the query's axes as this operation spells it (`batch_size` is its `batch`).
        let (mut axes, mut ignored) = (std::collections::BTreeMap::new(), Vec::new());
        for (name, value) in &request.axes {
            match axis_for(name, &own) {
                Some(axis) => {
                    axes.insert(axis, value.clone());
                }
                None => ignored.push((name, value)),
            }
        }
        // A dtype as the operation's workloads spell it (`fp8` is their `fp8_e4m3`).
        let dtypes = request
            .values(Filter::Dtype)
            .map(|wanted| {
                let wanted = dtype_short(wanted);
                workloads
                    .iter()
                    .flat_map(|&w| &self.judgement.workloads[w].dtypes)
                    .find(|d| dtype_short(d).starts_with(&wanted))
                    .cloned()
                    .unwrap_or(wanted)
            })
            .collect();
        let resolve = ResolveRequest {
            operation: self.judgement.operations[op].name.clone(),
            axes,
            dtypes,
            hardware,
            framework: None,
            // Enough groups for the evidence filters and the verified-first order to choose from.
            limit: Some(ki_ranking::resolve::MAX_COHORTS_PER_ANSWER),
        };
        (resolve, ignored.into_iter().map(|(k, v)| format!("{k} = {}", crate::model::scalar(v))).collect())
    }
}

/// Comparison groups the search's answer lists.
const ANSWER_GROUPS: usize = 10;

fn answer_name(answer: &ResolveResponse) -> &str {
    answer.operation.as_ref().map_or("the operation", |o| o.name.as_str())
}

/// The search results page (the home page with a query).
pub fn render_results(answer: &SearchAnswer<'_>) -> Markup {
    let understood = &answer.understood;
    let href = |query: &str| format!("/?q={}", crate::model::percent_encode(query));
    html! {
        section aria-labelledby="results-h" {
            h2 #results-h { (answer.total) " " (if answer.total == 1 { "result" } else { "results" }) " for “" (answer.query) "”" }
            @if let Some(message) = &answer.message { p.banner role="status" { (message) } }
            @for note in &answer.request.notes { p.banner { (note) } }
            @if let Some(suggestion) = &answer.did_you_mean {
                p #did-you-mean { "Did you mean " a href=(href(suggestion)) { (suggestion) } "? Showing results for it." }
            }
            @if !understood.chips.is_empty() || !understood.terms.is_empty() {
                p #understood {
                    "Read as: "
                    @for term in &understood.terms { span.badge { (term.join(" or ")) } " " }
                    @for chip in &understood.chips {
                        a.chip href=(href(&chip.without)) title={ "Remove " (chip.typed) } aria-label={ "Remove " (chip.kind) " " (chip.label) } {
                            span.muted { (chip.kind) ": " } (chip.label) " ×"
                        } " "
                    }
                }
            }
            @for relaxed in &answer.without_filter {
                p.banner { "Without " (relaxed.chip.kind) " " (relaxed.chip.label) ": " a href=(href(&relaxed.chip.without)) { (relaxed.results) " results" } "." }
            }
            @if !understood.unknown.is_empty() {
                p #unknown { "Matched nothing: " (understood.unknown.iter().map(|w| format!("“{w}”")).collect::<Vec<_>>().join(", ")) "." }
            }
            @if !answer.records.is_empty() {
                h3 { "Runs named by the query" }
                ul.results { @for r in &answer.records { li {
                    span.badge { "run" } " " a href=(r.href) { (r.label) } " " span.muted { (r.hardware) " · matched by " (r.matched_by) }
                } } }
            }
            @if let (Some(resolved), Some(lead)) = (&answer.answer, &answer.lead) { (render_answer(resolved, lead)) }
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

/// A run's implementation, linked, with its value.
fn run_cell(run: &Option<ki_ranking::RunSummary>) -> Markup {
    match run {
        Some(r) => html! {
            a href={ "/runs/" (r.run_id) } { (r.implementation) } " "
            span.value { (ki_model::units::value(r.value, r.unit.as_deref())) } " "
            (crate::pages::evidence_badge(&crate::model::code_of(&r.trust)))
        },
        None => html! { span.muted { "none" } },
    }
}

/// The statistic a group's values are, and which way is better: "median latency, lower is better".
fn statistic_of(c: &ki_ranking::CohortView) -> String {
    let statistic = [c.statistic.as_deref(), c.metric.as_deref()].into_iter().flatten().collect::<Vec<_>>().join(" ");
    let direction = match c.direction {
        ki_ranking::Direction::LowerIsBetter => "lower is better",
        ki_ranking::Direction::HigherIsBetter => "higher is better",
    };
    if statistic.is_empty() { direction.to_string() } else { format!("{statistic}, {direction}") }
}

/// The ranked answer for the best-matching operation, leading the results.
fn render_answer(resolved: &ResolveResponse, lead: &Lead) -> Markup {
    let Some(operation) = &resolved.operation else { return html! {} };
    let axes_text = |axes: &std::collections::BTreeMap<String, serde_json::Value>| {
        axes.iter().map(|(k, v)| format!("{k} = {}", crate::model::scalar(v))).collect::<Vec<_>>().join(" · ")
    };
    let mode = if !lead.differs.is_empty() {
        "the workload you named was not measured; this is the nearest measured one"
    } else {
        match resolved.mode {
            ki_ranking::ResolveMode::Exact => "the workload you named, measured in one comparison group",
            ki_ranking::ResolveMode::Chooser => "the workload you named, measured in several comparison groups",
            ki_ranking::ResolveMode::Browse => "the fastest in each comparison group of this operation",
            ki_ranking::ResolveMode::None => "nothing measured matches",
        }
    };
    let first = resolved.cohorts.first();
    // The statistic and its direction, in the header when every group shares them (else per row).
    let shared = first.map(statistic_of).filter(|s| resolved.cohorts.iter().all(|c| statistic_of(c) == *s));
    html! {
        section.answer #answer aria-labelledby="answer-h" {
            h3 #answer-h { "Answer: " a href={ "/operations/" (operation.slug) } { (operation.name) }
                @if let Some(gpu) = first.and_then(|c| c.hardware.as_deref()) { " on " (gpu) } }
            p.muted { (mode) @if !resolved.request.axes.is_empty() { " (asked: " (axes_text(&resolved.request.axes)) ")" } "." }
            @for d in &lead.differs {
                p.banner #differs { "Not measured at " (d.axis) " = " (crate::model::scalar(&d.asked)) "; nearest measured: " (d.axis) " = " (crate::model::scalar(&d.measured)) "." }
            }
            @if let (Some(leader), Some(c)) = (&lead.leader, first) {
                p #leader { strong { "Leader: " } a href={ "/runs/" (leader.run_id) } { (leader.implementation) } " · "
                    span.value { (ki_model::units::value(leader.value, leader.unit.as_deref())) } " (" (statistic_of(c)) ") · "
                    (crate::pages::evidence_badge(&crate::model::code_of(&leader.trust)))
                    @if let Some(f) = &lead.fastest { " · fastest whatever its evidence: " a href={ "/runs/" (f.run_id) } { (f.implementation) } " " span.value { (ki_model::units::value(f.value, f.unit.as_deref())) } " " (crate::pages::evidence_badge(&crate::model::code_of(&f.trust))) }
                    " · " (crate::pages::deployable_beside(lead.fastest.as_ref().or(Some(leader)).map(Into::into), lead.best_deployable.as_ref().map(Into::into)))
                }
            }
            @for note in &resolved.notes { p.banner { (note) } }
            @if !resolved.cohorts.is_empty() {
                // A leaderboard of groups: on a phone the workload and its fastest verified run
                // (implementation, value, evidence) fit the screen; the other columns are `opt`.
                table.leaderboard #answer-table {
                    caption { "Fastest per comparison group, verified first" @if resolved.omitted_cohorts > 0 { " (" (resolved.omitted_cohorts) " more groups not shown)" } }
                    thead { tr {
                        th scope="col" { "workload" } th scope="col" class="opt" { "GPU" }
                        @for (i, heading) in ["fastest verified", "best deployable", "#1 (any evidence)"].into_iter().enumerate() {
                            th scope="col" class=[(i > 0).then_some("opt")] { (heading) @if let Some(statistic) = &shared { br; span.muted { (statistic) } } }
                        }
                        @if shared.is_none() { th scope="col" class="opt" { "statistic" } }
                    } }
                    tbody { @for c in &resolved.cohorts { tr {
                        td { (axes_text(&c.axes)) }
                        td.opt { (c.hardware.as_deref().unwrap_or("—")) }
                        td { (run_cell(&c.best_verified)) }
                        td.opt { (run_cell(&c.best_deployable)) }
                        td.opt { (run_cell(&c.fastest.first().cloned())) }
                        @if shared.is_none() { td.opt { (statistic_of(c)) } }
                    } } }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Testing one run per class decides every entry as testing each of its runs does, on the
    /// bundled catalog, for queries of every run filter (and some entries pass, some do not).
    #[test]
    fn run_classes_decide_as_every_run_does() {
        let rows: Vec<crate::CatalogRow> = ki_catalog::read_bundled_snapshot()
            .unwrap()
            .into_iter()
            .map(|l| crate::CatalogRow { table: l.table, row: l.row })
            .collect();
        let model = ReadModel::build(rows).unwrap();
        assert!(model.run_classes.len() < model.judgement.runs.len() / 4, "{} classes", model.run_classes.len());
        let mut places_decided = 0;
        for query in [
            "flashinfer h200",
            "gpu:h200 trust:verified",
            "gpu:h100 trust:reported",
            "trust:reproducible b200",
            "language:python",
            "language:cuda gpu:h200",
            "license:apache",
            "dtype:fp8",
            "dtype:bf16 installable:yes",
            "installable:no h100",
            "source:flashinfer",
            "arch:sm_100",
            "implementation:gpt h200",
            "implementation:native trust:verified",
            "project:flashinfer",
            "project:flashinfer gpu:h200",
            "gpu:b200",
            "trust:verified",
            "trust:reproducible",
            "trust:verified trust:reported",
            "language:cuda",
            "cuda",
            "dtype:bf16",
            "fp8 h200",
        ] {
            let request = understand(query, model.lexicon()).request;
            let known = model.known_matches(&request);
            assert!(known.classes.is_some(), "{query}: no run filter read");
            let at_places = model.entries_at_places(&known);
            places_decided += usize::from(at_places.is_some());
            let (mut passed, mut refused) = (0, 0);
            for (at, entry) in model.search.iter().enumerate() {
                // None of these queries has a family or model filter: an entry matches when some run does.
                let by_class = model.entry_matches(entry, &request, &known);
                let by_run =
                    model.entry_runs(entry.kind, entry.of).any(|r| model.run_matches(r as usize, &request, &known));
                assert_eq!(by_class, by_run, "{query}: {} {}", entry.kind, entry.label);
                // The entries at the query's places, where they decide, are those that match.
                if let Some(at_places) = &at_places {
                    assert_eq!(at_places.binary_search(&(at as u32)).is_ok(), by_run, "{query}: {}", entry.label);
                }
                if by_run {
                    passed += 1;
                } else {
                    refused += 1;
                }
            }
            assert!(passed > 0 && refused > 0, "{query}: {passed} entries pass, {refused} do not");
        }
        assert!(places_decided >= 7, "{places_decided} queries read the entries at their places");
    }

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
        let list = |entries: &[(u32, u8)]| -> Arc<[TermHit]> {
            entries.iter().map(|&(entry, weight)| TermHit { entry, weight }).collect()
        };
        let lists = vec![
            list(&[(1, 1), (4, 3), (7, 1), (9, 1)]),
            list(&[(0, 3), (4, 1), (9, 3), (12, 1)]),
            list(&[(4, 3), (9, 1)]),
        ];
        assert_eq!(common_entries(lists), [(4, 7), (9, 5)]);
        assert_eq!(common_entries(vec![list(&[(1, 3), (2, 3)]), list(&[])]), []);
        assert_eq!(common_entries(vec![list(&[(3, 1), (5, 3)])]), [(3, 1), (5, 3)]);
        assert_eq!(common_entries(Vec::new()), []);
    }
}
