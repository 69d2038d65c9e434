//! The content store (migration 0006) on both backends: contents put and read back by digest,
//! idempotent puts, refusals that write nothing (a digest that does not match, a content over the
//! limit, a malformed digest), exports untouched by it, and the bundled contents stored on first
//! start.

use std::path::Path;

use crate::support::{TestDb, export_text};
use ki_catalog::contents::{self, MAX_CONTENT_BYTES};
use ki_catalog::{CatalogError, Content, ContentRefusal, ImportOptions};
use ki_model::folder_archive::FolderArchive;

fn repository(path: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").join(path)
}

async fn put_and_get(db: TestDb) {
    let catalog = db.open().await;
    let lines = crate::support::lines_of(crate::support::PARENT_TABLES);
    catalog.import_lines(&lines, &ImportOptions::default()).await.unwrap();
    let export_before = export_text(&catalog).await;
    let revision_before = catalog.revision().await.unwrap();

    let source = Content::of("kernel.cu", b"__global__ void k() {}\n".to_vec());
    let binary = Content::of("bytes.bin", (0u8..=255).collect());
    let report = catalog.put_contents(&[source.clone(), binary.clone()]).await.unwrap();
    assert_eq!((report.stored, report.already_held, report.bytes_stored), (2, 0, 23 + 256), "{}", db.name);
    assert_eq!(catalog.content(&source.digest).await.unwrap().as_deref(), Some(&source.bytes[..]));
    assert_eq!(catalog.content(&binary.digest).await.unwrap(), Some(binary.bytes.clone()), "{}: bytes", db.name);
    assert_eq!(catalog.content(&contents::sha256_digest(b"absent")).await.unwrap(), None);
    assert_eq!(catalog.content("not a digest").await.unwrap(), None);
    let held = catalog.contents_held(&[&source.digest, "sha256:00"]).await.unwrap();
    assert!(held.contains(&source.digest) && held.len() == 1);

    // Again (and twice within one put): nothing new is written.
    let again = catalog.put_contents(&[source.clone(), source.clone()]).await.unwrap();
    assert_eq!((again.stored, again.already_held), (0, 2));
    assert_eq!(catalog.contents_count().await.unwrap(), 2);

    // The export format does not see the store.
    assert!(export_text(&catalog).await == export_before, "{}: the export changed", db.name);
    assert_eq!(catalog.revision().await.unwrap(), revision_before);
    catalog.close().await;
}
on_both_backends!(put_and_get);

async fn refusals_write_nothing(db: TestDb) {
    let catalog = db.open().await;
    let good = Content::of("good.json", b"{}".to_vec());
    let mut bad = Content::of("samples/altered.json", b"[1, 2, 3]".to_vec());
    bad.bytes.push(b' ');
    let error = catalog.put_contents(&[good.clone(), bad.clone()]).await.unwrap_err();
    match &error {
        CatalogError::ContentRefused(ContentRefusal::DigestMismatch { origin, claimed, actual }) => {
            assert_eq!((origin.as_str(), claimed), ("samples/altered.json", &bad.digest));
            assert_eq!(actual, &contents::sha256_digest(&bad.bytes));
        }
        other => panic!("{}: {other:?}", db.name),
    }
    let message = error.to_string();
    assert!(message.starts_with("refused, nothing written: samples/altered.json: its sha256 is sha256:"), "{message}");

    let large = Content::of("huge.bin", vec![7u8; MAX_CONTENT_BYTES + 1]);
    let error = catalog.put_contents(&[good.clone(), large.clone()]).await.unwrap_err();
    assert!(
        matches!(&error, CatalogError::ContentRefused(ContentRefusal::TooLarge { digest, .. }) if *digest == large.digest),
        "{error:?}"
    );
    assert!(error.to_string().contains(&large.digest) && error.to_string().contains("16 MiB"), "{error}");

    let malformed = Content { digest: "sha256:ABC".into(), ..good.clone() };
    let error = catalog.put_contents(&[malformed]).await.unwrap_err();
    assert!(error.to_string().contains("\"sha256:ABC\" is not a sha256 digest"), "{error}");

    assert_eq!(catalog.contents_count().await.unwrap(), 0, "{}: a refused put writes nothing", db.name);
    assert_eq!(catalog.content(&good.digest).await.unwrap(), None);
    // The largest allowed content is taken.
    let limit = Content::of("limit.bin", vec![1u8; MAX_CONTENT_BYTES]);
    assert_eq!(catalog.put_contents(&[limit]).await.unwrap().stored, 1);
    catalog.close().await;
}
on_both_backends!(refusals_write_nothing);

