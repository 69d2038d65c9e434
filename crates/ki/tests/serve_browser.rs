//! End to end: `ki serve` on a fresh SQLite catalog (the bundled snapshot, which is the
//! shared export), driven by Debian's headless Chromium. Chromium renders each page and
//! its DOM is checked; screenshots land in target/tmp/browser-screenshots/.
//!
//! Without a driver, Chromium cannot click: a GET form is submitted by building the URL
//! the browser would (from the form's own action and field names, read from the DOM),
//! and the attestation form's POST is sent as the browser would encode it, after which
//! Chromium renders the page that shows it. What the DOM cannot tell (layout at a phone's
//! width) is asked of a page over the DevTools protocol ([`Devtools`]). Skipped, with a
//! message, when no `chromium` is installed (.ci/run installs it).

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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
    let database = common::bundled_sqlite(dir.path(), "kernelindex.db");
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

/// One Chromium page driven over the DevTools protocol.
struct Devtools {
    chromium: Child,
    page: Socket,
    _profile: tempfile::TempDir,
}

impl Devtools {
    fn start(binary: &Path) -> Devtools {
        let profile = tempfile::tempdir().unwrap();
        let mut chromium = Command::new(binary)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-port=0",
            ])
            .arg(format!("--user-data-dir={}", profile.path().display()))
            .arg("about:blank")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("chromium starts");
        let mut stderr = BufReader::new(chromium.stderr.take().unwrap());
        let mut line = String::new();
        let endpoint = loop {
            line.clear();
            assert!(stderr.read_line(&mut line).unwrap() > 0, "chromium exited before naming its DevTools endpoint");
            if let Some(at) = line.find("ws://") {
                break line[at + "ws://".len()..].trim().to_string();
            }
        };
        // Chromium goes on writing to stderr; a full pipe would stall it.
        std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
        let (host, browser_path) = endpoint.split_once('/').expect("host/devtools/browser/…");
        let mut browser = Socket::connect(host, &format!("/{browser_path}"));
        let targets = browser.call("Target.getTargets", serde_json::json!({}));
        let page = targets["targetInfos"].as_array().unwrap().iter().find(|t| t["type"] == "page").expect("a page");
        let page = Socket::connect(host, &format!("/devtools/page/{}", page["targetId"].as_str().unwrap()));
        Devtools { chromium, page, _profile: profile }
    }

    fn evaluate(&mut self, expression: &str) -> serde_json::Value {
        let answer =
            self.page.call("Runtime.evaluate", serde_json::json!({ "expression": expression, "returnByValue": true }));
        assert!(answer.get("exceptionDetails").is_none(), "{expression}: {answer}");
        answer["result"]["value"].clone()
    }

    /// Opens `url` in a viewport `width` px wide (as a phone when narrow) and waits for its load.
    fn open(&mut self, url: &str, width: u32) {
        let metrics =
            serde_json::json!({ "width": width, "height": 900, "deviceScaleFactor": 1, "mobile": width < 600 });
        self.page.call("Emulation.setDeviceMetricsOverride", metrics);
        self.page.call("Page.navigate", serde_json::json!({ "url": url }));
        let loaded = format!("document.readyState === 'complete' && location.href === {}", serde_json::json!(url));
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.evaluate(&loaded) != true {
            assert!(Instant::now() < deadline, "{url} did not load");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The page's layout width and the viewport's, in CSS px.
    fn widths(&mut self) -> (u64, u64) {
        let widths = self.evaluate("[document.documentElement.scrollWidth, document.documentElement.clientWidth]");
        (widths[0].as_u64().unwrap(), widths[1].as_u64().unwrap())
    }
}

impl Drop for Devtools {
    fn drop(&mut self) {
        let _ = self.chromium.kill();
        let _ = self.chromium.wait();
    }
}

/// A WebSocket to one DevTools endpoint on loopback, framed by hand: the test sends and
/// reads a few small text messages, which needs no crate.
struct Socket {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    next_id: u64,
}

impl Socket {
    fn connect(host: &str, path: &str) -> Socket {
        let stream = TcpStream::connect(host).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        let mut writer = stream.try_clone().unwrap();
        write!(
            writer,
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: a2VybmVsaW5kZXgtdGVzdA==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .unwrap();
        let mut reader = BufReader::new(stream);
        let mut head = String::new();
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header).unwrap() == 0 || header == "\r\n" {
                break;
            }
            head.push_str(&header);
        }
        assert!(head.starts_with("HTTP/1.1 101"), "no WebSocket upgrade for {path}: {head}");
        Socket { reader, writer, next_id: 0 }
    }

    /// One final, masked text frame (a client masks every frame it sends).
    fn send(&mut self, text: &str) {
        let payload = text.as_bytes();
        let mask = [0x6b, 0x69, 0x21, 0x2a];
        let mut frame = vec![0x81];
        match payload.len() {
            n if n < 126 => frame.push(0x80 | n as u8),
            n if n <= 0xffff => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(n as u16).to_be_bytes());
            }
            n => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(n as u64).to_be_bytes());
            }
        }
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.writer.write_all(&frame).unwrap();
    }

    /// The next whole text message (a server's frames are not masked).
    fn receive(&mut self) -> String {
        let mut message = Vec::new();
        loop {
            let mut head = [0u8; 2];
            self.reader.read_exact(&mut head).unwrap();
            let length = match head[1] & 0x7f {
                126 => {
                    let mut bytes = [0u8; 2];
                    self.reader.read_exact(&mut bytes).unwrap();
                    u16::from_be_bytes(bytes) as usize
                }
                127 => {
                    let mut bytes = [0u8; 8];
                    self.reader.read_exact(&mut bytes).unwrap();
                    u64::from_be_bytes(bytes) as usize
                }
                n => n as usize,
            };
            let mut payload = vec![0u8; length];
            self.reader.read_exact(&mut payload).unwrap();
            match head[0] & 0x0f {
                0x0 | 0x1 => message.extend_from_slice(&payload),
                0x8 => panic!("chromium closed the DevTools connection"),
                _ => continue, // ping, pong
            }
            if head[0] & 0x80 != 0 {
                return String::from_utf8(message).unwrap();
            }
        }
    }

    /// Calls a protocol method and returns its result; events on the way are dropped.
    fn call(&mut self, method: &str, params: serde_json::Value) -> serde_json::Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&serde_json::json!({ "id": id, "method": method, "params": params }).to_string());
        loop {
            let message: serde_json::Value = serde_json::from_str(&self.receive()).unwrap();
            if message["id"] == id {
                assert!(message.get("error").is_none(), "{method}: {message}");
                return message["result"].clone();
            }
        }
    }
}

