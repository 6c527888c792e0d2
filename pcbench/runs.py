"""One run's life, the same for every backend; a backend only trains.

    execute(cfg)   dry_run=true: print what would run and what the folder would do, write nothing
                   backend.check(cfg)   every error the config or its data can cause, before any file
                   backend.setup(cfg)   local assets, cluster bootstrap (False: not this process's run)
                   RunDir.prepare(cfg)  new folder / resume an unfinished one / refuse (rundir.plan)
                   backend.train(cfg, run)   one `step_row` per step into run's metrics.jsonl
                   finish(run, details)      summary.json (rundir.Summary), from the folder's files

`backend.entry` (conf/backend/*.yaml) names the backend: a Backend subclass or instance. The
folder, its name and its files are pcbench/rundir.py; the contract between training and analysis
is docs/run_folder.md.
"""

from __future__ import annotations

import importlib
import math
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping

from omegaconf import DictConfig

from pcbench.rundir import RunDir, Summary, plan


class RunIncomplete(RuntimeError):
    """The backend returned before the metrics reached train.steps; the folder stays resumable."""


class Backend:
    """What a backend provides. Only `train` is required; the rest have do-nothing defaults."""

    def check(self, cfg: DictConfig) -> None:
        """Raise ConfigError / MissingDataError for anything the run would fail on; write nothing."""

    def setup(self, cfg: DictConfig) -> bool:
        """Work before the run folder exists. False: this process does not run it (a worker node)."""
        return True

    def describe(self, cfg: DictConfig, path: Path) -> list[str]:
        """The dry run's lines after the common header (path: where the run folder would be)."""
        return []

    def train(self, cfg: DictConfig, run: RunDir) -> dict:
        """Train into the prepared `run` (run.resumed: continue from its checkpoint) up to
        train.steps; -> the summary's `details`."""
        raise NotImplementedError


def load_backend(cfg: DictConfig) -> Backend:
    """`backend.entry` ("module:name", a Backend subclass or instance) as an instance."""
    module, _, name = str(cfg.backend.entry).partition(":")
    obj = getattr(importlib.import_module(module), name)
    return obj() if isinstance(obj, type) else obj


_ON_START = {"new": "create it", "resume": "resume it", "done": "nothing (finished)", "refuse": "refuse"}


def dry_run(cfg: DictConfig, backend: Backend) -> str:
    """What `dry_run=true` prints: the run, its folder, what starting it would do, the backend's plan."""
    p = plan(cfg)
    detail = f" ({p.reason})" if p.reason else ""
    lines = [f"# pcbench dry run (nothing written): backend={cfg.backend.name} method={cfg.method.name} "
             f"model={cfg.model.name} data={cfg.data.name}",
             f"# run folder: {p.path}", f"# on start: {_ON_START[p.action]}{detail}"]
    return "\n".join(lines + backend.describe(cfg, p.path))


def execute(cfg: DictConfig, backend: Backend | None = None, log=print) -> Summary | None:
    """Run cfg (already checked with pcbench.config.check_config) from start to summary."""
    backend = backend or load_backend(cfg)
    if cfg.dry_run:
        print(dry_run(cfg, backend), flush=True)
        return None
    backend.check(cfg)
    if not backend.setup(cfg):
        return None
    run = RunDir.prepare(cfg)
    if run.finished():  # only on a Slurm requeue after the run completed (rundir.plan)
        log(f"{run.path} already finished; nothing to do")
        return None
    try:
        details = backend.train(cfg, run)
    except Exception as e:
        record_stop(run, e)
        raise
    return finish(run, details)


def record_stop(run: RunDir, error: BaseException) -> None:
    """An allocator that starved (its error has a `stop_reason`, pcbench.allocators.AllocationError)
    ends the run as today, and its folder says so in stopped.json: the run is a result (censored
    from its last evaluation), not a crash. Any other error writes nothing here."""
    reason = getattr(error, "stop_reason", None)
    if not reason:
        return
    try:
        run.record_stop(reason, f"{type(error).__name__}: {error}")
    except OSError:  # a full disk must not hide the error that stopped the run
        pass


def finish(run: RunDir, details: Mapping[str, Any] | None = None) -> Summary:
    """Write summary.json from the folder's config.yaml and metrics.jsonl; RunIncomplete when the
    metrics stop before train.steps (the run then stays unfinished and resumable)."""
    cfg, rows = run.config(), run.read_metrics()
    last = rows[-1] if rows else {"step": -1}
    if int(last["step"]) < int(cfg.train.steps):
        raise RunIncomplete(f"the {cfg.backend.name} backend returned after step {last['step']} of "
                            f"{cfg.train.steps} (metrics.jsonl); no summary written")
    evals = [r["val/acc"] for r in rows if "val/acc" in r]
    final = float(evals[-1]) if evals and math.isfinite(float(evals[-1])) else None
    summary = Summary(status="finished", run_id=run.path.name, backend=str(cfg.backend.name),
                      method=str(cfg.method.name), seed=int(cfg.seed), steps=int(last["step"]),
                      cumulative_rollouts=int(last["cumulative_rollouts"]), final_val_acc=final,
                      wall_s=round(float(last.get("time/elapsed_s", 0.0)), 2),
                      details=dict(details or {}))
    run.write_summary(summary)
    return summary


# The counts RolloutLedger.close_step() gives every training step (docs/run_folder.md).
EMPTY: Mapping[str, Any] = MappingProxyType({})
LEDGER_KEYS = ("rollouts/step", "rollouts/pilot", "rollouts/commit", "rollouts/plain", "rollouts/discarded",
               "rollouts/trained", "cumulative_rollouts")


def step_row(step: int, *, epoch: int, elapsed_s: float, ledger: Mapping[str, Any] | None = None,
             alloc: Mapping[str, Any] = EMPTY, train: Mapping[str, Any] = EMPTY, step_s: float | None = None,
             evals: Mapping[str, Any] = EMPTY, extra: Mapping[str, Any] = EMPTY) -> dict[str, Any]:
    """One metrics.jsonl line, whichever backend trained (docs/run_folder.md).

    step 0 is the evaluation before training (no counts, cumulative_rollouts 0). A training step
    needs `ledger`, the step's RolloutLedger.close_step(); `alloc`: the allocator's batch stats and
    after_update counters (alloc/*); `train`: losses (train/*); `evals`: val/*, ood/* on evaluation
    steps; `extra`: the backend's own keys (time/generate_s, perf/*, reward/*, verl/*).
    """
    row: dict[str, Any] = {"step": int(step), "epoch": int(epoch)}
    if step == 0:
        row["cumulative_rollouts"] = 0
    else:
        missing = [k for k in LEDGER_KEYS if k not in (ledger or {})]
        if missing:
            raise ValueError(f"step {step}: the metrics line needs RolloutLedger.close_step()'s {missing}")
        row.update({**ledger, **alloc, **train, "time/step_s": float(step_s or 0.0)})
    row["time/elapsed_s"] = float(elapsed_s)
    row.update({**extra, **evals})
    return {k: (v.item() if hasattr(v, "item") else v) for k, v in row.items()}
