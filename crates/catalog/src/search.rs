//! The search index (migration 0007): one `search_entries` row per thing the search box finds —
//! an operation (name, slug, family, aliases), an implementation (slug, title), a project (name,
//! slug), a GPU model runs name — with the text `ki_model::search_text` writes for it.
//!
//! A query's words are found as substrings of that lower-cased text, through a trigram index
//! on each backend: SQLite FTS5 (`tokenize = 'trigram'`; a word is a quoted FTS5 string, so
//! `"`, `*`, `NEAR` or `:` in it are text, never query syntax) and PostgreSQL pg_trgm (GIN,
//! `LIKE` with `%`, `_` and `\` escaped). Words shorter than a trigram are found by `instr` /
//! `strpos`. Both backends hold the same text and every match is exact, so they find the same
//! entries; [`Catalog::search`] returns their keys in one order on both. Scoring and ordering
//! are the read model's (it holds the runs the filters test).
//!
//! Kept current by the import's writer, in the transaction that writes the rows it derives
//! from ([`refresh`]); filled for an existing catalog by the migration ([`rebuild`]).

use std::collections::BTreeSet;

use ki_model::search_text::{self, SearchKind, SearchText};
use serde_json::{Map, Value};

use crate::Catalog;
use crate::error::{CatalogError, DbContext, Result};
use crate::rows::{self, SqlValue, Storage};
use crate::schema;
use crate::store::{self, Backend, Pool, Session};

/// The migration that creates the index; applying it fills the index.
pub(crate) const MIGRATION_VERSION: i64 = 7;

/// Entries written per INSERT (3 parameters each).
const ENTRIES_PER_INSERT: usize = 1000;

/// An entry of the index: what it is and the row's id (a GPU's model).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct SearchKey {
    pub kind: SearchKind,
    pub key: String,
}

/// One row of `search_entries`.
struct IndexEntry {
    kind: SearchKind,
    key: String,
    text: SearchText,
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
            IndexEntry {
                kind: SearchKind::Operation,
                key: id.to_string(),
                text: search_text::operation(text(op, "name"), text(op, "slug"), text(op, "family"), &own),
            }
        })
        .collect()
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

/// Writes entries, skipping any already held.
async fn write_entries(session: &mut Session, entries: &[IndexEntry]) -> Result<()> {
    let backend = session.backend();
    for batch in entries.chunks(ENTRIES_PER_INSERT) {
        let sql = format!(
            "INSERT INTO search_entries (kind, entry_key, haystack) VALUES {} ON CONFLICT (kind, entry_key) DO NOTHING",
            values_list(backend, batch.len(), 3)
        );
        let params: Vec<SqlValue> = batch
            .iter()
            .flat_map(|e| {
                [e.kind.as_str(), e.key.as_str(), e.text.haystack.as_str()]
                    .map(|value| SqlValue::Text(Some(value.to_string())))
            })
            .collect();
        session.execute(&sql, &params).await.context(|| "cannot write the search index".into())?;
    }
    Ok(())
}

