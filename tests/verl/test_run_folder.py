"""A verl run's pcbench run folder: docs/run_folder.md keys, read by analysis/speedup.py like an
embedded run's; the allocation state survives a checkpoint round trip."""

import json

import pytest
import torch

from pcbench.backends.verl.allocation import AllocationRun, method_config
from pcbench.backends.verl.config import build_verl_config
from pcbench.backends.verl.metrics import val_row
from pcbench.backends.verl.rollout import VerlRolloutBackend
from pcbench.rundir import RunDir
from pcbench.runs import finish
from tests.verl.doubles import FakeAgentLoopManager, InMemoryKV, ListDataset

SMALL = ("train.batch_size=8", "train.mini_batch_size=2", "rollout.n=8")
RATES = [0.0, 0.25, 0.5, 0.75, 1.0, 0.375, 0.625, 0.125]


def verl_val_metrics(acc: float) -> dict:
    """What verl's _val_metrics_update returns for two sets (plus the aux keys it adds)."""
    return {"val-core/aime24/acc/mean@1": acc, "val-aux/aime24/acc/std@1": 0.1,
            "val-core/math500/acc/mean@1": acc + 0.1, "val-aux/num_turns/mean": 2.0}


def make_run(paper_cfg, tmp_path, method, kv=None, steps=10):
    cfg = paper_cfg(method, *SMALL, f"train.steps={steps}", f"paths.results={tmp_path}")
    rundir = RunDir.prepare(cfg)
    v = build_verl_config(cfg, run_dir=str(rundir.path))
    kv = kv or InMemoryKV()
    run = AllocationRun(method_config(v.pcbench.method), 8, 0, 400, kv, rundir)
    backend = VerlRolloutBackend(ListDataset(400), FakeAgentLoopManager(kv, lambda i: RATES[i % 8]), kv,
                                 lambda: 0, poll_interval_s=0.0)
    return run, backend, rundir


def train(run, backend, steps, start=1):
    for s in range(start, start + steps):
        batch = run.sample(s, backend)
        run.finish_step(s)
        verl_metrics = {"actor/pg_loss": 0.1, "actor/grad_norm": 1.0, "critic/score/mean": 0.0}
        if s % 5 == 0:
            verl_metrics.update(verl_val_metrics(0.2 + 0.02 * s))
        run.log(s, verl_metrics, step_s=1.5)
        run.kv.kv_clear(keys=batch.keys, partition_id="train")


def test_metrics_lines_follow_the_run_folder_contract(paper_cfg, tmp_path):
    run, backend, rundir = make_run(paper_cfg, tmp_path, "pilot_commit", steps=5)
    run.log(0, verl_val_metrics(0.2))  # fit()'s validation before training
    train(run, backend, 5)
    finish(rundir)
    rows = rundir.read_metrics()
    assert [r["step"] for r in rows] == list(range(6))
    assert rows[0]["cumulative_rollouts"] == 0 and abs(rows[0]["val/acc"] - 0.25) < 1e-9
    assert rows[0]["val/aime24/acc"] == 0.2 and abs(rows[0]["val/math500/acc"] - 0.3) < 1e-9
    for r in rows[1:]:
        assert r["rollouts/pilot"] + r["rollouts/commit"] + r["rollouts/plain"] == r["rollouts/step"]
        assert {"rollouts/discarded", "rollouts/trained", "alloc/rounds", "alloc/kept", "alloc/buffer_size",
                "time/step_s", "time/elapsed_s", "train/pg_loss", "epoch"} <= set(r)
    assert rows[-1]["cumulative_rollouts"] == sum(r["rollouts/step"] for r in rows[1:])
    assert "val/acc" in rows[5] and "val/acc" not in rows[4]
    summary = json.loads((rundir.path / "summary.json").read_text())
    assert summary["status"] == "finished" and summary["cumulative_rollouts"] == rows[-1]["cumulative_rollouts"]
    assert val_row({"val-aux/x/acc/mean@1": 1.0}) == {}


