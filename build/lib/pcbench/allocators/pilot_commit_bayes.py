"""Pilot-Commit with a Bayesian pilot (ours): spend pilots only where they can change a decision.

Every prompt carries a Beta posterior over its pass rate (posterior.py): the evidence of all
its earlier rollouts (pilots and commits, forgotten by `decay` per epoch) on top of a
population prior refitted after every update by empirical Bayes (a beta-binomial fit to
every prompt's latest observation), since this data's pass rates pile up at 0 and 1.

Per candidate, q = P(lower <= p <= 1 - upper | its history): how sure we already are that
it sits in PC's band. Unseen prompts are always piloted. Otherwise:
- q >= direct_above: the pilot is skipped and the prompt commits directly with n rollouts
  (one group of kind "commit") in this round's call, if the batch still has room;
- q < skip_below: the prompt is skipped at 0 rollouts, except with probability `explore`
  it is piloted anyway (the policy moves; this replaces PC's permanent eviction). A skip
  only moves the prompt to the back of the epoch: if the epoch runs out before the batch
  is full, skipped prompts are piloted, highest q first, before PC's epoch end would drop
  the partial batch, so skipping can save pilots but never starve a step;
- else it is piloted and triaged by PC's band (kept / too easy / too hard, no eviction).
Kept pilots wait in a buffer scored by E[p(1-p)] = ab/((a+b)(a+b+1)) under the posterior
with the pilot included (most expected GRPO signal first; ties: newest step, then insertion).

Pilot share, adapted online: a round pilots only as many candidates as the next commits
need. deficit = prompts still missing after this round's buffer pops (this step's, or the
next step's train_batch when this round completes the batch) minus what stays buffered;
the round tries ceil(headroom * deficit / yield) candidates that are not skipped (capped at
gen_batch_size, PC's fixed pool), yield = EMA over rounds of (kept + direct) per candidate
tried. When pilots keep well, fewer are paid for and fewer go stale in the buffer. A step
still short after its first round pilots the full gen_batch_size, as PC would.
Everything else is PC: one generation call per round (buffer commits + direct commits +
pilots), union groups, staleness drop, round limit. At an epoch's end the buffer is spent
first, then the partial batch and what is left are dropped as in PC.
"""

from __future__ import annotations

import math

import numpy as np

from pcbench.allocators.base import (AllocContext, Group, Request, StepBatch,
                                     register_allocator)
from pcbench.allocators.knobs import read_knobs
from pcbench.allocators.pilot_commit import PilotCommit
from pcbench.allocators.posterior import BetaPosterior, band_mass, expected_variance
from pcbench.allocators.replay import ReplayBuffer
from pcbench.ledger import RolloutLedger

KNOBS = dict(decay=0.7, direct_above=0.8, skip_below=0.2, explore=0.1, headroom=1.25, yield_init=0.5,
             yield_ema=0.8)


class ScoredBuffer(ReplayBuffer):
    """The replay buffer, popped by a stored score (highest first) instead of pilot std."""

    def __init__(self):
        super().__init__("max_variance")
        self.scores: dict[int, float] = {}

    def add_scored(self, pilot, step: int, score: float) -> None:
        self.add(pilot, step)
        self.scores[pilot.prompt_id] = float(score)

    def pop(self, k: int, rng: np.random.Generator):
        if k <= 0 or not self.entries:
            return []
        key = lambda e: (self.scores.get(e.pilot.prompt_id, 0.0), e.step, e.seq)
        chosen = sorted(self.entries.values(), key=key, reverse=True)[:k]
        for e in chosen:
            del self.entries[e.pilot.prompt_id]
        return chosen

    def state_dict(self) -> dict:
        return {**super().state_dict(), "scores": sorted((p, self.scores[p]) for p in self.entries)}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.scores = {int(p): float(s) for p, s in state["scores"]}


