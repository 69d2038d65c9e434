//! Issue 18's complete run dossier (`/runs/{id}` and `/api/v1/runs/{id}`), against a real server
//! on the bundled catalog (a SQLite file, as `ki serve` makes on first start: the public export
//! plus our own H200 runs): the external id, the reference's time, every statistic the manifest
//! records, the samples and their artifact, labels in words, numbers through `ki_model::units`.

use crate::serving::{BUNDLED, Reply};
use ki_model::units;
use ki_server::model::ReadModel;
use serde_json::{Map, Value};

/// A run's row in export format (`full_run_row`), or a catalog row.
type ExportRow = Map<String, Value>;

/// A text column of a row ("" when absent).
fn text<'a>(row: &'a ExportRow, column: &str) -> &'a str {
    row.get(column).and_then(Value::as_str).unwrap_or("")
}

fn html(path: &str) -> Reply {
    let reply = BUNDLED.server.get_with(path, &[("accept", "text/html")]);
    assert_eq!(reply.status, 200, "{path}: {}", reply.body);
    reply
}

fn json(path: &str) -> Value {
    let reply = BUNDLED.server.get(path);
    assert_eq!(reply.status, 200, "{path}: {}", reply.body);
    reply.json()
}

/// The first run whose row, with its whole manifest, satisfies `pick`.
fn find_run(model: &ReadModel, pick: impl Fn(&ExportRow) -> bool) -> String {
    (0..model.judgement.runs.len())
        .map(|run| BUNDLED.server.full_run_row(model, run))
        .find(|r| pick(r))
        .map(|r| text(&r, "id").to_string())
        .expect("the bundle has such a run")
}

fn spec(row: &ExportRow) -> &Value {
    row["manifest"].pointer("/run/spec").unwrap()
}

/// The page's visible text outside the canonical manifest and the citation (which quote the
/// manifest and BibTeX verbatim) and the attestation form: tags dropped, entities kept.
fn visible_text(body: &str) -> String {
    let mut body = body.to_string();
    for id in ["manifest", "cite", "replications"] {
        let open = format!("<section id=\"{id}\"");
        if let Some(start) = body.find(&open) {
            let end = body[start..].find("</section>").map(|e| start + e + "</section>".len()).unwrap();
            body.replace_range(start..end, " ");
        }
    }
    let mut out = String::with_capacity(body.len());
    let mut in_tag = false;
    for c in body.chars() {
        match c {
            '<' => in_tag = true,
            '>' => {
                in_tag = false;
                out.push(' ');
            }
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out
}

/// Words of the visible text that read as a raw camelCase key or a SCREAMING_CASE code, and
/// numbers with more than four decimals.
fn raw_words(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for word in text.split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | '(' | ')' | ':' | '·' | '"' | '=')) {
        let word = word.trim_matches(|c: char| matches!(c, '.' | '[' | ']'));
        // Units are spelled as people write them (kHz), not keys.
        if word.is_empty() || word == "kHz" || word.contains("://") || word.starts_with("sha256") || word.contains('/')
        {
            continue;
        }
        let chars: Vec<char> = word.chars().collect();
        let camel = chars[0].is_ascii_lowercase()
            && chars.iter().all(|c| c.is_ascii_alphanumeric())
            && chars.windows(2).any(|w| w[0].is_ascii_lowercase() && w[1].is_ascii_uppercase());
        let screaming =
            word.contains('_') && chars.iter().all(|c| c.is_ascii_uppercase() || *c == '_' || c.is_ascii_digit());
        let long_float = word.split_once('.').is_some_and(|(whole, fraction)| {
            !whole.is_empty()
                && whole.chars().all(|c| c.is_ascii_digit() || c == '-')
                && fraction.chars().take_while(|c| c.is_ascii_digit()).count() > 4
        });
        if camel || screaming || long_float {
            found.push(word.to_string());
        }
    }
    found
}

fn assert_reads_in_words(path: &str, body: &str) {
    let raw = raw_words(&visible_text(body));
    assert!(raw.is_empty(), "{path} shows raw keys, codes or long floats: {raw:?}");
}

