//! Every route against a real server on loopback, over the shared catalog export.

use std::collections::BTreeSet;

use crate::common::{SEED_WORKLOAD_RUN, SERVER, get, get_html, post, repository};
use ki_catalog::Scope;
use ki_server::openapi::{Method, Produces};
use serde_json::{Value, json};

const FIXTURE_RUN_TITLE: &str = "title: Fixture benchmark run (fictional)";

fn key(scopes: Vec<Scope>, quota: u32) -> String {
    crate::common::key(&scopes, quota)
}

fn fixture_bundle() -> String {
    std::fs::read_to_string(repository("fixtures/kernelindex-registry/submissions/example-fixture.yaml")).unwrap()
}

fn seed_resolve_request() -> Value {
    json!({
        "operation": "gqa_paged_decode_h32_kv4_d128_ps1",
        "axes": {"batch_size": 16, "num_pages": 1070, "len_indptr": 17, "num_kv_indices": 1020},
        "hardware": "NVIDIA B200"
    })
}

/// Fills a documented path's parameters with real values from the catalog.
fn concrete(path: &str, submission_id: &str, job_id: &str) -> String {
    let model = SERVER.state.model();
    let implementation_slug = model.judgement.implementations[0].slug.clone();
    path.replace(
        "{id}",
        if path.starts_with("/serving") || path.starts_with("/api/v1/serving") {
            &model.serving_runs.rows[0].id
        } else if path.contains("submissions") {
            submission_id
        } else if path.contains("verifications") {
            job_id
        } else {
            SEED_WORKLOAD_RUN
        },
    )
    .replace(
        "{slug}",
        if path.contains("operations") {
            "gqa-paged-decode-h32-kv4-d128-ps1"
        } else if path.contains("gpus") {
            "nvidia-b200"
        } else if path.contains("models") {
            "deepseek-v3"
        } else if path.contains("projects") {
            &model.judgement.projects[0].slug
        } else {
            &implementation_slug
        },
    )
}

/// A pending verification job of the submission, for the queue's routes.
fn enqueue_job(submission_id: &str) -> String {
    use ki_catalog::queue::{EnqueueRequest, JobSpec, Origin, Requirement, Subject, WorkloadSet};
    let spec = JobSpec {
        subject: Subject::Solution { name: "route-test".into(), document: json!({"name": "route-test"}) },
        workloads: WorkloadSet { operation: "gqa_paged_decode_h32_kv4_d128_ps1".into(), workloads: vec!["w".into()] },
        protocol: "kernelindex-rerun-v2".into(),
        requirement: Requirement::default(),
        basis_run_id: None,
    };
    let mut request = EnqueueRequest::new(spec, Origin::Submission);
    request.submission_id = Some(submission_id.to_string());
    SERVER.runtime.block_on(SERVER.state.catalog.enqueue(&request)).unwrap().job.id
}

/// Every route has what the OpenAPI document needs to describe it whole: JSON routes their
/// answer's schema, writes their body's, lists their query's; the document names them all.
#[test]
fn every_route_in_the_table_has_its_schemas() {
    let docs = ki_server::routes::route_docs();
    for doc in &docs {
        if doc.produces == Produces::Json || doc.produces == Produces::Export {
            assert!(doc.answer.is_some(), "{:?} {} has no answer schema", doc.method, doc.path);
        }
        if doc.method == Method::Post {
            assert!(doc.body.is_some(), "{} has no body schema", doc.path);
        }
    }
    let openapi = ki_server::openapi::document(&docs);
    let schemas = openapi["components"]["schemas"].as_object().unwrap();
    for (path, item) in openapi["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let success = operation["responses"].as_object().unwrap().iter().find(|(s, _)| s.starts_with('2'));
            if let Some((_, response)) = success
                && let Some(schema) = response.pointer("/content/application~1json/schema")
            {
                assert_ne!(schema, &json!({}), "{method} {path}: an empty answer schema");
            }
            // Every reference resolves.
            let text = operation.to_string();
            for (at, _) in text.match_indices("#/components/schemas/") {
                let name: String = text[at + 21..].chars().take_while(|c| *c != '"').collect();
                assert!(schemas.contains_key(&name), "{method} {path}: no schema {name}");
            }
        }
    }
    let runs = &openapi["paths"]["/api/v1/runs"]["get"];
    let names: Vec<&str> = runs["parameters"].as_array().unwrap().iter().map(|p| p["name"].as_str().unwrap()).collect();
    for name in
        ["operation", "workload", "hardware", "evidence", "source", "implementation", "status", "cursor", "limit"]
    {
        assert!(names.contains(&name), "GET /api/v1/runs does not document {name}");
    }
    assert_eq!(
        runs["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
        "#/components/schemas/RunPage"
    );
}

