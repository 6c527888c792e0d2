"""The probe criteria of issue 43 (pcbench/bench/probes.py) on hand-made curves: each number is the
one the definition gives, and a design just outside a bound is judged as missing it."""

import math

import numpy as np
import pandas as pd
import pytest

from pcbench.bench.probes import expected_regime, judge, load_plan, measure, thirds

CRIT = {"grpo_zero_variance": [0.55, 0.75], "pc_rounds_max": 1.2, "pc_rounds_last_third_max": 1.5,
        "epochs_at_target": [0.5, 2.0], "near_solved_max": 0.10}


def _curves():
    rows = []
    for seed in (0, 1):
        for step in range(0, 7):
            acc = 0.30 + 0.02 * step if step % 2 == 0 else np.nan
            rows.append(dict(design="d", method="grpo", seed=seed, step=step, val_acc=acc, rounds=1,
                             groups=16, all_correct=2, all_wrong=8, pilots=np.nan, pilots_in_band=np.nan,
                             pool_epochs=0.01 * step, cumulative_rollouts=512 * step))
            pc_acc = 0.30 + 0.05 * step if step % 2 == 0 else np.nan
            rounds = [1, 1, 1, 1, 2, 2][step - 1] if step else np.nan
            rows.append(dict(design="d", method="pilot_commit", seed=seed, step=step, val_acc=pc_acc, rounds=rounds,
                             groups=16, all_correct=0, all_wrong=0, pilots=48 * (rounds if step else 0),
                             pilots_in_band=16 * (rounds if step else 0), pool_epochs=0.2 * step,
                             cumulative_rollouts=900 * step))
    return pd.DataFrame(rows)


def test_measure_reads_the_definitions_off_the_curves():
    m = measure(_curves(), horizon=6, near=0.05)
    assert m["grpo_zero_variance"] == pytest.approx(10 / 16) and m["grpo_all_correct"] == pytest.approx(2 / 16)
    assert m["pc_rounds"] == pytest.approx(8 / 6)
    assert (m["pc_rounds_t1"], m["pc_rounds_t2"], m["pc_rounds_t3"]) == (1.0, 1.0, 2.0)
    assert m["pc_in_band_t3"] == pytest.approx(1 / 3)
    # GRPO's best seed mean is 0.42 at step 6; PC first reaches it at step 4 (0.50), 0.8 epochs drawn
    assert m["target"] == pytest.approx(0.42) and m["grpo_best_step"] == 6
    assert m["pc_epochs_at_target"] == [pytest.approx(0.8), pytest.approx(0.8)] and m["pc_epochs_median"] == pytest.approx(0.8)
    met = judge(m, CRIT)
    assert met == {"grpo_zero_variance": True, "pc_rounds": False, "pc_rounds_last_third": False,
                   "epochs_at_target": True, "near_solved": True}


def test_a_target_pc_never_reaches_is_censored_not_a_number():
    c = _curves()
    c.loc[c.method == "pilot_commit", "val_acc"] = c.loc[c.method == "pilot_commit", "val_acc"] * 0 + 0.1
    m = measure(c, horizon=6, near=None)
    assert m["pc_epochs_at_target"] == [None, None] and m["pc_epochs_median"] is None
    assert judge(m, CRIT)["epochs_at_target"] is None and judge(m, CRIT)["near_solved"] is None


def test_thirds_split_the_horizon_evenly():
    assert thirds(pd.Series(range(1, 31)), 30).value_counts().tolist() == [10, 10, 10]


def test_expected_regime_of_solved_never_and_mid_band_prompts():
    e = expected_regime(np.array([1.0, 0.0, 0.5]), n=32)
    assert e["grpo_all_correct"] == pytest.approx(1 / 3) and e["grpo_all_wrong"] == pytest.approx(1 / 3)
    # an 8-rollout pilot of p = 0.5 lands in [1/8, 3/4] (1..6 right) with 1 - (1 + 8 + 1) / 256
    assert e["pilot_in_band"] == pytest.approx((1 - 10 / 256) / 3)
    assert math.isclose(e["pc_rounds_now"], 1 / (3 * e["pilot_in_band"]))


def test_the_committed_plan_names_its_criteria_and_designs():
    spec = load_plan()
    assert spec["criteria"] == CRIT and {"ladder", "band"} <= set(spec["designs"])


def test_rescoring_without_the_run_folders_keeps_what_was_scored(tmp_path):
    """`probes score --runs DIR` where DIR lacks a design's runs (another machine, another folder)
    keeps that design's committed row instead of replacing it with 'not run'."""
    import json
    from pathlib import Path

    from pcbench.bench.probes import write

    committed = json.loads((Path(__file__).resolve().parents[2] / "results/bench/probes/probes.json").read_text())
    name = "ladder"
    spec = load_plan()
    spec["designs"] = {name: spec["designs"][name]}
    out = tmp_path / "probes"
    out.mkdir()
    (out / "probes.json").write_text(json.dumps({"criteria": spec["criteria"], "results": {name: committed["results"][name]},
                                                 "cards": {}}))
    results = write(spec, [name], [f"paths.results={tmp_path / 'no-runs'}"], out, with_cards=False)
    assert results[name] == committed["results"][name]
    assert "not run" not in (out / "probes.md").read_text()


def test_committed_probe_table_rerenders_from_its_json():
    """results/bench/probes/probes.md is exactly what the report renders from probes.json and the plan."""
    import json
    from pathlib import Path

    from pcbench.reports.probes import report_md

    folder = Path(__file__).resolve().parents[2] / "results/bench/probes"
    committed = json.loads((folder / "probes.json").read_text())
    text = report_md(load_plan(), committed["results"], committed["cards"])
    assert text == (folder / "probes.md").read_text()
