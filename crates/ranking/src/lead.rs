//! What a search's answer leads with (issue 34): of the comparison groups resolve found for the
//! query's operation, GPU and workload, those whose runs pass the query's evidence filters
//! (`trust:verified`, a project, a licence, …), each group's leaders taken from the runs that
//! pass; groups with a verified run first, then the most-run; and when the workload asked was
//! never measured, the nearest measured workload, saying which axis differs. The leader is the
//! first group's fastest verified run, else its #1. Pure: the caller says which runs pass.

use serde::Serialize;
use serde_json::Value;

use crate::index::Index;
use crate::resolve::{DEFAULT_TOP_RUNS, ResolveRequest, ResolveResponse, Shape};
use crate::views::{CohortView, RunSummary};

pub use crate::resolve::AxisDifference;

/// The head of a search's answer.
#[derive(Debug, Clone, Default, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Lead {
    /// The first group's fastest verified run, else its #1 (among the runs that pass).
    pub leader: Option<RunSummary>,
    /// The first group's fastest run whatever its evidence, when it is not the leader.
    pub fastest: Option<RunSummary>,
    /// The first group's best deployable run.
    pub best_deployable: Option<RunSummary>,
    /// Empty when the groups measured the workload asked; else the axes of the nearest
    /// measured workload that differ from it.
    pub differs: Vec<AxisDifference>,
}

impl Index {
    /// A group's view with its leaders taken from the runs `keep` passes; None when no eligible
    /// run passes.
    fn kept_view(&self, view: &CohortView, keep: &dyn Fn(usize) -> bool) -> Option<CohortView> {
        let cohort = *self.cohort_by_key.get(view.comparison_key.as_str())?;
        let ranking = &self.cohorts[cohort].ranking;
        let passing: Vec<usize> = ranking.iter().map(|e| e.run).filter(|&run| keep(run)).collect();
        let first = *passing.first()?;
        let first_rank = self.facts[first].rank();
        let mut shaped = view.clone();
        shaped.fastest = passing
            .iter()
            .enumerate()
            .take_while(|(at, run)| *at < DEFAULT_TOP_RUNS || self.facts[**run].rank() == first_rank)
            .map(|(_, &run)| self.run_summary(run))
            .collect();
        shaped.best_verified =
            passing.iter().find(|&&run| self.facts[run].trust.is_verified()).map(|&run| self.run_summary(run));
        shaped.best_deployable =
            passing.iter().find(|&&run| self.facts[run].deployability.deployable).map(|&run| self.run_summary(run));
        shaped.eligible_runs = passing.len();
        Some(shaped)
    }

    /// Of the groups resolve picked, those with a run that `keep` passes (None: every group),
    /// verified first, then the most eligible runs, then by GPU and key; at most `limit`, made
    /// views with their leaders taken from the runs that pass; and how many more passed.
    pub(crate) fn lead_views(
        &self,
        picked: Vec<usize>,
        keep: Option<&dyn Fn(usize) -> bool>,
        limit: usize,
    ) -> (Vec<CohortView>, usize) {
        let mut ordered: Vec<(bool, usize, Option<&str>, &str, usize)> = picked
            .into_iter()
            .filter_map(|c| {
                let cohort = &self.cohorts[c];
                let verified_run = |run: usize| self.facts[run].trust.is_verified();
                let (passing, verified) = match keep {
                    // Every eligible run passes: no need to read them all.
                    None => (cohort.ranking.len(), cohort.ranking.iter().any(|e| verified_run(e.run))),
                    Some(keep) => cohort
                        .ranking
                        .iter()
                        .map(|e| e.run)
                        .filter(|&run| keep(run))
                        .fold((0, false), |(passing, verified), run| (passing + 1, verified || verified_run(run))),
                };
                // The view's GPU is its first eligible run's (`cohort_view`).
                let sample = cohort.ranking.first().map(|e| e.run).unwrap_or(cohort.runs[0]);
                let hardware = self.runs[sample].hardware_model.as_deref();
                (passing > 0 || keep.is_none()).then_some((
                    !verified,
                    passing,
                    hardware,
                    cohort.comparison_key.as_str(),
                    c,
                ))
            })
            .collect();
        ordered.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2)).then(a.3.cmp(b.3)));
        let omitted = ordered.len().saturating_sub(limit);
        ordered.truncate(limit);
        let views = ordered
            .into_iter()
            .filter_map(|(.., c)| {
                let view = self.cohort_view(c, DEFAULT_TOP_RUNS);
                match keep {
                    Some(keep) => self.kept_view(&view, keep),
                    None => Some(view),
                }
            })
            .collect();
        (views, omitted)
    }

    /// What a search leads with: `request` resolved (asked with a `limit` of as many groups as
    /// may be filtered out), listing at most `limit` groups; `keep` tells the runs that pass the
    /// query's evidence filters (None: every run). When the workload asked was never measured,
    /// the nearest measured case (the smallest relative difference; below on a tie) becomes the
    /// answer's groups and [`Lead::differs`] names its axis.
    pub fn resolve_lead(
        &self,
        request: &ResolveRequest,
        keep: Option<&dyn Fn(usize) -> bool>,
        limit: usize,
    ) -> (ResolveResponse, Lead) {
        let mut response = self.resolve_shaped(request, Shape::Lead { keep, limit });
        response.nearest.retain(|case| !case.cohorts.is_empty());
        let mut lead = Lead::default();
        if response.cohorts.is_empty() {
            let distance = |asked: &Value, measured: &Value| match (asked.as_f64(), measured.as_f64()) {
                (Some(a), Some(m)) if a != 0.0 => ((m - a) / a).abs(),
                (Some(a), Some(m)) => (m - a).abs(),
                _ => f64::INFINITY,
            };
            let nearest = response
                .nearest
                .iter()
                .enumerate()
                .min_by(|(i, a), (j, b)| {
                    let total = |c: &crate::resolve::NearestCase| -> f64 {
                        c.differs.iter().map(|d| distance(&d.asked, &d.measured)).sum()
                    };
                    total(a).total_cmp(&total(b)).then(i.cmp(j))
                })
                .map(|(i, _)| i);
            if let Some(case) = nearest.map(|i| &response.nearest[i]) {
                lead.differs = case.differs.clone();
                response.cohorts = case.cohorts.clone();
            }
        }
        if let Some(first) = response.cohorts.first() {
            lead.leader = first.best_verified.clone().or_else(|| first.fastest.first().cloned());
            let fastest = first.fastest.first().cloned();
            lead.fastest = fastest.filter(|f| lead.leader.as_ref().is_none_or(|l| l.run_id != f.run_id));
            lead.best_deployable = first.best_deployable.clone();
        }
        (response, lead)
    }
}
