"""Scoring of the regime map: pure functions over its two tidy frames.

- curves: one row per run and evaluation (the columns of `curves.csv` plus `cell` and one column
  per grid knob); `method` grpo with `seed_set` aa are the A/A runs;
- regime: one row per run and training step (the regime card's columns plus `cell` and the knobs).

Per cell (docs/method.md#regime-map): the target is GRPO's best seed-mean val/acc over its main
seeds; rollouts-to-target of every run; Pilot-Commit vs GRPO, vs DAPO, and the A/A (GRPO main
vs GRPO on disjoint seeds), each a ratio of medians with a bootstrap interval; the regime
measured (GRPO's zero-variance share, PC's sampling rounds per step, the share of PC's fresh
pilots in the band, the pool epochs PC had drawn when it crossed); and the signal per rollout
of every run relative to GRPO's, `signal_per_rollout` = (learning signal per step / GRPO's) /
(rollouts per step / GRPO's), printed beside the measured speedup. (The count law's ratio,
pcbench.analysis.mixed_groups_prediction.law_ratios, is another quantity: mixed groups per rollout.) Runs stopped because their allocator starved are in both frames with
their steps up to the stop (curves column `stopped` says why): censored like any run that did not
reach the target, never dropped, and counted per method (`starved`). Nothing here trains or reads
run folders.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from pcbench.analysis.formats import finite_or_none
from pcbench.analysis.regime import group_share
from pcbench.analysis.methods import DAPO, GRPO, PC
from pcbench.analysis.scoring import N_BOOT, evals_at_target, ratio_record, seed_mean_curve
from pcbench.analysis.targets import aa_check


def grpo_mean_curve(curves: pd.DataFrame) -> pd.Series:
    """GRPO's seed-mean val/acc per step over its main seeds (steps every main seed evaluated)."""
    g = curves[(curves["method"] == GRPO) & (curves["seed_set"] == "main")]
    if g.empty:
        return pd.Series(dtype=float)
    return seed_mean_curve(g, "seed", "val_acc")


def cell_target(curves: pd.DataFrame) -> float | None:
    """GRPO's best seed-mean val/acc over its main seeds (the paper's target) in one cell."""
    mean = grpo_mean_curve(curves)
    return float(mean.max()) if len(mean) else None


def crossings(curves: pd.DataFrame, target: float) -> pd.DataFrame:
    """One row per run: method, seed_set, seed, rtt (cumulative rollouts at the first evaluation at
    or above target; inf when censored) and the step it crossed at (NaN when censored)."""
    rows = []
    for (method, seed_set, seed), g in curves.groupby(["method", "seed_set", "seed"], sort=True):
        hit = evals_at_target(g, target, "val_acc")
        rows.append({"method": method, "seed_set": seed_set, "seed": int(seed),
                     "rtt": float(hit["cumulative_rollouts"].iloc[0]) if len(hit) else math.inf,
                     "step": float(hit["step"].iloc[0]) if len(hit) else math.nan})
    return pd.DataFrame(rows, columns=["method", "seed_set", "seed", "rtt", "step"])


def seed_rtts(cross: pd.DataFrame, method: str, seed_set: str = "main") -> np.ndarray:
    return cross[(cross["method"] == method) & (cross["seed_set"] == seed_set)]["rtt"].to_numpy(float)


def aa_ratio(cross: pd.DataFrame, n_boot: int) -> dict:
    """The cell's A/A (targets.aa_check) from its crossings."""
    return aa_check(seed_rtts(cross, GRPO), seed_rtts(cross, GRPO, "aa"), n_boot)


def per_run_rates(regime: pd.DataFrame) -> pd.DataFrame:
    """One row per main run: mean learning signal (sum p(1-p) over trained groups) and rollouts per
    step over the whole run, and each as a ratio to GRPO's mean in the cell; signal_per_rollout = their quotient."""
    g = regime.groupby(["method", "seed"], sort=True).agg(signal=("signal", "mean"), rollouts=("rollouts_step", "mean"))
    g = g.reset_index()
    base = g[g["method"] == GRPO]
    if base.empty:
        return g.assign(signal_ratio=math.nan, rollouts_ratio=math.nan, signal_per_rollout=math.nan)
    s0, r0 = float(base["signal"].mean()), float(base["rollouts"].mean())
    g["signal_ratio"] = g["signal"] / s0 if s0 > 0 else math.nan
    g["rollouts_ratio"] = g["rollouts"] / r0 if r0 > 0 else math.nan
    g["signal_per_rollout"] = g["signal_ratio"] / g["rollouts_ratio"]
    return g


def _json_share(num: pd.Series, den: pd.Series) -> float | None:
    return finite_or_none(group_share(num, den))  # the regime card's share; None (JSON) where it is nan


def cell_regime(regime: pd.DataFrame, cross: pd.DataFrame) -> dict:
    """The regime one cell ran in: what the paper-matched criteria and the heatmap read."""
    grpo, pc = regime[regime["method"] == GRPO], regime[regime["method"] == PC]
    out = {"grpo_zero_variance": _json_share(grpo["all_correct"] + grpo["all_wrong"], grpo["groups"]),
           "grpo_all_correct": _json_share(grpo["all_correct"], grpo["groups"]),
           "grpo_all_wrong": _json_share(grpo["all_wrong"], grpo["groups"]),
           "pc_rounds_per_step": finite_or_none(pc["rounds"].mean()) if len(pc) else None,
           "pc_in_band": _json_share(pc["sampled_in_band"], pc["sampled"]) if len(pc) else None,
           "grpo_in_band": _json_share(grpo["sampled_in_band"], grpo["sampled"]) if len(grpo) else None}
    # pool epochs PC had drawn at its crossing step, median over its seeds (censored runs: at their end)
    epochs = []
    for _, c in cross[(cross["method"] == PC) & (cross["seed_set"] == "main")].iterrows():
        rows = pc[pc["seed"] == c["seed"]].sort_values("step")
        if rows.empty:
            continue
        at = rows[rows["step"] <= c["step"]] if math.isfinite(c["step"]) else rows
        epochs.append(float(at["pool_epochs"].iloc[-1]) if len(at) else math.nan)
    out["pc_epochs_at_target"] = finite_or_none(np.nanmedian(epochs)) if epochs and not np.all(np.isnan(epochs)) else None
    return out


