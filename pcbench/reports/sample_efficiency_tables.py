"""Benchmark numbers from run folders: rollouts-to-target (pcbench.analysis.scoring), the ratio to
the oracle, wall-clock per step and per rollout, and the issue's goals checked against them.

All per-method numbers are medians over seeds of per-run values, like the scoring's. Every
interval comes from pcbench.analysis.scoring (one bootstrap, one set of rules).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from pcbench.analysis.formats import finite_or_none
from pcbench.analysis.methods import method_order
from pcbench.analysis.run_frames import ACC
from pcbench.analysis.scoring import (bootstrap_mean_ci, censored_median, per_run_table, resolve_targets, score,
                              median_ratio)

ORACLE = "oracle"
GOALS = {"pc_vs_grpo": 1.9, "pc_vs_dapo": 4.0, "bayes_vs_pc": 1.0, "best_vs_oracle": 1.15}


def rollouts_records(runs: pd.DataFrame, metrics: pd.DataFrame, seed: int, n_boot: int, target: float | None = None):
    """-> (records of pcbench.analysis.scoring.score + ratio_to_oracle fields, per-run table, warnings).
    target: None for GRPO's best (docs/method.md#rollouts-to-target), or a fixed val/acc fraction."""
    records, warnings = score(runs, metrics, target=target, baseline="grpo", seed=seed, n_boot=n_boot)
    targets = resolve_targets(metrics, target, "grpo")
    table = per_run_table(metrics, targets, runs)
    rtt = {m: g["rtt"].to_numpy(float) for m, g in table.groupby("method")}
    best = {m: float(g.groupby("step")[ACC].mean().max()) for m, g in metrics[metrics[ACC].notna()].groupby("method")}
    for rec in records:
        mine, oracle = rtt.get(rec["method"], np.array([])), rtt.get(ORACLE, np.array([]))
        point, low, high = median_ratio(mine, oracle, seed=seed, n_boot=n_boot) if oracle.size else (math.nan,) * 3
        rec.update(ratio_to_oracle=finite_or_none(point), ratio_to_oracle_ci_low=finite_or_none(low),
                   ratio_to_oracle_ci_high=finite_or_none(high), best_val_acc=best.get(rec["method"]))
    return records, table, warnings


def budget_accuracy(metrics: pd.DataFrame, records: list[dict], seed: int, n_boot: int) -> float | None:
    """Adds acc_at_budget (+ CI) to each record: the seed-mean val/acc of each run's last evaluation
    within GRPO's final rollout budget (median over GRPO seeds). -> that budget.

    Rollouts-to-target hinges on one noisy crossing of one threshold; accuracy at an equal budget
    uses every seed's level there, which is what "spending rollouts well" means at a fixed cost.
    Interval: pcbench.analysis.scoring.bootstrap_mean_ci, one fresh generator per method."""
    evals = metrics[metrics[ACC].notna()]
    grpo = metrics[metrics["method"] == "grpo"].groupby("path")["cumulative_rollouts"].max()
    budget = float(grpo.median()) if len(grpo) else None
    for rec in records:
        rec.update(acc_at_budget=None, acc_at_budget_ci_low=None, acc_at_budget_ci_high=None)
        if budget is None:
            continue
        mine = evals[(evals["method"] == rec["method"]) & (evals["cumulative_rollouts"] <= budget)]
        values = mine.sort_values("step").groupby("path")[ACC].last().to_numpy(float)
        if values.size:
            low, high = bootstrap_mean_ci(values, seed=seed, n_boot=n_boot)
            rec.update(acc_at_budget=float(values.mean()), acc_at_budget_ci_low=float(low),
                       acc_at_budget_ci_high=float(high))
    return budget


def _run_timing(lines: pd.DataFrame) -> dict:
    steps = lines[lines["step"] >= 1]
    # per-step times leave out eval steps (they also pay for validation) and step 1 (one-time
    # allocations and lazy imports); rollout counts and generation time use every step
    train = steps[steps[ACC].isna() & (steps["step"] > 1)] if ACC in steps else steps[steps["step"] > 1]
    rollouts = steps["rollouts/step"].sum()
    return {"steps": int(steps["step"].max()) if len(steps) else 0,
            "rollouts_per_step": float(steps["rollouts/step"].mean()),
            "step_s": float(train["time/step_s"].mean()),
            "generate_s": float(steps["time/generate_s"].mean()),
            "ms_per_rollout": 1e3 * float(train["time/step_s"].sum() / max(train["rollouts/step"].sum(), 1)),
            "gen_ms_per_rollout": 1e3 * float(steps["time/generate_s"].sum() / max(rollouts, 1)),
            "gen_calls_per_step": float(steps["alloc/rounds"].mean()) if "alloc/rounds" in steps else math.nan,
            "gen_tokens_per_s": float(steps["perf/gen_tokens_per_s"].mean()),
            "wall_s": float(lines["time/elapsed_s"].max())}


def timing_records(metrics: pd.DataFrame) -> list[dict]:
    """Per method: medians over its runs of the per-run timing means; step time relative to GRPO."""
    per_run = [{"method": lines["method"].iloc[0], **_run_timing(lines)} for _, lines in metrics.groupby("path")]
    if not per_run:
        return []
    frame = pd.DataFrame(per_run)
    out = []
    for method in method_order(frame["method"]):
        g = frame[frame["method"] == method]
        rec = {"method": method, "seeds": len(g)}
        rec.update({k: float(g[k].median()) for k in g.columns if k != "method"})
        out.append(rec)
    grpo = next((r["step_s"] for r in out if r["method"] == "grpo"), None)
    for rec in out:
        rec["step_s_vs_grpo"] = rec["step_s"] / grpo if grpo else None
    return out


def goals(records: list[dict], table: pd.DataFrame, seed: int, n_boot: int) -> dict:
    """The issue's targets, each with the measured value (None when censored or not run)."""
    by = {r["method"]: r for r in records}
    rtt = {m: g["rtt"].to_numpy(float) for m, g in table.groupby("method")}
    pc = by.get("pilot_commit", {})
    bayes_vs_pc = (median_ratio(rtt["pilot_commit"], rtt["pilot_commit_bayes"], seed=seed, n_boot=n_boot)[0]
                   if {"pilot_commit", "pilot_commit_bayes"} <= set(rtt) else math.nan)
    finite = {m: censored_median(v) for m, v in rtt.items() if m != ORACLE and math.isfinite(censored_median(v))}
    best = min(finite, key=finite.get) if finite else None
    measured = {"pc_vs_grpo": pc.get("speedup_vs_grpo"), "pc_vs_dapo": pc.get("speedup_vs_dapo"),
                "bayes_vs_pc": finite_or_none(bayes_vs_pc),
                "best_vs_oracle": by[best]["ratio_to_oracle"] if best else None}
    out = {}
    for key, want in GOALS.items():
        value = measured[key]
        met = None if value is None else (value <= want if key == "best_vs_oracle" else
                                          (value > want if key == "bayes_vs_pc" else value >= want))
        out[key] = {"goal": want, "measured": value, "met": met}
    out["best_vs_oracle"]["method"] = best
    return out
