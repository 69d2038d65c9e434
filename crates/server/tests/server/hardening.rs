//! Issue 17's findings against the server, each against real listening servers and real
//! sockets: revoked keys, slow and half-open connections, error bodies, the order of the key
//! check, and what exports and feeds let through.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use crate::serving::{Database, Live, SEED_WORKLOAD_RUN, block_on, serve_rows};
use ki_catalog::Scope;
use ki_server::connections::Limits;
use ki_server::model::CatalogRow;
use serde_json::{Value, json};

/// The bundled public snapshot's rows, read once (the runs the attestations name).
static BUNDLED_ROWS: LazyLock<Vec<CatalogRow>> = LazyLock::new(|| {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data").join(ki_catalog::BUNDLED_SNAPSHOT_NAME);
    ki_server::rows_from_export(&path).expect("the bundled snapshot reads")
});

fn limits() -> Limits {
    Limits::default()
}

fn attest(server: &Live, authorization: &str, note: &str) -> u16 {
    let body = json!({"kind": "environment_note", "note": note}).to_string();
    server
        .post(&format!("/api/v1/runs/{SEED_WORKLOAD_RUN}/attestations"), "application/json", Some(authorization), &body)
        .status
}

/// Two servers on one catalog (each with its own pool, as two `ki serve` processes have), the
/// key revoked through a third handle (as `ki admin key revoke` does): both refuse it on the
/// very next request, and a key not revoked keeps working.
fn revoked_keys_are_refused_at_once_by_every_server(database: Database) {
    let admin = database.open();
    let (_, first) = block_on(admin.create_api_key("replica-test", &[Scope::Attest], 100)).unwrap();
    let (_, second) = block_on(admin.create_api_key("replica-test-2", &[Scope::Attest], 100)).unwrap();
    let a = serve_rows(BUNDLED_ROWS.clone(), database.open(), limits());
    let b = serve_rows(BUNDLED_ROWS.clone(), database.open(), limits());
    for server in [&a, &b] {
        assert_eq!(attest(server, &format!("Bearer {first}"), "before revocation"), 201, "{}", database.name);
        assert_eq!(attest(server, &format!("Bearer {second}"), "before revocation"), 201);
    }
    block_on(admin.revoke_api_key(&first[..11])).expect("the key is revoked");
    for server in [&a, &b] {
        assert_eq!(
            attest(server, &format!("Bearer {first}"), "after revocation"),
            401,
            "{}: revoked key taken",
            database.name
        );
        assert_eq!(attest(server, &format!("Bearer {second}"), "the other key"), 201);
    }
    let notes = block_on(admin.attestations_of_run(SEED_WORKLOAD_RUN)).unwrap();
    assert_eq!(notes.iter().filter(|n| n.note.as_deref() == Some("after revocation")).count(), 0);
    assert_eq!(notes.len(), 6);
}

#[test]
fn a_revoked_key_is_refused_on_the_next_request_by_every_server_on_a_sqlite_catalog() {
    revoked_keys_are_refused_at_once_by_every_server(Database::sqlite());
}

#[test]
fn a_revoked_key_is_refused_on_the_next_request_by_every_server_on_a_postgres_schema() {
    revoked_keys_are_refused_at_once_by_every_server(Database::postgres());
}

/// A server with no runs, on a scratch catalog: enough for what the connection loop does.
fn bare_server(limits: Limits) -> (Live, Database) {
    let database = Database::sqlite();
    (serve_rows(Vec::new(), database.open(), limits), database)
}

/// Reads until the server closes the connection; the time it took, or None after `within`.
fn closed_within(stream: &mut TcpStream, within: Duration) -> Option<Duration> {
    let started = Instant::now();
    stream.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let mut buf = [0u8; 4096];
    while started.elapsed() < within {
        match stream.read(&mut buf) {
            Ok(0) => return Some(started.elapsed()),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => return Some(started.elapsed()),
        }
    }
    None
}