/// The hrefs of the links to run dossiers in `dom`, in page order.
fn run_links(dom: &str) -> Vec<String> {
    dom.match_indices("href=\"/runs/")
        .map(|(at, _)| {
            let rest = &dom[at + "href=\"".len()..];
            rest[..rest.find('"').unwrap()].to_string()
        })
        .collect()
}

#[test]
fn a_browser_searches_follows_the_answer_to_a_dossier_and_a_comparison_and_reads_gpu_and_model_pages() {
    let Some(binary) = chromium() else {
        eprintln!("SKIPPED: no chromium on PATH (apt-get install -y chromium)");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let database = common::bundled_sqlite(dir.path(), "kernelindex.db");
    let server = start_server(dir.path(), &database);
    let base = format!("http://{}", server.addr);
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("browser-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let browser = Browser { binary: binary.clone(), profile: tempfile::tempdir().unwrap(), shots };

    // The home page's search box, submitted as the browser would.
    let home = browser.dom(&format!("{base}/"));
    assert_eq!(form_field_names(&home, "/"), ["q"], "the site's search form");
    let query = "gqa decode gpu:h200 batch_size=16";
    let search_path = format!("/?q={}", encode(query));
    let results = browser.dom(&format!("{base}{search_path}"));
    let answer_at = results.find("<section class=\"answer\"").expect("the results lead with a ranked answer");
    let answer = &results[answer_at..answer_at + results[answer_at..].find("</section>").unwrap()];
    for part in ["Answer: ", "Fastest per comparison group", "NVIDIA H200", "batch_size = 16"] {
        assert!(answer.contains(part), "the answer lacks {part}");
    }
    let first_href = run_links(answer).into_iter().next().expect("the answer links its #1 run");

    // The API gives the same answer; its first group's #2 is the run to compare with.
    let (status, _, api) =
        http(&server.addr, "GET", &format!("/api/v1/search?q={}", encode(query)), "text/plain", "").unwrap();
    assert_eq!(status, 200);
    let api: serde_json::Value = serde_json::from_str(&api).unwrap();
    let fastest = api["answer"]["cohorts"][0]["fastest"].as_array().expect("the answer's first group");
    let first_id = fastest[0]["runId"].as_str().unwrap();
    assert_eq!(first_href, format!("/runs/{first_id}"), "the page's first run is the API's #1");
    assert!(fastest.len() >= 2, "the first group has a #2 to compare with");
    let second_id = fastest[1]["runId"].as_str().unwrap();

    // The #1's dossier.
    let dossier = browser.dom(&format!("{base}{first_href}"));
    for section in ["Primary measurement", "Identity", "Measurements", "Protocol", "Environment", "Artifacts"] {
        assert!(dossier.contains(&format!(">{section}</h2>")), "the dossier lacks {section}");
    }
    assert!(dossier.contains("Rank 1 of "), "the answer's first run is #1 of its group");
    assert!(dossier.contains("NVIDIA H200"));
    assert!(dossier.contains("This run holds #1 in its comparison group."));
    let level = fastest[0]["trust"].as_str().unwrap();
    assert!(
        dossier.contains(&format!("class=\"badge evidence ev-{level}\">evidence: {level}")),
        "the evidence badge carries its level's colour"
    );

    // The #2's dossier compares with the #1: both listed, the #1 first, in one group.
    let second = browser.dom(&format!("{base}/runs/{second_id}"));
    let compare_href = link_with_text(&second, "Compare with #1").expect("the #2 links a comparison with #1");
    let compare = browser.dom(&format!("{base}{compare_href}"));
    let runs = run_links(&compare);
    assert_eq!(runs.iter().position(|r| r.ends_with(first_id)), Some(0), "the comparison lists #1 first: {runs:?}");
    assert!(runs.iter().any(|r| r.ends_with(second_id)), "the comparison lists the #2");
    assert!(compare.contains("All runs share one comparison group"));
    assert!(compare.contains("<svg class=\"bar\""), "speed bars");
    browser.screenshot(&format!("{base}{compare_href}"), "compare-search");

    // Source: the search finds our native kernel; its implementation page shows the CUDA source
    // highlighted on the server, with numbered lines, and the raw text is the same file.
    let found = browser.dom(&format!("{base}/?q=kernelindex-native"));
    let at = found.find("href=\"/implementations/kernelindex-native").expect("the search finds the native kernel");
    let implementation_href = found[at + "href=\"".len()..].split('"').next().unwrap().to_string();
    let implementation = browser.dom(&format!("{base}{implementation_href}"));
    assert!(implementation.contains("<figure class=\"source\""), "the implementation page shows its source");
    assert!(implementation.contains("<pre class=\"source\">"));
    assert!(implementation.contains("class=\"hl-"), "the source is highlighted");
    assert!(implementation.contains("gqa_paged_decode"), "the kernel's own code is shown");
    let (status, _, raw) =
        http(&server.addr, "GET", &format!("{implementation_href}/source"), "text/plain", "").unwrap();
    assert_eq!(status, 200);
    assert_eq!(raw, include_str!("../../kernels/cuda/gqa_paged_decode.cu"), "the raw source is the tree's .cu");
    browser.screenshot(&format!("{base}{implementation_href}"), "implementation-source");

    // The GPU page and a model page, with their sections.
    let gpu = browser.dom(&format!("{base}/gpus/nvidia-h200"));
    for section in ["Activity", "Evidence mix", "Best runs per operation"] {
        assert!(gpu.contains(&format!(">{section}</h2>")), "the GPU page lacks {section}");
    }
    assert!(gpu.contains("<h1>NVIDIA H200</h1>"));
    assert!(gpu.contains("class=\"badge ev-verified\""), "verified runs on the H200, shown in their colour");
    let (_, _, models) = http(&server.addr, "GET", "/api/v1/models", "text/plain", "").unwrap();
    let models: serde_json::Value = serde_json::from_str(&models).unwrap();
    let model =
        models["models"].as_array().unwrap().iter().find(|m| m["measured"].as_u64() > Some(0)).expect("a model");
    let model_href = model["href"].as_str().unwrap();
    let model_page = browser.dom(&format!("{base}{model_href}"));
    for section in ["Best kernels per operation and GPU", "Not measured"] {
        assert!(model_page.contains(&format!(">{section}</h2>")), "the model page lacks {section}");
    }
    assert!(model_page.contains(&format!("<h1>{}</h1>", model["name"].as_str().unwrap())));
    assert!(!run_links(&model_page).is_empty(), "the model page links its best runs");

    // At a phone's width no page is wider than the screen: wide tables scroll inside
    // themselves. The operation page, with its tables and charts, first.
    let operation_href =
        answer[answer.find("href=\"/operations/").unwrap() + "href=\"".len()..].split('"').next().unwrap().to_string();
    let mut page = Devtools::start(&binary);
    for path in [
        operation_href.as_str(),
        search_path.as_str(),
        first_href.as_str(),
        compare_href.as_str(),
        "/gpus/nvidia-h200",
        model_href,
    ] {
        page.open(&format!("{base}{path}"), 400);
        let (layout, viewport) = page.widths();
        assert_eq!(viewport, 400, "{path}: the viewport is a phone's");
        assert!(layout <= viewport, "{path} is {layout} px wide at 400 px");
    }
    page.open(&format!("{base}{operation_href}"), 1280);
    assert_eq!(page.widths().1, 1280);
    let sticky = page.evaluate("getComputedStyle(document.querySelector('thead th')).position");
    assert_eq!(sticky, "sticky", "table headers stay in view on a wide screen");
}
