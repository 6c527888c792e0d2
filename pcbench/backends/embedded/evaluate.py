"""Validation: `data.val_samples` samples per problem at the paper's validation temperature / top_p.

`val/acc` is the mean pass rate over the held-out problems drawn like the RL mix (data.tiers);
`val/<tier>/acc` splits it by tier; out-of-distribution sets are logged as `ood/<set>/acc` and
never enter `val/acc`.

`val/acc_se` is the standard error of `val/acc` as a measurement of this fixed problem set:
sqrt(sum_i s_i^2 / k) / N over N problems with k samples each, s_i^2 the unbiased per-problem
sample variance k/(k-1) p_i (1 - p_i). It is what repeating the evaluation of the same
weights would scatter by. `val/acc_se_problems` (stricter: the SE of the mean of the p_i over
problems, std(p_i) / sqrt(N)) adds the spread from which problems were drawn; it is what
a different held-out set of the same size would scatter by.

`data.val_mode: exact` replaces the samples by one teacher-forced pass: a problem's pass rate is
the exact probability that sampling at the validation temperature / top_p writes its gold
response (`\\boxed{<answer>}` then EOS), the product over its tokens of the top-p-truncated,
renormalised next-token probability (docs/method.md#exact-evaluation). It has no sampling noise
(`val/acc_se` = 0), costs one forward pass of the problems instead of val_size x val_samples
decoded rollouts, and is a lower bound of the sampled pass rate: the verifier also accepts
responses that are not the gold string (text after the box before EOS, say). The gap is
measured, not assumed (tests/embedded/test_exact_eval.py).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch

from pcbench import detmm
from pcbench.allocators.base import Request
from pcbench.backends.embedded.generation import EmbeddedRollouts
from pcbench.backends.embedded.policy import build_token_batch
from pcbench.backends.embedded.forward import last_logits
from pcbench.backends.embedded.sampler import top_p_filter


def pass_rates(model, tok, problems, cfg, k: int, gen: torch.Generator) -> np.ndarray:
    """-> (N,) pass rate of each problem over k samples at validation temperature / top_p."""
    roll = EmbeddedRollouts(model, tok, {p.pid: p for p in problems}, max_new_tokens=int(cfg.data.max_response_tokens),
                            temperature=float(cfg.train.val_temperature), top_p=float(cfg.train.val_top_p),
                            generator=gen)
    return np.array([float(r.acc.mean()) for r in roll.generate([Request(p.pid, k, "plain") for p in problems])])


@torch.inference_mode()
def exact_pass_rates(model, tok, problems, temperature: float, top_p: float, chunk: int = 1024,
                     by_length: bool = False) -> np.ndarray:
    """-> (N,) probability that one sample at (temperature, top_p) is exactly each problem's gold
    response (solution + EOS): one teacher-forced forward pass, no sampling.

    by_length: run the problems in batches of one (prompt length, response length) each, so no
    row carries padding (a quarter of a mixed batch's tokens on the default task); the same
    probabilities to rounding (tests/embedded/test_exact_eval.py), not the same bits."""
    out = np.zeros(len(problems))
    for rows, b in _gold_batches(tok, tuple((p.prompt, p.solution) for p in problems), chunk, by_length):
        out[rows] = _gold_log_prob(model, b, temperature, top_p).exp().double().numpy()
    return out


@lru_cache(maxsize=8)
def _gold_batches(tok, problems: tuple[tuple[str, str], ...], chunk: int, by_length: bool) -> list:
    """-> [(rows, TokenBatch)] of the (prompt, solution) pairs: built once per problem set, since
    a run evaluates the same sets at every evaluation (their tokens do not depend on the weights)."""
    prompts = [[tok.bos_id] + tok.encode(prompt) for prompt, _ in problems]
    golds = [tok.encode(solution) + [tok.eos_id] for _, solution in problems]
    if by_length:
        shapes: dict[tuple[int, int], list[int]] = {}
        for i, (p, g) in enumerate(zip(prompts, golds)):
            shapes.setdefault((len(p), len(g)), []).append(i)
        parts = [rows[s:s + chunk] for _, rows in sorted(shapes.items()) for s in range(0, len(rows), chunk)]
    else:
        parts = [list(range(s, min(s + chunk, len(problems)))) for s in range(0, len(problems), chunk)]
    return [(rows, build_token_batch([prompts[i] for i in rows], [golds[i] for i in rows], tok.pad_id))
            for rows in parts]


def _gold_log_prob(model, b, temperature: float, top_p: float) -> torch.Tensor:
    """-> (N,) log-probability of each row's response under the top-p-truncated sampler."""
    T = b.resp_mask.shape[1]
    if detmm.deterministic():  # the T predicting positions only, the full forward's floats (forward.last_logits)
        logits = last_logits(model, b.ids[:, :-1], b.attn[:, :-1], b.pos[:, :-1], T)  # (N, T, V)
    else:  # torch's products may round by shape: the full forward, as always
        logits = model(input_ids=b.ids, attention_mask=b.attn, position_ids=b.pos).logits[:, b.prompt_len - 1:-1]
    pred = logits.float() / temperature  # (N, T, V)
    N, _, V = pred.shape
    kept = top_p_filter(pred.reshape(N * T, V), top_p).reshape(N, T, V)  # what the sampler may draw
    target = b.ids[:, b.prompt_len:b.prompt_len + T]  # (N, T)
    lp = torch.log_softmax(kept, dim=-1).gather(-1, target[..., None]).squeeze(-1)  # (N, T), -inf if cut
    return torch.where(b.resp_mask.bool(), lp, torch.zeros_like(lp)).sum(-1)


def summarize(rates: np.ndarray, k: int) -> dict[str, float]:
    """(N,) per-problem pass rates over k samples -> acc, its SE on this fixed set, the stricter SE."""
    n = len(rates)
    s2 = rates * (1.0 - rates) * (k / (k - 1)) if k > 1 else np.full(n, 0.25)  # k=1: the Bernoulli bound
    return {"acc": float(rates.mean()), "acc_se": float(np.sqrt(s2.sum() / k) / n),
            "acc_se_problems": float(rates.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")}


@torch.inference_mode()
def evaluate(model, tok, task, cfg, step: int, cross_check: bool = False) -> dict[str, float]:
    """-> val/acc, val/acc_se, val/acc_se_problems, val/<tier>/acc, ood/<set>/acc. Its rng depends
    only on (seed, step), so evaluating never perturbs the training sample stream. In exact mode
    `cross_check` (the trainer sets it at the last step) also logs the sampled accuracy of the same
    weights, val/acc_sampled and its SE, so every run carries the exact-vs-sampled gap."""
    gen = torch.Generator().manual_seed(int(cfg.seed) * 1_000_003 + step)
    k = int(cfg.data.val_samples)
    exact = cfg.data.get("val_mode", "sampled") == "exact"
    temp, top_p = float(cfg.train.val_temperature), float(cfg.train.val_top_p)
    rates = exact_pass_rates(model, tok, task.val, temp, top_p, by_length=True) if exact else pass_rates(model, tok, task.val, cfg, k, gen)
    out = {f"val/{key}": v for key, v in summarize(rates, k).items()}
    if exact:
        out["val/acc_se"] = 0.0  # the same weights give the same number: no measurement noise
        if cross_check:
            sampled = summarize(pass_rates(model, tok, task.val, cfg, k, gen), k)
            out["val/acc_sampled"], out["val/acc_sampled_se"] = sampled["acc"], sampled["acc_se"]
    tiers = np.array([p.tier for p in task.val])
    for tier in sorted(set(tiers)):
        out[f"val/{tier}/acc"] = float(rates[tiers == tier].mean())
    k_ood = int(cfg.data.get("ood_samples", k))  # OOD sets are watched, not scored: fewer samples
    for name, problems in task.ood.items():
        ood = exact_pass_rates(model, tok, problems, temp, top_p, by_length=True) if exact else pass_rates(model, tok, problems, cfg, k_ood, gen)
        out[f"ood/{name}/acc"] = float(ood.mean())
    return out