#[test]
fn a_request_head_sent_one_line_a_second_is_cut_off_at_the_header_deadline() {
    let (server, _db) = bare_server(Limits { header_read_timeout: Duration::from_secs(2), ..limits() });
    let mut stream = TcpStream::connect(server.addr).unwrap();
    let started = Instant::now();
    stream.write_all(b"GET /healthz HTTP/1.1\r\n").unwrap();
    let mut closed = false;
    for line in 0..8 {
        std::thread::sleep(Duration::from_secs(1));
        if stream.write_all(format!("x-line-{line}: 1\r\n").as_bytes()).is_err() {
            closed = true;
            break;
        }
        if closed_within(&mut stream, Duration::from_millis(10)).is_some() {
            closed = true;
            break;
        }
    }
    assert!(closed, "a head trickled one line a second is still open after {:?}", started.elapsed());
    assert!(started.elapsed() < Duration::from_secs(5), "closed only after {:?}", started.elapsed());
}

#[test]
fn an_idle_kept_alive_connection_is_closed_at_the_header_deadline() {
    let (server, _db) = bare_server(Limits { header_read_timeout: Duration::from_secs(2), ..limits() });
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n").unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut buf = [0u8; 4096];
    let n = stream.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"), "{}", String::from_utf8_lossy(&buf[..n]));
    let closed = closed_within(&mut stream, Duration::from_secs(6)).expect("an idle connection is never closed");
    assert!(closed >= Duration::from_millis(1500), "closed too early: {closed:?}");
}

fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").map(|d| d.count()).unwrap_or(0)
}

#[test]
fn thousands_of_half_open_sockets_do_not_stop_healthz_and_the_server_holds_at_most_its_cap() {
    const CAP: usize = 256;
    const SOCKETS: usize = 3000;
    let (server, _db) =
        bare_server(Limits { max_connections: CAP, header_read_timeout: Duration::from_secs(60), ..limits() });
    let before = open_descriptors();
    let mut sockets = Vec::with_capacity(SOCKETS);
    for _ in 0..SOCKETS {
        let mut socket = TcpStream::connect(server.addr).expect("the listener accepts");
        // Half a request head, never finished.
        let _ = socket.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n");
        sockets.push(socket);
    }
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..5 {
        let started = Instant::now();
        let reply = server.get("/healthz");
        assert_eq!(reply.status, 200);
        assert!(started.elapsed() < Duration::from_secs(2), "/healthz took {:?}", started.elapsed());
    }
    assert!(server.tracker.open() <= CAP, "{} connections open, cap {CAP}", server.tracker.open());
    // This process holds the clients' ends; the server's ends are at most the cap.
    let held = open_descriptors().saturating_sub(before);
    assert!(
        held <= SOCKETS + CAP + 64,
        "{held} descriptors for {SOCKETS} client sockets: the server holds more than {CAP}"
    );
    drop(sockets);
}

#[test]
fn every_error_is_a_problem_with_a_body_even_those_answered_before_routing() {
    let (server, _db) = bare_server(limits());
    // A path that is not UTF-8 once decoded.
    let bad_path = server.get("/runs/%ff");
    bad_path.problem(400);
    // A body over the limit (read whole, so the client gets the answer).
    let huge = "x".repeat(ki_server::http::MAX_BODY_BYTES + 1);
    let too_large = server.raw(
        format!(
            "POST /api/v1/resolve/kernel HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{huge}",
            huge.len()
        )
        .as_bytes(),
    );
    too_large.assert_problem(413);
    // A method the route does not take.
    let wrong_method = server.post("/healthz", "application/json", None, "{}");
    let problem = wrong_method.problem(405);
    assert!(problem["detail"].as_str().unwrap().contains("GET"), "{problem}");
    assert!(wrong_method.header("allow").is_some_and(|a| a.contains("GET")));
    // Refused by the HTTP parser itself, before any route: a malformed request line, a target
    // too long, too many header fields.
    server.raw(b"NOT HTTP AT ALL\r\n\r\n").assert_problem(400);
    server.raw(format!("GET /{} HTTP/1.1\r\nhost: x\r\n\r\n", "a".repeat(70_000)).as_bytes()).assert_problem(414);
    let many: String = (0..150).map(|i| format!("x-h{i}: 1\r\n")).collect();
    server.raw(format!("GET /healthz HTTP/1.1\r\nhost: x\r\n{many}\r\n").as_bytes()).assert_problem(431);
    // A query parameter of the wrong type names it.
    let bad_page = server.get("/api/v1/records?page=first");
    let problem = bad_page.problem(400);
    assert!(problem["detail"].as_str().unwrap().contains("page"), "{problem}");
}

