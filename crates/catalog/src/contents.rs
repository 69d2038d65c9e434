//! The content store (migration 0006): the bytes of artifacts the rows name — an
//! implementation's source, a run's raw samples — held by their sha256 digest.
//!
//! A content is written only after its digest is recomputed from its bytes, and only within
//! [`MAX_CONTENT_BYTES`]; a put is one transaction that writes every content or none, and
//! putting a content the store holds writes nothing. The table is not part of the export
//! format: exports and record digests never see it.
//!
//! Contents enter from a runner output folder ([`read_folder`]: the files its
//! `catalog-rows.jsonl` names, each checked against the digest the rows give it), from a single
//! file the catalog's rows name by digest, or from the bundle in `data/`.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::error::{CatalogError, ContentRefusal, DbContext, Result};
use crate::rows::{SqlValue, Storage};
use crate::store::{Backend, Pool, Session};
use ki_model::export::ExportLine;
use ki_model::folder_archive::FolderArchive;
use ki_model::rows::ArtifactRow;

/// The largest content the store takes (16 MiB).
pub const MAX_CONTENT_BYTES: usize = 16 << 20;
// A runner folder's archive refuses a file over its limit, so what it holds fits the store.
const _: () = assert!(ki_model::folder_archive::MAX_FILE_BYTES == MAX_CONTENT_BYTES as u64);

/// The rows file a runner output folder holds.
pub const FOLDER_ROWS_FILE: &str = "catalog-rows.jsonl";

/// Bytes and the digest they are known by, with where they came from (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Content {
    /// `sha256:` and 64 lowercase hex digits.
    pub digest: String,
    pub bytes: Vec<u8>,
    /// A file, or a bundle entry: named in every refusal about this content.
    pub origin: String,
}

impl Content {
    /// A content known by the digest of its bytes.
    pub fn of(origin: impl Into<String>, bytes: Vec<u8>) -> Content {
        Content { digest: sha256_digest(&bytes), bytes, origin: origin.into() }
    }
}

/// `sha256:<hex>` of `bytes`.
pub fn sha256_digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

fn is_sha256_digest(digest: &str) -> bool {
    digest
        .strip_prefix("sha256:")
        .is_some_and(|hex| hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)))
}

/// What a put wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PutReport {
    /// Contents written now.
    pub stored: usize,
    /// Contents the store already held (written again: nothing).
    pub already_held: usize,
    /// Bytes written now.
    pub bytes_stored: u64,
}

/// Checks every content (digest format, digest recomputed, size) before anything is written.
fn check(contents: &[Content]) -> Result<()> {
    for content in contents {
        let refuse = |refusal| Err(CatalogError::ContentRefused(refusal));
        if !is_sha256_digest(&content.digest) {
            return refuse(ContentRefusal::MalformedDigest {
                origin: content.origin.clone(),
                digest: content.digest.clone(),
            });
        }
        if content.bytes.len() > MAX_CONTENT_BYTES {
            return refuse(ContentRefusal::TooLarge {
                origin: content.origin.clone(),
                digest: content.digest.clone(),
                size: content.bytes.len() as u64,
                limit: MAX_CONTENT_BYTES,
            });
        }
        let actual = sha256_digest(&content.bytes);
        if actual != content.digest {
            return refuse(ContentRefusal::DigestMismatch {
                origin: content.origin.clone(),
                claimed: content.digest.clone(),
                actual,
            });
        }
    }
    Ok(())
}

/// Writes the contents the store lacks, in one transaction, after checking every one.
pub(crate) async fn put(pool: &Pool, contents: &[Content]) -> Result<PutReport> {
    check(contents)?;
    let mut session = Session::begin(pool, true).await?;
    let stored_at = ki_model::utc::now_millis();
    let mut report = PutReport::default();
    let mut seen = HashSet::new();
    for content in contents {
        if !seen.insert(content.digest.as_str()) {
            report.already_held += 1;
            continue;
        }
        let written = insert(&mut session, content, &stored_at)
            .await
            .context(|| format!("cannot store the content {} ({})", content.digest, content.origin))?;
        if written == 0 {
            report.already_held += 1;
        } else {
            report.stored += 1;
            report.bytes_stored += content.bytes.len() as u64;
        }
    }
    session.commit().await.context(|| "cannot commit the contents".into())?;
    Ok(report)
}