#[test]
fn every_documented_route_answers_and_the_openapi_document_matches_the_router() {
    let attest = key(vec![Scope::Attest, Scope::Submit], 1000);
    let submitted = post("/api/v1/submissions", "application/yaml", Some(&attest), &fixture_bundle());
    assert_eq!(submitted.status, 201, "{}", submitted.body);
    let submission_id = submitted.json()["id"].as_str().unwrap().to_string();
    let job_id = enqueue_job(&submission_id);

    let docs = ki_server::routes::route_docs();
    for doc in &docs {
        let path = concrete(doc.path, &submission_id, &job_id);
        let reply = match (doc.method, doc.path) {
            (Method::Get, "/compare") | (Method::Get, "/api/v1/compare") => {
                let model = SERVER.state.model();
                let other = model.run(0).id.clone();
                get(&format!("{path}?run={SEED_WORKLOAD_RUN}&run={other}"))
            }
            (Method::Get, _) => get(&path),
            (Method::Post, "/api/v1/resolve/kernel") => {
                post(&path, "application/json", None, &seed_resolve_request().to_string())
            }
            (Method::Post, "/api/v1/resolve/kernel/batch") => {
                post(&path, "application/json", None, &json!({"requests": [seed_resolve_request()]}).to_string())
            }
            (Method::Post, "/api/v1/submissions") => post(&path, "application/yaml", Some(&attest), &fixture_bundle()),
            (Method::Post, "/api/v1/runs/{id}/attestations") => {
                post(&path, "application/json", Some(&attest), r#"{"kind":"environment_note","note":"route test"}"#)
            }
            (Method::Post, "/runs/{id}/attestations") => post(
                &path,
                "application/x-www-form-urlencoded",
                None,
                &format!("apiKey={attest}&kind=reproduced&observedNs=19500&evidenceUrl=&note="),
            ),
            (method, p) => panic!("no test request for {method:?} {p}"),
        };
        let expected = match (doc.method, doc.path) {
            // This catalog holds no contents: no source to serve raw (tests/server/source.rs serves one).
            (Method::Get, "/implementations/{slug}/source") => 404,
            _ => doc.success,
        };
        assert_eq!(reply.status, expected, "{:?} {path}: {}", doc.method, &reply.body[..reply.body.len().min(400)]);
        let wanted_type = match doc.produces {
            Produces::Html => "text/html",
            Produces::Json => "application/json",
            Produces::Atom => "application/atom+xml",
            Produces::Asset(media) => media,
            Produces::Export => "",
        };
        if expected == 404 {
            assert_eq!(reply.content_type, "application/problem+json");
        } else if expected != 303 {
            assert!(reply.content_type.starts_with(wanted_type), "{path}: content-type {}", reply.content_type);
        }
        assert!(reply.header("content-security-policy").is_some(), "{path}: no CSP");
        assert!(reply.header("x-request-id").is_some(), "{path}: no request id");
    }

    // The OpenAPI document describes exactly the routes the router serves.
    let openapi = get("/api/v1/openapi.json").json();
    let described: BTreeSet<(String, String)> = openapi["paths"]
        .as_object()
        .unwrap()
        .iter()
        .flat_map(|(path, item)| item.as_object().unwrap().keys().map(move |m| (m.clone(), path.clone())))
        .collect();
    let routed: BTreeSet<(String, String)> =
        docs.iter().map(|d| (d.method.as_str().to_string(), d.path.to_string())).collect();
    assert_eq!(described, routed);
    // …and a path the document does not describe is not served.
    let missing = get("/api/v1/no-such-thing");
    assert_eq!(missing.status, 404);
    assert_eq!(missing.content_type, "application/problem+json");
    let problem = missing.json();
    assert_eq!(problem["status"], 404);
    assert_eq!(problem["requestId"].as_str(), missing.header("x-request-id"));
}

#[test]
fn the_run_dossier_shows_every_section_of_the_seed_page() {
    let page = get_html(&format!("/runs/{SEED_WORKLOAD_RUN}"));
    assert_eq!(page.status, 200);
    let body = &page.body;
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
        assert!(body.contains(&format!(">{section}</h2>")), "missing section {section}");
    }
    let model = SERVER.state.model();
    let run = model.judgement.find_run(SEED_WORKLOAD_RUN).unwrap();
    let row = SERVER.runtime.block_on(model.full_run_row(&SERVER.state.catalog, run)).unwrap();
    let row = &row;
    let text = |c: &str| row.get(c).and_then(Value::as_str).unwrap_or_default().to_string();
    // Facts the seed page shows, read from the catalog row rather than typed in here.
    let facts = [
        "19.5 µs".to_string(),
        "source-native comparison".to_string(),
        format!("observed {}", &text("observedAt")[..10]),
        "× reference".to_string(),
        text("runDigest"),
        text("comparisonKey"),
        "flashinfer_wrapper_78fd04".to_string(),
        "num_pages = 1070 · batch_size = 16 · len_indptr = 17 · num_kv_indices = 1020".to_string(),
        "FlashInfer-Bench".to_string(),
        "max relative error".to_string(),
        "[1070, 1, 4, 128]".to_string(),
        "definition comparator".to_string(),
        "harness_reported".to_string(),
        "comparability family".to_string(),
        "correctness reference".to_string(),
        "NVIDIA B200 (unknown)".to_string(),
        "CUDA toolkit".to_string(),
        "pytorch 2.8.0+cu128".to_string(),
        // The implementation's source artifact, which the export holds.
        model.implementation_source(model.judgement.run_implementation(run)).map(|(digest, _)| digest).unwrap(),
        "They never change the evidence level".to_string(),
        "Add a reproduction or note".to_string(),
        "Show manifest".to_string(),
        "BibTeX".to_string(),
        format!("Published {}", &text("publishedAt")[..10]),
        "Apache-2.0".to_string(),
        "All results for gqa_paged_decode_h32_kv4_d128_ps1".to_string(),
        format!("/api/v1/runs/{SEED_WORKLOAD_RUN}"),
        "evidence: reported".to_string(),
    ];
    for fact in facts {
        assert!(body.contains(&fact), "the dossier lacks {fact:?}");
    }
    let facts = &model.judgement.facts[run];
    assert_eq!(facts.rank(), Some(1), "issue 4: the baseline holds #1 of its group");
    assert!(body.contains("Rank 1 of 1 in its comparison group"));

    let json = get(&format!("/api/v1/runs/{SEED_WORKLOAD_RUN}")).json();
    assert_eq!(json["id"], SEED_WORKLOAD_RUN);
    assert_eq!(json["primary"]["rank"], 1);
    assert_eq!(json["primary"]["value"], 19451.0);
    assert_eq!(json["evidenceLevel"], "reported");
    assert_eq!(json["manifest"], row["manifest"]);
    // By digest too.
    assert_eq!(get(&format!("/runs/{}", text("runDigest"))).status, 200);
}

