"""The regime counters every allocator logs, the regime card drawn from run folders, the A/A
line and the raw curves: on small run folders written from real allocators, not a benchmark."""

import json
import math

import numpy as np
import pandas as pd
import pytest
import yaml

from pcbench.bench.__main__ import main as bench_main
from pcbench.analysis.targets import AA, aa_record, curves_table, grpo_targets
from pcbench.analysis.regime import build_card, regime_table
from pcbench.testing import Harness, method

# 40 prompts: ids 0-9 always solved, 10-19 never, 20-39 half the time
RATES = {i: 1.0 if i < 10 else 0.0 if i < 20 else 0.5 for i in range(40)}


def test_trained_groups_are_split_by_reward_variance_for_every_allocator():
    for name in ("grpo", "dapo", "pilot_commit", "speed_rl", "pods", "mopps", "greso", "pilot_commit_bayes"):
        piloted = name in ("pilot_commit", "speed_rl", "pilot_commit_bayes")
        h = Harness(method(name, **(dict(n_pilot=4, n_commit=12) if piloted else {})), RATES, train_batch=4)
        batch, row = h.run_step()
        right = sum(int(g.acc.min() == 1.0) for g in batch.groups)
        wrong = sum(int(g.acc.max() == 0.0) for g in batch.groups)
        assert (row["alloc/groups"], row["alloc/groups_all_correct"], row["alloc/groups_all_wrong"]) == \
            (len(batch.groups), right, wrong), name


def test_grpo_groups_and_pc_pilots_are_counted_before_any_filter():
    h = Harness(method("grpo"), RATES, train_batch=8)
    batch, row = h.run_step()
    ids = [g.prompt_id for g in batch.groups]
    assert row["alloc/sampled/plain/groups"] == 8
    assert row["alloc/sampled/plain/all_correct"] == sum(i < 10 for i in ids)
    assert row["alloc/sampled/plain/all_wrong"] == sum(10 <= i < 20 for i in ids)
    assert row["alloc/sampled/plain/hist/1"] == row["alloc/sampled/plain/all_correct"]
    pc = Harness(method("pilot_commit"), RATES, train_batch=4)
    _, row = pc.run_step()
    pilots = [r for call in pc.backend.calls for r in call if r.kind == "pilot"]
    assert row["alloc/sampled/pilot/groups"] == len(pilots) and "alloc/sampled/commit/groups" not in row
    assert row["alloc/sampled/pilot/all_wrong"] == sum(10 <= r.prompt_id < 20 for r in pilots)
    # PC trains only prompts inside its band: no zero-variance group is trained
    assert row["alloc/groups_all_correct"] == row["alloc/groups_all_wrong"] == 0


def test_prompts_sampled_all_wrong_and_later_solved_are_counted_once():
    learnt = {"step": 1}
    rate = lambda pid: 0.0 if learnt["step"] == 1 else 0.5  # nothing solved at step 1, everything after
    h = Harness(method("grpo"), rate, train_batch=20, prompt_ids=range(40))
    _, first = h.run_step()
    learnt["step"] = 2
    _, second = h.run_step()
    h.run_step()
    _, fourth = h.run_step()
    assert first["alloc/zero_seen"] == 20 and first["alloc/zero_later_solved"] == 0
    assert second["alloc/zero_seen"] == 20 and second["alloc/zero_later_solved"] == 0  # the other 20 prompts
    assert fourth["alloc/zero_later_solved"] == 20  # the next epoch brings the first 20 back, now solved
    state = h.ledger.state_dict()
    json.dumps(state)  # checkpoints of both backends store it
    h.ledger.load_state_dict(state)
    assert len(h.ledger.zero_seen) == 20 and len(h.ledger.zero_solved) == 20