/// Inserts one content unless its digest is held; the number of rows written (0 or 1).
async fn insert(session: &mut Session, content: &Content, stored_at: &str) -> Result<u64, sqlx::Error> {
    // Bytes are bound directly: the row layer's values carry no binary type.
    let size = content.bytes.len() as i64;
    match session {
        Session::Sqlite(tx) => Ok(sqlx::query(
            "INSERT INTO artifact_contents (digest, size_bytes, content, stored_at) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT (digest) DO NOTHING",
        )
        .bind(&content.digest)
        .bind(size)
        .bind(&content.bytes)
        .bind(stored_at)
        .execute(&mut **tx)
        .await?
        .rows_affected()),
        Session::Postgres(tx) => Ok(sqlx::query(
            "INSERT INTO artifact_contents (digest, size_bytes, content, stored_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (digest) DO NOTHING",
        )
        .bind(&content.digest)
        .bind(size)
        .bind(&content.bytes)
        .bind(stored_at)
        .execute(&mut **tx)
        .await?
        .rows_affected()),
    }
}

/// The bytes held for `digest`, if any.
pub(crate) async fn get(pool: &Pool, digest: &str) -> Result<Option<Vec<u8>>> {
    if !is_sha256_digest(digest) {
        return Ok(None);
    }
    let mut session = Session::begin(pool, false).await?;
    let found: Option<Vec<u8>> = match &mut session {
        Session::Sqlite(tx) => {
            sqlx::query_scalar("SELECT content FROM artifact_contents WHERE digest = ?1")
                .bind(digest)
                .fetch_optional(&mut **tx)
                .await
        }
        Session::Postgres(tx) => {
            sqlx::query_scalar("SELECT content FROM artifact_contents WHERE digest = $1")
                .bind(digest)
                .fetch_optional(&mut **tx)
                .await
        }
    }
    .context(|| format!("cannot read the content {digest}"))?;
    session.rollback().await.context(|| "cannot end a read transaction".into())?;
    Ok(found)
}

/// Which of `digests` the store holds.
pub(crate) async fn held(pool: &Pool, digests: &[&str]) -> Result<HashSet<String>> {
    // A statement a digest, no transaction: a run page asks for one.
    let sql = match pool.backend() {
        Backend::Sqlite => "SELECT digest FROM artifact_contents WHERE digest = ?1",
        Backend::Postgres => "SELECT digest FROM artifact_contents WHERE digest = $1",
    };
    let mut out = HashSet::new();
    for digest in digests.iter().filter(|d| is_sha256_digest(d)) {
        let rows = crate::store::fetch_all(pool, sql, &[SqlValue::Text(Some(digest.to_string()))], &[Storage::Text])
            .await
            .context(|| "cannot read the content store".into())?;
        if !rows.is_empty() {
            out.insert(digest.to_string());
        }
    }
    Ok(out)
}

/// How many contents the store holds.
pub(crate) async fn count(pool: &Pool) -> Result<u64> {
    let mut session = Session::begin(pool, false).await?;
    let rows = session
        .fetch_all("SELECT COUNT(*) FROM artifact_contents", &[], &[Storage::Int])
        .await
        .context(|| "cannot count the content store".into())?;
    session.rollback().await.context(|| "cannot end a read transaction".into())?;
    Ok(match rows.first().and_then(|row| row.first()) {
        Some(SqlValue::Int(Some(count))) => *count as u64,
        _ => 0,
    })
}

/// A content a row names: its digest, its address (relative to the folder the row came
/// from), and the row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NamedContent {
    pub digest: String,
    pub address: String,
    /// `source`, `raw samples`, or an artifact row's kind.
    pub what: String,
    /// The naming row's table and id.
    pub table: String,
    pub row_id: String,
}

