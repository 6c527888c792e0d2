"""Rollouts-to-target ratios the informative-group law predicts (pure functions).

The count law (pcbench.analysis.law: val/acc is one function of the cumulative mixed groups trained)
makes a method's speedup over GRPO the ratio of their costs per informative group:

    law_ratio(M) = (mixed groups per rollout of M) / (mixed groups per rollout of GRPO)

(not the regime map's `signal_per_rollout`, pcbench.analysis.map_scoring, which weighs each group by
its learning signal sum p(1-p)).

Two ways to get those costs:
- from a run's regime rows (`law_ratios`): mean mixed groups trained and rollouts generated per step;
- before any run (`prerun`), from a probe of the pool's pass rates at the start checkpoint: the
  expected mixed share of a GRPO group of n, DAPO's sampling rounds (3B candidates a round, kept
  when mixed), Pilot-Commit's in-band share of a k-rollout pilot and its rounds per step.

`calibrated` multiplies the law by a per-method factor fitted on other cells (how much a group of
that method was worth against GRPO's); `loco` fits it on 7 map cells and predicts the 8th.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy.stats import binom

from pcbench.analysis.methods import GRPO
from pcbench.analysis.scoring import N_BOOT, median_ratio
from pcbench.analysis.map_scoring import cell_target, crossings



# ---------------------------------------------------------------- from regime rows

def law_ratios(regime: pd.DataFrame, base: str = GRPO) -> pd.DataFrame:
    """Per cell and method: mixed groups and rollouts per step (mean over seeds and steps) and the
    law's predicted rollouts-to-target ratio to `base`. regime: rows with cell, method, seed, step,
    mixed and rollouts_step (or cumulative_rollouts, whose differences are then used)."""
    r = regime.sort_values(["cell", "method", "seed", "step"]).copy()
    diff = r.groupby(["cell", "method", "seed"])["cumulative_rollouts"].diff().fillna(r["cumulative_rollouts"])
    r["rollouts_step"] = r["rollouts_step"].fillna(diff) if "rollouts_step" in r else diff
    per_run = r.groupby(["cell", "method", "seed"]).agg(mixed=("mixed", "mean"), rollouts=("rollouts_step", "mean"))
    t = per_run.groupby(["cell", "method"]).mean().reset_index()
    t["per_rollout"] = t["mixed"] / t["rollouts"]
    ref = t[t["method"] == base].set_index("cell")["per_rollout"]
    t["law_ratio"] = t["per_rollout"] / t["cell"].map(ref)
    return t.rename(columns={"mixed": "mixed_per_step", "rollouts": "rollouts_per_step"})


def measured_ratios(curves: pd.DataFrame, base: str = GRPO, n_boot: int = N_BOOT) -> pd.DataFrame:
    """Per cell and method (main seeds; base's A/A seeds as method `<base>_aa`): the measured
    rollouts-to-target ratio to base (median / median, target = base's best seed-mean val/acc),
    with its percentile bootstrap interval (pcbench.analysis.scoring.median_ratio, seed 0)."""
    rows = []
    for cell, c in curves.groupby("cell", sort=True):
        target = cell_target(c)
        if target is None:
            continue
        cross = crossings(c, target)
        ref = cross[(cross["method"] == base) & (cross["seed_set"] == "main")]["rtt"].to_numpy(float)
        for (method, seed_set), g in cross.groupby(["method", "seed_set"], sort=True):
            if method == base and seed_set == "main":
                continue
            name = method if seed_set == "main" else f"{method}_{seed_set}"
            point, low, high = median_ratio(ref, g["rtt"].to_numpy(float), seed=0, n_boot=n_boot)
            rows.append({"cell": cell, "method": name, "target": target, "measured": point, "low": low, "high": high,
                         "reached": int(np.isfinite(g["rtt"]).sum()), "runs": len(g)})
    return pd.DataFrame(rows, columns=["cell", "method", "target", "measured", "low", "high", "reached", "runs"])


def calibration(table: pd.DataFrame) -> dict[str, float]:
    """{method: exp(mean over cells of log(measured / law_ratio))}: the worth of that method's group
    against GRPO's that the count law misses (1 = the law exact)."""
    ok = table[np.isfinite(table["measured"]) & np.isfinite(table["law_ratio"]) & (table["measured"] > 0)]
    return {m: float(math.exp(np.mean(np.log(g["measured"] / g["law_ratio"])))) for m, g in ok.groupby("method")}


def loco(table: pd.DataFrame) -> pd.DataFrame:
    """Leave one cell out: for each cell, the calibration fitted on the other cells' rows of the same
    method times the law's ratio in the held-out cell. table: cell, method, law_ratio, measured."""
    out = []
    for cell in sorted(table["cell"].unique()):
        cal = calibration(table[table["cell"] != cell])
        for _, row in table[table["cell"] == cell].iterrows():
            c = cal.get(row["method"], math.nan)
            out.append({**row.to_dict(), "calibration": c, "loco": row["law_ratio"] * c})
    return pd.DataFrame(out)


# ---------------------------------------------------------------- before any run

# results/bench/prerun.json "summary" (python -m pcbench.reports.law; a test keeps them equal):
# the band's supply over a run (measured PC in-band share / probed, geometric mean over the map's cells),
# measured / pre-run law over the committed map's cells (geometric mean), and the smallest and largest
# measured / (law x factor) there, which pcbench.predict uses as the law's error band
PRERUN_SUPPLY = 0.544
PRERUN_CALIBRATION = {"pilot_commit": 1.2536, "dapo": 0.9294}
PRERUN_ERROR = {"pilot_commit": (0.8311, 1.2622), "dapo": (0.7657, 1.2062)}


@dataclass(frozen=True)
class Setup:
    """The allocation knobs the prediction needs (the embedded defaults; pcbench's conf/method)."""
    n: int = 32                # rollouts per trained group
    batch: int = 16            # trained groups per step
    candidates: int = 3        # DAPO / PC candidates per round, as a multiple of batch
    lower: float = 0.125       # PC band: lower <= pilot pass rate <= upper
    upper: float = 0.75
    max_rounds: int = 10


def _signal_weight(j, n: int, alpha: float):
    p = np.asarray(j, float) / n
    w = p * (1 - p)
    return np.where(w > 0, w ** alpha if alpha else 1.0, 0.0)


def expected_rounds(q: float, setup: Setup) -> float:
    """Sampling rounds per step for a sampler that keeps a candidate with probability q and needs
    `batch` of them from `candidates * batch` a round, leftovers carried to the next step (the
    renewal rate, at least one round): max(1, 1 / (candidates q)), capped at max_rounds."""
    if q <= 0:
        return float(setup.max_rounds)
    return float(min(setup.max_rounds, max(1.0, 1.0 / (setup.candidates * q))))


def prerun(p, setup: Setup = Setup(), pilots=None, weights=None, alpha: float = 0.0, supply: float = 1.0) -> dict:
    """Expected regime and law ratios from pass rates p (one per probed prompt, optional weights).

    Returns {"grpo": {...}, "dapo": {...}, "pilot_commit": {k: {...}}}: per method its cost per step
    (rollouts), mixed (value) groups per step and predicted ratio to GRPO; GRPO's all-correct /
    all-wrong shares; DAPO's rounds; PC's in-band share of a k-rollout pilot at the probe (`in_band`)
    and over the run (`in_band_run` = in_band x supply: the band's supply shrinks as a run learns its
    mid-band prompts; 1 = as probed) and its rounds per step from the latter."""
    p = np.clip(np.asarray(p, float), 0.0, 1.0)
    w = np.full(p.size, 1.0 / p.size) if weights is None else np.asarray(weights, float) / np.sum(weights)
    n, B, C = setup.n, setup.batch, setup.candidates
    j = np.arange(n + 1)
    pmf = binom.pmf(j[None, :], n, p[:, None])              # (prompts, n+1)
    v = _signal_weight(j, n, alpha)
    all_wrong, all_right = float(w @ pmf[:, 0]), float(w @ pmf[:, n])
    mixed = 1.0 - all_wrong - all_right
    grpo_value = float(w @ (pmf @ v))                         # per group, zero-variance groups worth 0
    grpo = {"cost": B * n, "value": B * grpo_value, "all_correct": all_right, "all_wrong": all_wrong,
            "zero_variance": all_wrong + all_right, "mixed": mixed}
    base = grpo["value"] / grpo["cost"] if grpo["cost"] else math.nan
    grpo["ratio"] = 1.0
    d_rounds = expected_rounds(mixed, setup)
    d_value = B * (grpo_value / mixed if mixed > 0 else 0.0)
    dapo = {"rounds": d_rounds, "cost": d_rounds * C * B * n, "value": d_value}
    dapo["ratio"] = (dapo["value"] / dapo["cost"]) / base if base > 0 else math.nan
    out = {"grpo": grpo, "dapo": dapo, "pilot_commit": {}}
    for k in pilots or [n // 4]:
        if not 2 <= k < n:
            continue
        jk = np.arange(k + 1)
        band = (jk / k >= setup.lower - 1e-12) & (jk / k <= setup.upper + 1e-12)
        pk = binom.pmf(jk[None, :], k, p[:, None])            # (prompts, k+1)
        jc = np.arange(n - k + 1)
        pc_ = binom.pmf(jc[None, :], n - k, p[:, None])       # (prompts, n-k+1)
        # value of a committed group (pilot j1 in band + commit j2) per prompt, times P(j1)
        vv = _signal_weight(jk[:, None] + jc[None, :], n, alpha)          # (k+1, n-k+1)
        per_prompt = np.einsum("pa,pb,ab->p", pk * band[None, :], pc_, vv)
        q = float(w @ (pk @ band))
        rounds = expected_rounds(q * supply, setup)
        value = B * (float(w @ per_prompt) / q if q > 0 else 0.0)
        cost = rounds * C * B * k + B * (n - k)
        rec = {"in_band": q, "in_band_run": q * supply, "rounds": rounds, "cost": cost, "value": value}
        rec["ratio"] = (value / cost) / base if base > 0 else math.nan
        out["pilot_commit"][int(k)] = rec
    return out


def histogram_rates(hist: dict[str, float]) -> tuple[np.ndarray, np.ndarray]:
    """(pass rates, weights) from a pass-rate histogram keyed by the warm start's labels
    (p=0, (0,1/8), [1/8,3/8), [3/8,5/8), [5/8,7/8), [7/8,1), p=1): each bin at its midpoint."""
    mid = {"p=0": 0.0, "(0,1/8)": 1 / 16, "[1/8,3/8)": 0.25, "[3/8,5/8)": 0.5, "[5/8,7/8)": 0.75,
           "[7/8,1)": 15 / 16, "p=1": 1.0}
    keys = [k for k in mid if hist.get(k, 0) > 0]
    return np.array([mid[k] for k in keys]), np.array([hist[k] for k in keys], float)