#[test]
fn an_attestation_without_a_key_is_refused_before_its_body_or_run_is_looked_at() {
    let database = Database::sqlite();
    let catalog = database.open();
    let (_, secret) = block_on(catalog.create_api_key("order-test", &[Scope::Attest], 100)).unwrap();
    let server = serve_rows(BUNDLED_ROWS.clone(), catalog, limits());
    // No key: 401 whatever the body and the run.
    for (run, body) in
        [("no-such-run", "{"), (SEED_WORKLOAD_RUN, "not json"), ("no-such-run", r#"{"kind":"reproduced"}"#)]
    {
        let reply = server.post(&format!("/api/v1/runs/{run}/attestations"), "application/json", None, body);
        reply.problem(401);
        let reply = server.post(
            &format!("/api/v1/runs/{run}/attestations"),
            "application/json",
            Some("Bearer ki_unknown"),
            body,
        );
        reply.problem(401);
    }
    // The scheme in any case (RFC 9110).
    for scheme in ["bearer", "BEARER", "Bearer"] {
        assert_eq!(attest(&server, &format!("{scheme} {secret}"), scheme), 201, "{scheme}");
    }
    // With a key, the body and the run are judged.
    let bearer = format!("Bearer {secret}");
    server.post("/api/v1/runs/no-such-run/attestations", "application/json", Some(&bearer), "{}").problem(400);
    server
        .post("/api/v1/runs/no-such-run/attestations", "application/json", Some(&bearer), r#"{"kind":"reproduced"}"#)
        .problem(404);
    // The form carries its key as a field and is checked the same way.
    let form = server.post(
        &format!("/runs/{SEED_WORKLOAD_RUN}/attestations"),
        "application/x-www-form-urlencoded",
        None,
        "kind=reproduced&apiKey=ki_wrong",
    );
    form.problem(401);
    let form = server.post(
        &format!("/runs/{SEED_WORKLOAD_RUN}/attestations"),
        "application/x-www-form-urlencoded",
        None,
        &format!("kind=reproduced&observedNs=19500&apiKey={secret}&unknown=1"),
    );
    let problem = form.problem(422);
    assert!(problem["detail"].as_str().unwrap().contains("unknown"), "{problem}");
}

/// The bundled rows with hostile text where exports and feeds print it: the seed run's
/// project name and hardware model.
fn hostile_rows() -> Vec<CatalogRow> {
    let mut rows = BUNDLED_ROWS.clone();
    let run =
        rows.iter().find(|r| r.table == "benchmark_runs" && r.row["id"] == SEED_WORKLOAD_RUN).unwrap().row.clone();
    let implementation_id = run["implementationId"].as_str().unwrap().to_string();
    let project_id = rows
        .iter()
        .find(|r| r.table == "implementations" && r.row["id"] == implementation_id.as_str())
        .unwrap()
        .row["projectId"]
        .as_str()
        .unwrap()
        .to_string();
    for row in &mut rows {
        if row.table == "projects" && row.row["id"] == project_id.as_str() {
            row.row.insert("name".into(), json!("<img src=x onerror=alert(1)>"));
        }
        if row.table == "benchmark_runs" && row.row["id"] == SEED_WORKLOAD_RUN {
            row.row.insert("hardwareModel".into(), json!("\t=HYPERLINK(\"http://evil\") <b>&"));
        }
    }
    rows
}

#[test]
fn compare_exports_escape_html_and_guard_every_formula_lead() {
    let database = Database::sqlite();
    let server = serve_rows(hostile_rows(), database.open(), limits());
    let other = {
        let model = server.state.model();
        let run = model.judgement.find_run(SEED_WORKLOAD_RUN).unwrap();
        let cohort = &model.judgement.cohorts[model.judgement.facts[run].cohort()];
        let other = cohort.runs.iter().find(|&&r| r != run).copied().unwrap_or(if run == 0 { 1 } else { 0 });
        model.judgement.runs[other].id.clone()
    };
    let query = format!("run={SEED_WORKLOAD_RUN}&run={other}");
    let markdown = server.get(&format!("/compare?{query}&format=markdown"));
    assert_eq!(markdown.status, 200);
    assert!(markdown.body.contains("&lt;img src=x onerror=alert(1)&gt;"), "{}", markdown.body);
    assert!(
        !markdown.body.contains("<img") && !markdown.body.contains("<b>"),
        "raw HTML in Markdown: {}",
        markdown.body
    );
    let csv = server.get(&format!("/compare?{query}&format=csv"));
    assert_eq!(csv.status, 200);
    let seed_line = csv.body.lines().find(|l| l.starts_with(SEED_WORKLOAD_RUN)).unwrap();
    assert!(seed_line.contains("\"'\t=HYPERLINK"), "the tab-led formula is not guarded: {seed_line:?}");
    // The same hostile text in the Atom feed is text, read back as it was.
    let atom = server.get("/records.atom");
    assert!(atom.content_type.starts_with("application/atom+xml"));
    let feed = atom_syndication::Feed::read_from(atom.body.as_bytes()).expect("the feed is valid Atom");
    assert_eq!(feed.entries().len(), 50.min(server.state.model().judgement.record_events.len()));
    assert!(!atom.body.contains("<b>&"));
    assert!(feed.entries().iter().all(|e| e.links().first().is_some_and(|l| l.href().starts_with(&server.base))));
}

#[test]
fn query_strings_and_forms_are_parsed_with_repeats_and_named_errors() {
    let database = Database::sqlite();
    let server = serve_rows(BUNDLED_ROWS.clone(), database.open(), limits());
    let model = server.state.model();
    let ids: Vec<String> = model.judgement.runs.iter().take(3).map(|r| r.id.to_string()).collect();
    // Repeated keys and a comma list mean the same runs.
    let repeated = server.get(&format!("/api/v1/compare?run={}&run={}&run={}", ids[0], ids[1], ids[2])).json();
    let listed = server.get(&format!("/api/v1/compare?run={}%2C{}%2C{}", ids[0], ids[1], ids[2])).json();
    assert_eq!(repeated["runs"].as_array().unwrap().len(), 3);
    assert_eq!(repeated, listed);
    // Percent-encoding and `+` decode as a form does.
    let search = server.get("/api/v1/search?q=gqa+paged%20decode").json();
    assert_eq!(search["query"], "gqa paged decode");
    let problem = server.get("/api/v1/operations?page=-1").problem(400);
    assert!(problem["detail"].as_str().unwrap().contains("page"), "{problem}");
    let value: Value = server.get("/api/v1/records?page=99999999999").json();
    assert_eq!(value["page"], value["pages"]);
}

/// A request whose head is whole and whose body never comes: 100 bytes declared, one sent.
const STALLED_BODY: &[u8] =
    b"POST /api/v1/resolve/kernel HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{";

/// A socket to `addr` from the loopback address `from` (127.0.0.0/8 is all this host's),
/// so that one test can be several peers.
fn connect_from(from: [u8; 4], addr: std::net::SocketAddr) -> std::io::Result<TcpStream> {
    block_on(async {
        let socket = tokio::net::TcpSocket::new_v4()?;
        socket.bind(std::net::SocketAddr::from((from, 0)))?;
        let stream = socket.connect(addr).await?.into_std()?;
        stream.set_nonblocking(false)?;
        Ok(stream)
    })
}

/// `/healthz` on a connection of its own; the time to its whole answer, or None when the
/// connection was refused, reset or not answered within a second.
fn healthz_once(addr: std::net::SocketAddr) -> Option<Duration> {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(1))).ok()?;
    stream.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n").ok()?;
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).ok()?;
    String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200").then(|| started.elapsed())
}

