"""Exact-resume checkpoints of an embedded run: weights, optimizer, schedule, every RNG,
allocator state (replay buffer, evictions), prompt-stream position and the ledger.

Written to a temp name and renamed, so a kill at any instant leaves the previous
checkpoint intact. On resume metrics.jsonl is cut back to the checkpoint's step, so the
resumed run neither repeats nor skips a step.
"""

from __future__ import annotations

import os

import torch

STATE = "state.pt"


def save(run) -> None:
    d = run.rundir.checkpoint_dir
    d.mkdir(parents=True, exist_ok=True)
    state = {
        "step": run.step, "elapsed": run.elapsed,
        "model": run.model.state_dict(), "optimizer": run.optimizer.state_dict(),
        "scheduler": run.scheduler.state_dict(), "generator": run.generator.get_state(),
        "allocator": run.allocator.state_dict(), "stream": run.stream.state_dict(),
        "ledger": run.ledger.state_dict(), "reward_stats": run.rollouts.reward_stats.snapshot(),
    }
    tmp = d / (STATE + ".tmp")
    try:
        torch.save(state, tmp)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, d / STATE)
    except BaseException:  # e.g. ENOSPC mid-write: the previous state.pt stays, the partial file goes
        tmp.unlink(missing_ok=True)
        raise


def restore(run) -> bool:
    path = run.rundir.checkpoint_dir / STATE
    if not path.exists():
        return False
    s = torch.load(path, weights_only=False)  # our own file: holds numpy arrays and dataclasses
    run.model.load_state_dict(s["model"])
    run.optimizer.load_state_dict(s["optimizer"])
    run.scheduler.load_state_dict(s["scheduler"])
    run.generator.set_state(s["generator"])
    run.allocator.load_state_dict(s["allocator"])
    run.stream.load_state_dict(s["stream"])
    run.ledger.load_state_dict(s["ledger"])
    for k, v in s["reward_stats"].items():
        setattr(run.rollouts.reward_stats, k, v)
    run.step, run.elapsed = int(s["step"]), float(s["elapsed"])
    run.rundir.truncate_metrics(run.step)
    return True
