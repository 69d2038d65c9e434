//! Serializable answers: what the commands print and the web server returns as JSON.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::Value;

use crate::index::Index;
use crate::rank::{CohortProfile, Direction, Ineligibility, TrustLevel};

/// One run as a line in a table.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RunSummary {
    pub run_id: String,
    pub run_digest: String,
    pub rank: Option<u32>,
    pub eligible: bool,
    pub ineligibility: Vec<Ineligibility>,
    pub implementation: String,
    pub implementation_title: Option<String>,
    pub project: String,
    pub operation: String,
    pub source: Option<String>,
    pub hardware: Option<String>,
    pub metric: Option<String>,
    pub statistic: Option<String>,
    pub value: Option<f64>,
    pub unit: Option<String>,
    pub trust: TrustLevel,
    pub deployable: bool,
    pub observed_at: String,
    pub comparison_key: String,
    pub reference_speedup: Option<f64>,
    pub baseline_speedup: Option<f64>,
}

/// One comparison group with its leaders.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CohortView {
    pub comparison_key: String,
    pub profile: CohortProfile,
    pub direction: Direction,
    pub workload_id: String,
    pub workload_digest: String,
    pub axes: BTreeMap<String, Value>,
    pub dtypes: Vec<String>,
    pub hardware: Option<String>,
    pub environment: Option<String>,
    pub protocol: Option<String>,
    pub metric: Option<String>,
    pub statistic: Option<String>,
    pub unit: Option<String>,
    pub runs: usize,
    pub eligible_runs: usize,
    /// Eligible runs best first, at most the requested number (all of rank 1 always).
    pub fastest: Vec<RunSummary>,
    pub best_verified: Option<RunSummary>,
    pub best_deployable: Option<RunSummary>,
    pub baseline: Option<RunSummary>,
    /// What a reader should know before trusting #1 (see [`Caveat`]); filled by the answers
    /// that know the time ([`Index::resolve_at`]), empty elsewhere.
    pub caveats: Vec<Caveat>,
}

/// Runs observed longer ago than this are stale: software and drivers may have moved on.
pub const STALE_AFTER_DAYS: i64 = 180;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CaveatKind {
    /// No eligible run of the group is verified or replicated.
    NoVerified,
    /// Every eligible run's evidence is only reported by its source.
    ReportedOnly,
    /// #1 cannot be deployed as it stands (no public source, licence, install recipe).
    NotDeployable,
    /// No eligible run of the group is deployable.
    NoDeployable,
    /// #1, or the best verified run, was observed more than [`STALE_AFTER_DAYS`] ago.
    Stale,
}

/// One caveat on a comparison group's answer, in the words the CLI prints and the web shows.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Caveat {
    pub kind: CaveatKind,
    pub message: String,
    /// The run it is about, when it is about one.
    pub run_id: Option<String>,
}

/// A reason a run is not deployable, in words.
pub fn deployability_reason(reason: crate::index::DeployabilityReason) -> &'static str {
    use crate::index::DeployabilityReason as R;
    match reason {
        R::NoPublicSource => "no public source",
        R::NoLicense => "no licence",
        R::LicenseNotPermissive => "licence not permissive",
        R::LicenseUnparseable => "licence expression unreadable",
        R::NoInstallRecipe => "no install recipe",
    }
}