/// A verified H200 run of our runner: every statistic of its timing summary, its measurements
/// (eager, graph replay, % of speed of light), the interval and the sample count, the raw samples'
/// artifact by name and digest, their histogram (the bundled contents hold them), and the summary
/// strip.
#[test]
fn a_verified_h200_run_shows_every_statistic_its_manifest_records() {
    let model = BUNDLED.server.state.model();
    let id = find_run(&model, |r| {
        text(r, "hardwareModel") == "NVIDIA H200"
            && r["reproducedByKernelindex"] == true
            && spec(r).pointer("/timing/latencyNs/p05").is_some()
    });
    let run = model.judgement.find_run(&id).unwrap();
    let row = BUNDLED.server.full_run_row(&model, run);
    let row = &row;
    let spec = spec(row);
    let page = html(&format!("/runs/{id}"));
    let body = &page.body;

    let summary = spec.pointer("/timing/latencyNs").unwrap().as_object().unwrap();
    for (key, label) in [
        ("median", "median"),
        ("mean", "mean"),
        ("p05", "5th percentile"),
        ("p95", "95th percentile"),
        ("minimum", "minimum"),
        ("maximum", "maximum"),
    ] {
        let value = summary[key].as_f64().unwrap();
        let cell = format!("<td>{label}</td><td class=\"num\">{}</td>", units::duration_ns(value));
        assert!(body.contains(&cell), "{id}: {key} missing as {cell}");
    }
    let samples = spec.pointer("/timing/samples").and_then(Value::as_u64).unwrap();
    assert!(body.contains(&format!("{} samples", units::count(samples))), "{id}: sample count");
    let interval = summary["confidence95"].as_array().unwrap();
    let interval = format!(
        "95 % confidence interval {} – {}",
        units::duration_ns(interval[0].as_f64().unwrap()),
        units::duration_ns(interval[1].as_f64().unwrap())
    );
    assert!(body.contains(&interval), "{id}: {interval}");

    // Every measurement of the manifest, in words and through the formatter.
    for m in spec["measurements"].as_array().unwrap() {
        let display = units::measured(m["value"].as_f64().unwrap(), m["unit"].as_str().unwrap());
        assert!(body.contains(&format!("<strong>{display}</strong>")), "{id}: measurement {m} missing");
    }
    let sol = spec["measurements"].as_array().unwrap().iter().find(|m| m["metric"] == "speed_of_light").unwrap();
    assert!(body.contains(&format!(
        "share of the speed of light · median <strong>{}</strong>",
        units::percent(sol["value"].as_f64().unwrap())
    )));
    for label in ["latency, eager launches", "latency, one-call graph replay", "latency inside one captured graph"] {
        assert!(body.contains(label), "{id}: {label}");
    }

    // The raw samples: named, with their digest; the bundled contents hold them, so they are drawn.
    let raw = spec.pointer("/evidence/rawSamples").unwrap();
    let (uri, digest) = (raw["uri"].as_str().unwrap(), raw["digest"].as_str().unwrap());
    assert!(body.contains("<strong>raw samples</strong>") && body.contains(uri) && body.contains(digest));
    assert!(body.contains("The index holds the raw samples") && body.contains("class=\"chart histogram\""), "{id}");
    assert!(body.contains("class=\"chart summary\"") && body.contains("<title>median "), "{id}: summary strip");

    // Sizes and counts read with separators; the raw byte count only inside the manifest.
    let memory = row["manifest"].pointer("/environment/spec/hardware/memoryBytes").and_then(Value::as_u64).unwrap();
    assert!(body.contains(&units::bytes(memory)), "{id}: memory size");
    assert!(!visible_text(body).contains(&memory.to_string()), "{id}: raw byte count shown");
    assert!(body.contains("<dt>CUDA toolkit</dt>") && body.contains("<dt>L2 cache</dt>"));
    assert_reads_in_words(&id, body);

    // The JSON twin carries the same facts.
    let view = json(&format!("/api/v1/runs/{id}"));
    assert_eq!(view["samples"]["count"], samples);
    assert_eq!(view["samples"]["valuesHeld"], true);
    assert_eq!(view["samples"]["artifact"]["digest"], digest);
    let keys: Vec<&str> = view["statistics"].as_array().unwrap().iter().map(|s| s["key"].as_str().unwrap()).collect();
    for key in summary.keys().filter(|k| *k != "confidence95") {
        assert!(keys.contains(&key.as_str()), "{id}: statistic {key} not in the JSON");
    }
    assert_eq!(view["primary"]["intervalLabel"], "95 % confidence interval");
}

