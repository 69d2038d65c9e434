//! The route table. Every route is registered through [`Routes::add`] with its
//! [`RouteDoc`]: the query, body and answer types its handler uses, which
//! `/api/v1/openapi.json` describes; the handlers live with their pages in
//! [`crate::pages`].

use axum::Extension;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::handler::Handler;
use axum::routing::{MethodRouter, get, post};
use serde_json::Value;

use crate::http::{MAX_BODY_BYTES, RouteMethods};
use crate::openapi::{Link, Method, Produces, RouteDoc, RouteDocs};
use crate::pages::{
    PageQuery, Shared, compare, docs, exports, feed, gpu, gpus, home, implementation, models, operation, project,
    records, resolve, run, run_list, search, serving, source, submission, verifications,
};

struct Routes {
    router: Router<Shared>,
    docs: Vec<RouteDoc>,
}

impl Routes {
    fn add<H, T>(mut self, doc: RouteDoc, handler: H) -> Self
    where
        H: Handler<T, Shared>,
        T: 'static,
    {
        let method_router: MethodRouter<Shared> = match doc.method {
            Method::Get => get(handler),
            Method::Post => post(handler),
        };
        self.router = self.router.route(doc.path, method_router);
        self.docs.push(doc);
        self
    }
}

use Method::{Get, Post};
use Produces::{Atom, Export, Html, Json};

fn page(path: &'static str, summary: &'static str) -> RouteDoc {
    RouteDoc::new(Get, path, Html, summary)
}

fn api(path: &'static str, summary: &'static str) -> RouteDoc {
    RouteDoc::new(Get, path, Json, summary)
}

/// Longest run reference (a uuid, a digest with its prefix, a short id) a page takes.
const RUN_REFERENCE_CHARS: u32 = 200;
/// Longest job reference (a uuid or a `sha256:` key).
const JOB_REFERENCE_CHARS: u32 = 100;

const TO_RUN: Link = Link {
    name: "run",
    operation: (Get, "/api/v1/runs/{id}"),
    parameter: "id",
    expression: "$response.body#/runs/0/id",
};