/// Every content the rows name: implementations' `manifest.spec.source` (`contentDigest`,
/// `fileName`), artifacts' `contentDigest` and `uri`, runs' raw samples
/// (`run.spec.timing.rawSamples`, `run.spec.evidence.rawSamples`: `digest`, `uri`). Each
/// (digest, address) once, in row order.
pub fn named_contents(lines: &[ExportLine]) -> Vec<NamedContent> {
    let mut out: Vec<NamedContent> = Vec::new();
    let mut push = |line: &ExportLine, digest: Option<&str>, address: Option<&str>, what: &str| {
        let (Some(digest), Some(address)) = (digest, address) else { return };
        if out.iter().any(|n| n.digest == digest && n.address == address) {
            return;
        }
        out.push(NamedContent {
            digest: digest.into(),
            address: address.into(),
            what: what.into(),
            table: line.table.clone(),
            row_id: line.id().into(),
        });
    };
    fn text<'a>(value: Option<&'a Value>, key: &str) -> Option<&'a str> {
        value.and_then(|v| v.get(key)).and_then(Value::as_str)
    }
    for line in lines {
        match line.table.as_str() {
            "implementations" => {
                let source = line.row.get("manifest").and_then(|m| m.pointer("/spec/source"));
                push(line, text(source, "contentDigest"), text(source, "fileName"), "source");
            }
            "artifacts" => {
                let row = line.row.get("contentDigest").and_then(Value::as_str);
                let kind = line.row.get("kind").and_then(Value::as_str).unwrap_or("artifact");
                push(line, row, line.row.get("uri").and_then(Value::as_str), kind);
            }
            "benchmark_runs" => {
                let spec = line.row.get("manifest").and_then(|m| m.pointer("/run/spec"));
                for pointer in ["/timing/rawSamples", "/evidence/rawSamples"] {
                    let reference = spec.and_then(|s| s.pointer(pointer));
                    push(line, text(reference, "digest"), text(reference, "uri"), "raw samples");
                }
            }
            _ => {}
        }
    }
    out
}

/// What a runner output folder holds of the contents its rows name.
#[derive(Debug, Clone)]
pub struct FolderContents {
    /// The folder's rows (`catalog-rows.jsonl`).
    pub rows: Vec<ExportLine>,
    /// Each content the rows name and the folder holds, its digest checked; with the naming
    /// row (the first that names it).
    pub found: Vec<(NamedContent, Content)>,
    /// What the rows name and the folder lacks (an absolute address, or a file not there).
    pub missing: Vec<NamedContent>,
}

/// Reads the contents a runner output folder's rows name, from the folder or from its
/// `.tar.zst` archive ([`FolderArchive`]: a path naming one, or a folder holding only its
/// `files.tar.zst`): each address is taken relative to the folder (an
/// absolute one, or one that climbs out with `..`, is not read), read with a bound of
/// [`MAX_CONTENT_BYTES`], and checked against the digest the row gives it. A file whose digest
/// differs, or that is too large, refuses the whole folder, naming the file.
pub fn read_folder(folder: &Path) -> Result<FolderContents> {
    let not_a_folder = |reason: String| {
        CatalogError::ContentRefused(ContentRefusal::Unreadable { origin: folder.display().to_string(), reason })
    };
    if let Some(packed) = FolderArchive::standing_for(folder, FOLDER_ROWS_FILE) {
        let archive = FolderArchive::read(&packed).map_err(|error| not_a_folder(error.to_string()))?;
        let rows = archive
            .export(FOLDER_ROWS_FILE)
            .ok_or_else(|| not_a_folder(format!("holds no {FOLDER_ROWS_FILE}: not a runner output folder's archive")))?
            .map_err(|error| CatalogError::Snapshot(error.to_string()))?;
        return read_named(rows, |address| {
            archive.file(address).map(|bytes| Ok((bytes.to_vec(), packed.join(address).display().to_string())))
        });
    }
    let rows_path = folder.join(FOLDER_ROWS_FILE);
    if !rows_path.is_file() {
        return Err(not_a_folder(format!("holds no {FOLDER_ROWS_FILE}: not a runner output folder")));
    }
    let rows = ki_model::export::read_export(&rows_path).map_err(|error| CatalogError::Snapshot(error.to_string()))?;
    read_named(rows, |address| {
        let path = relative_path(folder, address)?;
        path.is_file().then(|| read_bounded(&path).map(|bytes| (bytes, path.display().to_string())))
    })
}

/// The contents `rows` name, each fetched by its address (`None`: not there) with the origin
/// that refusals name, and checked against its digest.
fn read_named(
    rows: Vec<ExportLine>,
    fetch: impl Fn(&str) -> Option<Result<(Vec<u8>, String)>>,
) -> Result<FolderContents> {
    let mut found: Vec<(NamedContent, Content)> = Vec::new();
    let mut missing = Vec::new();
    for named in named_contents(&rows) {
        let Some(fetched) = fetch(&named.address) else {
            missing.push(named);
            continue;
        };
        let (bytes, origin) = fetched?;
        let content = Content { digest: named.digest.clone(), bytes, origin };
        check(std::slice::from_ref(&content))?;
        if !found.iter().any(|(_, c)| c.digest == content.digest) {
            found.push((named, content));
        }
    }
    Ok(FolderContents { rows, found, missing })
}

