//! `ki admin`: API keys and publication of submissions, written to the web state log
//! that a running `ki serve` picks up without a restart.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, Subcommand};
use ki_server::store::{Scope, Store};

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
    fn open(&self) -> anyhow::Result<Store> {
        let dir = match &self.state {
            Some(dir) => dir.clone(),
            None => ki_server::store::default_state_dir(&self.database.clone().unwrap_or_else(ki_catalog::default_database_url)),
        };
        Store::open(&dir).with_context(|| format!("cannot open the web state in {}", dir.display()))
    }
}

#[derive(Subcommand)]
pub enum AdminCommand {
    /// Manage API keys.
    #[command(subcommand)]
    Key(KeyCommand),
    /// Publish a submission (it stays Reported).
    Publish {
        submission_id: String,
        #[command(flatten)]
        state: StateArgs,
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
            eprintln!("created key {} ({}) with scopes {} and a daily quota of {}", key.id, key.prefix, scopes.join(","), quota);
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
        AdminCommand::Publish { submission_id, state } => {
            let submission = state.open()?.publish(&submission_id)?;
            println!("published submission {} ({}) — evidence level stays {}", submission.id, submission.title, submission.trust);
        }
    }
    Ok(ExitCode::SUCCESS)
}
