"""Synthetic verifiable arithmetic: a ladder of tiers from always solved to not yet reachable.

After the warm start (which sees the low tiers only, plus a few middle ones) the low tiers
are solved on every rollout, the middle tier sometimes and the top tier never: the paper's
regime, where many groups give all-equal rewards and no gradient, and RL moves pass rates at
the edge of competence. With `reverse: true` the answer is written least-significant digit
first (47+38= -> \\boxed{58}), the order in which carries are computed, so a small
transformer can learn longer sums and skills transfer up the ladder. The ground truth is
that reversed digit string, checked through the same `\\boxed{}` reward path as real data.
Everything is generated from `data.seed`, so every run and method sees the same problems.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# tier -> (operator, (lo, hi) of a, (lo, hi) of b); ranges inclusive
TIERS = {
    "add11": ("+", (0, 9), (0, 9)),
    "add21": ("+", (10, 99), (0, 9)),
    "add22": ("+", (10, 99), (10, 99)),
    "sub21": ("-", (10, 99), (0, 9)),
    "sub22": ("-", (10, 99), (10, 99)),
    "add32": ("+", (100, 999), (10, 99)),
    "add33": ("+", (100, 999), (100, 999)),
    "add43": ("+", (1000, 9999), (100, 999)),
    "add44": ("+", (1000, 9999), (1000, 9999)),
    "add54": ("+", (10000, 99999), (1000, 9999)),
    "add55": ("+", (10000, 99999), (10000, 99999)),
    "add66": ("+", (100000, 999999), (100000, 999999)),
    "mul1": ("*", (2, 9), (2, 9)),
    "mul21": ("*", (10, 99), (2, 9)),
    "mul22": ("*", (10, 99), (10, 99)),
}


@dataclass(frozen=True)
class Problem:
    pid: int
    prompt: str  # e.g. "47+35="
    answer: str  # ground truth as the model must box it, e.g. "82" (or "28" reversed)
    tier: str

    @property
    def solution(self) -> str:
        return f"\\boxed{{{self.answer}}}"


def make_problem(pid: int, tier: str, rng: np.random.Generator, reverse=False) -> Problem | None:
    """One problem of `tier`; None when `reverse` and the value ends in 0 (see below)."""
    op, (alo, ahi), (blo, bhi) = TIERS[tier]
    a, b = int(rng.integers(alo, ahi + 1)), int(rng.integers(blo, bhi + 1))
    value = {"+": a + b, "-": a - b, "*": a * b}[op]
    if not reverse:
        return Problem(pid, f"{a}{op}{b}=", str(value), tier)
    if value <= 0 or value % 10 == 0:
        # the verifier compares numbers, so a reversed answer with a leading 0 ("0824" for 4280)
        # would also accept "824": such problems are not drawn, so every gold answer is exact
        return None
    if reverse == "both":
        return Problem(pid, f"{str(a)[::-1]}{op}{str(b)[::-1]}=", str(value)[::-1], tier)
    return Problem(pid, f"{a}{op}{b}=", str(value)[::-1], tier)


def sample_problems(n: int, tiers: dict[str, float], rng: np.random.Generator, start_pid: int = 0,
                    exclude: set[str] | None = None, reverse=False) -> list[Problem]:
    """n distinct problems (distinct prompts, none in `exclude`) drawn with tier weights."""
    names = list(tiers)
    unknown = [t for t in names if t not in TIERS]
    if unknown:
        raise ValueError(f"unknown tiers {unknown} in data.tiers; choose from {sorted(TIERS)}")
    w = np.array([tiers[t] for t in names], dtype=float)
    w = w / w.sum()
    seen = set(exclude or ())
    out: list[Problem] = []
    attempts = 0
    while len(out) < n:
        attempts += 1
        if attempts > 50 * n + 1000:
            raise ValueError(f"could not draw {n} distinct problems from tiers {names}; lower the data sizes")
        p = make_problem(start_pid + len(out), names[int(rng.choice(len(names), p=w))], rng, reverse)
        if p is not None and p.prompt not in seen:
            seen.add(p.prompt)
            out.append(p)
    return out


@dataclass
class SyntheticTask:
    train: list[Problem]  # RL prompts
    sft: list[Problem]  # warm-start demonstrations, disjoint from train and val
    val: list[Problem]  # held-out, drawn like the RL mix (data.tiers): val/acc is over these
    ood: dict[str, list[Problem]]  # out-of-distribution set name -> problems: logged, never in val/acc

    @classmethod
    def build(cls, data_cfg) -> "SyntheticTask":
        rng = np.random.default_rng(int(data_cfg.seed))
        rev = data_cfg.get("reverse", False)
        tiers = dict(data_cfg.tiers)
        val = sample_problems(int(data_cfg.val_size), tiers, rng, start_pid=1_000_000, reverse=rev)
        used = {p.prompt for p in val}
        ood: dict[str, list[Problem]] = {}
        for name, set_tiers in (data_cfg.get("ood_sets") or {}).items():
            probs = sample_problems(int(data_cfg.ood_size), {t: 1.0 for t in set_tiers}, rng,
                                    start_pid=1_100_000 + 10_000 * len(ood), exclude=used, reverse=rev)
            used |= {p.prompt for p in probs}
            ood[name] = probs
        train = sample_problems(int(data_cfg.train_size), tiers, rng, exclude=used, reverse=rev)
        used |= {p.prompt for p in train}
        sft = sample_problems(int(data_cfg.sft_size), dict(data_cfg.sft_tiers), rng, start_pid=2_000_000,
                              exclude=used, reverse=rev)
        return cls(train, sft, val, ood)

    def by_id(self) -> dict[int, Problem]:
        return {p.pid: p for p in self.train}
