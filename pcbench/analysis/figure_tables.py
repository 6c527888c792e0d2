"""The tables behind the figures (pure functions of the metrics frame).

Each `*_table` returns exactly what analysis/figures.py draws, in the drawn units, so the CSV
saved beside a figure is the figure. Seeds are aggregated per (model, data, method, step):
mean, with min and max over seeds as the band, and `n_seeds` the number of seeds at that step
(later steps of a short seed are averaged over fewer seeds).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from pcbench.analysis.run_frames import ACC, eval_rows
from pcbench.analysis.methods import PC, method_order
from pcbench.analysis.scoring import GROUP, TOL

SET_ACC = re.compile(r"^val/([^/]+)/acc$")
KINDS = ("pilot", "commit", "plain")
PC_STATES = ("kept", "too_easy", "too_hard", "evicted", "buffer_size", "staleness_mean")
CURVE_COLUMNS = ["model", "data", "method", "series", "step", "x", "y", "y_low", "y_high", "n_seeds", "x_unit"]


def rollout_unit(max_value: float) -> tuple[float, str]:
    """(divisor, label) for rollout counts: M from 1e6 up, K from 1e3 up, else raw (so no crossing reads 0.0M)."""
    if max_value >= 1e6:
        return 1e6, "M"
    if max_value >= 1e3:
        return 1e3, "K"
    return 1.0, ""


def time_unit(max_seconds: float) -> tuple[float, str]:
    """(divisor, label) for elapsed seconds: h from 2 h up, min from 2 min up, else s."""
    if max_seconds >= 7200:
        return 3600.0, "h"
    if max_seconds >= 120:
        return 60.0, "min"
    return 1.0, "s"


def seed_band(rows: pd.DataFrame, x_col: str, y_col: str, x_div: float = 1.0, y_mul: float = 1.0) -> pd.DataFrame:
    """Per step: x (mean over seeds of x_col / x_div), y mean/min/max of y_col * y_mul, n_seeds."""
    rows = rows.dropna(subset=[x_col, y_col])
    grouped = rows.groupby("step", sort=True)
    out = pd.DataFrame({"x": grouped[x_col].mean() / x_div, "y": grouped[y_col].mean() * y_mul,
                        "y_low": grouped[y_col].min() * y_mul, "y_high": grouped[y_col].max() * y_mul,
                        "n_seeds": grouped["path"].nunique()})
    return out.reset_index()


def _groups(df: pd.DataFrame):
    return df.groupby(GROUP, sort=True) if len(df) else []


def _method_sorted(df: pd.DataFrame):
    for method in method_order(df["method"].unique()):
        yield method, df[df["method"] == method]


def first_crossing(curve: pd.DataFrame, target_pct: float) -> pd.DataFrame:
    """The first row of a seed-mean curve (sorted by step) with y >= target_pct (empty if none)."""
    hit = curve[curve["y"] >= target_pct - 100 * TOL]
    return hit.head(1)


def acc_curve_table(metrics: pd.DataFrame, targets: dict) -> pd.DataFrame:
    """fig1: per group and method the seed-mean val/acc (%) vs cumulative rollouts (unit per group),
    plus series "target" (y only) and "crossing" (first point of the mean curve at/above target)."""
    parts = []
    for (model, data), group in _groups(eval_rows(metrics)):
        div, unit = rollout_unit(group["cumulative_rollouts"].max())
        target = targets.get((model, data))
        ident = {"model": model, "data": data, "x_unit": unit}
        for method, rows in _method_sorted(group):
            curve = seed_band(rows, "cumulative_rollouts", ACC, div, 100.0).assign(method=method, **ident)
            parts.append(curve.assign(series="curve"))
            if target is not None:
                parts.append(first_crossing(curve, 100 * target).assign(series="crossing"))
        if target is not None:
            parts.append(pd.DataFrame([{"series": "target", "y": 100 * target, "method": "", **ident}]))
    return _finish(parts, CURVE_COLUMNS)


def _finish(parts: list[pd.DataFrame], columns: list[str]) -> pd.DataFrame:
    parts = [p for p in parts if len(p)]
    if not parts:
        return pd.DataFrame(columns=columns)
    table = pd.concat(parts, ignore_index=True).reindex(columns=columns)
    for col in ("step", "n_seeds"):
        if col in table:
            table[col] = table[col].astype("Int64")
    return table


def val_sets(metrics: pd.DataFrame) -> list[str]:
    return sorted(m.group(1) for c in metrics.columns if (m := SET_ACC.match(c)))


def per_set_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """per_set_acc: per group, validation set and method, seed-mean accuracy (%) vs rollouts."""
    parts = []
    for (model, data), group in _groups(eval_rows(metrics)):
        div, unit = rollout_unit(group["cumulative_rollouts"].max())
        for name in val_sets(group):
            for method, rows in _method_sorted(group):
                curve = seed_band(rows, "cumulative_rollouts", f"val/{name}/acc", div, 100.0)
                parts.append(curve.assign(model=model, data=data, set=name, method=method, x_unit=unit))
    columns = ["model", "data", "set", "method", "step", "x", "y", "y_low", "y_high", "n_seeds", "x_unit"]
    return _finish(parts, columns)


def rollouts_by_kind_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """rollouts_by_kind: per group, method and training step the seed-mean rollouts of each kind
    (pilot, commit, plain stack to rollouts/step) and discarded (a subset, drawn as an overlay)."""
    cols = [f"rollouts/{k}" for k in (*KINDS, "discarded")]
    train = metrics[metrics["step"] >= 1] if len(metrics) else metrics
    parts = []
    for (model, data), group in _groups(train.dropna(subset=[c for c in cols if c in train])):
        present = [c for c in cols if c in group]
        means = group.groupby(["method", "step"], sort=True)[present].mean()
        div, unit = rollout_unit(means[[c for c in present if c != "rollouts/discarded"]].sum(axis=1).max())
        table = (means / div).rename(columns=lambda c: c.split("/", 1)[1]).reset_index()
        table["n_seeds"] = group.groupby(["method", "step"], sort=True)["path"].nunique().to_numpy()
        parts.append(table.assign(model=model, data=data, y_unit=unit))
    columns = ["model", "data", "method", "step", *KINDS, "discarded", "n_seeds", "y_unit"]
    return _finish(parts, columns)


def pc_states_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """pc_prompt_states: Pilot-Commit's alloc/* counters per group and step, mean over seeds."""
    columns = ["model", "data", "step", *PC_STATES, "n_seeds"]
    rows = metrics[(metrics["method"] == PC) & (metrics["step"] >= 1)] if len(metrics) else metrics
    present = [f"alloc/{s}" for s in PC_STATES if f"alloc/{s}" in rows]
    if rows.empty or not present:
        return pd.DataFrame(columns=columns)
    grouped = rows.groupby([*GROUP, "step"], sort=True)
    table = grouped[present].mean().rename(columns=lambda c: c.split("/", 1)[1])
    table["n_seeds"] = grouped["path"].nunique()
    return table.reset_index().reindex(columns=columns)


