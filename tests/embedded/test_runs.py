"""The run lifecycle every backend goes through (pcbench/runs.py): dry run, checks before any
file, prepare / resume / refuse, the backend trains a prepared folder, the summary is written
from the folder. A scripted backend stands in for a real one (each backend's own path:
tests/embedded/test_end_to_end.py, tests/verl/test_run_folder.py)."""

import json
from dataclasses import fields

import numpy as np
import pytest
import torch
from omegaconf import OmegaConf

from pcbench.config import ConfigError
from pcbench.ledger import RolloutLedger
from pcbench.rundir import RunDir, RunFolderError, Summary, run_path
from pcbench.runs import Backend, RunIncomplete, dry_run, execute, step_row

SUMMARY_KEYS = {f.name for f in fields(Summary)}


def cfg(tmp_path, dry=False, **kw):
    base = {"experiment": "t", "seed": 0, "resume": "auto", "dry_run": dry,
            "method": {"name": "grpo", "n": 8}, "model": {"name": "m"}, "data": {"name": "d"},
            "backend": {"name": "scripted", "entry": "tests.embedded.test_runs:Scripted"},
            "train": {"steps": 3}, "paths": {"results": str(tmp_path / "results")}, "logging": {"progress": False}}
    base.update(kw)
    return OmegaConf.create(base)


class Scripted(Backend):
    """Writes the step lines a real backend would (8 rollouts a step), up to `upto` (None: train.steps)."""

    def __init__(self, upto=None, bad_config=False, leads=True):
        self.upto, self.bad_config, self.leads = upto, bad_config, leads
        self.calls = []

    def check(self, cfg):
        self.calls.append("check")
        if self.bad_config:
            raise ConfigError("backend.x=1: must be 2")

    def setup(self, cfg):
        self.calls.append("setup")
        return self.leads

    def describe(self, cfg, path):
        return [f"# scripted backend would train {cfg.train.steps} steps"]

    def train(self, cfg, run):
        self.calls.append(("train", run.resumed, (run.path / "config.yaml").exists()))
        rows = run.read_metrics()
        ledger = RolloutLedger(cumulative=rows[-1]["cumulative_rollouts"] if rows else 0)
        for step in range(rows[-1]["step"] + 1 if rows else 0, (self.upto or cfg.train.steps) + 1):
            if step == 0:
                run.append_metrics(step_row(0, epoch=0, elapsed_s=0.0, evals={"val/acc": 0.25}))
                continue
            ledger.generated("plain", 8)
            ledger.trained(8)
            evals = {"val/acc": 0.25 + 0.1 * step} if step == cfg.train.steps else {}
            run.append_metrics(step_row(step, epoch=0, elapsed_s=1.5 * step, ledger=ledger.close_step(),
                                        train={"train/pg_loss": 0.1}, step_s=1.5, evals=evals))
        return {"scripted": True}


def files(tmp_path):
    return sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))


def test_a_backend_trains_a_prepared_folder_and_the_lifecycle_writes_the_summary(tmp_path):
    backend = Scripted()
    summary = execute(cfg(tmp_path), backend)
    assert backend.calls == ["check", "setup", ("train", False, True)]  # checks first, then a prepared folder
    path = run_path(cfg(tmp_path))
    on_disk = json.loads((path / "summary.json").read_text())
    assert set(on_disk) == SUMMARY_KEYS and on_disk == json.loads(json.dumps(summary.__dict__))
    assert (on_disk["status"], on_disk["run_id"], on_disk["backend"], on_disk["method"]) == \
        ("finished", path.name, "scripted", "grpo")
    assert (on_disk["steps"], on_disk["cumulative_rollouts"], on_disk["wall_s"]) == (3, 24, 4.5)
    assert on_disk["final_val_acc"] == pytest.approx(0.55) and on_disk["details"] == {"scripted": True}


def test_dry_run_writes_nothing_and_says_what_starting_would_do(tmp_path, capsys):
    backend = Scripted()
    assert execute(cfg(tmp_path, dry=True), backend) is None
    out = capsys.readouterr().out
    assert backend.calls == [] and not tmp_path.joinpath("results").exists()
    assert out.splitlines() == ["# pcbench dry run (nothing written): backend=scripted method=grpo model=m data=d",
                                f"# run folder: {run_path(cfg(tmp_path))}", "# on start: create it",
                                "# scripted backend would train 3 steps"]
    with pytest.raises(RunIncomplete):
        execute(cfg(tmp_path), Scripted(upto=1))
    before = files(tmp_path)
    assert "# on start: resume it (metrics up to step 1)" in dry_run(cfg(tmp_path, dry=True), backend)
    execute(cfg(tmp_path), Scripted())
    assert "# on start: refuse (" in dry_run(cfg(tmp_path, dry=True), backend)
    assert files(tmp_path) == sorted(before + [run_path(cfg(tmp_path)).relative_to(tmp_path) / "summary.json"])


