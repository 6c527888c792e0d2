"""Replay buffer of piloted prompts waiting for their commit rollouts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pcbench.allocators.base import Rollouts


@dataclass
class BufferEntry:
    pilot: Rollouts
    step: int  # global step at which the pilot was generated
    seq: int  # insertion order, the last tie-breaker (deterministic)

    @property
    def std(self) -> float:
        return float(np.std(self.pilot.acc))


class ReplayBuffer:
    SAMPLERS = ("max_variance", "random")

    def __init__(self, sampling: str):
        if sampling not in self.SAMPLERS:
            raise ValueError(f"unknown buffer sampling {sampling!r}; choose one of {self.SAMPLERS}")
        self.sampling = sampling
        self.entries: dict[int, BufferEntry] = {}
        self._seq = 0

    def __len__(self) -> int:
        return len(self.entries)

    def add(self, pilot: Rollouts, step: int) -> None:
        self._seq += 1
        self.entries[pilot.prompt_id] = BufferEntry(pilot, step, self._seq)

    def pop(self, k: int, rng: np.random.Generator) -> list[BufferEntry]:
        """Remove and return up to k entries chosen by the sampling rule."""
        if k <= 0 or not self.entries:
            return []
        entries = list(self.entries.values())
        if len(entries) <= k:
            chosen = entries
        elif self.sampling == "max_variance":
            # highest pilot std first; ties to the most recent step, then the latest insertion
            chosen = sorted(entries, key=lambda e: (e.std, e.step, e.seq), reverse=True)[:k]
        else:
            idx = rng.choice(len(entries), size=k, replace=False)
            chosen = [entries[i] for i in sorted(idx)]
        for e in chosen:
            del self.entries[e.pilot.prompt_id]
        return chosen

    def drop_stale(self, step: int, max_age: int) -> list[BufferEntry]:
        """Drop entries with step - stamp > max_age (the release's `flush`)."""
        stale = [e for e in self.entries.values() if step - e.step > max_age]
        for e in stale:
            del self.entries[e.pilot.prompt_id]
        return stale

    def clear(self) -> list[BufferEntry]:
        out = list(self.entries.values())
        self.entries.clear()
        return out

    def state_dict(self) -> dict:
        return {"seq": self._seq, "entries": [(e.pilot, e.step, e.seq) for e in self.entries.values()]}

    def load_state_dict(self, state: dict) -> None:
        self._seq = int(state["seq"])
        self.entries = {p.prompt_id: BufferEntry(p, int(s), int(q)) for p, s, q in state["entries"]}
