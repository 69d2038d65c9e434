//! Issue 34 on the bundled catalog (as `ki serve` makes it on first start: the public export and
//! our own H200 runs), through a real server: resolve reads GPUs, operations and axes as the
//! search does and answers a case never measured with the nearest measured cases on either side;
//! the model page answers for the reader's batch and context length; the GPU list names GPUs
//! without runs and the nearest measured one; every page that names a fastest run names the best
//! deployable one beside it, and the native kernel is deployable with its install recipe.

use serde_json::{Value, json};

use crate::serving::{BUNDLED, Reply};

const KV4: &str = "gqa_paged_decode_h32_kv4_d128_ps1";

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

fn resolve(body: Value) -> Value {
    let reply = BUNDLED.server.post("/api/v1/resolve/kernel", "application/json", None, &body.to_string());
    assert_eq!(reply.status, 200, "{body}: {}", reply.body);
    reply.json()
}

#[test]
fn resolve_reads_gpus_operations_and_axes_as_the_search_does() {
    // `h200` and `NVIDIA H200` answer alike; the answer says how it read the name.
    let typed = resolve(json!({"operation": KV4, "hardware": "h200", "axes": {"batch_size": 16}}));
    let exact = resolve(json!({"operation": KV4, "hardware": "NVIDIA H200", "axes": {"batch_size": 16}}));
    assert_eq!(typed["cohorts"], exact["cohorts"]);
    assert!(!typed["cohorts"].as_array().unwrap().is_empty());
    assert_eq!(typed["readAs"], json!([{"field": "hardware", "given": "h200", "read": "NVIDIA H200"}]));
    assert_eq!(typed["request"]["hardware"], "NVIDIA H200");
    assert_eq!(exact["readAs"], json!([]));

    // Operation words and a loose axis name: the GPU's most-run gqa decode operation, batch_size.
    let words = resolve(json!({"operation": "gqa paged decode", "hardware": "H200", "axes": {"batch": 64}}));
    assert!(words["operation"]["name"].as_str().unwrap().starts_with("gqa_paged_decode_h32_kv"), "{words}");
    let fields: Vec<&str> = words["readAs"].as_array().unwrap().iter().map(|r| r["field"].as_str().unwrap()).collect();
    assert_eq!(fields, ["hardware", "operation", "axis"]);
    assert!(
        words["cohorts"]
            .as_array()
            .unwrap()
            .iter()
            .all(|c| c["axes"]["batch_size"] == 64 && c["hardware"] == "NVIDIA H200")
    );

    // The batch endpoint reads each request alike.
    let reply = BUNDLED.server.post(
        "/api/v1/resolve/kernel/batch",
        "application/json",
        None,
        &json!({"requests": [{"operation": "rms norm"}, {"operation": KV4, "hardware": "H100 SXM"}]}).to_string(),
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    let answers = reply.json();
    let rms = answers["responses"][0]["operation"]["name"].as_str().unwrap().to_lowercase();
    assert!(rms.contains("rmsnorm") || rms.contains("rms_norm"), "{answers}");
    assert_eq!(answers["responses"][1]["request"]["hardware"], "NVIDIA H100");

    // The page: what was read, in words, and the answer.
    let page = html("/resolve?operation=gqa+paged+decode&hardware=H100+SXM&axes=batch%3D16");
    assert!(page.body.contains("Read hardware “H100 SXM” as <strong>NVIDIA H100</strong>."), "{}", page.body);
    assert!(page.body.contains("Read operation “gqa paged decode” as <strong>gqa_paged_decode_h32_kv"));
}

#[test]
fn a_case_never_measured_answers_the_nearest_measured_cases_on_either_side() {
    let answer = resolve(json!({"operation": KV4, "hardware": "H200", "axes": {"batch_size": 32}}));
    assert_eq!(answer["mode"], "browse");
    let nearest = answer["nearest"].as_array().unwrap();
    let sides: Vec<(&str, &Value)> = nearest.iter().map(|n| (n["side"].as_str().unwrap(), &n["measured"])).collect();
    assert_eq!(sides, [("below", &json!(16)), ("above", &json!(64))]);
    for case in nearest {
        assert_eq!(case["differs"], json!([{"axis": "batch_size", "asked": 32, "measured": case["measured"]}]));
        assert!(!case["cohorts"].as_array().unwrap().is_empty());
    }
    // Two axes off: each side names both.
    let answer =
        resolve(json!({"operation": KV4, "hardware": "H200", "axes": {"batch_size": 32, "num_kv_indices": 32768}}));
    let nearest = answer["nearest"].as_array().unwrap();
    assert_eq!(nearest.len(), 2, "{answer}");
    for case in nearest {
        let axes: Vec<&str> = case["differs"].as_array().unwrap().iter().map(|d| d["axis"].as_str().unwrap()).collect();
        assert_eq!(axes, ["batch_size", "num_kv_indices"]);
    }
    let page = html(
        "/resolve?operation=gqa_paged_decode_h32_kv4_d128_ps1&hardware=H200&axes=batch_size%3D32%2C+num_kv_indices%3D32768",
    );
    assert!(page.body.contains("Answer: browse — not measured; the nearest measured cases"), "{}", page.body);
    assert!(
        page.body.contains("Below: batch_size = 16 (asked 32), num_kv_indices = 23079 (asked 32768)"),
        "{}",
        page.body
    );
    assert!(page.body.contains("Above: batch_size = 64 (asked 32), num_kv_indices = 33167 (asked 32768)"));
}

#[test]
fn resolve_speaks_to_users_and_escapes_what_they_typed() {
    let page = html("/resolve?operation=%3Cscript%3Ezzqx%3C%2Fscript%3E&hardware=%3Cb%3Ex");
    assert!(page.body.contains("No operation is named “&lt;script&gt;zzqx&lt;/script&gt;”."), "{}", page.body);
    assert!(page.body.contains("<a href=\"/?q=%3Cscript%3Ezzqx%3C%2Fscript%3E\">Search for it</a>"));
    assert!(!page.body.contains("<script>zzqx") && !page.body.contains("<b>x"));
    let page = html("/resolve?operation=gqa_paged_decode_h32_kv4_d128_ps1&hardware=RTX+9999&axes=batch_size%3D16");
    assert!(page.body.contains("This case was never measured on RTX 9999."), "{}", page.body);
    assert!(page.body.contains("It was measured on"));
}

#[test]
fn the_model_page_answers_for_the_readers_batch_and_context_length() {
    const OP: &str = "gqa-paged-decode-h32-kv8-d128-ps1";
    let on_h200 = |view: &Value| -> Value {
        let op = view["operations"].as_array().unwrap().iter().find(|o| o["slug"] == OP).expect("the kv8 decode");
        op["gpus"].as_array().unwrap().iter().find(|g| g["gpu"] == "NVIDIA H200").expect("measured on the H200").clone()
    };
    let defaults = json("/api/v1/models/llama-3-1-8b");
    assert_eq!(defaults["case"], json!({"batch": 16, "context": 1024}));
    let h200 = on_h200(&defaults);
    assert_eq!(h200["case"]["batch"], 16.0);
    assert_eq!(h200["bestVerified"]["workload"], h200["case"]["workload"], "the best is the case's");

    // Batch 64 at 900 tokens: the 64-sequence workload nearest 900 tokens each (57,750 pages).
    let asked = json("/api/v1/models/llama-3-1-8b?batch=64&context=900");
    assert_eq!(asked["case"], json!({"batch": 64, "context": 900}));
    let h200 = on_h200(&asked);
    assert_eq!(h200["case"]["batch"], 64.0);
    assert_eq!(h200["case"]["context"], 57750.0 / 64.0);
    assert_eq!(h200["case"]["exact"], false);
    assert_eq!(h200["bestVerified"]["workload"], h200["case"]["workload"]);
    assert!(h200["bestVerified"]["workload"].as_str().unwrap().contains("57750"), "{h200}");
    assert_ne!(h200["bestVerified"]["run"]["id"], on_h200(&defaults)["bestVerified"]["run"]["id"]);

    // The form shows the defaults and what was asked; a case it cannot read is said in words.
    let page = html("/models/llama-3-1-8b?batch=64&context=900");
    assert!(
        page.body.contains("name=\"batch\" inputmode=\"numeric\" maxlength=\"20\" value=\"64\" placeholder=\"16\""),
        "{}",
        page.body
    );
    assert!(page.body.contains("For batch 64 and context 900 tokens"));
    assert!(page.body.contains("(nearest measured)"));
    let page = html("/models/llama-3-1-8b?batch=lots");
    assert!(page.body.contains("Batch size takes a whole number from 1, such as 16; got “lots”"), "{}", page.body);
    let problem = BUNDLED.server.get("/api/v1/models/llama-3-1-8b?context=0").problem(400);
    assert!(problem["detail"].as_str().unwrap().contains("Context length"), "{problem}");
}

#[test]
fn the_gpu_list_names_gpus_without_runs_and_the_nearest_measured_one() {
    let list = json("/api/v1/gpus");
    let unmeasured = list["unmeasured"].as_array().unwrap();
    let row =
        |model: &str| unmeasured.iter().find(|u| u["model"] == model).unwrap_or_else(|| panic!("{model}: {list}"));
    assert_eq!(row("NVIDIA L40S")["nearest"]["model"], "NVIDIA L4");
    assert_eq!(row("NVIDIA L40S")["nearest"]["reason"], "same architecture (Ada Lovelace)");
    assert_eq!(row("AMD Instinct MI325X")["nearest"]["model"], "AMD Instinct MI300X");
    // Hopper; since the 2026-12-07 publication the H100 has more runs than the H200.
    assert_eq!(row("NVIDIA GH200")["nearest"]["model"], "NVIDIA H100");
    let measured: Vec<&str> = list["gpus"].as_array().unwrap().iter().map(|g| g["model"].as_str().unwrap()).collect();
    assert!(unmeasured.iter().all(|u| !measured.contains(&u["model"].as_str().unwrap())));
    let page = html("/gpus");
    assert!(page.body.contains("No runs yet. Nearest measured: <a href=\"/gpus/nvidia-l4\">NVIDIA L4</a> (same architecture (Ada Lovelace),"), "{}", page.body);

    // An index with runs on the H200 alone: the H100 row points to it.
    let rows =
        ki_server::rows_from_export(&crate::common::repository("data/kernelindex-verified-h200-2026-11-30.jsonl.zst"))
            .unwrap();
    let model = ki_server::model::ReadModel::build(rows).unwrap();
    let unmeasured = model.unmeasured_gpus();
    let h100 = unmeasured.iter().find(|u| u.model == "NVIDIA H100").unwrap();
    let nearest = h100.nearest.as_ref().unwrap();
    assert_eq!((nearest.model.as_str(), nearest.reason.as_str()), ("NVIDIA H200", "same architecture (Hopper)"));
    assert!(unmeasured.iter().filter(|u| u.vendor == "AMD").all(|u| u.nearest.is_none()));
}

#[test]
fn every_page_naming_a_fastest_run_names_the_best_deployable_one_beside_it() {
    // The native kernel, #1 on the H200, is deployable (it has an install recipe).
    let answer = resolve(
        json!({"operation": KV4, "hardware": "NVIDIA H200", "axes": {"batch_size": 16, "num_kv_indices": 1020}}),
    );
    let group = &answer["cohorts"][0];
    assert!(group["fastest"][0]["implementation"].as_str().unwrap().starts_with("kernelindex-native"));
    assert_eq!(group["fastest"][0]["deployable"], true);
    assert_eq!(group["bestDeployable"]["runId"], group["fastest"][0]["runId"]);
    let implementation =
        json(&format!("/api/v1/implementations/{}", group["fastest"][0]["implementation"].as_str().unwrap()));
    let recipe = implementation["installCommand"].as_str().unwrap_or_else(|| panic!("{implementation}"));
    assert!(recipe.contains("import ki_gqa_paged_decode"), "{recipe}");

    let deployable_note = |body: &str| body.contains("<span class=\"deployable\">");
    for path in [
        "/resolve?operation=gqa_paged_decode_h32_kv4_d128_ps1&hardware=H200&axes=batch_size%3D16",
        "/?q=gqa+paged+decode+h200+batch+16",
        "/operations/gqa-paged-decode-h32-kv4-d128-ps1",
        "/gpus/nvidia-h200",
        "/models/qwen3-30b-a3b",
    ] {
        let page = html(path);
        assert!(deployable_note(&page.body), "{path}: no best-deployable note");
    }
    // A group whose #1 is not deployable names the deployable one (or says there is none).
    let page = html("/gpus/nvidia-b200");
    assert!(page.body.contains("best deployable: "), "the B200's reported bests are not deployable");
}
