//! Compare, resolve and the records ledger on the bundled catalog: compare lists #1 first with
//! its ratios and names the comparison-key parts that differ; resolve carries the caveats
//! ki_ranking computes (the ones `ki resolve` prints); the ledger's filters live in the URL
//! and count honestly; previous holders are named; the Atom feed names workload and GPU.

use std::collections::BTreeSet;

use serde_json::Value;

use crate::common::{SERVER, get, get_html, post};
use crate::serving::{BUNDLED, Reply};

/// The run indexes of the ranked runs of the largest group whose ranked runs all have a value.
fn big_group() -> Vec<usize> {
    let model = SERVER.state.model();
    let index = &model.judgement;
    let cohort = index
        .cohorts
        .iter()
        .filter(|c| c.ranking.len() >= 3 && c.ranking.iter().all(|e| index.primary_value(e.run).is_some()))
        .max_by_key(|c| c.ranking.len())
        .expect("a group with 3 ranked runs");
    cohort.ranking.iter().map(|e| e.run).collect()
}

fn run_id(run: usize) -> String {
    SERVER.state.model().judgement.runs[run].id.to_string()
}

fn compare_json(ids: &[String]) -> Value {
    let query: Vec<String> = ids.iter().map(|id| format!("run={id}")).collect();
    let reply = get(&format!("/api/v1/compare?{}", query.join("&")));
    assert_eq!(reply.status, 200, "{}", reply.body);
    reply.json()
}

#[test]
fn compare_of_three_runs_of_one_group_lists_the_fastest_first_with_ratios_of_at_least_one() {
    let ranked = big_group();
    // Named slowest first, so the order of the answer is the index's, not the request's.
    let ids = vec![run_id(ranked[2]), run_id(ranked[0]), run_id(ranked[1])];
    let c = compare_json(&ids);
    assert_eq!(c["sameComparisonGroup"], true);
    assert_eq!(c["differingKeys"], serde_json::json!([]));
    let runs = c["runs"].as_array().unwrap();
    assert_eq!(runs[0]["summary"]["runId"], run_id(ranked[0]).as_str(), "#1 first");
    let ratios: Vec<f64> = runs.iter().map(|r| r["relativeToFirst"].as_f64().unwrap()).collect();
    assert_eq!(ratios[0], 1.0);
    assert!(ratios.iter().all(|&x| x >= 1.0), "{ratios:?}");
    assert!(ratios.windows(2).all(|w| w[0] <= w[1]), "{ratios:?}");
    let ranks: Vec<u64> = runs.iter().map(|r| r["summary"]["rank"].as_u64().unwrap()).collect();
    assert!(ranks.windows(2).all(|w| w[0] <= w[1]), "{ranks:?}");
    // Independently: each ratio is the value over #1's (lower is better) or the reverse.
    let model = SERVER.state.model();
    let first = model.judgement.primary_value(ranked[0]).unwrap();
    for (r, ratio) in runs.iter().zip(&ratios) {
        let value = r["summary"]["value"].as_f64().unwrap();
        let expected = match model.judgement.cohorts[model.judgement.facts[ranked[0]].cohort()].direction {
            ki_ranking::Direction::LowerIsBetter => value / first,
            ki_ranking::Direction::HigherIsBetter => first / value,
        };
        assert!((expected - ratio).abs() < 1e-9, "{expected} vs {ratio}");
    }

    // The page: same order, a bar per run, no inline style.
    let query: Vec<String> = ids.iter().map(|id| format!("run={id}")).collect();
    let page = get_html(&format!("/compare?{}", query.join("&")));
    assert_eq!(page.status, 200);
    let at = |run: usize| page.body.find(&format!("href=\"/runs/{}\"", run_id(run))).unwrap();
    assert!(at(ranked[0]) < at(ranked[1]) && at(ranked[1]) < at(ranked[2]), "fastest first on the page");
    assert_eq!(page.body.matches("<svg class=\"bar\"").count(), 3);
    assert!(!page.body.contains("style="), "no inline style");
    assert!(page.body.contains("× #1"));
    for r in runs {
        assert!(page.body.contains(&ki_model::units::factor(r["relativeToFirst"].as_f64().unwrap())));
    }
}

