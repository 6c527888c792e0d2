"""Rollouts-to-target as survival data (lifelines), beside the percentile bootstrap, never instead.

A run's time is its cumulative rollouts at the first evaluation at or above the cell's target
(an event); a run that never gets there is right-censored at its last evaluation's cumulative
rollouts (the bootstrap instead counts it as inf). Per method: the Kaplan-Meier median with its
95% interval (lifelines' exponential-Greenwood bounds). Per comparison (base vs method): a
parametric accelerated-failure-time model, log T = b0 + b1 [method] + sigma e, fitted on the two
methods' runs; the acceleration factor exp(b1) multiplies the method's time, so the speedup over
the base is exp(-b1) with the Wald 95% interval exp(-b1 -+ 1.96 se). Weibull is reported, log-normal
beside it. Times are in thousands of rollouts (only ratios are reported, which do not depend on it).
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd

from pcbench.analysis.formats import finite_or_none
from pcbench.analysis.scoring import evals_at_target

Z = 1.959963984540054
SCALE = 1000.0


def durations(curves: pd.DataFrame, target: float) -> pd.DataFrame:
    """One row per run: method, seed_set, seed, time (rollouts at first crossing, else at the last
    evaluation), event (1 crossed, 0 censored). curves: one run per (method, seed_set, seed)."""
    rows = []
    for (method, seed_set, seed), g in curves.groupby(["method", "seed_set", "seed"], sort=True):
        hit = evals_at_target(g, target, "val_acc")
        last = float(g.sort_values("step")["cumulative_rollouts"].iloc[-1])
        t = float(hit["cumulative_rollouts"].iloc[0]) if len(hit) else last
        rows.append({"method": method, "seed_set": seed_set, "seed": int(seed), "time": t, "event": int(len(hit) > 0)})
    return pd.DataFrame(rows, columns=["method", "seed_set", "seed", "time", "event"])


def km_median(time, event) -> dict:
    """Kaplan-Meier median time with its 95% interval (None: not reached / unbounded)."""
    from lifelines import KaplanMeierFitter
    from lifelines.utils import median_survival_times

    time, event = np.asarray(time, float), np.asarray(event, int)
    if not time.size:
        return {"median": None, "low": None, "high": None}
    kmf = KaplanMeierFitter().fit(np.maximum(time, 1.0) / SCALE, event)
    ci = median_survival_times(kmf.confidence_interval_)
    return {"median": finite_or_none(kmf.median_survival_time_ * SCALE), "low": finite_or_none(ci.iloc[0, 0] * SCALE),
            "high": finite_or_none(ci.iloc[0, 1] * SCALE)}


def aft_speedup(base: pd.DataFrame, other: pd.DataFrame, model: str = "weibull") -> dict:
    """Speedup of `other` over `base` (rows with time, event) from an AFT model: exp(-b1) and its
    Wald 95% interval; None where the fit fails (e.g. no event at all)."""
    from lifelines import LogNormalAFTFitter, WeibullAFTFitter

    df = pd.concat([base.assign(x=0.0), other.assign(x=1.0)], ignore_index=True)[["time", "event", "x"]]
    df["time"] = np.maximum(df["time"].astype(float), 1.0) / SCALE
    empty = {"speedup": None, "low": None, "high": None, "model": model}
    if df["event"].sum() == 0 or len(df) < 3 or df["x"].nunique() < 2:
        return empty
    fitter = WeibullAFTFitter() if model == "weibull" else LogNormalAFTFitter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitter.fit(df, "time", "event")
        param = "lambda_" if model == "weibull" else "mu_"
        b, se = float(fitter.params_[(param, "x")]), float(fitter.standard_errors_[(param, "x")])
    except Exception:  # lifelines' ConvergenceError and singular Hessians: reported as no fit
        return empty
    ratios = wald_ratios(b, se)
    return {**ratios, "model": model} if ratios else empty


def wald_ratios(b: float, se: float) -> dict | None:
    """exp(-b) and its Wald 95% interval; None for a diverged fit (a non-finite coefficient, or one so
    large that exp overflows: seen when one arm of a tiny map reaches the target and the other never)."""
    if not (math.isfinite(b) and math.isfinite(se)) or abs(b) + Z * abs(se) > 700:
        return None
    return {"speedup": math.exp(-b), "low": math.exp(-b - Z * se), "high": math.exp(-b + Z * se)}


def compare(d: pd.DataFrame, base: tuple[str, str], other: tuple[str, str]) -> dict:
    """KM medians of both and the Weibull and log-normal AFT speedups of other over base.
    base / other: (method, seed_set)."""
    pick = lambda m, s: d[(d["method"] == m) & (d["seed_set"] == s)]  # noqa: E731
    b, o = pick(*base), pick(*other)
    kb, ko = km_median(b["time"], b["event"]), km_median(o["time"], o["event"])
    km_ratio = (kb["median"] / ko["median"]) if kb["median"] and ko["median"] else None
    return {"base_km": kb, "km": ko, "km_ratio": km_ratio, "weibull": aft_speedup(b, o, "weibull"),
            "lognormal": aft_speedup(b, o, "lognormal"), "events": int(o["event"].sum()), "runs": len(o)}
