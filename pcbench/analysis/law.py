"""The informative-group law: val/acc as one function of the value of the groups trained.

Pure functions over one tidy frame (`law_frame`): one row per run and evaluation, with the run's
cumulative rollouts, its val/acc, and what it had trained by then: `mixed_cum` (cumulative mixed,
i.e. informative, groups) and `signal_cum` (cumulative sum of p(1-p) over its trained groups; only
the regime map logs it, NaN for the sample-efficiency benchmark).

The law (issue 30): within one cell, val/acc follows one curve of the cumulative *value* of the
groups a method trained, whatever the method. The value of one trained group with empirical pass
rate p is the one-parameter family v_a(p) = (p(1-p))^a, zero for zero-variance groups:
a = 0 counts mixed groups, a = 1/2 is sqrt(p(1-p)), a = 1 is p(1-p). Per step the regime rows hold
the count and the summed p(1-p) only, so for 0 < a < 1 a step's value is approximated as
mixed * (signal / mixed)^a (every mixed group of the step at the step's mean p(1-p)); a = 0 and a = 1
are exact.

How far curves sit apart (`gap`): at matched accuracy, the ratio of the informative value a method
needed to GRPO's (seed-mean curves, running maximum, linear interpolation), the median over
accuracy levels in the top 80% of the range both curves reach; its seed spread is the same
statistic for each seed's curve against GRPO's seed-mean curve. A ratio of 1 is the law holding.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from pcbench.analysis.methods import GRPO

SE_CELL = "sample-efficiency"   # the `cell` of the sample-efficiency benchmark's rows
ALPHAS = (-0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0)  # the family, and past the count toward extreme groups
LEVEL_FLOOR = 0.2   # matched accuracy levels: the top (1 - LEVEL_FLOOR) of the shared range
N_LEVELS = 12


def cumulative_regime(regime: pd.DataFrame) -> pd.DataFrame:
    """Per run and training step: mixed_cum, signal_cum, rollouts_step (diff of cumulative rollouts where
    the rows lack it). regime: regime rows with cell, method, seed, step, mixed, cumulative_rollouts."""
    r = regime.sort_values(["cell", "method", "seed", "step"]).copy()
    if "signal" not in r:
        r["signal"] = np.nan
    keys = ["cell", "method", "seed"]
    r["mixed_cum"] = r.groupby(keys)["mixed"].cumsum()
    r["signal_cum"] = r.groupby(keys)["signal"].cumsum(skipna=False)
    if "rollouts_step" not in r or r["rollouts_step"].isna().all():
        r["rollouts_step"] = r.groupby(keys)["cumulative_rollouts"].diff().fillna(r["cumulative_rollouts"])
    return r


def law_frame(curves: pd.DataFrame, regime: pd.DataFrame) -> pd.DataFrame:
    """One row per main-seed run and evaluation: cell, method, seed, step, cumulative_rollouts, val_acc,
    mixed_cum, signal_cum (with_value adds the cumulative value of any a).

    curves / regime: rows of one or more benchmarks, each with a `cell` column (the sample-efficiency
    benchmark: SE_CELL). A/A runs (seed_set aa) have no regime rows and are left out; step 0 has
    nothing trained (zeros)."""
    cum = cumulative_regime(regime)
    main = curves[curves["seed_set"] == "main"][["cell", "method", "seed", "step", "cumulative_rollouts", "val_acc"]]
    out = main.merge(cum[["cell", "method", "seed", "step", "mixed_cum", "signal_cum"]],
                     on=["cell", "method", "seed", "step"], how="left")
    zero = out["step"] == 0
    out.loc[zero, ["mixed_cum", "signal_cum"]] = 0.0
    return out.dropna(subset=["mixed_cum"]).sort_values(["cell", "method", "seed", "step"]).reset_index(drop=True)


def step_value(mixed, signal, alpha: float):
    """Value of one step's trained groups under v_a: mixed * (signal/mixed)^a (exact at a = 0 and 1)."""
    mixed, signal = np.asarray(mixed, float), np.asarray(signal, float)
    if alpha == 0:
        return mixed
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(mixed > 0, signal / mixed, 0.0)
    return mixed * mean ** alpha