def test_analysis_speedup_reads_verl_runs(paper_cfg, tmp_path, capsys):
    from pcbench.analysis.speedup import main

    for method in ("grpo", "dapo", "pilot_commit"):
        run, backend, _ = make_run(paper_cfg, tmp_path, method)
        run.log(0, verl_val_metrics(0.2))
        train(run, backend, 10)
        finish(run.rundir)
    out = tmp_path / "speedups.json"
    assert main([str(tmp_path), "--format", "json", "--out", str(out)]) == 0
    table = json.loads(out.read_text())
    assert {r["method"] for r in table} == {"grpo", "dapo", "pilot_commit"}
    assert all(r["model"] == "qwen2.5-math-1.5b" and r["data"] == "deepmath" for r in table)
    grpo = next(r for r in table if r["method"] == "grpo")
    assert grpo["rollouts_to_target"] == 10 * 8 * 8  # GRPO: 8 prompts x n=8 a step, target at step 10


def test_allocation_state_round_trips_through_a_checkpoint(paper_cfg, tmp_path):
    import copy

    kv = InMemoryKV()
    run, backend, rundir = make_run(paper_cfg, tmp_path / "a", "pilot_commit", kv=kv)
    train(run, backend, 3)
    path = tmp_path / "pcbench.pt"
    torch.save(run.state_dict(), path)  # what PcbenchTrainer._save_checkpoint writes ...
    kv_at_ckpt = copy.deepcopy(kv)      # ... next to verl's TransferQueue checkpoint (buffered pilots)
    kv_at_ckpt.kv_batch_put(keys=["deadbeef_0_0"], partition_id="train", fields=[{"uid": "deadbeef"}],
                            tags=[{"seq_len": 7}])  # the step's trained batch, saved before fit() cleared it
    train(run, backend, 2, start=4)
    straight = rundir.read_metrics()

    # a new process after a crash at step 5: verl restores TransferQueue, pcbench its state
    again = AllocationRun(run.allocator.cfg, 8, 0, 400, kv_at_ckpt, rundir)
    again.load_state_dict(torch.load(path, weights_only=False), step=3)
    assert [r["step"] for r in rundir.read_metrics()] == [1, 2, 3]  # lines after the checkpoint dropped
    assert again.ledger.cumulative == straight[2]["cumulative_rollouts"]
    assert again.live == {k for e in again.allocator.buffer.entries.values() for k in e.pilot.payload.keys}
    assert kv_at_ckpt.num_rows() == len(again.live)  # the stale trained row was dropped
    backend2 = VerlRolloutBackend(ListDataset(400), FakeAgentLoopManager(kv_at_ckpt, lambda i: RATES[i % 8]),
                                  kv_at_ckpt, lambda: 0, poll_interval_s=0.0)
    train(again, backend2, 2, start=4)
    resumed = rundir.read_metrics()
    same = lambda r: {k: v for k, v in r.items() if k.startswith(("rollouts/", "alloc/", "cumulative"))}
    assert [same(r) for r in resumed] == [same(r) for r in straight]  # the resumed run takes the same decisions


