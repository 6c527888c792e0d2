"""DAPO dynamic sampling: draw gen_batch candidates x n, keep groups whose acc varies.

Rounds repeat until train_batch groups are kept (at most max_rounds); exactly train_batch
train, the surplus of the last round is discarded. Kept groups carry over an epoch
boundary (as the DAPO recipe's accumulation does).
"""

from __future__ import annotations

from pcbench.allocators.base import (AllocContext, Allocator, Group, Request, StepBatch,
                                     register_allocator, require_group_size, require_pool,
                                     take_or_roll)


def drain_to_batch(ctx: AllocContext, kept: list[Group], train_batch: int) -> tuple[list[Group], int]:
    """Train exactly train_batch kept groups; the rest were paid for and are discarded as surplus."""
    surplus = kept[train_batch:]
    if surplus:
        ctx.ledger.discarded("surplus", sum(g.size for g in surplus))
    groups = kept[:train_batch]
    ctx.ledger.trained(sum(g.size for g in groups))
    return groups, len(surplus)


@register_allocator("dapo")
class DAPO(Allocator):
    @classmethod
    def validate(cls, cfg, train_batch: int) -> None:
        require_group_size(cfg)
        require_pool(cfg, train_batch)

    def next_batch(self, ctx: AllocContext) -> StepBatch:
        kept: list[Group] = []
        rounds = filtered = 0
        n = int(self.cfg.n)
        while len(kept) < self.train_batch:
            rounds += 1
            self.round_limit(rounds, len(kept))
            ids = take_or_roll(ctx, int(self.cfg.gen_batch_size))
            for out in ctx.generate([Request(pid, n, "plain") for pid in ids]):
                if out.acc.std() > 0:
                    kept.append(Group(out.prompt_id, [out]))
                else:
                    filtered += 1
                    ctx.ledger.discarded("filtered", n)
        groups, surplus = drain_to_batch(ctx, kept, self.train_batch)
        return StepBatch(groups, {"alloc/rounds": rounds, "alloc/filtered": filtered, "alloc/surplus": surplus})
