"""Write tiny run folders in the docs/run_folder.md format, for analysis tests and fixtures.

    steps = [ledger(plain=1000)] * 4                       # per training step, steps 1..4
    lines = make_lines(steps, evals={0: 0.3, 2: 0.4, 4: 0.5}, step_s=10.0)
    write_run(tmp_path / "exp", "grpo", "toy", "toymath", seed=0, lines=lines)

Per-set accuracies are val/acc -/+ SET_SPREAD on two sets, so their mean is val/acc.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import yaml

SETS = ("aime24", "math500")
SET_SPREAD = 0.02
NON_RESULT_KEYS = ("logging", "paths", "resume")


def config_hash(cfg: dict) -> str:
    """First 8 hex digits of SHA-256 of the sorted-key JSON config minus non-result keys."""
    kept = {k: v for k, v in cfg.items() if k not in NON_RESULT_KEYS}
    return hashlib.sha256(json.dumps(kept, sort_keys=True).encode()).hexdigest()[:8]


def make_config(method: str, model: str, data: str, seed: int, experiment: str, **extra) -> dict:
    return {"experiment": experiment, "seed": seed, "method": {"name": method}, "model": {"name": model},
            "data": {"name": data}, "backend": {"name": "mock"}, "logging": {"dir": "results"}, **extra}


def ledger(pilot: int = 0, commit: int = 0, plain: int = 0, discarded: int = 0,
           trained: int | None = None, **alloc) -> dict:
    """One training step's rollouts/* and alloc/* keys (trained defaults to step - discarded)."""
    total = pilot + commit + plain
    out = {"rollouts/step": total, "rollouts/pilot": pilot, "rollouts/commit": commit,
           "rollouts/plain": plain, "rollouts/discarded": discarded,
           "rollouts/trained": total - discarded if trained is None else trained}
    out.update({f"alloc/{k}": v for k, v in alloc.items()})
    return out


def eval_keys(acc: float) -> dict:
    per_set = {f"val/{s}/acc": round(acc + d, 6) for s, d in zip(SETS, (-SET_SPREAD, SET_SPREAD))}
    return {"val/acc": acc, **per_set}


def make_lines(steps: list[dict], evals: dict[int, float], step_s: float, start_step: int = 0,
               start_rollouts: int = 0, epoch: int = 0) -> list[dict]:
    """metrics.jsonl lines: step 0 (eval only, when 0 in evals) then one line per training step.

    steps[i] is the ledger of step start_step + i + 1; evals maps step -> val/acc.
    """
    lines, cum = [], start_rollouts
    if start_step == 0 and 0 in evals:
        lines.append({"step": 0, "cumulative_rollouts": 0, **eval_keys(evals[0])})
    for i, step_ledger in enumerate(steps):
        step = start_step + i + 1
        cum += step_ledger["rollouts/step"]
        line = {"step": step, "cumulative_rollouts": cum, **step_ledger, "time/step_s": step_s,
                "time/elapsed_s": round(step * step_s, 6), "train/loss": round(0.5 / step, 6),
                "epoch": epoch}
        if step in evals:
            line.update(eval_keys(evals[step]))
        lines.append(line)
    return lines


def write_run(root: Path, method: str, model: str, data: str, seed: int, lines: list[dict], *,
              experiment: str = "toy", finished: bool = True, tail: str = "", config: dict | None = None,
              write_metrics: bool = True) -> Path:
    """Write root/<run_id>/{config.yaml, metrics.jsonl, summary.json}; return the run folder.

    tail: raw text appended to metrics.jsonl (e.g. a truncated line of a crashed run).
    finished=False writes no summary.json (running or crashed).
    """
    cfg = config or make_config(method, model, data, seed, experiment)
    run_dir = Path(root) / f"{method}-{model}-{data}-s{seed}-{config_hash(cfg)}"
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=True))
    if write_metrics:
        text = "".join(json.dumps(line) + "\n" for line in lines)
        (run_dir / "metrics.jsonl").write_text(text + tail)
    if finished:
        evals = [ln for ln in lines if "val/acc" in ln]
        summary = {"status": "finished", "steps": lines[-1]["step"] if lines else 0,
                   "cumulative_rollouts": lines[-1]["cumulative_rollouts"] if lines else 0,
                   "final_val_acc": evals[-1]["val/acc"] if evals else None,
                   "wall_s": lines[-1].get("time/elapsed_s", 0.0) if lines else 0.0}
        (run_dir / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    return run_dir
