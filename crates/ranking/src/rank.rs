//! The ranking-v1 judgement on single runs and on one comparison group: eligibility,
//! trust, direction, cohort profile and dense ranks with the tie rules.

use std::cmp::Ordering;

use serde::{Serialize, Serializer};

use crate::time::Instant;

pub const POLICY_VERSION: &str = "ranking-v1";

/// Why a run is not ranked. Serialized as its code (`STATUS_RUNTIME_ERROR`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ineligibility {
    Unpublished,
    Status(String),
    Retracted,
    /// Superseded by the named published run.
    Superseded {
        by: String,
    },
    MissingPrimaryMetric,
}

impl Ineligibility {
    pub fn code(&self) -> String {
        match self {
            Ineligibility::Unpublished => "UNPUBLISHED".into(),
            Ineligibility::Status(status) => format!("STATUS_{}", status.to_ascii_uppercase()),
            Ineligibility::Retracted => "RETRACTED".into(),
            Ineligibility::Superseded { .. } => "SUPERSEDED".into(),
            Ineligibility::MissingPrimaryMetric => "MISSING_PRIMARY_METRIC".into(),
        }
    }
}

impl schemars::JsonSchema for Ineligibility {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Ineligibility".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "Why a run is not ranked: UNPUBLISHED, STATUS_<status>, RETRACTED, SUPERSEDED or MISSING_PRIMARY_METRIC"
        })
    }
}

impl Serialize for Ineligibility {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.code())
    }
}

/// How far a result can be trusted, weakest first so that `Ord` ranks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TrustLevel {
    Reported,
    Reproducible,
    Verified,
    Replicated,
}

impl TrustLevel {
    /// Attestations are not an input: only KernelIndex's own reruns and independent
    /// replications raise trust.
    pub fn assess(
        independent_replications: i64,
        reproduced_by_kernelindex: bool,
        source_available: bool,
        has_raw_evidence: bool,
    ) -> TrustLevel {
        if independent_replications >= 2 {
            TrustLevel::Replicated
        } else if reproduced_by_kernelindex {
            TrustLevel::Verified
        } else if source_available && has_raw_evidence {
            TrustLevel::Reproducible
        } else {
            TrustLevel::Reported
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TrustLevel::Reported => "reported",
            TrustLevel::Reproducible => "reproducible",
            TrustLevel::Verified => "verified",
            TrustLevel::Replicated => "replicated",
        }
    }

    /// Verified or better: what "best verified" asks for.
    pub fn is_verified(self) -> bool {
        self >= TrustLevel::Verified
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    LowerIsBetter,
    HigherIsBetter,
}

impl Direction {
    /// Latencies, times and time-valued scores are better when lower; rates (throughput,
    /// FLOP/s, bandwidth, speedups) when higher.
    pub fn for_metric(metric: &str, unit: Option<&str>) -> Direction {
        let metric = metric.to_ascii_lowercase();
        let unit = unit.unwrap_or("").to_ascii_lowercase();
        let higher_metric = ["throughput", "flops", "bandwidth", "speedup", "tokens_per", "per_second", "tps"]
            .iter()
            .any(|word| metric.contains(word));
        let rate_unit =
            unit.contains("/s") || unit.ends_with("_s") && unit != "s" || unit.ends_with("ps") || unit == "x";
        if higher_metric || rate_unit { Direction::HigherIsBetter } else { Direction::LowerIsBetter }
    }

    /// Ordering where `Less` means `a` is the better value.
    pub fn compare(self, a: f64, b: f64) -> Ordering {
        match self {
            Direction::LowerIsBetter => a.total_cmp(&b),
            Direction::HigherIsBetter => b.total_cmp(&a),
        }
    }

