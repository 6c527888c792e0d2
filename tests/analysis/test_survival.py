"""Survival scoring (pcbench.analysis.survival) on constructed runs with known answers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from pcbench.analysis import survival as S


def _curves(method, crossings, seed_set="main", last=10):
    """Runs crossing val/acc 0.5 at the given steps (None: never), 100 rollouts a step."""
    rows = []
    for seed, cross in enumerate(crossings):
        for step in range(last + 1):
            rows.append({"method": method, "seed_set": seed_set, "seed": seed, "step": step, "cumulative_rollouts": 100 * step,
                         "val_acc": 0.6 if cross is not None and step >= cross else 0.1})
    return pd.DataFrame(rows)


def test_durations_censor_at_the_last_evaluation():
    d = S.durations(_curves("grpo", [3, None]), 0.5)
    assert list(d["time"]) == [300.0, 1000.0] and list(d["event"]) == [1, 0]


def test_km_median_without_censoring_is_the_sample_median():
    km = S.km_median([100, 200, 300, 400, 500], [1] * 5)
    assert km["median"] == pytest.approx(300.0)


def test_km_median_not_reached_is_none():
    assert S.km_median([100, 1000, 1000, 1000], [1, 0, 0, 0])["median"] is None


def test_aft_recovers_a_known_acceleration():
    rng = np.random.default_rng(0)
    base = np.exp(rng.normal(np.log(2000), 0.1, 40))
    fast = base / 2.0 * np.exp(rng.normal(0, 0.02, 40))
    b = pd.DataFrame({"time": base, "event": 1})
    o = pd.DataFrame({"time": fast, "event": 1})
    for model in ("weibull", "lognormal"):
        a = S.aft_speedup(b, o, model)
        assert a["speedup"] == pytest.approx(2.0, rel=0.1) and a["low"] < a["speedup"] < a["high"]


def test_aft_keeps_censored_runs_as_information():
    # 3 of the method's 4 runs never cross within 1000: still a finite, slower-than-base estimate
    d = pd.concat([_curves("grpo", [2, 2, 3, 3]), _curves("dapo", [6, None, None, None])])
    rec = S.compare(S.durations(d, 0.5), ("grpo", "main"), ("dapo", "main"))
    assert rec["events"] == 1 and rec["weibull"]["speedup"] < 0.5
    assert rec["km_ratio"] is None  # the KM median of dapo is not reached


def test_aft_without_events_is_no_fit():
    b = pd.DataFrame({"time": [100.0, 200.0], "event": [0, 0]})
    assert S.aft_speedup(b, b, "weibull")["speedup"] is None


def test_identical_arms_give_one():
    d = pd.concat([_curves("grpo", [2, 3, 4, 5]), _curves("grpo", [2, 3, 4, 5], "aa")])
    rec = S.compare(S.durations(d, 0.5), ("grpo", "main"), ("grpo", "aa"))
    assert rec["km_ratio"] == 1.0 and rec["weibull"]["speedup"] == pytest.approx(1.0, abs=1e-3)
    assert math.isfinite(rec["weibull"]["low"])


def test_a_diverged_aft_fit_is_no_fit_not_a_crash():
    """A regime map whose one arm never reaches the target can leave the AFT coefficient near 1e3;
    exp() of it overflowed and stopped the whole map's scoring (seen under ATen's DEFAULT kernels)."""
    assert S.wald_ratios(float("nan"), 1.0) is None and S.wald_ratios(0.1, float("inf")) is None
    assert S.wald_ratios(-5.0, 400.0) is None
    r = S.wald_ratios(-0.5, 0.1)
    assert math.isclose(r["speedup"], math.exp(0.5)) and r["low"] < r["speedup"] < r["high"]
