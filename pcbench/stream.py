"""Epoch-wise prompt stream: each active prompt once per epoch, in a seeded shuffle.

Evicted prompts are excluded from the next epoch's permutation. `take(k)` returns exactly
k ids or None when fewer than k remain (the remainder is dropped, like a DataLoader with
drop_last=True); the caller decides what an epoch end means for its method.
"""

from __future__ import annotations

import numpy as np


class TrainingSetExhausted(RuntimeError):
    pass


class PromptStream:
    def __init__(self, prompt_ids, seed: int):
        self.all_ids = np.asarray(sorted(int(i) for i in prompt_ids), dtype=np.int64)
        self.seed = int(seed)
        self.excluded: set[int] = set()
        self.epoch = 0
        self.drawn = 0  # prompts taken over all epochs
        self._pos = 0
        self._perm = self._permutation()

    def _permutation(self) -> np.ndarray:
        # (N_active,) a fresh, reproducible order per epoch: depends only on (seed, epoch, excluded)
        active = np.array([i for i in self.all_ids if int(i) not in self.excluded], dtype=np.int64)
        rng = np.random.default_rng([self.seed, self.epoch])
        return active[rng.permutation(len(active))]

    @property
    def num_active(self) -> int:
        return len(self.all_ids) - len(self.excluded)

    def take(self, k: int) -> list[int] | None:
        if self._pos + k > len(self._perm):
            return None
        out = self._perm[self._pos:self._pos + k].tolist()
        self._pos += k
        self.drawn += k
        return out

    @property
    def epochs_drawn(self) -> float:
        """Prompts drawn so far over the pool's size: 1.0 = every prompt once."""
        return self.drawn / max(1, len(self.all_ids))

    def next_epoch(self, min_needed: int) -> None:
        self.epoch += 1
        self._pos = 0
        self._perm = self._permutation()
        if len(self._perm) < min_needed:
            raise TrainingSetExhausted(
                f"only {len(self._perm)} training prompts remain after eviction, fewer than the "
                f"{min_needed} one sampling round draws; use a larger training set or a smaller "
                f"train batch / candidate pool")

    def exclude(self, ids) -> None:
        self.excluded.update(int(i) for i in ids)

    def state_dict(self) -> dict:
        return {"epoch": self.epoch, "pos": self._pos, "excluded": sorted(self.excluded), "seed": self.seed,
                "drawn": self.drawn}

    def load_state_dict(self, state: dict) -> None:
        self.epoch = int(state["epoch"])
        self.excluded = set(int(i) for i in state["excluded"])
        self._perm = self._permutation()
        self._pos = int(state["pos"])
        self.drawn = int(state.get("drawn", 0))  # absent in checkpoints written before it
