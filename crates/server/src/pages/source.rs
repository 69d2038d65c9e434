//! Kernel source: an implementation's source as the catalog's content store holds it
//! (`/implementations/{slug}/source` raw, `/api/v1/implementations/{slug}/source`), shown on
//! the implementation page highlighted on the server, and a revision's diff against the
//! previous revision of the same implementation (`/implementations/{slug}/diff`).
//!
//! The source is found by the digest the implementation's manifest gives
//! (`spec.source.contentDigest`); a FlashInfer-Bench Solution document is shown file by file.
//! Highlighting is syntect's, class-based (the `hl-` classes of site.css's source block), so
//! the page carries no inline style; every character of the source is escaped.

use std::fmt::Write;
use std::sync::LazyLock;

use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::IntoResponse;
use maud::{Markup, PreEscaped, html};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use syntect::html::{ClassStyle, line_tokens_to_classed_spans};
use syntect::parsing::{ParseState, Scope, ScopeStack, SyntaxReference, SyntaxSet};
use syntect::util::LinesWithEndings;

use super::{Answer, Shared, catalog_problem, html_response, json_response, layout, section};
use crate::AppState;
use crate::model::{Link, ReadModel};
use crate::problem::Problem;

/// Files larger than this are shown unhighlighted (still escaped, still numbered).
const MAX_HIGHLIGHT_BYTES: usize = 1 << 20;
/// Lines longer than this are not highlighted (a parser's cost grows with a line).
const MAX_HIGHLIGHT_LINE_BYTES: usize = 4096;
const CLASS_PREFIX: &str = "hl-";

static SYNTAXES: LazyLock<SyntaxSet> = LazyLock::new(SyntaxSet::load_defaults_newlines);

/// One file of an implementation's source.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceFile {
    /// The file's name (a Solution's `sources[].path`, or the manifest's `fileName`).
    pub path: String,
    /// The grammar it is highlighted with (`C++`, `Python`, `JSON`, `Plain Text`).
    pub language: String,
    pub lines: usize,
    pub size_bytes: usize,
    pub content: String,
    /// The raw text's address.
    pub raw_href: String,
}

/// An implementation's source, as the index holds it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SourceView {
    pub implementation: Link,
    /// The digest the manifest gives (`spec.source.contentDigest`), when it gives one.
    pub digest: Option<String>,
    /// The manifest's `fileName`.
    pub file_name: Option<String>,
    /// Whether the content store holds the bytes of that digest.
    pub held: bool,
    /// `file` (one source file) or `solution` (a FlashInfer-Bench Solution document, its
    /// files inside it).
    pub form: Option<&'static str>,
    pub files: Vec<SourceFile>,
    /// What the index holds, in words.
    pub explanation: String,
    /// The whole stored content, raw.
    pub raw_href: Option<String>,
    pub diff_href: String,
}

impl SourceView {
    pub fn file(&self, path: &str) -> Option<&SourceFile> {
        self.files.iter().find(|f| f.path == path)
    }
}

/// The files of a stored content: a Solution document's `sources` (each `{path, content}`),
/// else the content itself as one file named `file_name`.
fn files_of(bytes: &[u8], file_name: &str) -> (&'static str, Vec<(String, String)>) {
    if let Ok(document) = serde_json::from_slice::<Value>(bytes)
        && let Some(sources) = document.get("sources").and_then(Value::as_array)
    {
        let files: Vec<(String, String)> = sources
            .iter()
            .filter_map(|s| Some((s.get("path")?.as_str()?.to_string(), s.get("content")?.as_str()?.to_string())))
            .collect();
        if !files.is_empty() && files.len() == sources.len() {
            return ("solution", files);
        }
    }
    ("file", vec![(file_name.to_string(), String::from_utf8_lossy(bytes).into_owned())])
}

