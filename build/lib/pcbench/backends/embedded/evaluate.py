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
"""

from __future__ import annotations

import numpy as np
import torch

from pcbench.allocators.base import Request
from pcbench.backends.embedded.generation import EmbeddedRollouts


def pass_rates(model, tok, problems, cfg, k: int, gen: torch.Generator) -> np.ndarray:
    """-> (N,) pass rate of each problem over k samples at validation temperature / top_p."""
    roll = EmbeddedRollouts(model, tok, {p.pid: p for p in problems}, max_new_tokens=int(cfg.data.max_response_tokens),
                            temperature=float(cfg.train.val_temperature), top_p=float(cfg.train.val_top_p),
                            generator=gen)
    return np.array([float(r.acc.mean()) for r in roll.generate([Request(p.pid, k, "plain") for p in problems])])


def summarize(rates: np.ndarray, k: int) -> dict[str, float]:
    """(N,) per-problem pass rates over k samples -> acc, its SE on this fixed set, the stricter SE."""
    n = len(rates)
    s2 = rates * (1.0 - rates) * (k / (k - 1)) if k > 1 else np.full(n, 0.25)  # k=1: the Bernoulli bound
    return {"acc": float(rates.mean()), "acc_se": float(np.sqrt(s2.sum() / k) / n),
            "acc_se_problems": float(rates.std(ddof=1) / np.sqrt(n)) if n > 1 else float("nan")}


@torch.no_grad()
def evaluate(model, tok, task, cfg, step: int) -> dict[str, float]:
    """-> val/acc, val/acc_se, val/acc_se_problems, val/<tier>/acc, ood/<set>/acc. Its rng depends
    only on (seed, step), so evaluating never perturbs the training sample stream."""
    gen = torch.Generator().manual_seed(int(cfg.seed) * 1_000_003 + step)
    k = int(cfg.data.val_samples)
    rates = pass_rates(model, tok, task.val, cfg, k, gen)
    out = {f"val/{key}": v for key, v in summarize(rates, k).items()}
    tiers = np.array([p.tier for p in task.val])
    for tier in sorted(set(tiers)):
        out[f"val/{tier}/acc"] = float(rates[tiers == tier].mean())
    k_ood = int(cfg.data.get("ood_samples", k))  # OOD sets are watched, not scored: fewer samples
    for name, problems in task.ood.items():
        out[f"ood/{name}/acc"] = float(pass_rates(model, tok, problems, cfg, k_ood, gen).mean())
    return out
