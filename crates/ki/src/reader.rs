//! Where the read commands (and `ki mcp`'s tools) get their answers: a catalog read here — a
//! database, or an export file — or a running `ki serve` asked over HTTP (`--api URL`).
//!
//! Either way an answer is the JSON document `/api/v1/…` serves, computed here by the same
//! library calls its handler makes (the read model's search, dossier and record list; the
//! ranking's resolve, compare and run list). Commands render only that document, so a command prints
//! the same bytes from a catalog and from the index that serves it.

use std::sync::{Arc, Mutex};

use anyhow::{Context, anyhow, bail};
use clap::Args;
use ki_ranking::feed::{FeedItem, PageRequest, RunFilter};
use ki_ranking::{CompareError, LookupError, ResolveRequest};
use ki_server::model::ReadModel;
use serde_json::{Value, json};

use crate::client::ApiClient;
use crate::cmd::database::runtime;
use crate::cmd::ranking::{DataArgs, load_index, load_index_for_operation};
use crate::term::errln;

/// Permalinks in an answer read from a catalog here name the public index; a running index
/// names its own `--base-url`.
pub const PUBLIC_BASE_URL: &str = "https://kernelindex.dev";

/// The longest search query the index reads (as `/api/v1/search` does).
const MAX_QUERY_CHARS: usize = 200;

/// Where a read command's answer comes from.
#[derive(Args, Clone)]
pub struct ReadArgs {
    #[command(flatten)]
    pub data: DataArgs,
    /// Ask a running `ki serve` at this base URL (http://HOST:PORT) instead of a catalog.
    #[arg(long, value_name = "URL", conflicts_with_all = ["database", "export"])]
    pub api: Option<String>,
}

pub enum Reader {
    Catalog(CatalogReader),
    Api(ApiClient),
}

/// A catalog read in this process. `keep` holds the read model between answers (`ki mcp`),
/// rebuilt when the catalog's revision moves; a one-shot command reads only what it needs.
pub struct CatalogReader {
    data: DataArgs,
    keep: bool,
    kept: Mutex<Option<(u64, Arc<ReadModel>)>>,
    /// For an export, the scratch catalog that holds its search index, made on the first search.
    export_index: Mutex<Option<tempfile::TempDir>>,
}

impl Reader {
    pub fn new(args: &ReadArgs) -> anyhow::Result<Reader> {
        Self::with_memory(args, false)
    }

    /// As [`Reader::new`], keeping the read model between answers.
    pub fn with_memory(args: &ReadArgs, keep: bool) -> anyhow::Result<Reader> {
        Ok(match &args.api {
            Some(url) => Reader::Api(ApiClient::new(url)?),
            None => Reader::Catalog(CatalogReader {
                data: args.data.clone(),
                keep,
                kept: Mutex::new(None),
                export_index: Mutex::new(None),
            }),
        })
    }

    /// `GET /api/v1/search?q=`: the search grammar's answer (ranked answer, runs named, matches).
    pub fn search(&self, query: &str) -> anyhow::Result<Value> {
        let query: String = query.chars().take(MAX_QUERY_CHARS).collect();
        match self {
            Reader::Api(api) => api.get(&["search"], &[("q", &query)]),
            Reader::Catalog(catalog) => {
                let model = catalog.model()?;
                catalog.search(&model, &query)
            }
        }
    }

    /// `POST /api/v1/resolve/kernel`: the fastest compatible runs for one workload.
    pub fn resolve(&self, request: &ResolveRequest) -> anyhow::Result<Value> {
        match self {
            Reader::Api(api) => api.post(&["resolve", "kernel"], &serde_json::to_value(request)?),
            Reader::Catalog(catalog) => {
                let now = ki_ranking::Instant::now();
                if catalog.kept_model()?.is_none() {
                    // One operation's rows when the request names it exactly; else (plain words)
                    // the whole read model, whose lexicon reads them as the search does.
                    let index = load_index_for_operation(&catalog.data, &request.operation)?;
                    if index.find_operation(request.operation.trim()).is_ok() {
                        return Ok(serde_json::to_value(index.resolve_read_at(request, &index.lexicon(), now))?);
                    }
                }
                let model = catalog.model()?;
                Ok(serde_json::to_value(model.judgement.resolve_read_at(request, model.lexicon(), now))?)
            }
        }
    }