fn source_file(slug: &str, path: String, content: String) -> SourceFile {
    SourceFile {
        language: syntax_for(&path).name.clone(),
        lines: content.lines().count(),
        size_bytes: content.len(),
        raw_href: format!("/implementations/{slug}/source?file={}", crate::model::percent_encode(&path)),
        path,
        content,
    }
}

/// The grammar for a file name: CUDA is read as C++ (syntect's defaults have no CUDA grammar).
fn syntax_for(path: &str) -> &'static SyntaxReference {
    let syntaxes = &*SYNTAXES;
    let extension = path.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase()).unwrap_or_default();
    let extension = match extension.as_str() {
        "cu" | "cuh" => "cpp",
        other => other,
    };
    syntaxes.find_syntax_by_extension(extension).unwrap_or_else(|| syntaxes.find_syntax_plain_text())
}

/// Reads an implementation's source from the catalog's content store.
pub async fn source_of(state: &AppState, model: &ReadModel, implementation: usize) -> Result<SourceView, Problem> {
    let slug = model.judgement.implementations[implementation].slug.clone();
    let implementation_link = Link { label: slug.clone(), href: format!("/implementations/{slug}") };
    let diff_href = format!("/implementations/{slug}/diff");
    let Some((digest, file_name)) = model.implementation_source(implementation) else {
        return Ok(SourceView {
            implementation: implementation_link,
            digest: None,
            file_name: None,
            held: false,
            form: None,
            files: Vec::new(),
            explanation:
                "The implementation's manifest names no source file (no spec.source), so the index holds none.".into(),
            raw_href: None,
            diff_href,
        });
    };
    let content = state.catalog.content(&digest).await.map_err(catalog_problem)?;
    let Some(bytes) = content else {
        return Ok(SourceView {
            implementation: implementation_link,
            explanation: format!(
                "The manifest names its source ({}, {digest}), but the index does not hold its content.",
                file_name.as_deref().unwrap_or("no file name")
            ),
            digest: Some(digest),
            file_name,
            held: false,
            form: None,
            files: Vec::new(),
            raw_href: None,
            diff_href,
        });
    };
    let shown_name = file_name.as_deref().map(|n| n.rsplit('/').next().unwrap_or(n)).unwrap_or("source");
    let (form, files) = files_of(&bytes, shown_name);
    let explanation = match form {
        "solution" => format!(
            "A FlashInfer-Bench Solution document ({} bytes, {digest}) holding {} source file(s), as verified.",
            bytes.len(),
            files.len()
        ),
        _ => format!("{shown_name} ({} bytes, {digest}), the file the recorded revision was built from.", bytes.len()),
    };
    Ok(SourceView {
        implementation: implementation_link,
        raw_href: Some(format!("/implementations/{slug}/source")),
        files: files.into_iter().map(|(path, content)| source_file(&slug, path, content)).collect(),
        explanation,
        digest: Some(digest),
        file_name,
        held: true,
        form: Some(form),
        diff_href,
    })
}

/// The classes of a scope (`source.c++` → `hl-source hl-c++`), as syntect's spaced, prefixed
/// class style writes them.
fn scope_classes(scope: &Scope) -> String {
    let name = scope.build_string();
    let mut out = String::new();
    for atom in name.split('.') {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(CLASS_PREFIX);
        out.push_str(atom);
    }
    crate::chart::escape(&out)
}

