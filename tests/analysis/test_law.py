"""The informative-group law (pcbench.analysis.law) on constructed frames with known answers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pcbench.analysis import law


def _runs(cell: str, method: str, mixed: float, signal: float, seeds=(0, 1), steps: int = 10, rollouts: int = 100,
          acc=lambda groups: 0.1 + groups / 1000) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Curves and regime rows of runs whose val/acc is `acc` of their cumulative mixed groups."""
    curves, regime = [], []
    for seed in seeds:
        for step in range(steps + 1):
            curves.append({"cell": cell, "method": method, "seed_set": "main", "seed": seed, "step": step,
                           "cumulative_rollouts": step * rollouts, "val_acc": acc(step * mixed)})
            if step:
                regime.append({"cell": cell, "method": method, "seed": seed, "step": step, "mixed": mixed,
                               "signal": signal, "rollouts_step": rollouts, "cumulative_rollouts": step * rollouts})
    return pd.DataFrame(curves), pd.DataFrame(regime)


def _cell(cell="c", dapo_mixed=16.0, dapo_rollouts=300):
    parts = [_runs(cell, "grpo", 8.0, 1.0), _runs(cell, "dapo", dapo_mixed, 3.0, rollouts=dapo_rollouts)]
    return pd.concat([p[0] for p in parts], ignore_index=True), pd.concat([p[1] for p in parts], ignore_index=True)


def test_law_frame_accumulates_mixed_groups_and_signal():
    curves, regime = _cell()
    frame = law.law_frame(curves, regime)
    g = frame[(frame["method"] == "dapo") & (frame["seed"] == 0)].set_index("step")
    assert g.loc[0, "mixed_cum"] == 0 and g.loc[3, "mixed_cum"] == 48 and g.loc[3, "signal_cum"] == pytest.approx(9.0)


def test_aa_runs_are_left_out():
    curves, regime = _cell()
    aa = curves[curves["method"] == "grpo"].assign(seed_set="aa", seed=lambda d: d["seed"] + 8)
    frame = law.law_frame(pd.concat([curves, aa]), regime)
    assert set(frame["seed"]) == {0, 1}


def test_gap_is_one_when_the_law_holds_and_the_rollout_gap_is_the_cost_ratio():
    curves, regime = _cell()
    frame = law.law_frame(curves, regime)
    groups = law.gap_table(frame, "mixed_cum")
    assert groups["gap"].iloc[0] == pytest.approx(1.0, abs=1e-9)
    assert groups["seed_min"].iloc[0] == pytest.approx(1.0) and groups["seed_max"].iloc[0] == pytest.approx(1.0)
    rollouts = law.gap_table(frame, "cumulative_rollouts")
    # DAPO: 16 groups per 300 rollouts, GRPO 8 per 100: it needs 1.5x GRPO's rollouts at matched accuracy
    assert rollouts["gap"].iloc[0] == pytest.approx(1.5, rel=1e-6)


def test_gap_of_a_curve_that_needs_twice_the_groups():
    x = np.arange(0, 200, 10.0)
    y = 1 - np.exp(-x / 40)
    assert law.gap(x, y, x, 1 - np.exp(-x / 80)) == pytest.approx(2.0, rel=1e-2)
    assert math.isnan(law.gap(x, y, x, np.zeros_like(x)))  # no shared accuracy range


def test_first_reach_interpolates_on_the_running_maximum():
    assert law.first_reach([0, 10, 20], [0.0, 0.5, 0.4], 0.25) == pytest.approx(5.0)
    assert law.first_reach([0, 10, 20], [0.0, 0.5, 0.4], 0.5) == pytest.approx(10.0)
    assert math.isnan(law.first_reach([0, 10], [0.0, 0.1], 0.5))


def test_step_value_family_is_exact_at_its_ends():
    assert law.step_value([4.0], [1.0], 0.0)[0] == 4.0
    assert law.step_value([4.0], [1.0], 1.0)[0] == pytest.approx(1.0)
    assert law.step_value([4.0], [1.0], 0.5)[0] == pytest.approx(4 * 0.25 ** 0.5)
    assert law.step_value([0.0], [0.0], 0.5)[0] == 0.0


def test_fit_picks_the_value_that_collapses_the_curves():
    # accuracy is a function of cumulative signal (a = 1): DAPO's groups carry 3x GRPO's p(1-p) each
    acc = lambda s: 0.1 + s / 100  # noqa: E731  (linear: interpolation is exact)
    curves, regime = [], []
    for method, mixed, signal in (("grpo", 8.0, 1.0), ("dapo", 8.0, 3.0)):
        c, r = [], []
        for seed in (0, 1):
            for step in range(11):
                c.append({"cell": "c", "method": method, "seed_set": "main", "seed": seed, "step": step,
                          "cumulative_rollouts": 100 * step, "val_acc": acc(step * signal)})
                if step:
                    r.append({"cell": "c", "method": method, "seed": seed, "step": step, "mixed": mixed,
                              "signal": signal, "rollouts_step": 100, "cumulative_rollouts": 100 * step})
        curves += c
        regime += r
    curves, regime = pd.DataFrame(curves), pd.DataFrame(regime)
    fit = law.fit_alpha(law.law_frame(curves, regime), regime)
    assert law.best_alpha(fit) == 1.0
    assert fit.loc[fit["alpha"] == 1.0, "rms_log_gap"].iloc[0] == pytest.approx(0.0, abs=1e-9)


def test_best_alpha_prefers_the_count_within_the_tie():
    fit = pd.DataFrame({"alpha": [-0.25, 0.0, 0.5, math.nan], "rms_log_gap": [0.2199, 0.2202, 0.3, 0.5]})
    assert law.best_alpha(fit) == 0.0
    fit.loc[0, "rms_log_gap"] = 0.1
    assert law.best_alpha(fit) == -0.25
