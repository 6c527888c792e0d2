"""Runs are compared only within one setup: folders that differ in one data key are separate rows
with their own target, named by the differing key, and `--where` keeps one setup."""

from __future__ import annotations

import subprocess
import sys

import pytest
from runfolder_writer import ledger, make_config, make_lines, write_run

from pcbench.analysis.figure_tables import acc_curve_table
from pcbench.analysis.run_frames import load_runs
from pcbench.analysis.scoring import resolve_targets, score

STEPS = [ledger(plain=1000)] * 4
# setup A (train_size 1000): GRPO peaks at 0.5; setup B (train_size 2000): GRPO peaks at 0.3
ACC = {1000: {"grpo": {0: 0.1, 2: 0.3, 4: 0.5}, "pilot_commit": {0: 0.1, 2: 0.5, 4: 0.6}},
       2000: {"grpo": {0: 0.1, 2: 0.2, 4: 0.3}, "pilot_commit": {0: 0.1, 2: 0.3, 4: 0.3}}}


def config(method_name, seed, train_size, **extra):
    cfg = make_config(method_name, "toy", "toymath", seed, "exp")
    cfg["data"] = {"name": "toymath", "train_size": train_size, "tiers": {"add22": 0.7, "add33": 0.3}}
    cfg["train"] = {"steps": 4, "lr": 1e-6, "threads": 1, "checkpoint_every": 2}
    cfg.update(extra)
    return cfg


def write_two_setups(root, sizes=(1000, 2000)):
    for size in sizes:
        for method in ("grpo", "pilot_commit"):
            for seed in (0, 1):
                write_run(root / f"ts{size}", method, "toy", "toymath", seed, make_lines(STEPS, ACC[size][method], 10.0),
                          config=config(method, seed, size))


def test_runs_differing_in_one_data_key_are_separate_rows_with_their_own_target(tmp_path):
    write_two_setups(tmp_path)
    runs, metrics, warnings = load_runs([tmp_path])
    assert runs["setup"].nunique() == 2
    assert sorted(runs["data"].unique()) == ["toymath [data.train_size=1000]", "toymath [data.train_size=2000]"]
    (split,) = [w for w in warnings if "different setups" in w]
    assert split.startswith("toy/toymath: runs of 2 different setups, scored as separate rows each with its own target")
    assert "--where data.train_size=1000" in split
    records, _ = score(runs, metrics, n_boot=200)
    rows = {(r["data"], r["method"]): r for r in records}
    assert len(rows) == 4 and all(r["seeds"] == 2 for r in records)  # never 4 seeds pooled from two setups
    assert rows[("toymath [data.train_size=1000]", "grpo")]["target"] == pytest.approx(0.5)
    assert rows[("toymath [data.train_size=2000]", "grpo")]["target"] == pytest.approx(0.3)
    assert rows[("toymath [data.train_size=2000]", "pilot_commit")]["rollouts_to_target"] == 2000


def test_curves_and_figures_keep_setups_apart(tmp_path):
    write_two_setups(tmp_path)
    _, metrics, _ = load_runs([tmp_path])
    table = acc_curve_table(metrics, resolve_targets(metrics))
    assert table.groupby(["model", "data"]).ngroups == 2


@pytest.mark.parametrize("extra", [
    {"experiment": "probe"}, {"paths": {"results": "elsewhere"}}, {"logging": {"wandb": True}},
    {"train": {"steps": 4, "lr": 1e-6, "threads": 8, "checkpoint_every": 50}}, {"resume": "never"},
    {"method": {"name": "grpo", "n": 16, "gen_batch_size": 48}},
])
def test_bookkeeping_method_knobs_and_seed_do_not_split_a_setup(tmp_path, extra):
    for seed in (0, 1):
        write_run(tmp_path / "a", "grpo", "toy", "toymath", seed, make_lines(STEPS, ACC[1000]["grpo"], 10.0),
                  config=config("grpo", seed, 1000))
    write_run(tmp_path / "b", "grpo", "toy", "toymath", 2, make_lines(STEPS, ACC[1000]["grpo"], 10.0),
              config=config("grpo", 2, 1000, **extra))
    runs, _, warnings = load_runs([tmp_path])
    assert runs["setup"].nunique() == 1 and set(runs["data"]) == {"toymath"}
    assert not [w for w in warnings if "different setups" in w]


def test_where_keeps_one_setup(tmp_path):
    write_two_setups(tmp_path)
    runs, _, warnings = load_runs([tmp_path], where=["data.train_size=2000"])
    assert len(runs) == 4 and set(runs["data"]) == {"toymath"}  # one setup left: plain name again
    assert not [w for w in warnings if "different setups" in w]
    (setup,) = set(runs["setup"])
    assert len(load_runs([tmp_path], where=[f"setup={setup}", "method.name=grpo"])[0]) == 2
    with pytest.raises(ValueError, match="use KEY=VALUE"):
        load_runs([tmp_path], where=["data.train_size"])


def cli(repo, *args):
    return subprocess.run([sys.executable, str(repo / "analysis" / "speedup.py"), *map(str, args)],
                          capture_output=True, text=True, cwd=repo, timeout=120)


def test_cli_table_shows_the_setup_and_where_selects(repo, tmp_path):
    write_two_setups(tmp_path)
    proc = cli(repo, tmp_path, "--n-boot", "200")
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| toy ")]
    assert len(rows) == 4
    assert sum("toymath [data.train_size=1000] | 50.0%" in r for r in rows) == 2
    assert sum("toymath [data.train_size=2000] | 30.0%" in r for r in rows) == 2
    assert "keep one with --where data.train_size=1000" in proc.stderr

    proc = cli(repo, tmp_path, "--n-boot", "200", "--where", "data.train_size=1000")
    assert proc.returncode == 0, proc.stderr
    rows = [line for line in proc.stdout.splitlines() if line.startswith("| toy ")]
    assert len(rows) == 2 and all("| toymath | 50.0% |" in r for r in rows)

    proc = cli(repo, tmp_path, "--where", "data.train_size=3")
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        f"error: no runs found under {tmp_path} matching --where data.train_size=3 (values compare with "
        f"config.yaml's) (a run is a folder with config.yaml and metrics.jsonl)"]
    proc = cli(repo, tmp_path, "--where", "oops")
    assert proc.returncode == 2 and proc.stderr.strip().splitlines() == [
        "error: --where 'oops': use KEY=VALUE with a config.yaml key, e.g. --where data.train_size=1000"]
