//! The KernelIndex web: server-rendered pages and the versioned JSON API over an
//! in-memory read model of the catalog.
//!
//! Reads never touch the database: the catalog's rows are loaded once into a
//! [`model::ReadModel`] (the ranking's judgement plus look-ups beside it), shared behind an
//! `Arc` that a rebuild swaps. The web's own writes (keys, attestations, submissions) are
//! catalog rows ([`ki_catalog::Catalog::add_attestation`] and its neighbours), read on each
//! request, so every replica of `ki serve` on one catalog agrees on them at once.
//!
//! Organised by page: [`pages`] has one module per page or API resource (`pages::run`,
//! `pages::operation`, …), each holding its view model, its template and its handlers;
//! [`routes`] is the route table that names them (and feeds the OpenAPI document).
//! A run's dossier is built from the read model in [`dossier`]; `pages::run` renders it and
//! the CLI (`ki show run`) prints it, so the CLI asks the read model, never a page.
//!
//! # Architecture notes
//!
//! Moved from ARCHITECTURE.md, which keeps the map; this is the detail.
//!
//! ## The crate
//!
//! `crates/server` — axum; server-rendered HTML plus a JSON twin for each page, organised
//! by page: `pages/<page>.rs` (`run`, `operation`, `resolve`, `compare`, `records`,
//! `project`, `implementation`, `gpus` (the list), `gpu` (one GPU model), `models`, `serving`,
//! `submission`, `verifications`, `home`, `docs`, and the API-only `run_list`, `feed`,
//! `exports`) each hold that page's view model, maud template and axum handlers; `pages/mod.rs` the layout and what pages share;
//! `routes.rs` the route table: each route with its `RouteDoc` naming the query, body and
//! answer types its handler uses, from which `openapi.rs` builds `/api/v1/openapi.json`
//! (OpenAPI 3.1, JSON Schemas derived by `schemars` from those serde types, answers as serde
//! writes them and requests as it reads them). `connections.rs` is the accept loop (hyper's
//! HTTP/1 with a header-read deadline that also ends idle keep-alive connections, a cap on open
//! connections that a connection holds only while it makes progress, in total and per peer (a
//! newcomer evicts the connection idle or stalled longest), request bodies under a deadline and a
//! minimum rate, a declared Content-Length over the limit answered 413 before the body, and
//! problem bodies for what hyper refuses before routing); `pages/source.rs` is kernel source: the
//! implementation page's highlighted listing (syntect grammars, class-based spans balanced per line
//! so each line has an anchor, CUDA read as C++, no inline style), the raw text
//! (`/implementations/{slug}/source`), its JSON (`/api/v1/implementations/{slug}/source`) and a
//! revision's unified diff against the previous one (`similar`; lineage: `supersedesId`, else the
//! latest earlier revision of the same project, operation and manifest name), all read from the
//! content store per request; `http.rs` the middleware (request
//! ids, security headers, every error as problem+json, a deadline per request, CORS for reads,
//! ETag / 304). The run list and the feed are computed by `ki_ranking::feed` (pure, shared
//! with the CLI). The read model is rebuilt when the catalog's revision moves (`ki admin`
//! writes from outside).
//!
//! ## Code map
//!
//! `server` (`ki_server`) — `AppState` (the read model behind an `Arc` swapped on reload, and
//! the `Catalog`), `model::ReadModel` (the ranking's `judgement` and the look-ups beside it). `model_from_catalog`
//! builds it as the catalog's rows stream in (`model::ModelBuilder`, on a thread of its own fed by
//! a short queue, so that jemalloc's arena of the model is not the one the rows are parsed and
//! freed in; sharing one kept 171 MiB of free slots resident at 1M runs; the builder thread takes
//! the next of two arenas kept for read models, so a rebuilt model is never placed among the
//! allocations of the one it replaces): runs and measurements become
//! the index's typed rows as they arrive, and pages read a run through `ReadModel::run` (no JSON
//! map of runs is kept); the runs' details — manifests and measurement rows — stay in the catalog
//! (`RunDetails::InCatalog`) and a page about one run reads them by indexed run id
//! (`ReadModel::run_detail` → `RunDetail`); the CLI's reader builds the same model from a catalog;
//! a model built from export rows (`ReadModel::build`: tests, `ki serve --export`, `--export`
//! readers) holds them. The records ledger reads the index's typed record events in a newest-first
//! order computed once (`ReadModel::records`, `RecordRef`).
//! The rows the index holds (sources, projects, operations and aliases, workloads, implementations,
//! runs, measurements, record events, artifacts) are read from its typed rows, one copy
//! (`model.judgement.operations[op].slug`); their manifests are the index's compact JSON text, parsed
//! per page about one record (`Index::implementation_manifest` and its neighbours), and what lists,
//! labels and search read of them for many rows is read once at build into small columns
//! (`ReadModel::operation_titles`, `operation_axes`, `workload_labels`, `implementation_names`). The
//! tables the index does not hold (model revisions, serving) are `ki_model::rows` typed rows in a
//! `model::Table` (rows + id index); supersessions are `model::Supersession`s. Rows arrive as JSON
//! maps (`ModelBuilder::push`) and are parsed there; a bad one is `ModelError::BadRow` (or the
//! ranking's error). `watch_catalog` rebuilds on a thread of its own at nice 19, with its own connection
//! (`CatalogWatch::database_url`), and swaps the new model in; `pages::<page>` (view model + template + handlers per
//! page; `pages::search::search_answer` is the one search, behind `/`, `/api/v1/search`,
//! `ki search` and the MCP tool: the catalog's index finds each word, once per read model
//! (`model::WordMatches`, bounded; a query takes the entries all its words found), the
//! read model's `SearchEntry`s — looked up by `search_by_key` — carry the run classes the filters
//! test (`ReadModel::run_classes`: runs every run filter treats alike, one run of each tested once
//! per query; only an implementation filter reads an entry's runs, `ReadModel::entry_runs`),
//! and are scored and ranked there; `ki search --export` indexes the export in a scratch catalog once), `routes` (route table → router and OpenAPI), `http` (ids, security headers),
//! `problem::Problem` (RFC 9457), `connections` (`Limits`, `Tracker`, `serve`). The run dossier
//! (`dossier::RunDossier`, built in `dossier.rs`, rendered by `pages::run`) shows every statistic a
//! run's manifest records, in words and through `ki_model::units`; where the content store holds the run's raw samples, a histogram of their
//! per-call times (`chart::histogram_svg`: median, p05 and p95 marked, a hover title per bar) beside
//! the manifest's summary, and a link to the implementation's source when the store holds it. The operation
//! page (`pages::operation`) states the constant axes once, leads with the picked group's leaderboard
//! (groups with a verified run first, then the largest), draws one sweep per GPU with the few-valued
//! axes held (`Sweep::held`; each of their values a facet, `?facet=batch_size=16`, so a line never
//! joins batch sizes) and round or SI ticks (`chart::si_number`), and lists the comparison groups as
//! a workload picker with a column per varying axis. Counts of verified runs
//! (`ReadModel::counts_as`) and the GPU page's evidence mix take only runs that passed and stand
//! (`ReadModel::stands`; the others are a row of their own), and a page with no ranked run says
//! why (`ReadModel::why_none_eligible`: "4 runs, all refused: suspected_reward_hack"). Keys,
//! attestations, corrections and the verification queue are read from the catalog per request.
//! `pages::deployable_beside` is what every page naming a fastest run (search answer, resolve, the
//! operation's leaderboard, GPU and model pages) says beside it: deployable, or the group's best deployable
//! run (`Index::best_deployable_of`). The model page answers for a batch and context length
//! (`models::CaseForm`: the measured workload nearest them per operation and GPU); the GPU list adds
//! `ki_model::gpu::KNOWN_GPUS` without runs, each with the nearest measured GPU of its vendor.
//! `assets/site.css` is the one stylesheet (no script needed, none inline): type and spacing
//! scales, evidence levels in colour through `pages::evidence_badge` / `evidence_class`, sticky
//! table headers, and under 48rem one column with each wide table scrolling inside itself, except a
//! leaderboard (`table.leaderboard`: `pages::runs_table`, the operation page's, the search answer's
//! table of groups), which fits the
//! screen: its secondary columns (`.opt`: run id, GPU, date) are hidden under 40rem;
//! `docs/screenshots/run.sh` screenshots the main pages and runs axe-core over them.
//! **API boundary:** `/api/v1/…`, described by `/api/v1/openapi.json`; the run list's and the
//! feed's types are `ki_ranking::feed::{RunFilter, PageRequest, RunPage, FeedPage, FeedItem}`.

