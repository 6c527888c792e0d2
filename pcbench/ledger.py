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
DISCARD_REASONS = ("filtered", "surplus", "skipped_pilot", "stale", "partial_batch", "epoch_clear")


@dataclass
class RolloutLedger:
    cumulative: int = 0
    cumulative_discarded: int = 0
    cumulative_trained: int = 0
    _generated: Counter = field(default_factory=Counter)  # this step, by kind
    _discarded: Counter = field(default_factory=Counter)  # this step, by reason
    _trained: int = 0

    def generated(self, kind: str, count: int) -> None:
        if kind not in GENERATED_KINDS:
            raise ValueError(f"unknown rollout kind {kind!r}; expected one of {GENERATED_KINDS}")
        self._generated[kind] += count
        self.cumulative += count

    def discarded(self, reason: str, count: int) -> None:
        """Rollouts already generated (and counted) that will never be trained on."""
        if reason not in DISCARD_REASONS:
            raise ValueError(f"unknown discard reason {reason!r}; expected one of {DISCARD_REASONS}")
        self._discarded[reason] += count
        self.cumulative_discarded += count

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
        out["cumulative_rollouts"] = int(self.cumulative)
        self._generated.clear()
        self._discarded.clear()
        self._trained = 0
        return out

    def state_dict(self) -> dict:
        return {"cumulative": self.cumulative, "cumulative_discarded": self.cumulative_discarded,
                "cumulative_trained": self.cumulative_trained}

    def load_state_dict(self, state: dict) -> None:
        self.cumulative = int(state["cumulative"])
        self.cumulative_discarded = int(state["cumulative_discarded"])
        self.cumulative_trained = int(state["cumulative_trained"])
        self._generated.clear()
        self._discarded.clear()
        self._trained = 0
