"""Compose, check and run benchmark jobs: one run folder per (method, seed).

Each job is composed with Hydra's compose API from conf/ exactly as `python -m pcbench.run`
composes it, checked with `check_config` before anything runs (a bad method config fails
the whole benchmark up front, in one line), and run through the same lifecycle as
`python -m pcbench.run` (pcbench.runs.execute) in a worker process. Workers are reused across
jobs, so the ~10 s of imports (torch, transformers, verl) is paid once per worker instead of
once per run. Finished folders are
reused, unfinished ones resume (resume=auto), so an interrupted benchmark continues.
"""

from __future__ import annotations

import multiprocessing
import os
import shlex
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

from pcbench.config import compose_cfg


@dataclass(frozen=True)
class Job:
    method: str
    seed: int
    overrides: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.method}-s{self.seed}"

    def command(self) -> str:
        return "python -m pcbench.run " + " ".join(shlex.quote(o) for o in self.overrides)


def plan(methods: list[str], seeds: list[int], common: list[str]) -> list[Job]:
    """Seed-major order: a benchmark stopped early still has every method for its first seeds."""
    return [Job(m, s, (f"method={m}", f"seed={s}", *common)) for s in seeds for m in methods]


def run_folder(job: Job) -> Path:
    """The run folder of a job, after checking its config (ConfigError names the key and fix)."""
    from pcbench.config import check_config
    from pcbench.rundir import run_path

    cfg = compose_cfg(job.overrides)
    check_config(cfg)
    return run_path(cfg)


def is_finished(folder: Path) -> bool:
    from pcbench.rundir import RunDir

    return RunDir(folder, resumed=True).finished()


def is_scored(folder: Path) -> bool:
    """Finished, or stopped because its allocator starved (a result, censored from its last evaluation:
    pcbench.analysis.run_frames.read_stop); a crashed or running folder is not scored."""
    from pcbench.analysis.run_frames import read_stop

    return is_finished(folder) or read_stop(folder)[0] is not None


def _die_with_parent() -> None:
    """Linux: the kernel sends this worker SIGTERM when the bench process exits, however it
    exits. Without it a `kill` of the bench left both workers training as orphans."""
    import ctypes
    import signal
    import sys

    if sys.platform.startswith("linux"):
        PR_SET_PDEATHSIG = 1
        ctypes.CDLL(None).prctl(PR_SET_PDEATHSIG, int(signal.SIGTERM))
        parent = multiprocessing.parent_process()
        if parent is not None and os.getppid() != parent.pid:  # it died before prctl took effect
            os._exit(1)


def _warm_imports() -> None:
    """Worker initializer: die with the bench, and pay the one-time imports (verl's core_algos
    is imported lazily at the first update, ~4 s) before any run, so no run's first step is
    timed with them."""
    _die_with_parent()
    from pcbench import rl
    from pcbench.backends.embedded import trainer  # noqa: F401

    rl._core()


def _work(job: Job, log_path: str) -> dict:
    """Worker: train one job, its output going to its log file; never raises."""
    t0 = time.perf_counter()
    status, error, reason = "finished", None, None
    with open(log_path, "a") as log, redirect_stdout(log), redirect_stderr(log):
        print(f"$ {job.command()}", flush=True)
        try:
            from pcbench.config import check_config
            from pcbench.runs import execute

            cfg = compose_cfg(job.overrides)
            check_config(cfg)
            execute(cfg)
        except (Exception, SystemExit) as e:  # a failed run is a result to report, not a reason to stop the rest
            traceback.print_exc()
            # a starved allocator (AllocationError.stop_reason) is a result the report counts as censored
            reason = getattr(e, "stop_reason", None)
            status, error = "starved" if reason else "failed", f"{type(e).__name__}: {e}".splitlines()[0][:300]
    return {"method": job.method, "seed": job.seed, "status": status, "error": error, "reason": reason,
            "seconds": round(time.perf_counter() - t0, 1), "log": log_path, "command": job.command()}


def launch(jobs: list[Job], workers: int, log_dir: Path, echo=print) -> list[dict]:
    """Run `jobs` on `workers` processes (1 torch thread each); -> one result dict per job."""
    if not jobs:
        return []
    log_dir.mkdir(parents=True, exist_ok=True)
    os.environ["OMP_NUM_THREADS"] = os.environ["MKL_NUM_THREADS"] = "1"  # inherited by the workers
    results = []
    spawn = multiprocessing.get_context("spawn")  # no forked torch state
    with ProcessPoolExecutor(max_workers=max(1, workers), mp_context=spawn, initializer=_warm_imports) as pool:
        futures = [pool.submit(_work, job, str(log_dir / f"{job.name}.log")) for job in jobs]
        for i, fut in enumerate(as_completed(futures), start=1):
            res = fut.result()
            results.append(res)
            tail = f" ({res['error']})" if res["error"] else ""
            echo(f"[{i}/{len(jobs)}] {res['method']} seed {res['seed']}: {res['status']} "
                 f"in {res['seconds']:.0f}s{tail}")
    return results
