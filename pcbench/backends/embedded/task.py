"""Synthetic verifiable arithmetic: a ladder of tiers from always solved to not yet reachable.

After the warm start (which sees the low tiers only, plus a few middle ones) the low tiers
are solved on every rollout, the middle tier sometimes and the top tier never: the paper's
regime, where many groups give all-equal rewards and no gradient, and RL moves pass rates at
the edge of competence. With `reverse: true` the answer is written least-significant digit
first (47+38= -> \\boxed{58}), the order in which carries are computed, so a small
transformer can learn longer sums and skills transfer up the ladder. The ground truth is
that reversed digit string, checked through the same `\\boxed{}` reward path as real data.
Everything is generated from `data.seed`, so every run and method sees the same problems.

The warm start never depends on the RL pool (docs/method.md#embedded-task). Its stream first
sets aside a fixed *reserve* (`data.warmstart_reserve`: validation, out-of-distribution and
training prompts drawn exactly as the default pool is), then draws the SFT demonstrations
disjoint from it; the competence-probe prompts are the reserve's first 64 training prompts of
the probe tier. The RL pool is drawn afterwards from a fresh stream of the same seed, avoiding
every SFT demonstration. So changing the pool (size, tiers, never-solvable share, validation
or OOD sizes) leaves the warm start, and its cached weights, exactly as they were; and at the
default pool the pool *is* the reserve, so the default warm start and pool are the ones every
benchmark before this split used, prompt for prompt.

Tiers named `add<da><db>c<k>` are sums of a da-digit and a db-digit number whose column
addition carries exactly k times: carries, not only length, make a sum hard for the model,
so the carry tiers spread pass rates over (0, 1) instead of three rungs (the `continuum`
data config).
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
# The finer ladder (issue 43): every add<da><db> with 1 <= db <= da <= 6 digits, so that operand
# lengths step one digit at a time (add42 between add32 and add43, add53 between add43 and add44...).
# Added after the tiers above, which keep their entries: a config naming only those is unchanged.
for _da in range(1, 7):
    for _db in range(1, _da + 1):
        TIERS.setdefault(f"add{_da}{_db}", ("+", (10 ** (_da - 1) if _da > 1 else 0, 10 ** _da - 1),
                                             (10 ** (_db - 1) if _db > 1 else 0, 10 ** _db - 1)))
# a second skill with its own ladder (data=synthetic_skills): differences of longer numbers (a draw
# whose difference is <= 0, or ends in 0 when reversed, is drawn again, as for every tier)
for _da, _db in ((3, 2), (3, 3), (4, 3), (4, 4)):
    TIERS.setdefault(f"sub{_da}{_db}", ("-", (10 ** (_da - 1), 10 ** _da - 1), (10 ** (_db - 1), 10 ** _db - 1)))
# tier -> the exact number of carries of its column addition (tiers named add<da><db>c<k>)
CARRIES: dict[str, int] = {}
for _base, _cols in (("add22", 2), ("add32", 3), ("add33", 3), ("add43", 4), ("add44", 4), ("add55", 5)):
    for _k in range(_cols + 1):
        TIERS[f"{_base}c{_k}"] = TIERS[_base]
        CARRIES[f"{_base}c{_k}"] = _k
PROBE_PROMPTS = 64  # warm-start competence-probe prompts of model.warmstart.stop_tier, unless model.warmstart.probe_prompts


def carries(a: int, b: int) -> int:
    """How many columns of a + b produce a carry (47+35: 7+5 carries, 4+3+1 does not -> 1)."""
    count = carry = 0
    while a or b:
        carry = int(a % 10 + b % 10 + carry >= 10)
        count += carry
        a, b = a // 10, b // 10
    return count


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
    if tier in CARRIES and carries(a, b) != CARRIES[tier]:
        return None  # rejection: the caller draws again (sample_problems bounds the attempts)
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


def pool_tiers(data_cfg) -> dict[str, float]:
    """The RL pool's tier weights (also the validation mix): data.tiers, with the never-solvable
    tier `data.never_tier` reweighted to `data.never_share` when that is set (the other tiers
    keep their proportions and share the rest)."""
    tiers = {t: float(w) for t, w in dict(data_cfg.tiers).items()}
    share = data_cfg.get("never_share")
    if share is None:
        return tiers
    never = str(data_cfg.never_tier)
    rest = {t: w for t, w in tiers.items() if t != never and w > 0}
    total = sum(rest.values())
    out = {t: (1.0 - float(share)) * w / total for t, w in rest.items()} if total > 0 else {}
    out[never] = float(share)
    return {t: w for t, w in out.items() if w > 0}


def draw_pool(spec, rng: np.random.Generator, rev, exclude: set[str] | None = None):
    """-> (val, {ood set: problems}, train) drawn in that order from `rng`, each disjoint from the
    ones before and from `exclude`. `spec` holds val_size, ood_size, ood_sets, train_size and the
    tier weights (`tiers`); the pool and the warm start's reserve are both drawn by this."""
    tiers = dict(spec["tiers"])
    used = set(exclude or ())
    val = sample_problems(int(spec["val_size"]), tiers, rng, start_pid=1_000_000, exclude=used, reverse=rev)
    seen = {p.prompt for p in val}
    ood: dict[str, list[Problem]] = {}
    for name, set_tiers in (spec.get("ood_sets") or {}).items():
        probs = sample_problems(int(spec["ood_size"]), {t: 1.0 for t in set_tiers}, rng,
                                start_pid=1_100_000 + 10_000 * len(ood), exclude=used | seen, reverse=rev)
        seen |= {p.prompt for p in probs}
        ood[name] = probs
    train = sample_problems(int(spec["train_size"]), tiers, rng, exclude=used | seen, reverse=rev)
    return val, ood, train


