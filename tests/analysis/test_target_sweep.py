"""The exploratory re-scoring of a map cell at lower targets (pcbench/reports/regime_map_by_target.py)."""

import pandas as pd
import pytest

from pcbench.analysis.map_scoring import cell_target
from pcbench.reports.regime_map_by_target import by_target


def _curves() -> pd.DataFrame:
    # val/acc per step: GRPO 0.1 * step at 100 rollouts a step (main seeds 0-3, A/A seeds 4-7),
    # Pilot-Commit 0.2 * step at 150 a step, DAPO GRPO's curve at 300 a step; steps 0-5
    rows = []
    for method, seed_set, seeds, slope, per_step in (("grpo", "main", range(4), 0.1, 100), ("grpo", "aa", range(4, 8), 0.1, 100),
                                                     ("pilot_commit", "main", range(4), 0.2, 150),
                                                     ("dapo", "main", range(4), 0.1, 300)):
        rows += [{"method": method, "seed_set": seed_set, "seed": s, "step": t, "cumulative_rollouts": per_step * t,
                  "val_acc": slope * t} for s in seeds for t in range(6)]
    return pd.DataFrame(rows)


def test_fraction_one_is_the_registered_target_and_lower_targets_come_earlier():
    curves = _curves()
    rows = {r["fraction"]: r for r in by_target(curves, n_boot=200, fractions=(0.5, 1.0))}
    assert rows[1.0]["target"] == cell_target(curves) == pytest.approx(0.5)
    assert rows[0.5]["target"] == pytest.approx(0.25)
    # 0.25: GRPO crosses at step 3 (300 rollouts), PC at step 2 (300), DAPO at step 3 (900)
    assert rows[0.5]["pc_vs_grpo"]["ratio"] == pytest.approx(1.0)
    assert rows[0.5]["pc_vs_dapo"]["ratio"] == pytest.approx(3.0)
    # 0.5: GRPO at step 5 (500), PC at step 3 (450), DAPO at step 5 (1,500)
    assert rows[1.0]["pc_vs_grpo"]["ratio"] == pytest.approx(500 / 450)
    assert rows[1.0]["pc_vs_dapo"]["ratio"] == pytest.approx(1500 / 450)
    assert all(r["aa"]["ratio"] == pytest.approx(1.0) and r["aa"]["resolves"] for r in rows.values())


def test_a_cell_without_grpo_curves_has_no_rows():
    curves = _curves()
    assert by_target(curves[curves["method"] != "grpo"], n_boot=10) == []
