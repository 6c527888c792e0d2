"""The embedded path as a user runs it: `python -m pcbench.run ...` into run folders, resume
after SIGKILL at arbitrary steps, identical results to an uninterrupted run."""

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import fields

import pytest

from pcbench.rundir import Summary

TINY = ["model.hidden_size=64", "model.intermediate_size=128", "model.warmstart.stop_tier=null", "model.warmstart.steps=250", "model/warmstart=stop_only", "data.train_size=480",
        "data.val_size=16", "data.sft_size=1000", "train.batch_size=4", "train.mini_batch_size=2", "rollout.n=16",
        "train.eval_every=2", "train.checkpoint_every=2", "train.threads=1", "logging.progress=false",
        "experiment=e2e", "method.max_rounds=30",
        # a 250-step warm start of this small model solves some 2+2-digit sums and no longer ones:
        # train on add22 only, so every method finds prompts with varying reward
        "data.tiers.add33=0.0", "data.tiers.add44=0.0"]


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    return tmp_path_factory.mktemp("warmstart-cache")


def pcbench(tmp, cache, *overrides, wait=True):
    cmd = [sys.executable, "-m", "pcbench.run", *TINY, f"paths.results={tmp}", f"paths.cache={cache}", *overrides]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    if not wait:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc


def run_folder(tmp):
    (folder,) = [p for p in (tmp / "e2e").iterdir() if p.is_dir()]
    return folder


def metrics(folder):
    return [json.loads(line) for line in (folder / "metrics.jsonl").read_text().splitlines()]


def comparable(rows):
    drop = ("time/", "perf/")
    return [{k: v for k, v in r.items() if not k.startswith(drop)} for r in rows]


@pytest.mark.parametrize("method", ["grpo", "dapo", "pilot_commit"])
def test_each_method_writes_a_complete_run_folder(tmp_path, cache, method):
    pcbench(tmp_path, cache, f"method={method}", "train.steps=4")
    folder = run_folder(tmp_path)
    assert folder.name.startswith(f"{method}-tiny-qwen2-synthetic-arith-s0-")
    rows = metrics(folder)
    assert [r["step"] for r in rows] == [0, 1, 2, 3, 4]
    evals = [r for r in rows if "val/acc" in r]
    assert [r["step"] for r in evals] == [0, 2, 4]
    for r in evals:
        assert 0 <= r["val/acc"] <= 1 and {"val/acc_se", "val/add22/acc", "ood/add21/acc", "ood/add55/acc"} <= set(r)
        assert 0 <= r["val/acc_se"] <= 0.5 / 16 ** 0.5  # at most the Bernoulli bound of 16 problems
    for prev, r in zip(rows, rows[1:]):
        assert r["cumulative_rollouts"] == prev["cumulative_rollouts"] + r["rollouts/step"]
        assert r["rollouts/pilot"] + r["rollouts/commit"] + r["rollouts/plain"] == r["rollouts/step"]
        assert r["rollouts/trained"] == 4 * 16  # exactly train_batch groups of n
        assert r["alloc/groups"] == 4 and r["alloc/groups_all_correct"] + r["alloc/groups_all_wrong"] <= 4
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["cumulative_rollouts"] == rows[-1]["cumulative_rollouts"]
    assert set(summary) == {f.name for f in fields(Summary)}  # the verl backend's too (tests/verl/test_run_folder.py)
    assert (summary["backend"], summary["method"], summary["steps"]) == ("embedded", method, 4)
    assert summary["final_val_acc"] == evals[-1]["val/acc"] and "histogram" in summary["details"]["warmstart"]
    cfg = (folder / "config.yaml").read_text()
    assert f"name: {method}" in cfg and "seed: 0" in cfg
    again = subprocess.run([sys.executable, "-m", "pcbench.run", *TINY, f"paths.results={tmp_path}",
                            f"paths.cache={cache}", f"method={method}", "train.steps=4"],
                           capture_output=True, text=True, timeout=600)
    assert again.returncode != 0 and "finished run of this exact config" in again.stderr


def kill_at(proc, folder_parent, step):
    """SIGKILL the run once metrics.jsonl shows `step`."""
    deadline = time.time() + 300
    while time.time() < deadline:
        folders = [p for p in folder_parent.glob("e2e/*") if p.is_dir()] if folder_parent.exists() else []
        if folders and (folders[0] / "metrics.jsonl").exists():
            lines = (folders[0] / "metrics.jsonl").read_text().splitlines()
            if any(json.loads(x)["step"] >= step for x in lines if x.endswith("}")):
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                return
        if proc.poll() is not None:
            raise AssertionError("run ended before the kill point")
        time.sleep(0.05)
    raise AssertionError("kill point never reached")


@pytest.mark.parametrize("kill_step", [3, 6])
def test_sigkill_and_resume_matches_an_uninterrupted_run(tmp_path, cache, kill_step):
    overrides = ["method=pilot_commit", "train.steps=8"]
    ref_dir, cut_dir = tmp_path / "ref", tmp_path / "cut"
    pcbench(ref_dir, cache, *overrides)
    reference = metrics(run_folder(ref_dir))

    proc = pcbench(cut_dir, cache, *overrides, wait=False)
    kill_at(proc, cut_dir, kill_step)
    assert not (run_folder(cut_dir) / "summary.json").exists()
    out = pcbench(cut_dir, cache, *overrides)
    assert "resumed" in out.stderr + out.stdout
    resumed = metrics(run_folder(cut_dir))
    assert [r["step"] for r in resumed] == list(range(9))  # no step repeated or missing
    assert comparable(resumed) == comparable(reference)  # bit-identical on CPU with 1 thread
