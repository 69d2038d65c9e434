//! The moe bound's routed part (crates/runner/src/families/moe.rs): each local expert the routing
//! reaches adds its fp8 weights and f32 block scales once, each (token, local expert) pair the two
//! GEMMs' flops, from the definition's own shapes.
use std::collections::BTreeMap;
use std::path::PathBuf;

use ki_runner::definition::Definition;
use ki_runner::families::moe::{ExpertWork, expert_work};
use ki_runner::families::{Bound, Ceilings};

fn definition(name: &str) -> Definition {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/verify/flashinfer_trace/definitions").join(name);
    Definition::load(path.to_str().unwrap()).unwrap()
}

fn axes(definition: &Definition, seq_len: usize) -> BTreeMap<String, usize> {
    let mut axes: BTreeMap<String, usize> =
        definition.axes.keys().filter_map(|n| Some((n.clone(), definition.const_axis(n)? as usize))).collect();
    axes.insert("seq_len".into(), seq_len);
    axes
}

#[test]
fn a_reached_expert_adds_its_weights_and_each_pair_its_flops() {
    let moe = definition("moe/moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048.json");
    let work = expert_work(&moe, &axes(&moe, 1)).expect("the moe definition has expert weights");
    // gemm1 [4096, 7168] fp8 + scales [32, 56] f32; gemm2 [7168, 2048] fp8 + scales [56, 16] f32.
    let bytes = (4096 * 7168 + 32 * 56 * 4 + 7168 * 2048 + 56 * 16 * 4) as f64;
    // Each token's gate/up and down GEMMs, fp8 flops counted as half a bf16 flop (the bound's peak).
    let flops_per_token = (2 * 7168 * 4096 + 2 * 2048 * 7168) as f64 / 2.0;
    assert_eq!(work, ExpertWork { bytes, flops_per_token });
    // Independent of the tokens: the weights are per expert.
    assert_eq!(expert_work(&moe, &axes(&moe, 14_107)), Some(work));
    assert_eq!(work.routed(0, 0), Bound::default());
    // seq_len 14,107, every local expert reached, one local pair a token (8 of 256 experts each,
    // 32 local): 1.41 GB of weights (294 µs at 4.8 TB/s) and 0.62 PFLOP (628 µs at 989 TFLOP/s).
    let routed = work.routed(32, 14_107);
    assert_eq!(routed.bytes, 32.0 * bytes);
    let ns = routed.time_ns(&Ceilings::H200_DATASHEET);
    assert!((620_000.0..640_000.0).contains(&ns), "{ns}");
}

#[test]
fn a_definition_without_expert_weights_has_no_routed_work() {
    let rmsnorm = definition("rmsnorm/rmsnorm_h4096.json");
    assert_eq!(expert_work(&rmsnorm, &axes(&rmsnorm, 7)), None);
}