#[test]
fn healthz_answers_within_100_ms_during_a_flood_of_stalled_heads_and_stalled_bodies() {
    const CAP: usize = 64;
    let (server, _db) = bare_server(Limits { max_connections: CAP, ..limits() });
    let addr = server.addr;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Three peers flood stalled bodies, a fourth stalled heads, without pause, until the end.
    let floods: Vec<_> = (2u8..=5)
        .map(|peer| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut held = Vec::new();
                let mut opened = 0usize;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let Ok(mut socket) = connect_from([127, 0, 0, peer], addr) else { continue };
                    let request: &[u8] =
                        if peer == 5 { b"POST /api/v1/resolve/kernel HTTP/1.1\r\nhost: x\r\n" } else { STALLED_BODY };
                    let _ = socket.write_all(request);
                    held.push(socket);
                    opened += 1;
                    if held.len() > 2000 {
                        held.drain(..1000);
                    }
                    std::thread::sleep(Duration::from_millis(2));
                }
                opened
            })
        })
        .collect();
    std::thread::sleep(Duration::from_millis(1500));
    let mut times = Vec::new();
    for _ in 0..40 {
        times.push(healthz_once(addr));
        std::thread::sleep(Duration::from_millis(25));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let opened: Vec<usize> = floods.into_iter().map(|f| f.join().unwrap()).collect();
    assert!(opened.iter().all(|&n| n > 200), "the flood opened too few sockets: {opened:?}");
    let refused = times.iter().filter(|t| t.is_none()).count();
    let slowest = times.iter().flatten().max().copied();
    assert_eq!(refused, 0, "/healthz unanswered {refused} of {} times during the flood", times.len());
    assert!(slowest < Some(Duration::from_millis(100)), "/healthz took {slowest:?} at worst during the flood");
    assert!(server.tracker.open() <= CAP, "{} connections open, cap {CAP}", server.tracker.open());
}

