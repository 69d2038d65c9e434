//! The search index (migration 0007): one `search_entries` row per thing the search box finds —
//! an operation (name, slug, family, aliases), an implementation (slug, title), a project (name,
//! slug), a GPU model runs name — and `search_terms`, the words of that text, for "did you mean".
//!
//! A query's words are found as substrings of an entry's lower-cased text, through a trigram
//! index on each backend: SQLite FTS5 (`tokenize = 'trigram'`; a word is a quoted FTS5 string,
//! so `"`, `*`, `NEAR` or `:` in it are text, never query syntax) and PostgreSQL pg_trgm (GIN,
//! `LIKE` with `%`, `_` and `\` escaped). Words shorter than a trigram are found by `instr` /
//! `strpos`. Both backends hold the same text (lower-cased here, not by SQL functions that
//! differ between them) and every match is exact, so they find the same entries; scores and
//! order are computed here from what they return, so the candidates come back identically
//! ordered on both.
//!
//! Kept current by the import's writer, in the transaction that writes the rows it derives
//! from ([`refresh`]); filled for an existing catalog by the migration ([`rebuild`]).

use std::collections::BTreeSet;

use ki_ranking::query::edit_distance;
use serde_json::{Map, Value};

use crate::Catalog;
use crate::error::{CatalogError, DbContext, Result};
use crate::rows::{self, SqlValue, Storage};
use crate::schema;
use crate::store::{self, Backend, Pool, Session};

/// The migration that creates the index; applying it fills the index.
pub(crate) const MIGRATION_VERSION: i64 = 7;

/// Words of an entry's text shorter than this are not suggested.
const MIN_TERM_CHARS: usize = 3;
/// A suggestion is at most this many single-character edits from the word.
const MAX_SUGGESTION_EDITS: usize = 2;
/// Entries written per INSERT (7 parameters each).
const ENTRIES_PER_INSERT: usize = 400;
/// Terms written per INSERT (2 parameters each).
const TERMS_PER_INSERT: usize = 1000;

/// An entry the words matched, as the index holds it, with its score.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchCandidate {
    /// `operation`, `implementation`, `project` or `hardware`.
    pub kind: String,
    /// The row's id; for `hardware`, the GPU model.
    pub key: String,
    pub label: String,
    /// The operation's family, the implementation's title, the project's slug; empty for a GPU.
    pub detail: String,
    pub href: String,
    /// 3 per word found whole in the text, 1 per word found inside another, 20 more when the
    /// words are exactly one of the entry's names.
    pub score: u32,
}

/// One row of `search_entries`, derived from the export tables.
#[derive(Debug, Clone, PartialEq)]
struct IndexEntry {
    kind: &'static str,
    key: String,
    label: String,
    detail: String,
    href: String,
    haystack: String,
    names: Vec<String>,
}

/// A name as an exact match compares it: lower-cased, `_` and `-` as spaces.
fn spaced(name: &str) -> String {
    name.to_lowercase().replace(['_', '-'], " ")
}

fn text<'a>(row: &'a Map<String, Value>, column: &str) -> &'a str {
    row.get(column).and_then(Value::as_str).unwrap_or("")
}

fn operation_entries(operations: &[Map<String, Value>], aliases: &[Map<String, Value>]) -> Vec<IndexEntry> {
    operations
        .iter()
        .map(|op| {
            let id = text(op, "id");
            let own: Vec<&str> =
                aliases.iter().filter(|a| text(a, "operationId") == id).map(|a| text(a, "alias")).collect();
            let mut haystack = format!("{} {} {}", text(op, "name"), text(op, "slug"), text(op, "family"));
            for alias in &own {
                haystack.push(' ');
                haystack.push_str(alias);
            }
            let mut names = vec![spaced(text(op, "name")), spaced(text(op, "slug"))];
            names.extend(own.iter().map(|a| spaced(a)));
            let title = op
                .get("manifest")
                .and_then(|m| m.get("metadata"))
                .and_then(|m| m.get("title"))
                .and_then(Value::as_str)
                .unwrap_or_else(|| text(op, "name"));
            IndexEntry {
                kind: "operation",
                key: id.to_string(),
                label: title.to_string(),
                detail: text(op, "family").to_string(),
                href: format!("/operations/{}", text(op, "slug")),
                haystack: haystack.to_lowercase(),
                names,
            }
        })
        .collect()
}

