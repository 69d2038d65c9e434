"""A plain PyTorch implementation of gqa_paged_decode (page size 1) in FlashInfer-Bench's
solution form: `run(**inputs)` returns (output, lse). Used to exercise the runner's
`--implementation python:PATH` path on the GPU; it is vectorized over tokens but not tuned.

Math as the definition's reference: fp32 logits on bf16 inputs, softmax per query head over the
sequence's tokens, output rounded to bf16, lse in base 2; an empty sequence gives 0 and -inf."""
import math

import torch


def run(q, k_cache, v_cache, kv_indptr, kv_indices, sm_scale):
    batch, num_qo_heads, head_dim = q.shape
    num_kv_heads = k_cache.shape[2]
    group = num_qo_heads // num_kv_heads
    k = k_cache[:, 0].float()  # [pages, kv_heads, dim] (page size 1)
    v = v_cache[:, 0].float()
    scale = float(sm_scale)
    output = torch.zeros((batch, num_qo_heads, head_dim), dtype=torch.bfloat16, device=q.device)
    lse = torch.full((batch, num_qo_heads), -math.inf, dtype=torch.float32, device=q.device)
    bounds = kv_indptr.tolist()
    for b in range(batch):
        start, end = bounds[b], bounds[b + 1]
        if end <= start:
            continue
        pages = kv_indices[start:end].long()
        kb = k[pages].repeat_interleave(group, dim=1)  # [tokens, qo_heads, dim]
        vb = v[pages].repeat_interleave(group, dim=1)
        logits = torch.einsum("hd,thd->ht", q[b].float(), kb) * scale  # [qo_heads, tokens]
        lse[b] = torch.logsumexp(logits, dim=1) / math.log(2.0)
        weights = torch.softmax(logits, dim=1)
        output[b] = torch.einsum("ht,thd->hd", weights, vb).to(torch.bfloat16)
    return output, lse
