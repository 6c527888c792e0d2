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
noise floor: a method whose interval lies inside it is not distinguishable from GRPO. `aa_check`
is its one definition and its one JSON layout (the sample-efficiency report and every regime-map
cell write it); `aa_from_json` also reads the layout reports written before it
(`ci_low`/`ci_high`/`within_band`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pcbench.analysis.run_frames import ACC
from pcbench.analysis.scoring import N_BOOT, ratio_record, rollouts_to_target, seed_mean_curve

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


def aa_check(grpo_rtts, aa_rtts, n_boot: int = N_BOOT, seed: int = 0) -> dict:
    """The A/A: median rollouts-to-target of GRPO's main seeds over its A/A seeds, with a bootstrap
    interval. -> {ratio, low, high, high_inf, reached, runs} (scoring.ratio_record; reached and runs
    count the A/A seeds) and `resolves`: the interval lies inside AA_BAND."""
    aa = ratio_record(grpo_rtts, aa_rtts, n_boot, seed)
    aa["resolves"] = bool(aa["low"] is not None and aa["high"] is not None
                          and AA_BAND[0] <= aa["low"] and aa["high"] <= AA_BAND[1])
    return aa


def aa_record(metrics: pd.DataFrame, target: float | None, seed: int = 0, n_boot: int = N_BOOT) -> dict | None:
    """The A/A of a metrics frame (A/A runs under method AA) at `target`: aa_check's fields plus the
    target and every seed's rollouts-to-target (`grpo_rtt`, `aa_rtt`; inf when censored)."""
    if target is None or not (metrics["method"] == AA).any():
        return None
    main, other = rtts(metrics, "grpo", target), rtts(metrics, AA, target)
    return {"target": target, "grpo_rtt": main.tolist(), "aa_rtt": other.tolist(),
            **aa_check(main, other, n_boot, seed)}


LEGACY_AA_KEYS = {"ci_low": "low", "ci_high": "high", "ci_high_inf": "high_inf", "within_band": "resolves",
                  "aa_reached": "reached"}


def aa_from_json(rec: dict | None) -> dict | None:
    """An A/A record as written in a report's JSON, in aa_check's layout. Sample-efficiency reports
    written before aa_check (results/bench/engine_speed/*/sample_efficiency.json) name the interval
    `ci_low`/`ci_high`/`ci_high_inf`, the verdict `within_band` and count `aa_reached`/`grpo_reached`."""
    if rec is None or "within_band" not in rec:
        return rec
    out = {LEGACY_AA_KEYS.get(k, k): v for k, v in rec.items() if k != "grpo_reached"}
    out["runs"] = len(rec["aa_rtt"])
    return out


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
