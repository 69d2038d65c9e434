//! Issue 18's GPU and model pages (`/gpus/{slug}`, `/models`, `/models/{slug}` and their JSON
//! twins), against a real server on the bundled catalog (a SQLite file, as `ki serve` makes on
//! first start: the public export plus our own H200 runs).

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::LazyLock;

use crate::serving::{BUNDLED, Database, Live, Reply, catalog_rows, serve_rows};
use ki_ranking::TrustLevel;
use ki_server::connections::Limits;
use ki_server::model::ReadModel;
use ki_server::pages::evidence_meaning;
use serde_json::{Map, Value};

/// A text column of a catalog row ("" when absent).
fn text<'a>(row: &'a Map<String, Value>, column: &str) -> &'a str {
    row.get(column).and_then(Value::as_str).unwrap_or("")
}

const H200: &str = "NVIDIA H200";
const SEED_OPERATION: &str = "gqa-paged-decode-h32-kv4-d128-ps1";

pub fn html(path: &str) -> Reply {
    BUNDLED.server.get_with(path, &[("accept", "text/html")])
}

pub fn json(path: &str) -> Value {
    let reply = BUNDLED.server.get(path);
    assert_eq!(reply.status, 200, "{path}: {}", reply.body);
    assert!(reply.content_type.starts_with("application/json"), "{path}: {}", reply.content_type);
    reply.json()
}

fn ns(model: &ReadModel, run: usize) -> f64 {
    let row = model.run(run);
    ki_model::units::to_ns(row.primary_value.get().unwrap(), row.primary_unit.as_deref().unwrap()).unwrap()
}

/// The H200 page's best verified run of the seed operation, checked against the rows: a
/// verified, eligible run of that operation on the H200, the fastest verified run of its
/// comparison group, and that group the one with the most eligible verified runs.
#[test]
fn the_h200_page_names_the_best_verified_run_of_the_seed_operation() {
    let model = BUNDLED.server.state.model();
    let view = json("/api/v1/gpus/nvidia-h200");
    assert_eq!(view["model"], H200);
    let operation = view["operations"].as_array().unwrap().iter().find(|o| o["slug"] == SEED_OPERATION).unwrap();
    let best = &operation["bestVerified"];
    let id = best["run"]["id"].as_str().unwrap();
    let run = model.judgement.find_run(id).unwrap();
    let row = model.run(run);
    assert_eq!(row.hardware_model.as_deref(), Some(H200));
    assert_eq!(model.judgement.operations[model.run_operation(run).unwrap()].slug, SEED_OPERATION);
    assert!(row.reproduced_by_kernelindex, "a verified run comes from our runner");
    let facts = &model.judgement.facts;
    assert!(facts[run].eligible() && facts[run].trust >= TrustLevel::Verified);

    // The seed operation's verified, eligible runs on the H200, by comparison key, from the rows.
    let mut groups: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (r, candidate) in model.judgement.runs.iter().enumerate() {
        let on_h200 = candidate.hardware_model.as_deref() == Some(H200);
        let of_seed = model.run_operation(r).is_some_and(|op| model.judgement.operations[op].slug == SEED_OPERATION);
        if on_h200 && of_seed && facts[r].eligible() && facts[r].trust >= TrustLevel::Verified {
            groups.entry(&*candidate.comparison_key).or_default().push(r);
        }
    }
    let group = &groups[&*row.comparison_key];
    assert_eq!(best["comparisonKey"], &*row.comparison_key);
    assert_eq!(best["groupRuns"], group.len());
    assert_eq!(best["groups"], groups.len());
    assert!(groups.values().all(|g| g.len() <= group.len()), "the best comes from the largest group");
    assert!(group.iter().all(|&r| ns(&model, r) >= ns(&model, run)), "a faster verified run in its group");
    // Every verified run of the operation on the H200 that passed and stands counts, ranked or not.
    let verified = (0..model.judgement.runs.len())
        .filter(|&r| {
            model.run(r).hardware_model.as_deref() == Some(H200)
                && model.run_operation(r).is_some_and(|op| model.judgement.operations[op].slug == SEED_OPERATION)
                && facts[r].trust >= TrustLevel::Verified
                && &*model.run(r).status == "passed"
                && model.run(r).retracted_at.is_none()
        })
        .count();
    assert_eq!(operation["verifiedRuns"], verified);
    assert!(verified >= groups.values().map(Vec::len).sum::<usize>());

    // The page names it: a link to its dossier, its value and implementation.
    let page = html("/gpus/nvidia-h200");
    assert_eq!(page.status, 200);
    assert!(page.content_type.starts_with("text/html"));
    let display = best["run"]["display"].as_str().unwrap();
    let implementation = best["run"]["implementation"].as_str().unwrap();
    assert!(display.ends_with("µs") || display.ends_with("ns"), "{display}");
    assert!(
        page.body
            .contains(&format!("<a href=\"/runs/{id}\"><span class=\"value\">{display}</span> · {implementation}</a>")),
        "no best run link"
    );
}

