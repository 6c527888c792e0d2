"""pcbench.analysis.scoring: hand-computed targets, crossings, censored medians, intervals, speedups.

The fixture numbers are designed in tests/fixtures/make_runs.py; README.md there has the table.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pcbench.analysis.run_frames import load_runs
from pcbench.analysis.scoring import (bootstrap_median_ci, censored_median, resolve_targets, rollouts_to_target,
                              score, median_ratio, target_accuracy)

INF = math.inf
A, B, C = ("toy-1.5b", "toymath"), ("toy-4b", "toypolaris"), ("toy-8b", "toymath")


def evals(accs: dict[int, float], per_step: int = 1000) -> pd.DataFrame:
    return pd.DataFrame({"step": list(accs), "cumulative_rollouts": [s * per_step for s in accs],
                         "val/acc": list(accs.values())})


# --- rollouts-to-target of one run -------------------------------------------------------------

def test_first_eval_at_or_above_no_interpolation():
    run = evals({0: 0.1, 2: 0.3, 4: 0.5, 6: 0.45})
    assert rollouts_to_target(run, 0.4) == 4000       # not 3000 (no interpolation between evals)
    assert rollouts_to_target(run, 0.3) == 2000       # equal counts as reached
    assert rollouts_to_target(run, 0.1) == 0
    assert rollouts_to_target(run, 0.51) == INF       # censored


def test_order_is_by_step_not_by_row():
    run = evals({4: 0.5, 0: 0.1, 2: 0.45})
    assert rollouts_to_target(run, 0.44) == 2000


def test_float_round_off_of_the_target_does_not_censor():
    assert 0.1 + 0.2 > 0.3
    assert rollouts_to_target(evals({0: 0.0, 2: 0.3}), 0.1 + 0.2) == 2000


# --- censored medians and intervals -----------------------------------------------------------

@pytest.mark.parametrize("values, expected", [([1, INF, INF], INF), ([1, 2, INF], 2), ([1, INF], INF),
                                              ([1, 3], 2), ([INF, INF], INF), ([7], 7)])
def test_censored_median(values, expected):
    assert censored_median(values) == expected


def test_bootstrap_interval_two_seeds_spans_them():
    assert bootstrap_median_ci([4e6, 6e6], seed=0) == (4e6, 6e6)
    assert bootstrap_median_ci([6144, INF, INF], seed=0) == (6144, INF)   # 7/27 of resamples finite
    assert bootstrap_median_ci([INF, INF], seed=0) == (INF, INF)


def test_bootstrap_is_seeded():
    values = np.arange(1.0, 12.0)
    assert bootstrap_median_ci(values, seed=3, n_boot=50) == bootstrap_median_ci(values, seed=3, n_boot=50)
    draws = {bootstrap_median_ci(values, seed=s, n_boot=50) for s in range(10)}
    assert len(draws) > 1


def test_median_ratio_point_and_interval():
    point, low, high = median_ratio([4e6, 6e6], [3e6, 6e6], seed=0)
    assert point == pytest.approx(5 / 4.5)
    assert (low, high) == pytest.approx((4 / 6, 6 / 3))      # extremes each have probability 1/16
    assert all(math.isnan(v) for v in median_ratio([INF, INF], [1, 2]))   # comparator did not reach
    assert all(math.isnan(v) for v in median_ratio([1, 2], [5, INF]))     # method did not reach
    assert all(math.isnan(v) for v in median_ratio([1, 2], [0, 0]))


# --- targets ----------------------------------------------------------------------------------

def test_fixture_targets(loaded):
    _, metrics, _ = loaded
    targets = target_accuracy(metrics)
    assert set(targets) == {A, B}                       # C has no GRPO runs
    assert targets[A] == pytest.approx(0.46)            # mean(.44, .48) at step 6
    assert targets[B] == pytest.approx(0.36)            # mean(.38, .34) at step 4
    assert target_accuracy(metrics, "dapo")[A] == pytest.approx(0.46)     # mean(.47, .45)


def test_target_uses_only_steps_every_seed_evaluated(tmp_path, make_run):
    make_run("grpo", 0, {0: 0.1, 2: 0.3, 4: 0.9})
    make_run("grpo", 1, {0: 0.1, 2: 0.5}, n_steps=2)
    _, metrics, _ = load_runs([tmp_path])
    warnings: list[str] = []
    assert target_accuracy(metrics, warnings=warnings) == {("m", "d"): pytest.approx(0.4)}
    assert len(warnings) == 1 and "dropped 4" in warnings[0]


def test_resolve_targets(loaded):
    _, metrics, _ = loaded
    warnings: list[str] = []
    targets = resolve_targets(metrics, None, "grpo", warnings)
    assert targets[C] is None and targets[A] == pytest.approx(0.46)
    assert warnings == ["toy-8b/toymath: no grpo runs with evaluations, so no target (pass --target FLOAT to set one)"]
    assert resolve_targets(metrics, 0.3) == {A: 0.3, B: 0.3, C: 0.3}
    assert resolve_targets(metrics, "dapo-best")[B] == pytest.approx(0.34)   # mean(.33, .35)


# --- the whole report on the fixtures ---------------------------------------------------------

def records_by_key(records):
    return {(r["model"], r["data"], r["method"]): r for r in records}


@pytest.fixture(scope="module")
def fixture_records(loaded):
    runs, metrics, _ = loaded
    records, warnings = score(runs, metrics)
    return records_by_key(records), warnings


def test_fixture_record_order(loaded):
    runs, metrics, _ = loaded
    records, _ = score(runs, metrics)
    assert [(r["model"], r["method"]) for r in records] == [
        ("toy-1.5b", "grpo"), ("toy-1.5b", "dapo"), ("toy-1.5b", "pilot_commit"),
        ("toy-4b", "grpo"), ("toy-4b", "dapo"), ("toy-4b", "pilot_commit"), ("toy-8b", "pilot_commit")]


EXPECTED_A = {
    "grpo": dict(seeds=2, reached=2, rollouts_to_target=5_000_000, rtt_ci_low=4_000_000, rtt_ci_high=6_000_000,
                 speedup_vs_grpo=1.0, speedup_vs_dapo=15.5 / 5, speedup_vs_dapo_ci_low=12 / 6,
                 speedup_vs_dapo_ci_high=19 / 4, final_val_acc=0.46, cumulative_rollouts=6_000_000),
    "dapo": dict(seeds=2, reached=2, rollouts_to_target=15_500_000, rtt_ci_low=12_000_000,
                 rtt_ci_high=19_000_000, speedup_vs_grpo=5 / 15.5, speedup_vs_grpo_ci_low=4 / 19,
                 speedup_vs_grpo_ci_high=6 / 12, speedup_vs_dapo=1.0, final_val_acc=0.46,
                 cumulative_rollouts=18_500_000),
    "pilot_commit": dict(seeds=2, reached=2, rollouts_to_target=4_500_000, rtt_ci_low=3_000_000,
                         rtt_ci_high=6_000_000, speedup_vs_grpo=5 / 4.5, speedup_vs_grpo_ci_low=4 / 6,
                         speedup_vs_grpo_ci_high=6 / 3, speedup_vs_dapo=15.5 / 4.5,
                         speedup_vs_dapo_ci_low=12 / 6, speedup_vs_dapo_ci_high=19 / 3,
                         final_val_acc=0.51, cumulative_rollouts=9_000_000),
}


@pytest.mark.parametrize("method", list(EXPECTED_A))
def test_group_a_all_reach(fixture_records, method):
    rec = fixture_records[0][(*A, method)]
    assert rec["target"] == pytest.approx(0.46)
    for key, value in EXPECTED_A[method].items():
        assert rec[key] == pytest.approx(value), key


def test_group_b_censoring(fixture_records):
    recs = fixture_records[0]
    grpo, dapo, pc = (recs[(*B, m)] for m in ("grpo", "dapo", "pilot_commit"))
    assert (grpo["reached"], grpo["rollouts_to_target"], grpo["rtt_ci_low"], grpo["rtt_ci_high"]) == \
        (2, 6144, 4096, 8192)
    assert grpo["speedup_vs_dapo"] is None and grpo["speedup_vs_dapo_ci_low"] is None
    # DAPO never reaches 36%: "did not reach", every number null
    assert (dapo["seeds"], dapo["reached"], dapo["rollouts_to_target"]) == (2, 0, None)
    assert dapo["rtt_ci_low"] is None and dapo["rtt_ci_high"] is None
    assert dapo["speedup_vs_grpo"] is None and dapo["speedup_vs_dapo"] is None
    assert dapo["final_val_acc"] == pytest.approx(0.34) and dapo["cumulative_rollouts"] == 24576
    # PC: 1 of 3 seeds reaches (6144); 2 of 3 censored -> the median is censored
    assert (pc["seeds"], pc["reached"], pc["rollouts_to_target"], pc["unfinished"]) == (3, 1, None, 1)
    assert (pc["rtt_ci_low"], pc["rtt_ci_high"]) == (6144, None)
    assert pc["speedup_vs_grpo"] is None and pc["speedup_vs_grpo_ci_high"] is None
    assert pc["final_val_acc"] == pytest.approx(0.35) and pc["cumulative_rollouts"] == 12288


def test_group_without_baseline(fixture_records):
    recs, warnings = fixture_records
    rec = recs[(*C, "pilot_commit")]
    assert rec["target"] is None and rec["reached"] is None and rec["rollouts_to_target"] is None
    assert rec["speedup_vs_grpo"] is None and rec["speedup_vs_dapo"] is None
    assert rec["final_val_acc"] == pytest.approx(0.31) and rec["cumulative_rollouts"] == 12288
    assert any(w.startswith("toy-8b/toymath: no grpo runs") for w in warnings)


def test_fixed_target_uses_the_relogged_line(loaded):
    runs, metrics, _ = loaded
    records, _ = score(runs, metrics, target=0.30)
    rec = records_by_key(records)[(*C, "pilot_commit")]
    assert rec["target"] == 0.30 and rec["reached"] == 1
    assert rec["rollouts_to_target"] == 12288          # step 4; the overwritten step-2 line had 0.31


def test_no_eval_run_is_excluded(fixture_records):
    rec = fixture_records[0][(*A, "grpo")]
    assert rec["seeds"] == 2 and rec["seed_values"] == [0, 1] and rec["unfinished"] == 0


def test_duplicate_seeds_warn(tmp_path, make_run):
    make_run("grpo", 0, {0: 0.1, 4: 0.3}, experiment="e1")
    make_run("grpo", 0, {0: 0.1, 4: 0.5}, experiment="e2")
    runs, metrics, _ = load_runs([tmp_path])
    records, warnings = score(runs, metrics)
    assert records[0]["seeds"] == 2 and records[0]["target"] == pytest.approx(0.4)
    assert any("share seed(s) [0]" in w for w in warnings)
