"""The rollout ledger: one count of generated rollouts shared by every allocator.

`cumulative_rollouts` is the paper's x-axis: every rollout any backend generated, whether
it was trained on or thrown away (skipped pilots, DAPO's filtered groups and surplus,
stale buffer entries, dropped partial batches). Counting lives here, not in allocators,
so the number means the same thing for every method.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

GENERATED_KINDS = ("pilot", "commit", "plain")
# pass-rate bins of sampled groups (`alloc/sampled/<kind>/hist/<label>`): p=0, the PC band's
# edges 1/8 and 3/4 (paper), and p=1
PASS_BINS = ((0.0, 0.0, "0"), (1e-12, 0.125 - 1e-12, "0-0.125"), (0.125, 0.375 - 1e-12, "0.125-0.375"),
             (0.375, 0.75, "0.375-0.75"), (0.75 + 1e-12, 1.0 - 1e-12, "0.75-1"), (1.0, 1.0, "1"))


BAND = (0.125, 0.75)  # the paper's Pilot-Commit band (lower 1/8, upper 1/4): the regime map's in-band share


def pass_bin(p: float) -> str:
    return next(label for lo, hi, label in PASS_BINS if lo <= p <= hi)
DISCARD_REASONS = ("filtered", "surplus", "skipped_pilot", "stale", "partial_batch", "epoch_clear")


@dataclass
class RolloutLedger:
    cumulative: int = 0
    cumulative_discarded: int = 0
    cumulative_trained: int = 0
    _generated: Counter = field(default_factory=Counter)  # this step, by kind
    _discarded: Counter = field(default_factory=Counter)  # this step, by reason
    _trained: int = 0
    _rounds: int = 0  # generation calls this step (sampling rounds)
    _sampled: Counter = field(default_factory=Counter)  # this step: (kind, "groups"|"all_correct"|...)
    # prompts ever sampled all-wrong, and those of them later sampled with a correct rollout: a p=0
    # draw is "not yet reachable", not proof of p=0 (docs/method.md#deferral); PC's deferred pilots are these
    zero_seen: set = field(default_factory=set)
    zero_solved: set = field(default_factory=set)

    def generated(self, kind: str, count: int) -> None:
        if kind not in GENERATED_KINDS:
            raise ValueError(f"unknown rollout kind {kind!r}; expected one of {GENERATED_KINDS}")
        self._generated[kind] += count
        self.cumulative += count

    def sampling_round(self) -> None:
        """One generation call of an allocator (GRPO: 1 per step; DAPO, PC: their rounds)."""
        self._rounds += 1

    def discarded(self, reason: str, count: int) -> None:
        """Rollouts already generated (and counted) that will never be trained on."""
        if reason not in DISCARD_REASONS:
            raise ValueError(f"unknown discard reason {reason!r}; expected one of {DISCARD_REASONS}")
        self._discarded[reason] += count
        self.cumulative_discarded += count

    def sampled_group(self, kind: str, prompt_id: int, acc) -> None:
        """One request's rollouts as generated (a GRPO/DAPO group, a PC pilot; commits are only part
        of a group): counted by reward variance for the regime card (`alloc/sampled/<kind>/*`)."""
        if kind == "commit" or len(acc) == 0:
            return
        p = float(sum(acc)) / len(acc)
        self._sampled[kind, "groups"] += 1
        self._sampled[kind, "all_correct"] += int(p >= 1.0)
        self._sampled[kind, "all_wrong"] += int(p <= 0.0)
        self._sampled[kind, "hist/" + pass_bin(p)] += 1
        self._sampled[kind, "in_band"] += int(BAND[0] <= p <= BAND[1])
        if p <= 0.0:
            self.zero_seen.add(int(prompt_id))
        elif int(prompt_id) in self.zero_seen:
            self.zero_solved.add(int(prompt_id))

    def trained(self, count: int) -> None:
        self._trained += count
        self.cumulative_trained += count

    def close_step(self) -> dict[str, int]:
        """Per-step metrics (`rollouts/*`), then reset the per-step counters."""
        out = {f"rollouts/{k}": int(self._generated[k]) for k in GENERATED_KINDS}
        out["rollouts/step"] = int(sum(self._generated.values()))
        out["rollouts/discarded"] = int(sum(self._discarded.values()))
        for reason in DISCARD_REASONS:
            if self._discarded[reason]:
                out[f"rollouts/discarded/{reason}"] = int(self._discarded[reason])
        out["rollouts/trained"] = int(self._trained)
        out["rollouts/rounds"] = int(self._rounds)
        out["cumulative_rollouts"] = int(self.cumulative)
        for (kind, what), count in sorted(self._sampled.items()):
            out[f"alloc/sampled/{kind}/{what}"] = int(count)
        out["alloc/zero_seen"], out["alloc/zero_later_solved"] = len(self.zero_seen), len(self.zero_solved)
        self._generated.clear()
        self._discarded.clear()
        self._sampled.clear()
        self._trained = 0
        self._rounds = 0
        return out

    def state_dict(self) -> dict:
        return {"cumulative": self.cumulative, "cumulative_discarded": self.cumulative_discarded,
                "cumulative_trained": self.cumulative_trained, "zero_seen": sorted(self.zero_seen),
                "zero_solved": sorted(self.zero_solved)}

    def load_state_dict(self, state: dict) -> None:
        self.cumulative = int(state["cumulative"])
        self.cumulative_discarded = int(state["cumulative_discarded"])
        self.cumulative_trained = int(state["cumulative_trained"])
        self.zero_seen = set(state.get("zero_seen", ()))  # absent in checkpoints written before them
        self.zero_solved = set(state.get("zero_solved", ()))
        self._generated.clear()
        self._discarded.clear()
        self._sampled.clear()
        self._trained = 0
        self._rounds = 0
