"""Tests of ki_compare. They need torch and a GPU, which CI lacks: there they are skipped, and
bench/verify/smoke.sh runs them on the device."""

import os
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

try:
    import torch
except ImportError:
    torch = None

GPU = torch is not None and torch.cuda.is_available()


@unittest.skipUnless(GPU, "needs torch and a GPU (run by bench/verify/smoke.sh on the device)")
class CompareTest(unittest.TestCase):
    def setUp(self):
        import ki_compare

        self.compare = ki_compare.compare

    def sample(self, n, seed):
        g = torch.Generator(device="cuda").manual_seed(seed)
        ref = torch.randn(n, generator=g, device="cuda").to(torch.bfloat16)
        out = (ref.float() + 0.02 * torch.randn(n, generator=g, device="cuda")).to(torch.bfloat16)
        out[5] = float("nan")
        out[n // 2] = float("inf")
        ref[n // 2] = float("inf")  # the same infinity: matches
        out[n - 3] = float("-inf")  # not in the reference: a mismatch
        ref[7] = float("nan")
        return out, ref

    def test_chunks_agree_with_one_pass(self):
        out, ref = self.sample(100_003, 1)
        whole = self.compare(out, ref, 1e-2, 1e-2, chunk=1 << 30)
        for chunk in (997, 4096, 65_536):
            parts = self.compare(out, ref, 1e-2, 1e-2, chunk=chunk)
            for key in ("elements", "flashinferBenchPass", "solExecbenchPass", "nonFiniteMismatches"):
                self.assertEqual(parts[key], whole[key], key)
            for key in ("maxAbsError", "maxRelError", "matchedRatio", "solExecbenchMatchedRatio", "relativeL2Error"):
                self.assertAlmostEqual(parts[key], whole[key], places=9, msg=key)
        self.assertEqual(whole["elements"], 100_003)
        self.assertEqual(whole["nonFiniteMismatches"], 3)  # the NaN of each side and the lone -inf
        self.assertFalse(whole["flashinferBenchPass"])

    def test_identical_outputs_pass(self):
        _, ref = self.sample(4096, 2)
        ref = torch.nan_to_num(ref)
        got = self.compare(ref.clone(), ref, 1e-2, 1e-2)
        self.assertTrue(got["flashinferBenchPass"] and got["solExecbenchPass"])
        self.assertEqual(got["relativeL2Error"], 0.0)
        self.assertEqual(self.compare(ref[:0], ref[:0], 1e-2, 1e-2)["matchedRatio"], 1.0)

    def test_memory_is_bounded_by_the_chunk(self):
        n = 1 << 27  # 128M bf16 elements: 2 x 256 MiB of inputs, about 4 GiB of float32 temporaries whole
        ref = torch.zeros(n, dtype=torch.bfloat16, device="cuda")
        out = torch.zeros_like(ref)
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
        got = self.compare(out, ref, 1e-2, 1e-2)
        peak = torch.cuda.max_memory_allocated() - base
        self.assertTrue(got["flashinferBenchPass"])
        self.assertLess(peak, 1 << 30, f"the comparison allocated {peak} bytes beyond its inputs")


if __name__ == "__main__":
    unittest.main()
