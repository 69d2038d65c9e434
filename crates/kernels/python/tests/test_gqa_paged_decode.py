"""The PyTorch launcher of the native kernel against the definitions' PyTorch reference, on a GPU.

`python3 -m unittest discover -s crates/kernels/python/tests` (skipped where PyTorch, CuPy or a GPU is missing).
Shapes: batches of 1 to 64 sequences with lengths drawn at random (empty ones too), page sizes 1 and 16,
h32/kv4 and h32/kv8 with head_dim 128 and h32/kv4 with head_dim 64, and one long batch that is cut into parts.
"""

import pathlib
import sys
import unittest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent.parent))

try:
    import cupy  # noqa: F401
    import torch

    HAVE_GPU = torch.cuda.is_available()
except ImportError:
    HAVE_GPU = False


def reference(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale, page_size):
    """What the gqa_paged_decode definitions' `reference` computes (fp32 math, lse in base 2)."""
    batch, num_qo_heads, head_dim = q.shape
    num_kv_heads = k_cache.shape[2]
    group = num_qo_heads // num_kv_heads
    out = torch.zeros_like(q)
    lse = torch.full((batch, num_qo_heads), float("-inf"), dtype=torch.float32, device=q.device)
    for b in range(batch):
        pages = kv_indices[kv_indptr[b] : kv_indptr[b + 1]].long()
        if pages.numel() == 0:
            continue
        k = k_cache[pages].reshape(-1, num_kv_heads, head_dim)
        v = v_cache[pages].reshape(-1, num_kv_heads, head_dim)
        if page_size > 1:
            tokens = (pages.numel() - 1) * page_size + int(kv_last_page_len[b])
            k, v = k[:tokens], v[:tokens]
        k = k.float().repeat_interleave(group, dim=1)
        v = v.float().repeat_interleave(group, dim=1)
        logits = torch.einsum("hd,thd->ht", q[b].float(), k) * sm_scale
        lse[b] = torch.logsumexp(logits, dim=-1) / torch.log(torch.tensor(2.0))
        out[b] = torch.einsum("ht,thd->hd", torch.softmax(logits, dim=-1), v).to(torch.bfloat16)
    return out, lse


@unittest.skipUnless(HAVE_GPU, "needs PyTorch with CUDA, CuPy and a GPU")
class LauncherMatchesTheReference(unittest.TestCase):
    def case(self, decode, lengths, seed):
        generator = torch.Generator(device="cuda").manual_seed(seed)
        page_size = decode.page_size
        pages_per = [max(1, -(-n // page_size)) if n else 0 for n in lengths]
        num_pages = sum(pages_per) + 7
        kv_indptr = torch.tensor([0] + list(torch.tensor(pages_per).cumsum(0)), dtype=torch.int32, device="cuda")
        kv_indices = torch.randperm(num_pages, generator=generator, device="cuda")[: sum(pages_per)].to(torch.int32)
        last = [(n - 1) % page_size + 1 if n else 1 for n in lengths]
        kv_last_page_len = torch.tensor(last, dtype=torch.int32, device="cuda")
        shape = (num_pages, page_size, decode.num_kv_heads, decode.head_dim)
        k_cache = torch.randn(shape, generator=generator, device="cuda").to(torch.bfloat16)
        v_cache = torch.randn(shape, generator=generator, device="cuda").to(torch.bfloat16)
        q = torch.randn((len(lengths), decode.num_qo_heads, decode.head_dim), generator=generator, device="cuda").to(torch.bfloat16)
        sm_scale = decode.head_dim**-0.5
        last_arg = kv_last_page_len if page_size > 1 else None
        out, lse = decode(q, k_cache, v_cache, kv_indptr, kv_indices, sm_scale, kv_last_page_len=last_arg)
        # Twice: the arrival counters must be back at zero after a launch.
        out, lse = decode(q, k_cache, v_cache, kv_indptr, kv_indices, sm_scale, kv_last_page_len=last_arg)
        torch.cuda.synchronize()
        want_out, want_lse = reference(q, k_cache, v_cache, kv_indptr, kv_indices, kv_last_page_len, sm_scale, page_size)
        label = f"h{decode.num_qo_heads} kv{decode.num_kv_heads} d{decode.head_dim} ps{page_size} lengths {lengths[:8]}..."
        torch.testing.assert_close(out.float(), want_out.float(), atol=2e-2, rtol=2e-2, msg=label)
        finite = torch.isfinite(want_lse)
        self.assertTrue(torch.equal(finite, torch.isfinite(lse)), label)
        torch.testing.assert_close(lse[finite], want_lse[finite], atol=1e-3, rtol=1e-3, msg=label)

    def test_every_shape(self):
        import ki_gqa_paged_decode as ki

        rng = torch.Generator().manual_seed(7)
        for heads, kv, dim, page_size in [(32, 4, 128, 1), (32, 8, 128, 1), (32, 4, 64, 1), (32, 4, 128, 16)]:
            decode = ki.GqaPagedDecode(num_qo_heads=heads, num_kv_heads=kv, head_dim=dim, page_size=page_size)
            for seed, batch in enumerate([1, 3, 16, 64]):
                lengths = torch.randint(0, 1500, (batch,), generator=rng).tolist()
                lengths[0] = 0 if batch > 1 else lengths[0]
                self.case(decode, lengths, seed)
            # A few long sequences: cut into parts that merge through the workspace.
            self.case(decode, [9000, 17, 4000, 12000], 99)


if __name__ == "__main__":
    unittest.main()
