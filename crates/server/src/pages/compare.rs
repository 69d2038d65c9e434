//! Compare (`/compare?run=…`): 2 to 8 runs side by side, with Markdown, CSV and JSON exports.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;
use axum_extra::extract::Query;
use maud::{Markup, html};

use super::{Answer, Shared, html_response, json_response, layout};
use crate::model::ReadModel;
use crate::problem::Problem;

// ---------- compare ----------

fn summary_value(r: &ki_ranking::RunSummary) -> String {
    ki_model::units::value(r.value, r.unit.as_deref())
}

/// "unranked (retracted, …)" for a run with no rank, the way `ki compare` prints it.
fn rank_text(r: &ki_ranking::RunSummary) -> String {
    match r.rank {
        Some(rank) => format!("#{rank}"),
        None => {
            format!("unranked ({})", r.ineligibility.iter().map(crate::model::code_of).collect::<Vec<_>>().join(", "))
        }
    }
}

/// The interval as "low – high" in the run's unit, when it has one.
fn interval_text(r: &ki_ranking::views::ComparedRun) -> Option<String> {
    let (low, high) = r.interval?;
    let unit = r.summary.unit.as_deref();
    Some(format!("{} – {}", ki_model::units::value(Some(low), unit), ki_model::units::value(Some(high), unit)))
}

pub fn render(c: &ki_ranking::Comparison, refs: &[String]) -> Markup {
    let query: String =
        refs.iter().map(|r| format!("run={}", crate::model::percent_encode(r))).collect::<Vec<_>>().join("&");
    let differing: Vec<&str> = c.differing_keys.iter().map(|k| k.label()).collect();
    let main = html! {
        h1 { "Compare " (c.runs.len()) " runs" }
        p { "Fastest first: #1 is the run listed first; “× #1” is how many times slower each run is." }
        @if c.same_comparison_group { p { "All runs share one comparison group: their values compare directly." } }
        @else { p.banner role="note" { "These runs are in different comparison groups: they differ in "
            @if differing.is_empty() { "their comparison keys" } @else { (differing.join(", ")) }
            ". Compare values with care; “× best in group” is within each group only." } }
        @if !c.differing_axes.is_empty() { p { "Workload axes that differ: " (c.differing_axes.join(", ")) } }
        table {
            caption { "Side by side, fastest first" }
            thead { tr { th scope="col" { "run" } th scope="col" { "implementation" } th scope="col" { "project" } th scope="col" { "hardware" }
                th scope="col" class="num" { "value" } th scope="col" { "interval" } th scope="col" class="num" { "× #1" } th scope="col" { "speed vs #1" }
                th scope="col" class="num" { "× best in group" } th scope="col" class="num" { "rank" } th scope="col" { "evidence" }
                @for axis in &c.differing_axes { th scope="col" { (axis) } } } }
            tbody { @for r in &c.runs { tr {
                td { a href={ "/runs/" (r.summary.run_id) } { (crate::model::short_id(&r.summary.run_id)) } }
                td { (r.summary.implementation) } td { (r.summary.project) }
                td { (crate::pages::gpu_link(r.summary.hardware.as_deref().unwrap_or(""))) }
                td.num { (summary_value(&r.summary)) " " span.muted { (r.summary.statistic.as_deref().unwrap_or("")) } }
                td { (interval_text(r).unwrap_or_else(|| "—".into())) }
                td.num { (r.relative_to_first.map(ki_model::units::factor).unwrap_or_else(|| "—".into())) }
                td { @if let Some(x) = r.relative_to_first.filter(|x| *x > 0.0) {
                    @let label = format!("{}% of #1's speed", ki_model::units::plain_number((1000.0 / x).round() / 10.0));
                    (crate::pages::resolve::speed_bar(1.0 / x, &label)) " " span.muted { (label) }
                } @else { "—" } }
                td.num { (r.relative_to_best_in_group.map(|x| format!("{x:.3}")).unwrap_or_else(|| "—".into())) }
                td.num { (rank_text(&r.summary)) }
                td { (crate::pages::evidence_badge(&crate::model::code_of(&r.summary.trust))) }
                @for axis in &c.differing_axes { td { (r.axes.get(axis).map(crate::model::scalar).unwrap_or_default()) } }
            } } }
        }
        p { "Export: " a href={ "/compare?" (query) "&format=markdown" } { "Markdown" } " · "
            a href={ "/compare?" (query) "&format=csv" } { "CSV" } " · "
            a href={ "/compare?" (query) "&format=json" } { "JSON" } }
    };
    layout("Compare", main)
}

const COMPARE_COLUMNS: [&str; 13] = [
    "run",
    "implementation",
    "project",
    "hardware",
    "metric",
    "statistic",
    "value",
    "unit",
    "relative_to_best",
    "relative_to_first",
    "interval_low",
    "interval_high",
    "rank",
];