/// A first start stores the bundled contents with the bundled rows: the native kernel's
/// source as the repository holds it, a verified solution's document, a bundled run's samples.
async fn bundled_contents_on_first_start(db: TestDb) {
    let catalog = db.open().await;
    assert!(catalog.ensure_bundled_snapshot().await.unwrap().is_some());
    let bundled = contents::bundled_contents().unwrap();
    assert_eq!(catalog.contents_count().await.unwrap(), bundled.len() as u64, "{}", db.name);
    let native = std::fs::read(repository("crates/kernels/cuda/gqa_paged_decode.cu")).unwrap();
    assert_eq!(
        catalog
            .content("sha256:65746453cd17965d9dfe31285a1d61cd4f641b3937e709c7f5979613917cf574")
            .await
            .unwrap()
            .as_deref(),
        Some(&native[..])
    );
    let solution = packed("fixtures/verify-h200-2026-12-01")
        .file("artifacts/52c46cd922f4e42e991e5255d0ef04bd3eba86d8fa3208765c2bac2d91b15cfc.json")
        .unwrap()
        .to_vec();
    assert_eq!(catalog.content(&contents::sha256_digest(&solution)).await.unwrap(), Some(solution));
    let samples =
        packed("fixtures/gqa-paged-decode/realistic").file("samples/flashinfer-notc-0c2489b2.json").unwrap().to_vec();
    assert_eq!(catalog.content(&contents::sha256_digest(&samples)).await.unwrap(), Some(samples));
    // A second start imports nothing and stores nothing.
    assert!(catalog.ensure_bundled_snapshot().await.unwrap().is_none());
    assert_eq!(catalog.put_bundled_contents().await.unwrap().stored, 0);
    catalog.close().await;
}
on_both_backends!(bundled_contents_on_first_start);

/// The bundle in data/ is exactly what its sources in this repository give: every content the
/// bundled rows name that the runner folders and the native kernel hold, nothing else.
#[test]
fn the_contents_bundle_is_built_from_the_repository() {
    let name = contents::BUNDLED_CONTENTS_NAME;
    let bundled = contents::read_bundle(name, &std::fs::read(repository(&format!("data/{name}"))).unwrap()).unwrap();
    let entries = contents::bundle_entries(&repository("")).unwrap();
    assert_eq!(bundled.len(), entries.len());
    // Each entry's path is a file of a runner folder (read from its files.tar.zst) or of the tree.
    let folders: Vec<(&str, FolderArchive)> = contents::BUNDLE_FOLDERS.iter().map(|f| (*f, packed(f))).collect();
    for (content, entry) in bundled.iter().zip(&entries) {
        assert_eq!(content.digest, entry.digest);
        let source =
            match folders.iter().find_map(|(f, a)| entry.path.strip_prefix(*f)?.strip_prefix('/').map(|n| (a, n))) {
                Some((archive, name)) => archive.file(name).unwrap().to_vec(),
                None => std::fs::read(repository(&entry.path)).unwrap(),
            };
        assert_eq!(content.bytes, source, "{}", entry.path);
        assert_eq!(contents::sha256_digest(&content.bytes), content.digest, "{}", entry.path);
    }
    let named: std::collections::HashSet<String> = contents::BUNDLE_ROW_FILES
        .iter()
        .flat_map(|f| contents::named_contents(&ki_model::export::read_export(repository(f)).unwrap()))
        .map(|n| n.digest)
        .collect();
    assert!(bundled.iter().all(|c| named.contains(&c.digest)));
    // The native kernel is among them, and the samples of every bundled run of ours.
    assert!(entries.iter().any(|e| e.path == "crates/kernels/cuda/gqa_paged_decode.cu"));
    let samples = entries.iter().filter(|e| e.path.contains("/samples/")).count();
    assert!(samples >= 288, "{samples} samples files bundled");
}

