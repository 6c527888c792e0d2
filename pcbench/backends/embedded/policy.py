"""Policy log-probs and the PPO update of the embedded backend.

Rows are (prompt, response) pairs laid out as [left-padded prompt | right-padded response],
so every response starts at column Lp and its token t is predicted by the logits at Lp+t-1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from pcbench import detmm, rl


@dataclass
class TokenBatch:
    ids: torch.Tensor  # (N, Lp + T)
    attn: torch.Tensor  # (N, Lp + T)
    pos: torch.Tensor  # (N, Lp + T)
    resp_mask: torch.Tensor  # (N, T)
    prompt_len: int  # Lp

    def rows(self, idx: torch.Tensor) -> "TokenBatch":
        return TokenBatch(self.ids[idx], self.attn[idx], self.pos[idx], self.resp_mask[idx], self.prompt_len)

    def log_probs(self, model) -> torch.Tensor:
        return response_log_probs(model, self)


def build_token_batch(prompts: list[list[int]], responses: list[list[int]], pad_id: int) -> TokenBatch:
    N, Lp, T = len(prompts), max(map(len, prompts)), max(map(len, responses))
    ids = torch.full((N, Lp + T), pad_id, dtype=torch.long)
    attn = torch.zeros((N, Lp + T), dtype=torch.long)
    for i, (p, r) in enumerate(zip(prompts, responses)):
        ids[i, Lp - len(p):Lp] = torch.tensor(p)
        ids[i, Lp:Lp + len(r)] = torch.tensor(r)
        attn[i, Lp - len(p):Lp + len(r)] = 1
    pos = (attn.cumsum(-1) - 1).clamp(min=0)
    return TokenBatch(ids, attn, pos, attn[:, Lp:].clone(), Lp)


def response_log_probs(model, b: TokenBatch) -> torch.Tensor:
    """-> (N, T) log pi(response token | prefix); zeros where masked."""
    logits = model(input_ids=b.ids, attention_mask=b.attn, position_ids=b.pos).logits  # (N, L, V)
    T = b.resp_mask.shape[1]
    pred = logits[:, b.prompt_len - 1:b.prompt_len - 1 + T].float()  # (N, T, V)
    target = b.ids[:, b.prompt_len:b.prompt_len + T]  # (N, T)
    lp = torch.log_softmax(pred, dim=-1).gather(-1, target[..., None]).squeeze(-1)
    return lp * b.resp_mask


def _current_log_probs(model, b, idx: torch.Tensor, flat: torch.Tensor, first: bool) -> torch.Tensor:
    """-> (rows, T) the current policy's log-probs of rows idx, with a gradient only where it can be
    nonzero. flat (rows,): the rows whose advantage is 0 at every token (every rollout of a GRPO group
    scored alike), whose loss terms have zero gradient: their backward is skipped. After the first
    mini-batch their ratio still enters train/ppo_kl, so they get a forward without gradient; in the
    first one (first=True: the old log-probs are this forward's) they need none, since any equal old
    and new give ratio 1, what their own forward gives. The gradient of the rest is the same sum
    without the zero terms: equal to rounding (tests/embedded/test_prefix.py)."""
    if not bool(flat.any()):
        return b.rows(idx).log_probs(model)
    live, dead = (~flat).nonzero().squeeze(-1), flat.nonzero().squeeze(-1)
    new = torch.zeros(len(idx), b.resp_mask.shape[1])
    if len(live):
        new = new.index_copy(0, live, b.rows(idx[live]).log_probs(model))
    if not first:
        with torch.no_grad():
            rest = b.rows(idx[dead]).log_probs(model)
        new = new.index_copy(0, dead, rest)
    return new


def ppo_update(model, optimizer, scheduler, b, scores: torch.Tensor, group: np.ndarray,
               mini_batches: list[np.ndarray], train_cfg, rollout_n: int, skip_flat: bool = True) -> dict[str, float]:
    """One training step: GRPO advantages over the whole batch, one optimizer step per mini-batch.

    b: a TokenBatch or a prefix.SharedBatch (what the trainer passes: each prompt run once),
    scores (N,) +1/-1, group (N,) GRPO group id per row, mini_batches: row index arrays;
    skip_flat: no backward for rows whose advantage is 0 everywhere (_current_log_probs).
    """
    cfg = rl.actor_config(float(train_cfg.clip_ratio_low), float(train_cfg.clip_ratio_high),
                          float(train_cfg.clip_ratio_c), str(train_cfg.loss_agg_mode), int(rollout_n))
    adv = rl.grpo_advantages(scores, group, b.resp_mask)  # (N, T)
    flat = (adv == 0).all(-1) if skip_flat else torch.zeros(len(adv), dtype=torch.bool)  # (N,)
    model.eval()  # no dropout in this model; eval() keeps old and new log-probs comparable
    reuse = detmm.deterministic() and len(mini_batches) > 1  # see below
    with torch.no_grad():  # old: (N, T), the policy that generated (on-policy)
        if reuse:  # the rows after the first mini-batch only
            rest = torch.as_tensor(np.concatenate(mini_batches[1:]), dtype=torch.long)
            old = torch.zeros(b.resp_mask.shape)
            old[rest] = b.rows(rest).log_probs(model)
        else:
            old = b.log_probs(model)
    sums: dict[str, float] = {}
    for i, rows in enumerate(mini_batches):
        idx = torch.as_tensor(rows, dtype=torch.long)
        new = _current_log_probs(model, b, idx, flat[idx], first=i == 0 and reuse)  # (rows, T)
        if i == 0 and reuse:
            # the first mini-batch runs before any optimizer step, so its own forward is the old
            # policy's: with pcbench's products a row's floats do not depend on the other rows in
            # the batch, so these are the bits the full old pass gave (tests/embedded/test_prefix.py)
            old[idx] = new.detach()
        loss, metrics = rl.policy_loss(old[idx], new, adv[idx], b.resp_mask[idx], cfg)
        optimizer.zero_grad(set_to_none=True)
        if loss.requires_grad:
            loss.backward()
        else:  # every row flat: the gradient is exactly 0, and AdamW still steps (momentum, decay)
            for p in model.parameters():
                p.grad = torch.zeros_like(p)
        grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), float(train_cfg.grad_clip))
        optimizer.step()
        for k, v in {"train/pg_loss": float(loss.detach()), "train/grad_norm": float(grad_norm), **metrics}.items():
            sums[k.replace("actor/", "train/")] = sums.get(k.replace("actor/", "train/"), 0.0) + float(v)
    out = {k: v / len(mini_batches) for k, v in sums.items()}
    out["train/lr"] = float(scheduler.get_last_lr()[0])  # the lr this step used
    scheduler.step()
    out["train/score_mean"] = float(scores.float().mean())
    out["train/response_len"] = float(b.resp_mask.sum(-1).float().mean())
    return out