fn implementation_entry(imp: &Map<String, Value>) -> IndexEntry {
    IndexEntry {
        kind: "implementation",
        key: text(imp, "id").to_string(),
        label: text(imp, "slug").to_string(),
        detail: text(imp, "title").to_string(),
        href: format!("/implementations/{}", text(imp, "slug")),
        haystack: format!("{} {}", text(imp, "slug"), text(imp, "title")).to_lowercase(),
        names: vec![spaced(text(imp, "slug"))],
    }
}

fn project_entry(project: &Map<String, Value>) -> IndexEntry {
    IndexEntry {
        kind: "project",
        key: text(project, "id").to_string(),
        label: text(project, "name").to_string(),
        detail: text(project, "slug").to_string(),
        href: format!("/projects/{}", text(project, "slug")),
        haystack: format!("{} {}", text(project, "name"), text(project, "slug")).to_lowercase(),
        names: vec![spaced(text(project, "name")), spaced(text(project, "slug"))],
    }
}

fn hardware_entry(gpu: &str) -> IndexEntry {
    IndexEntry {
        kind: "hardware",
        key: gpu.to_string(),
        label: gpu.to_string(),
        detail: String::new(),
        href: format!("/gpus/{}", ki_model::slug::slug(gpu)),
        haystack: gpu.to_lowercase(),
        names: vec![spaced(gpu)],
    }
}

/// The words of an entry's text that "did you mean" may offer.
fn terms(haystack: &str) -> impl Iterator<Item = &str> {
    haystack.split(|c: char| !c.is_alphanumeric()).filter(|t| t.chars().count() >= MIN_TERM_CHARS)
}

/// How well an entry's text matches the words (see [`SearchCandidate::score`]).
fn score(haystack: &str, names: &str, words: &[String]) -> u32 {
    let mut score = 0;
    for word in words {
        let whole = haystack.split(|c: char| !c.is_alphanumeric()).any(|t| t == word);
        score += if whole { 3 } else { 1 };
    }
    let phrase = words.join(" ").replace(['_', '-'], " ");
    if !words.is_empty() && names.split('\n').any(|name| name == phrase) {
        score += 20;
    }
    score
}

/// Every row of an export table, in arrival order, read inside `session`.
async fn table_rows(session: &mut Session, name: &str) -> Result<Vec<Map<String, Value>>> {
    let spec = schema::table(name).ok_or_else(|| CatalogError::Corrupt(format!("no table {name}")))?;
    let sql = format!("SELECT {} FROM {} ORDER BY seq", store::select_list(session.backend(), spec), spec.name);
    let storages = store::storages(spec.columns.iter().map(|column| column.kind));
    let mut found = Vec::new();
    session
        .for_each(&sql, &[], &storages, |values| {
            found.push(rows::to_json_row(spec, &values).map_err(CatalogError::Corrupt)?);
            Ok::<(), CatalogError>(())
        })
        .await?;
    Ok(found)
}

/// Placeholders `(?, ?, …), (…)` or `($1, $2, …), (…)` for `rows` rows of `columns` values.
fn values_list(backend: Backend, rows: usize, columns: usize) -> String {
    let mut number = 0;
    let row = |number: &mut usize| {
        let parts: Vec<String> = (0..columns)
            .map(|_| {
                *number += 1;
                match backend {
                    Backend::Sqlite => "?".to_string(),
                    Backend::Postgres => format!("${number}"),
                }
            })
            .collect();
        format!("({})", parts.join(", "))
    };
    (0..rows).map(|_| row(&mut number)).collect::<Vec<_>>().join(", ")
}