/// `folder/address` when the address stays inside the folder.
fn relative_path(folder: &Path, address: &str) -> Option<PathBuf> {
    let relative = Path::new(address);
    relative.components().all(|c| matches!(c, Component::Normal(_) | Component::CurDir)).then(|| folder.join(relative))
}

/// A file's bytes, refused (naming it) past [`MAX_CONTENT_BYTES`] without reading more.
pub fn read_bounded(path: &Path) -> Result<Vec<u8>> {
    let unreadable = |error: std::io::Error| {
        CatalogError::ContentRefused(ContentRefusal::Unreadable {
            origin: path.display().to_string(),
            reason: format!("cannot read: {error}"),
        })
    };
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let mut bytes = Vec::new();
    file.take(MAX_CONTENT_BYTES as u64 + 1).read_to_end(&mut bytes).map_err(unreadable)?;
    if bytes.len() > MAX_CONTENT_BYTES {
        return Err(CatalogError::ContentRefused(ContentRefusal::TooLarge {
            origin: path.display().to_string(),
            digest: "not computed".into(),
            size: std::fs::metadata(path).map_or(bytes.len() as u64, |m| m.len()),
            limit: MAX_CONTENT_BYTES,
        }));
    }
    Ok(bytes)
}

/// One entry of a contents bundle (`data/artifacts-*.jsonl.zst`): a JSON line per content,
/// its text inline (every bundled content is UTF-8 text: sources and sample JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BundleEntry {
    pub digest: String,
    /// Where it lies in this repository, from the root.
    pub path: String,
    pub content: String,
}

/// Writes a contents bundle: zstd of one [`BundleEntry`] per line, in the order given.
pub fn write_bundle(entries: &[BundleEntry], out: &Path) -> Result<u64> {
    let io_error = |source| CatalogError::Io { path: out.display().to_string(), source };
    let mut text = Vec::new();
    for entry in entries {
        serde_json::to_writer(&mut text, entry).map_err(|error| CatalogError::Export(error.to_string()))?;
        text.push(b'\n');
    }
    let compressed = zstd::encode_all(text.as_slice(), 19).map_err(io_error)?;
    std::fs::write(out, &compressed).map_err(io_error)?;
    Ok(compressed.len() as u64)
}

/// Reads a contents bundle (`name` for messages), each line bounded, each digest checked.
pub fn read_bundle(name: &str, compressed: &[u8]) -> Result<Vec<Content>> {
    let refuse =
        |reason: String| CatalogError::ContentRefused(ContentRefusal::Unreadable { origin: name.into(), reason });
    let decoder = zstd::Decoder::new(compressed).map_err(|error| refuse(format!("cannot decompress: {error}")))?;
    // The largest content, escaped as JSON text, and its digest and path.
    let limit = (2 * MAX_CONTENT_BYTES + 4096) as u64;
    let mut reader = std::io::BufReader::new(decoder.take(32 * MAX_CONTENT_BYTES as u64));
    let mut out = Vec::new();
    let mut line = Vec::new();
    for number in 1.. {
        line.clear();
        let read = std::io::BufRead::read_until(&mut (&mut reader).take(limit), b'\n', &mut line)
            .map_err(|error| refuse(format!("line {number}: cannot read: {error}")))?;
        if read == 0 {
            break;
        }
        if line.last() != Some(&b'\n') && read as u64 == limit {
            return Err(refuse(format!("line {number}: longer than {limit} bytes")));
        }
        let entry: BundleEntry = serde_json::from_slice(&line)
            .map_err(|error| refuse(format!("line {number}: not a bundle entry: {error}")))?;
        let content = Content {
            digest: entry.digest,
            bytes: entry.content.into_bytes(),
            origin: format!("{name}: {}", entry.path),
        };
        check(std::slice::from_ref(&content))?;
        out.push(content);
    }
    Ok(out)
}

