//! Resolve: the fastest compatible kernels for a user's exact workload.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::index::Index;
use crate::views::CohortView;

/// Most comparison groups one answer lists (a request's `limit`); the rest are counted in
/// `omittedCohorts`.
pub const MAX_COHORTS_PER_ANSWER: usize = 50;
/// Comparison groups an answer lists when the request names no `limit`: a workload measured on
/// many GPUs, protocols and environments would otherwise answer with tens of groups.
pub const DEFAULT_COHORTS_PER_ANSWER: usize = 10;
/// Fastest runs listed per comparison group (all rank-1 runs are always listed).
pub const DEFAULT_TOP_RUNS: usize = 5;
pub const MAX_BATCH: usize = 20;

#[derive(Debug, Clone, Default, PartialEq, Deserialize, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResolveRequest {
    /// Operation name, slug or alias.
    pub operation: String,
    #[serde(default)]
    pub axes: BTreeMap<String, Value>,
    #[serde(default)]
    pub dtypes: Vec<String>,
    #[serde(default)]
    pub hardware: Option<String>,
    #[serde(default)]
    pub framework: Option<String>,
    /// Most comparison groups to list, 1 to 50 (default 10); `omittedCohorts` counts the rest.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "ki_model::parse::optional_whole_number"
    )]
    #[schemars(range(min = 1, max = 50))]
    pub limit: Option<usize>,
}

/// A request's `limit` outside 1 to [`MAX_COHORTS_PER_ANSWER`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("limit takes 1 to {MAX_COHORTS_PER_ANSWER} comparison groups, got {given}")]
pub struct LimitError {
    pub given: usize,
}

impl ResolveRequest {
    /// How many comparison groups the answer lists.
    pub fn cohort_limit(&self) -> Result<usize, LimitError> {
        match self.limit {
            None => Ok(DEFAULT_COHORTS_PER_ANSWER),
            Some(given) if (1..=MAX_COHORTS_PER_ANSWER).contains(&given) => Ok(given),
            Some(given) => Err(LimitError { given }),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResolveMode {
    /// The case was measured in exactly one comparison group.
    Exact,
    /// The case was measured in several groups (hardware, protocol, environment): pick one.
    Chooser,
    /// The request does not pin one case, or only nearby cases were measured.
    Browse,
    /// Nothing to show.
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Below,
    Above,
}

/// An axis whose measured value differs from the one the request asked.
#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AxisDifference {
    pub axis: String,
    pub asked: Value,
    pub measured: Value,
}

/// A measured case next to an unmeasured request, on one side of it along `axis`: one that
/// differs in that axis only when there is one, else the nearest that differs in the fewest
/// axes (all named in `differs`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NearestCase {
    pub axis: String,
    pub side: Side,
    pub requested: Value,
    pub measured: Value,
    /// Every requested axis whose measured value differs (`axis` first).
    pub differs: Vec<AxisDifference>,
    pub cohorts: Vec<CohortView>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct OperationRef {
    pub id: String,
    pub name: String,
    pub slug: String,
    pub family: Option<String>,
    pub variable_axes: Vec<String>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResolveResponse {
    pub request: ResolveRequest,
    pub mode: ResolveMode,
    pub operation: Option<OperationRef>,
    pub cohorts: Vec<CohortView>,
    pub omitted_cohorts: usize,
    pub nearest: Vec<NearestCase>,
    pub notes: Vec<String>,
    /// Parts of the request read as the index names them (`H200` as `NVIDIA H200`, `gqa paged
    /// decode` as an operation); `request` is what was answered.
    #[serde(default)]
    pub read_as: Vec<ReadAs>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, Serialize, schemars::JsonSchema)]
#[error("a resolve batch takes 1 to {MAX_BATCH} requests, got {given}")]
pub struct BatchSizeError {
    pub given: usize,
}

/// How resolve makes views of the groups it picked: all of them in its readable order, or as a
/// search's lead shapes them (`Index::resolve_lead`: the runs `keep` passes, verified groups
/// first, at most `limit`), so that groups the lead drops are never made views.
#[derive(Clone, Copy)]
pub(crate) enum Shape<'a> {
    Readable,
    Lead { keep: Option<&'a dyn Fn(usize) -> bool>, limit: usize },
}

/// Numbers compare by value (16 and 16.0 are one case); everything else exactly.
fn axis_equal(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) if a.is_number() && b.is_number() => x == y,
        _ => a == b,
    }
}

