//! `ki admin`: API keys, publication of submissions into the catalog, and corrections of
//! runs (retract, supersede). Keys and submissions are catalog rows, so every running
//! `ki serve` on the catalog sees a key (or its revocation) on its next request; published
//! and corrected runs within `--reload-every` seconds.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use ki_catalog::{Catalog, CorrectionReport, ImportOptions, Scope};
use ki_sources::submission::SubmittedManifest;

use super::database::{DatabaseArgs, block_on, migrate_state_file};
use crate::term::{errln, outln};

#[derive(Args)]
pub struct StateArgs {
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// The state directory of an older ki (PATH.web beside a SQLite file by default): its
    /// web-log.jsonl is migrated into the catalog once, then renamed.
    #[arg(long)]
    pub state: Option<PathBuf>,
}

impl StateArgs {
    /// Opens the catalog, migrating an older state file first; runs `work` on it.
    fn with_catalog<T, F, Fut>(&self, work: F) -> anyhow::Result<T>
    where
        F: FnOnce(Catalog) -> Fut,
        Fut: Future<Output = anyhow::Result<T>>,
    {
        let legacy = self.state.clone().unwrap_or_else(|| self.database.legacy_state_dir());
        block_on(async {
            let catalog = self.database.open().await?;
            migrate_state_file(&catalog, &legacy).await?;
            let result = work(catalog.clone()).await;
            catalog.close().await;
            result
        })?
    }
}

#[derive(Args)]
pub struct CorrectionArgs {
    /// Why (shown on the run's page and kept in the audit trail).
    #[arg(long)]
    pub reason: String,
    /// Who makes the correction (default: the OS user, from $USER or $LOGNAME).
    #[arg(long)]
    pub actor: Option<String>,
    #[command(flatten)]
    pub database: DatabaseArgs,
}

impl CorrectionArgs {
    fn actor(&self) -> anyhow::Result<String> {
        if let Some(actor) = &self.actor {
            return Ok(actor.clone());
        }
        ["USER", "LOGNAME"]
            .iter()
            .find_map(|name| std::env::var(name).ok().filter(|value| !value.trim().is_empty()))
            .ok_or_else(|| anyhow::anyhow!("who is correcting? give --actor NAME (neither $USER nor $LOGNAME is set)"))
    }
}

