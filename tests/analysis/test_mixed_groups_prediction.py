"""The law's predictor (pcbench.analysis.mixed_groups_prediction) on constructed inputs with known answers."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pcbench.analysis import mixed_groups_prediction as prediction

REPO = Path(__file__).resolve().parents[2]


def _regime(cell, method, mixed, rollouts, seeds=(0, 1), steps=4):
    return pd.DataFrame([{"cell": cell, "method": method, "seed": s, "step": t, "mixed": mixed, "rollouts_step": rollouts,
                          "cumulative_rollouts": t * rollouts} for s in seeds for t in range(1, steps + 1)])


def test_law_ratio_is_the_cost_per_mixed_group_ratio():
    r = pd.concat([_regime("c", "grpo", 8.0, 512), _regime("c", "pilot_commit", 16.0, 768)])
    t = prediction.law_ratios(r).set_index("method")
    assert t.loc["grpo", "law_ratio"] == 1.0
    assert t.loc["pilot_commit", "law_ratio"] == pytest.approx((16 / 768) / (8 / 512))


def test_law_ratio_from_cumulative_rollouts_when_rows_lack_rollouts_step():
    r = pd.concat([_regime("c", "grpo", 8.0, 512), _regime("c", "dapo", 16.0, 1536)]).drop(columns="rollouts_step")
    assert prediction.law_ratios(r).set_index("method").loc["dapo", "law_ratio"] == pytest.approx(2 / 3)


def test_loco_fits_on_the_other_cells_only():
    t = pd.DataFrame({"cell": ["a", "b", "c"], "method": ["pilot_commit"] * 3, "law_ratio": [1.0, 1.0, 1.0],
                      "measured": [1.2, 1.2, 2.0]})
    lo = prediction.loco(t).set_index("cell")
    assert lo.loc["a", "loco"] == pytest.approx(math.sqrt(1.2 * 2.0))
    assert lo.loc["c", "loco"] == pytest.approx(1.2)   # c's own 2.0 never enters its prediction
    assert prediction.calibration(t)["pilot_commit"] == pytest.approx((1.2 * 1.2 * 2.0) ** (1 / 3))


def test_measured_ratios_use_the_map_scoring():
    rows = []
    for method, seeds, cross in (("grpo", range(4), 4), ("pilot_commit", range(4), 2)):
        for s in seeds:
            for step in range(6):
                rows.append({"cell": "c", "method": method, "seed_set": "main", "seed": s, "step": step,
                             "cumulative_rollouts": 100 * step, "val_acc": 0.5 if step >= cross else 0.1})
    m = prediction.measured_ratios(pd.DataFrame(rows), n_boot=200).set_index("method")
    assert m.loc["pilot_commit", "measured"] == pytest.approx(2.0)
    assert m.loc["pilot_commit", "low"] == pytest.approx(2.0) and m.loc["pilot_commit", "reached"] == 4


def test_prerun_on_known_pass_rates():
    s = prediction.Setup(n=8, batch=4)
    # every prompt at p = 0 or 1: GRPO has no mixed group, nothing to predict
    out = prediction.prerun([0.0, 1.0], s, pilots=[2])
    assert out["grpo"]["zero_variance"] == pytest.approx(1.0) and out["grpo"]["all_correct"] == pytest.approx(0.5)
    # every prompt at p = 1/2: mixed share 1 - 2/256; DAPO one round of 3x candidates: 3x cost, ratio ~ 1/3 x 1/mixed
    out = prediction.prerun([0.5], s, pilots=[2])
    m = 1 - 2 * 0.5 ** 8
    assert out["grpo"]["mixed"] == pytest.approx(m)
    assert out["dapo"]["rounds"] == 1.0 and out["dapo"]["cost"] == 3 * 4 * 8
    assert out["dapo"]["ratio"] == pytest.approx((4 / 96) / (4 * m / 32))
    pc = out["pilot_commit"][2]
    assert pc["in_band"] == pytest.approx(0.5)            # a 2-rollout pilot: only 1/2 is in [1/8, 3/4]
    assert pc["rounds"] == 1.0 and pc["cost"] == 3 * 4 * 2 + 4 * 6
    assert pc["ratio"] == pytest.approx((4 / 48) / (4 * m / 32))  # committed groups all mixed (pilot 1 of 2)


def test_supply_scales_the_in_band_share_behind_the_rounds():
    s = prediction.Setup(n=8, batch=4)
    full, half = prediction.prerun([0.5], s, pilots=[2])["pilot_commit"][2], prediction.prerun([0.5], s, pilots=[2], supply=0.5)["pilot_commit"][2]
    assert half["in_band"] == full["in_band"] == pytest.approx(0.5) and half["in_band_run"] == pytest.approx(0.25)
    assert full["rounds"] == 1.0 and half["rounds"] == pytest.approx(4 / 3)
    assert half["ratio"] < full["ratio"]


def test_expected_rounds():
    s = prediction.Setup(candidates=3, max_rounds=10)
    assert prediction.expected_rounds(0.5, s) == 1.0
    assert prediction.expected_rounds(1 / 6, s) == pytest.approx(2.0)
    assert prediction.expected_rounds(0.0, s) == 10.0


def test_histogram_rates_midpoints():
    p, w = prediction.histogram_rates({"p=0": 0.5, "[3/8,5/8)": 0.5, "p=1": 0.0})
    assert list(p) == [0.0, 0.5] and list(w) == [0.5, 0.5]


def test_constants_are_the_committed_prerun_summary():
    summary = json.loads((REPO / "results" / "bench" / "prerun.json").read_text())["summary"]
    assert prediction.PRERUN_SUPPLY == pytest.approx(summary["supply"], abs=1e-4)
    for m in ("pilot_commit", "dapo"):
        assert prediction.PRERUN_CALIBRATION[m] == pytest.approx(summary[m]["calibration"], abs=1e-4)
        assert np.allclose(prediction.PRERUN_ERROR[m], (summary[m]["error_low"], summary[m]["error_high"]), atol=1e-4)