/// Writes entries (skipping any already held) and their terms.
async fn write_entries(session: &mut Session, entries: &[IndexEntry]) -> Result<()> {
    let backend = session.backend();
    for batch in entries.chunks(ENTRIES_PER_INSERT) {
        let sql = format!(
            "INSERT INTO search_entries (kind, entry_key, label, detail, href, haystack, names) VALUES {} \
             ON CONFLICT (kind, entry_key) DO NOTHING",
            values_list(backend, batch.len(), 7)
        );
        let params: Vec<SqlValue> = batch
            .iter()
            .flat_map(|e| {
                let names = e.names.join("\n");
                [
                    e.kind,
                    e.key.as_str(),
                    e.label.as_str(),
                    e.detail.as_str(),
                    e.href.as_str(),
                    e.haystack.as_str(),
                    names.as_str(),
                ]
                .map(|value| SqlValue::Text(Some(value.to_string())))
            })
            .collect();
        session.execute(&sql, &params).await.context(|| "cannot write the search index".into())?;
    }
    let words: BTreeSet<&str> = entries.iter().flat_map(|e| terms(&e.haystack)).collect();
    let words: Vec<&str> = words.into_iter().collect();
    for batch in words.chunks(TERMS_PER_INSERT) {
        let sql = format!(
            "INSERT INTO search_terms (term, length) VALUES {} ON CONFLICT (term) DO NOTHING",
            values_list(backend, batch.len(), 2)
        );
        let params: Vec<SqlValue> = batch
            .iter()
            .flat_map(|t| [SqlValue::Text(Some(t.to_string())), SqlValue::Int(Some(t.chars().count() as i64))])
            .collect();
        session.execute(&sql, &params).await.context(|| "cannot write the search vocabulary".into())?;
    }
    Ok(())
}

/// Rewrites the entries of operations, implementations and projects from their tables.
async fn rebuild_text_entries(session: &mut Session) -> Result<()> {
    let operations = table_rows(session, "operations").await?;
    let aliases = table_rows(session, "operation_aliases").await?;
    let mut entries = operation_entries(&operations, &aliases);
    entries.extend(table_rows(session, "implementations").await?.iter().map(implementation_entry));
    entries.extend(table_rows(session, "projects").await?.iter().map(project_entry));
    session
        .execute("DELETE FROM search_entries WHERE kind <> 'hardware'", &[])
        .await
        .context(|| "cannot clear the search index".into())?;
    write_entries(session, &entries).await
}

/// Fills the index from every table (the migration that creates it calls this).
pub(crate) async fn rebuild(session: &mut Session) -> Result<()> {
    rebuild_text_entries(session).await?;
    let gpus = session
        .fetch_all(
            "SELECT DISTINCT hardware_model FROM benchmark_runs WHERE hardware_model IS NOT NULL",
            &[],
            &[Storage::Text],
        )
        .await
        .context(|| "cannot read the runs' GPUs".into())?;
    let gpus: BTreeSet<String> =
        gpus.into_iter().filter_map(|row| row.into_iter().next()?.as_text().map(str::to_string)).collect();
    index_gpus(session, &gpus).await
}

async fn index_gpus(session: &mut Session, gpus: &BTreeSet<String>) -> Result<()> {
    let entries: Vec<IndexEntry> = gpus.iter().filter(|gpu| !gpu.is_empty()).map(|gpu| hardware_entry(gpu)).collect();
    write_entries(session, &entries).await
}

/// What a write added that the index derives from.
#[derive(Debug, Default)]
pub(crate) struct NewRows {
    /// New operations, aliases, implementations or projects.
    pub text_changed: bool,
    /// The GPU models of new runs.
    pub gpus: BTreeSet<String>,
}

/// Brings the index up to date with rows the caller's write transaction added.
pub(crate) async fn refresh(session: &mut Session, new: &NewRows) -> Result<()> {
    if new.text_changed {
        rebuild_text_entries(session).await?;
    }
    index_gpus(session, &new.gpus).await
}