def wallclock_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """wallclock: panel "acc_vs_time" (seed-mean val/acc % vs mean time/elapsed_s, in x_unit;
    step 0, before training, is at 0 when it carries no time) and panel "step_time" (y = median
    over seeds of each run's median time/step_s, in seconds)."""
    columns = ["panel", "model", "data", "method", "step", "x", "y", "y_low", "y_high", "n_seeds", "x_unit"]
    if "time/elapsed_s" not in metrics or "time/step_s" not in metrics:
        return pd.DataFrame(columns=columns)
    evals = eval_rows(metrics).copy()
    evals.loc[(evals["step"] == 0) & evals["time/elapsed_s"].isna(), "time/elapsed_s"] = 0.0
    parts = []
    for (model, data), group in _groups(evals):
        div, unit = time_unit(group["time/elapsed_s"].max())
        for method, rows in _method_sorted(group):
            curve = seed_band(rows, "time/elapsed_s", ACC, div, 100.0)
            parts.append(curve.assign(panel="acc_vs_time", model=model, data=data, method=method, x_unit=unit))
    for (model, data), group in _groups(metrics.dropna(subset=["time/step_s"])):
        for method, rows in _method_sorted(group):
            per_run = rows.groupby("path")["time/step_s"].median()
            parts.append(pd.DataFrame([{"panel": "step_time", "model": model, "data": data, "method": method,
                                        "y": float(np.median(per_run)), "n_seeds": len(per_run), "x_unit": "s"}]))
    return _finish(parts, columns)