#[test]
fn a_declared_body_over_the_limit_is_answered_413_before_it_is_read() {
    let (server, _db) = bare_server(limits());
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let started = Instant::now();
    stream
        .write_all(
            b"POST /api/v1/resolve/kernel HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100000000\r\n\r\n{\"operation\": \"x\"",
        )
        .unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 413"), "after {:?}: {answer:?}", started.elapsed());
    assert!(answer.to_ascii_lowercase().contains("content-type: application/problem+json"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(1), "answered only after {:?}", started.elapsed());
}

#[test]
fn a_stalled_body_is_answered_408_at_the_minimum_rate_and_a_slow_one_at_the_deadline() {
    let (server, _db) = bare_server(limits());
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(8))).unwrap();
    let started = Instant::now();
    stream.write_all(STALLED_BODY).unwrap();
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "after {:?}: {answer:?}", started.elapsed());
    assert!(answer.to_ascii_lowercase().contains("content-type: application/problem+json"), "{answer}");
    assert!(started.elapsed() < Duration::from_secs(4), "answered only after {:?}", started.elapsed());
    // A body that keeps the minimum rate but never ends is cut at the body deadline.
    let (server, _db) = bare_server(Limits { body_read_timeout: Duration::from_secs(3), ..limits() });
    let mut stream = TcpStream::connect(server.addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_millis(100))).unwrap();
    let started = Instant::now();
    stream
        .write_all(b"POST /api/v1/resolve/kernel HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 2000000\r\n\r\n")
        .unwrap();
    // The server answers 408 and closes with bytes unread, so the client may see a reset
    // rather than the answer: what is held to is when the connection ends.
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    while started.elapsed() < Duration::from_secs(8) {
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {}
            Err(_) => break,
        }
        if stream.write_all(&[b' '; 512]).is_err() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let elapsed = started.elapsed();
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.is_empty() || answer.starts_with("HTTP/1.1 408"), "after {elapsed:?}: {answer:?}");
    assert!(elapsed >= Duration::from_secs(3) && elapsed < Duration::from_secs(5), "cut after {elapsed:?}");
}

