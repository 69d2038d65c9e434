//! `ki admin`: API keys (in the web state log), publication of submissions into the
//! catalog, and corrections of runs (retract, supersede). A running `ki serve` picks up
//! each without a restart: the log on the next request, the catalog within
//! `--reload-every` seconds.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use ki_catalog::{Catalog, CorrectionReport, ImportOptions};
use ki_server::store::{Scope, Store, StoreError};
use ki_sources::submission::SubmittedManifest;

#[derive(Args)]
pub struct StateArgs {
    /// The catalog whose web state to use (its state lives beside a SQLite file).
    #[arg(long)]
    pub database: Option<String>,
    /// The state directory itself (overrides --database).
    #[arg(long)]
    pub state: Option<PathBuf>,
}

impl StateArgs {
    fn database_url(&self) -> String {
        self.database.clone().unwrap_or_else(ki_catalog::default_database_url)
    }

    fn open(&self) -> anyhow::Result<Store> {
        let dir = match &self.state {
            Some(dir) => dir.clone(),
            None => ki_server::store::default_state_dir(&self.database_url()),
        };
        Store::open(&dir).with_context(|| format!("cannot open the web state in {}", dir.display()))
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
    /// `sqlite://PATH` or `postgres://USER@HOST[:PORT]/DATABASE` (default: KI_DATABASE_URL or sqlite://kernelindex.db).
    #[arg(long)]
    pub database: Option<String>,
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
        /// `sqlite://PATH` or `postgres://USER@HOST[:PORT]/DATABASE` (default: KI_DATABASE_URL or sqlite://kernelindex.db).
        #[arg(long)]
        database: Option<String>,
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
            let (key, secret) = state.open()?.create_key(label.trim(), parsed, quota)?;
            eprintln!(
                "created key {} ({}) with scopes {} and a daily quota of {}",
                key.id,
                key.prefix,
                scopes.join(","),
                quota
            );
            eprintln!("the secret is shown only now:");
            println!("{secret}");
        }
        AdminCommand::Key(KeyCommand::List { state }) => {
            for key in state.open()?.keys() {
                let scopes: Vec<String> = key.scopes.iter().map(|s| format!("{s:?}").to_lowercase()).collect();
                println!(
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
            let revoked = state.open()?.revoke_key(&key)?;
            println!("revoked {} ({})", revoked.id, revoked.prefix);
        }
        AdminCommand::Publish { submission_id, state } => publish(&submission_id, &state)?,
        AdminCommand::Retract { run, correction } => {
            let actor = correction.actor()?;
            let report = with_catalog(&correction.database, |catalog| async move {
                Ok(catalog.retract_run(&run, &correction.reason, &actor).await?)
            })?;
            let c = &report.correction;
            println!("retracted run {} ({}) at {} by {}: {}", c.run_id, report.run_digest, c.at, c.actor, c.reason);
            print_record_change(&report);
        }
        AdminCommand::Supersede { old, by, correction } => {
            let actor = correction.actor()?;
            let report = with_catalog(&correction.database, |catalog| async move {
                Ok(catalog.supersede_run(&old, &by, &correction.reason, &actor).await?)
            })?;
            let c = &report.correction;
            println!(
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
                println!("{}", serde_json::to_string_pretty(&corrections)?);
            } else if corrections.is_empty() {
                println!("no corrections");
            } else {
                for c in &corrections {
                    let by = c.by_run_id.as_deref().map(|by| format!(" by {by}")).unwrap_or_default();
                    println!("{}  {:<9}  {}{by}  ({}): {}", c.at, c.action.as_str(), c.run_id, c.actor, c.reason);
                }
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Opens the catalog, runs `work` on it, closes it.
fn with_catalog<T, F, Fut>(database: &Option<String>, work: F) -> anyhow::Result<T>
where
    F: FnOnce(Catalog) -> Fut,
    Fut: Future<Output = anyhow::Result<T>>,
{
    let url = database.clone().unwrap_or_else(ki_catalog::default_database_url);
    let runtime = tokio::runtime::Runtime::new().context("cannot start the async runtime")?;
    runtime.block_on(async {
        let catalog = Catalog::open(&url).await.context("cannot open the catalog")?;
        let result = work(catalog.clone()).await;
        catalog.close().await;
        result
    })
}

fn print_record_change(report: &CorrectionReport) {
    println!("comparison group {}", report.comparison_key);
    if report.events.is_empty() {
        println!("record: unchanged (the run did not hold the record of its comparison group)");
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
    println!("record event {id}: new record holder {holder}, previous holder {} {detail}", previous.unwrap_or("none"));
}

/// Writes a submission's manifests into the catalog, then flags it published in the web
/// log (so a failed write leaves it unpublished). Running it again inserts nothing.
fn publish(submission_id: &str, state: &StateArgs) -> anyhow::Result<()> {
    let store = state.open()?;
    let submission =
        store.submission(submission_id).ok_or_else(|| StoreError::UnknownSubmission(submission_id.to_string()))?;
    let manifests: Vec<SubmittedManifest> = submission
        .documents
        .iter()
        .map(|document| SubmittedManifest {
            manifest: document.manifest.clone(),
            project_slug: document.project_slug.clone(),
        })
        .collect();
    let origin = format!("submission {submission_id}");
    let report = with_catalog(&state.database, |catalog| async move {
        let rows = ki_sources::submission::plan(&catalog, &manifests, &ki_model::utc::now_millis())
            .await
            .with_context(|| format!("{origin} cannot be published, nothing written"))?;
        let options = ImportOptions { origin: Some(origin), append_record_events: true, ..ImportOptions::default() };
        Ok(ki_sources::publish::publish_rows(&catalog, &rows, &options).await?)
    })?;
    let newly = submission.published_at.is_none();
    if newly {
        store.publish(submission_id)?;
    }
    println!("submission {} ({}) → {}", submission.id, submission.title, Catalog::redacted_url(&state.database_url()));
    for counts in report.tables.iter().filter(|counts| counts.inserted + counts.unchanged > 0) {
        println!("{:<24} {:>6} new {:>6} already present", counts.table, counts.inserted, counts.unchanged);
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
            println!("published: {} rows written; evidence level stays {}", report.inserted(), submission.trust)
        }
        (false, 0) => println!("already published: nothing new written"),
        (false, rows) => println!("already published; {rows} rows that were missing written now"),
    }
    Ok(())
}
