//! End to end: `ki serve` on a fresh SQLite catalog (the bundled snapshot, which is the
//! shared export), driven by Debian's headless Chromium. Chromium renders each page and
//! its DOM is checked; screenshots land in target/tmp/browser-screenshots/.
//!
//! Without a driver, Chromium cannot click: a GET form is submitted by building the URL
//! the browser would (from the form's own action and field names, read from the DOM),
//! and the attestation form's POST is sent as the browser would encode it, after which
//! Chromium renders the page that shows it. Skipped, with a message, when no
//! `chromium` is installed (.ci/run installs it).

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::{http, ki, start_server};

const SEED_WORKLOAD_RUN: &str = "01a00b1d-572d-7e7b-a36c-fbdbf71869ae";

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser"].iter().find_map(|name| {
        let out = Command::new("sh").arg("-c").arg(format!("command -v {name}")).output().ok()?;
        let path = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (!path.is_empty()).then(|| PathBuf::from(path))
    })
}

struct Browser {
    binary: PathBuf,
    profile: tempfile::TempDir,
    shots: PathBuf,
}

impl Browser {
    fn command(&self) -> Command {
        let mut c = Command::new(&self.binary);
        c.args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--no-first-run",
            "--disable-component-update",
            "--disable-sync",
            "--window-size=1280,2400",
        ])
        .arg(format!("--user-data-dir={}", self.profile.path().display()))
        .stderr(Stdio::null());
        c
    }

    /// The DOM Chromium built for `url` (after running the page's own script).
    fn dom(&self, url: &str) -> String {
        let out = self.command().arg("--dump-dom").arg(url).output().expect("chromium runs");
        assert!(out.status.success(), "chromium --dump-dom {url} failed");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screenshot(&self, url: &str, name: &str) {
        let file = self.shots.join(format!("{name}.png"));
        let _ = std::fs::remove_file(&file);
        let status =
            self.command().arg(format!("--screenshot={}", file.display())).arg(url).status().expect("chromium runs");
        assert!(status.success(), "chromium --screenshot {url} failed");
        let bytes = std::fs::read(&file).expect("a screenshot was written");
        assert!(bytes.starts_with(b"\x89PNG") && bytes.len() > 10_000, "{name}.png is not a real screenshot");
    }
}

/// The href of the first link whose text contains `text`.
fn link_with_text(dom: &str, text: &str) -> Option<String> {
    let at = dom.find(text)?;
    let open = dom[..at].rfind("<a ")?;
    let tag_end = open + dom[open..].find('>')?;
    let tag = &dom[open..tag_end];
    let href_at = tag.find("href=\"")? + 6;
    let href = &tag[href_at..href_at + tag[href_at..].find('"')?];
    Some(href.replace("&amp;", "&"))
}

