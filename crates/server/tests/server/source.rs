//! Kernel source and raw samples from the catalog's content store: the implementation page's
//! highlighted source (the native `.cu`, a verified Solution's files), the raw endpoint, the JSON
//! twin, the dossier's histogram and source link on the bundled catalog (both backends); a
//! hostile source shown escaped and a revision's diff on a catalog built with two revisions.

use ki_catalog::Content;
use ki_server::connections::Limits;
use ki_server::model::CatalogRow;
use serde_json::Value;

use crate::common::repository;
use crate::serving::{Database, Live, block_on, serve, serve_rows};

const NATIVE: &str = "kernelindex-native-35c1f6";
const SOLUTION: &str = "gpt-5.2-gemm-n128-k2048-cuda-optimized-r7-c0-high-5f7dd244-3f6206";

fn bundled_pages(database: Database) {
    let live = serve(database.open_with_bundle(), Limits::default());
    let native_source = std::fs::read_to_string(repository("crates/kernels/cuda/gqa_paged_decode.cu")).unwrap();

    // The native kernel, highlighted, numbered and anchored.
    let page = live.get(&format!("/implementations/{NATIVE}"));
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.body.contains(r#"<section id="source""#), "{}: no source section", database.name);
    assert!(page.body.contains(r#"id="f0-L1""#) && page.body.contains(r##"href="#f0-L1""##));
    let lines = native_source.lines().count();
    assert!(
        page.body.contains(&format!(r#"id="f0-L{lines}""#))
            && !page.body.contains(&format!(r#"id="f0-L{}""#, lines + 1))
    );
    assert!(page.body.contains("hl-comment"), "no highlighted comment");
    assert!(page.body.contains("hl-keyword") && page.body.contains("hl-storage"));
    assert!(!page.body.contains(" style=\""), "no inline style");

    // The raw text, byte for byte.
    let raw = live.get(&format!("/implementations/{NATIVE}/source"));
    assert_eq!(raw.status, 200);
    assert_eq!(raw.content_type, "text/plain; charset=utf-8");
    assert_eq!(raw.header("x-content-type-options"), Some("nosniff"));
    assert!(raw.body == native_source, "{}: the raw source differs from the file", database.name);

    // The JSON twins carry the source.
    let api = live.get(&format!("/api/v1/implementations/{NATIVE}/source")).json();
    assert_eq!(api["held"], true);
    assert_eq!(api["form"], "file");
    assert_eq!(api["files"][0]["path"], "gqa_paged_decode.cu");
    assert_eq!(api["files"][0]["language"], "C++");
    assert!(api["files"][0]["content"] == Value::String(native_source.clone()));
    let implementation = live.get(&format!("/api/v1/implementations/{NATIVE}")).json();
    assert_eq!(implementation["source"]["digest"], api["digest"]);

    // A verified Solution: each of its files, and each raw.
    let page = live.get(&format!("/implementations/{SOLUTION}"));
    for file in ["kernel.cu", "kernel.h", "main.cpp"] {
        assert!(page.body.contains(&format!("<code>{file}</code>")), "{file} not shown");
    }
    let api = live.get(&format!("/api/v1/implementations/{SOLUTION}/source")).json();
    assert_eq!(api["form"], "solution");
    let main = api["files"].as_array().unwrap().iter().find(|f| f["path"] == "main.cpp").unwrap();
    let raw = live.get(&format!("/implementations/{SOLUTION}/source?file=main.cpp"));
    assert_eq!(raw.status, 200);
    assert!(Value::String(raw.body.clone()) == main["content"]);
    live.get(&format!("/implementations/{SOLUTION}/source?file=absent.cu")).problem(404);
    live.get("/implementations/torch-matmul-cublas-51022a/source").problem(404);

    // One revision: no earlier one.
    let diff = live.get(&format!("/implementations/{NATIVE}/diff"));
    assert_eq!(diff.status, 200);
    assert!(diff.body.contains("there is no earlier one"), "{}", diff.body);

    // A bundled verified run with samples: its histogram, and the link to its source.
    let run = native_run(&live);
    let dossier = live.get(&format!("/runs/{run}"));
    assert!(dossier.body.contains(r#"class="chart histogram""#), "{}: no histogram", database.name);
    for mark in ["mark median", "mark p05", "mark p95"] {
        assert!(dossier.body.contains(mark), "{mark}");
    }
    assert!(dossier.body.contains(&format!(r##"href="/implementations/{NATIVE}#source""##)));
    let json = live.get(&format!("/api/v1/runs/{run}")).json();
    let samples = &json["samples"];
    assert_eq!(samples["valuesHeld"], true);
    assert_eq!(samples["series"], "inGraphPerCall");
    assert_eq!(samples["histogram"]["count"], samples["count"], "every sample the manifest counts is drawn");
    let bins: u64 = samples["histogram"]["bins"].as_array().unwrap().iter().map(|b| b[2].as_u64().unwrap()).sum();
    assert_eq!(Some(bins), samples["count"].as_u64());
    let median = samples["histogram"]["median"].as_f64().unwrap();
    let recorded = json["manifest"]["run"]["spec"]["timing"]["latencyNs"]["median"].as_f64().unwrap();
    assert!((median - recorded).abs() <= 1.0, "median {median} against the manifest's {recorded}");
    assert!(dossier.body.contains(&format!("{} samples", samples["count"])));
}

/// A passed native run of the bundled catalog.
fn native_run(live: &Live) -> String {
    let page = live.get(&format!("/api/v1/implementations/{NATIVE}")).json();
    page["runs"].as_array().unwrap().iter().find_map(|r| r["id"].as_str().map(str::to_string)).expect("a native run")
}

#[test]
fn bundled_source_and_samples_sqlite() {
    bundled_pages(Database::sqlite());
}

#[test]
fn bundled_source_and_samples_postgres() {
    bundled_pages(Database::postgres());
}

/// The native implementation row of the bundled runs, as a new revision `slug` whose source
/// is `source`, created at `created_at`.
fn revision(template: &CatalogRow, slug: &str, id: &str, created_at: &str, source: &str) -> CatalogRow {
    let mut row = template.row.clone();
    row.insert("id".into(), id.into());
    row.insert("slug".into(), slug.into());
    row.insert("createdAt".into(), created_at.into());
    row.insert("sourceRevision".into(), format!("0.1.0+{slug}").into());
    row.insert("implementationDigest".into(), ki_catalog::contents::sha256_digest(slug.as_bytes()).into());
    let manifest = row.get_mut("manifest").unwrap();
    manifest["spec"]["source"] = serde_json::json!({
        "contentDigest": ki_catalog::contents::sha256_digest(source.as_bytes()),
        "fileName": "hostile.cu",
        "sizeBytes": source.len(),
    });
    CatalogRow { table: "implementations".into(), row }
}

#[test]
fn hostile_source_is_escaped_and_revisions_diff() {
    let old = "// revision one\nint kept = 1;\nint changed = 2;\n";
    let new = "// revision two </pre><script>alert(1)</script> <b>bold</b>\nint kept = 1;\nint changed = 3;\nchar *s = \"</code><img src=x onerror=alert(1)>\";\n";
    let mut rows =
        ki_server::rows_from_export(&repository("data/kernelindex-verified-h200-2026-11-30.jsonl.zst")).unwrap();
    let template = rows.iter().find(|r| r.table == "implementations" && r.row["slug"] == NATIVE).unwrap().clone();
    rows.push(revision(&template, "hostile-one", "0198a000-0000-7000-8000-000000000001", "2026-12-01T00:00:00Z", old));
    rows.push(revision(&template, "hostile-two", "0198a000-0000-7000-8000-000000000002", "2026-12-01T01:00:00Z", new));

    let database = Database::sqlite();
    let catalog = database.open();
    block_on(
        catalog
            .put_contents(&[Content::of("old", old.as_bytes().to_vec()), Content::of("new", new.as_bytes().to_vec())]),
    )
    .unwrap();
    let live = serve_rows(rows, catalog, Limits::default());

    let page = live.get("/implementations/hostile-two");
    assert_eq!(page.status, 200, "{}", page.body);
    let listing = &page.body[page.body.find(r#"<section id="source""#).unwrap()..];
    assert!(listing.contains("&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt; &lt;b&gt;bold&lt;/b&gt;"), "{listing}");
    assert!(listing.contains("&lt;/code&gt;&lt;img src=x onerror=alert(1)&gt;"));
    assert!(!listing.contains("<script>") && !listing.contains("<b>") && !listing.contains("<img"));
    let raw = live.get("/implementations/hostile-two/source");
    assert_eq!(raw.content_type, "text/plain; charset=utf-8");
    assert_eq!(raw.body, new);

    // hostile-two follows hostile-one (same project, operation and name; later createdAt); the
    // bundled native revision, created earlier, precedes both.
    let diff = live.get("/api/v1/implementations/hostile-two/diff").json();
    assert_eq!(diff["previous"]["label"], "hostile-one");
    assert_eq!(diff["files"][0]["status"], "changed");
    let unified = diff["files"][0]["unified"].as_str().unwrap();
    assert!(
        unified.contains("-int changed = 2;\n+int changed = 3;\n") && unified.contains(" int kept = 1;\n"),
        "{unified}"
    );
    assert!(unified.starts_with("--- a/hostile.cu\n+++ b/hostile.cu\n@@ "), "{unified}");
    let page = live.get("/implementations/hostile-two/diff");
    assert!(page.body.contains(r#"<span class="diff-del">-int changed = 2;</span>"#), "{}", page.body);
    assert!(page.body.contains(r#"<span class="diff-add">+int changed = 3;</span>"#));
    assert!(page.body.contains("&lt;/pre&gt;&lt;script&gt;") && !page.body.contains("<script>alert"));
    let first = live.get("/api/v1/implementations/hostile-one/diff").json();
    assert_eq!(first["previous"]["label"], NATIVE);
    assert!(first["explanation"].as_str().unwrap().contains("does not hold the earlier revision's source"), "{first}");
}
