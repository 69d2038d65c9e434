//! A real server on loopback over the shared export, shared by the tests of one binary.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::{Arc, LazyLock};

use ki_catalog::Scope;
use ki_server::AppState;
use ki_server::model::ReadModel;

// One reply type and reader for every server test (the binary declares `mod serving;` too).
pub use crate::serving::{Reply, reply};

pub const SEED_WORKLOAD_RUN: &str = "01a00b1d-572d-7e7b-a36c-fbdbf71869ae";

/// A file of this repository (fixtures/, data/), by its path from the root.
pub fn repository(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

/// The public index's export of 2026-08-16, bundled in data/.
pub fn shared_export() -> PathBuf {
    repository("data/catalog-2026-08-16-0022af0b.jsonl.zst")
}

pub struct TestServer {
    pub base: String,
    pub state: Arc<AppState>,
    pub agent: ureq::Agent,
    /// Runs the server, and the tests' own catalog calls.
    pub runtime: tokio::runtime::Runtime,
    _state_dir: tempfile::TempDir,
}

/// A new API key with these scopes and daily quota; returns its secret.
pub fn key(scopes: &[Scope], quota: u32) -> String {
    let server = &*SERVER;
    server.runtime.block_on(server.state.catalog.create_api_key("route-tests", scopes, quota)).unwrap().1
}

pub static SERVER: LazyLock<TestServer> = LazyLock::new(|| {
    // The rows and the web's state (keys, attestations, submissions) in a scratch SQLite catalog.
    let state_dir = tempfile::tempdir().unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let url = format!("sqlite://{}", state_dir.path().join("state.db").display());
    let catalog = runtime.block_on(ki_catalog::Catalog::open(&url)).expect("a scratch catalog opens");
    // The catalog holds the served rows, as `ki serve`'s does: its search index finds the words.
    runtime
        .block_on(catalog.import_file(&shared_export(), &ki_catalog::ImportOptions::default()))
        .expect("the shared export imports");
    // Served as `ki serve` serves a catalog: the runs' manifests are read from it per page.
    let model: ReadModel = runtime.block_on(ki_server::model_from_catalog(&catalog)).expect("the catalog's read model");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap();
    let base = format!("http://{addr}");
    let state = Arc::new(AppState::new(model, catalog, base.clone()));
    let served = state.clone();
    runtime.spawn(async move {
        let listener = tokio::net::TcpListener::from_std(listener).unwrap();
        axum::serve(listener, ki_server::routes::router(served)).await.unwrap();
    });
    let agent = ureq::Agent::config_builder().http_status_as_error(false).max_redirects(0).build().new_agent();
    TestServer { base, state, agent, runtime, _state_dir: state_dir }
});

pub fn get(path: &str) -> Reply {
    let server = &*SERVER;
    reply(server.agent.get(&format!("{}{path}", server.base)).call().expect("GET answers"))
}

pub fn get_html(path: &str) -> Reply {
    let server = &*SERVER;
    reply(
        server.agent.get(&format!("{}{path}", server.base)).header("accept", "text/html").call().expect("GET answers"),
    )
}

pub fn post(path: &str, content_type: &str, key: Option<&str>, body: &str) -> Reply {
    let server = &*SERVER;
    let mut request = server.agent.post(&format!("{}{path}", server.base)).header("content-type", content_type);
    if let Some(key) = key {
        request = request.header("authorization", &format!("Bearer {key}"));
    }
    reply(request.send(body).expect("POST answers"))
}
