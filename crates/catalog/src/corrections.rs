//! Corrections: retracting a run and superseding one run by another. Each is one write
//! transaction that sets the run's existing retraction or supersession columns, appends
//! the record events ranking-v1 now requires, and writes an audit entry — or, refused,
//! writes nothing. Nothing is ever deleted.

use std::collections::BTreeSet;

use ki_model::rows::BenchmarkRunRow;
use serde::Serialize;

use crate::error::{CatalogError, DbContext, Refusal, Result};
use crate::ledger::{AppendedEvent, append_pending, text_param, typed_rows_by};
use crate::rows::{SqlValue, Storage};
use crate::schema::Kind;
use crate::store::{Backend, Pool, Session, placeholder};

/// Longest reason or actor name kept (a reason is a sentence or two, not a report).
const MAX_TEXT_CHARS: usize = 2000;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CorrectionAction {
    Retract,
    Supersede,
}

impl CorrectionAction {
    pub fn as_str(self) -> &'static str {
        match self {
            CorrectionAction::Retract => "retract",
            CorrectionAction::Supersede => "supersede",
        }
    }
}

/// One audit entry: who corrected which run, when (UTC) and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Correction {
    pub id: String,
    pub action: CorrectionAction,
    /// The retracted or superseded run.
    pub run_id: String,
    /// The superseding run (supersessions only).
    pub by_run_id: Option<String>,
    pub reason: String,
    pub actor: String,
    pub at: String,
}

/// What a correction did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CorrectionReport {
    pub correction: Correction,
    pub run_digest: String,
    pub comparison_key: String,
    /// Record events appended because the record of the comparison group moved
    /// (empty when the corrected run did not hold it).
    pub events: Vec<AppendedEvent>,
}

/// A reason or actor: trimmed, not empty, not huge.
fn checked(value: &str, what: &'static str) -> Result<String> {
    let value = value.trim();
    if value.is_empty() {
        return Err(CatalogError::Refused(Refusal::Empty(what)));
    }
    Ok(value.chars().take(MAX_TEXT_CHARS).collect())
}

/// The run a reference names: its id, or its run digest (`sha256:` optional).
async fn find_run(session: &mut Session, reference: &str, role: &'static str) -> Result<BenchmarkRunRow> {
    let reference = reference.trim();
    let unknown = || CatalogError::Refused(Refusal::UnknownRun { role, given: reference.to_string() });
    let found = if uuid::Uuid::try_parse(reference).is_ok() {
        typed_rows_by(session, "id", &reference.to_ascii_lowercase()).await?
    } else {
        let digest =
            if reference.starts_with("sha256:") { reference.to_string() } else { format!("sha256:{reference}") };
        if !crate::rows::is_digest(&digest) {
            return Err(unknown());
        }
        typed_rows_by(session, "runDigest", &digest).await?
    };
    found.into_iter().next().ok_or_else(unknown)
}

/// `UPDATE benchmark_runs SET <assignments> WHERE id = … AND <guard>`: exactly one row
/// must change, or another writer got there first.
async fn update_run(
    session: &mut Session,
    assignments: &[(&str, Kind, SqlValue)],
    id: &str,
    guard: &str,
) -> Result<()> {
    let backend = session.backend();
    let mut sets = Vec::new();
    let mut params = Vec::new();
    for (number, (column, kind, value)) in assignments.iter().enumerate() {
        sets.push(format!("{column} = {}", placeholder(backend, number + 1, *kind)));
        params.push(value.clone());
    }
    params.push(text_param(id));
    let sql = format!(
        "UPDATE benchmark_runs SET {} WHERE id = {} AND {guard}",
        sets.join(", "),
        placeholder(backend, params.len(), Kind::Uuid)
    );
    let changed = session.execute(&sql, &params).await.context(|| format!("cannot correct run {id}"))?;
    if changed != 1 {
        return Err(CatalogError::Export(format!(
            "run {id} changed while it was being corrected; nothing written, try again"
        )));
    }
    Ok(())
}

async fn write_audit(session: &mut Session, correction: &Correction) -> Result<()> {
    let backend = session.backend();
    let kinds = [Kind::Uuid, Kind::Text, Kind::Uuid, Kind::Uuid, Kind::Text, Kind::Text, Kind::Timestamp];
    let placeholders: Vec<String> =
        kinds.iter().enumerate().map(|(i, kind)| placeholder(backend, i + 1, *kind)).collect();
    let sql = format!(
        "INSERT INTO corrections (id, action, run_id, by_run_id, reason, actor, at) VALUES ({})",
        placeholders.join(", ")
    );
    let params = [
        text_param(&correction.id),
        text_param(correction.action.as_str()),
        text_param(&correction.run_id),
        SqlValue::Text(correction.by_run_id.clone()),
        text_param(&correction.reason),
        text_param(&correction.actor),
        text_param(&correction.at),
    ];
    session.execute(&sql, &params).await.context(|| "cannot write the correction's audit entry".into())?;
    Ok(())
}

/// Appends the events the corrected group now needs, writes the audit entry, commits.
async fn finish(mut session: Session, correction: Correction, run: &BenchmarkRunRow) -> Result<CorrectionReport> {
    let comparison_key = run.comparison_key.clone();
    let events = append_pending(&mut session, &BTreeSet::from([comparison_key.clone()])).await?;
    write_audit(&mut session, &correction).await?;
    session.commit().await.context(|| "cannot commit the correction".into())?;
    Ok(CorrectionReport { correction, run_digest: run.run_digest.clone(), comparison_key, events })
}

