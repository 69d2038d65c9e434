//! Real servers for the tests that need their own: a catalog (a SQLite file, or a schema of
//! the local PostgreSQL) holding the bundled snapshot, served the way `ki serve` serves it
//! (the same connection loop, limits the test chooses), and raw sockets to talk to it.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use ki_server::AppState;
use ki_server::connections::{Limits, Tracker};
use ki_server::model::{CatalogRow, ReadModel};

/// One runtime for every server and catalog call of a test binary.
pub static RUNTIME: LazyLock<tokio::runtime::Runtime> =
    LazyLock::new(|| tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap());

pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    RUNTIME.block_on(future)
}

fn postgres_base_url() -> String {
    std::env::var("KI_TEST_POSTGRES_URL").unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_string())
}

fn psql(sql: &str) {
    let output = Command::new("psql")
        .args(["-h", "127.0.0.1", "-U", "postgres", "-d", "test", "-v", "ON_ERROR_STOP=1", "-c", sql])
        .output()
        .expect("psql runs (the PostgreSQL client is needed by these tests)");
    assert!(output.status.success(), "psql {sql}: {}", String::from_utf8_lossy(&output.stderr));
}

/// A catalog of its own: a SQLite file in a temporary directory, or a PostgreSQL schema
/// dropped when the value is.
pub struct Database {
    pub url: String,
    pub name: &'static str,
    schema: Option<String>,
    _directory: Option<tempfile::TempDir>,
}

impl Database {
    pub fn sqlite() -> Database {
        let directory = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}", directory.path().join("catalog.db").display());
        Database { url, name: "sqlite", schema: None, _directory: Some(directory) }
    }

    pub fn postgres() -> Database {
        static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let schema =
            format!("ki_server_{}_{}", std::process::id(), NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
        psql(&format!("CREATE SCHEMA {schema}"));
        let url = format!("{}?options=-c%20search_path%3D{schema}", postgres_base_url());
        Database { url, name: "postgres", schema: Some(schema), _directory: None }
    }

    /// Opens it (another pool each time, as another process would have).
    pub fn open(&self) -> ki_catalog::Catalog {
        block_on(ki_catalog::Catalog::open(&self.url)).unwrap_or_else(|e| panic!("open {}: {e}", self.url))
    }

    /// Opens it with the bundled snapshot imported, as `ki serve` does on first start. A SQLite
    /// catalog starts as a copy of one imported once per build of this test binary
    /// ([`bundled_sqlite_template`]): the import takes seconds, and most tests only read.
    pub fn open_with_bundle(&self) -> ki_catalog::Catalog {
        if let Some(directory) = &self._directory {
            std::fs::copy(bundled_sqlite_template(), directory.path().join("catalog.db")).unwrap();
        }
        let catalog = self.open();
        block_on(catalog.ensure_bundled_snapshot()).expect("the bundled snapshot imports");
        catalog
    }
}

/// A SQLite catalog holding the bundled snapshot as a first start leaves it, made once per build
/// of this test binary (named by its size and time) in the target's scratch folder; processes
/// that make it at once each rename a whole file into place.
fn bundled_sqlite_template() -> std::path::PathBuf {
    let binary = std::fs::metadata(std::env::current_exe().unwrap()).unwrap();
    let stamp = binary.modified().unwrap().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let template = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("server-bundled-{stamp}-{}.db", binary.len()));
    if !template.exists() {
        let scratch = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
        let file = scratch.path().join("catalog.db");
        block_on(async {
            let catalog = ki_catalog::Catalog::open(&format!("sqlite://{}", file.display())).await.unwrap();
            catalog.ensure_bundled_snapshot().await.expect("the bundled snapshot imports");
            catalog.close().await;
        });
        assert!(!scratch.path().join("catalog.db-wal").exists(), "the template is one file");
        std::fs::rename(&file, &template).unwrap();
    }
    template
}