/// A bundled FlashInfer-Bench run with a speedup: the reference's own time beside the factor, and
/// every metric the source reported.
#[test]
fn a_bundled_run_shows_the_reference_time_beside_the_speedup() {
    let model = BUNDLED.server.state.model();
    let id = find_run(&model, |r| {
        spec(r).pointer("/sourceNative/metrics/reference_latency_ms").is_some() && r["status"] == "passed"
    });
    let run = model.judgement.find_run(&id).unwrap();
    let full = BUNDLED.server.full_run_row(&model, run);
    let metrics = spec(&full).pointer("/sourceNative/metrics").unwrap();
    let factor = model.judgement.facts[run].reference_speedup.get().unwrap();
    let reference = units::duration_ns(metrics["reference_latency_ms"].as_f64().unwrap() * 1e6);
    let body = html(&format!("/runs/{id}")).body;
    let line = format!(
        "{}× reference · reference <strong>{reference}</strong> (the reference's own time, as the source measured it)",
        units::factor(factor)
    );
    assert!(body.contains(&line), "{id}: {line}");
    for (key, label, display) in [
        ("latency_ms", "latency", units::measured(metrics["latency_ms"].as_f64().unwrap(), "ms")),
        ("speedup_factor", "speedup factor", units::number(metrics["speedup_factor"].as_f64().unwrap())),
    ] {
        let cell = format!("<td>{label}</td><td class=\"num\">{display}</td><td>source metrics</td>");
        assert!(body.contains(&cell), "{id}: {key} missing as {cell}");
    }
    let view = json(&format!("/api/v1/runs/{id}"));
    assert_eq!(view["primary"]["reference"]["basis"], "measured");
    assert_reads_in_words(&id, &body);
}

/// A bundled GPU MODE KernelBot run: its external id, its timing summary and sample count, its
/// source file as a linked artifact, deployability in sentences, one stale banner without the
/// word twice.
#[test]
fn a_bundled_run_names_its_external_id_statistics_and_artifacts() {
    let model = BUNDLED.server.state.model();
    let id = find_run(&model, |r| {
        spec(r).pointer("/sourceNative/externalId").is_some()
            && spec(r).pointer("/timing/latencyNs/minimum").is_some()
            && spec(r).pointer("/timing/samples").is_some()
    });
    let run = model.judgement.find_run(&id).unwrap();
    let row = BUNDLED.server.full_run_row(&model, run);
    let row = &row;
    let spec = spec(row);
    let body = html(&format!("/runs/{id}")).body;
    let external = spec.pointer("/sourceNative/externalId").and_then(Value::as_str).unwrap();
    assert!(body.contains(&format!("<dt>external id</dt><dd><code>{external}</code>")), "{id}: external id");
    for (key, v) in spec.pointer("/timing/latencyNs").unwrap().as_object().unwrap() {
        let display = units::duration_ns(v.as_f64().unwrap());
        assert!(body.contains(&format!("<td class=\"num\">{display}</td><td>timing</td>")), "{id}: {key}");
    }
    let samples = spec.pointer("/timing/samples").and_then(Value::as_u64).unwrap();
    assert!(body.contains(&format!("{} samples", units::count(samples))));
    // Every metric the source reported, by its key in the JSON and its value on the page.
    let view = json(&format!("/api/v1/runs/{id}"));
    let statistics = view["statistics"].as_array().unwrap();
    for key in spec.pointer("/sourceNative/metrics").unwrap().as_object().unwrap().keys() {
        let statistic = statistics.iter().find(|s| s["key"] == key.as_str() && s["origin"] == "source metrics");
        let display =
            statistic.unwrap_or_else(|| panic!("{id}: metric {key} not in the JSON"))["display"].as_str().unwrap();
        assert!(body.contains(&format!("<td class=\"num\">{display}</td><td>source metrics</td>")), "{id}: {key}");
    }

    // The implementation's source file, linked where the artifact row has an https address.
    let artifacts = view["artifacts"].as_array().unwrap();
    let source = artifacts.iter().find(|a| a["name"] == "source code").expect("the source file is an artifact");
    let href = source["href"].as_str().expect("a linked source");
    assert!(href.starts_with("https://"));
    assert!(body.contains(&format!("<a href=\"{href}\" rel=\"nofollow noopener\">")), "{id}: artifact link");
    assert!(body.contains(source["digest"].as_str().unwrap()));

    // Deployability in sentences, never its codes.
    if !view["deployability"]["deployable"].as_bool().unwrap() {
        for sentence in view["deployability"]["explanations"].as_array().unwrap() {
            assert!(body.contains(sentence.as_str().unwrap()), "{id}: {sentence}");
        }
        assert!(!visible_text(&body).contains("NO_INSTALL_RECIPE"));
    }
    // Observed in March 2026: stale, said once.
    assert!(body.contains("<strong>Stale: </strong>observed "), "{id}: stale banner");
    assert!(!body.to_lowercase().contains("stale: stale"));
    assert_reads_in_words(&id, &body);
}