def with_value(frame: pd.DataFrame, regime: pd.DataFrame, alpha: float) -> pd.DataFrame:
    """frame (law_frame) plus `value`: cumulative v_a over the run's trained groups at each evaluation."""
    if alpha == 0:
        return frame.assign(value=frame["mixed_cum"])
    if alpha == 1:
        return frame.assign(value=frame["signal_cum"])
    r = cumulative_regime(regime)
    r["value"] = step_value(r["mixed"], r["signal"], alpha)
    r["value"] = r.groupby(["cell", "method", "seed"])["value"].cumsum(skipna=False)
    out = frame.merge(r[["cell", "method", "seed", "step", "value"]], on=["cell", "method", "seed", "step"], how="left")
    out.loc[out["step"] == 0, "value"] = 0.0
    return out


def seed_mean(frame: pd.DataFrame, x: str) -> pd.DataFrame:
    """Seed-mean curve per (cell, method) over the steps every seed evaluated: step, x, val_acc, seeds."""
    rows = []
    for (cell, method), g in frame.groupby(["cell", "method"], sort=True):
        n = g["seed"].nunique()
        m = g.groupby("step").agg(x=(x, "mean"), val_acc=("val_acc", "mean"), seeds=("seed", "nunique")).reset_index()
        m = m[m["seeds"] == n]
        rows.append(m.assign(cell=cell, method=method))
    cols = ["cell", "method", "step", "x", "val_acc", "seeds"]
    return pd.concat(rows, ignore_index=True)[cols] if rows else pd.DataFrame(columns=cols)


def first_reach(x, y, level: float) -> float:
    """x at which the running maximum of y first reaches level (linear between points); nan if never."""
    x, y = np.asarray(x, float), np.maximum.accumulate(np.asarray(y, float))
    above = np.nonzero(y >= level)[0]
    if not above.size:
        return math.nan
    i = int(above[0])
    if i == 0 or y[i] == y[i - 1]:
        return float(x[i])
    return float(x[i - 1] + (level - y[i - 1]) * (x[i] - x[i - 1]) / (y[i] - y[i - 1]))


def levels(ref_y, y, n: int = N_LEVELS, floor: float = LEVEL_FLOOR) -> np.ndarray:
    """Accuracy levels both curves reach: the top (1 - floor) of [max of the starts, min of the bests]."""
    lo, hi = max(ref_y[0], y[0]), min(np.max(ref_y), np.max(y))
    if not hi > lo:
        return np.array([])
    return np.linspace(lo + floor * (hi - lo), hi, n)


def log_gaps(ref_x, ref_y, x, y, n: int = N_LEVELS) -> np.ndarray:
    """log(x needed by the curve / x needed by the reference) at each matched accuracy level."""
    ref_y, y = np.asarray(ref_y, float), np.asarray(y, float)
    out = []
    for level in levels(ref_y, y, n):
        a, b = first_reach(x, y, level), first_reach(ref_x, ref_y, level)
        if a > 0 and b > 0:
            out.append(math.log(a / b))
    return np.array(out)


def gap(ref_x, ref_y, x, y) -> float:
    """exp(median log gap): how many times the reference's x a curve needs at matched accuracy (nan if
    the curves share no accuracy range)."""
    g = log_gaps(ref_x, ref_y, x, y)
    return float(math.exp(np.median(g))) if g.size else math.nan


