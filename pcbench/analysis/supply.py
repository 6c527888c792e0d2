"""Pilot-Commit's supply over a run: rounds per step by step, and when it starves or drains (pure).

The step-0 pool card says how much of the pool sits in the band; a run spends it. Per step t:

    band(t+1)  = band(t) (1 - learn)                       band prompts are learnt out of the band
    f(t)       = (q_band band(t) + q_hard hard) / active(t)  fresh pilots' in-band share
    rounds(t)  = max(1, 1 / (C f(t))), capped at R         (+1 at step 1: the pipeline starts empty)
    epochs    += rounds(t) C B / (N active(t))             at each epoch end the solved prompts, and
                                                           the learnt ones that reach p = 1, are evicted

(shares of the pool's N prompts; C candidates per round as a multiple of the batch B; R the round
bound, method.max_rounds). q_hard: the chance that a hard prompt's n/4 pilot lands in the band
(fitted); q_band follows from the probe's step-0 in-band share f0 = q_band band + q_hard hard.
A learnt prompt reaches p = 1 (and is evicted) in the proportion the pool's easy end already is
solved: solved / (solved + near-solved) of the card. `learn` scales with the learning rate (per 1e-4). Two warnings, each with the first step it happens at:

- STARVE: rounds(t) >= starve R (t >= 2). The projection is a mean: a step's rounds spread widely
  about it (whole rounds, a binomial in-band count per round, the buffer's staleness), and the
  measured supply falls faster than the projection in the cells that starve, so the bound is hit
  long before the mean reaches R; `starve` is fitted as the share of R above which the committed
  cells lost runs to the bound.
- DRAIN: one pass over the active pool holds fewer than `margin` batches of in-band prompts,
  N active(t) f(t) < margin B: an epoch can no longer fill a batch (the buffer and partial batch
  are dropped at an epoch's end).

`learn`, `q_hard`, `q_near` are fitted on the in-band series, `starve` and `margin` on the flags, on the committed cells (pcbench.reports.predict_supply,
leave one cell out); SUPPLY_RATES holds the fit on all of them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SupplyPool:
    """Step-0 facts: the pool card's class shares, the probe's pilot in-band share, the pool size."""
    f0: float        # share of fresh n/4 pilots landing in the band at step 0
    band: float      # card share 0.125 <= p < 0.75
    hard: float      # card share 0 < p < 0.125
    solved: float    # card share p >= 0.99 (evicted after the first epoch)
    near: float      # card share 0.75 <= p < 0.99
    size: int        # prompts in the pool (N)


@dataclass(frozen=True)
class SupplyRun:
    """The run's knobs: batch B, candidates C (x B a round), round bound R, steps, learning rate."""
    batch: int = 16
    candidates: int = 3
    max_rounds: int = 10
    steps: int = 50
    lr: float = 1e-4


@dataclass(frozen=True)
class SupplyRates:
    learn: float     # share of band mass learnt out of the band per step (at lr 1e-4)
    q_hard: float    # chance a hard prompt's pilot lands in the band
    q_near: float    # the same for a learnt prompt that stays near-solved (p < 1)
    margin: float    # DRAIN when a pass over the active pool holds < margin batches in band
    starve: float = 0.3  # STARVE when projected rounds reach starve x max_rounds


# the fit on every committed cell (results/bench/predict_supply.json "fit"; a test keeps them equal)
SUPPLY_RATES = SupplyRates(learn=0.03981, q_hard=0.3, q_near=0.45, margin=10.6488, starve=0.2076)


def rounds_for(f: float, run: SupplyRun) -> float:
    """Expected sampling rounds per step when a share f of fresh pilots lands in the band."""
    if f <= 0:
        return float(run.max_rounds)
    return float(min(run.max_rounds, max(1.0, 1.0 / (run.candidates * f))))


def project(pool: SupplyPool, run: SupplyRun, rates: SupplyRates) -> dict:
    """Per step 1..steps: in-band share f, rounds, pool epochs, active share; and the first step of
    STARVE / DRAIN (None when the horizon holds none)."""
    learn = min(1.0, rates.learn * run.lr / 1e-4)
    q_hard = min(rates.q_hard, pool.f0 / pool.hard) if pool.hard > 0 else 0.0
    q_band = (pool.f0 - q_hard * pool.hard) / pool.band if pool.band > 0 else 0.0
    to_solved = pool.solved / (pool.solved + pool.near) if pool.solved + pool.near > 0 else 0.0
    band, learnt, active, epochs = pool.band, 0.0, 1.0, 0.0
    out = {"f": [], "rounds": [], "epochs": [], "active": [], "starve_step": None, "drain_step": None}
    for t in range(1, run.steps + 1):
        f = min(1.0, (q_band * band + q_hard * pool.hard + rates.q_near * learnt * (1 - to_solved)) / active)
        r = min(float(run.max_rounds), rounds_for(f, run) + (1.0 if t == 1 else 0.0))
        out["f"].append(f)
        out["rounds"].append(r)
        if out["starve_step"] is None and t >= 2 and r >= rates.starve * run.max_rounds:
            out["starve_step"] = t
        if out["drain_step"] is None and pool.size * active * f < rates.margin * run.batch:
            out["drain_step"] = t
        before = epochs
        epochs += r * run.candidates * run.batch / (pool.size * active)
        band, learnt = band * (1 - learn), learnt + band * learn
        if math.floor(epochs) > math.floor(before):  # epoch end: solved and learnt-to-solved evicted
            active = max(1e-3, 1.0 - pool.solved - learnt * to_solved)
        out["epochs"].append(epochs)
        out["active"].append(active)
    return out


def thirds(x) -> list[float]:
    """Means of the first, middle and last third of a per-step series (NaN for an empty third)."""
    x = np.asarray(x, float)
    parts = np.array_split(x, 3)
    return [float(np.nanmean(p)) if p.size and np.isfinite(p).any() else math.nan for p in parts]


def warning(proj: dict, run: SupplyRun) -> str | None:
    """One line: 'STARVE at step t: ...' or 'DRAIN at step t: ...' (the earlier), or None."""
    s, d = proj["starve_step"], proj["drain_step"]
    if s is None and d is None:
        return None
    if d is not None and (s is None or d <= s):
        f = proj["f"][d - 1]
        return (f"DRAIN at step {d} of {run.steps}: a pass over the active pool holds too few in-band prompts "
                f"(in-band share {f:.0%}, {proj['epochs'][d - 1]:.1f} pool epochs drawn); use a larger pool")
    return (f"STARVE at step {s} of {run.steps}: projected rounds per step reach {proj['rounds'][s - 1]:.1f} "
            f"(in-band share {proj['f'][s - 1]:.0%}); on the committed cells runs past that point stopped at the "
            f"bound method.max_rounds={run.max_rounds}: use a pool with more band supply, or a larger bound")
