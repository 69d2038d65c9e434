//! The route table. Every route is registered through [`Routes`], which records its
//! description for `/api/v1/openapi.json`; the handlers live with their pages in
//! [`crate::pages`].

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::handler::Handler;
use axum::routing::{MethodRouter, get, post};

use crate::openapi::{Method, Produces, RouteDoc};
use crate::pages::{
    Shared, compare, docs, gpus, home, implementation, operation, project, records, resolve, run, serving, submission,
};

/// Request bodies above this are refused (413) before a handler sees them: the largest
/// legitimate body is a submission bundle, whose manifests are capped at 1 MiB each.
pub const MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

struct Routes {
    router: Router<Shared>,
    docs: Vec<RouteDoc>,
}

impl Routes {
    #[allow(clippy::too_many_arguments)] // one call per route reads as a table of the API
    fn add<H, T>(
        mut self,
        method: Method,
        path: &'static str,
        produces: Produces,
        summary: &'static str,
        query: &'static [&'static str],
        auth: bool,
        handler: H,
    ) -> Self
    where
        H: Handler<T, Shared>,
        T: 'static,
    {
        let method_router: MethodRouter<Shared> = match method {
            Method::Get => get(handler),
            Method::Post => post(handler),
        };
        self.router = self.router.route(path, method_router);
        self.docs.push(RouteDoc { method, path, summary, produces, query, auth });
        self
    }
}

fn table() -> Routes {
    use Method::{Get, Post};
    use Produces::*;
    Routes { router: Router::new(), docs: Vec::new() }
        .add(
            Get,
            "/",
            Html,
            "Home with search over operations, aliases, implementations and hardware",
            &["q"],
            false,
            home::page,
        )
        .add(Get, "/api/v1/search", Json, "Search results", &["q"], false, home::api_search)
        .add(Get, "/runs/{id}", Html, "Run dossier by id, digest or short id", &[], false, run::page)
        .add(Get, "/api/v1/runs/{id}", Json, "Run dossier as JSON", &[], false, run::api)
        .add(
            Post,
            "/runs/{id}/attestations",
            Html,
            "File an attestation from the run page's form",
            &[],
            true,
            run::form_attestation,
        )
        .add(
            Post,
            "/api/v1/runs/{id}/attestations",
            Json,
            "File an attestation (reproduced, could_not_reproduce, environment_note, regression_observed)",
            &[],
            true,
            run::api_attestation,
        )
        .add(Get, "/operations", Html, "All operations", &["page"], false, operation::list_page)
        .add(Get, "/api/v1/operations", Json, "All operations as JSON", &["page"], false, operation::api_list)
        .add(
            Get,
            "/operations/{slug}",
            Html,
            "Operation: current records, leaderboard, sweep chart, implementations, semantics",
            &[],
            false,
            operation::page,
        )
        .add(Get, "/api/v1/operations/{slug}", Json, "Operation as JSON", &[], false, operation::api)
        .add(
            Get,
            "/resolve",
            Html,
            "Resolve form and answer",
            &["operation", "axes", "dtypes", "hardware", "framework"],
            false,
            resolve::page,
        )
        .add(
            Post,
            "/api/v1/resolve/kernel",
            Json,
            "Resolve one workload to the fastest compatible kernels",
            &[],
            false,
            resolve::api,
        )
        .add(Post, "/api/v1/resolve/kernel/batch", Json, "Resolve 1 to 20 workloads", &[], false, resolve::api_batch)
        .add(
            Get,
            "/compare",
            Html,
            "Compare 2 to 8 runs; format=markdown|csv|json exports",
            &["run", "format"],
            false,
            compare::page,
        )
        .add(Get, "/api/v1/compare", Json, "Comparison as JSON", &["run"], false, compare::api)
        .add(Get, "/records", Html, "Record events, newest first", &["page"], false, records::page)
        .add(Get, "/records.atom", Atom, "Record events as an Atom feed", &[], false, records::atom_feed)
        .add(Get, "/api/v1/records", Json, "Record events as JSON", &["page"], false, records::api)
        .add(Get, "/projects", Html, "Projects", &["page"], false, project::list_page)
        .add(Get, "/api/v1/projects", Json, "Projects as JSON", &["page"], false, project::api_list)
        .add(Get, "/projects/{slug}", Html, "One project and its implementations", &[], false, project::page)
        .add(Get, "/api/v1/projects/{slug}", Json, "Project as JSON", &[], false, project::api)
        .add(Get, "/implementations/{slug}", Html, "One implementation and its runs", &[], false, implementation::page)
        .add(Get, "/api/v1/implementations/{slug}", Json, "Implementation as JSON", &[], false, implementation::api)
        .add(Get, "/gpus", Html, "Hardware in the index", &[], false, gpus::page)
        .add(Get, "/api/v1/gpus", Json, "Hardware as JSON", &[], false, gpus::api)
        .add(
            Get,
            "/serving",
            Html,
            "Serving (end-to-end inference) runs",
            &["page", "workload"],
            false,
            serving::list_page,
        )
        .add(Get, "/api/v1/serving", Json, "Serving runs as JSON", &["page", "workload"], false, serving::api_list)
        .add(Get, "/serving/runs/{id}", Html, "One serving run", &[], false, serving::run_page)
        .add(Get, "/api/v1/serving/runs/{id}", Json, "Serving run as JSON", &[], false, serving::api_run)
        .add(
            Post,
            "/api/v1/submissions",
            Json,
            "Submit a manifest bundle (stored Reported, unpublished)",
            &[],
            true,
            submission::api_submit,
        )
        .add(Get, "/submissions/{id}", Html, "A submission and its validation", &[], false, submission::page)
        .add(Get, "/api/v1/submissions/{id}", Json, "Submission as JSON", &[], false, submission::api)
        .add(Get, "/docs", Html, "How the index works: ranking, evidence, sources, API", &[], false, docs::page)
        .add(Get, "/api/v1/openapi.json", Json, "This document", &[], false, docs::api_openapi)
        .add(Get, "/static/site.css", Asset, "Stylesheet", &[], false, docs::site_css)
        .add(Get, "/static/site.js", Asset, "Progressive-enhancement script", &[], false, docs::site_js)
        .add(Get, "/healthz", Asset, "Liveness", &[], false, docs::healthz)
}

/// Every route's description, in registration order.
pub fn route_docs() -> Vec<RouteDoc> {
    table().docs
}

pub fn router(state: Shared) -> Router {
    let Routes { router, .. } = table();
    router
        .fallback(crate::http::not_found)
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .layer(axum::middleware::from_fn(crate::http::middleware))
        .with_state(state)
}
