"""Scores remembered per (response, answer): a group's rollouts repeat the same text.

A GRPO group is 32 rollouts of one prompt, and a trained policy writes the same few strings again
and again (`\\boxed{46}` twenty times). compute_score is a pure function of (response, answer)
apart from its time bound, so a repeat is answered from memory: the same RewardResult, and the same
counters (calls, fast-path hits, parse failures, rejections) recorded again, so the logged
reward/* numbers are what scoring every rollout gives. A verdict that timed out is never kept: it
says nothing about the pair.
"""

from __future__ import annotations

from pcbench.reward.math_reward import RewardResult, RewardStats, compute_score


class _Recorded:
    """Stands in for RewardStats inside one compute_score call: keeps what it records."""

    def record(self, result: RewardResult, *, fast_path: bool = False, rejected: bool = False) -> None:
        self.kwargs = {"fast_path": fast_path, "rejected": rejected}


class ScoreMemo:
    """compute_score(response, answer) with repeats answered from memory (at most `size` pairs;
    when full, the oldest half is dropped)."""

    def __init__(self, stats: RewardStats, size: int = 1 << 16):
        self.stats, self.size = stats, size
        self.seen: dict[tuple[str, str], tuple[RewardResult, dict]] = {}

    def score(self, response: str, answer: str) -> RewardResult:
        key = (response, answer)
        hit = self.seen.get(key)
        if hit is None:
            rec = _Recorded()
            result = compute_score(response, answer, stats=rec)
            hit = (result, rec.kwargs)
            if not result.timed_out:
                if len(self.seen) >= self.size:
                    for old in list(self.seen)[: self.size // 2]:
                        del self.seen[old]
                self.seen[key] = hit
        self.stats.record(hit[0], **hit[1])
        return hit[0]
