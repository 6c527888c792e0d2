"""Teacher-forced log-probs of a GRPO batch with each prompt run once, not once per rollout.

A training batch is G prompts x n responses (16 x 32 in a GRPO step). In a causal model a
prompt's hidden states do not depend on the response after it, so the n rows of a group need
the prompt's keys and values once: the prompt pass runs on (G, Lp) and the response pass on
(N, T-1), where the padded layout of policy.build_token_batch runs every layer on (N, Lp + T).
On the default task (Lp up to 11, T up to 10 tokens) that is about 2.5x less arithmetic for
the same log-probs, and the arithmetic is all of the update's cost on CPU (docs/measurements.md).

The forward is the same computation as transformers' Qwen2 eager path, op for op: the keys
a response token attends to are its prompt's keys followed by the response's own, laid out
as in the padded batch, under the same additive mask. Its log-probs equal the padded forward's
to rounding (1e-5; the attention products have other shapes), and so does the gradient (the
gradient of a prompt token is summed over its group's rows before it reaches the weights, a
different order of the same float sums; tests/embedded/test_prefix.py), so a training run's
numbers move at rounding level (docs/numerics.md records what that changed on a benchmark).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from pcbench.backends.embedded.forward import Past, additive_mask, layer_forward, packed_layer_forward
from pcbench.backends.embedded.sampler import left_pad, unique_rows


@dataclass
class SharedBatch:
    prompt_ids: torch.Tensor  # (G, Lp) left-padded distinct prompts
    prompt_attn: torch.Tensor  # (G, Lp)
    row: torch.Tensor  # (N,) each row's prompt index into the G prompts
    resp_ids: torch.Tensor  # (N, T) right-padded responses
    resp_mask: torch.Tensor  # (N, T)

    def rows(self, idx: torch.Tensor) -> "SharedBatch":
        """The rows idx (and only the prompts they use): a mini-batch of whole groups."""
        used, row = torch.unique(self.row[idx], return_inverse=True)
        return SharedBatch(self.prompt_ids[used], self.prompt_attn[used], row, self.resp_ids[idx], self.resp_mask[idx])

    def log_probs(self, model) -> torch.Tensor:
        return response_log_probs(model, self)


def build_shared_batch(prompts: list[list[int]], responses: list[list[int]], pad_id: int) -> SharedBatch:
    """One row per (prompt, response); equal prompts are stored once."""
    uniq, row = unique_rows(prompts)
    prompt_ids, prompt_attn = left_pad(uniq, pad_id)
    N, T = len(responses), max(map(len, responses))
    resp_ids = torch.full((N, T), pad_id, dtype=torch.long)
    resp_mask = torch.zeros((N, T), dtype=torch.long)
    for i, r in enumerate(responses):
        resp_ids[i, :len(r)] = torch.tensor(r)
        resp_mask[i, :len(r)] = 1
    return SharedBatch(prompt_ids, prompt_attn, row, resp_ids, resp_mask)


def response_log_probs(model, b: SharedBatch) -> torch.Tensor:
    """-> (N, T) log pi(response token | prompt, earlier response tokens); zeros where masked."""
    core = model.model
    N, T = b.resp_ids.shape
    # prompt pass: (G, Lp), positions from the mask as in the padded batch
    p_pos = (b.prompt_attn.cumsum(-1) - 1).clamp(min=0)  # (G, Lp)
    h = core.embed_tokens(b.prompt_ids)
    cos, sin = core.rotary_emb(h, p_pos)
    mask = additive_mask(b.prompt_attn, b.prompt_ids.shape[1], h.dtype)
    kv = []
    for layer in core.layers:
        h, own = layer_forward(layer, h, cos, sin, mask)
        kv.append(own)
    first = model.lm_head(core.norm(h[:, -1]))[b.row]  # (N, V): predicts response token 0
    first = torch.log_softmax(first.float(), dim=-1).gather(-1, b.resp_ids[:, :1]).squeeze(-1)  # (N,)
    rest = torch.zeros(N, T - 1)
    # response pass on packed tokens: input j of a row predicts its token j + 1, so only the inputs
    # whose next token exists run (a quarter of the (N, T-1) layout is padding on the default task);
    # none when every row is one token long, which a subset of a longer batch can be (T > 1 then)
    idx = b.resp_mask[:, 1:].bool().reshape(-1).nonzero().squeeze(-1)  # (P,) into (N * (T-1),)
    if len(idx):
        x = b.resp_ids[:, :-1].reshape(-1)[idx]  # (P,)
        r_attn = b.resp_mask[:, :-1]
        pos = (p_pos[:, -1] + 1)[b.row, None] + torch.arange(T - 1)[None]  # (N, T-1)
        h = core.embed_tokens(x)  # (P, H)
        cos, sin = core.rotary_emb(h[None], pos.reshape(1, -1)[:, idx])  # (1, P, d)
        mask = additive_mask(torch.cat([b.prompt_attn[b.row], r_attn], dim=1), T - 1, h.dtype)
        for layer, (pk, pv) in zip(core.layers, kv):
            h = packed_layer_forward(layer, h, cos[0], sin[0], mask, idx, N, T - 1, Past(pk[b.row], pv[b.row]))
        logits = model.lm_head(core.norm(h))  # (P, V)
        target = b.resp_ids[:, 1:].reshape(-1)[idx]
        lp = torch.log_softmax(logits.float(), dim=-1).gather(-1, target[:, None]).squeeze(-1)  # (P,)
        rest = rest.reshape(-1).index_copy(0, idx, lp).view(N, T - 1)
    return torch.cat([first[:, None], rest], dim=1) * b.resp_mask
