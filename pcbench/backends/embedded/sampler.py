"""Batched sampling with a KV cache for the embedded policy.

Prompts are left-padded to one length so every row's next token sits in the last column;
position ids come from the attention mask so padding does not shift positions. Each decode
step feeds one token per row and reuses the cache: O(T) forward calls of width 1.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache

from pcbench import detmm
from pcbench.backends.embedded.forward import KVBuffer, decode_step, prefill


def left_pad(seqs: list[list[int]], pad_id: int) -> tuple[torch.Tensor, torch.Tensor]:
    """-> ids (B, L), mask (B, L) with padding on the left."""
    L = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), L), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), L), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, L - len(s):] = torch.tensor(s, dtype=torch.long)
        mask[i, L - len(s):] = 1
    return ids, mask


def top_p_filter(logits: torch.Tensor, top_p: float) -> torch.Tensor:
    """Mask logits (B, V) outside the smallest set whose probability mass reaches top_p."""
    if top_p >= 1.0:
        return logits
    sorted_logits, order = torch.sort(logits, descending=True, dim=-1)
    cum = torch.softmax(sorted_logits, dim=-1).cumsum(dim=-1)
    drop = cum - torch.softmax(sorted_logits, dim=-1) >= top_p  # keep the token that crosses top_p
    sorted_logits = sorted_logits.masked_fill(drop, float("-inf"))
    return torch.full_like(logits, float("-inf")).scatter(-1, order, sorted_logits)


@torch.inference_mode()  # as no_grad, minus autograd's version counters: the same kernels, less per-op work
def sample(model, prompts: list[list[int]], *, max_new_tokens: int, temperature: float, top_p: float,
           eos_id: int, pad_id: int, generator: torch.Generator, chunk: int = 4096) -> list[list[int]]:
    """Sample one continuation per prompt (ending at EOS, which is kept). Returns token id lists.

    Rows go through in chunks of `chunk`: on CPU a decode step costs mostly per-call overhead, so
    wide calls are cheaper per row (an evaluation of 512 problems x 6 samples is one chunk)."""
    out: list[list[int]] = []
    for start in range(0, len(prompts), chunk):
        out.extend(_sample_chunk(model, prompts[start:start + chunk], max_new_tokens, temperature, top_p,
                                 eos_id, pad_id, generator))
    return out


def unique_rows(prompts: list[list[int]]) -> tuple[list[list[int]], torch.Tensor]:
    """-> the distinct prompts in first-seen order, and (B,) each row's index among them."""
    first: dict[tuple[int, ...], int] = {}
    index = [first.setdefault(tuple(p), len(first)) for p in prompts]
    return [list(p) for p in first], torch.tensor(index, dtype=torch.long)


def _prefill(model, prompts, pad_id, max_new_tokens):
    """Run the prompts once per distinct prompt, then give every row its prompt's cache.

    A group's rollouts share one prompt (32 rows of 16 prompts in a GRPO step), and the prefill
    is about half a sampling call's arithmetic; each prompt's keys, values and last logits do
    not depend on the other rows, so computing them once per prompt and copying them out gives
    the rows the same numbers (tests/embedded/test_prefix.py checks this bit for bit).
    -> the cache (a forward.KVBuffer under pcbench's products, else transformers' DynamicCache),
    the last logits (B, V), the (B, L + T) attention mask, the next positions (B,), L."""
    uniq, row = unique_rows(prompts)
    ids, prompt_mask = left_pad(uniq, pad_id)  # (U, L): the same L as padding all rows
    L = ids.shape[1]
    pos = (prompt_mask.cumsum(-1) - 1).clamp(min=0)  # (U, L)
    if detmm.deterministic():
        kv, logits = prefill(model, ids, prompt_mask, pos)
        cache = KVBuffer(kv, row, max_new_tokens)
    else:
        cache = DynamicCache()
        logits = model(input_ids=ids, attention_mask=prompt_mask, position_ids=pos, past_key_values=cache,
                       use_cache=True).logits[:, -1]  # (U, V)
        if len(uniq) < len(prompts):
            cache.batch_select_indices(row)
    logits, prompt_mask, pos = logits[row], prompt_mask[row], pos[row]
    # the attention mask of every decode step is a prefix view of one (B, L + T) tensor
    full_mask = torch.ones((len(prompts), L + max_new_tokens), dtype=prompt_mask.dtype)
    full_mask[:, :L] = prompt_mask
    return cache, logits, full_mask, pos[:, -1] + 1, L


def _sample_chunk(model, prompts, max_new_tokens, temperature, top_p, eos_id, pad_id, generator):
    cache, logits, full_mask, next_pos, L = _prefill(model, prompts, pad_id, max_new_tokens)  # logits (B, V)
    B = len(prompts)
    done = torch.zeros(B, dtype=torch.bool)
    tokens = torch.full((B, max_new_tokens), pad_id, dtype=torch.long)  # (B, T)
    live = torch.arange(B)  # (A,) the rows still decoding: the cache, mask and positions hold these
    for t in range(max_new_tokens):
        # every row draws, finished ones from their last logits (the draw is discarded): the
        # generator's noise keeps its (B, V) shape, so a live row's draw is what it was
        probs = torch.softmax(top_p_filter(logits / temperature, top_p), dim=-1)
        nxt = torch.multinomial(probs, 1, generator=generator).squeeze(-1)  # (B,)
        nxt = torch.where(done, torch.full_like(nxt, pad_id), nxt)
        tokens[:, t] = nxt
        done |= nxt == eos_id
        if bool(done.all()) or t == max_new_tokens - 1:
            break
        if isinstance(cache, KVBuffer):
            # finished rows leave the batch once a quarter of its rows have finished (each removal
            # copies the cache): with pcbench's products a row's numbers do not depend on the others
            # (tests/embedded/test_sampler_and_task.py), so the live rows' logits are unchanged; torch's
            # own products (PCBENCH_NUMERICS=native) may round by batch size, so they keep every row
            alive = ~done[live]  # (A,) over the rows in the batch
            if 4 * int(alive.sum()) <= 3 * len(live):
                keep = alive.nonzero().squeeze(-1)
                live, alive = live[keep], alive[keep]
                cache.keep(keep)
                full_mask, next_pos = full_mask[keep], next_pos[keep]
            step = decode_step(model, cache, nxt[live, None], next_pos[:, None], full_mask[:, :L + t + 1])  # (A, V)
            logits[live[alive]] = step[alive]  # a finished row keeps its last logits
        else:
            logits[live] = model(input_ids=nxt[live, None], attention_mask=full_mask[:, :L + t + 1],
                                 position_ids=next_pos[:, None], past_key_values=cache, use_cache=True).logits[:, -1]
        next_pos = next_pos + 1
    result = []
    for row in tokens.tolist():
        seq = []
        for tok in row:
            if tok == pad_id:
                break
            seq.append(tok)
            if tok == eos_id:
                break
        result.append(seq)
    return result