#[derive(Subcommand)]
pub enum AdminCommand {
    /// Manage API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Publish a submission: write its manifests into the catalog as published rows
    /// (evidence level Reported). Publishing again inserts nothing.
    Publish {
        submission_id: String,
        #[command(flatten)]
        state: StateArgs,
    },
    /// Retract a benchmark run: it stays in the catalog, unranked, with the reason shown.
    Retract {
        /// The run's id or run digest.
        run: String,
        #[command(flatten)]
        correction: CorrectionArgs,
    },
    /// Mark a benchmark run as superseded by another published run of its comparison group.
    Supersede {
        /// The run replaced (id or run digest).
        old: String,
        /// The published run that replaces it (id or run digest).
        #[arg(long)]
        by: String,
        #[command(flatten)]
        correction: CorrectionArgs,
    },
    /// List the corrections' audit trail, oldest first: who retracted or superseded which
    /// run, when and why.
    Corrections {
        #[command(flatten)]
        database: DatabaseArgs,
        /// One JSON array instead of lines.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
pub enum KeyCommand {
    /// Create a key; prints the secret once (only its hash is stored).
    Create {
        /// Who holds the key; shown on their attestations and submissions.
        #[arg(long)]
        label: String,
        /// attest and/or submit (repeat the flag for both).
        #[arg(long = "scope", required = true)]
        scopes: Vec<String>,
        /// Writes allowed per UTC day.
        #[arg(long, default_value_t = 100)]
        quota: u32,
        #[command(flatten)]
        state: StateArgs,
    },
    /// List keys (never their secrets).
    List {
        #[command(flatten)]
        state: StateArgs,
    },
    /// Revoke a key by id or prefix.
    Revoke {
        key: String,
        #[command(flatten)]
        state: StateArgs,
    },
}

pub fn run(command: AdminCommand) -> anyhow::Result<ExitCode> {
    match command {
        AdminCommand::Key(KeyCommand::Create { label, scopes, quota, state }) => {
            let mut parsed = Vec::new();
            for scope in &scopes {
                match Scope::parse(scope) {
                    Some(s) if !parsed.contains(&s) => parsed.push(s),
                    Some(_) => {}
                    None => bail!("unknown scope {scope:?}: use attest or submit"),
                }
            }
            if label.trim().is_empty() || label.len() > 100 {
                bail!("--label must be 1 to 100 characters");
            }
            let (key, secret) = state.with_catalog(|catalog| async move {
                Ok(catalog.create_api_key(label.trim(), &parsed, quota).await?)
            })?;
            errln!(
                "created key {} ({}) with scopes {} and a daily quota of {}",
                key.id,
                key.prefix,
                scopes.join(","),
                quota
            );
            errln!("the secret is shown only now:");
            outln!("{secret}");
        }
        AdminCommand::Key(KeyCommand::List { state }) => {
            for key in state.with_catalog(|catalog| async move { Ok(catalog.api_keys().await?) })? {
                let scopes: Vec<&str> = key.scopes.iter().map(|s| s.as_str()).collect();
                outln!(
                    "{}  {}  {:<20}  {:<14}  quota {}/day  {}{}",
                    key.id,
                    key.prefix,
                    key.label,
                    scopes.join(","),
                    key.daily_quota,
                    key.created_at,
                    if key.revoked { "  REVOKED" } else { "" }
                );
            }
        }
        AdminCommand::Key(KeyCommand::Revoke { key, state }) => {
            let revoked = state.with_catalog(|catalog| async move { Ok(catalog.revoke_api_key(&key).await?) })?;
            outln!("revoked {} ({})", revoked.id, revoked.prefix);
        }
        AdminCommand::Publish { submission_id, state } => publish(&submission_id, &state)?,
        AdminCommand::Retract { run, correction } => {
            let actor = correction.actor()?;
            let report = with_catalog(&correction.database, |catalog| async move {
                Ok(catalog.retract_run(&run, &correction.reason, &actor).await?)
            })?;
            let c = &report.correction;
            outln!("retracted run {} ({}) at {} by {}: {}", c.run_id, report.run_digest, c.at, c.actor, c.reason);
            print_record_change(&report);
        }
        AdminCommand::Supersede { old, by, correction } => {
            let actor = correction.actor()?;
            let report = with_catalog(&correction.database, |catalog| async move {
                Ok(catalog.supersede_run(&old, &by, &correction.reason, &actor).await?)
            })?;
            let c = &report.correction;
            outln!(
                "run {} ({}) is superseded by run {} at {} by {}: {}",
                c.run_id,
                report.run_digest,
                c.by_run_id.as_deref().unwrap_or("?"),
                c.at,
                c.actor,
                c.reason
            );
            print_record_change(&report);
        }
        AdminCommand::Corrections { database, json } => {
            let corrections = with_catalog(&database, |catalog| async move { Ok(catalog.corrections().await?) })?;
            if json {
                outln!("{}", serde_json::to_string_pretty(&corrections)?);
            } else if corrections.is_empty() {
                outln!("no corrections");
            } else {
                for c in &corrections {
                    let by = c.by_run_id.as_deref().map(|by| format!(" by {by}")).unwrap_or_default();
                    outln!("{}  {:<9}  {}{by}  ({}): {}", c.at, c.action.as_str(), c.run_id, c.actor, c.reason);
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Opens the catalog, runs `work` on it, closes it.
fn with_catalog<T, F, Fut>(database: &DatabaseArgs, work: F) -> anyhow::Result<T>
where
    F: FnOnce(Catalog) -> Fut,
    Fut: Future<Output = anyhow::Result<T>>,
{
    block_on(async {
        let catalog = database.open().await?;
        let result = work(catalog.clone()).await;
        catalog.close().await;
        result
    })?
}

fn print_record_change(report: &CorrectionReport) {
    outln!("comparison group {}", report.comparison_key);
    if report.events.is_empty() {
        outln!("record: unchanged (the run did not hold the record of its comparison group)");
    }
    for event in &report.events {
        print_record_event(
            &event.id,
            &event.run_id,
            event.previous_run_id.as_deref(),
            &format!("({}, at {})", event.cause, event.at),
        );
    }
}

/// One appended record event, as corrections and publications report it.
fn print_record_event(id: &str, holder: &str, previous: Option<&str>, detail: &str) {
    outln!("record event {id}: new record holder {holder}, previous holder {} {detail}", previous.unwrap_or("none"));
}

/// Writes a submission's manifests into the catalog, then marks it published (so a failed
/// write leaves it unpublished). Running it again inserts nothing.
fn publish(submission_id: &str, state: &StateArgs) -> anyhow::Result<()> {
    let (submission, report) = state.with_catalog(|catalog| async move {
        let submission = catalog
            .submission(submission_id)
            .await?
            .ok_or_else(|| anyhow::anyhow!("no submission has the id {submission_id:?}"))?;
        let manifests: Vec<SubmittedManifest> = submission
            .documents
            .iter()
            .map(|document| SubmittedManifest {
                manifest: document.manifest.clone(),
                project_slug: document.project_slug.clone(),
            })
            .collect();
        let origin = format!("submission {submission_id}");
        let rows = ki_sources::submission::plan(&catalog, &manifests, &ki_model::utc::now_millis())
            .await
            .with_context(|| format!("{origin} cannot be published, nothing written"))?;
        let options = ImportOptions { origin: Some(origin), append_record_events: true, ..ImportOptions::default() };
        let report = ki_sources::publish::publish_rows(&catalog, &rows, &options).await?;
        if submission.published_at.is_none() {
            catalog.mark_submission_published(submission_id).await?;
        }
        Ok((submission, report))
    })?;
    let newly = submission.published_at.is_none();
    outln!("submission {} ({}) → {}", submission.id, submission.title, state.database.shown());
    for counts in report.tables.iter().filter(|counts| counts.inserted + counts.unchanged > 0) {
        outln!("{:<24} {:>6} new {:>6} already present", counts.table, counts.inserted, counts.unchanged);
    }
    for event in &report.record_events {
        print_record_event(
            &event.id,
            &event.run_id,
            event.previous_run_id.as_deref(),
            &format!("in comparison group {}", event.comparison_key),
        );
    }
    match (newly, report.inserted()) {
        (true, _) => {
            outln!("published: {} rows written; evidence level stays {}", report.inserted(), submission.trust)
        }
        (false, 0) => outln!("already published: nothing new written"),
        (false, rows) => outln!("already published; {rows} rows that were missing written now"),
    }
    Ok(())
}
