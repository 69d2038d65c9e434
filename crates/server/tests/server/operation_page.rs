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

/// A picker row's varying axes as numbers, in the columns' order.
fn axis_columns(record: &Value) -> Vec<f64> {
    record["axes"].as_array().unwrap().iter().map(|v| v.as_str().unwrap().parse().unwrap_or(f64::NAN)).collect()
}

/// The part of a page from the element with this id to the end of its section.
fn section_of<'a>(body: &'a str, id: &str) -> &'a str {
    let from = &body[body.find(&format!("<section id=\"{id}\"")).unwrap_or_else(|| panic!("no #{id}"))..];
    &from[..from.find("</section>").unwrap()]
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
        // Default order: hardware, then the workload's varying axes as numbers (10 < 12 < 1070),
        // in the order of the picker's columns.
        for pair in records.windows(2) {
            if pair[0]["hardware"] == pair[1]["hardware"] {
                let (a, b) = (axis_columns(&pair[0]), axis_columns(&pair[1]));
                let order = a.iter().zip(&b).map(|(x, y)| x.total_cmp(y)).find(|o| o.is_ne());
                assert!(
                    order != Some(std::cmp::Ordering::Greater),
                    "{slug}: {} before {}",
                    pair[0]["workload"],
                    pair[1]["workload"]
                );
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

const SEED: &str = "gqa-paged-decode-h32-kv4-d128-ps1";

/// The constant axes are stated once at the top; the picker has a column per varying axis (fewest
/// values first) and never repeats the constant ones.
#[test]
fn the_workload_picker_states_the_constant_axes_once_and_has_a_column_per_varying_axis() {
    let view = operation(SEED, "");
    let constants: BTreeSet<String> = view["constantAxes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| format!("{} = {}", a["name"].as_str().unwrap(), a["value"].as_str().unwrap()))
        .collect();
    let expected = ["head_dim = 128", "page_size = 1", "num_kv_heads = 4", "num_qo_heads = 32"];
    assert_eq!(constants, expected.iter().map(|s| s.to_string()).collect());
    // batch_size and len_indptr take 3 values, num_pages and num_kv_indices one per workload.
    assert_eq!(view["varyingAxes"], serde_json::json!(["batch_size", "len_indptr", "num_pages", "num_kv_indices"]));
    for record in view["records"].as_array().unwrap() {
        assert_eq!(record["axes"].as_array().unwrap().len(), 4, "{record}");
        assert!(!record["workload"].as_str().unwrap().contains("head_dim"), "constant axes are not repeated");
        assert!(axis_columns(record).iter().all(|v| v.is_finite() && v.fract() == 0.0), "{record}");
    }

    let page = get_html(&format!("/operations/{SEED}"));
    let top = &page.body[page.body.find("<p id=\"constants\">").expect("the constant axes")..];
    let top = &top[..top.find("</p>").unwrap()];
    for axis in expected {
        assert!(top.contains(&format!("<code>{axis}</code>")), "{top}");
    }
    let picker = section_of(&page.body, "records");
    for axis in ["batch_size", "len_indptr", "num_pages", "num_kv_indices"] {
        assert!(picker.contains(&format!("<th scope=\"col\" class=\"num\">{axis}</th>")), "no {axis} column");
    }
    for axis in ["head_dim", "page_size", "num_kv_heads", "num_qo_heads"] {
        assert!(!picker.contains(axis), "the picker repeats the constant {axis}");
    }
    // Each row picks its group's leaderboard; the one shown is marked.
    assert_eq!(picker.matches("aria-current=\"true\">shown</span>").count(), 1);
    assert!(picker.contains("#leaderboard\">pick</a>"));
}

/// The leaderboard lists its group best first; its header names the statistic, the unit its
/// values are written in and which way is better; every run has its evidence badge.
#[test]
fn the_leaderboard_is_best_first_with_its_statistic_unit_direction_and_evidence() {
    let mut checked = 0;
    for item in operations().iter().take(12) {
        let slug = item["slug"].as_str().unwrap();
        let view = operation(slug, "");
        let Some(board) = view["leaderboard"].as_object() else { continue };
        let entries = board["entries"].as_array().unwrap();
        let ns: Vec<f64> =
            entries.iter().filter_map(|e| ki_model::units::to_ns(e["value"].as_f64()?, e["unit"].as_str()?)).collect();
        if ns.len() != entries.len() {
            continue; // not a time: no unit to write it in
        }
        assert_eq!(board["direction"], "lower is better", "{slug}: a time is better lower");
        assert!(ns.windows(2).all(|w| w[0] <= w[1]), "{slug}: not best first: {ns:?}");
        let page = get_html(&format!("/operations/{slug}"));
        let section = section_of(&page.body, "leaderboard");
        let head = &section[section.find("<thead>").unwrap()..section.find("</thead>").unwrap()];
        let statistic = board["statistic"].as_str().unwrap();
        let unit = board["unit"].as_str().unwrap();
        assert!(!unit.is_empty(), "{slug}: no unit");
        assert!(head.contains(statistic) && head.contains(&format!("({unit})")), "{slug}: {head}");
        assert!(head.contains("<span class=\"direction\">lower is better</span>"), "{slug}: {head}");
        assert_eq!(
            section.matches("<span class=\"badge ev-").count(),
            entries.len(),
            "{slug}: an evidence badge per run"
        );
        // Values are written in the header's unit, without it: the #1's cell reads as its value.
        let body = &section[section.find("<tbody>").unwrap()..];
        let cell = &body[body.find("<td class=\"num\">").unwrap()..];
        let cell = &cell[cell.find("</td>").unwrap() + 5..];
        let cell = &cell[cell.find("<td class=\"num\">").unwrap() + "<td class=\"num\">".len()..];
        let written: f64 = cell[..cell.find("</td>").unwrap()].replace(',', "").parse().expect("a plain number");
        let scale = match unit {
            "ns" => 1.0,
            "µs" => 1e3,
            "ms" => 1e6,
            _ => 1e9,
        };
        assert!(((written * scale) / ns[0] - 1.0).abs() < 0.01, "{slug}: #1 written {written} {unit}, is {} ns", ns[0]);
        checked += 1;
    }
    assert!(checked >= 10);
}

/// Comparison groups come in a useful order: those with a verified run first, then the largest;
/// the default leaderboard is the first of them (on the bundled catalog, with our H200 runs).
#[test]
fn comparison_groups_with_a_verified_run_come_first_then_the_largest() {
    use crate::gpu_pages::json as bundled;
    let view = bundled(&format!("/api/v1/operations/{SEED}"));
    let mut groups = Vec::new();
    for page in 1..=view["groupsPages"].as_u64().unwrap() {
        let part = bundled(&format!("/api/v1/operations/{SEED}?page={page}"));
        groups.extend(part["groups"].as_array().unwrap().iter().cloned());
    }
    let keys: Vec<(bool, u64)> =
        groups.iter().map(|g| (g["verifiedRuns"].as_u64().unwrap() > 0, g["eligibleRuns"].as_u64().unwrap())).collect();
    assert!(keys.iter().any(|k| k.0) && keys.iter().any(|k| !k.0), "both kinds of group: {keys:?}");
    for pair in keys.windows(2) {
        assert!(pair[0].0 >= pair[1].0, "a group without a verified run before one with: {keys:?}");
        if pair[0].0 == pair[1].0 {
            assert!(pair[0].1 >= pair[1].1, "a smaller group first: {keys:?}");
        }
    }
    // A verified run's group outranks a larger unverified one.
    assert_eq!(view["leaderboard"]["comparisonKey"], groups[0]["comparisonKey"]);
    assert!(view["leaderboard"]["verifiedRuns"].as_u64().unwrap() > 0);
    let model = crate::serving::BUNDLED.server.state.model();
    for g in &groups {
        let cohort =
            model.judgement.cohorts.iter().find(|c| *c.comparison_key == *g["comparisonKey"].as_str().unwrap());
        let verified =
            cohort.unwrap().ranking.iter().filter(|e| model.judgement.facts[e.run].trust.is_verified()).count();
        assert_eq!(g["verifiedRuns"], verified);
    }
}

/// A sweep line never joins workloads of different batch sizes: batch_size is held, each of its
/// values is a facet drawn on its own (a picker for the others), every point of a line is a run at
/// the facet's batch size; the swept axis is labelled with round numbers.
#[test]
fn a_sweep_holds_the_batch_size_and_each_value_is_a_facet() {
    use crate::gpu_pages::{html as bundled_html, json as bundled};
    use crate::serving::BUNDLED;
    let model = BUNDLED.server.state.model();
    let view = bundled(&format!("/api/v1/operations/{SEED}"));
    let sweeps = view["sweeps"].as_array().unwrap();
    assert!(!sweeps.is_empty());
    for sweep in sweeps {
        assert_eq!(sweep["held"], serde_json::json!(["batch_size"]), "{}", sweep["hardware"]);
        let facets = sweep["facets"].as_array().unwrap();
        assert!(facets.len() >= 2, "{}: {facets:?}", sweep["hardware"]);
        assert_eq!(facets.iter().filter(|f| f["selected"] == true).count(), 1);
        let gpu = ki_model::slug::slug(sweep["hardware"].as_str().unwrap());
        for facet in facets {
            let key = facet["key"].as_str().unwrap();
            let batch: f64 = key.strip_prefix("batch_size=").expect("batch_size=N").parse().unwrap();
            let drawn = bundled(&format!("/api/v1/operations/{SEED}?gpu={gpu}&facet={key}"));
            let drawn = &drawn["sweeps"][0];
            assert_eq!(drawn["facets"].as_array().unwrap().iter().find(|f| f["selected"] == true).unwrap()["key"], key);
            for series in drawn["series"].as_array().unwrap() {
                let mut xs = Vec::new();
                for point in series["points"].as_array().unwrap() {
                    let id = point["runHref"].as_str().unwrap().trim_start_matches("/runs/");
                    let run = model.judgement.find_run(id).unwrap();
                    let axes = model.judgement.workload_axes(model.judgement.run_workload(run));
                    assert_eq!(
                        axes["batch_size"].as_f64(),
                        Some(batch),
                        "{key}: {} joins batch sizes",
                        series["label"]
                    );
                    xs.push(point["x"].as_f64().unwrap());
                }
                assert!(xs.windows(2).all(|w| w[0] < w[1]), "{xs:?}");
            }
        }
    }
    let unknown = BUNDLED.server.get(&format!("/api/v1/operations/{SEED}?facet=batch_size%3D3"));
    assert!(unknown.problem(404)["detail"].as_str().unwrap().contains("batch_size=3"));

    let page = bundled_html(&format!("/operations/{SEED}"));
    let section = section_of(&page.body, "sweep");
    assert!(section.contains("aria-label=\"Held axes of the sweep on"), "a facet picker");
    assert!(section.contains("&amp;facet=batch_size%3D") || section.contains("?facet=batch_size%3D"), "facet links");
    // Axis labels: durations and round numbers, never "26.4865".
    for label in section.split("</text>").filter_map(|part| part.rsplit_once('>').map(|(_, text)| text)) {
        if let Some((_, decimals)) = label.split_once('.') {
            let digits = decimals.chars().take_while(char::is_ascii_digit).count();
            assert!(digits <= 2, "tick {label:?}");
        }
    }
}

/// Issue 32: on the bundled catalog each of the nine FlashInfer-Bench op types has an operation whose
/// page, under the H200 filter, leads with a Verified run on the H200 (our coverage runs).
#[test]
fn every_op_type_has_a_verified_h200_leader() {
    use crate::gpu_pages::json as bundled;
    let pages = bundled("/api/v1/operations")["pages"].as_u64().unwrap();
    let slugs: Vec<String> = (1..=pages)
        .flat_map(|page| {
            let list = bundled(&format!("/api/v1/operations?page={page}"));
            list["operations"]
                .as_array()
                .unwrap()
                .iter()
                .map(|o| o["slug"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    for op_type in [
        "rmsnorm-h",
        "fused-add-rmsnorm-h",
        "gemm-n",
        "gqa-paged-decode-",
        "gqa-paged-prefill-",
        "gqa-ragged-prefill-",
        "mla-paged-decode-",
        "mla-paged-prefill-",
        "moe-",
    ] {
        let led = slugs.iter().filter(|s| s.starts_with(op_type)).find(|slug| {
            let view = bundled(&format!("/api/v1/operations/{slug}?gpu=nvidia-h200"));
            let first = &view["leaderboard"]["entries"][0];
            first["trust"] == "verified" && first["hardware"] == "NVIDIA H200"
        });
        assert!(led.is_some(), "no {op_type}* operation leads with a Verified H200 run");
    }
}