#[test]
fn a_runs_attestations_are_paged_newest_first_with_a_count() {
    let database = Database::sqlite();
    let catalog = database.open();
    let (_, secret) = block_on(catalog.create_api_key("paging-test", &[Scope::Attest], 1000)).unwrap();
    for n in 0..120 {
        let new = ki_catalog::NewAttestation {
            run_id: SEED_WORKLOAD_RUN.to_string(),
            kind: ki_catalog::AttestationKind::EnvironmentNote,
            observed_ns: None,
            evidence_url: None,
            note: Some(format!("note {n}")),
        };
        block_on(catalog.add_attestation(Some(&secret), new)).unwrap();
    }
    let server = serve_rows(BUNDLED_ROWS.clone(), catalog, limits());
    let first: Value = server.get(&format!("/api/v1/runs/{SEED_WORKLOAD_RUN}")).json();
    assert_eq!(first["attestationCount"], 120);
    assert_eq!((first["attestationPage"].as_u64(), first["attestationPages"].as_u64()), (Some(1), Some(3)));
    let items = first["attestations"].as_array().unwrap();
    assert_eq!(items.len(), 50);
    assert_eq!(items[0]["note"], "note 119", "newest first");
    let last: Value = server.get(&format!("/api/v1/runs/{SEED_WORKLOAD_RUN}?page=3")).json();
    let items = last["attestations"].as_array().unwrap();
    assert_eq!((items.len(), &items[19]["note"]), (20, &json!("note 0")));
    let page = server.get(&format!("/runs/{SEED_WORKLOAD_RUN}?page=2"));
    assert_eq!(page.status, 200);
    assert!(page.body.contains("120 attestations, newest first"), "no count on the page");
    assert!(page.body.contains("note 69") && !page.body.contains("note 119"), "page 2 holds 69 down to 20");
    assert!(page.body.contains("Page 2 of 3"));
}

/// The bundled rows with the seed run's project named with terminal and bidi controls.
fn control_rows(name: &str) -> Vec<CatalogRow> {
    let mut rows = hostile_rows();
    let project_id = {
        let names: Vec<&CatalogRow> = rows.iter().filter(|r| r.table == "projects").collect();
        names.iter().find(|r| r.row["name"] == "<img src=x onerror=alert(1)>").unwrap().row["id"]
            .as_str()
            .unwrap()
            .to_string()
    };
    for row in &mut rows {
        if row.table == "projects" && row.row["id"] == project_id.as_str() {
            row.row.insert("name".into(), json!(name));
        }
    }
    rows
}

#[test]
fn control_and_bidi_characters_never_reach_a_page_raw() {
    let name = "Evil\u{1b}[2J\u{7}title\r\u{202e}desrever\u{2066}x\u{200f}\u{61c}";
    let database = Database::sqlite();
    let server = serve_rows(control_rows(name), database.open(), limits());
    let raw = |c: char| c != '\n' && c != '\t' && ki_model::escape::is_control_or_bidi(c);
    for path in [format!("/runs/{SEED_WORKLOAD_RUN}"), "/records.atom".to_string(), "/projects".to_string()] {
        let reply = server.get(&path);
        assert_eq!(reply.status, 200, "{path}");
        let found: Vec<char> = reply.body.chars().filter(|&c| raw(c)).collect();
        assert!(found.is_empty(), "{path}: raw {found:?}");
    }
    let page = server.get(&format!("/runs/{SEED_WORKLOAD_RUN}"));
    assert!(page.body.contains("Evil\\u001b[2J\\u0007title\\u000d\\u202edesrever"), "the name is not shown escaped");
}