def gap_table(frame: pd.DataFrame, x: str, base: str = GRPO) -> pd.DataFrame:
    """Per cell and method other than base: gap of the seed-mean curve to base's along x, the gap in
    absolute x at the median matched level, and the seed spread (each seed's curve vs base's mean)."""
    means = seed_mean(frame, x)
    rows = []
    for cell, cm in means.groupby("cell", sort=True):
        ref = cm[cm["method"] == base].sort_values("step")
        if ref.empty:
            continue
        for method, mm in cm[cm["method"] != base].groupby("method", sort=True):
            mm = mm.sort_values("step")
            lv = levels(ref["val_acc"].to_numpy(), mm["val_acc"].to_numpy())
            mid = float(np.median(lv)) if lv.size else math.nan
            diff = (first_reach(mm["x"], mm["val_acc"], mid) - first_reach(ref["x"], ref["val_acc"], mid)) if lv.size else math.nan
            per_seed = []
            for _, g in frame[(frame["cell"] == cell) & (frame["method"] == method)].groupby("seed"):
                g = g.sort_values("step")
                per_seed.append(gap(ref["x"], ref["val_acc"], g[x], g["val_acc"]))
            per_seed = np.array([v for v in per_seed if math.isfinite(v)])
            rows.append({"cell": cell, "method": method, "gap": gap(ref["x"], ref["val_acc"], mm["x"], mm["val_acc"]),
                         "matched_acc": mid, "gap_abs": diff, "seeds": int(per_seed.size),
                         "seed_min": float(per_seed.min()) if per_seed.size else math.nan,
                         "seed_max": float(per_seed.max()) if per_seed.size else math.nan,
                         "seed_log_sd": float(np.std(np.log(per_seed), ddof=1)) if per_seed.size > 1 else math.nan})
    return pd.DataFrame(rows, columns=["cell", "method", "gap", "matched_acc", "gap_abs", "seeds",
                                       "seed_min", "seed_max", "seed_log_sd"])


def rms_log_gap(table: pd.DataFrame) -> float:
    """Root mean square of log(gap) over a gap table's finite rows: 0 when every curve collapses."""
    g = np.log(table["gap"].to_numpy(float))
    g = g[np.isfinite(g)]
    return float(np.sqrt(np.mean(g ** 2))) if g.size else math.nan


def fit_alpha(frame: pd.DataFrame, regime: pd.DataFrame, alphas=ALPHAS) -> pd.DataFrame:
    """RMS log gap (and mean log gap, the signed bias) for each a of the family, on the cells whose
    regime rows carry the signal, with the cumulative-rollouts curve as the null (alpha = NaN)."""
    have = frame.groupby("cell")["signal_cum"].apply(lambda s: s.notna().all())
    cells = set(have[have].index)
    sub = frame[frame["cell"].isin(cells)]
    rows = []
    for a in alphas:
        t = gap_table(with_value(sub, regime[regime["cell"].isin(cells)], a), "value")
        lg = np.log(t["gap"].to_numpy(float))
        rows.append({"alpha": a, "rms_log_gap": rms_log_gap(t), "mean_log_gap": float(np.nanmean(lg)), "pairs": int(np.isfinite(lg).sum())})
    t = gap_table(sub, "cumulative_rollouts")
    lg = np.log(t["gap"].to_numpy(float))
    rows.append({"alpha": math.nan, "rms_log_gap": rms_log_gap(t), "mean_log_gap": float(np.nanmean(lg)), "pairs": int(np.isfinite(lg).sum())})
    return pd.DataFrame(rows)


TIE = 0.01  # a's whose RMS log gap is within 1% of the best fit equally well


def best_alpha(fit: pd.DataFrame, tie: float = TIE) -> float:
    """The a of the family with the smallest RMS log gap; among those within `tie` (relative) of it,
    the one nearest 0 (the count: exact from the regime rows, and the only one every benchmark logs)."""
    f = fit.dropna(subset=["alpha"])
    best = float(f["rms_log_gap"].min())
    near = f[f["rms_log_gap"] <= best * (1 + tie)]
    return float(near.loc[near["alpha"].abs().idxmin(), "alpha"])