// `Problem` is the error body every handler answers with (RFC 9457): it is rendered where it is
// made, never carried far, so its size does not matter.
#![allow(clippy::result_large_err)]

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, RwLock};

pub mod bundle;
pub mod chart;
pub mod connections;
pub mod dossier;
pub mod http;
pub mod model;
pub mod openapi;
pub mod pages;
pub mod problem;
pub mod routes;

use model::{CatalogRow, ReadModel};

/// Shared by every request.
pub struct AppState {
    model: RwLock<Arc<ReadModel>>,
    /// Where the web's own state lives (and, served from a database, the rows too).
    pub catalog: ki_catalog::Catalog,
    /// Scheme and host used in permalinks and the Atom feed.
    pub base_url: String,
    /// The catalog's export at its last revision asked for (`/api/v1/exports/latest`).
    pub exports: tokio::sync::Mutex<Option<Arc<pages::exports::CachedExport>>>,
}

impl AppState {
    pub fn new(model: ReadModel, catalog: ki_catalog::Catalog, base_url: String) -> AppState {
        AppState { model: RwLock::new(Arc::new(model)), catalog, base_url, exports: tokio::sync::Mutex::new(None) }
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

/// The read model of a catalog, built as its rows stream in (unpublished runs included: the
/// ranking names them ineligible); the runs' manifests stay in the catalog
/// ([`model::RunDetails::InCatalog`]), read per page.
///
/// The model is built on a thread of its own, fed the rows through a short queue: jemalloc
/// gives each thread its own arena, so the rows read here (freed once pushed) and the model's
/// long-lived small allocations do not share slabs. When they did, a freed row's slots kept
/// the slabs of the model's texts resident: 171 MiB of free slots at 1M runs
/// (`read_model_memory`, `bench/scale/`).
pub async fn model_from_catalog(catalog: &ki_catalog::Catalog) -> anyhow::Result<ReadModel> {
    let (rows, received) = std::sync::mpsc::sync_channel::<CatalogRow>(ROWS_IN_FLIGHT);
    let abandoned = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let build = {
        let abandoned = abandoned.clone();
        std::thread::Builder::new().name("ki-model".into()).spawn(move || {
            enter_model_arena();
            let mut builder = model::ModelBuilder::new(model::RunDetails::InCatalog);
            for row in received {
                builder.push(row.table, row.row);
            }
            if abandoned.load(std::sync::atomic::Ordering::Acquire) {
                return Err(anyhow::anyhow!("the catalog could not be read"));
            }
            Ok(builder.finish()?)
        })?
    };
    // A full queue makes this task wait for the builder (briefly: pushing a row is cheap);
    // a send fails only once the builder has stopped, which its join then reports.
    let visited = visit_catalog(catalog, |row| {
        let _ = rows.send(row);
    })
    .await;
    if visited.is_err() {
        abandoned.store(true, std::sync::atomic::Ordering::Release);
    }
    drop(rows);
    let built = tokio::task::spawn_blocking(move || build.join()).await?;
    visited?;
    built.map_err(|_| anyhow::anyhow!("building the read model failed (the builder thread panicked)"))?
}

/// Moves the calling thread (a read model's builder) to the next of two jemalloc arenas kept for
/// read models. A model is then built in the arena of the model before the one it replaces (freed
/// since), never among the allocations of the model still served while it is built: jemalloc
/// would otherwise place the two models' small objects in the same slabs, which stay resident,
/// partly empty, once the old model is freed. Does nothing where jemalloc cannot make arenas.
fn enter_model_arena() {
    static ARENAS: std::sync::OnceLock<Option<[u32; 2]>> = std::sync::OnceLock::new();
    static BUILDS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let arenas = ARENAS.get_or_init(|| {
        // SAFETY: reading `arenas.create` makes an arena and answers its index, an unsigned.
        let create = || unsafe { tikv_jemalloc_ctl::raw::read::<u32>(b"arenas.create\0") }.ok();
        Some([create()?, create()?])
    });
    if let Some(arenas) = arenas {
        let arena = arenas[BUILDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % arenas.len()];
        // SAFETY: `thread.arena` takes an arena index (an unsigned) for the calling thread.
        let _ = unsafe { tikv_jemalloc_ctl::raw::write(b"thread.arena\0", arena) };
    }
}

/// Rows read ahead of the read model's builder.
const ROWS_IN_FLIGHT: usize = 1024;

/// Reads every table of the catalog (unpublished runs included: the ranking names them
/// ineligible) into catalog rows, in export order, then the corrections' audit trail.
pub async fn rows_from_catalog(catalog: &ki_catalog::Catalog) -> anyhow::Result<Vec<CatalogRow>> {
    let mut rows = Vec::new();
    visit_catalog(catalog, |row| rows.push(row)).await?;
    Ok(rows)
}

/// Hands every row of the catalog to `visit` as it is read, table by table in export order,
/// then the corrections' audit trail as rows of a `corrections` table (pages show why a run
/// was superseded).
async fn visit_catalog(catalog: &ki_catalog::Catalog, mut visit: impl FnMut(CatalogRow)) -> anyhow::Result<()> {
    for table in ki_catalog::schema::table_names() {
        catalog
            .for_each_row(table, |row| {
                visit(CatalogRow { table: table.to_string(), row });
                Ok(())
            })
            .await?;
    }
    for correction in catalog.corrections().await? {
        if let serde_json::Value::Object(row) = serde_json::to_value(&correction)? {
            visit(CatalogRow { table: "corrections".into(), row });
        }
    }
    Ok(())
}

pub struct ServeOptions {
    pub addr: SocketAddr,
    /// Keys, attestations and submissions live here; with `watch`, the rows too.
    pub catalog: ki_catalog::Catalog,
    pub base_url: Option<String>,
    /// The catalog the rows came from, to reload the read model when it changes.
    pub watch: Option<CatalogWatch>,
}

/// Reloading the read model after `ki admin` publishes or corrects runs in the catalog
/// (another process): the catalog's revision is checked every `every`.
pub struct CatalogWatch {
    /// [`ki_catalog::Catalog::revision`] read before the served rows were.
    pub loaded_revision: u64,
    pub every: std::time::Duration,
    /// The catalog's address (with any password), which a rebuild opens on its own thread.
    pub database_url: String,
}

/// Rebuilds the read model whenever the catalog's revision moves, and swaps it in;
/// readers keep the old model until the new one is ready. A rebuild runs on a thread of its
/// own at the lowest priority, with its own connection to the catalog, so that it takes the
/// time requests leave rather than a request worker's. Runs until the process ends.
pub async fn watch_catalog(state: Arc<AppState>, watch: CatalogWatch) {
    let catalog = state.catalog.clone();
    let mut loaded = watch.loaded_revision;
    loop {
        tokio::time::sleep(watch.every).await;
        // Read before the rows: a write in between moves it again and reloads once more.
        let revision = match catalog.revision().await {
            Ok(revision) if revision != loaded => revision,
            Ok(_) => continue,
            Err(error) => {
                eprintln!("ki serve: cannot check the catalog for changes: {error}");
                continue;
            }
        };
        match rebuild_in_background(watch.database_url.clone()).await {
            Ok(model) => {
                let runs = model.judgement.runs.len();
                state.replace_model(model);
                loaded = revision;
                eprintln!("ki serve: the catalog changed; reloaded ({runs} benchmark runs)");
            }
            Err(error) => {
                eprintln!("ki serve: the changed catalog cannot be served, keeping the previous one: {error:#}")
            }
        }
    }
}

/// [`model_from_catalog`] on a new thread at the lowest scheduling priority, with its own
/// runtime and connection (the threads SQLite's connection starts inherit the priority).
async fn rebuild_in_background(database_url: String) -> anyhow::Result<ReadModel> {
    let (done, built) = tokio::sync::oneshot::channel();
    std::thread::Builder::new().name("ki-rebuild".into()).spawn(move || {
        lowest_priority();
        let rebuilt =
            tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(anyhow::Error::from).and_then(
                |runtime| {
                    runtime.block_on(async {
                        let catalog = ki_catalog::Catalog::open(&database_url).await?;
                        let model = model_from_catalog(&catalog).await;
                        catalog.close().await;
                        model
                    })
                },
            );
        let _ = done.send(rebuilt);
    })?;
    built.await.map_err(|_| anyhow::anyhow!("the rebuild thread ended without a model"))?
}

/// Lowers the calling thread's scheduling priority to the least (nice 19).
fn lowest_priority() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority on the calling thread's own id changes only its scheduling priority.
    unsafe {
        let thread = libc::syscall(libc::SYS_gettid) as libc::id_t;
        libc::setpriority(libc::PRIO_PROCESS, thread, 19);
    }
}

/// Builds the state and serves until Ctrl-C.
pub async fn serve(model: ReadModel, options: ServeOptions) -> anyhow::Result<()> {
    let listener = tokio::net::TcpListener::bind(options.addr).await?;
    let local = listener.local_addr()?;
    let base_url = options.base_url.unwrap_or_else(|| format!("http://{local}"));
    let state = Arc::new(AppState::new(model, options.catalog, base_url));
    if let Some(watch) = options.watch {
        tokio::spawn(watch_catalog(state.clone(), watch));
    }
    eprintln!("ki serve: listening on http://{local}");
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    connections::serve(
        listener,
        routes::router(state),
        connections::Limits::default(),
        connections::Tracker::default(),
        shutdown,
    )
    .await;
    Ok(())
}