    /// `POST /api/v1/resolve/kernel/batch`: 1 to 20 workloads in one answer.
    pub fn resolve_batch(&self, requests: &[ResolveRequest]) -> anyhow::Result<Value> {
        match self {
            Reader::Api(api) => api.post(&["resolve", "kernel", "batch"], &json!({ "requests": requests })),
            Reader::Catalog(catalog) => {
                let model = catalog.model()?;
                let answers = model.resolve_batch_read_at(requests, ki_ranking::Instant::now())?;
                Ok(json!({ "responses": answers }))
            }
        }
    }

    /// `GET /api/v1/runs/{id}`: one run's dossier (id, digest, or a unique prefix).
    pub fn run(&self, reference: &str) -> anyhow::Result<Value> {
        match self {
            Reader::Api(api) => api.get(&["runs", reference.trim()], &[]),
            Reader::Catalog(catalog) => {
                let model = catalog.model()?;
                let run = ki_server::dossier::find_run(&model, reference).map_err(|problem| anyhow!(problem.detail))?;
                let id = model.run(run).id.to_string();
                let attestations = catalog.attestations_of(&id)?;
                let detail = catalog.run_detail(&model, run)?;
                let mut dossier = model.dossier(run, detail, attestations, PUBLIC_BASE_URL);
                catalog.held_contents(&model, run, &mut dossier)?;
                Ok(serde_json::to_value(dossier)?)
            }
        }
    }

    /// `GET /api/v1/compare?run=…`: 2 to 8 runs side by side.
    pub fn compare(&self, references: &[String]) -> anyhow::Result<Value> {
        match self {
            Reader::Api(api) => {
                let query: Vec<(&str, &str)> = references.iter().map(|r| ("run", r.as_str())).collect();
                api.get(&["compare"], &query)
            }
            Reader::Catalog(catalog) => {
                let borrowed: Vec<&str> = references.iter().map(String::as_str).collect();
                let answer = match catalog.kept_model()? {
                    Some(model) => model.judgement.compare(&borrowed),
                    None => load_index(&catalog.data)?.compare(&borrowed),
                };
                // The index's words for each refusal (`/api/v1/compare` answers with these).
                match answer {
                    Ok(comparison) => Ok(serde_json::to_value(comparison)?),
                    Err(CompareError::Lookup(LookupError::NotFound { given, .. })) => {
                        bail!("no run matches {given:?}")
                    }
                    Err(error) => Err(error.into()),
                }
            }
        }
    }

    /// `GET /api/v1/records?page=`: record events newest first, a page at a time.
    pub fn records(&self, page: usize) -> anyhow::Result<Value> {
        let page = page.clamp(1, 100_000);
        match self {
            Reader::Api(api) => api.get(&["records"], &[("page", &page.to_string())]),
            Reader::Catalog(catalog) => {
                let model = catalog.model()?;
                Ok(serde_json::to_value(model.record_list(page, ki_server::model::RECORDS_PER_PAGE))?)
            }
        }
    }

    /// `GET /api/v1/runs`: the runs matching `filter`, ordered by id, one page of them.
    pub fn runs(&self, filter: &RunFilter, page: &PageRequest) -> anyhow::Result<Value> {
        match self {
            Reader::Api(api) => {
                let limit = page.limit.map(|l| l.to_string());
                let query: Vec<(&str, &str)> = [
                    ("operation", filter.operation.as_deref()),
                    ("workload", filter.workload.as_deref()),
                    ("hardware", filter.hardware.as_deref()),
                    ("evidence", filter.evidence.as_deref()),
                    ("source", filter.source.as_deref()),
                    ("implementation", filter.implementation.as_deref()),
                    ("status", filter.status.as_deref()),
                    ("cursor", page.cursor.as_deref()),
                    ("limit", limit.as_deref()),
                ]
                .into_iter()
                .filter_map(|(name, value)| value.map(|value| (name, value)))
                .collect();
                api.get(&["runs"], &query)
            }
            Reader::Catalog(catalog) => {
                let listed = match catalog.kept_model()? {
                    Some(model) => ki_ranking::feed::list_runs(&model.judgement, filter, page),
                    None => ki_ranking::feed::list_runs(&load_index(&catalog.data)?, filter, page),
                };
                Ok(serde_json::to_value(listed?)?)
            }
        }
    }

