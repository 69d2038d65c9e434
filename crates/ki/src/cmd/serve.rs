//! `ki serve`: the web index over the catalog (or straight over an export file).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

#[derive(Args)]
pub struct ServeArgs {
    /// Catalog database: sqlite://PATH or postgres://… (default: KI_DATABASE_URL or
    /// sqlite://kernelindex.db). An empty catalog gets the bundled snapshot first.
    #[arg(long)]
    pub database: Option<String>,
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub addr: SocketAddr,
    /// Serve an export file (.jsonl / .jsonl.zst) instead of a database.
    #[arg(long, conflicts_with = "database")]
    pub export: Option<PathBuf>,
    /// Directory for API keys, attestations and submissions (default: beside the
    /// SQLite file as PATH.web, else ./kernelindex-web).
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
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let (rows, default_state, watch) = match &args.export {
            Some(path) => {
                let path = path.clone();
                let rows = tokio::task::spawn_blocking(move || ki_server::rows_from_export(&path)).await??;
                (rows, PathBuf::from("kernelindex-web"), None)
            }
            None => {
                let url = args.database.clone().unwrap_or_else(ki_catalog::default_database_url);
                let catalog = ki_catalog::Catalog::open(&url).await.context("cannot open the catalog")?;
                if let Some(report) =
                    catalog.ensure_bundled_snapshot().await.context("cannot import the bundled snapshot")?
                {
                    eprintln!("ki serve: empty catalog: imported the bundled snapshot ({} rows)", report.inserted());
                }
                let loaded_revision = catalog.revision().await?;
                let rows = ki_server::rows_from_catalog(&catalog).await?;
                let watch = if args.reload_every == 0 {
                    catalog.close().await;
                    None
                } else {
                    let every = std::time::Duration::from_secs(args.reload_every);
                    Some(ki_server::CatalogWatch { catalog, loaded_revision, every })
                };
                (rows, ki_server::store::default_state_dir(&url), watch)
            }
        };
        eprintln!("ki serve: {} catalog rows loaded", rows.len());
        let options = ki_server::ServeOptions {
            addr: args.addr,
            state_dir: args.state.clone().unwrap_or(default_state),
            base_url: args.base_url.clone(),
            watch,
        };
        ki_server::serve(rows, options).await
    })?;
    Ok(ExitCode::SUCCESS)
}
