"""SPEED-RL (arXiv 2506.09016): screen with a few rollouts, continue the informative ones.

Each sampling round screens gen_batch_size fresh candidates with n_pilot ("screening")
rollouts; a candidate is qualified when 0 < p < 1 (strict: any variance at all, not PC's
band). Qualified prompts wait in a buffer and get n_commit = n - n_pilot continuation
rollouts in the NEXT round's generation call, together with that round's screens (SPEED-RL
pipelines continuation of one batch with screening of the next in one inference call; we
pick that over a second call in the same round so a round is one batched pass, as in PC).
The trained group is screening + continuation rollouts (n in all, reused, no correction).

How it differs from Pilot-Commit, all else shared (loop, epoch end, staleness): the band is
0 < p < 1, nothing is ever evicted (an all-correct screen is just skipped this epoch), and
the buffer is drawn uniformly at random (SPEED-RL does not prioritise qualified prompts).
Screens of unqualified prompts are counted as `skipped_pilot` discards.
"""

from __future__ import annotations

import numpy as np

from pcbench.allocators.base import AllocContext, register_allocator, require_pool
from pcbench.allocators.pilot_commit import PilotCommit


@register_allocator("speed_rl")
class SpeedRL(PilotCommit):
    @classmethod
    def validate(cls, cfg, train_batch: int) -> None:
        if not 1 <= cfg.n_pilot < cfg.n:
            raise ValueError(f"method.n_pilot={cfg.n_pilot} (screening rollouts) must be in [1, method.n={cfg.n}); "
                             f"SPEED-RL screens with a few, e.g. n/4")
        if cfg.n_pilot + cfg.n_commit != cfg.n:
            raise ValueError(f"method.n_pilot + method.n_commit = {cfg.n_pilot + cfg.n_commit} != method.n={cfg.n}; "
                             f"set n_commit = n - n_pilot (continuation = the rest of the group)")
        require_pool(cfg, train_batch)
        if cfg.staleness < 0:
            raise ValueError(f"method.staleness={cfg.staleness} must be >= 0")

    def _triage(self, pilot, ctx: AllocContext) -> str:
        p = float(np.mean(pilot.acc))
        if 0.0 < p < 1.0:
            self.buffer.add(pilot, ctx.step)
            return "kept"
        ctx.ledger.discarded("skipped_pilot", len(pilot))
        return "too_easy" if p >= 1.0 else "too_hard"