impl Index {
    /// The caveats on a comparison group's view at time `now`: best verified none, reported
    /// only, #1 not deployable (and why), no deployable run, stale #1 or best verified.
    pub fn caveats(&self, view: &CohortView, now: crate::time::Instant) -> Vec<Caveat> {
        let mut out = Vec::new();
        let Some(&cohort) = self.cohort_by_key.get(view.comparison_key.as_str()) else {
            return out;
        };
        let ranking = &self.cohorts[cohort].ranking;
        let first = view.fastest.first();
        if view.best_verified.is_none() {
            out.push(Caveat {
                kind: CaveatKind::NoVerified,
                message: "best verified: none (no eligible run here is verified or replicated)".into(),
                run_id: None,
            });
        }
        if !ranking.is_empty() && ranking.iter().all(|e| self.facts[e.run].trust == TrustLevel::Reported) {
            out.push(Caveat {
                kind: CaveatKind::ReportedOnly,
                message: format!(
                    "reported only: all {} eligible run(s) are as their source reported them; none was reproduced or verified",
                    ranking.len()
                ),
                run_id: None,
            });
        }
        if let Some(first) = first
            && let Some(run) = self.run_index(&first.run_id)
            && !self.facts[run].deployability.deployable
        {
            let reasons: Vec<&str> =
                self.facts[run].deployability.reasons.iter().map(|&r| deployability_reason(r)).collect();
            out.push(Caveat {
                kind: CaveatKind::NotDeployable,
                message: format!("#1 {} is not deployable: {}", first.implementation, reasons.join(", ")),
                run_id: Some(first.run_id.clone()),
            });
        }
        if !ranking.is_empty() && view.best_deployable.is_none() {
            out.push(Caveat {
                kind: CaveatKind::NoDeployable,
                message: "best deployable: none (no eligible run here is deployable)".into(),
                run_id: None,
            });
        }
        let mut stale = |label: &str, summary: &RunSummary| {
            let Some(run) = self.run_index(&summary.run_id) else { return };
            // Calendar days in UTC, as the run page counts them.
            const DAY: i64 = 86_400_000_000_000;
            let days = now.0.div_euclid(DAY) - self.runs[run].observed_at.instant.0.div_euclid(DAY);
            if days > STALE_AFTER_DAYS
                && !out.iter().any(|c| c.kind == CaveatKind::Stale && c.run_id.as_deref() == Some(&summary.run_id))
            {
                out.push(Caveat {
                    kind: CaveatKind::Stale,
                    message: format!(
                        "stale: {label} {} was observed {days} days ago (more than {STALE_AFTER_DAYS}); software and drivers may have moved on",
                        summary.implementation
                    ),
                    run_id: Some(summary.run_id.clone()),
                });
            }
        };
        if let Some(first) = first {
            stale("#1", first);
        }
        if let Some(verified) = &view.best_verified {
            stale("best verified", verified);
        }
        out
    }
}

impl Index {
    pub fn run_summary(&self, run: usize) -> RunSummary {
        let row = &self.runs[run];
        let facts = &self.facts[run];
        let implementation = self.implementation_of(run);
        RunSummary {
            run_id: row.id.to_string(),
            run_digest: row.run_digest.to_string(),
            rank: facts.rank(),
            eligible: facts.eligible(),
            ineligibility: facts.ineligibility().to_vec(),
            implementation: implementation.slug.clone(),
            implementation_title: Some(implementation.title.clone()),
            project: self.project_of(run).name.clone(),
            operation: self.operation_of(run).name.clone(),
            source: self.source_of(run).map(|s| s.name.clone()),
            hardware: row.hardware_model.as_deref().map(str::to_string),
            metric: row.primary_metric.as_deref().map(str::to_string),
            statistic: row.primary_statistic.as_deref().map(str::to_string),
            value: self.primary_value(run),
            unit: row.primary_unit.as_deref().map(str::to_string),
            trust: facts.trust,
            deployable: facts.deployability.deployable,
            observed_at: row.observed_at.text().into_owned(),
            comparison_key: row.comparison_key.to_string(),
            reference_speedup: facts.reference_speedup.get(),
            baseline_speedup: facts.baseline_speedup.get(),
        }
    }

    /// The fastest deployable eligible run of a comparison group (public source, a permissive
    /// licence and an install recipe), what every page that names a group's fastest run names
    /// beside it.
    pub fn best_deployable_of(&self, cohort: usize) -> Option<usize> {
        self.cohorts[cohort].ranking.iter().find(|e| self.facts[e.run].deployability.deployable).map(|e| e.run)
    }

    /// [`Index::best_deployable_of`] the group with this comparison key.
    pub fn best_deployable_in(&self, comparison_key: &str) -> Option<usize> {
        self.cohort_by_key.get(comparison_key).and_then(|&cohort| self.best_deployable_of(cohort))
    }

    /// A comparison group with its `top` fastest eligible runs (never cutting rank 1).
    pub fn cohort_view(&self, cohort: usize, top: usize) -> CohortView {
        let cohort_row = &self.cohorts[cohort];
        let sample = cohort_row.ranking.first().map(|e| e.run).unwrap_or(cohort_row.runs[0]);
        let row = &self.runs[sample];
        let workload = self.run_workload(sample);
        let fastest = cohort_row
            .ranking
            .iter()
            .enumerate()
            .take_while(|(position, entry)| *position < top || entry.rank == 1)
            .map(|(_, entry)| self.run_summary(entry.run))
            .collect();
        let best_verified =
            cohort_row.ranking.iter().find(|e| self.facts[e.run].trust.is_verified()).map(|e| self.run_summary(e.run));
        let best_deployable = self.best_deployable_of(cohort).map(|run| self.run_summary(run));
        CohortView {
            comparison_key: cohort_row.comparison_key.to_string(),
            profile: cohort_row.profile,
            direction: cohort_row.direction,
            workload_id: self.workloads[workload].id.clone(),
            workload_digest: self.workloads[workload].workload_digest.clone(),
            axes: self.workload_axes[workload].clone(),
            dtypes: self.workloads[workload].dtypes.clone(),
            hardware: row.hardware_model.as_deref().map(str::to_string),
            environment: row.environment_summary.as_deref().map(str::to_string),
            protocol: self.run_protocol_name(sample).map(String::from),
            metric: row.primary_metric.as_deref().map(str::to_string),
            statistic: row.primary_statistic.as_deref().map(str::to_string),
            unit: row.primary_unit.as_deref().map(str::to_string),
            runs: cohort_row.runs.len(),
            eligible_runs: cohort_row.ranking.len(),
            fastest,
            best_verified,
            best_deployable,
            baseline: cohort_row.baseline.map(|b| self.run_summary(b)),
            caveats: Vec::new(),
        }
    }
}

