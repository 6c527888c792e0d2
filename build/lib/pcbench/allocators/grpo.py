"""GRPO as the paper runs it: train_batch prompts x n rollouts, every group trained."""

from __future__ import annotations

from pcbench.allocators.base import (AllocContext, Allocator, Group, Request, StepBatch,
                                     register_allocator, require_group_size, take_or_roll)


@register_allocator("grpo")
class GRPO(Allocator):
    @classmethod
    def validate(cls, cfg, train_batch: int) -> None:
        require_group_size(cfg)

    def next_batch(self, ctx: AllocContext) -> StepBatch:
        ids = take_or_roll(ctx, self.train_batch)
        outs = ctx.generate([Request(pid, int(self.cfg.n), "plain") for pid in ids])
        groups = [Group(o.prompt_id, [o]) for o in outs]
        zero_var = sum(int(g.acc.std() == 0) for g in groups)
        ctx.ledger.trained(sum(g.size for g in groups))
        return StepBatch(groups, {"alloc/rounds": 1, "alloc/zero_variance_groups": zero_var})
