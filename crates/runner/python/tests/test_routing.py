"""Tests of ki_routing against the moe definition's own reference routing. They need torch, which
CI lacks: there they are skipped, and bench/verify/smoke.sh runs them on the device."""

import json
import os
import sys
import textwrap
import unittest

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, HERE)

try:
    import torch
except ImportError:
    torch = None

DEFINITION = os.path.join(
    HERE,
    "..",
    "tests/fixtures/verify/flashinfer_trace/definitions/moe/moe_fp8_block_scale_ds_routing_topk8_ng8_kg4_e32_h7168_i2048.json",
)


def routing_section(definition):
    """The reference's routing section ("# 2)" up to "# 3)"), compiled on its own (the definition's
    source has CRLF line ends)."""
    source = definition["reference"].replace("\r\n", "\n")
    section = textwrap.dedent(source[source.index("    # 2)") : source.index("    # 3)")])
    return compile(section, "<reference routing>", "exec")


def reference_routing(definition, logits, bias):
    """topk_idx as the definition's reference computes it, with the constants it declares."""
    namespace = {
        "torch": torch,
        "routing_logits": logits,
        "routing_bias": bias,
        "routed_scaling_factor": 2.5,
        "T": logits.shape[0],
        "E_global": logits.shape[1],
        "TOP_K": 8,
        "N_GROUP": 8,
        "TOPK_GROUP": 4,
    }
    exec(routing_section(definition), namespace)
    return namespace["topk_idx"]


class SectionTest(unittest.TestCase):
    def test_the_routing_section_compiles_alone(self):
        with open(DEFINITION) as f:
            code = routing_section(json.load(f))
        self.assertIn("topk_idx", code.co_names)


@unittest.skipUnless(torch is not None, "needs torch (run by bench/verify/smoke.sh on the device)")
class RoutingTest(unittest.TestCase):
    def setUp(self):
        import ki_routing

        self.routing = ki_routing
        with open(DEFINITION) as f:
            self.definition = json.load(f)

    def test_the_experts_are_the_references(self):
        g = torch.Generator().manual_seed(7)
        for tokens, bias_scale in [(1, 0.0), (37, 0.0), (512, 0.3)]:
            logits = torch.randn(tokens, 256, generator=g)
            bias = (bias_scale * torch.randn(256, generator=g)).to(torch.bfloat16)
            ours = self.routing.ds_routing_topk(logits, bias, 8, 8, 4).sort(dim=1).values
            theirs = reference_routing(self.definition, logits, bias).sort(dim=1).values
            self.assertTrue(torch.equal(ours, theirs), f"{tokens} tokens")

    def test_counts_only_local_experts(self):
        g = torch.Generator().manual_seed(11)
        logits = torch.randn(300, 256, generator=g)
        bias = torch.zeros(256, dtype=torch.bfloat16)
        inputs = {
            "routing_logits": logits,
            "routing_bias": bias,
            "local_expert_offset": 64,
            "gemm1_weights": torch.empty(32, 1, 1),
        }
        chosen = reference_routing(self.definition, logits, bias)
        local = chosen[(chosen >= 64) & (chosen < 96)]
        self.assertEqual(
            self.routing.counts(self.definition, inputs),
            {"localExperts": int(torch.unique(local).numel()), "localAssignments": int(local.numel())},
        )
        # A token whose experts are all elsewhere reaches none: logits that favour experts 0-7 only.
        one = torch.full((1, 256), -10.0)
        one[0, :8] = 10.0
        inputs["routing_logits"] = one
        self.assertEqual(self.routing.counts(self.definition, inputs), {"localExperts": 0, "localAssignments": 0})

    def test_other_definitions_are_not_counted(self):
        self.assertIsNone(self.routing.counts({"name": "moe_fp8_block_scale_renorm_topk8_e128_h2048_i768"}, {}))


if __name__ == "__main__":
    unittest.main()