/// The parts of the comparison key on which two runs differ, from the tables.
fn expected_parts(a: usize, b: usize) -> BTreeSet<&'static str> {
    let model = SERVER.state.model();
    let (ra, rb) = (&model.judgement.runs[a], &model.judgement.runs[b]);
    let op = |r: usize| model.judgement.operation_of(r).id.clone();
    let workload = |r: usize| model.judgement.runs[r].workload_id.clone();
    let metric = |r: &ki_ranking::rows::BenchmarkRunRow| {
        (r.primary_metric.clone(), r.primary_statistic.clone(), r.primary_unit.clone())
    };
    let mut out = BTreeSet::new();
    for (name, differs) in [
        ("operation", op(a) != op(b)),
        ("workload", workload(a) != workload(b)),
        ("protocol", ra.protocol_key != rb.protocol_key),
        ("environment", ra.environment_key != rb.environment_key),
        ("gpu", ra.hardware_model != rb.hardware_model),
        ("correctness_rule", ra.correctness_key != rb.correctness_key),
        ("metric", metric(ra) != metric(rb)),
    ] {
        if differs {
            out.insert(name);
        }
    }
    out
}

#[test]
fn compare_of_runs_from_different_groups_names_each_differing_key() {
    let model = SERVER.state.model();
    let index = &model.judgement;
    let ranked = big_group();
    let a = ranked[0];
    // Another operation's #1, and a run of the same operation on another GPU when there is one.
    let other_operation = index
        .cohorts
        .iter()
        .map(|c| c.ranking[0].run)
        .find(|&r| index.operation_of(r).id != index.operation_of(a).id)
        .expect("a second operation");
    let other_gpu = (0..index.runs.len()).find(|&r| {
        index.operation_of(r).id == index.operation_of(a).id
            && index.runs[r].hardware_model != index.runs[a].hardware_model
            && index.runs[r].hardware_model.is_some()
    });
    let mut pairs = vec![(a, other_operation)];
    pairs.extend(other_gpu.map(|b| (a, b)));
    // And a pair differing in the workload only, when the group's operation has one.
    let same_elsewhere = (0..index.runs.len()).find(|&r| {
        index.runs[r].workload_id != index.runs[a].workload_id
            && index.runs[r].protocol_key == index.runs[a].protocol_key
            && index.runs[r].environment_key == index.runs[a].environment_key
            && index.operation_of(r).id == index.operation_of(a).id
    });
    pairs.extend(same_elsewhere.map(|b| (a, b)));
    for (x, y) in pairs {
        let expected = expected_parts(x, y);
        assert!(!expected.is_empty());
        let c = compare_json(&[run_id(x), run_id(y)]);
        assert_eq!(c["sameComparisonGroup"], false);
        let named: BTreeSet<&str> =
            c["differingKeys"].as_array().unwrap().iter().map(|k| k.as_str().unwrap()).collect();
        assert_eq!(named, expected, "{} vs {}", run_id(x), run_id(y));
        let page = get_html(&format!("/compare?run={}&run={}", run_id(x), run_id(y)));
        assert_eq!(page.status, 200);
        let banner = page.body.split("they differ in ").nth(1).unwrap().split('.').next().unwrap().to_string();
        for part in &expected {
            let label = match *part {
                "gpu" => "GPU",
                "correctness_rule" => "correctness rule",
                other => other,
            };
            assert!(banner.contains(label), "{label} in {banner:?}");
        }
        // Intervals: a run that has one shows it on the page.
        for r in c["runs"].as_array().unwrap() {
            if let Some(pair) = r["interval"].as_array() {
                let unit = r["summary"]["unit"].as_str();
                let low = ki_model::units::value(pair[0].as_f64(), unit);
                assert!(page.body.contains(&format!("{low} – ")), "interval {low} shown");
            }
        }
    }
}