def write_run(root, name, seed, rows, evals):
    """A run folder from allocator rows plus val lines: evals maps step -> (acc, per-tier dict)."""
    folder = root / f"{name}-s{seed}"
    folder.mkdir(parents=True)
    cfg = {"experiment": "t", "seed": seed, "method": {"name": name}, "model": {"name": "m"},
           "data": {"name": "d"}, "backend": {"name": "embedded"}}
    (folder / "config.yaml").write_text(yaml.safe_dump(cfg))
    lines = [{"step": 0, "cumulative_rollouts": 0, **evals[0]}]
    for step, row in enumerate(rows, start=1):
        lines.append({"step": step, **row, **evals.get(step, {})})
    (folder / "metrics.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
    return folder


def val(acc, se=0.003):
    return {"val/acc": acc, "val/acc_se": se, "val/add22/acc": min(1.0, acc + 0.4), "val/add33/acc": acc,
            "ood/add55/acc": 0.0}


@pytest.fixture
def folders(tmp_path):
    """GRPO (2 seeds) and Pilot-Commit (1 seed), 10 steps each, val every 2 steps rising 0.30 -> 0.45."""
    evals = {s: val(0.30 + 0.015 * s) for s in range(0, 11, 2)}
    for name, seeds in (("grpo", (0, 1)), ("pilot_commit", (0,))):
        for seed in seeds:
            h = Harness(method(name), RATES, train_batch=4, seed=seed)
            rows = [h.run_step()[1] for _ in range(10)]
            write_run(tmp_path / "runs", name, seed, rows, evals)
    return tmp_path


def test_regime_card_from_run_folders(folders, capsys):
    out = folders / "card"
    assert bench_main(["regime", str(folders / "runs"), "--out", str(out)]) == 0
    table = pd.read_csv(out / "regime.csv")
    assert {"method", "seed", "step", "groups", "all_correct", "all_wrong", "mixed"} <= set(table.columns)
    assert len(table) == 30 and (table["groups"] == 4).all()
    grpo = table[table["method"] == "grpo"]
    assert (grpo["sampled_kind"] == "plain").all() and (grpo["sampled"] == grpo["groups"]).all()
    assert (table.loc[table["method"] == "pilot_commit", "sampled_kind"] == "pilot").all()
    md = (out / "regime_card.md").read_text()
    share = (grpo["all_correct"] + grpo["all_wrong"]).sum() / grpo["groups"].sum()
    assert f"| zero-variance groups (mean share) | {100 * share:.1f}% |" in md
    assert "| seed-mean val/acc gain over step 0 | 15.00 points | >= 10 points | yes |" in md
    assert "ood/add55" in md and "val/add33" in md
    assert (out / "regime_card.png").stat().st_size > 10_000
    assert "Regime targets (GRPO)" in capsys.readouterr().out


def test_regime_card_shows_the_pool_card_of_the_warm_start_report(folders, capsys):
    """An embedded run's summary.json holds the warm-start report (details.warmstart); with a "card"
    the regime card prints it per tier, without one (runs from before it) it prints none."""
    from pcbench.pool_card import labelled_card

    runs = sorted((folders / "runs").iterdir())
    ws = {"histogram": {"p=0": 0.5, "p=1": 0.5}, "per_tier": {"add22": 1.0, "add44": 0.0}, "in_band": 0.0, "n_rollouts": 8}
    for run in runs:
        (run / "summary.json").write_text(json.dumps({"status": "finished", "details": {"warmstart": ws}}))
    assert bench_main(["regime", str(folders / "runs")]) == 0
    assert "pool card" not in capsys.readouterr().out
    card = labelled_card([1.0, 1.0, 0.0, 0.3], ["add22", "add22", "add44", "add44"], "exact", 1.0, 1.0)
    for run in runs:
        (run / "summary.json").write_text(json.dumps({"status": "finished", "details": {"warmstart": {**ws, "card": card}}}))
    assert bench_main(["regime", str(folders / "runs")]) == 0
    out = capsys.readouterr().out
    assert "## The pool card after the warm start" in out and "d: pass rates: exact, at T 1, top_p 1" in out
    assert "| tier | n | mean | solved | near-solved | band | hard | never |" in out
    assert "| add44 | 2 | 0.150 | 0.0% | 0.0% | 50.0% | 0.0% | 50.0% |" in out
    assert "| pool | 4 | 0.575 | 50.0% | 0.0% | 25.0% | 0.0% | 25.0% |" in out


def test_regime_card_refuses_an_empty_folder(tmp_path, capsys):
    assert bench_main(["regime", str(tmp_path)]) == 2
    assert "no run folders" in capsys.readouterr().out


def test_regime_checks_fail_where_the_data_is_not_in_the_regime(folders):
    from pcbench.analysis.run_frames import load_runs

    _, metrics, _ = load_runs([folders / "runs"])
    metrics.loc[metrics["step"] > 2, "val/acc"] = 0.30  # learning stops after step 2
    _, _, checks = build_card(metrics)
    by = {c["check"].split(" (")[0]: c for c in checks}
    assert not by["seed-mean val/acc gain over step 0"]["met"] and not by["best evaluation step"]["met"]
    assert by["largest val/acc_se of one evaluation"]["met"]


def eval_frame(curves: dict[tuple[str, int], list[float]], every=1000) -> pd.DataFrame:
    rows = []
    for (name, seed), accs in curves.items():
        for i, acc in enumerate(accs):
            rows.append({"path": f"{name}-{seed}", "method": name, "seed": seed, "step": 5 * i,
                         "cumulative_rollouts": every * i, "val/acc": acc, "val/acc_se": 0.003})
    return pd.DataFrame(rows)


def test_targets_paper_and_reference_budget():
    m = eval_frame({("grpo", 0): [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], ("grpo", 1): [0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.7]})
    t = grpo_targets(m)
    assert t["paper"] == pytest.approx(0.8)  # the seed-mean max, at the last step
    assert t["reference"] == pytest.approx(0.7)  # the best up to step 20 of 30


def test_aa_identical_seed_sets_give_one_and_a_slower_set_shows():
    base = [0.3, 0.4, 0.5, 0.6, 0.7, 0.8]
    curves = {("grpo", s): base for s in range(3)}
    curves.update({(AA, s): base for s in range(3, 6)})
    rec = aa_record(eval_frame(curves), 0.6, n_boot=200)
    assert (rec["ratio"], rec["low"], rec["high"], rec["resolves"]) == (1.0, 1.0, 1.0, True)
    curves.update({(AA, s): [0.3, 0.35, 0.4, 0.45, 0.5, 0.6] for s in range(3, 6)})
    slow = aa_record(eval_frame(curves), 0.6, n_boot=200)
    assert slow["ratio"] == pytest.approx(3 / 5) and not slow["resolves"]
    curves.update({(AA, s): [0.3] * 6 for s in range(3, 6)})
    never = aa_record(eval_frame(curves), 0.6, n_boot=200)
    assert never["ratio"] is None and never["reached"] == 0 and not never["resolves"]


def test_curves_csv_rows_are_runs_and_evaluations():
    m = eval_frame({("grpo", 0): [0.3, 0.4], (AA, 5): [0.3, 0.5], ("pilot_commit", 0): [0.3, 0.6]})
    table = curves_table(m)
    assert list(table.columns[:6]) == ["method", "seed_set", "seed", "step", "cumulative_rollouts", "val_acc"]
    assert "val_acc_se" in table and len(table) == 6
    assert set(table.loc[table["seed_set"] == "aa", "method"]) == {"grpo"}
    assert math.isclose(table.loc[(table["method"] == "pilot_commit") & (table["step"] == 5), "val_acc"].item(), 0.6)


def test_regime_table_of_runs_without_counters_is_empty_but_well_formed():
    m = eval_frame({("grpo", 0): [0.3, 0.4]}).assign(step=lambda d: d["step"] // 5)
    table = regime_table(m)
    assert np.isnan(table["groups"]).all() and (table["sampled"] == 0).all()


def test_aa_from_json_reads_the_layout_written_before_aa_check():
    """results/bench/engine_speed/*/sample_efficiency.json hold the A/A as ci_low/ci_high/within_band."""
    from pcbench.analysis.targets import aa_from_json

    old = {"target": 0.6, "grpo_rtt": [1.0, math.inf], "aa_rtt": [1.0, 2.0, math.inf], "grpo_reached": 1, "aa_reached": 2,
           "ratio": 1.0, "ci_low": 0.8, "ci_high": None, "ci_high_inf": True, "within_band": False}
    assert aa_from_json(old) == {"target": 0.6, "grpo_rtt": [1.0, math.inf], "aa_rtt": [1.0, 2.0, math.inf], "reached": 2,
                                 "runs": 3, "ratio": 1.0, "low": 0.8, "high": None, "high_inf": True, "resolves": False}
    new = aa_record(eval_frame({("grpo", 0): [0.3, 0.6], (AA, 1): [0.3, 0.6]}), 0.6, n_boot=50)
    assert aa_from_json(new) is new