/// Each line of `content` as HTML: highlighted spans (balanced within the line, so each line
/// can carry its own anchor), or the escaped text where highlighting does not apply.
pub fn highlighted_lines(path: &str, content: &str) -> Vec<String> {
    let plain = || content.lines().map(crate::chart::escape).collect::<Vec<_>>();
    if content.len() > MAX_HIGHLIGHT_BYTES {
        return plain();
    }
    let syntax = syntax_for(path);
    let mut parser = ParseState::new(syntax);
    let mut stack = ScopeStack::new();
    let mut out = Vec::new();
    for line in LinesWithEndings::from(content) {
        if line.len() > MAX_HIGHLIGHT_LINE_BYTES {
            return plain();
        }
        let Ok(ops) = parser.parse_line(line, &SYNTAXES) else { return plain() };
        let mut html = String::new();
        for scope in stack.as_slice() {
            let _ = write!(html, r#"<span class="{}">"#, scope_classes(scope));
        }
        let Ok((spans, _)) =
            line_tokens_to_classed_spans(line, &ops, ClassStyle::SpacedPrefixed { prefix: CLASS_PREFIX }, &mut stack)
        else {
            return plain();
        };
        html.push_str(spans.strip_suffix('\n').unwrap_or(&spans));
        for _ in 0..stack.len() {
            html.push_str("</span>");
        }
        out.push(html.replace('\n', ""));
    }
    out
}

/// A numbered, anchored listing of one file (`file` keeps anchors unique on a page).
pub fn listing(file: &SourceFile, index: usize) -> Markup {
    let lines = highlighted_lines(&file.path, &file.content);
    // Each line is a block (so an anchored line can be marked whole); a newline between them
    // would draw an empty line after each.
    html! {
        figure.source id={ "f" (index) } {
            figcaption {
                code { (file.path) } " · " (file.language) " · " (ki_model::units::count(file.lines as u64)) " lines · "
                (ki_model::units::bytes(file.size_bytes as u64)) " · "
                a href=(file.raw_href) type="text/plain" { "raw" }
            }
            pre.source { code {
                @for (number, line) in lines.iter().enumerate() {
                    @let anchor = format!("f{index}-L{}", number + 1);
                    span.line id=(anchor) {
                        a.ln href={ "#" (anchor) } aria-label={ "line " (number + 1) } { (number + 1) }
                        span.code { (PreEscaped(line)) }
                    }
                }
            } }
        }
    }
}

/// The source section of the implementation page.
pub fn source_section(view: &SourceView) -> Markup {
    section(
        "source",
        "Source",
        html! {
            p { (view.explanation) }
            @if view.held {
                p {
                    @if let Some(raw) = &view.raw_href { a href=(raw) type="text/plain" { "Raw" } " · " }
                    a href=(view.diff_href) { "Diff against the previous revision" }
                }
                @for (index, file) in view.files.iter().enumerate() { (listing(file, index)) }
            }
        },
    )
}

#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SourceQuery {
    /// One file of a Solution document, by its path; without it, the whole stored content.
    #[schemars(length(max = 500))]
    pub file: Option<String>,
}

/// The raw source: the stored bytes, or one file of a Solution, as UTF-8 text.
pub async fn raw(State(state): State<Shared>, Path(slug): Path<String>, Query(q): Query<SourceQuery>) -> Answer {
    let model = state.model();
    let view = source_of(&state, &model, model.find_implementation(&slug)?).await?;
    if !view.held {
        return Err(Problem::not_found(format!("the index holds no source of {slug:?}: {}", view.explanation)));
    }
    let body = match &q.file {
        Some(path) => view
            .file(path)
            .map(|f| f.content.clone().into_bytes())
            .ok_or_else(|| Problem::not_found(format!("{slug:?} has no source file {path:?}")))?,
        None => state
            .catalog
            .content(view.digest.as_deref().unwrap_or(""))
            .await
            .map_err(catalog_problem)?
            .ok_or_else(|| Problem::not_found(format!("the index holds no source of {slug:?}")))?,
    };
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], body).into_response())
}

/// The source as JSON: every file with its text.
pub async fn api(State(state): State<Shared>, Path(slug): Path<String>) -> Answer {
    let model = state.model();
    Ok(json_response(&source_of(&state, &model, model.find_implementation(&slug)?).await?))
}

// ---------- the revision diff ----------

