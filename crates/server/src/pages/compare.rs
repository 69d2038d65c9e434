//! Compare (`/compare?run=…`): 2 to 8 runs side by side, with Markdown, CSV and JSON exports.

use axum::extract::{RawQuery, State};
use axum::http::header;
use axum::response::IntoResponse;
use maud::{Markup, html};

use super::{Answer, Shared, html_response, json_response, layout, query_value};
use crate::http::parse_pairs;
use crate::model::ReadModel;
use crate::problem::Problem;

// ---------- compare ----------

fn summary_value(r: &ki_ranking::RunSummary) -> String {
    ki_model::units::value(r.value, r.unit.as_deref())
}

pub fn render(c: &ki_ranking::Comparison, refs: &[String]) -> Markup {
    let query: String =
        refs.iter().map(|r| format!("run={}", crate::pages::percent_encode(r))).collect::<Vec<_>>().join("&");
    let main = html! {
        h1 { "Compare " (c.runs.len()) " runs" }
        @if c.same_comparison_group { p { "All runs share one comparison group: their values compare directly." } }
        @else { p.banner role="note" { "These runs are in different comparison groups (workload, protocol, environment or correctness differ); compare values with care." } }
        @if !c.differing_axes.is_empty() { p { "Axes that differ: " (c.differing_axes.join(", ")) } }
        table {
            caption { "Side by side" }
            thead { tr { th scope="col" { "run" } th scope="col" { "implementation" } th scope="col" { "project" } th scope="col" { "hardware" }
                th scope="col" class="num" { "value" } th scope="col" class="num" { "× best in group" } th scope="col" class="num" { "rank" } th scope="col" { "evidence" } } }
            tbody { @for r in &c.runs { tr {
                td { a href={ "/runs/" (r.summary.run_id) } { (crate::pages::short_id(&r.summary.run_id)) } }
                td { (r.summary.implementation) } td { (r.summary.project) }
                td { (r.summary.hardware.as_deref().unwrap_or("")) }
                td.num { (summary_value(&r.summary)) " " span.muted { (r.summary.statistic.as_deref().unwrap_or("")) } }
                td.num { (r.relative_to_best_in_group.map(|x| format!("{x:.3}")).unwrap_or_else(|| "—".into())) }
                td.num { (r.summary.rank.map(|x| x.to_string()).unwrap_or_else(|| "—".into())) }
                td { (crate::pages::code_of(&r.summary.trust)) }
            } } }
        }
        p { "Export: " a href={ "/compare?" (query) "&format=markdown" } { "Markdown" } " · "
            a href={ "/compare?" (query) "&format=csv" } { "CSV" } " · "
            a href={ "/compare?" (query) "&format=json" } { "JSON" } }
    };
    layout("Compare", main)
}

const COMPARE_COLUMNS: [&str; 10] = [
    "run",
    "implementation",
    "project",
    "hardware",
    "metric",
    "statistic",
    "value",
    "unit",
    "relative_to_best",
    "rank",
];

fn compare_cells(r: &ki_ranking::views::ComparedRun) -> [String; 10] {
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
        r.summary.rank.map(|x| x.to_string()).unwrap_or_default(),
    ]
}

pub fn markdown(c: &ki_ranking::Comparison) -> String {
    // Pipes and newlines inside cells would break the table.
    let cell = |s: &str| s.replace('|', "\\|").replace(['\n', '\r'], " ");
    let mut out = format!("| {} |\n|{}\n", COMPARE_COLUMNS.join(" | "), "---|".repeat(COMPARE_COLUMNS.len()));
    for r in &c.runs {
        out.push_str("| ");
        out.push_str(&compare_cells(r).iter().map(|s| cell(s)).collect::<Vec<_>>().join(" | "));
        out.push_str(" |\n");
    }
    out
}

pub fn csv(c: &ki_ranking::Comparison) -> String {
    // RFC 4180 quoting; a leading =,+,-,@ is prefixed so spreadsheets do not run it.
    let cell = |s: &str| {
        let s = if s.starts_with(['=', '+', '@']) || (s.starts_with('-') && s.parse::<f64>().is_err()) {
            format!("'{s}")
        } else {
            s.to_string()
        };
        if s.contains([',', '"', '\n', '\r']) { format!("\"{}\"", s.replace('"', "\"\"")) } else { s }
    };
    let mut out = COMPARE_COLUMNS.join(",");
    out.push_str("\r\n");
    for r in &c.runs {
        out.push_str(&compare_cells(r).iter().map(|s| cell(s)).collect::<Vec<_>>().join(","));
        out.push_str("\r\n");
    }
    out
}

// ---------- compare ----------

fn comparison(model: &ReadModel, q: &Option<String>) -> Result<(Vec<String>, ki_ranking::Comparison), Problem> {
    let mut refs: Vec<String> = Vec::new();
    for (k, v) in parse_pairs(q.as_deref().unwrap_or("")) {
        if k == "run" {
            refs.extend(v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string));
        }
        if refs.len() > 8 {
            break;
        }
    }
    let borrowed: Vec<&str> = refs.iter().map(String::as_str).collect();
    match model.judgement.compare(&borrowed) {
        Ok(c) => Ok((refs, c)),
        Err(ki_ranking::CompareError::Lookup(ki_ranking::LookupError::NotFound { given, .. })) => {
            Err(Problem::not_found(format!("no run matches {given:?}")))
        }
        Err(e) => Err(Problem::bad_request(e.to_string())),
    }
}

pub async fn page(State(state): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    let model = state.model();
    let (refs, c) = comparison(&model, &q)?;
    match query_value(&q, "format").as_deref() {
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

pub async fn api(State(state): State<Shared>, RawQuery(q): RawQuery) -> Answer {
    Ok(json_response(&comparison(&state.model(), &q)?.1))
}