fn compare_cells(r: &ki_ranking::views::ComparedRun) -> [String; 13] {
    [
        r.summary.run_id.clone(),
        r.summary.implementation.clone(),
        r.summary.project.clone(),
        r.summary.hardware.clone().unwrap_or_default(),
        r.summary.metric.clone().unwrap_or_default(),
        r.summary.statistic.clone().unwrap_or_default(),
        r.summary.value.map(|v| v.to_string()).unwrap_or_default(),
        r.summary.unit.clone().unwrap_or_default(),
        r.relative_to_best_in_group.map(|x| format!("{x:.4}")).unwrap_or_default(),
        r.relative_to_first.map(|x| format!("{x:.4}")).unwrap_or_default(),
        r.interval.map(|(low, _)| low.to_string()).unwrap_or_default(),
        r.interval.map(|(_, high)| high.to_string()).unwrap_or_default(),
        r.summary.rank.map(|x| x.to_string()).unwrap_or_default(),
    ]
}

/// One Markdown table cell: HTML is escaped (a renderer would pass it through as markup),
/// and pipes and line breaks, which would end the cell or the row.
fn markdown_cell(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '|' => out.push_str("\\|"),
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

/// One CSV cell (RFC 4180 quoting). A cell a spreadsheet would take as a formula (a leading
/// `=`, `+`, `@`, tab or carriage return, or `-` not starting a number) is prefixed with `'`.
fn csv_cell(text: &str) -> String {
    let formula =
        text.starts_with(['=', '+', '@', '\t', '\r']) || (text.starts_with('-') && text.parse::<f64>().is_err());
    let text = if formula { format!("'{text}") } else { text.to_string() };
    if text.contains([',', '"', '\n', '\r']) { format!("\"{}\"", text.replace('"', "\"\"")) } else { text }
}

pub fn markdown(c: &ki_ranking::Comparison) -> String {
    let cell = |s: &str| markdown_cell(s);
    let mut out = format!("| {} |\n|{}\n", COMPARE_COLUMNS.join(" | "), "---|".repeat(COMPARE_COLUMNS.len()));
    for r in &c.runs {
        out.push_str("| ");
        out.push_str(&compare_cells(r).iter().map(|s| cell(s)).collect::<Vec<_>>().join(" | "));
        out.push_str(" |\n");
    }
    out
}

pub fn csv(c: &ki_ranking::Comparison) -> String {
    let cell = |s: &str| csv_cell(s);
    let mut out = COMPARE_COLUMNS.join(",");
    out.push_str("\r\n");
    for r in &c.runs {
        out.push_str(&compare_cells(r).iter().map(|s| cell(s)).collect::<Vec<_>>().join(","));
        out.push_str("\r\n");
    }
    out
}

// ---------- compare ----------

/// `?run=A&run=B…` (or `run=A,B`): 2 to 8 runs by id, digest or short id; the page also takes
/// `format=markdown|csv|json`.
#[derive(Debug, Clone, serde::Deserialize, schemars::JsonSchema)]
pub struct CompareQuery {
    #[schemars(length(min = 2, max = 8), inner(regex(pattern = r"^[A-Za-z0-9:-]{1,100}$")), extend("uniqueItems" = true))]
    pub run: Vec<String>,
    #[schemars(extend("enum" = ["", "html", "json", "markdown", "md", "csv"]))]
    pub format: Option<String>,
}

/// The page's query: as [`CompareQuery`], but fewer than two runs (none at all: `/compare`) is
/// answered with a page that says how to pick them.
#[derive(Debug, Clone, Default, serde::Deserialize, schemars::JsonSchema)]
pub struct ComparePageQuery {
    #[serde(default)]
    #[schemars(length(max = 8), inner(regex(pattern = r"^[A-Za-z0-9:,-]{0,100}$")))]
    pub run: Vec<String>,
    #[schemars(extend("enum" = ["", "html", "json", "markdown", "md", "csv"]))]
    pub format: Option<String>,
}

/// The run references of `run=` values (each may list several, comma-separated; blanks skipped).
fn references(runs: &[String]) -> Vec<String> {
    let mut refs: Vec<String> = Vec::new();
    for value in runs {
        refs.extend(value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string));
        if refs.len() > 8 {
            break;
        }
    }
    refs
}

fn comparison(model: &ReadModel, runs: &[String]) -> Result<(Vec<String>, ki_ranking::Comparison), Problem> {
    let refs = references(runs);
    let borrowed: Vec<&str> = refs.iter().map(String::as_str).collect();
    match model.judgement.compare(&borrowed) {
        Ok(c) => Ok((refs, c)),
        Err(ki_ranking::CompareError::Lookup(ki_ranking::LookupError::NotFound { given, .. })) => {
            Err(Problem::not_found(format!("no run matches {given:?}")))
        }
        Err(e) => Err(Problem::bad_request(e.to_string())),
    }
}

