"""The rule-based math reward: +1 if the last boxed answer equals the gold one, else -1.

This is the paper's verifier ("sympy based, 1 s timeout, score +1/-1, with a boolean
``acc`` used for filtering"), shared by the embedded CPU backend and the verl backend.
One call goes through these stages, cheapest first, and stops at the first that decides:

1. extract the last ``\\boxed{}`` (no box, an unclosed box, a box over 10k characters:
   wrong, ``parse_failed``);
2. fast path: both sides plain integers / decimals / fractions -> exact ``Fraction``
   comparison (``fast_path_hits``);
3. screen: answers that could make sympy explode (exponent towers, huge factorials,
   deep nesting, control characters) are wrong without reaching sympy (``rejected``);
4. math-verify (LaTeX extraction only) under a wall-clock ``timeout_s`` for the whole
   call: a signal deadline in the main thread, the process guard off it.

Nothing here evaluates the response text: no ``eval``/``exec``/``sympify`` of raw input.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields
from typing import Sequence

from .boxed import find_last_boxed
from .fastpath import fast_equal
from .procguard import default_guard
from .screen import MAX_ANSWER_CHARS, screen_answer
from .verifier import Verdict, can_use_signals, verify_in_main_thread

CORRECT_SCORE = 1.0
WRONG_SCORE = -1.0


@dataclass(frozen=True)
class RewardResult:
    """Outcome of one response. ``pred`` is the extracted boxed answer (None if none)."""

    score: float
    acc: bool
    pred: str | None
    timed_out: bool = False
    parse_failed: bool = False


@dataclass
class RewardStats:
    """Counters since the last ``reset()``; thread-safe. Log ``snapshot("reward/")``.

    ``parse_failures`` counts calls whose answer could not be checked (no box, unclosed
    box, unparseable LaTeX, rejected by the screen); ``rejected`` is the screen's share.
    """

    calls: int = 0
    timeouts: int = 0
    parse_failures: int = 0
    fast_path_hits: int = 0
    rejected: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def _counter_names(self) -> list[str]:
        return [f.name for f in fields(self) if not f.name.startswith("_")]

    def record(self, result: RewardResult, *, fast_path: bool = False, rejected: bool = False) -> None:
        with self._lock:
            self.calls += 1
            self.timeouts += int(result.timed_out)
            self.parse_failures += int(result.parse_failed)
            self.fast_path_hits += int(fast_path)
            self.rejected += int(rejected)

    def snapshot(self, prefix: str = "") -> dict[str, int]:
        with self._lock:
            return {prefix + name: getattr(self, name) for name in self._counter_names()}

    def reset(self) -> None:
        with self._lock:
            for name in self._counter_names():
                setattr(self, name, 0)


REWARD_STATS = RewardStats()


def _result(
    acc: bool, pred: str | None, *, timed_out: bool = False, parse_failed: bool = False
) -> RewardResult:
    return RewardResult(CORRECT_SCORE if acc else WRONG_SCORE, acc, pred, timed_out, parse_failed)


def _gold_answer(ground_truth: object) -> str | None:
    """The gold answer string; a boxed gold (some datasets store solutions) is unboxed."""
    text = str(ground_truth).strip()
    if "\\boxed" in text or "\\fbox" in text:
        status, content = find_last_boxed(text, MAX_ANSWER_CHARS)
        text = content.strip() if status == "ok" and content is not None else ""
    return text or None


def _verify(pred: str, gold: str, timeout_s: float) -> Verdict:
    if can_use_signals():
        return verify_in_main_thread(pred, gold, timeout_s)
    return default_guard().verify(pred, gold, timeout_s)


def compute_score(
    response: str, ground_truth: str, *, timeout_s: float = 1.0, stats: RewardStats | None = None
) -> RewardResult:
    """Score one response against its gold answer (see the module docstring).

    ``timeout_s`` bounds the math-verify stage; off the main thread the bound is
    ``timeout_s`` plus the guard's grace (0.5 s) before the worker is killed. Counts go
    to ``stats`` (default: the module-level ``REWARD_STATS``).
    """
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
    stats = REWARD_STATS if stats is None else stats
    _, boxed = find_last_boxed(str(response), MAX_ANSWER_CHARS)
    pred = boxed.strip() if boxed is not None else None
    gold = _gold_answer(ground_truth)
    if not pred or gold is None:
        result = _result(False, pred, parse_failed=True)
        stats.record(result)
        return result
    same = fast_equal(pred, gold)
    if same is not None:
        result = _result(same, pred)
        stats.record(result, fast_path=True)
        return result
    if screen_answer(pred) is not None or screen_answer(gold) is not None:
        result = _result(False, pred, parse_failed=True)
        stats.record(result, rejected=True)
        return result
    verdict = _verify(pred, gold, timeout_s)
    result = _result(verdict.acc, pred, timed_out=verdict.timed_out, parse_failed=verdict.parse_failed)
    stats.record(result)
    return result


def compute_score_batch(
    responses: Sequence[str],
    ground_truths: Sequence[str],
    *,
    timeout_s: float = 1.0,
    stats: RewardStats | None = None,
) -> list[RewardResult]:
    """``compute_score`` over aligned lists, sequentially (about 2 ms per math-verify
    call, microseconds on the fast path)."""
    if len(responses) != len(ground_truths):
        raise ValueError(
            f"got {len(responses)} responses but {len(ground_truths)} ground truths; "
            "repeat each prompt's gold answer once per rollout"
        )
    return [
        compute_score(r, g, timeout_s=timeout_s, stats=stats) for r, g in zip(responses, ground_truths)
    ]


def score_math(response: str, ground_truth: str, extra_info: dict | None = None, *,
               timeout_s: float = 1.0) -> dict:
    """The `math` reward of the `pcbench.rewards` group (pcbench/reward/registry.py):
    ``compute_score`` as {"score", "acc", "pred"}."""
    result = compute_score(response, ground_truth, timeout_s=timeout_s)
    return {"score": float(result.score), "acc": bool(result.acc), "pred": result.pred or ""}