#[test]
fn pages_escape_outside_text_and_carry_no_inline_script() {
    let submitter = key(vec![Scope::Submit, Scope::Attest], 100);
    let bundle = fixture_bundle().replace(FIXTURE_RUN_TITLE, "title: \"<script>alert('x')</script> & co\"");
    assert_ne!(bundle, fixture_bundle(), "the fixture's run title moved");
    let reply = post("/api/v1/submissions", "application/yaml", Some(&submitter), &bundle);
    assert_eq!(reply.status, 201, "{}", reply.body);
    let created = reply.json();
    assert_eq!(created["trust"], "reported");
    assert_eq!(created["published"], false);
    let page = get_html(created["href"].as_str().unwrap());
    assert_eq!(page.status, 200);
    assert!(page.body.contains("&lt;script&gt;alert('x')&lt;/script&gt; &amp; co"), "title not escaped");
    assert!(!page.body.contains("<script>alert"));
    assert!(page.body.contains("unpublished"));

    // A note with markup, filed on a run, comes back escaped on the dossier.
    let reply = post(
        &format!("/api/v1/runs/{SEED_WORKLOAD_RUN}/attestations"),
        "application/json",
        Some(&submitter),
        &json!({"kind": "environment_note", "note": "<img src=x onerror=alert(1)>", "evidenceUrl": "https://example.org/log"}).to_string(),
    );
    assert_eq!(reply.status, 201, "{}", reply.body);
    let dossier = get_html(&format!("/runs/{SEED_WORKLOAD_RUN}"));
    assert!(dossier.body.contains("&lt;img src=x onerror=alert(1)&gt;"));
    assert!(!dossier.body.contains("<img src=x"));

    for path in [
        "/",
        &format!("/runs/{SEED_WORKLOAD_RUN}"),
        "/operations/gqa-paged-decode-h32-kv4-d128-ps1",
        "/resolve",
        "/docs",
    ] {
        let page = get_html(path);
        let csp = page.header("content-security-policy").unwrap();
        assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"), "{csp}");
        assert_eq!(page.header("x-content-type-options"), Some("nosniff"));
        assert_eq!(page.header("x-frame-options"), Some("DENY"));
        // Every <script> loads a file; no element carries an inline style or handler.
        for (at, _) in page.body.match_indices("<script") {
            let tag = &page.body[at..at + page.body[at..].find('>').unwrap()];
            assert!(tag.contains("src=\"/static/"), "{path}: inline script {tag}");
        }
        assert!(!page.body.contains(" style=\""), "{path}: inline style");
        assert!(!page.body.contains(" onclick="), "{path}: inline handler");
        // Landmarks for assistive technology.
        for landmark in ["<header", "<nav", "<main", "<footer", "lang=\"en\""] {
            assert!(page.body.contains(landmark), "{path}: no {landmark}");
        }
    }
}