@register_allocator("pilot_commit_bayes")
class PilotCommitBayes(PilotCommit):
    def __init__(self, cfg, train_batch: int, seed: int):
        super().__init__(cfg, train_batch, seed)
        self.k = read_knobs(cfg, "pilot_commit_bayes", KNOBS)
        self.buffer = ScoredBuffer()
        self.posterior = BetaPosterior(decay=self.k.decay)
        self.yield_rate = self.k.yield_init
        self.deferred: list[tuple[float, int]] = []  # (q, pid) skipped this epoch, to revisit if it runs dry

    @classmethod
    def validate(cls, cfg, train_batch: int) -> None:
        super().validate(cfg, train_batch)
        k = read_knobs(cfg, "pilot_commit_bayes", KNOBS)
        if not 0.0 <= k.skip_below < k.direct_above <= 1.0:
            raise ValueError(f"method.extra skip_below={k.skip_below}, direct_above={k.direct_above}: need "
                             f"0 <= skip_below < direct_above <= 1 (1 never commits without a pilot)")
        if not (0.0 < k.decay <= 1.0 and 0.0 <= k.explore <= 1.0 and k.headroom > 0
                and 0.0 < k.yield_init <= 1.0 and 0.0 <= k.yield_ema < 1.0):
            raise ValueError("method.extra: need 0 < decay <= 1, 0 <= explore <= 1, headroom > 0, "
                             "0 < yield_init <= 1, 0 <= yield_ema < 1")

    # -- one step ---------------------------------------------------------------------------
    def next_batch(self, ctx: AllocContext) -> StepBatch:
        batch: list[Group] = []
        c = dict(kept=0, too_easy=0, too_hard=0, rounds=0, epoch_ends=0, direct=0, skipped=0, explored=0,
                 revisited=0, piloted=0, committed=0)
        while len(batch) < self.train_batch:
            need = self.train_batch - len(batch)
            direct, pilots, exhausted = self._draw(ctx, self._pool_size(need, c["rounds"]), need, c)
            commits = self.buffer.pop(need - len(direct), self.rng)
            if not (commits or direct or pilots):
                self._epoch_end_or_fail(ctx, batch, c)
                batch = []
                continue
            c["rounds"] += 1
            self.round_limit(c["rounds"], len(batch))
            requests = [Request(e.pilot.prompt_id, int(self.cfg.n_commit), "commit") for e in commits]
            requests += [Request(pid, int(self.cfg.n), "commit") for pid in direct]
            requests += [Request(pid, int(self.cfg.n_pilot), "pilot") for pid in pilots]
            outs = ctx.generate(requests)
            kept = self._absorb(ctx, batch, commits, outs, len(direct), c)
            tried = len(direct) + len(pilots)
            if tried:
                r = self.k.yield_ema
                self.yield_rate = r * self.yield_rate + (1 - r) * (kept + len(direct)) / tried
            if exhausted and len(batch) < self.train_batch and not self.buffer.entries:
                self._epoch_end_or_fail(ctx, batch, c)
                batch = []
        ctx.ledger.trained(sum(g.size for g in batch))
        return StepBatch(batch, self._stats(batch, c))

    def _pool_size(self, need: int, rounds_so_far: int) -> int:
        """Non-skipped candidates to try this round (the online pilot-share rule, see top)."""
        from_buffer = min(len(self.buffer), need)
        shortfall = need - from_buffer
        if shortfall and rounds_so_far:
            # the estimate was optimistic and this step is still short: pilot PC's full pool,
            # so a low-yield phase never runs out of rounds where PC would not
            return int(self.cfg.gen_batch_size)
        deficit = (shortfall if shortfall else self.train_batch) - (len(self.buffer) - from_buffer)
        if deficit <= 0:
            return 0
        return min(int(self.cfg.gen_batch_size), math.ceil(self.k.headroom * deficit / max(self.yield_rate, 0.05)))

    def _draw(self, ctx: AllocContext, pool: int, need: int, c: dict) -> tuple[list[int], list[int], bool]:
        """Draw candidates one at a time until `pool` are tried -> (direct, pilots, stream ran out)."""
        direct, pilots = [], []
        epoch = ctx.stream.epoch
        while len(direct) + len(pilots) < pool:
            ids = ctx.stream.take(1)
            if ids is None:
                if not self.deferred:
                    return direct, pilots, True
                best = max(range(len(self.deferred)), key=lambda i: (self.deferred[i][0], -i))
                pilots.append(self.deferred.pop(best)[1])  # the epoch ran dry: revisit a skipped prompt
                c["revisited"] += 1
                continue
            pid = ids[0]
            if not self.posterior.seen(pid):
                pilots.append(pid)
                continue
            q = band_mass(*self.posterior.params(pid, epoch), float(self.cfg.lower), float(self.cfg.upper))
            if q >= self.k.direct_above and len(direct) < need:
                direct.append(pid)
            elif q < self.k.skip_below:
                if self.rng.random() < self.k.explore:
                    c["explored"] += 1
                    pilots.append(pid)
                else:
                    c["skipped"] += 1
                    self.deferred.append((q, pid))
            else:
                pilots.append(pid)
        return direct, pilots, False

    def _absorb(self, ctx: AllocContext, batch: list[Group], commits, outs, n_direct: int, c: dict) -> int:
        """Groups from commits and direct commits, triage of pilots, posterior updates -> pilots kept."""
        epoch, k = ctx.stream.epoch, len(commits)
        for entry, out in zip(commits, outs[:k]):
            batch.append(Group(out.prompt_id, [entry.pilot, out], staleness=ctx.step - entry.step))
        batch.extend(Group(out.prompt_id, [out]) for out in outs[k:k + n_direct])
        for out in outs[:k + n_direct]:
            self.posterior.observe(out.prompt_id, out.acc, epoch)
        c["committed"] += k
        c["direct"] += n_direct
        kept = 0
        for out in outs[k + n_direct:]:
            c["piloted"] += 1
            verdict = self._triage(out, ctx)
            c[verdict] += 1
            kept += verdict == "kept"
        return kept

    def _triage(self, pilot, ctx: AllocContext) -> str:
        """PC's band on the pilot mean, no eviction; a kept pilot is scored by E[p(1-p)]."""
        self.posterior.observe(pilot.prompt_id, pilot.acc, ctx.stream.epoch)
        p = float(np.mean(pilot.acc))
        if self.cfg.lower <= p <= 1.0 - self.cfg.upper:
            score = expected_variance(*self.posterior.params(pilot.prompt_id, ctx.stream.epoch))
            self.buffer.add_scored(pilot, ctx.step, score)
            return "kept"
        ctx.ledger.discarded("skipped_pilot", len(pilot))
        return "too_easy" if p > 1.0 - self.cfg.upper else "too_hard"

    epoch_too_short_fix = "use more training prompts, a larger method.extra.explore, or a smaller train.batch_size"

    def _epoch_end_or_fail(self, ctx: AllocContext, batch: list[Group], c: dict) -> None:
        super()._epoch_end_or_fail(ctx, batch, c)
        self.deferred = []  # they are all in the next epoch's order again

    def _stats(self, batch: list[Group], c: dict) -> dict[str, float]:
        n_p, n_c, n = int(self.cfg.n_pilot), int(self.cfg.n_commit), int(self.cfg.n)
        spent = c["piloted"] * n_p + c["committed"] * n_c + c["direct"] * n
        return {**super()._stats(batch, c), "alloc/direct": c["direct"], "alloc/skipped": c["skipped"],
                "alloc/explored": c["explored"], "alloc/revisited": c["revisited"], "alloc/piloted": c["piloted"],
                "alloc/pilot_share": c["piloted"] * n_p / spent if spent else 0.0,
                "alloc/yield": self.yield_rate, "alloc/prior_a0": self.posterior.a0,
                "alloc/prior_b0": self.posterior.b0}

    # -- after the update -------------------------------------------------------------------
    def after_update(self, step: int, ledger: RolloutLedger) -> dict[str, float]:
        out = super().after_update(step, ledger)
        self.posterior.fit_prior()
        return out

    def state_dict(self) -> dict:
        return {**super().state_dict(), "posterior": self.posterior.state_dict(), "yield": self.yield_rate,
                "deferred": list(self.deferred)}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.posterior.load_state_dict(state["posterior"])
        self.yield_rate = float(state["yield"])
        self.deferred = [(float(q), int(pid)) for q, pid in state["deferred"]]