    /// `GET /api/v1/feed?since=`: record events, publications, corrections and finished
    /// verifications strictly after `since`, oldest first, one page of them.
    pub fn changes(&self, since: Option<&str>, page: &PageRequest) -> anyhow::Result<Value> {
        match self {
            Reader::Api(api) => {
                let limit = page.limit.map(|l| l.to_string());
                let query: Vec<(&str, &str)> =
                    [("since", since), ("cursor", page.cursor.as_deref()), ("limit", limit.as_deref())]
                        .into_iter()
                        .filter_map(|(name, value)| value.map(|value| (name, value)))
                        .collect();
                api.get(&["feed"], &query)
            }
            Reader::Catalog(catalog) => {
                // Refused before anything is read, as the index does.
                if let Some(since) = since {
                    ki_ranking::feed::parse_since(since)?;
                }
                let mut events = match catalog.kept_model()? {
                    Some(model) => ki_ranking::feed::index_events(&model.judgement),
                    None => ki_ranking::feed::index_events(&load_index(&catalog.data)?),
                };
                events.extend(catalog.catalog_events()?);
                Ok(serde_json::to_value(ki_ranking::feed::feed_page(events, since, page)?)?)
            }
        }
    }

    /// `GET /api/v1/verifications/{id}`: a verification job, its attempts and their workers.
    pub fn verification(&self, reference: &str) -> anyhow::Result<Value> {
        match self {
            Reader::Api(api) => api.get(&["verifications", reference.trim()], &[]),
            Reader::Catalog(catalog) => {
                let data = &catalog.data;
                if data.export.is_some() {
                    bail!("an export holds no verification queue; read a catalog database or a running index");
                }
                runtime()?.block_on(async {
                    let db = data.database.open().await?;
                    let job = db.job(reference).await.context("cannot read the verification queue");
                    db.close().await;
                    match job? {
                        Some(detail) => Ok(serde_json::to_value(detail)?),
                        None => bail!("no verification job {:?}", reference.trim()),
                    }
                })
            }
        }
    }
}

impl CatalogReader {
    /// The kept model, up to date, when this reader keeps one.
    fn kept_model(&self) -> anyhow::Result<Option<Arc<ReadModel>>> {
        if self.keep { self.model().map(Some) } else { Ok(None) }
    }

    /// The read model of every row, as `ki serve` builds it.
    fn model(&self) -> anyhow::Result<Arc<ReadModel>> {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let data = &self.data;
        if let Some(path) = &data.export {
            if let Some((_, model)) = kept.as_ref() {
                return Ok(model.clone());
            }
            let rows = ki_server::rows_from_export(path)
                .with_context(|| format!("cannot read the export {}", path.display()))?;
            let model = Arc::new(
                ReadModel::build(rows).with_context(|| format!("cannot rank the rows of {}", path.display()))?,
            );
            if self.keep {
                *kept = Some((0, model.clone()));
            }
            return Ok(model);
        }
        let shown = data.database.shown();
        runtime()?.block_on(async {
            let catalog = data.database.open().await?;
            if let Some(report) =
                catalog.ensure_bundled_snapshot().await.context("cannot import the bundled snapshot")?
            {
                errln!("note: the catalog was empty; imported the bundled snapshot ({} rows)", report.inserted());
            }
            // Read before the rows, as `ki serve` does: a write in between only reloads again.
            let revision = catalog.revision().await.with_context(|| format!("cannot read {shown}"))?;
            if let Some((_, model)) = kept.as_ref().filter(|(at, _)| *at == revision) {
                catalog.close().await;
                return Ok(model.clone());
            }
            // As `ki serve` builds it: rows streamed, the runs' details left in the catalog.
            let model = ki_server::model_from_catalog(&catalog).await.with_context(|| format!("cannot read {shown}"));
            catalog.close().await;
            let model = Arc::new(model?);
            if self.keep {
                *kept = Some((revision, model.clone()));
            }
            Ok(model)
        })
    }