/// The condition that an entry holds `word` (parameter `number`), and its bound value.
fn word_condition(backend: Backend, number: usize, word: &str) -> (String, SqlValue) {
    match backend {
        Backend::Sqlite if word.chars().count() >= 3 => (
            "e.rowid IN (SELECT rowid FROM search_entries_text WHERE search_entries_text MATCH ?)".to_string(),
            // An FTS5 string: the whole word is text, its quotes doubled.
            SqlValue::Text(Some(format!("\"{}\"", word.replace('"', "\"\"")))),
        ),
        Backend::Sqlite => ("instr(e.haystack, ?) > 0".to_string(), SqlValue::Text(Some(word.to_string()))),
        Backend::Postgres => {
            let escaped = word.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_");
            (format!("e.haystack LIKE ${number} ESCAPE '\\'"), SqlValue::Text(Some(format!("%{escaped}%"))))
        }
    }
}

/// An entry's columns as [`matching`] reads them: kind, key, label, detail, href, haystack, names.
type EntryText = [String; 7];

/// Entries holding every word, with their text. The rows come back as one JSON array, built by
/// the database: one value to read instead of seven per row (reading rows one at a time was
/// most of a search's time).
async fn matching(session: &mut Session, words: &[String], limit: Option<usize>) -> Result<Vec<EntryText>> {
    // No stored text holds a NUL (and PostgreSQL text cannot carry one).
    if words.iter().any(|w| w.contains('\0')) {
        return Ok(Vec::new());
    }
    let backend = session.backend();
    let (conditions, params): (Vec<String>, Vec<SqlValue>) =
        words.iter().enumerate().map(|(i, word)| word_condition(backend, i + 1, word)).unzip();
    let mut inner =
        "SELECT e.kind, e.entry_key, e.label, e.detail, e.href, e.haystack, e.names FROM search_entries e".to_string();
    if !conditions.is_empty() {
        inner.push_str(" WHERE ");
        inner.push_str(&conditions.join(" AND "));
    }
    if let Some(limit) = limit {
        inner.push_str(&format!(" LIMIT {limit}"));
    }
    let sql = match backend {
        Backend::Sqlite => format!(
            "SELECT json_group_array(json_array(kind, entry_key, label, detail, href, haystack, names)) FROM ({inner})"
        ),
        Backend::Postgres => format!(
            "SELECT coalesce(json_agg(json_build_array(kind, entry_key, label, detail, href, haystack, names)), '[]')::text \
             FROM ({inner}) found"
        ),
    };
    let rows = session.fetch_all(&sql, &params, &[Storage::Text]).await.context(|| "cannot search the index".into())?;
    let json = rows.into_iter().next().and_then(|row| row.into_iter().next()).map(owned).unwrap_or_default();
    serde_json::from_str(&json).map_err(|error| CatalogError::Corrupt(format!("the search index answered {error}")))
}

fn owned(value: SqlValue) -> String {
    match value {
        SqlValue::Text(Some(text)) => text,
        _ => String::new(),
    }
}

async fn candidates(pool: &Pool, words: &[String]) -> Result<Vec<SearchCandidate>> {
    let mut session = Session::begin(pool, false).await?;
    let found = matching(&mut session, words, None).await?;
    session.rollback().await.context(|| "cannot end a read transaction".into())?;
    let mut candidates: Vec<SearchCandidate> = found
        .into_iter()
        .map(|[kind, key, label, detail, href, haystack, names]| SearchCandidate {
            score: score(&haystack, &names, words),
            kind,
            key,
            label,
            detail,
            href,
        })
        .collect();
    // Ordered here, not by SQL: the backends' collations differ.
    candidates.sort_by(|a, b| {
        b.score
            .cmp(&a.score)
            .then((a.kind != "operation").cmp(&(b.kind != "operation")))
            .then(a.label.cmp(&b.label))
            .then(a.kind.cmp(&b.kind))
            .then(a.key.cmp(&b.key))
    });
    Ok(candidates)
}

