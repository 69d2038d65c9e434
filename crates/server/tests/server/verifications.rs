//! Issue 16's visible state, against a real server on real SQLite and PostgreSQL catalogs:
//! the queue's JSON and page (pending, running with its worker, done with its verdict,
//! parked with its reason), one job's JSON (the `JobDetail` the CLI prints), and the jobs on a
//! submission's page. The jobs are moved through the queue's own API; the done one is
//! completed with the queue's fixture executor (which re-issues catalog runs and measures
//! nothing: this is a test of what the server shows, not of verification).

use std::collections::BTreeMap;
use std::time::Duration;

use crate::serving::{Database, block_on, serve};
use ki_catalog::Scope;
use ki_catalog::queue::{
    EnqueueRequest, EnvironmentFailure, Executor, FixtureExecutor, JobSpec, Origin, Requirement, Subject, WorkloadSet,
};
use ki_ranking::reverify::EnvironmentFacts;
use serde_json::json;

const OPERATION: &str = "gqa_paged_decode_h32_kv4_d128_ps1";
const HOSTILE_NAME: &str = "<script>alert('queue')</script>";

fn h200() -> EnvironmentFacts {
    EnvironmentFacts {
        gpu: "NVIDIA H200".into(),
        architecture: Some("sm_90".into()),
        driver: Some("580.159.04".into()),
        cuda_toolkit: Some("13.0".into()),
        framework: None,
        libraries: BTreeMap::new(),
    }
}