/// The two fastest runs of the comparison group with the most eligible runs: an example pair.
fn example_pair(model: &ReadModel) -> Option<(String, String, String)> {
    let cohort =
        model.judgement.cohorts.iter().filter(|c| c.ranking.len() >= 2).max_by(|a, b| {
            a.ranking.len().cmp(&b.ranking.len()).then_with(|| b.comparison_key.cmp(&a.comparison_key))
        })?;
    let (first, second) = (cohort.ranking[0].run, cohort.ranking[1].run);
    let operation = model.run_operation(first).map(|op| model.operation_title(op).to_string()).unwrap_or_default();
    let gpu = model.run(first).hardware_model.as_deref().unwrap_or("").to_string();
    let what = format!("{operation} at {} on {gpu}", model.run_workload_label(first));
    Some((model.run(first).id.to_string(), model.run(second).id.to_string(), what))
}

/// `/compare` with fewer than two runs: what the page does and how to pick the runs, a form
/// for run references, and an example pair from the catalog.
pub fn render_empty(model: &ReadModel, refs: &[String]) -> Markup {
    let example = example_pair(model);
    let main = html! {
        h1 { "Compare runs" }
        p { "Compare puts 2 to 8 runs side by side: fastest first, how many times slower each is than #1, "
            "their intervals and evidence, and which parts of their comparison keys (workload, protocol, environment, GPU, "
            "correctness rule, metric) differ. It exports the table as Markdown, CSV or JSON." }
        @match refs.len() {
            0 => { p.banner role="note" { "No runs picked yet: a comparison needs at least two." } }
            _ => { p.banner role="note" { "One run picked (" code { (refs[0]) } "): a comparison needs at least one more." } }
        }
        h2 { "How to pick runs" }
        ul {
            li { "On a run's page, " strong { "Compare with #1" } " compares it with the leader of its comparison group." }
            li { "On an operation's leaderboard each implementation links to its run; its page has that link." }
            li { "Or give run references below, or in the address: " code { "/compare?run=A&run=B" }
                " (each a run's uuid, its sha256 digest or its short id, the first 8 hex digits of its uuid)." }
        }
        form.compare action="/compare" method="get" {
            @for i in 0..3 {
                div.row {
                    label for={ "compare-run-" (i) } { "Run " (i + 1) @if i == 2 { " (optional)" } }
                    input id={ "compare-run-" (i) } type="text" name="run" maxlength="100" value=(refs.get(i).map(String::as_str).unwrap_or("")) autocomplete="off" spellcheck="false";
                }
            }
            button type="submit" { "Compare" }
        }
        @if let Some((a, b, what)) = example {
            p { "For example, " a href={ "/compare?run=" (a) "&run=" (b) } { "the two fastest runs of " (what) } "." }
        }
    };
    layout("Compare runs", main)
}

pub async fn page(State(state): State<Shared>, Query(q): Query<ComparePageQuery>) -> Answer {
    let model = state.model();
    let refs = references(&q.run);
    if refs.len() < 2 {
        return match q.format.as_deref() {
            None | Some("") | Some("html") => Ok(html_response(render_empty(&model, &refs))),
            Some(_) => {
                Err(Problem::bad_request(format!("compare takes 2 to 8 runs (run=A&run=B), {} given", refs.len())))
            }
        };
    }
    let (refs, c) = comparison(&model, &q.run)?;
    match q.format.as_deref() {
        None | Some("") | Some("html") => Ok(html_response(render(&c, &refs))),
        Some("json") => Ok(json_response(&c)),
        Some("markdown") | Some("md") => {
            Ok(([(header::CONTENT_TYPE, "text/markdown; charset=utf-8")], markdown(&c)).into_response())
        }
        Some("csv") => Ok((
            [
                (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
                (header::CONTENT_DISPOSITION, "attachment; filename=\"compare.csv\""),
            ],
            csv(&c),
        )
            .into_response()),
        Some(other) => Err(Problem::bad_request(format!("format {other:?}: use markdown, csv or json"))),
    }
}

pub async fn api(State(state): State<Shared>, Query(q): Query<CompareQuery>) -> Answer {
    Ok(json_response(&comparison(&state.model(), &q.run)?.1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn export_cells_cannot_carry_markup_or_formulas() {
        assert_eq!(markdown_cell("<img src=x onerror=alert(1)> | a\nb"), "&lt;img src=x onerror=alert(1)&gt; \\| a b");
        assert_eq!(markdown_cell("a & b"), "a &amp; b");
        for formula in ["=1+1", "+1", "@SUM(A1)", "\t=1", "\r=1", "-x"] {
            assert!(csv_cell(formula).trim_start_matches('"').starts_with('\''), "{formula:?}: {}", csv_cell(formula));
        }
        assert_eq!(csv_cell("-1.5"), "-1.5");
        assert_eq!(csv_cell("a,b"), "\"a,b\"");
    }
}