/// 2 to 8 runs side by side.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Comparison {
    pub runs: Vec<ComparedRun>,
    /// True when every run is in the same comparison group, so values compare directly.
    pub same_comparison_group: bool,
    /// Axes whose values differ between the runs' workloads.
    pub differing_axes: Vec<String>,
    /// The parts of the comparison key (and the GPU) that differ between the runs; empty when
    /// they share one comparison group.
    pub differing_keys: Vec<KeyPart>,
}

/// A part of a run's comparison key, and the GPU (part of its environment, named apart
/// because it is what readers look at first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum KeyPart {
    Operation,
    Workload,
    Protocol,
    Environment,
    Gpu,
    CorrectnessRule,
    Metric,
}

impl KeyPart {
    pub fn label(self) -> &'static str {
        match self {
            KeyPart::Operation => "operation",
            KeyPart::Workload => "workload",
            KeyPart::Protocol => "protocol",
            KeyPart::Environment => "environment",
            KeyPart::Gpu => "GPU",
            KeyPart::CorrectnessRule => "correctness rule",
            KeyPart::Metric => "metric",
        }
    }
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ComparedRun {
    pub summary: RunSummary,
    pub axes: BTreeMap<String, Value>,
    pub environment: Option<String>,
    /// This run's value over the best value among the compared runs of its own group
    /// (1.0 for the best; > 1.0 is slower for lower-is-better metrics).
    pub relative_to_best_in_group: Option<f64>,
    /// How many times slower than the first compared run (#1, the fastest listed): 1.0 for
    /// it, >= 1.0 for the others; absent when the values do not share a unit and direction.
    pub relative_to_first: Option<f64>,
    /// The measurement's uncertainty interval (low, high) in its unit, when it has one.
    pub interval: Option<(f64, f64)>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, schemars::JsonSchema)]
#[serde(tag = "error", rename_all = "snake_case")]
pub enum CompareError {
    #[error("compare takes 2 to 8 runs, got {given}")]
    WrongCount { given: usize },
    #[error(transparent)]
    Lookup(#[from] crate::index::LookupError),
    #[error("run {0} is named twice")]
    Duplicate(String),
}

impl Index {
    pub fn compare(&self, references: &[&str]) -> Result<Comparison, CompareError> {
        if !(2..=8).contains(&references.len()) {
            return Err(CompareError::WrongCount { given: references.len() });
        }
        let mut runs = Vec::new();
        for reference in references {
            let run = self.find_run(reference)?;
            if runs.contains(&run) {
                return Err(CompareError::Duplicate(self.runs[run].id.to_string()));
            }
            runs.push(run);
        }
        let same_comparison_group = runs.iter().all(|&r| self.facts[r].cohort() == self.facts[runs[0]].cohort());
        let mut axis_names: Vec<&String> =
            runs.iter().flat_map(|&r| self.workload_axes[self.run_workload(r)].keys()).collect();
        axis_names.sort();
        axis_names.dedup();
        let differing_axes = axis_names
            .into_iter()
            .filter(|name| {
                let first = self.workload_axes[self.run_workload(runs[0])].get(*name);
                runs.iter().any(|&r| self.workload_axes[self.run_workload(r)].get(*name) != first)
            })
            .cloned()
            .collect();
        let compared = runs
            .iter()
            .map(|&run| {
                let cohort = &self.cohorts[self.facts[run].cohort()];
                let best = runs
                    .iter()
                    .filter(|&&other| self.facts[other].cohort() == self.facts[run].cohort())
                    .filter_map(|&other| self.primary_value(other))
                    .min_by(|a, b| cohort.direction.compare(*a, *b));
                let relative = match (self.primary_value(run), best) {
                    (Some(value), Some(best)) if best != 0.0 && value != 0.0 => Some(match cohort.direction {
                        Direction::LowerIsBetter => value / best,
                        Direction::HigherIsBetter => best / value,
                    }),
                    _ => None,
                };
                let row = &self.runs[run];
                ComparedRun {
                    summary: self.run_summary(run),
                    axes: self.workload_axes[self.run_workload(run)].clone(),
                    environment: row.environment_summary.as_deref().map(str::to_string),
                    relative_to_best_in_group: relative,
                    relative_to_first: None,
                    interval: match (row.uncertainty_low.get(), row.uncertainty_high.get()) {
                        (Some(low), Some(high)) if low.is_finite() && high.is_finite() => {
                            Some((low.min(high), low.max(high)))
                        }
                        _ => None,
                    },
                }
            })
            .collect();
        let mut comparison = Comparison {
            runs: compared,
            same_comparison_group,
            differing_axes,
            differing_keys: self.differing_keys(&runs),
        };
        self.order_best_first(&mut comparison, &runs);
        Ok(comparison)
    }