#[test]
fn writes_need_a_scoped_key_within_its_quota() {
    let path = format!("/api/v1/runs/{SEED_WORKLOAD_RUN}/attestations");
    let body = r#"{"kind":"reproduced","observedNs":19400}"#;
    let none = post(&path, "application/json", None, body);
    assert_eq!(none.status, 401);
    assert_eq!(none.content_type, "application/problem+json");
    assert!(none.json()["requestId"].is_string());
    assert_eq!(post(&path, "application/json", Some("ki_not_a_key"), body).status, 401);

    let submit_only = key(vec![Scope::Submit], 10);
    assert_eq!(post(&path, "application/json", Some(&submit_only), body).status, 403);

    let once = key(vec![Scope::Attest], 1);
    let bad = post(&path, "application/json", Some(&once), r#"{"kind":"faster","evidenceUrl":"http://example.org"}"#);
    assert_eq!(bad.status, 422);
    let pointers: Vec<String> =
        bad.json()["errors"].as_array().unwrap().iter().map(|e| e["pointer"].as_str().unwrap().to_string()).collect();
    assert_eq!(pointers, ["/kind", "/evidenceUrl"]);
    assert_eq!(post(&path, "application/json", Some(&once), r#"{"kind":"reproduced","observedNs":-3}"#).status, 422);
    assert_eq!(post(&path, "application/json", Some(&once), r#"{"kind":"reproduced","extra":1}"#).status, 400);

    let first = post(&path, "application/json", Some(&once), body);
    assert_eq!(first.status, 201, "{}", first.body);
    assert_eq!(first.json()["observedNs"], 19400);
    let second = post(&path, "application/json", Some(&once), body);
    assert_eq!(second.status, 429);
    let retry: i64 = second.header("retry-after").unwrap().parse().unwrap();
    assert!((1..=86_400).contains(&retry));

    // Unknown run, invalid bundle.
    let both = key(vec![Scope::Attest, Scope::Submit], 10);
    assert_eq!(post("/api/v1/runs/no-such-run/attestations", "application/json", Some(&both), body).status, 404);
    let invalid =
        std::fs::read_to_string(repository("fixtures/kernelindex-registry/examples/invalid/unknown-field.yaml"))
            .unwrap();
    let refused = post("/api/v1/submissions", "application/yaml", Some(&both), &invalid);
    assert_eq!(refused.status, 422, "{}", refused.body);
    assert!(refused.json()["errors"][0]["pointer"].as_str().unwrap().contains("popularity"));
}

#[test]
fn bad_requests_get_problems_never_slow_or_broken_pages() {
    // A body over the limit is refused with 413 (hyper may close the connection before the
    // client has sent it all; then the client sees the reset or a broken pipe instead).
    let huge = "x".repeat(3 * 1024 * 1024);
    let url = format!("{}/api/v1/resolve/kernel", SERVER.base);
    match SERVER.agent.post(&url).header("content-type", "application/json").send(huge.as_str()) {
        Ok(response) => assert_eq!(response.status().as_u16(), 413),
        Err(error) => {
            let message = error.to_string().to_lowercase();
            assert!(["disconnect", "broken pipe", "connection reset"].iter().any(|m| message.contains(m)), "{error}");
        }
    }
    assert_eq!(post("/api/v1/resolve/kernel", "application/json", None, "{").status, 400);
    let batch: Vec<Value> = (0..21).map(|_| seed_resolve_request()).collect();
    assert_eq!(
        post("/api/v1/resolve/kernel/batch", "application/json", None, &json!({ "requests": batch }).to_string())
            .status,
        400
    );
    assert_eq!(post("/api/v1/resolve/kernel/batch", "application/json", None, r#"{"requests":[]}"#).status, 400);
    let mut over = seed_resolve_request();
    over["limit"] = json!(51);
    let refused = post("/api/v1/resolve/kernel", "application/json", None, &over.to_string());
    assert_eq!(refused.status, 400);
    assert!(refused.body.contains("limit takes 1 to 50 comparison groups, got 51"), "{}", refused.body);
    let batch = json!({ "requests": [seed_resolve_request(), over] });
    let refused = post("/api/v1/resolve/kernel/batch", "application/json", None, &batch.to_string());
    assert_eq!(refused.status, 400);
    assert!(refused.body.contains("/requests/1/limit"), "{}", refused.body);
    let page = get("/resolve?operation=x&limit=many");
    assert!(page.body.contains("limit takes a whole number of comparison groups"), "{}", page.body);
    // One run is a page saying a comparison needs another (its exports refuse it).
    let one = get(&format!("/compare?run={SEED_WORKLOAD_RUN}"));
    assert_eq!(one.status, 200);
    assert!(one.body.contains("a comparison needs at least one more"));
    assert_eq!(get(&format!("/compare?run={SEED_WORKLOAD_RUN}&format=csv")).status, 400);
    let nine: Vec<String> =
        SERVER.state.model().judgement.runs.iter().take(9).map(|r| format!("run={}", r.id)).collect();
    assert_eq!(get(&format!("/compare?{}", nine.join("&"))).status, 400);
    assert_eq!(get("/compare?run=nope&run=nada").status, 404);
    assert_eq!(get(&format!("/compare?run={SEED_WORKLOAD_RUN}&run={SEED_WORKLOAD_RUN}")).status, 400);
    assert_eq!(get("/operations/no-such-op").status, 404);
    let html_404 = get_html("/projects/no-such-project");
    assert_eq!(html_404.status, 404);
    assert!(html_404.content_type.starts_with("text/html") && html_404.body.contains("Request id"));
    let far = get("/api/v1/records?page=99999999999");
    assert_eq!(far.status, 200);
    let far = far.json();
    assert_eq!(far["page"], far["pages"]);
    assert!(far["records"].as_array().unwrap().len() <= 100);
    let long_query = format!("/?q={}", "a".repeat(10_000));
    assert_eq!(get(&long_query).status, 200);
    assert_eq!(get("/resolve?operation=gqa_paged_decode_h32_kv4_d128_ps1&axes=batch_size").status, 200);
}

#[test]
fn resolve_compare_records_and_catalog_pages_agree_with_the_ranking() {
    let answer = post("/api/v1/resolve/kernel", "application/json", None, &seed_resolve_request().to_string()).json();
    assert_eq!(answer["mode"], "exact");
    assert_eq!(answer["cohorts"][0]["fastest"][0]["runId"], SEED_WORKLOAD_RUN);
    let page = get_html(
        "/resolve?operation=gqa_paged_decode_h32_kv4_d128_ps1&axes=batch_size%3D16%2C+num_pages%3D1070%2C+len_indptr%3D17%2C+num_kv_indices%3D1020&hardware=NVIDIA+B200",
    );
    assert!(page.body.contains("Answer: exact"));
    assert!(page.body.contains(&format!("/runs/{SEED_WORKLOAD_RUN}")));
    // An unmeasured case brackets along its one differing axis.
    let mut unmeasured = seed_resolve_request();
    unmeasured["axes"]["num_pages"] = json!(1071);
    let answer = post("/api/v1/resolve/kernel", "application/json", None, &unmeasured.to_string()).json();
    assert_ne!(answer["mode"], "exact");

    let model = SERVER.state.model();
    let cohort = model.judgement.cohorts.iter().find(|c| c.ranking.len() >= 3).unwrap();
    let ids: Vec<String> = cohort.ranking.iter().take(3).map(|e| model.judgement.runs[e.run].id.to_string()).collect();
    let query = ids.iter().map(|i| format!("run={i}")).collect::<Vec<_>>().join("&");
    let compared = get(&format!("/api/v1/compare?{query}")).json();
    assert_eq!(compared["sameComparisonGroup"], true);
    assert_eq!(compared["runs"][0]["relativeToBestInGroup"], 1.0);
    let csv = get(&format!("/compare?{query}&format=csv"));
    assert!(csv.content_type.starts_with("text/csv"));
    assert_eq!(csv.body.lines().count(), 4);
    let markdown = get(&format!("/compare?{query}&format=markdown"));
    assert!(markdown.body.starts_with("| run |") && markdown.body.contains(&ids[2]));
    // The #2 run's page links "Compare with #1" to the group's leader.
    let second = get_html(&format!("/runs/{}", ids[1]));
    assert!(second.body.contains(&format!("/compare?run={}&amp;run={}", ids[1], ids[0])), "no Compare with #1 link");

    let atom = get("/records.atom");
    assert!(atom.body.starts_with("<?xml") && atom.body.contains("<feed xmlns=\"http://www.w3.org/2005/Atom\">"));
    assert_eq!(atom.body.matches("<entry>").count(), 50.min(model.judgement.record_events.len()));
    let records = get("/api/v1/records").json();
    assert_eq!(records["total"], model.judgement.record_events.len());

    let operation = get_html("/operations/gqa-paged-decode-h32-kv4-d128-ps1");
    for part in [
        "Current records per workload",
        "Leaderboard",
        "Sweep",
        "Implementations",
        "Semantics",
        "<svg",
        "<polyline",
        "kv_indptr",
    ] {
        assert!(operation.body.contains(part), "operation page lacks {part}");
    }
    let gpus = get("/api/v1/gpus").json();
    let total: u64 = gpus["gpus"].as_array().unwrap().iter().map(|g| g["runs"].as_u64().unwrap()).sum();
    let with_hardware =
        model.judgement.runs.iter().filter(|r| r.hardware_model.as_deref().is_some_and(|m| !m.is_empty())).count();
    assert_eq!(total as usize, with_hardware);
    let search = get("/api/v1/search?q=gqa%20paged%20decode%20h32").json();
    assert!(
        search["results"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["href"] == "/operations/gqa-paged-decode-h32-kv4-d128-ps1")
    );
    let serving = get("/api/v1/serving").json();
    assert_eq!(serving["total"], model.serving_runs.len());
}