    pub fn is_better(self, a: f64, b: f64) -> bool {
        self.compare(a, b) == Ordering::Less
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CohortProfile {
    /// At least one run's number comes from its source's own harness: only equal values tie.
    SourceNative,
    StrictExact,
}

/// One eligible run as the ranking sees it.
#[derive(Debug, Clone)]
/// `Id` is how the caller holds run ids (the index: [`crate::rows::IdText`]); ties break by id.
pub struct Contender<'a, Id: Ord + ?Sized = str> {
    pub id: &'a Id,
    pub value: f64,
    /// (low, high) when the run carries a confidence interval.
    pub interval: Option<(f64, f64)>,
    pub trust: TrustLevel,
    pub observed_at: Instant,
}

/// Equal values always tie; overlapping intervals tie only when both runs have one and
/// the cohort is not source-native.
pub fn ties<Id: Ord + ?Sized>(a: &Contender<Id>, b: &Contender<Id>, profile: CohortProfile) -> bool {
    if a.value == b.value {
        return true;
    }
    if profile == CohortProfile::SourceNative {
        return false;
    }
    match (a.interval, b.interval) {
        (Some((a_low, a_high)), Some((b_low, b_high))) => a_low <= b_high && b_low <= a_high,
        _ => false,
    }
}

/// Order inside a tie: higher trust, then newer observation, then id.
pub fn tie_order<Id: Ord + ?Sized>(a: &Contender<Id>, b: &Contender<Id>) -> Ordering {
    b.trust.cmp(&a.trust).then_with(|| b.observed_at.cmp(&a.observed_at)).then_with(|| a.id.cmp(b.id))
}

/// Dense ranks, best first. Returns (index into `contenders`, rank) in display order.
/// A run joins the current tie group only if it ties every member already in it, so a
/// chain a~b, b~c with a≁c splits into {a,b} and {c}.
pub fn rank_contenders<Id: Ord + ?Sized>(
    contenders: &[Contender<Id>],
    profile: CohortProfile,
    direction: Direction,
) -> Vec<(usize, u32)> {
    let mut order: Vec<usize> = (0..contenders.len()).collect();
    order.sort_by(|&a, &b| {
        direction
            .compare(contenders[a].value, contenders[b].value)
            .then_with(|| tie_order(&contenders[a], &contenders[b]))
    });
    let mut groups: Vec<Vec<usize>> = Vec::new();
    for candidate in order {
        if let Some(group) = groups.last_mut()
            && group.iter().all(|&member| ties(&contenders[member], &contenders[candidate], profile))
        {
            group.push(candidate);
            continue;
        }
        groups.push(vec![candidate]);
    }
    let mut ranked = Vec::with_capacity(contenders.len());
    for (position, mut group) in groups.into_iter().enumerate() {
        group.sort_by(|&a, &b| tie_order(&contenders[a], &contenders[b]));
        ranked.extend(group.into_iter().map(|member| (member, position as u32 + 1)));
    }
    ranked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contender(
        id: &'static str,
        value: f64,
        interval: Option<(f64, f64)>,
        trust: TrustLevel,
        observed_second: i64,
    ) -> Contender<'static> {
        Contender { id, value, interval, trust, observed_at: Instant(observed_second * 1_000_000_000) }
    }

