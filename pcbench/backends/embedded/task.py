"""Synthetic verifiable arithmetic with a real spread of difficulty.

Tiers run from trivially easy (one-digit sums: soon always solved) to out of reach (2x2
digit products: never solved by a model this size), which reproduces the paper's regime:
many prompts give all-equal rewards and no gradient. Answers are checked through the same
`\\boxed{}` reward path as real data. Everything is generated from `data.seed`, so every
run and method sees the same problems.
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
    "add33": ("+", (100, 999), (100, 999)),
    "mul1": ("*", (2, 9), (2, 9)),
    "mul21": ("*", (10, 99), (2, 9)),
    "mul22": ("*", (10, 99), (10, 99)),
}


@dataclass(frozen=True)
class Problem:
    pid: int
    prompt: str  # e.g. "47+35="
    answer: str  # ground truth, e.g. "82"
    tier: str

    @property
    def solution(self) -> str:
        return f"\\boxed{{{self.answer}}}"


def make_problem(pid: int, tier: str, rng: np.random.Generator) -> Problem:
    op, (alo, ahi), (blo, bhi) = TIERS[tier]
    a, b = int(rng.integers(alo, ahi + 1)), int(rng.integers(blo, bhi + 1))
    value = {"+": a + b, "-": a - b, "*": a * b}[op]
    return Problem(pid, f"{a}{op}{b}=", str(value), tier)


def sample_problems(n: int, tiers: dict[str, float], rng: np.random.Generator, start_pid: int = 0,
                    exclude: set[str] | None = None) -> list[Problem]:
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
        p = make_problem(start_pid + len(out), names[int(rng.choice(len(names), p=w))], rng)
        if p.prompt not in seen:
            seen.add(p.prompt)
            out.append(p)
    return out


@dataclass
class SyntheticTask:
    train: list[Problem]  # RL prompts
    sft: list[Problem]  # warm-start demonstrations, disjoint from train and val
    val: dict[str, list[Problem]]  # validation set name -> problems

    @classmethod
    def build(cls, data_cfg) -> "SyntheticTask":
        rng = np.random.default_rng(int(data_cfg.seed))
        tiers = dict(data_cfg.tiers)
        val: dict[str, list[Problem]] = {}
        used: set[str] = set()
        for name, set_tiers in data_cfg.val_sets.items():
            probs = sample_problems(int(data_cfg.val_size), {t: 1.0 for t in set_tiers}, rng,
                                    start_pid=1_000_000 + 10_000 * len(val), exclude=used)
            used |= {p.prompt for p in probs}
            val[name] = probs
        train = sample_problems(int(data_cfg.train_size), tiers, rng, exclude=used)
        used |= {p.prompt for p in train}
        sft = sample_problems(int(data_cfg.sft_size), dict(data_cfg.sft_tiers), rng, start_pid=2_000_000, exclude=used)
        return cls(train, sft, val)

    def by_id(self) -> dict[int, Problem]:
        return {p.pid: p for p in self.train}