    /// The comparison-key parts (and the GPU) on which the runs do not all agree.
    fn differing_keys(&self, runs: &[usize]) -> Vec<KeyPart> {
        let part = |run: usize, part: KeyPart| -> String {
            let row = &self.runs[run];
            match part {
                KeyPart::Operation => self.operation_of(run).id.clone(),
                KeyPart::Workload => self.workloads[self.run_workload(run)].workload_digest.clone(),
                KeyPart::Protocol => row.protocol_key.to_string(),
                KeyPart::Environment => row.environment_key.to_string(),
                KeyPart::Gpu => row.hardware_model.as_deref().unwrap_or_default().to_string(),
                KeyPart::CorrectnessRule => row.correctness_key.to_string(),
                KeyPart::Metric => format!(
                    "{} {} {}",
                    row.primary_metric.as_deref().unwrap_or(""),
                    row.primary_statistic.as_deref().unwrap_or(""),
                    row.primary_unit.as_deref().unwrap_or("")
                ),
            }
        };
        [
            KeyPart::Operation,
            KeyPart::Workload,
            KeyPart::Protocol,
            KeyPart::Environment,
            KeyPart::Gpu,
            KeyPart::CorrectnessRule,
            KeyPart::Metric,
        ]
        .into_iter()
        .filter(|&p| runs.iter().any(|&r| part(r, p) != part(runs[0], p)))
        .collect()
    }

    /// Best first: by value in the metric's direction when every run has a value of one unit
    /// and direction (then `relative_to_first` is each run's factor behind #1), else by the
    /// factor behind the best of its own group; ties (and runs without a value) keep rank,
    /// then the order they were named in.
    fn order_best_first(&self, comparison: &mut Comparison, runs: &[usize]) {
        let direction = |r: usize| self.cohorts[self.facts[r].cohort()].direction;
        let comparable = runs.iter().all(|&r| {
            self.primary_value(r).is_some_and(|v| v.is_finite() && v != 0.0)
                && self.runs[r].primary_unit == self.runs[runs[0]].primary_unit
                && direction(r) == direction(runs[0])
        });
        let mut order: Vec<usize> = (0..runs.len()).collect();
        let rank = |i: usize| comparison.runs[i].summary.rank.unwrap_or(u32::MAX);
        if comparable {
            let dir = direction(runs[0]);
            order.sort_by(|&a, &b| {
                let (va, vb) = (self.primary_value(runs[a]).unwrap_or(0.0), self.primary_value(runs[b]).unwrap_or(0.0));
                dir.compare(va, vb).then(rank(a).cmp(&rank(b)))
            });
        } else {
            order.sort_by(|&a, &b| {
                let factor = |i: usize| comparison.runs[i].relative_to_best_in_group.unwrap_or(f64::INFINITY);
                factor(a).total_cmp(&factor(b)).then(rank(a).cmp(&rank(b)))
            });
        }
        let mut taken: Vec<Option<ComparedRun>> = comparison.runs.drain(..).map(Some).collect();
        comparison.runs = order.iter().map(|&i| taken[i].take().expect("each run once")).collect();
        if comparable {
            let first_run = runs[order[0]];
            let first = self.primary_value(first_run).unwrap_or(1.0);
            for (position, &i) in order.iter().enumerate() {
                let value = self.primary_value(runs[i]).unwrap_or(first);
                comparison.runs[position].relative_to_first = Some(match direction(first_run) {
                    Direction::LowerIsBetter => value / first,
                    Direction::HigherIsBetter => first / value,
                });
            }
        }
    }
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RecordView {
    pub event: crate::rows::RecordEventRow,
    /// The new record holder, when it is in the catalog.
    pub run: Option<RunSummary>,
    pub previous_value: Option<f64>,
}
