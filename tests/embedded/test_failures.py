"""What can still fail after composition (a crash mid-training, a full disk) ends in one line,
keeps the traceback in the run folder's error.log, and leaves a folder the same command resumes."""

import errno
import json
import sys

import torch

from pcbench.backends.embedded import checkpoint
from pcbench.backends.embedded.trainer import EmbeddedRun

TINY = ["model.hidden_size=32", "model.intermediate_size=64", "model.warmstart.stop_tier=null", "model.warmstart.steps=5", "model/warmstart=stop_only", "model.warmstart.batch_size=16",
        "data.train_size=64", "data.val_size=8", "data.sft_size=200", "train.batch_size=4", "train.mini_batch_size=2",
        "rollout.n=4", "train.steps=4", "train.eval_every=2", "train.checkpoint_every=2", "train.threads=1",
        "logging.progress=false", "experiment=fail"]


def pcbench_run(monkeypatch, tmp_path, *overrides) -> int:
    """`python -m pcbench.run TINY...` in this process (so a test can inject a fault); -> exit code."""
    from pcbench import run

    argv = ["pcbench.run", *TINY, f"paths.results={tmp_path / 'results'}", f"paths.cache={tmp_path / 'cache'}",
            "hydra.output_subdir=null", f"hydra.run.dir={tmp_path / 'hydra'}", *overrides]
    monkeypatch.setattr(sys, "argv", argv)
    try:
        run.main()
    except SystemExit as e:
        return int(e.code)
    return 0


def folder(tmp_path):
    (path,) = (tmp_path / "results" / "fail").iterdir()
    return path


def steps(path):
    return [json.loads(line)["step"] for line in (path / "metrics.jsonl").read_text().splitlines()]


def our_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("pcbench:")]


def test_crash_mid_training_is_one_line_and_the_same_command_resumes(monkeypatch, tmp_path, capsys):
    real_step = EmbeddedRun.train_step

    def exploding(self):
        if self.step == 3:  # steps 1-3 done, checkpoint at 2: the crash loses step 3 only
            raise RuntimeError("rollout worker exploded\nsecond line of a long message")
        return real_step(self)

    with monkeypatch.context() as m:
        m.setattr(EmbeddedRun, "train_step", exploding)
        assert pcbench_run(m, tmp_path) == 1
    err = capsys.readouterr().err
    path = folder(tmp_path)
    assert our_lines(err) == [f"pcbench: run failed: RuntimeError: rollout worker exploded (after step 3 of 4); "
                              f"traceback in {path / 'error.log'}; rerun the same command to resume from the last "
                              f"checkpoint"]
    assert "Traceback" not in err
    log = (path / "error.log").read_text()
    assert "Traceback (most recent call last)" in log and "rollout worker exploded" in log and "exploding" in log
    assert steps(path) == [0, 1, 2, 3] and not (path / "summary.json").exists()

    assert pcbench_run(monkeypatch, tmp_path) == 0  # the same command, no fault
    assert steps(path) == [0, 1, 2, 3, 4]  # resumed at the step-2 checkpoint: no step twice, none missing
    assert json.loads((path / "summary.json").read_text())["status"] == "finished"
    assert (path / "error.log").read_text() == log  # the record of the crash is kept


def test_full_disk_during_a_checkpoint_keeps_the_previous_one(monkeypatch, tmp_path, capsys):
    real_save = torch.save

    def disk_full_at_step_4(obj, f, *a, **k):
        if isinstance(obj, dict) and obj.get("step") == 4:
            with open(f, "wb") as out:
                out.write(b"half a checkpoint")
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_save(obj, f, *a, **k)

    with monkeypatch.context() as m:
        m.setattr(checkpoint.torch, "save", disk_full_at_step_4)
        assert pcbench_run(m, tmp_path) == 1
    path = folder(tmp_path)
    line, = our_lines(capsys.readouterr().err)
    assert line.startswith("pcbench: run failed: OSError: [Errno 28] No space left on device (after step 4 of 4); ")
    assert line.endswith("rerun the same command to resume from the last checkpoint")
    ckpt = path / "checkpoint"
    assert sorted(p.name for p in ckpt.iterdir()) == [checkpoint.STATE]  # the partial temp file is gone
    assert torch.load(ckpt / checkpoint.STATE, weights_only=False)["step"] == 2  # the previous one, intact

    assert pcbench_run(monkeypatch, tmp_path) == 0
    assert steps(path) == [0, 1, 2, 3, 4]
    assert torch.load(ckpt / checkpoint.STATE, weights_only=False)["step"] == 4


def test_finished_folder_is_refused_in_one_line(monkeypatch, tmp_path, capsys):
    assert pcbench_run(monkeypatch, tmp_path) == 0
    capsys.readouterr()
    assert pcbench_run(monkeypatch, tmp_path) == 2
    line, = our_lines(capsys.readouterr().err)
    assert line.startswith("pcbench: run folder: ") and "is a finished run of this exact config" in line
