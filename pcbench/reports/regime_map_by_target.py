"""How a map cell's verdicts move with the target: an exploratory re-scoring, never pre-registered.

A cell's registered target is GRPO's best seed-mean val/acc (map_scoring.cell_target): the top of
GRPO's curve, where it is flattest, so a small float difference moves a run's crossing by several
evaluations and the A/A scatters most there. Here the same runs are scored at targets part of the
way up GRPO's seed-mean curve, from its value at the first evaluation (fraction 0) to that peak
(fraction 1, the registered target): which target would have resolved the A/A, and whether the
PC-vs-GRPO picture depends on it. It informs the next registration; the report labels it so.
"""

from __future__ import annotations

import pandas as pd

from pcbench.analysis.map_scoring import aa_ratio, crossings, grpo_mean_curve, seed_rtts
from pcbench.analysis.scoring import ratio_record
from pcbench.analysis.methods import DAPO, GRPO, PC

FRACTIONS = (0.5, 0.75, 0.9, 1.0)


def by_target(curves: pd.DataFrame, n_boot: int, fractions=FRACTIONS) -> list[dict]:
    """One row per fraction: the target, the A/A, PC vs GRPO and PC vs DAPO (ratio of median
    rollouts-to-target, bootstrap interval) with the cell's own runs."""
    mean = grpo_mean_curve(curves)
    if mean.empty:
        return []
    start, peak = float(mean.iloc[0]), float(mean.max())
    rows = []
    for f in fractions:
        target = peak if f == 1.0 else start + f * (peak - start)  # f = 1 is exactly cell_target's value
        cross = crossings(curves, target)
        grpo = seed_rtts(cross, GRPO)
        rows.append({"fraction": f, "target": target, "aa": aa_ratio(cross, n_boot),
                     "pc_vs_grpo": ratio_record(grpo, seed_rtts(cross, PC), n_boot),
                     "pc_vs_dapo": ratio_record(seed_rtts(cross, DAPO), seed_rtts(cross, PC), n_boot)})
    return rows
