"""A scripted rollout backend with known per-prompt success, for tests and dry runs.

`exact` mode gives each request round(p * k) correct rollouts (first ones correct), so band
edges can be hit exactly; `bernoulli` mode samples acc ~ Bernoulli(p) from a seeded rng.
Payloads are (prompt_id, call_index, j) tuples so tests can see which call made a rollout.
"""

from __future__ import annotations

from typing import Callable, Mapping, Sequence

import numpy as np

from pcbench.allocators.base import Request, Rollouts


class FakeBackend:
    def __init__(self, pass_rate: Mapping[int, float] | Callable[[int], float], mode: str = "exact", seed: int = 0):
        self.pass_rate = pass_rate if callable(pass_rate) else (lambda pid, m=dict(pass_rate): m[pid])
        self.mode = mode
        self.rng = np.random.default_rng(seed)
        self.calls: list[list[Request]] = []

    def generate(self, requests: Sequence[Request]) -> list[Rollouts]:
        self.calls.append(list(requests))
        call = len(self.calls) - 1
        return [self._one(r, call) for r in requests]

    def _one(self, req: Request, call: int) -> Rollouts:
        p = float(self.pass_rate(req.prompt_id))
        if self.mode == "exact":
            ones = int(round(p * req.k))
            acc = np.array([1.0] * ones + [0.0] * (req.k - ones))
        else:
            acc = (self.rng.random(req.k) < p).astype(float)
        payload = [(req.prompt_id, call, j) for j in range(req.k)]
        return Rollouts(req.prompt_id, acc, payload, req.kind)
