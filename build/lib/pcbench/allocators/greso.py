"""GRESO (arXiv 2506.02177): skip likely-useless prompts before any rollout, then DAPO.

Reward history: for every prompt, the signed length z of its current streak of
zero-variance groups over the epochs it was generated in (z > 0: z consecutive all-correct
groups, z < 0: all-wrong, 0: its last group varied or it was never generated). A candidate
with a streak is skipped before any rollout with probability 1 - max(floor, p_e ** |z|),
p_e = p_easy or p_hard: the longer a prompt has been uninformative, the likelier it is
skipped, and `floor` keeps every prompt explorable (the policy moves, a solved prompt can
break). Skipped candidates cost 0 rollouts; the history of a skipped prompt is kept.

Survivors get n rollouts each and are filtered as in DAPO (keep groups whose acc varies;
rounds until train_batch are kept, the last round's surplus discarded). A round generates
gen_batch_size survivors: candidates are drawn one at a time until that many survive, so
skipping shrinks cost per kept group, not the generation batch.

Adaptive exploration (GRESO's controller): after each step, p_easy moves by `adapt_step`
down when the share of all-correct groups among the step's generated groups exceeds
`target_easy` (skip more) and up otherwise; likewise p_hard. adapt_step = 0 freezes them.
"""

from __future__ import annotations

from pcbench.allocators.base import (AllocContext, Allocator, Group, Request, StepBatch, register_allocator,
                                     require_group_size, require_pool, take_or_roll)
from pcbench.allocators.dapo import drain_to_batch
from pcbench.allocators.knobs import read_knobs

KNOBS = dict(p_easy=0.5, p_hard=0.5, floor=0.05, adapt_step=0.05, target_easy=0.125, target_hard=0.125)


@register_allocator("greso")
class GRESO(Allocator):
    def __init__(self, cfg, train_batch: int, seed: int):
        super().__init__(cfg, train_batch, seed)
        self.k = read_knobs(cfg, "greso", KNOBS)
        self.p_e = {"easy": self.k.p_easy, "hard": self.k.p_hard}
        self.streak: dict[int, int] = {}

    @classmethod
    def validate(cls, cfg, train_batch: int) -> None:
        k = read_knobs(cfg, "greso", KNOBS)
        require_group_size(cfg)
        require_pool(cfg, train_batch)
        if not 0.0 < k.floor <= min(k.p_easy, k.p_hard) <= max(k.p_easy, k.p_hard) <= 1.0:
            raise ValueError(f"method.extra floor={k.floor}, p_easy={k.p_easy}, p_hard={k.p_hard}: need "
                             f"0 < floor <= p_easy, p_hard <= 1 (floor > 0 keeps every prompt explorable)")
        if k.adapt_step < 0 or not (0 <= k.target_easy <= 1 and 0 <= k.target_hard <= 1):
            raise ValueError("method.extra adapt_step must be >= 0 and target_easy/target_hard in [0, 1]")

    # -- one step ---------------------------------------------------------------------------
    def next_batch(self, ctx: AllocContext) -> StepBatch:
        kept: list[Group] = []
        c = dict(rounds=0, filtered=0, skipped=0, generated=0, easy=0, hard=0)
        n = int(self.cfg.n)
        while len(kept) < self.train_batch:
            c["rounds"] += 1
            self.round_limit(c["rounds"], len(kept))
            for out in ctx.generate([Request(pid, n, "plain") for pid in self._survivors(ctx, c)]):
                c["generated"] += 1
                z = self._observe(out)
                if z == 0:
                    kept.append(Group(out.prompt_id, [out]))
                else:
                    c["easy" if z > 0 else "hard"] += 1
                    c["filtered"] += 1
                    ctx.ledger.discarded("filtered", n)
        groups, surplus = drain_to_batch(ctx, kept, self.train_batch)
        self._adapt(c)
        return StepBatch(groups, {"alloc/rounds": c["rounds"], "alloc/filtered": c["filtered"],
                                  "alloc/surplus": surplus, "alloc/skipped": c["skipped"],
                                  "alloc/p_easy": self.p_e["easy"], "alloc/p_hard": self.p_e["hard"],
                                  "alloc/history": len(self.streak)})

    def _survivors(self, ctx: AllocContext, c: dict) -> list[int]:
        """gen_batch_size candidates that pass the skip test, drawn one at a time.

        Bounded by one pass over the active prompts, so a round always ends."""
        want, out = int(self.cfg.gen_batch_size), []
        for _ in range(max(want, ctx.stream.num_active)):
            if len(out) == want:
                break
            (pid,) = take_or_roll(ctx, 1)
            if self.rng.random() < self.skip_probability(pid):
                c["skipped"] += 1
            else:
                out.append(pid)
        return out

    def skip_probability(self, pid: int) -> float:
        z = self.streak.get(int(pid), 0)
        if z == 0:
            return 0.0
        p_e = self.p_e["easy" if z > 0 else "hard"]
        return 1.0 - max(self.k.floor, p_e ** abs(z))

    def _observe(self, out) -> int:
        """Update the prompt's streak from its new group; -> the new streak."""
        prev = self.streak.get(out.prompt_id, 0)
        if out.acc.std() > 0:
            z = 0
        elif out.acc[0] > 0:
            z = prev + 1 if prev > 0 else 1
        else:
            z = prev - 1 if prev < 0 else -1
        self.streak[out.prompt_id] = z
        return z

    def _adapt(self, c: dict) -> None:
        if not c["generated"] or self.k.adapt_step == 0:
            return
        for kind, target in (("easy", self.k.target_easy), ("hard", self.k.target_hard)):
            share = c[kind] / c["generated"]
            step = -self.k.adapt_step if share > target else self.k.adapt_step
            self.p_e[kind] = min(1.0, max(self.k.floor, self.p_e[kind] + step))

    def state_dict(self) -> dict:
        return {**super().state_dict(), "p_e": dict(self.p_e), "streak": sorted(self.streak.items())}

    def load_state_dict(self, state: dict) -> None:
        super().load_state_dict(state)
        self.p_e = dict(state["p_e"])
        self.streak = {int(pid): int(z) for pid, z in state["streak"]}