impl Index {
    /// Whether a run on this hardware with this framework passes the request's filters.
    fn passes_filters(hardware: Option<&str>, framework: Option<&str>, request: &ResolveRequest) -> bool {
        let named = |wanted: &Option<String>, have: Option<&str>| {
            wanted.as_ref().is_none_or(|wanted| have.is_some_and(|h| h.eq_ignore_ascii_case(wanted.trim())))
        };
        named(&request.hardware, hardware) && named(&request.framework, framework)
    }

    fn workload_has_dtypes(&self, workload: usize, dtypes: &[String]) -> bool {
        let own = &self.workloads[workload].dtypes;
        dtypes.iter().all(|wanted| own.iter().any(|d| d.eq_ignore_ascii_case(wanted.trim())))
    }

    /// Comparison groups of a workload with at least one eligible run passing the filters: read
    /// from the groups measured on it (`Index::cohorts_by_workload`), not from its runs, so that
    /// an answer costs the same for a workload of ten runs and one of a hundred thousand.
    /// Callers dedup what several workloads added (two workload rows may share a digest, and so a group).
    fn measured_cohorts(&self, workload: usize, request: &ResolveRequest, into: &mut Vec<usize>) {
        for measured in &self.cohorts_by_workload[workload] {
            let cohort = measured.cohort as usize;
            let passes = measured
                .filters
                .iter()
                .any(|(hardware, framework)| Self::passes_filters(hardware.as_deref(), framework.as_deref(), request));
            if passes {
                into.push(cohort);
            }
        }
    }

    fn cohort_views(&self, cohorts: Vec<usize>, limit: usize, shape: Shape<'_>) -> (Vec<CohortView>, usize) {
        // Groups are not comparable with each other; list them in a stable, readable order:
        // by hardware, the largest first, then by key (keys are unique, so the order is total).
        // Each group's key is read once: an operation browsed without axes has thousands.
        let mut keyed: Vec<_> = cohorts
            .into_iter()
            .map(|c| {
                let cohort = &self.cohorts[c];
                let hardware = self.runs[cohort.ranking[0].run].hardware_model.as_deref();
                (hardware, std::cmp::Reverse(cohort.ranking.len()), cohort.comparison_key.as_str(), c)
            })
            .collect();
        let omitted = keyed.len().saturating_sub(limit);
        if omitted > 0 && limit > 0 {
            keyed.select_nth_unstable(limit - 1);
        }
        keyed.truncate(limit);
        keyed.sort_unstable();
        let picked: Vec<usize> = keyed.into_iter().map(|(.., c)| c).collect();
        match shape {
            Shape::Readable => (picked.into_iter().map(|c| self.cohort_view(c, DEFAULT_TOP_RUNS)).collect(), omitted),
            Shape::Lead { keep, limit } => {
                let (views, dropped) = self.lead_views(picked, keep, limit);
                (views, omitted + dropped)
            }
        }
    }

    /// The answer to `request`, listing as many comparison groups as it asks (a `limit` out of
    /// range lists the most, [`MAX_COHORTS_PER_ANSWER`]; callers refuse it first with
    /// [`ResolveRequest::cohort_limit`]).
    pub fn resolve(&self, request: &ResolveRequest) -> ResolveResponse {
        self.resolve_shaped(request, Shape::Readable)
    }

