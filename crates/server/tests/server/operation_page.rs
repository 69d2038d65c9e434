//! The operation page on the bundled catalog: the GPU and group choices live in the URL, every
//! comparison group is reachable with honest counts, records sort numerically, look-alike groups
//! say how they differ, and there is one sweep chart per GPU whose points link to their runs.

use std::collections::{BTreeSet, HashMap};

use serde_json::Value;

use crate::common::{SERVER, get, get_html};

/// The operations of the bundled catalog, most runs first.
fn operations() -> Vec<Value> {
    let list = get("/api/v1/operations").json();
    list["operations"].as_array().unwrap().clone()
}

fn operation(slug: &str, query: &str) -> Value {
    let reply = get(&format!("/api/v1/operations/{slug}{query}"));
    assert_eq!(reply.status, 200, "{slug}{query}: {}", reply.body);
    reply.json()
}

/// Every group of an operation, over all the pages of its group list.
fn all_groups(slug: &str, gpu: Option<&str>) -> (Vec<Value>, u64) {
    let filter = gpu.map(|g| format!("gpu={g}&")).unwrap_or_default();
    let first = operation(slug, &format!("?{filter}"));
    let mut groups = Vec::new();
    for page in 1..=first["groupsPages"].as_u64().unwrap() {
        let view = operation(slug, &format!("?{filter}page={page}"));
        assert_eq!(view["groupsPage"], page);
        groups.extend(view["groups"].as_array().unwrap().iter().cloned());
    }
    (groups, first["groupsTotal"].as_u64().unwrap())
}

/// The numbers of a workload label ("batch_size = 16 · num_pages = 1070 · bfloat16").
fn axis_numbers(label: &str) -> Vec<f64> {
    label.split(" · ").filter_map(|part| part.split_once(" = ")).filter_map(|(_, v)| v.parse().ok()).collect()
}

#[test]
fn every_comparison_group_is_reachable_with_honest_counts_and_under_a_gpu_filter() {
    let model = SERVER.state.model();
    // The operation with the most comparison groups among the 200 most-run (over a page of them).
    let views: Vec<(Value, Value)> =
        operations().into_iter().map(|item| (operation(item["slug"].as_str().unwrap(), ""), item)).collect();
    let (view, item) = views.iter().max_by_key(|(view, _)| view["groupsTotal"].as_u64().unwrap()).unwrap();
    let slug = view["slug"].as_str().unwrap();
    let op = model.find_operation(slug).unwrap();

    // Independently: the comparison keys of this operation's eligible runs.
    let mut expected: BTreeSet<String> = BTreeSet::new();
    for w in model.judgement.operation_workloads(op) {
        for r in model.judgement.workload_runs(*w) {
            if model.judgement.facts[r].eligible() {
                expected.insert(model.judgement.cohorts[model.judgement.facts[r].cohort()].comparison_key.to_string());
            }
        }
    }
    let (groups, total) = all_groups(slug, None);
    assert!(total > 50, "{slug} has more groups than one page ({total})");
    let listed: BTreeSet<String> = groups.iter().map(|g| g["comparisonKey"].as_str().unwrap().to_string()).collect();
    assert_eq!(groups.len() as u64, total, "each group listed once");
    assert_eq!(listed, expected);

    // The GPU choices add up to the operation's runs, and a filter keeps only that GPU.
    let gpus = view["gpus"].as_array().unwrap();
    let runs: u64 = gpus.iter().map(|g| g["runs"].as_u64().unwrap()).sum();
    assert_eq!(runs, item["runs"].as_u64().unwrap());
    assert!(views.iter().any(|(v, _)| v["gpus"].as_array().unwrap().len() >= 2), "some operation runs on several GPUs");
    let mut filtered_total = 0;
    for gpu in gpus {
        let gslug = gpu["slug"].as_str().unwrap();
        let filtered = operation(slug, &format!("?gpu={gslug}"));
        assert_eq!(filtered["gpu"], gslug);
        let name = gpu["name"].as_str().unwrap();
        for record in filtered["records"].as_array().unwrap() {
            assert_eq!(record["hardware"], name);
        }
        for sweep in filtered["sweeps"].as_array().unwrap() {
            assert_eq!(sweep["hardware"], name);
        }
        let (groups, total) = all_groups(slug, Some(gslug));
        assert_eq!(groups.len() as u64, total);
        assert!(groups.iter().all(|g| g["hardware"] == name));
        filtered_total += total;
    }
    assert_eq!(filtered_total, expected.len() as u64, "the GPU filters partition the groups");

    // Any group can be picked, and the page says it is the one picked.
    let last = groups.last().unwrap();
    let key = last["comparisonKey"].as_str().unwrap();
    let picked = operation(slug, &format!("?group={key}"));
    assert_eq!(picked["leaderboard"]["comparisonKey"], key);
    assert_eq!(picked["leaderboardChosen"], true);
    assert_eq!(picked["leaderboard"]["eligibleRuns"], last["eligibleRuns"]);
    let page = get_html(last["href"].as_str().unwrap());
    assert_eq!(page.status, 200);
    assert!(page.body.contains("The comparison group you picked"), "{}", last["href"]);
    let default = operation(slug, "");
    assert_eq!(default["leaderboardChosen"], false);
    assert_eq!(default["leaderboard"]["comparisonKey"], default["groups"][0]["comparisonKey"]);

    // Choices that name nothing are refused by name; a bad order is a bad request.
    let unknown = get(&format!("/api/v1/operations/{slug}?group=sha256:feed"));
    assert!(unknown.problem(404)["detail"].as_str().unwrap().contains("sha256:feed"));
    let unknown = get(&format!("/operations/{slug}?gpu=no-such-gpu"));
    assert!(unknown.problem(404)["detail"].as_str().unwrap().contains("no-such-gpu"));
    get(&format!("/api/v1/operations/{slug}?sort=colour")).problem(400);
}