#[test]
fn the_attestation_api_is_as_strict_as_its_schema() {
    let database = Database::sqlite();
    let catalog = database.open();
    let (_, secret) = block_on(catalog.create_api_key("strict-test", &[Scope::Attest], 100)).unwrap();
    let server = serve_rows(BUNDLED_ROWS.clone(), catalog, limits());
    let bearer = format!("Bearer {secret}");
    let path = format!("/api/v1/runs/{SEED_WORKLOAD_RUN}/attestations");
    for (content_type, body, status) in [
        ("application/json", r#"{"kind":"reproduced","observedNs":"12"}"#, 422),
        ("application/json", r#"{"kind":"reproduced","observedNs":9007199254740993}"#, 422),
        ("application/json", r#"{"kind":"reproduced","observedNs":1.5}"#, 422),
        ("application/json", r#"{"kind":"reproduced","kind":"could_not_reproduce"}"#, 400),
        ("text/plain", r#"{"kind":"reproduced","observedNs":12}"#, 415),
    ] {
        let reply = server.post(&path, content_type, Some(&bearer), body);
        let problem = reply.problem(status);
        assert!(problem["detail"].is_string(), "{body}: {problem}");
    }
    let notes = block_on(database.open().attestations_of_run(SEED_WORKLOAD_RUN)).unwrap();
    assert!(notes.is_empty(), "{} attestations stored from refused bodies", notes.len());
    // The largest value the schema allows, and the charset parameter, are taken.
    let largest = r#"{"kind":"reproduced","observedNs":9007199254740991}"#;
    assert_eq!(server.post(&path, "application/json; charset=utf-8", Some(&bearer), largest).status, 201);
    // 82303.0 is the integer 82303 to JSON Schema (and to JSON): taken, stored as 82303.
    let written_as_float = r#"{"kind":"environment_note","observedNs":82303.0}"#;
    let reply = server.post(&path, "application/json", Some(&bearer), written_as_float);
    assert_eq!(reply.status, 201, "{}", reply.body);
    assert_eq!(reply.json()["observedNs"], 82303);
}

/// Found by Schemathesis with a key: requests its schema allows were refused. A resolve
/// `limit` of 13.0 is the integer 13; a form has no null, so its schema allows none.
#[test]
fn schema_valid_requests_found_refused_are_taken() {
    let database = Database::sqlite();
    let server = serve_rows(BUNDLED_ROWS.clone(), database.open(), limits());
    let body = r#"{"operation":"gqa_paged_decode_h32_kv4_d128_ps1","limit":13.0}"#;
    let reply = server.post("/api/v1/resolve/kernel", "application/json", None, body);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let refused = server.post("/api/v1/resolve/kernel", "application/json", None, &body.replace("13.0", "13.5"));
    assert!(refused.problem(400)["detail"].as_str().unwrap().contains("expected a whole number"));

    let document = server.get("/api/v1/openapi.json").json();
    let form = &document["paths"]["/runs/{id}/attestations"]["post"]["requestBody"]["content"]["application/x-www-form-urlencoded"]
        ["schema"];
    assert_eq!(form["$ref"], "#/components/schemas/AttestationForm");
    let text = document["components"]["schemas"]["AttestationForm"].to_string();
    assert!(text.contains("evidenceUrl"), "{text}");
    assert!(!text.contains("null"), "a form field cannot be null: {text}");

    // And one it allows no more: `?page=` (empty) is not the integer the schema asks for.
    let empty_page = server.get(&format!("/runs/{SEED_WORKLOAD_RUN}?page="));
    assert!(empty_page.problem(400)["detail"].as_str().unwrap().contains("page takes a whole number"));
    let second = server.get(&format!("/runs/{SEED_WORKLOAD_RUN}?page=2"));
    assert_eq!(second.status, 200, "{}", second.body);
}
