"""PODS (arXiv 2504.13818): generate n' > n rollouts per prompt, train on the n with maximal
reward variance ("max-variance down-sampling").

Each step draws train_batch prompts (like GRPO) and generates n' = extra.n_generate
rollouts each (default 2n). Of each prompt's n' rollouts, the m = method.n that maximise
the reward variance train as its group: PODS shows the optimum takes the i highest and
m - i lowest rewards for some i, so we try every i; for binary rewards that is as close to
half correct / half wrong as the rollouts allow. Within equal rewards the earliest
rollouts are taken (they are exchangeable). The n' - m rollouts left out are counted as
`surplus` discards. Groups that cannot vary (all n' equal) still train, as in GRPO.
"""

from __future__ import annotations

import numpy as np

from pcbench.allocators.base import (AllocContext, Allocator, Group, Request, Rollouts, StepBatch,
                                     register_allocator, require_group_size, take_or_roll)
from pcbench.allocators.knobs import read_knobs

KNOBS = dict(n_generate=None)


def max_variance_subset(rewards: np.ndarray, m: int) -> np.ndarray:
    """(k,) rewards -> sorted indices of the m-subset with maximal variance (k >= m)."""
    order = np.argsort(-np.asarray(rewards, dtype=float), kind="stable")  # high first, ties by index
    best, best_var = None, -1.0
    for i in range(m + 1):  # i highest + (m - i) lowest
        idx = np.concatenate([order[:i], order[len(order) - (m - i):]]) if m - i else order[:i]
        var = float(np.var(rewards[idx]))
        if var > best_var + 1e-12:
            best, best_var = idx, var
    return np.sort(best)


@register_allocator("pods")
class PODS(Allocator):
    def __init__(self, cfg, train_batch: int, seed: int):
        super().__init__(cfg, train_batch, seed)
        self.n_generate = self._n_generate(cfg)

    @staticmethod
    def _n_generate(cfg) -> int:
        k = read_knobs(cfg, "pods", KNOBS)
        return int(k.n_generate) if k.n_generate is not None else 2 * int(cfg.n)

    @classmethod
    def validate(cls, cfg, train_batch: int) -> None:
        n_gen = cls._n_generate(cfg)
        require_group_size(cfg)
        if n_gen <= cfg.n:
            raise ValueError(f"method.extra.n_generate={n_gen} must exceed method.n={cfg.n} (PODS generates "
                             f"more than it trains on; e.g. n_generate = 2n)")

    def next_batch(self, ctx: AllocContext) -> StepBatch:
        m = int(self.cfg.n)
        ids = take_or_roll(ctx, self.train_batch)
        groups, zero_var = [], 0
        for out in ctx.generate([Request(pid, self.n_generate, "plain") for pid in ids]):
            idx = max_variance_subset(out.acc, m)
            part = Rollouts(out.prompt_id, out.acc[idx], [out.payload[i] for i in idx], out.kind)
            groups.append(Group(out.prompt_id, [part]))
            zero_var += int(part.acc.std() == 0)
        ctx.ledger.discarded("surplus", len(groups) * (self.n_generate - m))
        ctx.ledger.trained(len(groups) * m)
        var = [float(g.acc.var()) for g in groups]
        return StepBatch(groups, {"alloc/rounds": 1, "alloc/zero_variance_groups": zero_var,
                                  "alloc/downsampled": len(groups) * (self.n_generate - m),
                                  "alloc/group_var_mean": float(np.mean(var))})