def criteria_met(measured: dict, criteria: dict) -> dict[str, bool | None]:
    """The pre-registered criteria (grid `paper_matched.criteria`) on one cell's measured regime."""
    def within(v, lo, hi):
        return None if v is None else bool(lo <= v <= hi)
    zl, zh = criteria["grpo_zero_variance"]
    el, eh = criteria["epochs_at_target"]
    rounds, near = measured.get("pc_rounds_per_step"), measured.get("near_solved")
    met = {"grpo_zero_variance": within(measured.get("grpo_zero_variance"), zl, zh),
           "pc_rounds_per_step": None if rounds is None else bool(rounds <= criteria["pc_rounds_per_step_max"]),
           "epochs_at_target": within(measured.get("pc_epochs_at_target"), el, eh)}
    if "near_solved_max" in criteria:  # the pool card's near-solved share after the warm start (exact)
        met["near_solved"] = None if near is None else bool(near <= criteria["near_solved_max"])
    return met


def score_cell(curves: pd.DataFrame, regime: pd.DataFrame, n_boot: int = N_BOOT) -> dict:
    """Everything the report says about one cell, from its rows of the two frames."""
    target = cell_target(curves)
    if target is None:
        return {"target": None, "status": "no GRPO evaluations"}
    cross = crossings(curves, target)
    grpo = seed_rtts(cross, GRPO)
    aa = aa_ratio(cross, n_boot)
    rates = per_run_rates(regime)
    rec = {"target": target, "status": "scored", "aa": aa,
           "pc_vs_grpo": ratio_record(grpo, seed_rtts(cross, PC), n_boot),
           "pc_vs_dapo": ratio_record(seed_rtts(cross, DAPO), seed_rtts(cross, PC), n_boot),
           "dapo_vs_grpo": ratio_record(grpo, seed_rtts(cross, DAPO), n_boot),
           "grpo_reached": int(np.isfinite(grpo).sum()), "grpo_runs": int(grpo.size),
           "regime": cell_regime(regime, cross),
           **{key: {m: finite_or_none(rates.loc[rates["method"] == m, key].mean()) for m in (PC, DAPO)
                    if (rates["method"] == m).any()} for key in ("signal_per_rollout", "signal_ratio", "rollouts_ratio")},
           "per_run": json_rows(rates.merge(cross[cross["seed_set"] == "main"], on=["method", "seed"], how="left"))}
    rec["survival"] = survival_ratios(curves, target)
    starved = starved_runs(curves)
    if starved:  # absent when none starved, so cells scored before stops were recorded read the same
        rec["starved"] = starved
    return rec


def survival_ratios(curves: pd.DataFrame, target: float) -> dict[str, dict]:
    """The same comparisons as survival data (pcbench.analysis.survival: a censored run counts up to its
    last evaluation): the Weibull AFT speedup with its Wald 95% interval, beside the bootstrap's."""
    from pcbench.analysis.survival import aft_speedup, durations

    d = durations(curves, target)
    pick = lambda m, s="main": d[(d["method"] == m) & (d["seed_set"] == s)]  # noqa: E731
    pairs = {"pc_vs_grpo": (pick(GRPO), pick(PC)), "pc_vs_dapo": (pick(DAPO), pick(PC)),
             "aa": (pick(GRPO), pick(GRPO, "aa"))}
    return {k: aft_speedup(b, o, "weibull") for k, (b, o) in pairs.items()}


def starved_runs(curves: pd.DataFrame) -> dict[str, dict]:
    """{method: {starved, runs, reasons}} of the main runs stopped because their allocator starved
    (the curves' `stopped` column, absent or empty in rows written before it existed)."""
    if "stopped" not in curves:
        return {}
    main = curves[curves["seed_set"] == "main"]
    per_run = main.groupby(["method", "seed"], sort=True)["stopped"].first()  # one reason per run
    out = {}
    for method, reasons in per_run.groupby(level="method", sort=True):
        hit = [r for r in reasons if isinstance(r, str) and r]
        if hit:
            out[method] = {"starved": len(hit), "runs": int(len(reasons)), "reasons": sorted(hit)}
    return out


def json_rows(frame: pd.DataFrame) -> list[dict]:
    """Records with inf/nan as None (JSON has neither)."""
    out = []
    for rec in frame.to_dict(orient="records"):
        out.append({k: (finite_or_none(v) if isinstance(v, float) else v) for k, v in rec.items()})
    return out


def score_map(curves: pd.DataFrame, regime: pd.DataFrame, cells: list[str], n_boot: int = N_BOOT) -> dict[str, dict]:
    """{cell: score_cell(...)} for every grid cell, in grid order ("not run" where the frames have none)."""
    out = {}
    for cell in cells:
        c, r = curves[curves["cell"] == cell], regime[regime["cell"] == cell]
        out[cell] = score_cell(c, r, n_boot) if len(c) else {"target": None, "status": "not run"}
    return out
