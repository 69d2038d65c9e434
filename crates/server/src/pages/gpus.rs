//! GPUs (`/gpus`): the hardware in the index.

use axum::extract::State;
use maud::{Markup, html};
use serde::Serialize;

use super::{Answer, Shared, html_response, json_response, layout};
use crate::model::{ReadModel, slugify};
use ki_model::gpu::{KNOWN_GPUS, KnownGpu, known_gpu};

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GpuItem {
    pub model: String,
    pub anchor: String,
    /// The GPU's page, `/gpus/{slug}`.
    pub href: String,
    pub vendor: String,
    pub architectures: Vec<String>,
    pub runs: usize,
    pub operations: usize,
    pub records_held: usize,
}

/// A GPU people ask about that the index has no run on, and the measured GPU nearest to it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnmeasuredGpu {
    pub model: String,
    pub anchor: String,
    pub vendor: String,
    pub architecture: String,
    /// The measured GPU of the same vendor nearest in architecture (the same first, then the
    /// nearest generation; on a tie the one with the most runs), and why.
    pub nearest: Option<NearestGpu>,
}

#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NearestGpu {
    pub model: String,
    pub href: String,
    pub architecture: String,
    pub runs: usize,
    /// `same architecture` or `N generations apart`.
    pub reason: String,
}

/// The hardware the index has runs on, and the GPUs of [`KNOWN_GPUS`] it has none on.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct GpuList {
    pub gpus: Vec<GpuItem>,
    pub unmeasured: Vec<UnmeasuredGpu>,
}

impl ReadModel {
    pub fn gpu_list(&self) -> Vec<GpuItem> {
        self.runs_by_gpu
            .iter()
            .map(|(model, run_list)| {
                let runs = || run_list.iter().map(|&r| r as usize);
                let mut architectures: Vec<String> = runs()
                    .filter_map(|r| self.run(r).hardware_architecture.as_deref().filter(|a| !a.is_empty()))
                    .map(str::to_string)
                    .collect();
                architectures.sort();
                architectures.dedup();
                let mut ops: Vec<usize> = runs().filter_map(|r| self.run_operation(r)).collect();
                ops.sort_unstable();
                ops.dedup();
                GpuItem {
                    model: model.clone(),
                    anchor: slugify(model),
                    href: crate::model::gpu_href(model),
                    vendor: runs().next().and_then(|r| self.run(r).hardware_vendor.as_deref()).unwrap_or("").into(),
                    architectures,
                    runs: run_list.len(),
                    operations: ops.len(),
                    records_held: runs().filter(|&r| self.judgement.facts[r].rank() == Some(1)).count(),
                }
            })
            .collect()
    }

    /// The GPUs of [`KNOWN_GPUS`] with no run in the index, each with the nearest measured GPU
    /// of its vendor that the list knows: the same architecture first, then the fewest
    /// generations apart (the newer on a tie), then the most runs.
    pub fn unmeasured_gpus(&self) -> Vec<UnmeasuredGpu> {
        let measured: Vec<(&KnownGpu, &str, usize)> = self
            .runs_by_gpu
            .iter()
            .filter_map(|(model, runs)| known_gpu(model).map(|k| (k, model.as_str(), runs.len())))
            .collect();
        KNOWN_GPUS
            .iter()
            .filter(|k| !measured.iter().any(|(m, ..)| m.model == k.model))
            .map(|k| {
                let nearest = measured
                    .iter()
                    .filter(|(m, ..)| m.vendor == k.vendor)
                    .min_by_key(|(m, _, runs)| {
                        (m.generation.abs_diff(k.generation), std::cmp::Reverse(m.generation), std::cmp::Reverse(*runs))
                    })
                    .map(|(m, model, runs)| NearestGpu {
                        model: model.to_string(),
                        href: crate::model::gpu_href(model),
                        architecture: m.architecture.into(),
                        runs: *runs,
                        reason: match m.generation.abs_diff(k.generation) {
                            0 => format!("same architecture ({})", m.architecture),
                            1 => format!("one generation apart ({})", m.architecture),
                            n => format!("{n} generations apart ({})", m.architecture),
                        },
                    });
                UnmeasuredGpu {
                    model: k.model.into(),
                    anchor: slugify(k.model),
                    vendor: k.vendor.into(),
                    architecture: k.architecture.into(),
                    nearest,
                }
            })
            .collect()
    }
}

pub fn render(gpus: &[GpuItem], unmeasured: &[UnmeasuredGpu]) -> Markup {
    layout(
        "GPUs",
        html! {
            h1 { "GPUs" }
            p { "Hardware with benchmark runs in the index, then GPUs it has no run on yet with the nearest measured one. A run is ranked only against runs on the same environment." }
            table { thead { tr { th scope="col" { "GPU" } th scope="col" { "vendor" } th scope="col" { "architectures" } th scope="col" class="num" { "runs" } th scope="col" class="num" { "operations" } th scope="col" class="num" { "#1 runs" } } }
                tbody {
                    @for g in gpus { tr id=(g.anchor) {
                        td { a href=(g.href) { (g.model) } } td { (g.vendor) } td { (g.architectures.join(", ")) }
                        td.num { (g.runs) } td.num { (g.operations) } td.num { (g.records_held) }
                    } }
                    @for u in unmeasured { tr.unmeasured id=(u.anchor) {
                        td { (u.model) } td { (u.vendor) } td { (u.architecture) }
                        td colspan="3" { "No runs yet. "
                            @if let Some(n) = &u.nearest { "Nearest measured: " a href=(n.href) { (n.model) } " (" (n.reason) ", " (n.runs) " runs)." }
                            @else { "No GPU of this vendor is measured." } }
                    } }
                } }
        },
    )
}

pub async fn page(State(state): State<Shared>) -> Answer {
    let model = state.model();
    Ok(html_response(render(&model.gpu_list(), &model.unmeasured_gpus())))
}

pub async fn api(State(state): State<Shared>) -> Answer {
    let model = state.model();
    Ok(json_response(&GpuList { gpus: model.gpu_list(), unmeasured: model.unmeasured_gpus() }))
}
