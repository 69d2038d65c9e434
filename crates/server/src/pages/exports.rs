//! The current catalog as a download (`GET /api/v1/exports/latest`): the export format
//! (`.jsonl.zst`, what `ki catalog export` writes and `ki catalog import` reads), streamed from
//! a file written once per catalog revision, with its sha256 and row count in headers (and
//! the sha256 as its ETag, so a client that has it gets a 304).

use std::path::PathBuf;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use tokio::io::AsyncReadExt;

use super::{Answer, Shared, catalog_problem};
use crate::AppState;
use crate::problem::Problem;

/// The sha256 (hex) of the body.
pub const SHA256_HEADER: &str = "x-kernelindex-sha256";
/// Rows in the export, every table together.
pub const ROWS_HEADER: &str = "x-kernelindex-rows";

/// The export of one catalog revision, on disk while it is current.
pub struct CachedExport {
    revision: u64,
    path: PathBuf,
    pub sha256: String,
    pub rows: u64,
    pub bytes: u64,
    _directory: tempfile::TempDir,
}

async fn current_export(state: &AppState) -> Result<std::sync::Arc<CachedExport>, Problem> {
    let revision = state.catalog.revision().await.map_err(catalog_problem)?;
    let mut cached = state.exports.lock().await;
    if let Some(export) = cached.as_ref().filter(|e| e.revision == revision) {
        return Ok(export.clone());
    }
    let directory = tempfile::tempdir().map_err(|e| Problem::internal(format!("no room for the export: {e}")))?;
    let path = directory.path().join(format!("kernelindex-{revision}.jsonl.zst"));
    // The catalog's export holds a `dyn Write` across awaits (not `Send`): it runs on a
    // blocking thread of its own.
    let (catalog, target, runtime) = (state.catalog.clone(), path.clone(), tokio::runtime::Handle::current());
    let summary = tokio::task::spawn_blocking(move || runtime.block_on(catalog.export_to(&target)))
        .await
        .map_err(|e| Problem::internal(e.to_string()))?
        .map_err(catalog_problem)?;
    let hashed = path.clone();
    let (sha256, bytes) = tokio::task::spawn_blocking(move || -> std::io::Result<(String, u64)> {
        let mut file = std::fs::File::open(&hashed)?;
        let mut hasher = Sha256::new();
        let bytes = std::io::copy(&mut file, &mut hasher)?;
        Ok((hex::encode(hasher.finalize()), bytes))
    })
    .await
    .map_err(|e| Problem::internal(e.to_string()))?
    .map_err(|e| Problem::internal(format!("cannot read the export back: {e}")))?;
    let export = std::sync::Arc::new(CachedExport {
        revision,
        path,
        sha256,
        rows: summary.rows(),
        bytes,
        _directory: directory,
    });
    *cached = Some(export.clone());
    Ok(export)
}

/// True when `If-None-Match` names `etag` (or is `*`).
pub fn not_modified(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|tag| tag.trim().trim_start_matches("W/"))
        .any(|tag| tag == etag || tag == "*")
}

pub async fn latest(State(state): State<Shared>, headers: HeaderMap) -> Answer {
    if state.catalog.is_empty().await.map_err(catalog_problem)? {
        return Err(Problem::not_found(
            "this index serves an export file, not a catalog: there is no catalog to export (download that file instead)",
        ));
    }
    let export = current_export(&state).await?;
    let etag = format!("\"sha256-{}\"", export.sha256);
    let mut response = if not_modified(&headers, &etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let file = tokio::fs::File::open(&export.path)
            .await
            .map_err(|e| Problem::internal(format!("the export file went away: {e}")))?;
        // Chunks of 64 KiB straight from the file; the export is never held in memory whole.
        let chunks = futures_util::stream::unfold(file, |mut file| async move {
            let mut chunk = vec![0u8; 64 * 1024];
            match file.read(&mut chunk).await {
                Ok(0) => None,
                Ok(n) => {
                    chunk.truncate(n);
                    Some((Ok::<_, std::io::Error>(axum::body::Bytes::from(chunk)), file))
                }
                Err(e) => Some((Err(e), file)),
            }
        });
        let mut response = Response::new(Body::from_stream(chunks));
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("application/zstd"));
        headers.insert(header::CONTENT_LENGTH, HeaderValue::from(export.bytes));
        if let Ok(value) =
            HeaderValue::from_str(&format!("attachment; filename=\"kernelindex-{}.jsonl.zst\"", &export.sha256[..12]))
        {
            headers.insert(header::CONTENT_DISPOSITION, value);
        }
        response
    };
    let headers = response.headers_mut();
    if let Ok(value) = HeaderValue::from_str(&etag) {
        headers.insert(header::ETAG, value);
    }
    if let Ok(value) = HeaderValue::from_str(&export.sha256) {
        headers.insert(SHA256_HEADER, value);
    }
    headers.insert(ROWS_HEADER, HeaderValue::from(export.rows));
    Ok(response)
}