/// Rewrites the entries of operations, implementations and projects from their tables.
async fn rebuild_text_entries(session: &mut Session) -> Result<()> {
    let operations = table_rows(session, "operations").await?;
    let aliases = table_rows(session, "operation_aliases").await?;
    let mut entries = operation_entries(&operations, &aliases);
    entries.extend(table_rows(session, "implementations").await?.iter().map(|imp| IndexEntry {
        kind: SearchKind::Implementation,
        key: text(imp, "id").to_string(),
        text: search_text::implementation(text(imp, "slug"), text(imp, "title")),
    }));
    entries.extend(table_rows(session, "projects").await?.iter().map(|project| IndexEntry {
        kind: SearchKind::Project,
        key: text(project, "id").to_string(),
        text: search_text::project(text(project, "name"), text(project, "slug")),
    }));
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
    let entries: Vec<IndexEntry> = gpus
        .iter()
        .filter(|gpu| !gpu.is_empty())
        .map(|gpu| IndexEntry { kind: SearchKind::Hardware, key: gpu.clone(), text: search_text::hardware(gpu) })
        .collect();
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

/// An FTS5 string: the whole word is text (its quotes doubled), never query syntax.
fn fts_string(word: &str) -> String {
    format!("\"{}\"", word.replace('"', "\"\""))
}

/// A `LIKE` pattern that finds `word` anywhere, its `%`, `_` and `\` escaped.
fn like_pattern(word: &str) -> String {
    format!("%{}%", word.replace('\\', "\\\\").replace('%', "\\%").replace('_', "\\_"))
}

/// The one statement that finds the entries holding every word, and its parameters. It
/// answers one value, the entries' `kind key` lines, built by the database: reading rows one
/// at a time would cost more than the search.
fn matching_sql(backend: Backend, words: &[String]) -> (String, Vec<SqlValue>) {
    let text = |value: String| SqlValue::Text(Some(value));
    match backend {
        Backend::Sqlite => {
            // Words of a trigram or more: one FTS5 query, the words' strings joined by AND;
            // shorter words: instr.
            let (long, short): (Vec<&String>, Vec<&String>) = words.iter().partition(|w| w.chars().count() >= 3);
            let mut conditions = Vec::new();
            let mut params = Vec::new();
            let mut from = "search_entries e".to_string();
            if !long.is_empty() {
                from = "search_entries_text t JOIN search_entries e ON e.rowid = t.rowid".to_string();
                conditions.push("search_entries_text MATCH ?".to_string());
                params.push(text(long.iter().map(|w| fts_string(w)).collect::<Vec<_>>().join(" AND ")));
            }
            for word in short {
                conditions.push("instr(e.haystack, ?) > 0".to_string());
                params.push(text(word.clone()));
            }
            let filter =
                if conditions.is_empty() { String::new() } else { format!(" WHERE {}", conditions.join(" AND ")) };
            (format!("SELECT group_concat(e.kind || ' ' || e.entry_key, char(10)) FROM {from}{filter}"), params)
        }
        Backend::Postgres => {
            let conditions: Vec<String> =
                // Backslash is LIKE's escape character by default; an ESCAPE clause would keep a
                // prepared (generic) plan off the trigram index.
                (1..=words.len()).map(|number| format!("e.haystack LIKE ${number}")).collect();
            let filter =
                if conditions.is_empty() { String::new() } else { format!(" WHERE {}", conditions.join(" AND ")) };
            let params = words.iter().map(|word| text(like_pattern(word))).collect();
            (format!("SELECT string_agg(e.kind || ' ' || e.entry_key, chr(10)) FROM search_entries e{filter}"), params)
        }
    }
}

/// The keys of the entries holding every word.
async fn matching(pool: &Pool, words: &[String]) -> Result<Vec<SearchKey>> {
    // No stored text holds a NUL (and PostgreSQL text cannot carry one).
    if words.iter().any(|w| w.contains('\0')) {
        return Ok(Vec::new());
    }
    let (sql, params) = matching_sql(pool.backend(), words);
    let rows = match pool.backend() {
        Backend::Sqlite => store::fetch_all(pool, &sql, &params, &[Storage::Text]).await,
        // PostgreSQL's cost model prefers a sequential scan of a table of a few thousand rows to
        // the trigram index, which answers 2 to 6 times sooner (0.3–0.8 ms against 1.5–1.8 ms
        // on the bundled catalog, EXPLAIN ANALYZE): this statement's transaction says so.
        Backend::Postgres => {
            let mut session = Session::begin(pool, false).await?;
            session.execute("SET LOCAL enable_seqscan = off", &[]).await.context(|| "cannot plan the search".into())?;
            let rows = session.fetch_all(&sql, &params, &[Storage::Text]).await;
            session.rollback().await.context(|| "cannot end a read transaction".into())?;
            rows
        }
    }
    .context(|| "cannot search the index".into())?;
    let lines = rows.into_iter().next().and_then(|row| row.into_iter().next()).and_then(|value| match value {
        SqlValue::Text(text) => text,
        _ => None,
    });
    let mut keys = lines
        .as_deref()
        .unwrap_or("")
        .split('\n')
        .filter(|line| !line.is_empty())
        .map(|line| {
            let (kind, key) = line.split_once(' ').unwrap_or((line, ""));
            let kind = SearchKind::parse(kind)
                .ok_or_else(|| CatalogError::Corrupt(format!("the search index holds an entry of kind {kind:?}")))?;
            Ok(SearchKey { kind, key: key.to_string() })
        })
        .collect::<Result<Vec<_>>>()?;
    // Ordered here, not by SQL: the backends' collations differ.
    keys.sort();
    Ok(keys)
}

impl Catalog {
    /// The entries whose text holds every one of `words` (lower-cased, as
    /// `ki_ranking::query::parse_search` gives them; none: every entry), by kind and key. The
    /// same list on both backends.
    pub async fn search(&self, words: &[String]) -> Result<Vec<SearchKey>> {
        matching(&self.pool, words).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_become_fts_strings_and_like_patterns_that_hold_no_syntax() {
        assert_eq!(fts_string("a\"b* NEAR:c"), "\"a\"\"b* NEAR:c\"");
        assert_eq!(like_pattern("50%_\\x"), "%50\\%\\_\\\\x%");
        let words: Vec<String> = ["gqa", "h2", "de\"code"].map(str::to_string).to_vec();
        let (sql, params) = matching_sql(Backend::Sqlite, &words);
        assert!(sql.contains("MATCH ?") && sql.contains("instr(e.haystack, ?)"), "{sql}");
        assert_eq!(
            params,
            [SqlValue::Text(Some("\"gqa\" AND \"de\"\"code\"".into())), SqlValue::Text(Some("h2".into()))]
        );
        let (sql, params) = matching_sql(Backend::Postgres, &words);
        assert!(sql.contains("$3") && !sql.contains("$4"), "{sql}");
        assert_eq!(params[2], SqlValue::Text(Some("%de\"code%".into())));
        assert!(!matching_sql(Backend::Sqlite, &[]).0.contains("WHERE"));
    }
}