def test_a_config_error_stops_before_any_file_and_a_worker_node_prepares_nothing(tmp_path):
    backend = Scripted(bad_config=True)
    with pytest.raises(ConfigError, match="backend.x=1"):
        execute(cfg(tmp_path), backend)
    assert backend.calls == ["check"] and not tmp_path.joinpath("results").exists()
    backend = Scripted(leads=False)
    assert execute(cfg(tmp_path), backend) is None
    assert backend.calls == ["check", "setup"] and not tmp_path.joinpath("results").exists()


def test_a_backend_that_stops_early_leaves_an_unfinished_run_that_the_same_command_resumes(tmp_path):
    with pytest.raises(RunIncomplete, match="after step 1 of 3"):
        execute(cfg(tmp_path), Scripted(upto=1))
    run = RunDir(run_path(cfg(tmp_path)), resumed=True)
    assert not (run.path / "summary.json").exists() and not run.finished()
    again = Scripted()
    summary = execute(cfg(tmp_path), again)
    assert again.calls[-1] == ("train", True, True)
    assert [r["step"] for r in run.read_metrics()] == [0, 1, 2, 3]  # no step twice, none missing
    assert summary.cumulative_rollouts == 24 and run.finished()


def test_a_finished_run_is_refused_except_on_a_slurm_requeue(tmp_path, monkeypatch):
    execute(cfg(tmp_path), Scripted())
    summary = (run_path(cfg(tmp_path)) / "summary.json").read_text()
    with pytest.raises(RunFolderError, match="finished run of this exact config"):
        execute(cfg(tmp_path), Scripted())
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")  # the requeue of a job that had just finished
    backend = Scripted()
    assert execute(cfg(tmp_path), backend, log=lambda _: None) is None
    assert backend.calls == ["check", "setup"]
    assert (run_path(cfg(tmp_path)) / "summary.json").read_text() == summary


def test_a_folder_holding_another_config_is_refused_and_left_as_it_was(tmp_path):
    with pytest.raises(RunIncomplete):
        execute(cfg(tmp_path), Scripted(upto=2))
    path = run_path(cfg(tmp_path))
    stored = OmegaConf.load(path / "config.yaml")
    stored.method.n = 16  # e.g. edited by hand: the folder's name no longer says what it holds
    (path / "config.yaml").write_text(OmegaConf.to_yaml(stored))
    before = {p: p.read_bytes() for p in path.iterdir()}
    assert "# on start: refuse (" in dry_run(cfg(tmp_path, dry=True), Scripted())
    backend = Scripted()
    with pytest.raises(RunFolderError, match="holds a different config"):
        execute(cfg(tmp_path), backend)
    assert ("train", True, True) not in backend.calls
    assert {p: p.read_bytes() for p in path.iterdir()} == before


def test_resume_never_refuses_an_unfinished_folder(tmp_path):
    with pytest.raises(RunIncomplete):
        execute(cfg(tmp_path), Scripted(upto=1))
    with pytest.raises(RunFolderError, match="resume=never"):
        execute(cfg(tmp_path, resume="never"), Scripted())


def test_the_step_row_needs_the_ledger_counts_and_writes_plain_numbers(tmp_path):
    ledger = RolloutLedger()
    ledger.generated("pilot", 4)
    counts = ledger.close_step()
    row = step_row(2, epoch=1, elapsed_s=3.0, ledger=counts, alloc={"alloc/rounds": np.int64(2)},
                   train={"train/pg_loss": torch.tensor(0.5)}, step_s=1.0, evals={"val/acc": np.float32(0.5)})
    assert json.loads(json.dumps(row)) == row  # numpy / torch scalars became numbers
    assert (row["step"], row["epoch"], row["cumulative_rollouts"], row["rollouts/pilot"]) == (2, 1, 4, 4)
    assert row["alloc/rounds"] == 2 and row["train/pg_loss"] == 0.5 and row["time/step_s"] == 1.0
    assert step_row(0, epoch=0, elapsed_s=0.0, evals={"val/acc": 0.1}) == \
        {"step": 0, "epoch": 0, "cumulative_rollouts": 0, "time/elapsed_s": 0.0, "val/acc": 0.1}
    with pytest.raises(ValueError, match="close_step"):
        step_row(1, epoch=0, elapsed_s=1.0, alloc={"alloc/rounds": 1})