/// One file's change between two revisions.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct FileDiff {
    pub path: String,
    /// `changed`, `added`, `removed` or `unchanged`.
    pub status: &'static str,
    /// The unified diff (3 lines of context); empty when unchanged.
    pub unified: String,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RevisionDiff {
    pub implementation: Link,
    pub revision: Option<String>,
    /// The previous revision of the same implementation, when there is one.
    pub previous: Option<Link>,
    pub previous_revision: Option<String>,
    /// How the previous revision was chosen.
    pub lineage: String,
    pub explanation: String,
    pub files: Vec<FileDiff>,
}

/// What "the same implementation" means for revisions.
pub const LINEAGE: &str = "An implementation's previous revision is the one it supersedes (supersedesId) when it names \
    one; otherwise the latest earlier revision of the same project, operation and manifest name (metadata.name), by \
    createdAt and then arrival in the catalog.";

impl ReadModel {
    /// The revision `implementation` follows, by [`LINEAGE`].
    pub fn previous_revision(&self, implementation: usize) -> Option<usize> {
        let rows = &self.judgement.implementations;
        let row = &rows[implementation];
        let supersedes = row.supersedes_id.as_deref().filter(|id| !id.is_empty());
        if let Some(previous) = supersedes.and_then(|id| self.judgement.implementation_index(id)) {
            return Some(previous);
        }
        let created = |i: usize| rows[i].created_at.as_str();
        let siblings = self.judgement.project_implementations(self.judgement.implementation_project(implementation));
        siblings
            .iter()
            .copied()
            .filter(|&j| {
                j != implementation
                    && rows[j].operation_id == row.operation_id
                    && self.implementation_names[j] == self.implementation_names[implementation]
                    && (created(j), j) < (created(implementation), implementation)
            })
            .max_by_key(|&j| (created(j), j))
    }
}

fn link_of(model: &ReadModel, i: usize) -> Link {
    let slug = &model.judgement.implementations[i].slug;
    Link { label: slug.into(), href: format!("/implementations/{slug}") }
}

fn source_revision(model: &ReadModel, i: usize) -> Option<String> {
    Some(model.judgement.implementations[i].source_revision.clone()).filter(|r| !r.is_empty())
}

/// The unified diff of each file between two sources, by path: changed files first in the
/// newer revision's order, then removed ones.
pub fn file_diffs(old: &[SourceFile], new: &[SourceFile]) -> Vec<FileDiff> {
    let unified = |a: &str, b: &str, path: &str| {
        similar::TextDiff::from_lines(a, b)
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{path}"), &format!("b/{path}"))
            .to_string()
    };
    let mut out = Vec::new();
    for file in new {
        let before = old.iter().find(|f| f.path == file.path);
        let (status, text) = match before {
            Some(b) if b.content == file.content => ("unchanged", String::new()),
            Some(b) => ("changed", unified(&b.content, &file.content, &file.path)),
            None => ("added", unified("", &file.content, &file.path)),
        };
        out.push(FileDiff { path: file.path.clone(), status, unified: text });
    }
    for file in old.iter().filter(|f| !new.iter().any(|n| n.path == f.path)) {
        out.push(FileDiff {
            path: file.path.clone(),
            status: "removed",
            unified: unified(&file.content, "", &file.path),
        });
    }
    out
}

