//! The record-event ledger: who held the record of each comparison group, and since when.
//!
//! Recomputed from runs alone, so it is idempotent: the same rows always give the same
//! events, and appending only the events not yet stored can be repeated safely.
//! Corrections never delete: a retracted or superseded record holder stays in the
//! history, and its removal appends an event for the run that takes over.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use crate::index::Index;
use crate::rank::POLICY_VERSION;
use crate::rows::{IdText, RecordEventRow, Timestamp};
use crate::time::Instant;

pub const CAUSE_NEW_RUN: &str = "new_run";
pub const CAUSE_RETRACTION: &str = "retraction";
pub const CAUSE_SUPERSESSION: &str = "supersession";

#[derive(Debug, Clone, PartialEq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LedgerEvent {
    pub comparison_key: String,
    pub run_id: String,
    pub previous_run_id: Option<String>,
    pub policy_version: String,
    pub cause: String,
    pub at: Timestamp,
}

impl LedgerEvent {
    /// Whether a stored event records this one (same instant, runs and cause).
    fn is_stored_as(&self, stored: &RecordEventRow) -> bool {
        let same_previous = match (&stored.previous_run_id, &self.previous_run_id) {
            (Some(stored), Some(previous)) => *stored == **previous,
            (None, None) => true,
            _ => false,
        };
        stored.at.instant == self.at.instant
            && stored.run_id == *self.run_id
            && same_previous
            && *stored.cause == *self.cause
    }
}