def warmstart_problems(data_cfg, probe_tier: str | None = None,
                       n_probe: int = PROBE_PROMPTS) -> tuple[list[Problem], list[Problem]]:
    """-> (SFT demonstrations, competence-probe prompts) from data.seed, data.reverse, data.sft_*,
    data.warmstart_reserve, the probe tier and its size only: nothing about the RL pool."""
    rng = np.random.default_rng(int(data_cfg.seed))
    rev = data_cfg.get("reverse", False)
    val, ood, train = draw_pool(data_cfg.warmstart_reserve, rng, rev)
    reserved = {p.prompt for p in val + train} | {p.prompt for ps in ood.values() for p in ps}
    sft = sample_problems(int(data_cfg.sft_size), dict(data_cfg.sft_tiers), rng, start_pid=2_000_000,
                          exclude=reserved, reverse=rev)
    probe: list[Problem] = []
    if probe_tier:
        probe = [p for p in train if p.tier == probe_tier][:n_probe]
        if len(probe) < n_probe:  # a tier the reserve does not hold: fresh prompts of the same stream
            probe += sample_problems(n_probe - len(probe), {str(probe_tier): 1.0}, rng, start_pid=3_000_000,
                                     exclude=reserved | {p.prompt for p in sft}, reverse=rev)
    return sft, probe


@dataclass
class SyntheticTask:
    train: list[Problem]  # RL prompts
    sft: list[Problem]  # warm-start demonstrations, disjoint from train and val
    val: list[Problem]  # held-out, drawn like the RL mix (pool_tiers): val/acc is over these
    ood: dict[str, list[Problem]]  # out-of-distribution set name -> problems: logged, never in val/acc
    probe: list[Problem]  # the warm start's competence-probe prompts (model.warmstart.stop_tier)

    @classmethod
    def build(cls, data_cfg, probe_tier: str | None = None, n_probe: int = PROBE_PROMPTS) -> "SyntheticTask":
        sft, probe = warmstart_problems(data_cfg, probe_tier, n_probe)
        spec = {**{k: data_cfg.get(k) for k in ("val_size", "ood_size", "ood_sets", "train_size")},
                "tiers": pool_tiers(data_cfg)}
        # a fresh stream of the same seed: at the default pool this redraws the reserve exactly
        # (none of it is an SFT demonstration), elsewhere any pool that avoids the demonstrations
        val, ood, train = draw_pool(spec, np.random.default_rng(int(data_cfg.seed)), data_cfg.get("reverse", False),
                                    exclude={p.prompt for p in sft})
        return cls(train, sft, val, ood, probe)

    @classmethod
    def for_run(cls, cfg) -> "SyntheticTask":
        """The task of a composed run config (its probe tier: model.warmstart.stop_tier)."""
        ws = cfg.model.get("warmstart") or {}
        return cls.build(cfg.data, ws.get("stop_tier"), int(ws.get("probe_prompts", PROBE_PROMPTS)))

    def by_id(self) -> dict[int, Problem]:
        return {p.pid: p for p in self.train}