async fn revision_diff(state: &AppState, slug: &str) -> Result<RevisionDiff, Problem> {
    let model = state.model();
    let i = model.find_implementation(slug)?;
    let revision = source_revision(&model, i);
    let mut diff = RevisionDiff {
        implementation: link_of(&model, i),
        revision,
        previous: None,
        previous_revision: None,
        lineage: LINEAGE.into(),
        explanation: String::new(),
        files: Vec::new(),
    };
    let Some(previous) = model.previous_revision(i) else {
        diff.explanation = "This is the only revision of this implementation the index holds: there is no earlier one \
                            to compare with."
            .into();
        return Ok(diff);
    };
    diff.previous = Some(link_of(&model, previous));
    diff.previous_revision = source_revision(&model, previous);
    let new = source_of(state, &model, i).await?;
    let old = source_of(state, &model, previous).await?;
    diff.explanation = match (old.held, new.held) {
        (true, true) if old.digest == new.digest => "Both revisions have the same source (the same digest).".into(),
        (true, true) => {
            diff.files = file_diffs(&old.files, &new.files);
            let changed = diff.files.iter().filter(|f| f.status != "unchanged").count();
            format!("{changed} of {} file(s) differ.", diff.files.len())
        }
        (false, _) => format!("The index does not hold the earlier revision's source: {}", old.explanation),
        (_, false) => format!("The index does not hold this revision's source: {}", new.explanation),
    };
    Ok(diff)
}

/// A unified diff as HTML, each line classed by what it is (added, removed, hunk, header).
fn diff_lines(unified: &str) -> Markup {
    html! {
        pre.diff { code {
            @for line in unified.lines() {
                @let class = if line.starts_with("+++") || line.starts_with("---") { "diff-file" }
                    else if line.starts_with("@@") { "diff-hunk" }
                    else if line.starts_with('+') { "diff-add" }
                    else if line.starts_with('-') { "diff-del" }
                    else { "diff-context" };
                span class=(class) { (line) }
            }
        } }
    }
}

fn render_diff(d: &RevisionDiff) -> Markup {
    layout(
        &format!("{} · diff", d.implementation.label),
        html! {
            nav.crumbs aria-label="Breadcrumb" { a href=(d.implementation.href) { (d.implementation.label) } " / diff" }
            h1 { "Diff of " (d.implementation.label) }
            @if let Some(previous) = &d.previous {
                p { "Against the previous revision " a href=(previous.href) { (previous.label) }
                    @if let Some(r) = &d.previous_revision { " (" code { (r) } ")" }
                    @if let Some(r) = &d.revision { " → " code { (r) } } }
            }
            p { (d.explanation) }
            @for file in &d.files {
                section.file-diff {
                    h2 { code { (file.path) } " · " (file.status) }
                    @if !file.unified.is_empty() { (diff_lines(&file.unified)) }
                }
            }
            p.muted { (d.lineage) }
            p { a href={ "/api/v1" (d.implementation.href) "/diff" } type="application/json" { "JSON" } }
        },
    )
}

pub async fn diff_page(State(state): State<Shared>, Path(slug): Path<String>) -> Answer {
    Ok(html_response(render_diff(&revision_diff(&state, &slug).await?)))
}

pub async fn diff_api(State(state): State<Shared>, Path(slug): Path<String>) -> Answer {
    Ok(json_response(&revision_diff(&state, &slug).await?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_line_is_balanced_and_escaped() {
        let source = "/* a comment\n   over lines */\nint main() { return 1 < 2; }\n// </pre><script>x</script> <b>\n";
        let lines = highlighted_lines("kernel.cu", source);
        assert_eq!(lines.len(), 4);
        for line in &lines {
            assert_eq!(line.matches("<span").count(), line.matches("</span>").count(), "{line}");
        }
        assert!(lines[1].contains("hl-comment"), "the comment's second line keeps its class: {}", lines[1]);
        assert!(lines[2].contains("hl-keyword") || lines[2].contains("hl-storage"), "{}", lines[2]);
        assert!(lines[3].contains("&lt;/pre&gt;&lt;script&gt;") && !lines[3].contains("<script"), "{}", lines[3]);
        assert!(lines[3].contains("&lt;b&gt;"));
    }

    #[test]
    fn cuda_reads_as_cpp_and_unknown_files_as_plain_text() {
        assert_eq!(syntax_for("gqa_paged_decode.cu").name, "C++");
        assert_eq!(syntax_for("main.py").name, "Python");
        assert_eq!(syntax_for("notes.unknown").name, "Plain Text");
    }
}