def test_a_run_killed_between_checkpoint_and_metrics_line_gets_the_line_on_resume(paper_cfg, tmp_path):
    # verl saves step s's checkpoint before _compute_metrics logs step s: the trainer stores the
    # line as far as it is known in pcbench.pt, and a resume that finds it missing appends it.
    kv = InMemoryKV()
    run, backend, rundir = make_run(paper_cfg, tmp_path, "grpo", kv)
    run.log(0, verl_val_metrics(0.2))
    train(run, backend, 1)
    batch = run.sample(2, backend)
    run.finish_step(2)
    state = run.state_dict(run.row(2, {"actor/pg_loss": 0.3}))  # checkpoint of step 2 ... then killed
    assert [r["step"] for r in rundir.read_metrics()] == [0, 1]
    resumed, _, _ = make_run(paper_cfg, tmp_path, "grpo", kv)
    resumed.load_state_dict(state, 2)
    rows = rundir.read_metrics()
    assert [r["step"] for r in rows] == [0, 1, 2]
    assert rows[2]["cumulative_rollouts"] == rows[1]["cumulative_rollouts"] + rows[2]["rollouts/step"] == 2 * 64
    assert rows[2]["train/pg_loss"] == 0.3 and len(batch.keys) == 64
    resumed.load_state_dict(state, 2)  # resuming twice never duplicates the line
    assert [r["step"] for r in rundir.read_metrics()] == [0, 1, 2]


def test_the_verl_backend_trains_a_prepared_folder_and_writes_the_embedded_summary_schema(paper_cfg, tmp_path,
                                                                                           monkeypatch):
    """`python -m pcbench.run backend=verl ...` through pcbench.runs.execute, with the verl child
    process replaced by what launch.py + PcbenchTrainer do to the run folder (CPU test doubles)."""
    from dataclasses import fields
    from pathlib import Path

    from omegaconf import OmegaConf

    from pcbench import runs
    from pcbench.backends.verl import entry, slurm_ray
    from pcbench.rundir import Summary

    monkeypatch.setattr(entry, "make_local_assets", lambda cfg: None)
    monkeypatch.setattr(entry, "check_data_files", lambda files: None)  # the paper's data is not here
    monkeypatch.setattr(slurm_ray, "bootstrap", lambda cfg: True)
    children = []

    def verl_child(cmd, heartbeat, watchdog_s, check=None):  # entry.supervise: the child gets the written verl config
        verl = OmegaConf.load(cmd[-1])
        children.append((verl.pcbench.resumed, heartbeat.parent == Path(verl.pcbench.run_dir)))
        rundir = RunDir(Path(verl.pcbench.run_dir), resumed=bool(verl.pcbench.resumed))
        kv = InMemoryKV()
        run = AllocationRun(method_config(verl.pcbench.method), 8, 0, 400, kv, rundir)
        backend = VerlRolloutBackend(ListDataset(400), FakeAgentLoopManager(kv, lambda i: RATES[i % 8]), kv,
                                     lambda: 0, poll_interval_s=0.0)
        run.log(0, verl_val_metrics(0.2))
        train(run, backend, 5)
        return 0

    monkeypatch.setattr(entry, "supervise", verl_child)
    cfg = paper_cfg("grpo", *SMALL, "train.steps=5", f"paths.results={tmp_path}")
    summary = runs.execute(cfg, entry.run)
    assert children == [(False, True)]
    folder = tmp_path / "verl" / summary.run_id
    on_disk = json.loads((folder / "summary.json").read_text())
    assert set(on_disk) == {f.name for f in fields(Summary)}  # the embedded backend's keys (test_end_to_end.py)
    assert (on_disk["backend"], on_disk["method"], on_disk["steps"], on_disk["details"]) == \
        ("verl", "grpo", 5, {"platform": "gpu"})
    rows = RunDir(folder, resumed=True).read_metrics()
    assert on_disk["cumulative_rollouts"] == rows[-1]["cumulative_rollouts"] == 5 * 64
    assert on_disk["final_val_acc"] == rows[5]["val/acc"] and (folder / "verl_config.yaml").exists()

    monkeypatch.setattr(entry, "supervise", lambda *a, **k: 3)  # the watchdog killed a hung child: its exit code
    with pytest.raises(SystemExit) as e:
        runs.execute(paper_cfg("grpo", *SMALL, "train.steps=6", f"paths.results={tmp_path}"), entry.run)
    assert e.value.code == 3
    (unfinished,) = [p for p in (tmp_path / "verl").iterdir() if p != folder]
    assert not (unfinished / "summary.json").exists()
