"""Rule-based math reward (+1 / -1 with a boolean ``acc``), for every backend.

See ``math_reward.py`` for the stages of one call and ``verl_entry.py`` for verl.
"""

from pcbench.reward.boxed import extract_last_boxed
from pcbench.reward.math_reward import (
    REWARD_STATS,
    RewardResult,
    RewardStats,
    compute_score,
    compute_score_batch,
)
from pcbench.reward.procguard import ProcessGuard, guard_worker_pids
from pcbench.reward.verl_entry import overlong_penalty, verl_compute_score

__all__ = [
    "REWARD_STATS",
    "ProcessGuard",
    "RewardResult",
    "RewardStats",
    "compute_score",
    "compute_score_batch",
    "extract_last_boxed",
    "guard_worker_pids",
    "overlong_penalty",
    "verl_compute_score",
]
