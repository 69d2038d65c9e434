//! HTML pages, rendered with maud: every interpolated string is escaped at compile-time
//! checked call sites, so source and submitter text can never become markup. No page
//! carries inline script or style (the CSP forbids both); `/static/site.js` only adds
//! conveniences (copy buttons) to pages that work without it.

use maud::{DOCTYPE, Markup, PreEscaped, html};

use crate::catalog_views::{
    GpuItem, ImplementationView, OperationList, OperationView, ProjectList, ProjectView, RecordList, ServingList,
    ServingRunView,
};
use crate::model::ReadModel;
use crate::problem::Problem;
use crate::store::{Attestation, AttestationKind};
use crate::views::{Field, RunDossier, RunSummary};

pub const SITE_CSS: &str = include_str!("../assets/site.css");
pub const SITE_JS: &str = include_str!("../assets/site.js");

pub fn layout(title: &str, main: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · KernelIndex" }
                link rel="stylesheet" href="/static/site.css";
                link rel="alternate" type="application/atom+xml" title="KernelIndex records" href="/records.atom";
                script src="/static/site.js" defer {}
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header.site {
                    a.brand href="/" { "KernelIndex" }
                    nav aria-label="Main" {
                        ul {
                            li { a href="/resolve" { "Resolve" } }
                            li { a href="/records" { "Records" } }
                            li { a href="/projects" { "Projects" } }
                            li { a href="/gpus" { "GPUs" } }
                            li { a href="/serving" { "Serving" } }
                            li { a href="/docs" { "Docs" } }
                        }
                    }
                    form.search role="search" action="/" method="get" {
                        label for="site-q" { "Search" }
                        input #site-q type="search" name="q" maxlength="200" placeholder="operation, alias, implementation, GPU";
                        button type="submit" { "Go" }
                    }
                }
                main #main { (main) }
                footer.site {
                    p { "KernelIndex — an index of GPU-kernel benchmark runs. Records are "
                        code { "kernelindex.dev/v1alpha1" } " manifests known by their sha256 content digest. "
                        a href="/docs" { "How ranking works" } " · " a href="/api/v1/openapi.json" { "API" } }
                }
            }
        }
    }
}

pub fn error_page(problem: &Problem) -> (axum::http::StatusCode, Markup) {
    let body = layout(
        &problem.title,
        html! {
            h1 { (problem.title) }
            p { (problem.detail) }
            @if let Some(id) = &problem.request_id { p.muted { "Request id " code { (id) } } }
            p { a href="/" { "Back to the index" } }
        },
    );
    (problem.status_code(), body)
}

fn field_list(fields: &[Field]) -> Markup {
    html! {
        dl.fields {
            @for f in fields {
                div {
                    dt { (f.label) }
                    dd {
                        @if f.code {
                            code { (f.value) }
                            " " button.copy type="button" data-copy=(f.value) aria-label={ "Copy " (f.label) } { "Copy" }
                        } @else if let Some(href) = &f.href {
                            a href=(href) { (f.value) }
                        } @else {
                            (f.value)
                        }
                    }
                }
            }
        }
    }
}

fn section(id: &str, title: &str, body: Markup) -> Markup {
    html! {
        section id=(id) aria-labelledby={ (id) "-h" } {
            h2 id={ (id) "-h" } { (title) }
            (body)
        }
    }
}

