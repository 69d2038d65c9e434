//! The web's own writes: API keys, attestations and submissions. They live in an
//! append-only JSON-lines log in a state directory beside the catalog (the catalog's
//! export tables hold none of them). Every entry is one line, written and flushed
//! with the file opened in append mode, so a crash loses at most the line being
//! written and `ki admin` can append while `ki serve` runs: the server re-reads the
//! log when its length changes.

use std::collections::HashMap;
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::format;

pub const LOG_FILE: &str = "web-log.jsonl";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scope {
    Attest,
    Submit,
}

impl Scope {
    pub fn parse(text: &str) -> Option<Scope> {
        match text {
            "attest" => Some(Scope::Attest),
            "submit" => Some(Scope::Submit),
            _ => None,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiKey {
    pub id: String,
    /// The first characters of the key, shown so an admin can tell keys apart.
    pub prefix: String,
    /// sha256 hex of the whole key; the key itself is never stored.
    pub hash: String,
    pub label: String,
    pub scopes: Vec<Scope>,
    pub daily_quota: u32,
    pub created_at: String,
    #[serde(default)]
    pub revoked: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
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

#[derive(Debug, Clone, Serialize, Deserialize)]
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

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubmittedDocument {
    pub kind: String,
    pub name: String,
    pub title: Option<String>,
    pub digest: String,
    pub manifest: serde_json::Value,
    /// The project an ImplementationRevision belongs to (the bundle's `projectSlug`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project_slug: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
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

/// One line of the log.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "entry", rename_all = "snake_case")]
enum LogEntry {
    Key(ApiKey),
    Revoke { key_id: String },
    Attestation(Attestation),
    Submission(Submission),
    Publish { submission_id: String, at: String },
}

#[derive(Debug, Default)]
struct State {
    keys: Vec<ApiKey>,
    attestations: Vec<Attestation>,
    submissions: Vec<Submission>,
    /// (key id, UTC day) → writes that day, for the quota.
    writes_per_day: HashMap<(String, i64), u32>,
    /// Bytes of the log already applied; a longer file means another process appended.
    applied_len: u64,
}

impl State {
    fn apply(&mut self, entry: LogEntry) {
        match entry {
            LogEntry::Key(key) => self.keys.push(key),
            LogEntry::Revoke { key_id } => {
                for key in self.keys.iter_mut().filter(|k| k.id == key_id) {
                    key.revoked = true;
                }
            }
            LogEntry::Attestation(a) => {
                self.count_write(&a.key_id, &a.created_at);
                self.attestations.push(a);
            }
            LogEntry::Submission(s) => {
                self.count_write(&s.key_id, &s.created_at);
                self.submissions.push(s);
            }
            LogEntry::Publish { submission_id, at } => {
                for s in self.submissions.iter_mut().filter(|s| s.id == submission_id) {
                    s.published_at = Some(at.clone());
                }
            }
        }
    }

    fn count_write(&mut self, key_id: &str, at: &str) {
        if let Some(day) = format::day_of(at) {
            *self.writes_per_day.entry((key_id.to_string(), day)).or_default() += 1;
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("{}:{line}: unreadable log entry: {message}", path.display())]
    Corrupt { path: PathBuf, line: usize, message: String },
    #[error("no API key has the id or prefix {0:?}")]
    UnknownKey(String),
    #[error("no submission has the id {0:?}")]
    UnknownSubmission(String),
}

/// Why a write was refused before it was stored.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    NoKey,
    UnknownKey,
    MissingScope(Scope),
    QuotaExceeded,
}

#[derive(Debug)]
pub struct Store {
    log_path: PathBuf,
    state: Mutex<State>,
}

impl Store {
    /// Opens (creating when needed) the state directory and replays its log.
    pub fn open(dir: &Path) -> Result<Store, StoreError> {
        fs::create_dir_all(dir).map_err(|source| StoreError::Io { path: dir.to_path_buf(), source })?;
        let store = Store { log_path: dir.join(LOG_FILE), state: Mutex::new(State::default()) };
        store.refresh()?;
        Ok(store)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave a half-applied entry behind
        // (entries are applied whole), so a poisoned lock is still consistent.
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Applies entries another process appended since the last read.
    pub fn refresh(&self) -> Result<(), StoreError> {
        let io_error = |source| StoreError::Io { path: self.log_path.clone(), source };
        let len = match fs::metadata(&self.log_path) {
            Ok(meta) => meta.len(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => 0,
            Err(e) => return Err(io_error(e)),
        };
        let mut state = self.lock();
        if len == state.applied_len {
            return Ok(());
        }
        // Re-read from the start: the log is small (one line per key or write), and a
        // replay from scratch cannot double-count.
        let mut fresh = State::default();
        let file = File::open(&self.log_path).map_err(io_error)?;
        let mut read = 0u64;
        for (index, line) in BufReader::new(file).lines().enumerate() {
            let line = line.map_err(io_error)?;
            read += line.len() as u64 + 1;
            if line.trim().is_empty() {
                continue;
            }
            if read > len && !line.ends_with('}') {
                // A line still being written by another process; take it next time.
                read -= line.len() as u64 + 1;
                break;
            }
            let entry: LogEntry = serde_json::from_str(&line).map_err(|e| StoreError::Corrupt {
                path: self.log_path.clone(),
                line: index + 1,
                message: e.to_string(),
            })?;
            fresh.apply(entry);
        }
        fresh.applied_len = read.min(len);
        *state = fresh;
        Ok(())
    }

    fn append(&self, state: &mut State, entry: LogEntry) -> Result<(), StoreError> {
        let io_error = |source| StoreError::Io { path: self.log_path.clone(), source };
        let mut line = serde_json::to_string(&entry).map_err(|e| io_error(std::io::Error::other(e)))?;
        line.push('\n');
        let mut file = OpenOptions::new().create(true).append(true).open(&self.log_path).map_err(io_error)?;
        file.write_all(line.as_bytes()).map_err(io_error)?;
        file.sync_data().map_err(io_error)?;
        state.applied_len += line.len() as u64;
        state.apply(entry);
        Ok(())
    }

    /// Creates a key and returns it with the secret, which is shown only this once.
    pub fn create_key(
        &self,
        label: &str,
        scopes: Vec<Scope>,
        daily_quota: u32,
    ) -> Result<(ApiKey, String), StoreError> {
        self.refresh()?;
        // 244 random bits from two v4 uuids (the OS random source behind uuid).
        let secret = format!("ki_{}{}", uuid::Uuid::new_v4().simple(), uuid::Uuid::new_v4().simple());
        let key = ApiKey {
            id: uuid::Uuid::now_v7().to_string(),
            prefix: secret[..11].to_string(),
            hash: hash_key(&secret),
            label: label.to_string(),
            scopes,
            daily_quota,
            created_at: format::now_rfc3339(),
            revoked: false,
        };
        let mut state = self.lock();
        self.append(&mut state, LogEntry::Key(key.clone()))?;
        Ok((key, secret))
    }

    pub fn revoke_key(&self, id_or_prefix: &str) -> Result<ApiKey, StoreError> {
        self.refresh()?;
        let mut state = self.lock();
        let key = state
            .keys
            .iter()
            .find(|k| k.id == id_or_prefix || k.prefix == id_or_prefix)
            .cloned()
            .ok_or_else(|| StoreError::UnknownKey(id_or_prefix.to_string()))?;
        self.append(&mut state, LogEntry::Revoke { key_id: key.id.clone() })?;
        Ok(key)
    }

    pub fn keys(&self) -> Vec<ApiKey> {
        self.lock().keys.clone()
    }

    /// Checks a presented key for a scope and its quota; returns the key on success.
    pub fn authorize(&self, presented: Option<&str>, scope: Scope) -> Result<ApiKey, Refusal> {
        let presented = presented.ok_or(Refusal::NoKey)?;
        if !presented.starts_with("ki_") {
            return Err(Refusal::UnknownKey);
        }
        let hash = hash_key(presented);
        let find = |state: &State| state.keys.iter().find(|k| k.hash == hash && !k.revoked).cloned();
        // Bind first: the guard must be dropped before `refresh` locks again.
        let found = find(&self.lock());
        let key = match found {
            Some(key) => key,
            None => {
                // Perhaps `ki admin key create` ran since the last read.
                let _ = self.refresh();
                find(&self.lock()).ok_or(Refusal::UnknownKey)?
            }
        };
        if !key.scopes.contains(&scope) {
            return Err(Refusal::MissingScope(scope));
        }
        let used = self.lock().writes_per_day.get(&(key.id.clone(), format::today())).copied().unwrap_or(0);
        if used >= key.daily_quota {
            return Err(Refusal::QuotaExceeded);
        }
        Ok(key)
    }

    pub fn add_attestation(&self, attestation: Attestation) -> Result<(), StoreError> {
        let mut state = self.lock();
        self.append(&mut state, LogEntry::Attestation(attestation))
    }

    pub fn add_submission(&self, submission: Submission) -> Result<(), StoreError> {
        let mut state = self.lock();
        self.append(&mut state, LogEntry::Submission(submission))
    }

    pub fn publish(&self, submission_id: &str) -> Result<Submission, StoreError> {
        self.refresh()?;
        let mut state = self.lock();
        if !state.submissions.iter().any(|s| s.id == submission_id) {
            return Err(StoreError::UnknownSubmission(submission_id.to_string()));
        }
        self.append(
            &mut state,
            LogEntry::Publish { submission_id: submission_id.to_string(), at: format::now_rfc3339() },
        )?;
        Ok(state.submissions.iter().find(|s| s.id == submission_id).cloned().expect("checked above"))
    }

    pub fn attestations_for(&self, run_id: &str) -> Vec<Attestation> {
        self.lock().attestations.iter().filter(|a| a.run_id == run_id).cloned().collect()
    }

    pub fn submission(&self, id: &str) -> Option<Submission> {
        self.lock().submissions.iter().find(|s| s.id == id).cloned()
    }

    pub fn submissions(&self) -> Vec<Submission> {
        self.lock().submissions.clone()
    }
}

pub fn hash_key(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// The state directory for a database URL: beside a SQLite file, or the working
/// directory for a server database.
pub fn default_state_dir(database_url: &str) -> PathBuf {
    match database_url.strip_prefix("sqlite://") {
        Some(path) if !path.is_empty() => PathBuf::from(format!("{path}.web")),
        _ => PathBuf::from("kernelindex-web"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_stored_hashed_and_enforce_scope_and_quota() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (key, secret) = store.create_key("tester", vec![Scope::Attest], 1).unwrap();
        let log = fs::read_to_string(dir.path().join(LOG_FILE)).unwrap();
        assert!(!log.contains(&secret), "the secret must never be written");
        assert!(log.contains(&key.hash));

        assert_eq!(store.authorize(None, Scope::Attest).unwrap_err(), Refusal::NoKey);
        assert_eq!(store.authorize(Some("ki_wrong"), Scope::Attest).unwrap_err(), Refusal::UnknownKey);
        assert_eq!(store.authorize(Some(&secret), Scope::Submit).unwrap_err(), Refusal::MissingScope(Scope::Submit));
        let authorized = store.authorize(Some(&secret), Scope::Attest).unwrap();
        store
            .add_attestation(Attestation {
                id: "a1".into(),
                run_id: "r1".into(),
                kind: AttestationKind::Reproduced,
                observed_ns: Some(5),
                evidence_url: None,
                note: None,
                attester: authorized.label.clone(),
                key_id: authorized.id.clone(),
                created_at: format::now_rfc3339(),
            })
            .unwrap();
        assert_eq!(store.authorize(Some(&secret), Scope::Attest).unwrap_err(), Refusal::QuotaExceeded);

        // A second process (here: a second handle) sees the same state from the log.
        let reopened = Store::open(dir.path()).unwrap();
        assert_eq!(reopened.attestations_for("r1").len(), 1);
        assert_eq!(reopened.authorize(Some(&secret), Scope::Attest).unwrap_err(), Refusal::QuotaExceeded);
        reopened.revoke_key(&key.prefix).unwrap();
        store.refresh().unwrap();
        assert_eq!(store.authorize(Some(&secret), Scope::Attest).unwrap_err(), Refusal::UnknownKey);
    }
}