    /// [`Index::resolve`], its groups made views as `shape` says.
    pub(crate) fn resolve_shaped(&self, request: &ResolveRequest, shape: Shape<'_>) -> ResolveResponse {
        let limit = request.cohort_limit().unwrap_or(MAX_COHORTS_PER_ANSWER);
        let mut response = ResolveResponse {
            request: request.clone(),
            mode: ResolveMode::None,
            operation: None,
            cohorts: Vec::new(),
            omitted_cohorts: 0,
            nearest: Vec::new(),
            notes: Vec::new(),
            read_as: Vec::new(),
        };
        let op = match self.find_operation(request.operation.trim()) {
            Ok(op) => op,
            Err(err) => {
                response.notes.push(err.to_string());
                return response;
            }
        };
        let operation = &self.operations[op];
        response.operation = Some(OperationRef {
            id: operation.id.clone(),
            name: operation.name.clone(),
            slug: operation.slug.clone(),
            family: Some(operation.family.clone()),
            variable_axes: self.operation_variable_axes[op].clone(),
        });
        let unknown: Vec<&String> =
            request.axes.keys().filter(|name| !self.operation_known_axes[op].contains(name)).collect();
        if !unknown.is_empty() {
            response.notes.push(format!(
                "operation {} has no axis {}; its axes are {}",
                operation.name,
                unknown.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", "),
                self.operation_known_axes[op].join(", ")
            ));
            return response;
        }
        let missing: Vec<&String> =
            self.operation_variable_axes[op].iter().filter(|name| !request.axes.contains_key(*name)).collect();
        let pinned = missing.is_empty();

        let mut exact_cohorts = Vec::new();
        for &workload in &self.workloads_by_operation[op] {
            let axes = &self.workload_axes[workload];
            let matches =
                request.axes.iter().all(|(name, wanted)| axes.get(name).is_some_and(|have| axis_equal(have, wanted)));
            if matches && self.workload_has_dtypes(workload, &request.dtypes) {
                self.measured_cohorts(workload, request, &mut exact_cohorts);
            }
        }
        exact_cohorts.sort_unstable();
        exact_cohorts.dedup();
        if !exact_cohorts.is_empty() {
            response.mode = match (pinned, exact_cohorts.len()) {
                (true, 1) => ResolveMode::Exact,
                (true, _) => ResolveMode::Chooser,
                (false, _) => ResolveMode::Browse,
            };
            if !pinned {
                response.notes.push(format!(
                    "not one case: name {} to pin it",
                    missing.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(", ")
                ));
            }
            (response.cohorts, response.omitted_cohorts) = self.cohort_views(exact_cohorts, limit, shape);
            return response;
        }