fn table() -> Routes {
    Routes { router: Router::new(), docs: Vec::new() }
        .add(
            page("/", "Home with search over operations, aliases, implementations and hardware")
                .query::<home::SearchQuery>(),
            home::page,
        )
        .add(
            api("/api/v1/search", "Search results")
                .query::<home::SearchQuery>()
                .answers::<search::SearchAnswer<'static>>(),
            home::api_search,
        )
        .add(
            page("/runs/{id}", "Run dossier by id, digest or short id (`?page=N`: its attestations' page)")
                .path_max_length(RUN_REFERENCE_CHARS)
                .query::<PageQuery>(),
            run::page,
        )
        .add(
            api("/api/v1/runs", "Runs, filtered, a page at a time (cursor)")
                .query::<run_list::RunsQuery>()
                .answers::<ki_ranking::feed::RunPage>()
                .link(TO_RUN),
            run_list::api,
        )
        .add(
            api(
                "/api/v1/feed",
                "What changed after `since`: record events, publications, corrections, verifications; oldest first",
            )
            .query::<feed::FeedQuery>()
            .answers::<ki_ranking::feed::FeedPage>(),
            feed::api,
        )
        .add(
            RouteDoc::new(
                Get,
                "/api/v1/exports/latest",
                Produces::Asset("application/zstd"),
                "The current catalog as .jsonl.zst (sha256 and row count in headers)",
            ),
            exports::latest,
        )
        .add(
            api("/api/v1/runs/{id}", "Run dossier as JSON (`?page=N`: its attestations' page, newest first)")
                .path_max_length(RUN_REFERENCE_CHARS)
                .query::<PageQuery>()
                .answers::<crate::dossier::RunDossier>(),
            run::api,
        )
        .add(
            RouteDoc::new(Post, "/runs/{id}/attestations", Html, "File an attestation from the run page's form")
                .path_max_length(RUN_REFERENCE_CHARS)
                .body::<run::AttestationForm>(&["application/x-www-form-urlencoded"])
                .auth()
                .status(303),
            run::form_attestation,
        )
        .add(
            RouteDoc::new(
                Post,
                "/api/v1/runs/{id}/attestations",
                Json,
                "File an attestation (reproduced, could_not_reproduce, environment_note, regression_observed)",
            )
            .path_max_length(RUN_REFERENCE_CHARS)
            .body::<run::AttestationInput>(&["application/json"])
            .answers::<ki_catalog::Attestation>()
            .auth()
            .status(201),
            run::api_attestation,
        )
        .add(page("/operations", "All operations").query::<PageQuery>(), operation::list_page)
        .add(
            api("/api/v1/operations", "All operations as JSON")
                .query::<PageQuery>()
                .answers::<operation::OperationList>(),
            operation::api_list,
        )
        .add(
            page(
                "/operations/{slug}",
                "Operation: current records, leaderboard of a chosen group, every group, sweep charts per GPU, implementations, semantics",
            )
            .query::<operation::OperationQuery>(),
            operation::page,
        )
        .add(
            api("/api/v1/operations/{slug}", "Operation as JSON")
                .query::<operation::OperationQuery>()
                .answers::<operation::OperationView>(),
            operation::api,
        )
        .add(page("/resolve", "Resolve form and answer").query::<resolve::ResolveForm>(), resolve::page)
        .add(
            RouteDoc::new(
                Post,
                "/api/v1/resolve/kernel",
                Json,
                "Resolve one workload to the fastest compatible kernels",
            )
            .body::<ki_ranking::ResolveRequest>(&["application/json"])
            .answers::<ki_ranking::ResolveResponse>(),
            resolve::api,
        )
        .add(
            RouteDoc::new(Post, "/api/v1/resolve/kernel/batch", Json, "Resolve 1 to 20 workloads")
                .body::<resolve::BatchInput>(&["application/json"])
                .answers::<resolve::BatchAnswer>(),
            resolve::api_batch,
        )
        .add(
            RouteDoc::new(Get, "/compare", Export, "Compare 2 to 8 runs; format=markdown|csv|json exports; with fewer runs the page says how to pick them")
                .query::<compare::ComparePageQuery>()
                .answers::<ki_ranking::Comparison>(),
            compare::page,
        )
        .add(
            api("/api/v1/compare", "Comparison as JSON")
                .query::<compare::CompareQuery>()
                .answers::<ki_ranking::Comparison>(),
            compare::api,
        )
        .add(page("/records", "Record events, newest first (gpu=, verified=1, source=1)").query::<records::RecordsQuery>(), records::page)
        .add(RouteDoc::new(Get, "/records.atom", Atom, "Record events as an Atom feed").query::<records::RecordsQuery>(), records::atom_feed)
        .add(
            api("/api/v1/records", "Record events as JSON").query::<records::RecordsQuery>().answers::<records::RecordList>(),
            records::api,
        )
        .add(page("/projects", "Projects").query::<PageQuery>(), project::list_page)
        .add(
            api("/api/v1/projects", "Projects as JSON").query::<PageQuery>().answers::<project::ProjectList>(),
            project::api_list,
        )
        .add(page("/projects/{slug}", "One project and its implementations"), project::page)
        .add(api("/api/v1/projects/{slug}", "Project as JSON").answers::<project::ProjectView>(), project::api)
        .add(page("/implementations/{slug}", "One implementation and its runs"), implementation::page)
        .add(
            api("/api/v1/implementations/{slug}", "Implementation as JSON")
                .answers::<implementation::ImplementationView>(),
            implementation::api,
        )
        .add(
            RouteDoc::new(
                Get,
                "/implementations/{slug}/source",
                Produces::Asset("text/plain"),
                "An implementation's source as held by the index (raw text); `file` picks one file of a Solution",
            )
            .query::<source::SourceQuery>(),
            source::raw,
        )
        .add(
            api("/api/v1/implementations/{slug}/source", "An implementation's source, file by file, as JSON")
                .answers::<source::SourceView>(),
            source::api,
        )
        .add(
            page("/implementations/{slug}/diff", "An implementation's source against its previous revision"),
            source::diff_page,
        )
        .add(
            api("/api/v1/implementations/{slug}/diff", "An implementation's source against its previous revision")
                .answers::<source::RevisionDiff>(),
            source::diff_api,
        )
        .add(page("/gpus", "Hardware in the index"), gpus::page)
        .add(api("/api/v1/gpus", "Hardware as JSON").answers::<gpus::GpuList>(), gpus::api)
        .add(
            page(
                "/gpus/{slug}",
                "One GPU model: best verified and best reported run per operation, activity, evidence mix",
            ),
            gpu::page,
        )
        .add(api("/api/v1/gpus/{slug}", "One GPU model as JSON").answers::<gpu::GpuView>(), gpu::api)
        .add(
            page("/models", "Models named by operation tags, with how many of their operations are measured"),
            models::list_page,
        )
        .add(api("/api/v1/models", "Models as JSON").answers::<models::ModelList>(), models::api_list)
        .add(
            page(
                "/models/{slug}",
                "One model: its operations, the best kernels per operation and GPU for a batch and context length, its gaps",
            )
            .query::<models::CaseForm>(),
            models::page,
        )
        .add(
            api("/api/v1/models/{slug}", "One model as JSON")
                .query::<models::CaseForm>()
                .answers::<models::ModelView>(),
            models::api,
        )
        .add(
            page("/serving", "Serving (end-to-end inference) runs").query::<serving::ServingQuery>(),
            serving::list_page,
        )
        .add(
            api("/api/v1/serving", "Serving runs as JSON")
                .query::<serving::ServingQuery>()
                .answers::<serving::ServingList>(),
            serving::api_list,
        )
        .add(page("/serving/runs/{id}", "One serving run"), serving::run_page)
        .add(
            api("/api/v1/serving/runs/{id}", "Serving run as JSON").answers::<serving::ServingRunView>(),
            serving::api_run,
        )
        .add(
            RouteDoc::new(Post, "/api/v1/submissions", Json, "Submit a manifest bundle (stored Reported, unpublished)")
                // A manifest or a bundle of them: one mapping per document.
                .body::<serde_json::Map<String, Value>>(&["application/yaml", "application/json"])
                .answers::<submission::SubmissionView>()
                .auth()
                .status(201),
            submission::api_submit,
        )
        .add(page("/submissions/{id}", "A submission, its validation and its verification jobs"), submission::page)
        .add(
            api("/api/v1/submissions/{id}", "Submission as JSON").answers::<submission::SubmissionView>(),
            submission::api,
        )
        .add(
            page(
                "/verifications",
                "The verification queue: pending, running (with the worker), done (with the verdict), parked",
            )
            .query::<verifications::VerificationsQuery>(),
            verifications::page,
        )
        .add(
            api("/api/v1/verifications", "Verification jobs as JSON, by state")
                .query::<verifications::VerificationsQuery>()
                .answers::<verifications::QueueView>(),
            verifications::api_list,
        )
        .add(
            page("/verifications/{id}", "One verification job and its attempts").path_max_length(JOB_REFERENCE_CHARS),
            verifications::job_page,
        )
        .add(
            api(
                "/api/v1/verifications/{id}",
                "One verification job (JobDetail, as `ki verify-queue status --json JOB` prints it)",
            )
            .path_max_length(JOB_REFERENCE_CHARS)
            .answers::<ki_catalog::queue::JobDetail>(),
            verifications::api_job,
        )
        .add(page("/docs", "How the index works: ranking, evidence, sources, API"), docs::page)
        .add(api("/api/v1/openapi.json", "This document").answers::<Value>(), docs::api_openapi)
        .add(RouteDoc::new(Get, "/static/site.css", Produces::Asset("text/css"), "Stylesheet"), docs::site_css)
        .add(
            RouteDoc::new(Get, "/static/site.js", Produces::Asset("text/javascript"), "Progressive-enhancement script"),
            docs::site_js,
        )
        .add(RouteDoc::new(Get, "/healthz", Produces::Asset("text/plain"), "Liveness"), docs::healthz)
}

/// Every route's description, in registration order.
pub fn route_docs() -> Vec<RouteDoc> {
    table().docs
}

pub fn router(state: Shared) -> Router {
    let Routes { router, docs } = table();
    let methods = RouteMethods::new(docs.iter().map(|doc| (doc.method.as_str(), doc.path)));
    router
        .fallback(crate::http::not_found)
        .layer(Extension(RouteDocs::from(docs)))
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn_with_state(methods, crate::http::middleware))
        .with_state(state)
}