/// A runner folder whose samples file was altered after the run is refused, naming the file.
#[test]
fn a_folder_with_an_altered_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let from = packed("fixtures/verify-h200-2026-12-01");
    std::fs::write(dir.path().join("catalog-rows.jsonl"), from.file("catalog-rows.jsonl").unwrap()).unwrap();
    let rows = ki_model::export::read_export(dir.path().join("catalog-rows.jsonl")).unwrap();
    let named = contents::named_contents(&rows);
    let first = named.iter().find(|n| n.what == "source").expect("a solution's source is named");
    let target = dir.path().join(&first.address);
    std::fs::create_dir_all(target.parent().unwrap()).unwrap();
    std::fs::write(&target, b"{\"sources\": []}").unwrap();
    let error = contents::read_folder(dir.path()).unwrap_err().to_string();
    assert!(error.contains(target.to_str().unwrap()) && error.contains(&first.digest), "{error}");
    std::fs::write(&target, from.file(&first.address).unwrap()).unwrap();
    let read = contents::read_folder(dir.path()).unwrap();
    assert_eq!(read.found.len(), 1);
    assert!(read.missing.len() + 1 >= named.len());
    // An address that climbs out of the folder is never read.
    assert!(contents::read_folder(&repository("crates")).is_err());
}

/// A runner folder's archive reads as the folder; altered inside, it is refused naming the
/// file; an archive without the rows file is not a runner folder's.
#[test]
fn a_folder_archive_reads_as_the_folder() {
    let packed_path = repository("fixtures/verify-h200-2026-12-01").join(ki_model::folder_archive::PACKED);
    let from_folder = contents::read_folder(&repository("fixtures/verify-h200-2026-12-01")).unwrap();
    let from_archive = contents::read_folder(&packed_path).unwrap();
    assert_eq!(from_folder.found.len(), from_archive.found.len());
    assert!(from_archive.found.len() >= 80, "{}", from_archive.found.len());
    assert!(from_archive.missing.is_empty());

    let dir = tempfile::tempdir().unwrap();
    let archive = packed("fixtures/verify-h200-2026-12-01");
    let named = contents::named_contents(&from_archive.rows);
    let altered = &named.iter().find(|n| n.what == "source").unwrap().address;
    let write = |path: &std::path::Path, skip: Option<&str>, change: Option<&str>| {
        let encoder = zstd::stream::write::Encoder::new(std::fs::File::create(path).unwrap(), 3).unwrap();
        let mut builder = tar::Builder::new(encoder);
        for (name, bytes) in archive.files() {
            if Some(name) == skip {
                continue;
            }
            let bytes = if Some(name) == change { &b"{\"sources\": []}"[..] } else { bytes };
            let mut header = tar::Header::new_gnu();
            header.set_size(bytes.len() as u64);
            header.set_mode(0o644);
            builder.append_data(&mut header, name, bytes).unwrap();
        }
        builder.into_inner().unwrap().finish().unwrap();
    };
    let changed = dir.path().join("changed.tar.zst");
    write(&changed, None, Some(altered));
    let error = contents::read_folder(&changed).unwrap_err().to_string();
    assert!(error.contains(&format!("changed.tar.zst/{altered}")), "{error}");
    let no_rows = dir.path().join("no-rows.tar.zst");
    write(&no_rows, Some(contents::FOLDER_ROWS_FILE), None);
    let error = contents::read_folder(&no_rows).unwrap_err().to_string();
    assert!(error.contains("no-rows.tar.zst") && error.contains("holds no catalog-rows.jsonl"), "{error}");
}

/// A runner output folder kept in fixtures/ as its `files.tar.zst`.
fn packed(folder: &str) -> FolderArchive {
    FolderArchive::read(&repository(folder).join(ki_model::folder_archive::PACKED)).unwrap()
}
