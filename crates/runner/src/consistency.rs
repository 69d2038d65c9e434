//! What `ki verify` may conclude from one run's figures: pure rules, tested without a GPU.
//!
//! * **Consistency between figures.** A per-call device time must account for the call: for a
//!   callable timed by CUPTI (it cannot be captured, so its host time is part of every call), a
//!   figure far below what the eager time between events allows once the measured launch overhead
//!   of each activity is taken off is the harness failing to see the work (work done on the host,
//!   a launcher CUPTI missed): `unmeasurable`, never `passed`, never a cheat. For a captured
//!   callable the in-graph figure must agree with the device time CUPTI saw for the same calls run
//!   eagerly. Below [`GRAPH_AGREEMENT`] of it, the CUPTI figure is published instead (the graph
//!   method's difference of two replays carries launch gaps and overlaps of a few microseconds that
//!   are not the call's work: seen on the H200, FlashInfer's batch-1 decode at 3.4 µs in a graph
//!   against 10.6 µs of kernels); a graph that replays far less work than the eager call, by more
//!   than that resolution, is not the same work (`graph_divergence`, a refusal) when the eager
//!   figures agree with each other, and `unmeasurable` when they do not. The graph method's samples
//!   are differences of two replays dominated by the cache flushes between calls: for a kernel of a
//!   few microseconds their spread can exceed the kernel (the H100 coverage run of 2026-12-06:
//!   rmsnorm and small-M gemm baselines at medians of -6.6 to +3.5 µs a call, samples spanning 2 to
//!   18 µs, against 2 to 16 µs of kernels seen by CUPTI). A figure whose middle 80% spans more than
//!   [`GRAPH_NOISE_SHARE`] of the CUPTI figure is not resolved: CUPTI's is published, and that spread
//!   widens the resolution a refusal must exceed. Publishing CUPTI's figure is always safe: it is
//!   the device work of the eager calls, every one of them on new values and checked.
//! * **The input-value rule's bookkeeping** ([`check_ledger`]): every timed call had a call seed of
//!   its own (no values seen before), and the checks the runner relayed to the judge were of those
//!   calls.
use std::collections::BTreeSet;

/// Host time that may separate an eager call's events from its device work beyond the launches.
pub const EAGER_SLACK_NS: f64 = 2_000.0;
/// A figure below this share of what the other figure allows contradicts it.
pub const AGREEMENT: f64 = 0.5;
/// An in-graph figure below this share of the CUPTI figure is not published: CUPTI's is.
pub const GRAPH_AGREEMENT: f64 = 0.8;
/// What the graph method's difference of two replays can be off by per call without the work
/// differing (launch gaps, a kernel overlapping its predecessor's tail): a gap smaller than this
/// never makes a refusal.
pub const GRAPH_RESOLUTION_NS: f64 = 10_000.0;
/// The most the middle 80% of the in-graph samples may span, as a share of the CUPTI figure, for
/// the in-graph figure to be published.
pub const GRAPH_NOISE_SHARE: f64 = 0.25;

/// The medians of one run's figures (nanoseconds).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Figures {
    /// The primary figure's method.
    pub method: Method,
    pub primary: f64,
    /// The spread of the primary figure's samples: 90th minus 10th percentile (0 when unknown).
    pub primary_spread: f64,
    pub eager: f64,
    /// Device time of the eager calls seen by CUPTI (union of every activity's interval).
    pub cupti: Option<f64>,
    /// Device activities (kernels, copies, memsets) per call.
    pub activities: f64,
    /// Host time of one launch, measured by the worker before the solution was loaded.
    pub launch_overhead: f64,
    /// What a synchronization inside a call adds to its eager time: the median of probes timed
    /// between events just before each eager call, under the same host load.
    pub sync_overhead: f64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    InGraph,
    Cupti,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Finding {
    Consistent,
    /// The in-graph figure is not vouched for, the CUPTI figure of the same calls is: publish that
    /// one (why in the text).
    PublishCupti(String),
    /// The harness cannot vouch for the figure (its numbers are in the text).
    Unmeasurable(String),
    /// The captured graph does less work than the eager call (a refusal).
    GraphDivergence(String),
}

