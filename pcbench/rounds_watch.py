"""The live log's one warning when an allocator's sampling rounds per step climb toward its bound.

An allocator that samples in rounds reports its own count per step (`alloc/rounds` in its stats:
Pilot-Commit, DAPO); its config's `max_rounds` is the bound at which a step stops the run. The
trainer feeds every logged row to a RoundsWatch and prints what it returns; it never looks at the
method's name. The projection is a least-squares line through the last `window` steps' rounds:
when its slope is positive, it already stands at MIN_ROUNDS or more, and it reaches the bound within
the run, one line says at which step. A full window and that floor keep DAPO's round-to-round noise
(1-2 rounds a step) from firing it.
"""

from __future__ import annotations

import math

import numpy as np

ROUNDS_KEY = "alloc/rounds"
MIN_ROUNDS = 2.0  # the fitted rounds at the last step before the watch speaks: twice a one-round step


def project_bound(steps, rounds, bound: float, window: int = 10, min_points: int = 5,
                  floor: float = -math.inf) -> int | None:
    """The step at which a line through the last `window` (step, rounds) points reaches `bound`,
    or None (too few points, flat or falling, or the line under `floor` at the last step). Already
    at or above the bound: the last step."""
    s, r = np.asarray(steps, float)[-window:], np.asarray(rounds, float)[-window:]
    if s.size < min_points or not np.isfinite(r).all():
        return None
    slope, icept = np.polyfit(s, r, 1)
    if slope <= 0 or slope * s[-1] + icept < floor:
        return None
    if slope * s[-1] + icept >= bound:
        return int(s[-1])
    return int(math.ceil((bound - icept) / slope))


class RoundsWatch:
    """Fed each logged row; returns one warning line, once per run, when the projected crossing of
    the round bound falls within the run's steps (and None otherwise)."""

    def __init__(self, bound, total_steps: int, window: int = 10):
        self.bound = float(bound) if bound else None
        self.total, self.window = int(total_steps), window
        self.steps: list[int] = []
        self.rounds: list[float] = []
        self.said = False

    def see(self, row: dict) -> str | None:
        if self.bound is None or self.said or ROUNDS_KEY not in row:
            return None
        self.steps.append(int(row["step"]))
        self.rounds.append(float(row[ROUNDS_KEY]))
        at = project_bound(self.steps, self.rounds, self.bound, self.window, min_points=self.window, floor=MIN_ROUNDS)
        if at is None or at > self.total:
            return None
        self.said = True  # one line per run
        recent = float(np.mean(self.rounds[-self.window:]))
        return (f"step {self.steps[-1]}: sampling rounds per step are climbing ({recent:.1f} over the last "
                f"{min(self.window, len(self.rounds))} steps); a line through them reaches the bound "
                f"max_rounds={self.bound:g} at step {at} of {self.total}, where the run would stop: the pool's "
                "in-band supply is running out (python -m pcbench.predict projects it before a run)")