    fn ranks(
        contenders: &[Contender<'static>],
        profile: CohortProfile,
        direction: Direction,
    ) -> Vec<(&'static str, u32)> {
        rank_contenders(contenders, profile, direction)
            .into_iter()
            .map(|(index, rank)| (contenders[index].id, rank))
            .collect()
    }

    use TrustLevel::*;

    #[test]
    fn equal_values_tie_in_every_profile() {
        let runs = [
            contender("a", 10.0, None, Reported, 1),
            contender("b", 10.0, None, Reported, 2),
            contender("c", 12.0, None, Reported, 3),
        ];
        for profile in [CohortProfile::SourceNative, CohortProfile::StrictExact] {
            assert_eq!(ranks(&runs, profile, Direction::LowerIsBetter), vec![("b", 1), ("a", 1), ("c", 2)]);
        }
    }

    #[test]
    fn overlapping_intervals_tie_only_in_strict_exact_cohorts() {
        let runs = [
            contender("a", 10.0, Some((9.0, 11.0)), Reported, 1),
            contender("b", 10.5, Some((10.2, 10.8)), Reported, 1),
        ];
        assert_eq!(ranks(&runs, CohortProfile::StrictExact, Direction::LowerIsBetter), vec![("a", 1), ("b", 1)]);
        assert_eq!(ranks(&runs, CohortProfile::SourceNative, Direction::LowerIsBetter), vec![("a", 1), ("b", 2)]);
    }

    #[test]
    fn an_interval_on_only_one_side_does_not_tie() {
        let runs = [contender("a", 10.0, Some((9.0, 11.0)), Reported, 1), contender("b", 10.5, None, Reported, 1)];
        assert_eq!(ranks(&runs, CohortProfile::StrictExact, Direction::LowerIsBetter), vec![("a", 1), ("b", 2)]);
    }

    #[test]
    fn disjoint_intervals_do_not_tie() {
        let runs = [
            contender("a", 10.0, Some((9.5, 10.5)), Reported, 1),
            contender("b", 11.0, Some((10.6, 11.4)), Reported, 1),
        ];
        assert_eq!(ranks(&runs, CohortProfile::StrictExact, Direction::LowerIsBetter), vec![("a", 1), ("b", 2)]);
    }

    #[test]
    fn tie_chains_are_not_transitive() {
        // a overlaps b, b overlaps c, a does not overlap c: c starts the next group.
        let runs = [
            contender("a", 10.0, Some((9.0, 10.6)), Reported, 1),
            contender("b", 10.5, Some((10.4, 11.2)), Reported, 1),
            contender("c", 11.0, Some((10.9, 11.5)), Reported, 1),
        ];
        assert_eq!(
            ranks(&runs, CohortProfile::StrictExact, Direction::LowerIsBetter),
            vec![("a", 1), ("b", 1), ("c", 2)]
        );
    }

    #[test]
    fn ranks_are_dense() {
        let runs = [
            contender("a", 1.0, None, Reported, 1),
            contender("b", 1.0, None, Reported, 1),
            contender("c", 1.0, None, Reported, 1),
            contender("d", 2.0, None, Reported, 1),
        ];
        let ranked = ranks(&runs, CohortProfile::SourceNative, Direction::LowerIsBetter);
        assert_eq!(ranked.last(), Some(&("d", 2)));
    }

    #[test]
    fn inside_a_tie_trust_then_newer_then_id() {
        let runs = [
            contender("d", 5.0, None, Reported, 9),
            contender("c", 5.0, None, Verified, 1),
            contender("b", 5.0, None, Reported, 5),
            contender("a", 5.0, None, Reported, 5),
            contender("e", 5.0, None, Replicated, 0),
        ];
        assert_eq!(
            ranks(&runs, CohortProfile::SourceNative, Direction::LowerIsBetter),
            vec![("e", 1), ("c", 1), ("d", 1), ("a", 1), ("b", 1)]
        );
    }

    #[test]
    fn direction_follows_the_metric() {
        let runs = [contender("slow", 100.0, None, Reported, 1), contender("fast", 50.0, None, Reported, 1)];
        assert_eq!(ranks(&runs, CohortProfile::StrictExact, Direction::LowerIsBetter)[0], ("fast", 1));
        assert_eq!(ranks(&runs, CohortProfile::StrictExact, Direction::HigherIsBetter)[0], ("slow", 1));
        assert_eq!(Direction::for_metric("latency", Some("ns")), Direction::LowerIsBetter);
        assert_eq!(Direction::for_metric("score", Some("s")), Direction::LowerIsBetter);
        assert_eq!(Direction::for_metric("output_token_throughput_tps", Some("tokens_s")), Direction::HigherIsBetter);
        assert_eq!(Direction::for_metric("compute", Some("TFLOP/s")), Direction::HigherIsBetter);
    }

    #[test]
    fn trust_levels_in_order() {
        assert_eq!(TrustLevel::assess(2, false, false, false), Replicated);
        assert_eq!(TrustLevel::assess(1, true, true, true), Verified);
        assert_eq!(TrustLevel::assess(1, false, true, true), Reproducible);
        assert_eq!(TrustLevel::assess(0, false, true, false), Reported);
        assert_eq!(TrustLevel::assess(0, false, false, true), Reported);
        assert!(Replicated > Verified && Verified > Reproducible && Reproducible > Reported);
    }
}