/// The evidence mix adds up to the GPU's run count, the same count the `/gpus` list shows;
/// the operation counts agree too; and the list links every GPU to its page.
#[test]
fn every_gpu_page_adds_up_to_its_line_on_the_gpu_list() {
    let list = json("/api/v1/gpus");
    let list_page = html("/gpus");
    let gpus = list["gpus"].as_array().unwrap();
    assert!(gpus.iter().any(|g| g["model"] == H200));
    for gpu in gpus {
        let slug = ki_model::slug::slug(gpu["model"].as_str().unwrap());
        assert_eq!(gpu["href"], format!("/gpus/{slug}"));
        assert!(list_page.body.contains(&format!("<a href=\"/gpus/{slug}\">")), "the list does not link {slug}");
        let view = json(&format!("/api/v1/gpus/{slug}"));
        assert_eq!(view["model"], gpu["model"]);
        assert_eq!(view["runs"], gpu["runs"]);
        let model = BUNDLED.server.state.model();
        let runs = &model.runs_by_gpu[model.find_gpu(&slug).unwrap()].1;
        let unranked = runs.iter().filter(|&&r| !model.judgement.facts[r as usize].eligible()).count();
        assert_eq!(view["unrankedRuns"], unranked);
        let levels: Vec<&str> =
            view["evidence"].as_array().unwrap().iter().map(|e| e["level"].as_str().unwrap()).collect();
        assert_eq!(levels, ["reported", "reproducible", "verified", "replicated"]);
        let mix: u64 = view["evidence"].as_array().unwrap().iter().map(|e| e["runs"].as_u64().unwrap()).sum();
        let failed = runs.iter().filter(|&&r| !model.stands(r as usize)).count() as u64;
        assert_eq!(view["failedRuns"], failed);
        assert_eq!(mix + failed, gpu["runs"].as_u64().unwrap(), "{slug}: the evidence mix does not add up");
        assert_eq!(view["operationsTotal"], gpu["operations"]);
        let operations = view["operations"].as_array().unwrap();
        let op_runs: u64 = operations.iter().map(|o| o["runs"].as_u64().unwrap()).sum();
        assert!(op_runs <= mix + failed);
        for o in operations {
            let (verified, reported) = (o["verifiedRuns"].as_u64().unwrap(), o["reportedRuns"].as_u64().unwrap());
            assert!(verified + reported <= o["runs"].as_u64().unwrap());
            if verified == 0 {
                assert!(o["bestVerified"].is_null());
            }
            if reported == 0 {
                assert!(o["bestReported"].is_null());
            }
            if !o["bestReported"].is_null() {
                assert_eq!(o["bestReported"]["run"]["trust"], "reported");
            }
            if !o["bestVerified"].is_null() {
                assert!(["verified", "replicated"].contains(&o["bestVerified"]["run"]["trust"].as_str().unwrap()));
            }
        }
    }
}

