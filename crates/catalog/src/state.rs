//! The web's own state: API keys (stored as the sha256 of the secret), community
//! attestations of runs and submitted manifest bundles, in the catalog's tables `api_keys`,
//! `attestations` and `submissions` (migration 0004, both backends). Every write is one
//! transaction, so every replica of `ki serve` on one catalog sees it on its next request:
//! a revoked key is refused by all of them at once.
//!
//! Writes that spend a key's daily quota check the key, its scope and the quota inside the
//! transaction that writes, under a lock (SQLite's single writer; on PostgreSQL an
//! advisory lock of its own, so an import running meanwhile does not hold them up).

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::Catalog;
use crate::access::{KeyRefusal, Scope};
use crate::error::{CatalogError, DbContext, Refusal, Result};
use crate::rows::{SqlValue, Storage};
use crate::schema::Kind;
use crate::store::{Backend, Pool, Session, placeholder};

/// An API key as stored: never its secret.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKey {
    pub id: String,
    /// The first characters of the key, shown so an admin can tell keys apart.
    pub prefix: String,
    /// sha256 hex of the whole key.
    pub hash: String,
    pub label: String,
    pub scopes: Vec<Scope>,
    pub daily_quota: u32,
    pub created_at: String,
    #[serde(default)]
    pub revoked: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttestationKind {
    Reproduced,
    CouldNotReproduce,
    EnvironmentNote,
    RegressionObserved,
}

impl AttestationKind {
    pub const ALL: [AttestationKind; 4] = [
        AttestationKind::Reproduced,
        AttestationKind::CouldNotReproduce,
        AttestationKind::EnvironmentNote,
        AttestationKind::RegressionObserved,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            AttestationKind::Reproduced => "reproduced",
            AttestationKind::CouldNotReproduce => "could_not_reproduce",
            AttestationKind::EnvironmentNote => "environment_note",
            AttestationKind::RegressionObserved => "regression_observed",
        }
    }

    pub fn label(self) -> &'static str {
        match self {
            AttestationKind::Reproduced => "Reproduced",
            AttestationKind::CouldNotReproduce => "Could not reproduce",
            AttestationKind::EnvironmentNote => "Environment note",
            AttestationKind::RegressionObserved => "Regression observed",
        }
    }

    pub fn parse(text: &str) -> Option<AttestationKind> {
        AttestationKind::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

/// Attestations on one page of a run's.
pub const ATTESTATIONS_PER_PAGE: u64 = 50;

/// One page of a run's attestations, newest first, and how many there are in all.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttestationPage {
    /// Attestations of the run in all.
    pub total: u64,
    /// This page, from 1.
    pub page: u64,
    /// Pages in all (1 when there is none).
    pub pages: u64,
    pub per_page: u64,
    /// This page's attestations, newest first.
    pub items: Vec<Attestation>,
}

impl AttestationPage {
    /// No attestations.
    pub fn empty() -> AttestationPage {
        AttestationPage { total: 0, page: 1, pages: 1, per_page: ATTESTATIONS_PER_PAGE, items: Vec::new() }
    }
}

/// A community attestation of a run. It never changes the run's evidence level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Attestation {
    pub id: String,
    pub run_id: String,
    pub kind: AttestationKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed_ns: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence_url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The key's label: who vouches for it.
    pub attester: String,
    /// Which key wrote it (an id, not the secret); the quota counts by it.
    pub key_id: String,
    pub created_at: String,
}

/// What a caller gives to file an attestation; the rest comes from the key and the clock.
#[derive(Debug, Clone, PartialEq)]
pub struct NewAttestation {
    pub run_id: String,
    pub kind: AttestationKind,
    pub observed_ns: Option<u64>,
    pub evidence_url: Option<String>,
    pub note: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SubmittedDocument {
    pub kind: String,
    pub name: String,
    pub title: Option<String>,
    pub digest: String,
    pub manifest: Value,
    /// The project an ImplementationRevision belongs to (the bundle's `projectSlug`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_slug: Option<String>,
}

/// A submitted bundle: Reported and unpublished until an admin publishes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Submission {
    pub id: String,
    /// Always `reported`: a submission is the submitter's claim until a rerun.
    pub trust: String,
    pub title: String,
    pub documents: Vec<SubmittedDocument>,
    pub submitter: String,
    /// Which key wrote it (an id, not the secret); the quota counts by it.
    pub key_id: String,
    pub created_at: String,
    #[serde(default)]
    pub published_at: Option<String>,
}