async fn suggestions(pool: &Pool, words: &[String]) -> Result<Vec<Option<String>>> {
    let mut session = Session::begin(pool, false).await?;
    let backend = session.backend();
    let mut out = Vec::with_capacity(words.len());
    for word in words {
        if !matching(&mut session, std::slice::from_ref(word), Some(1)).await?.is_empty() {
            out.push(None);
            continue;
        }
        let length = word.chars().count();
        // One value, the terms space-separated (a term is letters and digits only).
        let sql = match backend {
            Backend::Sqlite => "SELECT group_concat(term, ' ') FROM search_terms WHERE length BETWEEN ?1 AND ?2",
            Backend::Postgres => "SELECT string_agg(term, ' ') FROM search_terms WHERE length BETWEEN $1 AND $2",
        };
        let lowest = length.saturating_sub(MAX_SUGGESTION_EDITS) as i64;
        let highest = (length + MAX_SUGGESTION_EDITS) as i64;
        let near = session
            .fetch_all(sql, &[SqlValue::Int(Some(lowest)), SqlValue::Int(Some(highest))], &[Storage::Text])
            .await
            .context(|| "cannot read the search vocabulary".into())?;
        let near = near.into_iter().next().and_then(|row| row.into_iter().next()).map(owned).unwrap_or_default();
        let best = near
            .split(' ')
            .filter(|term| !term.is_empty())
            .map(|term| (edit_distance(word, term), term))
            .filter(|(edits, _)| *edits <= MAX_SUGGESTION_EDITS && *edits < length)
            .min();
        out.push(best.map(|(_, term)| term.to_string()));
    }
    session.rollback().await.context(|| "cannot end a read transaction".into())?;
    Ok(out)
}

impl Catalog {
    /// The entries whose text holds every one of `words` (lower-cased, as
    /// `ki_ranking::query::parse_search` gives them; none: every entry), best first: by score,
    /// operations before the rest, then by label, kind and key. The same list on both backends.
    pub async fn search(&self, words: &[String]) -> Result<Vec<SearchCandidate>> {
        candidates(&self.pool, words).await
    }

    /// For each word: `None` when some entry's text holds it, else the nearest word of the
    /// index's text (at most two edits away, fewer than the word has characters; the first in
    /// code-point order on a tie), if any.
    pub async fn search_suggestions(&self, words: &[String]) -> Result<Vec<Option<String>>> {
        suggestions(&self.pool, words).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scores_count_whole_words_parts_and_exact_names() {
        let names = "rmsnorm h4096\nrmsnorm_h4096";
        assert_eq!(score("rmsnorm_h4096 rmsnorm-h4096 rmsnorm", names, &["rmsnorm".into()]), 3);
        assert_eq!(score("rmsnorm_h4096", names, &["norm".into()]), 1);
        assert_eq!(score("rmsnorm_h4096", names, &["rmsnorm".into(), "h4096".into()]), 26);
        assert_eq!(score("anything", names, &[]), 0);
    }

    #[test]
    fn words_become_fts_strings_and_like_patterns_that_hold_no_syntax() {
        let (_, fts) = word_condition(Backend::Sqlite, 1, "a\"b* NEAR:c");
        assert_eq!(fts, SqlValue::Text(Some("\"a\"\"b* NEAR:c\"".into())));
        let (sql, short) = word_condition(Backend::Sqlite, 1, "h2");
        assert!(sql.starts_with("instr("));
        assert_eq!(short, SqlValue::Text(Some("h2".into())));
        let (sql, like) = word_condition(Backend::Postgres, 3, "50%_\\x");
        assert!(sql.contains("$3"));
        assert_eq!(like, SqlValue::Text(Some("%50\\%\\_\\\\x%".into())));
    }

    #[test]
    fn terms_are_words_of_three_characters_or_more() {
        let found: Vec<&str> = terms("gqa_paged_decode h32 µs fp8-e4m3 ünï").collect();
        assert_eq!(found, ["gqa", "paged", "decode", "h32", "fp8", "e4m3", "ünï"]);
    }
}