/// What [`Catalog::attach`] did.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AttachReport {
    pub put: PutReport,
    /// Contents the given folders' rows name and hold, whose rows the catalog has.
    pub attached: Vec<NamedContent>,
    /// Contents a folder holds whose naming row the catalog lacks (import its rows first).
    pub not_in_catalog: Vec<NamedContent>,
    /// What the rows name and the folders lack.
    pub missing: Vec<NamedContent>,
}

/// The contents bundled in `data/`: the native kernel's source, the verified solutions'
/// sources and the bundled runs' raw samples (data/README.md).
pub const BUNDLED_CONTENTS_NAME: &str = "artifacts-2026-12-01.jsonl.zst";
static BUNDLED_CONTENTS: &[u8] = include_bytes!("../../../data/artifacts-2026-12-01.jsonl.zst");

/// The contents of publications made outside this repository's folders (from device calls'
/// records, by bench/verify/coverage/publish.py), one file of data/ each, beside its rows.
pub const BUNDLED_PUBLICATION_CONTENTS: &[(&str, &[u8])] = &[
    (
        "kernelindex-verify-h100-2026-12-07.contents.jsonl.zst",
        include_bytes!("../../../data/kernelindex-verify-h100-2026-12-07.contents.jsonl.zst"),
    ),
    (
        "kernelindex-verify-h200-2026-12-07.contents.jsonl.zst",
        include_bytes!("../../../data/kernelindex-verify-h200-2026-12-07.contents.jsonl.zst"),
    ),
];

/// Every bundled content, each digest checked, each once (publications share solutions' sources).
pub fn bundled_contents() -> Result<Vec<Content>> {
    let mut contents = read_bundle(BUNDLED_CONTENTS_NAME, BUNDLED_CONTENTS)?;
    let mut seen: HashSet<String> = contents.iter().map(|c| c.digest.clone()).collect();
    for (name, bytes) in BUNDLED_PUBLICATION_CONTENTS {
        contents.extend(read_bundle(name, bytes)?.into_iter().filter(|c| seen.insert(c.digest.clone())));
    }
    Ok(contents)
}

impl crate::Catalog {
    /// Stores contents by digest, in one transaction: every digest is recomputed from the
    /// bytes and every size held to [`MAX_CONTENT_BYTES`] first, and any problem refuses all
    /// of them ([`CatalogError::ContentRefused`], naming the content's origin and digest)
    /// with nothing written. A content already held is not written again.
    pub async fn put_contents(&self, contents: &[Content]) -> Result<PutReport> {
        put(&self.pool, contents).await
    }

    /// The bytes held for `digest` (`sha256:<hex>`), if the store holds them.
    pub async fn content(&self, digest: &str) -> Result<Option<Vec<u8>>> {
        get(&self.pool, digest).await
    }

    /// Which of `digests` the store holds.
    pub async fn contents_held(&self, digests: &[&str]) -> Result<HashSet<String>> {
        held(&self.pool, digests).await
    }

    /// How many contents the store holds.
    pub async fn contents_count(&self) -> Result<u64> {
        count(&self.pool).await
    }

    /// Stores the bundled contents (data/): what a first start does after importing the
    /// bundled rows, and what `ki catalog attach --bundled` does for a catalog made before.
    pub async fn put_bundled_contents(&self) -> Result<PutReport> {
        let contents = tokio::task::spawn_blocking(bundled_contents)
            .await
            .map_err(|error| CatalogError::Export(format!("reading the bundled contents failed: {error}")))??;
        self.put_contents(&contents).await
    }