        let filters: Vec<&str> =
            [request.hardware.as_deref(), request.framework.as_deref()].into_iter().flatten().collect();
        response.notes.push(if filters.is_empty() {
            "This case was never measured.".to_string()
        } else {
            format!("This case was never measured on {}.", filters.join(" with "))
        });
        if request.hardware.is_some() || request.framework.is_some() {
            // Say where it was measured, so that a misspelt or other GPU is easy to spot.
            let unfiltered = ResolveRequest { hardware: None, framework: None, ..request.clone() };
            let mut elsewhere = Vec::new();
            for &workload in &self.workloads_by_operation[op] {
                let axes = &self.workload_axes[workload];
                if request.axes.iter().all(|(name, wanted)| axes.get(name).is_some_and(|have| axis_equal(have, wanted)))
                    && self.workload_has_dtypes(workload, &request.dtypes)
                {
                    self.measured_cohorts(workload, &unfiltered, &mut elsewhere);
                }
            }
            let mut hardware: Vec<&str> = elsewhere
                .iter()
                .filter_map(|&c| self.runs[self.cohorts[c].ranking[0].run].hardware_model.as_deref())
                .collect();
            hardware.sort_unstable();
            hardware.dedup();
            if !hardware.is_empty() {
                response.notes.push(format!("It was measured on {}.", hardware.join(", ")));
            }
        }
        response.nearest = self.nearest_cases(op, request, limit, shape);
        if response.nearest.is_empty() {
            response.nearest = self.nearest_cases_differing_more(op, request, limit, shape);
        }
        if !response.nearest.is_empty() {
            response.mode = ResolveMode::Browse;
        }
        response
    }

    /// The nearest measured cases when none differs from the request in one axis alone: of the
    /// measured workloads (under the request's filters and dtypes) that agree with it on every
    /// non-numeric axis and differ in the fewest numeric ones, the nearest (summed |ln ratio|)
    /// below and above the request along the axis that differs most in the nearest of them.
    fn nearest_cases_differing_more(
        &self,
        op: usize,
        request: &ResolveRequest,
        limit: usize,
        shape: Shape<'_>,
    ) -> Vec<NearestCase> {
        struct Candidate {
            differs: Vec<AxisDifference>,
            distance: f64,
            cohorts: Vec<usize>,
        }
        let ratio = |asked: f64, measured: f64| {
            if asked > 0.0 && measured > 0.0 { (measured / asked).ln().abs() } else { (measured - asked).abs() }
        };
        let mut candidates: Vec<Candidate> = Vec::new();
        for &workload in &self.workloads_by_operation[op] {
            if !self.workload_has_dtypes(workload, &request.dtypes) {
                continue;
            }
            let axes = &self.workload_axes[workload];
            let mut differs = Vec::new();
            let mut distance = 0.0;
            let mut comparable = true;
            for (name, wanted) in &request.axes {
                let Some(have) = axes.get(name) else {
                    comparable = false;
                    break;
                };
                if axis_equal(have, wanted) {
                    continue;
                }
                match (wanted.as_f64(), have.as_f64()) {
                    (Some(w), Some(h)) => {
                        distance += ratio(w, h);
                        differs.push(AxisDifference {
                            axis: name.clone(),
                            asked: wanted.clone(),
                            measured: have.clone(),
                        });
                    }
                    _ => comparable = false,
                }
            }
            if !comparable || differs.len() < 2 {
                continue;
            }
            let mut cohorts = Vec::new();
            self.measured_cohorts(workload, request, &mut cohorts);
            if !cohorts.is_empty() {
                candidates.push(Candidate { differs, distance, cohorts });
            }
        }
        let Some(fewest) = candidates.iter().map(|c| c.differs.len()).min() else { return Vec::new() };
        candidates.retain(|c| c.differs.len() == fewest);
        candidates.sort_by(|a, b| a.distance.total_cmp(&b.distance));
        // The axis along which "below" and "above" are told: the one the nearest case differs most in.
        let first = &candidates[0];
        let axis = first
            .differs
            .iter()
            .max_by(|a, b| {
                let d = |x: &AxisDifference| ratio(x.asked.as_f64().unwrap_or(0.0), x.measured.as_f64().unwrap_or(0.0));
                d(a).total_cmp(&d(b)).then(b.axis.cmp(&a.axis))
            })
            .map(|d| d.axis.clone())
            .unwrap_or_default();
        let asked = request.axes[&axis].as_f64().unwrap_or(0.0);
        let mut out = Vec::new();
        for side in [Side::Below, Side::Above] {
            let on_side = |c: &&Candidate| {
                let measured = c.differs.iter().find(|d| d.axis == axis).and_then(|d| d.measured.as_f64());
                // A case equal to the request along this axis lies on neither side of it.
                measured.is_some_and(|m| if side == Side::Below { m < asked } else { m > asked })
            };
            let Some(nearest) = candidates.iter().find(on_side) else { continue };
            let mut differs = nearest.differs.clone();
            differs.sort_by_key(|d| d.axis != axis);
            let (requested, measured) = (differs[0].asked.clone(), differs[0].measured.clone());
            out.push(NearestCase {
                axis: axis.clone(),
                side,
                requested,
                measured,
                differs,
                cohorts: self.cohort_views(nearest.cohorts.clone(), limit, shape).0,
            });
        }
        out
    }

    /// For each requested numeric axis, the closest measured values below and above,
    /// taken only from cases that agree with the request on every other requested axis.
    fn nearest_cases(&self, op: usize, request: &ResolveRequest, limit: usize, shape: Shape<'_>) -> Vec<NearestCase> {
        // axis -> side -> (measured value, cohorts)
        let mut best: BTreeMap<(String, u8), (f64, Value, Vec<usize>)> = BTreeMap::new();
        for &workload in &self.workloads_by_operation[op] {
            if !self.workload_has_dtypes(workload, &request.dtypes) {
                continue;
            }
            let axes = &self.workload_axes[workload];
            let mut differing = request
                .axes
                .iter()
                .filter(|(name, wanted)| !axes.get(*name).is_some_and(|have| axis_equal(have, wanted)));
            let (Some((name, wanted)), None) = (differing.next(), differing.next()) else {
                continue;
            };
            let (Some(wanted_number), Some(have)) = (wanted.as_f64(), axes.get(name)) else {
                continue;
            };
            let Some(have_number) = have.as_f64() else {
                continue;
            };
            let mut cohorts = Vec::new();
            self.measured_cohorts(workload, request, &mut cohorts);
            if cohorts.is_empty() {
                continue;
            }
            let side = if have_number < wanted_number { 0 } else { 1 };
            let closer = |current: f64| if side == 0 { have_number > current } else { have_number < current };
            match best.get_mut(&(name.clone(), side)) {
                Some(entry) if entry.0 == have_number => {
                    for cohort in cohorts {
                        if !entry.2.contains(&cohort) {
                            entry.2.push(cohort);
                        }
                    }
                }
                Some(entry) if !closer(entry.0) => {}
                _ => {
                    best.insert((name.clone(), side), (have_number, have.clone(), cohorts));
                }
            }
        }
        best.into_iter()
            .map(|((axis, side), (_, measured, cohorts))| NearestCase {
                requested: request.axes[&axis].clone(),
                differs: vec![AxisDifference {
                    axis: axis.clone(),
                    asked: request.axes[&axis].clone(),
                    measured: measured.clone(),
                }],
                axis,
                side: if side == 0 { Side::Below } else { Side::Above },
                measured,
                cohorts: self.cohort_views(cohorts, limit, shape).0,
            })
            .collect()
    }

    /// [`Index::resolve`] with every comparison group's caveats at time `now` (stale evidence
    /// needs the time): what the web and the CLI answer.
    pub fn resolve_at(&self, request: &ResolveRequest, now: crate::time::Instant) -> ResolveResponse {
        let mut response = self.resolve(request);
        let views = response.cohorts.iter_mut().chain(response.nearest.iter_mut().flat_map(|n| n.cohorts.iter_mut()));
        for view in views {
            view.caveats = self.caveats(view, now);
        }
        response
    }

    /// [`Index::resolve_batch`] with caveats at time `now`.
    pub fn resolve_batch_at(
        &self,
        requests: &[ResolveRequest],
        now: crate::time::Instant,
    ) -> Result<Vec<ResolveResponse>, BatchSizeError> {
        if requests.is_empty() || requests.len() > MAX_BATCH {
            return Err(BatchSizeError { given: requests.len() });
        }
        Ok(requests.iter().map(|r| self.resolve_at(r, now)).collect())
    }

    pub fn resolve_batch(&self, requests: &[ResolveRequest]) -> Result<Vec<ResolveResponse>, BatchSizeError> {
        if requests.is_empty() || requests.len() > MAX_BATCH {
            return Err(BatchSizeError { given: requests.len() });
        }
        Ok(requests.iter().map(|r| self.resolve(r)).collect())
    }
}

/// A part of a request read as another name of the index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReadAs {
    /// `operation`, `hardware`, `axis` or `dtype`.
    pub field: String,
    /// As the request wrote it.
    pub given: String,
    /// As the index names it.
    pub read: String,
    /// Why, when there was a choice (other operations the words name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}