/// The device time the eager figure allows at least: eager minus one launch per activity, one
/// synchronization and slack.
pub fn eager_floor(f: &Figures) -> f64 {
    (f.eager - f.activities.max(1.0) * f.launch_overhead - f.sync_overhead - EAGER_SLACK_NS).max(0.0)
}

/// The rule between the figures of one run (see the module docs).
pub fn judge_figures(f: &Figures) -> Finding {
    let us = |ns: f64| format!("{:.2} µs", ns / 1e3);
    let no_work = || {
        Finding::Unmeasurable(format!("the per-call figure is {} ns: no device work was seen for the calls", f.primary))
    };
    let floor = eager_floor(f);
    match f.method {
        Method::Cupti if !(f.primary.is_finite() && f.primary > 0.0) => no_work(),
        Method::Cupti => {
            if f.primary < AGREEMENT * floor {
                return Finding::Unmeasurable(format!(
                    "CUPTI saw {} of device work per call, but the eager time between events is {} with {:.0} \
                     activities of {} launch overhead each: at least {} of the call is not device work CUPTI \
                     recorded",
                    us(f.primary),
                    us(f.eager),
                    f.activities,
                    us(f.launch_overhead),
                    us(floor)
                ));
            }
            Finding::Consistent
        }
        Method::InGraph => {
            let Some(cupti) = f.cupti else {
                return Finding::Unmeasurable(
                    "the in-graph figure has no CUPTI figure of the eager calls beside it".into(),
                );
            };
            let spread = if f.primary_spread.is_finite() { f.primary_spread.max(0.0) } else { f64::INFINITY };
            let resolution = GRAPH_RESOLUTION_NS.max(spread);
            let unresolved = spread > GRAPH_NOISE_SHARE * cupti;
            let noise = || {
                format!(
                    "the in-graph figure ({} per call, its middle 80% spanning {}) does not resolve the {} of \
                     device work CUPTI saw per eager call: the CUPTI figure is published",
                    us(f.primary),
                    us(spread),
                    us(cupti)
                )
            };
            if !(f.primary.is_finite() && f.primary > 0.0) {
                return if unresolved || cupti < resolution { Finding::PublishCupti(noise()) } else { no_work() };
            }
            if f.primary >= GRAPH_AGREEMENT * cupti {
                return if unresolved { Finding::PublishCupti(noise()) } else { Finding::Consistent };
            }
            let text = format!(
                "the captured calls take {} per call in the graph, the same calls run eagerly {} of device work \
                 (CUPTI)",
                us(f.primary),
                us(cupti)
            );
            if f.primary >= AGREEMENT * cupti || cupti - f.primary < resolution {
                return Finding::PublishCupti(if unresolved {
                    noise()
                } else {
                    format!("{text}: the CUPTI figure is published")
                });
            }
            if cupti >= AGREEMENT * floor {
                Finding::GraphDivergence(text)
            } else {
                Finding::Unmeasurable(format!(
                    "{text}, and the eager time between events ({}) disagrees with both",
                    us(f.eager)
                ))
            }
        }
    }
}

/// What a worker reported of its call seeds for one workload request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Ledger {
    /// Seeds of the timed calls, in order.
    pub timed: Vec<u64>,
    /// Seeds the worker says it asked the judge about.
    pub checked: Vec<u64>,
}

/// The input-value rule, from both sides: `relayed` are the seeds of the checks the runner itself
/// relayed to the judge, `plan_seeds` the trials' own seeds (first calls, not timed). Err names
/// the first breach.
pub fn check_ledger(ledger: &Ledger, relayed: &[u64], plan_seeds: &[u64], trials: usize) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    for seed in &ledger.timed {
        if !seen.insert(*seed) {
            return Err(format!("call seed {seed} was used by two timed calls"));
        }
        if plan_seeds.contains(seed) {
            return Err(format!("a timed call reused the trial seed {seed} (values the solution had seen)"));
        }
    }
    let mut reported: Vec<u64> = ledger.checked.clone();
    let mut relayed_sorted: Vec<u64> = relayed.to_vec();
    reported.sort_unstable();
    relayed_sorted.sort_unstable();
    if reported != relayed_sorted {
        return Err(format!(
            "the worker reports {} checked calls, the runner relayed {}",
            ledger.checked.len(),
            relayed.len()
        ));
    }
    for seed in relayed {
        if !plan_seeds.contains(seed) && !seen.contains(seed) {
            return Err(format!("a check was made of call seed {seed}, which no timed call had"));
        }
    }
    let timed_checks = relayed.iter().filter(|s| seen.contains(s)).count();
    if timed_checks < 2 * trials {
        return Err(format!(
            "{timed_checks} timed calls were checked against the reference, at least {} are required",
            2 * trials
        ));
    }
    Ok(())
}