    /// The search answer, from the catalog's search index. An export has none: its rows are
    /// imported once into a scratch catalog, which builds one and is kept while the reader is.
    fn search(&self, model: &ReadModel, query: &str) -> anyhow::Result<Value> {
        let runtime = runtime()?;
        // Held while this search runs: the scratch catalog is not removed under it.
        let mut index = self.export_index.lock().unwrap_or_else(|p| p.into_inner());
        let scratch_url = match &self.data.export {
            None => None,
            Some(path) => {
                if index.is_none() {
                    let dir = tempfile::tempdir().context("cannot make a scratch directory")?;
                    let url = format!("sqlite://{}", dir.path().join("search.db").display());
                    runtime.block_on(async {
                        let catalog = ki_catalog::Catalog::open(&url).await.context("cannot open a scratch catalog")?;
                        let imported = catalog.import_file(path, &ki_catalog::ImportOptions::default()).await;
                        catalog.close().await;
                        imported.with_context(|| format!("cannot index the export {}", path.display())).map(|_| ())
                    })?;
                    *index = Some(dir);
                }
                index.as_ref().map(|dir| format!("sqlite://{}", dir.path().join("search.db").display()))
            }
        };
        runtime.block_on(async {
            let catalog = match &scratch_url {
                None => self.data.database.open().await?,
                Some(url) => ki_catalog::Catalog::open(url).await.context("cannot open the scratch catalog")?,
            };
            let answer = model.search_answer(&catalog, query, ki_server::model::PAGE_LIMIT).await;
            let answer = answer.context("cannot search the catalog").and_then(|a| Ok(serde_json::to_value(a)?));
            catalog.close().await;
            answer
        })
    }

    /// The feed's events the catalog keeps beside the index's rows (`Catalog::feed_events`, as
    /// the index reads them); an export has none.
    fn catalog_events(&self) -> anyhow::Result<Vec<FeedItem>> {
        if self.data.export.is_some() {
            return Ok(Vec::new());
        }
        runtime()?.block_on(async {
            let catalog = self.data.database.open().await?;
            let events = catalog.feed_events().await.context("cannot read the catalog's corrections and verifications");
            catalog.close().await;
            events
        })
    }

    /// A run's attestations; an export carries none.
    /// The content store's part of a dossier (histogram, source link), as the web adds it; an
    /// export has no content store.
    fn held_contents(
        &self,
        model: &ki_server::model::ReadModel,
        run: usize,
        dossier: &mut ki_server::dossier::RunDossier,
    ) -> anyhow::Result<()> {
        if self.data.export.is_some() {
            return Ok(());
        }
        runtime()?.block_on(async {
            let catalog = self.data.database.open().await?;
            let added = ki_server::dossier::held_contents(&catalog, model, run, dossier)
                .await
                .context("cannot read the content store");
            catalog.close().await;
            added
        })
    }

    /// A run's manifest and measurements: the model's (an export's rows hold them), else the
    /// catalog's, read by run id as the web reads them.
    fn run_detail(&self, model: &ReadModel, run: usize) -> anyhow::Result<ki_server::model::RunDetail> {
        if let Some(detail) = model.held_run_detail(run) {
            return Ok(detail);
        }
        runtime()?.block_on(async {
            let catalog = self.data.database.open().await?;
            let detail = model.run_detail(&catalog, run).await.context("cannot read the run from the catalog");
            catalog.close().await;
            detail
        })
    }

    /// The first page of a run's attestations (newest first), with their count.
    fn attestations_of(&self, run_id: &str) -> anyhow::Result<ki_catalog::AttestationPage> {
        if self.data.export.is_some() {
            return Ok(ki_catalog::AttestationPage::empty());
        }
        runtime()?.block_on(async {
            let catalog = self.data.database.open().await?;
            let attestations = catalog.attestation_page(run_id, 1).await.context("cannot read the attestations");
            catalog.close().await;
            attestations
        })
    }
}
