"""Targets, the A/A noise floor, and the raw curves of a benchmark.

Two targets are scored, both from GRPO's seed-mean val/acc on the main seeds:
- `paper`: the best over the whole horizon (docs/method.md#rollouts-to-target). When GRPO is still improving at the
  horizon its best is its last evaluation, and about half of GRPO's own seeds end below it:
  they are censored by construction, not because they are slow.
- `reference`: the best over the first REF_FRACTION of the steps (the reference budget);
  runs then have the remaining third of the horizon to reach it, so a seed that is a little
  slower than the mean still crosses. This is fixed before any result is seen and is the same
  for every method; it is reported next to the paper's, never instead of it.

A/A: GRPO on a second, disjoint seed set, scored against the same target exactly like any
other method. Its rollouts-to-target ratio to GRPO's main seeds (bootstrap over seeds) is the
noise floor: a method whose interval lies inside it is not distinguishable from GRPO.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from pcbench.analysis.formats import finite_or_none
from pcbench.analysis.runs import ACC
from pcbench.analysis.scoring import N_BOOT, rollouts_to_target, seed_mean_curve, speedup

REF_FRACTION = 2 / 3
AA = "grpo_aa"  # method name the A/A runs are scored under (their folders say grpo)
AA_BAND = (0.8, 1.25)


def grpo_targets(metrics: pd.DataFrame, baseline: str = "grpo") -> dict[str, float | None]:
    """{"paper": best seed-mean val/acc over all steps, "reference": best over the first REF_FRACTION}."""
    evals = metrics[(metrics["method"] == baseline) & metrics[ACC].notna()]
    if evals.empty:
        return {"paper": None, "reference": None}
    mean = seed_mean_curve(evals, "path")
    horizon = float(metrics.loc[metrics["method"] == baseline, "step"].max())
    early = mean[mean.index <= REF_FRACTION * horizon]
    return {"paper": float(mean.max()), "reference": float(early.max()) if len(early) else None}


def rtts(metrics: pd.DataFrame, method: str, target: float) -> np.ndarray:
    """(seeds,) rollouts-to-target of each run of `method` (inf when censored)."""
    evals = metrics[(metrics["method"] == method) & metrics[ACC].notna()]
    return np.array([rollouts_to_target(g, target) for _, g in evals.groupby("path")], dtype=float)


def aa_record(metrics: pd.DataFrame, target: float | None, seed: int = 0, n_boot: int = N_BOOT) -> dict | None:
    """GRPO (main seeds) vs GRPO (A/A seeds): median rtt of each, ratio main/aa with a bootstrap CI."""
    if target is None or not (metrics["method"] == AA).any():
        return None
    main, other = rtts(metrics, "grpo", target), rtts(metrics, AA, target)
    point, low, high = speedup(main, other, seed=seed, n_boot=n_boot)
    inside = (math.isfinite(low) and math.isfinite(high) and AA_BAND[0] <= low and high <= AA_BAND[1])
    return {"target": target, "grpo_rtt": main.tolist(), "aa_rtt": other.tolist(),
            "grpo_reached": int(np.isfinite(main).sum()), "aa_reached": int(np.isfinite(other).sum()),
            "ratio": finite_or_none(point), "ci_low": finite_or_none(low), "ci_high": finite_or_none(high) if math.isfinite(high) else None,
            "ci_high_inf": bool(high == math.inf), "within_band": bool(inside)}


def curves_table(metrics: pd.DataFrame) -> pd.DataFrame:
    """One row per run and evaluation: method, seed, step, cumulative_rollouts, val_acc, val_acc_se, ...
    (per-set and ood accuracies, elapsed seconds); `seed_set` says main or aa."""
    evals = metrics[metrics[ACC].notna()].copy()
    extra = sorted(c for c in evals.columns if (c.startswith("val/") or c.startswith("ood/")) and c != ACC
                   and evals[c].notna().any())
    out = pd.DataFrame({"method": evals["method"].replace({AA: "grpo"}),
                        "seed_set": np.where(evals["method"] == AA, "aa", "main"), "seed": evals["seed"],
                        "step": evals["step"], "cumulative_rollouts": evals["cumulative_rollouts"],
                        "val_acc": evals[ACC]})
    for c in extra:
        out[c.replace("/", "_")] = evals[c]
    if "time/elapsed_s" in evals:
        out["elapsed_s"] = evals["time/elapsed_s"]
    if "val_acc_se" not in out:
        out["val_acc_se"] = np.nan
    return out.sort_values(["method", "seed_set", "seed", "step"]).reset_index(drop=True)
