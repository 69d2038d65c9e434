//! The KernelIndex web: server-rendered pages and the versioned JSON API over an
//! in-memory read model of the catalog.
//!
//! Reads never touch the database: the catalog's rows are loaded once into a
//! [`model::ReadModel`] (tables plus the ranking's judgement), shared behind an
//! `Arc` that a rebuild swaps. Writes (keys, attestations, submissions) go to the
//! [`store::Store`] log.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

pub mod catalog_views;
pub mod chart;
pub mod format;
pub mod http;
pub mod model;
pub mod openapi;
pub mod pages;
pub mod problem;
pub mod routes;
pub mod store;
pub mod submit;
pub mod views;

use model::{CatalogRow, ReadModel};
use store::Store;

/// Shared by every request.
pub struct AppState {
    model: RwLock<Arc<ReadModel>>,
    pub store: Store,
    /// Scheme and host used in permalinks and the Atom feed.
    pub base_url: String,
}

impl AppState {
    pub fn new(model: ReadModel, store: Store, base_url: String) -> AppState {
        AppState { model: RwLock::new(Arc::new(model)), store, base_url }
    }

    /// The current read model; a cheap `Arc` clone, so a rebuild never blocks readers.
    pub fn model(&self) -> Arc<ReadModel> {
        self.model.read().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Swaps in a model rebuilt from fresh catalog rows.
    pub fn replace_model(&self, model: ReadModel) {
        *self.model.write().unwrap_or_else(|p| p.into_inner()) = Arc::new(model);
    }
}

/// Reads an export (`.jsonl` / `.jsonl.zst`) into catalog rows.
pub fn rows_from_export(path: &Path) -> anyhow::Result<Vec<CatalogRow>> {
    let lines = ki_model::export::read_export(path)?;
    Ok(lines.into_iter().map(|l| CatalogRow { table: l.table, row: l.row }).collect())
}

/// Reads every table of the catalog (unpublished runs included: the ranking names them
/// ineligible) into catalog rows, in export order.
pub async fn rows_from_catalog(catalog: &ki_catalog::Catalog) -> anyhow::Result<Vec<CatalogRow>> {
    let mut rows = Vec::new();
    for table in ki_catalog::schema::table_names() {
        catalog
            .for_each_row(table, |row| {
                rows.push(CatalogRow { table: table.to_string(), row });
                Ok(())
            })
            .await?;
    }
    Ok(rows)
}

pub struct ServeOptions {
    pub addr: SocketAddr,
    pub state_dir: PathBuf,
    pub base_url: Option<String>,
}

/// Builds the state and serves until Ctrl-C.
pub async fn serve(rows: Vec<CatalogRow>, options: ServeOptions) -> anyhow::Result<()> {
    let model = tokio::task::spawn_blocking(move || ReadModel::build(rows)).await??;
    let store = Store::open(&options.state_dir)?;
    let listener = tokio::net::TcpListener::bind(options.addr).await?;
    let local = listener.local_addr()?;
    let base_url = options.base_url.unwrap_or_else(|| format!("http://{local}"));
    let state = Arc::new(AppState::new(model, store, base_url));
    eprintln!("ki serve: listening on http://{local}");
    axum::serve(listener, routes::router(state))
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await?;
    Ok(())
}