/// Without the reference's own time, the page derives it from the run's time and the factor and
/// says so; hostile strings in a real manifest (artifact names and addresses, device labels) come
/// back escaped.
#[test]
fn a_derived_reference_time_is_labelled_and_hostile_manifest_text_is_escaped() {
    let mut rows = ki_server::rows_from_export(&crate::common::shared_export()).unwrap();
    let target = rows
        .iter_mut()
        .find(|r| {
            r.table == "benchmark_runs"
                && spec(&r.row).pointer("/sourceNative/metrics/reference_latency_ms").is_some()
                && spec(&r.row).pointer("/sourceNative/metrics/speedup_factor").is_some()
        })
        .unwrap();
    let id = text(&target.row, "id").to_string();
    let manifest = target.row.get_mut("manifest").unwrap();
    let run_spec = manifest.pointer_mut("/run/spec").unwrap();
    let metrics = run_spec.pointer_mut("/sourceNative/metrics").unwrap().as_object_mut().unwrap();
    metrics.remove("reference_latency_ms");
    let latency_ms = metrics["latency_ms"].as_f64().unwrap();
    let factor = metrics["speedup_factor"].as_f64().unwrap();
    run_spec["evidence"] = serde_json::json!({
        "<b>rawSamples</b>": {"uri": "samples/<script>alert(1)</script>.json", "digest": format!("sha256:{}", "a".repeat(64))}
    });
    manifest["environment"]["metadata"]["labels"] = serde_json::json!({"<i>sm</i>": "<img src=x>"});
    let model = ReadModel::build(rows).unwrap();
    let run = model.judgement.find_run(&id).unwrap();
    let dossier = model.dossier(
        run,
        model.held_run_detail(run).unwrap(),
        ki_catalog::AttestationPage::empty(),
        "http://localhost",
    );
    let reference = dossier.primary.reference.as_ref().unwrap();
    assert_eq!(reference.basis, "derived");
    assert_eq!(reference.display, units::duration_ns(latency_ms * 1e6 * factor));
    let page = ki_server::pages::run::render(&dossier).into_string();
    assert!(page.contains(&format!("reference <strong>{}</strong> (derived: this run", reference.display)));
    assert!(!page.contains("<script>alert") && !page.contains("<img src=x") && !page.contains("<b>raw"));
    assert!(page.contains("samples/&lt;script&gt;alert(1)&lt;/script&gt;.json"));
    assert!(page.contains("&lt;img src=x&gt;"));
}

/// "source available: yes" never stands alone: the implementation page and the run page say
/// where the source is (its repository or its file, linked where the index has an address), or
/// that the index holds neither a copy nor a link.
#[test]
fn the_source_code_is_named_where_the_index_knows_it() {
    let model = BUNDLED.server.state.model();
    let index = &model.judgement;
    // Each implementation's typed row with its manifest.
    let implementations: Vec<_> = (0..index.implementations.len())
        .map(|i| (&index.implementations[i], index.implementation_manifest(i)))
        .collect();
    let (with_file, manifest) = implementations
        .iter()
        .find(|(i, manifest)| manifest.pointer("/spec/source/fileName").is_some() && i.source_available)
        .unwrap();
    let file = manifest.pointer("/spec/source/fileName").and_then(Value::as_str).unwrap();
    let digest = manifest.pointer("/spec/source/contentDigest").and_then(Value::as_str).unwrap();
    let slug = &with_file.slug;
    let page = html(&format!("/implementations/{slug}")).body;
    assert!(page.contains("<dt>source code</dt>") && page.contains(&format!("{file} ({digest})")), "{slug}");
    assert!(!page.contains("source available"));
    let view = json(&format!("/api/v1/implementations/{slug}"));
    if let Some(href) = view["sourceCode"]["href"].as_str() {
        assert!(page.contains(&format!("<a href=\"{href}\" rel=\"nofollow noopener\">{file} ({digest})</a>")));
    }

    let (with_repository, manifest) = implementations
        .iter()
        .find(|(_, manifest)| manifest.pointer("/spec/projectRevision/repository").is_some())
        .unwrap();
    let repository = manifest.pointer("/spec/projectRevision/repository").and_then(Value::as_str).unwrap();
    let page = html(&format!("/implementations/{}", with_repository.slug)).body;
    assert!(page.contains(&format!("<a href=\"{repository}\" rel=\"nofollow noopener\">{repository}")));

    if let Some((bare, _)) = implementations.iter().find(|(i, manifest)| {
        i.source_available
            && manifest.pointer("/spec/source").is_none()
            && manifest.pointer("/spec/projectRevision/repository").is_none()
    }) {
        let page = html(&format!("/implementations/{}", bare.slug)).body;
        assert!(page.contains("the index holds neither a copy nor a link"), "{}", bare.slug);
    }
}