/// Specs re-running three of our bundled H200 runs, each on its own workload.
fn implementation_specs(catalog: &ki_catalog::Catalog) -> Vec<JobSpec> {
    let runs = block_on(catalog.rows::<ki_model::rows::BenchmarkRunRow>()).unwrap();
    let mut by_workload: BTreeMap<String, &ki_model::rows::BenchmarkRunRow> = BTreeMap::new();
    for run in &runs {
        let protocol = run.manifest["protocol"]["metadata"]["name"].as_str().unwrap_or("");
        if protocol.starts_with("kernelindex-rerun") && run.hardware_model == "NVIDIA H200" {
            by_workload.entry(run.workload_id.clone()).or_insert(run);
        }
    }
    assert!(by_workload.len() >= 3, "the bundle holds our H200 runs");
    by_workload
        .into_iter()
        .take(3)
        .map(|(workload, run)| JobSpec {
            subject: Subject::Implementation {
                implementation_id: run.implementation_id.clone(),
                implementation_digest: run.manifest["run"]["spec"]["implementationDigest"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            },
            workloads: WorkloadSet { operation: OPERATION.into(), workloads: vec![workload] },
            protocol: run.manifest["protocol"]["metadata"]["name"].as_str().unwrap().to_string(),
            requirement: Requirement::default(),
            basis_run_id: None,
        })
        .collect()
}

fn the_queue_is_visible(database: Database) {
    let catalog = database.open_with_bundle();
    let server = serve(catalog.clone(), ki_server::connections::Limits::default());
    let specs = implementation_specs(&catalog);
    let lease = Duration::from_secs(600);
    let worker = block_on(catalog.register_worker("gpu-host-7", &h200())).unwrap();

    // Done: claimed, run by the fixture executor, published.
    let done = block_on(catalog.enqueue(&EnqueueRequest::new(specs[0].clone(), Origin::Submission))).unwrap().job;
    let claimed = block_on(catalog.claim(&worker, lease)).unwrap().expect("a job to claim");
    assert_eq!(claimed.job.id, done.id);
    let executor = FixtureExecutor::new(catalog.clone(), h200(), Duration::ZERO);
    let outcome = block_on(executor.execute(&claimed)).unwrap_or_else(|e| panic!("the fixture executor: {e:?}"));
    block_on(catalog.complete(&claimed.lease, &outcome)).unwrap();
    // Running: claimed and held.
    let running = block_on(catalog.enqueue(&EnqueueRequest::new(specs[1].clone(), Origin::Submission))).unwrap().job;
    let held = block_on(catalog.claim(&worker, lease)).unwrap().expect("a job to claim");
    assert_eq!(held.job.id, running.id);
    // Parked: its one allowed environment failure spent.
    let mut request = EnqueueRequest::new(specs[2].clone(), Origin::Reverification);
    request.max_environment_failures = Some(1);
    let parked = block_on(catalog.enqueue(&request)).unwrap().job;
    let failing = block_on(catalog.claim(&worker, lease)).unwrap().expect("a job to claim");
    assert_eq!(failing.job.id, parked.id);
    block_on(catalog.fail(&failing.lease, &EnvironmentFailure::new("no CUDA driver <here>"), Duration::ZERO)).unwrap();
    // Pending: a submission's solution with a hostile name.
    let (_, secret) = block_on(catalog.create_api_key("queue-test", &[Scope::Submit], 10)).unwrap();
    let submission = block_on(catalog.add_submission(Some(&secret), "queue test".into(), Vec::new())).unwrap();
    let mut request = EnqueueRequest::new(
        JobSpec {
            subject: Subject::Solution { name: HOSTILE_NAME.into(), document: json!({"name": "x", "sources": []}) },
            workloads: WorkloadSet { operation: OPERATION.into(), workloads: vec!["w-1".into()] },
            protocol: "kernelindex-rerun-v2".into(),
            requirement: Requirement { gpu: Some("NVIDIA H200".into()), ..Requirement::default() },
            basis_run_id: None,
        },
        Origin::Submission,
    );
    request.submission_id = Some(submission.id.clone());
    let pending = block_on(catalog.enqueue(&request)).unwrap().job;

    // One job's JSON is the catalog's JobDetail as it is (what `ki verify-queue status --json` prints).
    for job in [&done, &running, &parked, &pending] {
        let reply = server.get(&format!("/api/v1/verifications/{}", job.id));
        assert_eq!(reply.status, 200, "{}", reply.body);
        let detail = block_on(catalog.job(&job.id)).unwrap().unwrap();
        assert_eq!(reply.json(), serde_json::to_value(&detail).unwrap(), "{}", database.name);
        // By its key too.
        assert_eq!(server.get(&format!("/api/v1/verifications/{}", job.key)).json()["job"]["id"], job.id.as_str());
    }
    let done_json = server.get(&format!("/api/v1/verifications/{}", done.id)).json();
    assert_eq!(done_json["job"]["state"], "done");
    assert!(!done_json["job"]["published"]["runIds"].as_array().unwrap().is_empty());
    assert_eq!(done_json["workers"][0]["host"], "gpu-host-7");

    // The list by state.
    let list = server.get("/api/v1/verifications?state=running").json();
    assert_eq!(list["summary"], json!({"pending": 1, "running": 1, "runningExpired": 0, "done": 1, "parked": 1}));
    let jobs = list["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 1);
    assert_eq!(jobs[0]["id"], running.id.as_str());
    assert_eq!(list["workers"][&worker.id]["host"], "gpu-host-7");
    let all = server.get("/api/v1/verifications").json();
    assert_eq!(all["jobs"].as_array().unwrap().len(), 4);
    let problem = server.get("/api/v1/verifications?state=finished").problem(400);
    assert!(problem["detail"].as_str().unwrap().contains("state"));
    server.get("/api/v1/verifications/no-such-job").problem(404);

    // The page: every state, the running job's worker, the verdict, the reason, escaped.
    let page = server.get_with("/verifications", &[("accept", "text/html")]);
    assert_eq!(page.status, 200);
    for part in [">Pending</h2>", ">Running</h2>", ">Done</h2>", ">Parked</h2>", "gpu-host-7 (NVIDIA H200)", "passed"] {
        assert!(page.body.contains(part), "the queue page lacks {part:?}");
    }
    assert!(page.body.contains("no CUDA driver &lt;here&gt;"), "the parked reason is not shown escaped");
    assert!(page.body.contains("&lt;script&gt;alert('queue')&lt;/script&gt;"));
    assert!(!page.body.contains(HOSTILE_NAME));
    for (at, _) in page.body.match_indices("<script") {
        assert!(page.body[at..].starts_with("<script src=\"/static/"), "inline script on the queue page");
    }
    let job_page = server.get_with(&format!("/verifications/{}", done.id), &[("accept", "text/html")]);
    assert!(job_page.body.contains("gpu-host-7") && job_page.body.contains("completed"), "{}", job_page.body);

    // The submission's page lists its job.
    let submission_page = server.get_with(&format!("/submissions/{}", submission.id), &[("accept", "text/html")]);
    assert!(submission_page.body.contains(&format!("/verifications/{}", pending.id)), "the submission lists no job");
    let submission_json = server.get(&format!("/api/v1/submissions/{}", submission.id)).json();
    assert_eq!(submission_json["verifications"][0]["id"], pending.id.as_str());
}

#[test]
fn the_verification_queue_is_visible_on_sqlite() {
    the_queue_is_visible(Database::sqlite());
}

#[test]
fn the_verification_queue_is_visible_on_postgres() {
    the_queue_is_visible(Database::postgres());
}

/// `POST /api/v1/submissions` with a `verify:` group: the submission and a job per Solution
/// are written together, the jobs are people's and listed on the submission; an entry that
/// is not valid is refused with its JSON pointer and nothing is written.
fn a_submitted_solution_is_queued_with_its_submission(database: Database) {
    let catalog = database.open_with_bundle();
    let server = serve(catalog.clone(), ki_server::connections::Limits::default());
    let (_, secret) = block_on(catalog.create_api_key("solutions", &[Scope::Submit], 10)).unwrap();
    let bearer = format!("Bearer {secret}");
    let solution = |name: &str| {
        json!({"name": name, "definition": OPERATION, "author": "someone",
               "spec": {"language": "python", "target_hardware": ["H200"], "entry_point": "main.py::run"},
               "sources": [{"path": "main.py", "content": "def run(*args):\n    return None\n"}]})
    };
    let bundle = json!({"verify": [
        {"solution": solution("first"), "workloads": ["0c2489b2-f878-428b-b1bd-d0c6d4c39338"]},
        {"solution": solution("second"), "workloads": ["0c2489b2-f878-428b-b1bd-d0c6d4c39338"],
         "protocol": "kernelindex-rerun-v2-uniform"},
    ]});
    let before = block_on(catalog.queue_summary()).unwrap();
    let created = server.post("/api/v1/submissions", "application/json", Some(&bearer), &bundle.to_string());
    assert_eq!(created.status, 201, "{}", created.body);
    let id = created.json()["id"].as_str().unwrap().to_string();
    let shown = server.get(&format!("/api/v1/submissions/{id}")).json();
    let jobs = shown["verifications"].as_array().expect("the submission lists its jobs");
    assert_eq!(jobs.len(), 2, "{shown:#}");
    for job in jobs {
        assert_eq!(job["origin"], "submission");
        assert_eq!(job["state"], "pending");
        assert_eq!(job["spec"]["subject"]["kind"], "solution");
    }
    let protocols: Vec<&str> = jobs.iter().map(|job| job["spec"]["protocol"].as_str().unwrap()).collect();
    assert!(
        protocols.contains(&"kernelindex-rerun-v2-realistic") && protocols.contains(&"kernelindex-rerun-v2-uniform")
    );

    let bad = json!({"verify": [{"solution": {"name": "no definition"}, "workloads": ["w"]}]});
    let refused = server.post("/api/v1/submissions", "application/json", Some(&bearer), &bad.to_string());
    let problem = refused.problem(422);
    assert!(problem.to_string().contains("/verify/0/solution/definition"), "{problem:#}");
    let after = block_on(catalog.queue_summary()).unwrap();
    assert_eq!(after.pending, before.pending + 2, "the refused bundle enqueued nothing");
}

#[test]
fn a_submitted_solution_is_queued_with_its_submission_on_sqlite() {
    a_submitted_solution_is_queued_with_its_submission(Database::sqlite());
}

#[test]
fn a_submitted_solution_is_queued_with_its_submission_on_postgres() {
    a_submitted_solution_is_queued_with_its_submission(Database::postgres());
}

/// An empty queue says so once, and each state says what would put a job in it instead of
/// showing an empty table.
#[test]
fn an_empty_queue_says_what_would_fill_each_state() {
    let database = Database::sqlite();
    let server = serve(database.open(), ki_server::connections::Limits::default());
    let summary = server.get("/api/v1/verifications").json();
    assert_eq!(summary["jobs"], json!([]), "a new catalog's queue is empty");
    let page = server.get_with("/verifications", &[("accept", "text/html")]);
    assert_eq!(page.status, 200);
    assert!(page.body.contains("The queue is empty: nothing has been enqueued on this index yet."));
    assert_eq!(page.body.matches("<table").count(), 0, "no empty tables");
    for (state, says) in [
        ("pending", "ki verify --enqueue FILE"),
        ("running", "ki verify --worker --database …"),
        ("done", "No job has finished yet."),
        ("parked", "No job is parked."),
    ] {
        let section = &page.body[page.body.find(&format!("<section id=\"{state}\"")).unwrap()..];
        let section = &section[..section.find("</section>").unwrap()];
        assert!(section.contains(says), "{state}: {section}");
    }
}
