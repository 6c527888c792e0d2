"""`python -m pcbench.bench regime_map` on a tiny grid: plans every cell's GRPO / DAPO / PC / A/A
jobs, trains them, merges each part's rows into the CSVs (a later part keeps the earlier one's),
and rebuilds the same report from the CSVs alone."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from pcbench.reports.regime_map import goal_met
from pcbench.analysis.map_scoring import criteria_met, crossings, per_run_rates, score_cell
from pcbench.bench.launch import run_folder
from pcbench.paths import CONF_DIR
from pcbench.bench.regime_map import cell_jobs, cells, load_grid

TINY = ["model.hidden_size=64", "model.intermediate_size=128", "model.warmstart.stop_tier=null", "model.warmstart.steps=250", "model/warmstart=stop_only",
        "data.sft_size=1000", "data.train_size=240", "data.val_size=16", "data.ood_size=4", "train.batch_size=4",
        "train.mini_batch_size=2", "train.steps=4", "train.eval_every=2", "method.max_rounds=30",
        # as tests/embedded/test_end_to_end.py: this warm start solves some 2+2-digit sums only
        "data.tiers.add33=0.0", "data.val_mode=exact"]


def grid(tmp_path) -> Path:
    spec = {"methods": ["grpo", "dapo", "pilot_commit"], "seeds": 1, "grpo_seeds": 2, "aa_seeds": 2,
            "common": ["exp=sample_efficiency", *TINY, f"paths.cache={tmp_path / 'cache'}"],
            "knobs": {"pilot": {"p2": ["rollout.n=16"]}, "never": {"low": ["data.never_share=0.0"], "high": ["data.never_share=0.2"]}},
            "parts": {1: ["p2-low"], 2: ["p2-high"]},
            "paper_matched": {"cell": "p2-low", "criteria": {"grpo_zero_variance": [0.3, 0.7], "pc_rounds_per_step_max": 1.3,
                                                              "epochs_at_target": [0.5, 2.0]}}}
    path = tmp_path / "tiny_map.yaml"  # every output is named after the grid's stem
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def bench(tmp_path, *args):
    cmd = [sys.executable, "-m", "pcbench.bench", "regime_map", "--grid", str(grid(tmp_path)), "--out", str(tmp_path / "out"),
           "--runs", str(tmp_path / "runs"), "--figures", str(tmp_path / "figs"), "--n-boot", "200", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_parts_train_merge_and_rescore_to_the_same_report(tmp_path):
    first = bench(tmp_path, "--part", "1")
    assert first.returncode == 0, first.stderr[-3000:]
    curves = pd.read_csv(tmp_path / "out" / "tiny_map_curves.csv")
    assert set(curves["cell"]) == {"p2-low"} and set(curves["never"]) == {"low"}
    assert set(zip(curves["method"], curves["seed_set"])) == {("grpo", "main"), ("grpo", "aa"), ("dapo", "main"),
                                                             ("pilot_commit", "main")}
    second = bench(tmp_path, "--cells", "p2-high")
    assert second.returncode == 0, second.stderr[-3000:]
    curves = pd.read_csv(tmp_path / "out" / "tiny_map_curves.csv")
    regime = pd.read_csv(tmp_path / "out" / "tiny_map_regime.csv")
    assert set(curves["cell"]) == set(regime["cell"]) == {"p2-low", "p2-high"}  # part 1's rows kept
    assert {"rounds", "signal", "sampled_in_band", "pool_epochs"} <= set(regime.columns)
    report = json.loads((tmp_path / "out" / "tiny_map.json").read_text())
    assert [c["status"] for c in report["cells"].values()] == ["scored", "scored"]
    assert report["cells"]["p2-low"]["runs"] == {"complete": True, "counts": {
        "grpo": "2/2", "grpo_aa": "2/2", "dapo": "1/1", "pilot_commit": "1/1"}}
    assert report["cells"]["p2-low"]["pool"]["histogram/p=0"] >= 0  # the pool's histogram after the warm start
    again = bench(tmp_path, "--score-only")
    assert again.returncode == 0 and "0 to train" in again.stdout
    rescored = json.loads((tmp_path / "out" / "tiny_map.json").read_text())
    assert rescored["cells"] == report["cells"]
    assert (tmp_path / "figs" / "tiny_map.png").exists() and (tmp_path / "figs" / "tiny_map.csv").exists()
    assert (tmp_path / "out" / "tiny_map.md").exists() and not (tmp_path / "out" / "regime_map.md").exists()
    assert {p.name for p in (tmp_path / "runs").iterdir()} >= {"tiny_map_p2-low", "tiny_map_logs"}


def test_unknown_cell_is_one_line_before_any_work(tmp_path):
    out = bench(tmp_path, "--cells", "p2-medium")
    assert out.returncode == 2 and not (tmp_path / "runs").exists()
    assert out.stderr.strip().splitlines() == [
        "pcbench.bench: config error: --cells: unknown ['p2-medium']; the grid's cells are ['p2-low', 'p2-high']"]


def frames():
    """Two GRPO main seeds, two A/A seeds, one PC seed: crossings at known rollouts."""
    rows = []
    for method, seed_set, seed, accs, per_step in [("grpo", "main", 0, [0.1, 0.5, 0.6], 100), ("grpo", "main", 1, [0.1, 0.4, 0.6], 100),
                                                   ("grpo", "aa", 2, [0.1, 0.6, 0.6], 100), ("grpo", "aa", 3, [0.1, 0.3, 0.5], 100),
                                                   ("pilot_commit", "main", 0, [0.1, 0.6, 0.7], 150)]:
        for step, acc in zip((0, 2, 4), accs):
            rows.append({"method": method, "seed_set": seed_set, "seed": seed, "step": step, "val_acc": acc,
                         "cumulative_rollouts": step * per_step})
    curves = pd.DataFrame(rows)
    regime = pd.DataFrame([{"method": m, "seed": s, "step": t, "signal": sig, "rollouts_step": r, "groups": 4,
                            "all_correct": 1, "all_wrong": 1, "rounds": rd, "sampled": 12, "sampled_in_band": 3,
                            "pool_epochs": 0.1 * t}
                           for m, s, sig, r, rd in [("grpo", 0, 1.0, 100, 1), ("grpo", 1, 1.0, 100, 1), ("pilot_commit", 0, 3.0, 150, 2)]
                           for t in range(1, 5)])
    return curves, regime


def test_cell_scores_follow_the_definitions():
    curves, regime = frames()
    cross = crossings(curves, 0.6)
    assert cross.set_index(["method", "seed"])["rtt"].to_dict()[("pilot_commit", 0)] == 300  # step 2 x 150
    rec = score_cell(curves, regime, n_boot=200)
    assert rec["target"] == pytest.approx(0.6)  # GRPO main seeds' best seed mean (step 4)
    assert rec["pc_vs_grpo"]["ratio"] == pytest.approx(400 / 300)
    assert rec["aa"]["reached"] == 1 and rec["aa"]["runs"] == 2  # seed 3 never reaches 0.6
    rates = per_run_rates(regime).set_index("method")
    assert rates.loc["pilot_commit", "signal_per_rollout"] == pytest.approx((3.0 / 1.0) / (150 / 100))
    assert rec["regime"]["pc_rounds_per_step"] == 2 and rec["regime"]["grpo_zero_variance"] == pytest.approx(0.5)
    assert rec["regime"]["pc_epochs_at_target"] == pytest.approx(0.2)  # crossed at step 2


def test_the_paper_regime_grid_is_registered_and_every_job_composes(tmp_path):
    """conf/bench/paper_regime.yaml: every cell's every job passes the config checks (pool knobs
    included: data=synthetic_paper, data.train_size=500, the three-stage warm start) before any run, its
    outputs and run folders are its own, and each cell carries its registered prediction."""
    g = load_grid(CONF_DIR / "bench" / "paper_regime.yaml")
    names = [c.name for c in cells(g)]
    assert g["stem"] == "paper_regime" and set(g["predictions"]) == set(names)
    assert g["paper_matched"]["cells"] == ["p8-solved", "p16-solved"] and "near_solved_max" in g["paper_matched"]["criteria"]
    for c in cells(g):
        main, aa = cell_jobs(g, c, tmp_path / "runs")
        assert len(aa) == 20 and sum(j.method == "grpo" for j in main) == 20
        firsts = [*{j.method: j for j in reversed(main)}.values(), aa[0]]  # each method's first job: the cell's overrides
        folders = {run_folder(j).parent.name for j in firsts}  # composes and checks the config
        assert folders == {f"paper_regime_{c.name}", f"paper_regime_{c.name}_aa"}


def test_near_solved_criterion_and_the_goal():
    crit = {"grpo_zero_variance": [0.55, 0.75], "pc_rounds_per_step_max": 1.2, "epochs_at_target": [0.5, 2.0],
            "near_solved_max": 0.1}
    measured = {"grpo_zero_variance": 0.6, "pc_rounds_per_step": 1.1, "pc_epochs_at_target": 1.0, "near_solved": 0.2}
    assert criteria_met(measured, crit) == {"grpo_zero_variance": True, "pc_rounds_per_step": True,
                                            "epochs_at_target": True, "near_solved": False}
    assert "near_solved" not in criteria_met(measured, {k: v for k, v in crit.items() if k != "near_solved_max"})
    cell = {"pc_vs_grpo": {"ratio": 1.6, "low": 1.1}, "pc_vs_dapo": {"ratio": 2.5, "low": 0.9}}
    assert goal_met(cell, {"pc_vs_grpo": 1.5}) is True
    assert goal_met(cell, {"pc_vs_grpo": 1.5, "pc_vs_dapo": 2.3}) is False  # its interval reaches below 1
    assert goal_met(cell, None) is None