/// A resolve request for a run's exact workload on its GPU.
fn request_for(run: usize) -> Value {
    let model = SERVER.state.model();
    let index = &model.judgement;
    let axes = index.workload_axes(index.run_workload(run));
    serde_json::json!({
        "operation": index.operation_of(run).name,
        "axes": axes,
        "hardware": index.runs[run].hardware_model,
    })
}

#[test]
fn resolve_of_a_reported_only_workload_says_best_verified_none_and_stale_where_it_applies() {
    let model = SERVER.state.model();
    let index = &model.judgement;
    let age = |run: usize| ki_model::utc::today() - ki_model::utc::day_of(&index.runs[run].observed_at.text()).unwrap();
    // Groups whose eligible runs are all reported (no verified run): one whose #1 is stale, and
    // one whose #1 is not, when the catalog has one.
    let reported_only = |c: &&ki_ranking::Cohort| {
        c.ranking.len() >= 2 && c.ranking.iter().all(|e| index.facts[e.run].trust == ki_ranking::TrustLevel::Reported)
    };
    let stale = index
        .cohorts
        .iter()
        .filter(reported_only)
        .find(|c| age(c.ranking[0].run) > ki_ranking::views::STALE_AFTER_DAYS + 1)
        .expect("a reported-only group with a stale #1");
    let fresh = index
        .cohorts
        .iter()
        .filter(reported_only)
        .find(|c| age(c.ranking[0].run) < ki_ranking::views::STALE_AFTER_DAYS - 1);
    for cohort in std::iter::once(stale).chain(fresh) {
        resolve_shows_the_caveats_of(cohort);
    }
}