impl Drop for Database {
    fn drop(&mut self) {
        if let Some(schema) = self.schema.take() {
            psql(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"));
        }
    }
}

/// A listening server; stops when dropped.
pub struct Live {
    pub addr: SocketAddr,
    pub base: String,
    pub state: Arc<AppState>,
    pub tracker: Tracker,
    stop: Option<tokio::sync::oneshot::Sender<()>>,
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// Every row of `catalog`, as `ki serve` loads them.
pub fn catalog_rows(catalog: &ki_catalog::Catalog) -> Vec<CatalogRow> {
    block_on(ki_server::rows_from_catalog(catalog)).expect("the catalog's rows read")
}

/// Serves `rows` with `catalog` as the web's state, under `limits`.
pub fn serve_rows(rows: Vec<CatalogRow>, catalog: ki_catalog::Catalog, limits: Limits) -> Live {
    serve_model(ReadModel::build(rows).expect("the rows build a read model"), catalog, limits)
}

/// Serves `model` with `catalog` as the web's state, under `limits`.
pub fn serve_model(model: ReadModel, catalog: ki_catalog::Catalog, limits: Limits) -> Live {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let base = format!("http://{addr}");
    let state = Arc::new(AppState::new(model, catalog, base.clone()));
    let tracker = Tracker::default();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let (served, counted) = (state.clone(), tracker.clone());
    RUNTIME.spawn(async move {
        let listener = tokio::net::TcpListener::from_std(listener).unwrap();
        let shutdown = async {
            let _ = stopped.await;
        };
        ki_server::connections::serve(listener, ki_server::routes::router(served), limits, counted, shutdown).await;
    });
    Live { addr, base, state, tracker, stop: Some(stop) }
}

/// Serves the catalog's own rows, as `ki serve --database URL` does.
/// One server on the bundled catalog (as `ki serve` makes it on first start: the public
/// export plus our own H200 runs), for the tests that only read it.
pub struct Bundled {
    pub server: Live,
    _database: Database,
}

pub static BUNDLED: LazyLock<Bundled> = LazyLock::new(|| {
    let database = Database::sqlite();
    let server = serve(database.open_with_bundle(), Limits::default());
    Bundled { server, _database: database }
});

pub fn serve(catalog: ki_catalog::Catalog, limits: Limits) -> Live {
    let model = block_on(ki_server::model_from_catalog(&catalog)).expect("the catalog's read model");
    serve_model(model, catalog, limits)
}

impl Live {
    /// A served run's row in export format with its whole manifest (read from the catalog).
    pub fn full_run_row(&self, model: &ReadModel, run: usize) -> serde_json::Map<String, serde_json::Value> {
        block_on(model.full_run_row(&self.state.catalog, run)).expect("the run's row reads")
    }
}

pub fn agent() -> ureq::Agent {
    ureq::Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(Duration::from_secs(30)))
        .build()
        .new_agent()
}

pub struct Reply {
    pub status: u16,
    pub content_type: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", &self.body[..self.body.len().min(500)]))
    }

    /// Asserts an RFC 9457 problem with this status, and returns it.
    pub fn problem(&self, status: u16) -> serde_json::Value {
        assert_eq!(self.status, status, "{}", self.body);
        assert_eq!(self.content_type, "application/problem+json", "status {status}: {}", self.body);
        let problem = self.json();
        assert_eq!(problem["status"], status);
        assert!(problem["detail"].as_str().is_some_and(|d| !d.is_empty()), "no detail: {problem}");
        assert!(problem["requestId"].is_string(), "no request id: {problem}");
        problem
    }
}

pub fn reply(mut response: ureq::http::Response<ureq::Body>) -> Reply {
    let headers: Vec<(String, String)> =
        response.headers().iter().map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string())).collect();
    let content_type = response.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    let body = response.body_mut().with_config().limit(100 * 1024 * 1024).read_to_string().unwrap_or_default();
    Reply { status: response.status().as_u16(), content_type, headers, body }
}

impl Live {
    pub fn get(&self, path: &str) -> Reply {
        reply(agent().get(&format!("{}{path}", self.base)).call().expect("GET answers"))
    }

    pub fn get_with(&self, path: &str, headers: &[(&str, &str)]) -> Reply {
        let mut request = agent().get(&format!("{}{path}", self.base));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        reply(request.call().expect("GET answers"))
    }

    pub fn post(&self, path: &str, content_type: &str, authorization: Option<&str>, body: &str) -> Reply {
        let mut request = agent().post(&format!("{}{path}", self.base)).header("content-type", content_type);
        if let Some(authorization) = authorization {
            request = request.header("authorization", authorization);
        }
        reply(request.send(body).expect("POST answers"))
    }

    /// Sends raw bytes on a new connection and reads until the server closes it (or 10 s).
    pub fn raw(&self, request: &[u8]) -> RawReply {
        let mut stream = TcpStream::connect(self.addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        // The server may answer and close before all is written (a head too large).
        let _ = stream.write_all(request);
        let mut bytes = Vec::new();
        let _ = stream.read_to_end(&mut bytes);
        RawReply::parse(&bytes)
    }
}

/// A response read off a socket.
#[derive(Debug)]
pub struct RawReply {
    pub status: u16,
    pub head: String,
    pub body: String,
}

impl RawReply {
    pub fn parse(bytes: &[u8]) -> RawReply {
        let text = String::from_utf8_lossy(bytes).to_string();
        let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
        let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        RawReply { status, head: head.to_ascii_lowercase(), body: body.to_string() }
    }

    /// Asserts an RFC 9457 problem with this status.
    pub fn assert_problem(&self, status: u16) -> serde_json::Value {
        assert_eq!(self.status, status, "{}\n\n{}", self.head, self.body);
        assert!(self.head.contains("content-type: application/problem+json"), "{}", self.head);
        let problem: serde_json::Value =
            serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {:?}", self.body));
        assert_eq!(problem["status"], status);
        assert!(problem["detail"].as_str().is_some_and(|d| !d.is_empty()));
        problem
    }
}

/// The seed run of the issues (FlashInfer-Bench's gqa paged decode on a B200), in the bundle.
pub const SEED_WORKLOAD_RUN: &str = "01a00b1d-572d-7e7b-a36c-fbdbf71869ae";