/// Share of the speed-of-light time (datasheet peaks) below which a median is refused. An honest
/// memory-bound kernel can be timed at the bound itself: our Triton rmsnorm (batch 14509) was
/// timed at 49,517 ns in a graph against a 49,526 ns bound on the H200 (2026-12-04; ncu 55.8 µs),
/// since writes still in L2 when a kernel ends are not in its time. Faster than 125% of the
/// datasheet's bandwidth or rate is not measurement noise.
pub const SPEED_OF_LIGHT_MARGIN: f64 = 0.8;

/// Whether a median is below what the hardware allows (see [`SPEED_OF_LIGHT_MARGIN`]).
pub fn below_speed_of_light(median_ns: f64, bound_ns: f64) -> bool {
    bound_ns > 0.0 && median_ns < SPEED_OF_LIGHT_MARGIN * bound_ns
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figures(method: Method, primary: f64, eager: f64, cupti: Option<f64>, activities: f64) -> Figures {
        Figures {
            method,
            primary,
            primary_spread: 0.0,
            eager,
            cupti,
            activities,
            launch_overhead: 16_000.0,
            sync_overhead: 0.0,
        }
    }

    #[test]
    fn an_honest_cupti_figure_agrees_with_its_eager_time() {
        // gpt-5's rmsnorm r4 on the H200 (2026-12-04): one kernel of ~32 µs, eager ~40 µs.
        assert_eq!(
            judge_figures(&figures(Method::Cupti, 32_000.0, 40_000.0, Some(32_000.0), 1.0)),
            Finding::Consistent
        );
        // Many small launches: the eager time is mostly launch overhead, which the floor takes off.
        assert_eq!(
            judge_figures(&figures(Method::Cupti, 60_000.0, 400_000.0, Some(60_000.0), 30.0)),
            Finding::Consistent
        );
    }

    #[test]
    fn a_cupti_figure_far_below_the_eager_time_is_unmeasurable_not_a_pass_nor_a_cheat() {
        // The landed lane's failure: Triton kernels CUPTI did not attribute, 1.5 µs against 150 µs eager.
        let finding = judge_figures(&figures(Method::Cupti, 1_500.0, 150_000.0, Some(1_500.0), 1.0));
        assert!(matches!(finding, Finding::Unmeasurable(ref t) if t.contains("not device work")), "{finding:?}");
        // Work done on the host between the events: a copy of 5 µs against 1 ms.
        assert!(matches!(
            judge_figures(&figures(Method::Cupti, 5_000.0, 1_000_000.0, Some(5_000.0), 1.0)),
            Finding::Unmeasurable(_)
        ));
    }

    #[test]
    fn a_call_that_synchronizes_is_allowed_the_measured_round_trip() {
        // gpt-5's rmsnorm r4 at batch 1 on the H200 (2026-12-04): 2.37 µs of kernel (ncu 3.35 µs),
        // 40.7 µs between events because it synchronizes before returning; launch 22.8 µs.
        let mut f = figures(Method::Cupti, 2_370.0, 40_700.0, Some(2_370.0), 1.0);
        f.launch_overhead = 22_810.0;
        assert!(matches!(judge_figures(&f), Finding::Unmeasurable(_)));
        f.sync_overhead = 18_000.0;
        assert_eq!(judge_figures(&f), Finding::Consistent);
    }

    #[test]
    fn no_device_work_at_all_is_unmeasurable() {
        for primary in [0.0, -1.0, f64::NAN] {
            assert!(matches!(
                judge_figures(&figures(Method::Cupti, primary, 10_000.0, None, 0.0)),
                Finding::Unmeasurable(_)
            ));
        }
    }

    #[test]
    fn a_graph_that_replays_less_work_than_the_eager_call_is_refused() {
        // In the graph 3 µs a call, eagerly 100 µs of kernels in a 110 µs eager call.
        let finding = judge_figures(&figures(Method::InGraph, 3_000.0, 110_000.0, Some(100_000.0), 1.0));
        assert!(matches!(finding, Finding::GraphDivergence(_)), "{finding:?}");
        // The same graph figure when the eager figures disagree with each other: the harness's fault.
        let finding = judge_figures(&figures(Method::InGraph, 3_000.0, 900_000.0, Some(30_000.0), 1.0));
        assert!(matches!(finding, Finding::Unmeasurable(_)), "{finding:?}");
    }

    #[test]
    fn a_graph_figure_off_by_less_than_the_method_resolves_publishes_cupti_instead() {
        // FlashInfer's batch-1 decode on the H200 (2026-12-04): 3.40 µs in the graph, 10.62 µs of
        // kernels eagerly; honest, and refused as graph_divergence before this rule.
        let finding = judge_figures(&figures(Method::InGraph, 3_400.0, 98_400.0, Some(10_620.0), 2.0));
        assert!(matches!(finding, Finding::PublishCupti(ref t) if t.contains("3.40 µs")), "{finding:?}");
        // 70% of CUPTI: not vouched for either, whatever the gap.
        let finding = judge_figures(&figures(Method::InGraph, 70_000.0, 110_000.0, Some(100_000.0), 1.0));
        assert!(matches!(finding, Finding::PublishCupti(_)), "{finding:?}");
        // 85%: the graph figure stands.
        assert_eq!(
            judge_figures(&figures(Method::InGraph, 85_000.0, 110_000.0, Some(100_000.0), 1.0)),
            Finding::Consistent
        );
        // Less than half, and by more than the resolution: a refusal.
        let finding = judge_figures(&figures(Method::InGraph, 9_000.0, 40_000.0, Some(30_000.0), 1.0));
        assert!(matches!(finding, Finding::GraphDivergence(_)), "{finding:?}");
    }

    fn in_graph(primary: f64, spread: f64, cupti: f64) -> Figures {
        Figures { primary_spread: spread, ..figures(Method::InGraph, primary, 200_000.0, Some(cupti), 1.0) }
    }

    #[test]
    fn an_in_graph_figure_lost_in_its_own_noise_publishes_cupti_and_is_never_a_refusal() {
        // The H100 coverage run of 2026-12-06 (medians, p90 - p10 and CUPTI of the eager calls):
        // torch's gemm at M=6 (refused as graph_divergence before this rule), rmsnorm_h128 at
        // batch 4 and gemm_n256_k7168 at M=1 (unmeasurable before it: negative medians).
        for (primary, spread, cupti) in
            [(620.0, 18_231.0, 12_220.0), (-985.6, 4_178.0, 2_500.0), (-4_044.0, 14_720.0, 8_000.0)]
        {
            let finding = judge_figures(&in_graph(primary, spread, cupti));
            assert!(matches!(finding, Finding::PublishCupti(ref t) if t.contains("does not resolve")), "{finding:?}");
        }
        // Agreeing with CUPTI in its median, but spread over more than a quarter of it.
        assert!(matches!(judge_figures(&in_graph(3_000.0, 2_000.0, 3_000.0)), Finding::PublishCupti(_)));
        assert_eq!(judge_figures(&in_graph(3_000.0, 500.0, 3_000.0)), Finding::Consistent);
        // A spread that cannot be computed is no spread at all.
        assert!(matches!(judge_figures(&in_graph(3_000.0, f64::NAN, 3_000.0)), Finding::PublishCupti(_)));
    }

    #[test]
    fn noise_does_not_hide_a_graph_that_skips_work_and_a_tight_negative_figure_is_the_harness() {
        // Tight samples far below the eager work: refused, as without the spread.
        assert!(matches!(judge_figures(&in_graph(3_000.0, 1_000.0, 100_000.0)), Finding::GraphDivergence(_)));
        // A skipping graph made noisy gains nothing: the eager calls' CUPTI figure is published.
        assert!(matches!(judge_figures(&in_graph(3_000.0, 200_000.0, 100_000.0)), Finding::PublishCupti(_)));
        // Replays of the calls that take less than the flushes alone, consistently: not measured.
        assert!(matches!(judge_figures(&in_graph(-500.0, 1_000.0, 100_000.0)), Finding::Unmeasurable(_)));
    }

    #[test]
    fn an_in_graph_figure_is_not_held_to_the_host_time_of_eager_calls() {
        // A capturable Python callable with 200 µs of Python around a 5 µs kernel: the graph is the
        // device work, and CUPTI agrees.
        assert_eq!(
            judge_figures(&figures(Method::InGraph, 6_000.0, 150_000.0, Some(5_000.0), 1.0)),
            Finding::Consistent
        );
        // Slower in the graph than eagerly (launch gaps): fine.
        assert_eq!(
            judge_figures(&figures(Method::InGraph, 9_000.0, 10_000.0, Some(5_000.0), 2.0)),
            Finding::Consistent
        );
        // Without the CUPTI figure the graph cannot be checked.
        assert!(matches!(
            judge_figures(&figures(Method::InGraph, 9_000.0, 10_000.0, None, 2.0)),
            Finding::Unmeasurable(_)
        ));
    }

    #[test]
    fn the_floor_takes_one_launch_per_activity_and_never_goes_below_zero() {
        let mut f = figures(Method::Cupti, 1.0, 50_000.0, None, 2.0);
        assert_eq!(eager_floor(&f), 50_000.0 - 32_000.0 - EAGER_SLACK_NS);
        f.sync_overhead = 10_000.0;
        assert_eq!(eager_floor(&f), 50_000.0 - 32_000.0 - 10_000.0 - EAGER_SLACK_NS);
        let f = figures(Method::Cupti, 1.0, 5_000.0, None, 0.0);
        assert_eq!(eager_floor(&f), 0.0);
    }

    fn ledger(timed: &[u64], checked: &[u64]) -> Ledger {
        Ledger { timed: timed.to_vec(), checked: checked.to_vec() }
    }

    #[test]
    fn the_ledger_accepts_new_seeds_for_every_timed_call_with_checks_among_them() {
        let l = ledger(&[11, 12, 13, 14, 15], &[1, 12, 15]);
        assert_eq!(check_ledger(&l, &[1, 12, 15], &[1], 1), Ok(()));
    }

    #[test]
    fn the_ledger_refuses_repeated_values_and_unaccounted_checks() {
        let plan = [1u64, 2];
        assert!(
            check_ledger(&ledger(&[11, 12, 11], &[11, 12]), &[11, 12], &plan, 1).unwrap_err().contains("two timed")
        );
        assert!(
            check_ledger(&ledger(&[1, 12, 13], &[12, 13]), &[12, 13], &plan, 1).unwrap_err().contains("trial seed")
        );
        assert!(
            check_ledger(&ledger(&[11, 12], &[11, 12, 99]), &[11, 12], &plan, 1).unwrap_err().contains("reports 3")
        );
        assert!(
            check_ledger(&ledger(&[11, 12], &[11, 99]), &[11, 99], &plan, 1).unwrap_err().contains("no timed call")
        );
        // Only the first calls checked: not enough.
        assert!(
            check_ledger(&ledger(&[11, 12, 13], &[1, 2, 11]), &[1, 2, 11], &plan, 2)
                .unwrap_err()
                .contains("at least 4")
        );
    }

    #[test]
    fn the_speed_of_light_refusal_leaves_room_for_cache_effects() {
        assert!(!below_speed_of_light(49_517.0, 49_526.0));
        assert!(!below_speed_of_light(39_700.0, 49_526.0));
        assert!(below_speed_of_light(39_600.0, 49_526.0));
        assert!(below_speed_of_light(0.0, 4.0));
        assert!(!below_speed_of_light(1.0, 0.0));
    }

    #[test]
    fn median_of_odd_even_and_empty_samples() {
        use crate::stats::median;
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert!(median(&[]).is_nan());
    }
}
