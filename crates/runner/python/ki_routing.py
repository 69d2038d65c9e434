"""Which local experts a MoE call's routing reaches, for the family's speed-of-light bound.

The bound of a moe call cannot come from its axes alone: the expert weights a call must read are
those of the local experts some token is routed to, and the routing depends on the logits, which
are drawn on the GPU from the trial's seed. The judge holds those inputs, so it counts here (with
the reference's routing rule) the local experts reached and the (token, local expert) pairs; the
runner turns the counts into bytes and flops (crates/runner/src/families/moe.rs).

Only the DeepSeek no-aux routing (`moe_fp8_block_scale_ds_routing_topk<K>_ng<G>_kg<KG>_...`, the
one moe definition with workloads) is counted; for any other definition `counts` returns None and
the bound stays the axes' (which counts no expert weights)."""

import re

import torch

DS_ROUTING = re.compile(r"_ds_routing_topk(\d+)_ng(\d+)_kg(\d+)_")


def ds_routing_topk(logits, bias, top_k, n_group, topk_group):
    """The experts each token is routed to ([T, top_k]), as the definitions' reference selects them:
    sigmoid(logits) + bias; with groups, each group scored by the sum of its two best experts and
    only the best `topk_group` groups kept; then the top `top_k` experts."""
    scores = torch.sigmoid(logits.to(torch.float32)) + bias.to(torch.float32).reshape(-1)
    tokens, experts = scores.shape
    if n_group > 1:
        grouped = scores.view(tokens, n_group, experts // n_group)
        group_scores = torch.topk(grouped, k=2, dim=2).values.sum(dim=2)
        kept = torch.topk(group_scores, k=topk_group, dim=1).indices
        mask = torch.zeros_like(group_scores, dtype=torch.bool).scatter_(1, kept, True)
        mask = mask.unsqueeze(2).expand(tokens, n_group, experts // n_group).reshape(tokens, experts)
        scores = scores.masked_fill(~mask, torch.finfo(torch.float32).min)
    return torch.topk(scores, k=top_k, dim=1).indices


def counts(definition, inputs):
    """{"localExperts", "localAssignments"} of one call's inputs, or None where the rule is not known."""
    match = DS_ROUTING.search(definition.get("name", ""))
    if match is None or "routing_logits" not in inputs or "gemm1_weights" not in inputs:
        return None
    top_k, n_group, topk_group = (int(g) for g in match.groups())
    chosen = ds_routing_topk(inputs["routing_logits"], inputs["routing_bias"], top_k, n_group, topk_group)
    first = int(inputs["local_expert_offset"])
    local = chosen[(chosen >= first) & (chosen < first + inputs["gemm1_weights"].shape[0])]
    return {"localExperts": int(torch.unique(local).numel()), "localAssignments": int(local.numel())}
