//! GPUs (`/gpus`): the hardware in the index.

use axum::extract::State;
use maud::{Markup, html};
use serde::Serialize;

use super::{Answer, Shared, html_response, json_response, layout};
use crate::model::{ReadModel, slugify};

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

/// The hardware the index has runs on.
#[derive(Debug, Clone, serde::Serialize, schemars::JsonSchema)]
pub struct GpuList {
    pub gpus: Vec<GpuItem>,
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
                    href: crate::pages::gpu_href(model),
                    vendor: runs().next().and_then(|r| self.run(r).hardware_vendor.as_deref()).unwrap_or("").into(),
                    architectures,
                    runs: run_list.len(),
                    operations: ops.len(),
                    records_held: runs().filter(|&r| self.judgement.facts[r].rank() == Some(1)).count(),
                }
            })
            .collect()
    }
}

pub fn render(gpus: &[GpuItem]) -> Markup {
    layout(
        "GPUs",
        html! {
            h1 { "GPUs" }
            p { "Hardware with benchmark runs in the index. A run is ranked only against runs on the same environment." }
            table { thead { tr { th scope="col" { "GPU" } th scope="col" { "vendor" } th scope="col" { "architectures" } th scope="col" class="num" { "runs" } th scope="col" class="num" { "operations" } th scope="col" class="num" { "#1 runs" } } }
                tbody { @for g in gpus { tr id=(g.anchor) {
                    td { a href=(g.href) { (g.model) } } td { (g.vendor) } td { (g.architectures.join(", ")) }
                    td.num { (g.runs) } td.num { (g.operations) } td.num { (g.records_held) }
                } } } }
        },
    )
}

pub async fn page(State(state): State<Shared>) -> Answer {
    Ok(html_response(render(&state.model().gpu_list())))
}

pub async fn api(State(state): State<Shared>) -> Answer {
    Ok(json_response(&GpuList { gpus: state.model().gpu_list() }))
}