/// What migrating a JSON-lines state file brought into the catalog.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WebLogImport {
    pub keys: u64,
    pub revocations: u64,
    pub attestations: u64,
    pub submissions: u64,
    pub publications: u64,
}

/// sha256 hex of a presented secret: what the catalog keeps and looks keys up by.
pub fn hash_key(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// On PostgreSQL, state writes take this advisory lock (not the importers' one).
const PG_STATE_LOCK: i64 = 0x6b69_7374_6174_6521; // "kistate!"

pub(crate) async fn begin_state_write(pool: &Pool) -> Result<Session> {
    match pool {
        Pool::Sqlite(_) => Session::begin(pool, true).await,
        Pool::Postgres(_) => {
            let mut session = Session::begin(pool, false).await?;
            session
                .execute("SELECT pg_advisory_xact_lock($1)", &[SqlValue::Int(Some(PG_STATE_LOCK))])
                .await
                .context(|| "cannot take the state writer lock".into())?;
            Ok(session)
        }
    }
}

/// A column as text in a SELECT list (PostgreSQL returns uuid and json as text on request).
fn read(backend: Backend, column: &str, kind: Kind) -> String {
    match (backend, kind) {
        (Backend::Postgres, Kind::Uuid | Kind::Json) => format!("{column}::text"),
        _ => column.to_string(),
    }
}

fn text(value: impl Into<String>) -> SqlValue {
    SqlValue::Text(Some(value.into()))
}

fn optional_text(value: Option<&str>) -> SqlValue {
    SqlValue::Text(value.map(str::to_string))
}

/// `INSERT INTO table (columns…) VALUES (placeholders…)`, placeholders typed by `kinds`.
fn insert_sql(backend: Backend, table: &str, columns: &[(&str, Kind)], ignore_existing: bool) -> String {
    let names: Vec<&str> = columns.iter().map(|(name, _)| *name).collect();
    let values: Vec<String> =
        columns.iter().enumerate().map(|(index, (_, kind))| placeholder(backend, index + 1, *kind)).collect();
    let conflict = if ignore_existing { " ON CONFLICT (id) DO NOTHING" } else { "" };
    format!("INSERT INTO {table} ({}) VALUES ({}){conflict}", names.join(", "), values.join(", "))
}

/// Values of a row read as text columns.
struct Cells(std::vec::IntoIter<SqlValue>);

impl Cells {
    fn new(row: Vec<SqlValue>) -> Cells {
        Cells(row.into_iter())
    }

    fn text(&mut self) -> Option<String> {
        match self.0.next() {
            Some(SqlValue::Text(text)) => text,
            _ => None,
        }
    }

    fn int(&mut self) -> Option<i64> {
        match self.0.next() {
            Some(SqlValue::Int(number)) => number,
            _ => None,
        }
    }

    fn json<T: serde::de::DeserializeOwned>(&mut self, what: &str) -> Result<T> {
        let raw = self.text().unwrap_or_default();
        serde_json::from_str(&raw).map_err(|error| CatalogError::Corrupt(format!("{what} holds invalid JSON: {error}")))
    }
}

const KEY_COLUMNS: [(&str, Kind); 8] = [
    ("id", Kind::Uuid),
    ("prefix", Kind::Text),
    ("key_hash", Kind::Text),
    ("label", Kind::Text),
    ("scopes", Kind::Json),
    ("daily_quota", Kind::Count),
    ("created_at", Kind::Timestamp),
    ("revoked_at", Kind::Timestamp),
];

const ATTESTATION_COLUMNS: [(&str, Kind); 9] = [
    ("id", Kind::Uuid),
    ("run_id", Kind::Uuid),
    ("kind", Kind::Text),
    ("observed_ns", Kind::Count),
    ("evidence_url", Kind::Text),
    ("note", Kind::Text),
    ("attester", Kind::Text),
    ("key_id", Kind::Uuid),
    ("created_at", Kind::Timestamp),
];

const SUBMISSION_COLUMNS: [(&str, Kind); 8] = [
    ("id", Kind::Uuid),
    ("trust", Kind::Text),
    ("title", Kind::Text),
    ("documents", Kind::Json),
    ("submitter", Kind::Text),
    ("key_id", Kind::Uuid),
    ("created_at", Kind::Timestamp),
    ("published_at", Kind::Timestamp),
];

/// How each column of a state table is read back (by its kind, as every catalog table).
fn storages_of(columns: &[(&str, Kind)]) -> Vec<Storage> {
    crate::store::storages(columns.iter().map(|(_, kind)| *kind))
}

fn select(backend: Backend, table: &str, columns: &[(&str, Kind)], filter: &str) -> String {
    let list: Vec<String> = columns.iter().map(|(name, kind)| read(backend, name, *kind)).collect();
    format!("SELECT {} FROM {table}{filter} ORDER BY seq", list.join(", "))
}

fn key_from(row: Vec<SqlValue>) -> Result<ApiKey> {
    let mut cells = Cells::new(row);
    let id = cells.text().unwrap_or_default();
    let prefix = cells.text().unwrap_or_default();
    let hash = cells.text().unwrap_or_default();
    let label = cells.text().unwrap_or_default();
    let scopes: Vec<Scope> = cells.json("api_keys.scopes")?;
    let daily_quota = cells.int().unwrap_or(0).clamp(0, u32::MAX as i64) as u32;
    let created_at = cells.text().unwrap_or_default();
    let revoked = cells.text().is_some();
    Ok(ApiKey { id, prefix, hash, label, scopes, daily_quota, created_at, revoked })
}

fn attestation_from(row: Vec<SqlValue>) -> Result<Attestation> {
    let mut cells = Cells::new(row);
    let id = cells.text().unwrap_or_default();
    let run_id = cells.text().unwrap_or_default();
    let kind_text = cells.text().unwrap_or_default();
    let kind = AttestationKind::parse(&kind_text)
        .ok_or_else(|| CatalogError::Corrupt(format!("attestation {id} has the unknown kind {kind_text:?}")))?;
    Ok(Attestation {
        id,
        run_id,
        kind,
        observed_ns: cells.int().map(|ns| ns.max(0) as u64),
        evidence_url: cells.text(),
        note: cells.text(),
        attester: cells.text().unwrap_or_default(),
        key_id: cells.text().unwrap_or_default(),
        created_at: cells.text().unwrap_or_default(),
    })
}

fn submission_from(row: Vec<SqlValue>) -> Result<Submission> {
    let mut cells = Cells::new(row);
    Ok(Submission {
        id: cells.text().unwrap_or_default(),
        trust: cells.text().unwrap_or_default(),
        title: cells.text().unwrap_or_default(),
        documents: cells.json("submissions.documents")?,
        submitter: cells.text().unwrap_or_default(),
        key_id: cells.text().unwrap_or_default(),
        created_at: cells.text().unwrap_or_default(),
        published_at: cells.text(),
    })
}

fn key_values(key: &ApiKey) -> Result<Vec<SqlValue>> {
    let scopes = serde_json::to_string(&key.scopes).map_err(|error| CatalogError::Export(error.to_string()))?;
    Ok(vec![
        text(&key.id),
        text(&key.prefix),
        text(&key.hash),
        text(&key.label),
        text(scopes),
        SqlValue::Int(Some(key.daily_quota.into())),
        text(&key.created_at),
        SqlValue::Text(None),
    ])
}

fn attestation_values(attestation: &Attestation) -> Vec<SqlValue> {
    vec![
        text(&attestation.id),
        text(&attestation.run_id),
        text(attestation.kind.as_str()),
        SqlValue::Int(attestation.observed_ns.map(|ns| ns.min(i64::MAX as u64) as i64)),
        optional_text(attestation.evidence_url.as_deref()),
        optional_text(attestation.note.as_deref()),
        text(&attestation.attester),
        text(&attestation.key_id),
        text(&attestation.created_at),
    ]
}

fn submission_values(submission: &Submission) -> Result<Vec<SqlValue>> {
    let documents =
        serde_json::to_string(&submission.documents).map_err(|error| CatalogError::Export(error.to_string()))?;
    Ok(vec![
        text(&submission.id),
        text(&submission.trust),
        text(&submission.title),
        text(documents),
        text(&submission.submitter),
        text(&submission.key_id),
        text(&submission.created_at),
        optional_text(submission.published_at.as_deref()),
    ])
}

/// The key a presented secret stands for, if it is known and not revoked.
async fn active_key(session: &mut Session, presented: &str) -> Result<Option<ApiKey>> {
    let backend = session.backend();
    let sql = select(
        backend,
        "api_keys",
        &KEY_COLUMNS,
        &format!(" WHERE key_hash = {} AND revoked_at IS NULL", placeholder(backend, 1, Kind::Text)),
    );
    let rows = session
        .fetch_all(&sql, &[text(hash_key(presented))], &storages_of(&KEY_COLUMNS))
        .await
        .context(|| "cannot read the API keys".into())?;
    rows.into_iter().next().map(key_from).transpose()
}

/// Writes `key` made today (UTC), attestations and submissions together.
async fn writes_today(session: &mut Session, key_id: &str) -> Result<u64> {
    let backend = session.backend();
    let day_start = ki_model::utc::today_start();
    let (id, at) = (placeholder(backend, 1, Kind::Uuid), placeholder(backend, 2, Kind::Text));
    let sql = format!(
        "SELECT (SELECT COUNT(*) FROM attestations WHERE key_id = {id} AND created_at >= {at}) \
         + (SELECT COUNT(*) FROM submissions WHERE key_id = {id} AND created_at >= {at})"
    );
    let rows = session
        .fetch_all(&sql, &[text(key_id), text(day_start)], &[Storage::Int])
        .await
        .context(|| "cannot count the key's writes".into())?;
    Ok(match rows.first().and_then(|row| row.first()) {
        Some(SqlValue::Int(Some(count))) => (*count).max(0) as u64,
        _ => 0,
    })
}

/// Checks a presented secret for a scope and its remaining quota.
/// Stores a submission in `session` with a key of the submit scope (checked, its quota
/// counted): the caller commits, with whatever else belongs to the submission.
pub(crate) async fn insert_submission(
    session: &mut Session,
    presented: Option<&str>,
    title: String,
    documents: Vec<SubmittedDocument>,
) -> Result<Submission> {
    let key = check_key(session, presented, Scope::Submit).await?;
    let submission = Submission {
        id: crate::new_row_id().to_string(),
        trust: "reported".into(),
        title,
        documents,
        submitter: key.label,
        key_id: key.id,
        created_at: ki_model::utc::now_millis(),
        published_at: None,
    };
    let sql = insert_sql(session.backend(), "submissions", &SUBMISSION_COLUMNS, false);
    session.execute(&sql, &submission_values(&submission)?).await.context(|| "cannot store the submission".into())?;
    Ok(submission)
}

async fn check_key(session: &mut Session, presented: Option<&str>, scope: Scope) -> Result<ApiKey> {
    let refuse = |refusal| Err(CatalogError::KeyRefused(refusal));
    let Some(presented) = presented else { return refuse(KeyRefusal::NoKey) };
    if !presented.starts_with("ki_") {
        return refuse(KeyRefusal::UnknownKey);
    }
    let Some(key) = active_key(session, presented).await? else { return refuse(KeyRefusal::UnknownKey) };
    if !key.scopes.contains(&scope) {
        return refuse(KeyRefusal::MissingScope(scope));
    }
    if writes_today(session, &key.id).await? >= u64::from(key.daily_quota) {
        return refuse(KeyRefusal::QuotaExceeded);
    }
    Ok(key)
}

impl Catalog {
    /// Creates a key; returns it with the secret, which is shown only this once (the
    /// catalog keeps its sha256).
    pub async fn create_api_key(&self, label: &str, scopes: &[Scope], daily_quota: u32) -> Result<(ApiKey, String)> {
        let label = label.trim();
        if label.is_empty() || label.chars().count() > 100 {
            return Err(CatalogError::Refused(Refusal::Empty("key label (1 to 100 characters)")));
        }
        // 244 random bits from two v4 uuids (the OS random source behind uuid).
        let secret = format!("ki_{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
        let mut unique = Vec::new();
        for scope in scopes {
            if !unique.contains(scope) {
                unique.push(*scope);
            }
        }
        let key = ApiKey {
            id: crate::new_row_id().to_string(),
            prefix: secret[..11].to_string(),
            hash: hash_key(&secret),
            label: label.to_string(),
            scopes: unique,
            daily_quota,
            created_at: ki_model::utc::now_millis(),
            revoked: false,
        };
        let mut session = begin_state_write(&self.pool).await?;
        let sql = insert_sql(session.backend(), "api_keys", &KEY_COLUMNS, false);
        session.execute(&sql, &key_values(&key)?).await.context(|| "cannot store the API key".into())?;
        session.commit().await.context(|| "cannot commit the API key".into())?;
        Ok((key, secret))
    }

    /// Revokes a key by id or prefix. Every server on this catalog refuses it from its
    /// next request on. Revoking a revoked key changes nothing.
    pub async fn revoke_api_key(&self, id_or_prefix: &str) -> Result<ApiKey> {
        let given = id_or_prefix.trim();
        let mut session = begin_state_write(&self.pool).await?;
        let backend = session.backend();
        let rows = session
            .fetch_all(&select(backend, "api_keys", &KEY_COLUMNS, ""), &[], &storages_of(&KEY_COLUMNS))
            .await
            .context(|| "cannot read the API keys".into())?;
        let mut found = None;
        for row in rows {
            let key = key_from(row)?;
            if key.id == given || key.prefix == given {
                found = Some(key);
                break;
            }
        }
        let Some(mut key) = found else {
            return Err(CatalogError::Refused(Refusal::UnknownApiKey(given.to_string())));
        };
        let sql = format!(
            "UPDATE api_keys SET revoked_at = {} WHERE id = {} AND revoked_at IS NULL",
            placeholder(backend, 1, Kind::Text),
            placeholder(backend, 2, Kind::Uuid)
        );
        session
            .execute(&sql, &[text(ki_model::utc::now_millis()), text(&key.id)])
            .await
            .context(|| "cannot revoke the API key".into())?;
        session.commit().await.context(|| "cannot commit the revocation".into())?;
        key.revoked = true;
        Ok(key)
    }

    /// Every key, oldest first (never a secret: none is stored).
    pub async fn api_keys(&self) -> Result<Vec<ApiKey>> {
        let mut session = Session::begin(&self.pool, false).await?;
        let sql = select(session.backend(), "api_keys", &KEY_COLUMNS, "");
        let rows = session
            .fetch_all(&sql, &[], &storages_of(&KEY_COLUMNS))
            .await
            .context(|| "cannot read the API keys".into())?;
        session.rollback().await.context(|| "cannot end a read transaction".into())?;
        rows.into_iter().map(key_from).collect()
    }

    /// Checks a presented key for a scope and its quota, as the writes below do again in
    /// their own transaction; lets a caller refuse a request before reading its body.
    /// A refusal is [`CatalogError::KeyRefused`].
    pub async fn authorize(&self, presented: Option<&str>, scope: Scope) -> Result<ApiKey> {
        let mut session = Session::begin(&self.pool, false).await?;
        let key = check_key(&mut session, presented, scope).await;
        session.rollback().await.context(|| "cannot end a read transaction".into())?;
        key
    }

    /// Files an attestation with a key of the attest scope, in one transaction that
    /// checks the key and its quota. Its evidence URL is stored in normal form, or refused
    /// ([`crate::urls::evidence_url`]): a run's page links it.
    pub async fn add_attestation(&self, presented: Option<&str>, new: NewAttestation) -> Result<Attestation> {
        let mut session = begin_state_write(&self.pool).await?;
        let key = check_key(&mut session, presented, Scope::Attest).await?;
        let evidence_url = match new.evidence_url {
            Some(url) => Some(crate::urls::evidence_url(&url).map_err(|reason| {
                CatalogError::Refused(crate::Refusal::EvidenceUrl { url: url.chars().take(200).collect(), reason })
            })?),
            None => None,
        };
        let attestation = Attestation {
            id: crate::new_row_id().to_string(),
            run_id: new.run_id,
            kind: new.kind,
            observed_ns: new.observed_ns,
            evidence_url,
            note: new.note,
            attester: key.label,
            key_id: key.id,
            created_at: ki_model::utc::now_millis(),
        };
        let sql = insert_sql(session.backend(), "attestations", &ATTESTATION_COLUMNS, false);
        session
            .execute(&sql, &attestation_values(&attestation))
            .await
            .context(|| "cannot store the attestation".into())?;
        session.commit().await.context(|| "cannot commit the attestation".into())?;
        Ok(attestation)
    }

    /// The attestations of a run, oldest first.
    pub async fn attestations_of_run(&self, run_id: &str) -> Result<Vec<Attestation>> {
        if uuid::Uuid::try_parse(run_id).is_err() {
            return Ok(Vec::new());
        }
        // One statement, no transaction: it is on every run page's path.
        let backend = self.pool.backend();
        let filter = format!(" WHERE run_id = {}", placeholder(backend, 1, Kind::Uuid));
        let rows = crate::store::fetch_all(
            &self.pool,
            &select(backend, "attestations", &ATTESTATION_COLUMNS, &filter),
            &[text(run_id)],
            &storages_of(&ATTESTATION_COLUMNS),
        )
        .await
        .context(|| "cannot read the attestations".into())?;
        rows.into_iter().map(attestation_from).collect()
    }

    /// One page of a run's attestations, newest first ([`ATTESTATIONS_PER_PAGE`] a page;
    /// `page` from 1, past the last one the last), with how many the run has in all: a run
    /// page stays small however many attestations its run collects.
    pub async fn attestation_page(&self, run_id: &str, page: u64) -> Result<AttestationPage> {
        if uuid::Uuid::try_parse(run_id).is_err() {
            return Ok(AttestationPage::empty());
        }
        let backend = self.pool.backend();
        let id = placeholder(backend, 1, Kind::Uuid);
        let counted = crate::store::fetch_all(
            &self.pool,
            &format!("SELECT COUNT(*) FROM attestations WHERE run_id = {id}"),
            &[text(run_id)],
            &[Storage::Int],
        )
        .await
        .context(|| "cannot count the attestations".into())?;
        let total = match counted.first().and_then(|row| row.first()) {
            Some(SqlValue::Int(Some(count))) => (*count).max(0) as u64,
            _ => 0,
        };
        let pages = total.div_ceil(ATTESTATIONS_PER_PAGE).max(1);
        let page = page.clamp(1, pages);
        let list: Vec<String> = ATTESTATION_COLUMNS.iter().map(|(name, kind)| read(backend, name, *kind)).collect();
        let sql = format!(
            "SELECT {} FROM attestations WHERE run_id = {id} ORDER BY seq DESC LIMIT {} OFFSET {}",
            list.join(", "),
            ATTESTATIONS_PER_PAGE,
            (page - 1) * ATTESTATIONS_PER_PAGE
        );
        let rows = crate::store::fetch_all(&self.pool, &sql, &[text(run_id)], &storages_of(&ATTESTATION_COLUMNS))
            .await
            .context(|| "cannot read the attestations".into())?;
        let items = rows.into_iter().map(attestation_from).collect::<Result<Vec<_>>>()?;
        Ok(AttestationPage { total, page, pages, per_page: ATTESTATIONS_PER_PAGE, items })
    }

    /// Stores a validated bundle with a key of the submit scope (Reported, unpublished), in
    /// one transaction that checks the key and its quota.
    pub async fn add_submission(
        &self,
        presented: Option<&str>,
        title: String,
        documents: Vec<SubmittedDocument>,
    ) -> Result<Submission> {
        let mut session = begin_state_write(&self.pool).await?;
        let submission = insert_submission(&mut session, presented, title, documents).await?;
        session.commit().await.context(|| "cannot commit the submission".into())?;
        Ok(submission)
    }

    /// A submission by id.
    pub async fn submission(&self, id: &str) -> Result<Option<Submission>> {
        if uuid::Uuid::try_parse(id).is_err() {
            return Ok(None);
        }
        let mut session = Session::begin(&self.pool, false).await?;
        let backend = session.backend();
        let filter = format!(" WHERE id = {}", placeholder(backend, 1, Kind::Uuid));
        let rows = session
            .fetch_all(
                &select(backend, "submissions", &SUBMISSION_COLUMNS, &filter),
                &[text(id)],
                &storages_of(&SUBMISSION_COLUMNS),
            )
            .await
            .context(|| "cannot read the submissions".into())?;
        session.rollback().await.context(|| "cannot end a read transaction".into())?;
        rows.into_iter().next().map(submission_from).transpose()
    }

    /// Marks a submission published (now, UTC) once its rows are in the catalog; again,
    /// it keeps the first time. Returns the submission as it now stands.
    pub async fn mark_submission_published(&self, id: &str) -> Result<Submission> {
        let unknown = || CatalogError::Refused(Refusal::UnknownSubmission(id.to_string()));
        if uuid::Uuid::try_parse(id).is_err() {
            return Err(unknown());
        }
        let mut session = begin_state_write(&self.pool).await?;
        let backend = session.backend();
        let sql = format!(
            "UPDATE submissions SET published_at = {} WHERE id = {} AND published_at IS NULL",
            placeholder(backend, 1, Kind::Text),
            placeholder(backend, 2, Kind::Uuid)
        );
        session
            .execute(&sql, &[text(ki_model::utc::now_millis()), text(id)])
            .await
            .context(|| "cannot mark the submission published".into())?;
        session.commit().await.context(|| "cannot commit the publication".into())?;
        self.submission(id).await?.ok_or_else(unknown)
    }

    /// Brings the web state an older `ki` kept in a JSON-lines file (`web-log.jsonl`) into
    /// the catalog, in one transaction; entries the catalog already holds (same id) are
    /// left as they are, so running it twice adds nothing. A line that cannot be read
    /// refuses the whole file, naming it and the line, with nothing written.
    pub async fn import_web_log(&self, path: &Path) -> Result<WebLogImport> {
        #[derive(Deserialize)]
        #[serde(tag = "entry", rename_all = "snake_case")]
        enum Entry {
            Key(ApiKey),
            Revoke { key_id: String },
            Attestation(Attestation),
            Submission(Submission),
            Publish { submission_id: String, at: String },
        }
        let io_error = |source| CatalogError::Io { path: path.display().to_string(), source };
        let content = std::fs::read_to_string(path).map_err(io_error)?;
        let mut entries = Vec::new();
        for (index, line) in content.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let entry: Entry = serde_json::from_str(line).map_err(|error| {
                CatalogError::Snapshot(format!("{}:{}: unreadable state entry: {error}", path.display(), index + 1))
            })?;
            entries.push(entry);
        }
        let mut session = begin_state_write(&self.pool).await?;
        let backend = session.backend();
        let mut counts = WebLogImport::default();
        let now = ki_model::utc::now_millis();
        for entry in entries {
            let (sql, params, count): (String, Vec<SqlValue>, &mut u64) = match entry {
                Entry::Key(mut key) => {
                    let revoked = key.revoked;
                    key.revoked = false;
                    let mut params = key_values(&key)?;
                    if revoked {
                        params[7] = text(&now);
                    }
                    (insert_sql(backend, "api_keys", &KEY_COLUMNS, true), params, &mut counts.keys)
                }
                Entry::Revoke { key_id } => (
                    format!(
                        "UPDATE api_keys SET revoked_at = {} WHERE id = {} AND revoked_at IS NULL",
                        placeholder(backend, 1, Kind::Text),
                        placeholder(backend, 2, Kind::Uuid)
                    ),
                    vec![text(&now), text(key_id)],
                    &mut counts.revocations,
                ),
                Entry::Attestation(attestation) => (
                    insert_sql(backend, "attestations", &ATTESTATION_COLUMNS, true),
                    attestation_values(&attestation),
                    &mut counts.attestations,
                ),
                Entry::Submission(submission) => (
                    insert_sql(backend, "submissions", &SUBMISSION_COLUMNS, true),
                    submission_values(&submission)?,
                    &mut counts.submissions,
                ),
                Entry::Publish { submission_id, at } => (
                    format!(
                        "UPDATE submissions SET published_at = {} WHERE id = {} AND published_at IS NULL",
                        placeholder(backend, 1, Kind::Text),
                        placeholder(backend, 2, Kind::Uuid)
                    ),
                    vec![text(at), text(submission_id)],
                    &mut counts.publications,
                ),
            };
            let changed = session
                .execute(&sql, &params)
                .await
                .context(|| format!("cannot migrate {} into the catalog", path.display()))?;
            *count += changed;
        }
        session.commit().await.context(|| "cannot commit the migrated state".into())?;
        Ok(counts)
    }
}
