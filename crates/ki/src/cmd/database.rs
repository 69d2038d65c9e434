//! The catalog a command reads or writes, named the same way by every command
//! (`--database`, else `KI_DATABASE_URL`, else `sqlite://kernelindex.db`), and the one async
//! runtime commands run on.

use std::future::Future;
use std::path::{Path, PathBuf};

use crate::term::errln;
use anyhow::Context;
use clap::Args;
use ki_catalog::Catalog;

#[derive(Args, Clone, Debug, Default)]
pub struct DatabaseArgs {
    /// Catalog database: sqlite://PATH or postgres://USER@HOST[:PORT]/DATABASE
    /// [default: $KI_DATABASE_URL, else sqlite://kernelindex.db]
    #[arg(long)]
    pub database: Option<String>,
}

impl DatabaseArgs {
    pub fn url(&self) -> String {
        self.database.clone().unwrap_or_else(ki_catalog::default_database_url)
    }

    /// The URL for messages: never the password.
    pub fn shown(&self) -> String {
        Catalog::redacted_url(&self.url())
    }

    /// Opens (creating and migrating if needed) the catalog.
    pub async fn open(&self) -> anyhow::Result<Catalog> {
        Catalog::open(&self.url()).await.context("cannot open the catalog")
    }

    /// The directory an older `ki` kept the web's state in, beside a SQLite file.
    pub fn legacy_state_dir(&self) -> PathBuf {
        let url = self.url();
        match url.strip_prefix("sqlite://") {
            Some(path) if !path.is_empty() => PathBuf::from(format!("{path}.web")),
            _ => PathBuf::from("kernelindex-web"),
        }
    }
}

/// The runtime every command's async work runs on.
pub fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the async runtime")
}

/// Runs `work` on a fresh runtime.
pub fn block_on<F: Future>(work: F) -> anyhow::Result<F::Output> {
    Ok(runtime()?.block_on(work))
}

/// The JSON-lines state file of an older `ki` (keys, attestations, submissions), migrated
/// into the catalog once: its entries are imported in one transaction and the file is
/// renamed to `web-log.jsonl.migrated`, so that it is never read again.
pub async fn migrate_state_file(catalog: &Catalog, dir: &Path) -> anyhow::Result<()> {
    let log = dir.join("web-log.jsonl");
    if !log.is_file() {
        return Ok(());
    }
    let imported = catalog
        .import_web_log(&log)
        .await
        .with_context(|| format!("cannot migrate {} into the catalog", log.display()))?;
    let done = dir.join("web-log.jsonl.migrated");
    std::fs::rename(&log, &done).with_context(|| format!("cannot rename {} after migrating it", log.display()))?;
    errln!(
        "migrated {} into the catalog ({} keys, {} attestations, {} submissions); the file is now {}",
        log.display(),
        imported.keys,
        imported.attestations,
        imported.submissions,
        done.display()
    );
    Ok(())
}
