"""The regime card reads verl run folders: the verl path's metrics rows come from the same
allocators and ledger, so a GPU user can check whether their data is in PC's regime."""

import pandas as pd

from pcbench.bench.__main__ import main as bench_main
from pcbench.runs import finish
from tests.verl.test_run_folder import RATES, make_run, train, verl_val_metrics


def test_regime_card_of_verl_run_folders(paper_cfg, tmp_path, capsys):
    for method in ("grpo", "pilot_commit"):
        run, backend, _ = make_run(paper_cfg, tmp_path / "runs", method)
        run.log(0, verl_val_metrics(0.2))
        train(run, backend, 10)
        finish(run.rundir)
    out = tmp_path / "card"
    assert bench_main(["regime", str(tmp_path / "runs"), "--out", str(out)]) == 0
    table = pd.read_csv(out / "regime.csv")
    grpo = table[table["method"] == "grpo"]
    # the fake agent loop gives prompt i pass rate RATES[i % 8]: some prompts always right, some never
    assert len(grpo) == 10 and (grpo["groups"] == 8).all() and (grpo["sampled_kind"] == "plain").all()
    assert RATES.count(1.0) == RATES.count(0.0) == 1
    assert 0 < grpo["all_correct"].sum() < 40 and 0 < grpo["all_wrong"].sum() < 40
    assert (table.loc[table["method"] == "pilot_commit", "sampled_kind"] == "pilot").all()
    md = (out / "regime_card.md").read_text()
    assert "val/aime24" in md and "val/math500" in md and "| grpo | 1 | 10 |" in md
    assert "Regime targets (GRPO)" in capsys.readouterr().out