fn resolve_shows_the_caveats_of(cohort: &ki_ranking::Cohort) {
    let model = SERVER.state.model();
    let index = &model.judgement;
    let first = cohort.ranking[0].run;
    let answer = post("/api/v1/resolve/kernel", "application/json", None, &request_for(first).to_string());
    assert_eq!(answer.status, 200, "{}", answer.body);
    let answer = answer.json();
    let view = answer["cohorts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["comparisonKey"] == cohort.comparison_key.as_str())
        .expect("the group is in the answer");
    let kinds: Vec<&str> = view["caveats"].as_array().unwrap().iter().map(|c| c["kind"].as_str().unwrap()).collect();
    assert!(kinds.contains(&"no_verified"), "{kinds:?}");
    assert!(kinds.contains(&"reported_only"), "{kinds:?}");
    let messages: Vec<&str> =
        view["caveats"].as_array().unwrap().iter().map(|c| c["message"].as_str().unwrap()).collect();
    assert!(messages.iter().any(|m| m.starts_with("best verified: none")), "{messages:?}");
    // Stale exactly when #1 was observed more than 180 days ago (judged independently).
    let age = ki_model::utc::today() - ki_model::utc::day_of(&index.runs[first].observed_at.text()).unwrap();
    assert_eq!(kinds.contains(&"stale"), age > ki_ranking::views::STALE_AFTER_DAYS, "age {age}: {kinds:?}");
    // Not deployable, with its reasons, exactly when #1 is not.
    assert_eq!(kinds.contains(&"not_deployable"), !index.facts[first].deployability.deployable);

    // The same caveats as ki_ranking's own list (what `ki resolve` prints as `caveat:` lines).
    let request: ki_ranking::ResolveRequest = serde_json::from_value(request_for(first)).unwrap();
    let local = index.resolve_at(&request, ki_ranking::Instant::now());
    let local_view = local.cohorts.iter().find(|c| c.comparison_key == cohort.comparison_key).unwrap();
    let ours: Vec<&str> = local_view.caveats.iter().map(|c| c.message.as_str()).collect();
    assert_eq!(ours, messages);

    // The page shows every caveat, and a bar per candidate.
    let axes: Vec<String> = request.axes.iter().map(|(k, v)| format!("{k}={}", ki_server::model::scalar(v))).collect();
    let path = format!(
        "/resolve?operation={}&axes={}&hardware={}",
        ki_server::model::percent_encode(&request.operation),
        ki_server::model::percent_encode(&axes.join(", ")),
        ki_server::model::percent_encode(request.hardware.as_deref().unwrap_or(""))
    );
    let page = get_html(&path);
    assert_eq!(page.status, 200);
    for m in &messages {
        assert!(page.body.contains(&maud::html! { (m) }.into_string()), "{m} on the page");
    }
    assert!(page.body.contains("Best verified: none"));
    assert!(page.body.matches("<svg class=\"bar\"").count() >= local_view.fastest.len());
    assert!(!page.body.contains("style="));
}

fn bundled_get(path: &str) -> Reply {
    BUNDLED.server.get(path)
}

fn bundled_html(path: &str) -> Reply {
    BUNDLED.server.get_with(path, &[("accept", "text/html")])
}

/// Independently: which record events pass the filters, newest first as stored.
fn expected_records(gpu: Option<&str>, verified: bool, source: bool) -> Vec<String> {
    let model = BUNDLED.server.state.model();
    let mut out = Vec::new();
    let mut events: Vec<&ki_ranking::rows::RecordEventRow> = model.judgement.record_events.iter().collect();
    events.sort_by(|a, b| (b.at.text(), &b.id).cmp(&(a.at.text(), &a.id)));
    for event in events {
        let run_id = &*event.run_id.text();
        let Some(h) = model.judgement.run_index(run_id) else { continue };
        let row = &model.judgement.runs[h];
        if gpu.is_some_and(|g| row.hardware_model.as_deref() != Some(g)) {
            continue;
        }
        if verified && !model.judgement.facts[h].trust.is_verified() {
            continue;
        }
        if source && !row.source_available {
            continue;
        }
        out.push(format!("{}|{}", event.at.text(), run_id));
    }
    out
}

fn all_record_pages(query: &str) -> (Vec<Value>, Value) {
    let first = bundled_get(&format!("/api/v1/records?{query}"));
    assert_eq!(first.status, 200, "{}", first.body);
    let first = first.json();
    let mut records = Vec::new();
    for page in 1..=first["pages"].as_u64().unwrap() {
        let view = bundled_get(&format!("/api/v1/records?{query}&page={page}")).json();
        records.extend(view["records"].as_array().unwrap().iter().cloned());
    }
    (records, first)
}

/// The GPU with the most record events, by name and slug.
fn busiest_gpu() -> (String, String) {
    let model = BUNDLED.server.state.model();
    let (name, _) =
        model.runs_by_gpu.iter().max_by_key(|(name, _)| expected_records(Some(name), false, false).len()).unwrap();
    (name.clone(), ki_model::slug::slug(name))
}

#[test]
fn records_filters_live_in_the_url_and_count_honestly() {
    let model = BUNDLED.server.state.model();
    let (gpu, slug) = busiest_gpu();
    for (query, gpu_filter, verified, source) in [
        (String::new(), None, false, false),
        (format!("gpu={slug}"), Some(gpu.as_str()), false, false),
        ("verified=1".to_string(), None, true, false),
        ("source=1".to_string(), None, false, true),
        (format!("gpu={slug}&verified=1&source=1"), Some(gpu.as_str()), true, true),
        ("gpu=nvidia-h200&verified=1".to_string(), Some("NVIDIA H200"), true, false),
    ] {
        let expected = expected_records(gpu_filter, verified, source);
        if query == "verified=1" || query.starts_with("gpu=nvidia-h200") {
            assert!(!expected.is_empty(), "{query}: the runner's H200 runs hold records");
        }
        let (records, first) = all_record_pages(&query);
        assert_eq!(first["total"].as_u64().unwrap() as usize, expected.len(), "{query}");
        assert_eq!(first["all"].as_u64().unwrap() as usize, model.judgement.record_events.len());
        assert_eq!(first["pages"].as_u64().unwrap() as usize, expected.len().div_ceil(100).max(1), "{query}");
        let got: Vec<String> = records
            .iter()
            .map(|r| format!("{}|{}", r["at"].as_str().unwrap(), r["holder"]["id"].as_str().unwrap()))
            .collect();
        assert_eq!(got, expected, "{query}");
        for r in &records {
            if let Some(g) = gpu_filter {
                assert_eq!(r["gpu"]["label"], g, "{query}");
                assert_eq!(r["holder"]["hardware"], g);
            }
            if verified {
                assert!(matches!(r["holder"]["trust"].as_str(), Some("verified" | "replicated")), "{r}");
            }
        }
        // The page says the same count and keeps the filters in its pager and feed links.
        let page = bundled_html(&format!("/records?{query}"));
        assert_eq!(page.status, 200);
        if query.is_empty() {
            assert!(page.body.contains(&format!("{} events, newest first", expected.len())));
        } else {
            assert!(page.body.contains(&format!(
                "{} of {} events match",
                expected.len(),
                model.judgement.record_events.len()
            )));
            let escaped = query.replace('&', "&amp;");
            assert!(page.body.contains(&format!("/records.atom?{escaped}")), "{query}");
            if expected.len() > 100 {
                assert!(page.body.contains(&format!("/records?{escaped}&amp;page=2")), "{query}");
            }
        }
        assert!(
            page.body.contains("<th scope=\"col\">workload</th>") && page.body.contains("<th scope=\"col\">GPU</th>")
        );
        if let Some(g) = gpu_filter {
            let slug = ki_model::slug::slug(g);
            assert!(
                page.body.contains(&format!("<option value=\"{slug}\" selected>")),
                "{query}: the form keeps the GPU"
            );
            assert!(first["gpus"].as_array().unwrap().iter().any(|l| l["href"] == format!("/records?gpu={slug}")));
        }
    }
    // Unknown GPU: 404 naming it.
    let reply = bundled_get("/api/v1/records?gpu=no-such-gpu");
    assert_eq!(reply.status, 404);
    assert!(reply.body.contains("no-such-gpu"));
    // A flag outside the schema's 0/1 is refused by name on every form (Schemathesis found
    // `verified=AAA` accepted).
    for path in ["/api/v1/records?verified=AAA", "/records?source=yes", "/records.atom?verified=2"] {
        let reply = bundled_get(path);
        assert_eq!(reply.status, 400, "{path}");
        assert!(reply.body.contains("takes 1 or 0"), "{path}: {}", reply.body);
    }
}

#[test]
fn previous_holders_are_named_by_implementation_with_a_link() {
    let model = BUNDLED.server.state.model();
    // The newest page where a record names a previous holder (a publication's first holders fill
    // the newest pages).
    let pages = bundled_get("/api/v1/records").json()["pages"].as_u64().unwrap();
    let (number, list) = (1..=pages)
        .map(|n| (n, bundled_get(&format!("/api/v1/records?page={n}")).json()))
        .find(|(_, list)| list["records"].as_array().unwrap().iter().any(|r| r["previous"].is_object()))
        .expect("some record names a previous holder");
    let records = list["records"].as_array().unwrap();
    let with_previous: Vec<&Value> = records.iter().filter(|r| r["previous"].is_object()).collect();
    let page = bundled_html(&format!("/records?page={number}"));
    for r in with_previous {
        let href = r["previous"]["href"].as_str().unwrap();
        let previous = model.judgement.run_index(href.trim_start_matches("/runs/")).unwrap();
        let name = &model.judgement.implementation_of(previous).slug;
        assert_eq!(r["previous"]["label"], name.as_str());
        assert!(page.body.contains(&format!("<a href=\"{href}\">{}</a>", maud::html! { (name) }.into_string())));
    }
}

#[test]
fn the_atom_feed_names_workload_and_gpu_under_the_filters() {
    let (gpu, slug) = busiest_gpu();
    let reply = get(&format!("/records.atom?gpu={slug}"));
    assert_eq!(reply.status, 200);
    let feed: atom_syndication::Feed = reply.body.parse().expect("the feed parses");
    let list = bundled_get(&format!("/api/v1/records?gpu={slug}")).json();
    let records = list["records"].as_array().unwrap();
    assert_eq!(feed.entries.len(), records.len().min(50));
    for (entry, record) in feed.entries.iter().zip(records) {
        let title = &entry.title.value;
        assert!(title.contains(&gpu), "{title}");
        assert!(title.contains(record["workload"].as_str().unwrap()), "{title}");
        let summary = &entry.summary.as_ref().unwrap().value;
        assert!(summary.contains(&format!("GPU {gpu}")), "{summary}");
    }
}

#[test]
fn hostile_strings_are_escaped() {
    let hostile = "<script>alert(1)</script>";
    let encoded = ki_server::model::percent_encode(hostile);
    for path in [
        format!("/records?gpu={encoded}"),
        format!("/records.atom?gpu={encoded}"),
        format!("/compare?run={encoded}&run=x"),
    ] {
        let reply = get_html(&path);
        assert!(reply.status >= 400, "{path}: {}", reply.status);
        assert!(!reply.body.contains(hostile), "{path}: {}", reply.body);
    }
    let reply = get_html(&format!("/resolve?operation={encoded}&axes={encoded}"));
    assert!(!reply.body.contains(hostile), "{}", reply.body);
}

/// `/compare` with no run (or one) is a page that says what compare does and how to pick runs,
/// with a form and an example pair from the catalog that itself compares; the exports and the
/// API still refuse it.
#[test]
fn compare_without_runs_explains_how_to_pick_them() {
    let page = get_html("/compare");
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page.content_type.starts_with("text/html"));
    assert!(!page.body.contains("Failed to deserialize"));
    for part in [
        "No runs picked yet: a comparison needs at least two.",
        "Compare with #1",
        "<form class=\"compare\" action=\"/compare\" method=\"get\">",
        "name=\"run\"",
    ] {
        assert!(page.body.contains(part), "{part}");
    }
    // The example compares the two fastest runs of the largest group (the first by key of equals).
    let at = page.body.find("For example, <a href=\"").expect("an example pair") + "For example, <a href=\"".len();
    let example = page.body[at..].split('"').next().unwrap().replace("&amp;", "&");
    let model = SERVER.state.model();
    let most = model.judgement.cohorts.iter().map(|c| c.ranking.len()).max().unwrap();
    let largest = model
        .judgement
        .cohorts
        .iter()
        .filter(|c| c.ranking.len() == most)
        .min_by(|a, b| a.comparison_key.cmp(&b.comparison_key));
    let ranked: Vec<usize> = largest.unwrap().ranking.iter().map(|e| e.run).collect();
    assert_eq!(example, format!("/compare?run={}&run={}", run_id(ranked[0]), run_id(ranked[1])));
    let compared = get_html(&example);
    assert_eq!(compared.status, 200);
    assert!(compared.body.contains("<h1>Compare 2 runs</h1>"));

    let one = get_html(&format!("/compare?run={}", run_id(ranked[0])));
    assert_eq!(one.status, 200);
    assert!(one.body.contains("a comparison needs at least one more"));
    // Blank form fields are skipped, not read as runs.
    let blanks = get_html(&format!("/compare?run={}&run=&run=", run_id(ranked[0])));
    assert!(blanks.body.contains("a comparison needs at least one more"));
    assert!(get("/compare?format=csv").problem(400)["detail"].as_str().unwrap().contains("2 to 8 runs"));
    get("/api/v1/compare").problem(400);
}