#[test]
fn records_sort_by_numbers_and_look_alike_groups_say_how_they_differ() {
    let mut look_alikes = 0;
    for item in operations().iter().take(12) {
        let slug = item["slug"].as_str().unwrap();
        let view = operation(slug, "");
        let records = view["records"].as_array().unwrap();
        // Default order: hardware, then the workload's axes as numbers (10 < 12 < 1070).
        for pair in records.windows(2) {
            if pair[0]["hardware"] == pair[1]["hardware"] {
                let (a, b) = (
                    axis_numbers(pair[0]["workload"].as_str().unwrap()),
                    axis_numbers(pair[1]["workload"].as_str().unwrap()),
                );
                assert!(a <= b, "{slug}: {} before {}", pair[0]["workload"], pair[1]["workload"]);
            }
        }
        // Fastest first by value (the holders' time values, in one unit).
        let by_value = operation(slug, "?sort=value");
        let ns: Vec<f64> = by_value["records"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|r| {
                let value = r["holder"]["value"].as_f64()?;
                ki_model::units::to_ns(value, r["holder"]["unit"].as_str()?)
            })
            .collect();
        assert!(ns.windows(2).all(|w| w[0] <= w[1]), "{slug}: sort=value is not ascending");
        let by_runs = operation(slug, "?sort=runs");
        let counts: Vec<u64> =
            by_runs["records"].as_array().unwrap().iter().map(|r| r["eligibleRuns"].as_u64().unwrap()).collect();
        assert!(counts.windows(2).all(|w| w[0] >= w[1]), "{slug}: sort=runs is not descending");

        // Rows on the same workload and hardware name what tells them apart, differently.
        let mut alike: HashMap<(String, String), Vec<&Value>> = HashMap::new();
        for r in records {
            alike.entry((r["workload"].to_string(), r["hardware"].to_string())).or_default().push(r);
        }
        for members in alike.values().filter(|m| m.len() > 1) {
            look_alikes += 1;
            let said: BTreeSet<String> = members.iter().map(|r| r["differsBy"].to_string()).collect();
            assert!(members.iter().all(|r| !r["differsBy"].as_array().unwrap().is_empty()), "{slug}: {members:?}");
            assert_eq!(said.len(), members.len(), "{slug}: look-alike rows must differ in what they say");
        }
    }
    assert!(look_alikes > 0, "the bundled catalog has look-alike records on its busiest operations");
}

#[test]
fn one_sweep_per_gpu_with_lines_that_hold_the_other_axes_and_points_that_link_to_runs() {
    let slug = "gqa-paged-decode-h32-kv4-d128-ps1";
    let view = operation(slug, "");
    let sweeps = view["sweeps"].as_array().unwrap();
    assert!(!sweeps.is_empty());
    let hardware: BTreeSet<&str> = sweeps.iter().map(|s| s["hardware"].as_str().unwrap()).collect();
    assert_eq!(hardware.len(), sweeps.len(), "one sweep per GPU");
    for sweep in sweeps {
        let axis = sweep["axis"].as_str().unwrap();
        for series in sweep["series"].as_array().unwrap() {
            let label = series["label"].as_str().unwrap();
            assert!(!label.contains(&format!("{axis} =")), "a line holds the other axes, not the swept one: {label}");
            let xs: Vec<f64> = series["points"].as_array().unwrap().iter().map(|p| p["x"].as_f64().unwrap()).collect();
            assert!(xs.len() >= 2 && xs.windows(2).all(|w| w[0] < w[1]), "{label}: {xs:?}");
            for point in series["points"].as_array().unwrap() {
                let href = point["runHref"].as_str().unwrap();
                assert_eq!(get(href).status, 200, "{href}");
            }
        }
        assert!(sweep["seriesTotal"].as_u64().unwrap() >= sweep["series"].as_array().unwrap().len() as u64);
    }
    let page = get_html(&format!("/operations/{slug}"));
    assert_eq!(page.body.matches("<svg class=\"chart\"").count(), sweeps.len());
    assert!(page.body.contains("<a href=\"/runs/"), "chart points link to runs");
    assert!(page.body.contains("<circle") && page.body.contains("</title></circle>"), "points have hover titles");
}
