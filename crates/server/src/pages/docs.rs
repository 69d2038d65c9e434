//! Docs (`/docs`), the OpenAPI document, the static assets and `/healthz`.

use axum::Extension;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use maud::{Markup, html};

use super::{Answer, SITE_CSS, SITE_JS, Shared, html_response, json_response, layout, section};
use crate::model::ReadModel;
use crate::openapi::RouteDocs;

// ---------- docs ----------

pub fn render(model: &ReadModel, routes: &[crate::openapi::RouteDoc]) -> Markup {
    layout(
        "Docs",
        html! {
            h1 { "How KernelIndex works" }
            (section("identity", "Identity", html! {
                p { "Every record is a " code { "kernelindex.dev/v1alpha1" } " manifest. Its digest is the sha256 of the RFC 8785 canonical JSON of its apiVersion, kind and spec. Two runs are compared only when they share a comparison key: operation, workload, protocol, environment, correctness rule and primary metric." }
            }))
            (section("ranking", "Ranking (ranking-v1)", html! {
                p { "A run is eligible when its status is passed, it is published, not retracted, not superseded by a published run, and has a primary metric; otherwise the page names its reasons (UNPUBLISHED, STATUS_…, RETRACTED, SUPERSEDED, MISSING_PRIMARY_METRIC)." }
                p { "Ranks are dense inside one comparison group, best first. Equal values tie; otherwise runs tie only when both carry confidence intervals that overlap, and never in a source-native group. Inside a tie: higher evidence, then newer observation, then id." }
            }))
            (section("evidence", "Evidence levels", html! {
                ul { @for level in ["replicated", "verified", "reproducible", "reported"] {
                    li { (super::evidence_badge(level)) " — " (super::evidence_meaning(level)) }
                } }
                p { "Community attestations never change the evidence level." }
            }))
            (section("search", "Search", html! {
                p { "One box answers: free words, " code { "filter:value" } " filters and " code { "axis=N" } " workload axes, in any order, e.g. "
                    code { "gqa decode gpu:h200 batch_size=16" } ", " code { "rmsnorm hidden_size=4096 trust:verified" } ", " code { "gemm n=4096 k=4096 gpu:b200" } ". "
                    "The same grammar is read by " code { "/api/v1/search?q=" } ", " code { "ki search" } " and the MCP " code { "search" } " tool." }
                dl.fields {
                    div { dt { "words" } dd { "every word must be in the operation's, implementation's, project's or GPU's name (any part of it: " code { "norm" } " finds " code { "rmsnorm" } "; case does not matter); whole words and exact names rank first, then the most-run" } }
                    div { dt { code { "gpu:" } } dd { "a GPU model, e.g. " code { "gpu:h200" } " (part of its name)" } }
                    div { dt { code { "dtype:" } } dd { "a workload dtype; " code { "bfloat16" } " and " code { "bf16" } " are one" } }
                    div { dt { code { "arch:" } } dd { "the GPU architecture, e.g. " code { "arch:sm_90" } } }
                    div { dt { code { "model:" } } dd { "a model whose operations these are (the definitions' model tags), e.g. " code { "model:llama-3-1-8b" } } }
                    div { dt { code { "family:" } } dd { "the operation family, e.g. " code { "family:gqa-paged-attention" } } }
                    div { dt { code { "source:" } } dd { "where runs came from, e.g. " code { "source:flashinfer-bench" } } }
                    div { dt { code { "trust:" } } dd { "least evidence: " code { "reported" } ", " code { "reproducible" } ", " code { "verified" } " or " code { "replicated" } } }
                    div { dt { code { "license:" } } dd { "part of the implementation's licence expression, e.g. " code { "license:apache-2.0" } } }
                    div { dt { code { "language:" } } dd { "the implementation's language, e.g. " code { "language:cuda" } } }
                    div { dt { code { "installable:" } } dd { code { "yes" } " or " code { "no" } } }
                    div { dt { code { "axis=N" } } dd { "a workload axis at a value: the answer is the ranked runs of that workload (exact), the groups to choose from, or the nearest measured cases" } }
                    div { dt { "ids" } dd { "a run id or its first 8 characters, a " code { "sha256:" } " digest, or the source's own id (e.g. " code { "submission/555004" } ") finds the run" } }
                }
                p { "Filters other than " code { "family:" } " and " code { "model:" } " keep an operation, implementation or GPU when at least one of its runs passes them all. A word that matches nothing gets “did you mean”; a filter that does not exist is named." }
                p { "The words are looked up in the catalog's search index, kept in the same transaction as every import: one row per operation (name, slug, family, aliases), implementation (slug, title), project and GPU, found by substring through a trigram index (SQLite FTS5 on the embedded catalog, PostgreSQL pg_trgm on a shared one; both give the same answer to every query). Quotes, " code { "*" } ", " code { "%" } ", " code { "NEAR" } " and the like are plain characters of a word, never query syntax. Plain words are read first: GPU names and aliases (" code { "h200" } ", " code { "H100 SXM" } "), models in any spelling (" code { "llama 3.1 8b" } "), dtypes, common names of operations (" code { "attention decode" } ", " code { "rms norm" } ", " code { "matmul" } "), loose axes (" code { "hidden 4096" } ", " code { "bs=16" } "), projects and implementations; each becomes a filter or axis shown as a chip you can remove, and words that match nothing are named. A misspelt word is read as the nearest name of the whole catalog (“did you mean” shows the corrected query, whose results are shown)." }
            }))
            (section("resolve", "Resolve, models and GPUs for your case", html! {
                p { a href="/resolve" { "Resolve" } " (and " code { "POST /api/v1/resolve/kernel" } ", " code { "ki resolve" } ", the MCP " code { "resolve" } " tool) reads its fields as the search reads words: "
                    "the operation by name, slug, alias or plain words (" code { "gqa paged decode" } ", " code { "rms norm" } ": of the operations they name, the one measured on your GPU that has your axes and the most runs, the others listed), "
                    "the GPU as people write it (" code { "H200" } ", " code { "h200" } ", " code { "H100 SXM" } "), an axis by a loose name (" code { "batch" } " is the operation's " code { "batch_size" } ") and a dtype by its short form. "
                    "The answer says what it read as what (" code { "readAs" } "). A case never measured is answered with the nearest measured cases on either side (batch 32 when 16 and 64 were measured), each naming every axis that differs." }
                p { "A model page answers for your batch size and context length (the form's fields; 16 and 1,024 tokens unless you say otherwise): for each operation and GPU the best runs are taken from the measured workload nearest that case, named in its measured-case column. "
                    "The " a href="/gpus" { "GPU list" } " names common GPUs with no runs yet and the nearest measured GPU of the same vendor (the same architecture first)." }
                p { "Every page that names a fastest run names the best deployable one beside it: public source, a permissive licence and an install recipe. The native GQA paged-decode kernel's recipe builds it from this repository and calls it from PyTorch (" code { "crates/kernels/python/ki_gqa_paged_decode.py" } ", NVRTC through CuPy)." }
            }))
            (section("sources", "Sources", html! {
                dl.fields { @for s in &model.judgement.sources {
                    div id={ "source-" (s.slug) } {
                        dt { (s.name) }
                        dd { (s.policy.as_ref().and_then(|p| p.get("license")).and_then(|l| l.as_str()).unwrap_or("terms not recorded"))
                            " — " (s.policy.as_ref().and_then(|p| p.get("terms")).and_then(|l| l.as_str()).unwrap_or("")) }
                    }
                } }
            }))
            (section("api", "API", html! {
                p { "Every page has a JSON twin under " code { "/api/v1" } ". Errors are RFC 9457 problem+json with a requestId. Writes take an API key (" code { "Authorization: Bearer ki_…" } ") created with " code { "ki admin key create" } "; each key has scopes and a daily quota (429 with Retry-After when spent). "
                    a href="/api/v1/openapi.json" { "OpenAPI document" } }
                table { thead { tr { th scope="col" { "method" } th scope="col" { "path" } th scope="col" { "what" } } }
                    tbody { @for r in routes { tr { td { (r.method.as_str().to_uppercase()) } td { code { (r.path) } } td { (r.summary) } } } } }
            }))
        },
    )
}

// ---------- docs and assets ----------

pub async fn page(State(state): State<Shared>, Extension(routes): Extension<RouteDocs>) -> Answer {
    Ok(html_response(render(&state.model(), &routes)))
}

pub async fn api_openapi(Extension(routes): Extension<RouteDocs>) -> Answer {
    Ok(json_response(&crate::openapi::document(&routes)))
}

pub async fn site_css() -> Response {
    ([(header::CONTENT_TYPE, "text/css; charset=utf-8"), (header::CACHE_CONTROL, "public, max-age=3600")], SITE_CSS)
        .into_response()
}

pub async fn site_js() -> Response {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8"), (header::CACHE_CONTROL, "public, max-age=3600")],
        SITE_JS,
    )
        .into_response()
}

pub async fn healthz() -> &'static str {
    "ok"
}
