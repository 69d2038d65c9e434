//! `ki serve`: the web index over the catalog (or straight over an export file).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use super::database::{DatabaseArgs, block_on, migrate_state_file};
use crate::term::errln;

#[derive(Args)]
pub struct ServeArgs {
    /// The catalog served (an empty one gets the bundled snapshot first). It also holds
    /// the web's state: API keys, attestations and submissions.
    #[command(flatten)]
    pub database: DatabaseArgs,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// Serve the rows of an export file (.jsonl / .jsonl.zst) instead of the catalog's
    /// (the web's state still lives in the catalog).
    #[arg(long)]
    pub export: Option<PathBuf>,
    /// The state directory of an older ki (PATH.web beside a SQLite file by default): its
    /// web-log.jsonl is migrated into the catalog once, then renamed.
    #[arg(long)]
    pub state: Option<PathBuf>,
    /// Public base URL for permalinks and the Atom feed (default: http://ADDR).
    #[arg(long)]
    pub base_url: Option<String>,
    /// Seconds between checks of the catalog for changes (`ki admin publish`, `retract`,
    /// `supersede`); a change reloads the pages' data. 0: never reload.
    #[arg(long, default_value_t = 5)]
    pub reload_every: u64,
}

pub fn run(args: ServeArgs) -> anyhow::Result<ExitCode> {
    block_on(async move {
        let catalog = args.database.open().await?;
        migrate_state_file(&catalog, &args.state.clone().unwrap_or_else(|| args.database.legacy_state_dir())).await?;
        let (model, watch) = match &args.export {
            Some(path) => {
                let path = path.clone();
                let rows = tokio::task::spawn_blocking(move || ki_server::rows_from_export(&path)).await??;
                errln!("ki serve: {} rows read", rows.len());
                (tokio::task::spawn_blocking(move || ki_server::model::ReadModel::build(rows)).await??, None)
            }
            None => {
                if let Some(report) =
                    catalog.ensure_bundled_snapshot().await.context("cannot import the bundled snapshot")?
                {
                    errln!("ki serve: empty catalog: imported the bundled snapshot ({} rows)", report.inserted());
                }
                let loaded_revision = catalog.revision().await?;
                let model = ki_server::model_from_catalog(&catalog).await?;
                let watch = (args.reload_every > 0).then(|| ki_server::CatalogWatch {
                    loaded_revision,
                    every: std::time::Duration::from_secs(args.reload_every),
                    database_url: args.database.url(),
                });
                (model, watch)
            }
        };
        errln!("ki serve: {} benchmark runs ranked", model.judgement.runs.len());
        let options = ki_server::ServeOptions { addr: args.addr, catalog, base_url: args.base_url.clone(), watch };
        ki_server::serve(model, options).await
    })??;
    Ok(ExitCode::SUCCESS)
}