pub fn attestation_form(run_id: &str) -> Markup {
    html! {
        details.form {
            summary { "Add a reproduction or note" }
            form method="post" action={ "/runs/" (run_id) "/attestations" } {
                p.muted { "Needs an API key with the attest scope (" code { "ki admin key create --scope attest" } ")." }
                div.row { label for="att-key" { "API key" } input #att-key name="apiKey" type="password" required autocomplete="off"; }
                div.row {
                    label for="att-kind" { "Kind" }
                    select #att-kind name="kind" {
                        @for k in AttestationKind::ALL { option value=(k.as_str()) { (k.label()) } }
                    }
                }
                div.row { label for="att-ns" { "Observed latency (ns, optional)" } input #att-ns name="observedNs" type="number" min="0" step="1"; }
                div.row { label for="att-url" { "Evidence URL (https, optional)" } input #att-url name="evidenceUrl" type="url" pattern="https://.*" maxlength="2000"; }
                div.row { label for="att-note" { "Note (optional)" } textarea #att-note name="note" maxlength="2000" rows="3" {} }
                button type="submit" { "File attestation" }
            }
        }
    }
}

fn attestation_list(items: &[Attestation]) -> Markup {
    html! {
        @if items.is_empty() {
            p { "No attestations yet." }
        } @else {
            ul.attestations {
                @for a in items {
                    li {
                        strong { (a.kind.label()) }
                        " by " (a.attester) " on " (crate::format::date_of(&a.created_at))
                        @if let Some(ns) = a.observed_ns { " · observed " (crate::format::duration_ns(ns as f64)) }
                        @if let Some(url) = &a.evidence_url { " · " a href=(url) rel="nofollow noopener" { "evidence" } }
                        @if let Some(note) = &a.note { p { (note) } }
                    }
                }
            }
        }
    }
}

pub fn run_page(d: &RunDossier) -> Markup {
    let p = &d.primary;
    let main = html! {
        nav.crumbs aria-label="Breadcrumb" {
            a href=(d.project.href) { (d.project.label) } " / " a href=(d.implementation.href) { (d.implementation.label) }
        }
        h1 { "Run " (d.short_id) }
        p.subtitle { (d.title) }
        p.badges {
            span.badge.status data-status=(d.status) { "status: " (d.status) }
            " "
            span.badge.evidence { "evidence: " (d.evidence_level) }
            " "
            span.badge { @if d.deployability.deployable { "deployable" } @else { "not deployable" } }
        }
        @for b in &d.banners {
            div.banner role="note" data-kind=(b.kind) {
                strong { (b.kind) ": " } (b.message)
                @if let Some(l) = &b.link { " " a href=(l.href) { (l.label) } }
            }
        }
        (section("primary", "Primary measurement", html! {
            p.big { span.value { (p.display) } " " span.stat { (p.statistic) } }
            p {
                @if let (Some(rank), true) = (p.rank, p.group_size > 0) {
                    "Rank " (rank) " of " (p.group_size) " in its comparison group"
                } @else {
                    "Not ranked: " (p.ineligible_reasons.join(", "))
                }
                " · " (p.profile) " · observed " (p.observed_at)
            }
            @if let Some(n) = p.sample_count { p { (n) " samples" } }
            @if let Some(i) = &p.interval_display { p { "interval " (i) } }
            @if let (Some(href), Some(leader)) = (&p.compare_href, &p.leader) {
                p { a.cta href=(href) { "Compare with #1 →" } " " span.muted { "(" (leader.implementation) ", " (leader.display) ")" } }
            } @else if p.rank == Some(1) {
                p { "This run holds #1 in its comparison group." }
            }
            @if let Some(x) = p.reference_speedup { p { (crate::format::factor(x)) "× reference" } }
            @if let Some(x) = p.baseline_speedup { p { (crate::format::factor(x)) "× baseline" } }
            @if !d.deployability.deployable { p.muted { "Not deployable: " (d.deployability.reasons.join(", ")) } }
        }))
        (section("identity", "Identity", field_list(&d.identity)))
        (section("correctness", "Correctness", field_list(&d.correctness)))
        (section("workload", "Workload", html! {
            (field_list(&d.workload.axes))
            @if !d.workload.constants.is_empty() {
                details { summary { "Constant axes" } (field_list(&d.workload.constants)) }
            }
            table {
                caption { "Tensors" }
                thead { tr { th scope="col" { "name" } th scope="col" { "dtype" } th scope="col" { "shape" } } }
                tbody { @for t in &d.workload.tensors { tr { td { (t.name) } td { (t.dtype) } td { (t.shape) } } } }
            }
            @if let Some(c) = &d.workload.definition_comparator { p { "definition comparator " code { (c) } } }
        }))
        (section("measurements", "Measurements", html! {
            @if d.measurements.is_empty() { p { "No measurements recorded." } }
            ul { @for m in &d.measurements {
                li { (m.metric) " · " (m.statistic) " " strong { (m.display) }
                    @if let Some(n) = m.sample_count { " (" (n) " samples)" } }
            } }
        }))
        (section("protocol", "Protocol", field_list(&d.protocol)))
        (section("environment", "Environment", field_list(&d.environment)))
        (section("artifacts", "Artifacts", html! {
            @if d.artifacts.is_empty() { p { "No artifacts published with this run." } }
            @else { ul { @for a in &d.artifacts {
                li { (a.kind) " · " code { (a.digest) } " · " (a.media_type)
                    @if let Some(s) = a.size_bytes { " · " (s) " bytes" }
                    @if let Some(l) = &a.license { " · " (l) }
                    @if let Some(u) = &a.uri { @if u.starts_with("https://") { " · " a href=(u) rel="nofollow noopener" { "source" } } }
                }
            } } }
        }))
        (section("replications", "Replications and notes", html! {
            (attestation_list(&d.attestations))
            p.muted { "Community attestations. They never change the evidence level; only a KernelIndex-controlled rerun does." }
            (attestation_form(&d.id))
        }))
        (section("manifest", "Canonical manifest", html! {
            details {
                summary { "Show manifest" }
                pre { code { (serde_json::to_string_pretty(&d.manifest).unwrap_or_default()) } }
            }
        }))
        (section("cite", "Cite this record", html! {
            p { "Permalink " a href=(d.citation.permalink) { (d.citation.permalink) } }
            p { "Digest " code { (d.citation.digest) } " · accessed " (d.citation.accessed) }
            p { (d.citation.text) }
            details { summary { "BibTeX" } pre { code { (d.citation.bibtex) } } }
        }))
        (section("report", "Report an issue", html! {
            p { a href=(d.report_issue_href) rel="noopener" { "Report an issue with this run" } }
        }))
        footer.record {
            p {
                @if let Some(p) = &d.published_at { "Published " (p) } @else { "Unpublished" }
                @if let Some(s) = &d.source { " · " (s.label) }
                @if let Some(l) = &d.licence { " · " (l) }
            }
            p {
                @if let Some(op) = &d.operation { a href=(op.href) { "All results for " (op.label) " →" } " · " }
                a href=(d.json_href) type="application/json" { "JSON" }
            }
        }
    };
    layout(&format!("Run {}", d.short_id), main)
}

/// Raw markup from trusted server code (the SVG chart), never from data.
pub fn trusted(markup: String) -> PreEscaped<String> {
    PreEscaped(markup)
}

// ---------- shared bits ----------

fn pager(base: &str, page: usize, pages: usize) -> Markup {
    let sep = if base.contains('?') { '&' } else { '?' };
    html! {
        @if pages > 1 {
            nav.pager aria-label="Pages" {
                @if page > 1 { a href={ (base) (sep) "page=" (page - 1) } rel="prev" { "← Previous" } }
                span { "Page " (page) " of " (pages) }
                @if page < pages { a href={ (base) (sep) "page=" (page + 1) } rel="next" { "Next →" } }
            }
        }
    }
}

fn runs_table(caption: &str, runs: &[RunSummary]) -> Markup {
    html! {
        table {
            caption { (caption) }
            thead { tr {
                th scope="col" class="num" { "rank" } th scope="col" { "run" } th scope="col" { "implementation" }
                th scope="col" { "hardware" } th scope="col" class="num" { "value" } th scope="col" { "evidence" } th scope="col" { "observed" }
            } }
            tbody { @for r in runs { tr {
                td.num { @if let Some(rank) = r.rank { (rank) } @else { "—" } }
                td { a href=(r.href) { (r.short_id) } }
                td { (r.implementation) }
                td { (r.hardware) }
                td.num { (r.display) " " span.muted { (r.statistic) } }
                td { (r.trust) }
                td { (crate::format::date_of(&r.observed_at)) }
            } } }
        }
    }
}

// ---------- operations ----------

pub fn operation_page(v: &OperationView) -> Markup {
    let main = html! {
        h1 { (v.title) }
        p.subtitle { (v.family) @if let Some(d) = &v.description { " — " (d) } }
        @if !v.aliases.is_empty() { p { "Also known as " (v.aliases.join(", ")) } }
        p { a href={ "/api/v1/operations/" (v.slug) } type="application/json" { "JSON" } " · "
            a href={ "/resolve?operation=" (crate::views::percent_encode(&v.name)) } { "Resolve a workload of this operation" } }
        (section("records", "Current records per workload", html! {
            @if v.records.is_empty() { p { "No eligible runs yet." } } @else {
                table {
                    caption { "Rank-1 run of every comparison group (" (v.records_total) " groups" @if v.records_total > v.records.len() { ", first " (v.records.len()) " shown" } ")" }
                    thead { tr { th scope="col" { "workload" } th scope="col" { "hardware" } th scope="col" { "holder" } th scope="col" class="num" { "value" } th scope="col" class="num" { "runs" } } }
                    tbody { @for r in &v.records { tr {
                        td { (r.workload) } td { (r.hardware) }
                        td { a href=(r.holder.href) { (r.holder.implementation) } }
                        td.num { (r.holder.display) }
                        td.num { (r.eligible_runs) }
                    } } }
                }
            }
        }))
        (section("leaderboard", "Leaderboard", html! {
            @if let Some(l) = &v.leaderboard {
                p { "The largest comparison group: " (l.workload) " on " (l.hardware) ", protocol " (l.protocol) ". "
                    "Other protocols and hardware are ranked apart below." }
                (runs_table(&format!("{} eligible runs, best first", l.eligible_runs), &l.entries))
            } @else { p { "No eligible runs yet." } }
            @if !v.other_groups.is_empty() {
                details { summary { "Other comparison groups (" (v.other_groups.len()) ")" }
                    table { thead { tr { th scope="col" { "workload" } th scope="col" { "hardware" } th scope="col" { "protocol" } th scope="col" { "#1" } th scope="col" class="num" { "runs" } } }
                        tbody { @for g in &v.other_groups { tr {
                            td { (g.workload) } td { (g.hardware) } td { (g.protocol) }
                            td { @if let Some(first) = g.entries.first() { a href=(first.href) { (first.implementation) " · " (first.display) } } }
                            td.num { (g.eligible_runs) }
                        } } } }
                }
            }
        }))
        (section("sweep", "Sweep", html! {
            @if let Some(svg) = v.sweep.as_ref().and_then(crate::chart::sweep_svg) {
                figure { (trusted(svg))
                    figcaption { "Latency against " (v.sweep.as_ref().map(|s| s.axis.as_str()).unwrap_or("")) ", one line per implementation (best run per axis value, log scale)." } }
            } @else { p { "Not enough measured cases along one axis to draw a sweep." } }
        }))
        (section("implementations", "Implementations", html! {
            ul { @for i in &v.implementations { li { a href=(i.href) { (i.slug) } " — " (i.project) " · " (i.runs) " runs" } } }
            @if v.implementations_total > v.implementations.len() { p.muted { (v.implementations_total) " in all; the most-run shown." } }
        }))
        (section("semantics", "Semantics", html! {
            table { caption { "Axes" } thead { tr { th scope="col" { "name" } th scope="col" { "role" } th scope="col" { "type" } th scope="col" { "value" } } }
                tbody { @for a in &v.semantics.axes { tr { td { (a.name) } td { (a.role) } td { (a.kind) } td { (a.value.as_deref().unwrap_or("")) } } } } }
            table { caption { "Inputs" } thead { tr { th scope="col" { "name" } th scope="col" { "kind" } th scope="col" { "dtype" } th scope="col" { "shape" } } }
                tbody { @for p in &v.semantics.inputs { tr { td { (p.name) } td { (p.kind) } td { (p.dtype) } td { (p.shape) } } } } }
            table { caption { "Outputs" } thead { tr { th scope="col" { "name" } th scope="col" { "kind" } th scope="col" { "dtype" } th scope="col" { "shape" } } }
                tbody { @for p in &v.semantics.outputs { tr { td { (p.name) } td { (p.kind) } td { (p.dtype) } td { (p.shape) } } } } }
            dl.fields { @for (k, val) in &v.semantics.properties { div { dt { (k) } dd { (val) } } } }
            @if let Some(r) = &v.semantics.reference { details { summary { "Reference" } pre { code { (serde_json::to_string_pretty(r).unwrap_or_default()) } } } }
            p.muted { "Semantic digest " code { (v.semantic_digest) } }
        }))
    };
    layout(&v.title, main)
}

pub fn operations_page(list: &OperationList) -> Markup {
    layout(
        "Operations",
        html! {
            h1 { "Operations" }
            p { (list.total) " operations, most-measured first." }
            table { thead { tr { th scope="col" { "operation" } th scope="col" { "family" } th scope="col" class="num" { "workloads" } th scope="col" class="num" { "runs" } } }
                tbody { @for o in &list.operations { tr { td { a href=(o.href) { (o.title) } } td { (o.family) } td.num { (o.workloads) } td.num { (o.runs) } } } } }
            (pager("/operations", list.page, list.pages))
        },
    )
}

// ---------- home ----------

pub fn home_page(model: &ReadModel, query: &str) -> Markup {
    let results = model.search(query, 100);
    let main = html! {
        h1 { "KernelIndex" }
        p { "The fastest verified kernel for your exact workload: " (model.runs.len()) " benchmark runs of "
            (model.operations.len()) " operations on " (model.runs_by_gpu.len()) " GPUs, ranked inside comparison groups that share operation, workload, protocol, environment and correctness rule." }
        form role="search" action="/" method="get" {
            label for="home-q" { "Search operations, aliases, implementations and hardware" }
            div { input #home-q type="search" name="q" value=(query) maxlength="200"; " " button type="submit" { "Search" } }
        }
        @if !query.is_empty() {
            section aria-labelledby="results-h" {
                h2 #results-h { (results.len()) " results for “" (query) "”" }
                ul.results { @for r in &results { li { span.badge { (r.kind) } " " a href=(r.href) { (r.label) } " " span.muted { (r.detail) } } } }
            }
        } @else {
            section aria-labelledby="ops-h" {
                h2 #ops-h { "Most-measured operations" }
                ul { @for o in model.operation_list(1).operations.iter().take(15) { li { a href=(o.href) { (o.title) } " · " (o.runs) " runs" } } }
                p { a href="/operations" { "All operations →" } }
            }
            section aria-labelledby="rec-h" {
                h2 #rec-h { "Latest records" }
                ul { @for r in model.record_list(1, 10).records { li {
                    (crate::format::date_of(&r.at)) " · "
                    @if let Some(op) = &r.operation { a href=(op.href) { (op.label) } " · " }
                    @if let Some(h) = &r.holder { a href=(h.href) { (h.implementation) } " " (h.display) }
                } } }
                p { a href="/records" { "All records →" } }
            }
        }
    };
    layout("Search", main)
}

// ---------- resolve ----------

#[derive(Debug, Default)]
pub struct ResolveForm {
    pub operation: String,
    pub axes: String,
    pub dtypes: String,
    pub hardware: String,
    pub framework: String,
}

fn cohort_block(c: &ki_ranking::CohortView) -> Markup {
    let axes: Vec<String> = c.axes.iter().map(|(k, v)| format!("{k}={}", crate::views::scalar(v))).collect();
    html! {
        article.cohort {
            h3 { (c.hardware.as_deref().unwrap_or("unknown hardware")) " · " (c.protocol.as_deref().unwrap_or("")) }
            p.muted { (axes.join(", ")) " · " (c.dtypes.join("/")) " · " (c.eligible_runs) " eligible of " (c.runs) " runs" }
            ol { @for r in &c.fastest { li {
                a href={ "/runs/" (r.run_id) } { (r.implementation) } " — "
                (match (r.value, r.unit.as_deref()) { (Some(v), Some(u)) => crate::format::measured(v, u), (Some(v), None) => crate::format::plain_number(v), _ => "—".into() })
                " · rank " (r.rank.map(|x| x.to_string()).unwrap_or_else(|| "—".into())) " · " (crate::views::code_of(&r.trust))
            } } }
            @if let Some(v) = &c.best_verified { p { "Best verified: " a href={ "/runs/" (v.run_id) } { (v.implementation) } } }
            @if let Some(d) = &c.best_deployable { p { "Best deployable: " a href={ "/runs/" (d.run_id) } { (d.implementation) } } }
        }
    }
}

pub fn resolve_page(form: &ResolveForm, answer: Option<&ki_ranking::ResolveResponse>, error: Option<&str>) -> Markup {
    let main = html! {
        h1 { "Resolve a workload" }
        p { "Name an operation and the values of its axes; the index answers with the fastest eligible runs of every comparison group that measured exactly that case, or the nearest measured cases along one differing axis." }
        form method="get" action="/resolve" {
            div.row { label for="r-op" { "Operation (name, slug or alias)" } input #r-op name="operation" required value=(form.operation) maxlength="200"; }
            div.row { label for="r-axes" { "Axes (name=value, comma-separated)" } input #r-axes name="axes" value=(form.axes) maxlength="2000" placeholder="batch_size=16, num_pages=1070"; }
            div.row { label for="r-dtypes" { "Dtypes (optional)" } input #r-dtypes name="dtypes" value=(form.dtypes) maxlength="200" placeholder="bf16"; }
            div.row { label for="r-hw" { "Hardware (optional)" } input #r-hw name="hardware" value=(form.hardware) maxlength="200" placeholder="NVIDIA B200"; }
            div.row { label for="r-fw" { "Framework (optional)" } input #r-fw name="framework" value=(form.framework) maxlength="200"; }
            button type="submit" { "Resolve" }
        }
        @if let Some(message) = error { p.banner role="alert" { (message) } }
        @if let Some(a) = answer {
            section #answer aria-labelledby="answer-h" {
                h2 #answer-h { "Answer: " (crate::views::code_of(&a.mode)) }
                @if let Some(op) = &a.operation { p { "Operation " a href={ "/operations/" (op.slug) } { (op.name) } " · variable axes: " (op.variable_axes.join(", ")) } }
                @for n in &a.notes { p.muted { (n) } }
                @for c in &a.cohorts { (cohort_block(c)) }
                @if a.omitted_cohorts > 0 { p.muted { (a.omitted_cohorts) " more comparison groups not shown." } }
                @if !a.nearest.is_empty() {
                    h2 { "Nearest measured cases" }
                    @for n in &a.nearest {
                        h3 { (crate::views::code_of(&n.side)) ": " (n.axis) " = " (crate::views::scalar(&n.measured)) " (asked " (crate::views::scalar(&n.requested)) ")" }
                        @for c in &n.cohorts { (cohort_block(c)) }
                    }
                }
            }
        }
    };
    layout("Resolve", main)
}

// ---------- compare ----------

fn summary_value(r: &ki_ranking::RunSummary) -> String {
    match (r.value, r.unit.as_deref()) {
        (Some(v), Some(u)) => crate::format::measured(v, u),
        (Some(v), None) => crate::format::plain_number(v),
        _ => "—".into(),
    }
}

pub fn compare_page(c: &ki_ranking::Comparison, refs: &[String]) -> Markup {
    let query: String =
        refs.iter().map(|r| format!("run={}", crate::views::percent_encode(r))).collect::<Vec<_>>().join("&");
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
                td { a href={ "/runs/" (r.summary.run_id) } { (crate::views::short_id(&r.summary.run_id)) } }
                td { (r.summary.implementation) } td { (r.summary.project) }
                td { (r.summary.hardware.as_deref().unwrap_or("")) }
                td.num { (summary_value(&r.summary)) " " span.muted { (r.summary.statistic.as_deref().unwrap_or("")) } }
                td.num { (r.relative_to_best_in_group.map(|x| format!("{x:.3}")).unwrap_or_else(|| "—".into())) }
                td.num { (r.summary.rank.map(|x| x.to_string()).unwrap_or_else(|| "—".into())) }
                td { (crate::views::code_of(&r.summary.trust)) }
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

pub fn compare_markdown(c: &ki_ranking::Comparison) -> String {
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

pub fn compare_csv(c: &ki_ranking::Comparison) -> String {
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

// ---------- records ----------

pub fn records_page(list: &RecordList) -> Markup {
    layout(
        "Records",
        html! {
            h1 { "Records" }
            p { "Every time a comparison group gets a new fastest eligible run, the index records it (policy ranking-v1). " (list.total) " events, newest first. "
                a href="/records.atom" type="application/atom+xml" { "Atom feed" } " · " a href="/api/v1/records" type="application/json" { "JSON" } }
            table { caption { "Record events" }
                thead { tr { th scope="col" { "when" } th scope="col" { "operation" } th scope="col" { "new holder" } th scope="col" class="num" { "value" } th scope="col" { "previous" } th scope="col" { "cause" } } }
                tbody { @for r in &list.records { tr {
                    td { (crate::format::date_of(&r.at)) }
                    td { @if let Some(op) = &r.operation { a href=(op.href) { (op.label) } } }
                    td { @if let Some(h) = &r.holder { a href=(h.href) { (h.implementation) } " on " (h.hardware) } }
                    td.num { @if let Some(h) = &r.holder { (h.display) } }
                    td { @if let Some(p) = &r.previous { a href=(p.href) { (p.label) } " " (r.previous_display.as_deref().unwrap_or("")) } @else { "—" } }
                    td { (r.cause) }
                } } }
            }
            (pager("/records", list.page, list.pages))
        },
    )
}

fn xml_escape(text: &str) -> String {
    crate::chart::escape(text)
}

pub fn records_atom(list: &RecordList, base_url: &str) -> String {
    let updated = list.records.first().map(|r| r.at.clone()).unwrap_or_else(crate::format::now_rfc3339);
    let mut out = String::with_capacity(32 * 1024);
    out.push_str("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<feed xmlns=\"http://www.w3.org/2005/Atom\">\n");
    out.push_str(&format!(
        "<title>KernelIndex records</title>\n<id>{0}/records</id>\n<link rel=\"self\" href=\"{0}/records.atom\"/>\n<link href=\"{0}/records\"/>\n<updated>{1}</updated>\n",
        xml_escape(base_url),
        xml_escape(&updated)
    ));
    for r in &list.records {
        let Some(h) = &r.holder else { continue };
        let op = r.operation.as_ref().map(|o| o.label.as_str()).unwrap_or("");
        let title = format!("{op}: {} holds the record at {} on {}", h.implementation, h.display, h.hardware);
        out.push_str(&format!(
            "<entry>\n<title>{}</title>\n<id>{}/runs/{}#record-{}</id>\n<link href=\"{}{}\"/>\n<updated>{}</updated>\n<summary>{}</summary>\n</entry>\n",
            xml_escape(&title),
            xml_escape(base_url),
            xml_escape(&h.id),
            xml_escape(&r.at),
            xml_escape(base_url),
            xml_escape(&h.href),
            xml_escape(&r.at),
            xml_escape(&format!("cause {}; comparison key {}", r.cause, r.comparison_key)),
        ));
    }
    out.push_str("</feed>\n");
    out
}

// ---------- projects, implementations, gpus ----------

pub fn projects_page(list: &ProjectList) -> Markup {
    layout(
        "Projects",
        html! {
            h1 { "Projects" }
            p { (list.total) " projects, most implementations first." }
            table { thead { tr { th scope="col" { "project" } th scope="col" { "slug" } th scope="col" class="num" { "implementations" } } }
                tbody { @for p in &list.projects { tr { td { a href=(p.href) { (p.name) } } td { code { (p.slug) } } td.num { (p.implementations) } } } } }
            (pager("/projects", list.page, list.pages))
        },
    )
}

pub fn project_page(v: &ProjectView) -> Markup {
    layout(
        &v.name,
        html! {
            h1 { (v.name) }
            p { code { (v.slug) } @if let Some(l) = &v.licence { " · licence " (l) }
                @if let Some(u) = &v.canonical_url { @if u.starts_with("https://") { " · " a href=(u) rel="noopener" { (u) } } } }
            p { a href={ "/api/v1/projects/" (v.slug) } type="application/json" { "JSON" } }
            (section("implementations", "Implementations", html! {
                ul { @for i in &v.implementations { li { a href=(i.href) { (i.slug) } " — " (i.title) " · " (i.runs) " runs" } } }
                @if v.implementations_total > v.implementations.len() { p.muted { (v.implementations_total) " in all; the most-run shown." } }
            }))
            (section("manifest", "Manifest", html! { details { summary { "Show manifest" } pre { code { (serde_json::to_string_pretty(&v.manifest).unwrap_or_default()) } } } }))
        },
    )
}

pub fn implementation_page(v: &ImplementationView) -> Markup {
    layout(
        &v.slug,
        html! {
            nav.crumbs aria-label="Breadcrumb" { a href=(v.project.href) { (v.project.label) } " / " (v.slug) }
            h1 { (v.slug) }
            p.subtitle { (v.title) }
            dl.fields {
                div { dt { "project" } dd { a href=(v.project.href) { (v.project.label) } } }
                @if let Some(op) = &v.operation { div { dt { "operation" } dd { a href=(op.href) { (op.label) } } } }
                @if let Some(r) = &v.revision { div { dt { "revision" } dd { code { (r) } } } }
                @if let Some(l) = &v.language { div { dt { "language" } dd { (l) } } }
                div { dt { "licence" } dd { (v.licence.as_deref().unwrap_or("none declared")) } }
                div { dt { "source available" } dd { (if v.source_available { "yes" } else { "no" }) } }
                div { dt { "install" } dd { @if let Some(c) = &v.install_command { code { (c) } } @else { "no install recipe" } } }
                div { dt { "digest" } dd { code { (v.digest) } } }
            }
            p { a href={ "/api/v1/implementations/" (v.slug) } type="application/json" { "JSON" } }
            (runs_table(&format!("Runs ({} in all, newest first)", v.runs_total), &v.runs))
            (section("manifest", "Manifest", html! { details { summary { "Show manifest" } pre { code { (serde_json::to_string_pretty(&v.manifest).unwrap_or_default()) } } } }))
        },
    )
}

pub fn gpus_page(gpus: &[GpuItem]) -> Markup {
    layout(
        "GPUs",
        html! {
            h1 { "GPUs" }
            p { "Hardware with benchmark runs in the index. A run is ranked only against runs on the same environment." }
            table { thead { tr { th scope="col" { "GPU" } th scope="col" { "vendor" } th scope="col" { "architectures" } th scope="col" class="num" { "runs" } th scope="col" class="num" { "operations" } th scope="col" class="num" { "#1 runs" } } }
                tbody { @for g in gpus { tr id=(g.anchor) {
                    td { a href={ "/?q=" (crate::views::percent_encode(&g.model)) } { (g.model) } } td { (g.vendor) } td { (g.architectures.join(", ")) }
                    td.num { (g.runs) } td.num { (g.operations) } td.num { (g.records_held) }
                } } } }
        },
    )
}

// ---------- serving ----------

pub fn serving_page(list: &ServingList) -> Markup {
    layout(
        "Serving",
        html! {
            h1 { "Serving" }
            p { "End-to-end inference results (MLPerf Inference and others): " (list.total) " runs. Serving runs are grouped by cohort (model, tokenizer, workload, protocol, topology, quality policy, metrics)." }
            p { "Workloads: " @for (i, w) in list.workloads.iter().enumerate() { @if i > 0 { " · " } a href=(w.href) { (w.label) } } }
            table { thead { tr { th scope="col" { "run" } th scope="col" { "model" } th scope="col" { "scenario" } th scope="col" { "system" } th scope="col" { "accelerators" } th scope="col" class="num" { "result" } th scope="col" { "observed" } } }
                tbody { @for r in &list.runs { tr {
                    td { a href=(r.href) { (r.title) } } td { (r.model) } td { (r.scenario) } td { (r.system) }
                    td { (r.accelerators) " × " (r.accelerator) } td.num { (r.headline) } td { (r.observed_at) }
                } } } }
            (pager("/serving", list.page, list.pages))
        },
    )
}

pub fn serving_run_page(v: &ServingRunView) -> Markup {
    let r = &v.item;
    layout(
        &r.title,
        html! {
            h1 { (r.title) }
            p.badges { span.badge { "status: " (r.status) } " " span.badge { "evidence: reported" } }
            dl.fields {
                div { dt { "model" } dd { (r.model) } }
                div { dt { "workload" } dd { (r.workload) } }
                div { dt { "scenario" } dd { (r.scenario) } }
                div { dt { "system" } dd { (r.system) } }
                div { dt { "accelerators" } dd { (r.accelerators) " × " (r.accelerator) } }
                div { dt { "quality policy" } dd { (v.quality_policy) } }
                div { dt { "observed" } dd { (r.observed_at) } }
                div { dt { "cohort key" } dd { code { (v.cohort_key) } } }
                div { dt { "run digest" } dd { code { (v.digest) } } }
            }
            (section("measurements", "Measurements", html! { ul { @for (m, s, val) in &v.measurements { li { (m) " · " (s) " " strong { (val) } } } } }))
            (section("manifest", "Canonical manifest", html! {
                details { summary { "Show manifest" } pre { code { (serde_json::to_string_pretty(&v.manifest).unwrap_or_default()) } } }
                details { summary { "Configuration" } pre { code { (serde_json::to_string_pretty(&v.configuration).unwrap_or_default()) } } }
                details { summary { "Workload" } pre { code { (serde_json::to_string_pretty(&v.workload_manifest).unwrap_or_default()) } } }
            }))
            footer.record { p { (v.source.as_deref().unwrap_or("")) @if let Some(l) = &v.licence { " · " (l) } } p { a href={ "/api/v1/serving/runs/" (r.id) } type="application/json" { "JSON" } } }
        },
    )
}

// ---------- submissions ----------

pub fn submission_page(s: &crate::store::Submission) -> Markup {
    layout(
        &format!("Submission {}", crate::views::short_id(&s.id)),
        html! {
            h1 { "Submission " (crate::views::short_id(&s.id)) }
            p.subtitle { (s.title) }
            @if s.published_at.is_none() { div.banner role="note" data-kind="unpublished" { strong { "unpublished: " } "awaiting review by an index admin; it is not ranked." } }
            dl.fields {
                div { dt { "evidence" } dd { (s.trust) } }
                div { dt { "submitter" } dd { (s.submitter) } }
                div { dt { "submitted" } dd { (s.created_at) } }
                div { dt { "published" } dd { (s.published_at.as_deref().unwrap_or("not yet")) } }
            }
            table { caption { "Manifests (validated and digested)" }
                thead { tr { th scope="col" { "kind" } th scope="col" { "name" } th scope="col" { "title" } th scope="col" { "digest" } } }
                tbody { @for d in &s.documents { tr { td { (d.kind) } td { (d.name) } td { (d.title.as_deref().unwrap_or("")) } td { code { (d.digest) } } } } } }
            p { a href={ "/api/v1/submissions/" (s.id) } type="application/json" { "JSON" } }
        },
    )
}

// ---------- docs ----------

pub fn docs_page(model: &ReadModel, routes: &[crate::openapi::RouteDoc]) -> Markup {
    layout(
        "Docs",
        html! {
            h1 { "How KernelIndex works" }
            (section("identity", "Identity", html! {
                p { "Every record is a " code { "kernelindex.dev/v1alpha1" } " manifest. Its digest is the sha256 of the RFC 8785 canonical JSON of its apiVersion, kind and spec. Two runs are compared only when they share a comparison key: operation, workload, protocol, environment, correctness rule and primary metric." }
            }))
            (section("ranking", "Ranking (ranking-v1)", html! {
                p { "A run is eligible when its status is passed, it is published, not retracted, not superseded by a published run, and has a primary metric; otherwise the page names its reasons (UNPUBLISHED, STATUS_…, RETRACTED, SUPERSEDED, MISSING_PRIMARY_METRIC)." }
                p { "Ranks are dense inside one comparison group, best first. Equal values tie; otherwise runs tie only when both carry confidence intervals that overlap, and never in a source-native group. Inside a tie: higher evidence, then newer observation, then id." }
            }))
            (section("evidence", "Evidence levels", html! {
                ul {
                    li { strong { "replicated" } " — at least two independent replications" }
                    li { strong { "verified" } " — reproduced by KernelIndex's own runner" }
                    li { strong { "reproducible" } " — source available and raw evidence present" }
                    li { strong { "reported" } " — the source's claim" }
                }
                p { "Community attestations never change the evidence level." }
            }))
            (section("sources", "Sources", html! {
                dl.fields { @for s in &model.sources.rows {
                    div id={ "source-" (crate::model::text(s, "slug")) } {
                        dt { (crate::model::text(s, "name")) }
                        dd { (s.get("policy").and_then(|p| p.get("license")).and_then(|l| l.as_str()).unwrap_or("terms not recorded"))
                            " — " (s.get("policy").and_then(|p| p.get("terms")).and_then(|l| l.as_str()).unwrap_or("")) }
                    }
                } }
            }))
            (section("api", "API", html! {
                p { "Every page has a JSON twin under " code { "/api/v1" } ". Errors are RFC 9457 problem+json with a requestId. Writes take an API key (" code { "Authorization: Bearer ki_…" } ") created with " code { "ki admin key create" } "; each key has scopes and a daily quota (429 with Retry-After when spent). "
                    a href="/api/v1/openapi.json" { "OpenAPI document" } }
                table { thead { tr { th scope="col" { "method" } th scope="col" { "path" } th scope="col" { "what" } } }
                    tbody { @for r in routes { tr { td { (r.method.as_str().to_uppercase()) } td { code { (r.path) } } td { (r.summary) } } } } }
            }))
        },
    )
}