fn form_field_names(dom: &str, action: &str) -> Vec<String> {
    let start = dom.find(&format!("action=\"{action}\"")).expect("the form is on the page");
    let end = start + dom[start..].find("</form>").unwrap();
    dom[start..end]
        .match_indices("name=\"")
        .map(|(i, _)| {
            let rest = &dom[start + i + 6..end];
            rest[..rest.find('"').unwrap()].to_string()
        })
        .collect()
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

#[test]
fn a_browser_reads_dossiers_follows_links_resolves_and_attests() {
    let Some(binary) = chromium() else {
        eprintln!("SKIPPED: no chromium on PATH (apt-get install -y chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let database = format!("sqlite://{}", dir.path().join("kernelindex.db").display());
    let created = ki()
        .args(["admin", "key", "create", "--label", "browser-e2e", "--scope", "attest", "--database", &database])
        .output()
        .unwrap();
    assert!(created.status.success(), "{}", String::from_utf8_lossy(&created.stderr));
    let secret = String::from_utf8(created.stdout).unwrap().trim().to_string();
    assert!(secret.starts_with("ki_") && secret.len() > 40);

    let server = start_server(dir.path(), &database);
    let base = format!("http://{}", server.addr);
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let browser = Browser { binary, profile: tempfile::tempdir().unwrap(), shots };

    // The run dossier: every section of the seed page.
    let run_url = format!("{base}/runs/{SEED_WORKLOAD_RUN}");
    let dossier = browser.dom(&run_url);
    for section in [
        "Primary measurement",
        "Identity",
        "Correctness",
        "Workload",
        "Measurements",
        "Protocol",
        "Environment",
        "Artifacts",
        "Replications and notes",
        "Canonical manifest",
        "Cite this record",
        "Report an issue",
    ] {
        assert!(dossier.contains(&format!(">{section}</h2>")), "dossier lacks {section}");
    }
    for fact in [
        "19.5 µs",
        "Rank 1 of 1",
        "flashinfer_wrapper_78fd04",
        "FlashInfer-Bench",
        "NVIDIA B200 (unknown)",
        "× reference",
        "Show manifest",
        "BibTeX",
    ] {
        assert!(dossier.contains(fact), "dossier lacks {fact}");
    }
    browser.screenshot(&run_url, "run-dossier");

    // The operation link.
    let operation_href = link_with_text(&dossier, "All results for").expect("an operation link");
    let operation = browser.dom(&format!("{base}{operation_href}"));
    for part in ["Current records per workload", "Leaderboard", "Sweep", "<svg", "Implementations", "Semantics"] {
        assert!(operation.contains(part), "operation page lacks {part}");
    }
    assert!(operation.contains(&format!("/runs/{SEED_WORKLOAD_RUN}")), "the operation page lists the seed run");
    browser.screenshot(&format!("{base}{operation_href}"), "operation");

    // "Compare with #1" from a run that is not #1 (the seed run is alone in its group,
    // so take the #2 of the largest group of the busiest operation).
    let (_, _, list) = http(&server.addr, "GET", "/api/v1/operations", "text/plain", "").unwrap();
    let list: serde_json::Value = serde_json::from_str(&list).unwrap();
    let busiest = list["operations"][0]["href"].as_str().unwrap().to_string();
    let (_, _, op_json) = http(&server.addr, "GET", &format!("/api/v1{busiest}"), "text/plain", "").unwrap();
    let op_json: serde_json::Value = serde_json::from_str(&op_json).unwrap();
    let entries = op_json["leaderboard"]["entries"].as_array().unwrap();
    assert!(entries.len() >= 2, "the busiest operation's leaderboard has a #2");
    let second = browser.dom(&format!("{base}{}", entries[1]["href"].as_str().unwrap()));
    let compare_href = link_with_text(&second, "Compare with #1").expect("a Compare with #1 link");
    let compare = browser.dom(&format!("{base}{compare_href}"));
    for id in [entries[0]["id"].as_str().unwrap(), entries[1]["id"].as_str().unwrap()] {
        assert!(compare.contains(&format!("/runs/{id}")), "the comparison lacks {id}");
    }
    assert!(compare.contains("Markdown") && compare.contains("CSV"));
    browser.screenshot(&format!("{base}{compare_href}"), "compare");

    // Resolve the seed's workload from the form.
    let resolve_form = browser.dom(&format!("{base}/resolve"));
    let fields = form_field_names(&resolve_form, "/resolve");
    assert_eq!(fields, ["operation", "axes", "dtypes", "hardware", "framework"]);
    let values = [
        "gqa_paged_decode_h32_kv4_d128_ps1",
        "batch_size=16, num_pages=1070, len_indptr=17, num_kv_indices=1020",
        "",
        "NVIDIA B200",
        "",
    ];
    let query: Vec<String> = fields.iter().zip(values).map(|(f, v)| format!("{f}={}", encode(v))).collect();
    let resolve_url = format!("{base}/resolve?{}", query.join("&"));
    let answer = browser.dom(&resolve_url);
    assert!(answer.contains("Answer: exact"), "resolve did not answer exact");
    let first_link = answer.find(&format!("/runs/{SEED_WORKLOAD_RUN}")).expect("the seed run is in the answer");
    assert!(answer[..first_link].matches("/runs/").count() == 0, "the seed run is listed first");
    browser.screenshot(&resolve_url, "resolve");

    // File an attestation through the run page's form, with the key.
    let attest_fields = form_field_names(&dossier, &format!("/runs/{SEED_WORKLOAD_RUN}/attestations"));
    assert_eq!(attest_fields, ["apiKey", "kind", "observedNs", "evidenceUrl", "note"]);
    let form = format!(
        "apiKey={}&kind=reproduced&observedNs=19600&evidenceUrl={}&note={}",
        encode(&secret),
        encode("https://example.org/e2e-log"),
        encode("Reproduced on a B200 <b>bold</b>")
    );
    let (status, head, _) = http(
        &server.addr,
        "POST",
        &format!("/runs/{SEED_WORKLOAD_RUN}/attestations"),
        "application/x-www-form-urlencoded",
        &form,
    )
    .unwrap();
    assert_eq!(status, 303, "{head}");
    assert!(head.to_lowercase().contains(&format!("location: /runs/{SEED_WORKLOAD_RUN}#replications")));
    let after = browser.dom(&run_url);
    assert!(after.contains("Reproduced</strong> by browser-e2e"), "the attestation is not shown");
    assert!(after.contains("Reproduced on a B200 &lt;b&gt;bold&lt;/b&gt;"), "the note is not escaped");
    assert!(after.contains("19.6 µs"));
    assert!(after.contains("evidence: reported"), "an attestation never changes the evidence level");
    browser.screenshot(&format!("{run_url}#replications"), "run-after-attestation");

    // A wrong key is refused and nothing is added.
    let bad = form.replace(&encode(&secret), "ki_wrong");
    let (status, _, _) = http(
        &server.addr,
        "POST",
        &format!("/runs/{SEED_WORKLOAD_RUN}/attestations"),
        "application/x-www-form-urlencoded",
        &bad,
    )
    .unwrap();
    assert_eq!(status, 401);
}
