//! One GPU model (`/gpus/{slug}`): per operation with runs on it, the best verified and the
//! best reported run; its activity (runs, first and latest observation); its evidence mix.
//!
//! Latencies are compared only inside one comparison group, so a "best" here is the fastest
//! run of one evidence class in the group (on this GPU, of this operation) that holds the
//! most eligible runs of that class; the page names the group's workload beside it.

use std::collections::BTreeMap;

use axum::extract::{Path, State};
use ki_ranking::TrustLevel;
use maud::{Markup, html};
use serde::Serialize;

use super::{Answer, Shared, html_response, json_response, layout, section};
use crate::model::{PAGE_LIMIT, RunSummary};
use crate::model::{ReadModel, slugify};
use crate::problem::Problem;

/// Which runs a "best" is chosen among.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// Evidence verified or replicated: KernelIndex's own runner measured it (or two
    /// independent replications did).
    Verified,
    /// Evidence only reported: the source's claim, not re-measured.
    Reported,
}

impl Claim {
    pub fn admits(self, trust: TrustLevel) -> bool {
        match self {
            Claim::Verified => trust >= TrustLevel::Verified,
            Claim::Reported => trust == TrustLevel::Reported,
        }
    }
}

/// The fastest eligible run of one evidence class, in the comparison group with the most
/// eligible runs of that class.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct BestRun {
    pub run: RunSummary,
    /// The group's workload (variable axes and dtypes).
    pub workload: String,
    pub comparison_key: String,
    /// Eligible runs of this evidence class in that group.
    pub group_runs: usize,
    /// Comparison groups holding eligible runs of this evidence class (the best is chosen in one).
    pub groups: usize,
    /// The fastest deployable run of that group (named beside the best).
    pub best_deployable: Option<RunSummary>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GpuOperation {
    pub slug: String,
    pub title: String,
    pub href: String,
    /// Runs of this operation on this GPU, eligible or not.
    pub runs: usize,
    /// Of them, runs at evidence verified or replicated that passed and stand (a failed,
    /// refused or retracted run is never counted as verified).
    pub verified_runs: usize,
    /// Of them, runs at evidence reported that passed and stand.
    pub reported_runs: usize,
    /// Comparison groups of these runs.
    pub groups: usize,
    pub best_verified: Option<BestRun>,
    pub best_reported: Option<BestRun>,
    /// Why there is no best verified run when runs at that evidence exist ("4 runs, all
    /// refused: suspected_reward_hack").
    pub why_no_verified: Option<String>,
    /// Why there is no best reported run when runs at that evidence exist.
    pub why_no_reported: Option<String>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct EvidenceCount {
    pub level: TrustLevel,
    pub runs: usize,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GpuView {
    pub model: String,
    pub slug: String,
    pub vendor: String,
    pub architectures: Vec<String>,
    /// Every run on this GPU, eligible or not.
    pub runs: usize,
    /// Of them, runs the ranking does not rank (failed, retracted, superseded, …).
    pub unranked_runs: usize,
    pub first_observed_at: Option<String>,
    pub latest_observed_at: Option<String>,
    /// Runs that passed and stand at each evidence level, weakest first; with `failed_runs` they
    /// add up to `runs`.
    pub evidence: Vec<EvidenceCount>,
    /// Runs that failed, were refused or were retracted: counted at no evidence level (a refused
    /// run measured by our runner is not a verified run).
    pub failed_runs: usize,
    /// Operations with runs on this GPU, most-run first.
    pub operations: Vec<GpuOperation>,
    pub operations_total: usize,
}

pub const LEVELS: [TrustLevel; 4] =
    [TrustLevel::Reported, TrustLevel::Reproducible, TrustLevel::Verified, TrustLevel::Replicated];

impl ReadModel {
    /// The GPU model whose slug is `slug` (the one with the most runs, should two share it).
    pub fn find_gpu(&self, slug: &str) -> Option<usize> {
        self.runs_by_gpu.iter().position(|(model, _)| slugify(model) == slug)
    }

    /// Whether a run counts as one of `claim`'s: its evidence is of that class, its status is
    /// `passed` and it is not retracted. A failed, refused (`suspected_reward_hack`) or
    /// retracted run is never counted as verified, whatever its evidence says.
    pub fn counts_as(&self, run: usize, claim: Claim) -> bool {
        claim.admits(self.judgement.facts[run].trust) && self.stands(run)
    }

    /// Whether a run passed and is not retracted: what a count by evidence counts.
    pub fn stands(&self, run: usize) -> bool {
        let row = self.run(run);
        &*row.status == "passed" && row.retracted_at.is_none()
    }

    /// The best run of `claim` among `runs`, or why there is none when `runs` holds runs of
    /// that evidence ("4 runs, all refused: suspected_reward_hack"); neither when it holds none.
    pub fn best_or_why(&self, runs: &[usize], claim: Claim) -> (Option<BestRun>, Option<String>) {
        match self.best_run(runs, claim) {
            Some(best) => (Some(best), None),
            None => {
                let of_claim: Vec<usize> =
                    runs.iter().copied().filter(|&r| claim.admits(self.judgement.facts[r].trust)).collect();
                (None, self.why_none_eligible(&of_claim))
            }
        }
    }

    /// The best run of `claim` among `runs` (see the module's note on what "best" means).
    pub fn best_run(&self, runs: &[usize], claim: Claim) -> Option<BestRun> {
        let facts = &self.judgement.facts;
        let mut by_cohort: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for &r in runs {
            let f = &facts[r];
            if f.eligible() && f.position().is_some() && claim.admits(f.trust) {
                by_cohort.entry(f.cohort()).or_default().push(r);
            }
        }
        let cohorts = &self.judgement.cohorts;
        let (&cohort, members) = by_cohort.iter().max_by(|a, b| {
            a.1.len().cmp(&b.1.len()).then(cohorts[*b.0].comparison_key.cmp(&cohorts[*a.0].comparison_key))
        })?;
        let best = *members.iter().min_by_key(|&&r| facts[r].position())?;
        Some(BestRun {
            run: self.run_summary(best),
            workload: self.run_workload_label(best).into(),
            comparison_key: cohorts[cohort].comparison_key.to_string(),
            group_runs: members.len(),
            groups: by_cohort.len(),
            best_deployable: self.judgement.best_deployable_of(cohort).map(|run| self.run_summary(run)),
        })
    }

    pub fn gpu_view(&self, gpu: usize) -> GpuView {
        let (model, run_list) = &self.runs_by_gpu[gpu];
        let runs = || run_list.iter().map(|&r| r as usize);
        let facts = &self.judgement.facts;
        let mut architectures: Vec<String> = runs()
            .filter_map(|r| self.run(r).hardware_architecture.as_deref().filter(|a| !a.is_empty()))
            .map(str::to_string)
            .collect();
        architectures.sort();
        architectures.dedup();

        let observed = |r: usize| {
            let at = &self.run(r).observed_at;
            (at.instant, at.text())
        };
        let first_observed_at = runs().map(observed).min().map(|(_, at)| at.to_string());
        let latest_observed_at = runs().map(observed).max().map(|(_, at)| at.to_string());
        let evidence = LEVELS
            .iter()
            .map(|&level| EvidenceCount {
                level,
                runs: runs().filter(|&r| facts[r].trust == level && self.stands(r)).count(),
            })
            .collect();

        let mut by_operation: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for r in runs() {
            if let Some(op) = self.run_operation(r) {
                by_operation.entry(op).or_default().push(r);
            }
        }
        let mut operations: Vec<GpuOperation> = by_operation
            .iter()
            .map(|(&op, op_runs)| {
                let mut groups: Vec<usize> = op_runs.iter().map(|&r| facts[r].cohort()).collect();
                groups.sort_unstable();
                groups.dedup();
                let slug = self.judgement.operations[op].slug.clone();
                let (best_verified, why_no_verified) = self.best_or_why(op_runs, Claim::Verified);
                let (best_reported, why_no_reported) = self.best_or_why(op_runs, Claim::Reported);
                GpuOperation {
                    href: format!("/operations/{slug}"),
                    slug,
                    title: self.operation_title(op).into(),
                    runs: op_runs.len(),
                    verified_runs: op_runs.iter().filter(|&&r| self.counts_as(r, Claim::Verified)).count(),
                    reported_runs: op_runs.iter().filter(|&&r| self.counts_as(r, Claim::Reported)).count(),
                    groups: groups.len(),
                    best_verified,
                    best_reported,
                    why_no_verified,
                    why_no_reported,
                }
            })
            .collect();
        operations.sort_by(|a, b| b.runs.cmp(&a.runs).then(a.title.cmp(&b.title)).then(a.slug.cmp(&b.slug)));
        let operations_total = operations.len();
        operations.truncate(PAGE_LIMIT);

        GpuView {
            model: model.clone(),
            slug: slugify(model),
            vendor: runs().next().and_then(|r| self.run(r).hardware_vendor.as_deref()).unwrap_or("").into(),
            architectures,
            runs: run_list.len(),
            unranked_runs: runs().filter(|&r| !facts[r].eligible()).count(),
            first_observed_at,
            latest_observed_at,
            evidence,
            failed_runs: runs().filter(|&r| !self.stands(r)).count(),
            operations,
            operations_total,
        }
    }
}

/// A best run's cell: value, implementation (to the run's dossier), its group; without one,
/// why there is none (or "—" when there is no run of that evidence at all).
pub fn best_cell(best: Option<&BestRun>, why: Option<&str>) -> Markup {
    html! {
        @if let Some(b) = best {
            a href=(b.run.href) { span.value { (b.run.display) } @if !b.run.implementation.is_empty() { " · " (b.run.implementation) } }
            br;
            span.muted { (b.workload) " · " (b.group_runs) " in its group" @if b.groups > 1 { ", " (b.groups) " groups" } }
            br;
            (crate::pages::deployable_beside(Some((&b.run).into()), b.best_deployable.as_ref().map(Into::into)))
        } @else if let Some(why) = why { span.muted { (why) } } @else { "—" }
    }
}

fn date(at: Option<&str>) -> &str {
    at.map(ki_model::utc::date_of).unwrap_or("—")
}

pub fn render(v: &GpuView) -> Markup {
    let main = html! {
        nav.crumbs aria-label="Breadcrumb" { a href="/gpus" { "GPUs" } " / " (v.model) }
        h1 { (v.model) }
        p.subtitle { (v.vendor) @if !v.architectures.is_empty() { " · " (v.architectures.join(", ")) } }
        p { a href={ "/api/v1/gpus/" (v.slug) } type="application/json" { "JSON" } }
        (section("activity", "Activity", html! {
            dl.fields {
                div { dt { "runs" } dd { (v.runs) } }
                div { dt { "not ranked" } dd { (v.unranked_runs) } }
                div { dt { "operations" } dd { (v.operations_total) } }
                div { dt { "first observed" } dd { (date(v.first_observed_at.as_deref())) } }
                div { dt { "latest observed" } dd { (date(v.latest_observed_at.as_deref())) } }
            }
        }))
        (section("evidence", "Evidence mix", html! {
            table { caption { "Runs on this GPU that passed, by evidence level (reported < reproducible < verified < replicated)" }
                thead { tr { th scope="col" { "evidence" } th scope="col" class="num" { "runs" } } }
                tbody {
                    @for e in &v.evidence { tr { td { (crate::pages::evidence_badge(e.level.as_str())) } td.num { (e.runs) } } }
                    tr { th scope="row" { "failed, refused or retracted (any evidence)" } td.num { (v.failed_runs) } }
                    tr { th scope="row" { "all" } td.num { (v.runs) } }
                }
            }
        }))
        (section("operations", "Best runs per operation", html! {
            p { "Runs are ranked only inside a comparison group (workload, protocol, environment, correctness rule). "
                "Each best is the fastest eligible run of its evidence in the group with the most such runs; "
                "verified counts verified and replicated runs that passed and stand, reported those whose evidence is reported; "
                "a failed, refused or retracted run is counted under runs only, and an operation without a best says why." }
            @if v.operations.is_empty() { p { "No operation has runs on this GPU." } } @else {
                table {
                    caption { (v.operations_total) " operations" @if v.operations_total > v.operations.len() { ", the " (v.operations.len()) " most-run shown" } }
                    thead { tr {
                        th scope="col" { "operation" } th scope="col" class="num" { "runs" }
                        th scope="col" class="num" { "verified" } th scope="col" { "best verified" }
                        th scope="col" class="num" { "reported" } th scope="col" { "best reported" }
                        th scope="col" class="num" { "groups" }
                    } }
                    tbody { @for o in &v.operations { tr {
                        td { a href=(o.href) { (o.title) } }
                        td.num { (o.runs) }
                        td.num { (o.verified_runs) } td { (best_cell(o.best_verified.as_ref(), o.why_no_verified.as_deref())) }
                        td.num { (o.reported_runs) } td { (best_cell(o.best_reported.as_ref(), o.why_no_reported.as_deref())) }
                        td.num { (o.groups) }
                    } } }
                }
            }
        }))
    };
    layout(&v.model, main)
}

fn find_gpu(model: &ReadModel, slug: &str) -> Result<usize, Problem> {
    model.find_gpu(slug).ok_or_else(|| Problem::not_found(format!("no GPU {slug:?}")))
}

pub async fn page(State(state): State<Shared>, Path(slug): Path<String>) -> Answer {
    let model = state.model();
    Ok(html_response(render(&model.gpu_view(find_gpu(&model, &slug)?))))
}

pub async fn api(State(state): State<Shared>, Path(slug): Path<String>) -> Answer {
    let model = state.model();
    Ok(json_response(&model.gpu_view(find_gpu(&model, &slug)?)))
}