enum Change {
    Arrival,
    Removal { cause: &'static str },
}

/// Recomputed and stored events of one comparison group that do not agree.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CohortLedgerMismatch {
    pub comparison_key: String,
    /// Recomputed but not stored.
    pub missing: Vec<LedgerEvent>,
    /// Stored but not recomputed.
    pub unexpected: Vec<RecordEventRow>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct LedgerReport {
    pub policy_version: String,
    pub cohorts_checked: usize,
    pub cohorts_matching: usize,
    pub stored_events: usize,
    pub recomputed_events: usize,
    /// Stored events written under another policy version: not comparable, not counted.
    pub other_policy_events: usize,
    pub mismatches: Vec<CohortLedgerMismatch>,
}

impl LedgerReport {
    pub fn is_clean(&self) -> bool {
        self.mismatches.is_empty()
    }
}

impl Index {
    /// The ledger of one comparison group, oldest first.
    pub fn ledger_for_cohort(&self, cohort: usize) -> Vec<LedgerEvent> {
        let cohort = &self.cohorts[cohort];
        let direction = cohort.direction;
        // A run enters the ledger when it could ever have been a record: published,
        // passed, with a primary metric. Retraction and supersession remove it later.
        let mut timeline: Vec<(Instant, u8, &IdText, usize, Change, &Timestamp)> = Vec::new();
        for &run in &cohort.runs {
            let row = &self.runs[run];
            if row.published_at.is_none() || &*row.status != "passed" || self.primary_value(run).is_none() {
                continue;
            }
            timeline.push((row.observed_at.instant, 0, &row.id, run, Change::Arrival, &row.observed_at));
            if let Some(retracted_at) = &row.retracted_at {
                timeline.push((
                    retracted_at.instant,
                    1,
                    &row.id,
                    run,
                    Change::Removal { cause: CAUSE_RETRACTION },
                    retracted_at,
                ));
            }
            if let Some(by) = self.facts[run].ineligibility().iter().find_map(|reason| match reason {
                crate::rank::Ineligibility::Superseded { by } => Some(by),
                _ => None,
            }) && let Some(successor) = self.run_index(by)
            {
                let at = &self.runs[successor].observed_at;
                timeline.push((at.instant, 1, &row.id, run, Change::Removal { cause: CAUSE_SUPERSESSION }, at));
            }
        }
        // Observation order, ties by id; at one instant arrivals precede removals.
        timeline.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)).then(a.2.cmp(b.2)));

        let value = |run: usize| self.primary_value(run).unwrap_or(f64::NAN);
        let mut active: Vec<usize> = Vec::new();
        let mut removed: Vec<usize> = Vec::new();
        let mut leader: Option<usize> = None;
        let mut events = Vec::new();
        let mut emit = |run: usize, previous: Option<usize>, cause: &str, at: &Timestamp| {
            events.push(LedgerEvent {
                comparison_key: cohort.comparison_key.to_string(),
                run_id: self.runs[run].id.to_string(),
                previous_run_id: previous.map(|p| self.runs[p].id.to_string()),
                policy_version: POLICY_VERSION.to_string(),
                cause: cause.to_string(),
                at: at.clone(),
            });
        };
        for (_, _, _, run, change, at) in timeline {
            match change {
                Change::Arrival => {
                    if removed.contains(&run) {
                        continue;
                    }
                    active.push(run);
                    // Strictly better only: an equal value leaves the record where it is.
                    if leader.is_none_or(|current| direction.is_better(value(run), value(current))) {
                        emit(run, leader, CAUSE_NEW_RUN, at);
                        leader = Some(run);
                    }
                }
                Change::Removal { cause } => {
                    if removed.contains(&run) {
                        continue;
                    }
                    removed.push(run);
                    active.retain(|&r| r != run);
                    if leader == Some(run) {
                        // The earliest holder of the best remaining value takes over.
                        let successor = active.iter().copied().min_by(|&a, &b| {
                            direction
                                .compare(value(a), value(b))
                                .then_with(|| self.runs[a].observed_at.instant.cmp(&self.runs[b].observed_at.instant))
                                .then_with(|| self.runs[a].id.cmp(&self.runs[b].id))
                        });
                        if let Some(successor) = successor {
                            emit(successor, Some(run), cause, at);
                        }
                        leader = successor;
                    }
                }
            }
        }
        events
    }

    /// The whole recomputed ledger, grouped by comparison group in catalog order.
    pub fn recompute_ledger(&self) -> Vec<LedgerEvent> {
        (0..self.cohorts.len()).flat_map(|c| self.ledger_for_cohort(c)).collect()
    }

    /// Recomputes the ledger and compares it, group by group, with `stored` record_events
    /// rows (runId, previousRunId, cause and at must agree; ids and createdAt are the
    /// store's own). This is what `ki catalog verify` reports.
    pub fn diff_ledger(&self, stored: &[RecordEventRow]) -> LedgerReport {
        let mut stored_by_key: BTreeMap<&str, Vec<&RecordEventRow>> = BTreeMap::new();
        let mut other_policy_events = 0;
        for event in stored {
            if event.policy_version == POLICY_VERSION {
                stored_by_key.entry(&event.comparison_key).or_default().push(event);
            } else {
                other_policy_events += 1;
            }
        }
        let mut computed_by_key: HashMap<&str, Vec<LedgerEvent>> = HashMap::new();
        let mut recomputed_events = 0;
        for (c, cohort) in self.cohorts.iter().enumerate() {
            let events = self.ledger_for_cohort(c);
            recomputed_events += events.len();
            if !events.is_empty() {
                computed_by_key.insert(&cohort.comparison_key, events);
            }
        }
        let mut keys: Vec<&str> = computed_by_key.keys().copied().chain(stored_by_key.keys().copied()).collect();
        keys.sort_unstable();
        keys.dedup();
        let mut mismatches = Vec::new();
        for key in &keys {
            let computed = computed_by_key.get(key).map(Vec::as_slice).unwrap_or(&[]);
            let stored_events = stored_by_key.get(key).map(Vec::as_slice).unwrap_or(&[]);
            let mut unmatched_stored: Vec<&RecordEventRow> = stored_events.to_vec();
            let mut missing = Vec::new();
            for event in computed {
                match unmatched_stored.iter().position(|s| event.is_stored_as(s)) {
                    Some(found) => {
                        unmatched_stored.swap_remove(found);
                    }
                    None => missing.push(event.clone()),
                }
            }
            if !missing.is_empty() || !unmatched_stored.is_empty() {
                mismatches.push(CohortLedgerMismatch {
                    comparison_key: key.to_string(),
                    missing,
                    unexpected: unmatched_stored.into_iter().cloned().collect(),
                });
            }
        }
        LedgerReport {
            policy_version: POLICY_VERSION.to_string(),
            cohorts_checked: keys.len(),
            cohorts_matching: keys.len() - mismatches.len(),
            stored_events: stored.len() - other_policy_events,
            recomputed_events,
            other_policy_events,
            mismatches,
        }
    }

    /// Checks the record_events rows the index was built from.
    pub fn verify_record_events(&self) -> LedgerReport {
        self.diff_ledger(&self.record_events)
    }

    /// Recomputed events the store does not have yet: what to append. Appending them and
    /// asking again yields nothing.
    pub fn pending_ledger_events(&self) -> Vec<LedgerEvent> {
        self.diff_ledger(&self.record_events).mismatches.into_iter().flat_map(|m| m.missing).collect()
    }
}