pub(crate) async fn retract(pool: &Pool, reference: &str, reason: &str, actor: &str) -> Result<CorrectionReport> {
    let reason = checked(reason, "retraction reason")?;
    let actor = checked(actor, "actor")?;
    let mut session = Session::begin(pool, true).await?;
    let run = find_run(&mut session, reference, "id or digest").await?;
    let id = run.id.clone();
    if let Some(at) = &run.retracted_at {
        let previous = run.retraction_reason.as_deref().unwrap_or("no reason recorded").to_string();
        return Err(CatalogError::Refused(Refusal::AlreadyRetracted { run: id, at: at.clone(), reason: previous }));
    }
    let at = ki_model::utc::now_millis();
    update_run(
        &mut session,
        &[("retracted_at", Kind::Timestamp, text_param(&at)), ("retraction_reason", Kind::Text, text_param(&reason))],
        &id,
        "retracted_at IS NULL",
    )
    .await?;
    let correction = Correction {
        id: crate::new_row_id().to_string(),
        action: CorrectionAction::Retract,
        run_id: id,
        by_run_id: None,
        reason,
        actor,
        at,
    };
    finish(session, correction, &run).await
}

pub(crate) async fn supersede(
    pool: &Pool,
    old: &str,
    new: &str,
    reason: &str,
    actor: &str,
) -> Result<CorrectionReport> {
    let reason = checked(reason, "supersession reason")?;
    let actor = checked(actor, "actor")?;
    let mut session = Session::begin(pool, true).await?;
    let old_run = find_run(&mut session, old, "id or digest (the run to supersede)").await?;
    let new_run = find_run(&mut session, new, "id or digest (the superseding run)").await?;
    let (old_id, new_id) = (old_run.id.clone(), new_run.id.clone());
    let refuse = |refusal| Err(CatalogError::Refused(refusal));
    if old_id == new_id {
        return refuse(Refusal::SameRun(old_id));
    }
    if old_run.comparison_key != new_run.comparison_key {
        return refuse(Refusal::DifferentComparisonKey {
            old: old_id,
            new: new_id,
            old_key: old_run.comparison_key,
            new_key: new_run.comparison_key,
        });
    }
    if new_run.published_at.is_none() {
        return refuse(Refusal::SuccessorUnpublished { old: old_id, new: new_id });
    }
    if new_run.retracted_at.is_some() {
        return refuse(Refusal::SuccessorRetracted { old: old_id, new: new_id });
    }
    if let Some(by) = typed_rows_by::<BenchmarkRunRow>(&mut session, "supersedesId", &old_id).await?.first() {
        return refuse(Refusal::AlreadySuperseded { old: old_id, by: by.id.clone() });
    }
    if let Some(other) = new_run.supersedes_id {
        return refuse(Refusal::SuccessorTaken { new: new_id, other });
    }
    if old_run.supersedes_id.as_deref() == Some(new_id.as_str()) {
        return refuse(Refusal::Cycle { old: old_id, new: new_id });
    }
    // ranking-v1 reads supersession from the successor's row: it names the run it replaces.
    update_run(&mut session, &[("supersedes_id", Kind::Uuid, text_param(&old_id))], &new_id, "supersedes_id IS NULL")
        .await?;
    let correction = Correction {
        id: crate::new_row_id().to_string(),
        action: CorrectionAction::Supersede,
        run_id: old_id,
        by_run_id: Some(new_id),
        reason,
        actor,
        at: ki_model::utc::now_millis(),
    };
    finish(session, correction, &old_run).await
}

/// Every audit entry, oldest first.
pub(crate) async fn list(pool: &Pool) -> Result<Vec<Correction>> {
    let mut session = Session::begin(pool, false).await?;
    let uuid = |column: &str| match session.backend() {
        Backend::Postgres => format!("{column}::text"),
        Backend::Sqlite => column.to_string(),
    };
    let sql = format!(
        "SELECT {}, action, {}, {}, reason, actor, at FROM corrections ORDER BY seq",
        uuid("id"),
        uuid("run_id"),
        uuid("by_run_id")
    );
    let rows =
        session.fetch_all(&sql, &[], &[Storage::Text; 7]).await.context(|| "cannot read the corrections".into())?;
    session.rollback().await.context(|| "cannot end a read transaction".into())?;
    rows.into_iter()
        .map(|row| {
            let mut values = row.into_iter().map(|value| match value {
                SqlValue::Text(text) => text,
                _ => None,
            });
            let mut next = || values.next().flatten();
            let (id, action, run_id, by_run_id, reason, actor, at) =
                (next(), next(), next(), next(), next(), next(), next());
            let action = match action.as_deref() {
                Some("retract") => CorrectionAction::Retract,
                Some("supersede") => CorrectionAction::Supersede,
                other => return Err(CatalogError::Corrupt(format!("corrections holds an unknown action {other:?}"))),
            };
            Ok(Correction {
                id: id.unwrap_or_default(),
                action,
                run_id: run_id.unwrap_or_default(),
                by_run_id,
                reason: reason.unwrap_or_default(),
                actor: actor.unwrap_or_default(),
                at: at.unwrap_or_default(),
            })
        })
        .collect()
}
