//! Search in a real browser (issue 34): Debian's headless Chromium, driven over the DevTools
//! protocol, opens the home page of a server holding the bundled catalog, types a query into the
//! search box, presses the search button and reads the answer's leader from the page it lands on.
//! Skipped, with a message, when no `chromium` is installed (.ci/run installs it). The DevTools
//! socket is framed by hand, as in crates/ki/tests/serve_browser.rs.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::serving::{Database, serve};

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser"].iter().find_map(|name| {
        let out = Command::new("sh").arg("-c").arg(format!("command -v {name}")).output().ok()?;
        let path = String::from_utf8(out.stdout).ok()?.trim().to_string();
        (!path.is_empty()).then(|| PathBuf::from(path))
    })
}

#[test]
fn a_browser_types_a_query_into_the_search_box_and_reads_the_leader() {
    let Some(binary) = chromium() else {
        eprintln!("skipped: no chromium installed (apt-get install chromium)");
        return;
    };
    let database = Database::sqlite();
    let server = serve(database.open_with_bundle(), ki_server::connections::Limits::default());
    let mut browser = Devtools::start(&binary);
    browser.open(&format!("{}/", server.base));
    // Typed as a person types: focus the box, insert the text, press the form's button.
    browser.evaluate("document.getElementById('home-q').focus()");
    browser.page.call("Input.insertText", serde_json::json!({ "text": "gqa pagd decode H200 batch 16" }));
    assert_eq!(browser.evaluate("document.getElementById('home-q').value"), "gqa pagd decode H200 batch 16");
    browser.evaluate("document.getElementById('home-q').form.querySelector('button[type=submit]').click()");
    browser.wait_for("document.readyState === 'complete' && document.getElementById('leader') !== null");
    let url = browser.evaluate("location.pathname + location.search");
    assert_eq!(url, "/?q=gqa+pagd+decode+H200+batch+16", "the form submits the box's text");
    let leader = browser.evaluate("document.querySelector('#leader a').textContent");
    assert_eq!(leader, "kernelindex-native-35c1f6", "the verified leader of the H200 groups at batch 16");
    let header = browser.evaluate("document.getElementById('leader').textContent");
    assert!(header.as_str().unwrap().contains("lower is better"), "{header}");
    let suggestion = browser.evaluate("document.querySelector('#did-you-mean a').textContent");
    assert_eq!(suggestion, "gqa paged decode H200 batch 16");
    // A chip removes its filter: following the GPU's chip drops it from the query.
    let chips =
        browser.evaluate("[...document.querySelectorAll('#understood a.chip')].map(a => a.getAttribute('href'))");
    assert!(
        chips.as_array().unwrap().iter().any(|c| c == "/?q=gqa%20pagd%20decode%20batch%2016"),
        "the GPU chip links to the query without it: {chips}"
    );
}

/// A phone, 400 px wide: the operation page's leaderboard shows each run's implementation, value
/// and evidence without sideways scrolling (its secondary columns hidden), and the page is no wider
/// than the screen. At 1280 px the page stays short (it was 12,700 px tall before its picker).
#[test]
fn at_400_px_the_leaderboard_shows_implementation_value_and_evidence_without_scrolling() {
    let Some(binary) = chromium() else {
        eprintln!("skipped: no chromium installed (apt-get install chromium)");
        return;
    };
    let database = Database::sqlite();
    let server = serve(database.open_with_bundle(), ki_server::connections::Limits::default());
    let mut browser = Devtools::start(&binary);
    let url = format!("{}/operations/gqa-paged-decode-h32-kv4-d128-ps1", server.base);
    for (width, tall) in [(400, 800), (1280, 900)] {
        browser.page.call(
            "Emulation.setDeviceMetricsOverride",
            serde_json::json!({ "width": width, "height": tall, "deviceScaleFactor": 1, "mobile": width < 800 }),
        );
        browser.open(&format!("{url}?w={width}"));
        let page_width = browser.evaluate("document.documentElement.scrollWidth");
        assert!(page_width.as_f64().unwrap() <= width as f64, "{width} px: the page is {page_width} px wide");
        let table = browser.evaluate(
            "(() => { const t = document.querySelector('#leaderboard table.leaderboard'); \
             return [t.scrollWidth, t.clientWidth, t.getBoundingClientRect().right]; })()",
        );
        let [scroll, client, right] = [0, 1, 2].map(|i| table[i].as_f64().unwrap());
        assert!(scroll <= client && right <= width as f64, "{width} px: the leaderboard scrolls: {table}");
        // Rank, implementation, value and evidence of every row lie inside the screen.
        let outside = browser.evaluate(&format!(
            "[...document.querySelectorAll('#leaderboard tbody tr')].flatMap(tr => [...tr.cells].slice(0, 4)) \
             .filter(td => td.getBoundingClientRect().width === 0 || td.getBoundingClientRect().right > {width}) \
             .map(td => td.textContent)"
        ));
        assert_eq!(outside, serde_json::json!([]), "{width} px: cells cut off or hidden");
        let rows = browser.evaluate("document.querySelectorAll('#leaderboard tbody tr').length");
        assert!(rows.as_u64().unwrap() >= 2, "{rows}");
        let badges = browser.evaluate("document.querySelectorAll('#leaderboard tbody .badge').length");
        assert_eq!(badges, rows, "an evidence badge per run");
        let hidden = browser.evaluate(
            "[...document.querySelectorAll('#leaderboard .opt')].every(c => getComputedStyle(c).display === 'none')",
        );
        assert_eq!(hidden, width < 800, "{width} px: secondary columns hidden only on a phone");
        if width == 1280 {
            let height = browser.evaluate("document.documentElement.scrollHeight").as_f64().unwrap();
            assert!(height < 8_000.0, "the operation page is {height} px tall");
        }
    }
    // The search answer's table of groups on the phone: workload and fastest verified run fit.
    browser.page.call(
        "Emulation.setDeviceMetricsOverride",
        serde_json::json!({ "width": 400, "height": 800, "deviceScaleFactor": 1, "mobile": true }),
    );
    browser.open(&format!("{}/?q=gqa+decode+gpu%3Ah200+batch_size%3D16", server.base));
    let answer = browser.evaluate(
        "(() => { const t = document.getElementById('answer-table'); \
         const cells = [...t.querySelectorAll('tbody tr')].flatMap(tr => [tr.cells[0], tr.cells[2]]); \
         return [t.scrollWidth <= t.clientWidth, cells.length > 0, \
                 cells.every(td => td.getBoundingClientRect().right <= 400), \
                 [...t.querySelectorAll('tbody tr')].every(tr => tr.cells[2].querySelector('.badge') !== null)]; })()",
    );
    assert_eq!(answer, serde_json::json!([true, true, true, true]), "the search answer at 400 px");
}

/// Chromium with its DevTools endpoint, and a socket to its one page.
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

    fn wait_for(&mut self, condition: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.evaluate(condition) != true {
            if Instant::now() >= deadline {
                let at = self.evaluate("location.href + ' ' + document.readyState + ' ' + (document.body ? document.body.innerText.slice(0, 600) : '')");
                panic!("never: {condition} (at {at})");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn open(&mut self, url: &str) {
        self.page.call("Page.navigate", serde_json::json!({ "url": url }));
        self.wait_for(&format!("document.readyState === 'complete' && location.href === {}", serde_json::json!(url)));
    }
}

impl Drop for Devtools {
    fn drop(&mut self) {
        let _ = self.chromium.kill();
        let _ = self.chromium.wait();
    }
}

/// A WebSocket to one DevTools endpoint on loopback: a few small text messages.
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