    /// Stores the contents the catalog's rows name, from runner output folders (the files
    /// their `catalog-rows.jsonl` names, relative to the folder) and single files (whose
    /// digest a catalog row must name as an implementation's source or an artifact). A file
    /// whose digest differs from the one its row gives refuses everything, naming the file;
    /// all is written in one transaction or nothing is.
    pub async fn attach(&self, paths: &[PathBuf]) -> Result<AttachReport> {
        let mut report = AttachReport::default();
        let mut contents = Vec::new();
        for path in paths {
            if path.is_dir() || FolderArchive::is_archive(path) {
                let folder = path.clone();
                let read = tokio::task::spawn_blocking(move || read_folder(&folder))
                    .await
                    .map_err(|error| CatalogError::Export(format!("reading {} failed: {error}", path.display())))??;
                report.missing.extend(read.missing);
                for (named, content) in read.found {
                    if self.export_rows_where(&named.table, "id", &named.row_id).await?.is_empty() {
                        report.not_in_catalog.push(named);
                    } else {
                        report.attached.push(named);
                        contents.push(content);
                    }
                }
            } else {
                let owned = path.clone();
                let bytes = tokio::task::spawn_blocking(move || read_bounded(&owned))
                    .await
                    .map_err(|error| CatalogError::Export(format!("reading {} failed: {error}", path.display())))??;
                let content = Content::of(path.display().to_string(), bytes);
                let Some(named) = self.naming_row(&content.digest, &path.display().to_string()).await? else {
                    return Err(CatalogError::ContentRefused(ContentRefusal::NotNamed {
                        origin: content.origin,
                        digest: content.digest,
                    }));
                };
                report.attached.push(named);
                contents.push(content);
            }
        }
        report.put = self.put_contents(&contents).await?;
        Ok(report)
    }

    /// The row that names `digest` as an artifact or as an implementation's source.
    async fn naming_row(&self, digest: &str, address: &str) -> Result<Option<NamedContent>> {
        let named = |table: &str, row_id: &str, what: &str| NamedContent {
            digest: digest.into(),
            address: address.into(),
            what: what.into(),
            table: table.into(),
            row_id: row_id.into(),
        };
        if let Some(row) = self.rows_where::<ArtifactRow>("contentDigest", digest).await?.first() {
            return Ok(Some(named("artifacts", &row.id, &row.kind)));
        }
        let mut found = None;
        self.for_each_row("implementations", |row| {
            let source = row.get("manifest").and_then(|m| m.pointer("/spec/source/contentDigest"));
            if found.is_none() && source.and_then(Value::as_str) == Some(digest) {
                found = Some(named("implementations", row.get("id").and_then(Value::as_str).unwrap_or(""), "source"));
            }
            Ok(())
        })
        .await?;
        Ok(found)
    }
}

/// What the contents bundle is made from, relative to the repository's root: the bundled row
/// files (only what their rows name is bundled), the runner output folders those rows came
/// from (each kept as its `files.tar.zst`; entries are named by their path in the folder), and
/// single files the rows name by digest (the native kernel's source).
pub const BUNDLE_ROW_FILES: &[&str] =
    &["data/kernelindex-verified-h200-2026-11-30.jsonl.zst", "data/kernelindex-verify-h200-2026-12-01.jsonl.zst"];
pub const BUNDLE_FOLDERS: &[&str] = &[
    "fixtures/gqa-paged-decode/realistic",
    "fixtures/gqa-paged-decode/kv8-realistic",
    "fixtures/verify-h200-2026-12-01",
];
pub const BUNDLE_FILES: &[&str] = &["crates/kernels/cuda/gqa_paged_decode.cu"];

/// The entries of the contents bundle, built from the repository at `root`: every content
/// the bundled rows name that the folders or files hold, each once, in the order found.
pub fn bundle_entries(root: &Path) -> Result<Vec<BundleEntry>> {
    let mut rows = Vec::new();
    for file in BUNDLE_ROW_FILES {
        rows.extend(
            ki_model::export::read_export(root.join(file))
                .map_err(|error| CatalogError::Snapshot(error.to_string()))?,
        );
    }
    let named: HashSet<String> = named_contents(&rows).into_iter().map(|n| n.digest).collect();
    let mut candidates: Vec<(String, Content)> = Vec::new();
    for folder in BUNDLE_FOLDERS {
        for (named, content) in read_folder(&root.join(folder))?.found {
            candidates.push((format!("{folder}/{}", named.address), content));
        }
    }
    for file in BUNDLE_FILES {
        candidates.push((file.to_string(), Content::of(file.to_string(), read_bounded(&root.join(file))?)));
    }
    let mut seen = HashSet::new();
    let mut entries = Vec::new();
    for (path, content) in candidates {
        if !named.contains(&content.digest) || !seen.insert(content.digest.clone()) {
            continue;
        }
        let text = String::from_utf8(content.bytes).map_err(|_| {
            CatalogError::ContentRefused(ContentRefusal::Unreadable {
                origin: path.clone(),
                reason: "is not UTF-8 text, which a bundle entry must be".into(),
            })
        })?;
        entries.push(BundleEntry { digest: content.digest, path, content: text });
    }
    Ok(entries)
}