/// The HTML shows the JSON twin's figures: runs, dates, the evidence mix, each operation's
/// counts and best runs.
#[test]
fn the_gpu_page_shows_the_figures_of_its_json_form() {
    for slug in ["nvidia-h200", "nvidia-b200"] {
        let view = json(&format!("/api/v1/gpus/{slug}"));
        let page = html(&format!("/gpus/{slug}"));
        assert_eq!(page.status, 200);
        let body = &page.body;
        assert!(body.contains(&format!("<h1>{}</h1>", view["model"].as_str().unwrap())));
        assert!(body.contains(&format!("<dt>runs</dt><dd>{}</dd>", view["runs"])));
        assert!(body.contains(&format!("<dt>operations</dt><dd>{}</dd>", view["operationsTotal"])));
        assert!(body.contains(&format!("<dt>not ranked</dt><dd>{}</dd>", view["unrankedRuns"])));
        for (label, key) in [("first observed", "firstObservedAt"), ("latest observed", "latestObservedAt")] {
            let date = ki_model::utc::date_of(view[key].as_str().unwrap());
            assert!(body.contains(&format!("<dt>{label}</dt><dd>{date}</dd>")), "{slug}: {label} {date}");
        }
        for e in view["evidence"].as_array().unwrap() {
            let level = e["level"].as_str().unwrap();
            let meaning = evidence_meaning(level);
            let badge = format!("<span class=\"badge ev-{level}\" title=\"{meaning}\">{level}</span>");
            let cells = format!("<td>{badge}</td><td class=\"num\">{}</td>", e["runs"]);
            assert!(body.contains(&cells), "{slug}: {cells}");
        }
        let failed = format!(
            "<th scope=\"row\">failed, refused or retracted (any evidence)</th><td class=\"num\">{}</td>",
            view["failedRuns"]
        );
        assert!(body.contains(&failed), "{slug}: {failed}");
        for o in view["operations"].as_array().unwrap() {
            assert!(body.contains(&format!("<a href=\"/operations/{}\">", o["slug"].as_str().unwrap())));
            for best in [&o["bestVerified"], &o["bestReported"]] {
                if let Some(id) = best["run"]["id"].as_str() {
                    assert!(body.contains(&format!("<a href=\"/runs/{id}\">")), "{slug}: best run {id} not linked");
                }
            }
        }
    }
}

