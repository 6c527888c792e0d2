"""The supply model (pcbench.analysis.supply), its committed check, and the live rounds warning."""

import json
from pathlib import Path

import pytest

from pcbench.analysis.supply import SUPPLY_RATES, SupplyPool, SupplyRates, SupplyRun, project, rounds_for, warning
from pcbench.rounds_watch import RoundsWatch, project_bound

BENCH = Path(__file__).resolve().parents[2] / "results" / "bench"
RATES = SupplyRates(learn=0.1, q_hard=0.02, q_near=0.6, margin=4.4, starve=0.3)


def test_rounds_follow_the_in_band_share():
    run = SupplyRun()
    assert rounds_for(0.5, run) == 1.0
    assert rounds_for(1 / 6, run) == pytest.approx(2.0)
    assert rounds_for(0.0, run) == run.max_rounds


def test_a_band_that_is_not_learnt_keeps_one_round_a_step():
    pool = SupplyPool(f0=0.4, band=0.4, hard=0.1, solved=0.0, near=0.2, size=2000)
    p = project(pool, SupplyRun(steps=30), SupplyRates(learn=0.0, q_hard=0.02, q_near=0.6, margin=4.4, starve=0.3))
    assert p["rounds"][1:] == [1.0] * 29
    assert p["starve_step"] is None and p["drain_step"] is None
    assert warning(p, SupplyRun(steps=30)) is None


def test_a_learnt_band_that_turns_solved_starves():
    pool = SupplyPool(f0=0.3, band=0.3, hard=0.14, solved=0.22, near=0.05, size=2000)
    p = project(pool, SupplyRun(), RATES)
    assert p["rounds"][-1] > p["rounds"][5]          # climbing as the band is learnt
    assert p["starve_step"] is not None and p["drain_step"] is None
    assert warning(p, SupplyRun()).startswith(f"STARVE at step {p['starve_step']} of 50")


def test_the_same_pool_at_a_quarter_of_the_size_drains_first():
    pool = SupplyPool(f0=0.3, band=0.3, hard=0.14, solved=0.22, near=0.05, size=500)
    p = project(pool, SupplyRun(), RATES)
    assert p["drain_step"] is not None
    assert warning(p, SupplyRun()).startswith("DRAIN at step")


def test_the_cli_rates_are_the_committed_fit():
    fit = json.loads((BENCH / "predict_supply.json").read_text())["fit"]
    assert SUPPLY_RATES.__dict__ == pytest.approx(fit)


def test_the_report_rerenders_from_committed_data():
    from pcbench.reports.predict_supply import build
    from pcbench.reports.predict_supply_render import render

    rep = json.loads(json.dumps(build(BENCH), sort_keys=True))
    assert rep == json.loads((BENCH / "predict_supply.json").read_text())
    assert render(rep) == (BENCH / "predict_supply.md").read_text()


def test_projection_hits_the_bound_where_the_line_does():
    assert project_bound([1, 2, 3, 4, 5], [1, 2, 3, 4, 5], bound=10) == 10
    assert project_bound([1, 2, 3, 4, 5], [2, 2, 2, 2, 2], bound=10) is None      # flat
    assert project_bound([1, 2, 3, 4, 5], [5, 4, 3, 2, 1], bound=10) is None      # falling
    assert project_bound([1, 2, 3], [1, 2, 3], bound=10) is None                  # too few points
    assert project_bound([1, 2, 3, 4, 5], [6, 7, 8, 9, 10], bound=10) == 5        # already there


def _rows(rounds):
    return [{"step": i + 1, "alloc/rounds": r} for i, r in enumerate(rounds)]


def test_the_watch_says_it_once_with_the_projected_step():
    watch = RoundsWatch(10, total_steps=50)
    lines = [watch.see(row) for row in _rows([1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6])]
    said = [x for x in lines if x]
    assert len(said) == 1
    assert "max_rounds=10 at step" in said[0] and "of 50" in said[0]


def test_the_watch_is_silent_when_rounds_hold_or_the_crossing_is_past_the_run():
    flat = RoundsWatch(10, total_steps=50)
    assert not any(flat.see(row) for row in _rows([1, 2, 1, 1, 2, 1, 1, 2, 1, 1] * 3))
    slow = RoundsWatch(10, total_steps=20)
    assert not any(slow.see(row) for row in _rows([1 + 0.05 * i for i in range(20)]))
    grpo = RoundsWatch(None, total_steps=50)                     # no bound in the method's config
    assert not any(grpo.see(row) for row in _rows(range(1, 20)))
    dapo = RoundsWatch(10, total_steps=50)                       # DAPO's rounds: 1-2 a step, noisy
    assert not any(dapo.see(row) for row in _rows([1, 1, 1, 2, 1, 1, 2, 2, 2, 2, 1, 2, 2, 2]))
    no_key = RoundsWatch(10, total_steps=50)
    assert not any(no_key.see({"step": i}) for i in range(1, 20))


def _prerun(name, lr=1e-4):
    from omegaconf import OmegaConf

    rep = json.loads((BENCH / "paper_regime_prerun" / f"{name}.json").read_text())
    cfg = OmegaConf.create({"method": {"max_rounds": 10}, "train": {"steps": 50, "lr": lr}})
    return rep, cfg


# solved_p8 at the map's lr 1e-4 is one of the model's misses (3 of 8 PC runs starved; the committed
# fit projects 2.5 rounds in the last third, under its STARVE share: results/bench/predict_supply.md);
# at twice the lr its band is learnt out twice as fast and the CLI must say STARVE.
@pytest.mark.parametrize("name, lr, flag", [("solved_p8", 2e-4, "STARVE"), ("drain_p8", 1e-4, "DRAIN"),
                                            ("unsolved_p8", 1e-4, None)])
def test_the_cli_warns_on_the_committed_pre_run_probes(name, lr, flag):
    """pcbench.predict's supply lines on the paper-regime map's committed pre-run probes."""
    from pcbench.predict import render, supply_outlook

    rep, cfg = _prerun(name, lr)
    rep["supply"] = supply_outlook(rep, rep["card"], rep["facts"], cfg)
    text = render(rep, "text")
    assert "rounds per step" in text
    if flag:
        assert rep["supply"]["warning"].startswith(flag) and rep["supply"]["warning"] in text
    else:
        assert rep["supply"]["warning"] is None and "no STARVE / DRAIN projected" in text
