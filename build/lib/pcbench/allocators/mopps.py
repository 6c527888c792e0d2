"""MoPPS (arXiv 2507.04632): pick prompts by a Thompson sample of their Beta posterior,
before any rollout; no extra rollouts.

Each prompt holds Beta(a, b) over its pass rate (prior Beta(a0, b0), forgetting `decay` per
epoch elapsed, see posterior.py). Each step draws gen_batch_size candidates, samples one
p ~ Beta(a, b) per candidate, and keeps the train_batch whose sample is closest to
`target` (0.5: the p with the largest p(1 - p), i.e. the most GRPO signal); ties go to the
stream's (random) order. Those get n rollouts each, all trained, and their acc updates the
posteriors. Candidates not picked cost nothing and return next epoch, so selection only
spends information, never rollouts: cost per step is exactly train_batch * n, as GRPO.
"""

from __future__ import annotations

import numpy as np

from pcbench.allocators.base import (AllocContext, Allocator, Group, Request, StepBatch, register_allocator,
                                     require_group_size, require_pool, take_or_roll)
from pcbench.allocators.knobs import read_knobs
from pcbench.allocators.posterior import BetaPosterior

KNOBS = dict(a0=1.0, b0=1.0, decay=0.5, target=0.5)


@register_allocator("mopps")
class MoPPS(Allocator):
    def __init__(self, cfg, train_batch: int, seed: int):
        super().__init__(cfg, train_batch, seed)
        self.k = read_knobs(cfg, "mopps", KNOBS)
        self.posterior = BetaPosterior(self.k.a0, self.k.b0, self.k.decay)

    @classmethod
    def validate(cls, cfg, train_batch: int) -> None:
        k = read_knobs(cfg, "mopps", KNOBS)
        require_group_size(cfg)
        require_pool(cfg, train_batch)
        if k.a0 <= 0 or k.b0 <= 0 or not 0.0 < k.decay <= 1.0 or not 0.0 < k.target < 1.0:
            raise ValueError(f"method.extra a0={k.a0}, b0={k.b0}, decay={k.decay}, target={k.target}: need "
                             f"a0, b0 > 0, 0 < decay <= 1 (1 = never forget), 0 < target < 1")

    def next_batch(self, ctx: AllocContext) -> StepBatch:
        ids = take_or_roll(ctx, int(self.cfg.gen_batch_size))
        epoch = ctx.stream.epoch
        theta = self.posterior.thompson(ids, epoch, self.rng)  # (G,)
        order = np.argsort(np.abs(theta - self.k.target), kind="stable")[:self.train_batch]
        chosen = [ids[i] for i in order]
        unseen = sum(not self.posterior.seen(pid) for pid in chosen)
        outs = ctx.generate([Request(pid, int(self.cfg.n), "plain") for pid in chosen])
        for out in outs:
            self.posterior.observe(out.prompt_id, out.acc, epoch)
        groups = [Group(o.prompt_id, [o]) for o in outs]
        ctx.ledger.trained(sum(g.size for g in groups))
        zero_var = sum(int(g.acc.std() == 0) for g in groups)
        return StepBatch(groups, {"alloc/rounds": 1, "alloc/zero_variance_groups": zero_var,
                                  "alloc/unseen_picked": unseen, "alloc/theta_mean": float(theta[order].mean()),
                                  "alloc/posteriors": len(self.posterior.evidence)})

    def state_dict(self) -> dict:
        return {**super().state_dict(), "posterior": self.posterior.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.posterior.load_state_dict(state["posterior"])