#[test]
fn an_unknown_gpu_is_a_problem_naming_its_slug_and_hostile_text_comes_back_escaped() {
    let missing = BUNDLED.server.get("/api/v1/gpus/no-such-gpu");
    let problem = missing.problem(404);
    assert!(problem["detail"].as_str().unwrap().contains("no-such-gpu"), "{problem}");
    let missing = html("/gpus/no-such-gpu");
    assert_eq!(missing.status, 404);
    assert!(missing.body.contains("no-such-gpu"));
    assert_eq!(BUNDLED.server.get("/api/v1/models/no-such-model").problem(404)["detail"], "no model \"no-such-model\"");

    // A slug with markup in the address comes back as text.
    let hostile = html("/gpus/%3Cscript%3Ealert(1)%3C%2Fscript%3E");
    assert_eq!(hostile.status, 404);
    assert!(hostile.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{}", hostile.body);
    assert!(!hostile.body.contains("<script>alert"));

    // Markup in the catalog's own text (a GPU's name, a model tag) is escaped on both pages.
    let file = crate::common::repository("data/kernelindex-verified-h200-2026-11-30.jsonl.zst");
    let mut rows = ki_server::rows_from_export(&file).unwrap();
    let gpu_name = "<img src=x onerror=alert(1)> & co";
    let run = rows.iter_mut().find(|r| r.table == "benchmark_runs").unwrap();
    run.row.insert("hardwareModel".into(), gpu_name.into());
    let workload = text(&run.row, "workloadId").to_string();
    let workload = rows.iter().find(|r| r.table == "workloads" && text(&r.row, "id") == workload).unwrap();
    let operation_id = text(&workload.row, "operationId").to_string();
    let operation = rows.iter_mut().find(|r| r.table == "operations" && text(&r.row, "id") == operation_id).unwrap();
    operation.row.insert("tags".into(), serde_json::json!(["model:<b>evil</b>"]));
    let model = ReadModel::build(rows).unwrap();
    let gpu = model.find_gpu("img-src-x-onerror-alert-1-co").expect("the hostile GPU has a page");
    let page = ki_server::pages::gpu::render(&model.gpu_view(gpu)).into_string();
    assert!(page.contains("&lt;img src=x onerror=alert(1)&gt; &amp; co"), "GPU name not escaped");
    assert!(!page.contains("<img src=x"));
    let view = model.model_view("b-evil-b", Default::default()).expect("the hostile model tag has a page");
    let form = ki_server::pages::models::CaseForm { batch: "<i>x</i>".into(), context: String::new() };
    let error = form.case().unwrap_err();
    let page = ki_server::pages::models::render(&view, &form, Some(&error)).into_string();
    assert!(page.contains("&lt;i&gt;x&lt;/i&gt;") && !page.contains("<i>x"), "the typed case comes back escaped");
    assert!(page.contains("&lt;b&gt;evil&lt;/b&gt;") && !page.contains("<b>evil"));
    assert!(page.contains("&lt;img src=x onerror=alert(1)&gt; &amp; co"), "GPU name not escaped on the model page");
    for page in [
        ki_server::pages::models::render_list(&model.model_list()).into_string(),
        ki_server::pages::gpus::render(&model.gpu_list(), &model.unmeasured_gpus()).into_string(),
    ] {
        assert!(!page.contains("<b>evil") && !page.contains("<img src=x"));
    }
}

/// A model page lists the operations tagged with the model, the best kernels of the measured
/// ones per GPU, and the ones with no run (its gaps); the list links it.
#[test]
fn the_model_page_lists_its_operations_and_its_gaps() {
    let model = BUNDLED.server.state.model();
    for slug in ["llama-3-1-8b", "deepseek-v3"] {
        let tag = format!("model:{slug}");
        // From the rows: the tagged operations, and how many runs each has.
        let tagged: BTreeMap<String, usize> = model
            .judgement
            .operations
            .iter()
            .filter(|op| op.tags.contains(&tag))
            .map(|op| {
                let slug = op.slug.clone();
                let runs = model
                    .judgement
                    .runs
                    .iter()
                    .enumerate()
                    .filter(|(r, _)| {
                        model.run_operation(*r).is_some_and(|o| model.judgement.operations[o].slug == slug)
                    })
                    .count();
                (slug, runs)
            })
            .collect();
        let gaps: BTreeSet<&str> = tagged.iter().filter(|(_, runs)| **runs == 0).map(|(s, _)| s.as_str()).collect();
        assert!(!gaps.is_empty() && gaps.len() < tagged.len(), "{slug}: the data has measured ops and gaps");

        let view = json(&format!("/api/v1/models/{slug}"));
        let measured: BTreeSet<&str> =
            view["operations"].as_array().unwrap().iter().map(|o| o["slug"].as_str().unwrap()).collect();
        let shown_gaps: BTreeSet<&str> =
            view["gaps"].as_array().unwrap().iter().map(|o| o["slug"].as_str().unwrap()).collect();
        assert_eq!(shown_gaps, gaps);
        assert_eq!(measured.len() + gaps.len(), tagged.len());
        for o in view["operations"].as_array().unwrap() {
            let slug = o["slug"].as_str().unwrap();
            assert_eq!(o["runs"], tagged[slug]);
            let per_gpu: u64 = o["gpus"].as_array().unwrap().iter().map(|g| g["runs"].as_u64().unwrap()).sum();
            assert_eq!(per_gpu, o["runs"].as_u64().unwrap());
        }

        let page = html(&format!("/models/{slug}"));
        assert_eq!(page.status, 200);
        for op in tagged.keys() {
            assert!(page.body.contains(&format!("<a href=\"/operations/{op}\">")), "{slug}: {op} not listed");
        }
        let gaps_section = &page.body[page.body.find("id=\"gaps\"").unwrap()..];
        for gap in &gaps {
            assert!(gaps_section.contains(&format!("/operations/{gap}")), "{slug}: gap {gap} not shown");
        }
        let list = html("/models");
        assert!(list.body.contains(&format!("<a href=\"/models/{slug}\">")));
        let item = json("/api/v1/models")["models"].as_array().unwrap().iter().find(|m| m["slug"] == slug).cloned();
        let item = item.unwrap();
        assert_eq!(item["operations"], tagged.len());
        assert_eq!(item["gaps"], gaps.len());
    }

    // llama-3-1-8b's kv8 decode has our H200 runs: its best verified run there is on the page.
    let view = json("/api/v1/models/llama-3-1-8b");
    let decode = view["operations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["slug"] == "gqa-paged-decode-h32-kv8-d128-ps1")
        .unwrap();
    let h200 = decode["gpus"].as_array().unwrap().iter().find(|g| g["gpu"] == H200).unwrap();
    assert_eq!(h200["gpuHref"], "/gpus/nvidia-h200");
    let id = h200["bestVerified"]["run"]["id"].as_str().unwrap();
    let run = model.judgement.find_run(id).unwrap();
    assert_eq!(model.run(run).hardware_model.as_deref(), Some(H200));
    assert!(html("/models/llama-3-1-8b").body.contains(&format!("/runs/{id}")));
}

/// Where a page prints a GPU's name it links to the GPU's page: the operation page's records
/// and leaderboard, a run's dossier, the search box's hardware entries.
#[test]
fn gpu_names_on_other_pages_link_to_the_gpu_page() {
    let link = "<a href=\"/gpus/nvidia-h200\">NVIDIA H200</a>";
    let operation = html(&format!("/operations/{SEED_OPERATION}"));
    assert!(operation.body.contains(link), "the operation page does not link the H200");
    let view = json("/api/v1/gpus/nvidia-h200");
    let best = view["operations"][0]["bestVerified"]["run"]["href"].as_str().unwrap();
    let dossier = html(best);
    assert_eq!(dossier.status, 200);
    assert!(
        dossier.body.contains("<a href=\"/gpus/nvidia-h200\">NVIDIA H200 (sm_90)</a>"),
        "the dossier does not link its GPU"
    );
    let search = json("/api/v1/search?q=H200");
    let hardware: Vec<&Value> =
        search["results"].as_array().unwrap().iter().filter(|r| r["kind"] == "hardware").collect();
    assert_eq!(hardware.len(), 1, "{search}");
    assert_eq!(hardware[0]["href"], "/gpus/nvidia-h200");
    assert_eq!(BUNDLED.server.get(hardware[0]["href"].as_str().unwrap()).status, 200);
}

/// The bundled catalog as it stood before the H200 coverage publication of 2026-12-07 (its runs
/// left out of the read model): there rmsnorm_h4096's only H200 runs are the four solutions our
/// verifier refused.
static BEFORE_H200_COVERAGE: LazyLock<(Live, Database)> = LazyLock::new(|| {
    let publication = crate::common::repository("data/kernelindex-verify-h200-2026-12-07.jsonl.zst");
    let published: HashSet<String> = ki_model::export::read_export(publication)
        .unwrap()
        .into_iter()
        .filter(|line| line.table == "benchmark_runs")
        .map(|line| line.row["id"].as_str().unwrap().to_string())
        .collect();
    let database = Database::sqlite();
    let catalog = database.open_with_bundle();
    let rows = catalog_rows(&catalog)
        .into_iter()
        .filter(|r| match r.table.as_str() {
            "benchmark_runs" => !published.contains(text(&r.row, "id")),
            "measurements" => !published.contains(text(&r.row, "runId")),
            _ => true,
        })
        .collect();
    (serve_rows(rows, catalog, Limits::default()), database)
});

/// On the bundled catalog, the four refused rmsnorm_h4096 runs on the H200 stand beside the
/// baseline's passed ones and are not counted as verified.
#[test]
fn refused_runs_beside_passed_ones_are_not_counted_as_verified() {
    let model = BUNDLED.server.state.model();
    let runs: Vec<usize> = (0..model.judgement.runs.len())
        .filter(|&r| {
            model.run(r).hardware_model.as_deref() == Some(H200)
                && model.run_operation(r).is_some_and(|op| model.judgement.operations[op].slug == "rmsnorm-h4096")
        })
        .collect();
    let refused = runs.iter().filter(|&&r| &*model.run(r).status == "suspected_reward_hack").count();
    let passed = runs.iter().filter(|&&r| &*model.run(r).status == "passed").count();
    assert_eq!(refused, 4);
    assert!(passed > 0 && passed + refused == runs.len(), "{passed} passed, {refused} refused of {}", runs.len());
    let gpu = json("/api/v1/gpus/nvidia-h200");
    let op = gpu["operations"].as_array().unwrap().iter().find(|o| o["slug"] == "rmsnorm-h4096").unwrap();
    assert_eq!((op["runs"].as_u64(), op["verifiedRuns"].as_u64()), (Some(runs.len() as u64), Some(passed as u64)));
    assert!(op["bestVerified"].is_object() && op["whyNoVerified"].is_null(), "{op}");
}

/// Runs our verifier refused (rmsnorm_h4096's four solutions on the H200, `suspected_reward_hack`)
/// are never counted as verified, and where they are an operation's only runs on a GPU (the
/// bundled catalog before the H200 coverage runs) the GPU, model and operation pages say why nothing
/// is ranked instead of "no eligible runs".
#[test]
fn refused_runs_are_never_counted_as_verified_and_the_pages_say_why_nothing_is_ranked() {
    const OPERATION: &str = "rmsnorm-h4096";
    let server = &BEFORE_H200_COVERAGE.0;
    let json = |path: &str| {
        let reply = server.get(path);
        assert_eq!(reply.status, 200, "{path}: {}", reply.body);
        reply.json()
    };
    let html = |path: &str| server.get_with(path, &[("accept", "text/html")]);
    let model = server.state.model();
    let refused: Vec<usize> = (0..model.judgement.runs.len())
        .filter(|&r| {
            model.run(r).hardware_model.as_deref() == Some(H200)
                && model.run_operation(r).is_some_and(|op| model.judgement.operations[op].slug == OPERATION)
        })
        .collect();
    assert_eq!(refused.len(), 4, "the bundled catalog holds four rmsnorm_h4096 runs on the H200");
    for &r in &refused {
        assert_eq!(&*model.run(r).status, "suspected_reward_hack");
        assert!(model.judgement.facts[r].trust >= TrustLevel::Verified, "our runner measured them");
    }
    let why = "4 runs, all refused: suspected_reward_hack";

    // The GPU page: 4 runs, none verified, no best, and why.
    let gpu = json("/api/v1/gpus/nvidia-h200");
    let op = gpu["operations"].as_array().unwrap().iter().find(|o| o["slug"] == OPERATION).unwrap();
    assert_eq!((op["runs"].as_u64(), op["verifiedRuns"].as_u64()), (Some(4), Some(0)), "{op}");
    assert!(op["bestVerified"].is_null());
    assert_eq!(op["whyNoVerified"], why);
    let page = html("/gpus/nvidia-h200");
    let row = &page.body[page.body.find(&format!("<a href=\"/operations/{OPERATION}\">")).unwrap()..];
    let row = &row[..row.find("</tr>").unwrap()];
    assert!(row.contains(&format!("<span class=\"muted\">{why}</span>")), "{row}");
    assert!(row.contains("<td class=\"num\">4</td><td class=\"num\">0</td>"), "4 runs, 0 verified: {row}");
    // The evidence mix counts them as refused, at no evidence level.
    let standing_verified: usize = (0..model.judgement.runs.len())
        .filter(|&r| {
            model.run(r).hardware_model.as_deref() == Some(H200)
                && model.judgement.facts[r].trust == TrustLevel::Verified
                && model.stands(r)
        })
        .count();
    let verified_level = gpu["evidence"].as_array().unwrap().iter().find(|e| e["level"] == "verified").unwrap();
    assert_eq!(verified_level["runs"], standing_verified);
    assert!(gpu["failedRuns"].as_u64().unwrap() >= 4);

    // No page counts them as verified: the GPU page's counts over every operation match the rule.
    for o in gpu["operations"].as_array().unwrap() {
        let slug = o["slug"].as_str().unwrap();
        let counted = (0..model.judgement.runs.len())
            .filter(|&r| {
                let row = model.run(r);
                row.hardware_model.as_deref() == Some(H200)
                    && model.run_operation(r).is_some_and(|op| model.judgement.operations[op].slug == slug)
                    && model.judgement.facts[r].trust.is_verified()
                    && &*row.status == "passed"
                    && row.retracted_at.is_none()
            })
            .count();
        assert_eq!(o["verifiedRuns"], counted, "{slug}");
    }

    // The model page (rmsnorm_h4096 is tagged llama-3-1-8b): 0 verified on the H200, and why.
    let view = json("/api/v1/models/llama-3-1-8b");
    let rms = view["operations"].as_array().unwrap().iter().find(|o| o["slug"] == OPERATION).unwrap();
    let h200 = rms["gpus"].as_array().unwrap().iter().find(|g| g["gpu"] == H200).unwrap();
    assert_eq!((h200["runs"].as_u64(), h200["verifiedRuns"].as_u64()), (Some(4), Some(0)));
    assert_eq!(h200["whyNoVerified"], why);
    assert!(html("/models/llama-3-1-8b").body.contains(why));

    // The operation page under the H200 filter says why, not a bare "No eligible runs yet".
    let operation = json(&format!("/api/v1/operations/{OPERATION}?gpu=nvidia-h200"));
    assert_eq!(operation["runs"], 4);
    assert_eq!(operation["whyNoneRanked"], why);
    assert!(operation["leaderboard"].is_null());
    let page = html(&format!("/operations/{OPERATION}?gpu=nvidia-h200"));
    assert!(page.body.contains(&format!("No run is ranked on NVIDIA H200: {why}.")), "no reason on the page");
    assert!(!page.body.contains("No eligible runs yet"));
}
