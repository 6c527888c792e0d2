"""Pilot-Commit (PC): pilot many candidates cheaply, commit the rest of n where it counts.

Per sampling round (see docs/method.md#pilot-commit): commits for up to (train_batch - filled) buffered
prompts and pilots for gen_batch_size fresh candidates go into ONE generation call. A
pilot's mean acc p is triaged: lower <= p <= 1 - upper is kept (buffer), p above the band
is too easy (p >= 1 is also evicted for good at the epoch's end), p below is too hard
(deferred: it returns next epoch). A committed prompt trains on pilot + commit rollouts as
one group of n = n_pilot + n_commit.
"""

from __future__ import annotations

import numpy as np

from pcbench.allocators.base import (AllocationError, AllocContext, Allocator, Group, Request, StepBatch,
                                     register_allocator, require_pool)
from pcbench.allocators.replay import ReplayBuffer
from pcbench.ledger import RolloutLedger


@register_allocator("pilot_commit")
class PilotCommit(Allocator):
    def __init__(self, cfg, train_batch: int, seed: int):
        super().__init__(cfg, train_batch, seed)
        self.buffer = ReplayBuffer(cfg.buffer_sampling)
        self.evict_pending: set[int] = set()
        self.evicted: set[int] = set()

    @classmethod
    def validate(cls, cfg, train_batch: int) -> None:
        if not 1 <= cfg.n_pilot < cfg.n:
            raise ValueError(f"method.n_pilot={cfg.n_pilot} must be in [1, method.n={cfg.n}); "
                             f"the paper pilots 1/4 of n")
        if cfg.n_pilot + cfg.n_commit != cfg.n:
            raise ValueError(f"method.n_pilot + method.n_commit = {cfg.n_pilot + cfg.n_commit} != "
                             f"method.n={cfg.n}; set n_commit = n - n_pilot")
        if not (0.0 <= cfg.lower <= 1.0 and 0.0 <= cfg.upper <= 1.0 and cfg.lower <= 1.0 - cfg.upper):
            raise ValueError(f"band lower={cfg.lower}, upper={cfg.upper} keeps nothing: need "
                             f"0 <= lower <= 1 - upper <= 1 (paper: lower=0.125, upper=0.25)")
        require_pool(cfg, train_batch)
        if cfg.staleness < 0:
            raise ValueError(f"method.staleness={cfg.staleness} must be >= 0 (paper: 4 steps)")

    # -- one step ---------------------------------------------------------------------------
    def allocate(self, ctx: AllocContext) -> StepBatch:
        batch: list[Group] = []
        c = dict(kept=0, too_easy=0, too_hard=0, rounds=0, epoch_ends=0)
        while len(batch) < self.train_batch:
            candidates = ctx.stream.take(int(self.cfg.gen_batch_size))
            if candidates is None:
                self._epoch_end_or_fail(ctx, batch, c)
                batch = []
                continue
            c["rounds"] += 1
            self.round_limit(c["rounds"], len(batch))
            commits = self.buffer.pop(self.train_batch - len(batch), self.rng)
            requests = [Request(e.pilot.prompt_id, int(self.cfg.n_commit), "commit") for e in commits]
            requests += [Request(pid, int(self.cfg.n_pilot), "pilot") for pid in candidates]
            outs = ctx.generate(requests)
            for entry, out in zip(commits, outs[:len(commits)]):
                batch.append(Group(entry.pilot.prompt_id, [entry.pilot, out], staleness=ctx.step - entry.step))
            for out in outs[len(commits):]:
                c[self._triage(out, ctx)] += 1
        return StepBatch(batch, self._stats(batch, c))

    def _triage(self, pilot, ctx: AllocContext) -> str:
        p = float(np.mean(pilot.acc))
        if p >= 1.0:
            self.evict_pending.add(pilot.prompt_id)
        if p > 1.0 - self.cfg.upper:
            verdict = "too_easy"
        elif p < self.cfg.lower:
            verdict = "too_hard"
        else:
            self.buffer.add(pilot, ctx.step)
            return "kept"
        ctx.ledger.discarded("skipped_pilot", len(pilot))
        return verdict

    # what to change when one epoch cannot fill a batch (subclasses with other knobs override it)
    epoch_too_short_fix = "use more training prompts, a smaller method.gen_batch_size, or a smaller train.batch_size"

    def _epoch_end_or_fail(self, ctx: AllocContext, batch: list[Group], c: dict) -> None:
        """A second epoch end within one step means the epoch is too short to ever fill a batch."""
        if c["epoch_ends"] >= 1:
            raise AllocationError(f"{self.name}: a whole epoch of {ctx.stream.num_active} active prompts could not "
                                  f"fill a batch of {self.train_batch}; {self.epoch_too_short_fix}",
                                  stop_reason="pool_exhausted")
        self._end_epoch(ctx, batch)
        c["rounds"] = 0
        c["epoch_ends"] += 1

    def _end_epoch(self, ctx: AllocContext, partial: list[Group]) -> None:
        """Drop the partial batch and the buffer, apply evictions, start the next epoch."""
        if partial:
            ctx.ledger.discarded("partial_batch", sum(g.size for g in partial))
        cleared = self.buffer.clear()
        if cleared:
            ctx.ledger.discarded("epoch_clear", sum(len(e.pilot) for e in cleared))
        self.evicted |= self.evict_pending
        ctx.stream.exclude(self.evict_pending)
        self.evict_pending = set()
        ctx.stream.next_epoch(min_needed=int(self.cfg.gen_batch_size))

    def _stats(self, batch: list[Group], c: dict) -> dict[str, float]:
        stale = [g.staleness for g in batch]
        return {"alloc/rounds": c["rounds"], "alloc/kept": c["kept"], "alloc/too_easy": c["too_easy"],
                "alloc/too_hard": c["too_hard"], "alloc/evicted": len(self.evicted),
                "alloc/evict_pending": len(self.evict_pending), "alloc/epoch_ends": c["epoch_ends"],
                "alloc/staleness_mean": float(np.mean(stale)) if stale else 0.0,
                "alloc/staleness_max": int(max(stale)) if stale else 0}

    # -- after the update -------------------------------------------------------------------
    def after_update(self, step: int, ledger: RolloutLedger) -> dict[str, float]:
        # the release's flush(): entries piloted more than `staleness` steps before this update go
        stale = self.buffer.drop_stale(step, int(self.cfg.staleness))
        if stale:
            ledger.discarded("stale", sum(len(e.pilot) for e in stale))
        return {"alloc/buffer_size": len(self.buffer), "alloc/stale_dropped": len(stale)}

    def state_dict(self) -> dict:
        return {**super().state_dict(), "buffer": self.buffer.state_dict(),
                "evict_pending": sorted(self.evict_pending), "evicted": sorted(self.evicted)}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.buffer.load_state_dict(state["buffer"])
        self.evict_pending = set(state["evict_pending"])
        self.evicted = set(state["evicted"])
